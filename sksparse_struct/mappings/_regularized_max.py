"""Regularized max ``max_Omega`` and the regularizers ``Omega`` of the mappings.

Every mapping ``Pi_Omega`` of this subpackage is the gradient of

    max_Omega(z) = max_{p in simplex} <z, p> - temperature * Omega(p),

and the Fenchel-Young loss of a mapping (Niculae 2018, Def. 6.1) is
``L(z; y) = max_Omega(z) + temperature * Omega(y) - <z, y>``. This module gives
the two ingredients, ``max_Omega`` (with its maximiser) and ``Omega``, for every
mapping by name, so losses never need to know how a mapping is computed.
"""

import numpy as np

from ..utils._homogeneous import LOG2_IN_RANGE, rows_at_scale
from ..utils._validation import (
    as_float_rows,
    check_positive_scalar,
    check_simplex_rows,
    check_scores,
)
from ._entmax import entmax15_scaled
from ._pnorm import _check_p_param, _sq_pnorm_max_rows
from ._simplex_fast import project_simplex_rows
from ._softmax import _softmax_max_rows, _softmax_rows
from ._temperature import divide_by_temperature

__all__ = ["regularized_max", "regularizer", "MAPPING_NAMES"]

# Tolerance on sum(p) == 1 when checking that an argument of Omega lies on the
# simplex; outputs of iterative solvers are accurate far beyond this.
_SIMPLEX_ATOL = 1e-6



def _no_params(name, params):
    if params:
        raise ValueError(
            f"mapping {name!r} takes no extra parameters, got {sorted(params)}."
        )


# ---------------------------------------------------------------------------
# forward passes on validated rows: (z_rows, temperature, params) -> p_rows


def _softmax_forward(z_rows, temperature, params):
    _no_params("softmax", params)
    return _softmax_rows(z_rows, temperature)


def _sparsemax_forward(z_rows, temperature, params):
    _no_params("sparsemax", params)
    out = np.empty_like(z_rows)
    project_simplex_rows(divide_by_temperature(z_rows, temperature)[0], 1.0, out)
    return out


def _entmax15_forward(z_rows, temperature, params):
    _no_params("entmax15", params)
    return entmax15_scaled(z_rows, temperature)


def _sq_pnorm_forward(z_rows, temperature, params):
    _check_pnorm_params(params)
    return _sq_pnorm_max_rows(z_rows, temperature, **params)


# ---------------------------------------------------------------------------
# regularizers on validated simplex rows, without the temperature factor


def _neg_entropy(p_rows, params):
    _no_params("softmax", params)
    # 0 log 0 = 0: the limit, and what masked entries contribute.
    safe = np.where(p_rows > 0.0, p_rows, 1.0)
    return np.sum(p_rows * np.log(safe), axis=1)


def _half_sq_norm(p_rows, params):
    _no_params("sparsemax", params)
    return 0.5 * np.einsum("ij,ij->i", p_rows, p_rows)


def _tsallis15(p_rows, params):
    _no_params("entmax15", params)
    return (np.sum(p_rows * np.sqrt(p_rows), axis=1) - 1.0) / 0.75


def _check_pnorm_params(params):
    allowed = {"p", "max_iter", "tol", "method"}
    unknown = set(params) - allowed
    if unknown:
        raise ValueError(
            f"unknown parameters {sorted(unknown)} for mapping 'sq_pnorm_max'; "
            f"accepted: {sorted(allowed)}."
        )


def _half_sq_pnorm(p_rows, params):
    _check_pnorm_params(params)
    q = _check_p_param(params.get("p", 1.5))
    return 0.5 * np.sum(p_rows**q, axis=1) ** (2.0 / q)


_MAPPINGS = {
    "softmax": (_softmax_forward, _neg_entropy),
    "sparsemax": (_sparsemax_forward, _half_sq_norm),
    "entmax15": (_entmax15_forward, _tsallis15),
    "sq_pnorm_max": (_sq_pnorm_forward, _half_sq_pnorm),
}

MAPPING_NAMES = tuple(_MAPPINGS)


def _lookup(mapping):
    try:
        return _MAPPINGS[mapping]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown mapping {mapping!r}; choose one of {list(MAPPING_NAMES)}."
        ) from None


def _restore_values(values, was_1d):
    return float(values[0]) if was_1d else values


def _log2_magnitude(z_rows, temperature):
    """Upper bound on ``log2`` of every term of ``max_Omega`` of each row, or None.

    The terms are ``<z, p>`` (or ``max(z)``) and ``temperature * Omega(p)``
    (or ``temperature * log(sum(exp(...)))``), at most ``max |z|`` and
    ``temperature * (1 + log d)`` in magnitude (``log d`` bounds the
    softmax's ``Omega``, the others are at most 4/3). None when every row
    is clearly in range (two reductions, the common case).
    """
    log2_regularized = np.log2(temperature) + np.log2(1.0 + np.log(z_rows.shape[1]))
    half_range = 2.0 ** (LOG2_IN_RANGE - 1)
    if (
        log2_regularized <= LOG2_IN_RANGE - 1
        and -half_range <= z_rows.min()
        and z_rows.max() <= half_range
    ):
        return None
    with np.errstate(divide="ignore"):  # log2(0) = -inf: a row of zeros
        top = np.log2(np.max(np.abs(np.where(np.isneginf(z_rows), 0.0, z_rows)), axis=1))
    return np.maximum(top, log2_regularized) + 1.0  # a + b <= 2 max(a, b)


def _values_and_maximisers(z_rows, mapping, temperature, params):
    """``(max_Omega(z), p)`` of validated rows with no overflowing term."""
    forward, omega = _lookup(mapping)
    p_rows = forward(z_rows, temperature, params)
    if mapping == "softmax":
        # Closed form temperature * logsumexp(z / temperature): exact even
        # where p underflows to 0 and p log p would lose the tail.
        values = _softmax_max_rows(z_rows, temperature)
    else:
        # Masked entries have p == 0; keep -inf * 0 out of the dot product.
        z_safe = np.where(np.isneginf(z_rows), 0.0, z_rows)
        values = np.einsum("ij,ij->i", z_safe, p_rows) - temperature * omega(
            p_rows, params
        )
    return values, p_rows


def regularized_max(z, mapping="sparsemax", temperature=1.0, **params):
    """Regularized max ``max_Omega(z)`` and its maximiser, the mapping's output.

    ``max_Omega(z) = max_p <z, p> - temperature * Omega(p)`` over the
    probability simplex (Niculae 2018, eq. 3.5-3.6), where ``Omega`` is the
    regularizer of ``mapping`` (see :func:`regularizer`). Its gradient with
    respect to ``z`` is the maximiser ``p``.

    Parameters
    ----------
    z : array-like of shape (d,) or (n_rows, d)
        Scores; a 2-D array is processed row by row. ``-inf`` entries are
        masked: they get probability 0 and do not enter the value.
    mapping : {"softmax", "sparsemax", "entmax15", "sq_pnorm_max"}, default="sparsemax"
        Which regularizer.
    temperature : float, default=1.0
        Multiplies ``Omega``.
    **params
        Extra parameters of the mapping (``p``, ``max_iter``, ``tol`` for
        ``"sq_pnorm_max"``).

    Returns
    -------
    value : float or ndarray of shape (n_rows,)
        ``max_Omega(z)``; a float for a 1-D ``z``. ``inf`` where it exceeds
        the float64 range (scores near ``finfo.max`` with a temperature of
        that order).
    p : ndarray of the shape of ``z``
        The maximiser, i.e. the output of the mapping.

    Examples
    --------
    >>> from sksparse_struct.mappings import regularized_max
    >>> value, p = regularized_max([1.0, 0.8, -1.0], mapping="sparsemax")
    >>> round(value, 3), p.round(3).tolist()
    (0.66, [0.6, 0.4, 0.0])
    >>> round(regularized_max([0.0, 0.0], mapping="softmax")[0], 6)  # log 2
    0.693147
    """
    _lookup(mapping)
    temperature = check_positive_scalar(temperature, "temperature")
    z_rows, was_1d = check_scores(z, "z")
    values, p_rows = rows_at_scale(
        lambda rows, t: _values_and_maximisers(rows, mapping, t, params), z_rows, temperature,
        _log2_magnitude(z_rows, temperature))
    p_out = p_rows[0] if was_1d else p_rows
    return _restore_values(values, was_1d), p_out


def regularizer(p, /, mapping="sparsemax", temperature=1.0, **params):
    """The regularizer ``temperature * Omega(p)`` of a mapping, on the simplex.

    ==============  ===========================================
    mapping         ``Omega(p)``
    ==============  ===========================================
    softmax         ``sum(p * log(p))`` (with ``0 log 0 = 0``)
    sparsemax       ``||p||_2^2 / 2``
    entmax15        ``(sum(p ** 1.5) - 1) / 0.75``
    sq_pnorm_max    ``||p||_p^2 / 2`` (``p=1.5`` by default)
    ==============  ===========================================

    Parameters
    ----------
    p : array-like of shape (d,) or (n_rows, d)
        Points of the probability simplex (non-negative, rows summing to 1
        within 1e-6), e.g. one-hot gold labels.
    mapping : {"softmax", "sparsemax", "entmax15", "sq_pnorm_max"}, default="sparsemax"
    temperature : float, default=1.0
        Multiplies ``Omega``.
    **params
        ``p`` (the norm's exponent, in (1, 2]) for ``"sq_pnorm_max"``.

    Returns
    -------
    omega : float or ndarray of shape (n_rows,)
        A float for a 1-D input.

    Examples
    --------
    >>> from sksparse_struct.mappings import regularizer
    >>> regularizer([0.5, 0.5], mapping="sparsemax")
    0.25
    >>> regularizer([1.0, 0.0], mapping="entmax15")
    0.0
    """
    _, omega = _lookup(mapping)
    temperature = check_positive_scalar(temperature, "temperature")
    p_rows, was_1d = as_float_rows(p, "p")
    check_simplex_rows(p_rows, "p", atol=_SIMPLEX_ATOL)
    return _restore_values(temperature * omega(p_rows, params), was_1d)
