"""ProjectiveSiblingTree (second-order Eisner) against enumeration and independent references.

The oracle is checked against every projective tree scored from the
definition (the parts of ``tests/parsing/_second_order_reference``, not the
structure's own indicators) and against the reference DP; SparseMAP's
compiled loop against the generic Python loop (to the last bit), against a
QP over the explicit convex hull, and its backward pass against finite
differences.
"""

import pickle

import numpy as np
import pytest

from sksparse_struct.inference import FactorGraph, ad3, sparsemap, sparsemap_backward
from sksparse_struct.structures import DependencyTree, ProjectiveSiblingTree
from sksparse_struct.structures._base import ORACLE_SIBLING_TREE, dot_masked
from sksparse_struct.structures._sibling_tree import _part_index, sibling_part_slots
from tests._helpers import all_trees, generic_sparsemap as _generic, hull_qp
from tests.parsing import _second_order_reference as ref


def _potentials(rng, n, mask=0.0, integer=False, scale=1.0):
    """Random arc and sibling scores; ``mask`` of the parts forbidden (never all trees)."""
    draw = (lambda shape: rng.integers(-2, 3, size=shape).astype(float)) if integer else (
        lambda shape: scale * rng.standard_normal(shape))
    arc = draw((n + 1, n + 1))
    sib = draw((n + 1, n + 1, n + 3))
    if mask:
        arc[rng.random(arc.shape) < mask] = -np.inf
        sib[rng.random(sib.shape) < mask] = -np.inf
    return arc, sib


def _sibling_dict(sib, n):
    """The sibling scores as the reference's ``{(h, m, s): score}`` (every part)."""
    h, m, s = _part_index(n)
    return {(int(a), int(b), int(c) if c <= n + 1 else -1): float(sib[a, b, c])
            for a, b, c in zip(h, m, s)}


def _reference_scores(n, arc, sib, single_root):
    """Every projective tree and its score from the reference's definition of the parts."""
    trees = all_trees(n, True, single_root)
    d = _sibling_dict(sib, n)
    scores = []
    for heads in trees:
        total = sum(arc[heads[m], m] for m in range(1, n + 1))
        rows, _ = ref.tree_parts(heads)
        # The root's left side is always empty: (0, 0, -1) is no part here.
        total += sum(d[tuple(int(x) for x in r)] for r in rows if tuple(r) != (0, 0, -1))
        scores.append(total)
    return trees, np.array(scores)


@pytest.mark.parametrize("single_root", [False, True])
# The masked scores (forbidden parts) take ~5 s a case: with --runslow.
@pytest.mark.parametrize("mask", [0.0, pytest.param(0.05, marks=pytest.mark.slow)])
def test_oracle_matches_enumeration_and_the_reference_dp(single_root, mask):
    rng = np.random.default_rng(int(single_root) * 10 + int(mask * 100))
    structure = ProjectiveSiblingTree(single_root=single_root)
    checked = 0
    for n in range(1, 7):
        for _ in range(12):
            arc, sib = _potentials(rng, n, mask)
            trees, scores = _reference_scores(n, arc, sib, single_root)
            if not np.isfinite(scores).any():
                with pytest.raises(ValueError, match="no projective dependency tree"):
                    structure.map(arc, sib)
                continue
            heads = structure.map(arc, sib)
            assert structure.score(heads, arc, sib) == pytest.approx(scores.max(), abs=1e-9)
            best = trees[int(np.argmax(scores))]
            assert np.array_equal(heads, best)  # continuous scores: no ties
            ref_heads, ref_value = ref.eisner_siblings(arc, _sibling_dict(sib, n), single_root)
            assert np.array_equal(heads, ref_heads)
            checked += 1
    assert checked > 30


def test_indicators_are_the_reference_parts_of_every_tree():
    structure = ProjectiveSiblingTree(single_root=False)
    for n in (1, 3, 5):
        parts = structure.encode(np.zeros((n + 1, n + 1)))
        h, m, s = _part_index(n)
        names = [(int(a), int(b), int(c) if c <= n + 1 else -1) for a, b, c in zip(h, m, s)]
        assert len(set(names)) == len(names) == parts.eta_v.shape[0]
        np.testing.assert_array_equal(sibling_part_slots(np.array(names), n),
                                      np.arange(len(names)))
        for heads in all_trees(n, True, False):
            m_y, n_y = structure.indicators(heads, parts)
            rows, _ = ref.tree_parts(heads)
            expected = {tuple(int(x) for x in r) for r in rows} - {(0, 0, -1)}
            assert {names[i] for i in np.flatnonzero(n_y)} == expected
            assert n_y.sum() == len(expected) == 3 * n + 1
            np.testing.assert_array_equal(
                m_y, DependencyTree(projective=True, single_root=False).indicators(
                    heads, DependencyTree().encode(np.zeros((n + 1, n + 1))))[0])


def test_ties_are_deterministic():
    structure = ProjectiveSiblingTree(single_root=False)
    zero = np.zeros((4, 4))
    # Every tree scores 0: the chart's first maximum, the same at every call.
    first = structure.map(zero)
    assert first.tolist() == structure.map(zero).tolist()
    assert first.tolist() == ref.eisner_siblings(zero, None, False)[0].tolist()
    rng = np.random.default_rng(3)
    for _ in range(30):
        n = int(rng.integers(2, 7))
        arc, sib = _potentials(rng, n, integer=True)
        heads = structure.map(arc, sib)
        ref_heads, ref_value = ref.eisner_siblings(arc, _sibling_dict(sib, n), False)
        assert np.array_equal(heads, ref_heads)
        assert structure.score(heads, arc, sib) == ref_value


@pytest.mark.parametrize("kind", ["normal", "ties", "forbidden"])
def test_compiled_loop_matches_generic(kind):
    rng = np.random.default_rng({"normal": 1, "ties": 2, "forbidden": 3}[kind])
    for single_root in (False, True):
        structure = ProjectiveSiblingTree(single_root=single_root)
        for n in (1, 2, 4, 7):
            arc, sib = _potentials(rng, n, mask=0.15 if kind == "forbidden" else 0.0,
                                   integer=kind == "ties", scale=0.5)
            parts = structure.encode(arc, sib)
            assert structure.compiled_oracle(parts).kind == ORACLE_SIBLING_TREE
            outcome = []
            for solve in (sparsemap, _generic):
                try:
                    outcome.append(solve(structure, arc, sib))
                except ValueError as exc:
                    outcome.append(str(exc))
            fast, generic = outcome
            if isinstance(fast, str) or isinstance(generic, str):
                assert fast == generic
                continue
            assert fast.n_iter == generic.n_iter and fast.converged
            assert fast.objective == generic.objective
            for a, b in zip(fast.values, generic.values):
                np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(fast.probabilities, generic.probabilities)
            np.testing.assert_array_equal(fast.u, generic.u)
            np.testing.assert_array_equal(fast.v, generic.v)


def test_sparsemap_is_the_qp_over_the_convex_hull():
    rng = np.random.default_rng(7)
    for single_root in (False, True):
        structure = ProjectiveSiblingTree(single_root=single_root)
        for n in (2, 3, 4):
            arc, sib = _potentials(rng, n, scale=0.4)
            parts = structure.encode(arc, sib)
            M, theta = [], []
            for heads in all_trees(n, True, single_root):
                m_y, n_y = structure.indicators(heads, parts)
                M.append(m_y)
                theta.append(dot_masked(parts.eta_u, m_y) + dot_masked(parts.eta_v, n_y))
            M, theta = np.array(M), np.array(theta)
            res = sparsemap(structure, arc, sib)
            objective, u = hull_qp(M, theta)
            assert res.objective == pytest.approx(objective, abs=1e-9)
            np.testing.assert_allclose(res.u, u, atol=1e-6)
            assert len(res.values) > 1 or n == 2


def test_sparsemap_backward_matches_finite_differences():
    rng = np.random.default_rng(11)
    n = 3
    structure = ProjectiveSiblingTree(single_root=False)
    arc, sib = _potentials(rng, n, scale=0.3)
    res = sparsemap(structure, arc, sib)
    assert len(res.values) > 1
    d = tuple(rng.standard_normal(x.shape) for x in res.marginals)
    grads = sparsemap_backward(res, *d)
    h, m, s = _part_index(n)
    used = np.zeros(sib.shape, dtype=bool)
    used[h, m, s] = True

    def loss(a, b):
        return sum((x * y).sum() for x, y in zip(sparsemap(structure, a, b).marginals, d))

    eps = 1e-6
    fd_arc = np.zeros(arc.shape)
    for index in zip(*np.nonzero(~np.eye(n + 1, dtype=bool) & (np.arange(n + 1) > 0))):
        plus, minus = arc.copy(), arc.copy()
        plus[index] += eps
        minus[index] -= eps
        fd_arc[index] = (loss(plus, sib) - loss(minus, sib)) / (2 * eps)
    np.testing.assert_allclose(grads[0], fd_arc, atol=1e-6)
    fd_sib = np.zeros(sib.shape)
    for index in zip(*np.nonzero(used)):
        plus, minus = sib.copy(), sib.copy()
        plus[index] += eps
        minus[index] -= eps
        fd_sib[index] = (loss(arc, plus) - loss(arc, minus)) / (2 * eps)
    np.testing.assert_allclose(grads[1], fd_sib, atol=1e-6)
    assert not grads[1][~used].any()


def test_layout_and_adjoints():
    rng = np.random.default_rng(5)
    n = 4
    structure = ProjectiveSiblingTree()
    arc, sib = _potentials(rng, n)
    parts = structure.encode(arc, sib)
    u = rng.standard_normal(parts.eta_u.shape)
    v = rng.standard_normal(parts.eta_v.shape)
    d_arc, d_sib = structure.decode(u, v, parts)
    # decode is linear: its adjoint is decode_backward.
    g_arc, g_sib = rng.standard_normal(d_arc.shape), rng.standard_normal(d_sib.shape)
    du, dv = structure.decode_backward((g_arc, g_sib), parts)
    assert (d_arc * g_arc).sum() + (d_sib * g_sib).sum() == pytest.approx(u @ du + v @ dv)
    # encode_backward is the adjoint of encode on the used entries.
    e_arc, e_sib = structure.encode_backward(u, v, parts)
    np.testing.assert_array_equal(e_arc, d_arc)
    np.testing.assert_array_equal(e_sib, d_sib)
    re = structure.encode(d_arc, d_sib)
    np.testing.assert_array_equal(re.eta_u, u)
    np.testing.assert_array_equal(re.eta_v, v)
    # Zero sibling scores by default, shared and read-only.
    zero = structure.encode(arc)
    assert not zero.eta_v.any() and not zero.eta_v.flags.writeable
    assert structure.encode(arc).eta_v is zero.eta_v
    # Entries that name no part are never read.
    junk = sib.copy()
    junk[~np.isin(np.arange(junk.size), np.ravel_multi_index(_part_index(n), junk.shape))
         .reshape(junk.shape)] = np.nan
    np.testing.assert_array_equal(structure.encode(arc, junk).eta_v, parts.eta_v)


def test_in_a_factor_graph_ad3_is_exact():
    # One exact factor: the LP is the MAP, integral.
    rng = np.random.default_rng(9)
    for n in (3, 8, 15):
        arc, sib = _potentials(rng, n)
        structure = ProjectiveSiblingTree()
        parts = structure.encode(arc, sib)
        fg = FactorGraph(n * n)
        offset = fg.add_structure(structure, np.arange(n * n), np.zeros((n + 1, n + 1)))
        assert offset == 0 and fg.n_factor_scores == parts.eta_v.shape[0]
        result = ad3(fg, parts.eta_u, parts.eta_v, tol=1e-9, max_iter=2000)
        heads = structure.map(arc, sib)
        m_y, n_y = structure.indicators(heads, parts)
        np.testing.assert_allclose(result.variables, m_y, atol=1e-6)
        assert result.dual == pytest.approx(structure.score(heads, arc, sib), abs=1e-6)


@pytest.mark.parametrize("call,match", [
    (lambda s: s.encode(np.zeros((3, 3)), np.zeros((3, 3, 4))), r"expected \(3, 3, 5\)"),
    (lambda s: s.encode(np.zeros((1, 1))), "at least one"),
    (lambda s: s.encode(np.zeros((3, 3)), np.full((3, 3, 5), np.nan)), r"part \(0, 0, 1\)"),
    (lambda s: s.encode(np.zeros((3, 3)), np.full((3, 3, 5), "a")), "sibling_scores"),
    (lambda s: s.map(np.full((3, 3), -np.inf)), "no projective dependency tree"),
    (lambda s: s.score([-1, 2, 2], np.zeros((3, 3))), "word 2"),
    (lambda s: s.oracle(s.encode(np.zeros((3, 3))), np.zeros(3), np.zeros(0)), "eta_u"),
    (lambda s: sibling_part_slots([[1, 1, 0]], 2), r"\(1, 1, 0\) is no sibling part"),
    (lambda s: sibling_part_slots([[1, 2, 2]], 2), r"\(1, 2, 2\) is no sibling part"),
    (lambda s: ProjectiveSiblingTree(single_root="yes").map(np.zeros((3, 3))), "single_root"),
])
def test_bad_input_is_a_clear_error(call, match):
    with pytest.raises(ValueError, match=match):
        call(ProjectiveSiblingTree())


def test_structure_object():
    structure = ProjectiveSiblingTree(single_root=False)
    assert pickle.loads(pickle.dumps(structure)) == structure
    assert structure != ProjectiveSiblingTree()
    assert "single_root=False" in repr(structure)
