"""HeadAutomaton and GrandparentHeadAutomaton against enumeration of their configurations.

The oracles are checked against every (g, subset) configuration scored from
the definition; SparseMAP's compiled loop against the generic Python loop
(to the last bit) and against a QP over the explicit convex hull; AD3 and
LP-SparseMAP on a tree plus head automata against explicit programs over
every factor's enumerated configurations (HiGHS for the LP, SLSQP for the
QP).
"""

import itertools
import pickle
import warnings

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog, minimize
from sklearn.exceptions import ConvergenceWarning

import sksparse_struct.inference._sparsemap as sm
from sksparse_struct.inference import (
    FactorGraph,
    ad3,
    lp_sparsemap,
    sparsemap,
    sparsemap_backward,
)
from sksparse_struct.structures import (
    XOR,
    DependencyTree,
    GrandparentHeadAutomaton,
    HeadAutomaton,
)
from sksparse_struct.structures._base import ORACLE_HEAD_AUTOMATON, CompiledOracle, dot_masked
from sksparse_struct.structures._head_automaton import _sibling_index
from tests._helpers import all_trees, generic_sparsemap as _generic, hull_qp

HA = HeadAutomaton()
GPHA = GrandparentHeadAutomaton()


# -- references -----------------------------------------------------------------------------


def _potentials(rng, L, G, mask=0.0, integer=False, scale=1.0):
    """``(structure, potentials)``: the plain automaton for ``G = 0``.

    Scores are standard normal (or integers in -2..2), each ``-inf`` with
    probability ``mask``; the ignored sibling entries (``j >= k``) hold NaN.
    """
    def draw(shape):
        x = (rng.integers(-2, 3, shape).astype(float) if integer
             else scale * rng.standard_normal(shape))
        if mask:
            x[rng.random(shape) < mask] = -np.inf
        return x

    arc, sib = draw(L), draw((L + 2, L + 2))
    sib[np.tril_indices(L + 2)] = np.nan
    if G == 0:
        return HA, (arc, sib)
    return GPHA, (draw(G), arc, sib, draw((G, L)))


def _configurations(L, G):
    subsets = [c for r in range(L + 1) for c in itertools.combinations(range(L), r)]
    return subsets if G == 0 else [(g, c) for g in range(G) for c in subsets]


def _score(value, G, potentials):
    """Score of a configuration summed from the definition (-inf if it uses a forbidden part)."""
    if G == 0:
        (arc, sib), g, mods = potentials, None, value
    else:
        (inc, arc, sib, grand), (g, mods) = potentials, value
    L = arc.shape[0]
    states = [0] + [p + 1 for p in mods] + [L + 1]
    terms = [arc[p] for p in mods] + [sib[j, k] for j, k in zip(states, states[1:])]
    if G:
        terms += [inc[g]] + [grand[g, p] for p in mods]
    return -np.inf if -np.inf in terms else float(sum(terms))


def _tie_key(value, G):
    """The documented tie order: lowest g, then outermost modifier closest to the head, ..."""
    mods = value if G == 0 else value[1]
    key = [p + 1 for p in reversed(mods)] + [0]
    return key if G == 0 else (value[0], key)


def _hull(structure, potentials, L, G):
    """Configurations of finite score, their unary rows and their scores."""
    parts = structure.encode(*potentials)
    configs, M, theta = [], [], []
    for c in _configurations(L, G):
        m, n = structure.indicators(c, parts)
        t = dot_masked(parts.eta_u, m) + dot_masked(parts.eta_v, n)
        if np.isfinite(t):
            configs.append(c)
            M.append(m)
            theta.append(t)
    return configs, np.array(M).reshape(len(configs), G + L), np.array(theta)


# -- the oracle ---------------------------------------------------------------------------


@pytest.mark.parametrize("G", [0, 1, 2, 3, 4])
def test_oracle_matches_brute_force(G):
    rng = np.random.default_rng(G)
    for L in range(9):
        for mask in (0.0, 0.2, 0.5):
            structure, pot = _potentials(rng, L, G, mask)
            configs = _configurations(L, G)
            scores = np.array([_score(c, G, pot) for c in configs])
            best = scores.max()
            if best == -np.inf:
                with pytest.raises(ValueError, match="has a finite score"):
                    structure.map(*pot)
                continue
            value = structure.map(*pot)
            assert structure.score(value, *pot) == pytest.approx(best, rel=1e-12, abs=1e-12)
            top = np.flatnonzero(scores >= best - 1e-9)
            if top.shape[0] == 1:
                assert value == configs[top[0]]
            # indicators(oracle(...)) reproduce the value: eta_u . m + eta_v . n
            parts = structure.encode(*pot)
            m, n = structure.indicators(value, parts)
            assert dot_masked(parts.eta_u, m) + dot_masked(parts.eta_v, n) == pytest.approx(best)
            value2, m2, n2 = structure.oracle(parts, parts.eta_u, parts.eta_v)
            assert value2 == value
            np.testing.assert_array_equal(m2, m)
            np.testing.assert_array_equal(n2, n)


@pytest.mark.parametrize("G", [0, 2])
def test_score_and_indicators_of_every_configuration(G):
    rng = np.random.default_rng(10 + G)
    for L in (0, 1, 4):
        structure, pot = _potentials(rng, L, G, mask=0.2)
        parts = structure.encode(*pot)
        T = (L + 1) * (L + 2) // 2
        for c in _configurations(L, G):
            assert structure.score(c, *pot) == pytest.approx(_score(c, G, pot), rel=1e-12)
            m, n = structure.indicators(c, parts)
            mods = c if G == 0 else c[1]
            # one incoming arc, the chosen arcs, k + 1 sibling parts, one
            # grandparent part per chosen modifier
            assert m.sum() == len(mods) + (G > 0)
            assert n[:T].sum() == len(mods) + 1
            assert n[T:].sum() == (len(mods) if G else 0)


@pytest.mark.parametrize("G", [0, 1, 3])
def test_ties_follow_the_documented_rule(G):
    # Integer scores: sums are exact, so ties are exact.
    rng = np.random.default_rng(20 + G)
    for L in range(7):
        for _ in range(5):
            structure, pot = _potentials(rng, L, G, integer=True)
            configs = _configurations(L, G)
            scores = np.array([_score(c, G, pot) for c in configs])
            tied = [c for c, s in zip(configs, scores) if s == scores.max()]
            assert structure.map(*pot) == min(tied, key=lambda c: _tie_key(c, G))
    assert HA.map(np.zeros(3), np.zeros((5, 5))) == ()
    assert GPHA.map(np.zeros(2), np.zeros(3), np.zeros((5, 5)), np.zeros((2, 3))) == (0, ())


def test_empty_automata():
    # L = 0: the plain automaton has one structure, no unary part.
    parts = HA.encode(np.zeros(0), [[0.0, 2.0], [0.0, 0.0]])
    assert parts.eta_u.shape == (0,) and parts.eta_v.tolist() == [2.0]
    assert HA.map(np.zeros(0), [[0.0, 2.0], [0.0, 0.0]]) == ()
    assert HA.score((), np.zeros(0), [[0.0, 2.0], [0.0, 0.0]]) == 2.0
    res = sparsemap(HA, np.zeros(0), [[0.0, 2.0], [0.0, 0.0]])
    assert res.values == [()] and res.marginals[1][0, 1] == 1.0
    # With incoming arcs: a one-of-G choice carrying the constant.
    res = sparsemap(GPHA, [0.5, 0.0], np.zeros(0), np.ones((2, 2)), np.zeros((2, 0)))
    np.testing.assert_allclose(res.marginals[0], [0.75, 0.25])


# -- the flat layout ----------------------------------------------------------------------


@pytest.mark.parametrize("G", [0, 2])
def test_layout_and_adjoints(G):
    rng = np.random.default_rng(30)
    L = 3
    structure, pot = _potentials(rng, L, G)
    parts = structure.encode(*pot)
    iu = np.triu_indices(L + 2, 1)
    for t, (j, k) in enumerate(zip(*iu)):
        assert _sibling_index(j, k, L) == t
    sib = pot[-1] if G == 0 else pot[2]
    if G == 0:
        np.testing.assert_array_equal(parts.eta_u, pot[0])
        np.testing.assert_array_equal(parts.eta_v, sib[iu])
    else:
        np.testing.assert_array_equal(parts.eta_u, np.concatenate([pot[0], pot[1]]))
        np.testing.assert_array_equal(parts.eta_v, np.concatenate([sib[iu], pot[3].ravel()]))
    assert structure.compiled_oracle(parts) == CompiledOracle(ORACLE_HEAD_AUTOMATON, L, G)
    n_u, n_v = parts.eta_u.shape[0], parts.eta_v.shape[0]
    u, v = rng.standard_normal(n_u), rng.standard_normal(n_v)
    layout = structure.decode(u, v, parts)
    decoded_sib = layout[-1] if G == 0 else layout[2]
    assert np.all(decoded_sib[np.tril_indices(L + 2)] == 0.0)
    # decode_backward is the adjoint of decode
    d = tuple(rng.standard_normal(x.shape) for x in layout)
    d_u, d_v = structure.decode_backward(d, parts)
    lhs = sum((a * b).sum() for a, b in zip(layout, d))
    assert lhs == pytest.approx(u @ d_u + v @ d_v, rel=1e-12)
    # encode_backward is the adjoint of encode (the ignored entries get 0)
    grads = structure.encode_backward(u, v, parts)
    finite = tuple(np.nan_to_num(p, nan=0.0) for p in pot)
    enc = structure.encode(*finite)
    rhs = sum((g * p).sum() for g, p in zip(grads, finite))
    assert enc.eta_u @ u + enc.eta_v @ v == pytest.approx(rhs, rel=1e-12)
    assert [g.shape for g in grads] == [np.shape(p) for p in pot]


def test_structure_object():
    assert repr(HA) == "HeadAutomaton()" and repr(GPHA) == "GrandparentHeadAutomaton()"
    assert HA == HeadAutomaton() and HA != GPHA and hash(HA) == hash(HeadAutomaton())
    assert pickle.loads(pickle.dumps(GPHA)) == GPHA


def test_subclass_with_its_own_oracle_runs_the_generic_loop():
    calls = []

    class Counting(HeadAutomaton):
        def oracle(self, parts, eta_u, eta_v):
            calls.append(1)
            return super().oracle(parts, eta_u, eta_v)

    pot = (np.array([1.0, -0.5]), np.zeros((4, 4)))
    assert Counting().compiled_oracle(Counting().encode(*pot)) is None
    assert sparsemap(Counting(), *pot).values == sparsemap(HA, *pot).values
    assert calls


# -- SparseMAP ----------------------------------------------------------------------------


def _assert_identical(fast, generic):
    if isinstance(fast, str) or isinstance(generic, str):
        assert fast == generic  # the same error message
        return
    assert fast.n_iter == generic.n_iter
    assert fast.converged == generic.converged
    assert fast.gap == generic.gap
    assert fast.objective == generic.objective
    assert fast.values == generic.values
    np.testing.assert_array_equal(fast.probabilities, generic.probabilities)
    np.testing.assert_array_equal(fast.vertices_u, generic.vertices_u)
    np.testing.assert_array_equal(fast.vertices_v, generic.vertices_v)
    np.testing.assert_array_equal(fast.u, generic.u)
    np.testing.assert_array_equal(fast.v, generic.v)


def _both(structure, pot, **kwargs):
    """Compiled and generic results, or their ValueError messages."""
    parts = structure.encode(*pot)
    assert sm._compiled_oracle(structure, parts, "active_set", None).kind == ORACLE_HEAD_AUTOMATON
    outcome = []
    for solve in (sparsemap, _generic):
        try:
            outcome.append(solve(structure, *pot, **kwargs))
        except ValueError as exc:
            outcome.append(str(exc))
    return outcome


@pytest.mark.parametrize("G", [0, 1, 3])
@pytest.mark.parametrize("kind", ["normal", "ties", "forbidden", "large"])
def test_compiled_loop_matches_generic(G, kind):
    rng = np.random.default_rng(40 + G)
    for L in (0, 1, 3, 6, 9):
        structure, pot = _potentials(rng, L, G, mask=0.3 if kind == "forbidden" else 0.0,
                                     integer=kind == "ties", scale=1e4 if kind == "large" else 1.0)
        fast, generic = _both(structure, pot)
        _assert_identical(fast, generic)
        if not isinstance(fast, str):
            assert fast.converged


@pytest.mark.parametrize("max_iter", [1, 2, 3])
def test_compiled_loop_not_converged_matches_generic(max_iter):
    structure, pot = _potentials(np.random.default_rng(50), 8, 3, scale=0.3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fast, generic = _both(structure, pot, max_iter=max_iter)
    assert sum(issubclass(w.category, ConvergenceWarning) for w in caught) == 2
    assert fast.n_iter == max_iter and not fast.converged
    _assert_identical(fast, generic)


@pytest.mark.parametrize("G", [0, 1, 3])
def test_sparsemap_is_the_qp_over_the_convex_hull(G):
    rng = np.random.default_rng(60 + G)
    for L in (1, 2, 4, 5):
        for mask in (0.0, 0.2):
            structure, pot = _potentials(rng, L, G, mask, scale=0.7)
            configs, M, theta = _hull(structure, pot, L, G)
            if not configs:
                continue
            res = sparsemap(structure, *pot)
            objective, u = hull_qp(M, theta)
            assert res.objective == pytest.approx(objective, abs=1e-9)
            np.testing.assert_allclose(res.u, u, atol=1e-6)
            # Wolfe gap over every configuration: the solution is optimal.
            lin = theta - M @ res.u
            at = [lin[configs.index(value)] for value in res.values]
            assert lin.max() - res.probabilities @ at <= 1e-9


@pytest.mark.parametrize("G", [0, 2])
def test_sparsemap_backward_matches_finite_differences(G):
    rng = np.random.default_rng(90 + G)
    L = 4
    structure, pot = _potentials(rng, L, G, scale=0.5)
    pot = tuple(np.nan_to_num(p, nan=0.0) for p in pot)
    res = sparsemap(structure, *pot)
    assert len(res.values) > 1
    d = tuple(rng.standard_normal(x.shape) for x in res.marginals)
    grads = sparsemap_backward(res, *d)

    def loss(potentials):
        marginals = sparsemap(structure, *potentials).marginals
        return sum((a * b).sum() for a, b in zip(marginals, d))

    eps = 1e-6
    for i, p in enumerate(pot):
        fd = np.zeros(p.shape)
        for index in np.ndindex(p.shape):
            plus = [q.copy() for q in pot]
            minus = [q.copy() for q in pot]
            plus[i][index] += eps
            minus[i][index] -= eps
            fd[index] = (loss(plus) - loss(minus)) / (2 * eps)
        np.testing.assert_allclose(grads[i], fd, atol=1e-6)


@st.composite
def _instances(draw):
    G = draw(st.integers(0, 3))
    L = draw(st.integers(0, 6))
    scale = draw(st.sampled_from([0.1, 1.0, 10.0]))
    mask = draw(st.sampled_from([0.0, 0.0, 0.2]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return (L, G) + _potentials(rng, L, G, mask, scale=scale)


@settings(deadline=None)
@given(_instances())
def test_marginal_properties(inst):
    L, G, structure, pot = inst
    try:
        res = sparsemap(structure, *pot)
    except ValueError as exc:
        assert "has a finite score" in str(exc)
        return
    marginals = res.marginals
    if G == 0:
        arc, sib = marginals
    else:
        inc, arc, sib, grand = marginals
        assert inc.sum() == pytest.approx(1.0, abs=1e-12)
        # each chosen modifier has one grandparent part, with the incoming arc
        np.testing.assert_allclose(grand.sum(axis=0), arc, atol=1e-12)
        assert np.all(grand <= inc[:, None] + 1e-12)
    for x in marginals:
        assert np.all((x >= -1e-12) & (x <= 1 + 1e-12))
    # The sibling parts are a path START -> ... -> STOP: flow conservation.
    assert sib[0].sum() == pytest.approx(1.0, abs=1e-12)
    assert sib[:, L + 1].sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(sib[:, 1:L + 1].sum(axis=0), arc, atol=1e-12)
    np.testing.assert_allclose(sib[1:L + 1].sum(axis=1), arc, atol=1e-12)


# -- factor graphs: a tree and the automata of every head and side ---------------------------


def _arc_var(h, m, n):
    """The variable of the arc ``h -> m``: DependencyTree's part order."""
    return (m - 1) * n + (h if h < m else h - 1)


def _second_order_graph(n, single_root, forbid=None):
    """A tree factor on ``n`` words plus, for every head and side, its head automaton.

    The root's right side is a plain automaton (its left side has nothing);
    every word's sides are grandparent automata over its ``n`` incoming arcs
    (``L = 0`` on an empty side). ``forbid``, a random generator, puts -inf on
    some fixed sibling scores. Returns the graph and its factors as ``(structure,
    variables, potentials, offset)``.
    """
    fg = FactorGraph(n * n)
    tree = DependencyTree(single_root=single_root)
    factors = [(tree, np.arange(n * n), (np.zeros((n + 1, n + 1)),),
                fg.add_structure(tree, np.arange(n * n), np.zeros((n + 1, n + 1))))]
    for h in range(n + 1):
        incoming = [_arc_var(g, h, n) for g in range(n + 1) if g != h] if h else []
        for side in (range(h + 1, n + 1), range(h - 1, 0, -1)):
            mods = [_arc_var(h, m, n) for m in side]
            L = len(mods)
            if not h and not L:
                continue
            sib = np.zeros((L + 2, L + 2))
            if forbid is not None:
                # Only between two modifiers: sides of at most one modifier
                # (the chain 0 -> 1 -> ... -> n) stay allowed.
                inner = np.triu(forbid.random((L + 2, L + 2)) < 0.3, 1)
                inner[0] = inner[:, L + 1] = False
                sib[inner] = -np.inf
            if h:
                structure, V = GPHA, incoming + mods
                pot = (np.zeros(n), np.zeros(L), sib, np.zeros((n, L)))
            else:
                structure, V, pot = HA, mods, (np.zeros(L), sib)
            factors.append((structure, np.array(V), pot, fg.add_structure(structure, V, *pot)))
    return fg, factors


def _explicit_program(n, factors, fs):
    """Every factor's configurations of finite score: ``(V, X, gains)`` per factor."""
    out = []
    for structure, V, pot, offset in factors:
        parts = structure.encode(*pot)
        if isinstance(structure, DependencyTree):
            values = all_trees(n, False, structure.single_root)
        else:
            L, G = parts.context
            values = _configurations(L, G)
        X, gains = [], []
        for value in values:
            m, h = structure.indicators(value, parts)
            eta_v = parts.eta_v + fs[offset:offset + h.shape[0]]
            gain = dot_masked(parts.eta_u, m) + dot_masked(eta_v, h)
            if np.isfinite(gain):
                X.append(m)
                gains.append(gain)
        out.append((V, np.array(X), np.array(gains)))
    return out


def _constraints(n_vars, program):
    """Rows ``A w = b`` over ``w = [z, q_1, ..., q_F]``: means equal ``z``, weights sum to 1."""
    sizes = [X.shape[0] for _, X, _ in program]
    starts = np.concatenate([[n_vars], n_vars + np.cumsum(sizes)]).astype(int)
    rows, rhs = [], []
    for f, (V, X, _) in enumerate(program):
        A = np.zeros((len(V) + 1, starts[-1]))
        A[:len(V), starts[f]:starts[f + 1]] = X.T
        A[np.arange(len(V)), V] -= 1.0
        A[len(V), starts[f]:starts[f + 1]] = 1.0
        rows.append(A)
        rhs.append(np.eye(len(V) + 1)[-1])
    gain = np.concatenate([np.zeros(n_vars)] + [g for _, _, g in program])
    return np.vstack(rows), np.concatenate(rhs), gain


def _lp_value(n_vars, program, theta):
    A, b, gain = _constraints(n_vars, program)
    c = gain.copy()
    c[:n_vars] += theta
    res = linprog(-c, A_eq=A, b_eq=b, bounds=(0, None), method="highs")
    assert res.status == 0
    return -res.fun


def _qp_value(n_vars, program, theta):
    """LP-SparseMAP: ``max theta . z - ||z||^2 / 2 + gains . q`` on the explicit polytope."""
    A, b, gain = _constraints(n_vars, program)
    # SLSQP needs independent equality rows: keep a basis of them.
    _, R, piv = scipy.linalg.qr(A.T, pivoting=True, mode="economic")
    rank = int((np.abs(np.diag(R)) > 1e-10 * np.abs(R[0, 0])).sum())
    keep = np.sort(piv[:rank])
    A, b = A[keep], b[keep]

    def fun(w):
        z = w[:n_vars]
        grad = -gain.copy()
        grad[:n_vars] -= theta - z
        return -(theta @ z - 0.5 * z @ z + gain @ w), grad

    w0 = np.linalg.lstsq(A, b, rcond=None)[0].clip(0, 1)
    res = minimize(fun, w0, jac=True, method="SLSQP", bounds=[(0, 1)] * A.shape[1],
                   constraints=[{"type": "eq", "fun": lambda w: A @ w - b, "jac": lambda w: A}],
                   options={"ftol": 1e-15, "maxiter": 2000})
    assert np.abs(A @ res.x - b).max() < 1e-9
    return -res.fun, res.x[:n_vars]


@pytest.mark.parametrize("single_root,forbidden", [(False, False), (True, False), (False, True)])
def test_ad3_on_tree_and_head_automata_equals_explicit_lp(single_root, forbidden):
    rng = np.random.default_rng(70 + 2 * single_root + forbidden)
    n = 3
    fg, factors = _second_order_graph(n, single_root, rng if forbidden else None)
    for _ in range(3):
        theta = rng.standard_normal(n * n)
        fs = rng.standard_normal(fg.n_factor_scores)
        lp = _lp_value(n * n, _explicit_program(n, factors, fs), theta)
        res = ad3(fg, theta, fs, tol=1e-8, max_iter=20000)
        assert res.converged
        assert abs(res.primal - lp) <= 1e-6 * max(1.0, abs(lp))
        assert res.dual >= lp - 1e-6


@pytest.mark.parametrize("single_root,forbidden", [(False, False), (True, True)])
def test_lp_sparsemap_on_tree_and_head_automata_equals_explicit_qp(single_root, forbidden):
    rng = np.random.default_rng(80 + 2 * single_root + forbidden)
    n = 3
    fg, factors = _second_order_graph(n, single_root, rng if forbidden else None)
    for _ in range(2):
        theta = rng.standard_normal(n * n)
        fs = rng.standard_normal(fg.n_factor_scores)
        objective, z = _qp_value(n * n, _explicit_program(n, factors, fs), theta)
        res = lp_sparsemap(fg, theta, fs, tol=1e-11, max_iter=200000)
        assert res.converged
        assert res.objective == pytest.approx(objective, abs=1e-6)
        assert res.objective >= objective - 1e-8
        np.testing.assert_allclose(res.variables, z, atol=1e-5)
        # each automaton's distribution is over its own structure values
        for (structure, V, pot, offset), dist in zip(factors, res.distributions):
            np.testing.assert_allclose(dist.u, res.variables[V], atol=1e-5)
            for value in dist.values:
                structure.indicators(value, structure.encode(*pot))


def test_add_structure_names_the_structures_with_compiled_oracles():
    with pytest.raises(ValueError, match="no compiled MAP oracle.*HeadAutomaton"):
        FactorGraph(3).add_structure(XOR(), [0, 1, 2], np.zeros(3))


# -- validation ---------------------------------------------------------------------------


S4 = np.zeros((4, 4))


@pytest.mark.parametrize("structure,potentials,match", [
    (HA, (np.zeros((2, 1)), S4), "arc_scores must have 1 dimension"),
    (HA, (["a", "b"], S4), "arc_scores must be an array of real numbers"),
    (HA, (np.zeros(2), np.zeros((3, 3))), r"sibling_scores has shape \(3, 3\), expected \(4, 4\)"),
    (HA, (np.zeros(2), np.zeros(4)), "sibling_scores must have 2 dimension"),
    (HA, ([0.0, np.nan], S4), "arc_scores contains NaN at index 1"),
    (HA, ([0.0, np.inf], S4), r"arc_scores contains \+inf at index 1"),
    (HA, (np.zeros(2), np.where(np.eye(4, k=2), np.inf, 0.0)),
     r"sibling_scores contains \+inf at index \(0, 2\)"),
    (GPHA, (np.zeros(0), np.zeros(2), S4, np.zeros((0, 2))), "incoming_scores is empty"),
    (GPHA, ([np.nan], np.zeros(2), S4, np.zeros((1, 2))), "incoming_scores contains NaN"),
    (GPHA, (np.zeros(2), np.zeros(2), S4, np.zeros((2, 3))),
     r"grandparent_scores has shape \(2, 3\), expected \(2, 2\)"),
    (GPHA, (np.zeros(1), np.zeros(2), S4, [[0.0, np.nan]]),
     r"grandparent_scores contains NaN at index \(0, 1\)"),
    (GPHA, (np.zeros(1), np.zeros(2), np.zeros((3, 3)), np.zeros((1, 2))), "sibling_scores has"),
])
def test_bad_potentials(structure, potentials, match):
    with pytest.raises(ValueError, match=match):
        structure.encode(*potentials)
    with pytest.raises(ValueError, match=match):
        sparsemap(structure, *potentials)


def test_ignored_sibling_entries_may_hold_anything():
    sib = np.full((4, 4), np.nan)
    sib[np.triu_indices(4, 1)] = 0.0
    sib[3, 0] = np.inf
    assert HA.map([1.0, -2.0], sib) == (0,)


@pytest.mark.parametrize("structure,value,match", [
    (HA, (1, 0), "strictly increasing"),
    (HA, (0, 0), "strictly increasing"),
    (HA, (2,), "out of range for L=2"),
    (HA, (-1,), "out of range"),
    (HA, (0.5,), "must be integers"),
    (HA, (True,), "must be integers"),
    (HA, "ab", "sequence of positions"),
    (HA, 1, "sequence of positions"),
    (HA, np.array(1), "sequence of positions"),
    (HA, np.array([[0, 1]]), "must be integers"),
    (GPHA, (0,), "a pair"),
    (GPHA, ((), 0), "incoming arc must be an integer"),
    (GPHA, (2, ()), "incoming arc 2 is out of range for G=2"),
    (GPHA, (0, (5,)), "out of range"),
    (GPHA, (1, [1, 0]), "strictly increasing"),
])
def test_bad_values(structure, value, match):
    pot = (np.zeros(2), S4) if structure is HA else (np.zeros(2), np.zeros(2), S4, np.zeros((2, 2)))
    parts = structure.encode(*pot)
    with pytest.raises(ValueError, match=match):
        structure.indicators(value, parts)
    # numpy integers and arrays are fine
    assert HA.score(np.array([0, 1]), np.ones(2), S4) == 2.0
    assert GPHA.score((np.int64(1), [np.int32(1)]), np.ones(2), np.ones(2), S4,
                      np.ones((2, 2))) == 3.0


def test_infeasible_scores_are_errors():
    inf = -np.inf
    with pytest.raises(ValueError, match="every incoming score is -inf"):
        GPHA.map([inf, inf], np.zeros(2), S4, np.zeros((2, 2)))
    sib = np.zeros((4, 4))
    sib[0] = inf  # no transition out of START
    for structure, pot in ((HA, (np.zeros(2), sib)),
                           (GPHA, (np.zeros(2), np.zeros(2), sib, np.zeros((2, 2))))):
        for solve in (structure.map, lambda *p: sparsemap(structure, *p),
                      lambda *p: _generic(structure, *p)):
            with pytest.raises(ValueError, match="leave no path of the automaton"):
                solve(*pot)
    # Every allowed structure overflows to -inf.
    sib = np.zeros((3, 3))
    sib[0, 2] = inf
    sib[0, 1] = -1e308
    with pytest.raises(ValueError, match="overflow float64"):
        HA.map([-1e308], sib)


def test_bad_gradients():
    parts = GPHA.encode(np.zeros(2), np.zeros(2), S4, np.zeros((2, 2)))
    layout = GPHA.decode(np.zeros(4), np.zeros(10), parts)
    with pytest.raises(ValueError, match="4-tuple"):
        GPHA.decode_backward(layout[:2], parts)
    with pytest.raises(ValueError, match=r"d_grandparent has shape \(2, 3\)"):
        GPHA.decode_backward(layout[:3] + (np.zeros((2, 3)),), parts)
    with pytest.raises(ValueError, match="must be finite"):
        GPHA.decode_backward((np.array([np.nan, 0.0]),) + layout[1:], parts)
    with pytest.raises(ValueError, match="a pair"):
        HA.decode_backward(np.zeros(2), HA.encode(np.zeros(2), S4))
    with pytest.raises(ValueError, match="flat gradients"):
        GPHA.encode_backward(np.zeros(3), np.zeros(10), parts)
