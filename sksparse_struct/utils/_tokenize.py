"""A small rule-based sentence splitter and tokenizer for English text.

One tokenizer, two sets of rules (``style``):

- ``"ud"``: the conventions of the Universal Dependencies English Web
  Treebank (EWT), where a regular expression can follow them: clitics split
  off their host ("do|n't", "I|'m", "John|'s", "can|not", "gon|na"), the
  pieces of a hyphenated compound split ("well|-|known") except after a
  prefix ("e-mail", "non-profit"), and whole tokens kept for URLs, e-mail
  addresses, file and domain names, numbers ("3.5", "1,000", "10:30",
  "713-853-3989"), abbreviations ("Mr.", "U.S.", "e.g.", initials before a
  name), runs of punctuation ("...", "!!", "?!", "--") and emoticons
  (":)", ":-(").
- ``"simple"``: the rules of :class:`ArgumentFeatures` for documents without
  annotations: a word is a run of letters and digits that may hold ``'``,
  ``.`` or ``-`` between two of them ("don't", "U.S", "self-made"), any
  other non-space character is a token of its own.

Sentences end, in both styles, at a line break (``"\\n"``; with ``"ud"``
also the other line ends of :meth:`str.splitlines`) and after a token made of
``.``, ``!`` and ``?`` (and, with ``"ud"``, ``…``) when the next token is
not one of them. With ``"ud"``: a closing quote or bracket written right
after the end mark stays with the sentence; an ellipsis before a lower-case
word does not end it; an abbreviation that often ends one ("etc.",
"Inc.", "Ltd.") ends it before a capitalised word, while a title, an
initial ("Mr.", "J.") or letters with periods ("U.S.", "e.g.") never do;
an abbreviation that ends a sentence gives its period to the sentence as a
token of its own ("etc" ".", as EWT writes it).

Every token is a slice of the text: the tokenizer gives character offsets,
never rewrites a character, and no character other than whitespace is left
out of a token.
"""

import re
from typing import NamedTuple

import numpy as np

__all__ = ["TextTokens", "tokenize"]

# --------------------------------------------------------------------------
# The "simple" style: the tokens of ArgumentFeatures

_SIMPLE_TOKEN = re.compile(r"\w+(?:['\u2019.\-]\w+)*|[^\w\s]")

# --------------------------------------------------------------------------
# The "ud" style

# Abbreviations kept with their period; the titles never end a sentence,
# the others do before a capitalised word (checked in _sentence_starts).
_TITLES = (
    "Mr Mrs Ms Messrs Dr Prof St Gen Lt Col Maj Sgt Capt Cmdr Adm Rev Gov Sen Rep Reps "
    "Pres Hon Supt Mt Ft Fr Ste mr mrs ms dr vs Vs Attn attn Arrv arrv cf Cf Ph "
    "approx Approx Assn Ave Blvd Rd Hwy Dept dept Univ Jan Feb Mar Apr Jun Jul Aug "
    "Sep Sept Oct Nov Dec Mon Tue Tues Wed Thu Thur Thurs Fri Sat Sun Fig fig ca"
).split()
_ENDING = "etc Inc Corp Ltd Co Cos Bros al esp Jr Sr".split()
# Lower-case prefixes that EWT keeps with their hyphen ("e-mail", "non-profit").
_PREFIXES = (
    "e non pre anti mid re post co over pro multi ex sub semi cross neo psycho socio counter "
    "intra inter micro macro un bi tri de mis ultra mega auto"
).split()
# Contractions written without their apostrophe, split as EWT splits them.
_BARE_CONTRACTIONS = {
    "cannot": 3, "gonna": 3, "wanna": 3, "gotta": 3, "dont": 2, "doesnt": 4, "didnt": 3,
    "isnt": 2, "arent": 3, "wasnt": 3, "werent": 4, "havent": 4, "hasnt": 3, "hadnt": 3,
    "couldnt": 5, "wouldnt": 5, "shouldnt": 6, "cant": 2, "wont": 2, "aint": 2, "im": 1,
    "ive": 1, "youre": 3, "theyre": 4, "thats": 4, "whats": 4, "theres": 5,
}
_DOMAINS = (
    "com|org|net|edu|gov|mil|info|biz|uk|"
    "doc|docx|xls|xlsx|ppt|pptx|pdf|txt|rtf|csv|htm|html|xml|jpg|jpeg|gif|png|zip|exe|url"
)
# Whitespace within a line: the tokens never look past a line break, so
# that each line can be tokenized apart.
_SPACE = r"[^\S\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]"
_UD_TOKEN = re.compile(
    r"""
    (?P<url>(?:(?:https?|ftp)://|www\.|mailto:)[^\s<>"]*[^\s<>".,;:!?'()\[\]{}\u2019\u201d]
      | \w[\w.+-]*@\w[\w-]*(?:\.\w[\w-]*)*
      | \w[\w-]*(?:\.\w[\w-]*)*\.(?i:""" + _DOMAINS + r""")(?![\w@-]|\.\w)
      | \w{2,}(?:\.[a-z]\w+)+(?![\w@-]|\.\w))
    | (?P<emoticon>(?<![\w:;=])(?:[:;=][-o^']?[()\[\]DPpOo3/\\|*]|\(:|\^_\^|<3)(?![\w)(]))
    | (?P<number>\d+(?:[.,:/-]\d+)+)
    | (?P<title>(?<![\w.])(?:(?:""" + "|".join(_TITLES) + r""")\.(?!\w)
                          |(?:No|Nos|no)\.(?=""" + _SPACE + r"""*\d)))
    | (?P<ending>(?<![\w.])(?:""" + "|".join(_ENDING) + r""")\.(?!\w))
    | (?P<acronym>(?<![\w.])(?:[A-Za-z]\.){2,}(?![\w])|(?<![\w.])[A-Za-z](?:\.[A-Za-z])+(?!\w))
    | (?P<initial>(?<![\w.])[A-Z]\.(?=""" + _SPACE + r"""+[A-Z]))
    | (?P<prefixed>(?<![\w.])(?i:""" + "|".join(_PREFIXES) + r""")-[^\W_]+)
    | (?P<slashed>(?<![\w/])(?i:b/c|w/o|w/)(?!/))
    | (?P<word>\w+(?:['\u2019`]\w+)*)
    | (?P<clitic>['\u2019](?:[sSmMdD]|ll|LL|re|RE|ve|VE)(?!\w))
    | (?P<final>[.!?\u2026]+)
    | (?P<other>(?P<char>[^\w\s])(?P=char)*)
    """,
    re.VERBOSE,
)
# The clitics split off the end of a word, one after the other ("should|n't|'ve").
_CLITIC_END = re.compile(r"(?i:n['\u2019`]t|['\u2019`](?:s|m|d|ll|re|ve))$")
# The end marks of the "simple" style.
_SIMPLE_FINAL = frozenset(".!?")
_ELLIPSIS = re.compile("\\.\\.+|[.\u2026]*\u2026[.\u2026]*")
# Closing quotes and brackets that stay with the sentence they follow when
# written right after its end mark.
_CLOSING = frozenset("\"')]}\u2019\u201d\u00bb")

# What str.splitlines breaks lines at, besides "\n": a line break for "ud".
_LINE_BREAK = re.compile("[\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")

# Kinds of token, for the sentence rules.
_OTHER, _FINAL, _TITLE, _ENDING_ABBREVIATION, _ACRONYM = 0, 1, 2, 3, 4


class TextTokens(NamedTuple):
    """The words and sentences of a text, as character offsets.

    Attributes
    ----------
    starts, ends : ndarray of shape (n_words,), dtype int64
        Word ``i`` is ``text[starts[i]:ends[i]]``; the words are in text order
        and do not overlap.
    sentence_starts : ndarray of shape (n_sentences + 1,), dtype int64
        Sentence ``k`` is the words ``sentence_starts[k]`` to
        ``sentence_starts[k + 1] - 1``; the last entry is ``n_words``.
    multiword : list of tuple
        ``(first, last)`` (0-based, inclusive) for each run of words that are
        one token of the text, split by the rules ("don't" is "do" and
        "n't"); sorted, within a sentence.
    """

    starts: np.ndarray
    ends: np.ndarray
    sentence_starts: np.ndarray
    multiword: list


def tokenize(text, *, style="ud"):
    """Split a text into sentences and words, as character offsets.

    Parameters
    ----------
    text : str
        The text.
    style : {"ud", "simple"}, default="ud"
        The rules (see the module's documentation): ``"ud"`` follows the
        tokenization of UD English-EWT, ``"simple"`` is the tokenizer of
        :class:`~sksparse_struct.feature_extraction.ArgumentFeatures`.

    Returns
    -------
    tokens : TextTokens

    Examples
    --------
    >>> from sksparse_struct.utils._tokenize import tokenize
    >>> text = "Mr. Li didn't pay $3.50. Why?"
    >>> t = tokenize(text)
    >>> [[text[a:b] for a, b in zip(t.starts[i:j], t.ends[i:j])]
    ...  for i, j in zip(t.sentence_starts[:-1], t.sentence_starts[1:])]
    [['Mr.', 'Li', 'did', "n't", 'pay', '$', '3.50', '.'], ['Why', '?']]
    >>> t.multiword
    [(2, 3)]
    """
    if style == "ud":
        starts, ends, kinds, multiword = _ud_words(text)
    elif style == "simple":
        starts, ends, kinds = [], [], []
        for m in _SIMPLE_TOKEN.finditer(text):
            starts.append(m.start())
            ends.append(m.end())
            kinds.append(_FINAL if m.group() in _SIMPLE_FINAL else _OTHER)
        multiword = []
    else:
        raise ValueError(f"style must be 'ud' or 'simple'; got {style!r}.")
    sentence_starts = _sentence_starts(text, starts, ends, kinds, style == "ud")
    if style == "ud":
        starts, ends, sentence_starts, multiword = _split_final_periods(
            text, starts, ends, kinds, sentence_starts, multiword)
    return TextTokens(np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64),
                      np.array(sentence_starts, dtype=np.int64), multiword)


def _ud_words(text):
    starts, ends, kinds, multiword = [], [], [], []
    for m in _UD_TOKEN.finditer(text):
        group = m.lastgroup
        a, b = m.span()
        if group == "word":
            pieces = _word_pieces(m.group())
            if len(pieces) > 1:
                multiword.append((len(starts), len(starts) + len(pieces) - 1))
                for k in pieces[:-1]:
                    starts.append(a)
                    ends.append(a + k)
                    kinds.append(_OTHER)
                    a += k
        starts.append(a)
        ends.append(b)
        kinds.append(_FINAL if group == "final" else _TITLE if group in ("title", "initial")
                     else _ENDING_ABBREVIATION if group == "ending"
                     else _ACRONYM if group == "acronym" else _OTHER)
    return starts, ends, kinds, multiword


def _word_pieces(word):
    """The lengths of the words a run of word characters splits into."""
    bare = _BARE_CONTRACTIONS.get(word.lower())
    if bare is not None and (word.islower() or word.istitle() or word.isupper()):
        return [bare, len(word) - bare]
    pieces = []
    while (m := _CLITIC_END.search(word)) is not None and m.start() > 0:
        pieces.append(len(word) - m.start())
        word = word[:m.start()]
    return [len(word)] + pieces[::-1]


def _sentence_starts(text, starts, ends, kinds, ud):
    """The index of the first word of each sentence, and the number of words."""
    first = [0]
    # Whether the words since the last boundary end with an end mark (or,
    # with ud, an abbreviation that may end a sentence).
    pending = _OTHER
    mark = -1  # the last word that set pending
    for i in range(len(starts)):
        if i > first[-1]:
            gap = text[ends[i - 1]:starts[i]]
            kind = kinds[i]
            if "\n" in gap or (ud and _LINE_BREAK.search(gap)):
                first.append(i)
            elif pending == _FINAL and kind != _FINAL:
                if ud and not gap and text[starts[i]] in _CLOSING and ends[i] - starts[i] == 1:
                    continue  # the closing mark keeps the sentence pending
                # An ellipsis before a lower-case word goes on with the sentence.
                if not (ud and text[starts[i]].islower()
                        and _ELLIPSIS.fullmatch(text, starts[mark], ends[mark])):
                    first.append(i)
            elif pending == _ENDING_ABBREVIATION and text[starts[i]].isupper():
                first.append(i)
        pending = kinds[i]
        mark = i
    if len(starts) > first[-1]:
        first.append(len(starts))
    return first


def _split_final_periods(text, starts, ends, kinds, sentence_starts, multiword):
    """An abbreviation that ends a sentence gives its period to the sentence (as EWT)."""
    last = {j - 1 for j in sentence_starts[1:]
            if kinds[j - 1] in (_ENDING_ABBREVIATION, _ACRONYM)
            and text[ends[j - 1] - 1] == "."}
    if not last:
        return starts, ends, sentence_starts, multiword
    shift = [0] * (len(starts) + 1)  # the number of words split before word i
    new_starts, new_ends = [], []
    for i, (a, b) in enumerate(zip(starts, ends)):
        shift[i] = len(new_starts) - i
        if i in last:
            new_starts += [a, b - 1]
            new_ends += [b - 1, b]
        else:
            new_starts.append(a)
            new_ends.append(b)
    shift[-1] = len(new_starts) - len(starts)
    sentence_starts = [j + shift[j] for j in sentence_starts]
    multiword = [(f + shift[f], t + shift[t]) for f, t in multiword]
    return new_starts, new_ends, sentence_starts, multiword
