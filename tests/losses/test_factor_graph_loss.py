"""The structured losses over factor graphs: gradients, values against an explicit LP, signs,
and the one-structure case."""

import numpy as np
import pytest

from sksparse_struct.inference import FactorGraph, highs_lp
from sksparse_struct.losses import factor_graph_loss, structured_loss
from sksparse_struct.structures import DependencyTree, Sequence

from ..inference._factor_graphs import random_graph, random_scores

TIGHT = {"tol": 1e-11, "max_iter": 200000}


def _graph_and_gold(seed):
    rng = np.random.default_rng(seed)
    fg, x = random_graph(rng, 6, 5, max_arity=3)
    # the gold's additional marginals: pair factors x AND y, dense factors their configuration
    y_v = np.zeros(fg.n_factor_scores)
    from sksparse_struct.inference._ad3_fast import DENSE, PAIR

    for kind, V, neg, offsets, table in fg._blocks:
        for r in range(V.shape[0]):
            if kind == PAIR:
                y_v[offsets[r]] = x[V[r, 0]] * x[V[r, 1]]
            elif kind == DENSE:
                C, forbidden = fg._tables[table], fg._masks[table]
                c = [c for c in range(C.shape[0])
                     if not forbidden[c] and np.array_equal(C[c], x[V[r]])][0]
                y_v[offsets[r] + c] = 1.0
    return rng, fg, x.astype(float), y_v


@pytest.mark.parametrize("loss", ["sparsemap", "margin_sparsemap"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gradient_matches_finite_differences(loss, seed):
    rng, fg, y_u, y_v = _graph_and_gold(seed)
    theta, fs = random_scores(rng, fg)
    cost = rng.uniform(0.5, 2.0, fg.n_variables) if loss == "margin_sparsemap" else None
    out = factor_graph_loss(fg, theta, fs, y_u, y_v, loss=loss, cost=cost, **TIGHT)
    assert out.value >= 0.0
    eps = 1e-6
    for _ in range(3):
        d_t, d_f = rng.normal(size=theta.shape), rng.normal(size=fs.shape)
        plus = factor_graph_loss(fg, theta + eps * d_t, fs + eps * d_f, y_u, y_v, loss=loss,
                                 cost=cost, **TIGHT).value
        minus = factor_graph_loss(fg, theta - eps * d_t, fs - eps * d_f, y_u, y_v, loss=loss,
                                  cost=cost, **TIGHT).value
        fd = (plus - minus) / (2 * eps)
        grad = out.grad_variable_scores @ d_t + out.grad_factor_scores @ d_f
        assert grad == pytest.approx(fd, abs=1e-5)


@pytest.mark.parametrize("loss", ["hinge", "perceptron"])
@pytest.mark.parametrize("seed", [0, 1, 2, 4])
def test_lp_map_losses_against_an_explicit_lp(loss, seed):
    # The value is the LP's optimum (HiGHS on the explicit local polytope)
    # with the cost folded into the scores; the gradient is u* - y, which
    # finite differences confirm (the value is piecewise linear).
    rng, fg, y_u, y_v = _graph_and_gold(seed)
    theta, fs = random_scores(rng, fg)
    cost = rng.uniform(0.5, 2.0, fg.n_variables) if loss == "hinge" else None
    out = factor_graph_loss(fg, theta, fs, y_u, y_v, loss=loss, cost=cost, tol=1e-9,
                            max_iter=100000)
    inner = theta + (cost * (1.0 - 2.0 * y_u) if loss == "hinge" else 0.0)
    offset = float(cost @ y_u) if loss == "hinge" else 0.0
    reference = highs_lp(fg, inner, fs).primal + offset - (theta @ y_u + fs @ y_v)
    assert out.value == pytest.approx(max(reference, 0.0), abs=1e-6)
    assert out.value >= 0.0
    eps = 1e-7
    d_t, d_f = rng.normal(size=theta.shape), rng.normal(size=fs.shape)
    values = [highs_lp(fg, inner + sign * eps * d_t, fs + sign * eps * d_f).primal
              for sign in (1, -1)]
    fd = (values[0] - values[1]) / (2 * eps) - (d_t @ y_u + d_f @ y_v)
    grad = out.grad_variable_scores @ d_t + out.grad_factor_scores @ d_f
    assert grad == pytest.approx(fd, abs=1e-4)


def test_zero_when_the_gold_wins_by_a_margin():
    _, fg, y_u, y_v = _graph_and_gold(3)
    theta = 50.0 * (2.0 * y_u - 1.0)
    fs = 50.0 * (2.0 * y_v - 1.0)
    for loss in ("hinge", "perceptron", "sparsemap", "margin_sparsemap"):
        out = factor_graph_loss(fg, theta, fs, y_u, y_v, loss=loss, tol=1e-9)
        assert out.value == pytest.approx(0.0, abs=1e-6)
        np.testing.assert_allclose(out.grad_variable_scores, 0.0, atol=1e-6)


@pytest.mark.parametrize("loss", ["hinge", "perceptron", "sparsemap", "margin_sparsemap"])
def test_one_structure_factor_is_the_structured_loss(loss):
    rng = np.random.default_rng(7)
    n, K = 4, 3
    fg = FactorGraph(n * K)
    fg.add_structure(Sequence(), np.arange(n * K), np.zeros((n, K)), np.zeros((K, K)))
    unary, trans = rng.normal(size=(n, K)), rng.normal(size=(K, K))
    y = np.array([0, 2, 2, 1])
    parts = Sequence().encode(unary, trans)
    m, h = Sequence().indicators(y, parts)
    # structured_loss's Hamming cost is 1 - m_y per unary part: weights 1 on the
    # parts the gold does not use, 0 on the ones it does, i.e. c (1 - 2 y) = 1 - y.
    cost = 1.0 - m
    ref_value, grads = structured_loss(Sequence(), unary, trans, y=y, loss=loss)
    g_unary, g_trans = grads[0], grads[1]
    out = factor_graph_loss(fg, unary.ravel(), trans.ravel(), m, h, loss=loss,
                            cost=cost if loss in ("hinge", "margin_sparsemap") else None,
                            **TIGHT)
    assert out.value == pytest.approx(ref_value, abs=1e-6)
    np.testing.assert_allclose(out.grad_variable_scores, g_unary.ravel(), atol=1e-6)
    np.testing.assert_allclose(out.grad_factor_scores, g_trans.ravel(), atol=1e-6)


def test_tree_fixed_scores_count_on_both_sides():
    tree = DependencyTree()
    n = 3
    fg = FactorGraph(n * n)
    fixed = np.zeros((n + 1, n + 1))
    fixed[0, 1] = -np.inf  # word 1 may not attach to the root
    fixed[2, 3] = 0.7
    fg.add_structure(tree, np.arange(n * n), fixed)
    heads = np.array([-1, 2, 0, 2])
    m, _ = tree.indicators(heads, tree.encode(fixed))
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(n + 1, n + 1))
    theta = tree.encode(scores).eta_u
    value, _ = structured_loss(tree, scores + np.where(np.isfinite(fixed), fixed, 0.0)
                               + np.where(np.isfinite(fixed), 0.0, -np.inf), y=heads,
                               loss="sparsemap")
    out = factor_graph_loss(fg, theta, None, m, **TIGHT)
    assert out.value == pytest.approx(value, abs=1e-6)


def test_validation():
    fg = FactorGraph(3)
    fg.add_xor([0, 1, 2])
    fg.add_pair(0, 1)
    theta, fs, y = np.zeros(3), np.zeros(1), np.array([1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="loss must be one of"):
        factor_graph_loss(fg, theta, fs, y, [0.0], loss="crf")
    with pytest.raises(ValueError, match="pass y_factors"):
        factor_graph_loss(fg, theta, fs, y)
    with pytest.raises(ValueError, match="y_variables must have shape"):
        factor_graph_loss(fg, theta, fs, y[:2], [0.0])
    for loss in ("hinge", "margin_sparsemap"):
        with pytest.raises(ValueError, match=f"loss='{loss}', y_variables must be 0/1"):
            factor_graph_loss(fg, theta, fs, [0.5, 0.5, 0.0], [0.0], loss=loss)
    for loss in ("perceptron", "sparsemap"):
        with pytest.raises(ValueError, match="cost is for loss='hinge' or 'margin_sparsemap'"):
            factor_graph_loss(fg, theta, fs, y, [0.0], loss=loss, cost=np.ones(3))
    with pytest.raises(ValueError, match="cost must be non-negative"):
        factor_graph_loss(fg, theta, fs, y, [0.0], loss="margin_sparsemap", cost=-np.ones(3))
    with pytest.raises(ValueError, match="graph must be a FactorGraph"):
        factor_graph_loss("graph", theta, fs, y, [0.0])
