"""Dependency treebanks in CoNLL-U: ``read_conllu`` and ``write_conllu``.

A treebank is ``(X, heads)``: ``X`` a list of sentences, each a list of
token dicts, and ``heads`` a list of int64 arrays, ``heads[i][j]`` the head
of word ``j + 1`` of sentence ``i`` (0 for the root), as in the HEAD column.
Relation labels and comment metadata come on request. Both functions check
that every sentence is a tree, so that a broken file or a broken prediction
fails here, naming the sentence and the line, rather than in a parser or in
the official evaluation script.
"""


import numpy as np

from ..utils import first_bad_tree, tree_error
from . import _stream
from ._conllu import (
    _SPACE,
    _UPOS_OR_BLANK,
    feats_error,
    parse_treebank,
    sentence_word_lines,
)
from ._stream import BLANK_LINES, TextSource, gc_paused, sentence_pieces, source_name

__all__ = ["iter_conllu", "read_conllu", "write_conllu"]

# The token-dict keys written to, and read from, the columns FORM..FEATS.
_TOKEN_KEYS = ("form", "lemma", "upos", "xpos", "feats")
_COLUMN_NAMES = ("ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS",
                 "MISC")


def _check_bool(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False; got {value!r}.")
    return bool(value)


def _sentence_name(i, metadata):
    """Sentence ``i`` (0-based) of the file, whose comments are ``metadata``."""
    sent_id = metadata.get("sent_id")
    return f"sentence {i + 1}" + (f" (sent_id {sent_id})" if sent_id else "")


def _treebank_pieces(text, single_root):
    """The sentences of a CoNLL-U file, a piece of the file at a time.

    Yields ``(tokens, heads, deprels, metadata, multiword)`` for each piece
    of ``text`` (a :class:`TextSource`), as :func:`read_conllu` returns
    them, every tree checked.
    """
    n_before = 0  # sentences in the pieces before
    for piece, piece_line in sentence_pieces(text.fragments(), BLANK_LINES["conllu"],
                                             min_chars=_stream.PIECE_CHARS):
        with gc_paused():
            (tokens, flat, lengths, deprels, metadata, multiword,
             first_lines) = parse_treebank(piece, text.source, piece_line)
        flat = np.array(flat, dtype=np.int64)
        lengths = np.array(lengths, dtype=np.int64)
        bad = first_bad_tree(flat, lengths, single_root)
        if bad is not None:
            start = int(lengths[:bad].sum())
            word, message = tree_error(flat[start:start + lengths[bad]].tolist(), single_root)
            word_line = sentence_word_lines(piece, first_lines[bad], text.source,
                                            piece_line)[word - 1]
            raise ValueError(f"{text.source}, line {word_line}: "
                             f"{_sentence_name(n_before + bad, metadata[bad])}: {message}")
        # Own arrays rather than views of one buffer: pickling or editing one
        # sentence must not drag in or change the others.
        heads = [h.copy() for h in np.split(flat, np.cumsum(lengths[:-1]))] if tokens else []
        n_before += len(tokens)
        yield tokens, heads, deprels, metadata, multiword


def _treebank_outputs(return_deprel, return_metadata, return_multiword):
    """Which of ``(tokens, heads, deprels, metadata, multiword)`` to give, as indices."""
    wanted = (_check_bool(return_deprel, "return_deprel"),
              _check_bool(return_metadata, "return_metadata"),
              _check_bool(return_multiword, "return_multiword"))
    return (0, 1) + tuple(k for k, w in zip((2, 3, 4), wanted) if w)


def read_conllu(path, *, return_deprel=False, return_metadata=False,
                return_multiword=False, single_root=False, encoding="utf-8"):
    """Read a CoNLL-U dependency treebank (Universal Dependencies).

    Only the basic tree over syntactic words is read: multiword-token lines
    (ID ``1-2``, e.g. "don't", whose words "do" and "n't" follow) are set
    aside (see ``return_multiword``) and empty nodes of the enhanced graph
    (ID ``8.1``) skipped, after checking their form; the words of each
    sentence must be numbered 1, 2, ..., n. The DEPS and MISC columns are
    checked to be present and otherwise ignored.

    Parameters
    ----------
    path : str, os.PathLike or file object
        The file, plain or gzip-compressed (recognised from the content,
        whatever the name). A file object may be opened in text or binary
        mode.
    return_deprel : bool, default=False
        Also return the DEPREL column.
    return_metadata : bool, default=False
        Also return the comments of each sentence.
    return_multiword : bool, default=False
        Also return the multiword tokens of each sentence, which
        :func:`write_conllu` can write back so that the official scorer
        matches a predicted file to the gold one in languages whose words
        do not spell out their tokens (French "du" = "de" + "le").
    single_root : bool, default=False
        Require exactly one word attached to the root in every sentence, as
        the UD guidelines and the official evaluation script
        (``conll18_ud_eval.py``) do. The default accepts several, as some
        non-UD dependency treebanks have them; a sentence with none is an
        error either way (its heads would form a cycle).
    encoding : str, default="utf-8"
        Text encoding of the file (CoNLL-U files are UTF-8).

    Returns
    -------
    X : list of list of dict
        One list per sentence, one dict per word with the keys ``"form"``,
        ``"lemma"``, ``"upos"``, ``"xpos"`` and ``"feats"`` (the columns as
        written: ``"_"`` when unspecified, FEATS as one string such as
        ``"Number=Sing|Person=3"``).
    heads : list of ndarray of shape (n_words,), dtype int64
        The HEAD column of each sentence: ``heads[i][j]`` is the 1-based
        index of the head of word ``j + 1``, 0 for the root.
    deprels : list of list of str
        The DEPREL column of each sentence. Only if ``return_deprel``.
    metadata : list of dict
        The comments of each sentence, in order: ``# key = value`` gives
        ``metadata[i][key] == value`` (``sent_id``, ``text``, ``newdoc id``,
        ...), a bare ``# remark`` gives ``metadata[i]["remark"] is None``.
        :func:`write_conllu` writes them back. Only if
        ``return_metadata``.
    multiword : list of list of tuple
        The multiword tokens of each sentence, as ``(first, last, form)``:
        ``(2, 3, "don't")`` for the line ``2-3  don't ...``. Only if
        ``return_multiword``. The optional outputs come in this order:
        ``deprels``, ``metadata``, ``multiword``.

    Raises
    ------
    ValueError
        On malformed input, naming the file, the line and, for trees, the
        sentence: a token line without 10 tab-separated columns or with an
        empty column; an ID that is not an integer, a range or an empty
        node; words not numbered 1, 2, ..., n; a multiword range that is
        empty, overlaps the previous one, does not come right before its
        first word or goes past the last word; a HEAD that is not a
        non-negative integer, is larger than n or is the word itself; an
        unknown UPOS tag; malformed FEATS; a sentence with no word attached
        to the root; heads forming a cycle (the words of the cycle are
        listed); with ``single_root``, two or more words attached to the
        root (all listed); a space in XPOS, DEPREL or DEPS (CoNLL-U allows
        spaces only in FORM, LEMMA and MISC); a comment inside a sentence;
        comments not followed by a sentence; text not in ``encoding``; a
        truncated or corrupt gzip file (naming the last line that could be
        decompressed).

    See Also
    --------
    iter_conllu : The same sentences, lazily, one at a time.
    write_conllu : Write a treebank (e.g. predicted heads) as CoNLL-U.
    read_conll : CoNLL-U (and other CoNLL files) as token and tag sequences.

    Examples
    --------
    >>> import io
    >>> from sksparse_struct.datasets import read_conllu
    >>> conllu = '''# sent_id = s1
    ... # text = I don't know
    ... 1\\tI\\tI\\tPRON\\tPRP\\tCase=Nom\\t4\\tnsubj\\t_\\t_
    ... 2-3\\tdon't\\t_\\t_\\t_\\t_\\t_\\t_\\t_\\t_
    ... 2\\tdo\\tdo\\tAUX\\tVBP\\t_\\t4\\taux\\t_\\t_
    ... 3\\tn't\\tnot\\tPART\\tRB\\t_\\t4\\tadvmod\\t_\\t_
    ... 4\\tknow\\tknow\\tVERB\\tVB\\t_\\t0\\troot\\t_\\t_
    ... '''
    >>> X, heads, deprels = read_conllu(io.StringIO(conllu), return_deprel=True)
    >>> [token["form"] for token in X[0]], heads[0].tolist()
    (['I', 'do', "n't", 'know'], [4, 4, 4, 0])
    >>> X[0][0]
    {'form': 'I', 'lemma': 'I', 'upos': 'PRON', 'xpos': 'PRP', 'feats': 'Case=Nom'}
    >>> deprels[0]
    ['nsubj', 'aux', 'advmod', 'root']
    >>> read_conllu(io.StringIO(conllu.replace("\\t0\\troot", "\\t2\\troot")))
    Traceback (most recent call last):
    ...
    ValueError: <file object>, line 5: sentence 1 (sent_id s1): no word is attached
    to the root (HEAD 0): words 2 -> 4 -> 2 form a cycle
    """
    outputs = _treebank_outputs(return_deprel, return_metadata, return_multiword)
    single_root = _check_bool(single_root, "single_root")
    columns = ([], [], [], [], [])
    with gc_paused():
        for piece in _treebank_pieces(TextSource(path, encoding), single_root):
            for column, values in zip(columns, piece):
                column.extend(values)
    return tuple(columns[k] for k in outputs)


def iter_conllu(path, *, return_deprel=False, return_metadata=False,
                return_multiword=False, single_root=False, encoding="utf-8"):
    """Read a CoNLL-U treebank lazily, one sentence at a time.

    The sentences of :func:`read_conllu`, read, checked and given as the
    iteration reaches them: the file is read, gunzipped and parsed a piece
    of a few hundred kilobytes at a time, so that a treebank of any size
    takes a few megabytes of memory. The options, the values and the errors
    are those of :func:`read_conllu`, which reads files the same way and
    keeps every sentence.

    Parameters
    ----------
    path : str, os.PathLike or file object
        The file, plain or gzip-compressed (recognised from the content,
        whatever the name). A file object may be opened in text or binary
        mode; it is read from where it stands, and not closed.
    return_deprel : bool, default=False
        Also give the DEPREL column of each sentence.
    return_metadata : bool, default=False
        Also give the comments of each sentence.
    return_multiword : bool, default=False
        Also give the multiword tokens of each sentence.
    single_root : bool, default=False
        Require exactly one word attached to the root in every sentence.
    encoding : str, default="utf-8"
        Text encoding of the file (CoNLL-U files are UTF-8).

    Yields
    ------
    sentence : tuple
        ``(tokens, heads)`` for each sentence, in the order of the file,
        followed by ``deprels``, ``metadata`` and ``multiword`` when asked
        for, in this order: for each sentence, its entries of the lists
        that :func:`read_conllu` returns.

    Raises
    ------
    ValueError
        At the call, on a bad option. During the iteration, on malformed
        input, naming the file, the line and, for trees, the sentence
        (the errors of :func:`read_conllu`); the iteration stops there,
        possibly before giving the sentences just before the error (those
        of the same piece of the file).
    OSError
        At the call, if ``path`` cannot be opened.

    See Also
    --------
    read_conllu : The whole treebank at once.
    iter_conll : Token dicts and labels for taggers, lazily.
    predict_file : Tag or parse a file of any size, in parallel.

    Examples
    --------
    >>> import io
    >>> from sksparse_struct.datasets import iter_conllu
    >>> conllu = '''1\\tDogs\\tdog\\tNOUN\\tNNS\\t_\\t2\\tnsubj\\t_\\t_
    ... 2\\tbark\\tbark\\tVERB\\tVBP\\t_\\t0\\troot\\t_\\t_
    ...
    ... 1\\tHi\\thi\\tINTJ\\tUH\\t_\\t0\\troot\\t_\\t_
    ... '''
    >>> for tokens, heads, deprels in iter_conllu(io.StringIO(conllu), return_deprel=True):
    ...     print([t["form"] for t in tokens], heads.tolist(), deprels)
    ['Dogs', 'bark'] [2, 0] ['nsubj', 'root']
    ['Hi'] [0] ['root']

    Batches of sentences, e.g. to parse them a thousand at a time:

    >>> from itertools import islice
    >>> sentences = iter_conllu(io.StringIO(conllu))
    >>> while batch := list(islice(sentences, 1000)):
    ...     X = [tokens for tokens, heads in batch]
    ...     print(len(X), "sentences")
    2 sentences
    """
    outputs = _treebank_outputs(return_deprel, return_metadata, return_multiword)
    single_root = _check_bool(single_root, "single_root")
    text = TextSource(path, encoding)
    text.check_readable()
    return _iter_treebank(text, single_root, outputs)


def _iter_treebank(text, single_root, outputs):
    for piece in _treebank_pieces(text, single_root):
        yield from zip(*(piece[k] for k in outputs))


def _check_field(value, what):
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a str; got {type(value).__name__} {value!r}.")
    if not value or value.isspace():
        raise ValueError(f"{what} is empty; write '_' for an unspecified field.")
    if "\t" in value or "\n" in value or "\r" in value:
        raise ValueError(f"{what} contains a tab or a line break: {value!r}.")
    _check_encodable(value, what)
    return value


def _check_encodable(value, what):
    # A str fails to encode as UTF-8 only when it holds a lone surrogate
    # (e.g. from bytes decoded with errors="surrogateescape").
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"{what} cannot be written as UTF-8: {value!r} holds the lone "
                             f"surrogate U+{ord(value[exc.start]):04X}.") from None


def _feats_string(feats, what):
    """A FEATS dict (as load_ewt_sample gives them) as CoNLL-U's string.

    Sorted by name, ignoring case, as the CoNLL-U format asks.
    """
    for name, value in feats.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ValueError(f"{what}: a FEATS dict must map str names to str values; "
                             f"got {name!r}: {value!r}.")
    items = sorted(feats.items(), key=lambda item: (item[0].lower(), item[0]))
    return "|".join(f"{name}={value}" for name, value in items) or "_"


def _check_column(values, what, checked):
    """Check the strings of one column; ``checked`` caches the good ones.

    ``what`` names a field for error messages, with ``{}`` for the word.
    """
    try:
        if checked.issuperset(values):
            return
    except TypeError:  # an unhashable value: found and named below
        pass
    for j, value in enumerate(values):
        _check_field(value, what.format(j + 1))
    checked.update(values)


def _sentence_columns(sentence, i, checked, checked_feats):
    """FORM, LEMMA, UPOS, XPOS, FEATS and MISC of sentence ``i``, checked."""
    if isinstance(sentence, (str, dict)) or not hasattr(sentence, "__len__"):
        raise ValueError(f"X[{i}] must be a list of token dicts; got "
                         f"{type(sentence).__name__}.")
    for j, token in enumerate(sentence):
        if not isinstance(token, dict):
            raise ValueError(f"sentence {i + 1}, word {j + 1}: a token must be a "
                             f"dict; got {type(token).__name__}.")
    columns = []
    for key in _TOKEN_KEYS + ("misc",):
        column = [token.get(key, "_") for token in sentence]
        if key == "feats":
            column = [_feats_string(v, f"sentence {i + 1}, word {j + 1}")
                      if isinstance(v, dict) else v for j, v in enumerate(column)]
        _check_column(column, f"sentence {i + 1}, word {{}}: {key!r}", checked)
        columns.append(column)
    _check_no_space(columns[3], f"sentence {i + 1}, word {{}}: 'xpos'")
    if not _UPOS_OR_BLANK.issuperset(columns[2]):
        j, upos = next((j, u) for j, u in enumerate(columns[2]) if u not in _UPOS_OR_BLANK)
        raise ValueError(f"sentence {i + 1}, word {j + 1}: upos {upos!r} is not one "
                         "of the 17 universal POS tags.")
    if not checked_feats.issuperset(columns[4]):
        for j, feats in enumerate(columns[4]):
            problem = feats_error(feats)
            if problem is not None:
                raise ValueError(f"sentence {i + 1}, word {j + 1}: {problem}.")
        checked_feats.update(columns[4])
    return columns


def _check_no_space(values, what):
    """CoNLL-U allows spaces only in FORM, LEMMA and MISC."""
    if _SPACE.search("".join(values)):
        j, value = next((j, v) for j, v in enumerate(values) if _SPACE.search(v))
        raise ValueError(f"{what.format(j + 1)} contains a space: {value!r}; CoNLL-U "
                         "allows spaces only in FORM, LEMMA and MISC.")


def _check_heads(h, n_words, i):
    arr = np.asarray(h)
    if arr.ndim != 1 or arr.shape[0] != n_words:
        raise ValueError(f"heads[{i}] (sentence {i + 1}) must be a vector of "
                         f"{n_words} heads, one per word of X[{i}]; got shape {arr.shape}.")
    if arr.dtype == object and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                   for v in arr):
        # Python ints too large for int64 (those that fit give an integer array).
        j = next((j for j, v in enumerate(arr) if not 0 <= v <= n_words), None)
        if j is not None:
            raise ValueError(f"sentence {i + 1}: heads[{i}] is not a tree: HEAD {arr[j]} "
                             f"of word {j + 1} is out of range: the sentence has {n_words} "
                             "words")
    if n_words and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"heads[{i}] (sentence {i + 1}) must hold integer head "
                         f"indices; got dtype {arr.dtype}.")
    if arr.dtype == np.uint64 and n_words and arr.max() > n_words:
        # Would wrap around to negative numbers as int64.
        j = int(np.argmax(arr > n_words))
        raise ValueError(f"sentence {i + 1}: heads[{i}] is not a tree: HEAD {arr[j]} of "
                         f"word {j + 1} is out of range: the sentence has {n_words} words")
    return arr.astype(np.int64, copy=False)


def _comment_lines(entry, i):
    if isinstance(entry, dict):
        lines = []
        for key, value in entry.items():
            if not isinstance(key, str) or (value is not None and not isinstance(value, str)):
                raise ValueError(f"comments[{i}] must map str keys to str values "
                                 f"(or None); got {key!r}: {value!r}.")
            lines.append(f"# {key}" if value is None else f"# {key} = {value}")
    elif isinstance(entry, str) or not hasattr(entry, "__iter__"):
        raise ValueError(f"comments[{i}] must be a dict (as read_conllu's metadata) "
                         f"or a list of comment lines; got {type(entry).__name__}.")
    else:
        lines = []
        for line in entry:
            if not isinstance(line, str):
                raise ValueError(f"comments[{i}] holds {line!r}, not a str.")
            lines.append(line if line.startswith("#") else f"# {line}")
    for line in lines:
        if "\n" in line or "\r" in line:
            raise ValueError(f"comments[{i}]: comment {line!r} contains a line break.")
        _check_encodable(line, f"comments[{i}]: comment")
    return lines


def write_conllu(path, X, heads, deprels=None, *, comments=None, multiword=None,
                 single_root=False):
    """Write sentences and their dependency trees as a CoNLL-U file.

    Each word becomes a line of 10 tab-separated columns: its 1-based ID,
    FORM, LEMMA, UPOS, XPOS and FEATS from the token dict (``"_"`` for a key
    the dict lacks), HEAD, DEPREL, ``"_"`` for DEPS and the dict's ``"misc"``
    (``"_"`` if absent). Each sentence ends with a blank line, the file too,
    as the official evaluation script ``conll18_ud_eval.py`` requires; it
    scores the file when every sentence has exactly one root word (pass
    ``single_root=True`` to check that here) and its tokens spell out the
    gold file's text: pass the gold ``multiword`` tokens (from
    ``read_conllu(..., return_multiword=True)``) for languages whose words
    do not spell out their tokens; in English they do, and
    ``multiword=None`` is enough for UAS and LAS.

    Parameters
    ----------
    path : str, os.PathLike or file object
        Where to write (UTF-8). A name ending in ``.gz`` is written
        gzip-compressed. A file object may be opened in text or binary mode.
    X : list of list of dict
        Sentences of token dicts, as :func:`read_conllu` returns them.
    heads : list of array-like of int
        ``heads[i][j]`` is the head of word ``j + 1`` of sentence ``i``, 0
        for the root. Each sentence's heads must form a tree.
    deprels : list of list of str, default=None
        The DEPREL column. ``None`` writes ``"_"`` (unspecified): the
        evaluation script then scores UAS and counts no label as correct,
        rather than crediting a placeholder label such as ``"dep"``.
    comments : list, default=None
        Per sentence, either a dict as in ``read_conllu``'s metadata
        (written as ``# key = value``, or ``# key`` for a ``None`` value) or
        a list of comment lines (``"# "`` is prepended to a line that lacks
        the ``#``). ``None`` writes ``# sent_id = <1-based index>`` and
        ``# text = <the tokens joined by spaces>`` (the multiword tokens
        replace their words; the spacing of the original text is unknown).
    multiword : list of list of tuple, default=None
        Per sentence, multiword tokens ``(first, last, form)`` (words
        ``first..last`` make up the token ``form``), sorted and not
        overlapping, each written as a line ``first-last  form  _ ...``
        before its first word. ``None`` writes none.
    single_root : bool, default=False
        Require exactly one word attached to the root in every sentence.

    Returns
    -------
    path : str, os.PathLike or file object
        ``path``, so that the file can be read back in one expression.

    Raises
    ------
    ValueError
        Naming the sentence (and word) at fault: ``len(heads)``,
        ``len(deprels)``, ``len(comments)`` or ``len(multiword)`` differs
        from ``len(X)``; multiword tokens out of range, unsorted or
        overlapping; a
        sentence's heads or deprels are not one per word; non-integer heads;
        heads that are not a tree (out of range, a word its own head, no
        root, a cycle, several roots with ``single_root``); a field that is
        not a non-empty string free of tabs and line breaks, or that UTF-8
        cannot encode (a lone surrogate); a space in XPOS or DEPREL (CoNLL-U
        allows spaces only in FORM, LEMMA and MISC); an unknown UPOS tag or
        malformed FEATS (which :func:`read_conllu` would reject); for a
        text file object opened with another encoding than UTF-8, a
        character that encoding cannot encode (naming the sentence, word
        and column).

    See Also
    --------
    read_conllu : Read a CoNLL-U treebank.

    Examples
    --------
    >>> import io
    >>> from sksparse_struct.datasets import write_conllu
    >>> X = [[{"form": "Dogs", "upos": "NOUN"}, {"form": "bark", "upos": "VERB"}]]
    >>> out = write_conllu(io.StringIO(), X, [[2, 0]], [["nsubj", "root"]])
    >>> print(out.getvalue().replace("\\t", " "), end="")
    # sent_id = 1
    # text = Dogs bark
    1 Dogs _ NOUN _ _ 2 nsubj _ _
    2 bark _ VERB _ _ 0 root _ _
    <BLANKLINE>
    >>> write_conllu(io.StringIO(), X, [[2, 1]])
    Traceback (most recent call last):
    ...
    ValueError: sentence 1: heads[0] is not a tree: no word is attached to the root
    (HEAD 0): words 1 -> 2 -> 1 form a cycle
    """
    single_root = _check_bool(single_root, "single_root")
    for name, value in (("X", X), ("heads", heads), ("deprels", deprels),
                        ("comments", comments), ("multiword", multiword)):
        if value is not None and (isinstance(value, (str, dict))
                                  or not hasattr(value, "__len__")):
            raise ValueError(f"{name} must be a list with one entry per sentence; "
                             f"got {type(value).__name__}.")
    n_sent = len(X)
    for name, value in (("heads", heads), ("deprels", deprels), ("comments", comments),
                        ("multiword", multiword)):
        if value is not None and len(value) != n_sent:
            raise ValueError(f"{name} has {len(value)} entries but X has {n_sent} "
                             "sentences; give one per sentence.")
    checked, checked_feats = set(), {"_"}
    columns = [_sentence_columns(sentence, i, checked, checked_feats)
               for i, sentence in enumerate(X)]
    lengths = np.array([len(c[0]) for c in columns], dtype=np.int64)
    if n_sent and lengths.min() == 0:
        i = int(np.argmin(lengths))
        raise ValueError(f"sentence {i + 1} has no words; CoNLL-U sentences have "
                         "at least one.")
    arrays = [_check_heads(heads[i], int(lengths[i]), i) for i in range(n_sent)]
    flat = np.concatenate(arrays) if n_sent else np.zeros(0, dtype=np.int64)
    bad = first_bad_tree(flat, lengths, single_root)
    if bad is not None:
        _, message = tree_error(arrays[bad].tolist(), single_root)
        raise ValueError(f"sentence {bad + 1}: heads[{bad}] is not a tree: {message}")
    if deprels is not None:
        for i, labels in enumerate(deprels):
            if isinstance(labels, str) or not hasattr(labels, "__len__") \
                    or len(labels) != lengths[i]:
                got = len(labels) if hasattr(labels, "__len__") else type(labels).__name__
                raise ValueError(f"deprels[{i}] (sentence {i + 1}) must hold one "
                                 f"label per word ({lengths[i]}); got {got}.")
            _check_column(list(labels), f"sentence {i + 1}, word {{}}: deprel", checked)
            _check_no_space(list(labels), f"sentence {i + 1}, word {{}}: deprel")
    ranges = [None if multiword is None else _check_multiword(multiword[i], int(lengths[i]), i)
              for i in range(n_sent)]
    out = []
    for i, (forms, lemmas, upos, xpos, feats, misc) in enumerate(columns):
        if comments is None:
            out.append(f"# sent_id = {i + 1}\n# text = {_token_text(forms, ranges[i])}\n")
        else:
            out.extend(line + "\n" for line in _comment_lines(comments[i], i))
        labels = deprels[i] if deprels is not None else ("_",) * len(forms)
        if ranges[i]:
            out.append(_lines_with_ranges(forms, lemmas, upos, xpos, feats,
                                          arrays[i].tolist(), labels, misc, ranges[i]))
            out.append("\n")
            continue
        out.extend(
            f"{j}\t{f}\t{lem}\t{u}\t{x}\t{ft}\t{h}\t{d}\t_\t{m}\n"
            for j, f, lem, u, x, ft, h, d, m in zip(
                range(1, len(forms) + 1), forms, lemmas, upos, xpos, feats,
                arrays[i].tolist(), labels, misc))
        out.append("\n")
    _write_text(path, "".join(out))
    return path


def _check_multiword(tokens, n_words, i):
    """Multiword tokens of sentence ``i`` as a dict ``first -> (last, form)``."""
    if isinstance(tokens, (str, dict)) or not hasattr(tokens, "__iter__"):
        raise ValueError(f"multiword[{i}] must be a list of (first, last, form) tuples; "
                         f"got {type(tokens).__name__}.")
    ranges, previous = {}, 0
    for token in tokens:
        if (not isinstance(token, (tuple, list)) or len(token) != 3
                or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                           for v in token[:2])):
            raise ValueError(f"multiword[{i}] (sentence {i + 1}): {token!r} is not a "
                             "(first, last, form) tuple of two ints and a str.")
        first, last, form = int(token[0]), int(token[1]), token[2]
        if not previous < first < last <= n_words:
            raise ValueError(
                f"multiword[{i}] (sentence {i + 1}): token {first}-{last} must span two "
                f"or more of the words 1..{n_words}, after the previous token "
                f"(which ends at word {previous}).")
        _check_field(form, f"multiword[{i}] (sentence {i + 1}): form of {first}-{last}")
        ranges[first] = (last, form)
        previous = last
    return ranges


def _token_text(forms, ranges):
    if not ranges:
        return " ".join(forms)
    tokens, j = [], 0
    while j < len(forms):
        if j + 1 in ranges:
            last, form = ranges[j + 1]
            tokens.append(form)
            j = last
        else:
            tokens.append(forms[j])
            j += 1
    return " ".join(tokens)


def _lines_with_ranges(forms, lemmas, upos, xpos, feats, heads, labels, misc, ranges):
    lines = []
    for j, row in enumerate(zip(forms, lemmas, upos, xpos, feats, heads, labels, misc)):
        if j + 1 in ranges:
            last, form = ranges[j + 1]
            lines.append(f"{j + 1}-{last}\t{form}\t_\t_\t_\t_\t_\t_\t_\t_\n")
        f, lem, u, x, ft, h, d, m = row
        lines.append(f"{j + 1}\t{f}\t{lem}\t{u}\t{x}\t{ft}\t{h}\t{d}\t_\t{m}\n")
    return "".join(lines)


def _write_text(path, text):
    try:
        with _stream.TextSink(path, "utf-8") as out:
            out.write(text)
    except UnicodeEncodeError as exc:
        # A text file opened with another encoding than UTF-8.
        raise ValueError(_encoding_error(text, source_name(path), exc.encoding)) from None


def _encoding_error(text, source, encoding):
    """Where the first character that ``encoding`` cannot encode is, in words."""
    sentence = 1
    for line in text.split("\n"):
        if not line:
            sentence += 1
            continue
        try:
            line.encode(encoding)
            continue
        except UnicodeEncodeError as exc:
            char = line[exc.start]
        except LookupError:
            break
        if line.startswith("#"):
            where = f"sentence {sentence}: comment {line!r}"
        else:
            cols = line.split("\t")
            column = next(k for k, col in enumerate(cols) if char in col)
            kind = "multiword token" if "-" in cols[0] else "word"
            where = (f"sentence {sentence}, {kind} {cols[0]}: {_COLUMN_NAMES[column]} "
                     f"{cols[column]!r}")
        return (f"{source}: {where} holds {char!r}, which the file's encoding "
                f"{encoding!r} cannot encode; open the file with encoding='utf-8' "
                "(CoNLL-U files are UTF-8).")
    return (f"{source}: the text cannot be encoded in the file's encoding {encoding!r}; "
            "open the file with encoding='utf-8' (CoNLL-U files are UTF-8).")
