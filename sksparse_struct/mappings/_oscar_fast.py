"""Numba kernels for the OSCAR proximal operator and the grouped backward pass.

OSCAR (Bondell & Reich 2008) is ``alpha * sum_{i<j} max(|x_i|, |x_j|)``. With
``|x|`` sorted in decreasing order, the ``k``-th largest entry (``k = 1..d``)
is the max of exactly ``d - k`` pairs, so OSCAR is the ordered weighted l1
norm with weights ``w_k = alpha * (d - k)`` (Zeng & Figueiredo 2014). Its prox
is ``sign(z) * unsort(max(iso(|z|_sorted - w), 0))``, where ``iso`` is the
isotonic regression onto non-increasing sequences, computed by pool adjacent
violators (PAV). The PAV blocks are the groups of equal ``|x*|``.

The same code without absolute values (sort the signed entries, no clipping)
is the prox of ``alpha * sum_{i<j} max(x_i, x_j)``, used by oscarmax.

``signed_group_average_rows`` is the Jacobian product of the OSCAR, the
pairwise-max and the 1-D total variation proxes (Niculae 2018, Prop. 3.4): they share the encoding
of groups as signed integer labels.

No validation happens here: callers pass C-contiguous float64 rows of finite
values (``prox_pairwise_max_rows`` also accepts ``-inf``, which it maps to
``-inf`` in singleton groups), ``alpha >= 0`` and labels with
``|label| <= d``.
"""

import numpy as np

from ..utils._numba import njit


@njit
def _ordered_prox_row(z, alpha, use_abs, x, labels, order, block_sum, block_len):
    """Prox of an ordered weighted sum with weights ``alpha * (d - k)``.

    With ``use_abs`` this is the OSCAR prox (weights on the sorted ``|x|``);
    without, the prox of ``alpha * sum_{i<j} max(x_i, x_j)``, weights on the
    sorted signed ``x`` (no clipping, no signs), which equals OSCAR on the
    simplex. ``order``, ``block_sum`` and ``block_len`` are scratch arrays of
    length d. Writes x and signed labels; returns the number of groups.

    Label 0 marks entries whose block was clipped to 0 (OSCAR only; their
    Jacobian row is zero). A block whose isotonic value is exactly 0 keeps its
    label, so that ``alpha == 0`` or ``d == 1`` (where the prox is the
    identity) give the identity Jacobian.
    """
    d = z.shape[0]
    # Stable sort in decreasing order of the key: ties keep their index order.
    keys = np.empty(d)
    for j in range(d):
        keys[j] = -abs(z[j]) if use_abs else -z[j]
    order[:] = np.argsort(keys, kind="mergesort")

    # PAV for a non-increasing fit of v_k = key_(k) - alpha * (d - 1 - k)
    # (0-based k). A block is merged into its predecessor only on a strict
    # violation (mean larger than the predecessor's), so at alpha == 0 tied
    # entries stay separate, as the identity map requires; for alpha > 0 ties
    # always merge because the weights strictly decrease.
    n_blocks = 0
    for k in range(d):
        block_sum[n_blocks] = -keys[order[k]] - alpha * (d - 1 - k)
        block_len[n_blocks] = 1
        n_blocks += 1
        while n_blocks > 1 and (
            block_sum[n_blocks - 2] * block_len[n_blocks - 1]
            < block_sum[n_blocks - 1] * block_len[n_blocks - 2]
        ):
            block_sum[n_blocks - 2] += block_sum[n_blocks - 1]
            block_len[n_blocks - 2] += block_len[n_blocks - 1]
            n_blocks -= 1

    k = 0
    n_groups = 0
    for b in range(n_blocks):
        mean = block_sum[b] / block_len[b]
        if not use_abs:
            n_groups += 1
            for _ in range(block_len[b]):
                x[order[k]] = mean
                labels[order[k]] = n_groups
                k += 1
            continue
        if mean >= 0.0:
            n_groups += 1
            label = n_groups
            value = mean
        else:
            label = 0
            value = 0.0
        for _ in range(block_len[b]):
            i = order[k]
            k += 1
            if z[i] > 0.0:
                x[i] = value
                labels[i] = label
            elif z[i] < 0.0:
                x[i] = -value if value > 0.0 else 0.0  # no -0.0 in the output
                labels[i] = -label
            else:
                # |x_i| <= |z_i| for this prox, so z_i == 0 gives x_i == 0
                # (the block mean is then exactly 0, not a rounding artefact
                # we could trust as positive).
                x[i] = 0.0
                labels[i] = label
    return n_groups


@njit
def _ordered_prox_rows(z, alpha, use_abs, out, groups):
    d = z.shape[1]
    order = np.empty(d, dtype=np.int64)
    block_sum = np.empty(d)
    block_len = np.empty(d, dtype=np.int64)
    for i in range(z.shape[0]):
        _ordered_prox_row(
            z[i], alpha, use_abs, out[i], groups[i], order, block_sum, block_len
        )


@njit
def prox_oscar_rows(z, alpha, out, groups):
    """Row-wise OSCAR prox; ``groups`` (int64, like z) gets signed labels."""
    _ordered_prox_rows(z, alpha, True, out, groups)


@njit
def prox_pairwise_max_rows(z, alpha, out, groups):
    """Row-wise prox of ``alpha * sum_{i<j} max(x_i, x_j)`` (no absolute values).

    Equal to OSCAR on the non-negative orthant. Unlike the OSCAR prox, it
    commutes with adding a constant to every entry and it keeps the order of
    the entries, which is why projecting its output onto the simplex gives
    oscarmax exactly (see ``_fusedmax.py``). Labels are positive.
    """
    _ordered_prox_rows(z, alpha, False, out, groups)


@njit
def signed_group_average_rows(groups, g, out):
    """out = J g with J[i, j] = sign(l_i l_j) / |G| if |l_i| == |l_j| != 0.

    ``G`` is the set of entries of the row sharing the label magnitude. This
    is the Jacobian of the TV and OSCAR proxes (symmetric, so also J^T g).
    O(d) per row.
    """
    d = g.shape[1]
    sums = np.zeros(d + 1)
    counts = np.zeros(d + 1, dtype=np.int64)
    for i in range(g.shape[0]):
        for a in range(d + 1):
            sums[a] = 0.0
            counts[a] = 0
        for j in range(d):
            label = groups[i, j]
            if label > 0:
                sums[label] += g[i, j]
                counts[label] += 1
            elif label < 0:
                sums[-label] -= g[i, j]
                counts[-label] += 1
        for j in range(d):
            label = groups[i, j]
            if label > 0:
                out[i, j] = sums[label] / counts[label]
            elif label < 0:
                out[i, j] = -sums[-label] / counts[-label]
            else:
                out[i, j] = 0.0
