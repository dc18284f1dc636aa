"""Numba kernels for 1.5-entmax and its backward pass.

1.5-entmax of a score vector ``x`` is ``p = [(x / 2 - tau)_+]^2`` with the
threshold ``tau`` such that ``sum(p) == 1`` (Peters, Niculae & Martins 2019).
With ``s = x / 2`` shifted so that ``max(s) == 0``, the largest probability
is ``tau**2 <= 1``, hence ``tau >= -1``: only entries with ``s > -1`` can be
in the support. The kernels collect those candidates in a branch-free pass,
prune them with a few Newton steps on
``F(tau) = sum((s - tau)_+^2) - 1`` (convex and decreasing, so Newton from
the left gives increasing lower bounds on the threshold), sort the few
survivors and find ``tau`` exactly from running sums over the sorted prefix.

No validation happens here: callers pass C-contiguous float64 arrays whose
rows contain finite values or -inf (masked entries) and at least one finite
value per row.
"""

import numpy as np

from ..utils._numba import njit
from ._simplex_fast import sort_small

# Candidates within this distance below a Newton lower bound are kept, so that
# rounding in the bound can never drop an entry of the support.
_PRUNE_MARGIN = 1e-10


@njit
def entmax15_threshold_sorted(cand):
    """Exact threshold from candidates sorted ascending, all in (-1, 0].

    With the ``k`` largest entries in the support, ``sum_{i<=k} (s_i - tau)^2
    == 1`` is a quadratic in ``tau``; its smaller root is kept while it stays
    below the ``k``-th largest entry. Returns ``(tau, k)``.
    """
    c = cand.shape[0]
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
def entmax15_row(z, half_inv_temp, buf, out):
    """out = entmax15(z / temperature) for one row; returns the support size.

    ``half_inv_temp`` is ``0.5 / temperature``; ``buf`` is scratch space of at
    least ``len(z)`` entries.
    """
    d = z.shape[0]
    # Row max with four independent accumulators (no loop-carried
    # dependency on a single one), then a branch-free pass that writes every
    # scaled score and advances only past candidates (-inf never counts).
    m0 = -np.inf
    m1 = -np.inf
    m2 = -np.inf
    m3 = -np.inf
    j = 0
    while j + 4 <= d:
        a0 = z[j]
        a1 = z[j + 1]
        a2 = z[j + 2]
        a3 = z[j + 3]
        m0 = a0 if a0 > m0 else m0
        m1 = a1 if a1 > m1 else m1
        m2 = a2 if a2 > m2 else m2
        m3 = a3 if a3 > m3 else m3
        j += 4
    while j < d:
        a0 = z[j]
        m0 = a0 if a0 > m0 else m0
        j += 1
    m = max(max(m0, m1), max(m2, m3))
    lower = -1.0
    c_new = 0
    for j in range(d):
        s = (z[j] - m) * half_inv_temp
        buf[c_new] = s
        c_new += s > lower
    c = c_new
    # Newton iterations on F(tau) = sum((s - tau)_+^2) - 1 from the lower
    # bound: F is convex and decreasing, so the iterates stay below the
    # threshold. Branch-free sums; stop once the number of entries above
    # tau no longer changes, then keep only those (minus a rounding margin).
    tau = lower
    k_prev = -1
    for _ in range(64):
        f = -1.0
        g = 0.0
        k = 0
        for j in range(c):
            w = buf[j] - tau
            w = w if w > 0.0 else 0.0
            f += w * w
            g += w
            k += w > 0.0
        if f <= 0.0 or g <= 0.0 or k == k_prev:
            break
        k_prev = k
        tau += 0.5 * f / g
    bound = tau - _PRUNE_MARGIN
    c_new = 0
    for j in range(c):
        v = buf[j]
        if v > bound:
            buf[c_new] = v
            c_new += 1
    c = c_new
    cand = buf[:c]
    sort_small(cand)
    tau, k = entmax15_threshold_sorted(cand)
    total = 0.0
    for j in range(c - k, c):
        v = cand[j] - tau
        total += v * v
    # tau is exact up to rounding; dividing by the total makes rows sum to one.
    inv_total = 1.0 / total
    for j in range(d):
        v = (z[j] - m) * half_inv_temp - tau
        out[j] = v * v * inv_total if v > 0.0 else 0.0
    return k


@njit
def entmax15_rows(z, half_inv_temp, out):
    """out[i] = entmax15(z[i] / temperature), with half_inv_temp = 0.5 / temperature."""
    buf = np.empty(z.shape[1])
    for i in range(z.shape[0]):
        entmax15_row(z[i], half_inv_temp, buf, out[i])


@njit
def entmax15_backward_rows(p, dp, inv_temp, out):
    """out = J^T dp with J = inv_temp * (diag(g) - g g^T / sum(g)), g = sqrt(p).

    One pass over each row records the support; the output is then zeroed
    and written on the support only (outputs are usually very sparse).
    """
    n, d = p.shape
    support = np.empty(d, dtype=np.int64)
    for i in range(n):
        sum_g = 0.0
        dot = 0.0
        k = 0
        for j in range(d):
            if p[i, j] > 0.0:
                g = np.sqrt(p[i, j])
                sum_g += g
                dot += g * dp[i, j]
                support[k] = j
                k += 1
        ratio = dot / sum_g if sum_g > 0.0 else 0.0
        out[i, :] = 0.0
        for t in range(k):
            j = support[t]
            out[i, j] = inv_temp * np.sqrt(p[i, j]) * (dp[i, j] - ratio)
