"""Numba kernels of the first-order arc pruner (see ``_pruning.py``).

A sentence's candidate arcs are a boolean ``(n + 1, n + 1)`` matrix
``mask[h, m]`` (index 0 is the root; column 0 and the diagonal stay False).
The kernels select each word's heads from the arc posteriors and then add
the few arcs that make sure a tree exists among the candidates.
"""

import numpy as np

from ..utils._numba import njit

__all__ = ["select_heads", "repair_chain", "repair_reachability", "repair_single_root"]


@njit
def select_heads(marginals, max_heads, threshold, mask):
    """Mark in ``mask`` the heads each word keeps (TurboParser's rule).

    For word ``m`` the heads ``h != m`` are ranked by ``marginals[h, m]``,
    ties to the lower ``h``; the first ``max_heads`` of them are kept while
    their posterior is at least ``threshold`` times the best one. The best
    head is always kept.
    """
    n = marginals.shape[0] - 1
    taken = np.zeros(n + 1, dtype=np.bool_)
    for m in range(1, n + 1):
        taken[:] = False
        taken[m] = True
        floor = 0.0
        # Selection by repeated scans: O(max_heads * n) per word, cheaper
        # than a sort when max_heads is small.
        for r in range(min(max_heads, n)):
            best = -1
            for h in range(n + 1):
                # Strict: among equal posteriors the lowest h wins.
                if not taken[h] and (best < 0 or marginals[h, m] > marginals[best, m]):
                    best = h
            if r == 0:
                floor = threshold * marginals[best, m]
            elif marginals[best, m] < floor:
                break
            taken[best] = True
            mask[best, m] = True


@njit
def repair_chain(mask):
    """Add every missing ``m - 1 -> m`` arc, ``0 -> 1`` included.

    The right-branching chain ``0 -> 1 -> ... -> n`` is a projective tree
    with a single word attached to the root, so one then always exists.
    """
    n = mask.shape[0] - 1
    added = 0
    for m in range(1, n + 1):
        if not mask[m - 1, m]:
            mask[m - 1, m] = True
            added += 1
    return added


@njit(internal=True)
def _reach(mask, source, reached, stack):
    """Mark in ``reached`` every node reachable from ``source`` through unreached nodes."""
    n = mask.shape[0] - 1
    if reached[source]:
        return
    reached[source] = True
    top = 0
    stack[top] = source
    top += 1
    while top > 0:
        top -= 1
        h = stack[top]
        for m in range(1, n + 1):
            if mask[h, m] and not reached[m]:
                reached[m] = True
                stack[top] = m
                top += 1


@njit(internal=True)
def _source_words(mask, reached, sources):
    """Fewest words from which every unreached word is reachable; return their count.

    They are one word of each source strongly connected component of the
    graph on the unreached words (a component no other unreached word
    leads into): no arc from a reached word enters an unreached one, so each
    such component needs an arc of its own, and these suffice. One pass
    finds them: a depth-first search over the unreached words, then, by
    decreasing finishing time, every word not yet reached is taken and all
    it reaches is marked. (A component with an arc into another finishes
    later, so a word taken this way has no unreached word leading to it.)
    On return every word is marked in ``reached``.
    """
    n = mask.shape[0] - 1
    seen = reached.copy()
    finish = np.empty(n + 1, dtype=np.int64)
    n_finished = 0
    stack = np.empty(n + 1, dtype=np.int64)
    next_child = np.zeros(n + 1, dtype=np.int64)
    for start in range(1, n + 1):
        if seen[start]:
            continue
        seen[start] = True
        top = 0
        stack[top] = start
        top += 1
        # Iterative DFS: next_child[v] is where v's scan of its successors resumes.
        while top > 0:
            v = stack[top - 1]
            m = next_child[v]
            while m <= n and (not mask[v, m] or seen[m]):
                m += 1
            if m <= n:
                next_child[v] = m + 1
                seen[m] = True
                stack[top] = m
                top += 1
            else:
                top -= 1
                finish[n_finished] = v
                n_finished += 1
    n_sources = 0
    for i in range(n_finished - 1, -1, -1):
        v = finish[i]
        if not reached[v]:
            sources[n_sources] = v
            n_sources += 1
            _reach(mask, v, reached, stack)
    return n_sources


@njit
def repair_reachability(mask):
    """Attach to the root the fewest words that make every word reachable from it.

    Adds ``0 -> v`` for one word ``v`` of each source component of the
    unreachable words (see ``_source_words``): then a tree (several words may
    hang from the root) exists among the candidates. Returns the number of
    arcs added.
    """
    n = mask.shape[0] - 1
    reached = np.zeros(n + 1, dtype=np.bool_)
    stack = np.empty(n + 1, dtype=np.int64)
    _reach(mask, 0, reached, stack)
    sources = np.empty(n, dtype=np.int64)
    n_sources = _source_words(mask, reached, sources)
    for i in range(n_sources):
        mask[0, sources[i]] = True
    return n_sources


@njit
def repair_single_root(mask, root_marginals):
    """Make sure a tree with exactly one word attached to the root exists.

    Such a tree exists iff some word ``r`` with the candidate ``0 -> r``
    reaches every word through candidate arcs between words. For each word
    ``r``, the repair that makes ``r`` that word costs ``0 -> r`` if missing,
    plus ``r -> v`` for one word ``v`` of each source component of the words
    ``r`` does not reach (the fewest arcs from ``r`` that do it). The word
    with the cheapest repair is chosen, ties to the larger posterior
    ``root_marginals[r]`` of ``0 -> r``, then to the lower ``r``, and its
    arcs are added. Returns the number of arcs added.
    """
    n = mask.shape[0] - 1
    reached = np.zeros(n + 1, dtype=np.bool_)
    stack = np.empty(n + 1, dtype=np.int64)
    sources = np.empty(n, dtype=np.int64)
    # Words by decreasing posterior of 0 -> r (stable: ties to the lower r),
    # so the first word reaching a cost wins its ties, and the search stops
    # at the first word that needs no arc.
    order = np.argsort(-root_marginals[1:], kind="mergesort") + 1
    best_r = -1
    best_cost = n + 1
    for r in order:
        if best_cost == 0:
            break
        if (0 if mask[0, r] else 1) >= best_cost:
            continue  # cannot do better than the word already found
        reached[:] = False
        reached[0] = True  # the root is no word to reach
        _reach(mask, r, reached, stack)
        cost = _source_words(mask, reached, sources) + (0 if mask[0, r] else 1)
        if cost < best_cost:
            best_r = r
            best_cost = cost
    if best_cost == 0:
        return 0
    mask[0, best_r] = True
    reached[:] = False
    reached[0] = True
    _reach(mask, best_r, reached, stack)
    n_sources = _source_words(mask, reached, sources)
    for i in range(n_sources):
        mask[best_r, sources[i]] = True
    return best_cost
