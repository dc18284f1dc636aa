"""Rows of a positively homogeneous function computed at a power-of-two scale.

The losses and regularized maxima of the mappings are positively
homogeneous of degree one in the scores and the temperature together,
``f_t(z) = c f_{t/c}(z / c)`` for ``c > 0``, with the same maximiser. Rows
whose terms could overflow are computed at ``c = 2**k``: exactly (scaling
by a power of two does not round, but for the underflow of the tiniest
terms), and the value scaled back is ``inf`` only when it is beyond the
float64 range.
"""

import numpy as np

__all__ = ["LOG2_IN_RANGE", "rows_at_scale"]

#: Rows whose terms may reach ``2**LOG2_IN_RANGE`` in magnitude are scaled.
LOG2_IN_RANGE = 1020
# ... to terms of at most about 2**_LOG2_SCALED.
_LOG2_SCALED = 1000


def rows_at_scale(compute, rows, temperature, log2_size, *row_args):
    """``compute(rows, temperature, *row_args)``, the rows out of range at a smaller scale.

    Parameters
    ----------
    compute : callable
        ``compute(rows, temperature, *row_args) -> (values, out_rows)``,
        positively homogeneous of degree one in ``(rows, temperature)``
        (``out_rows`` of degree zero, e.g. the maximiser).
    rows : ndarray of shape (n, d)
    temperature : float
    log2_size : ndarray of shape (n,) or None
        An upper bound on ``log2`` of the magnitude of every term of each
        row's computation; None when every row is known to be in range.
    *row_args : ndarray
        Further per-row arguments (e.g. targets), selected with the rows.

    Returns
    -------
    values : ndarray of shape (n,)
    out_rows : ndarray of shape (n, d)
    """
    big = None if log2_size is None else log2_size > LOG2_IN_RANGE
    if big is None or not big.any():
        return compute(rows, temperature, *row_args)
    values = np.empty(rows.shape[0])
    out_rows = np.empty_like(rows)
    small = ~big
    if small.any():
        values[small], out_rows[small] = compute(rows[small], temperature,
                                                 *(a[small] for a in row_args))
    k = int(np.ceil(log2_size[big].max())) - _LOG2_SCALED
    # The smallest positive float if the temperature underflows: a change far
    # below the rounding of the scores (at least 2**1019).
    scaled_temperature = max(np.ldexp(temperature, -k), np.nextafter(0.0, 1.0))
    scaled_values, out_rows[big] = compute(np.ldexp(rows[big], -k), scaled_temperature,
                                           *(a[big] for a in row_args))
    with np.errstate(over="ignore"):
        values[big] = np.ldexp(scaled_values, k)
    return values, out_rows
