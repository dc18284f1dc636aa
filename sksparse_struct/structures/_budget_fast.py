"""Numba kernels for the Budget structure: log-space dynamic programs over counts.

A Budget structure is a subset of K items whose size is allowed (at most B,
or exactly B). With item scores ``s``, two tables are filled in log space:

- ``F[i, j]``: log of the sum of ``exp(score)`` over subsets of the first
  ``i`` items with exactly ``j`` items (the elementary symmetric polynomials);
- ``G[i, c]``: log of the sum over subsets ``T`` of items ``i..K-1`` such that
  ``c + |T|`` is an allowed size ("completions" of a prefix holding ``c``
  items).

Then ``log Z = G[0, 0]`` and the marginal of item ``i`` is
``sum_a exp(F[i, a] + s[i] + G[i + 1, a + 1] - log Z)``: O(K B) time.

The backward pass is the Hessian of ``log Z`` applied to a direction (the
Hessian is symmetric, so this Jacobian-vector product is also the
vector-Jacobian product). It is computed by carrying the directional
derivative (tangent) of every table entry along the same recursions: each
log-sum-exp's tangent is a convex combination of its inputs' tangents, so no
cancellation of large numbers occurs, and ``-inf`` entries simply have a zero
tangent.

``b`` is the effective budget (at most K), ``exact`` whether the size must be
exactly ``b``. No validation: C-contiguous float64 scores, ``-inf`` allowed.
"""

import numpy as np

from ..utils._numba import njit

NEG_INF = -np.inf


@njit
def _logaddexp(a, b):
    hi = a if a > b else b
    if hi == NEG_INF:
        return NEG_INF
    lo = b if a > b else a
    return hi + np.log1p(np.exp(lo - hi))


@njit
def _weight(x, total):
    # exp(x - total) with exp(-inf - finite) = 0; total = -inf only when every
    # input is -inf, and then the entry's tangent is 0 anyway.
    if x == NEG_INF or total == NEG_INF:
        return 0.0
    return np.exp(x - total)


@njit
def budget_tables(s, b, exact):
    """The log-space tables ``F`` (K+1, b+1) and ``G`` (K+1, b+2)."""
    k = s.shape[0]
    f = np.full((k + 1, b + 1), NEG_INF)
    f[0, 0] = 0.0
    # A prefix of i items holds at most i of them: entries beyond stay -inf.
    for i in range(k):
        f[i + 1, 0] = f[i, 0]
        for j in range(1, min(b, i + 1) + 1):
            f[i + 1, j] = _logaddexp(f[i, j], f[i, j - 1] + s[i])
    g = np.full((k + 1, b + 2), NEG_INF)
    for c in range(b + 1):
        if (not exact) or c == b:
            g[k, c] = 0.0
    for i in range(k - 1, -1, -1):
        for c in range(min(b, i) + 1):
            g[i, c] = _logaddexp(g[i + 1, c], s[i] + g[i + 1, c + 1])
    return f, g


@njit
def budget_tangents(s, v, f, g, b):
    """Directional derivatives ``dF``, ``dG`` of the tables in direction ``v``."""
    k = s.shape[0]
    df = np.zeros((k + 1, b + 1))
    for i in range(k):
        for j in range(min(b, i + 1) + 1):
            total = f[i + 1, j]
            if total == NEG_INF:
                continue
            d = _weight(f[i, j], total) * df[i, j]
            if j > 0:
                w = _weight(f[i, j - 1] + s[i], total)
                if w > 0.0:
                    d += w * (df[i, j - 1] + v[i])
            df[i + 1, j] = d
    dg = np.zeros((k + 1, b + 2))
    for i in range(k - 1, -1, -1):
        for c in range(min(b, i) + 1):
            total = g[i, c]
            if total == NEG_INF:
                continue
            d = _weight(g[i + 1, c], total) * dg[i + 1, c]
            w = _weight(s[i] + g[i + 1, c + 1], total)
            if w > 0.0:
                d += w * (v[i] + dg[i + 1, c + 1])
            dg[i, c] = d
    return df, dg


@njit
def budget_marginals(s, b, exact):
    """Marginals ``mu`` (K,) and ``log Z``; ``log Z = -inf`` if nothing is feasible."""
    k = s.shape[0]
    f, g = budget_tables(s, b, exact)
    log_z = g[0, 0]
    mu = np.zeros(k)
    if log_z == NEG_INF:
        return mu, log_z
    for i in range(k):
        if s[i] == NEG_INF:
            continue
        acc = 0.0
        for a in range(min(b, i + 1)):
            acc += _weight(f[i, a] + s[i] + g[i + 1, a + 1], log_z)
        mu[i] = acc
    return mu, log_z


@njit
def budget_marginals_jvp(s, v, b, exact):
    """Directional derivative of the marginals in direction ``v`` (= H v)."""
    k = s.shape[0]
    f, g = budget_tables(s, b, exact)
    log_z = g[0, 0]
    if log_z == NEG_INF:
        return np.zeros(k)
    df, dg = budget_tangents(s, v, f, g, b)
    d_log_z = dg[0, 0]
    out = np.zeros(k)
    for i in range(k):
        if s[i] == NEG_INF:
            continue
        acc = 0.0
        for a in range(min(b, i + 1)):
            w = _weight(f[i, a] + s[i] + g[i + 1, a + 1], log_z)
            if w > 0.0:
                acc += w * (df[i, a] + v[i] + dg[i + 1, a + 1] - d_log_z)
        out[i] = acc
    return out
