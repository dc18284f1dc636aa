"""Probability mappings onto the simplex, with forward and backward passes.

Every mapping takes a 1-D vector or a 2-D array (applied to every row) and
returns float64 probabilities. Each ``<name>_backward`` function computes the
vector-Jacobian product from what the forward pass returned, without solving
the forward problem again. All these Jacobians with respect to the scores are
symmetric (each mapping is the gradient of a convex function), so the same
function also gives Jacobian-vector products.
"""

from ._capped_simplex import project_capped_simplex
from ._csoftmax import csoftmax, csoftmax_backward
from ._csparsemax import csparsemax, csparsemax_backward
from ._entmax import entmax15, entmax15_backward
from ._fertility import fertility_attention, fertility_attention_backward
from ._fusedmax import fusedmax, fusedmax_backward, oscarmax, oscarmax_backward
from ._prox import prox_oscar, prox_tv1d
from ._pnorm import sq_pnorm_max, sq_pnorm_max_backward
from ._regularized_max import regularized_max, regularizer
from ._softmax import softmax, softmax_backward
from ._sparsemax import project_simplex, sparsemax, sparsemax_backward

__all__ = [
    "project_capped_simplex",
    "csoftmax",
    "csoftmax_backward",
    "csparsemax",
    "csparsemax_backward",
    "fertility_attention",
    "fertility_attention_backward",
    "fusedmax",
    "fusedmax_backward",
    "oscarmax",
    "oscarmax_backward",
    "prox_oscar",
    "prox_tv1d",
    "entmax15",
    "entmax15_backward",
    "softmax",
    "softmax_backward",
    "project_simplex",
    "sparsemax",
    "sparsemax_backward",
    "regularized_max",
    "regularizer",
    "sq_pnorm_max",
    "sq_pnorm_max_backward",
]
