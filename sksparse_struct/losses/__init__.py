"""Losses: Fenchel-Young losses for classification, structured losses.

``fenchel_young_loss`` gives the loss values and their gradients with respect
to the scores for multiclass classification (softmax / multinomial logistic,
sparsemax, 1.5-entmax, perceptron and Crammer-Singer hinge losses);
``fenchel_young_predict_proba`` gives the matching prediction.

``structured_loss`` gives the value and the gradients of one structured loss
(CRF, perceptron, hinge, SparseMAP and margin SparseMAP, named in
``STRUCTURED_LOSSES``) for any :class:`~sksparse_struct.structures.Structure`,
through its MAP oracle, marginals or SparseMAP; ``SparseMAPOptions`` holds the
settings of the SparseMAP solver it runs (the class of
:mod:`sksparse_struct.inference`, re-exported here).

``factor_graph_loss`` gives the hinge, perceptron, SparseMAP and margin
SparseMAP losses over a :class:`~sksparse_struct.inference.FactorGraph`
(``FACTOR_GRAPH_LOSSES``), through LP-MAP (AD3) and LP-SparseMAP.
"""

from ._classification import (
    LOSS_NAMES,
    SMOOTH_LOSS_NAMES,
    fenchel_young_loss,
    fenchel_young_predict_proba,
)
from ._factor_graph import FACTOR_GRAPH_LOSSES, FactorGraphLoss, factor_graph_loss
from ._kinds_fast import STRUCTURED_LOSSES, SparseMAPOptions
from ._structured import structured_loss

__all__ = [
    "FACTOR_GRAPH_LOSSES",
    "FactorGraphLoss",
    "LOSS_NAMES",
    "SMOOTH_LOSS_NAMES",
    "STRUCTURED_LOSSES",
    "SparseMAPOptions",
    "factor_graph_loss",
    "fenchel_young_loss",
    "fenchel_young_predict_proba",
    "structured_loss",
]
