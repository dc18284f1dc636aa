"""Tests of the L-BFGS / OWL-QN solver against scipy, scikit-learn and
optimality certificates."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize, rosen, rosen_der
from sklearn.linear_model import Lasso

from sksparse_struct.learners import LBFGSIteration, LBFGSResult, minimize_lbfgs

FTOL, GTOL = 1e-4, 0.9


# ---------------------------------------------------------------------------
# Problems
# ---------------------------------------------------------------------------


def make_quadratic(n=20, seed=0):
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(n, n))
    A = Q @ Q.T / n + np.diag(rng.uniform(0.1, 2.0, n))
    b = rng.normal(size=n)

    def fun(x):
        Ax = A @ x
        return 0.5 * x @ Ax - b @ x, Ax - b

    return fun, A, b


def make_logistic(n_samples=150, n_features=25, l2=0.3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, n_features))
    w = rng.normal(size=n_features) * (rng.random(n_features) < 0.4)
    y = (X @ w + 0.5 * rng.normal(size=n_samples) > 0).astype(float)

    def fun(v):
        z = X @ v
        f = np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * l2 * v @ v
        g = X.T @ (0.5 * (1.0 + np.tanh(0.5 * z)) - y) + l2 * v
        return f, g

    # Lipschitz constant of the gradient, for the proximal reference.
    lipschitz = np.linalg.norm(X, 2) ** 2 / 4.0 + l2
    return fun, lipschitz


def make_least_squares(n_samples=60, n_features=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, n_features))
    w = rng.normal(size=n_features) * (rng.random(n_features) < 0.3)
    y = X @ w + 0.1 * rng.normal(size=n_samples)

    def fun(v):
        r = X @ v - y
        return 0.5 * r @ r, X.T @ r

    return fun, X, y, np.linalg.norm(X, 2) ** 2


def rosenbrock(x):
    return rosen(x), rosen_der(x)


def fista(fun, c1, x0, lipschitz, mask=None, n_iter=3000):
    """Accelerated proximal gradient for f(x) + c1 ||x[mask]||_1 (reference).

    With O'Donoghue and Candes' adaptive restart, which makes it converge
    linearly on these strongly convex problems.
    """
    mask = np.ones(x0.shape, bool) if mask is None else mask
    x = x0.copy()
    z = x.copy()
    t = 1.0
    for _ in range(n_iter):
        _, g = fun(z)
        x_new = z - g / lipschitz
        shrunk = np.sign(x_new) * np.maximum(np.abs(x_new) - c1 / lipschitz, 0.0)
        x_new = np.where(mask, shrunk, x_new)
        if (z - x_new) @ (x_new - x) > 0:  # momentum points uphill: restart
            t = 1.0
        t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        z = x_new + (t - 1.0) / t_new * (x_new - x)
        x, t = x_new, t_new
    return x


def assert_l1_optimal(fun, x, c1, mask=None, atol=1e-6):
    """First-order optimality of f(x) + c1 ||x[mask]||_1 (a certificate)."""
    mask = np.ones(x.shape, bool) if mask is None else mask
    _, g = fun(x)
    nonzero = mask & (x != 0)
    free = ~mask
    zero = mask & (x == 0)
    np.testing.assert_allclose(g[nonzero] + c1 * np.sign(x[nonzero]), 0.0, atol=atol)
    np.testing.assert_allclose(g[free], 0.0, atol=atol)
    assert np.all(np.abs(g[zero]) <= c1 + atol)


def scipy_reference(fun, x0):
    res = minimize(
        fun,
        x0,
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 20000, "maxcor": 20},
    )
    return res.x


class Recorder:
    """Wraps ``fun`` and records every evaluation and every iteration."""

    def __init__(self, fun):
        self.fun = fun
        self.evals = []  # (x, f, g)
        self.iterations = []  # LBFGSIteration

    def __call__(self, x):
        f, g = self.fun(x)
        self.evals.append((np.array(x), float(f), np.array(g)))
        return f, g

    def callback(self, info):
        self.iterations.append(info)


def rel_err(x, ref):
    return np.linalg.norm(x - ref) / max(np.linalg.norm(ref), 1e-300)


# ---------------------------------------------------------------------------
# Smooth problems
# ---------------------------------------------------------------------------


def test_quadratic_known_minimiser():
    fun, A, b = make_quadratic()
    res = minimize_lbfgs(fun, np.zeros(b.size), epsilon=1e-8, period=0, max_iter=500)
    assert isinstance(res, LBFGSResult)
    assert res.converged, res.message
    x_star = np.linalg.solve(A, b)
    assert rel_err(res.x, x_star) < 1e-7
    assert rel_err(res.x, scipy_reference(fun, np.zeros(b.size))) < 1e-6
    np.testing.assert_allclose(res.grad, fun(res.x)[1])
    assert res.fun == pytest.approx(fun(res.x)[0], rel=1e-14)


@pytest.mark.parametrize("linesearch", ["auto", "more_thuente", "backtracking"])
def test_l2_logistic_matches_scipy(linesearch):
    fun, _ = make_logistic()
    x0 = np.zeros(25)
    ref = scipy_reference(fun, x0)
    res = minimize_lbfgs(
        fun, x0, epsilon=1e-9, period=0, max_iter=500, linesearch=linesearch
    )
    assert rel_err(res.x, ref) < 1e-6, res.message
    assert res.fun <= fun(ref)[0] * (1 + 1e-12)


@pytest.mark.parametrize("x0", [[-1.2, 1.0], [-1.2, 1.0, -1.2, 1.0, 0.5, 2.0]])
def test_rosenbrock(x0):
    res = minimize_lbfgs(rosenbrock, x0, epsilon=1e-10, period=0, max_iter=1000)
    assert res.converged, res.message
    np.testing.assert_allclose(res.x, 1.0, atol=1e-7)


def test_default_settings_stop_like_crfsuite():
    # Defaults (epsilon=1e-5, period=10, delta=1e-5) stop well before the
    # round-off limit, with a nearly optimal objective.
    fun, _ = make_logistic()
    ref = scipy_reference(fun, np.zeros(25))
    res = minimize_lbfgs(fun, np.zeros(25))
    assert res.converged
    assert res.message.startswith("converged")
    assert (res.fun - fun(ref)[0]) / fun(ref)[0] < 1e-5


@pytest.mark.parametrize("problem", ["logistic", "rosenbrock", "quadratic"])
def test_strong_wolfe_at_every_accepted_step(problem):
    if problem == "logistic":
        fun, x0 = make_logistic()[0], np.zeros(25)
    elif problem == "rosenbrock":
        fun, x0 = rosenbrock, np.array([-1.2, 1.0, -1.2, 1.0])
    else:
        fun, x0 = make_quadratic()[0], np.zeros(20)
    rec = Recorder(fun)
    res = minimize_lbfgs(rec, x0, epsilon=1e-8, period=0, callback=rec.callback)
    assert res.n_evals == len(rec.evals)
    assert len(rec.iterations) == res.n_iter > 5

    # The first trial step is 1 / ||g0|| along -g0.
    _, f0, g0 = rec.evals[0]
    np.testing.assert_allclose(rec.evals[1][0], x0 - g0 / np.linalg.norm(g0), atol=1e-14)

    # The point accepted at each iteration is the last one evaluated.
    accepted = [rec.evals[0]] + [rec.evals[info.n_evals - 1] for info in rec.iterations]
    for (x_a, f_a, g_a), (x_b, f_b, g_b), info in zip(accepted, accepted[1:], rec.iterations):
        s = x_b - x_a
        slope = g_a @ s
        assert slope < 0
        slack = 1e-12 * max(1.0, abs(f_a))
        assert f_b <= f_a + FTOL * slope + slack  # sufficient decrease
        assert abs(g_b @ s) <= GTOL * abs(slope) + 1e-12  # strong curvature
        assert info.fun == f_b


def test_backtracking_wolfe_conditions():
    fun, _ = make_logistic(seed=3)
    rec = Recorder(fun)
    minimize_lbfgs(rec, np.zeros(25), linesearch="backtracking", callback=rec.callback)
    accepted = [rec.evals[0]] + [rec.evals[info.n_evals - 1] for info in rec.iterations]
    for (x_a, f_a, g_a), (x_b, f_b, g_b) in zip(accepted, accepted[1:]):
        s = x_b - x_a
        assert f_b <= f_a + FTOL * (g_a @ s) + 1e-12 * abs(f_a)
        assert g_b @ s >= 0.9 * (g_a @ s) - 1e-12


@pytest.mark.parametrize("c1", [0.0, 2.0])
def test_objective_non_increasing(c1):
    fun, _ = make_logistic(seed=1)
    rec = Recorder(fun)
    res = minimize_lbfgs(
        rec, np.zeros(25), c1=c1, epsilon=1e-10, period=0, callback=rec.callback
    )
    values = [info.fun for info in rec.iterations]
    assert len(values) > 5
    assert np.all(np.diff(values) <= 0)
    assert values[-1] == res.fun
    assert [info.iteration for info in rec.iterations] == list(range(1, res.n_iter + 1))


def test_progress_report_fields():
    fun, _ = make_logistic()
    infos = []
    res = minimize_lbfgs(fun, np.zeros(25), c1=1.0, callback=infos.append)
    last = infos[-1]
    assert isinstance(last, LBFGSIteration)
    assert last.n_active == np.count_nonzero(res.x)
    assert last.x_norm == pytest.approx(np.linalg.norm(res.x))
    assert last.n_evals == res.n_evals
    assert last.step > 0 and last.n_linesearch >= 1 and last.elapsed >= 0
    assert all(a.elapsed <= b.elapsed for a, b in zip(infos, infos[1:]))


# ---------------------------------------------------------------------------
# OWL-QN
# ---------------------------------------------------------------------------


def test_owlqn_lasso_matches_sklearn():
    fun, X, y, _ = make_least_squares()
    c1 = 5.0
    res = minimize_lbfgs(fun, np.zeros(X.shape[1]), c1=c1, epsilon=1e-12, period=0, max_iter=1000)
    # Lasso minimises ||y - Xw||^2 / (2 n) + alpha ||w||_1.
    lasso = Lasso(alpha=c1 / X.shape[0], fit_intercept=False, tol=1e-14, max_iter=100000)
    ref = lasso.fit(X, y).coef_
    np.testing.assert_allclose(res.x, ref, atol=1e-5)
    zeros = ref == 0
    assert 0 < zeros.sum() < zeros.size
    assert np.array_equal(res.x == 0, zeros)  # exact zeros, same pattern
    assert_l1_optimal(fun, res.x, c1)
    assert res.fun == pytest.approx(fun(res.x)[0] + c1 * np.abs(res.x).sum(), rel=1e-14)


def test_owlqn_l1_logistic_matches_proximal_gradient():
    fun, lipschitz = make_logistic(seed=2)
    c1 = 6.0
    x0 = np.zeros(25)
    res = minimize_lbfgs(fun, x0, c1=c1, epsilon=1e-12, period=0, max_iter=1000)
    ref = fista(fun, c1, x0, lipschitz)
    np.testing.assert_allclose(res.x, ref, atol=1e-5)
    assert np.array_equal(res.x == 0, np.abs(ref) < 1e-9)
    assert 0 < np.count_nonzero(res.x) < res.x.size
    assert_l1_optimal(fun, res.x, c1)


def test_owlqn_from_nonzero_start_reaches_zeros():
    fun, X, y, _ = make_least_squares(seed=4)
    c1 = 8.0
    rng = np.random.default_rng(0)
    res = minimize_lbfgs(fun, rng.normal(size=30), c1=c1, epsilon=1e-12, period=0, max_iter=1000)
    assert np.count_nonzero(res.x == 0) > 0
    assert_l1_optimal(fun, res.x, c1)


@pytest.mark.parametrize("kind", ["contiguous", "scattered", "none_penalised"])
def test_l1_mask_leaves_unmasked_entries_unpenalised(kind):
    fun, X, y, lipschitz = make_least_squares(seed=5)
    n = X.shape[1]
    mask = np.ones(n, bool)
    if kind == "contiguous":
        mask[:8] = False
    elif kind == "scattered":
        mask[::3] = False
    else:
        mask[:] = False
    c1 = 10.0
    res = minimize_lbfgs(
        fun, np.zeros(n), c1=c1, l1_mask=mask, epsilon=1e-12, period=0, max_iter=1000
    )
    ref = fista(fun, c1, np.zeros(n), lipschitz, mask=mask)
    np.testing.assert_allclose(res.x, ref, atol=1e-5)
    assert_l1_optimal(fun, res.x, c1, mask=mask)
    assert np.all(res.x[~mask] != 0)
    if mask.any():
        assert np.any(res.x[mask] == 0)
    # Only the masked entries enter the objective's L1 term.
    assert res.fun == pytest.approx(fun(res.x)[0] + c1 * np.abs(res.x[mask]).sum())


@given(
    seed=st.integers(0, 10_000),
    n=st.integers(1, 12),
    c1=st.floats(0.01, 5.0),
)
def test_owlqn_certificate_on_random_quadratics(seed, n, c1):
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(n, n))
    A = Q @ Q.T + 0.5 * np.eye(n)
    b = 3.0 * rng.normal(size=n)

    def fun(x):
        Ax = A @ x
        return 0.5 * x @ Ax - b @ x, Ax - b

    res = minimize_lbfgs(fun, rng.normal(size=n), c1=c1, epsilon=1e-11, period=0, max_iter=2000)
    scale = max(1.0, np.abs(b).max())
    assert_l1_optimal(fun, res.x, c1, atol=1e-6 * scale)


# ---------------------------------------------------------------------------
# Stopping rules
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("c1", [0.0, 0.5])
def test_max_iter_respected(c1):
    fun, _ = make_logistic()
    rec = Recorder(fun)
    res = minimize_lbfgs(
        rec, np.zeros(25), c1=c1, max_iter=4, epsilon=0.0, period=0, callback=rec.callback
    )
    assert res.n_iter == 4 == len(rec.iterations)
    assert not res.converged
    assert "max_iter" in res.message


def test_max_iter_zero_only_evaluates():
    fun, _ = make_logistic()
    rec = Recorder(fun)
    res = minimize_lbfgs(rec, np.ones(25), max_iter=0)
    assert res.n_iter == 0 and res.n_evals == 1 == len(rec.evals)
    np.testing.assert_array_equal(res.x, 1.0)


def test_delta_test_triggers():
    fun, _ = make_logistic()
    rec = Recorder(fun)
    period, delta = 3, 1e-3
    res = minimize_lbfgs(
        rec, np.zeros(25), epsilon=0.0, period=period, delta=delta, callback=rec.callback
    )
    assert res.converged
    assert "delta" in res.message
    f = [rec.evals[0][1]] + [info.fun for info in rec.iterations]
    k = res.n_iter
    assert (f[k - period] - f[k]) / f[k] < delta
    # It did not hold at any earlier iteration.
    for j in range(period, k):
        assert (f[j - period] - f[j]) / f[j] >= delta


def test_gradient_test_and_already_minimised_start():
    fun, A, b = make_quadratic()
    x_star = np.linalg.solve(A, b)
    res = minimize_lbfgs(fun, x_star, epsilon=1e-6)
    assert res.converged and res.n_iter == 0 and res.n_evals == 1
    res = minimize_lbfgs(fun, np.zeros(b.size), epsilon=1e-4, period=0)
    g_norm = np.linalg.norm(res.grad)
    assert res.converged and g_norm <= 1e-4 * max(1.0, np.linalg.norm(res.x))


def test_callback_stop():
    fun, _ = make_logistic()
    seen = []

    def callback(info):
        seen.append(info.iteration)
        return info.iteration == 3

    res = minimize_lbfgs(fun, np.zeros(25), epsilon=0.0, period=0, callback=callback)
    assert res.n_iter == 3 and seen == [1, 2, 3]
    assert not res.converged and "callback" in res.message


def test_line_search_failure_returns_the_last_accepted_point():
    fun, _ = make_logistic()

    def wrong_gradient(x):
        f, g = fun(x)
        return f, -g  # the "descent" direction goes uphill

    x0 = np.full(25, 0.1)
    res = minimize_lbfgs(wrong_gradient, x0, max_linesearch=5)
    assert not res.converged
    assert "line search failed at iteration 1" in res.message
    np.testing.assert_array_equal(res.x, x0)
    assert res.fun == fun(x0)[0] and res.n_iter == 0
    np.testing.assert_array_equal(res.grad, -fun(x0)[1])
    rec = Recorder(wrong_gradient)
    res = minimize_lbfgs(rec, x0, c1=0.1, max_linesearch=5, callback=rec.callback)
    assert not res.converged and "line search failed" in res.message
    # The trials of the failed search are never returned, even a lower one.
    x_last, f_last, g_last = (rec.evals[rec.iterations[-1].n_evals - 1] if rec.iterations
                              else rec.evals[0])
    np.testing.assert_array_equal(res.x, x_last)
    np.testing.assert_array_equal(res.grad, g_last)
    assert res.fun == pytest.approx(f_last + 0.1 * np.abs(x_last).sum(), rel=1e-15)


def noisy_quadratic(n=12, seed=0, ulps=4):
    """A quadratic whose value carries a few ulps of deterministic noise.

    The gradient is exact, the value is off by up to ``ulps`` units in the
    last place, pseudo-randomly but reproducibly in ``x``: what a sum of
    many terms looks like near its minimum, on any processor.
    """
    fun, A, b = make_quadratic(n, seed)

    def noisy(x):
        f, g = fun(x)
        key = int.from_bytes(np.ascontiguousarray(x).tobytes()[-8:], "little")
        jitter = (key * 2654435761 % 2**32) / 2**32 * 2.0 - 1.0  # in [-1, 1)
        return f + jitter * ulps * np.spacing(abs(f)), g

    return noisy, np.linalg.solve(A, b)


@pytest.mark.parametrize("linesearch", ["more_thuente", "backtracking"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("ulps", [4, 1000])
def test_round_off_limit_is_convergence(linesearch, seed, ulps):
    # epsilon=0 can never be met: every run ends at the round-off limit,
    # converged, at the last accepted iterate, close to the minimiser. With
    # 1000 ulps of error (a loss summed over many examples has that much),
    # the error is measured on the line search's trials.
    fun, x_star = noisy_quadratic(seed=seed, ulps=ulps)
    rec = Recorder(fun)
    res = minimize_lbfgs(rec, np.zeros(x_star.size), epsilon=0.0, period=0, max_iter=500,
                         linesearch=linesearch, callback=rec.callback)
    assert res.converged, res.message
    assert res.message.startswith("converged: round-off limit at iteration "), res.message
    assert res.n_iter < 500
    assert rel_err(res.x, x_star) < 1e-6
    last = rec.evals[rec.iterations[-1].n_evals - 1]
    np.testing.assert_array_equal(res.x, last[0])
    assert res.fun == last[1] == rec.iterations[-1].fun


def test_round_off_limit_with_l1():
    fun, x_star = noisy_quadratic(seed=3)
    res = minimize_lbfgs(fun, np.zeros(x_star.size), c1=0.05, epsilon=0.0, period=0,
                         max_iter=500)
    assert res.converged and "round-off limit" in res.message, res.message
    assert_l1_optimal(lambda x: make_quadratic(12, 3)[0](x), res.x, 0.05, atol=1e-6)


def test_round_off_limit_of_a_vanishing_gradient():
    # Unpenalised logistic loss on separable data, written as a CRF writes
    # its loss (log Z - score: log(e^z + 1) - z). The margins z grow, f
    # falls to rounding-error size around 0 and the gradient vanishes: the
    # run ends converged, not with a failure.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = np.sign(X @ np.array([1.0, -2.0, 0.5]))

    def fun(w):
        z = y * (X @ w)
        return np.sum(np.logaddexp(z, 0.0) - z), -X.T @ (y * 0.5 * (1.0 - np.tanh(0.5 * z)))

    for linesearch in ("more_thuente", "backtracking"):
        res = minimize_lbfgs(fun, np.zeros(3), epsilon=0.0, period=0, max_iter=2000,
                             linesearch=linesearch)
        assert res.converged and "round-off limit" in res.message, res.message
        assert abs(res.fun) < 1e-10
        assert np.all(y * (X @ res.x) > 0)


def test_plateau_with_a_large_gradient_is_a_failure():
    # The objective is resolved only to 1e-3 (a plateau to the line search)
    # while its gradient is large: that is no round-off limit.
    fun, A, b = make_quadratic()

    def coarse(x):
        f, g = fun(x)
        return np.round(f, 3), g

    x0 = np.linalg.solve(A, b) + 1e-4
    res = minimize_lbfgs(coarse, x0, epsilon=0.0, period=0, max_iter=50)
    assert not res.converged
    assert "line search failed" in res.message and "||g|| / max(1, ||x||)" in res.message


# ---------------------------------------------------------------------------
# Buffers and input handling
# ---------------------------------------------------------------------------


def test_x0_not_modified_and_x_is_a_contiguous_float_vector():
    fun, _ = make_logistic()
    x0 = np.zeros(25)
    seen = []

    def wrapped(x):
        seen.append((x.dtype, x.shape, x.flags.c_contiguous, np.shares_memory(x, x0)))
        return fun(x)

    res = minimize_lbfgs(wrapped, x0, max_iter=5)
    np.testing.assert_array_equal(x0, 0.0)
    assert set(seen) == {(np.dtype(np.float64), (25,), True, False)}
    assert not np.shares_memory(res.x, x0)


def test_fun_reusing_its_gradient_buffer():
    fun, _ = make_logistic()
    buffer = np.empty(25)

    def reusing(x):
        f, g = fun(x)
        buffer[:] = g
        return f, buffer

    a = minimize_lbfgs(fun, np.zeros(25), max_iter=30, c1=0.5)
    b = minimize_lbfgs(reusing, np.zeros(25), max_iter=30, c1=0.5)
    np.testing.assert_array_equal(a.x, b.x)
    assert a.n_iter == b.n_iter


def test_integer_and_list_inputs():
    fun, A, b = make_quadratic(n=3)
    res = minimize_lbfgs(lambda x: (float(fun(x)[0]), list(fun(x)[1])), [0, 0, 0], epsilon=1e-10)
    np.testing.assert_allclose(res.x, np.linalg.solve(A, b), rtol=1e-7)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_memory": 0}, "n_memory"),
        ({"n_memory": 2.5}, "n_memory"),
        ({"c1": -1.0}, "c1"),
        ({"c1": np.nan}, "c1"),
        ({"max_iter": -1}, "max_iter"),
        ({"epsilon": -1e-5}, "epsilon"),
        ({"period": -1}, "period"),
        ({"delta": np.inf}, "delta"),
        ({"max_linesearch": 0}, "max_linesearch"),
        ({"linesearch": "wolfe"}, "linesearch"),
        ({"c1": 1.0, "linesearch": "more_thuente"}, "more_thuente"),
        ({"c1": 1.0, "l1_mask": np.ones(3, bool)}, "l1_mask"),
        ({"c1": 1.0, "l1_mask": np.ones(4)}, "boolean"),
        ({"l1_mask": np.ones(3, bool)}, "l1_mask"),
        ({"callback": 3}, "callback"),
    ],
)
def test_bad_arguments(kwargs, match):
    fun, _, _ = make_quadratic(n=4)
    with pytest.raises(ValueError, match=match):
        minimize_lbfgs(fun, np.zeros(4), **kwargs)


@pytest.mark.parametrize(
    "x0, match",
    [
        ([0.0, np.nan, 0.0, 0.0], r"x0\[1\]"),
        ([0.0, np.inf, 0.0, 0.0], r"x0\[1\]"),
        (np.zeros((2, 2)), "1-D"),
        ([], "empty"),
        (["a", "b"], "real numbers"),
    ],
)
def test_bad_x0(x0, match):
    fun, _, _ = make_quadratic(n=4)
    with pytest.raises(ValueError, match=match):
        minimize_lbfgs(fun, x0)


def test_not_callable():
    with pytest.raises(ValueError, match="callable"):
        minimize_lbfgs(None, np.zeros(3))


def _breaks_after(n_good, bad):
    fun, _, _ = make_quadratic(n=4)
    calls = []

    def wrapped(x):
        calls.append(1)
        f, g = fun(x)
        return bad(f, g) if len(calls) > n_good else (f, g)

    return wrapped


@pytest.mark.parametrize(
    "bad, match",
    [
        (lambda f, g: (np.nan, g), "non-finite objective"),
        (lambda f, g: (np.inf, g), "non-finite objective"),
        (lambda f, g: (f, np.r_[g[:2], np.nan, g[3:]]), r"non-finite gradient \(g\[2\]"),
        (lambda f, g: (f, g[:3]), "shape"),
        (lambda f, g: (f, g.astype(complex)), "dtype"),
        (lambda f, g: (np.ones(2), g), "scalar"),
        (lambda f, g: f, "pair"),
    ],
)
def test_bad_fun_output_names_the_iteration(bad, match):
    # At the starting point ...
    with pytest.raises(ValueError, match=match) as info:
        minimize_lbfgs(_breaks_after(0, bad), np.zeros(4))
    assert "starting point" in str(info.value)
    # ... and inside a line search: the error says which iteration.
    with pytest.raises(ValueError, match=match) as info:
        minimize_lbfgs(_breaks_after(4, bad), np.zeros(4), epsilon=0.0, period=0)
    assert "at iteration" in str(info.value) and "line-search step" in str(info.value)


# ---------------------------------------------------------------------------
# Building blocks against published numbers and definitions
# ---------------------------------------------------------------------------


def _mt_function_1(a, beta=2.0):
    return -a / (a * a + beta), (a * a - beta) / (a * a + beta) ** 2


def _mt_function_2(a, beta=0.004):
    return (a + beta) ** 5 - 2 * (a + beta) ** 4, 5 * (a + beta) ** 4 - 8 * (a + beta) ** 3


def _mt_function_3(a, beta=0.01, ell=39):
    if a <= 1 - beta:
        phi0, dphi0 = 1 - a, -1.0
    elif a >= 1 + beta:
        phi0, dphi0 = a - 1, 1.0
    else:
        phi0, dphi0 = (a - 1) ** 2 / (2 * beta) + beta / 2, (a - 1) / beta
    wave = np.pi * ell * a / 2
    return (
        phi0 + 2 * (1 - beta) / (ell * np.pi) * np.sin(wave),
        dphi0 + (1 - beta) * np.cos(wave),
    )


def _mt_yanai(beta1, beta2):
    def gamma(b):
        return np.sqrt(1 + b * b) - b

    def phi(a):
        r1, r2 = np.sqrt((1 - a) ** 2 + beta2**2), np.sqrt(a * a + beta1**2)
        return (
            gamma(beta1) * r1 + gamma(beta2) * r2,
            gamma(beta1) * (a - 1) / r1 + gamma(beta2) * a / r2,
        )

    return phi


# More and Thuente (1994), Tables 1-6: for the starting steps 1e-3, 1e-1,
# 1e1, 1e3, the number of evaluations and the step found.
MORE_THUENTE_TABLES = [
    (_mt_function_1, 1e-3, 1e-1, [(6, 1.4), (3, 1.4), (1, 10.0), (4, 37.0)]),
    (_mt_function_2, 1e-1, 1e-1, [(12, 1.6), (8, 1.6), (8, 1.6), (11, 1.6)]),
    (_mt_function_3, 1e-1, 1e-1, [(12, 1.0), (12, 1.0), (10, 1.0), (13, 1.0)]),
    (_mt_yanai(1e-3, 1e-3), 1e-3, 1e-3, [(4, 0.085), (1, 0.10), (3, 0.35), (4, 0.83)]),
    (_mt_yanai(1e-2, 1e-3), 1e-3, 1e-3, [(6, 0.075), (3, 0.078), (7, 0.073), (8, 0.076)]),
    (_mt_yanai(1e-3, 1e-2), 1e-3, 1e-3, [(13, 0.93), (11, 0.93), (8, 0.92), (11, 0.92)]),
]


@pytest.mark.parametrize("table", range(len(MORE_THUENTE_TABLES)))
def test_more_thuente_reproduces_published_tables(table):
    from sksparse_struct.learners._lbfgs import _more_thuente

    phi, ftol, gtol, expected = MORE_THUENTE_TABLES[table]
    f0, d0 = phi(0.0)
    for start, (n_evals, step) in zip([1e-3, 1e-1, 1e1, 1e3], expected):
        failure, stp, f, count = _more_thuente(phi, f0, d0, start, 100, ftol=ftol, gtol=gtol)
        assert failure is None
        assert count == n_evals
        assert stp == pytest.approx(step, rel=0.03)
        f_stp, d_stp = phi(stp)
        assert f == f_stp and f <= f0 + ftol * stp * d0
        assert abs(d_stp) <= gtol * abs(d0)


@given(
    x=st.lists(st.sampled_from([-2.0, -0.5, 0.0, 0.0, 0.3, 1.5]), min_size=1, max_size=12),
    g_seed=st.integers(0, 1000),
    c=st.floats(0.05, 3.0),
    masked=st.booleans(),
)
def test_pseudo_gradient_matches_one_sided_derivatives(x, g_seed, c, masked):
    from sksparse_struct.learners._lbfgs import _L1Region

    x = np.array(x)
    n = x.size
    rng = np.random.default_rng(g_seed)
    g = rng.choice([-4.0, -1.0, -0.01, 0.0, 0.02, 1.0, 4.0], size=n)
    mask = rng.random(n) < 0.6 if masked else np.ones(n, bool)
    pg = np.empty(n)
    _L1Region(mask if masked else None, n).pseudo_gradient(x, g, c, pg)
    # Andrew and Gao's definition from the one-sided partial derivatives of
    # f + c ||x[mask]||_1: the right one if negative, the left one if
    # positive, zero otherwise.
    for i in range(n):
        pen = c if mask[i] else 0.0
        right = g[i] + (pen if x[i] >= 0 else -pen)
        left = g[i] + (pen if x[i] > 0 else -pen)
        expected = right if right < 0 else (left if left > 0 else 0.0)
        assert pg[i] == pytest.approx(expected, abs=1e-15)


# ---------------------------------------------------------------------------
# Same trajectory as libLBFGS (CRFsuite's optimiser), when its Python
# binding (PyPI "pylbfgs") is installed
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "problem, c1, settings, rtol",
    [
        ("logistic", 0.0, {}, 1e-12),
        ("logistic", 0.0, {"epsilon": 0.0, "period": 3, "delta": 1e-3}, 1e-12),
        ("logistic", 6.0, {}, 1e-12),
        ("logistic", 6.0, {"l1_range": (5, 20)}, 1e-12),
        ("least_squares", 5.0, {"n_memory": 3}, 1e-12),
        ("rosenbrock", 0.0, {}, 1e-6),
    ],
)
def test_same_iterates_as_liblbfgs(problem, c1, settings, rtol):
    liblbfgs = pytest.importorskip("lbfgs")
    if problem == "logistic":
        fun, x0 = make_logistic(seed=2)[0], np.zeros(25)
    elif problem == "least_squares":
        fun, x0 = make_least_squares()[0], np.zeros(30)
    else:
        fun, x0 = rosenbrock, np.array([-1.2, 1.0, -1.2, 1.0])
    settings = dict(settings)
    start, end = settings.pop("l1_range", (0, x0.size))
    options = {"epsilon": 1e-5, "period": 10, "delta": 1e-5, "n_memory": 6, **settings}
    if (start, end) != (0, x0.size):
        options["l1_mask"] = np.isin(np.arange(x0.size), np.arange(start, end))

    theirs = []

    def fill(x, g):
        f, grad = fun(x)
        g[:] = grad
        return f

    def progress(x, g, fx, xnorm, gnorm, step, k, ls):
        theirs.append((fx, ls))
        return 0

    try:
        liblbfgs.fmin_lbfgs(
            fill,
            x0.copy(),
            progress=progress,
            m=options["n_memory"],
            epsilon=options["epsilon"],
            past=options["period"],
            delta=options["delta"],
            max_iterations=100,
            orthantwise_c=c1,
            orthantwise_start=start,
            orthantwise_end=end,
            line_search="wolfe" if c1 else "default",
        )
    except liblbfgs.LBFGSError:  # the binding raises on any stop but the gradient test
        pass
    ours = []
    res = minimize_lbfgs(
        fun, x0, c1=c1, max_iter=100, callback=lambda i: ours.append((i.fun, i.n_linesearch)),
        **options,
    )
    assert res.n_iter == len(theirs) == len(ours)
    assert [ls for _, ls in ours] == [ls for _, ls in theirs]
    np.testing.assert_allclose([f for f, _ in ours], [f for f, _ in theirs], rtol=rtol)


@pytest.mark.parametrize("n_memory", [1, 2, 3])
@pytest.mark.parametrize("x0", ["random", [0.5, 0.1], [1.5, 0.12, 0.3]])
def test_owlqn_nonconvex_reaches_a_stationary_point(n_memory, x0):
    # A double well per coordinate: the curvature pairs of OWL-QN's Armijo
    # steps need not be positive here (the two fixed starts make pairs with
    # s'y < 0 that are skipped once the memory is full).
    def fun(x):
        return np.sum(-0.5 * x**2 + 0.25 * x**4), -x + x**3

    if x0 == "random":
        x0 = np.random.default_rng(1).uniform(-0.3, 0.3, 8)
    values = []
    res = minimize_lbfgs(
        fun, x0, c1=0.1, n_memory=n_memory, epsilon=1e-10, period=0, max_iter=200,
        callback=lambda info: values.append(info.fun),
    )
    assert res.converged
    assert np.all(np.diff(values) <= 0)
    assert_l1_optimal(fun, res.x, 0.1, atol=1e-8)
    assert np.any(res.x != 0)
