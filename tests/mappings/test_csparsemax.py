"""Tests for csparsemax and csparsemax_backward (Malaviya et al. 2018)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sksparse_struct.mappings import csparsemax, csparsemax_backward, sparsemax
from tests._helpers import central_difference_vjp, solve_on_simplex

METHODS = ["sort", "linear"]


def random_bounds(rng, d, slack=0.5):
    u = rng.uniform(0.05, 1.0, size=d)
    return u / u.sum() * (1.0 + slack)


def threshold(z, p, u):
    free = (p > 0) & (p < u)
    return np.mean(z[free] - p[free]) if free.any() else None


def kink_margin(z, u, p):
    """Distance of z - tau to the kinks 0 and u (inf when tau is undefined)."""
    tau = threshold(z, p, u)
    if tau is None:
        return 0.0
    v = z - tau
    return min(np.min(np.abs(v)), np.min(np.abs(v - u)))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("d", [1, 2, 3, 6, 10])
def test_matches_slsqp(method, d):
    rng = np.random.default_rng(100 + d)
    for _ in range(6):
        z = rng.normal(size=d) * rng.choice([0.3, 1.0, 3.0])
        u = random_bounds(rng, d, slack=rng.choice([0.0, 0.2, 2.0]))
        p = csparsemax(z, u, method=method)
        ref = solve_on_simplex(lambda q: 0.5 * np.sum((q - z) ** 2), d, upper=u)
        np.testing.assert_allclose(p, ref, atol=1e-6)


def test_worked_example_and_rows():
    # Malaviya et al. 2018, Fig. 1 first row: z = (1.2, 0.8, -0.2), unit bounds
    np.testing.assert_allclose(csparsemax([1.2, 0.8, -0.2], np.ones(3)), [0.7, 0.3, 0.0])
    z = np.array([[1.2, 0.8, -0.2], [0.7, 0.9, 0.1]])
    p = csparsemax(z, [0.3, 0.7, 1.0])  # 1-D u broadcasts
    np.testing.assert_allclose(p, [[0.3, 0.7, 0.0], [0.3, 0.7, 0.0]])
    assert p[0, 0] == 0.3 and p[1, 1] == 0.7  # bounds hit exactly


@pytest.mark.parametrize("method", METHODS)
def test_unit_bounds_equal_sparsemax(method):
    rng = np.random.default_rng(5)
    z = rng.normal(size=(30, 8)) * 2
    np.testing.assert_allclose(csparsemax(z, np.ones(8), method=method), sparsemax(z), atol=1e-14)
    np.testing.assert_allclose(csparsemax(z, 3.0 * np.ones((30, 8)), method=method), sparsemax(z), atol=1e-14)


def test_sort_and_linear_agree():
    rng = np.random.default_rng(6)
    for d in [1, 4, 50, 2000]:
        z = np.round(rng.normal(size=(10, d)), 1)  # ties
        u = np.stack([random_bounds(rng, d, slack) for slack in np.linspace(0, 1, 10)])
        np.testing.assert_allclose(
            csparsemax(z, u, method="sort"), csparsemax(z, u, method="linear"), atol=1e-12, rtol=0
        )


def test_tight_and_zero_bounds():
    u = np.array([0.0, 0.5, 0.0, 0.5])
    for method in METHODS:
        p = csparsemax([10.0, -1.0, 3.0, 0.0], u, method=method)
        np.testing.assert_array_equal(p, u)
        p = csparsemax([10.0, -1.0, 3.0, 0.0], [0.0, 1.0, 0.0, 1.0], method=method)
        np.testing.assert_allclose(p, [0.0, 0.0, 0.0, 1.0])


def test_large_scores_and_masks():
    z = np.array([1e6, 1e6 - 0.5, -1e6, 1e6 - 0.1])
    p = csparsemax(z, [0.5, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(p, [0.5, 0.05, 0.0, 0.45], atol=1e-9)
    zm = np.array([0.3, -np.inf, 0.1, -np.inf])
    # masked bounds do not count towards feasibility
    p = csparsemax(zm, [0.6, 5.0, 0.4, 5.0])
    np.testing.assert_array_equal(p[[1, 3]], 0.0)
    np.testing.assert_allclose(p, [0.6, 0.0, 0.4, 0.0])
    with pytest.raises(ValueError, match="row 0 sum to 0.9"):
        csparsemax(zm, [0.6, 5.0, 0.3, 5.0])


@pytest.mark.parametrize("method", METHODS)
def test_exact_at_any_magnitude(method):
    # The projection only depends on differences of scores: adding a huge
    # constant must change nothing (it used to return non-distributions,
    # e.g. csparsemax([1e16] * 6, ones).sum() == 6, from about 4e9 on).
    z = np.array([0.375, 0.125, -0.5, 0.25, 0.0, -2.0])  # exact after the shifts
    u = np.array([0.3, 1.0, 1.0, 0.2, 1.0, 1.0])
    ref = csparsemax(z, u, method=method)
    for shift in [2.0**32, 2.0**44, -(2.0**49)]:
        got = csparsemax(z + shift, u, method=method)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-15)
    for big in [4e9, 1e16, 2.0**52, 1e300, -1e300]:
        p = csparsemax(np.full(6, big), np.ones(6), method=method)
        np.testing.assert_allclose(p, np.full(6, 1 / 6), rtol=0, atol=1e-15)
    fmax = np.finfo(np.float64).max
    p = csparsemax([fmax, -fmax, fmax], np.ones(3), method=method)
    np.testing.assert_array_equal(p, [0.5, 0.0, 0.5])


def test_float32_input():
    p = csparsemax(np.array([1.2, 0.8, -0.2], dtype=np.float32), np.ones(3, dtype=np.float32))
    assert p.dtype == np.float64
    np.testing.assert_allclose(p, [0.7, 0.3, 0.0], atol=1e-6)


@pytest.mark.parametrize(
    "z, u, match",
    [
        ([0.1, 0.2], [0.4, 0.4], "row 0 sum to 0.8"),
        ([0.1, 0.2], [1.5, -0.1], "non-negative; row 0, position 1"),
        ([0.1, 0.2], [1.0, np.nan], "finite; row 0, position 1"),
        ([0.1, 0.2], [1.0, 1.0, 1.0], "does not match"),
        ([0.1, np.nan], [1.0, 1.0], "NaN"),
        ([-np.inf, -np.inf], [1.0, 1.0], "every entry of row 0"),
        ([[0.1, 0.2], [0.3, 0.4]], [[1, 1], [0.2, 0.2]], "row 1 sum to 0.4"),
    ],
)
def test_bad_input(z, u, match):
    with pytest.raises(ValueError, match=match):
        csparsemax(z, u)


def test_bad_method():
    with pytest.raises(ValueError, match="method must be one of"):
        csparsemax([0.1, 0.2], [1.0, 1.0], method="fast")


# ---------------------------------------------------------------- backward


def fd_case(seed, d):
    """A random point whose active sets are stable under +-1e-6 steps."""
    rng = np.random.default_rng(seed)
    for _ in range(100):
        z = rng.normal(size=d)
        u = random_bounds(rng, d, slack=rng.uniform(0.1, 1.0))
        p = csparsemax(z, u)
        free = (p > 0) & (p < u)
        if free.any() and (p == u).any() and kink_margin(z, u, p) > 1e-3:
            return z, u, p
    raise AssertionError("no kink-free case found")


@pytest.mark.parametrize("seed", range(8))
def test_backward_matches_finite_differences(seed):
    d = 3 + seed
    z, u, p = fd_case(seed, d)
    dp = np.random.default_rng(seed + 1000).normal(size=d)
    dz, du = csparsemax_backward(p, u, dp)
    dz_fd = central_difference_vjp(lambda x: csparsemax(x, u), z, dp)
    du_fd = central_difference_vjp(lambda x: csparsemax(z, x), u, dp)
    np.testing.assert_allclose(dz, dz_fd, atol=1e-7)
    np.testing.assert_allclose(du, du_fd, atol=1e-7)
    # the free set is exactly where dz can be nonzero, A where du can
    assert np.all(dz[(p == 0) | (p == u)] == 0)
    assert np.all(du[p < u] == 0)


def test_backward_rows_and_1d_bounds():
    rng = np.random.default_rng(9)
    z = rng.normal(size=(4, 5))
    u = random_bounds(rng, 5)
    p = csparsemax(z, u)
    dp = rng.normal(size=(4, 5))
    dz, du = csparsemax_backward(p, u, dp)
    assert dz.shape == du.shape == (4, 5)
    for i in range(4):
        dzi, dui = csparsemax_backward(p[i], u, dp[i])
        np.testing.assert_array_equal(dz[i], dzi)
        np.testing.assert_array_equal(du[i], dui)


def test_backward_unit_bounds_equals_sparsemax_backward():
    from sksparse_struct.mappings import sparsemax_backward

    rng = np.random.default_rng(10)
    z = rng.normal(size=(10, 6))
    p = csparsemax(z, np.ones(6))
    dp = rng.normal(size=(10, 6))
    dz, du = csparsemax_backward(p, np.ones(6), dp)
    np.testing.assert_allclose(dz, sparsemax_backward(p, dp), atol=1e-14)
    # no bound is active unless a row is one-hot (p_i = u_i = 1, a kink)
    assert (p == 1.0).any(axis=1).sum() >= 1
    np.testing.assert_array_equal(du[p < 1.0], 0.0)


def test_backward_empty_free_set():
    # Bounds that sum to one: p = u, locally constant in z.
    u = np.array([0.3, 0.7, 0.0])
    z = np.array([0.2, -0.4, 1.0])
    p = csparsemax(z, u)
    np.testing.assert_array_equal(p, u)
    dp = np.array([1.0, -2.0, 0.5])
    dz, du = csparsemax_backward(p, u, dp)
    np.testing.assert_array_equal(dz, 0.0)
    np.testing.assert_array_equal(du, dp)
    # du is the exact derivative along perturbations keeping sum(u) fixed
    direction = np.array([1.0, -1.0, 0.0])
    eps = 1e-6
    fd = (dp @ csparsemax(z, u + eps * direction) - dp @ csparsemax(z, u - eps * direction)) / (2 * eps)
    assert abs(fd - du @ direction) < 1e-8
    # and the z-gradient matches finite differences
    np.testing.assert_allclose(dz, central_difference_vjp(lambda x: csparsemax(x, u), z, dp), atol=1e-8)


def test_backward_bad_input():
    with pytest.raises(ValueError, match="does not match"):
        csparsemax_backward([0.5, 0.5], [1.0, 1.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="sum to 0.8"):
        csparsemax_backward([0.4, 0.4], [0.4, 0.4], [1.0, 2.0])


# ------------------------------------------------------------- properties


@st.composite
def problems(draw):
    d = draw(st.integers(1, 10))
    z = np.array(draw(st.lists(st.floats(-5, 5), min_size=d, max_size=d)))
    z = np.round(z, draw(st.sampled_from([0, 2, 8])))
    w = np.array(draw(st.lists(st.floats(0, 1), min_size=d, max_size=d)))
    if w.sum() == 0:
        w[0] = 1.0
    u = w / w.sum() * draw(st.sampled_from([1.0, 1.1, 2.0, 10.0]))
    return z, u


@given(problems())
def test_properties(problem):
    z, u = problem
    p = csparsemax(z, u)
    np.testing.assert_allclose(p, csparsemax(z, u, method="sort"), atol=1e-12, rtol=0)
    assert abs(p.sum() - 1.0) < 1e-12
    assert np.all(p >= 0) and np.all(p <= u)
    # KKT: p = clip(z - tau, 0, u) for a single tau
    tau = threshold(z, p, u)
    if tau is not None:
        np.testing.assert_allclose(p, np.clip(z - tau, 0, u), atol=1e-9)
    # backward: dz sums to zero, lives on the free set; du on the bound set
    dp = np.sin(np.arange(len(z)) + 1.0)
    dz, du = csparsemax_backward(p, u, dp)
    assert abs(dz.sum()) < 1e-12
    free = (p > 0) & (p < u)
    assert np.all(dz[~free] == 0) and np.all(du[p != u] == 0)
    if free.any():
        # Prop. 1: on A, du = dp - m with m the mean of dp over F
        m = dp[free].mean()
        np.testing.assert_allclose(du[p == u], dp[p == u] - m, atol=1e-12)
