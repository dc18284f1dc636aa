"""Tests for fertility_attention and its backward (Malaviya et al. 2018, eq. 5)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sksparse_struct.mappings import (
    csoftmax,
    csparsemax,
    fertility_attention,
    fertility_attention_backward,
)

MAPPINGS = {"csparsemax": csparsemax, "csoftmax": csoftmax}


def reference(scores, fertility, mapping):
    """Plain loop of the public mappings with u_t = f - cumulative attention."""
    out = np.zeros_like(scores)
    cumulative = np.zeros(scores.shape[1])
    for t in range(scores.shape[0]):
        u = np.maximum(fertility - cumulative, 0.0)
        out[t] = MAPPINGS[mapping](scores[t], np.minimum(u, 2.0))
        cumulative += out[t]
    return out


def check_invariants(a, scores, fertility):
    assert a.shape == scores.shape
    np.testing.assert_allclose(a.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(a >= 0)
    assert np.all(np.cumsum(a, axis=0) <= fertility + 1e-12)
    assert np.all(a[np.isneginf(scores)] == 0)


@pytest.mark.parametrize("mapping", sorted(MAPPINGS))
def test_matches_step_by_step_reference(mapping):
    rng = np.random.default_rng(0)
    for n_steps, n_words in [(1, 1), (3, 3), (5, 4), (8, 6), (4, 10)]:
        scores = rng.normal(size=(n_steps, n_words)) * 2
        fertility = rng.uniform(0.2, 2.0, size=n_words)
        fertility *= max(1.0, 1.2 * n_steps / fertility.sum())
        a = fertility_attention(scores, fertility, mapping=mapping)
        np.testing.assert_allclose(a, reference(scores, fertility, mapping), atol=1e-12)
        check_invariants(a, scores, fertility)


@pytest.mark.parametrize("mapping", sorted(MAPPINGS))
def test_unit_fertility_is_even(mapping):
    # Martins & Kreutzer 2017, eq. 11: with f = 1 and T = J steps every word
    # ends up with a cumulative attention of exactly one.
    rng = np.random.default_rng(1)
    scores = rng.normal(size=(6, 6))
    a = fertility_attention(scores, np.ones(6), mapping=mapping)
    np.testing.assert_allclose(a.sum(axis=0), 1.0, atol=1e-12)
    check_invariants(a, scores, np.ones(6))


def test_paper_figure_example():
    # Malaviya et al. 2018, Fig. 1: three words with unit fertility.
    scores = np.array([[1.2, 0.8, -0.2], [0.7, 0.9, 0.1], [-0.2, 0.2, 0.9]])
    a = fertility_attention(scores, np.ones(3))
    np.testing.assert_allclose(a, [[0.7, 0.3, 0.0], [0.3, 0.7, 0.0], [0.0, 0.0, 1.0]])
    assert a[1, 0] == 1.0 - a[0, 0] and a[2, 0] == 0.0  # word 0 exhausted exactly


@pytest.mark.parametrize("mapping", sorted(MAPPINGS))
def test_sink_word_with_infinite_fertility(mapping):
    rng = np.random.default_rng(2)
    scores = rng.normal(size=(7, 4))
    fertility = np.array([1.0, 0.5, 1.0, np.inf])  # last word is the sink
    a = fertility_attention(scores, fertility, mapping=mapping)
    check_invariants(a, scores, fertility)
    assert a[:, 3].sum() >= 7 - 2.5 - 1e-12
    with pytest.raises(ValueError, match="sum to 2.5 < 7 decoding steps"):
        fertility_attention(scores[:, :3], fertility[:3], mapping=mapping)


def test_masks():
    scores = np.array([[0.0, -np.inf, 1.0], [0.5, 0.2, -np.inf], [0.1, 0.0, 0.3]])
    fertility = np.array([1.0, 1.0, 1.0])
    for mapping in MAPPINGS:
        a = fertility_attention(scores, fertility, mapping=mapping)
        check_invariants(a, scores, fertility)
        np.testing.assert_allclose(a, reference(scores, fertility, mapping), atol=1e-12)


@pytest.mark.parametrize(
    "scores, fertility, kwargs, match",
    [
        (np.zeros((3, 2)), [1.0, 1.0], {}, "sum to 2 < 3 decoding steps"),
        (np.zeros(3), [1.0, 1.0, 1.0], {}, "2-D array of shape"),
        (np.zeros((2, 3)), [1.0, 1.0], {}, "2 entries but scores have 3"),
        (np.zeros((2, 2)), [[1.0, 1.0]], {}, "1-D vector"),
        (np.zeros((2, 2)), [1.0, -1.0], {}, "non-negative.*position 1"),
        (np.zeros((2, 2)), [np.nan, 3.0], {}, "non-negative.*position 0"),
        (np.zeros((2, 2)), [1.0, 1.0], {"mapping": "softmax"}, "mapping must be one of"),
        (np.array([[0.0, np.nan]]), [1.0, 1.0], {}, "NaN"),
        # enough budget in total, but step 1 may only use word 0, spent at step 0
        (np.array([[5.0, -5.0], [0.0, -np.inf]]), [1.0, 1.0], {}, "at step 1"),
    ],
)
def test_bad_input(scores, fertility, kwargs, match):
    with pytest.raises(ValueError, match=match):
        fertility_attention(scores, fertility, **kwargs)


@st.composite
def fertility_problems(draw):
    n_words = draw(st.integers(1, 6))
    n_steps = draw(st.integers(1, 8))
    scores = np.array(
        draw(st.lists(st.floats(-5, 5), min_size=n_steps * n_words, max_size=n_steps * n_words))
    ).reshape(n_steps, n_words)
    scores = np.round(scores, draw(st.sampled_from([0, 1, 6])))
    w = np.array(draw(st.lists(st.floats(0, 1), min_size=n_words, max_size=n_words)))
    if w.sum() == 0:
        w[0] = 1.0
    fertility = w / w.sum() * n_steps * draw(st.sampled_from([1.0, 1.3, 3.0]))
    return scores, fertility, draw(st.sampled_from(sorted(MAPPINGS)))


@given(fertility_problems())
def test_properties(problem):
    scores, fertility, mapping = problem
    a = fertility_attention(scores, fertility, mapping=mapping)
    check_invariants(a, scores, fertility)
    # budgets that sum to the number of steps are used up completely
    if np.isclose(fertility.sum(), scores.shape[0]):
        np.testing.assert_allclose(a.sum(axis=0), fertility, atol=1e-9)
    d_scores, d_fert = fertility_attention_backward(a, fertility, np.ones_like(a), mapping=mapping)
    # every row sums to one whatever the inputs, so a loss of sum(a) has zero gradient
    np.testing.assert_allclose(d_scores, 0.0, atol=1e-9)
    assert d_fert.shape == fertility.shape


# ---------------------------------------------------------------- backward


def classes(a, fertility):
    """Active-set pattern of every step (0: zero, 1: free, 2: at bound)."""
    remaining = fertility.copy()
    out = np.zeros(a.shape, dtype=int)
    for t in range(a.shape[0]):
        u = np.minimum(remaining, 2.0)
        out[t] = np.where(a[t] == u, 2, np.where(a[t] > 0, 1, 0))
        remaining = remaining - a[t]
    return out


def stable_case(seed, mapping, n_steps, n_words, eps=1e-6):
    """Random inputs whose active sets do not change under +-eps steps."""
    rng = np.random.default_rng(seed)
    for _ in range(200):
        scores = rng.normal(size=(n_steps, n_words)) * 1.5
        fertility = rng.uniform(0.3, 1.5, size=n_words)
        fertility *= 1.15 * n_steps / fertility.sum()
        a = fertility_attention(scores, fertility, mapping=mapping)
        pattern = classes(a, fertility)
        ok = True
        for which in range(n_steps * n_words + n_words):
            for sign in (-1, 1):
                s2, f2 = scores.copy(), fertility.copy()
                if which < n_steps * n_words:
                    s2.flat[which] += sign * 100 * eps
                else:
                    f2[which - n_steps * n_words] += sign * 100 * eps
                a2 = fertility_attention(s2, f2, mapping=mapping)
                if not np.array_equal(classes(a2, f2), pattern):
                    ok = False
                    break
            if not ok:
                break
        if ok:
            return scores, fertility, a
    raise AssertionError("no kink-free case found")


@pytest.mark.parametrize("mapping", sorted(MAPPINGS))
@pytest.mark.parametrize("seed", range(4))
def test_backward_matches_finite_differences(mapping, seed):
    n_steps, n_words = 3 + seed % 2, 3 + seed // 2
    scores, fertility, a = stable_case(seed, mapping, n_steps, n_words)
    g = np.random.default_rng(seed + 50).normal(size=a.shape)
    d_scores, d_fert = fertility_attention_backward(a, fertility, g, mapping=mapping)
    eps = 1e-6

    def loss(s, f):
        return np.sum(g * fertility_attention(s, f, mapping=mapping))

    fd_scores = np.empty_like(scores)
    for idx in np.ndindex(scores.shape):
        step = np.zeros_like(scores)
        step[idx] = eps
        fd_scores[idx] = (loss(scores + step, fertility) - loss(scores - step, fertility)) / (2 * eps)
    fd_fert = np.empty_like(fertility)
    for j in range(len(fertility)):
        step = np.zeros_like(fertility)
        step[j] = eps
        fd_fert[j] = (loss(scores, fertility + step) - loss(scores, fertility - step)) / (2 * eps)
    np.testing.assert_allclose(d_scores, fd_scores, atol=1e-7)
    np.testing.assert_allclose(d_fert, fd_fert, atol=1e-7)


def test_backward_exhausted_words_and_sink():
    rng = np.random.default_rng(9)
    scores = rng.normal(size=(6, 4))
    fertility = np.array([0.8, 1.0, 0.7, np.inf])
    a = fertility_attention(scores, fertility)
    g = rng.normal(size=a.shape)
    d_scores, d_fert = fertility_attention_backward(a, fertility, g)
    assert np.all(np.isfinite(d_scores)) and np.all(np.isfinite(d_fert))
    assert d_fert[3] == 0.0  # an unbounded budget never binds
    # compare the finite fertilities with finite differences when stable
    eps = 1e-6
    for j in range(3):
        step = np.zeros(4)
        step[j] = eps
        plus = fertility_attention(scores, fertility + step)
        minus = fertility_attention(scores, fertility - step)
        if np.array_equal(classes(plus, fertility + step), classes(minus, fertility - step)):
            fd = (np.sum(g * plus) - np.sum(g * minus)) / (2 * eps)
            assert abs(fd - d_fert[j]) < 1e-7


def test_backward_bad_input():
    a = fertility_attention(np.zeros((2, 2)), [1.0, 1.0])
    with pytest.raises(ValueError, match="does not match"):
        fertility_attention_backward(a, [1.0, 1.0], np.zeros((3, 2)))
    with pytest.raises(ValueError, match="mapping must be one of"):
        fertility_attention_backward(a, [1.0, 1.0], np.zeros((2, 2)), mapping="sparsemax")


def test_csparsemax_steps_exact_at_any_magnitude():
    # Each step is a capped projection: shifting a step's scores by a huge
    # constant changes nothing.
    scores = np.array([[0.5, 0.25, -1.0], [0.125, 0.75, 0.0], [-0.5, 0.25, 0.875]])
    ref = fertility_attention(scores, [1.0, 1.0, 1.0])
    shifted = scores + np.array([[2.0**44], [-(2.0**49)], [2.0**32]])
    np.testing.assert_allclose(
        fertility_attention(shifted, [1.0, 1.0, 1.0]), ref, rtol=0, atol=1e-15
    )
    a = fertility_attention(np.full((3, 3), 1e16), [1.0, 1.0, 1.0])
    np.testing.assert_allclose(a, 1 / 3, rtol=0, atol=1e-15)
