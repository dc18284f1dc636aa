"""Numba kernels for the active-set bookkeeping of SparseMAP.

The active set keeps, for the ``k`` structures of the current support, their
unary indicator rows ``M[:k]`` (and higher-order rows ``N[:k]``), scores
``theta[:k]``, probabilities ``p[:k]``, the Gram matrix ``G = M M^T`` and the
inverse ``B`` of the bordered KKT matrix of thesis eq. 4.9,
``[[0, 1^T], [1, G]]`` (index 0 is the multiplier ``tau``, index ``i + 1``
the ``i``-th structure), and the positions of the nonzero entries of each
row, ``NZ[i, :nnz[i]]`` (indicator vectors are sparse). These kernels update them in ``O(k^2 + k n_parts)``
per change, so the Python loop around the MAP oracle only does a few calls
per iteration. No validation: the caller passes C-contiguous float64 arrays
with capacity for one more structure than ``k``.
"""

import numpy as np

from ..utils._numba import njit


@njit
def kkt_insert(M, N, NZ, nnz, G, B, theta, p, k, m, n, th, prob, dep_tol, coef):
    """Append a structure to the support, or report that it is dependent.

    The Schur complement of the new row of the KKT matrix is the squared
    distance from ``m`` to the affine hull of ``M[:k]``. If it is at most
    ``dep_tol * max(1, ||m||^2)`` the KKT matrix would be singular: nothing is
    changed, the affine coefficients of ``m`` (summing to 1) are written to
    ``coef[:k]`` and 0 is returned. Otherwise the structure becomes row
    ``k``, ``B`` is updated by the bordering formula and 1 is returned.
    """
    n_u = M.shape[1]
    # Indicator vectors are sparse (a tree uses n of its n^2 arcs): the Gram
    # row only needs the parts m uses.
    used = np.empty(n_u, dtype=np.int64)
    n_used = 0
    gm = 0.0
    for a in range(n_u):
        if m[a] != 0.0:
            used[n_used] = a
            n_used += 1
            gm += m[a] * m[a]
    b = np.empty(k)
    for i in range(k):
        s = 0.0
        for t in range(n_used):
            a = used[t]
            s += M[i, a] * m[a]
        b[i] = s
    if k == 0:
        B[0, 0] = -gm
        B[0, 1] = 1.0
        B[1, 0] = 1.0
        B[1, 1] = 0.0
    else:
        # w = B [1; b]
        w = np.empty(k + 1)
        for r in range(k + 1):
            s = B[r, 0]
            for c in range(k):
                s += B[r, c + 1] * b[c]
            w[r] = s
        schur = gm - w[0]
        for c in range(k):
            schur -= b[c] * w[c + 1]
        if schur <= dep_tol * max(1.0, gm):
            for c in range(k):
                coef[c] = w[c + 1]
            return 0
        inv = 1.0 / schur
        for r in range(k + 1):
            wr = w[r] * inv
            for c in range(k + 1):
                B[r, c] += wr * w[c]
            B[r, k + 1] = -wr
            B[k + 1, r] = -wr
        B[k + 1, k + 1] = inv
    for c in range(k):
        G[k, c] = b[c]
        G[c, k] = b[c]
    G[k, k] = gm
    for a in range(n_u):
        M[k, a] = m[a]
    for t in range(n_used):
        NZ[k, t] = used[t]
    nnz[k] = n_used
    for a in range(N.shape[1]):
        N[k, a] = n[a]
    theta[k] = th
    p[k] = prob
    return 1


@njit
def kkt_delete(M, N, NZ, nnz, G, B, theta, p, k, j):
    """Remove structure ``j`` of ``k``: the last one moves into slot ``j``.

    ``B`` loses the corresponding row and column by the downdating formula
    ``B' = B_rest - B_rest,j B_j,rest / B_jj``.
    """
    last = k - 1
    if j != last:
        for a in range(M.shape[1]):
            M[j, a] = M[last, a]
        for t in range(nnz[last]):
            NZ[j, t] = NZ[last, t]
        nnz[j] = nnz[last]
        for a in range(N.shape[1]):
            N[j, a] = N[last, a]
        theta[j] = theta[last]
        p[j] = p[last]
        for c in range(k):
            G[j, c], G[last, c] = G[last, c], G[j, c]
        for r in range(k):
            G[r, j], G[r, last] = G[r, last], G[r, j]
        jj, ll = j + 1, last + 1
        for c in range(k + 1):
            B[jj, c], B[ll, c] = B[ll, c], B[jj, c]
        for r in range(k + 1):
            B[r, jj], B[r, ll] = B[r, ll], B[r, jj]
    if last > 0:
        ll = last + 1
        inv = 1.0 / B[ll, ll]
        for r in range(ll):
            br = B[r, ll] * inv
            for c in range(ll):
                B[r, c] -= br * B[ll, c]


@njit
def relaxed_step(M, NZ, nnz, G, B, theta, p, k, u):
    """One active-set step on the support (thesis Alg. 1, lines 3-14).

    Solves the relaxed QP of eq. 4.9 through ``B`` (plus one step of
    iterative refinement with the explicit KKT matrix). If the solution
    ``p_hat`` has a negative entry, moves ``p`` towards it by the step of
    eq. 4.10, sets the blocking coordinate to exactly 0 and returns its index.
    Otherwise sets ``p = p_hat``, writes ``u = M^T p`` and returns -1.
    Also returns the step size (1 for the full step).
    """
    x = np.empty(k + 1)
    rhs = np.empty(k + 1)
    rhs[0] = 1.0
    for i in range(k):
        rhs[i + 1] = theta[i]
    for r in range(k + 1):
        s = 0.0
        for c in range(k + 1):
            s += B[r, c] * rhs[c]
        x[r] = s
    # residual of [[0, 1^T], [1, G]] x = rhs
    res = np.empty(k + 1)
    s = 0.0
    for i in range(k):
        s += x[i + 1]
    res[0] = rhs[0] - s
    for i in range(k):
        s = x[0]
        for c in range(k):
            s += G[i, c] * x[c + 1]
        res[i + 1] = rhs[i + 1] - s
    for r in range(k + 1):
        s = 0.0
        for c in range(k + 1):
            s += B[r, c] * res[c]
        x[r] += s
    blocking = -1
    gamma = 1.0
    for i in range(k):
        ph = x[i + 1]
        if ph < 0.0:
            ratio = p[i] / (p[i] - ph)
            if blocking < 0 or ratio < gamma:
                gamma = ratio
                blocking = i
    if blocking >= 0:
        for i in range(k):
            p[i] += gamma * (x[i + 1] - p[i])
        p[blocking] = 0.0
        return blocking, gamma
    for i in range(k):
        p[i] = x[i + 1]
    for a in range(M.shape[1]):
        u[a] = 0.0
    for i in range(k):
        pi = p[i]
        if pi != 0.0:
            for t in range(nnz[i]):
                a = NZ[i, t]
                u[a] += pi * M[i, a]
    return -1, 1.0
