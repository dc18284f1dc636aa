"""Numba kernels for softmax and its backward pass.

No validation happens here: callers pass C-contiguous float64 arrays whose
rows contain finite values or -inf (masked entries) and at least one finite
value per row.
"""

import numpy as np

from ..utils._numba import njit


@njit
def softmax_rows(z, inv_temp, out):
    """out[i] = softmax(z[i] * inv_temp), shifted by the row max for stability."""
    n, d = z.shape
    for i in range(n):
        m = -np.inf
        for j in range(d):
            if z[i, j] > m:
                m = z[i, j]
        total = 0.0
        for j in range(d):
            # exp(-inf) == 0, so masked entries get exactly zero.
            e = np.exp((z[i, j] - m) * inv_temp)
            out[i, j] = e
            total += e
        inv_total = 1.0 / total
        for j in range(d):
            out[i, j] *= inv_total


@njit
def logsumexp_rows(z, inv_temp, out):
    """out[i] = log(sum_j exp(z[i, j] * inv_temp)), without overflow."""
    n, d = z.shape
    for i in range(n):
        m = -np.inf
        for j in range(d):
            if z[i, j] > m:
                m = z[i, j]
        total = 0.0
        for j in range(d):
            total += np.exp((z[i, j] - m) * inv_temp)
        out[i] = m * inv_temp + np.log(total)


@njit
def softmax_backward_rows(p, dp, inv_temp, out):
    """out = J^T dp with J = inv_temp * (diag(p) - p p^T)."""
    n, d = p.shape
    for i in range(n):
        dot = 0.0
        for j in range(d):
            dot += p[i, j] * dp[i, j]
        for j in range(d):
            out[i, j] = inv_temp * p[i, j] * (dp[i, j] - dot)
