"""Tests of fusedmax and oscarmax (forward, groups and backward)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sksparse_struct.mappings import (
    fusedmax,
    fusedmax_backward,
    oscarmax,
    oscarmax_backward,
    project_simplex,
    prox_oscar,
    prox_tv1d,
    sparsemax,
    sparsemax_backward,
)
from tests._helpers import central_difference_jacobian, central_difference_vjp
from tests.mappings.test_prox import (
    oscar_constraints,
    oscar_penalty,
    slsqp_epigraph,
    tv_constraints,
)

MAPPINGS = {
    "fusedmax": (fusedmax, fusedmax_backward),
    "oscarmax": (oscarmax, oscarmax_backward),
}


def fusedmax_reference(z, alpha):
    """The thesis definition solved directly: SLSQP on the simplex, epigraph of TV."""
    return slsqp_epigraph(np.asarray(z, float), alpha, tv_constraints, simplex=True)


def oscarmax_reference(z, alpha):
    """Same for oscarmax; on the simplex |p_i| = p_i."""
    return slsqp_epigraph(
        np.asarray(z, float), alpha, lambda d: oscar_constraints(d, nonneg=True), simplex=True
    )


def objective(p, z, alpha, kind):
    pen = np.sum(np.abs(np.diff(p))) if kind == "fusedmax" else oscar_penalty(p)
    return 0.5 * np.sum((p - z) ** 2) + alpha * pen


# --------------------------------------------------------------------------
# Forward
# --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_fusedmax_matches_direct_solve(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(3, 9))
    z = rng.normal(size=d) * 0.5
    alpha = float(rng.choice([0.05, 0.1, 0.3]))
    ref = fusedmax_reference(z, alpha)
    p = fusedmax(z, alpha)
    np.testing.assert_allclose(p, ref, atol=1e-6)
    assert objective(p, z, alpha, "fusedmax") <= objective(ref, z, alpha, "fusedmax") + 1e-10


@pytest.mark.parametrize("seed", range(5))
def test_oscarmax_matches_direct_solve(seed):
    rng = np.random.default_rng(50 + seed)
    d = int(rng.integers(3, 7))
    # The offset moves z across 0: oscarmax ignores it, an absolute-value
    # OSCAR prox would not.
    z = rng.normal(size=d) * 0.5 + rng.normal()
    alpha = float(rng.choice([0.01, 0.05, 0.2]))
    ref = oscarmax_reference(z, alpha)
    p = oscarmax(z, alpha)
    np.testing.assert_allclose(p, ref, atol=1e-6)
    assert objective(p, z, alpha, "oscarmax") <= objective(ref, z, alpha, "oscarmax") + 1e-10


def test_fused_groups_visible_in_output():
    # Close neighbours fuse into one segment of equal weight.
    z = np.array([0.1, 1.0, 1.05, 0.98, 0.2, -1.0])
    p, g = fusedmax(z, 0.1, return_groups=True)
    np.testing.assert_allclose(p, fusedmax_reference(z, 0.1), atol=1e-6)
    assert p[1] == p[2] == p[3] > 0
    assert g[1] == g[2] == g[3]
    # oscarmax fuses equal magnitudes anywhere in the sequence.
    z = np.array([1.0, -0.5, 0.2, 1.004, 0.0])
    p, g = oscarmax(z, 0.01, return_groups=True)
    assert p[0] == p[3] > 0 and g[0] == g[3]


def test_composition_with_projection():
    rng = np.random.default_rng(7)
    z = rng.normal(size=(4, 6))
    np.testing.assert_array_equal(fusedmax(z, 0.2), project_simplex(prox_tv1d(z, 0.2)))


def test_oscarmax_is_not_the_projection_of_the_oscar_prox():
    # Regression for the literal reading of Prop. 3.3 (project prox_oscar):
    # here prox_oscar(z) is all zeros, so that recipe gives the uniform
    # distribution, while the definition does not.
    z = np.array([-0.23869599, 0.33466981, -0.69364727, 0.83294421, -0.09546576, 0.26717443])
    alpha = 0.2
    np.testing.assert_array_equal(prox_oscar(z, alpha), 0.0)
    ref = oscarmax_reference(z, alpha)
    p = oscarmax(z, alpha)
    np.testing.assert_allclose(p, ref, atol=1e-6)
    assert np.abs(project_simplex(prox_oscar(z, alpha)) - ref).max() > 0.2
    uniform = np.full(6, 1 / 6)
    assert objective(p, z, alpha, "oscarmax") < objective(uniform, z, alpha, "oscarmax") - 0.05


@pytest.mark.parametrize("name", MAPPINGS)
def test_shift_invariance(name):
    forward, _ = MAPPINGS[name]
    rng = np.random.default_rng(12)
    z = rng.normal(size=(6, 5))
    for shift in (-10.0, -0.7, 3.0):
        np.testing.assert_allclose(forward(z + shift, 0.15), forward(z, 0.15), atol=1e-12)


@pytest.mark.parametrize("name", MAPPINGS)
def test_alpha_zero_is_sparsemax(name):
    forward, backward = MAPPINGS[name]
    rng = np.random.default_rng(8)
    z = rng.normal(size=(6, 7))
    z[0, :3] = 0.4  # ties
    p, g = forward(z, 0.0, return_groups=True)
    np.testing.assert_array_equal(p, sparsemax(z))
    dp = rng.normal(size=z.shape)
    np.testing.assert_allclose(backward(p, g, dp), sparsemax_backward(p, dp), atol=1e-15)


def test_defaults_are_thesis_values():
    z = np.array([0.3, 0.35, 0.1, -0.2])
    np.testing.assert_array_equal(fusedmax(z), fusedmax(z, 0.1))
    np.testing.assert_array_equal(oscarmax(z), oscarmax(z, 0.01))


@pytest.mark.parametrize("name", MAPPINGS)
def test_edge_cases(name):
    forward, backward = MAPPINGS[name]
    p, g = forward([3.0], return_groups=True)
    np.testing.assert_array_equal(p, [1.0])
    np.testing.assert_array_equal(backward(p, g, [2.0]), [0.0])
    # d = 2 and all equal: uniform.
    np.testing.assert_allclose(forward([0.2, 0.2]), [0.5, 0.5])
    np.testing.assert_allclose(forward(np.full(5, -7.0)), np.full(5, 0.2))
    # Huge scores: the winner takes all, no overflow.
    p = forward([1e6, -1e6, 0.0, 1e6 - 3.0])
    np.testing.assert_allclose(p, [1.0, 0.0, 0.0, 0.0], atol=1e-12)
    # float32 is computed in float64 like the float64 version of the input.
    z32 = np.array([0.1, 0.7, 0.65, -0.3], dtype=np.float32)
    p32 = forward(z32)
    assert p32.dtype == np.float64
    np.testing.assert_array_equal(p32, forward(z32.astype(np.float64)))
    # Integer input.
    np.testing.assert_allclose(forward([1, 0, 0]), forward([1.0, 0.0, 0.0]))


@pytest.mark.parametrize("name", MAPPINGS)
def test_batch_matches_rows(name):
    forward, backward = MAPPINGS[name]
    rng = np.random.default_rng(9)
    z = rng.normal(size=(5, 6))
    dp = rng.normal(size=(5, 6))
    p, g = forward(z, 0.1, return_groups=True)
    dz = backward(p, g, dp)
    for i in range(5):
        pi, gi = forward(z[i], 0.1, return_groups=True)
        np.testing.assert_array_equal(pi, p[i])
        np.testing.assert_array_equal(gi, g[i])
        np.testing.assert_array_equal(backward(pi, gi, dp[i]), dz[i])


def test_oscarmax_masks_equal_dropping_entries():
    rng = np.random.default_rng(13)
    for _ in range(20):
        z = rng.normal(size=7)
        mask = rng.random(7) < 0.4
        mask[rng.integers(7)] = False  # at least one entry left
        zm = np.where(mask, -np.inf, z)
        p, g = oscarmax(zm, 0.1, return_groups=True)
        np.testing.assert_array_equal(p[mask], 0.0)
        np.testing.assert_allclose(p[~mask], oscarmax(z[~mask], 0.1), atol=1e-12)
        dp = rng.normal(size=7)
        dz = oscarmax_backward(p, g, dp)
        np.testing.assert_array_equal(dz[mask], 0.0)
        p_sub, g_sub = oscarmax(z[~mask], 0.1, return_groups=True)
        np.testing.assert_allclose(
            dz[~mask], oscarmax_backward(p_sub, g_sub, dp[~mask]), atol=1e-12
        )


def fusedmax_masked_reference(z, alpha):
    """SLSQP on the simplex with masked probabilities fixed to 0 by bounds."""
    from scipy.optimize import minimize

    z = np.asarray(z, float)
    d = len(z)
    masked = np.isneginf(z)
    zf = np.where(masked, 0.0, z)
    A = tv_constraints(d)
    m = d - 1

    def fun(v):
        return 0.5 * np.sum(((v[:d] - zf) ** 2)[~masked]) + alpha * v[d:].sum()

    def jac(v):
        return np.concatenate([np.where(masked, 0.0, v[:d] - zf), np.full(m, alpha)])

    e = np.concatenate([np.ones(d), np.zeros(m)])
    bounds = [(0.0, 0.0 if masked[i] else None) for i in range(d)] + [(None, None)] * m
    x0 = np.concatenate([np.where(masked, 0.0, 1.0 / (~masked).sum()), np.ones(m)])
    res = minimize(
        fun, x0, jac=jac, method="SLSQP", bounds=bounds,
        constraints=[{"type": "ineq", "fun": lambda v: A @ v, "jac": lambda v: A},
                     {"type": "eq", "fun": lambda v: e @ v - 1.0, "jac": lambda v: e}],
        options={"ftol": 1e-15, "maxiter": 5000},
    )
    return res.x[:d]


@pytest.mark.parametrize("seed", range(4))
def test_fusedmax_masks_match_constrained_solve(seed):
    rng = np.random.default_rng(30 + seed)
    d = 7
    z = rng.normal(size=d) * 0.5
    z[rng.choice(d, size=int(rng.integers(1, 4)), replace=False)] = -np.inf
    alpha = float(rng.choice([0.05, 0.2, 1.0]))
    p, g = fusedmax(z, alpha, return_groups=True)
    mask = np.isneginf(z)
    np.testing.assert_array_equal(p[mask], 0.0)
    np.testing.assert_allclose(p, fusedmax_masked_reference(z, alpha), atol=1e-6)
    # The mask is the limit of very low scores.
    np.testing.assert_allclose(p, fusedmax(np.where(mask, -1e4, z), alpha), atol=1e-12)
    # Backward: masked entries get no gradient and the others match finite
    # differences of the masked function.
    dp = rng.normal(size=d)
    dz = fusedmax_backward(p, g, dp)
    np.testing.assert_array_equal(dz[mask], 0.0)
    free = np.flatnonzero(~mask)

    def restricted(v):
        full = z.copy()
        full[free] = v
        return fusedmax(full, alpha)

    np.testing.assert_allclose(
        dz[free], central_difference_vjp(restricted, z[free], dp, 1e-7), atol=1e-6
    )


def test_fusedmax_mask_is_not_dropping():
    # The masked zero is a neighbour: the entry next to it pays for the jump.
    z = np.array([0.9, 0.1, -np.inf])
    p = fusedmax(z, 0.1)
    np.testing.assert_allclose(p, fusedmax_masked_reference(z, 0.1), atol=1e-6)
    assert not np.allclose(p[:2], fusedmax(z[:2], 0.1))


FMAX = np.finfo(np.float64).max


@pytest.mark.parametrize(
    "z, expected",
    [
        ([-np.inf, 9e15], [0.0, 1.0]),
        ([-np.inf, 1e17], [0.0, 1.0]),
        ([-np.inf, 1e300], [0.0, 1.0]),
        ([1e308, -np.inf], [1.0, 0.0]),
        ([1e308, -1e308], [1.0, 0.0]),
        ([-np.inf, -FMAX], [0.0, 1.0]),
        ([FMAX, -FMAX, -np.inf], [1.0, 0.0, 0.0]),
        ([0.0, -np.inf, 1e300], [0.0, 0.0, 1.0]),
        ([1e20, -np.inf, 1e20], [0.5, 0.0, 0.5]),
    ],
)
def test_fusedmax_masks_at_extreme_magnitudes(z, expected):
    # max(z) - 4 alpha - 2, the masks' substitute, rounded back to max(z)
    # from about 1e16 on: masked entries got half the mass.
    p, g = fusedmax(z, 0.1, return_groups=True)
    np.testing.assert_allclose(p, expected, rtol=0, atol=1e-15)
    assert fusedmax_backward(p, g, np.ones(len(z))).shape == (len(z),)


@pytest.mark.parametrize("high, low", [(1e20, -1e20), (1e300, 0.0), (1e308, -1e308), (-1e7, -2e7)])
def test_fusedmax_depends_on_differences_only_at_any_magnitude(high, low):
    # p = [a, 0, 1 - a, 0] minimises (a^2 + (1 - a)^2) / 2 + alpha (a + 2 (1 - a)),
    # so a = (1 + alpha) / 2. At 1e20 alpha was lost in the prox's rounding.
    p = fusedmax([high, low, high, low], 0.1)
    np.testing.assert_allclose(p, [0.55, 0.0, 0.45, 0.0], rtol=0, atol=1e-15)


def test_fusedmax_alpha_beyond_the_float_range():
    # The prox's intermediate values overflowed (ZeroDivisionError, wrong outputs).
    np.testing.assert_allclose(fusedmax([-np.inf, 0.0, 5.0], 1e300), [0.0, 0.5, 0.5])
    with pytest.raises(ValueError, match="fusedmax: alpha must be at most"):
        fusedmax([-np.inf, 0.0, 5.0], 1e307)


# --------------------------------------------------------------------------
# Backward
# --------------------------------------------------------------------------


def _stable_point(forward, alpha, rng, d, eps):
    """A random z whose groups and support do not change within +-eps."""
    for _ in range(200):
        z = rng.normal(size=d) * 0.3
        p, g = forward(z, alpha, return_groups=True)
        stable = True
        for i in range(d):
            for s in (-eps, eps):
                zs = z.copy()
                zs[i] += s
                ps, gs = forward(zs, alpha, return_groups=True)
                if not (np.array_equal(gs, g) and np.array_equal(ps > 0, p > 0)):
                    stable = False
        # Only points with non-trivial groups inside the support are useful.
        if stable and len(np.unique(np.abs(g[p > 0]))) < (p > 0).sum():
            return z, p, g
    raise AssertionError("no stable point found")


@pytest.mark.parametrize("name", MAPPINGS)
@pytest.mark.parametrize("seed", range(4))
def test_backward_matches_finite_differences(name, seed):
    forward, backward = MAPPINGS[name]
    rng = np.random.default_rng(seed)
    alpha = 0.1 if name == "fusedmax" else 0.05
    eps = 1e-6
    z, p, g = _stable_point(forward, alpha, rng, 7, 10 * eps)
    jac = central_difference_jacobian(lambda v: forward(v, alpha), z, eps)
    jac_backward = np.stack([backward(p, g, e) for e in np.eye(len(z))])
    # backward gives J^T e_i as row i, i.e. J^T; J is symmetric.
    np.testing.assert_allclose(jac_backward, jac.T, atol=1e-7)
    np.testing.assert_allclose(jac_backward, jac_backward.T, atol=1e-15)
    dp = rng.normal(size=len(z))
    np.testing.assert_allclose(
        backward(p, g, dp),
        central_difference_vjp(lambda v: forward(v, alpha), z, dp, eps),
        atol=1e-7,
    )


@pytest.mark.parametrize("name", MAPPINGS)
def test_backward_is_orthogonal_to_ones(name):
    # p stays on the simplex, so shifting z by a constant does nothing, and
    # directions dp constant on the support give zero gradient.
    forward, backward = MAPPINGS[name]
    rng = np.random.default_rng(11)
    z = rng.normal(size=(10, 8))
    p, g = forward(z, 0.1, return_groups=True)
    dz = backward(p, g, rng.normal(size=z.shape))
    np.testing.assert_allclose(dz.sum(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(backward(p, g, np.ones_like(z)), 0.0, atol=1e-12)


# --------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------

scores = arrays(
    np.float64, st.integers(1, 10), elements=st.floats(-50, 50, allow_nan=False)
)
alphas = st.floats(0, 3, allow_nan=False)


def _check_simplex(p):
    assert np.all(p >= 0)
    assert abs(p.sum() - 1.0) <= 1e-12 * len(p)


def _check_groups_in_output(p, g):
    # Entries of one group (same signed label) share their probability exactly.
    for label in np.unique(g[g != 0]):
        assert np.all(p[g == label] == p[g == label][0])


@given(z=scores, alpha=alphas)
def test_fusedmax_properties(z, alpha):
    p, g = fusedmax(z, alpha, return_groups=True)
    _check_simplex(p)
    _check_groups_in_output(p, g)
    assert np.all(g >= 1)
    np.testing.assert_allclose(fusedmax(z[::-1], alpha)[::-1], p, atol=1e-9)
    np.testing.assert_allclose(fusedmax(z + 2.5, alpha), p, atol=1e-9)


@given(z=scores, alpha=alphas, data=st.data(), name=st.sampled_from(sorted(MAPPINGS)))
def test_masked_properties(z, alpha, data, name):
    forward, backward = MAPPINGS[name]
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=len(z), max_size=len(z))))
    if mask.all():
        mask[0] = False
    zm = np.where(mask, -np.inf, z)
    p, g = forward(zm, alpha, return_groups=True)
    _check_simplex(p)
    _check_groups_in_output(p, g)
    np.testing.assert_array_equal(p[mask], 0.0)
    # Same as a finite score far below the others (the limit z_i -> -inf).
    low = np.where(mask, z.min() - 10 * alpha * len(z) - 10, z)
    np.testing.assert_allclose(forward(low, alpha), p, atol=1e-9)
    dz = backward(p, g, np.ones_like(z) + np.arange(len(z)))
    np.testing.assert_array_equal(dz[mask], 0.0)


@given(z=scores, alpha=alphas, data=st.data())
def test_oscarmax_properties(z, alpha, data):
    p, g = oscarmax(z, alpha, return_groups=True)
    _check_simplex(p)
    _check_groups_in_output(p, g)
    assert np.all(g >= 1)
    perm = np.array(data.draw(st.permutations(range(len(z)))))
    np.testing.assert_allclose(oscarmax(z[perm], alpha), p[perm], atol=1e-9)
    # Larger scores never get smaller probabilities; equal scores fuse.
    order = np.argsort(-z, kind="stable")
    assert np.all(np.diff(p[order]) <= 1e-12)
    np.testing.assert_allclose(oscarmax(z - 7.5, alpha), p, atol=1e-9)


@given(z=scores, alpha=alphas, name=st.sampled_from(sorted(MAPPINGS)))
def test_backward_properties(z, alpha, name):
    forward, backward = MAPPINGS[name]
    p, g = forward(z, alpha, return_groups=True)
    rng = np.random.default_rng(0)
    dp = rng.normal(size=len(z))
    dz = backward(p, g, dp)
    # The Jacobian is symmetric: <J a, b> == <a, J b>.
    dq = rng.normal(size=len(z))
    assert abs(backward(p, g, dq) @ dp - dz @ dq) <= 1e-12 * len(z)
    # Outside the groups touching the support, scores have no influence.
    touching = set(np.abs(g[p > 0]).tolist()) - {0}
    outside = np.array([abs(lab) not in touching for lab in g])
    np.testing.assert_array_equal(dz[outside], 0.0)


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", MAPPINGS)
def test_bad_input(name):
    forward, backward = MAPPINGS[name]
    with pytest.raises(ValueError, match="alpha"):
        forward([1.0, 2.0], -0.1)
    with pytest.raises(ValueError, match="alpha"):
        forward([1.0, 2.0], np.inf)
    with pytest.raises(ValueError, match="NaN.*row 1, position 0"):
        forward([[1.0, 2.0], [np.nan, 0.0]])
    with pytest.raises(ValueError, match="every entry of row 0 of z is -inf"):
        forward([-np.inf, -np.inf])
    p, g = forward([0.3, 0.2, 0.1], return_groups=True)
    with pytest.raises(ValueError, match="shape"):
        backward(p, g[:2], [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="shape"):
        backward(p, g, [1.0, 0.0])
    with pytest.raises(ValueError, match="integer"):
        backward(p, g.astype(float), [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="label 7"):
        backward(p, np.array([1, 7, 1]), [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="NaN"):
        backward(p, g, [np.nan, 0.0, 0.0])
