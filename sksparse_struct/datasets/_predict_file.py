"""Tag or parse a file of any size into another: ``predict_file``.

The input is read lazily and cut at blank lines into chunks of sentences
(the pieces of ``_stream``; plain text at line breaks, which end
sentences); each chunk goes, as text, to a joblib worker, which parses it
(or tokenizes it), calls the estimator's ``predict`` and writes the
predictions into the chunk's lines (or CoNLL-U lines for plain text); the
chunks come back in order and are written out. Workers need nothing but the estimator and the text, so any
joblib backend runs them: processes on this machine (loky), or a dask
cluster (``joblib.parallel_config(backend="dask")``).
"""

import collections
import numbers
import os
import pickle
import re
import sys
import time
import uuid
from typing import NamedTuple

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from sklearn.pipeline import Pipeline

from ..utils._validation import check_integer
from ._conll import (
    _DOCSTART,
    _check_columns,
    _conllu_columns,
    _lines,
    _parse_columns,
    _split_ascii,
)
from ._conllu import _UPOS_SET, feats_error, parse_treebank
from ._stream import BLANK_LINES, TextSink, TextSource, sentence_pieces, source_name
from ._text import conllu_block, text_sentences, text_tokens

__all__ = ["predict_file"]

# The CoNLL-U column each label goes to, by 0-based index.
_CONLLU_COLUMN = {"lemma": 2, "upos": 3, "xpos": 4, "head": 6}
_COLUMN_NAMES = {2: "LEMMA", 3: "UPOS", 4: "XPOS", 5: "FEATS", 6: "HEAD", 7: "DEPREL"}
# The token fields that the steps of a pipeline before its parser may set
# (e.g. a tagger's UPOS), and their columns.
_TAG_FIELDS = (("lemma", 2), ("upos", 3), ("xpos", 4), ("feats", 5))
# Plain text is cut into pieces at line breaks (each ends a sentence), a
# run of blank lines going with the line before.
_LINE_BREAKS = re.compile(r"\n(?:[ \t\r\f\v]*\n)*")
# The token-dict keys of read_conll's CoNLL-U tokens and their fields.
_CONLLU_FIELD = {"word": "form", "lemma": "lemma", "upos": "upos", "xpos": "xpos",
                 "feats": "feats"}
_OTHER_WHITESPACE = ("\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
                     "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


class _Task(NamedTuple):
    """What a worker needs to know, besides the estimator and the text."""

    source: str  # the input's name, for error messages
    format: str  # "conll", "conllu" or "text"
    columns: tuple  # column files: the columns; CoNLL-U and text taggers: the token keys
    label: str  # the column written
    deprel: bool  # a parser: also write its relation labels
    encoding: str


def _value_problem(value, column, task):
    """What keeps ``value`` out of ``column`` of the output, or ``None``."""
    if not isinstance(value, str):
        return f"{type(value).__name__} {value!r} is not a str"
    if not value or value.isspace():
        return "the value is empty"
    if "\t" in value or "\n" in value or "\r" in value:
        return f"{value!r} contains a tab or a line break"
    try:
        value.encode(task.encoding)
    except UnicodeEncodeError:
        return f"{value!r} cannot be written in the encoding {task.encoding!r}"
    if task.format == "conll":
        if any(c.isspace() or c in _OTHER_WHITESPACE for c in value):
            return f"{value!r} contains a space, which would split the column"
    elif column != 2 and any(c.isspace() for c in value):
        return (f"{value!r} contains a space; CoNLL-U allows spaces only in FORM, "
                "LEMMA and MISC")
    elif column == 3 and value not in _UPOS_SET and value != "_":
        return f"{value!r} is not one of the 17 universal POS tags"
    elif column == 5 and (problem := feats_error(value)) is not None:
        return problem
    return None


def _checked(value, column, where, task, good):
    """``value`` if it may go into ``column``; ``good`` caches the values that may."""
    if type(value) is str and value in good:
        return value
    problem = _value_problem(value, column, task)
    if problem is not None:
        name = repr(task.label) if task.format == "conll" \
            else _COLUMN_NAMES.get(column, repr(task.label))
        raise ValueError(f"{task.source}, {where}: the estimator predicted a {name} "
                         f"that cannot be written: {problem}.")
    good.add(value)
    return value


def _check_lengths(predicted, X, what, task, first_lines):
    """A ``what`` ("label", "head", "relation") per word of every sentence of ``X``."""
    if not hasattr(predicted, "__len__") or len(predicted) != len(X):
        got = len(predicted) if hasattr(predicted, "__len__") else type(predicted).__name__
        raise ValueError(f"{task.source}, line {first_lines[0]}: the estimator's predict "
                         f"returned {got} {what} sequences for {len(X)} sentences.")
    for i, (values, tokens) in enumerate(zip(predicted, X)):
        n = len(values) if hasattr(values, "__len__") else type(values).__name__
        if n != len(tokens):
            raise ValueError(f"{task.source}, line {first_lines[i]}: the estimator's predict "
                             f"returned {n} {what}s for a sentence of {len(tokens)} words.")


def _tag_steps(estimator):
    """``(steps, parser)`` of a pipeline with steps before its parser, else ``None``."""
    if isinstance(estimator, Pipeline) and len(estimator.steps) > 1:
        return estimator[:-1], estimator.steps[-1][1]
    return None


def _tag_columns(tokens, transformed):
    """The token fields that the steps before a parser set, by column.

    ``{column: values of all the words}`` for each of LEMMA, UPOS, XPOS and
    FEATS that a transformed token sets to another value than the input's
    (FEATS as a dict or as written); a value ``"_"`` (unspecified, e.g. a
    field the steps cleared) leaves the input's. Empty unless
    ``transformed`` are sentences of token dicts aligned with ``tokens``.
    """
    if not isinstance(transformed, (list, tuple)) or len(transformed) != len(tokens):
        return {}
    for sentence, words in zip(transformed, tokens):
        if not hasattr(sentence, "__len__") or len(sentence) != len(words) or not all(
                isinstance(token, dict) for token in sentence):
            return {}
    columns = {}
    for field, column in _TAG_FIELDS:
        values, changed = [], False
        for sentence, words in zip(transformed, tokens):
            for token, word in zip(sentence, words):
                value = token.get(field, "_")
                if field == "feats" and isinstance(value, dict):
                    value = _feats_text(value)
                if type(value) is str and value == "_":
                    value = word[field]
                elif value != word[field]:
                    changed = True
                values.append(value)
        if changed:
            columns[column] = values
    return columns


def _feats_text(feats):
    return "|".join(f"{name}={value}" for name, value in feats.items()) or "_"


def _predictions(estimator, tokens, task, first_lines):
    """``{column: values}`` of the words of ``tokens`` (token dicts of read_conllu)."""
    if task.label != "head":
        X = [[{key: token[_CONLLU_FIELD[key]] for key in task.columns} for token in sentence]
             for sentence in tokens]
        predicted = estimator.predict(X)
        _check_lengths(predicted, X, "label", task, first_lines)
        return {_CONLLU_COLUMN[task.label]: [value for sentence in predicted
                                             for value in sentence]}
    columns = {}
    split = _tag_steps(estimator)
    if split is not None:
        # The pipeline's predict, transforming once: the tags its steps set
        # are written too.
        steps, estimator = split
        transformed = steps.transform(tokens)
        columns = _tag_columns(tokens, transformed)
        tokens = transformed
    if task.deprel:
        heads, deprels = estimator.predict(tokens, return_deprel=True)
        _check_lengths(deprels, tokens, "relation", task, first_lines)
    else:
        heads, deprels = estimator.predict(tokens), None
    _check_lengths(heads, tokens, "head", task, first_lines)
    columns[6] = [str(int(h)) for sentence in heads for h in sentence]
    columns[7] = ([d for sentence in deprels for d in sentence] if deprels is not None
                  else ["_"] * len(columns[6]))
    return columns


def _predict_conllu(estimator, piece, first_line, task):
    tokens, _, _, _, _, _, first_lines = parse_treebank(piece, task.source, first_line,
                                                        heads_required=False)
    if not tokens:
        return piece, 0, 0
    columns = _predictions(estimator, tokens, task, first_lines)
    lines = piece.split("\n")
    good, k = {column: set() for column in columns}, 0
    for i, line in enumerate(lines):
        if not line or line[0] == "#" or not line.rstrip("\r"):
            continue
        word_id = line[:line.find("\t")]
        if "-" in word_id or "." in word_id:
            continue  # a multiword token or an empty node: copied as it is
        cols = line.split("\t")
        where = f"line {first_line + i}"
        for column, values in columns.items():
            cols[column] = _checked(values[k], column, where, task, good[column])
        lines[i] = "\t".join(cols)
        k += 1
    return "\n".join(lines), len(tokens), k


def _predict_text(estimator, piece, first_line, task, newlines_before):
    """A piece of plain text as CoNLL-U blocks, one per sentence, without ``# sent_id``."""
    if "\x00" in piece:
        line = first_line + piece.count("\n", 0, piece.index("\x00"))
        raise ValueError(f"{task.source}, line {line}: a NUL character: this is not "
                         f"{task.encoding} text (a binary file, or text in another encoding "
                         "such as UTF-16: pass encoding=).")
    sentences = text_sentences(piece, newlines_before)
    if not sentences:
        return [], 0, 0
    first_lines, line, at = [], first_line, 0
    for sentence in sentences:
        line += piece.count("\n", at, sentence.start)
        at = sentence.start
        first_lines.append(line)
    tokens = [text_tokens(sentence) for sentence in sentences]
    columns = _predictions(estimator, tokens, task, first_lines)
    good = {column: set() for column in columns}
    blocks, k = [], 0
    for sentence, line in zip(sentences, first_lines):
        n = len(sentence.forms)
        values = {column: [_checked(value, column, f"line {line}, word {j + 1} of its sentence",
                                    task, good[column])
                           for j, value in enumerate(all_values[k:k + n])]
                  for column, all_values in columns.items()}
        blocks.append(conllu_block(sentence, values))
        k += n
    return blocks, len(sentences), k


def _predict_columns(estimator, piece, first_line, task):
    label = task.label if task.label in task.columns else None
    X, _ = _parse_columns(piece, task.source, task.columns, label, first_line)
    if not X:
        return piece, 0, 0
    lines = _lines(piece)
    token_lines = [i for i, line in enumerate(lines)
                   if (fields := _split_ascii(line)) and fields[0] != _DOCSTART]
    starts = [0]
    for tokens in X[:-1]:
        starts.append(starts[-1] + len(tokens))
    first_lines = [first_line + token_lines[s] for s in starts]
    predicted = estimator.predict(X)
    _check_lengths(predicted, X, "label", task, first_lines)
    at = task.columns.index(label) if label is not None else None
    good = set()
    values = (value for sentence in predicted for value in sentence)
    for i, value in zip(token_lines, values):
        line = lines[i]
        fields = _split_ascii(line)
        value = _checked(value, None, f"line {first_line + i}", task, good)
        if at is None:
            fields.append(value)
        else:
            fields[at] = value
        lines[i] = ("\t" if "\t" in line else " ").join(fields) + (
            "\r" if line.endswith("\r") else "")
    text = "\n".join(lines)
    if piece.endswith("\n"):
        text += "\n"
    return text, len(X), len(token_lines)


class _Pickled:
    """An estimator pickled once, which each worker process unpickles once.

    joblib pickles the arguments of every task: a large model would be
    pickled, sent and unpickled again for every chunk. Its pickle is held
    as a NumPy array, which joblib's process backends write to a memory-
    mapped file once per call instead of sending it with every task; its
    size tells joblib's dask backend to scatter it to the workers once.
    """

    def __init__(self, estimator):
        self.key = uuid.uuid4().hex
        self.data = np.frombuffer(pickle.dumps(estimator, protocol=pickle.HIGHEST_PROTOCOL),
                                  dtype=np.uint8)

    def __sizeof__(self):
        return object.__sizeof__(self) + self.data.nbytes


# The estimator of the last _Pickled seen by this process.
_UNPICKLED = {}


def _unpickled(estimator):
    if not isinstance(estimator, _Pickled):
        return estimator
    found = _UNPICKLED.get(estimator.key)
    if found is None:
        _UNPICKLED.clear()  # one model at a time
        found = _UNPICKLED[estimator.key] = pickle.loads(estimator.data)
    return found


def _predict_piece(estimator, piece, first_line, task, newlines_before=2):
    """A chunk of the input with the predictions written in; run by the workers.

    Returns ``(text, n_sentences, n_words)``; for plain text, ``text`` is the
    list of the sentences' CoNLL-U blocks, which lack their ``# sent_id``
    (numbered by the writer, which sees the sentences of every chunk).
    ``newlines_before``: plain text, the line breaks between the last word
    before the piece and its start.
    """
    estimator = _unpickled(estimator)
    if task.format == "conllu":
        return _predict_conllu(estimator, piece, first_line, task)
    if task.format == "text":
        return _predict_text(estimator, piece, first_line, task, newlines_before)
    return _predict_columns(estimator, piece, first_line, task)


def _check_options(estimator, label, columns, format, chunk_size, n_jobs, verbose,
                   input_path):
    if not hasattr(estimator, "predict"):
        raise TypeError(f"estimator must have a predict method; got {type(estimator).__name__}.")
    check_integer(chunk_size, "chunk_size", minimum=1)
    if n_jobs is not None and (not isinstance(n_jobs, numbers.Integral)
                               or isinstance(n_jobs, bool) or n_jobs == 0):
        raise ValueError(f"n_jobs must be None or a non-zero integer, got {n_jobs!r}.")
    if not isinstance(verbose, bool):  # verbose=True is verbose=1
        check_integer(verbose, "verbose", minimum=0)
    if format not in ("auto", "conll", "conllu", "text"):
        raise ValueError(f"format must be 'auto', 'conll', 'conllu' or 'text'; got {format!r}.")
    if not isinstance(label, str) or not label:
        raise ValueError(f"label must name the column the predictions go to; got {label!r}.")
    if format == "auto":
        name = source_name(input_path).lower()
        # Column files are often named .txt too (CoNLL-2000): a .txt file is
        # plain text for a model whose predictions go to a CoNLL-U column.
        format = ("conllu" if name.endswith((".conllu", ".conllu.gz"))
                  else "text" if name.endswith((".txt", ".txt.gz")) and label in _CONLLU_COLUMN
                  else "conll")
    default_columns = columns == ("word", "pos", "chunk")
    if format == "conll":
        return format, _check_columns(columns, None)
    if format == "text":
        return format, _text_columns(estimator, label, columns, default_columns)
    if label == "head":
        if not default_columns:
            raise ValueError("columns does not apply to label='head': a parser gets the "
                             "tokens of read_conllu (form, lemma, upos, xpos, feats).")
        return format, ()
    if label not in _CONLLU_COLUMN:
        raise ValueError(f"label must be one of 'upos', 'xpos', 'lemma' (a tagger) or "
                         f"'head' (a parser) for a CoNLL-U file; got {label!r}.")
    columns = _conllu_columns(columns, label, default_columns)
    return format, tuple(c for c in columns if c != label)


def _text_columns(estimator, label, columns, default_columns):
    """The token keys a tagger gets from plain text: only the words it gives."""
    if label == "head":
        if not default_columns:
            raise ValueError("columns does not apply to label='head': a parser gets the "
                             "words of the text as the tokens of read_conllu.")
        final = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
        fields = getattr(final, "token_fields_", None) or ()
        needed = [f for f in fields if f != "feats"]  # FEATS "_" is a value for a parser
        if needed and _tag_steps(estimator) is None:
            raise ValueError(
                f"format='text': the parser was trained on words with {', '.join(needed)}, "
                "which plain text does not give; put a tagger of those columns before it "
                "(a Pipeline whose steps set them, e.g. ColumnTagger) or parse a CoNLL-U "
                "file that has them.")
        return ()
    if default_columns and label in ("upos", "xpos", "lemma"):
        return ("word",)
    given = columns if isinstance(columns, (tuple, list)) else ()
    if label not in ("upos", "xpos", "lemma") or set(given) - {"word", label} or \
            "word" not in given:
        raise ValueError(
            f"format='text': plain text gives only the words, and its predictions are "
            f"written as CoNLL-U: a tagger must predict 'upos', 'xpos' or 'lemma' from the "
            f"words alone (columns=('word', label)); got label={label!r}, "
            f"columns={columns!r}. Tag a file that has the columns it reads instead.")
    return ("word",)


def _has_relations(estimator):
    """Whether a parser (or a pipeline ending with one) was fitted with relation labels."""
    final = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
    return getattr(final, "classes_", None) is not None


def _same_file(a, b):
    if hasattr(a, "read") or hasattr(b, "write"):
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def predict_file(estimator, input_path, output_path, *, label="chunk",
                 columns=("word", "pos", "chunk"), format="auto", chunk_size=1000,
                 n_jobs=None, verbose=0, encoding="utf-8"):
    """Tag or parse a CoNLL, CoNLL-U or plain-text file of any size into another file.

    The input is read lazily, a chunk of ``chunk_size`` sentences at a
    time; each chunk is parsed, predicted by ``estimator.predict`` and
    written out, with ``n_jobs`` chunks predicted at once by joblib
    workers. Memory stays bounded by a few chunks per worker (and a copy of
    the estimator per worker process), whatever the size of the file. The
    output is the input, line for line, with the predictions in the
    ``label`` column: comments, blank lines, multiword tokens, empty nodes
    and the other columns are copied as they are, and the sentences stay in
    the order of the input. It is the same for every ``n_jobs`` and
    ``chunk_size``, and the same as predicting all the sentences at once.

    - **A tagger** (:class:`~sksparse_struct.LinearChainCRF`,
      :class:`~sksparse_struct.EasyFirstTagger`, any estimator, or pipeline,
      whose ``predict`` takes a list of sentences and returns a list of
      label lists) gets the sentences as :func:`read_conll` reads them with
      the same ``columns``, ``label`` and ``format``, and its labels go to
      the ``label`` column.
    - **A parser** (:class:`~sksparse_struct.SparseMAPParser`, or a pipeline
      ending with one), with ``label="head"`` on a CoNLL-U file, gets the
      token dicts of :func:`read_conllu` and writes the heads to HEAD and
      the relation labels to DEPREL (``"_"`` if the parser was fitted
      without them). A :class:`~sklearn.pipeline.Pipeline` whose steps
      before the parser fill in token fields (e.g. a
      :class:`~sksparse_struct.tagging.ColumnTagger`) also has the LEMMA,
      UPOS, XPOS and FEATS its steps set written (the sentences are
      transformed once; a field a step leaves at ``"_"`` keeps the input's).
    - **Plain text** (``format="text"``) is split into sentences and words
      by the rules of :func:`tokenize_text` and written as CoNLL-U: a
      ``# sent_id`` (1, 2, ... through the file), ``# newpar`` at each
      paragraph, ``# text``, the words with multiword token lines for the
      clitics split off, ``SpaceAfter=No`` in MISC, the predictions in
      their columns and ``"_"`` elsewhere. A tagger gets each word as
      ``{"word": form}`` and must predict ``"upos"``, ``"xpos"`` or
      ``"lemma"`` from the words alone; a parser trained on tags needs a
      tagger before it in a pipeline.

    In a CoNLL-U input, HEAD may be ``"_"`` (text yet to be parsed); the
    input's trees are not checked, since they are replaced or copied.

    Parameters
    ----------
    estimator : object
        A fitted estimator (or pipeline) with a ``predict`` method.
    input_path : str, os.PathLike or file object
        The file to tag or parse, plain or gzip-compressed (recognised from
        the content).
    output_path : str, os.PathLike or file object
        Where to write. A path is written through a temporary file in the
        same folder, renamed at the end, so that an error leaves no
        partial output; a name ending in ``.gz`` is written
        gzip-compressed. A file object (text or binary) is written to as
        the chunks come.
    label : str, default="chunk"
        The column the predictions go to. Column files: the name of one of
        ``columns``, whose values are replaced (and not shown to the
        estimator), or a new name, for a column appended at the end of
        every token line (e.g. beside the gold labels, as the CoNLL
        ``conlleval`` script reads them). CoNLL-U and plain text:
        ``"upos"``, ``"xpos"`` or ``"lemma"`` for a tagger, ``"head"`` for a
        parser.
    columns : tuple of str, default=("word", "pos", "chunk")
        Column files: the names of the input's columns, as in
        :func:`read_conll`. CoNLL-U taggers: the token fields the estimator
        gets, as in :func:`read_conll` (at its default, all of them). Plain
        text: ``("word", label)`` or the default, as the words are all it
        gives.
    format : {"auto", "conll", "conllu", "text"}, default="auto"
        As in :func:`read_conll`, and ``"text"`` for plain text. ``"auto"``
        reads CoNLL-U when the input's name ends in ``.conllu`` or
        ``.conllu.gz``, plain text when it ends in ``.txt`` or ``.txt.gz``
        and ``label`` is one of the CoNLL-U labels above (column files are
        often named ``.txt`` too), a column file otherwise.
    chunk_size : int, default=1000
        Sentences per chunk, counted at the blank lines of the input (plain
        text: lines, each of one sentence or more). A larger chunk costs
        memory, a smaller one time (each chunk is a task of its own, and a
        tagger's features cache the words of one chunk).
    n_jobs : int, default=None
        The number of chunks predicted at once, by joblib workers (processes
        with joblib's default backend). ``None`` means 1 (the estimator's
        own ``n_jobs`` still applies within a chunk) unless inside a
        :func:`joblib.parallel_config` context, which also chooses the
        backend, e.g. ``"dask"`` to predict on a dask cluster; -1 means all
        the workers.
    verbose : int, default=0
        If positive, print a progress line (sentences and words done, words
        per second, and, for a path, the share of the input read) every
        ``verbose`` chunks, and a last line at the end.
    encoding : str, default="utf-8"
        The text encoding of the input, used for the output too.

    Returns
    -------
    output_path : str, os.PathLike or file object
        ``output_path``, so that the output can be read in one expression.

    Raises
    ------
    ValueError
        On a bad argument; on malformed input, naming the file and the line
        (the errors of :func:`read_conll` and :func:`read_conllu`); on a
        prediction that cannot be written in its column (not a str, empty,
        containing whitespace, an unknown universal POS tag), naming the
        input line of the word; when ``output_path`` is ``input_path``.
        Plain text: on a tagger that reads more than the words, or a parser
        trained on tags with no step before it to set them; on an empty
        file (or only whitespace) and on NUL characters (a binary file, or
        text in another encoding).

    See Also
    --------
    iter_conll, iter_conllu : Read a corpus of any size lazily.
    read_text : A plain-text file as sentences of token dicts.

    Notes
    -----
    With more than one worker, the estimator is pickled once and unpickled
    once by each worker process, which keeps it until the next call; the
    pickle reaches the workers once, not with every chunk (through a
    memory-mapped file with joblib's process backends, scattered by the dask
    backend). The estimator's own ``n_jobs`` threads run within each worker:
    for as many worker processes as cores, leave it at 1.

    Examples
    --------
    >>> import io
    >>> from sksparse_struct import LinearChainCRF
    >>> from sksparse_struct.datasets import predict_file
    >>> X = [[{"word": "He"}, {"word": "runs"}], [{"word": "It"}, {"word": "rains"}]]
    >>> tagger = LinearChainCRF(c2=0.01).fit(X, [["B-NP", "B-VP"], ["B-NP", "B-VP"]])
    >>> text = "He\\nruns\\n\\nrains\\n"
    >>> out = predict_file(tagger, io.StringIO(text), io.StringIO(), columns=("word",))
    >>> print(out.getvalue())
    He B-NP
    runs B-VP
    <BLANKLINE>
    rains B-VP
    <BLANKLINE>
    """
    format, columns = _check_options(estimator, label, columns, format, chunk_size, n_jobs,
                                     verbose, input_path)
    text = TextSource(input_path, encoding)
    text.check_readable()
    if _same_file(input_path, output_path):
        raise ValueError(f"output_path is the input file {text.source}; write elsewhere.")
    task = _Task(text.source, format, columns, label,
                 label == "head" and _has_relations(estimator), encoding)
    pieces = sentence_pieces(text.fragments(), _LINE_BREAKS if format == "text"
                             else BLANK_LINES[format], n_sentences=chunk_size)
    # At most 2 chunks per worker are read ahead of the one written, and
    # they are written in order as they come.
    parallel = Parallel(n_jobs=n_jobs, return_as="generator", pre_dispatch="2 * n_jobs",
                        batch_size=1)
    shipped = estimator if effective_n_jobs(n_jobs) == 1 else _Pickled(estimator)
    # How much of the input had been read when each chunk was cut, for the
    # progress lines (joblib may read ahead in a thread of its own).
    fractions = collections.deque()

    def tasks():
        newlines = 2  # line breaks since the last word: the file starts a paragraph
        for piece, line in pieces:
            fractions.append(text.fraction_read())
            if format != "text":
                yield delayed(_predict_piece)(shipped, piece, line, task)
                continue
            yield delayed(_predict_piece)(shipped, piece, line, task, newlines)
            content = piece.rstrip()
            newlines = piece.count("\n", len(content)) + (newlines if not content else 0)

    start = time.perf_counter()
    n_sentences = n_words = 0
    try:
        with TextSink(output_path, encoding) as output:
            for k, (chunk, n_chunk_sentences, n_chunk_words) in enumerate(parallel(tasks()), 1):
                if format == "text":  # the sentences are numbered through the file
                    chunk = "".join(f"# sent_id = {n_sentences + i}\n{block}"
                                    for i, block in enumerate(chunk, 1))
                output.write(chunk)
                n_sentences += n_chunk_sentences
                n_words += n_chunk_words
                fraction = fractions.popleft()
                if verbose and k % verbose == 0:
                    _progress(n_sentences, n_words, start, fraction)
            if format == "text" and not n_words:
                raise ValueError(f"{text.source}: no text to tag or parse (the file is empty "
                                 "or holds only whitespace).")
    finally:
        # A thread backend unpickled the estimator in this process.
        if isinstance(shipped, _Pickled):
            _UNPICKLED.pop(shipped.key, None)
    if verbose:
        _progress(n_sentences, n_words, start, None, done=True)
    return output_path


def _progress(n_sentences, n_words, start, fraction, done=False):
    elapsed = time.perf_counter() - start
    rate = n_words / elapsed if elapsed > 0 else 0.0
    read = f", {100 * fraction:.0f}% of the input read" if fraction is not None else ""
    print(f"[predict_file] {'done: ' if done else ''}{n_sentences} sentences, {n_words} "
          f"words in {elapsed:.1f}s ({rate:.0f} words/s){read}", file=sys.stdout, flush=True)
