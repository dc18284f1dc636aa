"""Numba kernels for sq-pnorm-max: forward by a 1-D root search or by projected gradient.

sq-pnorm-max solves ``argmin_{x in simplex} temperature / 2 * ||x||_q^2 - <x, z>``
for ``q`` in (1, 2] (Niculae 2018, sec. 3.4). Two forward solvers:

- :func:`sq_pnorm_max_rows` (the default): the KKT conditions reduce the
  problem to one scalar equation in the threshold, solved to machine
  precision in a handful of safeguarded Newton steps.
- :func:`sq_pnorm_max_pg_rows`: accelerated projected gradient (FISTA with
  adaptive restart and a backtracking step), the generic solver of the
  thesis. The regularizer's gradient ``x^(q-1) * ||x||_q^(2-q)`` is not
  Lipschitz near 0 when q < 2: the accepted step shrinks like the smallest
  positive coordinate to the power ``2 - q``, so rows with tiny positive
  entries (common for q near 1) need thousands of iterations.

The backward pass works on the support of the forward output only.

No validation happens here: callers pass C-contiguous float64 arrays whose
rows contain finite values or -inf (masked entries) and at least one finite
value per row.
"""

import numpy as np

from ..utils._numba import njit
from ._simplex_fast import project_simplex_row


@njit
def _qnorm(x, q):
    """||x||_q for x >= 0."""
    s = 0.0
    for j in range(x.shape[0]):
        if x[j] > 0.0:
            s += x[j] ** q
    return s ** (1.0 / q)


@njit
def kkt_residual(x, z, q, temperature):
    """Largest violation of the KKT conditions of the row problem, in score units.

    With ``g = temperature * grad Omega(x) - z``, the solution has ``g == -tau``
    on the support and ``g >= -tau`` off it; ``tau`` is estimated by the mean
    over the support. Masked entries (``z == -inf``) are skipped.
    """
    scale = _qnorm(x, q) ** (2.0 - q)
    total = 0.0
    k = 0
    for j in range(x.shape[0]):
        if x[j] > 0.0:
            total += temperature * scale * x[j] ** (q - 1.0) - z[j]
            k += 1
    mean = total / k
    res = 0.0
    for j in range(x.shape[0]):
        if x[j] > 0.0:
            v = abs(temperature * scale * x[j] ** (q - 1.0) - z[j] - mean)
        elif z[j] == -np.inf:
            continue
        else:
            v = mean + z[j]
        if v > res:
            res = v
    return res


@njit
def _log_h_and_slope(s, tau, q, r):
    """log h(tau) and its derivative, with h(tau) = S_r / S_(r+1)^((2-q)/q).

    ``s`` holds scores minus the row max and ``tau < 0`` is relative to the
    max; ``S_a = sum(w^a)`` with ``w = (s - tau)_+``. ``h`` is homogeneous
    of degree one in ``w``, so sums run over ``w / max(w)`` (no overflow when
    ``r = 1/(q-1)`` is large) and ``log(max(w))`` is added back.
    """
    w_max = -tau
    inv = 1.0 / w_max
    s_rm1 = 0.0
    s_r = 0.0
    s_rp1 = 0.0
    for j in range(s.shape[0]):
        w = s[j] - tau
        if w > 0.0:
            v = w * inv
            a = v ** (r - 1.0)
            s_rm1 += a
            a *= v
            s_r += a
            s_rp1 += a * v
    log_h = np.log(w_max) + np.log(s_r) - (2.0 - q) / q * np.log(s_rp1)
    slope = -r * inv * (s_rm1 / s_r - (2.0 - q) * s_r / s_rp1)
    return log_h, slope


@njit
def sq_pnorm_max_row(z, q, temperature, max_iter, tol, buf, x):
    """Solve one row into ``x``; returns (n_iter, KKT residual).

    The KKT conditions give ``x = w^r / sum(w^r)`` with ``w = (z - tau)_+``
    and ``r = 1/(q-1)``, where ``tau`` solves ``h(tau) == temperature``; any
    root gives a KKT point, so the root is unique (strict convexity). It is
    found by Newton's method on ``log h`` inside a bisection bracket, in
    coordinates relative to the row max (full precision for large scores).
    ``buf`` is scratch space of at least ``len(z)`` entries.
    """
    d = z.shape[0]
    r = 1.0 / (q - 1.0)
    log_t = np.log(temperature)
    m = -np.inf
    for j in range(d):
        if z[j] > m:
            m = z[j]
    for j in range(d):
        buf[j] = z[j] - m
    cand = buf[:d]
    hi = 0.0  # h(0) == 0 < temperature
    # With only the top entry in the support h(-t) == t; widen until h >= t.
    lo = -temperature
    phi_lo, slope_lo = _log_h_and_slope(cand, lo, q, r)
    phi_lo -= log_t
    phi_hi = -np.inf
    slope_hi = 0.0
    n_iter = 0
    while phi_lo < 0.0 and n_iter < 2000:
        hi = lo
        phi_hi = phi_lo
        slope_hi = slope_lo
        lo *= 2.0
        phi_lo, slope_lo = _log_h_and_slope(cand, lo, q, r)
        phi_lo -= log_t
        n_iter += 1
    # Every iterate stays above lo, so entries at or below lo never matter.
    c = 0
    for j in range(d):
        if buf[j] > lo:
            buf[c] = buf[j]
            c += 1
    cand = buf[:c]
    # Start Newton from the end of the bracket closer to the root (the upper
    # end can be the root itself, e.g. when the support is a single entry).
    if abs(phi_hi) < abs(phi_lo):
        tau = hi
        phi = phi_hi
        slope = slope_hi
    else:
        tau = lo
        phi = phi_lo
        slope = slope_lo
    n_iter = 0
    while n_iter < max_iter:
        n_iter += 1
        if phi == 0.0:
            break
        step = -phi / slope if slope < 0.0 else np.inf
        if abs(step) <= tol * (-tau):
            # Converged; the last step is below rounding of tau anyway.
            if lo < tau + step < hi:
                tau += step
            break
        new = tau + step
        if not (lo < new < hi):
            new = 0.5 * (lo + hi)
        if hi - lo <= tol * (-lo):
            tau = new
            break
        tau = new
        phi, slope = _log_h_and_slope(cand, tau, q, r)
        phi -= log_t
        if phi > 0.0:
            lo = tau
        else:
            hi = tau
    inv = -1.0 / tau
    total = 0.0
    for j in range(d):
        w = (z[j] - m) - tau
        if w > 0.0:
            v = (w * inv) ** r
            x[j] = v
            total += v
        else:
            x[j] = 0.0
    inv_total = 1.0 / total
    for j in range(d):
        x[j] *= inv_total
    return n_iter, kkt_residual(x, z, q, temperature)


@njit
def sq_pnorm_max_rows(z, q, temperature, max_iter, tol, out, n_iter, residual):
    """Row-wise sq-pnorm-max; per-row iteration counts and KKT residuals."""
    buf = np.empty(z.shape[1])
    for i in range(z.shape[0]):
        it, res = sq_pnorm_max_row(z[i], q, temperature, max_iter, tol, buf, out[i])
        n_iter[i] = it
        residual[i] = res


@njit
def _grad_minus_scores(x, s, q, g):
    """g = grad(||x||_q^2 / 2) - s, for any real x.

    Uses the symmetric extension ``sign(x) |x|^(q-1) ||x||_q^(2-q)`` (the
    gradient of the convex function ``||x||_q^2 / 2`` on all of R^d), because
    FISTA's extrapolated points can leave the simplex.
    """
    total = 0.0
    for j in range(x.shape[0]):
        a = abs(x[j])
        if a > 0.0:
            b = a ** (q - 1.0)
            g[j] = b if x[j] > 0.0 else -b
            total += b * a
        else:
            g[j] = 0.0
    scale = total ** ((2.0 - q) / q) if total > 0.0 else 0.0
    for j in range(x.shape[0]):
        g[j] = g[j] * scale - s[j]


@njit
def _kkt_residual_from_grad(x, g):
    """KKT residual of a simplex point ``x`` given ``g = grad f(x)``.

    Same definition as :func:`kkt_residual`: ``-tau`` is estimated by the
    mean of ``g`` over the support; the residual is the largest of
    ``|g_j + tau|`` on the support and ``-tau - g_j`` off it.
    """
    total = 0.0
    k = 0
    for j in range(x.shape[0]):
        if x[j] > 0.0:
            total += g[j]
            k += 1
    mean = total / k
    res = 0.0
    for j in range(x.shape[0]):
        v = abs(g[j] - mean) if x[j] > 0.0 else mean - g[j]
        if v > res:
            res = v
    return res


@njit
def sq_pnorm_max_pg_row(z, q, temperature, max_iter, tol, work, x):
    """Solve one row into ``x`` by accelerated projected gradient; returns (n_iter, residual).

    Works on the finite entries of ``s = (z - max(z)) / temperature``, i.e.
    on ``argmin_{x in simplex} ||x||_q^2 / 2 - <x, s>`` (same solution; the
    shift keeps full precision for large scores). FISTA steps from the
    extrapolated point ``y``: ``x+ = P(y - eta * grad f(y))`` with ``P`` the
    Euclidean projection onto the simplex. The step is accepted when
    ``2 * eta * <grad f(x+) - grad f(y), x+ - y> <= ||x+ - y||^2``, which by
    convexity implies the usual quadratic upper bound and, unlike a test on
    objective values, is not swamped by rounding near the solution;
    otherwise ``eta`` is halved. ``eta`` grows by 1.2 after every iteration
    so that it can follow the local curvature back up. The momentum is reset
    when it points against the last step (gradient restart of O'Donoghue &
    Candes, 2015). Iterations stop at the first iterate whose KKT residual
    (see :func:`_kkt_residual_from_grad`, in units of ``s``) is ``<= tol``;
    the starting point is ``P(s)`` (sparsemax, exact when q == 2).
    ``work`` is scratch space of shape (8, at least ``len(z)``); ``n_iter``
    counts projected-gradient steps (backtracking trials not included).
    """
    d = z.shape[0]
    m = -np.inf
    for j in range(d):
        if z[j] > m:
            m = z[j]
    c = 0
    inv_t = 1.0 / temperature
    for j in range(d):
        # Masked entries, and those whose shift overflows (more than
        # finfo.max below the max: probability 0), are left out; a -inf
        # score would make the gradient NaN and the backtracking endless.
        s_j = (z[j] - m) * inv_t
        if s_j != -np.inf:
            work[0, c] = s_j
            c += 1
    s = work[0, :c]
    xc = work[1, :c]
    y = work[2, :c]
    xn = work[3, :c]
    gy = work[4, :c]
    gn = work[5, :c]
    v = work[6, :c]
    pbuf = work[7, :c]
    project_simplex_row(s, 1.0, pbuf, xc)
    _grad_minus_scores(xc, s, q, gy)
    res = _kkt_residual_from_grad(xc, gy)
    for j in range(c):
        y[j] = xc[j]
    theta = 1.0
    eta = 1.0  # exact for q == 2; otherwise adapted below
    n_iter = 0
    while res > tol and n_iter < max_iter:
        n_iter += 1
        while True:
            for j in range(c):
                v[j] = y[j] - eta * gy[j]
            project_simplex_row(v, 1.0, pbuf, xn)
            _grad_minus_scores(xn, s, q, gn)
            sq_step = 0.0
            curv = 0.0
            for j in range(c):
                dj = xn[j] - y[j]
                sq_step += dj * dj
                curv += (gn[j] - gy[j]) * dj
            if 2.0 * eta * curv <= sq_step:
                break
            eta *= 0.5
        res = _kkt_residual_from_grad(xn, gn)
        # Gradient restart: drop the momentum when it opposes the step taken.
        dot = 0.0
        for j in range(c):
            dot += (y[j] - xn[j]) * (xn[j] - xc[j])
        if dot > 0.0 or res <= tol:
            theta = 1.0
            for j in range(c):
                xc[j] = xn[j]
                y[j] = xn[j]
                gy[j] = gn[j]
        else:
            theta_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * theta * theta))
            beta = (theta - 1.0) / theta_next
            theta = theta_next
            for j in range(c):
                y[j] = xn[j] + beta * (xn[j] - xc[j])
                xc[j] = xn[j]
            _grad_minus_scores(y, s, q, gy)
        eta *= 1.2
    c = 0
    for j in range(d):
        if (z[j] - m) * inv_t != -np.inf:
            x[j] = xc[c]
            c += 1
        else:
            x[j] = 0.0
    return n_iter, res


@njit
def sq_pnorm_max_pg_rows(z, q, temperature, max_iter, tol, out, n_iter, residual):
    """Row-wise sq-pnorm-max by projected gradient; per-row iteration counts and KKT residuals.

    The residuals are in units of ``z / temperature``.
    """
    work = np.empty((8, z.shape[1]))
    for i in range(z.shape[0]):
        it, res = sq_pnorm_max_pg_row(z[i], q, temperature, max_iter, tol, work, out[i])
        n_iter[i] = it
        residual[i] = res


@njit
def sq_pnorm_max_backward_rows(p, dp, q, temperature, out):
    """out = J^T dp on the support of each row of ``p``, zero elsewhere.

    Differentiating the KKT conditions on the support S gives
    ``J_SS = B^-1 - B^-1 1 1^T B^-1 / (1^T B^-1 1)`` with
    ``B = temperature * H_Omega(p)_SS``, ``H = diag(d) + u u^T`` (eq. 3.9);
    this is Proposition 3.2 restricted to S. ``B`` is solved in O(|S|) by
    Sherman-Morrison, with ``1 / d`` computed directly because ``d`` blows up
    as ``p_i -> 0`` when q < 2.
    """
    n_rows, d = p.shape
    for i in range(n_rows):
        norm = _qnorm(p[i], q)
        # 1 / d_j = p_j^(2-q) ||p||^(q-2) / (q-1); u_j = sqrt(2-q) ||p||^(1-q) p_j^(q-1)
        c_dinv = norm ** (q - 2.0) / (q - 1.0)
        c_u = np.sqrt(2.0 - q) * norm ** (1.0 - q)
        # Sherman-Morrison: (D + u u^T)^-1 v = D^-1 v - D^-1 u (u.D^-1 v) / (1 + u.D^-1 u)
        udu = 0.0
        u_dv = 0.0
        u_d1 = 0.0
        for j in range(d):
            pj = p[i, j]
            if pj > 0.0:
                dinv = c_dinv * pj ** (2.0 - q)
                u = c_u * pj ** (q - 1.0)
                udu += u * dinv * u
                u_dv += u * dinv * dp[i, j]
                u_d1 += u * dinv
        denom = 1.0 + udu
        # a = H^-1 dp, b = H^-1 1 on S (the 1/temperature is applied at the end)
        sum_a = 0.0
        sum_b = 0.0
        for j in range(d):
            pj = p[i, j]
            if pj > 0.0:
                dinv = c_dinv * pj ** (2.0 - q)
                u = c_u * pj ** (q - 1.0)
                a = dinv * dp[i, j] - dinv * u * u_dv / denom
                b = dinv - dinv * u * u_d1 / denom
                out[i, j] = a
                sum_a += a
                sum_b += b
        ratio = sum_a / sum_b
        inv_t = 1.0 / temperature
        for j in range(d):
            pj = p[i, j]
            if pj > 0.0:
                dinv = c_dinv * pj ** (2.0 - q)
                u = c_u * pj ** (q - 1.0)
                b = dinv - dinv * u * u_d1 / denom
                out[i, j] = inv_t * (out[i, j] - b * ratio)
            else:
                out[i, j] = 0.0
