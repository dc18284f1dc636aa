"""Numba kernels of the first-order dependency parser: losses, gradients, updates.

Data layout: the sentences' token attributes are stacked in one int64 array
``tokens`` (``_arc_features_fast``'s columns), sentence ``s`` on rows
``offsets[s]`` (its root) to ``offsets[s + 1] - 1``; ``gold`` holds the
gold head of every row (-1 on root rows) and ``gold_labels`` the relation
label index (-1 on root rows, or everywhere when no labels are learnt).

Arc scores are ``(n + 1, n + 1)`` matrices as ``DependencyTree`` takes them.
The loss of a sentence is computed from them, then its gradient with
respect to the arc scores is pushed through the (hashed) features into a
dense gradient buffer whose touched indices are listed in ``touched``: one
buffer per fixed part of a mini-batch, merged in a fixed order by
:func:`apply_update`, so results do not depend on the number of threads.
Relation labels are scored by a multiclass linear model on
:func:`label_features` conjoined with the label, in the same weight vector.

Memory layout of the optimizer: the coordinates are hashed, so every access
to the per-weight state misses the cache, and what costs is the number of
distinct cache lines a coordinate needs. The state that travels together is
therefore interleaved in rows (arrays made by :func:`aligned_zeros`, rows
never straddling two lines):

* ``grad`` of shape ``(n_features, 2 * n_parts)``: for part ``p``, column
  ``2 p`` accumulates the gradient and column ``2 p + 1`` holds the number
  of the step that last touched the coordinate (a "seen" stamp; step numbers
  stay far below 2**53, so they are exact as floats).
* ``opt`` of shape ``(n_features, OPT_COLUMNS)``: the running sum of the
  weights for averaging (``W_SUM``), AdaGrad's accumulator (``ACC``) and
  the step the coordinate was last brought up to (``LAST``).

The weights ``w`` stay a plain vector: scoring reads them in blocks.
"""

import numpy as np

from ..feature_extraction._arc_features_fast import (
    LABEL_FEATURES,
    LABEL_GROUP,
    UPOS,
    arc_features_from_states,
    distance_bin,
    index_shift,
    label_block,
    label_features,
    label_index,
    new_states,
    token_states,
)
from ..inference._sparsemap_fast import active_set_projective_tree, active_set_tree
from ..structures._nonprojective_fast import (
    chu_liu_edmonds,
    matrix_tree_marginals,
    matrix_tree_marginals_rooted_log,
)
from ..structures._projective_fast import eisner, inside_outside
from ..utils._numba import njit
from ..utils._prefetch_fast import prefetch

# Columns of the optimizer state ``opt`` (the fourth pads a row to 32 bytes).
W_SUM = 0
ACC = 1
LAST = 2
OPT_COLUMNS = 4

# Loss kinds.
CRF = 0
HINGE = 1
PERCEPTRON = 2
SPARSEMAP = 3
MARGIN_SPARSEMAP = 4


@njit
def arc_filter_key(tokens, start, h, m):
    """Key of the arc ``h -> m`` for the tag filter: head and modifier UPOS, direction, distance bin."""
    right = h < m
    d = m - h if right else h - m
    key = (tokens[start + h, UPOS] * 1000003) ^ tokens[start + m, UPOS]
    return key * 16 + distance_bin(d) + (8 if right else 0)


@njit
def arc_allowed(tokens, start, h, m, keys, use_filter):
    """Whether the filter keeps ``h -> m``: always for root and neighbour arcs (so that a
    tree always exists), otherwise when its key is among the sorted ``keys``."""
    if not use_filter or h == 0 or h - m == 1 or m - h == 1:
        return True
    key = arc_filter_key(tokens, start, h, m)
    i = np.searchsorted(keys, key)
    return i < keys.shape[0] and keys[i] == key


@njit
def gold_arc_keys(tokens, offsets, heads, sent_ids):
    """Filter keys of the gold arcs of the sentences ``sent_ids`` (repeats included).

    Root arcs are left out: the filter always keeps them.
    """
    total = 0
    for t in range(sent_ids.shape[0]):
        s = sent_ids[t]
        total += offsets[s + 1] - offsets[s] - 1
    keys = np.empty(total, dtype=np.int64)
    k = 0
    for t in range(sent_ids.shape[0]):
        s = sent_ids[t]
        start = offsets[s]
        for m in range(1, offsets[s + 1] - start):
            h = heads[start + m]
            if h > 0:
                keys[k] = arc_filter_key(tokens, start, h, m)
                k += 1
    return keys[:k]


@njit
def count_allowed_arcs(tokens, offsets, sent_ids, keys):
    """Candidate arcs of the sentences ``sent_ids``, and how many the filter keeps."""
    total = 0
    kept = 0
    for t in range(sent_ids.shape[0]):
        s = sent_ids[t]
        start = offsets[s]
        n = offsets[s + 1] - start - 1
        for h in range(n + 1):
            for m in range(1, n + 1):
                if h != m:
                    total += 1
                    if arc_allowed(tokens, start, h, m, keys, True):
                        kept += 1
    return total, kept


@njit
def sentence_scores(tokens, start, n, w, preset, mask, keys, use_filter, S, HS, MS, aux, buf,
                    buf2):
    """Arc scores of one sentence into ``S`` (``(n + 1, n + 1)``; -inf off the arcs).

    With ``use_filter``, arcs the tag filter drops (:func:`arc_allowed`)
    score -inf and their features are never enumerated. Also leaves the
    sentence's template states in ``HS``, ``MS`` (for :func:`add_arc`).
    ``buf`` and ``buf2`` are work space of ``max_arc_features(n)`` entries
    each.

    The weights are read one arc late: the indices of an arc are computed,
    then the previous arc, whose lines have had the time to arrive, is
    summed while the new arc's lines are requested, one between two reads
    (:func:`_prefetch_and_sum`). On UD English-EWT this scores the arcs
    1.3 to 1.5 times as fast as reading each weight when needed (12-22%
    from prefetching, then 15% more from spreading the requests out); the
    sums are the same, term by term.
    """
    token_states(tokens, start, n, HS, MS, aux)
    shift = index_shift(mask)
    for h in range(n + 1):
        S[h, 0] = -np.inf
        S[h, h] = -np.inf
    cur_buf, prev_buf = buf, buf2
    prev_h = -1
    prev_m = -1
    prev_k = 0
    for h in range(n + 1):
        for m in range(1, n + 1):
            if h == m:
                continue
            if not arc_allowed(tokens, start, h, m, keys, use_filter):
                S[h, m] = -np.inf
                continue
            k = arc_features_from_states(tokens, start, n, h, m, preset, HS, MS, aux,
                                         shift, mask, cur_buf)
            total = _prefetch_and_sum(cur_buf, k, prev_buf, prev_k, w)
            if prev_h >= 0:
                S[prev_h, prev_m] = total
            cur_buf, prev_buf = prev_buf, cur_buf
            prev_h = h
            prev_m = m
            prev_k = k
    if prev_h >= 0:
        S[prev_h, prev_m] = _sum(prev_buf, prev_k, w)


@njit
def _sum(buf, k, w):
    s = 0.0
    for j in range(k):
        s += w[buf[j]]
    return s


@njit
def _prefetch_and_sum(next_buf, next_k, buf, k, w):
    """``_sum(buf, k, w)``, prefetching ``w[next_buf[:next_k]]`` on the way.

    One request between two reads rather than all of them in a burst: the
    processor can only wait for so many lines at once, and a burst of a
    hundred requests stalled on them (the one-loop version scored the arcs
    15% faster on UD English-EWT). The sum is the same, term by term.
    """
    s = 0.0
    top = k if k > next_k else next_k
    for j in range(top):
        if j < next_k:
            prefetch(w, next_buf[j])
        if j < k:
            s += w[buf[j]]
    return s


def aligned_zeros(shape):
    """A zeroed float64 array whose data starts on a 64-byte cache line.

    With rows of 32 bytes (``opt``, and ``grad`` for two parts), no row then
    straddles two lines; NumPy only guarantees 16-byte alignment.
    """
    shape = tuple(int(d) for d in np.atleast_1d(shape))
    size = int(np.prod(shape))
    raw = np.zeros(size + 8)
    skip = (-raw.ctypes.data % 64) // 8
    return raw[skip:skip + size].reshape(shape)


@njit
def _push(idx, value, grad, col, touched, n_touched, stamp):
    """Add ``value`` to coordinate ``idx`` of the part whose gradient column is ``col``."""
    grad[idx, col] += value
    if grad[idx, col + 1] != stamp:
        grad[idx, col + 1] = stamp
        touched[n_touched] = idx
        n_touched += 1
    return n_touched


@njit
def add_arc(tokens, start, n, h, m, value, preset, HS, MS, aux, shift, mask, buf, grad, col,
            touched, n_touched, stamp):
    """Add ``value`` times the features of ``h -> m`` to ``grad[:, col]``; return the new count."""
    k = arc_features_from_states(tokens, start, n, h, m, preset, HS, MS, aux, shift, mask, buf)
    for j in range(k):
        n_touched = _push(buf[j], value, grad, col, touched, n_touched, stamp)
    return n_touched


@njit
def best_tree(S, projective, single_root, heads):
    """MAP tree into ``heads``; False when no tree exists (cannot happen on finite scores)."""
    if projective:
        return eisner(S, single_root, heads) > -np.inf
    return chu_liu_edmonds(S, single_root, heads)


@njit
def crf_marginals(S, projective, single_root, mu):
    """Arc marginals into ``mu``; return log Z.

    The matrix-tree path is checked the way ``DependencyTree.marginals``
    checks it (every column sums to one) and redone by the subtraction-free
    log-space path when it cancelled.
    """
    if projective:
        return inside_outside(S, single_root, mu)
    log_z = matrix_tree_marginals(S, single_root, mu)
    N = S.shape[0]
    ok = np.isfinite(log_z)
    if ok:
        for m in range(1, N):
            c = 0.0
            for h in range(N):
                c += mu[h, m]
            if not abs(c - 1.0) <= 1e-9:
                ok = False
                break
    if not ok:
        log_z = matrix_tree_marginals_rooted_log(S, single_root, mu)
    return log_z


@njit
def sparsemap_support(S, projective, single_root, max_iter, tol, dep_tol):
    """The active set on the arc scores ``S``: head rows, probabilities, scores, size."""
    n = S.shape[0] - 1
    eta = np.empty(n * n)
    for m in range(1, n + 1):
        base = (m - 1) * n
        for h in range(n + 1):
            if h < m:
                eta[base + h] = S[h, m]
            elif h > m:
                eta[base + h - 1] = S[h, m]
    if projective:
        M, H, theta, p, k, n_iter, gap, converged, status = active_set_projective_tree(
            eta, n, single_root, max_iter, tol, dep_tol
        )
    else:
        M, H, theta, p, k, n_iter, gap, converged, status = active_set_tree(
            eta, n, single_root, max_iter, tol, dep_tol
        )
    return H, p, theta, k, converged, status


@njit
def _tree_score(S, heads, n):
    s = 0.0
    for m in range(1, n + 1):
        s += S[heads[m], m]
    return s


@njit
def _cost_augmented(S, gold, N, add_cost, A):
    """``A = S`` plus, if ``add_cost``, the Hamming cost 1 on every arc not in ``gold``."""
    for h in range(N):
        for m in range(N):
            v = S[h, m]
            if add_cost and m > 0 and h != m and h != gold[m]:
                v += 1.0
            A[h, m] = v


@njit
def sentence_loss(kind, S, gold, n, projective, single_root, max_iter, tol, dep_tol, D,
                  heads, A):
    """Loss of one sentence and its gradient w.r.t. the arc scores into ``D``.

    ``gold`` is the gold head of words ``1..n`` at positions ``1..n``;
    ``S`` is not modified; ``heads`` (``(1, n + 1)``) and ``A`` (like ``S``,
    the cost-augmented scores) are work arrays.
    Returns ``(loss, converged)`` (``converged`` is False only when a
    SparseMAP active set hit ``max_iter``). ``D`` is dense for the CRF
    loss and nonzero only on the arcs of the gold and predicted trees
    otherwise.
    """
    N = n + 1
    for h in range(N):
        for m in range(N):
            D[h, m] = 0.0
    gold_score = 0.0
    for m in range(1, N):
        gold_score += S[gold[m], m]
    converged = True
    if kind == CRF:
        log_z = crf_marginals(S, projective, single_root, D)
        for m in range(1, N):
            D[gold[m], m] -= 1.0
        return log_z - gold_score, converged
    if kind == PERCEPTRON or kind == HINGE:
        _cost_augmented(S, gold, N, kind == HINGE, A)
        row = heads[0]
        best_tree(A, projective, single_root, row)
        loss = _tree_score(A, row, n) - gold_score
        for m in range(1, N):
            if row[m] != gold[m]:
                D[row[m], m] += 1.0
                D[gold[m], m] -= 1.0
        if loss < 0.0:
            # Only rounding (the gold tree is among the candidates).
            loss = 0.0
        return loss, converged
    # SparseMAP: max_mu <eta, mu> - ||mu||^2 / 2 - <S, y> + ||y||^2 / 2, with
    # eta = S (+ the Hamming cost 1 - y for the margin variant).
    _cost_augmented(S, gold, N, kind == MARGIN_SPARSEMAP, A)
    H, p, theta, k, converged, status = sparsemap_support(
        A, projective, single_root, max_iter, tol, dep_tol
    )
    tp = 0.0
    for s in range(k):
        tp += p[s] * theta[s]
        for m in range(1, N):
            D[H[s, m], m] += p[s]
    mm = 0.0
    for m in range(1, N):
        for h in range(N):
            mm += D[h, m] * D[h, m]
    for m in range(1, N):
        D[gold[m], m] -= 1.0
    return tp - 0.5 * mm - gold_score + 0.5 * n, converged


@njit
def label_work(n_labels):
    """Work space of :func:`label_scores`: features, their blocks, the scores."""
    n_groups = max((n_labels + LABEL_GROUP - 1) // LABEL_GROUP, 1)
    return (np.empty(LABEL_FEATURES, dtype=np.int64),
            np.empty(LABEL_FEATURES * n_groups, dtype=np.int64),
            np.empty(max(n_labels, 1)))


# Blocks of label weights requested ahead of the one being summed.
_LABEL_PREFETCH = 4


@njit
def label_scores(tokens, start, n, h, m, w, n_labels, shift, mask, fbuf, bases, out):
    """Scores of every label for the arc ``h -> m`` into ``out``; return the feature count.

    ``fbuf`` and ``bases`` are work space (:func:`label_work`). The blocks
    of weights of all the features are located first; the lines of each are
    then requested ``_LABEL_PREFETCH`` blocks before they are summed. On UD
    English-EWT this scores the labels 2.4 times faster than reading the
    blocks one after the other (the sums are the same, in the same order).
    """
    k = label_features(tokens, start, n, h, m, mask, fbuf)
    for lab in range(n_labels):
        out[lab] = 0.0
    n_groups = (n_labels + LABEL_GROUP - 1) // LABEL_GROUP
    n_blocks = 0
    for j in range(k):
        for group in range(n_groups):
            bases[n_blocks] = label_block(fbuf[j], group, shift, mask)
            n_blocks += 1
    for b in range(min(n_blocks, _LABEL_PREFETCH)):
        _prefetch_label_block(w, bases[b], mask)
    for b in range(n_blocks):
        if b + _LABEL_PREFETCH < n_blocks:
            _prefetch_label_block(w, bases[b + _LABEL_PREFETCH], mask)
        base = bases[b]
        first = (b % n_groups) * LABEL_GROUP
        last = min(first + LABEL_GROUP, n_labels)
        for lab in range(first, last):
            out[lab] += w[(base ^ (lab - first)) & mask]
    return k


@njit
def _prefetch_label_block(w, base, mask):
    """Request the cache lines of the ``LABEL_GROUP`` weights of one block."""
    first = base & ~(LABEL_GROUP - 1) & mask
    for line in range(0, min(LABEL_GROUP, w.shape[0]), 8):
        prefetch(w, first + line)


_MIX1 = -4658895280553007687  # 0xbf58476d1ce4e5b9 as a signed int64 (SplitMix64)
_MIX2 = -7723592293110705685  # 0x94d049bb133111eb
_LOW34 = 0x3FFFFFFFF
_LOW37 = 0x1FFFFFFFFF
_LOW33 = 0x1FFFFFFFF


@njit
def arc_uniform(seed, step, sentence, arc):
    """A uniform number in [0, 1) for one arc of one sentence at one step.

    A counter-based generator (SplitMix64's finaliser on the key): the draw
    depends only on its key, not on the order or the thread in which the
    arcs are visited, so results do not depend on ``n_jobs``.
    """
    x = seed + step * -7046029254386353131 + sentence * 1000003 * 1000033 + arc
    x ^= (x >> 30) & _LOW34
    x *= _MIX1
    x ^= (x >> 27) & _LOW37
    x *= _MIX2
    x ^= (x >> 31) & _LOW33
    return ((x >> 11) & 0x1FFFFFFFFFFFFF) * (1.0 / 9007199254740992.0)


@njit
def sparsified(v, min_gradient, seed, step, sentence, arc):
    """``v``, or for ``|v| < min_gradient`` an unbiased sparse stand-in.

    Small entries become ``sign(v) * min_gradient`` with probability
    ``|v| / min_gradient`` and 0 otherwise: the same expectation, and most
    of them are skipped.
    """
    a = abs(v)
    if a >= min_gradient or a == 0.0:
        return v
    if arc_uniform(seed, step, sentence, arc) * min_gradient >= a:
        return 0.0
    return min_gradient if v > 0.0 else -min_gradient


@njit
def train_part(kind, projective, single_root, preset, mask, tokens, offsets, gold,
               gold_labels, n_labels, label_margin, sent_ids, w, keys, use_filter, max_iter,
               tol, dep_tol, min_gradient, seed, grad, part, touched, stamp, losses,
               label_losses):
    """Losses and gradients of the sentences ``sent_ids`` (one part of a mini-batch).

    Adds the gradients to ``grad[:, 2 * part]`` (listing new indices in
    ``touched``, marked by ``grad[idx, 2 * part + 1] == stamp``), writes each sentence's parsing loss and
    relation-label loss (multiclass hinge with margin ``label_margin``) into
    ``losses`` / ``label_losses`` (indexed like ``sent_ids``). Gradient
    entries below ``min_gradient`` in absolute value go through
    :func:`sparsified` (keyed by ``seed``, ``stamp``, the sentence and the
    arc): the CRF's marginals are dense but mostly tiny, and pushing every
    arc's features dominated its epochs; the sparsified gradient has the
    same expectation. Returns the number of touched indices and of
    SparseMAP solves that did not converge.
    """
    L = 0
    for t in range(sent_ids.shape[0]):
        s = sent_ids[t]
        n = offsets[s + 1] - offsets[s] - 1
        if n > L:
            L = n
    S = np.empty((L + 1, L + 1))
    D = np.empty((L + 1, L + 1))
    A = np.empty((L + 1, L + 1))
    heads = np.empty((1, L + 1), dtype=np.int64)
    HS, MS, aux, buf = new_states(L)
    buf2 = np.empty_like(buf)
    shift = index_shift(mask)
    fbuf, bases, lab_s = label_work(n_labels)
    col = 2 * part
    n_touched = 0
    not_converged = 0
    for t in range(sent_ids.shape[0]):
        s = sent_ids[t]
        start = offsets[s]
        n = offsets[s + 1] - start - 1
        Ss = S[: n + 1, : n + 1]
        Ds = D[: n + 1, : n + 1]
        As = A[: n + 1, : n + 1]
        hs = heads[:, : n + 1]
        sentence_scores(tokens, start, n, w, preset, mask, keys, use_filter, Ss, HS, MS, aux,
                        buf, buf2)
        loss, converged = sentence_loss(
            kind, Ss, gold[start:start + n + 1], n, projective, single_root, max_iter, tol,
            dep_tol, Ds, hs, As,
        )
        if not converged:
            not_converged += 1
        losses[t] = loss
        for h in range(n + 1):
            for m in range(1, n + 1):
                if h == m:
                    continue
                v = sparsified(Ds[h, m], min_gradient, seed, stamp, s, h * (n + 1) + m)
                if v != 0.0:
                    n_touched = add_arc(tokens, start, n, h, m, v, preset, HS, MS, aux,
                                        shift, mask, buf, grad, col, touched, n_touched,
                                        stamp)
        label_loss = 0.0
        if n_labels > 0:
            for m in range(1, n + 1):
                h = gold[start + m]
                y = gold_labels[start + m]
                k = label_scores(tokens, start, n, h, m, w, n_labels, shift, mask, fbuf,
                                 bases, lab_s)
                best = -1
                best_score = -np.inf
                for lab in range(n_labels):
                    v = lab_s[lab] + (0.0 if lab == y else label_margin)
                    if v > best_score:
                        best_score = v
                        best = lab
                if best != y:
                    label_loss += best_score - lab_s[y]
                    for j in range(k):
                        n_touched = _push(label_index(fbuf[j], best, shift, mask), 1.0,
                                          grad, col, touched, n_touched, stamp)
                        n_touched = _push(label_index(fbuf[j], y, shift, mask), -1.0,
                                          grad, col, touched, n_touched, stamp)
        label_losses[t] = label_loss
    return n_touched, not_converged


@njit
def _shrinkage(c, r):
    """``f^r`` and ``f + f^2 + ... + f^r`` for ``f = max(0, 1 - c)``, in O(1).

    Through ``log1p`` / ``expm1``, accurate to rounding even when ``c`` is
    tiny (a loop over the ``r`` skipped steps made the end-of-epoch flush of
    millions of weights the slowest part of training).
    """
    if c >= 1.0:
        return 0.0, 0.0
    if c == 0.0:
        return 1.0, float(r)
    t = r * np.log1p(-c)
    return np.exp(t), (1.0 - c) * -np.expm1(t) / c


@njit
def apply_update(grad, touched, n_touched, step, scale, w, opt, adagrad, learning_rate,
                 decay_rate, eps):
    """Apply one mini-batch update to the touched coordinates, parts in order.

    The batch gradient of coordinate ``i`` is ``scale * sum_p grad[i, 2 p]``
    (parts summed in order; the gradient columns are reset to zero).
    Perceptron (``adagrad`` False): ``w_i -= g_i``. AdaGrad: ``acc_i +=
    g_i^2``, ``w_i <- w_i f_i - learning_rate * g_i / sqrt(acc_i + eps)``,
    where L2 (``decay_rate = learning_rate * alpha``) shrinks by ``f_i = max(0,
    1 - decay_rate / sqrt(acc_i + eps))`` at every step, applied lazily when
    ``i`` is touched: the accumulator holds only the loss gradients, so the
    factor stays the same between touches. ``opt[i, W_SUM]`` holds the sum
    of ``w_i`` over the steps up to ``opt[i, LAST]`` (for the averaged
    weights); ``step`` is this update's number (1-based) and the stamp of
    the coordinates touched in it (``touched`` lists each part's).
    """
    apply_update_share(grad, touched, n_touched, step, scale, w, opt, adagrad, learning_rate,
                       decay_rate, eps, 0, 1)


_UPDATE_CHUNK = 4096
_UPDATE_AHEAD = 16


@njit
def apply_update_share(grad, touched, n_touched, step, scale, w, opt, adagrad, learning_rate,
                       decay_rate, eps, share, n_shares):
    """:func:`apply_update` restricted to the coordinates ``i % n_shares == share``.

    Threads given different shares never touch the same coordinate, and each
    coordinate sees the same operations as in :func:`apply_update`: the
    result is identical however the shares are spread over threads.

    A coordinate touched by several parts is listed by each; it is updated
    when met in the first part whose stamp it carries. Coordinates go by
    chunks in three passes: gather their state, compute the updates on
    contiguous arrays, scatter them back. The coordinates are random, so
    every read misses the cache; kept apart from the long chain of
    arithmetic of the lazy shrinkage, the reads overlap. The gradient rows
    are requested ``_UPDATE_AHEAD`` entries of the list ahead, and the
    weight and state of a coordinate as soon as it joins a chunk (updates
    20-30% faster).
    """
    idx = np.empty(_UPDATE_CHUNK, dtype=np.int64)
    G = np.empty(_UPDATE_CHUNK)
    W = np.empty(_UPDATE_CHUNK)
    A = np.empty(_UPDATE_CHUNK)
    R = np.empty(_UPDATE_CHUNK, dtype=np.int64)
    DS = np.empty(_UPDATE_CHUNK)
    P = n_touched.shape[0]
    grad_flat = grad.reshape(grad.size)
    opt_flat = opt.reshape(opt.size)
    cnt = 0
    for p in range(P):
        nt = n_touched[p]
        for j in range(nt):
            if j + _UPDATE_AHEAD < nt:
                prefetch(grad_flat, touched[p, j + _UPDATE_AHEAD] * grad.shape[1])
            i = touched[p, j]
            if n_shares > 1 and i % n_shares != share:
                continue
            done = False
            for q in range(p):
                if grad[i, 2 * q + 1] == step:
                    done = True
            if done:
                continue
            prefetch(w, i)
            prefetch(opt_flat, i * OPT_COLUMNS)
            gi = 0.0
            for q in range(P):
                gi += grad[i, 2 * q]
                grad[i, 2 * q] = 0.0
            idx[cnt] = i
            G[cnt] = gi * scale
            cnt += 1
            if cnt == _UPDATE_CHUNK:
                _update_chunk(idx, G, W, A, R, DS, cnt, step, w, opt, adagrad, learning_rate,
                              decay_rate, eps)
                cnt = 0
    if cnt > 0:
        _update_chunk(idx, G, W, A, R, DS, cnt, step, w, opt, adagrad, learning_rate,
                      decay_rate, eps)


@njit
def _update_chunk(idx, G, W, A, R, DS, cnt, step, w, opt, adagrad, learning_rate, decay_rate,
                  eps):
    """The updates of the coordinates ``idx[:cnt]`` (batch gradients ``G``)."""
    for k in range(cnt):
        i = idx[k]
        W[k] = w[i]
        R[k] = step - 1 - np.int64(opt[i, LAST])
        A[k] = opt[i, ACC]
    for k in range(cnt):
        gi = G[k]
        wi = W[k]
        r = R[k]
        ds = 0.0
        if decay_rate > 0.0:
            if r > 0 and wi != 0.0:
                # Steps last+1 .. step-1: w shrinks geometrically.
                fk, geo = _shrinkage(decay_rate / np.sqrt(A[k] + eps), r)
                ds = wi * geo
                wi *= fk
        else:
            ds = wi * r
        if adagrad:
            a = A[k] + gi * gi
            A[k] = a
            denom = np.sqrt(a + eps)
            # The shrinkage as a factor clipped at 0: a step of
            # decay_rate / denom > 1 (little gradient seen yet) must not
            # flip and grow the weight.
            f = 1.0 - decay_rate / denom
            if f < 0.0:
                f = 0.0
            wi = wi * f - learning_rate * gi / denom
        else:
            wi -= gi
        W[k] = wi
        DS[k] = ds
    for k in range(cnt):
        i = idx[k]
        w[i] = W[k]
        # Same order of additions as one coordinate at a time.
        opt[i, W_SUM] = (opt[i, W_SUM] + DS[k]) + W[k]
        opt[i, LAST] = step
        opt[i, ACC] = A[k]


@njit
def split_batches(order, lengths, batch_size, n_parts, part_of):
    """Share each mini-batch of ``order`` out into ``n_parts`` of about equal cost.

    Mini-batch ``b`` is ``order[b * batch_size:(b + 1) * batch_size]``.
    Longest first (stable), each sentence to the part with the least cost so
    far (the LPT rule; cost ``(n + 1)^2``, the number of arcs, ties to the
    lowest part); ``part_of`` receives the part of every entry of ``order``.
    The parts depend on the sentences only, never on the number of threads,
    so results are identical for every ``n_jobs``.
    """
    load = np.empty(n_parts)
    for b in range(0, order.shape[0], batch_size):
        e = min(b + batch_size, order.shape[0])
        cost = np.empty(e - b)
        for i in range(b, e):
            cost[i - b] = (lengths[order[i]] + 1.0) ** 2
        load[:] = 0.0
        for i in np.argsort(-cost, kind="mergesort"):
            p = np.argmin(load)
            part_of[b + i] = p
            load[p] += cost[i]


@njit
def flush_updates(step, w, opt, decay_rate, eps):
    """Bring every coordinate to ``step`` (the lazy shrinkage and sums)."""
    flush_updates_share(step, w, opt, decay_rate, eps, 0, 1)


@njit
def flush_updates_share(step, w, opt, decay_rate, eps, share, n_shares):
    """:func:`flush_updates` on the ``share``-th of ``n_shares`` contiguous ranges."""
    n = w.shape[0]
    for i in range(share * n // n_shares, (share + 1) * n // n_shares):
        r = step - np.int64(opt[i, LAST])
        if r <= 0:
            continue
        wi = w[i]
        if wi != 0.0:
            if decay_rate > 0.0:
                fk, geo = _shrinkage(decay_rate / np.sqrt(opt[i, ACC] + eps), r)
                opt[i, W_SUM] += wi * geo
                w[i] = wi * fk
            else:
                opt[i, W_SUM] += wi * r
        opt[i, LAST] = step


@njit
def decode_part(projective, single_root, preset, mask, tokens, offsets, n_labels, root_label,
                sent_ids, w, keys, use_filter, heads_out, labels_out):
    """MAP trees (and best labels of their arcs) of the sentences ``sent_ids``.

    With ``root_label >= 0`` (the index of UD's ``root`` relation), the
    words attached to the root get it and no other word does.

    Writes rows of ``heads_out`` / ``labels_out`` (the stacked layout of
    ``tokens``). Returns the index of the first sentence without a tree,
    or -1.
    """
    L = 0
    for t in range(sent_ids.shape[0]):
        s = sent_ids[t]
        n = offsets[s + 1] - offsets[s] - 1
        if n > L:
            L = n
    S = np.empty((L + 1, L + 1))
    HS, MS, aux, buf = new_states(L)
    buf2 = np.empty_like(buf)
    shift = index_shift(mask)
    fbuf, bases, lab_s = label_work(n_labels)
    row = np.empty(L + 1, dtype=np.int64)
    for t in range(sent_ids.shape[0]):
        s = sent_ids[t]
        start = offsets[s]
        n = offsets[s + 1] - start - 1
        Ss = S[: n + 1, : n + 1]
        sentence_scores(tokens, start, n, w, preset, mask, keys, use_filter, Ss, HS, MS, aux,
                        buf, buf2)
        hr = row[: n + 1]
        if not best_tree(Ss, projective, single_root, hr):
            return s
        for m in range(n + 1):
            heads_out[start + m] = hr[m]
        labels_out[start] = -1
        if n_labels > 0:
            for m in range(1, n + 1):
                if hr[m] == 0 and root_label >= 0:
                    labels_out[start + m] = root_label
                    continue
                label_scores(tokens, start, n, hr[m], m, w, n_labels, shift, mask, fbuf, bases,
                             lab_s)
                best = -1
                for lab in range(n_labels):
                    if lab == root_label:
                        continue
                    if best < 0 or lab_s[lab] > lab_s[best]:
                        best = lab
                labels_out[start + m] = best if best >= 0 else root_label
    return -1


@njit
def _nonprojective_arc(heads, n):
    """The shortest non-projective arc's modifier (leftmost on ties), or -1.

    The arc ``h -> m`` is projective when ``h`` dominates every word
    between ``h`` and ``m``.
    """
    best_m = -1
    best_len = n + 2
    for m in range(1, n + 1):
        h = heads[m]
        lo = h if h < m else m
        hi = m if h < m else h
        if hi - lo < 2 or hi - lo >= best_len or h == 0:
            continue
        for b in range(lo + 1, hi):
            a = b
            while a != h and a > 0:
                a = heads[a]
            if a != h:
                best_m = m
                best_len = hi - lo
                break
    return best_m


@njit
def lift_to_projective(heads, offsets):
    """Make every tree projective by lifting arcs, in place; return the number of lifts.

    ``heads`` is the stacked layout (-1 on root rows, positions relative to
    each sentence's root row). The shortest non-projective arc is lifted to
    its head's head until none is left (Kahane, Nasr & Rambow 1998; Nivre &
    Nilsson 2005). An arc from the root never crosses another, so a tree
    with a single root word keeps it.
    """
    lifts = 0
    for s in range(offsets.shape[0] - 1):
        start = offsets[s]
        n = offsets[s + 1] - start - 1
        tree = heads[start:start + n + 1]
        while True:
            m = _nonprojective_arc(tree, n)
            if m < 0:
                break
            tree[m] = tree[tree[m]]
            lifts += 1
    return lifts
