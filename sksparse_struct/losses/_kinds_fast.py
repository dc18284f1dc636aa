"""The structured losses: their names, their codes in the kernels, SparseMAP's settings.

The one definition of the five structured losses (Niculae 2018, ch. 6) for
the whole package: the estimators validate their ``loss`` parameter against
``STRUCTURED_LOSSES``, the compiled loss kernels (``_sequence_fast``,
``_tree_fast``) branch on the integer codes, and everything that solves
SparseMAP inside a loss uses ``SPARSEMAP_OPTIONS``.

A ``_fast`` module although it holds no kernel: numba bakes module-level
integers into the machine code of the kernels that read them, and the
stale-cache guard (``utils/_numba.py``) only watches ``_*_fast.py`` files,
so a change here must invalidate the caches of those kernels.
"""

from typing import NamedTuple

__all__ = [
    "CRF",
    "HINGE",
    "PERCEPTRON",
    "SPARSEMAP",
    "MARGIN_SPARSEMAP",
    "LOSS_KINDS",
    "STRUCTURED_LOSSES",
    "COST_AUGMENTED_LOSSES",
    "SparseMAPOptions",
    "SPARSEMAP_OPTIONS",
]

CRF = 0
HINGE = 1
PERCEPTRON = 2
SPARSEMAP = 3
MARGIN_SPARSEMAP = 4

#: Loss name -> kernel code.
LOSS_KINDS = {
    "crf": CRF,
    "hinge": HINGE,
    "perceptron": PERCEPTRON,
    "sparsemap": SPARSEMAP,
    "margin_sparsemap": MARGIN_SPARSEMAP,
}
#: The loss names, in the order of their codes.
STRUCTURED_LOSSES = tuple(LOSS_KINDS)
#: The losses that add a cost to the scores of the structures other than the gold one.
COST_AUGMENTED_LOSSES = ("hinge", "margin_sparsemap")


class SparseMAPOptions(NamedTuple):
    """Settings of the active-set solver that SparseMAP losses run per instance.

    Attributes
    ----------
    max_iter : int
        Active-set iterations (each a relaxed QP solve and an oracle call).
    tol : float
        Relative duality-gap tolerance.
    dependent_tol : float
        Squared distance (relative) under which a new structure counts as an
        affine combination of the support in the KKT updates.
    """

    max_iter: int = 200
    tol: float = 1e-9
    dependent_tol: float = 1e-12


#: What the estimators' SparseMAP losses (and their ``predict_sparse``) use.
SPARSEMAP_OPTIONS = SparseMAPOptions()
