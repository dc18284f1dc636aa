"""Numba kernels for the Euclidean projection onto the simplex (sparsemax).

No validation happens here: callers pass C-contiguous float64 arrays whose
rows contain finite values or -inf (masked entries), never NaN or +inf.

The threshold ``tau`` of the projection onto ``{p >= 0, sum p = radius}``
satisfies ``tau >= max(z) - radius`` (the largest coordinate of the projection
is at most ``radius``), so entries ``<= max(z) - radius`` are never in the
support. The fast kernels keep only the entries above running lower bounds
of the threshold, prune them with Michelot's fixed point, and sort the few
survivors: O(d) expected in practice. They accumulate the same sorted prefix
as the full sort and give bitwise the same result.
:func:`simplex_threshold_sort` keeps the plain sort-based algorithm as a
reference for the tests.
"""

import numpy as np

from ..utils._numba import njit


@njit
def simplex_threshold_sort(z, radius):
    """Reference: threshold and support size by sorting the whole vector.

    Sort-based (Held et al. 1974): the support is the longest prefix of the
    sorted scores whose entries stay above the running threshold. Entries equal
    to -inf are never in the support. Sums run over ``z - max(z)``, which keeps
    full precision for scores far from 0. Returns ``(tau, k, m)``: the
    threshold relative to the max ``m`` (the projection is
    ``max(z - m - tau, 0)``), the support size, and ``m``.
    """
    s = np.sort(z)
    d = s.shape[0]
    m = s[d - 1]
    cumsum = 0.0
    tau = -radius
    k = 0
    for j in range(d - 1, -1, -1):  # descending
        if s[j] == -np.inf:
            break
        v = s[j] - m
        cumsum += v
        t = (cumsum - radius) / (k + 1)
        if v > t:
            tau = t
            k += 1
        else:
            break
    return tau, k, m


@njit
def sort_small(a):
    """Sort a 1-D array in place; insertion sort for the short arrays we meet."""
    n = a.shape[0]
    if n > 24:
        a.sort()
        return
    for i in range(1, n):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


@njit
def simplex_threshold_buf(z, radius, buf):
    """Threshold of the projection and support size; see :func:`simplex_threshold_sort`.

    Returns ``(tau, k, m)`` with the projection ``max(z - m - tau, 0)``.
    ``buf`` is scratch space of at least ``len(z)`` entries. Candidates
    above a running lower bound on the threshold are copied there in one
    pass (in the spirit of Condat 2016), pruned further by Michelot's fixed
    point, then the few survivors are sorted and scanned exactly like the
    sort-based algorithm.
    """
    d = z.shape[0]
    # Everything runs on z - max(z): the values kept are in (-radius, 0], so
    # no running sum can overflow, whatever the magnitude of the scores
    # (the sort reference shifts the same way, so the kept values are the
    # very floats it sums).
    m = -np.inf
    for j in range(d):
        m = max(m, z[j])
    # One pass keeping the entries above a running lower bound on the
    # threshold. For ANY set A of entries, (sum(A) - radius) / |A| <= tau
    # (the positive parts (z - tau)_+ over A sum to at most radius), and so is
    # -radius: entries at or below such a bound are never in the support.
    # The bound is lowered by a margin so that rounding in the running sum
    # never drops a support entry (-inf entries are never kept).
    margin = 1e-9 * radius
    cut = -radius
    total = 0.0
    c = 0
    for j in range(d):
        v = z[j] - m
        if v > cut:
            buf[c] = v
            c += 1
            total += v
            cut = max(cut, (total - radius) / c - margin)
    # Filter by the final bound.
    c_new = 0
    total = 0.0
    for j in range(c):
        v = buf[j]
        if v > cut:
            buf[c_new] = v
            total += v
            c_new += 1
    c = c_new
    # Michelot's fixed point, with the same safety margin: keeping a few
    # extra candidates costs nothing, dropping a support entry would.
    for _ in range(64):
        bound = (total - radius) / c - margin
        c_new = 0
        total = 0.0
        for j in range(c):
            v = buf[j]
            if v > bound:
                buf[c_new] = v
                total += v
                c_new += 1
        if c_new == c:
            break
        c = c_new
    cand = buf[:c]
    sort_small(cand)
    cumsum = 0.0
    tau = -radius
    k = 0
    for j in range(c - 1, -1, -1):  # descending
        cumsum += cand[j]
        t = (cumsum - radius) / (k + 1)
        if cand[j] > t:
            tau = t
            k += 1
        else:
            break
    return tau, k, m


@njit
def simplex_threshold(z, radius):
    """Threshold ``tau`` with ``sum(max(z - tau, 0)) == radius``, and the support size.

    Entries equal to -inf are never in the support.
    """
    buf = np.empty(z.shape[0])
    tau, k, m = simplex_threshold_buf(z, radius, buf)
    return m + tau, k


@njit
def project_simplex_row(z, radius, buf, out):
    """out = argmin_{p >= 0, sum p = radius} ||p - z||^2 for one row; returns the support size."""
    tau, k, m = simplex_threshold_buf(z, radius, buf)
    for j in range(z.shape[0]):
        v = (z[j] - m) - tau
        out[j] = v if v > 0.0 else 0.0
    return k


@njit
def project_simplex_rows(z, radius, out):
    """out[i] = argmin_{p >= 0, sum p = radius} ||p - z[i]||^2 for each row."""
    buf = np.empty(z.shape[1])
    for i in range(z.shape[0]):
        project_simplex_row(z[i], radius, buf, out[i])


@njit
def sparsemax_backward_rows(p, dp, scale, out):
    """out = J^T dp with J = scale * (diag(s) - s s^T / |s|), s = (p > 0).

    One pass over each row records the support; the output is then zeroed
    and written on the support only (outputs are usually very sparse).
    """
    n, d = p.shape
    support = np.empty(d, dtype=np.int64)
    for i in range(n):
        total = 0.0
        k = 0
        for j in range(d):
            if p[i, j] > 0.0:
                total += dp[i, j]
                support[k] = j
                k += 1
        mean = total / k if k > 0 else 0.0
        out[i, :] = 0.0
        for t in range(k):
            j = support[t]
            out[i, j] = scale * (dp[i, j] - mean)
