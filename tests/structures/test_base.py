"""The Structure contract itself: the documented PickTwo example, part scores, pickling."""

import itertools
import pickle
import re
import textwrap
from dataclasses import FrozenInstanceError

import numpy as np
import pytest

from sksparse_struct.structures import (
    XOR,
    Budget,
    DependencyTree,
    GrandparentHeadAutomaton,
    HeadAutomaton,
    Matching,
    Parts,
    Sequence,
    Structure,
    UnaryStructure,
)
from sksparse_struct.structures import _base
from sksparse_struct.structures._base import dot_masked

NEG_INF = -np.inf


def _docstring_example():
    """The ``class PickTwo`` code block of ``_base``'s module docstring."""
    doc = _base.__doc__
    start = doc.index("    class PickTwo(UnaryStructure):")
    lines = []
    for line in doc[start:].splitlines():
        if line.strip() and not line.startswith("    "):
            break
        lines.append(line)
    return textwrap.dedent("\n".join(lines))


# Defined at module level from the docstring itself, so that the test checks
# the example exactly as documented, and PickTwo pickles like a user's class.
exec(_docstring_example(), globals())
PickTwo = globals()["PickTwo"]


def test_docstring_example_is_found():
    code = _docstring_example()
    assert code.startswith("class PickTwo(UnaryStructure):")
    assert "_map_unary" in code and "_indicators_unary" in code
    assert re.search(r"sparsemap\(PickTwo\(\), scores\)", _base.__doc__)


def test_pick_two_works_as_documented():
    pick = PickTwo()
    z = np.array([1.0, 3.0, 2.0, 0.0])
    assert pick.map(z).tolist() == [1, 2]
    # Ties: a stable sort of -scores keeps lower indices first.
    assert pick.map([1.0, 1.0, 1.0]).tolist() == [0, 1]
    assert pick.score([1, 2], z) == 5.0
    assert pick.score([0, 3], z) == 1.0
    parts = pick.encode(z)
    assert isinstance(parts, Parts)
    assert parts.eta_u.tolist() == z.tolist() and parts.eta_v.shape == (0,)
    m, n = pick.indicators([0, 3], parts)
    assert m.tolist() == [1.0, 0.0, 0.0, 1.0] and n.shape == (0,)
    # The oracle maximises the scores it is given (SparseMAP modifies them).
    value, m, n = pick.oracle(parts, np.array([5.0, 0.0, 0.0, 4.0]), parts.eta_v)
    assert value.tolist() == [0, 3] and m.tolist() == [1.0, 0.0, 0.0, 1.0]
    u = np.array([0.5, 0.5, 1.0, 0.0])
    assert pick.decode(u, n, parts).tolist() == u.tolist()
    grads = pick.encode_backward(np.arange(4.0), parts.eta_v, parts)
    assert isinstance(grads, tuple) and len(grads) == 1
    assert grads[0].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert pick.has_marginals is False
    with pytest.raises(TypeError, match="no tractable marginal inference.*sparsemap"):
        pick.marginals(z)


def test_unary_structure_2d_layout():
    class PickCell(UnaryStructure):
        scores_ndim = 2

        def _map_unary(self, scores):
            return np.unravel_index(int(np.argmax(scores)), scores.shape)

        def _indicators_unary(self, value, shape):
            m = np.zeros(shape)
            m[value] = 1.0
            return m

    z = np.array([[0.0, 2.0, 1.0], [3.0, -1.0, 0.5]])
    pick = PickCell()
    assert pick.map(z) == (1, 0)
    parts = pick.encode(z)
    assert parts.context == (2, 3) and parts.eta_u.shape == (6,)
    assert pick.decode(np.arange(6.0), parts.eta_v, parts).shape == (2, 3)
    (g,) = pick.encode_backward(np.arange(6.0), parts.eta_v, parts)
    assert g.tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="2 dimension"):
        pick.map([1.0, 2.0])


def test_dot_masked_ignores_unused_forbidden_parts():
    eta = np.array([1.0, NEG_INF, 2.0])
    with np.errstate(invalid="ignore"):
        assert np.isnan(eta @ np.array([1.0, 0.0, 1.0]))  # why dot_masked exists
    assert dot_masked(eta, np.array([1.0, 0.0, 1.0])) == 3.0
    assert dot_masked(eta, np.array([0.5, 0.0, 0.25])) == 1.0
    assert dot_masked(eta, np.array([1.0, 1.0, 0.0])) == NEG_INF
    assert dot_masked(eta, np.zeros(3)) == 0.0
    assert isinstance(dot_masked(eta, np.zeros(3)), float)
    pick = PickTwo()
    assert pick.score([0, 2], eta) == 3.0
    assert pick.score([0, 1], eta) == NEG_INF


def _part_sum_cases():
    """(structure, scores, values, independent part-score sum) for each structure."""
    rng = np.random.default_rng(0)
    z = rng.normal(size=5)
    z[3] = NEG_INF
    cases = [
        (XOR(), z, list(range(5)), lambda v, s: s[v]),
        (PickTwo(), z, [np.array(c) for c in itertools.combinations(range(5), 2)],
         lambda v, s: s[v[0]] + s[v[1]]),
    ]
    for budget, exact in [(2, False), (3, True), (0, False)]:
        sizes = [budget] if exact else range(budget + 1)
        values = [np.array(c, dtype=np.int64) for size in sizes
                  for c in itertools.combinations(range(5), size)]
        cases.append(
            (Budget(budget, exact=exact), z, values, lambda v, s: sum(s[i] for i in v))
        )
    for shape in [(3, 3), (2, 4), (4, 2)]:
        zm = rng.normal(size=shape)
        zm[0, 1] = NEG_INF
        r, c = shape
        values = []
        if r <= c:
            values = [np.array(p) for p in itertools.permutations(range(c), r)]
        else:
            for rows in itertools.permutations(range(r), c):
                a = np.full(r, -1)
                a[list(rows)] = np.arange(c)
                values.append(a)
        cases.append(
            (Matching(), zm, values,
             lambda v, s: sum(s[i, j] for i, j in enumerate(v) if j >= 0))
        )
    return cases


@pytest.mark.parametrize("case", range(len(_part_sum_cases())))
def test_score_is_sum_of_part_scores(case):
    structure, z, values, part_sum = _part_sum_cases()[case]
    parts = structure.encode(z)
    for v in values:
        expected = part_sum(v, z)
        got = structure.score(v, z)
        if np.isneginf(expected):
            assert got == NEG_INF
        else:
            assert got == pytest.approx(expected, abs=1e-14)
        m, n = structure.indicators(v, parts)
        assert m.shape == parts.eta_u.shape and n.shape == parts.eta_v.shape
        assert set(np.unique(m)) <= {0.0, 1.0}


@pytest.mark.parametrize("case", range(len(_part_sum_cases())))
def test_oracle_indicators_agree_and_encode_is_adjoint(case):
    structure, z, _, _ = _part_sum_cases()[case]
    parts = structure.encode(z)
    value, m, n = structure.oracle(parts, parts.eta_u, parts.eta_v)
    m2, n2 = structure.indicators(value, parts)
    assert np.array_equal(m, m2) and np.array_equal(n, n2)
    assert structure.score(value, z) == structure.score(structure.map(z), z)
    # <encode_backward(g), x> == <g, encode(x)> for finite potentials x.
    rng = np.random.default_rng(1)
    g = rng.normal(size=parts.eta_u.shape)
    x = rng.normal(size=np.shape(z))
    (dx,) = structure.encode_backward(g, np.zeros(0), parts)
    assert dx.shape == np.shape(z)
    assert np.sum(dx * x) == pytest.approx(g @ structure.encode(x).eta_u, abs=1e-12)
    assert structure.decode(m, n, parts).shape == np.shape(z)


def test_base_marginals_error():
    with pytest.raises(TypeError, match="PickTwo has no tractable marginal"):
        PickTwo().marginals([1.0, 2.0])
    with pytest.raises(TypeError, match="#P-hard"):
        Matching().marginals(np.zeros((2, 2)))
    assert XOR.has_marginals and Budget.has_marginals
    assert not Matching.has_marginals and not PickTwo.has_marginals


def test_contract_is_abstract():
    with pytest.raises(TypeError):
        Structure()

    class OnlyMap(UnaryStructure):
        def _map_unary(self, scores):
            return 0

    with pytest.raises(TypeError):
        OnlyMap()


def test_parts_is_frozen():
    parts = XOR().encode([1.0, 2.0])
    with pytest.raises(FrozenInstanceError):
        parts.eta_u = np.zeros(2)


STRUCTURES = [XOR(), Budget(2), Budget(3, exact=True), Matching(), PickTwo()]


def test_repr():
    assert repr(XOR()) == "XOR()"
    assert repr(Budget(2)) == "Budget(budget=2, exact=False)"
    assert repr(Budget(3, exact=True)) == "Budget(budget=3, exact=True)"
    assert repr(Matching()) == "Matching()"
    assert repr(PickTwo()) == "PickTwo()"


def test_eq_and_hash():
    assert XOR() == XOR() and hash(XOR()) == hash(XOR())
    assert Budget(2) == Budget(2) and hash(Budget(2)) == hash(Budget(2))
    assert Budget(2) != Budget(3)
    assert Budget(2) != Budget(2, exact=True)
    assert XOR() != Matching()
    assert Matching() != PickTwo()
    assert len({XOR(), XOR(), Budget(2), Budget(2), Matching()}) == 3


@pytest.mark.parametrize("structure", STRUCTURES, ids=repr)
def test_pickle_round_trip(structure):
    clone = pickle.loads(pickle.dumps(structure))
    assert clone == structure and hash(clone) == hash(structure)
    z = np.array([[0.5, 2.0, 1.0], [3.0, -1.0, 0.25], [1.0, 1.5, 0.0]])
    if not isinstance(structure, Matching):
        z = z[0]
    assert np.array_equal(np.asarray(clone.map(z)), np.asarray(structure.map(z)))


# Every built-in structure with potentials of its shapes (the part counts).
FLAT_CASES = [
    (Sequence(), (np.zeros((3, 2)), np.zeros((2, 2)))),
    (DependencyTree(), (np.zeros((3, 3)),)),
    (DependencyTree(projective=True), (np.zeros((3, 3)),)),
    (HeadAutomaton(), (np.zeros(3), np.zeros((5, 5)))),
    (GrandparentHeadAutomaton(), (np.zeros(2), np.zeros(3), np.zeros((5, 5)), np.zeros((2, 3)))),
    (XOR(), (np.zeros(3),)),
    (Budget(2), (np.zeros(3),)),
    (Matching(), (np.zeros((2, 2)),)),
    (PickTwo(), (np.zeros(4),)),
]


@pytest.mark.parametrize("structure, potentials", FLAT_CASES, ids=[repr(s) for s, _ in FLAT_CASES])
def test_flat_vectors_of_strings_or_of_the_wrong_length_are_named(structure, potentials):
    # Object arrays of strings failed inside NumPy ("could not convert string
    # to float"), and some short vectors were read past their end by the
    # compiled oracles (HeadAutomaton, DependencyTree) or silently decoded.
    parts = structure.encode(*potentials)
    u, v = parts.eta_u, parts.eta_v
    name = type(structure).__name__
    calls = {
        "oracle": (lambda a, b: structure.oracle(parts, a, b), ("eta_u", "eta_v")),
        "decode": (lambda a, b: structure.decode(a, b, parts), ("u", "v")),
        "encode_backward": (
            lambda a, b: structure.encode_backward(a, b, parts), ("d_eta_u", "d_eta_v")
        ),
    }
    strings = np.array(["a"] + [0.0] * (u.size - 1), dtype=object)
    for method, (call, (u_name, v_name)) in calls.items():
        with pytest.raises(ValueError, match=(
            f"^{name}.{method}: {u_name} must be an array of real numbers, got dtype object"
        )):
            call(strings, v)
        if v.size:  # the structures without higher-order parts ignore v
            bad_v = np.array(["a"] + [0.0] * (v.size - 1), dtype=object)
            with pytest.raises(ValueError, match=f"^{name}.{method}: {v_name} must be"):
                call(u, bad_v)
        if method != "encode_backward" or not isinstance(
            structure, (HeadAutomaton, GrandparentHeadAutomaton)
        ):
            match = rf"^{name}.{method}: {u_name} must be a flat vector of {u.size} entries"
        else:
            match = rf"^{name}.{method}: flat gradients of shapes \({u.size - 1},\)"
        with pytest.raises(ValueError, match=match):
            call(u[:-1], v)
        call(u.astype(np.float32), v)  # other real dtypes are converted
