"""The structured losses: their names and their codes in the kernels.

The one definition of the five structured losses (Niculae 2018, ch. 6) for
the whole package: the estimators validate their ``loss`` parameter against
``STRUCTURED_LOSSES`` and the compiled loss kernels (``_sequence_fast``,
``_tree_fast``) branch on the integer codes. Everything that solves
SparseMAP inside a loss takes a ``SparseMAPOptions`` and defaults to
``SPARSEMAP_OPTIONS``: both are inference's (``inference._sparsemap_fast``),
the same settings and defaults as :func:`~sksparse_struct.inference.sparsemap`,
and are re-exported here for the code that imported them from the losses.

A ``_fast`` module although it holds no kernel: numba bakes module-level
integers into the machine code of the kernels that read them, and the
stale-cache guard (``utils/_numba.py``) only watches ``_*_fast.py`` files,
so a change here must invalidate the caches of those kernels.
"""

from ..inference._sparsemap_fast import SPARSEMAP_OPTIONS, SparseMAPOptions

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

