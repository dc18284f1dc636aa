"""AD3's residuals, its branch-and-bound with cut-short node solves, and extreme scores.

Each test here catches a bug the rest of the suite would miss: the dual
residual computed without the variables' degrees (only LP values were
compared with HiGHS), branch-and-bound pruning on the primal value instead of
the dual bound (invisible while node LPs are solved tightly), and scores so
large that sums lose their last units.
"""

import numpy as np
import pytest

from sksparse_struct.inference import FactorGraph, ad3, ad3_map, highs_lp, milp_map

from ._factor_graphs import brute_force, random_graph, random_scores


def _simplex_projection(z):
    """Euclidean projection onto the probability simplex (sort-based, written out)."""
    s = np.sort(z)[::-1]
    cssv = np.cumsum(s) - 1.0
    k = np.arange(1, z.size + 1)
    rho = np.nonzero(s - cssv / k > 0)[0][-1]
    return np.maximum(z - cssv[rho] / (rho + 1), 0.0)


def test_residuals_of_one_iteration_by_hand():
    # Variable 0 is in two factors (degree 2), variable 1 in one.
    fg = FactorGraph(2)
    fg.add_xor([0, 1])
    fg.add_at_most_one([0])
    theta = np.array([1.0, 0.0])
    res = ad3(fg, theta, eta=0.5, adaptive_eta=False, max_iter=1)  # rho = 2 * eta = 1
    # By hand: u starts at 1/2, the multipliers at 0; each copy's target is
    # u + theta / deg / rho.
    u0 = np.array([0.5, 0.5])
    deg = np.array([2, 1])
    share = theta / deg
    q_xor = _simplex_projection(u0 + share)  # slots (0, 1)
    q_amo = np.clip(u0[0] + share[0], 0, 1)  # slot (0,), alone: the box
    u = np.array([(q_xor[0] + q_amo) / 2, q_xor[1]])
    copies = np.array([q_xor[0] - u[0], q_xor[1] - u[1], q_amo - u[0]])
    primal = np.sqrt(np.mean(copies ** 2))
    dual = np.sqrt(np.sum(deg * (u - u0) ** 2) / 3)  # weighted by the degrees
    np.testing.assert_allclose(res.variables, u, rtol=1e-15)
    assert res.primal_residual == pytest.approx(primal, rel=1e-13)
    assert res.dual_residual == pytest.approx(dual, rel=1e-13)
    # Unweighted, the dual residual would be different: the test can fail.
    assert dual != pytest.approx(np.sqrt(np.sum((u - u0) ** 2) / 3), rel=1e-3)


@pytest.mark.parametrize("node_iter", [1, 2, 3])
def test_ad3_map_exact_with_cut_short_node_solves(node_iter):
    # With one to three AD3 iterations per node the LPs are far from solved:
    # only a valid bound (the dual value) keeps the search exact.
    rng = np.random.default_rng(node_iter)
    n_checked = 0
    for _ in range(40):
        fg, _ = random_graph(rng, int(rng.integers(3, 8)), int(rng.integers(2, 7)))
        theta, fs = random_scores(rng, fg, 2.0)
        best, _ = brute_force(fg, theta, fs)
        res = ad3_map(fg, theta, fs, max_iter=node_iter, max_nodes=100000)
        assert res.optimal
        assert res.objective == pytest.approx(best, abs=1e-9)
        n_checked += 1
    assert n_checked == 40


@pytest.mark.parametrize("magnitude", [1e15, 1e100, 1e300])
def test_xor_at_extreme_scores(magnitude):
    fg = FactorGraph(3)
    fg.add_xor([0, 1, 2])
    theta = np.array([magnitude, -magnitude, 0.5 * magnitude])
    res = ad3(fg, theta)
    assert np.all(res.variables >= 0) and np.all(res.variables <= 1)
    np.testing.assert_array_equal(res.variables, [1.0, 0.0, 0.0])
    assert res.primal == magnitude and np.isfinite(res.dual)
    assert ad3_map(fg, theta).objective == magnitude
    assert highs_lp(fg, theta).variables.tolist() == [1.0, 0.0, 0.0]
    assert milp_map(fg, theta).objective == pytest.approx(magnitude)


def test_near_ties_at_large_magnitude_stay_on_the_simplex():
    # Entries within a few units of each other at 1e15: the sum passes 2**53.
    fg = FactorGraph(4)
    fg.add_xor([0, 1, 2, 3])
    theta = 1e15 + np.array([0.0, 0.25, 0.5, 8.0])
    res = ad3(fg, theta, max_iter=20000)
    assert np.all(res.variables >= 0) and np.all(res.variables <= 1)
    assert res.variables.sum() == pytest.approx(1.0, abs=1e-9)
    assert res.variables.argmax() == 3


def test_overflowing_objective_is_a_clear_error():
    fg = FactorGraph(4)
    theta = np.full(4, 1.5e308)  # the best assignment takes all four: 6e308
    with pytest.raises(ValueError, match="objective overflows"):
        ad3(fg, theta)


def test_random_graphs_at_huge_scale_match_unit_scale():
    # The LP's solution does not change when every score is multiplied by
    # the same power of two; the objective scales with it.
    rng = np.random.default_rng(5)
    for _ in range(10):
        fg, _ = random_graph(rng, 6, 5)
        theta, fs = random_scores(rng, fg)
        small = ad3(fg, theta, fs, tol=1e-9, max_iter=20000)
        big = ad3(fg, theta * 2.0 ** 900, fs * 2.0 ** 900, tol=1e-9, max_iter=20000)
        np.testing.assert_allclose(big.variables, small.variables, atol=1e-6)
        assert big.primal / 2.0 ** 900 == pytest.approx(small.primal, rel=1e-6, abs=1e-9)


def test_dense_factor_with_many_configurations_needs_no_square_memory():
    # 2**14 configurations: a Gram matrix would take 2 GB; the "on" lists
    # take a few hundred kB.
    import tracemalloc

    a = 14
    configs = ((np.arange(2 ** a)[:, None] >> np.arange(a)) & 1).astype(np.uint8)
    rng = np.random.default_rng(0)
    fg = FactorGraph(a)
    fg.add_dense(np.arange(a), configs)
    theta = rng.normal(size=a)
    fs = rng.normal(size=2 ** a)
    tracemalloc.start()
    res = ad3(fg, theta, fs, max_iter=200)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 50e6
    best = configs @ theta + fs
    assert res.dual >= best.max() - 1e-6
