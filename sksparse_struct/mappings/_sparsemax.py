"""Sparsemax and the Euclidean projection onto the simplex."""

import numpy as np

from ..utils._validation import (
    check_backward_inputs,
    check_positive_scalar,
    check_scores,
    restore_shape,
)
from ._simplex_fast import project_simplex_rows, sparsemax_backward_rows
from ._temperature import divide_by_temperature

__all__ = ["project_simplex", "sparsemax", "sparsemax_backward"]

# The kernel's running sums reach about (d + 1) * radius. Past 2**1020 the
# projection is computed at a power-of-two scale (see project_simplex).
_LOG2_IN_RANGE = 1020
_LOG2_SCALED = 1000


def project_simplex(z, radius=1.0):
    """Euclidean projection onto the (scaled) probability simplex.

    Solves ``argmin_p ||p - z||^2`` subject to ``p >= 0`` and
    ``sum(p) == radius`` for a vector or for every row of a 2-D array, exactly.
    Only the entries above running lower bounds of the threshold are sorted
    (the support and a few more), so a row costs O(d) in practice; the result
    equals the classic sort-based algorithm (Held et al. 1974) to the last
    bit.

    Parameters
    ----------
    z : array-like of shape (d,) or (n_rows, d)
        Points to project. ``-inf`` entries are masked: they get 0.
    radius : float, default=1.0
        Sum of the projected vector (1 for the probability simplex).

    Returns
    -------
    p : ndarray of the shape of ``z``, float64

    Examples
    --------
    >>> from sksparse_struct.mappings import project_simplex
    >>> project_simplex([0.5, 1.0, 0.1]).round(3).tolist()
    [0.25, 0.75, 0.0]
    """
    radius = check_positive_scalar(radius, "radius")
    z_rows, was_1d = check_scores(z, "z")
    out = np.empty_like(z_rows)
    log2_sum = np.log2(radius) + np.log2(z_rows.shape[1] + 1.0)
    if log2_sum <= _LOG2_IN_RANGE:
        project_simplex_rows(z_rows, radius, out)
        return restore_shape(out, was_1d)
    # A radius near finfo.max: the sums would overflow to inf. The projection
    # is positively homogeneous, proj(z, r) = c proj(z / c, r / c), and with
    # c = 2**k the scaling is exact (up to underflow of the tiniest scores,
    # far below the rounding of the output); no output exceeds the radius.
    k = int(np.ceil(log2_sum)) - _LOG2_SCALED
    project_simplex_rows(np.ldexp(z_rows, -k), np.ldexp(radius, -k), out)
    with np.errstate(over="ignore"):
        np.ldexp(out, k, out=out)
    np.minimum(out, radius, out=out)
    return restore_shape(out, was_1d)


def sparsemax(z, temperature=1.0):
    """Sparsemax: the Euclidean projection of ``z / temperature`` onto the simplex.

    The regularized max with ``Omega(p) = temperature * ||p||^2 / 2``
    (Martins & Astudillo 2016; Niculae 2018, sec. 3.3). Unlike softmax, its
    output can have exact zeros.

    Parameters
    ----------
    z : array-like of shape (d,) or (n_rows, d)
        Scores; the mapping is applied to every row of a 2-D array. float32
        input is computed in float64. ``-inf`` entries are masked (they get
        probability 0); a row of only ``-inf`` is an error.
    temperature : float, default=1.0
        Larger values give denser outputs.

    Returns
    -------
    p : ndarray of the shape of ``z``, float64
        Rows on the probability simplex.

    See Also
    --------
    sparsemax_backward : the backward pass.

    Examples
    --------
    >>> from sksparse_struct.mappings import sparsemax
    >>> sparsemax([1.0, 0.8, -1.0]).tolist()
    [0.6, 0.4, 0.0]
    """
    temperature = check_positive_scalar(temperature, "temperature")
    z_rows, was_1d = check_scores(z, "z")
    z_rows, _ = divide_by_temperature(z_rows, temperature)
    out = np.empty_like(z_rows)
    project_simplex_rows(z_rows, 1.0, out)
    return restore_shape(out, was_1d)


def sparsemax_backward(p, dp, temperature=1.0):
    """Backward pass of :func:`sparsemax`: ``J^T dp`` from the forward output.

    The Jacobian (Niculae 2018, eq. 3.7) is
    ``(diag(s) - s s^T / |s|) / temperature`` with ``s`` the support of ``p``;
    it is symmetric, so this is also the Jacobian-vector product ``J dp``.

    Parameters
    ----------
    p : array-like of shape (d,) or (n_rows, d)
        Output of :func:`sparsemax`.
    dp : array-like of the shape of ``p``
        Gradient of a loss with respect to ``p`` (or a direction).
    temperature : float, default=1.0
        The temperature used in the forward pass.

    Returns
    -------
    dz : ndarray of the shape of ``p``
        Gradient with respect to the scores ``z``.
    """
    temperature = check_positive_scalar(temperature, "temperature")
    p_rows, dp_rows, was_1d = check_backward_inputs(p, dp)
    out = np.empty_like(p_rows)
    scale = 1.0 / temperature
    if np.isfinite(scale):
        sparsemax_backward_rows(p_rows, dp_rows, scale, out)
    else:  # subnormal temperature: divide last, so that 0 stays 0 (not inf * 0)
        sparsemax_backward_rows(p_rows, dp_rows, 1.0, out)
        with np.errstate(over="ignore"):
            out /= temperature
    return restore_shape(out, was_1d)
