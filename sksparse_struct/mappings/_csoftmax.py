"""Constrained softmax (Martins & Kreutzer 2017): softmax with upper bounds."""

import numpy as np

from ..utils._validation import (
    check_backward_inputs,
    check_bounds,
    check_scores,
    restore_shape,
)
from ._csoftmax_fast import csoftmax_backward_rows, csoftmax_rows

__all__ = ["csoftmax", "csoftmax_backward"]


def csoftmax(z, u):
    """Constrained softmax: the distribution closest to softmax(z) below ``u``.

    Solves ``argmin_p KL(p || softmax(z))`` subject to ``p <= u`` and
    ``sum(p) == 1`` (Martins & Kreutzer 2017, eq. 10). The solution is
    ``p_i = min(u_i, exp(z_i) / Z)`` with ``Z`` chosen so that ``p`` sums to
    one: the entries with the largest ``exp(z_i) / u_i`` are clamped to their
    bound (exactly), the others share the remaining mass in proportion to
    ``exp(z_i)``. Computed by sorting (O(d log d), exact) in log space, so
    scores of +-1e6 are fine.

    Parameters
    ----------
    z : array-like of shape (d,) or (n_rows, d)
        Scores; applied to every row of a 2-D array. ``-inf`` entries are
        masked (probability 0); NaN, ``+inf`` or an all ``-inf`` row raise.
    u : array-like of shape (d,) or (n_rows, d)
        Upper bounds, finite and non-negative; a 1-D ``u`` with 2-D ``z``
        applies to every row. Each row must sum to at least 1 over its
        unmasked entries. ``u_i = 0`` gives ``p_i = 0``. With ``u >= 1`` this
        is the softmax.

    Returns
    -------
    p : ndarray of the shape of ``z``, float64

    See Also
    --------
    csoftmax_backward, csparsemax

    Examples
    --------
    >>> from sksparse_struct.mappings import csoftmax
    >>> csoftmax([0.0, 0.0, 0.0], [0.2, 1.0, 1.0]).round(3).tolist()
    [0.2, 0.4, 0.4]
    >>> csoftmax([1e6, 0.0], [0.3, 1.0]).round(3).tolist()
    [0.3, 0.7]
    """
    z_rows, was_1d = check_scores(z, "z")
    u_rows = check_bounds(u, z_rows, "u")
    out = np.empty_like(z_rows)
    csoftmax_rows(z_rows, u_rows, out)
    return restore_shape(out, was_1d)


def csoftmax_backward(p, u, dp):
    """Backward pass of :func:`csoftmax`: gradients w.r.t. ``z`` and ``u``.

    With the set of strictly satisfied bounds ``A = {i : p_i < u_i}`` and
    ``m = sum_A p_i dp_i / sum_A p_i`` (Martins & Kreutzer 2017, Prop. 1 and
    Alg. 4; their denominator ``1 - sum_{i not in A} u_i`` equals
    ``sum_A p_i``)::

        dz_i = p_i (dp_i - m)  if i in A, else 0
        du_i = dp_i - m        if i not in A, else 0

    Computed from ``p``, ``u`` and ``dp`` only. When ``sum_A p == 0`` (the
    clamped bounds already sum to one) ``p`` does not move with ``z``, and
    ``m = 0`` is used (the exact derivative along perturbations of ``u`` that
    keep the sum of the clamped bounds fixed). An entry with ``u_i = 0`` is
    clamped (``p_i = 0 = u_i``), so it gets ``du_i = dp_i - m``.

    Parameters
    ----------
    p : array-like of shape (d,) or (n_rows, d)
        Output of :func:`csoftmax`.
    u : array-like of shape (d,) or (n_rows, d)
        The bounds given to the forward pass (a 1-D ``u`` broadcasts).
    dp : array-like of the shape of ``p``
        Gradient of a loss with respect to ``p``.

    Returns
    -------
    dz : ndarray of the shape of ``p``
    du : ndarray of the shape of ``p``
        Broadcast to the shape of ``p`` even when ``u`` was 1-D.

    Examples
    --------
    >>> from sksparse_struct.mappings import csoftmax, csoftmax_backward
    >>> u = [0.2, 1.0, 1.0]
    >>> p = csoftmax([0.0, 0.0, 0.0], u)
    >>> dz, du = csoftmax_backward(p, u, [0.0, 1.0, 0.0])
    >>> dz.round(3).tolist(), du.round(3).tolist()
    ([0.0, 0.2, -0.2], [-0.5, 0.0, 0.0])
    """
    p_rows, dp_rows, was_1d = check_backward_inputs(p, dp)
    u_rows = check_bounds(u, p_rows, "u")
    dz = np.empty_like(p_rows)
    du = np.empty_like(p_rows)
    csoftmax_backward_rows(p_rows, u_rows, dp_rows, dz, du)
    return restore_shape(dz, was_1d), restore_shape(du, was_1d)
