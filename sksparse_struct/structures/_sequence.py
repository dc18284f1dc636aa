"""Sequence: the linear-chain structure (label sequences with transitions)."""

import numbers

import numpy as np

from ..utils._validation import as_part_vector, as_real_array

from ._base import ORACLE_SEQUENCE, CompiledOracle, Parts, Structure
from ._sequence_fast import first_dead_position, forward_backward, marginals_vjp, viterbi

__all__ = ["Sequence", "kernel_inputs", "raise_infeasible"]


def _as_score_array(x, name, ndim):
    """``x`` as a C-contiguous float64 array of ``ndim`` dimensions, finite or -inf."""
    arr = as_real_array(x, name)
    if arr.ndim != ndim:
        raise ValueError(
            f"{name} must have {ndim} dimension(s), got shape {arr.shape}."
        )
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.add.reduce(arr, axis=None)
    # The sum is NaN or +inf whenever an entry is NaN or +inf: one cheap pass
    # in the common case, the search for the culprit only when needed.
    if total == total and total != np.inf:
        return arr
    bad = np.isnan(arr) | (arr == np.inf)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        what = "NaN" if np.isnan(arr[where]) else "+inf"
        raise ValueError(
            f"{name} contains {what} at index {where}; scores must be finite, or "
            "-inf to forbid a part."
        )
    raise ValueError(
        f"{name} has scores so large in magnitude that their sum overflows "
        "float64; rescale them."
    )


def _as_gradient_array(x, name, shape):
    """A finite float64 array of the given shape (a gradient w.r.t. an output)."""
    arr = _as_score_array(x, name, len(shape))
    if arr.shape != shape:
        raise ValueError(f"{name} has shape {arr.shape}, expected {shape}.")
    if np.isneginf(arr).any():
        where = tuple(int(i) for i in np.argwhere(np.isneginf(arr))[0])
        raise ValueError(f"{name} contains -inf at index {where}; gradients must be finite.")
    return arr


class Sequence(Structure):
    """Linear chain: one label out of K at each of n positions.

    The score of a label sequence ``y`` is::

        start[y[0]] + sum_i unary[i, y[i]] + sum_{i>=1} transitions[y[i-1], y[i]] + end[y[n-1]]

    The unary parts are the (position, label) pairs and the higher-order parts
    the K x K transitions, whose indicator counts how often ``a`` is followed
    by ``b`` (transition scores are shared by all positions). A structure
    value is the ``int64`` array of the n labels.

    ``-inf`` forbids a label at a position, a transition, a first label
    (``start``) or a last label (``end``); it is an error if every sequence
    is forbidden.

    Notes
    -----
    MAP (:meth:`map`) is Viterbi in O(n K^2). Ties are broken towards lower
    labels, position by position from the start: among the sequences of
    maximal score, the lexicographically smallest label array is returned.
    (Sequences whose scores agree mathematically but not after floating-point
    rounding are not ties; with integer-valued scores ties are exact.)

    Marginals (:meth:`marginals`) come from forward-backward in log space,
    O(n K^2): exact for scores of any magnitude (``±1e4`` included) and
    ``-inf``. Their backward pass (:meth:`marginals_backward`) is a
    Hessian-vector product of ``log Z`` computed by second-order
    forward-backward on normalized messages, also O(n K^2) and stable (see
    its docstring); it plays the role of the signed log-space backward pass of
    Kim et al. (2017, Fig. 2).

    Part encoding (for SparseMAP and the losses): ``eta_u`` is ``unary`` with
    ``start`` added to its first row and ``end`` to its last, flattened
    (``n * K``); ``eta_v`` is ``transitions.ravel()`` (``K * K``).

    Examples
    --------
    >>> import numpy as np
    >>> from sksparse_struct.structures import Sequence
    >>> unary = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    >>> transitions = np.array([[0.0, -2.0], [-2.0, 0.0]])
    >>> seq = Sequence()
    >>> seq.map(unary, transitions).tolist()
    [0, 0, 0]
    >>> mu, xi, log_z = seq.marginals(unary, transitions)
    >>> mu.round(3).tolist()
    [[0.69, 0.31], [0.616, 0.384], [0.69, 0.31]]
    >>> xi.round(3).tolist()  # expected transition counts, summing to n - 1
    [[1.173, 0.133], [0.133, 0.562]]
    >>> seq.map(unary, transitions, end=[float("-inf"), 0.0]).tolist()
    [1, 1, 1]
    """

    has_marginals = True

    # --- the Structure contract -------------------------------------------

    def encode(self, unary, transitions, start=None, end=None):
        """Validate the potentials and flatten them into :class:`Parts`.

        Parameters
        ----------
        unary : array-like of shape (n, K)
            ``unary[i, a]`` scores label ``a`` at position ``i``; ``n >= 1``.
        transitions : array-like of shape (K, K)
            ``transitions[a, b]`` scores label ``a`` followed by label ``b``.
        start, end : array-like of shape (K,), optional
            Scores of the first and the last label.

        Returns
        -------
        parts : Parts
            ``eta_u`` of length ``n * K``, ``eta_v`` of length ``K * K`` and
            the context ``(n, K, has_start, has_end)``.
        """
        unary = _as_score_array(unary, "unary", 2)
        n, K = unary.shape
        if n == 0:
            raise ValueError(
                "unary has shape (0, K): empty sequence (a sequence needs at "
                "least one position)."
            )
        if K == 0:
            raise ValueError(f"unary has shape {unary.shape}: at least one label is needed.")
        transitions = _as_score_array(transitions, "transitions", 2)
        if transitions.shape != (K, K):
            raise ValueError(
                f"transitions has shape {transitions.shape}, expected ({K}, {K}) "
                f"for unary scores with K={K} labels."
            )
        eta_u = unary.copy()
        for name, scores, row in (("start", start, 0), ("end", end, n - 1)):
            if scores is None:
                continue
            scores = _as_score_array(scores, name, 1)
            if scores.shape != (K,):
                raise ValueError(
                    f"{name} has shape {scores.shape}, expected ({K},) for "
                    f"unary scores with K={K} labels."
                )
            eta_u[row] += scores  # finite or -inf: never -inf + inf
        context = (n, K, start is not None, end is not None)
        return Parts(eta_u.ravel(), transitions.ravel().copy(), context)

    def compiled_oracle(self, parts):
        """Viterbi, compiled (see :meth:`Structure.compiled_oracle`)."""
        if type(self).oracle is not Sequence.oracle:
            return None
        n, K = parts.context[:2]
        return CompiledOracle(ORACLE_SEQUENCE, int(n), int(K))

    def oracle(self, parts, eta_u, eta_v):
        """Viterbi on flat scores; see :meth:`map` for the tie-breaking rule."""
        eta_u, eta_v = self._flat_pair(eta_u, eta_v, parts, "oracle", ("eta_u", "eta_v"))
        unary, trans = kernel_inputs(parts, eta_u, eta_v)
        labels, best = viterbi(unary, trans)
        if best == -np.inf:
            raise_infeasible(unary, trans)
        m, n = self._indicators_unchecked(labels, parts)
        return labels, m, n

    def indicators(self, value, parts):
        """``(m, n)``: one-hot labels (``n * K``) and transition counts (``K * K``)."""
        n_pos, K = parts.context[:2]
        labels = np.asarray(value)
        if labels.dtype.kind in "fUS" and not isinstance(value, np.ndarray):
            # NumPy reads [0, 2**63] as floats and [0, "a"] as strings:
            # judge the values as given.
            labels = np.asarray(value, dtype=object)
        if labels.ndim != 1 or labels.shape[0] != n_pos:
            raise ValueError(
                f"a Sequence value is an array of {n_pos} labels, got shape {labels.shape}."
            )
        if labels.dtype == object:
            for i, v in enumerate(labels):
                if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
                    raise ValueError(
                        f"Sequence labels must be integers, got {v!r} "
                        f"({type(v).__name__}) at position {i}."
                    )
        elif labels.dtype == bool or not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(
                f"Sequence labels must be integers, got dtype {labels.dtype}."
            )
        # Checked before the cast to int64, which would wrap a uint64 label
        # of 2**63 or more around and overflow on a larger Python int.
        out = (labels < 0) | (labels >= K)
        if out.any():
            i = int(np.flatnonzero(out)[0])
            raise ValueError(
                f"label {labels[i]} at position {i} is out of range for K={K} labels."
            )
        return self._indicators_unchecked(labels.astype(np.int64), parts)

    def decode(self, u, v, parts):
        """``(u.reshape(n, K), v.reshape(K, K))``: the layout of :meth:`marginals`."""
        n, K = parts.context[:2]
        u, v = self._flat_pair(u, v, parts, "decode", ("u", "v"))
        return u.reshape(n, K), v.reshape(K, K)

    def decode_backward(self, d_marginals, parts):
        """Adjoint of :meth:`decode`: ``(d_u, d_v)`` flat from ``(d_unary, d_transitions)``."""
        n, K = parts.context[:2]
        if not isinstance(d_marginals, (tuple, list)) or len(d_marginals) != 2:
            raise ValueError(
                "the gradient w.r.t. Sequence marginals is a pair (d_unary_marginals, "
                "d_transition_marginals)."
            )
        d_u = _as_gradient_array(d_marginals[0], "d_unary_marginals", (n, K))
        d_v = _as_gradient_array(d_marginals[1], "d_transition_marginals", (K, K))
        return d_u.ravel(), d_v.ravel()

    def encode_backward(self, d_eta_u, d_eta_v, parts):
        """Gradients w.r.t. ``(unary, transitions, start, end)`` from flat ones.

        ``start`` and ``end`` entered only the first and last rows of
        ``eta_u``, so their gradients are those rows (``None`` if the
        potential was not given).
        """
        n, K, has_start, has_end = parts.context
        d_eta_u, d_eta_v = self._flat_pair(
            d_eta_u, d_eta_v, parts, "encode_backward", ("d_eta_u", "d_eta_v")
        )
        d_unary = d_eta_u.reshape(n, K).copy()
        d_trans = d_eta_v.reshape(K, K).copy()
        d_start = d_unary[0].copy() if has_start else None
        d_end = d_unary[n - 1].copy() if has_end else None
        return d_unary, d_trans, d_start, d_end

    # --- public API ---------------------------------------------------------

    def map(self, unary, transitions, start=None, end=None):
        """The highest-scoring label sequence (Viterbi, O(n K^2)).

        Parameters
        ----------
        unary : array-like of shape (n, K)
            ``unary[i, a]`` scores label ``a`` at position ``i``; ``n >= 1``.
            ``-inf`` forbids the label there.
        transitions : array-like of shape (K, K)
            ``transitions[a, b]`` scores label ``a`` followed by ``b``;
            ``-inf`` forbids the transition.
        start, end : array-like of shape (K,), optional
            Scores of the first and last label; ``-inf`` forbids it.

        Returns
        -------
        labels : ndarray of shape (n,), int64
            Among the sequences of maximal score, the lexicographically
            smallest (ties go to the lowest label, first position first).

        Raises
        ------
        ValueError
            On invalid input, or if every sequence has score ``-inf``.
        """
        parts = self.encode(unary, transitions, start, end)
        unary_k, trans = kernel_inputs(parts, parts.eta_u, parts.eta_v)
        labels, best = viterbi(unary_k, trans)
        if best == -np.inf:
            raise_infeasible(unary_k, trans)
        return labels

    def score(self, value, unary, transitions, start=None, end=None):
        """Score of the label sequence ``value`` (``-inf`` if it uses a forbidden part)."""
        return super().score(value, unary, transitions, start, end)

    def marginals(self, unary, transitions, start=None, end=None):
        """Marginal probabilities and log-partition function (forward-backward).

        Under ``p(y) = exp(score(y) - log_z)``, returns the probability of
        each label at each position, the expected number of each transition
        and ``log_z``; both marginals are gradients of ``log_z`` (w.r.t.
        ``unary`` and ``transitions``). Computed in log space in O(n K^2),
        exact for scores of any magnitude and for ``-inf``.

        Parameters
        ----------
        unary, transitions, start, end
            As in :meth:`map`.

        Returns
        -------
        unary_marginals : ndarray of shape (n, K)
            ``P(y[i] = a)``; rows sum to 1, 0 at forbidden labels.
        transition_marginals : ndarray of shape (K, K)
            ``sum_i P(y[i-1] = a, y[i] = b)``, expected transition counts;
            they sum to ``n - 1`` (all zeros when ``n == 1``).
        log_z : float
            ``log(sum_y exp(score(y)))``.

        Raises
        ------
        ValueError
            On invalid input, or if every sequence has score ``-inf``.
        """
        parts = self.encode(unary, transitions, start, end)
        unary_k, trans = kernel_inputs(parts, parts.eta_u, parts.eta_v)
        mu, xi, log_z = forward_backward(unary_k, trans)
        if log_z == -np.inf:
            raise_infeasible(unary_k, trans)
        return mu, xi, float(log_z)

    def marginals_backward(
        self, unary, transitions, start, end, d_unary_marginals, d_transition_marginals
    ):
        """Vector-Jacobian product of the marginals w.r.t. the potentials.

        The marginals are the gradient of ``log Z``, so this is the product
        of the Hessian of ``log Z`` (the covariance matrix of the part
        indicators under ``p(y)``) with ``(d_unary_marginals,
        d_transition_marginals)``. It is computed by a second forward-backward
        sweep carrying, for each position and label, the conditional
        expectations of ``d . phi(y)`` over the prefix and the suffix, using
        the conditional transition probabilities of the (normalized) forward
        and backward messages (the first-order expectation semiring; Li &
        Eisner 2009). Every step is a convex combination of bounded numbers,
        so, unlike backpropagating through probabilities, nothing can overflow
        or underflow; this is what the signed log-space semifield achieves in
        Kim et al. (2017, Fig. 2), at the cost of two ordinary multiply-adds
        per transition instead of signed ``logaddexp``. O(n K^2).

        Parameters
        ----------
        unary, transitions, start, end
            The potentials given to :meth:`marginals` (``start`` and ``end``
            may be None).
        d_unary_marginals : array-like of shape (n, K)
            Gradient of a loss w.r.t. the unary marginals.
        d_transition_marginals : array-like of shape (K, K) or None
            Gradient w.r.t. the transition marginals; None means zero. (The
            gradient of ``log_z`` is the marginals themselves: add
            ``d_log_z * marginals`` if the loss uses it.)

        Returns
        -------
        d_unary : ndarray of shape (n, K)
        d_transitions : ndarray of shape (K, K)
        d_start, d_end : ndarray of shape (K,) or None
            None when the corresponding potential was None. Forbidden parts
            get gradient 0.

        Examples
        --------
        >>> import numpy as np
        >>> from sksparse_struct.structures import Sequence
        >>> unary = np.zeros((2, 2))
        >>> d_unary, d_trans, _, _ = Sequence().marginals_backward(
        ...     unary, np.zeros((2, 2)), None, None, [[1.0, 0.0], [0.0, 0.0]], None)
        >>> d_unary.tolist()
        [[0.25, -0.25], [0.0, 0.0]]
        """
        parts = self.encode(unary, transitions, start, end)
        n, K = parts.context[:2]
        d_mu = _as_gradient_array(d_unary_marginals, "d_unary_marginals", (n, K))
        if d_transition_marginals is None:
            d_xi = np.zeros((K, K))
        else:
            d_xi = _as_gradient_array(d_transition_marginals, "d_transition_marginals", (K, K))
        unary_k, trans = kernel_inputs(parts, parts.eta_u, parts.eta_v)
        d_u, d_t, log_z = marginals_vjp(unary_k, trans, d_mu, d_xi)
        if log_z == -np.inf:
            raise_infeasible(unary_k, trans)
        return self.encode_backward(d_u.ravel(), d_t.ravel(), parts)

    # --- helpers --------------------------------------------------------------

    def _flat_pair(self, a, b, parts, method, names):
        """The flat unary (``n * K``) and transition (``K * K``) vectors, checked."""
        n, K = parts.context[:2]
        owner = f"{type(self).__name__}.{method}"
        return (
            as_part_vector(a, names[0], owner, n * K),
            as_part_vector(b, names[1], owner, K * K),
        )

    @staticmethod
    def _indicators_unchecked(labels, parts):
        n, K = parts.context[:2]
        m = np.zeros(n * K)
        m[np.arange(n) * K + labels] = 1.0
        counts = np.bincount(labels[:-1] * K + labels[1:], minlength=K * K)
        return m, counts.astype(np.float64)


def kernel_inputs(parts, eta_u, eta_v):
    """Flat Sequence scores as the ``(n, K)`` and ``(K, K)`` arrays the kernels take.

    ``parts`` gives the shapes; ``eta_u`` and ``eta_v`` are flat scores of
    its lengths (e.g. ``parts.eta_u - u`` inside SparseMAP). The arrays are
    C-contiguous float64 (views when the inputs already are).
    """
    n, K = parts.context[:2]
    unary = np.ascontiguousarray(eta_u, dtype=np.float64).reshape(n, K)
    trans = np.ascontiguousarray(eta_v, dtype=np.float64).reshape(K, K)
    return unary, trans


def raise_infeasible(unary, trans):
    """Raise the ValueError for Sequence scores that leave no finite-score sequence.

    ``unary`` and ``trans`` are the kernel inputs (:func:`kernel_inputs`);
    the message names the first position with no possible label.
    """
    i = int(first_dead_position(unary, trans))
    if i < 0:
        # Some sequence uses allowed parts only, yet its score is -inf.
        raise ValueError(
            "no label sequence has a finite score: the sums of the scores "
            "overflow float64 (scores of magnitude near 1e308)."
        )
    raise ValueError(
        "no label sequence has a finite score: the -inf (forbidden) unary, "
        f"transition, start and end scores leave no possible label at "
        f"position {i}."
    )
