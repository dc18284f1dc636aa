"""The compiled active-set loop for projective trees against its references.

``sparsemap(DependencyTree(projective=True), scores)`` runs
``_solve_active_set_tree`` with ``active_set_projective_tree`` (one compiled
call, Eisner as the oracle). References: the generic Python active-set loop
(the same steps, so the same support, probabilities, iterations and gap to
the last bit) and, for up to 4 words, a QP over every projective tree
enumerated by brute force, solved by scipy.
"""

import functools
import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize, nnls
from sklearn.exceptions import ConvergenceWarning

from sksparse_struct.structures._base import ORACLE_PROJECTIVE_TREE
from tests._helpers import compiled_kind
import sksparse_struct.inference._sparsemap as sm
from sksparse_struct.inference import sparsemap
from sksparse_struct.inference._sparsemap_fast import (
    active_set_projective_tree,
    active_set_tree,
)
from sksparse_struct.structures import DependencyTree


def _both(monkeypatch, tree, scores, **kwargs):
    assert compiled_kind(tree, "active_set", None) == ORACLE_PROJECTIVE_TREE
    fast = sparsemap(tree, scores, **kwargs)
    with monkeypatch.context() as mp:
        mp.setattr(sm, "_compiled_oracle", lambda *args: None)
        generic = sparsemap(tree, scores, **kwargs)
    return fast, generic


def _assert_identical(fast, generic):
    assert fast.n_iter == generic.n_iter
    assert fast.converged == generic.converged
    assert fast.gap == generic.gap
    assert fast.objective == generic.objective
    np.testing.assert_array_equal(fast.probabilities, generic.probabilities)
    np.testing.assert_array_equal(fast.vertices_u, generic.vertices_u)
    np.testing.assert_array_equal(fast.u, generic.u)
    assert len(fast.values) == len(generic.values)
    for a, b in zip(fast.values, generic.values):
        assert a.dtype == np.int64
        np.testing.assert_array_equal(a, b)


def _scores(n, kind, seed):
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((n + 1, n + 1))
    if kind == "ties":
        scores = np.round(scores)
    elif kind == "zeros":
        scores = np.zeros((n + 1, n + 1))
    elif kind == "forbidden":
        scores[rng.random(scores.shape) < 0.4] = -np.inf
        scores[0, 1] = 0.0  # keep the chain root -> 1 -> 2 -> ... allowed
        for m in range(2, n + 1):
            scores[m - 1, m] = 0.0
    elif kind == "large":
        scores = 1e4 * scores
    return scores


# --------------------------------------------------------------------------
# Independent references
# --------------------------------------------------------------------------


def _is_projective_tree(heads, single_root):
    """Tree rooted at 0 (single-rooted if asked) with no two crossing arcs."""
    n = heads.shape[0] - 1
    words = range(1, n + 1)
    if any(heads[m] == m or not 0 <= heads[m] <= n for m in words):
        return False
    if single_root and sum(heads[m] == 0 for m in words) != 1:
        return False
    for m in words:  # every word reaches the root within n steps
        h, steps = m, 0
        while h != 0 and steps <= n:
            h, steps = heads[h], steps + 1
        if h != 0:
            return False
    spans = [tuple(sorted((int(heads[m]), m))) for m in words]
    return not any(a < c < b < d for a, b in spans for c, d in spans)


@functools.lru_cache(maxsize=None)
def _projective_trees(n, single_root):
    trees = []
    for assignment in itertools.product(range(n + 1), repeat=n):
        heads = np.array((-1,) + assignment)
        if _is_projective_tree(heads, single_root):
            heads.flags.writeable = False  # shared by the callers of the cache
            trees.append(heads)
    return tuple(trees)


def _arc_matrix(heads):
    n = heads.shape[0] - 1
    a = np.zeros((n + 1, n + 1))
    a[heads[1:], np.arange(1, n + 1)] = 1.0
    return a


def _tree_score(scores, heads):
    n = heads.shape[0] - 1
    return float(sum(scores[heads[m], m] for m in range(1, n + 1)))


def _reference_qp(scores, single_root):
    """SparseMAP over the enumerated projective trees by SLSQP, then polished.

    Returns the trees of finite score, their arc matrices (flattened), scores,
    the optimal probabilities and ``u`` (as an ``(n + 1, n + 1)`` matrix).
    SLSQP identifies the support; the KKT system solved on it gives ``p`` and
    ``u`` to rounding.
    """
    n = scores.shape[0] - 1
    trees = _projective_trees(n, single_root)
    theta = np.array([_tree_score(scores, y) for y in trees])
    keep = np.isfinite(theta)
    trees = [y for y, k in zip(trees, keep) if k]
    theta = theta[keep]
    A = np.array([_arc_matrix(y).ravel() for y in trees])
    D = len(trees)
    res = minimize(
        lambda p: 0.5 * np.sum((p @ A) ** 2) - theta @ p,
        np.full(D, 1.0 / D),
        jac=lambda p: A @ (p @ A) - theta,
        method="SLSQP",
        bounds=[(0.0, 1.0)] * D,
        constraints=[{"type": "eq", "fun": lambda p: p.sum() - 1.0,
                      "jac": lambda p: np.ones(D)}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    S = np.flatnonzero(res.x > 1e-7)
    K = len(S)
    kkt = np.zeros((K + 1, K + 1))
    kkt[:K, :K] = A[S] @ A[S].T
    kkt[:K, K] = 1.0
    kkt[K, :K] = 1.0
    sol = np.linalg.lstsq(kkt, np.append(theta[S], 1.0), rcond=None)[0]
    u = sol[:K] @ A[S]
    # p realising u (unique when the support is affinely independent).
    weights, residual = nnls(np.vstack([A[S].T, np.ones((1, K))]), np.append(u, 1.0))
    assert residual <= 1e-9
    p = np.zeros(D)
    p[S] = weights
    return trees, A, theta, p, u.reshape(n + 1, n + 1)


def _assert_kkt(result, scores, single_root, tol=1e-9):
    """Optimality of ``result`` certified over every enumerated projective tree."""
    n = scores.shape[0] - 1
    u = result.marginals
    trees = _projective_trees(n, single_root)
    theta = np.array([_tree_score(scores, y) for y in trees])
    ok = np.isfinite(theta)
    slack = np.array([t - np.sum(_arc_matrix(y) * u) for y, t in zip(trees, theta)])[ok]
    support_slack = np.array(
        [_tree_score(scores, y) - np.sum(_arc_matrix(y) * u) for y in result.values]
    )
    tau = support_slack.max()
    scale = max(1.0, abs(result.objective))
    # Complementary slackness: every support tree is optimal in the linearisation.
    assert np.ptp(support_slack) <= tol * scale
    # Dual feasibility: no projective tree beats the support.
    assert slack.max() <= tau + tol * scale
    assert np.all(result.probabilities > 0.0)
    assert result.probabilities.sum() == pytest.approx(1.0, abs=1e-12)


def _assert_support_valid(result, scores, single_root):
    for heads in result.values:
        assert _is_projective_tree(heads, single_root)
        assert np.isfinite(_tree_score(scores, heads))
    # u is the expectation of the support's arc indicators.
    expected = sum(p * _arc_matrix(y) for y, p in result.support)
    np.testing.assert_allclose(result.marginals, expected, atol=1e-12)


# --------------------------------------------------------------------------
# Compiled loop == generic loop, to the last bit
# --------------------------------------------------------------------------


@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("n", [1, 2, 4, 10, 20])
@pytest.mark.parametrize("kind", ["normal", "ties", "zeros", "forbidden", "large"])
def test_fast_projective_loop_matches_generic(monkeypatch, n, single_root, kind):
    scores = _scores(n, kind, n + 100 * single_root)
    tree = DependencyTree(projective=True, single_root=single_root)
    fast, generic = _both(monkeypatch, tree, scores)
    _assert_identical(fast, generic)
    assert fast.converged
    _assert_support_valid(fast, scores, single_root)


@pytest.mark.parametrize("single_root", [True, False])
def test_fast_projective_loop_forty_words(monkeypatch, single_root):
    scores = _scores(40, "normal", 40 + single_root)
    tree = DependencyTree(projective=True, single_root=single_root)
    fast, generic = _both(monkeypatch, tree, scores)
    _assert_identical(fast, generic)
    assert fast.converged
    _assert_support_valid(fast, scores, single_root)
    # Optimality through the exact oracle: no projective tree has a larger
    # linearised score than the support (Eisner on scores - u).
    u = fast.marginals
    best = tree.map(scores - u)
    assert _is_projective_tree(best, single_root)
    tau = max(_tree_score(scores - u, y) for y in fast.values)
    assert _tree_score(scores - u, best) <= tau + 1e-9 * max(1.0, abs(fast.objective))


@settings(max_examples=25)
@given(
    st.integers(1, 7),
    st.booleans(),
    st.integers(0, 2**32 - 1),
    st.sampled_from(["normal", "ties", "forbidden"]),
)
def test_fast_projective_loop_matches_generic_property(n, single_root, seed, kind):
    scores = _scores(n, kind, seed)
    tree = DependencyTree(projective=True, single_root=single_root)
    fast = sparsemap(tree, scores)
    original = sm._compiled_oracle
    sm._compiled_oracle = lambda *args: None
    try:
        generic = sparsemap(tree, scores)
    finally:
        sm._compiled_oracle = original
    _assert_identical(fast, generic)


@pytest.mark.parametrize("max_iter", [1, 2, 4])
def test_fast_projective_loop_not_converged_matches_generic(monkeypatch, max_iter):
    scores = np.random.default_rng(3).standard_normal((11, 11))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fast, generic = _both(
            monkeypatch, DependencyTree(projective=True), scores, max_iter=max_iter
        )
    assert sum(issubclass(w.category, ConvergenceWarning) for w in caught) == 2
    assert fast.n_iter == max_iter and not fast.converged
    _assert_identical(fast, generic)


# --------------------------------------------------------------------------
# Against the QP over the enumerated projective trees
# --------------------------------------------------------------------------


@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("kind", ["normal", "ties", "zeros", "forbidden"])
def test_fast_projective_loop_matches_brute_force_qp(n, single_root, kind):
    scores = _scores(n, kind, 7 * n + single_root)
    result = sparsemap(DependencyTree(projective=True, single_root=single_root), scores)
    trees, A, theta, p_ref, u_ref = _reference_qp(scores, single_root)
    u_ref_obj = theta @ p_ref - 0.5 * np.sum(u_ref ** 2)
    np.testing.assert_allclose(result.marginals, u_ref, atol=1e-8)
    assert result.objective == pytest.approx(u_ref_obj, abs=1e-8)
    _assert_kkt(result, scores, single_root)
    _assert_support_valid(result, scores, single_root)
    if kind == "normal":
        # Generic scores: the optimal distribution is unique, compare it whole.
        p_fast = np.zeros(len(trees))
        index = {tuple(y): i for i, y in enumerate(trees)}
        for heads, prob in result.support:
            p_fast[index[tuple(heads)]] = prob
        np.testing.assert_allclose(p_fast, p_ref, atol=1e-8)


def test_brute_force_enumeration_counts():
    # Projective trees of n words under a root placed left: 1, 3, 12, 55
    # (multi-root; C(3n, n) / (2n + 1)); single-rooted: 1, 2, 7, 30 (C(3n - 2, n - 1) / n).
    assert [len(_projective_trees(n, False)) for n in range(1, 5)] == [1, 3, 12, 55]
    assert [len(_projective_trees(n, True)) for n in range(1, 5)] == [1, 2, 7, 30]


def test_one_word():
    for single_root in (True, False):
        result = sparsemap(DependencyTree(projective=True, single_root=single_root),
                           [[0.0, -3.5], [0.0, 0.0]])
        assert len(result.support) == 1
        np.testing.assert_array_equal(result.values[0], [-1, 0])
        assert result.probabilities.tolist() == [1.0]
        assert result.marginals.tolist() == [[0.0, 1.0], [0.0, 0.0]]
        assert result.objective == -3.5 - 0.5
        assert result.converged and result.gap == 0.0


def test_forbidden_arcs_never_in_support():
    scores = _scores(6, "forbidden", 11)
    for single_root in (True, False):
        result = sparsemap(DependencyTree(projective=True, single_root=single_root), scores)
        assert np.all(result.marginals[np.isneginf(scores)] == 0.0)
        _assert_support_valid(result, scores, single_root)


def test_only_a_crossing_tree_is_allowed():
    # The one allowed tree 0 -> 2, 2 -> 1, 1 -> 3 has crossing arcs (0, 2) and
    # (1, 3): fine for non-projective trees, infeasible for projective ones.
    scores = np.full((4, 4), -np.inf)
    scores[0, 2] = scores[2, 1] = scores[1, 3] = 1.0
    result = sparsemap(DependencyTree(), scores)
    np.testing.assert_array_equal(result.values[0], [-1, 2, 0, 1])
    with pytest.raises(ValueError, match="no projective dependency tree"):
        sparsemap(DependencyTree(projective=True), scores)
    *_, status = active_set_projective_tree(
        DependencyTree().encode(scores).eta_u, 3, np.bool_(True), np.int64(100), 1e-9, 1e-10
    )
    assert status == 1


def test_single_root_infeasible():
    scores = np.full((4, 4), -np.inf)
    scores[0, 1:] = 0.0  # only root arcs
    result = sparsemap(DependencyTree(projective=True, single_root=False), scores)
    np.testing.assert_array_equal(result.values[0], [-1, 0, 0, 0])
    with pytest.raises(ValueError, match="no projective dependency tree with a single root"):
        sparsemap(DependencyTree(projective=True, single_root=True), scores)


def test_kernel_returns_like_active_set_tree():
    scores = _scores(5, "normal", 5)
    eta_u = DependencyTree().encode(scores).eta_u
    args = (eta_u, 5, np.bool_(False), np.int64(1000), 1e-9, 1e-10)
    proj = active_set_projective_tree(*args)
    nonproj = active_set_tree(*args)
    assert len(proj) == len(nonproj) == 11
    IDX, VAL, nnz, H, theta, p, k, _, _, converged, status = proj
    assert status == 0 and converged
    # Sparse rows: the 5 arcs of each tree, not its 25 possible arcs.
    assert IDX.shape[1] == VAL.shape[1] == 5 and H.shape[1] == 6
    assert p[:k].sum() == pytest.approx(1.0)
    for i in range(k):
        assert _is_projective_tree(H[i], False)
        assert nnz[i] == 5 and np.all(VAL[i] == 1.0)
        tree = DependencyTree(single_root=False)
        m, _ = tree.indicators(H[i], tree.encode(scores))
        np.testing.assert_array_equal(IDX[i], np.flatnonzero(m))
        assert theta[i] == pytest.approx(_tree_score(scores, H[i]))


def test_fast_path_only_where_it_applies():
    assert (compiled_kind(DependencyTree(projective=True), "active_set", None)
            == ORACLE_PROJECTIVE_TREE)
    assert compiled_kind(DependencyTree(), "active_set", None) != ORACLE_PROJECTIVE_TREE
    assert (compiled_kind(DependencyTree(projective=True), "pairwise", None)
            != ORACLE_PROJECTIVE_TREE)
    assert compiled_kind(DependencyTree(projective=True), "active_set",
                         [np.array([-1, 0])]) != ORACLE_PROJECTIVE_TREE
