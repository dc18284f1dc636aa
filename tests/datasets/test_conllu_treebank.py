"""Tests for read_conllu / write_conllu (dependency treebanks in CoNLL-U)."""

import gzip
import io
import re
import time
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sksparse_struct.datasets import load_ewt_sample, read_conllu, write_conllu
from sksparse_struct.datasets._predict_file import _feats_text
from sksparse_struct.datasets._conllu import UPOS_TAGS, parse_conllu
from sksparse_struct.utils import first_bad_tree, tree_error

# Hand-written: a multiword token (2-3), an empty node (5.1), a bare comment,
# a comment with "=" in its value, and a second sentence with MISC.
DOC = """\
# newdoc id = d1
# sent_id = d1-1
# text = I don't know = fine
# newpar
1\tI\tI\tPRON\tPRP\tCase=Nom|Number=Sing\t4\tnsubj\t4:nsubj\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\tVBP\tMood=Ind\t4\taux\t4:aux\t_
3\tn't\tnot\tPART\tRB\t_\t4\tadvmod\t4:advmod\t_
4\tknow\tknow\tVERB\tVB\tVerbForm=Inf\t0\troot\t0:root\t_
5\t=\t=\tSYM\tSYM\t_\t6\tcc\t6:cc\t_
5.1\tknow\tknow\tVERB\tVB\t_\t_\t_\t4:conj\tCopyOf=4
6\tfine\tfine\tADJ\tJJ\tDegree=Pos\t4\tconj\t4:conj\t_

# sent_id = d1-2
# text = Yes.
1\tYes\tyes\tINTJ\tUH\t_\t0\troot\t0:root\tSpaceAfter=No
2\t.\t.\tPUNCT\t.\t_\t1\tpunct\t1:punct\t_

"""


def word_line(i, head, form="w", upos="NOUN", feats="_", deprel="dep"):
    return f"{i}\t{form}\t{form}\t{upos}\tNN\t{feats}\t{head}\t{deprel}\t_\t_"


def sentence_text(heads, sent_id="s1", **kwargs):
    lines = [f"# sent_id = {sent_id}"]
    lines += [word_line(i + 1, h, **kwargs) for i, h in enumerate(heads)]
    return "\n".join(lines) + "\n\n"


def read(text, **kwargs):
    return read_conllu(io.StringIO(text), **kwargs)


def is_tree(heads):
    """Independent reference: every word reaches the root within n steps."""
    n = len(heads)
    if any(h < 0 or h > n for h in heads):
        return False
    for start in range(1, n + 1):
        v, steps = start, 0
        while v != 0 and steps <= n:
            v, steps = heads[v - 1], steps + 1
        if v != 0:
            return False
    return True


# --------------------------------------------------------------------------
# Reading


def test_read_document():
    X, heads, deprels, metadata = read(DOC, return_deprel=True, return_metadata=True)
    assert len(X) == len(heads) == len(deprels) == len(metadata) == 2
    assert [t["form"] for t in X[0]] == ["I", "do", "n't", "know", "=", "fine"]
    assert X[0][0] == {"form": "I", "lemma": "I", "upos": "PRON", "xpos": "PRP",
                       "feats": "Case=Nom|Number=Sing"}
    assert X[1][1] == {"form": ".", "lemma": ".", "upos": "PUNCT", "xpos": ".",
                       "feats": "_"}
    assert all(h.dtype == np.int64 for h in heads)
    assert heads[0].tolist() == [4, 4, 4, 0, 6, 4]
    assert heads[1].tolist() == [0, 1]
    assert deprels == [["nsubj", "aux", "advmod", "root", "cc", "conj"], ["root", "punct"]]
    assert metadata[0] == {"newdoc id": "d1", "sent_id": "d1-1",
                           "text": "I don't know = fine", "newpar": None}
    assert list(metadata[0]) == ["newdoc id", "sent_id", "text", "newpar"]
    assert metadata[1] == {"sent_id": "d1-2", "text": "Yes."}


def test_multiword_tokens():
    X, heads, multiword = read(DOC, return_multiword=True)
    assert multiword == [[(2, 3, "don't")], []]
    *_, metadata, multiword = read(DOC, return_deprel=True, return_metadata=True,
                                   return_multiword=True)
    assert metadata[1]["sent_id"] == "d1-2" and multiword[0] == [(2, 3, "don't")]


@pytest.mark.parametrize("lines, message", [
    (["2-3\tab\t_\t_\t_\t_\t_\t_\t_\t_", "2\ta\ta\tX\t_\t_\t1\tdep\t_\t_",
      "3\tb\tb\tX\t_\t_\t1\tdep\t_\t_"], r"line 1: multiword range '2-3' is out of place: "
                                              r"it must come right before word 2 \(the next word "
                                              r"here is 1\)"),
    (["1-3\tabc\t_\t_\t_\t_\t_\t_\t_\t_", "1\ta\ta\tX\t_\t_\t0\troot\t_\t_",
      "2\tb\tb\tX\t_\t_\t1\tdep\t_\t_"], r"line 1: multiword range 1-3 goes past the last word"),
    (["1-2\tab\t_\t_\t_\t_\t_\t_\t_\t_", "1\ta\ta\tX\t_\t_\t0\troot\t_\t_",
      "2-3\tbc\t_\t_\t_\t_\t_\t_\t_\t_", "2\tb\tb\tX\t_\t_\t1\tdep\t_\t_",
      "3\tc\tc\tX\t_\t_\t1\tdep\t_\t_"], r"line 3: multiword range '2-3' is out of place"),
])
def test_misplaced_multiword_ranges(lines, message):
    with pytest.raises(ValueError, match=message):
        read("\n".join(lines) + "\n\n")


def test_return_forms():
    assert len(read(DOC)) == 2
    assert len(read(DOC, return_deprel=True)) == 3
    X, heads, metadata = read(DOC, return_metadata=True)
    assert metadata[1]["sent_id"] == "d1-2"
    with pytest.raises(ValueError, match="return_deprel must be True or False"):
        read(DOC, return_deprel="yes")


def test_heads_are_separate_arrays():
    _, heads = read(DOC)
    heads[0][0] = 0
    assert heads[1].tolist() == [0, 1]
    assert heads[0].base is None


def test_agrees_with_the_strict_sentence_parser():
    # parse_conllu (tested on its own in tests/test_conllu.py) is an
    # independent, line-by-line reader of the same files.
    for text in (DOC, "".join(sentence_text([2, 0, 2]) for _ in range(3))):
        X, heads, deprels, metadata = read(text, return_deprel=True, return_metadata=True)
        sentences = parse_conllu(text.splitlines())
        assert len(sentences) == len(X)
        for s, x, h, d, m in zip(sentences, X, heads, deprels, metadata):
            assert [t["form"] for t in s] == [t["form"] for t in x]
            assert [_feats_text(t["feats"]) for t in s] == [t["feats"] for t in x]
            assert [t["head"] for t in s] == h.tolist()
            assert [t["deprel"] for t in s] == d
            assert {k: v for k, v in m.items() if v is not None} == s.metadata


@pytest.mark.parametrize("kind", ["str", "path", "text", "binary", "gzip", "gzip-no-suffix"])
def test_path_kinds(tmp_path, kind):
    data = DOC.encode("utf-8")
    if kind == "text":
        source = io.StringIO(DOC)
    elif kind == "binary":
        source = io.BytesIO(data)
    else:
        name = {"gzip": "t.conllu.gz", "gzip-no-suffix": "t.conllu"}.get(kind, "t.conllu")
        path = tmp_path / name
        path.write_bytes(gzip.compress(data) if kind.startswith("gzip") else data)
        source = str(path) if kind == "str" else path
    X, heads = read_conllu(source)
    assert [len(x) for x in X] == [6, 2]
    assert heads[0].tolist() == [4, 4, 4, 0, 6, 4]


@pytest.mark.parametrize("variant", ["crlf", "bom", "no-final-newline", "many-blank-lines"])
def test_layout_variants(variant):
    text = {
        "crlf": DOC.replace("\n", "\r\n"),
        "bom": "\ufeff" + DOC,
        "no-final-newline": DOC.rstrip("\n"),
        "many-blank-lines": "\n\n" + DOC.replace("\n\n", "\n\n\n\n") + "\n\n",
    }[variant]
    X, heads, deprels, metadata = read(text, return_deprel=True, return_metadata=True)
    expected = read(DOC, return_deprel=True, return_metadata=True)
    assert X == expected[0]
    assert [h.tolist() for h in heads] == [h.tolist() for h in expected[1]]
    assert deprels == expected[2]
    assert metadata == expected[3]


def test_empty_file():
    assert read("") == ([], [])
    assert read("\n\n", return_deprel=True) == ([], [], [])


def test_long_sentence_and_large_head():
    # Beyond the table of common ID strings (1024) the reader parses them.
    n = 1500
    heads = [0] + [i for i in range(1, n)]  # a chain
    X, y = read(sentence_text(heads))
    assert len(X[0]) == n
    assert y[0].tolist() == heads


def test_several_roots_allowed_by_default():
    _, heads = read(sentence_text([0, 0, 2]))
    assert heads[0].tolist() == [0, 0, 2]


def test_sentence_with_only_empty_nodes_after_words():
    text = "1\ta\ta\tX\t_\t_\t0\troot\t_\t_\n1.1\tb\tb\tX\t_\t_\t_\t_\t0:root\t_\n\n"
    X, heads = read(text)
    assert heads[0].tolist() == [0]


# --------------------------------------------------------------------------
# Reading: errors name the file, the line and (for trees) the sentence


@pytest.mark.parametrize("bad_line, message", [
    ("x\tw\tw\tNOUN\tNN\t_\t1\tdep\t_\t_", r"line 5: ID 'x' is not a positive integer"),
    ("3\tw\tw\tNOUN\tNN\t_\t1\tdep\t_\t_",
     r"line 5: word ID 3 is out of sequence \(expected 2\)"),
    ("2\tw\tw\tNOUN\tNN\t_\ta\tdep\t_\t_", r"line 5: HEAD 'a' of word 2 is not a non-negative"),
    ("2\tw\tw\tNOUN\tNN\t_\t-1\tdep\t_\t_", r"line 5: HEAD '-1' of word 2"),
    ("2\tw\tw\tNOUN\tNN\t_\t+1\tdep\t_\t_", r"line 5: HEAD '\+1' of word 2"),
    ("2\tw\tw\tNOUN\tNN\t_\t1.5\tdep\t_\t_", r"line 5: HEAD '1.5' of word 2"),
    ("2\tw\tw\tNOUN\tNN\t_\t1\tdep\t_", r"line 5: expected 10 tab-separated columns, found 9"),
    ("2\tw\tw\tNOUN\tNN\t\t1\tdep\t_\t_", r"line 5: column FEATS is empty"),
    ("2\tw\tw\tNOUN\tNN\t_\t1\tdep\t_\t_\t",
     r"line 5: expected 10 tab-separated columns, found 11"),
    ("2\tw\tw\tNOUNS\tNN\t_\t1\tdep\t_\t_", r"line 5: UPOS 'NOUNS' of word 2"),
    ("2\tw\tw\tNOUN\tNN\tCase\t1\tdep\t_\t_", r"line 5: FEATS item 'Case' is not of the form"),
    ("2\tw\tw\tNOUN\tNN\tA=b|A=c\t1\tdep\t_\t_", r"line 5: feature 'A' is given twice"),
    ("2-1\tw\t_\t_\t_\t_\t_\t_\t_\t_", r"line 5: multiword range '2-1' is empty"),
    ("# late comment", r"line 5: comment line after the token lines"),
    ("2\tw\tw\tNOUN\tNN\t_\t01\tdep\t_\t_", r"line 5: HEAD '01' of word 2"),
    ("2\tw\tw\tNOUN\tNN\t_\t\u0661\tdep\t_\t_", r"line 5: HEAD '\u0661' of word 2"),
    ("2\tw\tw\tNOUN\tNN\t_\t7\tdep\t_\t_",
     r"line 5: sentence 2 \(sent_id s2\): HEAD 7 of word 2 is out of range"),
    ("2\tw\tw\tNOUN\tNN\t_\t2\tdep\t_\t_",
     r"line 5: sentence 2 \(sent_id s2\): word 2 is its own head"),
    # Beyond int64: out of range like any other head, not an OverflowError.
    ("2\tw\tw\tNOUN\tNN\t_\t9223372036854775808\tdep\t_\t_",
     r"line 5: HEAD 9223372036854775808 of word 2 is out of range: the sentence has 2 words"),
    ("2\tw\tw\tNOUN\tNN\t_\t" + "9" * 40 + "\tdep\t_\t_",
     r"line 5: HEAD 9{40} of word 2 is out of range"),
    # CoNLL-U allows spaces only in FORM, LEMMA and MISC.
    ("2\tw\tw\tNOUN\tNN\t_\t1\tadv mod\t_\t_",
     (r"line 5: DEPREL 'adv mod' of word 2 contains a space; CoNLL-U allows spaces only in "
      r"FORM, LEMMA and MISC")),
    ("2\tw\tw\tNOUN\tN N\t_\t1\tdep\t_\t_", r"line 5: XPOS 'N N' of word 2 contains a space"),
    ("2\tw\tw\tNOUN\tNN\t_\t1\tdep\t1:dep 2\t_", r"line 5: DEPS '1:dep 2' of word 2"),
])
def test_line_errors(bad_line, message):
    # Line 1: a good sentence; line 3: the comment of sentence 2, line 4 its
    # first word, line 5 the bad line.
    text = ("1\tok\tok\tNOUN\tNN\t_\t0\troot\t_\t_\n\n# sent_id = s2\n"
            "1\tw\tw\tNOUN\tNN\t_\t0\troot\t_\t_\n" + bad_line + "\n\n")
    with pytest.raises(ValueError, match=r"^<file object>, " + message):
        read(text)


def test_cycle_names_its_words_and_line():
    # Word 1 is the root; 2 -> 4 -> 3 -> 2 is a cycle. The line is that of
    # the cycle's smallest word (line 3: the comment is line 1).
    text = sentence_text([0, 4, 2, 3, 1], sent_id="c1")
    with pytest.raises(ValueError, match=r"^<file object>, line 3: sentence 1 \(sent_id c1\): "
                       r"words 2 -> 4 -> 3 -> 2 form a cycle"):
        read(text)


def test_no_root_is_reported_with_its_cycle():
    text = sentence_text([0]) + sentence_text([2, 3, 1], sent_id="nr")
    with pytest.raises(ValueError, match=r"line 5: sentence 2 \(sent_id nr\): no word is "
                       r"attached to the root \(HEAD 0\): words 1 -> 2 -> 3 -> 1 form a cycle"):
        read(text)


def test_single_root():
    text = sentence_text([0, 1, 0, 0], sent_id="r2")
    _, heads = read(text)  # the default accepts several roots
    assert heads[0].tolist() == [0, 1, 0, 0]
    with pytest.raises(ValueError, match=r"line 4: sentence 1 \(sent_id r2\): words 1, 3 and 4 "
                       r"are all attached to the root \(single_root=True\)"):
        read(text, single_root=True)
    with pytest.raises(ValueError, match=r"words 1 and 3 are both attached"):
        read(sentence_text([0, 1, 0]), single_root=True)
    _, heads = read(sentence_text([0, 1, 1]), single_root=True)
    assert heads[0].tolist() == [0, 1, 1]


def test_tree_error_in_a_sentence_with_multiword_tokens():
    # Sentences with ranges take the line-by-line path; same checks.
    text = DOC.replace("Degree=Pos\t4", "Degree=Pos\t5")  # word 6 -> 5 -> 6
    with pytest.raises(ValueError, match=r"line 10: sentence 1 \(sent_id d1-1\): "
                       r"words 5 -> 6 -> 5 form a cycle"):
        read(text)


def test_errors_name_the_file(tmp_path):
    path = tmp_path / "broken.conllu"
    path.write_text(sentence_text([0, 3, 2]))
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 3: sentence 1")):
        read_conllu(path)


@pytest.mark.parametrize("text, message", [
    ("# only a comment\n", r"line 1: comment lines are not followed by any token line"),
    ("# c\n\n1\tw\tw\tX\t_\t_\t0\troot\t_\t_\n\n", r"line 2: comment lines are not followed"),
    ("1-2\tab\t_\t_\t_\t_\t_\t_\t_\t_\n\n", r"sentence has no word lines"),
    (" \n", r"line 1: expected 10 tab-separated columns, found 1"),
])
def test_structure_errors(text, message):
    with pytest.raises(ValueError, match=message):
        read(text)


def test_spaces_in_form_lemma_and_misc_are_fine():
    text = "1\tNew York\tNew York\tPROPN\tNNP\t_\t0\troot\t_\tGloss=New York\n\n"
    X, heads, deprels = read(text, return_deprel=True)
    assert X[0][0]["form"] == X[0][0]["lemma"] == "New York"
    assert deprels == [["root"]]


@pytest.mark.parametrize("reader", ["read_conllu", "read_conll"])
def test_broken_gzip_files_name_the_file_and_line(tmp_path, reader):
    from sksparse_struct.datasets import read_conll

    from ..test_conllu import broken_gzip_files

    def read_file(path):
        if reader == "read_conll":
            return read_conll(path, label="upos", format="conllu")
        return read_conllu(path)

    text = "".join(sentence_text([0, 1, 1], sent_id=f"s{k}") for k in range(2000))
    for path, problem, n_lines in broken_gzip_files(tmp_path, text):
        with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: not a readable gzip "
                           rf"file: {problem}.*, after line {n_lines} of the decompressed"):
            read_file(path)
        # A file object: named as well as it can be.
        with open(path, "rb") as f, pytest.raises(ValueError, match=re.escape(str(path))):
            read_file(f)
    with pytest.raises(ValueError, match=r"^<file object>: not a readable gzip file"):
        read_file(io.BytesIO(gzip.compress(text.encode())[:100]))


def test_not_utf8():
    data = sentence_text([0]).replace("\tw\t", "\tw\xe9\t", 1).encode("latin-1")
    with pytest.raises(ValueError, match=r"line 2: not valid utf-8"):
        read_conllu(io.BytesIO(data))
    X, _ = read_conllu(io.BytesIO(data), encoding="latin-1")
    assert X[0][0]["form"] == "w\xe9"


# --------------------------------------------------------------------------
# Trees: tree_error and the vectorised first_bad_tree against a brute force


head_lists = st.integers(1, 7).flatmap(
    lambda n: st.lists(st.integers(-1, n + 1), min_size=n, max_size=n))


@given(st.lists(head_lists, min_size=1, max_size=6), st.booleans())
def test_tree_checks_against_brute_force(sentences, single_root):
    def ok(heads):
        return is_tree(heads) and (not single_root or heads.count(0) == 1)

    for heads in sentences:
        assert (tree_error(heads, single_root) is None) == ok(heads)
    lengths = np.array([len(h) for h in sentences], dtype=np.int64)
    flat = np.array([h for s in sentences for h in s], dtype=np.int64)
    expected = next((i for i, h in enumerate(sentences) if not ok(h)), None)
    assert first_bad_tree(flat, lengths, single_root) == expected


def test_first_bad_tree_long_chain():
    # Pointer doubling must follow a 1000-word chain all the way up.
    n = 1000
    chain = np.arange(n, dtype=np.int64)  # word i + 1 -> i, word 1 -> root
    assert first_bad_tree(chain, np.array([n]), True) is None
    cyclic = chain.copy()
    cyclic[0] = n  # word 1 -> word n: everything is on one cycle
    assert first_bad_tree(cyclic, np.array([n]), False) == 0
    chain_and_cycle = np.concatenate([chain, [0, 3, 2]])
    assert first_bad_tree(chain_and_cycle, np.array([n, 3]), False) == 1


# --------------------------------------------------------------------------
# Writing


def test_write_exact_text():
    X = [[{"form": "Dogs", "lemma": "dog", "upos": "NOUN", "xpos": "NNS",
           "feats": "Number=Plur"}, {"form": "bark", "misc": "SpaceAfter=No"}],
         [{"form": "Hi"}]]
    out = write_conllu(io.StringIO(), X, [np.array([2, 0]), [0]], [["nsubj", "root"], ["root"]])
    assert out.getvalue() == (
        "# sent_id = 1\n# text = Dogs bark\n"
        "1\tDogs\tdog\tNOUN\tNNS\tNumber=Plur\t2\tnsubj\t_\t_\n"
        "2\tbark\t_\t_\t_\t_\t0\troot\t_\tSpaceAfter=No\n\n"
        "# sent_id = 2\n# text = Hi\n"
        "1\tHi\t_\t_\t_\t_\t0\troot\t_\t_\n\n"
    )


def test_write_without_deprels_and_with_comments():
    X = [[{"form": "a"}, {"form": "b"}], [{"form": "c"}]]
    comments = [{"sent_id": "x-1", "newpar": None}, ["# plain", "no hash"]]
    text = write_conllu(io.StringIO(), X, [[0, 1], [0]], comments=comments).getvalue()
    assert text == ("# sent_id = x-1\n# newpar\n1\ta\t_\t_\t_\t_\t0\t_\t_\t_\n"
                    "2\tb\t_\t_\t_\t_\t1\t_\t_\t_\n\n"
                    "# plain\n# no hash\n1\tc\t_\t_\t_\t_\t0\t_\t_\t_\n\n")
    X2, heads, deprels, metadata = read(text, return_deprel=True, return_metadata=True)
    assert deprels == [["_", "_"], ["_"]]
    assert metadata == [{"sent_id": "x-1", "newpar": None}, {"plain": None, "no hash": None}]


def test_write_files(tmp_path):
    X, heads, deprels = read(DOC, return_deprel=True)
    plain = tmp_path / "out.conllu"
    assert write_conllu(plain, X, heads, deprels) == plain
    packed = tmp_path / "out.conllu.gz"
    write_conllu(str(packed), X, heads, deprels)
    assert gzip.decompress(packed.read_bytes()) == plain.read_bytes()
    binary = io.BytesIO()
    write_conllu(binary, X, heads, deprels)
    assert binary.getvalue() == plain.read_bytes()
    for path in (plain, packed):
        X2, heads2, deprels2 = read_conllu(path, return_deprel=True)
        assert X2 == X and deprels2 == deprels
        assert [h.tolist() for h in heads2] == [h.tolist() for h in heads]


def test_round_trip_document():
    X, heads, deprels, metadata, multiword = read(
        DOC, return_deprel=True, return_metadata=True, return_multiword=True)
    text = write_conllu(io.StringIO(), X, heads, deprels, comments=metadata,
                        multiword=multiword).getvalue()
    assert "\n2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n2\tdo\t" in text
    default = write_conllu(io.StringIO(), X, heads, multiword=multiword).getvalue()
    assert default.startswith("# sent_id = 1\n# text = I don't know = fine\n1\tI\t")
    again = read(text, return_deprel=True, return_metadata=True, return_multiword=True)
    assert again[0] == X and again[2] == deprels and again[3] == metadata
    assert again[4] == multiword
    assert [h.tolist() for h in again[1]] == [h.tolist() for h in heads]
    # Writing what was read back gives the same text.
    assert write_conllu(io.StringIO(), *again[:3], comments=again[3],
                        multiword=again[4]).getvalue() == text


forms = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")),
                min_size=1, max_size=6).filter(lambda s: not s.isspace() and s.strip() == s)
fields = st.text(alphabet="abcXYZ_:-.", min_size=1, max_size=5)


@st.composite
def treebanks(draw):
    n_sent = draw(st.integers(1, 4))
    X, heads, deprels = [], [], []
    for _ in range(n_sent):
        n = draw(st.integers(1, 8))
        # A random tree: words visited in a random order, each attached to
        # the root or to a word visited before it.
        order = draw(st.permutations(range(1, n + 1)))
        h = [0] * n
        for k, word in enumerate(order):
            h[word - 1] = 0 if k == 0 else draw(st.sampled_from([0] + list(order[:k])))
        heads.append(np.array(h))
        X.append([{"form": draw(forms), "lemma": draw(forms),
                   "upos": draw(st.sampled_from(UPOS_TAGS + ("_",))), "xpos": draw(fields),
                   "feats": draw(st.sampled_from(["_", "Case=Nom", "Number=Sing|Person=3"]))}
                  for _ in range(n)])
        deprels.append([draw(fields) for _ in range(n)])
    return X, heads, deprels


@given(treebanks())
def test_round_trip_property(treebank):
    X, heads, deprels = treebank
    text = write_conllu(io.StringIO(), X, heads, deprels).getvalue()
    X2, heads2, deprels2 = read(text, return_deprel=True)
    assert X2 == X and deprels2 == deprels
    assert [h.tolist() for h in heads2] == [h.tolist() for h in heads]


@pytest.mark.parametrize("change, message", [
    (dict(heads=[[2, 0], [0, 1]]), r"heads\[1\] \(sentence 2\) must be a vector of 1 heads"),
    (dict(heads=[[2, 0], [0], [0]]), r"heads has 3 entries but X has 2 sentences"),
    (dict(heads=[[2.0, 0.0], [0]]), r"heads\[0\] \(sentence 1\) must hold integer head indices"),
    (dict(heads=[["2", "0"], [0]]), r"heads\[0\] \(sentence 1\) must hold integer head indices"),
    (dict(heads=[[2, 1], [0]]), r"sentence 1: heads\[0\] is not a tree: no word is attached"),
    (dict(heads=[[2, 0], [2]]), r"sentence 2: heads\[1\] is not a tree: HEAD 2 of word 1 is "
                                r"out of range"),
    (dict(heads=[[-1, 0], [0]]), r"sentence 1: heads\[0\] is not a tree: HEAD -1 of word 1"),
    (dict(heads=[[0, 0], [0]], single_root=True), r"sentence 1: .*words 1 and 2 are both"),
    (dict(deprels=[["a"], ["b"]]), r"deprels\[0\] \(sentence 1\) must hold one label per word"),
    (dict(deprels=[["a", "b"]]), r"deprels has 1 entries but X has 2"),
    (dict(deprels=[["a", "b\tc"], ["d"]]), r"sentence 1, word 2: deprel contains a tab"),
    (dict(deprels=[["a", ""], ["d"]]), r"sentence 1, word 2: deprel is empty"),
    (dict(comments=[{"sent_id": "a\nb"}, {}]), r"comments\[0\]: comment .* contains a line break"),
    (dict(comments=["# one", "# two"]), r"comments\[0\] must be a dict .* or a list"),
    (dict(X=[[{"form": "a"}, {"form": "b"}], []], heads=[[2, 0], []]),
     r"sentence 2 has no words"),
    (dict(X=[[{"form": "a\tb"}, {"form": "b"}], [{"form": "c"}]]),
     r"sentence 1, word 1: 'form' contains a tab"),
    (dict(X=[[{"form": " "}, {"form": "b"}], [{"form": "c"}]]),
     r"sentence 1, word 1: 'form' is empty"),
    (dict(X=[[{"form": "a"}, {"form": None}], [{"form": "c"}]]),
     r"sentence 1, word 2: 'form' must be a str; got NoneType"),
    (dict(X=[[{"form": "a"}, {"form": "b"}], [{"form": "c", "upos": "N"}]]),
     r"sentence 2, word 1: upos 'N' is not one of the 17"),
    (dict(X=[[{"form": "a"}, {"form": "b", "feats": "Case"}], [{"form": "c"}]]),
     r"sentence 1, word 2: FEATS item 'Case' is not of the form"),
    (dict(X=[[{"form": "a"}, "b"], [{"form": "c"}]]),
     r"sentence 1, word 2: a token must be a dict"),
    (dict(X="ab"), r"X must be a list with one entry per sentence"),
    (dict(multiword=[[(1, 2, "ab")]]), r"multiword has 1 entries but X has 2"),
    (dict(multiword=[[(1, 3, "ab")], []]), r"multiword\[0\] \(sentence 1\): token 1-3 must span"),
    (dict(multiword=[[(1, 1, "a")], []]), r"multiword\[0\] \(sentence 1\): token 1-1 must span"),
    (dict(multiword=[[(1, 2, "a\tb")], []]), r"form of 1-2 contains a tab"),
    (dict(multiword=[[(1.0, 2, "ab")], []]), r"is not a \(first, last, form\) tuple"),
    (dict(multiword=[[], [(1, 2, "cd")]]), r"multiword\[1\] \(sentence 2\): token 1-2 must span"),
    # CoNLL-U allows spaces only in FORM, LEMMA and MISC.
    (dict(deprels=[["a", "b c"], ["d"]]),
     (r"sentence 1, word 2: deprel contains a space: 'b c'; CoNLL-U allows spaces only in "
      r"FORM, LEMMA and MISC")),
    (dict(deprels=[["a", "b"], ["d\u2009e"]]), r"sentence 2, word 1: deprel contains a space"),
    (dict(X=[[{"form": "a"}, {"form": "b", "xpos": "N N"}], [{"form": "c"}]]),
     r"sentence 1, word 2: 'xpos' contains a space: 'N N'"),
    # Heads beyond int64 are out of range, not wrapped around or an OverflowError.
    (dict(heads=[[2, 0], np.array([2**63], dtype=np.uint64)]),
     (r"sentence 2: heads\[1\] is not a tree: HEAD 9223372036854775808 of word 1 is out of "
      r"range: the sentence has 1 words")),
    (dict(heads=[[2, 0], [2**63]]),
     r"sentence 2: heads\[1\] is not a tree: HEAD 9223372036854775808 of word 1 is out"),
    (dict(heads=[[2**70, 0], [0]]),
     rf"sentence 1: heads\[0\] is not a tree: HEAD {2**70} of word 1 is out of range"),
    # Text that UTF-8 cannot encode (lone surrogates, from surrogateescape).
    (dict(X=[[{"form": "a"}, {"form": "b\udce9"}], [{"form": "c"}]]),
     (r"sentence 1, word 2: 'form' cannot be written as UTF-8: 'b\\udce9' holds the lone "
      r"surrogate U\+DCE9")),
    (dict(deprels=[["a", "b"], ["\ud800"]]), r"sentence 2, word 1: deprel cannot be written"),
    (dict(comments=[{"text": "\udce9"}, {}]), r"comments\[0\]: comment cannot be written"),
    (dict(multiword=[[(1, 2, "a\udce9")], []]), r"form of 1-2 cannot be written as UTF-8"),
    (dict(X=[[{"form": "a"}, {"form": "b", "feats": {"Case": 1}}], [{"form": "c"}]]),
     r"sentence 1, word 2: a FEATS dict must map str names to str values; got 'Case': 1"),
    (dict(X=[[{"form": "a"}, {"form": "b", "feats": {"Case": "N m"}}], [{"form": "c"}]]),
     r"sentence 1, word 2: FEATS item 'Case=N m' is not of the form"),
])
def test_write_errors(change, message):
    kwargs = dict(X=[[{"form": "a"}, {"form": "b"}], [{"form": "c"}]],
                  heads=[[2, 0], [0]], deprels=None)
    kwargs.update(change)
    with pytest.raises(ValueError, match=message):
        write_conllu(io.StringIO(), **kwargs)


@pytest.mark.parametrize("kind", ["path", "binary", "text"])
def test_write_errors_leave_no_partial_output(tmp_path, kind):
    # A bad field anywhere is found before anything is written.
    X = [[{"form": "a"}], [{"form": "b\udce9"}]]
    path = tmp_path / "out.conllu"
    with pytest.raises(ValueError, match=r"sentence 2, word 1: 'form' cannot be written"):
        if kind == "path":
            write_conllu(path, X, [[0], [0]])
        else:
            with open(path, "wb" if kind == "binary" else "w", encoding=None
                      if kind == "binary" else "utf-8") as f:
                write_conllu(f, X, [[0], [0]])
    assert not path.exists() or path.read_bytes() == b""


def test_write_to_a_text_file_in_another_encoding(tmp_path):
    path = tmp_path / "latin1.conllu"
    X = [[{"form": "caf\xe9"}, {"form": "x", "lemma": "\u65e5\u672c"}]]
    multiword = [[(1, 2, "caf\xe9x")]]
    with open(path, "w", encoding="latin-1") as f:
        with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: sentence 1, word 2: "
                           r"LEMMA '\u65e5\u672c' holds '\u65e5', which the file's encoding "
                           r"'latin-1' cannot encode; open the file with encoding='utf-8'"):
            write_conllu(f, X, [[0, 1]], multiword=multiword)
        # What latin-1 can encode is written (CoNLL-U readers expect UTF-8, though).
        write_conllu(f, [[{"form": "caf\xe9"}]], [[0]])
    assert read_conllu(path, encoding="latin-1")[0] == [[
        {"form": "caf\xe9", "lemma": "_", "upos": "_", "xpos": "_", "feats": "_"}]]
    with open(path, "w", encoding="ascii") as f:
        with pytest.raises(ValueError, match=r"sentence 1, multiword token 1-2: FORM "
                           r"'caf\xe9x' holds '\xe9'"):
            write_conllu(f, [[{"form": "a"}, {"form": "b"}]], [[0, 1]], multiword=multiword,
                         comments=[[]])
        with pytest.raises(ValueError, match=r"sentence 1: comment '# text = caf\xe9' holds"):
            write_conllu(f, [[{"form": "caf\xe9"}]], [[0]], comments=[{"text": "caf\xe9"}])


def test_write_accepts_integer_dtypes():
    X = [[{"form": "a"}, {"form": "b"}]]
    for heads in ([[2, 0]], [np.array([2, 0], dtype=np.int32)], [np.array([2, 0], np.uint8)]):
        text = write_conllu(io.StringIO(), X, heads).getvalue()
        assert read(text)[1][0].tolist() == [2, 0]


# --------------------------------------------------------------------------
# The files the official evaluation script reads


def check_like_the_ud_scorer(text, single_root=True):
    """What conll18_ud_eval.py's reader requires, written out independently.

    A blank line ends every sentence (the file too); token lines have 10
    tab-separated columns; word IDs run 1..n; HEADs are integers in 0..n
    and form a tree; with single_root exactly one word per sentence is
    attached to the root; FORM is not empty once spaces are removed.
    """
    assert text.endswith("\n\n")
    for block in text[:-2].split("\n\n"):
        lines = [line.split("\t") for line in block.split("\n") if not line.startswith("#")]
        assert all(len(cols) == 10 for cols in lines)
        words = []
        for k, cols in enumerate(lines):
            if "-" in cols[0]:
                # A multiword token: the scorer takes the next last-first+1
                # lines as its words.
                first, last = map(int, cols[0].split("-"))
                assert [c[0] for c in lines[k + 1:k + 2 + last - first]] == [
                    str(i) for i in range(first, last + 1)]
                assert cols[1].strip()
            else:
                words.append(cols)
        assert [int(cols[0]) for cols in words] == list(range(1, len(words) + 1))
        heads = [int(cols[6]) for cols in words]
        assert is_tree(heads)
        assert not single_root or heads.count(0) == 1
        for cols in words:
            assert "".join(c for c in cols[1] if unicodedata.category(c) != "Zs")


def test_written_sample_is_scorable(tmp_path):
    sentences = load_ewt_sample("test")
    X = [[{k: t[k] for k in ("form", "lemma", "upos", "xpos")} for t in s] for s in sentences]
    heads = [[t["head"] for t in s] for s in sentences]
    text = write_conllu(io.StringIO(), X, heads).getvalue()
    check_like_the_ud_scorer(text)


# --------------------------------------------------------------------------
# The English EWT treebank of the shared data


EWT_COUNTS = {"train": (12544, 204577), "dev": (2001, 25147), "test": (2077, 25094)}


def file_counts(path):
    # Independent count: sentences are the "# sent_id" comments, words the
    # lines whose ID is a plain integer.
    text = Path(path).read_text(encoding="utf-8")
    return (len(re.findall(r"^# sent_id = ", text, re.MULTILINE)),
            len(re.findall(r"^[0-9]+\t", text, re.MULTILINE)))


@pytest.mark.parametrize("part", ["train", "dev", "test"])
def test_ewt(shared_data, part, tmp_path):
    path = shared_data / "ud" / "UD_English-EWT" / f"en_ewt-ud-{part}.conllu"
    start = time.perf_counter()
    X, heads, deprels, metadata, multiword = read_conllu(
        path, return_deprel=True, return_metadata=True, return_multiword=True, single_root=True)
    seconds = time.perf_counter() - start
    assert (len(X), sum(map(len, X))) == EWT_COUNTS[part] == file_counts(path)
    # Loose bound for a loaded 2-core machine: about 1 s is typical for train.
    assert seconds < 10
    assert all(int((h == 0).sum()) == 1 for h in heads)
    assert all(len(x) == len(h) == len(d) for x, h, d in zip(X, heads, deprels))
    assert all("sent_id" in m and "text" in m for m in metadata)
    if part == "test":
        out = tmp_path / "test.conllu"
        write_conllu(out, X, heads, deprels, comments=metadata, single_root=True)
        text = out.read_text(encoding="utf-8")
        check_like_the_ud_scorer(text)
        again = read_conllu(out, return_deprel=True, return_metadata=True)
        assert again[0] == X and again[2] == deprels and again[3] == metadata
        assert all(np.array_equal(a, b) for a, b in zip(again[1], heads))
        # The scorer aligns gold and system files on their characters: the
        # words of EWT spell out its multiword tokens, so they match.
        gold = path.read_text(encoding="utf-8")
        assert token_characters(text) == token_characters(gold)
        # With the multiword tokens, the ID column is the gold one (minus
        # the empty nodes) and the tokens are the gold tokens.
        write_conllu(out, X, heads, deprels, comments=metadata, multiword=multiword)
        text = out.read_text(encoding="utf-8")
        check_like_the_ud_scorer(text)
        assert id_column(text) == [i for i in id_column(gold) if "." not in i]
        assert token_list(text) == token_list(gold)


def id_column(text):
    return [line.split("\t", 1)[0] for line in text.split("\n")
            if line and not line.startswith("#")]


def token_list(text):
    """Token forms: a multiword token's form instead of its words'."""
    tokens, skip_until = [], 0
    for line in text.split("\n"):
        if not line:
            skip_until = 0
            continue
        if line.startswith("#"):
            continue
        cols = line.split("\t")
        if "." in cols[0]:
            continue
        if "-" in cols[0]:
            tokens.append(cols[1])
            skip_until = int(cols[0].split("-")[1])
        elif int(cols[0]) > skip_until:
            tokens.append(cols[1])
    return tokens


def token_characters(text):
    """Concatenated token forms (multiword tokens instead of their words)."""
    chars, skip_until = [], 0
    for line in text.split("\n"):
        if not line:
            skip_until = 0  # a new sentence
            continue
        if line.startswith("#"):
            continue
        cols = line.split("\t")
        if "." in cols[0]:
            continue
        if "-" in cols[0]:
            chars.append(cols[1])
            skip_until = int(cols[0].split("-")[1])
            continue
        if int(cols[0]) <= skip_until:
            continue
        skip_until = 0
        chars.append(cols[1])
    return "".join(chars).replace(" ", "")


@pytest.mark.parametrize("treebank", ["UD_Vietnamese-VTB", "UD_English-ParTUT"])
def test_other_shared_treebanks(shared_data, treebank):
    paths = sorted((shared_data / "ud" / treebank).glob("*.conllu"))
    if not paths:
        pytest.skip(f"{treebank} is not in the shared data")
    for path in paths:
        X, heads, multiword = read_conllu(path, return_multiword=True, single_root=True)
        assert (len(X), sum(map(len, X))) == file_counts(path)
        assert all(len(x) == len(h) for x, h in zip(X, heads))
        text = write_conllu(io.StringIO(), X, heads, multiword=multiword).getvalue()
        check_like_the_ud_scorer(text)
        assert token_list(text) == token_list(path.read_text(encoding="utf-8"))
