"""Sequence tagging: linear-chain taggers trained with structured losses, easy-first taggers,
ColumnTagger, which writes a tagger's predictions into token columns, and
TagParsePipeline, which chains it with a parser trained on predicted and gold tags."""

from ._column_tagger import ColumnTagger
from ._easy_first import EasyFirstTagger
from ._linear_chain import LinearChainCRF
from ._neural_easy_first import NeuralEasyFirstTagger
from ._tag_parse_pipeline import TagParsePipeline

__all__ = ["ColumnTagger", "EasyFirstTagger", "LinearChainCRF", "NeuralEasyFirstTagger",
           "TagParsePipeline"]
