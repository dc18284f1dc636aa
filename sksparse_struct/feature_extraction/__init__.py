"""Feature extraction for sequence models, as scikit-learn transformers.

:class:`TokenFeatures` turns sequences of tokens (words, or tuples / dicts of
columns such as word and part of speech) into sequences of feature dicts;
:class:`SequenceVectorizer` turns sequences of feature dicts into one sparse
matrix per sequence; :class:`ArcFeatures` encodes sentences for the
dependency parser's hashed arc features. Neither knows which model consumes its output, so they
chain in a :class:`~sklearn.pipeline.Pipeline`.
"""

from ._arc_features import ARC_PRESETS, ArcFeatures, EncodedSentence
from ._token_features import CONLL2000_TEMPLATES, TokenFeatures
from ._vectorizer import SequenceVectorizer

__all__ = [
    "ARC_PRESETS",
    "ArcFeatures",
    "CONLL2000_TEMPLATES",
    "EncodedSentence",
    "SequenceVectorizer",
    "TokenFeatures",
]
