"""Dependency trees: every word gets one head, the arcs form a tree from the root.

Scores are an ``(n + 1, n + 1)`` array: ``scores[h, m]`` scores the arc from
head ``h`` to modifier ``m``, index 0 is the root; column 0 and the diagonal
are ignored and ``-inf`` forbids an arc. A tree is returned as ``heads``, an
int64 array of length ``n + 1`` with ``heads[0] = -1`` and ``heads[m]`` the
head of word ``m``.

The unary parts are the ``n * n`` possible arcs, in modifier-major order:
part ``(m - 1) * n + j`` is the arc ``h -> m`` with ``h`` the ``j``-th of the
heads ``0, ..., n`` other than ``m`` (so ``j = h`` if ``h < m`` else ``h - 1``).
There are no higher-order parts.
"""

import numpy as np

from ..utils._validation import as_part_vector, as_real_array

from ._base import ORACLE_PROJECTIVE_TREE, ORACLE_TREE, CompiledOracle, Parts, Structure
from ._nonprojective_fast import (
    chu_liu_edmonds,
    chu_liu_edmonds_parts,
    matrix_tree_marginals,
    matrix_tree_marginals_backward,
    matrix_tree_marginals_rooted,
    matrix_tree_marginals_rooted_log,
)

__all__ = ["DependencyTree", "arc_index", "arc_part", "heads_to_parts", "no_tree_error",
           "tree_options"]


# n -> (heads, mods) of the arcs in the part order; read-only, shared by all
# calls (SparseMAP's loops would otherwise rebuild them at every iteration).
_ARC_INDEX_CACHE = {}


def arc_index(n):
    """Heads and modifiers of the ``n * n`` arcs in the part order."""
    index = _ARC_INDEX_CACHE.get(n)
    if index is None:
        mods = np.repeat(np.arange(1, n + 1), n)
        heads = np.tile(np.arange(n + 1), (n, 1))
        heads = heads[heads != np.arange(1, n + 1)[:, None]]
        heads.flags.writeable = False
        mods.flags.writeable = False
        index = (heads, mods)
        _ARC_INDEX_CACHE[n] = index
    return index


def _check_arc_scores(scores, name="scores"):
    """Validate an ``(n + 1, n + 1)`` arc score array; return it as float64.

    Only the used entries (off the diagonal, outside column 0) are checked
    for NaN and ``+inf``; the others are ignored, as documented.
    """
    arr = as_real_array(scores, name)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(
            f"{name} must be a square (n + 1, n + 1) array of arc scores "
            f"(row: head, column: modifier, index 0: the root), got shape {arr.shape}."
        )
    if arr.shape[0] < 2:
        raise ValueError(
            f"{name} has shape {arr.shape}: a dependency tree needs at least one "
            "word besides the root, so the shape must be at least (2, 2)."
        )
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if np.isfinite(arr).all():  # the common case, checked in one pass
        return arr
    used = arr[:, 1:].copy()
    n = arr.shape[0] - 1
    # The diagonal entries scores[m, m] sit at used[m, m - 1].
    used[np.arange(1, n + 1), np.arange(n)] = 0.0
    if np.isnan(used).any():
        h, m = np.argwhere(np.isnan(used))[0]
        raise ValueError(f"{name} contains NaN at the arc {h} -> {m + 1} (row {h}, column {m + 1}).")
    if (used == np.inf).any():
        h, m = np.argwhere(used == np.inf)[0]
        raise ValueError(
            f"{name} contains +inf at the arc {h} -> {m + 1}; scores must be "
            "finite, or -inf to forbid an arc."
        )
    # The used entries are finite or -inf now; other non-finite values sit on
    # the ignored entries (column 0, the diagonal).
    ignored = ~np.isfinite(arr)
    ignored[:, 1:] &= np.eye(n + 1, n, k=-1, dtype=bool)
    if ignored.any():
        # NaN or +inf only sit on ignored entries here; clear them (on a copy)
        # so that no later computation can trip over them.
        arr = arr.copy()
        arr[ignored] = 0.0
    return arr


def check_heads(heads, n_words, single_root, name="heads"):
    """Validate a tree given as heads; return it as an int64 array.

    ``heads`` must have length ``n_words + 1``, ``heads[0] == -1``, every word
    a head in ``0..n_words`` other than itself, no cycle, and exactly one word
    attached to the root when ``single_root``. Errors name the word.
    """
    arr = np.asarray(heads)
    if arr.ndim != 1 or arr.shape[0] != n_words + 1:
        raise ValueError(
            f"{name} must be a vector of length n + 1 = {n_words + 1} "
            f"(heads[0] = -1 for the root), got shape {arr.shape}."
        )
    if not (np.issubdtype(arr.dtype, np.integer) or
            (np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr))
             and np.all(arr == np.round(arr)))):
        raise ValueError(f"{name} must hold integer head indices, got dtype {arr.dtype}.")
    arr = arr.astype(np.int64)
    if arr[0] != -1:
        raise ValueError(f"{name}[0] must be -1 (the root has no head), got {arr[0]}.")
    for m in range(1, n_words + 1):
        h = arr[m]
        if h < 0 or h > n_words:
            raise ValueError(f"word {m} has head {h}, outside 0..{n_words}.")
        if h == m:
            raise ValueError(f"word {m} is its own head.")
    # Follow heads upwards; a word that never reaches the root is on a cycle.
    state = np.zeros(n_words + 1, dtype=np.int8)  # 0 new, 1 on current path, 2 reaches root
    state[0] = 2
    for start in range(1, n_words + 1):
        v = start
        path = []
        while state[v] == 0:
            state[v] = 1
            path.append(v)
            v = arr[v]
        if state[v] == 1:
            raise ValueError(f"the heads form a cycle through word {v}: not a tree.")
        for u in path:
            state[u] = 2
    if single_root:
        roots = np.flatnonzero(arr[1:] == 0) + 1
        if roots.shape[0] != 1:
            raise ValueError(
                f"exactly one word must be attached to the root (single_root=True); "
                f"words {roots.tolist()} are."
            )
    return arr


def no_tree_error(single_root):
    """The error for scores that leave no (single-rooted) non-projective tree."""
    rooted = " with a single word attached to the root" if single_root else ""
    return ValueError(
        f"no dependency tree{rooted} has a finite score: the arcs that are not "
        "-inf cannot connect every word to the root" + (" through one word." if single_root else ".")
    )


def tree_options(tree):
    """``(projective, single_root)`` of a :class:`DependencyTree`, validated.

    As with scikit-learn parameters, the options are validated where they
    are used rather than in ``__init__``: every caller that branches on them
    (the structure's methods, SparseMAP's compiled paths) goes through here.
    """
    if not isinstance(tree.projective, (bool, np.bool_)):
        raise ValueError(f"projective must be True or False, got {tree.projective!r}.")
    if not isinstance(tree.single_root, (bool, np.bool_)):
        raise ValueError(f"single_root must be True or False, got {tree.single_root!r}.")
    return bool(tree.projective), bool(tree.single_root)


class DependencyTree(Structure):
    """Dependency trees over ``n`` words and a root, scored arc by arc.

    A tree gives every word ``m = 1..n`` one head ``h`` (a word or the root
    0) so that every word is reached from the root. The score of a tree is
    the sum of ``scores[h, m]`` over its arcs.

    Non-projective trees (the default) use the Chu-Liu-Edmonds algorithm for
    MAP, in ``O(n^2)`` with Tarjan's (1977) bookkeeping for dense graphs and
    the single-root constraint enforced exactly (Zmigrod, Vieira & Cotterell
    2020; Stanojevic & Cohen 2021), and the matrix-tree theorem for the
    marginals and ``log Z`` (Koo, Globerson, Carreras & Collins 2007), with
    the root-row variant for single-rooted trees. Projective trees (no
    crossing arcs) use Eisner's algorithm and inside-outside.

    Parameters
    ----------
    projective : bool, default=False
        Whether the trees must be projective.
    single_root : bool, default=True
        Whether exactly one word is attached to the root (as in Universal
        Dependencies).

    Notes
    -----
    Ties in MAP are broken deterministically: the same scores always give the
    same tree, one of the maxima. (Greedy choices prefer the lowest head
    index, so, e.g., all-equal scores attach every word to the root when
    ``single_root=False``.)

    The unary parts are the ``n * n`` arcs in modifier-major order (part
    ``(m - 1) * n + j`` is the arc into word ``m`` from the ``j``-th head in
    ``0..n`` other than ``m``); there are no higher-order parts.

    The marginals are computed in float64 from the Laplacian of the
    exponentiated scores, each column shifted by its maximum (so nothing
    overflows), in ``O(n^3)``: accurate to about ``1e-12`` for moderate
    scores. When the arcs each word likes best form cycles far ahead of every
    tree, the determinant formula cancels; this is detected (every column of
    the marginals must sum to one to within ``1e-9``) and the marginals are
    recomputed by a subtraction-free ``O(n^4)`` path (one
    Grassmann-Taksar-Heyman factorization per word), accurate to about
    ``1e-12`` again; in log space when some allowed arc is more than 700
    below the best arc into its word (e.g. scores of size ``1e4``), so
    nothing underflows. For single-rooted trees that path needs every word
    able to head all the others through allowed arcs; when it is not (some
    forbidden arcs) and the fast path cancelled, a ``ValueError`` is raised
    rather than inaccurate marginals returned. :meth:`marginals_backward`
    uses the ``O(n^3)`` closed form when it is accurate, else forward-mode
    differentiation of the subtraction-free ``O(n^4)`` path (exact in the
    same regimes as the marginals).

    Examples
    --------
    Two words; the single-rooted trees are ``root -> 1 -> 2`` (score 3) and
    ``root -> 2 -> 1`` (score 2):

    >>> import numpy as np
    >>> from sksparse_struct.structures import DependencyTree
    >>> scores = np.array([[0.0, 2.0, 0.5],
    ...                    [0.0, 0.0, 1.0],
    ...                    [0.0, 1.5, 0.0]])
    >>> DependencyTree().map(scores).tolist()
    [-1, 0, 1]
    >>> mu, log_z = DependencyTree().marginals(scores)
    >>> mu.round(3).tolist()
    [[0.0, 0.731, 0.269], [0.0, 0.0, 0.731], [0.0, 0.269, 0.0]]
    >>> round(log_z, 3)
    3.313
    """

    has_marginals = True

    def __init__(self, projective=False, single_root=True):
        self.projective = projective
        self.single_root = single_root

    # -- helpers -------------------------------------------------------------

    def _map_matrix(self, scores):
        projective, single_root = tree_options(self)
        if projective:
            from ._projective import eisner_map

            return np.asarray(eisner_map(scores, single_root), dtype=np.int64)
        heads = np.empty(scores.shape[0], dtype=np.int64)
        if not chu_liu_edmonds(scores, single_root, heads):
            raise no_tree_error(single_root)
        return heads

    # -- public API ----------------------------------------------------------

    def map(self, scores):
        """The highest-scoring tree.

        Parameters
        ----------
        scores : array-like of shape (n + 1, n + 1)
            Arc scores, ``scores[h, m]`` for the arc ``h -> m`` (0 = root);
            column 0 and the diagonal are ignored; ``-inf`` forbids an arc.

        Returns
        -------
        heads : ndarray of shape (n + 1,), int64
            ``heads[m]`` is the head of word ``m``; ``heads[0] = -1``.

        Raises
        ------
        ValueError
            On bad input, or when no tree (with a single root word, if
            required) avoids the forbidden arcs.
        """
        return self._map_matrix(_check_arc_scores(scores))

    def marginals(self, scores):
        """Arc marginals and log-partition function of the Gibbs distribution.

        ``p(tree) = exp(score(tree) - log_z)`` over all trees.

        Parameters
        ----------
        scores : array-like of shape (n + 1, n + 1)
            Arc scores, as in :meth:`map`.

        Returns
        -------
        arc_marginals : ndarray of shape (n + 1, n + 1)
            ``arc_marginals[h, m]`` is the probability of the arc ``h -> m``;
            zero on column 0 and the diagonal; each column ``m >= 1`` sums
            to 1.
        log_z : float
            Log of the sum of ``exp(score)`` over all trees.
        """
        projective, single_root = tree_options(self)
        scores = _check_arc_scores(scores)
        if projective:
            from ._projective import projective_marginals

            mu, log_z = projective_marginals(scores, single_root)
            return mu, float(log_z)
        self._map_matrix(scores)  # raises when no tree exists
        mu = np.empty_like(scores)
        log_z = matrix_tree_marginals(scores, single_root, mu)
        if not _marginals_accurate(mu, log_z, single_root):
            # Strong cycles made the determinant formula cancel: take the
            # slower subtraction-free path, in log space if weights would
            # underflow.
            if _no_underflow(scores):
                log_z = matrix_tree_marginals_rooted(scores, single_root, mu)
            else:
                log_z = matrix_tree_marginals_rooted_log(scores, single_root, mu)
        _check_marginals_accuracy(mu, log_z, single_root)
        return mu, float(log_z)

    def marginals_backward(self, scores, d_arc_marginals):
        """Vector-Jacobian product of :meth:`marginals` w.r.t. the scores.

        Parameters
        ----------
        scores : array-like of shape (n + 1, n + 1)
            Arc scores, as in :meth:`marginals`.
        d_arc_marginals : array-like of shape (n + 1, n + 1)
            Gradient of a loss with respect to the arc marginals (entries on
            column 0 and the diagonal are ignored).

        Returns
        -------
        (d_scores,) : tuple of one ndarray of shape (n + 1, n + 1)
            Gradient with respect to ``scores``; zero on column 0, the
            diagonal and forbidden arcs.

        Notes
        -----
        The marginals are the gradient of ``log Z``, so this product is the
        covariance of the arc indicators applied to ``d_arc_marginals``. For
        non-projective trees it comes from the ``O(n^3)`` inverse Laplacian
        when that is accurate (the derivatives of the column sums of the
        marginals, identically zero, must vanish to ``1e-11`` relative to
        ``d_arc_marginals``), else from forward-mode differentiation of the
        subtraction-free ``O(n^4)`` marginals, accurate in every regime the
        marginals handle (strong cycles, ``1e4`` scores, forbidden arcs).
        """
        projective, single_root = tree_options(self)
        scores = _check_arc_scores(scores)
        d = np.asarray(d_arc_marginals, dtype=np.float64)
        if d.shape != scores.shape:
            raise ValueError(
                f"d_arc_marginals has shape {d.shape}, which does not match the "
                f"scores' shape {scores.shape}."
            )
        d = np.ascontiguousarray(d)
        n = scores.shape[0] - 1
        used = d[arc_index(n)]
        if not np.all(np.isfinite(used)):
            raise ValueError("d_arc_marginals must be finite on the arcs (off the diagonal, columns 1..n).")
        d = np.zeros_like(scores)
        d[arc_index(n)] = used
        if projective:
            from ._projective import projective_marginals_backward

            return (np.asarray(projective_marginals_backward(scores, single_root, d)),)
        self._map_matrix(scores)  # raises when no tree exists
        mu = np.empty_like(scores)
        out = np.empty_like(scores)
        log_z = matrix_tree_marginals_backward(scores, single_root, d, mu, out)
        from ._nonprojective_backward_fast import (
            backward_sums_vanish,
            matrix_tree_marginals_rooted_jvp,
            matrix_tree_marginals_rooted_log_jvp,
        )

        closed_ok = _marginals_accurate(mu, log_z, single_root)
        if not (closed_ok and backward_sums_vanish(out, d, single_root, 1e-11)):
            # The inverse Laplacian cancels: differentiate the subtraction-free
            # O(n^4) marginals in forward mode instead (stable, see the module),
            # in log space if weights would underflow.
            mu2 = np.empty_like(scores)
            out2 = np.empty_like(scores)
            if _no_underflow(scores):
                log_z2 = matrix_tree_marginals_rooted_jvp(scores, single_root, d, mu2, out2)
            else:
                log_z2 = matrix_tree_marginals_rooted_log_jvp(scores, single_root, d, mu2, out2)
            # The fallback gives up (NaN) for single-rooted trees when some
            # word cannot head all others (forbidden arcs); then keep the
            # closed form if its marginals passed the check :meth:`marginals`
            # applies (it then returns those same marginals).
            if not closed_ok or _marginals_accurate(mu2, log_z2, single_root):
                mu, out, log_z = mu2, out2, log_z2
        _check_marginals_accuracy(mu, log_z, single_root)
        return (out,)

    # -- the Structure contract ----------------------------------------------

    def encode(self, scores):
        scores = _check_arc_scores(scores)
        n = scores.shape[0] - 1
        return Parts(np.ascontiguousarray(scores[arc_index(n)]), np.zeros(0), n)

    def compiled_oracle(self, parts):
        """Chu-Liu-Edmonds or Eisner, compiled (see :meth:`Structure.compiled_oracle`)."""
        if type(self).oracle is not DependencyTree.oracle:
            return None
        projective, single_root = tree_options(self)
        kind = ORACLE_PROJECTIVE_TREE if projective else ORACLE_TREE
        return CompiledOracle(kind, int(parts.context), 0, single_root)

    def oracle(self, parts, eta_u, eta_v):
        n = parts.context
        eta_u = as_part_vector(eta_u, "eta_u", f"{type(self).__name__}.oracle", n * n)
        projective, single_root = tree_options(self)
        if projective:
            scores = np.full((n + 1, n + 1), -np.inf)
            scores[arc_index(n)] = eta_u
            heads = self._map_matrix(scores)
            return heads, heads_to_parts(heads), np.zeros(0)
        # One compiled call (scatter, Chu-Liu-Edmonds, indicators): this is
        # the inner step of SparseMAP, called once per iteration.
        heads = np.empty(n + 1, dtype=np.int64)
        m = np.empty(n * n)
        if not chu_liu_edmonds_parts(
            eta_u, n, single_root,
            np.empty((n + 1, n + 1)), heads, m,
        ):
            raise no_tree_error(single_root)
        return heads, m, np.zeros(0)

    def indicators(self, value, parts):
        heads = check_heads(value, parts.context, tree_options(self)[1])
        return heads_to_parts(heads), np.zeros(0)

    def decode(self, u, v, parts):
        n = parts.context
        out = np.zeros((n + 1, n + 1))
        out[arc_index(n)] = as_part_vector(u, "u", f"{type(self).__name__}.decode", n * n)
        return out

    def decode_backward(self, d_marginals, parts):
        n = parts.context
        owner = f"{type(self).__name__}.decode_backward"
        d = np.asarray(as_real_array(d_marginals, f"{owner}: d_marginals"), dtype=np.float64)
        if d.shape != (n + 1, n + 1):
            raise ValueError(
                f"the gradient w.r.t. the arc marginals has shape {d.shape}, "
                f"expected {(n + 1, n + 1)}."
            )
        return np.ascontiguousarray(d[arc_index(n)]), np.zeros(0)

    def encode_backward(self, d_eta_u, d_eta_v, parts):
        owner = f"{type(self).__name__}.encode_backward"
        return (self.decode(as_part_vector(d_eta_u, "d_eta_u", owner, parts.context ** 2),
                            None, parts),)


def arc_part(h, m, n):
    """Position of the arc ``h -> m`` among the ``n * n`` unary parts (arrays too)."""
    return (m - 1) * n + np.where(h < m, h, h - 1)


def heads_to_parts(heads):
    """The 0/1 unary parts of the tree ``heads`` (length ``n + 1``, ``heads[0]`` ignored)."""
    heads = np.asarray(heads)
    n = heads.shape[0] - 1
    out = np.zeros(n * n)
    out[arc_part(heads[1:], np.arange(1, n + 1), n)] = 1.0
    return out


def _no_underflow(scores):
    """Whether every allowed arc keeps a normal float weight after the shift."""
    n = scores.shape[0] - 1
    used = scores[arc_index(n)].reshape(n, n)  # row: modifier
    finite = np.isfinite(used)
    low = np.where(finite, used, np.inf).min(axis=1)
    high = np.where(finite, used, -np.inf).max(axis=1)
    return bool(np.all(high - low <= 700.0))


def _marginals_accurate(mu, log_z, single_root):
    if not np.isfinite(log_z) or not np.all(np.isfinite(mu)):
        return False
    deviation = np.abs(mu[:, 1:].sum(axis=0) - 1.0).max()
    if single_root:
        deviation = max(deviation, abs(mu[0].sum() - 1.0))
    # Rounding errors of the determinant's cancellations show up in these
    # sums with about their own size (measured on brute-forced instances), so
    # the threshold bounds the error of what is returned.
    return bool(deviation <= 1e-9)


def _check_marginals_accuracy(mu, log_z, single_root):
    """Raise when the matrix-tree computation lost its accuracy.

    Every word has exactly one head, so each column of the marginals sums to
    one; a numerically singular Laplacian breaks this (or the determinant).
    """
    if not _marginals_accurate(mu, log_z, single_root):
        raise ValueError(
            "the matrix-tree theorem is numerically unreliable for these scores: "
            "the trees made of each word's best arc contain cycles that win by "
            "margins too large for float64 (the Laplacian is nearly singular). "
            "Scale the scores down, or use MAP or SparseMAP instead."
        )
