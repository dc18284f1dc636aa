"""Metrics for sequence labelling and their scikit-learn scorers.

``y_true`` and ``y_pred`` are lists of label sequences, one per sentence
(the output of a tagger's ``predict``).

- Chunk scores exactly as the CoNLL ``conlleval`` script computes them
  (IOB1, IOB2/BIO, IOE and IOBES labels): :func:`chunk_f1_score`,
  :func:`chunk_precision_recall_fscore_support`,
  :func:`chunk_classification_report`.
- Token and whole-sequence accuracy: :func:`flat_accuracy_score`,
  :func:`sequence_accuracy_score`, and :func:`flat_classification_report`
  (scikit-learn's report on the flattened labels).
- Scorers for ``GridSearchCV(scoring=...)`` and ``cross_val_score``:
  ``chunk_f1_scorer``, ``flat_accuracy_scorer``, ``sequence_accuracy_scorer``.
"""

from ._sequence import (
    chunk_classification_report,
    chunk_f1_score,
    chunk_f1_scorer,
    chunk_precision_recall_fscore_support,
    flat_accuracy_score,
    flat_accuracy_scorer,
    flat_classification_report,
    sequence_accuracy_score,
    sequence_accuracy_scorer,
)

__all__ = [
    "chunk_classification_report",
    "chunk_f1_score",
    "chunk_f1_scorer",
    "chunk_precision_recall_fscore_support",
    "flat_accuracy_score",
    "flat_accuracy_scorer",
    "flat_classification_report",
    "sequence_accuracy_score",
    "sequence_accuracy_scorer",
]
