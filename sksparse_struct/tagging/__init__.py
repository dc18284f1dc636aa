"""Sequence tagging: linear-chain taggers trained with structured losses, easy-first taggers."""

from ._easy_first import EasyFirstTagger
from ._linear_chain import LinearChainCRF
from ._neural_easy_first import NeuralEasyFirstTagger

__all__ = ["EasyFirstTagger", "LinearChainCRF", "NeuralEasyFirstTagger"]
