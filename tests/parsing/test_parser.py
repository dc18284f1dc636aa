"""SparseMAPParser: learning a planted model, the estimator contract, bad input."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline, make_pipeline

from sksparse_struct import SparseMAPParser
from sksparse_struct.feature_extraction import ArcFeatures, EncodedSentence
from sksparse_struct.metrics import make_attachment_scorer, uas_scorer
from sksparse_struct.structures import DependencyTree

LOSSES = ["perceptron", "hinge", "crf", "sparsemap", "margin_sparsemap"]
TAGS = ["NOUN", "VERB", "DET", "ADJ"]
N_FEATURES = 2**16


# --- synthetic treebanks -------------------------------------------------------


def planted_treebank(n_sentences, projective, seed, *, min_len=3, max_len=6, margin=2.0,
                     n_words=2, labels=False):
    """Sentences whose gold trees are the best trees under a planted arc scorer.

    Every word is a random form of a random tag; the planted score of
    ``h -> m`` is a table of (head tag, modifier tag, direction) minus the
    distance (root arcs: a table of the modifier's tag), which the parser's
    features express exactly (tag pairs conjoined with direction, distance
    bins 1..5). The gold tree is the best (projective) single-rooted tree;
    sentences whose gold tree beats every other tree by less than
    ``margin`` are redrawn. Relation labels, when asked, are the tag pair.
    """
    model_rng = np.random.default_rng(12345)
    K = len(TAGS)
    pair = 2.0 * model_rng.normal(size=(K, K, 2))
    root = model_rng.normal(size=K)
    root[TAGS.index("VERB")] += 3.0
    rng = np.random.default_rng(seed)
    structure = DependencyTree(projective=projective, single_root=True)
    X, y = [], []
    arange = np.arange
    while len(X) < n_sentences:
        n = int(rng.integers(min_len, max_len + 1))
        tags = rng.integers(K, size=n)
        S = np.full((n + 1, n + 1), -np.inf)
        S[0, 1:] = root[tags]
        for h in range(1, n + 1):
            for m in range(1, n + 1):
                if h != m:
                    S[h, m] = pair[tags[h - 1], tags[m - 1], int(h < m)] - abs(h - m)
        heads = structure.map(S)
        best = S[heads[1:], arange(1, n + 1)].sum()
        # Any other tree lacks some gold arc: the runner-up is the best tree
        # without one of them.
        runner_up = -np.inf
        for m in range(1, n + 1):
            S2 = S.copy()
            S2[heads[m], m] = -np.inf
            other = structure.map(S2)
            runner_up = max(runner_up, S2[other[1:], arange(1, n + 1)].sum())
            if best - runner_up < margin:
                break
        if best - runner_up < margin:
            continue
        X.append([{"form": f"{TAGS[t].lower()}{rng.integers(n_words)}", "upos": TAGS[t]}
                  for t in tags])
        if labels:
            deps = ["root" if heads[m] == 0 else
                    f"{TAGS[tags[heads[m] - 1]]}>{TAGS[tags[m - 1]]}".lower()
                    for m in range(1, n + 1)]
            y.append((heads[1:].tolist(), deps))
        else:
            y.append(heads[1:].tolist())
    return X, y


_CACHE = {}


def treebank(n_sentences, projective, seed, **kwargs):
    key = (n_sentences, projective, seed, tuple(sorted(kwargs.items())))
    if key not in _CACHE:
        _CACHE[key] = planted_treebank(n_sentences, projective, seed, **kwargs)
    X, y = _CACHE[key]
    return [list(s) for s in X], [h if isinstance(h, list) else (list(h[0]), list(h[1]))
                                  for h in y]


def small_parser(**params):
    params.setdefault("features", ArcFeatures(n_features=N_FEATURES))
    params.setdefault("random_state", 0)
    return SparseMAPParser(**params)


def is_tree(heads, single_root=True):
    heads = np.asarray(heads)
    n = heads.shape[0]
    if heads.dtype.kind not in "iu" or heads.min() < 0 or heads.max() > n:
        return False
    if np.any(heads == np.arange(1, n + 1)):
        return False
    if single_root and np.count_nonzero(heads == 0) != 1:
        return False
    for m in range(1, n + 1):
        seen, h = set(), m
        while h != 0:
            if h in seen:
                return False
            seen.add(h)
            h = heads[h - 1]
    return True


def is_projective(heads):
    arcs = [tuple(sorted((int(h), m))) for m, h in enumerate(heads, start=1)]
    return not any(a[0] < b[0] < a[1] < b[1] for a in arcs for b in arcs)


# --- learning ----------------------------------------------------------------


@pytest.mark.parametrize("projective", [False, True])
# margin_sparsemap is sparsemap's kernel with the costs added (~10 s each): with --runslow.
@pytest.mark.parametrize("loss", [pytest.param(loss, marks=pytest.mark.slow)
                                  if loss == "margin_sparsemap" else loss for loss in LOSSES])
def test_every_loss_recovers_the_planted_trees(loss, projective):
    X, y = treebank(400, projective, 0)
    Xt, yt = treebank(200, projective, 1)
    parser = small_parser(loss=loss, projective=projective, max_iter=10, tol=None)
    parser.fit(X, y)
    assert parser.n_iter_ == 10
    assert parser.n_sparsemap_not_converged_ == 0
    assert parser.score(Xt, yt) >= 0.99
    predicted = parser.predict(Xt)
    assert all(is_tree(h) for h in predicted)
    if projective:
        assert all(is_projective(h) for h in predicted)
    # Training drives the loss down.
    assert parser.loss_curve_[-1] < parser.loss_curve_[0]


# --- estimator contract ---------------------------------------------------------


@pytest.fixture(scope="module")
def data():
    return treebank(60, False, 2)


@pytest.fixture(scope="module")
def fitted(data):
    X, y = data
    return {loss: small_parser(loss=loss, max_iter=3).fit(X, y) for loss in LOSSES}


def test_fit_returns_self_and_sets_attributes(data):
    X, y = data
    parser = small_parser(max_iter=2, tol=None)
    assert parser.fit(X, y) is parser
    assert parser.coef_.shape == (N_FEATURES,)
    assert parser.n_features_ == N_FEATURES
    assert parser.preset_ == "rich"
    assert parser.classes_ is None
    assert parser.n_iter_ == 2 and len(parser.loss_curve_) == 2
    assert parser.t_ == 2 * int(np.ceil(len(X) / parser.batch_size))
    assert parser.validation_scores_ == [] and parser.best_validation_score_ is None


@pytest.mark.parametrize(
    "method", ["predict", "predict_marginals", "predict_sparse", "decision_function"]
)
def test_not_fitted(data, method):
    with pytest.raises(NotFittedError):
        getattr(SparseMAPParser(), method)(data[0])


def test_score_before_fit_is_not_fitted(data):
    with pytest.raises(NotFittedError):
        SparseMAPParser().score(*data)


def test_clone(fitted):
    parser = fitted["sparsemap"]
    copy = clone(parser)
    assert copy.get_params()["loss"] == "sparsemap"
    assert not hasattr(copy, "coef_")
    assert copy.get_params().keys() == parser.get_params().keys()


@pytest.mark.parametrize("loss", LOSSES)
def test_pickle_round_trip(fitted, data, loss):
    X, _ = data
    parser = fitted[loss]
    restored = pickle.loads(pickle.dumps(parser))
    np.testing.assert_array_equal(restored.coef_, parser.coef_)
    for a, b in zip(restored.predict(X[:10]), parser.predict(X[:10])):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(restored.predict_marginals(X[:10]), parser.predict_marginals(X[:10])):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("preset", ["mst", "rich"])
def test_decision_function_sums_the_weights_of_the_arc_features(data, preset):
    # The parser's kernels and ArcFeatures.arc_feature_indices (inspection)
    # must enumerate the same features.
    X, y = data
    features = ArcFeatures(preset=preset, n_features=N_FEATURES)
    parser = SparseMAPParser(features=features, max_iter=2, random_state=0).fit(X, y)
    sentences = [X[0], X[1], [{"form": "Go", "upos": "VERB"}, {"form": ",", "upos": "PUNCT"},
                              {"form": "and", "upos": "CCONJ"}] * 5]
    for sentence, encoded, S in zip(sentences, features.transform(sentences),
                                    parser.decision_function(sentences)):
        n = len(sentence)
        expected = np.full((n + 1, n + 1), -np.inf)
        for h in range(n + 1):
            for m in range(1, n + 1):
                if h != m:
                    expected[h, m] = parser.coef_[
                        features.arc_feature_indices(encoded, h, m)].sum()
        np.testing.assert_allclose(S, expected, rtol=1e-12, atol=1e-12)


def test_encoded_sentences_pickle(data):
    encoded = ArcFeatures(n_features=N_FEATURES).fit_transform(data[0][:3])
    restored = pickle.loads(pickle.dumps(encoded))
    for a, b in zip(encoded, restored):
        np.testing.assert_array_equal(a.tokens, b.tokens)
        assert (a.preset, a.n_features) == (b.preset, b.n_features)


def test_grid_search_over_loss_and_alpha(data):
    X, y = data
    search = GridSearchCV(
        small_parser(max_iter=3),
        {"loss": ["perceptron", "sparsemap"], "alpha": [0.0, 1e-3]},
        scoring=uas_scorer,
        cv=2,
    )
    search.fit(X, y)
    assert len(search.cv_results_["mean_test_score"]) == 4
    assert 0.5 < search.best_score_ <= 1.0
    assert search.best_estimator_.score(X, y) > 0.8
    # The factory's scorer agrees with the ready-made one.
    scorer = make_attachment_scorer("uas")
    assert scorer(search.best_estimator_, X, y) == uas_scorer(search.best_estimator_, X, y)


@pytest.mark.parametrize("loss", LOSSES)
def test_n_jobs_does_not_change_the_model(data, loss):
    X, y = data
    one = small_parser(loss=loss, max_iter=2, batch_size=8, n_jobs=1).fit(X, y)
    two = small_parser(loss=loss, max_iter=2, batch_size=8, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(one.coef_, two.coef_)
    assert one.loss_curve_ == two.loss_curve_
    # Prediction runs in chunks of 64 sentences on the threads.
    for a, b in zip(one.predict(X * 3), two.predict(X * 3)):
        np.testing.assert_array_equal(a, b)


def test_pipeline_equals_the_parser_on_raw_input(data):
    X, y = data
    features = ArcFeatures(preset="mst", n_features=N_FEATURES)
    raw = SparseMAPParser(features=features, max_iter=3, random_state=0).fit(X, y)
    pipe = Pipeline([("features", clone(features)),
                     ("parser", SparseMAPParser(max_iter=3, random_state=0))]).fit(X, y)
    parser = pipe.named_steps["parser"]
    assert parser.preset_ == "mst" and parser.n_features_ == N_FEATURES
    np.testing.assert_array_equal(parser.coef_, raw.coef_)
    for a, b in zip(pipe.predict(X), raw.predict(X)):
        np.testing.assert_array_equal(a, b)
    assert pipe.score(X, y) == raw.score(X, y)
    # The fitted parser also takes the encoded sentences directly, but not
    # sentences encoded with other settings.
    encoded = features.transform(X)
    assert all(isinstance(s, EncodedSentence) for s in encoded)
    for a, b in zip(parser.predict(encoded), raw.predict(X)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="n_features"):
        parser.predict(ArcFeatures(preset="mst", n_features=2**10).transform(X))
    with pytest.raises(ValueError, match="mixes encoded sentences"):
        parser.predict([encoded[0], X[1]])
    make_pipeline(ArcFeatures(n_features=N_FEATURES), SparseMAPParser(max_iter=1)).fit(X, y)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("projective", [False, True])
def test_marginals_and_sparse_supports(data, loss, projective):
    X, y = data
    parser = small_parser(loss=loss, projective=projective, max_iter=1).fit(X, y)
    sentences = X[:8]
    # Weights scaled down so that the posteriors spread over several trees.
    S0 = parser.decision_function(sentences)
    parser.coef_ = parser.coef_ / max(np.abs(S[np.isfinite(S)]).max() for S in S0)
    marginals = parser.predict_marginals(sentences)
    supports = parser.predict_sparse(sentences)
    scores = parser.decision_function(sentences)
    structure = DependencyTree(projective=projective, single_root=True)
    n_trees = []
    for sentence, mu, support, S in zip(sentences, marginals, supports, scores):
        n = len(sentence)
        assert mu.shape == S.shape == (n + 1, n + 1)
        np.testing.assert_allclose(mu[:, 1:].sum(axis=0), 1.0, atol=1e-9)
        assert np.all(mu >= -1e-12)
        np.testing.assert_array_equal(mu[:, 0], 0.0)
        np.testing.assert_array_equal(np.diag(mu), 0.0)
        probs = [p for _, p in support]
        assert sum(probs) == pytest.approx(1.0, abs=1e-9)
        assert all(p > 0 for p in probs)
        assert probs == sorted(probs, reverse=True)
        for heads, _ in support:
            assert heads.shape == (n,)
            assert is_tree(heads)
            if projective:
                assert is_projective(heads)
        n_trees.append(len(support))
        if loss == "crf":
            np.testing.assert_allclose(mu, structure.marginals(S)[0], atol=1e-12)
        else:
            expected = np.zeros((n + 1, n + 1))
            for heads, p in support:
                expected[heads, np.arange(1, n + 1)] += p
            np.testing.assert_allclose(mu, expected, atol=1e-9)
    assert max(n_trees) > 1  # some posterior is not a single tree


def test_predict_sparse_top_tree_is_the_prediction_when_confident(fitted, data):
    X, y = data
    parser = fitted["sparsemap"]
    for heads, support in zip(parser.predict(X[:20]), parser.predict_sparse(X[:20])):
        if len(support) == 1:
            np.testing.assert_array_equal(support[0][0], heads)
            assert support[0][1] == pytest.approx(1.0)


def test_labelled_fit_and_predict():
    X, y = treebank(200, False, 3, labels=True)
    parser = small_parser(max_iter=5).fit(X, y)
    expected = sorted({d for _, deps in y for d in deps})
    assert parser.classes_.tolist() == expected
    assert len(parser.label_loss_curve_) == parser.n_iter_
    heads, deprels = parser.predict(X, return_deprel=True)
    assert [len(d) for d in deprels] == [len(s) for s in X]
    correct = total = 0
    for (gold_heads, gold_deps), h, d in zip(y, heads, deprels):
        assert all(isinstance(lab, str) for lab in d)
        for gh, gd, ph, pd in zip(gold_heads, gold_deps, h, d):
            total += 1
            correct += gh == ph and gd == pd
    assert correct / total > 0.9  # labels are a function of the arc's tags
    # score and uas_scorer take the labelled pairs.
    assert parser.score(X, y) == uas_scorer(parser, X, y) > 0.9
    plain = parser.predict(X)
    for a, b in zip(plain, heads):
        np.testing.assert_array_equal(a, b)


def test_return_deprel_needs_labels(fitted, data):
    with pytest.raises(ValueError, match="return_deprel=True needs a parser fitted with"):
        fitted["sparsemap"].predict(data[0], return_deprel=True)


def test_warm_start(data):
    X, y = data
    cold = small_parser(max_iter=1, tol=None).fit(X, y)
    warm = small_parser(max_iter=1, tol=None, warm_start=True).fit(X, y)
    np.testing.assert_array_equal(warm.coef_, cold.coef_)
    first = warm.coef_.copy()
    warm.fit(X, y)  # continues from the previous weights
    assert not np.array_equal(warm.coef_, first)
    assert not np.array_equal(warm.coef_, cold.coef_)
    assert warm.loss_curve_[0] < cold.loss_curve_[0]
    # Without warm_start, refitting starts afresh.
    again = clone(cold).fit(X, y).fit(X, y)
    np.testing.assert_array_equal(again.coef_, cold.coef_)
    warm.set_params(features=ArcFeatures(n_features=2**10))
    with pytest.raises(ValueError, match="warm_start needs the features"):
        warm.fit(X, y)
    labelled = [(h, ["dep"] * len(h)) for h in y]
    warm.set_params(features=ArcFeatures(n_features=N_FEATURES))
    with pytest.raises(ValueError, match="warm_start needs the relation labels"):
        warm.fit(X, labelled)


def test_early_stopping(data):
    X, y = data
    parser = small_parser(max_iter=6, early_stopping=True, validation_fraction=0.25,
                          tol=None).fit(X, y)
    assert len(parser.validation_scores_) == parser.n_iter_ == 6
    assert parser.best_validation_score_ == max(parser.validation_scores_)
    assert all(0.0 <= s <= 1.0 for s in parser.validation_scores_)
    stopped = small_parser(max_iter=50, early_stopping=True, n_iter_no_change=2,
                           tol=0.5).fit(X, y)
    # The UAS cannot rise by 0.5 twice: stops after 1 + n_iter_no_change epochs.
    assert stopped.n_iter_ == 3
    with pytest.raises(ValueError, match="early_stopping needs at least one training"):
        small_parser(early_stopping=True, validation_fraction=0.5).fit(X[:1], y[:1])


def test_verbose_prints_one_line_per_epoch(data, capsys):
    X, y = data
    small_parser(max_iter=3, tol=None, verbose=1).fit(X, y)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3
    assert [line.split("  ")[0] for line in lines] == [
        "[SparseMAPParser] epoch 1/3", "[SparseMAPParser] epoch 2/3", "[SparseMAPParser] epoch 3/3"]
    assert all("  loss " in line and "  epoch_time " in line for line in lines)
    small_parser(max_iter=2, tol=None, early_stopping=True, verbose=1).fit(X, y)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and all("  val_uas " in line for line in lines)
    small_parser(max_iter=2).fit(X, y)
    assert capsys.readouterr().out == ""


def test_tol_stops_early(data):
    X, y = data
    full = small_parser(max_iter=8, tol=None).fit(X, y)
    assert full.n_iter_ == 8
    stopped = small_parser(max_iter=8, tol=1e6, n_iter_no_change=2).fit(X, y)
    # The first epoch improves on nothing; no later one gains 1e6.
    assert stopped.n_iter_ == 3


def test_single_root_false_allows_several_root_words():
    X = [[{"form": "a", "upos": "NOUN"}, {"form": "b", "upos": "VERB"}]] * 4
    y = [[0, 0]] * 4
    parser = small_parser(single_root=False, max_iter=5).fit(X, y)
    assert [h.tolist() for h in parser.predict(X)] == y
    with pytest.raises(ValueError, match="sentence 0"):
        small_parser(single_root=True).fit(X, y)


# --- bad input ----------------------------------------------------------------


def _three_sentences():
    X = [[{"form": w, "upos": t} for w, t in zip(words, tags)] for words, tags in [
        (["the", "dog", "barks"], ["DET", "NOUN", "VERB"]),
        (["cats", "sleep", "well"], ["NOUN", "VERB", "ADV"]),
        (["birds", "sing"], ["NOUN", "VERB"]),
    ]]
    y = [[2, 3, 0], [2, 0, 2], [2, 0]]
    return X, y


def test_gold_cycle_names_sentence_and_word():
    X, y = _three_sentences()
    y[1] = [3, 0, 1]  # 1 -> 3 -> 1
    message = r"sentence 1 are not a tree \(word 1\): words 1 -> 3 -> 1 form a cycle"
    with pytest.raises(ValueError, match=message):
        small_parser().fit(X, y)


def test_gold_two_roots_with_single_root():
    X, y = _three_sentences()
    y[2] = [0, 0]
    with pytest.raises(ValueError, match=r"sentence 2 are not a tree \(word 2\): words 1 and 2 "
                                         "are both attached to the root"):
        small_parser().fit(X, y)


def test_gold_self_loop():
    X, y = _three_sentences()
    y[0] = [1, 3, 0]
    with pytest.raises(ValueError, match=r"sentence 0 are not a tree \(word 1\): word 1 is its "
                                         "own head"):
        small_parser().fit(X, y)


@pytest.mark.parametrize("bad", [4, -1])
def test_gold_head_out_of_range(bad):
    X, y = _three_sentences()
    y[1] = [2, 0, bad]
    with pytest.raises(ValueError, match=rf"y\[1\]\[2\] \(word 3 of sentence 1\) is {bad}, "
                                         r"outside \[0, 3\]"):
        small_parser().fit(X, y)


@pytest.mark.parametrize("bad", [2.0, "2", None])
def test_gold_head_not_an_integer(bad):
    X, y = _three_sentences()
    y[1] = [bad, 0, 2]
    with pytest.raises(ValueError, match=r"y\[1\]\[0\] \(word 1 of sentence 1\)"):
        small_parser().fit(X, y)


def test_len_x_differs_from_len_y():
    X, y = _three_sentences()
    with pytest.raises(ValueError, match="different numbers of sentences: 3 and 2"):
        small_parser().fit(X, y[:2])


def test_heads_length_differs_from_sentence_length():
    X, y = _three_sentences()
    y[1] = [2, 0]
    with pytest.raises(ValueError, match="sentence 1 has 3 words but 2 heads"):
        small_parser().fit(X, y)


def test_deprels_length_differs_from_sentence_length():
    X, y = _three_sentences()
    labelled = [(h, ["dep"] * len(h)) for h in y]
    labelled[2] = (y[2], ["dep"])
    with pytest.raises(ValueError, match="sentence 2 has 2 words but 1 relation labels"):
        small_parser().fit(X, labelled)


def test_empty_sentence():
    X, y = _three_sentences()
    X[1], y[1] = [], []
    with pytest.raises(ValueError, match="sentence 1 is empty"):
        small_parser().fit(X, y)
    parser = small_parser(max_iter=1).fit(*_three_sentences())
    with pytest.raises(ValueError, match="sentence 0 is empty"):
        parser.predict([[]])


def test_no_sentences():
    with pytest.raises(ValueError, match="zero sentences"):
        small_parser().fit([], [])


def test_flat_input_is_rejected():
    X, y = _three_sentences()
    with pytest.raises(ValueError, match="X must be a list of sentences"):
        small_parser().fit("the dog barks", y)
    with pytest.raises(ValueError, match="y must be a list of head sequences"):
        small_parser().fit(X, 3)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("projective", [False, True])
def test_one_word_sentences(loss, projective):
    X = [[{"form": "hello", "upos": "INTJ"}], [{"form": "yes", "upos": "INTJ"}]]
    y = [[0], [0]]
    parser = small_parser(loss=loss, projective=projective, max_iter=2).fit(X, y)
    assert [h.tolist() for h in parser.predict(X)] == y
    np.testing.assert_allclose(parser.predict_marginals(X)[0], [[0, 1], [0, 0]])
    assert [(h.tolist(), p) for h, p in parser.predict_sparse(X)[0]] == [([0], 1.0)]
    assert parser.score(X, y) == 1.0


def _slow_for_sparsemap(loss):
    # With zero weights, the active set on a 150-word sentence spreads over
    # very many trees: seconds (projective) for the first epoch.
    return pytest.param(loss, marks=pytest.mark.slow) if "sparsemap" in loss else loss


@pytest.mark.parametrize("loss", [_slow_for_sparsemap(loss) for loss in LOSSES])
@pytest.mark.parametrize("projective", [False, True])
def test_a_150_word_sentence(loss, projective):
    rng = np.random.default_rng(0)
    n = 150
    sentence = [{"form": f"w{rng.integers(30)}", "upos": TAGS[rng.integers(4)]}
                for _ in range(n)]
    # A chain with the first word as root: projective and single-rooted.
    heads = [0] + list(range(1, n))
    X, y = [sentence, sentence[:10]], [heads, heads[:10]]
    parser = small_parser(loss=loss, projective=projective, max_iter=1).fit(X, y)
    (predicted,) = parser.predict([sentence])
    assert predicted.shape == (n,)
    assert is_tree(predicted)
    if projective:
        assert is_projective(predicted)
    # (Not checked: n_sparsemap_not_converged_. With zero weights, the
    # projective margin-SparseMAP active set needs more than the parser's 200
    # iterations on a sentence this long.)


# The active set may stop at the parser's iteration limit on a long sentence
# whose arcs the model barely knows (a valid, not fully converged distribution).
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("projective", [False, True])
def test_a_150_word_sentence_parsed_by_a_trained_parser(fitted, projective):
    rng = np.random.default_rng(1)
    sentence = [{"form": f"{t.lower()}{rng.integers(2)}", "upos": t}
                for t in rng.choice(TAGS, size=150)]
    parser = clone(fitted["sparsemap"]).set_params(projective=projective)
    parser.fit(*treebank(60, False, 2))
    (predicted,) = parser.predict([sentence])
    assert predicted.shape == (150,) and is_tree(predicted)
    (support,) = parser.predict_sparse([sentence])
    assert sum(p for _, p in support) == pytest.approx(1.0)
    for heads, _ in support:
        assert is_tree(heads)
        if projective:
            assert is_projective(heads)


# --- projective training on non-projective gold trees ------------------------------


def _ancestors(heads, m):
    out = []
    while m != 0:
        m = heads[m - 1]
        out.append(m)
    return out


@pytest.mark.parametrize("single_root", [False, True])
def test_lifting_makes_every_tree_projective(single_root):
    import itertools

    from sksparse_struct.structures._tree_fast import lift_to_projective

    n = 5
    trees = [list(h) for h in itertools.product(range(n + 1), repeat=n)
             if is_tree(h, single_root)]
    assert len(trees) == (n ** (n - 1) if single_root else (n + 1) ** (n - 1))
    stacked = np.array([x for h in trees for x in [-1] + h], dtype=np.int64)
    offsets = np.arange(len(trees) + 1, dtype=np.int64) * (n + 1)
    lifts = lift_to_projective(stacked, offsets)
    total = 0
    for i, original in enumerate(trees):
        lifted = stacked[offsets[i] + 1:offsets[i + 1]].tolist()
        assert stacked[offsets[i]] == -1
        assert is_tree(lifted, single_root)
        assert is_projective(lifted)
        if is_projective(original):
            assert lifted == original
        for m in range(1, n + 1):
            # Each word keeps its head or moves up to one of its ancestors.
            assert lifted[m - 1] in [original[m - 1]] + _ancestors(original, m)
            total += lifted[m - 1] != original[m - 1]
        if single_root:
            assert lifted.index(0) == original.index(0)
    assert lifts >= total > 0


def test_projective_parser_trains_on_lifted_trees():
    # 1 <- 3 crosses root -> 2: non-projective; the projective parser learns
    # the lifted tree and still scores against the original.
    X = [[{"form": w, "upos": t} for w, t in [("a", "X"), ("b", "Y"), ("c", "Z")]]] * 6
    y = [np.array([3, 0, 2]) for _ in range(6)]
    parser = small_parser(loss="hinge", projective=True, max_iter=10, tol=None).fit(X, y)
    assert all(h.tolist() == [3, 0, 2] for h in y)  # the input is not modified
    assert parser.n_lifted_arcs_ == 6
    predicted = parser.predict(X)[0].tolist()
    assert is_projective(predicted) and predicted == [2, 0, 2]
    assert parser.score(X, y) == pytest.approx(2 / 3)
    assert small_parser(max_iter=1).fit(X, y).n_lifted_arcs_ == 0


# --- token fields at predict time -----------------------------------------------


def test_missing_token_fields_warn_at_predict(fitted, data):
    X, _ = data
    parser = fitted["perceptron"]
    assert parser.token_fields_ == ("upos",)
    forms = [[{"form": t["form"]} for t in s] for s in X[:5]]
    for without_upos in (forms, [[t["form"] for t in s] for s in X[:5]],
                         [[{"form": t["form"], "upos": "_"} for t in s] for s in X[:5]]):
        with pytest.warns(UserWarning) as record:
            heads = parser.predict(without_upos)
        assert len(record) == 1
        message = str(record[0].message)
        assert message.startswith("no word of X gives 'upos', but the parser was trained "
                                  "with it: missing values are read as unspecified")
        # The warning points at the caller, not into the package.
        assert record[0].filename == __file__
        assert [len(h) for h in heads] == [len(s) for s in X[:5]]
    for method in ("decision_function", "predict_marginals", "predict_sparse"):
        with pytest.warns(UserWarning, match="no word of X gives 'upos'") as record:
            getattr(parser, method)(forms)
        assert record[0].filename == __file__
    with pytest.warns(UserWarning, match="no word of X gives 'upos'") as record:
        parser.score(forms, data[1][:5])
    assert record[0].filename == __file__


def test_given_token_fields_do_not_warn(fitted, data, recwarn):
    X, _ = data
    parser = fitted["perceptron"]
    parser.predict(X[:5])
    # (form, upos) pairs give the UPOS; one tagged word is enough.
    parser.predict([[(t["form"], t["upos"]) for t in s] for s in X[:5]])
    parser.predict([[{"form": "a", "upos": "_"}, {"form": "b", "upos": "NOUN"}]])
    # Encoded sentences are not checked.
    parser.predict(ArcFeatures(n_features=N_FEATURES).transform([[t["form"] for t in s]
                                                                  for s in X[:5]]))
    assert not [w for w in recwarn if issubclass(w.category, UserWarning)]


def test_token_fields_of_a_full_treebank():
    # Trained on every field (as read_conllu gives them); FEATS "_" counts as
    # given, since whole sentences often have no features.
    X = [[{"form": "Dogs", "lemma": "dog", "upos": "NOUN", "xpos": "NNS",
           "feats": "Number=Plur"}, {"form": "bark", "lemma": "bark", "upos": "VERB",
                                     "xpos": "VBP", "feats": "_"}],
         [{"form": "Yes", "lemma": "yes", "upos": "INTJ", "xpos": "UH", "feats": "_"}]]
    y = [[2, 0], [0]]
    parser = small_parser(max_iter=1).fit(X, y)
    assert parser.token_fields_ == ("lemma", "upos", "xpos", "feats")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parser.predict(X[1:])  # no features at all, but the field is there
    tagged = [[(t["form"], t["upos"]) for t in s] for s in X]
    with pytest.warns(UserWarning, match=r"^no word of X gives 'lemma' and 'xpos' and "
                      r"'feats', but the parser was trained with them.*Give the same token "
                      r"fields as at fit \('lemma', 'upos', 'xpos', 'feats'\)"):
        parser.predict(tagged)
    # Fitted on encoded sentences: the fields are unknown, nothing is checked.
    encoded = small_parser(max_iter=1).fit(ArcFeatures(n_features=N_FEATURES).transform(X), y)
    assert encoded.token_fields_ is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        encoded.predict(tagged)
        # A parser pickled before token_fields_ existed checks nothing either.
        del parser.token_fields_
        parser.predict(tagged)
