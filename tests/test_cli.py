"""The ``sksparse-struct`` command line: train, predict, evaluate, info, samples.

The commands run in-process through ``_cli.main`` (fast) on the bundled
samples with tiny training budgets; one test runs the installed console
script in a subprocess, as a user's shell does.
"""

import json
import re
import shutil
import subprocess
import sys
import warnings

import pytest

from sksparse_struct import _cli, _model_io, load_model, save_model
from sksparse_struct.datasets import load_ewt_sample, read_conll, read_conllu

SCORE_LINE = re.compile(r"^[A-Za-z][\w ]* \d+\.\d\d$")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("samples")
    assert _cli.main(["samples", str(folder)]) == 0
    return folder


def run(capsys, *argv):
    """``(status, stdout, stderr)`` of one command."""
    status = _cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def assert_user_error(status, err, *words):
    assert status == 2
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("sksparse-struct: error:")]
    assert len(lines) == 1, err
    for word in words:
        assert word in lines[0], err


def test_samples_writes_the_bundled_data(data):
    test = load_ewt_sample("test")
    X, heads = read_conllu(data / "ewt-test.conllu")
    assert len(X) == len(test) == 100
    raw = (data / "ewt-test.txt").read_text(encoding="utf-8")
    # Every sentence's text, in order, paragraphs separated by a blank line.
    assert " ".join(raw.split()) == " ".join(" ".join(s.metadata["text"] for s in test).split())
    assert "\n\n" in raw
    assert sorted(p.name for p in (data / "cdcp-train").glob("*.ann.json"))[:1] == [
        "00219.ann.json"]


@pytest.fixture(scope="module")
def upos_model(data, tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "upos.joblib"
    status = _cli.main(["train", "tagger", "--train", str(data / "ewt-train.conllu"),
                        "--model", str(path), "--set", "max_iter=20", "--set", "tol=None",
                        "--no-progress"])
    assert status == 0
    return path


def test_tagger_on_conllu(data, upos_model, capsys, tmp_path):
    model, metadata = load_model(upos_model, return_metadata=True)
    assert metadata["task"] == "tagger" and metadata["label"] == "upos"
    assert model.get_params()["linearchaincrf__max_iter"] == 20
    assert metadata["summary"]["sentences"] == 360
    assert metadata["summary"]["settings"] == {"linearchaincrf__max_iter": "20",
                                                   "linearchaincrf__tol": "None"}

    status, out, err = run(capsys, "evaluate", "--model", upos_model, data / "ewt-test.conllu")
    assert status == 0, err
    assert out.splitlines()[0].startswith("accuracy ")
    assert all(SCORE_LINE.match(line) for line in out.splitlines())
    accuracy = float(out.split()[1])

    output = tmp_path / "out.conllu"
    status, out, err = run(capsys, "predict", "--model", upos_model,
                           data / "ewt-test.conllu", "--output", output)
    assert status == 0 and out == ""
    X_pred, _ = read_conll(output, label="upos", format="conllu")
    X_gold, y_gold = read_conll(data / "ewt-test.conllu", label="upos", format="conllu")
    _, y_pred = read_conll(output, label="upos", format="conllu")
    # The tags written are the model's, and evaluate scored exactly them.
    assert y_pred == model.predict(X_gold)
    agree = sum(a == b for s, t in zip(y_gold, y_pred) for a, b in zip(s, t))
    assert round(100 * agree / sum(map(len, y_gold)), 2) == accuracy


def test_info(upos_model, capsys):
    status, out, err = run(capsys, "info", upos_model)
    assert status == 0
    fields = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    assert fields["task"] == "tagger"
    assert fields["label"] == "upos"
    assert fields["estimator"] == "TokenFeatures -> LinearChainCRF"
    assert "training sentences 360" in out
    status, out, _ = run(capsys, "info", upos_model, "--params")
    assert "param linearchaincrf__max_iter 20" in out


def test_tagger_on_column_files_reports_chunk_f1(tmp_path, capsys):
    # A toy chunking file: word, POS, chunk; the chunk follows the POS.
    chunk = {"DT": "B-NP", "NN": "I-NP", "VBZ": "B-VP", ".": "O"}
    rows = [("The", "DT"), ("dog", "NN"), ("barks", "VBZ"), (".", ".")]
    text = "".join("".join(f"{w} {p} {chunk[p]}\n" for w, p in rows) + "\n" for _ in range(6))
    train = tmp_path / "train.txt"
    train.write_text(text)
    model = tmp_path / "chunker.joblib"
    # A column file named .txt, as CoNLL-2000's, is read as columns without --format.
    status, out, err = run(capsys, "train", "tagger", "--train", train,
                           "--dev", train, "--model", model, "--set", "c2=0.01")
    assert status == 0, err
    assert "dev chunk F1 100.00" in out
    assert load_model(model, return_metadata=True)[1]["columns"] == ["word", "pos", "chunk"]
    status, out, err = run(capsys, "evaluate", "--model", model, train)
    assert out.splitlines() == ["accuracy 100.00", "chunk F1 100.00"]
    status, out, err = run(capsys, "predict", "--model", model, train)
    assert out == text
    status, out, err = run(capsys, "predict", "--model", model, "--format", "text", train)
    assert_user_error(status, err)


@pytest.fixture(scope="module")
def parser_model(data, tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "parser.joblib"
    status = _cli.main(["train", "parser", "--train", str(data / "ewt-train.conllu"),
                        "--model", str(path), "--set", "max_iter=2", "--set", "tol=None",
                        "--no-progress"])
    assert status == 0
    return path


def test_parser(data, parser_model, capsys):
    status, out, err = run(capsys, "evaluate", "--model", parser_model,
                           data / "ewt-test.conllu")
    assert status == 0, err
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == ["UAS", "LAS"]
    assert all(SCORE_LINE.match(line) for line in lines)
    uas = float(lines[0].split()[1])
    assert 30 < uas <= 100

    status, out, err = run(capsys, "predict", "--model", parser_model,
                           data / "ewt-test.conllu")
    assert status == 0
    # Standard output is the CoNLL-U file and nothing else.
    import io

    X, heads, deprels = read_conllu(io.StringIO(out), return_deprel=True)
    model = load_model(parser_model)
    gold, _ = read_conllu(data / "ewt-test.conllu")
    predicted = model.predict(gold)
    assert [list(h) for h in heads] == [list(h) for h in predicted]


def test_argument_miner(data, tmp_path, capsys):
    model = tmp_path / "miner.joblib"
    status, out, err = run(capsys, "train", "argument-miner", "--train", data / "cdcp-train",
                           "--model", model, "--set", "max_iter=2", "--dev",
                           data / "cdcp-test", "--no-progress")
    assert status == 0, err
    assert [line.split(" F1")[0] for line in out.splitlines() if " F1 " in line] == [
        "dev link", "dev proposition", "dev argument"]
    status, out, err = run(capsys, "evaluate", "--model", model, data / "cdcp-test")
    assert all(SCORE_LINE.match(line) for line in out.splitlines())
    status, out, err = run(capsys, "predict", "--model", model, data / "cdcp-test")
    records = [json.loads(line) for line in out.splitlines()]
    assert len(records) == 8
    for record in records:
        assert len(record["labels"]) == len(record["propositions"])
        assert all(0 <= s < len(record["labels"]) for link in record["links"] for s in link)


def test_set_values_are_python_literals():
    assert _cli._value("3") == 3 and _cli._value("0.5") == 0.5
    assert _cli._value("None") is None and _cli._value("True") is True
    assert _cli._value("(1, 2)") == (1, 2)
    assert _cli._value("sparsemap") == "sparsemap"


@pytest.mark.parametrize("argv, words", [
    (["train", "tagger", "--train", "missing.conllu", "--model", "m.joblib"],
     ["training file", "missing.conllu", "does not exist"]),
    (["train", "parser", "--train", "{data}/ewt-test.txt", "--model", "m.joblib"],
     ["ewt-test.txt"]),
    (["train", "tagger", "--train", "{data}/ewt-train.conllu", "--model", "m.joblib",
      "--set", "no_such_param=1"], ["no_such_param", "no such parameter"]),
    (["train", "tagger", "--train", "{data}/ewt-train.conllu", "--model", "m.joblib",
      "--label", "chunk"], ["--label", "upos, xpos or lemma"]),
    (["train", "argument-miner", "--train", "{data}/ewt-train.conllu", "--model", "m.joblib"],
     ["folder"]),
    (["predict", "--model", "missing.joblib", "{data}/ewt-test.conllu"],
     ["model file", "does not exist"]),
    (["predict", "--model", "{data}/ewt-test.conllu", "{data}/ewt-test.conllu"],
     ["not a model file"]),
    (["evaluate", "--model", "{upos}", "{data}/ewt-test.txt"], ["gold", "plain text"]),
])
def test_user_mistakes_are_one_line(argv, words, data, upos_model, tmp_path, capsys,
                                    monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = [a.format(data=data, upos=upos_model) for a in argv]
    status, out, err = run(capsys, *argv)
    assert_user_error(status, err, *words)
    assert not (tmp_path / "m.joblib").exists()


def test_unknown_task_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as info:
        _cli.main(["train", "chunker", "--train", "x", "--model", "y"])
    assert info.value.code == 2
    assert "invalid choice: 'chunker'" in capsys.readouterr().err


def test_another_version_warns(tmp_path, monkeypatch, upos_model):
    model = load_model(upos_model)
    monkeypatch.setattr(_model_io, "__version__", "0.0.1")
    path = tmp_path / "old.joblib"
    save_model(model, path, label="upos")
    monkeypatch.undo()
    with pytest.warns(UserWarning, match="saved by sksparse_struct 0.0.1"):
        load_model(path)


def test_a_bare_estimator_loads_with_guessed_metadata(tmp_path, upos_model):
    import joblib

    model = load_model(upos_model)
    joblib.dump(model, tmp_path / "bare.joblib")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, metadata = load_model(tmp_path / "bare.joblib", return_metadata=True)
    assert metadata["task"] == "tagger" and metadata["label"] is None


def test_console_script_output_is_clean_when_piped(data, upos_model, tmp_path):
    script = shutil.which("sksparse-struct")
    command = [script] if script else [sys.executable, "-m", "sksparse_struct"]
    done = subprocess.run(command + ["predict", "--model", str(upos_model),
                                     str(data / "ewt-test.conllu")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    # Not a terminal: no progress lines, and standard output is only the file.
    assert done.stderr == ""
    assert done.stdout.startswith("# newdoc id")
    done = subprocess.run(command + ["evaluate", "--model", str(tmp_path / "none.joblib"),
                                     str(data / "ewt-test.conllu")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert done.stderr.startswith("sksparse-struct: error:") and "Traceback" not in done.stderr


def test_progress_goes_to_standard_error(data, tmp_path, capsys):
    status, out, err = run(capsys, "train", "parser", "--train", data / "ewt-train.conllu",
                           "--model", tmp_path / "p.joblib", "--set", "max_iter=1",
                           "--set", "tol=None", "--progress")
    assert status == 0, err
    # The epochs and the ticker's last line on standard error; results alone on standard output.
    assert "[sksparse-struct] training a parser on 360 sentences" in err
    assert "[SparseMAPParser] epoch 1/1" in err and "done in" in err
    assert out.splitlines()[0].startswith("trained in ")
    assert "epoch" not in out
    # The saved model does not keep the progress display on.
    assert load_model(tmp_path / "p.joblib").verbose == 0
    status, out, err = run(capsys, "predict", "--model", tmp_path / "p.joblib",
                           data / "ewt-test.conllu", "--progress")
    assert "[predict_file] done: 100 sentences" in err
    assert out.startswith("# newdoc id")


def test_a_taggers_plain_text_output_reads_back(data, upos_model, tmp_path, capsys):
    output = tmp_path / "tagged.conllu"
    status, out, err = run(capsys, "predict", "--model", upos_model, data / "ewt-test.txt",
                           "--output", output)
    assert status == 0, err
    # No trees (HEAD "_"), which the tagging reader does not need.
    X, y = read_conll(output, label="upos", format="conllu")
    assert len(X) > 50 and all(tag != "_" for tags in y for tag in tags)
    assert y == load_model(upos_model).predict(X)
