"""Every mapping at the edges of float64: huge and tiny scores and temperatures.

The mappings only depend on differences of scores; they must give the exact
answer (up to rounding) for scores anywhere in the float64 range, including
the common idiom of masking with ``np.finfo(float).min``, and for any
positive temperature, subnormal ones included (the limit is the argmax).
"""

import functools
import warnings

import numpy as np
import pytest

from sksparse_struct.mappings import (
    csoftmax,
    csparsemax,
    entmax15,
    entmax15_backward,
    fusedmax,
    oscarmax,
    regularized_max,
    softmax,
    softmax_backward,
    sparsemax,
    sparsemax_backward,
    sq_pnorm_max,
    sq_pnorm_max_backward,
)

FMIN = np.finfo(np.float64).min
FMAX = np.finfo(np.float64).max

# name -> forward(z, temperature); mappings without a temperature ignore it.
TEMPERED = {
    "softmax": softmax,
    "sparsemax": sparsemax,
    "entmax15": entmax15,
    "sq_pnorm_max(p=1.5)": functools.partial(sq_pnorm_max, p=1.5),
    "sq_pnorm_max(p=2)": functools.partial(sq_pnorm_max, p=2),
}
UNTEMPERED = {
    "fusedmax": lambda z: fusedmax(z, 0.1),
    "oscarmax": lambda z: oscarmax(z, 0.01),
    "csparsemax": lambda z: csparsemax(z, np.ones(len(z))),
    "csoftmax": lambda z: csoftmax(z, np.ones(len(z))),
}
ALL = {**{k: functools.partial(f, temperature=1.0) for k, f in TEMPERED.items()}, **UNTEMPERED}


@pytest.mark.parametrize("name", list(ALL))
def test_masking_with_finfo_min_equals_masking_with_minus_inf(name):
    forward = ALL[name]
    for z in ([FMIN, 1.0, 0.5], [1.0, FMIN, FMIN, 0.5], [-1e308, 1.0, 0.5]):
        z = np.array(z)
        masked = np.where(z < -1e300, -np.inf, z)
        got = forward(z)
        assert np.all(np.isfinite(got)) and abs(got.sum() - 1.0) <= 1e-12
        np.testing.assert_allclose(got, forward(masked), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", list(ALL))
def test_scores_at_both_ends_of_the_range(name):
    forward = ALL[name]
    np.testing.assert_allclose(forward(np.array([-1e308, 0.0, 0.0])), [0.0, 0.5, 0.5], atol=1e-15)
    np.testing.assert_allclose(forward(np.array([FMAX, FMIN, FMAX])), [0.5, 0.0, 0.5], atol=1e-15)
    np.testing.assert_allclose(forward(np.array([1e300, 1e300])), [0.5, 0.5], atol=1e-15)


@pytest.mark.parametrize("name", list(TEMPERED))
@pytest.mark.parametrize("temperature", [1e-310, 5e-324, 1e-300])
def test_tiny_temperature_gives_the_argmax(name, temperature):
    # 1 / temperature overflows for subnormal temperatures (it used to give
    # NaN from softmax and ZeroDivisionError elsewhere).
    forward = TEMPERED[name]
    np.testing.assert_array_equal(forward(np.array([1.0, 0.5, -2.0]), temperature=temperature), [1, 0, 0])
    np.testing.assert_allclose(forward(np.array([3.0, -1.0, 3.0]), temperature=temperature), [0.5, 0, 0.5])
    np.testing.assert_array_equal(forward(np.array([[0.0, -np.inf, 1e-290]]), temperature=temperature), [[0, 0, 1]])


@pytest.mark.parametrize("name", list(TEMPERED))
def test_huge_scores_over_small_temperature(name):
    # z / temperature overflows (1e300 / 1e-10); the mapping does not.
    forward = TEMPERED[name]
    np.testing.assert_array_equal(forward(np.array([1e300, 0.5, -1e300]), temperature=1e-10), [1, 0, 0])
    np.testing.assert_allclose(
        forward(np.array([1e300, 1e300 * (1 - 2**-52)]), temperature=1e-10), [1.0, 0.0], atol=1e-15
    )


@pytest.mark.parametrize("name", list(TEMPERED))
@pytest.mark.parametrize(
    "z, temperature",
    [
        ([FMAX, -FMAX], FMAX),
        ([FMAX, -FMAX], 1e306),
        ([FMAX, -FMAX / 2], FMAX),
        ([1e308, -5e307, -np.inf, 1e308], 1e308),
        ([[FMAX, FMIN, 0.0], [1.0, 2.0, 3.0], [-1e-300, 1e308, -1e308]], 2.0**1023),
    ],
)
def test_scores_spanning_more_than_the_range_at_a_huge_temperature(name, z, temperature):
    # z - max(z) overflowed to -inf: softmax and entmax15 gave the argmax,
    # e.g. [1, 0] for softmax([FMAX, -FMAX], temperature=FMAX), not [0.88, 0.12].
    forward = TEMPERED[name]
    z = np.array(z)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = forward(z, temperature=temperature)
    # The same mapping at a scale where nothing overflows (exact scaling).
    scale = 2.0**-20
    np.testing.assert_allclose(
        p, forward(z * scale, temperature=temperature * scale), rtol=1e-9, atol=1e-15
    )


def test_softmax_and_entmax15_over_the_whole_range():
    e2 = np.exp(-2.0)
    np.testing.assert_allclose(
        softmax(np.array([FMAX, -FMAX]), temperature=FMAX), [1 / (1 + e2), e2 / (1 + e2)],
        rtol=1e-15,
    )
    # exp(-2 * FMAX / 1e306) = exp(-359.5...) is tiny, not 0.
    tail = softmax(np.array([FMAX, -FMAX]), temperature=1e306)[1]
    np.testing.assert_allclose(tail, np.exp(-(FMAX / 1e306) * 2), rtol=1e-12)
    np.testing.assert_allclose(
        entmax15(np.array([FMAX, -FMAX / 2]), temperature=FMAX), entmax15(np.array([1.0, -0.5])),
        rtol=1e-15,
    )


@pytest.mark.parametrize("mapping", ["softmax", "sparsemax", "entmax15", "sq_pnorm_max"])
@pytest.mark.parametrize("temperature", [1e-310, 1e-10])
def test_regularized_max_value_at_tiny_temperature(mapping, temperature):
    # max_Omega(z) -> max(z) as the temperature goes to 0, and must not
    # overflow on the way (temperature * logsumexp(z / temperature) did).
    for z, top in (([1.0, 0.5], 1.0), ([1e300, -5.0], 1e300)):
        value, p = regularized_max(z, mapping=mapping, temperature=temperature)
        assert np.isfinite(value) and abs(value - top) <= 1e-9 * abs(top)
        np.testing.assert_array_equal(p, [1.0, 0.0])


@pytest.mark.parametrize(
    "backward",
    [
        sparsemax_backward,
        entmax15_backward,
        softmax_backward,
        lambda p, dp, temperature: sq_pnorm_max_backward(p, dp, p=1.5, temperature=temperature),
    ],
)
def test_backward_at_subnormal_temperature(backward):
    # A one-hot output does not move: the Jacobian is 0, not inf * 0 = NaN.
    got = backward(np.array([1.0, 0.0, 0.0]), np.array([1.0, -2.0, 3.0]), temperature=1e-310)
    np.testing.assert_array_equal(got, 0.0)


def test_oscarmax_with_scores_and_alpha_near_the_top_of_the_range():
    # The prox's sums overflowed (ZeroDivisionError in the projection).
    np.testing.assert_allclose(oscarmax([1e308, 1e308], 1e295), [0.5, 0.5], atol=1e-15)
    np.testing.assert_allclose(oscarmax([1e300] * 4, 1e299), [0.25] * 4, atol=1e-15)
    np.testing.assert_allclose(oscarmax([FMAX, -FMAX, 0.0], 1e307), [1.0, 0.0, 0.0], atol=1e-15)
    z = np.array([0.5, 0.25, -1.0, 0.375])
    np.testing.assert_allclose(
        oscarmax(z * 2.0**1015, 0.05 * 2.0**1015), oscarmax(z * 2.0**10, 0.05 * 2.0**10),
        atol=1e-12,
    )
