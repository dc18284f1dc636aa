"""Sequence tagging: linear-chain taggers trained with structured losses."""

from ._linear_chain import LinearChainCRF

__all__ = ["LinearChainCRF"]
