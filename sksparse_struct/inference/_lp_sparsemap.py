"""LP-SparseMAP: SparseMAP's quadratic relaxation over a factor graph.

Niculae & Martins (2020), "LP-SparseMAP: Differentiable Relaxed
Optimization for Sparse Structured Prediction", ICML. Over the local
polytope ``L`` of a :class:`FactorGraph` (as in :func:`ad3`), LP-SparseMAP
solves

    max_{(u, v) in L}  theta . u + phi . v - 1/2 ||u||^2,

the quadratic on the variables only. With one structure factor over all the
variables it is SparseMAP on that structure; with hard factors it is a
sparse, differentiable relaxation of the factor graph's MAP.

It runs AD3's loop (``_ad3_fast.ad3_solve`` with ``OPT_QUADRATIC = 1``): the
quadratic is handled in the consensus step, so every factor keeps the
projection it has for LP-MAP. The backward pass differentiates the solution
on the face of each factor's polytope that the solution lies on (a vertex
set for the structure, dense, pair, XOR and AtMostOne factors, a box face or
a simplex face for OR factors): there the problem is an equality-constrained
quadratic program, whose KKT system is solved once per result (sparse LU,
quasi-definite regularisation and iterative refinement, so redundant
constraints, e.g. two factors pinning the same variable, are harmless). Its
Jacobian is symmetric (the gradient of a convex function), so the same
solve gives the Jacobian-vector and the vector-Jacobian products.
"""

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from ..structures import Parts
from ..utils._validation import check_positive_scalar
from ._ad3 import (
    _check_solver_args,
    _checked_scores,
    _NOT_FIXED,
    _options,
    _score_scale,
    _solve,
    _unscale,
    _warm_state,
)
from ._ad3_fast import AT_MOST_ONE, DENSE, OR, PAIR, STRUCT, XOR
from ._sparsemap import sparsemap_parts

__all__ = ["LPSparseMAPResult", "lp_sparsemap", "lp_sparsemap_backward", "lp_sparsemap_jvp"]

# A local marginal within this distance of a face of its factor's polytope
# is on it. The factors' projections return exact zeros (and ones) on their
# faces; this only absorbs rounding.
_FACE_TOL = 1e-9
# Regularisation of the KKT system (quasi-definite: +delta on the primal
# block, -delta on the multipliers), removed by iterative refinement.
_KKT_DELTA = 1e-8
_REFINE_STEPS = 50
_REFINE_TOL = 1e-13


class LPSparseMAPResult:
    """Solution of :func:`lp_sparsemap`.

    Attributes
    ----------
    variables : ndarray of shape (n_variables,)
        The variable marginals ``u``, in [0, 1].
    factors : ndarray of shape (n_factor_scores,)
        The additional marginals ``v`` of the scored factors, in the layout
        of ``factor_scores`` (as in :class:`AD3Result`).
    objective : float
        ``theta . u + phi . v - 1/2 ||u||^2`` at the returned marginals (plus
        the structure factors' fixed part scores).
    primal : float
        The same as ``objective``, under the name :class:`AD3Result` uses,
        so that code reading either result works with both.
    dual : float
        The Lagrangian dual at the final multipliers: an upper bound on the
        optimum once the multipliers have converged.
    distributions : list of SparseMAPResult
        One per structure factor, in the order they were added: the sparse
        distribution over the factor's structures whose marginals are the
        factor's local marginals (``support``, ``probabilities``,
        ``marginals``, ``u``, ``v``). Its ``objective``, ``gap`` and
        ``n_iter`` describe the factor's last local subproblem.
    n_iter : int
        AD3 iterations run.
    converged : bool
        Whether both residuals fell below ``tol``.
    eta : float
        The step size at the end.
    primal_residual, dual_residual : float
        The residuals of the last iteration (as in :class:`AD3Result`).
    integral : bool
        Whether every variable marginal is within ``1e-6`` of 0 or 1.
    state : tuple
        Internal state, for ``warm_start``.
    """

    def __init__(self, *, variables, factors, objective, dual, distributions, n_iter, converged,
                 eta, primal_residual, dual_residual, integral, state, problem):
        self.variables = variables
        self.factors = factors
        self.objective = objective
        self.dual = dual
        self.distributions = distributions
        self.n_iter = n_iter
        self.converged = converged
        self.eta = eta
        self.primal_residual = primal_residual
        self.dual_residual = dual_residual
        self.integral = integral
        self.state = state
        # (compiled graph, local copies q, additional marginals, variable
        # scores) for the backward pass.
        self._problem = problem
        self._system = None

    @property
    def primal(self):
        return self.objective

    def __repr__(self):
        return (f"LPSparseMAPResult(n_variables={self.variables.shape[0]}, objective="
                f"{self.objective:.6g}, n_iter={self.n_iter}, converged={self.converged}, "
                f"structure_factors={len(self.distributions)})")


def lp_sparsemap(graph, variable_scores, factor_scores=None, *, eta=0.1, adaptive_eta=True,
                 max_iter=5000, tol=1e-6, gap_tol=None, warm_start=None):
    """LP-SparseMAP on a factor graph: sparse marginals over its local polytope.

    Maximises ``variable_scores . u + factor_scores . v - 1/2 ||u||^2`` over
    the local polytope of ``graph`` (the feasible set of :func:`ad3`). The
    quadratic makes the solution unique in ``u``, sparse (many marginals
    exactly 0 or 1) and a Lipschitz function of the scores, so it can be
    differentiated (:func:`lp_sparsemap_jvp`, :func:`lp_sparsemap_backward`).
    When the graph is one structure factor over all the variables, it is
    :func:`sparsemap` on that structure.

    Parameters
    ----------
    graph : FactorGraph
        The factor graph.
    variable_scores : array-like of shape (graph.n_variables,)
        Score of each binary variable being 1.
    factor_scores : array-like of shape (graph.n_factor_scores,), default=None
        Scores of the scored factors (see ``graph.factor_offsets``);
        required when the graph has any.
    eta : float, default=0.1
        Initial step size of AD3 (the augmented Lagrangian's penalty is
        ``2 eta``).
    adaptive_eta : bool, default=True
        Adapt ``eta`` to balance the residuals, as :func:`ad3` does.
    max_iter : int, default=5000
        Maximum number of iterations.
    tol : float, default=1e-6
        Stop when both residuals are below ``tol``.
    gap_tol : float or None, default=None
        If given, also stop (as converged) when the dual value, computed
        every 50 iterations, is within ``gap_tol`` (relative) of the
        objective, as in :func:`ad3`: a looser, cheaper solve, e.g. inside
        a training loop.
    warm_start : LPSparseMAPResult, default=None
        A result of ``lp_sparsemap`` on the same graph: start from its
        multipliers, copies and step size.

    Returns
    -------
    result : LPSparseMAPResult
        ``variables``, ``factors``, ``objective``, ``dual``, the structure
        factors' ``distributions`` and the solver's diagnostics.

    Raises
    ------
    ValueError
        For scores that are not finite, or so large that the objective
        overflows float64 (scores above 2**60 in magnitude are solved on
        scores scaled by a power of two, with the quadratic scaled alike,
        which leaves the solution unchanged); a structure factor whose
        fixed part scores forbid every structure.

    Examples
    --------
    A three-state variable (binaries 0-2) and a binary one (3) that may only
    be on together with state 2: LP-SparseMAP spreads the three-state
    variable's mass over its two best states (sparsemax of their scores),
    where :func:`ad3` picks one, and the implication holds.

    >>> from sksparse_struct.inference import FactorGraph, lp_sparsemap
    >>> fg = FactorGraph(4)
    >>> fg.add_xor([0, 1, 2])
    >>> fg.add_implication([3], 2)
    >>> res = lp_sparsemap(fg, [1.0, 0.0, 0.8, 0.2], tol=1e-9)
    >>> res.variables.round(3).tolist()
    [0.6, 0.0, 0.4, 0.2]
    """
    cg, theta, fs, top = _checked_scores(graph, variable_scores, factor_scores, "lp_sparsemap")
    _check_solver_args(eta, max_iter, tol, "lp_sparsemap")
    if not isinstance(adaptive_eta, (bool, np.bool_)):
        raise ValueError(
            f"lp_sparsemap: adaptive_eta must be True or False, got {adaptive_eta!r}.")
    if gap_tol is not None:
        check_positive_scalar(gap_tol, "lp_sparsemap: gap_tol")
    # Scaling the scores by s and the quadratic by s scales the objective by
    # s: the same solution.
    scale = _score_scale(top)
    theta_s, fs_s = (theta * scale, fs * scale) if scale != 1.0 else (theta, fs)
    state, warm_eta = _warm_state(cg, warm_start, scale, "lp_sparsemap",
                                  result_type=LPSparseMAPResult)
    if warm_eta is not None and adaptive_eta:
        eta = warm_eta
    options = _options(eta, adaptive_eta, max_iter, tol,
                       gap_tol=0.0 if gap_tol is None else gap_tol, quadratic=scale)
    n_iter, converged, eta, primal, dual, primal_res, dual_res, integral, _ = _solve(
        cg, theta_s, fs_s, _NOT_FIXED, state, options, "lp_sparsemap")
    n = cg.n_variables
    n_slots = cg.slot_var.shape[0]
    u = state[:n]
    q = state[n:n + n_slots]
    lam = state[n + n_slots:n + 2 * n_slots]
    add = state[n + 2 * n_slots:]
    distributions = [
        _structure_distribution(cg, entry, u, lam, theta_s, fs_s, 2.0 * eta)
        for entry in cg.structures
    ]
    return LPSparseMAPResult(
        variables=u.copy(), factors=add.copy(),
        objective=_unscale(primal, scale, "lp_sparsemap"),
        dual=_unscale(dual, scale, "lp_sparsemap"), distributions=distributions,
        n_iter=n_iter, converged=converged, eta=eta, primal_residual=primal_res,
        dual_residual=dual_res, integral=integral,
        state=(state, scale, (n, n_slots, cg.n_scores)),
        problem=(cg, q.copy(), add.copy(), theta))


def _structure_distribution(cg, entry, u, lam, theta, fs, rho):
    """The structure factor's sparse distribution: SparseMAP on its final local subproblem.

    AD3's local step on a structure factor is SparseMAP with unary scores
    ``u + (theta / deg + lam + fixed) / rho`` and higher-order scores
    ``(fixed + phi) / rho``; solved to the end here, its support and
    probabilities are the distribution whose marginals are the factor's.
    """
    f, structure, parts, offset, n_v = entry
    s0, s1 = cg.f_start[f], cg.f_start[f + 1]
    var = cg.slot_var[s0:s1]
    eta_u = u[var] + (theta[var] / cg.deg[var] + lam[s0:s1] + parts.eta_u) / rho
    eta_v = (parts.eta_v + fs[offset:offset + n_v]) / rho
    local = Parts(eta_u=np.ascontiguousarray(eta_u), eta_v=np.ascontiguousarray(eta_v),
                  context=parts.context)
    return sparsemap_parts(structure, local)


# -- the backward pass ----------------------------------------------------------


def _vertex_face(vertices_u, vertices_v):
    """``(B_u, B_v)``: the directions of the affine hull of some vertices (rows), from the first."""
    vu = np.asarray(vertices_u, dtype=np.float64)
    vv = np.asarray(vertices_v, dtype=np.float64)
    return (vu[1:] - vu[0]).T, (vv[1:] - vv[0]).T


def _factor_face(cg, f, literals, add, distribution):
    """The face of factor ``f``'s polytope its local marginals lie on, as an affine map.

    Returns ``(B_u, B_v)``: the directions (columns) along which the
    factor's literals and additional marginals may move while staying on
    that face.
    """
    kind = cg.f_type[f]
    x = literals
    n = x.shape[0]
    on = x > _FACE_TOL
    if kind == XOR or kind == AT_MOST_ONE or (kind == OR and x.sum() <= 1.0 + _FACE_TOL):
        support = np.flatnonzero(on)
        vertices = np.eye(n)[support]
        if kind == AT_MOST_ONE and x.sum() < 1.0 - _FACE_TOL:
            vertices = np.vstack([np.zeros((1, n)), vertices])
        return _vertex_face(vertices, np.zeros((len(vertices), 0)))
    if kind == OR:
        # Off the simplex face: a box face, the fractional literals move freely.
        free = np.flatnonzero(on & (x < 1.0 - _FACE_TOL))
        return np.eye(n)[:, free], np.zeros((0, free.shape[0]))
    off = cg.f_score[f]
    if kind == PAIR:
        a, b, m = x[0], x[1], add[off]
        probs = np.array([m, a - m, b - m, 1.0 - a - b + m])
        configs = np.array([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
        keep = configs[probs > _FACE_TOL]
        return _vertex_face(keep[:, :2], keep[:, 2:])
    if kind == DENSE:
        table = cg.tables[cg.f_table[f]]
        nc = table.shape[0]
        support = np.flatnonzero(add[off:off + nc] > _FACE_TOL)
        return _vertex_face(table[support].astype(np.float64), np.eye(nc)[support])
    if kind == STRUCT:
        # its distribution's support
        return _vertex_face(distribution.vertices_u, distribution.vertices_v)
    raise NotImplementedError(f"LP-SparseMAP's backward pass has no face for factor kind {kind}.")


def _linear_system(result):
    """The KKT system of the problem restricted to the solution's faces; cached on the result.

    Unknowns ``[z; t; mu]``: the variables, the coordinates of every
    factor's local marginals along its face, and the multipliers of the
    agreement constraints ``S z = c + B_u t`` (``S`` maps variables to the
    factors' literals, with a sign for negated literals). For scores
    ``(theta, phi)`` the solution satisfies ``K [z; t; mu] = [theta; B_v^T phi;
    const]`` with the symmetric ``K = [[I, 0, S^T], [0, 0, -B_u^T], [S, -B_u,
    0]]``; variables in no factor whose score lies outside (0, 1) are pinned.
    """
    if result._system is not None:
        return result._system
    cg, q, add, theta = result._problem
    n = cg.n_variables
    n_slots = cg.slot_var.shape[0]
    literals = np.where(cg.slot_neg, 1.0 - q, q)
    struct_of = {entry[0]: j for j, entry in enumerate(cg.structures)}
    bu_blocks, bv_rows, bv_cols, bv_vals = [], [], [], []
    n_t = 0
    for f in range(cg.f_type.shape[0]):
        s0, s1 = cg.f_start[f], cg.f_start[f + 1]
        dist = result.distributions[struct_of[f]] if cg.f_type[f] == STRUCT else None
        B_u, B_v = _factor_face(cg, f, literals[s0:s1], add, dist)
        r = B_u.shape[1]
        bu_blocks.append(sp.coo_array(B_u))
        if B_v.shape[0]:
            rows, cols = np.nonzero(B_v)
            bv_rows.append(rows + cg.f_score[f])
            bv_cols.append(cols + n_t)
            bv_vals.append(B_v[rows, cols])
        n_t += r
    B_u = sp.block_diag(bu_blocks, format="csr") if bu_blocks else sp.csr_array((0, 0))
    B_u = sp.csr_array(B_u, shape=(n_slots, n_t))

    def cat(parts, dtype):
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype=dtype)

    B_v = sp.csr_array((cat(bv_vals, np.float64), (cat(bv_rows, np.int64),
                                                     cat(bv_cols, np.int64))),
                       shape=(cg.n_scores, n_t))
    S = sp.csr_array((np.where(cg.slot_neg, -1.0, 1.0), (np.arange(n_slots), cg.slot_var)),
                     shape=(n_slots, n))
    # Variables in no factor: u = clip(theta, 0, 1), pinned when clipped.
    pinned = (cg.deg == 0) & ((theta <= 0.0) | (theta >= 1.0))
    zero_tt = sp.csr_array((n_t, n_t))
    zero_mm = sp.csr_array((n_slots, n_slots))
    K = sp.block_array([[sp.eye_array(n), None, S.T],
                        [None, zero_tt, -B_u.T],
                        [S, -B_u, zero_mm]], format="csc")
    reg = np.concatenate([np.full(n + n_t, _KKT_DELTA), np.full(n_slots, -_KKT_DELTA)])
    M = (K + sp.diags_array(reg)).tocsc()
    lu = splu(M) if M.shape[0] else None
    result._system = (K, lu, B_v, pinned, n, n_t)
    return result._system


def _apply(result, a, b):
    """The Jacobian (symmetric) applied to ``(a, b)``: tangents of the variables and factor scores."""
    K, lu, B_v, pinned, n, n_t = _linear_system(result)
    a = np.where(pinned, 0.0, a)
    rhs = np.concatenate([a, B_v.T @ b, np.zeros(K.shape[0] - n - n_t)])
    x = np.zeros_like(rhs)
    norm = max(np.abs(rhs).max(initial=0.0), 1e-300)
    if lu is not None:
        for _ in range(_REFINE_STEPS):
            r = rhs - K @ x
            if np.abs(r).max(initial=0.0) <= _REFINE_TOL * norm:
                break
            x += lu.solve(r)
    dz = np.where(pinned, 0.0, x[:n])
    return dz, B_v @ x[n:n + n_t]


def _product(result, first, second, names, caller):
    """The Jacobian applied to validated vectors over the variables and the factor scores."""
    if not isinstance(result, LPSparseMAPResult):
        raise ValueError(f"{caller}: result must be an LPSparseMAPResult returned by "
                         f"lp_sparsemap, got {type(result).__name__}.")
    cg = result._problem[0]
    vectors = []
    for values, size, name in zip((first, second), (cg.n_variables, cg.n_scores), names):
        if values is None:
            vectors.append(np.zeros(size))
            continue
        arr = np.asarray(values, dtype=np.float64)
        if arr.shape != (size,):
            raise ValueError(f"{caller}: {name} must have shape ({size},), got {arr.shape}.")
        if not np.isfinite(arr).all():
            raise ValueError(f"{caller}: {name} must be finite.")
        vectors.append(arr)
    return _apply(result, *vectors)


def lp_sparsemap_jvp(result, d_variable_scores, d_factor_scores=None):
    """Jacobian-vector product of LP-SparseMAP: how the marginals move with the scores.

    Differentiates ``(u, v)`` of :func:`lp_sparsemap` with respect to
    ``(variable_scores, factor_scores)`` on the faces of the factors'
    polytopes that the solution lies on (the faces are locally constant
    almost everywhere, where this is the exact derivative; elsewhere it is
    a one-sided one). The derivative of ``v`` is unique when each factor's
    additional marginals are determined by its literals on its face, as for
    generic scores.

    Parameters
    ----------
    result : LPSparseMAPResult
        The forward solution (solve with a small ``tol`` for derivatives
        accurate to more digits: the faces are read off the solution).
    d_variable_scores : array-like of shape (n_variables,)
        Direction of change of the variable scores.
    d_factor_scores : array-like of shape (n_factor_scores,), default=None
        Direction of change of the factor scores (zeros if None).

    Returns
    -------
    d_variables : ndarray of shape (n_variables,)
    d_factors : ndarray of shape (n_factor_scores,)
        The directional derivatives of ``result.variables`` and
        ``result.factors``.

    Examples
    --------
    >>> from sksparse_struct.inference import FactorGraph, lp_sparsemap, lp_sparsemap_jvp
    >>> fg = FactorGraph(3)
    >>> fg.add_xor([0, 1, 2])
    >>> res = lp_sparsemap(fg, [1.0, 0.8, -1.0], tol=1e-9)
    >>> d_u, _ = lp_sparsemap_jvp(res, [1.0, 0.0, 0.0])
    >>> d_u.round(3).tolist()
    [0.5, -0.5, 0.0]
    """
    return _product(result, d_variable_scores, d_factor_scores,
                    ("d_variable_scores", "d_factor_scores"), "lp_sparsemap_jvp")


def lp_sparsemap_backward(result, d_variables, d_factors=None):
    """Vector-Jacobian product of LP-SparseMAP: gradients with respect to the scores.

    Given the gradient of a loss with respect to ``result.variables`` and
    ``result.factors``, returns its gradient with respect to
    ``variable_scores`` and ``factor_scores``. LP-SparseMAP's Jacobian is
    symmetric (it is the Hessian of a convex function of the scores), so
    this is :func:`lp_sparsemap_jvp` applied to the incoming gradient.

    Parameters
    ----------
    result : LPSparseMAPResult
        The forward solution.
    d_variables : array-like of shape (n_variables,)
        Gradient with respect to the variable marginals.
    d_factors : array-like of shape (n_factor_scores,), default=None
        Gradient with respect to the additional marginals (zeros if None).

    Returns
    -------
    g_variable_scores : ndarray of shape (n_variables,)
    g_factor_scores : ndarray of shape (n_factor_scores,)

    Examples
    --------
    >>> from sksparse_struct.inference import FactorGraph, lp_sparsemap
    >>> from sksparse_struct.inference import lp_sparsemap_backward
    >>> fg = FactorGraph(3)
    >>> fg.add_xor([0, 1, 2])
    >>> res = lp_sparsemap(fg, [1.0, 0.8, -1.0], tol=1e-9)
    >>> g_theta, _ = lp_sparsemap_backward(res, [1.0, 0.0, 0.0])
    >>> g_theta.round(3).tolist()
    [0.5, -0.5, 0.0]
    """
    return _product(result, d_variables, d_factors, ("d_variables", "d_factors"),
                    "lp_sparsemap_backward")
