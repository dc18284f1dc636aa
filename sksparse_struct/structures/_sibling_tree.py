"""Projective dependency trees scored by arcs and consecutive siblings (second-order Eisner)."""

import numpy as np

from ..utils._validation import as_part_vector, as_real_array
from ._base import ORACLE_SIBLING_TREE, CompiledOracle, Parts, Structure
from ._projective import no_projective_tree_error
from ._sibling_tree_fast import (
    n_sibling_parts,
    sibling_offsets,
    sibling_slots,
    sibling_tree_parts,
    tree_indicators,
)
from ._tree import _check_arc_scores, arc_index, check_heads

__all__ = ["ProjectiveSiblingTree", "sibling_part_slots"]


# n -> (h, m, s column) of every flat sibling part, read-only.
_PART_INDEX = {}


def _part_index(n):
    """Heads, middle tokens and ``s`` columns of the flat sibling parts (module layout)."""
    index = _PART_INDEX.get(n)
    if index is None:
        hs, ms, ss = [], [], []
        for h in range(n + 1):
            sides = [(n - h, 1)] + ([(h - 1, -1)] if h >= 1 else [])
            for L, sign in sides:
                j, k = np.triu_indices(L + 2, 1)
                hs.append(np.full(j.shape[0], h))
                ms.append(h + sign * j)
                if sign > 0:
                    ss.append(h + k)  # k = L + 1 is n + 1, the right STOP
                else:
                    ss.append(np.where(k == L + 1, n + 2, h - k))  # n + 2: column -1
        index = tuple(np.concatenate(a).astype(np.int64) for a in (hs, ms, ss))
        for a in index:
            a.flags.writeable = False
        if n <= 256:
            _PART_INDEX[n] = index
    return index


_ZEROS = {}


def _zeros(n):
    """Read-only zero sibling scores of ``n`` words (shared: a factor graph keeps them)."""
    zeros = _ZEROS.get(n)
    if zeros is None:
        zeros = np.zeros(n_sibling_parts(n))
        zeros.flags.writeable = False
        if n <= 256:
            _ZEROS[n] = zeros
    return zeros


def sibling_part_slots(rows, n):
    """Positions of the sibling parts ``rows`` (``(h, m, s)``) in the flat ``eta_v``.

    Parameters
    ----------
    rows : ndarray of shape (k, 3), int
        Parts ``(h, m, s)`` as in :class:`ProjectiveSiblingTree` (``m == h``
        START, ``s`` = ``n + 1`` or ``-1`` STOP).
    n : int
        Words.

    Returns
    -------
    slots : ndarray of shape (k,), int64
    """
    rows = np.ascontiguousarray(np.asarray(rows, dtype=np.int64).reshape(-1, 3))
    slots = np.empty(rows.shape[0], dtype=np.int64)
    bad = sibling_slots(rows, int(n), slots)
    if bad >= 0:
        part = tuple(int(x) for x in rows[bad])
        raise ValueError(f"{part} is no sibling part (h, m, s) of a sentence of {n} words.")
    return slots


class ProjectiveSiblingTree(Structure):
    """Projective dependency trees scored by arcs and consecutive siblings.

    The structures of a projective
    :class:`~sksparse_struct.structures.DependencyTree`, each scored by its
    arcs and by its *consecutive-sibling parts* ``(h, m, s)``: ``m`` and
    ``s`` consecutive dependents of ``h`` on one side, ``s`` the further
    from ``h``. ``m == h`` stands for START (``s`` is ``h``'s closest
    dependent on that side); ``s = n + 1`` is STOP on the right side and
    ``s = -1`` STOP on the left (``m`` is the outermost dependent, or ``h``
    for an empty side). Every side of every word, and the root's right side,
    has exactly one more active part than dependents. MAP is McDonald &
    Pereira's (2006) second-order Eisner algorithm, exact in ``O(n^3)``.

    As a factor of a :class:`~sksparse_struct.inference.FactorGraph` it
    replaces the tree factor and the sibling parts of the head automata of
    a second-order parser: AD3 is then exact for a sibling-only model and
    tighter with grandparents.

    Parameters
    ----------
    single_root : bool, default=True
        Whether exactly one word is attached to the root.

    Notes
    -----
    Potentials: ``arc_scores`` of shape ``(n + 1, n + 1)`` as for
    :class:`~sksparse_struct.structures.DependencyTree` (``[h, m]``) and
    ``sibling_scores`` of shape ``(n + 1, n + 1, n + 3)``, the part ``(h,
    m, s)`` at ``[h, m, s]`` (so the left STOP ``s = -1`` is the last
    column). Entries that name no part are ignored. ``-inf`` forbids a part.

    Part encoding: ``eta_u`` is the ``n * n`` arcs of ``DependencyTree``
    (modifier-major); ``eta_v`` every sibling part, by head ``0..n``, the
    right side then the left (the root has none), each side as the sibling
    parts of a :class:`~sksparse_struct.structures.HeadAutomaton` whose
    modifiers are all the words of that side, outward
    (:func:`sibling_part_slots` gives the position of a part): about
    ``n^3 / 3`` parts. The structure has a compiled oracle, so SparseMAP's
    compiled active set and AD3 run it without Python calls.

    Ties in MAP go to the first maximum met by the chart (for each item,
    the first dependent before later ones, then the lowest split point).

    Examples
    --------
    >>> import numpy as np
    >>> from sksparse_struct.structures import ProjectiveSiblingTree
    >>> n = 3
    >>> arc = np.zeros((n + 1, n + 1))
    >>> arc[0, 2] = 1.0                  # the root takes word 2,
    >>> arc[2, 1] = arc[2, 3] = 0.5      # which takes words 1 and 3
    >>> sib = np.zeros((n + 1, n + 1, n + 3))
    >>> ProjectiveSiblingTree().map(arc, sib)
    array([-1,  2,  0,  2])
    >>> sib[2, 1, -1] = -2.0             # unless 1 ends 2's left side
    >>> ProjectiveSiblingTree().map(arc, sib)
    array([-1,  0,  1,  2])
    """

    def __init__(self, single_root=True):
        self.single_root = single_root

    def _single_root(self):
        if not isinstance(self.single_root, (bool, np.bool_)):
            raise ValueError(f"single_root must be True or False, got {self.single_root!r}.")
        return bool(self.single_root)

    def encode(self, arc_scores, sibling_scores=None):
        """Validate the potentials and flatten them into :class:`Parts`.

        Parameters
        ----------
        arc_scores : array-like of shape (n + 1, n + 1)
            ``arc_scores[h, m]``; column 0 and the diagonal are ignored.
        sibling_scores : array-like of shape (n + 1, n + 1, n + 3), default=None
            ``sibling_scores[h, m, s]`` (class Notes); entries naming no
            part are ignored. None scores every sibling part 0 (the encoded
            zeros are shared and read-only).

        Returns
        -------
        parts : Parts
            ``eta_u`` of length ``n * n``, ``eta_v`` with one score per
            sibling part and the context ``n``.
        """
        arc = _check_arc_scores(arc_scores, "arc_scores")
        n = arc.shape[0] - 1
        eta_u = np.ascontiguousarray(arc[arc_index(n)])
        if sibling_scores is None:
            return Parts(eta_u, _zeros(n), n)
        sib = as_real_array(sibling_scores, "sibling_scores")
        if sib.shape != (n + 1, n + 1, n + 3):
            raise ValueError(
                f"sibling_scores has shape {sib.shape}, expected {(n + 1, n + 1, n + 3)} for "
                f"arc_scores of {n} words ([h, m, s], s = -1 the last column).")
        h, m, s = _part_index(n)
        eta_v = np.ascontiguousarray(sib[h, m, s], dtype=np.float64)
        bad = np.isnan(eta_v) | (eta_v == np.inf)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            part = (int(h[i]), int(m[i]), int(s[i]) if s[i] <= n + 1 else -1)
            raise ValueError(
                f"sibling_scores of the part {part} is {eta_v[i]}; scores must be finite, "
                "or -inf to forbid a part.")
        return Parts(eta_u, eta_v, n)

    def compiled_oracle(self, parts):
        """The second-order Eisner algorithm, compiled (see :meth:`Structure.compiled_oracle`)."""
        if type(self).oracle is not ProjectiveSiblingTree.oracle:
            return None
        return CompiledOracle(ORACLE_SIBLING_TREE, int(parts.context), 0, self._single_root())

    def oracle(self, parts, eta_u, eta_v):
        """Second-order Eisner on flat scores (one compiled call)."""
        n = parts.context
        owner = f"{type(self).__name__}.oracle"
        eta_u = as_part_vector(eta_u, "eta_u", owner, n * n)
        eta_v = as_part_vector(eta_v, "eta_v", owner, n_sibling_parts(n))
        single_root = self._single_root()
        heads = np.empty(n + 1, dtype=np.int64)
        m = np.empty(n * n)
        nv = np.empty(eta_v.shape[0])
        if not sibling_tree_parts(eta_u, eta_v, n, single_root, heads, m, nv):
            raise no_projective_tree_error(single_root)
        return heads, m, nv

    def map(self, arc_scores, sibling_scores=None):
        """The highest-scoring projective tree, as heads (``heads[0] = -1``)."""
        return super().map(arc_scores, sibling_scores)

    def score(self, value, arc_scores, sibling_scores=None):
        """Score of the tree ``value`` (``-inf`` if it uses a forbidden part)."""
        return super().score(value, arc_scores, sibling_scores)

    def indicators(self, value, parts):
        """``(m, n)``: the tree's arcs and its active sibling parts."""
        n = parts.context
        heads = check_heads(value, n, self._single_root())
        off = np.empty((n + 1, 2), dtype=np.int64)
        sibling_offsets(n, off)
        m = np.empty(n * n)
        nv = np.empty(n_sibling_parts(n))
        tree_indicators(heads, n, off, m, nv)
        return m, nv

    def decode(self, u, v, parts):
        """``(arc (n + 1, n + 1), sibling (n + 1, n + 1, n + 3))``; zeros off the parts."""
        n = parts.context
        owner = f"{type(self).__name__}.decode"
        arc = np.zeros((n + 1, n + 1))
        arc[arc_index(n)] = as_part_vector(u, "u", owner, n * n)
        sib = np.zeros((n + 1, n + 1, n + 3))
        sib[_part_index(n)] = as_part_vector(v, "v", owner, n_sibling_parts(n))
        return arc, sib

    def decode_backward(self, d_marginals, parts):
        """Adjoint of :meth:`decode`: ``(d_u, d_v)`` from ``(d_arc, d_sibling)``."""
        n = parts.context
        if not isinstance(d_marginals, (tuple, list)) or len(d_marginals) != 2:
            raise ValueError("the gradient w.r.t. ProjectiveSiblingTree marginals is a pair "
                             "(d_arc, d_sibling).")
        out = []
        for name, d, shape in (("d_arc", d_marginals[0], (n + 1, n + 1)),
                               ("d_sibling", d_marginals[1], (n + 1, n + 1, n + 3))):
            d = np.asarray(as_real_array(d, name), dtype=np.float64)
            if d.shape != shape:
                raise ValueError(f"{name} has shape {d.shape}, expected {shape}.")
            out.append(d)
        d_u = np.ascontiguousarray(out[0][arc_index(n)])
        d_v = np.ascontiguousarray(out[1][_part_index(n)])
        if not (np.isfinite(d_u).all() and np.isfinite(d_v).all()):
            raise ValueError("the gradient w.r.t. the marginals must be finite.")
        return d_u, d_v

    def encode_backward(self, d_eta_u, d_eta_v, parts):
        """Gradients w.r.t. ``(arc_scores, sibling_scores)`` (zero off the parts)."""
        n = parts.context
        owner = f"{type(self).__name__}.encode_backward"
        d_u = as_part_vector(d_eta_u, "d_eta_u", owner, n * n)
        d_v = as_part_vector(d_eta_v, "d_eta_v", owner, n_sibling_parts(n))
        return self.decode(d_u, d_v, parts)
