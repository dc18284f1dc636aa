"""Optimisers that only see an objective ``fun(x) -> (f, g)``.

Internal-facing building blocks of the estimators, importable for reuse.
"""

from ._lbfgs import LBFGSIteration, LBFGSResult, minimize_lbfgs

__all__ = ["LBFGSIteration", "LBFGSResult", "minimize_lbfgs"]
