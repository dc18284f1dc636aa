"""XOR, Budget and Matching against brute-force enumeration of every structure."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sksparse_struct.structures import XOR
from tests._helpers import central_difference_vjp

NEG_INF = -np.inf


def _brute_force(structure, values, potentials):
    """Score of every structure value; MAP value, first argmax, marginals, log Z.

    ``values`` are enumerated in the order that defines the documented tie
    rule, so the first argmax is the value ``map`` must return.
    """
    parts = structure.encode(*potentials)
    scores = np.array([structure.score(v, *potentials) for v in values])
    ms = np.array([structure.indicators(v, parts)[0] for v in values])
    best = int(np.argmax(scores))
    finite = np.isfinite(scores)
    top = scores[finite].max()
    w = np.where(finite, np.exp(np.where(finite, scores, 0.0) - top), 0.0)
    log_z = top + np.log(w.sum())
    marg = (w[:, None] * ms).sum(axis=0) / w.sum()
    return scores, best, marg, log_z


# --------------------------------------------------------------------------- XOR


def _xor_values(k):
    return list(range(k))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [1, 2, 5])
def test_xor_brute_force(seed, k):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=k) * 3
    if seed % 3 == 1 and k > 1:
        z[rng.integers(k)] = NEG_INF
    xor = XOR()
    scores, best, marg, log_z = _brute_force(xor, _xor_values(k), (z,))
    assert xor.map(z) == best
    assert xor.score(xor.map(z), z) == scores.max()
    got_marg, got_log_z = xor.marginals(z)
    assert np.allclose(got_marg, marg, rtol=0, atol=1e-12)
    assert abs(got_log_z - log_z) < 1e-10
    assert got_marg.shape == (k,)
    assert isinstance(got_log_z, float)


def test_xor_ties_go_to_lowest_index():
    xor = XOR()
    assert xor.map([1.0, 3.0, 3.0, 3.0]) == 1
    assert xor.map([0.0, 0.0]) == 0
    assert xor.map([NEG_INF, 2.0, 2.0]) == 1
    assert type(xor.map([1.0, 2.0])) is int


def test_xor_oracle_indicators():
    xor = XOR()
    parts = xor.encode([0.5, 2.0, -1.0])
    value, m, n = xor.oracle(parts, np.array([3.0, 2.0, -1.0]), parts.eta_v)
    assert value == 0
    assert m.tolist() == [1.0, 0.0, 0.0]
    assert n.shape == (0,)
    assert xor.decode(m, n, parts).tolist() == m.tolist()


@pytest.mark.parametrize("seed", range(5))
def test_xor_marginals_backward_matches_finite_differences(seed):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=6)
    d = rng.normal(size=6)
    (got,) = XOR().marginals_backward(z, d)
    ref = central_difference_vjp(lambda s: XOR().marginals(s)[0], z, d)
    assert np.allclose(got, ref, rtol=0, atol=1e-8)


def test_xor_log_z_gradient_is_marginals():
    rng = np.random.default_rng(0)
    z = rng.normal(size=5)
    ref = central_difference_vjp(
        lambda s: np.array([XOR().marginals(s)[1]]), z, np.ones(1)
    )
    assert np.allclose(XOR().marginals(z)[0], ref, atol=1e-8)


def test_xor_extreme_and_forbidden():
    xor = XOR()
    z = np.array([1e4, -1e4, 1e4 - 1.0, NEG_INF])
    p, log_z = xor.marginals(z)
    assert np.isfinite(p).all() and np.isfinite(log_z)
    assert p[3] == 0.0 and p[1] == 0.0
    assert abs(log_z - (1e4 + np.log1p(np.exp(-1.0)))) < 1e-9
    assert xor.map(z) == 0
    (g,) = xor.marginals_backward(z, np.ones(4))
    assert np.isfinite(g).all() and g[3] == 0.0
    # The forbidden item's score is never multiplied by 0.
    assert xor.score(0, z) == 1e4
    assert xor.score(3, z) == NEG_INF
    with pytest.raises(ValueError, match="-inf"):
        xor.map([NEG_INF, NEG_INF])
    with pytest.raises(ValueError, match="-inf"):
        xor.marginals([NEG_INF])


@pytest.mark.parametrize(
    "bad, match",
    [
        ([1.0, np.nan], "NaN"),
        ([1.0, np.inf], r"\+inf"),
        ([[1.0, 2.0]], "dimension"),
        ([], "at least one"),
        (["a", "b"], "real numbers"),
    ],
)
def test_xor_bad_scores(bad, match):
    with pytest.raises(ValueError, match=match):
        XOR().map(bad)
    with pytest.raises(ValueError, match=match):
        XOR().marginals(bad)


def test_xor_bad_values_and_gradients():
    xor = XOR()
    with pytest.raises(ValueError, match="out of range"):
        xor.score(3, [1.0, 2.0])
    with pytest.raises(ValueError, match="int"):
        xor.score(0.5, [1.0, 2.0])
    with pytest.raises(ValueError, match="int"):
        xor.score(True, [1.0, 2.0])
    with pytest.raises(ValueError, match="shape"):
        xor.marginals_backward([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="NaN"):
        xor.marginals_backward([1.0, 2.0], [1.0, np.nan])


@given(
    arrays(
        np.float64,
        st.integers(1, 8),
        elements=st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False),
    )
)
def test_xor_properties(z):
    xor = XOR()
    best = xor.map(z)
    assert z[best] == z.max() and best == int(np.flatnonzero(z == z.max())[0])
    p, log_z = xor.marginals(z)
    assert abs(p.sum() - 1.0) < 1e-12 and (p >= 0).all()
    assert z.max() - 1e-9 <= log_z <= z.max() + np.log(len(z)) + 1e-9
