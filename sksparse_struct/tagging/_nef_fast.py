"""Numba kernels of the neural easy-first tagger: attention over a padded batch, CRF layer.

A mini-batch holds ``B`` sentences padded to ``T`` positions; sentence ``b``
has ``lengths[b]`` words and takes part in sketch steps ``0 .. n_steps[b] - 1``
(its attention row is zero at the other steps and on the padding). The
attention kernels apply one of the mappings of ``mappings/`` to the first
``lengths[b]`` entries of each row, so that the padding never enters a
normaliser; the CRF kernels run the compiled linear-chain loss and Viterbi of
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
    "attention_forward",
    "crf_loss_batch",
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
def attention_forward(kind, z, beta, lengths, n_steps, step, alpha):
    """Attention of sketch step ``step`` for every sentence of a batch.

    ``z`` (B, T): scores (for "hard", the easiness score of each position);
    ``beta`` (B, T): cumulative attention before this step. Writes ``alpha``
    (B, T). The constrained mappings get the upper bounds ``1 - beta``
    (clipped at 0 against rounding); "hard" picks the best position not yet
    covered (``beta < 1/2``), the lowest one among ties.
    """
    B, T = z.shape
    buf = np.empty(T)
    lo = np.zeros(T)
    upper = np.empty(T)
    work = np.empty(T, dtype=np.int64)
    for b in range(B):
        out = alpha[b]
        out[:] = 0.0
        n = lengths[b]
        if step >= n_steps[b] or n == 0:
            continue
        zb = z[b, :n]
        ob = out[:n]
        if kind == SOFTMAX:
            top = zb.max()
            total = 0.0
            for i in range(n):
                ob[i] = np.exp(zb[i] - top)
                total += ob[i]
            for i in range(n):
                ob[i] /= total
        elif kind == SPARSEMAX:
            project_simplex_row(zb, 1.0, buf[:n], ob)
        elif kind == CSOFTMAX or kind == CSPARSEMAX:
            for i in range(n):
                v = 1.0 - beta[b, i]
                upper[i] = max(0.0, v)
            if kind == CSOFTMAX:
                csoftmax_row(zb, upper[:n], ob)
            else:
                project_capped_row_linear(zb, lo[:n], upper[:n], 1.0, work[:n], ob)
        elif kind == HARD:
            best = -1
            top = -np.inf
            for i in range(n):
                if beta[b, i] < 0.5 and (best < 0 or zb[i] > top):
                    best = i
                    top = zb[i]
            if best >= 0:
                ob[best] = 1.0
        elif kind == UNIFORM:
            for i in range(n):
                ob[i] = 1.0 / n
        elif kind == LEFT_TO_RIGHT:
            if step < n:
                ob[step] = 1.0
        elif kind == RIGHT_TO_LEFT and step < n:
            ob[n - 1 - step] = 1.0


@njit
def attention_backward(kind, alpha, beta, d_alpha, lengths, n_steps, step, dz, d_beta):
    """Backward pass of :func:`attention_forward`.

    Writes ``dz`` (B, T), the gradient w.r.t. the scores, and *adds* the
    gradient w.r.t. the cumulative attention ``beta`` (through the bounds
    ``1 - beta`` of the constrained mappings) to ``d_beta``. The prescribed
    orders, the uniform and the hard attention have no gradient.
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
            for i in range(n):
                v = 1.0 - beta[b, i]
                upper[i] = max(0.0, v)
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
