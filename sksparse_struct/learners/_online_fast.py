"""Numba kernels of the online learners: sparse gradients, AdaGrad and perceptron updates.

The online learners (``_online.py``) update only the coordinates a
mini-batch touches; everything else a step would do to the other weights
(L2 shrinkage, the L1 proximal step, the running sums for averaging) is
deferred until the coordinate is next touched, or until the end of the
epoch, and then applied in closed form. The result is the same as updating
every weight at every step.

The sparse gradient (:class:`SparseGradient`) is what a problem's gradient
kernel writes: a mini-batch is cut into ``n_parts`` fixed parts, each
processed by one call (possibly on its own thread) that adds its gradient
entries with :func:`push`. Its layout, chosen because the coordinates are
hashed or scattered and every access misses the cache, keeps what travels
together in one row (arrays made by :func:`aligned_zeros`, rows never
straddling two cache lines):

* ``values`` of shape ``(n_params, 2 * n_parts)``: for part ``p``, column
  ``2 p`` accumulates the gradient and column ``2 p + 1`` holds the number of
  the step that last touched the coordinate (a "seen" stamp; step numbers
  stay far below 2**53, so they are exact as floats);
* ``touched[p, :n_touched[p]]`` lists the coordinates part ``p`` touched,
  each once.

The optimizer state ``opt`` of shape ``(n_params, OPT_COLUMNS)`` holds, per
coordinate, the running sum of the weights for averaging (``W_SUM``),
AdaGrad's accumulator of squared gradients (``ACC``) and the step the
coordinate was last brought up to (``LAST``).
"""

from typing import NamedTuple

import numpy as np

from ..utils._numba import njit
from ..utils._prefetch_fast import prefetch
from ..utils._sparse_gradient_fast import push

__all__ = [
    "ACC",
    "LAST",
    "OPT_COLUMNS",
    "W_SUM",
    "SparseGradient",
    "UpdateRule",
    "aligned_zeros",
    "apply_update",
    "flush_updates",
    "push",
    "push_all",
    "split_batches",
    "update_kernels",
]

# Columns of the optimizer state ``opt`` (the fourth pads a row to 32 bytes).
W_SUM = 0
ACC = 1
LAST = 2
OPT_COLUMNS = 4


class SparseGradient(NamedTuple):
    """The gradient of one mini-batch, written part by part (see the module docstring).

    Attributes
    ----------
    values : ndarray of shape (n_params, 2 * n_parts)
        Gradient and "seen" stamp of every coordinate, per part.
    touched : ndarray of int64 of shape (n_parts, n_params)
        The coordinates each part touched, in the order it touched them.
    n_touched : ndarray of int64 of shape (n_parts,)
        How many coordinates each part touched.
    """

    values: np.ndarray
    touched: np.ndarray
    n_touched: np.ndarray


class UpdateRule(NamedTuple):
    """How a batch gradient ``g`` changes the weights.

    Perceptron (``adagrad`` False): ``w_i -= g_i``. AdaGrad: ``acc_i +=
    g_i^2``, ``d_i = sqrt(acc_i + eps)``, then ``w_i <- w_i f_i -
    learning_rate g_i / d_i`` with the L2 shrinkage ``f_i = max(0, 1 -
    decay_rate / d_i)``, then the L1 proximal step (soft-thresholding at
    ``l1_rate / d_i``). ``decay_rate`` is ``learning_rate`` times the L2
    penalty, ``l1_rate`` ``learning_rate`` times the L1 penalty.
    """

    adagrad: bool
    learning_rate: float
    decay_rate: float
    l1_rate: float
    eps: float


def aligned_zeros(shape):
    """A zeroed float64 array whose data starts on a 64-byte cache line.

    With rows of 32 bytes (``opt``, and ``values`` for two parts), no row
    then straddles two lines; NumPy only guarantees 16-byte alignment.
    """
    shape = tuple(int(d) for d in np.atleast_1d(shape))
    size = int(np.prod(shape))
    raw = np.zeros(size + 8)
    skip = (-raw.ctypes.data % 64) // 8
    return raw[skip:skip + size].reshape(shape)



@njit
def push_all(indices, values, sign, grad, col, touched, n_touched, stamp):
    """:func:`push` of ``sign * values[j]`` to coordinate ``indices[j]``, for every ``j``.

    For gradients computed in Python as (indices, values) arrays, e.g. a
    joint feature map: one compiled call instead of one per entry.
    """
    for j in range(indices.shape[0]):
        n_touched = push(indices[j], sign * values[j], grad, col, touched, n_touched, stamp)
    return n_touched


@njit(internal=True)
def _shrinkage(c, r):
    """``f^r`` and ``f + f^2 + ... + f^r`` for ``f = max(0, 1 - c)``, in O(1).

    Through ``log1p`` / ``expm1``, accurate to rounding even when ``c`` is
    tiny (a loop over the ``r`` skipped steps would make the end-of-epoch
    flush of millions of weights the slowest part of training).
    """
    if c >= 1.0:
        return 0.0, 0.0
    if c == 0.0:
        return 1.0, float(r)
    t = r * np.log1p(-c)
    return np.exp(t), (1.0 - c) * -np.expm1(t) / c


@njit(internal=True)
def _shrunk_magnitude(a, c, tau, k):
    """``f^k a - tau (1 + f + ... + f^(k-1))`` for ``f = 1 - c`` (``0 <= c < 1``).

    The magnitude a weight ``a > 0`` would have after ``k`` steps of L2
    shrinkage and L1 soft-thresholding, were it never clipped at zero.
    """
    if k == 0:
        return a
    if c == 0.0:
        return a - k * tau
    t = k * np.log1p(-c)
    return np.exp(t) * a - tau * (-np.expm1(t) / c)


@njit
def _sum_of_partial_sums(c, k):
    """``sum_{j=1..k} (1 + f + ... + f^(j-1))`` for ``f = 1 - c`` (``0 <= c < 1``).

    Equal to ``sum_{i>=0} (-c)^i C(k + 1, i + 2)``; summed as that series when
    ``c k`` is small (its terms shrink by at least ``c k / 3`` each), where the
    closed form ``(k - (f + ... + f^k)) / c`` would cancel, and in closed form
    otherwise.
    """
    if c == 0.0:
        return 0.5 * k * (k + 1.0)
    if c * k > 0.1:
        fk, geo = _shrinkage(c, k)
        return (k - geo) / c
    term = 0.5 * k * (k + 1.0)  # C(k + 1, 2)
    total = term
    i = 0
    while True:
        # C(k + 1, i + 3) = C(k + 1, i + 2) (k - 1 - i) / (i + 3)
        term *= -c * (k - 1.0 - i) / (i + 3.0)
        if term == 0.0 or abs(term) <= 1e-17 * abs(total):
            break
        total += term
        i += 1
    return total


@njit
def _shrink_l1(a, c, tau, r):
    """``r`` steps of ``a <- max(0, f a - tau)`` (``f = max(0, 1 - c)``) from ``a >= 0``.

    Returns the final value and the sum of the ``r`` values after each
    step (for averaging), in O(log r): the unclipped sequence decreases, so
    the values are positive up to some step ``k*`` (found by bisection) and
    zero afterwards.
    """
    if a == 0.0 or r <= 0:
        return a, 0.0
    if c >= 1.0:
        return 0.0, 0.0
    lo = 0  # _shrunk_magnitude(a, c, tau, lo) > 0
    hi = r + 1  # beyond r, or a step where it is <= 0
    if _shrunk_magnitude(a, c, tau, r) > 0.0:
        lo = r
    else:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if _shrunk_magnitude(a, c, tau, mid) > 0.0:
                lo = mid
            else:
                hi = mid
    k = lo
    final = _shrunk_magnitude(a, c, tau, r) if k == r else 0.0
    if k == 0:
        return final, 0.0
    fk, geo = _shrinkage(c, k)
    total = a * geo - tau * _sum_of_partial_sums(c, k)
    return final, total


@njit(internal=True)
def _catch_up(wi, acc, r, rule):
    """Bring a weight over ``r`` steps in which its gradient was zero (no L1 penalty).

    Returns ``(w, s)``: the weight after them and the sum of its values after
    each of them (for averaging).
    """
    ds = 0.0
    if rule.decay_rate > 0.0:
        if r > 0 and wi != 0.0:
            # Steps last+1 .. step-1: w shrinks geometrically.
            fk, geo = _shrinkage(rule.decay_rate / np.sqrt(acc + rule.eps), r)
            ds = wi * geo
            wi *= fk
    else:
        ds = wi * r
    return wi, ds


@njit(internal=True)
def _catch_up_l1(wi, acc, r, rule):
    """:func:`_catch_up` with an L1 penalty (``rule.l1_rate > 0``)."""
    ds = 0.0
    if r > 0 and wi != 0.0:
        denom = np.sqrt(acc + rule.eps)
        a, total = _shrink_l1(abs(wi), rule.decay_rate / denom, rule.l1_rate / denom, r)
        ds = total if wi > 0.0 else -total
        wi = a if wi > 0.0 else -a
    return wi, ds


@njit
def apply_update(gradient, step, scale, w, opt, rule):
    """Apply one mini-batch update to the touched coordinates, parts in order.

    The batch gradient of coordinate ``i`` is ``scale * sum_p
    values[i, 2 p]`` (parts summed in order; the gradient columns are reset
    to zero), applied as :class:`UpdateRule` says. The steps in which ``i``
    was not touched since ``opt[i, LAST]`` are applied first, in closed
    form: AdaGrad's per-weight step only changes when the weight is touched,
    so the deferred shrinkage is exact. ``opt[i, W_SUM]`` holds the sum of
    ``w_i`` over the steps up to ``opt[i, LAST]`` (for the averaged
    weights); ``step`` is this update's number (1-based) and the stamp of the
    coordinates touched in it.
    """
    if rule.l1_rate > 0.0:
        _apply_update_share_l1(gradient, step, scale, w, opt, rule, 0, 1)
    else:
        _apply_update_share(gradient, step, scale, w, opt, rule, 0, 1)


_UPDATE_CHUNK = 4096
_UPDATE_AHEAD = 16


def _apply_update_share_kernel(l1):
    """``apply_update_share`` compiled with (``l1``) or without an L1 penalty.

    Chosen by :func:`update_kernels`; ``l1`` is a constant of the closure, so
    the kernel without it does not compile the L1 catch-up.
    """

    @njit
    def apply_update_share(gradient, step, scale, w, opt, rule, share, n_shares):
        """:func:`apply_update` restricted to the coordinates ``i % n_shares == share``.

        Threads given different shares never touch the same coordinate, and each
        coordinate sees the same operations as in :func:`apply_update`: the
        result is identical however the shares are spread over threads.

        A coordinate touched by several parts is listed by each; it is updated
        when met in the first part whose stamp it carries. Coordinates go by
        chunks in three passes: gather their state, compute the updates on
        contiguous arrays, scatter them back. The coordinates are scattered, so
        every read misses the cache; kept apart from the long chain of
        arithmetic of the lazy shrinkage, the reads overlap. The gradient rows
        are requested ``_UPDATE_AHEAD`` entries of the list ahead, and the
        weight and state of a coordinate as soon as it joins a chunk.
        """
        grad = gradient.values
        touched = gradient.touched
        n_touched = gradient.n_touched
        P = n_touched.shape[0]
        # Buffers no longer than the list (small updates are the perceptron's
        # one-sequence steps, thousands per epoch); the chunks are the same.
        size = 1
        for p in range(P):
            size += n_touched[p]
        size = min(size, _UPDATE_CHUNK)
        idx = np.empty(size, dtype=np.int64)
        G = np.empty(size)
        W = np.empty(size)
        A = np.empty(size)
        R = np.empty(size, dtype=np.int64)
        DS = np.empty(size)
        grad_flat = grad.reshape(grad.size)
        opt_flat = opt.reshape(opt.size)
        cnt = 0
        for p in range(P):
            nt = n_touched[p]
            for j in range(nt):
                if j + _UPDATE_AHEAD < nt:
                    prefetch(grad_flat, touched[p, j + _UPDATE_AHEAD] * grad.shape[1])
                i = touched[p, j]
                if n_shares > 1 and i % n_shares != share:
                    continue
                done = False
                for q in range(p):
                    if grad[i, 2 * q + 1] == step:
                        done = True
                if done:
                    continue
                prefetch(w, i)
                prefetch(opt_flat, i * OPT_COLUMNS)
                gi = 0.0
                for q in range(P):
                    gi += grad[i, 2 * q]
                    grad[i, 2 * q] = 0.0
                idx[cnt] = i
                G[cnt] = gi * scale
                cnt += 1
                if cnt == size:
                    if l1:
                        _update_chunk_l1(idx, G, W, A, R, DS, cnt, step, w, opt, rule)
                    else:
                        _update_chunk(idx, G, W, A, R, DS, cnt, step, w, opt, rule)
                    cnt = 0
        if cnt > 0:
            if l1:
                _update_chunk_l1(idx, G, W, A, R, DS, cnt, step, w, opt, rule)
            else:
                _update_chunk(idx, G, W, A, R, DS, cnt, step, w, opt, rule)

    return apply_update_share


def _update_chunk_kernel(l1):
    """``_update_chunk`` compiled with (``l1``) or without an L1 penalty."""

    @njit(internal=True)
    def update_chunk(idx, G, W, A, R, DS, cnt, step, w, opt, rule):
        """The updates of the coordinates ``idx[:cnt]`` (batch gradients ``G``)."""
        for k in range(cnt):
            i = idx[k]
            W[k] = w[i]
            R[k] = step - 1 - np.int64(opt[i, LAST])
            A[k] = opt[i, ACC]
        learning_rate = rule.learning_rate
        decay_rate = rule.decay_rate
        l1_rate = rule.l1_rate
        for k in range(cnt):
            gi = G[k]
            if l1:
                wi, ds = _catch_up_l1(W[k], A[k], R[k], rule)
            else:
                wi, ds = _catch_up(W[k], A[k], R[k], rule)
            if rule.adagrad:
                a = A[k] + gi * gi
                A[k] = a
                denom = np.sqrt(a + rule.eps)
                # The shrinkage as a factor clipped at 0: a step of
                # decay_rate / denom > 1 (little gradient seen yet) must not
                # flip and grow the weight.
                f = 1.0 - decay_rate / denom
                if f < 0.0:
                    f = 0.0
                wi = wi * f - learning_rate * gi / denom
                if l1:
                    t = l1_rate / denom
                    if wi > t:
                        wi -= t
                    elif wi < -t:
                        wi += t
                    else:
                        wi = 0.0
            else:
                wi -= gi
            W[k] = wi
            DS[k] = ds
        for k in range(cnt):
            i = idx[k]
            w[i] = W[k]
            # Same order of additions as one coordinate at a time.
            opt[i, W_SUM] = (opt[i, W_SUM] + DS[k]) + W[k]
            opt[i, LAST] = step
            opt[i, ACC] = A[k]

    return update_chunk


_update_chunk = _update_chunk_kernel(False)
_update_chunk_l1 = _update_chunk_kernel(True)
_apply_update_share = _apply_update_share_kernel(False)
_apply_update_share_l1 = _apply_update_share_kernel(True)


def split_batches(order, costs, batch_size, n_parts, part_of):
    """Share each mini-batch of ``order`` out into ``n_parts`` of about equal cost.

    Mini-batch ``b`` is ``order[b * batch_size:(b + 1) * batch_size]``;
    ``costs[i]`` is the cost of sample ``i``. Costliest first (stable), each
    sample to the part with the least cost so far (the LPT rule; ties to the
    lowest part); ``part_of`` receives the part of every entry of ``order``.
    The parts depend on the samples only, never on the number of threads,
    so results are identical for every ``n_jobs``.
    """
    order = np.asarray(order, dtype=np.int64)
    cost = np.asarray(costs, dtype=np.float64)[order]
    batch = np.arange(order.shape[0]) // batch_size
    # By batch, then costliest first; lexsort is stable, so ties keep their
    # order (NumPy sorts here: numba's generic sort compiles slowly).
    ranked = np.lexsort((-cost, batch))
    _assign_parts(ranked, cost, batch_size, n_parts, part_of)


@njit
def _assign_parts(ranked, cost, batch_size, n_parts, part_of):
    """The LPT rule of :func:`split_batches` on each batch's ranked entries."""
    load = np.empty(n_parts)
    for b in range(0, ranked.shape[0], batch_size):
        for p in range(n_parts):
            load[p] = 0.0
        for j in range(b, min(b + batch_size, ranked.shape[0])):
            i = ranked[j]
            p = 0
            for q in range(1, n_parts):
                if load[q] < load[p]:
                    p = q
            part_of[i] = p
            load[p] += cost[i]


@njit
def flush_updates(step, w, opt, rule):
    """Bring every coordinate to ``step`` (the deferred shrinkage and sums)."""
    if rule.l1_rate > 0.0:
        _flush_updates_share_l1(step, w, opt, rule, 0, 1)
    else:
        _flush_updates_share(step, w, opt, rule, 0, 1)


def _flush_updates_share_kernel(l1):
    """``flush_updates_share`` compiled with (``l1``) or without an L1 penalty."""

    @njit
    def flush_updates_share(step, w, opt, rule, share, n_shares):
        """:func:`flush_updates` on the ``share``-th of ``n_shares`` contiguous ranges."""
        n = w.shape[0]
        for i in range(share * n // n_shares, (share + 1) * n // n_shares):
            r = step - np.int64(opt[i, LAST])
            if r <= 0:
                continue
            wi = w[i]
            if wi != 0.0:
                if l1:
                    wi, ds = _catch_up_l1(wi, opt[i, ACC], r, rule)
                else:
                    wi, ds = _catch_up(wi, opt[i, ACC], r, rule)
                opt[i, W_SUM] += ds
                w[i] = wi
            opt[i, LAST] = step

    return flush_updates_share


_flush_updates_share = _flush_updates_share_kernel(False)
_flush_updates_share_l1 = _flush_updates_share_kernel(True)


def update_kernels(rule):
    """``(apply_update_share, flush_updates_share)`` compiled for ``rule``'s penalties.

    Kernels without the L1 penalty do not compile its closed-form catch-up;
    :func:`apply_update` and :func:`flush_updates` choose at run time.
    """
    if rule.l1_rate > 0.0:
        return _apply_update_share_l1, _flush_updates_share_l1
    return _apply_update_share, _flush_updates_share
