"""The LP relaxation and the MAP of a factor graph as explicit (mixed-integer) LPs.

The same local polytope :func:`~sksparse_struct.inference.ad3` works on,
written out for HiGHS (``scipy.optimize.linprog`` / ``milp``): columns are
the variable marginals followed by the additional marginals in the layout
of ``factor_scores`` (and flows for tree factors); rows are

- XOR ``sum u = 1``; AtMostOne ``sum u <= 1``; OR ``sum of literals >= 1``;
- pair ``z <= x``, ``z <= y``, ``z >= x + y - 1`` (``z >= 0``);
- dense ``sum_c p_c = 1`` and ``sum_c C[c, i] p_c = u_i``;
- dependency-tree factors: one head per word, the single root if required,
  and connectivity through flows from the root (one commodity per word for
  the LP, which gives the exact arborescence polytope; a single commodity
  for the MILP).
"""

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from ..structures import DependencyTree
from ..structures._tree import tree_options
from ..utils._validation import check_positive_scalar
from ._ad3 import AD3Result, MAPResult, _score_scale, _unscale, check_graph_scores
from ._ad3_fast import AT_MOST_ONE, DENSE, OR, PAIR, XOR

__all__ = ["highs_lp", "milp_map"]


class _Rows:
    """Sparse rows ``lo <= A x <= hi`` built incrementally."""

    def __init__(self):
        self.rows, self.cols, self.vals, self.lo, self.hi = [], [], [], [], []
        self.n = 0

    def add(self, cols, vals, lo, hi):
        """Rows given as 2-D ``cols``/``vals`` (one row per line) and 1-D bounds."""
        cols = np.asarray(cols, dtype=np.int64)
        vals = np.broadcast_to(np.asarray(vals, dtype=np.float64), cols.shape)
        m = cols.shape[0]
        self.rows.append(np.repeat(np.arange(self.n, self.n + m), cols.shape[1]))
        self.cols.append(cols.ravel())
        self.vals.append(vals.ravel())
        self.lo.append(np.broadcast_to(np.asarray(lo, dtype=np.float64), (m,)))
        self.hi.append(np.broadcast_to(np.asarray(hi, dtype=np.float64), (m,)))
        self.n += m

    def matrix(self, n_cols):
        if not self.n:
            return sp.csr_matrix((0, n_cols)), np.zeros(0), np.zeros(0)
        A = sp.csr_matrix((np.concatenate(self.vals),
                           (np.concatenate(self.rows), np.concatenate(self.cols))),
                          shape=(self.n, n_cols))
        return A, np.concatenate(self.lo), np.concatenate(self.hi)


def _program(graph, theta, fs, cg, integer, caller):
    """Objective (to maximise), rows and bounds; the rows are cached on the graph."""
    key = ("milp" if integer else "lp", id(cg))
    cache = getattr(graph, "_highs_cache", None)
    if cache is None or cache[0] != key:
        cache = (key, _build(cg, integer, caller))
        graph._highs_cache = cache
    c_fixed, A, lo, hi, bounds, n_base = cache[1]
    c = c_fixed.copy()
    c[:cg.n_variables] += theta
    c[cg.n_variables:n_base] += fs
    return c, A, lo, hi, bounds, n_base


def _build(cg, integer, caller):
    """Fixed objective terms, rows and bounds of the explicit program."""
    n_vars = cg.n_variables
    n_base = n_vars + cg.n_scores
    rows = _Rows()
    obj = [np.zeros(n_vars), np.zeros(cg.n_scores)]
    ub = [np.ones(n_vars), np.ones(cg.n_scores)]
    lb = [np.zeros(n_base)]
    n_cols = n_base
    types = cg.f_type
    for kind in (XOR, AT_MOST_ONE, OR, PAIR, DENSE):
        sel = np.flatnonzero(types == kind)
        if not sel.shape[0]:
            continue
        # group by arity so that each group is a rectangular block
        arity = cg.f_start[sel + 1] - cg.f_start[sel]
        for a in np.unique(arity):
            fs_sel = sel[arity == a]
            slots = cg.f_start[fs_sel][:, None] + np.arange(a)
            V = cg.slot_var[slots]
            if kind == XOR:
                rows.add(V, 1.0, 1.0, 1.0)
            elif kind == AT_MOST_ONE:
                rows.add(V, 1.0, -np.inf, 1.0)
            elif kind == OR:
                neg = cg.slot_neg[slots]
                rows.add(V, np.where(neg, -1.0, 1.0), 1.0 - neg.sum(axis=1), np.inf)
            elif kind == PAIR:
                z = n_vars + cg.f_score[fs_sel]
                rows.add(np.column_stack([z, V[:, 0]]), [1.0, -1.0], -np.inf, 0.0)
                rows.add(np.column_stack([z, V[:, 1]]), [1.0, -1.0], -np.inf, 0.0)
                rows.add(np.column_stack([V, z]), [1.0, 1.0, -1.0], -np.inf, 1.0)
            else:
                for t in np.unique(cg.f_table[fs_sel]):
                    ft = fs_sel[cg.f_table[fs_sel] == t]
                    C = cg.tables[t].astype(np.float64)  # (n_c, a)
                    nc = C.shape[0]
                    p = n_vars + cg.f_score[ft][:, None] + np.arange(nc)  # (n, nc)
                    if cg.masks[t].any():
                        ub[1] = ub[1].copy()
                        ub[1][(p[:, cg.masks[t]] - n_vars).ravel()] = 0.0
                    rows.add(p, 1.0, 1.0, 1.0)
                    Vt = cg.slot_var[cg.f_start[ft][:, None] + np.arange(a)]
                    for i in range(a):
                        rows.add(np.column_stack([p, Vt[:, i]]),
                                 np.concatenate([C[:, i], [-1.0]]), 0.0, 0.0)
    for f, structure, parts, off, n_v in cg.structures:
        if type(structure) is not DependencyTree or tree_options(structure)[0]:
            raise NotImplementedError(
                f"{caller}: structure factors other than non-projective DependencyTree have "
                f"no explicit LP here ({structure!r}); use ad3 / ad3_map.")
        n = parts.context
        V = cg.slot_var[cg.f_start[f]:cg.f_start[f + 1]]
        heads = np.tile(np.arange(n + 1), (n, 1))
        heads = heads[heads != np.arange(1, n + 1)[:, None]]  # part order, modifier-major
        mods = np.repeat(np.arange(1, n + 1), n)
        t_u = parts.eta_u
        forbidden = ~np.isfinite(t_u)
        extra_obj = np.zeros(n_vars)
        np.add.at(extra_obj, V[~forbidden], t_u[~forbidden])
        obj[0] = obj[0] + extra_obj
        ub[0] = ub[0].copy()
        ub[0][V[forbidden]] = 0.0
        # one head per word
        rows.add(V.reshape(n, n), 1.0, 1.0, 1.0)
        if tree_options(structure)[1]:
            rows.add(V[heads == 0][None, :], 1.0, 1.0, 1.0)
        n_arcs = n * n
        if integer:
            # single commodity: the root sends n units, every word keeps one
            fl = n_cols + np.arange(n_arcs)
            n_cols += n_arcs
            obj.append(np.zeros(n_arcs))
            lb.append(np.zeros(n_arcs))
            ub.append(np.full(n_arcs, float(n)))
            rows.add(np.column_stack([fl, V]), [1.0, -float(n)], -np.inf, 0.0)
            _flow_rows(rows, fl, heads, mods, n, np.ones(n + 1), -float(n))
        else:
            for k in range(1, n + 1):
                fl = n_cols + np.arange(n_arcs)
                n_cols += n_arcs
                obj.append(np.zeros(n_arcs))
                lb.append(np.zeros(n_arcs))
                ub.append(np.ones(n_arcs))
                rows.add(np.column_stack([fl, V]), [1.0, -1.0], -np.inf, 0.0)
                demand = np.zeros(n + 1)
                demand[k] = 1.0
                _flow_rows(rows, fl, heads, mods, n, demand, -1.0)
    A, lo, hi = rows.matrix(n_cols)
    c = np.concatenate(obj)
    bounds = (np.concatenate(lb), np.concatenate(ub))
    return c, A, lo, hi, bounds, n_base


def _flow_rows(rows, fl, heads, mods, n, demand, root_net):
    """Conservation: inflow - outflow = demand[v] at each word, root: -outflow = root_net."""
    for v in range(n + 1):
        into = fl[mods == v]
        out = fl[heads == v]
        cols = np.concatenate([into, out])
        vals = np.concatenate([np.ones(into.shape[0]), -np.ones(out.shape[0])])
        rhs = root_net if v == 0 else demand[v]
        rows.add(cols[None, :], vals[None, :], rhs, rhs)


def _check_limit(value, name, caller, allow_zero):
    """``value`` as a float, or None; a clear error unless a (positive) finite number."""
    if value is None:
        return None
    return check_positive_scalar(value, f"{caller}: {name}", allow_zero=allow_zero)


def _unconstrained(c, bounds):
    """The optimum of ``max c x`` over a box (a graph without factors): each column at a bound.

    Ties (``c = 0``) go to the lower bound, as :func:`ad3` sends a variable
    of score 0 to 0.
    """
    return np.where(c > 0, bounds[1], bounds[0]).astype(np.float64)


# HiGHS takes costs of 1e20 and more as infinite: larger objectives are
# scaled down by a power of two (the solution does not change) and the value
# scaled back.
_HIGHS_LARGE_COST = 2.0 ** 40


def _cost_scale(c):
    return _score_scale(float(np.abs(c[np.isfinite(c)]).max(initial=0.0)), _HIGHS_LARGE_COST)


def highs_lp(graph, variable_scores, factor_scores=None):
    """The LP relaxation of :func:`ad3`, solved exactly by HiGHS.

    The local polytope written as an explicit LP (see the module docstring)
    and solved with ``scipy.optimize.linprog(method="highs")``. Structure
    factors are supported for non-projective
    :class:`~sksparse_struct.structures.DependencyTree` only (multi-commodity
    flow formulation, the exact polytope of spanning arborescences).

    Parameters
    ----------
    graph : FactorGraph
    variable_scores, factor_scores : array-like
        As in :func:`ad3`.

    Returns
    -------
    result : AD3Result
        ``primal`` and ``dual`` are both the LP optimum; ``n_iter`` is HiGHS'
        iteration count; ``state`` is None.

    Raises
    ------
    NotImplementedError
        For other structure factors.
    """
    cg, theta, fs = check_graph_scores(graph, variable_scores, factor_scores, "highs_lp")
    c, A, lo, hi, bounds, n_base = _program(graph, theta, fs, cg, False, "highs_lp")
    if A.shape[0] == 0:  # no factors (or no variables): HiGHS needs at least one column
        x = _unconstrained(c, bounds)
        value = float(c @ x)
        return AD3Result(variables=x[:cg.n_variables].copy(), factors=x[cg.n_variables:n_base],
                         primal=value, dual=value, integral=True, n_iter=0, converged=True,
                         eta=float("nan"), state=None)
    eq = lo == hi
    A = A.tocsr()
    up, down = ~eq & np.isfinite(hi), ~eq & np.isfinite(lo)
    A_ub = sp.vstack([A[up], -A[down]]).tocsr()
    b_ub = np.concatenate([hi[up], -lo[down]])
    scale = _cost_scale(c)
    res = linprog(-c * scale, A_ub=A_ub if A_ub.shape[0] else None,
                  b_ub=b_ub if A_ub.shape[0] else None,
                  A_eq=A[eq] if eq.any() else None, b_eq=lo[eq] if eq.any() else None,
                  bounds=np.column_stack(bounds), method="highs")
    if res.status == 2:
        raise ValueError("highs_lp: the LP relaxation is infeasible: no assignment satisfies "
                         "the factors.")
    if res.status != 0:
        raise RuntimeError(f"highs_lp: HiGHS failed: {res.message}")
    x = np.clip(res.x[:n_base], 0.0, 1.0)
    u = x[:cg.n_variables]
    value = _unscale(float(-res.fun), scale, "highs_lp")
    integral = bool(np.all(np.minimum(np.abs(u), np.abs(1.0 - u)) <= 1e-6))
    return AD3Result(variables=u.copy(), factors=x[cg.n_variables:].copy(), primal=value,
                     dual=value, integral=integral, n_iter=int(res.nit), converged=True,
                     eta=float("nan"), state=None)


def milp_map(graph, variable_scores, factor_scores=None, *, time_limit=None, gap_tol=None):
    """Exact MAP as a mixed-integer LP solved by HiGHS (``scipy.optimize.milp``).

    Parameters
    ----------
    graph : FactorGraph
    variable_scores, factor_scores : array-like
        As in :func:`ad3`.
    time_limit : float or None, default=None
        Seconds HiGHS may take (a positive finite number; None: no limit);
        when reached, the best assignment found is returned with
        ``optimal=False``.
    gap_tol : float or None, default=None
        Relative optimality gap at which HiGHS stops (its ``mip_rel_gap``,
        a non-negative finite number; 0 asks for a proof of optimality to
        HiGHS' tolerances); None: HiGHS' default (1e-4). :func:`ad3_map`'s
        ``gap_tol`` (1e-6 by default) means the same.

    Returns
    -------
    result : MAPResult
        ``n_nodes`` is HiGHS' branch-and-bound node count.

    Raises
    ------
    ValueError
        If no assignment satisfies the factors, or ``time_limit`` or
        ``gap_tol`` is not a valid number.
    NotImplementedError
        For structure factors other than non-projective dependency trees.
    """
    time_limit = _check_limit(time_limit, "time_limit", "milp_map", allow_zero=False)
    gap_tol = _check_limit(gap_tol, "gap_tol", "milp_map", allow_zero=True)
    cg, theta, fs = check_graph_scores(graph, variable_scores, factor_scores, "milp_map")
    c, A, lo, hi, bounds, n_base = _program(graph, theta, fs, cg, True, "milp_map")
    if A.shape[0] == 0:  # no factors (or no variables): HiGHS needs at least one column
        x = _unconstrained(c, bounds)
        return MAPResult(variables=x[:cg.n_variables].copy(), factors=x[cg.n_variables:n_base],
                         objective=float(c @ x), optimal=True, n_nodes=0)
    integrality = np.zeros(c.shape[0])
    integrality[:n_base] = 1
    options = {}
    if time_limit is not None:
        options["time_limit"] = time_limit
    if gap_tol is not None:
        options["mip_rel_gap"] = gap_tol
    cons = [LinearConstraint(A, lo, hi)] if A.shape[0] else []
    res = milp(-c * _cost_scale(c), constraints=cons, integrality=integrality,
               bounds=Bounds(*bounds),
               options=options)
    if res.x is None:
        if res.status == 2:
            raise ValueError("milp_map: no assignment satisfies every factor of the graph.")
        raise RuntimeError(f"milp_map: HiGHS found no solution: {res.message}")
    x = np.round(res.x[:n_base])
    # c holds the variable, factor and fixed tree-arc scores; flows score 0
    return MAPResult(variables=x[:cg.n_variables].copy(), factors=x[cg.n_variables:].copy(),
                     objective=_unscale(float(c[:n_base] @ x), 1.0, "milp_map"),
                     optimal=res.status == 0,
                     n_nodes=int(getattr(res, "mip_node_count", 0) or 0))
