"""Constrained sparsemax (Malaviya et al. 2018): sparsemax with upper bounds."""

import numpy as np

from ..utils._validation import (
    check_backward_inputs,
    check_bounds,
    check_scores,
    restore_shape,
)
from ._capped_simplex import (
    DEFAULT_CAPPED_METHOD,
    check_capped_method,
    shift_by_row_max,
)
from ._capped_simplex_fast import csparsemax_backward_rows

__all__ = ["csparsemax", "csparsemax_backward"]


def csparsemax(z, u, method=DEFAULT_CAPPED_METHOD):
    """Constrained sparsemax: Euclidean projection onto the simplex below ``u``.

    Solves ``argmin_p ||p - z||^2`` subject to ``0 <= p <= u`` and
    ``sum(p) == 1`` (Malaviya et al. 2018, eq. 6). The solution is
    ``p_i = clip(z_i - tau, 0, u_i)``; it is sparse like sparsemax and bounded
    like csoftmax. Entries at their bound are set to ``u_i`` exactly, which
    :func:`csparsemax_backward` relies on.

    Parameters
    ----------
    z : array-like of shape (d,) or (n_rows, d)
        Scores; applied to every row of a 2-D array. ``-inf`` entries are
        masked (probability 0); NaN, ``+inf`` or an all ``-inf`` row raise.
    u : array-like of shape (d,) or (n_rows, d)
        Upper bounds, finite and non-negative; a 1-D ``u`` with 2-D ``z``
        applies to every row. Each row of ``u`` must sum to at least 1 over
        its unmasked entries. ``u_i = 0`` forces ``p_i = 0``.
    method : {"linear", "sort"}, default="linear"
        Threshold search kernel, see :func:`project_capped_simplex`.

    Returns
    -------
    p : ndarray of the shape of ``z``, float64

    See Also
    --------
    csparsemax_backward, project_capped_simplex, csoftmax

    Examples
    --------
    >>> from sksparse_struct.mappings import csparsemax
    >>> csparsemax([1.2, 0.8, -0.2], [0.5, 1.0, 1.0]).round(3).tolist()
    [0.5, 0.5, 0.0]
    >>> csparsemax([1.2, 0.8, -0.2], [1.0, 1.0, 1.0]).round(3).tolist()
    [0.7, 0.3, 0.0]
    """
    kernel = check_capped_method(method)
    z_rows, was_1d = check_scores(z, "z")
    u_rows = check_bounds(u, z_rows, "u")
    lo = np.zeros_like(z_rows)
    out = np.empty_like(z_rows)
    kernel(shift_by_row_max(z_rows), lo, u_rows, 1.0, out)
    return restore_shape(out, was_1d)


def csparsemax_backward(p, u, dp):
    """Backward pass of :func:`csparsemax`: gradients w.r.t. ``z`` and ``u``.

    With the free set ``F = {i : 0 < p_i < u_i}``, the upper-active set
    ``A = {i : p_i == u_i}`` and ``m`` the mean of ``dp`` over ``F``
    (Malaviya et al. 2018, Prop. 1)::

        dz_i = dp_i - m  if i in F, else 0
        du_i = dp_i - m  if i in A, else 0

    This follows from ``p_i = z_i - tau`` on F, ``p_i = u_i`` on A and
    ``tau = (sum_F z + sum_A u - 1) / |F|``. Only ``p``, ``u`` and ``dp`` are
    needed: the forward problem is not solved again.

    Conventions at the kinks:

    * ``F`` empty (``p`` is made of zeros and bounds only, the bounds in use
      summing to 1): ``p`` does not move with ``z``, so ``dz = 0``, and
      ``m = 0``, i.e. ``du = dp`` on A. This is the exact derivative along
      every perturbation of ``u`` that keeps ``sum_A u`` fixed (on which both
      one-sided derivatives agree).
    * ``u_i = 0`` (so ``p_i = 0 = u_i``) counts as upper-active, as the
      definition of A says: ``du_i`` is the derivative for a small increase of
      ``u_i``, which is right when ``z_i`` is above the threshold (the entry
      would take the room); when it is below, the true derivative is 0, but
      the backward pass cannot tell without ``z``.

    Parameters
    ----------
    p : array-like of shape (d,) or (n_rows, d)
        Output of :func:`csparsemax`.
    u : array-like of shape (d,) or (n_rows, d)
        The bounds given to the forward pass (a 1-D ``u`` broadcasts).
    dp : array-like of the shape of ``p``
        Gradient of a loss with respect to ``p``.

    Returns
    -------
    dz : ndarray of the shape of ``p``
        Gradient with respect to the scores.
    du : ndarray of the shape of ``p``
        Gradient with respect to the bounds (broadcast to the shape of ``p``
        even when ``u`` was 1-D: sum over rows to reduce).

    Examples
    --------
    >>> from sksparse_struct.mappings import csparsemax, csparsemax_backward
    >>> u = [0.5, 1.0, 1.0]
    >>> p = csparsemax([1.2, 0.9, 0.6], u)
    >>> p.round(3).tolist()
    [0.5, 0.4, 0.1]
    >>> dz, du = csparsemax_backward(p, u, [0.0, 1.0, 0.0])
    >>> dz.round(3).tolist(), du.round(3).tolist()
    ([0.0, 0.5, -0.5], [-0.5, 0.0, 0.0])
    """
    p_rows, dp_rows, was_1d = check_backward_inputs(p, dp)
    u_rows = check_bounds(u, p_rows, "u")
    dz = np.empty_like(p_rows)
    du = np.empty_like(p_rows)
    csparsemax_backward_rows(p_rows, u_rows, dp_rows, dz, du)
    return restore_shape(dz, was_1d), restore_shape(du, was_1d)
