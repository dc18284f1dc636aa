"""StructuredSVMArgumentMiner refuses bad parameters and input at predict time too, and
takes integer labels."""

import re

import numpy as np
import pytest

from sksparse_struct import StructuredSVMArgumentMiner

from .test_constraints import ESSAY_LABELS, check_constraints, paragraph_document


def _data(rng, labels, n_docs=6):
    X, y = [], []
    for _ in range(n_docs):
        doc = paragraph_document(rng, rng.randint(2, 5))
        n = doc.props.shape[0]
        lab = [labels[i] for i in rng.randint(len(labels), size=n)]
        links = [(s, s + 1) for s in range(n - 1) if rng.rand() < 0.5]
        X.append(doc)
        y.append((lab, links))
    return X, y


@pytest.mark.parametrize("param, value", [("constraints", "tree_stirct"), ("decode", "lpp"),
                                          ("time_limit", -1.0)])
def test_misspelled_parameters_after_set_unary_weights_are_clear_errors(param, value):
    rng = np.random.RandomState(0)
    X = [paragraph_document(rng, 4)]
    miner = StructuredSVMArgumentMiner("tree", second_order=()).set_unary_weights(
        ESSAY_LABELS, rng.randn(3, 6), rng.randn(2, 5))
    miner.set_params(**{param: value})
    for method in (miner.predict, miner.predict_marginals):
        with pytest.raises(ValueError, match=f"'{param}' parameter"):
            method(X)
    with pytest.raises(ValueError, match=f"'{param}' parameter"):
        StructuredSVMArgumentMiner(second_order=(), **{param: value}).set_unary_weights(
            ESSAY_LABELS, rng.randn(3, 6), rng.randn(2, 5))


def test_a_bad_strict_label_set_after_fit_is_named_at_predict():
    rng = np.random.RandomState(1)
    X = [paragraph_document(rng, 4)]
    miner = StructuredSVMArgumentMiner("tree", second_order=()).set_unary_weights(
        ESSAY_LABELS, rng.randn(3, 6), rng.randn(2, 5))
    miner.set_params(constraints="tree_strict", strict_labels="Premis")
    with pytest.raises(ValueError, match="strict_labels must be the one label.*'Premis'"):
        miner.predict(X)


@pytest.mark.parametrize("constraints", ["none", "tree", "tree_strict", "cdcp_strict"])
def test_integer_labels_work_and_come_back_as_integers(constraints):
    rng = np.random.RandomState(2)
    X, y = _data(rng, [0, 1, 2])
    strict = {"tree_strict": 2, "cdcp_strict": (2, 0, 1)}.get(constraints)
    miner = StructuredSVMArgumentMiner(constraints, strict_labels=strict, max_iter=3,
                                       random_state=0, second_order=("grandparent",))
    miner.fit(X, y)
    assert miner.classes_.tolist() == [0, 1, 2]
    for doc, (labels, links) in zip(X, miner.predict(X)):
        assert all(type(label) is int for label in labels)
        assert set(labels) <= {0, 1, 2}
        if constraints == "tree_strict":
            assert all(labels[s] == 2 for s, _ in links)
        if constraints == "cdcp_strict":
            order = [2, 0, 1]
            assert all(order.index(labels[s]) <= order.index(labels[t]) for s, t in links)
    assert 0 <= miner.score(X, y) <= 1
    # numpy integers too, and the same model as with the labels as strings
    X2, y2 = X, [(np.array(lab, dtype=np.int64), links) for lab, links in y]
    assert miner.predict(X) == miner.fit(X2, y2).predict(X)


def test_integer_classes_in_set_unary_weights_sort_by_value():
    rng = np.random.RandomState(3)
    doc = paragraph_document(rng, 3)
    doc = doc._replace(props=doc.props.copy())
    doc.props.data[:] = 1.0  # non-negative features: the row scored 5 always wins
    W = np.array([[0.0], [5.0], [1.0]]) * np.ones((3, 6))
    miner = StructuredSVMArgumentMiner("none", second_order=(), decode="lp")
    miner.set_unary_weights([2, 10, 9], W, np.zeros((2, 5)))
    assert miner.classes_.tolist() == [2, 9, 10]  # by value, not as strings
    labels, _ = miner.predict([doc])[0]
    has_features = np.asarray(doc.props.sum(axis=1)).ravel() > 0
    assert [lab for lab, f in zip(labels, has_features) if f] == [10] * int(has_features.sum())
    assert has_features.any()


def test_mixed_and_bad_labels_are_named():
    rng = np.random.RandomState(4)
    X, y = _data(rng, ["a", "b"], n_docs=2)
    bad = [y[0], ([0] + list(y[1][0][1:]), y[1][1])]
    with pytest.raises(ValueError, match="mixes string and integer labels.*document 1, "
                                         "proposition 0"):
        StructuredSVMArgumentMiner("none").fit(X, bad)
    bad = [y[0], ([0.5] + list(y[1][0][1:]), y[1][1])]
    with pytest.raises(ValueError, match="document 1, proposition 0: label 0.5 is a float"):
        StructuredSVMArgumentMiner("none").fit(X, bad)


@pytest.mark.parametrize("link", [(0.5, 1), (0, "x"), (True, 1)])
def test_fractional_link_indices_name_the_document_and_link(link):
    rng = np.random.RandomState(5)
    X, y = _data(rng, ["a", "b"], n_docs=3)
    bad = list(y)
    bad[2] = (bad[2][0], [link])
    with pytest.raises(ValueError, match=re.escape(f"document 2: link {link!r} must name")):
        StructuredSVMArgumentMiner("none").fit(X, bad)
    # whole numbers given as floats are fine
    ok = list(y)
    ok[2] = (ok[2][0], [(1.0, 0.0)])
    StructuredSVMArgumentMiner("none", max_iter=1).fit(X, ok)


def test_the_default_model_on_essay_labels_names_the_tree_constraints():
    rng = np.random.RandomState(6)
    X, y = _data(rng, ESSAY_LABELS)
    with pytest.raises(ValueError, match=r"constraints='tree' or 'tree_strict'") as info:
        StructuredSVMArgumentMiner().fit(X, y)
    assert "MajorClaim" in str(info.value)
    miner = StructuredSVMArgumentMiner("tree_strict", max_iter=2, random_state=0).fit(X, y)
    for doc, (labels, links) in zip(X, miner.predict(X)):
        assert check_constraints("tree_strict", doc, labels, links) == []
