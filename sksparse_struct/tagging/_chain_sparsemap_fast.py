"""Numba kernel of the SparseMAP losses of the linear-chain tagger.

The SparseMAP loss (thesis Def. 6.3) of a sequence with scores ``eta`` and
gold labels ``y`` is ``max_mu <eta, mu> - ||mu_u||^2 / 2 - <eta, y> +
||y_u||^2 / 2`` over the marginal polytope, with gradient ``mu* - y`` (only
the unary part is regularized; transitions enter linearly). The margin
variant adds the Hamming cost ``1 - y_u`` to the unary scores inside the
maximization; it vanishes at ``y``, so the gold terms are unchanged.
Data layout as in ``_chain_fast``.
"""

import numpy as np

from ..inference._sparsemap_fast import sparsemap_sequence_parts
from ..utils._numba import njit
from ._chain_fast import (
    MARGIN_SPARSEMAP,
    add_hamming_cost,
    add_path,
    gold_score,
    max_length,
    sequence_scores,
    token_gradient,
)


@njit
def sparsemap_part(kind, indptr, pair_start, pair_stop, data, pair_label, w, offsets, gold,
                   trans, start, end, seq_ids, max_iter, tol, dep_tol,
                   grad, d_trans, d_start, d_end, losses):
    """Losses and gradients of the sequences ``seq_ids`` (SPARSEMAP or MARGIN_SPARSEMAP).

    Same outputs as ``_chain_fast.chain_part``; returns the number of
    sequences whose active-set solver stopped before convergence.
    """
    K = trans.shape[0]
    L = max_length(offsets, seq_ids)
    u = np.empty((L, K))
    g = np.empty((L, K))
    not_converged = 0
    for s in seq_ids:
        r0 = offsets[s]
        r1 = offsets[s + 1]
        n = r1 - r0
        losses[s] = 0.0
        if n == 0:
            continue
        labels = gold[r0:r1]
        sequence_scores(indptr, pair_start, pair_stop, data, pair_label, w, start, end, r0, r1, u)
        reference = gold_score(u[:n], trans, labels)
        scores = u[:n].copy()
        if kind == MARGIN_SPARSEMAP:
            add_hamming_cost(scores, labels, 1.0)
        gs = g[:n]
        xi = np.zeros((K, K))
        p_theta, mu_sq, n_iter, converged, feasible = sparsemap_sequence_parts(
            scores, trans, max_iter, tol, dep_tol, gs, xi
        )
        if not converged:
            not_converged += 1
        losses[s] = p_theta - 0.5 * mu_sq - reference + 0.5 * n
        for a in range(K):
            for b in range(K):
                d_trans[a, b] += xi[a, b]
            d_start[a] += gs[0, a]
            d_end[a] += gs[n - 1, a]
        add_path(labels, -1.0, gs, d_trans, d_start, d_end)
        token_gradient(indptr, pair_start, pair_stop, data, pair_label, gs, r0, r1, grad)
    return not_converged
