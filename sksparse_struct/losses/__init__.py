"""Fenchel-Young losses.

``fenchel_young_loss`` gives the loss values and their gradients with respect
to the scores for multiclass classification (softmax / multinomial logistic,
sparsemax, 1.5-entmax, perceptron and Crammer-Singer hinge losses);
``fenchel_young_predict_proba`` gives the matching prediction.
"""

from ._classification import (
    LOSS_NAMES,
    SMOOTH_LOSS_NAMES,
    fenchel_young_loss,
    fenchel_young_predict_proba,
)

__all__ = [
    "LOSS_NAMES",
    "SMOOTH_LOSS_NAMES",
    "fenchel_young_loss",
    "fenchel_young_predict_proba",
]
