"""Numba kernels that score arcs and relation labels, and push gradients through their features.

Arc scores are ``(n + 1, n + 1)`` matrices as ``DependencyTree`` takes them;
an arc's score is the sum of the weights of its hashed features
(``_arc_features_fast``; every feature has value 1). Relation labels are
scored by a multiclass linear model on :func:`label_features` conjoined with
the label, in the same weight vector. Gradients go into the online
learner's sparse gradient (``learners._online_fast.push``).

The weights are read from memory in an order that hides the latency of
their scattered cache lines: the lines of the next arc (or label block) are
requested while the current one is summed (``utils._prefetch_fast``). The
sums are the same, term by term, as reading each weight when needed.
"""

import numpy as np

from ..feature_extraction._arc_features_fast import (
    LABEL_FEATURES,
    LABEL_GROUP,
    arc_features_from_states,
    index_shift,
    label_block,
    label_features,
    token_states,
)
from ..learners._online_fast import push
from ..utils._numba import njit
from ..utils._prefetch_fast import prefetch, prefetch_and_sum
from ._arc_filter_fast import arc_allowed

__all__ = ["add_arc", "label_scores", "label_work", "sentence_scores", "sparsified"]


@njit
def sentence_scores(tokens, start, n, w, preset, mask, keys, use_filter, S, HS, MS, aux, buf,
                    buf2):
    """Arc scores of one sentence into ``S`` (``(n + 1, n + 1)``; -inf off the arcs).

    With ``use_filter``, arcs the tag filter drops (:func:`arc_allowed`)
    score -inf and their features are never enumerated. Also leaves the
    sentence's template states in ``HS``, ``MS`` (for :func:`add_arc`).
    ``buf`` and ``buf2`` are work space of ``max_arc_features(n)`` entries
    each.

    The weights are read one arc late: the indices of an arc are computed,
    then the previous arc, whose lines have had the time to arrive, is
    summed while the new arc's lines are requested, one between two reads
    (``utils._prefetch_fast.prefetch_and_sum``). The sums are the same,
    term by term, as reading each weight when needed.
    """
    token_states(tokens, start, n, HS, MS, aux)
    shift = index_shift(mask)
    for h in range(n + 1):
        S[h, 0] = -np.inf
        S[h, h] = -np.inf
    cur_buf, prev_buf = buf, buf2
    prev_h = -1
    prev_m = -1
    prev_k = 0
    for h in range(n + 1):
        for m in range(1, n + 1):
            if h == m:
                continue
            if not arc_allowed(tokens, start, h, m, keys, use_filter):
                S[h, m] = -np.inf
                continue
            k = arc_features_from_states(tokens, start, n, h, m, preset, HS, MS, aux,
                                         shift, mask, cur_buf)
            total = prefetch_and_sum(cur_buf, k, prev_buf, prev_k, w)
            if prev_h >= 0:
                S[prev_h, prev_m] = total
            cur_buf, prev_buf = prev_buf, cur_buf
            prev_h = h
            prev_m = m
            prev_k = k
    if prev_h >= 0:
        S[prev_h, prev_m] = _sum(prev_buf, prev_k, w)


@njit(inline="always")
def _sum(buf, k, w):
    s = 0.0
    for j in range(k):
        s += w[buf[j]]
    return s


@njit(internal=True)
def add_arc(tokens, start, n, h, m, value, preset, HS, MS, aux, shift, mask, buf, grad, col,
            touched, n_touched, stamp):
    """Add ``value`` times the features of ``h -> m`` to ``grad[:, col]``; return the new count."""
    k = arc_features_from_states(tokens, start, n, h, m, preset, HS, MS, aux, shift, mask, buf)
    for j in range(k):
        n_touched = push(buf[j], value, grad, col, touched, n_touched, stamp)
    return n_touched


@njit(inline="always")
def label_work(n_labels):
    """Work space of :func:`label_scores`: features, their blocks, the scores."""
    n_groups = max((n_labels + LABEL_GROUP - 1) // LABEL_GROUP, 1)
    return (np.empty(LABEL_FEATURES, dtype=np.int64),
            np.empty(LABEL_FEATURES * n_groups, dtype=np.int64),
            np.empty(max(n_labels, 1)))


# Blocks of label weights requested ahead of the one being summed.
_LABEL_PREFETCH = 4


@njit
def label_scores(tokens, start, n, h, m, w, n_labels, shift, mask, fbuf, bases, out):
    """Scores of every label for the arc ``h -> m`` into ``out``; return the feature count.

    ``fbuf`` and ``bases`` are work space (:func:`label_work`). The blocks
    of weights of all the features are located first; the lines of each are
    then requested ``_LABEL_PREFETCH`` blocks before they are summed (the
    sums are the same, in the same order, as reading the blocks one after
    the other).
    """
    k = label_features(tokens, start, n, h, m, mask, fbuf)
    for lab in range(n_labels):
        out[lab] = 0.0
    n_groups = (n_labels + LABEL_GROUP - 1) // LABEL_GROUP
    n_blocks = 0
    for j in range(k):
        for group in range(n_groups):
            bases[n_blocks] = label_block(fbuf[j], group, shift, mask)
            n_blocks += 1
    for b in range(min(n_blocks, _LABEL_PREFETCH)):
        _prefetch_label_block(w, bases[b], mask)
    for b in range(n_blocks):
        if b + _LABEL_PREFETCH < n_blocks:
            _prefetch_label_block(w, bases[b + _LABEL_PREFETCH], mask)
        base = bases[b]
        first = (b % n_groups) * LABEL_GROUP
        last = min(first + LABEL_GROUP, n_labels)
        for lab in range(first, last):
            out[lab] += w[(base ^ (lab - first)) & mask]
    return k


@njit(inline="always")
def _prefetch_label_block(w, base, mask):
    """Request the cache lines of the ``LABEL_GROUP`` weights of one block."""
    first = base & ~(LABEL_GROUP - 1) & mask
    for line in range(0, min(LABEL_GROUP, w.shape[0]), 8):
        prefetch(w, first + line)


_MIX1 = -4658895280553007687  # 0xbf58476d1ce4e5b9 as a signed int64 (SplitMix64)
_MIX2 = -7723592293110705685  # 0x94d049bb133111eb
_LOW34 = 0x3FFFFFFFF
_LOW37 = 0x1FFFFFFFFF
_LOW33 = 0x1FFFFFFFF


@njit(inline="always")
def arc_uniform(seed, step, sentence, arc):
    """A uniform number in [0, 1) for one arc of one sentence at one step.

    A counter-based generator (SplitMix64's finaliser on the key): the draw
    depends only on its key, not on the order or the thread in which the
    arcs are visited, so results do not depend on ``n_jobs``.
    """
    x = seed + step * -7046029254386353131 + sentence * 1000003 * 1000033 + arc
    x ^= (x >> 30) & _LOW34
    x *= _MIX1
    x ^= (x >> 27) & _LOW37
    x *= _MIX2
    x ^= (x >> 31) & _LOW33
    return ((x >> 11) & 0x1FFFFFFFFFFFFF) * (1.0 / 9007199254740992.0)


@njit(inline="always")
def sparsified(v, min_gradient, seed, step, sentence, arc):
    """``v``, or for ``|v| < min_gradient`` an unbiased sparse stand-in.

    Small entries become ``sign(v) * min_gradient`` with probability
    ``|v| / min_gradient`` and 0 otherwise: the same expectation, and most
    of them are skipped.
    """
    a = abs(v)
    if a >= min_gradient or a == 0.0:
        return v
    if arc_uniform(seed, step, sentence, arc) * min_gradient >= a:
        return 0.0
    return min_gradient if v > 0.0 else -min_gradient


