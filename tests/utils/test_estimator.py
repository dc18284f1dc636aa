"""The estimators' shared part: tags, score, thread count and the held-out split."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator

from sksparse_struct import (
    EasyFirstTagger,
    LinearChainCRF,
    NeuralEasyFirstTagger,
    SparseMAPArgumentMiner,
    SparseMAPParser,
    StructuredSVMArgumentMiner,
)
from sksparse_struct.utils._estimator import (
    StructuredEstimatorMixin,
    TagsMixin,
    validation_split,
)

STRUCTURED = [LinearChainCRF, EasyFirstTagger, NeuralEasyFirstTagger, SparseMAPParser,
              StructuredSVMArgumentMiner, SparseMAPArgumentMiner]


@pytest.mark.parametrize("n, fraction, n_valid", [
    (10, 0.1, 1), (10, 0.11, 2), (10, 0.25, 3), (7, 0.5, 4), (3, 0.01, 1), (100, 0.1, 10),
])
def test_validation_split_rounds_up(n, fraction, n_valid):
    ids = np.arange(100, 100 + n)
    train, valid = validation_split(ids, fraction, np.random.RandomState(0))
    assert len(valid) == n_valid and len(train) == n - n_valid
    assert np.all(np.diff(train) > 0) and np.all(np.diff(valid) > 0)
    np.testing.assert_array_equal(np.sort(np.concatenate([train, valid])), ids)


def test_validation_split_is_one_permutation_of_the_rng():
    ids = np.arange(20)
    train, valid = validation_split(ids, 0.3, np.random.RandomState(4))
    perm = np.random.RandomState(4).permutation(20)
    np.testing.assert_array_equal(valid, np.sort(perm[:6]))
    np.testing.assert_array_equal(train, np.sort(perm[6:]))


@pytest.mark.parametrize("n, fraction", [(1, 0.5), (2, 0.99), (5, 0.9)])
def test_validation_split_needs_both_sides(n, fraction):
    with pytest.raises(ValueError, match=rf"early_stopping needs at least one training and "
                                         rf"one validation item; validation_fraction="
                                         rf"{fraction} of {n} documents"):
        validation_split(np.arange(n), fraction, np.random.RandomState(0), "documents")


class _Base(TagsMixin, BaseEstimator):
    _sklearn_tags = {"input_tags.two_d_array": False, "requires_fit": False}


class _Child(_Base):
    _sklearn_tags = {"requires_fit": True, "input_tags.string": True}


def test_tags_of_the_bases_apply_first():
    tags = _Child().__sklearn_tags__()
    assert tags.input_tags.two_d_array is False
    assert tags.input_tags.string is True
    assert tags.requires_fit is True  # the subclass overrides its base
    assert _Base().__sklearn_tags__().requires_fit is False


def test_unknown_tag_is_named():
    class Wrong(TagsMixin, BaseEstimator):
        _sklearn_tags = {"input_tags.spares": True}

    with pytest.raises(AttributeError, match="Wrong._sklearn_tags.*'input_tags.spares'"):
        Wrong().__sklearn_tags__()


@pytest.mark.parametrize("cls", STRUCTURED)
def test_structured_estimators_share_tags_score_and_threads(cls):
    assert issubclass(cls, StructuredEstimatorMixin)
    tags = cls().__sklearn_tags__()
    assert tags.input_tags.two_d_array is False
    assert tags.target_tags.required is True
    assert tags.non_deterministic is False
    assert "score" not in cls.__dict__ and "__sklearn_tags__" not in cls.__dict__
    assert cls(n_jobs=None)._n_threads() == 1
    assert cls(n_jobs=2)._n_threads() == 2


def test_neural_tagger_takes_strings():
    assert NeuralEasyFirstTagger().__sklearn_tags__().input_tags.string is True


def test_score_is_the_metric_of_predict():
    class Echo(StructuredEstimatorMixin, BaseEstimator):
        _score_metric = staticmethod(lambda y, y_pred: (y, y_pred))

        def predict(self, X):
            return [x * 2 for x in X]

    assert Echo().score([1, 2], "gold") == ("gold", [2, 4])


def test_parser_score_takes_labelled_pairs():
    metric = SparseMAPParser._score_metric
    heads = [np.array([2, 0]), np.array([0])]
    assert metric([[2, 0], [0]], heads) == 1.0
    assert metric([([2, 0], ["det", "root"]), ([0], ["root"])], heads) == 1.0
    assert metric([[0, 1], [0]], heads) == pytest.approx(1 / 3)


SHARED = {"max_iter", "tol", "verbose", "random_state", "n_jobs"}
ONLINE = {"learning_rate", "batch_size"}
EARLY = {"early_stopping", "validation_fraction", "n_iter_no_change"}


@pytest.mark.parametrize("cls, names", [
    (LinearChainCRF, SHARED | ONLINE | EARLY),
    (EasyFirstTagger, SHARED | EARLY),  # the perceptron: one sentence a step, no step size
    (NeuralEasyFirstTagger, SHARED | ONLINE | EARLY),
    (SparseMAPParser, SHARED | ONLINE | EARLY),
    (SparseMAPArgumentMiner, SHARED | ONLINE | EARLY),
    (StructuredSVMArgumentMiner, SHARED - {"tol"}),  # BCFW: max_iter is a budget
])
def test_one_vocabulary(cls, names):
    params = cls().get_params()
    assert names <= set(params), names - set(params)
    # the names retired for the shared ones
    assert not {"max_epochs", "n_epochs", "seed", "threads", "eta"} & set(params)
    if "early_stopping" in params:
        est = cls(early_stopping=True, validation_fraction=0.2, n_iter_no_change=4, tol=0.5)
        assert (est.early_stopping, est.validation_fraction, est.n_iter_no_change,
                est.tol) == (True, 0.2, 4, 0.5)


def test_neural_tagger_max_epochs_is_max_iter():
    with pytest.raises(TypeError, match="max_epochs"):
        NeuralEasyFirstTagger(max_epochs=3)
    assert NeuralEasyFirstTagger(max_iter=3).max_iter == 3
    assert NeuralEasyFirstTagger().early_stopping is True
