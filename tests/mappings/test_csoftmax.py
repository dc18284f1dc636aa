"""Tests for csoftmax and csoftmax_backward (Martins & Kreutzer 2017)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize

from sksparse_struct.mappings import csoftmax, csoftmax_backward
from tests._helpers import central_difference_vjp

try:
    from sksparse_struct.mappings import softmax
except ImportError:  # pragma: no cover - softmax lands from another work item

    def softmax(z):
        z = np.asarray(z, dtype=float)
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


def kl_reference(z, u):
    """Generic SLSQP solve of min KL(p || softmax(z)) s.t. 0 <= p <= u, sum p = 1."""
    d = z.shape[0]
    log_q = z - z.max() - np.log(np.sum(np.exp(z - z.max())))
    tiny = 1e-300

    def objective(p):
        pp = np.maximum(p, tiny)
        return np.sum(pp * (np.log(pp) - log_q))

    def grad(p):
        return np.log(np.maximum(p, tiny)) + 1 - log_q

    x0 = np.minimum(np.full(d, 1.0 / d), u)
    x0 = x0 + (1 - x0.sum()) * (u - x0) / max((u - x0).sum(), 1e-300)
    res = minimize(
        objective, x0, jac=grad, method="SLSQP",
        bounds=[(0.0, float(b)) for b in u],
        constraints=[{"type": "eq", "fun": lambda p: p.sum() - 1, "jac": lambda p: np.ones_like(p)}],
        options={"ftol": 1e-15, "maxiter": 2000},
    )
    return res.x


def random_bounds(rng, d, slack=0.5):
    u = rng.uniform(0.05, 1.0, size=d)
    return u / u.sum() * (1.0 + slack)


def check_kkt(z, u, p, rtol=1e-9):
    """p_i = min(u_i, exp(z_i) / Z) for one Z (closed form of Prop. 1)."""
    assert abs(p.sum() - 1) < 1e-12
    assert np.all(p >= 0) and np.all(p <= u)
    free = (p < u) & np.isfinite(z)
    if free.any() and p[free].sum() > 0:
        log_z = np.log(np.sum(np.exp(z[free] - z[free].max()))) + z[free].max() - np.log(p[free].sum())
        np.testing.assert_allclose(p[free], np.exp(z[free] - log_z), rtol=rtol, atol=1e-300)
        clamped = (p == u) & (u > 0) & np.isfinite(z)
        assert np.all(z[clamped] - log_z >= np.log(u[clamped]) - 1e-9)


@pytest.mark.parametrize("d", [1, 2, 3, 6, 10])
def test_matches_kl_slsqp(d):
    rng = np.random.default_rng(200 + d)
    for _ in range(5):
        z = rng.normal(size=d) * rng.choice([0.5, 1.0, 2.0])
        u = random_bounds(rng, d, slack=rng.choice([0.05, 0.3, 2.0]))
        p = csoftmax(z, u)
        ref = kl_reference(z, u)
        np.testing.assert_allclose(p, ref, atol=1e-6)
        check_kkt(z, u, p)


def test_unit_bounds_equal_softmax():
    rng = np.random.default_rng(1)
    z = rng.normal(size=(20, 7)) * 3
    np.testing.assert_allclose(csoftmax(z, np.ones(7)), softmax(z), rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(csoftmax(z, 4 * np.ones((20, 7))), softmax(z), rtol=1e-13, atol=1e-16)


def test_examples_by_hand():
    np.testing.assert_allclose(csoftmax([0.0, 0.0, 0.0], [0.2, 1.0, 1.0]), [0.2, 0.4, 0.4])
    # two rounds of clamping
    p = csoftmax([2.0, 1.0, 0.0], [0.3, 0.3, 1.0])
    np.testing.assert_allclose(p, [0.3, 0.3, 0.4])
    # tight bounds: p = u exactly
    u = np.array([0.1, 0.6, 0.3])
    np.testing.assert_array_equal(csoftmax([-3.0, 5.0, 0.0], u), u)


def test_zero_bounds_and_masks():
    p = csoftmax([5.0, 0.0, 1.0], [0.0, 1.0, 1.0])
    assert p[0] == 0.0
    np.testing.assert_allclose(p[1:], softmax(np.array([0.0, 1.0])))
    p = csoftmax([-np.inf, 0.0, 1.0, -np.inf], [1.0, 0.6, 0.6, 0.0])
    np.testing.assert_array_equal(p[[0, 3]], 0.0)
    np.testing.assert_allclose(p, [0.0, 0.4, 0.6, 0.0])
    with pytest.raises(ValueError, match="row 0 sum to 0.9"):
        csoftmax([-np.inf, 0.0, 1.0], [5.0, 0.3, 0.6])


def test_large_scores_are_stable():
    z = np.array([1e6, 1e6 - 1.0, -1e6, 1e6 - 2.0])
    u = np.array([0.5, 1.0, 1.0, 1.0])
    p = csoftmax(z, u)
    assert np.all(np.isfinite(p))
    np.testing.assert_allclose(p, csoftmax(z - 1e6, u), atol=1e-9)
    np.testing.assert_allclose(p[[1, 3]] / p[[1, 3]].sum(), softmax(np.array([-1.0, -2.0])), rtol=1e-9)
    assert p[0] == 0.5 and p[2] == 0.0
    p = csoftmax([-1e6, -1e6 + 3.0], [1.0, 0.5])
    np.testing.assert_allclose(p, [0.5, 0.5])
    # a clamped entry far above everything, with a tiny bound
    p = csoftmax([1e6, 0.0, 1.0], [1e-300, 1.0, 1.0])
    assert p[0] == 1e-300
    np.testing.assert_allclose(p[1:], softmax(np.array([0.0, 1.0])))


def test_float32_and_shapes():
    z = np.array([[0.0, 1.0], [2.0, -1.0], [0.5, 0.5]], dtype=np.float32)
    p = csoftmax(z, [0.6, 0.6])
    assert p.dtype == np.float64 and p.shape == (3, 2)
    np.testing.assert_allclose(p, [[0.4, 0.6], [0.6, 0.4], [0.5, 0.5]], atol=1e-7)


@pytest.mark.parametrize(
    "z, u, match",
    [
        ([0.1, 0.2], [0.4, 0.4], "row 0 sum to 0.8"),
        ([0.1, 0.2], [1.5, -0.1], "non-negative; row 0, position 1"),
        ([0.1, 0.2], [1.0, np.inf], "finite; row 0, position 1"),
        ([0.1, 0.2], [[1.0, 1.0], [1.0, 1.0]], "does not match"),
        ([0.1, np.inf], [1.0, 1.0], r"\+inf"),
        ([[0.1, 0.2], [0.3, 0.4]], [[1, 1], [0.2, 0.2]], "row 1 sum to 0.4"),
    ],
)
def test_bad_input(z, u, match):
    with pytest.raises(ValueError, match=match):
        csoftmax(z, u)


# ---------------------------------------------------------------- backward


def fd_case(seed, d):
    rng = np.random.default_rng(seed)
    for _ in range(200):
        z = rng.normal(size=d)
        u = random_bounds(rng, d, slack=rng.uniform(0.05, 0.8))
        p = csoftmax(z, u)
        free = p < u
        if free.any() and (~free).any():
            # stay away from kinks: unclamped entries well below their bound,
            # clamped ones well above it
            log_z = np.log(np.exp(z[free]).sum() / p[free].sum())
            margin = np.abs(z - log_z - np.log(u))
            if margin.min() > 1e-3:
                return z, u, p
    raise AssertionError("no kink-free case found")


@pytest.mark.parametrize("seed", range(8))
def test_backward_matches_finite_differences(seed):
    d = 2 + seed
    z, u, p = fd_case(seed, d)
    dp = np.random.default_rng(seed + 99).normal(size=d)
    dz, du = csoftmax_backward(p, u, dp)
    dz_fd = central_difference_vjp(lambda x: csoftmax(x, u), z, dp)
    du_fd = central_difference_vjp(lambda x: csoftmax(z, x), u, dp)
    np.testing.assert_allclose(dz, dz_fd, atol=1e-8)
    np.testing.assert_allclose(du, du_fd, atol=1e-8)


def test_backward_unit_bounds_equals_softmax_backward():
    rng = np.random.default_rng(4)
    z = rng.normal(size=(6, 5))
    p = csoftmax(z, np.ones(5))
    dp = rng.normal(size=(6, 5))
    dz, du = csoftmax_backward(p, np.ones(5), dp)
    np.testing.assert_allclose(dz, p * (dp - (p * dp).sum(axis=1, keepdims=True)), atol=1e-14)
    np.testing.assert_array_equal(du, 0.0)


def test_backward_tight_bounds():
    u = np.array([0.1, 0.6, 0.3])
    z = np.array([-3.0, 5.0, 0.0])
    p = csoftmax(z, u)
    dp = np.array([1.0, 2.0, -1.0])
    dz, du = csoftmax_backward(p, u, dp)
    np.testing.assert_array_equal(dz, 0.0)
    np.testing.assert_array_equal(du, dp)
    np.testing.assert_allclose(dz, central_difference_vjp(lambda x: csoftmax(x, u), z, dp), atol=1e-9)


def test_backward_rows_broadcast_and_errors():
    rng = np.random.default_rng(8)
    z = rng.normal(size=(3, 4))
    u = random_bounds(rng, 4, 0.2)
    p = csoftmax(z, u)
    dp = rng.normal(size=(3, 4))
    dz, du = csoftmax_backward(p, u, dp)
    for i in range(3):
        dzi, dui = csoftmax_backward(p[i], u, dp[i])
        np.testing.assert_array_equal(dz[i], dzi)
        np.testing.assert_array_equal(du[i], dui)
    with pytest.raises(ValueError, match="does not match"):
        csoftmax_backward(p, u, dp[:2])
    with pytest.raises(ValueError, match="dp contains -inf"):
        csoftmax_backward(p[0], u, [0.0, -np.inf, 0.0, 0.0])


# ------------------------------------------------------------- properties


@st.composite
def problems(draw):
    d = draw(st.integers(1, 10))
    z = np.array(draw(st.lists(st.floats(-30, 30), min_size=d, max_size=d)))
    z = np.round(z, draw(st.sampled_from([0, 2, 8])))
    w = np.array(draw(st.lists(st.floats(0, 1), min_size=d, max_size=d)))
    if w.sum() == 0:
        w[-1] = 1.0
    u = w / w.sum() * draw(st.sampled_from([1.0, 1.05, 2.0, 10.0]))
    shift = draw(st.sampled_from([0.0, 1e6, -1e6]))
    return z + shift, u


@given(problems())
def test_properties(problem):
    z, u = problem
    p = csoftmax(z, u)
    check_kkt(z, u, p, rtol=1e-8)
    assert np.all(p[u == 0] == 0)
    perm = np.arange(len(z))[::-1]
    np.testing.assert_allclose(csoftmax(z[perm], u[perm]), p[perm], atol=1e-13)
    dp = np.cos(np.arange(len(z)) * 1.3)
    dz, du = csoftmax_backward(p, u, dp)
    assert abs(dz.sum()) < 1e-12  # invariance to shifting z
    assert np.all(dz[p == u] == 0) and np.all(du[p < u] == 0)
