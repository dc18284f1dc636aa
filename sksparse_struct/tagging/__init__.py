"""Sequence tagging: linear-chain taggers trained with structured losses."""

from ._linear_chain import LinearChainCRF
from ._neural_easy_first import NeuralEasyFirstTagger

__all__ = ["LinearChainCRF", "NeuralEasyFirstTagger"]
