"""Numba kernels of the linear-chain tagger: scores, losses and gradients.

Data layout (built by the estimator, never validated here):

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
  offsets[s + 1]`` are the tokens of sequence ``s``.
- Transitions are a dense ``(K, K)`` matrix with ``-inf`` for forbidden
  transitions; ``start``/``end`` score the first and the last label.

Losses (``kind``): 0 CRF (log-likelihood), 1 structured hinge with Hamming
cost, 2 perceptron, 3 SparseMAP, 4 margin SparseMAP (Hamming cost; these
two live in ``_chain_sparsemap_fast``). For a
sequence with gold labels ``y`` and scores ``eta``, each kernel writes the
loss and ``G = E_q[phi] - phi(y)``, the gradient of the loss w.r.t. the
unary scores (rows of ``G``) and the transition/start/end scores (added to
``d_trans``, ``d_start``, ``d_end``); ``q`` is the Gibbs distribution (CRF),
the loss-augmented MAP (hinge, perceptron) or the SparseMAP distribution.

Each kernel handles a list of sequences end to end (scores, loss, gradient)
so that a sequence's features are read while they are in cache; callers run
fixed parts of the data on threads, each part with its own gradient buffer,
and add the parts in a fixed order (results do not depend on the number of
threads).
"""

import numpy as np

from ..structures._sequence_fast import forward_backward, viterbi
from ..utils._numba import njit

CRF, HINGE, PERCEPTRON, SPARSEMAP, MARGIN_SPARSEMAP = 0, 1, 2, 3, 4


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


@njit
def gold_score(u, trans, labels):
    """Score of the label sequence ``labels`` under unary ``u`` and ``trans``."""
    s = u[0, labels[0]]
    for t in range(1, labels.shape[0]):
        s += trans[labels[t - 1], labels[t]] + u[t, labels[t]]
    return s


@njit
def add_hamming_cost(u, labels, cost):
    """``u[t, b] += cost`` for every label ``b`` other than ``labels[t]``."""
    n, K = u.shape
    for t in range(n):
        for b in range(K):
            if b != labels[t]:
                u[t, b] += cost


@njit
def add_path(labels, sign, g, d_trans, d_start, d_end):
    """Add ``sign`` times the indicators of a label sequence to the gradients."""
    n = labels.shape[0]
    for t in range(n):
        g[t, labels[t]] += sign
        if t > 0:
            d_trans[labels[t - 1], labels[t]] += sign
    d_start[labels[0]] += sign
    d_end[labels[n - 1]] += sign


@njit
def add_expectations(mu, xi, g, d_trans, d_start, d_end):
    """Add expected indicators (marginals ``mu``, transition counts ``xi``) to the gradients."""
    n, K = mu.shape
    for t in range(n):
        for b in range(K):
            g[t, b] += mu[t, b]
    for a in range(K):
        for b in range(K):
            d_trans[a, b] += xi[a, b]
        d_start[a] += mu[0, a]
        d_end[a] += mu[n - 1, a]


@njit
def max_length(offsets, seq_ids):
    m = 1
    for s in seq_ids:
        m = max(m, offsets[s + 1] - offsets[s])
    return m


# A scaled sum below this may have lost terms to underflow (see
# structures/_sequence_fast.py): the sequence is redone in log space.
_SCALED_MIN = 1e-150


@njit
def exp_transitions(trans):
    """``(E, E^T, shift)`` with ``E = exp(trans - shift)``, ``shift`` the largest finite score."""
    K = trans.shape[0]
    shift = -np.inf
    for a in range(K):
        for b in range(K):
            if trans[a, b] > shift:
                shift = trans[a, b]
    if shift == -np.inf:
        shift = 0.0
    E = np.empty((K, K))
    ET = np.empty((K, K))
    for a in range(K):
        for b in range(K):
            e = np.exp(trans[a, b] - shift)
            E[a, b] = e
            ET[b, a] = e
    return E, ET, shift


@njit
def crf_sequence(u, n_tokens, E, ET, shift, alpha, expu, scale, g, d_trans, d_start, d_end):
    """Scaled forward-backward on one sequence; adds the marginals to the gradients.

    Messages are normalized at every position (Rabiner's scaling) and the
    scores exponentiated once, shifted by their maximum, so a position costs
    ``3 K^2`` multiply-adds and ``K`` exponentials, all in contiguous
    vectorizable loops. Returns log Z, or NaN (nothing written) when a scale
    factor is so small that terms may have underflowed: the caller then uses
    the exact log-space kernel.
    """
    K = u.shape[1]
    n = n_tokens
    # u, alpha, expu and g may be longer work buffers: only n rows are used.
    log_z = 0.0
    for t in range(n):
        m = -np.inf
        for b in range(K):
            if u[t, b] > m:
                m = u[t, b]
        if m == -np.inf:
            return np.nan
        for b in range(K):
            expu[t, b] = np.exp(u[t, b] - m)
        if t == 0:
            for b in range(K):
                alpha[0, b] = expu[0, b]
        else:
            for b in range(K):
                alpha[t, b] = 0.0
            for a in range(K):
                pa = alpha[t - 1, a]
                if pa != 0.0:
                    for b in range(K):
                        alpha[t, b] += pa * E[a, b]
            for b in range(K):
                alpha[t, b] *= expu[t, b]
            m += shift
        c = 0.0
        for b in range(K):
            c += alpha[t, b]
        if not c >= _SCALED_MIN:
            return np.nan
        inv = 1.0 / c
        for b in range(K):
            alpha[t, b] *= inv
        scale[t] = c
        log_z += m + np.log(c)
    # Backward: beta is kept in a rolling row; mu = alpha * beta.
    beta = np.ones(K)
    v = np.empty(K)
    prev = np.empty(K)
    for t in range(n - 1, -1, -1):
        for b in range(K):
            mu = alpha[t, b] * beta[b]
            g[t, b] += mu
        if t == 0:
            break
        inv = 1.0 / scale[t]
        for b in range(K):
            v[b] = expu[t, b] * beta[b] * inv
        for a in range(K):
            prev[a] = 0.0
        for b in range(K):
            vb = v[b]
            if vb != 0.0:
                for a in range(K):
                    prev[a] += vb * ET[b, a]
        for a in range(K):
            pa = alpha[t - 1, a]
            if pa != 0.0:
                for b in range(K):
                    d_trans[a, b] += pa * E[a, b] * v[b]
        for a in range(K):
            beta[a] = prev[a]
    for b in range(K):
        d_start[b] += g[0, b]
        d_end[b] += g[n - 1, b]
    return log_z


@njit
def chain_part(kind, indptr, pair_start, pair_stop, data, pair_label, w, offsets, gold,
               trans, start, end, seq_ids, grad, d_trans, d_start, d_end, losses):
    """Losses and gradients of the sequences ``seq_ids`` (CRF, HINGE or PERCEPTRON).

    Writes ``losses[s]``; adds the gradient w.r.t. the unary pairs to
    ``grad`` and those w.r.t. the transition / start / end scores to
    ``d_trans``, ``d_start``, ``d_end``. (SparseMAP: ``_chain_sparsemap_fast``.)
    """
    K = trans.shape[0]
    L = max_length(offsets, seq_ids)
    u = np.empty((L, K))
    g = np.empty((L, K))
    alpha = np.empty((L, K))
    expu = np.empty((L, K))
    scale = np.empty(L)
    E, ET, shift = exp_transitions(trans)
    for s in seq_ids:
        r0 = offsets[s]
        r1 = offsets[s + 1]
        n = r1 - r0
        losses[s] = 0.0
        if n == 0:
            continue
        labels = gold[r0:r1]
        sequence_scores(indptr, pair_start, pair_stop, data, pair_label, w, start, end, r0, r1, u)
        us = u[:n]
        gs = g[:n]
        gs[:] = 0.0
        reference = gold_score(us, trans, labels)
        if kind == CRF:
            log_z = crf_sequence(u, n, E, ET, shift, alpha, expu, scale, g,
                                 d_trans, d_start, d_end)
            if np.isnan(log_z):
                mu, xi, log_z = forward_backward(us.copy(), trans)
                add_expectations(mu, xi, gs, d_trans, d_start, d_end)
            losses[s] = log_z - reference
        else:
            if kind == HINGE:
                add_hamming_cost(us, labels, 1.0)
            best_labels, best = viterbi(us.copy(), trans)
            losses[s] = best - reference
            add_path(best_labels, 1.0, gs, d_trans, d_start, d_end)
        add_path(labels, -1.0, gs, d_trans, d_start, d_end)
        token_gradient(indptr, pair_start, pair_stop, data, pair_label, gs, r0, r1, grad)


@njit
def decode_part(marginals, indptr, pair_start, pair_stop, data, pair_label, w, offsets,
                trans, start, end, seq_ids, out_labels, out_mu):
    """Viterbi labels (into ``out_labels``) or marginals (into ``out_mu``) per token.

    Returns the first sequence that no label sequence can tag (every one uses
    a forbidden transition, start or end), or -1.
    """
    K = trans.shape[0]
    u = np.empty((max_length(offsets, seq_ids), K))
    infeasible = -1
    for s in seq_ids:
        r0 = offsets[s]
        r1 = offsets[s + 1]
        n = r1 - r0
        if n == 0:
            continue
        sequence_scores(indptr, pair_start, pair_stop, data, pair_label, w, start, end, r0, r1, u)
        us = u[:n].copy()
        if marginals:
            mu, xi, best = forward_backward(us, trans)
            out_mu[r0:r1] = mu
        else:
            labels, best = viterbi(us, trans)
            out_labels[r0:r1] = labels
        if best == -np.inf and infeasible < 0:
            infeasible = s
    return infeasible


@njit
def unary_part(indptr, pair_start, pair_stop, data, pair_label, w, offsets, seq_ids, out):
    """Unary scores (without start / end) of the tokens of ``seq_ids`` into ``out``."""
    for s in seq_ids:
        r0 = offsets[s]
        r1 = offsets[s + 1]
        if r1 > r0:
            token_scores(indptr, pair_start, pair_stop, data, pair_label, w, r0, r1, out[r0:r1])


@njit
def _find_pair(pair_label, lo, hi, label):
    """Index of the pair of ``label`` among ``lo .. hi`` (sorted labels), or -1."""
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
def _perceptron_add(indptr, pair_start, pair_stop, data, pair_label, row, label, amount,
                    w, w_acc, step):
    for k in range(indptr[row], indptr[row + 1]):
        p = _find_pair(pair_label, pair_start[k], pair_stop[k], label)
        if p >= 0:
            delta = amount * data[k]
            w[p] += delta
            w_acc[p] += step * delta


@njit
def perceptron_epoch(order, indptr, pair_start, pair_stop, data, pair_label, offsets, gold,
                     trans_mask, start_mask, end_mask, w, w_acc, step):
    """One epoch of the averaged structured perceptron, in the given order.

    ``w`` holds the unary pairs followed by the ``K * K`` transitions and the
    ``K`` start and ``K`` end scores; ``w_acc`` accumulates ``step * update``
    so that the average of the iterates is ``w - w_acc / step`` (the usual
    lazy-averaging identity). ``trans_mask``, ``start_mask`` and ``end_mask``
    are 1 where the score is learned, 0 where it stays at zero and -1 where
    it is forbidden (-inf). Returns ``(step, n_mistakes, total loss)``.
    """
    K = trans_mask.shape[0]
    P = w.shape[0] - K * K - 2 * K
    t0 = P
    s0 = P + K * K
    e0 = s0 + K
    trans = np.empty((K, K))
    start = np.empty(K)
    end = np.empty(K)
    n_mistakes = 0
    total = 0.0
    for j in range(order.shape[0]):
        s = order[j]
        r0 = offsets[s]
        r1 = offsets[s + 1]
        n = r1 - r0
        if n == 0:
            continue
        for a in range(K):
            for b in range(K):
                trans[a, b] = w[t0 + a * K + b] if trans_mask[a, b] >= 0.0 else -np.inf
            start[a] = w[s0 + a] if start_mask[a] >= 0.0 else -np.inf
            end[a] = w[e0 + a] if end_mask[a] >= 0.0 else -np.inf
        u = np.empty((n, K))
        sequence_scores(indptr, pair_start, pair_stop, data, pair_label, w, start, end, r0, r1, u)
        labels, best = viterbi(u, trans)
        wrong = False
        for t in range(n):
            if labels[t] != gold[r0 + t]:
                wrong = True
                break
        if wrong:
            n_mistakes += 1
            total += best - gold_score(u, trans, gold[r0:r1])
            for t in range(n):
                g = gold[r0 + t]
                h = labels[t]
                if g != h:
                    _perceptron_add(indptr, pair_start, pair_stop, data, pair_label, r0 + t, g,
                                    1.0, w, w_acc, step)
                    _perceptron_add(indptr, pair_start, pair_stop, data, pair_label, r0 + t, h,
                                    -1.0, w, w_acc, step)
                if t > 0:
                    gp = gold[r0 + t - 1]
                    hp = labels[t - 1]
                    if gp != hp or g != h:
                        if trans_mask[gp, g] > 0.0:
                            w[t0 + gp * K + g] += 1.0
                            w_acc[t0 + gp * K + g] += step
                        if trans_mask[hp, h] > 0.0:
                            w[t0 + hp * K + h] -= 1.0
                            w_acc[t0 + hp * K + h] -= step
            g = gold[r0]
            h = labels[0]
            if g != h:
                if start_mask[g] > 0.0:
                    w[s0 + g] += 1.0
                    w_acc[s0 + g] += step
                if start_mask[h] > 0.0:
                    w[s0 + h] -= 1.0
                    w_acc[s0 + h] -= step
            g = gold[r1 - 1]
            h = labels[n - 1]
            if g != h:
                if end_mask[g] > 0.0:
                    w[e0 + g] += 1.0
                    w_acc[e0 + g] += step
                if end_mask[h] > 0.0:
                    w[e0 + h] -= 1.0
                    w_acc[e0 + h] -= step
        step += 1.0
    return step, n_mistakes, total
