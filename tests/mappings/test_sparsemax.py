"""Tests for sparsemax, project_simplex and their kernels."""

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sksparse_struct.mappings import project_simplex, sparsemax, sparsemax_backward
from sksparse_struct.mappings._simplex_fast import (
    simplex_threshold,
    simplex_threshold_buf,
    simplex_threshold_sort,
)
from tests._helpers import central_difference_vjp, solve_on_simplex

finite_scores = arrays(
    np.float64,
    st.integers(1, 12),
    elements=st.floats(-50, 50, allow_nan=False, allow_infinity=False),
)
temperatures = st.floats(0.05, 20.0)


def enumerate_projection(z, radius=1.0):
    """Reference: try every support, keep the one satisfying the KKT conditions."""
    d = z.shape[0]
    found = []
    for k in range(1, d + 1):
        for support in itertools.combinations(range(d), k):
            s = list(support)
            tau = (z[s].sum() - radius) / k
            rest = np.setdiff1d(np.arange(d), s)
            if np.all(z[s] > tau) and np.all(z[rest] <= tau):
                found.append(np.maximum(z - tau, 0.0))
    assert len(found) >= 1
    return found[0]


# ---------------------------------------------------------------- references


@pytest.mark.parametrize("d", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("seed", range(4))
def test_matches_support_enumeration(d, seed):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=d) * rng.choice([0.1, 1.0, 10.0])
    assert np.allclose(sparsemax(z), enumerate_projection(z), rtol=0, atol=1e-12)
    radius = 2.5
    assert np.allclose(
        project_simplex(z, radius), enumerate_projection(z, radius), rtol=0, atol=1e-12
    )


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("temperature", [1.0, 0.3, 4.0])
def test_matches_slsqp(seed, temperature):
    rng = np.random.default_rng(seed)
    d = 7
    z = rng.normal(size=d)
    ref = solve_on_simplex(lambda p: 0.5 * temperature * p @ p - p @ z, d)
    assert np.allclose(sparsemax(z, temperature=temperature), ref, rtol=0, atol=1e-6)


def test_fast_threshold_equals_sort_reference():
    rng = np.random.default_rng(0)
    for _ in range(2000):
        d = int(rng.integers(1, 60))
        z = rng.normal(size=d) * 10 ** rng.uniform(-3, 6)
        if rng.random() < 0.3:
            z = np.round(z)  # ties
        if rng.random() < 0.2:
            z[rng.random(d) < 0.3] = -np.inf
            if np.all(np.isneginf(z)):
                z[0] = 0.0
        radius = float(rng.uniform(0.01, 10))
        fast = simplex_threshold_buf(z, radius, np.empty(d))
        ref = simplex_threshold_sort(z, radius)
        # Same sorted prefix summed in the same order: bitwise equal.
        assert fast == ref, (z, radius)
        tau, k = simplex_threshold(z, radius)
        assert k == ref[1] and tau == ref[2] + ref[0]


def test_fast_threshold_equals_sort_reference_on_decimal_ties():
    # Ties at one decimal with a round radius put entries exactly at the
    # threshold, where the pruning bounds (summed in index order) and the
    # reference (summed in sorted order) round differently: the pruning
    # margins must keep such entries, or the result is no longer bitwise
    # the reference's (about 1% of these draws without the first-pass margin).
    rng = np.random.default_rng(1)
    for _ in range(3000):
        d = int(rng.integers(1, 201))
        z = np.round(rng.normal(size=d) * 10 ** rng.uniform(-1, 1), 1)
        radius = float(rng.choice([0.1, 0.3, 0.5, 1.0, 2.0]))
        fast = simplex_threshold_buf(z, radius, np.empty(d))
        assert fast == simplex_threshold_sort(z, radius), (z.tolist(), radius)


def test_radius_scaling():
    rng = np.random.default_rng(1)
    z = rng.normal(size=(20, 9))
    for radius in [0.1, 1.0, 3.7]:
        p = project_simplex(z, radius)
        assert np.allclose(p.sum(axis=1), radius, rtol=0, atol=1e-12)
        assert np.all(p >= 0)
        assert np.allclose(p, radius * project_simplex(z / radius), rtol=0, atol=1e-12)


def test_known_values():
    assert sparsemax([1.0, 0.8, -1.0]).tolist() == pytest.approx([0.6, 0.4, 0.0])
    assert sparsemax([3.0, 0.0]).tolist() == [1.0, 0.0]
    assert sparsemax([0.0, 0.0, 0.0, 0.0]).tolist() == [0.25] * 4


# ---------------------------------------------------------------- backward


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("temperature", [1.0, 0.5, 3.0])
def test_backward_matches_finite_differences(seed, temperature):
    rng = np.random.default_rng(seed)
    d = 8
    z = rng.normal(size=d)
    tau, _ = simplex_threshold(z / temperature, 1.0)
    if np.min(np.abs(z / temperature - tau)) < 1e-3:  # near a kink
        pytest.skip("too close to a change of support")
    dp = rng.normal(size=d)
    p = sparsemax(z, temperature)
    got = sparsemax_backward(p, dp, temperature)
    ref = central_difference_vjp(lambda v: sparsemax(v, temperature), z, dp)
    assert np.allclose(got, ref, rtol=0, atol=1e-7)


def test_backward_jacobian_symmetric_and_sums_to_zero():
    rng = np.random.default_rng(3)
    z = rng.normal(size=6)
    p = sparsemax(z)
    jac = np.stack([sparsemax_backward(p, e) for e in np.eye(6)])
    assert np.allclose(jac, jac.T, rtol=0, atol=1e-15)
    assert np.allclose(jac.sum(axis=1), 0.0, atol=1e-15)
    assert np.all(jac[:, p == 0] == 0)


def test_backward_batch_equals_rows():
    rng = np.random.default_rng(4)
    z = rng.normal(size=(5, 7))
    dp = rng.normal(size=(5, 7))
    p = sparsemax(z, 0.7)
    batch = sparsemax_backward(p, dp, 0.7)
    for i in range(5):
        assert np.array_equal(batch[i], sparsemax_backward(p[i], dp[i], 0.7))


# ---------------------------------------------------------------- properties


@given(finite_scores, temperatures)
def test_output_on_simplex_and_kkt(z, temperature):
    p = sparsemax(z, temperature)
    assert p.dtype == np.float64 and p.shape == z.shape
    assert np.all(p >= 0)
    assert abs(p.sum() - 1.0) <= 1e-9
    # KKT: p = (z / T - tau)_+ for a single tau.
    x = z / temperature
    support = p > 0
    taus = x[support] - p[support]
    assert np.ptp(taus) <= 1e-9 * max(1.0, np.abs(x).max())
    assert np.all(x[~support] <= taus.mean() + 1e-9 * max(1.0, np.abs(x).max()))


@given(finite_scores, st.randoms(use_true_random=False))
def test_permutation_equivariance(z, rnd):
    perm = np.arange(z.shape[0])
    rnd.shuffle(perm)
    assert np.allclose(sparsemax(z[perm]), sparsemax(z)[perm], rtol=0, atol=1e-12)


@given(finite_scores, st.floats(-100, 100))
def test_shift_invariance(z, c):
    assert np.allclose(sparsemax(z + c), sparsemax(z), rtol=0, atol=1e-9)


@given(finite_scores, temperatures)
def test_temperature_is_scaling(z, temperature):
    assert np.allclose(
        sparsemax(z, temperature), sparsemax(z / temperature), rtol=0, atol=1e-12
    )


# ---------------------------------------------------------------- edge cases


def test_single_entry():
    assert sparsemax([3.5]).tolist() == [1.0]
    assert project_simplex([-2.0], radius=2.0).tolist() == [2.0]


def test_ties_and_all_equal():
    assert sparsemax([2.0, 2.0, -5.0]).tolist() == [0.5, 0.5, 0.0]
    assert np.allclose(sparsemax(np.full(10, 7.0)), 0.1, rtol=0, atol=1e-15)


def test_huge_scores():
    assert sparsemax([1e6, -1e6, 0.0]).tolist() == [1.0, 0.0, 0.0]
    p = sparsemax([1e6, 1e6 - 0.5, -1e6])
    assert np.allclose(p, [0.75, 0.25, 0.0], rtol=0, atol=1e-9)


FMIN = np.finfo(np.float64).min
FMAX = np.finfo(np.float64).max


@pytest.mark.parametrize(
    "z, expected",
    [
        ([FMIN, 1.0, 0.5], [0.0, 0.75, 0.25]),  # masking with finfo.min
        ([-1e308, 0.0, 0.0], [0.0, 0.5, 0.5]),
        ([FMAX, FMIN, FMAX], [0.5, 0.0, 0.5]),
        ([FMIN, FMIN, FMIN + 2.0**970], [0.0, 0.0, 1.0]),
        ([1e300, 1e300, -1e300, 1e300], [1 / 3, 1 / 3, 0.0, 1 / 3]),
    ],
)
def test_extreme_magnitudes(z, expected):
    # Running sums relative to the largest score cannot overflow.
    z = np.array(z)
    assert np.allclose(sparsemax(z), expected, rtol=0, atol=1e-15)
    assert np.allclose(project_simplex(z), expected, rtol=0, atol=1e-15)
    for radius in [1.0, 2.5]:
        ref = simplex_threshold_sort(z, radius)
        assert simplex_threshold_buf(z, radius, np.empty(z.shape[0])) == ref
        p = project_simplex(z, radius)
        assert np.all(p >= 0) and abs(p.sum() - radius) <= 1e-12


@pytest.mark.parametrize(
    "z, radius",
    [
        ([0.0, -1e308, -1e308], 1.5e308),
        ([0.0, -6e307, -6e307, -6e307], 1e308),
        ([5e307, -5e307, 0.0], FMAX),
        ([1e308, 0.0], FMAX),
        ([1e308, 1e308, 1e308], FMAX),
        ([0.5, 1.0, 0.1], 1e308),
        ([1e308, -1e308, 1e-300, -5e-324], 1e308),
        ([[FMIN, FMIN, 3.0], [0.0, -1e308, 2.0]], FMAX),
    ],
)
def test_radius_near_finfo_max(z, radius):
    # The kernel's running sums overflowed: every entry came out inf.
    z = np.array(z)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = project_simplex(z, radius)
    assert np.all(np.isfinite(p)) and np.all(p >= 0) and np.all(p <= radius)
    # Summed at half scale: the sum itself may round past finfo.max.
    np.testing.assert_allclose((p / 2).sum(axis=-1), radius / 2, rtol=4e-16, atol=0)
    # The same projection at a scale where nothing overflows (exact scaling).
    scale = 2.0**-20
    np.testing.assert_allclose(
        p * scale, project_simplex(z * scale, radius * scale), rtol=1e-15, atol=radius * 1e-16
    )


def test_masked_entries():
    z = np.array([0.3, -np.inf, 0.2, -np.inf])
    p = sparsemax(z)
    assert p[1] == 0.0 and p[3] == 0.0
    assert np.allclose(p[[0, 2]], sparsemax(z[[0, 2]]), rtol=0, atol=1e-15)
    # A masked entry never receives mass, even with a tiny temperature.
    assert sparsemax([-np.inf, -1e300], temperature=1e-3).tolist() == [0.0, 1.0]


def test_float32_and_int_input():
    z = np.array([[0.5, 1.0, 0.1]], dtype=np.float32)
    p = sparsemax(z)
    assert p.dtype == np.float64
    assert np.allclose(p, sparsemax(z.astype(np.float64)), rtol=0, atol=0)
    assert sparsemax([1, 0]).tolist() == [1.0, 0.0]


def test_batch_equals_rows():
    rng = np.random.default_rng(5)
    z = rng.normal(size=(6, 9))
    z[2, 3] = -np.inf
    batch = sparsemax(z, 0.8)
    for i in range(6):
        assert np.array_equal(batch[i], sparsemax(z[i], 0.8))


def test_input_not_modified():
    z = np.array([0.1, 0.2, -np.inf])
    before = z.copy()
    sparsemax(z, 2.0)
    assert np.array_equal(z, before)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "z, match",
    [
        ([0.0, np.nan], r"NaN \(row 0, position 1\)"),
        ([[0.0, 1.0], [np.inf, 0.0]], r"\+inf \(row 1, position 0\)"),
        ([[0.0, 1.0], [-np.inf, -np.inf]], "every entry of row 1"),
        (np.zeros((2, 2, 2)), "3 dimensions"),
        (np.zeros((3, 0)), "at least one entry"),
        (["a", "b"], "real numbers"),
    ],
)
def test_bad_scores(z, match):
    with pytest.raises(ValueError, match=match):
        sparsemax(z)


@pytest.mark.parametrize("bad", [0.0, -1.0, np.inf, np.nan, "1", True])
def test_bad_temperature_and_radius(bad):
    with pytest.raises(ValueError, match="temperature"):
        sparsemax([0.0, 1.0], temperature=bad)
    with pytest.raises(ValueError, match="radius"):
        project_simplex([0.0, 1.0], radius=bad)


def test_backward_bad_input():
    with pytest.raises(ValueError, match="does not match"):
        sparsemax_backward([0.5, 0.5], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="NaN"):
        sparsemax_backward([0.5, 0.5], [1.0, np.nan])
