"""Numba kernels of the hashed features of second-order dependency parts.

Two part types (index conventions of the second-order parser; ``n`` words,
0 is the root):

- consecutive sibling ``(h, m, s)``: ``m`` and ``s`` are adjacent
  dependents of ``h`` on one side, ``s`` further from ``h``. ``m == h``
  stands for START (``s`` is ``h``'s closest dependent on that side),
  ``s == n + 1`` for STOP on the right and ``s == -1`` for STOP on the left
  (``m`` is the outermost dependent); ``(h, h, n + 1)`` and ``(h, h, -1)``
  are the empty sides. The part is on the right side of ``h`` iff
  ``s > h``.
- grandparent ``(g, h, m)``: the arcs ``g -> h`` and ``h -> m`` (``h >= 1``).
  ``g == m`` (a 2-cycle, in no tree) is a valid part with features of its
  own.

The features of a part, as in TurboParser's "standard" model (Martins et
al. 2013), hashed into the weight vector like the arc features
(``_arc_features_fast``), every one binary:

1. *Triple templates*: 20 templates over the words (W: lower-cased form)
   and tags (P) of the part's three tokens X, Y, Z (``(H, M, S)`` or ``(G,
   H, M)``): the bias; ``XP YP ZP``; one word and two tags (3); two words and
   a tag (3); tag pairs (3); word-tag pairs (6); word pairs (3). Three
   words together (``XW YW ZW``) are left out, as TurboParser's
   ``use_trilexical_features=false``. Each is conjoined with the part type
   and the part's configuration: for siblings the side (TurboParser's
   direction bit); for grandparents TurboParser's configuration code (0:
   ``g, h, m`` point one way, 1: ``m`` between ``g`` and ``h``, 2: ``m``
   beyond ``g``, so ``h -> m`` is non-projective) plus the direction of
   ``g -> h`` (the two give the full order of the three tokens), and a code
   3 of its own for the 2-cycle ``g == m``. START and STOP have dedicated
   word and tag values (``>= 2**32``, where no hashed token attribute
   lies), not the root's.
2. *Pair features*: the whole arc template set (the ``ArcFeatures``
   preset) of the pair ``(m, s)`` of a sibling part, or ``(g, m)`` of a
   grandparent part, as if it were an arc, each index XOR-ed with a salt of
   the part type. Unlike TurboParser, which maps START and STOP to the root
   (position 0) and so scores an arc ``0 -> s`` or ``m -> 0`` with
   distances measured from the start of the sentence, parts with START or
   STOP get *no* pair features: their triple templates already hold
   START/STOP, and ``h -> s`` is scored by the arc itself. The 2-cycle
   ``(g, h, g)`` gets none either (there is no arc ``g -> g``).

The tags of the triple templates are a parameter ``tags``: ``TAGS_UPOS``,
``TAGS_XPOS`` or ``TAGS_BOTH`` (the 16 templates with a tag emitted once
per tag set: 36 triple features instead of 20; ``TAGS_BOTH`` gives exactly
the union of the other two).

Hashing. A triple template's value on a part is the XOR of one hash per
role (the role's attribute, hashed with a seed of the part type, role and
template: :func:`part_states` tabulates them per token, START and STOP
once per sentence) and one constant of the part type, configuration and
template; its index is the Fibonacci hash of that, as for the arc templates
(which combine a head-side and a modifier-side hash the same way). A part
then costs three table reads and one multiply per template. The seeds of
the part templates are not those of the arc templates, so the two share
weights only by chance collisions of the hash. The pair features of a part
type are the arc features XOR-ed with a constant of the type (a bijection:
no collisions among themselves beyond those of the arcs), whose low four
bits are 0 so that the arc's aligned blocks of 16 weights
(``_arc_features_fast``) stay aligned; the constants of siblings,
grandparents and arcs (0) differ in bits 4 and 5, so they stay distinct for
``n_features >= 64``.

Scoring. The pair features of a part depend on its ordered pair only, not on
``h``: :func:`part_scores` computes each pair's score at most once per call,
memoised in ``work.table`` (NaN: not yet computed), and a part's score is
its triple templates' sum plus its pair's. :func:`add_part_gradient` is its
adjoint: the triple features of each part get its coefficient, and every
ordered pair the sum of the coefficients of the parts that share it, pushed
through its features once.

Entry points. The public kernels are thin ``inline="always"`` wrappers
of internal ones (``_part_scores``, ...): called from Python they compile
with an entry point; called from another kernel (the parser's) they inline
and only the internal bodies compile, once, however many wrappers the
caller uses. Per sentence: :func:`part_states`, then :func:`sibling_scores`
/ :func:`grandparent_scores` and :func:`add_sibling_parts` /
:func:`add_grandparent_parts` (or the generic :func:`part_scores` /
:func:`add_part_gradient`) with a :class:`PartWork` from
:func:`new_part_work`.

Nothing is validated here: parts are assumed valid for the sentence.
"""

from typing import NamedTuple

import numpy as np

from ..utils._sparse_gradient_fast import push
from ..utils._numba import njit
from ..utils._prefetch_fast import prefetch, prefetch_and_sum
from ._arc_features_fast import (
    _PRIME,
    FORM,
    UPOS,
    XPOS,
    _fib,
    arc_features_from_states,
    index_shift,
    max_arc_features,
    new_states,
    token_states,
)

# Part types.
SIBLING = 0
GRANDPARENT = 1

# Tags of the triple templates (a bit mask).
TAGS_UPOS = 1
TAGS_XPOS = 2
TAGS_BOTH = 3

# XOR salts of the pair features, one per part type: low four bits 0 (the
# arc's aligned blocks stay aligned), bits 5-4 01 and 10 (arcs: 00).
_PAIR_SALTS = np.array([0x426F428D90, 0x23A2340C9A0], dtype=np.int64)

# Attribute values of START and STOP: above 2**32, where no crc32 hash of a
# token attribute lies. The tags get the column added, as the arc kernels do
# for positions outside the sentence.
_START = 0x1714FBFF3
_STOP = 0x165C58480

_X, _Y, _Z = range(3)
# The 20 templates over (X, Y, Z): the column of each role's attribute, -1
# for roles the template leaves out (_P: the tag column of the variant).
# TurboParser's sibling templates with (X, Y, Z) = (H, M, S), its
# grandparent ones with (G, H, M).
_W = FORM
_P = -2
_TRIPLE_TEMPLATES = [
    (-1, -1, -1),  # bias
    (_P, _P, _P),
    (_W, _P, _P),
    (_P, _W, _P),
    (_P, _P, _W),
    (_W, _W, _P),
    (_W, _P, _W),
    (_P, _W, _W),
    (_P, _P, -1),
    (_P, -1, _P),
    (-1, _P, _P),
    (_W, _P, -1),
    (_P, _W, -1),
    (_W, -1, _P),
    (_P, -1, _W),
    (-1, _W, _P),
    (-1, _P, _W),
    (_W, _W, -1),
    (_W, -1, _W),
    (-1, _W, _W),
]


def _triple_rows(templates):
    """Rows of the triple features: ``(tag set, column of X, of Y, of Z)``.

    The 20 templates with UPOS for tags (tag set ``TAGS_UPOS``, or 0 for
    the 4 without a tag), then the 16 with a tag again with XPOS
    (``TAGS_XPOS``).
    """
    rows = []
    for tag_set, column in ((TAGS_UPOS, UPOS), (TAGS_XPOS, XPOS)):
        for template in templates:
            has_tag = _P in template
            if tag_set == TAGS_XPOS and not has_tag:
                continue
            rows.append([tag_set if has_tag else 0]
                        + [column if c == _P else c for c in template])
    return np.array(rows, dtype=np.int64)


_TRIPLES = _triple_rows(_TRIPLE_TEMPLATES)
N_TRIPLE_ROWS = _TRIPLES.shape[0]  # 36
# Configurations: 2 sides of a sibling part, 4 codes x 2 directions of g -> h.
_N_FLAGS = 8


def _active_rows(triples):
    """Per tag set (0-3), the rows it emits, in order (padded with -1)."""
    active = np.full((4, triples.shape[0]), -1, dtype=np.int64)
    for tags in range(4):
        rows = [r for r in range(triples.shape[0])
                if triples[r, 0] == 0 or triples[r, 0] & tags]
        active[tags, :len(rows)] = rows
    return active


_ACTIVE = _active_rows(_TRIPLES)

_U64 = (1 << 64) - 1


def _py_mix(state, value):
    """``_arc_features_fast._mix`` on Python ints (wrapping int64 arithmetic)."""
    x = ((state ^ value) * _PRIME) & _U64
    return x - (1 << 64) if x >> 63 else x


# Seeds of the part types; from them, the seed of every (type, role,
# template) and the constant of every (type, configuration, template).
_SEEDS = (-6922599785690340825, 9179378715184502451)
_ROLE_SEEDS = np.array(
    [[[_py_mix(_py_mix(seed, 1 + role), r) for r in range(N_TRIPLE_ROWS)]
      for role in range(3)] for seed in _SEEDS], dtype=np.int64)
_FLAG_STATES = np.array(
    [[[_py_mix(_py_mix(_py_mix(seed, 0), 16 + flags), r) for r in range(N_TRIPLE_ROWS)]
      for flags in range(_N_FLAGS)] for seed in _SEEDS], dtype=np.int64)


class PartWork(NamedTuple):
    """Work arrays of the part kernels for sentences of up to ``L`` words.

    Attributes
    ----------
    HS, MS, aux : ndarray of int64
        The sentence's arc template states (``token_states``): the pair
        features read them. They may be the arc kernels' own arrays
        (``new_part_work(L)._replace(HS=HS, MS=MS, aux=aux)``), so that the
        states the arc scores left serve the parts too (then
        :func:`role_states` alone prepares a sentence).
    roles : ndarray of int64 of shape (2, 3, L + 3, N_TRIPLE_ROWS)
        Per part type, role and token (rows ``0..n``; ``n + 1`` START,
        ``n + 2`` STOP), the hash of each triple template's attribute of
        that role (:func:`part_states`).
    tbuf, tbuf2 : ndarray of int64 of shape (N_TRIPLE_ROWS,)
        Triple feature indices of the current and the previous part.
    pbuf, pbuf2 : ndarray of int64 of shape (max_arc_features(L),)
        Pair feature indices of the current and the previous part.
    table : ndarray of float64 of shape (L + 1, L + 1)
        Pair scores (:func:`part_scores`) or pair coefficients
        (:func:`add_part_gradient`), indexed by the ordered pair.
    """

    HS: np.ndarray
    MS: np.ndarray
    aux: np.ndarray
    roles: np.ndarray
    tbuf: np.ndarray
    tbuf2: np.ndarray
    pbuf: np.ndarray
    pbuf2: np.ndarray
    table: np.ndarray


def new_part_work(L):
    """:class:`PartWork` for sentences of up to ``L`` words.

    Parameters
    ----------
    L : int
        The longest sentence (in words) the work arrays serve.

    Returns
    -------
    work : PartWork
    """
    HS, MS, aux, pbuf = new_states(L)
    return PartWork(HS, MS, aux, np.empty((2, 3, L + 3, N_TRIPLE_ROWS), dtype=np.int64),
                    np.empty(N_TRIPLE_ROWS, dtype=np.int64),
                    np.empty(N_TRIPLE_ROWS, dtype=np.int64), pbuf,
                    np.empty(max_arc_features(L), dtype=np.int64),
                    np.empty((L + 1, L + 1)))


@njit(internal=True)
def _role_states(tokens, start, n, roles):
    """Body of :func:`role_states` (no Python entry point)."""
    for i in range(n + 3):
        for r in range(N_TRIPLE_ROWS):
            for role in range(3):
                column = _TRIPLES[r, 1 + role]
                if column < 0:
                    roles[0, role, i, r] = 0
                    roles[1, role, i, r] = 0
                    continue
                if i == n + 1:
                    value = _START + column
                elif i == n + 2:
                    value = _STOP + column
                else:
                    value = tokens[start + i, column]
                for kind in range(2):
                    roles[kind, role, i, r] = (_ROLE_SEEDS[kind, role, r] ^ value) * _PRIME


@njit(inline="always")
def role_states(tokens, start, n, roles):
    """Tabulate the role hashes of the triple templates (``PartWork.roles``) of a sentence.

    Row ``i`` of ``roles[kind, role]`` for token ``i`` (``0..n``), row
    ``n + 1`` for START and ``n + 2`` for STOP; 0 for a template that
    leaves the role out. :func:`part_states` without the arc states.
    """
    _role_states(tokens, start, n, roles)


@njit(inline="always")
def part_states(tokens, start, n, work):
    """The sentence's states: arc template states (pair features) and role hashes (triples).

    ``token_states`` into ``work.HS``, ``work.MS``, ``work.aux`` and
    :func:`role_states` into ``work.roles``.
    """
    token_states(tokens, start, n, work.HS, work.MS, work.aux)
    _role_states(tokens, start, n, work.roles)


@njit(inline="always")
def n_triple_features(tags):
    """Triple features per part for the tag sets ``tags``: 20 for one, 36 for both."""
    k = 4
    if tags & TAGS_UPOS:
        k += 16
    if tags & TAGS_XPOS:
        k += 16
    return k


@njit(internal=True)
def _triple_features(kind, n, a, b, c, tags, roles, shift, mask, out):
    """Triple feature indices of the part ``(a, b, c)`` of type ``kind`` into ``out``."""
    x = a
    y = b
    z = c
    if kind == SIBLING:
        # (h, m, s): START for m == h, STOP for s outside the words.
        if b == a:
            y = n + 1
        if c < 1 or c > n:
            z = n + 2
        flags = 1 if c > a else 0
    else:
        # (g, h, m): TurboParser's configuration code plus the direction of g -> h.
        gh = b > a
        hm = c > b
        if c == a:
            code = 3
        elif gh == hm:
            code = 0
        elif hm != (c > a):
            code = 1
        else:
            code = 2
        flags = code + (4 if gh else 0)
    k = n_triple_features(tags)
    fl = _FLAG_STATES[kind, flags]
    tx = roles[kind, 0, x]
    ty = roles[kind, 1, y]
    tz = roles[kind, 2, z]
    rows = _ACTIVE[tags]
    for j in range(k):
        r = rows[j]
        out[j] = _fib((fl[r] ^ tx[r] ^ ty[r] ^ tz[r]) * _PRIME, shift, mask)
    return k


@njit(internal=True)
def _pair(kind, n, a, b, c):
    """The ordered pair whose arc features the part ``(a, b, c)`` carries, or ``(-1, -1)``."""
    if kind == SIBLING:
        if b == a or c < 1 or c > n:
            return -1, -1
        return b, c
    if c == a:
        return -1, -1
    return a, c


@njit(internal=True)
def _pair_features(kind, tokens, start, n, p, q, preset, work, shift, mask, out):
    """Salted arc features of the pair ``p -> q`` into ``out``; return how many."""
    k = arc_features_from_states(tokens, start, n, p, q, preset, work.HS, work.MS, work.aux,
                                 shift, mask, out)
    salt = _PAIR_SALTS[kind] & mask
    for j in range(k):
        out[j] ^= salt
    return k


@njit(inline="always")
def sibling_features(n, h, m, s, tags, work, shift, mask, out):
    """Triple feature indices of the sibling part ``(h, m, s)`` into ``out``; return how many.

    ``work`` holds the sentence's states (:func:`part_states`); ``out``
    ``N_TRIPLE_ROWS`` entries; ``shift`` is ``index_shift(mask)``. The pair
    features are :func:`pair_features`'.
    """
    return _triple_features(SIBLING, n, h, m, s, tags, work.roles, shift, mask, out)


@njit(inline="always")
def grandparent_features(n, g, h, m, tags, work, shift, mask, out):
    """Triple feature indices of the grandparent part ``(g, h, m)`` (:func:`sibling_features`)."""
    return _triple_features(GRANDPARENT, n, g, h, m, tags, work.roles, shift, mask, out)


@njit(inline="always")
def pair_features(kind, tokens, start, n, p, q, preset, work, shift, mask, out):
    """Pair features of part type ``kind`` for the ordered pair ``(p, q)``; return how many.

    The arc features of ``p -> q`` (``preset``), each index XOR-ed with the
    type's salt. ``work`` must hold the sentence's states
    (:func:`part_states`); ``out`` ``max_arc_features(n)`` entries.
    """
    return _pair_features(kind, tokens, start, n, p, q, preset, work, shift, mask, out)


def part_feature_indices(kind, tokens, start, n, a, b, c, preset, tags, mask):
    """All the feature indices of one part: its triple features, then its pair features.

    For inspection and tests (a Python function: it builds the sentence's
    states and work arrays at every call). The first
    ``n_triple_features(tags)`` entries are the triple features; the score
    of the part (:func:`part_scores`) is the sum of ``w`` over the triple
    features plus the sum over the pair features, each in order.

    Parameters
    ----------
    kind : int
        ``SIBLING`` (``(a, b, c) = (h, m, s)``) or ``GRANDPARENT``
        (``(g, h, m)``).
    tokens : ndarray of int64 of shape (n_rows, N_COLUMNS)
        Stacked sentences; this one occupies rows ``start .. start + n``.
    start, n : int
        The sentence's first row (its root) and its number of words.
    a, b, c : int
        The part.
    preset : int
        Arc feature preset of the pair features (``MST`` or ``RICH``).
    tags : int
        Tag sets of the triple templates (``TAGS_UPOS``, ``TAGS_XPOS``,
        ``TAGS_BOTH``).
    mask : int
        ``n_features - 1``.

    Returns
    -------
    indices : ndarray of int64
    """
    work = new_part_work(n)
    part_states(tokens, start, n, work)
    shift = index_shift(mask)
    triples = sibling_features if kind == SIBLING else grandparent_features
    kt = triples(n, a, b, c, tags, work, shift, mask, work.tbuf)
    out = [work.tbuf[:kt]]
    if kind == SIBLING:
        p, q = (-1, -1) if b == a or c < 1 or c > n else (b, c)
    else:
        p, q = (-1, -1) if c == a else (a, c)
    if p >= 0:
        kp = pair_features(kind, tokens, start, n, p, q, preset, work, shift, mask, work.pbuf)
        out.append(work.pbuf[:kp])
    return np.concatenate(out)


@njit(internal=True)
def _part_scores(kind, tokens, start, n, parts, w, preset, tags, mask, work, out, memoise):
    """Body of :func:`part_scores` (no Python entry point)."""
    shift = index_shift(mask)
    table = work.table
    roles = work.roles
    if memoise:
        for p in range(n + 1):
            for q in range(n + 1):
                table[p, q] = np.nan
    cur_t, prev_t = work.tbuf, work.tbuf2
    cur_p, prev_p = work.pbuf, work.pbuf2
    prev = -1
    prev_kt = 0
    prev_kp = 0
    prev_pp = -1
    prev_pq = -1
    prev_new = False
    for i in range(parts.shape[0] + 1):
        kt = 0
        kp = 0
        pp = -1
        pq = -1
        new = False
        if i < parts.shape[0]:
            a = parts[i, 0]
            b = parts[i, 1]
            c = parts[i, 2]
            kt = _triple_features(kind, n, a, b, c, tags, roles, shift, mask, cur_t)
            pp, pq = _pair(kind, n, a, b, c)
            # A pair is computed unless it is memoised or is the previous
            # part's, still to be summed (its score lands in the table below).
            if pp >= 0 and (not memoise or (np.isnan(table[pp, pq])
                                            and not (prev_new and prev_pp == pp
                                                     and prev_pq == pq))):
                kp = _pair_features(kind, tokens, start, n, pp, pq, preset, work, shift, mask,
                                    cur_p)
                new = True
        ts = prefetch_and_sum(cur_t, kt, prev_t, prev_kt, w)
        ps = prefetch_and_sum(cur_p, kp, prev_p, prev_kp, w)
        if prev >= 0:
            if prev_pp < 0:
                out[prev] = ts
            elif prev_new:
                if memoise:
                    table[prev_pp, prev_pq] = ps
                out[prev] = ts + ps
            else:
                out[prev] = ts + table[prev_pp, prev_pq]
        cur_t, prev_t = prev_t, cur_t
        cur_p, prev_p = prev_p, cur_p
        prev = i
        prev_kt = kt
        prev_kp = kp
        prev_pp = pp
        prev_pq = pq
        prev_new = new


@njit(inline="always")
def _prefetch_and_push(next_buf, next_k, buf, k, value, grad, col, touched, n_touched, stamp):
    """:func:`push` ``value`` to ``buf[:k]``, requesting the lines of ``next_buf[:next_k]``.

    The gradient is as scattered as the weights.
    """
    top = k if k > next_k else next_k
    for j in range(top):
        if j < next_k:
            prefetch(grad[next_buf[j]], col)  # a row: prefetches take vectors
        if j < k:
            n_touched = push(buf[j], value, grad, col, touched, n_touched, stamp)
    return n_touched


@njit(internal=True)
def _add_part_gradient(kind, tokens, start, n, parts, coef, preset, tags, mask, work, grad,
                       col, touched, n_touched, stamp):
    """Body of :func:`add_part_gradient` (no Python entry point)."""
    shift = index_shift(mask)
    table = work.table
    roles = work.roles
    for p in range(n + 1):
        for q in range(n + 1):
            table[p, q] = 0.0
    cur, prev = work.tbuf, work.tbuf2
    prev_k = 0
    prev_value = 0.0
    for i in range(parts.shape[0] + 1):
        k = 0
        value = 0.0
        if i < parts.shape[0]:
            value = coef[i]
            if value == 0.0:
                continue
            a = parts[i, 0]
            b = parts[i, 1]
            c = parts[i, 2]
            k = _triple_features(kind, n, a, b, c, tags, roles, shift, mask, cur)
            p, q = _pair(kind, n, a, b, c)
            if p >= 0:
                table[p, q] += value
        n_touched = _prefetch_and_push(cur, k, prev, prev_k, prev_value, grad, col, touched,
                                       n_touched, stamp)
        cur, prev = prev, cur
        prev_k = k
        prev_value = value
    cur, prev = work.pbuf, work.pbuf2
    prev_k = 0
    prev_value = 0.0
    for pq in range((n + 1) * (n + 1) + 1):
        k = 0
        value = 0.0
        if pq < (n + 1) * (n + 1):
            p = pq // (n + 1)
            q = pq % (n + 1)
            value = table[p, q]
            if value == 0.0:
                continue
            k = _pair_features(kind, tokens, start, n, p, q, preset, work, shift, mask, cur)
        n_touched = _prefetch_and_push(cur, k, prev, prev_k, prev_value, grad, col, touched,
                                       n_touched, stamp)
        cur, prev = prev, cur
        prev_k = k
        prev_value = value
    return n_touched


@njit(inline="always")
def part_scores(kind, tokens, start, n, parts, w, preset, tags, mask, work, out, memoise):
    """Scores of the parts ``parts`` (``(k, 3)`` int64) of type ``kind`` into ``out`` (``(k,)``).

    A part's score is the sum of ``w`` over its triple features (in order)
    plus the sum over its pair features (in order): that of
    :func:`part_feature_indices`, summed triple features first. With
    ``memoise``, each ordered pair's score is computed once and kept in
    ``work.table`` (NaN: not computed); without, once per part (for
    measurements). ``work`` must hold the sentence's states
    (:func:`part_states`); ``out`` may be uninitialised.

    The weights are read one part late, as the arc kernels read them: the
    indices of a part are computed, then the previous part is summed while
    the new part's lines are requested. The sums are the same, term by
    term, as reading each weight when needed.
    """
    _part_scores(kind, tokens, start, n, parts, w, preset, tags, mask, work, out, memoise)


@njit(inline="always")
def add_part_gradient(kind, tokens, start, n, parts, coef, preset, tags, mask, work, grad, col,
                      touched, n_touched, stamp):
    """Add ``coef[i]`` times the features of part ``i`` to ``grad[:, col]``; return the new count.

    The adjoint of :func:`part_scores`. Parts with ``coef[i] == 0`` are
    skipped. The coefficients of the parts that share an ordered pair are
    summed (in ``work.table``) and the pair's features pushed once, pairs
    in row-major order, after the triple features. ``grad``,
    ``col``, ``touched``, ``n_touched``, ``stamp`` as the online learner's
    ``push`` takes them. ``work`` must hold the sentence's states
    (:func:`part_states`). The coordinates of a part are requested while
    the previous part's are written, as :func:`part_scores` reads them.
    """
    return _add_part_gradient(kind, tokens, start, n, parts, coef, preset, tags, mask, work,
                              grad, col, touched, n_touched, stamp)


@njit(inline="always")
def sibling_scores(tokens, start, n, parts, w, preset, tags, mask, work, out):
    """:func:`part_scores` of sibling parts ``(h, m, s)``, pairs memoised."""
    _part_scores(SIBLING, tokens, start, n, parts, w, preset, tags, mask, work, out, True)


@njit(inline="always")
def grandparent_scores(tokens, start, n, parts, w, preset, tags, mask, work, out):
    """:func:`part_scores` of grandparent parts ``(g, h, m)``, pairs memoised."""
    _part_scores(GRANDPARENT, tokens, start, n, parts, w, preset, tags, mask, work, out,
                 True)


@njit(inline="always")
def add_sibling_parts(tokens, start, n, parts, coef, preset, tags, mask, work, grad, col,
                      touched, n_touched, stamp):
    """:func:`add_part_gradient` of sibling parts ``(h, m, s)``."""
    return _add_part_gradient(SIBLING, tokens, start, n, parts, coef, preset, tags, mask, work,
                              grad, col, touched, n_touched, stamp)


@njit(inline="always")
def add_grandparent_parts(tokens, start, n, parts, coef, preset, tags, mask, work, grad, col,
                          touched, n_touched, stamp):
    """:func:`add_part_gradient` of grandparent parts ``(g, h, m)``."""
    return _add_part_gradient(GRANDPARENT, tokens, start, n, parts, coef, preset, tags, mask,
                              work, grad, col, touched, n_touched, stamp)
