"""Numba kernels for the active-set bookkeeping of SparseMAP.

The active set keeps, for the ``k`` structures of the current support, their
unary indicator vectors as sparse rows (``IDX[i, :nnz[i]]`` the parts the
``i``-th structure uses, in increasing order, ``VAL[i, :nnz[i]]`` the
indicator values there), their higher-order rows ``N[:k]``, scores
``theta[:k]``, probabilities ``p[:k]`` and the inverse ``B`` of the bordered
KKT matrix of thesis eq. 4.9, ``[[0, 1^T], [1, G]]`` with ``G = M M^T`` the
Gram matrix of the unary rows ``M`` (index 0 is the multiplier ``tau``,
index ``i + 1`` the ``i``-th structure); ``G`` itself is not stored.

A structure uses few of the parts (a tree on ``n`` words uses ``n`` of its
``n^2`` arcs), so the support takes ``O(k w)`` memory for rows of ``w``
nonzeros, not ``O(k n_parts)``, plus ``O(k^2)`` for ``B``: every operation
the active set needs is an inner product of two indicator vectors (a row of
``G``, the score of a structure under ``u``) or a scatter-add of rows into a
dense vector of the parts (the posterior ``u``, or ``G x`` as ``M (M^T
x)``), each ``O(w)`` per row. These kernels update the support in ``O(k^2 +
k w)`` per change, so the Python loop around the MAP oracle only does a few
calls per iteration. No validation: the caller passes C-contiguous arrays
with capacity for one more structure than ``k`` and rows wide enough for the
structure's nonzeros.
"""

from typing import NamedTuple, Optional

import numpy as np

from ..structures._base import (
    ORACLE_HEAD_AUTOMATON,
    ORACLE_PROJECTIVE_TREE,
    ORACLE_SEQUENCE,
    ORACLE_SIBLING_TREE,
    ORACLE_TREE,
)
from ..structures._head_automaton_fast import head_automaton_parts
from ..structures._nonprojective_fast import chu_liu_edmonds_parts_ws, cle_workspace
from ..structures._projective_fast import eisner_parts_ws, eisner_workspace
from ..structures._sequence_fast import viterbi
from ..structures._sibling_tree_fast import sibling_tree_parts
from ..utils._numba import njit


# Squared distance (relative) under which a structure counts as an affine
# combination of the support: SparseMAP's active sets, in Python, compiled
# and inside AD3's structure factors.
DEPENDENT_TOL = 1e-10

# The active set's default iteration limit for structures that use ``w``
# unary parts each: max(MIN_ITER, ITER_PER_PART * w) (iteration_limit).
MIN_ITER = 1000
ITER_PER_PART = 10


class SparseMAPOptions(NamedTuple):
    """Settings of SparseMAP's active-set solver, for inference and losses alike.

    One set of defaults for every active set of the package:
    :func:`~sksparse_struct.inference.sparsemap` and
    :func:`~sksparse_struct.inference.sparsemap_parts`, the SparseMAP losses
    of :func:`~sksparse_struct.losses.structured_loss` and the estimators
    trained with them, whose compiled kernels read these fields per
    instance (a named tuple, so that numba compiles and caches them as
    plain values). Validated where it is used.

    Attributes
    ----------
    max_iter : int or None, default=None
        Active-set iterations (each a relaxed QP solve followed by an oracle
        call or a removal from the support). ``None`` grows the limit with
        the structures: ``max(1000, 10 * w)`` for structures that use ``w``
        unary parts each (``n`` for a tree on ``n`` words or a sequence of
        ``n`` positions; for a head automaton of ``n`` modifiers, which
        uses from 0 to ``n`` of them and its incoming arc, ``n + 1``), since
        each iteration adds at most one structure and supports grow with
        ``n``.
    tol : float, default=1e-9
        Tolerance on the Wolfe (duality) gap, relative to ``max(1,
        |objective|)``.
    dependent_tol : float, default=1e-10
        Squared distance from a new structure's indicator vector to the
        affine hull of the support (relative to ``max(1, ||m||^2)``) under
        which it counts as affinely dependent (singular KKT matrix).

    Examples
    --------
    >>> from sksparse_struct.inference import SparseMAPOptions, sparsemap
    >>> from sksparse_struct.structures import XOR
    >>> SparseMAPOptions()
    SparseMAPOptions(max_iter=None, tol=1e-09, dependent_tol=1e-10)
    >>> sparsemap(XOR(), [1.0, 0.8, -1.0], options=SparseMAPOptions(tol=1e-12)).n_iter
    2
    """

    max_iter: Optional[int] = None
    tol: float = 1e-9
    dependent_tol: float = DEPENDENT_TOL


#: The defaults, shared by inference, the losses and the estimators.
SPARSEMAP_OPTIONS = SparseMAPOptions()


@njit
def iteration_limit(max_iter, width):
    """The active set's ``max_iter``: as given, or for None ``max(MIN_ITER, ITER_PER_PART * width)``.

    ``width`` is the number of unary parts a structure uses. Every iteration
    adds one structure to the support or removes one, so the active set
    needs at least as many iterations as the solution has structures, and
    that number grows with the size of the structures (about ``0.5 n`` to
    ``4 n`` trees for sentences of ``n`` words, depending on how peaked the
    scores are). The limit grows likewise; it also bounds the support, hence
    the ``O(k^2)`` inverse of the KKT matrix, by ``O(width^2)``. A ``None``
    argument is resolved when the kernel is compiled.
    """
    if max_iter is None:
        return max(MIN_ITER, ITER_PER_PART * width)
    return max_iter


@njit
def masked_dot(a, b):
    """``a . b`` over the entries where ``b`` is nonzero, summed in index order.

    Skipping the zeros of an indicator ``b`` avoids ``0 * -inf``; the fixed
    order makes the generic Python loop and the compiled tree loop compute
    the same scores and gaps to the last bit (different roundings would
    pick different, equally optimal, distributions on degenerate problems).
    """
    s = 0.0
    for i in range(b.shape[0]):
        if b[i] != 0.0:
            s += a[i] * b[i]
    return s


@njit
def support_terms(theta, p, k, u):
    """``theta[:k] . p[:k]`` and ``u . u``, summed in index order."""
    tp = 0.0
    for i in range(k):
        tp += theta[i] * p[i]
    uu = 0.0
    for a in range(u.shape[0]):
        uu += u[a] * u[a]
    return tp, uu


@njit
def kkt_insert(IDX, VAL, nnz, N, B, theta, p, k, m, n, th, prob, dep_tol, coef):
    """Append a structure to the support, or report that it is dependent.

    :func:`kkt_insert_buf` with work vectors of its own.
    """
    return kkt_insert_buf(IDX, VAL, nnz, N, B, theta, p, k, m, n, th, prob, dep_tol, coef,
                          np.empty(k + 1), np.empty(k + 1), np.empty(k + 1))


@njit
def kkt_insert_buf(IDX, VAL, nnz, N, B, theta, p, k, m, n, th, prob, dep_tol, coef, b, one_b, w):
    """Append a structure to the support, or report that it is dependent.

    ``m`` is the new structure's dense unary indicator vector (its nonzeros
    must fit in a row of ``IDX``). The Schur complement of the new row of
    the KKT matrix is the squared distance from ``m`` to the affine hull of
    the support. If it is at most ``dep_tol * max(1, ||m||^2)`` the KKT
    matrix would be singular: nothing is changed, the affine coefficients of
    ``m`` (summing to 1) are written to ``coef[:k]`` and 0 is returned.
    Otherwise the structure becomes row ``k`` (stored sparse), ``B`` is
    updated by the bordering formula and 1 is returned. ``b``, ``one_b`` and
    ``w`` are work vectors of at least ``k + 1`` entries (none allocated
    here: the active set calls this once per iteration).
    """
    n_u = m.shape[0]
    gm = 0.0
    for a in range(n_u):
        if m[a] != 0.0:
            gm += m[a] * m[a]
    # Row of the Gram matrix: each support row against the dense m, over the
    # row's nonzeros in index order.
    for i in range(k):
        s = 0.0
        for t in range(nnz[i]):
            s += VAL[i, t] * m[IDX[i, t]]
        b[i] = s
    if k == 0:
        B[0, 0] = -gm
        B[0, 1] = 1.0
        B[1, 0] = 1.0
        B[1, 1] = 0.0
    else:
        # w = B [1; b] (B[r, 0] * 1 first: the sum of the plain loop from B[r, 0])
        one_b[0] = 1.0
        for c in range(k):
            one_b[c + 1] = b[c]
        bordered_matvec(B, one_b, k + 1, w)
        schur = gm - w[0]
        for c in range(k):
            schur -= b[c] * w[c + 1]
        if schur <= dep_tol * max(1.0, gm):
            for c in range(k):
                coef[c] = w[c + 1]
            return 0
        inv = 1.0 / schur
        for r in range(k + 1):
            wr = w[r] * inv
            for c in range(k + 1):
                B[r, c] += wr * w[c]
            B[r, k + 1] = -wr
            B[k + 1, r] = -wr
        B[k + 1, k + 1] = inv
    t = 0
    for a in range(n_u):
        if m[a] != 0.0:
            IDX[k, t] = a
            VAL[k, t] = m[a]
            t += 1
    nnz[k] = t
    for a in range(N.shape[1]):
        N[k, a] = n[a]
    theta[k] = th
    p[k] = prob
    return 1


@njit
def kkt_delete(IDX, VAL, nnz, N, B, theta, p, k, j):
    """Remove structure ``j`` of ``k``: the last one moves into slot ``j``.

    ``B`` loses the corresponding row and column by the downdating formula
    ``B' = B_rest - B_rest,j B_j,rest / B_jj``.
    """
    last = k - 1
    if j != last:
        for t in range(nnz[last]):
            IDX[j, t] = IDX[last, t]
            VAL[j, t] = VAL[last, t]
        nnz[j] = nnz[last]
        for a in range(N.shape[1]):
            N[j, a] = N[last, a]
        theta[j] = theta[last]
        p[j] = p[last]
    bordered_inverse_delete(B, j, last)


@njit(internal=True)
def bordered_inverse_delete(B, j, last):
    """Drop member ``j`` of ``last + 1`` from the inverse ``B`` of a bordered KKT matrix.

    ``B`` inverts ``[[0, 1^T], [1, G_SS]]`` (row and column 0: the
    multiplier). Member ``j``'s row and column swap with the last member's,
    then the last ones go by the downdating formula ``B' = B_rest - B_rest,l
    B_l,rest / B_ll``. The active sets of SparseMAP and AD3 both use it.
    """
    if j != last:
        jj, ll = j + 1, last + 1
        for c in range(last + 2):
            B[jj, c], B[ll, c] = B[ll, c], B[jj, c]
        for r in range(last + 2):
            B[r, jj], B[r, ll] = B[r, ll], B[r, jj]
    if last > 0:
        ll = last + 1
        inv = 1.0 / B[ll, ll]
        for r in range(ll):
            br = B[r, ll] * inv
            for c in range(ll):
                B[r, c] -= br * B[ll, c]


@njit(internal=True)
def bordered_matvec(B, v, n, out):
    """``out[r] = B[r, :n] . v[:n]`` for ``r < n``, each row summed in column order.

    Eight rows at a time with an accumulator each: a single row's sum is a
    chain of dependent additions (no reassociation without fastmath), which
    left the core waiting on each addition's latency; eight independent
    chains keep it busy, and every row's sum is the same, to the last bit,
    as the plain loop's. These products by the ``O(k^2)`` inverse ``B``
    dominate the active set on large supports (AD3's tree factors).
    """
    r = 0
    while r + 8 <= n:
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        s4 = 0.0
        s5 = 0.0
        s6 = 0.0
        s7 = 0.0
        for c in range(n):
            vc = v[c]
            s0 += B[r, c] * vc
            s1 += B[r + 1, c] * vc
            s2 += B[r + 2, c] * vc
            s3 += B[r + 3, c] * vc
            s4 += B[r + 4, c] * vc
            s5 += B[r + 5, c] * vc
            s6 += B[r + 6, c] * vc
            s7 += B[r + 7, c] * vc
        out[r] = s0
        out[r + 1] = s1
        out[r + 2] = s2
        out[r + 3] = s3
        out[r + 4] = s4
        out[r + 5] = s5
        out[r + 6] = s6
        out[r + 7] = s7
        r += 8
    while r < n:
        s = 0.0
        for c in range(n):
            s += B[r, c] * v[c]
        out[r] = s
        r += 1


@njit
def relaxed_step(IDX, VAL, nnz, B, theta, p, k, u):
    """One active-set step on the support (thesis Alg. 1, lines 3-14).

    :func:`relaxed_step_buf` with work vectors of its own.
    """
    return relaxed_step_buf(IDX, VAL, nnz, B, theta, p, k, u, np.empty(k + 1), np.empty(k + 1),
                            np.empty(k + 1), np.empty(k + 1))


@njit
def relaxed_step_buf(IDX, VAL, nnz, B, theta, p, k, u, x, rhs, res, corr):
    """One active-set step on the support (thesis Alg. 1, lines 3-14).

    Solves the relaxed QP of eq. 4.9 through ``B`` plus one step of iterative
    refinement with the KKT matrix itself (its Gram block applied as ``M (M^T
    x)`` through the sparse rows, with ``u`` as the dense work vector), which
    corrects the rounding that the updates of ``B`` accumulate. If the solution
    ``p_hat`` has a negative entry, moves ``p`` towards it by the step of
    eq. 4.10, sets the blocking coordinate to exactly 0 and returns its index.
    Otherwise sets ``p = p_hat``, writes the posterior ``u = sum_i p_i m_i``
    (a scatter-add of the sparse rows) and returns -1.
    Also returns the step size (1 for the full step). ``u`` is overwritten
    in either case; ``x``, ``rhs``, ``res`` and ``corr`` are work vectors of
    at least ``k + 1`` entries.
    """
    rhs[0] = 1.0
    for i in range(k):
        rhs[i + 1] = theta[i]
    bordered_matvec(B, rhs, k + 1, x)
    # residual of [[0, 1^T], [1, G]] x = rhs, with G x = M (M^T x)
    s = 0.0
    for i in range(k):
        s += x[i + 1]
    res[0] = rhs[0] - s
    for a in range(u.shape[0]):
        u[a] = 0.0
    for i in range(k):
        xi = x[i + 1]
        for t in range(nnz[i]):
            u[IDX[i, t]] += xi * VAL[i, t]
    for i in range(k):
        s = x[0]
        for t in range(nnz[i]):
            s += VAL[i, t] * u[IDX[i, t]]
        res[i + 1] = rhs[i + 1] - s
    bordered_matvec(B, res, k + 1, corr)
    for r in range(k + 1):
        x[r] += corr[r]
    blocking = -1
    gamma = 1.0
    for i in range(k):
        ph = x[i + 1]
        if ph < 0.0:
            ratio = p[i] / (p[i] - ph)
            if blocking < 0 or ratio < gamma:
                gamma = ratio
                blocking = i
    if blocking >= 0:
        for i in range(k):
            p[i] += gamma * (x[i + 1] - p[i])
        p[blocking] = 0.0
        return blocking, gamma
    for i in range(k):
        p[i] = x[i + 1]
    for a in range(u.shape[0]):
        u[a] = 0.0
    for i in range(k):
        pi = p[i]
        if pi != 0.0:
            for t in range(nnz[i]):
                u[IDX[i, t]] += pi * VAL[i, t]
    return -1, 1.0


# The growers copy with loops: a slice assignment would compile numba's
# shape-mismatch error path (string formatting) into every caller. One
# grower per dtype: ``np.zeros(..., dtype=A.dtype)`` would compile numba's
# allocation once more for every dtype object, on top of these.
@njit(inline="always")
def _grow_int_rows(A, cap):
    out = np.zeros((cap, A.shape[1]), dtype=np.int64)
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            out[i, j] = A[i, j]
    return out


@njit(inline="always")
def _grow_rows(A, cap):
    out = np.zeros((cap, A.shape[1]))
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            out[i, j] = A[i, j]
    return out


@njit(inline="always")
def _grow_int_vec(a, cap):
    out = np.zeros(cap, dtype=np.int64)
    for i in range(a.shape[0]):
        out[i] = a[i]
    return out


@njit(inline="always")
def _grow_vec(a, cap):
    out = np.zeros(cap)
    for i in range(a.shape[0]):
        out[i] = a[i]
    return out


@njit(inline="always")
def _grow_square(A, cap):
    out = np.zeros((cap, cap))
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            out[i, j] = A[i, j]
    return out


# Structure kinds of the shared active-set loop. The loop branches on them
# with plain ``if``s: jitted oracles are never passed as arguments (a cached
# numba function that receives another jitted function as an argument misses
# the on-disk cache in every new process). The loop is compiled once per
# kind (:func:`_active_set_kernel`), with the kind a constant, so numba
# prunes the other kinds' branches and each kernel compiles only its own
# oracle.
_TREE = ORACLE_TREE
_SEQUENCE = ORACLE_SEQUENCE
_PTREE = ORACLE_PROJECTIVE_TREE
_HEAD_AUTOMATON = ORACLE_HEAD_AUTOMATON
_SIBLING_TREE = ORACLE_SIBLING_TREE
_ANY = -1


@njit(internal=True)
def _remove(IDX, VAL, nnz, N, B, theta, p, H, k, j):
    kkt_delete(IDX, VAL, nnz, N, B, theta, p, k, j)
    last = k - 1
    if j != last:
        for t in range(H.shape[1]):
            H[j, t] = H[last, t]
    return last


@njit(internal=True)
def _remove_nonpositive(IDX, VAL, nnz, N, B, theta, p, H, k):
    # Same order as the Python loop: highest index first.
    for j in range(k - 1, -1, -1):
        if p[j] <= 0.0:
            k = _remove(IDX, VAL, nnz, N, B, theta, p, H, k, j)
    return k


@njit(internal=True)
def _same_row(H, i, row):
    for t in range(row.shape[0]):
        if H[i, t] != row[t]:
            return False
    return True


@njit
def _sequence_oracle(scores, trans, n, K, labels_out, m, nv):
    """Viterbi on the flat unary ``scores``; labels and indicators written out.

    ``m`` (one-hot labels, ``n * K``) and ``nv`` (transition counts,
    ``K * K``) are those of ``Sequence.indicators``. Returns False when no
    sequence has a finite score (the outputs are then unchanged).
    """
    labels, best = viterbi(scores.reshape(n, K), trans)
    if best == -np.inf:
        return False
    for a in range(m.shape[0]):
        m[a] = 0.0
    for a in range(nv.shape[0]):
        nv[a] = 0.0
    for i in range(n):
        labels_out[i] = labels[i]
        m[i * K + labels[i]] = 1.0
    for i in range(1, n):
        nv[labels[i - 1] * K + labels[i]] += 1.0
    return True


@njit(inline="always")
def _oracle(kind, scores, eta_v, n, K, single_root, row, m, nv, work, f_mat, i_mat, i_vec,
            b_vec, f_vec, e_f_mat, e_i_mat, e_stack):
    """The MAP oracle of structure ``kind`` on unary scores ``scores``.

    Writes the structure's identifying row (trees: heads; sequence: labels;
    head automata: the incoming arc then a 0/1 flag per modifier) and its
    indicators ``m``, ``nv``; returns False if no structure of finite score
    exists. ``work`` is the ``(n + 1, n + 1)`` arc score matrix of both tree
    kinds, ``f_mat .. f_vec`` the Chu-Liu-Edmonds workspace and ``e_*``
    Eisner's (each empty when the kind does not use it).
    """
    if kind == _TREE:
        return chu_liu_edmonds_parts_ws(
            scores, n, single_root, work, row, m, f_mat, i_mat, i_vec, b_vec, f_vec
        )
    if kind == _PTREE:
        return eisner_parts_ws(scores, n, single_root, work, row, m, e_f_mat, e_i_mat, e_stack)
    if kind == _HEAD_AUTOMATON:
        # n modifiers, K incoming arcs (0: the plain automaton).
        return head_automaton_parts(scores, eta_v, n, K, row, m, nv)
    if kind == _SIBLING_TREE:
        return sibling_tree_parts(scores, eta_v, n, single_root, row, m, nv)
    return _sequence_oracle(scores, eta_v.reshape(K, K), n, K, row, m, nv)


@njit
def active_set_workspace(kind, n, n_u, n_v):
    """Work arrays of the compiled active set for one structure of ``kind``.

    A tuple: the support (``IDX, VAL, nnz, N, B, theta, p, coef, H``, with
    room for 16 structures; the solver grows them), the oracle's work
    arrays, then the ``(4, cap + 1)`` work vectors of the relaxed solves
    and insertions (grown with the support). Callers solving many problems of one size (AD3's structure
    factors) keep it, and with it the support, from one solve to the next.
    """
    # Rows of H, size of the arc score matrix, of the Chu-Liu-Edmonds and of
    # Eisner's workspaces (0: not used by this kind).
    if kind == _TREE:
        n_row, n_mat, n_cle, n_eis = n + 1, n + 1, n + 1, 0
    elif kind == _PTREE:
        n_row, n_mat, n_cle, n_eis = n + 1, n + 1, 0, n + 1
    elif kind == _HEAD_AUTOMATON or kind == _SIBLING_TREE:
        n_row, n_mat, n_cle, n_eis = n + 1, 0, 0, 0
    else:
        n_row, n_mat, n_cle, n_eis = n, 0, 0, 0
    cap = 16
    # Unary rows, sparse, as wide as the most parts a structure uses, so that
    # they never need to grow: a tree (n arcs) and a label sequence (n
    # labels) use exactly n parts each; a head automaton uses one incoming
    # arc (none for the plain one) and from 0 to n modifiers, rows of
    # different lengths (nnz), which every kernel here reads row by row.
    width = max(n, 1)
    if kind == _HEAD_AUTOMATON:
        width = n + 1
    f_mat, i_mat, i_vec, b_vec, f_vec = cle_workspace(n_cle)
    e_f_mat, e_i_mat, e_stack = eisner_workspace(n_eis)
    return (np.zeros((cap, width), dtype=np.int64), np.zeros((cap, width)), np.zeros(cap, dtype=np.int64),
            np.zeros((cap, n_v)), np.zeros((cap + 1, cap + 1)), np.zeros(cap), np.zeros(cap),
            np.zeros(cap), np.zeros((cap, n_row), dtype=np.int64),
            np.zeros(n_row, dtype=np.int64), np.zeros(n_u), np.zeros(n_v), np.empty(n_u),
            np.zeros(n_u), np.empty(n_row, dtype=np.int64), np.empty((n_mat, n_mat)),
            f_mat, i_mat, i_vec, b_vec, f_vec, e_f_mat, e_i_mat, e_stack,
            np.empty((4, cap + 1)))


@njit
def oracle_any(kind, scores, eta_v, n, K, single_root, row, m, nv, work, f_mat, i_mat, i_vec,
               b_vec, f_vec, e_f_mat, e_i_mat, e_stack):
    """:func:`_oracle` with the kind known only at run time (compiled once, not inlined:
    every oracle's code would otherwise be copied into each caller)."""
    return _oracle(kind, scores, eta_v, n, K, single_root, row, m, nv, work, f_mat, i_mat,
                   i_vec, b_vec, f_vec, e_f_mat, e_i_mat, e_stack)


def _active_set_kernel(kind):
    """The whole active-set solver (thesis Alg. 1), compiled for one structure ``kind``.

    The compiled twin of ``_solve_active_set``: the same steps in the same
    order, without a Python round trip per iteration (which costs more than
    the oracle itself on sentences of tens of words). ``kind`` is ``_TREE``
    (non-projective trees on ``n`` words, Chu-Liu-Edmonds; ``eta_v`` empty,
    ``K`` unused), ``_PTREE`` (projective trees, Eisner; likewise),
    ``_SEQUENCE`` (chains of ``n`` positions and ``K`` labels, Viterbi;
    ``eta_v`` the flat transitions), ``_HEAD_AUTOMATON`` (``n`` modifiers
    and ``K`` incoming arcs, Viterbi; ``eta_v`` the flat sibling and
    grandparent scores; SparseMAP runs it through ``_ANY``, see
    :func:`active_set_head_automaton`) or ``_ANY`` (the kind is the
    argument ``rt_kind``: one kernel for every kind, for AD3's structure
    factors). Structures are
    identified by their rows in ``H`` (heads, labels, or the incoming arc
    and modifier flags), equivalent to comparing their indicator vectors.

    The kernel is called as ``kernel(eta_u, eta_v, n, K, single_root,
    max_iter, tol, dep_tol, rt_kind, ws, k)`` with ``ws`` a workspace of
    :func:`active_set_workspace`. With ``k = 0`` it starts from the MAP;
    with ``k > 0`` from the first ``k`` structures of ``ws`` and their
    probabilities (a warm start: their scores are recomputed, the KKT
    inverse depends on their indicators only). It returns the workspace
    (grown if the support outgrew it), the support size ``k``, ``n_iter``,
    the gap, whether it converged, and a status: 0 solved, 1 no structure
    has a finite score, 2 the MAP structure's score is not finite (the sum
    overflows).

    ``kind`` is a constant of the closure, so numba compiles only that
    kind's oracle. A closure rather than an inlined body: the inliner copies
    the whole body's IR at every call, which cost more compile time than the
    body's own typing.
    """

    @njit
    def solve(eta_u, eta_v, n, K, single_root, max_iter, tol, dep_tol, rt_kind, ws, k):
        (IDX, VAL, nnz, N, B, theta, p, coef, H, row, m, nv, w, u, dropped, work, f_mat, i_mat,
         i_vec, b_vec, f_vec, e_f_mat, e_i_mat, e_stack, scr) = ws
        n_u = eta_u.shape[0]
        n_v = eta_v.shape[0]
        n_row = H.shape[1]
        cap = IDX.shape[0]
        has_dropped = False
        gap = np.inf
        converged = False
        n_iter = 0
        prob = 1.0
        first = k == 0
        if first:
            if kind == _ANY:
                ok = oracle_any(rt_kind, eta_u, eta_v, n, K, single_root, row, m, nv, work, f_mat,
                             i_mat, i_vec, b_vec, f_vec, e_f_mat, e_i_mat, e_stack)
            else:
                ok = _oracle(kind, eta_u, eta_v, n, K, single_root, row, m, nv, work, f_mat,
                             i_mat, i_vec, b_vec, f_vec, e_f_mat, e_i_mat, e_stack)
            if not ok:
                return ws, 0, 0, np.inf, False, 1
            # As _vertex: unary then higher-order parts, never 0 * -inf.
            th = masked_dot(eta_u, m) + masked_dot(eta_v, nv)
            if not np.isfinite(th):
                return ws, 0, 0, np.inf, False, 2
        else:
            # Warm start: the support's scores under the new potentials.
            for i in range(k):
                s = 0.0
                for t in range(nnz[i]):
                    s += eta_u[IDX[i, t]] * VAL[i, t]
                hv = 0.0
                for a in range(n_v):
                    if N[i, a] != 0.0:
                        hv += eta_v[a] * N[i, a]
                theta[i] = s + hv
            th = 0.0
        while True:
            if not first:
                if n_iter == max_iter:
                    break
                n_iter += 1
                # Relaxed QP (eq. 4.9); if infeasible, the step of eq. 4.10.
                blocking, gamma = relaxed_step_buf(IDX, VAL, nnz, B, theta, p, k, u, scr[0],
                                                   scr[1], scr[2], scr[3])
                if blocking >= 0:
                    if gamma == 0.0:
                        for t in range(n_row):
                            dropped[t] = H[blocking, t]
                        has_dropped = True
                    else:
                        has_dropped = False
                    k = _remove_nonpositive(IDX, VAL, nnz, N, B, theta, p, H, k)
                    continue
                k = _remove_nonpositive(IDX, VAL, nnz, N, B, theta, p, H, k)
                for a in range(n_u):
                    w[a] = eta_u[a] - u[a]
                if kind == _ANY:
                    ok = oracle_any(rt_kind, w, eta_v, n, K, single_root, row, m, nv, work, f_mat,
                                 i_mat, i_vec, b_vec, f_vec, e_f_mat, e_i_mat, e_stack)
                else:
                    ok = _oracle(kind, w, eta_v, n, K, single_root, row, m, nv, work, f_mat,
                                 i_mat, i_vec, b_vec, f_vec, e_f_mat, e_i_mat, e_stack)
                if not ok:
                    # Only if sums of huge scores overflow; the generic loop raises.
                    ws = (IDX, VAL, nnz, N, B, theta, p, coef, H, row, m, nv, w, u, dropped,
                          work, f_mat, i_mat, i_vec, b_vec, f_vec, e_f_mat, e_i_mat, e_stack,
                          scr)
                    return ws, k, n_iter, gap, False, 1
                # The same operations, in the same order, as _vertex and
                # _linear_gap.
                th = masked_dot(eta_u, m) + masked_dot(eta_v, nv)
                tp, uu = support_terms(theta, p, k, u)
                current = tp - uu
                score = th - masked_dot(m, u)
                gap = score - current
                objective = tp - 0.5 * uu
                if gap <= tol * max(1.0, abs(objective)):
                    converged = True
                    break
                present = has_dropped and _same_row(dropped.reshape(1, n_row), 0, row)
                for i in range(k):
                    if present:
                        break
                    present = _same_row(H, i, row)
                if present:
                    # Already in (or just dropped from) the support: the gap is
                    # rounding noise, nothing left to add.
                    converged = True
                    break
                has_dropped = False
                prob = 0.0
            # Add the structure, pivoting out dependent ones (see _add_active).
            while True:
                if k == IDX.shape[0]:
                    # Doubling, but never past the max_iter + 1 structures the
                    # support can reach: the (cap + 1)^2 inverse dominates the
                    # memory of large supports.
                    cap = max(k + 1, min(2 * IDX.shape[0], max_iter + 2))
                    IDX = _grow_int_rows(IDX, cap)
                    VAL = _grow_rows(VAL, cap)
                    N = _grow_rows(N, cap)
                    H = _grow_int_rows(H, cap)
                    nnz = _grow_int_vec(nnz, cap)
                    theta = _grow_vec(theta, cap)
                    p = _grow_vec(p, cap)
                    coef = np.zeros(cap)
                    B = _grow_square(B, cap + 1)
                    scr = np.empty((4, cap + 1))
                if kkt_insert_buf(IDX, VAL, nnz, N, B, theta, p, k, m, nv, th, prob, dep_tol, coef,
                                  scr[0], scr[1], scr[2]):
                    for t in range(n_row):
                        H[k, t] = row[t]
                    k += 1
                    break
                j = -1
                t_min = np.inf
                for i in range(k):
                    if coef[i] > 0.0:
                        r = p[i] / coef[i]
                        if r < t_min:
                            t_min = r
                            j = i
                j = max(j, 0)
                for i in range(k):
                    p[i] = p[i] - t_min * coef[i]
                p[j] = 0.0
                prob += t_min
                k = _remove_nonpositive(IDX, VAL, nnz, N, B, theta, p, H, k)
            if first:
                # Normalise the starting distribution (a single structure).
                s = 0.0
                for i in range(k):
                    s += p[i]
                for i in range(k):
                    p[i] /= s
            first = False
        ws = (IDX, VAL, nnz, N, B, theta, p, coef, H, row, m, nv, w, u, dropped, work, f_mat,
              i_mat, i_vec, b_vec, f_vec, e_f_mat, e_i_mat, e_stack, scr)
        return ws, k, n_iter, gap, converged, 0

    @njit
    def active_set(eta_u, eta_v, n, K, single_root, max_iter, tol, dep_tol):
        ws = active_set_workspace(kind, n, eta_u.shape[0], eta_v.shape[0])
        ws, k, n_iter, gap, converged, status = solve(eta_u, eta_v, n, K, single_root,
                                                      max_iter, tol, dep_tol, kind, ws, 0)
        return ws[0], ws[1], ws[2], ws[3], ws[8], ws[5], ws[6], k, n_iter, gap, converged, status

    return solve, active_set


_, _active_set_tree = _active_set_kernel(_TREE)
_, _active_set_projective_tree = _active_set_kernel(_PTREE)
_, _active_set_sequence = _active_set_kernel(_SEQUENCE)
# One kernel for every kind, the kind an argument: AD3's structure factors.
active_set_any, _ = _active_set_kernel(_ANY)
_NO_TRANSITIONS = np.zeros(0)


def active_set_tree(eta_u, n, single_root, max_iter, tol, dep_tol):
    """The whole active-set solver for non-projective dependency trees.

    The compiled solver (:func:`_active_set_kernel`) with Chu-Liu-Edmonds as
    the oracle (``eta_u`` the flat arc scores of ``n`` words). Returns the
    support (``IDX, VAL, nnz`` the sparse unary indicator rows, ``H`` head
    rows, ``theta``, ``p``, with ``k`` rows in use), ``n_iter``, the gap,
    whether it converged, and the status (1: no tree of finite score
    exists).
    """
    return _tree_solve(_active_set_tree, eta_u, n, single_root, max_iter, tol, dep_tol)


def active_set_projective_tree(eta_u, n, single_root, max_iter, tol, dep_tol):
    """The whole active-set solver for projective dependency trees.

    Eisner's algorithm as the oracle; arguments and returns as
    :func:`active_set_tree` (status 1: no projective tree of finite score
    exists).
    """
    return _tree_solve(_active_set_projective_tree, eta_u, n, single_root, max_iter, tol,
                       dep_tol)


def _tree_solve(kernel, eta_u, n, single_root, max_iter, tol, dep_tol):
    """A tree kernel of :func:`_active_set_kernel`, without the (empty) higher-order rows."""
    IDX, VAL, nnz, _, H, theta, p, k, n_iter, gap, converged, status = kernel(
        eta_u, _NO_TRANSITIONS, n, 0, single_root, max_iter, tol, dep_tol
    )
    return IDX, VAL, nnz, H, theta, p, k, n_iter, gap, converged, status


def active_set_sequence(unary_eta, trans, max_iter, tol, dep_tol):
    """The whole active-set solver for linear chains (``Sequence``).

    ``unary_eta`` is the ``(n, K)`` unary scores with the start and end
    scores already added to the first and last rows, ``trans`` the ``(K,
    K)`` transitions (``-inf`` forbids a part); the oracle is ``viterbi``.
    Returns the support (``IDX, VAL, nnz`` the sparse one-hot rows, ``N``
    transition-count rows, ``Y`` label rows, ``theta``, ``p``, with ``k``
    rows in use),
    ``n_iter``, the gap, whether it converged, and the status of the solver
    (0 solved, 1 no sequence of finite score, 2 the MAP score overflows).
    """
    n, K = unary_eta.shape
    return _active_set_sequence(
        np.ascontiguousarray(unary_eta).reshape(n * K),
        np.ascontiguousarray(trans).reshape(K * K), n, K, False, max_iter, tol, dep_tol,
    )


def active_set_head_automaton(eta_u, eta_v, L, G, max_iter, tol, dep_tol):
    """The whole active-set solver for head automata (``L`` modifiers, ``G`` incoming arcs).

    ``eta_u`` and ``eta_v`` are the flat scores of ``HeadAutomaton``
    (``G = 0``) or ``GrandparentHeadAutomaton``; the oracle is their
    Viterbi, run by :func:`active_set_any`. Returns the support (``IDX, VAL, nnz`` the sparse unary rows,
    ``N`` the sibling and grandparent rows, ``H`` the identifying rows
    ``[g, chosen_0, ..., chosen_{L-1}]``, ``theta``, ``p``, with ``k`` rows
    in use), ``n_iter``, the gap, whether it converged, and the status (0
    solved, 1 no structure of finite score, 2 the MAP score overflows).
    """
    # The kernel of every kind (AD3's) rather than one of its own: head
    # automata are factors of AD3 and LP-SparseMAP, which compile it anyway
    # (and LP-SparseMAP ends by calling this solver on each factor). Measured
    # from empty caches (one sparsemap on a GrandparentHeadAutomaton): 0.3 s
    # after an AD3 solve on a tree and head automata instead of 7.4 s for a
    # kernel of its own; 18 s instead of 13 s alone. The workspace crosses
    # into Python and back: about 30 us a call, not per iteration.
    return _solve_any(_HEAD_AUTOMATON, eta_u, eta_v, L, G, False, max_iter, tol, dep_tol)


def active_set_sibling_tree(eta_u, eta_v, n, single_root, max_iter, tol, dep_tol):
    """The whole active-set solver for ``ProjectiveSiblingTree`` (``n`` words).

    Second-order Eisner as the oracle, run by :func:`active_set_any` (the
    kernel AD3 compiles anyway, as for :func:`active_set_head_automaton`);
    returns as :func:`active_set_head_automaton`, ``H`` holding heads.
    """
    return _solve_any(_SIBLING_TREE, eta_u, eta_v, n, 0, single_root, max_iter, tol, dep_tol)


def _solve_any(kind, eta_u, eta_v, n, K, single_root, max_iter, tol, dep_tol):
    """One solve of :func:`active_set_any` from the MAP, its support and results returned."""
    ws = active_set_workspace(kind, n, eta_u.shape[0], eta_v.shape[0])
    ws, k, n_iter, gap, converged, status = active_set_any(
        eta_u, eta_v, n, K, np.bool_(single_root), max_iter, tol, dep_tol, kind, ws, 0)
    return ws[0], ws[1], ws[2], ws[3], ws[8], ws[5], ws[6], k, n_iter, gap, converged, status


@njit
def sparsemap_sequence_parts(unary_eta, trans, max_iter, tol, dep_tol, mu_out, xi_out):
    """SparseMAP posteriors of one chain, for a loss summed over many chains.

    Runs the compiled :func:`active_set_sequence`, overwrites ``mu_out`` (``n x K``) with
    the unary posteriors ``sum_i p_i onehot(y_i)`` and *adds* the expected
    transition counts ``sum_i p_i counts(y_i)`` to ``xi_out`` (``K x K``), so
    that one ``xi_out`` can collect a whole batch. Returns ``sum_i p_i
    theta_i`` (equal to ``<unary_eta, mu> + <trans, xi>``) and ``||mu||^2``,
    the terms of the SparseMAP objective ``max_mu <eta, mu> - ||mu_u||^2 /
    2``, then ``n_iter``, whether the solver converged and whether a
    sequence of finite score exists (if not, ``mu_out`` is zero, ``xi_out``
    unchanged and the two terms are ``-inf`` and 0).
    """
    n, K = unary_eta.shape
    out = _active_set_sequence(
        unary_eta.reshape(n * K), trans.reshape(K * K), n, K, np.bool_(False), max_iter, tol,
        dep_tol,
    )
    Y, theta, p, k, n_iter, converged, status = (
        out[4], out[5], out[6], out[7], out[8], out[10], out[11]
    )
    for i in range(n):
        for a in range(K):
            mu_out[i, a] = 0.0
    if status != 0:
        return -np.inf, 0.0, n_iter, False, False
    tp = 0.0
    for s in range(k):
        ps = p[s]
        tp += theta[s] * ps
        for i in range(n):
            mu_out[i, Y[s, i]] += ps
        for i in range(1, n):
            xi_out[Y[s, i - 1], Y[s, i]] += ps
    mm = 0.0
    for i in range(n):
        for a in range(K):
            mm += mu_out[i, a] * mu_out[i, a]
    return tp, mm, n_iter, converged, True


@njit(inline="always")
def active_set_arc_scores(S, projective, single_root, max_iter, tol, dep_tol):
    """The active set on an ``(n + 1, n + 1)`` arc-score matrix ``S`` (``DependencyTree`` layout).

    Flattens the arcs into ``eta`` and runs the compiled active set of
    projective or non-projective trees (:func:`_active_set_kernel`). Returns the head rows ``H``, the
    probabilities ``p`` and scores ``theta`` of the support, its size ``k``,
    whether the solver converged and its status.
    """
    n = S.shape[0] - 1
    eta = np.empty(n * n)
    for m in range(1, n + 1):
        base = (m - 1) * n
        for h in range(n + 1):
            if h < m:
                eta[base + h] = S[h, m]
            elif h > m:
                eta[base + h - 1] = S[h, m]
    if projective:
        out = _active_set_projective_tree(eta, np.zeros(0), n, np.int64(0), single_root,
                                          max_iter, tol, dep_tol)
    else:
        out = _active_set_tree(eta, np.zeros(0), n, np.int64(0), single_root, max_iter, tol,
                               dep_tol)
    H, theta, p, k, converged, status = out[4], out[5], out[6], out[7], out[10], out[11]
    return H, p, theta, k, converged, status


