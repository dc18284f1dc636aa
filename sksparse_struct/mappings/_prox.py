"""Exact proximal operators of 1-D total variation and of OSCAR."""

import numpy as np

from ..utils._validation import check_positive_scalar, check_scores, restore_shape
from ._oscar_fast import prox_oscar_rows
from ._tv_fast import prox_tv1d_rows

__all__ = ["prox_tv1d", "prox_oscar"]


# Largest binary exponent the ordered proxes' running sums may reach: their
# pool-adjacent-violators pass sums up to d values of size max|z| + alpha * d
# and compares such sums multiplied by block lengths up to d.
_SAFE_EXPONENT = 1020


def ordered_prox_rows(kernel, z_rows, alpha, out, groups):
    """Run an ordered-prox kernel (OSCAR or pairwise max) on rows, without overflow.

    Both penalties are positively homogeneous, so ``prox_alpha(z) = c *
    prox_{alpha / c}(z / c)`` for ``c > 0``. Rows whose sums could overflow
    are solved at ``c`` a power of two (exact scaling) that brings them into
    range; other rows are solved as they are, to the last bit as before.
    """
    d = z_rows.shape[1]
    log_d = int(np.ceil(np.log2(max(d, 1))))
    finite = np.where(np.isfinite(z_rows), np.abs(z_rows), 0.0)
    _, z_exp = np.frexp(finite.max(axis=1))
    a_exp = int(np.frexp(alpha)[1]) + log_d
    shift = np.maximum(z_exp, a_exp) + 2 * log_d + 2 - _SAFE_EXPONENT
    ordinary = shift <= 0
    if ordinary.all():
        kernel(z_rows, alpha, out, groups)
        return
    if ordinary.any():
        x = np.empty((int(ordinary.sum()), d))
        g = np.empty(x.shape, dtype=np.int64)
        kernel(np.ascontiguousarray(z_rows[ordinary]), alpha, x, g)
        out[ordinary] = x
        groups[ordinary] = g
    for r in np.flatnonzero(~ordinary):
        k = int(shift[r])
        x = np.empty((1, d))
        kernel(np.ldexp(z_rows[r : r + 1], -k), float(np.ldexp(alpha, -k)), x, groups[r : r + 1])
        with np.errstate(over="ignore"):
            out[r] = np.ldexp(x[0], k)


def _prox_with_groups(kernel, z, alpha):
    """Validate, then run a row kernel that writes the prox and its groups."""
    alpha = check_positive_scalar(alpha, "alpha", allow_zero=True)
    z_rows, was_1d = check_scores(z, "z", allow_neg_inf=False)
    out = np.empty_like(z_rows)
    groups = np.empty(z_rows.shape, dtype=np.int64)
    if kernel is prox_oscar_rows:
        ordered_prox_rows(kernel, z_rows, alpha, out, groups)
    else:
        kernel(z_rows, alpha, out, groups)
    return out, groups, was_1d


def prox_tv1d(z, alpha, return_groups=False):
    """Proximal operator of 1-D total variation (the fused lasso signal approximator).

    Computes, for a vector or for every row of a 2-D array,
    ``argmin_x 1/2 ||x - z||^2 + alpha * sum_i |x[i+1] - x[i]|`` exactly, in
    O(d) per row in practice, with Condat's (2013) direct algorithm.

    Parameters
    ----------
    z : array-like of shape (d,) or (n_rows, d)
        Finite values (``-inf`` has no meaning here and is rejected).
    alpha : float
        Penalty strength, ``>= 0``. 0 gives the identity; once ``alpha`` is at
        least the largest ``|partial sum of (z - mean(z))|`` every entry equals
        the mean.
    return_groups : bool, default=False
        Also return the segments of the output.

    Returns
    -------
    x : ndarray of the shape of ``z``, float64
    groups : ndarray of the shape of ``z``, int64
        Only if ``return_groups``. Labels ``1..G`` numbering, left to right,
        the segments of equal values found by the algorithm. At degenerate
        inputs where a jump has size exactly 0, the two sides may keep separate
        labels; both labellings give a valid (generalized) Jacobian.

    Examples
    --------
    >>> from sksparse_struct.mappings import prox_tv1d
    >>> prox_tv1d([1.0, 1.2, 3.0, 0.0], 0.3).round(3).tolist()
    [1.25, 1.25, 2.4, 0.3]
    """
    out, groups, was_1d = _prox_with_groups(prox_tv1d_rows, z, alpha)
    if return_groups:
        return restore_shape(out, was_1d), restore_shape(groups, was_1d)
    return restore_shape(out, was_1d)


def prox_oscar(z, alpha, return_groups=False):
    """Proximal operator of the OSCAR penalty ``alpha * sum_{i<j} max(|x_i|, |x_j|)``.

    Computed exactly as the prox of an ordered weighted l1 norm with weights
    ``alpha * (d - k)`` for the ``k``-th largest ``|x|`` (Zeng & Figueiredo
    2014): sort ``|z|``, subtract the weights, take the non-increasing
    isotonic fit (pool adjacent violators), clip at 0, unsort and restore the
    signs. O(d log d) per row.

    Parameters
    ----------
    z : array-like of shape (d,) or (n_rows, d)
        Finite values (``-inf`` is rejected).
    alpha : float
        Penalty strength, ``>= 0``; 0 gives the identity.
    return_groups : bool, default=False
        Also return the groups of equal ``|x|``.

    Returns
    -------
    x : ndarray of the shape of ``z``, float64
    groups : ndarray of the shape of ``z``, int64
        Only if ``return_groups``. Entries with the same ``|label|`` (in
        ``1..G``) form a group of equal ``|x|``; the sign of a label is the
        sign of ``x`` (``+`` where ``z == 0``); label 0 marks entries set to 0
        in the interior of the zero region (zero Jacobian row). A group whose
        value is exactly 0 at the boundary of that region keeps a non-zero
        label (the one-sided Jacobian of the non-clipped side).

    Notes
    -----
    :func:`oscarmax` is *not* the simplex projection of this prox (the
    absolute values break the composition rule when the projection shifts an
    entry across 0); it projects the prox of ``sum_{i<j} max(x_i, x_j)``
    instead, see :mod:`sksparse_struct.mappings._fusedmax`.

    Examples
    --------
    >>> from sksparse_struct.mappings import prox_oscar
    >>> prox_oscar([3.0, -3.04, 0.5, 0.1], 0.1).round(3).tolist()
    [2.77, -2.77, 0.4, 0.1]
    """
    out, groups, was_1d = _prox_with_groups(prox_oscar_rows, z, alpha)
    if return_groups:
        return restore_shape(out, was_1d), restore_shape(groups, was_1d)
    return restore_shape(out, was_1d)
