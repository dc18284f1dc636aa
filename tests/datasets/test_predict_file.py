"""predict_file: tag or parse a file of any size into another, in chunks, in parallel.

The reference is the obvious program: read the whole file, predict every
sentence at once, and write the predictions into the file's lines.
predict_file must give exactly that, for every chunk size and n_jobs.
"""

import gzip
import importlib.resources
import io
import os
import re
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer

from sksparse_struct import EasyFirstTagger, LinearChainCRF, SparseMAPParser
from sksparse_struct.datasets import (
    load_ewt_sample,
    predict_file,
    read_conll,
    read_conllu,
)
from sksparse_struct.feature_extraction import TokenFeatures

from .test_streaming import _peak, columns_text, treebank_text


def ewt_test_text():
    """The bundled EWT test sample (100 sentences, multiword tokens), as text."""
    resource = importlib.resources.files("sksparse_struct.datasets") / "data"
    with (resource / "en_ewt-ud-test-sample.conllu.gz").open("rb") as f:
        return gzip.decompress(f.read()).decode("utf-8")


def with_column(text, column, values, also=None):
    """``text`` with ``column`` of every word line replaced by the next of ``values``.

    ``also`` is ``(column, values)`` for a second column.
    """
    values = iter(values)
    second = (also[0], iter(also[1])) if also else None
    lines = text.split("\n")
    for i, line in enumerate(lines):
        cols = line.split("\t")
        if len(cols) == 10 and cols[0].isdigit():
            cols[column] = next(values)
            if second:
                cols[second[0]] = next(second[1])
            lines[i] = "\t".join(cols)
    assert next(values, None) is None
    return "\n".join(lines)


def flat(sequences):
    return [str(v) for sequence in sequences for v in sequence]


@pytest.fixture(scope="module")
def tagger():
    X, y = load_ewt_sample("train", return_X_y=True)
    return make_pipeline(TokenFeatures(preset="pos"),
                         LinearChainCRF(loss="perceptron", max_iter=3, random_state=0)).fit(X, y)


@pytest.fixture(scope="module")
def parser():
    X, y = load_ewt_sample("train", return_X_y=True, target="tree")
    return SparseMAPParser(loss="perceptron", max_iter=1, random_state=0).fit(X, y)


@pytest.fixture(scope="module")
def ewt(tmp_path_factory):
    path = tmp_path_factory.mktemp("ewt") / "test.conllu"
    path.write_text(ewt_test_text(), encoding="utf-8")
    return path


def test_a_tagger_on_conllu_is_the_whole_file_at_once(tmp_path, tagger, ewt):
    text = ewt.read_text(encoding="utf-8")
    X, _ = read_conll(ewt, label="upos")
    expected = with_column(text, 3, flat(tagger.predict(X)))
    assert expected != text and re.search(r"\n6-7\t", text)  # multiword tokens are copied
    for chunk_size in (1, 7, 1000):
        out = predict_file(tagger, ewt, tmp_path / "out.conllu", label="upos",
                           chunk_size=chunk_size)
        assert out == tmp_path / "out.conllu"
        assert out.read_text(encoding="utf-8") == expected
    # Another column, and only some token fields for the tagger.
    X, _ = read_conll(ewt, columns=("word", "xpos"), label="xpos")
    assert X[0][0] == {"word": "What"}
    expected = with_column(text, 4, flat(tagger.predict(X)))
    predict_file(tagger, ewt, tmp_path / "xpos.conllu", label="xpos",
                 columns=("word", "xpos"), chunk_size=9)
    assert (tmp_path / "xpos.conllu").read_text(encoding="utf-8") == expected


def test_a_parser_writes_heads_and_relations(tmp_path, parser, ewt):
    text = ewt.read_text(encoding="utf-8")
    X, _ = read_conllu(ewt)
    heads, deprels = parser.predict(X, return_deprel=True)
    expected = with_column(text, 6, flat(heads), also=(7, flat(deprels)))
    for chunk_size in (3, 1000):
        predict_file(parser, ewt, tmp_path / "parsed.conllu", label="head",
                     chunk_size=chunk_size)
        assert (tmp_path / "parsed.conllu").read_text(encoding="utf-8") == expected
    X_out, heads_out, deprels_out = read_conllu(tmp_path / "parsed.conllu", return_deprel=True)
    assert X_out == X and flat(heads_out) == flat(heads) and deprels_out == deprels
    # Text to parse has no trees: HEAD and DEPREL "_".
    blank = with_column(text, 6, ["_"] * len(flat(heads)), also=(7, ["_"] * len(flat(heads))))
    raw = tmp_path / "raw.conllu"
    raw.write_text(blank, encoding="utf-8")
    predict_file(parser, raw, tmp_path / "from_raw.conllu", label="head")
    assert (tmp_path / "from_raw.conllu").read_text(encoding="utf-8") == expected
    n_words = len(flat(heads))
    raw.write_text(with_column(text, 6, ["-1"] + ["_"] * (n_words - 1)), encoding="utf-8")
    with pytest.raises(ValueError, match=r"raw\.conllu, line 5: HEAD '-1' of word 1 is not a "
                       r"non-negative integer or '_'"):
        predict_file(parser, raw, tmp_path / "bad.conllu", label="head")


def test_a_parser_fitted_without_relations_writes_no_relation(tmp_path, ewt):
    X, y = load_ewt_sample("train", return_X_y=True, target="tree")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        unlabelled = SparseMAPParser(loss="perceptron", max_iter=1, random_state=0).fit(
            X, [heads for heads, _ in y])
    X_test, _ = read_conllu(ewt)
    heads = unlabelled.predict(X_test)
    expected = with_column(ewt.read_text(encoding="utf-8"), 6, flat(heads),
                           also=(7, ["_"] * len(flat(heads))))
    out = predict_file(unlabelled, ewt, io.StringIO(), label="head")
    assert out.getvalue() == expected


def test_column_files_replace_or_append_the_label(tmp_path):
    train = columns_text(200, seed=1)
    X, y = read_conll(io.StringIO(train))
    crf = LinearChainCRF(c2=0.1, max_iter=30).fit(X, y)
    text = columns_text(60, seed=2)
    path = tmp_path / "test.txt"
    path.write_text(text, encoding="utf-8")
    X_test, _ = read_conll(path)
    predicted = iter(flat(crf.predict(X_test)))
    expected = []
    for line in text.split("\n"):
        fields = line.split()
        if fields and fields[0] != "-DOCSTART-":
            fields[2] = next(predicted)
            line = ("\t" if "\t" in line else " ").join(fields)
        expected.append(line)
    expected = "\n".join(expected)
    assert "-DOCSTART- -X- O\n\n" in expected and "\t" in expected
    for chunk_size in (1, 5, 1000):
        out = predict_file(crf, path, io.StringIO(), chunk_size=chunk_size)
        assert out.getvalue() == expected
    # A new column after the gold one, as conlleval reads them; the
    # estimator sees every column of the file.
    X_all = read_conll(path, label=None)
    predicted = iter(flat(crf.predict(X_all)))
    out = predict_file(crf, path, io.StringIO(), label="guess").getvalue()
    for line in out.split("\n"):
        fields = line.split()
        if fields and fields[0] != "-DOCSTART-":
            assert len(fields) == 4 and fields[3] == next(predicted)
    assert next(predicted, None) is None


def test_other_taggers_files_objects_and_gzip(tmp_path, tagger, ewt):
    X, y = load_ewt_sample("train", return_X_y=True)
    easy_first = make_pipeline(TokenFeatures(preset="pos"),
                               EasyFirstTagger(max_iter=2, random_state=0)).fit(X, y)
    X_test, _ = read_conll(ewt, label="upos")
    text = ewt.read_text(encoding="utf-8")
    expected = with_column(text, 3, flat(easy_first.predict(X_test)))
    packed = tmp_path / "in.conllu.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    out = predict_file(easy_first, packed, tmp_path / "out.conllu.gz", label="upos",
                       chunk_size=30)
    data = out.read_bytes()
    assert data[:2] == b"\x1f\x8b" and gzip.decompress(data).decode() == expected
    # Deterministic bytes (no time stamp, no name).
    predict_file(easy_first, packed, tmp_path / "again.conllu.gz", label="upos")
    assert (tmp_path / "again.conllu.gz").read_bytes() == data
    # File objects, text and binary, in and out.
    with open(ewt, encoding="utf-8") as f:
        out = predict_file(easy_first, f, io.BytesIO(), label="upos", format="conllu")
    assert out.getvalue().decode() == expected
    out = predict_file(easy_first, io.BytesIO(text.encode()), io.StringIO(), label="upos",
                       format="conllu")
    assert out.getvalue() == expected


def test_same_output_for_every_n_jobs(tmp_path, tagger, parser, ewt):
    outputs = {}
    for n_jobs in (1, 2):
        predict_file(tagger, ewt, tmp_path / f"tags{n_jobs}.conllu", label="upos",
                     chunk_size=10, n_jobs=n_jobs)
        predict_file(parser, ewt, tmp_path / f"trees{n_jobs}.conllu", label="head",
                     chunk_size=25, n_jobs=n_jobs)
        outputs[n_jobs] = [(tmp_path / f"{kind}{n_jobs}.conllu").read_bytes()
                           for kind in ("tags", "trees")]
    assert outputs[1] == outputs[2]
    X, _ = read_conll(ewt, label="upos")
    assert outputs[2][0].decode() == with_column(ewt.read_text(encoding="utf-8"), 3,
                                                 flat(tagger.predict(X)))


def test_progress_lines(tagger, ewt, capsys):
    predict_file(tagger, ewt, io.StringIO(), label="upos", chunk_size=40, verbose=1)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4  # 40 + 40 + 20 sentences, and the total
    assert lines[0].startswith("[predict_file] 40 sentences, ")
    assert "% of the input read" in lines[0] and "100% of the input read" in lines[2]
    assert lines[-1].startswith("[predict_file] done: 100 sentences, 1182 words in ")
    predict_file(tagger, ewt, io.StringIO(), label="upos", chunk_size=40, verbose=2)
    assert len(capsys.readouterr().out.splitlines()) == 2


class Stub:
    """A tagger that predicts what it is told, to test what gets written."""

    def __init__(self, value):
        self.value = value

    def predict(self, X):
        if self.value == "too few":
            return [["NOUN"] * len(s) for s in X][1:]
        if self.value == "short":
            return [["NOUN"] * (len(s) - 1) for s in X]
        return [[self.value] * len(s) for s in X]


@pytest.mark.parametrize("value, message", [
    ("A B", (r"line 2: the estimator predicted a UPOS that cannot be written: 'A B' "
             r"contains a space; CoNLL-U allows spaces only in FORM, LEMMA and MISC")),
    (3, r"line 2: the estimator predicted a UPOS that cannot be written: int 3 is not a str"),
    ("FOO", r"line 2: .* 'FOO' is not one of the 17 universal POS tags"),
    ("", r"line 2: .* the value is empty"),
    ("A\tB", r"line 2: .* contains a tab or a line break"),
    ("\ud800", r"line 2: .* cannot be written in the encoding 'utf-8'"),
    ("too few", (r"line 2: the estimator's predict returned 1 label sequences for 2 "
                 r"sentences")),
    ("short", r"line 2: the estimator's predict returned 0 labels for a sentence of 1 words"),
])
def test_predictions_that_cannot_be_written(tmp_path, value, message):
    text = ("# sent_id = 1\n1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_\n\n"
            "# sent_id = 2\n1\tYes\tyes\tINTJ\tUH\t_\t0\troot\t_\t_\n\n")
    path = tmp_path / "in.conllu"
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "out.conllu"
    with pytest.raises(ValueError, match=rf"^{path}, {message}"):
        predict_file(Stub(value), path, out, label="upos", chunk_size=1 + (value == "too few"))
    # No output, and no temporary file left behind.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.conllu"]


def test_column_values_that_would_split_the_column(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("He PRP B-NP\n", encoding="utf-8")
    for value in ("B NP", "B\xa0NP"):
        with pytest.raises(ValueError, match=r"line 1: the estimator predicted a 'chunk' that "
                           r"cannot be written: .* contains a space, which would split"):
            predict_file(Stub(value), path, io.StringIO())
    assert predict_file(Stub("O"), path, io.StringIO()).getvalue() == "He PRP O\n"


def test_bad_input_and_arguments(tmp_path, ewt):
    text = ewt.read_text(encoding="utf-8")
    lines = text.split("\n")
    bad = tmp_path / "bad.conllu"
    bad.write_text("\n".join(lines[:500] + ["1\tonly\tthree"] + lines[500:]), encoding="utf-8")
    for n_jobs in (1, 2):
        with pytest.raises(ValueError, match=rf"^{bad}, line 501: expected 10 tab-separated"):
            predict_file(Stub("NOUN"), bad, tmp_path / "out.conllu", label="upos",
                         chunk_size=5, n_jobs=n_jobs)
    assert not (tmp_path / "out.conllu").exists()
    with pytest.raises(ValueError, match="output_path is the input file"):
        predict_file(Stub("NOUN"), ewt, ewt, label="upos")
    assert ewt.read_text(encoding="utf-8") == text
    for kwargs, message in [
        ({"label": "chunk"}, (r"label must be one of 'upos', 'xpos', 'lemma' \(a tagger\) "
                              r"or 'head' \(a parser\) for a CoNLL-U file; got 'chunk'")),
        ({"label": None}, "label must name the column"),
        ({"label": "head", "columns": ("word",)}, "columns does not apply to label='head'"),
        ({"label": "upos", "columns": ("word",)}, "label 'upos' is not one of columns"),
        ({"label": "upos", "chunk_size": 0}, "chunk_size must be an integer >= 1, got 0"),
        ({"label": "upos", "n_jobs": 0}, "n_jobs must be None or a non-zero integer, got 0"),
        ({"label": "upos", "verbose": -1}, "verbose must be an integer >= 0, got -1"),
        ({"label": "upos", "format": "csv"}, "format must be"),
    ]:
        with pytest.raises(ValueError, match=message):
            predict_file(Stub("NOUN"), ewt, io.StringIO(), **kwargs)
    with pytest.raises(TypeError, match="estimator must have a predict method"):
        predict_file(object(), ewt, io.StringIO(), label="upos")
    with pytest.raises(FileNotFoundError):
        predict_file(Stub("NOUN"), tmp_path / "absent.conllu", io.StringIO(), label="upos")


class Sink:
    """A text file object that keeps nothing."""

    def write(self, text):
        pass


def test_memory_is_a_few_chunks_whatever_the_file_size(tmp_path):
    small, large = tmp_path / "small.conllu", tmp_path / "large.conllu"
    text = treebank_text(300)
    small.write_text(text, encoding="utf-8")
    large.write_text(text * 8, encoding="utf-8")
    stub = Stub("NOUN")
    for path in (small, large):
        predict_file(stub, path, tmp_path / "out.conllu", label="upos", chunk_size=20)
    expected = read_conllu(large)[0]
    tagged, _ = read_conll(tmp_path / "out.conllu", label="upos")
    assert len(tagged) == len(expected) == 2400
    peak_small = _peak(lambda: predict_file(stub, small, Sink(), label="upos",
                                            chunk_size=20))
    peak_large = _peak(lambda: predict_file(stub, large, Sink(), label="upos",
                                            chunk_size=20))
    # A device is written to, not replaced.
    predict_file(stub, small, os.devnull, label="upos")
    assert os.path.exists(os.devnull) and not os.path.isfile(os.devnull)
    read_large = _peak(lambda: read_conllu(large))
    assert peak_large < read_large / 10
    assert peak_large - peak_small < read_large / 40, (peak_small, peak_large, read_large)


def test_heads_are_written_as_integers(tmp_path):
    class Chain:
        """Each word the head of the next: heads as NumPy integers."""

        def predict(self, X):
            return [np.arange(len(s), dtype=np.int64) for s in X]

    text = treebank_text(20)
    out = predict_file(Chain(), io.StringIO(text), io.StringIO(), label="head",
                       format="conllu").getvalue()
    _, heads, deprels = read_conllu(io.StringIO(out), return_deprel=True)
    assert all(h.tolist() == list(range(len(h))) for h in heads)
    assert {d for sentence in deprels for d in sentence} == {"_"}


class UposFromForm(TransformerMixin, BaseEstimator):
    """A stand-in for a tagger in a pipeline before the parser (ColumnTagger's contract).

    Replaces UPOS, LEMMA and FEATS of each token dict by a rule of its
    form, clears XPOS ("_", which leaves the input's in the output) and
    counts the sentences it transformed.
    """

    def fit(self, X, y=None):
        return self

    def __sklearn_is_fitted__(self):
        return True

    def transform(self, X):
        self.n_transformed_ = getattr(self, "n_transformed_", 0) + len(X)
        return [[{**t, "upos": "PUNCT" if not t["form"][0].isalnum() else "NOUN",
                  "lemma": t["form"].lower(), "xpos": "_",
                  "feats": {"Len": str(min(len(t["form"]), 9))}}
                 for t in s] for s in X]


def test_a_pipeline_writes_the_tags_its_steps_set(tmp_path, parser, ewt):
    text = ewt.read_text(encoding="utf-8")
    X, _ = read_conllu(ewt)
    tags = UposFromForm()
    pipeline = Pipeline([("tags", tags), ("parser", parser)])
    X_tagged = tags.transform(X)
    heads, deprels = parser.predict(X_tagged, return_deprel=True)
    n_words = len(flat(heads))
    gold_heads, gold_deprels = parser.predict(X, return_deprel=True)
    assert (flat(heads), deprels) != (flat(gold_heads), gold_deprels)  # the tags matter
    expected = with_column(text, 6, flat(heads), also=(7, flat(deprels)))
    for column, field in [(2, "lemma"), (3, "upos")]:
        expected = with_column(expected, column, [t[field] for s in X_tagged for t in s])
    expected = with_column(expected, 5, [f"Len={min(len(t['form']), 9)}" for s in X for t in s])
    tags.n_transformed_ = 0
    for chunk_size in (7, 1000):
        out = predict_file(pipeline, ewt, io.StringIO(), label="head",
                           chunk_size=chunk_size).getvalue()
        assert out == expected
    assert tags.n_transformed_ == 2 * len(X)  # once per sentence and call
    # XPOS, which the step cleared, is copied
    X_out, heads_out, deprels_out = read_conllu(io.StringIO(out), return_deprel=True)
    assert [t["xpos"] for s in X_out for t in s] == [t["xpos"] for s in X for t in s]
    assert flat(heads_out) == flat(heads) and len(flat(heads_out)) == n_words
    # a tag that cannot be written is named
    bad = Pipeline([("tags", FunctionTransformer(
        lambda X: [[{**t, "upos": "NOT"} for t in s] for s in X])), ("parser", parser)])
    with pytest.raises(ValueError, match=r"test\.conllu, line 5: the estimator predicted a "
                       r"UPOS that cannot be written: 'NOT' is not one of the 17"):
        predict_file(bad, ewt, io.StringIO(), label="head")


def test_a_pipeline_whose_steps_change_no_tag_writes_what_its_parser_writes(parser, ewt):
    alone = predict_file(parser, ewt, io.StringIO(), label="head").getvalue()
    for step in (FunctionTransformer(None), FunctionTransformer(lambda X: [list(s) for s in X])):
        pipeline = Pipeline([("same", step), ("parser", parser)])
        assert predict_file(pipeline, ewt, io.StringIO(), label="head").getvalue() == alone
