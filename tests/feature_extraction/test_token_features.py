"""TokenFeatures: hand-checked presets, every option, token kinds, errors."""

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.base import clone

from sksparse_struct.feature_extraction import CONLL2000_TEMPLATES, TokenFeatures
from sksparse_struct.feature_extraction._token_attributes import (
    short_word_shape,
    word_shape,
)

SENTENCE = [("He", "PRP"), ("reckons", "VBZ"), ("the", "DT")]

CONLL_EXPECTED = [
    {
        "w[0]": "He", "w[1]": "reckons", "w[2]": "the",
        "w[0]|w[1]": "He|reckons",
        "pos[0]": "PRP", "pos[1]": "VBZ", "pos[2]": "DT",
        "pos[0]|pos[1]": "PRP|VBZ", "pos[1]|pos[2]": "VBZ|DT",
        "pos[0]|pos[1]|pos[2]": "PRP|VBZ|DT",
        "__BOS__": True,
    },
    {
        "w[-1]": "He", "w[0]": "reckons", "w[1]": "the",
        "w[-1]|w[0]": "He|reckons", "w[0]|w[1]": "reckons|the",
        "pos[-1]": "PRP", "pos[0]": "VBZ", "pos[1]": "DT",
        "pos[-1]|pos[0]": "PRP|VBZ", "pos[0]|pos[1]": "VBZ|DT",
        "pos[-1]|pos[0]|pos[1]": "PRP|VBZ|DT",
    },
    {
        "w[-2]": "He", "w[-1]": "reckons", "w[0]": "the",
        "w[-1]|w[0]": "reckons|the",
        "pos[-2]": "PRP", "pos[-1]": "VBZ", "pos[0]": "DT",
        "pos[-2]|pos[-1]": "PRP|VBZ", "pos[-1]|pos[0]": "VBZ|DT",
        "pos[-2]|pos[-1]|pos[0]": "PRP|VBZ|DT",
        "__EOS__": True,
    },
]


def crfsuite_apply_templates(tokens):
    """Independent reference: CRFsuite's example extractor, loop by loop."""
    n = len(tokens)
    out = [{} for _ in range(n)]
    for template in CONLL2000_TEMPLATES:
        name = "|".join(f"{f}[{o}]" for f, o in template)
        for t in range(n):
            values = []
            for field, offset in template:
                p = t + offset
                if not 0 <= p < n:
                    values = None
                    break
                values.append(tokens[p][field])
            if values is not None:
                out[t][name] = "|".join(values)
    if n:
        out[0]["__BOS__"] = True
        out[-1]["__EOS__"] = True
    return out


def test_conll2000_preset_by_hand():
    [got] = TokenFeatures(preset="conll2000").fit_transform([SENTENCE])
    assert got == CONLL_EXPECTED
    # CRFsuite's order of features, too.
    assert list(got[1]) == list(CONLL_EXPECTED[1])


@pytest.mark.parametrize("kind", ["tuple", "dict", "list"])
def test_token_kinds_give_the_same_features(kind):
    if kind == "tuple":
        X = [SENTENCE]
    elif kind == "dict":
        X = [[{"word": w, "pos": p, "chunk": "O"} for w, p in SENTENCE]]
    else:
        X = [[[w, p] for w, p in SENTENCE]]
    assert TokenFeatures(preset="conll2000").transform(X) == [CONLL_EXPECTED]


def test_strings_as_tokens():
    tf = TokenFeatures(window=1, bias=False)
    assert tf.transform([["a", "B"]]) == [
        [{"w[0]": "a", "w[1]": "B"}, {"w[-1]": "a", "w[0]": "B"}]
    ]


def test_mixed_token_kinds_in_one_sequence():
    X = [[("He", "PRP"), {"word": "reckons", "pos": "VBZ"}, ["the", "DT"]]]
    assert TokenFeatures(preset="conll2000").transform(X) == [CONLL_EXPECTED]


def test_short_sequences_and_empty():
    tf = TokenFeatures(preset="conll2000")
    [one] = tf.transform([[("Hi", "UH")]])
    assert one == [{"w[0]": "Hi", "pos[0]": "UH", "__BOS__": True, "__EOS__": True}]
    assert tf.transform([[]]) == [[]]
    assert tf.transform([]) == []


@given(st.lists(st.tuples(st.sampled_from(["a", "B", "c|d", "é"]),
                          st.sampled_from(["NN", "VB", "DT"])), max_size=7))
def test_conll2000_matches_crfsuite_reference(sentence):
    tokens = [{"w": w, "pos": p} for w, p in sentence]
    [got] = TokenFeatures(preset="conll2000").transform([sentence])
    assert got == crfsuite_apply_templates(tokens)


def test_conll2000_matches_reference_on_corpus(shared_data):
    sentences, current = [], []
    with open(shared_data / "conll2000" / "train.txt") as f:
        for line in f:
            cols = line.split()
            if not cols:
                if current:
                    sentences.append(current)
                current = []
                if len(sentences) == 300:
                    break
                continue
            current.append((cols[0], cols[1]))
    got = TokenFeatures(preset="conll2000").transform(sentences)
    expected = [crfsuite_apply_templates([{"w": w, "pos": p} for w, p in s])
                for s in sentences]
    assert got == expected


def test_default_is_bias_and_word():
    assert TokenFeatures().transform([["x"]]) == [[{"bias": 1.0, "w[0]": "x"}]]


def test_window_asymmetric_and_edges():
    tf = TokenFeatures(window=(2, 0), word=False, lower=True, bias=False)
    got = tf.transform([["A", "B", "C"]])[0]
    assert got == [
        {"lower[0]": "a"},
        {"lower[-1]": "a", "lower[0]": "b"},
        {"lower[-2]": "a", "lower[-1]": "b", "lower[0]": "c"},
    ]


def test_affixes_shape_flags():
    tf = TokenFeatures(word=False, bias=False, prefixes=(1, 3), suffixes=(2, 5),
                       shape=True, short_shape=True,
                       flags=("is_title", "is_upper", "is_lower", "is_digit",
                              "has_digit", "has_upper", "has_hyphen", "is_punct"))
    got = tf.transform([["Well-2", "USA", "42", "?!", "ok"]])[0]
    assert got[0] == {"prefix1[0]": "W", "prefix3[0]": "Wel", "suffix2[0]": "-2",
                      "suffix5[0]": "ell-2", "shape[0]": "Xxxx-d",
                      "short_shape[0]": "Xx-d", "is_title[0]": True,
                      "has_digit[0]": True, "has_upper[0]": True,
                      "has_hyphen[0]": True}
    assert got[1] == {"prefix1[0]": "U", "prefix3[0]": "USA", "suffix2[0]": "SA",
                      "shape[0]": "XXX", "short_shape[0]": "X", "is_upper[0]": True,
                      "has_upper[0]": True}
    assert got[2] == {"prefix1[0]": "4", "suffix2[0]": "42", "shape[0]": "dd",
                      "short_shape[0]": "d", "is_digit[0]": True,
                      "has_digit[0]": True}
    assert got[3] == {"prefix1[0]": "?", "suffix2[0]": "?!", "shape[0]": "?!",
                      "short_shape[0]": "?!", "is_punct[0]": True}
    assert got[4] == {"prefix1[0]": "o", "suffix2[0]": "ok", "shape[0]": "xx",
                      "short_shape[0]": "x", "is_lower[0]": True}


def test_spelling_window():
    tf = TokenFeatures(word=False, bias=False, suffixes=(1,), spelling_window=1)
    got = tf.transform([["ab", "cd"]])[0]
    assert got == [{"suffix1[0]": "b", "suffix1[1]": "d"},
                   {"suffix1[-1]": "b", "suffix1[0]": "d"}]


def test_column_features_and_templates():
    tf = TokenFeatures(word=False, bias=False, column_features=("pos",),
                       templates=((("word", -1), ("lower", 0)),
                                  (("pos", 0), ("short_shape", 0)),
                                  (("suffix2", 1),), (("is_title", 0),)))
    got = tf.transform([SENTENCE])[0]
    assert got[0] == {"pos[0]": "PRP", "pos[0]|short_shape[0]": "PRP|Xx",
                      "suffix2[1]": "ns", "is_title[0]": True}
    assert got[1] == {"pos[0]": "VBZ", "w[-1]|lower[0]": "He|reckons",
                      "pos[0]|short_shape[0]": "VBZ|x", "suffix2[1]": "he"}
    assert got[2] == {"pos[0]": "DT", "w[-1]|lower[0]": "reckons|the",
                      "pos[0]|short_shape[0]": "DT|x"}


def test_word_column_for_conllu_style_dicts():
    tf = TokenFeatures(word_column="form", bias=False, column_features=("upos",))
    X = [[{"form": "Hi", "upos": "INTJ"}]]
    assert tf.transform(X) == [[{"w[0]": "Hi", "upos[0]": "INTJ"}]]


def test_pos_preset_and_overrides():
    tf = TokenFeatures(preset="pos")
    got = tf.transform([["The", "U.S.", "ran"]])[0]
    assert got[0] == {
        "bias": 1.0, "lower[0]": "the", "lower[1]": "u.s.",
        "prefix1[0]": "T", "prefix2[0]": "Th", "prefix3[0]": "The",
        "suffix1[0]": "e", "suffix2[0]": "he", "suffix3[0]": "The",
        "short_shape[0]": "Xx", "is_title[0]": True, "w[0]": "The",
        "suffix2[1]": "S.", "suffix3[1]": ".S.", "__BOS__": True,
    }
    assert got[1]["short_shape[0]"] == "X.X." and got[1]["is_upper[0]"] is True
    assert got[1]["suffix4[0]"] == "U.S."
    assert got[2]["__EOS__"] is True and "lower[1]" not in got[2]
    assert got[2]["suffix3[-1]"] == ".S." and "suffix3[1]" not in got[2]
    params = TokenFeatures(preset="pos", suffixes=(), bias=False).resolved_params()
    assert params["suffixes"] == () and params["bias"] is False
    assert params["prefixes"] == (1, 2, 3)
    got = TokenFeatures(preset="pos", suffixes=(), bias=False).transform([["The"]])
    assert not any(k.startswith(("suffix", "bias")) for k in got[0][0])


def test_conll2000_preset_with_an_extra_parameter():
    got = TokenFeatures(preset="conll2000", bias=True).transform([SENTENCE])[0]
    assert got[0] == {"bias": 1.0, **CONLL_EXPECTED[0]}


@pytest.mark.parametrize(
    "X, message",
    [
        ([[("He", "PRP", "B-NP")]], "token 0 of sequence 0: a tuple of 3 values"),
        ([[("He", "PRP"), {"word": "x"}]], r"token 1 of sequence 0: the dict token has no column 'pos'"),
        ([[("He", "PRP")], ["He"]], "token 0 of sequence 1: a string token has only a word"),
        ([[("He", "PRP"), 3]], "token 1 of sequence 0: a int"),
        ([[("He", 3)]], "token 0 of sequence 0: column 'pos' holds a int"),
        ([("He", "PRP")], "sequence 0 is a str|token 0 of sequence 0"),
        (["He reckons"], "sequence 0 is a str"),
        ("He", "got a str"),
        ([[{"word": "x", "pos": "y"}], 5], "sequence 1 is a int, which is not iterable"),
    ],
)
def test_bad_tokens(X, message):
    with pytest.raises(ValueError, match=message):
        TokenFeatures(preset="conll2000").transform(X)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"window": -1}, "window must not be negative"),
        ({"window": (1, 2, 3)}, "window must be"),
        ({"spelling_window": "2"}, "spelling_window must be"),
        ({"prefixes": (0,)}, "prefixes must be a tuple of positive ints"),
        ({"flags": ("is_shiny",)}, "flags must be a tuple of names"),
        ({"templates": ((("w", "a"),),)}, "each template must be"),
        ({"templates": ((),)}, "each template must be"),
        ({"templates": ((("w", 0), ("suffix2", 0)),)}, "conjunctions take string"),
        ({"column_features": "pos"}, "column_features' parameter"),
        ({"columns": ("word", "word")}, "columns must be distinct"),
    ],
)
def test_bad_parameters(params, message):
    with pytest.raises(ValueError, match=message):
        TokenFeatures(**params).fit([["a"]])


def test_bad_preset_name():
    with pytest.raises(ValueError, match="preset"):
        TokenFeatures(preset="chunking").fit()


def test_missing_tuple_column():
    tf = TokenFeatures(columns=("word",), column_features=("pos",))
    with pytest.raises(ValueError, match=r"token 0 of sequence 0: the features need the column\(s\) \['pos'\]"):
        tf.transform([[("a",)]])


def test_stateless_pickle_clone():
    tf = TokenFeatures(preset="pos", window=2)
    assert tf.fit([["a"]]) is tf
    assert pickle.loads(pickle.dumps(tf)).transform([["a", "b"]]) == tf.transform([["a", "b"]])
    assert clone(tf).get_params() == tf.get_params()
    assert TokenFeatures().__sklearn_tags__().requires_fit is False


def test_shapes():
    assert word_shape("McDonald's-2") == "XxXxxxxx'x-d"
    assert short_word_shape("McDonald's-2") == "XxXx'x-d"
    assert word_shape("") == "" and short_word_shape("") == ""
