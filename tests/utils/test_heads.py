"""Tests of the dependency-head helpers of sksparse_struct.utils."""

import re

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from sksparse_struct.utils import as_heads, first_bad_tree, is_labelled_pair, tree_error

# ---------------------------------------------------------------------------
# as_heads


@pytest.mark.parametrize("seq", [[2, 0, 2], (2, 0, 2), np.array([2, 0, 2], dtype=np.int32),
                                 [np.int64(2), 0, np.uint8(2)]])
def test_as_heads_returns_int64(seq):
    heads = as_heads(seq, "y", 0)
    assert heads.dtype == np.int64
    assert_array_equal(heads, [2, 0, 2])


def test_as_heads_empty_sentence():
    heads = as_heads([], "y", 0)
    assert heads.dtype == np.int64 and heads.shape == (0,)


@pytest.mark.parametrize("seq, name, i, message", [
    ([[1, 0], [0, 1]], "y", 0,
     "y[0] must be a flat sequence of heads (one integer per word); got an array "
     "of shape (2, 2)."),
    (np.array([1.0, 0.0]), "heads_pred", 2,
     "heads must be integers (0 for the root, else a 1-based word index); "
     "heads_pred[2] is an array of dtype float64."),
    ([0, 1.5], "heads_true", 3,
     "heads must be integers (0 for the root, else a 1-based word index); "
     "heads_true[3][1] (word 2 of sentence 3) is the float 1.5."),
    ([True, False], "y", 1,
     "heads must be integers (0 for the root, else a 1-based word index); "
     "y[1][0] (word 1 of sentence 1) is the bool True."),
    (["0"], "y", 0,
     "heads must be integers (0 for the root, else a 1-based word index); "
     "y[0][0] (word 1 of sentence 0) is the str '0'."),
    ([0, -1], "y", 4,
     "y[4][1] (word 2 of sentence 4) is -1, outside [0, 2]: a head is 0 for the "
     "root or the 1-based index of a word of the same sentence, which has 2 words."),
    ([0, 1, 4], "heads_true", 0,
     "heads_true[0][2] (word 3 of sentence 0) is 4, outside [0, 3]: a head is 0 for "
     "the root or the 1-based index of a word of the same sentence, which has 3 words."),
])
def test_as_heads_errors(seq, name, i, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        as_heads(seq, name, i)


def test_as_heads_unreadable():
    with pytest.raises(ValueError, match=r"^y\[1\] could not be read as heads: ") as info:
        as_heads([[1], [0, 1]], "y", 1)
    assert info.value.__cause__ is not None


# ---------------------------------------------------------------------------
# is_labelled_pair


@pytest.mark.parametrize("item, expected", [
    (([2, 0], ["det", "root"]), True),
    ([np.array([0]), ["root"]], True),
    ((np.array([2, 0]), np.array(["det", "root"])), True),
    ([2, 0], False),
    (np.array([2, 0]), False),
    (([0], "root"), False),  # a string is not a sequence of relations
    (([0], b"root"), False),
    (([2, 0], ["det", "root"], None), False),
    ("ab", False),
    (3, False),
])
def test_is_labelled_pair(item, expected):
    assert is_labelled_pair(item) is expected


# ---------------------------------------------------------------------------
# tree_error and first_bad_tree


@pytest.mark.parametrize("heads, single_root, expected", [
    ([0], False, None),
    ([2, 0, 2], True, None),
    ([0, 1, 1, 2], True, None),
    ([0, 0], False, None),
    ([0, 3], False, (2, "HEAD 3 of word 2 is out of range: the sentence has 2 words")),
    ([-1], False, (1, "HEAD -1 of word 1 is out of range: the sentence has 1 words")),
    ([0, 2], False, (2, "word 2 is its own head")),
    ([2, 1], False, (1, "no word is attached to the root (HEAD 0): words 1 -> 2 -> 1 "
                        "form a cycle")),
    ([0, 3, 4, 2], False, (2, "words 2 -> 3 -> 4 -> 2 form a cycle (their heads never "
                              "reach the root)")),
    ([0, 4, 2, 3], False, (2, "words 2 -> 4 -> 3 -> 2 form a cycle (their heads never "
                              "reach the root)")),
    ([0, 0], True, (2, "words 1 and 2 are both attached to the root (single_root=True)")),
    ([0, 0, 0], True, (2, "words 1, 2 and 3 are all attached to the root "
                          "(single_root=True)")),
    ([2, 0, 0], True, (3, "words 2 and 3 are both attached to the root "
                          "(single_root=True)")),
])
def test_tree_error(heads, single_root, expected):
    assert tree_error(heads, single_root) == expected
    # first_bad_tree agrees on the sentence alone and after a good one.
    lengths = np.array([1, len(heads)], dtype=np.int64)
    flat = np.array([0] + heads, dtype=np.int64)
    assert first_bad_tree(flat[1:], lengths[1:], single_root) == (None if expected is None
                                                                  else 0)
    assert first_bad_tree(flat, lengths, single_root) == (None if expected is None else 1)


def test_first_bad_tree_no_sentence():
    empty = np.zeros(0, dtype=np.int64)
    assert first_bad_tree(empty, empty) is None


def test_first_bad_tree_finds_the_first():
    # Sentences: a tree, a cycle, two roots, a tree.
    sentences = [[2, 0], [2, 1], [0, 0], [0]]
    flat = np.array([h for s in sentences for h in s], dtype=np.int64)
    lengths = np.array([len(s) for s in sentences], dtype=np.int64)
    assert first_bad_tree(flat, lengths) == 1
    assert first_bad_tree(flat, lengths, single_root=True) == 1
    flat[2:4] = [0, 1]
    assert first_bad_tree(flat, lengths) is None
    assert first_bad_tree(flat, lengths, single_root=True) == 2
