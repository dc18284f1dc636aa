"""LP-SparseMAP over factor graphs: forward against SparseMAP and a generic QP, backward
against finite differences."""

import zlib

import numpy as np
import pytest

from sksparse_struct.inference import (
    FactorGraph,
    LPSparseMAPResult,
    ad3,
    lp_sparsemap,
    lp_sparsemap_backward,
    lp_sparsemap_jvp,
    sparsemap,
    sparsemap_backward,
)
from sksparse_struct.structures import DependencyTree, Sequence

from ._factor_graphs import (
    KINDS,
    in_local_polytope,
    lp_sparsemap_reference,
    random_graph,
    random_scores,
)

TIGHT = {"tol": 1e-11, "max_iter": 200000}


def _tree_graph(n, projective, single_root, extra=False):
    tree = DependencyTree(projective=projective, single_root=single_root)
    n_arcs = n * n
    fg = FactorGraph(n_arcs + (2 if extra else 0))
    fg.add_structure(tree, np.arange(n_arcs), np.zeros((n + 1, n + 1)))
    if extra:
        fg.add_pair(0, n_arcs)
        fg.add_implication([n_arcs + 1], 1)
        fg.add_at_most_one([n_arcs, n_arcs + 1])
    return tree, fg


def _sequence_graph(n, K):
    fg = FactorGraph(n * K)
    fg.add_structure(Sequence(), np.arange(n * K), np.zeros((n, K)), np.zeros((K, K)))
    return fg


# -- one structure factor is SparseMAP -----------------------------------------

@pytest.mark.parametrize("projective,single_root", [(True, False), (False, False),
                                                    (False, True)])
def test_one_tree_factor_is_sparsemap(projective, single_root):
    rng = np.random.default_rng(0)
    n = 4
    tree, fg = _tree_graph(n, projective, single_root)
    for _ in range(3):
        scores = rng.normal(size=(n + 1, n + 1))
        ref = sparsemap(tree, scores)
        theta = tree.encode(scores).eta_u
        res = lp_sparsemap(fg, theta, **TIGHT)
        assert res.converged
        np.testing.assert_allclose(res.variables, ref.u, atol=1e-6)
        assert res.objective == pytest.approx(ref.objective, abs=1e-6)
        (dist,) = res.distributions
        np.testing.assert_allclose(dist.u, ref.u, atol=1e-6)
        assert sorted(np.round(dist.probabilities, 5)) == sorted(np.round(ref.probabilities, 5))
        # the backward pass is SparseMAP's
        g = rng.normal(size=theta.shape[0])
        d_u = g.reshape(n, n)
        full = np.zeros((n + 1, n + 1))
        for m in range(1, n + 1):
            for j in range(n):
                full[j if j < m else j + 1, m] = d_u[m - 1, j]
        (g_scores,) = sparsemap_backward(ref, full)
        g_theta, _ = lp_sparsemap_backward(res, g)
        np.testing.assert_allclose(g_theta, tree.encode(g_scores).eta_u, atol=1e-5)


def test_one_sequence_factor_is_sparsemap():
    rng = np.random.default_rng(1)
    n, K = 4, 3
    fg = _sequence_graph(n, K)
    for _ in range(3):
        unary, trans = rng.normal(size=(n, K)), rng.normal(size=(K, K))
        ref = sparsemap(Sequence(), unary, trans)
        res = lp_sparsemap(fg, unary.ravel(), trans.ravel(), **TIGHT)
        np.testing.assert_allclose(res.variables, ref.u, atol=1e-6)
        np.testing.assert_allclose(res.factors, ref.v, atol=1e-6)
        assert res.objective == pytest.approx(ref.objective, abs=1e-6)


# -- against a generic QP solver on the explicit local polytope ---------------

@pytest.mark.parametrize("kind", KINDS + ("mixed",))
def test_equals_generic_qp(kind):
    rng = np.random.default_rng(zlib.crc32(kind.encode()))
    kinds = KINDS if kind == "mixed" else (kind,)
    checked = 0
    while checked < 4:
        fg, _ = random_graph(rng, int(rng.integers(3, 7)), int(rng.integers(2, 6)), kinds)
        if fg.n_factors == 0:
            continue
        theta, fs = random_scores(rng, fg, 1.5)
        res = lp_sparsemap(fg, theta, fs, **TIGHT)
        assert res.converged
        _check_against_reference(fg, theta, fs, res)
        checked += 1


def _check_against_reference(fg, theta, fs, res):
    """Equal to the generic solver's optimum (to its accuracy, about 1e-5), never below it."""
    obj, z = lp_sparsemap_reference(fg, theta, fs)
    assert res.objective == pytest.approx(obj, abs=5e-5)
    assert res.objective >= obj - 1e-8
    np.testing.assert_allclose(res.variables, z, atol=1e-3)
    # feasible (checked by an LP on the explicit polytope) and certified by the dual
    assert in_local_polytope(fg, res.variables, res.factors)
    recomputed = theta @ res.variables + fs @ res.factors - 0.5 * res.variables @ res.variables
    assert res.objective == pytest.approx(recomputed, abs=1e-9)
    assert res.primal == res.objective
    assert res.dual == pytest.approx(res.objective, abs=1e-7)
    assert np.all((res.variables >= 0) & (res.variables <= 1))


@pytest.mark.parametrize("structure", ["tree", "sequence"])
def test_structure_factor_with_others_equals_generic_qp(structure):
    rng = np.random.default_rng(5)
    if structure == "tree":
        _, fg = _tree_graph(2, False, False, extra=True)
    else:
        fg = FactorGraph(8)
        fg.add_structure(Sequence(), np.arange(6), np.zeros((3, 2)), np.zeros((2, 2)))
        fg.add_pair(1, 6)
        fg.add_or([6, 7, 4], [False, True, False])
        fg.add_xor([2, 7])
    for _ in range(3):
        theta, fs = random_scores(rng, fg, 1.5)
        res = lp_sparsemap(fg, theta, fs, **TIGHT)
        _check_against_reference(fg, theta, fs, res)


def test_sparser_than_the_lp_and_below_it():
    """The quadratic pulls the LP's solution inside; the objective is below the LP's."""
    rng = np.random.default_rng(2)
    fg, _ = random_graph(rng, 8, 6)
    theta, fs = random_scores(rng, fg, 2.0)
    lp = ad3(fg, theta, fs, tol=1e-9, max_iter=50000)
    res = lp_sparsemap(fg, theta, fs, **TIGHT)
    assert res.objective <= lp.primal - 0.5 * 0.0 + 1e-7
    assert res.objective >= lp.primal - 0.5 * fg.n_variables - 1e-7


# -- the backward pass ------------------------------------------------------------

def _forward(fg, n):
    def f(w):
        res = lp_sparsemap(fg, w[:n], w[n:], **TIGHT)
        return np.concatenate([res.variables, res.factors])
    return f


@pytest.mark.parametrize("kind", KINDS + ("mixed", "tree", "sequence"))
def test_jvp_matches_finite_differences(kind):
    rng = np.random.default_rng(zlib.crc32(("jvp" + kind).encode()))
    if kind == "tree":
        _, fg = _tree_graph(3, False, False, extra=True)
    elif kind == "sequence":
        fg = _sequence_graph(3, 3)
        fg_extra = FactorGraph(fg.n_variables + 1)
        fg_extra.add_structure(Sequence(), np.arange(9), np.zeros((3, 3)), np.zeros((3, 3)))
        fg_extra.add_pair(4, 9)
        fg = fg_extra
    else:
        kinds = KINDS if kind == "mixed" else (kind,)
        fg = FactorGraph(1)
        while fg.n_factors < 2:
            fg, _ = random_graph(rng, 6, 5, kinds)
    n = fg.n_variables
    forward = _forward(fg, n)
    for _ in range(3):
        theta, fs = random_scores(rng, fg, 1.0)
        w = np.concatenate([theta, fs])
        res = lp_sparsemap(fg, theta, fs, **TIGHT)
        direction = rng.normal(size=w.shape[0])
        eps = 1e-6
        fd = (forward(w + eps * direction) - forward(w - eps * direction)) / (2 * eps)
        d_u, d_v = lp_sparsemap_jvp(res, direction[:n], direction[n:])
        np.testing.assert_allclose(np.concatenate([d_u, d_v]), fd, atol=2e-4)
        # backward = J^T g, checked through the symmetry <g, J d> = <J^T g, d>
        g = rng.normal(size=w.shape[0])
        g_theta, g_fs = lp_sparsemap_backward(res, g[:n], g[n:])
        assert g @ fd == pytest.approx(np.concatenate([g_theta, g_fs]) @ direction, abs=5e-4)


def test_free_and_clipped_variables():
    fg = FactorGraph(4)
    fg.add_xor([0, 1])
    res = lp_sparsemap(fg, [0.3, 0.1, 0.4, 2.0], **TIGHT)
    np.testing.assert_allclose(res.variables, [0.6, 0.4, 0.4, 1.0], atol=1e-8)
    d_u, _ = lp_sparsemap_jvp(res, [0.0, 0.0, 1.0, 1.0])
    np.testing.assert_allclose(d_u, [0.0, 0.0, 1.0, 0.0], atol=1e-8)
    empty = lp_sparsemap(FactorGraph(0), np.zeros(0))
    assert empty.variables.shape == (0,)
    assert lp_sparsemap_jvp(empty, np.zeros(0))[0].shape == (0,)


def test_redundant_factors_do_not_break_the_backward():
    """Two XORs over the same variables: the KKT system is singular, the derivative is not."""
    fg = FactorGraph(3)
    fg.add_xor([0, 1, 2])
    fg.add_xor([0, 1, 2])
    fg.add_at_most_one([0, 1, 2])
    res = lp_sparsemap(fg, [1.0, 0.8, -1.0], **TIGHT)
    np.testing.assert_allclose(res.variables, [0.6, 0.4, 0.0], atol=1e-7)
    d_u, _ = lp_sparsemap_jvp(res, [1.0, 0.0, 0.0])
    np.testing.assert_allclose(d_u, [0.5, -0.5, 0.0], atol=1e-7)


def test_extreme_scores():
    fg = FactorGraph(3)
    fg.add_xor([0, 1, 2])
    for magnitude in (1e15, 1e100, 1e300):
        res = lp_sparsemap(fg, [magnitude, -magnitude, 0.0])
        assert np.all((res.variables >= 0) & (res.variables <= 1))
        np.testing.assert_allclose(res.variables, [1.0, 0.0, 0.0], atol=1e-5)  # tol=1e-6
        assert np.isfinite(res.objective)
    # a scaled problem is the same problem: ties stay ties
    res = lp_sparsemap(fg, [1e300, 1e300, -1e300])
    np.testing.assert_allclose(res.variables, [0.5, 0.5, 0.0], atol=1e-9)


def test_warm_start_and_validation():
    rng = np.random.default_rng(4)
    fg, _ = random_graph(rng, 6, 5)
    theta, fs = random_scores(rng, fg)
    cold = lp_sparsemap(fg, theta, fs, tol=1e-8)
    warm = lp_sparsemap(fg, theta, fs, tol=1e-8, warm_start=cold)
    assert warm.n_iter < cold.n_iter
    np.testing.assert_allclose(warm.variables, cold.variables, atol=1e-6)
    assert isinstance(cold, LPSparseMAPResult) and "LPSparseMAPResult" in repr(cold)
    with pytest.raises(ValueError, match="warm_start must be a LPSparseMAPResult"):
        lp_sparsemap(fg, theta, fs, warm_start=ad3(fg, theta, fs))
    with pytest.raises(ValueError, match="variable_scores must have shape"):
        lp_sparsemap(fg, theta[:-1], fs)
    with pytest.raises(ValueError, match="not finite"):
        lp_sparsemap(fg, np.full_like(theta, np.nan), fs)
    with pytest.raises(ValueError, match="lp_sparsemap: tol must be finite and > 0, got 0"):
        lp_sparsemap(fg, theta, fs, tol=0)
    with pytest.raises(ValueError, match="result must be an LPSparseMAPResult"):
        lp_sparsemap_jvp(ad3(fg, theta, fs), theta)
    with pytest.raises(ValueError, match="d_variable_scores must have shape"):
        lp_sparsemap_jvp(cold, theta[:-1])
    with pytest.raises(ValueError, match="d_factors must be finite"):
        lp_sparsemap_backward(cold, theta, np.full(fg.n_factor_scores, np.inf))


def test_gap_tolerance_stops_early_and_close():
    rng = np.random.default_rng(8)
    fg, _ = random_graph(rng, 10, 10)
    theta, fs = random_scores(rng, fg, 2.0)
    tight = lp_sparsemap(fg, theta, fs, **TIGHT)
    loose = lp_sparsemap(fg, theta, fs, tol=1e-12, max_iter=200000, gap_tol=1e-3)
    assert loose.converged and loose.n_iter < tight.n_iter
    assert loose.n_iter % 50 == 0
    assert abs(loose.objective - tight.objective) <= 2e-3 * max(1.0, abs(tight.objective))
    with pytest.raises(ValueError, match="lp_sparsemap: gap_tol must be finite and > 0"):
        lp_sparsemap(fg, theta, fs, gap_tol=-1.0)
