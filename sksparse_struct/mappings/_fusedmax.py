"""Fusedmax and oscarmax: sparse attention that fuses weights into groups.

Both are regularized maxes ``argmin_{p in simplex} 1/2 ||p - z||^2 + alpha *
penalty(p)`` (Niculae 2018, sec. 3.5), computed without iterations as the
simplex projection of a prox (Prop. 3.3 of the thesis). The backward pass
chains the sparsemax Jacobian of the projection with the group-averaging
Jacobian of the prox (Prop. 3.4), using only the output ``p`` and the groups.

Why the composition is exact: ``P(prox_g(z))`` solves the problem with
penalty ``g`` whenever ``dg(y)`` is contained in ``dg(P(y))`` for every ``y``
(Yu 2013). The simplex projection ``P(y) = max(y - tau, 0)`` keeps the order of
the entries, only creating ties, so this holds for penalties whose
subdifferential depends only on the order of the entries: the 1-D total
variation (signs of neighbour differences), and ``sum_{i<j} max(x_i, x_j)``.
It does *not* hold for OSCAR written with absolute values, ``sum_{i<j}
max(|x_i|, |x_j|)``: the shift ``-tau`` can flip the sign of an entry. Indeed
``P(prox_oscar(z))`` is not even invariant to adding a constant to ``z``,
while oscarmax is, and it can differ from the definition by 0.3 in some
entries (e.g. whenever the OSCAR prox is all zeros it returns the uniform
distribution). Since the two penalties agree on the simplex, oscarmax uses the
prox of the pairwise max without absolute values, and is exact.
"""

import numpy as np

from ..utils._validation import (
    check_backward_inputs,
    check_positive_scalar,
    check_same_rows,
    check_scores,
    restore_shape,
)
from ._oscar_fast import prox_pairwise_max_rows, signed_group_average_rows
from ._prox import ordered_prox_rows
from ._simplex_fast import project_simplex_rows, sparsemax_backward_rows
from ._tv_fast import prox_tv1d_rows

__all__ = ["fusedmax", "fusedmax_backward", "oscarmax", "oscarmax_backward"]


# Rows whose largest finite score exceeds this in magnitude, and every row
# when alpha does, go through the prox shifted by that score (see
# _prepare_tv_rows). Below it the prox's absolute rounding is about 1e-10.
_MAX_UNSHIFTED = 2.0**20
# Largest alpha: the prox's intermediate values reach a few times 8 * alpha.
_MAX_TV_ALPHA = np.finfo(np.float64).max / 64


def _replace_masks_for_tv(z_rows, alpha):
    """Replace -inf by a finite score low enough to get probability 0.

    The TV prox moves each entry by at most ``2 * alpha`` (``x = z - D^T v``
    with ``|v| <= alpha``), and the simplex threshold is at least
    ``max(x) - 1 >= max(z) - 2 * alpha - 1``; so any score at most
    ``max(z) - 4 * alpha - 1`` gets probability 0, such as
    ``max(z) - 4 * alpha - 2`` (as long as rounding keeps it 1 lower; see
    :func:`_prepare_tv_rows`). Once those entries get 0, the substituted
    objective equals the masked one plus a constant, so the result is
    exactly the masked fusedmax (and does not depend on the substitute).
    """
    masked = np.isneginf(z_rows)
    if not masked.any():
        return z_rows
    row_max = np.max(np.where(masked, -np.inf, z_rows), axis=1, keepdims=True)
    return np.where(masked, row_max - 4.0 * alpha - 2.0, z_rows)


def _prepare_tv_rows(z_rows, alpha):
    """Rows for the TV prox: masks replaced, extreme rows shifted to max 0.

    Fusedmax only depends on differences of scores. Rows with a largest
    score above ``_MAX_UNSHIFTED`` in magnitude (and all rows for a larger
    ``alpha``) are shifted by that score, so that the prox keeps its
    absolute precision (at 1e20 its rounding exceeds ``alpha = 0.1``) and
    the masks' substitute stays below the other scores (at 1e17, ``max - 4
    * alpha - 2`` rounds back to ``max``). In
    those rows, every entry more than ``8 * alpha + 4`` below the max, masked
    or not, is raised to that floor: it gets probability 0 either way (see
    :func:`_replace_masks_for_tv`), and the prox never meets a value near
    the edge of the float range. Other rows are left as they were.
    """
    finite_max = np.max(np.where(np.isneginf(z_rows), -np.inf, z_rows), axis=1)
    shift = np.abs(finite_max) > _MAX_UNSHIFTED
    if alpha > _MAX_UNSHIFTED:
        shift[:] = True
    if not shift.any():
        return _replace_masks_for_tv(z_rows, alpha)
    out = np.empty_like(z_rows)
    out[~shift] = _replace_masks_for_tv(z_rows[~shift], alpha)
    with np.errstate(over="ignore"):  # more than finfo.max below: -inf, then the floor
        shifted = z_rows[shift] - finite_max[shift, np.newaxis]
    out[shift] = np.maximum(shifted, -(8.0 * alpha + 4.0))
    return out


def _project_prox(prox_rows, z, alpha, return_groups, substitute_masks):
    alpha = check_positive_scalar(alpha, "alpha", allow_zero=True)
    z_rows, was_1d = check_scores(z, "z")
    if substitute_masks:
        if alpha > _MAX_TV_ALPHA:
            raise ValueError(
                f"fusedmax: alpha must be at most finfo(float64).max / 64 = "
                f"{_MAX_TV_ALPHA:.4g}, got {alpha!r}."
            )
        z_rows = _prepare_tv_rows(z_rows, alpha)
    x = np.empty_like(z_rows)
    groups = np.empty(z_rows.shape, dtype=np.int64)
    if prox_rows is prox_pairwise_max_rows:
        ordered_prox_rows(prox_rows, z_rows, alpha, x, groups)
    else:
        prox_rows(z_rows, alpha, x, groups)
    p = np.empty_like(z_rows)
    project_simplex_rows(x, 1.0, p)
    if return_groups:
        return restore_shape(p, was_1d), restore_shape(groups, was_1d)
    return restore_shape(p, was_1d)


def _check_groups(groups, p_rows):
    """Validate the group labels returned by a forward pass."""
    arr = np.asarray(groups)
    if not (np.issubdtype(arr.dtype, np.integer) or arr.size == 0):
        raise ValueError(
            f"groups must be an integer array (as returned by the forward pass "
            f"with return_groups=True), got dtype {arr.dtype}."
        )
    rows = np.ascontiguousarray(
        arr.reshape(1, -1) if arr.ndim == 1 else arr, dtype=np.int64
    )
    check_same_rows(p_rows, rows, "p", "groups")
    too_big = np.abs(rows) > rows.shape[1]
    if too_big.any():
        r, c = (int(v) for v in np.argwhere(too_big)[0])
        raise ValueError(
            f"groups has label {rows[r, c]} at row {r}, position {c}; labels "
            f"of a row of length {rows.shape[1]} lie in [-{rows.shape[1]}, "
            f"{rows.shape[1]}]."
        )
    return rows


def _backward(p, groups, dp):
    p_rows, dp_rows, was_1d = check_backward_inputs(p, dp)
    group_rows = _check_groups(groups, p_rows)
    # dz = J_prox^T J_P^T dp: the projection's (sparsemax) Jacobian first,
    # with support p > 0, then the prox's group averaging.
    g = np.empty_like(p_rows)
    sparsemax_backward_rows(p_rows, dp_rows, 1.0, g)
    out = np.empty_like(p_rows)
    signed_group_average_rows(group_rows, g, out)
    return restore_shape(out, was_1d)


def fusedmax(z, alpha=0.1, return_groups=False):
    """Fusedmax: sparse attention favouring contiguous segments of equal weight.

    ``argmin_{p in simplex} 1/2 ||p - z||^2 + alpha * sum_i |p[i+1] - p[i]|``
    (Niculae & Blondel 2017; Niculae 2018, sec. 3.5), computed exactly as the
    simplex projection of :func:`prox_tv1d` ``(z, alpha)``.

    Parameters
    ----------
    z : array-like of shape (d,) or (n_rows, d)
        Finite scores, in sequence order; applied to every row of a 2-D array.
        float32 input is computed in float64. ``-inf`` entries are masked:
        the result is the minimiser with those probabilities fixed to 0 (the
        limit of ``z_i -> -inf``). A masked entry stays in the sequence as a
        zero, so its neighbours still pay ``alpha * p`` for the jump to it:
        masking is not the same as dropping the entry (to ignore padding at
        the end of a sequence, slice it off instead). A row of only ``-inf``
        is an error.
    alpha : float, default=0.1
        Strength of the fusion (``>= 0``, at most ``finfo(float64).max / 64``);
        0 gives :func:`sparsemax`. The default is the thesis' recommended
        value.
    return_groups : bool, default=False
        Also return the segments of the prox, needed by
        :func:`fusedmax_backward`.

    Returns
    -------
    p : ndarray of the shape of ``z``, float64
        Rows on the probability simplex.
    groups : ndarray of the shape of ``z``, int64
        Only if ``return_groups``: positive labels of the segments of the
        prox output (see :func:`prox_tv1d`).

    See Also
    --------
    fusedmax_backward : the backward pass.
    oscarmax : fuses entries regardless of their positions.

    Examples
    --------
    >>> from sksparse_struct.mappings import fusedmax
    >>> p, groups = fusedmax([1.0, 1.1, 0.9, -1.0], alpha=0.1, return_groups=True)
    >>> p.round(3).tolist(), groups.tolist()
    ([0.367, 0.367, 0.267, 0.0], [1, 1, 2, 3])
    """
    return _project_prox(prox_tv1d_rows, z, alpha, return_groups, True)


def oscarmax(z, alpha=0.01, return_groups=False):
    """Oscarmax: sparse attention favouring clusters of equal weight.

    ``argmin_{p in simplex} 1/2 ||p - z||^2 + alpha * sum_{i<j} max(|p_i|, |p_j|)``
    (Niculae & Blondel 2017; Niculae 2018, sec. 3.5), computed exactly as the
    simplex projection of the prox of ``alpha * sum_{i<j} max(x_i, x_j)``,
    which equals the OSCAR penalty on the simplex. Note: the literal recipe of
    the thesis' Prop. 3.3, the projection of :func:`prox_oscar` (with absolute
    values), is *not* the solution in general (it is not invariant to adding
    a constant to ``z``); see the module docstring.

    Parameters
    ----------
    z : array-like of shape (d,) or (n_rows, d)
        Scores; applied to every row of a 2-D array. ``-inf`` entries are
        masked: they get probability exactly 0 and the result equals oscarmax
        of the other entries (a zero weight adds ``sum_j p_j = 1``, a
        constant, to the penalty of each pair it belongs to). A row of only
        ``-inf`` is an error.
    alpha : float, default=0.01
        Strength of the clustering (``>= 0``); 0 gives :func:`sparsemax`. The
        default is the thesis' recommended value.
    return_groups : bool, default=False
        Also return the groups of the prox, needed by
        :func:`oscarmax_backward`.

    Returns
    -------
    p : ndarray of the shape of ``z``, float64
        Rows on the probability simplex; equal scores get equal weights, and
        scores closer than about ``alpha`` are fused.
    groups : ndarray of the shape of ``z``, int64
        Only if ``return_groups``: labels ``1..G`` of the groups of equal
        prox values (numbered from the largest value down). The encoding is
        the one of :func:`prox_oscar` (signed labels, 0 for a zero Jacobian
        row), here with positive labels only.

    See Also
    --------
    oscarmax_backward : the backward pass.
    fusedmax : fuses contiguous entries only.

    Examples
    --------
    >>> from sksparse_struct.mappings import oscarmax
    >>> oscarmax([1.0, 0.2, 1.05, -1.0], alpha=0.1).round(3).tolist()
    [0.5, 0.0, 0.5, 0.0]
    """
    # -inf entries sort last with the smallest weights and stay -inf through
    # the prox (alone in their blocks); the other entries' weights are shifted
    # by a constant, which the projection ignores: that is exact masking.
    return _project_prox(prox_pairwise_max_rows, z, alpha, return_groups, False)


def fusedmax_backward(p, groups, dp):
    """Backward pass of :func:`fusedmax`: ``J^T dp`` from the forward output.

    ``J = J_prox J_P`` by the chain rule (Niculae 2018, Prop. 3.4), with
    ``J_P`` the sparsemax Jacobian on the support of ``p`` and ``J_prox`` the
    average over each segment of ``groups``. Both factors are symmetric, so
    ``J dp`` is obtained by applying them in the opposite order; this function
    returns ``J^T dp`` (the gradient with respect to ``z``). O(d) per row.

    Parameters
    ----------
    p : array-like of shape (d,) or (n_rows, d)
        Output of :func:`fusedmax`.
    groups : array-like of int of the shape of ``p``
        The groups returned by ``fusedmax(z, alpha, return_groups=True)``.
    dp : array-like of the shape of ``p``
        Gradient of a loss with respect to ``p``.

    Returns
    -------
    dz : ndarray of the shape of ``p``

    Examples
    --------
    >>> from sksparse_struct.mappings import fusedmax, fusedmax_backward
    >>> p, groups = fusedmax([1.0, 1.1, 0.9, -1.0], alpha=0.1, return_groups=True)
    >>> fusedmax_backward(p, groups, [1.0, 0.0, 0.0, 0.0]).round(3).tolist()
    [0.167, 0.167, -0.333, 0.0]
    """
    return _backward(p, groups, dp)


def oscarmax_backward(p, groups, dp):
    """Backward pass of :func:`oscarmax`: ``J^T dp`` from the forward output.

    ``J = J_prox J_P`` (Niculae 2018, Prop. 3.4): the sparsemax Jacobian on
    the support of ``p``, then the average over each group of the prox
    (signed average for signed labels; rows with label 0 are zero, so the
    groups of :func:`prox_oscar` are accepted too). O(d) per row.

    Parameters
    ----------
    p : array-like of shape (d,) or (n_rows, d)
        Output of :func:`oscarmax`.
    groups : array-like of int of the shape of ``p``
        The groups returned by ``oscarmax(z, alpha, return_groups=True)``.
    dp : array-like of the shape of ``p``
        Gradient of a loss with respect to ``p``.

    Returns
    -------
    dz : ndarray of the shape of ``p``

    Examples
    --------
    >>> from sksparse_struct.mappings import oscarmax, oscarmax_backward
    >>> p, groups = oscarmax([1.0, 0.5, 0.2], alpha=0.01, return_groups=True)
    >>> oscarmax_backward(p, groups, [1.0, 0.0, 0.0]).round(3).tolist()
    [0.5, -0.5, 0.0]
    """
    return _backward(p, groups, dp)
