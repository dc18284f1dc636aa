"""Softmax, the regularized max with the negative Shannon entropy.

Plain NumPy on purpose: its vectorised ``exp`` is faster than the scalar
``exp`` of a numba loop, and the other steps are single reductions, so a
compiled kernel would gain nothing. O(d) per row.
"""

import numpy as np

from ..utils._validation import (
    check_backward_inputs,
    check_positive_scalar,
    check_scores,
    restore_shape,
)
from ._temperature import wide_rows

__all__ = ["softmax", "softmax_backward"]

# Up to this temperature, a score more than finfo.max below its row's max has
# (z - max(z)) / temperature < -2048, whose exp is 0: the -inf its overflowing
# shift gives is exact (see _scaled_exp_rows).
_MAX_TEMPERATURE_WIDE_EXACT = np.finfo(np.float64).max / 2048


def _scaled_exp_rows(z_rows, temperature):
    """``exp((z - max(z)) / temperature)`` for every validated row, and the max."""
    # Every row has a finite max (all -inf rows were rejected), so masked
    # entries become exp(-inf) == 0 exactly; the shifted scores are <= 0, so
    # dividing by a tiny temperature can only overflow to -inf (exp: 0).
    m = z_rows.max(axis=1, keepdims=True)
    with np.errstate(over="ignore"):
        out = np.subtract(z_rows, m)
        if temperature != 1.0:
            inv_temp = 1.0 / temperature
            if np.isfinite(inv_temp):
                out *= inv_temp
            else:  # subnormal temperature: 1 / temperature overflows
                out /= temperature
    if temperature > _MAX_TEMPERATURE_WIDE_EXACT:
        # Scores more than finfo.max below the max were shifted to -inf, but
        # at such a temperature they can have a positive probability (e.g.
        # [1e308, -1e308] at 1e308): those rows are computed at half scale,
        # (z / 2 - max(z) / 2) / (temperature / 2), where nothing overflows.
        wide = wide_rows(z_rows)
        if wide.any():
            out[wide] = (z_rows[wide] * 0.5 - m[wide] * 0.5) / (temperature * 0.5)
    np.exp(out, out=out)
    return out, m[:, 0]


def _softmax_rows(z_rows, temperature):
    """Row-wise softmax of validated rows, shifted by the row max (no overflow)."""
    out, _ = _scaled_exp_rows(z_rows, temperature)
    out /= out.sum(axis=1, keepdims=True)
    return out


def _softmax_max_rows(z_rows, temperature):
    """``temperature * logsumexp(z / temperature)`` for every validated row.

    Computed as ``max(z) + temperature * log(sum(exp((z - max(z)) /
    temperature)))``: no term overflows, whatever the scores and temperature.
    """
    e, m = _scaled_exp_rows(z_rows, temperature)
    return m + temperature * np.log(e.sum(axis=1))


def softmax(z, temperature=1.0):
    """Softmax: ``exp(z / temperature)`` normalised to sum to one.

    The regularized max with ``Omega(p) = temperature * sum(p log p)``
    (Niculae 2018, sec. 3.3). Computed after subtracting the row maximum, so
    large scores do not overflow.

    Parameters
    ----------
    z : array-like of shape (d,) or (n_rows, d)
        Scores; the mapping is applied to every row of a 2-D array. float32
        input is computed in float64. ``-inf`` entries are masked (they get
        probability exactly 0); a row of only ``-inf`` is an error.
    temperature : float, default=1.0
        Larger values give flatter outputs.

    Returns
    -------
    p : ndarray of the shape of ``z``, float64
        Rows on the probability simplex, positive except at masked entries.

    See Also
    --------
    softmax_backward : the backward pass.

    Examples
    --------
    >>> from sksparse_struct.mappings import softmax
    >>> softmax([0.0, 0.0, float("-inf")]).tolist()
    [0.5, 0.5, 0.0]
    >>> softmax([1.0, 2.0, 3.0], temperature=2.0).round(3).tolist()
    [0.186, 0.307, 0.506]
    """
    temperature = check_positive_scalar(temperature, "temperature")
    z_rows, was_1d = check_scores(z, "z")
    return restore_shape(_softmax_rows(z_rows, temperature), was_1d)


def softmax_backward(p, dp, temperature=1.0):
    """Backward pass of :func:`softmax`: ``J^T dp`` from the forward output.

    The Jacobian is ``(diag(p) - p p^T) / temperature``; it is symmetric, so
    this is also the Jacobian-vector product ``J dp``.

    Parameters
    ----------
    p : array-like of shape (d,) or (n_rows, d)
        Output of :func:`softmax`.
    dp : array-like of the shape of ``p``
        Gradient of a loss with respect to ``p`` (or a direction).
    temperature : float, default=1.0
        The temperature used in the forward pass.

    Returns
    -------
    dz : ndarray of the shape of ``p``
        Gradient with respect to the scores ``z``.

    Examples
    --------
    >>> from sksparse_struct.mappings import softmax_backward
    >>> softmax_backward([0.5, 0.5], [1.0, 0.0]).tolist()
    [0.25, -0.25]
    """
    temperature = check_positive_scalar(temperature, "temperature")
    p_rows, dp_rows, was_1d = check_backward_inputs(p, dp)
    dot = np.einsum("ij,ij->i", p_rows, dp_rows)
    out = np.subtract(dp_rows, dot[:, np.newaxis])
    out *= p_rows
    if temperature != 1.0:
        with np.errstate(over="ignore"):
            out /= temperature
    return restore_shape(out, was_1d)
