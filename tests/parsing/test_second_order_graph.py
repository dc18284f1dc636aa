"""The second-order factor graph: layout, gold parts, exact decoding, reductions.

The references are independent: brute force over every tree and the exact
projective sibling DP (``_second_order_reference``), ``sparsemap`` on the
tree alone.
"""

import numpy as np
import pytest

from sksparse_struct.inference import FactorGraph, ad3, lp_sparsemap, sparsemap
from sksparse_struct.inference._ad3 import check_graph_scores, evaluate
from sksparse_struct.parsing._second_order import (
    BRANCH_AND_BOUND,
    CERTIFIED,
    ROUNDED,
    arc_variable,
    build_graph,
    decode_graph,
    tree_parts,
)
from sksparse_struct.structures import DependencyTree, HeadAutomaton

from . import _second_order_reference as ref


def _random_tree(n, rng):
    """A uniformly drawn head vector that is a tree (maybe with several root words)."""
    while True:
        heads = np.concatenate([[-1], rng.integers(0, n + 1, size=n)])
        heads[1:][heads[1:] == np.arange(1, n + 1)] = 0
        # Accept acyclic ones.
        ok = True
        for m in range(1, n + 1):
            seen, h = set(), m
            while h > 0 and ok:
                if h in seen:
                    ok = False
                seen.add(h)
                h = heads[h]
        if ok:
            return heads


def _instance(n, rng, projective=False, single_root=True, siblings=True, grandparents=True,
              density=1.0, sibling_tree=True):
    cand = rng.random((n + 1, n + 1)) < density
    if density < 1.0:
        tree = _random_tree(n, rng)
        cand[tree[1:], np.arange(1, n + 1)] = True
        if projective:
            cand[np.arange(n), np.arange(1, n + 1)] = True
    sog = build_graph(n, cand, siblings=siblings, grandparents=grandparents,
                      projective=projective, single_root=single_root, sibling_tree=sibling_tree)
    arcs = rng.normal(size=(n + 1, n + 1))
    arcs[~sog.candidates] = -np.inf
    sib = rng.normal(size=sog.siblings.shape[0])
    gp = rng.normal(size=sog.grandparents.shape[0])
    return sog, arcs, sib, gp


def _dicts(sog, sib, gp):
    return ({tuple(r): v for r, v in zip(sog.siblings.tolist(), sib)},
            {tuple(r): v for r, v in zip(sog.grandparents.tolist(), gp)})


def _value(sog, theta, phi, heads):
    cg, th, fs = check_graph_scores(sog.graph, theta, phi, "test")
    x = np.zeros(sog.n * sog.n, dtype=np.int64)
    for m in range(1, sog.n + 1):
        x[arc_variable(heads[m], m, sog.n)] = 1
    feasible, value, _ = evaluate(cg, th, fs, x)
    return feasible, value


@pytest.mark.parametrize("seed", range(20))
def test_tree_parts_match_reference(seed):
    rng = np.random.default_rng(seed)
    heads = _random_tree(int(rng.integers(1, 9)), rng)
    sib, gp = tree_parts(heads)
    ref_sib, ref_gp = ref.tree_parts(heads)
    assert sorted(map(tuple, sib.tolist())) == sorted(map(tuple, ref_sib.tolist()))
    assert sorted(map(tuple, gp.tolist())) == sorted(map(tuple, ref_gp.tolist()))


def test_layout_counts_and_gold():
    rng = np.random.default_rng(0)
    n = 6
    sog = build_graph(n, np.ones((n + 1, n + 1), bool), single_root=False)
    # Sibling parts: every head side with L candidates has (L+1)(L+2)/2,
    # the root's left side left out; grandparent parts: in(h) * out(h).
    n_sib = (n + 1) * (n + 2) // 2  # root, right side: n candidates
    for h in range(1, n + 1):
        for L in (h - 1, n - h):
            n_sib += (L + 1) * (L + 2) // 2
    assert sog.siblings.shape == (n_sib, 3)
    assert sog.grandparents.shape == (n * n * (n - 1), 3)
    assert len(set(map(tuple, sog.siblings.tolist()))) == n_sib
    assert len(set(sog.sibling_slots.tolist()) | set(sog.grandparent_slots.tolist())) == \
        n_sib + sog.grandparents.shape[0] == sog.n_factor_scores
    for _ in range(10):
        heads = _random_tree(n, rng)
        y_u, y_v = sog.gold(heads)
        assert y_u.sum() == n and y_u[[arc_variable(heads[m], m, n)
                                       for m in range(1, n + 1)]].all()
        on = set(map(tuple, np.concatenate([sog.siblings, sog.grandparents])[
            np.argsort(np.concatenate([sog.sibling_slots, sog.grandparent_slots]))][
            y_v > 0].tolist()))
        ref_sib, ref_gp = ref.tree_parts(heads)
        expected = set(map(tuple, ref_sib.tolist())) - {(0, 0, -1)}
        expected |= set(map(tuple, ref_gp.tolist()))
        assert on == expected
        # The gold's score in the graph is its second-order score.
        arcs = rng.normal(size=(n + 1, n + 1))
        sib, gp = rng.normal(size=sog.siblings.shape[0]), rng.normal(
            size=sog.grandparents.shape[0])
        theta, phi = sog.variable_scores(arcs), sog.factor_scores(sib, gp)
        assert theta @ y_u + phi @ y_v == pytest.approx(
            ref.second_order_score(heads, arcs, *_dicts(sog, sib, gp)), abs=1e-10)
        feasible, value = _value(sog, theta, phi, heads)
        assert feasible and value == pytest.approx(theta @ y_u + phi @ y_v, abs=1e-10)


def _one_factor_at_a_time(n, candidates, siblings, grandparents, projective, single_root,
                          sibling_tree=True):
    """The graph of ``build_graph`` built the plain way: per head and side, one
    ``add_structure`` with the automaton's potentials, parts listed in Python.

    Projective with siblings (and ``sibling_tree``): the tree factor is a
    ``ProjectiveSiblingTree`` owning every side's sibling parts, found in its
    flat layout by encoding a distinct score per part.
    """
    from sksparse_struct.structures import GrandparentHeadAutomaton, ProjectiveSiblingTree

    cand = np.array(candidates, dtype=bool)
    cand[:, 0] = False
    np.fill_diagonal(cand, False)
    fg = FactorGraph(n * n)
    tree_siblings = siblings and projective and sibling_tree
    sib_rows, sib_slots, gp_rows, gp_slots = [], [], [], []
    if tree_siblings:
        tree = ProjectiveSiblingTree(single_root=single_root)
        fg.add_structure(tree, np.arange(n * n), np.where(cand, 0.0, -np.inf))
        codes = np.arange((n + 1) * (n + 1) * (n + 3), dtype=float).reshape(n + 1, n + 1, n + 3)
        where = {int(c): i for i, c in
                 enumerate(tree.encode(np.zeros((n + 1, n + 1)), codes).eta_v)}
        for h in range(n + 1):
            for right in ((True, False) if h else (True,)):
                side = range(h + 1, n + 1) if right else range(h - 1, 0, -1)
                tokens = [h] + [m for m in side if cand[h, m]] + [n + 1 if right else -1]
                for j in range(len(tokens)):
                    for k in range(j + 1, len(tokens)):
                        sib_rows.append((h, tokens[j], tokens[k]))
                        sib_slots.append(where[int(codes[h, tokens[j], tokens[k]])])
        siblings = False  # the automata: grandparent parts only
    else:
        fg.add_structure(DependencyTree(projective=projective, single_root=single_root),
                         np.arange(n * n), np.where(cand, 0.0, -np.inf))
    if not (siblings or grandparents):
        return fg, sib_rows, sib_slots, gp_rows, gp_slots
    for h in range(n + 1):
        incoming = [g for g in range(n + 1) if cand[g, h]] if h >= 1 and grandparents else None
        for right in (True, False):
            if h == 0 and not right:
                continue
            side = range(h + 1, n + 1) if right else range(h - 1, 0, -1)
            mods = [m for m in side if cand[h, m]]
            L = len(mods)
            if incoming is None and L == 0:
                continue
            if not siblings and (incoming is None or L == 0):
                continue
            out = [arc_variable(h, m, n) for m in mods]
            if incoming is None:
                offset = fg.add_structure(HeadAutomaton(), out, np.zeros(L),
                                          np.zeros((L + 2, L + 2)))
            else:
                G = len(incoming)
                offset = fg.add_structure(
                    GrandparentHeadAutomaton(), [arc_variable(g, h, n) for g in incoming] + out,
                    np.zeros(G), np.zeros(L), np.zeros((L + 2, L + 2)), np.zeros((G, L)))
            tokens = [h] + mods + [n + 1 if right else -1]
            pairs = [(j, k) for j in range(L + 2) for k in range(j + 1, L + 2)]
            if siblings:
                sib_rows += [(h, tokens[j], tokens[k]) for j, k in pairs]
                sib_slots += [offset + i for i in range(len(pairs))]
            if incoming is not None:
                gp_rows += [(g, h, m) for g in incoming for m in mods]
                gp_slots += [offset + len(pairs) + i for i in range(len(incoming) * L)]
    return fg, sib_rows, sib_slots, gp_rows, gp_slots


@pytest.mark.parametrize("siblings, grandparents", [(True, True), (True, False),
                                                    (False, True), (False, False)])
def test_compiled_layout_is_the_one_factor_at_a_time_graph(siblings, grandparents):
    rng = np.random.default_rng(7 + 2 * siblings + grandparents)
    for trial in range(60):
        n = int(rng.integers(1, 13))
        projective = bool(trial % 2)
        sibling_tree = bool(trial % 4 == 1)
        density = rng.choice([0.15, 0.4, 1.0])
        cand = rng.random((n + 1, n + 1)) < density
        tree = _random_tree(n, rng)
        cand[tree[1:], np.arange(1, n + 1)] = True
        sog = build_graph(n, cand, siblings=siblings, grandparents=grandparents,
                          projective=projective, single_root=True, sibling_tree=sibling_tree)
        fg, sib_rows, sib_slots, gp_rows, gp_slots = _one_factor_at_a_time(
            n, cand, siblings, grandparents, projective, True, sibling_tree)
        np.testing.assert_array_equal(sog.siblings, np.array(sib_rows).reshape(-1, 3))
        np.testing.assert_array_equal(sog.sibling_slots, sib_slots)
        np.testing.assert_array_equal(sog.grandparents, np.array(gp_rows).reshape(-1, 3))
        np.testing.assert_array_equal(sog.grandparent_slots, gp_slots)
        assert sog.graph.n_factors == fg.n_factors
        np.testing.assert_array_equal(sog.graph.factor_offsets, fg.factor_offsets)
        got, want = sog.graph.compile(), fg.compile()
        for name in ("f_type", "f_start", "slot_var", "slot_neg", "f_score", "f_table", "deg"):
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
        for name in got.structs._fields:
            np.testing.assert_array_equal(getattr(got.structs, name),
                                          getattr(want.structs, name), err_msg=name)
        assert [type(s[1]) for s in got.structures] == [type(s[1]) for s in want.structures]


def test_no_candidate_head_is_refused():
    cand = np.ones((4, 4), dtype=bool)
    cand[:, 2] = False
    with pytest.raises(ValueError, match="word 2 has no candidate head"):
        build_graph(3, cand)


def test_head_automaton_check_accepts_every_subset():
    # Sibling scores that make dropping a modifier better must not make an
    # assignment that keeps both infeasible.
    fg = FactorGraph(2)
    sib = np.zeros((4, 4))
    sib[0, 1] = 5.0  # START -> first, then STOP at once: best
    sib[1, 2] = -10.0
    off = fg.add_structure(HeadAutomaton(), [0, 1], np.zeros(2), np.zeros((4, 4)))
    assert off == 0
    cg, th, fs = check_graph_scores(fg, np.zeros(2), sib[np.triu_indices(4, 1)], "test")
    for x in ([0, 0], [1, 0], [0, 1], [1, 1]):
        feasible, value = evaluate(cg, th, fs, np.array(x))[:2]
        assert feasible
    assert evaluate(cg, th, fs, np.array([1, 1]))[1] == pytest.approx(5.0 - 10.0)


@pytest.mark.parametrize("projective", [False, True])
@pytest.mark.parametrize("single_root", [True, False])
def test_exact_map_against_brute_force(projective, single_root):
    rng = np.random.default_rng(1 + 2 * projective + single_root)
    counts = {CERTIFIED: 0, BRANCH_AND_BOUND: 0, ROUNDED: 0}
    for trial in range(40):
        n = int(rng.integers(2, 6))
        sog, arcs, sib, gp = _instance(n, rng, projective, single_root,
                                       density=1.0 if trial % 2 else 0.6)
        theta, phi = sog.variable_scores(arcs), sog.factor_scores(sib, gp)
        best, best_value = ref.brute_force_map(n, arcs, *_dicts(sog, sib, gp),
                                               projective=projective, single_root=single_root)
        heads, status, result = decode_graph(sog, theta, phi, projective=projective,
                                             single_root=single_root, max_iter=2000, tol=1e-6,
                                             max_nodes=10000)
        counts[status] += 1
        # The LP bound is an upper bound on the MAP.
        assert result.dual >= best_value - 1e-6
        assert status in (CERTIFIED, BRANCH_AND_BOUND)
        feasible, value = _value(sog, theta, phi, heads)
        assert feasible and value == pytest.approx(best_value, abs=1e-6)
        if status == CERTIFIED:
            np.testing.assert_array_equal(heads, best)
    # Random scores are far from tight, but some are.
    assert counts[CERTIFIED] > 0


def test_rounding_when_branch_and_bound_is_cut_short():
    rng = np.random.default_rng(5)
    seen = set()
    for _ in range(30):
        n = 5
        sog, arcs, sib, gp = _instance(n, rng)
        theta, phi = sog.variable_scores(arcs), sog.factor_scores(sib, gp)
        heads, status, _ = decode_graph(sog, theta, phi, projective=False, single_root=True,
                                        max_iter=50, tol=1e-6, max_nodes=1)
        seen.add(status)
        # Always a valid tree with one root word.
        assert DependencyTree(single_root=True).score(heads, arcs) > -np.inf
        feasible, value = _value(sog, theta, phi, heads)
        assert feasible
        # Without branch-and-bound: the tree oracle's rounding of the LP's
        # arc marginals, which branch-and-bound (starting from it) never
        # makes worse.
        rounded, status0, result = decode_graph(sog, theta, phi, projective=False,
                                                single_root=True, max_iter=50, tol=1e-6,
                                                max_nodes=0)
        assert status0 in (CERTIFIED, ROUNDED)
        marginals = np.full((n + 1, n + 1), -np.inf)
        marginals[sog.candidates] = 0.0
        marginals += sog.arc_matrix(result.variables)
        np.testing.assert_array_equal(rounded, DependencyTree(single_root=True).map(marginals))
        assert value >= _value(sog, theta, phi, rounded)[1] - 1e-12
    assert ROUNDED in seen


@pytest.mark.parametrize("projective", [False, True])
def test_first_order_reduction(projective):
    rng = np.random.default_rng(7)
    tree = DependencyTree(projective=projective, single_root=True)
    for _ in range(5):
        n = int(rng.integers(2, 7))
        sog, arcs, sib, gp = _instance(n, rng, projective)
        theta, phi = sog.variable_scores(arcs), np.zeros(sog.n_factor_scores)
        result = ad3(sog.graph, theta, phi, max_iter=5000, tol=1e-8)
        assert result.integral
        np.testing.assert_allclose(sog.arc_matrix(result.variables)[:, 1:],
                                   tree.map(arcs) [None, 1:] == np.arange(n + 1)[:, None],
                                   atol=1e-6)
        smap = sparsemap(tree, arcs)
        lp = lp_sparsemap(sog.graph, theta, phi, max_iter=20000, tol=1e-9)
        np.testing.assert_allclose(sog.arc_matrix(lp.variables), smap.marginals, atol=1e-6)


@pytest.mark.parametrize("sibling_tree", [False, True])
@pytest.mark.parametrize("single_root", [True, False])
def test_projective_siblings_against_exact_dp(single_root, sibling_tree):
    # Spec 7.6. With the sibling parts in head automata, the LP is a
    # relaxation, tight on some sentences; with them in a
    # ProjectiveSiblingTree factor, it is exact: every sentence certified.
    rng = np.random.default_rng(11 + single_root)
    n_certified = 0
    for trial in range(25):
        n = int(rng.integers(2, 9)) if not sibling_tree or trial % 2 else int(
            rng.integers(10, 31))
        sog, arcs, sib, _ = _instance(n, rng, projective=True, single_root=single_root,
                                      grandparents=False, sibling_tree=sibling_tree,
                                      density=1.0 if n < 10 else 0.3)
        # Scores a trained model would give: arcs matter more than siblings.
        arcs = 3 * arcs
        theta, phi = sog.variable_scores(arcs), sog.factor_scores(0.5 * sib)
        sib_dict = _dicts(sog, 0.5 * sib, [])[0]
        exact, exact_value = ref.eisner_siblings(arcs, sib_dict, single_root=single_root)
        heads, status, result = decode_graph(sog, theta, phi, projective=True,
                                             single_root=single_root, max_iter=2000,
                                             tol=1e-6, max_nodes=10000)
        assert status != ROUNDED
        assert _value(sog, theta, phi, heads)[0]
        assert ref.second_order_score(heads, arcs, sib_dict) == pytest.approx(exact_value,
                                                                              abs=1e-6)
        if status == CERTIFIED:
            n_certified += 1
            np.testing.assert_array_equal(heads, exact)
    assert n_certified == 25 if sibling_tree else n_certified >= 10


def test_add_structure_parts_is_add_structure():
    from sksparse_struct.structures import GrandparentHeadAutomaton

    rng = np.random.default_rng(3)
    gha = GrandparentHeadAutomaton()
    potentials = (np.zeros(2), np.zeros(3), np.zeros((5, 5)), np.zeros((2, 3)))
    graphs = [FactorGraph(5), FactorGraph(5)]
    assert graphs[0].add_structure(gha, np.arange(5), *potentials) == 0
    assert graphs[1].add_structure_parts(gha, np.arange(5), gha.encode(*potentials)) == 0
    theta, phi = rng.normal(size=5), rng.normal(size=graphs[0].n_factor_scores)
    first, second = (ad3(g, theta, phi) for g in graphs)
    np.testing.assert_array_equal(first.variables, second.variables)
    with pytest.raises(ValueError, match="Parts"):
        graphs[1].add_structure_parts(gha, np.arange(5), potentials)


def test_add_structures_parts_is_add_structure_parts_in_order():
    from sksparse_struct.structures import GrandparentHeadAutomaton

    rng = np.random.default_rng(4)
    gha = GrandparentHeadAutomaton()
    shapes = [(1, 2), (2, 0), (1, 2), (3, 1)]
    parts = [gha.encode(np.zeros(G), np.zeros(L), np.zeros((L + 2, L + 2)), np.zeros((G, L)))
             for G, L in shapes]
    parts[2] = parts[0]  # shared Parts objects are fine
    variables = [rng.choice(8, size=G + L, replace=False) for G, L in shapes]
    one, batch = FactorGraph(8), FactorGraph(8)
    one.add_xor([0, 1])
    batch.add_xor([0, 1])
    offsets = [one.add_structure_parts(gha, v, p) for v, p in zip(variables, parts)]
    got = batch.add_structures_parts(gha, np.concatenate(variables), parts)
    np.testing.assert_array_equal(got, offsets)
    assert batch.n_factors == one.n_factors and batch.n_factor_scores == one.n_factor_scores
    a, b = one.compile(), batch.compile()
    for name in ("f_type", "f_start", "slot_var", "f_score", "deg"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    theta, phi = rng.normal(size=8), rng.normal(size=one.n_factor_scores)
    np.testing.assert_array_equal(ad3(one, theta, phi).variables,
                                  ad3(batch, theta, phi).variables)
    assert batch.add_structures_parts(gha, [], []).shape == (0,)
    flat = np.concatenate(variables)
    with pytest.raises(ValueError, match="factor 1 of the batch uses a variable twice"):
        bad = flat.copy()
        bad[4] = bad[3]
        FactorGraph(8).add_structures_parts(gha, bad, parts)
    with pytest.raises(ValueError, match="factor 3 of the batch refers to variable 8"):
        bad = flat.copy()
        bad[-1] = 8
        FactorGraph(8).add_structures_parts(gha, bad, parts)
    with pytest.raises(ValueError, match="12 unary parts together, got 11"):
        FactorGraph(8).add_structures_parts(gha, flat[:-1], parts)
    with pytest.raises(ValueError, match="Parts"):
        FactorGraph(8).add_structures_parts(gha, flat, [None] * 4)
    with pytest.raises(ValueError, match="must be integers"):
        FactorGraph(8).add_structures_parts(gha, flat + 0.5, parts)
