"""Tests for the quickstart behind ``python -m sksparse_struct``."""

import re
import subprocess
import sys

import numpy as np
import pytest

from sksparse_struct import _quickstart
from sksparse_struct._quickstart import (
    format_report,
    main,
    sentence_features,
    sparsity,
    token_features,
    top_candidates,
    word_shape,
)
from sksparse_struct.datasets import load_ewt_sample
from sksparse_struct.datasets._conllu import UPOS_TAGS


def _row(out, label):
    """The values of the report's table row starting with ``label``."""
    [line] = [line for line in out.splitlines() if line.startswith(label)]
    return line[len(label):].split()


def test_main_prints_a_sensible_report(capsys):
    # The full quickstart, as `python -m sksparse_struct` runs it: two
    # classifier fits and one CRF fit on the bundled sample (a few seconds).
    assert main([]) == 0
    captured = capsys.readouterr()
    out = captured.out

    assert "train 360 sentences, 5,684 tokens; test 100 sentences, 1,182 tokens" in out
    assert "17 UPOS tags" in out
    assert "Tagger (crf): the same features -> LinearChainCRF(loss='crf', c2=0.1)" in out
    header = out.splitlines()[[i for i, line in enumerate(out.splitlines())
                               if line.startswith("test accuracy")][0] - 1]
    assert header.split() == ["sparsemax", "softmax", "crf"]

    accuracy = [float(v) for v in _row(out, "test accuracy")]
    assert min(accuracy) > 0.8
    # Same features and comparable penalties: within a few points. (The CRF
    # has transitions on top; on this small sample it gains little.)
    assert max(accuracy) - min(accuracy) < 0.05

    nonzero = [float(v) for v in _row(out, "nonzero probabilities (of 17)")]
    assert 1.0 <= nonzero[0] < 4.0  # sparsemax: a few candidates per token
    assert nonzero[1] == 17.0  # softmax: never exactly zero
    assert 10.0 < nonzero[2] <= 17.0  # CRF marginals: dense (up to underflow)

    single = [float(v.rstrip("%")) for v in _row(out, "tokens with one nonzero probability")]
    assert 10.0 < single[0] < 100.0 and single[1] == 0.0 and single[2] < 5.0

    # The example: one line per word, in order, with the gold tag and the
    # candidates of each model.
    test = load_ewt_sample("test")[_quickstart.DEFAULT_SENTENCE]
    assert f"Example, test sentence {_quickstart.DEFAULT_SENTENCE}: {test.metadata['text']}" in out
    lines = out.splitlines()
    start = [i for i, line in enumerate(lines) if line.strip().startswith("word")][0]
    rows = lines[start + 1:start + 1 + len(test)]
    assert len(rows) == len(test)
    for row, token in zip(rows, test):
        fields = row.split()
        assert fields[:2] == [token["form"], token["upos"]]
        pairs = re.findall(r"([A-Z]+) (\d\.\d\d)", row)
        assert all(tag in UPOS_TAGS for tag, _ in pairs)
    # Sparsemax's candidates are all of its nonzero probabilities unless a
    # "+n" follows, so they sum to one (up to the 2-digit rounding).
    for row, token in zip(rows, test):
        sparsemax_part = row[lines[start].index("sparsemax"):lines[start].index("softmax")]
        if "+" not in sparsemax_part:
            total = sum(float(p) for p in re.findall(r"\d\.\d\d", sparsemax_part))
            assert abs(total - 1.0) <= 0.02, row
        softmax_part = row[lines[start].index("softmax"):lines[start].index("crf")]
        assert softmax_part.rstrip().endswith("+14")  # 17 nonzero, 3 shown
        # The CRF column: one tag (the best sequence's) and its marginal.
        crf_tag, crf_p = row[lines[start].index("crf"):].split()
        assert crf_tag in UPOS_TAGS and 0.0 < float(crf_p) <= 1.0
    # On this sentence the tagger's sequence gets most words right.
    crf_tags = [row[lines[start].index("crf"):].split()[0] for row in rows]
    assert sum(t == token["upos"] for t, token in zip(crf_tags, test)) >= len(test) - 3

    # The parser: trained on the same sentences' trees, scored on the test
    # split. A first-order linear parser on 360 sentences gets about 3 heads
    # in 4 right; LAS is at most UAS.
    # It names each model as it starts training it, then prints the report.
    assert lines[1:5] == ["  FenchelYoungClassifier(loss='sparsemax')",
                          "  FenchelYoungClassifier(loss='softmax')",
                          "  LinearChainCRF(loss='crf')",
                          "  SparseMAPParser(loss='sparsemap')"]
    assert lines[5].endswith("by token and by sentence; dependency parsing")
    assert "Dependency parsing: SparseMAPParser(loss='sparsemap', max_iter=5)" in out
    uas, las, exact = map(float, re.search(
        r"test UAS (\d\.\d+), LAS (\d\.\d+), whole trees right (\d\.\d+)", out).groups())
    assert 0.65 < uas < 0.95 and 0.6 < las <= uas and 0.1 < exact < uas
    mean_trees, single = re.search(
        r"SparseMAP keeps (\d+\.\d+) trees per test sentence on average; (\d+)% keep one",
        out).groups()
    # Sparse but not degenerate: a few trees on average, many sentences with one.
    assert 1.0 < float(mean_trees) < 20.0 and 10 <= int(single) < 100
    probabilities = re.search(r"the trees SparseMAP keeps: p = (.*)", out).group(1)
    probabilities = [float(p) for p in probabilities.split(", ")]
    assert probabilities == sorted(probabilities, reverse=True)
    assert abs(sum(probabilities) - 1.0) <= 0.005 * len(probabilities)
    right, n_words = re.search(r"with ([\d, ]+) of its (\d+) heads right", out).groups()
    assert int(n_words) == len(test)
    assert len(right.split(", ")) == len(probabilities)
    assert all(0 <= int(r) <= len(test) for r in right.split(", "))

    # Standard error: each model's time when it is done, the compile notice
    # on a first run, and a line every 10 s while a model trains.
    err = captured.err.splitlines()
    done = [line for line in err if line.startswith("    done in ")]
    assert len(done) == 4, captured.err
    assert all(DONE.fullmatch(line) for line in done), done
    others = [line for line in err if line not in done]
    assert all(TICK.fullmatch(line) or line.startswith("[sksparse_struct] compiling")
               for line in others), others


# The progress lines of main() on standard error.
TICK = re.compile(r"    \.\.\. (still compiling numba kernels \(first run only\)|training), "
                  r"\d+ s")
DONE = re.compile(r"    done in \d+\.\d s( \(of which compiling \d+\.\d s\))?")


def test_main_says_how_each_model_is_getting_on(capsys):
    # One classifier, with a tick every 50 ms: its fit takes longer than that.
    assert main(["--losses", "softmax", "--no-crf", "--no-parser"], tick_seconds=0.05) == 0
    captured = capsys.readouterr()
    # Standard output is as without the progress lines.
    assert captured.out.splitlines()[:2] == ["Training on the bundled UD English EWT sample:",
                                             "  FenchelYoungClassifier(loss='softmax')"]
    assert not [line for line in captured.out.splitlines()
                if TICK.fullmatch(line) or DONE.fullmatch(line)]
    err = [line for line in captured.err.splitlines()
           if not line.startswith("[sksparse_struct] compiling")]
    *ticks, done = err
    assert ticks and all(TICK.fullmatch(line) for line in ticks), err
    assert DONE.fullmatch(done), err


def test_help(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m sksparse_struct")
    for option in ["--losses", "--alpha", "--sentence", "--top-k", "--no-crf",
                   "--no-parser"]:
        assert option in out


@pytest.mark.parametrize("argv, message", [
    (["--sentence", "100"], "--sentence must be between 0 and 99"),
    (["--sentence", "-1"], "--sentence must be between 0 and 99"),
    (["--alpha", "0"], "--alpha must be positive"),
    (["--top-k", "0"], "--top-k must be at least 1"),
    (["--losses", "hinge"], "invalid choice: 'hinge'"),
    (["--alpha", "lots"], "invalid float value"),
    (["--frobnicate"], "unrecognized arguments"),
])
def test_bad_arguments(capsys, argv, message):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_python_dash_m_entry_point():
    # __main__.py is wired to the command line; --help lists its commands, and
    # the quickstart's options (no command) still reach the quickstart.
    done = subprocess.run([sys.executable, "-m", "sksparse_struct", "--help"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: sksparse-struct")
    assert "quickstart" in done.stdout
    done = subprocess.run([sys.executable, "-m", "sksparse_struct", "--no-crf", "--help"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m sksparse_struct")


def test_no_crf_option():
    assert _quickstart._parse_args([]).crf is True
    assert _quickstart._parse_args(["--no-crf"]).crf is False


def test_no_parser_option():
    assert _quickstart._parse_args([]).parser is True
    args = _quickstart._parse_args(["--no-parser", "--no-crf"])
    assert args.parser is False and args.crf is False


def test_run_rejects_a_bad_sentence_index():
    with pytest.raises(ValueError, match=r"sentence must be in \[0, 99\]; got 100"):
        _quickstart.run(losses=(), sentence=100)


def test_run_without_models_reports_the_data():
    results = _quickstart.run(losses=(), sentence=0, crf=False, parser=False)
    assert results["n_train_sentences"] == 360 and results["n_test_tokens"] == 1182
    assert results["n_classes"] == 17 and results["models"] == {}
    assert results["tagger"] is None and results["example"]["tagger"] is None
    assert results["parser"] is None
    assert results["example"]["words"][:3] == ["What", "if", "Google"]
    assert results["example"]["text"] == "What if Google Morphed Into GoogleOS?"


# --------------------------------------------------------------------------
# The pure pieces


@pytest.mark.parametrize("word, shape", [
    ("Google", "Xx"), ("USA", "X"), ("usa", "x"), ("42", "d"), ("3.14", "d.d"),
    ("e-mail", "x-x"), ("GoogleOS", "XxX"), ("n't", "x'x"), (",", ","),
    ("!!!!", "!"), ("", ""), ("Été", "Xx"),
])
def test_word_shape(word, shape):
    assert word_shape(word) == shape


def test_token_features_at_the_edges():
    f = token_features(["Hello"], 0)
    assert f["prev=<s>"] == 1.0 and f["next=</s>"] == 1.0
    assert f["word=hello"] == f["is_title"] == f["bias"] == 1.0
    assert "is_upper" not in f and "is_digit" not in f
    # Prefixes/suffixes longer than the word are the word itself.
    g = token_features(["a", "2001", "IBM"], 1)
    assert g["prefix3=200"] == g["suffix3=001"] == g["is_digit"] == 1.0
    assert g["prev=a"] == g["next=ibm"] == 1.0
    h = token_features(["a", "2001", "IBM"], 2)
    assert h["is_upper"] == 1.0 and h["prefix3=ibm"] == 1.0 and "is_title" not in h
    assert all(v == 1.0 for v in h.values())


def test_sentence_features_do_not_mutate_and_have_one_dict_per_word():
    words = ["The", "cat", "sat"]
    features = sentence_features(words)
    assert words == ["The", "cat", "sat"]
    assert len(features) == 3 and features[1]["prev=the"] == features[1]["next=sat"] == 1.0
    assert sentence_features([]) == []


def test_sparsity():
    assert sparsity(np.eye(3)) == (1.0, 1.0)
    assert sparsity(np.full((2, 4), 0.25)) == (4.0, 0.0)
    mean, single = sparsity([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0], [0.3, 0.7]])
    assert mean == 1.5 and single == 0.5


def test_top_candidates_order_ties_and_zeros():
    classes = ["A", "B", "C", "D"]
    assert top_candidates([0.25, 0.25, 0.0, 0.5], classes) == [
        ("D", 0.5), ("A", 0.25), ("B", 0.25)]
    assert top_candidates([0.25, 0.25, 0.0, 0.5], classes, k=2) == [("D", 0.5), ("A", 0.25)]
    assert top_candidates([0.0, 0.0, 1.0, 0.0], classes) == [("C", 1.0)]


def _fake_results():
    return {
        "n_train_sentences": 2, "n_train_tokens": 5, "n_test_sentences": 1,
        "n_test_tokens": 2, "n_features": 1234, "n_classes": 3, "alpha": 0.001,
        "models": {
            "sparsemax": {"accuracy": 0.5, "mean_nonzero": 1.5,
                          "single_fraction": 0.5, "fit_seconds": 0.25, "n_iter": 3},
            "softmax": {"accuracy": 1.0, "mean_nonzero": 3.0,
                        "single_fraction": 0.0, "fit_seconds": 1.0, "n_iter": 4},
        },
        "example": {
            "index": 0, "text": "Hi there", "words": ["Hi", "there"],
            "gold": ["INTJ", "ADV"], "top_k": 2,
            "candidates": {
                "sparsemax": [[("INTJ", 1.0)], [("ADV", 0.5), ("NOUN", 0.25), ("X", 0.25)]],
                "softmax": [[("INTJ", 0.9), ("X", 0.06), ("ADV", 0.04)],
                            [("ADV", 0.6), ("X", 0.3), ("NOUN", 0.1)]],
            },
        },
    }


def _fake_results_with_tagger():
    results = _fake_results()
    results["tagger"] = {"accuracy": 0.75, "mean_nonzero": 2.5, "single_fraction": 0.25,
                         "fit_seconds": 2.0, "n_iter": 7, "c2": 0.5}
    results["example"]["tagger"] = [("INTJ", 0.875), ("NOUN", 0.5)]
    return results


def test_format_report_with_the_tagger():
    text = format_report(_fake_results_with_tagger())
    assert text.splitlines()[0].endswith("tagging, by token and by sentence")
    assert "LinearChainCRF(loss='crf', c2=0.5)" in text
    assert _row(text, "test accuracy") == ["0.500", "1.000", "0.750"]
    assert _row(text, "nonzero probabilities (of 3)") == ["1.50", "3.00", "2.50"]
    assert _row(text, "tokens with one nonzero probability") == ["50.0%", "0.0%", "25.0%"]
    assert _row(text, "fit time (s)") == ["0.2", "1.0", "2.0"]
    lines = text.splitlines()
    assert lines[-2].split()[-2:] == ["INTJ", "0.88"]
    assert lines[-1].split()[-2:] == ["NOUN", "0.50"]
    header = lines[-3]
    assert header.split() == ["word", "gold", "sparsemax", "softmax", "crf"]
    assert lines[-1].index("NOUN 0.50") == header.index("crf")
    assert "crf: the tag in the tagger's best sequence" in text
    # The classifier columns are as without the tagger.
    assert lines[-1].index("ADV 0.60") == header.index("softmax")
    # Every line stays readable in a terminal (the example rows aside).
    assert all(len(line) <= 80 for line in lines[:-3])


def test_format_report_with_the_parser():
    results = _fake_results_with_tagger()
    results["parser"] = {
        "loss": "sparsemap", "max_iter": 5, "n_iter": 5, "fit_seconds": 3.24,
        "uas": 0.75, "las": 0.7124, "exact_match": 0.4, "mean_trees": 2.5,
        "single_tree": 0.38, "example": [(0.874, 2), (0.126, 1)], "example_words": 2,
    }
    text = format_report(results)
    lines = text.splitlines()
    assert lines[0].endswith("tagging, by token and by sentence; dependency parsing")
    assert lines[-6:] == [
        "Dependency parsing: SparseMAPParser(loss='sparsemap', max_iter=5) on the",
        "  same sentences' trees (words, lemmas, gold UPOS and XPOS), with relations",
        "  test UAS 0.750, LAS 0.712, whole trees right 0.40; fit time 3.2 s",
        "  SparseMAP keeps 2.50 trees per test sentence on average; 38% keep one",
        "  test sentence 0, the trees SparseMAP keeps: p = 0.87, 0.13",
        "    with 2, 1 of its 2 heads right",
    ]
    assert lines[-7] == ""
    assert all(len(line) <= 80 for line in lines[-6:])
    # The tables above are as without the parser.
    del results["parser"]
    assert "\n".join(lines[1:-7]) == "\n".join(format_report(results).splitlines()[1:])


def test_format_report_exact_values():
    text = format_report(_fake_results())
    assert "crf" not in text and "Tagger" not in text
    assert "train 2 sentences, 5 tokens; test 1 sentences, 2 tokens" in text
    assert "1,234 features" in text and "3 UPOS tags" in text and "alpha=0.001" in text
    assert _row(text, "test accuracy") == ["0.500", "1.000"]
    assert _row(text, "nonzero probabilities (of 3)") == ["1.50", "3.00"]
    assert _row(text, "tokens with one nonzero probability") == ["50.0%", "0.0%"]
    assert _row(text, "fit time (s)") == ["0.2", "1.0"]
    assert "Example, test sentence 0: Hi there" in text
    lines = text.splitlines()
    assert lines[-2].split() == ["Hi", "INTJ", "INTJ", "1.00", "INTJ", "0.90", "X", "0.06", "+1"]
    assert lines[-1].split() == ["there", "ADV", "ADV", "0.50", "NOUN", "0.25", "+1",
                                 "ADV", "0.60", "X", "0.30", "+1"]
    # Columns line up: each model's candidates start under its name.
    header = lines[-3]
    assert lines[-1].index("ADV 0.50") == header.index("sparsemax")
    assert lines[-1].index("ADV 0.60") == header.index("softmax")
    # Table values are right-aligned under the model names.
    table_header = [line for line in lines if line.strip() == "sparsemax    softmax"][0]
    accuracy_line = [line for line in lines if line.startswith("test accuracy")][0]
    assert len(accuracy_line) == len(table_header)
