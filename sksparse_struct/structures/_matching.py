"""Matching: maximum-weight bipartite matchings (linear assignment)."""

import numpy as np
from scipy.optimize import linear_sum_assignment

from ._base import Parts, UnaryStructure, check_part_scores

__all__ = ["Matching"]


class Matching(UnaryStructure):
    """Bipartite matchings between r rows and c columns.

    ``scores[i, j]`` scores matching row ``i`` with column ``j``; these
    (r · c) pairs are the unary parts, there are no higher-order parts. The
    structures are the matchings that match *every item of the smaller side*:
    perfect matchings when ``r == c`` (Niculae 2018, sec. 4.1), and when
    ``r != c`` the extra items of the larger side stay unmatched. This is the
    set searched by :func:`scipy.optimize.linear_sum_assignment`, which is the
    MAP oracle (maximum total score).

    A structure value is an ``int64`` array ``assignment`` of length r:
    ``assignment[i] = j`` if row ``i`` is matched with column ``j``, and
    ``-1`` if row ``i`` stays unmatched (only possible when ``r > c``).

    A ``-inf`` score forbids a pair. If no matching of the smaller side
    avoids every forbidden pair, :meth:`map` raises ``ValueError``.

    Ties between matchings of equal score are broken deterministically (the
    same scores always give the same matching): the oracle returns the
    optimum that scipy's shortest-augmenting-path solver reaches, no further
    rule (e.g. lexicographic) is promised.

    There are no tractable marginals: summing over matchings is computing a
    permanent, which is #P-hard (Valiant 1979; Niculae 2018, sec. 4.1).
    SparseMAP only needs the MAP oracle and works on this structure.

    Examples
    --------
    >>> from sksparse_struct.structures import Matching
    >>> scores = [[1.0, 5.0], [4.0, 1.0], [0.0, 3.0]]
    >>> Matching().map(scores).tolist()
    [1, 0, -1]
    >>> Matching().score([1, 0, -1], scores)
    9.0
    >>> Matching().map([[2.0, 0.0, float("-inf")], [3.0, 1.0, 2.0]]).tolist()
    [0, 2]
    """

    scores_ndim = 2

    def encode(self, scores):
        eta = check_part_scores(scores, 2, "Matching")
        r, c = eta.shape
        # A cheap, precise message for the common infeasible cases; other
        # infeasible patterns (Hall's condition) are reported by the oracle.
        allowed = np.isfinite(eta)
        if r <= c and not allowed.all(axis=1).all():
            empty = np.flatnonzero(~allowed.any(axis=1))
            if empty.size:
                raise ValueError(
                    f"Matching: every pair of row {int(empty[0])} is forbidden "
                    f"(-inf), but with {r} rows and {c} columns every row must "
                    "be matched."
                )
        if c <= r and not allowed.all(axis=0).all():
            empty = np.flatnonzero(~allowed.any(axis=0))
            if empty.size:
                raise ValueError(
                    f"Matching: every pair of column {int(empty[0])} is forbidden "
                    f"(-inf), but with {r} rows and {c} columns every column "
                    "must be matched."
                )
        return Parts(eta.ravel(), np.zeros(0), eta.shape)

    def _map_unary(self, scores):
        r, c = scores.shape
        try:
            rows, cols = linear_sum_assignment(scores, maximize=True)
        except ValueError as exc:
            raise ValueError(
                f"Matching: no matching of all {min(r, c)} "
                f"{'rows' if r <= c else 'columns'} avoids the forbidden (-inf) "
                f"pairs of the {r} x {c} scores ({exc})."
            ) from exc
        assignment = np.full(r, -1, dtype=np.int64)
        assignment[rows] = cols
        return assignment

    def _indicators_unary(self, value, shape):
        r, c = shape
        assignment = np.asarray(value)
        if (
            assignment.shape != (r,)
            or assignment.dtype == bool
            or not np.issubdtype(assignment.dtype, np.integer)
        ):
            raise ValueError(
                f"a Matching value is an int array of length {r} (the column of "
                f"each row, or -1), got {value!r}."
            )
        assignment = assignment.astype(np.int64)
        if assignment.size and (assignment.min() < -1 or assignment.max() >= c):
            raise ValueError(
                f"Matching value {value!r} has entries outside [-1, {c})."
            )
        matched = assignment[assignment >= 0]
        if np.unique(matched).size != matched.size:
            raise ValueError(f"Matching value {value!r} uses a column twice.")
        if matched.size != min(r, c):
            raise ValueError(
                f"Matching value {value!r} matches {matched.size} pairs; every "
                f"item of the smaller side ({min(r, c)} pairs) must be matched."
            )
        m = np.zeros(shape)
        rows = np.flatnonzero(assignment >= 0)
        m[rows, assignment[rows]] = 1.0
        return m

    def marginals(self, *potentials):
        """Not available: matching marginals are #P-hard.

        Raises
        ------
        TypeError
            Always. Use :meth:`map` or SparseMAP
            (:func:`sksparse_struct.inference.sparsemap`) instead.
        """
        raise TypeError(
            "Matching has no tractable marginal inference: the partition "
            "function over bipartite matchings is a matrix permanent, which is "
            "#P-hard (Niculae 2018, sec. 4.1). Use MAP (Matching().map) or "
            "SparseMAP (sksparse_struct.inference.sparsemap), which only needs "
            "the MAP oracle."
        )

    def marginals_backward(self, *args):
        """Not available: matching marginals are #P-hard (see :meth:`marginals`)."""
        return self.marginals()
