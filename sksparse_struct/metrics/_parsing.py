"""Metrics for dependency parsing: attachment scores, exact match, scorers.

Heads are given per sentence as sequences of integers, one per word, in the
CoNLL-U convention: ``0`` for the root, otherwise the 1-based index of the
head word (the format of ``read_conllu`` and of a parser's ``predict``).
Relation labels (``deprels``) are given per sentence as sequences of
strings.

The scores follow the official evaluation of the CoNLL 2018 shared task
(``conll18_ud_eval.py``) on gold tokenisation: UAS is the fraction of words
whose head is right, LAS the fraction whose head and relation are both
right, where relations are compared on their universal part only
(``"nsubj:pass"`` counts as ``"nsubj"``), punctuation included. Both are
micro-averaged: every word of every sentence weighs the same. Excluding
punctuation, as the older CoNLL-X and MaltEval evaluations did, is an
option.
"""

from collections.abc import Mapping

import numpy as np

from ..utils import as_heads, is_labelled_pair

__all__ = [
    "attachment_report",
    "exact_match_score",
    "exact_match_scorer",
    "las_score",
    "las_scorer",
    "make_attachment_scorer",
    "uas_score",
    "uas_scorer",
]

DEFAULT_PUNCT_TAGS = frozenset({"PUNCT"})

_HEADS_EXAMPLE = "[[2, 0, 2], [0]]"


# ---------------------------------------------------------------------------
# Input validation
# ---------------------------------------------------------------------------


def _as_sentence_list(x, name, what, example):
    """``x`` as a list with one sequence per sentence, rejecting flat input."""
    if isinstance(x, (str, bytes)) or not hasattr(x, "__iter__"):
        raise ValueError(
            f"{name} must be a list of {what}, one per sentence (e.g. {example}); "
            f"got {type(x).__name__} {x!r:.60}."
        )
    x = list(x)
    for i, seq in enumerate(x):
        if isinstance(seq, (str, bytes)) or not hasattr(seq, "__len__"):
            raise ValueError(
                f"{name} must be a list of {what}, one per sentence (e.g. "
                f"{example}), but its element {i} is the {type(seq).__name__} "
                f"{seq!r:.60}. A single sentence must be wrapped in a list."
            )
    return x


def _check_heads(heads_true, heads_pred):
    """Both head lists as lists of int64 arrays of matching lengths."""
    heads_true = _as_sentence_list(heads_true, "heads_true", "head sequences", _HEADS_EXAMPLE)
    heads_pred = _as_sentence_list(heads_pred, "heads_pred", "head sequences", _HEADS_EXAMPLE)
    if len(heads_true) != len(heads_pred):
        raise ValueError(
            f"heads_true and heads_pred must hold the same number of sentences; "
            f"got {len(heads_true)} and {len(heads_pred)}."
        )
    if not heads_true:
        raise ValueError("heads_true holds no sentence: the score is undefined.")
    for i, (seq_true, seq_pred) in enumerate(zip(heads_true, heads_pred)):
        if len(seq_true) != len(seq_pred):
            raise ValueError(
                f"sentence {i} has {len(seq_true)} words in heads_true but "
                f"{len(seq_pred)} in heads_pred."
            )
    heads_true = [as_heads(seq, "heads_true", i) for i, seq in enumerate(heads_true)]
    heads_pred = [as_heads(seq, "heads_pred", i) for i, seq in enumerate(heads_pred)]
    return heads_true, heads_pred


def _shaped_like_heads(seqs, name, what, example, lengths, per_sentence, items):
    """``seqs`` as a list of one sequence per sentence of the heads, each as long as it."""
    seqs = _as_sentence_list(seqs, name, what, example)
    if len(seqs) != len(lengths):
        raise ValueError(f"{name} must hold {per_sentence} ({len(lengths)}); got {len(seqs)}.")
    for i, (seq, n) in enumerate(zip(seqs, lengths)):
        if len(seq) != n:
            raise ValueError(
                f"sentence {i} has {n} words in the heads but {len(seq)} {items} in {name}."
            )
    return seqs


def _check_deprels(deprels, name, lengths, universal_only):
    """One deprel list as a list of object arrays of strings, shaped as the heads."""
    deprels = _shaped_like_heads(
        deprels, name, "relation-label sequences", "[['nsubj', 'root'], ['root']]",
        lengths, "one label sequence per sentence of the heads", "labels")
    out = []
    for i, seq in enumerate(deprels):
        labels = []
        for j, label in enumerate(seq):
            if not isinstance(label, str):
                raise ValueError(
                    f"relation labels must be strings; {name}[{i}][{j}] (word "
                    f"{j + 1} of sentence {i}) is the {type(label).__name__} "
                    f"{label!r:.60}."
                )
            # CoNLL 2018: subtypes after the colon are language-specific.
            labels.append(label.partition(":")[0] if universal_only else label)
        out.append(np.array(labels, dtype=object))
    return out


def _check_punct_tags(punct_tags):
    if punct_tags is None:
        return DEFAULT_PUNCT_TAGS
    if isinstance(punct_tags, str):
        raise ValueError(
            f"punct_tags must be a collection of UPOS tags such as {{'PUNCT', "
            f"'SYM'}}; got the string {punct_tags!r}."
        )
    try:
        tags = frozenset(punct_tags)
    except TypeError as exc:
        raise ValueError(
            f"punct_tags must be a collection of UPOS tags such as {{'PUNCT', "
            f"'SYM'}}; got {punct_tags!r:.60}."
        ) from exc
    for tag in tags:
        if not isinstance(tag, str):
            raise ValueError(f"punct_tags must hold strings; got {tag!r:.60}.")
    return tags


def _upos_tags(sentences, lengths):
    """The UPOS tag of every word, from token dicts (key ``"upos"``) or tag strings."""
    sentences = _shaped_like_heads(
        sentences, "sentences", "token sequences",
        "[[{'form': 'Hi', 'upos': 'INTJ'}, {'form': '!', 'upos': 'PUNCT'}]]",
        lengths, "one sentence per head sequence", "tokens")
    tags = []
    for i, tokens in enumerate(sentences):
        row = []
        for j, token in enumerate(tokens):
            if isinstance(token, str):
                row.append(token)
            elif isinstance(token, Mapping) and isinstance(token.get("upos"), str):
                row.append(token["upos"])
            else:
                raise ValueError(
                    f"each token of sentences must be a dict with a string "
                    f"'upos' entry (as read_conllu returns them) or a UPOS tag "
                    f"string; token {j} of sentence {i} is {token!r:.80}."
                )
        tags.append(row)
    return tags


def _scored_masks(sentences, lengths, exclude_punct, punct_tags):
    """Per sentence, the boolean mask of the words that are scored."""
    if not exclude_punct:
        if punct_tags is not None:
            raise ValueError(
                "punct_tags is only used with exclude_punct=True; set "
                "exclude_punct=True to leave punctuation out."
            )
        if sentences is not None:
            _upos_tags(sentences, lengths)  # still catch misaligned input
        return [np.ones(n, dtype=bool) for n in lengths]
    if sentences is None:
        raise ValueError(
            "exclude_punct=True needs the sentences (sentences=X, the token "
            "dicts of read_conllu) to know which words are punctuation."
        )
    tags = _check_punct_tags(punct_tags)
    return [
        np.array([tag not in tags for tag in row], dtype=bool)
        for row in _upos_tags(sentences, lengths)
    ]


def _attachment_counts(heads_true, heads_pred, deprels_true=None, deprels_pred=None, *,
                       sentences=None, exclude_punct=False, punct_tags=None,
                       universal_only=True):
    """Validate everything and count; the one place every metric goes through."""
    heads_true, heads_pred = _check_heads(heads_true, heads_pred)
    lengths = [len(h) for h in heads_true]
    if (deprels_true is None) != (deprels_pred is None):
        given, missing = (
            ("deprels_true", "deprels_pred") if deprels_pred is None
            else ("deprels_pred", "deprels_true"))
        raise ValueError(
            f"{given} was given without {missing}: labelled scores need both."
        )
    labelled = deprels_true is not None
    if labelled:
        deprels_true = _check_deprels(deprels_true, "deprels_true", lengths, universal_only)
        deprels_pred = _check_deprels(deprels_pred, "deprels_pred", lengths, universal_only)
    masks = _scored_masks(sentences, lengths, exclude_punct, punct_tags)

    counts = {"n_sentences": len(heads_true), "n_words": 0, "n_excluded": 0,
              "n_correct_heads": 0, "n_exact_unlabelled": 0}
    if labelled:
        counts.update(n_correct_labels=0, n_correct_labelled=0, n_exact_labelled=0)
    for i, (h_true, h_pred, mask) in enumerate(zip(heads_true, heads_pred, masks)):
        head_ok = (h_true == h_pred)[mask]
        counts["n_words"] += int(mask.sum())
        counts["n_excluded"] += int(mask.size - mask.sum())
        counts["n_correct_heads"] += int(head_ok.sum())
        counts["n_exact_unlabelled"] += bool(head_ok.all())
        if labelled:
            label_ok = (deprels_true[i] == deprels_pred[i])[mask].astype(bool)
            both_ok = head_ok & label_ok
            counts["n_correct_labels"] += int(label_ok.sum())
            counts["n_correct_labelled"] += int(both_ok.sum())
            counts["n_exact_labelled"] += bool(both_ok.all())
    return counts


def _word_fraction(counts, key):
    if counts["n_words"] == 0:
        raise ValueError(
            "there is no word to score (only empty sentences, or only "
            "punctuation with exclude_punct=True): the score is undefined."
        )
    return counts[key] / counts["n_words"]


# ---------------------------------------------------------------------------
# Public metrics
# ---------------------------------------------------------------------------

_COMMON_PARAMETERS = """\
    sentences : list of list of dict or of str, default=None
        The words of each sentence: the token dicts of ``read_conllu`` (only
        their ``"upos"`` entry is read) or UPOS tag strings. Needed only
        with ``exclude_punct=True``; when given, its shape is checked
        against the heads in any case.
    exclude_punct : bool, default=False
        Leave out the words whose UPOS tag is in ``punct_tags``. Off by
        default, as in the CoNLL 2018 evaluation; the CoNLL-X evaluation
        and many papers on English left punctuation out.
    punct_tags : collection of str, default=None
        The UPOS tags treated as punctuation with ``exclude_punct=True``;
        ``None`` means ``{"PUNCT"}`` (add ``"SYM"`` for symbols such as
        ``$`` or ``%``, which UD does not count as punctuation)."""


def _doc(func):
    if func.__doc__:  # None under python -OO
        func.__doc__ = func.__doc__.replace("    %(common)s", _COMMON_PARAMETERS)
    return func


@_doc
def uas_score(heads_true, heads_pred, *, sentences=None, exclude_punct=False,
              punct_tags=None):
    """Unlabelled attachment score: the fraction of words given their true head.

    Micro-averaged: every scored word of every sentence counts once, so long
    sentences weigh more than short ones (as in the CoNLL evaluations).

    Parameters
    ----------
    heads_true : list of array-like of int
        True heads, one sequence per sentence: for each word, 0 when it
        hangs from the root, else the 1-based index of its head.
    heads_pred : list of array-like of int
        Predicted heads, with the same number of sentences and of words in
        each sentence. They are not required to form trees.
    %(common)s

    Returns
    -------
    uas : float
        In [0, 1].

    Raises
    ------
    ValueError
        On mismatched shapes, heads that are not integers in [0, n] for a
        sentence of n words, or when there is no word to score.

    See Also
    --------
    las_score : head and relation both right.
    uas_scorer : this score as a scorer for ``GridSearchCV``.

    Examples
    --------
    >>> from sksparse_struct.metrics import uas_score
    >>> heads_true = [[2, 0, 2], [0, 1]]
    >>> heads_pred = [[2, 0, 1], [0, 1]]
    >>> uas_score(heads_true, heads_pred)
    0.8
    >>> upos = [["PRON", "VERB", "PUNCT"], ["INTJ", "PUNCT"]]
    >>> uas_score(heads_true, heads_pred, sentences=upos, exclude_punct=True)
    1.0
    """
    counts = _attachment_counts(heads_true, heads_pred, sentences=sentences,
                                exclude_punct=exclude_punct, punct_tags=punct_tags)
    return float(_word_fraction(counts, "n_correct_heads"))


@_doc
def las_score(heads_true, heads_pred, deprels_true, deprels_pred, *, universal_only=True,
              sentences=None, exclude_punct=False, punct_tags=None):
    """Labelled attachment score: the fraction of words with the true head and relation.

    Micro-averaged over all scored words, like :func:`uas_score`.

    Parameters
    ----------
    heads_true : list of array-like of int
        True heads, one sequence per sentence (0 for the root, else the
        1-based index of the head word).
    heads_pred : list of array-like of int
        Predicted heads, shaped like ``heads_true``.
    deprels_true : list of list of str
        True relation labels, one per word.
    deprels_pred : list of list of str
        Predicted relation labels, shaped like ``deprels_true``.
    universal_only : bool, default=True
        Compare the universal part of the labels only, the part before the
        first colon (``"nsubj:pass"`` matches ``"nsubj"``), as the official
        CoNLL 2018 evaluation does. ``False`` compares the full labels.
    %(common)s

    Returns
    -------
    las : float
        In [0, 1]; never more than the UAS.

    Raises
    ------
    ValueError
        On mismatched shapes, bad heads, labels that are not strings, or
        when there is no word to score.

    Examples
    --------
    >>> from sksparse_struct.metrics import las_score
    >>> heads_true, heads_pred = [[2, 0, 2]], [[2, 0, 2]]
    >>> deprels_true = [["nsubj:pass", "root", "punct"]]
    >>> deprels_pred = [["nsubj", "root", "obj"]]
    >>> round(las_score(heads_true, heads_pred, deprels_true, deprels_pred), 3)
    0.667
    >>> round(las_score(heads_true, heads_pred, deprels_true, deprels_pred,
    ...                 universal_only=False), 3)
    0.333
    """
    counts = _attachment_counts(
        heads_true, heads_pred, deprels_true, deprels_pred, sentences=sentences,
        exclude_punct=exclude_punct, punct_tags=punct_tags, universal_only=universal_only)
    return float(_word_fraction(counts, "n_correct_labelled"))


@_doc
def exact_match_score(heads_true, heads_pred, deprels_true=None, deprels_pred=None, *,
                      universal_only=True, sentences=None, exclude_punct=False,
                      punct_tags=None):
    """Exact match: the fraction of sentences whose every head is right.

    With ``deprels_true`` and ``deprels_pred``, the labelled variant: every
    head and every relation of the sentence must be right.

    Parameters
    ----------
    heads_true : list of array-like of int
        True heads, one sequence per sentence (0 for the root, else the
        1-based index of the head word).
    heads_pred : list of array-like of int
        Predicted heads, shaped like ``heads_true``.
    deprels_true, deprels_pred : list of list of str, default=None
        True and predicted relation labels, both or neither.
    universal_only : bool, default=True
        Compare the universal part of the labels only (see :func:`las_score`).
    %(common)s

    Returns
    -------
    exact_match : float
        In [0, 1]. Every sentence is counted; with ``exclude_punct=True`` a
        sentence matches when its non-punctuation words are all right, so
        an empty sentence or one made of punctuation only always matches.

    Raises
    ------
    ValueError
        On mismatched shapes, bad heads or labels, or no sentence at all.

    Examples
    --------
    >>> from sksparse_struct.metrics import exact_match_score
    >>> heads_true = [[2, 0, 2], [0, 1]]
    >>> heads_pred = [[2, 0, 1], [0, 1]]
    >>> exact_match_score(heads_true, heads_pred)
    0.5
    >>> exact_match_score(heads_true, heads_pred, [["nsubj", "root", "punct"], ["root", "obj"]],
    ...                   [["nsubj", "root", "punct"], ["root", "nsubj"]])
    0.0
    """
    counts = _attachment_counts(
        heads_true, heads_pred, deprels_true, deprels_pred, sentences=sentences,
        exclude_punct=exclude_punct, punct_tags=punct_tags, universal_only=universal_only)
    key = "n_exact_unlabelled" if deprels_true is None else "n_exact_labelled"
    return float(counts[key] / counts["n_sentences"])


@_doc
def attachment_report(heads_true, heads_pred, deprels_true=None, deprels_pred=None, *,
                      universal_only=True, sentences=None, exclude_punct=False,
                      punct_tags=None):
    """All attachment scores and the counts behind them, in one dict.

    Parameters
    ----------
    heads_true : list of array-like of int
        True heads, one sequence per sentence (0 for the root, else the
        1-based index of the head word).
    heads_pred : list of array-like of int
        Predicted heads, shaped like ``heads_true``.
    deprels_true, deprels_pred : list of list of str, default=None
        True and predicted relation labels, both or neither; without them
        the labelled entries are left out.
    universal_only : bool, default=True
        Compare the universal part of the labels only (see :func:`las_score`).
    %(common)s

    Returns
    -------
    report : dict
        ``"uas"``, ``"unlabelled_exact_match"`` and, with labels, ``"las"``,
        ``"label_accuracy"`` (the fraction of words with the right relation,
        whatever their head) and ``"labelled_exact_match"``, as floats; the
        integer counts ``"n_sentences"``, ``"n_words"`` (scored words),
        ``"n_excluded"`` (punctuation left out), ``"n_correct_heads"``,
        ``"n_exact_unlabelled"`` and, with labels, ``"n_correct_labels"``,
        ``"n_correct_labelled"``, ``"n_exact_labelled"``. The word scores
        are ``nan`` when no word is scored.

    Examples
    --------
    >>> from sksparse_struct.metrics import attachment_report
    >>> report = attachment_report([[2, 0, 2], [0, 1]], [[2, 0, 1], [0, 1]],
    ...                            [["nsubj", "root", "punct"], ["root", "obj"]],
    ...                            [["nsubj", "root", "punct"], ["root", "nsubj"]])
    >>> report["uas"], report["las"], report["label_accuracy"], report["n_words"]
    (0.8, 0.6, 0.8, 5)
    >>> report["unlabelled_exact_match"], report["labelled_exact_match"]
    (0.5, 0.0)
    """
    counts = _attachment_counts(
        heads_true, heads_pred, deprels_true, deprels_pred, sentences=sentences,
        exclude_punct=exclude_punct, punct_tags=punct_tags, universal_only=universal_only)
    n_words, n_sentences = counts["n_words"], counts["n_sentences"]

    def per_word(key):
        return counts[key] / n_words if n_words else float("nan")

    report = {"uas": per_word("n_correct_heads"),
              "unlabelled_exact_match": counts["n_exact_unlabelled"] / n_sentences}
    if deprels_true is not None:
        report["las"] = per_word("n_correct_labelled")
        report["label_accuracy"] = per_word("n_correct_labels")
        report["labelled_exact_match"] = counts["n_exact_labelled"] / n_sentences
    report.update(counts)
    return report


# ---------------------------------------------------------------------------
# Scorers
# ---------------------------------------------------------------------------


def _split_target(y, labelled):
    """``y`` as ``(heads, deprels)``: y is head sequences or (heads, deprels) pairs."""
    y = _as_sentence_list(y, "y", "head sequences or (heads, deprels) pairs", _HEADS_EXAMPLE)
    pairs = [is_labelled_pair(item) for item in y]
    if y and all(pairs):
        return [item[0] for item in y], [item[1] for item in y]
    if any(pairs):
        i = pairs.index(not pairs[0])
        raise ValueError(
            f"y mixes (heads, deprels) pairs and plain head sequences (sentence "
            f"0 and sentence {i} differ); give one form for every sentence."
        )
    if labelled:
        raise ValueError(
            "labelled scores need the true relations: y must be a list of "
            "(heads, deprels) pairs, one per sentence, not head sequences only."
        )
    return y, None


class _AttachmentScorer:
    """Scorer ``(estimator, X, y) -> float`` for ``GridSearchCV`` and ``cross_val_score``.

    Built by :func:`make_attachment_scorer`; see there.
    """

    _LABELLED = {"las": True, "labelled_exact_match": True,
                 "uas": False, "exact_match": False}

    def __init__(self, metric, exclude_punct, punct_tags, universal_only):
        self.metric = metric
        self.exclude_punct = exclude_punct
        self.punct_tags = punct_tags
        self.universal_only = universal_only

    def __call__(self, estimator, X, y, sample_weight=None):
        if sample_weight is not None:
            raise ValueError("attachment scorers do not support sample_weight.")
        labelled = self._LABELLED[self.metric]
        heads_true, deprels_true = _split_target(y, labelled)
        if not labelled:
            deprels_true = None
        if labelled:
            pred = estimator.predict(X, return_deprel=True)
            if not isinstance(pred, tuple) or len(pred) != 2:
                raise ValueError(
                    f"{self.metric} scoring calls estimator.predict(X, "
                    f"return_deprel=True), which must return a tuple (heads, "
                    f"deprels) of two lists; got {type(pred).__name__}."
                )
            heads_pred, deprels_pred = pred
        else:
            heads_pred, deprels_pred = estimator.predict(X), None
        kwargs = {"sentences": X if self.exclude_punct else None,
                  "exclude_punct": self.exclude_punct, "punct_tags": self.punct_tags}
        if self.metric == "uas":
            return uas_score(heads_true, heads_pred, **kwargs)
        if self.metric == "las":
            return las_score(heads_true, heads_pred, deprels_true, deprels_pred,
                             universal_only=self.universal_only, **kwargs)
        return exact_match_score(heads_true, heads_pred, deprels_true, deprels_pred,
                                 universal_only=self.universal_only, **kwargs)

    def __repr__(self):
        args = [repr(self.metric)]
        if self.exclude_punct:
            args.append("exclude_punct=True")
        if self.punct_tags is not None:
            args.append(f"punct_tags={sorted(self.punct_tags)!r}")
        if not self.universal_only:
            args.append("universal_only=False")
        return f"make_attachment_scorer({', '.join(args)})"


def make_attachment_scorer(metric="uas", *, exclude_punct=False, punct_tags=None,
                           universal_only=True):
    """A scorer for ``GridSearchCV(scoring=...)`` and ``cross_val_score`` on parsers.

    The scorer is called as ``scorer(estimator, X, y)``, with ``X`` the
    sentences (the token dicts of ``read_conllu``) and ``y`` either a list
    of head sequences or a list of ``(heads, deprels)`` pairs, one per
    sentence (the form that carries the relations through the
    cross-validation splits). Unlabelled metrics score
    ``estimator.predict(X)``, a list of head sequences, and use the heads
    of ``y`` only. Labelled metrics need the pairs and score
    ``estimator.predict(X, return_deprel=True)``, which must return a tuple
    ``(heads, deprels)`` of two lists, one entry per sentence each. With
    ``exclude_punct=True``, ``X`` is passed on as ``sentences``.

    Parameters
    ----------
    metric : {"uas", "las", "exact_match", "labelled_exact_match"}, default="uas"
        :func:`uas_score`, :func:`las_score`, or :func:`exact_match_score`
        unlabelled or labelled.
    exclude_punct : bool, default=False
        Leave out the words whose ``"upos"`` in ``X`` is in ``punct_tags``.
    punct_tags : collection of str, default=None
        The punctuation tags; ``None`` means ``{"PUNCT"}``.
    universal_only : bool, default=True
        For labelled metrics, compare the universal part of the relations
        only (the part before the first colon), as CoNLL 2018 does.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y) -> float``, greater is better; it can be
        pickled.

    Examples
    --------
    >>> from sksparse_struct.metrics import make_attachment_scorer
    >>> make_attachment_scorer("las", exclude_punct=True)
    make_attachment_scorer('las', exclude_punct=True)
    """
    if metric not in _AttachmentScorer._LABELLED:
        raise ValueError(
            f"metric must be 'uas', 'las', 'exact_match' or "
            f"'labelled_exact_match'; got {metric!r}."
        )
    if punct_tags is not None:
        if not exclude_punct:
            raise ValueError("punct_tags is only used with exclude_punct=True.")
        punct_tags = _check_punct_tags(punct_tags)
    return _AttachmentScorer(metric, bool(exclude_punct), punct_tags, bool(universal_only))


# Ready-made scorers, punctuation included; y may be head sequences or
# (heads, deprels) pairs (las_scorer needs the pairs).
uas_scorer = make_attachment_scorer("uas")
las_scorer = make_attachment_scorer("las")
exact_match_scorer = make_attachment_scorer("exact_match")
