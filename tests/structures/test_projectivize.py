"""Lifting non-projective gold trees for projective training."""

import itertools

import numpy as np

from sksparse_struct.structures._tree_fast import lift_to_projective

from .._helpers import is_projective as _projective
from .._helpers import is_tree as _is_tree


def _lift(trees):
    offsets = np.cumsum([0] + [len(t) for t in trees]).astype(np.int64)
    flat = np.concatenate([np.asarray(t, dtype=np.int64) for t in trees])
    lifts = lift_to_projective(flat, offsets)
    return [flat[offsets[i]:offsets[i + 1]].tolist() for i in range(len(trees))], lifts


def test_known_example():
    # 1 -> 3 crosses 2 -> 4: the shortest non-projective arc is lifted.
    tree = [-1, 2, 0, 1, 2]
    assert not _projective(tree)
    (lifted,), lifts = _lift([tree])
    assert _projective(lifted) and lifts == 1
    assert lifted == [-1, 2, 0, 2, 2]


def test_all_small_trees():
    rng = np.random.RandomState(0)
    for n in range(1, 7):
        trees = []
        for heads in itertools.product(range(n + 1), repeat=n):
            tree = [-1, *heads]
            if any(h == m for m, h in enumerate(tree) if m > 0) or not _is_tree(tree):
                continue
            trees.append(tree)
        if len(trees) > 400:
            trees = [trees[i] for i in rng.choice(len(trees), 400, replace=False)]
        lifted, _ = _lift(trees)
        for before, after in zip(trees, lifted):
            assert _is_tree(after) and _projective(after)
            if _projective(before):
                assert after == before
            # Lifting never adds root words (a single root stays single).
            n_roots = sum(1 for m in range(1, n + 1) if before[m] == 0)
            assert sum(1 for m in range(1, n + 1) if after[m] == 0) == n_roots or n_roots > 1
            # A word is only ever moved up to one of its ancestors.
            for m in range(1, n + 1):
                a = before[m]
                ancestors = {a}
                while a != 0:
                    a = before[a]
                    ancestors.add(a)
                assert after[m] in ancestors
