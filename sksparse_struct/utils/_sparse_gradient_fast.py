"""The write primitive of the online learners' sparse gradient, shared by every kernel.

Lives below every layer (feature kernels, estimators' kernels and the
learners all push gradient coordinates), while the gradient's structure
and the updates stay in ``learners._online_fast``.
"""

from ._numba import njit

__all__ = ["push"]


@njit
def push(idx, value, grad, col, touched, n_touched, stamp):
    """Add ``value`` to coordinate ``idx`` of the part whose gradient column is ``col``.

    ``grad`` is ``learners.SparseGradient.values``, ``col`` is ``2 * part``,
    ``touched`` the part's row of ``SparseGradient.touched`` and
    ``n_touched`` its count so far; ``stamp`` is the current step. Returns
    the new count.
    """
    grad[idx, col] += value
    if grad[idx, col + 1] != stamp:
        grad[idx, col + 1] = stamp
        touched[n_touched] = idx
        n_touched += 1
    return n_touched
