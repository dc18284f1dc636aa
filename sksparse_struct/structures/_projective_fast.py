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
    # Every item pushes at most two children; a derivation has fewer than 4N items.
    eisner_backtrack_ws(split_i, split_cr, split_cl, heads, np.empty((3, 4 * N), dtype=np.int64))


@njit
def eisner_backtrack_ws(split_i, split_cr, split_cl, heads, stack):
    """:func:`eisner_backtrack` with its stack given, an int64 ``(3, >= 4N)`` array."""
    N = heads.shape[0]
    heads[0] = -1
    if N == 1:
        return
    stack_kind = stack[0]
    stack_s = stack[1]
    stack_t = stack[2]
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


@njit(inline="always")
def eisner_workspace(N):
    """Work arrays for :func:`eisner_parts_ws` on ``N`` nodes (root included).

    Returned as a tuple ``(f_mat, i_mat, stack)``: the four score tables, the
    three split tables and the backtracking stack, so that a caller solving
    many problems of one size (SparseMAP's active set) allocates them once
    instead of once per oracle call.
    """
    f_mat = np.empty((4, N, N))
    i_mat = np.zeros((3, N, N), dtype=np.int64)
    stack = np.empty((3, 4 * N), dtype=np.int64)
    return f_mat, i_mat, stack


@njit
def eisner_parts_ws(eta_u, n, single_root, scores, heads, m_out, f_mat, i_mat, stack):
    """Best projective tree for flat arc scores, as heads and part indicators.

    ``eta_u`` holds the ``n * n`` arc scores in the part order of
    ``DependencyTree`` (part ``(m - 1) * n + j`` is the arc into ``m`` from
    the ``j``-th head other than ``m``); they are scattered into ``scores``
    (``(n + 1, n + 1)``, overwritten; column 0 and the diagonal set to
    ``-inf``), Eisner's chart is filled in the work arrays of
    ``eisner_workspace(n + 1)``, and the best tree is written to ``heads``
    and its indicator vector to ``m_out``. Returns False, leaving ``heads``
    and ``m_out`` unchanged, when no tree has a finite score.
    """
    for h in range(n + 1):
        scores[h, 0] = -np.inf
    for mod in range(1, n + 1):
        base = (mod - 1) * n
        for h in range(n + 1):
            if h < mod:
                scores[h, mod] = eta_u[base + h]
            elif h > mod:
                scores[h, mod] = eta_u[base + h - 1]
            else:
                scores[h, mod] = -np.inf
    best = eisner_chart(scores, single_root, f_mat[0], f_mat[1], f_mat[2], f_mat[3],
                        i_mat[0], i_mat[1], i_mat[2])
    if not best > -np.inf:
        return False
    eisner_backtrack_ws(i_mat[0], i_mat[1], i_mat[2], heads, stack)
    for a in range(n * n):
        m_out[a] = 0.0
    for mod in range(1, n + 1):
        h = heads[mod]
        m_out[(mod - 1) * n + (h if h < mod else h - 1)] = 1.0
    return True


# --------------------------------------------------------------------- inside-outside
#
# The inside pass fills the chart in the (logaddexp, +) semiring. The outside
# pass is its reverse-mode derivative, written in terms of
# ``g[x] = d log Z / d log x``, the probability that the item ``x`` is in the
# derivation of a tree drawn from the Gibbs distribution: a number in [0, 1].
# A completion ``x = (+)_u a_u (x) b_u`` passes ``g[x] * w_u`` down to both
# ``a_u`` and ``b_u``, with the local weights ``w_u = exp(a_u + b_u - x)`` in
# [0, 1] summing to 1. Nothing is exponentiated without the shift by its own
# item, so scores of any magnitude (+-1e4) are safe, and the marginal of an arc
# is the ``g`` of the incomplete item that adds it.
#
# Memory layout: the inner loops run over a split point ``u``; every table is
# kept in the orientation (row ``s`` or, transposed, row ``t``) in which those
# loops read it contiguously: ``cr``/``cl``/``ir`` by row, ``crT``/``clT``/``ilT``
# with ``xT[t, s] = x[s, t]``. The outside pass accumulates into row-wise and
# transposed tables alike and adds the two halves when an item is read.

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
# exp(-708) is about the smallest normal double; smaller weights are flushed to
# 0, which changes sums whose largest term is 1 by less than 1e-300.
_EXP_CUTOFF = -708.0


@njit
def exp_nonpositive(buf, bits, length):
    """``buf[:length] = exp(buf[:length])`` for arguments at most about 0.

    A branch-free exp (Cody-Waite reduction ``x = k ln 2 + r``, a degree-13
    Taylor polynomial on ``|r| <= ln(2) / 2``, and ``2**k`` assembled in the
    exponent bits of ``bits``, an int64 scratch array) that the compiler
    vectorizes; libm's scalar exp dominated the inside-outside time. Accurate
    to about 1 ulp; arguments below -708 (and ``-inf``) give exactly 0.
    """
    for i in range(length):
        x = buf[i]
        xc = max(x, _EXP_CUTOFF)
        k = np.floor(xc * _LOG2E + 0.5)
        r = (xc - k * _LN2_HI) - k * _LN2_LO
        p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (
            1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0 + r * (
                1.0 / 40320.0 + r * (1.0 / 362880.0 + r * (1.0 / 3628800.0 + r * (
                    1.0 / 39916800.0 + r * (1.0 / 479001600.0 + r * (
                        1.0 / 6227020800.0)))))))))))))
        bits[i] = (np.int64(k) + 1023) << 52
        buf[i] = p if x >= _EXP_CUTOFF else 0.0
    scale = bits.view(np.float64)
    for i in range(length):
        buf[i] *= scale[i]


@njit
def lse_pair(x, x0, y, y0, length, buf, bits):
    """``log sum_i exp(x[x0 + i] + y[y0 + i])`` over ``i < length``.

    Leaves the unnormalized weights ``exp(x + y - max)`` in ``buf``.
    """
    m = -np.inf
    for i in range(length):
        v = x[x0 + i] + y[y0 + i]
        buf[i] = v
        m = max(m, v)
    if m == -np.inf:
        return m
    for i in range(length):
        buf[i] -= m
    exp_nonpositive(buf, bits, length)
    acc = 0.0
    for i in range(length):
        acc += buf[i]
    return m + np.log(acc)


@njit
def scatter_pair(g, x, x0, y, y0, length, total, gx, gy, buf, bits):
    """``gx[x0 + i] += g w_i`` and ``gy[y0 + i] += g w_i``, ``w_i = exp(x + y - total)``."""
    for i in range(length):
        buf[i] = x[x0 + i] + y[y0 + i] - total
    exp_nonpositive(buf, bits, length)
    for i in range(length):
        w = g * buf[i]
        gx[x0 + i] += w
        gy[y0 + i] += w


@njit
def inside(scores, single_root, cr, crT, cl, clT, ir, ilT, sp, buf, bits):
    """Fill the log-space inside chart (``(N, N)`` tables, overwritten); return log Z."""
    N = scores.shape[0]
    for s in range(N):
        cr[s, s] = crT[s, s] = 0.0
        cl[s, s] = clT[s, s] = 0.0
    for k in range(1, N):
        for s in range(N - k):
            t = s + k
            n_split = 1 if (single_root and s == 0) else k
            # u = s .. s + n_split - 1: cr[s, u] (x) cl[u + 1, t]
            val = lse_pair(cr[s], s, clT[t], s + 1, n_split, buf, bits)
            sp[s, t] = val
            ir[s, t] = val + scores[s, t]
            ilT[t, s] = -np.inf if s == 0 else val + scores[t, s]
            # u = s + 1 .. t: ir[s, u] (x) cr[u, t]
            val = lse_pair(ir[s], s + 1, crT[t], s + 1, k, buf, bits)
            cr[s, t] = crT[t, s] = val
            if s == 0:
                cl[s, t] = clT[t, s] = -np.inf
            else:
                # u = s .. t - 1: cl[s, u] (x) il[u, t]
                val = lse_pair(cl[s], s, ilT[t], s, k, buf, bits)
                cl[s, t] = clT[t, s] = val
    return cr[0, N - 1]


@njit
def outside(single_root, cr, crT, cl, clT, ir, ilT, sp,
            gcr, gcrT, gcl, gclT, gir, gilT, marginals, buf, bits):
    """Item probabilities (``g*`` tables, zeroed here) and the arc marginals.

    Items are visited from the widest span down; within a span the complete
    items come first, as they feed the incomplete items of the same span,
    whose probabilities are then final: they are the arc marginals.
    """
    N = cr.shape[0]
    gcr[:, :] = 0.0
    gcrT[:, :] = 0.0
    gcl[:, :] = 0.0
    gclT[:, :] = 0.0
    gir[:, :] = 0.0
    gilT[:, :] = 0.0
    marginals[:, :] = 0.0
    gcr[0, N - 1] = 1.0
    for k in range(N - 1, 0, -1):
        for s in range(N - k):
            t = s + k
            g = gcr[s, t] + gcrT[t, s]
            if g > 0.0:
                scatter_pair(g, ir[s], s + 1, crT[t], s + 1, k, cr[s, t],
                             gir[s], gcrT[t], buf, bits)
            if s > 0:
                g = gcl[s, t] + gclT[t, s]
                if g > 0.0:
                    scatter_pair(g, cl[s], s, ilT[t], s, k, cl[s, t],
                                 gcl[s], gilT[t], buf, bits)
            p_right = gir[s, t]
            p_left = gilT[t, s]
            marginals[s, t] = p_right
            marginals[t, s] = p_left
            g = p_right + p_left
            if g > 0.0:
                n_split = 1 if (single_root and s == 0) else k
                scatter_pair(g, cr[s], s, clT[t], s + 1, n_split, sp[s, t],
                             gcr[s], gclT[t], buf, bits)


@njit
def inside_outside(scores, single_root, marginals):
    """Arc marginals into ``marginals`` (``(N, N)``); return log Z (``-inf``: no tree)."""
    N = scores.shape[0]
    cr = np.empty((N, N))
    crT = np.empty((N, N))
    cl = np.empty((N, N))
    clT = np.empty((N, N))
    ir = np.empty((N, N))
    ilT = np.empty((N, N))
    sp = np.empty((N, N))
    buf = np.empty(N)
    bits = np.empty(N, dtype=np.int64)
    log_z = inside(scores, single_root, cr, crT, cl, clT, ir, ilT, sp, buf, bits)
    if log_z == -np.inf:
        marginals[:, :] = 0.0
        return log_z
    gcr = np.empty((N, N))
    gcrT = np.empty((N, N))
    gcl = np.empty((N, N))
    gclT = np.empty((N, N))
    gir = np.empty((N, N))
    gilT = np.empty((N, N))
    outside(single_root, cr, crT, cl, clT, ir, ilT, sp,
            gcr, gcrT, gcl, gclT, gir, gilT, marginals, buf, bits)
    return log_z


# ------------------------------------------------------- backward pass of the marginals
#
# The marginals are the gradient of log Z, so their Jacobian is the Hessian of
# log Z, which is symmetric: the vector-Jacobian product with ``v`` equals the
# Jacobian-vector product in the direction ``v``. We get it by forward-mode
# differentiation of the inside-outside pass above: every chart value carries
# its derivative along ``scores + eps v``. The derivative of an inside
# log-value is the conditional expectation of ``v . arcs`` given the item, and
# that of a local weight is ``w_u (d a_u + d b_u - d x)``: bounded numbers,
# combined only by sums and products with weights in [0, 1], so the pass keeps
# the stability of the forward one (no signed log-space bookkeeping needed).


@njit
def lse_pair_jvp(x, x0, y, y0, dx, dy, length, buf, bits):
    """:func:`lse_pair` and its derivative (``dx``, ``dy`` aligned with ``x``, ``y``)."""
    m = -np.inf
    for i in range(length):
        v = x[x0 + i] + y[y0 + i]
        buf[i] = v
        m = max(m, v)
    if m == -np.inf:
        return m, 0.0
    for i in range(length):
        buf[i] -= m
    exp_nonpositive(buf, bits, length)
    acc = 0.0
    d_acc = 0.0
    for i in range(length):
        w = buf[i]
        acc += w
        d_acc += w * (dx[x0 + i] + dy[y0 + i])
    return m + np.log(acc), d_acc / acc


@njit
def scatter_pair_jvp(g, dg, x, x0, y, y0, dx, dy, length, total, d_total,
                     gx, dgx, gy, dgy, buf, bits):
    """:func:`scatter_pair` and its derivative."""
    for i in range(length):
        buf[i] = x[x0 + i] + y[y0 + i] - total
    exp_nonpositive(buf, bits, length)
    for i in range(length):
        w = buf[i]
        dw = w * (dx[x0 + i] + dy[y0 + i] - d_total)
        gw = g * w
        dgw = dg * w + g * dw
        gx[x0 + i] += gw
        dgx[x0 + i] += dgw
        gy[y0 + i] += gw
        dgy[y0 + i] += dgw


@njit
def inside_jvp(scores, single_root, direction, cr, crT, cl, clT, ir, ilT, sp,
               dcr, dcrT, dcl, dclT, dir_, dilT, dsp, buf, bits):
    """:func:`inside` and the derivatives of its tables along ``direction``."""
    N = scores.shape[0]
    for s in range(N):
        cr[s, s] = crT[s, s] = 0.0
        cl[s, s] = clT[s, s] = 0.0
        dcr[s, s] = dcrT[s, s] = 0.0
        dcl[s, s] = dclT[s, s] = 0.0
    for k in range(1, N):
        for s in range(N - k):
            t = s + k
            n_split = 1 if (single_root and s == 0) else k
            val, d_val = lse_pair_jvp(cr[s], s, clT[t], s + 1, dcr[s], dclT[t],
                                      n_split, buf, bits)
            sp[s, t] = val
            dsp[s, t] = d_val
            ir[s, t] = val + scores[s, t]
            dir_[s, t] = d_val + direction[s, t]
            if s == 0:
                ilT[t, s] = -np.inf
                dilT[t, s] = 0.0
            else:
                ilT[t, s] = val + scores[t, s]
                dilT[t, s] = d_val + direction[t, s]
            val, d_val = lse_pair_jvp(ir[s], s + 1, crT[t], s + 1, dir_[s], dcrT[t],
                                      k, buf, bits)
            cr[s, t] = crT[t, s] = val
            dcr[s, t] = dcrT[t, s] = d_val
            if s == 0:
                cl[s, t] = clT[t, s] = -np.inf
                dcl[s, t] = dclT[t, s] = 0.0
            else:
                val, d_val = lse_pair_jvp(cl[s], s, ilT[t], s, dcl[s], dilT[t],
                                          k, buf, bits)
                cl[s, t] = clT[t, s] = val
                dcl[s, t] = dclT[t, s] = d_val
    return cr[0, N - 1]


@njit
def outside_jvp(single_root, cr, crT, cl, clT, ir, ilT, sp,
                dcr, dcrT, dcl, dclT, dir_, dilT, dsp, d_marginals, buf, bits):
    """Derivative of the arc marginals of :func:`outside` into ``d_marginals``."""
    N = cr.shape[0]
    gcr = np.zeros((N, N))
    gcrT = np.zeros((N, N))
    gcl = np.zeros((N, N))
    gclT = np.zeros((N, N))
    gir = np.zeros((N, N))
    gilT = np.zeros((N, N))
    dgcr = np.zeros((N, N))
    dgcrT = np.zeros((N, N))
    dgcl = np.zeros((N, N))
    dgclT = np.zeros((N, N))
    dgir = np.zeros((N, N))
    dgilT = np.zeros((N, N))
    d_marginals[:, :] = 0.0
    gcr[0, N - 1] = 1.0
    for k in range(N - 1, 0, -1):
        for s in range(N - k):
            t = s + k
            g = gcr[s, t] + gcrT[t, s]
            dg = dgcr[s, t] + dgcrT[t, s]
            if cr[s, t] > -np.inf and (g != 0.0 or dg != 0.0):
                scatter_pair_jvp(g, dg, ir[s], s + 1, crT[t], s + 1, dir_[s], dcrT[t],
                                 k, cr[s, t], dcr[s, t],
                                 gir[s], dgir[s], gcrT[t], dgcrT[t], buf, bits)
            if s > 0:
                g = gcl[s, t] + gclT[t, s]
                dg = dgcl[s, t] + dgclT[t, s]
                if cl[s, t] > -np.inf and (g != 0.0 or dg != 0.0):
                    scatter_pair_jvp(g, dg, cl[s], s, ilT[t], s, dcl[s], dilT[t],
                                     k, cl[s, t], dcl[s, t],
                                     gcl[s], dgcl[s], gilT[t], dgilT[t], buf, bits)
            d_marginals[s, t] = dgir[s, t]
            d_marginals[t, s] = dgilT[t, s]
            g = gir[s, t] + gilT[t, s]
            dg = dgir[s, t] + dgilT[t, s]
            if sp[s, t] > -np.inf and (g != 0.0 or dg != 0.0):
                n_split = 1 if (single_root and s == 0) else k
                scatter_pair_jvp(g, dg, cr[s], s, clT[t], s + 1, dcr[s], dclT[t],
                                 n_split, sp[s, t], dsp[s, t],
                                 gcr[s], dgcr[s], gclT[t], dgclT[t], buf, bits)


@njit
def inside_outside_jvp(scores, single_root, direction, d_marginals):
    """Derivative of the arc marginals along ``direction`` into ``d_marginals``.

    Returns log Z (``-inf``: no tree, and ``d_marginals`` is left at 0).
    """
    N = scores.shape[0]
    cr = np.empty((N, N))
    crT = np.empty((N, N))
    cl = np.empty((N, N))
    clT = np.empty((N, N))
    ir = np.empty((N, N))
    ilT = np.empty((N, N))
    sp = np.empty((N, N))
    dcr = np.empty((N, N))
    dcrT = np.empty((N, N))
    dcl = np.empty((N, N))
    dclT = np.empty((N, N))
    dir_ = np.empty((N, N))
    dilT = np.empty((N, N))
    dsp = np.empty((N, N))
    buf = np.empty(N)
    bits = np.empty(N, dtype=np.int64)
    log_z = inside_jvp(scores, single_root, direction, cr, crT, cl, clT, ir, ilT, sp,
                       dcr, dcrT, dcl, dclT, dir_, dilT, dsp, buf, bits)
    if log_z == -np.inf:
        d_marginals[:, :] = 0.0
        return log_z
    outside_jvp(single_root, cr, crT, cl, clT, ir, ilT, sp,
                dcr, dcrT, dcl, dclT, dir_, dilT, dsp, d_marginals, buf, bits)
    return log_z
