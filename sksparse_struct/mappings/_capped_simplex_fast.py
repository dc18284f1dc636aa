"""Numba kernels for the Euclidean projection onto a capped (box-constrained) simplex.

Solves, for each row, ``argmin ||p - z||^2`` subject to ``lo <= p <= hi`` and
``sum(p) == radius``. The solution is ``p_i = clip(z_i - tau, lo_i, hi_i)``
for one threshold ``tau``; ``g(tau) = sum_i clip(z_i - tau, lo_i, hi_i)`` is
continuous, non-increasing and piecewise linear, with breakpoints
``z_i - hi_i`` (below it, entry i sits at its upper bound) and ``z_i - lo_i``
(above it, entry i sits at its lower bound).

Both search kernels return a *bracket* ``[tau_lo, tau_hi]`` that contains the
threshold and has no breakpoint strictly inside; :func:`capped_fill` then
classifies every entry from the bracket alone (exact comparisons), computes
``tau`` from the classes in index order and writes ``p``. Because the final
pass is shared, the sort and linear kernels agree to rounding whenever they
find the same classes, and bound entries get their bound *exactly* (the
backward pass tests ``p == hi`` with ``==``).

No validation happens here: callers pass C-contiguous float64 arrays with
finite bounds ``lo <= hi``; scores are finite or ``-inf`` (masked: the entry
stays at its lower bound).
"""

import numpy as np

from ..utils._numba import njit

# Deterministic pseudo-random pivots (a 64-bit LCG, Knuth's MMIX constants):
# the linear-time kernel must give the same result on every call.
_LCG_MUL = 6364136223846793005
_LCG_ADD = 1442695040888963407
_LCG_SEED = 88172645463325252


@njit
def capped_bracket_sort(z, lo, hi, radius):
    """Bracket of the threshold by sorting all breakpoints, O(d log d).

    Sweeps the breakpoints in decreasing order keeping ``g(tau) = c - n tau``
    on the current segment, and stops at the first breakpoint where ``g``
    reaches ``radius``.
    """
    d = z.shape[0]
    vals = np.empty(2 * d)
    owner = np.empty(2 * d, dtype=np.int64)  # entry index, +d for z - hi
    m = 0
    c = 0.0
    for i in range(d):
        c += lo[i]  # tau = +inf: every entry at its lower bound
        if z[i] == -np.inf:
            continue
        vals[m] = z[i] - lo[i]
        owner[m] = i
        m += 1
        vals[m] = z[i] - hi[i]
        owner[m] = i + d
        m += 1
    order = np.argsort(vals[:m])
    n = 0
    prev = np.inf
    for k in range(m - 1, -1, -1):  # decreasing breakpoints
        v = vals[order[k]]
        if c - n * v >= radius:
            return v, prev
        j = owner[order[k]]
        if j < d:  # leaves its lower bound, becomes free
            c += z[j] - lo[j]
            n += 1
        else:  # reaches its upper bound
            j -= d
            c += hi[j] - z[j]
            n -= 1
        prev = v
    # Only reached when sum(hi) < radius (rounding): everything at the cap.
    return -np.inf, prev


@njit
def _lcg_next(state):
    return state * _LCG_MUL + _LCG_ADD


@njit
def _lcg_index(state, m):
    return ((state >> 33) & 0x7FFFFFFF) % m


@njit
def _candidate(z, lo, hi, i, t_lo, t_hi, state):
    """A breakpoint of entry i strictly inside (t_lo, t_hi); one must exist."""
    a = z[i] - hi[i]
    b = z[i] - lo[i]
    a_in = t_lo < a < t_hi
    b_in = t_lo < b < t_hi
    if a_in and b_in:
        return a if (state >> 40) & 1 else b
    return a if a_in else b


@njit
def capped_bracket_linear(z, lo, hi, radius, work):
    """Bracket of the threshold in expected O(d) time (Pardalos & Kovoor 1990).

    Keeps a working set of entries that still have a breakpoint strictly
    inside the current bracket, and running sums for the entries already
    resolved (at lower bound, at upper bound, or free on the whole bracket).
    Each round evaluates ``g`` at a pivot breakpoint (median of three drawn at
    deterministic pseudo-random positions), halves the bracket, and drops the
    entries that became resolved. ``work`` is an int64 scratch array of
    length ``d``.
    """
    d = z.shape[0]
    m = 0
    s_fixed = 0.0  # sum of bounds of resolved bound entries (and masked ones)
    s_free = 0.0  # sum of scores of resolved free entries
    n_free = 0
    for i in range(d):
        if z[i] == -np.inf:
            s_fixed += lo[i]
        else:
            work[m] = i
            m += 1
    t_lo = -np.inf
    t_hi = np.inf
    state = np.int64(_LCG_SEED)
    while m > 0:
        state = _lcg_next(state)
        c0 = _candidate(z, lo, hi, work[_lcg_index(state, m)], t_lo, t_hi, state)
        state = _lcg_next(state)
        c1 = _candidate(z, lo, hi, work[_lcg_index(state, m)], t_lo, t_hi, state)
        state = _lcg_next(state)
        c2 = _candidate(z, lo, hi, work[_lcg_index(state, m)], t_lo, t_hi, state)
        # median of three
        if c0 > c1:
            c0, c1 = c1, c0
        if c1 > c2:
            c1 = c2
        pivot = c0 if c0 > c1 else c1

        g = s_fixed + s_free - n_free * pivot
        for k in range(m):
            i = work[k]
            v = z[i] - pivot
            if v < lo[i]:
                v = lo[i]
            elif v > hi[i]:
                v = hi[i]
            g += v
        if g > radius:  # too much mass: the threshold is larger
            t_lo = pivot
        elif g < radius:
            t_hi = pivot
        else:
            t_lo = pivot
            t_hi = pivot

        # Drop the entries with no breakpoint left strictly inside the bracket.
        kept = 0
        for k in range(m):
            i = work[k]
            a = z[i] - hi[i]
            b = z[i] - lo[i]
            if b <= t_lo:
                s_fixed += lo[i]
            elif a >= t_hi:
                s_fixed += hi[i]
            elif a <= t_lo and b >= t_hi:
                s_free += z[i]
                n_free += 1
            else:
                work[kept] = i
                kept += 1
        m = kept
    return t_lo, t_hi


@njit
def capped_fill(z, lo, hi, radius, t_lo, t_hi, out):
    """Classify entries from a breakpoint-free bracket, compute tau, write p.

    Returns the threshold (NaN when no entry is free: any tau in the bracket
    then gives the same ``p``).
    """
    d = z.shape[0]
    total = 0.0
    n_free = 0
    for i in range(d):
        if z[i] == -np.inf or z[i] - lo[i] <= t_lo:
            total += lo[i]
        elif z[i] - hi[i] >= t_hi:
            total += hi[i]
        else:
            total += z[i]
            n_free += 1
    tau = (total - radius) / n_free if n_free > 0 else np.nan
    for i in range(d):
        if z[i] == -np.inf or z[i] - lo[i] <= t_lo:
            out[i] = lo[i]
        elif z[i] - hi[i] >= t_hi:
            out[i] = hi[i]
        else:
            # tau can land a rounding error outside the bracket: clip.
            v = z[i] - tau
            if v < lo[i]:
                v = lo[i]
            elif v > hi[i]:
                v = hi[i]
            out[i] = v
    return tau


@njit
def project_capped_row_sort(z, lo, hi, radius, out):
    """One row, sort-based bracket."""
    t_lo, t_hi = capped_bracket_sort(z, lo, hi, radius)
    return capped_fill(z, lo, hi, radius, t_lo, t_hi, out)


@njit
def project_capped_row_linear(z, lo, hi, radius, work, out):
    """One row, expected-linear-time bracket; ``work`` is int64 scratch of length d."""
    t_lo, t_hi = capped_bracket_linear(z, lo, hi, radius, work)
    return capped_fill(z, lo, hi, radius, t_lo, t_hi, out)


@njit
def project_capped_rows_sort(z, lo, hi, radius, out):
    """Row-wise projection onto {lo <= p <= hi, sum p = radius}, sort kernel."""
    for r in range(z.shape[0]):
        project_capped_row_sort(z[r], lo[r], hi[r], radius, out[r])


@njit
def project_capped_rows_linear(z, lo, hi, radius, out):
    """Row-wise projection onto {lo <= p <= hi, sum p = radius}, linear kernel."""
    work = np.empty(z.shape[1], dtype=np.int64)
    for r in range(z.shape[0]):
        project_capped_row_linear(z[r], lo[r], hi[r], radius, work, out[r])


@njit
def csparsemax_backward_row(p, u, dp, dz, du):
    """VJP of csparsemax for one row (Malaviya et al. 2018, Prop. 1).

    Free set F = {0 < p < u}, upper-active set A = {p == u}; with
    ``m = mean_F(dp)``: ``dz = dp - m`` on F, ``du = dp - m`` on A, zero
    elsewhere. When F is empty ``p`` is locally constant in ``z`` and ``m`` is
    taken as 0 (see the public docstring).
    """
    total = 0.0
    n_free = 0
    for j in range(p.shape[0]):
        if 0.0 < p[j] < u[j]:
            total += dp[j]
            n_free += 1
    mean = total / n_free if n_free > 0 else 0.0
    for j in range(p.shape[0]):
        if p[j] == u[j]:
            dz[j] = 0.0
            du[j] = dp[j] - mean
        elif p[j] > 0.0:
            dz[j] = dp[j] - mean
            du[j] = 0.0
        else:
            dz[j] = 0.0
            du[j] = 0.0


@njit
def csparsemax_backward_rows(p, u, dp, dz, du):
    """Row-wise :func:`csparsemax_backward_row`."""
    for r in range(p.shape[0]):
        csparsemax_backward_row(p[r], u[r], dp[r], dz[r], du[r])
