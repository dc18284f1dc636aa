"""TagParsePipeline: the parser trained on jackknifed tags and on gold tags."""

import pickle

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from sksparse_struct import ColumnTagger, SparseMAPParser, TagParsePipeline
from sksparse_struct.datasets import load_ewt_sample

from .test_column_tagger import MemoTagger, _column, _unique_sample


class Recorder(BaseEstimator):
    """A final-step stand-in that keeps what it was trained on and predicts sentence lengths."""

    def fit(self, X, y):
        self.X_, self.y_ = X, list(y)
        return self

    def predict(self, X):
        return [len(sentence) for sentence in X]


def _model(**params):
    return TagParsePipeline([("tags", ColumnTagger(tagger=MemoTagger(), cv=3)),
                             ("parser", Recorder())], **params)


def test_final_step_sees_the_jackknifed_then_the_gold_tags():
    X, y = _unique_sample(30)
    model = _model().fit(X, y)
    seen = model.named_steps["parser"]
    assert len(seen.X_) == 60
    # First copy: tags of taggers that never saw the sentence (2 folds of 10).
    for column in ("upos", "xpos"):
        assert _column(seen.X_[:30], column) == [["n20"] * len(s) for s in X]
        # Second copy: the gold tags.
        assert _column(seen.X_[30:], column) == _column(X, column)
    # Both copies have the lemma and the features cleared; the words are the words.
    for copy in (seen.X_[:30], seen.X_[30:]):
        assert all(t["lemma"] == "_" and t["feats"] == "_" for s in copy for t in s)
        assert _column(copy, "form") == _column(X, "form")
    assert [h.tolist() for h, _ in seen.y_] == [h.tolist() for h, _ in y] * 2
    # The input is not modified.
    assert X == _unique_sample(30)[0]


def test_without_gold_copy_it_is_a_pipeline():
    X, y = _unique_sample(30)
    ours = _model(gold_copy=False).fit(X, y)
    theirs = Pipeline(clone(ours).steps).fit(X, y)
    assert ours.named_steps["parser"].X_ == theirs.named_steps["parser"].X_
    assert len(ours.named_steps["parser"].X_) == 30


def test_predict_tags_then_applies_the_final_step():
    X, y = _unique_sample(30)
    model = _model().fit(X, y)
    words = [[{"form": "Unseen"}, {"form": "words"}]]
    assert model.predict(words) == [2]
    assert _column(model[:-1].transform(words), "upos") == [["n30", "n30"]]


def test_gold_transform():
    X, _ = _unique_sample(12)
    tags = ColumnTagger(columns=("upos",), tagger=MemoTagger(), cv=3).fit(X)
    gold = tags.gold_transform(X)
    assert _column(gold, "upos") == _column(X, "upos")
    assert all(t["xpos"] == t["lemma"] == t["feats"] == "_" for s in gold for t in s)
    kept = ColumnTagger(columns=("upos",), tagger=MemoTagger(), cv=3,
                        clear_unpredicted=False).fit(X).gold_transform(X)
    assert _column(kept, "xpos") == _column(X, "xpos")
    with pytest.raises(NotFittedError):
        ColumnTagger().gold_transform(X)
    with pytest.raises(ValueError, match="sentence 0 token 0 lacks column 'upos'"):
        tags.gold_transform([[{"form": "word"}]])


def test_real_tagger_and_parser_reproducible_and_verbose(capsys):
    X, y = load_ewt_sample("train", return_X_y=True, target="tree")
    X, y = X[:60], y[:60]

    def model():
        return TagParsePipeline([
            ("tags", ColumnTagger(columns=("upos",), cv=3, random_state=0)),
            ("parser", SparseMAPParser("hinge", projective=True, max_iter=2, tol=None,
                                      random_state=0)),
        ], verbose=True)

    first = model().fit(X, y)
    out = capsys.readouterr().out
    assert "(step 1 of 2) Processing tags" in out and "(step 2 of 2) Processing parser" in out
    second = model().fit(X, y)
    np.testing.assert_array_equal(first.named_steps["parser"].coef_,
                                  second.named_steps["parser"].coef_)
    words = [[{"form": w} for w in "The dog barks .".split()]]
    heads = first.predict(words)
    assert len(heads) == 1 and len(heads[0]) == 4
    # Trained on the gold copy too: not the coefficients of the plain pipeline.
    plain = Pipeline(clone(first).steps).fit(X, y)
    assert not np.array_equal(plain.named_steps["parser"].coef_,
                              first.named_steps["parser"].coef_)
    restored = pickle.loads(pickle.dumps(first))
    assert [h.tolist() for h in restored.predict(words)] == [h.tolist() for h in heads]


def test_params_clone_and_pickle():
    model = _model(gold_copy=False)
    params = model.get_params()
    assert params["gold_copy"] is False and params["tags__cv"] == 3
    copy = clone(model)
    assert copy.gold_copy is False and copy.named_steps["tags"].cv == 3
    copy.set_params(gold_copy=True, tags__cv=4)
    assert copy.get_params()["tags__cv"] == 4 and model.named_steps["tags"].cv == 3
    X, y = _unique_sample(12)
    fitted = pickle.loads(pickle.dumps(_model().fit(X, y)))
    assert len(fitted.named_steps["parser"].X_) == 24


@pytest.mark.parametrize("make, fit_kwargs, message", [
    (lambda: TagParsePipeline([("tags", ColumnTagger(tagger=MemoTagger(), cv=3))]), {},
     "needs two steps"),
    (lambda: TagParsePipeline([("f", FunctionTransformer()), ("parser", Recorder())]), {},
     "first step must be a ColumnTagger, got FunctionTransformer"),
    (lambda: TagParsePipeline([("tags", ColumnTagger(tagger=MemoTagger(), cv=3)),
                               ("parser", "passthrough")]), {},
     "final step must be an estimator"),
    (lambda: _model(memory="/tmp"), {}, "memory must be None"),
    (lambda: _model(), {"parser__sample_weight": None}, "takes no fit parameters"),
    (lambda: _model(gold_copy="yes"), {}, "'gold_copy' parameter of TagParsePipeline must be"),
])
def test_bad_pipelines(make, fit_kwargs, message):
    X, y = _unique_sample(12)
    with pytest.raises(ValueError, match=message):
        make().fit(X, y, **fit_kwargs)


def test_bad_targets():
    X, y = _unique_sample(12)
    with pytest.raises(ValueError, match="fit needs y"):
        _model().fit(X)
    with pytest.raises(ValueError, match="X has 12 sentences but y has 11 targets"):
        _model().fit(X, y[:11])
    with pytest.raises(ValueError, match="X must be a list of sentences.*got str"):
        _model().fit("The dog barks .", y[:1])
    # Iterables are read once, as lists.
    fitted = _model().fit(iter(X), iter(y))
    assert len(fitted.named_steps["parser"].X_) == 24
