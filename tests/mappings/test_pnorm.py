"""Tests for sq_pnorm_max and its backward pass."""

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.exceptions import ConvergenceWarning

import sksparse_struct
from sksparse_struct.mappings import sparsemax, sq_pnorm_max, sq_pnorm_max_backward
from sksparse_struct.mappings._pnorm_fast import sq_pnorm_max_pg_rows, sq_pnorm_max_rows
from tests._helpers import central_difference_vjp, solve_on_simplex

finite_scores = arrays(
    np.float64,
    st.integers(1, 12),
    elements=st.floats(-50, 50, allow_nan=False, allow_infinity=False),
)
temperatures = st.floats(0.05, 20.0)
exponents = st.floats(1.1, 2.0)


def objective(x, z, q, temperature):
    x = np.clip(x, 0.0, None)
    return 0.5 * temperature * np.sum(x**q) ** (2.0 / q) - x @ z


def kkt_violation(prob, z, q, temperature):
    """Independent check of the KKT conditions, in units of z."""
    finite = np.isfinite(z)
    norm = np.sum(prob**q) ** (1.0 / q)
    grad = temperature * prob ** (q - 1.0) * norm ** (2.0 - q)
    g = np.where(finite, grad - np.where(finite, z, 0.0), np.inf)
    support = prob > 0
    tau = -g[support].mean()
    on = np.max(np.abs(g[support] + tau))
    off = np.max(-tau - g[~support & finite], initial=0.0)
    return max(on, off)


# ---------------------------------------------------------------- references


def test_p2_is_sparsemax():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(20, 9)) * 3
    for t in [1.0, 0.3, 4.0]:
        assert np.array_equal(sq_pnorm_max(z, p=2, temperature=t), sparsemax(z, t))
        # The generic Newton kernel agrees with sparsemax at q = 2 as well.
        out = np.empty_like(z)
        sq_pnorm_max_rows(z, 2.0, t, 100, 1e-12, out, np.empty(20, np.int64), np.empty(20))
        assert np.allclose(out, sparsemax(z, t), rtol=0, atol=1e-12)


@pytest.mark.parametrize("q", [1.2, 1.5, 1.8])
@pytest.mark.parametrize("temperature", [1.0, 0.5, 2.0])
@pytest.mark.parametrize("seed", range(3))
def test_matches_slsqp(q, temperature, seed):
    rng = np.random.default_rng(seed)
    d = 6
    z = rng.normal(size=d) * 2
    got = sq_pnorm_max(z, p=q, temperature=temperature)
    ref = solve_on_simplex(lambda x: objective(x, z, q, temperature), d)
    assert np.allclose(got, ref, rtol=0, atol=1e-5)
    # The solution is at least as good as SLSQP's on the objective.
    assert objective(got, z, q, temperature) <= objective(ref, z, q, temperature) + 1e-12


@pytest.mark.parametrize("q", [1.1, 1.3, 1.5, 1.9])
def test_kkt_to_documented_tolerance(q):
    rng = np.random.default_rng(1)
    z = rng.normal(size=(50, 40)) * rng.choice([0.1, 1.0, 10.0], size=(50, 1))
    for t in [0.1, 1.0, 5.0]:
        prob = sq_pnorm_max(z, p=q, temperature=t)
        for i in range(50):
            scale = max(1.0, np.abs(z[i]).max())
            assert kkt_violation(prob[i], z[i], q, t) <= 1e-12 * scale


def test_sparse_and_denser_than_sparsemax():
    z = np.array([1.0, 0.8, 0.1, -1.0])
    prob = sq_pnorm_max(z, p=1.5)
    assert prob[-1] == 0.0
    assert np.count_nonzero(sq_pnorm_max(z, p=1.2)) >= np.count_nonzero(sparsemax(z))


def test_convergence_warning():
    z = np.random.default_rng(0).normal(size=(3, 20))
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        sq_pnorm_max(z, p=1.5, max_iter=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sq_pnorm_max(z, p=1.5)


# ---------------------------------------------------------------- backward


def dense_prop32_jacobian(prob, q, temperature):
    """Prop. 3.2 / eq. 3.8 solved densely on the support (eq. 3.9 Hessian)."""
    s = prob > 0
    ps = prob[s]
    k = ps.shape[0]
    norm = np.sum(prob**q) ** (1.0 / q)
    dvec = (q - 1.0) / norm ** (q - 2.0) * ps ** (q - 2.0)
    u = np.sqrt((2.0 - q) / norm ** (2 * q - 2)) * ps ** (q - 1.0)
    hess = np.diag(dvec) + np.outer(u, u)
    a = np.eye(k) - np.ones((k, k)) / k  # sparsemax Jacobian on the support
    b = temperature * hess
    js = np.linalg.solve(np.eye(k) + a @ (b - np.eye(k)), a)
    jac = np.zeros((prob.shape[0], prob.shape[0]))
    jac[np.ix_(s, s)] = js
    return jac


@pytest.mark.parametrize("q", [1.3, 1.5, 1.8, 2.0])
@pytest.mark.parametrize("temperature", [1.0, 0.5, 2.5])
@pytest.mark.parametrize("seed", range(3))
def test_backward_matches_dense_prop32_and_finite_differences(q, temperature, seed):
    rng = np.random.default_rng(seed)
    d = 7
    z = rng.normal(size=d) * 1.5
    prob = sq_pnorm_max(z, p=q, temperature=temperature)
    jac = np.stack(
        [sq_pnorm_max_backward(prob, e, p=q, temperature=temperature) for e in np.eye(d)]
    )
    assert np.allclose(jac, dense_prop32_jacobian(prob, q, temperature), rtol=0, atol=1e-10)
    assert np.allclose(jac, jac.T, rtol=0, atol=1e-12)
    # Away from kinks: every off-support score clearly below the threshold.
    norm = np.sum(prob**q) ** (1 / q)
    tau = np.mean(z[prob > 0] - temperature * prob[prob > 0] ** (q - 1) * norm ** (2 - q))
    if np.any(np.abs(z[prob == 0] - tau) < 1e-3) or prob[prob > 0].min() < 1e-4:
        pytest.skip("too close to a change of support")
    dp = rng.normal(size=d)
    got = sq_pnorm_max_backward(prob, dp, p=q, temperature=temperature)
    ref = central_difference_vjp(lambda v: sq_pnorm_max(v, p=q, temperature=temperature), z, dp)
    assert np.allclose(got, ref, rtol=0, atol=1e-7)


def test_backward_batch_equals_rows():
    rng = np.random.default_rng(4)
    z = rng.normal(size=(5, 7))
    dp = rng.normal(size=(5, 7))
    prob = sq_pnorm_max(z, p=1.4, temperature=0.7)
    batch = sq_pnorm_max_backward(prob, dp, p=1.4, temperature=0.7)
    for i in range(5):
        row = sq_pnorm_max_backward(prob[i], dp[i], p=1.4, temperature=0.7)
        assert np.array_equal(batch[i], row)
    assert np.all(batch[prob == 0] == 0)


# ---------------------------------------------------------------- properties


@given(finite_scores, exponents, temperatures)
def test_output_on_simplex_and_kkt(z, q, temperature):
    prob = sq_pnorm_max(z, p=q, temperature=temperature)
    assert prob.dtype == np.float64 and prob.shape == z.shape
    assert np.all(prob >= 0) and abs(prob.sum() - 1.0) <= 1e-12
    scale = max(1.0, np.abs(z).max())
    assert kkt_violation(prob, z, q, temperature) <= 1e-11 * scale


@given(finite_scores, exponents, st.randoms(use_true_random=False))
def test_permutation_equivariance(z, q, rnd):
    perm = np.arange(z.shape[0])
    rnd.shuffle(perm)
    assert np.allclose(sq_pnorm_max(z[perm], p=q), sq_pnorm_max(z, p=q)[perm], rtol=0, atol=1e-10)


@given(finite_scores, exponents, st.floats(-100, 100))
def test_shift_invariance(z, q, c):
    assert np.allclose(sq_pnorm_max(z + c, p=q), sq_pnorm_max(z, p=q), rtol=0, atol=1e-9)


@given(finite_scores, exponents, temperatures)
def test_temperature_is_scaling(z, q, temperature):
    assert np.allclose(
        sq_pnorm_max(z, p=q, temperature=temperature),
        sq_pnorm_max(z / temperature, p=q),
        rtol=0,
        atol=1e-10,
    )


# ---------------------------------------------------------------- edge cases


def test_edge_cases():
    assert sq_pnorm_max([3.0]).tolist() == [1.0]
    assert np.allclose(sq_pnorm_max([2.0, 2.0, -5.0]), [0.5, 0.5, 0.0], rtol=0, atol=1e-15)
    assert np.allclose(sq_pnorm_max(np.full(10, -7.0)), 0.1, rtol=0, atol=1e-15)
    assert sq_pnorm_max([1e6, -1e6, 0.0]).tolist() == [1.0, 0.0, 0.0]
    assert np.allclose(
        sq_pnorm_max([1e6, 1e6 - 0.5, -1e6]), sq_pnorm_max([0.5, 0.0, -2e6]), rtol=0, atol=1e-9
    )
    z = np.array([0.3, -np.inf, 0.2, -np.inf])
    prob = sq_pnorm_max(z)
    assert prob[1] == 0.0 and prob[3] == 0.0
    assert np.allclose(prob[[0, 2]], sq_pnorm_max(z[[0, 2]]), rtol=0, atol=1e-14)
    z32 = np.array([[0.5, 1.0, 0.1]], dtype=np.float32)
    assert sq_pnorm_max(z32).dtype == np.float64
    assert np.array_equal(sq_pnorm_max(z32), sq_pnorm_max(z32.astype(np.float64)))


def test_batch_equals_rows():
    rng = np.random.default_rng(5)
    z = rng.normal(size=(6, 9))
    z[2, 3] = -np.inf
    batch = sq_pnorm_max(z, p=1.3, temperature=0.8)
    for i in range(6):
        assert np.array_equal(batch[i], sq_pnorm_max(z[i], p=1.3, temperature=0.8))


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "z, match",
    [
        ([0.0, np.nan], r"NaN \(row 0, position 1\)"),
        ([[0.0, 1.0], [np.inf, 0.0]], r"\+inf \(row 1, position 0\)"),
        ([[0.0, 1.0], [-np.inf, -np.inf]], "every entry of row 1"),
        (np.zeros((2, 2, 2)), "3 dimensions"),
    ],
)
def test_bad_scores(z, match):
    with pytest.raises(ValueError, match=match):
        sq_pnorm_max(z)


@pytest.mark.parametrize("bad", [1.0, 0.5, 2.5, np.nan, "1.5", True])
def test_bad_exponent(bad):
    with pytest.raises(ValueError, match=r"p must be a real number in \(1, 2\]"):
        sq_pnorm_max([0.0, 1.0], p=bad)
    with pytest.raises(ValueError, match=r"p must be a real number in \(1, 2\]"):
        sq_pnorm_max_backward([0.5, 0.5], [0.0, 1.0], p=bad)


def test_bad_parameters():
    with pytest.raises(ValueError, match="max_iter"):
        sq_pnorm_max([0.0, 1.0], max_iter=0)
    with pytest.raises(ValueError, match="max_iter"):
        sq_pnorm_max([0.0, 1.0], max_iter=2.5)
    with pytest.raises(ValueError, match="tol"):
        sq_pnorm_max([0.0, 1.0], tol=-1.0)
    with pytest.raises(ValueError, match="temperature"):
        sq_pnorm_max([0.0, 1.0], temperature=0.0)
    with pytest.raises(ValueError, match="non-negative"):
        sq_pnorm_max_backward([1.5, -0.5], [0.0, 1.0])
    with pytest.raises(ValueError, match="no positive entry"):
        sq_pnorm_max_backward([0.0, 0.0], [0.0, 1.0])
    with pytest.raises(ValueError, match="does not match"):
        sq_pnorm_max_backward([0.5, 0.5], [0.0, 1.0, 2.0])


# ---------------------------------------------------------------- projected gradient

PG = "projected_gradient"


def pg_rows(z, q, temperature, max_iter=10_000, tol=1e-6):
    """The PG kernel directly: output, iteration counts and residuals."""
    z = np.ascontiguousarray(np.atleast_2d(z), dtype=np.float64)
    out = np.empty_like(z)
    n_iter = np.empty(z.shape[0], np.int64)
    residual = np.empty(z.shape[0])
    sq_pnorm_max_pg_rows(z, q, temperature, max_iter, tol, out, n_iter, residual)
    return out, n_iter, residual


@pytest.mark.parametrize("q", [1.2, 1.5, 1.8, 2.0])
@pytest.mark.parametrize("temperature", [0.3, 1.0, 4.0])
def test_pg_matches_newton_and_kkt(q, temperature):
    rng = np.random.default_rng(int(10 * q + temperature))
    z = rng.normal(size=(12, 30)) * rng.choice([0.3, 1.0, 5.0], size=(12, 1))
    z[:, 0] += 1e6 * (np.arange(12) % 2)  # large scores: shift must be exact
    z[3, 5:] = -np.inf  # masked entries
    z[4, :] = z[4, 0]  # all equal
    z[5, :3] = z[5].max() + 0.1  # ties at the top
    # p = 1.2 is slow for projected gradient (documented): a looser tol.
    tol = 1e-6 if q < 1.5 else 1e-8
    ref = sq_pnorm_max(z, p=q, temperature=temperature)
    got, _, residual = pg_rows(z, q, temperature, max_iter=20_000, tol=tol)
    converged = residual <= tol
    # Every row converges except, at p = 1.2, rows whose solution has entries
    # of order 1e-13 (scores within 1e-3 of the threshold): their step is
    # tiny. Those rows are reported, and the public function warns.
    assert converged.all() or q < 1.5
    assert converged.sum() >= 10
    kwargs = dict(p=q, temperature=temperature, tol=tol, method=PG, max_iter=20_000)
    if not converged.all():
        with pytest.warns(ConvergenceWarning, match=f"{(~converged).sum()} of 12 rows"):
            public = sq_pnorm_max(z, **kwargs)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            public = sq_pnorm_max(z, **kwargs)
    assert np.allclose(public, got, rtol=0, atol=1e-12)
    assert np.all(got >= 0) and np.allclose(got.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert np.all(got[3, 5:] == 0.0)
    # Documented accuracy: within tol / (p - 1) of the exact solution.
    assert np.abs(got - ref)[converged].max() <= tol / (q - 1)
    # The KKT residual (units of z / temperature) is below tol.
    for i in np.flatnonzero(converged):
        zi = z[i] - z[i].max()
        assert kkt_violation(got[i], zi / temperature, q, 1.0) <= tol * (1 + 1e-6)


def test_pg_with_scores_spanning_more_than_the_range():
    # A score more than finfo.max below the row max was shifted to -inf: the
    # gradient became NaN and the backtracking loop never ended. Run in a
    # subprocess, so that a regression fails instead of hanging the suite.
    code = (
        "import json, numpy as np\n"
        "from sksparse_struct.mappings import sq_pnorm_max\n"
        "z = np.array([[-4e307, 1.78e308, 1.73e308], [1e308, -1e308, 9.9e307]])\n"
        "p = sq_pnorm_max(z, temperature=1e307, method='projected_gradient', tol=1e-10)\n"
        "print(json.dumps(p.tolist()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        cwd=Path(sksparse_struct.__file__).parents[1],
    )
    assert done.returncode == 0, done.stderr
    p = np.array(json.loads(done.stdout))
    z = np.array([[-4e307, 1.78e308, 1.73e308], [1e308, -1e308, 9.9e307]])
    assert p[0, 0] == 0.0 and p[1, 1] == 0.0
    np.testing.assert_allclose(p, sq_pnorm_max(z, temperature=1e307), atol=1e-8)


def test_pg_kernel_reports_residual_and_iterations():
    rng = np.random.default_rng(7)
    z = rng.normal(size=(5, 40))
    out, n_iter, residual = pg_rows(z, 1.5, 1.0, tol=1e-7)
    assert np.all(residual <= 1e-7) and n_iter.max() >= 1
    for i in range(5):
        assert residual[i] == pytest.approx(kkt_violation(out[i], z[i], 1.5, 1.0), rel=1e-6)
    # q == 2: the starting point (sparsemax) is already the solution.
    out, n_iter, residual = pg_rows(z, 2.0, 1.0, tol=1e-12)
    assert np.all(n_iter == 0) and np.allclose(out, sparsemax(z), rtol=0, atol=1e-15)
    # d == 1 and a single finite entry: no iteration needed.
    out, n_iter, _ = pg_rows([[3.0], [-np.inf], [1.0]][0:1], 1.5, 1.0)
    assert out.tolist() == [[1.0]] and n_iter.tolist() == [0]
    out, n_iter, _ = pg_rows([[-np.inf, 2.0, -np.inf]], 1.3, 0.5)
    assert out.tolist() == [[0.0, 1.0, 0.0]] and n_iter.tolist() == [0]


@pytest.mark.parametrize("q", [1.3, 1.5, 1.8])
def test_backward_from_pg_output(q):
    rng = np.random.default_rng(3)
    z = rng.normal(size=(4, 8))
    dp = rng.normal(size=(4, 8))
    exact = sq_pnorm_max(z, p=q)
    approx = sq_pnorm_max(z, p=q, method=PG, tol=1e-10)
    assert np.array_equal(approx > 0, exact > 0)
    got = sq_pnorm_max_backward(approx, dp, p=q)
    ref = sq_pnorm_max_backward(exact, dp, p=q)
    assert np.allclose(got, ref, rtol=0, atol=1e-6)


@given(finite_scores, st.floats(1.5, 2.0), temperatures)
def test_pg_property_close_to_newton(z, q, temperature):
    # p >= 1.5: projected gradient converges within the default max_iter
    # (p near 1 can stall on entries of order 1e-13, see the docstring).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = sq_pnorm_max(z, p=q, temperature=temperature, method=PG, tol=1e-7)
    assert np.all(got >= 0) and abs(got.sum() - 1.0) <= 1e-12
    ref = sq_pnorm_max(z, p=q, temperature=temperature)
    assert np.abs(got - ref).max() <= 1e-7 / (q - 1)
    scale = np.where(np.isfinite(z), z - z.max(), -np.inf) / temperature
    assert kkt_violation(got, scale, q, 1.0) <= 1e-7 * (1 + 1e-6)


def test_pg_convergence_warning_and_defaults():
    z = np.random.default_rng(0).normal(size=(3, 50))
    with pytest.warns(ConvergenceWarning, match=r"method='projected_gradient'.*max_iter=2"):
        sq_pnorm_max(z, p=1.5, method=PG, max_iter=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = sq_pnorm_max(z, p=1.5, method=PG)
        b = sq_pnorm_max(z, p=1.5, method=PG, max_iter=10_000, tol=1e-6)
        c = sq_pnorm_max(z, p=1.5, method="newton", max_iter=100, tol=1e-12)
    assert np.array_equal(a, b)
    assert np.array_equal(c, sq_pnorm_max(z, p=1.5))
    assert np.abs(a - c).max() <= 2e-6


@pytest.mark.parametrize("bad", ["pg", "Newton", None, 1])
def test_bad_method(bad):
    match = r"method must be one of \['newton', 'projected_gradient'\]"
    with pytest.raises(ValueError, match=match):
        sq_pnorm_max([0.0, 1.0], method=bad)
    with pytest.raises(ValueError, match="max_iter"):
        sq_pnorm_max([0.0, 1.0], method=PG, max_iter=0)
    with pytest.raises(ValueError, match="tol"):
        sq_pnorm_max([0.0, 1.0], method=PG, tol=0.0)
