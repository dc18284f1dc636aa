"""Budget: at most (or exactly) B of K binary variables are on."""

import numpy as np

from ..utils._validation import check_integer, check_scores
from ._base import Parts, UnaryStructure, check_part_scores
from ._budget_fast import budget_marginals, budget_marginals_jvp

__all__ = ["Budget"]


class Budget(UnaryStructure):
    """At most (or exactly) ``budget`` of K binary variables are on.

    The unary parts are the K "on" indicators; there are no higher-order
    parts. The score of a structure is the sum of the scores of the items it
    turns on (the empty set scores 0).

    A structure value is the sorted ``int64`` array of the indices of the
    items that are on (possibly empty).

    Parameters
    ----------
    budget : int
        Maximum (or, with ``exact=True``, required) number of items on;
        ``>= 0``. Without ``exact``, a budget above K simply allows every
        subset; with ``exact``, it must not exceed K (checked at use).
    exact : bool, default=False
        Whether exactly ``budget`` items must be on.

    Notes
    -----
    MAP: without ``exact``, the (at most ``budget``) items of largest
    strictly positive score; with ``exact``, the ``budget`` items of largest
    score. Ties are broken towards lower indices (items of score exactly 0 are
    left off), i.e. among the optimal subsets with fewest items, the one whose
    sorted indices are lexicographically smallest.

    Marginals (the probability of each item being on under
    ``p(y) ∝ exp(score(y))``) and ``log Z`` come from a log-space dynamic
    program over item counts in O(K · budget); the backward pass carries the
    directional derivatives of the same recursions (same cost).

    A ``-inf`` score forbids an item. With ``exact=True``, fewer than
    ``budget`` allowed items is an error; without it the empty set is always
    feasible.

    Examples
    --------
    >>> from sksparse_struct.structures import Budget
    >>> Budget(2).map([0.5, -1.0, 2.0, 1.0]).tolist()
    [2, 3]
    >>> Budget(2).map([-0.5, -1.0]).tolist()
    []
    >>> Budget(1, exact=True).map([-0.5, -1.0]).tolist()
    [0]
    >>> mu, log_z = Budget(1).marginals([0.0, 0.0])
    >>> mu.round(4).tolist(), round(log_z, 4)
    ([0.3333, 0.3333], 1.0986)
    """

    has_marginals = True
    scores_ndim = 1

    def __init__(self, budget, exact=False):
        self.budget = budget
        self.exact = exact

    def _check_budget(self, k):
        """The effective budget for K items (validates the parameters)."""
        budget = self.budget
        check_integer(budget, "Budget's budget", minimum=0)
        if not isinstance(self.exact, (bool, np.bool_)):
            raise ValueError(f"Budget's exact must be a bool, got {self.exact!r}.")
        if self.exact and budget > k:
            raise ValueError(
                f"Budget(budget={budget}, exact=True) needs at least {budget} items, "
                f"but the scores have only K={k} items."
            )
        return int(min(budget, k))

    def encode(self, scores):
        eta = check_part_scores(scores, 1, "Budget")
        b = self._check_budget(eta.shape[0])
        if self.exact:
            allowed = int(np.isfinite(eta).sum())
            if allowed < b:
                raise ValueError(
                    f"Budget(budget={b}, exact=True): only {allowed} of the "
                    f"{eta.shape[0]} items are allowed (not -inf), so no "
                    f"subset of exactly {b} items is feasible."
                )
        return Parts(eta, np.zeros(0), eta.shape)

    def _map_unary(self, scores):
        b = self._check_budget(scores.shape[0])
        # A stable sort of -scores ranks equal scores by increasing index.
        order = np.argsort(-scores, kind="stable")[:b]
        if self.exact:
            if b and scores[order[-1]] == -np.inf:
                raise ValueError(
                    f"Budget(budget={b}, exact=True): fewer than {b} items "
                    "have a score above -inf; no feasible subset."
                )
        else:
            order = order[scores[order] > 0]
        return np.sort(order).astype(np.int64)

    def _indicators_unary(self, value, shape):
        k = shape[0]
        b = self._check_budget(k)
        idx = np.asarray(value)
        if idx.ndim != 1 or not (
            np.issubdtype(idx.dtype, np.integer) or idx.size == 0
        ) or idx.dtype == bool:
            raise ValueError(
                "a Budget structure value is a 1-D array of item indices, got "
                f"{value!r}."
            )
        idx = idx.astype(np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= k):
            raise ValueError(f"Budget value {value!r} has indices outside [0, {k}).")
        if np.unique(idx).size != idx.size:
            raise ValueError(f"Budget value {value!r} repeats an item.")
        if idx.size > b or (self.exact and idx.size != b):
            rule = "exactly" if self.exact else "at most"
            raise ValueError(
                f"Budget value {value!r} turns {idx.size} items on; "
                f"{rule} {b} are allowed."
            )
        m = np.zeros(shape)
        m[idx] = 1.0
        return m

    def marginals(self, scores):
        """Probability of each item being on, and the log-partition function.

        Parameters
        ----------
        scores : array-like of shape (K,)
            Item scores; ``-inf`` forbids an item.

        Returns
        -------
        marginals : ndarray of shape (K,)
            ``P(item i on)`` under ``p(y) ∝ exp(score(y))`` over the feasible
            subsets.
        log_z : float
            Log of the sum of ``exp(score(y))`` over the feasible subsets.
        """
        eta = self.encode(scores).eta_u
        b = self._check_budget(eta.shape[0])
        mu, log_z = budget_marginals(eta, b, bool(self.exact))
        return mu, float(log_z)

    def marginals_backward(self, scores, d_marginals):
        """Vector-Jacobian product of the marginals with respect to the scores.

        Parameters
        ----------
        scores : array-like of shape (K,)
            The scores given to :meth:`marginals`.
        d_marginals : array-like of shape (K,)
            Gradient of a loss with respect to the marginals. (The gradient
            of ``log_z`` is the marginals themselves; add
            ``d_log_z * marginals`` to the result if the loss uses it.)

        Returns
        -------
        d_scores : tuple of one ndarray of shape (K,)
            Gradient with respect to ``scores`` (0 at forbidden items).
        """
        eta = self.encode(scores).eta_u
        b = self._check_budget(eta.shape[0])
        d, _ = check_scores(d_marginals, "d_marginals", allow_neg_inf=False)
        if np.ndim(d_marginals) != 1 or d.shape[1] != eta.shape[0]:
            raise ValueError(
                f"d_marginals has shape {np.shape(d_marginals)}, which does not "
                f"match the scores' shape {eta.shape}."
            )
        # The Jacobian of the marginals is the Hessian of log Z (symmetric),
        # so its transpose-product equals the directional derivative.
        return (budget_marginals_jvp(eta, d[0], b, bool(self.exact)),)
