"""XOR, Budget and Matching against brute-force enumeration of every structure."""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sksparse_struct.structures import XOR, Budget, Matching
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
    with pytest.raises(ValueError, match="every one of the 2 items is forbidden"):
        xor.map([NEG_INF, NEG_INF])
    with pytest.raises(ValueError, match="every one of the 1 items is forbidden"):
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


# ------------------------------------------------------------------------ Budget


def _budget_values(k, budget, exact):
    """Every feasible subset, by size then lexicographically (the tie order)."""
    sizes = [budget] if exact else range(min(budget, k) + 1)
    return [
        np.array(c, dtype=np.int64)
        for size in sizes
        for c in itertools.combinations(range(k), size)
    ]


BUDGET_CASES = [
    (k, budget, exact)
    for k in (1, 4, 6)
    for budget in (0, 1, 2, 3, 8)
    for exact in (False, True)
    if not (exact and budget > k)
]


@pytest.mark.parametrize("k, budget, exact", BUDGET_CASES)
@pytest.mark.parametrize("seed", range(3))
def test_budget_brute_force(k, budget, exact, seed):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=k) * 2
    if seed == 1 and k > budget:
        z[rng.integers(k)] = NEG_INF
    structure = Budget(budget, exact=exact)
    values = _budget_values(k, budget, exact)
    scores, best, marg, log_z = _brute_force(structure, values, (z,))
    got = structure.map(z)
    assert got.dtype == np.int64
    assert got.tolist() == values[best].tolist()
    assert structure.score(got, z) == scores.max()
    got_marg, got_log_z = structure.marginals(z)
    assert np.allclose(got_marg, marg, rtol=0, atol=1e-10)
    assert abs(got_log_z - log_z) < 1e-10
    assert isinstance(got_log_z, float)


@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_budget_ties_match_documented_rule(seed, exact):
    # Small integer scores: sums are exact, so ties are real ties; the first
    # maximum in (size, lexicographic) order is the documented choice.
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 7))
    budget = int(rng.integers(0, k + 1))
    z = rng.integers(-2, 3, size=k).astype(float)
    structure = Budget(budget, exact=exact)
    values = _budget_values(k, budget, exact)
    _, best, _, _ = _brute_force(structure, values, (z,))
    assert structure.map(z).tolist() == values[best].tolist()


def test_budget_tie_examples():
    assert Budget(2).map([1.0, 3.0, 1.0, 1.0]).tolist() == [0, 1]
    assert Budget(2).map([0.0, 0.0, 2.0]).tolist() == [2]
    assert Budget(2, exact=True).map([0.0, 0.0, 2.0]).tolist() == [0, 2]
    assert Budget(0).map([1.0]).tolist() == []


@pytest.mark.parametrize(
    "k, budget, exact",
    [(5, 2, False), (5, 2, True), (6, 4, False), (4, 9, False), (3, 3, True)],
)
@pytest.mark.parametrize("seed", range(3))
def test_budget_marginals_backward_matches_finite_differences(k, budget, exact, seed):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=k)
    d = rng.normal(size=k)
    structure = Budget(budget, exact=exact)
    (got,) = structure.marginals_backward(z, d)
    ref = central_difference_vjp(lambda s: structure.marginals(s)[0], z, d)
    assert np.allclose(got, ref, rtol=0, atol=1e-8)


def _budget_covariance(structure, z):
    """Covariance of the indicators under p(y) ∝ exp(score(y)), by enumeration."""
    k = len(z)
    values = _budget_values(k, structure.budget, structure.exact)
    scores, _, marg, _ = _brute_force(structure, values, (z,))
    parts = structure.encode(z)
    ms = np.array([structure.indicators(v, parts)[0] for v in values])
    finite = np.isfinite(scores)
    w = np.zeros(len(values))
    w[finite] = np.exp(scores[finite] - scores[finite].max())
    w /= w.sum()
    return (ms * w[:, None]).T @ ms - np.outer(marg, marg)


@given(
    arrays(
        np.float64,
        st.integers(1, 6),
        elements=st.floats(-30, 30, allow_nan=False, allow_infinity=False),
    ),
    st.integers(0, 6),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_budget_backward_is_exact_covariance(z, budget, exact, seed):
    # The Jacobian of the marginals is the covariance of the indicators (the
    # Hessian of log Z): an exact reference, valid at any scale.
    budget = min(budget, len(z)) if exact else budget
    structure = Budget(budget, exact=exact)
    d = np.random.default_rng(seed).normal(size=len(z))
    (got,) = structure.marginals_backward(z, d)
    ref = _budget_covariance(structure, z) @ d
    assert np.allclose(got, ref, rtol=0, atol=1e-10 * max(1.0, np.abs(d).max()))


def test_budget_backward_with_forbidden_item():
    rng = np.random.default_rng(3)
    z = rng.normal(size=5)
    z[2] = NEG_INF
    d = rng.normal(size=5)
    structure = Budget(2)
    (got,) = structure.marginals_backward(z, d)
    assert got[2] == 0.0
    free = np.flatnonzero(np.isfinite(z))

    def forward(s):
        full = z.copy()
        full[free] = s
        return structure.marginals(full)[0]

    ref = central_difference_vjp(forward, z[free], d)
    assert np.allclose(got[free], ref, rtol=0, atol=1e-8)


@pytest.mark.parametrize("exact", [False, True])
def test_budget_log_z_gradient_is_marginals(exact):
    rng = np.random.default_rng(0)
    z = rng.normal(size=6)
    structure = Budget(3, exact=exact)
    ref = central_difference_vjp(
        lambda s: np.array([structure.marginals(s)[1]]), z, np.ones(1)
    )
    assert np.allclose(structure.marginals(z)[0], ref, atol=1e-8)


def test_budget_unconstrained_is_independent_sigmoids():
    rng = np.random.default_rng(0)
    z = rng.normal(size=7) * 3
    mu, log_z = Budget(7).marginals(z)
    assert np.allclose(mu, 1 / (1 + np.exp(-z)), rtol=0, atol=1e-12)
    assert abs(log_z - np.log1p(np.exp(z)).sum()) < 1e-10
    assert Budget(100).map(z).tolist() == np.flatnonzero(z > 0).tolist()


@pytest.mark.parametrize("exact", [False, True])
def test_budget_extreme_scores(exact):
    z = np.array([1e4, -1e4, 1e4 - 1.0, 3.0, -1e4 + 2.0])
    structure = Budget(2, exact=exact)
    values = _budget_values(5, 2, exact)
    scores, best, marg, log_z = _brute_force(structure, values, (z,))
    mu, got_log_z = structure.marginals(z)
    assert np.allclose(mu, marg, rtol=0, atol=1e-10)
    assert abs(got_log_z - log_z) < 1e-8
    assert structure.map(z).tolist() == [0, 2]
    (g,) = structure.marginals_backward(z, np.arange(5.0))
    assert np.isfinite(g).all()


def test_budget_large_instance_is_consistent():
    rng = np.random.default_rng(0)
    z = rng.normal(size=500)
    mu, log_z = Budget(40, exact=True).marginals(z)
    assert abs(mu.sum() - 40) < 1e-9 and (mu >= 0).all() and (mu <= 1).all()
    mu, _ = Budget(40).marginals(z)
    assert mu.sum() <= 40 + 1e-9


def test_budget_forbidden_items():
    # The empty set is always feasible without ``exact``.
    structure = Budget(2)
    z = [NEG_INF, NEG_INF]
    assert structure.map(z).tolist() == []
    mu, log_z = structure.marginals(z)
    assert mu.tolist() == [0.0, 0.0] and log_z == 0.0
    assert structure.score([], z) == 0.0
    assert Budget(2, exact=True).map([1.0, NEG_INF, -5.0]).tolist() == [0, 2]
    with pytest.raises(ValueError, match="only 1 of the 3 items"):
        Budget(2, exact=True).map([1.0, NEG_INF, NEG_INF])
    with pytest.raises(ValueError, match="only 0 of the 2 items"):
        Budget(1, exact=True).marginals([NEG_INF, NEG_INF])
    assert Budget(0, exact=True).map([NEG_INF]).tolist() == []


@pytest.mark.parametrize("budget", [-1, 1.5, True, "2", None])
def test_budget_bad_budget(budget):
    with pytest.raises(ValueError, match="Budget's budget must be an integer >= 0"):
        Budget(budget).map([1.0, 2.0])
    with pytest.raises(ValueError, match="Budget's budget must be an integer >= 0"):
        Budget(budget).marginals([1.0, 2.0])


def test_budget_exact_budget_above_k_names_both():
    with pytest.raises(ValueError, match=r"budget=5.*K=3"):
        Budget(5, exact=True).map([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"budget=5.*K=3"):
        Budget(5, exact=True).marginals([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="exact must be a bool"):
        Budget(1, exact="yes").map([1.0])
    # Not exact: a large budget only allows every subset.
    assert Budget(5).map([1.0, -2.0, 3.0]).tolist() == [0, 2]


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
def test_budget_bad_scores(bad, match):
    with pytest.raises(ValueError, match=match):
        Budget(1).map(bad)
    with pytest.raises(ValueError, match=match):
        Budget(1).marginals(bad)


def test_budget_bad_values_and_gradients():
    z = [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="at most 1"):
        Budget(1).score([0, 1], z)
    with pytest.raises(ValueError, match="exactly 2"):
        Budget(2, exact=True).score([0], z)
    with pytest.raises(ValueError, match="repeats"):
        Budget(2).score([1, 1], z)
    with pytest.raises(ValueError, match="outside"):
        Budget(2).score([3], z)
    with pytest.raises(ValueError, match="1-D array of item indices"):
        Budget(2).score([0.5], z)
    with pytest.raises(ValueError, match="shape"):
        Budget(1).marginals_backward(z, [1.0, 2.0])
    with pytest.raises(ValueError, match="NaN"):
        Budget(1).marginals_backward(z, [1.0, 2.0, np.nan])


@given(
    arrays(
        np.float64,
        st.integers(1, 6),
        elements=st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False),
    ),
    st.integers(0, 7),
    st.booleans(),
)
def test_budget_properties(z, budget, exact):
    k = len(z)
    budget = min(budget, k) if exact else budget
    structure = Budget(budget, exact=exact)
    values = _budget_values(k, budget, exact)
    best = max(structure.score(v, z) for v in values)
    got = structure.map(z)
    assert structure.score(got, z) == best
    mu, log_z = structure.marginals(z)
    assert (mu >= 0).all() and (mu <= 1 + 1e-12).all()
    assert best - 1e-9 * max(1.0, abs(best)) <= log_z
    assert log_z <= best + np.log(len(values)) + 1e-9 * max(1.0, abs(best))


# ---------------------------------------------------------------------- Matching


def _matching_values(r, c):
    """Every matching of all items of the smaller side, as row assignments."""
    values = []
    if r <= c:
        for cols in itertools.permutations(range(c), r):
            values.append(np.array(cols, dtype=np.int64))
    else:
        for rows in itertools.permutations(range(r), c):
            a = np.full(r, -1, dtype=np.int64)
            a[list(rows)] = np.arange(c)
            values.append(a)
    return values


MATCHING_SHAPES = [(4, 4), (3, 5), (5, 3), (1, 1), (1, 3), (3, 1), (2, 2)]


@pytest.mark.parametrize("shape", MATCHING_SHAPES)
@pytest.mark.parametrize("seed", range(4))
def test_matching_brute_force(shape, seed):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=shape) * 3
    if seed % 2 and min(shape) > 1:
        # Forbid a few pairs, keeping one matching of the smaller side allowed.
        keep = _matching_values(*shape)[rng.integers(len(_matching_values(*shape)))]
        mask = rng.random(shape) < 0.3
        mask[np.flatnonzero(keep >= 0), keep[keep >= 0]] = False
        z[mask] = NEG_INF
    structure = Matching()
    values = _matching_values(*shape)
    assert len(values) == len({tuple(v) for v in values})
    scores = np.array([structure.score(v, z) for v in values])
    got = structure.map(z)
    assert got.dtype == np.int64 and got.shape == (shape[0],)
    # Continuous random scores: the optimum is unique.
    assert got.tolist() == values[int(np.argmax(scores))].tolist()
    assert structure.score(got, z) == pytest.approx(scores.max(), abs=1e-12)


def test_matching_counts():
    assert len(_matching_values(4, 4)) == 24
    assert len(_matching_values(3, 5)) == 60
    assert len(_matching_values(5, 3)) == 60


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3)])
def test_matching_ties_are_deterministic_and_optimal(shape):
    structure = Matching()
    rng = np.random.default_rng(0)
    for z in (np.zeros(shape), rng.integers(0, 2, size=shape).astype(float)):
        first = structure.map(z)
        values = _matching_values(*shape)
        best = max(structure.score(v, z) for v in values)
        assert structure.score(first, z) == best
        assert any(np.array_equal(first, v) for v in values)
        for _ in range(3):
            assert np.array_equal(structure.map(z.copy()), first)
            parts = structure.encode(z)
            assert np.array_equal(structure.oracle(parts, parts.eta_u, parts.eta_v)[0], first)


def test_matching_oracle_and_indicators():
    structure = Matching()
    z = np.array([[1.0, 5.0], [4.0, 1.0], [0.0, 3.0]])
    parts = structure.encode(z)
    assert parts.eta_u.shape == (6,) and parts.eta_v.shape == (0,)
    value, m, n = structure.oracle(parts, parts.eta_u, parts.eta_v)
    assert value.tolist() == [1, 0, -1]
    assert m.reshape(3, 2).tolist() == [[0, 1], [1, 0], [0, 0]]
    assert n.shape == (0,)
    # The oracle uses the scores it is given, not the encoded ones.
    value, _, _ = structure.oracle(parts, -parts.eta_u, parts.eta_v)
    assert structure.score(value, -z) == max(
        structure.score(v, -z) for v in _matching_values(3, 2)
    )
    assert structure.decode(m, n, parts).shape == (3, 2)
    (d,) = structure.encode_backward(np.arange(6.0), n, parts)
    assert d.tolist() == [[0, 1], [2, 3], [4, 5]]


def test_matching_extreme_scores():
    rng = np.random.default_rng(1)
    z = rng.choice([-1e4, 1e4], size=(4, 4)) + rng.normal(size=(4, 4))
    structure = Matching()
    values = _matching_values(4, 4)
    scores = np.array([structure.score(v, z) for v in values])
    assert structure.map(z).tolist() == values[int(np.argmax(scores))].tolist()


def test_matching_forbidden_pairs():
    structure = Matching()
    # A row of the larger side may be entirely forbidden: it stays unmatched.
    z = np.array([[NEG_INF, NEG_INF], [1.0, 2.0], [3.0, 0.0]])
    assert structure.map(z).tolist() == [-1, 1, 0]
    with pytest.raises(ValueError, match="row 1"):
        structure.map([[1.0, 2.0, 3.0], [NEG_INF, NEG_INF, NEG_INF]])
    with pytest.raises(ValueError, match="column 0"):
        structure.map([[NEG_INF, 1.0], [NEG_INF, 2.0], [NEG_INF, 3.0]])
    # Hall's condition fails: rows 0 and 1 both need column 0.
    z = np.array([[1.0, NEG_INF, NEG_INF], [2.0, NEG_INF, NEG_INF], [1.0, 1.0, 1.0]])
    with pytest.raises(ValueError, match="no matching of all 3 rows"):
        structure.map(z)
    with pytest.raises(ValueError, match="forbidden"):
        structure.map(np.full((2, 2), NEG_INF))
    z = np.array([[0.0, NEG_INF], [NEG_INF, 0.0]])
    assert structure.map(z).tolist() == [0, 1]
    assert structure.score([0, 1], z) == 0.0
    assert structure.score([1, 0], z) == NEG_INF


def test_matching_has_no_marginals():
    structure = Matching()
    assert structure.has_marginals is False
    with pytest.raises(TypeError, match=r"#P-hard.*SparseMAP"):
        structure.marginals(np.zeros((3, 3)))
    with pytest.raises(TypeError, match="#P-hard"):
        structure.marginals_backward(np.zeros((3, 3)), np.zeros((3, 3)))


@pytest.mark.parametrize(
    "bad, match",
    [
        ([[1.0, np.nan]], "NaN"),
        ([[1.0, np.inf]], r"\+inf"),
        ([1.0, 2.0], "dimension"),
        (np.zeros((2, 2, 2)), "dimension"),
        (np.zeros((0, 3)), "at least one"),
        (np.zeros((3, 0)), "at least one"),
        ([["a", "b"]], "real numbers"),
    ],
)
def test_matching_bad_scores(bad, match):
    with pytest.raises(ValueError, match=match):
        Matching().map(bad)


@pytest.mark.parametrize(
    "value, match",
    [
        ([0, 1], "length 3"),
        ([0, 1, 1], "column twice"),
        ([0, 3, 1], "outside"),
        ([0, -2, 1], "outside"),
        ([0, -1, 1], "3 pairs"),
        ([0.0, 1.0, 2.0], "int array"),
    ],
)
def test_matching_bad_values(value, match):
    with pytest.raises(ValueError, match=match):
        Matching().score(value, np.zeros((3, 3)))


def test_matching_rectangular_value_must_cover_smaller_side():
    with pytest.raises(ValueError, match="2 pairs"):
        Matching().score([0, -1, -1], np.zeros((3, 2)))
    assert Matching().score([-1, 0, 1], np.ones((3, 2))) == 2.0


@given(
    st.tuples(st.integers(1, 4), st.integers(1, 4)).flatmap(
        lambda shape: arrays(
            np.float64,
            shape,
            elements=st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False),
        )
    )
)
def test_matching_properties(z):
    structure = Matching()
    values = _matching_values(*z.shape)
    best = max(structure.score(v, z) for v in values)
    got = structure.map(z)
    assert abs(structure.score(got, z) - best) <= 1e-9 * max(1.0, abs(best))
    m, _ = structure.indicators(got, structure.encode(z))
    m = m.reshape(z.shape)
    assert (m.sum(axis=0) <= 1).all() and (m.sum(axis=1) <= 1).all()
    assert m.sum() == min(z.shape)
