"""Tests for the strict CoNLL-U reader (sksparse_struct.datasets._conllu)."""

import gzip
import pickle
import re
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sksparse_struct.datasets._conllu import (
    UPOS_TAGS,
    Sentence,
    parse_conllu,
    read_conllu_sentences,
    words_and_tags,
)

# Hand-written, with a multiword token (2-3), an empty node (5.1), a bare
# comment and a comment with "=" in its value.
DOC = """\
# newdoc id = d1
# sent_id = d1-1
# text = I don't know = fine
# newpar
1\tI\tI\tPRON\tPRP\tCase=Nom|Number=Sing|Person=1|PronType=Prs\t4\tnsubj\t4:nsubj\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\tVBP\tMood=Ind|Tense=Pres|VerbForm=Fin\t4\taux\t4:aux\t_
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

WORD = "1\tHi\thi\tINTJ\tUH\t_\t0\troot\t0:root\t_"


def parse(text, source="<string>"):
    return parse_conllu(text.splitlines(), source)


def token_line(i, form="w", upos="NOUN", feats="_", head=0, deprel="dep"):
    return f"{i}\t{form}\t{form.lower()}\t{upos}\tXX\t{feats}\t{head}\t{deprel}\t_\t_"


# --------------------------------------------------------------------------
# Valid input


def test_parse_document():
    first, second = parse(DOC)
    assert [t["id"] for t in first] == [1, 2, 3, 4, 5, 6]
    assert [t["form"] for t in first] == ["I", "do", "n't", "know", "=", "fine"]
    assert [t["head"] for t in first] == [4, 4, 4, 0, 6, 4]
    assert first[0] == {
        "id": 1, "form": "I", "lemma": "I", "upos": "PRON", "xpos": "PRP",
        "feats": {"Case": "Nom", "Number": "Sing", "Person": "1", "PronType": "Prs"},
        "head": 4, "deprel": "nsubj",
    }
    assert first[4]["feats"] == {}
    assert first.metadata == {"newdoc id": "d1", "sent_id": "d1-1",
                              "text": "I don't know = fine"}
    assert first.comments == ["# newdoc id = d1", "# sent_id = d1-1",
                              "# text = I don't know = fine", "# newpar"]
    assert second.metadata == {"sent_id": "d1-2", "text": "Yes."}
    assert [t["upos"] for t in second] == ["INTJ", "PUNCT"]


def test_sentence_is_a_list_of_dicts():
    first, _ = parse(DOC)
    assert isinstance(first, list) and isinstance(first, Sentence)
    assert all(isinstance(t, dict) for t in first)
    assert repr(first) == "Sentence(sent_id='d1-1', n_words=6)"
    again = pickle.loads(pickle.dumps(first))
    assert again == first and again.metadata == first.metadata
    assert again.comments == first.comments


@pytest.mark.parametrize("variant", [
    DOC.rstrip("\n"),                      # no closing blank line
    DOC.replace("\n\n#", "\n\n\n\n#"),     # several blank lines between sentences
    DOC.replace("\n", "\r\n"),             # Windows line endings
    "\ufeff" + DOC,                        # byte-order mark
    "\n\n" + DOC,                          # leading blank lines
])
def test_layout_variants_parse_the_same(variant):
    reference = parse(DOC)
    got = parse_conllu(variant.split("\n"), "<v>")
    assert got == reference
    assert [s.metadata for s in got] == [s.metadata for s in reference]


def test_lines_with_line_endings():
    lines = DOC.splitlines(keepends=True)
    assert parse_conllu(lines) == parse(DOC)


def test_empty_input():
    assert parse("") == []
    assert parse("\n\n") == []


def test_sentence_without_comments():
    [sentence] = parse(WORD + "\n")
    assert sentence.metadata == {} and sentence.comments == []
    assert sentence[0]["form"] == "Hi"


def test_underscore_fields_kept_verbatim():
    # "_" as a form is a real word (an underscore); unspecified UPOS is "_".
    [sentence] = parse("1\t_\t_\t_\t_\t_\t0\troot\t_\t_\n")
    assert sentence[0]["form"] == "_" and sentence[0]["upos"] == "_"
    assert sentence[0]["feats"] == {}


def test_layered_features_and_multiple_values():
    [sentence] = parse(token_line(1, feats="Number[psor]=Plur|PronType=Int,Rel") + "\n")
    assert sentence[0]["feats"] == {"Number[psor]": "Plur", "PronType": "Int,Rel"}


def test_spaces_inside_form_and_lemma():
    [sentence] = parse("1\tNew York\tNew York\tPROPN\tNNP\t_\t0\troot\t_\t_\n")
    assert sentence[0]["form"] == "New York"


@st.composite
def sentences(draw):
    n = draw(st.integers(1, 8))
    alphabet = st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"),
                             blacklist_characters="\t\n\r\ufeff")
    words = []
    for i in range(1, n + 1):
        form = draw(st.text(alphabet, min_size=1, max_size=6).filter(
            lambda s: not s.startswith("#")))
        words.append({
            "id": i,
            "form": form,
            "lemma": draw(st.text(alphabet, min_size=1, max_size=6)),
            "upos": draw(st.sampled_from(UPOS_TAGS)),
            "xpos": draw(st.sampled_from(["NN", "VB", "_"])),
            "feats": draw(st.dictionaries(st.sampled_from(["Number", "Case", "Abbr"]),
                                          st.sampled_from(["Sing", "Yes", "Nom,Acc"]),
                                          max_size=3)),
            "head": draw(st.integers(0, n).filter(lambda h, i=i: h != i)),
            "deprel": draw(st.sampled_from(["root", "nsubj", "obl:tmod"])),
        })
    return words


def to_conllu(sentence_list):
    out = []
    for k, words in enumerate(sentence_list):
        out.append(f"# sent_id = s{k}")
        for t in words:
            feats = "|".join(f"{a}={b}" for a, b in sorted(t["feats"].items())) or "_"
            out.append("\t".join([str(t["id"]), t["form"], t["lemma"], t["upos"],
                                  t["xpos"], feats, str(t["head"]), t["deprel"], "_", "_"]))
        out.append("")
    return "\n".join(out) + "\n"


@given(st.lists(sentences(), min_size=1, max_size=4))
def test_round_trip(sentence_list):
    parsed = parse(to_conllu(sentence_list))
    assert parsed == sentence_list
    assert [s.metadata["sent_id"] for s in parsed] == [f"s{k}" for k in range(len(parsed))]


# --------------------------------------------------------------------------
# Malformed input: ValueError naming the source and the line


@pytest.mark.parametrize("lines, line_no, message", [
    # column count
    (["# c", "1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_"], 2,
     "expected 10 tab-separated columns, found 9"),
    ([WORD + "\t_"], 1, "found 11"),
    (["1 Hi hi INTJ UH _ 0 root _ _"], 1, "found 1"),
    ([WORD, "   "], 2, "found 1"),
    # ids
    (["x" + WORD[1:]], 1, "ID 'x' is not a positive integer"),
    (["0" + WORD[1:]], 1, "ID '0' is not"),
    (["01" + WORD[1:]], 1, "ID '01' is not"),
    (["1.0" + WORD[1:]], 1, "ID '1.0' is not"),
    (["-1" + WORD[1:]], 1, "ID '-1' is not"),
    ([WORD, token_line(3, head=1)], 2, "word ID 3 is out of sequence (expected 2)"),
    ([token_line(2, head=0)], 1, "word ID 2 is out of sequence (expected 1)"),
    ([WORD, WORD], 2, "word ID 1 is out of sequence (expected 2)"),
    (["2-1\tab\t_\t_\t_\t_\t_\t_\t_\t_", WORD], 1, "multiword range '2-1' is empty"),
    # heads
    ([WORD, token_line(2, head="_")], 2, "HEAD '_' of word 2 is not a non-negative integer"),
    ([WORD, token_line(2, head="-1")], 2, "HEAD '-1' of word 2 is not"),
    ([WORD, token_line(2, head="1.1")], 2, "HEAD '1.1' of word 2 is not"),
    ([WORD, token_line(2, head=3)], 2,
     "HEAD 3 of word 2 is out of range: the sentence has 2 words"),
    ([WORD, token_line(2, head=7), "", WORD], 2, "HEAD 7 of word 2 is out of range"),
    ([WORD, token_line(2, head=2)], 2, "word 2 is its own head"),
    # other columns
    ([token_line(1, upos="NN")], 1, "UPOS 'NN' of word 1 is not one of the 17"),
    ([token_line(1, upos="noun")], 1, "UPOS 'noun'"),
    ([token_line(1, feats="Number")], 1, "FEATS item 'Number' is not of the form Name=Value"),
    ([token_line(1, feats="Number=Sing|")], 1, "FEATS item ''"),
    ([token_line(1, feats="Number=Sing|Number=Plur")], 1, "feature 'Number' is given twice"),
    ([token_line(1, deprel="")], 1, "column DEPREL is empty"),
    # CoNLL-U allows spaces only in FORM, LEMMA and MISC
    ([WORD, token_line(2, head=1, deprel="adv mod")], 2,
     ("DEPREL 'adv mod' of word 2 contains a space; CoNLL-U allows spaces only in FORM, "
      "LEMMA and MISC")),
    ([WORD.replace("\tUH\t", "\tU H\t")], 1, "XPOS 'U H' of word 1 contains a space"),
    ([WORD.replace("0:root", "0:ro\u00a0ot")], 1, "DEPS '0:ro\\xa0ot' of word 1 contains a space"),
    # heads too large for any integer type are out of range like the others
    ([WORD, token_line(2, head=2**63)], 2,
     f"HEAD {2**63} of word 2 is out of range: the sentence has 2 words"),
    (["1\t\thi\tINTJ\tUH\t_\t0\troot\t_\t_"], 1, "column FORM is empty"),
    # sentence structure
    ([WORD, "# late comment"], 2, "comment line after the token lines"),
    (["# sent_id = a", "", WORD], 2, "comment lines are not followed by any token line"),
    ([WORD, "", "# sent_id = dangling"], 3, "comment lines are not followed"),
    (["1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_", ""], 2, "sentence has no word lines"),
    (["8.1\tx\tx\tNOUN\tNN\t_\t_\t_\t0:root\t_"], 1, "sentence has no word lines"),
])
def test_malformed(lines, line_no, message):
    with pytest.raises(ValueError) as info:
        parse_conllu(lines, "bad.conllu")
    text = str(info.value)
    assert text.startswith(f"bad.conllu, line {line_no}: "), text
    assert message in text, text


def test_error_in_second_sentence_names_its_line():
    lines = DOC.splitlines()
    bad = lines.index("1\tYes\tyes\tINTJ\tUH\t_\t0\troot\t0:root\tSpaceAfter=No")
    lines[bad] = lines[bad].replace("\t0\troot", "\tzero\troot")
    with pytest.raises(ValueError, match=rf"^<string>, line {bad + 1}: HEAD 'zero'"):
        parse_conllu(lines)


# --------------------------------------------------------------------------
# Files


def test_read_plain_and_gzip_files(tmp_path):
    plain = tmp_path / "a.conllu"
    plain.write_text(DOC, encoding="utf-8")
    packed = tmp_path / "a.conllu.gz"
    packed.write_bytes(gzip.compress(DOC.encode()))
    # Compression is detected from the content, not the name.
    hidden = tmp_path / "b.conllu"
    hidden.write_bytes(gzip.compress(DOC.encode()))
    reference = parse(DOC)
    for path in [plain, str(plain), packed, hidden]:
        assert read_conllu_sentences(path) == reference


def test_file_errors_name_the_file(tmp_path):
    path = tmp_path / "broken.conllu"
    path.write_text("# sent_id = 1\n" + WORD + "\n2\tthere\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken\.conllu, line 3: expected 10 "):
        read_conllu_sentences(path)
    packed = tmp_path / "broken.conllu.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    with pytest.raises(ValueError, match=r"broken\.conllu\.gz, line 3: expected 10 "):
        read_conllu_sentences(packed)


def test_invalid_utf8(tmp_path):
    path = tmp_path / "latin1.conllu"
    latin1 = "1\tcaf\xe9\tx\tNOUN\tNN\t_\t0\troot\t_\t_\n".encode("latin-1")
    path.write_bytes((WORD + "\n\n").encode() + latin1)
    with pytest.raises(ValueError, match=r"latin1\.conllu, line 3: not valid UTF-8"):
        read_conllu_sentences(path)


def test_utf8_words(tmp_path):
    path = tmp_path / "u.conllu"
    path.write_text("1\tcafé\tcafé\tNOUN\tNN\t_\t0\troot\t_\t_\n", encoding="utf-8")
    assert read_conllu_sentences(path)[0][0]["form"] == "café"


def test_a_stray_carriage_return_is_not_a_line_break(tmp_path):
    path = tmp_path / "cr.conllu"
    path.write_bytes(b"1\tHi\rthere\thi\tINTJ\tUH\t_\t0\troot\t_\t_\n")
    assert read_conllu_sentences(path)[0][0]["form"] == "Hi\rthere"


def broken_gzip_files(tmp_path, text):
    """A truncated and a corrupt copy of ``text`` gzipped, and the line before the damage."""
    packed = gzip.compress(text.encode(), mtime=0)
    truncated = tmp_path / "truncated.conllu.gz"
    truncated.write_bytes(packed[:len(packed) // 2])
    # The CRC of the trailer: every line decompresses, the check fails.
    corrupt = tmp_path / "crc.conllu.gz"
    corrupt.write_bytes(packed[:-8] + bytes(b ^ 0xFF for b in packed[-8:-4]) + packed[-4:])
    n_lines = text.count("\n")
    # Independently: the lines that a streaming decompressor gives before
    # the truncated file ends.
    inflater = zlib.decompressobj(wbits=31)
    n_truncated = inflater.decompress(packed[:len(packed) // 2]).count(b"\n")
    return [(truncated, "the compressed data end too early", n_truncated),
            (corrupt, "corrupt gzip data", n_lines)]


def test_broken_gzip_files_name_the_file_and_line(tmp_path):
    text = "\n".join(token_line(1) if k % 3 == 0 else "" if k % 3 == 2 else
                     token_line(2, head=1) for k in range(3000)) + "\n"
    for path, problem, n_lines in broken_gzip_files(tmp_path, text):
        assert 0 < n_lines <= text.count("\n")
        with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: not a readable gzip "
                           rf"file: {problem}.*, after line {n_lines} of the decompressed"):
            read_conllu_sentences(path)
    # Damage right after the header: no line could be read.
    path = tmp_path / "empty.conllu.gz"
    path.write_bytes(gzip.compress(b"")[:12])
    with pytest.raises(ValueError, match=r"end too early.*before the first line"):
        read_conllu_sentences(path)
    path.write_bytes(b"\x1f\x8b\x09" + gzip.compress(b"x")[3:])  # unknown method
    with pytest.raises(ValueError, match=r"empty\.conllu\.gz: not a readable gzip file: "
                       r"corrupt gzip data \(Unknown compression method\)"):
        read_conllu_sentences(path)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_conllu_sentences(tmp_path / "nope.conllu")


# --------------------------------------------------------------------------
# words_and_tags


def test_words_and_tags():
    X, y = words_and_tags(parse(DOC))
    assert X == [["I", "do", "n't", "know", "=", "fine"], ["Yes", "."]]
    assert y == [["PRON", "AUX", "PART", "VERB", "SYM", "ADJ"], ["INTJ", "PUNCT"]]
    _, xpos = words_and_tags(parse(DOC), tag="xpos")
    assert xpos[1] == ["UH", "."]
    with pytest.raises(ValueError, match="tag must be one of"):
        words_and_tags(parse(DOC), tag="form")


# --------------------------------------------------------------------------
# Real treebanks


@pytest.mark.shared_data
@pytest.mark.parametrize("name, n_sentences, n_words", [
    ("en_ewt-ud-dev.conllu", 2001, 25147),
    ("en_ewt-ud-test.conllu", 2077, 25094),
])
def test_reads_the_ewt_files(shared_data, name, n_sentences, n_words):
    path = shared_data / "ud" / "UD_English-EWT" / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    sentences = read_conllu_sentences(path)
    assert len(sentences) == n_sentences
    assert sum(map(len, sentences)) == n_words
    assert all(sum(t["head"] == 0 for t in s) == 1 for s in sentences)
    assert all(s.metadata["sent_id"] and "text" in s.metadata for s in sentences)
