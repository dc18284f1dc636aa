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

import io
import os
import re

from ._compression import gunzip_if_compressed

__all__ = ["UPOS_TAGS", "Sentence", "feats_error", "parse_conllu", "parse_treebank",
           "read_conllu_sentences", "words_and_tags"]

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
# CoNLL-U allows spaces only in FORM, LEMMA and MISC; of the other columns,
# ID, UPOS, FEATS and HEAD have stricter checks of their own.
_SPACE = re.compile(r"\s")
_NO_SPACE_COLUMNS = (4, 7, 8)  # XPOS, DEPREL, DEPS


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


def _check_no_space(cols, word_id, source, lineno):
    for k in _NO_SPACE_COLUMNS:
        if _SPACE.search(cols[k]):
            _fail(source, lineno, f"{_COLUMNS[k]} {cols[k]!r} of word {word_id} contains "
                  "a space; CoNLL-U allows spaces only in FORM, LEMMA and MISC")


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
    _check_no_space(cols, word_id, source, lineno)
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


def parse_conllu(lines, source="<string>", first_line=1):
    """Parse CoNLL-U lines into sentences, strictly.

    Parameters
    ----------
    lines : iterable of str
        The lines of a CoNLL-U document, with or without their line endings
        (``"\\n"`` or ``"\\r\\n"``).
    source : str, default="<string>"
        Name used in error messages (usually the file name).
    first_line : int, default=1
        The line number of the first line, for error messages (when
        ``lines`` are a part of a file that starts with a sentence).

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
        tag, malformed FEATS, a space in XPOS, DEPREL or DEPS (CoNLL-U
        allows spaces only in FORM, LEMMA and MISC), a comment after the
        first token line of a sentence, or a sentence without words.

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
    lineno = first_line - 1
    for lineno, line in enumerate(lines, start=first_line):
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
        On malformed input or invalid UTF-8, naming the file and the line;
        on truncated or corrupt gzip data, naming the file and the last
        line that could be decompressed.
    """
    source = os.fspath(path)
    with open(path, "rb") as f:
        return read_conllu_binary(f, source)


def read_conllu_binary(fileobj, source):
    """Parse an open binary CoNLL-U file object, gunzipping it if needed.

    Split out of :func:`read_conllu_sentences` so that package resources,
    which need not be plain files, are read the same way as paths.
    """
    data = gunzip_if_compressed(fileobj.read(), source)
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


# --------------------------------------------------------------------------
# Fast path for whole treebanks (``read_conllu``)
#
# The same checks as ``parse_conllu``, arranged so that the common case costs
# a split, a few dict/set look-ups and a dict per word: ``parse_conllu`` runs
# regexes on every line, too slow for treebanks of hundreds of thousands of
# words. Heads are checked for trees afterwards, for all sentences at
# once, with NumPy.

# ID and HEAD strings of the common case, looked up instead of parsed, which
# also keeps them strict ("+1", " 1", "01" or "١" are not found).
_ID_TEXT = tuple(str(i) for i in range(1024))
_HEAD_VALUE = {text: i for i, text in enumerate(_ID_TEXT)}
# Where HEAD need not be given (text to be parsed): "_" reads as -1.
_HEAD_OR_BLANK = {**_HEAD_VALUE, "_": -1}
_UPOS_OR_BLANK = _UPOS_SET | {"_"}


def feats_error(text):
    """What is wrong with a FEATS column, or ``None`` if it is well formed."""
    if text == "_":
        return None
    names = set()
    for item in text.split("|"):
        if not _FEATURE.fullmatch(item):
            return f"FEATS item {item!r} is not of the form Name=Value"
        name = item.partition("=")[0]
        if name in names:
            return f"feature {name!r} is given twice in FEATS"
        names.add(name)
    return None


def _check_token_line(cols, n_words, source, lineno):
    """Error for a token line the fast path could not take, or ``None``.

    ``None`` means the line is a multiword range or an empty node (skipped).
    """
    if len(cols) != 10:
        _fail(source, lineno, f"expected 10 tab-separated columns, found {len(cols)}")
    for name, col in zip(_COLUMNS, cols):
        if not col:
            _fail(source, lineno, f"column {name} is empty")
    if _WORD_ID.fullmatch(cols[0]):
        word_id = int(cols[0])
        if word_id != n_words + 1:
            _fail(source, lineno, f"word ID {word_id} is out of sequence "
                  f"(expected {n_words + 1})")
        return word_id
    if match := _RANGE_ID.fullmatch(cols[0]):
        if int(match.group(1)) >= int(match.group(2)):
            _fail(source, lineno, f"multiword range {cols[0]!r} is empty")
        return None
    if not _EMPTY_ID.fullmatch(cols[0]):
        _fail(source, lineno, f"ID {cols[0]!r} is not a positive integer, "
              "a range like '1-2' or an empty node like '8.1'")
    return None


def _comment_metadata(comments):
    # "# key = value" -> key: value; a bare "# remark" -> "remark": None.
    metadata = {}
    for line in comments:
        key, eq, value = line[1:].partition("=")
        metadata[key.strip()] = value.strip() if eq else None
    return metadata


def _parse_block_lines(lines, first_line, source, seen_feats, head_values=_HEAD_VALUE):
    """Words of one sentence, line by line: the path for every unusual case.

    ``lines`` are the token lines of the sentence, the first on line
    ``first_line``. Returns ``(tokens, heads, deprels, word_lines)``.
    ``head_values`` is ``_HEAD_OR_BLANK`` when HEAD may be ``"_"`` and is
    not checked against the sentence.
    """
    tokens, heads, deprels, word_lines, multiword = [], [], [], [], []
    range_line = 0
    for lineno, line in enumerate(lines, start=first_line):
        if line[0] == "#":
            _fail(source, lineno, "comment line after the token lines of a "
                  "sentence (a blank line must end each sentence)")
        cols = line.split("\t")
        n_words = len(tokens)
        if _check_token_line(cols, n_words, source, lineno) is None:
            if match := _RANGE_ID.fullmatch(cols[0]):
                first, last = int(match.group(1)), int(match.group(2))
                previous = multiword[-1][1] if multiword else 0
                if first != n_words + 1 or first <= previous:
                    _fail(source, lineno, f"multiword range {cols[0]!r} is out of "
                          f"place: it must come right before word {first} (the next "
                          f"word here is {n_words + 1}) and after the words of any "
                          "earlier range")
                multiword.append((first, last, cols[1]))
                range_line = lineno
            continue
        head = head_values.get(cols[6])
        if head is None:
            if not _HEAD.fullmatch(cols[6]):
                _fail(source, lineno, f"HEAD {cols[6]!r} of word {n_words + 1} is "
                      "not a non-negative integer"
                      + (" or '_'" if head_values is _HEAD_OR_BLANK else ""))
            head = int(cols[6])
            if head > len(lines) and head_values is _HEAD_VALUE:
                # Out of range for sure (and perhaps too large for an int64):
                # report it here, as the tree check would.
                n = sum(1 for other in lines if _WORD_ID.fullmatch(other.partition("\t")[0]))
                _fail(source, lineno, f"HEAD {head} of word {n_words + 1} is out of "
                      f"range: the sentence has {n} words")
        if cols[3] not in _UPOS_OR_BLANK:
            _fail(source, lineno, f"UPOS {cols[3]!r} of word {n_words + 1} is not "
                  "one of the 17 universal POS tags")
        _check_no_space(cols, n_words + 1, source, lineno)
        feats = cols[5]
        if feats not in seen_feats:
            problem = feats_error(feats)
            if problem is not None:
                _fail(source, lineno, problem)
            seen_feats.add(feats)
        tokens.append({"form": cols[1], "lemma": cols[2], "upos": cols[3],
                       "xpos": cols[4], "feats": feats})
        heads.append(head)
        deprels.append(cols[7])
        word_lines.append(lineno)
    if not tokens:
        _fail(source, first_line + len(lines), "sentence has no word lines")
    if multiword and multiword[-1][1] > len(tokens):
        _fail(source, range_line, f"multiword range {multiword[-1][0]}-{multiword[-1][1]} "
              f"goes past the last word ({len(tokens)})")
    return tokens, heads, deprels, multiword, word_lines


def _parse_block_fast(lines, seen_feats, may_have_empty_column=True, head_values=_HEAD_VALUE):
    """Words of one sentence, column-wise; ``None`` if it needs a closer look.

    Handles sentences with 10 non-empty columns on every line, words
    numbered 1..n (between well-formed multiword ranges and empty nodes),
    HEADs below 1024 and valid UPOS and FEATS. Anything else (including
    every error) is left to :func:`_parse_block_lines`.
    """
    rows = [line.split("\t") for line in lines]
    if set(map(len, rows)) != {10}:
        return None
    cols = tuple(zip(*rows))
    if may_have_empty_column and any("" in col for col in cols):
        return None
    n = len(rows)
    if n >= len(_ID_TEXT):
        return None
    multiword = []
    if cols[0] != _ID_TEXT[1:n + 1]:
        # Set multiword ranges and empty nodes aside (after checking them).
        words = []
        for row in rows:
            if "-" in row[0]:
                match = _RANGE_ID.fullmatch(row[0])
                if match is None:
                    return None
                first, last = int(match.group(1)), int(match.group(2))
                previous = multiword[-1][1] if multiword else 0
                if first >= last or first != len(words) + 1 or first <= previous:
                    return None
                multiword.append((first, last, row[1]))
            elif "." in row[0]:
                if not _EMPTY_ID.fullmatch(row[0]):
                    return None
            else:
                words.append(row)
        if not words:
            return None
        cols = tuple(zip(*words))
        if cols[0] != _ID_TEXT[1:len(words) + 1]:
            return None
        if multiword and multiword[-1][1] > len(words):
            return None
    if not _UPOS_OR_BLANK.issuperset(cols[3]):
        return None
    # Joined, the columns have a space if and only if one of their fields has.
    if _SPACE.search("".join(cols[4] + cols[7] + cols[8])):
        return None
    if not seen_feats.issuperset(cols[5]):
        new = set(cols[5]).difference(seen_feats)
        if any(feats_error(feats) is not None for feats in new):
            return None
        seen_feats.update(new)
    try:
        heads = list(map(head_values.__getitem__, cols[6]))
    except KeyError:
        return None
    tokens = [{"form": f, "lemma": lem, "upos": u, "xpos": x, "feats": ft}
              for f, lem, u, x, ft in zip(cols[1], cols[2], cols[3], cols[4], cols[5])]
    return tokens, heads, list(cols[7]), multiword


def parse_treebank(text, source="<string>", first_line=1, *, heads_required=True):
    """Parse a CoNLL-U text into the columns of a treebank, fast and strictly.

    Checks everything :func:`parse_conllu` checks, except that HEADs are
    only checked to be non-negative integers here:
    :func:`sksparse_struct.utils.first_bad_tree` and
    :func:`sksparse_struct.utils.tree_error` check the trees.

    Sentences are cut at blank lines with ``str.split``; a sentence whose
    lines are all plain word lines is then parsed column by column with
    C-level operations (``zip``, tuple comparison, set inclusion), and any
    other sentence line by line, which also finds the line of every error.

    Parameters
    ----------
    text : str
        The whole document ("\\n" or "\\r\\n" line ends), or a part of it
        that starts with a sentence.
    source : str, default="<string>"
        Name used in error messages.
    first_line : int, default=1
        The line number of the first line of ``text`` in the document.
    heads_required : bool, default=True
        If False, a HEAD may also be ``"_"`` (read as -1), for text yet to
        be parsed, and HEADs are not compared with the sentence length.

    Returns
    -------
    tokens : list of list of dict
        Per sentence, one dict per syntactic word with the keys ``form``,
        ``lemma``, ``upos``, ``xpos`` and ``feats`` (FEATS as written).
    heads : list of int
        The HEAD column of all the sentences, one after the other.
    lengths : list of int
        The number of words of each sentence.
    deprels : list of list of str
        Per sentence, the DEPREL column.
    metadata : list of dict
        Per sentence, its comments (see :func:`_comment_metadata`).
    multiword : list of list of tuple
        Per sentence, its multiword tokens as ``(first, last, form)``.
    first_lines : list of int
        Per sentence, the 1-based line number of its first token line.
    """
    if "\r" in text:
        # Strip the "\r" of line ends only; one inside a line stays there.
        text = re.sub(r"\r+(?=\n|\Z)", "", text)
    all_tokens, flat_heads, lengths, all_deprels = [], [], [], []
    all_metadata, all_multiword, first_lines = [], [], []
    seen_feats = {"_"}  # FEATS strings already checked
    head_values = _HEAD_VALUE if heads_required else _HEAD_OR_BLANK
    lineno = first_line  # of the first line of the current block
    for block in text.split("\n\n"):
        block_start = lineno
        lineno += block.count("\n") + 2
        lines = block.split("\n")
        # Runs of blank lines leave empty lines at the ends of blocks.
        start, stop = 0, len(lines)
        while start < stop and not lines[start]:
            start += 1
        while stop > start and not lines[stop - 1]:
            stop -= 1
        if start == stop:
            continue
        first = start
        while first < stop and lines[first][0] == "#":
            first += 1
        if first == stop:
            # The blank line after the comments, or the last line of the file.
            last_line = first_line + text.count("\n") - text.endswith("\n")
            _fail(source, min(block_start + stop, last_line),
                  "comment lines are not followed by any token line")
        # A block holds no blank line: "\n\n" would have split it.
        token_lines = lines[first:stop]
        # An empty column shows as two tabs in a row or a tab at a line end;
        # looking for them in the block text is a cheap conservative test.
        suspect = ("\t\t" in block or "\t\n" in block or "\n\t" in block
                   or block[:1] == "\t" or block[-1:] == "\t")
        parsed = _parse_block_fast(token_lines, seen_feats, suspect, head_values)
        if parsed is None:
            parsed = _parse_block_lines(token_lines, block_start + first, source,
                                        seen_feats, head_values)[:4]
        tokens, heads, deprels, multiword = parsed
        all_tokens.append(tokens)
        flat_heads.extend(heads)
        lengths.append(len(heads))
        all_deprels.append(deprels)
        all_metadata.append(_comment_metadata(lines[start:first]))
        all_multiword.append(multiword)
        first_lines.append(block_start + first)
    return (all_tokens, flat_heads, lengths, all_deprels, all_metadata, all_multiword,
            first_lines)


def sentence_word_lines(text, first_line, source="<string>", text_first_line=1):
    """The line number of each word of the sentence starting on ``first_line``.

    For error messages only: re-reads that one sentence line by line.
    ``text`` starts on line ``text_first_line`` of the document.
    """
    lines = text.split("\n")[first_line - text_first_line:]
    stop = next((k for k, line in enumerate(lines) if not line.rstrip("\r")), len(lines))
    lines = [line.rstrip("\r") for line in lines[:stop]]
    return _parse_block_lines(lines, first_line, source, set())[4]
