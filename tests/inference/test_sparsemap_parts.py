"""``sparsemap_parts``: SparseMAP on encoded potentials.

``sparsemap(structure, *potentials)`` is ``encode`` followed by the solve
``sparsemap_parts`` runs, so the two must agree to the last bit on every
structure, every solver and both compiled fast paths; and the flat scores a
user hands in directly are validated.
"""

import dataclasses
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import sksparse_struct.inference._sparsemap as sm
from sksparse_struct.inference import SparseMAPResult, sparsemap, sparsemap_parts
from sksparse_struct.structures import (
    XOR,
    Budget,
    DependencyTree,
    Matching,
    Parts,
    Sequence,
)


def _problems():
    rng = np.random.default_rng(0)
    tree_scores = rng.normal(size=(5, 5))
    tree_scores[1, 3] = -np.inf
    unary = rng.normal(size=(4, 3))
    unary[2, 1] = -np.inf
    return [
        ("xor", XOR(), (rng.normal(size=6),)),
        ("budget", Budget(2), (rng.normal(size=5),)),
        ("budget-exact", Budget(2, exact=True), (rng.normal(size=5),)),
        ("matching", Matching(), (rng.normal(size=(3, 4)),)),
        ("sequence", Sequence(), (unary, rng.normal(size=(3, 3)), rng.normal(size=3), None)),
        ("tree", DependencyTree(), (tree_scores,)),
        ("tree-multi", DependencyTree(single_root=False), (tree_scores,)),
        ("tree-projective", DependencyTree(projective=True), (tree_scores,)),
    ]


PROBLEMS = _problems()


def _assert_identical(a, b):
    assert a.n_iter == b.n_iter
    assert a.gap == b.gap
    assert a.objective == b.objective
    assert a.converged == b.converged
    assert a.method == b.method
    assert a.structure == b.structure
    np.testing.assert_array_equal(a.probabilities, b.probabilities)
    np.testing.assert_array_equal(a.vertices_u, b.vertices_u)
    np.testing.assert_array_equal(a.vertices_v, b.vertices_v)
    np.testing.assert_array_equal(a.u, b.u)
    np.testing.assert_array_equal(a.v, b.v)
    for x, y in zip(a.values, b.values):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("name, structure, potentials", PROBLEMS, ids=[p[0] for p in PROBLEMS])
@pytest.mark.parametrize("method", ["active_set", "pairwise"])
def test_bit_identical_to_sparsemap(name, structure, potentials, method):
    expected = sparsemap(structure, *potentials, method=method)
    parts = structure.encode(*potentials)
    result = sparsemap_parts(structure, parts, method=method)
    _assert_identical(result, expected)
    assert result.parts is parts  # nothing copied when nothing needs to be


@pytest.mark.parametrize("case", ["tree", "projective_tree", "sequence"])
def test_compiled_paths_are_taken(case, monkeypatch):
    # The compiled loops read parts.eta_u and parts.context directly: both
    # entry points must reach them (and give what they give through sparsemap).
    structure, potentials = {
        "tree": (DependencyTree(), PROBLEMS[5][2]),
        "projective_tree": (DependencyTree(projective=True), PROBLEMS[5][2]),
        "sequence": (Sequence(), PROBLEMS[4][2]),
    }[case]
    calls = []
    original = sm._compiled_oracle

    def spy(*args):
        taken = original(*args)
        calls.append(taken is not None)
        return taken

    monkeypatch.setattr(sm, "_compiled_oracle", spy)
    expected = sparsemap(structure, *potentials)
    result = sparsemap_parts(structure, structure.encode(*potentials))
    assert calls == [True, True]
    _assert_identical(result, expected)


def test_warm_start_and_options_pass_through():
    structure, potentials = PROBLEMS[4][1], PROBLEMS[4][2]
    parts = structure.encode(*potentials)
    first = sparsemap_parts(structure, parts)
    for kwargs in ({"init": first}, {"init": first.values[:1]}, {"tol": 1e-12},
                   {"method": "away_step", "max_iter": 50}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            expected = sparsemap(structure, *potentials, **kwargs)
            result = sparsemap_parts(structure, parts, **kwargs)
        _assert_identical(result, expected)


def test_modified_scores_solve_the_modified_problem():
    # SparseMAP on encode(scores) + c equals sparsemap on scores + c.
    rng = np.random.default_rng(1)
    scores = rng.normal(size=(4, 4))
    cost = rng.uniform(size=(4, 4))
    structure = DependencyTree()
    parts = structure.encode(scores)
    flat_cost, _ = structure.decode_backward(cost, parts)
    shifted = dataclasses.replace(parts, eta_u=parts.eta_u + flat_cost)
    result = sparsemap_parts(structure, shifted)
    expected = sparsemap(structure, scores + cost)
    np.testing.assert_allclose(result.u, expected.u, atol=1e-12)
    assert result.objective == pytest.approx(expected.objective, abs=1e-12)


def test_non_contiguous_scores_are_copied():
    structure = DependencyTree()
    parts = structure.encode(PROBLEMS[5][2][0])
    strided = np.empty(2 * parts.eta_u.shape[0])
    strided[::2] = parts.eta_u
    result = sparsemap_parts(structure, dataclasses.replace(parts, eta_u=strided[::2]))
    assert result.parts.eta_u.flags.c_contiguous
    _assert_identical(result, sparsemap_parts(structure, parts))


def test_not_converged_warns_with_the_entry_point_name():
    structure, potentials = PROBLEMS[4][1], PROBLEMS[4][2]
    with pytest.warns(ConvergenceWarning, match="sparsemap_parts .method='frank_wolfe'"):
        sparsemap_parts(structure, structure.encode(*potentials), method="frank_wolfe",
                        max_iter=2)


def _sequence_parts():
    return Sequence().encode(np.zeros((3, 2)), np.zeros((2, 2)))


@pytest.mark.parametrize(
    "parts, match",
    [
        ("scores", "parts must be a sksparse_struct.structures.Parts"),
        ((np.zeros(6), np.zeros(4)), "parts must be a sksparse_struct.structures.Parts"),
        (dataclasses.replace(_sequence_parts(), eta_u=list(np.zeros(6))),
         r"parts.eta_u must be a 1-D float64 array, got a list"),
        (dataclasses.replace(_sequence_parts(), eta_u=np.zeros(6, dtype=np.float32)),
         r"parts.eta_u must be a 1-D float64 array, got an array of dtype float32"),
        (dataclasses.replace(_sequence_parts(), eta_v=np.zeros((2, 2))),
         r"parts.eta_v must be a 1-D float64 array, got an array of dtype float64 and "
         r"shape \(2, 2\)"),
        (dataclasses.replace(_sequence_parts(), eta_u=np.r_[0.0, np.nan, np.zeros(4)]),
         "parts.eta_u contains NaN at index 1"),
        (dataclasses.replace(_sequence_parts(), eta_v=np.r_[0.0, 0.0, np.inf, 0.0]),
         r"parts.eta_v contains \+inf at index 2"),
        (dataclasses.replace(_sequence_parts(), eta_u=np.zeros(5)),
         r"parts.eta_u has 5 and parts.eta_v 4 entries, which are not the lengths Sequence\(\)"),
        (dataclasses.replace(_sequence_parts(), eta_v=np.zeros(3)),
         "parts.eta_u has 6 and parts.eta_v 3 entries"),
        (dataclasses.replace(_sequence_parts(), context=None),
         "encodes for the context None"),
        (Parts(np.zeros(0), np.zeros(0), (0, 2, False, False)), "parts.eta_u is empty"),
    ],
)
def test_invalid_parts(parts, match):
    with pytest.raises(ValueError, match=match):
        sparsemap_parts(Sequence(), parts)


@pytest.mark.parametrize(
    "structure, parts",
    [
        (DependencyTree(), Parts(np.zeros(9), np.zeros(2), 3)),  # trees have no higher-order parts
        (DependencyTree(), Parts(np.zeros(8), np.zeros(0), 3)),
        (XOR(), Parts(np.zeros(3), np.zeros(0), (4,))),
        (Matching(), Parts(np.zeros(6), np.zeros(1), (2, 3))),
    ],
)
def test_sizes_inconsistent_with_the_context(structure, parts):
    with pytest.raises(ValueError, match="which are not the lengths"):
        sparsemap_parts(structure, parts)


def test_solver_arguments_are_validated_as_in_sparsemap():
    parts = _sequence_parts()
    with pytest.raises(ValueError, match="structure must be an instance"):
        sparsemap_parts("Sequence", parts)
    with pytest.raises(ValueError, match="method must be one of"):
        sparsemap_parts(Sequence(), parts, method="newton")
    with pytest.raises(ValueError, match="max_iter must be an integer >= 1, got 0"):
        sparsemap_parts(Sequence(), parts, max_iter=0)
    with pytest.raises(ValueError, match="tol"):
        sparsemap_parts(Sequence(), parts, tol=-1.0)
    # Keyword-only solver options, as the signature promises.
    with pytest.raises(TypeError):
        sparsemap_parts(Sequence(), parts, "active_set")


def test_forbidden_parts_stay_unused():
    parts = XOR().encode([1.0, -np.inf, 0.5])
    result = sparsemap_parts(XOR(), parts)
    assert isinstance(result, SparseMAPResult)
    assert result.u[1] == 0.0
    assert [y for y, _ in result.support] == [0, 2]
