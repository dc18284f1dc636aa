"""Metrics for sequence labelling: conlleval chunk scores, token and sequence accuracy.

Every function takes ``y_true`` and ``y_pred`` as lists of label sequences,
one per sentence, the format of ``LinearChainCRF.predict``.

The chunk scores reproduce the ``conlleval`` Perl script of the CoNLL-2000
shared task (version 2004-01-26) run on a file holding one token per line
and a blank line after every sentence: the same chunk boundaries, the same
counts, the same precision, recall and F1 (as fractions here, percentages
there). Its boundary rules cover IOB1, IOB2 (BIO), IOE1, IOE2 and bracket
tags; they are extended to IOBES (``S-`` and ``E-`` followed by ``B-``) the
way the IOBES variants of the script do, which changes nothing for the
other encodings.
"""

import operator
from collections import Counter
from itertools import chain

import numpy as np
from sklearn.metrics import classification_report, make_scorer

from ..utils._validation import check_integer

__all__ = [
    "chunk_classification_report",
    "chunk_f1_score",
    "chunk_f1_scorer",
    "chunk_precision_recall_fscore_support",
    "flat_accuracy_score",
    "flat_accuracy_scorer",
    "flat_classification_report",
    "sequence_accuracy_score",
    "sequence_accuracy_scorer",
]

_EXAMPLE = "[['B-NP', 'I-NP', 'O'], ['B-VP']]"


# ---------------------------------------------------------------------------
# Input validation
# ---------------------------------------------------------------------------


def _as_sequence_list(y, name):
    """``y`` as a list of label sequences, rejecting flat or scalar input."""
    if isinstance(y, (str, bytes)) or not hasattr(y, "__iter__"):
        raise ValueError(
            f"{name} must be a list of label sequences, one per sentence "
            f"(e.g. {_EXAMPLE}); got {type(y).__name__} {y!r:.60}."
        )
    y = list(y)
    for i, seq in enumerate(y):
        if isinstance(seq, (str, bytes)) or not hasattr(seq, "__len__"):
            raise ValueError(
                f"{name} must be a list of label sequences, one per sentence "
                f"(e.g. {_EXAMPLE}), but its element {i} is the "
                f"{type(seq).__name__} {seq!r:.60}, not a sequence of labels. "
                "A single sentence must be wrapped in a list: [labels]."
            )
    return y


def _check_sequences(y_true, y_pred):
    """Validate a pair of label-sequence lists of matching shapes.

    Returns both as lists of sequences (the sequences themselves are not
    copied).
    """
    y_true = _as_sequence_list(y_true, "y_true")
    y_pred = _as_sequence_list(y_pred, "y_pred")
    if len(y_true) != len(y_pred):
        raise ValueError(
            f"y_true and y_pred must hold the same number of sequences; got "
            f"{len(y_true)} and {len(y_pred)}."
        )
    for i, (seq_true, seq_pred) in enumerate(zip(y_true, y_pred)):
        if len(seq_true) != len(seq_pred):
            raise ValueError(
                f"sequence {i} has {len(seq_true)} labels in y_true but "
                f"{len(seq_pred)} in y_pred."
            )
    return y_true, y_pred


def _check_string_labels(y, name):
    for i, seq in enumerate(y):
        for j, label in enumerate(seq):
            if not isinstance(label, str):
                raise ValueError(
                    f"chunk metrics need string labels such as 'B-NP', 'I-NP' "
                    f"or 'O'; label {j} of sequence {i} in {name} is the "
                    f"{type(label).__name__} {label!r:.60}."
                )


def _n_tokens(y):
    return sum(len(seq) for seq in y)


# ---------------------------------------------------------------------------
# conlleval chunk boundaries
# ---------------------------------------------------------------------------

# conlleval's endOfChunk: the chunk tags after which, given the previous
# tag, a chunk ends (type changes and brackets are handled separately).
_ENDS_BEFORE = {
    "B": frozenset("BSO"),
    "I": frozenset("BSO"),
    "E": frozenset("BEISO"),
    "S": frozenset("BEISO"),
}
# conlleval's startOfChunk: the previous tags after which the given tag
# starts a chunk.
_STARTS_AFTER = {
    "B": frozenset("BEISO"),
    "S": frozenset("BEISO"),
    "I": frozenset("ESO"),
    "E": frozenset("ESO"),
}
_NOTHING = frozenset()
_BRACKETS = ("[", "]")
_NOT_IN_CHUNK = ("O", ".")


def _split_label(label):
    """conlleval's split: the chunk tag before the first hyphen, the type after.

    A label without a hyphen is all tag and no type: "O", but also "B" or a
    bare "NP" (which, having no B/I/E/S prefix, never starts a chunk).
    """
    tag, _, chunk_type = label.partition("-")
    return tag, chunk_type


def _chunk_end(prev_tag, tag, prev_type, chunk_type):
    if prev_tag in _BRACKETS:
        return True
    if prev_type != chunk_type and prev_tag not in _NOT_IN_CHUNK:
        return True
    return tag in _ENDS_BEFORE.get(prev_tag, _NOTHING)


def _chunk_start(prev_tag, tag, prev_type, chunk_type):
    if tag in _BRACKETS:
        return True
    if prev_type != chunk_type and tag not in _NOT_IN_CHUNK:
        return True
    return prev_tag in _STARTS_AFTER.get(tag, _NOTHING)


def _transition(prev_label, label):
    """(a chunk ends before ``label``, a chunk starts at it, its type) after ``prev_label``."""
    prev_tag, prev_type = _split_label(prev_label)
    tag, chunk_type = _split_label(label)
    return (
        _chunk_end(prev_tag, tag, prev_type, chunk_type),
        _chunk_start(prev_tag, tag, prev_type, chunk_type),
        chunk_type,
    )


# The blank line conlleval reads after every sentence: "O" on both sides.
_SENTENCE_BREAK = (("O", "O"),)


def _conlleval_counts(y_true, y_pred):
    """conlleval's counts over a corpus of validated label sequences.

    Returns ``(n_true, n_pred, n_correct, n_correct_tags, n_tokens)``: three
    Counters of chunks per type (in y_true, in y_pred, found in both with
    the same boundaries and type) and the token-level counts.

    Like the script, this is one pass over the corpus as a stream in which
    a sentence break ("O" on both sides) follows every sentence; a chunk is
    counted as correct when both sides start it on the same token with the
    same type and end it on the same token.
    """
    # The boundary rules depend on two consecutive labels only: memoise them.
    transitions = {}
    n_true, n_pred, n_correct = Counter(), Counter(), Counter()
    n_correct_tags = n_tokens = 0
    in_correct = False
    last_t = last_p = "O"
    last_type_t = last_type_p = ""
    for seq_true, seq_pred in zip(y_true, y_pred):
        n_tokens += len(seq_true)
        for label_t, label_p in chain(zip(seq_true, seq_pred), _SENTENCE_BREAK):
            trans_t = transitions.get((last_t, label_t))
            if trans_t is None:
                trans_t = transitions[last_t, label_t] = _transition(last_t, label_t)
            trans_p = transitions.get((last_p, label_p))
            if trans_p is None:
                trans_p = transitions[last_p, label_p] = _transition(last_p, label_p)
            end_t, start_t, type_t = trans_t
            end_p, start_p, type_p = trans_p
            if in_correct:
                if end_t and end_p and last_type_p == last_type_t:
                    in_correct = False
                    n_correct[last_type_t] += 1
                elif end_t != end_p or type_p != type_t:
                    in_correct = False
            if start_t:
                n_true[type_t] += 1
                if start_p and type_p == type_t:
                    in_correct = True
            if start_p:
                n_pred[type_p] += 1
            # conlleval compares tag and type ("B" and "B-" are equal).
            if label_t == label_p or _split_label(label_t) == _split_label(label_p):
                n_correct_tags += 1
            last_t, last_p, last_type_t, last_type_p = label_t, label_p, type_t, type_p
    if in_correct:
        n_correct[last_type_t] += 1
    # Leave out the sentence breaks, where both sides are "O".
    return n_true, n_pred, n_correct, n_correct_tags - len(y_true), n_tokens


def _prf(n_correct, n_pred, n_true):
    """Precision, recall and F1 as conlleval computes them (0 when undefined)."""
    n_correct = np.asarray(n_correct, dtype=np.float64)
    n_pred = np.asarray(n_pred, dtype=np.float64)
    n_true = np.asarray(n_true, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(n_pred > 0, n_correct / n_pred, 0.0)
        recall = np.where(n_true > 0, n_correct / n_true, 0.0)
        total = precision + recall
        f1 = np.where(total > 0, 2 * precision * recall / total, 0.0)
    return precision, recall, f1


def _chunk_table(y_true, y_pred, labels):
    """Validated input -> types and per-type count arrays, plus token counts."""
    y_true, y_pred = _check_sequences(y_true, y_pred)
    _check_string_labels(y_true, "y_true")
    _check_string_labels(y_pred, "y_pred")
    n_true, n_pred, n_correct, n_correct_tags, n_tokens = _conlleval_counts(
        y_true, y_pred
    )
    if labels is None:
        types = sorted(set(n_true) | set(n_pred))
    else:
        if isinstance(labels, str):
            raise ValueError(
                f"labels must be a list of chunk types such as ['NP', 'VP']; "
                f"got the string {labels!r}."
            )
        types = list(labels)
        if len(set(types)) != len(types):
            raise ValueError(f"labels contains duplicates: {types!r}.")
    counts = {
        "true": np.array([n_true[t] for t in types], dtype=np.int64),
        "pred": np.array([n_pred[t] for t in types], dtype=np.int64),
        "correct": np.array([n_correct[t] for t in types], dtype=np.int64),
    }
    if labels is None:
        # conlleval's overall counts. They may exceed the sums over the
        # listed types: with "." tags a chunk can change type on the way
        # and be counted as correct under a type that starts no chunk.
        counts["total"] = {"true": sum(n_true.values()), "pred": sum(n_pred.values()),
                           "correct": sum(n_correct.values())}
    else:
        counts["total"] = {key: int(counts[key].sum()) for key in ("true", "pred", "correct")}
    return types, counts, n_correct_tags, n_tokens


_AVERAGES = (None, "micro", "macro", "weighted")


def _averaged(counts, per_type, average):
    """Average the per-type scores, sklearn style."""
    if average == "micro":
        total = counts["total"]
        scores = _prf(total["correct"], total["pred"], total["true"])
        return tuple(float(s) for s in scores)
    if not len(counts["true"]):
        return 0.0, 0.0, 0.0
    if average == "macro":
        return tuple(float(s.mean()) for s in per_type)
    support = counts["true"]
    if support.sum() == 0:
        return 0.0, 0.0, 0.0
    return tuple(float(np.average(s, weights=support)) for s in per_type)


# ---------------------------------------------------------------------------
# Public chunk metrics
# ---------------------------------------------------------------------------


def chunk_precision_recall_fscore_support(y_true, y_pred, *, labels=None, average=None):
    """Chunk precision, recall, F1 and support, per chunk type or averaged.

    Chunks are read from the labels exactly as the CoNLL ``conlleval``
    script reads them (see :func:`chunk_classification_report`). A
    predicted chunk is correct when a true chunk has the same first token,
    the same last token and the same type.

    Parameters
    ----------
    y_true : list of list of str
        True labels, one list per sentence (``"B-NP"``, ``"I-NP"``, ``"O"``,
        ...).
    y_pred : list of list of str
        Predicted labels, with the same number of sentences and of labels in
        each sentence as ``y_true``.
    labels : list of str, default=None
        The chunk types to report, in this order. By default, every type
        that has a chunk in ``y_true`` or ``y_pred``, sorted.
    average : {None, "micro", "macro", "weighted"}, default=None
        ``None`` returns one score per type. ``"micro"`` pools the chunk
        counts of all (selected) types, which gives conlleval's overall
        scores; ``"macro"`` is the unweighted mean of the per-type scores
        and ``"weighted"`` their mean weighted by support.

    Returns
    -------
    precision, recall, f1 : ndarray of shape (n_types,) or float
        As fractions in [0, 1]. A score whose denominator is zero (no
        predicted chunk of a type, no true chunk of a type, or both
        precision and recall zero) is 0.0, as in conlleval, without a
        warning.
    support : ndarray of shape (n_types,) of int, or None
        The number of true chunks of each type; ``None`` when averaged.

    Examples
    --------
    >>> from sksparse_struct.metrics import chunk_precision_recall_fscore_support
    >>> y_true = [["B-NP", "I-NP", "B-VP", "O", "B-NP"]]
    >>> y_pred = [["B-NP", "I-NP", "B-VP", "O", "B-VP"]]
    >>> p, r, f, s = chunk_precision_recall_fscore_support(y_true, y_pred)
    >>> p.round(3).tolist(), r.round(3).tolist(), s.tolist()
    ([1.0, 0.5], [0.5, 1.0], [2, 1])
    >>> p, r, f, s = chunk_precision_recall_fscore_support(y_true, y_pred, average="micro")
    >>> round(p, 3), round(r, 3), round(f, 3), s
    (0.667, 0.667, 0.667, None)
    """
    if average not in _AVERAGES:
        raise ValueError(
            f"average must be None, 'micro', 'macro' or 'weighted'; got {average!r}."
        )
    _, counts, _, _ = _chunk_table(y_true, y_pred, labels)
    per_type = _prf(counts["correct"], counts["pred"], counts["true"])
    if average is None:
        return per_type + (counts["true"],)
    return _averaged(counts, per_type, average) + (None,)


def chunk_f1_score(y_true, y_pred):
    """Overall chunk F1 score, as reported by the CoNLL ``conlleval`` script.

    The harmonic mean of chunk precision and recall pooled over all chunk
    types (the micro average). Chunks are read as
    :func:`chunk_classification_report` describes; a predicted chunk is
    correct when a true chunk has the same first token, last token and type.

    Parameters
    ----------
    y_true : list of list of str
        True labels, one list per sentence (``"B-NP"``, ``"I-NP"``, ``"O"``,
        ...).
    y_pred : list of list of str
        Predicted labels, shaped like ``y_true``.

    Returns
    -------
    f1 : float
        In [0, 1]. It is 0.0 when there is no chunk in either ``y_true`` or
        ``y_pred`` (precision or recall undefined), as in conlleval.

    See Also
    --------
    chunk_classification_report : per-type scores.
    chunk_f1_scorer : this score as a scorer for ``GridSearchCV``.

    Examples
    --------
    >>> from sksparse_struct.metrics import chunk_f1_score
    >>> y_true = [["B-NP", "I-NP", "O", "B-VP"], ["B-PP", "B-NP"]]
    >>> y_pred = [["B-NP", "I-NP", "O", "B-NP"], ["B-PP", "B-NP"]]
    >>> chunk_f1_score(y_true, y_pred)
    0.75
    """
    _, _, f1, _ = chunk_precision_recall_fscore_support(y_true, y_pred, average="micro")
    return f1


def _report_rows(types, counts):
    precision, recall, f1 = _prf(counts["correct"], counts["pred"], counts["true"])
    rows = {}
    for i, chunk_type in enumerate(types):
        rows[chunk_type] = {
            "precision": float(precision[i]),
            "recall": float(recall[i]),
            "f1-score": float(f1[i]),
            "support": int(counts["true"][i]),
            "predicted": int(counts["pred"][i]),
            "correct": int(counts["correct"][i]),
        }
    total = counts["total"]
    totals = {"support": total["true"], "predicted": total["pred"], "correct": total["correct"]}
    for average in ("micro", "macro", "weighted"):
        p, r, f = _averaged(counts, (precision, recall, f1), average)
        rows[f"{average} avg"] = {"precision": p, "recall": r, "f1-score": f, **totals}
    return rows


def chunk_classification_report(y_true, y_pred, *, labels=None, digits=2, output_dict=False):
    """Per-type and overall chunk scores, as a conlleval-like table or a dict.

    Chunks are read from the labels exactly as the CoNLL ``conlleval``
    script (version 2004-01-26) reads them. Each label is split at its
    first hyphen into a chunk tag and a type (``"B-NP"`` is tag ``B``, type
    ``NP``; a label without a hyphen is a tag without a type). A chunk
    starts or ends between two tokens according to the script's rules on
    the two tags and types:

    - a chunk starts on ``B`` and ``S``; on ``I`` and ``E`` after ``O``,
      ``E`` or ``S``; and on any tag but ``O`` and ``.`` whose type differs
      from the previous token's. So a chunk may start with ``I-`` (as in
      IOB1), and a type change inside a run of ``I-`` tags starts a new
      chunk;
    - a chunk ends before ``B``, ``S`` and ``O``, after ``E`` and ``S``,
      and when the type changes (except after ``.``);
    - ``[`` and ``]`` make one-token chunks; ``.`` continues a chunk;
    - every sentence is followed by an ``O``: chunks never span sentences.

    These rules read IOB1, IOB2 (BIO), IOE1, IOE2 and IOBES alike, so the
    same chunks written in any of them get the same scores. A label without
    a B/I/E/S prefix other than ``O`` (a bare ``"NP"``) never starts a
    chunk, as in conlleval (whose ``-r`` option is not reproduced). Types
    are case-sensitive; tags without a type (``"B"``) form chunks of type
    ``""``.

    Parameters
    ----------
    y_true : list of list of str
        True labels, one list per sentence.
    y_pred : list of list of str
        Predicted labels, shaped like ``y_true``.
    labels : list of str, default=None
        The chunk types to list, in this order (the averages are then taken
        over them only). By default, every type that has a chunk in
        ``y_true`` or ``y_pred``, sorted.
    digits : int, default=2
        Digits after the decimal point in the text table.
    output_dict : bool, default=False
        Return a dict instead of the text.

    Returns
    -------
    report : str or dict
        The text: a header with conlleval's counts (tokens, true chunks,
        predicted chunks, correct chunks), a row per chunk type with
        precision, recall, F1, support (number of true chunks) and the
        number of predicted chunks, the micro average (conlleval's overall
        line), macro and weighted averages, and the token accuracy. The
        dict maps each type and ``"micro avg"``, ``"macro avg"``,
        ``"weighted avg"`` to ``{"precision", "recall", "f1-score",
        "support", "predicted", "correct"}`` and ``"accuracy"`` to the token
        accuracy (a float).

    Examples
    --------
    >>> from sksparse_struct.metrics import chunk_classification_report
    >>> y_true = [["B-NP", "I-NP", "O", "B-VP"], ["B-PP", "B-NP"]]
    >>> y_pred = [["B-NP", "I-NP", "O", "B-NP"], ["B-PP", "B-NP"]]
    >>> print(chunk_classification_report(y_true, y_pred))
    processed 6 tokens with 4 chunks; found: 4 chunks; correct: 3.
    <BLANKLINE>
                  precision    recall  f1-score   support predicted
    <BLANKLINE>
              NP       0.67      1.00      0.80         2         3
              PP       1.00      1.00      1.00         1         1
              VP       0.00      0.00      0.00         1         0
    <BLANKLINE>
       micro avg       0.75      0.75      0.75         4         4
       macro avg       0.56      0.67      0.60         4         4
    weighted avg       0.58      0.75      0.65         4         4
    <BLANKLINE>
    token accuracy: 0.83 (5 of 6 tokens)
    >>> report = chunk_classification_report(y_true, y_pred, output_dict=True)
    >>> report["NP"]["precision"], report["micro avg"]["f1-score"], report["accuracy"]
    (0.6666666666666666, 0.75, 0.8333333333333334)
    """
    check_integer(digits, "digits", minimum=0)
    types, counts, n_correct_tags, n_tokens = _chunk_table(y_true, y_pred, labels)
    rows = _report_rows(types, counts)
    accuracy = n_correct_tags / n_tokens if n_tokens else 0.0
    if output_dict:
        rows["accuracy"] = accuracy
        return rows

    names = [str(t) for t in types] + ["micro avg", "macro avg", "weighted avg"]
    width = max(len(name) for name in names + ["weighted avg"])
    col = max(9, digits + 5)
    head = ["precision", "recall", "f1-score", "support", "predicted"]
    lines = [
        f"processed {n_tokens} tokens with {rows['micro avg']['support']} chunks; "
        f"found: {rows['micro avg']['predicted']} chunks; "
        f"correct: {rows['micro avg']['correct']}.",
        "",
        " " * width + "".join(f" {h:>{col}}" for h in head),
        "",
    ]

    def row_text(name, row):
        scores = "".join(
            f" {row[key]:>{col}.{digits}f}" for key in ("precision", "recall", "f1-score")
        )
        return f"{name:>{width}}{scores} {row['support']:>{col}} {row['predicted']:>{col}}"

    for chunk_type, name in zip(types, names):
        lines.append(row_text(name, rows[chunk_type]))
    if types:
        lines.append("")
    for name in ("micro avg", "macro avg", "weighted avg"):
        lines.append(row_text(name, rows[name]))
    lines += ["", f"token accuracy: {accuracy:.{digits}f} ({n_correct_tags} of {n_tokens} tokens)"]
    return "\n".join(line.rstrip() for line in lines)


# ---------------------------------------------------------------------------
# Token and sequence accuracy
# ---------------------------------------------------------------------------


def _flatten(y):
    return [label for seq in y for label in seq]


def flat_accuracy_score(y_true, y_pred):
    """Token accuracy: the fraction of tokens whose label is predicted exactly.

    Parameters
    ----------
    y_true : list of list of hashable
        True labels, one list per sequence; any hashable labels.
    y_pred : list of list of hashable
        Predicted labels, shaped like ``y_true``.

    Returns
    -------
    accuracy : float
        In [0, 1].

    Raises
    ------
    ValueError
        On mismatched shapes, or when there is no token at all (the
        accuracy is undefined).

    Examples
    --------
    >>> from sksparse_struct.metrics import flat_accuracy_score
    >>> flat_accuracy_score([["DET", "NOUN"], ["VERB"]], [["DET", "VERB"], ["VERB"]])
    0.6666666666666666
    """
    y_true, y_pred = _check_sequences(y_true, y_pred)
    n_tokens = _n_tokens(y_true)
    if n_tokens == 0:
        raise ValueError(
            "y_true holds no token (no sequence, or only empty ones): token "
            "accuracy is undefined."
        )
    n_equal = sum(
        sum(map(operator.eq, seq_true, seq_pred)) for seq_true, seq_pred in zip(y_true, y_pred)
    )
    return float(n_equal / n_tokens)


def sequence_accuracy_score(y_true, y_pred):
    """Whole-sequence accuracy: the fraction of sequences predicted without error.

    Parameters
    ----------
    y_true : list of list of hashable
        True labels, one list per sequence.
    y_pred : list of list of hashable
        Predicted labels, shaped like ``y_true``.

    Returns
    -------
    accuracy : float
        In [0, 1]. An empty sequence counts as predicted exactly.

    Raises
    ------
    ValueError
        On mismatched shapes, or when there is no sequence.

    Examples
    --------
    >>> from sksparse_struct.metrics import sequence_accuracy_score
    >>> sequence_accuracy_score([["DET", "NOUN"], ["VERB"]], [["DET", "VERB"], ["VERB"]])
    0.5
    """
    y_true, y_pred = _check_sequences(y_true, y_pred)
    if not y_true:
        raise ValueError("y_true holds no sequence: sequence accuracy is undefined.")
    n_exact = sum(
        all(map(operator.eq, seq_true, seq_pred)) for seq_true, seq_pred in zip(y_true, y_pred)
    )
    return float(n_exact / len(y_true))


def flat_classification_report(y_true, y_pred, *, labels=None, digits=2, output_dict=False,
                               zero_division="warn"):
    """Per-label token scores: :func:`sklearn.metrics.classification_report` on flattened labels.

    Each token is one sample; use it for tagging tasks scored per token
    (part of speech), and :func:`chunk_classification_report` for chunks.

    Parameters
    ----------
    y_true : list of list of hashable
        True labels, one list per sequence.
    y_pred : list of list of hashable
        Predicted labels, shaped like ``y_true``.
    labels : list, default=None
        The labels to report (default: all labels present, sorted).
    digits : int, default=2
        Digits after the decimal point in the text report.
    output_dict : bool, default=False
        Return a dict instead of the text.
    zero_division : {"warn", 0.0, 1.0, nan}, default="warn"
        Passed to scikit-learn.

    Returns
    -------
    report : str or dict
        As :func:`sklearn.metrics.classification_report`.

    Examples
    --------
    >>> from sksparse_struct.metrics import flat_classification_report
    >>> report = flat_classification_report([["DET", "NOUN"], ["VERB", "NOUN"]],
    ...                                     [["DET", "VERB"], ["VERB", "NOUN"]], output_dict=True)
    >>> report["VERB"]["precision"], report["NOUN"]["recall"], report["accuracy"]
    (0.5, 0.5, 0.75)
    """
    y_true, y_pred = _check_sequences(y_true, y_pred)
    return classification_report(
        _flatten(y_true), _flatten(y_pred), labels=labels, digits=digits,
        output_dict=output_dict, zero_division=zero_division,
    )


# ---------------------------------------------------------------------------
# Scorers
# ---------------------------------------------------------------------------

# For ``GridSearchCV(scoring=...)`` and ``cross_val_score(scoring=...)``:
# each calls ``estimator.predict(X)`` (a list of label lists) and scores it
# against the true label lists; greater is better for all three.
chunk_f1_scorer = make_scorer(chunk_f1_score)
flat_accuracy_scorer = make_scorer(flat_accuracy_score)
sequence_accuracy_scorer = make_scorer(sequence_accuracy_score)
