"""1.5-entmax, the regularized max with the Tsallis 1.5 negative entropy."""

import numpy as np

from ..utils._validation import (
    check_backward_inputs,
    check_positive_scalar,
    check_scores,
    check_simplex_rows,
    restore_shape,
)
from ._entmax_fast import entmax15_backward_rows, entmax15_rows
from ._temperature import divide_by_temperature, wide_rows

__all__ = ["entmax15", "entmax15_backward"]

# Only scores less than 2 * temperature below the row max can get a positive
# probability: up to this temperature, the -inf that the kernel's z - max(z)
# gives a score more than finfo.max below the max is exact.
_MAX_TEMPERATURE_WIDE_EXACT = np.finfo(np.float64).max / 4


def entmax15_scaled(z_rows, temperature):
    """entmax15 of validated rows at a temperature (used by regularized_max too)."""
    out = np.empty_like(z_rows)
    half_inv_temp = 0.5 / temperature
    if np.isfinite(half_inv_temp):
        # The kernel scales z - max(z) <= 0: nothing can overflow to +inf.
        entmax15_rows(z_rows, half_inv_temp, out)
        if temperature > _MAX_TEMPERATURE_WIDE_EXACT:
            wide = wide_rows(z_rows)
            if wide.any():
                # z - max(z) overflowed to -inf where the score counts (e.g.
                # [1e308, -5e307] at 1e308): entmax15(z, t) = entmax15(z / 2,
                # t / 2), exactly, and at half scale nothing overflows.
                half = np.empty((int(wide.sum()), z_rows.shape[1]))
                entmax15_rows(z_rows[wide] * 0.5, 1.0 / temperature, half)
                out[wide] = half
    else:  # subnormal temperature
        entmax15_rows(divide_by_temperature(z_rows, temperature)[0], 0.5, out)
    return out


def entmax15(z, temperature=1.0):
    """1.5-entmax: a sparse mapping between softmax and sparsemax.

    Solves ``argmax_p <p, z> - temperature * Omega(p)`` over the simplex with
    the Tsallis negative entropy ``Omega(p) = (sum(p ** 1.5) - 1) / 0.75``
    (Peters, Niculae & Martins 2019). The solution is
    ``p = [(z / (2 * temperature) - tau)_+] ** 2``; the threshold ``tau`` is
    found exactly by sorting the few scores that can be in the support.

    Parameters
    ----------
    z : array-like of shape (d,) or (n_rows, d)
        Scores; the mapping is applied to every row of a 2-D array. float32
        input is computed in float64. ``-inf`` entries are masked (they get
        probability 0); a row of only ``-inf`` is an error.
    temperature : float, default=1.0
        Larger values give denser outputs; ``entmax15(z, t) == entmax15(z / t)``.

    Returns
    -------
    p : ndarray of the shape of ``z``, float64
        Rows on the probability simplex, with exact zeros.

    See Also
    --------
    entmax15_backward : the backward pass.

    Examples
    --------
    >>> from sksparse_struct.mappings import entmax15
    >>> entmax15([1.0, 0.5, -1.0]).round(3).tolist()
    [0.674, 0.326, 0.0]
    """
    temperature = check_positive_scalar(temperature, "temperature")
    z_rows, was_1d = check_scores(z, "z")
    return restore_shape(entmax15_scaled(z_rows, temperature), was_1d)


def entmax15_backward(p, dp, temperature=1.0):
    """Backward pass of :func:`entmax15`: ``J^T dp`` from the forward output.

    With ``g = sqrt(p)`` the Jacobian is
    ``(diag(g) - g g^T / sum(g)) / temperature``; it is symmetric, so this is
    also the Jacobian-vector product ``J dp``.

    Parameters
    ----------
    p : array-like of shape (d,) or (n_rows, d)
        Output of :func:`entmax15`: rows on the probability simplex
        (non-negative, summing to 1 within 1e-6), or a ValueError says which
        row is not.
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
    >>> from sksparse_struct.mappings import entmax15_backward
    >>> entmax15_backward([0.25, 0.75, 0.0], [1.0, 0.0, 5.0]).round(3).tolist()
    [0.317, -0.317, 0.0]
    """
    temperature = check_positive_scalar(temperature, "temperature")
    p_rows, dp_rows, was_1d = check_backward_inputs(p, dp)
    # The Jacobian uses sqrt(p): a p off the simplex gives NaN or a wrong answer.
    check_simplex_rows(p_rows, "p", atol=1e-6)
    out = np.empty_like(p_rows)
    scale = 1.0 / temperature
    if np.isfinite(scale):
        entmax15_backward_rows(p_rows, dp_rows, scale, out)
    else:  # subnormal temperature: divide last, so that 0 stays 0 (not inf * 0)
        entmax15_backward_rows(p_rows, dp_rows, 1.0, out)
        with np.errstate(over="ignore"):
            out /= temperature
    return restore_shape(out, was_1d)
