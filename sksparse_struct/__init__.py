"""sksparse_struct: sparse and structured prediction for NLP, scikit-learn style.

Subpackages
-----------
mappings
    Probability mappings onto the simplex (softmax, sparsemax, entmax15,
    csoftmax, csparsemax, fusedmax, oscarmax, sq_pnorm_max) with their
    backward passes, and the projections and proxes they are built from.
losses
    Fenchel-Young losses.
linear_model
    ``FenchelYoungClassifier``: linear classifiers trained with them.
datasets
    CoNLL and CoNLL-U readers (``read_conll``), bundled sample data and loaders.
feature_extraction
    ``TokenFeatures`` (tokens to feature dicts, with the CRFsuite CoNLL-2000
    template as a preset) and ``SequenceVectorizer`` (feature dicts to
    per-sequence sparse matrices).
metrics
    Sequence-labelling metrics (conlleval chunk F1, token and sequence
    accuracy) and their scorers.
tagging
    ``LinearChainCRF``: sequence taggers trained with CRF, structured SVM,
    perceptron and SparseMAP losses; ``EasyFirstTagger``: easy-first
    tagging trained by guided learning; ``NeuralEasyFirstTagger``: BiLSTM
    taggers with easy-first sketch steps and constrained attention;
    ``ColumnTagger``: predicted UPOS / XPOS (or other) tags as token
    columns, jackknifed in training, to parse text without gold tags;
    ``TagParsePipeline``: a ColumnTagger and a parser trained on its
    predicted tags and on the gold ones.
argument_mining
    ``StructuredSVMArgumentMiner``: joint proposition types and support
    links of documents, a structured SVM over factor graphs;
    ``SparseMAPArgumentMiner``: the same model trained with LP-SparseMAP.
parsing
    ``SparseMAPParser``: first- and second-order dependency parsers
    trained with SparseMAP, CRF, structured SVM and perceptron losses.

``save_model`` and ``load_model`` keep a fitted model in a file with a
record of what it is, which the ``sksparse-struct`` command (``train``,
``predict``, ``evaluate``, ``info``) writes and reads.
"""

from . import datasets, feature_extraction, losses, mappings, metrics
from ._model_io import load_model, save_model
from ._version import __version__
from .argument_mining import SparseMAPArgumentMiner, StructuredSVMArgumentMiner
from .linear_model import FenchelYoungClassifier
from .parsing import SparseMAPParser
from .tagging import (ColumnTagger, EasyFirstTagger, LinearChainCRF, NeuralEasyFirstTagger,
                      TagParsePipeline)

__all__ = [
    "__version__",
    "ColumnTagger",
    "EasyFirstTagger",
    "FenchelYoungClassifier",
    "LinearChainCRF",
    "NeuralEasyFirstTagger",
    "SparseMAPArgumentMiner",
    "SparseMAPParser",
    "StructuredSVMArgumentMiner",
    "TagParsePipeline",
    "load_model",
    "save_model",
]
