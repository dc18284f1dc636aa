"""Compiled structured losses of linear chains.

The compiled counterpart of :func:`~sksparse_struct.losses.structured_loss`
for :class:`~sksparse_struct.structures.Sequence`, on scores already
computed: ``u`` holds the ``(n, K)`` unary scores with the start and end
scores added to the first and last rows, ``trans`` the ``(K, K)``
transitions (``-inf`` where forbidden). For gold labels ``y`` each kernel
returns the loss and *adds* ``E_q[phi] - phi(y)``, its gradient, to ``g``
(unary scores, the rows of the sequence) and to ``d_trans``, ``d_start``,
``d_end``; ``q`` is the Gibbs distribution (CRF), the (cost-augmented) MAP
(hinge, perceptron) or the SparseMAP distribution. The cost of the
cost-augmented losses is Hamming's: 1 for every label other than the gold
one. The loss codes are those of ``_kinds_fast``; the SparseMAP losses have
a kernel of their own (:func:`sequence_sparsemap_loss`), so that callers of
the others do not compile the active set.
"""

import numpy as np

from ..inference._sparsemap_fast import iteration_limit, sparsemap_sequence_parts
from ..structures._sequence_fast import forward_backward, viterbi
from ..utils._numba import njit
from ._kinds_fast import CRF, HINGE, MARGIN_SPARSEMAP

__all__ = [
    "add_hamming_cost",
    "add_path",
    "gold_score",
    "sequence_loss",
    "sequence_loss_work",
    "sequence_sparsemap_loss",
]


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
def sequence_loss_work(L, trans, crf):
    """Work space of :func:`sequence_loss` for sequences of up to ``L`` positions.

    ``(E, ET, shift, alpha, expu, scale)``: the exponentiated transitions
    (see :func:`exp_transitions`) and the buffers of the scaled
    forward-backward pass; empty unless ``crf`` (only the CRF loss uses them).
    """
    K = trans.shape[0]
    if not crf:
        return np.empty((0, 0)), np.empty((0, 0)), 0.0, np.empty((0, 0)), np.empty((0, 0)), \
            np.empty(0)
    E, ET, shift = exp_transitions(trans)
    return E, ET, shift, np.empty((L, K)), np.empty((L, K)), np.empty(L)


@njit
def sequence_loss(kind, u, n, trans, labels, work, g, d_trans, d_start, d_end):
    """CRF, hinge or perceptron loss of one sequence, and its gradient.

    ``u`` and ``g`` are buffers of at least ``n`` rows: ``u[:n]`` holds the
    scores (overwritten by the cost-augmented ones for the hinge loss),
    ``g[:n]`` receives the gradient w.r.t. them; the gradients w.r.t. the
    transition, start and end scores are added to ``d_trans``, ``d_start``,
    ``d_end``. ``work`` comes from :func:`sequence_loss_work` (built for
    ``trans``, with ``crf`` true for the CRF loss). The CRF's marginals come from the scaled forward-backward
    pass, or from the log-space one when a scale factor underflows.
    """
    E, ET, shift, alpha, expu, scale = work
    us = u[:n]
    gs = g[:n]
    gs[:] = 0.0
    reference = gold_score(us, trans, labels)
    if kind == CRF:
        log_z = crf_sequence(u, n, E, ET, shift, alpha, expu, scale, g, d_trans, d_start, d_end)
        if np.isnan(log_z):
            mu, xi, log_z = forward_backward(us.copy(), trans)
            add_expectations(mu, xi, gs, d_trans, d_start, d_end)
        loss = log_z - reference
    else:
        if kind == HINGE:
            add_hamming_cost(us, labels, 1.0)
        best_labels, best = viterbi(us.copy(), trans)
        loss = best - reference
        if loss < 0.0:
            # Only rounding (the gold sequence is among the candidates).
            loss = 0.0
        add_path(best_labels, 1.0, gs, d_trans, d_start, d_end)
    add_path(labels, -1.0, gs, d_trans, d_start, d_end)
    return loss


@njit
def sequence_sparsemap_loss(kind, u, n, trans, labels, sparsemap_options, g, d_trans, d_start,
                            d_end):
    """SparseMAP or margin-SparseMAP loss of one sequence, and its gradient.

    The SparseMAP loss (Niculae 2018, Def. 6.3) is ``max_mu <eta, mu> -
    ||mu_u||^2 / 2 - <eta, y> + ||y_u||^2 / 2`` over the marginal polytope,
    with gradient ``mu* - y`` (only the unary part is regularized;
    transitions enter linearly). The margin variant adds the Hamming cost
    ``1 - y_u`` to the unary scores inside the maximization; it vanishes at
    ``y``, so the gold terms are unchanged. Buffers as in
    :func:`sequence_loss` (``u[:n]`` is left unchanged);
    ``sparsemap_options`` is a ``SparseMAPOptions`` (``max_iter`` None:
    ``iteration_limit``'s rule for ``n`` positions). Returns ``(loss,
    converged)``.
    """
    K = trans.shape[0]
    reference = gold_score(u[:n], trans, labels)
    scores = u[:n].copy()
    if kind == MARGIN_SPARSEMAP:
        add_hamming_cost(scores, labels, 1.0)
    gs = g[:n]
    xi = np.zeros((K, K))
    p_theta, mu_sq, n_iter, converged, feasible = sparsemap_sequence_parts(
        scores, trans, iteration_limit(sparsemap_options.max_iter, n), sparsemap_options.tol,
        sparsemap_options.dependent_tol, gs, xi
    )
    loss = p_theta - 0.5 * mu_sq - reference + 0.5 * n
    for a in range(K):
        for b in range(K):
            d_trans[a, b] += xi[a, b]
        d_start[a] += gs[0, a]
        d_end[a] += gs[n - 1, a]
    add_path(labels, -1.0, gs, d_trans, d_start, d_end)
    return loss, converged
