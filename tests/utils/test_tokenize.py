"""Tests of the rule-based sentence splitter and tokenizer (utils._tokenize)."""

import re

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from sksparse_struct.utils._tokenize import tokenize


def _sentences(text, style="ud"):
    t = tokenize(text, style=style)
    bounds = t.sentence_starts.tolist()
    return [[text[a:b] for a, b in zip(t.starts[i:j].tolist(), t.ends[i:j].tolist())]
            for i, j in zip(bounds[:-1], bounds[1:])]


def _words(text, style="ud"):
    return [w for sentence in _sentences(text, style) for w in sentence]


@pytest.mark.parametrize("text, words", [
    ("I don't know", ["I", "do", "n't", "know"]),
    ("She can't, he won't, we ain't", ["She", "ca", "n't", ",", "he", "wo", "n't", ",", "we",
                                       "ai", "n't"]),
    ("I'm sure you're right, they'll see we've won, I'd go",
     ["I", "'m", "sure", "you", "'re", "right", ",", "they", "'ll", "see", "we", "'ve", "won",
      ",", "I", "'d", "go"]),
    ("John's dog shouldn't've", ["John", "'s", "dog", "should", "n't", "'ve"]),
    ("It\u2019s Ann\u2019s, isn\u2019t it", ["It", "\u2019s", "Ann", "\u2019s", ",", "is",
                                            "n\u2019t", "it"]),
    ("I cannot, dont, gonna", ["I", "can", "not", ",", "do", "nt", ",", "gon", "na"]),
    ("O'Connell and the students' books", ["O'Connell", "and", "the", "students", "'",
                                          "books"]),
    ("DON'T", ["DO", "N'T"]),
])
def test_clitics(text, words):
    assert _words(text) == words


def test_multiword_tokens_are_the_split_words():
    text = "I don't know, can't you?"
    t = tokenize(text)
    spans = list(zip(t.starts.tolist(), t.ends.tolist()))
    assert [text[spans[a][0]:spans[b][1]] for a, b in t.multiword] == ["don't", "can't"]
    # the words of a multiword token are contiguous
    for a, b in t.multiword:
        assert all(spans[k][1] == spans[k + 1][0] for k in range(a, b))


@pytest.mark.parametrize("text, words", [
    ("Mr. Smith met Dr. Jones", ["Mr.", "Smith", "met", "Dr.", "Jones"]),
    ("in the U.S. Army, e.g. tanks, i.e. big", ["in", "the", "U.S.", "Army", ",", "e.g.",
                                                "tanks", ",", "i.e.", "big"]),
    ("at 5 p.m. on Sept. 3 vs. them", ["at", "5", "p.m.", "on", "Sept.", "3", "vs.", "them"]),
    ("G. W. Bush", ["G.", "W.", "Bush"]),
    ("No. 5 and No.", ["No.", "5", "and", "No", "."]),
    ("U.S.A and a.k.a", ["U.S.A", "and", "a.k.a"]),
])
def test_abbreviations(text, words):
    assert _words(text) == words


@pytest.mark.parametrize("text, words", [
    ("It costs $3.50 or 1,000 yen at 10:30 on 11/20/2000",
     ["It", "costs", "$", "3.50", "or", "1,000", "yen", "at", "10:30", "on", "11/20/2000"]),
    ("Call 713-853-3989, 50% off, 2nd", ["Call", "713-853-3989", ",", "50", "%", "off", ",",
                                        "2nd"]),
    ("a well-known e-mail on non-profit self-help", ["a", "well", "-", "known", "e-mail", "on",
                                                    "non-profit", "self", "-", "help"]),
])
def test_numbers_and_hyphens(text, words):
    assert _words(text) == words


@pytest.mark.parametrize("text, words", [
    ("See http://example.com/a?b=1 (or www.x.org/y).",
     ["See", "http://example.com/a?b=1", "(", "or", "www.x.org/y", ")", "."]),
    ("Mail ann.lee@mail.example.com, Ann@ENRON or google.com.",
     ["Mail", "ann.lee@mail.example.com", ",", "Ann@ENRON", "or", "google.com", "."]),
    ("Open report.doc and alt.animals.cat", ["Open", "report.doc", "and", "alt.animals.cat"]),
])
def test_urls_emails_and_names(text, words):
    assert _words(text) == words


@pytest.mark.parametrize("text, words", [
    ('He said "Hi" and \'bye\'', ["He", "said", '"', "Hi", '"', "and", "'", "bye", "'"]),
    ("Wait... what?! No!!! -- ok :) (:", ["Wait", "...", "what", "?!", "No", "!!!", "--",
                                         "ok", ":)", "(:"]),
    ("\u201cSo\u201d \u2026 fine", ["\u201c", "So", "\u201d", "\u2026", "fine"]),
])
def test_quotes_punctuation_and_emoticons(text, words):
    assert _words(text) == words


def test_sentences():
    assert _sentences("Hi there. I'm here! Are you? Yes") == [
        ["Hi", "there", "."], ["I", "'m", "here", "!"], ["Are", "you", "?"], ["Yes"]]
    # a closing quote or bracket written right after the end mark stays
    assert _sentences('He said "Go!" Then (he left.) Ok') == [
        ["He", "said", '"', "Go", "!", '"'], ["Then", "(", "he", "left", ".", ")"], ["Ok"]]
    # no end after a title or an initial; after "etc." before a capital, whose
    # period then goes to the sentence
    assert _sentences("Mr. Li and J. Doe came. Apples, pears etc. Then more etc. and so") == [
        ["Mr.", "Li", "and", "J.", "Doe", "came", "."], ["Apples", ",", "pears", "etc", "."],
        ["Then", "more", "etc.", "and", "so"]]
    assert _sentences("We live in the U.S.") == [["We", "live", "in", "the", "U.S", "."]]
    # an ellipsis before a lower-case word goes on with the sentence
    assert _sentences("Well... maybe. Well... No. Hm\u2026 ok. Wait!! no") == [
        ["Well", "...", "maybe", "."], ["Well", "..."], ["No", "."], ["Hm", "\u2026", "ok", "."],
        ["Wait", "!!"], ["no"]]
    # a line break ends a sentence, blank lines too
    assert _sentences("a line\nanother\n\n\nlast") == [["a", "line"], ["another"], ["last"]]


def test_pre_tokenised_text_keeps_its_words():
    words = ["I", "do", "n't", "know", "John", "'s", "e-mail", ",", "U.S.", "3.5", "``", "no",
             "''", "gon", "na", "!"]
    assert _words(" ".join(words)) == words
    assert _sentences("One sentence .\nAnother one !\nA third") == [
        ["One", "sentence", "."], ["Another", "one", "!"], ["A", "third"]]


def test_offsets_reconstruct_the_text():
    text = "  Mr. O'Neil didn't say \u201cno\u201d\u2026  \n\tCall 555-1234!  "
    t = tokenize(text)
    starts, ends = t.starts.tolist(), t.ends.tolist()
    rebuilt = ""
    for a, b in zip(starts, ends):
        rebuilt += text[len(rebuilt):a] + text[a:b]
    assert rebuilt + text[len(rebuilt):] == text
    assert "".join(text[a:b] for a, b in zip(starts, ends)) == "".join(text.split())
    assert t.starts.dtype == np.int64 and t.sentence_starts.dtype == np.int64


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t \n"])
@pytest.mark.parametrize("style", ["ud", "simple"])
def test_empty_text(text, style):
    t = tokenize(text, style=style)
    assert len(t.starts) == len(t.ends) == 0
    assert t.sentence_starts.tolist() == [0]
    assert t.multiword == []


def test_non_ascii():
    assert _words("Café Zürich, naïve señor \u00e9t\u00e9 Ελλάδα 東京 \u2014 ok.") == [
        "Café", "Zürich", ",", "naïve", "señor", "été", "Ελλάδα", "東京", "\u2014", "ok", "."]


def test_simple_style_is_the_argument_tokenizer():
    # words keep their inner apostrophes, periods and hyphens; every other
    # non-space character is a token; sentences end after . ! ? and at line breaks
    assert _sentences("Mr. Smith's self-made U.S. car... won't run!\nNo", "simple") == [
        ["Mr", "."], ["Smith's", "self-made", "U.S", "."], ["car", ".", ".", "."],
        ["won't", "run", "!"], ["No"]]
    assert tokenize("don't", style="simple").multiword == []


def _argument_tokenizer(text):
    """The tokenizer ArgumentFeatures had before the shared one, as it was."""
    token = re.compile(r"\w+(?:['\u2019.\-]\w+)*|[^\w\s]")
    words, begins, sent_first = [], [], [0]
    end = 0
    for m in token.finditer(text):
        if sent_first[-1] < len(words) and (
                (words[-1] in (".", "!", "?") and m.group() not in (".", "!", "?"))
                or "\n" in text[end:m.start()]):
            sent_first.append(len(words))
        words.append(m.group())
        begins.append(m.start())
        end = m.end()
    if len(words) > sent_first[-1]:
        sent_first.append(len(words))
    return words, begins, sent_first


def test_bad_style():
    with pytest.raises(ValueError, match="style must be 'ud' or 'simple'; got 'penn'"):
        tokenize("x", style="penn")


_TEXT = st.lists(
    st.sampled_from(list("abcXYZ09 .,!?'\"-:;()/@\n\r\t\u2019\u2026\u2028\u00e9$%") + [
        "n't", "'s", "Mr.", "U.S.", "e.g.", "http://a.com", "3.5", "1,000", "...", ":)"]),
    max_size=40).map("".join)


@given(_TEXT, st.sampled_from(["ud", "simple"]))
def test_offsets_property(text, style):
    t = tokenize(text, style=style)
    starts, ends = t.starts.tolist(), t.ends.tolist()
    # words are non-empty, in order, do not overlap and hold no whitespace
    assert all(a < b for a, b in zip(starts, ends))
    assert all(b <= a for b, a in zip(ends[:-1], starts[1:]))
    assert not any(re.search(r"\s", text[a:b]) for a, b in zip(starts, ends))
    # no character other than whitespace is lost
    assert "".join(text[a:b] for a, b in zip(starts, ends)) == "".join(text.split())
    # sentences cover the words, none empty
    bounds = t.sentence_starts.tolist()
    assert bounds[0] == 0 and bounds[-1] == len(starts)
    assert all(i < j for i, j in zip(bounds[:-1], bounds[1:])) or not starts
    # multiword tokens are runs of adjacent words within a sentence
    for a, b in t.multiword:
        assert a < b and all(ends[k] == starts[k + 1] for k in range(a, b))
        assert not any(a < s <= b for s in bounds)


@given(_TEXT)
@example("Wait\u2026 what?! U.S. Mr. Li's self-made car...\r\nOk\u2028no\rx")
def test_simple_style_is_the_former_argument_tokenizer(text):
    t = tokenize(text, style="simple")
    words = [text[a:b] for a, b in zip(t.starts.tolist(), t.ends.tolist())]
    assert (words, t.starts.tolist(), t.sentence_starts.tolist()) == _argument_tokenizer(text)
