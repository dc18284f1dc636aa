"""Argument mining: joint proposition classification and link prediction.

:class:`StructuredSVMArgumentMiner` predicts the type of every proposition of
a document and which propositions support which, jointly, with a structured
SVM over a factor graph with logic constraints (Niculae, Park and Cardie,
ACL 2017). :class:`SparseMAPArgumentMiner` is the same model trained with a
SparseMAP loss over the factor graphs (LP-SparseMAP, Niculae and Martins,
ICML 2020). Their input is the output of
:class:`~sksparse_struct.feature_extraction.ArgumentFeatures`.
"""

from ._miner import CDCP_OBJECTIVITY, StructuredSVMArgumentMiner
from ._sparsemap_miner import SparseMAPArgumentMiner

__all__ = ["CDCP_OBJECTIVITY", "SparseMAPArgumentMiner", "StructuredSVMArgumentMiner"]
