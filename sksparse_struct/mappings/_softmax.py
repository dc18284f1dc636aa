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

__all__ = ["softmax", "softmax_backward"]


def _softmax_rows(z_rows, inv_temp):
    """Row-wise softmax of validated rows, shifted by the row max (no overflow)."""
    # Every row has a finite max (all -inf rows were rejected), so masked
    # entries become exp(-inf) == 0 exactly.
    out = np.subtract(z_rows, z_rows.max(axis=1, keepdims=True))
    if inv_temp != 1.0:
        out *= inv_temp
    np.exp(out, out=out)
    out /= out.sum(axis=1, keepdims=True)
    return out


def _logsumexp_rows(z_rows, inv_temp):
    """``log(sum(exp(z * inv_temp)))`` for every validated row, without overflow."""
    m = z_rows.max(axis=1)
    shifted = np.subtract(z_rows, m[:, np.newaxis])
    shifted *= inv_temp
    np.exp(shifted, out=shifted)
    return m * inv_temp + np.log(shifted.sum(axis=1))


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
    return restore_shape(_softmax_rows(z_rows, 1.0 / temperature), was_1d)


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
        out /= temperature
    return restore_shape(out, was_1d)
