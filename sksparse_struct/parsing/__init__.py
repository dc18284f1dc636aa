"""Dependency parsing.

:class:`SparseMAPParser` is a first-order (arc-factored) dependency parser over
hashed arc features, trained with the SparseMAP, margin-SparseMAP, CRF,
structured hinge or perceptron loss, with projective (Eisner) or
non-projective (Chu-Liu-Edmonds) decoding and an optional relation labeller.
"""

from ._parser import SparseMAPParser

__all__ = ["SparseMAPParser"]
