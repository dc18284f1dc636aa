"""Tests for softmax and its backward pass."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.special import softmax as scipy_softmax

from sksparse_struct.mappings import softmax, softmax_backward
from tests._helpers import central_difference_vjp, solve_on_simplex

finite_scores = arrays(
    np.float64,
    st.integers(1, 12),
    elements=st.floats(-50, 50, allow_nan=False, allow_infinity=False),
)
temperatures = st.floats(0.05, 20.0)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("temperature", [1.0, 0.3, 4.0])
def test_matches_scipy(seed, temperature):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(4, 9)) * 5
    ref = scipy_softmax(z / temperature, axis=1)
    assert np.allclose(softmax(z, temperature), ref, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_matches_slsqp_on_definition(temperature):
    # argmax <p, z> - T * sum p log p over the simplex.
    rng = np.random.default_rng(0)
    z = rng.normal(size=5)

    def objective(p):
        p = np.clip(p, 1e-300, None)
        return temperature * np.sum(p * np.log(p)) - p @ z

    ref = solve_on_simplex(objective, 5)
    assert np.allclose(softmax(z, temperature), ref, rtol=0, atol=1e-6)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("temperature", [1.0, 0.5, 3.0])
def test_backward_matches_finite_differences(seed, temperature):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=7)
    z[2] = -np.inf if seed % 2 else z[2]
    dp = rng.normal(size=7)
    p = softmax(z, temperature)
    got = softmax_backward(p, dp, temperature)
    finite = np.isfinite(z)
    ref = np.zeros(7)
    # Differentiate with respect to the unmasked scores only.
    ref[finite] = central_difference_vjp(
        lambda v: _masked(v, z, temperature), z[finite], dp
    )
    assert np.allclose(got, ref, rtol=0, atol=1e-8)


def _masked(v, z, temperature):
    full = z.copy()
    full[np.isfinite(z)] = v
    return softmax(full, temperature)


def test_backward_jacobian_symmetric_rows_sum_zero():
    p = softmax([0.3, -1.0, 2.0, 0.0])
    jac = np.stack([softmax_backward(p, e) for e in np.eye(4)])
    assert np.allclose(jac, jac.T, rtol=0, atol=1e-16)
    assert np.allclose(jac.sum(axis=1), 0.0, atol=1e-16)
    assert np.allclose(jac, np.diag(p) - np.outer(p, p), rtol=0, atol=1e-16)


@given(finite_scores, temperatures)
def test_on_simplex(z, temperature):
    p = softmax(z, temperature)
    assert p.shape == z.shape and p.dtype == np.float64
    assert np.all(p >= 0) and abs(p.sum() - 1) <= 1e-12


@given(finite_scores, st.randoms(use_true_random=False))
def test_permutation_equivariance(z, rnd):
    perm = np.arange(z.shape[0])
    rnd.shuffle(perm)
    assert np.allclose(softmax(z[perm]), softmax(z)[perm], rtol=0, atol=1e-15)


@given(finite_scores, st.floats(-1e3, 1e3))
def test_shift_invariance(z, c):
    assert np.allclose(softmax(z + c), softmax(z), rtol=0, atol=1e-12)


@given(finite_scores, temperatures)
def test_temperature_is_scaling(z, temperature):
    assert np.allclose(softmax(z, temperature), softmax(z / temperature), rtol=0, atol=1e-14)


def test_edge_cases():
    assert softmax([5.0]).tolist() == [1.0]
    assert softmax([2.0, 2.0, 2.0, 2.0]).tolist() == [0.25] * 4
    assert softmax([1e6, -1e6, 1e6]).tolist() == [0.5, 0.0, 0.5]
    p = softmax([0.0, -np.inf, 0.0])
    assert p.tolist() == [0.5, 0.0, 0.5]
    z32 = np.array([0.1, 0.7], dtype=np.float32)
    assert softmax(z32).dtype == np.float64
    assert np.array_equal(softmax(z32), softmax(z32.astype(np.float64)))


def test_batch_equals_rows():
    rng = np.random.default_rng(2)
    z = rng.normal(size=(5, 6))
    z[1, 0] = -np.inf
    batch = softmax(z, 0.7)
    for i in range(5):
        assert np.allclose(batch[i], softmax(z[i], 0.7), rtol=0, atol=1e-16)
    dp = rng.normal(size=(5, 6))
    back = softmax_backward(batch, dp, 0.7)
    for i in range(5):
        assert np.allclose(back[i], softmax_backward(batch[i], dp[i], 0.7), rtol=0, atol=1e-16)


@pytest.mark.parametrize(
    "z, match",
    [
        ([0.0, np.nan], r"NaN \(row 0, position 1\)"),
        ([np.inf, 0.0], r"\+inf \(row 0, position 0\)"),
        ([[0.0], [-np.inf]], "every entry of row 1"),
        (np.zeros((1, 1, 1)), "3 dimensions"),
        ([], "at least one entry"),
    ],
)
def test_bad_scores(z, match):
    with pytest.raises(ValueError, match=match):
        softmax(z)


def test_bad_parameters():
    for bad in [0, -2.0, np.nan, "x"]:
        with pytest.raises(ValueError, match="temperature"):
            softmax([0.0, 1.0], temperature=bad)
        with pytest.raises(ValueError, match="temperature"):
            softmax_backward([0.5, 0.5], [0.0, 1.0], temperature=bad)
    with pytest.raises(ValueError, match="does not match"):
        softmax_backward([0.5, 0.5], [[1.0, 2.0]] * 2)
