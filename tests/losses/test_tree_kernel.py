"""The compiled tree loss kernel against brute-force enumeration of trees.

``losses._tree_fast.tree_loss`` takes the arc scores of one sentence and returns the loss
and its gradient with respect to the arc scores; everything here is checked
on tiny sentences (1 to 4 words) against references that enumerate every
(projective) tree with ``itertools.product``: log-sum-exp and marginals for
the CRF, maxima for the hinge and perceptron losses, and for the SparseMAP
losses the quadratic program over the convex hull of the enumerated trees,
solved with SLSQP (and, as a second reference, by the generic
``sksparse_struct.inference.sparsemap`` solver).
"""


import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logsumexp

from sksparse_struct.inference import sparsemap
from sksparse_struct.losses._kinds_fast import LOSS_KINDS as KINDS
from sksparse_struct.losses._kinds_fast import SparseMAPOptions
from sksparse_struct.losses._tree_fast import tree_loss
from sksparse_struct.structures import DependencyTree

from .._helpers import all_trees

# Tight active-set tolerance so finite differences of the loss are exact enough.
MAX_ITER, TOL, DEP_TOL = 200, 1e-12, 1e-12
OPTIONS = SparseMAPOptions(MAX_ITER, TOL, DEP_TOL)


# --- references ----------------------------------------------------------------


def test_tree_counts():
    # Cayley: (n + 1)^(n - 1) trees, n^(n - 1) with one root word; projective
    # trees with any roots: 1, 3, 12, 55 (OEIS A001764), with one root word:
    # 1, 2, 7, 30 (A006013).
    assert [len(all_trees(n, False, False)) for n in range(1, 5)] == [1, 3, 16, 125]
    assert [len(all_trees(n, False, True)) for n in range(1, 5)] == [1, 2, 9, 64]
    assert [len(all_trees(n, True, True)) for n in range(1, 5)] == [1, 2, 7, 30]
    assert [len(all_trees(n, True, False)) for n in range(1, 5)] == [1, 3, 12, 55]


def _indicator(heads):
    n = len(heads) - 1
    Y = np.zeros((n + 1, n + 1))
    Y[heads[1:], np.arange(1, n + 1)] = 1.0
    return Y


def _simplex_qp(eta_values, vertices):
    """``max_p sum_t p_t eta_t - ||sum_t p_t V_t||^2 / 2`` over the simplex, by SLSQP.

    ``eta_values[t]`` is ``<eta, V_t>``, ``vertices`` the flat indicator vectors.
    Returns the optimal value and mean vector.
    """
    T = len(vertices)
    V = np.asarray(vertices)
    G = V @ V.T

    def f(p):
        return 0.5 * p @ G @ p - eta_values @ p

    def grad(p):
        return G @ p - eta_values

    best = int(np.argmax(eta_values))
    x0 = np.full(T, 0.1 / T)
    x0[best] += 0.9
    res = minimize(
        f, x0, jac=grad, method="SLSQP", bounds=[(0.0, 1.0)] * T,
        constraints=[{"type": "eq", "fun": lambda p: p.sum() - 1.0,
                      "jac": lambda p: np.ones_like(p)}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    p = np.clip(res.x, 0.0, None)
    p /= p.sum()
    return -f(p), V.T @ p


def brute_force(kind, S, gold, projective, single_root):
    """Loss and gradient w.r.t. ``S`` of one sentence, by enumerating its trees."""
    n = S.shape[0] - 1
    trees = all_trees(n, projective, single_root)
    arcs = np.arange(1, n + 1)
    scores = np.array([S[t[1:], arcs].sum() for t in trees])
    cost = np.array([(t[1:] != gold[1:]).sum() for t in trees], dtype=float)
    gold_score = S[gold[1:], arcs].sum()
    Y_gold = _indicator(gold)
    Ys = [_indicator(t) for t in trees]
    if kind == "crf":
        log_z = logsumexp(scores)
        p = np.exp(scores - log_z)
        return log_z - gold_score, sum(q * Y for q, Y in zip(p, Ys)) - Y_gold
    if kind in ("hinge", "perceptron"):
        aug = scores + cost if kind == "hinge" else scores
        best = int(np.argmax(aug))
        return aug[best] - gold_score, Ys[best] - Y_gold
    aug = scores + cost if kind == "margin_sparsemap" else scores
    value, mu = _simplex_qp(aug, [Y.ravel() for Y in Ys])
    return value - gold_score + 0.5 * n, mu.reshape(n + 1, n + 1) - Y_gold


def generic_sparsemap(kind, S, gold, projective, single_root):
    """The same SparseMAP loss and gradient from the generic solver (second reference)."""
    n = S.shape[0] - 1
    eta = S.copy()
    if kind == "margin_sparsemap":
        cost = np.ones_like(S)
        cost[gold[1:], np.arange(1, n + 1)] = 0.0
        eta[:, 1:] += cost[:, 1:]
    res = sparsemap(DependencyTree(projective=projective, single_root=single_root), eta,
                    tol=1e-12)
    mu = np.asarray(res.marginals)
    gold_score = S[gold[1:], np.arange(1, n + 1)].sum()
    return res.objective - gold_score + 0.5 * n, mu - _indicator(gold)


# --- the kernel --------------------------------------------------------------


def random_scores(rng, n, scale=2.0):
    S = scale * rng.normal(size=(n + 1, n + 1))
    S[:, 0] = -np.inf
    S[np.arange(n + 1), np.arange(n + 1)] = -np.inf
    return S


def kernel(kind, S, gold, projective, single_root, return_scores=False):
    """``tree_loss`` on a copy of ``S``: loss and gradient (and the copy after the call)."""
    n = S.shape[0] - 1
    S_in = S.copy()
    D = np.full_like(S, np.nan)
    heads = np.empty(n + 1, dtype=np.int64)
    work = np.empty_like(S)
    loss, converged = tree_loss(
        np.int64(KINDS[kind]), S_in, np.ascontiguousarray(gold, dtype=np.int64), np.int64(n),
        np.bool_(projective), np.bool_(single_root), OPTIONS, D, heads, work,
    )
    assert converged
    if return_scores:
        return loss, D, S_in
    return loss, D


def _problem(seed, n, projective, single_root):
    rng = np.random.default_rng(1000 * seed + 10 * n + 2 * projective + single_root)
    S = random_scores(rng, n)
    trees = all_trees(n, projective, single_root)
    gold = trees[rng.integers(len(trees))]
    return S, gold


def _arc_mask(n):
    mask = np.ones((n + 1, n + 1), dtype=bool)
    mask[:, 0] = False
    mask[np.arange(n + 1), np.arange(n + 1)] = False
    return mask


CASES = [
    pytest.param(kind, projective, single_root, n, seed,
                 id=f"{kind}-{'proj' if projective else 'nonproj'}-"
                    f"{'single' if single_root else 'multi'}-n{n}-s{seed}")
    for kind in KINDS
    for projective in (False, True)
    for single_root in (False, True)
    for n in (1, 2, 3, 4)
    for seed in (0, 1)
]


@pytest.mark.parametrize("kind, projective, single_root, n, seed", CASES)
def test_loss_and_gradient_match_brute_force(kind, projective, single_root, n, seed):
    S, gold = _problem(seed, n, projective, single_root)
    loss, D = kernel(kind, S, gold, projective, single_root)
    ref_loss, ref_D = brute_force(kind, S, gold, projective, single_root)
    mask = _arc_mask(n)
    if kind in ("sparsemap", "margin_sparsemap"):
        # SLSQP's value is accurate to its tolerance; its mean vector less so.
        assert loss == pytest.approx(ref_loss, abs=1e-7)
        np.testing.assert_allclose(D[mask], ref_D[mask], atol=1e-4)
        gen_loss, gen_D = generic_sparsemap(kind, S, gold, projective, single_root)
        assert loss == pytest.approx(gen_loss, abs=1e-9)
        np.testing.assert_allclose(D[mask], gen_D[mask], atol=1e-9)
    else:
        assert loss == pytest.approx(ref_loss, rel=1e-10, abs=1e-10)
        np.testing.assert_allclose(D[mask], ref_D[mask], atol=1e-10)
    # Nothing off the arcs.
    np.testing.assert_array_equal(D[~mask], 0.0)
    assert loss >= -1e-12  # every loss here is nonnegative (gold is a candidate)
    # The gradient of a tree-valued loss moves one unit of mass per word.
    np.testing.assert_allclose(D[:, 1:].sum(axis=0), 0.0, atol=1e-9)


@pytest.mark.parametrize("kind", ["sparsemap", "margin_sparsemap"])
@pytest.mark.parametrize("projective", [False, True])
@pytest.mark.parametrize("single_root", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_sparsemap_losses_match_the_generic_solver(kind, projective, single_root, seed):
    S, gold = _problem(seed, 4, projective, single_root)
    loss, D = kernel(kind, S, gold, projective, single_root)
    gen_loss, gen_D = generic_sparsemap(kind, S, gold, projective, single_root)
    mask = _arc_mask(4)
    assert loss == pytest.approx(gen_loss, abs=1e-9)
    np.testing.assert_allclose(D[mask], gen_D[mask], atol=1e-9)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("projective", [False, True])
@pytest.mark.parametrize("single_root", [False, True])
@pytest.mark.parametrize("n", [2, 4])
def test_gradient_matches_finite_differences(kind, projective, single_root, n):
    # Random continuous scores: the hinge and perceptron losses are
    # differentiable there (one maximiser), away from their kinks.
    S, gold = _problem(7, n, projective, single_root)
    _, D = kernel(kind, S, gold, projective, single_root)
    eps = 1e-6
    numeric = np.zeros_like(S)
    for h, m in zip(*np.nonzero(_arc_mask(n))):
        Sp, Sm = S.copy(), S.copy()
        Sp[h, m] += eps
        Sm[h, m] -= eps
        numeric[h, m] = (kernel(kind, Sp, gold, projective, single_root)[0]
                         - kernel(kind, Sm, gold, projective, single_root)[0]) / (2 * eps)
    mask = _arc_mask(n)
    np.testing.assert_allclose(D[mask], numeric[mask], atol=1e-6)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("projective", [False, True])
def test_loss_vanishes_on_a_confident_gold_tree(kind, projective):
    # Gold arcs far ahead of every other arc: no loss has anything to learn
    # (except the CRF, whose loss only tends to zero).
    rng = np.random.default_rng(3)
    n = 4
    S = random_scores(rng, n, scale=0.1)
    gold = np.array([-1, 2, 0, 4, 2])
    S[gold[1:], np.arange(1, n + 1)] += 30.0
    loss, D = kernel(kind, S, gold, projective, True)
    assert loss == pytest.approx(0.0, abs=1e-10)
    np.testing.assert_allclose(D, 0.0, atol=1e-10)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("projective", [False, True])
def test_scores_are_unchanged_on_return(kind, projective):
    # The cost-augmented losses must not touch S, not even by adding the
    # Hamming cost and taking it off again (which changes it by rounding).
    for seed in range(5):
        S, gold = _problem(seed, 4, projective, True)
        _, _, S_after = kernel(kind, S, gold, projective, True, return_scores=True)
        np.testing.assert_array_equal(S_after, S)


def test_one_word_sentence_has_zero_loss():
    S = np.array([[-np.inf, 0.3], [-np.inf, -np.inf]])
    gold = np.array([-1, 0])
    for kind in KINDS:
        for projective in (False, True):
            loss, D = kernel(kind, S, gold, projective, True)
            assert loss == pytest.approx(0.0, abs=1e-12), kind
            np.testing.assert_allclose(D, 0.0, atol=1e-12)


def test_sparsemap_losses_are_sparse_and_bounded_by_hinge():
    # SparseMAP's loss is at most the perceptron's plus n/2 and at least 0;
    # margin-SparseMAP's gradient is supported on a few trees.
    rng = np.random.default_rng(11)
    n = 4
    for _ in range(5):
        S = random_scores(rng, n)
        gold = all_trees(n, False, True)[rng.integers(64)]
        sm, _ = kernel("sparsemap", S, gold, False, True)
        msm, _ = kernel("margin_sparsemap", S, gold, False, True)
        hinge, _ = kernel("hinge", S, gold, False, True)
        perc, _ = kernel("perceptron", S, gold, False, True)
        assert 0.0 <= sm <= msm + 1e-12
        assert sm <= perc + 0.5 * n + 1e-12
        assert msm <= hinge + 0.5 * n + 1e-12
