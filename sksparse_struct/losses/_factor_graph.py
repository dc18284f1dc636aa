"""Structured losses over factor graphs: LP-MAP (hinge, perceptron) and LP-SparseMAP.

``structured_loss`` defines the structured losses for one structure; over a
:class:`~sksparse_struct.inference.FactorGraph` (structures tied by logic,
pair and dense factors) the marginal polytope is replaced by the graph's
local polytope ``L``, MAP by LP-MAP (AD3) and SparseMAP by LP-SparseMAP
(Niculae & Martins 2020):

    hinge(theta, phi; y) = max_{(u, v) in L} [theta . u + phi . v + cost(u)]
                           - [theta . y_u + phi . y_v]
    sparsemap(theta, phi; y) = max_{(u, v) in L} [theta . u + phi . v - 1/2 ||u||^2
                                                  + cost(u)]
                               - [theta . y_u + phi . y_v - 1/2 ||y_u||^2]

with the weighted Hamming cost ``cost(u) = sum_i c_i |u_i - y_i|`` (affine
in ``u`` for a 0/1 ``y``) for ``"hinge"`` and ``"margin_sparsemap"``, and
``cost = 0`` for ``"perceptron"`` and ``"sparsemap"``. All are convex in the
scores and non-negative when ``y`` is in ``L``; the (sub)gradient is
``(u* - y_u, v* - y_v)`` at the maximiser. The relaxed hinge is the loss
structured SVMs over factor graphs train with (Martins et al. 2011), the
relaxed perceptron its cost-free variant.
"""

from typing import NamedTuple

import numpy as np

from ..inference import ad3, lp_sparsemap
from ..inference._ad3 import check_graph_scores
from ._kinds_fast import COST_AUGMENTED_LOSSES

__all__ = ["FactorGraphLoss", "FACTOR_GRAPH_LOSSES", "factor_graph_loss"]

#: The losses :func:`factor_graph_loss` computes.
FACTOR_GRAPH_LOSSES = ("hinge", "perceptron", "sparsemap", "margin_sparsemap")
# The losses solved by LP-MAP (the others by LP-SparseMAP).
_LP_MAP = ("hinge", "perceptron")


class FactorGraphLoss(NamedTuple):
    """Value and gradients of :func:`factor_graph_loss`.

    Attributes
    ----------
    value : float
        The loss.
    grad_variable_scores : ndarray of shape (n_variables,)
        ``u* - y_u``.
    grad_factor_scores : ndarray of shape (n_factor_scores,)
        ``v* - y_v``.
    result : AD3Result or LPSparseMAPResult
        The solution of the maximisation (for warm starts and diagnostics):
        AD3's for the hinge and the perceptron, LP-SparseMAP's otherwise.
    """

    value: float
    grad_variable_scores: np.ndarray
    grad_factor_scores: np.ndarray
    result: object


def _gold(values, size, name):
    arr = np.asarray(values, dtype=np.float64)
    if arr.shape != (size,):
        raise ValueError(f"factor_graph_loss: {name} must have shape ({size},), got {arr.shape}.")
    if not np.isfinite(arr).all():
        raise ValueError(f"factor_graph_loss: {name} must be finite.")
    return arr


def factor_graph_loss(graph, variable_scores, factor_scores, y_variables, y_factors=None, *,
                      loss="sparsemap", cost=None, warm_start=None, **solver_options):
    """A structured loss over a factor graph, with its gradient (LP-MAP or LP-SparseMAP).

    Parameters
    ----------
    graph : FactorGraph
        The factor graph.
    variable_scores : array-like of shape (graph.n_variables,)
        ``theta``, the scores of the variables.
    factor_scores : array-like of shape (graph.n_factor_scores,) or None
        ``phi``, the scores of the scored factors.
    y_variables : array-like of shape (graph.n_variables,)
        The gold assignment ``y_u`` (0/1 for ``"hinge"`` and
        ``"margin_sparsemap"``; any point of the local polytope for the
        others).
    y_factors : array-like of shape (graph.n_factor_scores,), default=None
        The gold additional marginals ``y_v`` (e.g. ``x AND y`` of a pair
        factor); required when the graph has scored factors.
    loss : {"hinge", "perceptron", "sparsemap", "margin_sparsemap"}, \
            default="sparsemap"
        LP-MAP with or without the cost inside the maximisation
        (``"hinge"``, ``"perceptron"``), or LP-SparseMAP without or with it
        (``"sparsemap"``, ``"margin_sparsemap"``).
    cost : array-like of shape (graph.n_variables,), default=None
        With ``"hinge"`` and ``"margin_sparsemap"``: the weight ``c_i >= 0``
        of a mistake on variable ``i`` in the weighted Hamming cost (ones if
        None). E.g. ``0.5`` on the variables of a one-of-K group counts a
        wrong label once, not twice; ``1 - y`` counts only the variables
        wrongly on (one per wrong label of a one-of-K group, one per word
        with a wrong head in a tree).
    warm_start : AD3Result or LPSparseMAPResult, default=None
        Passed to :func:`~sksparse_struct.inference.ad3` (hinge,
        perceptron) or :func:`~sksparse_struct.inference.lp_sparsemap`.
    **solver_options
        ``eta``, ``adaptive_eta``, ``max_iter``, ``tol`` of the solver.

    Returns
    -------
    loss : FactorGraphLoss
        ``value``, ``grad_variable_scores``, ``grad_factor_scores`` and the
        ``result`` of the solver.

    Notes
    -----
    The value is computed at the solver's solution: non-negative and exact
    up to the solver's tolerance (it is clamped at 0 when rounding takes it
    below). The gold must satisfy the graph's factors for the loss to be
    non-negative; it is not checked here. The perceptron's gradient is
    returned whatever the value (it updates on ties too).

    Examples
    --------
    >>> from sksparse_struct.inference import FactorGraph
    >>> from sksparse_struct.losses import factor_graph_loss
    >>> fg = FactorGraph(3)
    >>> fg.add_xor([0, 1, 2])
    >>> out = factor_graph_loss(fg, [1.0, 0.8, -1.0], None, [0.0, 1.0, 0.0], tol=1e-9)
    >>> round(out.value, 4), out.grad_variable_scores.round(4).tolist()
    (0.36, [0.6, -0.6, 0.0])
    """
    # The scores are checked as the solver checks them, before the cost is added.
    _, theta, fs = check_graph_scores(graph, variable_scores, factor_scores, "factor_graph_loss")
    if loss not in FACTOR_GRAPH_LOSSES:
        raise ValueError(
            f"factor_graph_loss: loss must be one of {FACTOR_GRAPH_LOSSES}, got {loss!r}.")
    y_u = _gold(y_variables, graph.n_variables, "y_variables")
    if y_factors is None:
        if graph.n_factor_scores:
            raise ValueError("factor_graph_loss: the graph has scored factors; pass y_factors "
                             f"of length {graph.n_factor_scores}.")
        y_v = np.zeros(0)
    else:
        y_v = _gold(y_factors, graph.n_factor_scores, "y_factors")
    inner_theta = theta
    offset = 0.0
    if loss in COST_AUGMENTED_LOSSES:
        if not np.all((y_u == 0.0) | (y_u == 1.0)):
            raise ValueError(f"factor_graph_loss: with loss={loss!r}, y_variables "
                             "must be 0/1 (the Hamming cost is affine in u for a 0/1 gold).")
        c = np.ones(graph.n_variables) if cost is None else _gold(cost, graph.n_variables,
                                                                   "cost")
        if (c < 0).any():
            raise ValueError("factor_graph_loss: cost must be non-negative.")
        # sum c |u - y| = sum c (1 - 2 y) u + sum c y for 0/1 y
        inner_theta = theta + c * (1.0 - 2.0 * y_u)
        offset = float(c @ y_u)
    elif cost is not None:
        raise ValueError(
            f"factor_graph_loss: cost is for loss='hinge' or 'margin_sparsemap', not {loss!r}.")
    gold = float(theta @ y_u) + _fixed_scores(graph, y_u, y_v)
    if loss in _LP_MAP:
        result = ad3(graph, inner_theta, fs, warm_start=warm_start, **solver_options)
        objective = result.primal
    else:
        result = lp_sparsemap(graph, inner_theta, fs, warm_start=warm_start, **solver_options)
        objective = result.objective
        gold -= 0.5 * float(y_u @ y_u)
    if y_v.shape[0]:
        gold += float(fs @ y_v)
    value = objective + offset - gold
    return FactorGraphLoss(max(value, 0.0), result.variables - y_u, result.factors - y_v,
                           result)


def _fixed_scores(graph, y_u, y_v):
    """The structure factors' fixed part scores of the gold (they count in the objective too)."""
    cg = graph.compile()
    if not cg.structures:
        return 0.0
    # The structure factors come after the other factors, their variables
    # (slots) in the order of their fixed unary scores.
    first = cg.structures[0][0]
    gold_u = y_u[cg.slot_var[cg.f_start[first]:]]
    used = gold_u != 0  # never 0 * -inf
    total = float(cg.structs.eta_u[used] @ gold_u[used])
    eta_v = cg.structs.eta_v
    if eta_v.shape[0]:
        v_ptr = cg.structs.v_ptr
        offsets = np.fromiter((item[3] for item in cg.structures), dtype=np.int64,
                              count=len(cg.structures))
        slots = np.repeat(offsets - v_ptr[:-1], np.diff(v_ptr)) + np.arange(eta_v.shape[0])
        gold_v = y_v[slots]
        used = gold_v != 0
        total += float(eta_v[used] @ gold_v[used])
    return total
