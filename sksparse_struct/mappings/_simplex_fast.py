"""Numba kernels for the Euclidean projection onto the simplex (sparsemax).

No validation happens here: callers pass C-contiguous float64 arrays whose
rows contain finite values or -inf (masked entries), never NaN or +inf.
"""

import numpy as np

from ..utils._numba import njit


@njit
def simplex_threshold(z, radius):
    """Threshold tau with sum(max(z - tau, 0)) == radius, and the support size.

    Sort-based (Held et al. 1974): the support is the longest prefix of the
    sorted scores whose entries stay above the running threshold. Entries equal
    to -inf are never in the support.
    """
    s = np.sort(z)
    d = s.shape[0]
    cumsum = 0.0
    tau = 0.0
    k = 0
    for j in range(d - 1, -1, -1):  # descending
        if s[j] == -np.inf:
            break
        cumsum += s[j]
        t = (cumsum - radius) / (k + 1)
        if s[j] > t:
            tau = t
            k += 1
        else:
            break
    return tau, k


@njit
def project_simplex_rows(z, radius, out):
    """out[i] = argmin_{p >= 0, sum p = radius} ||p - z[i]||^2 for each row."""
    for i in range(z.shape[0]):
        tau, _ = simplex_threshold(z[i], radius)
        for j in range(z.shape[1]):
            v = z[i, j] - tau
            out[i, j] = v if v > 0.0 else 0.0


@njit
def sparsemax_backward_rows(p, dp, scale, out):
    """out = J^T dp with J = scale * (diag(s) - s s^T / |s|), s = (p > 0)."""
    for i in range(p.shape[0]):
        total = 0.0
        n_support = 0
        for j in range(p.shape[1]):
            if p[i, j] > 0.0:
                total += dp[i, j]
                n_support += 1
        mean = total / n_support if n_support > 0 else 0.0
        for j in range(p.shape[1]):
            out[i, j] = scale * (dp[i, j] - mean) if p[i, j] > 0.0 else 0.0
