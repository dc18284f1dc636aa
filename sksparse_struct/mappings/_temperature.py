"""Scores divided by a temperature, without overflow."""

import numpy as np

__all__ = ["divide_by_temperature", "wide_rows"]


def divide_by_temperature(z_rows, temperature):
    """``z / temperature`` for validated rows, never overflowing to ``+inf``.

    Every mapping of this subpackage depends on ``z / temperature`` only up
    to a constant added to each row. Rows are returned as ``z / temperature``
    (the very floats callers always computed) unless that overflows for some
    finite score, e.g. scores of 1e300 or a subnormal temperature such as
    1e-310; those rows are computed as ``(z - max(z)) / temperature``
    instead, where only scores far below the row max can overflow, to
    ``-inf``: they get probability 0, as they would anyway.

    Returns
    -------
    rows : ndarray of the shape of ``z_rows``
        A new array unless ``temperature == 1``.
    shifted : bool
        Whether some row had to be shifted.
    """
    if temperature == 1.0:
        return z_rows, False
    with np.errstate(over="ignore", under="ignore"):
        s = z_rows / temperature
        over = (np.isinf(s) & np.isfinite(z_rows)).any(axis=1)
        if over.any():
            z_over = z_rows[over]
            s[over] = (z_over - z_over.max(axis=1, keepdims=True)) / temperature
    return s, bool(over.any())


def wide_rows(z_rows):
    """Rows with finite scores more than ``finfo.max`` apart: ``z - max(z)`` overflows.

    Such an entry's shifted score is ``-inf``, i.e. probability 0, which is
    right unless the temperature is near ``finfo.max`` too (e.g. scores
    ``[1e308, -1e308]`` at temperature 1e308). At half scale, ``z / 2 -
    max(z) / 2`` cannot overflow, and the scaling by 2 is exact.

    Returns
    -------
    wide : ndarray of shape (n_rows,), bool
    """
    with np.errstate(over="ignore"):
        shifted = z_rows - z_rows.max(axis=1, keepdims=True)
    return (np.isneginf(shifted) & ~np.isneginf(z_rows)).any(axis=1)
