"""StructuredSVMArgumentMiner: its problem (joint features, costs), fit, predict, constraints."""

import itertools
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from sksparse_struct import StructuredSVMArgumentMiner
from sksparse_struct.argument_mining._miner import CDCP_OBJECTIVITY
from sksparse_struct.argument_mining._problem import (
    ArgumentProblem,
    DocumentTarget,
    ParameterLayout,
    document_potentials,
)
from sksparse_struct.feature_extraction import DocumentFeatures

LABELS = np.array(sorted(CDCP_OBJECTIVITY), dtype=object)


def _candidates(n):
    pairs = np.array([(s, t) for s in range(n) for t in range(n) if s != t], dtype=np.int64)
    pairs = pairs.reshape(-1, 2)
    index = {tuple(p): e for e, p in enumerate(pairs)}
    triples = [(a, b, c) for a, b in pairs for b2, c in pairs if b2 == b and c != a]
    return pairs, index, np.array(triples, dtype=np.int64).reshape(-1, 3)


def random_document(rng, n, n_prop_features=6, n_link_features=5):
    """A document with random sparse features, in the layout ArgumentFeatures produces."""
    pairs, _, triples = _candidates(n)
    props = sp.random(n, n_prop_features, density=0.5, random_state=rng, format="csr")
    links = sp.random(len(pairs), n_link_features, density=0.5, random_state=rng, format="csr")
    compat = np.column_stack([np.ones(len(pairs)), np.abs(pairs[:, 0] - pairs[:, 1]) == 1,
                              pairs[:, 0] < pairs[:, 1]]).astype(float)
    second = (rng.rand(len(triples), 35) < 0.3).astype(float)
    return DocumentFeatures(props=props, links=links, link_pairs=pairs, compat=compat,
                            triples=triples, second_order=second,
                            proposition_paragraph=np.zeros(n, dtype=np.int64))


def _problem(rng, n=4, second_order=("coparent", "sibling"), n_compat=3):
    doc = random_document(rng, n)
    layout = ParameterLayout(len(LABELS), 6, 5, n_compat, second_order, 35 if second_order else 0)
    miner = StructuredSVMArgumentMiner(constraints="cdcp", second_order=second_order)
    miner.classes_, miner.layout_ = LABELS, layout
    miner._illegal_, miner._required_source_ = [], None
    graph = miner._graph(doc)
    labels = rng.randint(len(LABELS), size=n)
    on = (rng.rand(doc.link_pairs.shape[0]) < 0.3).astype(np.int64)
    problem = ArgumentProblem([doc], [DocumentTarget(labels, on)], [graph], layout, 7.0,
                              {"max_iter": 2000, "tol": 1e-8})
    return problem, doc, graph


@pytest.mark.parametrize("second_order", [(), ("coparent", "sibling"),
                                          ("coparent", "grandparent", "sibling")])
def test_joint_feature_is_the_adjoint_of_the_potentials(second_order):
    # <psi(m), w> must equal the score of m under the potentials w gives,
    # for any (even non-feasible) m: the two maps are each other's transpose.
    rng = np.random.RandomState(0)
    problem, doc, _graph = _problem(rng, second_order=second_order)
    for _ in range(3):
        w = rng.randn(problem.n_params)
        m = rng.rand(problem.gold(0).shape[0])
        idx, val = problem.joint_feature(0, m)
        psi = np.bincount(idx, weights=val, minlength=problem.n_params)
        p, links, mu, z = problem._unpack(0, m)
        prop, link, compat, pairs = document_potentials(w, problem.layout, doc)
        expected = (prop * p).sum() + (link * links).sum() + (compat * mu).sum() + \
            (pairs * z).sum()
        np.testing.assert_allclose(psi @ w, expected, rtol=1e-10)


def test_cost_of_gold_is_zero_and_counts_weighted_mistakes():
    rng = np.random.RandomState(1)
    problem, _doc, _graph = _problem(rng)
    gold = problem.gold(0)
    assert problem.cost(0, gold) == 0.0
    target = problem.targets[0]
    m = gold.copy()
    p, links, _mu, _z = problem._unpack(0, m)
    p[0] = 0.0
    p[0, (target.labels[0] + 1) % len(LABELS)] = 1.0  # one wrong label: cost 1
    e_on = int(np.flatnonzero(target.links == 1)[0]) if target.links.any() else None
    e_off = int(np.flatnonzero(target.links == 0)[0])
    links[e_off] = (0.5, 0.5)  # half a spurious link: 0.5
    expected = 1.5
    if e_on is not None:
        links[e_on] = (0.25, 0.75)  # a quarter of a missed link: 0.25 * 7
        expected += 0.25 * 7.0
    assert problem.cost(0, m) == pytest.approx(expected)


def test_loss_augmented_solution_maximises_the_augmented_score():
    # Against brute force over all labelings and link sets allowed by the
    # "cdcp" constraints (n = 3): the LP's objective is at least the best
    # integral one, and equals it when the solution is integral.
    rng = np.random.RandomState(2)
    problem, doc, _graph = _problem(rng, n=3)
    w = rng.randn(problem.n_params)
    m, cost, stats = problem.loss_augmented(w, 0)
    idx, val = problem.joint_feature(0, m)
    value = np.bincount(idx, weights=val, minlength=problem.n_params) @ w + cost
    pairs = doc.link_pairs
    best = -np.inf
    for labels in itertools.product(range(len(LABELS)), repeat=3):
        for on in itertools.product((0, 1), repeat=len(pairs)):
            links = {tuple(pairs[e]) for e in range(len(pairs)) if on[e]}
            if any((t, s) in links for s, t in links):
                continue
            if any((a, c) not in links for a, b in links for b2, c in links if b2 == b and c != a):
                continue
            cand = ArgumentProblem([doc], [DocumentTarget(np.array(labels), np.array(on))],
                                   problem.graphs, problem.layout, 7.0, {})
            y = cand.gold(0)
            i2, v2 = problem.joint_feature(0, y)
            best = max(best, np.bincount(i2, weights=v2, minlength=problem.n_params) @ w
                       + problem.cost(0, y))
    assert value >= best - 1e-6
    if stats[0] == 1.0:
        assert value == pytest.approx(best, rel=1e-6)


def _dataset(rng, n_docs=12):
    """Documents whose labels and links are read off one feature each (learnable exactly)."""
    X, y = [], []
    for _ in range(n_docs):
        n = rng.randint(2, 5)
        doc = random_document(rng, n)
        labels = rng.randint(len(LABELS), size=n)
        props = np.zeros((n, len(LABELS) + 1))
        props[np.arange(n), labels] = 1.0
        props[:, -1] = 1.0
        pairs = doc.link_pairs
        # Links go from a fact to a value, never back: antisymmetric, and
        # transitive (no value is a fact).
        on = [(LABELS[labels[s]] == "fact") and (LABELS[labels[t]] == "value")
              for s, t in pairs]
        links = np.zeros((len(pairs), 2))
        links[:, 0] = on
        links[:, 1] = 1.0
        X.append(doc._replace(props=sp.csr_matrix(props), links=sp.csr_matrix(links)))
        y.append(([str(LABELS[c]) for c in labels],
                  sorted((int(s), int(t)) for (s, t), o in zip(pairs, on) if o)))
    return X, y


@pytest.mark.parametrize("constraints, options", [
    ("none", {"compat_features": False, "second_order": ()}),
    ("cdcp", {}),
    ("cdcp_strict", {"second_order": ("grandparent",)}),
])
def test_fit_learns_a_separable_problem(constraints, options):
    rng = np.random.RandomState(3)
    X, y = _dataset(rng)
    miner = StructuredSVMArgumentMiner(constraints, C=10.0, max_iter=30, random_state=0,
                                       **options)
    miner.fit(X, y)
    assert miner.predict(X) == [(list(labels), list(links)) for labels, links in y]
    assert miner.score(X, y) == 1.0


def test_exact_predictions_satisfy_the_constraints():
    rng = np.random.RandomState(4)
    X, y = _dataset(rng, n_docs=10)
    # Random targets: the fit cannot separate them, so predictions are varied.
    y = [([str(LABELS[c]) for c in rng.randint(len(LABELS), size=len(lab))],
          [tuple(p) for p in X[d].link_pairs[rng.rand(len(X[d].link_pairs)) < 0.4].tolist()])
         for d, (lab, _) in enumerate(y)]
    miner = StructuredSVMArgumentMiner("cdcp_strict", C=1.0, max_iter=5, random_state=0).fit(X, y)
    rank = {label: r for r, label in enumerate(CDCP_OBJECTIVITY)}
    for labels, links in miner.predict(X):
        links = set(links)
        for s, t in links:
            assert (t, s) not in links
            assert rank[labels[s]] <= rank[labels[t]]
            for t2, c in links:
                if t2 == t and c != s:
                    assert (s, c) in links


def test_pickle_clone_and_marginals():
    rng = np.random.RandomState(5)
    X, y = _dataset(rng, n_docs=6)
    miner = StructuredSVMArgumentMiner(max_iter=3, random_state=0).fit(X, y)
    again = pickle.loads(pickle.dumps(miner))
    assert again.predict(X) == miner.predict(X)
    assert clone(miner).get_params() == miner.get_params()
    for (prop, links), doc in zip(miner.predict_marginals(X), X):
        assert prop.shape == (doc.props.shape[0], len(miner.classes_))
        np.testing.assert_allclose(prop.sum(axis=1), 1.0, atol=1e-5)
        assert links.shape == (doc.link_pairs.shape[0],)
        assert np.all((links > -1e-9) & (links < 1 + 1e-9))


def test_bad_input_is_named():
    rng = np.random.RandomState(6)
    X, y = _dataset(rng, n_docs=3)
    miner = StructuredSVMArgumentMiner(max_iter=1)
    with pytest.raises(ValueError, match="3 documents but y has 2"):
        miner.fit(X, y[:2])
    bad = list(y)
    bad[1] = (bad[1][0], [(0, 0)])
    with pytest.raises(ValueError, match="document 1: link 0 -> 0 is not a candidate"):
        miner.fit(X, bad)
    bad = list(y)
    bad[2] = (bad[2][0][:-1], bad[2][1])
    with pytest.raises(ValueError, match="document 2: .* labels for"):
        miner.fit(X, bad)
    with pytest.raises(TypeError, match="ArgumentFeatures"):
        miner.fit([{"text": "raw"}], [(["fact"], [])])
    nan = list(X)
    nan[0] = nan[0]._replace(compat=nan[0].compat * np.nan)
    with pytest.raises(ValueError, match="document 0 of X: compatibility features contain NaN"):
        miner.fit(nan, y)
    with pytest.raises(ValueError, match="strict_labels"):
        StructuredSVMArgumentMiner(strict_labels=("fact", "value")).fit(X, y)
    with pytest.raises(ValueError, match="second_order"):
        StructuredSVMArgumentMiner(second_order=("cousin",)).fit(X, y)


def test_results_do_not_depend_on_n_jobs():
    rng = np.random.RandomState(7)
    X, y = _dataset(rng, n_docs=6)
    one = StructuredSVMArgumentMiner(max_iter=3, random_state=0).fit(X, y)
    two = clone(one).set_params(n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(one.coef_, two.coef_)
    assert one.predict(X) == two.predict(X)
    for (p1, l1), (p2, l2) in zip(one.predict_marginals(X), two.predict_marginals(X)):
        np.testing.assert_array_equal(p1, p2)
        np.testing.assert_array_equal(l1, l2)


def _two_paragraph_document(rng, n_first, n_second):
    """A random document whose candidate links stay inside its two paragraphs."""
    n = n_first + n_second
    para = np.array([0] * n_first + [1] * n_second, dtype=np.int64)
    pairs = np.array([(s, t) for s in range(n) for t in range(n)
                      if s != t and para[s] == para[t]], dtype=np.int64).reshape(-1, 2)
    triples = np.array([(a, b, c) for a, b in pairs for b2, c in pairs if b2 == b and c != a],
                       dtype=np.int64).reshape(-1, 3)
    doc = random_document(rng, 2)
    return doc._replace(
        props=sp.random(n, 6, density=0.5, random_state=rng, format="csr"),
        links=sp.random(len(pairs), 5, density=0.5, random_state=rng, format="csr"),
        link_pairs=pairs,
        compat=np.column_stack([np.ones(len(pairs)), np.abs(pairs[:, 0] - pairs[:, 1]) == 1,
                                pairs[:, 0] < pairs[:, 1]]).astype(float),
        triples=triples, second_order=(rng.rand(len(triples), 35) < 0.3).astype(float),
        proposition_paragraph=para)


@pytest.mark.parametrize("constraints", ["tree", "tree_strict"])
def test_tree_predictions_are_forests_within_paragraphs(constraints):
    rng = np.random.RandomState(8)
    X = [_two_paragraph_document(rng, rng.randint(2, 4), rng.randint(1, 3)) for _ in range(5)]
    y = [([str(LABELS[c]) for c in rng.randint(len(LABELS), size=doc.props.shape[0])],
          [tuple(p) for p in doc.link_pairs[rng.rand(len(doc.link_pairs)) < 0.4].tolist()])
         for doc in X]
    miner = StructuredSVMArgumentMiner(constraints, strict_labels="fact" if "strict" in
                                       constraints else None, second_order=("grandparent",),
                                       C=1.0, max_iter=2, random_state=0).fit(X, y)
    n_links = 0
    for doc, (labels, links) in zip(X, miner.predict(X)):
        heads = {}
        for s, t in links:
            assert doc.proposition_paragraph[s] == doc.proposition_paragraph[t]
            assert s not in heads  # at most one outgoing link
            heads[s] = t
            if constraints == "tree_strict":
                assert labels[s] == "fact"
        for start in heads:  # no cycle
            seen, node = set(), start
            while node in heads:
                assert node not in seen
                seen.add(node)
                node = heads[node]
        n_links += len(links)
    assert n_links > 0  # the check above is not vacuous


def test_predictions_on_the_cdcp_sample_are_closed_antisymmetric_and_strict():
    from sksparse_struct.datasets import load_cdcp_sample
    from sksparse_struct.feature_extraction import ArgumentFeatures

    X_train, y_train, X_test, _ = load_cdcp_sample()
    features = ArgumentFeatures().fit(X_train, y_train)
    miner = StructuredSVMArgumentMiner(max_iter=3, random_state=0)
    miner.fit(features.transform(X_train), y_train)
    rank = {label: r for r, label in enumerate(CDCP_OBJECTIVITY)}
    n_links = 0
    for labels, links in miner.predict(features.transform(X_test)):
        links = set(links)
        n_links += len(links)
        for s, t in links:
            assert (t, s) not in links
            assert rank[labels[s]] <= rank[labels[t]]
            assert all((s, c) in links for t2, c in links if t2 == t and c != s)
    assert n_links > 0
