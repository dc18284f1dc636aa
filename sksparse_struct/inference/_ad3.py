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

import math
from typing import NamedTuple

import numpy as np

from ..utils._validation import check_integer, check_positive_scalar
from ._ad3_fast import LARGE_SCORE, N_OPTIONS, ad3_solve, evaluate_assignment, new_workspace
from ._factor_graph import FactorGraph

__all__ = ["AD3Result", "MAPResult", "ad3", "ad3_map"]



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
    primal_residual, dual_residual : float
        The residuals of the last iteration (root mean squares over the
        factors' copies of the variables: their distance to the consensus,
        and the consensus' change weighted by each variable's degree).
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
    primal_residual: float = 0.0
    dual_residual: float = 0.0


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
    cg, theta, fs, _ = _checked_scores(graph, variable_scores, factor_scores, caller)
    return cg, theta, fs


def _checked_arrays(graph, variable_scores, factor_scores, caller):
    """The compiled graph and the scores as contiguous float64 arrays of the right shapes.

    The values are not looked at: :func:`ad3` lets the solver check them
    (``OPT_CHECK_SCORES``) and comes back to :func:`_checked_scores` only
    when a score is not finite or needs scaling.
    """
    if not isinstance(graph, FactorGraph):
        raise ValueError(f"{caller}: graph must be a FactorGraph, got {type(graph).__name__}.")
    cg = graph.compile()
    theta = np.asarray(variable_scores, dtype=np.float64)
    if theta.shape != (graph.n_variables,):
        raise ValueError(
            f"{caller}: variable_scores must have shape ({graph.n_variables},), one score per "
            f"variable, got {theta.shape}.")
    if factor_scores is None:
        if graph.n_factor_scores:
            raise ValueError(
                f"{caller}: the graph has scored factors; pass factor_scores of length "
                f"{graph.n_factor_scores}.")
        fs = _NO_SCORES
    else:
        fs = np.asarray(factor_scores, dtype=np.float64)
        if fs.shape != (graph.n_factor_scores,):
            raise ValueError(
                f"{caller}: factor_scores must have shape ({graph.n_factor_scores},) (see "
                f"graph.factor_offsets), got {fs.shape}.")
    return cg, np.ascontiguousarray(theta), np.ascontiguousarray(fs)


_NO_SCORES = np.zeros(0)


def _checked_scores(graph, variable_scores, factor_scores, caller):
    """:func:`check_graph_scores` and the largest score magnitude."""
    cg, theta, fs = _checked_arrays(graph, variable_scores, factor_scores, caller)
    top = 0.0
    for name, scores in (("variable_scores", theta), ("factor_scores", fs)):
        largest = float(np.abs(scores).max()) if scores.shape[0] else 0.0
        if not math.isfinite(largest):
            i = int(np.flatnonzero(~np.isfinite(scores))[0])
            raise ValueError(f"{caller}: {name}[{i}] = {scores[i]} is not finite.")
        top = max(top, largest)
    return cg, theta, fs, top


# Scores above this magnitude are scaled down by a power of two (exactly,
# and the LP's solution does not change) so that no sum in the solver
# overflows, and the objectives scaled back.
_LARGE_SCORE = LARGE_SCORE


def _score_scale(top, limit=_LARGE_SCORE):
    """A power of two bringing the largest score ``top`` to at most 1 (1.0 if ``top <= limit``)."""
    if top <= limit:
        return 1.0
    return 2.0 ** -math.ceil(math.log2(top))


def _unscale(value, scale, caller):
    value = value / scale
    if not math.isfinite(value):
        raise ValueError(
            f"{caller}: the objective overflows float64 (the scores are too large to sum: "
            "rescale them).")
    return value


def _initial_state(cg):
    """The flat state ``[u | q | lam | add]`` (``_ad3_fast.split_state``) to start from."""
    state = np.zeros(cg.n_variables + 2 * cg.slot_var.shape[0] + cg.n_scores)
    state[:cg.n_variables] = 0.5
    return state


def _options(eta, adaptive, max_iter, tol, lower_bound=-np.inf, gap_tol=0.0, quadratic=0.0,
             check_scores=False, fresh=False):
    """The solver's options array (positions ``_ad3_fast.OPT_*``)."""
    return np.array((eta, adaptive, max_iter, tol, lower_bound, gap_tol, quadratic,
                     check_scores, fresh), dtype=np.float64)


assert _options(0.1, True, 1, 1e-6).shape[0] == N_OPTIONS


_NOT_FIXED = np.zeros(0, dtype=np.int64)


def _run(cg, kernel, *args):
    """``kernel(cg.data, *args, workspace)`` with a workspace of ``cg``'s pool.

    The structure factors' active-set arrays are kept with the compiled
    graph rather than allocated per solve (``_ad3_fast.Workspace``). A
    workspace serves one solve at a time: it is taken from the pool (a new
    one when every workspace is in use, e.g. by solves on other threads: the
    kernels release the GIL) and put back afterwards. ``list.pop`` and
    ``list.append`` are atomic, so no lock is needed.
    """
    pool = cg.workspaces
    try:
        workspace = pool.pop()
    except IndexError:
        workspace = new_workspace(cg.data)
    try:
        return kernel(cg.data, *args, workspace)
    finally:
        pool.append(workspace)


def _solve(cg, theta, fs, fixed, state, options, caller):
    """One compiled AD3 run from ``state`` (updated in place)."""
    out = _run(cg, ad3_solve, theta, fs, fixed, state, options)
    if out[8] != 0:
        _raise_status(out[8], caller)
    return out


def _raise_status(status, caller):
    """The error of a solver status other than 0."""
    if status == 1:
        raise ValueError(
            f"{caller}: a structure factor has no structure of finite score (its fixed "
            "part scores forbid every structure, or the scores overflow).")
    raise ValueError(f"{caller}: the solver stopped with status {status}.")


def _check_solver_args(eta, max_iter, tol, caller):
    check_positive_scalar(eta, f"{caller}: eta")
    check_integer(max_iter, f"{caller}: max_iter", minimum=1)
    check_positive_scalar(tol, f"{caller}: tol")


def _warm_state(cg, warm_start, scale, caller, result_type=AD3Result, producer=None):
    if warm_start is None:
        return _initial_state(cg), None
    if not isinstance(warm_start, result_type) or warm_start.state is None:
        raise ValueError(f"{caller}: warm_start must be a {result_type.__name__} returned by "
                         f"{producer or caller}.")
    state, old_scale, key = warm_start.state
    if key != (cg.n_variables, cg.slot_var.shape[0], cg.n_scores):
        raise ValueError(f"{caller}: warm_start comes from a different factor graph.")
    state = state.copy()
    if old_scale != scale:  # multipliers are in units of the scores
        n, n_slots = cg.n_variables, cg.slot_var.shape[0]
        state[n + n_slots:n + 2 * n_slots] *= scale / old_scale
    return state, warm_start.eta


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
        ``n_iter``, ``converged``, ``eta``, the state for warm starts and
        the last iteration's residuals.

    Raises
    ------
    ValueError
        For scores that are not finite, or so large that the objective
        overflows float64. (Scores above 2**60 in magnitude are scaled down
        by a power of two before solving, which leaves the solution
        unchanged, and the objectives scaled back.)

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
    cg, theta, fs = _checked_arrays(graph, variable_scores, factor_scores, "ad3")
    _check_solver_args(eta, max_iter, tol, "ad3")
    if gap_tol is not None:
        check_positive_scalar(gap_tol, "ad3: gap_tol")
    if not isinstance(adaptive_eta, (bool, np.bool_)):
        raise ValueError(f"ad3: adaptive_eta must be True or False, got {adaptive_eta!r}.")
    gap = 0.0 if gap_tol is None else gap_tol
    n, n_slots, n_scores = cg.n_variables, cg.slot_var.shape[0], cg.n_scores
    scale = 1.0
    out = None
    if warm_start is None:
        # The common case in one compiled call: the solver checks the scores
        # and sets up the initial state itself.
        state = np.empty(n + 2 * n_slots + n_scores)
        out = _run(cg, ad3_solve, theta, fs, _NOT_FIXED, state,
                   _options(eta, adaptive_eta, max_iter, tol, gap_tol=gap, check_scores=True,
                            fresh=True))
        if out[8] == 2:  # a score not finite (raised below) or to be scaled
            out = None
    if out is None:
        cg, theta, fs, top = _checked_scores(graph, variable_scores, factor_scores, "ad3")
        scale = _score_scale(top)
        if scale != 1.0:
            theta, fs = theta * scale, fs * scale
        state, warm_eta = _warm_state(cg, warm_start, scale, "ad3")
        if warm_eta is not None and adaptive_eta:
            eta = warm_eta
        out = _run(cg, ad3_solve, theta, fs, _NOT_FIXED, state,
                   _options(eta, adaptive_eta, max_iter, tol, gap_tol=gap))
    n_iter, converged, eta, primal, dual, primal_res, dual_res, integral, status = out
    if status != 0:
        _raise_status(status, "ad3")
    return AD3Result(state[:n].copy(), state[n + 2 * n_slots:].copy(),
                     _unscale(primal, scale, "ad3"), _unscale(dual, scale, "ad3"), integral,
                     n_iter, converged, eta, (state, scale, (n, n_slots, n_scores)),
                     primal_res, dual_res)


def evaluate(cg, theta, fs, x):
    """Whether the 0/1 assignment ``x`` is allowed; its score and factor marginals."""
    x = np.ascontiguousarray(x, dtype=np.int64)
    add = np.zeros(cg.n_scores)
    feasible, score, _ = _run(cg, evaluate_assignment, x, fs, add)
    if not feasible:
        return False, -np.inf, add
    return True, float(score + theta @ x), add


def _checked_incumbent(incumbent, n):
    x = np.asarray(incumbent)
    if x.shape != (n,):
        raise ValueError(f"ad3_map: incumbent must have shape ({n},), one value per variable, "
                         f"got {x.shape}.")
    if x.dtype == object or not np.all((x == 0) | (x == 1)):
        raise ValueError("ad3_map: incumbent must be a 0/1 assignment.")
    return np.ascontiguousarray(x, dtype=np.int64)


def ad3_map(graph, variable_scores, factor_scores=None, *, gap_tol=1e-6, max_nodes=10000,
            eta=0.1, adaptive_eta=True, max_iter=5000, tol=1e-6, warm_start=None,
            incumbent=None):
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
    warm_start : AD3Result, default=None
        A result of :func:`ad3` on the same graph and scores (typically the
        LP just solved to see whether it is integral): the root node starts
        from it instead of solving the relaxation again.
    incumbent : array-like of shape (graph.n_variables,), default=None
        A 0/1 assignment known to satisfy every factor (e.g. a heuristic
        rounding of the LP solution): the search starts with it as the best
        assignment found, prunes every node that cannot beat it, and
        returns it when nothing better is found within ``max_nodes``.

    Returns
    -------
    result : MAPResult
        ``variables`` (0/1), ``factors``, ``objective``, ``optimal`` and
        ``n_nodes``.

    Raises
    ------
    ValueError
        If no assignment satisfies the factors (after a complete search),
        or ``incumbent`` is not a 0/1 assignment that satisfies them.

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
    cg, theta, fs, top = _checked_scores(graph, variable_scores, factor_scores, "ad3_map")
    _check_solver_args(eta, max_iter, tol, "ad3_map")
    check_integer(max_nodes, "ad3_map: max_nodes", minimum=1)
    check_positive_scalar(gap_tol, "ad3_map: gap_tol", allow_zero=True)
    if not isinstance(adaptive_eta, (bool, np.bool_)):
        raise ValueError(f"ad3_map: adaptive_eta must be True or False, got {adaptive_eta!r}.")
    scale = _score_scale(top)
    if scale != 1.0:
        theta, fs = theta * scale, fs * scale
    n = cg.n_variables
    best_obj = -np.inf
    best_x = None
    best_add = None
    if incumbent is not None:
        best_x = _checked_incumbent(incumbent, n)
        feasible, best_obj, best_add = evaluate(cg, theta, fs, best_x)
        if not feasible:
            raise ValueError("ad3_map: incumbent violates a factor of the graph.")
    root_state, root_eta = _warm_state(cg, warm_start, scale, "ad3_map", producer="ad3")
    if root_eta is None or not adaptive_eta:
        root_eta = eta
    stack = [(np.full(n, -1, dtype=np.int64), root_state, root_eta)]
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
        options = _options(node_eta, adaptive_eta, max_iter, tol, incumbent)
        _, _, node_eta, _, bound, _, _, _, _ = _solve(cg, theta, fs, fixed, state, options,
                                                      "ad3_map")
        if pruned(bound):
            continue
        u = state[:n]
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
            stack.append((child, state.copy(), node_eta))
    if best_x is None:
        if complete:
            raise ValueError("ad3_map: no assignment satisfies every factor of the graph.")
        raise ValueError(
            f"ad3_map: no feasible assignment found within max_nodes={max_nodes} nodes.")
    return MAPResult(variables=best_x.astype(np.float64), factors=best_add,
                     objective=_unscale(best_obj, scale, "ad3_map"), optimal=complete,
                     n_nodes=n_nodes)
