"""Numba kernels of the head automata: Viterbi over the modifiers of one head side.

The flat layout is the one of ``HeadAutomaton`` / ``GrandparentHeadAutomaton``
(see ``_head_automaton``): with ``L`` modifiers and ``G`` incoming arcs
(``G = 0`` for the plain automaton),

- ``eta_u`` holds the ``G`` incoming-arc scores, then the ``L`` arc scores;
- ``eta_v`` holds the ``T = (L + 1)(L + 2) / 2`` sibling scores ``(j, k)``,
  ``0 <= j < k <= L + 1``, in row-major order (automaton index 0 is START,
  ``p + 1`` modifier ``p``, ``L + 1`` STOP), then the ``G * L`` grandparent
  scores, row-major.

A structure is identified by a row of ``L + 1`` integers: ``row[0]`` the
incoming arc (0 for the plain automaton), ``row[1 + p]`` 1 if modifier ``p``
is chosen, else 0.
"""

import numpy as np

from ..utils._numba import njit

__all__ = ["head_automaton_parts", "sibling_index"]


@njit(inline="always")
def sibling_index(j, k, L):
    """Position of the sibling part ``(j, k)``, ``j < k``, in the row-major upper triangle."""
    # Rows 0..j-1 of the triangle hold (L + 1) + L + ... + (L + 2 - j) parts.
    return j * (2 * L + 3 - j) // 2 + k - j - 1


@njit(internal=True)
def _viterbi(eta_u, eta_v, L, G, g, best, back):
    """Best path START -> ... -> STOP of the automaton with incoming arc ``g``.

    ``best[k]`` is the best score of a prefix whose last chosen state is
    ``k`` (0: START), ``back[k]`` its predecessor, the first (closest to the
    head) among equal ones. Returns the best total score without the
    incoming arc's and the last state before STOP (-1 if every path is
    forbidden). A ``-inf`` term is skipped rather than added, so that a
    (1e308-sized) overflow to ``+inf`` never meets it as ``inf - inf``.
    """
    T = (L + 1) * (L + 2) // 2
    best[0] = 0.0
    back[0] = -1
    for k in range(1, L + 1):
        gain = eta_u[G + k - 1]
        if G > 0:
            gain += eta_v[T + g * L + k - 1]
        top = -np.inf
        arg = -1
        if gain != -np.inf:
            at = k - 1  # sibling_index(0, k, L); the part (j + 1, k) is L - j further
            for j in range(k):
                bj = best[j]
                s = eta_v[at]
                at += L - j
                if bj == -np.inf or s == -np.inf:
                    continue
                val = bj + s
                if val > top:
                    top = val
                    arg = j
        back[k] = arg
        best[k] = top + gain if arg >= 0 else -np.inf
    total = -np.inf
    last = -1
    at = L  # sibling_index(0, L + 1, L)
    for j in range(L + 1):
        bj = best[j]
        s = eta_v[at]
        at += L - j
        if bj == -np.inf or s == -np.inf:
            continue
        val = bj + s
        if val > total:
            total = val
            last = j
    return total, last


@njit
def head_automaton_parts(eta_u, eta_v, L, G, row, m, nv):
    """MAP of a (grandparent) head automaton on flat scores, written as a row and indicators.

    Viterbi over the last chosen modifier, once per incoming arc ``g``
    (``G = 0``: once, with no incoming arc), ``O(max(G, 1) L^2)``. Ties go
    to the lowest ``g``, then to the structure whose outermost modifier is
    closest to the head, then whose next one is, and so on (the DP keeps the
    first best predecessor).

    Parameters
    ----------
    eta_u : ndarray of shape (G + L,)
    eta_v : ndarray of shape ((L + 1)(L + 2) / 2 + G * L,)
        Flat scores in the module's layout; ``-inf`` forbids a part.
    L, G : int
        Modifiers and incoming arcs (0: the plain automaton).
    row : ndarray of shape (L + 1,), int64
        Output: the structure's identifying row (see the module docstring).
    m : ndarray of shape (G + L,)
    nv : ndarray of shape ((L + 1)(L + 2) / 2 + G * L,)
        Output: its unary and higher-order indicators.

    Returns
    -------
    found : bool
        False if every structure uses a forbidden part (the outputs are then
        unchanged).
    """
    best = np.empty(L + 1)
    back = np.empty(L + 1, dtype=np.int64)
    top = -np.inf
    top_g = -1
    for g in range(max(G, 1)):
        inc = 0.0
        if G > 0:
            inc = eta_u[g]
            if inc == -np.inf:
                continue
        total, last = _viterbi(eta_u, eta_v, L, G, g, best, back)
        if last < 0:
            continue
        total += inc
        if total > top:
            top = total
            top_g = g
    if top_g < 0:
        return False
    # Only the winner's backpointers are needed: one more pass rather than
    # a copy of them at every improvement.
    _, last = _viterbi(eta_u, eta_v, L, G, top_g, best, back)
    T = (L + 1) * (L + 2) // 2
    for a in range(m.shape[0]):
        m[a] = 0.0
    for a in range(nv.shape[0]):
        nv[a] = 0.0
    for t in range(L + 1):
        row[t] = 0
    g = max(top_g, 0)
    if G > 0:
        row[0] = g
        m[g] = 1.0
    nv[sibling_index(last, L + 1, L)] = 1.0
    k = last
    while k > 0:
        j = back[k]
        row[k] = 1
        m[G + k - 1] = 1.0
        nv[sibling_index(j, k, L)] = 1.0
        if G > 0:
            nv[T + g * L + k - 1] = 1.0
        k = j
    return True
