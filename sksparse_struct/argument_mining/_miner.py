"""Joint prediction of proposition types and support links with a structured SVM."""

import time
from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ..feature_extraction import DocumentFeatures
from ..inference import ad3, ad3_map, milp_map
from ..learners import minimize_bcfw
from ..metrics import argument_f1_score
from ..utils._estimator import StructuredEstimatorMixin
from ..utils._reporting import Progress, warn
from ..utils._sklearn_compat import Interval, StrOptions, fit_context
from ._graph import build_argument_graph, constraint_violations, pair_links, round_to_constraints
from ._problem import (
    SECOND_ORDER_TYPES,
    ArgumentProblem,
    DocumentTarget,
    ParameterLayout,
    document_potentials,
    graph_scores,
)

__all__ = ["CDCP_OBJECTIVITY", "StructuredSVMArgumentMiner"]

# Most objective first: a link whose source is strictly less objective than
# its target is illegal under ``constraints="cdcp_strict"``.
CDCP_OBJECTIVITY = ("reference", "testimony", "fact", "value", "policy")
_CONSTRAINTS = ("none", "cdcp", "cdcp_strict", "tree", "tree_strict")
_DECODERS = ("exact", "lp", "milp")


def _check_documents(X, name="X"):
    if isinstance(X, DocumentFeatures) or not hasattr(X, "__len__"):
        raise TypeError(f"{name} must be a list of documents (DocumentFeatures, the output of "
                        f"ArgumentFeatures.transform); got {type(X).__name__}.")
    docs = list(X)
    if not docs:
        raise ValueError(f"{name} is empty: no documents.")
    for d, doc in enumerate(docs):
        if not isinstance(doc, DocumentFeatures):
            raise TypeError(
                f"document {d} of {name} is a {type(doc).__name__}, not DocumentFeatures: "
                "transform raw documents with ArgumentFeatures first (e.g. in a Pipeline).")
        n = doc.props.shape[0]
        k = doc.link_pairs.shape[0]
        if n == 0:
            raise ValueError(f"document {d} of {name} has no propositions.")
        checks = ((doc.links.shape[0], k, "link feature rows"),
                  (doc.compat.shape[0], k, "compatibility feature rows"),
                  (doc.second_order.shape[0], doc.triples.shape[0], "second-order feature rows"))
        for got, want, what in checks:
            if got != want:
                raise ValueError(f"document {d} of {name}: {got} {what}, expected {want}.")
        if k and (doc.link_pairs.min() < 0 or doc.link_pairs.max() >= n):
            raise ValueError(f"document {d} of {name}: a candidate link names a proposition "
                             f"outside 0..{n - 1}.")
        for what, values in (("proposition", doc.props.data), ("link", doc.links.data),
                             ("compatibility", doc.compat), ("second-order", doc.second_order)):
            if not np.all(np.isfinite(values)):
                raise ValueError(f"document {d} of {name}: {what} features contain NaN or "
                                 "infinity.")
    return docs


def _label_kind(label):
    """``"str"`` or ``"int"`` for a proposition label, else None."""
    if isinstance(label, (str, np.str_)):
        return "str"
    if isinstance(label, (Integral, np.integer)) and not isinstance(label, (bool, np.bool_)):
        return "int"
    return None


def _sorted_labels(labels, where):
    """The distinct labels, sorted, as an array: object array of str, or int64.

    ``labels`` is an iterable of ``(label, place)``; ``where`` names the
    argument in the messages.
    """
    kinds, seen = {}, set()
    for label, place in labels:
        kind = _label_kind(label)
        if kind is None:
            raise ValueError(f"{place}: label {label!r} is a {type(label).__name__}; labels "
                             "must be strings or integers.")
        kinds.setdefault(kind, (label, place))
        seen.add(str(label) if kind == "str" else int(label))
    if len(kinds) > 1:
        (a, pa), (b, pb) = kinds["str"], kinds["int"]
        raise ValueError(f"{where} mixes string and integer labels ({a!r} at {pa}, {b!r} at "
                         f"{pb}): use one type.")
    if kinds.get("int"):
        return np.array(sorted(seen), dtype=np.int64)
    return np.array(sorted(seen), dtype=object)


def _label_classes(y):
    """``classes_`` from the targets of ``fit``."""
    if not hasattr(y, "__len__"):
        raise TypeError("y must be a list of (labels, links) pairs.")

    def labels():
        for d, target in enumerate(y):
            try:
                labels_d = target[0]
                iter(labels_d)
            except (TypeError, IndexError, KeyError):
                raise ValueError(f"target {d} must be a (labels, links) pair.") from None
            if isinstance(labels_d, str):
                raise ValueError(f"target {d}: the labels must be a sequence of labels, one per "
                                 f"proposition, not the string {labels_d!r}.")
            for a, label in enumerate(labels_d):
                yield label, f"document {d}, proposition {a}"

    return _sorted_labels(labels(), "y")


def _link_index(value):
    """A link end as an int, or None when ``value`` is not a whole number."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (Integral, np.integer)):
        return int(value)
    if isinstance(value, (Real, np.floating)) and np.isfinite(value) and \
            float(value).is_integer():
        return int(value)
    return None


class StructuredSVMArgumentMiner(StructuredEstimatorMixin, BaseEstimator):
    """Argument mining with a structured SVM over expressive factor graphs.

    Predicts, jointly for all the propositions of a document, the type of
    every proposition (e.g. fact, value, policy) and which propositions
    support which (directed links), as in Niculae, Park and Cardie (ACL
    2017). A document is a factor graph over one multi-state variable per
    proposition and one binary variable per candidate link:

    - unary factors score a proposition's label and a link's state from
      their features;
    - a *compatibility* factor per candidate link scores the triple (source
      label, target label, link state), as one shared table or as a linear
      function of the link's compatibility features (``compat_features``);
    - *second-order* factors score pairs of links that share a proposition:
      co-parents ``a -> b <- c``, grandparents ``a -> b -> c``, siblings
      ``a <- b -> c`` (``second_order``);
    - hard *constraints* restrict the link structure (below).

    The weights are learnt by a structured SVM (block-coordinate
    Frank-Wolfe, :func:`~sksparse_struct.learners.minimize_bcfw`) whose
    loss-augmented inference is the LP relaxation of the factor graph,
    solved by AD³ (:func:`~sksparse_struct.inference.ad3`); the cost is a
    weighted Hamming cost in which missing a gold link costs ``link_cost``.
    Prediction decodes with the averaged weights.

    Training is multi-plane BCFW (``minimize_bcfw`` with ``cache_size=8``):
    each document keeps its last 8 distinct LP solutions, and a visit
    decodes the document only when the best of them falls behind (block gap
    under half that of its last decoding, or 10 visits without decoding);
    the other visits are cheap steps towards the best cached solution. The
    LP solves of training stop at a loose duality gap (``lp_gap_tol``): the
    learner only needs good, not optimal, decodings. The duality gap, after
    the last pass only (``objective_``, ``duality_gaps_``), comes from tight
    solves, bounded from above by AD³'s dual: exact to about 1e-7, never an
    underestimate.

    Parameters
    ----------
    constraints : {"none", "cdcp", "cdcp_strict", "tree", "tree_strict"}, \
            default="cdcp_strict"
        ``"cdcp"``: links are antisymmetric (never both ``a -> b`` and
        ``b -> a``) and transitive (``a -> b`` and ``b -> c`` imply
        ``a -> c``), as the CDCP corpus annotates them. ``"cdcp_strict"``
        adds that a proposition cannot support a strictly more objective
        one (``strict_labels``). ``"tree"``: in each paragraph, the links
        form a forest (every proposition supports at most one other, no
        cycles), as in the persuasive-essay corpora. ``"tree_strict"`` adds
        that only propositions labelled ``strict_labels`` (default
        ``"Premise"``) may support another. The strict rules forbid the
        illegal configurations of the compatibility factors, which gives the
        same exact MAP as separate implication factors and a tighter LP
        relaxation.
    compat_features : bool, default=True
        Compatibility tables as linear functions of each link's
        compatibility features (bias, adjacency, order); else one shared
        table.
    second_order : tuple of str, default=("coparent", "sibling")
        Second-order factor types among ``"coparent"``, ``"grandparent"``,
        ``"sibling"``; ``()`` for none.
    strict_labels : sequence of labels or label, default=None
        For ``"cdcp_strict"``: the labels from most to least objective
        (default: reference, testimony, fact, value, policy); every label
        seen in ``fit`` must be listed. For ``"tree_strict"``: the label a
        source of a link must have (default ``"Premise"``). Labels are
        strings or integers, as in ``y``.
    C : float, default=0.1
        Weight of the loss against the regulariser ``||w||^2 / 2``.
    link_cost : "balanced" or float, default="balanced"
        Cost of missing a gold link (a wrong label or a spurious link costs
        1). ``"balanced"``: the number of negative candidate links over the
        number of positive ones in the training set.
    max_iter : int, default=50
        Passes over the training documents. On CDCP the test scores after 50
        passes are those after 100 (the paper's setting), within the noise
        of the test split, at half the time; more passes still lower the
        objective and the duality gap.
    decode : {"exact", "lp", "milp"}, default="exact"
        Prediction: exact MAP by branch-and-bound over AD³
        (:func:`~sksparse_struct.inference.ad3_map`), the LP relaxation
        rounded to a structure that satisfies the constraints, or exact MAP
        by HiGHS (:func:`~sksparse_struct.inference.milp_map`). Every
        decoder returns structures that satisfy the hard constraints. The
        LP's rounding: each variable to its nearest integer when that
        satisfies the constraints (always, when the LP is integral); else
        each proposition to its most probable label and the links to a
        feasible set close to their marginals (with ``"tree"``: the maximum
        spanning forest under the scores ``2 u - 1`` of the link marginals
        ``u``, exact; with ``"cdcp"``: links added greedily in decreasing
        ``u`` with the links transitivity implies).
    max_bb_nodes : int, default=100
        With ``decode="exact"``, the branch-and-bound nodes (LP solves) per
        document: when the budget runs out, the best assignment found is
        returned, optimal or not, with a warning (a loopy factor graph can
        need exponentially many nodes, mostly for badly trained weights;
        the paper's decoder stopped at depth 5).
    time_limit : float or None, default=60.0
        With ``decode="exact"`` or ``"milp"``, the seconds of exact decoding
        per document (``None``: no limit). Branch-and-bound gets as many
        nodes as the time of the root LP solve fits into 70% of the time
        left (at most ``max_bb_nodes``); HiGHS, if branch-and-bound found
        no feasible assignment, gets 60% of the time then left (building
        its program takes time too). When
        decoding stops before optimality is proven, the best assignment
        found is kept, or, if there is none, the constraint-respecting
        rounding of the LP relaxation (as ``decode="lp"``), and a warning
        names the documents. A large paragraph (60 propositions and 3,540
        candidate links under ``"cdcp"``) takes seconds per LP solve; small
        documents never reach the limit, so their predictions do not depend
        on the machine's speed.
    lp_max_iter : int, default=200
        AD³ iterations per LP solve. In training, each document's solver
        starts from its state of its previous decoding, so the iterations
        add up over the passes; a larger budget gives the same accuracy on
        CDCP for a longer fit. (A budget of 50 in the early passes, with
        extra cached steps, once lost about 4 points of test average on
        CDCP; that split has a single "reference" proposition, whose F1 of
        0, 67 or 100 alone moves the average by up to 10 points.)
    lp_tol : float, default=1e-5
        AD³'s residual threshold. Looser than AD³'s default (1e-6): the
        solutions of the loss-augmented problems then agree with the LP
        optimum to about 1e-4 of the objective, which the learner
        tolerates, at a fraction of the iterations on fractional LPs.
    lp_gap_tol : float or None, default=1e-2
        Training only: a loss-augmented LP solve also stops when AD³'s dual
        bound is within this fraction of its primal objective (checked every
        50 iterations), so that a decoding is that close to the LP's optimum
        (1% by default) unless ``lp_max_iter`` stops it first. On CDCP this
        takes about 40% off the fit's time at the same dual objective pass
        by pass. None: the residuals alone decide (``lp_tol``,
        ``lp_max_iter``). The final duality gap comes from tight solves
        either way.
    n_jobs : int, default=None
        Threads decoding documents in ``predict``, ``predict_marginals`` and
        ``score`` (the solvers release the GIL); ``None`` means 1, -1 all
        cores. Training visits the documents one after the other, as
        block-coordinate Frank-Wolfe does, and solves the final duality
        gap's LPs on ``n_jobs`` threads. The results do not depend on it.
    random_state : int, RandomState or None, default=None
        Order of the documents in each pass.
    verbose : int, default=0
        If positive, print a progress line every ``verbose`` passes (and
        after the last, which computes the duality gap): the dual objective,
        the objective and duality gap when computed, the share of integral
        LP solutions, AD³'s iterations per document, the pass's time and
        the total time (the format is described in the :ref:`User Guide
        <progress>`).

    Attributes
    ----------
    classes_ : ndarray
        The proposition labels, sorted: strings (object array) or integers,
        as in ``y``; predictions use the same labels.
    coef_ : ndarray of shape (n_params,)
        The averaged weights; :attr:`layout_` says where each group sits.
    layout_ : ParameterLayout
    link_cost_ : float
        The cost of a missed link used in training.
    n_iter_ : int
        Passes run.
    integral_fraction_ : list of float
        Per pass, the share of its loss-augmented LP solutions (the
        documents it decoded) that were integral.
    duality_gaps_ : list of (int, float)
        (pass, duality gap) where the gap was computed: after the last pass.
    objective_ : float or None
        The structured SVM objective of ``coef_`` after the last pass.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sksparse_struct import StructuredSVMArgumentMiner
    >>> from sksparse_struct.datasets import load_cdcp_sample
    >>> from sksparse_struct.feature_extraction import ArgumentFeatures
    >>> X_train, y_train, X_test, y_test = load_cdcp_sample()
    >>> model = make_pipeline(ArgumentFeatures(),
    ...                       StructuredSVMArgumentMiner(max_iter=5, random_state=0))
    >>> model.fit(X_train, y_train)  # doctest: +ELLIPSIS
    Pipeline(...)
    >>> labels, links = model.predict(X_test[:1])[0]
    >>> 0 <= model.score(X_test, y_test) <= 1
    True
    """

    _parameter_constraints: dict = {
        "constraints": [StrOptions(set(_CONSTRAINTS))],
        "compat_features": ["boolean"],
        "second_order": [tuple, list, None],
        "strict_labels": [None, str, Integral, tuple, list],
        "C": [Interval(Real, 0, None, closed="neither")],
        "link_cost": [StrOptions({"balanced"}), Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "decode": [StrOptions(set(_DECODERS))],
        "max_bb_nodes": [Interval(Integral, 1, None, closed="left")],
        "time_limit": [None, Interval(Real, 0, None, closed="neither")],
        "lp_max_iter": [Interval(Integral, 1, None, closed="left")],
        "lp_tol": [Interval(Real, 0, None, closed="neither")],
        "lp_gap_tol": [None, Interval(Real, 0, None, closed="neither")],
        "n_jobs": [None, Integral],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        constraints="cdcp_strict",
        *,
        compat_features=True,
        second_order=("coparent", "sibling"),
        strict_labels=None,
        C=0.1,
        link_cost="balanced",
        max_iter=50,
        decode="exact",
        max_bb_nodes=100,
        time_limit=60.0,
        lp_max_iter=200,
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
        self.link_cost = link_cost
        self.max_iter = max_iter
        self.decode = decode
        self.max_bb_nodes = max_bb_nodes
        self.time_limit = time_limit
        self.lp_max_iter = lp_max_iter
        self.lp_tol = lp_tol
        self.lp_gap_tol = lp_gap_tol
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # X is a list of documents' features, y a list of (labels, links).
    _score_metric = staticmethod(argument_f1_score)

    # --- validation ----------------------------------------------------------

    def _second_order_types(self):
        types = tuple(self.second_order or ())
        unknown = [t for t in types if t not in SECOND_ORDER_TYPES]
        if unknown or len(set(types)) != len(types):
            raise ValueError(f"second_order must list distinct types among {SECOND_ORDER_TYPES}; "
                             f"got {self.second_order!r}.")
        # A fixed order, whatever order the user wrote them in.
        return tuple(t for t in SECOND_ORDER_TYPES if t in types)

    def _targets(self, y, docs, classes):
        if len(y) != len(docs):
            raise ValueError(f"X has {len(docs)} documents but y has {len(y)} targets.")
        codes = {label: c for c, label in enumerate(classes.tolist())}
        targets = []
        for d, (doc, target) in enumerate(zip(docs, y)):
            try:
                labels, links = target
            except (TypeError, ValueError):
                raise ValueError(f"target {d} must be a (labels, links) pair.") from None
            n = doc.props.shape[0]
            if len(labels) != n:
                raise ValueError(f"document {d}: {len(labels)} labels for {n} propositions.")
            label_codes = np.empty(n, dtype=np.int64)
            for a, label in enumerate(labels):
                if _label_kind(label) is None or label not in codes:
                    raise ValueError(f"document {d}, proposition {a}: unknown label {label!r} "
                                     f"(known: {list(classes)}).")
                label_codes[a] = codes[label]
            index = {(int(s), int(t)): e for e, (s, t) in enumerate(doc.link_pairs)}
            on = np.zeros(doc.link_pairs.shape[0], dtype=np.int64)
            for link in links:
                try:
                    s, t = (_link_index(v) for v in link)
                except (TypeError, ValueError):
                    raise ValueError(f"document {d}: link {link!r} is not a (source, target) "
                                     "pair.") from None
                if s is None or t is None:
                    raise ValueError(f"document {d}: link {link!r} must name its source and "
                                     "target by proposition indices (whole numbers); "
                                     f"{link!r} has a fractional or non-numeric index.")
                if (s, t) not in index:
                    raise ValueError(
                        f"document {d}: link {s} -> {t} is not a candidate link (propositions "
                        f"0..{n - 1}, distinct, in the same paragraph).")
                on[index[(s, t)]] = 1
            targets.append(DocumentTarget(label_codes, on))
        return targets

    def _strict_options(self, classes):
        """Illegal (source label, target label) pairs and the required source label."""
        classes = list(classes.tolist())
        if self.constraints == "cdcp_strict":
            if self.strict_labels is None:
                missing = [c for c in classes if c not in CDCP_OBJECTIVITY]
                if missing:
                    raise ValueError(
                        f"constraints='cdcp_strict' (the default) orders the CDCP labels "
                        f"{CDCP_OBJECTIVITY} from most to least objective, but the labels "
                        f"{missing} are not among them. For argument trees such as the "
                        "persuasive essays' (MajorClaim, Claim, Premise) use "
                        "constraints='tree' or 'tree_strict' (only strict_labels, default "
                        "'Premise', may support another proposition); else list your labels "
                        "in strict_labels from most to least objective, or use "
                        "constraints='cdcp' or 'none'.")
                order = CDCP_OBJECTIVITY
            else:
                if isinstance(self.strict_labels, (str, Integral)):
                    raise ValueError(
                        "with constraints='cdcp_strict', strict_labels must list the labels "
                        f"from most to least objective; got the single label "
                        f"{self.strict_labels!r} (a single label is for 'tree_strict').")
                order = tuple(self.strict_labels)
                missing = [c for c in classes if c not in order]
                if missing:
                    raise ValueError(f"strict_labels must order every label from most to least "
                                     f"objective; labels not listed: {missing}.")
            rank = {label: r for r, label in enumerate(order)}
            illegal = [(i, j) for i, a in enumerate(classes) for j, b in enumerate(classes)
                       if rank[a] > rank[b]]
            return illegal, None
        if self.constraints == "tree_strict":
            label = "Premise" if self.strict_labels is None else self.strict_labels
            if _label_kind(label) is None or label not in classes:
                raise ValueError(
                    f"constraints='tree_strict': strict_labels must be the one label a link's "
                    f"source must have, among {classes}; got {label!r}"
                    + (" (the default, the persuasive essays' label)"
                       if self.strict_labels is None else "")
                    + ". Pass strict_labels=<label>, or use constraints='tree'.")
            return [], classes.index(label)
        return [], None

    def _graph(self, doc):
        structure = {"none": "none", "cdcp": "cdcp", "cdcp_strict": "cdcp",
                     "tree": "tree", "tree_strict": "tree"}[self.constraints]
        return build_argument_graph(
            doc.props.shape[0], len(self.classes_), doc.link_pairs, doc.triples,
            constraints=structure, second_order=self.layout_.second_order,
            illegal_label_pairs=self._illegal_, required_source_label=self._required_source_,
            proposition_paragraph=doc.proposition_paragraph, strict_in_compat=True)

    def _ad3_options(self):
        return {"max_iter": self.lp_max_iter, "tol": self.lp_tol}

    def _training_ad3_options(self):
        """AD³'s settings for the loss-augmented solves of training (``lp_gap_tol``)."""
        options = self._ad3_options()
        if self.lp_gap_tol is not None:
            options["gap_tol"] = self.lp_gap_tol
        return options

    # --- fit -------------------------------------------------------------------

    def _prepare_fit(self, X, y):
        """Validate ``X`` and ``y``; set ``classes_``, ``layout_``, ``link_cost_``.

        Returns the documents, their targets and their factor graphs (what
        every training loss of the model needs).
        """
        docs = _check_documents(X)
        types = self._second_order_types()
        widths = {doc.props.shape[1] for doc in docs}, {doc.links.shape[1] for doc in docs}
        if len(widths[0]) > 1 or len(widths[1]) > 1:
            raise ValueError("the documents have different numbers of features: transform them "
                             "all with the same fitted ArgumentFeatures.")
        self.classes_ = _label_classes(y)
        targets = self._targets(y, docs, self.classes_)
        self._illegal_, self._required_source_ = self._strict_options(self.classes_)
        n_second = docs[0].second_order.shape[1] if types else 0
        self.layout_ = ParameterLayout(len(self.classes_), docs[0].props.shape[1],
                                       docs[0].links.shape[1], 3 if self.compat_features else 1,
                                       types, n_second)
        n_on = sum(int(t.links.sum()) for t in targets)
        n_links = sum(t.links.shape[0] for t in targets)
        if self.link_cost == "balanced":
            self.link_cost_ = (n_links - n_on) / n_on if n_on else 1.0
        else:
            self.link_cost_ = float(self.link_cost)
        return docs, targets, [self._graph(doc) for doc in docs]

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn the weights from documents and their gold structures.

        Parameters
        ----------
        X : list of DocumentFeatures
            Documents transformed by
            :class:`~sksparse_struct.feature_extraction.ArgumentFeatures`.
        y : list of (labels, links)
            Per document, one label per proposition and the list of gold
            ``(source, target)`` links (as
            :func:`~sksparse_struct.datasets.read_cdcp` returns them).

        Returns
        -------
        self : StructuredSVMArgumentMiner
        """
        docs, targets, graphs = self._prepare_fit(X, y)
        problem = ArgumentProblem(docs, targets, graphs, self.layout_, self.link_cost_,
                                  self._training_ad3_options(), n_jobs=self.n_jobs)
        self.integral_fraction_, self.duality_gaps_ = [], []
        progress = Progress(self, self.verbose, "pass", self.max_iter)

        def callback(info):
            # Statistics per decoding: the cache makes fewer than one per document.
            info = info._replace(n_samples=max(info.n_decoded, 1))
            self._record(info)
            fields = [("dual", info.dual)]
            if info.gap is not None:
                fields += [("objective", info.gap.primal), ("duality_gap", info.gap.gap)]
            fields += [("integral", self.integral_fraction_[-1]),
                       ("ad3_iterations", float(info.stats[1]) / info.n_samples)]
            progress.update(info.n_iter, fields, force=info.gap is not None)

        # Multi-plane BCFW: 8 cached LP solutions per document, a document decoded
        # only when its cached planes fall behind. The duality gap, after the last
        # pass only, comes from tight solves (problem.exact_hinge_sum, on n_jobs
        # threads).
        result = minimize_bcfw(problem, C=self.C, max_iter=self.max_iter,
                               random_state=check_random_state(self.random_state),
                               callback=callback, cache_size=8, cache_tol=0.5,
                               gap_every=self.max_iter)
        self.coef_ = result.coef
        self.n_iter_ = result.n_iter
        self.objective_ = result.gap.primal if result.gap is not None else None
        return self

    def set_unary_weights(self, classes, prop_weights, link_weights):
        """Decode with given unary weights instead of fitting.

        Turns any linear scorers of propositions and links, e.g. independent
        classifiers, into a predictor that decodes them jointly under this
        model's ``constraints`` (the compatibility tables are zero, and
        ``second_order`` must be empty).

        Parameters
        ----------
        classes : sequence of str or int
            The proposition labels, in the order of the rows of
            ``prop_weights``.
        prop_weights : array-like of shape (n_classes, n_prop_features)
        link_weights : array-like of shape (2, n_link_features)
            Scores of a link being off (row 0) and on (row 1).

        Returns
        -------
        self : StructuredSVMArgumentMiner
        """
        self._validate_params()
        if self._second_order_types():
            raise ValueError("set_unary_weights scores no second-order factor: set "
                             "second_order=().")
        given = list(classes)
        classes = _sorted_labels(((c, f"classes[{i}]") for i, c in enumerate(given)), "classes")
        if len(classes) != len(given):
            raise ValueError(f"classes lists a label twice: {given!r}.")
        position = {c: i for i, c in enumerate(given)}
        order = np.array([position[c] for c in classes.tolist()], dtype=np.int64)
        prop_weights = np.asarray(prop_weights, dtype=np.float64)
        if prop_weights.ndim != 2 or prop_weights.shape[0] != len(classes):
            raise ValueError("prop_weights must be (n_classes, n_prop_features) and "
                             "link_weights (2, n_link_features).")
        prop_weights = prop_weights[order]
        link_weights = np.asarray(link_weights, dtype=np.float64)
        if prop_weights.ndim != 2 or prop_weights.shape[0] != len(classes) or \
                link_weights.ndim != 2 or link_weights.shape[0] != 2:
            raise ValueError("prop_weights must be (n_classes, n_prop_features) and "
                             "link_weights (2, n_link_features).")
        if not (np.all(np.isfinite(prop_weights)) and np.all(np.isfinite(link_weights))):
            raise ValueError("the weights contain NaN or infinity.")
        self.classes_ = classes
        self._illegal_, self._required_source_ = self._strict_options(self.classes_)
        self.layout_ = ParameterLayout(len(classes), prop_weights.shape[1],
                                       link_weights.shape[1], 3 if self.compat_features else 1,
                                       (), 0)
        self.coef_ = np.concatenate([prop_weights.ravel(), link_weights.ravel(),
                                     np.zeros(self.layout_.sizes[2])])
        return self

    def _record(self, info):
        """Keep each pass's share of integral LP solutions and the duality gaps."""
        self.integral_fraction_.append(float(info.stats[0]) / info.n_samples)
        if info.gap is not None:
            self.duality_gaps_.append((info.n_iter, float(info.gap.gap)))

    # --- prediction ------------------------------------------------------------

    def _scores(self, doc, graph, coef=None):
        coef = self.coef_ if coef is None else coef
        prop, link, compat, pairs = document_potentials(coef, self.layout_, doc)
        return graph_scores(graph, self.layout_, prop, link, compat, pairs)

    def _structure(self, doc, graph, values):
        """Label codes, link states and a note: ``values`` rounded to a feasible structure.

        Each variable to its nearest integer if that satisfies the
        constraints (always for an exact MAP, and for an integral LP);
        else :func:`round_to_constraints` on the marginals, and the note
        says which constraint the plain rounding broke.
        """
        prop, link = values[graph.prop_vars], values[graph.link_vars]
        codes, on = np.argmax(prop, axis=1).astype(np.int64), link > 0.5
        structure = {"none": "none", "cdcp": "cdcp", "cdcp_strict": "cdcp",
                     "tree": "tree", "tree_strict": "tree"}[self.constraints]
        rules = {"proposition_paragraph": doc.proposition_paragraph,
                 "illegal_label_pairs": self._illegal_,
                 "required_source_label": self._required_source_}
        broken = constraint_violations(structure, codes, doc.link_pairs, on,
                                       n_labels=len(self.classes_), limit=1,
                                       label_names=self.classes_.tolist(), **rules)
        if not broken:
            return codes, on, None
        codes, on = round_to_constraints(structure, prop, link, doc.link_pairs, **rules)
        return codes, on, broken[0]

    def _assignment_score(self, doc, graph, scores, codes, on):
        """The score of the structure (label codes, link states) under the graph's scores."""
        variable_scores, factor_scores = scores
        K = len(self.classes_)
        value = variable_scores[graph.prop_vars[np.arange(codes.shape[0]), codes]].sum()
        value += variable_scores[graph.link_vars[on]].sum()
        if on.shape[0]:
            s, t = doc.link_pairs[:, 0], doc.link_pairs[:, 1]
            config = codes[s] * 2 * K + codes[t] * 2 + on
            value += factor_scores[graph.compat_offsets + config].sum()
        n = codes.shape[0]
        index = np.full((n, n), -1, dtype=np.int64)
        index[doc.link_pairs[:, 0], doc.link_pairs[:, 1]] = np.arange(doc.link_pairs.shape[0])
        for kind in self.layout_.second_order:
            first, second = pair_links(index, doc.triples, kind)
            value += factor_scores[graph.pair_offsets[kind][on[first] & on[second]]].sum()
        return float(value)

    def _exact(self, doc, graph, scores):
        """``(codes, on, note)``: the exact MAP, or, past the budget, the best structure found.

        ``note`` (None when the MAP is proven) says what stopped the search
        and which structure was kept.
        """
        start = time.perf_counter()
        options = self._ad3_options()
        limit = self.time_limit
        found = []  # (score, codes, on, what)
        stops = []

        def keep(values, what, exact=True):
            codes, on, broken = self._structure(doc, graph, values)
            if broken is not None and exact:  # guards the exact decoders' tolerances
                what += f", rounded again (it broke a constraint: {broken})"
            found.append((self._assignment_score(doc, graph, scores, codes, on), codes, on,
                          what))

        lp = None
        if self.decode == "exact":
            lp = ad3(graph.graph, *scores, **options)
            if lp.integral and lp.dual - lp.primal <= 1e-6 * max(1.0, abs(lp.primal)):
                codes, on, broken = self._structure(doc, graph, lp.variables)
                if broken is None:
                    return codes, on, None  # the LP's solution is integral and optimal
            keep(lp.variables, "the LP relaxation rounded to a structure that satisfies the "
                               "constraints", exact=False)
            t_root = time.perf_counter() - start
            nodes, why = self.max_bb_nodes, f"max_bb_nodes={self.max_bb_nodes}"
            if limit is not None:
                fit_in = max(int(0.7 * (limit - t_root) / max(t_root, 1e-9)), 0)
                if fit_in < nodes:
                    nodes = fit_in
                    why = (f"time_limit={limit:g} s, {t_root:.2g} s per LP solve: time for "
                           f"{fit_in} node{'s' if fit_in != 1 else ''}")
            result = None
            if nodes >= 1:
                try:
                    result = ad3_map(graph.graph, *scores, max_nodes=nodes, **options)
                except ValueError:
                    stops.append(f"branch-and-bound found no feasible assignment in {nodes} "
                                 f"node{'s' if nodes != 1 else ''} ({why})")
            else:
                stops.append(f"no time for branch-and-bound ({why})")
            if result is not None:
                if result.optimal:
                    codes, on, broken = self._structure(doc, graph, result.variables)
                    if broken is None:
                        return codes, on, None
                    stops.append("branch-and-bound's MAP broke a constraint")
                else:
                    stops.append(f"branch-and-bound stopped after {result.n_nodes} "
                                 f"node{'s' if result.n_nodes != 1 else ''} ({why})")
                keep(result.variables, "the best assignment branch-and-bound found")
        if self.decode == "milp" or len(found) == 1:
            # HiGHS' branch-and-cut, in the time left.
            left = None if limit is None else limit - (time.perf_counter() - start)
            if left is None or left > 0:
                # (60%: building the program and HiGHS' presolve take time too)
                given = None if left is None else 0.6 * left
                budget = "" if limit is None else f" in {given:.2g} s (time_limit={limit:g} s)"
                try:
                    result = milp_map(graph.graph, *scores, time_limit=given)
                except RuntimeError:  # no solution within the time limit
                    result = None
                    stops.append(f"HiGHS found no assignment{budget}")
                if result is not None:
                    if result.optimal:
                        codes, on, broken = self._structure(doc, graph, result.variables)
                        if broken is None:
                            return codes, on, None
                        stops.append("HiGHS' MAP broke a constraint")
                    else:
                        stops.append(f"HiGHS did not prove optimality{budget}")
                    keep(result.variables, "the best assignment HiGHS found"
                         + ("" if result.optimal else ", not proven optimal"))
            else:
                stops.append(f"no time left for HiGHS (time_limit={limit:g} s)")
        if not found:
            lp = ad3(graph.graph, *scores, **options)
            keep(lp.variables, "the LP relaxation rounded to a structure that satisfies the "
                               "constraints", exact=False)
        value, codes, on, what = max(found, key=lambda item: item[0])
        return codes, on, f"{'; '.join(stops)}; kept {what} (score {value:.6g})"

    def _decode_one(self, doc, coef=None):
        """``(labels, links, note)`` of one document; ``note`` says what fell short, or None.

        With the weights ``coef`` (default ``coef_``).
        """
        graph = self._graph(doc)
        scores = self._scores(doc, graph, coef)
        if self.decode == "lp":
            values = ad3(graph.graph, *scores, **self._ad3_options()).variables
            codes, on, _ = self._structure(doc, graph, values)
            note = None
        else:
            codes, on, note = self._exact(doc, graph, scores)
        labels = self.classes_[codes].tolist()
        links = sorted((int(s), int(t)) for s, t in doc.link_pairs[on])
        return labels, links, note

    def predict(self, X):
        """Labels and links of each document.

        Every prediction satisfies the hard ``constraints``, whatever the
        decoder. With ``decode="exact"`` or ``"milp"``, a document whose
        exact decoding stops before optimality is proven (``max_bb_nodes``,
        ``time_limit``) gets the best assignment found, or the
        constraint-respecting rounding of the LP relaxation, and one
        ``UserWarning`` names these documents and says what was done.

        Parameters
        ----------
        X : list of DocumentFeatures

        Returns
        -------
        y : list of (labels, links)
            In the format of :meth:`fit`'s ``y``; the labels are elements of
            ``classes_`` (strings or integers, as in ``fit``).
        """
        check_is_fitted(self, "coef_")
        results = self._map(self._decode_one, self._check_predict(X))
        notes = [(d, note) for d, (_, _, note) in enumerate(results) if note is not None]
        if notes:
            shown = "; ".join(f"document {d}: {note}" for d, note in notes[:5])
            more = f"; and {len(notes) - 5} more" if len(notes) > 5 else ""
            warn(f"{type(self).__name__} (decode={self.decode!r}): exact decoding fell "
                 f"short for {len(notes)} of {len(results)} documents; every prediction still "
                 f"satisfies the constraints. {shown}{more}.")
        return [(labels, links) for labels, links, _ in results]

    def _map(self, func, docs):
        """``[func(doc) for doc in docs]``, on ``n_jobs`` threads."""
        if self._n_threads() == 1 or len(docs) < 2:
            return [func(doc) for doc in docs]
        return Parallel(n_jobs=self.n_jobs, prefer="threads")(delayed(func)(doc) for doc in docs)

    def predict_marginals(self, X):
        """The LP relaxation's marginals of each document.

        Returns
        -------
        marginals : list of (prop, links)
            ``prop`` (n_props, n_classes): each proposition's label
            marginals (columns in the order of ``classes_``); ``links``
            (n_links,): the probability that each candidate link is on, the
            candidates in the order of ``link_pairs``.
        """
        check_is_fitted(self, "coef_")
        return self._map(self._marginals_one, self._check_predict(X))

    def _marginals_one(self, doc):
        graph = self._graph(doc)
        result = ad3(graph.graph, *self._scores(doc, graph), **self._ad3_options())
        return result.variables[graph.prop_vars], result.variables[graph.link_vars]

    def _check_predict(self, X):
        # Parameters set after fit (or set_unary_weights) are checked here too.
        self._validate_params()
        self._second_order_types()
        self._illegal_, self._required_source_ = self._strict_options(self.classes_)
        docs = _check_documents(X)
        for d, doc in enumerate(docs):
            if (doc.props.shape[1], doc.links.shape[1]) != (self.layout_.n_prop_features,
                                                             self.layout_.n_link_features):
                raise ValueError(
                    f"document {d} has {doc.props.shape[1]} proposition and "
                    f"{doc.links.shape[1]} link features; the model was fit with "
                    f"{self.layout_.n_prop_features} and {self.layout_.n_link_features}.")
        return docs
