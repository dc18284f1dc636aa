"""Non-projective DependencyTree: MAP, matrix-tree marginals and their backward pass.

References are independent of the library: every head assignment of n <= 5
words is enumerated and the trees kept (brute force), and gradients are
checked by central finite differences.
"""

import functools
import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import logsumexp

from sksparse_struct.structures import DependencyTree
from sksparse_struct.structures._tree import check_heads

from .._helpers import central_difference_vjp


@functools.lru_cache(maxsize=None)
def _tree_table(n, single_root):
    table = np.array(_enumerate_trees(n, single_root))
    table.setflags(write=False)
    return table


def enumerate_trees(n, single_root):
    """Every dependency tree over n words (heads vectors), by brute force."""
    return list(_tree_table(n, single_root))


def _enumerate_trees(n, single_root):
    trees = []
    for hs in itertools.product(range(n + 1), repeat=n):
        heads = (-1,) + hs
        if any(heads[m] == m for m in range(1, n + 1)):
            continue
        if single_root and sum(h == 0 for h in hs) != 1:
            continue
        ok = True
        for m in range(1, n + 1):
            seen, v = set(), m
            while v != 0:
                if v in seen:
                    ok = False
                    break
                seen.add(v)
                v = heads[v]
            if not ok:
                break
        if ok:
            trees.append(np.array(heads))
    return trees


def tree_score(scores, heads):
    return sum(scores[heads[m], m] for m in range(1, len(heads)))


def brute_force(scores, single_root):
    n = scores.shape[0] - 1
    table = _tree_table(n, single_root)
    words = np.arange(1, n + 1)
    values = scores[table[:, 1:], words].sum(axis=1)
    finite = np.isfinite(values)
    log_z = logsumexp(values[finite]) if finite.any() else -np.inf
    mu = np.zeros_like(scores)
    if finite.any():
        p = np.exp(values[finite] - log_z)
        np.add.at(mu, (table[finite, 1:], np.broadcast_to(words, (finite.sum(), n))), p[:, None])
    return list(table), values, mu, log_z


def random_scores(rng, n, scale=1.0, p_forbid=0.0, integer=False):
    s = rng.normal(size=(n + 1, n + 1)) * scale
    if integer:
        s = np.round(s)
    if p_forbid:
        s[rng.random(s.shape) < p_forbid] = -np.inf
    return s


def test_number_of_trees_matches_cayley():
    # (n + 1)^(n - 1) multi-rooted trees and n^(n - 1) single-rooted ones;
    # the thesis counts 1296 = 6^4 trees for five words.
    for n in range(1, 6):
        assert len(enumerate_trees(n, False)) == (n + 1) ** (n - 1)
        assert len(enumerate_trees(n, True)) == n ** (n - 1)


# -- MAP ---------------------------------------------------------------------


@pytest.mark.parametrize("single_root", [True, False])
def test_map_matches_brute_force(single_root):
    rng = np.random.default_rng(0)
    tree = DependencyTree(single_root=single_root)
    for trial in range(150):
        n = 1 + trial % 5
        scores = random_scores(
            rng, n, scale=[1.0, 3.0, 10.0][trial % 3], integer=trial % 4 == 0
        )
        trees, values, _, _ = brute_force(scores, single_root)
        heads = tree.map(scores)
        assert heads.dtype == np.int64 and heads[0] == -1
        assert (np.asarray(trees) == heads).all(axis=1).any()
        assert tree_score(scores, heads) == pytest.approx(values.max(), abs=1e-9)


@pytest.mark.parametrize("single_root", [True, False])
def test_map_with_forbidden_arcs_matches_brute_force(single_root):
    rng = np.random.default_rng(1)
    tree = DependencyTree(single_root=single_root)
    checked = 0
    for trial in range(300):
        n = 1 + trial % 5
        scores = random_scores(rng, n, p_forbid=0.45, integer=trial % 2 == 0)
        trees, values, _, _ = brute_force(scores, single_root)
        if not np.isfinite(values).any():
            with pytest.raises(ValueError, match="no dependency tree"):
                tree.map(scores)
            continue
        heads = tree.map(scores)
        assert np.isfinite(tree_score(scores, heads))
        assert tree_score(scores, heads) == pytest.approx(values.max(), abs=1e-9)
        checked += 1
    assert checked > 100


@pytest.mark.parametrize("single_root", [True, False])
def test_map_ties_are_deterministic(single_root):
    rng = np.random.default_rng(2)
    tree = DependencyTree(single_root=single_root)
    for n in range(1, 6):
        for scores in (np.zeros((n + 1, n + 1)), rng.integers(0, 2, (n + 1, n + 1)) * 1.0):
            trees, values, _, _ = brute_force(scores, single_root)
            first = tree.map(scores)
            assert tree_score(scores, first) == values.max()
            # Same input, same tree, also across a copy with other memory layout.
            assert (tree.map(scores) == first).all()
            assert (tree.map(np.asfortranarray(scores)) == first).all()


def test_map_ties_documented_rule():
    # All arcs equal: the greedy step prefers the lowest head index, so every
    # word attaches to the root when several root words are allowed.
    scores = np.zeros((5, 5))
    assert DependencyTree(single_root=False).map(scores).tolist() == [-1, 0, 0, 0, 0]
    heads = DependencyTree(single_root=True).map(scores)
    check_heads(heads, 4, single_root=True)


def test_single_root_map_beats_cheap_root_swap():
    # Greedy graph: root -> 1 -> 2 and root -> 3. Dropping the cheaper root
    # arc (root -> 1) creates a cycle 1 <-> 2; the best single-rooted tree
    # keeps root -> 1 and re-attaches 3 instead.
    s = np.full((4, 4), -np.inf)
    s[0, 1], s[0, 2], s[0, 3] = -6.44, -14.09, 8.1
    s[1, 2], s[1, 3] = 8.65, -2.37
    s[2, 1], s[2, 3] = -7.13, -1.13
    s[3, 1], s[3, 2] = -26.06, -9.25
    assert DependencyTree(single_root=True).map(s).tolist() == [-1, 0, 1, 2]
    assert DependencyTree(single_root=False).map(s).tolist() == [-1, 0, 1, 0]


@given(
    n=st.integers(1, 14),
    seed=st.integers(0, 2**32 - 1),
    single_root=st.booleans(),
    scale=st.sampled_from([0.1, 1.0, 100.0, 1e4]),
    p_forbid=st.sampled_from([0.0, 0.3]),
)
def test_map_is_always_a_valid_tree(n, seed, single_root, scale, p_forbid):
    rng = np.random.default_rng(seed)
    scores = random_scores(rng, n, scale=scale)
    if p_forbid:
        mask = rng.random(scores.shape) < p_forbid
        chain = np.arange(n)
        mask[chain, chain + 1] = False  # keep the chain 0 -> 1 -> ... -> n feasible
        scores[mask] = -np.inf
    tree = DependencyTree(single_root=single_root)
    heads = tree.map(scores)
    check_heads(heads, n, single_root)
    # At least as good as two simple trees (when they are allowed).
    value = tree_score(scores, heads)
    chain_heads = np.arange(-1, n)
    assert value >= tree_score(scores, chain_heads) - 1e-9 * max(1.0, scale)
    if not single_root:
        assert value >= tree_score(scores, np.r_[-1, np.zeros(n, int)]) - 1e-9 * scale


def max_arborescence(weights, root=0):
    """Best head of every node but ``root``: the textbook recursive Chu-Liu-Edmonds.

    Plain Python on a dict ``(head, modifier) -> weight``, independent of
    the library's compiled implementation: take each node's best incoming
    edge; if they form a cycle, contract it into a new node (edges entering
    it lose the weight of the cycle edge they would replace), solve the
    smaller graph, and expand.
    """
    best = {}
    for (u, v), w in weights.items():
        if v != root and (v not in best or w > weights[best[v], v]):
            best[v] = u
    cycle = None
    for start in best:
        path, v = [], start
        while v in best and v not in path:
            path.append(v)
            v = best[v]
        if v in path:
            cycle = path[path.index(v):]
            break
    if cycle is None:
        return best
    new = max(max(edge) for edge in weights) + 1
    contracted, origin = {}, {}
    for (u, v), w in weights.items():
        if u in cycle and v in cycle:
            continue
        if v in cycle:
            edge, w = (u, new), w - weights[best[v], v]
        else:
            edge = (new if u in cycle else u, v)
        if edge not in contracted or w > contracted[edge]:
            contracted[edge], origin[edge] = w, (u, v)
    heads = {}
    for v, u in max_arborescence(contracted, root).items():
        u, v = origin[u, v]
        heads[v] = u
    for v in cycle:
        heads.setdefault(v, best[v])
    return heads


def test_max_arborescence_reference_against_brute_force():
    # The reference itself, on every instance small enough to enumerate.
    rng = np.random.default_rng(5)
    for trial in range(40):
        n = 1 + trial % 5
        scores = random_scores(rng, n)
        heads = max_arborescence({(h, m): scores[h, m] for h in range(n + 1)
                                  for m in range(1, n + 1) if h != m})
        _, values, _, _ = brute_force(scores, single_root=False)
        assert tree_score(scores, [-1] + [heads[m] for m in range(1, n + 1)]) == \
            pytest.approx(values.max(), abs=1e-12)


def test_map_large_sentence_against_an_independent_reference():
    # n = 40, several roots allowed: beyond brute force, against the plain
    # Python Chu-Liu-Edmonds above (the scores are continuous: one best tree).
    rng = np.random.default_rng(3)
    n = 40
    scores = rng.normal(size=(n + 1, n + 1))
    reference = max_arborescence({(h, m): scores[h, m] for h in range(n + 1)
                                  for m in range(1, n + 1) if h != m})
    heads = DependencyTree(single_root=False).map(scores)
    assert heads[1:].tolist() == [reference[m] for m in range(1, n + 1)]
    assert tree_score(scores, heads) == pytest.approx(
        tree_score(scores, [-1] + [reference[m] for m in range(1, n + 1)]), abs=1e-9)


# -- marginals ---------------------------------------------------------------


@pytest.mark.parametrize("single_root", [True, False])
def test_marginals_match_brute_force(single_root):
    rng = np.random.default_rng(4)
    tree = DependencyTree(single_root=single_root)
    for trial in range(60):
        n = 1 + trial % 5
        scores = random_scores(rng, n, scale=[0.5, 1.0, 3.0][trial % 3])
        if trial % 2:
            scores[rng.random(scores.shape) < 0.2] = -np.inf
        _, values, mu_ref, log_z_ref = brute_force(scores, single_root)
        if not np.isfinite(values).any():
            with pytest.raises(ValueError, match="no dependency tree"):
                tree.marginals(scores)
            continue
        mu, log_z = tree.marginals(scores)
        assert isinstance(log_z, float)
        np.testing.assert_allclose(mu, mu_ref, atol=1e-8, rtol=0)
        assert log_z == pytest.approx(log_z_ref, abs=1e-8)
        # Layout: zeros on column 0, the diagonal and the forbidden arcs.
        assert (mu[:, 0] == 0).all() and (np.diag(mu) == 0).all()
        assert (mu[np.isneginf(scores) & ~np.eye(n + 1, dtype=bool)][1:] == 0).all()


@given(
    n=st.integers(1, 14),
    seed=st.integers(0, 2**32 - 1),
    single_root=st.booleans(),
    scale=st.sampled_from([0.1, 1.0, 3.0]),
)
def test_marginals_properties(n, seed, single_root, scale):
    rng = np.random.default_rng(seed)
    scores = random_scores(rng, n, scale=scale)
    tree = DependencyTree(single_root=single_root)
    mu, log_z = tree.marginals(scores)
    assert (mu >= -1e-12).all() and (mu <= 1 + 1e-12).all()
    np.testing.assert_allclose(mu[:, 1:].sum(axis=0), 1.0, atol=1e-9)
    if single_root:
        assert mu[0].sum() == pytest.approx(1.0, abs=1e-9)
    # The best tree is one of (n + 1)^(n - 1) (or n^(n - 1)) trees.
    best = tree_score(scores, tree.map(scores))
    n_trees = (n if single_root else n + 1) ** (n - 1)
    assert best - 1e-9 <= log_z <= best + np.log(n_trees) + 1e-9


@pytest.mark.parametrize("single_root", [True, False])
def test_gradient_of_log_z_is_the_marginals(single_root):
    rng = np.random.default_rng(5)
    tree = DependencyTree(single_root=single_root)
    n = 4
    scores = rng.normal(size=(n + 1, n + 1))
    mu, _ = tree.marginals(scores)
    eps = 1e-6
    for h in range(n + 1):
        for m in range(1, n + 1):
            if h == m:
                continue
            plus, minus = scores.copy(), scores.copy()
            plus[h, m] += eps
            minus[h, m] -= eps
            fd = (tree.marginals(plus)[1] - tree.marginals(minus)[1]) / (2 * eps)
            assert fd == pytest.approx(mu[h, m], abs=1e-7)


@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("n", [1, 2, 4])
def test_marginals_backward_matches_finite_differences(single_root, n):
    rng = np.random.default_rng(6 + n)
    tree = DependencyTree(single_root=single_root)
    scores = rng.normal(size=(n + 1, n + 1))
    d_mu = rng.normal(size=(n + 1, n + 1))
    (d_scores,) = tree.marginals_backward(scores, d_mu)
    arcs = [(h, m) for m in range(1, n + 1) for h in range(n + 1) if h != m]
    hs, ms = np.array(arcs).T

    def forward(flat):
        s = scores.copy()
        s[hs, ms] = flat
        return tree.marginals(s)[0].ravel()

    # Entries of d_mu off the arcs are ignored by the backward pass.
    d_masked = np.zeros_like(d_mu)
    d_masked[hs, ms] = d_mu[hs, ms]
    fd = central_difference_vjp(forward, scores[hs, ms], d_masked.ravel())
    np.testing.assert_allclose(d_scores[hs, ms], fd, atol=1e-6)
    assert (d_scores[:, 0] == 0).all() and (np.diag(d_scores) == 0).all()


def test_marginals_backward_with_forbidden_arcs():
    rng = np.random.default_rng(7)
    n = 4
    tree = DependencyTree()
    scores = rng.normal(size=(n + 1, n + 1))
    scores[2, 3] = scores[0, 4] = scores[1, 2] = -np.inf
    d_mu = rng.normal(size=scores.shape)
    (d_scores,) = tree.marginals_backward(scores, d_mu)
    assert np.isfinite(d_scores).all()
    assert d_scores[2, 3] == d_scores[0, 4] == d_scores[1, 2] == 0.0
    arcs = [(h, m) for m in range(1, n + 1) for h in range(n + 1)
            if h != m and np.isfinite(scores[h, m])]
    hs, ms = np.array(arcs).T

    def forward(flat):
        s = scores.copy()
        s[hs, ms] = flat
        return tree.marginals(s)[0].ravel()

    fd = central_difference_vjp(forward, scores[hs, ms], d_mu.ravel())
    np.testing.assert_allclose(d_scores[hs, ms], fd, atol=1e-6)


def test_marginals_backward_of_column_sums_is_zero():
    # Each column of the marginals sums to 1 whatever the scores: the
    # gradient of that sum vanishes.
    rng = np.random.default_rng(8)
    scores = rng.normal(size=(6, 6))
    d_mu = np.zeros((6, 6))
    d_mu[:, 3] = 1.0
    for single_root in (True, False):
        (d,) = DependencyTree(single_root=single_root).marginals_backward(scores, d_mu)
        np.testing.assert_allclose(d, 0.0, atol=1e-12)


# -- extreme inputs ----------------------------------------------------------


@pytest.mark.parametrize("single_root", [True, False])
def test_extreme_scores_dominant_tree(single_root):
    # Scores +-1e4 with each word's best arc forming a tree: the distribution
    # is a point mass; marginals are exact 0/1, log Z is the tree's score.
    rng = np.random.default_rng(9)
    for n in (1, 3, 5, 30):
        heads = np.array([-1, 0] + [int(rng.integers(1, m)) for m in range(2, n + 1)])
        scores = rng.uniform(-1e4, -5e3, size=(n + 1, n + 1))
        scores[heads[1:], np.arange(1, n + 1)] = rng.uniform(5e3, 1e4, size=n)
        tree = DependencyTree(single_root=single_root)
        with np.errstate(all="raise"):
            assert (tree.map(scores) == heads).all()
            mu, log_z = tree.marginals(scores)
        expected = np.zeros_like(scores)
        expected[heads[1:], np.arange(1, n + 1)] = 1.0
        np.testing.assert_allclose(mu, expected, atol=1e-12)
        assert log_z == pytest.approx(tree_score(scores, heads), rel=1e-14)
        if n <= 5:
            _, _, mu_ref, log_z_ref = brute_force(scores, single_root)
            np.testing.assert_allclose(mu, mu_ref, atol=1e-8)
            assert log_z == pytest.approx(log_z_ref, abs=1e-8)


def test_extreme_scores_map_matches_brute_force():
    rng = np.random.default_rng(10)
    for trial in range(40):
        n = 1 + trial % 5
        scores = rng.uniform(-1e4, 1e4, size=(n + 1, n + 1))
        for single_root in (True, False):
            _, values, _, _ = brute_force(scores, single_root)
            heads = DependencyTree(single_root=single_root).map(scores)
            assert tree_score(scores, heads) == pytest.approx(values.max(), abs=1e-7)


@pytest.mark.parametrize("single_root", [True, False])
def test_extreme_scores_marginals_exact(single_root):
    # With +-1e4 scores the greedy arcs often form cycles far ahead of every
    # tree: the Laplacian is singular in float64 and the log-space,
    # subtraction-free path must take over, exactly.
    rng = np.random.default_rng(11)
    tree = DependencyTree(single_root=single_root)
    for trial in range(40):
        n = 1 + trial % 5
        scores = rng.uniform(-1e4, 1e4, size=(n + 1, n + 1))
        _, _, mu_ref, log_z_ref = brute_force(scores, single_root)
        with np.errstate(over="raise"):
            mu, log_z = tree.marginals(scores)
        np.testing.assert_allclose(mu, mu_ref, atol=1e-8)
        assert log_z == pytest.approx(log_z_ref, rel=1e-13, abs=1e-8)


def test_extreme_two_way_tie_between_cycles():
    # Two words with strong arcs both ways and weak root arcs: the two chains
    # tie (score 0), the flat tree (-2e4) is negligible.
    scores = np.full((3, 3), 1e4)
    scores[0] = -1e4
    mu, log_z = DependencyTree(single_root=False).marginals(scores)
    np.testing.assert_allclose(mu, [[0, 0.5, 0.5], [0, 0, 0.5], [0, 0.5, 0]], atol=1e-15)
    # log Z = log 2 comes out of shifts of size 1e4: a few ulps of 2e4.
    assert log_z == pytest.approx(np.log(2.0), abs=1e-11)
    # The backward pass resolves it too (through the subtraction-free
    # fallback): the arc 1 -> 2 comes with root -> 1, the arc 2 -> 1 with
    # root -> 2, each chain with probability 1/2, so the gradient of
    # mu[1, 2] (the covariances with its indicator) is +-1/4 on all four.
    d_mu = np.zeros((3, 3))
    d_mu[1, 2] = 1.0
    (d,) = DependencyTree(single_root=False).marginals_backward(scores, d_mu)
    np.testing.assert_allclose(d, [[0, 0.25, -0.25], [0, 0, 0.25], [0, -0.25, 0]], atol=1e-11)


def test_n_equals_one():
    scores = np.array([[0.0, 2.5], [7.0, 0.0]])
    for single_root in (True, False):
        tree = DependencyTree(single_root=single_root)
        assert tree.map(scores).tolist() == [-1, 0]
        mu, log_z = tree.marginals(scores)
        assert mu.tolist() == [[0.0, 1.0], [0.0, 0.0]]
        assert log_z == 2.5
        (d,) = tree.marginals_backward(scores, np.ones((2, 2)))
        assert d.tolist() == [[0.0, 0.0], [0.0, 0.0]]


# -- forbidden arcs and infeasibility ----------------------------------------


def test_forbidden_arcs_force_the_tree():
    n = 4
    scores = np.full((n + 1, n + 1), -np.inf)
    for m in range(1, n + 1):
        scores[m - 1, m] = 0.3 * m  # only the chain 0 -> 1 -> 2 -> 3 -> 4
    for single_root in (True, False):
        tree = DependencyTree(single_root=single_root)
        assert tree.map(scores).tolist() == [-1, 0, 1, 2, 3]
        mu, log_z = tree.marginals(scores)
        assert log_z == pytest.approx(0.3 * 10)
        np.testing.assert_allclose(mu, np.isfinite(scores) * 1.0)


def test_no_tree_raises():
    scores = np.zeros((4, 4))
    scores[:, 2] = -np.inf  # word 2 can have no head
    for single_root in (True, False):
        tree = DependencyTree(single_root=single_root)
        for method in (tree.map, tree.marginals):
            with pytest.raises(ValueError, match="no dependency tree"):
                method(scores)
        with pytest.raises(ValueError, match="no dependency tree"):
            tree.marginals_backward(scores, np.zeros((4, 4)))


def test_no_single_rooted_tree_raises():
    # Words can only attach to the root: fine with several root words,
    # impossible with one.
    scores = np.full((3, 3), -np.inf)
    scores[0, 1] = scores[0, 2] = 0.0
    assert DependencyTree(single_root=False).map(scores).tolist() == [-1, 0, 0]
    with pytest.raises(ValueError, match="single word attached to the root"):
        DependencyTree(single_root=True).map(scores)
    with pytest.raises(ValueError, match="single word attached to the root"):
        DependencyTree(single_root=True).marginals(scores)


# -- the Structure contract --------------------------------------------------


@pytest.mark.parametrize("single_root", [True, False])
def test_contract_encode_oracle_indicators_decode(single_root):
    rng = np.random.default_rng(12)
    tree = DependencyTree(single_root=single_root)
    n = 4
    scores = rng.normal(size=(n + 1, n + 1))
    parts = tree.encode(scores)
    assert parts.eta_u.shape == (n * n,) and parts.eta_v.shape == (0,)
    # Modifier-major order: the first n parts are the arcs into word 1.
    assert parts.eta_u[:n].tolist() == [scores[0, 1], scores[2, 1], scores[3, 1], scores[4, 1]]
    heads, m, v = tree.oracle(parts, parts.eta_u, parts.eta_v)
    assert (heads == tree.map(scores)).all() and v.shape == (0,)
    m2, _ = tree.indicators(heads, parts)
    np.testing.assert_array_equal(m, m2)
    assert m.sum() == n
    assert tree.score(heads, scores) == pytest.approx(tree_score(scores, heads))
    np.testing.assert_array_equal(tree.decode(m, v, parts)[heads[1:], np.arange(1, n + 1)], 1.0)
    assert tree.decode(m, v, parts).sum() == n
    # decode of the flat marginals is the matrix of marginals.
    mu, _ = tree.marginals(scores)
    np.testing.assert_array_equal(tree.decode(tree.encode(mu).eta_u, v, parts), mu)
    # encode_backward is the adjoint of encode (a gather): <encode(X), u> == <X, back(u)>.
    x = rng.normal(size=(n + 1, n + 1))
    u = rng.normal(size=n * n)
    (back,) = tree.encode_backward(u, np.zeros(0), parts)
    assert tree.encode(x).eta_u @ u == pytest.approx((x * back).sum())
    d_u, d_v = tree.decode_backward(x, parts)
    assert d_u @ u == pytest.approx((tree.decode(u, v, parts) * x).sum())
    # The oracle works on modified flat scores (as SparseMAP calls it).
    eta = rng.normal(size=n * n)
    h2, _, _ = tree.oracle(parts, eta, np.zeros(0))
    assert (h2 == tree.map(tree.decode(eta, v, parts) + np.where(np.eye(n + 1), 0, 0))).all()


def test_oracle_with_forbidden_parts():
    tree = DependencyTree()
    scores = np.zeros((4, 4))
    scores[0, 2] = scores[0, 3] = -np.inf
    parts = tree.encode(scores)
    heads, m, _ = tree.oracle(parts, parts.eta_u, parts.eta_v)
    assert heads[1] == 0
    assert np.isfinite(tree.score(heads, scores))


def test_structure_options_repr_equality_pickle():
    import pickle

    tree = DependencyTree(single_root=False)
    assert repr(tree) == "DependencyTree(projective=False, single_root=False)"
    assert tree == DependencyTree(single_root=False) != DependencyTree()
    assert hash(tree) == hash(DependencyTree(single_root=False))
    assert pickle.loads(pickle.dumps(tree)) == tree
    assert DependencyTree.has_marginals


# -- bad input ---------------------------------------------------------------


@pytest.mark.parametrize(
    "scores, match",
    [
        (np.zeros((3, 4)), "square"),
        (np.zeros((1, 1)), "at least"),
        (np.zeros((0, 0)), "at least"),
        (np.zeros((2, 2, 2)), "square"),
        (np.zeros(4), "square"),
        (np.array([["a", "b"], ["c", "d"]]), "real numbers"),
        (np.array([[0.0, np.nan], [0.0, 0.0]]), r"NaN at the arc 0 -> 1"),
        (np.array([[0.0, 0.0, 0.0], [0.0, 0.0, np.inf], [0.0, 0.0, 0.0]]), r"\+inf at the arc 1 -> 2"),
    ],
)
def test_bad_scores(scores, match):
    tree = DependencyTree()
    for method in (tree.map, tree.marginals, tree.encode):
        with pytest.raises(ValueError, match=match):
            method(scores)


def test_ignored_entries_may_hold_anything():
    scores = np.array([[np.nan, 1.0, 0.0], [np.inf, np.nan, 2.0], [np.nan, 0.5, -np.inf]])
    tree = DependencyTree()
    clean = np.where(np.isfinite(scores), scores, 0.0)
    assert (tree.map(scores) == tree.map(clean)).all()
    np.testing.assert_allclose(tree.marginals(scores)[0], tree.marginals(clean)[0])
    np.testing.assert_allclose(
        tree.marginals_backward(scores, np.ones((3, 3)))[0],
        tree.marginals_backward(clean, np.ones((3, 3)))[0],
    )
    assert np.isnan(scores[0, 0]) and np.isinf(scores[1, 0])  # input untouched


def test_bad_backward_input():
    tree = DependencyTree()
    with pytest.raises(ValueError, match="does not match"):
        tree.marginals_backward(np.zeros((3, 3)), np.zeros((2, 2)))
    d = np.zeros((3, 3))
    d[1, 2] = np.nan
    with pytest.raises(ValueError, match="finite"):
        tree.marginals_backward(np.zeros((3, 3)), d)


@pytest.mark.parametrize(
    "heads, match",
    [
        ([-1, 0, 1], "length"),
        ([0, 0, 1, 2], r"heads\[0\] must be -1"),
        ([-1, 0, 2, 2], "word 2 is its own head"),
        ([-1, 0, 5, 1], "word 2 has head 5"),
        ([-1, 0, 3, 2], "cycle through word"),
        ([-1, 0, 0, 1], r"words \[1, 2\]"),
        ([-1, 0, 1.5, 1], "integer"),
    ],
)
def test_bad_heads(heads, match):
    tree = DependencyTree(single_root=True)
    parts = tree.encode(np.zeros((4, 4)))
    with pytest.raises(ValueError, match=match):
        tree.indicators(heads, parts)


def test_multi_root_heads_are_valid_without_single_root():
    tree = DependencyTree(single_root=False)
    parts = tree.encode(np.zeros((4, 4)))
    m, _ = tree.indicators([-1, 0, 0, 1], parts)
    assert m.sum() == 3


def test_bad_options():
    with pytest.raises(ValueError, match="single_root"):
        DependencyTree(single_root="yes").map(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="projective"):
        DependencyTree(projective=None).map(np.zeros((3, 3)))


# -- backward pass in the unstable regime ------------------------------------


def brute_force_covariance_vjp(scores, single_root, d_mu):
    """``Cov(arc indicators) @ d_mu`` over all trees: the Hessian of log Z."""
    n = scores.shape[0] - 1
    table = _tree_table(n, single_root)
    words = np.arange(1, n + 1)
    values = scores[table[:, 1:], words].sum(axis=1)
    keep = np.isfinite(values)
    p = np.exp(values[keep] - logsumexp(values[keep]))
    x = np.zeros((keep.sum(), n + 1, n + 1))
    x[np.arange(keep.sum())[:, None], table[keep, 1:], words] = 1.0
    x = x.reshape(keep.sum(), -1)
    # Centered form: no cancellation between E[x x^T] and mu mu^T.
    xc = x - p @ x
    proj = xc @ d_mu.ravel()
    return ((p * proj) @ xc).reshape(n + 1, n + 1)


@pytest.fixture
def fallback_calls(monkeypatch):
    """Records the calls of the subtraction-free backward kernels ("lin"/"log")."""
    from sksparse_struct.structures import _nonprojective_backward_fast as mod

    calls = []

    def counting(name, tag):
        kernel = getattr(mod, name)

        def counted(*args):
            calls.append(tag)
            return kernel(*args)

        monkeypatch.setattr(mod, name, counted)

    counting("matrix_tree_marginals_rooted_jvp", "lin")
    counting("matrix_tree_marginals_rooted_log_jvp", "log")
    return calls


def _arcs_d(rng, scores):
    d_mu = rng.normal(size=scores.shape)
    d_mu[:, 0] = 0.0
    np.fill_diagonal(d_mu, 0.0)
    return d_mu


@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("scale", [20.0, 50.0])
def test_backward_unstable_regime_matches_brute_force_covariance(
    single_root, scale, fallback_calls
):
    # Strong random scores: the closed form cancels in a sizeable fraction
    # of the instances (it used to raise there); all must be exact.
    tree = DependencyTree(single_root=single_root)
    for seed in range(60):
        rng = np.random.default_rng(1000 + seed)
        n = 3 + seed % 3
        scores = rng.normal(size=(n + 1, n + 1)) * scale
        d_mu = _arcs_d(rng, scores)
        (d,) = tree.marginals_backward(scores, d_mu)
        np.testing.assert_allclose(
            d, brute_force_covariance_vjp(scores, single_root, d_mu), atol=1e-10
        )
    assert fallback_calls.count("lin") >= 3


@pytest.mark.parametrize("single_root", [True, False])
def test_backward_extreme_scores_matches_brute_force_covariance(single_root, fallback_calls):
    rng = np.random.default_rng(12)
    tree = DependencyTree(single_root=single_root)
    for trial in range(40):
        n = 1 + trial % 5
        scores = rng.uniform(-1e4, 1e4, size=(n + 1, n + 1))
        if trial % 2:
            # Near-ties between trees keep the covariance away from zero.
            scores = np.round(scores / 2e3) * 2e3
        d_mu = _arcs_d(rng, scores)
        with np.errstate(over="raise"):
            (d,) = tree.marginals_backward(scores, d_mu)
        np.testing.assert_allclose(
            d, brute_force_covariance_vjp(scores, single_root, d_mu), atol=1e-9
        )
    assert fallback_calls.count("log") >= 5


@pytest.mark.parametrize("single_root", [True, False])
def test_backward_forbidden_arcs_unstable_regime(single_root, fallback_calls):
    tree = DependencyTree(single_root=single_root)
    checked = 0
    for seed in range(200):
        rng = np.random.default_rng(2000 + seed)
        n = 3 + seed % 3
        scores = rng.normal(size=(n + 1, n + 1)) * 30.0
        forbid = rng.random(scores.shape) < 0.2
        scores[forbid] = -np.inf
        try:
            tree.marginals(scores)
        except ValueError:
            continue  # no tree, or a word that cannot head the others
        d_mu = _arcs_d(rng, scores)
        (d,) = tree.marginals_backward(scores, d_mu)
        assert np.isfinite(d).all()
        used = forbid.copy()
        used[:, 0] = False
        np.fill_diagonal(used, False)
        assert (d[used] == 0.0).all()
        np.testing.assert_allclose(
            d, brute_force_covariance_vjp(scores, single_root, d_mu), atol=1e-10
        )
        checked += 1
    assert checked >= 50
    assert len(fallback_calls) >= 3


@pytest.mark.parametrize("single_root", [True, False])
def test_backward_unstable_regime_matches_finite_differences(single_root, fallback_calls):
    # Larger sentences, beyond brute force: central differences of the
    # marginals along the arcs. The public marginals may accept the closed
    # form with errors up to ~1e-9, which differences would amplify, so the
    # differences are taken of the subtraction-free kernel (linear space,
    # independent of the log-space kernel being differentiated).
    from sksparse_struct.structures._nonprojective_fast import matrix_tree_marginals_rooted

    tree = DependencyTree(single_root=single_root)
    done = 0
    for seed in range(100):
        rng = np.random.default_rng(3000 + seed)
        n = 10
        scores = rng.normal(size=(n + 1, n + 1)) * 20.0
        before = len(fallback_calls)
        d_mu = _arcs_d(rng, scores)
        (d_scores,) = tree.marginals_backward(scores, d_mu)
        if len(fallback_calls) == before:
            continue  # the closed form was accurate; covered elsewhere
        arcs = [(h, m) for m in range(1, n + 1) for h in range(n + 1) if h != m]
        hs, ms = np.array(arcs).T

        def forward(flat):
            s = scores.copy()
            s[hs, ms] = flat
            mu = np.empty_like(s)
            assert np.isfinite(matrix_tree_marginals_rooted(s, single_root, mu))
            return mu.ravel()

        fd = central_difference_vjp(forward, scores[hs, ms], d_mu.ravel(), eps=1e-5)
        np.testing.assert_allclose(d_scores[hs, ms], fd, atol=1e-8)
        mu_ref = forward(scores[hs, ms]).reshape(scores.shape)
        np.testing.assert_allclose(tree.marginals(scores)[0], mu_ref, atol=1e-8)
        done += 1
        if done == 2:
            break
    assert done == 2


@pytest.mark.parametrize("single_root", [True, False])
def test_fallback_backward_kernel_agrees_with_closed_form(single_root):
    # In the benign regime both backward kernels must agree, and the
    # fallback's marginals are those of the log-space forward kernel.
    from sksparse_struct.structures._nonprojective_backward_fast import (
        backward_sums_vanish,
        matrix_tree_marginals_rooted_jvp,
        matrix_tree_marginals_rooted_log_jvp,
    )
    from sksparse_struct.structures._nonprojective_fast import (
        matrix_tree_marginals_backward,
        matrix_tree_marginals_rooted,
        matrix_tree_marginals_rooted_log,
    )

    rng = np.random.default_rng(13)
    for n in (1, 2, 7, 15):
        scores = rng.normal(size=(n + 1, n + 1))
        scores[rng.random(scores.shape) < 0.1] = -np.inf
        scores[0, 1:] = rng.normal(size=n)  # keep a tree possible
        np.fill_diagonal(scores, 0.0)
        d_mu = _arcs_d(rng, np.where(np.isfinite(scores), scores, 0.0))
        mu, out = np.empty_like(scores), np.empty_like(scores)
        log_z = matrix_tree_marginals_backward(scores, single_root, d_mu, mu, out)
        mu2, out2 = np.empty_like(scores), np.empty_like(scores)
        log_z2 = matrix_tree_marginals_rooted_log_jvp(scores, single_root, d_mu, mu2, out2)
        mu3 = np.empty_like(scores)
        log_z3 = matrix_tree_marginals_rooted_log(scores, single_root, mu3)
        mu4, out4 = np.empty_like(scores), np.empty_like(scores)
        log_z4 = matrix_tree_marginals_rooted_jvp(scores, single_root, d_mu, mu4, out4)
        mu5 = np.empty_like(scores)
        log_z5 = matrix_tree_marginals_rooted(scores, single_root, mu5)
        assert backward_sums_vanish(out, d_mu, single_root, 1e-12)
        assert backward_sums_vanish(out2, d_mu, single_root, 1e-12)
        assert backward_sums_vanish(out4, d_mu, single_root, 1e-12)
        np.testing.assert_allclose(out2, out, atol=1e-12)
        np.testing.assert_allclose(out4, out, atol=1e-12)
        np.testing.assert_array_equal(mu4, mu5)
        assert log_z4 == log_z5
        np.testing.assert_allclose(mu2, mu, atol=1e-12)
        assert log_z2 == pytest.approx(log_z, abs=1e-11)
        np.testing.assert_array_equal(mu2, mu3)
        assert log_z2 == log_z3


def test_backward_sums_vanish_detects_errors():
    from sksparse_struct.structures._nonprojective_backward_fast import backward_sums_vanish

    d_mu = np.ones((3, 3))
    good = np.array([[0.0, 0.5, -0.5], [0.0, 0.0, 0.5], [0.0, -0.5, 0.0]])
    assert backward_sums_vanish(good, d_mu, True, 1e-9)
    bad = good.copy()
    bad[1, 2] += 1e-6
    assert not backward_sums_vanish(bad, d_mu, False, 1e-9)
    bad = good.copy()
    bad[0, 1] += 1e-6
    bad[2, 1] -= 1e-6  # column sums still vanish, the root row's does not
    assert backward_sums_vanish(bad, d_mu, False, 1e-9)
    assert not backward_sums_vanish(bad, d_mu, True, 1e-9)
    assert not backward_sums_vanish(np.full((3, 3), np.nan), d_mu, False, 1e-9)


@given(
    n=st.integers(1, 5),
    seed=st.integers(0, 2**32 - 1),
    single_root=st.booleans(),
    scale=st.sampled_from([1.0, 20.0, 50.0, 1e3, 1e4]),
    p_forbid=st.sampled_from([0.0, 0.2]),
)
def test_backward_is_the_covariance_in_every_regime(n, seed, single_root, scale, p_forbid):
    # The backward pass is Cov(arc indicators) @ d_mu whatever the scores:
    # any scale, with or without forbidden arcs, both root modes.
    rng = np.random.default_rng(seed)
    scores = random_scores(rng, n, scale=scale, p_forbid=p_forbid)
    tree = DependencyTree(single_root=single_root)
    try:
        tree.marginals(scores)
    except ValueError:
        return  # no tree (with one root word) avoids the forbidden arcs
    d_mu = _arcs_d(rng, np.where(np.isfinite(scores), scores, 0.0))
    (d,) = tree.marginals_backward(scores, d_mu)
    ref = brute_force_covariance_vjp(scores, single_root, d_mu)
    np.testing.assert_allclose(d, ref, atol=1e-9 * max(1.0, np.abs(d_mu).max()))


@pytest.mark.parametrize("single_root", [True, False])
def test_fallback_backward_kernels_agree_on_long_sentences(single_root, fallback_calls):
    # n = 25 with strong scores, where the closed form is rejected: the
    # linear- and log-space kernels are computed independently and must
    # agree, and the derivative of each column sum of the marginals vanishes.
    from sksparse_struct.structures._nonprojective_backward_fast import (
        matrix_tree_marginals_rooted_log_jvp,
    )

    tree = DependencyTree(single_root=single_root)
    done = 0
    for seed in range(40):
        rng = np.random.default_rng(4000 + seed)
        n = 25
        scores = rng.normal(size=(n + 1, n + 1)) * 20.0
        d_mu = _arcs_d(rng, scores)
        before = len(fallback_calls)
        (d,) = tree.marginals_backward(scores, d_mu)
        if len(fallback_calls) == before:
            continue
        assert fallback_calls[-1] == "lin"
        mu_log, d_log = np.empty_like(scores), np.empty_like(scores)
        matrix_tree_marginals_rooted_log_jvp(scores, single_root, d_mu, mu_log, d_log)
        np.testing.assert_allclose(d, d_log, atol=1e-11)
        np.testing.assert_allclose(d[:, 1:].sum(axis=0), 0.0, atol=1e-11)
        if single_root:
            assert abs(d[0].sum()) < 1e-11
        done += 1
        if done == 3:
            break
    assert done == 3


def test_backward_when_the_fallback_degenerates():
    # Single-rooted trees where some word cannot head all the others: the
    # subtraction-free kernels give up (NaN), and the backward pass keeps the
    # closed form, which the marginals accept too; it must still be exact.
    from sksparse_struct.structures._nonprojective_backward_fast import (
        matrix_tree_marginals_rooted_jvp,
    )

    tree = DependencyTree(single_root=True)
    degenerate = 0
    for seed in range(150):
        rng = np.random.default_rng(5000 + seed)
        n = 3 + seed % 3
        scores = rng.normal(size=(n + 1, n + 1)) * 20.0
        scores[rng.random(scores.shape) < 0.3] = -np.inf
        try:
            tree.marginals(scores)
        except ValueError:
            continue
        d_mu = _arcs_d(rng, np.where(np.isfinite(scores), scores, 0.0))
        mu, out = np.empty_like(scores), np.empty_like(scores)
        if np.isnan(matrix_tree_marginals_rooted_jvp(scores, True, d_mu, mu, out)):
            degenerate += 1
        (d,) = tree.marginals_backward(scores, d_mu)
        np.testing.assert_allclose(
            d, brute_force_covariance_vjp(scores, True, d_mu), atol=1e-9
        )
    assert degenerate >= 3
