"""Feature extraction for sequence models, as scikit-learn transformers.

:class:`TokenFeatures` turns sequences of tokens (words, or tuples / dicts of
columns such as word and part of speech) into sequences of feature dicts, or
with ``output="matrix"`` straight into a :class:`StackedSequences` (the
sparse matrix of every token, also the list of per-sequence matrices);
:class:`SequenceVectorizer` turns sequences of feature dicts into one sparse
matrix per sequence; :class:`ArcFeatures` encodes sentences for the
dependency parser's hashed arc features; :class:`ArgumentFeatures` turns
documents with argumentative propositions into proposition, link and factor
features (:class:`DocumentFeatures`). None knows which model consumes its
output, so they chain in a :class:`~sklearn.pipeline.Pipeline`.
"""

from ._arc_features import ARC_PRESETS, ArcFeatures, EncodedSentence
from ._argument_features import ArgumentFeatures, DocumentFeatures
from ._argument_lexicon import ARGUMENT_MARKERS
from ._stacked import StackedSequences
from ._token_features import CONLL2000_TEMPLATES, TokenFeatures
from ._vectorizer import SequenceVectorizer

__all__ = [
    "ARC_PRESETS",
    "ARGUMENT_MARKERS",
    "CONLL2000_TEMPLATES",
    "ArcFeatures",
    "ArgumentFeatures",
    "DocumentFeatures",
    "EncodedSentence",
    "SequenceVectorizer",
    "StackedSequences",
    "TokenFeatures",
]
