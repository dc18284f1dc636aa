"""NeuralEasyFirstTagger: learning, attention, the scikit-learn contract, bad input."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV

from sksparse_struct import NeuralEasyFirstTagger
from sksparse_struct.datasets import load_ewt_sample

SMALL = {"word_dim": 8, "affix_dim": 4, "hidden_dim": 8, "sketch_dim": 6, "attention_dim": 6,
         "window": 1}


def _previous_word_task(n, seed):
    """Tag = parity of the previous word's number ("START" first): needs left context."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        words = [f"w{k}" for k in rng.integers(0, 12, rng.integers(2, 9))]
        X.append(words)
        y.append(["START"] + ["EVEN" if int(w[1:]) % 2 == 0 else "ODD" for w in words[:-1]])
    return X, y


@pytest.fixture(scope="module")
def toy():
    return _previous_word_task(240, 0), _previous_word_task(60, 1)


@pytest.mark.parametrize("attention", ["csoftmax", "hard"])
def test_learns_a_context_task(toy, attention):
    (X, y), (X_test, y_test) = toy
    tagger = NeuralEasyFirstTagger(attention=attention, max_iter=8, batch_size=8,
                                   random_state=0, **SMALL).fit(X, y)
    assert tagger.score(X_test, y_test) >= 0.97
    assert tagger.n_iter_ == len(tagger.loss_curve_) == len(tagger.validation_scores_)
    assert tagger.loss_curve_[-1] < tagger.loss_curve_[0]


def test_crf_output_and_single_state(toy):
    (X, y), (X_test, y_test) = toy
    tagger = NeuralEasyFirstTagger(state="single", output="crf", max_iter=6, batch_size=8,
                                   early_stopping=False, random_state=0, **SMALL).fit(X, y)
    assert tagger.n_iter_ == 6 and tagger.validation_scores_ == []
    assert tagger.score(X_test, y_test) >= 0.95


def test_attention_shapes_and_units(toy):
    (X, y), _ = toy
    sentences = [["w1", "w2", "w3", "w4"], ["w5"], [], ["unseen", "w2"]]
    for n_steps, attention, rows in [("L", "csoftmax", [4, 1, 0, 2]),
                                     (3, "csparsemax", [3, 1, 0, 2]),
                                     (3, "softmax", [3, 3, 3, 3]),
                                     (0, "csoftmax", [0, 0, 0, 0])]:
        tagger = NeuralEasyFirstTagger(n_steps=n_steps, attention=attention, max_iter=1,
                                       random_state=0, **SMALL).fit(X, y)
        att = tagger.predict_attention(sentences)
        assert [a.shape for a in att] == [(r, len(s)) for r, s in zip(rows, sentences)]
        for a, s in zip(att, sentences):
            if a.size:
                np.testing.assert_allclose(a.sum(axis=1), 1.0, atol=1e-12)
            if n_steps == "L" and a.size:
                np.testing.assert_allclose(a.sum(axis=0), 1.0, atol=1e-9)
        assert tagger.predict(sentences)[2] == []


@pytest.mark.parametrize("attention", ["csoftmax", "sparsemax", "softmax", "hard"])
def test_a_diverging_fit_stops_with_a_clear_error(toy, attention):
    (X, y), _ = toy
    tagger = NeuralEasyFirstTagger(attention=attention, learning_rate=1e300, max_iter=2,
                                   random_state=0, **SMALL)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy overflow warning on the way either
        with pytest.raises(ValueError, match="training diverged in epoch 1.*learning_rate"):
            tagger.fit(X[:60], y[:60])


def test_discount_factor_and_temperature(toy):
    (X, y), (X_test, y_test) = toy
    options = dict(attention="sparsemax", max_iter=4, batch_size=8, random_state=0, **SMALL)
    plain = NeuralEasyFirstTagger(**options).fit(X, y)
    # The defaults are the mapping of the scores as they are.
    same = NeuralEasyFirstTagger(discount_factor=0.0, temperature=1.0, **options).fit(X, y)
    np.testing.assert_array_equal(plain.params_, same.params_)
    steered = NeuralEasyFirstTagger(discount_factor=5.0, temperature=0.5, **options).fit(X, y)
    assert steered.score(X_test, y_test) >= 0.9
    assert not np.array_equal(plain.params_, steered.params_)
    for attention in ("hard", "uniform"):
        with pytest.raises(ValueError, match="apply to the soft attentions"):
            NeuralEasyFirstTagger(attention=attention, discount_factor=1.0,
                                  **SMALL).fit(X, y)
    with pytest.raises(ValueError, match="temperature"):
        NeuralEasyFirstTagger(temperature=0.0, **SMALL).fit(X, y)


@pytest.mark.parametrize("attention", ["left_to_right", "right_to_left", "uniform"])
def test_ablations_run(toy, attention):
    (X, y), _ = toy
    tagger = NeuralEasyFirstTagger(attention=attention, concat_encoder=False, max_iter=1,
                                   random_state=0, **SMALL).fit(X, y)
    att = tagger.predict_attention([["w1", "w2", "w3"]])[0]
    expected = {"left_to_right": np.eye(3), "right_to_left": np.eye(3)[::-1],
                "uniform": np.full((3, 3), 1 / 3)}[attention]
    np.testing.assert_allclose(att, expected)


def test_tokens_as_strings_or_dicts_give_the_same_model(toy):
    (X, y), _ = toy
    as_word = [[{"word": w} for w in s] for s in X]
    as_form = [[{"form": w, "upos": "X"} for w in s] for s in X]
    params = [NeuralEasyFirstTagger(max_iter=1, random_state=3, **SMALL).fit(data, y).params_
              for data in (X, as_word, as_form)]
    np.testing.assert_array_equal(params[0], params[1])
    np.testing.assert_array_equal(params[0], params[2])


def test_reproducible_and_independent_of_n_jobs(toy):
    (X, y), (X_test, _) = toy
    fits = [NeuralEasyFirstTagger(max_iter=2, random_state=7, n_jobs=n_jobs, **SMALL).fit(X, y)
            for n_jobs in (1, 1, 2)]
    for other in fits[1:]:
        np.testing.assert_array_equal(fits[0].params_, other.params_)
        assert fits[0].predict(X_test) == other.predict(X_test)
    other = NeuralEasyFirstTagger(max_iter=2, random_state=8, **SMALL).fit(X, y)
    assert not np.array_equal(fits[0].params_, other.params_)


def test_pickle_clone_and_grid_search(toy):
    (X, y), (X_test, y_test) = toy
    tagger = NeuralEasyFirstTagger(max_iter=2, random_state=0, **SMALL)
    assert tagger.fit(X, y) is tagger
    again = pickle.loads(pickle.dumps(tagger))
    assert again.predict(X_test) == tagger.predict(X_test)
    for a, b in zip(again.predict_attention(X_test), tagger.predict_attention(X_test)):
        np.testing.assert_array_equal(a, b)
    fresh = clone(tagger)
    assert fresh.get_params() == tagger.get_params() and not hasattr(fresh, "params_")
    search = GridSearchCV(NeuralEasyFirstTagger(max_iter=1, random_state=0, **SMALL),
                          {"attention": ["csoftmax", "softmax"]}, cv=2).fit(X, y)
    assert search.best_params_["attention"] in ("csoftmax", "softmax")
    assert 0.0 <= search.score(X_test, y_test) <= 1.0


def test_vocabularies_and_unknown_words(toy):
    (X, y), _ = toy
    tagger = NeuralEasyFirstTagger(max_iter=1, min_count=1, early_stopping=False,
                                   random_state=0, **SMALL).fit(X, y)
    assert set(tagger.vocabulary_) == {w for s in X for w in s}
    assert sorted(tagger.vocabulary_.values()) == list(range(1, len(tagger.vocabulary_) + 1))
    assert "pw" in tagger.affix_vocabulary_ and "s1" in tagger.affix_vocabulary_
    assert len(tagger.predict([["never", "seen", "words"]])[0]) == 3


def test_class_weight(toy):
    (X, y), _ = toy
    for cw in ("balanced", {"START": 2.0, "ODD": 0.5}):
        NeuralEasyFirstTagger(max_iter=1, class_weight=cw, random_state=0, **SMALL).fit(X, y)
    with pytest.raises(ValueError, match="not among the training tags"):
        NeuralEasyFirstTagger(class_weight={"NOPE": 1.0}, **SMALL).fit(X, y)
    with pytest.raises(ValueError, match="softmax output"):
        NeuralEasyFirstTagger(class_weight="balanced", output="crf", **SMALL).fit(X, y)


def test_not_fitted_and_bad_input(toy):
    (X, y), _ = toy
    with pytest.raises(NotFittedError):
        NeuralEasyFirstTagger().predict(X)
    tagger = NeuralEasyFirstTagger(**SMALL, max_iter=1)
    with pytest.raises(ValueError, match=r"X\[1\]\[2\] is int"):
        tagger.fit([["a"], ["b", "c", 3]], [["A"], ["B", "B", "B"]])
    with pytest.raises(ValueError, match=r"X\[0\]\[0\] is a token dict without"):
        tagger.fit([[{"lemma": "a"}]], [["A"]])
    with pytest.raises(ValueError, match="sentence 1 has 2 tokens in X but 1 tags"):
        tagger.fit([["a"], ["b", "c"]], [["A"], ["B"]])
    with pytest.raises(ValueError, match="X has 2 sentences but y has 1"):
        tagger.fit([["a"], ["b"]], [["A"]])
    with pytest.raises(ValueError, match=r"X\[0\] is str"):
        tagger.fit(["a b"], [["A"]])
    with pytest.raises(ValueError, match="every training sentence is empty"):
        tagger.fit([[]], [[]])
    with pytest.raises(ValueError, match="validation_fraction"):
        NeuralEasyFirstTagger(validation_fraction=0.5, **SMALL).fit([["a"]], [["A"]])
    with pytest.raises(ValueError, match="max_train_length"):
        NeuralEasyFirstTagger(max_train_length=1, **SMALL).fit([["a", "b"]], [["A", "A"]])
    with pytest.raises(ValueError, match="attention"):
        NeuralEasyFirstTagger(attention="argmax").fit(X, y)
    with pytest.raises(ValueError, match="n_steps"):
        NeuralEasyFirstTagger(n_steps="N").fit(X, y)


def test_verbose_prints_one_line_per_epoch(toy, capsys):
    (X, y), _ = toy
    NeuralEasyFirstTagger(max_iter=2, verbose=1, random_state=0, **SMALL).fit(X, y)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("[NeuralEasyFirstTagger] epoch 1/2  loss ")


@pytest.mark.slow
def test_ewt_sample_accuracy():
    X, y = load_ewt_sample(return_X_y=True)
    X_test, y_test = load_ewt_sample("test", return_X_y=True)
    # 360 training sentences: far too few for a neural tagger to shine (a
    # LinearChainCRF on the "pos" token features gets about 0.83 here)
    tagger = NeuralEasyFirstTagger(max_iter=15, random_state=0).fit(X, y)
    assert tagger.score(X_test, y_test) >= 0.80
