"""Tests for project_capped_simplex: both kernels, references, KKT, errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize

from sksparse_struct.mappings import project_capped_simplex, project_simplex

METHODS = ["sort", "linear"]


def slsqp_capped(z, lo, hi, radius):
    """Generic SLSQP solve of min ||p - z||^2, lo <= p <= hi, sum p = radius."""
    d = z.shape[0]
    x0 = np.clip(np.full(d, radius / d), lo, hi)
    res = minimize(
        lambda p: 0.5 * np.sum((p - z) ** 2),
        x0,
        jac=lambda p: p - z,
        method="SLSQP",
        bounds=list(zip(lo, hi)),
        constraints=[{"type": "eq", "fun": lambda p: p.sum() - radius,
                      "jac": lambda p: np.ones_like(p)}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    return res.x


def check_kkt(z, lo, hi, radius, p, atol=1e-9):
    """p = clip(z - tau, lo, hi) for a single tau, and sum p = radius."""
    assert abs(p.sum() - radius) <= atol * max(1, p.shape[0] / 100)
    assert np.all(p >= lo) and np.all(p <= hi)
    unmasked = np.isfinite(z)
    assert np.all(p[~unmasked] == lo[~unmasked])
    free = unmasked & (p > lo) & (p < hi)
    if free.any():
        taus = z[free] - p[free]
        tau = taus.mean()
        assert np.ptp(taus) <= atol
        at_lo = unmasked & (p == lo) & (lo < hi)
        at_hi = unmasked & (p == hi) & (lo < hi)
        assert np.all(z[at_lo] - tau <= lo[at_lo] + atol)
        assert np.all(z[at_hi] - tau >= hi[at_hi] - atol)
    else:
        # Some tau must separate: lower entries have z - lo <= tau <= z - hi
        # for upper entries.
        at_lo = unmasked & (p == lo) & (lo < hi)
        at_hi = unmasked & (p == hi) & (lo < hi) & ~at_lo
        t_min = np.max(z[at_lo] - lo[at_lo], initial=-np.inf)
        t_max = np.min(z[at_hi] - hi[at_hi], initial=np.inf)
        assert t_min <= t_max + atol


def random_problem(rng, d, radius=1.0):
    z = rng.normal(size=d) * rng.choice([0.1, 1.0, 5.0])
    lo = rng.uniform(0, 0.5 * radius / d, size=d) * rng.integers(0, 2, size=d)
    hi = lo + rng.uniform(0, 3 * radius / d, size=d)
    deficit = radius - hi.sum()
    if deficit > 0:  # make feasible
        hi += deficit / d + 1e-3
    return z, lo, hi


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("d", [1, 2, 3, 5, 8, 12])
def test_matches_slsqp(method, d):
    rng = np.random.default_rng(d)
    for _ in range(5):
        radius = float(rng.choice([1.0, 0.5, 2.0]))
        z, lo, hi = random_problem(rng, d, radius)
        p = project_capped_simplex(z, lo, hi, radius, method=method)
        ref = slsqp_capped(z, lo, hi, radius)
        np.testing.assert_allclose(p, ref, atol=1e-6)
        check_kkt(z, lo, hi, radius, p)


@pytest.mark.parametrize("method", METHODS)
def test_rows_and_broadcast(method):
    rng = np.random.default_rng(0)
    z = rng.normal(size=(6, 4))
    hi = np.array([0.5, 0.3, 0.4, 0.6])
    p = project_capped_simplex(z, 0.0, hi, method=method)
    assert p.shape == (6, 4)
    for i in range(6):
        np.testing.assert_array_equal(
            p[i], project_capped_simplex(z[i], 0.0, hi, method=method)
        )
    # per-row column bound (n_rows, 1) broadcasts too
    hi_col = np.linspace(0.3, 1.0, 6)[:, None]
    p2 = project_capped_simplex(z, 0.0, hi_col, method=method)
    assert np.all(p2 <= hi_col)
    np.testing.assert_allclose(p2.sum(axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_reduces_to_simplex_projection(method):
    rng = np.random.default_rng(1)
    z = rng.normal(size=(20, 7)) * 2
    np.testing.assert_allclose(
        project_capped_simplex(z, 0.0, 1.0, method=method), project_simplex(z), atol=1e-14
    )
    np.testing.assert_allclose(
        project_capped_simplex(z, 0.0, 5.0, radius=3.0, method=method),
        project_simplex(z, radius=3.0),
        atol=1e-13,
    )


def adversarial_cases():
    rng = np.random.default_rng(7)
    cases = []
    d = 50
    cases.append((np.zeros(d), np.zeros(d), np.full(d, 0.05), 1.0))  # all tied
    cases.append((np.zeros(d), np.zeros(d), np.full(d, 1.0 / d), 1.0))  # tight
    z = np.round(rng.normal(size=d), 1)  # many equal breakpoints
    cases.append((z, np.zeros(d), np.full(d, 0.1), 1.0))
    z = np.repeat([1.0, 0.5, 0.0], [10, 20, 20])
    cases.append((z, np.zeros(d), np.where(z > 0.7, 0.05, 0.1), 1.0))
    hi = rng.uniform(0, 0.1, size=d)
    hi /= hi.sum()  # sum(hi) == radius up to rounding
    cases.append((rng.normal(size=d), np.zeros(d), hi, 1.0))
    lo = np.full(d, 0.01)
    cases.append((rng.normal(size=d), lo, lo.copy(), 0.5))  # lo == hi
    cases.append((np.array([3.0]), np.array([0.0]), np.array([2.0]), 1.0))  # d = 1
    z = np.arange(d, dtype=float)
    cases.append((z, np.zeros(d), z / z.sum() * 1.5 + 1e-3, 1.0))  # z - hi ties
    z = rng.normal(size=d) * 1e6
    cases.append((z, np.zeros(d), np.full(d, 0.03), 1.0))
    z = rng.normal(size=d)
    z[::3] = -np.inf
    cases.append((z, np.full(d, 0.001), np.full(d, 0.1), 1.0))
    return cases


@pytest.mark.parametrize("case", range(10))
def test_sort_and_linear_agree_adversarial(case):
    z, lo, hi, radius = adversarial_cases()[case]
    p_sort = project_capped_simplex(z, lo, hi, radius, method="sort")
    p_lin = project_capped_simplex(z, lo, hi, radius, method="linear")
    np.testing.assert_allclose(p_sort, p_lin, atol=1e-12, rtol=0)
    check_kkt(z, lo, hi, radius, p_sort, atol=1e-9 * max(1, np.abs(z[np.isfinite(z)]).max()))
    check_kkt(z, lo, hi, radius, p_lin, atol=1e-9 * max(1, np.abs(z[np.isfinite(z)]).max()))


def test_sort_and_linear_agree_random_and_large():
    rng = np.random.default_rng(3)
    for d in [2, 10, 100, 1000]:
        z = rng.normal(size=(20, d))
        lo = rng.uniform(0, 0.2 / d, size=(20, d))
        hi = lo + rng.uniform(0, 3.0 / d, size=(20, d))
        hi[:, 0] += 1.0
        a = project_capped_simplex(z, lo, hi, method="sort")
        b = project_capped_simplex(z, lo, hi, method="linear")
        np.testing.assert_allclose(a, b, atol=1e-12, rtol=0)
    d = 10000
    z = rng.normal(size=(2, d))
    hi = np.full(d, 2.0 / d)
    a = project_capped_simplex(z, 0.0, hi, method="sort")
    b = project_capped_simplex(z, 0.0, hi, method="linear")
    np.testing.assert_allclose(a, b, atol=1e-12, rtol=0)
    for i in range(2):
        check_kkt(z[i], np.zeros(d), hi, 1.0, b[i])


@pytest.mark.parametrize("method", METHODS)
def test_exact_at_any_magnitude(method):
    # Shifting every score by the same constant changes nothing; it used to
    # return all zeros for [2**52] * 3 and wrong sums from about 4e9 on.
    for big in [4e9, 2.0**52, 1e16, 1e300, -1e300]:
        np.testing.assert_allclose(
            project_capped_simplex([big] * 3, method=method), [1 / 3] * 3, rtol=0, atol=1e-15
        )
    z = np.array([0.5, 1.0, 0.125, -3.0])  # exact after the shifts
    ref = project_capped_simplex(z, 0.1, 0.6, radius=1.5, method=method)
    for shift in [2.0**32, 2.0**44, -(2.0**49)]:
        got = project_capped_simplex(z + shift, 0.1, 0.6, radius=1.5, method=method)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-15)


def test_tight_bounds_give_bounds_exactly():
    hi = np.array([0.25, 0.25, 0.5])
    for method in METHODS:
        p = project_capped_simplex([5.0, -3.0, 0.1], 0.0, hi, method=method)
        np.testing.assert_array_equal(p, hi)


def test_deterministic_and_input_untouched():
    rng = np.random.default_rng(11)
    z = rng.normal(size=(5, 300))
    z_copy = z.copy()
    first = project_capped_simplex(z, 0.0, 0.01, method="linear")
    for _ in range(3):
        np.testing.assert_array_equal(project_capped_simplex(z, 0.0, 0.01, method="linear"), first)
    np.testing.assert_array_equal(z, z_copy)


def test_float32_and_int_input():
    p32 = project_capped_simplex(np.array([0.5, 1.0, 0.1], dtype=np.float32), 0.0, 0.6)
    assert p32.dtype == np.float64
    np.testing.assert_allclose(p32, [0.4, 0.6, 0.0], atol=1e-7)
    p_int = project_capped_simplex([2, 1, 0], 0, 1, radius=2)
    np.testing.assert_allclose(p_int, [1.0, 1.0, 0.0])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(lower=0.5, upper=1.0), "lower bounds of row 0 sum to 1.5"),
        (dict(upper=0.2), "upper bounds of row 0 sum to 0.6"),
        (dict(lower=[0.0, 0.5, 0.0], upper=[1.0, 0.4, 1.0]), "lower > upper at row 0, position 1"),
        (dict(upper=[1.0, -0.1, 1.0]), "lower > upper at row 0, position 1"),
        (dict(upper=[1.0, np.inf, 1.0]), "upper must be finite"),
        (dict(lower=[np.nan, 0.0, 0.0]), "lower must be finite"),
        (dict(upper=[1.0, 1.0]), "cannot be broadcast"),
        (dict(method="bisect"), "method must be one of"),
        (dict(radius=-1.0), "radius must be finite"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        project_capped_simplex([0.1, 0.2, 0.3], **kwargs)


def test_bad_rows_are_named():
    z = np.zeros((3, 2))
    hi = np.array([[1.0, 1.0], [1.0, 1.0], [0.3, 0.3]])
    with pytest.raises(ValueError, match="row 2"):
        project_capped_simplex(z, 0.0, hi)
    z[1, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN \(row 1, position 1\)"):
        project_capped_simplex(z, 0.0, 1.0)


def test_masked_entries_stay_at_lower_and_do_not_count():
    z = np.array([0.0, -np.inf, 0.0])
    p = project_capped_simplex(z, 0.1, [0.5, 0.9, 0.5])
    np.testing.assert_allclose(p, [0.45, 0.1, 0.45])
    with pytest.raises(ValueError, match="not masked"):
        project_capped_simplex(z, 0.0, [0.4, 1.0, 0.4])


@st.composite
def capped_problems(draw):
    d = draw(st.integers(1, 12))
    z = np.array(draw(st.lists(st.floats(-10, 10), min_size=d, max_size=d)))
    z = np.round(z, draw(st.sampled_from([0, 1, 8])))  # rounding creates ties
    radius = draw(st.sampled_from([0.5, 1.0, 3.0]))
    lo_w = np.array(draw(st.lists(st.floats(0, 1), min_size=d, max_size=d)))
    width = np.array(draw(st.lists(st.floats(0, 1), min_size=d, max_size=d)))
    lo = lo_w / max(lo_w.sum(), 1.0) * radius * draw(st.sampled_from([0.0, 0.5, 1.0]))
    hi = lo + width
    if hi.sum() < radius:
        hi = hi + (radius - hi.sum()) / d * draw(st.sampled_from([1.0, 1.5]))
    return z, lo, hi, radius


@given(capped_problems())
def test_properties(problem):
    z, lo, hi, radius = problem
    p_sort = project_capped_simplex(z, lo, hi, radius, method="sort")
    p_lin = project_capped_simplex(z, lo, hi, radius, method="linear")
    np.testing.assert_allclose(p_sort, p_lin, atol=1e-12, rtol=0)
    for p in (p_sort, p_lin):
        assert np.all(p >= lo) and np.all(p <= hi)
        check_kkt(z, lo, hi, radius, p)
    # permutation equivariance
    perm = np.random.default_rng(len(z)).permutation(len(z))
    p_perm = project_capped_simplex(z[perm], lo[perm], hi[perm], radius, method="linear")
    np.testing.assert_allclose(p_perm, p_lin[perm], atol=1e-12)
