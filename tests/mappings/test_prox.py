"""Tests of the exact 1-D total variation and OSCAR proximal operators."""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.optimize import minimize

from sksparse_struct.mappings import prox_oscar, prox_tv1d
from sksparse_struct.mappings._oscar_fast import (
    prox_pairwise_max_rows,
    signed_group_average_rows,
)
from tests._helpers import central_difference_jacobian

# --------------------------------------------------------------------------
# Independent references
# --------------------------------------------------------------------------


def tv_objective(x, z, alpha):
    return 0.5 * np.sum((x - z) ** 2) + alpha * np.sum(np.abs(np.diff(x)))


def oscar_penalty(x):
    a = np.abs(x)
    return sum(max(a[i], a[j]) for i in range(len(a)) for j in range(i + 1, len(a)))


def oscar_objective(x, z, alpha):
    return 0.5 * np.sum((x - z) ** 2) + alpha * oscar_penalty(x)


def tv_brute_force(z, alpha):
    """Exact prox by enumerating the sign pattern of every jump (d <= 7).

    On the region where the sign of each ``x[k+1] - x[k]`` is fixed (0 meaning
    fused), the objective is a smooth quadratic whose minimiser is explicit:
    segment values are ``(sum z + alpha (s_left - s_right)) / length`` with
    ``s = sign(x[k] - x[k+1])``. The prox lies in the relative interior of
    its own region, so it is the candidate with the smallest true objective.
    """
    d = len(z)
    best, best_val = None, np.inf
    for signs in itertools.product((-1, 0, 1), repeat=d - 1):
        x = np.empty(d)
        start, left = 0, 0
        for k in range(d):
            right = signs[k] if k < d - 1 else 0
            if k == d - 1 or right != 0:
                seg = slice(start, k + 1)
                x[seg] = (z[seg].sum() + alpha * (left - right)) / (k + 1 - start)
                start, left = k + 1, right
        val = tv_objective(x, z, alpha)
        if val < best_val:
            best, best_val = x, val
    return best


def pairwise_max_objective(x, z, alpha):
    pen = sum(max(x[i], x[j]) for i in range(len(x)) for j in range(i + 1, len(x)))
    return 0.5 * np.sum((x - z) ** 2) + alpha * pen


def oscar_brute_force(z, alpha, signed=False):
    """Exact prox by enumerating ordered groupings of ``|x|`` (d <= 5).

    A candidate assigns every entry a rank (0: zero; 1..m: groups of equal
    ``|x|`` in decreasing order) and keeps ``sign(z)``; on that region OSCAR
    is linear, so each group's value is explicit. The prox is the candidate
    with the smallest true objective. With ``signed``, the same for
    ``sum_{i<j} max(x_i, x_j)`` (groups of equal signed values, no zero rank).
    """
    d = len(z)
    w = alpha * (d - 1 - np.arange(d))  # weight of the k-th largest |x| (0-based)
    obj = pairwise_max_objective if signed else oscar_objective
    best, best_val = None, np.inf
    for ranks in itertools.product(range(1 if signed else 0, d + 1), repeat=d):
        used = sorted(set(ranks) - {0})
        if used != list(range(1, len(used) + 1)):
            continue
        x = np.zeros(d)
        pos = 0
        for g in used:
            members = [i for i in range(d) if ranks[i] == g]
            n = len(members)
            if signed:
                x[members] = (z[members].sum() - w[pos : pos + n].sum()) / n
            else:
                value = (np.abs(z[members]).sum() - w[pos : pos + n].sum()) / n
                x[members] = np.sign(z[members]) * value
            pos += n
        val = obj(x, z, alpha)
        if val < best_val:
            best, best_val = x, val
    return best


def prox_pairwise_max(z, alpha):
    z = np.atleast_2d(np.asarray(z, dtype=np.float64))
    out = np.empty_like(z)
    groups = np.empty(z.shape, dtype=np.int64)
    prox_pairwise_max_rows(z, float(alpha), out, groups)
    return out[0], groups[0]


def slsqp_epigraph(z, alpha, pairs_constraints, simplex=False):
    """Generic SLSQP solve of min 1/2||x - z||^2 + alpha sum(t), A [x; t] >= 0.

    ``pairs_constraints`` returns the rows of A for the epigraph variables
    ``t`` of a nonsmooth penalty. Knows nothing of prox algorithms.
    """
    d = len(z)
    A = pairs_constraints(d)
    m = A.shape[1] - d

    def fun(v):
        return 0.5 * np.sum((v[:d] - z) ** 2) + alpha * v[d:].sum()

    def jac(v):
        return np.concatenate([v[:d] - z, np.full(m, alpha)])

    cons = [{"type": "ineq", "fun": lambda v: A @ v, "jac": lambda v: A}]
    bounds = None
    x0 = np.concatenate([z, np.full(m, np.abs(z).max() * 2 + 1)])
    if simplex:
        e = np.concatenate([np.ones(d), np.zeros(m)])
        cons.append({"type": "eq", "fun": lambda v: e @ v - 1.0, "jac": lambda v: e})
        bounds = [(0.0, None)] * d + [(None, None)] * m
        x0 = np.concatenate([np.full(d, 1.0 / d), np.full(m, 1.0)])
    res = minimize(
        fun,
        x0,
        jac=jac,
        method="SLSQP",
        bounds=bounds,
        constraints=cons,
        options={"ftol": 1e-15, "maxiter": 5000},
    )
    return res.x[:d]


def tv_constraints(d):
    """t_k >= +-(x[k+1] - x[k])."""
    m = d - 1
    A = np.zeros((2 * m, d + m))
    for k in range(m):
        for s, row in ((1, 2 * k), (-1, 2 * k + 1)):
            A[row, d + k] = 1.0
            A[row, k + 1] -= s
            A[row, k] += s
    return A


def oscar_constraints(d, nonneg=False):
    """t_ij >= +-x_i, t_ij >= +-x_j (only + when x >= 0 is known)."""
    pairs = list(itertools.combinations(range(d), 2))
    signs = (1,) if nonneg else (1, -1)
    rows = []
    for p, (i, j) in enumerate(pairs):
        for idx in (i, j):
            for s in signs:
                row = np.zeros(d + len(pairs))
                row[d + p] = 1.0
                row[idx] = -s
                rows.append(row)
    return np.array(rows)


def tv_certificate_gap(z, x, alpha):
    """Largest violation of the TV prox optimality conditions.

    ``r = cumsum(z - x)`` must satisfy ``r[-1] == 0``, ``|r| <= alpha`` and
    ``r[k] == alpha * sign(x[k] - x[k+1])`` wherever x jumps.
    """
    r = np.cumsum(z - x)
    gap = abs(r[-1])
    r = r[:-1]
    if r.size:
        gap = max(gap, np.max(np.abs(r)) - alpha)
        jumps = np.diff(x) != 0
        if jumps.any():
            target = alpha * np.sign(x[:-1] - x[1:])
            gap = max(gap, np.max(np.abs(r - target)[jumps]))
    return gap


# --------------------------------------------------------------------------
# prox_tv1d
# --------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("alpha", [0.05, 0.3, 1.0])
def test_prox_tv1d_matches_brute_force(d, alpha):
    rng = np.random.default_rng(10 * d + int(100 * alpha))
    for _ in range(5):
        z = rng.normal(size=d)
        np.testing.assert_allclose(prox_tv1d(z, alpha), tv_brute_force(z, alpha), atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_prox_tv1d_matches_slsqp(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(5, 10))
    z = rng.normal(size=d) * 2
    alpha = float(rng.choice([0.1, 0.5, 1.5]))
    ref = slsqp_epigraph(z, alpha, tv_constraints)
    x = prox_tv1d(z, alpha)
    np.testing.assert_allclose(x, ref, atol=1e-6)
    assert tv_objective(x, z, alpha) <= tv_objective(ref, z, alpha) + 1e-10


def test_prox_tv1d_certificate_on_many_rows():
    rng = np.random.default_rng(0)
    z = np.cumsum(rng.normal(size=(120, 40)), axis=1)
    z[:40] = rng.integers(-3, 4, size=(40, 40))  # many ties
    for alpha in (0.01, 0.5, 2.0, 30.0):
        x, groups = prox_tv1d(z, alpha, return_groups=True)
        for zi, xi, gi in zip(z, x, groups):
            assert tv_certificate_gap(zi, xi, alpha) < 1e-10
            _check_tv_groups(xi, gi)


def _check_tv_groups(x, g):
    assert g[0] == 1
    steps = np.diff(g)
    assert np.all((steps == 0) | (steps == 1))  # contiguous labels 1..G
    for label in np.unique(g):
        assert np.all(x[g == label] == x[g == label][0])  # exactly equal
    # A new label starts at every value change.
    assert np.all(steps[np.diff(x) != 0] == 1)


def test_prox_tv1d_groups_are_maximal_for_generic_input():
    rng = np.random.default_rng(1)
    z = rng.normal(size=(50, 15))
    x, g = prox_tv1d(z, 0.3, return_groups=True)
    # Generic input: no zero-size jumps, so labels change exactly at jumps.
    np.testing.assert_array_equal(np.diff(g, axis=1) != 0, np.diff(x, axis=1) != 0)


def test_prox_tv1d_alpha_zero_is_identity():
    z = np.array([0.3, 0.3, -1.0, 2.0])
    x, g = prox_tv1d(z, 0.0, return_groups=True)
    np.testing.assert_array_equal(x, z)
    np.testing.assert_array_equal(g, [1, 2, 3, 4])  # Jacobian I, even for ties


def test_prox_tv1d_large_alpha_gives_mean():
    rng = np.random.default_rng(2)
    z = rng.normal(size=9)
    bound = np.max(np.abs(np.cumsum(z - z.mean())))
    x, g = prox_tv1d(z, bound * 1.0001, return_groups=True)
    np.testing.assert_allclose(x, z.mean(), atol=1e-15)
    np.testing.assert_array_equal(g, 1)
    x = prox_tv1d(z, 1e9)
    np.testing.assert_allclose(x, z.mean(), atol=1e-15)
    # Just below the bound the output is no longer constant.
    assert np.ptp(prox_tv1d(z, bound * 0.99)) > 0


def test_prox_tv1d_small_cases_by_hand():
    np.testing.assert_array_equal(prox_tv1d([5.0], 3.0), [5.0])
    # d = 2: the two values move towards each other by alpha, or meet.
    np.testing.assert_allclose(prox_tv1d([0.0, 1.0], 0.2), [0.2, 0.8])
    np.testing.assert_allclose(prox_tv1d([0.0, 1.0], 0.5), [0.5, 0.5])
    np.testing.assert_allclose(prox_tv1d([0.0, 1.0], 0.7), [0.5, 0.5])
    np.testing.assert_allclose(prox_tv1d([2.0, 2.0, 2.0], 0.1), [2.0, 2.0, 2.0])


def test_prox_tv1d_extreme_scale_and_float32():
    rng = np.random.default_rng(3)
    z = rng.normal(size=8)
    for scale in (1e-6, 1e6):
        np.testing.assert_allclose(
            prox_tv1d(z * scale, 0.3 * scale), prox_tv1d(z, 0.3) * scale, rtol=1e-9,
            atol=1e-9 * scale,
        )
    big = np.array([1e6, -1e6, 1e6, 1e6])
    assert tv_certificate_gap(big, prox_tv1d(big, 0.5), 0.5) < 1e-9
    x32 = prox_tv1d(z.astype(np.float32), 0.3)
    assert x32.dtype == np.float64
    np.testing.assert_allclose(x32, prox_tv1d(z.astype(np.float32).astype(np.float64), 0.3))


def test_prox_tv1d_batch_matches_rows():
    rng = np.random.default_rng(4)
    z = rng.normal(size=(5, 7))
    x = prox_tv1d(z, 0.2)
    assert x.shape == z.shape
    for zi, xi in zip(z, x):
        np.testing.assert_array_equal(prox_tv1d(zi, 0.2), xi)


def test_prox_tv1d_does_not_mutate_input():
    z = np.array([1.0, 3.0, 2.0])
    prox_tv1d(z, 0.5)
    np.testing.assert_array_equal(z, [1.0, 3.0, 2.0])


finite = st.floats(-100, 100, allow_nan=False, allow_infinity=False)


@given(
    z=arrays(np.float64, st.integers(1, 12), elements=finite),
    alpha=st.floats(0, 20, allow_nan=False),
)
def test_prox_tv1d_property_certificate(z, alpha):
    x, g = prox_tv1d(z, alpha, return_groups=True)
    assert tv_certificate_gap(z, x, alpha) <= 1e-9 * (1 + np.abs(z).max() + alpha) * len(z)
    _check_tv_groups(x, g)
    # Reversal equivariance (the penalty is symmetric).
    atol = 1e-9 * (1 + np.abs(z).max())
    np.testing.assert_allclose(prox_tv1d(z[::-1], alpha)[::-1], x, atol=atol)
    # Shift equivariance and preservation of the mean.
    np.testing.assert_allclose(prox_tv1d(z + 3.0, alpha), x + 3.0, atol=atol)
    assert abs(x.sum() - z.sum()) <= 1e-9 * (1 + np.abs(z).sum())


# --------------------------------------------------------------------------
# prox_oscar
# --------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 2, 3, 4])
@pytest.mark.parametrize("alpha", [0.05, 0.3, 1.0])
def test_prox_oscar_matches_brute_force(d, alpha):
    rng = np.random.default_rng(10 * d + int(100 * alpha))
    for _ in range(4):
        z = rng.normal(size=d)
        np.testing.assert_allclose(
            prox_oscar(z, alpha), oscar_brute_force(z, alpha), atol=1e-12
        )


def test_prox_oscar_brute_force_with_ties_and_zeros():
    for z in ([1.0, -1.0, 0.5, 0.0], [0.2, 0.2, -0.2], [3.0, 0.0, 0.0], [0.4, -0.45, 0.1, 2.0]):
        z = np.array(z)
        for alpha in (0.1, 0.25):
            np.testing.assert_allclose(
                prox_oscar(z, alpha), oscar_brute_force(z, alpha), atol=1e-12
            )


@pytest.mark.parametrize("seed", range(4))
def test_prox_oscar_matches_slsqp(seed):
    rng = np.random.default_rng(100 + seed)
    d = int(rng.integers(4, 8))
    z = rng.normal(size=d)
    alpha = float(rng.choice([0.02, 0.1, 0.3]))
    ref = slsqp_epigraph(z, alpha, oscar_constraints)
    x = prox_oscar(z, alpha)
    np.testing.assert_allclose(x, ref, atol=1e-6)
    assert oscar_objective(x, z, alpha) <= oscar_objective(ref, z, alpha) + 1e-10


def test_prox_oscar_alpha_zero_is_identity():
    z = np.array([0.5, -0.5, 0.0, 2.0, 0.5])
    x, g = prox_oscar(z, 0.0, return_groups=True)
    np.testing.assert_array_equal(x, z)
    # Each entry its own group (the Jacobian of the identity), zero kept.
    assert len(set(np.abs(g).tolist())) == 5 and np.all(g != 0)


def test_prox_oscar_d1_is_identity():
    x, g = prox_oscar([-3.0], 10.0, return_groups=True)
    np.testing.assert_array_equal(x, [-3.0])
    np.testing.assert_array_equal(g, [-1])


def test_prox_oscar_large_alpha_gives_zero():
    x, g = prox_oscar([1.0, -2.0, 0.5], 10.0, return_groups=True)
    np.testing.assert_array_equal(x, 0.0)
    assert not np.signbit(x).any()  # no -0.0
    # The smallest entry has weight 0: its block is merged and clipped.
    np.testing.assert_array_equal(g, 0)


def test_prox_oscar_groups_example():
    z = np.array([3.0, -3.04, 0.5, 0.1, 0.0, -0.05])
    x, g = prox_oscar(z, 0.1, return_groups=True)
    np.testing.assert_allclose(x, [2.57, -2.57, 0.2, 0.0, 0.0, 0.0], atol=1e-12)
    np.testing.assert_array_equal(g, [1, -1, 2, 0, 0, 0])


def test_prox_oscar_extreme_scale_and_float32():
    rng = np.random.default_rng(5)
    z = rng.normal(size=7)
    for scale in (1e-6, 1e6):
        np.testing.assert_allclose(
            prox_oscar(z * scale, 0.1 * scale), prox_oscar(z, 0.1) * scale,
            rtol=1e-9, atol=1e-9 * scale,
        )
    x32 = prox_oscar(z.astype(np.float32), 0.1)
    assert x32.dtype == np.float64


@pytest.mark.parametrize("scale", [2.0**1000, 2.0**1020])
def test_prox_oscar_at_the_top_of_the_float_range(scale):
    # The pool-adjacent-violators sums used to overflow to +-inf for finite
    # input (e.g. [1e308, 1e308] with alpha 1e295); the prox is positively
    # homogeneous, so the scaled problem must give the scaled answer.
    rng = np.random.default_rng(6)
    z = np.round(rng.normal(size=(3, 9)), 1)
    z[1, :3] = z[1, 0]  # ties
    x, g = prox_oscar(z, 0.25, return_groups=True)
    xs, gs = prox_oscar(z * scale, 0.25 * scale, return_groups=True)
    np.testing.assert_allclose(xs / scale, x, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(gs, g)
    np.testing.assert_allclose(prox_oscar([1e308, 1e308], 1e295), [1e308 - 5e294] * 2, rtol=1e-15)
    np.testing.assert_allclose(prox_oscar([1e308] * 3, 1e306), [9.9e307] * 3, rtol=1e-15)
    fmax = np.finfo(np.float64).max
    np.testing.assert_allclose(
        prox_oscar([fmax, -fmax, 0.0], 1e307), [fmax - 1.5e307, 1.5e307 - fmax, 0.0], rtol=1e-15
    )
    # Rows at ordinary scale in the same batch are solved exactly as alone.
    batch = np.vstack([z[0], z[1] * scale])
    np.testing.assert_array_equal(prox_oscar(batch, 0.25)[0], prox_oscar(z[0], 0.25))


@given(
    z=arrays(np.float64, st.integers(1, 10), elements=finite),
    alpha=st.floats(0, 5, allow_nan=False),
    data=st.data(),
)
def test_prox_oscar_properties(z, alpha, data):
    x, g = prox_oscar(z, alpha, return_groups=True)
    tol = 1e-9 * (1 + np.abs(z).max() + alpha * len(z) ** 2)
    # Signs kept or zeroed, magnitudes shrink, order of |z| preserved.
    assert np.all((np.sign(x) == np.sign(z)) | (x == 0))
    assert np.all(np.abs(x) <= np.abs(z) + tol)
    order = np.argsort(-np.abs(z), kind="stable")
    assert np.all(np.diff(np.abs(x)[order]) <= tol)
    # Groups: equal |x| inside a group, label sign = sign of x, 0 -> x == 0.
    assert np.all(x[g == 0] == 0)
    for label in set(np.abs(g[g != 0]).tolist()):
        members = np.abs(g) == label
        assert np.all(np.abs(x[members]) == np.abs(x[members])[0])
    assert np.all(np.sign(g[x != 0]) == np.sign(x[x != 0]))
    assert np.all(np.abs(g) <= len(z))
    # Permutation and sign-flip equivariance.
    perm = np.array(data.draw(st.permutations(range(len(z)))))
    np.testing.assert_allclose(prox_oscar(z[perm], alpha), x[perm], atol=tol)
    np.testing.assert_allclose(prox_oscar(-z, alpha), -x, atol=tol)
    # Never worse than the input itself or than zero for the objective.
    val = oscar_objective(x, z, alpha)
    assert val <= oscar_objective(z, z, alpha) + tol
    assert val <= oscar_objective(np.zeros_like(z), z, alpha) + tol


# --------------------------------------------------------------------------
# Prox of sum_{i<j} max(x_i, x_j) (used by oscarmax)
# --------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 2, 3, 4])
@pytest.mark.parametrize("alpha", [0.05, 0.3, 1.0])
def test_prox_pairwise_max_matches_brute_force(d, alpha):
    rng = np.random.default_rng(7 * d + int(100 * alpha))
    for _ in range(4):
        z = rng.normal(size=d) + rng.normal()
        x, g = prox_pairwise_max(z, alpha)
        np.testing.assert_allclose(x, oscar_brute_force(z, alpha, signed=True), atol=1e-12)
        assert np.all(g >= 1)


@given(
    z=arrays(np.float64, st.integers(1, 10), elements=finite),
    alpha=st.floats(0, 5, allow_nan=False),
)
def test_prox_pairwise_max_properties(z, alpha):
    x, g = prox_pairwise_max(z, alpha)
    tol = 1e-9 * (1 + np.abs(z).max() + alpha * len(z) ** 2)
    np.testing.assert_allclose(prox_pairwise_max(z + 5.0, alpha)[0], x + 5.0, atol=tol)
    order = np.argsort(-z, kind="stable")
    assert np.all(np.diff(x[order]) <= tol)  # order kept
    for label in np.unique(g):
        assert np.all(x[g == label] == x[g == label][0])
    # Agrees with the OSCAR prox when both input and output are non-negative
    # (the two penalties agree on the non-negative orthant).
    if np.all(z >= 0) and np.all(x >= 0):
        np.testing.assert_allclose(x, prox_oscar(z, alpha), atol=tol)


# --------------------------------------------------------------------------
# Jacobians from the groups (Prop. 3.4) vs finite differences
# --------------------------------------------------------------------------


def _jacobian_from_groups(groups):
    d = len(groups)
    out = np.empty((d, d))
    signed_group_average_rows(np.tile(groups, (d, 1)), np.eye(d), out)
    return out  # row i: J e_i, i.e. column i of the symmetric J


@pytest.mark.parametrize(
    "prox",
    [prox_tv1d, prox_oscar, lambda z, a, return_groups: prox_pairwise_max(z, a)],
    ids=["tv", "oscar", "pairwise_max"],
)
@pytest.mark.parametrize("seed", range(3))
def test_prox_jacobian_matches_finite_differences(prox, seed):
    rng = np.random.default_rng(seed)
    eps = 1e-7
    for _ in range(100):
        z = rng.normal(size=8)
        x, g = prox(z, 0.2, return_groups=True)
        # Skip points where a group changes within the finite-difference step.
        moved = [
            prox(z + s * e, 0.2, return_groups=True)[1]
            for e in np.eye(8) * 10 * eps
            for s in (-1, 1)
        ]
        if all(np.array_equal(m, g) for m in moved) and len(np.unique(g)) < 7:
            break
    jac = central_difference_jacobian(lambda v: prox(v, 0.2, return_groups=True)[0], z, eps)
    np.testing.assert_allclose(_jacobian_from_groups(g), jac.T, atol=1e-7)
    np.testing.assert_allclose(jac, jac.T, atol=1e-7)


def test_prox_oscar_jacobian_signs_and_zeros():
    z = np.array([1.0, -1.02, 0.3, -0.01, 0.5, 0.02])
    x, g = prox_oscar(z, 0.05, return_groups=True)
    assert g[0] == -g[1] != 0 and g[3] == g[5] == 0  # opposite signs; zeroed
    jac = central_difference_jacobian(lambda v: prox_oscar(v, 0.05), z, 1e-7)
    np.testing.assert_allclose(_jacobian_from_groups(g), jac.T, atol=1e-7)
    assert jac[0, 1] == pytest.approx(-0.5)


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------


@pytest.mark.parametrize("prox", [prox_tv1d, prox_oscar])
def test_prox_bad_input(prox):
    with pytest.raises(ValueError, match="alpha"):
        prox([1.0, 2.0], -0.1)
    with pytest.raises(ValueError, match="alpha"):
        prox([1.0, 2.0], np.nan)
    with pytest.raises(ValueError, match="NaN.*row 0, position 1"):
        prox([1.0, np.nan], 0.1)
    with pytest.raises(ValueError, match=r"\+inf"):
        prox([1.0, np.inf], 0.1)
    with pytest.raises(ValueError, match="-inf"):
        prox([1.0, -np.inf], 0.1)
    with pytest.raises(ValueError, match="at least one entry"):
        prox([], 0.1)
    with pytest.raises(ValueError, match="dimensions"):
        prox(np.zeros((2, 2, 2)), 0.1)
