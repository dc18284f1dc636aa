"""Numba kernels for fertility-bounded attention (Malaviya et al. 2018, eq. 5).

At step t the bounds are the fertility left over, ``u_t = f - sum_{s<t} a_s``
(tracked as a running remainder so that an exhausted word gets a bound of
exactly 0), and ``a_t = mapping(z_t, u_t)``. One forward and one backward
kernel per mapping: kernels call module-level kernels, never receive one as
an argument (a cached numba function that receives another jitted function
as an argument misses the on-disk cache in every new process).

Bounds larger than 1 never bind (``p <= 1``), so the bound handed to the
mapping is ``min(remaining, _BOUND_CAP)``: this allows an infinite fertility
(the paper's ``<sink>`` token) without infinities in the kernels, and
changes neither outputs nor gradients.

Caching caveat: numba's on-disk cache of these kernels is keyed on this file
only. After editing ``_capped_simplex_fast.py`` or ``_csoftmax_fast.py``,
touch this file (or delete its ``__pycache__`` entries) so the inlined callees
are recompiled.
"""

import numpy as np

from ..utils._numba import njit
from ._capped_simplex_fast import csparsemax_backward_row, project_capped_row_linear
from ._csoftmax_fast import csoftmax_backward_row, csoftmax_row

_BOUND_CAP = 2.0
# A step is infeasible when its bounds sum (over unmasked words) below
# 1 - _STEP_TOL; smaller shortfalls are accumulated rounding of earlier steps.
_STEP_TOL = 1e-9


@njit
def _step_bounds(z, remaining, u):
    """u = min(remaining, cap); returns the sum of u over unmasked entries."""
    total = 0.0
    for j in range(z.shape[0]):
        v = remaining[j]
        u[j] = v if v < _BOUND_CAP else _BOUND_CAP
        if z[j] != -np.inf:
            total += u[j]
    return total


@njit
def _consume(remaining, a):
    # a <= u <= remaining holds exactly, so the difference is exactly >= 0 and
    # a word whose bound was taken in full is left with exactly 0.
    for j in range(remaining.shape[0]):
        remaining[j] = remaining[j] - a[j]


@njit
def fertility_csparsemax(scores, fertility, out):
    """Forward with csparsemax; returns -1, or the first infeasible step."""
    d = scores.shape[1]
    remaining = fertility.copy()
    u = np.empty(d)
    lo = np.zeros(d)
    work = np.empty(d, dtype=np.int64)
    for t in range(scores.shape[0]):
        if _step_bounds(scores[t], remaining, u) < 1.0 - _STEP_TOL:
            return t
        project_capped_row_linear(scores[t], lo, u, 1.0, work, out[t])
        _consume(remaining, out[t])
    return -1


@njit
def fertility_csoftmax(scores, fertility, out):
    """Forward with csoftmax; returns -1, or the first infeasible step."""
    d = scores.shape[1]
    remaining = fertility.copy()
    u = np.empty(d)
    for t in range(scores.shape[0]):
        if _step_bounds(scores[t], remaining, u) < 1.0 - _STEP_TOL:
            return t
        csoftmax_row(scores[t], u, out[t])
        _consume(remaining, out[t])
    return -1


@njit
def _recompute_bounds(attention, fertility, bounds):
    """Bounds of every step, replaying the forward recurrence bit for bit."""
    remaining = fertility.copy()
    for t in range(attention.shape[0]):
        for j in range(attention.shape[1]):
            v = remaining[j]
            bounds[t, j] = v if v < _BOUND_CAP else _BOUND_CAP
        _consume(remaining, attention[t])


@njit
def _accumulate_bound_grad(bounds_t, du, u_bar):
    # u_t = min(r_t, cap): gradient flows to r_t only below the cap (and du
    # is 0 there anyway, as p <= 1 < cap).
    for j in range(u_bar.shape[0]):
        if bounds_t[j] < _BOUND_CAP:
            u_bar[j] += du[j]


@njit
def fertility_csparsemax_backward(attention, fertility, d_attention, d_scores, d_fertility):
    """Reverse-mode through the csparsemax recurrence.

    ``r_{t+1} = r_t - a_t`` and ``u_t = min(r_t, cap)``; ``r_bar`` is the
    adjoint of the remainder entering the step being processed.
    """
    n_steps, d = attention.shape
    bounds = np.empty((n_steps, d))
    _recompute_bounds(attention, fertility, bounds)
    r_bar = np.zeros(d)
    a_bar = np.empty(d)
    du = np.empty(d)
    for t in range(n_steps - 1, -1, -1):
        for j in range(d):
            a_bar[j] = d_attention[t, j] - r_bar[j]
        csparsemax_backward_row(attention[t], bounds[t], a_bar, d_scores[t], du)
        _accumulate_bound_grad(bounds[t], du, r_bar)
    for j in range(d):
        d_fertility[j] = r_bar[j]


@njit
def fertility_csoftmax_backward(attention, fertility, d_attention, d_scores, d_fertility):
    """Reverse-mode through the csoftmax recurrence (see the csparsemax one)."""
    n_steps, d = attention.shape
    bounds = np.empty((n_steps, d))
    _recompute_bounds(attention, fertility, bounds)
    r_bar = np.zeros(d)
    a_bar = np.empty(d)
    du = np.empty(d)
    for t in range(n_steps - 1, -1, -1):
        for j in range(d):
            a_bar[j] = d_attention[t, j] - r_bar[j]
        csoftmax_backward_row(attention[t], bounds[t], a_bar, d_scores[t], du)
        _accumulate_bound_grad(bounds[t], du, r_bar)
    for j in range(d):
        d_fertility[j] = r_bar[j]
