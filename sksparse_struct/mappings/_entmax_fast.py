"""Numba kernels for 1.5-entmax and its backward pass.

1.5-entmax of a score vector ``x`` is ``p = [(x / 2 - tau)_+]^2`` with the
threshold ``tau`` such that ``sum(p) == 1`` (Peters, Niculae & Martins 2019).
With ``s = x / 2`` shifted so that ``max(s) == 0``, the largest probability
is ``tau**2 <= 1``, hence ``-1 <= tau``: only entries with ``s > -1`` can be
in the support. The kernels sort just those candidates (usually a small
fraction of the row) and find ``tau`` exactly from running sums.

No validation happens here: callers pass C-contiguous float64 arrays whose
rows contain finite values or -inf (masked entries) and at least one finite
value per row.
"""

import numpy as np

from ..utils._numba import njit


@njit
def entmax15_threshold(s, buf):
    """Threshold ``tau`` and support size for ``s`` with ``max(s) == 0``.

    ``buf`` is scratch space of at least ``len(s)`` entries. With the ``k``
    largest entries in the support, ``sum_{i<=k} (s_i - tau)^2 == 1`` is a
    quadratic in ``tau``; its smaller root is kept while it stays below the
    ``k``-th largest entry.
    """
    c = 0
    for j in range(s.shape[0]):
        if s[j] > -1.0:
            buf[c] = s[j]
            c += 1
    cand = buf[:c]
    cand.sort()
    total = 0.0
    total_sq = 0.0
    tau = -1.0
    k = 0
    for j in range(c - 1, -1, -1):  # descending
        v = cand[j]
        kk = k + 1
        total += v
        total_sq += v * v
        mean = total / kk
        # Candidates lie in (-1, 0], so this variance-like term does not
        # suffer from cancellation.
        delta = 1.0 / kk - (total_sq / kk - mean * mean)
        if delta < 0.0:
            break
        t = mean - np.sqrt(delta)
        if t < v:
            tau = t
            k = kk
        else:
            break
    return tau, k


@njit
def entmax15_rows(z, half_inv_temp, out):
    """out[i] = entmax15(z[i] / temperature), with half_inv_temp = 0.5 / temperature."""
    n, d = z.shape
    s = np.empty(d)
    buf = np.empty(d)
    for i in range(n):
        m = -np.inf
        for j in range(d):
            if z[i, j] > m:
                m = z[i, j]
        for j in range(d):
            s[j] = (z[i, j] - m) * half_inv_temp
        tau, _ = entmax15_threshold(s, buf)
        total = 0.0
        for j in range(d):
            v = s[j] - tau
            if v > 0.0:
                v = v * v
                out[i, j] = v
                total += v
            else:
                out[i, j] = 0.0
        # tau is exact up to rounding; renormalise so rows sum to one.
        inv_total = 1.0 / total
        for j in range(d):
            out[i, j] *= inv_total


@njit
def entmax15_backward_rows(p, dp, inv_temp, out):
    """out = J^T dp with J = inv_temp * (diag(g) - g g^T / sum(g)), g = sqrt(p)."""
    n, d = p.shape
    for i in range(n):
        sum_g = 0.0
        dot = 0.0
        for j in range(d):
            if p[i, j] > 0.0:
                g = np.sqrt(p[i, j])
                sum_g += g
                dot += g * dp[i, j]
        ratio = dot / sum_g if sum_g > 0.0 else 0.0
        for j in range(d):
            if p[i, j] > 0.0:
                out[i, j] = inv_temp * np.sqrt(p[i, j]) * (dp[i, j] - ratio)
            else:
                out[i, j] = 0.0
