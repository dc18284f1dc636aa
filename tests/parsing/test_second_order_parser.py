"""SparseMAPParser with second-order parts: training, decoding, sparse outputs, contract."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone

from sksparse_struct import SparseMAPParser
from sksparse_struct.datasets import load_ewt_sample
from sksparse_struct.metrics import uas_score

from .test_parser import is_projective, is_tree, small_parser, treebank

STANDARD = ("arc", "sibling", "grandparent")
SECOND_ORDER_LOSSES = ["hinge", "perceptron", "sparsemap", "margin_sparsemap"]


@pytest.fixture(scope="module")
def data():
    return treebank(40, True, 3)


@pytest.fixture(scope="module")
def labelled():
    return treebank(30, False, 4, labels=True)


@pytest.mark.parametrize("loss", SECOND_ORDER_LOSSES)
@pytest.mark.parametrize("projective", [True, False])
def test_fits_a_planted_treebank(data, loss, projective):
    X, y = data
    parser = small_parser(loss=loss, parts=STANDARD, projective=projective, max_iter=4,
                          tol=None).fit(X, y)
    heads = parser.predict(X)
    assert all(is_tree(h) for h in heads)
    if projective:
        assert all(is_projective(h) for h in heads)
    assert uas_score(y, heads) > 0.8
    counts = parser.decoding_counts_
    assert counts["certified"] + counts["branch_and_bound"] + counts["rounded"] == len(X)
    report = parser.pruning_report_
    assert report.recall == 1.0 and report.n_sentences == len(X)
    assert parser.pruner_.loss == "crf"
    assert parser.n_lp_not_converged_ >= 0 and parser.n_sparsemap_not_converged_ == 0


@pytest.mark.parametrize("parts", [("arc", "sibling"), ("arc", "grandparent")])
def test_one_kind_of_second_order_part(data, parts):
    X, y = data
    parser = small_parser(loss="hinge", parts=parts, projective=True, max_iter=3,
                          tol=None).fit(X, y)
    assert uas_score(y, parser.predict(X)) > 0.8


def _random_tree(rng, n):
    order = rng.permutation(np.arange(1, n + 1))
    heads = np.zeros(n, dtype=np.int64)
    for i, m in enumerate(order[1:], start=1):
        heads[m - 1] = order[rng.integers(i)]
    return heads.tolist()


def test_branch_and_bound_budget(data):
    # Random trees to learn: scores whose relaxation is not always tight.
    X, _ = data
    rng = np.random.default_rng(0)
    y = [_random_tree(rng, len(s)) for s in X]
    parser = small_parser(loss="hinge", parts=STANDARD, projective=False, max_iter=2,
                          tol=None).fit(X, y)
    exact = parser.set_params(max_bb_nodes=10000).predict(X)
    counts = parser.decoding_counts_
    assert counts["rounded"] == 0 and counts["branch_and_bound"] > 0
    rounded = parser.set_params(max_bb_nodes=0).predict(X)
    assert parser.decoding_counts_ == {**counts, "branch_and_bound": 0,
                                       "rounded": counts["branch_and_bound"]}
    assert all(is_tree(h) for h in exact + rounded)
    with pytest.raises(ValueError, match="max_bb_nodes must be an integer >= 0"):
        parser.set_params(max_bb_nodes=-1).predict(X)
    with pytest.raises(ValueError, match="max_bb_nodes"):
        small_parser(loss="hinge", parts=STANDARD, max_bb_nodes=1.5).fit(X, y)


def test_sparse_outputs(data):
    X, y = data
    parser = small_parser(loss="sparsemap", parts=STANDARD, projective=True, max_iter=2,
                          tol=None).fit(X, y)
    supports = parser.predict_sparse(X[:5])
    marginals = parser.predict_marginals(X[:5])
    for sentence, support, mu in zip(X[:5], supports, marginals):
        n = len(sentence)
        assert mu.shape == (n + 1, n + 1)
        np.testing.assert_allclose(mu[:, 1:].sum(axis=0), 1.0, atol=1e-9)
        probs = [p for _, p in support]
        assert sum(probs) == pytest.approx(1.0, abs=1e-6)
        expected = np.zeros((n + 1, n + 1))
        for heads, p in support:
            assert is_tree(heads) and is_projective(heads)
            expected[heads, np.arange(1, n + 1)] += p
        # The marginals are those of the tree factor's distribution.
        np.testing.assert_allclose(expected, mu, atol=1e-9)


def test_labels_and_n_jobs(labelled):
    X, y = labelled
    fits = [small_parser(loss="hinge", parts=STANDARD, max_iter=2, tol=None, n_jobs=j).fit(X, y)
            for j in (1, 2)]
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    heads, deprels = fits[0].predict(X, return_deprel=True)
    heads2, deprels2 = fits[1].predict(X, return_deprel=True)
    assert [h.tolist() for h in heads] == [h.tolist() for h in heads2] and deprels == deprels2
    assert all(len(d) == len(s) for d, s in zip(deprels, X))


def test_pickle_and_clone(data):
    X, y = data
    parser = small_parser(loss="perceptron", parts=STANDARD, max_iter=1, tol=None).fit(X, y)
    again = pickle.loads(pickle.dumps(parser))
    assert [h.tolist() for h in again.predict(X)] == [h.tolist() for h in parser.predict(X)]
    assert clone(parser).get_params()["parts"] == STANDARD


@pytest.mark.parametrize("parts, message", [
    (("sibling",), "'arc' included"),
    (("arc", "sibling", "sibling"), "once"),
    (("arc", "trigram"), "among"),
    ("arc", "parts"),
])
def test_bad_parts(data, parts, message):
    X, y = data
    with pytest.raises(ValueError, match=message):
        small_parser(parts=parts).fit(X, y)


def test_crf_loss_is_first_order_only(data):
    X, y = data
    with pytest.raises(ValueError, match="intractable"):
        small_parser(loss="crf", parts=STANDARD).fit(X, y)


@pytest.mark.slow
def test_ewt_sample_second_order_not_worse():
    X, y = load_ewt_sample("train", return_X_y=True, target="tree")
    Xt, yt = load_ewt_sample("test", return_X_y=True, target="tree")
    scores = {}
    for parts in (("arc",), STANDARD):
        parser = SparseMAPParser("hinge", projective=True, parts=parts, max_iter=3, tol=None,
                                 random_state=0).fit(X, y)
        scores[parts] = parser.score(Xt, yt)
    assert scores[STANDARD] >= scores[("arc",)] - 0.02
