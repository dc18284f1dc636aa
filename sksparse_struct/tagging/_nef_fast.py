"""Numba kernels of the neural easy-first tagger: attention over a padded batch, CRF layer.

A mini-batch holds ``B`` sentences padded to ``T`` positions; sentence ``b``
has ``lengths[b]`` words and takes part in sketch steps ``0 .. n_steps[b] - 1``
(its attention row is zero at the other steps and on the padding). The
attention kernels apply one of the mappings of ``mappings/`` to the first
``lengths[b]`` entries of each row, so that the padding never enters a
normaliser; each mapping has its own forward kernel, so that a model
compiles only the mapping it uses; the CRF kernels run the compiled linear-chain loss and Viterbi of
``losses/`` and ``structures/`` sentence by sentence.

The attention codes live here (numba bakes module-level integers into the
kernels, and only ``_*_fast.py`` files are watched for stale caches).
No validation happens here.
"""

import numpy as np

from ..losses._kinds_fast import CRF
from ..losses._sequence_fast import sequence_loss, sequence_loss_work
from ..mappings._capped_simplex_fast import (
    csparsemax_backward_row,
    project_capped_row_linear,
)
from ..mappings._csoftmax_fast import csoftmax_backward_row, csoftmax_row
from ..mappings._simplex_fast import project_simplex_row
from ..structures._sequence_fast import viterbi
from ..utils._numba import njit

__all__ = [
    "ATTENTIONS",
    "attention_backward",
    "crf_loss_batch",
    "csoftmax_attention",
    "csparsemax_attention",
    "fixed_attention",
    "softmax_attention",
    "sparsemax_attention",
    "viterbi_batch",
]

SOFTMAX = 0
SPARSEMAX = 1
CSOFTMAX = 2
CSPARSEMAX = 3
HARD = 4
UNIFORM = 5
LEFT_TO_RIGHT = 6
RIGHT_TO_LEFT = 7

#: Attention name -> kernel code.
ATTENTIONS = {
    "softmax": SOFTMAX,
    "sparsemax": SPARSEMAX,
    "csoftmax": CSOFTMAX,
    "csparsemax": CSPARSEMAX,
    "hard": HARD,
    "uniform": UNIFORM,
    "left_to_right": LEFT_TO_RIGHT,
    "right_to_left": RIGHT_TO_LEFT,
}


@njit
def _bounds(beta_row, n, upper):
    """Upper bounds ``1 - beta`` of the constrained mappings, clipped at 0 against rounding."""
    for i in range(n):
        upper[i] = max(0.0, 1.0 - beta_row[i])


@njit
def softmax_attention(z, beta, lengths, n_steps, step, alpha):
    """Softmax attention of sketch step ``step`` for every sentence of a batch.

    ``z`` (B, T): scores; ``beta`` (B, T): cumulative attention before this
    step (unused here; the same signature for every attention kernel).
    Writes ``alpha`` (B, T): zero on the padding and for the sentences whose
    steps are over.
    """
    for b in range(z.shape[0]):
        alpha[b] = 0.0
        n = lengths[b]
        if step >= n_steps[b] or n == 0:
            continue
        top = z[b, :n].max()
        total = 0.0
        for i in range(n):
            alpha[b, i] = np.exp(z[b, i] - top)
            total += alpha[b, i]
        for i in range(n):
            alpha[b, i] /= total


@njit
def sparsemax_attention(z, beta, lengths, n_steps, step, alpha):
    """Sparsemax attention (see :func:`softmax_attention`)."""
    buf = np.empty(z.shape[1])
    for b in range(z.shape[0]):
        alpha[b] = 0.0
        n = lengths[b]
        if step >= n_steps[b] or n == 0:
            continue
        project_simplex_row(z[b, :n], 1.0, buf[:n], alpha[b, :n])


@njit
def csoftmax_attention(z, beta, lengths, n_steps, step, alpha):
    """Constrained softmax attention with upper bounds ``1 - beta`` (eq. 11)."""
    upper = np.empty(z.shape[1])
    for b in range(z.shape[0]):
        alpha[b] = 0.0
        n = lengths[b]
        if step >= n_steps[b] or n == 0:
            continue
        _bounds(beta[b], n, upper)
        csoftmax_row(z[b, :n], upper[:n], alpha[b, :n])


@njit
def csparsemax_attention(z, beta, lengths, n_steps, step, alpha):
    """Constrained sparsemax attention with upper bounds ``1 - beta``."""
    T = z.shape[1]
    upper = np.empty(T)
    lo = np.zeros(T)
    work = np.empty(T, dtype=np.int64)
    for b in range(z.shape[0]):
        alpha[b] = 0.0
        n = lengths[b]
        if step >= n_steps[b] or n == 0:
            continue
        _bounds(beta[b], n, upper)
        project_capped_row_linear(z[b, :n], lo[:n], upper[:n], 1.0, work[:n], alpha[b, :n])


@njit
def fixed_attention(kind, z, beta, lengths, n_steps, step, alpha):
    """The attentions without a gradient: hard, uniform, left-to-right, right-to-left.

    "hard" picks the best-scored position not yet covered (``beta < 1/2``),
    the lowest one among ties.
    """
    for b in range(z.shape[0]):
        alpha[b] = 0.0
        n = lengths[b]
        if step >= n_steps[b] or n == 0:
            continue
        if kind == HARD:
            best = -1
            top = -np.inf
            for i in range(n):
                if beta[b, i] < 0.5 and (best < 0 or z[b, i] > top):
                    best = i
                    top = z[b, i]
            if best >= 0:
                alpha[b, best] = 1.0
        elif kind == UNIFORM:
            for i in range(n):
                alpha[b, i] = 1.0 / n
        elif kind == LEFT_TO_RIGHT and step < n:
            alpha[b, step] = 1.0
        elif kind == RIGHT_TO_LEFT and step < n:
            alpha[b, n - 1 - step] = 1.0


@njit
def attention_backward(kind, alpha, beta, d_alpha, lengths, n_steps, step, dz, d_beta):
    """Backward pass of the attention kernels.

    Writes ``dz`` (B, T), the gradient w.r.t. the scores, and *adds* the
    gradient w.r.t. the cumulative attention ``beta`` (through the bounds
    ``1 - beta`` of the constrained mappings) to ``d_beta``. The attentions
    of :func:`fixed_attention` have no gradient.
    """
    B, T = alpha.shape
    upper = np.empty(T)
    du = np.empty(T)
    for b in range(B):
        dz[b, :] = 0.0
        n = lengths[b]
        if step >= n_steps[b] or n == 0:
            continue
        ab = alpha[b, :n]
        gb = d_alpha[b, :n]
        db = dz[b, :n]
        if kind == SOFTMAX:
            mean = 0.0
            for i in range(n):
                mean += ab[i] * gb[i]
            for i in range(n):
                db[i] = ab[i] * (gb[i] - mean)
        elif kind == SPARSEMAX:
            total = 0.0
            k = 0
            for i in range(n):
                if ab[i] > 0.0:
                    total += gb[i]
                    k += 1
            mean = total / k if k > 0 else 0.0
            for i in range(n):
                db[i] = gb[i] - mean if ab[i] > 0.0 else 0.0
        elif kind == CSOFTMAX or kind == CSPARSEMAX:
            _bounds(beta[b], n, upper)
            if kind == CSOFTMAX:
                csoftmax_backward_row(ab, upper[:n], gb, db, du[:n])
            else:
                csparsemax_backward_row(ab, upper[:n], gb, db, du[:n])
            for i in range(n):
                d_beta[b, i] -= du[i]


@njit
def crf_loss_batch(u, lengths, labels, trans, start, end, g, d_trans, d_start, d_end, losses):
    """CRF negative log-likelihood of every sentence of a batch, and its gradient.

    ``u`` (B, T, K): unary scores; ``g`` (B, T, K) receives their gradient
    (zero on the padding); the gradients w.r.t. ``trans``, ``start`` and
    ``end`` are *added* to ``d_trans``, ``d_start``, ``d_end``; ``losses[b]``
    receives the loss of sentence ``b``.
    """
    B, T, K = u.shape
    work = sequence_loss_work(T, trans, True)
    ub = np.empty((T, K))
    gb = np.empty((T, K))
    for b in range(B):
        n = lengths[b]
        g[b] = 0.0
        if n == 0:
            losses[b] = 0.0
            continue
        for i in range(n):
            for a in range(K):
                ub[i, a] = u[b, i, a]
        for a in range(K):
            ub[0, a] += start[a]
            ub[n - 1, a] += end[a]
        losses[b] = sequence_loss(CRF, ub, n, trans, labels[b, :n], work, gb, d_trans,
                                  d_start, d_end)
        for i in range(n):
            for a in range(K):
                g[b, i, a] = gb[i, a]


@njit
def viterbi_batch(u, lengths, trans, start, end, out):
    """Best label sequence of every sentence of a batch under a linear-chain CRF."""
    B, K = u.shape[0], u.shape[2]
    for b in range(B):
        n = lengths[b]
        if n == 0:
            continue
        ub = np.empty((n, K))
        for i in range(n):
            for a in range(K):
                ub[i, a] = u[b, i, a]
        for a in range(K):
            ub[0, a] += start[a]
            ub[n - 1, a] += end[a]
        labels, _ = viterbi(ub, trans)
        for i in range(n):
            out[b, i] = labels[i]
