"""Tests of the Fenchel-Young classification losses (Niculae 2018, ch. 6)."""

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.testing import assert_allclose
from scipy.special import logsumexp
from sklearn.metrics import log_loss

from sksparse_struct.losses import (
    LOSS_NAMES,
    SMOOTH_LOSS_NAMES,
    fenchel_young_loss,
    fenchel_young_predict_proba,
)
from sksparse_struct.mappings import entmax15, softmax, sparsemax

from ._helpers import solve_on_simplex

NONSMOOTH = ("perceptron", "hinge")


def _omega(loss, p):
    """Independent regularizers (temperature 1), written from the definitions."""
    p = np.asarray(p, dtype=np.float64)
    if loss == "softmax":
        nz = p[p > 0]
        return float(np.sum(nz * np.log(nz)))
    if loss == "sparsemax":
        return 0.5 * float(p @ p)
    if loss == "entmax15":
        return (float(np.sum(p**1.5)) - 1.0) / 0.75
    raise ValueError(loss)


def _reference_loss(loss, theta, y_dist, t=1.0):
    """L = max_p <theta, p> - t Omega(p) + t Omega(y) - <theta, y>, by SLSQP or enumeration."""
    theta = np.asarray(theta, dtype=np.float64)
    y_dist = np.asarray(y_dist, dtype=np.float64)
    d = theta.shape[0]
    if loss == "perceptron":
        return theta.max() - theta @ y_dist
    if loss == "hinge":
        # max over the vertices of a linear function, by enumeration.
        cost = t * (1.0 - y_dist)
        return max(theta[k] + cost[k] for k in range(d)) - (theta + cost) @ y_dist
    if loss == "softmax":
        # The log-sum-exp is the exact value of max_Omega for negative entropy.
        top = t * logsumexp(theta / t)
    else:
        p = solve_on_simplex(lambda q: t * _omega(loss, np.maximum(q, 0)) - theta @ q, d)
        p = np.maximum(p, 0)
        top = theta @ p - t * _omega(loss, p)
    return top + t * _omega(loss, y_dist) - theta @ y_dist


def _random_problem(rng, n, k, soft):
    theta = rng.normal(scale=2.0, size=(n, k))
    if soft:
        y = rng.dirichlet(np.full(k, 0.5), size=n)
    else:
        y = rng.randint(k, size=n)
    return theta, y


# ---------------------------------------------------------------------------
# values against independent references


@pytest.mark.parametrize("loss", LOSS_NAMES)
@pytest.mark.parametrize("soft", [False, True])
@pytest.mark.parametrize("t", [0.5, 1.0, 3.0])
def test_values_match_reference(loss, soft, t):
    rng = np.random.RandomState(0)
    theta, y = _random_problem(rng, 6, 4, soft)
    values, _ = fenchel_young_loss(theta, y, loss=loss, temperature=t)
    y_dist = y if soft else np.eye(4)[y]
    expected = [_reference_loss(loss, theta[i], y_dist[i], t) for i in range(6)]
    atol = 1e-12 if loss in ("softmax",) + NONSMOOTH else 1e-6
    assert_allclose(values, expected, atol=atol, rtol=0)


def test_softmax_loss_is_sklearn_log_loss():
    rng = np.random.RandomState(1)
    theta, y = _random_problem(rng, 50, 5, soft=False)
    values, grad = fenchel_young_loss(theta, y, loss="softmax")
    proba = softmax(theta)
    assert_allclose(values.mean(), log_loss(y, proba, labels=range(5)), rtol=1e-12)
    assert_allclose(
        values.sum(), log_loss(y, proba, labels=range(5), normalize=False), rtol=1e-12
    )
    assert_allclose(values, logsumexp(theta, axis=1) - theta[np.arange(50), y], atol=1e-12)
    assert_allclose(grad, proba - np.eye(5)[y], atol=1e-15)


def test_softmax_loss_stable_for_huge_scores():
    theta = np.array([[1e6, 0.0, -1e6], [0.0, 1e6, 1e6]])
    values, grad = fenchel_young_loss(theta, [2, 1], loss="softmax")
    assert_allclose(values, [2e6, np.log(2.0)], rtol=1e-15)
    assert_allclose(grad, [[1, 0, -1], [0, -0.5, 0.5]], atol=1e-15)


def test_sparsemax_loss_closed_forms():
    # Hand-computed: sparsemax([1, 0.8, -1]) = [0.6, 0.4, 0], threshold 0.4;
    # L = -theta_y + (sum_{j in S} theta_j^2 - tau^2) / 2 + 1/2.
    values, grad = fenchel_young_loss([[1.0, 0.8, -1.0]], [1], loss="sparsemax")
    assert_allclose(values, [0.36], atol=1e-15)
    assert_allclose(grad, [[0.6, -0.6, 0.0]], atol=1e-15)
    values, _ = fenchel_young_loss([[1.0, 0.8, -1.0]], [2], loss="sparsemax")
    assert_allclose(values, [-(-1.0) + 0.5 * ((1 - 0.16) + (0.64 - 0.16)) + 0.5], atol=1e-14)
    # Binary: a function of the margin s = theta_y - theta_other only, the
    # modified Huber loss: 0 for s >= 1, -s for s <= -1, (1 - s)^2 / 4 between.
    s = np.linspace(-3, 3, 61)
    theta = np.column_stack([np.zeros_like(s), s])
    values, _ = fenchel_young_loss(theta, np.ones(61, dtype=int), loss="sparsemax")
    expected = np.where(s >= 1, 0.0, np.where(s <= -1, -s, (1 - s) ** 2 / 4))
    assert_allclose(values, expected, atol=1e-14)


def test_hinge_is_crammer_singer():
    rng = np.random.RandomState(2)
    theta, y = _random_problem(rng, 30, 4, soft=False)
    for t in (1.0, 0.3):
        values, grad = fenchel_young_loss(theta, y, loss="hinge", temperature=t)
        augmented = theta + t * (1 - np.eye(4)[y])
        expected = augmented.max(axis=1) - theta[np.arange(30), y]
        assert_allclose(values, expected, atol=1e-14)
        assert_allclose(grad, np.eye(4)[augmented.argmax(axis=1)] - np.eye(4)[y])


def test_perceptron_ties_go_to_lowest_index():
    values, grad = fenchel_young_loss([[1.0, 1.0, 0.0]], [1], loss="perceptron")
    assert values.tolist() == [0.0]
    assert grad.tolist() == [[1.0, -1.0, 0.0]]
    assert fenchel_young_predict_proba([[0.0, 2.0, 2.0]], loss="hinge").tolist() == [
        [0.0, 1.0, 0.0]
    ]


# ---------------------------------------------------------------------------
# gradients


@pytest.mark.parametrize("loss", LOSS_NAMES)
@pytest.mark.parametrize("soft", [False, True])
@pytest.mark.parametrize("t", [0.5, 2.0])
def test_gradient_matches_finite_differences(loss, soft, t):
    rng = np.random.RandomState(3)
    theta, y = _random_problem(rng, 8, 5, soft)
    _, grad = fenchel_young_loss(theta, y, loss=loss, temperature=t)
    eps = 1e-6
    numeric = np.empty_like(theta)
    for j in range(theta.shape[1]):
        step = np.zeros_like(theta)
        step[:, j] = eps
        up, _ = fenchel_young_loss(theta + step, y, loss=loss, temperature=t)
        down, _ = fenchel_young_loss(theta - step, y, loss=loss, temperature=t)
        numeric[:, j] = (up - down) / (2 * eps)
    # Random Gaussian scores are almost surely away from the kinks (ties of
    # the argmax, support changes), where every loss is differentiable.
    assert_allclose(grad, numeric, atol=1e-7, rtol=0)


@pytest.mark.parametrize("loss", SMOOTH_LOSS_NAMES)
def test_gradient_is_prediction_minus_target(loss):
    rng = np.random.RandomState(4)
    theta, y = _random_problem(rng, 10, 6, soft=True)
    _, grad = fenchel_young_loss(theta, y, loss=loss, temperature=0.7)
    mapping = {"softmax": softmax, "sparsemax": sparsemax, "entmax15": entmax15}[loss]
    assert_allclose(grad, mapping(theta, temperature=0.7) - y, atol=1e-14)
    assert_allclose(
        fenchel_young_predict_proba(theta, loss=loss, temperature=0.7),
        mapping(theta, temperature=0.7),
        atol=0,
    )


# ---------------------------------------------------------------------------
# Prop. 6.1: non-negativity, zero loss, convexity, temperature scaling

score_rows = arrays(
    np.float64,
    st.tuples(st.integers(1, 5), st.integers(2, 6)),
    elements=st.floats(-20, 20, allow_nan=False, width=64),
)


@given(theta=score_rows, seed=st.integers(0, 2**31 - 1), loss=st.sampled_from(LOSS_NAMES))
def test_nonnegative_and_subgradient_inequality(theta, seed, loss):
    rng = np.random.RandomState(seed)
    n, k = theta.shape
    y = rng.dirichlet(np.ones(k), size=n) if seed % 2 else rng.randint(k, size=n)
    values, grad = fenchel_young_loss(theta, y, loss=loss)
    assert np.all(values >= 0)
    # Convexity: L(b) >= L(a) + <g(a), b - a> for a (sub)gradient g(a).
    other = theta + rng.normal(scale=3.0, size=theta.shape)
    values_other, _ = fenchel_young_loss(other, y, loss=loss)
    lower = values + np.einsum("ij,ij->i", grad, other - theta)
    assert np.all(values_other >= lower - 1e-9 * (1 + np.abs(lower)))


@given(theta=score_rows, loss=st.sampled_from(SMOOTH_LOSS_NAMES), t=st.floats(0.1, 10))
def test_zero_loss_at_own_prediction(theta, loss, t):
    p_hat = fenchel_young_predict_proba(theta, loss=loss, temperature=t)
    values, grad = fenchel_young_loss(theta, p_hat, loss=loss, temperature=t)
    assert_allclose(values, 0.0, atol=1e-9 * (1 + np.abs(theta).max()))
    assert_allclose(grad, 0.0, atol=1e-12)


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_zero_loss_only_at_prediction(loss):
    # One-hot targets: zero loss iff the prediction is that one-hot vector.
    y = np.array([0, 0, 0])
    theta = np.array([[2.0, 0.0, 0.5], [0.5, 0.0, 0.3], [0.0, 0.0, 0.0]])
    values, _ = fenchel_young_loss(theta, y, loss=loss)
    p_hat = fenchel_young_predict_proba(theta, loss=loss)
    is_target = np.all(p_hat == np.eye(3)[y], axis=1)
    if loss == "hinge":
        # its prediction during training is cost-augmented: margin 1 needed.
        is_target = theta[:, 0] - np.max(theta[:, 1:], axis=1) >= 1
    assert np.array_equal(values == 0, is_target)
    if loss == "softmax":
        assert np.all(values > 0)  # softmax is never one-hot
    if loss == "sparsemax":
        assert values[0] == 0 and values[1] > 0


@given(theta=score_rows, seed=st.integers(0, 2**31 - 1), loss=st.sampled_from(LOSS_NAMES),
       t=st.floats(0.05, 20))
def test_temperature_scaling(theta, seed, loss, t):
    # Prop. 6.1.4: L_{t Omega}(theta; y) = t L_Omega(theta / t; y), and the
    # gradients agree: p_hat_{t Omega}(theta) = p_hat_Omega(theta / t).
    rng = np.random.RandomState(seed)
    n, k = theta.shape
    y = rng.dirichlet(np.ones(k), size=n) if seed % 2 else rng.randint(k, size=n)
    values_t, grad_t = fenchel_young_loss(theta, y, loss=loss, temperature=t)
    values_1, grad_1 = fenchel_young_loss(theta / t, y, loss=loss)
    scale = 1 + np.abs(theta).max()
    assert_allclose(values_t, t * values_1, atol=1e-9 * scale, rtol=1e-9)
    if loss in SMOOTH_LOSS_NAMES:
        assert_allclose(grad_t, grad_1, atol=1e-9)


def test_perceptron_ignores_temperature():
    rng = np.random.RandomState(5)
    theta, y = _random_problem(rng, 10, 4, soft=False)
    a = fenchel_young_loss(theta, y, loss="perceptron", temperature=1.0)
    b = fenchel_young_loss(theta, y, loss="perceptron", temperature=7.0)
    assert_allclose(a[0], b[0], atol=0)
    assert_allclose(a[1], b[1], atol=0)


# ---------------------------------------------------------------------------
# shapes and dtypes


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_single_vector_and_dtypes(loss):
    theta = np.array([0.3, -1.0, 2.0])
    value, grad = fenchel_young_loss(theta, 1, loss=loss)
    values, grads = fenchel_young_loss(theta[None, :], [1], loss=loss)
    assert isinstance(value, float) and grad.shape == (3,)
    assert value == values[0]
    assert_allclose(grad, grads[0], atol=0)
    # Same with a distribution, integer-valued float labels and float32 scores.
    assert fenchel_young_loss(theta, [0.0, 1.0, 0.0], loss=loss)[0] == value
    assert fenchel_young_loss(theta[None], np.array([1.0]), loss=loss)[0][0] == value
    v32, g32 = fenchel_young_loss(theta.astype(np.float32)[None], [1], loss=loss)
    assert g32.dtype == np.float64
    assert_allclose(v32, values, rtol=1e-6)


def test_inputs_not_modified():
    theta = np.array([[0.3, -1.0, 2.0]])
    y = np.array([[0.2, 0.8, 0.0]])
    theta_copy, y_copy = theta.copy(), y.copy()
    for loss in LOSS_NAMES:
        fenchel_young_loss(theta, y, loss=loss)
    assert np.array_equal(theta, theta_copy) and np.array_equal(y, y_copy)


@pytest.mark.parametrize(
    "scores, y, kwargs, match",
    [
        ([[0.0, 1.0]], [0], {"loss": "hinge2"}, "unknown loss"),
        ([[0.0, 1.0]], [0], {"temperature": 0.0}, "temperature"),
        ([[0.0, 1.0]], [0], {"temperature": -1.0}, "temperature"),
        ([[0.0, np.nan]], [0], {}, r"NaN \(row 0, position 1\)"),
        ([[0.0, np.inf]], [0], {}, r"\+inf"),
        ([[0.0, -np.inf]], [0], {}, "-inf"),
        ([[0.0, 1.0]], [2], {}, "out of range"),
        ([[0.0, 1.0]], [-1], {}, "out of range"),
        ([[0.0, 1.0]], [0.5], {}, "integer class indices"),
        ([[0.0, 1.0], [1.0, 0.0]], [0], {}, "1 class indices but scores has 2 rows"),
        ([[0.0, 1.0]], [[0.5, 0.6]], {}, "sums to"),
        ([[0.0, 1.0]], [[1.5, -0.5]], {}, "negative"),
        ([[0.0, 1.0]], [[0.5, np.nan]], {}, "finite"),
        ([[0.0, 1.0]], [[1.0, 0.0, 0.0]], {}, "shape"),
        ([[0.0, 1.0]], [["a"]], {}, "dtype"),
        ([[[0.0, 1.0]]], [0], {}, "dimensions"),
    ],
)
def test_bad_input(scores, y, kwargs, match):
    with pytest.raises(ValueError, match=match):
        fenchel_young_loss(scores, y, **kwargs)


def test_predict_proba_bad_input():
    with pytest.raises(ValueError, match="unknown loss"):
        fenchel_young_predict_proba([0.0, 1.0], loss="logistic")
    with pytest.raises(ValueError, match="NaN"):
        fenchel_young_predict_proba([0.0, np.nan], loss="perceptron")


# ---------------------------------------------------------------- extreme magnitudes

FMIN = np.finfo(np.float64).min


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_loss_at_the_edges_of_the_float_range(loss):
    # Scores near +-1e308: no NaN (hinge and perceptron returned NaN, the
    # smooth losses raised about a "z" the caller never passed). The loss
    # max(theta) - theta_y + ... exceeds the float range for y=1: inf.
    scores = np.array([[1e308, -1e308, 0.5], [1e308, -1e308, 0.5], [1e308, 0.5, 1e308]])
    values, grad = fenchel_young_loss(scores, [1, 0, 0], loss=loss)
    assert values[0] == np.inf
    assert values[1] == 0.0
    np.testing.assert_array_equal(grad[:2], [[1.0, -1.0, 0.0], [0.0, 0.0, 0.0]])
    assert np.isfinite(values[2]) and np.all(np.isfinite(grad))
    # Masking with finfo.min gives the loss with the entry far below: for the
    # sparse losses exactly the loss with any score low enough.
    values, grad = fenchel_young_loss([[FMIN, 1.0, 0.5]], [1], loss=loss)
    if loss == "softmax":
        ref = logsumexp([FMIN, 1.0, 0.5]) - 1.0
        ref_grad = np.array([0.0, softmax([1.0, 0.5])[0] - 1.0, softmax([1.0, 0.5])[1]])
    else:
        ref, ref_grad = fenchel_young_loss([[-10.0, 1.0, 0.5]], [1], loss=loss)
    assert_allclose(values, ref, rtol=1e-15, atol=0)
    assert_allclose(grad, np.atleast_2d(ref_grad), rtol=0, atol=1e-15)


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_finite_loss_of_scores_more_than_finfo_max_apart(loss):
    # max(theta) - <theta, y> = 1e308 - 0: the loss is finite although the
    # scores are 2e308 apart. The shift by the max overflowed to -inf and
    # the loss came out inf.
    scores = [[1e308, -1e308], [1e300, FMIN], [1e300, FMIN]]
    y = [[0.5, 0.5], [0.5, 0.5], [1.0, 0.0]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values, grad = fenchel_young_loss(scores, y, loss=loss)
    # 1e300 / 2 - FMIN / 2 (the O(1) regularized part is lost in rounding).
    assert_allclose(values, [1e308, 1e300 / 2 - FMIN / 2, 0.0], rtol=1e-15, atol=0)
    assert_allclose(grad, [[0.5, -0.5], [0.5, -0.5], [0.0, 0.0]], rtol=0, atol=1e-15)


@pytest.mark.parametrize("loss", LOSS_NAMES)
@pytest.mark.parametrize("scale", [1e308, -FMIN])
def test_loss_at_a_temperature_near_finfo_max(loss, scale):
    # L_t(t z; y) = t L_1(z; y), finite here. The softmax loss was NaN, the
    # smooth losses' gradients those of the argmax, with overflow warnings.
    ref_values, ref_grad = fenchel_young_loss([[1.0, -1.0]], [[0.5, 0.5]], loss=loss)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values, grad = fenchel_young_loss(
            [[scale, -scale]], [[0.5, 0.5]], loss=loss, temperature=scale
        )
    assert_allclose(values, ref_values * scale, rtol=1e-13, atol=0)
    assert_allclose(grad, ref_grad, rtol=0, atol=1e-13)


@pytest.mark.parametrize("loss", LOSS_NAMES)
@pytest.mark.parametrize("scale", [1e308, -FMIN])
def test_prediction_at_a_temperature_near_finfo_max(loss, scale):
    # The prediction is the gradient of the loss above; the softmax and
    # entmax15 predictions were the argmax when the scores span more than
    # finfo.max ([1, 0] instead of [0.88, 0.12] for softmax).
    scores = [[scale, -scale], [scale, -scale / 2]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        proba = fenchel_young_predict_proba(scores, loss=loss, temperature=scale)
    _, grad = fenchel_young_loss(scores, [[0.0, 1.0]] * 2, loss=loss, temperature=scale)
    assert_allclose(proba, grad + [[0.0, 1.0]], rtol=0, atol=1e-13)
    ref = fenchel_young_predict_proba([[1.0, -1.0], [1.0, -0.5]], loss=loss)
    assert_allclose(proba, ref, rtol=0, atol=1e-13)


@pytest.mark.parametrize("loss", LOSS_NAMES)
@pytest.mark.parametrize("temperature", [1e-310, 5e-324])
def test_loss_at_subnormal_temperature_is_the_perceptron_loss(loss, temperature):
    # L_t -> the perceptron loss as t -> 0 (NaN or ZeroDivisionError before).
    values, grad = fenchel_young_loss([[1.0, 0.5, -3.0]], [1], loss=loss, temperature=temperature)
    assert_allclose(values, [0.5], rtol=1e-15)
    np.testing.assert_array_equal(grad, [[1.0, -1.0, 0.0]])
    proba = fenchel_young_predict_proba([1.0, 0.5, -3.0], loss=loss, temperature=temperature)
    np.testing.assert_array_equal(proba, [1.0, 0.0, 0.0])
