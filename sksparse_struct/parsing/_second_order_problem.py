"""The second-order parser's training problem and decoding.

Per sentence: the arcs and the sibling / grandparent parts are scored by
the compiled feature kernels (``_second_order_fast``), the loss over the
sentence's factor graph (``_second_order``, built once per sentence) comes
from ``losses.factor_graph_loss`` (LP-MAP by AD3 for the hinge and the
perceptron, LP-SparseMAP for the SparseMAP losses), and its gradient with
respect to the part scores, ``marginals - gold``, is pushed through the
features. The learner (``learners.minimize_online``) only sees
the online problem interface.
"""

from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from ..feature_extraction._part_features_fast import new_part_work
from ..inference import lp_sparsemap
from ..losses import factor_graph_loss
from ..losses._kinds_fast import HINGE, MARGIN_SPARSEMAP, PERCEPTRON, STRUCTURED_LOSSES
from ..metrics import uas_score
from . import _second_order_fast as fast
from ._pruning import prune_arcs
from ._second_order import build_graph, decode_graph

__all__ = ["SecondOrderOptions", "SecondOrderProblem", "candidate_graphs", "decode_second_order",
           "sparse_second_order"]

_DECODE_CHUNK = 32


class SecondOrderOptions(NamedTuple):
    """How the second-order parts are scored and the graphs solved.

    Attributes
    ----------
    tags : int
        Tags of the part templates (``_part_features_fast.TAGS_*``).
    eta : float
        AD3's initial step size.
    max_iter : int
        AD3 iterations per solve.
    tol : float
        AD3's residual tolerance.
    max_nodes : int
        Branch-and-bound nodes when decoding a sentence whose LP is not
        tight.
    """

    tags: int
    eta: float
    max_iter: int
    tol: float
    max_nodes: int


def _scores(treebank, model, options, s, w, sog, arc_work, part_work):
    """``(theta, phi)`` of sentence ``s``: its graph's variable and factor scores."""
    S = fast.score_arcs(treebank, model, np.int64(s), w, arc_work)
    sib, gp = fast.score_parts(treebank, model, np.int64(options.tags), np.int64(s), w, part_work,
                               sog.siblings, sog.grandparents)
    return sog.variable_scores(S), sog.factor_scores(sib, gp)


def decode_second_order(treebank, model, options, graphs, w, ids, n_threads=1):
    """Heads, relation labels and decoding statuses of the sentences ``ids``.

    Returns ``(heads, labels, statuses, lp_iters, lp_unconverged)``:
    ``heads`` a list of int64 arrays (root excluded), ``labels`` likewise or
    None, ``statuses`` an int array (``CERTIFIED``, ``BRANCH_AND_BOUND``,
    ``ROUNDED``) and the LP's iteration counts and unconverged flags.
    """
    ids = np.asarray(ids, dtype=np.int64)
    offsets = treebank.offsets
    labels_out = np.full(offsets[-1], -1, dtype=np.int64)
    heads = [None] * ids.shape[0]
    statuses = np.zeros(ids.shape[0], dtype=np.int64)
    iters = np.zeros(ids.shape[0], dtype=np.int64)
    unconverged = np.zeros(ids.shape[0], dtype=bool)

    def run(chunk):
        L = max(int(offsets[ids[t] + 1] - offsets[ids[t]] - 1) for t in chunk)
        arc_work = fast.arc_work(np.int64(L), np.int64(model.n_labels))
        part_work = new_part_work(L)
        for t in chunk:
            s = ids[t]
            sog = graphs[t]
            theta, phi = _scores(treebank, model, options, s, w, sog, arc_work, part_work)
            h, status, result = decode_graph(
                sog, theta, phi, projective=bool(model.projective),
                single_root=bool(model.single_root), eta=options.eta, max_iter=options.max_iter,
                tol=options.tol, max_nodes=options.max_nodes)
            heads[t] = h[1:].copy()
            statuses[t] = status
            iters[t] = result.n_iter
            unconverged[t] = not result.converged
            if model.n_labels:
                fast.label_tree(treebank, model, np.int64(s), h, w, arc_work, labels_out)

    chunks = [range(i, min(i + _DECODE_CHUNK, ids.shape[0]))
              for i in range(0, ids.shape[0], _DECODE_CHUNK)]
    if n_threads > 1 and len(chunks) > 1:
        with ThreadPoolExecutor(n_threads) as pool:
            list(pool.map(run, chunks))
    else:
        for chunk in chunks:
            run(chunk)
    labels = None
    if model.n_labels:
        labels = [labels_out[offsets[s] + 1:offsets[s + 1]].copy() for s in ids]
    return heads, labels, statuses, iters, unconverged


class SecondOrderProblem:
    """The online problem (``learners._online``) of training a second-order parser.

    Parameters
    ----------
    treebank : Treebank
        Sentences, training trees (lifted when projective) and labels.
    gold_heads : ndarray of int64
        The original gold heads, stacked (for :meth:`score`).
    graphs : list of SecondOrderGraph
        One per sentence (pruned with the gold arcs kept).
    model : ArcModel
        Arc features, labels, tree kind.
    options : SecondOrderOptions
        Part features and solver settings.
    kind : int
        The loss (``losses._kinds_fast``): hinge, perceptron, SparseMAP or
        margin SparseMAP.
    label_margin : float
        Margin of the labeller's hinge.
    n_params : int
        Size of the weight vector.
    n_threads : int
        Threads of :meth:`score`.
    """

    def __init__(self, treebank, gold_heads, graphs, model, options, kind, label_margin,
                 n_params, n_threads=1):
        self.treebank = treebank
        self.gold_heads = gold_heads
        self.graphs = graphs
        self.model = model
        self.options = options
        self.kind = kind
        self.label_margin = label_margin
        self.n_params = n_params
        self.n_threads = n_threads
        self._gold = [None] * len(graphs)

    def sample_costs(self):
        return np.array([g.n_factor_scores + g.n * g.n for g in self.graphs], dtype=np.float64)

    def _gold_of(self, s):
        gold = self._gold[s]
        if gold is None:
            offsets = self.treebank.offsets
            heads = self.treebank.heads[offsets[s]:offsets[s + 1]]
            gold = self.graphs[s].gold(heads)
            self._gold[s] = gold
        return gold

    def batch_gradient(self, w, sample_ids, gradient, part, step):
        """Push the part's gradient; statistics: loss, label loss, unconverged solves."""
        tb, model, options = self.treebank, self.model, self.options
        offsets = tb.offsets
        L = max(int(offsets[s + 1] - offsets[s] - 1) for s in sample_ids)
        arc_work = fast.arc_work(np.int64(L), np.int64(model.n_labels))
        part_work = new_part_work(L)
        col = np.int64(2 * part)
        touched = gradient.touched[part]
        stamp = float(step)
        n_touched = np.int64(0)
        total = label_total = 0.0
        unconverged = 0
        kind = self.kind
        for s in sample_ids:
            sog = self.graphs[s]
            y_u, y_v = self._gold_of(s)
            theta, phi = _scores(tb, model, options, s, w, sog, arc_work, part_work)
            # Hamming cost on heads, one per word with a wrong head: the hinge
            # weighs the arcs outside the gold 1 (the gold's 0); margin
            # SparseMAP, whose cost also counts the gold arcs left out, half.
            if kind == HINGE:
                cost = 1.0 - y_u
            elif kind == MARGIN_SPARSEMAP:
                cost = np.full(y_u.shape[0], 0.5)
            else:
                cost = None
            out = factor_graph_loss(sog.graph, theta, phi, y_u, y_v,
                                    loss=STRUCTURED_LOSSES[kind], cost=cost, eta=options.eta,
                                    max_iter=options.max_iter, tol=options.tol)
            result, loss = out.result, out.value
            unconverged += not result.converged
            if loss <= 0.0 and kind != PERCEPTRON:
                # Inexact solves can end below the gold's score: no update.
                # (The perceptron updates whenever its prediction is not the
                # gold, ties included, as at its start from zero weights.)
                loss = 0.0
                coef_u = np.zeros_like(y_u)
                coef_v = np.zeros_like(y_v)
            else:
                coef_u = result.variables - y_u
                coef_v = result.factors - y_v
            total += max(loss, 0.0)
            n_touched, label_loss = fast.push_arcs(
                tb, model, np.int64(s), w, sog.arc_matrix(coef_u), self.label_margin, arc_work,
                gradient.values, col, touched, n_touched, stamp)
            label_total += label_loss
            n_touched = fast.push_parts(
                tb, model, np.int64(options.tags), np.int64(s), part_work, sog.siblings,
                np.ascontiguousarray(coef_v[sog.sibling_slots]), sog.grandparents,
                np.ascontiguousarray(coef_v[sog.grandparent_slots]), gradient.values, col,
                touched, n_touched, stamp)
        gradient.n_touched[part] = n_touched
        return np.array([total, label_total, unconverged])

    def score(self, w, sample_ids):
        """UAS of the weights ``w`` on the sentences ``sample_ids``."""
        heads = decode_second_order(self.treebank, self.model, self.options,
                                    [self.graphs[s] for s in sample_ids], w, sample_ids,
                                    self.n_threads)[0]
        offsets = self.treebank.offsets
        true = [self.gold_heads[offsets[s] + 1:offsets[s + 1]] for s in sample_ids]
        return uas_score(true, heads)


def candidate_graphs(pruner, encoded, lengths, *, max_heads, threshold, projective,
                     single_root, siblings, grandparents, gold_heads=None):
    """Pruned second-order graphs of the sentences ``encoded``, and their masks.

    ``pruner`` is a fitted first-order parser whose ``predict_marginals``
    gives the arc posteriors; ``gold_heads`` (a list of ``(n + 1,)``
    arrays, or None entries) are kept whatever their posterior.
    """
    marginals = pruner.predict_marginals(encoded)
    masks, graphs = [], []
    for i, P in enumerate(marginals):
        gold = None if gold_heads is None else gold_heads[i]
        mask = prune_arcs(P, max_heads=max_heads, threshold=threshold, gold_heads=gold,
                          projective=projective, single_root=single_root)
        masks.append(mask)
        graphs.append(build_graph(int(lengths[i]), mask, siblings=siblings,
                                  grandparents=grandparents, projective=projective,
                                  single_root=single_root))
    return graphs, masks


def sparse_second_order(treebank, model, options, graphs, w, ids):
    """LP-SparseMAP on every sentence: ``(results, graphs)`` for sparse outputs."""
    L = max([int(treebank.offsets[s + 1] - treebank.offsets[s] - 1) for s in ids] + [1])
    arc_work = fast.arc_work(np.int64(L), np.int64(model.n_labels))
    part_work = new_part_work(L)
    results = []
    for t, s in enumerate(ids):
        sog = graphs[t]
        theta, phi = _scores(treebank, model, options, s, w, sog, arc_work, part_work)
        results.append(lp_sparsemap(sog.graph, theta, phi, eta=options.eta,
                                    max_iter=options.max_iter, tol=options.tol))
    return results
