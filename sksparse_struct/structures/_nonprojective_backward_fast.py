"""Numba kernel: cancellation-free backward pass of the matrix-tree marginals.

The marginals ``mu`` are the gradient of ``log Z``, so their Jacobian is the
symmetric Hessian of ``log Z`` and the vector-Jacobian product with ``t``
(the gradient w.r.t. the marginals) is the directional derivative of ``mu``
along ``t``: ``d_scores = d/de mu(scores + e t)`` at ``e = 0``.

The closed form ``O(n^3)`` backward of :mod:`._nonprojective_fast` inverts
the Laplacian and cancels in the same regime as the forward determinant
formula. Here the directional derivative is taken by forward-mode
differentiation of the subtraction-free algorithms
:func:`._nonprojective_fast.matrix_tree_marginals_rooted` (linear space,
:func:`matrix_tree_marginals_rooted_jvp`) and
:func:`._nonprojective_fast.matrix_tree_marginals_rooted_log` (log space,
:func:`matrix_tree_marginals_rooted_log_jvp`): every intermediate quantity
``x > 0`` (held as ``x`` or ``log x``) carries its *relative* tangent
``r = dx / x`` along ``t``. Both cost ``O(n^4)``, like the forward
algorithms they differentiate, against ``O(n^3)`` for the closed form, and
the log-space version has the larger constant: they are meant for the
inputs on which the closed form is not accurate.

Why this is stable: every intermediate is a polynomial with nonnegative
coefficients in the arc weights (sums, products, quotients of nonnegative
numbers) and the arc weight ``A[h, m]`` has relative tangent
``t[h, m]``. A sum ``x = sum_i x_i`` of positive terms has relative tangent
``sum_i (x_i / x) r_i``, a convex combination of the terms' ones; a product
or quotient adds or subtracts them. Hence every relative tangent is bounded
by ``O(n) max |t|`` and is computed with absolute error
``O(n eps max |t|)``, whatever the cancellation in the determinant formula.
The output ``d mu[h, m] = mu[h, m] * r_mu[h, m]`` is therefore accurate to
``O(n eps max |t|) mu[h, m]``, i.e. to relative accuracy at the scale of
each marginal, in every regime in which the marginals themselves are
computed (weights spanning any range, forbidden arcs, both root modes).
"""

import numpy as np

from ..utils._numba import njit


@njit
def _lae(x, rx, y, ry):
    """``log(e^x + e^y)`` and its relative tangent, from those of the terms."""
    if x == -np.inf:
        return y, ry
    if y == -np.inf:
        return x, rx
    if x > y:
        w = np.exp(y - x)
        return x + np.log1p(w), (rx + w * ry) / (1.0 + w)
    w = np.exp(x - y)
    return y + np.log1p(w), (ry + w * rx) / (1.0 + w)


@njit
def _gth_logdet_log_jvp(W, T):
    """``log det`` of the multi-root Laplacian on log weights ``W``.

    Returns the value and its relative tangent, ``T`` holding the relative
    tangents of the weights. Subtraction-free elimination (Grassmann, Taksar
    & Heyman 1985) differentiated in forward mode.
    """
    N = W.shape[0]
    n = N - 1
    a = np.empty((n, n))
    ra = np.zeros((n, n))
    slack = np.empty(n)
    rs = np.zeros(n)
    for j in range(n):
        slack[j] = W[0, j + 1]
        rs[j] = T[0, j + 1]
        for i in range(n):
            if i != j:
                a[i, j] = W[i + 1, j + 1]
                ra[i, j] = T[i + 1, j + 1]
            else:
                a[i, j] = -np.inf
    logdet = 0.0
    r_logdet = 0.0
    for k in range(n):
        p = slack[k]
        rp = rs[k]
        for i in range(k + 1, n):
            p, rp = _lae(p, rp, a[i, k], ra[i, k])
        if p == -np.inf:
            return -np.inf, 0.0
        logdet += p
        r_logdet += rp
        for j in range(k + 1, n):
            akj = a[k, j]
            if akj == -np.inf:
                continue
            rkj = ra[k, j]
            slack[j], rs[j] = _lae(slack[j], rs[j], slack[k] + akj - p, rs[k] + rkj - rp)
            for i in range(k + 1, n):
                if i != j:
                    a[i, j], ra[i, j] = _lae(
                        a[i, j], ra[i, j], a[i, k] + akj - p, ra[i, k] + rkj - rp
                    )
    return logdet, r_logdet


@njit
def matrix_tree_marginals_rooted_log_jvp(scores, single_root, tangent, marginals, d_marginals):
    """Marginals, and their derivative along ``tangent``, without cancellation.

    Writes the arc marginals into ``marginals`` and the directional
    derivative ``d/de mu(scores + e * tangent)`` into ``d_marginals`` (the
    vector-Jacobian product of the marginals with ``tangent``, the Jacobian
    being symmetric); returns ``log Z``. ``O(n^4)``. Same conventions and
    failure values as ``matrix_tree_marginals_rooted_log`` (NaN for
    single-rooted trees when some word cannot head all the others, ``-inf``
    when no tree exists); ``d_marginals`` is zero on column 0, the diagonal
    and forbidden arcs.
    """
    N = scores.shape[0]
    n = N - 1
    marginals[:, :] = 0.0
    d_marginals[:, :] = 0.0
    shift = np.zeros(N)
    W = np.full((N, N), -np.inf)  # log weights, shifted per column
    T = np.zeros((N, N))  # their relative tangents (0 on forbidden arcs)
    for m in range(1, N):
        c = -np.inf
        for h in range(N):
            if h != m and scores[h, m] > c:
                c = scores[h, m]
        # The shift cancels in the marginals, so it is held constant.
        shift[m] = c
        for h in range(N):
            if h != m:
                W[h, m] = scores[h, m] - c
                if W[h, m] > -np.inf:
                    T[h, m] = tangent[h, m]
    log_t = np.full(N, -np.inf)
    r_t = np.zeros(N)
    Y = np.full((N, N), -np.inf)
    rY = np.zeros((N, N))
    k_n = n - 1
    size = max(k_n, 1)
    idx = np.empty(size, dtype=np.int64)
    a = np.empty((size, size))
    ra = np.empty((size, size))
    slack = np.empty(size)
    rs = np.empty(size)
    piv = np.empty(size)
    rpiv = np.empty(size)
    z = np.empty(size)
    rz = np.empty(size)
    for m in range(1, N):
        c = 0
        for w in range(1, N):
            if w != m:
                idx[c] = w
                c += 1
        # L_m: the Laplacian of the other words with m as an extra root.
        for j in range(k_n):
            if single_root:
                slack[j] = W[m, idx[j]]
                rs[j] = T[m, idx[j]]
            else:
                slack[j], rs[j] = _lae(W[m, idx[j]], T[m, idx[j]], W[0, idx[j]], T[0, idx[j]])
            for i in range(k_n):
                if i != j:
                    a[i, j] = W[idx[i], idx[j]]
                    ra[i, j] = T[idx[i], idx[j]]
                else:
                    a[i, j] = -np.inf
                    ra[i, j] = 0.0
        logdet = 0.0
        r_logdet = 0.0
        ok = True
        for k in range(k_n):
            p = slack[k]
            rp = rs[k]
            for i in range(k + 1, k_n):
                p, rp = _lae(p, rp, a[i, k], ra[i, k])
            if p == -np.inf:
                ok = False
                break
            piv[k] = p
            rpiv[k] = rp
            logdet += p
            r_logdet += rp
            for i in range(k + 1, k_n):
                a[i, k] -= p
                ra[i, k] -= rp
            for j in range(k + 1, k_n):
                akj = a[k, j]
                if akj == -np.inf:
                    continue
                rkj = ra[k, j]
                slack[j], rs[j] = _lae(slack[j], rs[j], slack[k] + akj - p, rs[k] + rkj - rp)
                for i in range(k + 1, k_n):
                    if i != j:
                        a[i, j], ra[i, j] = _lae(a[i, j], ra[i, j], a[i, k] + akj, ra[i, k] + rkj)
        if not ok:
            if single_root:
                return np.nan
            continue
        log_t[m] = logdet
        r_t[m] = r_logdet
        # y = L_m^-T A0 by two triangular solves, additions only.
        for j in range(k_n):
            s = W[0, idx[j]]
            rsum = T[0, idx[j]]
            for k in range(j):
                s, rsum = _lae(s, rsum, a[k, j] + z[k], ra[k, j] + rz[k])
            z[j] = s - piv[j]
            rz[j] = rsum - rpiv[j]
        for k in range(k_n - 1, -1, -1):
            s = z[k]
            rsum = rz[k]
            for i in range(k + 1, k_n):
                s, rsum = _lae(s, rsum, a[i, k] + Y[m, idx[i]], ra[i, k] + rY[m, idx[i]])
            Y[m, idx[k]] = s
            rY[m, idx[k]] = rsum
    if single_root:
        log_zs = -np.inf
        r_zs = 0.0
        for m in range(1, N):
            if log_t[m] > -np.inf:
                log_zs, r_zs = _lae(log_zs, r_zs, W[0, m] + log_t[m], T[0, m] + r_t[m])
    else:
        log_zs, r_zs = _gth_logdet_log_jvp(W, T)
    if log_zs == -np.inf:
        return -np.inf
    for m in range(1, N):
        if log_t[m] == -np.inf:
            continue
        if W[0, m] > -np.inf:
            mu = np.exp(W[0, m] + log_t[m] - log_zs)
            marginals[0, m] = mu
            d_marginals[0, m] = mu * (T[0, m] + r_t[m] - r_zs)
        for h in range(1, N):
            if h != m and W[h, m] > -np.inf and Y[m, h] > -np.inf:
                mu = np.exp(W[h, m] + Y[m, h] + log_t[m] - log_zs)
                marginals[h, m] = mu
                d_marginals[h, m] = mu * (T[h, m] + rY[m, h] + r_t[m] - r_zs)
    log_z = log_zs
    for m in range(1, N):
        log_z += shift[m]
    return log_z


@njit
def backward_sums_vanish(d_scores, d_marginals, single_root, rtol):
    """Whether the identities ``sum_h mu[h, m] = 1`` survive differentiation.

    Each column of the marginals (and their root row, for single-rooted
    trees) sums to one whatever the scores, so the same sums of a correct
    backward output vanish. Checks them to ``rtol * max |d_marginals|`` on
    the arcs: a cheap accuracy test of the closed-form ``O(n^3)`` backward,
    whose errors grow with those of the inverse Laplacian.
    """
    N = d_scores.shape[0]
    scale = 0.0
    for m in range(1, N):
        for h in range(N):
            if h != m:
                v = abs(d_marginals[h, m])
                if v > scale:
                    scale = v
    tol = rtol * scale
    for m in range(1, N):
        s = 0.0
        for h in range(N):
            if h != m:
                s += d_scores[h, m]
        if not (abs(s) <= tol):
            return False
    if single_root:
        s = 0.0
        for m in range(1, N):
            s += d_scores[0, m]
        if not (abs(s) <= tol):
            return False
    return True


@njit
def _gth_logdet_jvp(A, T):
    """``log det`` of the multi-root Laplacian and its tangent, linear space.

    ``A`` holds the (shifted) weights, ``T`` their relative tangents; the
    elimination is that of :func:`_gth_logdet_log_jvp` without logarithms.
    """
    N = A.shape[0]
    n = N - 1
    a = np.empty((n, n))
    ra = np.zeros((n, n))
    slack = np.empty(n)
    rs = np.zeros(n)
    for j in range(n):
        slack[j] = A[0, j + 1]
        rs[j] = T[0, j + 1]
        for i in range(n):
            if i != j:
                a[i, j] = A[i + 1, j + 1]
                ra[i, j] = T[i + 1, j + 1]
            else:
                a[i, j] = 0.0
    logdet = 0.0
    r_logdet = 0.0
    for k in range(n):
        p = slack[k]
        dp = slack[k] * rs[k]
        for i in range(k + 1, n):
            p += a[i, k]
            dp += a[i, k] * ra[i, k]
        if not (p > 0.0):
            return -np.inf, 0.0
        rp = dp / p
        logdet += np.log(p)
        r_logdet += rp
        for j in range(k + 1, n):
            akj = a[k, j]
            if akj == 0.0:
                continue
            rkj = ra[k, j]
            add = slack[k] * akj / p
            if add > 0.0:
                new = slack[j] + add
                rs[j] = (slack[j] * rs[j] + add * (rs[k] + rkj - rp)) / new
                slack[j] = new
            for i in range(k + 1, n):
                if i != j:
                    add = a[i, k] * akj / p
                    if add == 0.0:
                        continue
                    new = a[i, j] + add
                    ra[i, j] = (a[i, j] * ra[i, j] + add * (ra[i, k] + rkj - rp)) / new
                    a[i, j] = new
    return logdet, r_logdet


@njit
def matrix_tree_marginals_rooted_jvp(scores, single_root, tangent, marginals, d_marginals):
    """:func:`matrix_tree_marginals_rooted_log_jvp` in linear space.

    The same forward-mode differentiation (relative tangents) of the
    subtraction-free algorithm, on the column-shifted weights themselves:
    the same ``O(n^4)`` cost without a log-add-exp per addition, for scores
    whose allowed arcs into each word lie within 700 of each other (no
    weight underflows). Same outputs and failure values.
    """
    N = scores.shape[0]
    n = N - 1
    marginals[:, :] = 0.0
    d_marginals[:, :] = 0.0
    shift = np.zeros(N)
    A = np.zeros((N, N))  # weights, shifted per column
    T = np.zeros((N, N))  # their relative tangents (0 on forbidden arcs)
    for m in range(1, N):
        c = -np.inf
        for h in range(N):
            if h != m and scores[h, m] > c:
                c = scores[h, m]
        shift[m] = c
        for h in range(N):
            if h != m:
                A[h, m] = np.exp(scores[h, m] - c)
                if A[h, m] > 0.0:
                    T[h, m] = tangent[h, m]
    log_t = np.full(N, -np.inf)
    r_t = np.zeros(N)
    Y = np.zeros((N, N))
    rY = np.zeros((N, N))
    k_n = n - 1
    size = max(k_n, 1)
    idx = np.empty(size, dtype=np.int64)
    a = np.empty((size, size))
    ra = np.empty((size, size))
    slack = np.empty(size)
    rs = np.empty(size)
    piv = np.empty(size)
    rpiv = np.empty(size)
    z = np.empty(size)
    rz = np.empty(size)
    for m in range(1, N):
        c = 0
        for w in range(1, N):
            if w != m:
                idx[c] = w
                c += 1
        for j in range(k_n):
            s0 = A[m, idx[j]]
            ds = s0 * T[m, idx[j]]
            if not single_root:
                s0 += A[0, idx[j]]
                ds += A[0, idx[j]] * T[0, idx[j]]
            slack[j] = s0
            rs[j] = ds / s0 if s0 > 0.0 else 0.0
            for i in range(k_n):
                if i != j:
                    a[i, j] = A[idx[i], idx[j]]
                    ra[i, j] = T[idx[i], idx[j]]
                else:
                    a[i, j] = 0.0
                    ra[i, j] = 0.0
        logdet = 0.0
        r_logdet = 0.0
        ok = True
        for k in range(k_n):
            p = slack[k]
            dp = slack[k] * rs[k]
            for i in range(k + 1, k_n):
                p += a[i, k]
                dp += a[i, k] * ra[i, k]
            if not (p > 0.0):
                ok = False
                break
            rp = dp / p
            piv[k] = p
            rpiv[k] = rp
            logdet += np.log(p)
            r_logdet += rp
            for i in range(k + 1, k_n):
                a[i, k] /= p
                ra[i, k] -= rp
            for j in range(k + 1, k_n):
                akj = a[k, j]
                if akj == 0.0:
                    continue
                rkj = ra[k, j]
                add = slack[k] * akj / p
                if add > 0.0:
                    new = slack[j] + add
                    rs[j] = (slack[j] * rs[j] + add * (rs[k] + rkj - rp)) / new
                    slack[j] = new
                for i in range(k + 1, k_n):
                    if i != j:
                        add = a[i, k] * akj
                        if add == 0.0:
                            continue
                        new = a[i, j] + add
                        ra[i, j] = (a[i, j] * ra[i, j] + add * (ra[i, k] + rkj)) / new
                        a[i, j] = new
        if not ok:
            if single_root:
                return np.nan
            continue
        log_t[m] = logdet
        r_t[m] = r_logdet
        for j in range(k_n):
            s = A[0, idx[j]]
            ds = s * T[0, idx[j]]
            for k in range(j):
                term = a[k, j] * z[k]
                s += term
                ds += term * (ra[k, j] + rz[k])
            z[j] = s / piv[j]
            rz[j] = (ds / s if s > 0.0 else 0.0) - rpiv[j]
        for k in range(k_n - 1, -1, -1):
            s = z[k]
            ds = s * rz[k]
            for i in range(k + 1, k_n):
                term = a[i, k] * Y[m, idx[i]]
                s += term
                ds += term * (ra[i, k] + rY[m, idx[i]])
            Y[m, idx[k]] = s
            rY[m, idx[k]] = ds / s if s > 0.0 else 0.0
    if single_root:
        top = -np.inf
        for m in range(1, N):
            if A[0, m] > 0.0 and log_t[m] > -np.inf:
                top = max(top, np.log(A[0, m]) + log_t[m])
        if top == -np.inf:
            return -np.inf
        total = 0.0
        d_total = 0.0
        for m in range(1, N):
            if A[0, m] > 0.0 and log_t[m] > -np.inf:
                term = np.exp(np.log(A[0, m]) + log_t[m] - top)
                total += term
                d_total += term * (T[0, m] + r_t[m])
        log_zs = top + np.log(total)
        r_zs = d_total / total
    else:
        log_zs, r_zs = _gth_logdet_jvp(A, T)
        if log_zs == -np.inf:
            return -np.inf
    for m in range(1, N):
        if log_t[m] == -np.inf:
            continue
        ratio = np.exp(log_t[m] - log_zs)
        mu = A[0, m] * ratio
        marginals[0, m] = mu
        d_marginals[0, m] = mu * (T[0, m] + r_t[m] - r_zs)
        for h in range(1, N):
            if h != m and A[h, m] > 0.0:
                mu = A[h, m] * Y[m, h] * ratio
                marginals[h, m] = mu
                d_marginals[h, m] = mu * (T[h, m] + rY[m, h] + r_t[m] - r_zs)
    log_z = log_zs
    for m in range(1, N):
        log_z += shift[m]
    return log_z
