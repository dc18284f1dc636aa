"""SequenceVectorizer: the value rules, errors, vocabulary, and the stacked fast path."""

import math
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import Pipeline

from sksparse_struct.feature_extraction import SequenceVectorizer, TokenFeatures


def reference_flatten(token, sep="="):
    """Independent, naive statement of the rules: {feature name: value}."""
    out = {}

    def add(name, value):
        out[name] = out.get(name, 0.0) + value

    def walk(prefix, key, value):
        name = prefix + key
        if isinstance(value, str):
            add(f"{name}{sep}{value}", 1.0)
        elif isinstance(value, (bool, np.bool_)):
            if value:
                add(name, 1.0)
        elif isinstance(value, (int, float, np.integer, np.floating)):
            if value != 0:
                add(name, float(value))
        elif isinstance(value, dict):
            for sub, sub_value in value.items():
                walk(name + ":", sub, sub_value)
        else:  # list / tuple / set of strings
            for element in value:
                add(f"{name}{sep}{element}", 1.0)

    for key, value in token.items():
        walk("", key, value)
    return {k: v for k, v in out.items() if v != 0}


def dense_reference(X, vocabulary, sep="="):
    mats = []
    for seq in X:
        m = np.zeros((len(seq), len(vocabulary)))
        for r, token in enumerate(seq):
            for name, value in reference_flatten(token, sep).items():
                if name in vocabulary:
                    m[r, vocabulary[name]] += value
        mats.append(m)
    return mats


def test_value_rules_by_hand():
    X = [[{"w": "the", "cap": False, "n": 2, "f": 0.5, "one": 1,
           "np": np.float32(3.0), "flag": True}]]
    vec = SequenceVectorizer()
    [m] = vec.fit_transform(X)
    assert vec.feature_names_ == ["f", "flag", "n", "np", "one", "w=the"]
    assert m.toarray().tolist() == [[0.5, 1.0, 2.0, 3.0, 1.0, 1.0]]
    assert isinstance(m, sp.csr_matrix) and m.dtype == np.float64


def test_nested_dict_and_lists_follow_python_crfsuite():
    X = [[{"ctx": {"w": "a", "n": 2.0, "deep": {"x": True}},
           "suf": ["ing", "ng", "ng"], "tags": ("A",), "set": {"S"}}]]
    vec = SequenceVectorizer()
    [m] = vec.fit_transform(X)
    got = dict(zip(vec.feature_names_, m.toarray()[0].tolist()))
    assert got == {"ctx:w=a": 1.0, "ctx:n": 2.0, "ctx:deep:x": 1.0,
                   "suf=ing": 1.0, "suf=ng": 2.0, "tags=A": 1.0, "set=S": 1.0}
    # separator=":" gives python-crfsuite's own names.
    vec = SequenceVectorizer(separator=":").fit(X)
    assert "ctx:w:a" in vec.vocabulary_ and "suf:ing" in vec.vocabulary_


def test_false_and_zero_are_dropped_and_not_in_vocabulary():
    vec = SequenceVectorizer().fit([[{"a": False, "b": 0, "c": 0.0, "d": "x"}]])
    assert vec.feature_names_ == ["d=x"]
    [m] = vec.transform([[{"a": True, "d": "x"}]])
    assert m.nnz == 1


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -np.inf, np.float64("nan")])
def test_non_finite_values_name_sequence_token_and_feature(bad):
    X = [[{"a": 1.0}], [{"a": 1.0}, {"a": 2.0, "score": bad}]]
    with pytest.raises(ValueError, match=r"token 1 of sequence 1, feature 'score'"):
        SequenceVectorizer().fit(X)
    vec = SequenceVectorizer().fit([[{"score": 1.0}]])
    with pytest.raises(ValueError, match=r"token 0 of sequence 0, feature 'score'"):
        vec.transform([[{"score": bad}]])


def test_nan_inside_nested_dict():
    with pytest.raises(ValueError, match=r"token 0 of sequence 0, feature 'ctx:v'"):
        SequenceVectorizer().fit([[{"ctx": {"v": math.nan}}]])


@pytest.mark.parametrize(
    "X, message",
    [
        ("abc", "got a string"),
        ({"a": "b"}, "single dict"),
        (5, "not iterable"),
        (sp.csr_matrix(np.eye(2)), "sparse matrix"),
        ([{"w": "a"}, {"w": "b"}], r"element 0 of X is a dict.*\[sequence\]"),
        ([[{"w": "a"}], "ab"], "sequence 1 is a string"),
        ([[{"w": "a"}], 3], "sequence 1 is a int, which is not iterable"),
        ([[{"w": "a"}], sp.csr_matrix(np.eye(2))], "sequence 1 is a sparse matrix"),
        ([[{"w": "a"}, ("w", "b")]], "token 1 of sequence 0 is a tuple, not a dict"),
        ([[], [{"w": "a"}, "b"]], "token 1 of sequence 1 is a str"),
        ([[{1: "a"}]], "token 0 of sequence 0: feature names must be strings"),
        ([[{"w": None}]], r"token 0 of sequence 0, feature 'w': unsupported value type NoneType"),
        ([[{"w": 1 + 2j}]], "unsupported value type complex"),
        ([[{"w": ["a", 1]}]], r"feature 'w': a list, tuple or set value must hold strings"),
        ([[{"w": {2: "a"}}]], "inside the dict value of 'w'"),
    ],
)
def test_bad_input_errors(X, message):
    with pytest.raises(ValueError, match=message):
        SequenceVectorizer().fit(X)


def test_bad_token_after_cached_tokens_is_still_reported():
    # The fast path serves cached pairs; a bad value later must still fail.
    X = [[{"w": "a"}, {"w": "a"}, {"w": "a", "x": [1]}]]
    with pytest.raises(ValueError, match="token 2 of sequence 0, feature 'x'"):
        SequenceVectorizer().fit(X)


def test_unseen_features_are_ignored_and_empty_sequences_have_no_rows():
    vec = SequenceVectorizer().fit([[{"w": "a", "n": 2.0}]])
    out = vec.transform([[{"w": "b", "n": 3.0, "new": 5.0, "l": ["z"]}], [],
                         [{"w": "a"}]])
    assert [m.shape for m in out] == [(1, 2), (0, 2), (1, 2)]
    assert out[0].toarray().tolist() == [[3.0, 0.0]]
    assert out[2].toarray().tolist() == [[0.0, 1.0]]
    assert out[0].nnz == 1  # the unseen ones are not stored as zeros


def test_sort_on_and_off():
    X = [[{"b": "1"}, {"a": "2", "c": True}]]
    assert SequenceVectorizer().fit(X).feature_names_ == ["a=2", "b=1", "c"]
    vec = SequenceVectorizer(sort=False).fit(X)
    assert vec.feature_names_ == ["b=1", "a=2", "c"]
    assert vec.vocabulary_ == {"b=1": 0, "a=2": 1, "c": 2}
    [m] = vec.transform(X)
    assert m.toarray().tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]


def test_dtype_and_bad_dtype():
    [m] = SequenceVectorizer(dtype=np.float32).fit_transform([[{"a": 0.5}]])
    assert m.dtype == np.float32
    with pytest.raises(ValueError, match="floating dtype"):
        SequenceVectorizer(dtype=np.int64).fit([[{"a": 1}]])


def test_not_fitted():
    with pytest.raises(NotFittedError):
        SequenceVectorizer().transform([[{"a": "b"}]])


def test_inverse_transform_round_trip():
    X = [[{"w": "a", "n": 2.5}, {"w": "b", "flag": True}], []]
    vec = SequenceVectorizer()
    back = vec.inverse_transform(vec.fit_transform(X))
    assert back == [[{"n": 2.5, "w=a": 1.0}, {"flag": 1.0, "w=b": 1.0}], []]


def test_pickle_and_clone():
    X = [[{"w": "a", "n": 2.5}, {"w": "b"}]]
    vec = SequenceVectorizer(separator=":", sort=False).fit(X)
    again = pickle.loads(pickle.dumps(vec))
    assert again.vocabulary_ == vec.vocabulary_
    for a, b in zip(again.transform(X), vec.transform(X)):
        assert (a != b).nnz == 0
    fresh = clone(vec)
    assert fresh.get_params() == vec.get_params()
    assert not hasattr(fresh, "vocabulary_")


def test_get_feature_names_out():
    vec = SequenceVectorizer().fit([[{"w": "a", "n": 1.5}]])
    names = vec.get_feature_names_out()
    assert names.dtype == object and names.tolist() == ["n", "w=a"]


def test_pipeline_with_token_features():
    pipe = Pipeline([("feats", TokenFeatures(preset="conll2000")),
                     ("vec", SequenceVectorizer())])
    X = [[("He", "PRP"), ("ran", "VBD")], [("She", "PRP")]]
    out = pipe.fit_transform(X)
    assert [m.shape[0] for m in out] == [2, 1]
    names = pipe.named_steps["vec"].get_feature_names_out().tolist()
    assert "w[-1]|w[0]=He|ran" in names and "__EOS__" in names
    # row 1 of sentence 0: w[-1], w[0], w[-1]|w[0], pos[-1], pos[0],
    # pos[-1]|pos[0], __EOS__
    assert out[0][1].nnz == 7
    assert clone(pipe).get_params()["feats__preset"] == "conll2000"


# Hypothesis: arbitrary feature dicts against the naive reference, and the
# stacked fast path against vstack of the per-sequence matrices.
names = st.sampled_from(["a", "b", "w[0]", "x=y", "c"])
scalar = st.one_of(
    st.sampled_from(["u", "v", "a=b", ""]),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(-5, 5, allow_nan=False).map(lambda v: round(v, 2)),
)
value = st.one_of(
    scalar,
    st.lists(st.sampled_from(["p", "q"]), max_size=3),
    st.dictionaries(st.sampled_from(["s", "t"]), scalar, max_size=2),
)
token = st.dictionaries(names, value, max_size=4)
corpus = st.lists(st.lists(token, max_size=4), max_size=4)


@given(train=corpus, test=corpus, sort=st.booleans())
def test_matches_reference_and_stacked_agrees(train, test, sort):
    vec = SequenceVectorizer(sort=sort)
    stacked, lengths = vec._fit_transform_stacked(train)
    expected_vocab = {}
    for seq in train:
        for tok in seq:
            for name in reference_flatten(tok):
                expected_vocab.setdefault(name, len(expected_vocab))
    assert set(vec.vocabulary_) == set(expected_vocab)
    if sort:
        assert vec.feature_names_ == sorted(expected_vocab)
    else:
        assert vec.feature_names_ == list(expected_vocab)
    for X in (train, test):
        mats = vec.transform(X)
        stacked, lengths = vec._transform_stacked(X)
        assert lengths.dtype == np.int64 and lengths.tolist() == [len(s) for s in X]
        for m, ref in zip(mats, dense_reference(X, vec.vocabulary_)):
            assert m.shape == ref.shape
            np.testing.assert_allclose(m.toarray(), ref, rtol=0, atol=1e-12)
            assert m.has_canonical_format
            assert np.all(m.data != 0)
        if X:
            vstacked = sp.vstack(mats, format="csr")
            assert stacked.shape == vstacked.shape
            assert (stacked != vstacked).nnz == 0
        assert stacked.has_canonical_format


def test_fit_transform_equals_fit_then_transform():
    X = [[{"w": "b", "n": 2.0}, {"w": "a", "l": ["x", "x"]}], [], [{"w": "c"}]]
    a = SequenceVectorizer().fit_transform(X)
    b = SequenceVectorizer().fit(X).transform(X)
    assert all((p != q).nnz == 0 for p, q in zip(a, b))


def test_transform_cache_gives_the_same_matrices_as_the_general_path():
    # transform reads a cache built from the vocabulary; it must agree with
    # the per-call encoder of fit_transform on every kind of value, and keep
    # doing so after pickling (the cache is not pickled but rebuilt).
    import pickle

    train = [
        [{"w": "a=b", "x": 0.5, "b": True, "n": {"s": "t"}, "l": ["u", "u"]},
         {"w": "c", "k=v": "z", "one": 1, "f": False}],
        [{"w": "=", "x": 2.0, "b": False}],
    ]
    test = train + [
        [{"w": "unseen", "x": 0.25, "b": True, "n": {"s": "q"}, "k=v": "z", "k": "v=z"},
         {"new": "name", "one": 1.0, "l": ["u", "v"]}],
    ]
    vec = SequenceVectorizer()
    fitted = vec.fit_transform(train)
    for a, b in zip(fitted, vec.transform(train)):
        assert (a != b).nnz == 0
    got = vec.transform(test)
    again = pickle.loads(pickle.dumps(vec)).transform(test)
    assert "_pair_cache" not in pickle.loads(pickle.dumps(vec)).__dict__
    names = vec.get_feature_names_out().tolist()
    last = got[-1].toarray()
    row0 = dict(zip(names, last[0]))
    assert "n:s=q" not in names and "w=unseen" not in names and "new=name" not in names
    # {"k=v": "z"} and {"k": "v=z"} name the same feature.
    assert row0 == dict.fromkeys(names, 0.0) | {"x": 0.25, "b": 1.0, "k=v=z": 2.0}
    row1 = dict(zip(names, last[1]))
    assert row1 == dict.fromkeys(names, 0.0) | {"one": 1.0, "l=u": 1.0}
    for a, b in zip(got, again):
        assert (a != b).nnz == 0
