"""Numba kernels for the constrained softmax (Martins & Kreutzer 2017, Algs. 3-4).

``csoftmax(z; u) = argmin KL(p || softmax(z))`` subject to ``p <= u`` and
``sum(p) == 1``. The solution is ``p_i = min(u_i, exp(z_i) / Z)``: the
entries at their bound are those with the largest ``exp(z_i) / u_i``, so
after sorting the keys ``z_i - log(u_i)`` in decreasing order the clamped
set is a prefix. Everything is done in log space: the normaliser of the
unclamped suffix is kept as a (max, scaled sum) pair, so scores of +-1e6 neither
overflow nor cancel.

No validation happens here: callers pass C-contiguous float64 arrays, scores
finite or ``-inf`` (masked), bounds finite and non-negative.
"""

import numpy as np

from ..utils._numba import njit


@njit
def csoftmax_row(z, u, out):
    """Constrained softmax of one row; returns the number of clamped entries."""
    d = z.shape[0]
    idx = np.empty(d, dtype=np.int64)
    keys = np.empty(d)
    top = -np.inf
    for i in range(d):
        if z[i] > top:
            top = z[i]
    m = 0
    for i in range(d):
        out[i] = 0.0  # masked entries stay at 0
        if z[i] == -np.inf:
            continue
        idx[m] = i
        # u = 0 gives key +inf: clamped (to 0) before anything else. Keys are
        # taken relative to the top score so that log(u) is not lost next to
        # a score of 1e6.
        keys[m] = np.inf if u[i] == 0.0 else (z[i] - top) - np.log(u[i])
        m += 1
    order = np.argsort(-keys[:m])  # decreasing key
    sorted_idx = np.empty(m, dtype=np.int64)
    for k in range(m):
        sorted_idx[k] = idx[order[k]]

    # Suffix normalisers as (max, sum of exp(z - max)) pairs: probabilities
    # are then exp(z_i - smax[k]) / ssum[k], where z_i - smax[k] is a
    # difference of two scores (exact when they are close), so nothing is
    # lost to the magnitude of the scores.
    smax = np.empty(m)
    ssum = np.empty(m)
    run_max = -np.inf
    run_sum = 0.0
    for k in range(m - 1, -1, -1):
        v = z[sorted_idx[k]]
        if v > run_max:
            run_sum = run_sum * np.exp(run_max - v) + 1.0
            run_max = v
        else:
            run_sum += np.exp(v - run_max)
        smax[k] = run_max
        ssum[k] = run_sum

    s = 0.0  # mass taken by the clamped entries
    k = 0
    while k < m:
        rest = 1.0 - s
        if rest <= 0.0:
            break
        i = sorted_idx[k]
        # Clamp when exp(z_i) (1 - s) / Z_suffix > u_i, compared in logs so
        # that tiny bounds and underflowing probabilities behave.
        log_u = -np.inf if u[i] == 0.0 else np.log(u[i])
        if (z[i] - smax[k]) - np.log(ssum[k]) + np.log(rest) > log_u:
            out[i] = u[i]
            s += u[i]
            k += 1
        else:
            break
    n_clamped = k
    rest = 1.0 - s
    if rest > 0.0 and k < m:
        scale = rest / ssum[k]
        for kk in range(k, m):
            i = sorted_idx[kk]
            v = scale * np.exp(z[i] - smax[k])
            # rounding must never push an entry above its bound
            out[i] = v if v < u[i] else u[i]
    return n_clamped


@njit
def csoftmax_rows(z, u, out):
    """Row-wise :func:`csoftmax_row`."""
    for r in range(z.shape[0]):
        csoftmax_row(z[r], u[r], out[r])


@njit
def csoftmax_backward_row(p, u, dp, dz, du):
    """VJP of csoftmax for one row (Martins & Kreutzer 2017, Prop. 1, Alg. 4).

    Free set A = {p < u}; ``m = sum_A p dp / sum_A p`` (the paper divides by
    ``1 - sum_{not A} u``, equal in exact arithmetic). ``dz = p (dp - m)`` on
    A, ``du = dp - m`` off A. When ``sum_A p == 0`` the output does not move
    with ``z`` and ``m`` is taken as 0.
    """
    num = 0.0
    den = 0.0
    for j in range(p.shape[0]):
        if p[j] < u[j]:
            num += p[j] * dp[j]
            den += p[j]
    mean = num / den if den > 0.0 else 0.0
    for j in range(p.shape[0]):
        if p[j] < u[j]:
            dz[j] = p[j] * (dp[j] - mean)
            du[j] = 0.0
        else:
            dz[j] = 0.0
            du[j] = dp[j] - mean


@njit
def csoftmax_backward_rows(p, u, dp, dz, du):
    """Row-wise :func:`csoftmax_backward_row`."""
    for r in range(p.shape[0]):
        csoftmax_backward_row(p[r], u[r], dp[r], dz[r], du[r])
