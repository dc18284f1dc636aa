"""Numba kernels for projective dependency trees on Eisner's chart.

No validation happens here: callers pass a C-contiguous float64 ``(N, N)``
array of arc scores (``N = n + 1``, position 0 is the root,
``scores[h, m]`` scores the arc ``h -> m``) holding finite values or
``-inf`` (forbidden arc), never NaN or ``+inf``. Column 0 and the diagonal
are never read.

The chart (Eisner 1996) covers positions ``0..n`` with four item types on a
span ``[s, t]``: complete right ``cr`` (head ``s``, no more dependents to the
right), complete left ``cl`` (head ``t``), incomplete right ``ir`` (the arc
``s -> t`` just added) and incomplete left ``il`` (the arc ``t -> s``). Both
incomplete items of a span share the same split sum

    ``sp[s, t] = (+)_{u=s..t-1} cr[s, u] (x) cl[u+1, t]``,

so ``ir[s, t] = sp[s, t] (x) scores[s, t]`` and
``il[s, t] = sp[s, t] (x) scores[t, s]``; the completions are

    ``cr[s, t] = (+)_{u=s+1..t} ir[s, u] (x) cr[u, t]``,
    ``cl[s, t] = (+)_{u=s..t-1} cl[s, u] (x) il[u, t]``.

The root only takes right dependents (``il[0, t]`` and ``cl[0, t]`` are
empty) and the whole tree is ``cr[0, n]``. With ``single_root`` the root's
incomplete items may only use the split ``u = 0``, i.e.
``ir[0, t] = scores[0, t] (x) cl[1, t]``: the word ``t`` is the only root
dependent and heads every other word. Each tree has exactly one derivation in
this chart, so the same recurrences give the best tree in the (max, +)
semiring and the partition function in the (logaddexp, +) semiring.
"""

import numpy as np

from ..utils._numba import njit

# Item codes of the backtracking stack.
_CR = 0
_CL = 1
_IR = 2
_IL = 3


@njit
def eisner_chart(scores, single_root, cr, cl, ir, il, split_i, split_cr, split_cl):
    """Fill the (max, +) chart and its split points; return the best score.

    The output tables are ``(N, N)`` float64 (``cr``, ``cl``, ``ir``, ``il``)
    and int64 (``split_*``) arrays, overwritten. Ties between split points go
    to the smallest split (first maximum, strict ``>``), which makes the
    result a deterministic function of the scores.
    """
    N = scores.shape[0]
    neg_inf = -np.inf
    for s in range(N):
        cr[s, s] = 0.0
        cl[s, s] = 0.0
    for k in range(1, N):
        for s in range(N - k):
            t = s + k
            # Incomplete items: one split search shared by both directions.
            u_end = s + 1 if (single_root and s == 0) else t
            best = neg_inf
            arg = s
            for u in range(s, u_end):
                v = cr[s, u] + cl[u + 1, t]
                if v > best:
                    best = v
                    arg = u
            split_i[s, t] = arg
            ir[s, t] = best + scores[s, t]
            if s == 0:
                il[s, t] = neg_inf  # no arc enters the root
            else:
                il[s, t] = best + scores[t, s]
            # Complete right item: u is the last dependent of s in (s, t].
            best = neg_inf
            arg = t
            for u in range(s + 1, t + 1):
                v = ir[s, u] + cr[u, t]
                if v > best:
                    best = v
                    arg = u
            split_cr[s, t] = arg
            cr[s, t] = best
            # Complete left item: u is the first dependent of t in [s, t).
            if s == 0:
                cl[s, t] = neg_inf
                split_cl[s, t] = s
            else:
                best = neg_inf
                arg = s
                for u in range(s, t):
                    v = cl[s, u] + il[u, t]
                    if v > best:
                        best = v
                        arg = u
                split_cl[s, t] = arg
                cl[s, t] = best
    return cr[0, N - 1]


@njit
def eisner_backtrack(split_i, split_cr, split_cl, heads):
    """Read the best tree off the split points into ``heads`` (``heads[0] = -1``)."""
    N = heads.shape[0]
    heads[0] = -1
    if N == 1:
        return
    # Every item pushes at most two children; a derivation has fewer than 4N items.
    stack_kind = np.empty(4 * N, dtype=np.int64)
    stack_s = np.empty(4 * N, dtype=np.int64)
    stack_t = np.empty(4 * N, dtype=np.int64)
    top = 0
    stack_kind[0] = _CR
    stack_s[0] = 0
    stack_t[0] = N - 1
    top = 1
    while top > 0:
        top -= 1
        kind = stack_kind[top]
        s = stack_s[top]
        t = stack_t[top]
        if s == t:
            continue
        if kind == _CR:
            u = split_cr[s, t]
            stack_kind[top] = _IR
            stack_s[top] = s
            stack_t[top] = u
            stack_kind[top + 1] = _CR
            stack_s[top + 1] = u
            stack_t[top + 1] = t
            top += 2
        elif kind == _CL:
            u = split_cl[s, t]
            stack_kind[top] = _CL
            stack_s[top] = s
            stack_t[top] = u
            stack_kind[top + 1] = _IL
            stack_s[top + 1] = u
            stack_t[top + 1] = t
            top += 2
        else:
            if kind == _IR:
                heads[t] = s
            else:
                heads[s] = t
            u = split_i[s, t]
            stack_kind[top] = _CR
            stack_s[top] = s
            stack_t[top] = u
            stack_kind[top + 1] = _CL
            stack_s[top + 1] = u + 1
            stack_t[top + 1] = t
            top += 2


@njit
def eisner(scores, single_root, heads):
    """Best projective tree into ``heads``; return its score (``-inf``: none)."""
    N = scores.shape[0]
    cr = np.empty((N, N))
    cl = np.empty((N, N))
    ir = np.empty((N, N))
    il = np.empty((N, N))
    split_i = np.zeros((N, N), dtype=np.int64)
    split_cr = np.zeros((N, N), dtype=np.int64)
    split_cl = np.zeros((N, N), dtype=np.int64)
    best = eisner_chart(scores, single_root, cr, cl, ir, il, split_i, split_cr, split_cl)
    if best > -np.inf:
        eisner_backtrack(split_i, split_cr, split_cl, heads)
    return best
