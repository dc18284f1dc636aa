"""TokenFeatures(output="matrix") against the dicts it replaces, and StackedSequences.

The reference is ``SequenceVectorizer().fit_transform(TokenFeatures().transform(X))``:
every token must hold the same set of feature names (read through each
side's vocabulary), for every preset and option, on random and real input.
"""

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import Pipeline

from sksparse_struct import EasyFirstTagger, LinearChainCRF
from sksparse_struct.datasets import load_ewt_sample
from sksparse_struct.feature_extraction import (
    SequenceVectorizer,
    StackedSequences,
    TokenFeatures,
)
from sksparse_struct.feature_extraction._token_attributes import ALL_FLAGS
from sksparse_struct.feature_extraction._token_hashing import _hash_strings

SENTENCES = [
    [("He", "PRP"), ("reckons", "VBZ"), ("the", "DT"), ("current-account", "JJ"),
     ("deficit", "NN"), ("will", "MD"), ("narrow", "VB"), ("to", "TO"), ("1.8", "CD"),
     ("billion", "CD"), (".", ".")],
    [("McDonald's", "NNP")],
    [],
    [("A", "DT"), ("USA", "NNP"), ("42", "CD"), ("x-ray", "NN"), ("!?", "."), ("", "SYM")],
]

# Random words over an alphabet with cases, digits, hyphens, punctuation,
# accents, characters outside the BMP and a lone surrogate; no "|" (see
# test_conjunction_values_with_a_bar).
ALPHABET = list("aAbBzZ09-'.,!é\u00c9\u0130\u00df") + ["\U0001f600", "\ud800", "\u2019"]


def random_sentences(seed, n_sentences=40, max_len=9, n_words=60):
    rng = np.random.default_rng(seed)
    words = ["".join(rng.choice(ALPHABET, size=rng.integers(0, 6))) for _ in range(n_words)]
    tags = ["NN", "VB", "DT", "JJ", "-", ""]
    return [
        [(words[rng.integers(n_words)], tags[rng.integers(len(tags))])
         for _ in range(rng.integers(0, max_len))]
        for _ in range(n_sentences)
    ]


def token_name_sets(rows, names):
    return [frozenset(names[j] for j in rows.indices[rows.indptr[i]:rows.indptr[i + 1]])
            for i in range(rows.shape[0])]


def assert_same_features(params, X_fit, X_other=None):
    """The matrix path encodes exactly the dicts' features, in fit and in transform."""
    tf = TokenFeatures(**params, output="matrix")
    got = tf.fit_transform(X_fit)
    dicts = TokenFeatures(**params)
    vec = SequenceVectorizer()
    want = vec.fit_transform(dicts.transform(X_fit))
    assert sorted(tf.feature_names_) == vec.feature_names_
    assert isinstance(got, StackedSequences) and len(got) == len(X_fit)
    for X, ours in [(X_fit, got)] + ([(X_other, tf.transform(X_other))] if X_other else []):
        theirs = sp.vstack(vec.transform(dicts.transform(X)) or [sp.csr_matrix((0, 0))])
        assert ours.lengths.tolist() == [len(s) for s in X]
        assert ours.matrix.shape == (sum(map(len, X)), len(tf.feature_names_))
        assert np.all(ours.matrix.data == 1.0)
        assert ours.matrix.has_canonical_format
        assert token_name_sets(ours.matrix, tf.feature_names_) == token_name_sets(
            sp.csr_matrix(theirs), vec.feature_names_)
    # The per-sequence views are the dicts' matrices, column for column.
    assert [m.shape[0] for m in got] == [m.shape[0] for m in want]
    return tf, got


PARAMS = [
    {},
    {"preset": "conll2000"},
    {"preset": "pos"},
    {"window": 2, "lower": True, "column_features": ("pos",)},
    {"window": (2, 0), "word": False, "shape": True, "short_shape": True,
     "spelling_window": (1, 2), "bias": False},
    {"prefixes": (1, 3), "suffixes": (2, 4, 9), "flags": ALL_FLAGS, "spelling_window": 1,
     "bos_eos": True},
    {"templates": ((("lower", -1), ("shape", 0), ("pos", 1)), (("suffix2", -2),),
                   (("is_title", 1),), (("prefix1", 0),), (("short_shape", -1),)),
     "word": False},
    # The same feature twice (a window and a template): once, as in a dict.
    {"window": 1, "templates": ((("w", 0),), (("word", -1),), (("w", 0),))},
    {"preset": "pos", "suffixes": (1, 2), "flags": (), "bias": False, "bos_eos": False},
    {"word": False, "bos_eos": True},
]


@pytest.mark.parametrize("params", PARAMS)
def test_same_features_as_the_dicts(params):
    assert_same_features(params, SENTENCES, random_sentences(1, n_sentences=10))


@pytest.mark.parametrize("params", PARAMS)
def test_same_features_on_random_words(params):
    assert_same_features(params, random_sentences(2), random_sentences(3))


def test_same_features_on_dict_tokens_of_the_ewt_sample():
    X, _ = load_ewt_sample("train", return_X_y=True, target="tree")
    X_test, _ = load_ewt_sample("test", return_X_y=True, target="tree")
    params = {"preset": "pos", "word_column": "form", "column_features": ("lemma",),
              "templates": ((("upos", -1), ("xpos", 0)),)}
    assert_same_features(params, X[:150], X_test[:50])


def test_same_features_on_conll2000(shared_data):
    from sksparse_struct.datasets import read_conll

    X, _ = read_conll(shared_data / "conll2000" / "train.txt",
                      columns=("word", "pos", "chunk"), label="chunk")
    for preset in ("conll2000", "pos"):
        assert_same_features({"preset": preset}, X[:150], X[150:250])


@pytest.mark.parametrize("kind", ["tuple", "dict", "list"])
def test_token_kinds_give_the_same_matrix(kind):
    make = {"tuple": tuple, "dict": lambda t: {"word": t[0], "pos": t[1]}, "list": list}[kind]
    X = [[make(t) for t in s] for s in SENTENCES]
    ref = TokenFeatures(preset="conll2000", output="matrix").fit(SENTENCES)
    got = ref.transform(X)
    assert (got.matrix != ref.transform(SENTENCES).matrix).nnz == 0
    words = [[w for w, _ in s] for s in SENTENCES]
    assert_same_features({"preset": "pos"}, words)


def test_unseen_features_are_dropped():
    tf = TokenFeatures(output="matrix").fit([["a", "b"]])
    out = tf.transform([["b", "zzz", "a"], []])
    names = tf.feature_names_
    assert token_name_sets(out.matrix, names) == [
        {"bias", "w[0]=b"}, {"bias"}, {"bias", "w[0]=a"}]
    assert out[1].shape == (0, 3)


def test_empty_input():
    tf = TokenFeatures(preset="conll2000", output="matrix")
    out = tf.fit_transform([[], []])
    assert out.matrix.shape == (0, 0) and out.lengths.tolist() == [0, 0]
    assert tf.feature_names_ == []
    assert len(tf.transform([])) == 0
    assert tf.transform([SENTENCES[0]]).matrix.nnz == 0


def test_conjunction_values_with_a_bar():
    # The dicts join ("a|b", "c") and ("a", "b|c") into one string; the
    # matrix keeps the two apart (as the docstring says).
    tf = TokenFeatures(word=False, templates=((("w", 0), ("w", 1)),), bias=False,
                       output="matrix")
    out = tf.fit_transform([["a|b", "c"], ["a", "b|c"]])
    assert len(tf.feature_names_) == 2 and set(tf.feature_names_) == {"w[0]|w[1]=a|b|c"}
    assert out.matrix[0].indices.tolist() != out.matrix[2].indices.tolist()


def test_hashes_are_deterministic_and_not_zero():
    strings = ["", "a", "b", "ab", "ba", "\U0001f600", "\ud800", "é"]
    h = _hash_strings(strings)
    assert len(set(h.tolist())) == len(strings) and np.all(h != 0)
    # Fixed values: a change of the hash would silently break saved models.
    assert _hash_strings(["a", ""]).tolist() == FIXED_HASHES


FIXED_HASHES = [-2240115087873288976, -5115162479779449349]


def test_pickle_round_trip_in_another_process(tmp_path):
    tf = TokenFeatures(preset="pos", output="matrix").fit(SENTENCES)
    here = tf.transform(SENTENCES)
    path = tmp_path / "tf.pkl"
    path.write_bytes(pickle.dumps((tf, SENTENCES)))
    again = pickle.loads(path.read_bytes())[0]
    assert (again.transform(SENTENCES).matrix != here.matrix).nnz == 0
    code = (
        "import pickle, sys; tf, X = pickle.load(open(sys.argv[1], 'rb'));"
        "m = tf.transform(X).matrix; print(m.indices.tolist(), m.indptr.tolist())"
    )
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code, str(path)], env=env, check=True,
                         capture_output=True, text=True).stdout
    assert out.strip() == f"{here.matrix.indices.tolist()} {here.matrix.indptr.tolist()}"


def test_clone_params_tags_and_fitted_state():
    tf = TokenFeatures(preset="conll2000", output="matrix")
    assert tf.get_params()["output"] == "matrix"
    assert tf.__sklearn_tags__().requires_fit is True
    assert TokenFeatures().__sklearn_tags__().requires_fit is False
    with pytest.raises(NotFittedError):
        tf.transform(SENTENCES)
    with pytest.raises(NotFittedError):
        tf.feature_names_
    tf.fit(SENTENCES)
    assert not hasattr(clone(tf), "_vocabulary")
    assert tf.get_feature_names_out().tolist() == tf.feature_names_
    with pytest.raises(ValueError, match="only with output='matrix'"):
        TokenFeatures().fit(SENTENCES).get_feature_names_out()
    with pytest.raises(ValueError, match="needs the training sequences"):
        TokenFeatures(output="matrix").fit()
    with pytest.raises(ValueError, match="output"):
        TokenFeatures(output="matrices").fit(SENTENCES)


@pytest.mark.parametrize(
    "X",
    [
        [[("He", "PRP", "B-NP")]],
        [[("He", "PRP"), {"word": "x"}]],
        [[("He", "PRP")], ["He"]],
        [[("He", "PRP"), 3]],
        [[("He", 3)]],
        [[{"word": "He", "pos": None}]],
        [("He", "PRP")],
        ["He reckons"],
        "He",
        [[("a", "b")], 5],
        [[("a", "b")], {"word": "a"}],
    ],
)
def test_bad_tokens_same_message_as_the_dicts(X):
    with pytest.raises(ValueError) as want:
        TokenFeatures(preset="conll2000").transform(X)
    with pytest.raises(ValueError) as got:
        TokenFeatures(preset="conll2000", output="matrix").fit(X)
    assert str(got.value) == str(want.value)
    fitted = TokenFeatures(preset="conll2000", output="matrix").fit(SENTENCES)
    with pytest.raises(ValueError) as got:
        fitted.transform(X)
    assert str(got.value) == str(want.value)


# --- StackedSequences -------------------------------------------------------


def test_stacked_sequences_behave_as_a_list():
    tf = TokenFeatures(preset="conll2000", output="matrix")
    out = tf.fit_transform(SENTENCES)
    ref = SequenceVectorizer()._split(out.matrix, out.lengths)
    assert len(out) == 4 and len(list(out)) == 4
    for got, want in zip(out, ref):
        assert got.shape == want.shape and (got != want).nnz == 0
    assert (out[-1] != ref[3]).nnz == 0
    for index in (slice(1, 3), slice(None, None, 2), slice(None, None, -1), slice(5, 9)):
        part = out[index]
        assert isinstance(part, StackedSequences)
        assert [m.shape for m in part] == [m.shape for m in ref[index]]
        assert all((a != b).nnz == 0 for a, b in zip(part, ref[index]))
    assert "n_sequences=4" in repr(out)
    with pytest.raises(IndexError, match="out of range"):
        out[4]
    with pytest.raises(TypeError, match="integers or slices"):
        out["a"]


@pytest.mark.parametrize(
    "matrix, lengths, message",
    [
        (np.eye(2), [2], "2-D sparse matrix"),
        (sp.eye(2, format="csr"), [1], "add up to 1 tokens but the matrix has 2 rows"),
        (sp.eye(2, format="csr"), [3, -1], "must not be negative"),
        (sp.eye(2, format="csr"), [[2]], "1-D array of integers"),
        (sp.eye(2, format="csr"), [1.0, 1.0], "1-D array of integers"),
    ],
)
def test_stacked_sequences_errors(matrix, lengths, message):
    with pytest.raises(ValueError, match=message):
        StackedSequences(matrix, lengths)


# --- the taggers -------------------------------------------------------------


@pytest.fixture(scope="module")
def ewt():
    X, y = load_ewt_sample("train", return_X_y=True)
    X_test, y_test = load_ewt_sample("test", return_X_y=True)
    return X[:200], y[:200], X_test[:60], y_test[:60]


def test_crf_pipeline_same_model_as_on_dicts(ewt):
    X, y, X_test, _ = ewt
    features = dict(preset="pos")
    crf = dict(max_iter=25, tol=None)
    ours = Pipeline([("f", TokenFeatures(**features, output="matrix")),
                     ("crf", LinearChainCRF(**crf))]).fit(X, y)
    dicts = Pipeline([("f", TokenFeatures(**features)), ("crf", LinearChainCRF(**crf))]).fit(X, y)
    assert ours.predict(X_test) == dicts.predict(X_test)
    assert ours[-1].objective_ == pytest.approx(dicts[-1].objective_, rel=1e-9)
    # The same weights, column for column.
    names = ours[0].feature_names_
    assert ours[-1].coef_.shape == dicts[-1].coef_.shape
    ours_w = {(names[j], i): v for i, j, v in zip(*sp.find(ours[-1].coef_)[:2],
                                                sp.find(ours[-1].coef_)[2])}
    theirs = dicts[-1].state_features_
    classes = ours[-1].classes_.tolist()
    assert {(n, classes[i]): v for (n, i), v in ours_w.items()} == pytest.approx(theirs,
                                                                                 rel=1e-6,
                                                                                 abs=1e-9)
    # The list of per-sequence matrices gives the same predictions.
    Xt = ours[0].transform(X_test)
    assert ours[-1].predict(list(Xt)) == ours[-1].predict(Xt)
    marginals = ours[-1].predict_marginals(Xt)
    assert [m.shape[0] for m in marginals] == [len(s) for s in X_test]


def test_easy_first_on_stacked_sequences(ewt):
    X, y, X_test, _ = ewt
    tf = TokenFeatures(preset="pos", output="matrix")
    Xt = tf.fit_transform(X)
    tagger = EasyFirstTagger(max_iter=2, tol=None, random_state=0).fit(Xt, y)
    as_list = EasyFirstTagger(max_iter=2, tol=None, random_state=0).fit(list(Xt), y)
    T = tf.transform(X_test)
    assert tagger.predict(T) == as_list.predict(list(T))


def test_tagger_input_checks(ewt):
    X, y, X_test, _ = ewt
    tf = TokenFeatures(preset="pos", output="matrix")
    Xt = tf.fit_transform(X[:30])
    crf = LinearChainCRF(max_iter=2, tol=None).fit(Xt, y[:30])
    on_dicts = LinearChainCRF(max_iter=2, tol=None).fit(
        TokenFeatures(preset="pos").transform(X[:30]), y[:30])
    with pytest.raises(ValueError, match="fitted on feature dicts"):
        on_dicts.predict(Xt)
    narrower = StackedSequences(Xt.matrix[:, :5], Xt.lengths)
    with pytest.raises(ValueError, match="features per token"):
        crf.predict(narrower)
    bad = Xt.matrix.copy()
    bad.data[bad.indptr[Xt.offsets[3] + 2]] = np.inf
    with pytest.raises(ValueError, match=r"X\[3\] has a non-finite feature value \(inf\) "
                                         r"at token 2"):
        crf.predict(StackedSequences(bad, Xt.lengths))
    with pytest.raises(ValueError, match="3 sequences but y has 2"):
        LinearChainCRF().fit(Xt[:3], y[:2])
