"""Numba kernels of the first-order dependency parser: one part of a batch, decoding.

Data layout (:class:`Treebank`): the sentences' token attributes are stacked
in one int64 array ``tokens`` (``_arc_features_fast``'s columns), sentence
``s`` on rows ``offsets[s]`` (its root) to ``offsets[s + 1] - 1``; ``heads``
holds the gold (training) head of every row (-1 on root rows) and
``labels`` the relation label index (-1 on root rows, or everywhere when no
labels are learnt).

Training (``train_part``, compiled per loss by :func:`train_kernel`) scores
a sentence's arcs (``_scoring_fast``), computes its loss and the gradient
with respect to the arc scores (``losses._tree_fast``), and pushes that
gradient through the hashed features into the online learner's sparse
gradient.
"""

from typing import NamedTuple

import numpy as np

from ..feature_extraction._arc_features_fast import index_shift, label_index, new_states
from ..learners._online_fast import push
from ..inference._sparsemap_fast import SparseMAPOptions
from ..losses._kinds_fast import CRF, HINGE, MARGIN_SPARSEMAP, PERCEPTRON, SPARSEMAP
from ..losses._tree_fast import tree_loss
from ..structures._tree_fast import best_tree
from ..utils._numba import njit
from ._scoring_fast import (
    add_arc,
    label_scores,
    label_work,
    sentence_scores,
    sparsified,
)

__all__ = ["ArcModel", "TrainingOptions", "Treebank", "decode_kernel", "score_sentence",
           "train_kernel"]


class Treebank(NamedTuple):
    """Stacked encoded sentences and their gold trees (see the module docstring)."""

    tokens: np.ndarray
    offsets: np.ndarray
    heads: np.ndarray
    labels: np.ndarray


class ArcModel(NamedTuple):
    """How the weights score and decode a sentence.

    Attributes
    ----------
    preset : int
        Feature templates (``ArcFeatures`` preset code).
    mask : int
        ``n_features - 1`` (the hashed feature space is a power of two).
    n_labels : int
        Relation labels (0: none learnt).
    root_label : int
        Index of UD's ``root`` relation, given to every word attached to the
        root and to no other word; -1 when there is none.
    keys : ndarray of int64
        Sorted keys of the arcs the tag filter keeps.
    use_filter : bool
        Whether to filter the arcs by ``keys``.
    projective, single_root : bool
        The kind of trees.
    """

    preset: int
    mask: int
    n_labels: int
    root_label: int
    keys: np.ndarray
    use_filter: bool
    projective: bool
    single_root: bool


class TrainingOptions(NamedTuple):
    """What a training step computes besides the scores.

    Attributes
    ----------
    kind : int
        The loss (``losses._kinds_fast`` code).
    label_margin : float
        Margin of the relation labeller's multiclass hinge loss.
    sparsemap : SparseMAPOptions
        The active set's settings, for the SparseMAP losses (``max_iter``
        None: the limit grows with the sentence, ``iteration_limit``).
    min_gradient : float
        Gradient entries smaller than this in absolute value are sparsified
        without bias (:func:`~._scoring_fast.sparsified`); 0 keeps them all.
    seed : int
        Key of those random draws.
    """

    kind: int
    label_margin: float
    sparsemap: SparseMAPOptions
    min_gradient: float
    seed: int


@njit(inline="always")
def _longest(offsets, sent_ids):
    L = 0
    for t in range(sent_ids.shape[0]):
        s = sent_ids[t]
        n = offsets[s + 1] - offsets[s] - 1
        if n > L:
            L = n
    return L


@njit(inline="always")
def _square(buffer, n):
    """The first ``n * n`` entries of ``buffer`` as a C-contiguous ``(n, n)`` matrix.

    Slicing a larger matrix instead would give a non-contiguous array, and
    every kernel it reaches would be compiled a second time for that layout.
    """
    return buffer[: n * n].reshape(n, n)


@njit
def label_hinge_step(tokens, start, n, gold, gold_labels, w, n_labels, margin, shift, mask,
                     fbuf, bases, lab_s, grad, col, touched, n_touched, stamp):
    """The relation labeller's multiclass hinge on the gold arcs of one sentence.

    For every word ``m`` (gold head ``gold[start + m]``, label
    ``gold_labels[start + m]``), the label scores of its gold arc with
    ``margin`` added to the wrong labels; when a wrong label wins, pushes
    the features of the arc conjoined with that label (+1) and with the
    gold label (-1). Returns the new touched count and the sentence's
    label loss.
    """
    label_loss = 0.0
    for m in range(1, n + 1):
        h = gold[start + m]
        y = gold_labels[start + m]
        k = label_scores(tokens, start, n, h, m, w, n_labels, shift, mask, fbuf, bases, lab_s)
        best = -1
        best_score = -np.inf
        for lab in range(n_labels):
            v = lab_s[lab] + (0.0 if lab == y else margin)
            if v > best_score:
                best_score = v
                best = lab
        if best != y:
            label_loss += best_score - lab_s[y]
            for j in range(k):
                n_touched = push(label_index(fbuf[j], best, shift, mask), 1.0, grad, col,
                                 touched, n_touched, stamp)
                n_touched = push(label_index(fbuf[j], y, shift, mask), -1.0, grad, col,
                                 touched, n_touched, stamp)
    return n_touched, label_loss


def _train_part_kernel(kind, projective):
    """``train_part`` compiled for the loss ``kind`` on (non-)projective trees."""

    @njit
    def train_part(treebank, model, options, sent_ids, w, gradient, part, stamp, losses,
                   label_losses):
        """Losses and gradients of the sentences ``sent_ids`` (one part of a mini-batch).

        Adds the gradients to part ``part`` of ``gradient`` (a
        ``SparseGradient``; ``stamp`` is the step number) and sets its
        ``n_touched[part]``; writes each sentence's parsing loss and
        relation-label loss (multiclass hinge with margin
        ``options.label_margin``) into ``losses`` / ``label_losses`` (indexed
        like ``sent_ids``). Gradient entries below ``options.min_gradient`` in
        absolute value go through :func:`sparsified` (keyed by ``options.seed``,
        ``stamp``, the sentence and the arc): the CRF's marginals are dense but
        mostly tiny, and pushing every arc's features would dominate its epochs;
        the sparsified gradient has the same expectation. Returns the number of
        SparseMAP solves that did not converge.

        ``kind`` (the loss, ``options.kind``) and ``projective``
        (``model.projective``) are constants of the closure
        (:func:`train_kernel` gives the one a model needs): only the branches of
        that loss and tree kind are compiled.
        """
        tokens = treebank.tokens
        offsets = treebank.offsets
        gold = treebank.heads
        gold_labels = treebank.labels
        preset = model.preset
        mask = model.mask
        n_labels = model.n_labels
        min_gradient = options.min_gradient
        seed = options.seed
        L = _longest(offsets, sent_ids)
        S = np.empty((L + 1) * (L + 1))
        D = np.empty((L + 1) * (L + 1))
        A = np.empty((L + 1) * (L + 1))
        heads = np.empty(L + 1, dtype=np.int64)
        HS, MS, aux, buf = new_states(L)
        buf2 = np.empty_like(buf)
        shift = index_shift(mask)
        fbuf, bases, lab_s = label_work(n_labels)
        grad = gradient.values
        touched = gradient.touched[part]
        col = 2 * part
        n_touched = 0
        not_converged = 0
        for t in range(sent_ids.shape[0]):
            s = sent_ids[t]
            start = offsets[s]
            n = offsets[s + 1] - start - 1
            Ss = _square(S, n + 1)
            Ds = _square(D, n + 1)
            As = _square(A, n + 1)
            sentence_scores(tokens, start, n, w, preset, mask, model.keys, model.use_filter, Ss,
                            HS, MS, aux, buf, buf2)
            loss, converged = tree_loss(
                kind, Ss, gold[start:start + n + 1], n, projective,
                model.single_root, options.sparsemap, Ds, heads, As,
            )
            if not converged:
                not_converged += 1
            losses[t] = loss
            for h in range(n + 1):
                for m in range(1, n + 1):
                    if h == m:
                        continue
                    v = sparsified(Ds[h, m], min_gradient, seed, stamp, s, h * (n + 1) + m)
                    if v != 0.0:
                        n_touched = add_arc(tokens, start, n, h, m, v, preset, HS, MS, aux,
                                            shift, mask, buf, grad, col, touched, n_touched,
                                            stamp)
            label_loss = 0.0
            if n_labels > 0:
                n_touched, label_loss = label_hinge_step(
                    tokens, start, n, gold, gold_labels, w, n_labels, options.label_margin,
                    shift, mask, fbuf, bases, lab_s, grad, col, touched, n_touched, stamp)
            label_losses[t] = label_loss
        gradient.n_touched[part] = n_touched
        return not_converged

    return train_part


@njit
def label_arcs(tokens, start, n, heads, w, n_labels, root_label, shift, mask, fbuf, bases,
               lab_s, labels_out):
    """The best relation label of every arc of the tree ``heads`` (length ``n + 1``).

    Written to ``labels_out[start + m]``. A word attached to the root gets
    ``root_label`` (when it is >= 0) and no other word does.
    """
    for m in range(1, n + 1):
        if heads[m] == 0 and root_label >= 0:
            labels_out[start + m] = root_label
            continue
        label_scores(tokens, start, n, heads[m], m, w, n_labels, shift, mask, fbuf, bases,
                     lab_s)
        best = -1
        for lab in range(n_labels):
            if lab == root_label:
                continue
            if best < 0 or lab_s[lab] > lab_s[best]:
                best = lab
        labels_out[start + m] = best if best >= 0 else root_label


def _decode_part_kernel(projective):
    """``decode_part`` compiled for (non-)projective trees."""

    @njit
    def decode_part(treebank, model, sent_ids, w, heads_out, labels_out):
        """MAP trees (and best labels of their arcs) of the sentences ``sent_ids``.

        With ``model.root_label >= 0`` (the index of UD's ``root`` relation),
        the words attached to the root get it and no other word does.

        Writes rows of ``heads_out`` / ``labels_out`` (the stacked layout of
        ``treebank.tokens``). Returns the index of the first sentence without a
        tree, or -1. ``projective`` (``model.projective``) is a constant of the
        closure (:func:`decode_kernel`).
        """
        tokens = treebank.tokens
        offsets = treebank.offsets
        mask = model.mask
        n_labels = model.n_labels
        root_label = model.root_label
        L = _longest(offsets, sent_ids)
        S = np.empty((L + 1) * (L + 1))
        HS, MS, aux, buf = new_states(L)
        buf2 = np.empty_like(buf)
        shift = index_shift(mask)
        fbuf, bases, lab_s = label_work(n_labels)
        row = np.empty(L + 1, dtype=np.int64)
        for t in range(sent_ids.shape[0]):
            s = sent_ids[t]
            start = offsets[s]
            n = offsets[s + 1] - start - 1
            Ss = _square(S, n + 1)
            sentence_scores(tokens, start, n, w, model.preset, mask, model.keys, model.use_filter,
                            Ss, HS, MS, aux, buf, buf2)
            hr = row[: n + 1]
            if not best_tree(Ss, projective, model.single_root, hr):
                return s
            for m in range(n + 1):
                heads_out[start + m] = hr[m]
            labels_out[start] = -1
            if n_labels > 0:
                label_arcs(tokens, start, n, hr, w, n_labels, root_label, shift, mask, fbuf,
                           bases, lab_s, labels_out)
        return -1

    return decode_part


@njit
def score_sentence(treebank, model, s, w):
    """The ``(n + 1, n + 1)`` arc scores of sentence ``s`` (``DependencyTree`` layout)."""
    start = treebank.offsets[s]
    n = treebank.offsets[s + 1] - start - 1
    S = np.empty((n + 1, n + 1))
    HS, MS, aux, buf = new_states(n)
    sentence_scores(treebank.tokens, start, n, w, model.preset, model.mask, model.keys,
                    model.use_filter, S, HS, MS, aux, buf, np.empty_like(buf))
    return S


# One compiled kernel per loss and tree kind: a fit compiles only the oracle,
# marginals or active set that its loss needs, not those of every loss.
_TRAIN_KERNELS = {
    (kind, projective): _train_part_kernel(kind, projective)
    for kind in (CRF, HINGE, PERCEPTRON, SPARSEMAP, MARGIN_SPARSEMAP)
    for projective in (False, True)
}
_DECODE_KERNELS = {projective: _decode_part_kernel(projective) for projective in (False, True)}


def train_kernel(kind, projective):
    """The compiled ``train_part`` of loss ``kind`` on (non-)projective trees.

    Called as ``train_kernel(kind, projective)(treebank, model, options,
    sent_ids, w, gradient, part, stamp, losses, label_losses)``.
    """
    return _TRAIN_KERNELS[int(kind), bool(projective)]


def decode_kernel(projective):
    """The compiled ``decode_part`` of (non-)projective trees.

    Called as ``decode_kernel(projective)(treebank, model, sent_ids, w,
    heads_out, labels_out)``.
    """
    return _DECODE_KERNELS[bool(projective)]
