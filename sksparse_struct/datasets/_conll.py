"""Readers for CoNLL column files and CoNLL-U, as (X, y) for sequence taggers.

``read_conll`` turns a file into a list of sentences, each a list of token
dicts over the non-label columns (the form ``TokenFeatures`` consumes), and
the list of label sequences. Malformed input raises ``ValueError`` naming
the file and the line.
"""

import re

import numpy as np

from . import _stream
from ._conllu import parse_treebank
from ._stream import BLANK_LINES, TextSource, sentence_pieces, source_name

__all__ = ["iter_conll", "read_conll"]

# The token fields read_conll offers from a CoNLL-U file, in this order;
# "word" is the FORM column, named as in the column files.
CONLLU_FIELDS = ("word", "lemma", "upos", "xpos", "feats")
CONLLU_LABELS = ("upos", "xpos", "lemma")
_FORMATS = ("auto", "conll", "conllu")
_DOCSTART = "-DOCSTART-"
# Columns are separated by ASCII whitespace only; str.split() also splits at
# these characters (no-break space, line separators, ...), which may occur
# inside tokens. Texts holding any of them are read line by line, with the
# regex.
_OTHER_SPACES = ("\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004"
                 "\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
_OTHER_SPACE = re.compile(f"[{_OTHER_SPACES}]")
_ASCII_SPACES = " \t\n\r\f\v"
_ASCII_SPACE = re.compile(r"[ \t\n\r\f\v]+")
# One or more blank (or whitespace-only) lines between two sentences.
_BLANK_LINES = re.compile(r"\n(?:[ \t\r\f\v]*\n)+")
# A line whose first field is the document marker.
_DOCSTART_LINE = re.compile(rf"^[ \t\r\f\v]*{_DOCSTART}(?:[ \t\r\f\v][^\n]*)?$",
                            re.MULTILINE)


def _split_ascii(line):
    line = line.strip(_ASCII_SPACES)
    return _ASCII_SPACE.split(line) if line else []


def _has_other_space(text):
    if text.isascii():
        return any(char in text for char in "\x1c\x1d\x1e\x1f")
    return _OTHER_SPACE.search(text) is not None


def _fields_per_line(text):
    """The number of ASCII-whitespace-separated fields on each line of ``text``.

    Counted on the UTF-8 bytes with a few vectorised NumPy passes rather
    than a regex or a Python loop over the lines: multi-byte characters have
    no ASCII whitespace byte, so the counts are those of the text.
    """
    if not text:
        return np.zeros(1, dtype=np.intp)
    codes = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    newline = codes == ord("\n")
    space = newline.copy()
    for char in " \t\r\f\v":
        space |= codes == ord(char)
    starts = ~space
    starts[1:] &= space[:-1]
    line = np.cumsum(newline)
    return np.bincount(line[starts], minlength=int(line[-1]) + 1)


def _lines(text):
    # Split on "\n" only (a stray "\r" or other Unicode line break inside a
    # line is not a line break); a final newline does not add a line.
    lines = text.split("\n")
    if lines and not lines[-1]:
        lines.pop()
    return lines


def _check_columns(columns, label):
    if isinstance(columns, str) or not hasattr(columns, "__iter__"):
        raise ValueError(
            f"columns must be a tuple of column names such as ('word', 'pos', "
            f"'chunk'); got {columns!r}."
        )
    columns = tuple(columns)
    if not columns:
        raise ValueError("columns must name at least one column.")
    for name in columns:
        if not isinstance(name, str) or not name:
            raise ValueError(f"column names must be non-empty strings; got {name!r} "
                             f"in columns={columns!r}.")
    seen = set()
    for name in columns:
        if name in seen:
            raise ValueError(f"columns contains {name!r} twice: {columns!r}.")
        seen.add(name)
    if label is not None and label not in columns:
        raise ValueError(f"label {label!r} is not one of columns={columns!r}; "
                         "pass label=None to read the columns without labels.")
    return columns


def _token_dicts(keys, cols, n_tokens):
    """One ``{key: value}`` dict per token from per-column lists.

    Dict displays for the usual numbers of columns, which skip the generic
    ``dict(zip(keys, values))`` call per token: building these dicts is most
    of the time of reading a large file.
    """
    if len(keys) == 1:
        (k0,) = keys
        return [{k0: a} for a in cols[0]]
    if len(keys) == 2:
        k0, k1 = keys
        return [{k0: a, k1: b} for a, b in zip(*cols)]
    if len(keys) == 3:
        k0, k1, k2 = keys
        return [{k0: a, k1: b, k2: c} for a, b, c in zip(*cols)]
    if not keys:
        return [{} for _ in range(n_tokens)]
    return [dict(zip(keys, values)) for values in zip(*cols)]


def _parse_columns_fast(text, columns, label):
    """Sentences of a column file whose token lines all have ``len(columns)`` fields.

    One ``str.split`` per sentence and column slices instead of a loop over
    lines.
    """
    n_columns = len(columns)
    keys = tuple(c for c in columns if c != label)
    key_at = [i for i, c in enumerate(columns) if c != label]
    label_at = columns.index(label) if label is not None else None
    X, y = [], []
    for paragraph in _BLANK_LINES.split(text):
        # A document marker not set off by blank lines still ends a sentence.
        blocks = _DOCSTART_LINE.split(paragraph) if _DOCSTART in paragraph else (paragraph,)
        for block in blocks:
            fields = block.split()
            if not fields:
                continue
            n_tokens = len(fields) // n_columns
            cols = [fields[i::n_columns] for i in key_at]
            X.append(_token_dicts(keys, cols, n_tokens))
            if label_at is not None:
                y.append(fields[label_at::n_columns])
    return X, y


def _parse_columns_lines(text, source, columns, label, split, first_line=1):
    """Sentences of a column file, line by line; errors name ``source`` and the line.

    ``text`` starts on line ``first_line`` of the file.
    """
    n_columns = len(columns)
    label_at = columns.index(label) if label is not None else None
    keys = tuple(c for c in columns if c != label)
    X, y = [], []
    tokens, labels = [], []
    for lineno, line in enumerate(_lines(text), start=first_line):
        fields = split(line)
        if not fields or fields[0] == _DOCSTART:
            # A blank line ends a sentence; so does a document marker, whose
            # own blank line that follows is then just one more blank line.
            if tokens:
                X.append(tokens)
                if label_at is not None:
                    y.append(labels)
                tokens, labels = [], []
            continue
        if len(fields) != n_columns:
            raise ValueError(
                f"{source}, line {lineno}: expected {n_columns} whitespace-"
                f"separated columns {columns}, found {len(fields)}: {line.rstrip()!r:.100}"
            )
        if label_at is not None:
            labels.append(fields.pop(label_at))
        tokens.append(dict(zip(keys, fields)))
    if tokens:
        X.append(tokens)
        if label_at is not None:
            y.append(labels)
    return X, y


def _parse_columns(text, source, columns, label, first_line=1):
    """``(X, y)`` of a column file's text, which starts on line ``first_line``."""
    if _has_other_space(text):
        # str.split would cut tokens at these characters.
        return _parse_columns_lines(text, source, columns, label, _split_ascii, first_line)
    n_fields = _fields_per_line(text)
    odd = np.flatnonzero((n_fields != 0) & (n_fields != len(columns)))
    if len(odd):
        lines = text.split("\n")
        if any(lines[i].split()[0] != _DOCSTART for i in odd):
            # Malformed: the line-by-line pass reports where.
            return _parse_columns_lines(text, source, columns, label, str.split, first_line)
    return _parse_columns_fast(text, columns, label)


def _conllu_columns(columns, label, default_columns):
    if label is not None and label not in CONLLU_LABELS:
        raise ValueError(
            f"label must be one of {CONLLU_LABELS} (or None) for a CoNLL-U file; "
            f"got {label!r}."
        )
    if default_columns:
        return CONLLU_FIELDS
    columns = _check_columns(columns, label)
    unknown = [c for c in columns if c not in CONLLU_FIELDS]
    if unknown:
        raise ValueError(
            f"columns of a CoNLL-U file must be among {CONLLU_FIELDS}; got "
            f"{unknown[0]!r} in columns={columns!r}."
        )
    return columns


def _parse_conllu_tokens(piece, source, columns, label, first_line=1):
    # The treebank parser, with HEAD free to be "_": a tagger's files need no
    # trees (a tagger's own output on plain text has none).
    sentences = parse_treebank(piece, source, first_line, heads_required=False)[0]
    fields = {"word": "form", "lemma": "lemma", "upos": "upos", "xpos": "xpos",
              "feats": "feats"}
    keys = [(c, fields[c]) for c in columns if c != label]
    X = [[{key: word[field] for key, field in keys} for word in sentence]
         for sentence in sentences]
    y = []
    if label is not None:
        y = [[word[label] for word in sentence] for sentence in sentences]
    return X, y


def read_conll(path, columns=("word", "pos", "chunk"), label="chunk", *, format="auto",
               encoding="utf-8"):
    """Read a CoNLL column file or a CoNLL-U file into token dicts and labels.

    **Column files** (CoNLL-2000 chunking, CoNLL-2002 / CoNLL-2003 named
    entities): one token per line, its fields separated by spaces or tabs;
    a blank line after each sentence. ``-DOCSTART-`` lines are skipped
    (they also end a sentence). Several blank lines in a row, trailing
    whitespace, Windows line endings (CRLF) and a missing final newline
    are accepted. Every token line must have exactly ``len(columns)``
    fields.

    **CoNLL-U** (Universal Dependencies), for tagging: read with the
    package's strict CoNLL-U parser. Each token dict has the keys
    ``"word"`` (the FORM column, named like the column files' word so that
    ``TokenFeatures`` reads it), ``"lemma"``, ``"upos"``, ``"xpos"`` and
    ``"feats"`` (the FEATS column as written, ``"_"`` when empty), minus the
    label. Only syntactic words are kept: multiword-token lines (ID
    ``1-2``, e.g. "don't", whose words "do" and "n't" follow) and empty
    nodes (ID ``8.1``) are skipped. The trees are not read: HEAD may be
    ``"_"``, as in a tagger's output on plain text.

    Parameters
    ----------
    path : str, os.PathLike or file object
        The file, plain or gzip-compressed (recognised from the content). A
        file object may be opened in text or binary mode.
    columns : tuple of str, default=("word", "pos", "chunk")
        Column files: the name of each column, in order; the names become
        the keys of the token dicts. CoNLL-U: the token fields to keep,
        among ``("word", "lemma", "upos", "xpos", "feats")``; left at its
        default it means all five.
    label : str or None, default="chunk"
        The column holding the labels, one of ``columns``; for CoNLL-U one
        of ``"upos"``, ``"xpos"``, ``"lemma"``. ``None`` reads every column
        into the token dicts and returns ``X`` only.
    format : {"auto", "conll", "conllu"}, default="auto"
        ``"conll"`` for column files, ``"conllu"`` for CoNLL-U. ``"auto"``
        reads CoNLL-U when the file name ends in ``.conllu`` or
        ``.conllu.gz``, column files otherwise.
    encoding : str, default="utf-8"
        The text encoding of a path or a binary file object (the CoNLL-2002
        Spanish and Dutch files are ``"latin-1"``).

    Returns
    -------
    X : list of list of dict
        One list per sentence, one ``{column: str}`` dict per token, over
        the columns other than ``label``.
    y : list of list of str
        The labels of each sentence, aligned with ``X``. Not returned when
        ``label=None``.

    Raises
    ------
    ValueError
        On a bad argument, or on malformed input, naming the file and the
        1-based line number: a token line whose number of fields is not
        ``len(columns)``, text that is not valid in ``encoding``, truncated
        or corrupt gzip data, or any CoNLL-U error of the strict parser.

    See Also
    --------
    iter_conll : The same sentences, lazily, one at a time.
    read_conllu : Dependency treebanks in CoNLL-U.

    Examples
    --------
    >>> import io
    >>> from sksparse_struct.datasets import read_conll
    >>> text = '''-DOCSTART- -X- O
    ...
    ... He PRP B-NP
    ... reckons VBZ B-VP
    ...
    ... Rates NNS B-NP
    ... '''
    >>> X, y = read_conll(io.StringIO(text))
    >>> X[0]
    [{'word': 'He', 'pos': 'PRP'}, {'word': 'reckons', 'pos': 'VBZ'}]
    >>> y
    [['B-NP', 'B-VP'], ['B-NP']]

    Named entities, CoNLL-2003 style, read with any column as the label:

    >>> X, y = read_conll(io.StringIO("EU NNP B-NP B-ORG\\nrejects VBZ B-VP O\\n"),
    ...                   columns=("word", "pos", "chunk", "ner"), label="ner")
    >>> X[0][0], y
    ({'word': 'EU', 'pos': 'NNP', 'chunk': 'B-NP'}, [['B-ORG', 'O']])

    A CoNLL-U file, tagged with universal POS tags; the multiword token
    "don't" is read as its two words:

    >>> conllu = '''1\\tI\\tI\\tPRON\\tPRP\\t_\\t3\\tnsubj\\t_\\t_
    ... 2-3\\tdon't\\t_\\t_\\t_\\t_\\t_\\t_\\t_\\t_
    ... 2\\tdo\\tdo\\tAUX\\tVBP\\tMood=Ind\\t3\\taux\\t_\\t_
    ... 3\\tn't\\tnot\\tPART\\tRB\\t_\\t0\\troot\\t_\\t_
    ... '''
    >>> X, y = read_conll(io.StringIO(conllu), format="conllu", label="upos")
    >>> [t["word"] for t in X[0]], y[0]
    (['I', 'do', "n't"], ['PRON', 'AUX', 'PART'])
    >>> X[0][1]
    {'word': 'do', 'lemma': 'do', 'xpos': 'VBP', 'feats': 'Mood=Ind'}
    """
    format, columns = _conll_options(path, columns, label, format)
    X, y = [], []
    for X_piece, y_piece in _conll_pieces(TextSource(path, encoding), format, columns, label):
        X.extend(X_piece)
        y.extend(y_piece)
    if label is None:
        return X
    return X, y


def iter_conll(path, columns=("word", "pos", "chunk"), label="chunk", *, format="auto",
               encoding="utf-8"):
    """Read a CoNLL column file or a CoNLL-U file lazily, one sentence at a time.

    The sentences of :func:`read_conll`, read and given as the iteration
    reaches them: the file is read, gunzipped and parsed a piece of a few
    hundred kilobytes at a time, so that a corpus of any size takes a few
    megabytes of memory. The parameters, the values and the errors are
    those of :func:`read_conll`, which reads files the same way and keeps
    every sentence.

    Parameters
    ----------
    path : str, os.PathLike or file object
        The file, plain or gzip-compressed (recognised from the content). A
        file object may be opened in text or binary mode; it is read from
        where it stands, and not closed.
    columns : tuple of str, default=("word", "pos", "chunk")
        The columns, as in :func:`read_conll`.
    label : str or None, default="chunk"
        The column holding the labels, as in :func:`read_conll`.
    format : {"auto", "conll", "conllu"}, default="auto"
        As in :func:`read_conll`.
    encoding : str, default="utf-8"
        The text encoding of a path or a binary file object.

    Yields
    ------
    tokens : list of dict
        One ``{column: str}`` dict per token of a sentence, in the order of
        the file. With ``label=None``, only these.
    labels : list of str
        The labels of the sentence's tokens, when ``label`` is not None:
        each item is then a pair ``(tokens, labels)``.

    Raises
    ------
    ValueError
        At the call, on a bad argument. During the iteration, on malformed
        input, naming the file and the line (the errors of
        :func:`read_conll`); the iteration stops there, possibly before
        giving the sentences just before the error (those of the same piece
        of the file).
    OSError
        At the call, if ``path`` cannot be opened.

    See Also
    --------
    read_conll : The whole file at once.
    iter_conllu : Dependency trees, lazily.
    predict_file : Tag or parse a file of any size, in parallel.

    Examples
    --------
    >>> import io
    >>> from sksparse_struct.datasets import iter_conll
    >>> text = '''He PRP B-NP
    ... reckons VBZ B-VP
    ...
    ... Rates NNS B-NP
    ... '''
    >>> for tokens, labels in iter_conll(io.StringIO(text)):
    ...     print([t["word"] for t in tokens], labels)
    ['He', 'reckons'] ['B-NP', 'B-VP']
    ['Rates'] ['B-NP']

    A tagger's accuracy on a corpus of any size, a thousand sentences at a
    time (``tagger`` fitted as in the user guide)::

        from itertools import islice

        sentences = iter_conll("big.conllu", label="upos")
        n_right = n_words = 0
        while batch := list(islice(sentences, 1000)):
            X, y = zip(*batch)
            for gold, predicted in zip(y, tagger.predict(list(X))):
                n_right += sum(a == b for a, b in zip(gold, predicted))
                n_words += len(gold)
    """
    format, columns = _conll_options(path, columns, label, format)
    text = TextSource(path, encoding)
    text.check_readable()
    return _iter_conll(text, format, columns, label)


def _iter_conll(text, format, columns, label):
    for X, y in _conll_pieces(text, format, columns, label):
        if label is None:
            yield from X
        else:
            yield from zip(X, y)


def _conll_options(path, columns, label, format):
    """The checked ``(format, columns)`` of read_conll and iter_conll."""
    if format not in _FORMATS:
        raise ValueError(f"format must be 'auto', 'conll' or 'conllu'; got {format!r}.")
    if format == "auto":
        is_conllu = source_name(path).lower().endswith((".conllu", ".conllu.gz"))
        format = "conllu" if is_conllu else "conll"
    if format == "conllu":
        default_columns = columns == ("word", "pos", "chunk")
        return format, _conllu_columns(columns, label, default_columns)
    return format, _check_columns(columns, label)


def _conll_pieces(text, format, columns, label):
    """``(X, y)`` of each piece of a file (``text``, a :class:`TextSource`)."""
    for piece, first_line in sentence_pieces(text.fragments(), BLANK_LINES[format],
                                             min_chars=_stream.PIECE_CHARS):
        if format == "conllu":
            yield _parse_conllu_tokens(piece, text.source, columns, label, first_line)
        else:
            yield _parse_columns(piece, text.source, columns, label, first_line)
