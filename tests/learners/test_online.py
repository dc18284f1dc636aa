"""The online learners: lazy updates against dense ones, the epoch loop, its stopping rules."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sksparse_struct.learners import SparseGradient, minimize_online
from sksparse_struct.learners import _online_fast as fast
from sksparse_struct.learners._online import EarlyStopping

# --- the lazy updates -------------------------------------------------------------


def _soft(x, t):
    return np.sign(x) * max(abs(x) - t, 0.0)


def _dense_updates(grads, n_features, adagrad, learning_rate, decay_rate, l1_rate, eps):
    """AdaGrad (or perceptron) with L2 and L1, every coordinate updated at every step."""
    w = np.zeros(n_features)
    w_sum = np.zeros(n_features)
    acc = np.zeros(n_features)
    for G, touched in grads:
        for i in range(n_features):
            if i in touched:
                if adagrad:
                    acc[i] += G[i] ** 2
                    denom = np.sqrt(acc[i] + eps)
                    w[i] = w[i] * max(0.0, 1.0 - decay_rate / denom) - learning_rate * G[i] / denom
                    w[i] = _soft(w[i], l1_rate / denom)
                else:
                    w[i] -= G[i]
            elif decay_rate > 0 or l1_rate > 0:
                denom = np.sqrt(acc[i] + eps)
                w[i] = _soft(w[i] * max(0.0, 1.0 - decay_rate / denom), l1_rate / denom)
        w_sum += w
    return w, w_sum


@pytest.mark.parametrize("adagrad, alpha, l1", [
    (True, 0.0, 0.0), (True, 0.3, 0.0), (False, 0.0, 0.0), (True, 0.0, 0.05),
    (True, 0.3, 0.05), (True, 3.0, 0.5),
])
def test_lazy_updates_match_dense_updates(adagrad, alpha, l1):
    rng = np.random.default_rng(0)
    nf, P, n_steps, scale, lr, eps = 12, 2, 25, 0.25, 0.5, 1e-8
    rule = fast.UpdateRule(np.bool_(adagrad), lr, lr * alpha, lr * l1, eps)
    w = np.zeros(nf)
    opt = fast.aligned_zeros((nf, fast.OPT_COLUMNS))
    gradient = SparseGradient(fast.aligned_zeros((nf, 2 * P)),
                              np.zeros((P, nf), dtype=np.int64), np.zeros(P, dtype=np.int64))
    grad, touched, n_touched = gradient
    history = []
    for step in range(1, n_steps + 1):
        total = np.zeros(nf)
        union = set()
        for p in range(P):
            idx = rng.choice(nf, size=rng.integers(0, 5), replace=False)
            grad[idx, 2 * p] = 3 * rng.normal(size=idx.shape[0])
            grad[idx, 2 * p + 1] = step
            touched[p, :idx.shape[0]] = idx
            n_touched[p] = idx.shape[0]
            total[idx] += grad[idx, 2 * p]
            union |= set(idx.tolist())
        history.append((total * scale, union))
        fast.apply_update(gradient, np.int64(step), scale, w, opt, rule)
        np.testing.assert_array_equal(grad[:, 0::2], 0.0)  # buffers handed back clean
    fast.flush_updates(np.int64(n_steps), w, opt, rule)
    ref_w, ref_sum = _dense_updates(history, nf, adagrad, lr, lr * alpha, lr * l1, eps)
    np.testing.assert_allclose(w, ref_w, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(opt[:, fast.W_SUM], ref_sum, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(opt[:, fast.LAST], n_steps)
    if l1 > 0.3:
        assert np.sum(w == 0.0) > 0  # the L1 step zeroes weights exactly


def _steps(a, c, tau, r):
    """``r`` steps of ``a <- max(0, (1 - c) a - tau)``: the values after each, plainly."""
    f = max(0.0, 1.0 - c)
    values = []
    for _ in range(r):
        a = max(0.0, f * a - tau)
        values.append(a)
    return values


@given(a=st.floats(1e-6, 1e3), c=st.sampled_from([0.0, 1e-12, 1e-7, 1e-3, 0.2, 0.9, 1.0, 2.0]),
       tau=st.sampled_from([0.0, 1e-9, 1e-4, 0.01, 1.0, 50.0]), r=st.integers(0, 3000))
def test_shrink_l1_is_r_plain_steps(a, c, tau, r):
    final, total = fast._shrink_l1(a, c, tau, r)
    values = _steps(a, c, tau, r)
    expected_final = values[-1] if values else a
    assert final == pytest.approx(expected_final, rel=1e-9, abs=1e-12 * a)
    assert total == pytest.approx(sum(values), rel=1e-9, abs=1e-11 * a * max(r, 1))
    assert final >= 0.0


@pytest.mark.parametrize("c", [0.0, 1e-15, 1e-9, 1e-4, 0.03, 0.5])
@pytest.mark.parametrize("k", [1, 2, 7, 100, 5000])
def test_sum_of_partial_sums(c, k):
    f = 1.0 - c
    partial = np.cumsum(f ** np.arange(k))  # 1, 1 + f, ...
    assert fast._sum_of_partial_sums(c, k) == pytest.approx(partial.sum(), rel=1e-12)


@pytest.mark.parametrize("shape", [(5, 4), (1000, 4), (3, 2), (7,)])
def test_aligned_zeros_start_on_a_cache_line(shape):
    a = fast.aligned_zeros(shape)
    assert a.shape == shape and a.dtype == np.float64
    assert a.ctypes.data % 64 == 0
    assert a.flags.c_contiguous and not a.any()


def test_push_lists_each_coordinate_once_and_stamps_it():
    values = np.zeros((6, 4))
    touched = np.zeros(6, dtype=np.int64)
    n = 0
    for idx, v in [(3, 1.0), (1, -2.0), (3, 0.5), (5, 0.0)]:
        n = fast.push(idx, v, values, 2, touched, n, 9.0)
    assert touched[:n].tolist() == [3, 1, 5]
    assert values[:, 2].tolist() == [0.0, -2.0, 0.0, 1.5, 0.0, 0.0]
    assert values[[1, 3, 5], 3].tolist() == [9.0, 9.0, 9.0]
    assert not values[:, :2].any()


def _lpt_reference(ids, costs, n_parts):
    # The LPT rule written plainly: costliest first, to the least loaded part.
    cost = costs[ids]
    load = [0.0] * n_parts
    part_of = [None] * len(ids)
    for i in sorted(range(len(ids)), key=lambda i: -cost[i]):
        p = load.index(min(load))
        part_of[i] = p
        load[p] += cost[i]
    return part_of


@pytest.mark.parametrize("batch_size, n_parts", [(16, 2), (7, 2), (5, 3), (1, 2)])
def test_batch_parts_are_balanced_and_follow_the_lpt_rule(batch_size, n_parts):
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 80, size=500)
    lengths[:40] = 10  # ties
    costs = (lengths + 1.0) ** 2
    order = rng.permutation(500)
    part_of = np.empty(500, dtype=np.int64)
    fast.split_batches(order, costs, batch_size, n_parts, part_of)
    for b in range(0, 500, batch_size):
        ids, parts = order[b:b + batch_size], part_of[b:b + batch_size]
        assert parts.tolist() == _lpt_reference(ids, costs, n_parts)
        # LPT's guarantee: the heaviest part exceeds the mean by at most one
        # sample's cost.
        cost = [costs[ids[parts == p]].sum() for p in range(n_parts)]
        assert max(cost) - sum(cost) / n_parts <= costs[ids].max() + 1e-9


# --- the epoch loop ---------------------------------------------------------------


class LeastSquares:
    """``loss_i(w) = (x_i . w - y_i)^2 / 2`` over sparse rows ``x_i`` (a toy online problem)."""

    def __init__(self, n_samples=60, n_params=15, seed=0, noise=0.1):
        rng = np.random.default_rng(seed)
        self.n_params = n_params
        self.X = [(np.sort(rng.choice(n_params, size=3, replace=False)), rng.normal(size=3))
                  for _ in range(n_samples)]
        self.w_true = rng.normal(size=n_params)
        self.y = np.array([v @ self.w_true[i] for i, v in self.X])
        self.y += noise * rng.normal(size=n_samples)
        self.calls = []

    def sample_costs(self):
        return np.arange(len(self.X), dtype=float) % 5 + 1.0

    def loss(self, w, ids):
        return sum(0.5 * (v @ w[i] - self.y[s]) ** 2 for s in ids for i, v in [self.X[s]])

    def batch_gradient(self, w, ids, gradient, part, step):
        self.calls.append((part, len(ids)))
        n, total = 0, 0.0
        for s in ids:
            i, v = self.X[s]
            r = v @ w[i] - self.y[s]
            total += 0.5 * r * r
            for j, x in zip(i, v):
                n = fast.push(j, r * x, gradient.values, 2 * part, gradient.touched[part], n,
                              float(step))
        gradient.n_touched[part] = n
        return np.array([total, len(ids)])

    def score(self, w, ids):
        return -self.loss(w, ids) / len(ids)


def test_adagrad_reaches_the_least_squares_solution():
    problem = LeastSquares(noise=0.0)
    result = minimize_online(problem, np.zeros(15), np.arange(60), learning_rate=0.5,
                             batch_size=4, max_iter=300, tol=None, average=False,
                             random_state=0)
    np.testing.assert_allclose(result.coef, problem.w_true, atol=1e-4)
    assert result.n_epochs == 300 and result.n_steps == 300 * 15
    assert result.loss_curve[-1] < 1e-8 < result.loss_curve[0]
    assert [s[1] for s in result.stats] == [60.0] * 300  # every sample once an epoch


def test_results_do_not_depend_on_the_number_of_threads():
    runs = [minimize_online(LeastSquares(), np.zeros(15), np.arange(60), l2=0.01, l1=0.001,
                            batch_size=7, max_iter=5, random_state=3, n_parts=3,
                            n_threads=t) for t in (1, 2, 3)]
    for other in runs[1:]:
        assert np.array_equal(other.coef, runs[0].coef)
        assert other.loss_curve == runs[0].loss_curve


def test_penalties_shrink_and_sparsify():
    plain = minimize_online(LeastSquares(), np.zeros(15), np.arange(60), max_iter=20,
                            tol=None, average=False, random_state=0).coef
    l2 = minimize_online(LeastSquares(), np.zeros(15), np.arange(60), l2=1.0, max_iter=20,
                         tol=None, average=False, random_state=0).coef
    l1 = minimize_online(LeastSquares(), np.zeros(15), np.arange(60), l1=0.3, max_iter=20,
                         tol=None, average=False, random_state=0).coef
    assert np.linalg.norm(l2) < np.linalg.norm(plain)
    assert np.sum(l1 == 0.0) > np.sum(plain == 0.0)


def test_averaging_returns_the_mean_of_the_iterates():
    seen = []

    def callback(info):
        seen.append(info)

    last = minimize_online(LeastSquares(), np.zeros(15), np.arange(60), batch_size=60,
                           max_iter=3, tol=None, average=False, random_state=0)
    avg = minimize_online(LeastSquares(), np.zeros(15), np.arange(60), batch_size=60,
                          max_iter=3, tol=None, average=True, random_state=0,
                          callback=callback)
    # One step per epoch: the average of the three iterates.
    iterates = [minimize_online(LeastSquares(), np.zeros(15), np.arange(60), batch_size=60,
                                max_iter=k, tol=None, average=False, random_state=0).coef
                for k in (1, 2, 3)]
    np.testing.assert_allclose(avg.coef, np.mean(iterates, axis=0), rtol=1e-12)
    np.testing.assert_array_equal(last.coef, iterates[-1])
    assert [info.epoch for info in seen] == [1, 2, 3]
    assert seen[-1].loss == pytest.approx(avg.loss_curve[-1])


def test_perceptron_steps_are_the_summed_gradient():
    problem = LeastSquares()
    result = minimize_online(problem, np.zeros(15), np.arange(60), method="perceptron",
                             batch_size=60, max_iter=1, average=False, random_state=0)
    g = np.zeros(15)
    for s in range(60):
        i, v = problem.X[s]
        g[i] += (0.0 - problem.y[s]) * v
    np.testing.assert_allclose(result.coef, -g, rtol=1e-12)
    with pytest.raises(ValueError, match="no penalty"):
        minimize_online(problem, np.zeros(15), np.arange(60), method="perceptron", l2=0.1)


def test_stopping_rules():
    # tol: stops once n_iter_no_change epochs fail to improve the mean loss by tol.
    result = minimize_online(LeastSquares(), np.zeros(15), np.arange(60), max_iter=100,
                             tol=1e-2, n_iter_no_change=2, random_state=0)
    assert result.n_epochs < 100
    best = np.minimum.accumulate(result.loss_curve)  # best[k]: after epoch k + 1
    assert not (result.loss_curve[-1] < best[-2] - 1e-2)
    assert not (result.loss_curve[-2] < best[-3] - 1e-2)
    # Held-out samples: the best epoch's weights are returned.
    problem = LeastSquares()
    result = minimize_online(problem, np.zeros(15), np.arange(40),
                             validation_ids=np.arange(40, 60), max_iter=30, tol=0.0,
                             n_iter_no_change=3, random_state=0)
    assert len(result.validation_scores) == result.n_epochs
    assert result.best_validation_score == max(result.validation_scores)
    assert problem.score(result.coef, np.arange(40, 60)) == result.best_validation_score


def test_early_stopping_rule_on_the_training_loss():
    rule = EarlyStopping(tol=0.1, n_iter_no_change=2)
    # 1.0 -> 0.95 is no improvement by 0.1, 0.8 is one (below 0.95 - 0.1), then two without.
    losses = (1.0, 0.95, 0.8, 0.75, 0.72)
    assert [rule.update(x) for x in losses] == [False, False, False, False, True]
    assert rule.best_loss == 0.72 and rule.best_score is None and rule.best_coef is None
    never = EarlyStopping(tol=None, n_iter_no_change=1)
    assert not any(never.update(x) for x in (1.0, 2.0, 3.0, 4.0))


def test_early_stopping_rule_on_held_out_scores_keeps_the_best_weights():
    rule = EarlyStopping(tol=0.0, n_iter_no_change=2)
    coefs = [np.full(2, k) for k in range(5)]
    stops = [rule.update(1.0, score, coef) for score, coef in zip((0.5, 0.7, 0.7, 0.6), coefs)]
    # A tie is no progress (0.7 after 0.7), nor is a fall.
    assert stops == [False, False, False, True]
    assert rule.best_score == 0.7 and rule.best_coef is coefs[1]
    # tol above the step: the rise from 0.5 to 0.7 is not progress, but its weights are best.
    rule = EarlyStopping(tol=0.5, n_iter_no_change=1)
    assert [rule.update(0.0, s, c) for s, c in zip((0.5, 0.7), coefs)] == [False, True]
    assert rule.best_coef is coefs[1]


class _Separable:
    """Perceptron loss of a separable toy problem: samples ``i`` want ``w[i % 3] > 0``."""

    n_params = 3

    def sample_costs(self):
        return np.ones(12)

    def batch_gradient(self, w, ids, gradient, part, step):
        n, total = 0, 0.0
        for s in ids:
            if w[s % 3] <= 0.0:
                total += 1.0 - w[s % 3]
                n = fast.push(s % 3, -1.0, gradient.values, 2 * part, gradient.touched[part], n,
                              float(step))
        gradient.n_touched[part] = n
        return np.array([total])


def test_perceptron_stops_after_an_epoch_without_mistakes():
    result = minimize_online(_Separable(), np.zeros(3), np.arange(12), method="perceptron",
                             batch_size=1, max_iter=50, tol=1e-4, random_state=0)
    # The first epoch makes the three mistakes; the second none: a fixed point.
    assert result.n_epochs == 2 and result.converged
    assert result.loss_curve[-1] == 0.0 and np.all(result.coef > 0)
    # tol=None runs max_iter epochs.
    result = minimize_online(_Separable(), np.zeros(3), np.arange(12), method="perceptron",
                             batch_size=1, max_iter=5, tol=None, random_state=0)
    assert result.n_epochs == 5 and not result.converged
    # AdaGrad has no such fixed point: a zero loss alone does not stop it.
    result = minimize_online(_Separable(), np.zeros(3), np.arange(12), batch_size=1,
                             max_iter=4, tol=None, random_state=0)
    assert result.n_epochs == 4 and not result.converged


def test_start_point_is_not_modified_and_empty_parts_are_skipped():
    problem = LeastSquares()
    w0 = np.full(15, 0.5)
    minimize_online(problem, w0, np.arange(60), batch_size=1, max_iter=1, random_state=0)
    assert np.all(w0 == 0.5)
    # One sample per batch: the other part is never asked for a gradient.
    assert len(problem.calls) == 60 and all(n == 1 for _, n in problem.calls)


@pytest.mark.parametrize("bad, match", [
    (dict(method="sgd"), "method"), (dict(learning_rate=0.0), "learning_rate"),
    (dict(l1=-1.0), "l1 must be finite and >= 0, got -1.0"), (dict(batch_size=0), "batch_size"),
    (dict(max_iter=1.5), "max_iter"),
])
def test_bad_options(bad, match):
    with pytest.raises(ValueError, match=match):
        minimize_online(LeastSquares(), np.zeros(15), np.arange(60), **bad)
