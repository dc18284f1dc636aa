"""Structured inference: SparseMAP over any :class:`~sksparse_struct.structures.Structure`,
and LP-MAP / exact MAP inference over factor graphs (AD3, branch-and-bound, HiGHS)."""

from ._ad3 import AD3Result, MAPResult, ad3, ad3_map
from ._factor_graph import FactorGraph
from ._highs import highs_lp, milp_map
from ._sparsemap import (
    SparseMAPResult,
    sparsemap,
    sparsemap_backward,
    sparsemap_distribution_backward,
    sparsemap_parts,
)

__all__ = [
    "AD3Result",
    "FactorGraph",
    "MAPResult",
    "SparseMAPResult",
    "ad3",
    "ad3_map",
    "highs_lp",
    "milp_map",
    "sparsemap",
    "sparsemap_backward",
    "sparsemap_distribution_backward",
    "sparsemap_parts",
]
