"""Plain text in: tokenize_text, read_text and predict_file(format="text").

The estimators are small stand-ins (no fitting, no compiling): what is
tested is the reading, cutting, numbering and writing of the text, which
must not depend on the chunk size or the number of workers.
"""

import gzip
import io
import random

import numpy as np
import pytest
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.pipeline import Pipeline

from sksparse_struct.datasets import (
    predict_file,
    read_conllu,
    read_text,
    tokenize_text,
    write_conllu,
)
from sksparse_struct.datasets._conllu import parse_treebank


class RuleTagger:
    """UPOS by a rule: PUNCT for punctuation, NUM for digits, else NOUN."""

    def predict(self, X):
        return [[_tag(token["word"]) for token in sentence] for sentence in X]


def _tag(form):
    return "NUM" if form[0].isdigit() else "NOUN" if form[0].isalnum() else "PUNCT"


class ChainParser:
    """Each word the head of the next; its relation label says its tags."""

    def predict(self, X, return_deprel=False):
        heads = [np.arange(len(s), dtype=np.int64) for s in X]
        if not return_deprel:
            return heads
        return heads, [[f"{t['upos'].lower()}:{t['xpos'].lower()}" for t in s] for s in X]


class ChainParserWithRelations(ChainParser):
    classes_ = np.array(["x"])  # predict_file asks for relations when classes_ is set


class Tags(TransformerMixin, BaseEstimator):
    """A stand-in for ColumnTagger: sets UPOS, XPOS and FEATS, counts the words it saw."""

    def fit(self, X, y=None):
        return self

    def __sklearn_is_fitted__(self):
        return True

    def transform(self, X):
        self.seen_ = getattr(self, "seen_", 0) + sum(len(s) for s in X)
        return [[{**t, "upos": _tag(t["form"]), "xpos": "X" + _tag(t["form"])[:2],
                  "feats": {"Len": str(min(len(t["form"]), 9))}} for t in s] for s in X]


def random_text(n_lines, seed=0):
    """English-looking text: sentences, blank lines, clitics, numbers, CRLF and trailing blanks."""
    rng = random.Random(seed)
    words = ["I", "don't", "know", "Mr.", "Smith", "it's", "3.5", "miles", "e-mail",
             "well-known", "U.S.", "caf\xe9", "(", ")", "\"", "ok", "\u201cyes\u201d", ",",
             "http://x.org/a", ":)"]
    lines = []
    for _ in range(n_lines):
        kind = rng.random()
        if kind < 0.15:
            lines.append(rng.choice(["", "  ", "\t"]))
            continue
        sentences = []
        for _ in range(rng.randint(1, 3)):
            sentence = " ".join(rng.choice(words) for _ in range(rng.randint(1, 8)))
            sentences.append(sentence + rng.choice([".", "!", "?", "...", ""]))
        lines.append(rng.choice([" ", "  "]).join(sentences) + rng.choice(["", " ", "\r"]))
    return "\n".join(lines) + rng.choice(["", "\n", "\n\n"])


def blocks(conllu):
    """The sentences of a CoNLL-U text: comments and word lines."""
    return [b.split("\n") for b in conllu.strip("\n").split("\n\n")]


def test_tokenize_text():
    assert tokenize_text("Mr. Li didn't pay $3.50. Why?") == [
        ["Mr.", "Li", "did", "n't", "pay", "$", "3.50", "."], ["Why", "?"]]
    sentences, offsets = tokenize_text("  I'm\there.\n", return_offsets=True)
    assert sentences == [["I", "'m", "here", "."]]
    assert offsets == [[(2, 3), (3, 5), (6, 10), (10, 11)]]
    assert tokenize_text("") == [] and tokenize_text(" \n\n ") == []
    with pytest.raises(TypeError, match="text must be a str, got bytes"):
        tokenize_text(b"text")


def test_read_text(tmp_path):
    text = "I don't know.  It's fine!\nA line\n\n\nNew paragraph... and more. Caf\xe9 \u2014 ok"
    X, metadata, multiword = read_text(io.StringIO(text), return_multiword=True)
    assert [[t["form"] for t in s] for s in X] == [
        ["I", "do", "n't", "know", "."], ["It", "'s", "fine", "!"], ["A", "line"],
        ["New", "paragraph", "...", "and", "more", "."], ["Caf\xe9", "\u2014", "ok"]]
    assert X[0][0] == {"form": "I", "lemma": "_", "upos": "_", "xpos": "_", "feats": "_"}
    assert metadata == [
        {"sent_id": "1", "newpar": None, "text": "I don't know."},
        {"sent_id": "2", "text": "It's fine!"},
        {"sent_id": "3", "text": "A line"},
        {"sent_id": "4", "newpar": None, "text": "New paragraph... and more."},
        {"sent_id": "5", "text": "Caf\xe9 \u2014 ok"}]
    assert multiword == [[(2, 3, "don't")], [(1, 2, "It's")], [], [], []]
    # paths, binary and gzip files, other encodings give the same
    path = tmp_path / "in.txt.gz"
    path.write_bytes(gzip.compress(text.replace("\u2014", "-").encode("latin-1")))
    X2, metadata2 = read_text(path, encoding="latin-1")
    assert len(X2) == 5 and metadata2[0] == metadata[0]
    assert read_text(io.BytesIO(text.encode("utf-8"))) == (X, metadata)
    # the sentences write as CoNLL-U and read back
    heads = [np.arange(len(s)) for s in X]
    out = write_conllu(io.StringIO(), X, heads, comments=metadata, multiword=multiword)
    X3, _, metadata3 = read_conllu(io.StringIO(out.getvalue()), return_metadata=True)
    assert X3 == X and metadata3 == metadata
    assert read_text(io.StringIO("")) == ([], [])


def test_predict_text_writes_conllu(tmp_path):
    text = "I don't know what Mr. Smith said.  It's 3.5 miles!\nNew line\n\n\nMore... and more."
    out = predict_file(RuleTagger(), io.StringIO(text), io.StringIO(), label="upos",
                       format="text").getvalue()
    assert out == (
        "# sent_id = 1\n# newpar\n# text = I don't know what Mr. Smith said.\n"
        "1\tI\t_\tNOUN\t_\t_\t_\t_\t_\t_\n"
        "2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "2\tdo\t_\tNOUN\t_\t_\t_\t_\t_\t_\n"
        "3\tn't\t_\tNOUN\t_\t_\t_\t_\t_\t_\n"
        "4\tknow\t_\tNOUN\t_\t_\t_\t_\t_\t_\n"
        "5\twhat\t_\tNOUN\t_\t_\t_\t_\t_\t_\n"
        "6\tMr.\t_\tNOUN\t_\t_\t_\t_\t_\t_\n"
        "7\tSmith\t_\tNOUN\t_\t_\t_\t_\t_\t_\n"
        "8\tsaid\t_\tNOUN\t_\t_\t_\t_\t_\tSpaceAfter=No\n"
        "9\t.\t_\tPUNCT\t_\t_\t_\t_\t_\t_\n\n"
        "# sent_id = 2\n# text = It's 3.5 miles!\n"
        "1-2\tIt's\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "1\tIt\t_\tNOUN\t_\t_\t_\t_\t_\t_\n"
        "2\t's\t_\tPUNCT\t_\t_\t_\t_\t_\t_\n"
        "3\t3.5\t_\tNUM\t_\t_\t_\t_\t_\t_\n"
        "4\tmiles\t_\tNOUN\t_\t_\t_\t_\t_\tSpaceAfter=No\n"
        "5\t!\t_\tPUNCT\t_\t_\t_\t_\t_\t_\n\n"
        "# sent_id = 3\n# text = New line\n"
        "1\tNew\t_\tNOUN\t_\t_\t_\t_\t_\t_\n"
        "2\tline\t_\tNOUN\t_\t_\t_\t_\t_\t_\n\n"
        "# sent_id = 4\n# newpar\n# text = More... and more.\n"
        "1\tMore\t_\tNOUN\t_\t_\t_\t_\t_\tSpaceAfter=No\n"
        "2\t...\t_\tPUNCT\t_\t_\t_\t_\t_\t_\n"
        "3\tand\t_\tNOUN\t_\t_\t_\t_\t_\t_\n"
        "4\tmore\t_\tNOUN\t_\t_\t_\t_\t_\tSpaceAfter=No\n"
        "5\t.\t_\tPUNCT\t_\t_\t_\t_\t_\t_\n\n")
    # the tagger's output is CoNLL-U without trees, which a parser takes
    tokens, heads, *_ = parse_treebank(out, heads_required=False)
    assert [t["upos"] for t in tokens[1]] == ["NOUN", "PUNCT", "NUM", "NOUN", "PUNCT"]
    assert set(heads) == {-1}
    parsed = predict_file(ChainParserWithRelations(), io.StringIO(out), io.StringIO(),
                          label="head", format="conllu").getvalue()
    assert read_conllu(io.StringIO(parsed))[0][1][2]["upos"] == "NUM"


@pytest.mark.parametrize("seed", [0, 1])
def test_chunks_and_workers_give_the_same_output(tmp_path, seed):
    text = random_text(120, seed)
    path = tmp_path / "in.txt"
    path.write_bytes(text.encode("utf-8"))
    pipeline = Pipeline([("tags", Tags()), ("parser", ChainParserWithRelations())])
    reference = predict_file(pipeline, path, io.StringIO(), label="head",
                             chunk_size=10 ** 6).getvalue()
    for chunk_size, n_jobs in [(1, 1), (3, 1), (7, 2)]:
        out = predict_file(pipeline, path, tmp_path / "out.conllu", label="head",
                           chunk_size=chunk_size, n_jobs=n_jobs)
        assert out.read_text(encoding="utf-8") == reference
    # fully tagged and parsed, re-readable, numbered through the file
    X, heads, deprels, metadata, multiword = read_conllu(
        io.StringIO(reference), return_deprel=True, return_metadata=True, return_multiword=True)
    assert [m["sent_id"] for m in metadata] == [str(k) for k in range(1, len(X) + 1)]
    assert X == [[{"form": t["form"], "lemma": "_", "upos": _tag(t["form"]),
                   "xpos": "X" + _tag(t["form"])[:2], "feats": f"Len={min(len(t['form']), 9)}"}
                  for t in s] for s in X]
    assert deprels == [[f"{t['upos'].lower()}:{t['xpos'].lower()}" for t in s] for s in X]
    assert [h.tolist() for h in heads] == [list(range(len(s))) for s in X]
    # the words are those of read_text, and they spell out the text
    X_text, metadata_text, multiword_text = read_text(path, return_multiword=True)
    assert [[t["form"] for t in s] for s in X] == [[t["form"] for t in s] for s in X_text]
    assert metadata == metadata_text and multiword == multiword_text
    assert "".join(t["form"] for s in X for t in s) == "".join(text.split())
    # "# text" is the sentence as written, which the tokens and SpaceAfter rebuild
    for block, meta in zip(blocks(reference), metadata):
        rebuilt, skip = "", 0
        for line in block:
            if line.startswith("#"):
                continue
            cols = line.split("\t")
            if "-" in cols[0]:
                first, last = map(int, cols[0].split("-"))
                skip = last - first + 1
            elif skip:
                skip -= 1
                continue
            rebuilt += cols[1] + ("" if cols[9] == "SpaceAfter=No" else " ")
        assert rebuilt.rstrip(" ") == " ".join(meta["text"].split())
        assert meta["text"] in text


def test_the_tagger_needs_only_words(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("Hello world.\n", encoding="utf-8")
    # format="auto" reads a .txt file as plain text for a CoNLL-U label
    out = predict_file(RuleTagger(), path, io.StringIO(), label="upos").getvalue()
    assert out.startswith("# sent_id = 1\n# newpar\n# text = Hello world.\n1\tHello\t_\tNOUN")
    out = predict_file(RuleTagger(), path, io.StringIO(), label="xpos",
                       columns=("word", "xpos")).getvalue()
    assert "\n2\tworld\t_\t_\tNOUN\t" in out
    # a chunker reads POS, which plain text does not give
    for kwargs in [{"label": "chunk", "columns": ("word", "pos", "chunk")},
                   {"label": "upos", "columns": ("word", "lemma", "upos")}]:
        with pytest.raises(ValueError, match=r"format='text': plain text gives only the words"):
            predict_file(RuleTagger(), path, io.StringIO(), format="text", **kwargs)
    # a parser trained on tags needs a tagger before it
    parser = ChainParser()
    parser.token_fields_ = ("upos", "feats")
    with pytest.raises(ValueError, match=r"the parser was trained on words with upos, which "
                       "plain text does not give"):
        predict_file(parser, path, io.StringIO(), label="head", format="text")
    out = predict_file(Pipeline([("tags", Tags()), ("parser", parser)]), path, io.StringIO(),
                       label="head", format="text").getvalue()
    assert "\n1\tHello\t_\tNOUN\tXNO\tLen=5\t0\t_\t_\t_\n" in out
    parser.token_fields_ = ("feats",)
    predict_file(parser, path, io.StringIO(), label="head", format="text")


def test_bad_text(tmp_path):
    for content in (b"", b"  \n\n\t\n"):
        path = tmp_path / "empty.txt"
        path.write_bytes(content)
        with pytest.raises(ValueError, match=r"empty\.txt: no text to tag or parse \(the file "
                           r"is empty or holds only whitespace\)"):
            predict_file(RuleTagger(), path, tmp_path / "out.conllu", label="upos")
        assert not (tmp_path / "out.conllu").exists()
    path = tmp_path / "image.txt"
    path.write_bytes(b"ok\n" + bytes(range(128, 256)) * 4)
    with pytest.raises(ValueError, match=r"image\.txt, line 2: not valid utf-8"):
        predict_file(RuleTagger(), path, io.StringIO(), label="upos")
    path = tmp_path / "utf16.txt"
    path.write_bytes("Hello.\nIt is UTF-16.\n".encode("utf-16-le"))
    for n_jobs in (1, 2):
        with pytest.raises(ValueError, match=r"utf16\.txt, line 1: a NUL character: this is "
                           r"not utf-8 text \(a binary file, or text in another encoding such "
                           r"as UTF-16: pass encoding=\)"):
            predict_file(RuleTagger(), path, io.StringIO(), label="upos", n_jobs=n_jobs)
    assert "It is UTF-16" in predict_file(RuleTagger(), path, io.StringIO(), label="upos",
                                          encoding="utf-16-le").getvalue()


class SecondSentenceBad:
    """Good tags for the first sentence, a tag that is no UPOS for the others."""

    def predict(self, X):
        return [["NOUN" if k == 0 else "NOT"] * len(s) for k, s in enumerate(X)]


def test_predictions_that_cannot_be_written():
    with pytest.raises(ValueError, match=r"<file object>, line 2, word 1 of its sentence: the "
                       r"estimator predicted a UPOS that cannot be written: 'NOT' is not one "
                       r"of the 17 universal POS tags"):
        predict_file(SecondSentenceBad(), io.StringIO("Fine here.\nAnd here too.\n"),
                     io.StringIO(), label="upos", format="text")
