"""The argument miner's structured SVM problem: joint features, costs and loss-augmented inference.

A document's *structure space* holds everything the joint feature map is
linear in, concatenated (``n`` propositions, ``m`` candidate links, ``L``
labels, ``k`` second-order triples, ``T`` second-order types):

- ``p`` (n, L): the marginal of every proposition label;
- ``l`` (m, 2): the marginal of every link state (off, on);
- ``mu`` (m, L * L * 2): the distribution of every compatibility factor over
  (source label, target label, link state), index ``i * 2L + j * 2 + r``;
- ``z`` (T, k): the marginal of every second-order pair factor (both links on).

For a gold output these are indicators; for the LP relaxation's solution they
are the fractional marginals of its factors. The weights are laid out as
:class:`ParameterLayout` says; :func:`potentials` maps them to the scores of
the factor graph, :meth:`ArgumentProblem.joint_feature` is its adjoint.
"""

from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from typing import NamedTuple

import numpy as np
from joblib import effective_n_jobs

from ..inference import ad3
from ._graph import pair_links as _pair_links

__all__ = ["ArgumentProblem", "DocumentTarget", "ParameterLayout", "document_potentials"]

SECOND_ORDER_TYPES = ("coparent", "grandparent", "sibling")


def pair_links(doc, kind):
    """The two candidate links of each second-order pair factor of type ``kind``."""
    n = doc.props.shape[0]
    index = np.full((n, n), -1, dtype=np.int64)
    index[doc.link_pairs[:, 0], doc.link_pairs[:, 1]] = np.arange(doc.link_pairs.shape[0])
    return _pair_links(index, doc.triples, kind)


class ParameterLayout(NamedTuple):
    """Where each group of weights sits in ``coef_``.

    ``coef_[prop]`` reshaped to (n_labels, n_prop_features) scores the labels
    of a proposition; ``coef_[link]`` reshaped to (2, n_link_features) the
    states of a link; ``coef_[compat]`` reshaped to (n_compat, n_labels *
    n_labels * 2) the compatibility tables (one per compatibility feature);
    ``coef_[second_order]`` reshaped to (n_types, n_second_order_features)
    the pair factors of each second-order type.
    """

    n_labels: int
    n_prop_features: int
    n_link_features: int
    n_compat: int
    second_order: tuple
    n_second_order_features: int

    @property
    def sizes(self):
        L = self.n_labels
        return (L * self.n_prop_features, 2 * self.n_link_features, self.n_compat * L * L * 2,
                len(self.second_order) * self.n_second_order_features)

    @property
    def slices(self):
        edges = np.concatenate([[0], np.cumsum(self.sizes)])
        return tuple(slice(int(a), int(b)) for a, b in pairwise(edges))

    @property
    def n_params(self):
        return int(sum(self.sizes))

    def split(self, coef):
        """The four weight groups of ``coef`` as matrices (views)."""
        prop, link, compat, second = (coef[s] for s in self.slices)
        L = self.n_labels
        return (prop.reshape(L, self.n_prop_features), link.reshape(2, self.n_link_features),
                compat.reshape(self.n_compat, L * L * 2),
                second.reshape(len(self.second_order), self.n_second_order_features))


class DocumentTarget(NamedTuple):
    """A document's gold output as codes: labels (n,) and link states (m,) in {0, 1}."""

    labels: np.ndarray
    links: np.ndarray


def compat_rows(doc, layout):
    """The compatibility features a document's compatibility tables are built from."""
    return doc.compat[:, :layout.n_compat]


def document_potentials(coef, layout, doc):
    """Scores of one document's factors under the weights ``coef``.

    Returns
    -------
    prop : ndarray (n, L)
    link : ndarray (m, 2)
    compat : ndarray (m, L * L * 2)
    pairs : ndarray (T, k)
    """
    w_prop, w_link, w_compat, w_second = layout.split(coef)
    prop = np.asarray(doc.props @ w_prop.T)
    link = np.asarray(doc.links @ w_link.T)
    # einsum, not BLAS: a multithreaded BLAS on these small products is slower
    # than a plain loop, and far slower when the cores are busy.
    compat = np.einsum("kc,cj->kj", compat_rows(doc, layout), w_compat)
    if layout.second_order and doc.triples.shape[0]:
        pairs = np.einsum("tf,kf->tk", w_second, doc.second_order)
    else:
        pairs = np.zeros((len(layout.second_order), doc.triples.shape[0]))
    return prop, link, compat, pairs


def _pair_indicators(doc, target, layout):
    """Gold second-order indicators: both links of each pair factor on."""
    on = target.links
    out = np.zeros((len(layout.second_order), doc.triples.shape[0]))
    for t, kind in enumerate(layout.second_order):
        first, second = pair_links(doc, kind)
        out[t] = on[first] * on[second]
    return out


class ArgumentProblem:
    """The structured SVM problem of the argument miner, for :func:`minimize_bcfw`.

    Parameters
    ----------
    documents : list of DocumentFeatures
    targets : list of DocumentTarget
    graphs : list of ArgumentGraph
        The factor graph of each document (``build_argument_graph``).
    layout : ParameterLayout
    link_cost : float
        The cost of missing a gold link (a wrong proposition label or a
        spurious link costs 1).
    ad3_options : dict
        Passed to :func:`~sksparse_struct.inference.ad3` in the loss-augmented
        decodings (the learner may change it between passes).
    n_jobs : int or None, default=None
        Threads for the tight solves of :meth:`exact_hinge_sum`.
    """

    def __init__(self, documents, targets, graphs, layout, link_cost, ad3_options, n_jobs=None):
        self.documents = documents
        self.targets = targets
        self.graphs = graphs
        self.layout = layout
        self.link_cost = float(link_cost)
        self.ad3_options = dict(ad3_options)
        self.n_jobs = n_jobs
        self.n_params = layout.n_params
        self.n_samples = len(documents)
        self.stat_names = ("integral", "AD3 iterations")
        #: AD3's settings for the hinge losses of the duality gap (:meth:`hinge`).
        self.gap_ad3_options = {"max_iter": 2000, "tol": 1e-7, "gap_tol": 1e-7}
        self.gap_rounds = 10
        self._warm = [None] * len(documents)
        self._gold = [self._gold_structure(i) for i in range(self.n_samples)]
        self._feature_blocks = [self._blocks(doc) for doc in documents]

    # -- structure space ---------------------------------------------------

    def _unpack(self, i, m):
        doc, L = self.documents[i], self.layout.n_labels
        n, k = doc.props.shape[0], doc.link_pairs.shape[0]
        t = doc.triples.shape[0]
        sizes = np.cumsum([n * L, k * 2, k * L * L * 2])
        p = m[:sizes[0]].reshape(n, L)
        links = m[sizes[0]:sizes[1]].reshape(k, 2)
        mu = m[sizes[1]:sizes[2]].reshape(k, L * L * 2)
        z = m[sizes[2]:].reshape(len(self.layout.second_order), t)
        return p, links, mu, z

    def _gold_structure(self, i):
        target = self.targets[i]
        L = self.layout.n_labels
        n, k = target.labels.shape[0], target.links.shape[0]
        p = np.zeros((n, L))
        p[np.arange(n), target.labels] = 1.0
        links = np.zeros((k, 2))
        links[np.arange(k), target.links] = 1.0
        mu = np.zeros((k, L * L * 2))
        pairs = self.documents[i].link_pairs
        config = target.labels[pairs[:, 0]] * 2 * L + target.labels[pairs[:, 1]] * 2 + target.links
        mu[np.arange(k), config] = 1.0
        z = _pair_indicators(self.documents[i], target, self.layout)
        return np.concatenate([p.ravel(), links.ravel(), mu.ravel(), z.ravel()])

    def _blocks(self, doc):
        """Per feature matrix: the weight indices it touches and its transpose on them.

        ``psi`` of the proposition (link) part is ``X.T @ p``, nonzero only
        on the columns the document uses: computed once, it makes
        :meth:`joint_feature` a small sparse product.
        """
        layout = self.layout
        out = []
        for X, start, width, n_states in (
                (doc.props, layout.slices[0].start, layout.n_prop_features, layout.n_labels),
                (doc.links, layout.slices[1].start, layout.n_link_features, 2)):
            cols = np.unique(X.indices)
            indices = (start + np.arange(n_states)[None, :] * width + cols[:, None]).ravel()
            out.append((indices.astype(np.int64), X[:, cols].T.tocsr()))
        return out

    def gold(self, i):
        return self._gold[i]

    def cost(self, i, m):
        """Weighted Hamming cost of a (possibly fractional) structure against the gold one."""
        target = self.targets[i]
        p, links, _, _ = self._unpack(i, m)
        n, k = p.shape[0], links.shape[0]
        prop_cost = n - p[np.arange(n), target.labels].sum()
        weights = np.where(target.links == 1, self.link_cost, 1.0)
        link_cost = (weights * (1.0 - links[np.arange(k), target.links])).sum()
        return float(prop_cost + link_cost)

    def joint_feature(self, i, m):
        """``psi(x_i, m)`` as (indices, values), linear in ``m``."""
        doc, layout = self.documents[i], self.layout
        p, links, mu, z = self._unpack(i, m)
        s_compat, s_second = layout.slices[2:]
        parts_idx, parts_val = [], []
        for (indices, columns_by_row), marg in zip(self._feature_blocks[i], (p, links)):
            if indices.size:
                parts_idx.append(indices)
                parts_val.append(np.asarray(columns_by_row @ marg).ravel())
        compat = np.einsum("kc,kj->cj", compat_rows(doc, layout), mu)  # (n_compat, L*L*2)
        parts_idx.append(np.arange(s_compat.start, s_compat.stop))
        parts_val.append(compat.ravel())
        if layout.second_order:
            second = np.einsum("tk,kf->tf", z, doc.second_order) if z.shape[1] else np.zeros(
                (len(layout.second_order), layout.n_second_order_features))
            parts_idx.append(np.arange(s_second.start, s_second.stop))
            parts_val.append(second.ravel())
        return (np.concatenate(parts_idx).astype(np.int64),
                np.concatenate(parts_val).astype(np.float64))

    # -- inference -----------------------------------------------------------

    def scores(self, coef, i, cost_augmented):
        """Variable and factor scores of document ``i``'s graph."""
        return self._scores(coef, i, cost_augmented)[:2]

    def _scores(self, coef, i, cost_augmented):
        """The scores and the constant the LP drops: the links' "off" scores summed.

        A structure ``m`` of the graph's LP scores ``cost_i(m) + coef .
        psi_i(m)`` (with the cost) minus that constant.
        """
        prop, link, compat, pairs = document_potentials(coef, self.layout, self.documents[i])
        if cost_augmented:
            target = self.targets[i]
            n = prop.shape[0]
            prop = prop + 1.0
            prop[np.arange(n), target.labels] -= 1.0
            link = link.copy()
            on = target.links == 1
            link[on, 0] += self.link_cost
            link[~on, 1] += 1.0
        variable_scores, factor_scores = graph_scores(self.graphs[i], self.layout, prop, link,
                                                      compat, pairs)
        return variable_scores, factor_scores, float(link[:, 0].sum())

    def loss_augmented(self, coef, i):
        graph = self.graphs[i]
        variable_scores, factor_scores = self.scores(coef, i, cost_augmented=True)
        result = ad3(graph.graph, variable_scores, factor_scores,
                     warm_start=self._warm[i], **self.ad3_options)
        self._warm[i] = result
        m = structure_from_marginals(graph, self.layout, result.variables, result.factors)
        return m, self.cost(i, m), np.array([float(result.integral), float(result.n_iter)])

    def hinge(self, coef, i):
        """Document ``i``'s structured hinge loss, an upper bound certified by AD3's dual.

        ``max_m [cost_i(m) + coef . psi_i(m)] - coef . psi_i(gold_i)``, the
        max over the LP relaxation, solved with :attr:`gap_ad3_options`
        (tight; up to :attr:`gap_rounds` times, each from the last one's
        state, until converged) from the training's warm start (left as it
        was), and bounded from above by the dual value of the solve: never
        below the exact hinge loss, and equal to it up to the solve's
        tolerance.
        """
        graph = self.graphs[i]
        variable_scores, factor_scores, constant = self._scores(coef, i, cost_augmented=True)
        result = self._warm[i]
        for _ in range(self.gap_rounds):
            # Restarted from its own state while not converged: the dual bound
            # tightens with the iterations.
            result = ad3(graph.graph, variable_scores, factor_scores, warm_start=result,
                         **self.gap_ad3_options)
            if result.converged:
                break
        indices, values = self.joint_feature(i, self._gold[i])
        return float(result.dual) + constant - float(values @ coef[indices])

    def exact_hinge_sum(self, coef):
        """The sum of the hinge losses (:meth:`hinge`), for the learner's final duality gap.

        On ``n_jobs`` threads; summed in the documents' order whatever their number.
        """
        n_threads = 1 if self.n_jobs is None else effective_n_jobs(self.n_jobs)
        if n_threads == 1 or self.n_samples < 2:
            hinges = [self.hinge(coef, i) for i in range(self.n_samples)]
        else:
            with ThreadPoolExecutor(min(n_threads, self.n_samples)) as pool:
                hinges = list(pool.map(lambda i: self.hinge(coef, i), range(self.n_samples)))
        return float(sum(hinges))


def graph_scores(graph, layout, prop, link, compat, pairs):
    """Flat variable and factor scores of an argument graph from the factor potentials."""
    variable_scores = np.zeros(graph.graph.n_variables)
    variable_scores[graph.prop_vars.ravel()] = prop.ravel()
    # A link's "off" score is a constant once "on" is scored relative to it.
    variable_scores[graph.link_vars] = link[:, 1] - link[:, 0]
    factor_scores = np.zeros(graph.graph.n_factor_scores)
    width = compat.shape[1]
    if compat.shape[0]:
        factor_scores[graph.compat_offsets[:, None] + np.arange(width)] = compat
    for t, kind in enumerate(layout.second_order):
        factor_scores[graph.pair_offsets[kind]] = pairs[t]
    return variable_scores, factor_scores


def structure_from_marginals(graph, layout, variables, factors):
    """A document's structure-space vector from the factor graph's marginals."""
    L = layout.n_labels
    p = variables[graph.prop_vars]
    on = variables[graph.link_vars]
    links = np.column_stack([1.0 - on, on])
    mu = factors[graph.compat_offsets[:, None] + np.arange(L * L * 2)] if on.size else \
        np.zeros((0, L * L * 2))
    z = np.concatenate([factors[graph.pair_offsets[kind]] for kind in layout.second_order]) \
        if layout.second_order else np.zeros(0)
    return np.concatenate([p.ravel(), links.ravel(), mu.ravel(), z.ravel()])


def marginals_from_structure(graph, layout, p, links, mu, z):
    """The inverse of :func:`structure_from_marginals`: a structure's unpacked parts
    (``ArgumentProblem._unpack``) as the graph's variables and factor marginals."""
    y_u = np.zeros(graph.graph.n_variables)
    y_u[graph.prop_vars.ravel()] = p.ravel()
    y_u[graph.link_vars] = links[:, 1]
    y_v = np.zeros(graph.graph.n_factor_scores)
    if mu.shape[0]:
        y_v[graph.compat_offsets[:, None] + np.arange(mu.shape[1])] = mu
    for t, kind in enumerate(layout.second_order):
        y_v[graph.pair_offsets[kind]] = z[t]
    return y_u, y_v
