"""The argument-mining factor graph: layout, constraints and exact solutions."""

import itertools

import numpy as np
import pytest

from sksparse_struct.argument_mining._graph import build_argument_graph
from sksparse_struct.inference import ad3, ad3_map, highs_lp, milp_map
from sksparse_struct.inference._ad3 import evaluate

from ..inference._factor_graphs import brute_force


def candidates(paragraph):
    """All ordered pairs within a paragraph (source-major) and the triples."""
    paragraph = np.asarray(paragraph)
    n = paragraph.shape[0]
    pairs = np.array([(s, t) for s in range(n) for t in range(n)
                      if s != t and paragraph[s] == paragraph[t]], dtype=np.int64).reshape(-1, 2)
    triples = [(a, b, c) for a, b in pairs for b2, c in pairs if b2 == b and c != a]
    return pairs, np.array(triples, dtype=np.int64).reshape(-1, 3)


def random_scores(rng, ag, link_mean=-0.5, factor_scale=0.5):
    fg = ag.graph
    theta = np.zeros(fg.n_variables)
    theta[ag.prop_vars] = rng.normal(size=ag.prop_vars.shape)
    theta[ag.link_vars] = rng.normal(link_mean, 1.0, ag.link_vars.shape)
    return theta, rng.normal(scale=factor_scale, size=fg.n_factor_scores)


def decode(ag, x, pairs):
    labels = x[ag.prop_vars].argmax(axis=1)
    on = x[ag.link_vars] > 0.5
    return labels, {tuple(p) for p in pairs[on]}


def check_cdcp(labels, links, n, illegal, required):
    for a, b in links:
        assert (b, a) not in links, "antisymmetry"
        for c in range(n):
            if (b, c) in links and c != a:
                assert (a, c) in links, "transitivity"
        assert (labels[a], labels[b]) not in illegal
        if required is not None:
            assert labels[a] == required


def test_compat_and_pair_layout():
    pairs, triples = candidates([0, 0, 0])
    K = 3
    ag = build_argument_graph(3, K, pairs, triples, constraints="none",
                              second_order=("coparent", "grandparent", "sibling"))
    fg = ag.graph
    assert ag.prop_vars.shape == (3, K) and ag.link_vars.shape == (6,)
    assert fg.n_factor_scores == 6 * K * K * 2 + 3 * triples.shape[0]
    labels = np.array([2, 0, 1])
    on = {(0, 1), (2, 1), (1, 0)}
    x = np.zeros(fg.n_variables, dtype=np.int64)
    x[ag.prop_vars[np.arange(3), labels]] = 1
    for k, p in enumerate(pairs):
        x[ag.link_vars[k]] = tuple(p) in on
    ok, _, add = evaluate(fg.compile(), np.zeros(fg.n_variables), np.zeros(fg.n_factor_scores),
                          x)
    assert ok
    for k, (s, t) in enumerate(pairs):
        block = add[ag.compat_offsets[k]:ag.compat_offsets[k] + K * K * 2]
        expected = labels[s] * K * 2 + labels[t] * 2 + int((s, t) in on)
        np.testing.assert_array_equal(np.flatnonzero(block), [expected])
    links = {
        "coparent": lambda a, b, c: ((a, b), (c, b)),
        "grandparent": lambda a, b, c: ((a, b), (b, c)),
        "sibling": lambda a, b, c: ((b, a), (b, c)),
    }
    for kind, offsets in ag.pair_offsets.items():
        assert offsets.shape == (triples.shape[0],)
        for (a, b, c), off in zip(triples, offsets):
            l1, l2 = links[kind](a, b, c)
            assert add[off] == float(l1 in on and l2 in on)


def test_tiny_document_brute_force():
    rng = np.random.default_rng(0)
    pairs, triples = candidates([0, 0, 0])
    ag = build_argument_graph(3, 2, pairs, triples, illegal_label_pairs=[(1, 0)])
    for _ in range(3):
        theta, fs = random_scores(rng, ag, link_mean=0.5)
        best, _ = brute_force(ag.graph, theta, fs)
        res = ad3_map(ag.graph, theta, fs)
        assert res.optimal and res.objective == pytest.approx(best)
        labels, links = decode(ag, res.variables, pairs)
        check_cdcp(labels, links, 3, {(1, 0)}, None)


@pytest.mark.parametrize("strict", [False, True])
def test_cdcp_exact_solutions_satisfy_constraints(strict):
    rng = np.random.default_rng(1)
    K = 3
    illegal = {(2, 0), (2, 1), (1, 0)} if strict else set()
    required = 0 if strict else None
    for n in (4, 5, 6):
        pairs, triples = candidates(np.zeros(n, dtype=int))
        ag = build_argument_graph(n, K, pairs, triples, illegal_label_pairs=sorted(illegal),
                                  required_source_label=required)
        # model-like scores: most links off, small factor scores (a weak LP
        # relaxation would make the branch-and-bound explore many nodes)
        theta, fs = random_scores(rng, ag, link_mean=-1.0, factor_scale=0.2)
        res = ad3_map(ag.graph, theta, fs)
        assert res.optimal
        labels, links = decode(ag, res.variables, pairs)
        check_cdcp(labels, links, n, illegal, required)
        assert res.objective == pytest.approx(milp_map(ag.graph, theta, fs).objective)
        lp = ad3(ag.graph, theta, fs, tol=1e-8, max_iter=20000)
        assert lp.primal == pytest.approx(highs_lp(ag.graph, theta, fs).primal, rel=1e-6)
        assert lp.primal >= res.objective - 1e-6


def _is_forest(links, n):
    out = {}
    for s, t in links:
        assert s not in out, "a proposition with two outgoing links"
        out[s] = t
    for start in range(n):
        seen, v = set(), start
        while v in out:
            assert v not in seen, "a cycle"
            seen.add(v)
            v = out[v]


def test_tree_exact_solutions_are_forests():
    rng = np.random.default_rng(2)
    paragraph = np.array([0, 0, 0, 1, 1, 2])
    n = paragraph.shape[0]
    pairs, triples = candidates(paragraph)
    ag = build_argument_graph(n, 3, pairs, triples, constraints="tree",
                              second_order=("coparent", "grandparent"),
                              required_source_label=1, proposition_paragraph=paragraph)
    assert ag.root_vars.shape == (n,) and ag.root_vars[5] == -1
    for _ in range(2):
        theta, fs = random_scores(rng, ag, link_mean=0.0, factor_scale=0.2)
        res = ad3_map(ag.graph, theta, fs)
        assert res.optimal
        labels, links = decode(ag, res.variables, pairs)
        _is_forest(links, n)
        assert all(labels[s] == 1 for s, _ in links)
        assert all(paragraph[s] == paragraph[t] for s, t in links)
        assert res.objective == pytest.approx(milp_map(ag.graph, theta, fs).objective)


def test_tree_tiny_brute_force():
    rng = np.random.default_rng(3)
    pairs, triples = candidates([0, 0, 0])
    ag = build_argument_graph(3, 2, pairs, triples, constraints="tree", second_order=())
    theta, fs = random_scores(rng, ag, link_mean=1.0)
    best, _ = brute_force(ag.graph, theta, fs)
    assert ad3_map(ag.graph, theta, fs).objective == pytest.approx(best)
    lp = ad3(ag.graph, theta, fs, tol=1e-8, max_iter=20000)
    assert lp.primal == pytest.approx(highs_lp(ag.graph, theta, fs).primal, rel=1e-6)


def test_empty_and_single_documents():
    ag = build_argument_graph(1, 4, np.zeros((0, 2), int), np.zeros((0, 3), int))
    res = ad3_map(ag.graph, np.array([0.0, 2.0, 1.0, -1.0]))
    np.testing.assert_array_equal(res.variables, [0, 1, 0, 0])
    ag = build_argument_graph(0, 4, [], [], constraints="tree")
    assert ag.graph.n_variables == 0


def test_validation():
    pairs, triples = candidates([0, 0, 0])
    with pytest.raises(ValueError, match="constraints"):
        build_argument_graph(3, 2, pairs, triples, constraints="forest")
    with pytest.raises(ValueError, match="second-order"):
        build_argument_graph(3, 2, pairs, triples, second_order=("cousin",))
    with pytest.raises(ValueError, match="outside 0..2"):
        build_argument_graph(3, 2, [[0, 3]], [])
    with pytest.raises(ValueError, match="itself"):
        build_argument_graph(3, 2, [[1, 1]], [])
    with pytest.raises(ValueError, match="duplicate"):
        build_argument_graph(3, 2, [[0, 1], [0, 1]], [])
    with pytest.raises(ValueError, match="not candidates"):
        build_argument_graph(3, 2, [[0, 1], [1, 2]], [[0, 1, 2]])
    with pytest.raises(ValueError, match="labels in 0..1"):
        build_argument_graph(3, 2, pairs, triples, illegal_label_pairs=[(0, 2)])
    with pytest.raises(ValueError, match="required_source_label"):
        build_argument_graph(3, 2, pairs, triples, required_source_label=5)
    with pytest.raises(ValueError, match="every ordered pair"):
        build_argument_graph(3, 2, [[0, 1]], [], constraints="tree", second_order=())
    with pytest.raises(ValueError, match="proposition_paragraph"):
        build_argument_graph(3, 2, pairs, triples, proposition_paragraph=[0, 0])


def test_cdcp_transitivity_count():
    # every ordered triple of distinct propositions gives one implication
    n = 5
    pairs, triples = candidates(np.zeros(n, dtype=int))
    base = build_argument_graph(n, 2, pairs, triples, constraints="none", second_order=())
    ag = build_argument_graph(n, 2, pairs, triples, second_order=())
    n_perm = len(list(itertools.permutations(range(n), 3)))
    assert ag.graph.n_factors - base.graph.n_factors == n_perm + n * (n - 1) // 2


@pytest.mark.parametrize("required", [None, 1])
def test_strict_in_compat_same_map_tighter_lp(required):
    rng = np.random.default_rng(4)
    K, n = 3, 5
    illegal = [(2, 0), (2, 1), (1, 0)]
    pairs, triples = candidates(np.zeros(n, dtype=int))
    a = build_argument_graph(n, K, pairs, triples, illegal_label_pairs=illegal,
                             required_source_label=required)
    b = build_argument_graph(n, K, pairs, triples, illegal_label_pairs=illegal,
                             required_source_label=required, strict_in_compat=True)
    assert b.graph.n_factors < a.graph.n_factors
    assert b.graph.n_factor_scores == a.graph.n_factor_scores  # same layout
    np.testing.assert_array_equal(a.compat_offsets, b.compat_offsets)
    for _ in range(2):
        theta, fs = random_scores(rng, a, link_mean=0.0, factor_scale=0.3)
        ma, mb = milp_map(a.graph, theta, fs), ad3_map(b.graph, theta, fs)
        assert mb.optimal and mb.objective == pytest.approx(ma.objective)
        labels, links = decode(b, mb.variables, pairs)
        check_cdcp(labels, links, n, set(illegal), required)
        la = highs_lp(a.graph, theta, fs).primal
        lb = ad3(b.graph, theta, fs, tol=1e-8, max_iter=20000).primal
        assert lb == pytest.approx(highs_lp(b.graph, theta, fs).primal, rel=1e-6)
        assert lb <= la + 1e-6
