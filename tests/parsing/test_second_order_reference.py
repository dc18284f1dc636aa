"""The references of the second-order parsing tests, checked against each other."""

import math

import numpy as np
import pytest

from sksparse_struct.structures import DependencyTree

from .. import _helpers
from ._second_order_reference import (
    all_tree_scores,
    all_trees,
    brute_force_map,
    eisner_siblings,
    is_projective,
    second_order_score,
    tree_parts,
)

SETTINGS = [(p, s) for p in (False, True) for s in (False, True)]


def random_sibling_scores(rng, n):
    """A score for every sibling part of a sentence of ``n`` words."""
    scores = {}
    for h in range(n + 1):
        for m in range(h, n + 1):  # right side: h <= m < s <= n + 1
            for s in range(m + 1, n + 2):
                scores[(h, m, s)] = rng.normal()
        for m in range(1 if h else 0, h + 1):  # left side: -1 <= s < m <= h
            for s in range(-1, m):
                if s != 0:  # the root is nobody's dependent
                    scores[(h, m, s)] = rng.normal()
    return scores


def random_grandparent_scores(rng, n):
    """A score for every grandparent part, the 2-cycles (g, h, g) included."""
    return {(g, h, m): rng.normal() for g in range(n + 1) for h in range(1, n + 1)
            for m in range(1, n + 1) if g != h and h != m}


def test_random_sibling_scores_are_the_parts():
    # What the helper above produces is every part and nothing else: checked
    # against the parts the trees activate.
    n = 4
    scores = random_sibling_scores(np.random.default_rng(0), n)
    used = {tuple(row) for heads in all_trees(n) for row in tree_parts(heads)[0].tolist()}
    # The root's right side is never empty: (0, 0, n + 1) is a part no tree has.
    assert used == set(scores) - {(0, 0, n + 1)}


def test_tree_parts_by_hand():
    # Word 2 hangs from the root; 1 <- 2 -> 3 -> 4.
    siblings, grandparents = tree_parts([-1, 2, 0, 2, 3])
    assert siblings.tolist() == [
        [0, 0, -1], [0, 0, 2], [0, 2, 5],
        [1, 1, -1], [1, 1, 5],
        [2, 2, 1], [2, 1, -1], [2, 2, 3], [2, 3, 5],
        [3, 3, -1], [3, 3, 4], [3, 4, 5],
        [4, 4, -1], [4, 4, 5],
    ]
    assert grandparents.tolist() == [[0, 2, 1], [0, 2, 3], [2, 3, 4]]
    # Three left dependents, ordered outwards; a multi-root tree.
    siblings, grandparents = tree_parts([-1, 4, 4, 4, 0, 0])
    assert [row for row in siblings.tolist() if row[0] == 4] == [
        [4, 4, 3], [4, 3, 2], [4, 2, 1], [4, 1, -1], [4, 4, 6]]
    assert [row for row in siblings.tolist() if row[0] == 0] == [
        [0, 0, -1], [0, 0, 4], [0, 4, 5], [0, 5, 6]]
    assert grandparents.tolist() == [[0, 4, 1], [0, 4, 2], [0, 4, 3]]


def test_tree_parts_counts():
    n = 6
    for heads in all_trees(n)[::97]:
        siblings, grandparents = tree_parts(heads)
        assert siblings.shape == (3 * n + 2, 3)
        assert len({tuple(row) for row in siblings.tolist()}) == 3 * n + 2
        for h in range(n + 1):
            for side in (-1, 1):
                k = int(np.sum((heads == h) & (np.sign(np.arange(n + 1) - h) == side)))
                rows = siblings[(siblings[:, 0] == h)
                                & (np.sign(siblings[:, 2] - h) == side)]
                assert rows.shape[0] == k + 1
        assert grandparents.shape == (int(np.sum(heads[1:] >= 1)), 3)
        assert all(heads[h] == g and heads[m] == h for g, h, m in grandparents)


@pytest.mark.parametrize("n", range(1, 8))
def test_all_trees_counts(n):
    assert len(all_trees(n)) == (n + 1) ** (n - 1)
    assert len(all_trees(n, single_root=True)) == n ** (n - 1)
    # Projective trees: the ternary numbers C(3n, n) / (2n + 1) with any
    # number of root words, C(3n - 2, n - 1) / n with one.
    assert len(all_trees(n, projective=True)) == math.comb(3 * n, n) // (2 * n + 1)
    assert len(all_trees(n, True, True)) == math.comb(3 * n - 2, n - 1) // n


@pytest.mark.parametrize("projective, single_root", SETTINGS)
def test_all_trees_match_the_plain_enumeration(projective, single_root):
    for n in range(1, 6):
        trees = all_trees(n, projective, single_root)
        expected = _helpers.all_trees(n, projective, single_root)
        # Same trees, in the same (lexicographic) order.
        assert np.array_equal(trees, np.array(expected))
        assert trees.dtype == np.int64 and not trees.flags.writeable


def test_all_trees_projective_counts_match_the_partition_function():
    # With zero scores the partition function counts the trees.
    for n in range(1, 8):
        for single_root in (False, True):
            log_z = DependencyTree(projective=True, single_root=single_root).marginals(
                np.zeros((n + 1, n + 1)))[1]
            assert round(math.exp(log_z)) == len(all_trees(n, True, single_root))


def test_is_projective():
    assert is_projective([-1, 2, 0, 2, 3])
    assert not is_projective([-1, 3, 0, 2, 1])  # 3 -> 1 crosses 0 -> 2
    assert not is_projective([-1, 0, 4, 1, 0])  # 1 -> 3 crosses 4 -> 2


@pytest.mark.parametrize("projective, single_root", SETTINGS)
def test_all_tree_scores_match_second_order_score(projective, single_root):
    rng = np.random.default_rng(1)
    for n in range(1, 7):
        arc = rng.normal(size=(n + 1, n + 1))
        sib = random_sibling_scores(rng, n)
        gp = random_grandparent_scores(rng, n)
        trees, scores = all_tree_scores(n, arc, sib, gp, projective, single_root)
        for i in rng.choice(len(trees), size=min(len(trees), 30), replace=False):
            assert scores[i] == pytest.approx(second_order_score(trees[i], arc, sib, gp),
                                              abs=1e-12)


def test_second_order_score_by_hand():
    heads = [-1, 2, 0, 2, 3]
    arc = np.zeros((5, 5))
    arc[2, 1], arc[0, 2], arc[2, 3], arc[3, 4] = 1.0, 2.0, 4.0, 8.0
    arc[1, 2] = 100.0  # not in the tree
    sib = {(2, 2, 1): 0.5, (2, 3, 5): 0.25, (0, 0, -1): 0.125,
           (2, 2, 4): 1000.0}  # 4 is not 2's first right dependent
    gp = {(2, 3, 4): 16.0, (0, 2, 3): 32.0, (3, 2, 3): 1000.0}
    assert second_order_score(heads, arc) == 15.0
    assert second_order_score(heads, arc, sib, gp) == 15.0 + 0.875 + 48.0


@pytest.mark.parametrize("projective, single_root", SETTINGS)
def test_brute_force_first_order_matches_the_tree_decoders(projective, single_root):
    rng = np.random.default_rng(2)
    tree = DependencyTree(projective=projective, single_root=single_root)
    for _ in range(40):
        n = int(rng.integers(1, 7))
        arc = rng.normal(size=(n + 1, n + 1))
        heads, value = brute_force_map(n, arc, projective=projective, single_root=single_root)
        assert np.array_equal(heads, tree.map(arc))
        assert value == pytest.approx(second_order_score(heads, arc), abs=1e-12)


def test_brute_force_ties_and_higher_order_parts():
    # Equal scores: the first tree in lexicographic order.
    zero = np.zeros((4, 4))
    assert brute_force_map(3, zero)[0].tolist() == [-1, 0, 0, 0]
    assert brute_force_map(3, zero, single_root=True)[0].tolist() == [-1, 0, 1, 1]
    # A grandparent part, then a sibling chain, decide the tree.
    heads, value = brute_force_map(3, zero, grandparent_scores={(3, 1, 2): 1.0})
    assert heads.tolist() == [-1, 3, 1, 0] and value == 1.0
    sib = {(0, 0, 1): 1.0, (0, 1, 2): 1.0, (0, 2, 3): 1.0, (0, 3, 4): 1.0}
    heads, value = brute_force_map(3, zero, sib)
    assert heads.tolist() == [-1, 0, 0, 0] and value == 4.0
    # With a single root word the chain cannot be had; the root's right side
    # is START -> r -> STOP.
    heads, value = brute_force_map(3, zero, sib, single_root=True)
    assert value == 1.0 and heads[1] == 0


@pytest.mark.parametrize("single_root", [False, True])
def test_eisner_siblings_matches_brute_force(single_root):
    rng = np.random.default_rng(3 + single_root)
    for _ in range(200):
        n = int(rng.integers(1, 8))
        arc = rng.normal(size=(n + 1, n + 1))
        sib = random_sibling_scores(rng, n)
        if rng.random() < 0.3:  # sparse scores: most parts missing (0)
            sib = {k: v for k, v in sib.items() if rng.random() < 0.2}
        heads, value = eisner_siblings(arc, sib, single_root)
        trees, scores = all_tree_scores(n, arc, sib, projective=True, single_root=single_root)
        assert value == pytest.approx(scores.max(), abs=1e-9)
        assert value == pytest.approx(second_order_score(heads, arc, sib), abs=1e-9)
        assert is_projective(heads)
        assert not single_root or np.sum(heads == 0) == 1
        # The argmax too, when it is unique (almost always on random scores).
        top = np.sort(scores)[-2:] if len(scores) > 1 else scores
        if len(scores) == 1 or top[1] - top[0] > 1e-9:
            assert np.array_equal(heads, trees[np.argmax(scores)])


def test_eisner_siblings_first_order_and_root_constant():
    rng = np.random.default_rng(5)
    for single_root in (False, True):
        tree = DependencyTree(projective=True, single_root=single_root)
        for n in (1, 2, 9, 20):
            arc = rng.normal(size=(n + 1, n + 1))
            heads, value = eisner_siblings(arc, None, single_root)
            assert np.array_equal(heads, tree.map(arc))
            # The root's empty left side is a constant of every tree.
            shifted = eisner_siblings(arc, {(0, 0, -1): 5.0}, single_root)
            assert np.array_equal(shifted[0], heads) and shifted[1] == pytest.approx(value + 5)


def test_eisner_siblings_longer_sentences_are_self_consistent():
    rng = np.random.default_rng(6)
    for n in (12, 25):
        arc = rng.normal(size=(n + 1, n + 1))
        sib = random_sibling_scores(rng, n)
        for single_root in (False, True):
            heads, value = eisner_siblings(arc, sib, single_root)
            assert is_projective(heads)
            assert value == pytest.approx(second_order_score(heads, arc, sib), abs=1e-9)


def test_forbidden_arcs():
    arc = np.zeros((3, 3))
    arc[0, 1] = arc[0, 2] = -np.inf
    with pytest.raises(ValueError, match="finite score"):
        eisner_siblings(arc)
    arc[0, 1] = 0.0
    assert eisner_siblings(arc, single_root=True)[0].tolist() == [-1, 0, 1]
    assert brute_force_map(2, arc, single_root=True)[0].tolist() == [-1, 0, 1]


@pytest.mark.parametrize("call, match", [
    (lambda: all_trees(8), "1 to 7 words"),
    (lambda: all_trees(0), "1 to 7 words"),
    (lambda: tree_parts([-1, 2, 1]), "cycle"),
    (lambda: tree_parts([0, 0]), "must be -1"),
    (lambda: second_order_score([-1, 0], np.zeros((3, 3))), "n = 1 words"),
    (lambda: second_order_score([-1, 0, 1], np.zeros((3, 3)), {(1, 2, 0): 1.0}), "no sibling"),
    (lambda: second_order_score([-1, 0, 1], np.zeros((3, 3)), {(0, 2, 1): 1.0}), "no sibling"),
    (lambda: second_order_score([-1, 0, 1], np.zeros((3, 3)), {(1, 1, 0): 1.0}), "root"),
    (lambda: second_order_score([-1, 0, 1], np.zeros((3, 3)), {(1, 1, 1): 1.0}), "s == h"),
    (lambda: second_order_score([-1, 0, 1], np.zeros((3, 3)), {(2, 0, -1): 1.0}), "no sibling"),
    (lambda: second_order_score([-1, 0, 1], np.zeros((3, 3)), None, {(0, 0, 1): 1.0}),
     "no grandparent"),
    (lambda: second_order_score([-1, 0, 1], np.zeros((3, 3)), {(0, 1): 1.0}), "triples"),
    (lambda: brute_force_map(2, np.full((3, 3), np.nan)), "NaN"),
    (lambda: eisner_siblings(np.zeros((2, 3))), "square"),
])
def test_validation(call, match):
    with pytest.raises(ValueError, match=match):
        call()
