"""Numba kernels of the tagger's block-coordinate Frank-Wolfe problem.

The structure space of a sequence of ``n`` tokens with ``K`` labels has
``n K + K K`` entries: the label indicators of the tokens (row ``t``,
column ``b`` at ``t K + b``) followed by the transition counts (``a``
followed by ``b`` at ``n K + a K + b``). The start and end features are
the indicators of the first and last tokens. Every vector of that space
has a joint feature vector (the kernels accept differences of
structures); parameters that are pinned at zero or forbidden get none.
Data layout and scores are those of ``_chain_fast``.
"""

import numpy as np

from ..learners._bcfw_fast import step
from ..losses._sequence_fast import add_hamming_cost, gold_score
from ..structures._sequence_fast import viterbi
from ..utils._numba import njit
from ._chain_fast import ChainScores, _fill_scores, _find_pair, _scores_of

__all__ = ["chain_bcfw_pass", "chain_joint_feature", "chain_loss_augmented"]


@njit
def chain_loss_augmented(chains, scores, s, u, m):
    """Hamming-cost-augmented Viterbi of sequence ``s``, as a structure into ``m``.

    ``u`` is a score buffer of at least ``n`` rows; ``m`` has ``n K + K K``
    entries. Returns ``(cost, loss)``: the Hamming distance of the decoded
    labels to the gold ones and the structured hinge loss of the sequence.
    """
    K = scores.trans.shape[0]
    for j in range(m.shape[0]):
        m[j] = 0.0
    r0, r1 = _scores_of(chains, scores, s, u)
    n = r1 - r0
    if n == 0:
        return 0.0, 0.0
    us = u[:n]
    gold = chains.gold[r0:r1]
    reference = gold_score(us, scores.trans, gold)
    add_hamming_cost(us, gold, 1.0)
    labels, best = viterbi(us.copy(), scores.trans)
    cost = 0.0
    for t in range(n):
        m[t * K + labels[t]] = 1.0
        if labels[t] != gold[t]:
            cost += 1.0
        if t > 0:
            m[n * K + labels[t - 1] * K + labels[t]] += 1.0
    # Rounding only: the gold sequence is among the candidates.
    return cost, max(best - reference, 0.0)


@njit
def chain_joint_feature(chains, s, m, K, tail_learned):
    """The joint feature vector of the structure-space vector ``m`` of sequence ``s``.

    Returns ``(indices, values)`` into the parameters (unary pairs, then
    transitions, start, end); an index repeats when tokens share a feature.
    """
    r0 = chains.offsets[s]
    n = chains.offsets[s + 1] - r0
    P = chains.pair_label.shape[0]
    size = K * K + 2 * K
    for t in range(n):
        nonzero = 0
        for b in range(K):
            if m[t * K + b] != 0.0:
                nonzero += 1
        size += nonzero * (chains.indptr[r0 + t + 1] - chains.indptr[r0 + t])
    indices = np.empty(size, dtype=np.int64)
    values = np.empty(size)
    c = 0
    for t in range(n):
        row = t * K
        for k in range(chains.indptr[r0 + t], chains.indptr[r0 + t + 1]):
            x = chains.data[k]
            p0 = chains.pair_start[k]
            p1 = chains.pair_stop[k]
            for b in range(K):
                v = m[row + b]
                if v == 0.0:
                    continue
                # A dense attribute has every label in order.
                p = p0 + b if p1 - p0 == K else _find_pair(chains.pair_label, p0, p1, b)
                if p >= 0:
                    indices[c] = p
                    values[c] = x * v
                    c += 1
    if n > 0:
        for b in range(K):
            v = m[b]
            if v != 0.0 and tail_learned[K * K + b] > 0.0:
                indices[c] = P + K * K + b
                values[c] = v
                c += 1
            v = m[(n - 1) * K + b]
            if v != 0.0 and tail_learned[K * K + K + b] > 0.0:
                indices[c] = P + K * K + K + b
                values[c] = v
                c += 1
    for j in range(K * K):
        v = m[n * K + j]
        if v != 0.0 and tail_learned[j] > 0.0:
            indices[c] = P + j
            values[c] = v
            c += 1
    return indices[:c], values[:c]


@njit
def chain_bcfw_pass(chains, forbidden, order, u, m, diff, tail_learned, state):
    """One pass of the BCFW learner over the sequences ``order``, in one call.

    For each sequence: :func:`chain_loss_augmented` at the current weights
    ``state.w`` (plus the ``-inf``/0 masks ``forbidden`` of the transition,
    start and end scores), the joint feature vector of the block minus the
    decoding, and ``learners._bcfw_fast.step``: the operations of the
    learner's own loop over the problem's methods, so the same result.
    ``u``, ``m`` and ``diff`` are buffers for the longest sequence. Returns
    the statistics (hinge losses, mistakes) summed in order, and the first
    bad step's sequence (-1 if none; it stops there).
    """
    w = state.w
    K = forbidden[1].shape[0]
    P = w.shape[0] - K * K - 2 * K
    trans, start, end = np.empty((K, K)), np.empty(K), np.empty(K)
    total = np.zeros(2)
    for t in range(order.shape[0]):
        s = order[t]
        _fill_scores(w, P, forbidden, trans, start, end)
        a = state.block_ptr[s]
        b = state.block_ptr[s + 1]
        ms = m[:b - a]
        cost, loss = chain_loss_augmented(chains, ChainScores(w[:P], trans, start, end), s, u,
                                          ms)
        total[0] += loss
        total[1] += 1.0 if cost > 0.0 else 0.0
        d = diff[:b - a]
        for j in range(b - a):
            d[j] = state.blocks[a + j] - ms[j]
        indices, values = chain_joint_feature(chains, s, d, K, tail_learned)
        if step(state, s, ms, cost, indices, values) >= 0:
            return total, s
    return total, -1
