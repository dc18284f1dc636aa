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

from ..structures._nonprojective_fast import chu_liu_edmonds_parts_ws, cle_workspace
from ..utils._numba import njit


@njit
def masked_dot(a, b):
    """``a . b`` over the entries where ``b`` is nonzero, summed in index order.

    Skipping the zeros of an indicator ``b`` avoids ``0 * -inf``; the fixed
    order makes the generic Python loop and the compiled tree loop compute
    the same scores and gaps to the last bit (different roundings would
    pick different, equally optimal, distributions on degenerate problems).
    """
    s = 0.0
    for i in range(b.shape[0]):
        if b[i] != 0.0:
            s += a[i] * b[i]
    return s


@njit
def support_terms(theta, p, k, u):
    """``theta[:k] . p[:k]`` and ``u . u``, summed in index order."""
    tp = 0.0
    for i in range(k):
        tp += theta[i] * p[i]
    uu = 0.0
    for a in range(u.shape[0]):
        uu += u[a] * u[a]
    return tp, uu


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


@njit
def _grow_rows(A, cap):
    out = np.zeros((cap, A.shape[1]), dtype=A.dtype)
    out[: A.shape[0]] = A
    return out


@njit
def _grow_vec(a, cap):
    out = np.zeros(cap, dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


@njit
def _grow_square(A, cap):
    out = np.zeros((cap, cap))
    out[: A.shape[0], : A.shape[1]] = A
    return out


@njit
def _tree_remove(M, N, NZ, nnz, G, B, theta, p, H, k, j):
    kkt_delete(M, N, NZ, nnz, G, B, theta, p, k, j)
    last = k - 1
    if j != last:
        for t in range(H.shape[1]):
            H[j, t] = H[last, t]
    return last


@njit
def _tree_remove_nonpositive(M, N, NZ, nnz, G, B, theta, p, H, k):
    # Same order as the Python loop: highest index first.
    for j in range(k - 1, -1, -1):
        if p[j] <= 0.0:
            k = _tree_remove(M, N, NZ, nnz, G, B, theta, p, H, k, j)
    return k


@njit
def _same_heads(H, i, heads):
    for t in range(heads.shape[0]):
        if H[i, t] != heads[t]:
            return False
    return True


@njit
def active_set_tree(eta_u, n, single_root, max_iter, tol, dep_tol):
    """The whole active-set solver for non-projective dependency trees.

    The compiled twin of ``_solve_active_set`` started from the MAP tree,
    with ``chu_liu_edmonds_parts_ws`` as the oracle: the same steps in the same
    order, without a Python round trip per iteration (which cost more than
    the oracle itself for sentences of up to 40 words). Structures are
    identified by their heads (rows of ``H``), equivalent to comparing their
    indicator vectors. Returns the support arrays (``M, H, theta, p`` with
    ``k`` rows in use), ``n_iter``, the gap, whether it converged, and
    whether a tree of finite score exists at all.
    """
    n_u = n * n
    cap = 16
    M = np.zeros((cap, n_u))
    N = np.zeros((cap, 0))
    NZ = np.zeros((cap, n_u), dtype=np.int64)
    nnz = np.zeros(cap, dtype=np.int64)
    G = np.zeros((cap, cap))
    B = np.zeros((cap + 1, cap + 1))
    theta = np.zeros(cap)
    p = np.zeros(cap)
    coef = np.zeros(cap)
    H = np.zeros((cap, n + 1), dtype=np.int64)
    work = np.empty((n + 1, n + 1))
    heads = np.empty(n + 1, dtype=np.int64)
    m = np.empty(n_u)
    nv = np.zeros(0)
    w = np.empty(n_u)
    u = np.zeros(n_u)
    dropped = np.empty(n + 1, dtype=np.int64)
    # Chu-Liu-Edmonds' work arrays, allocated once for every oracle call.
    f_mat, i_mat, i_vec, b_vec, f_vec = cle_workspace(n + 1)
    has_dropped = False
    if not chu_liu_edmonds_parts_ws(
        eta_u, n, single_root, work, heads, m, f_mat, i_mat, i_vec, b_vec, f_vec
    ):
        return M, H, theta, p, 0, 0, np.inf, False, False
    k = 0
    th = masked_dot(eta_u, m) + 0.0
    prob = 1.0
    gap = np.inf
    converged = False
    n_iter = 0
    first = True
    while True:
        if not first:
            if n_iter == max_iter:
                break
            n_iter += 1
            # Relaxed QP (eq. 4.9); if infeasible, the step of eq. 4.10.
            blocking, gamma = relaxed_step(M, NZ, nnz, G, B, theta, p, k, u)
            if blocking >= 0:
                if gamma == 0.0:
                    for t in range(n + 1):
                        dropped[t] = H[blocking, t]
                    has_dropped = True
                else:
                    has_dropped = False
                k = _tree_remove_nonpositive(M, N, NZ, nnz, G, B, theta, p, H, k)
                continue
            k = _tree_remove_nonpositive(M, N, NZ, nnz, G, B, theta, p, H, k)
            for a in range(n_u):
                w[a] = eta_u[a] - u[a]
            chu_liu_edmonds_parts_ws(
                w, n, single_root, work, heads, m, f_mat, i_mat, i_vec, b_vec, f_vec
            )
            # The same operations, in the same order, as _vertex and
            # _linear_gap (no higher-order parts: their score adds 0.0).
            th = masked_dot(eta_u, m) + 0.0
            tp, uu = support_terms(theta, p, k, u)
            current = tp - uu
            score = th - masked_dot(m, u)
            gap = score - current
            objective = tp - 0.5 * uu
            if gap <= tol * max(1.0, abs(objective)):
                converged = True
                break
            present = has_dropped and _same_heads(dropped.reshape(1, n + 1), 0, heads)
            for i in range(k):
                if present:
                    break
                present = _same_heads(H, i, heads)
            if present:
                # Already in (or just dropped from) the support: the gap is
                # rounding noise, nothing left to add.
                converged = True
                break
            has_dropped = False
            prob = 0.0
        first = False
        # Add the structure, pivoting out dependent ones (see _add_active).
        while True:
            if k == M.shape[0]:
                cap = 2 * M.shape[0]
                M = _grow_rows(M, cap)
                N = _grow_rows(N, cap)
                NZ = _grow_rows(NZ, cap)
                H = _grow_rows(H, cap)
                nnz = _grow_vec(nnz, cap)
                theta = _grow_vec(theta, cap)
                p = _grow_vec(p, cap)
                coef = np.zeros(cap)
                G = _grow_square(G, cap)
                B = _grow_square(B, cap + 1)
            if kkt_insert(M, N, NZ, nnz, G, B, theta, p, k, m, nv, th, prob, dep_tol, coef):
                for t in range(n + 1):
                    H[k, t] = heads[t]
                k += 1
                break
            j = -1
            t_min = np.inf
            for i in range(k):
                if coef[i] > 0.0:
                    r = p[i] / coef[i]
                    if r < t_min:
                        t_min = r
                        j = i
            if j < 0:
                j = 0
            for i in range(k):
                p[i] = p[i] - t_min * coef[i]
            p[j] = 0.0
            prob += t_min
            k = _tree_remove_nonpositive(M, N, NZ, nnz, G, B, theta, p, H, k)
        if n_iter == 0:
            # Normalise the starting distribution (a single structure).
            s = 0.0
            for i in range(k):
                s += p[i]
            for i in range(k):
                p[i] /= s
    return M, H, theta, p, k, n_iter, gap, converged, True
