"""SparseMAP: sparse structured inference through a MAP oracle (Niculae 2018, ch. 4).

SparseMAP solves the quadratic program (thesis eq. 4.7)

    max  eta_u . u + eta_v . v - 1/2 ||u||^2   over [u; v] in the marginal polytope,

written over distributions ``p`` on the structures as
``max_p theta . p - 1/2 ||M p||^2`` on the simplex, with ``theta_y`` the score
of ``y``. Every solver here only calls the structure's MAP oracle on modified
scores ``(eta_u - u, eta_v)``, so SparseMAP works for every
:class:`~sksparse_struct.structures.Structure`. The outer loops are Python and
NumPy; the oracles run the structures' compiled kernels (no jitted function is
ever passed around: a cached numba function that receives one misses the
on-disk cache in every new process).

The active-set solver (thesis Alg. 1) maintains the inverse of the bordered KKT
matrix of eq. 4.9 and updates it in ``O(k^2)`` (``k`` = support size) when a
structure enters or leaves the support; that bookkeeping and the relaxed solve
run in the compiled kernels of ``_sparsemap_fast``, so each iteration costs one
oracle call plus two kernel calls. Every solver stores the support's indicator
vectors as sparse rows (the parts a structure uses and their values), and
computes what it needs from them (inner products, the posterior) over their
nonzeros: a tree on ``n`` words costs ``O(n)``, not ``O(n^2)``, and a result
keeps its support as a ``scipy.sparse`` matrix. For structures with a
compiled oracle (:meth:`~sksparse_struct.structures.Structure.compiled_oracle`:
:class:`~sksparse_struct.structures.DependencyTree`,
:class:`~sksparse_struct.structures.Sequence` and the head automata), without
a warm start, the whole active-set loop runs in one compiled call
(``active_set_tree`` with Chu-Liu-Edmonds, ``active_set_projective_tree`` with
Eisner, ``active_set_sequence`` and ``active_set_head_automaton`` with Viterbi
as the oracle), taking
the same steps as the Python loop and giving bit-identical results; the
Python loop stays the generic reference.
The conditional-gradient variants (App. B.1) are slower references, in NumPy.
"""

import dataclasses

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from ..structures import Parts, Structure
from ..structures._base import (
    ORACLE_HEAD_AUTOMATON,
    ORACLE_PROJECTIVE_TREE,
    ORACLE_SEQUENCE,
    ORACLE_SIBLING_TREE,
)
from ..structures._head_automaton import automaton_values, no_automaton_error
from ..structures._projective import no_projective_tree_error
from ..structures._sequence import kernel_inputs as sequence_kernel_inputs
from ..structures._sequence import raise_infeasible as raise_no_sequence
from ..structures._tree import no_tree_error
from ..utils._reporting import warn
from ..utils._validation import check_integer, check_positive_scalar
from ._sparsemap_fast import (
    SPARSEMAP_OPTIONS,
    SparseMAPOptions,
    active_set_head_automaton,
    active_set_projective_tree,
    active_set_sequence,
    active_set_sibling_tree,
    active_set_tree,
    iteration_limit,
    kkt_delete,
    kkt_insert,
    masked_dot,
    relaxed_step,
    support_terms,
)

__all__ = [
    "SparseMAPOptions",
    "SparseMAPResult",
    "check_options",
    "sparsemap",
    "sparsemap_parts",
    "sparsemap_backward",
    "sparsemap_distribution_backward",
]

# method -> (default max_iter, default tol); see the docstring of sparsemap.
# The active set's are SPARSEMAP_OPTIONS' (max_iter None: it depends on the
# size of the structures, see iteration_limit).
_METHOD_DEFAULTS = {
    "active_set": (SPARSEMAP_OPTIONS.max_iter, SPARSEMAP_OPTIONS.tol),
    "frank_wolfe": (1000, 1e-6),
    "away_step": (1000, 1e-6),
    "pairwise": (1000, 1e-6),
}

# The affine-dependence tolerance of the default options (the kernels' one
# value), for callers of the kernels below that take no options.
_DEPENDENT_TOL = SPARSEMAP_OPTIONS.dependent_tol


class SparseMAPResult:
    """Solution of :func:`sparsemap`: posteriors, sparse distribution, diagnostics.

    Attributes
    ----------
    marginals : object
        The posteriors in the layout of the structure's marginals (without
        ``log_z``), i.e. ``structure.decode(u, v, parts)``.
    support : list of (value, float)
        The structures with nonzero probability and their probabilities,
        most probable first (ties in the order the solver found them); values
        are in the form the structure's ``map`` returns.
    u : ndarray of shape (n_unary_parts,)
        Flat posterior of the unary parts, ``M_S p``.
    v : ndarray of shape (n_higher_order_parts,)
        Flat posterior of the higher-order parts, ``N_S p``.
    probabilities : ndarray of shape (k,)
        The probabilities of the support, in the order of ``support``.
    vertices_u_sparse : scipy.sparse.csr_array of shape (k, n_unary_parts)
        Row ``i`` is the unary indicator vector ``m`` of the ``i``-th support
        structure, stored sparse: ``O(k w)`` memory for structures using
        ``w`` parts each (``w = n`` for a tree on ``n`` words, which has
        ``n^2`` possible arcs). Everything the result computes (``u``, the
        backward passes) uses this form.
    vertices_u : ndarray of shape (k, n_unary_parts)
        The same rows as a dense array, built on first access: ``k *
        n_unary_parts`` floats, which for long sentences can be far more
        than the solve itself used; prefer ``vertices_u_sparse`` there.
    vertices_v : ndarray of shape (k, n_higher_order_parts)
        Row ``i`` is its higher-order indicator vector ``n``.
    n_iter : int
        Iterations run (active set: relaxed QP solves, each followed by an
        oracle call or a removal from the support; conditional gradient:
        oracle calls).
    gap : float
        Wolfe (duality) gap at the returned solution (eq. 4.11); it bounds
        the suboptimality of ``objective``.
    objective : float
        ``eta_u . u + eta_v . v - 1/2 ||u||^2``.
    converged : bool
        Whether the gap reached the tolerance within ``max_iter``.
    method : str
        The solver used.
    structure : Structure
        The structure the problem was solved on.
    parts : Parts
        The encoded potentials (flat scores and shape context).
    """

    def __init__(
        self,
        *,
        structure,
        parts,
        values,
        probabilities,
        vertices_u,
        vertices_v,
        n_iter,
        gap,
        objective,
        converged,
        method,
    ):
        order = np.argsort(-probabilities, kind="stable")
        self.structure = structure
        self.parts = parts
        self.probabilities = np.ascontiguousarray(probabilities[order])
        # vertices_u: the support's unary rows, a scipy.sparse CSR matrix
        # (the solvers' output) or a dense array; kept sparse.
        self.vertices_u_sparse = sp.csr_array(vertices_u)[order]
        self.vertices_v = np.ascontiguousarray(vertices_v[order])
        self.n_iter = int(n_iter)
        self.gap = float(gap)
        self.objective = float(objective)
        self.converged = bool(converged)
        self.method = method
        self._jacobian = None
        # values, support, u, v and marginals are derived on first access:
        # building them all cost more than the compiled solve on small trees,
        # and callers often read only a few of them.
        self._raw_values = values
        self._order = order
        self._values = None
        self._support = None
        self._u = None
        self._v = None
        self._marginals = None
        self._vertices_u = None

    @property
    def vertices_u(self):
        """ndarray of shape (k, n_unary_parts): ``vertices_u_sparse``, dense."""
        if self._vertices_u is None:
            self._vertices_u = self.vertices_u_sparse.toarray()
        return self._vertices_u

    @property
    def values(self):
        """The support structures, most probable first (as in ``support``)."""
        if self._values is None:
            self._values = [self._raw_values[i] for i in self._order]
        return self._values

    @property
    def support(self):
        """list of (value, float): the support and its probabilities."""
        if self._support is None:
            self._support = list(zip(self.values, self.probabilities.tolist()))
        return self._support

    @property
    def u(self):
        """ndarray of shape (n_unary_parts,): ``M_S p``."""
        if self._u is None:
            self._u = self.probabilities @ self.vertices_u_sparse
        return self._u

    @property
    def v(self):
        """ndarray of shape (n_higher_order_parts,): ``N_S p``."""
        if self._v is None:
            self._v = self.probabilities @ self.vertices_v
        return self._v

    @property
    def marginals(self):
        """The posteriors in the structure's marginals layout (decoded once)."""
        if self._marginals is None:
            self._marginals = self.structure.decode(self.u, self.v, self.parts)
        return self._marginals

    def __repr__(self):
        return (
            f"SparseMAPResult(structure={self.structure!r}, support_size="
            f"{len(self.support)}, objective={self.objective:.6g}, gap={self.gap:.3g}, "
            f"n_iter={self.n_iter}, method={self.method!r})"
        )

    def _probability_jacobian(self):
        """``d p_S / d theta_S`` on the support (symmetric, k x k).

        The lower-right block of the inverse of the bordered KKT matrix
        ``[[0, 1^T], [1, M_S^T M_S]]``; when ``M_S^T M_S`` is invertible it is
        Prop. 4.1's ``Z - Z 1 1^T Z / (1^T Z 1)``, but the bordered form also
        covers supports whose Gram matrix is singular (e.g. one containing the
        empty structure). Recomputed once from the support rather than taken
        from the solver's incrementally updated inverse, so it carries no
        accumulated rounding; the pseudo-inverse keeps it defined for the
        (possibly affinely dependent) supports of the conditional-gradient
        solvers.
        """
        if self._jacobian is None:
            k = self.probabilities.shape[0]
            kkt = np.zeros((k + 1, k + 1))
            kkt[0, 1:] = 1.0
            kkt[1:, 0] = 1.0
            kkt[1:, 1:] = (self.vertices_u_sparse @ self.vertices_u_sparse.T).toarray()
            self._jacobian = np.linalg.pinv(kkt, rcond=1e-12, hermitian=True)[1:, 1:]
        return self._jacobian


class _Support:
    """The current support: sparse indicator rows, scores, probabilities, keys.

    The unary indicator vector ``m`` of each structure is stored as a sparse
    row (``IDX[i, :nnz[i]]`` the parts it uses, ``VAL[i, :nnz[i]]`` its values
    there), so the support takes memory in proportion to the nonzeros of its
    structures (``n`` per tree on ``n`` words) rather than to the number of
    parts (``n^2``). Rows live in arrays grown by doubling (and widened when
    a structure has more nonzeros than any before); removal moves the last
    row into the freed slot. With ``kkt=True`` (active set) the compiled
    kernels of ``_sparsemap_fast`` also maintain the inverse ``B`` of the
    bordered KKT matrix, in ``O(k^2 + k w)`` per
    change (``w`` nonzeros per row); Python only mirrors the values and keys.
    """

    def __init__(self, n_u, n_v, kkt, max_rows=None, dependent_tol=_DEPENDENT_TOL):
        cap = 16
        self.max_rows = max_rows  # rows the support can ever need (None: unknown)
        self.dependent_tol = dependent_tol
        self.k = 0
        self.n_u = n_u
        self.IDX = np.zeros((cap, 1), dtype=np.int64)
        self.VAL = np.zeros((cap, 1))
        self.nnz = np.zeros(cap, dtype=np.int64)
        self.N = np.zeros((cap, n_v))
        self.theta = np.zeros(cap)
        self.p = np.zeros(cap)
        self.values = []
        self.keys = []
        self.where = {}  # key -> position, to find duplicates in O(1)
        self.kkt = kkt
        if kkt:
            self.B = np.zeros((cap + 1, cap + 1))
            self.coef = np.zeros(cap)

    def _grow(self):
        k = self.k
        cap = 2 * self.IDX.shape[0]
        if self.max_rows is not None:
            # The (cap + 1)^2 inverse dominates the memory of large supports.
            cap = max(k + 1, min(cap, self.max_rows))
        for name in ("IDX", "VAL", "N"):
            old = getattr(self, name)
            new = np.zeros((cap, old.shape[1]), dtype=old.dtype)
            new[:k] = old[:k]
            setattr(self, name, new)
        for name in ("theta", "p", "nnz"):
            old = getattr(self, name)
            new = np.zeros(cap, dtype=old.dtype)
            new[:k] = old[:k]
            setattr(self, name, new)
        if self.kkt:
            B = np.zeros((cap + 1, cap + 1))
            B[: k + 1, : k + 1] = self.B[: k + 1, : k + 1]
            self.B = B
            self.coef = np.zeros(cap)

    def _widen(self, width):
        for name in ("IDX", "VAL"):
            old = getattr(self, name)
            new = np.zeros((old.shape[0], width), dtype=old.dtype)
            new[:, : old.shape[1]] = old
            setattr(self, name, new)

    def position(self, key):
        return self.where.get(key, -1)

    def append(self, value, key, m, n, theta, prob):
        """Add a structure; with ``kkt``, return False (and change nothing)
        if its ``m`` is an affine combination of the support's, whose
        coefficients are then in ``self.coef[:k]``."""
        if self.k == self.IDX.shape[0]:
            self._grow()
        width = np.count_nonzero(m)
        if width > self.IDX.shape[1]:
            self._widen(width)
        k = self.k
        if self.kkt:
            inserted = kkt_insert(
                self.IDX, self.VAL, self.nnz, self.N, self.B, self.theta, self.p,
                k, m, n, theta, prob, self.dependent_tol, self.coef,
            )
            if not inserted:
                return False
        else:
            idx = np.flatnonzero(m)
            self.IDX[k, : idx.shape[0]] = idx
            self.VAL[k, : idx.shape[0]] = m[idx]
            self.nnz[k] = idx.shape[0]
            self.N[k] = n
            self.theta[k] = theta
            self.p[k] = prob
        self.values.append(value)
        self.keys.append(key)
        self.where[key] = k
        self.k = k + 1
        return True

    def remove(self, j):
        """Drop structure ``j``, moving the last one into its slot."""
        last = self.k - 1
        del self.where[self.keys[j]]
        if self.kkt:
            kkt_delete(
                self.IDX, self.VAL, self.nnz, self.N, self.B, self.theta, self.p,
                self.k, j,
            )
        elif j != last:
            for arr in (self.IDX, self.VAL, self.nnz, self.N, self.theta, self.p):
                arr[j] = arr[last]
        if j != last:
            self.values[j] = self.values[last]
            self.keys[j] = self.keys[last]
            self.where[self.keys[j]] = j
        self.values.pop()
        self.keys.pop()
        self.k = last

    def remove_nonpositive(self):
        p = self.p[: self.k]
        if p.min() > 0.0:
            return
        for j in np.flatnonzero(p <= 0.0)[::-1]:
            self.remove(int(j))

    def unary_rows(self):
        """The unary rows of the support as a ``(k, n_u)`` CSR matrix."""
        return _csr_rows(self.IDX, self.VAL, self.nnz, self.k, self.n_u)


def _csr_rows(IDX, VAL, nnz, k, n_u):
    """CSR matrix of the first ``k`` sparse rows ``IDX[i, :nnz[i]]``, ``VAL[i, :nnz[i]]``."""
    counts = nnz[:k]
    used = np.arange(IDX.shape[1]) < counts[:, None]
    indptr = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return sp.csr_array(
        (VAL[:k][used], IDX[:k][used], indptr), shape=(k, n_u)
    )


def _check_structure(structure):
    if not isinstance(structure, Structure):
        raise ValueError(
            "structure must be an instance of sksparse_struct.structures.Structure, "
            f"got {type(structure).__name__}."
        )


def _active_set_max_iter(width):
    """Default ``max_iter`` of the active set for structures using ``width`` parts
    (the rule of the compiled ``iteration_limit``, which the loss kernels share)."""
    return int(iteration_limit(None, int(width)))


def _vertex(parts, value, m, n):
    """Float64 indicators, dedupe key and score ``theta`` of a structure."""
    m = np.ascontiguousarray(m, dtype=np.float64)
    n = np.ascontiguousarray(n, dtype=np.float64)
    # Summed over the used parts in index order (never 0 * -inf), in a kernel
    # shared with the compiled tree loop so that both round alike.
    theta = masked_dot(_contiguous(parts.eta_u), m) + masked_dot(_contiguous(parts.eta_v), n)
    # The key names the used parts and their values (O(nonzeros), not O(parts)).
    used = np.flatnonzero(m)
    key = (used.tobytes(), m[used].tobytes(), n.tobytes())
    return value, m, n, key, theta


def _initial_vertices(structure, parts, init):
    """Structures and probabilities to start from: MAP, or a warm start.

    Structures of the warm start that use a part forbidden by the current
    scores are dropped; if none is left, the solver starts from the MAP.
    """
    start = []
    if init is not None:
        if isinstance(init, SparseMAPResult):
            n_u_init = init.vertices_u_sparse.shape[1]
            if init.structure != structure or (
                n_u_init != parts.eta_u.shape[0]
                or init.vertices_v.shape[1] != parts.eta_v.shape[0]
            ):
                raise ValueError(
                    "init is a SparseMAPResult for another structure or other "
                    f"potential shapes ({init.structure!r} with "
                    f"{n_u_init} unary and {init.vertices_v.shape[1]} "
                    "higher-order parts)."
                )
            pairs = [
                (value, _dense_row(init.vertices_u_sparse, i), n, prob)
                for i, (value, n, prob) in enumerate(
                    zip(init.values, init.vertices_v, init.probabilities)
                )
            ]
        else:
            try:
                values = list(init)
            except TypeError:
                raise ValueError(
                    "init must be a SparseMAPResult or a list of structure values, "
                    f"got {type(init).__name__}."
                ) from None
            if not values:
                raise ValueError("init is an empty list of structures.")
            pairs = []
            for value in values:
                m, n = structure.indicators(value, parts)
                pairs.append((value, m, n, 1.0 / len(values)))
        seen = set()
        for value, m, n, prob in pairs:
            vert = _vertex(parts, value, m, n)
            if np.isfinite(vert[4]) and vert[3] not in seen:
                seen.add(vert[3])
                start.append((vert, prob))
    if not start:
        value, m, n = structure.oracle(parts, parts.eta_u, parts.eta_v)
        vert = _vertex(parts, value, m, n)
        if not np.isfinite(vert[4]):
            raise _all_forbidden_error(structure)
        start = [(vert, 1.0)]
    return start


def _all_forbidden_error(structure):
    return ValueError(
        f"every structure of {structure!r} uses a forbidden (-inf) part: "
        "there is nothing to put probability on."
    )


def _linear_gap(structure, parts, support, u):
    """Oracle call at ``u``: the new structure, its linear score and the gap."""
    value, m, n = structure.oracle(parts, parts.eta_u - u, parts.eta_v)
    vert = _vertex(parts, value, m, n)
    # <grad f, [u; v]> = sum_y p_y (theta_y - m_y . u) = theta_S . p - u . u
    tp, uu = support_terms(support.theta, support.p, support.k, u)
    current = tp - uu
    score = vert[4] - masked_dot(vert[1], u)
    return vert, score, score - current


def _contiguous(a):
    return np.ascontiguousarray(a, dtype=np.float64)


def _dense_row(rows, i):
    """Row ``i`` of a CSR matrix as a dense float64 vector."""
    m = np.zeros(rows.shape[1])
    a, b = rows.indptr[i], rows.indptr[i + 1]
    m[rows.indices[a:b]] = rows.data[a:b]
    return m


def _add_active(support, vert, prob):
    """Add a structure to the active set, pivoting out dependent ones.

    If ``m`` is an affine combination ``M_S c`` of the support (singular KKT
    matrix), moving mass along ``e_new - c`` leaves ``u`` unchanged and does
    not decrease the objective when the new structure has a positive gap
    (this only happens through higher-order scores or exact ties); the mass
    moves until a support structure reaches zero and leaves, and the test is
    repeated.
    """
    value, m, n, key, theta = vert
    while not support.append(value, key, m, n, theta, prob):
        k = support.k
        coef = support.coef[:k]
        p = support.p[:k]
        pos = coef > 0
        ratios = np.full(k, np.inf)
        ratios[pos] = p[pos] / coef[pos]
        j = int(np.argmin(ratios))
        t = float(ratios[j])
        support.p[:k] = p - t * coef
        support.p[j] = 0.0
        prob += t
        support.remove_nonpositive()


def _solve_active_set(structure, parts, start, max_iter, tol, dependent_tol):
    n_u, n_v = parts.eta_u.shape[0], parts.eta_v.shape[0]
    # One structure enters per iteration: at most max_iter + len(start).
    support = _Support(n_u, n_v, kkt=True, max_rows=max_iter + len(start),
                       dependent_tol=dependent_tol)
    total = sum(prob for _, prob in start)
    for vert, prob in start:
        _add_active(support, vert, prob / total)
    support.p[: support.k] /= support.p[: support.k].sum()
    u = np.zeros(n_u)
    gap = np.inf
    converged = False
    last_dropped = None
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        # Relaxed QP (eq. 4.9); if infeasible, the step of eq. 4.10.
        blocking, gamma = relaxed_step(
            support.IDX, support.VAL, support.nnz, support.B, support.theta,
            support.p, support.k, u,
        )
        if blocking >= 0:
            last_dropped = support.keys[blocking] if gamma == 0.0 else None
            support.remove_nonpositive()
            continue
        support.remove_nonpositive()
        k = support.k
        vert, _, gap = _linear_gap(structure, parts, support, u)
        tp, uu = support_terms(support.theta, support.p, k, u)
        objective = tp - 0.5 * uu
        if gap <= tol * max(1.0, abs(objective)):
            converged = True
            break
        if support.position(vert[3]) >= 0 or vert[3] == last_dropped:
            # The oracle returns a structure already in (or just dropped from)
            # the support: the gap is rounding noise, nothing left to add.
            converged = True
            break
        last_dropped = None
        _add_active(support, vert, 0.0)
    return support, n_iter, gap, converged


def _solve_compiled(structure, parts, spec, max_iter, tol, dependent_tol):
    """``_solve_active_set`` from the MAP, compiled whole (``spec``: the structure's
    :class:`~sksparse_struct.structures.CompiledOracle`).

    Same steps and stopping rules as the generic loop (which stays the
    reference, and serves warm starts); the per-iteration Python calls cost
    more than the oracle on trees of tens of words. Trees run
    Chu-Liu-Edmonds or Eisner (``active_set_tree``,
    ``active_set_projective_tree``), sequences and head automata Viterbi
    (``active_set_sequence``, ``active_set_head_automaton``), projective
    sibling trees second-order Eisner (``active_set_sibling_tree``).
    """
    if spec.kind == ORACLE_SEQUENCE:
        unary, trans = sequence_kernel_inputs(parts, parts.eta_u, parts.eta_v)
        IDX, VAL, nnz, N, values, theta, p, k, n_iter, gap, converged, status = (
            active_set_sequence(unary, trans, max_iter, tol, dependent_tol))
        if status == 1:
            raise_no_sequence(unary, trans)
    elif spec.kind == ORACLE_HEAD_AUTOMATON:
        IDX, VAL, nnz, N, rows, theta, p, k, n_iter, gap, converged, status = (
            active_set_head_automaton(parts.eta_u, parts.eta_v, spec.n, spec.K, max_iter, tol,
                                      dependent_tol))
        if status == 1:
            raise no_automaton_error(structure, parts, parts.eta_u, parts.eta_v)
        values = automaton_values(rows, k, spec.K > 0)
    elif spec.kind == ORACLE_SIBLING_TREE:
        IDX, VAL, nnz, N, rows, theta, p, k, n_iter, gap, converged, status = (
            active_set_sibling_tree(parts.eta_u, parts.eta_v, spec.n, spec.single_root,
                                    max_iter, tol, dependent_tol))
        if status == 1:
            raise no_projective_tree_error(spec.single_root)
        values = rows
    else:
        projective = spec.kind == ORACLE_PROJECTIVE_TREE
        kernel = active_set_projective_tree if projective else active_set_tree
        IDX, VAL, nnz, values, theta, p, k, n_iter, gap, converged, status = kernel(
            parts.eta_u, spec.n, np.bool_(spec.single_root), max_iter, tol, dependent_tol
        )
        N = np.zeros((IDX.shape[0], 0))
        if status == 1:
            if projective:
                raise no_projective_tree_error(spec.single_root)
            raise no_tree_error(spec.single_root)
    if status == 2:
        raise _all_forbidden_error(structure)
    support = _compiled_support(IDX, VAL, nnz, N, values, theta, p, k, parts.eta_u.shape[0])
    return support, n_iter, gap, converged


def _compiled_support(IDX, VAL, nnz, N, values, theta, p, k, n_u):
    """A ``_Support`` holding only what sparsemap reads after a compiled solve."""
    support = _Support.__new__(_Support)
    support.k = k
    support.n_u = n_u
    support.IDX = IDX
    support.VAL = VAL
    support.nnz = nnz
    support.N = N
    support.theta = theta
    support.p = p
    support.values = list(values[:k].copy())
    return support


def _compiled_oracle(structure, parts, method, init):
    """The structure's compiled oracle when the compiled active set applies, else None.

    The compiled loop starts from the MAP: the active set without a warm
    start, on a structure that offers :meth:`~sksparse_struct.structures.
    Structure.compiled_oracle`. (Tests patch this to force the generic loop.)
    """
    if method != "active_set" or init is not None:
        return None
    return structure.compiled_oracle(parts)


def _solve_conditional_gradient(structure, parts, start, max_iter, tol, variant):
    n_u, n_v = parts.eta_u.shape[0], parts.eta_v.shape[0]
    support = _Support(n_u, n_v, kkt=False)
    total = sum(prob for _, prob in start)
    for (value, m, n, key, theta), prob in start:
        support.append(value, key, m, n, theta, prob / total)
    gap = np.inf
    converged = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        k = support.k
        p = support.p[:k]
        M = support.unary_rows()
        u = p @ M
        vert, score, gap = _linear_gap(structure, parts, support, u)
        objective = float(support.theta[:k] @ p - 0.5 * (u @ u))
        if gap <= tol * max(1.0, abs(objective)):
            converged = True
            break
        if n_iter == max_iter:
            break
        # Linear scores of the support; the away structure has the lowest.
        scores = support.theta[:k] - M @ u
        current = float(scores @ p)
        w = int(np.argmin(scores))
        forward = True
        if variant == "frank_wolfe":
            d_u, slope, gamma_max = vert[1] - u, gap, 1.0
        elif variant == "pairwise":
            d_u, slope, gamma_max = vert[1] - _dense_row(M, w), score - scores[w], p[w]
            forward = False
        else:  # away_step
            away_gap = current - scores[w]
            if gap >= away_gap:
                d_u, slope, gamma_max = vert[1] - u, gap, 1.0
            else:
                d_u, slope, gamma_max = u - _dense_row(M, w), away_gap, p[w] / (1.0 - p[w])
                forward = None
        curvature = float(d_u @ d_u)
        # Eq. B.2 (exact line search of the quadratic along d).
        gamma = gamma_max if curvature == 0.0 else min(gamma_max, max(0.0, slope / curvature))
        if forward is None:  # away step: move mass off w
            support.p[:k] *= 1.0 + gamma
            support.p[w] = 0.0 if gamma == gamma_max else support.p[w] - gamma
        else:
            j = support.position(vert[3])
            if j < 0:
                support.append(vert[0], vert[3], vert[1], vert[2], vert[4], 0.0)
                j = support.k - 1
            if forward:
                support.p[: support.k] *= 1.0 - gamma
                support.p[j] += gamma
            else:
                support.p[j] += gamma
                support.p[w] = 0.0 if gamma == gamma_max else support.p[w] - gamma
        support.remove_nonpositive()
        support.p[: support.k] /= support.p[: support.k].sum()
    return support, n_iter, gap, converged


def sparsemap(structure, *potentials, method="active_set", max_iter=None, tol=None, init=None,
              options=None):
    """SparseMAP: a sparse distribution over structures and its posteriors.

    Solves (Niculae 2018, eq. 4.7)::

        max  eta_u . u + eta_v . v - 1/2 ||u||^2   over [u; v] in the marginal polytope

    where ``[u; v] = sum_y p(y) [m_y; n_y]`` is a convex combination of the
    indicator vectors of the structures. The posterior ``u`` is unique; the
    solution is a sparse distribution ``p`` (at most ``n_unary_parts + 1``
    structures). Every solver only calls the structure's MAP oracle, on the
    scores ``(eta_u - u, eta_v)``.

    Solvers (``method``):

    ``"active_set"`` (default)
        Thesis Alg. 1: solves the equality-constrained QP on the current
        support through the bordered KKT system (eq. 4.9), whose inverse is
        updated in ``O(k^2)`` when a structure enters or leaves; takes the
        feasible step of eq. 4.10 when the relaxed solution has negative
        entries, and otherwise asks the oracle for the best structure at the
        current ``u``. Finite convergence, exact sparsity pattern. Each
        iteration adds one structure to the support or removes one, so it
        takes at least as many iterations as the solution has structures
        (see Notes).
    ``"frank_wolfe"``, ``"away_step"``, ``"pairwise"``
        Vanilla, away-step and pairwise conditional gradient with exact line
        search (App. B.1). Much slower to reach a small gap and denser
        supports (vanilla typically runs out of iterations); references.

    All stop when the Wolfe gap (eq. 4.11) at the current point, an upper
    bound on the suboptimality of the objective, is at most
    ``tol * max(1, |objective|)`` (relative for large scores, absolute
    otherwise). The active-set solver also stops when the oracle returns a
    structure already in the support (the gap is then rounding noise).

    Parameters
    ----------
    structure : Structure
        Any structure, e.g. :class:`~sksparse_struct.structures.XOR`.
    *potentials : array-like
        The structure's potentials, as for its ``map`` method. ``-inf``
        forbids a part; at least one structure must use none.
    method : {"active_set", "frank_wolfe", "away_step", "pairwise"}, \
default="active_set"
        Solver.
    max_iter : int or None, default=None
        Maximum number of iterations (see :class:`SparseMAPResult`'s
        ``n_iter``); a ``ConvergenceWarning`` is raised when it is reached
        before the gap criterion. ``None`` means the default of
        :class:`SparseMAPOptions` for the active set, ``max(1000, 10 * w)``
        with ``w`` the number of unary parts a structure uses (the largest
        among the starting structures: ``n`` for a tree on ``n`` words or a
        sequence of ``n`` positions), and 1000 for the conditional-gradient
        solvers.
    tol : float or None, default=None
        Relative tolerance on the Wolfe gap, see above. ``None`` means
        :class:`SparseMAPOptions`' 1e-9 for the active set and 1e-6 for the
        conditional-gradient solvers.
    init : SparseMAPResult or list of structure values, default=None
        Warm start: a previous result for the same structure and shapes
        (its support and probabilities) or a list of structures (uniform
        probabilities). Structures that use a part forbidden by the new
        potentials are dropped. ``None`` starts from the MAP structure.
    options : SparseMAPOptions or None, default=None
        All the active set's settings in one object (``max_iter``, ``tol``
        and the affine-dependence tolerance ``dependent_tol``), the same
        object the SparseMAP losses take; instead of ``max_iter`` and
        ``tol``, and only with ``method="active_set"``. ``None`` means
        ``SparseMAPOptions()`` with ``max_iter`` and ``tol`` replaced by
        the keywords that are given.

    Returns
    -------
    result : SparseMAPResult
        ``marginals``, ``support``, ``u``, ``v``, ``n_iter``, ``gap``,
        ``objective`` and what the backward passes need.

    Raises
    ------
    ValueError
        For an unknown ``method``; a ``max_iter`` that is not a positive
        integer or a ``tol`` that is not a finite positive number; an
        ``options`` that is not a :class:`SparseMAPOptions`, has a field out
        of range, is given with a conditional-gradient ``method`` or
        together with ``max_iter`` or ``tol``.

    See Also
    --------
    sparsemap_backward : gradients through the posteriors (Prop. 4.1).
    sparsemap_distribution_backward : gradients through ``p(y)`` (Prop. 5.1).

    Notes
    -----
    **Large structures.** The support is stored as sparse indicator
    vectors: a structure using ``w`` of the ``n_unary_parts`` parts costs
    ``O(w)`` memory (a tree on ``n`` words: its ``n`` arcs, not the ``n^2``
    possible ones), and every inner product and posterior update the
    solvers need runs over those nonzeros. With ``k`` structures in the
    support the active set takes ``O(k w + k^2 + n_unary_parts)`` memory:
    the sparse rows, the inverse of the ``(k + 1) x (k + 1)`` KKT matrix,
    and a few dense vectors of the parts (scores, posterior, the oracle's
    work arrays). For a sentence of ``n`` words that is ``O(k n + n^2)``,
    since the default ``max_iter`` bounds ``k`` by ``max(1000, 10 n)``.

    **Iterations.** The active set adds at most one structure per
    iteration, and the solution's support grows with the size of the
    structures and shrinks as the scores get more peaked: for dependency
    trees, about ``0.5 n`` trees with the scores of a trained parser and
    ``1.5 n`` with N(0, 1) arc scores. A fixed limit therefore stops long
    sentences short of the solution; the default limit grows with ``w``
    instead. Nearly flat scores (e.g. all within 0.1 of each other) spread
    the posterior over most parts and need far larger supports, up to
    ``n_unary_parts + 1`` structures; pass a larger ``max_iter`` for those,
    or accept the approximate solution with its reported ``gap``.

    Examples
    --------
    >>> from sksparse_struct.inference import sparsemap
    >>> from sksparse_struct.structures import XOR
    >>> result = sparsemap(XOR(), [1.0, 0.8, -1.0])
    >>> result.marginals.round(3).tolist()  # sparsemax
    [0.6, 0.4, 0.0]
    >>> [(y, round(p, 3)) for y, p in result.support]
    [(0, 0.6), (1, 0.4)]
    """
    options = _check_solver(structure, method, max_iter, tol, options)
    parts = structure.encode(*potentials)
    return _solve(structure, parts, method, options, init, "sparsemap")


def sparsemap_parts(structure, parts, *, method="active_set", max_iter=None, tol=None,
                    init=None, options=None):
    """SparseMAP on potentials already encoded as flat part scores.

    ``sparsemap(structure, *potentials, ...)`` is
    ``sparsemap_parts(structure, structure.encode(*potentials), ...)``: the
    same solvers and the same result, bit for bit. Use this entry point when
    the scores to solve with are not the user's potentials but a modification
    of their flat encoding, e.g. the scores plus a cost in a cost-augmented
    loss (:func:`sksparse_struct.losses.structured_loss`), without going back
    through the structure's potentials.

    Parameters
    ----------
    structure : Structure
        The structure ``parts`` was encoded by.
    parts : Parts
        Flat part scores: ``eta_u`` and ``eta_v`` 1-D float64 arrays of the
        lengths ``structure.encode`` gives for ``parts.context`` (``-inf``
        forbids a part; NaN and ``+inf`` are rejected), typically
        ``dataclasses.replace(structure.encode(*potentials), eta_u=...)``.
    method : {"active_set", "frank_wolfe", "away_step", "pairwise"}, \
default="active_set"
        Solver, as in :func:`sparsemap`.
    max_iter : int or None, default=None
        Maximum number of iterations, as in :func:`sparsemap`.
    tol : float or None, default=None
        Relative tolerance on the Wolfe gap, as in :func:`sparsemap`.
    init : SparseMAPResult or list of structure values, default=None
        Warm start, as in :func:`sparsemap`.
    options : SparseMAPOptions or None, default=None
        The active set's settings, as in :func:`sparsemap`.

    Returns
    -------
    result : SparseMAPResult
        As :func:`sparsemap` returns it; ``result.parts`` is ``parts`` (a
        C-contiguous copy if its arrays were not contiguous), so the backward
        passes give gradients with respect to the potentials ``parts`` came
        from, through ``structure.encode_backward``.

    Raises
    ------
    ValueError
        If ``parts`` is not a :class:`~sksparse_struct.structures.Parts`, its
        score vectors are not 1-D float64 arrays, contain NaN or ``+inf``, or
        do not have the lengths the structure decodes for ``parts.context``;
        and for the same reasons as :func:`sparsemap`.

    See Also
    --------
    sparsemap : the same from the structure's potentials.

    Notes
    -----
    The lengths are checked by decoding zero vectors into the structure's
    marginals layout and mapping that back with ``structure.decode_backward``:
    a constant number of array operations for the structures of the package,
    one ``decode`` per part for a structure that keeps the generic
    ``decode_backward``.

    Examples
    --------
    On the encoded potentials themselves, this is :func:`sparsemap`:

    >>> import dataclasses
    >>> import numpy as np
    >>> from sksparse_struct.inference import sparsemap, sparsemap_parts
    >>> from sksparse_struct.structures import Sequence
    >>> seq = Sequence()
    >>> unary = [[1.0, 0.2], [0.3, 0.6], [0.0, 1.0]]
    >>> transitions = [[0.1, 0.0], [0.0, 0.0]]
    >>> parts = seq.encode(unary, transitions)
    >>> result = sparsemap_parts(seq, parts)
    >>> [(y.tolist(), round(p, 3)) for y, p in result.support]
    [([0, 1, 1], 0.5), ([0, 0, 1], 0.35), ([1, 1, 1], 0.1), ([0, 0, 0], 0.05)]
    >>> bool(np.array_equal(result.u, sparsemap(seq, unary, transitions).u))
    True

    The maximization inside a cost-augmented loss adds a cost to the unary
    scores, here 1 on every label the gold sequence ``[0, 0, 1]`` does not
    use; the mass moves to sequences that differ from it:

    >>> m_gold, _ = seq.indicators([0, 0, 1], parts)
    >>> augmented = dataclasses.replace(parts, eta_u=parts.eta_u + (1.0 - m_gold))
    >>> [(y.tolist(), round(p, 3)) for y, p in sparsemap_parts(seq, augmented).support]
    [([1, 1, 0], 0.5), ([0, 1, 1], 0.4), ([1, 1, 1], 0.1)]
    """
    options = _check_solver(structure, method, max_iter, tol, options)
    parts = _check_parts(structure, parts)
    return _solve(structure, parts, method, options, init, "sparsemap_parts")


def check_options(options, name="options"):
    """Validate a :class:`SparseMAPOptions`; return it with plain ``int`` / ``float`` fields.

    Parameters
    ----------
    options : SparseMAPOptions
        The settings to check.
    name : str, default="options"
        The argument's name in the error messages.

    Returns
    -------
    options : SparseMAPOptions
        ``max_iter`` None or a positive ``int``, ``tol`` and
        ``dependent_tol`` finite positive ``float`` (the types the compiled
        kernels are compiled and cached for).

    Raises
    ------
    ValueError
        If ``options`` is not a ``SparseMAPOptions`` or a field is out of
        range.
    """
    if not isinstance(options, SparseMAPOptions):
        raise ValueError(
            f"{name} must be a SparseMAPOptions (from sksparse_struct.inference), "
            f"got {type(options).__name__}."
        )
    max_iter = options.max_iter
    if max_iter is not None:
        max_iter = check_integer(max_iter, f"{name}.max_iter", minimum=1)
    return SparseMAPOptions(
        max_iter=max_iter,
        tol=check_positive_scalar(options.tol, f"{name}.tol"),
        dependent_tol=check_positive_scalar(options.dependent_tol, f"{name}.dependent_tol"),
    )


def _check_solver(structure, method, max_iter, tol, options):
    """Validate the solver arguments: a :class:`SparseMAPOptions` with the
    defaults filled in (``max_iter`` stays None for the active set: its
    default depends on the structures, see ``iteration_limit``)."""
    _check_structure(structure)
    if not isinstance(method, str) or method not in _METHOD_DEFAULTS:
        raise ValueError(f"method must be one of {sorted(_METHOD_DEFAULTS)}, got {method!r}.")
    if options is not None:
        if method != "active_set":
            raise ValueError(
                "options (a SparseMAPOptions) sets the active set's solver; "
                f"method={method!r} takes max_iter and tol."
            )
        options = check_options(options)
        both = [k for k, v in (("max_iter", max_iter), ("tol", tol)) if v is not None]
        if both:
            raise ValueError(
                f"{' and '.join(both)} given both as keyword and in options; "
                "pass one of them."
            )
        return options
    default_iter, default_tol = _METHOD_DEFAULTS[method]
    max_iter = (default_iter if max_iter is None
                else check_integer(max_iter, "max_iter", minimum=1))
    tol = default_tol if tol is None else check_positive_scalar(tol, "tol")
    return SPARSEMAP_OPTIONS._replace(max_iter=max_iter, tol=tol)


def _check_parts(structure, parts):
    """Validate user-given flat scores (``encode`` output needs no check)."""
    if not isinstance(parts, Parts):
        raise ValueError(
            "parts must be a sksparse_struct.structures.Parts (as structure.encode "
            f"returns), got {type(parts).__name__}."
        )
    arrays = {}
    for name in ("eta_u", "eta_v"):
        eta = getattr(parts, name)
        if not isinstance(eta, np.ndarray) or eta.ndim != 1 or eta.dtype != np.float64:
            what = (
                f"an array of dtype {eta.dtype} and shape {eta.shape}"
                if isinstance(eta, np.ndarray) else f"a {type(eta).__name__}"
            )
            raise ValueError(f"parts.{name} must be a 1-D float64 array, got {what}.")
        bad = np.isnan(eta) | (eta == np.inf)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            what = "NaN" if np.isnan(eta[i]) else "+inf"
            raise ValueError(
                f"parts.{name} contains {what} at index {i}; scores must be finite, "
                "or -inf to forbid a part."
            )
        # The compiled solvers take the arrays as they are: give them the
        # contiguous layout they are compiled for.
        arrays[name] = np.ascontiguousarray(eta)
    if parts.eta_u.shape[0] == 0:
        raise ValueError("parts.eta_u is empty: a structure has at least one unary part.")
    n_u, n_v = parts.eta_u.shape[0], parts.eta_v.shape[0]
    # decode reshapes (or scatters) flat vectors of the lengths encode gives
    # for this context, and decode_backward is its adjoint: the round trip
    # must give vectors of the same lengths back.
    try:
        layout = structure.decode(np.zeros(n_u), np.zeros(n_v), parts)
        d_u, d_v = structure.decode_backward(layout, parts)
        consistent = np.shape(d_u) == (n_u,) and np.shape(d_v) == (n_v,)
    except (ValueError, TypeError, IndexError):
        consistent = False
    if not consistent:
        raise ValueError(
            f"parts.eta_u has {n_u} and parts.eta_v {n_v} entries, which are not the "
            f"lengths {structure!r} encodes for the context {parts.context!r}."
        )
    if any(arrays[name] is not getattr(parts, name) for name in arrays):
        parts = dataclasses.replace(parts, **arrays)
    return parts


def _solve(structure, parts, method, options, init, caller):
    """The solvers behind :func:`sparsemap` and :func:`sparsemap_parts`."""
    max_iter, tol, dependent_tol = options
    spec = _compiled_oracle(structure, parts, method, init)
    if spec is not None:
        if max_iter is None:
            # a tree uses n arcs, a sequence one label per position, a head
            # automaton at most n + 1 parts (its incoming arc and n modifiers)
            width = spec.n + 1 if spec.kind == ORACLE_HEAD_AUTOMATON else spec.n
            max_iter = _active_set_max_iter(width)
        support, n_iter, gap, converged = _solve_compiled(
            structure, parts, spec, max_iter, tol, dependent_tol
        )
    elif method == "active_set":
        start = _initial_vertices(structure, parts, init)
        if max_iter is None:
            max_iter = _active_set_max_iter(
                max(np.count_nonzero(vert[1]) for vert, _ in start)
            )
        support, n_iter, gap, converged = _solve_active_set(
            structure, parts, start, max_iter, tol, dependent_tol
        )
    else:
        start = _initial_vertices(structure, parts, init)
        support, n_iter, gap, converged = _solve_conditional_gradient(
            structure, parts, start, max_iter, tol, method
        )
    k = support.k
    p = support.p[:k].copy()
    rows = support.unary_rows()
    u = p @ rows
    if not converged:
        # Report the gap at the point returned (one more oracle call).
        _, _, gap = _linear_gap(structure, parts, support, u)
        warn(
            f"{caller} (method={method!r}) did not converge in max_iter={max_iter} "
            f"iterations: Wolfe gap {gap:.3g}; increase max_iter.",
            ConvergenceWarning,
        )
    objective = float(support.theta[:k] @ p - 0.5 * (u @ u))
    return SparseMAPResult(
        structure=structure,
        parts=parts,
        values=list(support.values),
        probabilities=p,
        vertices_u=rows,
        vertices_v=support.N[:k].copy(),
        n_iter=n_iter,
        gap=max(float(gap), 0.0),
        objective=objective,
        converged=converged,
        method=method,
    )


def _check_result(result):
    if not isinstance(result, SparseMAPResult):
        raise ValueError(f"result must be a SparseMAPResult, got {type(result).__name__}.")


def _to_potentials(result, g_theta):
    """Chain rule ``theta_S = M_S eta_u + N_S eta_v`` back to the potentials."""
    d_eta_u = g_theta @ result.vertices_u_sparse
    d_eta_v = g_theta @ result.vertices_v
    return result.structure.encode_backward(d_eta_u, d_eta_v, result.parts)


def sparsemap_backward(result, *d_marginals):
    """Vector-Jacobian product of SparseMAP's posteriors w.r.t. the potentials.

    On the support ``S`` of the solution, ``p_S = c + D theta_S`` with
    ``theta_S = M_S^T eta_u + N_S^T eta_v`` and ``D`` the probability block
    of the inverse bordered KKT matrix (Prop. 4.1; ``D = Z - Z 1 1^T Z / 1^T Z 1``
    with ``Z = (M_S^T M_S)^-1`` when that inverse exists), so that
    ``u = M_S p_S`` and ``v = N_S p_S`` have Jacobians ``M_S D A_S^T`` and
    ``N_S D A_S^T`` with ``A_S = [M_S; N_S]``. Only the support is used;
    the result is exact wherever the support is locally constant (almost
    everywhere) and a generalized Jacobian elsewhere. ``D`` is symmetric,
    so this is also the Jacobian-vector product with a direction in score
    space mapped through ``A_S``.

    Parameters
    ----------
    result : SparseMAPResult
        The forward solution (from the active-set solver for exact
        gradients; the conditional-gradient supports are approximate).
    *d_marginals : array-like
        Gradient of a loss with respect to ``result.marginals``, in the same
        layout (one array per marginals array of the structure).

    Returns
    -------
    gradients : tuple
        One gradient per potential argument of the structure, as
        ``structure.encode_backward`` returns them.

    Examples
    --------
    >>> from sksparse_struct.inference import sparsemap, sparsemap_backward
    >>> from sksparse_struct.structures import XOR
    >>> result = sparsemap(XOR(), [1.0, 0.8, -1.0])
    >>> sparsemap_backward(result, [1.0, 0.0, 0.0])[0].round(3).tolist()
    [0.5, -0.5, 0.0]
    """
    _check_result(result)
    if isinstance(result.marginals, (tuple, list)):
        if len(d_marginals) != len(result.marginals):
            raise ValueError(
                f"expected {len(result.marginals)} gradient arrays (one per marginals "
                f"array), got {len(d_marginals)}."
            )
        d_layout = tuple(d_marginals)
    else:
        if len(d_marginals) != 1:
            raise ValueError(
                f"expected one gradient array for the marginals, got {len(d_marginals)}."
            )
        d_layout = d_marginals[0]
    d_u, d_v = result.structure.decode_backward(d_layout, result.parts)
    d_u = np.asarray(d_u, dtype=np.float64)
    d_v = np.asarray(d_v, dtype=np.float64)
    if d_u.shape != result.u.shape or d_v.shape != result.v.shape:
        raise ValueError(
            f"the gradient w.r.t. the marginals gives {d_u.shape[0] if d_u.ndim else 0} "
            f"unary and {d_v.shape[0] if d_v.ndim else 0} higher-order parts, expected "
            f"{result.u.shape[0]} and {result.v.shape[0]}."
        )
    if not (np.isfinite(d_u).all() and np.isfinite(d_v).all()):
        raise ValueError("d_marginals must be finite.")
    g_p = result.vertices_u_sparse @ d_u + result.vertices_v @ d_v
    return _to_potentials(result, result._probability_jacobian() @ g_p)


def sparsemap_distribution_backward(result, d_probabilities):
    """Gradient through the SparseMAP distribution ``p(y)`` (Prop. 5.1).

    For ``y`` in the support, ``d p(y) / d theta(y') = z_yy' -
    zeta(y) zeta(y') / zeta`` (the block ``D`` of :func:`sparsemap_backward`);
    probabilities outside the support have zero gradient. The chain rule
    through ``theta(y') = eta_u . m_y' + eta_v . n_y'`` gives the gradients
    with respect to the potentials.

    Parameters
    ----------
    result : SparseMAPResult
        The forward solution.
    d_probabilities : array-like of shape (len(result.support),)
        Gradient of a loss with respect to the probabilities of the support,
        in the order of ``result.support``.

    Returns
    -------
    gradients : tuple
        One gradient per potential argument of the structure.

    Examples
    --------
    >>> from sksparse_struct.inference import sparsemap, sparsemap_distribution_backward
    >>> from sksparse_struct.structures import XOR
    >>> result = sparsemap(XOR(), [1.0, 0.8, -1.0])
    >>> sparsemap_distribution_backward(result, [1.0, 0.0])[0].round(3).tolist()
    [0.5, -0.5, 0.0]
    """
    _check_result(result)
    d_p = np.asarray(d_probabilities, dtype=np.float64)
    k = result.probabilities.shape[0]
    if d_p.shape != (k,):
        raise ValueError(
            f"d_probabilities must have shape ({k},) (one entry per support "
            f"structure), got {d_p.shape}."
        )
    if not np.isfinite(d_p).all():
        raise ValueError("d_probabilities must be finite.")
    return _to_potentials(result, result._probability_jacobian() @ d_p)
