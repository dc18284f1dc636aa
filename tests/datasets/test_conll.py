"""Tests for sksparse_struct.datasets.read_conll (CoNLL column files and CoNLL-U)."""

import gzip
import importlib.resources
import io
import sys
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sksparse_struct.datasets import load_ewt_sample, read_conll

# CoNLL-2000 style, with a document marker, runs of blank lines, a tab,
# trailing whitespace and no final newline.
CHUNKS = (
    "-DOCSTART- -X- O\n"
    "\n"
    "He PRP B-NP\n"
    "reckons VBZ B-VP\n"
    "the\tDT  B-NP   \n"
    "deficit NN I-NP\n"
    "\n"
    "\n"
    "\n"
    ". . O\n"
    "-DOCSTART- -X- O\n"
    "\n"
    "Rates NNS B-NP"
)
CHUNKS_X = [
    [{"word": "He", "pos": "PRP"}, {"word": "reckons", "pos": "VBZ"},
     {"word": "the", "pos": "DT"}, {"word": "deficit", "pos": "NN"}],
    [{"word": ".", "pos": "."}],
    [{"word": "Rates", "pos": "NNS"}],
]
CHUNKS_Y = [["B-NP", "B-VP", "B-NP", "I-NP"], ["O"], ["B-NP"]]


def write(tmp_path, name, text, *, newline="\n", encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(text.replace("\n", newline).encode(encoding))
    return path


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_column_file(tmp_path, newline):
    path = write(tmp_path, "chunks.txt", CHUNKS, newline=newline)
    X, y = read_conll(path)
    assert X == CHUNKS_X
    assert y == CHUNKS_Y
    # str path, binary and text file objects, gzip: all the same.
    assert read_conll(str(path)) == (X, y)
    with open(path, "rb") as f:
        assert read_conll(f) == (X, y)
    with open(path, encoding="utf-8", newline="") as f:
        assert read_conll(f) == (X, y)
    assert read_conll(io.StringIO(CHUNKS.replace("\n", newline))) == (X, y)
    gz = tmp_path / "chunks.txt.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert read_conll(gz) == (X, y)


def test_label_column_anywhere_and_no_label(tmp_path):
    path = write(tmp_path, "chunks.txt", CHUNKS)
    X, y = read_conll(path, label="pos")
    assert X[0][:2] == [{"word": "He", "chunk": "B-NP"}, {"word": "reckons", "chunk": "B-VP"}]
    assert y[0] == ["PRP", "VBZ", "DT", "NN"]
    X, y = read_conll(path, columns=("form", "tag", "iob"), label="form")
    assert y[2] == ["Rates"] and X[2] == [{"tag": "NNS", "iob": "B-NP"}]
    X = read_conll(path, label=None)
    assert len(X) == 3
    assert X[0][0] == {"word": "He", "pos": "PRP", "chunk": "B-NP"}
    assert [[t["chunk"] for t in s] for s in X] == CHUNKS_Y
    # Four columns, CoNLL-2003 style.
    text = "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\n"
    X, y = read_conll(io.StringIO(text), columns=("word", "pos", "chunk", "ner"), label="ner")
    assert X == [[{"word": "EU", "pos": "NNP", "chunk": "B-NP"},
                  {"word": "rejects", "pos": "VBZ", "chunk": "B-VP"}]]
    assert y == [["B-ORG", "O"]]


def test_empty_and_blank_files(tmp_path):
    assert read_conll(write(tmp_path, "empty.txt", "")) == ([], [])
    assert read_conll(write(tmp_path, "blank.txt", "\n\n  \n-DOCSTART- -X- O\n\n")) == ([], [])


def test_wrong_number_of_fields_names_file_and_line(tmp_path):
    text = "He PRP B-NP\nreckons VBZ B-VP\n\nthe DT\n"
    path = write(tmp_path, "bad.txt", text)
    with pytest.raises(ValueError, match=r"bad\.txt, line 4: expected 3 whitespace-separated "
                                         r"columns \('word', 'pos', 'chunk'\), found 2: 'the DT'"):
        read_conll(path)
    with pytest.raises(ValueError, match=r"line 2: .*found 4"):
        read_conll(write(tmp_path, "bad2.txt", "a b c\r\nx y z w\r\n"))
    # The column count is checked on every line, also with fewer columns named.
    with pytest.raises(ValueError, match=r"line 1: expected 2 .* found 3"):
        read_conll(write(tmp_path, "ok.txt", "a b c\n"), columns=("word", "chunk"))


def test_non_ascii_tokens_and_encodings(tmp_path):
    # A no-break space inside a token is not a separator; tabs are.
    text = "Espa\u00f1a\u00a0Sur NP B-LOC\n\u00e9l\tPP O\n"
    X, y = read_conll(io.StringIO(text), columns=("word", "pos", "ner"), label="ner")
    assert [t["word"] for t in X[0]] == ["Espa\u00f1a\u00a0Sur", "\u00e9l"]
    assert y == [["B-LOC", "O"]]
    path = write(tmp_path, "esp.txt", "Espa\u00f1a NP B-LOC\n", encoding="latin-1")
    X, y = read_conll(path, columns=("word", "pos", "ner"), label="ner", encoding="latin-1")
    assert X[0][0]["word"] == "Espa\u00f1a"
    path = write(tmp_path, "esp2.txt", "a NP O\n\nb NP O\nEspa\u00f1a NP B-LOC\n",
                 encoding="latin-1")
    with pytest.raises(ValueError, match=r"esp2\.txt, line 4: not valid utf-8.*encoding="):
        read_conll(path, columns=("word", "pos", "ner"), label="ner")
    # A UTF-8 byte-order mark is not part of the first word.
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbfHe PRP B-NP\n")
    assert read_conll(path)[0] == [[{"word": "He", "pos": "PRP"}]]


def test_bad_arguments():
    f = io.StringIO("a b c\n")
    with pytest.raises(ValueError, match="columns contains 'pos' twice"):
        read_conll(f, columns=("word", "pos", "pos"), label="word")
    with pytest.raises(ValueError, match="label 'ner' is not one of columns"):
        read_conll(f, label="ner")
    with pytest.raises(ValueError, match="columns must be a tuple"):
        read_conll(f, columns="word pos chunk")
    with pytest.raises(ValueError, match="at least one column"):
        read_conll(f, columns=(), label=None)
    with pytest.raises(ValueError, match="non-empty strings"):
        read_conll(f, columns=("word", 3), label="word")
    with pytest.raises(ValueError, match="format must be"):
        read_conll(f, format="conll2000")


# Non-ASCII letters and Unicode spaces (no-break, ideographic, line
# separator) stay inside tokens: only ASCII whitespace separates columns.
tokens = st.text(st.sampled_from("aZ9-.,'\u00e9\u4e2d\u00a0\u3000\u2028\x85"),
                 min_size=1, max_size=6)
sentence = st.lists(st.tuples(tokens, tokens, tokens), min_size=1, max_size=5)


@given(st.lists(sentence, max_size=5), st.sampled_from([" ", "\t", "  ", " \t"]),
       st.sampled_from(["\n", "\r\n"]), st.integers(1, 3), st.booleans())
def test_round_trip(sentences, sep, newline, n_blank, final_newline):
    text = (newline * n_blank).join(
        "".join(sep.join(token) + newline for token in sent) for sent in sentences
    )
    if not final_newline:
        text = text.rstrip("\r\n")
    X, y = read_conll(io.StringIO(text))
    assert X == [[{"word": w, "pos": p} for w, p, _ in sent] for sent in sentences]
    assert y == [[c for _, _, c in sent] for sent in sentences]


# ---------------------------------------------------------------------------
# CoNLL-U
# ---------------------------------------------------------------------------

CONLLU = """\
# sent_id = s1
# text = I don't know
1\tI\tI\tPRON\tPRP\tCase=Nom|Number=Sing\t4\tnsubj\t4:nsubj\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\tVBP\tMood=Ind\t4\taux\t4:aux\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t4:advmod\t_
4\tknow\tknow\tVERB\tVB\tVerbForm=Inf\t0\troot\t0:root\t_
4.1\tknow\tknow\tVERB\tVB\t_\t_\t_\t4:conj\t_


# sent_id = s2
1\tYes\tyes\tINTJ\tUH\t_\t0\troot\t0:root\t_"""


def test_conllu_skips_ranges_and_empty_nodes(tmp_path):
    path = write(tmp_path, "tiny.conllu", CONLLU, newline="\r\n")
    X, y = read_conll(path, label="upos")  # format from the file name
    assert y == [["PRON", "AUX", "PART", "VERB"], ["INTJ"]]
    assert X[0][0] == {"word": "I", "lemma": "I", "xpos": "PRP", "feats": "Case=Nom|Number=Sing"}
    assert [t["word"] for t in X[0]] == ["I", "do", "n't", "know"]
    assert X[0][2]["feats"] == "_"
    X, y = read_conll(path, label="xpos", columns=("word", "upos", "xpos"))
    assert X[1] == [{"word": "Yes", "upos": "INTJ"}] and y[1] == ["UH"]
    X, y = read_conll(path, label="lemma", columns=("lemma", "word"))
    assert X[0][2] == {"word": "n't"} and y[0] == ["I", "do", "not", "know"]
    X = read_conll(path, label=None)
    assert X[1] == [{"word": "Yes", "lemma": "yes", "upos": "INTJ", "xpos": "UH", "feats": "_"}]
    # Explicit format for any name, file objects, gzip (name .conllu.gz).
    same = read_conll(io.StringIO(CONLLU), format="conllu", label="upos")
    assert same == read_conll(path, label="upos")
    gz = tmp_path / "tiny.conllu.gz"
    gz.write_bytes(gzip.compress(CONLLU.encode()))
    assert read_conll(gz, label="upos") == same
    txt = write(tmp_path, "tiny.txt", CONLLU)
    assert read_conll(txt, format="conllu", label="upos") == same


def test_conllu_bad_arguments_and_errors(tmp_path):
    path = write(tmp_path, "tiny.conllu", CONLLU)
    with pytest.raises(ValueError, match=r"label must be one of \('upos', 'xpos', 'lemma'\)"):
        read_conll(path)  # label defaults to "chunk"
    with pytest.raises(ValueError, match="label must be one of"):
        read_conll(path, label="word")
    with pytest.raises(ValueError, match=r"must be among \('word', 'lemma', 'upos', 'xpos', "
                                         r"'feats'\); got 'deprel'"):
        read_conll(path, label="upos", columns=("word", "deprel", "upos"))
    with pytest.raises(ValueError, match="label 'upos' is not one of columns"):
        read_conll(path, label="upos", columns=("word", "xpos"))
    bad = CONLLU.replace("2\tdo\tdo\tAUX", "2\tdo\tdo\tAUXX")
    with pytest.raises(ValueError, match=r"bad\.conllu, line 5: UPOS 'AUXX'"):
        read_conll(write(tmp_path, "bad.conllu", bad), label="upos")
    bad = CONLLU.replace("4\tknow\tknow\tVERB\tVB\tVerbForm=Inf\t0", "4\tknow\tknow\tVERB\tVB")
    with pytest.raises(ValueError, match=r"bad2\.conllu, line 7: expected 10 tab-separated"):
        read_conll(write(tmp_path, "bad2.conllu", bad), label="upos")


def test_conllu_on_the_bundled_ewt_sample():
    resource = importlib.resources.files("sksparse_struct.datasets") / "data"
    with (resource / "en_ewt-ud-test-sample.conllu.gz").open("rb") as f:
        X, y = read_conll(f, format="conllu", label="upos")
    words, tags = load_ewt_sample("test", return_X_y=True)
    assert [[t["word"] for t in s] for s in X] == words
    assert y == tags
    assert (len(X), sum(map(len, X))) == (100, 1182)


# ---------------------------------------------------------------------------
# CoNLL-2000 (shared data)
# ---------------------------------------------------------------------------


def test_conll2000_counts_and_speed(shared_data):
    directory = shared_data / "conll2000"
    start = time.perf_counter()
    X, y = read_conll(directory / "train.txt")
    seconds = time.perf_counter() - start
    assert (len(X), sum(map(len, X))) == (8936, 211727)
    assert [len(s) for s in X] == [len(s) for s in y]
    assert X[0][:2] == [{"word": "Confidence", "pos": "NN"}, {"word": "in", "pos": "IN"}]
    assert y[0][:3] == ["B-NP", "B-PP", "B-NP"]
    assert len({label for labels in y for label in labels}) == 22
    # A few hundred ms on a quiet machine; generous for a loaded CI box.
    assert seconds < 5.0
    X, y = read_conll(directory / "test.txt")
    assert (len(X), sum(map(len, X))) == (2012, 47377)
    assert X[-1][-1] == {"word": ".", "pos": "."} and y[-1][-1] == "O"


# ---------------------------------------------------------------------------
# The two parsing paths
# ---------------------------------------------------------------------------


def test_other_spaces_are_all_non_ascii_whitespace_of_str_split():
    from sksparse_struct.datasets._conll import _OTHER_SPACES

    expected = {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}
    assert set(_OTHER_SPACES) == expected - set(" \t\n\r\f\v")


@pytest.mark.parametrize(
    "text, expected",
    [
        # A document marker inside a sentence ends it (both paths).
        ("a b c\n-DOCSTART- -X- O\nd e f\n", [["a"], ["d"]]),
        ("a b c\n  -DOCSTART-\r\nd e f", [["a"], ["d"]]),
        # Only a first field equal to -DOCSTART- marks a document.
        ("x-DOCSTART- b c\nd -DOCSTART- f\n", [["x-DOCSTART-", "d"]]),
        ("\n \n\t\na b c\n \t \nd e f\n\n\n", [["a"], ["d"]]),
        ("a\x0bb\x0cc\n", [["a"]]),
    ],
)
def test_fast_and_line_paths_agree(text, expected):
    from sksparse_struct.datasets._conll import (
        _fields_per_line,
        _parse_columns_fast,
        _parse_columns_lines,
    )

    columns = ("word", "pos", "chunk")
    assert _fields_per_line(text).tolist() == [len(line.split()) for line in text.split("\n")]
    fast = _parse_columns_fast(text, columns, "chunk")
    assert fast == _parse_columns_lines(text, "<t>", columns, "chunk", str.split)
    assert [[t["word"] for t in s] for s in fast[0]] == expected


@given(st.lists(st.lists(st.lists(st.sampled_from(["a", "B-NP", "x.y", "-DOCSTART-", "é"]),
                                  min_size=1, max_size=4), max_size=4), max_size=4),
       st.sampled_from([" ", "\t", " \t "]), st.sampled_from(["\n", "\r\n", " \n"]),
       st.integers(1, 2), st.sampled_from([1, 2, 3]), st.sampled_from([None, 0, -1]))
def test_fast_path_equals_line_path(sentences, sep, newline, n_blank, n_columns, label_at):
    # Random files, well formed or not: where the fast path applies it gives
    # what the line-by-line reader gives; otherwise the reader reports a line.
    from sksparse_struct.datasets._conll import (
        _fields_per_line,
        _parse_columns_fast,
        _parse_columns_lines,
    )

    columns = ("c1", "c2", "c3")[:n_columns]
    label = None if label_at is None else columns[label_at]
    text = (newline * n_blank).join(
        "".join(sep.join(line) + newline for line in sent) for sent in sentences)
    assert _fields_per_line(text).tolist() == [len(line.split()) for line in text.split("\n")]
    try:
        expected = _parse_columns_lines(text, "<t>", columns, label, str.split)
    except ValueError:
        expected = None
    if expected is None:
        with pytest.raises(ValueError, match=r"<file object>, line \d+: expected"):
            read_conll(io.StringIO(text), columns=columns, label=label)
        return
    got = read_conll(io.StringIO(text), columns=columns, label=label)
    assert got == (expected[0] if label is None else expected)
    assert _parse_columns_fast(text, columns, label) == expected


def test_conll2000_fast_path_equals_line_path(shared_data):
    from sksparse_struct.datasets._conll import _parse_columns_lines

    path = shared_data / "conll2000" / "test.txt"
    text = path.read_text()
    columns = ("word", "pos", "chunk")
    assert read_conll(path) == _parse_columns_lines(text, "t", columns, "chunk", str.split)
