"""Dependency parsing, first and second order, with SparseMAP, CRF, hinge or perceptron losses."""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ..feature_extraction import ARC_PRESETS, ArcFeatures, EncodedSentence
from ..inference import sparsemap
from ..learners import minimize_online
from ..inference._sparsemap_fast import SPARSEMAP_OPTIONS
from ..feature_extraction._part_features_fast import TAGS_BOTH
from ..losses._kinds_fast import CRF, LOSS_KINDS, PERCEPTRON, STRUCTURED_LOSSES
from ..metrics import uas_score
from ..structures import DependencyTree
from ..structures._tree_fast import lift_to_projective
from ..utils import as_heads, first_bad_tree, is_labelled_pair, tree_error
from ..utils._estimator import StructuredEstimatorMixin, validation_split
from ..utils._reporting import Progress, warn, warn_max_iter
from ..utils._sklearn_compat import Interval, StrOptions, fit_context
from ..utils._validation import check_integer
from . import _arc_filter_fast
from ._parser_fast import ArcModel, TrainingOptions, score_sentence
from ._problem import ParsingProblem, decode, stack_sentences
from ._pruning import pruning_report
from ._second_order import BRANCH_AND_BOUND, CERTIFIED, ROUNDED
from ._second_order_problem import (
    SecondOrderOptions,
    SecondOrderProblem,
    candidate_graphs,
    decode_second_order,
    sparse_second_order,
)

__all__ = ["SparseMAPParser"]

# A mini-batch is cut into this many parts, each with its own gradient
# buffer, merged in order: results do not depend on the number of threads.
_BATCH_PARTS = 2
# The parts a parser may score: arcs always, siblings and grandparents for a
# second-order parser.
PARTS = ("arc", "sibling", "grandparent")
# The token fields ArcFeatures reads besides the form.
_TOKEN_FIELDS = ("lemma", "upos", "xpos", "feats")


def _given_fields(X):
    """The fields of ``_TOKEN_FIELDS`` that some token of ``X`` gives.

    A field is given by a value other than ``None``, ``""`` or ``"_"``;
    FEATS by any value but ``None`` (``"_"`` included: many sentences have
    no features at all). ``None`` when ``X`` is already encoded.
    """
    given = set()
    for sentence in X:
        if isinstance(sentence, EncodedSentence):
            return None
        for token in sentence:
            if isinstance(token, dict):
                for name in _TOKEN_FIELDS:
                    value = token.get(name)
                    if value is not None and (name == "feats" or value not in ("", "_")):
                        given.add(name)
            elif isinstance(token, tuple) and len(token) == 2 and token[1] not in ("", "_"):
                given.add("upos")
        if len(given) == len(_TOKEN_FIELDS):
            break
    return tuple(name for name in _TOKEN_FIELDS if name in given)


def _uas_of_trees(y, heads):
    """UAS of predicted ``heads`` against gold head sequences or (heads, deprels) pairs."""
    y = list(y)
    if y and all(is_labelled_pair(item) for item in y):
        y = [item[0] for item in y]
    return uas_score(y, heads)


class SparseMAPParser(StructuredEstimatorMixin, BaseEstimator):
    """Dependency parser with SparseMAP, CRF, hinge or perceptron losses.

    Every arc ``h -> m`` gets a linear score ``w . f(x, h, m)`` over hashed
    arc features (:class:`~sksparse_struct.feature_extraction.ArcFeatures`);
    a parse is the best tree under these scores, by the Chu-Liu-Edmonds
    algorithm (non-projective) or Eisner's (``projective=True``). The losses
    are those of Niculae (2018, ch. 6, Defs. 6.1-6.3), all functions of the
    arc scores whose gradient is pushed through the features:

    ``"sparsemap"``
        ``max_mu <s, mu> - ||mu||^2 / 2 - <s, y> + ||y||^2 / 2`` over the
        arc marginal polytope, solved by the active set (its gradient is
        ``mu* - y``, nonzero on the few trees of the support).
    ``"margin_sparsemap"``
        The same with the Hamming cost (one per wrong head) added to the
        scores inside the maximization.
    ``"crf"``
        ``log Z - <s, y>``, with marginals from the matrix-tree theorem or
        inside-outside.
    ``"hinge"``
        Structured SVM: cost-augmented MAP with Hamming cost on heads.
    ``"perceptron"``
        Averaged structured perceptron.

    Training runs ``max_iter`` epochs of mini-batch AdaGrad (perceptron
    updates for ``"perceptron"``) over shuffled sentences and returns the
    average of the weights over all updates. When ``y`` holds relation
    labels, a multiclass linear model on features of each gold arc
    (multiclass hinge, trained alongside in the same updates) labels the
    predicted arcs; as in Universal Dependencies, a word attached to the
    root is labelled ``root`` (when that label was seen) and no other word
    is.

    Parameters
    ----------
    loss : {"sparsemap", "margin_sparsemap", "crf", "hinge", "perceptron"}, default="sparsemap"
        Training loss.
    projective : bool, default=False
        Whether parses are projective (Eisner) or not (Chu-Liu-Edmonds).
    single_root : bool, default=True
        Whether exactly one word is attached to the root (Universal
        Dependencies' rule). Gold trees must obey it.
    features : {"rich", "mst"} or ArcFeatures, default="rich"
        How raw sentences are encoded: a preset of
        :class:`~sksparse_struct.feature_extraction.ArcFeatures` (with its
        default ``n_features``) or an instance. Ignored for sentences
        already encoded by an ``ArcFeatures`` (e.g. earlier in a
        ``Pipeline``), whose settings are used.
    alpha : float, default=1e-3
        L2 regularization: the objective is the mean loss plus
        ``alpha / 2 ||w||^2``. Applied lazily per weight (exactly, see
        Notes). Ignored by the perceptron. The default was chosen on UD
        English-EWT (see the benchmarks page of the documentation).
    learning_rate : float, default=0.1
        AdaGrad's step size (not used by the perceptron).
    batch_size : int, default=16
        Sentences per update.
    arc_filter : {None, "tags"}, default=None
        Candidate arcs. None: every ``h -> m``. ``"tags"``: only the arcs
        whose head UPOS, modifier UPOS, direction and distance bin (1, 2, 3,
        4, 5, 6-10, > 10) occur among the training trees' arcs, plus every
        arc from the root or between neighbours (so a tree always exists);
        the others score ``-inf`` and their features are never computed.
        Scoring the candidate arcs is most of the cost of training and
        parsing, and on a treebank of thousands of sentences the filter
        drops a large share of them while keeping nearly every gold arc
        (figures in the parsing guide). Needs a large enough training set
        (with a few hundred sentences, rare tag pairs are missing).
    min_arc_gradient : float, default=1e-2
        Gradient entries (with respect to the arc scores) smaller than this
        in absolute value are sparsified without bias: each becomes
        ``+-min_arc_gradient`` with probability ``|entry| /
        min_arc_gradient`` and 0 otherwise, drawn from ``random_state``
        (the same draws for every ``n_jobs``). Only the CRF and SparseMAP
        losses have such entries (the CRF's marginals are dense but mostly
        tiny): pushing each arc's features costs as much as scoring it, and
        this leaves most of them out while the expected update stays the
        exact gradient. The loss itself is always exact. 0 pushes the
        exact gradient.
    max_iter : int, default=10
        Epochs.
    tol : float or None, default=1e-4
        Stop when the mean training loss of ``n_iter_no_change`` successive
        epochs fails to fall below the best one minus ``tol`` (with
        ``early_stopping``: when the validation UAS fails to rise above the
        best plus ``tol``). A ``ConvergenceWarning`` says when ``max_iter``
        ended the fit first. None: run ``max_iter`` epochs, without the
        warning.
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the sentences, measure UAS on
        them after every epoch, stop as ``tol`` says and keep the weights of
        the best epoch.
    validation_fraction : float, default=0.1
        Fraction held out when ``early_stopping``.
    n_iter_no_change : int, default=3
        Epochs without improvement before stopping.
    sparsemap_max_iter : int or None, default=None
        Iterations of the active-set solver of SparseMAP, per sentence: in
        training with the SparseMAP losses (a ``ConvergenceWarning`` says how
        many solves reached it; see ``n_sparsemap_not_converged_``), and in
        :meth:`predict_sparse` and :meth:`predict_marginals`. None: the
        default of :class:`~sksparse_struct.inference.SparseMAPOptions`, in
        training as in prediction, ``max(1000, 10 n)`` for a sentence of
        ``n`` words (the support of a long sentence can hold hundreds of
        trees, and each iteration adds at most one).
    parts : tuple of str, default=("arc",)
        The parts scored: ``("arc",)``, a first-order parser; ``("arc",
        "sibling", "grandparent")``, the second-order "standard" model
        (consecutive siblings and grandparents, Martins et al. 2013), or
        one of the two second-order kinds with the arcs. A second-order
        parser prunes the candidate arcs with a first-order CRF parser,
        decodes each sentence's factor graph (a tree factor and head
        automata; for projective sibling-only parsers, one exact
        second-order Eisner factor) with AD3 and trains with the
        relaxation (LP-MAP for the
        hinge and the perceptron, LP-SparseMAP for the SparseMAP losses;
        not ``"crf"``). See the :ref:`User Guide <second-order-parsing>`.
    pruner_max_heads : int, default=10
        Second order: candidate heads kept per word by the pruner.
    pruner_threshold : float, default=1e-4
        Second order: a head is kept only if its posterior under the pruner
        is at least this fraction of the word's best head's.
    pruner_max_iter : int, default=5
        Second order: epochs of the pruner's training.
    lp_max_iter : int, default=500
        Second order: AD3 iterations per sentence, in training and in
        decoding.
    lp_tol : float, default=1e-4
        Second order: AD3's tolerance on its residuals.
    max_bb_nodes : int, default=4
        Second order, decoding: branch-and-bound nodes (LP solves, the
        first one already done) spent on a sentence whose relaxed tree is
        not certified optimal. ``0`` keeps the rounded tree at once
        (TurboParser's decoding); a large value decodes exactly, at a cost
        that grows with the number of fractional arcs.
    warm_start : bool, default=False
        Start from the weights of the previous fit (same features and
        labels required); the AdaGrad state starts afresh.
    random_state : int, RandomState or None, default=None
        Shuffling of the sentences and the validation split.
    verbose : int, default=0
        If positive, print a progress line every ``verbose`` epochs: the mean
        loss, the label loss, the validation UAS, the epoch's time and the
        total time (the format is described in the :ref:`User Guide
        <progress>`).
    n_jobs : int or None, default=None
        Threads (at most two parts of every mini-batch are processed in
        parallel; prediction in chunks). Results are identical for any value.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Averaged weights of the arc features (and of the label features).
    classes_ : ndarray of str or None
        Relation labels learnt (None when ``y`` held heads only).
    preset_ : str
        Feature templates used.
    n_features_ : int
        Size of the hashed feature space.
    n_iter_ : int
        Epochs run.
    t_ : int
        Updates made.
    loss_curve_ : list of float
        Mean training loss of each epoch (of the parsing loss, labels apart).
    label_loss_curve_ : list of float
        Mean relation-label hinge loss per epoch (empty without labels).
    validation_scores_ : list of float
        Validation UAS after each epoch (``early_stopping`` only).
    best_validation_score_ : float or None
        Best of them.
    n_lifted_arcs_ : int
        With ``projective=True``: how many gold arcs were lifted to make the
        training trees projective (see Notes).
    n_sparsemap_not_converged_ : int
        Active-set solves in training (one per sentence and epoch, with the
        SparseMAP losses) that stopped at ``sparsemap_max_iter`` iterations
        without converging; should be 0 (a ``ConvergenceWarning`` says when
        it is not).
    arc_filter_keys_ : ndarray of int64 or None
        With ``arc_filter="tags"``: the sorted keys (tag pair, direction,
        distance bin) of the arcs kept; None otherwise.
    arc_filter_kept_ : float or None
        With ``arc_filter="tags"``: the fraction of the training sentences'
        candidate arcs the filter keeps.
    pruner_ : SparseMAPParser or None
        Second order: the fitted first-order CRF parser whose arc posteriors
        prune the candidate arcs (None for a first-order parser).
    pruning_report_ : PruningReport
        Second order: what the pruner kept on the training sentences
        (candidate heads per word, parts per sentence, gold-arc recall).
        Training keeps the gold arcs, so the recall is 1 but for the arcs
        lifted to make trees projective; the pruner, trained on the same
        sentences, keeps fewer candidates on them than on new sentences.
    n_lp_not_converged_ : int
        Second order: training solves (one per sentence and epoch) that
        stopped at ``lp_max_iter`` iterations.
    decoding_counts_ : dict
        Second order, set by every :meth:`predict`: how many sentences were
        decoded ``"certified"`` (the relaxation's tree is provably the best),
        by ``"branch_and_bound"`` or ``"rounded"``, and on how many AD3
        reached ``lp_max_iter`` (``"lp_not_converged"``); ``"lp_iterations"``
        is the AD3 iterations of the sentences' relaxations, summed.
    token_fields_ : tuple of str or None
        The token fields among ``"lemma"``, ``"upos"``, ``"xpos"`` and
        ``"feats"`` that the training sentences give (for some word: a value
        other than ``"_"``; any FEATS value, ``"_"`` included). Sentences
        to parse that give none of one of them (e.g. forms without UPOS)
        get a ``UserWarning``: the model was trained to rely on them. None
        when fitted on encoded sentences, which are not checked.

    See Also
    --------
    sksparse_struct.datasets.read_conllu : Reads treebanks in the format ``fit`` takes.
    sksparse_struct.metrics.uas_score, sksparse_struct.metrics.las_score

    Notes
    -----
    Features are hashed, so the model's size is fixed by ``n_features``
    (2**22 by default: 32 MB of weights) whatever the data. With ``alpha >
    0`` the L2 shrinkage of a weight not touched by a mini-batch is applied
    when it is next touched (AdaGrad's per-weight step only changes when
    the weight is touched, so the deferred product is exact); the averaged
    weights account for it exactly too.

    With ``projective=True`` a non-projective gold tree lies outside the
    model's reach, and every loss could stay positive (or, for the
    SparseMAP and CRF losses, turn negative) on it forever. Such trees are
    made projective for training by lifting their crossing arcs, shortest
    first, to the head's head (Kahane, Nasr & Rambow 1998; Nivre & Nilsson
    2005); the labels stay with their words. Scores always compare with the
    original trees.

    Examples
    --------
    >>> from sksparse_struct import SparseMAPParser
    >>> X = [[{"form": "dogs", "upos": "NOUN"}, {"form": "bark", "upos": "VERB"}],
    ...      [{"form": "cats", "upos": "NOUN"}, {"form": "sleep", "upos": "VERB"}]]
    >>> y = [[2, 0], [2, 0]]
    >>> parser = SparseMAPParser(max_iter=5, random_state=0).fit(X, y)
    >>> [h.tolist() for h in parser.predict(X)]
    [[2, 0], [2, 0]]
    >>> parser.score(X, y)
    1.0
    """

    _parameter_constraints: dict = {
        "loss": [StrOptions(set(STRUCTURED_LOSSES))],
        "projective": ["boolean"],
        "single_root": ["boolean"],
        "features": [StrOptions(set(ARC_PRESETS)), ArcFeatures],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "arc_filter": [None, StrOptions({"tags"})],
        "min_arc_gradient": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [None, Interval(Real, 0, None, closed="left")],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "sparsemap_max_iter": [None, Interval(Integral, 1, None, closed="left")],
        "parts": [tuple, list],
        "pruner_max_heads": [Interval(Integral, 1, None, closed="left")],
        "pruner_threshold": [Interval(Real, 0, 1, closed="left")],
        "pruner_max_iter": [Interval(Integral, 1, None, closed="left")],
        "lp_max_iter": [Interval(Integral, 1, None, closed="left")],
        "lp_tol": [Interval(Real, 0, None, closed="neither")],
        "max_bb_nodes": [Interval(Integral, 0, None, closed="left")],
        "warm_start": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "n_jobs": [None, Integral],
    }

    def __init__(
        self,
        loss="sparsemap",
        *,
        projective=False,
        single_root=True,
        features="rich",
        alpha=1e-3,
        learning_rate=0.1,
        batch_size=16,
        arc_filter=None,
        min_arc_gradient=1e-2,
        max_iter=10,
        tol=1e-4,
        early_stopping=False,
        validation_fraction=0.1,
        n_iter_no_change=3,
        sparsemap_max_iter=None,
        parts=("arc",),
        pruner_max_heads=10,
        pruner_threshold=1e-4,
        pruner_max_iter=5,
        lp_max_iter=500,
        lp_tol=1e-4,
        max_bb_nodes=4,
        warm_start=False,
        random_state=None,
        verbose=0,
        n_jobs=None,
    ):
        self.loss = loss
        self.projective = projective
        self.single_root = single_root
        self.features = features
        self.alpha = alpha
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.arc_filter = arc_filter
        self.min_arc_gradient = min_arc_gradient
        self.max_iter = max_iter
        self.tol = tol
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.sparsemap_max_iter = sparsemap_max_iter
        self.parts = parts
        self.pruner_max_heads = pruner_max_heads
        self.pruner_threshold = pruner_threshold
        self.pruner_max_iter = pruner_max_iter
        self.lp_max_iter = lp_max_iter
        self.lp_tol = lp_tol
        self.max_bb_nodes = max_bb_nodes
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose
        self.n_jobs = n_jobs

    _score_metric = staticmethod(_uas_of_trees)

    # --- input --------------------------------------------------------------

    def _encoder(self):
        if isinstance(self.features, ArcFeatures):
            return self.features
        return ArcFeatures(preset=self.features)

    def _encode(self, X, fitted):
        """``(treebank, lengths, preset, n_features, encoded sentences)`` of ``X``."""
        if isinstance(X, (str, bytes)) or not hasattr(X, "__len__"):
            raise ValueError(
                "X must be a list of sentences (lists of token dicts, as "
                f"read_conllu returns them), got {type(X).__name__}."
            )
        X = list(X)
        encoded_flags = [isinstance(s, EncodedSentence) for s in X]
        if X and all(encoded_flags):
            encoded = X
            settings = {(s.preset, s.n_features) for s in encoded}
            if len(settings) > 1:
                raise ValueError(
                    "the encoded sentences were made with different ArcFeatures "
                    f"settings (preset, n_features): {sorted(settings)}."
                )
            preset, n_features = settings.pop()
        elif any(encoded_flags):
            raise ValueError(
                "X mixes encoded sentences (ArcFeatures output) and raw ones "
                f"(sentence {encoded_flags.index(not encoded_flags[0])} differs from "
                "sentence 0)."
            )
        else:
            if fitted:
                encoder = ArcFeatures(preset=self.preset_, n_features=self.n_features_)
            else:
                encoder = self._encoder()
            encoded = encoder.fit_transform(X)
            if fitted:
                self._check_token_fields(X)
            preset, n_features = encoder.preset, int(encoder.n_features)
        if fitted and (preset, n_features) != (self.preset_, self.n_features_):
            raise ValueError(
                f"X was encoded with preset={preset!r}, n_features={n_features}, but "
                f"the parser was fitted with preset={self.preset_!r}, "
                f"n_features={self.n_features_}."
            )
        treebank, lengths = stack_sentences(encoded)
        return treebank, lengths, preset, n_features, encoded

    def _check_token_fields(self, X):
        """Warn when X lacks token fields the parser was trained with."""
        trained = getattr(self, "token_fields_", None)
        given = _given_fields(X)
        if not trained or given is None or not X:
            return
        missing = [name for name in trained if name not in given]
        if missing:
            names = " and ".join(repr(name) for name in missing)
            warn(
                f"no word of X gives {names}, but the parser was trained with "
                f"{'them' if len(missing) > 1 else 'it'}: missing values are read as "
                "unspecified and the parses are much worse. Give the same token fields "
                f"as at fit ({', '.join(repr(name) for name in trained)}), e.g. "
                "part-of-speech tags from a tagger.",
                UserWarning)

    def _targets(self, y, lengths, offsets):
        """Gold heads (stacked, -1 on root rows) and relation labels, checked."""
        if isinstance(y, (str, bytes)) or not hasattr(y, "__len__"):
            raise ValueError(
                "y must be a list of head sequences (or of (heads, deprels) pairs), "
                f"one per sentence; got {type(y).__name__}."
            )
        y = list(y)
        if len(y) != len(lengths):
            raise ValueError(
                f"X and y have different numbers of sentences: {len(lengths)} and {len(y)}."
            )
        if not y:
            raise ValueError("cannot fit a parser on zero sentences.")
        pairs = [is_labelled_pair(item) for item in y]
        if any(pairs) and not all(pairs):
            i = pairs.index(not pairs[0])
            raise ValueError(
                "y mixes (heads, deprels) pairs and plain head sequences "
                f"(sentence 0 and sentence {i} differ)."
            )
        labelled = all(pairs)
        heads = [item[0] for item in y] if labelled else y
        flat = []
        for i, h in enumerate(heads):
            if isinstance(h, (str, bytes)) or not hasattr(h, "__len__"):
                raise ValueError(
                    f"y[{i}] must be the heads of sentence {i} (one integer per word), "
                    f"got {type(h).__name__}."
                )
            if len(h) != lengths[i]:
                raise ValueError(f"sentence {i} has {lengths[i]} words but {len(h)} heads.")
            arr = as_heads(h, "y", i)
            flat.append(arr)
        flat_heads = np.concatenate(flat) if flat else np.zeros(0, dtype=np.int64)
        bad = first_bad_tree(flat_heads, lengths, bool(self.single_root))
        if bad is not None:
            word, message = tree_error(flat[bad].tolist(), bool(self.single_root))
            raise ValueError(
                f"the gold heads of sentence {bad} are not a tree (word {word}): {message}."
            )
        gold = np.full(offsets[-1], -1, dtype=np.int64)
        word_rows = np.ones(offsets[-1], dtype=bool)
        word_rows[offsets[:-1]] = False
        gold[word_rows] = flat_heads
        labels = None
        if labelled:
            labels = []
            for i, item in enumerate(y):
                d = list(item[1])
                if len(d) != lengths[i]:
                    raise ValueError(
                        f"sentence {i} has {lengths[i]} words but {len(d)} relation labels."
                    )
                for j, lab in enumerate(d):
                    if not isinstance(lab, str):
                        raise ValueError(
                            f"relation label of word {j + 1} of sentence {i} must be a "
                            f"string, got {lab!r}."
                        )
                labels.extend(d)
        return gold, word_rows, labels

    # --- fit ----------------------------------------------------------------

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Train the parser.

        Parameters
        ----------
        X : list of sentences
            Lists of token dicts (``"form"``, ``"lemma"``, ``"upos"``,
            ``"xpos"``, ``"feats"``) as
            :func:`~sksparse_struct.datasets.read_conllu` returns them, or
            sentences encoded by
            :class:`~sksparse_struct.feature_extraction.ArcFeatures`.
        y : list of head sequences, or of (heads, deprels) pairs
            ``heads[i]`` is the head of word ``i + 1`` (0 for the root); with
            relation labels, the relation labeller is trained too.

        Returns
        -------
        self : SparseMAPParser
        """
        warm = self.warm_start and hasattr(self, "coef_")
        second_order = self._second_order_parts()
        treebank, lengths, preset, n_features, encoded = self._encode(X, fitted=False)
        self.token_fields_ = _given_fields(X)
        if warm and (preset, n_features) != (self.preset_, self.n_features_):
            raise ValueError(
                "warm_start needs the features of the previous fit: got "
                f"preset={preset!r}, n_features={n_features}, fitted with "
                f"preset={self.preset_!r}, n_features={self.n_features_}."
            )
        gold, word_rows, label_list = self._targets(y, lengths, treebank.offsets)
        classes, gold_labels = self._label_codes(label_list, word_rows, warm)
        rng = check_random_state(self.random_state)
        train_ids, val_ids = self._validation_split(len(lengths), rng)
        # A projective parser cannot output a non-projective gold tree: train
        # it on the projective tree closest to it (arcs lifted), so that every
        # loss vanishes at its target. Validation scores use the real trees.
        target = gold
        self.n_lifted_arcs_ = 0
        if self.projective:
            target = gold.copy()
            self.n_lifted_arcs_ = int(lift_to_projective(target, treebank.offsets))
        treebank = treebank._replace(heads=target, labels=gold_labels)
        self.preset_, self.n_features_, self.classes_ = preset, n_features, classes
        keys = self._fit_arc_filter(treebank, train_ids, warm)
        if second_order is None:
            self.pruner_ = None
            problem = ParsingProblem(treebank, lengths, gold, self._arc_model(keys),
                                     self._training_options(rng), n_features, self._n_threads())
        else:
            problem = self._second_order_problem(encoded, treebank, lengths, gold,
                                                 self._arc_model(keys), train_ids, rng)
        perceptron = LOSS_KINDS[self.loss] == PERCEPTRON
        progress = Progress(self, self.verbose, "epoch", self.max_iter)
        result = minimize_online(
            problem, self.coef_.copy() if warm else np.zeros(n_features), train_ids,
            method="perceptron" if perceptron else "adagrad",
            learning_rate=self.learning_rate, l2=0.0 if perceptron else self.alpha,
            batch_size=self.batch_size, max_iter=self.max_iter, tol=self.tol,
            n_iter_no_change=self.n_iter_no_change, validation_ids=val_ids, random_state=rng,
            n_parts=_BATCH_PARTS, n_threads=self._n_threads(),
            callback=lambda info: self._report(info, progress),
        )
        n_train = train_ids.shape[0]
        self.coef_ = result.coef
        self.n_iter_, self.t_ = result.n_epochs, result.n_steps
        self.loss_curve_ = [float(loss) for loss in result.loss_curve]
        self.label_loss_curve_ = [float(stats[1] / n_train) for stats in result.stats
                                  if classes is not None]
        self.validation_scores_ = list(result.validation_scores)
        self.best_validation_score_ = result.best_validation_score
        n_unconverged = int(sum(stats[2] for stats in result.stats))
        self.n_sparsemap_not_converged_ = 0 if second_order else n_unconverged
        self.n_lp_not_converged_ = n_unconverged if second_order else 0
        self._warn_convergence(result, n_train)
        return self

    # --- second order ---------------------------------------------------------

    def _second_order_parts(self):
        """``(siblings, grandparents)`` flags, or None for a first-order parser."""
        parts = self.parts
        if isinstance(parts, str) or not all(isinstance(p, str) for p in parts):
            raise ValueError(
                f"parts must be a tuple of part names among {PARTS}, got {parts!r}.")
        unknown = [p for p in parts if p not in PARTS]
        if unknown or "arc" not in parts or len(set(parts)) != len(parts):
            raise ValueError(
                f"parts must name each of its parts once, among {PARTS}, 'arc' included "
                f"(e.g. ('arc', 'sibling', 'grandparent')); got {tuple(parts)!r}.")
        siblings, grandparents = "sibling" in parts, "grandparent" in parts
        if not (siblings or grandparents):
            return None
        if LOSS_KINDS[self.loss] == CRF:
            raise ValueError(
                "loss='crf' needs the marginals of the parts, which are intractable with "
                f"second-order parts (parts={tuple(parts)!r}); use 'sparsemap', "
                "'margin_sparsemap', 'hinge' or 'perceptron'.")
        return siblings, grandparents

    def _second_order_options(self):
        # max_bb_nodes only matters when decoding: it may be changed after fit.
        check_integer(self.max_bb_nodes, "max_bb_nodes", minimum=0)
        return SecondOrderOptions(tags=TAGS_BOTH, eta=1.0, max_iter=int(self.lp_max_iter),
                                  tol=float(self.lp_tol), max_nodes=int(self.max_bb_nodes))

    def _pruner(self, random_state):
        """The first-order parser whose arc posteriors prune the candidate arcs."""
        return SparseMAPParser(
            "crf", projective=self.projective, single_root=self.single_root,
            alpha=self.alpha, learning_rate=self.learning_rate, batch_size=self.batch_size,
            max_iter=self.pruner_max_iter, tol=None, random_state=random_state,
            n_jobs=self.n_jobs)

    def _graphs(self, encoded, lengths, gold_heads=None):
        """The pruned second-order graphs of the sentences (gold arcs kept if given)."""
        siblings, grandparents = self._second_order_parts()
        return candidate_graphs(
            self.pruner_, encoded, lengths, max_heads=self.pruner_max_heads,
            threshold=self.pruner_threshold, projective=bool(self.projective),
            single_root=bool(self.single_root), siblings=siblings, grandparents=grandparents,
            gold_heads=gold_heads)

    def _second_order_problem(self, encoded, treebank, lengths, gold, model, train_ids, rng):
        """Fit the pruner, build the training graphs: the online problem."""
        offsets = treebank.offsets
        n_sent = len(lengths)
        gold_lists = [gold[offsets[s] + 1:offsets[s + 1]] for s in range(n_sent)]
        self.pruner_ = self._pruner(rng.randint(np.iinfo(np.int32).max)).fit(
            [encoded[s] for s in train_ids], [gold_lists[s] for s in train_ids])
        # Training sentences keep their (lifted) gold arcs; validation ones
        # are pruned as at test time.
        in_train = np.zeros(n_sent, dtype=bool)
        in_train[train_ids] = True
        targets = [treebank.heads[offsets[s]:offsets[s + 1]] if in_train[s] else None
                   for s in range(n_sent)]
        graphs, masks = self._graphs(encoded, lengths, targets)
        self.pruning_report_ = pruning_report(
            [masks[s] for s in train_ids],
            [np.concatenate([[-1], gold_lists[s]]) for s in train_ids])
        kind = LOSS_KINDS[self.loss]
        return SecondOrderProblem(
            treebank, gold, graphs, model, self._second_order_options(), kind,
            0.0 if kind == PERCEPTRON else 1.0, int(model.mask) + 1, self._n_threads())

    def _warn_convergence(self, result, n_train):
        """The fit's warnings: max_iter reached first, SparseMAP solves unconverged."""
        if self.tol is not None and not result.converged:
            rule = (f"the validation UAS stopped rising by more than tol={self.tol}"
                    if self.early_stopping else
                    f"the mean training loss stopped falling by more than tol={self.tol}")
            warn_max_iter("SparseMAPParser", self.max_iter, "epoch",
                          f"{rule} ({self.n_iter_no_change} epochs in a row)")
        if self.n_sparsemap_not_converged_:
            warn(
                f"SparseMAPParser (loss={self.loss!r}): {self.n_sparsemap_not_converged_} of "
                f"{n_train * result.n_epochs} SparseMAP solves in training (one per sentence "
                f"and epoch) did not converge in {self._iteration_limit()} "
                "active-set iterations, so their losses and gradients are approximate. "
                "Increase sparsemap_max_iter.",
                ConvergenceWarning,
            )
        if getattr(self, "n_lp_not_converged_", 0):
            warn(
                f"SparseMAPParser (loss={self.loss!r}): {self.n_lp_not_converged_} of "
                f"{n_train * result.n_epochs} AD3 solves in training (one per sentence and "
                f"epoch) did not converge in lp_max_iter={self.lp_max_iter} iterations, so "
                "their losses and gradients are approximate. Increase lp_max_iter or lp_tol.",
                ConvergenceWarning,
            )

    def _label_codes(self, label_list, word_rows, warm):
        """The relation labels learnt and the label index of every row (-1 on roots)."""
        gold_labels = np.full(word_rows.shape[0], -1, dtype=np.int64)
        classes = None
        if label_list is not None:
            classes, codes = np.unique(np.asarray(label_list, dtype=object).astype(str),
                                       return_inverse=True)
            gold_labels[word_rows] = codes
        if warm and ((classes is None) != (self.classes_ is None) or (
                classes is not None and not np.array_equal(classes, self.classes_))):
            raise ValueError("warm_start needs the relation labels of the previous fit.")
        return classes, gold_labels

    def _validation_split(self, n_sent, rng):
        """``(train_ids, val_ids)``; no validation sentences without early stopping."""
        if not self.early_stopping:
            return np.arange(n_sent), None
        return validation_split(np.arange(n_sent), self.validation_fraction, rng)

    def _training_options(self, rng):
        kind = LOSS_KINDS[self.loss]
        # Unbiased sparsification of small gradient entries: only the CRF and
        # SparseMAP gradients have any (the perceptron's and hinge's are 0 or
        # +-1, and stay exact whatever the threshold).
        sparsify = self.loss in ("crf", "sparsemap", "margin_sparsemap") and (
            self.min_arc_gradient > 0)
        return TrainingOptions(
            kind=np.int64(kind), label_margin=0.0 if kind == PERCEPTRON else 1.0,
            sparsemap=self._sparsemap_options(),
            min_gradient=float(self.min_arc_gradient) if sparsify else 0.0,
            seed=np.int64(rng.randint(np.iinfo(np.int32).max) if sparsify else 0),
        )

    def _sparsemap_options(self):
        """The active set's settings, in training and prediction."""
        # Parsers pickled before sparsemap_max_iter existed use the default.
        max_iter = getattr(self, "sparsemap_max_iter", None)
        if max_iter is None:
            return SPARSEMAP_OPTIONS
        return SPARSEMAP_OPTIONS._replace(max_iter=int(max_iter))

    def _iteration_limit(self):
        """The active set's iteration limit, in words (for the warnings)."""
        max_iter = self._sparsemap_options().max_iter
        return ("the default max(1000, 10 * n_words)" if max_iter is None
                else f"sparsemap_max_iter={max_iter}")

    def _report(self, info, progress):
        """The progress line of an epoch (printed when verbose)."""
        fields = [("loss", info.loss)]
        if self.classes_ is not None:
            fields.append(("label_loss", info.stats[1] / info.n_samples))
        if info.validation_score is not None:
            fields.append(("val_uas", info.validation_score))
        if getattr(self, "pruner_", None) is not None:
            fields.append(("lp_unconverged", int(info.stats[2])))
        elif "sparsemap" in self.loss:
            fields.append(("sparsemap_unconverged", int(info.stats[2])))
        progress.update(info.epoch, fields)

    def _fit_arc_filter(self, treebank, train_ids, warm):
        """Sorted keys of the training arcs kept by ``arc_filter="tags"`` (or None).

        With ``warm``, the arcs kept by the previous fit stay candidates.
        """
        previous = getattr(self, "arc_filter_keys_", None) if warm else None
        self.arc_filter_keys_ = None
        self.arc_filter_kept_ = None
        if self.arc_filter is None:
            return None
        train_ids = np.ascontiguousarray(train_ids, dtype=np.int64)
        keys = _arc_filter_fast.gold_arc_keys(treebank.tokens, treebank.offsets,
                                              treebank.heads, train_ids)
        if previous is not None:
            keys = np.concatenate([keys, previous])
        keys = np.unique(keys)
        total, kept = _arc_filter_fast.count_allowed_arcs(treebank.tokens, treebank.offsets,
                                                          train_ids, keys)
        self.arc_filter_keys_ = keys
        self.arc_filter_kept_ = kept / total if total else 1.0
        return keys

    def _arc_model(self, keys):
        """The kernels' view of the fitted model (``keys``: the arc filter's, or None)."""
        n_labels = 0 if self.classes_ is None else len(self.classes_)
        root_label = -1
        if n_labels and "root" in self.classes_:
            root_label = int(np.flatnonzero(self.classes_ == "root")[0])
        return ArcModel(
            preset=np.int64(ARC_PRESETS.index(self.preset_)), mask=np.int64(self.n_features_ - 1),
            n_labels=np.int64(n_labels), root_label=np.int64(root_label),
            keys=np.zeros(0, dtype=np.int64) if keys is None else keys,
            use_filter=np.bool_(keys is not None), projective=np.bool_(self.projective),
            single_root=np.bool_(self.single_root),
        )

    # --- prediction ---------------------------------------------------------

    def predict(self, X, return_deprel=False):
        """Parse sentences.

        Parameters
        ----------
        X : list of sentences
            As in :meth:`fit`.
        return_deprel : bool, default=False
            Also return the relation label of every predicted arc (needs a
            parser fitted with labels).

        Returns
        -------
        heads : list of ndarray of int64
            Per sentence, the head of every word (0 for the root); always a
            tree (with one root word when ``single_root``).
        deprels : list of list of str
            Only with ``return_deprel``: the relation of every word.
        """
        check_is_fitted(self, "coef_")
        if return_deprel and self.classes_ is None:
            raise ValueError(
                "return_deprel=True needs a parser fitted with relation labels: "
                "fit it with y as (heads, deprels) pairs."
            )
        treebank, lengths, _, _, encoded = self._encode(X, fitted=True)
        model = self._arc_model(getattr(self, "arc_filter_keys_", None))
        if getattr(self, "pruner_", None) is None:
            heads, labels = decode(treebank, model, self.coef_, np.arange(len(lengths)),
                                   self._n_threads())
        else:
            heads, labels = self._decode_second_order(treebank, lengths, encoded, model)
        if labels is not None:
            labels = [self.classes_[codes].tolist() for codes in labels]
        if return_deprel:
            return heads, labels
        return heads

    def _decode_second_order(self, treebank, lengths, encoded, model):
        """Heads and labels by AD3 on the pruned graphs; the decoding counts updated."""
        graphs, _ = self._graphs(encoded, lengths)
        heads, labels, statuses, iterations, unconverged = decode_second_order(
            treebank, model, self._second_order_options(), graphs, self.coef_,
            np.arange(len(lengths)), self._n_threads())
        self.decoding_counts_ = {
            "certified": int(np.sum(statuses == CERTIFIED)),
            "branch_and_bound": int(np.sum(statuses == BRANCH_AND_BOUND)),
            "rounded": int(np.sum(statuses == ROUNDED)),
            "lp_not_converged": int(np.sum(unconverged)),
            "lp_iterations": int(np.sum(iterations)),
        }
        if self.decoding_counts_["lp_not_converged"]:
            warn(f"SparseMAPParser: AD3 did not converge in lp_max_iter={self.lp_max_iter} "
                 f"iterations on {self.decoding_counts_['lp_not_converged']} of {len(lengths)} "
                 "sentences; their trees are still valid (certified, found by "
                 "branch-and-bound or rounded: see decoding_counts_). Increase lp_max_iter "
                 "or lp_tol.", ConvergenceWarning)
        return heads, labels

    def decision_function(self, X):
        """Arc scores of every sentence.

        Parameters
        ----------
        X : list of sentences
            As in :meth:`fit`.

        Returns
        -------
        scores : list of ndarray of shape (n + 1, n + 1)
            ``scores[h, m]`` for the arc ``h -> m`` (0 is the root); ``-inf``
            on column 0, the diagonal and the arcs ``arc_filter`` drops, as
            :class:`~sksparse_struct.structures.DependencyTree` takes them.
        """
        check_is_fitted(self, "coef_")
        treebank, lengths, _, _, _ = self._encode(X, fitted=True)
        model = self._arc_model(getattr(self, "arc_filter_keys_", None))
        return [score_sentence(treebank, model, np.int64(s), self.coef_)
                for s in range(len(lengths))]

    def _structure(self):
        return DependencyTree(projective=bool(self.projective),
                              single_root=bool(self.single_root))

    def predict_marginals(self, X):
        """Arc posteriors of every sentence.

        Marginal probabilities of the arcs under the CRF (Gibbs) distribution
        for ``loss="crf"``; the SparseMAP posteriors (expected arcs under the
        sparse distribution of :meth:`predict_sparse`) for the other losses.

        Parameters
        ----------
        X : list of sentences
            As in :meth:`fit`.

        Returns
        -------
        marginals : list of ndarray of shape (n + 1, n + 1)
            ``marginals[h, m]`` is the posterior of the arc ``h -> m``; each
            column ``m >= 1`` sums to one.
        """
        if self.loss != "crf":
            # A ProjectiveSiblingTree factor's marginals are (arcs, siblings).
            return [result.marginals[0] if isinstance(result.marginals, tuple)
                    else result.marginals for result in self._sparsemap_all(X)]
        structure = self._structure()
        return [structure.marginals(S)[0] for S in self.decision_function(X)]

    def _sparsemap_all(self, X):
        """SparseMAP on the arc scores of every sentence, with one warning for all.

        For a second-order parser, LP-SparseMAP on every sentence's graph:
        its tree factor's distribution, with the arc marginals as
        ``marginals``.
        """
        if getattr(self, "pruner_", None) is not None:
            return self._lp_sparsemap_all(X)
        scores = self.decision_function(X)
        structure = self._structure()
        options = self._sparsemap_options()
        with warnings.catch_warnings():
            # One warning for all the sentences, below, rather than one each.
            warnings.simplefilter("ignore", ConvergenceWarning)
            results = [sparsemap(structure, S, options=options) for S in scores]
        n_failed = sum(not result.converged for result in results)
        if n_failed:
            warn(f"SparseMAPParser: SparseMAP did not converge in {self._iteration_limit()} "
                 f"active-set iterations on {n_failed} of {len(results)} "
                 "sentences (their distributions over trees are valid but not the optimal "
                 "ones); increase sparsemap_max_iter.", ConvergenceWarning)
        return results

    def _lp_sparsemap_all(self, X):
        """LP-SparseMAP on every sentence's graph: the tree factors' distributions."""
        check_is_fitted(self, "coef_")
        treebank, lengths, _, _, encoded = self._encode(X, fitted=True)
        model = self._arc_model(getattr(self, "arc_filter_keys_", None))
        graphs, _ = self._graphs(encoded, lengths)
        results = sparse_second_order(treebank, model, self._second_order_options(), graphs,
                                      self.coef_, np.arange(len(lengths)))
        n_failed = sum(not result.converged for result in results)
        if n_failed:
            warn(f"SparseMAPParser: LP-SparseMAP did not converge in "
                 f"lp_max_iter={self.lp_max_iter} iterations on {n_failed} of {len(results)} "
                 "sentences; increase lp_max_iter.", ConvergenceWarning)
        # The tree factor's own distribution: its marginals are the arc
        # marginals up to AD3's residuals, and exactly those of its support.
        return [result.distributions[0] for result in results]

    def predict_sparse(self, X):
        """The SparseMAP distribution over trees of every sentence.

        Parameters
        ----------
        X : list of sentences
            As in :meth:`fit`.

        Returns
        -------
        supports : list of list of (ndarray, float)
            Per sentence, the trees with nonzero probability as ``(heads,
            probability)`` (heads as :meth:`predict` returns them), most
            probable first. Usually a handful of trees.
        """
        return [[(np.asarray(heads[1:], dtype=np.int64), float(p)) for heads, p in result.support]
                for result in self._sparsemap_all(X)]
