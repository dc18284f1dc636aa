"""Metrics for sequence labelling, dependency parsing and argument mining, and their scorers.

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

For dependency parsing, heads are given per sentence (0 for the root, else
the 1-based index of the head word):

- Attachment scores as the CoNLL 2018 evaluation computes them:
  :func:`uas_score`, :func:`las_score`, :func:`exact_match_score`,
  :func:`attachment_report`, punctuation included unless
  ``exclude_punct=True``.
- Scorers: ``uas_scorer``, ``las_scorer``, ``exact_match_scorer`` and
  :func:`make_attachment_scorer` for other settings.

For argument mining, a target is ``(labels, links)`` per document (the
output of :func:`sksparse_struct.datasets.read_cdcp` and of an argument
miner's ``predict``): one label per proposition and a list of
``(source, target)`` proposition-index pairs. Scores are pooled over the
documents:

- :func:`link_f1_score` (F1 of the links among all ordered pairs of
  distinct propositions), :func:`proposition_f1_score` (macro-F1 of the
  proposition labels by default, per class with ``average=None``), their
  mean :func:`argument_f1_score`, and
  :func:`argument_classification_report`.
- Scorers: ``link_f1_scorer``, ``proposition_f1_scorer``,
  ``argument_f1_scorer``.
"""

from ._argument import (
    argument_classification_report,
    argument_f1_score,
    argument_f1_scorer,
    link_f1_score,
    link_f1_scorer,
    proposition_f1_score,
    proposition_f1_scorer,
)
from ._parsing import (
    attachment_report,
    exact_match_score,
    exact_match_scorer,
    las_score,
    las_scorer,
    make_attachment_scorer,
    uas_score,
    uas_scorer,
)
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
    "argument_classification_report",
    "argument_f1_score",
    "argument_f1_scorer",
    "attachment_report",
    "chunk_classification_report",
    "chunk_f1_score",
    "chunk_f1_scorer",
    "chunk_precision_recall_fscore_support",
    "exact_match_score",
    "exact_match_scorer",
    "flat_accuracy_score",
    "flat_accuracy_scorer",
    "flat_classification_report",
    "las_score",
    "las_scorer",
    "link_f1_score",
    "link_f1_scorer",
    "make_attachment_scorer",
    "proposition_f1_score",
    "proposition_f1_scorer",
    "sequence_accuracy_score",
    "sequence_accuracy_scorer",
    "uas_score",
    "uas_scorer",
]
