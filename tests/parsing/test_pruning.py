"""The first-order arc pruner of second-order parsing: rule, repair, report."""

import itertools

import numpy as np
import pytest

from sksparse_struct.parsing import _pruning_fast
from sksparse_struct.parsing._pruning import (
    PruningReport,
    part_counts,
    prune_arcs,
    pruning_report,
)
from sksparse_struct.structures import DependencyTree

from ._second_order_reference import all_trees

SETTINGS = [(p, s) for p in (False, True) for s in (False, True)]


def arcs(mask):
    return {(int(h), int(m)) for h, m in np.argwhere(mask)}


def selected(P, max_heads, threshold):
    """The rule alone, before gold arcs and repair."""
    mask = np.zeros(P.shape, dtype=bool)
    _pruning_fast.select_heads(np.asarray(P, dtype=np.float64), max_heads, threshold, mask)
    return mask


def has_tree(mask, projective, single_root):
    """Whether some tree of the kind asked for uses only candidate arcs."""
    n = mask.shape[0] - 1
    trees = all_trees(n, projective, single_root)
    return bool(mask[trees[:, 1:], np.arange(1, n + 1)].all(axis=1).any())


def reaches_all(mask, source):
    """Whether every word is reachable from ``source`` through candidate arcs."""
    n = mask.shape[0] - 1
    seen = {source}
    todo = [source]
    while todo:
        h = todo.pop()
        for m in np.flatnonzero(mask[h]):
            if m not in seen:
                seen.add(int(m))
                todo.append(int(m))
    return seen >= set(range(1, n + 1))


def fewest_arcs_from(mask, source):
    """Fewest arcs ``source -> v`` after which ``source`` reaches every word (brute force)."""
    n = mask.shape[0] - 1
    words = [v for v in range(1, n + 1) if v != source]
    for k in range(n + 1):
        for chosen in itertools.combinations(words, k):
            trial = mask.copy()
            trial[source, list(chosen)] = True
            if reaches_all(trial, source):
                return k
    raise AssertionError("unreachable")


def random_posteriors(rng, n, sparsity):
    """Column-normalised posteriors with many exact zeros."""
    P = rng.dirichlet(np.full(n + 1, 0.3), size=n + 1).T
    P[rng.random(P.shape) < sparsity] = 0.0
    P[np.arange(n + 1), np.arange(n + 1)] = 0.0
    P[:, 0] = 0.0
    P[:, 1:] /= np.maximum(P[:, 1:].sum(axis=0), 1e-300)
    return P


# -- the rule ---------------------------------------------------------------

def test_rule_by_hand():
    P = np.zeros((4, 4))
    P[[0, 2, 3], 1] = [0.5, 0.3, 0.2]
    P[[0, 1, 3], 2] = [0.6, 0.3, 0.1]
    P[[0, 1, 2], 3] = [0.001, 0.9, 0.099]
    # At most two heads per word.
    assert arcs(selected(P, 2, 0.0)) == {(0, 1), (2, 1), (0, 2), (1, 2), (1, 3), (2, 3)}
    # Within half of the best: 0.3 >= 0.25 stays, 0.2 goes; 0.099 < 0.45 goes.
    assert arcs(selected(P, 10, 0.5)) == {(0, 1), (2, 1), (0, 2), (1, 2), (1, 3)}
    assert arcs(selected(P, 10, 1e-4)) == {(h, m) for h in range(4) for m in range(1, 4)
                                           if P[h, m] > 0}
    # Connected already: the repair adds nothing in any mode.
    for projective, single_root in SETTINGS:
        mask = prune_arcs(P, 2, 0.0, projective=projective, single_root=single_root)
        extra = {(0, 1), (1, 2), (2, 3)} if projective else set()
        assert arcs(mask) == arcs(selected(P, 2, 0.0)) | extra


def test_best_head_always_kept_and_ties_to_the_lower_head():
    P = np.zeros((4, 4))
    P[[0, 2, 3], 1] = [0.2, 0.4, 0.4]
    P[[0, 1, 3], 2] = 1 / 3
    P[[1, 2], 3] = [0.5, 0.5]
    mask = selected(P, 1, 0.9999)
    assert arcs(mask) == {(2, 1), (0, 2), (1, 3)}
    assert arcs(selected(P, 2, 0.0)) == {(2, 1), (3, 1), (0, 2), (1, 2), (1, 3), (2, 3)}


def test_zero_threshold_keeps_max_heads_even_at_zero_posterior():
    P = np.zeros((5, 5))
    P[0, 1:] = 1.0
    assert selected(P, 3, 0.0).sum(axis=0).tolist() == [0, 3, 3, 3, 3]
    assert selected(P, 3, 1e-4).sum(axis=0).tolist() == [0, 1, 1, 1, 1]
    # max_heads beyond the n heads a word can have.
    assert selected(P, 10, 0.0).sum(axis=0).tolist() == [0, 4, 4, 4, 4]


def test_gold_arcs_are_kept_only_when_given():
    P = np.zeros((4, 4))
    P[0, 1], P[1, 2], P[2, 3] = 1.0, 1.0, 1.0
    P[3, 1] = 1e-9  # gold, far below the threshold
    gold = [-1, 3, 1, 0]
    for projective, single_root in SETTINGS:
        plain = prune_arcs(P, 10, 1e-4, projective=projective, single_root=single_root)
        kept = prune_arcs(P, 10, 1e-4, gold_heads=gold, projective=projective,
                          single_root=single_root)
        assert (3, 1) not in arcs(plain) and (0, 3) not in arcs(plain)
        assert arcs(kept) == arcs(plain) | {(3, 1), (1, 2), (0, 3)}


def test_unused_entries_and_rounding_are_ignored():
    P = np.zeros((3, 3))
    P[0, 1], P[1, 2], P[0, 2] = 1.0, 0.7, 0.3
    noisy = P.copy()
    noisy[:, 0] = np.nan
    noisy[1, 1] = -5.0
    noisy[2, 1] = -1e-12  # rounding in a posterior
    noisy[0, 1] = 1.0 + 1e-9
    assert np.array_equal(prune_arcs(noisy, threshold=0.0), prune_arcs(P, threshold=0.0))
    mask = prune_arcs(noisy, threshold=0.0)
    assert not mask[:, 0].any() and not mask.diagonal().any()


# -- the repair -------------------------------------------------------------

@pytest.mark.parametrize("projective, single_root", SETTINGS)
def test_repair_leaves_a_tree_among_the_candidates(projective, single_root):
    rng = np.random.default_rng(int(projective) * 2 + int(single_root))
    n_repaired = 0
    for _ in range(150):
        n = int(rng.integers(1, 7))
        P = random_posteriors(rng, n, sparsity=rng.choice([0.0, 0.5, 0.8]))
        K = int(rng.integers(1, 4))
        threshold = float(rng.choice([0.0, 1e-4, 0.3, 0.9]))
        mask = prune_arcs(P, K, threshold, projective=projective, single_root=single_root)
        assert has_tree(mask, projective, single_root)
        assert not mask[:, 0].any() and not mask.diagonal().any()
        before = selected(P, K, threshold)
        assert (mask >= before).all()
        added = arcs(mask) - arcs(before)
        n_repaired += bool(added)
        if projective:
            assert added <= {(m - 1, m) for m in range(1, n + 1)}
        elif not single_root:
            # Root arcs only, and as few as make every word reachable.
            assert all(h == 0 for h, _ in added)
            assert len(added) == fewest_arcs_from(before, 0)
        else:
            # 0 -> r and arcs from r only, as few as any word r would need.
            roots = {m for h, m in added if h == 0}
            sources = {h for h, _ in added if h != 0}
            assert len(roots) <= 1 and len(sources) <= 1
            if sources:
                assert mask[0, sources.pop()]
            fewest = min(int(not before[0, w]) + fewest_arcs_from(before, w)
                         for w in range(1, n + 1))
            assert len(added) == fewest
    assert n_repaired > 20  # the repairs were exercised


def test_single_root_repair_by_hand():
    # Word 1 reaches 2 only; 3 reaches everything but is no root candidate.
    mask = np.zeros((4, 4), dtype=bool)
    mask[0, 1] = mask[1, 2] = mask[3, 1] = mask[2, 3] = True
    P = np.zeros((4, 4))
    P[0, 1], P[1, 2], P[3, 1], P[2, 3] = 0.6, 1.0, 0.4, 1.0
    # The chain 0 -> 1 -> 2 -> 3 already exists: nothing added.
    assert arcs(prune_arcs(P, 2, 1e-4, single_root=True)) == arcs(mask)
    # Two words from the root, each reaching only itself and its cycle.
    P = np.zeros((5, 5))
    P[0, 1], P[2, 1] = 0.7, 0.3
    P[1, 2] = 1.0
    P[0, 3], P[4, 3] = 0.9, 0.1
    P[3, 4] = 1.0
    multi = prune_arcs(P, 2, 0.05, single_root=False)
    assert arcs(multi) == {(0, 1), (2, 1), (1, 2), (0, 3), (4, 3), (3, 4)}
    single = prune_arcs(P, 2, 0.05, single_root=True)
    # One arc either way (1 -> 3 or 3 -> 1, or their cycles); 3 has the
    # larger root posterior.
    assert arcs(single) == arcs(multi) | {(3, 1)}


def test_multi_root_repair_takes_a_source_of_each_unreachable_component():
    # The cycle 3 <-> 4 leads to 2, which leads to 1: one root arc, into the
    # cycle (attaching the first unreachable word, 1, would take three).
    P = np.zeros((5, 5))
    P[2, 1] = P[3, 2] = P[4, 3] = P[3, 4] = 1.0
    chain = {(2, 1), (3, 2), (4, 3), (3, 4)}
    assert arcs(prune_arcs(P, 1, 0.5, single_root=False)) == chain | {(0, 3)}
    # With one root word: 3 (or 4) needs only the root arc, 1 or 2 two arcs.
    assert arcs(prune_arcs(P, 1, 0.5, single_root=True)) == chain | {(0, 3)}


@pytest.mark.parametrize("projective, single_root", SETTINGS)
def test_repair_on_long_sentences(projective, single_root):
    # The tree decoders find a tree among the candidates (they raise otherwise).
    rng = np.random.default_rng(7)
    tree = DependencyTree(projective=projective, single_root=single_root)
    for n in (15, 40, 90):
        P = random_posteriors(rng, n, sparsity=0.9)
        mask = prune_arcs(P, 1, 0.5, projective=projective, single_root=single_root)
        heads = tree.map(np.where(mask, 0.0, -np.inf))
        assert mask[heads[1:], np.arange(1, n + 1)].all()


# -- the report -------------------------------------------------------------

def test_report_by_hand():
    a = np.zeros((4, 4), dtype=bool)
    a[0, 1] = a[0, 2] = a[2, 1] = a[2, 3] = a[1, 3] = True
    b = np.zeros((3, 3), dtype=bool)
    b[0, 1] = b[1, 2] = b[0, 2] = True
    # a: L_r = (2, 1, 1, 0), L_l = (0, 0, 1, 0), in = (-, 2, 1, 2).
    assert part_counts(a) == (5, 7 + 4 + 6 + 2, 2 * 1 + 1 * 2, 2 * 4 + 1 * 6 + 2 * 2)
    # b: L_r = (2, 1, 0), L_l = 0, in = (-, 1, 2).
    assert part_counts(b) == (3, 7 + 4 + 2, 1, 4 + 2 * 2)
    report = pruning_report([a, b], [[-1, 2, 0, 2], [-1, 2, 0]])
    assert report == PruningReport(n_sentences=2, n_words=5, n_gold_kept=4, n_covered=1,
                                   n_arcs=8, n_sibling_parts=32, n_grandparent_parts=5,
                                   n_grandsibling_parts=26)
    assert report.recall == 0.8 and report.heads_per_word == 1.6 and report.covered == 0.5
    assert report.mean_length == 2.5 and report.arcs_per_sentence == 4.0
    assert report.sibling_parts_per_sentence == 16.0
    assert report.grandparent_parts_per_sentence == 2.5
    assert report.grandsibling_parts_per_sentence == 13.0


def test_part_counts_match_the_parts():
    # The formulas against the parts themselves, built as spec 1.1 says:
    # siblings on every pair of a side's candidates plus START / STOP,
    # grandparents on every pair of candidate arcs g -> h -> m (2-cycles too).
    rng = np.random.default_rng(8)
    for _ in range(30):
        n = int(rng.integers(1, 9))
        mask = rng.random((n + 1, n + 1)) < rng.random()
        mask[:, 0] = False
        mask[np.arange(n + 1), np.arange(n + 1)] = False
        siblings = 0
        for h in range(n + 1):
            for side in (range(h + 1, n + 1), range(h - 1, 0, -1)):
                states = [h] + [m for m in side if mask[h, m]] + ["stop"]
                siblings += len(list(itertools.combinations(states, 2)))
        grandparents = sum(bool(mask[g, h] and mask[h, m]) for g in range(n + 1)
                           for h in range(1, n + 1) for m in range(1, n + 1))
        counts = part_counts(mask)
        assert counts[:3] == (int(mask.sum()), siblings, grandparents)


# -- validation -------------------------------------------------------------

@pytest.mark.parametrize("P, kwargs, match", [
    (np.zeros((3, 4)), {}, "square"),
    (np.zeros((1, 1)), {}, "n >= 1"),
    (np.zeros((2, 2, 2)), {}, "square"),
    (np.array([[np.nan, 1], [np.nan, np.nan]]), {"threshold": 0.0}, None),  # unused entries
    (np.array([[0, np.nan], [0, 0]]), {}, "NaN at the arc 0 -> 1"),
    (np.array([[0, -0.1, 0], [0, 0, 1], [0, 1, 0]]), {}, "probabilities"),
    (np.array([[0, 3.0], [0, 0]]), {}, "not scores"),
    (np.array([["a", "b"], ["c", "d"]]), {}, "real numbers"),
    (np.eye(2)[::-1], {"max_heads": 0}, "max_heads"),
    (np.eye(2)[::-1], {"max_heads": 1.5}, "max_heads"),
    (np.eye(2)[::-1], {"max_heads": True}, "max_heads"),
    (np.eye(2)[::-1], {"threshold": 1.0}, "threshold"),
    (np.eye(2)[::-1], {"threshold": -0.1}, "threshold"),
    (np.eye(2)[::-1], {"threshold": "0.1"}, "threshold"),
    (np.eye(2)[::-1], {"projective": 1}, "projective"),
    (np.eye(2)[::-1], {"single_root": None}, "single_root"),
    (np.eye(3)[::-1], {"gold_heads": [-1, 0]}, "length n \\+ 1 = 3"),
    (np.eye(3)[::-1], {"gold_heads": [0, 0, 1]}, "must be -1"),
    (np.eye(3)[::-1], {"gold_heads": [-1, 2, 1]}, "cycle"),
    (np.eye(3)[::-1], {"gold_heads": [-1, 0, 3]}, "outside"),
])
def test_prune_arcs_validation(P, kwargs, match):
    if match is None:
        prune_arcs(P, **kwargs)
        return
    with pytest.raises(ValueError, match=match):
        prune_arcs(P, **kwargs)


def test_report_validation():
    mask = np.zeros((3, 3), dtype=bool)
    with pytest.raises(ValueError, match="2 masks but 1 gold"):
        pruning_report([mask, mask], [[-1, 0, 1]])
    with pytest.raises(ValueError, match="at least one"):
        pruning_report([], [])
    with pytest.raises(ValueError, match="boolean"):
        pruning_report([mask.astype(int)], [[-1, 0, 1]])
    with pytest.raises(ValueError, match="square"):
        pruning_report([mask[:2]], [[-1, 0, 1]])
    bad = mask.copy()
    bad[1, 1] = True
    with pytest.raises(ValueError, match="diagonal"):
        pruning_report([bad], [[-1, 0, 1]])
    with pytest.raises(ValueError, match="length n \\+ 1 = 3"):
        pruning_report([mask], [[-1, 0]])
