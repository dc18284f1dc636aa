"""Numba kernels of the linear-chain tagger: scores, and losses pushed through the features.

Data layout (:class:`Chains`, built by the estimator, never validated here):

- Unary parameters are the (attribute, label) pairs of the model, grouped by
  attribute: pair ``p`` scores label ``pair_label[p]`` with weight ``w[p]``.
  With every label allowed for every attribute this is a dense
  ``(n_attributes, n_labels)`` matrix; by default only the pairs seen in
  training exist (as in CRFsuite), which is several times smaller.
  Attributes are numbered by decreasing frequency, so that the weights of
  the frequent ones share a few cache lines.
- Tokens of all sequences are stacked in CSR form: token ``i`` has the
  entries ``indptr[i] .. indptr[i + 1]``; entry ``k`` has the value
  ``data[k]`` and its attribute's pairs are ``pair_start[k] ..
  pair_stop[k]`` (resolved once per fit, so the hot loops never look up
  the attribute: one cache miss less per rare feature). ``offsets[s] ..
  offsets[s + 1]`` are the tokens of sequence ``s``, ``gold`` the gold
  label of every token.
- Transitions are a dense ``(K, K)`` matrix with ``-inf`` for forbidden
  transitions; ``start``/``end`` score the first and the last label
  (:class:`ChainScores`).

The part kernels handle a list of sequences end to end (scores, loss from
``losses._sequence_fast``, gradient through the features) so that a
sequence's features are read while they are in cache. Their gradient goes
(:class:`ChainGradient`) either into dense buffers, which the callers add
in a fixed order (full-batch solvers), or into the online learner's sparse
gradient (``learners._online_fast``): either way results do not depend on
the number of threads.
"""

from typing import NamedTuple

import numpy as np

from ..learners._online_fast import SparseGradient, apply_update, push
from ..losses._kinds_fast import CRF
from ..losses._sequence_fast import sequence_loss, sequence_loss_work, sequence_sparsemap_loss
from ..structures._sequence_fast import forward_backward, viterbi
from ..utils._numba import njit

__all__ = ["ChainGradient", "ChainScores", "Chains", "chain_part", "chain_sparsemap_part",
           "chain_steps", "decode_part", "unary_part"]


class Chains(NamedTuple):
    """Stacked token features of the sequences, resolved to the model's pairs."""

    indptr: np.ndarray
    pair_start: np.ndarray
    pair_stop: np.ndarray
    data: np.ndarray
    pair_label: np.ndarray
    offsets: np.ndarray
    gold: np.ndarray


class ChainScores(NamedTuple):
    """The weights as scores: unary pairs, transitions, start and end (``-inf``: forbidden)."""

    w: np.ndarray
    trans: np.ndarray
    start: np.ndarray
    end: np.ndarray


class ChainGradient(NamedTuple):
    """Where a part kernel writes its gradient.

    Attributes
    ----------
    unary : ndarray of shape (n_pairs,) or (0,)
        Dense gradient of the unary pairs; when empty, the unary entries
        go into ``sparse`` instead.
    trans, start, end : ndarray
        Dense gradients of the transition, start and end scores, added to;
        with ``sparse``, pushed into it at the end of the part and left at
        zero.
    sparse : SparseGradient
        The online learner's gradient (empty arrays in dense mode).
    part : int
        The part of ``sparse`` to write.
    stamp : int
        The learner's step number.
    tail_learned : ndarray of shape (K * K + 2 * K,)
        1 for the transition, start and end weights that are learned, 0
        for those pinned at zero (they get no gradient).
    """

    unary: np.ndarray
    trans: np.ndarray
    start: np.ndarray
    end: np.ndarray
    sparse: SparseGradient
    part: int
    stamp: int
    tail_learned: np.ndarray


@njit
def token_scores(indptr, pair_start, pair_stop, data, pair_label, w, r0, r1, u):
    """``u[t] = sum_k x[r0 + t, a_k] w[pairs of a_k]`` for the tokens ``r0 .. r1``.

    Attributes having every label are stored densely (labels ``0 .. K-1`` in
    order): their loop is a contiguous, vectorizable axpy on a view indexed
    from 0 (``w[p0 + b]`` would need a negative-index check per access).
    """
    K = u.shape[1]
    for t in range(r1 - r0):
        row = u[t]
        for b in range(K):
            row[b] = 0.0
        for k in range(indptr[r0 + t], indptr[r0 + t + 1]):
            x = data[k]
            p0 = pair_start[k]
            p1 = pair_stop[k]
            if p1 - p0 == K:
                dense = w[p0:p1]
                for b in range(K):
                    row[b] += x * dense[b]
            else:
                for p in range(p0, p1):
                    row[pair_label[p]] += x * w[p]


@njit
def token_gradient(indptr, pair_start, pair_stop, data, pair_label, g, r0, r1, grad):
    """``grad[p] += sum_t x[r0 + t, a] g[t, pair_label[p]]``: adjoint of :func:`token_scores`."""
    K = g.shape[1]
    for t in range(r1 - r0):
        row = g[t]
        for k in range(indptr[r0 + t], indptr[r0 + t + 1]):
            x = data[k]
            p0 = pair_start[k]
            p1 = pair_stop[k]
            if p1 - p0 == K:
                dense = grad[p0:p1]
                for b in range(K):
                    dense[b] += x * row[b]
            else:
                for p in range(p0, p1):
                    grad[p] += x * row[pair_label[p]]


@njit
def sequence_scores(indptr, pair_start, pair_stop, data, pair_label, w, start, end, r0, r1, u):
    """Unary scores of one sequence with the start / end scores added (into ``u[:n]``)."""
    n = r1 - r0
    token_scores(indptr, pair_start, pair_stop, data, pair_label, w, r0, r1, u)
    K = u.shape[1]
    for b in range(K):
        u[0, b] += start[b]
        u[n - 1, b] += end[b]



# A token whose gradient row has at most this many nonzero labels (the hinge
# and perceptron losses: two) looks its pairs up by bisection instead of
# scanning all the pairs of each attribute.
_FEW_LABELS = 4


@njit
def _find_pair(pair_label, lo, hi, label):
    """Index of the pair of ``label`` among ``lo .. hi`` (labels sorted), or -1."""
    while lo < hi:
        mid = (lo + hi) // 2
        v = pair_label[mid]
        if v < label:
            lo = mid + 1
        elif v > label:
            hi = mid
        else:
            return mid
    return -1


@njit
def token_push(indptr, pair_start, pair_stop, data, pair_label, g, r0, r1, sparse, part, stamp,
               n_touched):
    """:func:`token_gradient` into part ``part`` of a ``SparseGradient``; returns the new count.

    Tokens whose gradient row is zero (most tokens for the hinge and
    perceptron losses) are skipped; the pairs of a row with few nonzero
    labels are found by bisection (an attribute's pairs are sorted by label).
    """
    K = g.shape[1]
    grad = sparse.values
    touched = sparse.touched[part]
    col = 2 * part
    labels = np.empty(_FEW_LABELS, dtype=np.int64)
    for t in range(r1 - r0):
        row = g[t]
        n_nonzero = 0
        for b in range(K):
            if row[b] != 0.0:
                if n_nonzero < _FEW_LABELS:
                    labels[n_nonzero] = b
                n_nonzero += 1
        if n_nonzero == 0:
            continue
        for k in range(indptr[r0 + t], indptr[r0 + t + 1]):
            x = data[k]
            if n_nonzero <= _FEW_LABELS:
                for j in range(n_nonzero):
                    p = _find_pair(pair_label, pair_start[k], pair_stop[k], labels[j])
                    if p >= 0:
                        v = x * row[labels[j]]
                        if v != 0.0:
                            n_touched = push(p, v, grad, col, touched, n_touched, stamp)
            else:
                for p in range(pair_start[k], pair_stop[k]):
                    v = x * row[pair_label[p]]
                    if v != 0.0:
                        n_touched = push(p, v, grad, col, touched, n_touched, stamp)
    return n_touched


@njit
def max_length(offsets, seq_ids):
    m = 1
    for s in seq_ids:
        m = max(m, offsets[s + 1] - offsets[s])
    return m




@njit
def _add_token_gradient(chains, g, r0, r1, out, n_touched):
    """Push the gradient ``g`` of the tokens ``r0 .. r1`` through their features."""
    if out.unary.shape[0] == 0:
        return token_push(chains.indptr, chains.pair_start, chains.pair_stop, chains.data,
                          chains.pair_label, g, r0, r1, out.sparse, out.part, out.stamp,
                          n_touched)
    token_gradient(chains.indptr, chains.pair_start, chains.pair_stop, chains.data,
                   chains.pair_label, g, r0, r1, out.unary)
    return n_touched


@njit
def _finish_part(chains, out, n_touched):
    """In sparse mode, push the learned transition / start / end gradients and the count.

    The dense transition, start and end buffers are zeroed on the way, so
    that the caller can hand them to the next call.
    """
    if out.unary.shape[0] != 0:
        return
    K = out.trans.shape[0]
    grad = out.sparse.values
    touched = out.sparse.touched[out.part]
    col = 2 * out.part
    base = chains.pair_label.shape[0]
    learned = out.tail_learned
    for a in range(K):
        for b in range(K):
            v = out.trans[a, b]
            if v != 0.0:
                out.trans[a, b] = 0.0
                if learned[a * K + b] > 0.0:
                    n_touched = push(base + a * K + b, v, grad, col, touched, n_touched,
                                     out.stamp)
    for a in range(K):
        v = out.start[a]
        if v != 0.0:
            out.start[a] = 0.0
            if learned[K * K + a] > 0.0:
                n_touched = push(base + K * K + a, v, grad, col, touched, n_touched, out.stamp)
        v = out.end[a]
        if v != 0.0:
            out.end[a] = 0.0
            if learned[K * K + K + a] > 0.0:
                n_touched = push(base + K * K + K + a, v, grad, col, touched, n_touched,
                                 out.stamp)
    out.sparse.n_touched[out.part] = n_touched


@njit
def _buffers(chains, trans, seq_ids):
    """Score and gradient buffers for the longest sequence of ``seq_ids``."""
    L = max_length(chains.offsets, seq_ids)
    return np.empty((L, trans.shape[0])), np.empty((L, trans.shape[0]))


@njit
def _any_nonzero(g, n):
    for t in range(n):
        for b in range(g.shape[1]):
            if g[t, b] != 0.0:
                return True
    return False


@njit
def _scores_of(chains, scores, s, u):
    """Scores of sequence ``s`` into ``u[:n]``; returns ``(r0, r1)``."""
    r0 = chains.offsets[s]
    r1 = chains.offsets[s + 1]
    if r1 > r0:
        sequence_scores(chains.indptr, chains.pair_start, chains.pair_stop, chains.data,
                        chains.pair_label, scores.w, scores.start, scores.end, r0, r1, u)
    return r0, r1


@njit
def chain_part(kind, chains, scores, seq_ids, out, losses):
    """CRF, hinge or perceptron losses and gradients of the sequences ``seq_ids``.

    Writes the loss of ``seq_ids[t]`` into ``losses[t]`` and the gradients
    into ``out`` (a :class:`ChainGradient`). Returns how many sequences have a nonzero
    gradient (for the hinge and perceptron losses: those whose
    (cost-augmented) MAP is not the gold sequence).
    """
    trans = scores.trans
    u, g = _buffers(chains, trans, seq_ids)
    work = sequence_loss_work(u.shape[0], trans, kind == CRF)
    n_touched = 0
    wrong = 0
    for t in range(seq_ids.shape[0]):
        losses[t], nonzero, n_touched = _chain_sequence(kind, chains, scores, seq_ids[t], u, g,
                                                        work, out, n_touched)
        wrong += nonzero
    _finish_part(chains, out, n_touched)
    return wrong


@njit
def _chain_sequence(kind, chains, scores, s, u, g, work, out, n_touched):
    """Loss of sequence ``s`` and its gradient into ``out`` (see :func:`chain_part`).

    Returns the loss, whether the gradient is nonzero (hinge, perceptron) and
    the new count of touched coordinates.
    """
    r0, r1 = _scores_of(chains, scores, s, u)
    n = r1 - r0
    if n == 0:
        return 0.0, False, n_touched
    loss = sequence_loss(kind, u, n, scores.trans, chains.gold[r0:r1], work, g, out.trans,
                         out.start, out.end)
    nonzero = kind != CRF and _any_nonzero(g, n)
    n_touched = _add_token_gradient(chains, g[:n], r0, r1, out, n_touched)
    return loss, nonzero, n_touched


@njit
def chain_sparsemap_part(kind, chains, scores, seq_ids, sparsemap_options, out, losses):
    """SparseMAP or margin-SparseMAP losses and gradients of the sequences ``seq_ids``.

    Same outputs as :func:`chain_part`; returns the number of sequences
    whose active-set solver stopped before convergence.
    """
    trans = scores.trans
    u, g = _buffers(chains, trans, seq_ids)
    n_touched = 0
    not_converged = 0
    for t in range(seq_ids.shape[0]):
        r0, r1 = _scores_of(chains, scores, seq_ids[t], u)
        n = r1 - r0
        losses[t] = 0.0
        if n == 0:
            continue
        losses[t], converged = sequence_sparsemap_loss(
            kind, u, n, trans, chains.gold[r0:r1], sparsemap_options, g, out.trans, out.start,
            out.end,
        )
        if not converged:
            not_converged += 1
        n_touched = _add_token_gradient(chains, g[:n], r0, r1, out, n_touched)
    _finish_part(chains, out, n_touched)
    return not_converged


@njit
def decode_part(marginals, chains, scores, seq_ids, out_labels, out_mu):
    """Viterbi labels (into ``out_labels``) or marginals (into ``out_mu``) per token.

    Returns the first sequence that no label sequence can tag (every one uses
    a forbidden transition, start or end), or -1.
    """
    trans = scores.trans
    u = np.empty((max_length(chains.offsets, seq_ids), trans.shape[0]))
    infeasible = -1
    for s in seq_ids:
        r0, r1 = _scores_of(chains, scores, s, u)
        n = r1 - r0
        if n == 0:
            continue
        us = u[:n].copy()
        # Copies by loops: a slice assignment compiles numba's shape-mismatch
        # error path (string formatting), seconds of a first run.
        if marginals:
            mu, xi, best = forward_backward(us, trans)
            for i in range(n):
                for a in range(mu.shape[1]):
                    out_mu[r0 + i, a] = mu[i, a]
        else:
            labels, best = viterbi(us, trans)
            for i in range(n):
                out_labels[r0 + i] = labels[i]
        if best == -np.inf and infeasible < 0:
            infeasible = s
    return infeasible


@njit
def unary_part(chains, w, seq_ids, out):
    """Unary scores (without start / end) of the tokens of ``seq_ids`` into ``out``."""
    for s in seq_ids:
        r0 = chains.offsets[s]
        r1 = chains.offsets[s + 1]
        if r1 > r0:
            token_scores(chains.indptr, chains.pair_start, chains.pair_stop, chains.data,
                         chains.pair_label, w, r0, r1, out[r0:r1])


@njit
def _fill_scores(w, P, forbidden, trans, start, end):
    """The transition, start and end scores of the parameter vector ``w`` (after the
    ``P`` unary pairs), with ``forbidden``'s ``-inf`` added, into the three arrays."""
    K = start.shape[0]
    for a in range(K):
        for b in range(K):
            trans[a, b] = w[P + a * K + b] + forbidden[0][a, b]
    for a in range(K):
        start[a] = w[P + K * K + a] + forbidden[1][a]
        end[a] = w[P + K * K + K + a] + forbidden[2][a]


@njit
def chain_steps(kind, chains, w, forbidden, seq_ids, sparse, first_step, scale, opt, rule,
                tail_learned):
    """One online update per sequence of ``seq_ids``, in order (CRF, hinge or perceptron).

    The same operations as the online learner stepping through batches of
    one sequence (``learners._online``): the gradient of sequence ``t`` goes
    into part 0 of ``sparse`` at step ``first_step + t``, then
    ``learners._online_fast.apply_update`` applies it (``opt``, ``rule``,
    ``scale``) before the next sequence is scored. Without a Python round
    trip per sequence. ``forbidden`` holds the ``-inf``/0 masks of the
    transition, start and end scores. Returns the sum of the losses (added in
    order) and the count :func:`chain_part` returns, summed.
    """
    K = forbidden[1].shape[0]
    P = w.shape[0] - K * K - 2 * K
    unary = np.zeros(0)
    d_trans, d_start, d_end = np.zeros((K, K)), np.zeros(K), np.zeros(K)
    trans, start, end = np.empty((K, K)), np.empty(K), np.empty(K)
    u, g = _buffers(chains, trans, seq_ids)
    work = sequence_loss_work(u.shape[0], trans, False)
    total = 0.0
    count = 0
    for t in range(seq_ids.shape[0]):
        step = first_step + t
        _fill_scores(w, P, forbidden, trans, start, end)
        scores = ChainScores(w[:P], trans, start, end)
        if kind == CRF:
            work = sequence_loss_work(u.shape[0], trans, True)
        out = ChainGradient(unary, d_trans, d_start, d_end, sparse, 0, step, tail_learned)
        loss, nonzero, n_touched = _chain_sequence(kind, chains, scores, seq_ids[t], u, g,
                                                   work, out, 0)
        _finish_part(chains, out, n_touched)
        count += nonzero
        total += loss
        apply_update(sparse, step, scale, w, opt, rule)
    return total, count
