"""Optimisers that only see an objective.

:func:`minimize_lbfgs` (L-BFGS and OWL-QN) sees ``fun(x) -> (f, g)``;
:func:`newton_cg` (truncated Newton) sees ``loss_grad(w) -> (f, g)`` and a
Hessian-vector product ``hessp(v)``. Neither knows of models or data.

Internal-facing building blocks of the estimators, importable for reuse.
"""

from ._lbfgs import LBFGSIteration, LBFGSResult, minimize_lbfgs
from ._newton import newton_cg

__all__ = ["LBFGSIteration", "LBFGSResult", "minimize_lbfgs", "newton_cg"]
