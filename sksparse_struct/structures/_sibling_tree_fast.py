"""Numba kernels of ``ProjectiveSiblingTree``: the second-order Eisner algorithm.

Flat layout (shared with ``_sibling_tree``): ``eta_u`` holds the ``n * n``
arc scores of ``DependencyTree`` (modifier-major, :func:`arc_slot`);
``eta_v`` holds the consecutive-sibling scores in blocks, one per head
``h = 0..n`` and side, right block then left block (the root has no left
block). A block is the sibling layout of a ``HeadAutomaton`` whose
candidate modifiers are every word of that side, outward: states ``0``
(START), ``d`` for the word at distance ``d`` from the head, and ``L + 1``
(STOP), ``L = n - h`` on the right and ``h - 1`` on the left; the pairs
``j < k`` in row-major order (``_head_automaton_fast.sibling_index``).

A structure is identified by its heads (``heads[0] = -1``).
"""

import numpy as np

from ..utils._numba import njit
from ._head_automaton_fast import sibling_index

__all__ = ["arc_slot", "n_sibling_parts", "sibling_offsets", "sibling_slot", "sibling_slots",
           "sibling_tree_parts", "tree_indicators"]


@njit(inline="always")
def arc_slot(h, m, n):
    """Position of the arc ``h -> m`` among the ``n * n`` unary parts."""
    return (m - 1) * n + (h if h < m else h - 1)


@njit(inline="always")
def n_sibling_parts(n):
    """Number of sibling parts of a sentence of ``n`` words (every block's pairs)."""
    total = 0
    for h in range(n + 1):
        L = n - h
        total += (L + 1) * (L + 2) // 2
        if h >= 1:
            total += h * (h + 1) // 2
    return total


@njit(inline="always")
def sibling_offsets(n, off):
    """Start of each head's right (``off[h, 0]``) and left (``off[h, 1]``) block."""
    at = 0
    for h in range(n + 1):
        L = n - h
        off[h, 0] = at
        at += (L + 1) * (L + 2) // 2
        off[h, 1] = at
        if h >= 1:
            at += h * (h + 1) // 2
    return at


@njit(inline="always")
def _right(off, n, h, j, k):
    # States of h's right side: 0 START, d the word h + d, n - h + 1 STOP.
    return off[h, 0] + sibling_index(j, k, n - h)


@njit(inline="always")
def _left(off, n, h, j, k):
    # States of h's left side: 0 START, d the word h - d, h STOP.
    return off[h, 1] + sibling_index(j, k, h - 1)


@njit(inline="always")
def sibling_slot(off, n, h, m, s):
    """Position of the sibling part ``(h, m, s)`` (``m == h``: START; ``s`` = ``n + 1``
    or ``-1``: STOP), or -1 if no such part (wrong side, out of order)."""
    if h < 0 or h > n or s == h:
        return -1
    if s > h:
        if m != h and not h < m < s:
            return -1
        if s > n + 1:
            return -1
        j = 0 if m == h else m - h
        return _right(off, n, h, j, s - h)
    if h == 0 or s < -1 or s == 0 or (m != h and not s < m < h):
        return -1
    j = 0 if m == h else h - m
    k = h if s == -1 else h - s
    return _left(off, n, h, j, k)


@njit
def sibling_slots(rows, n, out):
    """:func:`sibling_slot` of every row ``(h, m, s)`` into ``out``; the first row that is
    no part, or -1."""
    off = np.empty((n + 1, 2), dtype=np.int64)
    sibling_offsets(n, off)
    for i in range(rows.shape[0]):
        out[i] = sibling_slot(off, n, rows[i, 0], rows[i, 1], rows[i, 2])
        if out[i] < 0:
            return i
    return -1


@njit(inline="always")
def _add3(a, b, c):
    """``a + b + c``, or ``-inf`` if a term is ``-inf`` (never ``inf - inf``)."""
    if a == -np.inf or b == -np.inf or c == -np.inf:
        return -np.inf
    return a + b + c


# Chart items of the backtracking stack.
_CR, _CL, _IR, _IL, _SB = 0, 1, 2, 3, 4


@njit
def sibling_tree_parts(eta_u, eta_v, n, single_root, heads, m_out, nv_out):
    """Best projective tree under arc and consecutive-sibling scores (McDonald & Pereira 2006).

    The ``O(n^3)`` chart of complete items ``CR[s, t]`` (head ``s``, its
    right side finished up to ``t``) and ``CL[s, t]`` (head ``t``),
    incomplete items ``IR`` / ``IL`` (the arc ``s -> t`` / ``t -> s`` with
    the head's dependents between them) and sibling items ``SB[s, t]``
    (``s`` and ``t`` consecutive dependents of one head). A complete item
    is only ever a finished side of a subtree, so the STOP part of its
    head's side is added when it is built; the first dependent of a side
    carries the START part. Ties go to the first maximum met (the START
    alternative, then the lowest split point).

    Parameters
    ----------
    eta_u : ndarray of shape (n * n,)
    eta_v : ndarray of shape (n_sibling_parts(n),)
        Flat scores in the module's layout; ``-inf`` forbids a part.
    n : int
        Words.
    single_root : bool
        Exactly one word attached to the root.
    heads : ndarray of shape (n + 1,), int64
    m_out : ndarray of shape (n * n,)
    nv_out : ndarray of shape (n_sibling_parts(n),)
        Output: the best tree and its indicators.

    Returns
    -------
    found : bool
        False if every tree uses a forbidden part (the outputs are then
        unchanged).
    """
    NEG = -np.inf
    off = np.empty((n + 1, 2), dtype=np.int64)
    sibling_offsets(n, off)
    A = np.full((n + 1, n + 1), NEG)
    for d in range(1, n + 1):
        for h in range(n + 1):
            if h != d:
                A[h, d] = eta_u[arc_slot(h, d, n)]
    chart = np.full((5, n + 1, n + 1), NEG)
    back = np.full((5, n + 1, n + 1), -2, dtype=np.int64)
    CR, CL, IR, IL, SB = chart[0], chart[1], chart[2], chart[3], chart[4]
    for s in range(n + 1):
        CR[s, s] = eta_v[_right(off, n, s, 0, n - s + 1)]
        if s >= 1:
            CL[s, s] = eta_v[_left(off, n, s, 0, s)]
    for k in range(1, n + 1):
        for s in range(n + 1 - k):
            t = s + k
            if s >= 1:
                best = NEG
                arg = -2
                for r in range(s, t):
                    v = _add3(CR[s, r], CL[r + 1, t], 0.0)
                    if v > best:
                        best = v
                        arg = r
                SB[s, t] = best
                back[_SB, s, t] = arg
            arc = A[s, t]
            if arc != NEG:
                best = _add3(CL[s + 1, t], eta_v[_right(off, n, s, 0, t - s)], 0.0)
                arg = -1 if best > NEG else -2
                for r in range(s + 1, t):
                    v = _add3(IR[s, r], SB[r, t], eta_v[_right(off, n, s, r - s, t - s)])
                    if v > best:
                        best = v
                        arg = r
                if arg != -2:
                    IR[s, t] = best + arc
                    back[_IR, s, t] = arg
            if s >= 1:
                arc = A[t, s]
                if arc != NEG:
                    best = _add3(CR[s, t - 1], eta_v[_left(off, n, t, 0, t - s)], 0.0)
                    arg = -1 if best > NEG else -2
                    for r in range(s + 1, t):
                        v = _add3(SB[s, r], IL[r, t], eta_v[_left(off, n, t, t - r, t - s)])
                        if v > best:
                            best = v
                            arg = r
                    if arg != -2:
                        IL[s, t] = best + arc
                        back[_IL, s, t] = arg
                best = NEG
                arg = -2
                for r in range(s, t):
                    v = _add3(CL[s, r], IL[r, t], eta_v[_left(off, n, t, t - r, t)])
                    if v > best:
                        best = v
                        arg = r
                CL[s, t] = best
                back[_CL, s, t] = arg
            best = NEG
            arg = -2
            for r in range(s + 1, t + 1):
                v = _add3(IR[s, r], CR[r, t], eta_v[_right(off, n, s, r - s, n - s + 1)])
                if v > best:
                    best = v
                    arg = r
            CR[s, t] = best
            back[_CR, s, t] = arg
    # The root: one word, or the whole right side.
    stack = np.empty((4 * n + 8, 3), dtype=np.int64)
    top = 0
    if single_root:
        best = NEG
        root_word = -1
        for r in range(1, n + 1):
            if A[0, r] == NEG:
                continue
            v = _add3(CL[1, r], CR[r, n], A[0, r])
            v = _add3(v, eta_v[_right(off, n, 0, 0, r)], eta_v[_right(off, n, 0, r, n + 1)])
            if v > best:
                best = v
                root_word = r
        if root_word < 0:
            return False
        for i in range(n + 1):
            heads[i] = -1
        heads[root_word] = 0
        stack[0, 0], stack[0, 1], stack[0, 2] = _CL, 1, root_word
        stack[1, 0], stack[1, 1], stack[1, 2] = _CR, root_word, n
        top = 2
    else:
        if not CR[0, n] > NEG:
            return False
        for i in range(n + 1):
            heads[i] = -1
        stack[0, 0], stack[0, 1], stack[0, 2] = _CR, 0, n
        top = 1
    while top > 0:
        top -= 1
        item, s, t = stack[top, 0], stack[top, 1], stack[top, 2]
        if s == t:
            continue
        r = back[item, s, t]
        if item == _CR:
            stack[top, 0], stack[top, 1], stack[top, 2] = _IR, s, r
            stack[top + 1, 0], stack[top + 1, 1], stack[top + 1, 2] = _CR, r, t
            top += 2
        elif item == _CL:
            stack[top, 0], stack[top, 1], stack[top, 2] = _CL, s, r
            stack[top + 1, 0], stack[top + 1, 1], stack[top + 1, 2] = _IL, r, t
            top += 2
        elif item == _IR:
            heads[t] = s
            if r == -1:
                stack[top, 0], stack[top, 1], stack[top, 2] = _CL, s + 1, t
                top += 1
            else:
                stack[top, 0], stack[top, 1], stack[top, 2] = _IR, s, r
                stack[top + 1, 0], stack[top + 1, 1], stack[top + 1, 2] = _SB, r, t
                top += 2
        elif item == _IL:
            heads[s] = t
            if r == -1:
                stack[top, 0], stack[top, 1], stack[top, 2] = _CR, s, t - 1
                top += 1
            else:
                stack[top, 0], stack[top, 1], stack[top, 2] = _SB, s, r
                stack[top + 1, 0], stack[top + 1, 1], stack[top + 1, 2] = _IL, r, t
                top += 2
        else:
            stack[top, 0], stack[top, 1], stack[top, 2] = _CR, s, r
            stack[top + 1, 0], stack[top + 1, 1], stack[top + 1, 2] = _CL, r + 1, t
            top += 2
    tree_indicators(heads, n, off, m_out, nv_out)
    return True


@njit
def tree_indicators(heads, n, off, m_out, nv_out):
    """Arc and sibling indicators of the tree ``heads`` (``off``: :func:`sibling_offsets`)."""
    for a in range(m_out.shape[0]):
        m_out[a] = 0.0
    for a in range(nv_out.shape[0]):
        nv_out[a] = 0.0
    for d in range(1, n + 1):
        m_out[arc_slot(heads[d], d, n)] = 1.0
    for h in range(n + 1):
        prev = 0
        for d in range(h + 1, n + 1):
            if heads[d] == h:
                nv_out[_right(off, n, h, prev, d - h)] = 1.0
                prev = d - h
        nv_out[_right(off, n, h, prev, n - h + 1)] = 1.0
        if h >= 1:
            prev = 0
            for d in range(h - 1, 0, -1):
                if heads[d] == h:
                    nv_out[_left(off, n, h, prev, h - d)] = 1.0
                    prev = h - d
            nv_out[_left(off, n, h, prev, h)] = 1.0
