"""Numba kernel for the proximal operator of 1-D total variation (fused lasso).

``prox_tv1d_rows`` solves, for every row ``y``,

    argmin_x  1/2 ||x - y||^2 + lam * sum_i |x[i+1] - x[i]|

exactly, with the direct (non-iterative) algorithm of Condat (2013), and
records the segments it writes as group labels for the backward pass.

How the algorithm works (our own summary of the paper). Write
``r[k] = sum_{j <= k} (y[j] - x[j])``. ``x`` is optimal iff ``|r[k]| <= lam``
for every ``k``, ``r[d - 1] == 0``, and ``r[k] == +lam`` where ``x`` jumps down
after ``k`` (``-lam`` where it jumps up). The kernel scans left to right,
keeping the range ``[vmin, vmax]`` of values the current segment (started at
``k0``) may still take without breaking ``|r| <= lam`` on the scanned prefix,
together with ``umin``/``umax``, the value of ``r`` at the scan position if the
segment had value ``vmin``/``vmax``, and the last positions ``kminus``/``kplus``
where those bounds were tight. When the next sample cannot be reached even by
the extreme value, the segment is closed at the tight position with that value
(a jump down if the lowest value was too high, up if the highest was too low),
and the scan restarts right after it. At the end, ``r[d - 1] == 0`` decides the
value of the last segment, or forces one more closure.

No validation happens here: callers pass C-contiguous float64 rows of finite
values and ``lam >= 0``.
"""

from ..utils._numba import njit


@njit
def _write_segment(x, labels, start, stop, value, label):
    """x[start:stop] = value, labels[start:stop] = label; at least one entry."""
    x[start] = value
    labels[start] = label
    for j in range(start + 1, stop):
        x[j] = value
        labels[j] = label


@njit
def _constant_if_enough(y, lam, x, labels):
    """Fill x with mean(y) and return True when lam is large enough for it.

    The constant solution is optimal iff every partial sum of ``y - mean(y)``
    stays within ``[-lam, lam]``. Checking this first makes the large-``lam``
    regime exact: the scan below would otherwise compute the mean through
    quantities of size ``lam``, losing ``lam * eps`` of absolute precision.
    """
    d = y.shape[0]
    mean = 0.0
    for j in range(d):
        mean += y[j]
    mean /= d
    partial = 0.0
    for j in range(d - 1):
        partial += y[j] - mean
        if partial > lam or partial < -lam:
            return False
    for j in range(d):
        x[j] = mean
        labels[j] = 1
    return True


@njit
def prox_tv1d_row(y, lam, x, labels):
    """Prox of ``lam * TV`` at one row ``y``; write x and 1-based segment labels.

    Returns the number of segments. Entries of one segment are assigned from
    one float, so they are exactly equal; labels come from the segments the
    algorithm closes, never from comparing output values afterwards.
    """
    d = y.shape[0]
    if lam == 0.0 or d == 1:
        # Identity map: every entry its own group, so the Jacobian is I (the
        # scan would fuse equal neighbours, which is wrong at lam == 0).
        for j in range(d):
            x[j] = y[j]
            labels[j] = j + 1
        return d
    if _constant_if_enough(y, lam, x, labels):
        return 1

    k = 0
    k0 = 0
    kminus = 0
    kplus = 0
    vmin = y[0] - lam
    vmax = y[0] + lam
    umin = lam
    umax = -lam
    n_groups = 0
    while True:
        while k == d - 1:
            if umin < 0.0:
                # Even the lowest admissible value leaves r[d-1] < 0: the
                # segment ends at kminus with value vmin and a jump down.
                n_groups += 1
                _write_segment(x, labels, k0, kminus + 1, vmin, n_groups)
                k0 = kminus + 1
                k = k0
                kminus = k0
                kplus = k0
                vmin = y[k]
                vmax = y[k] + 2.0 * lam
                umin = lam
                umax = -lam
            elif umax > 0.0:
                # Symmetric case: jump up after kplus at value vmax.
                n_groups += 1
                _write_segment(x, labels, k0, kplus + 1, vmax, n_groups)
                k0 = kplus + 1
                k = k0
                kminus = k0
                kplus = k0
                vmin = y[k] - 2.0 * lam
                vmax = y[k]
                umin = lam
                umax = -lam
            else:
                # r[d-1] == 0 is reachable inside [vmin, vmax]: last segment.
                n_groups += 1
                value = vmin + umin / (k - k0 + 1)
                _write_segment(x, labels, k0, d, value, n_groups)
                return n_groups
        if y[k + 1] + umin < vmin - lam:
            n_groups += 1
            _write_segment(x, labels, k0, kminus + 1, vmin, n_groups)
            k0 = kminus + 1
            k = k0
            kminus = k0
            kplus = k0
            vmin = y[k]
            vmax = y[k] + 2.0 * lam
            umin = lam
            umax = -lam
        elif y[k + 1] + umax > vmax + lam:
            n_groups += 1
            _write_segment(x, labels, k0, kplus + 1, vmax, n_groups)
            k0 = kplus + 1
            k = k0
            kminus = k0
            kplus = k0
            vmin = y[k] - 2.0 * lam
            vmax = y[k]
            umin = lam
            umax = -lam
        else:
            k += 1
            umin += y[k] - vmin
            umax += y[k] - vmax
            if umin >= lam:
                # The lowest value would push r above lam: raise it.
                vmin += (umin - lam) / (k - k0 + 1)
                umin = lam
                kminus = k
            if umax <= -lam:
                vmax += (umax + lam) / (k - k0 + 1)
                umax = -lam
                kplus = k


@njit
def prox_tv1d_rows(z, lam, out, groups):
    """Row-wise :func:`prox_tv1d_row`; ``groups`` is an int64 array like z."""
    for i in range(z.shape[0]):
        prox_tv1d_row(z[i], lam, out[i], groups[i])
