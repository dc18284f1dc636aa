"""The feature-based easy-first tagger (Goldberg & Elhadad, 2010), trained by guided learning."""

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ..learners import minimize_online
from ..metrics import flat_accuracy_score
from ..utils._estimator import StructuredEstimatorMixin, validation_split
from ..utils._reporting import Progress, warn_max_iter
from ..utils._sklearn_compat import Interval, fit_context
from ._input import TokenInputMixin, check_sequence_list
from ._problem import ChainData, EasyFirstProblem, easy_first_decode, frequency_rank

__all__ = ["EasyFirstTagger"]

# The names of the sketch values that are not tags.
_UNDECIDED = "<undecided>"
_OUTSIDE = "<outside>"


def _sketch_feature_names(classes, window):
    """Names of the sketch features, in the row order of ``_easy_first_fast``."""
    values = [str(c) for c in classes] + [_UNDECIDED, _OUTSIDE]
    names = []
    for d in range(1, window + 1):
        names += [f"tag[-{d}]={v}" for v in values]
        names += [f"tag[+{d}]={v}" for v in values]
    pairs = []
    if window >= 1:
        pairs.append("tag[-1]|tag[+1]")
    if window >= 2:
        pairs += ["tag[-2]|tag[-1]", "tag[+1]|tag[+2]"]
    for p in pairs:
        names += [f"{p}={a}|{b}" for a in values for b in values]
    return names


def _rows(offsets, seq_ids):
    """The stacked token rows of the sequences ``seq_ids``."""
    return np.concatenate(
        [np.arange(offsets[s], offsets[s + 1]) for s in seq_ids] + [np.zeros(0, np.int64)]
    )


class EasyFirstTagger(TokenInputMixin, StructuredEstimatorMixin, BaseEstimator):
    """Easy-first tagger: tags the easiest token first, then uses its tag as context.

    Instead of tagging from left to right, the tagger repeatedly picks, among
    the tokens still untagged, the (token, tag) pair with the highest score
    and fixes it (Goldberg & Elhadad, 2010; Martins & Kreutzer, 2017,
    Alg. 1). The score of tag ``y`` at token ``i`` is linear,
    ``w . phi(x, i, y, S)``: the token's features (the same ``X`` as
    :class:`LinearChainCRF` takes) plus *sketch* features of the tags
    already decided within ``window`` tokens (each neighbour's tag,
    "undecided" or "outside the sentence", and pairs of neighbours). After
    a decision only the scores of its neighbours change, so they alone are
    rescored: decoding a sentence of ``L`` tokens costs ``O(L * a * K)`` for
    the token scores (``a`` features per token, ``K`` tags) plus
    ``O(L * window * K + L^2)`` for the easy-first loop.

    Training is guided learning with an averaged perceptron: the decoder
    runs on each training sentence; when the action it chooses has a wrong
    tag, the weights move towards the highest-scoring correct action (an
    untagged token with its gold tag) and away from the chosen one, and the
    correct action is applied before going on. Each sentence is one step of
    the package's online learner
    (:func:`~sksparse_struct.learners.minimize_online`, its perceptron).

    Read more in the :ref:`User Guide <easy_first>`.

    Parameters
    ----------
    max_iter : int, default=10
        Epochs over the training data. Training stops earlier after an
        epoch without mistakes, or as ``tol`` says.
    tol : float or None, default=1e-4
        Stop when ``n_iter_no_change`` epochs in a row fail to bring the
        mistakes per training sequence below the best so far minus ``tol``
        (with ``early_stopping``: the held-out accuracy above the best plus
        ``tol``). A ``ConvergenceWarning`` says when ``max_iter`` ended the
        fit first. None: run ``max_iter`` epochs and do not warn.
    window : int, default=2
        Sketch features look at the tags up to ``window`` tokens left and
        right: the tag at ``i - d`` and at ``i + d`` for ``d = 1 .. window``,
        the pair at ``(i - 1, i + 1)`` when ``window >= 1``, and the pairs at
        ``(i - 2, i - 1)`` and ``(i + 1, i + 2)`` when ``window >= 2``. With
        ``window=0`` every token is tagged from its own features only (the
        order then does not change the tags).
    average : bool, default=True
        Return the average of the weights after each training sentence
        (the averaged perceptron) rather than the last weights.
    all_possible_states : bool, default=False
        If False, a token feature gets a weight only for the tags it was seen
        with in training (as in :class:`LinearChainCRF`); if True for every
        tag.
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the training sentences, keep the
        weights of the epoch with the best token accuracy on them, and stop
        as ``tol`` says.
    validation_fraction : float, default=0.1
        Fraction of the sentences held out with ``early_stopping`` (rounded
        up).
    n_iter_no_change : int, default=3
        Epochs without improvement before stopping (see ``tol``).
    random_state : int, RandomState instance or None, default=None
        Shuffling of the sentences at each epoch, and the held-out split.
    verbose : int, default=0
        If positive, print a progress line every ``verbose`` epochs: its
        mistakes, the held-out accuracy (with ``early_stopping``), the
        epoch's time and the total time (the format is described in the
        :ref:`User Guide <progress>`).
    n_jobs : int, default=None
        Threads used by prediction, over fixed chunks of sentences; ``None``
        means 1, -1 all cores. Training (one update at a time) is
        sequential. Results do not depend on ``n_jobs``.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The tags, sorted (in the order of first appearance if they cannot be
        sorted).
    coef_ : scipy.sparse.csr_matrix of shape (n_classes, n_features)
        Weights of the token features; the stored entries are the model's
        (feature, tag) pairs.
    sketch_coef_ : ndarray of shape (n_sketch_features, n_classes)
        Weights of the sketch features, named by ``sketch_feature_names_``.
    sketch_feature_names_ : list of str
        ``"tag[-1]=NOUN"``, ``"tag[+2]=<undecided>"``,
        ``"tag[-1]|tag[+1]=DET|<outside>"``, ...
    vectorizer_ : SequenceVectorizer or None
        The feature vocabulary, when ``X`` was given as feature dicts.
    n_features_in_ : int
        Number of token features.
    n_iter_ : int
        Epochs run.
    n_mistakes_ : ndarray of shape (``n_iter_``,)
        Updates (wrong actions) made in each epoch.
    validation_scores_ : ndarray of shape (``n_iter_``,) or None
        Held-out token accuracy after each epoch (``early_stopping`` only).

    See Also
    --------
    LinearChainCRF : Globally normalized tagger (Viterbi decoding).
    sksparse_struct.feature_extraction.TokenFeatures : Token feature dicts.

    References
    ----------
    Y. Goldberg and M. Elhadad (2010). An efficient algorithm for easy-first
    non-directional dependency parsing. NAACL.

    A. F. T. Martins and J. Kreutzer (2017). Learning what's easy: fully
    differentiable neural easy-first taggers. EMNLP.

    Examples
    --------
    >>> from sksparse_struct import EasyFirstTagger
    >>> X = [[{"w": "the"}, {"w": "dog"}, {"w": "barks"}], [{"w": "a"}, {"w": "cat"}]]
    >>> y = [["DET", "NOUN", "VERB"], ["DET", "NOUN"]]
    >>> tagger = EasyFirstTagger(random_state=0).fit(X, y)
    >>> tagger.predict([[{"w": "the"}, {"w": "cat"}]])
    [['DET', 'NOUN']]
    >>> tags, order = tagger.predict([[{"w": "a"}, {"w": "dog"}, {"w": "barks"}]],
    ...                              return_order=True)
    >>> tags, sorted(order[0].tolist())
    ([['DET', 'NOUN', 'VERB']], [0, 1, 2])
    """

    _parameter_constraints: dict = {
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [None, Interval(Real, 0, None, closed="left")],
        "window": [Interval(Integral, 0, None, closed="left")],
        "average": ["boolean"],
        "all_possible_states": ["boolean"],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "n_jobs": [None, Integral],
    }

    def __init__(
        self,
        *,
        max_iter=10,
        tol=1e-4,
        window=2,
        average=True,
        all_possible_states=False,
        early_stopping=False,
        validation_fraction=0.1,
        n_iter_no_change=3,
        random_state=None,
        verbose=0,
        n_jobs=None,
    ):
        self.max_iter = max_iter
        self.tol = tol
        self.window = window
        self.average = average
        self.all_possible_states = all_possible_states
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.random_state = random_state
        self.verbose = verbose
        self.n_jobs = n_jobs

    _score_metric = staticmethod(flat_accuracy_score)

    # --- fit ----------------------------------------------------------------

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the tagger by guided learning.

        Parameters
        ----------
        X : list of sequences
            Each a list of feature dicts or a sparse matrix (n_tokens, n_features).
        y : list of label sequences
            ``y[s]`` has one tag per token of ``X[s]``.

        Returns
        -------
        self : EasyFirstTagger
            The fitted tagger.
        """
        X = check_sequence_list(X)
        if len(X) == 0:
            raise ValueError("X is empty: at least one training sequence is needed.")
        matrix, lengths = self._features(X, fit=True)
        gold = self._labels(y, lengths, learn_classes=True)
        self.n_features_in_ = matrix.shape[1]
        self._attr_rank = frequency_rank(matrix)
        data = ChainData(matrix, lengths, gold, self._attr_rank)
        rng = check_random_state(self.random_state)
        train_ids, valid_ids = self._split(data, rng)
        K = len(self.classes_)
        seen = data
        if len(valid_ids):
            # The model's (feature, tag) pairs come from the training
            # sentences only: held-out ones must not decide which weights exist.
            train_rows = _rows(data.offsets, train_ids)
            seen = ChainData(matrix[train_rows], lengths[train_ids], gold[train_rows],
                             self._attr_rank)
            if len(_rows(data.offsets, valid_ids)) == 0:
                raise ValueError(
                    "early_stopping: the held-out sequences have no token; use a larger "
                    "validation_fraction or drop the empty sequences."
                )
        attr_ptr, pair_label = seen.pairs(K, self.all_possible_states)
        problem = EasyFirstProblem(data, attr_ptr, pair_label, K, self.window,
                                   self._n_threads())
        progress = Progress(self, self.verbose, "epoch", self.max_iter)

        def callback(info):
            progress.update(info.epoch, [("mistakes", int(info.stats[0])),
                                         ("val_acc", info.validation_score)])

        result = minimize_online(
            problem, np.zeros(problem.n_params), train_ids, method="perceptron",
            batch_size=1, max_iter=self.max_iter, tol=self.tol,
            n_iter_no_change=self.n_iter_no_change, average=self.average,
            validation_ids=valid_ids if len(valid_ids) else None, random_state=rng,
            callback=callback,
        )
        self.n_iter_ = result.n_epochs
        self.n_mistakes_ = np.array([stats[0] for stats in result.stats], dtype=np.int64)
        self.validation_scores_ = (np.array(result.validation_scores) if self.early_stopping
                                   else None)
        if self.tol is not None and not result.converged:
            rule = ("the held-out accuracy stopped rising" if self.early_stopping else
                    "the mistakes per sequence stopped falling")
            warn_max_iter("EasyFirstTagger", self.max_iter, "epoch",
                          f"an epoch made no mistake or {rule} by more than tol={self.tol} "
                          f"({self.n_iter_no_change} epochs in a row)")
        self._store(result.coef, attr_ptr, pair_label, problem.n_pairs, problem.window)
        return self

    def _split(self, data, rng):
        """Training and held-out sequence ids (all sequences train without early stopping)."""
        ids = np.arange(data.n_sequences, dtype=np.int64)
        if not self.early_stopping:
            return ids, ids[:0]
        return validation_split(ids, self.validation_fraction, rng, "sequences")

    def _store(self, w, attr_ptr, pair_label, n_pairs, window):
        self._params = w
        self._attr_ptr = attr_ptr
        self._pair_label = pair_label
        self._window = window
        K = len(self.classes_)
        order = np.empty_like(self._attr_rank)
        order[self._attr_rank] = np.arange(len(order))
        cols = np.repeat(order, np.diff(attr_ptr))
        self.coef_ = sp.csr_matrix((w[:n_pairs], (pair_label, cols)),
                                   shape=(K, self.n_features_in_))
        self.sketch_coef_ = w[n_pairs:].reshape(-1, K).copy()
        self.sketch_feature_names_ = _sketch_feature_names(self.classes_.tolist(), window)

    # --- prediction ---------------------------------------------------------

    def predict(self, X, return_order=False):
        """Tag each sequence, easiest decisions first.

        Parameters
        ----------
        X : list of sequences
            As in :meth:`fit`. Unseen features are ignored.
        return_order : bool, default=False
            Also return the order in which the positions were decided.

        Returns
        -------
        y_pred : list of lists
            One list of tags per sequence (``[]`` for an empty one).
        order : list of ndarray of int64
            Only with ``return_order``: per sequence, ``order[k]`` is the
            position tagged at step ``k`` (a permutation of
            ``range(len(sequence))``).
        """
        check_is_fitted(self, "classes_")
        matrix, lengths = self._features(X, fit=False)
        data = ChainData(matrix, lengths, attr_rank=self._attr_rank)
        tags, order = easy_first_decode(data.chains(self._attr_ptr, self._pair_label),
                                        self._params, int(self._attr_ptr[-1]),
                                        len(self.classes_), self._window, data,
                                        self._n_threads())
        flat = self.classes_[tags].tolist()
        offsets = data.offsets
        bounds = offsets.tolist()
        y_pred = [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        if not return_order:
            return y_pred
        return y_pred, [order[offsets[s]:offsets[s + 1]].copy() for s in range(len(lengths))]
