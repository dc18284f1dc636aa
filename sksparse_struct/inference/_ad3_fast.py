"""Numba kernels of AD3 (Martins et al. 2015) on a compiled factor graph.

The graph travels as three named tuples (see ``_factor_graph``):

- ``GraphArrays``: factor ``f`` owns the slots ``f_start[f]:f_start[f + 1]``;
  slot ``s`` is a copy of the binary variable ``slot_var[s]``, negated when
  ``slot_neg[s]`` (a *literal*). Scored factors read their scores at
  ``f_score[f]`` in the flat ``factor_scores`` and write their additional
  marginals at the same offsets; ``f_aux[f]`` is the row of the factor in
  its kind's own table (a dense factor's configuration table, a structure
  factor's entry), -1 when it has none.
- ``DenseTables``: the "on" positions of configuration ``c`` of table
  ``t`` are ``cfg_on[cfg_ptr[tab_cfg[t] + c]:cfg_ptr[tab_cfg[t] + c + 1]]``
  (sorted, as positions within the factor).
- ``StructureTable``: per structure factor, its oracle (``kind``, ``n``,
  ``K``, ``single_root``, as ``Structure.compiled_oracle`` describes it),
  its fixed part scores and the inner active set's limits.

**Factor kinds.** Every kind is one function ``kind(op, ...)`` answering
three questions about factor ``f`` on the vector ``x`` of its literals, and
one line in :func:`factor_op`, the table the solver dispatches through:

- ``QP``: the local subproblem of AD3, the projection
  ``min_q 1/2 ||q - x||^2 - (s / rho) . q_add`` over the factor's polytope
  (``q`` overwrites ``x``; the additional marginals ``q_add`` go to ``add``);
- ``BEST``: ``max_q x . q + s . q_add`` over the factor's configurations (its
  term of the Lagrangian dual);
- ``CHECK``: whether the 0/1 literals ``x`` are an allowed configuration;
  returns the score ``s . q_add`` of its additional marginals (written to
  ``add``), or ``-inf``.

The penalty of the augmented Lagrangian is ``rho = 2 * eta`` (AD3's
convention); the literals' targets are ``x_s = u[v] + (theta[v] / deg[v] +
lam[s]) / rho``.

**LP-SparseMAP** (Niculae & Martins 2020) is the same loop with the option
``OPT_QUADRATIC = c > 0``: the objective gains ``-c/2 ||u||^2`` on the
variables. The quadratic goes into the consensus step, not into the
factors: ``u`` maximises ``-c/2 u^2 - u sum(lam) - rho/2 sum((q - u)^2)``
over [0, 1] (a clipped closed form), so every factor keeps its Euclidean
projection and the multipliers of a variable no longer sum to zero (at the
solution they sum to ``-c u``). This is ADMM with the consensus variable
carrying the strongly concave term; it converges to the same optimum as
the per-factor split of Niculae & Martins.
"""

from typing import NamedTuple

import numpy as np
from numba import types
from numba.extending import overload
from numba.experimental import structref
from numba.typed import List

from ..utils._numba import njit
from ._sparsemap_fast import (
    DEPENDENT_TOL,
    active_set_any,
    active_set_workspace,
    bordered_inverse_delete,
    masked_dot,
    oracle_any,
)

# Factor kinds (``f_type``); the names are in ``_factor_graph.FACTOR_KINDS``.
XOR = 0
AT_MOST_ONE = 1
OR = 2
PAIR = 3
DENSE = 4
STRUCT = 5

# Questions a factor kind answers (see the module docstring).
QP = 0
BEST = 1
CHECK = 2

_DEP_TOL = 1e-9
# Step of the multiplier update, relative to the penalty: ADMM converges for
# any value in (0, (1 + sqrt 5) / 2); 1.5 takes about half the iterations of 1
# on the fractional LPs of argument mining.
TAU = 1.5
# Iterations between step-size adaptations (AD3 uses 10; every 50 iterations
# took about 30% fewer iterations on fractional argument-mining LPs).
ADAPT_EVERY = 50
# A variable within this distance of 0 or 1 counts as integral.
INTEGRAL_TOL = 1e-6
# Iterations between dual evaluations (early stops on a bound or a gap).
DUAL_EVERY = 50


@njit
def _clip01(x):
    if x < 0.0:
        return 0.0
    if x > 1.0:
        return 1.0
    return x


@njit
def _project_simplex(x, n, srt):
    """Project ``x[:n]`` onto the probability simplex in place (sort-based).

    Computed on ``x - max(x)``: the threshold ``(cum - 1) / k`` of the
    unshifted values loses the ``- 1`` once the sum passes 2**53 (scores of
    1e15 and more), and the output would leave the simplex.
    """
    for i in range(n):
        # insertion sort, descending (n is small)
        v = x[i]
        j = i
        while j > 0 and srt[j - 1] < v:
            srt[j] = srt[j - 1]
            j -= 1
        srt[j] = v
    # The shift only where it matters, so that ordinary scores keep the
    # plain arithmetic (and its last bits).
    top = srt[0] if abs(srt[0]) > 1048576.0 else 0.0
    cum = 0.0
    tau = 0.0
    for i in range(n):
        cum += srt[i] - top
        t = (cum - 1.0) / (i + 1)
        if srt[i] - top - t > 0.0:
            tau = t
    for i in range(n):
        v = (x[i] - top) - tau
        x[i] = max(0.0, v)


@njit
def _overlap(cfg_ptr, cfg_on, c0, a, b):
    """``|on(a) & on(b)|``: the Gram entry of configurations ``a`` and ``b`` (sorted lists).

    Computed when needed rather than stored: a table of ``n_c``
    configurations would need an ``n_c^2`` matrix.
    """
    i, i_end = cfg_ptr[c0 + a], cfg_ptr[c0 + a + 1]
    j, j_end = cfg_ptr[c0 + b], cfg_ptr[c0 + b + 1]
    count = 0
    while i < i_end and j < j_end:
        x = cfg_on[i]
        y = cfg_on[j]
        if x == y:
            count += 1
            i += 1
            j += 1
        elif x < y:
            i += 1
        else:
            j += 1
    return float(count)


@njit
def _kkt_insert(cfg_ptr, cfg_on, c0, S, k, B, c, w):
    """Add configuration ``c`` to the support ``S[:k]`` and border the KKT inverse.

    ``B`` is the inverse of ``[[0, 1^T], [1, G_SS]]`` (row 0: the multiplier).
    The Schur complement of the new row is the squared distance from ``c``
    to the affine hull of the support; when it vanishes nothing changes, the
    affine coefficients of ``c`` are left in ``w[1:k + 1]`` and False is
    returned.
    """
    gcc = float(cfg_ptr[c0 + c + 1] - cfg_ptr[c0 + c])
    if k == 0:
        B[0, 0] = -gcc
        B[0, 1] = 1.0
        B[1, 0] = 1.0
        B[1, 1] = 0.0
        S[0] = c
        return True
    for r in range(k + 1):
        acc = B[r, 0]
        for j in range(k):
            acc += B[r, j + 1] * _overlap(cfg_ptr, cfg_on, c0, S[j], c)
        w[r] = acc
    schur = gcc - w[0]
    for j in range(k):
        schur -= _overlap(cfg_ptr, cfg_on, c0, S[j], c) * w[j + 1]
    if schur <= _DEP_TOL * max(1.0, gcc) or k + 2 > B.shape[0]:
        return False
    inv = 1.0 / schur
    for r in range(k + 1):
        wr = w[r] * inv
        for j in range(k + 1):
            B[r, j] += wr * w[j]
        B[r, k + 1] = -wr
        B[k + 1, r] = -wr
    B[k + 1, k + 1] = inv
    S[k] = c
    return True


@njit
def _kkt_delete(S, k, B, j):
    """Remove support member ``j`` (the last one takes its place); the new size."""
    last = k - 1
    if j != last:
        S[j] = S[last]
    bordered_inverse_delete(B, j, last)
    return last


@njit
def _drop_zeros(p, S, k, B):
    for j in range(k - 1, -1, -1):
        if p[S[j]] <= 0.0:
            p[S[j]] = 0.0
            k = _kkt_delete(S, k, B, j)
    return k


@njit
def dense_rebuild(p, nc, cfg_ptr, cfg_on, c0, S, B, w):
    """Support and KKT inverse from a warm-start distribution ``p`` (dependent members dropped)."""
    k = 0
    for c in range(nc):
        if p[c] > 0.0:
            if _kkt_insert(cfg_ptr, cfg_on, c0, S, k, B, c, w):
                k += 1
            else:
                p[c] = 0.0
    return k


@njit
def dense_qp(theta, p, nc, cfg_ptr, cfg_on, c0, r, S, k, B, x, rhs, res, max_iter):
    """Active-set solve of ``max_p theta . p - 1/2 ||C^T p||^2`` on the simplex.

    ``p[:nc]`` with support ``S[:k]`` and KKT inverse ``B`` is the warm start
    (kept from the previous call); all three are updated in place and the
    new support size returned; ``r`` receives ``C^T p``. The support stays
    affinely independent (a configuration in the affine hull of the support
    replaces one of it, Caratheodory style), so the KKT matrix is always
    invertible; its inverse is updated in ``O(k^2)`` per change, and each
    relaxed solve takes one step of iterative refinement.
    """
    if k == 0:
        best = 0
        for c in range(1, nc):
            if theta[c] > theta[best]:
                best = c
        for c in range(nc):
            p[c] = 0.0
        p[best] = 1.0
        _kkt_insert(cfg_ptr, cfg_on, c0, S, 0, B, best, x)
        k = 1
    it = 0
    while it < max_iter:
        it += 1
        # relaxed QP on the support: x = B [1; theta_S], refined once
        rhs[0] = 1.0
        for i in range(k):
            rhs[i + 1] = theta[S[i]]
        for a in range(k + 1):
            acc = 0.0
            for j in range(k + 1):
                acc += B[a, j] * rhs[j]
            x[a] = acc
        acc = 1.0
        for i in range(k):
            acc -= x[i + 1]
        res[0] = acc
        for i in range(k):
            acc = rhs[i + 1] - x[0]
            for j in range(k):
                acc -= _overlap(cfg_ptr, cfg_on, c0, S[i], S[j]) * x[j + 1]
            res[i + 1] = acc
        for a in range(k + 1):
            acc = 0.0
            for j in range(k + 1):
                acc += B[a, j] * res[j]
            x[a] += acc
        blocking = -1
        gamma = 1.0
        for i in range(k):
            if x[i + 1] < 0.0:
                pi = p[S[i]]
                ratio = pi / (pi - x[i + 1])
                if blocking < 0 or ratio < gamma:
                    gamma = ratio
                    blocking = i
        if blocking >= 0:
            for i in range(k):
                c = S[i]
                p[c] += gamma * (x[i + 1] - p[c])
            p[S[blocking]] = 0.0
            k = _drop_zeros(p, S, k, B)
            continue
        tau = x[0]
        for i in range(k):
            p[S[i]] = x[i + 1]
        k = _drop_zeros(p, S, k, B)
        for i in range(r.shape[0]):
            r[i] = 0.0
        for i in range(k):
            c = S[i]
            for t in range(cfg_ptr[c0 + c], cfg_ptr[c0 + c + 1]):
                r[cfg_on[t]] += p[c]
        best = -1
        best_g = tau + 1e-12 * max(1.0, abs(tau))
        for c in range(nc):
            if p[c] > 0.0:
                continue
            g = theta[c]
            for t in range(cfg_ptr[c0 + c], cfg_ptr[c0 + c + 1]):
                g -= r[cfg_on[t]]
            if g > best_g:
                best_g = g
                best = c
        if best < 0:
            return k
        # Insert ``best``; if it is an affine combination of the support,
        # shift mass onto it until one member leaves, then insert it.
        while not _kkt_insert(cfg_ptr, cfg_on, c0, S, k, B, best, x):
            j = -1
            tmin = np.inf
            for i in range(k):
                if x[i + 1] > 0.0:
                    ratio = p[S[i]] / x[i + 1]
                    if ratio < tmin:
                        tmin = ratio
                        j = i
            if j < 0:
                return k  # cannot happen: the coefficients sum to 1
            for i in range(k):
                p[S[i]] -= tmin * x[i + 1]
            p[S[j]] = 0.0
            p[best] += tmin
            k = _kkt_delete(S, k, B, j)
            k = _drop_zeros(p, S, k, B)
        k += 1
    # Out of iterations: r must still describe p.
    for i in range(r.shape[0]):
        r[i] = 0.0
    for i in range(k):
        c = S[i]
        for t in range(cfg_ptr[c0 + c], cfg_ptr[c0 + c + 1]):
            r[cfg_on[t]] += p[c]
    return k


@njit
def pair_qp(a, b, s):
    """Closed-form local QP of a pair factor.

    ``min 1/2 (x - a)^2 + 1/2 (y - b)^2 - s z`` over ``x, y`` in [0, 1] and
    ``z`` in the pair's polytope (``max(0, x + y - 1) <= z <= min(x, y)``).
    Both signs of ``s`` reduce to ``min 1/2 (x - A)^2 + 1/2 (y - B)^2 +
    c (x - y)^+`` on the box (for ``s < 0`` through ``y -> 1 - y``), whose
    minimiser is the unconstrained box minimiser when it has ``x <= y``, the
    one of the linear lower bound when it has ``x >= y``, else on ``x = y``.
    """
    if s >= 0.0:
        A = a + s
        B = b
        c = s
    else:
        A = a
        B = 1.0 - b
        c = -s
    x = _clip01(A)
    y = _clip01(B)
    if x > y:
        x = _clip01(A - c)
        y = _clip01(B + c)
        if x < y:
            x = _clip01(0.5 * (A + B))
            y = x
    m = min(y, x)
    if s >= 0.0:
        return x, y, m
    return x, 1.0 - y, x - m



# -- the factor kinds ---------------------------------------------------------


@njit(inline="always")
def xor_factor(op, off, x, n, fs, add, inv_rho, buf):
    """Exactly one literal is 1."""
    if op == QP:
        _project_simplex(x, n, buf)
        return 0.0
    if op == BEST:
        best = -np.inf
        for i in range(n):
            best = max(best, x[i])
        return best
    cnt = 0.0
    for i in range(n):
        cnt += x[i]
    return 0.0 if cnt == 1.0 else -np.inf


@njit
def _box_then_simplex(x, n, srt, over):
    """Clip to the box; if the sum is on the wrong side of 1, project onto the simplex."""
    tot = 0.0
    for i in range(n):
        tot += _clip01(x[i])
    if (over and tot > 1.0) or (not over and tot < 1.0):
        _project_simplex(x, n, srt)
    else:
        for i in range(n):
            x[i] = _clip01(x[i])


@njit(inline="always")
def at_most_one_factor(op, off, x, n, fs, add, inv_rho, buf):
    """At most one literal is 1."""
    if op == QP:
        _box_then_simplex(x, n, buf, True)
        return 0.0
    if op == BEST:
        best = 0.0
        for i in range(n):
            best = max(best, x[i])
        return best
    cnt = 0.0
    for i in range(n):
        cnt += x[i]
    return 0.0 if cnt <= 1.0 else -np.inf


@njit(inline="always")
def or_factor(op, off, x, n, fs, add, inv_rho, buf):
    """At least one literal is 1 (implications are ORs of negated literals)."""
    if op == QP:
        _box_then_simplex(x, n, buf, False)
        return 0.0
    if op == BEST:
        pos = 0.0
        best = -np.inf
        for i in range(n):
            if x[i] > 0.0:
                pos += x[i]
            best = max(best, x[i])
        return pos if best > 0.0 else best
    cnt = 0.0
    for i in range(n):
        cnt += x[i]
    return 0.0 if cnt >= 1.0 else -np.inf


@njit(inline="always")
def pair_factor(op, off, x, n, fs, add, inv_rho, buf):
    """One extra marginal ``z = x0 AND x1`` with a score."""
    if op == QP:
        a, b, m = pair_qp(x[0], x[1], fs[off] * inv_rho)
        x[0] = a
        x[1] = b
        add[off] = m
        return 0.0
    if op == BEST:
        return max(max(0.0, x[0]), max(x[1], x[0] + x[1] + fs[off]))
    z = x[0] * x[1]
    add[off] = z
    return z * fs[off]


@njit
def dense_factor(op, tables, work, f, t, off, x, n, fs, add, inv_rho):
    """A distribution over listed configurations (a table) of the factor's variables."""
    nc = tables.tab_nc[t]
    c0 = tables.tab_cfg[t]
    cfg_ptr = tables.cfg_ptr
    cfg_on = tables.cfg_on
    if op == QP:
        theta = work.theta
        for c in range(nc):
            if not tables.cfg_ok[c0 + c]:
                theta[c] = -np.inf
                continue
            th = fs[off + c] * inv_rho
            for e in range(cfg_ptr[c0 + c], cfg_ptr[c0 + c + 1]):
                th += x[cfg_on[e]]
            theta[c] = th
        d = work.f_dense[f]
        r = work.r[:n]
        work.dk[d] = dense_qp(theta, add[off:off + nc], nc, cfg_ptr, cfg_on, c0, r,
                              work.dS[d], work.dk[d], work.dB[d], work.x, work.rhs, work.res,
                              10 * nc + 10)
        for i in range(n):
            x[i] = r[i]
        return 0.0
    if op == BEST:
        best = -np.inf
        for c in range(nc):
            if not tables.cfg_ok[c0 + c]:
                continue
            val = fs[off + c]
            for e in range(cfg_ptr[c0 + c], cfg_ptr[c0 + c + 1]):
                val += x[cfg_on[e]]
            best = max(best, val)
        return best
    tot = 0.0
    for i in range(n):
        tot += x[i]
    best = -1
    for c in range(nc):
        add[off + c] = 0.0
        n_on = cfg_ptr[c0 + c + 1] - cfg_ptr[c0 + c]
        cnt = 0.0
        for e in range(cfg_ptr[c0 + c], cfg_ptr[c0 + c + 1]):
            cnt += x[cfg_on[e]]
        if cnt == n_on and tot == n_on and tables.cfg_ok[c0 + c]:
            if best < 0 or fs[off + c] > fs[off + best]:
                best = c
    if best < 0:
        return -np.inf
    add[off + best] = 1.0
    return fs[off + best]


@njit
def structure_factor(op, st, work, j, off, x, n, fs, add, inv_rho):
    """A distribution over the structures of a ``Structure`` (its compiled oracle).

    ``QP`` is SparseMAP on the shifted scores, by the compiled active set
    warm-started from the factor's support of the previous iteration and
    cut at ``max_iter`` steps (a few: the targets move little between
    iterations, and AD3 converges with inexact warm-started subproblems).
    """
    kind = st.kind[j]
    size = st.n[j]
    K = st.K[j]
    root = st.single_root[j]
    fixed_u = st.eta_u[st.u_ptr[j]:st.u_ptr[j + 1]]
    fixed_v = st.eta_v[st.v_ptr[j]:st.v_ptr[j + 1]]
    n_v = fixed_v.shape[0]
    ws = work.struct_ws[j]
    eu = work.struct_u[j]
    ev = work.struct_v[j]
    if op == QP:
        for i in range(n):
            eu[i] = x[i] + fixed_u[i] * inv_rho
        for a in range(n_v):
            ev[a] = (fixed_v[a] + fs[off + a]) * inv_rho
        cap = ws[0].shape[0]
        ws, k, _, _, _, status = active_set_any(
            eu, ev, size, K, root, st.max_iter[j], st.tol[j], DEPENDENT_TOL, kind, ws,
            work.struct_k[j])
        if ws[0].shape[0] != cap:
            # The support outgrew the arrays (all of them grow together);
            # storing an unchanged tuple back would cost a reference count
            # update per array.
            work.struct_ws[j] = ws
        work.struct_k[j] = k
        if status != 0:
            work.status[0] = 1
            return 0.0
        IDX, VAL, nnz, N, p = ws[0], ws[1], ws[2], ws[3], ws[6]
        for i in range(n):
            x[i] = 0.0
        for a in range(n_v):
            add[off + a] = 0.0
        for i in range(k):
            pi = p[i]
            for t in range(nnz[i]):
                x[IDX[i, t]] += pi * VAL[i, t]
            for a in range(n_v):
                add[off + a] += pi * N[i, a]
        return 0.0
    row, m, nv = ws[9], ws[10], ws[11]
    if op == BEST:
        for i in range(n):
            eu[i] = x[i] + fixed_u[i]
        for a in range(n_v):
            ev[a] = fixed_v[a] + fs[off + a]
        if not oracle_any(kind, eu, ev, size, K, root, row, m, nv, ws[15], ws[16], ws[17], ws[18],
                       ws[19], ws[20], ws[21], ws[22], ws[23]):
            return -np.inf
        return masked_dot(eu, m) + masked_dot(ev, nv)
    # CHECK: the best structure using only the parts that are on, each worth
    # more than all the higher-order scores together, must use all of them
    # (structures whose parts come in subsets, e.g. a head automaton's
    # modifiers, could otherwise prefer fewer of them).
    big = 1.0
    for a in range(n_v):
        ev[a] = fixed_v[a] + fs[off + a]
        if np.isfinite(ev[a]):
            big += abs(ev[a])
    big *= 2.0
    for i in range(n):
        eu[i] = big if x[i] == 1.0 and fixed_u[i] > -np.inf else -np.inf
    if not oracle_any(kind, eu, ev, size, K, root, row, m, nv, ws[15], ws[16], ws[17], ws[18],
                   ws[19], ws[20], ws[21], ws[22], ws[23]):
        return -np.inf
    for i in range(n):
        if m[i] != x[i]:
            return -np.inf
    val = masked_dot(fixed_u, m) + masked_dot(ev, nv)
    if not np.isfinite(val):
        return -np.inf
    for a in range(n_v):
        add[off + a] = nv[a]
    # The fixed unary scores count in the assignment's score, as in the primal.
    return val


@njit(inline="always")
def factor_op(op, kind, ctx, f, off, x, n, fs, add, inv_rho, buf):
    """The table of factor kinds: one line per kind (see the module docstring).

    Each kind gets only the data it reads.
    """
    if kind == XOR:
        return xor_factor(op, off, x, n, fs, add, inv_rho, buf)
    if kind == AT_MOST_ONE:
        return at_most_one_factor(op, off, x, n, fs, add, inv_rho, buf)
    if kind == OR:
        return or_factor(op, off, x, n, fs, add, inv_rho, buf)
    if kind == PAIR:
        return pair_factor(op, off, x, n, fs, add, inv_rho, buf)
    if kind == DENSE:
        return dense_factor(op, ctx.dense, ctx.work.dense, f, ctx.graph.f_aux[f], off, x, n, fs,
                            add, inv_rho)
    return structure_op(op, ctx, ctx.graph.f_aux[f], off, x, n, fs, add, inv_rho)


# -- structure factors, when the graph has any ----------------------------------
#
# A graph without structure factors compiles without their machinery (the
# compiled active set and every oracle, most of the engine's compile time):
# its GraphData holds ``structs=None``, and these functions, whose compiled
# versions are chosen by that field's type, then do nothing.


def _has_structures(ctx):
    return not isinstance(ctx.field_dict["structs"], types.NoneType)


def structure_op(op, ctx, j, off, x, n, fs, add, inv_rho):
    """``structure_factor`` on structure factor ``j`` of the context."""
    if ctx.structs is None:
        return 0.0
    return structure_factor(op, ctx.structs, ctx.work.structs, j, off, x, n, fs, add, inv_rho)


@overload(structure_op, jit_options={"cache": True})
def _structure_op(op, ctx, j, off, x, n, fs, add, inv_rho):
    if _has_structures(ctx):
        def impl(op, ctx, j, off, x, n, fs, add, inv_rho):
            return structure_factor(op, ctx.structs, ctx.work.structs, j, off, x, n, fs, add,
                                    inv_rho)
    else:
        def impl(op, ctx, j, off, x, n, fs, add, inv_rho):
            return 0.0
    return impl


def structure_status(ctx):
    """1 once a structure factor found no structure of finite score, else 0."""
    return 0 if ctx.structs is None else ctx.work.structs.status[0]


@overload(structure_status, jit_options={"cache": True})
def _structure_status(ctx):
    if _has_structures(ctx):
        return lambda ctx: ctx.work.structs.status[0]
    return lambda ctx: 0


def structure_work(structs):
    """The structure factors' workspaces (None without structure factors)."""
    return None if structs is None else _new_structure_work(structs)


@overload(structure_work, jit_options={"cache": True})
def _structure_work(structs):
    if isinstance(structs, types.NoneType):
        return lambda structs: None
    return lambda structs: _new_structure_work(structs)


def reset_structure_work(work):
    """Forget the supports of a :class:`StructureWork` (every factor starts from its MAP)."""
    if work is not None:
        _reset_structure_work(work)


@overload(reset_structure_work, jit_options={"cache": True})
def _reset_structure_work_overload(work):
    if isinstance(work, types.NoneType):
        return lambda work: None
    return lambda work: _reset_structure_work(work)


@njit
def _reset_structure_work(work):
    # What a fresh workspace holds: no support, no failure. The arrays
    # beyond each support are never read before they are written, so the
    # solves that follow are those of a fresh workspace, to the last bit.
    for j in range(work.struct_k.shape[0]):
        work.struct_k[j] = 0
    work.status[0] = 0


def structure_primal(ctx, q, add):
    """The structure factors' fixed part scores at the copies ``q`` and extras ``add``."""
    return 0.0 if ctx.structs is None else _structure_primal_terms(ctx.graph, ctx.structs, q, add)


@overload(structure_primal, jit_options={"cache": True})
def _structure_primal(ctx, q, add):
    if _has_structures(ctx):
        return lambda ctx, q, add: _structure_primal_terms(ctx.graph, ctx.structs, q, add)
    return lambda ctx, q, add: 0.0


@njit
def _structure_primal_terms(g, st, q, add):
    primal = 0.0
    for f in range(g.f_type.shape[0]):
        if g.f_type[f] == STRUCT:
            j = g.f_aux[f]
            s0 = g.f_start[f]
            fixed_u = st.eta_u[st.u_ptr[j]:st.u_ptr[j + 1]]
            for i in range(fixed_u.shape[0]):
                if q[s0 + i] != 0.0:
                    primal += fixed_u[i] * q[s0 + i]
            off = g.f_score[f]
            for a in range(st.v_ptr[j + 1] - st.v_ptr[j]):
                if add[off + a] != 0.0:
                    primal += st.eta_v[st.v_ptr[j] + a] * add[off + a]
    return primal


@njit
def _new_structure_work(structs):
    n_s = structs.kind.shape[0]
    struct_ws = List()
    struct_u = List()
    struct_v = List()
    for j in range(n_s):
        n_u = structs.u_ptr[j + 1] - structs.u_ptr[j]
        n_v = structs.v_ptr[j + 1] - structs.v_ptr[j]
        struct_ws.append(active_set_workspace(structs.kind[j], structs.n[j], n_u, n_v))
        struct_u.append(np.empty(n_u))
        struct_v.append(np.empty(n_v))
    return StructureWork(struct_ws, struct_u, struct_v, np.zeros(n_s, dtype=np.int64),
                         np.zeros(1, dtype=np.int64))


# -- the solver ---------------------------------------------------------------


class GraphArrays(NamedTuple):
    """Factors, their slots and the variables' slots (see the module docstring)."""

    f_type: np.ndarray
    f_start: np.ndarray
    slot_var: np.ndarray
    slot_neg: np.ndarray
    f_score: np.ndarray
    f_aux: np.ndarray
    v_ptr: np.ndarray
    v_slots: np.ndarray
    slot_factor: np.ndarray
    deg: np.ndarray


class DenseTables(NamedTuple):
    """The dense factors' configuration tables, as sparse "on" lists."""

    tab_cfg: np.ndarray
    tab_nc: np.ndarray
    cfg_ptr: np.ndarray
    cfg_on: np.ndarray
    cfg_ok: np.ndarray


class StructureTable(NamedTuple):
    """Per structure factor: its compiled oracle, fixed scores and active-set limits."""

    kind: np.ndarray
    n: np.ndarray
    K: np.ndarray
    single_root: np.ndarray
    eta_u: np.ndarray
    u_ptr: np.ndarray
    eta_v: np.ndarray
    v_ptr: np.ndarray
    max_iter: np.ndarray
    tol: np.ndarray


class SolverState(NamedTuple):
    """Views of the solver's flat state array (see :func:`split_state`)."""

    u: np.ndarray
    q: np.ndarray
    lam: np.ndarray
    add: np.ndarray


# The solver's options travel as one float64 array (numba types an array
# argument much faster than a tuple): these are the positions.
OPT_ETA = 0
OPT_ADAPTIVE = 1
OPT_MAX_ITER = 2
OPT_TOL = 3
OPT_LOWER_BOUND = 4
OPT_GAP_TOL = 5
OPT_QUADRATIC = 6
# Nonzero: check first that every score is finite and at most LARGE_SCORE in
# magnitude (else return status 2 at once, the state untouched), and start
# from the initial state (u = 0.5, the rest 0) instead of ``flat_state``'s
# contents. One compiled pass instead of numpy's checks and allocations per
# call: they cost more than solving a tiny graph.
OPT_CHECK_SCORES = 7
OPT_FRESH = 8
N_OPTIONS = 9
# Scores above this magnitude are scaled by the caller (see ``_ad3``).
LARGE_SCORE = 2.0 ** 60


@njit
def split_state(state, n_vars, n_slots):
    """The flat state ``[u | q | lam | add]`` as views: marginals, copies, multipliers, extras."""
    a = n_vars
    b = a + n_slots
    c = b + n_slots
    return SolverState(state[:a], state[a:b], state[b:c], state[c:])


class DenseWork(NamedTuple):
    """The dense factors' active sets (support, KKT inverse) and work arrays."""

    f_dense: np.ndarray
    dS: np.ndarray
    dk: np.ndarray
    dB: np.ndarray
    theta: np.ndarray
    r: np.ndarray
    x: np.ndarray
    rhs: np.ndarray
    res: np.ndarray


class StructureWork(NamedTuple):
    """The structure factors' active-set workspaces, support sizes and scores."""

    struct_ws: object
    struct_u: object
    struct_v: object
    struct_k: np.ndarray
    status: np.ndarray


class Work(NamedTuple):
    srt: np.ndarray
    z: np.ndarray
    dense: DenseWork
    structs: StructureWork


@structref.register
class ContextType(types.StructRef):
    """numba type of :class:`Context` and :class:`GraphData`."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


@structref.register
class GraphDataType(types.StructRef):
    """numba type of :class:`GraphData`."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class Context(structref.StructRefProxy):
    """What the factor kinds read: ``graph``, ``dense``, ``structs`` and ``work``.

    A reference (one pointer) rather than a tuple: numba copies a tuple of
    arrays into every call and takes a reference to each array, which cost
    more than the closed-form factors themselves.
    """


class GraphData(structref.StructRefProxy):
    """A compiled graph's ``graph``, ``dense`` and ``structs`` behind one reference.

    Built once per graph (``FactorGraph.compile``): the solver's entry points
    take it as one argument, so that a call unpacks one object instead of
    some thirty arrays.
    """


@structref.register
class WorkspaceType(types.StructRef):
    """numba type of :class:`Workspace`."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class Workspace(structref.StructRefProxy):
    """A compiled graph's structure-factor workspaces (``structs``, a :class:`StructureWork`).

    The active sets' arrays (about 25 per structure factor) cost more to
    allocate than a few AD3 iterations on graphs of many small structure
    factors (second-order parsing), so they are kept from one solve to the
    next (:func:`new_workspace`; ``_ad3`` keeps a pool per compiled graph,
    one workspace per concurrent solve). Every solve starts them afresh
    (:func:`reset_structure_work`): no support is carried from one call to
    the next, only the memory.
    """

    @property
    def structs(self):
        return _workspace_structs(self)


@njit
def _workspace_structs(workspace):
    return workspace.structs


structref.define_proxy(Context, ContextType, ["graph", "dense", "structs", "work"])
structref.define_proxy(GraphData, GraphDataType, ["graph", "dense", "structs"])
structref.define_proxy(Workspace, WorkspaceType, ["structs"])


@njit
def new_workspace(data):
    """A :class:`Workspace` for the solves on ``data`` (a :class:`GraphData`)."""
    return Workspace(structure_work(data.structs))


@njit
def _work(graph, dense, structs, add):
    """Work arrays of one solve; the dense factors' active sets warm-started from ``add``."""
    return _work_with(graph, dense, add, structure_work(structs))


@njit
def _work_reused(graph, dense, add, workspace):
    """:func:`_work` with the structure factors' workspaces of ``workspace``, reset."""
    reset_structure_work(workspace.structs)
    return _work_with(graph, dense, add, workspace.structs)


@njit
def _work_with(graph, dense, add, struct_work):
    """:func:`_work` with the structure factors' workspaces ``struct_work`` (reset)."""
    f_type, f_start = graph.f_type, graph.f_start
    n_f = f_type.shape[0]
    max_n = 1
    max_dense = 1
    for f in range(n_f):
        max_n = max(max_n, f_start[f + 1] - f_start[f])
        if f_type[f] == DENSE:
            max_dense = max(max_dense, f_start[f + 1] - f_start[f])
    max_nc = 1
    for t in range(dense.tab_nc.shape[0]):
        max_nc = max(max_nc, dense.tab_nc[t])
    # A dense factor's support: at most arity + 1 affinely independent
    # configurations (the dense factors' arity, not a structure factor's).
    cap = max_dense + 1
    f_dense = np.full(n_f, -1, dtype=np.int64)
    n_dense = 0
    for f in range(n_f):
        if f_type[f] == DENSE:
            f_dense[f] = n_dense
            n_dense += 1
    dS = np.zeros((n_dense, cap), dtype=np.int64)
    dk = np.zeros(n_dense, dtype=np.int64)
    dB = np.zeros((n_dense, cap + 1, cap + 1))
    x = np.empty(cap + 1)
    for f in range(n_f):
        d = f_dense[f]
        if d >= 0:
            t = graph.f_aux[f]
            off = graph.f_score[f]
            dk[d] = dense_rebuild(add[off:off + dense.tab_nc[t]], dense.tab_nc[t], dense.cfg_ptr,
                                  dense.cfg_on, dense.tab_cfg[t], dS[d], dB[d], x)
    dense_work = DenseWork(f_dense, dS, dk, dB, np.empty(max_nc), np.empty(max_n), x,
                           np.empty(cap + 1), np.empty(cap + 1))
    return Work(np.empty(max_n), np.empty(max_n), dense_work, struct_work)


@njit
def local_step(ctx, share, u, lam, inv_rho, fs, q, add, factor_active, var_active, refresh):
    """Solve the local QP of every (active) factor; update ``q``, ``add``.

    Marks the variables whose copies moved, or are fractional, as active
    (AD3's caching: a factor whose variables are all inactive is skipped
    until ``refresh``).
    """
    # The arrays out of the nested tuples once: reading a tuple field takes a
    # reference to every array inside it.
    g = ctx.graph
    f_type, f_start, f_score, slot_var, slot_neg = (g.f_type, g.f_start, g.f_score, g.slot_var,
                                                    g.slot_neg)
    z = ctx.work.z
    buf = ctx.work.srt
    for f in range(f_type.shape[0]):
        if not refresh and not factor_active[f]:
            continue
        factor_active[f] = False
        s0 = f_start[f]
        n = f_start[f + 1] - s0
        for i in range(n):
            s = s0 + i
            v = slot_var[s]
            zi = u[v] + (share[v] + lam[s]) * inv_rho
            if slot_neg[s]:
                zi = 1.0 - zi
            z[i] = zi
        factor_op(QP, f_type[f], ctx, f, f_score[f], z, n, fs, add, inv_rho, buf)
        for i in range(n):
            s = s0 + i
            val = z[i]
            if slot_neg[s]:
                val = 1.0 - val
            v = slot_var[s]
            if (refresh or abs(val - q[s]) > 1e-12 or abs(val - u[v]) > 1e-12
                    or (val > 1e-12 and val < 1.0 - 1e-12)):
                var_active[v] = True
            q[s] = val


@njit
def consensus(graph, fixed, theta, state, rho, var_active, factor_active, refresh, quad):
    """Average the copies into ``u``, update the multipliers; the residuals.

    With the quadratic ``quad > 0`` (LP-SparseMAP), ``u`` is the maximiser of
    ``-quad/2 u^2 - u sum(lam) - rho/2 sum((q - u)^2)`` over [0, 1] instead of
    the average. Returns ``(primal_residual, dual_residual)`` as root mean
    squares over the slots (AD3's definitions: the dual residual weighs each
    variable's change by its degree). Fixed variables (``fixed >= 0``) keep
    their value; variables in no factor take their best value.
    """
    deg, v_ptr, v_slots, slot_factor = graph.deg, graph.v_ptr, graph.v_slots, graph.slot_factor
    u, q, lam = state.u, state.q, state.lam
    n_slots = q.shape[0]
    primal = 0.0
    dual = 0.0
    for i in range(deg.shape[0]):
        d = deg[i]
        if d == 0:
            if fixed[i] >= 0:
                u[i] = float(fixed[i])
            elif quad > 0.0:
                u[i] = _clip01(theta[i] / quad)
            else:
                u[i] = 1.0 if theta[i] > 0.0 else 0.0
            continue
        if not refresh and not var_active[i]:
            continue
        var_active[i] = False
        prev = u[i]
        if fixed[i] >= 0:
            new = float(fixed[i])
        elif quad > 0.0:
            tot = 0.0
            tot_lam = 0.0
            for e in range(v_ptr[i], v_ptr[i + 1]):
                tot += q[v_slots[e]]
                tot_lam += lam[v_slots[e]]
            new = _clip01((rho * tot - tot_lam) / (quad + rho * d))
        else:
            tot = 0.0
            for e in range(v_ptr[i], v_ptr[i + 1]):
                tot += q[v_slots[e]]
            new = tot / d
        u[i] = new
        diff = new - prev
        dual += d * diff * diff
        for e in range(v_ptr[i], v_ptr[i + 1]):
            s = v_slots[e]
            pen = q[s] - new
            lam[s] -= TAU * rho * pen
            primal += pen * pen
            factor_active[slot_factor[s]] = True
    if n_slots == 0:
        return 0.0, 0.0
    return np.sqrt(primal / n_slots), np.sqrt(dual / n_slots)


@njit
def adapt_eta(eta, primal_res, dual_res):
    """AD3's step-size rule: balance the residuals by factors of 2."""
    if primal_res > 100.0 * dual_res:
        if eta < 100.0:
            return eta * 2.0, True
    elif dual_res > 10.0 * primal_res:
        if eta > 1e-3:
            return eta / 2.0, True
    return eta, False


@njit
def _box_quadratic_max(s, quad):
    """``max over u in [0, 1] of s u - quad/2 u^2``."""
    if quad == 0.0:
        return max(0.0, s)
    best = _clip01(s / quad)
    return s * best - 0.5 * quad * best * best


@njit
def dual_value(ctx, theta, lam, fs, fixed, quad):
    """The Lagrangian dual ``g(lam)``, an upper bound on the LP (and the MAP).

    With ``quad > 0``, of the LP-SparseMAP objective: each variable's term
    is the best of ``-u sum(lam) - quad/2 u^2`` over [0, 1].
    """
    g = ctx.graph
    deg = g.deg
    n_vars = deg.shape[0]
    lam_sum = np.zeros(n_vars)
    f_type, f_start, f_score, slot_var, slot_neg = (g.f_type, g.f_start, g.f_score, g.slot_var,
                                                    g.slot_neg)
    w = ctx.work.z
    buf = ctx.work.srt
    scratch = np.empty(fs.shape[0])
    total = 0.0
    for f in range(f_type.shape[0]):
        s0 = f_start[f]
        n = f_start[f + 1] - s0
        const = 0.0
        for i in range(n):
            s = s0 + i
            v = slot_var[s]
            lam_sum[v] += lam[s]
            wi = theta[v] / deg[v] + lam[s]
            # literal l = 1 - q: w q = w - w l
            if slot_neg[s]:
                const += wi
                wi = -wi
            w[i] = wi
        total += const + factor_op(BEST, f_type[f], ctx, f, f_score[f], w, n, fs, scratch, 1.0,
                                   buf)
    for i in range(n_vars):
        if deg[i] == 0:
            if fixed[i] >= 0:
                total += theta[i] * fixed[i] - 0.5 * quad * fixed[i] * fixed[i]
            else:
                total += _box_quadratic_max(theta[i], quad)
        elif fixed[i] >= 0:
            total -= fixed[i] * lam_sum[i] + 0.5 * quad * fixed[i] * fixed[i]
        else:
            total += _box_quadratic_max(-lam_sum[i], quad)
    return total


@njit
def primal_value(ctx, theta, fs, state, quad):
    """``theta . u + fs . add - quad/2 ||u||^2`` plus the structure factors' fixed part scores."""
    u, q, add = state.u, state.q, state.add
    primal = 0.0
    for i in range(u.shape[0]):
        primal += theta[i] * u[i]
        if quad > 0.0:
            primal -= 0.5 * quad * u[i] * u[i]
    for i in range(add.shape[0]):
        primal += fs[i] * add[i]
    return primal + structure_primal(ctx, q, add)


@njit
def _scores_in_range(a):
    """Whether every entry is finite and at most ``LARGE_SCORE`` in magnitude."""
    for i in range(a.shape[0]):
        if not abs(a[i]) <= LARGE_SCORE:  # also False for NaN
            return False
    return True


@njit
def ad3_solve(data, theta, fs, fixed, flat_state, opts, workspace):
    """The AD3 loop from ``flat_state`` (updated in place), every factor kind compiled.

    ``data`` is the graph's :class:`GraphData`, ``workspace`` a
    :class:`Workspace` of it (:func:`new_workspace`; not shared with a
    concurrent solve), ``fixed`` the value each
    variable is fixed to (-1: free; empty: none fixed), ``flat_state`` the
    state of :func:`split_state` and ``opts`` the options at the positions
    ``OPT_*``. Every ``DUAL_EVERY`` iterations the dual value is computed
    when the lower bound is finite (branch-and-bound: the loop stops once it
    falls below, the node cannot beat the incumbent) or the gap tolerance is
    positive (converged when within ``gap_tol``, relative, of the primal).
    Returns ``(n_iter, converged, eta, primal, dual, primal_residual,
    dual_residual, integral, status)``; status 1: a structure factor has no
    structure of finite score; 2 (with ``OPT_CHECK_SCORES``): a score is not
    finite or above ``LARGE_SCORE`` in magnitude, nothing solved.
    """
    graph = data.graph
    n_vars = graph.deg.shape[0]
    if opts[OPT_CHECK_SCORES] != 0.0:
        if not (_scores_in_range(theta) and _scores_in_range(fs)):
            return 0, False, opts[OPT_ETA], np.nan, np.nan, np.inf, np.inf, False, 2
    if opts[OPT_FRESH] != 0.0:
        for i in range(flat_state.shape[0]):
            flat_state[i] = 0.5 if i < n_vars else 0.0
    state = split_state(flat_state, n_vars, graph.slot_var.shape[0])
    u, q, lam, add = state.u, state.q, state.lam, state.add
    if fixed.shape[0] == 0:
        fixed = np.full(n_vars, -1, dtype=np.int64)
    ctx = Context(graph, data.dense, data.structs,
                  _work_reused(graph, data.dense, add, workspace))
    deg = graph.deg
    eta = opts[OPT_ETA]
    adaptive = opts[OPT_ADAPTIVE] != 0.0
    max_iter = int(opts[OPT_MAX_ITER])
    tol = opts[OPT_TOL]
    lower_bound = opts[OPT_LOWER_BOUND]
    gap_tol = opts[OPT_GAP_TOL]
    quad = opts[OPT_QUADRATIC]
    share = np.empty(n_vars)
    for i in range(n_vars):
        share[i] = theta[i] / deg[i] if deg[i] > 0 else 0.0
    factor_active = np.ones(graph.f_type.shape[0], dtype=np.bool_)
    var_active = np.ones(n_vars, dtype=np.bool_)
    refresh = True
    converged = False
    primal_res = np.inf
    dual_res = np.inf
    t = 0
    while t < max_iter:
        rho = 2.0 * eta
        local_step(ctx, share, u, lam, 1.0 / rho, fs, q, add, factor_active, var_active,
                   refresh)
        status = structure_status(ctx)
        if status != 0:
            return t, False, eta, np.nan, np.nan, primal_res, dual_res, False, status
        primal_res, dual_res = consensus(graph, fixed, theta, state, rho, var_active,
                                         factor_active, refresh, quad)
        t += 1
        if primal_res < tol and dual_res < tol:
            converged = True
            break
        if (lower_bound > -np.inf or gap_tol > 0.0) and t % DUAL_EVERY == 0:
            bound = dual_value(ctx, theta, lam, fs, fixed, quad)
            if bound < lower_bound:
                break
            if gap_tol > 0.0:
                primal = primal_value(ctx, theta, fs, state, quad)
                if abs(bound - primal) <= gap_tol * max(1.0, abs(bound)):
                    converged = True
                    break
        # AD3's caching skips factors whose variables did not move; with the
        # quadratic a settled variable still moves with its multipliers.
        refresh = t % DUAL_EVERY == 0 or quad > 0.0
        if adaptive and (t - 1) % ADAPT_EVERY == 0:
            eta, changed = adapt_eta(eta, primal_res, dual_res)
            if changed:
                refresh = True
    integral = True
    for i in range(n_vars):
        if min(abs(u[i]), abs(1.0 - u[i])) > INTEGRAL_TOL:
            integral = False
            break
    return (t, converged, eta, primal_value(ctx, theta, fs, state, quad),
            dual_value(ctx, theta, lam, fs, fixed, quad), primal_res, dual_res, integral, 0)


@njit
def evaluate_assignment(data, x, fs, add, workspace):
    """Check a 0/1 assignment ``x`` against every factor.

    Writes the additional marginals of the scored factors into ``add`` (for
    dense factors the best configuration matching ``x``) and returns
    ``(feasible, score of the additional marginals and of the structure
    factors' fixed parts, first violated factor)``. ``workspace`` as in
    :func:`ad3_solve`.
    """
    graph = data.graph
    ctx = Context(graph, data.dense, data.structs,
                  _work_reused(graph, data.dense, add, workspace))
    z = ctx.work.z
    buf = ctx.work.srt
    score = 0.0
    for f in range(graph.f_type.shape[0]):
        s0 = graph.f_start[f]
        n = graph.f_start[f + 1] - s0
        for i in range(n):
            val = float(x[graph.slot_var[s0 + i]])
            z[i] = 1.0 - val if graph.slot_neg[s0 + i] else val
        val = factor_op(CHECK, graph.f_type[f], ctx, f, graph.f_score[f], z, n, fs, add, 1.0,
                        buf)
        if val == -np.inf:
            return False, score, f
        score += val
    return True, score, -1
