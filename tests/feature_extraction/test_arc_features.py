"""ArcFeatures: token encoding, hashed arc feature templates, errors."""

import pickle

import numpy as np
import pytest

from sksparse_struct.feature_extraction import ARC_PRESETS, ArcFeatures, EncodedSentence
from sksparse_struct.feature_extraction import _arc_features_fast as fast


def _sentence(n, seed=0):
    rng = np.random.RandomState(seed)
    tags = ["NOUN", "VERB", "ADP", "DET", "PUNCT", "CCONJ", "AUX"]
    return [
        {"form": f"W{rng.randint(6)}", "lemma": f"w{rng.randint(6)}",
         "upos": tags[rng.randint(len(tags))], "xpos": f"X{rng.randint(4)}",
         "feats": "_" if rng.rand() < 0.5 else "Number=Sing"}
        for _ in range(n)
    ]


def test_encoding_layout_and_flags():
    sent = [{"form": "Dogs", "upos": "NOUN"}, {"form": "do", "upos": "AUX"},
            {"form": "and", "upos": "CCONJ"}, {"form": ".", "upos": "PUNCT"}]
    enc = ArcFeatures().fit_transform([sent])[0]
    assert isinstance(enc, EncodedSentence) and len(enc) == 4
    assert enc.tokens.shape == (5, fast.N_COLUMNS) and enc.tokens.dtype == np.int64
    assert enc.tokens[:, fast.FLAGS].tolist() == [
        0, 0, fast.VERB_FLAG, fast.COORD_FLAG, fast.PUNCT_FLAG]
    # Hashes are 32-bit, non-negative.
    assert enc.tokens.min() >= 0 and enc.tokens.max() < 2**32


def test_missing_columns_fall_back():
    full = [{"form": "Dogs", "lemma": "dogs", "upos": "NOUN", "xpos": "NOUN", "feats": "_"}]
    missing = [{"form": "Dogs", "lemma": "_", "upos": "NOUN", "xpos": "_"}]
    pairs = [("Dogs", "NOUN")]
    a, b, c = (ArcFeatures().transform([s])[0].tokens for s in (full, missing, pairs))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    # The form is lower-cased.
    lower = ArcFeatures().transform([[("dogs", "NOUN")]])[0].tokens
    np.testing.assert_array_equal(a, lower)


def test_hashes_are_stable_across_processes():
    # Fixed values: a change of the hashing silently invalidates fitted
    # models, so it must be deliberate (crc32 is independent of PYTHONHASHSEED).
    enc = ArcFeatures(preset="mst").transform([[("Dogs", "NOUN"), ("bark", "VERB")]])[0]
    idx = ArcFeatures(preset="mst").arc_feature_indices(enc, 2, 1)
    assert idx.shape == (48,)
    again = pickle.loads(pickle.dumps(enc))
    np.testing.assert_array_equal(
        ArcFeatures(preset="mst").arc_feature_indices(again, 2, 1), idx)
    assert int(enc.tokens[1, fast.FORM]) == 1131911154


@pytest.mark.parametrize("n", [2, 5, 12])
def test_mst_feature_count(n):
    sent = _sentence(n)
    enc = ArcFeatures(preset="mst").transform([sent])[0]
    af = ArcFeatures(preset="mst")
    for h in range(n + 1):
        for m in range(1, n + 1):
            if h != m:
                # 48 fixed features plus 2 per distinct tag in between.
                between = {sent[b - 1]["upos"] for b in range(min(h, m) + 1, max(h, m))}
                assert af.arc_feature_indices(enc, h, m).shape[0] == 48 + 2 * len(between)


def test_rich_extends_mst_and_counts_between_words():
    n = 9
    sent = _sentence(n, seed=3)
    mst = ArcFeatures(preset="mst")
    rich = ArcFeatures(preset="rich")
    em = mst.transform([sent])[0]
    er = rich.transform([sent])[0]
    for h, m in [(0, 5), (2, 9), (9, 1), (4, 5)]:
        a = mst.arc_feature_indices(em, h, m)
        b = rich.arc_feature_indices(er, h, m)
        assert b.shape[0] >= a.shape[0] + 45
        # The 48 template features of "mst" come first in "rich" too.
        np.testing.assert_array_equal(np.sort(a[:48]), np.sort(b[:48]))


def test_features_only_see_their_window():
    # MST templates read the head and modifier, their neighbours and the words
    # in between: a word further away does not change the arc's features.
    sent = _sentence(8, seed=1)
    other = [dict(t) for t in sent]
    other[7] = {"form": "zzz", "lemma": "zzz", "upos": "INTJ", "xpos": "UH", "feats": "_"}
    for preset in ["mst", "rich"]:
        af = ArcFeatures(preset=preset)
        e1, e2 = af.transform([sent, other])
        np.testing.assert_array_equal(af.arc_feature_indices(e1, 2, 4),
                                      af.arc_feature_indices(e2, 2, 4))
        assert not np.array_equal(af.arc_feature_indices(e1, 2, 7),
                                  af.arc_feature_indices(e2, 2, 7))


def test_direction_matters():
    enc = ArcFeatures().transform([[("a", "X"), ("a", "X")]])[0]
    af = ArcFeatures()
    assert not np.array_equal(np.sort(af.arc_feature_indices(enc, 1, 2)),
                              np.sort(af.arc_feature_indices(enc, 2, 1)))


@pytest.mark.parametrize("preset, per_tag", [("mst", 2), ("rich", 5)])
def test_between_tags_fire_once_however_often_they_occur(preset, per_tag):
    # Binary features: two DETs in between give the DET features once, and
    # the plain in-between POS feature (hp, bp, mp) is the one a single DET
    # in between gives.
    af = ArcFeatures(preset=preset)
    def sent(*tags):
        return [{"form": f"w{i}", "upos": upos, "xpos": upos[:2]}
                for i, upos in enumerate(("NOUN",) + tags + ("VERB",))]

    one, two, mixed = af.transform([sent("DET"), sent("DET", "DET"), sent("DET", "ADJ")])
    idx_one = af.arc_feature_indices(one, 1, 3)
    idx_two = af.arc_feature_indices(two, 1, 4)
    idx_mixed = af.arc_feature_indices(mixed, 1, 4)
    assert idx_mixed.shape[0] - idx_two.shape[0] == per_tag
    assert np.unique(idx_two).shape[0] == idx_two.shape[0]
    n_templates = fast.N_TEMPLATES if preset == "rich" else fast.N_MST_TEMPLATES
    first_between = sum(bin(int(f)).count("1") for f in fast.TEMPLATE_FLAGS[:n_templates])
    assert idx_one[first_between] == idx_two[first_between]


def test_indices_in_range():
    af = ArcFeatures(n_features=2**10)
    enc = af.transform([_sentence(15, seed=4)])[0]
    for h, m in [(0, 1), (15, 1), (3, 12)]:
        idx = af.arc_feature_indices(enc, h, m)
        assert idx.min() >= 0 and idx.max() < 2**10


def test_parser_scores_are_sums_of_feature_weights():
    from sksparse_struct import SparseMAPParser

    X = [_sentence(6, seed=s) for s in range(6)]
    y = [[0, 1, 2, 3, 4, 5] for _ in X]
    af = ArcFeatures(n_features=2**12)
    parser = SparseMAPParser("hinge", features=af, max_iter=2, random_state=0).fit(X, y)
    enc = af.transform(X[:2])
    for e, S in zip(enc, parser.decision_function(X[:2])):
        for h in range(7):
            for m in range(1, 7):
                if h != m:
                    expected = parser.coef_[af.arc_feature_indices(e, h, m)].sum()
                    assert S[h, m] == pytest.approx(expected, rel=1e-12, abs=1e-12)
        assert np.all(np.isneginf(S[:, 0])) and np.all(np.isneginf(np.diag(S)))


def test_stateless_and_pickles():
    af = ArcFeatures(preset="mst", n_features=2**16)
    X = [_sentence(3)]
    a = af.transform(X)[0].tokens
    b = pickle.loads(pickle.dumps(af)).fit(X).transform(X)[0].tokens
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kwargs, match", [
    ({"preset": "turbo"}, "preset must be one of"),
    ({"n_features": 1000}, "power of two"),
    ({"n_features": 8}, "power of two"),
    ({"n_features": 2.0**20}, "power of two"),
])
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ArcFeatures(**kwargs).fit([[("a", "X")]])


@pytest.mark.parametrize("X, match", [
    ([[]], "sentence 0 is empty"),
    ([[("a", "X")], "abc"], "sentence 1 must be a list of tokens"),
    ([[("a", "X"), 3]], "token 1 of sentence 0"),
    ([[{"lemma": "a"}]], "no string 'form'"),
    ([[{"form": "a", "upos": 3}]], "'upos' must be a string"),
    ("not a list", "X must be a list of sentences"),
])
def test_bad_input(X, match):
    with pytest.raises(ValueError, match=match):
        ArcFeatures().transform(X)


def test_encoding_twice_is_an_error():
    enc = ArcFeatures().transform([[("a", "X")]])
    with pytest.raises(ValueError, match="already encoded"):
        ArcFeatures().transform(enc)


def test_arc_feature_indices_checks_the_arc():
    af = ArcFeatures()
    enc = af.transform([[("a", "X"), ("b", "Y")]])[0]
    for h, m in [(1, 1), (0, 0), (3, 1), (0, 3)]:
        with pytest.raises(ValueError, match="no arc"):
            af.arc_feature_indices(enc, h, m)
    # Non-integer indices were truncated silently (1.5 -> word 1).
    for h, m, bad in [(1.5, 2, "head"), (0, 2.0, "modifier"), (True, 2, "head"), ("1", 2, "head")]:
        with pytest.raises(ValueError, match=rf"^{bad} must be an integer word index, got "):
            af.arc_feature_indices(enc, h, m)
    np.testing.assert_array_equal(
        af.arc_feature_indices(enc, np.int64(1), np.int32(2)), af.arc_feature_indices(enc, 1, 2)
    )


def test_feats_as_dict_equal_the_conllu_string():
    as_string = [{"form": "Dogs", "upos": "NOUN", "feats": "Number=Plur|Person=3"}]
    as_dict = [{"form": "Dogs", "upos": "NOUN", "feats": {"Person": "3", "Number": "Plur"}}]
    empty = [{"form": "Dogs", "upos": "NOUN", "feats": {}}]
    missing = [{"form": "Dogs", "upos": "NOUN"}]
    af = ArcFeatures()
    np.testing.assert_array_equal(af.transform([as_string])[0].tokens,
                                  af.transform([as_dict])[0].tokens)
    np.testing.assert_array_equal(af.transform([empty])[0].tokens,
                                  af.transform([missing])[0].tokens)


def test_feats_order_does_not_matter():
    # CoNLL-U sorts FEATS ignoring case ("Number" before "NumForm"), Python's
    # sort does not: both orders, and the dict, are one value.
    af = ArcFeatures()
    variants = ["Number=Ptan|NumForm=Combi|NumType=Card",
                "NumForm=Combi|NumType=Card|Number=Ptan",
                "NumType=Card|Number=Ptan|NumForm=Combi",
                {"Number": "Ptan", "NumForm": "Combi", "NumType": "Card"},
                {"NumType": "Card", "NumForm": "Combi", "Number": "Ptan"}]
    rows = [af.transform([[{"form": "2nd", "upos": "NUM", "feats": f}]])[0].tokens[1]
            for f in variants]
    for row in rows[1:]:
        np.testing.assert_array_equal(row, rows[0])
    # Other values stay apart; a string that is not Name=Value items is kept as is.
    other = [af.transform([[{"form": "2nd", "upos": "NUM", "feats": f}]])[0].tokens[1]
             for f in ["Number=Sing|NumForm=Combi|NumType=Card", "NumType=Card", "Card", "_"]]
    assert len({row[fast.FEATS] for row in rows[:1] + other}) == 5


def test_sample_encodes_alike_from_dicts_and_from_strings():
    # load_ewt_sample gives FEATS as dicts, read_conllu as the file's strings.
    import importlib.resources

    from sksparse_struct.datasets import load_ewt_sample, read_conllu

    af = ArcFeatures(preset="rich", n_features=2**16)
    for subset in ("train", "test"):
        as_dicts = load_ewt_sample(subset)
        name = f"en_ewt-ud-{subset}-sample.conllu.gz"
        with (importlib.resources.files("sksparse_struct.datasets") / "data" / name).open(
                "rb") as f:
            as_strings, _ = read_conllu(f)
        assert any(isinstance(t["feats"], dict) and t["feats"] for s in as_dicts for t in s)
        assert all(isinstance(t["feats"], str) for s in as_strings for t in s)
        # Some FEATS are written in an order that a plain sort does not give.
        assert any(t["feats"] != "|".join(sorted(t["feats"].split("|")))
                   for s in as_strings for t in s)
        for a, b in zip(af.transform(as_dicts), af.transform(as_strings)):
            np.testing.assert_array_equal(a.tokens, b.tokens)


# --------------------------------------------------------------------------
# ARC_PRESETS: the preset names, in the order of the kernels' codes


def test_arc_presets_are_in_the_order_of_the_kernel_codes():
    assert ARC_PRESETS == ("mst", "rich")
    assert ARC_PRESETS.index("mst") == fast.MST == 0
    assert ARC_PRESETS.index("rich") == fast.RICH == 1


def test_arc_presets_are_the_accepted_presets():
    sent = [{"form": "Dogs", "upos": "NOUN"}, {"form": "bark", "upos": "VERB"}]
    for preset in ARC_PRESETS:
        enc = ArcFeatures(preset=preset).fit_transform([sent])[0]
        assert enc.preset == preset
    with pytest.raises(ValueError, match=r"^preset must be one of \['mst', 'rich'\], "
                       r"got 'turbo'\.$"):
        ArcFeatures(preset="turbo").fit([sent])
    # A preset's code selects its templates in the kernels.
    n_mst = ArcFeatures(preset="mst").arc_feature_indices(enc, 2, 1).shape[0]
    out = np.empty(fast.max_arc_features(2), dtype=np.int64)
    k = fast.arc_features(enc.tokens, 0, 2, 2, 1, ARC_PRESETS.index("mst"), 2**22 - 1, out)
    assert k == n_mst < ArcFeatures(preset="rich").arc_feature_indices(enc, 2, 1).shape[0]
