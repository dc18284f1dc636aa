"""The compiled active-set loop for non-projective trees against the generic loop.

``sparsemap(DependencyTree(), scores)`` runs ``_solve_active_set_tree`` (one
compiled call); the generic Python loop stays the reference. Both must give
the same support, probabilities, iterations and gap to the last bit.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sksparse_struct.structures._base import ORACLE_TREE
from tests._helpers import compiled_kind
import sksparse_struct.inference._sparsemap as sm
from sksparse_struct.inference import sparsemap
from sksparse_struct.structures import DependencyTree


def _both(monkeypatch, tree, scores, **kwargs):
    assert compiled_kind(tree, "active_set", None) == ORACLE_TREE
    fast = sparsemap(tree, scores, **kwargs)
    with monkeypatch.context() as mp:
        mp.setattr(sm, "_compiled_oracle", lambda *args: None)
        generic = sparsemap(tree, scores, **kwargs)
    return fast, generic


def _assert_identical(fast, generic):
    assert fast.n_iter == generic.n_iter
    assert fast.converged == generic.converged
    assert fast.gap == generic.gap
    assert fast.objective == generic.objective
    np.testing.assert_array_equal(fast.probabilities, generic.probabilities)
    np.testing.assert_array_equal(fast.vertices_u, generic.vertices_u)
    np.testing.assert_array_equal(fast.u, generic.u)
    assert len(fast.values) == len(generic.values)
    for a, b in zip(fast.values, generic.values):
        assert a.dtype == np.int64
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("single_root", [True, False])
@pytest.mark.parametrize("n", [1, 2, 4, 10, 20])
@pytest.mark.parametrize("kind", ["normal", "ties", "forbidden", "large"])
def test_fast_tree_loop_matches_generic(monkeypatch, n, single_root, kind):
    rng = np.random.default_rng(n + 100 * single_root)
    scores = rng.standard_normal((n + 1, n + 1))
    if kind == "ties":
        scores = np.round(scores)
    elif kind == "forbidden":
        scores[rng.random(scores.shape) < 0.3] = -np.inf
        scores[0, 1] = 0.0  # keep a chain root -> 1 -> 2 -> ... allowed
        for m in range(2, n + 1):
            scores[m - 1, m] = 0.0
    elif kind == "large":
        scores = 1e4 * scores
    fast, generic = _both(monkeypatch, DependencyTree(single_root=single_root), scores)
    _assert_identical(fast, generic)
    assert fast.converged


@pytest.mark.parametrize("max_iter", [1, 2, 4])
def test_fast_tree_loop_not_converged_matches_generic(monkeypatch, max_iter):
    scores = np.random.default_rng(3).standard_normal((11, 11))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fast, generic = _both(monkeypatch, DependencyTree(), scores, max_iter=max_iter)
    assert sum(issubclass(w.category, ConvergenceWarning) for w in caught) == 2
    assert fast.n_iter == max_iter and not fast.converged
    _assert_identical(fast, generic)


def test_fast_tree_loop_no_tree_raises():
    scores = np.full((4, 4), -np.inf)
    scores[1, 2] = scores[2, 3] = 0.0
    with pytest.raises(ValueError, match="no dependency tree"):
        sparsemap(DependencyTree(), scores)


def test_fast_path_only_where_it_applies():
    assert compiled_kind(DependencyTree(projective=True), "active_set", None) != ORACLE_TREE
    assert compiled_kind(DependencyTree(), "pairwise", None) != ORACLE_TREE
    assert compiled_kind(DependencyTree(), "active_set", [np.array([-1, 0])]) != ORACLE_TREE


def test_subclass_with_its_own_oracle_runs_the_generic_loop():
    # The compiled loop would ignore an overridden oracle: compiled_oracle
    # declines for such subclasses, so SparseMAP calls the subclass' oracle.
    calls = []

    class CountingTree(DependencyTree):
        def oracle(self, parts, eta_u, eta_v):
            calls.append(1)
            return super().oracle(parts, eta_u, eta_v)

    scores = np.random.default_rng(0).standard_normal((5, 5))
    assert compiled_kind(CountingTree(), "active_set", None) is None
    result = sparsemap(CountingTree(), scores)
    assert calls
    np.testing.assert_allclose(result.u, sparsemap(DependencyTree(), scores).u, atol=1e-12)
