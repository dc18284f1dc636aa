"""Compiled structured losses of dependency trees (first-order, arc-factored).

The compiled counterpart of :func:`~sksparse_struct.losses.structured_loss`
for :class:`~sksparse_struct.structures.DependencyTree` on the arc-score
layout the parser scores into: ``(n + 1, n + 1)`` matrices with ``S[h, m]``
the score of the arc ``h -> m`` (0 is the root; ``-inf`` on column 0, the
diagonal and forbidden arcs). The unary parts are the arcs; the cost of the
cost-augmented losses is Hamming's, 1 for every arc not in the gold tree.
The loss codes are those of ``_kinds_fast``.
"""


from ..inference._sparsemap_fast import active_set_arc_scores, iteration_limit
from ..structures._tree_fast import best_tree, tree_marginals
from ..utils._numba import njit
from ._kinds_fast import CRF, HINGE, MARGIN_SPARSEMAP, PERCEPTRON

__all__ = ["cost_augmented", "tree_loss", "tree_score"]


@njit
def tree_score(S, heads, n):
    """Score of the tree ``heads`` (head of word ``m`` at ``heads[m]``)."""
    s = 0.0
    for m in range(1, n + 1):
        s += S[heads[m], m]
    return s


@njit(internal=True)
def cost_augmented(S, gold, N, add_cost, A):
    """``A = S`` plus, if ``add_cost``, the Hamming cost 1 on every arc not in ``gold``."""
    for h in range(N):
        for m in range(N):
            v = S[h, m]
            if add_cost and m > 0 and h != m and h != gold[m]:
                v += 1.0
            A[h, m] = v


@njit(inline="always")
def tree_loss(kind, S, gold, n, projective, single_root, sparsemap_options, D, heads, A):
    """Loss of one sentence and its gradient w.r.t. the arc scores into ``D``.

    ``gold`` is the gold head of words ``1..n`` at positions ``1..n``;
    ``S`` is not modified; ``heads`` (length ``n + 1`` at least) and ``A``
    (like ``S``: the cost-augmented scores) are work arrays;
    ``sparsemap_options`` is a ``SparseMAPOptions`` (``max_iter`` None:
    ``iteration_limit``'s rule for ``n`` arcs). Returns ``(loss,
    converged)`` (``converged`` is False only when a SparseMAP active set
    stopped at its iteration limit). ``D`` is dense for the CRF loss and
    nonzero only on the arcs of the gold and predicted trees otherwise.
    """
    N = n + 1
    for h in range(N):
        for m in range(N):
            D[h, m] = 0.0
    gold_score = 0.0
    for m in range(1, N):
        gold_score += S[gold[m], m]
    converged = True
    if kind == CRF:
        log_z = tree_marginals(S, projective, single_root, D)
        for m in range(1, N):
            D[gold[m], m] -= 1.0
        return log_z - gold_score, converged
    if kind == PERCEPTRON or kind == HINGE:
        cost_augmented(S, gold, N, kind == HINGE, A)
        row = heads[:N]
        best_tree(A, projective, single_root, row)
        loss = tree_score(A, row, n) - gold_score
        for m in range(1, N):
            if row[m] != gold[m]:
                D[row[m], m] += 1.0
                D[gold[m], m] -= 1.0
        if loss < 0.0:
            # Only rounding (the gold tree is among the candidates).
            loss = 0.0
        return loss, converged
    # SparseMAP: max_mu <eta, mu> - ||mu||^2 / 2 - <S, y> + ||y||^2 / 2, with
    # eta = S (+ the Hamming cost 1 - y for the margin variant).
    cost_augmented(S, gold, N, kind == MARGIN_SPARSEMAP, A)
    H, p, theta, k, converged, status = active_set_arc_scores(
        A, projective, single_root, iteration_limit(sparsemap_options.max_iter, n),
        sparsemap_options.tol, sparsemap_options.dependent_tol,
    )
    tp = 0.0
    for s in range(k):
        tp += p[s] * theta[s]
        for m in range(1, N):
            D[H[s, m], m] += p[s]
    mm = 0.0
    for m in range(1, N):
        for h in range(N):
            mm += D[h, m] * D[h, m]
    for m in range(1, N):
        D[gold[m], m] -= 1.0
    return tp - 0.5 * mm - gold_score + 0.5 * n, converged
