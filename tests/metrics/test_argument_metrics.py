"""Tests for the argument-mining metrics against scikit-learn and by hand."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.base import BaseEstimator
from sklearn.metrics import f1_score, precision_recall_fscore_support
from sklearn.model_selection import GridSearchCV

from sksparse_struct.metrics import (
    argument_classification_report,
    argument_f1_score,
    argument_f1_scorer,
    link_f1_score,
    link_f1_scorer,
    proposition_f1_score,
    proposition_f1_scorer,
)

LABELS = ["fact", "policy", "reference", "testimony", "value"]


@st.composite
def target_pairs(draw):
    """Gold and predicted targets of a few documents with the same propositions."""
    n_docs = draw(st.integers(1, 4))
    y_true, y_pred = [], []
    for _ in range(n_docs):
        n = draw(st.integers(1, 5))
        pairs = [(s, t) for s in range(n) for t in range(n) if s != t]
        label = st.sampled_from(LABELS[:4])
        links = st.lists(st.sampled_from(pairs), max_size=6) if pairs else st.just([])
        y_true.append((draw(st.lists(label, min_size=n, max_size=n)), draw(links)))
        y_pred.append((draw(st.lists(label, min_size=n, max_size=n)), draw(links)))
    return y_true, y_pred


def flat_links(y):
    """A 0/1 entry per candidate link (ordered pair of distinct propositions)."""
    out = []
    for labels, links in y:
        n = len(labels)
        out.extend(int((s, t) in set(links)) for s in range(n) for t in range(n) if s != t)
    return out


def flat_labels(y):
    return [a for labels, _ in y for a in labels]


@given(target_pairs())
def test_link_f1_equals_sklearn_on_candidate_pairs(pair):
    y_true, y_pred = pair
    if not flat_links(y_true):  # no candidate link at all
        assert link_f1_score(y_true, y_pred) == 0.0
        return
    expected = f1_score(flat_links(y_true), flat_links(y_pred), zero_division=0)
    assert link_f1_score(y_true, y_pred) == pytest.approx(expected)


@given(target_pairs(), st.sampled_from(["macro", "micro", "weighted", None]),
       st.booleans())
def test_proposition_f1_equals_sklearn_on_pooled_labels(pair, average, fixed):
    y_true, y_pred = pair
    labels = LABELS if fixed else None
    expected = f1_score(flat_labels(y_true), flat_labels(y_pred), average=average,
                        labels=labels, zero_division=0)
    got = proposition_f1_score(y_true, y_pred, average=average, labels=labels)
    np.testing.assert_allclose(got, expected, atol=1e-12)
    link = link_f1_score(y_true, y_pred)
    macro = proposition_f1_score(y_true, y_pred, labels=labels)
    assert argument_f1_score(y_true, y_pred, labels=labels) == pytest.approx(
        (link + macro) / 2)
    assert 0 <= argument_f1_score(y_true, y_pred) <= 1


def test_hand_computed():
    y_true = [(["value", "policy", "fact"], [(0, 1), (2, 1)]),
              (["value", "value"], []),
              (["testimony", "fact"], [(1, 0)])]
    y_pred = [(["value", "value", "fact"], [(0, 1), (1, 2), (1, 2)]),
              (["value", "value"], [(0, 1)]),
              (["testimony", "fact"], [(1, 0)])]
    # links: gold 3, predicted 4 distinct ((1, 2) twice counts once), 2 correct.
    assert link_f1_score(y_true, y_pred) == pytest.approx(2 * 2 / (4 + 3))
    # fact 2/2 -> 1; policy 0/1 -> 0; testimony 1; value: tp 3, pred 4, gold 3 -> 6/7.
    per_class = proposition_f1_score(y_true, y_pred, average=None)
    np.testing.assert_allclose(per_class, [1, 0, 1, 6 / 7])
    assert proposition_f1_score(y_true, y_pred) == pytest.approx((2 + 6 / 7) / 4)
    # With the five CDCP classes, "reference" (absent everywhere) scores 0.
    per_class = proposition_f1_score(y_true, y_pred, average=None, labels=LABELS)
    np.testing.assert_allclose(per_class, [1, 0, 0, 1, 6 / 7])
    assert proposition_f1_score(y_true, y_pred, labels=LABELS) == pytest.approx(
        (2 + 6 / 7) / 5)
    assert proposition_f1_score(y_true, y_pred, average="micro") == pytest.approx(6 / 7)
    assert argument_f1_score(y_true, y_pred) == pytest.approx((4 / 7 + (2 + 6 / 7) / 4) / 2)
    # Nothing to find and nothing found: 0.
    assert link_f1_score([(["a", "b"], [])], [(["a", "b"], [])]) == 0.0
    assert link_f1_score(y_true, y_true) == 1.0
    assert argument_f1_score(y_true, y_true) == 1.0


def _counts_for(f1_percent):
    """(tp, errors) with the fewest errors whose F1 rounds to ``f1_percent``."""
    for errors in range(1, 200):
        for tp in range(1, 1000):
            if round(200 * tp / (2 * tp + errors), 1) == f1_percent:
                return tp, errors
    raise AssertionError(f1_percent)


def test_paper_macro_average_of_five_classes():
    # Niculae et al. (2017), strict structured SVM on CDCP: the per-class F1
    # (76.4, 76.8, 71.5, 41.3, 100) average to the proposition F1 73.2.
    # Errors are made with a sixth label that is not scored, so that each
    # class's counts can be set independently.
    targets = dict(zip(["value", "policy", "testimony", "fact"], [76.4, 76.8, 71.5, 41.3]))
    gold, pred = ["reference"], ["reference"]
    for label, percent in targets.items():
        tp, errors = _counts_for(percent)
        n_fp = errors // 2
        gold += [label] * tp + [label] * (errors - n_fp) + ["other"] * n_fp
        pred += [label] * tp + ["other"] * (errors - n_fp) + [label] * n_fp
    y_true, y_pred = [(gold, [])], [(pred, [])]
    labels = ["value", "policy", "testimony", "fact", "reference"]
    per_class = proposition_f1_score(y_true, y_pred, average=None, labels=labels)
    assert [round(100 * f, 1) for f in per_class] == [76.4, 76.8, 71.5, 41.3, 100.0]
    assert round(100 * proposition_f1_score(y_true, y_pred, labels=labels), 1) == 73.2
    np.testing.assert_allclose(per_class, f1_score(gold, pred, labels=labels, average=None))


def test_report():
    y_true = [(["value", "policy", "fact"], [(0, 1), (2, 1)]),
              (["testimony", "fact"], [(1, 0)])]
    y_pred = [(["value", "value", "fact"], [(0, 1), (1, 2)]),
              (["testimony", "fact"], [(1, 0)])]
    report = argument_classification_report(y_true, y_pred, labels=LABELS, digits=4)
    lines = report.splitlines()
    assert lines[0].split() == ["precision", "recall", "f1-score", "support"]
    rows = {line[:17].strip(): line[17:].split() for line in lines[1:] if line.strip()}
    assert rows["links"] == ["0.6667", "0.6667", "0.6667", "3"]
    p, r, f, s = precision_recall_fscore_support(
        flat_labels(y_true), flat_labels(y_pred), labels=LABELS, zero_division=0)
    for k, label in enumerate(LABELS):
        assert rows[label] == [f"{p[k]:.4f}", f"{r[k]:.4f}", f"{f[k]:.4f}", str(s[k])]
    assert rows["macro avg (props)"] == [f"{p.mean():.4f}", f"{r.mean():.4f}",
                                         f"{f.mean():.4f}", "5"]
    assert rows["argument F1"] == [
        f"{argument_f1_score(y_true, y_pred, labels=LABELS):.4f}"]
    with pytest.raises(ValueError, match="digits"):
        argument_classification_report(y_true, y_pred, digits=-1)


@pytest.mark.parametrize("y_true, y_pred, match", [
    ([(["a"], [])], [], "same number of documents; got 1 and 0"),
    ([(["a"], []), (["a", "b"], [])], [(["a"], []), (["a"], [])],
     "document 1 has 2 proposition labels in y_true but 1 in y_pred"),
    ([(["a", "b"], [(0, 2)])], [(["a", "b"], [])],
     r"document 0 of y_true: link \(0, 2\) refers to a proposition out of range"),
    ([(["a", "b"], [])], [(["a", "b"], [(1, 1)])],
     r"document 0 of y_pred: link \(1, 1\) is a self-link"),
    ([(["a", "b"], [])], [(["a", "b"], [(-1, 0)])], "out of range"),
    ([(["a", "b"], [])], [(["a", "b"], [(0, 0.5)])], "not a \\(source, target\\) pair"),
    ([(["a", "b"], [])], [(["a", "b"], [0])], "not a \\(source, target\\) pair"),
    ([(["a", "b"], [])], [["a", "b", "c"]], "document 0 of y_pred must be a \\(labels, links\\)"),
    ([("ab", [])], [("ab", [])], "labels must be a list, not a str"),
    ("ab", "ab", "y_true must be a list of"),
])
def test_validation(y_true, y_pred, match):
    for score in (link_f1_score, proposition_f1_score, argument_f1_score,
                  argument_classification_report):
        with pytest.raises(ValueError, match=match):
            score(y_true, y_pred)


def test_bad_parameters():
    y = [(["a", "b"], [(0, 1)])]
    with pytest.raises(ValueError, match="average must be one of"):
        proposition_f1_score(y, y, average="binary")
    with pytest.raises(ValueError, match="duplicates"):
        proposition_f1_score(y, y, labels=["a", "a"])
    with pytest.raises(ValueError, match="not be empty"):
        proposition_f1_score(y, y, labels=[])


def test_documents_without_propositions():
    y = [([], []), ([], [])]
    assert proposition_f1_score(y, y) == 0.0
    assert proposition_f1_score(y, y, average="weighted") == 0.0
    assert argument_f1_score(y, y) == 0.0
    assert "argument F1" in argument_classification_report(y, y)
    y_true = [([], []), (["a", "b"], [(0, 1)])]
    assert argument_f1_score(y_true, y_true) == 1.0


def test_numpy_inputs():
    y_true = [(np.array(["a", "b", "a"]), np.array([[0, 1], [2, 1]]))]
    y_pred = [(["a", "b", "b"], [(np.int64(0), np.int64(1))])]
    assert link_f1_score(y_true, y_pred) == pytest.approx(2 / 3)
    assert proposition_f1_score(y_true, y_pred) == pytest.approx(2 / 3)  # a: 2/3, b: 2/3


class ConstantMiner(BaseEstimator):
    """Predicts one label for every proposition and a chain of links."""

    def __init__(self, label="value", chain=False):
        self.label = label
        self.chain = chain

    def fit(self, X, y):
        return self

    def predict(self, X):
        return [([self.label] * n, [(i, i + 1) for i in range(n - 1)] if self.chain else [])
                for n in X]


def test_scorers_in_grid_search():
    X = [2, 3, 4, 2, 3, 4]
    y = [(["fact"] * n, [(i, i + 1) for i in range(n - 1)]) for n in X]
    miner = ConstantMiner("fact", chain=True)
    assert link_f1_scorer(miner, X, y) == 1.0
    assert proposition_f1_scorer(miner, X, y) == 1.0
    assert argument_f1_scorer(miner, X, y) == 1.0
    assert argument_f1_scorer(ConstantMiner("value"), X, y) == 0.0
    search = GridSearchCV(ConstantMiner(), {"label": ["value", "fact"], "chain": [False, True]},
                          scoring={"arg": argument_f1_scorer, "link": link_f1_scorer},
                          refit="arg", cv=3)
    search.fit(X, y)
    assert search.best_params_ == {"chain": True, "label": "fact"}
    assert search.cv_results_["mean_test_link"].tolist() == [0, 0, 1, 1]
