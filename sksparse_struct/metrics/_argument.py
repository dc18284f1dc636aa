"""Metrics for argument mining: link F1, proposition F1 and their average.

A target is ``(labels, links)`` per document: one label per proposition and
a list of ``(source, target)`` proposition-index pairs (source supports
target). Scores are pooled over the documents of ``y_true`` and ``y_pred``
("micro-averaged at the document level"), as in Niculae, Park and Cardie
(2017).
"""

import numpy as np
from sklearn.metrics import make_scorer

from ..utils._validation import check_integer

__all__ = [
    "argument_classification_report",
    "argument_f1_score",
    "argument_f1_scorer",
    "link_f1_score",
    "link_f1_scorer",
    "proposition_f1_score",
    "proposition_f1_scorer",
]

_AVERAGES = ("macro", "micro", "weighted", None)


def _check_document(target, doc, name):
    """``(labels, set of links)`` of one validated target."""
    try:
        labels, links = target
    except (TypeError, ValueError):
        raise ValueError(
            f"document {doc} of {name} must be a (labels, links) pair; got "
            f"{type(target).__name__} {target!r:.60}") from None
    if isinstance(labels, str):
        raise ValueError(f"document {doc} of {name}: labels must be a list, not a str")
    labels = list(labels)
    n = len(labels)
    out = set()
    for link in links:
        try:
            source, dest = link
            if not all(float(v).is_integer() for v in (source, dest)):
                raise ValueError
            source, dest = int(source), int(dest)
        except (TypeError, ValueError):
            raise ValueError(
                f"document {doc} of {name}: link {link!r:.40} is not a (source, "
                "target) pair of proposition indices") from None
        if not (0 <= source < n and 0 <= dest < n):
            raise ValueError(
                f"document {doc} of {name}: link {(source, dest)} refers to a "
                f"proposition out of range (the document has {n} propositions)")
        if source == dest:
            raise ValueError(
                f"document {doc} of {name}: link {(source, dest)} is a self-link")
        out.add((source, dest))
    return labels, out


def _check_targets(y_true, y_pred):
    """Validated lists of ``(labels, link set)`` for both arguments."""
    for name, y in (("y_true", y_true), ("y_pred", y_pred)):
        if isinstance(y, (str, dict)) or not hasattr(y, "__len__"):
            raise ValueError(
                f"{name} must be a list of (labels, links) pairs, one per document; "
                f"got {type(y).__name__}")
    if len(y_true) != len(y_pred):
        raise ValueError(
            f"y_true and y_pred must hold the same number of documents; got "
            f"{len(y_true)} and {len(y_pred)}")
    true, pred = [], []
    for doc, (t, p) in enumerate(zip(y_true, y_pred)):
        t = _check_document(t, doc, "y_true")
        p = _check_document(p, doc, "y_pred")
        if len(t[0]) != len(p[0]):
            raise ValueError(
                f"document {doc} has {len(t[0])} proposition labels in y_true but "
                f"{len(p[0])} in y_pred")
        true.append(t)
        pred.append(p)
    return true, pred


def _f1(tp, n_pred, n_true):
    # 0 when there is nothing to find and nothing found (zero_division=0).
    return 2 * tp / (n_pred + n_true) if n_pred + n_true else 0.0


def _link_counts(true, pred):
    tp = sum(len(t[1] & p[1]) for t, p in zip(true, pred))
    return tp, sum(len(p[1]) for p in pred), sum(len(t[1]) for t in true)


def _label_counts(true, pred, labels):
    """Per-label true positives, predicted and gold counts, pooled."""
    gold = [a for t in true for a in t[0]]
    guess = [a for p in pred for a in p[0]]
    if labels is None:
        labels = sorted(set(gold) | set(guess))
    else:
        if isinstance(labels, str):
            raise ValueError("labels must be a list of labels, not a str")
        labels = list(labels)
        if not labels:
            raise ValueError("labels must not be empty")
        if len(set(labels)) != len(labels):
            raise ValueError(f"labels has duplicates: {labels}")
    index = {a: i for i, a in enumerate(labels)}
    tp = np.zeros(len(labels))
    n_pred = np.zeros(len(labels))
    n_true = np.zeros(len(labels))
    for g, p in zip(gold, guess):
        i, j = index.get(g), index.get(p)
        if i is not None:
            n_true[i] += 1
        if j is not None:
            n_pred[j] += 1
            if g == p:
                tp[j] += 1
    return labels, tp, n_pred, n_true


def _mean(values):
    # No class at all (no proposition anywhere): 0, like an unscored class.
    return float(values.mean()) if len(values) else 0.0


def _prf(tp, n_pred, n_true):
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(n_pred > 0, tp / np.maximum(n_pred, 1), 0.0)
        recall = np.where(n_true > 0, tp / np.maximum(n_true, 1), 0.0)
        total = n_pred + n_true
        f1 = np.where(total > 0, 2 * tp / np.maximum(total, 1), 0.0)
    return precision, recall, f1


def link_f1_score(y_true, y_pred):
    """F1 score of the links, pooled over documents.

    Every ordered pair of distinct propositions of a document is a candidate
    link; the score is the binary F1 of the positive class over the
    candidates of all documents: a predicted link is correct if it is in the
    gold link set of its document. Links are compared as sets (duplicates
    count once).

    Parameters
    ----------
    y_true, y_pred : list of (labels, links)
        One target per document: ``labels`` one label per proposition,
        ``links`` ``(source, target)`` pairs of proposition indices.

    Returns
    -------
    score : float
        In [0, 1]; 0 when neither ``y_true`` nor ``y_pred`` has a link.

    See Also
    --------
    proposition_f1_score, argument_f1_score

    Examples
    --------
    >>> from sksparse_struct.metrics import link_f1_score
    >>> y_true = [(["value", "policy"], [(0, 1)]), (["fact", "value"], [(0, 1)])]
    >>> y_pred = [(["value", "value"], [(0, 1)]), (["fact", "value"], [(1, 0)])]
    >>> link_f1_score(y_true, y_pred)
    0.5
    """
    true, pred = _check_targets(y_true, y_pred)
    tp, n_pred, n_true = _link_counts(true, pred)
    return float(_f1(tp, n_pred, n_true))


def proposition_f1_score(y_true, y_pred, *, average="macro", labels=None):
    """F1 score of the proposition labels, pooled over documents.

    Parameters
    ----------
    y_true, y_pred : list of (labels, links)
        One target per document; the documents' proposition labels are
        pooled.
    average : {"macro", "micro", "weighted"} or None, default="macro"
        ``"macro"``: the unweighted mean of the per-class F1 scores (the
        argument-mining papers' proposition F1); ``"micro"``: F1 of all
        propositions (the accuracy); ``"weighted"``: per-class scores
        weighted by gold support; None: the per-class scores.
    labels : list of str, default=None
        The classes scored, in this order. By default the sorted union of
        the gold and predicted labels. A class given here but absent from
        both gold and prediction scores 0 (it still counts in the macro
        average), as in the evaluation of Niculae, Park and Cardie (2017).
        Propositions whose labels are not listed count in no class. To
        score cross-validation folds over a fixed set of classes, use
        ``make_scorer(proposition_f1_score, labels=[...])``.

    Returns
    -------
    score : float or ndarray of shape (n_labels,)
        In [0, 1]; an array, in the order of ``labels``, when
        ``average=None``.

    See Also
    --------
    link_f1_score, argument_f1_score, argument_classification_report

    Examples
    --------
    >>> from sksparse_struct.metrics import proposition_f1_score
    >>> y_true = [(["value", "policy"], [(0, 1)]), (["fact", "value"], [(0, 1)])]
    >>> y_pred = [(["value", "value"], [(0, 1)]), (["fact", "value"], [(1, 0)])]
    >>> proposition_f1_score(y_true, y_pred, average=None)
    array([1. , 0. , 0.8])
    >>> round(proposition_f1_score(y_true, y_pred), 4)
    0.6
    """
    if average not in _AVERAGES:
        raise ValueError(f"average must be one of {_AVERAGES}; got {average!r}")
    true, pred = _check_targets(y_true, y_pred)
    labels, tp, n_pred, n_true = _label_counts(true, pred, labels)
    if average == "micro":
        return float(_f1(tp.sum(), n_pred.sum(), n_true.sum()))
    f1 = _prf(tp, n_pred, n_true)[2]
    if average is None:
        return f1
    if average == "weighted":
        return float(f1 @ n_true / n_true.sum()) if n_true.sum() else 0.0
    return _mean(f1)


def argument_f1_score(y_true, y_pred, *, labels=None):
    """The mean of the link F1 and the proposition macro-F1.

    The summary score of Niculae, Park and Cardie (2017):
    ``(link_f1_score + proposition_f1_score(average="macro")) / 2``.

    Parameters
    ----------
    y_true, y_pred : list of (labels, links)
        One target per document.
    labels : list of str, default=None
        The proposition classes of the macro average (see
        :func:`proposition_f1_score`).

    Returns
    -------
    score : float
        In [0, 1].

    Examples
    --------
    >>> from sksparse_struct.metrics import argument_f1_score
    >>> y_true = [(["value", "policy"], [(0, 1)]), (["fact", "value"], [(0, 1)])]
    >>> y_pred = [(["value", "value"], [(0, 1)]), (["fact", "value"], [(1, 0)])]
    >>> round(argument_f1_score(y_true, y_pred), 4)
    0.55
    """
    true, pred = _check_targets(y_true, y_pred)
    link = _f1(*_link_counts(true, pred))
    labels, tp, n_pred, n_true = _label_counts(true, pred, labels)
    return (link + _mean(_prf(tp, n_pred, n_true)[2])) / 2


def argument_classification_report(y_true, y_pred, *, labels=None, digits=3):
    """A text report of link and per-class proposition precision, recall and F1.

    Parameters
    ----------
    y_true, y_pred : list of (labels, links)
        One target per document.
    labels : list of str, default=None
        The proposition classes reported (see :func:`proposition_f1_score`).
    digits : int, default=3
        Digits of the scores.

    Returns
    -------
    report : str
        One row for the links, one per proposition class, the proposition
        macro average, and the argument F1 (mean of link F1 and proposition
        macro-F1). Support is the number of gold items.

    Examples
    --------
    >>> from sksparse_struct.metrics import argument_classification_report
    >>> y_true = [(["value", "policy"], [(0, 1)]), (["fact", "value"], [(0, 1)])]
    >>> y_pred = [(["value", "value"], [(0, 1)]), (["fact", "value"], [(1, 0)])]
    >>> print(argument_classification_report(y_true, y_pred, digits=2))
                       precision    recall  f1-score   support
    <BLANKLINE>
                links       0.50      0.50      0.50         2
    <BLANKLINE>
                 fact       1.00      1.00      1.00         1
               policy       0.00      0.00      0.00         1
                value       0.67      1.00      0.80         2
    <BLANKLINE>
    macro avg (props)       0.56      0.67      0.60         4
          argument F1                           0.55
    <BLANKLINE>
    """
    digits = check_integer(digits, "digits", minimum=0)
    true, pred = _check_targets(y_true, y_pred)
    link_tp, link_pred, link_true = _link_counts(true, pred)
    labels, tp, n_pred, n_true = _label_counts(true, pred, labels)
    precision, recall, f1 = _prf(tp, n_pred, n_true)
    link_p, link_r, link_f = (float(v[0]) for v in _prf(
        np.array([link_tp]), np.array([link_pred]), np.array([link_true])))
    width = max([len(str(a)) for a in labels] + [len("macro avg (props)")])
    cell = max(digits + 2, 9)

    def row(name, values, support):
        scores = "".join(f"{v:>{cell + 1}.{digits}f}" for v in values)
        return f"{name:>{width}} {scores}{support:>{cell + 1}d}"

    head = "".join(f"{h:>{cell + 1}}" for h in ("precision", "recall", "f1-score",
                                                "support"))
    lines = [" " * width + " " + head, "", row("links", (link_p, link_r, link_f),
                                               int(link_true)), ""]
    for k, label in enumerate(labels):
        lines.append(row(str(label), (precision[k], recall[k], f1[k]), int(n_true[k])))
    lines.append("")
    lines.append(row("macro avg (props)", (_mean(precision), _mean(recall), _mean(f1)),
                     int(n_true.sum())))
    average = (link_f + _mean(f1)) / 2
    lines.append(f"{'argument F1':>{width}} " + " " * (2 * (cell + 1))
                 + f"{average:>{cell + 1}.{digits}f}")
    return "\n".join(lines) + "\n"


link_f1_scorer = make_scorer(link_f1_score)
proposition_f1_scorer = make_scorer(proposition_f1_score)
argument_f1_scorer = make_scorer(argument_f1_score)
