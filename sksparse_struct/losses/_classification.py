"""Fenchel-Young losses for multiclass classification (unstructured, A = I).

For a regularizer ``Omega`` restricted to the probability simplex, the
Fenchel-Young loss of scores ``theta`` and a target distribution ``y``
(Niculae 2018, Def. 6.1) is

    L_Omega(theta; y) = max_Omega(theta) + Omega(y) - <theta, y>,

with ``max_Omega(theta) = max_{p in simplex} <theta, p> - Omega(p)``. It is
convex in ``theta``, non-negative, zero exactly when ``y`` is the regularized
prediction ``p_hat = argmax_p <theta, p> - Omega(p)``, and ``p_hat - y`` is a
(sub)gradient (Prop. 6.1). The mappings of :mod:`sksparse_struct.mappings`
provide ``max_Omega``, its maximiser and ``Omega``; this module only combines
them, so a loss never needs to know how its mapping is computed.
"""

import numpy as np

from ..mappings import (
    entmax15,
    entmax15_backward,
    regularized_max,
    regularizer,
    softmax,
    softmax_backward,
    sparsemax,
    sparsemax_backward,
)
from ..utils._homogeneous import rows_at_scale
from ..utils._validation import check_positive_scalar, check_scores, check_simplex_rows

__all__ = [
    "LOSS_NAMES",
    "SMOOTH_LOSS_NAMES",
    "fenchel_young_loss",
    "fenchel_young_predict_proba",
]

# Losses whose regularizer is strictly convex on the simplex: their prediction
# is a probability distribution and the loss is differentiable.
SMOOTH_LOSS_NAMES = ("softmax", "sparsemax", "entmax15")
# Omega = 0 (perceptron) or a linear cost (hinge): piecewise-linear losses
# whose prediction is a vertex of the simplex (the argmax).
LOSS_NAMES = SMOOTH_LOSS_NAMES + ("perceptron", "hinge")

_MAPPING_FUNCTIONS = {"softmax": softmax, "sparsemax": sparsemax, "entmax15": entmax15}
_MAPPING_BACKWARD = {
    "softmax": softmax_backward,
    "sparsemax": sparsemax_backward,
    "entmax15": entmax15_backward,
}

# Tolerance on sum(y) == 1 for target distributions (the one the mappings'
# regularizer uses too).
_SIMPLEX_ATOL = 1e-6


def _check_loss(loss):
    if not isinstance(loss, str) or loss not in LOSS_NAMES:
        raise ValueError(f"unknown loss {loss!r}; choose one of {list(LOSS_NAMES)}.")
    return loss


def _check_targets(y, theta_rows, was_1d):
    """Return the targets as an (n, K) float64 array of simplex rows."""
    n_rows, n_classes = theta_rows.shape
    try:
        y_arr = np.asarray(y)
    except Exception as exc:  # ragged nested lists and the like
        raise ValueError(f"y could not be converted to an array: {exc}") from exc
    if y_arr.dtype == object or not (
        np.issubdtype(y_arr.dtype, np.floating) or np.issubdtype(y_arr.dtype, np.integer)
    ):
        raise ValueError(
            f"y must hold class indices or probabilities, got dtype {y_arr.dtype}."
        )
    # The number of dimensions tells the two encodings apart: one index per
    # row of scores, or one distribution (a row of the same length) per row.
    index_ndim = 0 if was_1d else 1
    if y_arr.ndim == index_ndim:
        idx = np.atleast_1d(y_arr)
        if idx.shape[0] != n_rows:
            raise ValueError(
                f"y has {idx.shape[0]} class indices but scores has {n_rows} rows."
            )
        if np.issubdtype(idx.dtype, np.floating):
            bad = ~np.isfinite(idx) | (idx != np.round(idx))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(
                    f"y must hold integer class indices; y[{i}] = {idx[i]!r}."
                )
        bad = (idx < 0) | (idx >= n_classes)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"class index y[{i}] = {idx[i]} is out of range for "
                f"{n_classes} classes (scores has {n_classes} columns)."
            )
        targets = np.zeros((n_rows, n_classes))
        targets[np.arange(n_rows), idx.astype(np.intp)] = 1.0
        return targets
    if y_arr.ndim == index_ndim + 1 and y_arr.shape[-1] == n_classes:
        targets = np.ascontiguousarray(np.atleast_2d(y_arr), dtype=np.float64)
        if targets.shape[0] != n_rows:
            raise ValueError(
                f"y has {targets.shape[0]} rows but scores has {n_rows} rows."
            )
        check_simplex_rows(targets, "y", atol=_SIMPLEX_ATOL)
        return targets
    expected = "a class index" if was_1d else f"{n_rows} class indices"
    raise ValueError(
        f"y has shape {y_arr.shape}; with scores of shape "
        f"{(n_classes,) if was_1d else theta_rows.shape} it must be {expected} "
        f"or {'a distribution' if was_1d else 'distributions'} of length {n_classes}."
    )


def _first_argmax_onehot(rows):
    """One-hot rows of the argmax; ties go to the lowest index (deterministic)."""
    onehot = np.zeros_like(rows)
    onehot[np.arange(rows.shape[0]), np.argmax(rows, axis=1)] = 1.0
    return onehot


def _dot_rows(theta, targets):
    """``<theta_i, y_i>`` for every row, with ``-inf * 0`` counted as 0."""
    return np.einsum("ij,ij->i", np.where(targets > 0.0, theta, 0.0), targets)


def _log2_magnitude(theta, temperature):
    """Upper bound on ``log2`` of every term of the loss of each row.

    The terms are at most ``span + temperature * (1 + log K)`` in magnitude
    (``span = max(theta) - min(theta)``; ``log K`` bounds the softmax's
    regularizer, the others are smaller). Computed from halves and logs, so
    that the bound itself cannot overflow.
    """
    with np.errstate(divide="ignore"):  # log2(0) = -inf: a row of equal scores
        span = np.log2(theta.max(axis=1) / 2 - theta.min(axis=1) / 2) + 1.0
    regularized = np.log2(temperature) + np.log2(1.0 + np.log(theta.shape[1]))
    return np.maximum(span, regularized) + 1.0  # a + b <= 2 max(a, b)


def loss_rows(theta, targets, loss, temperature, return_prediction=False):
    """Loss values and gradients on validated rows (no checking).

    ``theta`` and ``targets`` are float64 arrays of shape (n, K), the targets
    on the simplex. Returns ``(values, grad)`` with ``grad = p_hat - targets``,
    and ``p_hat`` as a third element if ``return_prediction``.

    Every loss is positively homogeneous, ``L_t(theta) = c L_{t/c}(theta / c)``
    with the same ``p_hat`` for ``c > 0``. Rows whose scores span more than
    about 2**1020 (e.g. ``[1e308, -1e308]``), or with a temperature that large,
    are computed at ``c = 2**k`` (exact, so the same floats up to underflow of
    the tiniest terms), where no term overflows; their value is scaled back
    and is ``inf`` only when the loss itself exceeds the float64 range.
    """
    values, p_hat = rows_at_scale(
        lambda rows, t, tg: _loss_rows_in_range(rows, tg, loss, t), theta, temperature,
        _log2_magnitude(theta, temperature), targets)
    if return_prediction:
        return values, p_hat - targets, p_hat
    return values, p_hat - targets


def _loss_rows_in_range(theta, targets, loss, temperature):
    """``(values, p_hat)`` of rows with no overflowing term (see loss_rows)."""
    # Every loss is invariant to adding a constant to a row of scores. Shift
    # each row by its max: the shifted scores are <= 0, so no term of the
    # loss can overflow, and the value is the small regularized part plus
    # max(theta) - <theta, y>, computed without cancelling two large terms
    # (e.g. logsumexp(theta) - theta_y for scores of size 1e6). The rows
    # span less than about 2**1020, so the shift cannot overflow.
    with np.errstate(over="ignore"):
        theta = theta - theta.max(axis=1, keepdims=True)
    theta_y = _dot_rows(theta, targets)
    if loss in SMOOTH_LOSS_NAMES:
        value, p_hat = regularized_max(theta, mapping=loss, temperature=temperature)
        omega_y = regularizer(targets, mapping=loss, temperature=temperature)
        values = value + omega_y - theta_y
    else:
        if loss == "hinge":
            # Cost-augmented scores theta + t * (1 - y): the perceptron loss
            # on them is the Crammer-Singer hinge with margin t; scaling the
            # cost with the temperature keeps L_t(theta) = t L_1(theta / t).
            augmented = theta + temperature * (1.0 - targets)
        else:
            augmented = theta
        p_hat = _first_argmax_onehot(augmented)
        with np.errstate(over="ignore"):
            values = np.max(augmented, axis=1) - _dot_rows(augmented, targets)
    # L >= 0 holds exactly (Prop. 6.1.1); round-off in the difference of
    # nearly equal terms must not hand callers a tiny negative loss.
    np.maximum(values, 0.0, out=values)
    return values, p_hat


def loss_hessp_rows(p_hat, v, loss, temperature):
    """Generalized Hessian of a smooth loss w.r.t. the scores, times ``v``.

    The gradient is ``p_hat(theta) - y``, so the Hessian is the Jacobian of
    the mapping at ``theta``, which its backward pass applies from the
    forward output ``p_hat`` (the Jacobians are symmetric).
    """
    return _MAPPING_BACKWARD[loss](p_hat, v, temperature=temperature)


def fenchel_young_loss(scores, y, loss="sparsemax", temperature=1.0):
    """Fenchel-Young classification loss and its gradient with respect to the scores.

    ``L(theta; y) = max_Omega(theta) + Omega(y) - <theta, y>`` (Niculae 2018,
    Def. 6.1, with ``A = I``), where the regularizer ``Omega`` is scaled by
    ``temperature``:

    ==============  ==================================================  =======================
    loss            ``Omega(p)`` on the simplex                         prediction ``p_hat``
    ==============  ==================================================  =======================
    ``softmax``     ``t * sum(p log p)`` (multinomial logistic loss)    softmax(theta / t)
    ``sparsemax``   ``t * ||p||^2 / 2``                                 sparsemax(theta / t)
    ``entmax15``    ``t * (sum(p^1.5) - 1) / 0.75``                     entmax15(theta / t)
    ``perceptron``  ``0``: ``max_k theta_k - <theta, y>``               one-hot argmax
    ``hinge``       ``t * <1 - y, p>``: perceptron loss on              one-hot argmax of
                    ``theta + t (1 - y)`` (Crammer-Singer, margin t)    ``theta + t (1 - y)``
    ==============  ==================================================  =======================

    For integer labels the hinge loss is ``max_k (theta_k + t [k != y]) -
    theta_y``. Every loss satisfies the temperature scaling of Prop. 6.1.4,
    ``L_t(theta; y) = t * L_1(theta / t; y)``, so for the perceptron loss
    the temperature has no effect.

    Parameters
    ----------
    scores : array-like of shape (n_samples, n_classes) or (n_classes,)
        Scores ``theta``; must be finite.
    y : array-like of shape (n_samples,) or (n_samples, n_classes)
        Targets: integer class indices in ``[0, n_classes)`` (integer-valued
        floats are accepted), or target distributions (non-negative rows
        summing to 1). For 1-D ``scores``, a single index or distribution.
    loss : {"softmax", "sparsemax", "entmax15", "perceptron", "hinge"}, \
            default="sparsemax"
    temperature : float, default=1.0
        Scale ``t > 0`` of the regularizer (the margin for ``"hinge"``).

    Returns
    -------
    values : ndarray of shape (n_samples,), or float for 1-D ``scores``
        Non-negative loss values; ``inf`` where the loss exceeds the float64
        range (scores about 1e308 apart, the gold class at the low end; the
        gradient is still exact).
    grad : ndarray of the shape of ``scores``
        ``p_hat - y``, the gradient (for the smooth losses) or a subgradient
        (perceptron, hinge; ties in the argmax go to the lowest index).

    See Also
    --------
    fenchel_young_predict_proba : the prediction ``p_hat`` of each loss.

    Examples
    --------
    >>> from sksparse_struct.losses import fenchel_young_loss
    >>> values, grad = fenchel_young_loss([[1.0, 0.8, -1.0]], [1], loss="sparsemax")
    >>> values.round(3).tolist(), grad.round(3).tolist()
    ([0.36], [[0.6, -0.6, 0.0]])
    >>> values, _ = fenchel_young_loss([[2.0, 1.5, 0.0]], [1], loss="hinge")
    >>> values.tolist()  # max(2 + 1, 1.5, 0 + 1) - 1.5
    [1.5]
    """
    loss = _check_loss(loss)
    temperature = check_positive_scalar(temperature, "temperature")
    theta, was_1d = check_scores(scores, "scores", allow_neg_inf=False)
    targets = _check_targets(y, theta, was_1d)
    values, grad = loss_rows(theta, targets, loss, temperature)
    if was_1d:
        return float(values[0]), grad[0]
    return values, grad


def fenchel_young_predict_proba(scores, loss="sparsemax", temperature=1.0):
    """The prediction ``p_hat`` of a Fenchel-Young loss: the regularized argmax.

    ``p_hat = argmax_{p in simplex} <theta, p> - Omega(p)``: the mapping's
    output for the smooth losses, the one-hot argmax (ties to the lowest
    index) for ``"perceptron"`` and ``"hinge"`` (at prediction time there is
    no gold label to augment the scores with).

    Parameters
    ----------
    scores : array-like of shape (n_samples, n_classes) or (n_classes,)
    loss : {"softmax", "sparsemax", "entmax15", "perceptron", "hinge"}, \
            default="sparsemax"
    temperature : float, default=1.0

    Returns
    -------
    proba : ndarray of the shape of ``scores``
        Rows on the probability simplex.

    Examples
    --------
    >>> from sksparse_struct.losses import fenchel_young_predict_proba
    >>> fenchel_young_predict_proba([3.0, 1.0, 0.0], loss="sparsemax").tolist()
    [1.0, 0.0, 0.0]
    >>> fenchel_young_predict_proba([0.0, 0.5], loss="perceptron").tolist()
    [0.0, 1.0]
    """
    loss = _check_loss(loss)
    temperature = check_positive_scalar(temperature, "temperature")
    smooth = loss in SMOOTH_LOSS_NAMES  # their mappings accept -inf as a mask
    theta, was_1d = check_scores(scores, "scores", allow_neg_inf=smooth)
    if smooth:
        proba = _MAPPING_FUNCTIONS[loss](theta, temperature=temperature)
    else:
        proba = _first_argmax_onehot(theta)
    return proba[0] if was_1d else proba
