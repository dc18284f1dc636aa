"""Tests for the dependency-parsing metrics of sksparse_struct.metrics."""

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

from sksparse_struct.metrics import (
    attachment_report,
    exact_match_score,
    exact_match_scorer,
    las_score,
    las_scorer,
    make_attachment_scorer,
    uas_score,
    uas_scorer,
)

# ---------------------------------------------------------------------------
# Hand-computed examples
# ---------------------------------------------------------------------------

# "She ate it ." and "Wow !" with UD heads; the prediction gets the object
# and the first "!" wrong.
SENTENCES = [
    [{"form": "She", "upos": "PRON"}, {"form": "ate", "upos": "VERB"},
     {"form": "it", "upos": "PRON"}, {"form": ".", "upos": "PUNCT"}],
    [{"form": "Wow", "upos": "INTJ"}, {"form": "!", "upos": "PUNCT"}],
]
HEADS_TRUE = [np.array([2, 0, 2, 2]), np.array([0, 1])]
HEADS_PRED = [np.array([2, 0, 1, 2]), np.array([0, 0])]
DEPRELS_TRUE = [["nsubj:pass", "root", "obj", "punct"], ["root", "punct"]]
DEPRELS_PRED = [["nsubj", "root", "obj", "obj"], ["root", "punct"]]


def test_uas_hand_computed():
    # 4 of 6 words right; sentence-averaged would be (3/4 + 1/2) / 2 = 0.625.
    assert uas_score(HEADS_TRUE, HEADS_PRED) == pytest.approx(4 / 6)
    assert uas_score(HEADS_TRUE, HEADS_TRUE) == 1.0
    # Lists and arrays alike.
    assert uas_score([h.tolist() for h in HEADS_TRUE], HEADS_PRED) == pytest.approx(4 / 6)
    assert uas_score([[1]], [[0]]) == 0.0


def test_uas_excluding_punctuation():
    # Without "." and "!": She, ate, it, Wow; "it" is wrong.
    score = uas_score(HEADS_TRUE, HEADS_PRED, sentences=SENTENCES, exclude_punct=True)
    assert score == pytest.approx(3 / 4)
    # Tags given as strings work the same.
    upos = [[t["upos"] for t in s] for s in SENTENCES]
    assert uas_score(HEADS_TRUE, HEADS_PRED, sentences=upos, exclude_punct=True) == score
    # Sentences given but exclude_punct off: everything scored.
    assert uas_score(HEADS_TRUE, HEADS_PRED, sentences=SENTENCES) == pytest.approx(4 / 6)
    # A custom punctuation set: PRON and PUNCT out -> ate, Wow, both right.
    score = uas_score(HEADS_TRUE, HEADS_PRED, sentences=SENTENCES, exclude_punct=True,
                      punct_tags={"PUNCT", "PRON"})
    assert score == 1.0
    # SYM is not punctuation by default.
    sym = [[{"upos": "SYM"}, {"upos": "NUM"}]]
    assert uas_score([[0, 1]], [[2, 1]], sentences=sym, exclude_punct=True) == 0.5
    assert uas_score([[0, 1]], [[2, 1]], sentences=sym, exclude_punct=True,
                     punct_tags=("PUNCT", "SYM")) == 1.0


def test_las_hand_computed_and_universal_part():
    # Head and label right: She (nsubj:pass ~ nsubj), ate, Wow -> 3 of 6.
    assert las_score(HEADS_TRUE, HEADS_PRED, DEPRELS_TRUE, DEPRELS_PRED) == pytest.approx(3 / 6)
    # Full labels: "nsubj:pass" != "nsubj" -> 2 of 6.
    assert las_score(HEADS_TRUE, HEADS_PRED, DEPRELS_TRUE, DEPRELS_PRED,
                     universal_only=False) == pytest.approx(2 / 6)
    # Without punctuation: She, ate, Wow right of She, ate, it, Wow.
    assert las_score(HEADS_TRUE, HEADS_PRED, DEPRELS_TRUE, DEPRELS_PRED, sentences=SENTENCES,
                     exclude_punct=True) == pytest.approx(3 / 4)
    # Only the part before the first colon counts, on both sides.
    assert las_score([[0, 1]], [[0, 1]], [["root", "acl:relcl"]], [["root", "acl:x:y"]]) == 1.0
    assert las_score([[0, 1]], [[0, 1]], [["root", "acl:relcl"]], [["root", "advcl"]]) == 0.5
    # A right label on a wrong head does not count.
    assert las_score([[0, 1]], [[0, 0]], [["root", "obj"]], [["root", "obj"]]) == 0.5


def test_exact_match_hand_computed():
    assert exact_match_score(HEADS_TRUE, HEADS_PRED) == 0.0
    heads_pred = [HEADS_TRUE[0], HEADS_PRED[1]]
    assert exact_match_score(HEADS_TRUE, heads_pred) == 0.5
    # Labelled: sentence 0 has all heads right but "punct" -> "obj".
    assert exact_match_score(HEADS_TRUE, heads_pred, DEPRELS_TRUE, DEPRELS_PRED) == 0.0
    assert exact_match_score(HEADS_TRUE, HEADS_TRUE, DEPRELS_TRUE, DEPRELS_PRED) == 0.5
    # Only the subtype differs: a match on the universal part alone.
    subtype_only = [["nsubj", "root", "obj", "punct"], ["root", "punct"]]
    assert exact_match_score(HEADS_TRUE, HEADS_TRUE, DEPRELS_TRUE, subtype_only) == 1.0
    assert exact_match_score(HEADS_TRUE, HEADS_TRUE, DEPRELS_TRUE, subtype_only,
                             universal_only=False) == 0.5
    # Without punctuation the wrong "!" and the wrong "punct" label are ignored.
    assert exact_match_score(HEADS_TRUE, heads_pred, sentences=SENTENCES,
                             exclude_punct=True) == 1.0
    assert exact_match_score(HEADS_TRUE, HEADS_TRUE, DEPRELS_TRUE, DEPRELS_PRED,
                             sentences=SENTENCES, exclude_punct=True) == 1.0


def test_attachment_report():
    report = attachment_report(HEADS_TRUE, HEADS_PRED, DEPRELS_TRUE, DEPRELS_PRED)
    assert report == {
        "uas": 4 / 6, "unlabelled_exact_match": 0.0, "las": 3 / 6,
        "label_accuracy": 5 / 6, "labelled_exact_match": 0.0,
        "n_sentences": 2, "n_words": 6, "n_excluded": 0, "n_correct_heads": 4,
        "n_exact_unlabelled": 0, "n_correct_labels": 5, "n_correct_labelled": 3,
        "n_exact_labelled": 0,
    }
    report = attachment_report(HEADS_TRUE, HEADS_PRED, sentences=SENTENCES, exclude_punct=True)
    assert report == {
        "uas": 3 / 4, "unlabelled_exact_match": 0.5, "n_sentences": 2, "n_words": 4,
        "n_excluded": 2, "n_correct_heads": 3, "n_exact_unlabelled": 1,
    }
    # Only punctuation: no word to score, the word scores are nan.
    report = attachment_report([[0]], [[0]], sentences=[["PUNCT"]], exclude_punct=True)
    assert np.isnan(report["uas"]) and report["unlabelled_exact_match"] == 1.0


def test_empty_sentences():
    # An empty sentence adds no word and matches exactly.
    assert uas_score([[], [0, 1]], [[], [0, 2]]) == 0.5
    assert exact_match_score([[], [0, 1]], [[], [0, 2]]) == 0.5
    assert exact_match_score([np.array([], dtype=np.int64)], [[]]) == 1.0
    with pytest.raises(ValueError, match="no word to score"):
        uas_score([[]], [[]])
    with pytest.raises(ValueError, match="no word to score"):
        uas_score([[0]], [[0]], sentences=[["PUNCT"]], exclude_punct=True)
    with pytest.raises(ValueError, match="no word to score"):
        las_score([[]], [[]], [[]], [[]])


# ---------------------------------------------------------------------------
# Against an independent computation on random data
# ---------------------------------------------------------------------------

LABELS = ["nsubj", "nsubj:pass", "obj", "root", "punct", "acl:relcl", "acl"]
TAGS = ["NOUN", "VERB", "PUNCT", "SYM", "ADJ"]


@st.composite
def corpora(draw):
    n_sent = draw(st.integers(1, 5))
    data = []
    for _ in range(n_sent):
        n = draw(st.integers(0, 6))
        heads = st.lists(st.integers(0, n), min_size=n, max_size=n)
        labels = st.lists(st.sampled_from(LABELS), min_size=n, max_size=n)
        tags = st.lists(st.sampled_from(TAGS), min_size=n, max_size=n)
        data.append((draw(heads), draw(heads), draw(labels), draw(labels), draw(tags)))
    return data


def brute(data, exclude, universal):
    """Word-by-word counts, written independently of the library."""
    words = heads_ok = both_ok = labels_ok = exact_u = exact_l = 0
    for h_true, h_pred, d_true, d_pred, tags in data:
        all_u = all_l = True
        for k in range(len(h_true)):
            if tags[k] in exclude:
                continue
            lt, lp = d_true[k], d_pred[k]
            if universal:
                lt, lp = lt.split(":")[0], lp.split(":")[0]
            words += 1
            heads_ok += h_true[k] == h_pred[k]
            labels_ok += lt == lp
            both_ok += h_true[k] == h_pred[k] and lt == lp
            all_u &= h_true[k] == h_pred[k]
            all_l &= h_true[k] == h_pred[k] and lt == lp
        exact_u += all_u
        exact_l += all_l
    return words, heads_ok, both_ok, labels_ok, exact_u, exact_l


@settings(max_examples=150, deadline=None)
@given(corpora(), st.sampled_from([None, frozenset({"PUNCT"}), frozenset({"PUNCT", "SYM"})]),
       st.booleans(), st.booleans())
def test_against_brute_force(data, punct_tags, universal, as_arrays):
    exclude = punct_tags is not None
    h_true = [d[0] for d in data]
    h_pred = [d[1] for d in data]
    if as_arrays:
        h_true = [np.array(h, dtype=np.int64) for h in h_true]
        h_pred = [np.array(h, dtype=np.int32) for h in h_pred]
    d_true = [d[2] for d in data]
    d_pred = [d[3] for d in data]
    sentences = [[{"form": "w", "upos": t} for t in d[4]] for d in data]
    kwargs = {"sentences": sentences, "exclude_punct": exclude,
              "punct_tags": None if punct_tags == {"PUNCT"} else punct_tags}
    words, heads_ok, both_ok, labels_ok, exact_u, exact_l = brute(
        data, punct_tags or (), universal)
    n_sent = len(data)

    assert exact_match_score(h_true, h_pred, **kwargs) == exact_u / n_sent
    assert exact_match_score(h_true, h_pred, d_true, d_pred, universal_only=universal,
                             **kwargs) == exact_l / n_sent
    report = attachment_report(h_true, h_pred, d_true, d_pred, universal_only=universal,
                               **kwargs)
    assert (report["n_words"], report["n_correct_heads"], report["n_correct_labelled"],
            report["n_correct_labels"], report["n_exact_unlabelled"],
            report["n_exact_labelled"]) == (words, heads_ok, both_ok, labels_ok, exact_u,
                                            exact_l)
    assert report["n_words"] + report["n_excluded"] == sum(len(d[0]) for d in data)
    if words == 0:
        with pytest.raises(ValueError, match="no word to score"):
            uas_score(h_true, h_pred, **kwargs)
        return
    uas = uas_score(h_true, h_pred, **kwargs)
    las = las_score(h_true, h_pred, d_true, d_pred, universal_only=universal, **kwargs)
    assert uas == heads_ok / words
    assert las == both_ok / words
    assert 0.0 <= las <= uas <= 1.0
    assert uas_score(h_true, h_true, **kwargs) == 1.0
    assert las_score(h_true, h_true, d_true, d_true, **kwargs) == 1.0


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------


def test_shape_errors():
    with pytest.raises(ValueError, match="same number of sentences; got 2 and 1"):
        uas_score([[0], [0]], [[0]])
    with pytest.raises(ValueError,
                       match="sentence 1 has 2 words in heads_true but 3 in heads_pred"):
        uas_score([[0], [0, 1]], [[0], [0, 1, 1]])
    with pytest.raises(ValueError, match="heads_true holds no sentence"):
        uas_score([], [])
    with pytest.raises(ValueError, match="heads_true holds no sentence"):
        exact_match_score([], [])
    # A single sentence not wrapped in a list.
    with pytest.raises(ValueError, match="list of head sequences.*element 0 is the int 2"):
        uas_score([2, 0], [[2, 0]])
    with pytest.raises(ValueError, match="heads_pred must be a list of head sequences"):
        uas_score([[0]], "0")
    with pytest.raises(ValueError, match=r"heads_pred\[0\] must be a flat sequence"):
        uas_score([[0, 1]], [[[0], [1]]])


def test_head_value_errors():
    with pytest.raises(ValueError, match=r"heads_pred\[1\]\[2\] \(word 3 of sentence 1\) is 4, "
                                         r"outside \[0, 3\]"):
        uas_score([[0], [0, 1, 1]], [[0], [0, 1, 4]])
    with pytest.raises(ValueError, match=r"heads_true\[0\]\[0\] \(word 1 of sentence 0\) is -1"):
        uas_score([[-1, 0]], [[0, 1]])
    with pytest.raises(ValueError, match=r"must be integers.*heads_pred\[0\]\[1\] \(word 2 of "
                                         r"sentence 0\) is the float 1.5"):
        uas_score([[0, 1]], [[0, 1.5]])
    with pytest.raises(ValueError, match=r"must be integers.*heads_pred\[0\] is an array of "
                                         "dtype float64"):
        uas_score([[0, 1]], [np.array([0.0, 1.0])])
    with pytest.raises(ValueError, match=r"heads_true\[1\]\[0\] \(word 1 of sentence 1\) is "
                                         r"the float64"):
        uas_score([[0], [np.float64(0.0)]], [[0], [0]])
    with pytest.raises(ValueError, match=r"must be integers.*\[0\]\[1\].*is the str '1'"):
        uas_score([[0, 1]], [[0, "1"]])
    with pytest.raises(ValueError, match=r"must be integers.*\[0\]\[0\].*is the bool False"):
        uas_score([[0, 1]], [[False, True]])


def test_deprel_errors():
    with pytest.raises(ValueError, match="sentence 0 has 2 words in the heads but 1 labels "
                                         "in deprels_pred"):
        las_score([[0, 1]], [[0, 1]], [["root", "obj"]], [["root"]])
    with pytest.raises(ValueError, match="deprels_true must hold one label sequence per "
                                         r"sentence of the heads \(1\); got 2"):
        las_score([[0]], [[0]], [["root"], ["root"]], [["root"]])
    with pytest.raises(ValueError, match=r"deprels_pred\[0\]\[1\] \(word 2 of sentence 0\) is "
                                         "the int 3"):
        las_score([[0, 1]], [[0, 1]], [["root", "obj"]], [["root", 3]])
    with pytest.raises(ValueError, match="deprels_true was given without deprels_pred"):
        exact_match_score([[0]], [[0]], [["root"]])
    with pytest.raises(ValueError, match="deprels_pred was given without deprels_true"):
        attachment_report([[0]], [[0]], deprels_pred=[["root"]])


def test_punctuation_option_errors():
    with pytest.raises(ValueError, match="exclude_punct=True needs the sentences"):
        uas_score([[0]], [[0]], exclude_punct=True)
    with pytest.raises(ValueError, match="punct_tags is only used with exclude_punct=True"):
        uas_score([[0]], [[0]], punct_tags={"PUNCT"})
    with pytest.raises(ValueError, match="punct_tags must be a collection.*the string 'PUNCT'"):
        uas_score([[0]], [[0]], sentences=[["X"]], exclude_punct=True, punct_tags="PUNCT")
    with pytest.raises(ValueError, match="punct_tags must hold strings"):
        uas_score([[0]], [[0]], sentences=[["X"]], exclude_punct=True, punct_tags=[1])
    with pytest.raises(ValueError, match="sentence 0 has 2 words in the heads but 1 tokens"):
        uas_score([[0, 1]], [[0, 1]], sentences=[["X"]], exclude_punct=True)
    # Checked even when punctuation is kept.
    with pytest.raises(ValueError, match="sentence 0 has 2 words in the heads but 1 tokens"):
        uas_score([[0, 1]], [[0, 1]], sentences=[["X"]])
    with pytest.raises(ValueError, match="sentences must hold one sentence per head sequence"):
        uas_score([[0]], [[0]], sentences=[["X"], ["Y"]], exclude_punct=True)
    with pytest.raises(ValueError, match="token 1 of sentence 0 is {'form': '!'}"):
        uas_score([[0, 1]], [[0, 1]], sentences=[[{"upos": "X"}, {"form": "!"}]],
                  exclude_punct=True)


# ---------------------------------------------------------------------------
# Scorers in cross_val_score and GridSearchCV
# ---------------------------------------------------------------------------


class AttachToNeighbour(BaseEstimator):
    """Each word hangs from the word ``offset`` to its left (right if negative; 0 if none).

    With ``offset="learned"`` it learns, per UPOS tag, the most frequent
    relative head position (and relation) in training.
    """

    def __init__(self, offset=1):
        self.offset = offset

    def fit(self, X, y):
        labelled = isinstance(y[0], tuple)
        self.rules_ = {}
        if self.offset == "learned":
            votes = {}
            for tokens, target in zip(X, y):
                heads, deprels = target if labelled else (target, ["dep"] * len(target))
                for k, (token, head, rel) in enumerate(zip(tokens, heads, deprels)):
                    rel_pos = 0 if head == 0 else head - (k + 1)
                    key = (rel_pos, rel)
                    votes.setdefault(token["upos"], {}).setdefault(key, 0)
                    votes[token["upos"]][key] += 1
            self.rules_ = {tag: max(v, key=v.get) for tag, v in votes.items()}
        return self

    def _parse(self, tokens):
        n = len(tokens)
        heads, deprels = np.zeros(n, dtype=np.int64), []
        for k, token in enumerate(tokens):
            if self.offset == "learned":
                rel_pos, rel = self.rules_.get(token["upos"], (0, "root"))
            else:
                rel_pos, rel = -self.offset, "dep"
            head = 0 if rel_pos == 0 else k + 1 + rel_pos
            heads[k] = head if 1 <= head <= n and head != k + 1 else 0
            deprels.append(rel)
        return heads, deprels

    def predict(self, X, return_deprel=False):
        parses = [self._parse(tokens) for tokens in X]
        heads = [p[0] for p in parses]
        if return_deprel:
            return heads, [p[1] for p in parses]
        return heads

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        return tags


def toy_treebank(n=30):
    """Sentences 'DET NOUN VERB DET NOUN PUNCT' with a fixed structure, some shortened."""
    rng = np.random.default_rng(0)
    X, heads, deprels = [], [], []
    tags = ["DET", "NOUN", "VERB", "ADJ", "PROPN", "PUNCT"]
    h = [2, 3, 0, 5, 3, 3]
    r = ["det", "nsubj", "root", "amod", "obj", "punct"]
    for _ in range(n):
        cut = 3 if rng.random() < 0.3 else 6  # "DET NOUN VERB" alone
        X.append([{"form": t.lower(), "upos": t} for t in tags[:cut]])
        heads.append(np.array(h[:cut]))
        deprels.append(r[:cut])
    return X, heads, deprels


def manual_cv(estimator, X, y, metric, cv):
    scores = []
    for train, test in cv.split(X):
        est = estimator.fit([X[i] for i in train], [y[i] for i in train])
        scores.append(metric([X[i] for i in test], [y[i] for i in test], est))
    return np.array(scores)


def test_uas_scorer_in_cross_val_score():
    X, heads, _ = toy_treebank()
    cv = KFold(3)
    for offset in (1, -1, "learned"):
        scores = cross_val_score(AttachToNeighbour(offset), X, heads, scoring=uas_scorer, cv=cv)
        expected = manual_cv(AttachToNeighbour(offset), X, heads,
                             lambda Xt, yt, est: uas_score(yt, est.predict(Xt)), cv)
        np.testing.assert_array_equal(scores, expected)
    assert scores.tolist() == [1.0, 1.0, 1.0]
    assert 0.0 < cross_val_score(AttachToNeighbour(-1), X, heads, scoring=uas_scorer,
                                 cv=cv).min() < 1.0
    # Punctuation excluded: the scorer hands X over as the sentences.
    scorer = make_attachment_scorer("uas", exclude_punct=True)
    scores = cross_val_score(AttachToNeighbour(-1), X, heads, scoring=scorer, cv=cv)
    expected = manual_cv(AttachToNeighbour(-1), X, heads, lambda Xt, yt, est: uas_score(
        yt, est.predict(Xt), sentences=Xt, exclude_punct=True), cv)
    np.testing.assert_array_equal(scores, expected)
    assert not np.array_equal(
        scores, cross_val_score(AttachToNeighbour(-1), X, heads, scoring=uas_scorer, cv=cv))


def test_las_scorer_with_labelled_targets():
    X, heads, deprels = toy_treebank()
    y = list(zip(heads, deprels))
    cv = KFold(3)
    scores = cross_val_score(AttachToNeighbour("learned"), X, y, scoring=las_scorer, cv=cv)
    assert scores.tolist() == [1.0, 1.0, 1.0]
    scores = cross_val_score(AttachToNeighbour(-1), X, y, scoring=las_scorer, cv=cv)
    expected = manual_cv(AttachToNeighbour(-1), X, y, lambda Xt, yt, est: las_score(
        [t[0] for t in yt], est.predict(Xt), [t[1] for t in yt],
        est.predict(Xt, return_deprel=True)[1]), cv)
    np.testing.assert_array_equal(scores, expected)
    assert scores.tolist() == [0.0, 0.0, 0.0]  # every relation is "dep"
    # The unlabelled scorers read the heads out of the pairs.
    for scorer, metric in ((uas_scorer, uas_score), (exact_match_scorer, exact_match_score)):
        scores = cross_val_score(AttachToNeighbour(-1), X, y, scoring=scorer, cv=cv)
        expected = manual_cv(AttachToNeighbour(-1), X, y, lambda Xt, yt, est: metric(
            [t[0] for t in yt], est.predict(Xt)), cv)
        np.testing.assert_array_equal(scores, expected)
    # Labelled exact match, punctuation excluded, full labels.
    scorer = make_attachment_scorer("labelled_exact_match", exclude_punct=True,
                                    universal_only=False)
    est = AttachToNeighbour("learned").fit(X, y)
    assert scorer(est, X, y) == 1.0
    assert pickle.loads(pickle.dumps(scorer))(est, X, y) == 1.0


def test_scorers_in_grid_search():
    X, heads, deprels = toy_treebank()
    search = GridSearchCV(AttachToNeighbour(), {"offset": [1, -1, "learned"]},
                          scoring=uas_scorer, cv=KFold(3)).fit(X, heads)
    assert search.best_params_ == {"offset": "learned"} and search.best_score_ == 1.0
    expected = manual_cv(AttachToNeighbour(-1), X, heads,
                         lambda Xt, yt, est: uas_score(yt, est.predict(Xt)), KFold(3))
    np.testing.assert_array_equal(
        [search.cv_results_[f"split{k}_test_score"][1] for k in range(3)], expected)
    # Several scorers, labelled targets, refit on LAS.
    y = list(zip(heads, deprels))
    search = GridSearchCV(
        AttachToNeighbour(), {"offset": [1, -1, "learned"]}, cv=KFold(3), refit="las",
        scoring={"uas": uas_scorer, "las": las_scorer, "em": exact_match_scorer,
                 "uas_nopunct": make_attachment_scorer("uas", exclude_punct=True)},
    ).fit(X, y)
    assert search.best_params_ == {"offset": "learned"}
    assert search.cv_results_["mean_test_las"].tolist()[2] == 1.0
    assert search.cv_results_["mean_test_em"].tolist()[2] == 1.0
    assert search.cv_results_["mean_test_las"].tolist()[:2] == [0.0, 0.0]


def test_scorer_errors_and_repr():
    X, heads, deprels = toy_treebank(6)
    est = AttachToNeighbour(1).fit(X, heads)
    with pytest.raises(ValueError, match=r"y must be a list of \(heads, deprels\) pairs"):
        las_scorer(est, X, heads)
    mixed = [(heads[0], deprels[0])] + heads[1:]
    with pytest.raises(ValueError, match="mixes"):
        uas_scorer(est, X, mixed)

    class HeadsOnly(AttachToNeighbour):
        def predict(self, X, return_deprel=False):
            return super().predict(X)

    with pytest.raises(ValueError, match=r"must return a tuple \(heads, deprels\)"):
        las_scorer(HeadsOnly(1).fit(X, heads), X, list(zip(heads, deprels)))
    with pytest.raises(ValueError, match="metric must be"):
        make_attachment_scorer("lass")
    with pytest.raises(ValueError, match="punct_tags is only used"):
        make_attachment_scorer("uas", punct_tags={"PUNCT"})
    with pytest.raises(ValueError, match="punct_tags must be a collection"):
        make_attachment_scorer("uas", exclude_punct=True, punct_tags="PUNCT")
    with pytest.raises(ValueError, match="sample_weight"):
        uas_scorer(est, X, heads, sample_weight=np.ones(len(X)))
    assert repr(uas_scorer) == "make_attachment_scorer('uas')"
    assert repr(make_attachment_scorer("las", exclude_punct=True, punct_tags={"SYM", "PUNCT"},
                                       universal_only=False)) == (
        "make_attachment_scorer('las', exclude_punct=True, punct_tags=['PUNCT', 'SYM'], "
        "universal_only=False)")
