"""Numba kernels of the second-order parser: scoring and pushing one sentence's parts.

The sentence's factor graph and its solve are in Python
(``_second_order.py``); these kernels do the feature work around them:
the arcs' scores (``_scoring_fast.sentence_scores``), and, once the solver
has given the marginals, the push of ``marginals - gold`` through the arc
features together with the relation labeller's step.
"""

import numpy as np

from ..feature_extraction._arc_features_fast import index_shift, new_states, token_states
from ..feature_extraction._part_features_fast import (
    add_grandparent_parts,
    add_sibling_parts,
    grandparent_scores,
    part_states,
    sibling_scores,
)
from ..utils._numba import njit
from ._parser_fast import label_arcs, label_hinge_step
from ._scoring_fast import add_arc, label_work, sentence_scores

__all__ = ["arc_work", "label_tree", "push_arcs", "push_parts", "score_arcs", "score_parts"]


@njit
def arc_work(L, n_labels):
    """Work arrays for sentences of up to ``L`` words: the arc states, buffers, labels."""
    HS, MS, aux, buf = new_states(L)
    fbuf, bases, lab_s = label_work(n_labels)
    return HS, MS, aux, buf, np.empty_like(buf), fbuf, bases, lab_s


@njit
def score_arcs(treebank, model, s, w, work):
    """The ``(n + 1, n + 1)`` arc scores of sentence ``s`` (as ``score_sentence``)."""
    HS, MS, aux, buf, buf2 = work[0], work[1], work[2], work[3], work[4]
    start = treebank.offsets[s]
    n = treebank.offsets[s + 1] - start - 1
    S = np.empty((n + 1, n + 1))
    sentence_scores(treebank.tokens, start, n, w, model.preset, model.mask, model.keys,
                    model.use_filter, S, HS, MS, aux, buf, buf2)
    return S


@njit
def push_arcs(treebank, model, s, w, coef, label_margin, work, grad, col, touched, n_touched,
              stamp):
    """Push ``coef[h, m]`` times the features of every arc, then the labeller's step.

    ``coef`` is the gradient of the loss with respect to the arc scores
    (``(n + 1, n + 1)``; zeros are skipped). With relation labels
    (``model.n_labels > 0``), the labeller's multiclass hinge step on the
    gold arcs of sentence ``s`` follows (``label_hinge_step``). Returns the
    new touched count and the label loss.
    """
    HS, MS, aux, buf = work[0], work[1], work[2], work[3]
    fbuf, bases, lab_s = work[5], work[6], work[7]
    tokens = treebank.tokens
    start = treebank.offsets[s]
    n = treebank.offsets[s + 1] - start - 1
    mask = model.mask
    shift = index_shift(mask)
    token_states(tokens, start, n, HS, MS, aux)
    for h in range(n + 1):
        for m in range(1, n + 1):
            v = coef[h, m]
            if h != m and v != 0.0:
                n_touched = add_arc(tokens, start, n, h, m, v, model.preset, HS, MS, aux, shift,
                                    mask, buf, grad, col, touched, n_touched, stamp)
    label_loss = 0.0
    if model.n_labels > 0:
        n_touched, label_loss = label_hinge_step(
            tokens, start, n, treebank.heads, treebank.labels, w, model.n_labels, label_margin,
            shift, mask, fbuf, bases, lab_s, grad, col, touched, n_touched, stamp)
    return n_touched, label_loss


@njit
def label_tree(treebank, model, s, heads, w, work, labels_out):
    """Relation labels of the tree ``heads`` of sentence ``s``, into its rows of ``labels_out``.

    ``labels_out`` is stacked like ``treebank.tokens`` (rows ``start + 1``
    to ``start + n``).
    """
    fbuf, bases, lab_s = work[5], work[6], work[7]
    start = treebank.offsets[s]
    n = treebank.offsets[s + 1] - start - 1
    label_arcs(treebank.tokens, start, n, heads, w, model.n_labels, model.root_label,
               index_shift(model.mask), model.mask, fbuf, bases, lab_s, labels_out)


@njit
def score_parts(treebank, model, tags, s, w, work, siblings, grandparents):
    """Scores of the sibling and grandparent parts (rows ``(k, 3)``) of sentence ``s``.

    ``tags`` chooses the tags of the triple templates
    (``_part_features_fast.TAGS_*``); ``work`` is a ``new_part_work``.
    """
    start = treebank.offsets[s]
    n = treebank.offsets[s + 1] - start - 1
    part_states(treebank.tokens, start, n, work)
    sib = np.empty(siblings.shape[0])
    gp = np.empty(grandparents.shape[0])
    if siblings.shape[0]:
        sibling_scores(treebank.tokens, start, n, siblings, w, model.preset, tags, model.mask,
                       work, sib)
    if grandparents.shape[0]:
        grandparent_scores(treebank.tokens, start, n, grandparents, w, model.preset, tags,
                           model.mask, work, gp)
    return sib, gp


@njit
def push_parts(treebank, model, tags, s, work, siblings, sibling_coef, grandparents,
               grandparent_coef, grad, col, touched, n_touched, stamp):
    """Push ``coef[i]`` times the features of every sibling and grandparent part."""
    start = treebank.offsets[s]
    n = treebank.offsets[s + 1] - start - 1
    part_states(treebank.tokens, start, n, work)
    if siblings.shape[0]:
        n_touched = add_sibling_parts(treebank.tokens, start, n, siblings, sibling_coef,
                                      model.preset, tags, model.mask, work, grad, col, touched,
                                      n_touched, stamp)
    if grandparents.shape[0]:
        n_touched = add_grandparent_parts(treebank.tokens, start, n, grandparents,
                                          grandparent_coef, model.preset, tags, model.mask,
                                          work, grad, col, touched, n_touched, stamp)
    return n_touched
