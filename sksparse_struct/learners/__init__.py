"""Optimisers that only see an objective or an online problem, never a model or data.

- :func:`minimize_lbfgs` (L-BFGS and OWL-QN) sees ``fun(x) -> (f, g)``.
- :func:`newton_cg` (truncated Newton) sees ``loss_grad(w) -> (f, g)`` and a
  Hessian-vector product ``hessp(v)``.
- :func:`minimize_online` (mini-batch AdaGrad with lazy L2, proximal L1 and
  averaging; the averaged perceptron) sees an *online problem*: an object
  that writes the sparse gradient of a mini-batch into a
  :class:`SparseGradient` (its interface is in the docstring of
  :func:`minimize_online`'s module, ``learners/_online.py``).
- :func:`minimize_bcfw` (block-coordinate Frank-Wolfe for the structured
  SVM, with line search, averaging and the duality gap) sees a *BCFW
  problem*: per sample, its gold structure, a loss-augmented decoder and a
  joint feature map (interface in ``learners/_bcfw.py``).

Internal-facing building blocks of the estimators, importable for reuse.
"""

from ._bcfw import BCFWGap, BCFWPass, BCFWResult, minimize_bcfw
from ._lbfgs import LBFGSIteration, LBFGSResult, minimize_lbfgs
from ._newton import newton_cg
from ._online import OnlineEpoch, OnlineResult, SparseGradient, minimize_online

__all__ = [
    "BCFWGap",
    "BCFWPass",
    "BCFWResult",
    "LBFGSIteration",
    "LBFGSResult",
    "OnlineEpoch",
    "OnlineResult",
    "SparseGradient",
    "minimize_bcfw",
    "minimize_lbfgs",
    "minimize_online",
    "newton_cg",
]
