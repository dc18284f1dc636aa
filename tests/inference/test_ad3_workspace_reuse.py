"""The solver's workspaces are kept with the compiled graph and reused between solves.

Reuse must be invisible: every solve gives, to the last bit, what a solve
with freshly allocated workspaces gives, whatever ran on the graph before
(other scores, a support that outgrew the arrays, a failed solve), and
solves on one graph from several threads do not share a workspace.
"""

import threading

import numpy as np
import pytest

from sksparse_struct.inference import FactorGraph, ad3, ad3_map, lp_sparsemap
from sksparse_struct.inference._ad3 import evaluate
from sksparse_struct.parsing._second_order import build_graph
from sksparse_struct.structures import DependencyTree


def _fresh(graph):
    """The graph's compiled form with its idle workspaces dropped (the next solve allocates)."""
    cg = graph.compile()
    cg.workspaces.clear()
    return cg


def _second_order(n, seed, projective=True):
    rng = np.random.default_rng(seed)
    cand = rng.random((n + 1, n + 1)) < 0.5
    cand[np.arange(n), np.arange(1, n + 1)] = True
    return build_graph(n, cand, projective=projective)


def _scores(sog, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=sog.n * sog.n), rng.normal(size=sog.n_factor_scores) * 0.3


def _same(a, b):
    np.testing.assert_array_equal(a.variables, b.variables)
    np.testing.assert_array_equal(a.factors, b.factors)
    assert (a.n_iter, a.converged, a.eta) == (b.n_iter, b.converged, b.eta)
    assert a.primal == b.primal and a.dual == b.dual
    assert (a.primal_residual, a.dual_residual) == (b.primal_residual, b.dual_residual)


def test_workspace_kept_and_reused():
    sog = _second_order(8, 0)
    theta, phi = _scores(sog, 1)
    cg = _fresh(sog.graph)
    ad3(sog.graph, theta, phi, max_iter=20)
    assert len(cg.workspaces) == 1
    workspace = cg.workspaces[0]
    ad3(sog.graph, theta, phi, max_iter=20)
    assert cg.workspaces == [workspace]
    # A new structure invalidates the compiled graph, and with it the pool.
    sog.graph.add_xor([0, 1])
    assert sog.graph.compile().workspaces == []


@pytest.mark.parametrize("projective", [True, False])
def test_repeated_solves_bit_identical(projective):
    sog = _second_order(10, 2, projective)
    other = _second_order(10, 2, projective)  # the same graph, its own pool
    for seed in range(4):
        theta, phi = _scores(sog, 10 + seed)
        for max_iter in (1, 7, 300):
            _fresh(other.graph)
            expected = ad3(other.graph, theta, phi, max_iter=max_iter, tol=1e-9)
            got = ad3(sog.graph, theta, phi, max_iter=max_iter, tol=1e-9)
            _same(got, expected)
    assert len(sog.graph.compile().workspaces) == 1


def test_reuse_after_support_growth():
    # A tree factor over many words: its active set outgrows the 16 rows a
    # workspace starts with, and the grown arrays are kept.
    n = 25
    rng = np.random.default_rng(3)
    fg = FactorGraph(n * n)
    fg.add_structure(DependencyTree(), np.arange(n * n), np.zeros((n + 1, n + 1)))
    twin = FactorGraph(n * n)
    twin.add_structure(DependencyTree(), np.arange(n * n), np.zeros((n + 1, n + 1)))
    ad3(fg, rng.normal(size=n * n) * 0.01, max_iter=200)
    assert fg.compile().workspaces[0].structs.struct_ws[0][0].shape[0] > 16
    for _ in range(3):
        theta = rng.normal(size=n * n)
        _fresh(twin)
        _same(ad3(fg, theta, max_iter=50), ad3(twin, theta, max_iter=50))


def test_workspace_returned_after_failed_solve():
    # A structure factor without any structure of finite score: the solve
    # raises, its workspace goes back to the pool, and the next solve raises
    # the same.
    n = 3
    fg = FactorGraph(n * n)
    fg.add_structure(DependencyTree(), np.arange(n * n), np.zeros((n + 1, n + 1)))
    fg.add_structure(DependencyTree(), np.arange(n * n), np.full((n + 1, n + 1), -np.inf))
    for _ in range(2):
        with pytest.raises(ValueError, match="no structure of finite score"):
            ad3(fg, np.zeros(n * n))
        assert len(fg.compile().workspaces) == 1


def test_warm_start_unchanged():
    # A warm start carries the state (multipliers, copies), never the
    # structure factors' supports: a reused workspace starts from the MAP as
    # a fresh one does.
    sog = _second_order(9, 4)
    other = _second_order(9, 4)
    theta, phi = _scores(sog, 5)
    start = ad3(sog.graph, theta, phi, max_iter=15)
    theta2, phi2 = _scores(sog, 6)
    _fresh(other.graph)
    expected = ad3(other.graph, theta2, phi2, warm_start=start, max_iter=40)
    got = ad3(sog.graph, theta2, phi2, warm_start=start, max_iter=40)
    _same(got, expected)
    # ... and whether the workspace was used since does not matter.
    ad3(sog.graph, theta, phi, max_iter=3)
    _same(ad3(sog.graph, theta2, phi2, warm_start=start, max_iter=40), expected)


def test_lp_sparsemap_ad3_map_and_evaluate_repeat():
    sog = _second_order(7, 7)
    other = _second_order(7, 7)
    theta, phi = _scores(sog, 8)
    for _ in range(2):
        _fresh(other.graph)
        a = lp_sparsemap(sog.graph, theta, phi, max_iter=60)
        b = lp_sparsemap(other.graph, theta, phi, max_iter=60)
        np.testing.assert_array_equal(a.variables, b.variables)
        np.testing.assert_array_equal(a.factors, b.factors)
        assert a.objective == b.objective and a.n_iter == b.n_iter
        _fresh(other.graph)
        a = ad3_map(sog.graph, theta, phi, max_nodes=6)
        b = ad3_map(other.graph, theta, phi, max_nodes=6)
        np.testing.assert_array_equal(a.variables, b.variables)
        assert (a.objective, a.optimal, a.n_nodes) == (b.objective, b.optimal, b.n_nodes)
        cg = sog.graph.compile()
        x = a.variables.astype(np.int64)
        assert evaluate(cg, theta, phi, x)[:2] == evaluate(_fresh(other.graph), theta, phi, x)[:2]


def test_threads_do_not_share_a_workspace():
    sog = _second_order(10, 9)
    problems = [_scores(sog, 20 + i) for i in range(6)]
    expected = [ad3(sog.graph, th, ph, max_iter=200) for th, ph in problems]
    results = {}

    def work(t):
        for rep in range(3):
            for i, (th, ph) in enumerate(problems):
                results[t, rep, i] = ad3(sog.graph, th, ph, max_iter=200)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for (_, _, i), res in results.items():
        _same(res, expected[i])
    assert 1 <= len(sog.graph.compile().workspaces) <= 3
