"""Kernels on dependency trees whatever their kind: MAP, marginals, projectivisation.

Arc scores are ``(n + 1, n + 1)`` matrices as ``DependencyTree`` takes them
(``S[h, m]`` scores the arc ``h -> m``, 0 is the root); heads are arrays of
length ``n + 1`` with ``heads[m]`` the head of word ``m``. Each function
dispatches on ``projective`` to Eisner's algorithm and inside-outside
(``_projective_fast``) or to Chu-Liu-Edmonds and the matrix-tree theorem
(``_nonprojective_fast``).
"""

import numpy as np

from ..utils._numba import njit
from ._nonprojective_fast import (
    chu_liu_edmonds,
    matrix_tree_marginals,
    matrix_tree_marginals_rooted_log,
)
from ._projective_fast import eisner, inside_outside

__all__ = ["best_tree", "lift_to_projective", "tree_marginals"]


@njit(inline="always")
def best_tree(S, projective, single_root, heads):
    """MAP tree into ``heads``; False when no tree exists (cannot happen on finite scores)."""
    if projective:
        return eisner(S, single_root, heads) > -np.inf
    return chu_liu_edmonds(S, single_root, heads)


@njit(inline="always")
def tree_marginals(S, projective, single_root, mu):
    """Arc marginals into ``mu``; return log Z.

    The matrix-tree path is checked the way ``DependencyTree.marginals``
    checks it (every column sums to one) and redone by the subtraction-free
    log-space path when it cancelled.
    """
    if projective:
        return inside_outside(S, single_root, mu)
    log_z = matrix_tree_marginals(S, single_root, mu)
    N = S.shape[0]
    ok = np.isfinite(log_z)
    if ok:
        for m in range(1, N):
            c = 0.0
            for h in range(N):
                c += mu[h, m]
            if not abs(c - 1.0) <= 1e-9:
                ok = False
                break
    if not ok:
        log_z = matrix_tree_marginals_rooted_log(S, single_root, mu)
    return log_z


@njit
def _nonprojective_arc(heads, n):
    """The shortest non-projective arc's modifier (leftmost on ties), or -1.

    The arc ``h -> m`` is projective when ``h`` dominates every word
    between ``h`` and ``m``.
    """
    best_m = -1
    best_len = n + 2
    for m in range(1, n + 1):
        h = heads[m]
        lo = h if h < m else m
        hi = m if h < m else h
        if hi - lo < 2 or hi - lo >= best_len or h == 0:
            continue
        for b in range(lo + 1, hi):
            a = b
            while a != h and a > 0:
                a = heads[a]
            if a != h:
                best_m = m
                best_len = hi - lo
                break
    return best_m


@njit
def lift_to_projective(heads, offsets):
    """Make every tree projective by lifting arcs, in place; return the number of lifts.

    ``heads`` is the stacked layout (-1 on root rows, positions relative to
    each sentence's root row). The shortest non-projective arc is lifted to
    its head's head until none is left (Kahane, Nasr & Rambow 1998; Nivre &
    Nilsson 2005). An arc from the root never crosses another, so a tree
    with a single root word keeps it.
    """
    lifts = 0
    for s in range(offsets.shape[0] - 1):
        start = offsets[s]
        n = offsets[s + 1] - start - 1
        tree = heads[start:start + n + 1]
        while True:
            m = _nonprojective_arc(tree, n)
            if m < 0:
                break
            tree[m] = tree[tree[m]]
            lifts += 1
    return lifts
