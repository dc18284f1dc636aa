"""The argument miner trained with a SparseMAP loss over its factor graphs (LP-SparseMAP)."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

from ..inference import lp_sparsemap
from ..learners import minimize_online
from ..learners._online_fast import push_all
from ..losses import factor_graph_loss
from ..metrics import argument_f1_score
from ..utils._estimator import validation_split
from ..utils._reporting import Progress
from ..utils._sklearn_compat import Interval, StrOptions, fit_context
from ._miner import StructuredSVMArgumentMiner
from ._problem import ArgumentProblem, marginals_from_structure, structure_from_marginals

__all__ = ["SparseMAPArgumentMiner"]


class _SparseMAPProblem:
    """The (margin) SparseMAP losses of the documents, as an online problem.

    ``loss_i`` is the loss of document ``i`` over its factor graph
    (``losses.factor_graph_loss``), with the structured SVM's weighted
    Hamming cost for ``"margin_sparsemap"``; each document's LP-SparseMAP
    solver starts from its previous solution. For
    ``learners.minimize_online``, it writes the gradient of a batch's
    losses with respect to the weights.
    """

    def __init__(self, problem, loss, solver_options, scorer=None):
        self.problem = problem
        self.loss = loss
        self.solver_options = solver_options
        self.scorer = scorer
        self.n_params = problem.n_params
        self._warm = [None] * problem.n_samples
        self._gold = []
        self._gold_features = []  # psi(x_i, y_i), constant through training
        self._costs = []
        for i in range(problem.n_samples):
            graph, target = problem.graphs[i], problem.targets[i]
            # The gold structure in the graph's layout (0/1 variables and factor marginals).
            self._gold.append(marginals_from_structure(graph, problem.layout,
                                                       *problem._unpack(i, problem.gold(i))))
            self._gold_features.append(problem.joint_feature(i, problem.gold(i)))
            # The SVM's cost: a wrong label 1 (two variables off by one: 1/2
            # each), a missed gold link link_cost, a spurious link 1.
            cost = np.zeros(graph.graph.n_variables)
            cost[graph.prop_vars.ravel()] = 0.5
            cost[graph.link_vars] = np.where(target.links == 1, problem.link_cost, 1.0)
            self._costs.append(cost)

    def _document(self, coef, i):
        """The joint features of document ``i``'s LP-SparseMAP solution, and (loss, unconverged
        solves, AD3 iterations)."""
        problem = self.problem
        theta, phi = problem.scores(coef, i, cost_augmented=False)
        y_u, y_v = self._gold[i]
        out = factor_graph_loss(
            problem.graphs[i].graph, theta, phi, y_u, y_v, loss=self.loss,
            cost=self._costs[i] if self.loss == "margin_sparsemap" else None,
            warm_start=self._warm[i], **self.solver_options)
        self._warm[i] = out.result
        m_hat = structure_from_marginals(problem.graphs[i], problem.layout,
                                         out.result.variables, out.result.factors)
        return problem.joint_feature(i, m_hat), np.array(
            [out.value, float(not out.result.converged), float(out.result.n_iter)])

    # -- the online problem (learners.minimize_online) ------------------------

    def sample_costs(self):
        return np.array([float(g.graph.n_variables + g.graph.n_factors)
                         for g in self.problem.graphs])

    def score(self, w, sample_ids):
        """The miner's metric of the weights ``w`` on the documents ``sample_ids``."""
        return self.scorer(w, sample_ids)

    def batch_gradient(self, w, sample_ids, gradient, part, step):
        col = 2 * part
        touched = gradient.touched[part]
        n = 0
        stats = np.zeros(3)
        for i in sample_ids:
            (idx_hat, val_hat), doc_stats = self._document(w, i)
            idx_gold, val_gold = self._gold_features[i]
            n = push_all(idx_hat, val_hat, 1.0, gradient.values, col, touched, n, float(step))
            n = push_all(idx_gold, val_gold, -1.0, gradient.values, col, touched, n,
                         float(step))
            stats += doc_stats
        gradient.n_touched[part] = n
        return stats


class SparseMAPArgumentMiner(StructuredSVMArgumentMiner):
    """Argument mining trained with a SparseMAP loss over the factor graphs (LP-SparseMAP).

    The model of :class:`StructuredSVMArgumentMiner` (proposition labels and
    support links decoded jointly over a factor graph with compatibility
    factors, second-order factors and hard constraints), with the
    structured SVM's hinge replaced by the SparseMAP loss over the factor
    graph's local polytope (Niculae & Martins, ICML 2020;
    :func:`~sksparse_struct.losses.factor_graph_loss`):

        loss(w; x, y) = max_{(u, v) in L} [theta . u + phi . v - 1/2 ||u||^2 + cost(u)]
                        - [theta . y_u + phi . y_v - 1/2 ||y_u||^2],

    with ``cost`` the SVM's weighted Hamming cost for ``"margin_sparsemap"``
    (none for ``"sparsemap"``). The maximiser, solved by
    :func:`~sksparse_struct.inference.lp_sparsemap`, is a sparse set of
    marginals instead of the LP's vertex: where the scores hesitate,
    several structures share the mass, and the gradient moves the weights
    of all of them. The objective ``||w||^2 / 2 + C sum loss`` (the SVM's)
    is minimised by mini-batch AdaGrad with averaging
    (:func:`~sksparse_struct.learners.minimize_online`; the losses are not
    smooth in the factor scores, so a line-search method stalls on them);
    every document's solver starts from its previous solution.

    Prediction is the same as :class:`StructuredSVMArgumentMiner`'s
    (``decode``), and so are the parameters they share;
    :meth:`predict_marginals` returns the LP-SparseMAP marginals, the
    sparse posteriors the model was trained on.

    Parameters
    ----------
    constraints, compat_features, second_order, strict_labels, link_cost, decode, \
max_bb_nodes, time_limit, verbose :
        As in :class:`StructuredSVMArgumentMiner`.
    C : float, default=0.1
        Weight of the summed losses against the regulariser ``||w||^2 / 2``
        (AdaGrad minimises the same objective divided by ``C n``: the mean
        loss plus ``||w||^2 / (2 C n)`` for ``n`` documents).
    loss : {"margin_sparsemap", "sparsemap"}, default="margin_sparsemap"
        With or without the cost inside the maximisation.
    max_iter : int, default=30
        Epochs (passes over the training documents).
    learning_rate : float, default=0.1
        AdaGrad's step size.
    batch_size : int, default=8
        Documents per update.
    tol : float or None, default=1e-4
        Stop when ``n_iter_no_change`` successive epochs fail to bring the
        mean training loss below the best one minus ``tol`` (with
        ``early_stopping``: the validation score above the best one plus
        ``tol``); None runs ``max_iter`` epochs.
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the training documents, score
        the predictions on them (:func:`~sksparse_struct.metrics.argument_f1_score`,
        with this estimator's ``decode``) after every epoch, stop on that
        score and keep the weights of the best epoch.
    validation_fraction : float, default=0.1
        Fraction of the documents held out when ``early_stopping``
        (rounded up).
    n_iter_no_change : int, default=3
        Epochs without improvement before stopping.
    lp_max_iter : int, default=500
        AD³ iterations per LP-SparseMAP solve in training (and per LP solve
        at prediction, as in :class:`StructuredSVMArgumentMiner`).
    lp_tol : float, default=1e-5
        AD³'s residual threshold, in training and prediction.
    lp_gap_tol : float or None, default=1e-2
        Training only: an LP-SparseMAP solve also stops when its dual bound
        is within this fraction of its objective (checked every 50
        iterations), as :class:`StructuredSVMArgumentMiner`'s training
        solves do; None solves to ``lp_tol``.
    n_jobs : int, default=None
        Threads solving the documents of a mini-batch (two parts per batch,
        so at most two are used in training), and decoding in ``predict``,
        ``predict_marginals`` and ``score``. The results do not depend on
        it.
    random_state : int, RandomState or None, default=None
        Order of the documents in each epoch.

    Attributes
    ----------
    classes_ : ndarray
        The proposition labels, sorted (as in ``y``).
    coef_ : ndarray of shape (n_params,)
        The averaged weights; :attr:`layout_` says where each group sits.
    layout_ : ParameterLayout
    link_cost_ : float
        The cost of a missed link used in training.
    n_iter_ : int
        Epochs run.
    loss_curve_ : list of float
        Mean training loss of each epoch (at the weights of each step).
    n_lp_not_converged_ : list of int
        Per epoch, the LP-SparseMAP solves that stopped at ``lp_max_iter``
        before ``lp_tol``.
    validation_scores_ : list of float
        The held-out score after each epoch (``early_stopping`` only;
        empty otherwise).
    best_validation_score_ : float or None
        The best of them (None without ``early_stopping``).

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sksparse_struct import SparseMAPArgumentMiner
    >>> from sksparse_struct.datasets import load_cdcp_sample
    >>> from sksparse_struct.feature_extraction import ArgumentFeatures
    >>> X_train, y_train, X_test, y_test = load_cdcp_sample()
    >>> model = make_pipeline(ArgumentFeatures(),
    ...                       SparseMAPArgumentMiner(max_iter=5, random_state=0))
    >>> model.fit(X_train, y_train)  # doctest: +ELLIPSIS
    Pipeline(...)
    >>> 0 <= model.score(X_test, y_test) <= 1
    True
    """

    _parameter_constraints: dict = {
        **StructuredSVMArgumentMiner._parameter_constraints,
        "loss": [StrOptions({"sparsemap", "margin_sparsemap"})],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "tol": [None, Interval(Real, 0, None, closed="neither")],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        constraints="cdcp_strict",
        *,
        compat_features=True,
        second_order=("coparent", "sibling"),
        strict_labels=None,
        C=0.1,
        loss="margin_sparsemap",
        link_cost="balanced",
        max_iter=30,
        learning_rate=0.1,
        batch_size=8,
        tol=1e-4,
        early_stopping=False,
        validation_fraction=0.1,
        n_iter_no_change=3,
        decode="exact",
        max_bb_nodes=100,
        time_limit=60.0,
        lp_max_iter=500,
        lp_tol=1e-5,
        lp_gap_tol=1e-2,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.constraints = constraints
        self.compat_features = compat_features
        self.second_order = second_order
        self.strict_labels = strict_labels
        self.C = C
        self.loss = loss
        self.link_cost = link_cost
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.tol = tol
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.decode = decode
        self.max_bb_nodes = max_bb_nodes
        self.time_limit = time_limit
        self.lp_max_iter = lp_max_iter
        self.lp_tol = lp_tol
        self.lp_gap_tol = lp_gap_tol
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def predict_marginals(self, X):
        """The LP-SparseMAP marginals of each document: sparse posteriors of labels and links.

        Parameters
        ----------
        X : list of DocumentFeatures

        Returns
        -------
        marginals : list of (prop, links)
            ``prop`` (n_props, n_classes): each proposition's label
            marginals (columns in the order of ``classes_``), most of them
            exactly 0 or 1; ``links`` (n_links,): the probability that each
            candidate link is on, the candidates in the order of
            ``link_pairs``.
        """
        return super().predict_marginals(X)

    def _marginals_one(self, doc):
        graph = self._graph(doc)
        result = lp_sparsemap(graph.graph, *self._scores(doc, graph), **self._ad3_options())
        return result.variables[graph.prop_vars], result.variables[graph.link_vars]

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn the weights from documents and their gold structures.

        Parameters
        ----------
        X : list of DocumentFeatures
            Documents transformed by
            :class:`~sksparse_struct.feature_extraction.ArgumentFeatures`.
        y : list of (labels, links)
            As in :meth:`StructuredSVMArgumentMiner.fit`.

        Returns
        -------
        self : SparseMAPArgumentMiner
        """
        docs, targets, graphs = self._prepare_fit(X, y)
        problem = ArgumentProblem(docs, targets, graphs, self.layout_, self.link_cost_,
                                  self._ad3_options(), n_jobs=self.n_jobs)
        n_threads = self._n_threads()
        rng = check_random_state(self.random_state)
        n = len(docs)
        train_ids, val_ids = np.arange(n), None
        if self.early_stopping:
            train_ids, val_ids = validation_split(train_ids, self.validation_fraction, rng,
                                                  what="documents")

        def scorer(coef, ids):
            # The held-out documents decoded as predict does, with the
            # weights of the epoch.
            pred = self._map(lambda doc: self._decode_one(doc, coef)[:2],
                             [docs[i] for i in ids])
            return argument_f1_score([y[i] for i in ids], pred)

        losses = _SparseMAPProblem(problem, self.loss, self._training_ad3_options(), scorer)
        progress = Progress(self, self.verbose, "epoch", self.max_iter)
        self.n_lp_not_converged_ = []

        def callback(info):
            self.n_lp_not_converged_.append(int(info.stats[1]))
            progress.update(info.epoch, [("loss", info.loss),
                                         ("lp_not_converged", int(info.stats[1])),
                                         ("ad3_iterations", info.stats[2] / info.n_samples)])

        n_train = train_ids.shape[0]
        result = minimize_online(
            losses, np.zeros(self.layout_.n_params), train_ids, method="adagrad",
            learning_rate=self.learning_rate, l2=1.0 / (self.C * n_train),
            batch_size=min(self.batch_size, n_train), max_iter=self.max_iter, tol=self.tol,
            n_iter_no_change=self.n_iter_no_change, validation_ids=val_ids, average=True,
            random_state=rng, n_parts=2, n_threads=min(n_threads, 2), callback=callback)
        self.coef_ = result.coef
        self.n_iter_ = result.n_epochs
        self.loss_curve_ = list(result.loss_curve)
        self.validation_scores_ = list(result.validation_scores)
        self.best_validation_score_ = result.best_validation_score
        return self
