"""Slow, simple references for tests of second-order dependency parsing.

Pure NumPy and Python: brute force over every tree of a tiny sentence, and
the exact projective second-order sibling DP (McDonald & Pereira 2006).
Nothing here is fast; everything here is meant to be obviously right.

Conventions (those of the package's second-order parser)
--------------------------------------------------------
Tokens are ``0..n``, 0 the root; an arc ``h -> m`` has ``m >= 1`` and
``h != m``. A tree is a ``heads`` array of length ``n + 1`` with
``heads[0] = -1``. Arc scores are an ``(n + 1, n + 1)`` array ``[h, m]``
(column 0 and the diagonal ignored, ``-inf`` forbids an arc).

Consecutive-sibling part ``(h, m, s)``: ``m`` and ``s`` are consecutive
dependents of ``h`` on the same side, ``s`` further from ``h`` (right side:
``h < m < s``; left side: ``s < m < h``). ``m == h`` is START (``s`` is the
closest dependent on its side); ``s == n + 1`` is STOP on the right side and
``s == -1`` STOP on the left side (``m`` is the outermost dependent). An
empty side activates ``(h, h, n + 1)`` (right) or ``(h, h, -1)`` (left).
Every head ``0..n`` has both sides, so the root always activates
``(0, 0, -1)``. A tree activates ``k + 1`` sibling parts per side with ``k``
dependents, ``3n + 2`` in all.

Grandparent part ``(g, h, m)``: arcs ``g -> h`` and ``h -> m`` (so
``h >= 1``); a tree activates one per arc whose head is a word.

Scores of higher-order parts are dicts ``{(h, m, s): score}`` and
``{(g, h, m): score}``; missing parts score 0. Keys that name no part at all
(wrong sides, out of range) are rejected, so that a typo in a test cannot
silently score nothing. Grandparent keys with ``m == g`` (a 2-cycle no tree
contains, which TurboParser still builds) are accepted.
"""

import math
import operator

import numpy as np

from sksparse_struct.structures._tree import check_heads

__all__ = [
    "all_tree_scores",
    "all_trees",
    "brute_force_map",
    "eisner_siblings",
    "is_projective",
    "second_order_score",
    "tree_parts",
]

# all_trees enumerates n ** n head sequences; n = 8 would hold 4.8 million trees.
MAX_WORDS = 7

_TREES = {}  # (n, projective, single_root) -> read-only (n_trees, n + 1) int64 array
_PART_INDEX = {}  # same key -> flat indices of each tree's parts in the dense scores


def _as_tree(heads):
    arr = np.asarray(heads)
    if arr.ndim != 1 or arr.shape[0] < 2:
        raise ValueError(f"heads must be a vector of length n + 1 >= 2, got shape {arr.shape}.")
    return check_heads(arr, arr.shape[0] - 1, single_root=False)


def _check_arc_scores(arc_scores, n=None):
    arr = np.asarray(arc_scores, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] < 2:
        raise ValueError(f"arc_scores must be a square (n + 1, n + 1) array with n >= 1, "
                         f"got shape {arr.shape}.")
    if n is not None and arr.shape[0] != n + 1:
        raise ValueError(f"arc_scores has shape {arr.shape}, the sentence has n = {n} words.")
    used = ~np.eye(arr.shape[0], dtype=bool)
    used[:, 0] = False
    if np.isnan(arr[used]).any() or (arr[used] == np.inf).any():
        raise ValueError("arc_scores must be finite or -inf (forbidden arc), not NaN or +inf.")
    return arr


def _sibling_key_error(h, m, s, n):
    """Why ``(h, m, s)`` is no sibling part of a sentence of ``n`` words, or None."""
    if not 0 <= h <= n:
        return f"head {h} is outside 0..{n}"
    if m != h and not 1 <= m <= n:
        return f"m = {m} is neither START (m == h) nor a word 1..{n}"
    if s == 0:
        return "s = 0 is the root, which is nobody's dependent"
    if s > h:  # right side
        if not (h <= m < s <= n + 1):
            return "on the right side the parts are (h, m, s) with h <= m < s <= n + 1"
    elif s < h:  # left side
        if not (-1 <= s < m <= h):
            return "on the left side the parts are (h, m, s) with -1 <= s < m <= h"
    else:
        return "s == h"
    return None


def _keys(scores, name, size):
    """``scores`` as ``[((a, b, c), value)]`` with int indices, checked for arity."""
    if scores is None:
        return []
    items = []
    for key, value in dict(scores).items():
        try:
            a, b, c = (operator.index(i) for i in key)
        except (TypeError, ValueError):
            raise ValueError(f"{name} keys must be triples of integers, got {key!r}.") from None
        value = float(value)
        if math.isnan(value) or value == math.inf:
            raise ValueError(f"{name}[{key!r}] is {value}: scores must be finite or -inf.")
        items.append(((a, b, c), value))
    return items


def _dense_sibling_scores(sibling_scores, n):
    """Sibling scores as an array ``[h, m, s + 1]`` of shape (n + 1, n + 1, n + 3)."""
    dense = np.zeros((n + 1, n + 1, n + 3))
    for (h, m, s), value in _keys(sibling_scores, "sibling_scores", n):
        error = _sibling_key_error(h, m, s, n)
        if error:
            raise ValueError(f"sibling_scores key {(h, m, s)} is no sibling part of a "
                             f"sentence of {n} words: {error}.")
        dense[h, m, s + 1] = value
    return dense


def _dense_grandparent_scores(grandparent_scores, n):
    """Grandparent scores as an array ``[g, h, m]`` of shape (n + 1, n + 1, n + 1)."""
    dense = np.zeros((n + 1, n + 1, n + 1))
    for (g, h, m), value in _keys(grandparent_scores, "grandparent_scores", n):
        if not (0 <= g <= n and 1 <= h <= n and 1 <= m <= n and g != h and h != m):
            raise ValueError(
                f"grandparent_scores key {(g, h, m)} is no grandparent part of a sentence "
                f"of {n} words: the parts are (g, h, m) with g in 0..{n}, h and m in "
                f"1..{n}, g != h and h != m.")
        dense[g, h, m] = value
    return dense


def tree_parts(heads):
    """The sibling and grandparent parts a tree activates.

    Parameters
    ----------
    heads : array-like of shape (n + 1,)
        A tree, ``heads[0] = -1``.

    Returns
    -------
    sibling_rows : ndarray of shape (3n + 2, 3), int64
        The ``(h, m, s)`` parts, by head ``0..n``; for each head its left
        side then its right side, each from START outwards to STOP.
    grandparent_rows : ndarray of shape (k, 3), int64
        The ``(g, h, m)`` parts, by modifier ``m``; ``k`` is the number of
        words whose head is a word.
    """
    heads = _as_tree(heads)
    n = heads.shape[0] - 1
    siblings = []
    for h in range(n + 1):
        dependents = np.flatnonzero(heads == h)
        left = [int(m) for m in dependents[::-1] if m < h]  # outwards: decreasing
        right = [int(m) for m in dependents if m > h]
        for side, stop in ((left, -1), (right, n + 1)):
            previous = h  # START
            for m in side:
                siblings.append((h, previous, m))
                previous = m
            siblings.append((h, previous, stop))
    grandparents = [(int(heads[heads[m]]), int(heads[m]), m)
                    for m in range(1, n + 1) if heads[m] >= 1]
    return (np.array(siblings, dtype=np.int64).reshape(-1, 3),
            np.array(grandparents, dtype=np.int64).reshape(-1, 3))


def second_order_score(heads, arc_scores, sibling_scores=None, grandparent_scores=None):
    """Score of a tree: its arcs plus its sibling and grandparent parts.

    Parameters
    ----------
    heads : array-like of shape (n + 1,)
        A tree, ``heads[0] = -1``.
    arc_scores : array-like of shape (n + 1, n + 1)
    sibling_scores : dict {(h, m, s): float}, default=None
    grandparent_scores : dict {(g, h, m): float}, default=None
        Missing parts score 0.

    Returns
    -------
    score : float
    """
    heads = _as_tree(heads)
    n = heads.shape[0] - 1
    arc_scores = _check_arc_scores(arc_scores, n)
    # Through the dense arrays only to validate the keys the same way.
    _dense_sibling_scores(sibling_scores, n)
    _dense_grandparent_scores(grandparent_scores, n)
    sib = {key: value for key, value in _keys(sibling_scores, "sibling_scores", n)}
    gp = {key: value for key, value in _keys(grandparent_scores, "grandparent_scores", n)}
    siblings, grandparents = tree_parts(heads)
    total = sum(float(arc_scores[heads[m], m]) for m in range(1, n + 1))
    total += sum(sib.get(tuple(int(i) for i in row), 0.0) for row in siblings)
    total += sum(gp.get(tuple(int(i) for i in row), 0.0) for row in grandparents)
    return total


def _projective_rows(trees):
    """Which rows of ``trees`` (an (N, n + 1) heads array) are projective.

    A tree with the root at position 0 is projective iff no two of its arcs
    cross (root arcs included).
    """
    n = trees.shape[1] - 1
    words = np.arange(1, n + 1)
    lo = np.minimum(trees[:, 1:], words)
    hi = np.maximum(trees[:, 1:], words)
    ok = np.ones(trees.shape[0], dtype=bool)
    for i in range(n):
        for j in range(n):
            ok &= ~((lo[:, i] < lo[:, j]) & (lo[:, j] < hi[:, i]) & (hi[:, i] < hi[:, j]))
    return ok


def is_projective(heads):
    """Whether a tree is projective (no crossing arcs, the root at position 0)."""
    heads = _as_tree(heads)
    return bool(_projective_rows(heads[np.newaxis, :])[0])


def _enumerate_trees(n, projective, single_root):
    # Every head sequence, in lexicographic order of (heads[1], ..., heads[n]),
    # cut by the head of word 1 to bound the memory.
    choices = [np.array([h for h in range(n + 1) if h != m], dtype=np.int8)
               for m in range(1, n + 1)]
    steps = max(1, math.ceil(math.log2(n)))
    found = []
    for first in choices[0]:
        grids = np.meshgrid(*([np.array([first], dtype=np.int8)] + choices[1:]), indexing="ij")
        heads = np.stack([g.ravel() for g in grids], axis=1)
        if single_root:
            heads = heads[(heads == 0).sum(axis=1) == 1]
        # Pointer doubling with the root absorbing: after k steps, column v
        # holds v's ancestor 2**k levels up; a tree takes every word to 0.
        up = np.concatenate([np.zeros((heads.shape[0], 1), dtype=np.int8), heads], axis=1)
        for _ in range(steps):
            up = np.take_along_axis(up, up, axis=1)
        heads = heads[(up[:, 1:] == 0).all(axis=1)]
        trees = np.concatenate([np.full((heads.shape[0], 1), -1, dtype=np.int64),
                                heads.astype(np.int64)], axis=1)
        if projective:
            trees = trees[_projective_rows(trees)]
        found.append(trees)
    return np.concatenate(found)


def all_trees(n, projective=False, single_root=False):
    """Every tree of a sentence of ``n`` words, by brute force.

    Parameters
    ----------
    n : int
        Number of words, ``1 <= n <= 7``.
    projective : bool, default=False
        Only the projective trees.
    single_root : bool, default=False
        Only the trees with exactly one word attached to the root.

    Returns
    -------
    trees : ndarray of shape (n_trees, n + 1), int64, read-only
        One tree (a heads array) per row, in lexicographic order of
        ``heads[1:]``; cached per ``(n, projective, single_root)``. There are
        ``(n + 1) ** (n - 1)`` non-projective trees, ``n ** (n - 1)`` with a
        single root.
    """
    n = operator.index(n)
    if not 1 <= n <= MAX_WORDS:
        raise ValueError(f"all_trees enumerates sentences of 1 to {MAX_WORDS} words, got {n}.")
    key = (n, bool(projective), bool(single_root))
    trees = _TREES.get(key)
    if trees is None:
        trees = _enumerate_trees(*key)
        trees.flags.writeable = False
        _TREES[key] = trees
    return trees


def _part_indices(n, projective, single_root):
    """Flat indices of every tree's sibling and grandparent parts in the dense scores.

    Sibling parts index ``dense.ravel()`` of :func:`_dense_sibling_scores`
    (``3n + 2`` per tree); grandparent parts index the raveled dense
    grandparent array with one zero appended (``n`` per tree, the extra
    slot for words attached to the root). Cached with the trees.
    """
    key = (n, bool(projective), bool(single_root))
    cached = _PART_INDEX.get(key)
    if cached is not None:
        return cached
    T = all_trees(*key)
    N = T.shape[0]
    rows = np.arange(N)

    def sib(h, m, s):
        return (h * (n + 1) + m) * (n + 3) + (s + 1)

    columns = []
    # One part per word m: (h, previous dependent of h towards h or START, m).
    for m in range(1, n + 1):
        h = T[:, m]
        previous = h.copy()
        for other in range(1, m):  # right side: the largest dependent between h and m
            previous = np.where((T[:, other] == h) & (other > h), other, previous)
        for other in range(n, m, -1):  # left side: the smallest dependent between m and h
            previous = np.where((T[:, other] == h) & (other < h), other, previous)
        columns.append(sib(h, previous, m))
    # Two STOP parts per head: (h, outermost dependent or h, STOP).
    for h in range(n + 1):
        last = np.full(N, h)
        for m in range(h + 1, n + 1):
            last = np.where(T[:, m] == h, m, last)
        columns.append(sib(h, last, n + 1))
        last = np.full(N, h)
        for m in range(h - 1, 0, -1):
            last = np.where(T[:, m] == h, m, last)
        columns.append(sib(h, last, -1))
    sibling_index = np.stack(columns, axis=1)
    dummy = (n + 1) ** 3
    grand = []
    for m in range(1, n + 1):
        h = T[:, m]
        g = T[rows, h]
        grand.append(np.where(h >= 1, (g * (n + 1) + h) * (n + 1) + m, dummy))
    grandparent_index = np.stack(grand, axis=1)
    sibling_index.flags.writeable = False
    grandparent_index.flags.writeable = False
    _PART_INDEX[key] = (sibling_index, grandparent_index)
    return sibling_index, grandparent_index


def all_tree_scores(n, arc_scores, sibling_scores=None, grandparent_scores=None,
                    projective=False, single_root=False):
    """Every tree of a sentence and its second-order score.

    Parameters
    ----------
    n : int
        Number of words, ``1 <= n <= 7``.
    arc_scores : array-like of shape (n + 1, n + 1)
    sibling_scores : dict {(h, m, s): float}, default=None
    grandparent_scores : dict {(g, h, m): float}, default=None
    projective, single_root : bool, default=False
        Which trees (see :func:`all_trees`).

    Returns
    -------
    trees : ndarray of shape (n_trees, n + 1), int64
        As :func:`all_trees` returns them.
    scores : ndarray of shape (n_trees,)
        The score of each tree (:func:`second_order_score`, summed in
        another order).
    """
    trees = all_trees(n, projective, single_root)
    arc_scores = _check_arc_scores(arc_scores, n)
    sib = _dense_sibling_scores(sibling_scores, n).ravel()
    gp = np.append(_dense_grandparent_scores(grandparent_scores, n).ravel(), 0.0)
    sibling_index, grandparent_index = _part_indices(n, projective, single_root)
    scores = arc_scores[trees[:, 1:], np.arange(1, n + 1)].sum(axis=1)
    scores += sib[sibling_index].sum(axis=1) + gp[grandparent_index].sum(axis=1)
    return trees, scores


def brute_force_map(n, arc_scores, sibling_scores=None, grandparent_scores=None,
                    projective=False, single_root=False):
    """The best tree by enumeration.

    Parameters are those of :func:`all_tree_scores`.

    Returns
    -------
    heads : ndarray of shape (n + 1,), int64
        The best tree; among trees of equal score (to the last bit), the
        first in lexicographic order of ``heads[1:]``.
    value : float
        Its score.
    """
    trees, scores = all_tree_scores(n, arc_scores, sibling_scores, grandparent_scores,
                                    projective, single_root)
    best = int(np.argmax(scores))
    return trees[best].copy(), float(scores[best])


def eisner_siblings(arc_scores, sibling_scores=None, single_root=False):
    """Exact best projective tree under arc and consecutive-sibling scores.

    McDonald & Pereira's (2006) second-order Eisner algorithm, O(n^3), with
    sibling items ``S[s, t]`` (``s`` and ``t`` consecutive dependents of one
    head, ``s``'s right subtree and ``t``'s left subtree between them),
    extended with the STOP parts. A complete item is only ever used as a
    finished subtree side, so the STOP part of its head's side is added when
    it is built: ``(h, r, STOP)`` with ``r`` the outermost dependent, and the
    one-word item ``(h, h, STOP)`` (empty side). The first dependent of a
    side is then built from the modifier's subtree alone, with the START part
    ``(h, h, m)``. The root's left side is always empty: ``(0, 0, -1)`` is
    added as a constant.

    Parameters
    ----------
    arc_scores : array-like of shape (n + 1, n + 1)
    sibling_scores : dict {(h, m, s): float}, default=None
        Missing parts score 0.
    single_root : bool, default=False
        Exactly one word attached to the root.

    Returns
    -------
    heads : ndarray of shape (n + 1,), int64
        The best projective tree (ties: the first maximum met by the DP).
    value : float
        Its score.
    """
    arc = _check_arc_scores(arc_scores)
    n = arc.shape[0] - 1
    sib = _dense_sibling_scores(sibling_scores, n)
    neg = -np.inf
    right_stop = n + 1 + 1  # column of s = n + 1 in sib[h, m, s + 1]
    left_stop = 0  # column of s = -1

    # [s, t] items, s <= t. CR: complete, head s; CL: complete, head t;
    # IR: arc s -> t; IL: arc t -> s; SB: siblings s, t. The bp arrays hold
    # the split point, -1 for IR / IL built from the first dependent.
    CR = np.full((n + 1, n + 1), neg)
    CL = np.full((n + 1, n + 1), neg)
    IR = np.full((n + 1, n + 1), neg)
    IL = np.full((n + 1, n + 1), neg)
    SB = np.full((n + 1, n + 1), neg)
    bp = {name: np.full((n + 1, n + 1), -2, dtype=np.int64)
          for name in ("CR", "CL", "IR", "IL", "SB")}
    for s in range(n + 1):
        CR[s, s] = sib[s, s, right_stop]
        if s >= 1:  # the root is nobody's dependent: no left subtree
            CL[s, s] = sib[s, s, left_stop]

    def argmax(candidates):
        best, best_r = neg, -2
        for value, r in candidates:
            if value > best:
                best, best_r = value, r
        return best, best_r

    for k in range(1, n + 1):
        for s in range(0, n + 1 - k):
            t = s + k
            if s >= 1:
                SB[s, t], bp["SB"][s, t] = argmax(
                    (CR[s, r] + CL[r + 1, t], r) for r in range(s, t))
            IR[s, t], bp["IR"][s, t] = argmax(
                [(CL[s + 1, t] + sib[s, s, t + 1], -1)]
                + [(IR[s, r] + SB[r, t] + sib[s, r, t + 1], r) for r in range(s + 1, t)])
            IR[s, t] += arc[s, t]
            if s >= 1:
                IL[s, t], bp["IL"][s, t] = argmax(
                    [(CR[s, t - 1] + sib[t, t, s + 1], -1)]
                    + [(SB[s, r] + IL[r, t] + sib[t, r, s + 1], r) for r in range(s + 1, t)])
                IL[s, t] += arc[t, s]
                CL[s, t], bp["CL"][s, t] = argmax(
                    (CL[s, r] + IL[r, t] + sib[t, r, left_stop], r) for r in range(s, t))
            CR[s, t], bp["CR"][s, t] = argmax(
                (IR[s, r] + CR[r, t] + sib[s, r, right_stop], r) for r in range(s + 1, t + 1))

    heads = np.full(n + 1, -1, dtype=np.int64)

    def complete_right(s, t):
        if s < t:
            r = bp["CR"][s, t]
            incomplete_right(s, r)
            complete_right(r, t)

    def complete_left(s, t):
        if s < t:
            r = bp["CL"][s, t]
            complete_left(s, r)
            incomplete_left(r, t)

    def incomplete_right(s, t):
        heads[t] = s
        r = bp["IR"][s, t]
        if r == -1:
            complete_left(s + 1, t)
        else:
            incomplete_right(s, r)
            siblings(r, t)

    def incomplete_left(s, t):
        heads[s] = t
        r = bp["IL"][s, t]
        if r == -1:
            complete_right(s, t - 1)
        else:
            siblings(s, r)
            incomplete_left(r, t)

    def siblings(s, t):
        r = bp["SB"][s, t]
        complete_right(s, r)
        complete_left(r + 1, t)

    root_left = sib[0, 0, left_stop]
    if single_root:
        value, root_word = argmax(
            (CL[1, r] + CR[r, n] + arc[0, r] + sib[0, 0, r + 1] + sib[0, r, right_stop], r)
            for r in range(1, n + 1))
        if value == neg:
            raise ValueError("no projective tree with one root word has a finite score.")
        heads[root_word] = 0
        complete_left(1, root_word)
        complete_right(root_word, n)
    else:
        value = CR[0, n]
        if value == neg:
            raise ValueError("no projective tree has a finite score.")
        complete_right(0, n)
    return heads, float(value + root_left)
