"""Numba kernels of AD3 (Martins et al. 2015) on a compiled factor graph.

The graph is flat arrays (see ``_factor_graph.CompiledGraph``): factor ``f``
owns the slots ``f_start[f]:f_start[f + 1]``; slot ``s`` is a copy of the
binary variable ``slot_var[s]``, negated when ``slot_neg[s]`` (OR factors
only). Scored factors read their scores at ``f_score[f]`` in the flat
``factor_scores`` and write their additional marginals at the same offsets.
Dense factors point to a configuration table: ``tab_cfg[t]`` is the first
configuration of table ``t`` in the sparse configuration arrays (the "on"
slots of configuration ``c`` are ``cfg_on[cfg_ptr[c]:cfg_ptr[c + 1]]``, as
positions within the factor) and ``tab_gram[t]`` the start of its
configurations' Gram matrix in ``gram``.

The penalty of the augmented Lagrangian is ``rho = 2 * eta`` (AD3's
convention). The local subproblem of a factor is the projection

    min_q  1/2 ||q - z||^2 - (s / rho) . q_add      over the factor's polytope,

with ``z_s = u[v] + (theta[v] / deg[v] + lam[s]) / rho`` for its slots.
Structure factors (``f_type == STRUCT``) are solved by the Python caller.
"""

import numpy as np

from ..utils._numba import njit
from ._sparsemap_fast import bordered_inverse_delete

XOR = 0
AT_MOST_ONE = 1
OR = 2
PAIR = 3
DENSE = 4
STRUCT = 5

_DEP_TOL = 1e-9
# Step of the multiplier update, relative to the penalty: ADMM converges for
# any value in (0, (1 + sqrt 5) / 2); 1.5 takes about half the iterations of 1
# on the fractional LPs of argument mining.
TAU = 1.5
# Iterations between step-size adaptations (AD3 uses 10; every 50 iterations
# took about 30% fewer iterations on fractional argument-mining LPs).
ADAPT_EVERY = 50


@njit
def _clip01(x):
    if x < 0.0:
        return 0.0
    if x > 1.0:
        return 1.0
    return x


@njit
def _project_simplex(x, n, srt):
    """Project ``x[:n]`` onto the probability simplex in place (sort-based)."""
    for i in range(n):
        # insertion sort, descending (n is small)
        v = x[i]
        j = i
        while j > 0 and srt[j - 1] < v:
            srt[j] = srt[j - 1]
            j -= 1
        srt[j] = v
    cum = 0.0
    tau = 0.0
    for i in range(n):
        cum += srt[i]
        t = (cum - 1.0) / (i + 1)
        if srt[i] - t > 0.0:
            tau = t
    for i in range(n):
        v = x[i] - tau
        x[i] = max(0.0, v)


@njit
def _kkt_insert(G, g0, nc, S, k, B, c, w):
    """Add configuration ``c`` to the support ``S[:k]`` and border the KKT inverse.

    ``B`` is the inverse of ``[[0, 1^T], [1, G_SS]]`` (row 0: the multiplier).
    The Schur complement of the new row is the squared distance from ``c``
    to the affine hull of the support; when it vanishes nothing changes, the
    affine coefficients of ``c`` are left in ``w[1:k + 1]`` and False is
    returned.
    """
    gcc = G[g0 + c * nc + c]
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
            acc += B[r, j + 1] * G[g0 + S[j] * nc + c]
        w[r] = acc
    schur = gcc - w[0]
    for j in range(k):
        schur -= G[g0 + S[j] * nc + c] * w[j + 1]
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
def dense_rebuild(p, nc, G, g0, S, B, w):
    """Support and KKT inverse from a warm-start distribution ``p`` (dependent members dropped)."""
    k = 0
    for c in range(nc):
        if p[c] > 0.0:
            if _kkt_insert(G, g0, nc, S, k, B, c, w):
                k += 1
            else:
                p[c] = 0.0
    return k


@njit
def dense_qp(theta, p, nc, G, g0, cfg_ptr, cfg_on, c0, r, S, k, B, x, rhs, res, max_iter):
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
        _kkt_insert(G, g0, nc, S, 0, B, best, x)
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
            base = g0 + S[i] * nc
            for j in range(k):
                acc -= G[base + S[j]] * x[j + 1]
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
        while not _kkt_insert(G, g0, nc, S, k, B, best, x):
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


@njit
def solve_local(f_type, f_start, slot_var, slot_neg, f_score, f_table, tab_cfg, tab_nc,
                tab_gram, cfg_ptr, cfg_on, cfg_ok, gram, share, u, lam, rho, factor_scores,
                q, add, factor_active, var_active, refresh, f_dense, dS, dk, dB, ws_z, ws_s,
                ws_theta, ws_r, ws_x, ws_rhs, ws_res):
    """Solve the local QP of every (active) compiled factor; update ``q``, ``add``.

    Marks the variables whose copies moved, or are fractional, as active
    (AD3's caching: a factor whose variables are all inactive is skipped
    until ``refresh``).
    """
    n_f = f_type.shape[0]
    inv_rho = 1.0 / rho
    for f in range(n_f):
        kind = f_type[f]
        if kind == STRUCT:
            continue
        if not refresh and not factor_active[f]:
            continue
        factor_active[f] = False
        s0 = f_start[f]
        n = f_start[f + 1] - s0
        for i in range(n):
            s = s0 + i
            v = slot_var[s]
            z = u[v] + (share[v] + lam[s]) * inv_rho
            if slot_neg[s]:
                z = 1.0 - z
            ws_z[i] = z
        if kind == XOR:
            _project_simplex(ws_z, n, ws_s)
        elif kind == AT_MOST_ONE or kind == OR:
            tot = 0.0
            for i in range(n):
                ws_z[i] = _clip01(ws_z[i])
                tot += ws_z[i]
            if (kind == AT_MOST_ONE and tot > 1.0) or (kind == OR and tot < 1.0):
                for i in range(n):
                    v = slot_var[s0 + i]
                    z = u[v] + (share[v] + lam[s0 + i]) * inv_rho
                    if slot_neg[s0 + i]:
                        z = 1.0 - z
                    ws_z[i] = z
                _project_simplex(ws_z, n, ws_s)
        elif kind == PAIR:
            off = f_score[f]
            x, y, m = pair_qp(ws_z[0], ws_z[1], factor_scores[off] * inv_rho)
            ws_z[0] = x
            ws_z[1] = y
            add[off] = m
        else:  # DENSE
            off = f_score[f]
            t = f_table[f]
            nc = tab_nc[t]
            c0 = tab_cfg[t]
            for c in range(nc):
                if not cfg_ok[c0 + c]:
                    ws_theta[c] = -np.inf
                    continue
                th = factor_scores[off + c] * inv_rho
                for e in range(cfg_ptr[c0 + c], cfg_ptr[c0 + c + 1]):
                    th += ws_z[cfg_on[e]]
                ws_theta[c] = th
            d = f_dense[f]
            r = ws_r[:n]
            dk[d] = dense_qp(ws_theta, add[off:off + nc], nc, gram, tab_gram[t], cfg_ptr,
                             cfg_on, c0, r, dS[d], dk[d], dB[d], ws_x, ws_rhs, ws_res,
                             10 * nc + 10)
            for i in range(n):
                ws_z[i] = r[i]
        for i in range(n):
            s = s0 + i
            val = ws_z[i]
            if slot_neg[s]:
                val = 1.0 - val
            v = slot_var[s]
            if (refresh or abs(val - q[s]) > 1e-12 or abs(val - u[v]) > 1e-12
                    or (val > 1e-12 and val < 1.0 - 1e-12)):
                var_active[v] = True
            q[s] = val


@njit
def consensus(v_ptr, v_slots, slot_factor, deg, fixed, theta, q, lam, u, rho, tau,
              var_active, factor_active, refresh):
    """Average the copies into ``u``, update the multipliers; the residuals.

    Returns ``(primal_residual, dual_residual)`` as root mean squares over the
    slots (AD3's definitions). Fixed variables (``fixed >= 0``) keep their
    value; variables in no factor take their best value.
    """
    n_vars = deg.shape[0]
    n_slots = q.shape[0]
    primal = 0.0
    dual = 0.0
    for i in range(n_vars):
        d = deg[i]
        if d == 0:
            if fixed[i] >= 0:
                u[i] = float(fixed[i])
            else:
                u[i] = 1.0 if theta[i] > 0.0 else 0.0
            continue
        if not refresh and not var_active[i]:
            continue
        var_active[i] = False
        prev = u[i]
        if fixed[i] >= 0:
            new = float(fixed[i])
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
            lam[s] -= tau * rho * pen
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
def dense_workspace(f_type, f_start, f_score, f_table, tab_nc, tab_gram, gram, add):
    """Per dense factor active-set state (from the warm start ``add``), and work arrays."""
    n_f = f_type.shape[0]
    max_n = 1
    for f in range(n_f):
        max_n = max(max_n, f_start[f + 1] - f_start[f])
    max_nc = 1
    for t in range(tab_nc.shape[0]):
        max_nc = max(max_nc, tab_nc[t])
    cap = max_n + 1  # at most n + 1 affinely independent configurations
    f_dense = np.full(n_f, -1, dtype=np.int64)
    n_dense = 0
    for f in range(n_f):
        if f_type[f] == DENSE:
            f_dense[f] = n_dense
            n_dense += 1
    dS = np.zeros((n_dense, cap), dtype=np.int64)
    dk = np.zeros(n_dense, dtype=np.int64)
    dB = np.zeros((n_dense, cap + 1, cap + 1))
    w = np.empty(cap + 1)
    for f in range(n_f):
        d = f_dense[f]
        if d >= 0:
            t = f_table[f]
            off = f_score[f]
            dk[d] = dense_rebuild(add[off:off + tab_nc[t]], tab_nc[t], gram, tab_gram[t],
                                  dS[d], dB[d], w)
    ws = (np.empty(max_n), np.empty(max_n), np.empty(max_nc), np.empty(max_n),
          np.empty(cap + 1), np.empty(cap + 1), np.empty(cap + 1))
    return f_dense, dS, dk, dB, ws


@njit
def ad3_loop(f_type, f_start, slot_var, slot_neg, f_score, f_table, tab_cfg, tab_nc,
             tab_gram, cfg_ptr, cfg_on, cfg_ok, gram, v_ptr, v_slots, slot_factor, deg, fixed,
             theta, factor_scores, q, lam, u, add, eta, adaptive, max_iter, tol,
             lower_bound, gap_tol):
    """The whole AD3 loop for graphs without structure factors.

    Updates ``q, lam, u, add`` in place. Every 50 iterations the dual value
    is computed; the loop stops early when it falls below ``lower_bound``
    (branch-and-bound: the node cannot beat the incumbent), or (converged)
    when it is within ``gap_tol`` (relative) of the primal objective.
    Returns ``(n_iter, converged, eta)``.
    """
    n_vars = deg.shape[0]
    share = np.empty(n_vars)
    for i in range(n_vars):
        share[i] = theta[i] / deg[i] if deg[i] > 0 else 0.0
    f_dense, dS, dk, dB, ws = dense_workspace(f_type, f_start, f_score, f_table, tab_nc,
                                              tab_gram, gram, add)
    factor_active = np.ones(f_type.shape[0], dtype=np.bool_)
    var_active = np.ones(n_vars, dtype=np.bool_)
    refresh = True
    converged = False
    t = 0
    while t < max_iter:
        solve_local(f_type, f_start, slot_var, slot_neg, f_score, f_table, tab_cfg, tab_nc,
                    tab_gram, cfg_ptr, cfg_on, cfg_ok, gram, share, u, lam, 2.0 * eta,
                    factor_scores, q, add, factor_active, var_active, refresh, f_dense, dS,
                    dk, dB, ws[0], ws[1], ws[2], ws[3], ws[4], ws[5], ws[6])
        primal_res, dual_res = consensus(v_ptr, v_slots, slot_factor, deg, fixed, theta, q,
                                         lam, u, 2.0 * eta, TAU, var_active, factor_active,
                                         refresh)
        t += 1
        if primal_res < tol and dual_res < tol:
            converged = True
            break
        if (lower_bound > -np.inf or gap_tol > 0.0) and t % 50 == 0:
            bound = dual_value(f_type, f_start, slot_var, slot_neg, f_score, f_table, tab_cfg,
                               tab_nc, cfg_ptr, cfg_on, cfg_ok, deg, fixed, theta, lam,
                               factor_scores, np.zeros(f_type.shape[0]))
            if bound < lower_bound:
                break
            if gap_tol > 0.0:
                primal = 0.0
                for i in range(n_vars):
                    primal += theta[i] * u[i]
                for i in range(add.shape[0]):
                    primal += factor_scores[i] * add[i]
                if abs(bound - primal) <= gap_tol * max(1.0, abs(bound)):
                    converged = True
                    break
        refresh = t % 50 == 0
        if adaptive and (t - 1) % ADAPT_EVERY == 0:
            eta, changed = adapt_eta(eta, primal_res, dual_res)
            if changed:
                refresh = True
    return t, converged, eta


@njit
def dual_value(f_type, f_start, slot_var, slot_neg, f_score, f_table, tab_cfg, tab_nc,
               cfg_ptr, cfg_on, cfg_ok, deg, fixed, theta, lam, factor_scores, struct_values):
    """The Lagrangian dual ``g(lam)``, an upper bound on the LP (and the MAP).

    ``struct_values[f]`` holds the (Python computed) maximum of each structure
    factor's linear score ``(theta / deg + lam) . q + scores . q_add``.
    """
    total = 0.0
    n_vars = deg.shape[0]
    lam_sum = np.zeros(n_vars)
    for f in range(f_type.shape[0]):
        kind = f_type[f]
        s0 = f_start[f]
        n = f_start[f + 1] - s0
        for s in range(s0, s0 + n):
            lam_sum[slot_var[s]] += lam[s]
        if kind == STRUCT:
            total += struct_values[f]
            continue
        if kind == XOR:
            best = -np.inf
            for s in range(s0, s0 + n):
                v = slot_var[s]
                best = max(best, theta[v] / deg[v] + lam[s])
            total += best
        elif kind == AT_MOST_ONE:
            best = 0.0
            for s in range(s0, s0 + n):
                v = slot_var[s]
                best = max(best, theta[v] / deg[v] + lam[s])
            total += best
        elif kind == OR:
            # literal l = q (or 1 - q when negated): score w q = w l (or w - w l)
            const = 0.0
            pos = 0.0
            best = -np.inf
            for s in range(s0, s0 + n):
                v = slot_var[s]
                w = theta[v] / deg[v] + lam[s]
                if slot_neg[s]:
                    const += w
                    w = -w
                if w > 0.0:
                    pos += w
                best = max(best, w)
            total += const + (pos if best > 0.0 else best)
        elif kind == PAIR:
            v0 = slot_var[s0]
            v1 = slot_var[s0 + 1]
            w0 = theta[v0] / deg[v0] + lam[s0]
            w1 = theta[v1] / deg[v1] + lam[s0 + 1]
            total += max(max(0.0, w0), max(w1, w0 + w1 + factor_scores[f_score[f]]))
        else:
            off = f_score[f]
            t = f_table[f]
            c0 = tab_cfg[t]
            best = -np.inf
            for c in range(tab_nc[t]):
                if not cfg_ok[c0 + c]:
                    continue
                val = factor_scores[off + c]
                for e in range(cfg_ptr[c0 + c], cfg_ptr[c0 + c + 1]):
                    s = s0 + cfg_on[e]
                    v = slot_var[s]
                    val += theta[v] / deg[v] + lam[s]
                best = max(best, val)
            total += best
    for i in range(n_vars):
        if deg[i] == 0:
            if fixed[i] >= 0:
                total += theta[i] * fixed[i]
            else:
                total += max(0.0, theta[i])
        elif fixed[i] >= 0:
            total -= fixed[i] * lam_sum[i]
        else:
            total += max(0.0, -lam_sum[i])
    return total


@njit
def evaluate_assignment(f_type, f_start, slot_var, slot_neg, f_score, f_table, tab_cfg,
                        tab_nc, cfg_ptr, cfg_on, cfg_ok, x, factor_scores, add):
    """Check a 0/1 assignment ``x`` against the compiled factors.

    Writes the additional marginals of pair and dense factors into ``add``
    (for dense factors the best configuration matching ``x``) and returns
    ``(feasible, score of the additional marginals, first violated factor)``.
    """
    score = 0.0
    for f in range(f_type.shape[0]):
        kind = f_type[f]
        if kind == STRUCT:
            continue
        s0 = f_start[f]
        n = f_start[f + 1] - s0
        if kind == XOR or kind == AT_MOST_ONE or kind == OR:
            cnt = 0
            for s in range(s0, s0 + n):
                val = x[slot_var[s]]
                if slot_neg[s]:
                    val = 1 - val
                cnt += val
            if (kind == XOR and cnt != 1) or (kind == AT_MOST_ONE and cnt > 1) or (
                    kind == OR and cnt < 1):
                return False, score, f
        elif kind == PAIR:
            off = f_score[f]
            z = x[slot_var[s0]] * x[slot_var[s0 + 1]]
            add[off] = z
            score += z * factor_scores[off]
        else:
            off = f_score[f]
            t = f_table[f]
            c0 = tab_cfg[t]
            best = -1
            tot = 0
            for s in range(s0, s0 + n):
                tot += x[slot_var[s]]
            for c in range(tab_nc[t]):
                add[off + c] = 0.0
                n_on = cfg_ptr[c0 + c + 1] - cfg_ptr[c0 + c]
                cnt = 0
                for e in range(cfg_ptr[c0 + c], cfg_ptr[c0 + c + 1]):
                    cnt += x[slot_var[s0 + cfg_on[e]]]
                if cnt == n_on and tot == n_on and cfg_ok[c0 + c]:
                    if best < 0 or factor_scores[off + c] > factor_scores[off + best]:
                        best = c
            if best < 0:
                return False, score, f
            add[off + best] = 1.0
            score += factor_scores[off + best]
    return True, score, -1
