"""Sequence (linear chain): Viterbi, forward-backward and the marginals' backward pass.

Every result is checked against brute-force enumeration of the K**n label
sequences, and every gradient against central finite differences.
"""

import itertools
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sksparse_struct.structures import Parts, Sequence
from tests._helpers import central_difference_vjp

NEG = -np.inf
SEQ = Sequence()


# --- brute force -------------------------------------------------------------


def brute_force(unary, trans, start=None, end=None):
    """Enumerate every sequence: scores, features, MAP, marginals, log Z, Hessian.

    Sequences are enumerated in lexicographic order, so the first maximum is
    the lexicographically smallest optimal sequence. Features are the one-hot
    labels (n * K) followed by the transition counts (K * K).
    """
    unary = np.asarray(unary, dtype=float)
    trans = np.asarray(trans, dtype=float)
    n, K = unary.shape
    start = np.zeros(K) if start is None else np.asarray(start, dtype=float)
    end = np.zeros(K) if end is None else np.asarray(end, dtype=float)
    seqs, scores, feats = [], [], []
    for y in itertools.product(range(K), repeat=n):
        # Sum only the parts used: never 0 * -inf.
        s = start[y[0]] + end[y[-1]] + sum(unary[i, a] for i, a in enumerate(y))
        s += sum(trans[y[i - 1], y[i]] for i in range(1, n))
        phi = np.zeros(n * K + K * K)
        for i, a in enumerate(y):
            phi[i * K + a] = 1.0
        for i in range(1, n):
            phi[n * K + y[i - 1] * K + y[i]] += 1.0
        seqs.append(np.array(y))
        scores.append(s)
        feats.append(phi)
    scores = np.array(scores)
    feats = np.array(feats)
    best = int(np.argmax(scores))
    top = scores[best]
    out = {"seqs": seqs, "scores": scores, "map": seqs[best], "map_score": top}
    if top > NEG:
        p = np.exp(scores - top)
        log_z = top + np.log(p.sum())
        p /= p.sum()
        mean = p @ feats
        hess = (feats * p[:, None]).T @ feats - np.outer(mean, mean)
        out.update(
            log_z=log_z,
            mu=mean[: n * K].reshape(n, K),
            xi=mean[n * K :].reshape(K, K),
            hess=hess,
            probs=p,
        )
    return out


def random_instance(rng, n, K, scale=2.0, mask=0.0, start=False, end=False):
    """Random potentials; a fraction ``mask`` of the parts is -inf, yet one
    random sequence stays feasible."""
    unary = rng.normal(scale=scale, size=(n, K))
    trans = rng.normal(scale=scale, size=(K, K))
    s = rng.normal(scale=scale, size=K) if start else None
    e = rng.normal(scale=scale, size=K) if end else None
    if mask:
        unary[rng.random((n, K)) < mask] = NEG
        trans[rng.random((K, K)) < mask] = NEG
        if s is not None:
            s[rng.random(K) < mask] = NEG
        if e is not None:
            e[rng.random(K) < mask] = NEG
        y = rng.integers(K, size=n)
        unary[np.arange(n), y] = rng.normal(size=n)
        for i in range(1, n):
            if trans[y[i - 1], y[i]] == NEG:
                trans[y[i - 1], y[i]] = rng.normal()
        if s is not None and s[y[0]] == NEG:
            s[y[0]] = 0.0
        if e is not None and e[y[-1]] == NEG:
            e[y[-1]] = 0.0
    return unary, trans, s, e


def cases(n_seeds=2):
    """(seed, n, K, start?, end?, mask) over the brute-force sizes."""
    out = []
    for n in range(1, 6):
        for K in range(1, 4):
            for seed in range(n_seeds):
                flags = [(False, False), (True, True), (True, False), (False, True)]
                st_, en_ = flags[(n + K + seed) % 4]
                mask = 0.3 if seed % 2 else 0.0
                out.append((100 * n + 10 * K + seed, n, K, st_, en_, mask))
    return out


CASES = cases()


def flat_marginals(unary, trans, start, end):
    mu, xi, _ = SEQ.marginals(unary, trans, start, end)
    return np.concatenate([mu.ravel(), xi.ravel()])


# --- MAP -------------------------------------------------------------------------


@pytest.mark.parametrize("seed, n, K, with_start, with_end, mask", CASES)
def test_map_matches_brute_force(seed, n, K, with_start, with_end, mask):
    rng = np.random.default_rng(seed)
    unary, trans, s, e = random_instance(rng, n, K, mask=mask, start=with_start, end=with_end)
    ref = brute_force(unary, trans, s, e)
    labels = SEQ.map(unary, trans, s, e)
    assert labels.dtype == np.int64 and labels.shape == (n,)
    np.testing.assert_array_equal(labels, ref["map"])
    assert SEQ.score(labels, unary, trans, s, e) == pytest.approx(ref["map_score"], abs=1e-10)


def test_map_ties_go_to_the_lexicographically_smallest_sequence():
    # Small integer scores: exact ties between many sequences.
    n_tied = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        n, K = int(rng.integers(1, 6)), int(rng.integers(2, 4))
        unary = rng.integers(-1, 2, size=(n, K)).astype(float)
        trans = rng.integers(-1, 2, size=(K, K)).astype(float)
        s = rng.integers(-1, 2, size=K).astype(float) if seed % 2 else None
        e = rng.integers(-1, 2, size=K).astype(float) if seed % 3 else None
        ref = brute_force(unary, trans, s, e)
        n_tied += int(np.sum(ref["scores"] == ref["map_score"]) > 1)
        np.testing.assert_array_equal(SEQ.map(unary, trans, s, e), ref["map"])
        parts = SEQ.encode(unary, trans, s, e)
        np.testing.assert_array_equal(SEQ.oracle(parts, parts.eta_u, parts.eta_v)[0], ref["map"])
    assert n_tied >= 10  # the rule was exercised


def test_map_ties_examples():
    # All sequences tie: the all-zero sequence.
    np.testing.assert_array_equal(SEQ.map(np.zeros((4, 3)), np.zeros((3, 3))), [0, 0, 0, 0])
    # [1, 1] and [2, 0] both score 2. The lexicographically smaller [1, 1]
    # wins, although label 2 is the greedy choice at position 0 and label 0
    # the lowest last label (what backpointers from the lowest final label
    # would give).
    unary = np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 0.0]])
    trans = np.array([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, -5.0, -5.0]])
    ref = brute_force(unary, trans)
    np.testing.assert_array_equal(ref["map"], [1, 1])
    np.testing.assert_array_equal(SEQ.map(unary, trans), [1, 1])
    # A tie decided at the last position only.
    np.testing.assert_array_equal(
        SEQ.map([[0.0, 0.0], [0.0, 0.0]], [[0.0, 1.0], [1.0, 0.0]]), [0, 1]
    )


def test_map_respects_forbidden_parts():
    unary = np.zeros((3, 3))
    trans = np.full((3, 3), NEG)
    trans[0, 1] = trans[1, 2] = trans[2, 0] = -1.0  # only a cycle 0 -> 1 -> 2 -> 0
    np.testing.assert_array_equal(SEQ.map(unary, trans), [0, 1, 2])
    np.testing.assert_array_equal(SEQ.map(unary, trans, start=[NEG, 0.0, NEG]), [1, 2, 0])
    np.testing.assert_array_equal(SEQ.map(unary, trans, end=[NEG, NEG, 0.0]), [0, 1, 2])
    np.testing.assert_array_equal(SEQ.map(unary, trans, end=[0.0, NEG, NEG]), [1, 2, 0])


# --- marginals ------------------------------------------------------------------------


@pytest.mark.parametrize("seed, n, K, with_start, with_end, mask", CASES)
def test_marginals_match_brute_force(seed, n, K, with_start, with_end, mask):
    rng = np.random.default_rng(seed)
    unary, trans, s, e = random_instance(rng, n, K, mask=mask, start=with_start, end=with_end)
    ref = brute_force(unary, trans, s, e)
    mu, xi, log_z = SEQ.marginals(unary, trans, s, e)
    assert mu.shape == (n, K) and xi.shape == (K, K) and isinstance(log_z, float)
    np.testing.assert_allclose(mu, ref["mu"], rtol=0, atol=1e-10)
    np.testing.assert_allclose(xi, ref["xi"], rtol=0, atol=1e-10)
    assert log_z == pytest.approx(ref["log_z"], abs=1e-10)
    # Forbidden labels get exactly zero.
    assert np.all(mu[np.isneginf(SEQ.encode(unary, trans, s, e).eta_u.reshape(n, K))] == 0.0)
    assert np.all(xi[np.isneginf(trans)] == 0.0)


def test_marginals_n1_is_softmax():
    unary = np.array([[1.0, NEG, 0.0]])
    trans = np.full((3, 3), NEG)  # unused with one position
    mu, xi, log_z = SEQ.marginals(unary, trans, start=[0.0, 0.0, 1.0], end=[0.5, 0.0, 0.0])
    z = np.array([1.5, NEG, 1.0])
    p = np.exp(z - z.max())
    np.testing.assert_allclose(mu[0], p / p.sum(), atol=1e-15)
    np.testing.assert_array_equal(xi, np.zeros((3, 3)))
    assert log_z == pytest.approx(1.5 + np.log(1 + np.exp(-0.5)), abs=1e-14)
    np.testing.assert_array_equal(SEQ.map(unary, trans, [0.0, 0.0, 1.0], [0.5, 0.0, 0.0]), [0])


@pytest.mark.parametrize("seed", range(6))
def test_log_z_gradient_is_the_marginals(seed):
    rng = np.random.default_rng(seed)
    n, K = int(rng.integers(1, 6)), int(rng.integers(1, 4))
    unary, trans, s, e = random_instance(rng, n, K, start=True, end=True)
    mu, xi, _ = SEQ.marginals(unary, trans, s, e)
    sizes = [n * K, K * K, K, K]
    theta = np.concatenate([unary.ravel(), trans.ravel(), s, e])

    def log_z(flat):
        parts = np.split(flat, np.cumsum(sizes)[:-1])
        return np.array([SEQ.marginals(parts[0].reshape(n, K), parts[1].reshape(K, K), parts[2], parts[3])[2]])

    grad = central_difference_vjp(log_z, theta, np.ones(1), eps=1e-5)
    g_u, g_t, g_s, g_e = np.split(grad, np.cumsum(sizes)[:-1])
    np.testing.assert_allclose(g_u, mu.ravel(), atol=1e-8)
    np.testing.assert_allclose(g_t, xi.ravel(), atol=1e-8)
    np.testing.assert_allclose(g_s, mu[0], atol=1e-8)
    np.testing.assert_allclose(g_e, mu[-1], atol=1e-8)


# --- backward pass of the marginals ------------------------------------------------------


@pytest.mark.parametrize("seed, n, K, with_start, with_end, mask", CASES)
def test_marginals_backward_matches_brute_force_hessian(seed, n, K, with_start, with_end, mask):
    rng = np.random.default_rng(seed)
    unary, trans, s, e = random_instance(rng, n, K, mask=mask, start=with_start, end=with_end)
    ref = brute_force(unary, trans, s, e)
    d_mu = rng.normal(size=(n, K))
    d_xi = rng.normal(size=(K, K))
    d_u, d_t, d_s, d_e = SEQ.marginals_backward(unary, trans, s, e, d_mu, d_xi)
    expected = ref["hess"] @ np.concatenate([d_mu.ravel(), d_xi.ravel()])
    exp_u = expected[: n * K].reshape(n, K)
    np.testing.assert_allclose(d_u, exp_u, rtol=0, atol=1e-10)
    np.testing.assert_allclose(d_t, expected[n * K :].reshape(K, K), rtol=0, atol=1e-10)
    if with_start:
        np.testing.assert_allclose(d_s, exp_u[0], rtol=0, atol=1e-10)
    else:
        assert d_s is None
    if with_end:
        np.testing.assert_allclose(d_e, exp_u[-1], rtol=0, atol=1e-10)
    else:
        assert d_e is None


@pytest.mark.parametrize("seed", range(8))
def test_marginals_backward_matches_finite_differences(seed):
    rng = np.random.default_rng(1000 + seed)
    n, K = int(rng.integers(1, 6)), int(rng.integers(1, 4))
    # Masked parts stay -inf under a perturbation; their gradient must be 0.
    unary, trans, s, e = random_instance(rng, n, K, mask=0.2 if seed % 2 else 0.0, start=True, end=True)
    d_mu = rng.normal(size=(n, K))
    d_xi = rng.normal(size=(K, K))
    sizes = [n * K, K * K, K, K]
    theta = np.concatenate([unary.ravel(), trans.ravel(), s, e])

    def forward(flat):
        u, t, a, b = np.split(flat, np.cumsum(sizes)[:-1])
        return flat_marginals(u.reshape(n, K), t.reshape(K, K), a, b)

    fd = central_difference_vjp(forward, theta, np.concatenate([d_mu.ravel(), d_xi.ravel()]))
    got = SEQ.marginals_backward(unary, trans, s, e, d_mu, d_xi)
    for g, f in zip(got, np.split(fd, np.cumsum(sizes)[:-1])):
        np.testing.assert_allclose(g.ravel(), f, rtol=0, atol=1e-7)


def test_marginals_backward_without_transition_gradient():
    rng = np.random.default_rng(7)
    unary, trans, _, _ = random_instance(rng, 4, 3)
    d_mu = rng.normal(size=(4, 3))
    a = SEQ.marginals_backward(unary, trans, None, None, d_mu, None)
    b = SEQ.marginals_backward(unary, trans, None, None, d_mu, np.zeros((3, 3)))
    for x, y in zip(a[:2], b[:2]):
        np.testing.assert_array_equal(x, y)
    assert a[2] is None and a[3] is None


# --- extreme scores ----------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_extreme_scores_match_brute_force(seed):
    rng = np.random.default_rng(500 + seed)
    n, K = int(rng.integers(2, 6)), int(rng.integers(2, 4))
    # Scores of magnitude 1e4 with many exact ties in their large part, so
    # that the distribution is spread over sequences of very different
    # partial scores.
    unary = 1e4 * rng.integers(-1, 2, size=(n, K)) + rng.normal(size=(n, K))
    trans = 1e4 * rng.integers(-1, 2, size=(K, K)) + rng.normal(size=(K, K))
    s = 1e4 * rng.integers(-1, 2, size=K) + rng.normal(size=K)
    e = 1e4 * rng.integers(-1, 2, size=K) + rng.normal(size=K)
    ref = brute_force(unary, trans, s, e)
    mu, xi, log_z = SEQ.marginals(unary, trans, s, e)
    assert np.all(np.isfinite(mu)) and np.all(np.isfinite(xi))
    np.testing.assert_allclose(mu, ref["mu"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(xi, ref["xi"], rtol=0, atol=1e-9)
    assert log_z == pytest.approx(ref["log_z"], rel=1e-12)
    np.testing.assert_array_equal(SEQ.map(unary, trans, s, e), ref["map"])
    d_mu = rng.normal(size=(n, K))
    d_xi = rng.normal(size=(K, K))
    d_u, d_t, d_s, d_e = SEQ.marginals_backward(unary, trans, s, e, d_mu, d_xi)
    expected = ref["hess"] @ np.concatenate([d_mu.ravel(), d_xi.ravel()])
    np.testing.assert_allclose(d_u.ravel(), expected[: n * K], rtol=0, atol=1e-9)
    np.testing.assert_allclose(d_t.ravel(), expected[n * K :], rtol=0, atol=1e-9)
    np.testing.assert_allclose(d_s, d_u[0], rtol=0, atol=0)


def test_expensive_transition_that_every_sequence_must_take():
    # Label 1 is forbidden first; the cheap transitions all leave label 1, so
    # every sequence pays -1e4 and the marginals are decided by the small
    # differences (2 vs 0). A scaled forward-backward without the exact
    # log-space fallback would underflow here (forward and backward).
    unary = np.array([[0.0, NEG], [0.0, 1.0]])
    trans = np.array([[-1e4, -1e4 + 1.0], [0.0, 0.0]])
    ref = brute_force(unary, trans)
    mu, xi, log_z = SEQ.marginals(unary, trans)
    np.testing.assert_allclose(mu, ref["mu"], atol=1e-12)
    np.testing.assert_allclose(xi, ref["xi"], atol=1e-12)
    assert log_z == pytest.approx(ref["log_z"], rel=1e-14)
    assert 0.1 < mu[1, 0] < 0.9
    np.testing.assert_array_equal(SEQ.map(unary, trans), ref["map"])
    d_mu = np.array([[0.3, -1.0], [2.0, 0.5]])
    d_xi = np.array([[0.2, -0.4], [1.5, 0.1]])
    got = SEQ.marginals_backward(unary, trans, None, None, d_mu, d_xi)
    expected = ref["hess"] @ np.concatenate([d_mu.ravel(), d_xi.ravel()])
    np.testing.assert_allclose(np.concatenate([got[0].ravel(), got[1].ravel()]), expected, atol=1e-12)


def textbook_forward_backward(unary, trans):
    """Plain log-space forward-backward with scipy's logsumexp (an independent reference)."""
    from scipy.special import logsumexp

    n, K = unary.shape
    la = np.empty((n, K))
    lb = np.zeros((n, K))
    la[0] = unary[0]
    for i in range(1, n):
        la[i] = unary[i] + logsumexp(la[i - 1][:, None] + trans, axis=0)
    for i in range(n - 2, -1, -1):
        lb[i] = logsumexp(trans + (unary[i + 1] + lb[i + 1])[None, :], axis=1)
    log_z = logsumexp(la[-1])
    mu = np.exp(la + lb - log_z)
    xi = np.zeros((K, K))
    for i in range(1, n):
        xi += np.exp(la[i - 1][:, None] + trans + (unary[i] + lb[i])[None, :] - log_z)
    return mu, xi, log_z


@pytest.mark.parametrize("scale", [1.0, 1e4])
def test_longer_sequences_match_textbook_forward_backward(scale):
    rng = np.random.default_rng(11)
    n, K = 40, 6
    unary = scale * rng.integers(-1, 2, size=(n, K)) + rng.normal(size=(n, K))
    trans = scale * rng.integers(-1, 2, size=(K, K)) + rng.normal(size=(K, K))
    unary[rng.random((n, K)) < 0.2] = NEG
    unary[np.arange(n), rng.integers(K, size=n)] = 0.0
    trans[rng.random((K, K)) < 0.2] = NEG
    trans[np.diag_indices(K)] = 0.0
    mu, xi, log_z = SEQ.marginals(unary, trans)
    ref_mu, ref_xi, ref_log_z = textbook_forward_backward(unary, trans)
    # The textbook version loses about eps * |log Z| in every exponent.
    tol = 1e-12 * max(1.0, abs(ref_log_z))
    np.testing.assert_allclose(mu, ref_mu, rtol=0, atol=tol)
    np.testing.assert_allclose(xi, ref_xi, rtol=0, atol=tol * n)
    assert log_z == pytest.approx(ref_log_z, rel=1e-13)


def test_long_sequence_with_huge_scores_stays_finite():
    rng = np.random.default_rng(3)
    n, K = 300, 7
    unary = rng.choice([-1e4, 0.0, 1e4], size=(n, K)) + rng.normal(size=(n, K))
    trans = rng.choice([-1e4, 0.0, 1e4], size=(K, K)) + rng.normal(size=(K, K))
    mu, xi, log_z = SEQ.marginals(unary, trans)
    assert np.isfinite(log_z)
    np.testing.assert_allclose(mu.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert xi.sum() == pytest.approx(n - 1, abs=1e-9)
    labels = SEQ.map(unary, trans)
    # The MAP sequence's score is within a whisker of log Z from below.
    assert SEQ.score(labels, unary, trans) <= log_z + 1e-9 * abs(log_z)
    d_u, d_t, _, _ = SEQ.marginals_backward(unary, trans, None, None, rng.normal(size=(n, K)), rng.normal(size=(K, K)))
    assert np.all(np.isfinite(d_u)) and np.all(np.isfinite(d_t))
    np.testing.assert_allclose(d_u.sum(axis=1), 0.0, atol=1e-9)


# --- score, indicators and the Structure contract -------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_score_and_indicators_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, K = 3, 3
    unary, trans, s, e = random_instance(rng, n, K, mask=0.3, start=True, end=True)
    ref = brute_force(unary, trans, s, e)
    parts = SEQ.encode(unary, trans, s, e)
    for y, score in zip(ref["seqs"], ref["scores"]):
        got = SEQ.score(y, unary, trans, s, e)
        if score == NEG:
            assert got == NEG
        else:
            assert got == pytest.approx(score, abs=1e-12)
        m, cnt = SEQ.indicators(y, parts)
        assert m.shape == (n * K,) and cnt.shape == (K * K,)
        np.testing.assert_array_equal(m.reshape(n, K).sum(axis=1), 1.0)
        assert cnt.sum() == n - 1


def test_encode_layout_and_adjoint():
    rng = np.random.default_rng(0)
    n, K = 4, 3
    unary, trans = rng.normal(size=(n, K)), rng.normal(size=(K, K))
    s, e = rng.normal(size=K), rng.normal(size=K)
    parts = SEQ.encode(unary, trans, s, e)
    assert isinstance(parts, Parts)
    expected = unary.copy()
    expected[0] += s
    expected[-1] += e
    np.testing.assert_array_equal(parts.eta_u, expected.ravel())
    np.testing.assert_array_equal(parts.eta_v, trans.ravel())
    assert parts.context == (n, K, True, True)
    # encode is linear here: <encode(x), y> == <x, encode_backward(y)>.
    d_u, d_v = rng.normal(size=n * K), rng.normal(size=K * K)
    g = SEQ.encode_backward(d_u, d_v, parts)
    lhs = parts.eta_u @ d_u + parts.eta_v @ d_v
    rhs = (unary * g[0]).sum() + (trans * g[1]).sum() + s @ g[2] + e @ g[3]
    assert lhs == pytest.approx(rhs, rel=1e-12)
    # n == 1: start and end both go to the single row.
    p1 = SEQ.encode(unary[:1], trans, s, e)
    np.testing.assert_allclose(p1.eta_u, unary[0] + s + e)
    g1 = SEQ.encode_backward(np.arange(K, dtype=float), np.zeros(K * K), p1)
    np.testing.assert_array_equal(g1[2], np.arange(K))
    np.testing.assert_array_equal(g1[3], np.arange(K))
    assert SEQ.encode_backward(d_u, d_v, SEQ.encode(unary, trans))[2:] == (None, None)


def test_decode_and_its_adjoint():
    rng = np.random.default_rng(1)
    n, K = 3, 2
    parts = SEQ.encode(np.zeros((n, K)), np.zeros((K, K)))
    u, v = rng.normal(size=n * K), rng.normal(size=K * K)
    mu, xi = SEQ.decode(u, v, parts)
    assert mu.shape == (n, K) and xi.shape == (K, K)
    d_mu, d_xi = rng.normal(size=(n, K)), rng.normal(size=(K, K))
    du, dv = SEQ.decode_backward((d_mu, d_xi), parts)
    assert (mu * d_mu).sum() + (xi * d_xi).sum() == pytest.approx(u @ du + v @ dv)
    with pytest.raises(ValueError, match="pair"):
        SEQ.decode_backward(d_mu, parts)


@pytest.mark.parametrize("seed", range(5))
def test_oracle_on_modified_scores(seed):
    rng = np.random.default_rng(seed)
    n, K = 4, 3
    unary, trans, s, e = random_instance(rng, n, K, mask=0.2, start=True, end=True)
    parts = SEQ.encode(unary, trans, s, e)
    eta_u = parts.eta_u + rng.normal(size=n * K)
    eta_v = parts.eta_v + rng.normal(size=K * K)
    labels, m, cnt = SEQ.oracle(parts, eta_u, eta_v)
    ref = brute_force(eta_u.reshape(n, K), eta_v.reshape(K, K))
    np.testing.assert_array_equal(labels, ref["map"])
    m2, cnt2 = SEQ.indicators(labels, parts)
    np.testing.assert_array_equal(m, m2)
    np.testing.assert_array_equal(cnt, cnt2)
    # The parts' own scores were not modified.
    np.testing.assert_array_equal(parts.eta_u, SEQ.encode(unary, trans, s, e).eta_u)


def test_structure_object():
    assert Sequence.has_marginals
    assert repr(Sequence()) == "Sequence()"
    assert Sequence() == Sequence() and hash(Sequence()) == hash(Sequence())
    assert pickle.loads(pickle.dumps(SEQ)) == SEQ


def test_inputs_are_not_modified():
    rng = np.random.default_rng(2)
    unary, trans, s, e = random_instance(rng, 3, 3, mask=0.2, start=True, end=True)
    copies = [x.copy() for x in (unary, trans, s, e)]
    SEQ.map(unary, trans, s, e)
    SEQ.marginals(unary, trans, s, e)
    d_mu, d_xi = np.ones((3, 3)), np.ones((3, 3))
    SEQ.marginals_backward(unary, trans, s, e, d_mu, d_xi)
    for x, c in zip((unary, trans, s, e), copies):
        np.testing.assert_array_equal(x, c)
    np.testing.assert_array_equal(d_mu, 1.0)


def test_accepts_lists_ints_and_float32():
    unary = [[1, 0], [0, 2]]
    trans = np.zeros((2, 2), dtype=np.float32)
    np.testing.assert_array_equal(SEQ.map(unary, trans), [0, 1])
    mu, _, _ = SEQ.marginals(unary, trans)
    assert mu.dtype == np.float64


# --- properties --------------------------------------------------------------------------


@st.composite
def instances(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(1, 9))
    K = draw(st.integers(1, 5))
    scale = draw(st.sampled_from([0.1, 1.0, 10.0, 1e3]))
    mask = draw(st.sampled_from([0.0, 0.0, 0.3, 0.6]))
    ends = draw(st.booleans())
    rng = np.random.default_rng(seed)
    return (rng, n, K) + random_instance(rng, n, K, scale=scale, mask=mask, start=ends, end=ends)


@settings(deadline=None)
@given(instances())
def test_marginal_properties(inst):
    rng, n, K, unary, trans, s, e = inst
    mu, xi, log_z = SEQ.marginals(unary, trans, s, e)
    assert np.all(mu >= 0) and np.all(xi >= 0)
    np.testing.assert_allclose(mu.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert xi.sum() == pytest.approx(n - 1, abs=1e-10 * n)
    # Transitions out of / into a label add up to its unary marginals.
    np.testing.assert_allclose(xi.sum(axis=1), mu[:-1].sum(axis=0), atol=1e-10 * n)
    np.testing.assert_allclose(xi.sum(axis=0), mu[1:].sum(axis=0), atol=1e-10 * n)
    # MAP: feasible, and no random sequence scores higher; its score is a
    # lower bound of log Z.
    labels = SEQ.map(unary, trans, s, e)
    best = SEQ.score(labels, unary, trans, s, e)
    assert np.isfinite(best)
    assert best <= log_z + 1e-9 * max(1.0, abs(log_z))
    for _ in range(20):
        y = rng.integers(K, size=n)
        assert SEQ.score(y, unary, trans, s, e) <= best
    # The MAP sequence is at least as probable as any other, hence has
    # probability >= 1 / K**n, and so do its labels at every position.
    assert np.all(mu[np.arange(n), labels] >= float(K) ** -n * (1 - 1e-9))


@settings(deadline=None)
@given(instances())
def test_marginals_backward_properties(inst):
    rng, n, K, unary, trans, s, e = inst
    d1 = (rng.normal(size=(n, K)), rng.normal(size=(K, K)))
    d2 = (rng.normal(size=(n, K)), rng.normal(size=(K, K)))
    g1 = SEQ.marginals_backward(unary, trans, s, e, *d1)
    g2 = SEQ.marginals_backward(unary, trans, s, e, *d2)
    for g in (g1, g2):
        assert all(np.all(np.isfinite(x)) for x in g if x is not None)
        # Cov(1, delta) == 0: every row of d_unary sums to 0, and so do the
        # transitions (their total count is n - 1 whatever the sequence).
        np.testing.assert_allclose(g[0].sum(axis=1), 0.0, atol=1e-9 * n)
        assert g[1].sum() == pytest.approx(0.0, abs=1e-9 * n * n)
        # Forbidden parts have zero gradient.
        assert np.all(g[1][np.isneginf(trans)] == 0.0)
    # The Hessian is symmetric: <d2, H d1> == <d1, H d2>.
    a = (d2[0] * g1[0]).sum() + (d2[1] * g1[1]).sum()
    b = (d1[0] * g2[0]).sum() + (d1[1] * g2[1]).sum()
    assert a == pytest.approx(b, abs=1e-9 * n * (1 + abs(a)))
    # ... and positive semi-definite.
    assert (d1[0] * g1[0]).sum() + (d1[1] * g1[1]).sum() >= -1e-9 * n


# --- errors ------------------------------------------------------------------------------


def test_empty_sequence_is_an_error():
    with pytest.raises(ValueError, match="empty sequence"):
        SEQ.map(np.zeros((0, 3)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="empty sequence"):
        SEQ.marginals(np.zeros((0, 3)), np.zeros((3, 3)))


@pytest.mark.parametrize(
    "unary, trans, start, end, match",
    [
        (np.zeros(3), np.zeros((3, 3)), None, None, "unary must have 2"),
        (np.zeros((2, 3, 1)), np.zeros((3, 3)), None, None, "unary must have 2"),
        (np.zeros((2, 0)), np.zeros((0, 0)), None, None, "at least one label"),
        (np.zeros((2, 3)), np.zeros((3, 2)), None, None, r"transitions has shape \(3, 2\)"),
        (np.zeros((2, 3)), np.zeros(9), None, None, "transitions must have 2"),
        (np.zeros((2, 3)), np.zeros((3, 3)), np.zeros(2), None, r"start has shape \(2,\)"),
        (np.zeros((2, 3)), np.zeros((3, 3)), None, np.zeros((1, 3)), "end must have 1"),
        (np.array([[0.0, np.nan]]), np.zeros((2, 2)), None, None, r"unary contains NaN at index \(0, 1\)"),
        (np.array([[0.0, np.inf]]), np.zeros((2, 2)), None, None, r"unary contains \+inf"),
        (np.zeros((2, 2)), np.array([[0.0, np.nan], [0, 0]]), None, None, "transitions contains NaN"),
        (np.zeros((2, 2)), np.zeros((2, 2)), [np.inf, 0.0], None, r"start contains \+inf"),
        (np.zeros((2, 2)), np.zeros((2, 2)), None, [0.0, np.nan], "end contains NaN"),
        (np.array([["a", "b"]]), np.zeros((2, 2)), None, None, "unary must be an array of real"),
    ],
)
def test_bad_input(unary, trans, start, end, match):
    for call in (SEQ.map, SEQ.marginals):
        with pytest.raises(ValueError, match=match):
            call(unary, trans, start, end)


@pytest.mark.parametrize(
    "unary, trans, start, end, position",
    [
        (np.zeros((3, 2)), np.full((2, 2), NEG), None, None, 1),
        (np.array([[0.0, 0.0], [NEG, NEG], [0.0, 0.0]]), np.zeros((2, 2)), None, None, 1),
        (np.zeros((2, 2)), np.zeros((2, 2)), [NEG, NEG], None, 0),
        (np.zeros((1, 2)), np.zeros((2, 2)), [0.0, NEG], [NEG, 0.0], 0),
        (np.zeros((3, 2)), np.array([[NEG, 0.0], [NEG, NEG]]), None, None, 2),
        (np.zeros((3, 2)), np.zeros((2, 2)), None, [NEG, NEG], 2),
    ],
)
def test_infeasible_is_an_error(unary, trans, start, end, position):
    match = f"no label sequence has a finite score.*position {position}"
    with pytest.raises(ValueError, match=match):
        SEQ.map(unary, trans, start, end)
    with pytest.raises(ValueError, match=match):
        SEQ.marginals(unary, trans, start, end)
    n, K = np.shape(unary)
    with pytest.raises(ValueError, match=match):
        SEQ.marginals_backward(unary, trans, start, end, np.zeros((n, K)), np.zeros((K, K)))
    parts = SEQ.encode(unary, trans, start, end)
    with pytest.raises(ValueError, match=match):
        SEQ.oracle(parts, parts.eta_u, parts.eta_v)


def test_overflowing_scores_are_an_error():
    with pytest.raises(ValueError, match="unary has scores so large"):
        SEQ.map([[1e308, 1e308]], np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"transitions contains \+inf at index \(1, 1\)"):
        SEQ.map(np.zeros((1, 2)), [[NEG, 0.0], [0.0, np.inf]])
    # Every sequence's score overflows to -inf although no part is forbidden.
    with pytest.raises(ValueError, match="sums of the scores overflow"):
        SEQ.map([[-1e308], [-1e308]], [[-1e308]])
    with pytest.raises(ValueError, match="sums of the scores overflow"):
        SEQ.marginals([[-1e308], [-1e308]], [[-1e308]])


def test_object_arrays_are_rejected_naming_the_argument():
    # Object arrays, of numbers or not, never reach the compiled kernels.
    ok = {"unary": np.zeros((2, 2)), "transitions": np.zeros((2, 2)),
          "start": np.zeros(2), "end": np.zeros(2)}
    for name in ok:
        for bad in (np.array([[1, "a"], [0, 1]], dtype=object), np.zeros((2, 2), dtype=object)):
            args = dict(ok, **{name: bad if ok[name].ndim == 2 else bad[0]})
            pots = (args["unary"], args["transitions"], args["start"], args["end"])
            match = f"^{name} must be an array of real numbers, got dtype object"
            for call in (
                lambda: SEQ.encode(*pots),
                lambda: SEQ.map(*pots),
                lambda: SEQ.marginals(*pots),
                lambda: SEQ.score([0, 1], *pots),
                lambda: SEQ.marginals_backward(*pots, np.ones((2, 2)), None),
            ):
                with pytest.raises(ValueError, match=match):
                    call()
    d_obj = np.ones((2, 2), dtype=object)
    with pytest.raises(ValueError, match="^d_unary_marginals must be an array of real"):
        SEQ.marginals_backward(*ok.values(), d_obj, None)
    with pytest.raises(ValueError, match="^d_transition_marginals must be an array of real"):
        SEQ.marginals_backward(*ok.values(), np.ones((2, 2)), d_obj)
    # Object arrays of integers are labels like any other.
    parts = SEQ.encode(ok["unary"], ok["transitions"])
    labels = np.array([1, np.int64(0)], dtype=object)
    for got, want in zip(SEQ.indicators(labels, parts), SEQ.indicators([1, 0], parts)):
        np.testing.assert_array_equal(got, want)


def test_flat_methods_name_the_argument_of_strings():
    # oracle, decode and encode_backward raised NumPy's "could not convert
    # string to float: 'a'", naming neither the method nor the argument.
    parts = SEQ.encode(np.zeros((2, 2)), np.zeros((2, 2)))
    u, v = np.zeros(4), np.zeros(4)
    bad = np.array([0.0, "a", 1.0, 2.0], dtype=object)
    for method, call, names in (
        ("oracle", lambda a, b: SEQ.oracle(parts, a, b), ("eta_u", "eta_v")),
        ("decode", lambda a, b: SEQ.decode(a, b, parts), ("u", "v")),
        ("encode_backward", lambda a, b: SEQ.encode_backward(a, b, parts),
         ("d_eta_u", "d_eta_v")),
    ):
        for args, name in (((bad, v), names[0]), ((u, bad), names[1])):
            with pytest.raises(ValueError) as info:
                call(*args)
            assert str(info.value) == (
                f"Sequence.{method}: {name} must be an array of real numbers, got dtype object."
            )
    with pytest.raises(ValueError, match=r"^Sequence.decode: v must be a flat vector of 4 "
                                         r"entries, got shape \(2, 2\)\."):
        SEQ.decode(u, np.zeros((2, 2)), parts)
    # Float vectors are decoded as views, gradients as copies, as before.
    mu, xi = SEQ.decode(u, v, parts)
    assert np.shares_memory(mu, u) and np.shares_memory(xi, v)
    d_unary, d_trans, _, _ = SEQ.encode_backward(u, v, parts)
    assert not np.shares_memory(d_unary, u) and not np.shares_memory(d_trans, v)
    np.testing.assert_array_equal(SEQ.decode([1, 0, 0, 1], [0, 1, 1, 0], parts)[0], np.eye(2))


def test_bad_gradients():
    unary, trans = np.zeros((3, 2)), np.zeros((2, 2))
    with pytest.raises(ValueError, match=r"d_unary_marginals has shape \(2, 2\)"):
        SEQ.marginals_backward(unary, trans, None, None, np.zeros((2, 2)), None)
    with pytest.raises(ValueError, match=r"d_transition_marginals has shape \(3, 3\)"):
        SEQ.marginals_backward(unary, trans, None, None, np.zeros((3, 2)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="d_unary_marginals contains NaN"):
        SEQ.marginals_backward(unary, trans, None, None, np.full((3, 2), np.nan), None)
    with pytest.raises(ValueError, match="d_transition_marginals contains -inf"):
        SEQ.marginals_backward(unary, trans, None, None, np.zeros((3, 2)), np.full((2, 2), NEG))


@pytest.mark.parametrize(
    "value, match",
    [
        ([0, 1], r"array of 3 labels, got shape \(2,\)"),
        ([[0, 1, 1]], r"array of 3 labels"),
        ([0.0, 1.0, 1.0], "must be integers"),
        ([True, False, True], "must be integers"),
        ([0, 2, 1], "label 2 at position 1 is out of range"),
        ([0, -1, 1], "label -1 at position 1 is out of range"),
        # Object arrays and lists NumPy would turn into floats or strings:
        # an OverflowError, a wrapped-around label, or only a dtype before.
        (np.array([0, 2**70, 1], dtype=object), f"label {2**70} at position 1 is out of range"),
        (np.array([0, 2**64 - 1, 1], dtype=np.uint64), f"label {2**64 - 1} at position 1"),
        ([0, 2**63, 1], f"label {2**63} at position 1 is out of range"),
        ([0, "a", 1], r"must be integers, got 'a' \(str\) at position 1"),
        (np.array([0, 1.0, 1], dtype=object), r"got 1.0 \(float\) at position 1"),
        (np.array([0, None, 1], dtype=object), r"got None \(NoneType\) at position 1"),
    ],
)
def test_bad_structure_values(value, match):
    parts = SEQ.encode(np.zeros((3, 2)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match=match):
        SEQ.indicators(value, parts)
    with pytest.raises(ValueError, match=match):
        SEQ.score(value, np.zeros((3, 2)), np.zeros((2, 2)))
