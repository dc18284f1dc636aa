"""Euclidean projection onto the capped simplex {lower <= p <= upper, sum p = radius}."""

import numpy as np

from ..utils._validation import (
    check_positive_scalar,
    check_scores,
    restore_shape,
)
from ._capped_simplex_fast import project_capped_rows_linear, project_capped_rows_sort

__all__ = ["project_capped_simplex"]

# Kernels by name: callers pass the method as a string and the chosen kernel
# is called from Python. A kernel is never handed to another jitted function:
# a cached numba function that receives another jitted function as an
# argument misses the on-disk cache in every new process.
_CAPPED_KERNELS = {
    "sort": project_capped_rows_sort,
    "linear": project_capped_rows_linear,
}
# The pivoting kernel runs in expected O(d) per row against O(d log d) for
# the sort, and was the faster of the two at every dimension tried, by a
# margin that grows with d (doc/benchmarks.rst, "Measurements behind
# implementation choices").
DEFAULT_CAPPED_METHOD = "linear"

# Slack for the feasibility checks: bounds summing to the radius up to
# rounding are accepted; the kernels then return p = bound.
_FEASIBILITY_RTOL = 1e-12


def shift_by_row_max(z_rows):
    """``z - max(z)`` for every row, as a new array.

    The capped projections are invariant to adding a constant to a row (the
    threshold absorbs it). Without the shift, scores of size 1e16 put the
    threshold at 1e16 too, and ``z - tau`` keeps no bit of the probabilities;
    shifted, the threshold stays within a few units of the bounds and
    ``z - tau`` is exact whatever the magnitude. A difference that overflows
    (scores more than ``finfo.max`` apart) becomes ``-inf``: that entry is so
    far below the largest that it sits at its lower bound.
    """
    with np.errstate(over="ignore"):
        return z_rows - z_rows.max(axis=1, keepdims=True)


def check_capped_method(method):
    """Return the kernel for a method name, raising a clear ValueError otherwise."""
    try:
        return _CAPPED_KERNELS[method]
    except (KeyError, TypeError):
        raise ValueError(
            f"method must be one of {sorted(_CAPPED_KERNELS)}, got {method!r}."
        ) from None


def _broadcast_bound(bound, z_rows, name, was_1d):
    """Broadcast a scalar or array bound to the rows of z (read-only result)."""
    arr = np.asarray(bound)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating)
        or np.issubdtype(arr.dtype, np.integer)
        or arr.dtype == bool
    ):
        raise ValueError(f"{name} must be real numbers, got dtype {arr.dtype}.")
    arr = arr.astype(np.float64, copy=False)
    target = z_rows.shape
    try:
        if was_1d and arr.ndim <= 1:
            out = np.broadcast_to(arr, target[1:])[np.newaxis, :]
        else:
            out = np.broadcast_to(arr, target)
    except ValueError:
        raise ValueError(
            f"{name} of shape {arr.shape} cannot be broadcast to the shape of z "
            f"{target[1:] if was_1d else target}."
        ) from None
    out = np.ascontiguousarray(out)
    if not np.isfinite(out).all():
        r, c = np.argwhere(~np.isfinite(out))[0]
        raise ValueError(
            f"{name} must be finite; row {int(r)}, position {int(c)} is {out[r, c]}."
        )
    return out


def check_capped_bounds(z_rows, lower, upper, radius, was_1d):
    """Validate and broadcast the bounds of a capped-simplex projection.

    Returns C-contiguous float64 ``(lo, hi)`` with the shape of ``z_rows``;
    raises ValueError naming the row when the feasible set is empty.
    """
    lo = _broadcast_bound(lower, z_rows, "lower", was_1d)
    hi = _broadcast_bound(upper, z_rows, "upper", was_1d)
    bad = lo > hi
    if bad.any():
        r, c = (int(v) for v in np.argwhere(bad)[0])
        raise ValueError(
            f"lower > upper at row {r}, position {c} ({lo[r, c]} > {hi[r, c]}): "
            "the box is empty."
        )
    slack = _FEASIBILITY_RTOL * max(1.0, abs(radius))
    low_sum = lo.sum(axis=1)
    short = low_sum > radius + slack
    if short.any():
        r = int(np.flatnonzero(short)[0])
        raise ValueError(
            f"the lower bounds of row {r} sum to {low_sum[r]:.6g} > radius "
            f"{radius:.6g}: the constraint set is empty (infeasible)."
        )
    # A masked score (-inf) keeps its entry at the lower bound.
    high_sum = np.where(np.isneginf(z_rows), lo, hi).sum(axis=1)
    short = high_sum < radius - slack
    if short.any():
        r = int(np.flatnonzero(short)[0])
        raise ValueError(
            f"the upper bounds of row {r} sum to {high_sum[r]:.6g} < radius "
            f"{radius:.6g} over the entries that are not masked: the constraint "
            "set is empty (infeasible)."
        )
    return lo, hi


def project_capped_simplex(z, lower=0.0, upper=1.0, radius=1.0, method=DEFAULT_CAPPED_METHOD):
    """Euclidean projection onto a capped simplex, row-wise.

    Solves ``argmin_p ||p - z||^2`` subject to ``lower <= p <= upper`` and
    ``sum(p) == radius`` for a vector or for every row of a 2-D array. The
    solution is ``p_i = clip(z_i - tau, lower_i, upper_i)`` for one threshold
    ``tau`` per row; entries at a bound are set to that bound exactly.

    Parameters
    ----------
    z : array-like of shape (d,) or (n_rows, d)
        Points to project. ``-inf`` entries are masked: they stay at their
        lower bound.
    lower : float or array-like broadcastable to ``z``, default=0.0
        Lower bounds (finite).
    upper : float or array-like broadcastable to ``z``, default=1.0
        Upper bounds (finite, ``>= lower``).
    radius : float, default=1.0
        Required sum of every row (``>= 0``).
    method : {"linear", "sort"}, default="linear"
        ``"sort"`` sorts the ``2 d`` breakpoints ``z - upper`` and
        ``z - lower`` (O(d log d)); ``"linear"`` searches them by pivoting
        with running sums (Pardalos & Kovoor 1990), expected O(d), with
        deterministic pivots so results never vary between calls. Both are
        exact and agree to rounding.

    Returns
    -------
    p : ndarray of the shape of ``z``, float64

    Raises
    ------
    ValueError
        If a row is infeasible (``sum(lower) > radius``, ``sum(upper) <
        radius`` over unmasked entries, or ``lower > upper``), a bound is not
        finite, or ``z`` contains NaN or ``+inf``. The message names the row.

    Examples
    --------
    >>> from sksparse_struct.mappings import project_capped_simplex
    >>> project_capped_simplex([0.5, 1.0, 0.1], upper=0.6).round(3).tolist()
    [0.4, 0.6, 0.0]
    >>> project_capped_simplex([0.5, 1.0, 0.1], lower=0.1, upper=0.6).round(3).tolist()
    [0.3, 0.6, 0.1]
    """
    kernel = check_capped_method(method)
    radius = check_positive_scalar(radius, "radius", allow_zero=True)
    z_rows, was_1d = check_scores(z, "z")
    lo, hi = check_capped_bounds(z_rows, lower, upper, radius, was_1d)
    out = np.empty_like(z_rows)
    kernel(shift_by_row_max(z_rows), lo, hi, radius, out)
    return restore_shape(out, was_1d)
