"""Numba kernels for the linear-chain (sequence) structure.

A sequence of ``n`` positions with ``K`` labels has scores ``unary[i, a]``
(label ``a`` at position ``i``; start and end scores are already added to the
first and last rows by the caller) and ``trans[a, b]`` (label ``a`` followed
by ``b``). ``-inf`` marks a forbidden label or transition.

Forward-backward in log space, but fast
---------------------------------------
The textbook log-space recursion ``log_alpha[i, b] = unary[i, b] +
logsumexp_a(log_alpha[i-1, a] + trans[a, b])`` costs ``K**2`` calls to
``exp`` per position. Instead, the kernels exponentiate the transitions once,
shifted by their column maximum, ``E[a, b] = exp(trans[a, b] - colmax[b])``,
and combine them with messages shifted by *their* maximum::

    s[b] = sum_a exp(log_alpha[i-1, a] - m) * E[a, b],  m = max(log_alpha[i-1])
    log_alpha[i, b] = unary[i, b] + colmax[b] + log(s[b])    (+ m)

    g[c] = unary[i+1, c] + log_beta[i+1, c],  M = max(g + colmax)
    t[a] = sum_c E[a, c] * exp(g[c] + colmax[c] - M)
    log_beta[i, a] = log(t[a])                                (+ M)

so a position costs ``K**2`` multiply-adds and ``K`` exponentials. The
shifts ``m`` and ``M`` are left out of the stored messages (only their sum
enters log Z): the messages stay of the order of the scores rather than
growing with the position, so that the marginals, normalized position by
position, keep full relative accuracy even when log Z is huge. Both
factors of a term are at most 1, so a term loses accuracy (underflow) only
when its true value is below the smallest normal double (about ``2.2e-308``).
When a sum is ``>= 1e-150`` the lost terms change it by a relative
``K * 1e-158`` at most, which is invisible; when it is smaller, the kernels
recompute that one entry by the exact log-sum-exp (this only happens with
extreme scores, e.g. a transition of ``-1e4`` that the best path must take).
The results are thus those of the log-space recursion for any finite or
``-inf`` scores. Inner loops run over the last, contiguous index without
reductions, so that LLVM vectorizes them without fastmath.

The same scaled quantities give the conditional probabilities
``P(y[i-1] = a | y[i] = b)`` (forward) and ``P(y[i+1] = c | y[i] = a)``
(backward) as ratios of numbers in ``[0, 1]``; the transition marginals and
the backward pass of the marginals are built from them (see
:func:`marginals_vjp`).

No validation happens here: callers pass C-contiguous float64 arrays with
``n >= 1``, ``K >= 1``, values finite or ``-inf``.
"""

import numpy as np

from ..utils._numba import njit

# Below this value a scaled sum may have lost terms to underflow: the entry is
# recomputed in exact log space (see the module docstring).
_SCALED_MIN = 1e-150


@njit
def _transpose(x):
    K0, K1 = x.shape
    out = np.empty((K1, K0))
    for a in range(K0):
        for b in range(K1):
            out[b, a] = x[a, b]
    return out


@njit
def viterbi(unary, trans):
    """Best label sequence, lexicographically smallest among exact ties.

    A backward pass computes ``suffix[i, a]``, the best score of positions
    ``i+1 .. n-1`` given label ``a`` at position ``i``; a forward pass then
    picks at each position the *lowest* label that completes an optimal
    sequence. Among the sequences of maximal score (as computed), this
    returns the lexicographically smallest one.

    Returns ``(labels, score)``; ``score == -inf`` means no sequence has a
    finite score (``labels`` is then meaningless).
    """
    n, K = unary.shape
    trans_t = _transpose(trans)
    suffix = np.empty((n, K))
    for a in range(K):
        suffix[n - 1, a] = 0.0
    for i in range(n - 2, -1, -1):
        best = suffix[i]
        for a in range(K):
            best[a] = -np.inf
        for c in range(K):
            ahead = unary[i + 1, c] + suffix[i + 1, c]
            row = trans_t[c]
            for a in range(K):
                v = row[a] + ahead
                best[a] = v if v > best[a] else best[a]
    labels = np.zeros(n, dtype=np.int64)
    top = -np.inf
    arg = 0
    for a in range(K):
        v = unary[0, a] + suffix[0, a]
        if v > top:  # strict: the lowest label wins a tie
            top = v
            arg = a
    if top == -np.inf:
        return labels, top
    labels[0] = arg
    for i in range(1, n):
        prev = labels[i - 1]
        best_here = -np.inf
        arg = 0
        for b in range(K):
            # Same association as in the backward pass, so that the labels
            # reaching suffix[i - 1, prev] are found exactly.
            v = trans[prev, b] + (unary[i, b] + suffix[i, b])
            if v > best_here:
                best_here = v
                arg = b
        labels[i] = arg
    return labels, top


@njit
def first_dead_position(unary, trans):
    """First position where no label is reachable with a finite score, or -1.

    A label is reachable at position ``i`` if some prefix ending in it has a
    finite score. Used only to word the error of an infeasible instance.
    """
    n, K = unary.shape
    reach = np.empty(K, dtype=np.bool_)
    nxt = np.empty(K, dtype=np.bool_)
    alive = False
    for a in range(K):
        reach[a] = unary[0, a] > -np.inf
        alive = alive or reach[a]
    if not alive:
        return 0
    for i in range(1, n):
        alive = False
        for b in range(K):
            ok = False
            if unary[i, b] > -np.inf:
                for a in range(K):
                    if reach[a] and trans[a, b] > -np.inf:
                        ok = True
                        break
            nxt[b] = ok
            alive = alive or ok
        if not alive:
            return i
        for b in range(K):
            reach[b] = nxt[b]
    return -1


@njit
def _log_sum_exp(x):
    m = -np.inf
    for v in x:
        if v > m:
            m = v
    if m == -np.inf:
        return m
    total = 0.0
    for v in x:
        total += np.exp(v - m)
    return m + np.log(total)


@njit
def _exp_transitions(trans):
    """``E = exp(trans - colmax)`` (0 where forbidden), ``E`` transposed, ``colmax``."""
    K = trans.shape[0]
    colmax = np.full(K, -np.inf)
    for a in range(K):
        for b in range(K):
            if trans[a, b] > colmax[b]:
                colmax[b] = trans[a, b]
    exp_col = np.zeros((K, K))
    for a in range(K):
        for b in range(K):
            v = trans[a, b]
            if v > -np.inf:  # then colmax[b] is finite
                exp_col[a, b] = np.exp(v - colmax[b])
    return exp_col, _transpose(exp_col), colmax


@njit
def _forward(unary, trans, exp_col, colmax):
    """Forward messages, each position's shifted by the previous one's maximum.

    Returns ``log_alpha`` (n, K) with ``log_alpha[i, b]`` the log-sum of the
    scores of the prefixes ending with label ``b`` at position ``i``, minus
    ``offset[i]`` (so that entries stay of the order of the scores instead of
    growing with ``i``, which would cost accuracy); ``shift[i] = offset[i] -
    offset[i - 1] = max(log_alpha[i - 1])``; ``alpha_hat[i] =
    exp(log_alpha[i] - shift[i + 1])`` for ``i < n - 1``; ``col_sum[i, b]``
    (``i >= 1``), the scaled sum ``s[b]`` of the module docstring, so that
    ``P(y[i-1] = a | y[i] = b) = alpha_hat[i-1, a] * E[a, b] / col_sum[i, b]``
    when ``col_sum[i, b] >= _SCALED_MIN``; and ``log Z``.
    """
    n, K = unary.shape
    log_alpha = np.empty((n, K))
    alpha_hat = np.zeros((n, K))
    col_sum = np.zeros((n, K))
    shift = np.zeros(n)
    s = np.empty(K)
    offset = 0.0
    for a in range(K):
        log_alpha[0, a] = unary[0, a]
    for i in range(1, n):
        m = -np.inf
        for a in range(K):
            if log_alpha[i - 1, a] > m:
                m = log_alpha[i - 1, a]
        if m == -np.inf:  # nothing reachable: infeasible, the caller raises
            return log_alpha, alpha_hat, col_sum, shift, -np.inf
        shift[i] = m
        offset += m
        for b in range(K):
            s[b] = 0.0
        for a in range(K):
            w = np.exp(log_alpha[i - 1, a] - m)
            alpha_hat[i - 1, a] = w
            if w != 0.0:
                row = exp_col[a]
                for b in range(K):
                    s[b] += w * row[b]
        for b in range(K):
            col_sum[i, b] = s[b]
            u = unary[i, b]
            if u == -np.inf or colmax[b] == -np.inf:
                log_alpha[i, b] = -np.inf
            elif s[b] >= _SCALED_MIN:
                log_alpha[i, b] = u + (colmax[b] + np.log(s[b]))
            else:
                top = -np.inf
                for a in range(K):
                    v = log_alpha[i - 1, a] + trans[a, b]
                    if v > top:
                        top = v
                if top == -np.inf:
                    log_alpha[i, b] = -np.inf
                else:
                    total = 0.0
                    for a in range(K):
                        total += np.exp(log_alpha[i - 1, a] + trans[a, b] - top)
                    log_alpha[i, b] = u + ((top - m) + np.log(total))
    return log_alpha, alpha_hat, col_sum, shift, offset + _log_sum_exp(log_alpha[n - 1])


@njit
def _backward(unary, trans, exp_col_t, colmax):
    """Backward messages, each position's shifted by the next one's maximum.

    Returns ``log_beta`` (n, K) with ``log_beta[i, a]`` the log-sum of the
    scores of positions ``i+1 ..`` given label ``a`` at ``i``, up to a
    per-position offset; ``shift[i]`` (``i < n - 1``), the ``M`` of the module
    docstring; ``ahead_hat[i + 1, c] = exp(g[c] - M)`` and ``row_sum[i, a] =
    t[a]``, so that ``P(y[i+1] = c | y[i] = a) = E[a, c] * ahead_hat[i+1, c]
    / row_sum[i, a]`` when ``row_sum[i, a] >= _SCALED_MIN`` and ``exp(trans[a,
    c] + unary[i+1, c] + log_beta[i+1, c] - shift[i] - log_beta[i, a])`` in
    any case.
    """
    n, K = unary.shape
    log_beta = np.empty((n, K))
    ahead_hat = np.zeros((n, K))
    row_sum = np.zeros((n, K))
    shift = np.zeros(n)
    g = np.empty(K)
    t = np.empty(K)
    for a in range(K):
        log_beta[n - 1, a] = 0.0
    for i in range(n - 2, -1, -1):
        m = -np.inf
        for c in range(K):
            g[c] = unary[i + 1, c] + log_beta[i + 1, c]
            v = g[c] + colmax[c]
            if v > m:
                m = v
        if m == -np.inf:
            for j in range(i, -1, -1):
                for a in range(K):
                    log_beta[j, a] = -np.inf
            break
        shift[i] = m
        for a in range(K):
            t[a] = 0.0
        for c in range(K):
            w = np.exp((g[c] + colmax[c]) - m)
            ahead_hat[i + 1, c] = w
            if w != 0.0:
                col = exp_col_t[c]
                for a in range(K):
                    t[a] += col[a] * w
        for a in range(K):
            row_sum[i, a] = t[a]
            if t[a] >= _SCALED_MIN:
                log_beta[i, a] = np.log(t[a])
            else:
                top = -np.inf
                for c in range(K):
                    v = trans[a, c] + g[c]
                    if v > top:
                        top = v
                if top == -np.inf:
                    log_beta[i, a] = -np.inf
                else:
                    total = 0.0
                    for c in range(K):
                        total += np.exp(trans[a, c] + g[c] - top)
                    log_beta[i, a] = (top - m) + np.log(total)
    return log_beta, ahead_hat, row_sum, shift


@njit
def _unary_marginals(log_alpha, log_beta):
    """``P(y[i] = a)``, normalized position by position (rows sum to 1)."""
    n, K = log_alpha.shape
    mu = np.zeros((n, K))
    for i in range(n):
        m = -np.inf
        for a in range(K):
            # No +inf anywhere, so this is finite or -inf.
            v = log_alpha[i, a] + log_beta[i, a]
            mu[i, a] = v
            if v > m:
                m = v
        if m == -np.inf:
            continue  # only when infeasible
        total = 0.0
        for a in range(K):
            mu[i, a] = np.exp(mu[i, a] - m)
            total += mu[i, a]
        for a in range(K):
            mu[i, a] /= total
    return mu


@njit
def forward_backward(unary, trans):
    """Unary marginals (n, K), transition marginals (K, K) and log Z.

    The transition marginals are expected counts summed over positions:
    ``xi[a, b] = sum_i P(y[i-1] = a, y[i] = b)``, computed as
    ``mu[i, b] * P(y[i-1] = a | y[i] = b)``. If no sequence has a finite
    score, ``log_z == -inf`` and the marginals are meaningless.
    """
    n, K = unary.shape
    exp_col, exp_col_t, colmax = _exp_transitions(trans)
    log_alpha, alpha_hat, col_sum, shift, log_z = _forward(unary, trans, exp_col, colmax)
    xi = np.zeros((K, K))
    if log_z == -np.inf:
        return np.zeros((n, K)), xi, log_z
    log_beta, _, _, _ = _backward(unary, trans, exp_col_t, colmax)
    mu = _unary_marginals(log_alpha, log_beta)
    coef = np.empty(K)
    for i in range(1, n):
        slow = False
        for b in range(K):
            coef[b] = 0.0
            if mu[i, b] > 0.0:
                if col_sum[i, b] >= _SCALED_MIN:
                    coef[b] = mu[i, b] / col_sum[i, b]
                else:
                    slow = True
        for a in range(K):
            w = alpha_hat[i - 1, a]
            if w != 0.0:
                row = exp_col[a]
                out = xi[a]
                for b in range(K):
                    out[b] += (w * row[b]) * coef[b]
        if slow:
            for b in range(K):
                if mu[i, b] > 0.0 and col_sum[i, b] < _SCALED_MIN:
                    rest = unary[i, b] - shift[i] - log_alpha[i, b]
                    for a in range(K):
                        xi[a, b] += mu[i, b] * np.exp(log_alpha[i - 1, a] + trans[a, b] + rest)
    return mu, xi, log_z


@njit
def marginals_vjp(unary, trans, d_mu, d_xi):
    """Vector-Jacobian product of the marginals: ``H @ (d_mu, d_xi)``.

    The marginals are the gradient of log Z, so their Jacobian is the Hessian
    ``H`` of log Z, the covariance of the part indicators ``phi(y)`` under the
    Gibbs distribution; being symmetric, its VJP is the directional
    derivative along ``delta(y) = d_mu . phi_u(y) + d_xi . phi_v(y)``::

        d_unary[i, a] = Cov(1[y_i = a], delta)
                      = mu[i, a] * (E[delta | y_i = a] - E[delta])

    and likewise for each transition. Conditioned on ``y_i = a`` the prefix
    and the suffix are independent, so ``E[delta | y_i = a] = F[i, a] +
    G[i, a]`` with the conditional expectations of the prefix (through ``i``)
    and of the suffix (after ``i``)::

        F[i, b] = d_mu[i, b] + sum_a P(y_{i-1}=a | y_i=b) (F[i-1, a] + d_xi[a, b])
        G[i, a] = sum_c P(y_{i+1}=c | y_i=a) (d_xi[a, c] + d_mu[i+1, c] + G[i+1, c])

    (the first-order expectation semiring on normalized messages). Each step
    is a convex combination of bounded numbers, so nothing overflows or
    underflows whatever the scores; the dominant rounding error is that of
    the final subtraction of ``E[delta]``, of order ``eps * n * max|d|``,
    which is the conditioning of the problem itself. Returns ``(d_unary, d_trans, log_z)``.
    """
    n, K = unary.shape
    exp_col, exp_col_t, colmax = _exp_transitions(trans)
    log_alpha, alpha_hat, col_sum, shift, log_z = _forward(unary, trans, exp_col, colmax)
    d_unary = np.zeros((n, K))
    d_trans = np.zeros((K, K))
    if log_z == -np.inf:
        return d_unary, d_trans, log_z
    log_beta, ahead_hat, row_sum, shift_b = _backward(unary, trans, exp_col_t, colmax)
    mu = _unary_marginals(log_alpha, log_beta)
    d_xi_t = _transpose(d_xi)

    # Suffix expectations G, from the end.
    G = np.zeros((n, K))
    acc = np.empty(K)
    for i in range(n - 2, -1, -1):
        for a in range(K):
            acc[a] = 0.0
        for c in range(K):
            w = ahead_hat[i + 1, c]
            if w != 0.0:
                ahead = d_mu[i + 1, c] + G[i + 1, c]
                col = exp_col_t[c]
                dcol = d_xi_t[c]
                for a in range(K):
                    acc[a] += (col[a] * w) * (dcol[a] + ahead)
        for a in range(K):
            if log_beta[i, a] == -np.inf:
                continue  # dead end: G stays 0, its weight is 0
            t = row_sum[i, a]
            if t >= _SCALED_MIN:
                G[i, a] = acc[a] / t
            else:
                total = 0.0
                rest = -shift_b[i] - log_beta[i, a]
                for c in range(K):
                    p = np.exp(trans[a, c] + unary[i + 1, c] + log_beta[i + 1, c] + rest)
                    total += p * (d_xi[a, c] + d_mu[i + 1, c] + G[i + 1, c])
                G[i, a] = total

    # E[delta], from position 0 where the prefix expectation is d_mu[0].
    f_prev = np.zeros(K)
    mean = 0.0
    for a in range(K):
        if log_alpha[0, a] > -np.inf:
            f_prev[a] = d_mu[0, a]
        mean += mu[0, a] * (f_prev[a] + G[0, a])
    for a in range(K):
        d_unary[0, a] = mu[0, a] * ((f_prev[a] + G[0, a]) - mean)

    # Prefix expectations F, from the start, with the Hessian-vector product
    # of the transitions accumulated along: the transition (a, b) into
    # position i has probability mu[i, b] * P(a | b) and conditional
    # expectation F[i-1, a] + d_xi[a, b] + d_mu[i, b] + G[i, b].
    f_cur = np.zeros(K)
    coef = np.empty(K)
    weight = np.empty(K)
    h = np.empty(K)
    for i in range(1, n):
        slow = False
        for b in range(K):
            h[b] = (d_mu[i, b] + G[i, b]) - mean
            acc[b] = 0.0
            coef[b] = 0.0
            weight[b] = 0.0
            if log_alpha[i, b] > -np.inf:
                if col_sum[i, b] >= _SCALED_MIN:
                    coef[b] = 1.0 / col_sum[i, b]
                    weight[b] = mu[i, b] * coef[b]
                else:
                    slow = True
        for a in range(K):
            w = alpha_hat[i - 1, a]
            if w != 0.0:
                fa = f_prev[a]
                row = exp_col[a]
                drow = d_xi[a]
                out = d_trans[a]
                for b in range(K):
                    p = w * row[b]
                    s = fa + drow[b]
                    acc[b] += p * s
                    out[b] += (weight[b] * p) * (s + h[b])
        for b in range(K):
            acc[b] *= coef[b]
        if slow:
            for b in range(K):
                if log_alpha[i, b] > -np.inf and col_sum[i, b] < _SCALED_MIN:
                    rest = unary[i, b] - shift[i] - log_alpha[i, b]
                    for a in range(K):
                        p = np.exp(log_alpha[i - 1, a] + trans[a, b] + rest)
                        s = f_prev[a] + d_xi[a, b]
                        acc[b] += p * s
                        d_trans[a, b] += (mu[i, b] * p) * (s + h[b])
        for b in range(K):
            if log_alpha[i, b] > -np.inf:
                f_cur[b] = d_mu[i, b] + acc[b]
            else:
                f_cur[b] = 0.0
            d_unary[i, b] = mu[i, b] * ((f_cur[b] + G[i, b]) - mean)
        for b in range(K):
            f_prev[b] = f_cur[b]
    return d_unary, d_trans, log_z
