"""Online learners: mini-batch AdaGrad and the averaged perceptron, on sparse gradients.

A learner sees a *problem*, never a model, a loss or data. An online
problem is any object with:

``n_params``
    The number of weights.
``sample_costs()``
    A float array, one entry per sample: how long a sample's gradient takes
    to compute (e.g. its number of tokens). Each mini-batch is shared out
    into a fixed number of parts of about equal cost.
``batch_gradient(w, sample_ids, gradient, part, step)``
    Adds the gradient of ``sum_{i in sample_ids} loss_i(w)`` to part
    ``part`` of ``gradient`` (a :class:`SparseGradient`; compiled gradient
    kernels write it with ``learners._online_fast.push``), sets
    ``gradient.n_touched[part]``, and returns a 1-D float array of
    statistics summed over the samples, whose first entry is the sum of
    the losses (the others are the problem's own: a second loss, a count of
    solver failures, ...). Called for the parts of a batch at the same
    time from several threads: it must only write its own part.
``score(w, sample_ids)``
    Only needed for early stopping on held-out samples: a quality measure
    of ``w`` on them (higher is better).
``epoch_batches(order, batch_size, rng)``
    Optional. The epoch's mini-batches (arrays of sample ids) from the
    epoch's shuffled ``order``, e.g. of samples of similar sizes; ``rng``
    (the learner's) may shuffle them. By default, consecutive runs of
    ``batch_size`` samples of ``order``.
``sequential_steps(w, sample_ids, gradient, first_step, scale, opt, rule)``
    Optional. With ``batch_size=1``, a Python round trip per sample can cost
    more than the sample itself; a problem may then run the whole epoch in
    one compiled call: for each sample in order, its gradient into part 0
    of ``gradient`` at step ``first_step + t``, then
    ``learners._online_fast.apply_update(gradient, step, scale, w, opt,
    rule)``. The same operations as the loop here, so the same result. It
    returns the statistics summed in sample order, or None to decline.

:func:`minimize_online` runs the epochs: it shuffles the samples, cuts each
mini-batch into parts, asks the problem for the parts' gradients (on
threads), and updates the weights the batch touched, AdaGrad's way or the
perceptron's (:class:`~sksparse_struct.learners._online_fast.UpdateRule`).
Weights it does not touch are brought up to date lazily, in closed form,
when they are next touched or at the end of an epoch, so a step costs time
in proportion to the coordinates it touches, not to ``n_params``. The parts
of a batch and their order of summation depend on the samples only, so the
result is the same for every ``n_jobs``.
"""

import time
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np
from sklearn.utils import check_random_state

from ..utils._validation import check_integer, check_positive_scalar
from ._online_fast import (
    OPT_COLUMNS,
    W_SUM,
    SparseGradient,
    UpdateRule,
    aligned_zeros,
    split_batches,
    update_kernels,
)

__all__ = ["EarlyStopping", "OnlineEpoch", "OnlineResult", "SparseGradient", "minimize_online"]

_METHODS = ("adagrad", "perceptron")
# AdaGrad's denominator is sqrt(accumulated squared gradients + _EPS).
_EPS = 1e-8
# Below this many touched coordinates, one thread updates them all (handing
# the work to a thread pool costs more than it saves).
_THREADED_UPDATE = 4096


def _serial(func, items):
    return [func(x) for x in items]


def _batches(problem, order, costs, batch_size, n_parts, rng):
    """The epoch's mini-batches of ``order``, each with the part of every sample.

    Consecutive runs of ``batch_size`` samples, or the problem's own cut
    (``problem.epoch_batches``); each shared out by :func:`split_batches`.
    """
    if hasattr(problem, "epoch_batches"):
        for batch in problem.epoch_batches(order, batch_size, rng):
            batch = np.asarray(batch, dtype=np.int64)
            part_of = np.empty(batch.shape[0], dtype=np.int64)
            split_batches(batch, costs, batch.shape[0], n_parts, part_of)
            yield batch, part_of
        return
    part_of = np.empty(order.shape[0], dtype=np.int64)
    split_batches(order, costs, batch_size, n_parts, part_of)
    for b in range(0, order.shape[0], batch_size):
        yield order[b:b + batch_size], part_of[b:b + batch_size]


class EarlyStopping:
    """The stopping rule of the online estimators: ``n_iter_no_change`` epochs without progress.

    After each epoch, :meth:`update` gets the epoch's mean training loss and,
    with held-out samples, their score and the epoch's weights. An epoch
    makes progress when the score rises above the best one so far plus
    ``tol`` (with held-out samples) or the loss falls below the best one
    minus ``tol`` (without); the run stops after ``n_iter_no_change``
    epochs in a row without. The weights of the best-scoring epoch are kept
    (``best_coef``). ``tol=None`` never stops.

    Parameters
    ----------
    tol : float or None
    n_iter_no_change : int

    Examples
    --------
    >>> rule = EarlyStopping(tol=0.01, n_iter_no_change=2)
    >>> [rule.update(loss, None) for loss in [1.0, 0.5, 0.495, 0.49, 0.3]]
    [False, False, False, True, False]
    """

    def __init__(self, tol, n_iter_no_change):
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.best_loss = np.inf
        self.best_score = None
        self.best_coef = None
        self.no_change = 0

    def update(self, loss, score=None, coef=None):
        """Record an epoch; True when the run should stop."""
        tol = self.tol
        if score is not None:
            improved = tol is None or self.best_score is None or score > self.best_score + tol
            if self.best_score is None or score > self.best_score:
                self.best_score = score
                self.best_coef = coef
        else:
            improved = tol is None or loss < self.best_loss - tol
            self.best_loss = min(self.best_loss, loss)
        self.no_change = 0 if improved else self.no_change + 1
        return tol is not None and self.no_change >= self.n_iter_no_change


class OnlineEpoch(NamedTuple):
    """Progress report passed to the ``callback`` of :func:`minimize_online`.

    Attributes
    ----------
    epoch : int
        1 after the first epoch.
    stats : ndarray
        The problem's statistics summed over the epoch's samples (first:
        the sum of the losses, computed at the weights of each step).
    n_samples : int
        Samples per epoch.
    validation_score : float or None
        Score of the epoch's weights on the held-out samples.
    n_steps : int
        Updates made so far.
    elapsed : float
        Seconds since the start.
    """

    epoch: int
    stats: np.ndarray
    n_samples: int
    validation_score: float | None
    n_steps: int
    elapsed: float

    @property
    def loss(self):
        """Mean training loss of the epoch."""
        return self.stats[0] / self.n_samples


class OnlineResult(NamedTuple):
    """Outcome of :func:`minimize_online`.

    Attributes
    ----------
    coef : ndarray of shape (n_params,)
        The weights: averaged over all steps (``average=True``) or the last
        ones; with held-out samples, those of the best epoch.
    n_epochs : int
        Epochs run.
    n_steps : int
        Updates made.
    loss_curve : list of float
        Mean training loss of each epoch.
    stats : list of ndarray
        The problem's statistics summed over each epoch.
    validation_scores : list of float
        Score on the held-out samples after each epoch (empty without).
    best_validation_score : float or None
        The best of them.
    converged : bool
        Whether the stopping rule of ``tol`` ended the run (always False
        with ``tol=None``, which runs ``max_iter`` epochs).
    """

    coef: np.ndarray
    n_epochs: int
    n_steps: int
    loss_curve: list
    stats: list
    validation_scores: list
    best_validation_score: float | None
    converged: bool


def _check_options(method, learning_rate, l1, l2, batch_size, max_iter, n_parts):
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}.")
    if method == "perceptron" and (l1 or l2):
        raise ValueError("the perceptron takes no penalty: l1 and l2 must be 0.")
    # Checked, not converted: the update rule computes with the values given.
    check_positive_scalar(learning_rate, "learning_rate")
    check_positive_scalar(l1, "l1", allow_zero=True)
    check_positive_scalar(l2, "l2", allow_zero=True)
    for name, value in (("batch_size", batch_size), ("max_iter", max_iter),
                        ("n_parts", n_parts)):
        check_integer(value, name, minimum=1)


def minimize_online(problem, w0, sample_ids, *, method="adagrad", learning_rate=0.1, l1=0.0,
                    l2=0.0, batch_size=16, max_iter=10, tol=1e-4, n_iter_no_change=3,
                    average=True, validation_ids=None, random_state=None, n_parts=2,
                    n_threads=1, callback=None):
    """Minimise ``mean_i loss_i(w) + l2 / 2 ||w||^2 + l1 ||w||_1`` by online updates.

    Every epoch visits ``sample_ids`` in a new random order, by mini-batches
    of ``batch_size``; each batch's gradient (the mean of its samples'
    gradients for AdaGrad, their sum for the perceptron) updates the
    weights it touches. See the module docstring for what ``problem`` must
    provide.

    Parameters
    ----------
    problem : object
        The online problem (module docstring).
    w0 : ndarray of shape (n_params,)
        Starting weights (not modified).
    sample_ids : ndarray of int
        The training samples.
    method : {"adagrad", "perceptron"}, default="adagrad"
        ``"adagrad"``: per-weight steps ``learning_rate / sqrt(sum of squared
        gradients + 1e-8)``, L2 as a shrinkage of the weight by the same
        step and L1 as its proximal step (soft-thresholding).
        ``"perceptron"``: ``w -= g`` (the structured perceptron when the
        problem's loss is the perceptron loss); no penalty.
    learning_rate : float, default=0.1
        AdaGrad's step size.
    l1, l2 : float, default=0.0
        Penalties, relative to the *mean* loss.
    batch_size : int, default=16
        Samples per update.
    max_iter : int, default=10
        Epochs at most.
    tol : float or None, default=1e-4
        Stop when ``n_iter_no_change`` successive epochs fail to bring the
        mean training loss below the best one minus ``tol`` (with
        ``validation_ids``: the validation score above the best plus
        ``tol``; :class:`EarlyStopping`), and the perceptron after an epoch
        that moved no weight (no mistake, and no tie with the gold). None: run
        ``max_iter`` epochs.
    n_iter_no_change : int, default=3
        Epochs without improvement before stopping.
    average : bool, default=True
        Return the average of the weights over all steps (smoother, and
        what makes the perceptron generalise) instead of the last ones.
    validation_ids : ndarray of int or None, default=None
        Held-out samples: their score (``problem.score``) is computed after
        every epoch, decides when to stop, and the best epoch's weights are
        returned.
    random_state : int, RandomState instance or None, default=None
        The order of the samples.
    n_parts : int, default=2
        Parts of a mini-batch (each with its own gradient column; the
        threads share them out). Results depend on it, not on
        ``n_threads``.
    n_threads : int, default=1
        Threads computing the parts' gradients and the updates.
    callback : callable, optional
        Called after every epoch with an :class:`OnlineEpoch`.

    Returns
    -------
    result : OnlineResult
        ``converged`` says whether the stopping rule ended the run; the
        learner does not warn when it did not (the estimators do, in their
        users' terms).

    Examples
    --------
    A least-squares problem whose samples each touch one weight:

    >>> import numpy as np
    >>> from sksparse_struct.learners import SparseGradient, minimize_online
    >>> from sksparse_struct.learners._online_fast import push
    >>> class LeastSquares:
    ...     n_params = 3
    ...     target = np.array([1.0, -2.0, 0.5])
    ...     def sample_costs(self):
    ...         return np.ones(3)
    ...     def batch_gradient(self, w, ids, gradient, part, step):
    ...         n, loss = 0, 0.0
    ...         for i in ids:
    ...             r = w[i] - self.target[i]
    ...             loss += 0.5 * r * r
    ...             n = push(i, r, gradient.values, 2 * part, gradient.touched[part],
    ...                      n, float(step))
    ...         gradient.n_touched[part] = n
    ...         return np.array([loss])
    >>> result = minimize_online(LeastSquares(), np.zeros(3), np.arange(3), batch_size=1,
    ...                          learning_rate=1.0, max_iter=100, tol=None,
    ...                          average=False, random_state=0)
    >>> result.coef.round(3).tolist(), result.n_steps
    ([1.0, -2.0, 0.5], 300)
    """
    _check_options(method, learning_rate, l1, l2, batch_size, max_iter, n_parts)
    rng = check_random_state(random_state)
    adagrad = method == "adagrad"
    rule = UpdateRule(np.bool_(adagrad), float(learning_rate), float(learning_rate * l2),
                      float(learning_rate * l1), _EPS)
    apply_update_share, flush_updates_share = update_kernels(rule)
    n_params = int(problem.n_params)
    sample_ids = np.asarray(sample_ids, dtype=np.int64)
    costs = np.ascontiguousarray(problem.sample_costs(), dtype=np.float64)
    w = np.array(w0, dtype=np.float64)
    opt = aligned_zeros((n_params, OPT_COLUMNS))
    gradient = SparseGradient(aligned_zeros((n_params, 2 * n_parts)),
                              np.zeros((n_parts, n_params), dtype=np.int64),
                              np.zeros(n_parts, dtype=np.int64))
    n_threads = max(1, min(n_parts, int(n_threads)))
    pool = ThreadPoolExecutor(n_threads) if n_threads > 1 else None
    run = _serial if pool is None else (lambda f, items: list(pool.map(f, items)))

    loss_curve, stats_curve, scores = [], [], []
    stopping = EarlyStopping(tol, n_iter_no_change)
    converged = False
    step = 0
    epoch = 0
    coef = w
    t0 = time.perf_counter()
    try:
        for epoch in range(1, max_iter + 1):
            order = rng.permutation(sample_ids)
            # The perceptron stops once an epoch leaves every weight where it
            # was (a zero loss is not enough: a tie with the gold still moves
            # the weights).
            w_start = w.copy() if tol is not None and not adagrad else None
            total = None
            if batch_size == 1 and hasattr(problem, "sequential_steps"):
                # Batches of one sample: the problem may run the steps itself,
                # in one compiled call, with the same operations.
                gradient.n_touched[:] = 0
                total = problem.sequential_steps(w, order, gradient, step + 1, 1.0, opt, rule)
                if total is not None:
                    step += order.shape[0]
                    order = order[:0]
            for batch, batch_parts in _batches(problem, order, costs, batch_size, n_parts, rng):
                step += 1
                gradient.n_touched[:] = 0
                if batch.shape[0] == 1:
                    # A lone sample goes to part 0 (the LPT rule's first pick).
                    results = [problem.batch_gradient(w, batch, gradient, 0, step)]
                else:
                    parts = [batch[batch_parts == p] for p in range(n_parts)]
                    busy = [p for p in range(n_parts) if parts[p].shape[0]]

                    def gradient_of(p, parts=parts, step=step):
                        return problem.batch_gradient(w, parts[p], gradient, p, step)

                    results = (run if len(busy) > 1 else _serial)(gradient_of, busy)
                for stats in results:
                    total = stats.copy() if total is None else total + stats
                scale = 1.0 / batch.shape[0] if adagrad else 1.0
                # Coordinates split by residue between the threads: the
                # same operations on each coordinate, so the same result
                # however many shares there are (one when few to update).
                if n_threads > 1 and gradient.n_touched.sum() >= _THREADED_UPDATE:

                    def update(share, step=step, scale=scale):
                        apply_update_share(gradient, np.int64(step), scale, w, opt, rule,
                                           np.int64(share), np.int64(n_threads))

                    run(update, range(n_threads))
                else:
                    apply_update_share(gradient, np.int64(step), scale, w, opt, rule,
                                       np.int64(0), np.int64(1))

            def flush(share, step=step):
                flush_updates_share(np.int64(step), w, opt, rule, np.int64(share),
                                    np.int64(n_threads))

            run(flush, range(n_threads))
            coef = opt[:, W_SUM] / step if average else w.copy()
            mean_loss = total[0] / sample_ids.shape[0]
            loss_curve.append(mean_loss)
            stats_curve.append(total)
            score = None
            if validation_ids is not None:
                score = problem.score(coef, validation_ids)
                scores.append(score)
            stop = stopping.update(mean_loss, score, coef)
            if callback is not None:
                callback(OnlineEpoch(epoch, total, int(sample_ids.shape[0]), score, step,
                                     time.perf_counter() - t0))
            if stop or (w_start is not None and np.array_equal(w, w_start)):
                # A perceptron epoch that changed no weight: every further
                # epoch would be the same.
                converged = True
                break
    finally:
        if pool is not None:
            pool.shutdown()
    if stopping.best_coef is not None:
        coef = stopping.best_coef
    return OnlineResult(coef, epoch, step, loss_curve, stats_curve, scores, stopping.best_score,
                        converged)
