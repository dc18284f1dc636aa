"""Structured losses for any Structure (Niculae 2018, ch. 6, Defs. 6.1-6.3).

A structured loss compares the scores of the parts of one instance with its
gold structure ``y``. In the notation of :mod:`sksparse_struct.structures`,
the scores of the structures are ``theta(y') = eta_u . m_y' + eta_v . n_y'``
and each loss is a maximum over structures (or over their convex hull, the
marginal polytope) minus the same expression at the gold structure; its
gradient with respect to the flat scores is the maximiser minus the gold
indicators. Everything is computed through the Structure contract (``encode``,
``indicators``, ``oracle``, ``marginals``, ``decode`` and the backward maps), so
the losses work for every structure, including ones written by a user.

This is the generic definition, for any structure. The estimators call the
compiled kernels of the same losses on their own structures instead
(``_sequence_fast`` for linear chains, ``_tree_fast`` for dependency trees,
in this package), one instance after another inside their training loops;
the tests check those kernels against this function.
"""

import dataclasses

import numpy as np

from ..inference import sparsemap_parts
from ..inference._sparsemap import check_options
from ..structures import Structure
from ..structures._base import dot_masked
from ..utils._validation import as_real_array
from ._kinds_fast import COST_AUGMENTED_LOSSES, SPARSEMAP_OPTIONS, STRUCTURED_LOSSES

__all__ = ["structured_loss"]

_SPARSEMAP_LOSSES = ("sparsemap", "margin_sparsemap")


def structured_loss(structure, *potentials, y, loss="crf", cost=None, sparsemap_options=None):
    """Value and gradient of a structured loss for one instance.

    With ``parts = structure.encode(*potentials)``, flat scores ``eta_u``
    (unary parts) and ``eta_v`` (higher-order parts), the gold indicators
    ``(m_y, n_y) = structure.indicators(y, parts)`` and the score of a
    structure ``theta(y') = eta_u . m_y' + eta_v . n_y'``, the losses are
    (Niculae 2018, thesis ch. 6):

    ``"crf"`` (conditional random field, Def. 6.1 with the Shannon entropy)
        ``log Z - theta(y)``, with ``log Z = log sum_y' exp theta(y')``;
        gradient ``(u_mu - m_y, v_mu - n_y)`` with ``(u_mu, v_mu)`` the
        marginals (the expected indicators under ``p(y') ∝ exp theta(y')``).
    ``"perceptron"``
        ``max_y' theta(y') - theta(y)``; gradient ``(m_hat - m_y, n_hat -
        n_y)`` with ``y_hat`` the MAP structure.
    ``"hinge"`` (structured SVM, margin rescaling)
        ``max_y' [theta(y') + c . m_y'] - theta(y)``, with ``c`` a cost per
        unary part; gradient ``(m_hat - m_y, n_hat - n_y)`` with ``y_hat``
        the maximiser of the cost-augmented scores.
    ``"sparsemap"`` (Def. 6.2)
        ``max_{[u; v] in M} (eta_u . u + eta_v . v - 1/2 ||u||^2) -
        (theta(y) - 1/2 ||m_y||^2)`` over the marginal polytope ``M``;
        gradient ``(u* - m_y, v* - n_y)`` with ``(u*, v*)`` the SparseMAP
        posteriors.
    ``"margin_sparsemap"`` (Def. 6.3)
        The same with ``eta_u + c`` instead of ``eta_u`` inside the
        maximization (the gold terms stay without cost); gradient
        ``(u* - m_y, v* - n_y)`` at the cost-augmented solution.

    With the Hamming cost (the default), ``c . m_y = 0`` and every loss is
    non-negative, zero when ``y`` wins by a margin (the CRF loss only tends
    to zero). All are convex in the scores.

    Parameters
    ----------
    structure : Structure
        Any structure, e.g. :class:`~sksparse_struct.structures.Sequence`.
    *potentials : array-like
        The structure's potentials, as for its ``map`` method; ``-inf``
        forbids a part.
    y : object
        The gold structure, in the form the structure's ``map`` returns (a
        label array for a sequence, a head array for a tree, an index for
        XOR, ...). It must use no forbidden part.
    loss : {"crf", "perceptron", "hinge", "sparsemap", "margin_sparsemap"}, \
default="crf"
        The loss; see above. ``"crf"`` needs a structure with tractable
        marginals (``structure.has_marginals``).
    cost : array-like or None, default=None
        The cost ``c`` of the cost-augmented losses (``"hinge"`` and
        ``"margin_sparsemap"``; an error for the others). ``None`` is the
        Hamming cost ``c = 1 - m_y``: 1 on every unary part the gold
        structure does not use. Otherwise a finite array in the layout of the
        structure's unary marginals: ``(n, K)`` for a
        :class:`~sksparse_struct.structures.Sequence`, ``(n + 1, n + 1)`` for
        a :class:`~sksparse_struct.structures.DependencyTree` (column 0 and
        the diagonal are ignored), the shape of the scores for
        :class:`~sksparse_struct.structures.XOR`,
        :class:`~sksparse_struct.structures.Budget` and
        :class:`~sksparse_struct.structures.Matching`.
    sparsemap_options : SparseMAPOptions or None, default=None
        The active-set solver's settings for the SparseMAP losses (an error
        for the others), passed to
        :func:`~sksparse_struct.inference.sparsemap_parts`; ``None`` means
        ``SparseMAPOptions()``, the defaults of inference and of the
        estimators alike.

    Returns
    -------
    value : float
        The loss.
    gradients : tuple
        The gradient of the loss with respect to each potential, in the order
        and shapes of ``potentials`` (``None`` for an optional potential not
        given), as ``structure.encode_backward`` returns them. Forbidden
        (``-inf``) parts get gradient 0.

    Raises
    ------
    ValueError
        For an unknown ``loss``; a ``y`` the structure rejects; a ``y`` that
        uses a forbidden part (the loss would be infinite); a ``cost`` given
        to a loss that takes none, of the wrong shape or not finite; a
        ``sparsemap_options`` given to a loss that solves no SparseMAP, or
        not a ``SparseMAPOptions``; ``loss="crf"`` on a structure without
        tractable marginals.

    Notes
    -----
    The CRF gradient turns the marginals, which ``structure.marginals``
    returns in the layout of ``structure.decode``, into flat vectors with
    ``structure.decode_backward``. The adjoint of ``decode`` inverts it on
    the marginals when ``decode`` is a reshape or a scatter into a larger
    array that is zero elsewhere, as it is for every structure of the
    package; a structure whose ``decode`` mixes parts would need its own
    inverse.

    Up to rounding a loss is at least ``c . m_y`` (0 for the losses without a
    cost). When that bound is 0, a value a few ulps below it is returned as
    0; with a user-given cost that does not vanish at ``y``, the value is
    returned as computed and may be negative.

    ``y`` is validated by ``structure.indicators``, which checks that it is
    a structure of the right form and size.
    ``DependencyTree(projective=True).indicators`` accepts any tree, so
    there a non-projective ``y`` is not rejected (and the losses then lose
    their lower bound).

    The SparseMAP losses use the active-set solver on the encoded scores
    (:func:`~sksparse_struct.inference.sparsemap_parts`), which warns with a
    ``ConvergenceWarning`` when ``max_iter`` is reached.

    References
    ----------
    V. Niculae. *Learning Deep Models with Linguistically-Inspired
    Structure*. PhD thesis, Cornell University, 2018, chapter 6.

    Examples
    --------
    On the one-of-K structure, the SparseMAP loss is the sparsemax loss and
    the CRF loss the multinomial logistic loss of classification:

    >>> import numpy as np
    >>> from sksparse_struct.losses import fenchel_young_loss, structured_loss
    >>> from sksparse_struct.structures import XOR, Sequence
    >>> scores = np.array([1.0, 0.8, -1.0])
    >>> value, (grad,) = structured_loss(XOR(), scores, y=1, loss="sparsemap")
    >>> round(value, 3), grad.round(3).tolist()
    (0.36, [0.6, -0.6, 0.0])
    >>> value, (grad,) = structured_loss(XOR(), scores, y=1, loss="crf")
    >>> round(value, 3), grad.round(3).tolist()
    (0.87, [0.512, -0.581, 0.069])
    >>> values, _ = fenchel_young_loss([scores], [1], loss="softmax")
    >>> round(float(values[0]), 3)
    0.87

    On a linear chain there is one gradient per potential (``None`` for the
    absent ``start`` and ``end``). ``y`` is the best sequence here, but it
    does not win by a margin of one wrong label (position 1), so its hinge
    loss is positive:

    >>> unary = np.array([[2.0, 0.0], [0.4, 0.0], [0.0, 2.0]])
    >>> transitions = np.zeros((2, 2))
    >>> Sequence().map(unary, transitions).tolist()
    [0, 0, 1]
    >>> value, (d_unary, d_trans, d_start, d_end) = structured_loss(
    ...     Sequence(), unary, transitions, y=[0, 0, 1], loss="hinge")
    >>> round(value, 3), d_start
    (0.6, None)
    >>> d_unary.tolist()  # the cost-augmented best sequence is [0, 1, 1]
    [[0.0, 0.0], [-1.0, 1.0], [0.0, 0.0]]
    >>> d_trans.tolist()
    [[-1.0, 0.0], [0.0, 1.0]]
    >>> value, _ = structured_loss(Sequence(), unary, transitions, y=[0, 0, 1],
    ...                            loss="perceptron")
    >>> value
    0.0
    """
    if not isinstance(structure, Structure):
        raise ValueError(
            "structure must be an instance of sksparse_struct.structures.Structure, "
            f"got {type(structure).__name__}."
        )
    if not isinstance(loss, str) or loss not in STRUCTURED_LOSSES:
        raise ValueError(f"unknown loss {loss!r}; choose one of {list(STRUCTURED_LOSSES)}.")
    augmented = loss in COST_AUGMENTED_LOSSES
    if cost is not None and not augmented:
        raise ValueError(
            f"loss={loss!r} takes no cost; only the cost-augmented losses "
            f"{list(COST_AUGMENTED_LOSSES)} do."
        )
    options = _check_sparsemap_options(sparsemap_options, loss)
    if loss == "crf" and not structure.has_marginals:
        raise ValueError(
            "loss='crf' needs the marginals and log-partition function of the "
            f"structure, and {type(structure).__name__} has no tractable marginals "
            "(has_marginals is False). Use loss='sparsemap' or 'margin_sparsemap', "
            "or the hinge or perceptron loss: they only need the MAP oracle."
        )

    parts = structure.encode(*potentials)
    eta_u, eta_v = parts.eta_u, parts.eta_v
    m_y, n_y = structure.indicators(y, parts)
    m_y = np.asarray(m_y, dtype=np.float64)
    n_y = np.asarray(n_y, dtype=np.float64)
    theta_y = _gold_score(structure, parts, m_y, n_y, loss)
    c = _unary_cost(structure, parts, cost, m_y) if augmented else None
    scores_u = eta_u + c if augmented else eta_u  # -inf + finite cost stays -inf

    if loss == "crf":
        *layout, log_z = structure.marginals(*potentials)
        layout = layout[0] if len(layout) == 1 else tuple(layout)
        mu_u, mu_v = structure.decode_backward(layout, parts)
        value = float(log_z) - theta_y
        d_u, d_v = mu_u - m_y, mu_v - n_y
    elif loss in ("perceptron", "hinge"):
        _, m_hat, n_hat = structure.oracle(parts, scores_u, eta_v)
        m_hat = np.asarray(m_hat, dtype=np.float64)
        n_hat = np.asarray(n_hat, dtype=np.float64)
        value = dot_masked(scores_u, m_hat) + dot_masked(eta_v, n_hat) - theta_y
        d_u, d_v = m_hat - m_y, n_hat - n_y
    else:
        solved = parts if not augmented else dataclasses.replace(parts, eta_u=scores_u)
        result = sparsemap_parts(structure, solved, method="active_set", options=options)
        value = result.objective - theta_y + 0.5 * float(m_y @ m_y)
        d_u, d_v = result.u - m_y, result.v - n_y

    # Up to rounding the loss is at least c . m_y (0 without a cost).
    if not augmented or float(c[m_y != 0] @ m_y[m_y != 0]) == 0.0:
        value = max(value, 0.0)
    d_u = np.array(d_u, dtype=np.float64)
    d_v = np.array(d_v, dtype=np.float64)
    # The loss does not depend on forbidden parts; never let a NaN through.
    d_u[np.isneginf(eta_u)] = 0.0
    d_v[np.isneginf(eta_v)] = 0.0
    return float(value), structure.encode_backward(d_u, d_v, parts)


def _check_sparsemap_options(options, loss):
    if options is None:
        return SPARSEMAP_OPTIONS
    if loss not in _SPARSEMAP_LOSSES:
        raise ValueError(
            f"loss={loss!r} solves no SparseMAP problem, so it takes no "
            f"sparsemap_options; only {list(_SPARSEMAP_LOSSES)} do."
        )
    return check_options(options, "sparsemap_options")


def _gold_score(structure, parts, m_y, n_y, loss):
    """``theta(y)``, refusing a gold structure that uses a forbidden part."""
    for name, eta, ind in (("unary", parts.eta_u, m_y), ("higher-order", parts.eta_v, n_y)):
        forbidden = np.flatnonzero((ind != 0) & np.isneginf(eta))
        if forbidden.size:
            i = int(forbidden[0])
            raise ValueError(
                f"y uses the forbidden (-inf) {name} part {i}"
                f"{_part_location(structure, parts, i, name == 'unary')}: the "
                f"{loss} loss would be infinite. Use a gold structure the scores "
                "allow, or drop the instance."
            )
    theta_y = dot_masked(parts.eta_u, m_y) + dot_masked(parts.eta_v, n_y)
    if not np.isfinite(theta_y):
        raise ValueError(
            f"the score of y is {theta_y} although it uses no forbidden part: the "
            "sum of its part scores overflows float64; rescale the scores."
        )
    return theta_y


def _part_location(structure, parts, i, unary):
    """Where flat part ``i`` sits in the marginals layout, for error messages."""
    u = np.zeros(parts.eta_u.shape[0])
    v = np.zeros(parts.eta_v.shape[0])
    (u if unary else v)[i] = 1.0
    layout = structure.decode(u, v, parts)
    arrays = tuple(layout) if isinstance(layout, (tuple, list)) else (layout,)
    for j, arr in enumerate(arrays):
        where = np.argwhere(np.asarray(arr) != 0)
        if where.shape[0]:
            index = tuple(int(t) for t in where[0])
            name = "marginals" if len(arrays) == 1 else f"marginals[{j}]"
            return f" (index {index} of the structure's {name})"
    return ""


def _unary_cost(structure, parts, cost, m_y):
    """The flat cost per unary part: Hamming, or the user's array mapped by decode_backward."""
    if cost is None:
        return 1.0 - m_y
    n_u, n_v = parts.eta_u.shape[0], parts.eta_v.shape[0]
    layout = structure.decode(np.zeros(n_u), np.zeros(n_v), parts)
    is_tuple = isinstance(layout, (tuple, list))
    expected = np.shape(layout[0] if is_tuple else layout)
    arr = np.asarray(as_real_array(cost, "cost"), dtype=np.float64)
    if arr.shape != expected:
        raise ValueError(
            f"cost has shape {arr.shape}, expected {expected}: the layout of the "
            f"unary marginals of {structure!r} for these potentials."
        )
    bad = ~np.isfinite(arr)
    if bad.any():
        index = tuple(int(t) for t in np.argwhere(bad)[0])
        what = "NaN" if np.isnan(arr[index]) else f"{arr[index]}"
        raise ValueError(f"cost contains {what} at index {index}; costs must be finite.")
    if is_tuple:
        # The cost is on the unary parts only: zeros on the other arrays.
        arr = (arr,) + tuple(np.zeros(np.shape(a)) for a in layout[1:])
    c_u, _ = structure.decode_backward(arr, parts)
    return np.asarray(c_u, dtype=np.float64)
