"""Every decoder of StructuredSVMArgumentMiner returns structures that satisfy its constraints.

The checker below is written from the promises of the ``constraints``
parameter, independently of the package's own checks; it is run on the
predictions of every decoder, with random and adversarial weights, and on
LP solutions cut short so that they are fractional.
"""

import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from sksparse_struct import StructuredSVMArgumentMiner
from sksparse_struct.argument_mining._graph import round_to_constraints
from sksparse_struct.argument_mining._miner import CDCP_OBJECTIVITY
from sksparse_struct.feature_extraction import DocumentFeatures

CDCP_LABELS = ["fact", "policy", "reference", "testimony", "value"]
ESSAY_LABELS = ["Claim", "MajorClaim", "Premise"]


def check_constraints(constraints, doc, labels, links, strict_labels=None):
    """The violations of the promises of ``constraints`` (an empty list when all hold)."""
    bad = []
    links = [tuple(link) for link in links]
    candidates = {tuple(p) for p in doc.link_pairs.tolist()}
    on = set(links)
    para = doc.proposition_paragraph
    if len(on) != len(links):
        bad.append("a link is listed twice")
    for s, t in links:
        if (s, t) not in candidates:
            bad.append(f"{s} -> {t} is not a candidate")
    if constraints in ("cdcp", "cdcp_strict"):
        for s, t in on:
            if (t, s) in on:
                bad.append(f"{s} -> {t} and {t} -> {s}")
            for t2, c in on:
                if t2 == t and c != s and (s, c) in candidates and (s, c) not in on:
                    bad.append(f"{s} -> {t} -> {c} without {s} -> {c}")
    if constraints == "cdcp_strict":
        order = list(strict_labels or CDCP_OBJECTIVITY)
        for s, t in on:
            if order.index(labels[s]) > order.index(labels[t]):
                bad.append(f"{s} ({labels[s]}) -> {t} ({labels[t]}) goes to a more objective "
                           "label")
    if constraints in ("tree", "tree_strict"):
        head = {}
        for s, t in on:
            if para[s] != para[t]:
                continue
            if s in head:
                bad.append(f"{s} supports both {head[s]} and {t}")
            head[s] = t
        for start in head:
            node, steps = start, 0
            while node in head and steps <= len(labels):
                node, steps = head[node], steps + 1
                if node == start:
                    bad.append(f"cycle through {start}")
                    break
    if constraints == "tree_strict":
        required = strict_labels or "Premise"
        for s, t in on:
            if labels[s] != required:
                bad.append(f"{s} ({labels[s]}) supports {t} but is not a {required}")
    return bad


def test_the_checker_catches_each_violation():
    pairs = np.array([(s, t) for s in range(3) for t in range(3) if s != t])
    doc = DocumentFeatures(None, None, pairs, None, None, None, np.zeros(3, dtype=np.int64))
    facts = ["fact", "fact", "fact"]
    assert check_constraints("cdcp_strict", doc, facts, [(0, 1), (1, 2), (0, 2)]) == []
    assert check_constraints("cdcp", doc, facts, [(0, 1), (1, 2)])  # not transitive
    assert check_constraints("cdcp", doc, facts, [(0, 1), (1, 0)])  # not antisymmetric
    assert check_constraints("cdcp_strict", doc, ["value", "fact", "fact"], [(0, 1)])
    premises = ["Premise"] * 3
    assert check_constraints("tree_strict", doc, premises, [(0, 1), (1, 2)]) == []
    assert check_constraints("tree", doc, premises, [(0, 1), (0, 2)])  # two heads
    assert check_constraints("tree", doc, premises, [(0, 1), (1, 2), (2, 0)])  # cycle
    assert check_constraints("tree_strict", doc, ["Claim"] + premises[1:], [(0, 1)])


def paragraph_document(rng, n_props, n_paragraphs=1, n_prop_features=6, n_link_features=5):
    """Random features for ``n_props`` propositions in paragraphs of (nearly) equal size."""
    para = np.repeat(np.arange(n_paragraphs), -(-n_props // n_paragraphs))[:n_props]
    pairs = np.array([(s, t) for s in range(n_props) for t in range(n_props)
                      if s != t and para[s] == para[t]], dtype=np.int64).reshape(-1, 2)
    return DocumentFeatures(
        props=sp.random(n_props, n_prop_features, density=0.5, random_state=rng, format="csr"),
        links=sp.random(len(pairs), n_link_features, density=0.5, random_state=rng,
                        format="csr"),
        link_pairs=pairs,
        compat=np.column_stack([np.ones(len(pairs)), np.abs(pairs[:, 0] - pairs[:, 1]) == 1,
                                pairs[:, 0] < pairs[:, 1]]).astype(float),
        triples=np.zeros((0, 3), dtype=np.int64), second_order=np.zeros((0, 35)),
        proposition_paragraph=para.astype(np.int64))


def unary_miner(constraints, rng, scale=1.0, link_bias=0.0, **params):
    labels = CDCP_LABELS if constraints.startswith("cdcp") else ESSAY_LABELS
    link_weights = scale * rng.randn(2, 5)
    link_weights[1] += link_bias  # > 0: adversarial, most links want to be on
    miner = StructuredSVMArgumentMiner(constraints, second_order=(), **params)
    return miner.set_unary_weights(labels, scale * rng.randn(len(labels), 6), link_weights)


CONSTRAINTS = ["cdcp", "cdcp_strict", "tree", "tree_strict"]


@pytest.mark.parametrize("constraints", CONSTRAINTS)
@pytest.mark.parametrize("decode", ["lp", "exact", "milp"])
def test_every_decoder_satisfies_the_constraints_for_random_and_adversarial_weights(
        constraints, decode):
    rng = np.random.RandomState(0)
    X = [paragraph_document(rng, n, n_paragraphs=1 + (n > 5)) for n in (3, 5, 6, 7)]
    n_links = 0
    for scale, bias in ((1.0, 0.0), (3.0, 2.0), (30.0, 25.0), (1e3, 0.0)):
        miner = unary_miner(constraints, rng, scale, bias, decode=decode, lp_max_iter=5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # exact decoding cut short
            predictions = miner.predict(X)
        for doc, (labels, links) in zip(X, predictions):
            assert check_constraints(constraints, doc, labels, links) == []
            n_links += len(links)
    assert n_links > 0  # not vacuous


@pytest.mark.parametrize("constraints", CONSTRAINTS)
def test_lp_rounding_repairs_fractional_solutions(constraints):
    # AD3 stopped after one iteration leaves fractional marginals whose
    # plain rounding breaks the constraints; the rounding must repair them.
    rng = np.random.RandomState(1)
    X = [paragraph_document(rng, 8) for _ in range(6)]
    miner = unary_miner(constraints, rng, 5.0, 6.0, decode="lp", lp_max_iter=1)
    broken = 0
    for doc, (labels, links) in zip(X, miner.predict(X)):
        assert check_constraints(constraints, doc, labels, links) == []
        graph = miner._graph(doc)
        from sksparse_struct.inference import ad3

        values = ad3(graph.graph, *miner._scores(doc, graph), max_iter=1).variables
        codes = np.argmax(values[graph.prop_vars], axis=1)
        plain = [tuple(p) for p in doc.link_pairs[values[graph.link_vars] > 0.5].tolist()]
        broken += bool(check_constraints(constraints, doc, list(miner.classes_[codes]), plain))
    assert broken > 0  # the old per-variable rounding fails on these


def test_tree_rounding_is_the_maximum_spanning_forest():
    # Brute force over all forests of 4 propositions: the rounding's total
    # 2 u - 1 is the best.
    import itertools

    rng = np.random.RandomState(2)
    n = 4
    pairs = np.array([(s, t) for s in range(n) for t in range(n) if s != t])
    for _ in range(20):
        u = rng.rand(len(pairs))
        _, on = round_to_constraints("tree", np.eye(n, 3), u, pairs)
        best = -np.inf
        for heads in itertools.product(range(-1, n), repeat=n):
            if any(h == m for m, h in enumerate(heads)):
                continue
            ok = True
            for m in range(n):
                node, steps = m, 0
                while heads[node] >= 0 and ok:
                    node, steps = heads[node], steps + 1
                    ok = steps <= n
            if not ok:
                continue
            sel = [k for k, (s, t) in enumerate(pairs) if heads[s] == t]
            best = max(best, (2 * u[sel] - 1).sum())
        assert (2 * u[on] - 1).sum() == pytest.approx(best)


def test_cdcp_rounding_keeps_a_feasible_link_set():
    rng = np.random.RandomState(3)
    n = 6
    pairs = np.array([(s, t) for s in range(n) for t in range(n) if s != t])
    doc = DocumentFeatures(None, None, pairs, None, None, None, np.zeros(n, dtype=np.int64))
    for _ in range(30):
        u = rng.rand(len(pairs))
        codes, on = round_to_constraints("cdcp", np.eye(n, 5)[rng.permutation(n) % 5], u, pairs,
                                         illegal_label_pairs=[(4, 0), (3, 1)])
        labels = [CDCP_LABELS[c] for c in codes]
        links = [tuple(p) for p in pairs[on].tolist()]
        assert check_constraints("cdcp", doc, labels, links) == []
        assert not any((codes[s], codes[t]) in {(4, 0), (3, 1)} for s, t in links)


# --- a 60-proposition paragraph ----------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("constraints, decode", [
    ("cdcp_strict", "exact"), ("cdcp_strict", "lp"),
    ("tree_strict", "exact"), ("tree_strict", "lp")])
def test_decoding_a_60_proposition_paragraph_finishes_within_the_constraints(constraints,
                                                                             decode):
    # 60 propositions, 3,540 candidate links, 205,320 transitivity implications.
    rng = np.random.RandomState(4)
    doc = paragraph_document(rng, 60)
    assert doc.link_pairs.shape[0] == 3540
    miner = unary_miner(constraints, rng, 1.0, 0.5, time_limit=60.0, decode=decode)
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        [(labels, links)] = miner.predict([doc])
    elapsed = time.perf_counter() - start
    assert check_constraints(constraints, doc, labels, links) == []
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    # Either it finished in time, or it said what it did instead.
    assert elapsed <= 60 * 1.25 or messages, elapsed
    for message in messages:
        assert "document 0" in message and "satisfies the constraints" in message


def test_a_short_time_limit_falls_back_with_a_warning_that_says_what_it_did():
    rng = np.random.RandomState(5)
    doc = paragraph_document(rng, 12)
    miner = unary_miner("cdcp_strict", rng, 1.0, 0.5, time_limit=1e-6)
    with pytest.warns(UserWarning, match=r"document 0: no time for branch-and-bound "
                                         r"\(time_limit=1e-06 s.*LP relaxation rounded"):
        [(labels, links)] = miner.predict([doc])
    assert check_constraints("cdcp_strict", doc, labels, links) == []
    miner.set_params(decode="milp")
    with pytest.warns(UserWarning, match="document 0: no time left for HiGHS.*LP relaxation"):
        [(labels, links)] = miner.predict([doc])
    assert check_constraints("cdcp_strict", doc, labels, links) == []


def test_a_small_node_budget_is_reported():
    rng = np.random.RandomState(6)
    X = [paragraph_document(rng, 8) for _ in range(6)]
    miner = unary_miner("cdcp_strict", rng, 1.0, 0.0, max_bb_nodes=2, lp_max_iter=50)
    with pytest.warns(UserWarning, match=r"exact decoding fell short for \d of 6 documents.*"
                                         r"stopped after 2 nodes \(max_bb_nodes=2\); kept the "
                                         r"best assignment branch-and-bound found"):
        predictions = miner.predict(X)
    for doc, (labels, links) in zip(X, predictions):
        assert check_constraints("cdcp_strict", doc, labels, links) == []
    # With the default budget the same documents are decoded exactly, silently.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exact = miner.set_params(max_bb_nodes=100).predict(X)
    milp = miner.set_params(decode="milp").predict(X)
    for doc, a, b in zip(X, exact, milp):
        graph = miner._graph(doc)
        scores = miner._scores(doc, graph)
        score = []
        for labels, links in (a, b):
            on = np.array([tuple(p) in set(links) for p in doc.link_pairs.tolist()])
            codes = np.searchsorted(miner.classes_, labels)
            score.append(miner._assignment_score(doc, graph, scores, codes, on))
        assert score[0] == pytest.approx(score[1], rel=1e-5, abs=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("constraints", ["cdcp", "tree"])
def test_a_fit_pass_on_a_60_proposition_paragraph_finishes(constraints):
    rng = np.random.RandomState(7)
    doc = paragraph_document(rng, 60)
    labels = list(rng.choice(ESSAY_LABELS, size=60))
    links = [(s, s + 1) for s in range(0, 58, 3)]
    miner = StructuredSVMArgumentMiner(constraints, second_order=(), max_iter=1,
                                       random_state=0)
    start = time.perf_counter()
    miner.fit([doc], [(labels, links)])
    assert miner.n_iter_ == 1
    assert time.perf_counter() - start < 300


def test_the_score_of_a_structure_is_the_map_objective():
    # The miner compares the structures it found by their score: that score
    # must be the factor graph's objective (here with second-order factors).
    from .test_miner import _dataset

    rng = np.random.RandomState(8)
    X, y = _dataset(rng, n_docs=4)
    miner = StructuredSVMArgumentMiner("cdcp_strict", second_order=("coparent", "grandparent"),
                                       max_iter=2, random_state=0).fit(X, y)
    miner.coef_ = miner.coef_ + rng.randn(miner.coef_.shape[0])
    from sksparse_struct.inference import milp_map

    for doc in X:
        graph = miner._graph(doc)
        scores = miner._scores(doc, graph)
        result = milp_map(graph.graph, *scores)
        codes, on, _ = miner._structure(doc, graph, result.variables)
        assert miner._assignment_score(doc, graph, scores, codes, on) == \
            pytest.approx(result.objective, rel=1e-9, abs=1e-9)
