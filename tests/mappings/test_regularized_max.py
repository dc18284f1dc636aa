"""Tests for regularized_max and regularizer, and the Fenchel-Young losses they define."""

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.special import logsumexp

from sksparse_struct.mappings import (
    entmax15,
    regularized_max,
    regularizer,
    softmax,
    sparsemax,
    sq_pnorm_max,
)
from tests._helpers import solve_on_simplex

MAPPINGS = ["softmax", "sparsemax", "entmax15", "sq_pnorm_max"]
# (mapping, params): sq_pnorm_max with its default and another exponent.
CASES = [(m, {}) for m in MAPPINGS] + [("sq_pnorm_max", {"p": 1.25})]
CASE_IDS = [m + ("-" + "-".join(f"{k}{v}" for k, v in kw.items()) if kw else "") for m, kw in CASES]

finite_scores = arrays(
    np.float64,
    st.integers(1, 8),
    elements=st.floats(-20, 20, allow_nan=False, allow_infinity=False),
)
temperatures = st.floats(0.1, 10.0)


def omega_reference(p, mapping, q=1.5):
    """Omega written out independently of the package."""
    if mapping == "softmax":
        nz = p[p > 0]
        return np.sum(nz * np.log(nz))
    if mapping == "sparsemax":
        return 0.5 * np.sum(p**2)
    if mapping == "entmax15":
        return (np.sum(np.clip(p, 0, None) ** 1.5) - 1.0) / 0.75
    return 0.5 * np.sum(np.clip(p, 0, None) ** q) ** (2.0 / q)


def fy_loss(z, y, mapping, temperature=1.0, **params):
    """Fenchel-Young loss max_Omega(z) + T Omega(y) - <z, y> (Def. 6.1)."""
    value, _ = regularized_max(z, mapping, temperature, **params)
    return value + regularizer(y, mapping=mapping, temperature=temperature, **params) - z @ y


def mapping_output(z, mapping, temperature=1.0, **params):
    fn = {"softmax": softmax, "sparsemax": sparsemax, "entmax15": entmax15}
    if mapping == "sq_pnorm_max":
        return sq_pnorm_max(z, temperature=temperature, **params)
    return fn[mapping](z, temperature)


# ---------------------------------------------------------------- values


@pytest.mark.parametrize("mapping, params", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("temperature", [1.0, 0.4, 3.0])
def test_value_is_the_max_over_the_simplex(mapping, params, temperature):
    rng = np.random.default_rng(0)
    z = rng.normal(size=5) * 2
    q = params.get("p", 1.5)
    value, p = regularized_max(z, mapping, temperature, **params)
    assert np.array_equal(p, mapping_output(z, mapping, temperature, **params))
    expected = z @ p - temperature * omega_reference(p, mapping, q)
    assert np.isclose(value, expected, rtol=0, atol=1e-12)

    def neg_objective(x):
        x = np.clip(x, 1e-300, None)
        return temperature * omega_reference(x, mapping, q) - x @ z

    ref = solve_on_simplex(neg_objective, 5)
    # p is the maximiser: no better than the generic solver, and close to it.
    assert value >= -neg_objective(ref) - 1e-12
    assert value <= -neg_objective(ref) + 1e-6


@pytest.mark.parametrize("temperature", [1.0, 0.2, 5.0])
def test_softmax_value_is_logsumexp(temperature):
    rng = np.random.default_rng(1)
    z = rng.normal(size=(4, 7)) * 10
    value, _ = regularized_max(z, "softmax", temperature)
    assert np.allclose(value, temperature * logsumexp(z / temperature, axis=1), rtol=1e-14, atol=0)
    # No overflow for huge scores.
    assert regularized_max([1e6, 1e6], "softmax")[0] == pytest.approx(1e6 + np.log(2), abs=1e-9)


@pytest.mark.parametrize("mapping, params", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_gradient_of_value_is_the_mapping(mapping, params, temperature):
    # Pi_Omega = grad max_Omega (eq. 3.6), by central differences.
    rng = np.random.default_rng(2)
    z = rng.normal(size=6)
    _, p = regularized_max(z, mapping, temperature, **params)
    eps = 1e-6
    grad = np.empty(6)
    for i in range(6):
        e = np.zeros(6)
        e[i] = eps
        grad[i] = (
            regularized_max(z + e, mapping, temperature, **params)[0]
            - regularized_max(z - e, mapping, temperature, **params)[0]
        ) / (2 * eps)
    assert np.allclose(grad, p, rtol=0, atol=1e-8)


# ---------------------------------------------------------------- Fenchel-Young losses


@pytest.mark.parametrize("mapping, params", CASES, ids=CASE_IDS)
@given(z=finite_scores, temperature=temperatures, data=st.data())
def test_fy_loss_nonnegative_and_zero_at_prediction(mapping, params, z, temperature, data):
    d = z.shape[0]
    weights = np.array(data.draw(st.lists(st.floats(0, 1), min_size=d, max_size=d)))
    y = weights / weights.sum() if weights.sum() > 0 else np.eye(d)[0]
    scale = max(1.0, np.abs(z).max())
    assert fy_loss(z, y, mapping, temperature, **params) >= -1e-10 * scale
    p = mapping_output(z, mapping, temperature, **params)
    assert abs(fy_loss(z, p, mapping, temperature, **params)) <= 1e-10 * scale


@pytest.mark.parametrize("mapping, params", CASES, ids=CASE_IDS)
def test_fy_loss_positive_away_from_prediction(mapping, params):
    # L = 0 iff y = Pi(z): the loss is positive for any other target.
    rng = np.random.default_rng(3)
    for _ in range(20):
        z = rng.normal(size=5)
        p = mapping_output(z, mapping, **params)
        y = np.eye(5)[rng.integers(5)]
        if np.allclose(y, p, atol=1e-6):
            continue
        assert fy_loss(z, y, mapping, **params) > 1e-8


@pytest.mark.parametrize("mapping, params", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("temperature", [1.0, 0.5, 2.0])
def test_fy_loss_gradient_is_p_minus_y(mapping, params, temperature):
    rng = np.random.default_rng(4)
    z = rng.normal(size=6)
    y = rng.dirichlet(np.ones(6))
    p = mapping_output(z, mapping, temperature, **params)
    eps = 1e-6
    grad = np.empty(6)
    for i in range(6):
        e = np.zeros(6)
        e[i] = eps
        grad[i] = (
            fy_loss(z + e, y, mapping, temperature, **params)
            - fy_loss(z - e, y, mapping, temperature, **params)
        ) / (2 * eps)
    assert np.allclose(grad, p - y, rtol=0, atol=1e-8)


@pytest.mark.parametrize("mapping, params", CASES, ids=CASE_IDS)
@given(z=finite_scores, t=temperatures)
def test_temperature_scaling_prop61(mapping, params, z, t):
    # L_{t Omega}(z, y) = t L_Omega(z / t, y) and Pi_{t Omega}(z) = Pi_Omega(z / t).
    d = z.shape[0]
    y = np.eye(d)[0]
    scale = max(1.0, np.abs(z).max())
    lhs = fy_loss(z, y, mapping, t, **params)
    rhs = t * fy_loss(z / t, y, mapping, 1.0, **params)
    assert abs(lhs - rhs) <= 1e-9 * scale
    v_t, p_t = regularized_max(z, mapping, t, **params)
    v_1, p_1 = regularized_max(z / t, mapping, 1.0, **params)
    assert np.allclose(p_t, p_1, rtol=0, atol=1e-10)
    assert abs(v_t - t * v_1) <= 1e-9 * scale


# ---------------------------------------------------------------- shapes, masks, edge cases


@pytest.mark.parametrize("mapping, params", CASES, ids=CASE_IDS)
def test_batch_equals_rows_and_types(mapping, params):
    rng = np.random.default_rng(5)
    z = rng.normal(size=(4, 6))
    z[1, 2] = -np.inf
    values, p = regularized_max(z, mapping, 0.7, **params)
    assert values.shape == (4,) and p.shape == (4, 6)
    omegas = regularizer(p, mapping=mapping, temperature=0.7, **params)
    assert omegas.shape == (4,)
    for i in range(4):
        v_i, p_i = regularized_max(z[i], mapping, 0.7, **params)
        assert isinstance(v_i, float)
        assert np.isclose(v_i, values[i], rtol=0, atol=1e-13)
        assert np.allclose(p_i, p[i], rtol=0, atol=1e-15)
        assert isinstance(regularizer(p[i], mapping=mapping, temperature=0.7, **params), float)


@pytest.mark.parametrize("mapping, params", CASES, ids=CASE_IDS)
def test_masked_entries_are_excluded(mapping, params):
    z = np.array([0.4, -np.inf, -0.3, 1.0, -np.inf])
    value, p = regularized_max(z, mapping, **params)
    value_kept, p_kept = regularized_max(z[[0, 2, 3]], mapping, **params)
    assert np.isfinite(value)
    assert np.isclose(value, value_kept, rtol=0, atol=1e-13)
    assert p[1] == 0 and p[4] == 0
    assert np.allclose(p[[0, 2, 3]], p_kept, rtol=0, atol=1e-14)


def test_regularizer_known_values():
    one_hot = [0.0, 1.0, 0.0]
    uniform = np.full(4, 0.25)
    assert regularizer(one_hot, mapping="softmax") == 0.0
    assert regularizer(one_hot, mapping="sparsemax", temperature=2.0) == 1.0
    assert regularizer(one_hot, mapping="entmax15") == 0.0
    assert regularizer(one_hot, mapping="sq_pnorm_max", p=1.3) == pytest.approx(0.5, abs=1e-15)
    assert regularizer(uniform, mapping="softmax") == pytest.approx(-np.log(4), abs=1e-15)
    assert regularizer(uniform, mapping="sparsemax") == pytest.approx(0.125, abs=1e-15)
    tsallis_uniform = (4 * 0.25**1.5 - 1) / 0.75
    assert regularizer(uniform, mapping="entmax15") == pytest.approx(tsallis_uniform, abs=1e-15)
    # ||u||_2^2 / 2 with p=2 equals sparsemax's regularizer.
    assert regularizer(uniform, mapping="sq_pnorm_max", p=2.0) == pytest.approx(0.125, abs=1e-15)


FMAX = np.finfo(np.float64).max


@pytest.mark.parametrize("mapping", MAPPINGS)
@pytest.mark.parametrize(
    "z, temperature",
    [
        ([FMAX, FMAX], FMAX),
        ([FMAX, -FMAX], FMAX),
        ([FMAX, -FMAX, -np.inf], 1e306),
        ([-FMAX] * 1000, FMAX),
        ([[1.0, 2.0], [FMAX, 0.5 * FMAX], [-1e308, -1e308]], 1e308),
    ],
)
def test_values_at_the_edge_of_the_range(mapping, z, temperature):
    # Terms overflowed: a correct inf came with a RuntimeWarning, -inf - -inf
    # gave NaN (entmax15 of -FMAX * ones(1000) at FMAX is 0.29 * FMAX), and
    # softmax gave the argmax.
    z = np.array(z)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value, p = regularized_max(z, mapping, temperature)
    # max_Omega is positively homogeneous: the same at a scale with no overflow.
    scale = 2.0**-20
    scaled_value, scaled_p = regularized_max(z * scale, mapping, temperature * scale)
    with np.errstate(over="ignore"):
        expected = np.asarray(scaled_value) / scale  # inf where beyond the range
    assert not np.isnan(value).any()
    np.testing.assert_allclose(value, expected, rtol=1e-9)
    np.testing.assert_allclose(p, scaled_p, rtol=1e-9, atol=1e-15)


def test_single_entry():
    for mapping in MAPPINGS:
        value, p = regularized_max([2.5], mapping)
        assert p.tolist() == [1.0]
        assert value == pytest.approx(2.5 - regularizer([1.0], mapping=mapping), abs=1e-15)


# ---------------------------------------------------------------- bad input


def test_unknown_mapping_and_params():
    with pytest.raises(ValueError, match="unknown mapping 'softargmax'"):
        regularized_max([0.0, 1.0], mapping="softargmax")
    with pytest.raises(ValueError, match="unknown mapping"):
        regularizer([0.5, 0.5], mapping=None)
    with pytest.raises(ValueError, match="takes no extra parameters"):
        regularized_max([0.0, 1.0], mapping="sparsemax", p=1.5)
    with pytest.raises(ValueError, match="takes no extra parameters"):
        regularizer([0.5, 0.5], mapping="entmax15", alpha=1.5)
    with pytest.raises(ValueError, match="unknown parameters"):
        regularized_max([0.0, 1.0], mapping="sq_pnorm_max", alpha=1.5)
    with pytest.raises(ValueError, match=r"in \(1, 2\]"):
        regularizer([0.5, 0.5], mapping="sq_pnorm_max", p=3.0)
    with pytest.raises(ValueError, match="temperature"):
        regularized_max([0.0, 1.0], temperature=-1.0)


def test_bad_points_for_regularizer():
    with pytest.raises(ValueError, match="row 0 of p sums to 0.9"):
        regularizer([0.5, 0.4])
    with pytest.raises(ValueError, match="non-negative"):
        regularizer([1.5, -0.5])
    with pytest.raises(ValueError, match="finite"):
        regularizer([np.nan, 1.0])
    with pytest.raises(ValueError, match="row 1 of p"):
        regularizer([[0.5, 0.5], [0.3, 0.3]], mapping="softmax")


def test_bad_scores_for_regularized_max():
    with pytest.raises(ValueError, match="NaN"):
        regularized_max([0.0, np.nan])
    with pytest.raises(ValueError, match="every entry of row 0"):
        regularized_max([-np.inf, -np.inf], mapping="softmax")
