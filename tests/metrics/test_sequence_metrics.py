"""Tests for sksparse_struct.metrics: conlleval chunk scores, accuracies, scorers."""

import pickle
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.base import BaseEstimator
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score

from sksparse_struct.datasets import read_conll
from sksparse_struct.metrics import (
    chunk_classification_report,
    chunk_f1_score,
    chunk_f1_scorer,
    chunk_precision_recall_fscore_support,
    flat_accuracy_score,
    flat_accuracy_scorer,
    flat_classification_report,
    sequence_accuracy_score,
    sequence_accuracy_scorer,
)

# ---------------------------------------------------------------------------
# An independent reference: chunks as explicit spans, and their encodings
# ---------------------------------------------------------------------------

TYPES = ("NP", "VP", "PP")


def encode(segments, scheme):
    """Labels of a sentence given as segments: None (an O token) or (type, length)."""
    labels = []
    for k, seg in enumerate(segments):
        if seg is None:
            labels.append("O")
            continue
        chunk_type, length = seg
        prev = segments[k - 1] if k else None
        nxt = segments[k + 1] if k + 1 < len(segments) else None
        # IOB1 / IOE1 mark a boundary only between two adjacent chunks of a type.
        same_before = prev is not None and prev[0] == chunk_type
        same_after = nxt is not None and nxt[0] == chunk_type
        if scheme == "iob2":
            tags = ["B"] + ["I"] * (length - 1)
        elif scheme == "iob1":
            tags = ["B" if same_before else "I"] + ["I"] * (length - 1)
        elif scheme == "ioe2":
            tags = ["I"] * (length - 1) + ["E"]
        elif scheme == "ioe1":
            tags = ["I"] * (length - 1) + ["E" if same_after else "I"]
        elif scheme == "iobes":
            tags = ["S"] if length == 1 else ["B"] + ["I"] * (length - 2) + ["E"]
        labels += [f"{tag}-{chunk_type}" for tag in tags]
    return labels


def spans(segments, sentence):
    """The chunks of a segmented sentence as (sentence, first, last, type)."""
    out, pos = set(), 0
    for seg in segments:
        if seg is None:
            pos += 1
        else:
            out.add((sentence, pos, pos + seg[1] - 1, seg[0]))
            pos += seg[1]
    return out


def reference_scores(true_spans, pred_spans):
    n_correct = len(true_spans & pred_spans)
    p = n_correct / len(pred_spans) if pred_spans else 0.0
    r = n_correct / len(true_spans) if true_spans else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


segment = st.one_of(st.none(), st.tuples(st.sampled_from(TYPES), st.integers(1, 4)))
corpus = st.lists(st.lists(segment, max_size=8), min_size=1, max_size=5)
SCHEMES = ("iob2", "iob1", "ioe1", "ioe2", "iobes")


def shorten(segments, n_tokens):
    """Cut a segmentation to n_tokens tokens, padding with O tokens."""
    out, pos = [], 0
    for seg in segments:
        length = 1 if seg is None else seg[1]
        if pos + length > n_tokens:
            break
        out.append(seg)
        pos += length
    return out + [None] * (n_tokens - pos)


@given(corpus, corpus, st.sampled_from(SCHEMES), st.sampled_from(SCHEMES))
def test_chunk_scores_match_span_sets_in_every_encoding(true_segs, pred_segs, s_true, s_pred):
    # Predictions are cut/padded to the length of each true sentence.
    pred_segs = (pred_segs * len(true_segs))[: len(true_segs)]
    lengths = [len(encode(segs, "iob2")) for segs in true_segs]
    pred_segs = [shorten(segs, n) for segs, n in zip(pred_segs, lengths)]
    y_true = [encode(segs, s_true) for segs in true_segs]
    y_pred = [encode(segs, s_pred) for segs in pred_segs]
    true_spans = set().union(*(spans(s, i) for i, s in enumerate(true_segs)))
    pred_spans = set().union(*(spans(s, i) for i, s in enumerate(pred_segs)))
    p, r, f, support = chunk_precision_recall_fscore_support(y_true, y_pred, average="micro")
    assert support is None
    np.testing.assert_allclose((p, r, f), reference_scores(true_spans, pred_spans), rtol=1e-12)
    assert chunk_f1_score(y_true, y_pred) == pytest.approx(f, rel=1e-12)
    # Per type, against the span sets restricted to the type.
    types = sorted({s[3] for s in true_spans | pred_spans})
    p, r, f, support = chunk_precision_recall_fscore_support(y_true, y_pred)
    for k, chunk_type in enumerate(types):
        t = {s for s in true_spans if s[3] == chunk_type}
        q = {s for s in pred_spans if s[3] == chunk_type}
        np.testing.assert_allclose((p[k], r[k], f[k]), reference_scores(t, q), rtol=1e-12)
        assert support[k] == len(t)
    assert len(p) == len(types)


@given(st.lists(st.lists(st.sampled_from(
    ["O", "B-NP", "I-NP", "E-NP", "S-NP", "B-VP", "I-VP", "E-VP", "S-VP"]),
    max_size=10), min_size=1, max_size=4), st.randoms(use_true_random=False))
def test_invariants_on_arbitrary_label_sequences(y_true, rnd):
    # Any labels, well formed or not: a self-comparison is perfect when there
    # is a chunk, and swapping y_true and y_pred swaps precision and recall.
    pool = ["O", "B-NP", "I-NP", "E-NP", "S-NP", "B-VP", "I-VP"]
    y_pred = [[rnd.choice(pool) for _ in seq] for seq in y_true]
    report = chunk_classification_report(y_true, y_true, output_dict=True)
    if report["micro avg"]["support"]:
        assert chunk_f1_score(y_true, y_true) == 1.0
    p, r, f, _ = chunk_precision_recall_fscore_support(y_true, y_pred, average="micro")
    p2, r2, f2, _ = chunk_precision_recall_fscore_support(y_pred, y_true, average="micro")
    assert (p, r, f) == pytest.approx((r2, p2, f2))
    report = chunk_classification_report(y_true, y_pred, output_dict=True)
    micro = report["micro avg"]
    assert micro["correct"] <= min(micro["support"], micro["predicted"])
    assert 0.0 <= f <= 1.0


# ---------------------------------------------------------------------------
# Hand-computed answers and the conlleval corner cases
# ---------------------------------------------------------------------------


def counts(y_true, y_pred):
    rep = chunk_classification_report(y_true, y_pred, output_dict=True)["micro avg"]
    return rep["support"], rep["predicted"], rep["correct"]


def test_hand_computed_example():
    y_true = [["B-NP", "I-NP", "B-VP", "B-PP", "B-NP", "I-NP", "O"],
              ["B-NP", "B-VP", "I-VP", "O"]]
    y_pred = [["B-NP", "I-NP", "B-VP", "B-PP", "B-NP", "B-NP", "O"],
              ["B-NP", "B-VP", "B-VP", "O"]]
    # true: NP NP VP PP | NP VP = 6; pred: NP NP NP VP PP | NP VP VP = 8;
    # correct: NP(0-1) VP(2) PP(3) NP(0 of sentence 2) = 4.
    assert counts(y_true, y_pred) == (6, 8, 4)
    p, r, f = 4 / 8, 4 / 6, 2 * (4 / 8) * (4 / 6) / (4 / 8 + 4 / 6)
    assert chunk_f1_score(y_true, y_pred) == pytest.approx(f, rel=1e-15)
    assert isinstance(chunk_f1_score(y_true, y_pred), float)
    prec, rec, f1, support = chunk_precision_recall_fscore_support(y_true, y_pred)
    # sorted types NP, PP, VP: NP 2 of 4 predicted / 3 true, PP 1/1/1, VP 1 of 3 / 2.
    np.testing.assert_allclose(prec, [2 / 4, 1.0, 1 / 3])
    np.testing.assert_allclose(rec, [2 / 3, 1.0, 1 / 2])
    np.testing.assert_allclose(f1, [2 * 0.5 * (2 / 3) / (0.5 + 2 / 3), 1.0, 0.4])
    assert support.tolist() == [3, 1, 2]
    p_m, r_m, f_m, _ = chunk_precision_recall_fscore_support(y_true, y_pred, average="micro")
    assert (p_m, r_m, f_m) == pytest.approx((p, r, f), rel=1e-15)
    p_a, _, f_a, _ = chunk_precision_recall_fscore_support(y_true, y_pred, average="macro")
    assert p_a == pytest.approx(np.mean(prec)) and f_a == pytest.approx(np.mean(f1))
    _, r_w, _, _ = chunk_precision_recall_fscore_support(y_true, y_pred, average="weighted")
    assert r_w == pytest.approx(np.average(rec, weights=[3, 1, 2]))
    # labels selects and orders the types; micro then pools those types only.
    prec, rec, f1, support = chunk_precision_recall_fscore_support(
        y_true, y_pred, labels=["VP", "ADJP", "NP"])
    np.testing.assert_allclose(prec, [1 / 3, 0.0, 0.5])
    assert support.tolist() == [2, 0, 3]
    p_m, r_m, _, _ = chunk_precision_recall_fscore_support(
        y_true, y_pred, labels=["VP", "NP"], average="micro")
    assert (p_m, r_m) == pytest.approx((3 / 7, 3 / 5))


@pytest.mark.parametrize(
    "labels, expected",
    [
        # A chunk may start with I- (IOB1), after O or at the sentence start.
        (["I-NP", "I-NP", "O", "I-VP"], {(0, 1, "NP"), (3, 3, "VP")}),
        # A type change inside a run of I- tags starts a new chunk.
        (["I-NP", "I-NP", "I-VP", "I-VP", "I-NP"], {(0, 1, "NP"), (2, 3, "VP"), (4, 4, "NP")}),
        # B- after I- of the same type starts a new chunk.
        (["B-NP", "I-NP", "B-NP", "I-NP"], {(0, 1, "NP"), (2, 3, "NP")}),
        (["I-NP", "I-NP", "B-NP"], {(0, 1, "NP"), (2, 2, "NP")}),
        # IOE: E- closes a chunk; I- after E- starts one.
        (["I-NP", "E-NP", "I-NP", "I-NP"], {(0, 1, "NP"), (2, 3, "NP")}),
        (["E-NP", "E-NP"], {(0, 0, "NP"), (1, 1, "NP")}),
        # IOBES, including malformed runs that conlleval still reads.
        (["B-NP", "E-NP", "S-NP", "S-VP", "B-NP", "I-NP", "E-NP"],
         {(0, 1, "NP"), (2, 2, "NP"), (3, 3, "VP"), (4, 6, "NP")}),
        (["B-NP", "I-NP"], {(0, 1, "NP")}),  # no E-: the chunk ends with the sentence
        (["E-NP", "B-NP"], {(0, 0, "NP"), (1, 1, "NP")}),
        (["S-NP", "I-NP", "E-NP"], {(0, 0, "NP"), (1, 2, "NP")}),
        # Tags without a type form chunks of type "".
        (["B", "I", "O", "I", "B"], {(0, 1, ""), (3, 3, ""), (4, 4, "")}),
        # Types may contain hyphens: only the first hyphen splits.
        (["B-A-B", "I-A-B", "I-A-C"], {(0, 1, "A-B"), (2, 2, "A-C")}),
        # Bracket tags make one-token chunks; "." never starts one.
        (["[-NP", ".-NP", ".-NP", "O", "]-VP"], {(0, 0, "NP"), (4, 4, "VP")}),
    ],
)
def test_conlleval_chunk_boundaries(labels, expected):
    # The chunks conlleval reads are those that score as correct against
    # the same chunks written in IOB2 (and no others).
    iob2 = ["O"] * len(labels)
    for first, last, chunk_type in expected:
        iob2[first] = f"B-{chunk_type}" if chunk_type else "B"
        for k in range(first + 1, last + 1):
            iob2[k] = f"I-{chunk_type}" if chunk_type else "I"
    n = len(expected)
    assert counts([labels], [iob2]) == (n, n, n)
    assert chunk_f1_score([labels], [iob2]) == 1.0


def test_type_change_inside_i_run_against_one_long_chunk():
    y_true = [["I-NP", "I-NP", "I-VP", "I-VP"]]
    y_pred = [["B-NP", "I-NP", "I-NP", "I-NP"]]  # one NP chunk over all four
    assert counts(y_true, y_pred) == (2, 1, 0)
    # A chunk that changes type on "." tags is correct overall, but counted
    # under no listed type (conlleval lists the types that start chunks).
    y = [["B-NP", ".-NP", ".-VP"]]
    assert counts(y, y) == (1, 1, 1)
    assert chunk_f1_score(y, y) == 1.0
    report = chunk_classification_report(y, y, output_dict=True)
    assert list(report)[:1] == ["NP"] and report["NP"]["correct"] == 0
    assert chunk_f1_score(y_true, y_pred) == 0.0
    # A chunk predicted too long or too short is wrong at both ends' types.
    assert counts([["B-NP", "I-NP", "O"]], [["B-NP", "I-NP", "I-NP"]]) == (1, 1, 0)
    assert counts([["B-NP", "I-NP", "O"]], [["B-NP", "O", "O"]]) == (1, 1, 0)
    # Same span, other type: not correct.
    assert counts([["B-NP", "I-NP"]], [["B-VP", "I-VP"]]) == (1, 1, 0)


def test_same_chunks_in_every_encoding_score_identically():
    # NP NP (adjacent, same type) VP . O PP NP(long) -- written five ways.
    segments = [("NP", 2), ("NP", 1), ("VP", 1), None, ("PP", 1), ("NP", 3)]
    written = {scheme: encode(segments, scheme) for scheme in SCHEMES}
    assert written["iob1"] == ["I-NP", "I-NP", "B-NP", "I-VP", "O", "I-PP", "I-NP", "I-NP", "I-NP"]
    assert written["ioe1"] == ["I-NP", "E-NP", "I-NP", "I-VP", "O", "I-PP", "I-NP", "I-NP", "I-NP"]
    assert written["iobes"] == ["B-NP", "E-NP", "S-NP", "S-VP", "O", "S-PP", "B-NP", "I-NP", "E-NP"]
    wrong = [("NP", 3), ("VP", 1), None, ("PP", 1), ("NP", 2), None]  # 2 of 5 right
    for s_true in SCHEMES:
        for s_pred in SCHEMES:
            y_true, y_pred = [written[s_true]], [encode(wrong, s_pred)]
            assert chunk_f1_score([written[s_true]], [written[s_pred]]) == 1.0
            assert counts(y_true, y_pred) == (5, 4, 2)
            assert chunk_f1_score(y_true, y_pred) == pytest.approx(2 * 2 / (5 + 4))


def test_continuation_tag_keeps_a_chunk_open():
    # "." continues a chunk and is exempt from the type-change end rule, so
    # the predicted NP runs over all three tokens while the true NP chunk
    # ends where a VP chunk starts (type change on a non-O tag).
    y_true = [["B-NP", ".-NP", "I-VP"]]
    y_pred = [["B-NP", ".-NP", "B-NP"]]
    assert counts(y_true, y_pred) == (2, 1, 0)
    # A chunk that changes type on "." tags is correct overall, but counted
    # under no listed type (conlleval lists the types that start chunks).
    y = [["B-NP", ".-NP", ".-VP"]]
    assert counts(y, y) == (1, 1, 1)
    assert chunk_f1_score(y, y) == 1.0
    report = chunk_classification_report(y, y, output_dict=True)
    assert list(report)[:1] == ["NP"] and report["NP"]["correct"] == 0


def test_labels_without_chunk_prefix_never_start_a_chunk():
    # conlleval reads "NP" as tag "NP" without a type: it starts no chunk.
    assert counts([["NP", "NP", "O"]], [["NP", "NP", "O"]]) == (0, 0, 0)
    assert chunk_f1_score([["NP", "NP", "O"]], [["NP", "NP", "O"]]) == 0.0
    assert counts([["B-NP", "I-NP", "O"]], [["NP", "NP", "O"]]) == (1, 0, 0)


def test_no_chunks_gives_zero_and_empty_input_is_fine():
    assert chunk_f1_score([["O", "O"]], [["O", "O"]]) == 0.0
    assert chunk_f1_score([], []) == 0.0
    assert chunk_f1_score([[]], [[]]) == 0.0
    p, r, f, s = chunk_precision_recall_fscore_support([["O"]], [["O"]])
    assert p.shape == r.shape == f.shape == s.shape == (0,)
    # Only predicted chunks: precision 0 (no correct), recall 0 (undefined).
    p, r, f, s = chunk_precision_recall_fscore_support([["O"]], [["B-NP"]])
    assert (p.tolist(), r.tolist(), f.tolist(), s.tolist()) == ([0.0], [0.0], [0.0], [0])
    text = chunk_classification_report([["O"]], [["O"]])
    assert "processed 1 tokens with 0 chunks; found: 0 chunks; correct: 0." in text


def test_chunks_do_not_cross_sentences():
    # Without the sentence break, I-NP would continue the chunk.
    y_true = [["B-NP"], ["I-NP", "I-NP"]]
    y_pred = [["B-NP", ], ["B-NP", "I-NP"]]
    assert counts(y_true, y_pred) == (2, 2, 2)


def test_report_text_and_dict():
    y_true = [["B-NP", "I-NP", "O", "B-VP"], ["B-PP", "B-NP"]]
    y_pred = [["B-NP", "I-NP", "O", "B-NP"], ["B-PP", "B-NP"]]
    report = chunk_classification_report(y_true, y_pred, output_dict=True)
    assert list(report) == ["NP", "PP", "VP", "micro avg", "macro avg", "weighted avg", "accuracy"]
    assert report["NP"] == {"precision": 2 / 3, "recall": 1.0, "f1-score": 0.8,
                            "support": 2, "predicted": 3, "correct": 2}
    assert report["VP"]["predicted"] == 0 and report["VP"]["f1-score"] == 0.0
    assert report["micro avg"]["f1-score"] == 0.75
    assert report["accuracy"] == 5 / 6
    text = chunk_classification_report(y_true, y_pred, digits=4)
    assert "0.6667" in text and "token accuracy: 0.8333 (5 of 6 tokens)" in text
    lines = text.splitlines()
    assert lines[0] == "processed 6 tokens with 4 chunks; found: 4 chunks; correct: 3."
    assert lines[4].split() == ["NP", "0.6667", "1.0000", "0.8000", "2", "3"]
    with pytest.raises(ValueError, match="digits"):
        chunk_classification_report(y_true, y_pred, digits=-1)


# ---------------------------------------------------------------------------
# Accuracies and the flat report
# ---------------------------------------------------------------------------


def test_flat_and_sequence_accuracy():
    y_true = [["a", "b", "c"], ["a"], [], ["b", "b"]]
    y_pred = [["a", "b", "b"], ["a"], [], ["b", "b"]]
    assert flat_accuracy_score(y_true, y_pred) == 5 / 6
    assert sequence_accuracy_score(y_true, y_pred) == 3 / 4
    # Any hashable labels, numpy arrays as sequences.
    y_true = [np.array([1, 2, 3]), (4, 5)]
    y_pred = [[1, 2, 0], np.array([4, 5])]
    assert flat_accuracy_score(y_true, y_pred) == 4 / 5
    assert sequence_accuracy_score(y_true, y_pred) == 1 / 2
    assert flat_accuracy_score([[("x", 1), None]], [[("x", 1), 0]]) == 0.5
    assert isinstance(flat_accuracy_score(y_true, y_pred), float)
    with pytest.raises(ValueError, match="no token"):
        flat_accuracy_score([[], []], [[], []])
    with pytest.raises(ValueError, match="no sequence"):
        sequence_accuracy_score([], [])


def test_flat_classification_report_is_sklearn_on_flat_labels():
    from sklearn.metrics import classification_report

    y_true = [["DET", "NOUN"], ["VERB", "NOUN", "DET"]]
    y_pred = [["DET", "VERB"], ["VERB", "NOUN", "NOUN"]]
    flat_t = ["DET", "NOUN", "VERB", "NOUN", "DET"]
    flat_p = ["DET", "VERB", "VERB", "NOUN", "NOUN"]
    assert flat_classification_report(y_true, y_pred) == classification_report(flat_t, flat_p)
    assert flat_classification_report(y_true, y_pred, output_dict=True, digits=3) == (
        classification_report(flat_t, flat_p, output_dict=True, digits=3))


# ---------------------------------------------------------------------------
# Input validation
# ---------------------------------------------------------------------------

ALL_METRICS = [
    chunk_f1_score,
    lambda a, b: chunk_precision_recall_fscore_support(a, b),
    chunk_classification_report,
    flat_accuracy_score,
    sequence_accuracy_score,
    flat_classification_report,
]


@pytest.mark.parametrize("metric", ALL_METRICS)
def test_bad_shapes_are_rejected(metric):
    with pytest.raises(ValueError, match=r"list of label sequences.*element 0 is the str 'B-NP'"):
        metric(["B-NP", "O"], ["B-NP", "O"])
    with pytest.raises(ValueError, match="y_pred must be a list of label sequences"):
        metric([["B-NP"]], ["B-NP"])
    with pytest.raises(ValueError, match="y_true must be a list of label sequences"):
        metric("B-NP", [["B-NP"]])
    with pytest.raises(ValueError, match="element 1 is the int"):
        metric([["O"], 3], [["O"], ["O"]])
    with pytest.raises(ValueError, match="same number of sequences; got 2 and 1"):
        metric([["O"], ["O"]], [["O"]])
    with pytest.raises(ValueError, match="sequence 1 has 3 labels in y_true but 2 in y_pred"):
        metric([["O"], ["O", "O", "O"]], [["O"], ["O", "O"]])


def test_chunk_metrics_need_string_labels():
    with pytest.raises(ValueError, match="label 1 of sequence 0 in y_pred is the int 3"):
        chunk_f1_score([["B-NP", "O"]], [["B-NP", 3]])
    with pytest.raises(ValueError, match="average must be"):
        chunk_precision_recall_fscore_support([["O"]], [["O"]], average="binary")
    with pytest.raises(ValueError, match="labels must be a list"):
        chunk_precision_recall_fscore_support([["O"]], [["O"]], labels="NP")
    with pytest.raises(ValueError, match="duplicates"):
        chunk_precision_recall_fscore_support([["O"]], [["O"]], labels=["NP", "NP"])


# ---------------------------------------------------------------------------
# Scorers in GridSearchCV and cross_val_score
# ---------------------------------------------------------------------------


class WordTagger(BaseEstimator):
    """Tags each word with its most frequent training label (or the global one)."""

    def __init__(self, use_words=True):
        self.use_words = use_words

    def fit(self, X, y):
        per_word, overall = {}, Counter()
        for words, labels in zip(X, y):
            for word, label in zip(words, labels):
                per_word.setdefault(word, Counter())[label] += 1
                overall[label] += 1
        self.default_ = overall.most_common(1)[0][0]
        self.lookup_ = {}
        if self.use_words:
            self.lookup_ = {w: c.most_common(1)[0][0] for w, c in per_word.items()}
        return self

    def predict(self, X):
        return [[self.lookup_.get(w, self.default_) for w in words] for words in X]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        return tags


def toy_chunking(n=24):
    rng = np.random.default_rng(0)
    patterns = [
        (["the", "dog"], ["B-NP", "I-NP"]),
        (["runs"], ["B-VP"]),
        (["in"], ["B-PP"]),
        (["a", "big", "park"], ["B-NP", "I-NP", "I-NP"]),
        (["."], ["O"]),
        (["she"], ["B-NP"]),
    ]
    X, y = [], []
    for _ in range(n):
        words, labels = [], []
        for k in rng.integers(0, len(patterns), size=rng.integers(2, 6)):
            words += patterns[k][0]
            labels += patterns[k][1]
        X.append(words)
        y.append(labels)
    return X, y


def manual_cv_scores(estimator, X, y, metric, cv):
    scores = []
    for train, test in cv.split(X):
        est = estimator.fit([X[i] for i in train], [y[i] for i in train])
        scores.append(metric([y[i] for i in test], est.predict([X[i] for i in test])))
    return np.array(scores)


@pytest.mark.parametrize(
    "scorer, metric",
    [
        (chunk_f1_scorer, chunk_f1_score),
        (flat_accuracy_scorer, flat_accuracy_score),
        (sequence_accuracy_scorer, sequence_accuracy_score),
    ],
)
def test_scorers_in_cross_val_score(scorer, metric):
    X, y = toy_chunking()
    cv = KFold(3)
    for use_words in (False, True):
        scores = cross_val_score(WordTagger(use_words=use_words), X, y, scoring=scorer, cv=cv)
        expected = manual_cv_scores(WordTagger(use_words=use_words), X, y, metric, cv)
        np.testing.assert_allclose(scores, expected, rtol=0, atol=0)
    assert scorer(WordTagger().fit(X, y), X, y) == metric(y, WordTagger().fit(X, y).predict(X))
    assert pickle.loads(pickle.dumps(scorer))(WordTagger().fit(X, y), X, y) == 1.0


def test_chunk_f1_scorer_in_grid_search():
    X, y = toy_chunking()
    search = GridSearchCV(
        WordTagger(), {"use_words": [False, True]}, scoring=chunk_f1_scorer, cv=KFold(3)
    ).fit(X, y)
    assert search.best_params_ == {"use_words": True}
    assert search.best_score_ == 1.0
    expected = manual_cv_scores(WordTagger(use_words=False), X, y, chunk_f1_score, KFold(3))
    np.testing.assert_allclose(
        [search.cv_results_[f"split{k}_test_score"][0] for k in range(3)], expected)
    assert 0.0 < expected.mean() < 1.0
    # Several scorers at once, refit on one of them.
    search = GridSearchCV(
        WordTagger(), {"use_words": [False, True]}, cv=KFold(3), refit="f1",
        scoring={"f1": chunk_f1_scorer, "acc": flat_accuracy_scorer,
                 "seq": sequence_accuracy_scorer},
    ).fit(X, y)
    assert search.cv_results_["mean_test_acc"][1] == 1.0
    assert search.predict(X) == y


# ---------------------------------------------------------------------------
# CoNLL-2000 (shared data)
# ---------------------------------------------------------------------------


def test_conll2000_self_and_perturbed_scores(shared_data):
    _, y = read_conll(shared_data / "conll2000" / "test.txt")
    flat = [label for labels in y for label in labels]
    n_chunks = sum(label.startswith("B-") for label in flat)
    n_pp = flat.count("B-PP")
    n_np = flat.count("B-NP")
    # The file is IOB2: every chunk begins with B-, so B- tags count chunks.
    for labels in y:
        for prev, label in zip(["O"] + labels, labels):
            if label.startswith("I-"):
                assert prev[2:] == label[2:] and prev[0] in "BI"
    assert (n_chunks, n_np, n_pp) == (23852, 12422, 4811)
    assert chunk_f1_score(y, y) == 1.0
    assert flat_accuracy_score(y, y) == sequence_accuracy_score(y, y) == 1.0

    # Every PP chunk relabelled NP: same boundaries, PP chunks all wrong.
    relabelled = [[label.replace("-PP", "-NP") for label in labels] for labels in y]
    expected = (n_chunks - n_pp) / n_chunks
    assert chunk_f1_score(y, relabelled) == pytest.approx(expected, rel=1e-12)
    report = chunk_classification_report(y, relabelled, output_dict=True)
    assert report["PP"]["predicted"] == 0 and report["PP"]["support"] == n_pp
    assert report["NP"]["precision"] == pytest.approx(n_np / (n_np + n_pp), rel=1e-12)
    n_pp_tokens = sum(label.endswith("-PP") for label in flat)
    assert report["accuracy"] == pytest.approx(1 - n_pp_tokens / len(flat), rel=1e-12)

    # The first 100 sentences predicted all O: precision stays 1.
    blanked = [["O"] * len(labels) for labels in y[:100]] + y[100:]
    lost = sum(label.startswith("B-") for labels in y[:100] for label in labels)
    p, r, f, _ = chunk_precision_recall_fscore_support(y, blanked, average="micro")
    assert (p, r) == (1.0, pytest.approx((n_chunks - lost) / n_chunks, rel=1e-12))
    assert sequence_accuracy_score(y, blanked) == pytest.approx(
        1 - sum(any(lab != "O" for lab in labels) for labels in y[:100]) / len(y))
