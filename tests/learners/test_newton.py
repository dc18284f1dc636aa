"""Tests of the truncated Newton solver newton_cg on its own."""

import numpy as np
from numpy.testing import assert_allclose

from sksparse_struct.learners import newton_cg


def test_newton_cg_solves_a_quadratic_exactly():
    rng = np.random.RandomState(6)
    M = rng.normal(size=(12, 12))
    A = M @ M.T + 0.1 * np.eye(12)
    b = rng.normal(size=12)
    w, info = newton_cg(
        lambda w: (0.5 * w @ A @ w - b @ w, A @ w - b),
        lambda v: A @ v,
        np.zeros(12),
        tol=1e-10,
        max_iter=50,
    )
    assert info["status"] == 0 and info["grad_max"] <= 1e-10
    assert_allclose(w, np.linalg.solve(A, b), rtol=1e-8)


def _log_cosh():
    """sum(log(cosh(w))) with a Hessian at the point last evaluated."""
    state = {}

    def loss_grad(w):
        state["w"] = w
        return float(np.sum(np.logaddexp(w, -w))), np.tanh(w)

    def hessp(v):
        return (1 - np.tanh(state["w"]) ** 2) * v

    return loss_grad, hessp


def test_newton_cg_reports_max_iter():
    # log(cosh(w)) summed: Newton from far away needs several steps.
    loss_grad, hessp = _log_cosh()
    w, info = newton_cg(loss_grad, hessp, np.full(3, 5.0), tol=1e-12, max_iter=2)
    assert info["status"] == 1 and info["n_iter"] == 2
    w, info = newton_cg(loss_grad, hessp, np.full(3, 5.0), tol=1e-12, max_iter=100)
    assert info["status"] == 0 and np.abs(w).max() < 1e-12


def test_newton_cg_callback_sees_every_step():
    loss_grad, hessp = _log_cosh()
    calls = []
    w0 = np.full(3, 5.0)
    w, info = newton_cg(loss_grad, hessp, w0, tol=1e-12, max_iter=100,
                        callback=lambda *args: calls.append(args))
    assert [c[0] for c in calls] == list(range(1, info["n_iter"] + 1))
    values = [c[1] for c in calls]
    assert values[0] < loss_grad(w0)[0]
    assert all(b <= a for a, b in zip(values, values[1:]))
    assert calls[-1][1] == info["value"] and calls[-1][2] == info["grad_max"]
    assert w0.tolist() == [5.0] * 3  # the start point is copied, not modified


def test_newton_cg_already_optimal():
    loss_grad, hessp = _log_cosh()
    w, info = newton_cg(loss_grad, hessp, np.zeros(4), tol=1e-8, max_iter=10)
    assert info["status"] == 0 and info["n_iter"] == 0
    assert w.tolist() == [0.0] * 4


def test_newton_cg_reports_a_failed_line_search():
    # A wrong gradient (wrong sign, far too large): no step along the Newton
    # direction decreases f, down to the smallest step the search tries.
    def loss_grad(w):
        return 0.5 * float(w @ w), -1e20 * w

    w, info = newton_cg(loss_grad, lambda v: v, np.ones(2), tol=1e-10, max_iter=10)
    assert info["status"] == 2
    assert w.tolist() == [1.0, 1.0]
