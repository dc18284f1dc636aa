"""sksparse_struct: sparse and structured prediction for NLP, scikit-learn style.

Subpackages
-----------
mappings
    Probability mappings onto the simplex (softmax, sparsemax, entmax15,
    csoftmax, csparsemax, fusedmax, oscarmax, sq_pnorm_max) with their
    backward passes, and the projections and proxes they are built from.
losses
    Fenchel-Young losses.
linear_model
    ``FenchelYoungClassifier``: linear classifiers trained with them.
datasets
    Bundled sample data and loaders.
"""

from . import datasets, losses, mappings
from ._version import __version__
from .linear_model import FenchelYoungClassifier

__all__ = ["__version__", "FenchelYoungClassifier"]
