"""Linear-chain CRF taggers (CRF, structured SVM, perceptron, SparseMAP losses)."""

import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ..inference import sparsemap
from ..learners import minimize_bcfw, minimize_lbfgs, minimize_online
from ..inference._sparsemap_fast import SPARSEMAP_OPTIONS
from ..losses._kinds_fast import LOSS_KINDS, STRUCTURED_LOSSES
from ..metrics import flat_accuracy_score
from ..structures import Sequence
from ..utils._estimator import StructuredEstimatorMixin, validation_split
from ..utils._reporting import Progress, warn, warn_max_iter
from ..utils._sklearn_compat import Interval, StrOptions, fit_context
from ._input import TokenInputMixin, check_sequence_list
from ._problem import (
    ChainBCFWProblem,
    ChainData,
    ChainModel,
    ChainProblem,
    ChainRunner,
    frequency_rank,
)

__all__ = ["LinearChainCRF"]

_SOLVERS = {
    "crf": ("lbfgs", "adagrad"),
    "sparsemap": ("lbfgs", "adagrad"),
    "margin_sparsemap": ("lbfgs", "adagrad"),
    "hinge": ("adagrad", "bcfw"),
    "perceptron": ("perceptron",),
}
# SparseMAP losses are smooth enough for L-BFGS, but each evaluation solves a
# QP per sequence whose support is large while the scores are nearly tied
# (early iterations): a few online epochs get to the same accuracy much
# sooner.
_AUTO_SOLVER = {"crf": "lbfgs", "sparsemap": "adagrad", "margin_sparsemap": "adagrad",
                "hinge": "adagrad", "perceptron": "perceptron"}
# Parts of an online mini-batch (each with its own gradient column): fixed,
# so that results do not depend on n_jobs.
_BATCH_PARTS = 2
# Passes of BCFW between two duality gaps (each costs one more decoding per
# sequence); the last pass always gets one.
_BCFW_GAP_EVERY = 10


# Largest feature magnitude fit accepts. The objective's gradient grows with
# the features and its curvature with their squares: from about 1e11 on,
# L-BFGS's first line search cannot shrink its step enough (it ends at the
# all-zero weights), and near 1e200 the objective overflows.
_MAX_FEATURE_VALUE = 1e10


def _check_feature_scale(matrix, lengths, names):
    """Raise a ValueError naming the sequence, token and feature of a too large value."""
    if matrix.nnz == 0:
        return
    i = int(np.argmax(np.abs(matrix.data)))
    value = matrix.data[i]
    if abs(value) <= _MAX_FEATURE_VALUE:
        return
    row = int(np.searchsorted(matrix.indptr, i, side="right") - 1)
    ends = np.cumsum(lengths)
    seq = int(np.searchsorted(ends, row, side="right"))
    token = row - (int(ends[seq - 1]) if seq > 0 else 0)
    feature = names[matrix.indices[i]] if names is not None else f"column {matrix.indices[i]}"
    raise ValueError(
        f"X[{seq}] has the feature value {value:.3g} at token {token} ({feature}): "
        f"feature values above {_MAX_FEATURE_VALUE:.0e} in magnitude are out of "
        "reach of the solvers (the gradients grow with the features and the "
        "curvature with their squares; L-BFGS stalls at zero weights, or the "
        "objective overflows). Rescale the features, e.g. divide each by its "
        "largest absolute value."
    )


# Largest feature magnitude at which a failed L-BFGS line search is not put
# down to the scale of the features.
_MODERATE_FEATURE_VALUE = 100.0


def _warn_line_search(who, n_iter, feature_scale, relative_gradient):
    """The warning of an L-BFGS run whose line search found no step, in the user's terms.

    L-BFGS itself stops converged where rounding hides what is left to gain
    near the optimum; a failure it reports happened away from it.
    """
    if n_iter == 0:
        what = ("could not take a single step: its line search found no step that lowers the "
                "objective, so the weights are still at their starting values")
    else:
        what = (f"stopped after {n_iter} iterations without converging: its line search "
                "found no step that lowers the objective enough")
    where = f"(the gradient norm relative to the weights is {relative_gradient:.3g})"
    if feature_scale > _MODERATE_FEATURE_VALUE:
        why = (f"The largest feature value is {feature_scale:.3g} in magnitude: features that "
               "large make the objective too steep for the solver. Rescale the features "
               "(e.g. divide each by its largest absolute value) and fit again.")
    else:
        why = (f"This happened away from the optimum {where}, although the features are "
               f"moderate (the largest is {feature_scale:.3g} in magnitude): the objective "
               "is badly conditioned there, e.g. by features on very different scales or by "
               "weights that grow without bound when c2 is 0. Standardise the features or "
               "raise c2 and fit again.")
    warn(f"{who} {what}. {why}", ConvergenceWarning)


def _split_label_by_prefix(label):
    if isinstance(label, str) and len(label) > 2 and label[1] == "-" and label[0] in "BIES":
        return label[0], label[2:]
    return None, label


def _forbidden_pairs(scheme, classes):
    """``(from, to)`` label pairs a BIO / IOBES scheme forbids (None = start / end)."""
    tags = [_split_label_by_prefix(c) for c in classes]
    pairs = []
    for b, (pb, tb) in zip(classes, tags):
        if scheme == "bio":
            if pb == "I":
                pairs.append((None, b))
                for a, (pa, ta) in zip(classes, tags):
                    if not (pa in ("B", "I") and ta == tb):
                        pairs.append((a, b))
        else:  # iobes: I/E continue a chunk of the same type, B/S/O end one
            if pb in ("I", "E"):
                pairs.append((None, b))
            if pb in ("B", "I"):
                pairs.append((b, None))
            for a, (pa, ta) in zip(classes, tags):
                inside_a = pa in ("B", "I")
                continues_b = pb in ("I", "E")
                if inside_a != continues_b or (inside_a and ta != tb):
                    pairs.append((a, b))
    return pairs


class LinearChainCRF(TokenInputMixin, StructuredEstimatorMixin, BaseEstimator):
    """Linear-chain tagger trained with a CRF, SSVM, perceptron or SparseMAP loss.

    A drop-in alternative to ``sklearn_crfsuite.CRF``: ``X`` is a list of
    sequences of feature dicts (``{name: value}``; a string value means the
    indicator ``name=value``), or of already vectorized sparse matrices (one
    row per token); ``y`` is a list of label sequences. The score of a label
    sequence ``y`` is the sum of unary scores ``x_i . w[:, y_i]``, of the
    transition scores ``transition_[y_{i-1}, y_i]`` and of
    ``start_transition_[y_0]`` and ``end_transition_[y_{n-1}]``.

    Read more in the :ref:`User Guide <tagging>`.

    Parameters
    ----------
    loss : {"crf", "hinge", "perceptron", "sparsemap", "margin_sparsemap"}, default="crf"
        Training loss (thesis ch. 6): negative log-likelihood ("crf"),
        structured hinge with the Hamming cost ("hinge", structured SVM),
        averaged structured perceptron, the SparseMAP loss or its margin
        (Hamming cost) variant.
    c1 : float, default=0.0
        L1 penalty ``c1 * sum(|w|)``, as in CRFsuite (with L-BFGS it switches
        to OWL-QN; AdaGrad takes its proximal step). Applies to every learned
        weight; not used by the perceptron.
    c2 : float, default=1.0
        L2 penalty ``c2 * sum(w ** 2)`` added to the *sum* of the losses, as in
        CRFsuite: the same value gives comparable models. Not used by the
        perceptron (which averages instead).
    solver : {"auto", "lbfgs", "adagrad", "perceptron", "bcfw"}, default="auto"
        "auto" picks L-BFGS (OWL-QN when ``c1 > 0``) for "crf", mini-batch
        AdaGrad for "hinge", "sparsemap" and "margin_sparsemap" (L-BFGS also
        works for the SparseMAP losses, but its early iterations, with
        nearly tied scores, need large SparseMAP supports; online epochs get
        there sooner), and the averaged perceptron for "perceptron". The
        online solvers update only the weights of the features a mini-batch
        touches (the penalties reach the others lazily, exactly), so an
        epoch costs time in proportion to the data, not to the model.
        "bcfw" (only for ``loss="hinge"``, with ``c2 > 0`` and ``c1 = 0``):
        block-coordinate Frank-Wolfe on the dual of the structured SVM
        (``learners.minimize_bcfw`` with ``C = 1 / (2 c2)``, line search and
        weight averaging): no step size to tune, and a duality gap that
        bounds the distance to the optimum (:attr:`duality_gap_`).
    max_iter : int, default=100
        Iterations of L-BFGS, or epochs of AdaGrad / perceptron / BCFW.
    tol : float or None, default=1e-5
        L-BFGS stops when the gradient norm is below ``tol * max(1, ||w||)``
        or the objective improved by less than a fraction ``tol`` in 10
        iterations (CRFsuite's epsilon and delta). AdaGrad and the perceptron
        stop when three epochs in a row fail to lower the mean training loss
        per sequence (penalties apart) below the best so far minus ``tol`` (the
        perceptron also after an epoch without mistakes; with
        ``early_stopping``, see there).
        BCFW stops when the duality gap, computed every 10 passes, is at
        most ``tol`` times the objective. A ``ConvergenceWarning`` says when
        ``max_iter`` ended the fit first. None or 0: no stopping rule, run
        ``max_iter`` iterations (L-BFGS still stops at an exact stationary
        point) and do not warn.
    all_possible_states : bool, default=False
        If False, a feature gets a weight only for the labels it was seen with
        in training (as in CRFsuite, much smaller models); if True for every
        label.
    all_possible_transitions : bool, default=True
        If True, every allowed transition gets a weight; if False only the
        transitions seen in training (the others stay at 0). Note that
        sklearn-crfsuite's default is False.
    forbidden_transitions : {"bio", "iobes"} or list of pairs, default=None
        Transitions that get score ``-inf``, in decoding and in training.
        "bio" forbids ``I-X`` after anything but ``B-X``/``I-X`` and at the
        start (IOB2); "iobes" the invalid IOBES transitions, starts and ends.
        A list of ``(from_label, to_label)`` pairs, with ``None`` as
        ``from_label`` for the start and as ``to_label`` for the end, forbids
        exactly those. Gold sequences must respect them.
    learning_rate : float, default=0.1
        AdaGrad step size.
    batch_size : int, default=32
        Sequences per AdaGrad step (the perceptron updates after every
        sequence).
    early_stopping : bool, default=False
        Online solvers ("adagrad", "perceptron") only: hold out
        ``validation_fraction`` of the training sequences, keep the weights
        of the epoch with the best token accuracy on them, and stop when
        ``n_iter_no_change`` epochs in a row fail to raise it above the best
        plus ``tol``.
    validation_fraction : float, default=0.1
        Fraction of the sequences held out with ``early_stopping`` (rounded
        up).
    n_iter_no_change : int, default=3
        Online solvers: epochs without improvement before stopping (see
        ``tol``).
    sparsemap_max_iter : int or None, default=None
        Iterations of the active-set solver behind the SparseMAP losses, per
        sequence and evaluation, and of :meth:`predict_sparse`. A
        ``ConvergenceWarning`` says how many solves reached it (their losses
        and gradients are then approximate). None: the default of
        :class:`~sksparse_struct.inference.SparseMAPOptions`, ``max(1000,
        10 n)`` for a sequence of ``n`` positions.
    warm_start : bool, default=False
        Start from the previous solution (same features and labels). Not
        with ``solver="bcfw"``, whose dual state is not kept.
    random_state : int, RandomState instance or None, default=None
        Shuffling for AdaGrad, the perceptron and BCFW.
    verbose : int, default=0
        If positive, print a progress line every ``verbose`` iterations
        (epochs, passes): the objective or mean loss, the mistakes (hinge,
        perceptron), the iteration's time and the total time (the format is
        described in the :ref:`User Guide <progress>`).
    n_jobs : int, default=None
        Threads used over sequences; ``None`` means 1, -1 all cores. L-BFGS
        evaluations run over 4 fixed parts of the data, AdaGrad over two
        fixed parts of each mini-batch, prediction over chunks of sequences;
        the averaged perceptron and BCFW, one sequence per update, are
        sequential by nature. The parts do not depend on ``n_jobs``, so
        results are identical for every value.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The labels, sorted (in the order of first appearance if they cannot
        be sorted).
    coef_ : scipy.sparse.csr_matrix of shape (n_classes, n_features)
        Unary weights; the stored entries are the model's (feature, label)
        pairs.
    transition_ : ndarray of shape (n_classes, n_classes)
        ``transition_[a, b]`` scores label ``a`` followed by ``b``; ``-inf``
        where forbidden.
    start_transition_, end_transition_ : ndarray of shape (n_classes,)
        Scores of the first and last label.
    state_features_ : dict
        ``{(feature, label): weight}`` for every nonzero unary weight of
        ``coef_``, with the feature's name (``"x<j>"`` for column ``j`` when
        ``X`` was given as matrices), as sklearn-crfsuite's attribute of the
        same name. A read-only view, rebuilt at each access.
    transition_features_ : dict
        ``{(from_label, to_label): weight}`` for every nonzero finite entry
        of ``transition_`` (forbidden transitions are left out), as
        sklearn-crfsuite's attribute of the same name. A read-only view,
        rebuilt at each access.
    vectorizer_ : SequenceVectorizer or None
        The feature vocabulary, when ``X`` was given as feature dicts.
    n_features_in_ : int
        Number of features (columns of the token matrices).
    n_iter_ : int
        Iterations (L-BFGS), epochs or passes (BCFW) run.
    validation_scores_ : list of float or None
        With ``early_stopping``: the held-out token accuracy after each epoch.
    objective_ : float
        Final training objective: the sum of the losses plus the penalties
        (online solvers: the losses of the last epoch, each at the weights
        of its step, plus the penalties of the final weights; BCFW: exact,
        at the final weights).
    duality_gap_ : float or None
        With ``solver="bcfw"``: the duality gap of the final weights, in the
        units of :attr:`objective_`; the optimum lies between
        ``objective_ - duality_gap_`` and ``objective_``. None otherwise.

    See Also
    --------
    sksparse_struct.feature_extraction.TokenFeatures : Token feature dicts.
    sksparse_struct.metrics.chunk_f1_score : Chunk F1 for BIO-style labels.

    Examples
    --------
    >>> from sksparse_struct import LinearChainCRF
    >>> X = [[{"w": "the"}, {"w": "dog"}, {"w": "barks"}], [{"w": "a"}, {"w": "cat"}]]
    >>> y = [["DET", "NOUN", "VERB"], ["DET", "NOUN"]]
    >>> crf = LinearChainCRF(c2=0.01).fit(X, y)
    >>> crf.predict([[{"w": "the"}, {"w": "cat"}]])
    [['DET', 'NOUN']]
    >>> crf.predict_marginals([[{"w": "a"}, {"w": "dog"}]])[0].round(1).tolist()
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    """

    _parameter_constraints: dict = {
        "loss": [StrOptions(set(STRUCTURED_LOSSES))],
        "c1": [Interval(Real, 0, None, closed="left")],
        "c2": [Interval(Real, 0, None, closed="left")],
        "solver": [StrOptions({"auto", "lbfgs", "adagrad", "perceptron", "bcfw"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [None, Interval(Real, 0, None, closed="left")],
        "all_possible_states": ["boolean"],
        "all_possible_transitions": ["boolean"],
        "forbidden_transitions": [None, StrOptions({"bio", "iobes"}), list, tuple],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "sparsemap_max_iter": [None, Interval(Integral, 1, None, closed="left")],
        "warm_start": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "n_jobs": [None, Integral],
    }

    def __init__(
        self,
        loss="crf",
        *,
        c1=0.0,
        c2=1.0,
        solver="auto",
        max_iter=100,
        tol=1e-5,
        all_possible_states=False,
        all_possible_transitions=True,
        forbidden_transitions=None,
        learning_rate=0.1,
        batch_size=32,
        early_stopping=False,
        validation_fraction=0.1,
        n_iter_no_change=3,
        sparsemap_max_iter=None,
        warm_start=False,
        random_state=None,
        verbose=0,
        n_jobs=None,
    ):
        self.loss = loss
        self.c1 = c1
        self.c2 = c2
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.forbidden_transitions = forbidden_transitions
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.sparsemap_max_iter = sparsemap_max_iter
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose
        self.n_jobs = n_jobs

    _score_metric = staticmethod(flat_accuracy_score)

    def _masks(self, gold, offsets):
        """Transition / start / end masks (1 learned, 0 pinned at zero, -1 forbidden)."""
        classes = self.classes_.tolist()
        K = len(classes)
        trans_mask = np.ones((K, K))
        start_mask = np.ones(K)
        end_mask = np.ones(K)
        if not self.all_possible_transitions:
            trans_mask[:] = 0.0
            for s in range(len(offsets) - 1):
                g = gold[offsets[s]:offsets[s + 1]]
                trans_mask[g[:-1], g[1:]] = 1.0
        rules = self.forbidden_transitions
        if rules is None:
            pairs = []
        elif isinstance(rules, str):
            pairs = _forbidden_pairs(rules, classes)
        else:
            pairs = list(rules)
        index = {c: i for i, c in enumerate(classes)}
        for pair in pairs:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError(
                    f"forbidden_transitions must hold (from_label, to_label) pairs; got {pair!r}."
                )
            a, b = pair
            for label in (a, b):
                if label is not None and label not in index:
                    raise ValueError(
                        f"forbidden_transitions names label {label!r}, which is not in the "
                        f"training labels {classes}."
                    )
            if a is None and b is None:
                raise ValueError("forbidden_transitions: (None, None) is not a transition.")
            if a is None:
                start_mask[index[b]] = -1.0
            elif b is None:
                end_mask[index[a]] = -1.0
            else:
                trans_mask[index[a], index[b]] = -1.0
        for s in range(len(offsets) - 1):
            g = gold[offsets[s]:offsets[s + 1]]
            if len(g) == 0:
                continue
            where = None
            if start_mask[g[0]] < 0:
                where = f"starts with {classes[g[0]]!r}"
            elif end_mask[g[-1]] < 0:
                where = f"ends with {classes[g[-1]]!r}"
            else:
                bad = np.flatnonzero(trans_mask[g[:-1], g[1:]] < 0)
                if len(bad):
                    t = int(bad[0]) + 1
                    where = (f"has {classes[g[t]]!r} after {classes[g[t - 1]]!r} at "
                             f"position {t}")
            if where is not None:
                raise ValueError(
                    f"gold sequence y[{s}] {where}, a transition that forbidden_transitions="
                    f"{rules!r} forbids."
                )
        return trans_mask, start_mask, end_mask

    # --- fit ----------------------------------------------------------------

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the tagger.

        Parameters
        ----------
        X : list of sequences
            Each a list of feature dicts or a sparse matrix (n_tokens, n_features).
            Feature values must be finite and at most 1e10 in magnitude (a
            ValueError names the sequence, token and feature otherwise):
            rescale larger ones.
        y : list of label sequences
            ``y[s]`` has one label per token of ``X[s]``.

        Returns
        -------
        self : LinearChainCRF
            The fitted tagger.
        """
        solver = _AUTO_SOLVER[self.loss] if self.solver == "auto" else self.solver
        if solver not in _SOLVERS[self.loss]:
            raise ValueError(
                f"solver={self.solver!r} cannot train loss={self.loss!r}; use one of "
                f"{_SOLVERS[self.loss]} (or 'auto')."
            )
        if self.early_stopping and solver not in ("adagrad", "perceptron"):
            raise ValueError(
                f"early_stopping needs an online solver ('adagrad' or 'perceptron'); "
                f"solver={solver!r} (loss={self.loss!r}) trains on every sequence."
            )
        if solver == "bcfw":
            if self.c2 <= 0 or self.c1 != 0:
                raise ValueError(
                    f"solver='bcfw' needs c2 > 0 and c1 = 0 (it minimizes the sum of the hinge "
                    f"losses plus c2 * ||w||^2); got c1={self.c1!r}, c2={self.c2!r}."
                )
            if self.warm_start:
                raise ValueError(
                    "warm_start=True is not supported by solver='bcfw' (its dual state is not "
                    "kept between fits); use solver='adagrad' or warm_start=False."
                )
        X = check_sequence_list(X)
        if len(X) == 0:
            raise ValueError("X is empty: at least one training sequence is needed.")
        warm = self.warm_start and hasattr(self, "classes_")
        matrix, lengths = self._features(X, fit=not warm)
        _check_feature_scale(
            matrix, lengths, None if self.vectorizer_ is None else self.vectorizer_.feature_names_
        )
        gold = self._labels(y, lengths,
                            learn_classes=not (self.warm_start and hasattr(self, "classes_")))
        if not warm:
            self.n_features_in_ = matrix.shape[1]
            self._attr_rank = frequency_rank(matrix)
        data = ChainData(matrix, lengths, gold, self._attr_rank)
        rng = check_random_state(self.random_state)
        train_ids, valid_ids = np.arange(data.n_sequences), None
        seen = data
        if self.early_stopping:
            train_ids, valid_ids = validation_split(train_ids, self.validation_fraction, rng,
                                                    "sequences")
            # The model's (feature, label) pairs come from the training
            # sequences only: held-out ones must not decide which weights exist.
            rows = np.concatenate([np.arange(data.offsets[s], data.offsets[s + 1])
                                   for s in train_ids])
            seen = ChainData(matrix[rows], lengths[train_ids], gold[rows], self._attr_rank)
        trans_mask, start_mask, end_mask = self._masks(gold, data.offsets)
        if warm:
            model = ChainModel(self._attr_ptr, self._pair_label, trans_mask, start_mask, end_mask)
            w0 = self._params.copy()
            w0[model.n_pairs:] *= model.learned[model.n_pairs:]
        else:
            attr_ptr, pair_label = seen.pairs(len(self.classes_), self.all_possible_states)
            model = ChainModel(attr_ptr, pair_label, trans_mask, start_mask, end_mask)
            w0 = np.zeros(model.n_params)
        self.duality_gap_ = None
        self.validation_scores_ = None
        if solver == "lbfgs":
            w = self._fit_lbfgs(model, data, w0, np.abs(matrix.data).max(initial=0.0))
        elif solver == "bcfw":
            w = self._fit_bcfw(model, data)
        else:
            w = self._fit_online(solver, model, data, w0, train_ids, valid_ids, rng)
        self._store(model, w, data.n_features)
        return self

    def _store(self, model, w, n_features):
        """The fitted attributes of the weights ``w`` under ``model``."""
        self._params = w
        self._attr_ptr = model.attr_ptr
        self._pair_label = model.pair_label
        self._trans_mask = model.trans_mask
        self._start_mask = model.start_mask
        self._end_mask = model.end_mask
        _, self.transition_, self.start_transition_, self.end_transition_ = model.split(w)
        order = np.empty_like(self._attr_rank)
        order[self._attr_rank] = np.arange(len(order))
        cols = np.repeat(order, np.diff(model.attr_ptr))
        self.coef_ = sp.csr_matrix((w[:model.n_pairs], (model.pair_label, cols)),
                                   shape=(len(self.classes_), n_features))

    def _sparsemap_options(self):
        """The active set's settings, in training and :meth:`predict_sparse`."""
        max_iter = self.sparsemap_max_iter
        if max_iter is None:
            return SPARSEMAP_OPTIONS
        return SPARSEMAP_OPTIONS._replace(max_iter=int(max_iter))

    def _warn_sparsemap(self, n_solves, n_failed, each, consequence=""):
        """One warning for the training's SparseMAP solves that stopped at their limit."""
        warn(
            f"LinearChainCRF (loss={self.loss!r}): {n_failed} of {n_solves} SparseMAP "
            f"solves in training ({each}) did not converge in "
            f"{_iteration_limit(self.sparsemap_max_iter, 'sparsemap_max_iter')} "
            "active-set iterations, so their losses and "
            f"gradients are approximate{consequence}. Increase sparsemap_max_iter.",
            ConvergenceWarning,
        )

    def _fit_lbfgs(self, model, data, w0, feature_scale):
        kind = LOSS_KINDS[self.loss]
        c2 = float(self.c2)
        options = self._sparsemap_options()
        n_failed = [0, 0]  # evaluations, and SparseMAP solves that did not converge

        def fun(w):
            f, g, failed = runner.loss_and_grad(kind, model, data, w, options)
            n_failed[0] += 1
            n_failed[1] += failed
            if c2 > 0:
                f += c2 * float(w @ w)
                g += (2.0 * c2) * w
            g *= model.learned
            return f, g

        progress = Progress(self, self.verbose, "iteration", self.max_iter)

        def callback(info):
            progress.update(info.iteration, [("objective", info.fun),
                                             ("grad_norm", info.grad_norm)])

        tol = float(self.tol or 0.0)
        with ChainRunner(self._n_threads()) as runner:
            result = minimize_lbfgs(
                fun, w0, c1=float(self.c1), l1_mask=model.learned > 0, max_iter=self.max_iter,
                epsilon=tol, delta=tol, callback=callback,
            )
        self.n_iter_ = result.n_iter
        self.objective_ = float(result.fun)
        who = f"LinearChainCRF (solver='lbfgs'{', with c1 > 0: OWL-QN' if self.c1 else ''})"
        # The callback never stops the run: only a failed line search ends
        # it before max_iter without converging.
        line_search_failed = not result.converged and result.n_iter < self.max_iter
        if n_failed[1] and "sparsemap" in self.loss:
            # Approximate gradients explain a failed line search: one warning.
            self._warn_sparsemap(
                n_failed[0] * data.n_sequences, n_failed[1],
                "one per sequence and evaluation of the objective",
                f", and L-BFGS stopped after {result.n_iter} iterations, where its line search "
                "found no step that lowers the objective" if line_search_failed else "")
        elif line_search_failed:
            relative_gradient = np.linalg.norm(result.grad) / max(1.0, np.linalg.norm(result.x))
            _warn_line_search(who, result.n_iter, feature_scale, float(relative_gradient))
        if not result.converged and not line_search_failed and self.tol:
            warn_max_iter(who, self.max_iter, "iteration",
                          f"the gradient norm fell below tol={self.tol} (relative to the "
                          "weights) or the objective's relative decrease over 10 iterations "
                          "below tol")
        return result.x

    def _fit_online(self, solver, model, data, w0, train_ids, valid_ids, rng):
        """AdaGrad or the averaged perceptron (``learners.minimize_online``)."""
        n = train_ids.shape[0]
        perceptron = solver == "perceptron"
        sparsemap_loss = "sparsemap" in self.loss
        counted = "sparsemap_unconverged" if sparsemap_loss else (
            "mistakes" if self.loss in ("hinge", "perceptron") else None)
        progress = Progress(self, self.verbose, "epoch", self.max_iter)

        def callback(info):
            fields = [("loss", info.loss)]
            if counted:
                fields.append((counted, int(info.stats[1])))
            if info.validation_score is not None:
                fields.append(("val_acc", info.validation_score))
            progress.update(info.epoch, fields)

        # CRFsuite's penalties are added to the sum of the losses, the
        # learner's to their mean.
        result = minimize_online(
            ChainProblem(LOSS_KINDS[self.loss], model, data, self._sparsemap_options(),
                         self._n_threads()), w0,
            train_ids, method=solver, learning_rate=self.learning_rate,
            l1=0.0 if perceptron else self.c1 / n, l2=0.0 if perceptron else 2.0 * self.c2 / n,
            batch_size=1 if perceptron else self.batch_size, max_iter=self.max_iter,
            tol=self.tol if self.tol else None, n_iter_no_change=self.n_iter_no_change,
            average=perceptron, validation_ids=valid_ids, random_state=rng,
            n_parts=_BATCH_PARTS, n_threads=self._n_threads(), callback=callback,
        )
        self.n_iter_ = result.n_epochs
        self.validation_scores_ = (list(result.validation_scores) if self.early_stopping
                                   else None)
        w = result.coef
        self.objective_ = float(result.stats[-1][0])
        if not perceptron:
            self.objective_ += self.c2 * float(w @ w) + self.c1 * float(np.abs(w).sum())
        if self.tol and not result.converged:
            rule = (f"the held-out accuracy stopped rising by more than tol={self.tol}"
                    if self.early_stopping else
                    f"the mean training loss per sequence stopped falling by more than "
                    f"tol={self.tol}")
            warn_max_iter(f"LinearChainCRF (solver={solver!r})", self.max_iter, "epoch",
                          f"{rule} ({self.n_iter_no_change} epochs in a row)")
        n_failed = int(sum(stats[1] for stats in result.stats)) if sparsemap_loss else 0
        if n_failed:
            self._warn_sparsemap(n * result.n_epochs, n_failed, "one per sequence and epoch")
        return w

    def _fit_bcfw(self, model, data):
        """Block-coordinate Frank-Wolfe on the structured SVM (``learners.minimize_bcfw``).

        The tagger's objective is ``sum_i hinge_i(w) + c2 ||w||^2``; the
        learner's is ``||w||^2 / 2 + C sum_i hinge_i(w)``, the same divided by
        ``2 c2`` when ``C = 1 / (2 c2)``.
        """
        C = 1.0 / (2.0 * self.c2)
        progress = Progress(self, self.verbose, "pass", self.max_iter)

        def callback(info):
            # The objective and the gap only on the passes that compute them.
            fields = [("dual", info.dual / C)]
            if info.gap is not None:
                fields += [("objective", info.gap.primal / C), ("duality_gap", info.gap.gap / C)]
            fields.append(("mistakes", int(info.stats[1])))
            progress.update(info.n_iter, fields, force=info.gap is not None)

        result = minimize_bcfw(
            ChainBCFWProblem(model, data, self._n_threads()), C=C, max_iter=self.max_iter,
            tol=float(self.tol or 0.0), gap_every=_BCFW_GAP_EVERY,
            random_state=self.random_state, callback=callback,
        )
        self.n_iter_ = result.n_iter
        # The gap is always computed after the last pass.
        self.objective_ = result.gap.primal / C
        self.duality_gap_ = result.gap.gap / C
        if self.tol and not result.converged:
            warn_max_iter("LinearChainCRF (solver='bcfw')", self.max_iter, "pass",
                          f"the duality gap fell to tol={self.tol} times the objective (it "
                          f"is {self.duality_gap_ / abs(self.objective_):.3g} times it)")
        return result.coef

    # --- prediction ---------------------------------------------------------

    def _predict_data(self, X):
        check_is_fitted(self, "classes_")
        matrix, lengths = self._features(X, fit=False)
        return ChainData(matrix, lengths, attr_rank=self._attr_rank), lengths

    def _model(self):
        return ChainModel(self._attr_ptr, self._pair_label, self._trans_mask,
                          self._start_mask, self._end_mask)

    def _runner(self):
        return ChainRunner(self._n_threads())

    def predict(self, X):
        """Most likely label sequence (Viterbi) of each sequence.

        Parameters
        ----------
        X : list of sequences
            As in :meth:`fit`. Unseen features are ignored.

        Returns
        -------
        y_pred : list of lists
            One list of labels per sequence (``[]`` for an empty one).
        """
        data, lengths = self._predict_data(X)
        with self._runner() as runner:
            labels = runner.decode(self._model(), data, self._params, marginals=False)
        # Indexing the array of classes, not a loop over NumPy integers.
        flat = self.classes_[labels].tolist()
        bounds = data.offsets.tolist()
        return [flat[a:b] for a, b in zip(bounds[:-1], bounds[1:])]

    def predict_marginals(self, X):
        """Posterior probability of each label at each token (forward-backward).

        Parameters
        ----------
        X : list of sequences
            As in :meth:`fit`.

        Returns
        -------
        marginals : list of ndarray of shape (n_tokens, n_classes)
            Columns in :attr:`classes_` order; rows sum to 1.
        """
        data, lengths = self._predict_data(X)
        with self._runner() as runner:
            mu = runner.decode(self._model(), data, self._params, marginals=True)
        return [mu[data.offsets[s]:data.offsets[s + 1]].copy() for s in range(len(lengths))]

    def predict_sparse(self, X, *, max_iter=None, tol=None):
        """SparseMAP distribution over label sequences, per sequence.

        SparseMAP (thesis ch. 4) returns the quadratic-regularized posterior:
        a convex combination of a few label sequences, whose unary marginals
        are the closest point of the marginal polytope to the scores.

        Parameters
        ----------
        X : list of sequences
            As in :meth:`fit`.
        max_iter : int or None, default=None
            Active-set iterations per sequence; one ``ConvergenceWarning``
            says on how many sequences they did not suffice. None:
            ``sparsemap_max_iter`` (whose None is the default of
            :class:`~sksparse_struct.inference.SparseMAPOptions`,
            ``max(1000, 10 n)`` for ``n`` positions).
        tol : float or None, default=None
            Relative duality-gap tolerance. None: that of
            :class:`~sksparse_struct.inference.SparseMAPOptions`, 1e-9.

        Returns
        -------
        supports : list of lists of (labels, probability)
            For each sequence, its support: label lists with their
            probabilities, most probable first (``[([], 1.0)]`` for an empty
            sequence).
        """
        data, lengths = self._predict_data(X)
        model = self._model()
        _, trans, start, end = model.split(self._params)
        with self._runner() as runner:
            U = runner.unary(model, data, self._params)
        classes = self.classes_.tolist()
        out = []
        structure = Sequence()
        n_solves = n_failed = 0
        defaults = self._sparsemap_options()
        max_iter = defaults.max_iter if max_iter is None else max_iter
        tol = defaults.tol if tol is None else tol
        with warnings.catch_warnings():
            # One warning for all the sequences, below, rather than one each.
            warnings.simplefilter("ignore", ConvergenceWarning)
            for s in range(len(lengths)):
                u = U[data.offsets[s]:data.offsets[s + 1]]
                if len(u) == 0:
                    out.append([([], 1.0)])
                    continue
                res = sparsemap(structure, u, trans, start, end, max_iter=max_iter, tol=tol)
                n_solves += 1
                n_failed += not res.converged
                # res.support is already sorted, most probable first.
                out.append([([classes[i] for i in labels], p) for labels, p in res.support])
        if n_failed:
            warn(f"LinearChainCRF.predict_sparse: SparseMAP did not converge in "
                 f"{_iteration_limit(max_iter, 'max_iter')} "
                 f"iterations on {n_failed} of {n_solves} sequences (their "
                 "distributions are valid but not the optimal ones); increase max_iter.",
                 ConvergenceWarning)
        return out

    # --- readable views -----------------------------------------------------

    def _feature_names(self):
        if self.vectorizer_ is not None:
            return list(self.vectorizer_.feature_names_)
        return [f"x{j}" for j in range(self.n_features_in_)]

    @property
    def state_features_(self):
        """``{(feature, label): weight}`` for every nonzero unary weight (like crfsuite's)."""
        check_is_fitted(self, "classes_")
        names = self._feature_names()
        classes = self.classes_.tolist()
        coo = self.coef_.tocoo()
        return {
            (names[j], classes[i]): float(v)
            for i, j, v in zip(coo.row, coo.col, coo.data) if v != 0.0
        }

    @property
    def transition_features_(self):
        """``{(from_label, to_label): weight}`` for every allowed nonzero transition."""
        check_is_fitted(self, "classes_")
        classes = self.classes_.tolist()
        K = len(classes)
        return {
            (classes[a], classes[b]): float(self.transition_[a, b])
            for a in range(K) for b in range(K)
            if np.isfinite(self.transition_[a, b]) and self.transition_[a, b] != 0.0
        }


def _iteration_limit(max_iter, name):
    """The active set's iteration limit ``max_iter`` (parameter ``name``), in words."""
    if max_iter is None:
        return "the default max(1000, 10 * n_positions)"
    return f"{name}={max_iter}"

