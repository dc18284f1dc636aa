"""Projective dependency trees: Eisner MAP and inside-outside against brute force.

The reference enumerates every head assignment of n <= 5 words and keeps the
ones that are trees, have no crossing arcs (the arcs from the root, drawn at
position 0, included) and, when required, a single root word.
"""

import functools
import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sksparse_struct.structures._projective import (
    eisner_map,
    projective_marginals,
    projective_marginals_backward,
)

NEG_INF = -np.inf


# ----------------------------------------------------------- brute-force reference


def _is_tree(heads):
    """Every word reaches the root 0 by following heads (no cycle)."""
    n = len(heads) - 1
    for m in range(1, n + 1):
        seen = 0
        h = m
        while h != 0:
            h = heads[h]
            seen += 1
            if seen > n:
                return False
    return True


def _crossing(heads):
    """Whether two arcs cross, the root arcs included."""
    arcs = [tuple(sorted((heads[m], m))) for m in range(1, len(heads))]
    for (a, b), (c, d) in itertools.combinations(arcs, 2):
        if a < c < b < d or c < a < d < b:
            return True
    return False


def _contiguous_yields(heads):
    """Projectivity the other way round: every subtree covers a contiguous span."""
    n = len(heads) - 1
    for h in range(n + 1):
        yield_ = [m for m in range(n + 1) if _dominates(heads, h, m)]
        if max(yield_) - min(yield_) + 1 != len(yield_):
            return False
    return True


def _dominates(heads, h, m):
    while m != -1:
        if m == h:
            return True
        m = heads[m]
    return False


@functools.lru_cache(maxsize=None)
def _projective_trees(n, single_root):
    """All projective trees over n words, as an (n_trees, n + 1) int array."""
    trees = []
    for tail in itertools.product(range(n + 1), repeat=n):
        heads = (-1,) + tail
        if any(heads[m] == m for m in range(1, n + 1)):
            continue
        if single_root and sum(h == 0 for h in tail) != 1:
            continue
        if _is_tree(heads) and not _crossing(heads):
            trees.append(heads)
    return np.array(trees, dtype=np.int64).reshape(-1, n + 1)


def _tree_scores(scores, trees):
    n = trees.shape[1] - 1
    words = np.arange(1, n + 1)
    return scores[trees[:, 1:], words].sum(axis=1)


def _brute_marginals(scores, single_root):
    """Arc marginals and log Z by enumeration (None, -inf if there is no tree)."""
    n = scores.shape[0] - 1
    trees = _projective_trees(n, single_root)
    values = _tree_scores(scores, trees)
    finite = np.isfinite(values)
    if not finite.any():
        return None, -np.inf
    top = values[finite].max()
    w = np.where(finite, np.exp(np.where(finite, values, top) - top), 0.0)
    log_z = top + np.log(w.sum())
    p = w / w.sum()
    marginals = np.zeros_like(scores)
    words = np.broadcast_to(np.arange(1, n + 1), trees[:, 1:].shape)
    np.add.at(marginals, (trees[:, 1:], words), np.broadcast_to(p[:, None], words.shape))
    return marginals, log_z


def _derivation(heads):
    """Split points of the tree's unique Eisner derivation, in preorder.

    Eisner's chart (see ``_projective_fast``) derives each projective tree in
    exactly one way; the documented tie rule (every chart item keeps its
    smallest best split) picks, among the best trees, the one whose preorder
    split sequence is lexicographically smallest (the encoding is
    prefix-free, so the comparison decides item by item, top down).
    """
    n = len(heads) - 1
    deps = [[m for m in range(1, n + 1) if heads[m] == h] for h in range(n + 1)]
    lo = [min(m for m in range(n + 1) if _dominates(heads, h, m)) for h in range(n + 1)]
    hi = [max(m for m in range(n + 1) if _dominates(heads, h, m)) for h in range(n + 1)]
    seq = []

    def cr(s, t):
        if s < t:
            u = max(d for d in deps[s] if s < d <= t)
            seq.append(u)
            ir(s, u)
            cr(u, t)

    def cl(s, t):
        if s < t:
            u = min(d for d in deps[t] if s <= d < t)
            seq.append(u)
            cl(s, u)
            il(u, t)

    def ir(s, t):  # the arc s -> t
        u = lo[t] - 1
        seq.append(u)
        cr(s, u)
        cl(u + 1, t)

    def il(s, t):  # the arc t -> s
        u = hi[s]
        seq.append(u)
        cr(s, u)
        cl(u + 1, t)

    cr(0, n)
    return tuple(seq)


def _is_projective_tree(heads, single_root):
    heads = [int(h) for h in heads]
    n = len(heads) - 1
    return (
        heads[0] == -1
        and all(0 <= heads[m] <= n and heads[m] != m for m in range(1, n + 1))
        and _is_tree(heads)
        and not _crossing(heads)
        and (not single_root or sum(h == 0 for h in heads[1:]) == 1)
    )


def _random_scores(rng, n, scale=1.0, p_forbid=0.0):
    scores = rng.normal(size=(n + 1, n + 1)) * scale
    if p_forbid:
        scores[rng.random(size=scores.shape) < p_forbid] = NEG_INF
    return scores


# ------------------------------------------------------------------ the reference


@pytest.mark.parametrize(
    "n, n_multi, n_single",
    # Projective trees over n words: OEIS A001764 (1, 3, 12, 55, 273); with a
    # single root word: OEIS A006013 (1, 2, 7, 30, 143).
    [(1, 1, 1), (2, 3, 2), (3, 12, 7), (4, 55, 30), (5, 273, 143)],
)
def test_reference_counts(n, n_multi, n_single):
    multi = _projective_trees(n, False)
    single = _projective_trees(n, True)
    assert len(multi) == n_multi
    assert len(single) == n_single
    # No crossing arcs (root arcs included) <=> contiguous subtrees.
    for heads in multi:
        assert _contiguous_yields(list(heads))


# ----------------------------------------------------------------------------- MAP


@pytest.mark.parametrize("single_root", [False, True])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("seed", range(4))
def test_map_brute_force(n, single_root, seed):
    rng = np.random.default_rng(seed + 10 * n)
    scores = _random_scores(rng, n, scale=2.0, p_forbid=0.15 if seed % 2 else 0.0)
    trees = _projective_trees(n, single_root)
    values = _tree_scores(scores, trees)
    best = values.max()
    if not np.isfinite(best):
        with pytest.raises(ValueError, match="projective"):
            eisner_map(scores, single_root)
        return
    heads = eisner_map(scores, single_root)
    assert heads.dtype == np.int64
    assert heads.shape == (n + 1,)
    assert _is_projective_tree(heads, single_root)
    got = _tree_scores(scores, heads[None, :])[0]
    assert abs(got - best) <= 1e-9
    # Continuous scores: the argmax is unique.
    assert np.array_equal(heads, trees[np.argmax(values)])


@pytest.mark.parametrize("single_root", [False, True])
@pytest.mark.parametrize("n", [2, 3, 4, 5])
@pytest.mark.parametrize("seed", range(6))
def test_map_ties_follow_documented_rule(n, single_root, seed):
    # Small integer scores: many exact ties, and exact float sums.
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 2 + seed % 2, size=(n + 1, n + 1)).astype(float)
    trees = _projective_trees(n, single_root)
    values = _tree_scores(scores, trees)
    best_trees = [tuple(t) for t in trees[values == values.max()]]
    expected = min(best_trees, key=_derivation)
    heads = eisner_map(scores, single_root)
    assert tuple(heads) == expected
    # Deterministic: same answer on a fresh copy of the scores.
    assert np.array_equal(eisner_map(scores.copy(), single_root), heads)


@pytest.mark.parametrize("single_root", [False, True])
def test_map_all_equal_scores_is_the_right_branching_chain(single_root):
    for n in (1, 4, 30):
        heads = eisner_map(np.zeros((n + 1, n + 1)), single_root)
        assert heads.tolist() == [-1] + list(range(n))


@pytest.mark.parametrize("single_root", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_map_extreme_scores(single_root, seed):
    n = 5
    rng = np.random.default_rng(seed)
    scores = rng.choice([-1e4, 1e4], size=(n + 1, n + 1)) + rng.normal(size=(n + 1, n + 1))
    trees = _projective_trees(n, single_root)
    values = _tree_scores(scores, trees)
    heads = eisner_map(scores, single_root)
    assert np.array_equal(heads, trees[np.argmax(values)])


def test_map_n1():
    assert eisner_map(np.array([[0.0, -3.0], [7.0, 0.0]]), True).tolist() == [-1, 0]
    assert eisner_map(np.array([[0.0, -3.0], [7.0, 0.0]]), False).tolist() == [-1, 0]
    with pytest.raises(ValueError, match="no projective dependency tree"):
        eisner_map(np.array([[0.0, NEG_INF], [0.0, 0.0]]), False)


def test_map_ignores_column_0_and_diagonal():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(5, 5))
    other = scores.copy()
    other[:, 0] = NEG_INF
    other[np.diag_indices(5)] = 1e9
    for single_root in (False, True):
        assert np.array_equal(eisner_map(scores, single_root), eisner_map(other, single_root))


@pytest.mark.parametrize("single_root", [False, True])
def test_map_forbidden_everything(single_root):
    scores = np.full((4, 4), NEG_INF)
    with pytest.raises(ValueError, match="finite score"):
        eisner_map(scores, single_root)


def test_map_only_a_non_projective_tree_is_finite():
    # The only finite tree 0 -> 2 -> 3 -> 1 has the arc 3 -> 1 crossing 0 -> 2.
    scores = np.full((4, 4), NEG_INF)
    scores[0, 2] = scores[2, 3] = scores[3, 1] = 0.0
    for single_root in (False, True):
        with pytest.raises(ValueError, match="projective"):
            eisner_map(scores, single_root)


def test_map_single_root_forbids_the_only_finite_tree():
    # Both words can only hang from the root: a tree for single_root=False only.
    scores = np.full((3, 3), NEG_INF)
    scores[0, 1] = scores[0, 2] = 0.0
    assert eisner_map(scores, False).tolist() == [-1, 0, 0]
    with pytest.raises(ValueError, match="single root word"):
        eisner_map(scores, True)


def test_map_single_root_changes_the_answer():
    # Two words both prefer the root; single_root keeps the better root arc.
    scores = np.full((3, 3), -5.0)
    scores[0, 1] = 3.0
    scores[0, 2] = 2.0
    assert eisner_map(scores, False).tolist() == [-1, 0, 0]
    assert eisner_map(scores, True).tolist() == [-1, 0, 1]


@given(
    n=st.integers(1, 12),
    single_root=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
    kind=st.sampled_from(["normal", "integer", "forbidden"]),
)
def test_map_property_projective_tree(n, single_root, seed, kind):
    rng = np.random.default_rng(seed)
    if kind == "integer":
        scores = rng.integers(-2, 3, size=(n + 1, n + 1)).astype(float)
    else:
        scores = _random_scores(rng, n, p_forbid=0.3 if kind == "forbidden" else 0.0)
        # Keep a tree available: the right-branching chain.
        scores[np.arange(n), np.arange(1, n + 1)] = rng.normal(size=n)
    heads = eisner_map(scores, single_root)
    assert _is_projective_tree(heads, single_root)
    assert np.isfinite(_tree_scores(scores, heads[None, :])[0])
    # No local change of one head gives a better projective tree.
    best = _tree_scores(scores, heads[None, :])[0]
    for m in range(1, n + 1):
        for h in range(n + 1):
            other = heads.copy()
            other[m] = h
            if _is_projective_tree(other, single_root):
                assert _tree_scores(scores, other[None, :])[0] <= best + 1e-9


# ----------------------------------------------------------------------- marginals


@pytest.mark.parametrize("single_root", [False, True])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("seed", range(4))
def test_marginals_brute_force(n, single_root, seed):
    rng = np.random.default_rng(seed + 100 * n)
    scores = _random_scores(rng, n, scale=3.0, p_forbid=0.15 if seed % 2 else 0.0)
    ref, ref_log_z = _brute_marginals(scores, single_root)
    if ref is None:
        with pytest.raises(ValueError, match="projective"):
            projective_marginals(scores, single_root)
        return
    marginals, log_z = projective_marginals(scores, single_root)
    assert isinstance(log_z, float)
    assert marginals.shape == (n + 1, n + 1)
    np.testing.assert_allclose(marginals, ref, rtol=0, atol=1e-8)
    assert abs(log_z - ref_log_z) <= 1e-8
    # Forbidden arcs, column 0 and the diagonal get exactly 0.
    assert np.all(marginals[np.isneginf(scores)] == 0.0)
    assert np.all(marginals[:, 0] == 0.0)
    assert np.all(np.diag(marginals) == 0.0)


@pytest.mark.parametrize("single_root", [False, True])
def test_marginals_of_zero_scores_count_trees(single_root):
    for n in range(1, 6):
        _, log_z = projective_marginals(np.zeros((n + 1, n + 1)), single_root)
        assert abs(log_z - np.log(len(_projective_trees(n, single_root)))) <= 1e-12


@pytest.mark.parametrize("single_root", [False, True])
def test_grad_log_z_is_marginals(single_root):
    n = 4
    rng = np.random.default_rng(3)
    scores = _random_scores(rng, n)
    marginals, _ = projective_marginals(scores, single_root)
    eps = 1e-5
    grad = np.zeros_like(scores)
    for h in range(n + 1):
        for m in range(1, n + 1):
            if h == m:
                continue
            step = np.zeros_like(scores)
            step[h, m] = eps
            grad[h, m] = (
                projective_marginals(scores + step, single_root)[1]
                - projective_marginals(scores - step, single_root)[1]
            ) / (2 * eps)
    np.testing.assert_allclose(grad, marginals, rtol=0, atol=1e-8)


@pytest.mark.parametrize("single_root", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_marginals_extreme_scores(single_root, seed):
    n = 5
    rng = np.random.default_rng(seed)
    scores = rng.choice([-1e4, 1e4], size=(n + 1, n + 1)) + rng.normal(size=(n + 1, n + 1))
    scores[rng.random(size=scores.shape) < 0.1] = NEG_INF
    ref, ref_log_z = _brute_marginals(scores, single_root)
    if ref is None:
        with pytest.raises(ValueError):
            projective_marginals(scores, single_root)
        return
    marginals, log_z = projective_marginals(scores, single_root)
    np.testing.assert_allclose(marginals, ref, rtol=0, atol=1e-8)
    assert abs(log_z - ref_log_z) <= 1e-8 * max(1.0, abs(ref_log_z))


def test_marginals_extreme_scale_large_n():
    # Scores of magnitude 1e4 on 60 words: no overflow, a distribution per word.
    n = 60
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(n + 1, n + 1)) * 1e4
    for single_root in (False, True):
        marginals, log_z = projective_marginals(scores, single_root)
        assert np.isfinite(log_z)
        assert np.all((marginals >= 0) & (marginals <= 1 + 1e-12))
        np.testing.assert_allclose(marginals[:, 1:].sum(axis=0), 1.0, atol=1e-10)
        # At this scale the distribution is a point mass on the MAP tree.
        heads = eisner_map(scores, single_root)
        assert np.array_equal(marginals.argmax(axis=0)[1:], heads[1:])


def test_marginals_n1():
    marginals, log_z = projective_marginals(np.array([[0.0, -3.0], [7.0, 0.0]]), True)
    assert marginals.tolist() == [[0.0, 1.0], [0.0, 0.0]]
    assert log_z == -3.0
    with pytest.raises(ValueError, match="no projective dependency tree"):
        projective_marginals(np.array([[0.0, NEG_INF], [0.0, 0.0]]), False)


def test_marginals_ignore_column_0_and_diagonal():
    rng = np.random.default_rng(1)
    scores = rng.normal(size=(5, 5))
    other = scores.copy()
    other[:, 0] = NEG_INF
    other[np.diag_indices(5)] = 1e9
    for single_root in (False, True):
        a, log_a = projective_marginals(scores, single_root)
        b, log_b = projective_marginals(other, single_root)
        assert np.array_equal(a, b) and log_a == log_b


@pytest.mark.parametrize("single_root", [False, True])
def test_marginals_no_tree(single_root):
    with pytest.raises(ValueError, match="finite score"):
        projective_marginals(np.full((4, 4), NEG_INF), single_root)
    # Only a crossing tree is finite.
    scores = np.full((4, 4), NEG_INF)
    scores[0, 2] = scores[2, 3] = scores[3, 1] = 0.0
    with pytest.raises(ValueError, match="projective"):
        projective_marginals(scores, single_root)


def test_marginals_single_root_only_tree_left():
    scores = np.full((3, 3), NEG_INF)
    scores[0, 1] = scores[0, 2] = 0.5
    marginals, log_z = projective_marginals(scores, False)
    assert marginals.tolist() == [[0.0, 1.0, 1.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    assert log_z == 1.0
    with pytest.raises(ValueError, match="single root word"):
        projective_marginals(scores, True)


@given(
    n=st.integers(1, 15),
    single_root=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
    scale=st.sampled_from([0.1, 1.0, 30.0, 1e4]),
)
def test_marginals_property_distribution(n, single_root, seed, scale):
    rng = np.random.default_rng(seed)
    scores = _random_scores(rng, n, scale=scale, p_forbid=0.2)
    scores[np.arange(n), np.arange(1, n + 1)] = rng.normal(size=n)  # keep the chain
    marginals, log_z = projective_marginals(scores, single_root)
    heads = eisner_map(scores, single_root)
    assert np.isfinite(log_z)
    # log Z is at least the best tree's score, at most it plus log(#trees).
    best = _tree_scores(scores, heads[None, :])[0]
    assert best - 1e-9 * max(1.0, abs(best)) <= log_z <= best + 3 * n
    assert np.all((marginals >= 0) & (marginals <= 1 + 1e-12))
    np.testing.assert_allclose(marginals[:, 1:].sum(axis=0), 1.0, atol=1e-10)
    assert np.all(marginals[np.isneginf(scores)] == 0.0)
    if single_root:
        assert abs(marginals[0].sum() - 1.0) <= 1e-10


# ------------------------------------------------------------- backward of marginals


def _fd_backward(scores, single_root, d_marginals, eps=1e-5):
    """Central finite differences of ``d_marginals . marginals(scores)``."""
    n = scores.shape[0] - 1
    grad = np.zeros_like(scores)
    for h in range(n + 1):
        for m in range(1, n + 1):
            if h == m or not np.isfinite(scores[h, m]):
                continue
            step = np.zeros_like(scores)
            step[h, m] = eps
            plus = projective_marginals(scores + step, single_root)[0]
            minus = projective_marginals(scores - step, single_root)[0]
            grad[h, m] = np.sum(d_marginals * (plus - minus)) / (2 * eps)
    return grad


def _used(d, n):
    """The entries the backward pass reads: off the diagonal, columns >= 1."""
    d = d.copy()
    d[:, 0] = 0.0
    d[np.diag_indices(n + 1)] = 0.0
    return d


@pytest.mark.parametrize("single_root", [False, True])
@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("seed", range(3))
def test_backward_finite_differences(n, single_root, seed):
    rng = np.random.default_rng(seed + 1000 * n)
    scores = _random_scores(rng, n, scale=1.5, p_forbid=0.15 if seed == 2 else 0.0)
    scores[np.arange(n), np.arange(1, n + 1)] = rng.normal(size=n)  # keep a tree
    d_marginals = rng.normal(size=scores.shape)  # column 0 / diagonal: ignored
    got = projective_marginals_backward(scores, single_root, d_marginals)
    assert got.shape == scores.shape
    expected = _fd_backward(scores, single_root, _used(d_marginals, n))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-7)
    assert np.all(got[:, 0] == 0.0) and np.all(np.diag(got) == 0.0)
    assert np.all(got[np.isneginf(scores)] == 0.0)


@pytest.mark.parametrize("single_root", [False, True])
def test_backward_brute_force_covariance(single_root):
    # d marginals / d scores = covariance of the arc indicators under p(y).
    n = 4
    rng = np.random.default_rng(7)
    scores = _random_scores(rng, n)
    trees = _projective_trees(n, single_root)
    values = _tree_scores(scores, trees)
    p = np.exp(values - values.max())
    p /= p.sum()
    z = np.zeros((len(trees), n + 1, n + 1))
    for i, heads in enumerate(trees):
        z[i, heads[1:], np.arange(1, n + 1)] = 1.0
    z = z.reshape(len(trees), -1)
    mean = p @ z
    cov = (z * p[:, None]).T @ z - np.outer(mean, mean)
    d_marginals = _used(rng.normal(size=scores.shape), n)
    got = projective_marginals_backward(scores, single_root, d_marginals)
    np.testing.assert_allclose(got.ravel(), cov @ d_marginals.ravel(), rtol=0, atol=1e-10)


@pytest.mark.parametrize("single_root", [False, True])
def test_backward_invariant_to_huge_column_shifts(single_root):
    # Every tree has one head per word: adding c[m] (here +-1e4) to column m
    # changes no marginal, hence no derivative either.
    n = 12
    rng = np.random.default_rng(5)
    scores = _random_scores(rng, n)
    shift = rng.choice([-1e4, 1e4], size=n + 1) + rng.normal(size=n + 1)
    d_marginals = rng.normal(size=scores.shape)
    base_marg, _ = projective_marginals(scores, single_root)
    shift_marg, _ = projective_marginals(scores + shift[None, :], single_root)
    np.testing.assert_allclose(shift_marg, base_marg, rtol=0, atol=1e-10)
    base = projective_marginals_backward(scores, single_root, d_marginals)
    shifted = projective_marginals_backward(scores + shift[None, :], single_root, d_marginals)
    np.testing.assert_allclose(shifted, base, rtol=0, atol=1e-9)


@pytest.mark.parametrize("single_root", [False, True])
def test_backward_extreme_scores(single_root):
    # Scores of magnitude 1e4: finite, and right where it is not ~0 (near ties).
    n = 40
    rng = np.random.default_rng(2)
    scores = rng.normal(size=(n + 1, n + 1)) * 1e4
    scores[rng.random(size=scores.shape) < 0.2] = NEG_INF
    scores[np.arange(n), np.arange(1, n + 1)] = 0.0
    d_marginals = _used(rng.normal(size=scores.shape), n)
    got = projective_marginals_backward(scores, single_root, d_marginals)
    assert np.all(np.isfinite(got))
    assert np.all(got[np.isneginf(scores)] == 0.0)
    check = list(zip(*np.unravel_index(np.argsort(-np.abs(got).ravel())[:3], got.shape)))
    check += [(int(h), int(m)) for h, m in rng.integers(0, n + 1, size=(3, 2)) if m > 0 and h != m]
    eps = 1e-4
    for h, m in check:
        if not np.isfinite(scores[h, m]):
            continue
        step = np.zeros_like(scores)
        step[h, m] = eps
        plus = projective_marginals(scores + step, single_root)[0]
        minus = projective_marginals(scores - step, single_root)[0]
        fd = np.sum(d_marginals * (plus - minus)) / (2 * eps)
        assert abs(got[h, m] - fd) <= 1e-6


def test_backward_n1_and_no_tree():
    got = projective_marginals_backward(np.array([[0.0, 2.0], [1.0, 0.0]]), True, np.ones((2, 2)))
    assert got.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    with pytest.raises(ValueError, match="no projective dependency tree"):
        projective_marginals_backward(np.full((3, 3), NEG_INF), False, np.ones((3, 3)))


@given(
    n=st.integers(1, 12),
    single_root=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
    scale=st.sampled_from([0.1, 1.0, 10.0]),
)
def test_backward_property_symmetric_hessian(n, single_root, seed, scale):
    rng = np.random.default_rng(seed)
    scores = _random_scores(rng, n, scale=scale, p_forbid=0.2)
    scores[np.arange(n), np.arange(1, n + 1)] = rng.normal(size=n)
    a = _used(rng.normal(size=scores.shape), n)
    b = _used(rng.normal(size=scores.shape), n)
    back_a = projective_marginals_backward(scores, single_root, a)
    back_b = projective_marginals_backward(scores, single_root, b)
    # <a, H b> = <b, H a>, and H is linear in its argument.
    assert abs(np.sum(a * back_b) - np.sum(b * back_a)) <= 1e-9 * (1 + np.abs(a).sum() * np.abs(b).sum())
    both = projective_marginals_backward(scores, single_root, a + 2 * b)
    np.testing.assert_allclose(both, back_a + 2 * back_b, rtol=0, atol=1e-9 * (1 + np.abs(a).sum()))
    # Each column of the marginals sums to 1: a column-constant gradient has no effect.
    const = np.broadcast_to(rng.normal(size=n + 1), scores.shape).copy()
    assert np.abs(projective_marginals_backward(scores, single_root, const)).max() <= 1e-9 * (1 + n)


# ------------------------------------------------- through DependencyTree(projective=True)


def _dependency_tree():
    """The public class, once it exists (it lives in another module)."""
    structures = pytest.importorskip("sksparse_struct.structures")
    if not hasattr(structures, "DependencyTree"):
        pytest.skip("sksparse_struct.structures.DependencyTree is not available yet")
    return structures.DependencyTree


@pytest.mark.parametrize("single_root", [False, True])
@pytest.mark.parametrize("n", [1, 3, 5])
def test_dependency_tree_projective_brute_force(n, single_root):
    tree = _dependency_tree()(projective=True, single_root=single_root)
    rng = np.random.default_rng(n)
    scores = _random_scores(rng, n, scale=2.0, p_forbid=0.1)
    scores[np.arange(n), np.arange(1, n + 1)] = rng.normal(size=n)
    trees = _projective_trees(n, single_root)
    values = _tree_scores(scores, trees)
    heads = tree.map(scores)
    assert np.array_equal(heads, trees[np.argmax(values)])
    assert abs(tree.score(heads, scores) - values.max()) <= 1e-9
    ref, ref_log_z = _brute_marginals(scores, single_root)
    marginals, log_z = tree.marginals(scores)
    np.testing.assert_allclose(marginals, ref, rtol=0, atol=1e-8)
    assert abs(log_z - ref_log_z) <= 1e-8
    d = rng.normal(size=scores.shape)
    (d_scores,) = tree.marginals_backward(scores, d)
    np.testing.assert_allclose(d_scores, _fd_backward(scores, single_root, _used(d, n)), atol=1e-7)
    # The flat contract: the oracle on the encoded scores gives the same tree.
    parts = tree.encode(scores)
    value, m, _ = tree.oracle(parts, parts.eta_u, parts.eta_v)
    assert np.array_equal(value, heads)
    assert m.sum() == n


def test_dependency_tree_projective_differs_from_non_projective():
    # The best tree overall is 0 -> 2 -> 3 -> 1 (crossing 0 -> 2).
    DependencyTree = _dependency_tree()
    scores = np.full((4, 4), -5.0)
    scores[0, 2] = scores[2, 3] = scores[3, 1] = 3.0
    assert DependencyTree(projective=False).map(scores).tolist() == [-1, 3, 0, 2]
    heads = DependencyTree(projective=True).map(scores)
    assert _is_projective_tree(heads, True)
    trees = _projective_trees(3, True)
    assert np.array_equal(heads, trees[np.argmax(_tree_scores(scores, trees))])


def test_dependency_tree_projective_ignored_entries_and_bad_input():
    tree = _dependency_tree()(projective=True)
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(5, 5))
    noisy = scores.copy()
    noisy[:, 0] = np.nan  # column 0 and the diagonal are never read
    noisy[np.diag_indices(5)] = np.inf
    assert np.array_equal(tree.map(noisy), tree.map(scores))
    np.testing.assert_array_equal(tree.marginals(noisy)[0], tree.marginals(scores)[0])
    bad = scores.copy()
    bad[1, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        tree.map(bad)
    with pytest.raises(ValueError):
        tree.marginals(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="projective"):
        tree.marginals(np.full((4, 4), NEG_INF))


def test_dependency_tree_projective_sparsemap_support_is_projective():
    from sksparse_struct.inference import sparsemap

    DependencyTree = _dependency_tree()
    rng = np.random.default_rng(4)
    scores = rng.normal(size=(7, 7))
    for single_root in (False, True):
        result = sparsemap(DependencyTree(projective=True, single_root=single_root), scores)
        assert result.support
        for heads, prob in result.support:
            assert prob > 0
            assert _is_projective_tree(heads, single_root)
        np.testing.assert_allclose(result.marginals[:, 1:].sum(axis=0), 1.0, atol=1e-9)


# ------------------------------------------------------------------ the exp kernel


def test_exp_kernel_accuracy():
    from sksparse_struct.structures._projective_fast import exp_nonpositive

    rng = np.random.default_rng(0)
    x = np.concatenate([
        np.linspace(-708.0, 0.0, 20001),
        -rng.random(5000) * 3,
        -rng.random(5000) * 1e-6,
        [0.0, -0.5 * np.log(2), -np.log(2), 1e-14],
    ])
    out = x.copy()
    exp_nonpositive(out, np.empty(x.shape[0], dtype=np.int64), x.shape[0])
    rel = np.abs(out - np.exp(x)) / np.exp(x)
    assert rel.max() <= 4 * np.finfo(float).eps
    below = np.array([-708.5, -745.0, -800.0, -1e4, NEG_INF])
    exp_nonpositive(below, np.empty(5, dtype=np.int64), 5)
    assert np.all(below == 0.0)
