"""Numba kernels of the parser's tag filter on candidate arcs (``arc_filter="tags"``).

An arc's key combines the UPOS of its head and modifier, its direction and
its distance bin; the filter keeps an arc when its key is among the sorted
keys of the training trees' arcs, and always keeps arcs from the root and
between neighbours, so that a tree always exists. Token attributes are the
stacked ``tokens`` array of ``_arc_features_fast``, sentence ``s`` on rows
``offsets[s]`` (its root) to ``offsets[s + 1] - 1``.
"""

import numpy as np

from ..feature_extraction._arc_features_fast import UPOS, distance_bin
from ..utils._numba import njit

__all__ = ["arc_allowed", "arc_filter_key", "count_allowed_arcs", "gold_arc_keys"]


@njit
def arc_filter_key(tokens, start, h, m):
    """Key of the arc ``h -> m`` for the tag filter: head and modifier UPOS, direction, distance bin."""
    right = h < m
    d = m - h if right else h - m
    key = (tokens[start + h, UPOS] * 1000003) ^ tokens[start + m, UPOS]
    return key * 16 + distance_bin(d) + (8 if right else 0)


@njit
def arc_allowed(tokens, start, h, m, keys, use_filter):
    """Whether the filter keeps ``h -> m``: always for root and neighbour arcs (so that a
    tree always exists), otherwise when its key is among the sorted ``keys``."""
    if not use_filter or h == 0 or h - m == 1 or m - h == 1:
        return True
    key = arc_filter_key(tokens, start, h, m)
    # Binary search written out: np.searchsorted would compile numba's generic
    # comparisons (complex numbers included), slower to compile than this kernel.
    lo = 0
    hi = keys.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if keys[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo < keys.shape[0] and keys[lo] == key


@njit
def gold_arc_keys(tokens, offsets, heads, sent_ids):
    """Filter keys of the gold arcs of the sentences ``sent_ids`` (repeats included).

    Root arcs are left out: the filter always keeps them.
    """
    total = 0
    for t in range(sent_ids.shape[0]):
        s = sent_ids[t]
        total += offsets[s + 1] - offsets[s] - 1
    keys = np.empty(total, dtype=np.int64)
    k = 0
    for t in range(sent_ids.shape[0]):
        s = sent_ids[t]
        start = offsets[s]
        for m in range(1, offsets[s + 1] - start):
            h = heads[start + m]
            if h > 0:
                keys[k] = arc_filter_key(tokens, start, h, m)
                k += 1
    return keys[:k]


@njit
def count_allowed_arcs(tokens, offsets, sent_ids, keys):
    """Candidate arcs of the sentences ``sent_ids``, and how many the filter keeps."""
    total = 0
    kept = 0
    for t in range(sent_ids.shape[0]):
        s = sent_ids[t]
        start = offsets[s]
        n = offsets[s + 1] - start - 1
        for h in range(n + 1):
            for m in range(1, n + 1):
                if h != m:
                    total += 1
                    if arc_allowed(tokens, start, h, m, keys, True):
                        kept += 1
    return total, kept

