"""SparseMAPArgumentMiner: the gold encoding, the objective's gradient, fit and predict."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone

from sksparse_struct import SparseMAPArgumentMiner
from sksparse_struct.argument_mining._miner import CDCP_OBJECTIVITY
from sksparse_struct.argument_mining._problem import (
    marginals_from_structure,
    structure_from_marginals,
)
from sksparse_struct.argument_mining._sparsemap_miner import _SparseMAPProblem
from sksparse_struct.learners import SparseGradient
from sksparse_struct.learners._online_fast import aligned_zeros

from .test_miner import _dataset, _problem


@pytest.mark.parametrize("second_order", [(), ("coparent", "grandparent", "sibling")])
def test_marginals_from_structure_inverts_structure_from_marginals(second_order):
    rng = np.random.RandomState(0)
    problem, doc, graph = _problem(rng, n=4, second_order=second_order)
    y_u, y_v = marginals_from_structure(graph, problem.layout,
                                        *problem._unpack(0, problem.gold(0)))
    np.testing.assert_array_equal(
        structure_from_marginals(graph, problem.layout, y_u, y_v), problem.gold(0))
    # the gold is an allowed assignment of the graph, scored as the structure
    from sksparse_struct.inference._ad3 import evaluate

    cg = graph.graph.compile()
    feasible, _, add = evaluate(cg, np.zeros(cg.n_variables), np.zeros(cg.n_scores),
                                y_u.astype(np.int64))
    assert feasible
    np.testing.assert_array_equal(add, y_v)


@pytest.mark.parametrize("loss", ["sparsemap", "margin_sparsemap"])
def test_batch_gradient_matches_finite_differences(loss):
    rng = np.random.RandomState(1)
    problem, _, _ = _problem(rng, n=3)
    losses = _SparseMAPProblem(problem, loss, {"tol": 1e-11, "max_iter": 100000})
    w = rng.normal(scale=0.3, size=problem.n_params)
    # the gradient as the learner receives it: one batch of document 0, part 0
    gradient = SparseGradient(aligned_zeros((problem.n_params, 2)),
                              np.zeros((1, problem.n_params), dtype=np.int64),
                              np.zeros(1, dtype=np.int64))
    value = losses.batch_gradient(w, np.array([0]), gradient, 0, 1)[0]
    assert value >= 0.0  # the losses are non-negative
    grad = gradient.values[:, 0]
    assert set(np.flatnonzero(grad)) <= set(gradient.touched[0, :gradient.n_touched[0]])

    def loss_at(v):
        return losses._document(v, 0)[1][0]

    eps = 1e-6
    for _ in range(3):
        d = rng.normal(size=w.shape[0])
        fd = (loss_at(w + eps * d) - loss_at(w - eps * d)) / (2 * eps)
        assert grad @ d == pytest.approx(fd, rel=1e-4, abs=1e-5)


@pytest.mark.parametrize("loss", ["sparsemap", "margin_sparsemap"])
def test_fit_learns_a_separable_problem(loss):
    rng = np.random.RandomState(3)
    X, y = _dataset(rng)
    miner = SparseMAPArgumentMiner("cdcp", C=10.0, max_iter=60, tol=None, loss=loss,
                                   learning_rate=0.5, random_state=0).fit(X, y)
    assert miner.predict(X) == [(list(labels), list(links)) for labels, links in y]
    assert miner.n_iter_ == len(miner.loss_curve_) == len(miner.n_lp_not_converged_)
    assert miner.loss_curve_[-1] < miner.loss_curve_[0]


def test_early_stopping_scores_held_out_documents_and_keeps_the_best_epoch():
    from sksparse_struct.metrics import argument_f1_score
    from sksparse_struct.utils._estimator import validation_split

    rng = np.random.RandomState(3)
    X, y = _dataset(rng, n_docs=12)
    miner = SparseMAPArgumentMiner("cdcp", C=10.0, max_iter=8, tol=1e-9, learning_rate=0.5,
                                   early_stopping=True, validation_fraction=0.25,
                                   n_iter_no_change=2, random_state=0).fit(X, y)
    assert len(miner.validation_scores_) == miner.n_iter_ == len(miner.loss_curve_)
    assert miner.best_validation_score_ == max(miner.validation_scores_)
    # The held-out documents: ceil(0.25 * 12) = 3, the split of the estimator's
    # random state; the kept weights score the best epoch's score on them.
    _, held_out = validation_split(np.arange(12), 0.25, np.random.RandomState(0),
                                   what="documents")
    assert held_out.shape[0] == 3
    pred = miner.predict([X[i] for i in held_out])
    assert argument_f1_score([y[i] for i in held_out], pred) == pytest.approx(
        miner.best_validation_score_)
    # Without early stopping: every document trains, no validation scores.
    plain = SparseMAPArgumentMiner("cdcp", max_iter=2, random_state=0).fit(X, y)
    assert plain.validation_scores_ == [] and plain.best_validation_score_ is None
    with pytest.raises(ValueError, match="validation_fraction"):
        SparseMAPArgumentMiner(early_stopping=True, validation_fraction=1.5).fit(X, y)
    with pytest.raises(ValueError, match="n_iter_no_change"):
        SparseMAPArgumentMiner(n_iter_no_change=0).fit(X, y)


def test_results_do_not_depend_on_n_jobs_and_it_pickles():
    rng = np.random.RandomState(5)
    X, y = _dataset(rng, n_docs=8)
    one = SparseMAPArgumentMiner(max_iter=5, batch_size=4, random_state=0).fit(X, y)
    two = SparseMAPArgumentMiner(max_iter=5, batch_size=4, random_state=0, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(one.coef_, two.coef_)
    again = pickle.loads(pickle.dumps(one))
    assert again.predict(X) == one.predict(X)
    assert clone(one).get_params() == one.get_params()
    for (prop, links), doc in zip(one.predict_marginals(X), X):
        assert prop.shape == (doc.props.shape[0], len(one.classes_))
        np.testing.assert_allclose(prop.sum(axis=1), 1.0, atol=1e-4)
        assert np.all((links >= 0) & (links <= 1))


def test_predictions_on_the_cdcp_sample_respect_the_constraints():
    from sksparse_struct.datasets import load_cdcp_sample
    from sksparse_struct.feature_extraction import ArgumentFeatures

    X_train, y_train, X_test, y_test = load_cdcp_sample()
    features = ArgumentFeatures().fit(X_train, y_train)
    miner = SparseMAPArgumentMiner(max_iter=10, random_state=0)
    miner.fit(features.transform(X_train), y_train)
    rank = {label: r for r, label in enumerate(CDCP_OBJECTIVITY)}
    for labels, links in miner.predict(features.transform(X_test)):
        links = set(links)
        for s, t in links:
            assert (t, s) not in links
            assert rank[labels[s]] <= rank[labels[t]]
            assert all((s, c) in links for t2, c in links if t2 == t and c != s)
    assert 0.0 <= miner.score(features.transform(X_test), y_test) <= 1.0


def test_bad_parameters_are_named():
    rng = np.random.RandomState(6)
    X, y = _dataset(rng, n_docs=3)
    with pytest.raises(ValueError, match="loss"):
        SparseMAPArgumentMiner(loss="hinge").fit(X, y)
    with pytest.raises(ValueError, match="tol"):
        SparseMAPArgumentMiner(tol=0).fit(X, y)
    with pytest.raises(ValueError, match="batch_size"):
        SparseMAPArgumentMiner(batch_size=0).fit(X, y)
    with pytest.raises(ValueError, match="lp_gap_tol"):
        SparseMAPArgumentMiner(lp_gap_tol=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="3 documents but y has 2"):
        SparseMAPArgumentMiner().fit(X, y[:2])
