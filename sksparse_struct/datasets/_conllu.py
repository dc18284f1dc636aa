"""A small, strict reader for the CoNLL-U format of Universal Dependencies.

A sentence is a :class:`Sentence`: a list of token dicts (one per syntactic
word) that also carries its comment lines. Multiword-token ranges (``1-2``)
and empty nodes (``8.1``) are checked for form and skipped, because every
model in this package works on the basic tree over syntactic words.

Malformed input raises ``ValueError`` naming the file and the line, so that a
broken file fails where the problem is rather than later, far away, as a
shape error in an estimator.

The format: https://universaldependencies.org/format.html
"""

import gzip
import io
import os
import re

__all__ = ["UPOS_TAGS", "Sentence", "parse_conllu", "read_conllu_sentences",
           "words_and_tags"]

# The 17 universal part-of-speech tags of UD v2, in the order of the UD
# documentation (alphabetical).
UPOS_TAGS = (
    "ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM",
    "PART", "PRON", "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X",
)
_UPOS_SET = frozenset(UPOS_TAGS)

_COLUMNS = ("ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL",
            "DEPS", "MISC")
_WORD_ID = re.compile(r"[1-9][0-9]*")
_RANGE_ID = re.compile(r"([1-9][0-9]*)-([1-9][0-9]*)")
_EMPTY_ID = re.compile(r"(0|[1-9][0-9]*)\.[1-9][0-9]*")
_HEAD = re.compile(r"0|[1-9][0-9]*")
_FEATURE = re.compile(r"[A-Za-z0-9\[\]]+=[A-Za-z0-9,]+")


class Sentence(list):
    """A CoNLL-U sentence: a list of token dicts plus its comment lines.

    Each token is a dict with the keys ``id`` (int, 1-based), ``form``,
    ``lemma``, ``upos``, ``xpos`` (str, ``"_"`` when unspecified), ``feats``
    (dict mapping feature name to value) , ``head`` (int, 0 for the root) and
    ``deprel`` (str).

    Attributes
    ----------
    metadata : dict
        ``key -> value`` for every comment of the form ``# key = value``
        (``sent_id``, ``text``, ``newdoc id``, ...).
    comments : list of str
        Every comment line of the sentence, verbatim and in order.
    """

    def __init__(self, tokens=(), *, metadata=None, comments=None):
        super().__init__(tokens)
        self.metadata = {} if metadata is None else dict(metadata)
        self.comments = [] if comments is None else list(comments)

    def __repr__(self):
        sent_id = self.metadata.get("sent_id")
        return f"Sentence(sent_id={sent_id!r}, n_words={len(self)})"


def _fail(source, lineno, message):
    raise ValueError(f"{source}, line {lineno}: {message}")


def _parse_feats(text, source, lineno):
    if text == "_":
        return {}
    feats = {}
    for item in text.split("|"):
        if not _FEATURE.fullmatch(item):
            _fail(source, lineno, f"FEATS item {item!r} is not of the form Name=Value")
        name, value = item.split("=", 1)
        if name in feats:
            _fail(source, lineno, f"feature {name!r} is given twice in FEATS")
        feats[name] = value
    return feats


def _parse_word(cols, expected_id, source, lineno):
    """Token dict of a word line whose ID column is a positive integer."""
    word_id = int(cols[0])
    if word_id != expected_id:
        _fail(source, lineno, f"word ID {word_id} is out of sequence "
              f"(expected {expected_id})")
    if not _HEAD.fullmatch(cols[6]):
        _fail(source, lineno, f"HEAD {cols[6]!r} of word {word_id} is not a "
              "non-negative integer")
    if cols[3] not in _UPOS_SET and cols[3] != "_":
        _fail(source, lineno, f"UPOS {cols[3]!r} of word {word_id} is not one "
              "of the 17 universal POS tags")
    return {
        "id": word_id,
        "form": cols[1],
        "lemma": cols[2],
        "upos": cols[3],
        "xpos": cols[4],
        "feats": _parse_feats(cols[5], source, lineno),
        "head": int(cols[6]),
        "deprel": cols[7],
    }


def _finish(tokens, word_lines, comments, metadata, source, lineno):
    """Check the heads of a complete sentence and wrap it in a Sentence."""
    if not tokens:
        _fail(source, lineno, "sentence has no word lines")
    n_words = len(tokens)
    for token, word_line in zip(tokens, word_lines):
        head = token["head"]
        if head > n_words:
            _fail(source, word_line, f"HEAD {head} of word {token['id']} is "
                  f"out of range: the sentence has {n_words} words")
        if head == token["id"]:
            _fail(source, word_line, f"word {head} is its own head")
    return Sentence(tokens, metadata=metadata, comments=comments)


def parse_conllu(lines, source="<string>"):
    """Parse CoNLL-U lines into sentences, strictly.

    Parameters
    ----------
    lines : iterable of str
        The lines of a CoNLL-U document, with or without their line endings
        (``"\\n"`` or ``"\\r\\n"``).
    source : str, default="<string>"
        Name used in error messages (usually the file name).

    Returns
    -------
    sentences : list of Sentence
        One per sentence, in order; each a list of token dicts for the
        syntactic words (multiword ranges and empty nodes are skipped).

    Raises
    ------
    ValueError
        On malformed input, naming ``source`` and the 1-based line number:
        a token line without exactly 10 tab-separated columns, an empty
        column, an ID that is not an integer, a range or an empty node, word
        IDs not numbered 1, 2, 3, ..., a HEAD that is not an integer or
        points outside the sentence or to the word itself, an unknown UPOS
        tag, malformed FEATS, a comment after the first token line of a
        sentence, or a sentence without words.

    Examples
    --------
    >>> from sksparse_struct.datasets._conllu import parse_conllu
    >>> text = '''# sent_id = s1
    ... # text = Hi there
    ... 1\\tHi\\thi\\tINTJ\\tUH\\t_\\t0\\troot\\t0:root\\t_
    ... 2\\tthere\\tthere\\tADV\\tRB\\tPronType=Dem\\t1\\tadvmod\\t1:advmod\\t_
    ... '''
    >>> [sentence] = parse_conllu(text.splitlines())
    >>> sentence.metadata["text"], [t["upos"] for t in sentence]
    ('Hi there', ['INTJ', 'ADV'])
    >>> sentence[1]["head"], sentence[1]["feats"]
    (1, {'PronType': 'Dem'})
    """
    sentences = []
    tokens, word_lines, comments, metadata = [], [], [], {}
    started = False  # a token line (word, range or empty node) was seen
    lineno = 0
    for lineno, line in enumerate(lines, start=1):
        line = line.rstrip("\n").rstrip("\r")
        if lineno == 1:
            line = line.lstrip("\ufeff")
        if not line:
            if started:
                sentences.append(_finish(tokens, word_lines, comments,
                                         metadata, source, lineno))
            elif comments:
                _fail(source, lineno, "comment lines are not followed by any "
                      "token line")
            tokens, word_lines, comments, metadata = [], [], [], {}
            started = False
            continue
        if line.startswith("#"):
            if started:
                _fail(source, lineno, "comment line after the token lines of "
                      "a sentence (a blank line must end each sentence)")
            comments.append(line)
            key, eq, value = line[1:].partition("=")
            if eq and key.strip():
                metadata[key.strip()] = value.strip()
            continue
        started = True
        cols = line.split("\t")
        if len(cols) != 10:
            _fail(source, lineno, f"expected 10 tab-separated columns, found "
                  f"{len(cols)}")
        for name, col in zip(_COLUMNS, cols):
            if not col:
                _fail(source, lineno, f"column {name} is empty")
        if _WORD_ID.fullmatch(cols[0]):
            tokens.append(_parse_word(cols, len(tokens) + 1, source, lineno))
            word_lines.append(lineno)
        elif match := _RANGE_ID.fullmatch(cols[0]):
            if int(match.group(1)) >= int(match.group(2)):
                _fail(source, lineno, f"multiword range {cols[0]!r} is empty")
        elif not _EMPTY_ID.fullmatch(cols[0]):
            _fail(source, lineno, f"ID {cols[0]!r} is not a positive integer, "
                  "a range like '1-2' or an empty node like '8.1'")
    if started:
        # The last sentence may lack its closing blank line.
        sentences.append(_finish(tokens, word_lines, comments, metadata,
                                 source, lineno))
    elif comments:
        _fail(source, lineno, "comment lines are not followed by any token "
              "line")
    return sentences


def _decoded_lines(binary_lines, source):
    for lineno, raw in enumerate(binary_lines, start=1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{source}, line {lineno}: not valid UTF-8 "
                             f"({exc.reason} at byte {exc.start})") from None


def read_conllu_sentences(path):
    """Read a CoNLL-U file (plain, or gzip-compressed) into sentences.

    Parameters
    ----------
    path : str or os.PathLike
        The file. Gzip compression is recognised from the content, whatever
        the file name.

    Returns
    -------
    sentences : list of Sentence
        See :func:`parse_conllu`.

    Raises
    ------
    ValueError
        On malformed input or invalid UTF-8, naming the file and the line.
    """
    source = os.fspath(path)
    with open(path, "rb") as f:
        return read_conllu_binary(f, source)


def read_conllu_binary(fileobj, source):
    """Parse an open binary CoNLL-U file object, gunzipping it if needed.

    Split out of :func:`read_conllu_sentences` so that package resources,
    which need not be plain files, are read the same way as paths.
    """
    data = fileobj.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    # Iterating a BytesIO splits on b"\n" only, so a stray "\r" inside a
    # line is not taken for a line break.
    return parse_conllu(_decoded_lines(io.BytesIO(data), source), source)


def words_and_tags(sentences, tag="upos"):
    """Split sentences into word sequences and tag sequences.

    Parameters
    ----------
    sentences : list of list of dict
        As returned by :func:`parse_conllu`.
    tag : {"upos", "xpos", "deprel", "lemma"}, default="upos"
        The token field used as the label.

    Returns
    -------
    X : list of list of str
        The word forms of each sentence.
    y : list of list of str
        The tags of each sentence, aligned with ``X``.

    Examples
    --------
    >>> from sksparse_struct.datasets._conllu import words_and_tags
    >>> sentence = [{"form": "Hi", "upos": "INTJ"}, {"form": "!", "upos": "PUNCT"}]
    >>> words_and_tags([sentence])
    ([['Hi', '!']], [['INTJ', 'PUNCT']])
    """
    if tag not in ("upos", "xpos", "deprel", "lemma"):
        raise ValueError(f"tag must be one of 'upos', 'xpos', 'deprel', "
                         f"'lemma'; got {tag!r}")
    X = [[token["form"] for token in sentence] for sentence in sentences]
    y = [[token[tag] for token in sentence] for sentence in sentences]
    return X, y
