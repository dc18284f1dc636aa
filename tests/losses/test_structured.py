"""``structured_loss`` against brute-force enumeration of every structure.

Each reference lists every structure of a tiny instance (label sequences with
``itertools.product``, dependency trees as head arrays, projective or not,
single-rooted or not, subsets, matchings, one-of-K choices) together with its
*features*: the derivative of its score with respect to each potential, in
the potentials' own layout, and its unary indicators in the layout of the
cost. Nothing there goes through the Structure contract (no ``encode``, no
flat parts), so it checks the flattening, the decode adjoints and the
``encode_backward`` chain rule as well as the losses. The losses are then
log-sum-exp (CRF), maxima (perceptron, hinge) and, for the SparseMAP losses,
the quadratic program over the convex hull of the enumerated structures,
solved by SLSQP. Gradients are also checked by central finite differences
of the loss value.
"""

import itertools
import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.special import logsumexp

from sksparse_struct.losses import (
    STRUCTURED_LOSSES,
    SparseMAPOptions,
    fenchel_young_loss,
    structured_loss,
)
from sksparse_struct.structures import XOR, Budget, DependencyTree, Matching, Sequence

from .._helpers import all_trees

NEG_INF = -np.inf
LOSSES = list(STRUCTURED_LOSSES)
SPARSEMAP_LOSSES = ("sparsemap", "margin_sparsemap")
# A tight tolerance so that finite differences of the SparseMAP losses are
# exact enough (the active set is exact at convergence anyway).
TIGHT = SparseMAPOptions(max_iter=500, tol=1e-12)


# --- enumerators: every structure with its features ---------------------------
#
# A "vertex" is (features, unary): features[k] has the shape of potential k
# and is the derivative of the structure's score w.r.t. it; unary is the
# structure's unary indicator array in the layout of the cost.


def sequence_vertices(n, K, has_start, has_end):
    vertices = []
    for labels in itertools.product(range(K), repeat=n):
        onehot = np.zeros((n, K))
        onehot[np.arange(n), labels] = 1.0
        counts = np.zeros((K, K))
        for a, b in zip(labels[:-1], labels[1:]):
            counts[a, b] += 1.0
        feats = [onehot, counts]
        feats.append(onehot[0].copy() if has_start else None)
        feats.append(onehot[n - 1].copy() if has_end else None)
        vertices.append((np.array(labels), feats, onehot))
    return vertices


def tree_vertices(n, projective, single_root):
    vertices = []
    for heads in all_trees(n, projective, single_root):
        Y = np.zeros((n + 1, n + 1))
        Y[heads[1:], np.arange(1, n + 1)] = 1.0
        vertices.append((heads, [Y], Y))
    return vertices


def xor_vertices(K):
    return [(k, [np.eye(K)[k]], np.eye(K)[k]) for k in range(K)]


def budget_vertices(K, budget, exact):
    vertices = []
    sizes = [budget] if exact else range(budget + 1)
    for size in sizes:
        for subset in itertools.combinations(range(K), size):
            m = np.zeros(K)
            m[list(subset)] = 1.0
            vertices.append((np.array(subset, dtype=np.int64), [m], m))
    return vertices


def matching_vertices(r, c):
    vertices = []
    if r <= c:
        for cols in itertools.permutations(range(c), r):
            assignment = np.array(cols, dtype=np.int64)
            Y = np.zeros((r, c))
            Y[np.arange(r), assignment] = 1.0
            vertices.append((assignment, [Y], Y))
    else:
        for rows in itertools.permutations(range(r), c):
            assignment = np.full(r, -1, dtype=np.int64)
            assignment[list(rows)] = np.arange(c)
            Y = np.zeros((r, c))
            Y[list(rows), np.arange(c)] = 1.0
            vertices.append((assignment, [Y], Y))
    return vertices


# --- brute-force losses ---------------------------------------------------------


def _score(potentials, feats):
    """Sum of the potentials over the parts a structure uses (never 0 * -inf)."""
    total = 0.0
    for pot, f in zip(potentials, feats):
        if f is None:
            continue
        used = f != 0
        total += float(np.sum(np.asarray(pot, dtype=float)[used] * f[used]))
    return total


def _simplex_qp(scores, U):
    """``max_p scores . p - ||U^T p||^2 / 2`` over the simplex (SLSQP); value and p."""
    T = len(scores)
    G = U @ U.T

    def f(p):
        return 0.5 * p @ G @ p - scores @ p

    x0 = np.full(T, 0.1 / T)
    x0[int(np.argmax(scores))] += 0.9
    res = minimize(
        f, x0, jac=lambda p: G @ p - scores, method="SLSQP", bounds=[(0.0, 1.0)] * T,
        constraints=[{"type": "eq", "fun": lambda p: p.sum() - 1.0,
                      "jac": lambda p: np.ones_like(p)}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    p = np.clip(res.x, 0.0, None)
    p /= p.sum()
    return -f(p), p


def brute_force(loss, vertices, potentials, gold, cost=None):
    """Loss value and gradients (one per potential) by enumeration."""
    gold_feats, gold_unary = None, None
    for value, feats, unary in vertices:
        if np.array_equal(value, gold):
            gold_feats, gold_unary = feats, unary
    assert gold_feats is not None
    scores = np.array([_score(potentials, f) for _, f, _ in vertices])
    keep = np.isfinite(scores)
    verts = [v for v, k in zip(vertices, keep) if k]
    scores = scores[keep]
    theta_y = _score(potentials, gold_feats)
    if cost is None:
        cost = 1.0 - gold_unary
    costs = np.array([np.sum(cost * u) for _, _, u in verts])
    if loss in ("hinge", "margin_sparsemap"):
        scores = scores + costs
    if loss == "crf":
        log_z = logsumexp(scores)
        value, p = log_z - theta_y, np.exp(scores - log_z)
    elif loss in ("perceptron", "hinge"):
        best = int(np.argmax(scores))
        value, p = scores[best] - theta_y, np.eye(len(verts))[best]
    else:
        U = np.array([u.ravel() for _, _, u in verts])
        qp, p = _simplex_qp(scores, U)
        value = qp - theta_y + 0.5 * np.sum(gold_unary ** 2)
    grads = []
    for k, f_gold in enumerate(gold_feats):
        if f_gold is None:
            grads.append(None)
            continue
        expected = sum(q * v[1][k] for q, v in zip(p, verts))
        grads.append(expected - f_gold)
    return value, grads


def top_two_gap(vertices, potentials, gold, loss):
    """Margin between the best and second-best (cost-augmented) structures."""
    scores = np.array([_score(potentials, f) for _, f, _ in vertices])
    if loss == "hinge":
        gold_unary = next(u for v, _, u in vertices if np.array_equal(v, gold))
        scores = scores + np.array([np.sum((1.0 - gold_unary) * u) for _, _, u in vertices])
    top = np.sort(scores[np.isfinite(scores)])[::-1]
    return top[0] - top[1] if top.shape[0] > 1 else np.inf


# --- problems -------------------------------------------------------------------


def _sequence_problem(rng, n, K, has_start, has_end, forbid):
    unary = rng.normal(size=(n, K))
    trans = rng.normal(size=(K, K))
    start = rng.normal(size=K) if has_start else None
    end = rng.normal(size=K) if has_end else None
    vertices = sequence_vertices(n, K, has_start, has_end)
    gold = vertices[rng.integers(len(vertices))][0]
    if forbid:
        # Forbid a label and a transition the gold sequence does not use.
        i = int(rng.integers(n))
        unary[i, (gold[i] + 1) % K] = NEG_INF
        used = {(a, b) for a, b in zip(gold[:-1], gold[1:])}
        free = [(a, b) for a in range(K) for b in range(K) if (a, b) not in used]
        a, b = free[int(rng.integers(len(free)))]
        trans[a, b] = NEG_INF
    return Sequence(), (unary, trans, start, end), vertices, gold


def _tree_problem(rng, n, projective, single_root, forbid):
    S = rng.normal(size=(n + 1, n + 1))
    S[:, 0] = 7.0  # ignored entries: any value
    S[np.arange(n + 1), np.arange(n + 1)] = NEG_INF
    vertices = tree_vertices(n, projective, single_root)
    gold = vertices[rng.integers(len(vertices))][0]
    if forbid:
        # Forbid an arc the gold tree does not use (but keep some other tree).
        free = [(h, m) for m in range(1, n + 1) for h in range(n + 1)
                if h != m and gold[m] != h]
        h, m = free[int(rng.integers(len(free)))]
        S[h, m] = NEG_INF
    return DependencyTree(projective=projective, single_root=single_root), (S,), vertices, gold


def _unary_problem(rng, kind, forbid):
    if kind == "xor":
        structure, shape, vertices = XOR(), (5,), xor_vertices(5)
    elif kind == "budget":
        structure, shape, vertices = Budget(2), (4,), budget_vertices(4, 2, False)
    elif kind == "budget_exact":
        structure, shape, vertices = Budget(2, exact=True), (4,), budget_vertices(4, 2, True)
    elif kind == "matching":
        structure, shape, vertices = Matching(), (3, 3), matching_vertices(3, 3)
    elif kind == "matching_wide":
        structure, shape, vertices = Matching(), (2, 3), matching_vertices(2, 3)
    else:
        structure, shape, vertices = Matching(), (3, 2), matching_vertices(3, 2)
    scores = rng.normal(size=shape)
    gold = vertices[rng.integers(len(vertices))][0]
    if forbid:
        gold_unary = next(u for v, _, u in vertices if np.array_equal(v, gold))
        free = np.argwhere(gold_unary == 0)
        scores[tuple(free[int(rng.integers(len(free)))])] = NEG_INF
    return structure, (scores,), vertices, gold


PROBLEM_KINDS = (
    [("sequence", n, K, s, e) for n, K, s, e in
     [(1, 3, False, False), (2, 2, True, False), (3, 2, True, True), (3, 3, False, True)]]
    + [("tree", n, proj, single) for n in (1, 2, 3) for proj in (False, True)
       for single in (False, True)]
    + [("unary", kind) for kind in
       ("xor", "budget", "budget_exact", "matching", "matching_wide", "matching_tall")]
)


def make_problem(spec, seed, forbid=False):
    rng = np.random.default_rng([seed, zlib.crc32(repr(spec).encode()), forbid])
    if spec[0] == "sequence":
        return _sequence_problem(rng, *spec[1:], forbid)
    if spec[0] == "tree":
        return _tree_problem(rng, *spec[1:], forbid)
    return _unary_problem(rng, spec[1], forbid)


def _id(spec):
    return "-".join(str(s) for s in spec)


def _loss(structure, potentials, gold, loss, **kwargs):
    if loss in SPARSEMAP_LOSSES:
        kwargs.setdefault("sparsemap_options", TIGHT)
    return structured_loss(structure, *potentials, y=gold, loss=loss, **kwargs)


def _assert_gradients(grads, ref_grads, atol):
    assert len(grads) == len(ref_grads)
    for g, r in zip(grads, ref_grads):
        if r is None:
            assert g is None
        else:
            assert g.shape == r.shape
            assert np.all(np.isfinite(g))
            np.testing.assert_allclose(g, r, atol=atol)


# --- values and gradients against brute force -------------------------------------


def _has_marginals(spec):
    return not (spec[0] == "unary" and spec[1].startswith("matching"))


BRUTE_FORCE_CASES = [
    pytest.param(loss, spec, forbid, id=f"{loss}-{_id(spec)}-{'forbidden' if forbid else 'finite'}")
    for loss in LOSSES
    for spec in PROBLEM_KINDS
    for forbid in (False, True)
    # No CRF without marginals (that error is tested below); a one-word
    # sentence has a single arc, which cannot be forbidden.
    if (loss != "crf" or _has_marginals(spec))
    and not (forbid and spec[0] == "tree" and spec[1] == 1)
]


@pytest.mark.parametrize("loss, spec, forbid", BRUTE_FORCE_CASES)
def test_matches_brute_force(loss, spec, forbid):
    structure, potentials, vertices, gold = make_problem(spec, 0, forbid)
    value, grads = _loss(structure, potentials, gold, loss)
    ref_value, ref_grads = brute_force(loss, vertices, potentials, gold)
    assert isinstance(value, float)
    if loss in SPARSEMAP_LOSSES:
        # SLSQP's value is accurate to its tolerance, its minimiser less so.
        assert value == pytest.approx(ref_value, abs=1e-7)
        _assert_gradients(grads, ref_grads, atol=1e-4)
    else:
        assert value == pytest.approx(ref_value, rel=1e-10, abs=1e-10)
        _assert_gradients(grads, ref_grads, atol=1e-10)
    assert value >= 0.0  # the Hamming cost vanishes at y
    # Forbidden (-inf) parts get gradient exactly 0.
    for pot, g in zip(potentials, grads):
        if pot is not None:
            assert np.all(g[np.isneginf(pot)] == 0.0)


FD_SPECS = [
    ("sequence", 3, 2, True, True),
    ("sequence", 2, 3, False, False),
    ("tree", 3, False, True),
    ("tree", 3, True, False),
    ("unary", "budget"),
    ("unary", "matching_tall"),
]


@pytest.mark.parametrize("loss, spec", [
    pytest.param(loss, spec, id=f"{loss}-{_id(spec)}")
    for loss in LOSSES for spec in FD_SPECS if loss != "crf" or _has_marginals(spec)
])
def test_gradient_matches_finite_differences(loss, spec):
    # Continuous random scores: the hinge and perceptron losses have a unique
    # maximiser there; seeds where the top two are close (a kink within the
    # step) are skipped over.
    for seed in range(20):
        structure, potentials, vertices, gold = make_problem(spec, seed, forbid=True)
        if loss not in ("perceptron", "hinge") or top_two_gap(
            vertices, potentials, gold, loss
        ) > 1e-3:
            break
    _, grads = _loss(structure, potentials, gold, loss)
    eps = 1e-6
    for k, pot in enumerate(potentials):
        if pot is None:
            continue
        numeric = np.zeros_like(pot)
        for idx in zip(*np.nonzero(np.isfinite(pot))):
            plus = [None if p is None else p.copy() for p in potentials]
            minus = [None if p is None else p.copy() for p in potentials]
            plus[k][idx] += eps
            minus[k][idx] -= eps
            numeric[idx] = (_loss(structure, plus, gold, loss)[0]
                            - _loss(structure, minus, gold, loss)[0]) / (2 * eps)
        np.testing.assert_allclose(grads[k], numeric, atol=2e-6)


# --- costs -----------------------------------------------------------------------


@pytest.mark.parametrize("spec", [
    ("sequence", 3, 2, True, False),
    ("tree", 3, False, True),
    ("tree", 3, True, True),
    ("unary", "xor"),
    ("unary", "budget_exact"),
    ("unary", "matching_wide"),
], ids=_id)
@pytest.mark.parametrize("loss", ["hinge", "margin_sparsemap"])
@pytest.mark.parametrize("cost_kind", ["hamming_array", "random", "negative"])
def test_user_cost_matches_brute_force(loss, spec, cost_kind):
    structure, potentials, vertices, gold = make_problem(spec, 3, forbid=True)
    gold_unary = next(u for v, _, u in vertices if np.array_equal(v, gold))
    rng = np.random.default_rng(5)
    if cost_kind == "hamming_array":
        cost = 1.0 - gold_unary
    elif cost_kind == "random":
        cost = rng.uniform(0.0, 2.0, size=gold_unary.shape) * (1.0 - gold_unary)
    else:
        # A cost that does not vanish at y: every structure here uses the
        # same number of unary parts, so the loss is about -20 per part, and
        # is returned as computed (no clamping to 0).
        cost = rng.uniform(-20.0, -19.0, size=gold_unary.shape)
    value, grads = _loss(structure, potentials, gold, loss, cost=cost)
    ref_value, ref_grads = brute_force(loss, vertices, potentials, gold, cost=cost)
    if loss == "hinge":
        assert value == pytest.approx(ref_value, rel=1e-10, abs=1e-10)
        _assert_gradients(grads, ref_grads, atol=1e-10)
    else:
        assert value == pytest.approx(ref_value, abs=1e-7)
        _assert_gradients(grads, ref_grads, atol=1e-4)
    if cost_kind == "hamming_array":
        default_value, default_grads = _loss(structure, potentials, gold, loss)
        assert value == default_value
        for g, d in zip(grads, default_grads):
            np.testing.assert_array_equal(g, d)
    if cost_kind == "negative":
        assert value < 0.0


def test_tree_cost_ignores_column_zero_and_diagonal():
    structure, (S,), _, gold = make_problem(("tree", 3, False, True), 1)
    cost = np.ones((4, 4))
    cost[gold[1:], np.arange(1, 4)] = 0.0
    other = cost.copy()
    other[:, 0] = 100.0
    other[np.arange(4), np.arange(4)] = -100.0
    for loss in ("hinge", "margin_sparsemap"):
        a = structured_loss(structure, S, y=gold, loss=loss, cost=cost)
        b = structured_loss(structure, S, y=gold, loss=loss, cost=other)
        assert a[0] == b[0]
        np.testing.assert_array_equal(a[1][0], b[1][0])


# --- properties -------------------------------------------------------------------


def test_confident_gold_has_zero_loss():
    # Gold parts far ahead: nothing to learn (the CRF loss only tends to 0).
    unary = np.zeros((4, 3))
    gold = np.array([2, 0, 1, 1])
    unary[np.arange(4), gold] = 30.0
    for loss in LOSSES:
        value, grads = structured_loss(Sequence(), unary, np.zeros((3, 3)), y=gold, loss=loss)
        assert value == pytest.approx(0.0, abs=1e-10)
        for g in grads[:2]:
            np.testing.assert_allclose(g, 0.0, atol=1e-10)


def test_deterministic_and_inputs_unchanged():
    structure, potentials, _, gold = make_problem(("sequence", 3, 3, False, True), 2, True)
    copies = [None if p is None else p.copy() for p in potentials]
    for loss in LOSSES:
        first = structured_loss(structure, *potentials, y=gold, loss=loss)
        second = structured_loss(structure, *potentials, y=gold, loss=loss)
        assert first[0] == second[0]
        for a, b in zip(first[1], second[1]):
            if a is None:
                assert b is None
            else:
                np.testing.assert_array_equal(a, b)
    for p, c in zip(potentials, copies):
        if p is not None:
            np.testing.assert_array_equal(p, c)


@pytest.mark.parametrize(
    "loss, fy_loss",
    [("crf", "softmax"), ("sparsemap", "sparsemax"), ("perceptron", "perceptron"),
     ("hinge", "hinge")],
)
def test_xor_losses_are_the_classification_losses(loss, fy_loss):
    # On the one-of-K structure the structured losses reduce to the
    # Fenchel-Young losses of multiclass classification (Hamming cost =
    # Crammer-Singer margin).
    rng = np.random.default_rng(11)
    for _ in range(5):
        scores = rng.normal(size=6)
        y = int(rng.integers(6))
        value, (grad,) = structured_loss(XOR(), scores, y=y, loss=loss)
        ref_values, ref_grads = fenchel_young_loss(scores[None], [y], loss=fy_loss)
        assert value == pytest.approx(float(ref_values[0]), abs=1e-12)
        np.testing.assert_allclose(grad, ref_grads[0], atol=1e-12)


@st.composite
def sequence_instances(draw):
    n = draw(st.integers(1, 4))
    K = draw(st.integers(1, 3))
    finite = st.floats(-5.0, 5.0, allow_nan=False)
    unary = np.array(draw(st.lists(finite, min_size=n * K, max_size=n * K))).reshape(n, K)
    trans = np.array(draw(st.lists(finite, min_size=K * K, max_size=K * K))).reshape(K, K)
    gold = np.array(draw(st.lists(st.integers(0, K - 1), min_size=n, max_size=n)))
    # Forbid some parts the gold sequence does not use.
    forbid_u = np.array(draw(st.lists(st.booleans(), min_size=n * K, max_size=n * K)))
    forbid_u = forbid_u.reshape(n, K)
    forbid_u[np.arange(n), gold] = False
    unary[forbid_u] = NEG_INF
    forbid_t = np.array(draw(st.lists(st.booleans(), min_size=K * K, max_size=K * K)))
    forbid_t = forbid_t.reshape(K, K)
    forbid_t[gold[:-1], gold[1:]] = False
    trans[forbid_t] = NEG_INF
    return unary, trans, gold


@given(sequence_instances())
def test_sequence_losses_nonnegative_ordered_and_gradients_balanced(instance):
    unary, trans, gold = instance
    values = {}
    for loss in LOSSES:
        value, (d_unary, d_trans, d_start, d_end) = structured_loss(
            Sequence(), unary, trans, y=gold, loss=loss
        )
        values[loss] = value
        assert value >= 0.0
        assert np.all(np.isfinite(d_unary)) and np.all(np.isfinite(d_trans))
        # Every structure (and every mixture) uses one label per position and
        # n - 1 transitions, as the gold one does.
        np.testing.assert_allclose(d_unary.sum(axis=1), 0.0, atol=1e-9)
        assert abs(d_trans.sum()) <= 1e-9
        assert np.all(d_unary[np.isneginf(unary)] == 0.0)
        assert np.all(d_trans[np.isneginf(trans)] == 0.0)
        assert d_start is None and d_end is None
    # Every sequence uses n unary parts, so ||m||^2 = n for all of them and
    # (Niculae 2018, ch. 6) 0 <= perceptron <= sparsemap <= hinge <=
    # margin_sparsemap with the Hamming cost, and perceptron <= crf (log Z >=
    # max). The clamping at 0 cannot make these hold by itself.
    tol = 1e-9
    assert values["perceptron"] <= values["sparsemap"] + tol
    assert values["sparsemap"] <= values["hinge"] + tol
    assert values["hinge"] <= values["margin_sparsemap"] + tol
    assert values["perceptron"] <= values["crf"] + tol


# --- errors -----------------------------------------------------------------------


def _seq():
    return Sequence(), (np.zeros((3, 2)), np.zeros((2, 2)))


def test_unknown_loss():
    structure, pots = _seq()
    for loss in ("svm", None, "CRF"):
        with pytest.raises(ValueError, match=r"unknown loss .*choose one of \['crf', 'hinge'"):
            structured_loss(structure, *pots, y=[0, 0, 0], loss=loss)


def test_structure_must_be_a_structure():
    with pytest.raises(ValueError, match="structure must be an instance"):
        structured_loss("Sequence", np.zeros((3, 2)), y=[0, 0, 0])


def test_y_is_keyword_only():
    structure, pots = _seq()
    with pytest.raises(TypeError):
        structured_loss(structure, *pots)


@pytest.mark.parametrize("structure, potentials, y, match", [
    (Sequence(), (np.zeros((3, 2)), np.zeros((2, 2))), [0, 0], "array of 3 labels"),
    (Sequence(), (np.zeros((3, 2)), np.zeros((2, 2))), [0, 2, 0], "out of range"),
    (DependencyTree(), (np.zeros((4, 4)),), [-1, 2, 3, 1], "cycle"),
    (DependencyTree(), (np.zeros((4, 4)),), [-1, 0, 0, 1], "exactly one word"),
    (XOR(), (np.zeros(3),), 3, "out of range"),
    (Budget(1), (np.zeros(3),), [0, 1], "at most 1"),
    (Matching(), (np.zeros((2, 2)),), [0, 0], "uses a column twice"),
])
@pytest.mark.parametrize("loss", LOSSES)
def test_invalid_gold_structure(structure, potentials, y, match, loss):
    if loss == "crf" and not structure.has_marginals:
        return
    with pytest.raises(ValueError, match=match):
        structured_loss(structure, *potentials, y=y, loss=loss)


@pytest.mark.parametrize("loss", LOSSES)
def test_gold_using_a_forbidden_part(loss):
    with pytest.raises(ValueError, match=r"forbidden \(-inf\) unary part 1 \(index \(1,\) "
                       rf"of the structure's marginals\): the {loss} loss would be infinite"):
        structured_loss(XOR(), [0.0, NEG_INF, 1.0], y=1, loss=loss)
    trans = np.zeros((2, 2))
    trans[0, 1] = NEG_INF
    with pytest.raises(ValueError, match=r"higher-order part 1 \(index \(0, 1\) of the "
                       r"structure's marginals\[1\]\)"):
        structured_loss(Sequence(), np.zeros((3, 2)), trans, y=[0, 1, 1], loss=loss)
    # A forbidden last label (end) forbids the unary part of that label there.
    with pytest.raises(ValueError, match=r"unary part 5 \(index \(2, 1\) of the "
                       r"structure's marginals\[0\]\)"):
        structured_loss(Sequence(), np.zeros((3, 2)), np.zeros((2, 2)), None,
                        [0.0, NEG_INF], y=[0, 0, 1], loss=loss)
    S = np.zeros((3, 3))
    S[2, 1] = NEG_INF
    with pytest.raises(ValueError, match=r"index \(2, 1\) of the structure's marginals"):
        structured_loss(DependencyTree(), S, y=[-1, 2, 0], loss=loss)


@pytest.mark.parametrize("loss", ["crf", "perceptron", "sparsemap"])
def test_cost_given_to_a_loss_without_cost(loss):
    structure, pots = _seq()
    with pytest.raises(ValueError, match=rf"loss='{loss}' takes no cost; only the "
                       r"cost-augmented losses \['hinge', 'margin_sparsemap'\]"):
        structured_loss(structure, *pots, y=[0, 0, 0], loss=loss, cost=np.ones((3, 2)))


@pytest.mark.parametrize("loss", ["hinge", "margin_sparsemap"])
@pytest.mark.parametrize("cost, match", [
    (np.ones((2, 3)), r"cost has shape \(2, 3\), expected \(3, 2\)"),
    (np.ones(6), r"cost has shape \(6,\), expected \(3, 2\)"),
    (np.ones((2, 2)), r"cost has shape \(2, 2\), expected \(3, 2\)"),
    (np.array([[0.0, 1.0], [np.nan, 1.0], [0.0, 1.0]]), r"cost contains NaN at index \(1, 0\)"),
    (np.array([[0.0, 1.0], [1.0, 1.0], [0.0, np.inf]]), r"cost contains inf at index \(2, 1\)"),
    (np.array([[0.0, 1.0], [1.0, -np.inf], [0.0, 1.0]]), r"cost contains -inf at index \(1, 1\)"),
    ([["a", "b"], ["c", "d"], ["e", "f"]], "cost must be an array of real numbers"),
])
def test_invalid_cost(loss, cost, match):
    structure, pots = _seq()
    with pytest.raises(ValueError, match=match):
        structured_loss(structure, *pots, y=[0, 0, 0], loss=loss, cost=cost)


def test_invalid_cost_for_a_tree():
    with pytest.raises(ValueError, match=r"cost has shape \(3, 3\), expected \(4, 4\)"):
        structured_loss(DependencyTree(), np.zeros((4, 4)), y=[-1, 0, 1, 2], loss="hinge",
                        cost=np.ones((3, 3)))


def test_crf_needs_marginals():
    with pytest.raises(ValueError, match=r"Matching has no tractable marginals "
                       r"\(has_marginals is False\). Use loss='sparsemap'"):
        structured_loss(Matching(), np.zeros((2, 2)), y=[0, 1], loss="crf")
    # The other losses only need the oracle.
    for loss in LOSSES[1:]:
        value, _ = structured_loss(Matching(), np.eye(2), y=[0, 1], loss=loss)
        assert value >= 0.0


def test_sparsemap_options():
    structure, pots = _seq()
    with pytest.raises(ValueError, match="loss='hinge' solves no SparseMAP problem"):
        structured_loss(structure, *pots, y=[0, 0, 0], loss="hinge",
                        sparsemap_options=SparseMAPOptions())
    with pytest.raises(ValueError, match="sparsemap_options must be a SparseMAPOptions"):
        structured_loss(structure, *pots, y=[0, 0, 0], loss="sparsemap",
                        sparsemap_options={"max_iter": 10})
    with pytest.raises(ValueError, match="max_iter must be an integer >= 1, got 0"):
        structured_loss(structure, *pots, y=[0, 0, 0], loss="sparsemap",
                        sparsemap_options=SparseMAPOptions(max_iter=0))
    # The default is the estimators' settings.
    default = structured_loss(structure, *pots, y=[0, 0, 0], loss="sparsemap")
    explicit = structured_loss(structure, *pots, y=[0, 0, 0], loss="sparsemap",
                               sparsemap_options=SparseMAPOptions())
    assert default[0] == explicit[0]
