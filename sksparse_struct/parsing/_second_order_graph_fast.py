"""Numba kernel laying out a sentence's second-order factor graph (``_second_order``).

Building the graph in Python costs more than solving it on short
sentences: one automaton per head and side, each with its variables and
its sibling and grandparent parts. :func:`graph_layout` computes all of it
in one pass over the candidate arcs; ``build_graph`` only hands the arrays
to the ``FactorGraph``.
"""

import numpy as np

from ..utils._numba import njit

__all__ = ["graph_layout"]


@njit(inline="always")
def _arc_variable(h, m, n):
    # As _second_order.arc_variable.
    return (m - 1) * n + (h if h < m else h - 1)


@njit(inline="always")
def _modifier(h, right, i):
    """The ``i``-th candidate position scanned outward from ``h`` (right: h+1.., left: h-1..1)."""
    return h + 1 + i if right else h - 1 - i


@njit(inline="always")
def _side_width(h, n, right):
    return n - h if right else h - 1


@njit
def graph_layout(candidates, siblings, grandparents):
    """The automata of a second-order graph, in the order ``build_graph`` adds them.

    Per head ``h = 0..n``, right side then left (the root: right only), a
    side gets an automaton unless it would be a constant (no candidate
    modifier and no grandparents) or, without sibling parts, unless it has
    both modifiers and grandparents. The automata's higher-order parts
    follow each other in ``factor_scores`` from offset 0 (the tree factor
    has none).

    Parameters
    ----------
    candidates : ndarray of shape (n + 1, n + 1), bool
        Candidate arcs, column 0 and the diagonal already cleared.
    siblings, grandparents : bool
        Which second-order parts the graph has.

    Returns
    -------
    shapes : ndarray of shape (n_automata, 2), int64
        ``(G, L)`` of each automaton: incoming arcs (0: a plain head
        automaton) and modifiers.
    variables : ndarray of int64
        The automata's variables, concatenated: the incoming arcs ``g -> h``
        (ascending ``g``), then the modifiers' arcs, outward.
    sibling_rows, sibling_slots, grandparent_rows, grandparent_slots :
        As ``SecondOrderGraph``'s attributes.
    bad_word : int
        A word with no candidate head when the graph has grandparent parts
        (the graph cannot be built), else -1.
    """
    n = candidates.shape[0] - 1
    # Pass 1: sizes.
    n_auto = 0
    n_var = 0
    n_sib = 0
    n_gp = 0
    for h in range(n + 1):
        has_inc = h >= 1 and grandparents
        G = 0
        if has_inc:
            for g in range(n + 1):
                if candidates[g, h]:
                    G += 1
            if G == 0:
                empty = np.zeros((0, 3), dtype=np.int64)
                none = np.zeros(0, dtype=np.int64)
                return np.zeros((0, 2), dtype=np.int64), none, empty, none, empty, none, h
        for side in range(2):
            right = side == 0
            if h == 0 and not right:
                continue
            L = 0
            for i in range(_side_width(h, n, right)):
                if candidates[h, _modifier(h, right, i)]:
                    L += 1
            if not has_inc and L == 0:
                continue
            if not siblings and (not has_inc or L == 0):
                continue
            n_auto += 1
            n_var += L + G
            if siblings:
                n_sib += (L + 1) * (L + 2) // 2
            if has_inc:
                n_gp += G * L
    shapes = np.empty((n_auto, 2), dtype=np.int64)
    variables = np.empty(n_var, dtype=np.int64)
    sib_rows = np.empty((n_sib, 3), dtype=np.int64)
    sib_slots = np.empty(n_sib, dtype=np.int64)
    gp_rows = np.empty((n_gp, 3), dtype=np.int64)
    gp_slots = np.empty(n_gp, dtype=np.int64)
    incoming = np.empty(n + 1, dtype=np.int64)
    tokens = np.empty(n + 2, dtype=np.int64)
    # Pass 2: the same walk, filling in.
    a = 0
    v = 0
    si = 0
    gi = 0
    offset = 0
    for h in range(n + 1):
        has_inc = h >= 1 and grandparents
        G = 0
        if has_inc:
            for g in range(n + 1):
                if candidates[g, h]:
                    incoming[G] = g
                    G += 1
        for side in range(2):
            right = side == 0
            if h == 0 and not right:
                continue
            tokens[0] = h
            L = 0
            for i in range(_side_width(h, n, right)):
                m = _modifier(h, right, i)
                if candidates[h, m]:
                    L += 1
                    tokens[L] = m
            if not has_inc and L == 0:
                continue
            if not siblings and (not has_inc or L == 0):
                continue
            G_here = G if has_inc else 0
            shapes[a, 0] = G_here
            shapes[a, 1] = L
            a += 1
            for t in range(G_here):
                variables[v] = _arc_variable(incoming[t], h, n)
                v += 1
            for t in range(1, L + 1):
                variables[v] = _arc_variable(h, tokens[t], n)
                v += 1
            n_pairs = 0
            if siblings:
                tokens[L + 1] = n + 1 if right else -1
                # Pairs (j, k), j < k, of START, the modifiers, STOP: row-major.
                for j in range(L + 2):
                    for k in range(j + 1, L + 2):
                        sib_rows[si, 0] = h
                        sib_rows[si, 1] = tokens[j]
                        sib_rows[si, 2] = tokens[k]
                        sib_slots[si] = offset + n_pairs
                        si += 1
                        n_pairs += 1
            else:
                n_pairs = (L + 1) * (L + 2) // 2
            for t in range(G_here):
                for p in range(L):
                    gp_rows[gi, 0] = incoming[t]
                    gp_rows[gi, 1] = h
                    gp_rows[gi, 2] = tokens[p + 1]
                    gp_slots[gi] = offset + n_pairs + t * L + p
                    gi += 1
            offset += (L + 1) * (L + 2) // 2 + G_here * L
    return shapes, variables, sib_rows, sib_slots, gp_rows, gp_slots, -1
