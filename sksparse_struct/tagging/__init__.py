"""Sequence tagging: linear-chain taggers trained with structured losses, easy-first taggers,
and ColumnTagger, which writes a tagger's predictions into token columns."""

from ._column_tagger import ColumnTagger
from ._easy_first import EasyFirstTagger
from ._linear_chain import LinearChainCRF
from ._neural_easy_first import NeuralEasyFirstTagger

__all__ = ["ColumnTagger", "EasyFirstTagger", "LinearChainCRF", "NeuralEasyFirstTagger"]
