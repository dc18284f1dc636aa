"""Tests for 1.5-entmax and its backward pass."""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sksparse_struct.mappings import entmax15, entmax15_backward, regularizer
from sksparse_struct.mappings._entmax_fast import entmax15_threshold_sorted
from tests._helpers import central_difference_vjp, solve_on_simplex

finite_scores = arrays(
    np.float64,
    st.integers(1, 12),
    elements=st.floats(-50, 50, allow_nan=False, allow_infinity=False),
)
temperatures = st.floats(0.05, 20.0)


def tsallis(p):
    """Omega(p) = (sum p^1.5 - 1) / 0.75, written independently of the package."""
    p = np.clip(p, 0.0, None)
    return (np.sum(p**1.5) - 1.0) / 0.75


def enumerate_entmax(z):
    """Reference: every support S, tau from sum_S (z/2 - tau)^2 = 1, keep the KKT one."""
    x = z / 2.0
    d = x.shape[0]
    for k in range(1, d + 1):
        for support in itertools.combinations(range(d), k):
            s = x[list(support)]
            # k tau^2 - 2 tau sum(s) + sum(s^2) - 1 = 0, smaller root
            disc = s.sum() ** 2 - k * (np.sum(s**2) - 1.0)
            if disc < 0:
                continue
            tau = (s.sum() - np.sqrt(disc)) / k
            rest = np.delete(x, list(support))
            if np.all(s > tau) and np.all(rest <= tau):
                return np.maximum(x - tau, 0.0) ** 2
    raise AssertionError("no support satisfies the KKT conditions")


def bisection_entmax(z, temperature=1.0):
    """Reference: bisection on tau for sum((z/(2T) - tau)_+^2) = 1."""
    x = z / (2.0 * temperature)
    lo, hi = np.max(x) - 1.0, np.max(x)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.sum(np.maximum(x - mid, 0.0) ** 2) >= 1.0:
            lo = mid
        else:
            hi = mid
    p = np.maximum(x - lo, 0.0) ** 2
    return p / p.sum()


# ---------------------------------------------------------------- references


@pytest.mark.parametrize("d", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("seed", range(4))
def test_matches_support_enumeration(d, seed):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=d) * rng.choice([0.1, 1.0, 5.0])
    assert np.allclose(entmax15(z), enumerate_entmax(z), rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("temperature", [1.0, 0.4, 3.0])
def test_matches_slsqp_on_definition(seed, temperature):
    # entmax15(z) = argmax_p <p, z> - T * Omega(p), Omega Tsallis-1.5: checks
    # the forward against the convention used by regularized_max.
    rng = np.random.default_rng(seed)
    d = 6
    z = rng.normal(size=d) * 2
    ref = solve_on_simplex(lambda p: temperature * tsallis(p) - p @ z, d)
    got = entmax15(z, temperature)
    assert np.allclose(got, ref, rtol=0, atol=1e-6)
    # The exact output is at least as good as SLSQP's on the objective.
    obj = lambda p: temperature * tsallis(p) - p @ z  # noqa: E731
    assert obj(got) <= obj(ref) + 1e-12


@pytest.mark.parametrize("seed", range(10))
def test_matches_bisection_large_rows(seed):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(3, 300)) * rng.choice([0.3, 1.0, 4.0])
    temperature = float(rng.uniform(0.2, 3.0))
    got = entmax15(z, temperature)
    for i in range(3):
        assert np.allclose(got[i], bisection_entmax(z[i], temperature), rtol=0, atol=1e-12)


def test_threshold_from_sorted_equals_full_count():
    # The early stop in the sorted scan equals the count-based rule of
    # Peters et al. (2019): support size = #{k : tau_k < s_k}.
    rng = np.random.default_rng(0)
    for _ in range(500):
        d = int(rng.integers(1, 30))
        s = -rng.uniform(0, 1, size=d) * rng.choice([0.05, 0.5, 1.0])
        s[0] = 0.0
        s.sort()
        tau, k = entmax15_threshold_sorted(s.copy())
        desc = s[::-1]
        ks = np.arange(1, d + 1)
        mean = np.cumsum(desc) / ks
        delta = 1.0 / ks - (np.cumsum(desc**2) / ks - mean**2)
        taus = mean - np.sqrt(np.maximum(delta, 0.0))
        k_ref = int(np.sum((delta >= 0) & (taus < desc)))
        assert k == k_ref
        assert np.isclose(tau, taus[k_ref - 1], rtol=0, atol=1e-15)


def test_known_values():
    # [(z/2 - tau)_+]^2 with tau = -0.5 for z = [1, -inf]: p = [1, 0].
    assert entmax15([1.0, -np.inf]).tolist() == [1.0, 0.0]
    # Two entries a gap 2 apart on z/2-scale: the smaller one gets 0.
    assert entmax15([2.0, 0.0]).tolist() == [1.0, 0.0]
    p = entmax15([0.5, 0.0])
    # (0.25 - tau)^2 + (0 - tau)^2 = 1
    tau = (0.25 - np.sqrt(0.25**2 - 2 * (0.0625 - 1))) / 2
    assert np.allclose(p, [(0.25 - tau) ** 2, tau**2], rtol=0, atol=1e-15)


# ---------------------------------------------------------------- backward


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("temperature", [1.0, 0.5, 3.0])
def test_backward_matches_finite_differences(seed, temperature):
    rng = np.random.default_rng(seed)
    d = 8
    z = rng.normal(size=d) * 2
    p = entmax15(z, temperature)
    # Away from kinks: no entry of z/(2T) close to the threshold.
    x = z / (2 * temperature)
    tau = x[p > 0][0] - np.sqrt(p[p > 0][0])
    if np.min(np.abs(x - tau)) < 1e-3:
        pytest.skip("too close to a change of support")
    dp = rng.normal(size=d)
    got = entmax15_backward(p, dp, temperature)
    ref = central_difference_vjp(lambda v: entmax15(v, temperature), z, dp)
    assert np.allclose(got, ref, rtol=0, atol=1e-7)


def test_backward_jacobian_properties():
    rng = np.random.default_rng(3)
    z = rng.normal(size=6)
    p = entmax15(z)
    jac = np.stack([entmax15_backward(p, e) for e in np.eye(6)])
    assert np.allclose(jac, jac.T, rtol=0, atol=1e-15)
    assert np.allclose(jac.sum(axis=1), 0.0, atol=1e-15)
    assert np.all(jac[:, p == 0] == 0) and np.all(jac[p == 0] == 0)


def test_backward_batch_equals_rows():
    rng = np.random.default_rng(4)
    z = rng.normal(size=(5, 7))
    dp = rng.normal(size=(5, 7))
    p = entmax15(z, 0.7)
    batch = entmax15_backward(p, dp, 0.7)
    for i in range(5):
        assert np.array_equal(batch[i], entmax15_backward(p[i], dp[i], 0.7))


# ---------------------------------------------------------------- properties


@given(finite_scores, temperatures)
def test_output_on_simplex_and_kkt(z, temperature):
    p = entmax15(z, temperature)
    assert p.dtype == np.float64 and p.shape == z.shape
    assert np.all(p >= 0) and abs(p.sum() - 1.0) <= 1e-12
    # KKT: sqrt(p) = (z/(2T) - tau)_+ for a single tau.
    x = z / (2 * temperature)
    support = p > 0
    taus = x[support] - np.sqrt(p[support])
    scale = max(1.0, np.abs(x).max())
    assert np.ptp(taus) <= 1e-9 * scale
    assert np.all(x[~support] <= taus.mean() + 1e-9 * scale)


@given(finite_scores, st.randoms(use_true_random=False))
def test_permutation_equivariance(z, rnd):
    perm = np.arange(z.shape[0])
    rnd.shuffle(perm)
    assert np.allclose(entmax15(z[perm]), entmax15(z)[perm], rtol=0, atol=1e-12)


@given(finite_scores, st.floats(-100, 100))
def test_shift_invariance(z, c):
    assert np.allclose(entmax15(z + c), entmax15(z), rtol=0, atol=1e-9)


@given(finite_scores, temperatures)
def test_temperature_is_scaling(z, temperature):
    assert np.allclose(entmax15(z, temperature), entmax15(z / temperature), rtol=0, atol=1e-12)


@given(finite_scores)
def test_between_sparsemax_and_softmax_in_regularizer(z):
    # entmax15 maximises <p, z> - Omega(p): no other mapping's output does better.
    from sksparse_struct.mappings import softmax, sparsemax

    p = entmax15(z)
    value = p @ z - regularizer(p, mapping="entmax15")
    for other in (softmax(z), sparsemax(z)):
        assert other @ z - regularizer(other, mapping="entmax15") <= value + 1e-9


# ---------------------------------------------------------------- edge cases


def test_edge_cases():
    assert entmax15([3.0]).tolist() == [1.0]
    assert entmax15([2.0, 2.0, -5.0]).tolist() == [0.5, 0.5, 0.0]
    assert np.allclose(entmax15(np.full(10, -7.0)), 0.1, rtol=0, atol=1e-15)
    assert entmax15([1e6, -1e6, 0.0]).tolist() == [1.0, 0.0, 0.0]
    assert np.allclose(entmax15([1e6, 1e6 - 0.5, -1e6]), entmax15([0.5, 0.0, -2e6]), atol=1e-9)
    z = np.array([0.3, -np.inf, 0.2, -np.inf])
    p = entmax15(z)
    assert p[1] == 0.0 and p[3] == 0.0
    assert np.allclose(p[[0, 2]], entmax15(z[[0, 2]]), rtol=0, atol=1e-15)
    assert entmax15([-np.inf, -1e300], temperature=1e-3).tolist() == [0.0, 1.0]
    z32 = np.array([[0.5, 1.0, 0.1]], dtype=np.float32)
    assert entmax15(z32).dtype == np.float64
    assert np.array_equal(entmax15(z32), entmax15(z32.astype(np.float64)))


def test_batch_equals_rows():
    rng = np.random.default_rng(5)
    z = rng.normal(size=(6, 9))
    z[2, 3] = -np.inf
    batch = entmax15(z, 0.8)
    for i in range(6):
        assert np.array_equal(batch[i], entmax15(z[i], 0.8))


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "z, match",
    [
        ([0.0, np.nan], r"NaN \(row 0, position 1\)"),
        ([[0.0, 1.0], [np.inf, 0.0]], r"\+inf \(row 1, position 0\)"),
        ([[0.0, 1.0], [-np.inf, -np.inf]], "every entry of row 1"),
        (np.zeros((2, 2, 2)), "3 dimensions"),
        (np.zeros((3, 0)), "at least one entry"),
    ],
)
def test_bad_scores(z, match):
    with pytest.raises(ValueError, match=match):
        entmax15(z)


def test_bad_parameters():
    for bad in [0.0, -1.0, np.inf, "1"]:
        with pytest.raises(ValueError, match="temperature"):
            entmax15([0.0, 1.0], temperature=bad)
        with pytest.raises(ValueError, match="temperature"):
            entmax15_backward([0.5, 0.5], [0.0, 1.0], temperature=bad)
    with pytest.raises(ValueError, match="does not match"):
        entmax15_backward([0.5, 0.5], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="-inf"):
        entmax15_backward([0.5, 0.5], [1.0, -np.inf])


def test_backward_checks_that_p_is_on_the_simplex():
    # Like sq_pnorm_max_backward: sqrt(p) of a negative entry was NaN, and a
    # p summing to 1.4 gave a silently wrong Jacobian product.
    with pytest.raises(ValueError, match=r"row 0, position 1 is negative \(-0.1\)"):
        entmax15_backward([1.1, -0.1, 0.0], [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="row 1 of p sums to 1.4, not 1"):
        entmax15_backward([[0.5, 0.5, 0.0], [0.7, 0.7, 0.0]], np.ones((2, 3)))
    # Outputs of entmax15 (sums off by rounding only) are accepted.
    rng = np.random.default_rng(2)
    p = entmax15(rng.normal(size=(20, 9)) * 3)
    assert np.all(np.isfinite(entmax15_backward(p, rng.normal(size=(20, 9)))))
