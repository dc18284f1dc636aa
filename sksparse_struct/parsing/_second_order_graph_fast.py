"""Numba kernel laying out a sentence's second-order factor graph (``_second_order``).

Building the graph in Python costs more than solving it on short
sentences: one automaton per head and side, each with its variables and
its sibling and grandparent parts. :func:`graph_layout` computes all of it
in one pass over the candidate arcs; ``build_graph`` only hands the arrays
to the ``FactorGraph``.
"""

import numpy as np

from ..structures._sibling_tree_fast import n_sibling_parts, sibling_offsets, sibling_slot
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


@njit(inline="always")
def _incoming(candidates, h, n, has_inc, incoming):
    """The candidate heads of ``h`` into ``incoming`` (ascending); their number (0 if not
    ``has_inc``)."""
    G = 0
    if has_inc:
        for g in range(n + 1):
            if candidates[g, h]:
                incoming[G] = g
                G += 1
    return G


@njit(inline="always")
def _side(candidates, h, n, right, tokens):
    """``tokens[0] = h``, then the candidate modifiers of one side, outward; their number."""
    tokens[0] = h
    L = 0
    for i in range(_side_width(h, n, right)):
        m = _modifier(h, right, i)
        if candidates[h, m]:
            L += 1
            tokens[L] = m
    return L


@njit(inline="always")
def _has_automaton(h, right, has_inc, L, siblings):
    """Whether a head side gets an automaton (module docstring of ``graph_layout``)."""
    if h == 0 and not right:
        return False  # the root's left side is always empty: a constant
    if not has_inc and L == 0:
        return False  # no variable at all: a constant
    # Grandparent parts only: a side without modifiers or grandparents has none.
    return siblings or (has_inc and L > 0)


@njit(inline="always")
def _sibling_pairs(h, tokens, L, right, n, rows, slots, si, off, offset, in_tree):
    """The sibling parts of a head side from row ``si``: the pairs ``j < k`` of START
    (``tokens[0] = h``), its ``L`` candidate modifiers and STOP, row-major. Their slots:
    the tree factor's (``in_tree``, offsets ``off``) or ``offset`` plus their rank, the
    automaton's layout."""
    tokens[L + 1] = n + 1 if right else -1
    at = 0
    for j in range(L + 2):
        for k in range(j + 1, L + 2):
            rows[si + at, 0] = h
            rows[si + at, 1] = tokens[j]
            rows[si + at, 2] = tokens[k]
            if in_tree:
                slots[si + at] = sibling_slot(off, n, h, tokens[j], tokens[k])
            else:
                slots[si + at] = offset + at
            at += 1


@njit
def graph_layout(candidates, siblings, grandparents, tree_siblings=False):
    """The automata of a second-order graph, in the order ``build_graph`` adds them.

    Per head ``h = 0..n``, right side then left (the root: right only), a
    side gets an automaton unless it would be a constant (no candidate
    modifier and no grandparents) or, without sibling parts in the
    automata, unless it has both modifiers and grandparents. The automata's
    higher-order parts follow each other in ``factor_scores`` from offset 0
    (a ``DependencyTree`` factor has none) or, with ``tree_siblings``, after
    the sibling parts of the tree factor (a ``ProjectiveSiblingTree``,
    which then owns the sibling parts: the automata have grandparent parts
    only, and every side of every head, the root's right one included, has
    the sibling parts of its candidate modifiers).

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
    auto_siblings = siblings and not tree_siblings
    tree_block = 0
    off = np.empty((n + 1, 2), dtype=np.int64)
    if tree_siblings:
        tree_block = n_sibling_parts(n)
        sibling_offsets(n, off)
    incoming = np.empty(n + 1, dtype=np.int64)
    tokens = np.empty(n + 2, dtype=np.int64)
    shapes = np.empty((0, 2), dtype=np.int64)
    variables = np.empty(0, dtype=np.int64)
    sib_rows = np.empty((0, 3), dtype=np.int64)
    sib_slots = np.empty(0, dtype=np.int64)
    gp_rows = np.empty((0, 3), dtype=np.int64)
    gp_slots = np.empty(0, dtype=np.int64)
    # Two walks: the first counts, the second fills in.
    for fill in range(2):
        a = 0
        v = 0
        si = 0
        gi = 0
        offset = tree_block
        if tree_siblings:
            for h in range(n + 1):
                for side in range(2 if h >= 1 else 1):
                    right = side == 0
                    L = _side(candidates, h, n, right, tokens)
                    if fill:
                        _sibling_pairs(h, tokens, L, right, n, sib_rows, sib_slots, si, off, 0,
                                       True)
                    si += (L + 1) * (L + 2) // 2
        for h in range(n + 1):
            has_inc = h >= 1 and grandparents
            G = _incoming(candidates, h, n, has_inc, incoming)
            if has_inc and G == 0:
                return shapes, variables, sib_rows, sib_slots, gp_rows, gp_slots, h
            for side in range(2):
                right = side == 0
                L = _side(candidates, h, n, right, tokens)
                if not _has_automaton(h, right, has_inc, L, auto_siblings):
                    continue
                n_pairs = (L + 1) * (L + 2) // 2
                if fill:
                    shapes[a, 0] = G
                    shapes[a, 1] = L
                    for t in range(G):
                        variables[v + t] = _arc_variable(incoming[t], h, n)
                    for t in range(L):
                        variables[v + G + t] = _arc_variable(h, tokens[t + 1], n)
                    if auto_siblings:
                        _sibling_pairs(h, tokens, L, right, n, sib_rows, sib_slots, si, off,
                                       offset, False)
                    for t in range(G):
                        for p in range(L):
                            r = gi + t * L + p
                            gp_rows[r, 0] = incoming[t]
                            gp_rows[r, 1] = h
                            gp_rows[r, 2] = tokens[p + 1]
                            gp_slots[r] = offset + n_pairs + t * L + p
                a += 1
                v += G + L
                if auto_siblings:
                    si += n_pairs
                gi += G * L
                offset += n_pairs + G * L
        if not fill:
            shapes = np.empty((a, 2), dtype=np.int64)
            variables = np.empty(v, dtype=np.int64)
            sib_rows = np.empty((si, 3), dtype=np.int64)
            sib_slots = np.empty(si, dtype=np.int64)
            gp_rows = np.empty((gi, 3), dtype=np.int64)
            gp_slots = np.empty(gi, dtype=np.int64)
    return shapes, variables, sib_rows, sib_slots, gp_rows, gp_slots, -1
