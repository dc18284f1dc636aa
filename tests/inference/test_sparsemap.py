"""SparseMAP: solvers against independent references, backward passes against
finite differences.

References: a generic QP over the enumerated structures solved by scipy's
SLSQP, the Wolfe-gap certificate computed by brute-force enumeration, and
sparsemax for the one-of-K structure.
"""

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning

from sksparse_struct.inference import (
    SparseMAPResult,
    sparsemap,
    sparsemap_backward,
    sparsemap_distribution_backward,
)
from sksparse_struct.mappings import project_capped_simplex, sparsemax, sparsemax_backward
from sksparse_struct.structures import (
    XOR,
    Budget,
    Matching,
    Parts,
    Sequence,
    Structure,
    UnaryStructure,
)
from sksparse_struct.structures._base import dot_masked

try:  # the tree structures land separately; their tests run once they do
    from sksparse_struct.structures import DependencyTree
except ImportError:  # pragma: no cover
    DependencyTree = None

METHODS = ["active_set", "frank_wolfe", "away_step", "pairwise"]


# --------------------------------------------------------------------------
# Small structures whose every member we can enumerate
# --------------------------------------------------------------------------
class PickTwo(UnaryStructure):
    """Exactly two of K items (the example of the Structure docstring)."""

    def _map_unary(self, scores):
        return tuple(int(i) for i in np.sort(np.argsort(-scores, kind="stable")[:2]))

    def _indicators_unary(self, value, shape):
        m = np.zeros(shape)
        m[list(value)] = 1.0
        return m

    def enumerate(self, parts):
        return list(itertools.combinations(range(parts.context[0]), 2))


class AtMostTwo(PickTwo):
    """At most two of K items: the empty set (m = 0) is a structure, so the
    Gram matrix of a support can be singular while the KKT matrix is not."""

    def _map_unary(self, scores):
        best = [int(i) for i in np.argsort(-scores, kind="stable")[:2] if scores[i] > 0]
        return tuple(sorted(best))

    def enumerate(self, parts):
        K = parts.context[0]
        return [()] + [(i,) for i in range(K)] + list(itertools.combinations(range(K), 2))


class TinyChain(Structure):
    """Label sequences of length L over K labels with shared transition scores.

    Unary parts: the (L, K) labels; higher-order parts: the (K, K) transition
    counts. The marginals are a tuple ``(unary (L, K), transitions (K, K))``,
    so SparseMAP's backward goes through the generic ``decode_backward``.
    The oracle enumerates (first maximum in lexicographic order).
    """

    def encode(self, unary, transitions):
        unary = np.asarray(unary, dtype=np.float64)
        transitions = np.asarray(transitions, dtype=np.float64)
        if unary.ndim != 2 or transitions.shape != (unary.shape[1], unary.shape[1]):
            raise ValueError("bad shapes")
        return Parts(unary.ravel().copy(), transitions.ravel().copy(), unary.shape)

    def enumerate(self, parts):
        L, K = parts.context
        return list(itertools.product(range(K), repeat=L))

    def indicators(self, value, parts):
        L, K = parts.context
        m = np.zeros((L, K))
        m[np.arange(L), list(value)] = 1.0
        n = np.zeros((K, K))
        for a, b in zip(value[:-1], value[1:]):
            n[a, b] += 1.0
        return m.ravel(), n.ravel()

    def oracle(self, parts, eta_u, eta_v):
        best, best_score = None, -np.inf
        for value in self.enumerate(parts):
            m, n = self.indicators(value, parts)
            score = dot_masked(eta_u, m) + dot_masked(eta_v, n)
            if best is None or score > best_score:
                best, best_score = value, score
        m, n = self.indicators(best, parts)
        return best, m, n

    def decode(self, u, v, parts):
        L, K = parts.context
        return np.asarray(u).reshape(L, K), np.asarray(v).reshape(K, K)

    def encode_backward(self, d_eta_u, d_eta_v, parts):
        L, K = parts.context
        return np.asarray(d_eta_u).reshape(L, K), np.asarray(d_eta_v).reshape(K, K)


class ListStructure(Structure):
    """Structures given as an explicit list of (m, n) indicator pairs, with
    potentials ``(eta_u, eta_v)``; the oracle takes the first maximum."""

    def __init__(self, name):
        self.name = name

    @property
    def vertices(self):
        return VERTEX_LISTS[self.name]

    def encode(self, eta_u, eta_v):
        eta_u = np.asarray(eta_u, dtype=np.float64)
        eta_v = np.asarray(eta_v, dtype=np.float64)
        m, n = self.vertices[0]
        if eta_u.shape != m.shape or eta_v.shape != n.shape:
            raise ValueError("bad shapes")
        return Parts(eta_u, eta_v, None)

    def enumerate(self, parts):
        return list(range(len(self.vertices)))

    def indicators(self, value, parts):
        return self.vertices[value]

    def oracle(self, parts, eta_u, eta_v):
        scores = [dot_masked(eta_u, m) + dot_masked(eta_v, n) for m, n in self.vertices]
        best = int(np.argmax(scores))
        return (best, *self.vertices[best])

    def decode(self, u, v, parts):
        return np.asarray(u), np.asarray(v)

    def encode_backward(self, d_eta_u, d_eta_v, parts):
        return np.asarray(d_eta_u), np.asarray(d_eta_v)


_SQUARE = np.array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0], [0, 1, 0, 1]], dtype=float)
VERTEX_LISTS = {
    # Two structures share their unary indicators and differ only in their
    # higher-order part.
    "same_unary": [
        (np.array([1.0, 0.0]), np.array([1.0, 0.0])),
        (np.array([1.0, 0.0]), np.array([0.0, 1.0])),
        (np.array([0.0, 1.0]), np.array([0.0, 0.0])),
    ],
    # m_0 + m_1 = m_2 + m_3: the four unary vectors are affinely dependent,
    # and each structure has its own higher-order score, so the structure
    # entering the support can be an affine combination of the support
    # (singular KKT matrix): the active set must pivot.
    "square": [(m, np.eye(4)[i]) for i, m in enumerate(_SQUARE)],
}


def enumerate_values(structure, parts):
    """Every structure of a small instance (test structures list their own)."""
    if hasattr(structure, "enumerate"):
        return structure.enumerate(parts)
    if isinstance(structure, Sequence):
        n, K = parts.context[:2]
        return [np.array(y) for y in itertools.product(range(K), repeat=n)]
    if isinstance(structure, Budget):
        K = parts.context[0]
        sizes = [structure.budget] if structure.exact else range(min(structure.budget, K) + 1)
        return [np.array(c, dtype=np.int64) for s in sizes for c in itertools.combinations(range(K), s)]
    if isinstance(structure, Matching):
        r, c = parts.context
        if r <= c:
            return [np.array(cols) for cols in itertools.permutations(range(c), r)]
        values = []
        for rows in itertools.permutations(range(r), c):
            y = np.full(r, -1)
            y[list(rows)] = np.arange(c)
            values.append(y)
        return values
    if DependencyTree is not None and isinstance(structure, DependencyTree):
        return _enumerate_trees(structure, parts.context)
    raise TypeError(f"cannot enumerate {structure!r}")


def _enumerate_trees(tree, n):
    """Every dependency tree over n words, by checking all head assignments."""
    trees = []
    for heads in itertools.product(range(n + 1), repeat=n):
        heads = np.array((-1,) + heads)
        words = np.arange(1, n + 1)
        if np.any(heads[1:] == words):
            continue
        if tree.single_root and np.sum(heads[1:] == 0) != 1:
            continue
        acyclic = True
        for m in words:  # every word must reach the root within n steps
            h, steps = m, 0
            while h != 0 and steps <= n:
                h, steps = heads[h], steps + 1
            acyclic &= h == 0
        if not acyclic:
            continue
        if tree.projective:
            arcs = [tuple(sorted((heads[m], m))) for m in words]
            if any(a < c < b < d for a, b in arcs for c, d in arcs):
                continue
        trees.append(heads)
    return trees


def _vertices(structure, parts):
    values = enumerate_values(structure, parts)
    M, N = zip(*(structure.indicators(y, parts) for y in values))
    return values, np.array(M, dtype=float), np.array(N, dtype=float)


def _theta(parts, M, N):
    return np.array([dot_masked(parts.eta_u, m) + dot_masked(parts.eta_v, n) for m, n in zip(M, N)])


def reference_qp(structure, *potentials):
    """min 1/2 ||M^T p||^2 - theta . p over the simplex, by SLSQP on all structures."""
    parts = structure.encode(*potentials)
    values, M, N = _vertices(structure, parts)
    theta = _theta(parts, M, N)
    keep = np.isfinite(theta)  # structures using a forbidden part get p = 0
    M, theta = M[keep], theta[keep]
    D = len(theta)
    res = minimize(
        lambda p: 0.5 * np.sum((p @ M) ** 2) - theta @ p,
        np.full(D, 1.0 / D),
        jac=lambda p: M @ (p @ M) - theta,
        method="SLSQP",
        bounds=[(0.0, 1.0)] * D,
        constraints=[{"type": "eq", "fun": lambda p: p.sum() - 1.0, "jac": lambda p: np.ones(D)}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    p = _polish_on_support(res.x, M, theta)
    u = p @ M
    return u, theta @ p - 0.5 * u @ u


def _polish_on_support(p, M, theta, threshold=1e-7):
    """Solve the QP's KKT system exactly on the support SLSQP identified.

    SLSQP alone is accurate to about 1e-7. On the right support S the optimum
    solves ``[M_S M_S^T 1; 1^T 0] [p_S; -tau] = [theta_S; 1]`` (in the least
    squares sense when structures are affinely dependent: ``p`` is then not
    unique, but ``u = M_S^T p`` is), which gives ``u`` to rounding. The result
    is certified independently of how it was found: ``u`` is a convex
    combination of the structures (non-negative least squares), and no
    enumerated structure violates the optimality condition
    ``theta_y - m_y . u <= tau``. Returns probabilities realising ``u``.
    """
    from scipy.optimize import nnls

    S = np.flatnonzero(p > threshold)
    K = len(S)
    A = np.zeros((K + 1, K + 1))
    A[:K, :K] = M[S] @ M[S].T
    A[:K, K] = 1.0
    A[K, :K] = 1.0
    sol = np.linalg.lstsq(A, np.append(theta[S], 1.0), rcond=None)[0]
    u = sol[:K] @ M[S]
    slack = theta[S] - M[S] @ u
    tau = slack.max()
    assert np.ptp(slack) <= 1e-10, "the support structures are not all optimal"
    assert np.max(theta - M @ u) <= tau + 1e-10, "polished point is not optimal"
    # u must be in the convex hull of the support: p >= 0, M_S^T p = u, sum 1.
    weights, residual = nnls(np.vstack([M[S].T, np.ones((1, K))]), np.append(u, 1.0))
    assert residual <= 1e-10, "polished u is not a convex combination"
    polished = np.zeros_like(p)
    polished[S] = weights
    return polished


def brute_force_gap(result):
    """Wolfe gap of ``result`` computed over every enumerated structure."""
    structure, parts = result.structure, result.parts
    _, M, N = _vertices(structure, parts)
    theta = _theta(parts, M, N)
    u = result.u
    ok = np.isfinite(theta)
    best = np.max(theta[ok] - M[ok] @ u)
    current = result.probabilities @ _theta(parts, result.vertices_u, result.vertices_v) - u @ u
    return best - current


# --------------------------------------------------------------------------
# Forward
# --------------------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
def test_xor_equals_sparsemax(method):
    rng = np.random.default_rng(0)
    for _ in range(5):
        z = rng.normal(size=7)
        res = sparsemap(XOR(), z, method=method, max_iter=5000, tol=1e-12)
        np.testing.assert_allclose(res.u, sparsemax(z), atol=1e-6 if method != "active_set" else 1e-12)
        if method == "active_set":
            # The support is exactly sparsemax's support.
            assert sorted(y for y, _ in res.support) == list(np.flatnonzero(sparsemax(z) > 0))


def test_xor_backward_equals_sparsemax_backward():
    rng = np.random.default_rng(1)
    z = rng.normal(size=6)
    res = sparsemap(XOR(), z)
    d = rng.normal(size=6)
    (grad,) = sparsemap_backward(res, d)
    np.testing.assert_allclose(grad, sparsemax_backward(sparsemax(z), d), atol=1e-12)


# The library's structures, on instances small enough to enumerate.
LIBRARY_CASES = [
    (Sequence(), lambda rng: (rng.normal(size=(3, 3)), rng.normal(size=(3, 3)))),
    (Sequence(), lambda rng: (rng.normal(size=(4, 2)), rng.normal(size=(2, 2)), rng.normal(size=2), rng.normal(size=2))),
    (Sequence(), lambda rng: (rng.normal(size=(1, 3)), rng.normal(size=(3, 3)))),
    (Budget(2), lambda rng: (rng.normal(size=5),)),
    (Budget(3, exact=True), lambda rng: (rng.normal(size=5),)),
    (Matching(), lambda rng: (rng.normal(size=(3, 3)),)),
    (Matching(), lambda rng: (rng.normal(size=(2, 4)),)),
    (Matching(), lambda rng: (rng.normal(size=(4, 3)),)),
]


if DependencyTree is not None:
    LIBRARY_CASES += [
        (DependencyTree(), lambda rng: (rng.normal(size=(4, 4)),)),
        (DependencyTree(single_root=False), lambda rng: (rng.normal(size=(4, 4)),)),
        (DependencyTree(projective=True), lambda rng: (rng.normal(size=(5, 5)),)),
    ]


def _case_id(case):
    return getattr(case, "name", type(case).__name__)


CASES = [
    (PickTwo(), lambda rng: (rng.normal(size=5),)),
    (AtMostTwo(), lambda rng: (rng.normal(size=5) * 0.5,)),
    (TinyChain(), lambda rng: (rng.normal(size=(3, 3)), rng.normal(size=(3, 3)))),
    (ListStructure("same_unary"), lambda rng: (rng.normal(size=2), rng.normal(size=2))),
    (ListStructure("square"), lambda rng: (rng.normal(size=4), rng.normal(size=4))),
]


@pytest.mark.parametrize("structure,make", CASES + LIBRARY_CASES, ids=_case_id)
def test_active_set_matches_generic_qp(structure, make):
    rng = np.random.default_rng(2)
    for _ in range(2):
        potentials = make(rng)
        res = sparsemap(structure, *potentials)
        u_ref, obj_ref = reference_qp(structure, *potentials)
        np.testing.assert_allclose(res.u, u_ref, atol=1e-8)
        assert abs(res.objective - obj_ref) < 1e-8
        assert res.converged and res.gap <= 1e-9
        assert brute_force_gap(res) <= 1e-9
        p = res.probabilities
        assert np.all(p > 0) and abs(p.sum() - 1) < 1e-12
        assert np.all(np.diff(p) <= 0)  # most probable first
        # Support sparsity: at most n_unary_parts + 1 structures.
        assert len(res.support) <= res.u.shape[0] + 1
        # u and v are the expectations of the support's indicators.
        for (y, prob), m in zip(res.support, res.vertices_u):
            np.testing.assert_array_equal(m, structure.indicators(y, res.parts)[0])


@pytest.mark.parametrize(
    "structure,make", CASES + [LIBRARY_CASES[0], LIBRARY_CASES[3]], ids=_case_id
)
@pytest.mark.parametrize("method", METHODS[1:])
def test_conditional_gradient_reaches_same_optimum(structure, make, method):
    rng = np.random.default_rng(3)
    potentials = make(rng)
    exact = sparsemap(structure, *potentials)
    with warnings.catch_warnings():
        # Vanilla Frank-Wolfe may stop on max_iter: that is the point of the
        # comparison; the tolerance below still holds.
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = sparsemap(structure, *potentials, method=method, max_iter=3000, tol=1e-10)
    assert abs(res.objective - exact.objective) < 1e-6
    np.testing.assert_allclose(res.u, exact.u, atol=2e-3)
    assert brute_force_gap(res) >= -1e-12
    assert abs(res.probabilities.sum() - 1) < 1e-12


def test_pairwise_and_away_converge_on_trees_of_pick_two():
    rng = np.random.default_rng(4)
    z = rng.normal(size=8)
    exact = sparsemap(PickTwo(), z)
    for method in ("away_step", "pairwise"):
        res = sparsemap(PickTwo(), z, method=method, max_iter=20000, tol=1e-7)
        assert res.converged
        np.testing.assert_allclose(res.u, exact.u, atol=1e-3)


@given(st.lists(st.floats(-5, 5), min_size=3, max_size=6), st.sampled_from([0, 1]))
def test_active_set_optimality_certificate(scores, which):
    structure = [PickTwo(), AtMostTwo()][which]
    res = sparsemap(structure, np.array(scores))
    # Independent certificate: no enumerated structure improves the objective.
    assert brute_force_gap(res) <= 1e-9 * max(1.0, abs(res.objective))
    assert abs(res.probabilities.sum() - 1) < 1e-12
    assert np.all(res.probabilities > 0)


@given(st.integers(0, 10_000))
def test_active_set_chain_certificate(seed):
    rng = np.random.default_rng(seed)
    # Integer scores: many exact ties and degenerate supports.
    unary = rng.integers(-2, 3, size=(3, 2)).astype(float)
    trans = rng.integers(-2, 3, size=(2, 2)).astype(float)
    res = sparsemap(TinyChain(), unary, trans)
    assert brute_force_gap(res) <= 1e-9 * max(1.0, abs(res.objective))
    u_ref, obj_ref = reference_qp(TinyChain(), unary, trans)
    assert abs(res.objective - obj_ref) < 1e-8


def test_marginals_layout_and_support_values():
    rng = np.random.default_rng(5)
    unary, trans = rng.normal(size=(3, 2)), rng.normal(size=(2, 2))
    res = sparsemap(TinyChain(), unary, trans)
    U, V = res.marginals
    assert U.shape == (3, 2) and V.shape == (2, 2)
    np.testing.assert_allclose(U.sum(axis=1), 1.0)
    np.testing.assert_allclose(V.sum(), 2.0)  # L - 1 transitions
    for y, _ in res.support:
        assert isinstance(y, tuple) and len(y) == 3
    assert res.support[0][0] == TinyChain().map(unary, trans) or len(res.support) > 1
    assert isinstance(res, SparseMAPResult) and "support_size" in repr(res)


def test_scaled_scores_give_map():
    # Large scores: SparseMAP approaches MAP (a single structure).
    rng = np.random.default_rng(6)
    z = rng.normal(size=6) * 1e4
    res = sparsemap(PickTwo(), z)
    assert len(res.support) == 1 and res.support[0][0] == PickTwo().map(z)
    assert res.converged


def test_extreme_scores():
    z = np.array([1e4, -1e4, 1e4 - 0.3, 0.0, 1e4 - 0.1])
    res = sparsemap(PickTwo(), z)
    assert brute_force_gap(res) <= 1e-9 * abs(res.objective)
    # The marginal polytope of "exactly two of K" is the capped simplex
    # {0 <= u <= 1, sum(u) = 2}: SparseMAP's u is the projection onto it.
    np.testing.assert_allclose(res.u, project_capped_simplex(z, radius=2.0), atol=1e-9)


@given(st.lists(st.floats(-1e4, 1e4), min_size=2, max_size=8))
def test_pick_two_is_capped_simplex_projection(scores):
    z = np.array(scores)
    res = sparsemap(PickTwo(), z)
    scale = max(1.0, np.abs(z).max())
    np.testing.assert_allclose(
        res.u, project_capped_simplex(z, radius=2.0), atol=1e-9 * scale
    )


def test_forbidden_parts():
    z = np.array([0.3, -np.inf, 0.2, 0.25, -np.inf])
    for method in METHODS:
        res = sparsemap(PickTwo(), z, method=method, max_iter=5000, tol=1e-10)
        assert np.all(res.u[[1, 4]] == 0)
        assert np.all(np.isfinite(res.u)) and np.isfinite(res.objective)
        for y, _ in res.support:
            assert 1 not in y and 4 not in y
    res = sparsemap(PickTwo(), z)
    u_ref, obj_ref = reference_qp(PickTwo(), z)
    np.testing.assert_allclose(res.u, u_ref, atol=1e-8)
    (grad,) = sparsemap_backward(res, np.ones(5))
    assert np.all(np.isfinite(grad)) and np.all(grad[[1, 4]] == 0)
    # XOR with forbidden items is sparsemax with masked entries.
    zx = np.array([0.5, -np.inf, 0.4])
    np.testing.assert_allclose(sparsemap(XOR(), zx).u, sparsemax(zx), atol=1e-12)


def test_every_structure_forbidden():
    with pytest.raises(ValueError, match="forbidden"):
        sparsemap(PickTwo(), np.array([0.3, -np.inf, -np.inf, -np.inf]))


def test_single_structure():
    res = sparsemap(XOR(), [2.0])
    assert res.support == [(0, 1.0)] and res.u.tolist() == [1.0]
    assert res.objective == 1.5


# --------------------------------------------------------------------------
# Warm start
# --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "structure,make", CASES[:3] + [LIBRARY_CASES[1], LIBRARY_CASES[5]], ids=_case_id
)
def test_warm_start(structure, make):
    rng = np.random.default_rng(7)
    potentials = make(rng)
    cold = sparsemap(structure, *potentials)
    again = sparsemap(structure, *potentials, init=cold)
    assert again.n_iter == 1
    np.testing.assert_allclose(again.u, cold.u, atol=1e-12)
    # A small change of the scores that keeps the support: the warm start
    # only has to re-solve the KKT system (one iteration).
    nudged = tuple(x + 1e-4 * rng.normal(size=np.shape(x)) for x in potentials)
    cold1 = sparsemap(structure, *nudged)
    warm1 = sparsemap(structure, *nudged, init=cold)
    assert set(_support_keys(cold1)) == set(_support_keys(cold))
    assert warm1.n_iter == 1 <= cold1.n_iter
    np.testing.assert_allclose(warm1.u, cold1.u, atol=1e-12)
    # A larger change: same solution (the iteration count depends on how
    # much the support changes).
    moved = tuple(x + 0.3 * rng.normal(size=np.shape(x)) for x in potentials)
    cold2 = sparsemap(structure, *moved)
    warm2 = sparsemap(structure, *moved, init=cold)
    np.testing.assert_allclose(warm2.u, cold2.u, atol=1e-10)
    # A list of structures works too.
    warm3 = sparsemap(structure, *moved, init=[y for y, _ in cold.support])
    np.testing.assert_allclose(warm3.u, cold2.u, atol=1e-10)
    for method in METHODS[1:]:
        res = sparsemap(structure, *potentials, init=cold, method=method)
        assert res.n_iter == 1 and res.converged


def test_warm_start_drops_forbidden_structures():
    z = np.array([0.3, 0.1, 0.2, 0.25])
    cold = sparsemap(PickTwo(), z)
    z2 = z.copy()
    z2[0] = -np.inf
    warm = sparsemap(PickTwo(), z2, init=cold)
    np.testing.assert_allclose(warm.u, sparsemap(PickTwo(), z2).u, atol=1e-12)
    # Every warm-start structure forbidden: start from the MAP.
    warm = sparsemap(PickTwo(), z2, init=[(0, 1)])
    np.testing.assert_allclose(warm.u, sparsemap(PickTwo(), z2).u, atol=1e-12)


# --------------------------------------------------------------------------
# Backward
# --------------------------------------------------------------------------
def _flatten(arrays):
    return np.concatenate([np.asarray(a, dtype=float).ravel() for a in arrays])


def _unflatten(flat, like):
    out, pos = [], 0
    for a in like:
        size = np.size(a)
        out.append(flat[pos : pos + size].reshape(np.shape(a)))
        pos += size
    return out


def _support_keys(res):
    return [m.tobytes() + n.tobytes() for m, n in zip(res.vertices_u, res.vertices_v)]


def _fd_gradient(structure, potentials, readout, d, eps=1e-6):
    """Central differences of ``d . readout(sparsemap(structure, *potentials))``
    w.r.t. every potential entry; ``None`` if the support changes within eps
    (a kink: no derivative there)."""
    theta = _flatten(potentials)
    keys = set(_support_keys(sparsemap(structure, *potentials)))
    grad = np.empty_like(theta)
    for i in range(theta.shape[0]):
        vals = []
        for sign in (1.0, -1.0):
            step = theta.copy()
            step[i] += sign * eps
            res = sparsemap(structure, *_unflatten(step, potentials), tol=1e-14)
            if set(_support_keys(res)) != keys:
                return None
            vals.append(d @ readout(res))
        grad[i] = (vals[0] - vals[1]) / (2 * eps)
    return grad


@pytest.mark.parametrize("structure,make", CASES + LIBRARY_CASES, ids=_case_id)
def test_backward_matches_finite_differences(structure, make):
    rng = np.random.default_rng(8)
    checked = 0
    for _ in range(3):
        potentials = make(rng)
        res = sparsemap(structure, *potentials)
        layout = res.marginals if isinstance(res.marginals, tuple) else (res.marginals,)
        d_layout = [rng.normal(size=np.shape(a)) for a in layout]

        def readout(r):
            return _flatten(r.marginals if isinstance(r.marginals, tuple) else (r.marginals,))

        fd = _fd_gradient(structure, potentials, readout, _flatten(d_layout))
        if fd is None:
            continue
        grads = sparsemap_backward(res, *d_layout)
        assert len(grads) >= len(potentials)
        np.testing.assert_allclose(_flatten(grads[: len(potentials)]), fd, atol=1e-6)
        checked += 1
    assert checked >= 2


@pytest.mark.parametrize("structure,make", CASES + LIBRARY_CASES, ids=_case_id)
def test_distribution_backward_matches_finite_differences(structure, make):
    rng = np.random.default_rng(9)
    checked = 0
    for _ in range(3):
        potentials = make(rng)
        res = sparsemap(structure, *potentials)
        keys = _support_keys(res)

        def readout(r):
            table = dict(zip(_support_keys(r), r.probabilities))
            return np.array([table[k] for k in keys])

        d = rng.normal(size=len(keys))
        fd = _fd_gradient(structure, potentials, readout, d)
        if fd is None:
            continue
        grads = sparsemap_distribution_backward(res, d)
        np.testing.assert_allclose(_flatten(grads[: len(potentials)]), fd, atol=1e-6)
        checked += 1
    assert checked >= 2


def test_distribution_backward_xor_is_sparsemax_jacobian():
    # For XOR the distribution is the posterior itself.
    z = np.array([1.0, 0.8, -1.0, 0.7])
    res = sparsemap(XOR(), z)
    d = np.arange(len(res.support), dtype=float)
    full = np.zeros(4)
    for (y, _), dy in zip(res.support, d):
        full[y] = dy
    (grad,) = sparsemap_distribution_backward(res, d)
    np.testing.assert_allclose(grad, sparsemax_backward(sparsemax(z), full), atol=1e-12)


def test_generic_decode_backward_is_the_adjoint():
    rng = np.random.default_rng(10)
    chain = TinyChain()
    parts = chain.encode(rng.normal(size=(3, 2)), rng.normal(size=(2, 2)))
    u, v = rng.normal(size=6), rng.normal(size=4)
    dU, dV = rng.normal(size=(3, 2)), rng.normal(size=(2, 2))
    U, V = chain.decode(u, v, parts)
    d_u, d_v = chain.decode_backward((dU, dV), parts)
    assert abs((U * dU).sum() + (V * dV).sum() - (u @ d_u + v @ d_v)) < 1e-12


# --------------------------------------------------------------------------
# Convergence warning and bad input
# --------------------------------------------------------------------------
def test_convergence_warning():
    rng = np.random.default_rng(11)
    z = rng.normal(size=8)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        res = sparsemap(PickTwo(), z, method="frank_wolfe", max_iter=3, tol=1e-12)
    assert not res.converged and res.n_iter == 3 and res.gap > 0
    # The reported gap is the one at the returned point.
    assert abs(res.gap - brute_force_gap(res)) < 1e-12


def test_bad_input():
    z = [0.1, 0.2, 0.3]
    with pytest.raises(ValueError, match="method"):
        sparsemap(XOR(), z, method="simplex")
    with pytest.raises(ValueError, match="Structure"):
        sparsemap("xor", z)
    with pytest.raises(ValueError, match="Structure"):
        sparsemap(sparsemax, z)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="max_iter"):
            sparsemap(XOR(), z, max_iter=bad)
    for bad in (0.0, -1e-3, np.nan):
        with pytest.raises(ValueError, match="tol"):
            sparsemap(XOR(), z, tol=bad)
    with pytest.raises(ValueError, match="NaN"):
        sparsemap(XOR(), [0.1, np.nan])
    with pytest.raises(ValueError, match="init"):
        sparsemap(XOR(), z, init=3)
    with pytest.raises(ValueError, match="init"):
        sparsemap(XOR(), z, init=[])
    with pytest.raises(ValueError, match="init"):
        sparsemap(XOR(), z, init=sparsemap(PickTwo(), z))
    with pytest.raises(ValueError, match="init"):
        sparsemap(XOR(), z, init=sparsemap(XOR(), [0.1, 0.2]))
    res = sparsemap(XOR(), z)
    with pytest.raises(ValueError, match="SparseMAPResult"):
        sparsemap_backward(res.u, z)
    with pytest.raises(ValueError, match="shape"):
        sparsemap_backward(res, [1.0, 2.0])
    with pytest.raises(ValueError, match="one gradient array"):
        sparsemap_backward(res, z, z)
    with pytest.raises(ValueError, match="finite"):
        sparsemap_backward(res, [0.0, np.inf, 0.0])
    with pytest.raises(ValueError, match="d_probabilities"):
        sparsemap_distribution_backward(res, np.ones(len(res.support) + 1))
    with pytest.raises(ValueError, match="finite"):
        sparsemap_distribution_backward(res, np.full(len(res.support), np.nan))


def test_active_set_pivots_around_affinely_dependent_structures(monkeypatch):
    import sksparse_struct.inference._sparsemap as module

    hits = []
    original = module.kkt_insert

    def counting(*args):
        inserted = original(*args)
        if not inserted:
            hits.append(args[8])
        return inserted

    monkeypatch.setattr(module, "kkt_insert", counting)
    rng = np.random.default_rng(12)
    square = ListStructure("square")
    for _ in range(200):
        res = sparsemap(square, rng.normal(size=4), rng.normal(size=4))
        assert brute_force_gap(res) <= 1e-12
        assert np.all(res.probabilities > 0) and abs(res.probabilities.sum() - 1) < 1e-12
    assert hits  # the singular case did occur
