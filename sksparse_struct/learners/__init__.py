"""Optimisers that only see an objective or an online problem, never a model.

- :func:`minimize_lbfgs`: L-BFGS and OWL-QN on ``fun(x) -> (f, g)``.
- :func:`minimize_online`: mini-batch AdaGrad (lazy L2, proximal L1,
  averaging) and the averaged perceptron on an *online problem*: an object
  that writes the sparse gradient of a mini-batch (see the module
  ``_online`` for the interface).

Internal-facing building blocks of the estimators, importable for reuse.
"""

from ._lbfgs import LBFGSIteration, LBFGSResult, minimize_lbfgs
from ._online import OnlineEpoch, OnlineResult, SparseGradient, minimize_online

__all__ = [
    "LBFGSIteration",
    "LBFGSResult",
    "OnlineEpoch",
    "OnlineResult",
    "SparseGradient",
    "minimize_lbfgs",
    "minimize_online",
]
