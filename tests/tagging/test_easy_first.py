"""EasyFirstTagger: decoding and guided learning against plain-Python references, contract."""

import io
import pickle
import warnings
from contextlib import redirect_stdout

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from sksparse_struct import EasyFirstTagger
from sksparse_struct.datasets import load_ewt_sample
from sksparse_struct.feature_extraction import TokenFeatures

# --- plain-Python references ---------------------------------------------------
#
# They work on dense matrices in the vectorizer's column order and find the
# sketch weights by the documented feature *names* (sketch_feature_names_),
# not by the kernels' row arithmetic.

UNDECIDED, OUTSIDE = "<undecided>", "<outside>"


def _value(tags, classes, j):
    if j < 0 or j >= len(tags):
        return OUTSIDE
    return UNDECIDED if tags[j] is None else str(classes[tags[j]])


def _sketch_names(tags, classes, i, window):
    """The active sketch feature names of position ``i``, from their definition."""
    def v(j):
        return _value(tags, classes, j)

    names = []
    for d in range(1, window + 1):
        names += [f"tag[-{d}]={v(i - d)}", f"tag[+{d}]={v(i + d)}"]
    if window >= 1:
        names.append(f"tag[-1]|tag[+1]={v(i - 1)}|{v(i + 1)}")
    if window >= 2:
        names.append(f"tag[-2]|tag[-1]={v(i - 2)}|{v(i - 1)}")
        names.append(f"tag[+1]|tag[+2]={v(i + 1)}|{v(i + 2)}")
    return names


def _score(x, W, sketch, rows, tags, classes, i, y, window):
    """``w . phi(x, i, y, S)`` from dense token weights ``W`` (F, K) and named sketch rows."""
    s = float(x[i] @ W[:, y])
    for name in _sketch_names(tags, classes, i, window):
        s += sketch[rows[name], y]
    return s


def _reference_decode(x, W, sketch, names, classes, window):
    """Easy-first decoding that rescores every (position, tag) at every step."""
    rows = {name: r for r, name in enumerate(names)}
    n, K = x.shape[0], W.shape[1]
    tags = [None] * n
    order = []
    for _ in range(n):
        best, arg = -np.inf, None
        for i in range(n):
            if tags[i] is not None:
                continue
            for y in range(K):
                s = _score(x, W, sketch, rows, tags, classes, i, y, window)
                if s > best:
                    best, arg = s, (i, y)
        i, y = arg
        tags[i] = y
        order.append(i)
    return tags, order


def _features_phi(x, tags, classes, i, window, rows, F, K, y):
    """phi(x, i, y, S) as (token part (F, K), sketch part (n_rows, K))."""
    tok = np.zeros((F, K))
    tok[:, y] = x[i]
    sk = np.zeros((len(rows), K))
    for name in _sketch_names(tags, classes, i, window):
        sk[rows[name], y] += 1.0
    return tok, sk


def _reference_train(X, gold, classes, names, window, max_iter, seed):
    """Guided learning with explicit averaging of the iterates (all pairs allowed).

    Returns the last weights and the mean of the weights after each sequence.
    """
    rows = {name: r for r, name in enumerate(names)}
    F, K = X[0].shape[1], len(classes)
    W, Sk = np.zeros((F, K)), np.zeros((len(names), K))
    sum_W, sum_Sk, T = np.zeros((F, K)), np.zeros((len(names), K)), 0
    rng = np.random.RandomState(seed)
    for _ in range(max_iter):
        mistakes = 0
        for s in rng.permutation(len(X)):
            x, g = X[s], gold[s]
            n = x.shape[0]
            tags = [None] * n
            for _ in range(n):
                best, arg = -np.inf, None
                for i in range(n):
                    if tags[i] is None:
                        for y in range(K):
                            sc = _score(x, W, Sk, rows, tags, classes, i, y, window)
                            if sc > best:
                                best, arg = sc, (i, y)
                i, y = arg
                if y == g[i]:
                    tags[i] = y
                    continue
                best_g, j = -np.inf, None
                for k in range(n):
                    if tags[k] is None:
                        sc = _score(x, W, Sk, rows, tags, classes, k, g[k], window)
                        if sc > best_g:
                            best_g, j = sc, k
                tok_g, sk_g = _features_phi(x, tags, classes, j, window, rows, F, K, g[j])
                tok_p, sk_p = _features_phi(x, tags, classes, i, window, rows, F, K, y)
                W += tok_g - tok_p
                Sk += sk_g - sk_p
                mistakes += 1
                tags[j] = g[j]
            sum_W += W
            sum_Sk += Sk
            T += 1
        if mistakes == 0:
            break
    return (W, Sk), (sum_W / T, sum_Sk / T)


# --- data ------------------------------------------------------------------------


def _toy(seed, n_seqs=6, max_len=6, vocab=5, K=3):
    """Random word sequences with random tags (feature dicts: word, neighbours, bias)."""
    rng = np.random.default_rng(seed)
    words, tags = [], []
    for _ in range(n_seqs):
        n = int(rng.integers(1, max_len + 1))
        words.append([f"w{int(v)}" for v in rng.integers(0, vocab, n)])
        tags.append([f"T{int(v)}" for v in rng.integers(0, K, n)])
    X = TokenFeatures(window=1).fit_transform(words)
    return X, tags


def _random_weights(tagger, seed, integer=False):
    """Give a fitted tagger random weights (integers: many ties)."""
    rng = np.random.default_rng(seed)
    n = tagger._params.shape[0]
    w = rng.integers(-2, 3, n).astype(float) if integer else rng.normal(size=n)
    tagger._store(w, tagger._attr_ptr, tagger._pair_label, int(tagger._attr_ptr[-1]),
                  tagger._window)
    return tagger


def _dense(tagger, X):
    return [m.toarray() for m in tagger.vectorizer_.transform(X)]


# --- decoding ------------------------------------------------------------------


@pytest.mark.parametrize("window", [0, 1, 2, 3])
@pytest.mark.parametrize("all_states", [False, True])
@pytest.mark.parametrize("integer", [False, True])
def test_decode_matches_rescoring_everything(window, all_states, integer):
    X, y = _toy(window + 10 * all_states, n_seqs=8, max_len=7)
    tagger = EasyFirstTagger(window=window, max_iter=1, random_state=0,
                             all_possible_states=all_states).fit(X, y)
    for seed in range(3):
        _random_weights(tagger, seed, integer)
        pred, order = tagger.predict(X, return_order=True)
        W = tagger.coef_.toarray().T
        classes = tagger.classes_.tolist()
        for s, x in enumerate(_dense(tagger, X)):
            tags, ref_order = _reference_decode(x, W, tagger.sketch_coef_,
                                                tagger.sketch_feature_names_, classes, window)
            assert pred[s] == [classes[t] for t in tags]
            assert order[s].tolist() == ref_order


_HYPOTHESIS_TAGGERS = {}


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), window=st.integers(0, 3), K=st.integers(1, 4),
       integer=st.booleans())
def test_decode_property(seed, window, K, integer):
    """Same tags and order as the rescore-everything reference; the order is a permutation."""
    key = (window, K)
    if key not in _HYPOTHESIS_TAGGERS:
        X, y = _toy(K, n_seqs=6, max_len=9, K=K)
        _HYPOTHESIS_TAGGERS[key] = (EasyFirstTagger(window=window, max_iter=1).fit(X, y), X)
    tagger, X = _HYPOTHESIS_TAGGERS[key]
    _random_weights(tagger, seed, integer)
    pred, order = tagger.predict(X, return_order=True)
    W = tagger.coef_.toarray().T
    classes = tagger.classes_.tolist()
    for s, x in enumerate(_dense(tagger, X)):
        tags, ref_order = _reference_decode(x, W, tagger.sketch_coef_,
                                            tagger.sketch_feature_names_, classes, window)
        assert pred[s] == [classes[t] for t in tags]
        assert order[s].tolist() == ref_order
        assert sorted(ref_order) == list(range(x.shape[0]))


def test_sketch_feature_names_match_rows():
    X, y = _toy(0)
    for window in range(4):
        t = EasyFirstTagger(window=window, max_iter=1).fit(X, y)
        assert len(t.sketch_feature_names_) == t.sketch_coef_.shape[0]
        assert len(set(t.sketch_feature_names_)) == len(t.sketch_feature_names_)
        assert t.sketch_coef_.shape[1] == len(t.classes_)


def test_order_is_a_permutation():
    X, y = load_ewt_sample("train", return_X_y=True)
    feats = TokenFeatures(preset="pos")
    Xf = feats.fit_transform(X[:60])
    tagger = EasyFirstTagger(max_iter=2, random_state=0).fit(Xf, y[:60])
    X_test, _ = load_ewt_sample("test", return_X_y=True)
    pred, order = tagger.predict(feats.transform(X_test) + [[]], return_order=True)
    assert pred[-1] == [] and order[-1].shape == (0,)
    for p, o in zip(pred, order):
        assert o.dtype == np.int64
        assert sorted(o.tolist()) == list(range(len(p)))


# --- learning ----------------------------------------------------------------------


@pytest.mark.parametrize("window", [0, 1, 2])
def test_guided_learning_matches_reference(window):
    X, y = _toy(3 + window, n_seqs=7, max_len=6)
    for average in (False, True):
        tagger = EasyFirstTagger(window=window, max_iter=4, average=average,
                                 all_possible_states=True, random_state=7).fit(X, y)
        classes = tagger.classes_.tolist()
        gold = [[classes.index(t) for t in seq] for seq in y]
        last, mean = _reference_train(_dense(tagger, X), gold, classes,
                                      tagger.sketch_feature_names_, window, 4, 7)
        W, Sk = mean if average else last
        np.testing.assert_allclose(tagger.coef_.toarray().T, W, atol=1e-12)
        np.testing.assert_allclose(tagger.sketch_coef_, Sk, atol=1e-12)


def test_separable_set_is_learned():
    # The tag of a word is fixed by the word, except "x", which copies the
    # tag of its left neighbour: separable only with sketch features.
    rng = np.random.default_rng(0)
    lexicon = {"a": "A", "b": "B", "c": "C"}
    words, tags = [], []
    for _ in range(40):
        n = int(rng.integers(2, 8))
        seq = [str(rng.choice(list(lexicon)))]
        for _ in range(n - 1):
            seq.append("x" if rng.random() < 0.4 else str(rng.choice(list(lexicon))))
        t = []
        for w in seq:
            t.append(lexicon[w] if w != "x" else t[-1])
        words.append(seq)
        tags.append(t)
    X = TokenFeatures().fit_transform(words)
    tagger = EasyFirstTagger(max_iter=50, window=1, random_state=0).fit(X, tags)
    assert tagger.score(X, tags) == 1.0
    assert tagger.n_mistakes_[-1] == 0 and tagger.n_iter_ < 50
    # The "x" tokens are decided after their left neighbour.
    _, order = tagger.predict(X, return_order=True)
    for seq, o in zip(words, order):
        step = {int(p): k for k, p in enumerate(o)}
        for i, w in enumerate(seq):
            if w == "x":
                assert step[i - 1] < step[i] or seq[i - 1] == "x"


def test_learns_ewt_sample():
    X, y = load_ewt_sample("train", return_X_y=True)
    X_test, y_test = load_ewt_sample("test", return_X_y=True)
    feats = TokenFeatures(preset="pos")
    tagger = EasyFirstTagger(max_iter=5, random_state=0)
    tagger.fit(feats.fit_transform(X), y)
    assert tagger.score(feats.transform(X_test), y_test) > 0.8


def test_reproducible_and_n_jobs():
    X, y = _toy(5, n_seqs=30, max_len=8)
    a = EasyFirstTagger(max_iter=3, random_state=1).fit(X, y)
    b = EasyFirstTagger(max_iter=3, random_state=1, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(a._params, b._params)
    assert a.predict(X) == b.predict(X)
    c = EasyFirstTagger(max_iter=3, random_state=2).fit(X, y)
    assert not np.array_equal(a._params, c._params)
    # Several chunks of sentences predicted on two threads.
    words, tags = load_ewt_sample("train", return_X_y=True)
    feats = TokenFeatures(preset="pos")
    Xw = feats.fit_transform(words)
    t = EasyFirstTagger(max_iter=2, random_state=0).fit(Xw, tags)
    one = t.predict(Xw, return_order=True)
    two = t.set_params(n_jobs=2).predict(Xw, return_order=True)
    assert one[0] == two[0]
    assert all(np.array_equal(a, b) for a, b in zip(one[1], two[1]))


def test_early_stopping_and_verbose():
    X, y = load_ewt_sample("train", return_X_y=True)
    Xf = TokenFeatures(preset="pos").fit_transform(X)
    out = io.StringIO()
    with redirect_stdout(out):
        t = EasyFirstTagger(max_iter=30, early_stopping=True, n_iter_no_change=2,
                            random_state=0, verbose=1).fit(Xf, y)
    assert t.n_iter_ < 30
    assert len(t.validation_scores_) == t.n_iter_ == len(t.n_mistakes_)
    assert out.getvalue().count("[EasyFirstTagger] epoch") == t.n_iter_
    assert "  val_acc " in out.getvalue()
    # The weights kept are those of the best epoch.
    best = int(np.argmax(t.validation_scores_))
    assert t.n_iter_ - 1 - best == 2


def test_tol_and_the_shared_stopping_rule():
    X, y = load_ewt_sample("train", return_X_y=True)
    Xf = TokenFeatures(preset="pos").fit_transform(X[:80])
    y = y[:80]
    # tol=None: max_iter epochs, no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = EasyFirstTagger(max_iter=3, tol=None, random_state=0).fit(Xf, y)
    assert t.n_iter_ == 3 and np.all(t.n_mistakes_ > 0)
    # A huge tol: no epoch counts as progress after the first, and the
    # learner stops n_iter_no_change epochs later.
    t = EasyFirstTagger(max_iter=20, tol=1e6, n_iter_no_change=2, random_state=0).fit(Xf, y)
    assert t.n_iter_ == 3
    with pytest.warns(ConvergenceWarning, match="EasyFirstTagger did not converge: "
                                                "max_iter=2 epochs"):
        EasyFirstTagger(max_iter=2, random_state=0).fit(Xf, y)
    # Held out as every early-stopping estimator does: ceil(0.1 * 80) = 8 sequences.
    t = EasyFirstTagger(max_iter=1, tol=None, early_stopping=True, random_state=0).fit(Xf, y)
    assert len(t.validation_scores_) == 1


def test_separable_data_stops_after_an_epoch_without_mistakes():
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}, {"w": "a"}]] * 3
    y = [["A", "B"], ["B", "A"]] * 3
    t = EasyFirstTagger(max_iter=30, window=0, random_state=0).fit(X, y)
    assert t.n_mistakes_[-1] == 0 and t.n_iter_ < 30


# --- scikit-learn contract and input errors -----------------------------------------


def test_contract_pipeline_gridsearch_pickle_clone():
    X, y = load_ewt_sample("train", return_X_y=True)
    X, y = X[:80], y[:80]
    pipe = Pipeline([("feats", TokenFeatures(preset="pos")),
                     ("tagger", EasyFirstTagger(max_iter=2, random_state=0))])
    assert pipe.fit(X, y) is pipe
    search = GridSearchCV(pipe, {"tagger__window": [1, 2]}, cv=2).fit(X, y)
    assert search.best_params_["tagger__window"] in (1, 2)
    tagger = pipe[-1]
    again = pickle.loads(pickle.dumps(pipe))
    assert again.predict(X) == pipe.predict(X)
    fresh = clone(tagger)
    assert not hasattr(fresh, "classes_") and fresh.get_params() == tagger.get_params()
    with pytest.raises(NotFittedError):
        fresh.predict([[{"w": "a"}]])


def test_matrix_input_and_errors():
    X, y = _toy(1)
    Xm = [sp.csr_matrix(np.asarray(m.toarray())) for m in
          EasyFirstTagger(max_iter=1).fit(X, y).vectorizer_.transform(X)]
    t = EasyFirstTagger(max_iter=2, random_state=0).fit(Xm, y)
    assert t.vectorizer_ is None and len(t.predict(Xm)) == len(Xm)
    bad = [m.toarray() for m in Xm]
    bad[2][0, 0] = np.nan
    with pytest.raises(ValueError, match=r"X\[2\] has a non-finite feature value"):
        EasyFirstTagger().fit(bad, y)
    with pytest.raises(ValueError, match="not finite"):
        EasyFirstTagger().fit([[{"a": float("nan")}]], [["A"]])
    with pytest.raises(ValueError, match="X is empty"):
        EasyFirstTagger().fit([], [])
    with pytest.raises(ValueError, match="X has 6 sequences but y has 5"):
        EasyFirstTagger().fit(X, y[:5])
    with pytest.raises(ValueError, match="sequence 0 has"):
        EasyFirstTagger().fit(X, [y[0][:-1]] + y[1:])
    with pytest.raises(ValueError, match="every training sequence is empty"):
        EasyFirstTagger().fit([[], []], [[], []])
    with pytest.raises(ValueError, match="features per token"):
        t.predict([np.zeros((2, Xm[0].shape[1] + 1))])
    with pytest.raises(ValueError, match="early_stopping needs at least one training"):
        EasyFirstTagger(early_stopping=True, validation_fraction=0.01).fit(X[:1], y[:1])
    # Half of the sequences are held out; some seeds hold out the two empty ones.
    raised = 0
    for seed in range(20):
        try:
            EasyFirstTagger(early_stopping=True, validation_fraction=0.5, max_iter=1,
                            random_state=seed).fit([[], [], X[0], X[1]], [[], [], y[0], y[1]])
        except ValueError as exc:
            assert "held-out sequences have no token" in str(exc)
            raised += 1
    assert 0 < raised < 20
    with pytest.raises(ValueError, match="window"):
        EasyFirstTagger(window=-1).fit(X, y)


def test_empty_sentences_and_unknown_labels_at_score():
    X, y = _toy(2)
    t = EasyFirstTagger(max_iter=2, random_state=0).fit(X + [[]], y + [[]])
    assert t.predict([[]]) == [[]]
    pred = t.predict(X)
    # A tag never seen in training counts as an error.
    y_unknown = [["UNSEEN"] * len(seq) for seq in y]
    assert t.score(X, y_unknown) == 0.0
    assert t.score(X, pred) == 1.0
    with pytest.raises(ValueError):
        t.score(X, y[:3])
