"""Numba kernels of the feature-based easy-first tagger: decoding and guided learning.

The token features come in the layout of the linear-chain tagger
(:class:`~._chain_fast.Chains`: stacked CSR tokens resolved to the model's
(attribute, label) pairs). The weight vector is those pairs' weights
followed by a dense block of *sketch* weights, one row of ``K`` label
weights per sketch feature.

Sketch features describe the tags already decided around position ``i``
(the *sketch*). A neighbour's value is its tag ``0 .. K-1``, ``K`` while it
is still undecided, or ``K + 1`` when it lies outside the sentence
(``V = K + 2`` values). With a window ``w`` the features are, in row
order:

- for ``d = 1 .. w``: the value at ``i - d``, then the value at ``i + d``
  (``V`` rows each);
- when ``w >= 1``: the pair of values at ``(i - 1, i + 1)`` (``V * V`` rows);
- when ``w >= 2``: the pairs at ``(i - 2, i - 1)`` and ``(i + 1, i + 2)``.

Every feature of position ``i`` looks at most ``w`` positions away, so
deciding position ``j`` changes the scores of ``j - w .. j + w`` only: the
decoder rescores those.

Ties are broken towards the smaller position, then the smaller tag (strict
comparisons, positions and tags in increasing order), in decoding and in
training alike.
"""

import numpy as np

from ..learners._online_fast import apply_update, push
from ..utils._numba import njit
from ._chain_fast import _find_pair, max_length, token_scores

__all__ = ["decode_part", "guided_steps", "n_sketch_rows"]


@njit
def n_sketch_rows(n_labels, window):
    """Number of sketch features (rows of ``K`` weights) for ``K`` tags and a window."""
    V = n_labels + 2
    n = 2 * window * V
    if window >= 1:
        n += V * V
    if window >= 2:
        n += 2 * V * V
    return n


@njit
def _value(tags, n, j, K):
    """The sketch value of position ``j``: its tag, ``K`` if undecided, ``K + 1`` outside."""
    if j < 0 or j >= n:
        return K + 1
    t = tags[j]
    return K if t < 0 else t


@njit
def sketch_rows(tags, n, i, K, window, rows):
    """The sketch features of position ``i`` (row numbers) into ``rows``; returns their count."""
    V = K + 2
    c = 0
    for d in range(1, window + 1):
        base = 2 * (d - 1) * V
        rows[c] = base + _value(tags, n, i - d, K)
        rows[c + 1] = base + V + _value(tags, n, i + d, K)
        c += 2
    base = 2 * window * V
    if window >= 1:
        rows[c] = base + _value(tags, n, i - 1, K) * V + _value(tags, n, i + 1, K)
        c += 1
    if window >= 2:
        base += V * V
        rows[c] = base + _value(tags, n, i - 2, K) * V + _value(tags, n, i - 1, K)
        base += V * V
        rows[c + 1] = base + _value(tags, n, i + 1, K) * V + _value(tags, n, i + 2, K)
        c += 2
    return c


@njit
def _rescore(w, n_pairs, u, tags, n, i, K, window, rows, S):
    """``S[i] = u[i] + sketch weights of i``; returns the best tag (first maximum)."""
    c = sketch_rows(tags, n, i, K, window, rows)
    row = S[i]
    for b in range(K):
        row[b] = u[i, b]
    for r in range(c):
        p = n_pairs + rows[r] * K
        for b in range(K):
            row[b] += w[p + b]
    best = 0
    for b in range(1, K):
        if row[b] > row[best]:
            best = b
    return best


@njit
def _pick(S, best_tag, tags, n):
    """The uncovered position with the highest best score (first maximum)."""
    arg = -1
    for i in range(n):
        if tags[i] < 0 and (arg < 0 or S[i, best_tag[i]] > S[arg, best_tag[arg]]):
            arg = i
    return arg


@njit
def _rescore_window(w, n_pairs, u, tags, n, j, K, window, rows, S, best_tag):
    """Rescore the uncovered positions whose features see position ``j``."""
    for i in range(max(j - window, 0), min(j + window + 1, n)):
        if tags[i] < 0:
            best_tag[i] = _rescore(w, n_pairs, u, tags, n, i, K, window, rows, S)


@njit
def _start(chains, w, n_pairs, K, window, r0, r1, u, S, best_tag, rows, tags):
    """Unary scores of the tokens ``r0 .. r1``, none tagged yet, every best tag scored."""
    n = r1 - r0
    token_scores(chains.indptr, chains.pair_start, chains.pair_stop, chains.data,
                 chains.pair_label, w, r0, r1, u)
    for i in range(n):
        tags[i] = -1
    for i in range(n):
        best_tag[i] = _rescore(w, n_pairs, u, tags, n, i, K, window, rows, S)


@njit
def _decode_one(chains, w, n_pairs, K, window, r0, r1, u, S, best_tag, rows, tags, order):
    """Easy-first decoding of the tokens ``r0 .. r1``: tags into ``tags``, order into ``order``."""
    n = r1 - r0
    _start(chains, w, n_pairs, K, window, r0, r1, u, S, best_tag, rows, tags)
    for step in range(n):
        j = _pick(S, best_tag, tags, n)
        tags[j] = best_tag[j]
        order[step] = j
        _rescore_window(w, n_pairs, u, tags, n, j, K, window, rows, S, best_tag)


@njit
def decode_part(chains, w, n_pairs, n_labels, window, seq_ids, out_tags, out_order):
    """Easy-first tags and decision order of the sequences ``seq_ids``.

    ``out_tags[r]`` gets the tag of token ``r`` (stacked numbering) and
    ``out_order[offsets[s] + k]`` the position (within sequence ``s``)
    decided at step ``k``.
    """
    K = n_labels
    m = max_length(chains.offsets, seq_ids)
    u = np.empty((m, K))
    S = np.empty((m, K))
    best_tag = np.empty(m, dtype=np.int64)
    rows = np.empty(2 * window + 3, dtype=np.int64)
    for s in seq_ids:
        r0 = chains.offsets[s]
        r1 = chains.offsets[s + 1]
        if r1 > r0:
            _decode_one(chains, w, n_pairs, K, window, r0, r1, u, S, best_tag, rows,
                        out_tags[r0:r1], out_order[r0:r1])


@njit
def _update(chains, w, n_pairs, K, r, label, rows, n_rows, sign, sparse, saved, n_touched,
            stamp):
    """``w += sign * phi(token r, label)``, pushing ``-sign * phi`` to ``sparse`` (part 0).

    ``w`` moves at once, so that the rest of the sentence is decoded with
    the new weights; the first time a coordinate is touched in the step, its
    weight before the step is kept in ``saved`` (for :func:`guided_steps`).
    Token features whose (attribute, label) pair is not in the model keep a
    weight of zero, as in the linear-chain tagger. Returns the new count of
    touched coordinates.
    """
    grad = sparse.values
    touched = sparse.touched[0]
    for k in range(chains.indptr[r], chains.indptr[r + 1]):
        p0 = chains.pair_start[k]
        p1 = chains.pair_stop[k]
        if p1 - p0 == K:
            p = p0 + label
        else:
            p = _find_pair(chains.pair_label, p0, p1, label)
        if p >= 0:
            x = sign * chains.data[k]
            n_touched = _move(p, x, w, grad, touched, saved, n_touched, stamp)
    for c in range(n_rows):
        n_touched = _move(n_pairs + rows[c] * K + label, sign, w, grad, touched, saved,
                          n_touched, stamp)
    return n_touched


@njit
def _move(p, x, w, grad, touched, saved, n_touched, stamp):
    """``w[p] += x`` and the gradient entry ``-x``, keeping ``w[p]``'s value before the step."""
    before = w[p]
    n = push(p, -x, grad, 0, touched, n_touched, stamp)
    if n > n_touched:
        saved[n_touched] = before
    w[p] = before + x
    return n


@njit
def guided_steps(chains, w, n_pairs, n_labels, window, seq_ids, sparse, first_step, scale, opt,
                 rule):
    """Guided learning (Goldberg & Elhadad, 2010) over ``seq_ids``: one online step a sequence.

    At each decision the highest-scoring (position, tag) among the uncovered
    positions is chosen. When its tag is not the gold tag, the weights move
    towards the highest-scoring correct action (an uncovered position with
    its gold tag) and away from the chosen one, both with the features of
    the current sketch; the correct action is then applied and every
    uncovered position is rescored (the weights changed). Otherwise the
    chosen action is applied and its neighbours rescored.

    A sequence's moves are its step of the online learner
    (``learners._online``): the sequence is decoded with the weights
    moving after each mistake, then they are put back, the sum of the moves
    (the perceptron loss's gradient, negated) sits in part 0 of ``sparse``,
    and ``learners._online_fast.apply_update`` applies it at step
    ``first_step + t`` (``rule``: the perceptron's, with the learner's
    averaging in ``opt``). Returns the number of mistakes of each sequence.
    """
    K = n_labels
    m = max_length(chains.offsets, seq_ids)
    u = np.empty((m, K))
    S = np.empty((m, K))
    best_tag = np.empty(m, dtype=np.int64)
    tags = np.empty(m, dtype=np.int64)
    rows = np.empty(2 * window + 3, dtype=np.int64)
    rows_gold = np.empty(2 * window + 3, dtype=np.int64)
    saved = np.empty(w.shape[0])
    mistakes = np.zeros(seq_ids.shape[0])
    gold = chains.gold
    for t in range(seq_ids.shape[0]):
        s = seq_ids[t]
        step = first_step + t
        stamp = float(step)
        n_touched = 0
        r0 = chains.offsets[s]
        r1 = chains.offsets[s + 1]
        n = r1 - r0
        if n > 0:
            _start(chains, w, n_pairs, K, window, r0, r1, u, S, best_tag, rows, tags)
        for _ in range(n):
            j = _pick(S, best_tag, tags, n)
            y = best_tag[j]
            if y == gold[r0 + j]:
                tags[j] = y
                _rescore_window(w, n_pairs, u, tags, n, j, K, window, rows, S, best_tag)
                continue
            # The best correct action: the uncovered position whose gold
            # tag scores highest.
            g = -1
            for i in range(n):
                if tags[i] < 0 and (g < 0 or S[i, gold[r0 + i]] > S[g, gold[r0 + g]]):
                    g = i
            n_gold = sketch_rows(tags, n, g, K, window, rows_gold)
            n_pred = sketch_rows(tags, n, j, K, window, rows)
            n_touched = _update(chains, w, n_pairs, K, r0 + g, gold[r0 + g], rows_gold, n_gold,
                                1.0, sparse, saved, n_touched, stamp)
            n_touched = _update(chains, w, n_pairs, K, r0 + j, y, rows, n_pred, -1.0, sparse,
                                saved, n_touched, stamp)
            mistakes[t] += 1.0
            tags[g] = gold[r0 + g]
            token_scores(chains.indptr, chains.pair_start, chains.pair_stop, chains.data,
                         chains.pair_label, w, r0, r1, u)
            for i in range(n):
                if tags[i] < 0:
                    best_tag[i] = _rescore(w, n_pairs, u, tags, n, i, K, window, rows, S)
        # Back to the weights before the sequence: the learner applies its moves.
        touched = sparse.touched[0]
        for k in range(n_touched):
            w[touched[k]] = saved[k]
        sparse.n_touched[0] = n_touched
        apply_update(sparse, step, scale, w, opt, rule)
    return mistakes
