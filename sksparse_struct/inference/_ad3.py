"""AD3: LP-MAP inference by alternating directions dual decomposition.

Martins, Figueiredo, Aguiar, Smith & Xing (2015), "AD3: Alternating
Directions Dual Decomposition for MAP Inference in Graphical Models", JMLR
16. The LP relaxation of MAP over a :class:`FactorGraph` (every factor's
local marginals in the convex hull of its allowed configurations, the copies
of a variable equal across factors) is solved by ADMM: each factor projects
onto its own polytope (closed forms for the hard and pair factors, an active
set for dense and structure factors), then the copies are averaged and the
multipliers updated. The exact MAP (:func:`ad3_map`) is branch-and-bound on
top of it.
"""

from typing import NamedTuple

import numpy as np

from ..structures import Parts
from ..structures._base import dot_masked
from ._ad3_fast import (
    ADAPT_EVERY,
    TAU,
    ad3_loop,
    adapt_eta,
    consensus,
    dense_workspace,
    dual_value,
    evaluate_assignment,
    solve_local,
)
from ._factor_graph import FactorGraph
from ._sparsemap import sparsemap_parts

__all__ = ["AD3Result", "MAPResult", "ad3", "ad3_map"]

_INTEGRAL_TOL = 1e-6


class AD3Result(NamedTuple):
    """Solution of the LP relaxation by :func:`ad3` (or :func:`highs_lp`).

    Attributes
    ----------
    variables : ndarray of shape (n_variables,)
        Marginals of the binary variables, in [0, 1].
    factors : ndarray of shape (n_factor_scores,)
        Additional marginals of the scored factors, in the layout of
        ``factor_scores`` (pair: ``P(x AND y)``; dense: the probability of
        each configuration; structure: the higher-order part marginals).
    primal : float
        Objective of the returned marginals.
    dual : float
        Value of the Lagrangian dual at the final multipliers, an upper bound
        on the LP optimum and on the MAP score.
    integral : bool
        Whether every variable marginal is within ``1e-6`` of 0 or 1.
    n_iter : int
        Iterations run.
    converged : bool
        Whether the primal and dual residuals fell below ``tol`` (or the
        duality gap below ``gap_tol``).
    eta : float
        The step size at the end (adapted when ``adaptive_eta``).
    state : tuple or None
        Internal state, for ``warm_start``.
    """

    variables: np.ndarray
    factors: np.ndarray
    primal: float
    dual: float
    integral: bool
    n_iter: int
    converged: bool
    eta: float = 0.0
    state: tuple = None


class MAPResult(NamedTuple):
    """An exact MAP assignment (:func:`ad3_map`, :func:`milp_map`).

    Attributes
    ----------
    variables : ndarray of shape (n_variables,), float64
        The 0/1 assignment.
    factors : ndarray of shape (n_factor_scores,)
        The additional marginals of that assignment (0/1).
    objective : float
        Its score.
    optimal : bool
        Whether optimality is proven (branch-and-bound: to the relative gap
        ``gap_tol``; MILP: HiGHS' status).
    n_nodes : int
        Nodes of the search tree explored.
    """

    variables: np.ndarray
    factors: np.ndarray
    objective: float
    optimal: bool
    n_nodes: int


def check_graph_scores(graph, variable_scores, factor_scores, caller):
    """Validate the graph and the scores; ``(compiled graph, theta, factor scores)``."""
    if not isinstance(graph, FactorGraph):
        raise ValueError(f"{caller}: graph must be a FactorGraph, got {type(graph).__name__}.")
    cg = graph.compile()
    theta = np.asarray(variable_scores, dtype=np.float64)
    if theta.shape != (graph.n_variables,):
        raise ValueError(
            f"{caller}: variable_scores must have shape ({graph.n_variables},), one score per "
            f"variable, got {theta.shape}.")
    if not np.all(np.isfinite(theta)):
        i = int(np.flatnonzero(~np.isfinite(theta))[0])
        raise ValueError(f"{caller}: variable_scores[{i}] = {theta[i]} is not finite.")
    if factor_scores is None:
        if graph.n_factor_scores:
            raise ValueError(
                f"{caller}: the graph has scored factors; pass factor_scores of length "
                f"{graph.n_factor_scores}.")
        fs = np.zeros(0)
    else:
        fs = np.asarray(factor_scores, dtype=np.float64)
        if fs.shape != (graph.n_factor_scores,):
            raise ValueError(
                f"{caller}: factor_scores must have shape ({graph.n_factor_scores},) (see "
                f"graph.factor_offsets), got {fs.shape}.")
        if not np.all(np.isfinite(fs)):
            i = int(np.flatnonzero(~np.isfinite(fs))[0])
            raise ValueError(f"{caller}: factor_scores[{i}] = {fs[i]} is not finite.")
    return cg, np.ascontiguousarray(theta), np.ascontiguousarray(fs)


def _kernel_args(cg):
    return (cg.f_type, cg.f_start, cg.slot_var, cg.slot_neg, cg.f_score, cg.f_table,
            cg.tab_cfg, cg.tab_nc, cg.tab_gram, cg.cfg_ptr, cg.cfg_on, cg.cfg_ok, cg.gram)


def _initial_state(cg):
    n_slots = cg.slot_var.shape[0]
    return (np.full(cg.n_variables, 0.5), np.zeros(n_slots), np.zeros(n_slots),
            np.zeros(cg.n_scores), [None] * len(cg.structures))


def _copy_state(state):
    u, q, lam, add, inits = state
    return (u.copy(), q.copy(), lam.copy(), add.copy(), list(inits))


def _solve_structures(cg, u, share, lam, rho, fs, q, add, inits, factor_active, var_active,
                      refresh):
    """The local QPs of the structure factors: SparseMAP on shifted scores."""
    for j, (f, structure, parts, off, n_v) in enumerate(cg.structures):
        if not refresh and not factor_active[f]:
            continue
        factor_active[f] = False
        s0, s1 = cg.f_start[f], cg.f_start[f + 1]
        vars_ = cg.slot_var[s0:s1]
        z = u[vars_] + (share[vars_] + lam[s0:s1]) / rho
        eta_u = z + parts.eta_u / rho
        eta_v = (parts.eta_v + fs[off:off + n_v]) / rho
        res = sparsemap_parts(structure, Parts(eta_u, eta_v, parts.context),
                              init=inits[j])
        inits[j] = [value for value, _ in res.support]
        new = res.u
        moved = (refresh | (np.abs(new - q[s0:s1]) > 1e-12) | (np.abs(new - u[vars_]) > 1e-12)
                 | ((new > 1e-12) & (new < 1 - 1e-12)))
        var_active[vars_[moved]] = True
        q[s0:s1] = new
        add[off:off + n_v] = res.v


def _structure_dual(cg, theta, lam, fs):
    """Per-factor maxima of the structure factors' linear scores (for the dual)."""
    values = np.zeros(cg.f_type.shape[0])
    for f, structure, parts, off, n_v in cg.structures:
        s0, s1 = cg.f_start[f], cg.f_start[f + 1]
        vars_ = cg.slot_var[s0:s1]
        w = theta[vars_] / cg.deg[vars_] + lam[s0:s1] + parts.eta_u
        eta_v = parts.eta_v + fs[off:off + n_v]
        _, m, n = structure.oracle(parts, w, eta_v)
        values[f] = dot_masked(w, m) + dot_masked(eta_v, n)
    return values


def _run(cg, theta, fs, fixed, eta, adaptive, max_iter, tol, state, lower_bound=-np.inf,
         gap_tol=0.0):
    """AD3 from ``state`` (updated in place); ``(n_iter, converged, eta)``.

    Stops early when the dual value (computed every 50 iterations) falls
    below ``lower_bound``, or (converged) when it is within ``gap_tol``
    (relative) of the primal objective.
    """
    u, q, lam, add, inits = state
    kargs = _kernel_args(cg)
    if not cg.structures:
        n_iter, converged, eta = ad3_loop(
            *kargs, cg.v_ptr, cg.v_slots, cg.slot_factor, cg.deg, fixed, theta, fs, q, lam, u,
            add, float(eta), bool(adaptive), int(max_iter), float(tol), float(lower_bound),
            float(gap_tol))
        return int(n_iter), bool(converged), float(eta)
    # With structure factors: the same loop, in Python around the kernels.
    share = np.where(cg.deg > 0, theta / np.maximum(cg.deg, 1), 0.0)
    f_dense, dS, dk, dB, ws = dense_workspace(cg.f_type, cg.f_start, cg.f_score, cg.f_table,
                                              cg.tab_nc, cg.tab_gram, cg.gram, add)
    factor_active = np.ones(cg.f_type.shape[0], dtype=np.bool_)
    var_active = np.ones(cg.n_variables, dtype=np.bool_)
    refresh = True
    converged = False
    t = 0
    while t < max_iter:
        rho = 2.0 * eta
        solve_local(*kargs, share, u, lam, rho, fs, q, add, factor_active, var_active,
                    refresh, f_dense, dS, dk, dB, *ws)
        _solve_structures(cg, u, share, lam, rho, fs, q, add, inits, factor_active,
                          var_active, refresh)
        primal_res, dual_res = consensus(cg.v_ptr, cg.v_slots, cg.slot_factor, cg.deg, fixed,
                                         theta, q, lam, u, rho, TAU, var_active,
                                         factor_active, refresh)
        t += 1
        if primal_res < tol and dual_res < tol:
            converged = True
            break
        if (lower_bound > -np.inf or gap_tol > 0) and t % 50 == 0:
            primal, bound = _objectives(cg, theta, fs, fixed, state)
            if bound < lower_bound:
                break
            if gap_tol > 0 and abs(bound - primal) <= gap_tol * max(1.0, abs(bound)):
                converged = True
                break
        refresh = t % 50 == 0
        if adaptive and (t - 1) % ADAPT_EVERY == 0:
            eta, changed = adapt_eta(eta, primal_res, dual_res)
            if changed:
                refresh = True
    return t, converged, float(eta)


def _objectives(cg, theta, fs, fixed, state):
    """``(primal, dual)`` of a state."""
    u, q, lam, add, _ = state
    primal = float(theta @ u + fs @ add)
    for f, structure, parts, off, n_v in cg.structures:
        s0, s1 = cg.f_start[f], cg.f_start[f + 1]
        primal += dot_masked(parts.eta_u, q[s0:s1]) + dot_masked(parts.eta_v, add[off:off + n_v])
    struct_values = _structure_dual(cg, theta, lam, fs) if cg.structures else np.zeros(
        cg.f_type.shape[0])
    dual = dual_value(cg.f_type, cg.f_start, cg.slot_var, cg.slot_neg, cg.f_score, cg.f_table,
                      cg.tab_cfg, cg.tab_nc, cg.cfg_ptr, cg.cfg_on, cg.cfg_ok, cg.deg, fixed,
                      theta, lam,
                      fs, struct_values)
    return primal, float(dual)


def _check_solver_args(eta, max_iter, tol, caller):
    if not (isinstance(eta, (int, float, np.floating, np.integer)) and np.isfinite(eta)
            and eta > 0):
        raise ValueError(f"{caller}: eta must be a positive number, got {eta!r}.")
    if (isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer))
            or max_iter < 1):
        raise ValueError(f"{caller}: max_iter must be a positive integer, got {max_iter!r}.")
    if not (isinstance(tol, (int, float, np.floating, np.integer)) and np.isfinite(tol)
            and tol > 0):
        raise ValueError(f"{caller}: tol must be a positive number, got {tol!r}.")


def _warm_state(cg, warm_start, caller):
    if warm_start is None:
        return _initial_state(cg), None
    if not isinstance(warm_start, AD3Result) or warm_start.state is None:
        raise ValueError(f"{caller}: warm_start must be an AD3Result returned by ad3.")
    state = warm_start.state
    u, q, lam, add, inits = state
    if (u.shape != (cg.n_variables,) or q.shape != cg.slot_var.shape
            or add.shape != (cg.n_scores,) or len(inits) != len(cg.structures)):
        raise ValueError(f"{caller}: warm_start comes from a different factor graph.")
    return _copy_state(state), warm_start.eta


def ad3(graph, variable_scores, factor_scores=None, *, eta=0.1, adaptive_eta=True,
        max_iter=5000, tol=1e-6, gap_tol=None, warm_start=None):
    """LP-MAP inference on a factor graph with AD3.

    Maximises ``variable_scores . u + factor_scores . v`` over the local
    polytope of ``graph``: variable marginals ``u`` in [0, 1] and, for every
    factor, local marginals in the convex hull of its allowed configurations
    that agree with ``u``; ``v`` are the additional marginals of the scored
    factors. When the solution is integral it is the MAP.

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
        Initial step size (the augmented Lagrangian's penalty is ``2 eta``).
    adaptive_eta : bool, default=True
        Every 50 iterations, double ``eta`` when the primal residual is 100
        times the dual one, halve it when the dual residual is 10 times the
        primal one (within [1e-3, 100]).
    max_iter : int, default=5000
        Maximum number of iterations.
    tol : float, default=1e-6
        Stop when both residuals (root mean squares over the factors' copies
        of the variables) are below ``tol``.
    gap_tol : float or None, default=None
        If given, also stop (as converged) when the dual value, computed
        every 50 iterations, is within ``gap_tol`` (relative) of the primal
        objective. The residual criterion is slow to reach on fractional
        LPs whose objective has long settled; note that the primal point is
        only feasible up to the residuals.
    warm_start : AD3Result, default=None
        A result of ``ad3`` on the same graph (possibly other scores): start
        from its multipliers, copies and step size.

    Returns
    -------
    result : AD3Result
        ``variables``, ``factors``, ``primal``, ``dual``, ``integral``,
        ``n_iter``, ``converged``, ``eta`` and the state for warm starts.

    Examples
    --------
    A three-state variable (binaries 0-2) and a binary one (3) that may only
    be on together with state 2, through an implication ``3 => 2``:

    >>> import numpy as np
    >>> from sksparse_struct.inference import FactorGraph, ad3
    >>> fg = FactorGraph(4)
    >>> fg.add_xor([0, 1, 2])
    >>> fg.add_implication([3], 2)
    >>> res = ad3(fg, [1.0, 0.0, 0.5, 1.0])
    >>> res.variables.round(4).tolist(), round(res.primal, 4), res.integral
    ([0.0, 0.0, 1.0, 1.0], 1.5, True)
    """
    cg, theta, fs = check_graph_scores(graph, variable_scores, factor_scores, "ad3")
    _check_solver_args(eta, max_iter, tol, "ad3")
    if gap_tol is not None and not (isinstance(gap_tol, (int, float, np.floating, np.integer))
                                    and np.isfinite(gap_tol) and gap_tol > 0):
        raise ValueError(f"ad3: gap_tol must be a positive number or None, got {gap_tol!r}.")
    state, warm_eta = _warm_state(cg, warm_start, "ad3")
    if warm_eta is not None and adaptive_eta:
        eta = warm_eta
    fixed = np.full(cg.n_variables, -1, dtype=np.int64)
    return _result(cg, theta, fs, fixed, state,
                   *_run(cg, theta, fs, fixed, eta, adaptive_eta, max_iter, tol, state,
                         gap_tol=0.0 if gap_tol is None else float(gap_tol)))


def _result(cg, theta, fs, fixed, state, n_iter, converged, eta):
    primal, dual = _objectives(cg, theta, fs, fixed, state)
    u = state[0]
    integral = bool(np.all(np.minimum(np.abs(u), np.abs(1.0 - u)) <= _INTEGRAL_TOL))
    return AD3Result(variables=u.copy(), factors=state[3].copy(), primal=primal, dual=dual,
                     integral=integral, n_iter=n_iter, converged=converged, eta=eta,
                     state=_copy_state(state))


def evaluate(cg, theta, fs, x):
    """Whether the 0/1 assignment ``x`` is allowed; its score and factor marginals."""
    x = np.ascontiguousarray(x, dtype=np.int64)
    add = np.zeros(cg.n_scores)
    feasible, score, _ = evaluate_assignment(
        cg.f_type, cg.f_start, cg.slot_var, cg.slot_neg, cg.f_score, cg.f_table, cg.tab_cfg,
        cg.tab_nc, cg.cfg_ptr, cg.cfg_on, cg.cfg_ok, x, fs, add)
    if not feasible:
        return False, -np.inf, add
    score += float(theta @ x)
    for f, structure, parts, off, n_v in cg.structures:
        s0, s1 = cg.f_start[f], cg.f_start[f + 1]
        xs = x[cg.slot_var[s0:s1]].astype(np.float64)
        eta_u = np.where(xs == 1, parts.eta_u, -np.inf)
        eta_v = parts.eta_v + fs[off:off + n_v]
        try:
            _, m, n = structure.oracle(parts, eta_u, eta_v)
        except ValueError:  # no structure uses only the parts that are on
            return False, -np.inf, add
        if not np.array_equal(m, xs):
            return False, -np.inf, add
        val = dot_masked(parts.eta_u, m) + dot_masked(eta_v, n)
        if not np.isfinite(val):
            return False, -np.inf, add
        score += val
        add[off:off + n_v] = n
    return True, float(score), add


def ad3_map(graph, variable_scores, factor_scores=None, *, gap_tol=1e-6, max_nodes=10000,
            eta=0.1, adaptive_eta=True, max_iter=5000, tol=1e-6):
    """Exact MAP on a factor graph by branch-and-bound over AD3's LP relaxation.

    Each node of a depth-first search solves the LP relaxation with
    :func:`ad3` (warm-started from its parent) with some variables fixed;
    the dual value bounds the node. A node is pruned when its bound is
    within ``gap_tol`` (relative) of the best assignment found; otherwise
    its rounded solution is tried as an assignment and the search branches
    on the free variable closest to 0.5, the likelier value first.

    Parameters
    ----------
    graph : FactorGraph
        The factor graph.
    variable_scores, factor_scores : array-like
        As in :func:`ad3`.
    gap_tol : float, default=1e-6
        Relative optimality gap at which a node is pruned.
    max_nodes : int, default=10000
        Maximum number of nodes; when reached, the best assignment found is
        returned with ``optimal=False``.
    eta, adaptive_eta, max_iter, tol :
        Passed to the LP solves, as in :func:`ad3`.

    Returns
    -------
    result : MAPResult
        ``variables`` (0/1), ``factors``, ``objective``, ``optimal`` and
        ``n_nodes``.

    Raises
    ------
    ValueError
        If no assignment satisfies the factors (after a complete search).

    Examples
    --------
    >>> from sksparse_struct.inference import FactorGraph, ad3_map
    >>> fg = FactorGraph(3)
    >>> fg.add_at_most_one([0, 1])
    >>> fg.add_implication([0], 2, negated=[False, True])  # 0 => NOT 2
    >>> res = ad3_map(fg, [1.0, 0.8, 0.5])
    >>> res.variables.tolist(), round(res.objective, 6), res.optimal
    ([0.0, 1.0, 1.0], 1.3, True)
    """
    cg, theta, fs = check_graph_scores(graph, variable_scores, factor_scores, "ad3_map")
    _check_solver_args(eta, max_iter, tol, "ad3_map")
    if (isinstance(max_nodes, bool) or not isinstance(max_nodes, (int, np.integer))
            or max_nodes < 1):
        raise ValueError(f"ad3_map: max_nodes must be a positive integer, got {max_nodes!r}.")
    if not (np.isfinite(gap_tol) and gap_tol >= 0):
        raise ValueError(f"ad3_map: gap_tol must be a non-negative number, got {gap_tol!r}.")
    n = cg.n_variables
    best_obj = -np.inf
    best_x = None
    best_add = None
    stack = [(np.full(n, -1, dtype=np.int64), _initial_state(cg), eta)]
    n_nodes = 0
    complete = True

    def pruned(bound):
        return bound <= best_obj + gap_tol * max(1.0, abs(best_obj))

    while stack:
        if n_nodes >= max_nodes:
            complete = False
            break
        fixed, state, node_eta = stack.pop()
        n_nodes += 1
        incumbent = (best_obj + gap_tol * max(1.0, abs(best_obj)) if best_x is not None
                     else -np.inf)
        _, _, node_eta = _run(cg, theta, fs, fixed, node_eta, adaptive_eta, max_iter, tol,
                              state, incumbent)
        _, bound = _objectives(cg, theta, fs, fixed, state)
        if pruned(bound):
            continue
        u = state[0]
        x = np.where(fixed >= 0, fixed, (u > 0.5).astype(np.int64))
        feasible, obj, add = evaluate(cg, theta, fs, x)
        if feasible and obj > best_obj:
            best_obj, best_x, best_add = obj, x, add
        if pruned(bound):
            continue
        free = np.flatnonzero(fixed < 0)
        if free.shape[0] == 0:
            continue
        i = free[np.argmin(np.abs(u[free] - 0.5))]
        likely = 1 if u[i] > 0.5 else 0
        for value in (1 - likely, likely):  # the likelier child is popped first
            child = fixed.copy()
            child[i] = value
            stack.append((child, _copy_state(state), node_eta))
    if best_x is None:
        if complete:
            raise ValueError("ad3_map: no assignment satisfies every factor of the graph.")
        raise ValueError(
            f"ad3_map: no feasible assignment found within max_nodes={max_nodes} nodes.")
    return MAPResult(variables=best_x.astype(np.float64), factors=best_add,
                     objective=best_obj, optimal=complete, n_nodes=n_nodes)
