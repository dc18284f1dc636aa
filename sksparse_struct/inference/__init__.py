"""Structured inference: SparseMAP over any :class:`~sksparse_struct.structures.Structure`,
LP-MAP / exact MAP inference over factor graphs (AD3, branch-and-bound, HiGHS), and
LP-SparseMAP over factor graphs (with its backward pass)."""

from ._ad3 import AD3Result, MAPResult, ad3, ad3_map
from ._factor_graph import FactorGraph
from ._highs import highs_lp, milp_map
from ._lp_sparsemap import (
    LPSparseMAPResult,
    lp_sparsemap,
    lp_sparsemap_backward,
    lp_sparsemap_jvp,
)
from ._sparsemap import (
    SparseMAPOptions,
    SparseMAPResult,
    sparsemap,
    sparsemap_backward,
    sparsemap_distribution_backward,
    sparsemap_parts,
)

__all__ = [
    "AD3Result",
    "FactorGraph",
    "LPSparseMAPResult",
    "MAPResult",
    "SparseMAPOptions",
    "SparseMAPResult",
    "ad3",
    "ad3_map",
    "highs_lp",
    "lp_sparsemap",
    "lp_sparsemap_backward",
    "lp_sparsemap_jvp",
    "milp_map",
    "sparsemap",
    "sparsemap_backward",
    "sparsemap_distribution_backward",
    "sparsemap_parts",
]
