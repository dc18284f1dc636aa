"""Argument mining: joint proposition classification and link prediction.

:class:`StructuredSVMArgumentMiner` predicts the type of every proposition of
a document and which propositions support which, jointly, with a structured
SVM over a factor graph with logic constraints (Niculae, Park and Cardie,
ACL 2017). Its input is the output of
:class:`~sksparse_struct.feature_extraction.ArgumentFeatures`.
"""

from ._miner import CDCP_OBJECTIVITY, StructuredSVMArgumentMiner

__all__ = ["CDCP_OBJECTIVITY", "StructuredSVMArgumentMiner"]
