"""Numba kernels for non-projective dependency trees: MAP and matrix-tree marginals.

Arc scores are an ``(n + 1, n + 1)`` array, ``scores[h, m]`` scoring the arc
from head ``h`` to modifier ``m``; index 0 is the root. The kernels ignore
column 0 and the diagonal themselves. ``-inf`` marks a forbidden arc. No
validation happens here: callers pass C-contiguous float64 arrays without NaN
or ``+inf`` on the used entries.

MAP is Chu-Liu-Edmonds with the bookkeeping of Tarjan (1977) for dense graphs:
contracted nodes reuse the slot of one cycle member in a working score matrix,
so a contraction of ``k`` nodes costs ``O(k n)`` and the whole search
``O(n^2)``. The single-root constraint (Zmigrod, Vieira & Cotterell 2020)
is enforced exactly by comparing arc scores lexicographically after a root-arc
penalty, see :func:`chu_liu_edmonds`.

Marginals use the matrix-tree theorem (Koo, Globerson, Carreras & Collins
2007): ``Z = det(L)`` for the Laplacian ``L`` of the exponentiated scores, and
with the root row replacing the first word's row for single-rooted trees.
Each column of ``L`` only holds arcs into one modifier, and every tree uses
exactly one such arc, so the scores of each column are shifted by their
maximum before exponentiating: no overflow, and ``log Z`` gets the shifts back.
When strong cycles make that determinant cancel, the callers switch to
:func:`matrix_tree_marginals_rooted` (``O(n^4)``, subtraction-free) or its
log-space twin :func:`matrix_tree_marginals_rooted_log`.
"""

import numpy as np

from ..utils._numba import njit


@njit(inline="always")
def _better(p1, s1, p2, s2):
    """Whether the arc score ``(p1, s1)`` beats ``(p2, s2)`` lexicographically."""
    return p1 > p2 or (p1 == p2 and s1 > s2)


@njit(inline="always")
def _best_in(P, S, active, v):
    """Slot of the best arc into slot ``v``, -1 if every arc is forbidden.

    Strict comparisons make the lowest slot index win exact ties.
    """
    n_slots = S.shape[0]
    best_p = -np.inf
    best_s = -np.inf
    arg = -1
    for u in range(n_slots):
        if u != v and active[u] and _better(P[u, v], S[u, v], best_p, best_s):
            best_p = P[u, v]
            best_s = S[u, v]
            arg = u
    return arg


@njit(inline="always")
def cle_workspace(N):
    """Work arrays for :func:`chu_liu_edmonds_ws` on ``N`` nodes (root included).

    Returned as a tuple ``(f_mat, i_mat, i_vec, b_vec, f_vec)`` so that a
    caller solving many problems of one size (SparseMAP's active set)
    allocates them once instead of once per oracle call.
    """
    f_mat = np.empty((2, N, N))
    i_mat = np.empty((2, N, N), dtype=np.int64)
    i_vec = np.empty((7, 2 * N), dtype=np.int64)
    b_vec = np.empty((3, 2 * N), dtype=np.bool_)
    f_vec = np.empty((2, N))
    return f_mat, i_mat, i_vec, b_vec, f_vec


@njit
def chu_liu_edmonds(scores, single_root, heads):
    """Maximum spanning arborescence rooted at 0, written into ``heads``.

    Returns False when no (single-rooted, if asked) tree of finite score
    exists; ``heads`` is then unspecified. ``heads[0]`` is set to -1.

    Arc scores are compared as pairs ``(penalty, score)`` in lexicographic
    order: the penalty is -inf for a forbidden arc, -1 for a root arc when a
    single root is required, and 0 otherwise. Pairs form an ordered group
    under componentwise addition, on which Chu-Liu-Edmonds is exact, so the
    result maximizes the penalty first (no forbidden arc, then as few root
    arcs as possible: one) and the score second. This is the reweighting of
    Stanojevic & Cohen (2021) with an exact, infinitesimal penalty instead of
    a large constant that would cost floating-point precision.
    """
    f_mat, i_mat, i_vec, b_vec, f_vec = cle_workspace(scores.shape[0])
    return chu_liu_edmonds_ws(scores, single_root, heads, f_mat, i_mat, i_vec, b_vec, f_vec)


@njit(internal=True)
def chu_liu_edmonds_ws(scores, single_root, heads, f_mat, i_mat, i_vec, b_vec, f_vec):
    """:func:`chu_liu_edmonds` with caller-provided work arrays.

    The work arrays come from ``cle_workspace(scores.shape[0])``; their
    contents on entry do not matter (every one is initialized here), so the
    result is the same as with fresh arrays.
    """
    N = scores.shape[0]
    S = f_mat[0]
    P = f_mat[1]
    # orig_h[u, v], orig_m[u, v]: the original arc behind the working arc u -> v
    # between (possibly contracted) slots; needed to expand the tree at the end.
    orig_h = i_mat[0]
    orig_m = i_mat[1]
    root_penalty = -1.0 if single_root else 0.0
    for u in range(N):
        for v in range(N):
            s = scores[u, v]
            if v == 0 or u == v or s == -np.inf:
                S[u, v] = -np.inf
                P[u, v] = -np.inf
            else:
                S[u, v] = s
                P[u, v] = root_penalty if u == 0 else 0.0
            orig_h[u, v] = u
            orig_m[u, v] = v
    active = b_vec[0, :N]
    slot_node = i_vec[3, :N]
    for v in range(N):
        active[v] = True
        slot_node[v] = v
    # Contraction forest over node ids: 0..N-1 are the words, later ids are
    # contracted cycles. in_h/in_m: the original arc entering each node when it
    # was contracted (its cycle arc) or at the end (top-level nodes).
    max_nodes = 2 * N
    parent = i_vec[0, :max_nodes]
    in_h = i_vec[1, :max_nodes]
    in_m = i_vec[2, :max_nodes]
    for x in range(max_nodes):
        parent[x] = -1
        in_h[x] = -1
        in_m[x] = -1
    best_in = i_vec[4, :N]
    for v in range(N):
        best_in[v] = -1
    for v in range(1, N):
        b = _best_in(P, S, active, v)
        if b < 0:
            return False
        best_in[v] = b
    next_id = N
    stamp = i_vec[5, :N]
    in_cycle = b_vec[1, :N]
    w_in = f_vec[0, :N]
    p_in = f_vec[1, :N]
    members = i_vec[6, :N]
    for v in range(N):
        stamp[v] = 0
        in_cycle[v] = False
        w_in[v] = 0.0
        p_in[v] = 0.0
    heads[0] = -1

    while True:
        # Find a cycle of the greedy graph (each active slot -> its best head).
        for v in range(N):
            stamp[v] = 0
        found = -1
        for start in range(1, N):
            if not active[start] or stamp[start] != 0:
                continue
            v = start
            while v != 0 and stamp[v] == 0:
                stamp[v] = start
                v = best_in[v]
            if v != 0 and stamp[v] == start:
                found = v
                break
        if found < 0:
            break

        k = 0
        v = found
        while True:
            members[k] = v
            k += 1
            in_cycle[v] = True
            v = best_in[v]
            if v == found:
                break
        r = members[0]
        for i in range(1, k):
            if members[i] < r:
                r = members[i]
        new_id = next_id
        next_id += 1
        for i in range(k):
            v = members[i]
            node = slot_node[v]
            parent[node] = new_id
            in_h[node] = orig_h[best_in[v], v]
            in_m[node] = orig_m[best_in[v], v]
            w_in[v] = S[best_in[v], v]
            p_in[v] = P[best_in[v], v]
        for x in range(N):
            if not active[x] or in_cycle[x]:
                continue
            # Entering the cycle at v replaces v's cycle arc: the score
            # relative to that arc is what competes.
            best_p = -np.inf
            best_s = -np.inf
            bh = -1
            bm = -1
            for i in range(k):
                v = members[i]
                pv = P[x, v] - p_in[v]
                sv = S[x, v] - w_in[v]
                if _better(pv, sv, best_p, best_s):
                    best_p = pv
                    best_s = sv
                    bh = orig_h[x, v]
                    bm = orig_m[x, v]
            P[x, r] = best_p
            S[x, r] = best_s
            orig_h[x, r] = bh
            orig_m[x, r] = bm
            if x == 0:
                continue
            best_p = -np.inf
            best_s = -np.inf
            bh = -1
            bm = -1
            for i in range(k):
                v = members[i]
                if _better(P[v, x], S[v, x], best_p, best_s):
                    best_p = P[v, x]
                    best_s = S[v, x]
                    bh = orig_h[v, x]
                    bm = orig_m[v, x]
            P[r, x] = best_p
            S[r, x] = best_s
            orig_h[r, x] = bh
            orig_m[r, x] = bm
        for i in range(k):
            v = members[i]
            if v != r:
                active[v] = False
        slot_node[r] = new_id
        # Arcs out of the cycle keep their best member, so the best arc into
        # any other slot is unchanged; only its source slot is renamed.
        for w in range(1, N):
            if active[w] and w != r and in_cycle[best_in[w]]:
                best_in[w] = r
        for i in range(k):
            in_cycle[members[i]] = False
        b = _best_in(P, S, active, r)
        if b < 0:
            return False
        best_in[r] = b

    n_root = 0
    for v in range(1, N):
        if active[v]:
            node = slot_node[v]
            in_h[node] = orig_h[best_in[v], v]
            in_m[node] = orig_m[best_in[v], v]
            if in_h[node] == 0:
                n_root += 1
    if single_root and n_root > 1:
        # Even the tree with the fewest root arcs has several.
        return False
    # Expand: a node's entering arc fixes the head of one original word and
    # overrides the cycle arcs of every node on the path from that word up to
    # the node; the other cycle members keep their cycle arcs. Parents have
    # larger ids than their children, so a descending sweep sees them first.
    removed = b_vec[2, :next_id]
    for x in range(next_id):
        removed[x] = False
    for node in range(next_id - 1, 0, -1):
        if removed[node]:
            continue
        m = in_m[node]
        heads[m] = in_h[node]
        u = m
        while u != node:
            removed[u] = True
            u = parent[u]
    return True


@njit
def _laplacian(W, single_root):
    """The Laplacian of given (already exponentiated) arc weights ``W``."""
    N = W.shape[0]
    n = N - 1
    L = np.zeros((n, n))
    for m in range(1, N):
        total = 0.0
        for h in range(1, N):
            if h != m:
                total += W[h, m]
                L[h - 1, m - 1] = -W[h, m]
        if single_root:
            L[m - 1, m - 1] = total
        else:
            L[m - 1, m - 1] = total + W[0, m]
    if single_root:
        # Koo et al. (2007): the root's arcs replace the first word's row.
        for m in range(1, N):
            L[0, m - 1] = W[0, m]
    return L


@njit
def _weights(scores, single_root):
    """Column-shifted arc weights ``A``, their log shifts, and the Laplacian."""
    N = scores.shape[0]
    A = np.zeros((N, N))
    shift = np.zeros(N)
    for m in range(1, N):
        c = -np.inf
        for h in range(N):
            if h != m and scores[h, m] > c:
                c = scores[h, m]
        shift[m] = c
        for h in range(N):
            if h != m:
                A[h, m] = np.exp(scores[h, m] - c)
    return A, shift, _laplacian(A, single_root)


@njit
def _arc_gradient(Linv, single_root, h, m):
    """``d log det(L) / d A[h, m]`` from the inverse Laplacian."""
    if h == 0:
        if single_root:
            return Linv[m - 1, 0]
        return Linv[m - 1, m - 1]
    g = 0.0
    if not (single_root and m == 1):
        g += Linv[m - 1, m - 1]
    if not (single_root and h == 1):
        g -= Linv[m - 1, h - 1]
    return g


@njit
def _marginals_from_inverse(A, Linv, single_root, marginals):
    N = A.shape[0]
    for i in range(N):
        for j in range(N):
            marginals[i, j] = 0.0
    for m in range(1, N):
        for h in range(N):
            if h != m and A[h, m] > 0.0:
                marginals[h, m] = A[h, m] * _arc_gradient(Linv, single_root, h, m)


@njit
def _factor(scores, single_root):
    """Shifted weights, ``log Z`` and the inverse Laplacian (None if singular)."""
    A, shift, L = _weights(scores, single_root)
    sign, logdet = np.linalg.slogdet(L)
    if not (sign > 0.0) or not np.isfinite(logdet):
        return A, -np.inf, np.zeros_like(L)
    log_z = logdet
    for m in range(1, scores.shape[0]):
        log_z += shift[m]
    return A, log_z, np.ascontiguousarray(np.linalg.inv(L))


@njit
def matrix_tree_marginals(scores, single_root, marginals):
    """Arc marginals into ``marginals``; returns ``log Z``.

    Returns ``-inf`` (marginals all zero) when the Laplacian is numerically
    singular; callers check that a tree exists beforehand.
    """
    A, log_z, Linv = _factor(scores, single_root)
    if log_z == -np.inf:
        marginals[:, :] = 0.0
        return log_z
    _marginals_from_inverse(A, Linv, single_root, marginals)
    return log_z


@njit
def matrix_tree_marginals_backward(scores, single_root, d_marginals, marginals, d_scores):
    """Vector-Jacobian product of the marginals, into ``d_scores``.

    Also writes the marginals and returns ``log Z`` (as
    :func:`matrix_tree_marginals`), so that callers can check their accuracy
    without factorizing twice; ``d_scores`` is zero when ``log Z`` is -inf.

    The marginals are the gradient of ``log Z``, so their Jacobian is the
    (symmetric) Hessian of ``log Z`` and the product is the derivative of the
    marginals along ``t = d_marginals``. With ``dA = A * t`` and ``dL`` the
    Laplacian built from ``dA``: ``d mu = mu * t + A * g(-L^-1 dL L^-1)``,
    where ``g`` is the linear map giving ``d log det / d A`` from ``L^-1``.
    """
    N = scores.shape[0]
    d_scores[:, :] = 0.0
    A, log_z, Linv = _factor(scores, single_root)
    if log_z == -np.inf:
        marginals[:, :] = 0.0
        return log_z
    _marginals_from_inverse(A, Linv, single_root, marginals)
    dA = np.zeros((N, N))
    for m in range(1, N):
        for h in range(N):
            if h != m and A[h, m] > 0.0:
                dA[h, m] = A[h, m] * d_marginals[h, m]
    dL = _laplacian(dA, single_root)
    dLinv = -np.dot(np.dot(Linv, dL), Linv)
    for m in range(1, N):
        for h in range(N):
            if h != m and A[h, m] > 0.0:
                d_scores[h, m] = marginals[h, m] * d_marginals[h, m] + A[h, m] * _arc_gradient(
                    dLinv, single_root, h, m
                )
    return log_z


@njit
def matrix_tree_marginals_rooted(scores, single_root, marginals):
    """Marginals and ``log Z`` without cancellation, in ``O(n^4)``.

    The slower, cancellation-free path used when the determinant formula is
    numerically unreliable (cycles of strong arcs far ahead of every tree).
    For each word ``m``, let ``L_m`` be the Laplacian of the other words
    with ``m`` acting as an extra root (column ``j`` gets the slack
    ``A[m, j]``, plus ``A[0, j]`` for multi-rooted trees). Then
    ``T_m = det(L_m)`` counts the trees below ``m`` (``Z = sum A[0, m] T_m``
    for single-rooted trees; ``det(L) = Z`` with ``det(L_m) / det(L)`` the
    diagonal of ``L^-1`` otherwise), and with ``y = L_m^-T A[0, :]``,
    the arc ``h -> m`` has marginal ``A[h, m] y_h T_m / Z`` (root arcs:
    ``A[0, m] T_m / Z``). ``L_m`` is a column diagonally dominant
    M-matrix, so its factorization by Grassmann, Taksar & Heyman (1985)
    computes every pivot as a sum of nonnegative terms, and the triangular
    solves with nonnegative right-hand sides need additions only: no
    subtraction anywhere. Returns NaN (single-rooted trees) when some word
    cannot head all the others, where the formula degenerates.
    """
    N = scores.shape[0]
    n = N - 1
    A, shift, _ = _weights(scores, single_root)
    marginals[:, :] = 0.0
    log_t = np.full(N, -np.inf)
    Y = np.zeros((N, N))
    k_n = n - 1
    idx = np.empty(max(k_n, 1), dtype=np.int64)
    a = np.empty((max(k_n, 1), max(k_n, 1)))
    slack = np.empty(max(k_n, 1))
    piv = np.empty(max(k_n, 1))
    z = np.empty(max(k_n, 1))
    for m in range(1, N):
        c = 0
        for w in range(1, N):
            if w != m:
                idx[c] = w
                c += 1
        for j in range(k_n):
            slack[j] = A[m, idx[j]] + (0.0 if single_root else A[0, idx[j]])
            for i in range(k_n):
                a[i, j] = A[idx[i], idx[j]] if i != j else 0.0
        logdet = 0.0
        ok = True
        for k in range(k_n):
            p = slack[k]
            for i in range(k + 1, k_n):
                p += a[i, k]
            if not (p > 0.0):
                ok = False
                break
            piv[k] = p
            logdet += np.log(p)
            for i in range(k + 1, k_n):
                a[i, k] /= p
            for j in range(k + 1, k_n):
                akj = a[k, j]
                if akj == 0.0:
                    continue
                slack[j] += slack[k] * akj / p
                for i in range(k + 1, k_n):
                    if i != j:
                        a[i, j] += a[i, k] * akj
        if not ok:
            if single_root:
                # m cannot head all other words: T_m = 0, and the formula
                # for the arcs into m degenerates (0 * inf). Give up.
                return np.nan
            continue
        log_t[m] = logdet
        # y = L_m^-T A0: L_m^T = U^T Lo^T, both solves with additions only.
        for j in range(k_n):
            s = A[0, idx[j]]
            for k in range(j):
                s += a[k, j] * z[k]
            z[j] = s / piv[j]
        for k in range(k_n - 1, -1, -1):
            s = z[k]
            for i in range(k + 1, k_n):
                s += a[i, k] * Y[m, idx[i]]
            Y[m, idx[k]] = s
    if single_root:
        top = -np.inf
        for m in range(1, N):
            if A[0, m] > 0.0 and log_t[m] > -np.inf:
                top = max(top, np.log(A[0, m]) + log_t[m])
        if top == -np.inf:
            return -np.inf
        total = 0.0
        for m in range(1, N):
            if A[0, m] > 0.0 and log_t[m] > -np.inf:
                total += np.exp(np.log(A[0, m]) + log_t[m] - top)
        log_zs = top + np.log(total)
    else:
        # det(L) itself, by the same factorization with the root's slack.
        log_zs = _gth_logdet(A)
        if log_zs == -np.inf:
            return -np.inf
    for m in range(1, N):
        if log_t[m] == -np.inf:
            continue
        ratio = np.exp(log_t[m] - log_zs)
        marginals[0, m] = A[0, m] * ratio
        for h in range(1, N):
            if h != m and A[h, m] > 0.0:
                marginals[h, m] = A[h, m] * Y[m, h] * ratio
    log_z = log_zs
    for m in range(1, N):
        log_z += shift[m]
    return log_z


@njit
def _gth_logdet(A):
    """``log det`` of the multi-root Laplacian by subtraction-free elimination."""
    N = A.shape[0]
    n = N - 1
    a = np.empty((n, n))
    slack = np.empty(n)
    for j in range(n):
        slack[j] = A[0, j + 1]
        for i in range(n):
            a[i, j] = A[i + 1, j + 1] if i != j else 0.0
    logdet = 0.0
    for k in range(n):
        p = slack[k]
        for i in range(k + 1, n):
            p += a[i, k]
        if not (p > 0.0):
            return -np.inf
        logdet += np.log(p)
        for j in range(k + 1, n):
            akj = a[k, j]
            if akj == 0.0:
                continue
            slack[j] += slack[k] * akj / p
            for i in range(k + 1, n):
                if i != j:
                    a[i, j] += a[i, k] * akj / p
    return logdet


@njit
def _logaddexp(x, y):
    if x == -np.inf:
        return y
    if y == -np.inf:
        return x
    if x > y:
        return x + np.log1p(np.exp(y - x))
    return y + np.log1p(np.exp(x - y))


@njit
def matrix_tree_marginals_rooted_log(scores, single_root, marginals):
    """:func:`matrix_tree_marginals_rooted` with every quantity in log space.

    The same subtraction-free computation (sums, products and quotients of
    nonnegative numbers only) carried out on logarithms, so weights spanning
    any range (scores of size ``1e4``) neither underflow nor overflow. The
    same ``O(n^4)`` steps, each addition a log-add-exp, hence a larger
    constant than the linear-space version; used only when some allowed arc
    is more than 700 below the best arc into its word.
    """
    N = scores.shape[0]
    n = N - 1
    marginals[:, :] = 0.0
    shift = np.zeros(N)
    W = np.full((N, N), -np.inf)  # log weights, shifted per column
    for m in range(1, N):
        c = -np.inf
        for h in range(N):
            if h != m and scores[h, m] > c:
                c = scores[h, m]
        shift[m] = c
        for h in range(N):
            if h != m:
                W[h, m] = scores[h, m] - c
    log_t = np.full(N, -np.inf)
    Y = np.full((N, N), -np.inf)
    k_n = n - 1
    size = max(k_n, 1)
    idx = np.empty(size, dtype=np.int64)
    a = np.empty((size, size))
    slack = np.empty(size)
    piv = np.empty(size)
    z = np.empty(size)
    for m in range(1, N):
        c = 0
        for w in range(1, N):
            if w != m:
                idx[c] = w
                c += 1
        for j in range(k_n):
            slack[j] = W[m, idx[j]] if single_root else _logaddexp(W[m, idx[j]], W[0, idx[j]])
            for i in range(k_n):
                a[i, j] = W[idx[i], idx[j]] if i != j else -np.inf
        logdet = 0.0
        ok = True
        for k in range(k_n):
            p = slack[k]
            for i in range(k + 1, k_n):
                p = _logaddexp(p, a[i, k])
            if p == -np.inf:
                ok = False
                break
            piv[k] = p
            logdet += p
            for i in range(k + 1, k_n):
                a[i, k] -= p
            for j in range(k + 1, k_n):
                akj = a[k, j]
                if akj == -np.inf:
                    continue
                slack[j] = _logaddexp(slack[j], slack[k] + akj - p)
                for i in range(k + 1, k_n):
                    if i != j:
                        a[i, j] = _logaddexp(a[i, j], a[i, k] + akj)
        if not ok:
            if single_root:
                return np.nan
            continue
        log_t[m] = logdet
        for j in range(k_n):
            s = W[0, idx[j]]
            for k in range(j):
                s = _logaddexp(s, a[k, j] + z[k])
            z[j] = s - piv[j]
        for k in range(k_n - 1, -1, -1):
            s = z[k]
            for i in range(k + 1, k_n):
                s = _logaddexp(s, a[i, k] + Y[m, idx[i]])
            Y[m, idx[k]] = s
    if single_root:
        log_zs = -np.inf
        for m in range(1, N):
            log_zs = _logaddexp(log_zs, W[0, m] + log_t[m])
    else:
        log_zs = _gth_logdet_log(W)
    if log_zs == -np.inf:
        return -np.inf
    for m in range(1, N):
        if log_t[m] == -np.inf:
            continue
        marginals[0, m] = np.exp(W[0, m] + log_t[m] - log_zs)
        for h in range(1, N):
            if h != m and W[h, m] > -np.inf:
                marginals[h, m] = np.exp(W[h, m] + Y[m, h] + log_t[m] - log_zs)
    log_z = log_zs
    for m in range(1, N):
        log_z += shift[m]
    return log_z


@njit
def _gth_logdet_log(W):
    """:func:`_gth_logdet` on log weights."""
    N = W.shape[0]
    n = N - 1
    a = np.empty((n, n))
    slack = np.empty(n)
    for j in range(n):
        slack[j] = W[0, j + 1]
        for i in range(n):
            a[i, j] = W[i + 1, j + 1] if i != j else -np.inf
    logdet = 0.0
    for k in range(n):
        p = slack[k]
        for i in range(k + 1, n):
            p = _logaddexp(p, a[i, k])
        if p == -np.inf:
            return -np.inf
        logdet += p
        for j in range(k + 1, n):
            akj = a[k, j]
            if akj == -np.inf:
                continue
            slack[j] = _logaddexp(slack[j], slack[k] + akj - p)
            for i in range(k + 1, n):
                if i != j:
                    a[i, j] = _logaddexp(a[i, j], a[i, k] + akj - p)
    return logdet


@njit
def chu_liu_edmonds_parts(eta_u, n, single_root, scores, heads, m_out):
    """MAP oracle on flat arc scores: Chu-Liu-Edmonds plus the indicator vector.

    ``eta_u`` holds the ``n * n`` arc scores in the modifier-major part order
    of ``DependencyTree`` (part ``(m - 1) * n + j`` is the arc into ``m`` from
    the ``j``-th head other than ``m``). ``scores`` is an ``(n + 1, n + 1)``
    work array (overwritten); ``heads`` receives the tree and ``m_out`` its
    0/1 part indicators. One compiled call instead of the scatter, search and
    gather in NumPy, which dominated SparseMAP's iterations. Returns False
    when no tree of finite score exists.
    """
    f_mat, i_mat, i_vec, b_vec, f_vec = cle_workspace(n + 1)
    return chu_liu_edmonds_parts_ws(
        eta_u, n, single_root, scores, heads, m_out, f_mat, i_mat, i_vec, b_vec, f_vec
    )


@njit(internal=True)
def chu_liu_edmonds_parts_ws(
    eta_u, n, single_root, scores, heads, m_out, f_mat, i_mat, i_vec, b_vec, f_vec
):
    """:func:`chu_liu_edmonds_parts` with the work arrays of ``cle_workspace(n + 1)``."""
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
    if not chu_liu_edmonds_ws(scores, single_root, heads, f_mat, i_mat, i_vec, b_vec, f_vec):
        return False
    for a in range(n * n):
        m_out[a] = 0.0
    for mod in range(1, n + 1):
        h = heads[mod]
        m_out[(mod - 1) * n + (h if h < mod else h - 1)] = 1.0
    return True
