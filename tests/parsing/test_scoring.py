"""The arc and label scoring kernels: reads pipelined behind prefetches, sums unchanged."""

import platform

import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

from sksparse_struct.feature_extraction import ArcFeatures
from sksparse_struct.feature_extraction import _arc_features_fast as af
from sksparse_struct.parsing import _arc_filter_fast, _scoring_fast
from sksparse_struct.parsing._problem import stack_sentences
from sksparse_struct.utils._prefetch_fast import prefetch


def _sentences(rng):
    tags = ["NOUN", "VERB", "DET", "ADJ", "PUNCT", "CCONJ", "ADP"]
    return [
        [{"form": f"w{rng.integers(30)}", "lemma": f"l{rng.integers(20)}",
          "upos": tags[rng.integers(len(tags))], "xpos": f"X{rng.integers(9)}"}
         for _ in range(n)]
        for n in (1, 2, 3, 6, 25)
    ]


@pytest.mark.parametrize("preset", ["mst", "rich"])
@pytest.mark.parametrize("use_filter", [False, True])
def test_sentence_scores_are_the_plain_sums(preset, use_filter):
    # Every arc's score is sum_j w[index_j] in the features' order,
    # to the last bit, whatever arcs the filter skips in between.
    rng = np.random.default_rng(1)
    n_features = 2**12
    encoded = ArcFeatures(preset=preset, n_features=n_features).fit_transform(_sentences(rng))
    corpus, lengths = stack_sentences(encoded)
    tokens, mask = corpus.tokens, np.int64(n_features - 1)
    w = rng.standard_normal(n_features)
    code = np.int64(af.RICH if preset == "rich" else af.MST)
    for s in range(len(lengths)):
        start, n = np.int64(corpus.offsets[s]), np.int64(lengths[s])
        arcs = [(h, m) for h in range(n + 1) for m in range(1, n + 1) if h != m]
        all_keys = np.unique([_arc_filter_fast.arc_filter_key(tokens, start, h, m) for h, m in arcs])
        keys = np.sort(rng.choice(all_keys, size=(all_keys.shape[0] + 1) // 2, replace=False))
        HS, MS, aux, buf = af.new_states(n)
        S = np.empty((n + 1, n + 1))
        _scoring_fast.sentence_scores(tokens, start, n, w, code, mask, keys, use_filter, S, HS,
                                      MS, aux, buf, np.empty_like(buf))
        expected = np.full((n + 1, n + 1), -np.inf)
        out = np.empty(af.max_arc_features(n), dtype=np.int64)
        for h, m in arcs:
            if not _arc_filter_fast.arc_allowed(tokens, start, h, m, keys, use_filter):
                continue
            k = af.arc_features(tokens, start, n, h, m, code, mask, out)
            total = 0.0
            for j in range(k):
                total += w[out[j]]
            expected[h, m] = total
        np.testing.assert_array_equal(S, expected)
        if use_filter and n > 3:
            assert np.isinf(S[1:, 1:][~np.eye(n, dtype=bool)]).any()  # the filter did skip


@njit
def _sum_after_prefetch(a, idx):
    for i in idx:
        prefetch(a, i)
    total = 0.0
    for i in idx:
        total += a[i]
    return total


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_prefetch_is_only_a_hint(dtype):
    a = np.arange(100, dtype=dtype)
    idx = np.array([3, 97, 0, 50, 3])
    assert _sum_after_prefetch(a, idx) == a[idx].sum()


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                    reason="checks the x86 instruction")
def test_prefetch_emits_the_instruction():
    _sum_after_prefetch(np.zeros(4), np.zeros(1, dtype=np.int64))
    asm = "\n".join(_sum_after_prefetch.inspect_asm().values())
    assert "prefetcht0" in asm


def test_prefetch_needs_a_1d_array_and_an_integer():
    @njit
    def bad(x):
        prefetch(x, 0)

    with pytest.raises(TypingError):
        bad(1.0)


@pytest.mark.parametrize("n_labels", [1, 5, 64, 65, 150])
@pytest.mark.parametrize("n_features", [2**4, 2**12])
def test_label_scores_are_the_plain_sums(n_labels, n_features):
    # Every label's score is sum_j w[label_index(feature_j, label)], in the
    # features' order, to the last bit: with one, several and a partial
    # last group of labels, and a weight vector smaller than one block.
    rng = np.random.default_rng(2)
    encoded = ArcFeatures(n_features=n_features).fit_transform(_sentences(rng))
    corpus, lengths = stack_sentences(encoded)
    tokens, mask = corpus.tokens, np.int64(n_features - 1)
    shift = af.index_shift(mask)
    w = rng.standard_normal(n_features)
    fbuf, bases, out = _scoring_fast.label_work(n_labels)
    features = np.empty(af.LABEL_FEATURES, dtype=np.int64)
    for s in range(len(lengths)):
        start, n = np.int64(corpus.offsets[s]), np.int64(lengths[s])
        for h, m in [(h, m) for h in range(n + 1) for m in range(1, n + 1) if h != m]:
            k = _scoring_fast.label_scores(tokens, start, n, h, m, w, np.int64(n_labels), shift,
                                           mask, fbuf, bases, out)
            assert k == af.label_features(tokens, start, n, h, m, mask, features)
            expected = np.zeros(n_labels)
            for lab in range(n_labels):
                for j in range(k):
                    expected[lab] += w[af.label_index(features[j], lab, shift, mask)]
            np.testing.assert_array_equal(out[:n_labels], expected)
