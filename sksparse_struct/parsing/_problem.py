"""The parser's training problem: encoded sentences, their trees, decoding.

Kept apart from the estimator so that the learner only sees the online
problem interface (``learners._online``) and the estimator only deals with
validation and scikit-learn glue.
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..feature_extraction._arc_features_fast import N_COLUMNS
from ..metrics import uas_score
from . import _parser_fast as fast
from ._parser_fast import Treebank

# Sentences per chunk when decoding on threads.
_DECODE_CHUNK = 64


def stack_sentences(encoded):
    """The :class:`Treebank` of encoded sentences (no trees yet) and their lengths."""
    lengths = np.array([len(s) for s in encoded], dtype=np.int64)
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(lengths + 1, out=offsets[1:])
    if encoded:
        tokens = np.ascontiguousarray(np.concatenate([s.tokens for s in encoded]))
    else:
        tokens = np.zeros((0, N_COLUMNS), dtype=np.int64)
    none = np.zeros(0, dtype=np.int64)
    return Treebank(tokens, offsets, none, none), lengths


def decode(treebank, model, w, ids, n_threads=1):
    """MAP heads and relation-label indices of the sentences ``ids``.

    Returns ``(heads, labels)``, each a list of int64 arrays (one per
    sentence, root excluded); ``labels`` is None when the model has none.
    """
    offsets = treebank.offsets
    heads = np.zeros(offsets[-1], dtype=np.int64)
    labels = np.zeros(offsets[-1], dtype=np.int64)
    ids = np.asarray(ids, dtype=np.int64)
    chunks = [np.ascontiguousarray(ids[i:i + _DECODE_CHUNK])
              for i in range(0, ids.shape[0], _DECODE_CHUNK)]

    kernel = fast.decode_kernel(model.projective)

    def run(chunk):
        return kernel(treebank, model, chunk, w, heads, labels)

    if n_threads > 1 and len(chunks) > 1:
        with ThreadPoolExecutor(n_threads) as pool:
            results = list(pool.map(run, chunks))
    else:
        results = [run(c) for c in chunks]
    for bad in results:
        if bad >= 0:  # only with non-finite weights
            raise ValueError(f"no tree has a finite score for sentence {bad}.")
    out_heads = [heads[offsets[s] + 1:offsets[s + 1]].copy() for s in ids]
    out_labels = None
    if model.n_labels:
        out_labels = [labels[offsets[s] + 1:offsets[s + 1]].copy() for s in ids]
    return out_heads, out_labels


class ParsingProblem:
    """The online problem (``learners._online``) of training a parser.

    Parameters
    ----------
    treebank : Treebank
        The sentences with their training trees (``heads`` lifted to
        projective ones for a projective parser) and label indices.
    lengths : ndarray of int64
        Words per sentence.
    gold_heads : ndarray of int64
        The original gold heads, stacked like ``treebank.heads``: what
        :meth:`score` compares with.
    model : ArcModel
        Features, labels, filter and tree kind.
    options : TrainingOptions
        Loss and its settings.
    n_params : int
        Size of the weight vector (the hashed feature space).
    n_threads : int
        Threads used by :meth:`score`.
    """

    def __init__(self, treebank, lengths, gold_heads, model, options, n_params, n_threads=1):
        self.treebank = treebank
        self.lengths = lengths
        self.gold_heads = gold_heads
        self.model = model
        self.options = options
        self.n_params = n_params
        self.n_threads = n_threads

    def sample_costs(self):
        # Scoring, the bulk of the work, is one pass over the (n + 1)^2 arcs.
        return (self.lengths + 1.0) ** 2

    def batch_gradient(self, w, sample_ids, gradient, part, step):
        """Push the part's gradient; statistics: parsing loss, label loss, failed solves."""
        losses = np.zeros(sample_ids.shape[0])
        label_losses = np.zeros(sample_ids.shape[0])
        train = fast.train_kernel(self.options.kind, self.model.projective)
        not_converged = train(self.treebank, self.model, self.options, sample_ids, w, gradient,
                              part, step, losses, label_losses)
        return np.array([losses.sum(), label_losses.sum(), not_converged])

    def score(self, w, sample_ids):
        """UAS of the weights ``w`` on the sentences ``sample_ids``."""
        heads, _ = decode(self.treebank, self.model, w, sample_ids, self.n_threads)
        offsets = self.treebank.offsets
        true = [self.gold_heads[offsets[s] + 1:offsets[s + 1]] for s in sample_ids]
        return uas_score(true, heads)
