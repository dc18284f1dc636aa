"""Structured inference over any :class:`~sksparse_struct.structures.Structure`."""

from ._sparsemap import (
    SparseMAPResult,
    sparsemap,
    sparsemap_backward,
    sparsemap_distribution_backward,
    sparsemap_parts,
)

__all__ = [
    "SparseMAPResult",
    "sparsemap",
    "sparsemap_backward",
    "sparsemap_distribution_backward",
    "sparsemap_parts",
]
