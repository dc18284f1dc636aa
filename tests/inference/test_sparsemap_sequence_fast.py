"""The compiled active-set loop for linear chains against the generic loop and brute force.

``sparsemap(Sequence(), ...)`` runs ``_solve_active_set_sequence`` (one
compiled call, Viterbi as the oracle); the generic Python loop stays the
reference. Both must give the same support, probabilities, iterations and gap
to the last bit. The optimum itself is checked against every enumerated label
sequence: a Wolfe-gap certificate and a QP over all sequences solved by SLSQP.
"""

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning

from sksparse_struct.structures._base import ORACLE_SEQUENCE
from tests._helpers import compiled_kind
import sksparse_struct.inference._sparsemap as sm
from sksparse_struct.inference import sparsemap
from sksparse_struct.inference._sparsemap_fast import (
    active_set_sequence,
    sparsemap_sequence_parts,
)
from sksparse_struct.structures import Sequence
from sksparse_struct.structures._sequence import kernel_inputs


def _generic(*potentials, **kwargs):
    original = sm._compiled_oracle
    sm._compiled_oracle = lambda *args: None
    try:
        return sparsemap(Sequence(), *potentials, **kwargs)
    finally:
        sm._compiled_oracle = original


def _both(*potentials, **kwargs):
    """Fast and generic results, or the two ValueError messages."""
    assert compiled_kind(Sequence(), "active_set", None) == ORACLE_SEQUENCE
    outcome = []
    for solve in (lambda: sparsemap(Sequence(), *potentials, **kwargs),
                  lambda: _generic(*potentials, **kwargs)):
        try:
            outcome.append(solve())
        except ValueError as exc:
            outcome.append(str(exc))
    return outcome


def _assert_identical(fast, generic):
    if isinstance(generic, str) or isinstance(fast, str):
        assert fast == generic  # the same error message
        return
    assert fast.n_iter == generic.n_iter
    assert fast.converged == generic.converged
    assert fast.gap == generic.gap
    assert fast.objective == generic.objective
    np.testing.assert_array_equal(fast.probabilities, generic.probabilities)
    np.testing.assert_array_equal(fast.vertices_u, generic.vertices_u)
    np.testing.assert_array_equal(fast.vertices_v, generic.vertices_v)
    np.testing.assert_array_equal(fast.u, generic.u)
    np.testing.assert_array_equal(fast.v, generic.v)
    for a, b in zip(fast.marginals, generic.marginals):
        np.testing.assert_array_equal(a, b)
    assert len(fast.values) == len(generic.values)
    for a, b in zip(fast.values, generic.values):
        assert a.dtype == np.int64
        np.testing.assert_array_equal(a, b)


def _score(y, unary, trans, start, end):
    """Score of the label sequence ``y``, summed from scratch (-inf if forbidden)."""
    parts = [unary[i, a] for i, a in enumerate(y)]
    parts += [trans[a, b] for a, b in zip(y[:-1], y[1:])]
    if start is not None:
        parts.append(start[y[0]])
    if end is not None:
        parts.append(end[y[-1]])
    return -np.inf if min(parts) == -np.inf else float(sum(parts))


def _enumerate(unary, trans, start=None, end=None):
    """All label sequences of finite score: one-hot rows ``M`` and scores."""
    n, K = unary.shape
    rows, scores = [], []
    for y in itertools.product(range(K), repeat=n):
        s = _score(y, unary, trans, start, end)
        if s > -np.inf:
            m = np.zeros((n, K))
            m[np.arange(n), y] = 1.0
            rows.append(m.ravel())
            scores.append(s)
    return np.array(rows), np.array(scores)


@st.composite
def chains(draw, max_n=8, max_k=5):
    n = draw(st.integers(1, max_n))
    K = draw(st.integers(1, max_k))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from([1.0, 1e4]))
    integer = draw(st.booleans())  # exact ties
    forbid = draw(st.sampled_from([0.0, 0.1, 0.3]))
    with_ends = draw(st.booleans())

    def scores(shape):
        x = rng.standard_normal(shape)
        x = np.round(2 * x) if integer else x
        x = scale * x
        x[rng.random(shape) < forbid] = -np.inf
        return x

    unary, trans = scores((n, K)), scores((K, K))
    if with_ends:
        return unary, trans, scores(K), scores(K)
    return unary, trans


@given(chains())
def test_fast_sequence_loop_matches_generic(potentials):
    fast, generic = _both(*potentials)
    _assert_identical(fast, generic)
    if not isinstance(fast, str):
        assert fast.converged


@pytest.mark.parametrize("n, K", [(1, 1), (1, 4), (5, 1), (12, 6), (25, 23)])
@pytest.mark.parametrize("kind", ["normal", "ties", "forbidden", "large"])
def test_fast_sequence_loop_matches_generic_larger(n, K, kind):
    rng = np.random.default_rng(100 * n + K)
    unary, trans = rng.standard_normal((n, K)), rng.standard_normal((K, K))
    start, end = rng.standard_normal(K), rng.standard_normal(K)
    if kind == "ties":
        unary, trans, start, end = (np.round(x) for x in (unary, trans, start, end))
    elif kind == "forbidden":
        unary[rng.random(unary.shape) < 0.3] = -np.inf
        trans[rng.random(trans.shape) < 0.3] = -np.inf
        unary[:, 0] = trans[0, 0] = 0.0  # keep the all-zero sequence allowed
        start[0] = end[0] = 0.0
    elif kind == "large":
        unary, trans = 1e4 * unary, 1e4 * trans
    fast, generic = _both(unary, trans, start, end)
    _assert_identical(fast, generic)
    assert fast.converged


@pytest.mark.parametrize("max_iter", [1, 2, 4])
def test_fast_sequence_loop_not_converged_matches_generic(max_iter):
    rng = np.random.default_rng(3)
    potentials = rng.standard_normal((10, 5)), rng.standard_normal((5, 5))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fast, generic = _both(*potentials, max_iter=max_iter)
    assert sum(issubclass(w.category, ConvergenceWarning) for w in caught) == 2
    assert fast.n_iter == max_iter and not fast.converged
    _assert_identical(fast, generic)


def test_fast_sequence_loop_pivots_like_generic(monkeypatch):
    """Small transitions make a new sequence an affine combination of the
    support (the KKT matrix would be singular); both loops pivot alike."""
    hits = []
    original = sm.kkt_insert

    def counting(*args):
        inserted = original(*args)
        hits.append(not inserted)
        return inserted

    monkeypatch.setattr(sm, "kkt_insert", counting)  # seen by the generic loop only
    rng = np.random.default_rng(5)
    pivoted = 0
    for _ in range(300):
        n, K = rng.integers(2, 4), rng.integers(2, 4)
        potentials = rng.normal(size=(n, K)), 0.3 * rng.normal(size=(K, K))
        hits.clear()
        fast, generic = _both(*potentials)
        _assert_identical(fast, generic)
        pivoted += any(hits)
    assert pivoted  # the singular case did occur


@pytest.mark.parametrize(
    "potentials, match",
    [
        (([[0.0, -np.inf], [0.0, -np.inf]], [[-np.inf, 0.0], [0.0, 0.0]]), "position 1"),
        (([[0.0, 1.0], [0.0, 1.0]], np.zeros((2, 2)), [-np.inf, -np.inf]), "position 0"),
        (([[0.0, 1.0], [2.0, 0.0], [1.0, 1.0]], np.zeros((2, 2)), None, [-np.inf] * 2),
         "position 2"),
        (([[-np.inf]],  [[0.0]]), "position 0"),
        (([[-1e308], [-1e308]], [[0.0]]), "overflow"),
    ],
)
def test_infeasible_raises_like_generic(potentials, match):
    fast, generic = _both(*potentials)
    assert isinstance(fast, str) and fast == generic
    with pytest.raises(ValueError, match=match):
        sparsemap(Sequence(), *potentials)


@pytest.mark.parametrize(
    "potentials",
    [
        ([[-1e308], [1e308], [1e308]], [[0.0]]),
        ([[-1e308, 0.0], [1e308, 0.0]], [[-1e308, 0.0], [0.0, 0.0]]),
        ([[1e307] * 3] * 4, np.full((3, 3), -1e307)),
    ],
)
def test_extreme_scores_like_generic(potentials):
    fast, generic = _both(*potentials)
    _assert_identical(fast, generic)


def _qp_marginals(M, theta):
    """``u = M^T p`` at the optimum of ``max_p theta . p - ||M^T p||^2 / 2`` (SLSQP)."""
    d = theta.shape[0]
    res = minimize(
        lambda p: 0.5 * (p @ M) @ (p @ M) - theta @ p,
        np.full(d, 1.0 / d),
        jac=lambda p: M @ (p @ M) - theta,
        method="SLSQP",
        bounds=[(0.0, 1.0)] * d,
        constraints=[{"type": "eq", "fun": lambda p: p.sum() - 1.0,
                      "jac": lambda p: np.ones_like(p)}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    return res.x @ M


@pytest.mark.parametrize("seed", range(12))
def test_optimum_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, K = [(1, 4), (2, 3), (3, 3), (4, 2), (3, 4), (4, 3)][seed % 6]
    unary, trans = rng.standard_normal((n, K)), rng.standard_normal((K, K))
    start, end = rng.standard_normal(K), rng.standard_normal(K)
    if seed >= 6:
        trans[rng.random((K, K)) < 0.3] = -np.inf
        unary[rng.random((n, K)) < 0.2] = -np.inf
        unary[:, 0] = trans[0, 0] = 0.0
    res = sparsemap(Sequence(), unary, trans, start, end)
    M, theta = _enumerate(unary, trans, start, end)
    u = res.u
    # Every support sequence is a real sequence with the stated score.
    for y, m_row, prob in zip(res.values, res.vertices_u, res.probabilities):
        assert prob > 0.0
        np.testing.assert_array_equal(m_row.reshape(n, K).argmax(axis=1), y)
    theta_s = np.array([_score(tuple(y), unary, trans, start, end) for y in res.values])
    assert res.objective == pytest.approx(res.probabilities @ theta_s - 0.5 * u @ u, abs=1e-12)
    # Wolfe-gap certificate over every sequence: nothing improves the objective.
    gap = np.max(theta - M @ u) - (res.probabilities @ theta_s - u @ u)
    assert gap <= 1e-9 * max(1.0, abs(res.objective))
    # The unique optimal posteriors, from a generic QP solver.
    np.testing.assert_allclose(u, _qp_marginals(M, theta), atol=1e-6)
    # Transition posteriors are the matching expected counts.
    xi = np.zeros((K, K))
    for y, prob in zip(res.values, res.probabilities):
        for a, b in zip(y[:-1], y[1:]):
            xi[a, b] += prob
    np.testing.assert_allclose(res.marginals[1], xi, atol=1e-15)
    np.testing.assert_allclose(res.marginals[0].sum(axis=1), 1.0, atol=1e-12)


def _kernel_inputs(unary, trans, start=None, end=None):
    parts = Sequence().encode(unary, trans, start, end)
    return kernel_inputs(parts, parts.eta_u, parts.eta_v)


@given(chains())
def test_parts_entry_point_matches_result(potentials):
    unary_eta, trans = _kernel_inputs(*potentials)
    n, K = unary_eta.shape
    mu = np.full((n, K), np.nan)  # overwritten
    xi = np.ones((K, K))  # added to
    tp, mm, n_iter, converged, feasible = sparsemap_sequence_parts(
        unary_eta, trans, 1000, 1e-9, sm._DEPENDENT_TOL, mu, xi
    )
    try:
        res = sparsemap(Sequence(), *potentials)
    except ValueError:
        assert not feasible and not converged
        np.testing.assert_array_equal(mu, 0.0)
        np.testing.assert_array_equal(xi, 1.0)
        return
    assert feasible and converged == res.converged and n_iter == res.n_iter
    scale = max(1.0, np.abs(res.probabilities @ res.vertices_u).max())
    np.testing.assert_allclose(mu, res.marginals[0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(xi - 1.0, res.marginals[1], rtol=0, atol=1e-14)
    assert tp - 0.5 * mm == pytest.approx(res.objective, rel=1e-13, abs=1e-12 * scale)
    assert mm == pytest.approx(res.u @ res.u, rel=1e-14)
    # sum_i p_i theta_i = <eta_u, mu> + <trans, xi> over the parts in use.
    used_u, used_v = mu > 0, (xi - 1.0) > 0
    linear = unary_eta[used_u] @ mu[used_u] + trans[used_v] @ (xi - 1.0)[used_v]
    assert tp == pytest.approx(linear, rel=1e-12, abs=1e-9)


def test_parts_entry_point_accumulates_over_a_batch():
    rng = np.random.default_rng(0)
    K = 4
    trans = rng.standard_normal((K, K))
    xi = np.zeros((K, K))
    expected = np.zeros((K, K))
    for n in (1, 3, 7):
        unary = rng.standard_normal((n, K))
        mu = np.empty((n, K))
        sparsemap_sequence_parts(unary, trans, 1000, 1e-9, sm._DEPENDENT_TOL, mu, xi)
        res = sparsemap(Sequence(), unary, trans)
        expected += res.marginals[1]
        np.testing.assert_allclose(mu, res.marginals[0], atol=1e-15)
    np.testing.assert_allclose(xi, expected, atol=1e-14)


def test_kernel_returns_the_support():
    unary = np.array([[1.0, 0.9], [1.0, 0.0]])
    trans = np.zeros((2, 2))
    IDX, VAL, nnz, N, Y, theta, p, k, _, _, converged, status = active_set_sequence(
        unary, trans, 1000, 1e-9, 1e-10
    )
    assert status == 0 and converged and k == 2
    # Position 0 is sparsemax([1, .9]) = [.55, .45], position 1 sparsemax([1, 0]).
    np.testing.assert_array_equal(Y[:k], [[0, 0], [1, 0]])
    np.testing.assert_allclose(p[:k], [0.55, 0.45])
    np.testing.assert_allclose(theta[:k], [2.0, 1.9])
    np.testing.assert_array_equal(N[:k], [[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]])
    # The one-hot rows [1, 0, 1, 0] and [0, 1, 1, 0], stored sparse.
    np.testing.assert_array_equal(nnz[:k], [2, 2])
    np.testing.assert_array_equal(IDX[:k], [[0, 2], [1, 2]])
    np.testing.assert_array_equal(VAL[:k], [[1.0, 1.0], [1.0, 1.0]])


def test_fast_path_only_where_it_applies():
    assert compiled_kind(Sequence(), "pairwise", None) != ORACLE_SEQUENCE
    assert compiled_kind(Sequence(), "active_set", [np.array([0, 1])]) != ORACLE_SEQUENCE
    # A warm start goes through the generic loop and reaches the same optimum.
    rng = np.random.default_rng(1)
    unary, trans = rng.standard_normal((6, 3)), rng.standard_normal((3, 3))
    cold = sparsemap(Sequence(), unary, trans)
    warm = sparsemap(Sequence(), unary, trans, init=cold)
    np.testing.assert_allclose(warm.u, cold.u, atol=1e-12)
