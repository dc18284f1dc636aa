"""AD3, its branch-and-bound and the HiGHS programs against independent references."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from sksparse_struct.inference import (
    AD3Result,
    FactorGraph,
    ad3,
    ad3_map,
    highs_lp,
    milp_map,
)
from sksparse_struct.inference._ad3 import evaluate
from sksparse_struct.inference._ad3_fast import Context, _work, local_step, pair_qp
from sksparse_struct.structures import DependencyTree

from ._factor_graphs import KINDS, brute_force, random_graph, random_scores


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


# -- the LP relaxation against HiGHS ------------------------------------------

@pytest.mark.parametrize("kind", KINDS + ("all",))
def test_lp_value_equals_highs(kind):
    rng = np.random.default_rng(hash(kind) % 2**32)
    kinds = KINDS if kind == "all" else (kind, "pair")
    for _ in range(15):
        fg, _ = random_graph(rng, int(rng.integers(3, 12)), int(rng.integers(2, 15)), kinds)
        theta, fs = random_scores(rng, fg)
        res = ad3(fg, theta, fs, tol=1e-8, max_iter=20000)
        ref = highs_lp(fg, theta, fs)
        assert res.converged
        assert _rel(res.primal, ref.primal) < 1e-6
        # the dual is an upper bound, tight at convergence
        assert res.dual >= ref.primal - 1e-6 * max(1, abs(ref.primal))
        assert _rel(res.dual, ref.primal) < 1e-5


def test_gap_tolerance_stops_early_and_close():
    rng = np.random.default_rng(10)
    for _ in range(10):
        fg, _ = random_graph(rng, 12, 20)
        theta, fs = random_scores(rng, fg)
        res = ad3(fg, theta, fs, gap_tol=1e-4)
        full = ad3(fg, theta, fs)
        assert res.converged and res.n_iter <= full.n_iter
        assert _rel(res.primal, highs_lp(fg, theta, fs).primal) < 1e-3
    with pytest.raises(ValueError, match="gap_tol"):
        ad3(fg, theta, fs, gap_tol=0)


def test_lp_default_tolerance_close():
    rng = np.random.default_rng(1)
    for _ in range(10):
        fg, _ = random_graph(rng, 10, 15)
        theta, fs = random_scores(rng, fg)
        res = ad3(fg, theta, fs)
        assert res.converged
        assert _rel(res.primal, highs_lp(fg, theta, fs).primal) < 1e-4


# -- exact MAP ----------------------------------------------------------------

def test_map_equals_brute_force():
    rng = np.random.default_rng(2)
    for _ in range(40):
        fg, _ = random_graph(rng, int(rng.integers(2, 10)), int(rng.integers(1, 14)))
        theta, fs = random_scores(rng, fg)
        best, _ = brute_force(fg, theta, fs)
        res = ad3_map(fg, theta, fs)
        assert res.optimal
        assert res.objective == pytest.approx(best, abs=1e-8)
        ok, val, add = evaluate(fg.compile(), theta, fs, res.variables.astype(np.int64))
        assert ok and val == pytest.approx(res.objective)
        np.testing.assert_array_equal(add, res.factors)
        assert milp_map(fg, theta, fs).objective == pytest.approx(best, abs=1e-8)


def test_map_equals_milp_on_larger_graphs():
    rng = np.random.default_rng(3)
    for _ in range(5):
        fg, _ = random_graph(rng, 40, 80)
        theta, fs = random_scores(rng, fg)
        res = ad3_map(fg, theta, fs)
        ref = milp_map(fg, theta, fs)
        assert res.optimal and ref.optimal
        assert res.objective == pytest.approx(ref.objective, rel=1e-6, abs=1e-6)


def test_map_warm_start_and_incumbent():
    # From the root LP already solved and with a known assignment, the search
    # still ends at the brute-force optimum, and never returns worse than
    # the incumbent when cut short.
    rng = np.random.default_rng(21)
    n_checked = 0
    for _ in range(40):
        fg, _ = random_graph(rng, int(rng.integers(3, 10)), int(rng.integers(2, 14)))
        theta, fs = random_scores(rng, fg)
        best, best_x = brute_force(fg, theta, fs)
        if best_x is None:  # no feasible assignment
            continue
        root = ad3(fg, theta, fs, tol=1e-8, max_iter=20000)
        warm = ad3_map(fg, theta, fs, warm_start=root)
        assert warm.optimal and warm.objective == pytest.approx(best, abs=1e-8)
        # Every feasible assignment of the graph as the incumbent.
        cg = fg.compile()
        for bits in itertools.islice(itertools.product((0, 1), repeat=fg.n_variables), 64):
            x = np.array(bits, dtype=np.int64)
            ok, val, _ = evaluate(cg, np.asarray(theta, dtype=float), np.asarray(fs), x)
            if not ok:
                continue
            n_checked += 1
            res = ad3_map(fg, theta, fs, warm_start=root, incumbent=x)
            assert res.optimal and res.objective == pytest.approx(best, abs=1e-8)
            cut = ad3_map(fg, theta, fs, incumbent=x, max_nodes=1)
            assert cut.objective >= val - 1e-12
            ok_cut, val_cut, _ = evaluate(cg, np.asarray(theta, dtype=float), np.asarray(fs),
                                          cut.variables.astype(np.int64))
            assert ok_cut and val_cut == pytest.approx(cut.objective)
    assert n_checked > 50


def test_map_warm_start_and_incumbent_validation():
    fg = FactorGraph(3)
    fg.add_xor([0, 1, 2])
    theta = np.array([0.1, 0.5, 0.2])
    with pytest.raises(ValueError, match="incumbent violates"):
        ad3_map(fg, theta, incumbent=[1, 1, 0])
    with pytest.raises(ValueError, match="0/1 assignment"):
        ad3_map(fg, theta, incumbent=[0.5, 0.5, 0])
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        ad3_map(fg, theta, incumbent=[1, 0])
    with pytest.raises(ValueError, match="AD3Result returned by ad3"):
        ad3_map(fg, theta, warm_start="root")
    other = FactorGraph(2)
    other.add_xor([0, 1])
    with pytest.raises(ValueError, match="different factor graph"):
        ad3_map(fg, theta, warm_start=ad3(other, [0.0, 1.0]))
    res = ad3_map(fg, theta, incumbent=[0, 1, 0], max_nodes=1)
    assert res.variables.tolist() == [0.0, 1.0, 0.0]


def test_map_infeasible_graph():
    fg = FactorGraph(2)
    fg.add_xor([0, 1])
    fg.add_or([0, 1], [True, True])  # not both ...
    fg.add_at_most_one([0, 1])
    fg.add_or([0, 1])  # ... fine so far; now forbid each alone:
    fg.add_or([0], [True])
    fg.add_or([1], [True])
    with pytest.raises(ValueError, match="no assignment"):
        ad3_map(fg, np.zeros(2))
    with pytest.raises(ValueError, match="no assignment"):
        milp_map(fg, np.zeros(2))
    with pytest.raises(ValueError, match="infeasible"):
        highs_lp(fg, np.zeros(2))


# -- the local QPs against a generic solver -----------------------------------

def _local_solution(fg, z, fs):
    """Run the compiled local step once with u = z, no multipliers, rho = 1."""
    cg = fg.compile()
    n_slots = cg.slot_var.shape[0]
    q = np.zeros(n_slots)
    add = np.zeros(cg.n_scores)
    ctx = Context(cg.arrays, cg.dense, cg.structs, _work(cg.arrays, cg.dense, cg.structs, add))
    local_step(ctx, np.zeros(cg.n_variables), np.asarray(z, float), np.zeros(n_slots), 1.0,
               np.asarray(fs, float), q, add, np.ones(cg.f_type.shape[0], bool),
               np.ones(cg.n_variables, bool), True)
    return q, add


def _slsqp(fun, x0, bounds, cons):
    res = minimize(fun, x0, method="SLSQP", bounds=bounds, constraints=cons,
                   options={"ftol": 1e-14, "maxiter": 500})
    return res.fun


@pytest.mark.parametrize("kind", ["xor", "at_most_one", "or"])
def test_logic_projections_against_slsqp(kind):
    rng = np.random.default_rng(4)
    for _ in range(20):
        n = int(rng.integers(1, 6))
        z = rng.normal(0.5, 0.8, n)
        fg = FactorGraph(n)
        neg = rng.integers(0, 2, n).astype(bool)
        if kind == "xor":
            fg.add_xor(range(n))
            cons = [{"type": "eq", "fun": lambda q: q.sum() - 1}]
        elif kind == "at_most_one":
            fg.add_at_most_one(range(n))
            cons = [{"type": "ineq", "fun": lambda q: 1 - q.sum()}]
        else:
            fg.add_or(range(n), neg)
            cons = [{"type": "ineq",
                     "fun": lambda q, neg=neg: np.where(neg, 1 - q, q).sum() - 1}]
        q, _ = _local_solution(fg, z, [])

        def fun(x, z=z):
            return 0.5 * np.sum((x - z) ** 2)

        ref = _slsqp(fun, np.full(n, 1.0 / n), [(0, 1)] * n, cons)
        assert fun(q) == pytest.approx(ref, abs=1e-7)
        assert all(c["fun"](q) >= -1e-12 for c in cons if c["type"] == "ineq")


def test_pair_qp_against_slsqp():
    rng = np.random.default_rng(5)
    for _ in range(200):
        a, b = rng.normal(0.5, 1.0, 2)
        s = rng.normal(0, 1.5)
        x, y, m = pair_qp(a, b, s)
        assert max(0, x + y - 1) - 1e-12 <= m <= min(x, y) + 1e-12

        def fun(v, a=a, b=b, s=s):
            return 0.5 * (v[0] - a) ** 2 + 0.5 * (v[1] - b) ** 2 - s * v[2]

        cons = [{"type": "ineq", "fun": lambda v: v[0] - v[2]},
                {"type": "ineq", "fun": lambda v: v[1] - v[2]},
                {"type": "ineq", "fun": lambda v: v[2] - v[0] - v[1] + 1}]
        ref = _slsqp(fun, np.array([0.5, 0.5, 0.25]), [(0, 1)] * 3, cons)
        assert fun((x, y, m)) <= ref + 1e-7


def test_dense_qp_against_slsqp():
    rng = np.random.default_rng(6)
    for _ in range(30):
        n = int(rng.integers(2, 5))
        allc = np.array(list(itertools.product([0, 1], repeat=n)))
        C = allc[rng.random(len(allc)) < 0.7]
        if C.shape[0] == 0:
            C = allc[:1]
        fg = FactorGraph(n)
        fg.add_dense(range(n), C)
        z = rng.normal(0.5, 1.0, n)
        s = rng.normal(0, 1.0, C.shape[0])
        q, p = _local_solution(fg, z, s)
        np.testing.assert_allclose(q, C.T @ p, atol=1e-10)
        assert p.min() >= 0 and p.sum() == pytest.approx(1.0)

        def fun(pp, C=C, z=z, s=s):
            return 0.5 * np.sum((C.T @ pp - z) ** 2) - s @ pp

        ref = _slsqp(fun, np.full(C.shape[0], 1.0 / C.shape[0]), [(0, 1)] * C.shape[0],
                     [{"type": "eq", "fun": lambda pp: pp.sum() - 1}])
        assert fun(p) <= ref + 1e-7


def test_compat_shaped_dense_factor():
    # one-of-K x one-of-K x binary, as in argument mining: many dependent configurations
    K = 4
    C = np.zeros((K * K * 2, 2 * K + 1), dtype=int)
    for c, (i, j, r) in enumerate(itertools.product(range(K), range(K), range(2))):
        C[c, i] = C[c, K + j] = 1
        C[c, 2 * K] = r
    rng = np.random.default_rng(7)
    for _ in range(10):
        fg = FactorGraph(2 * K + 1)
        fg.add_dense(range(2 * K + 1), C)
        theta, fs = rng.normal(size=2 * K + 1), rng.normal(size=C.shape[0])
        res = ad3(fg, theta, fs, tol=1e-9, max_iter=50000)
        assert _rel(res.primal, highs_lp(fg, theta, fs).primal) < 1e-6
        assert ad3_map(fg, theta, fs).objective == pytest.approx(
            milp_map(fg, theta, fs).objective)


# -- structure factors --------------------------------------------------------

def _tree_graph(rng, n, single_root):
    """A tree factor over n words, plus a dense factor and pairs on its arc variables."""
    n_arcs = n * n
    fg = FactorGraph(n_arcs + 2)
    fg.add_structure(DependencyTree(single_root=single_root), np.arange(n_arcs),
                     np.zeros((n + 1, n + 1)))
    arcs = rng.choice(n_arcs, 2, replace=False)
    fg.add_dense([arcs[0], n_arcs], [[0, 0], [1, 1], [0, 1]])
    fg.add_pair(arcs[1], n_arcs + 1)
    fg.add_implication([n_arcs], n_arcs + 1)
    return fg


@pytest.mark.parametrize("single_root", [False, True])
def test_tree_factor_lp_and_map(single_root):
    rng = np.random.default_rng(8)
    for n in (2, 3):
        fg = _tree_graph(rng, n, single_root)
        for _ in range(3):
            theta, fs = random_scores(rng, fg, 1.5)
            res = ad3(fg, theta, fs, tol=1e-8, max_iter=20000)
            ref = highs_lp(fg, theta, fs)
            assert _rel(res.primal, ref.primal) < 1e-6
            best, _ = brute_force(fg, theta, fs)
            assert ad3_map(fg, theta, fs).objective == pytest.approx(best, abs=1e-8)
            assert milp_map(fg, theta, fs).objective == pytest.approx(best, abs=1e-8)


def test_tree_factor_forbidden_parts():
    n = 3
    scores = np.zeros((n + 1, n + 1))
    scores[0, 2] = -np.inf  # the root may not head word 2
    fg = FactorGraph(n * n)
    fg.add_structure(DependencyTree(single_root=False), np.arange(n * n), scores)
    theta = np.zeros(n * n)
    theta[n] = 5.0  # part (2 - 1) * n + 0: the arc 0 -> 2, forbidden
    res = ad3_map(fg, theta)
    assert res.variables[n] == 0
    assert res.objective == pytest.approx(milp_map(fg, theta).objective)
    assert ad3(fg, theta).primal == pytest.approx(highs_lp(fg, theta).primal, abs=1e-5)


def test_structures_without_compiled_oracle_are_refused():
    from sksparse_struct.structures import XOR

    fg = FactorGraph(3)
    with pytest.raises(ValueError, match="no compiled MAP oracle.*add_xor"):
        fg.add_structure(XOR(), [0, 1, 2], np.zeros(3))


def test_sequence_factor_lp_and_map():
    """A Sequence factor (Viterbi compiled in the loop) against HiGHS and brute force."""
    from sksparse_struct.structures import Sequence

    rng = np.random.default_rng(3)
    n, K = 3, 2
    fg = FactorGraph(n * K + 1)
    fg.add_structure(Sequence(), np.arange(n * K), np.zeros((n, K)), np.zeros((K, K)))
    fg.add_pair(0, n * K)
    fg.add_implication([n * K], 3)
    for _ in range(3):
        theta, fs = random_scores(rng, fg, 1.5)
        fs = np.concatenate([rng.normal(size=K * K), fs[K * K:]])
        trans = fs[:K * K].reshape(K, K)
        best = -np.inf
        for labels in itertools.product(range(K), repeat=n):
            for extra in (0, 1):
                if extra and labels[1] != 1:  # the implication extra => (position 1 = label 1)
                    continue
                score = sum(theta[i * K + y] for i, y in enumerate(labels))
                score += sum(trans[a, b] for a, b in zip(labels, labels[1:]))
                score += extra * (theta[n * K] + fs[K * K] * (labels[0] == 0))
                best = max(best, score)
        res = ad3(fg, theta, fs, tol=1e-9, max_iter=50000)
        assert res.dual >= best - 1e-6
        assert res.primal <= res.dual + 1e-6
        assert ad3_map(fg, theta, fs).objective == pytest.approx(best, abs=1e-8)


# -- invariants and warm starts -----------------------------------------------

@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 10), st.integers(1, 12))
def test_marginals_are_consistent(seed, n_vars, n_factors):
    rng = np.random.default_rng(seed)
    fg, _ = random_graph(rng, n_vars, n_factors)
    theta, fs = random_scores(rng, fg, 2.0)
    res = ad3(fg, theta, fs)
    assert np.all(res.variables >= 0) and np.all(res.variables <= 1)
    assert np.all(res.factors >= -1e-12) and np.all(res.factors <= 1 + 1e-12)
    assert res.dual >= res.primal - 1e-4 * max(1, abs(res.primal))
    cg = fg.compile()
    for f in np.flatnonzero(cg.f_type == 0):  # XOR groups sum to one
        v = cg.slot_var[cg.f_start[f]:cg.f_start[f + 1]]
        assert res.variables[v].sum() == pytest.approx(1.0, abs=1e-4)


def test_warm_start():
    rng = np.random.default_rng(9)
    fg, _ = random_graph(rng, 12, 20)
    theta, fs = random_scores(rng, fg)
    cold = ad3(fg, theta, fs, tol=1e-8, max_iter=20000)
    again = ad3(fg, theta, fs, tol=1e-8, max_iter=20000, warm_start=cold)
    assert again.n_iter <= 5
    assert again.primal == pytest.approx(cold.primal, abs=1e-6)
    theta2 = theta + rng.normal(scale=0.1, size=theta.shape)
    warm = ad3(fg, theta2, fs, tol=1e-8, max_iter=20000, warm_start=cold)
    assert _rel(warm.primal, highs_lp(fg, theta2, fs).primal) < 1e-6
    other, _ = random_graph(rng, 5, 3)
    with pytest.raises(ValueError, match="different factor graph"):
        ad3(other, np.zeros(5), np.zeros(other.n_factor_scores), warm_start=cold)
    assert isinstance(cold, AD3Result)


def test_isolated_variables_and_empty_graph():
    fg = FactorGraph(3)
    fg.add_xor([0, 1])
    res = ad3(fg, [0.2, 0.1, -1.0])
    np.testing.assert_allclose(res.variables, [1, 0, 0], atol=1e-6)
    assert res.primal == pytest.approx(0.2, abs=1e-6)
    res = ad3_map(FactorGraph(2), [1.0, -1.0])
    np.testing.assert_array_equal(res.variables, [1, 0])


# -- validation ---------------------------------------------------------------

def test_validation_errors():
    fg = FactorGraph(3)
    with pytest.raises(ValueError, match="outside 0..2"):
        fg.add_xor([0, 3])
    with pytest.raises(ValueError, match="twice"):
        fg.add_at_most_one([1, 1])
    with pytest.raises(ValueError, match="integers"):
        fg.add_or([0.5, 1])
    with pytest.raises(ValueError, match="negated"):
        fg.add_or([0, 1], [True])
    with pytest.raises(ValueError, match="one column per variable"):
        fg.add_dense([0, 1], [[0, 1, 1]])
    with pytest.raises(ValueError, match="0/1"):
        fg.add_dense([0, 1], [[0, 2]])
    with pytest.raises(ValueError, match="duplicate"):
        fg.add_dense([0, 1], [[0, 1], [0, 1]])
    with pytest.raises(ValueError, match="every configuration is forbidden"):
        fg.add_dense([0, 1], [[0, 1], [1, 1]], forbidden=[True, True])
    with pytest.raises(ValueError, match="one per configuration"):
        fg.add_dense([0, 1], [[0, 1], [1, 1]], forbidden=[True])
    with pytest.raises(ValueError, match="unary parts"):
        fg.add_structure(DependencyTree(), [0, 1], np.zeros((3, 3)))
    with pytest.raises(ValueError, match="n_variables must be an integer >= 0, got -1"):
        FactorGraph(-1)
    fg.add_pair(0, 1)
    with pytest.raises(ValueError, match="factor_scores"):
        ad3(fg, np.zeros(3))
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        ad3(fg, np.zeros(2), np.zeros(1))
    with pytest.raises(ValueError, match="not finite"):
        ad3(fg, [0, np.nan, 0], np.zeros(1))
    with pytest.raises(ValueError, match="eta"):
        ad3(fg, np.zeros(3), np.zeros(1), eta=0)
    with pytest.raises(ValueError, match="FactorGraph"):
        ad3("graph", np.zeros(3))


def test_factor_offsets_layout():
    fg = FactorGraph(4)
    fg.add_xor([0, 1])
    assert fg.add_pair(0, 2) == 0
    assert fg.add_dense([1, 2, 3], [[0, 0, 0], [1, 1, 1], [1, 0, 1]]) == 1
    np.testing.assert_array_equal(fg.add_pairs([[0, 3], [1, 3]]), [4, 5])
    np.testing.assert_array_equal(fg.factor_offsets, [0, 1, 4, 5, 6])
    assert fg.n_factor_scores == 6 and fg.n_factors == 5
