"""Numba kernels of the hashed arc features of first-order dependency parsing.

A sentence arrives as an int64 array ``tokens`` of shape ``(n + 1, N_COLUMNS)``
(row 0 is the root) holding one 32-bit hash per token attribute: the columns
are ``FORM`` (lower-cased), ``LEMMA``, ``UPOS``, ``XPOS``, ``PREFIX`` (first
five characters of the lower-cased form), ``FLAGS`` (a bit mask, not a
hash: ``VERB_FLAG``, ``PUNCT_FLAG``, ``COORD_FLAG``) and ``FEATS``. Many
sentences are stacked in one array, sentence ``s`` starting at row
``start``.

The features of an arc ``h -> m`` are never stored: they are enumerated
from the attributes on the fly, each template's values combined into a
64-bit hash whose low bits (``n_features`` is a power of two) index the
weight vector. Each template is emitted plain and/or conjoined with the
direction and binned distance of the arc (``dd``: bins 1, 2, 3, 4, 5,
6-10, > 10, times left / right), as in McDonald et al. (2005).
The plain feature and the 14 conjunctions of a template value lie in one
aligned block of 16 weights (at ``index ^ slot``), so that scoring an arc reads
about one cache line per template rather than two: reading the weights
from memory is most of the cost of scoring.

Nothing is validated here (see ``_arc_features.py``).
"""

import numpy as np

from ..utils._numba import njit

# Token attribute columns.
FORM = 0
LEMMA = 1
UPOS = 2
XPOS = 3
PREFIX = 4
FLAGS = 5
FEATS = 6
N_COLUMNS = 7

# Bits of the FLAGS column.
VERB_FLAG = 1
PUNCT_FLAG = 2
COORD_FLAG = 4

# Presets.
MST = 0
RICH = 1

# Values of attributes read before the first / after the last position.
_BOS = 0x5BD1E995
_EOS = 0x1B873593

_PRIME = 1099511628211  # FNV-1a's 64-bit prime
_LOW31 = 0x7FFFFFFF
_FMIX1 = -49064778989728563  # 0xff51afd7ed558ccd as a signed int64
_FMIX2 = -4265267296055464877  # 0xc4ceb9fe1a85ec53

# Templates: the state of template ``t`` for the arc ``h -> m`` combines a
# head-side hash ``HS[h, t]`` (attributes of the head and its neighbours) and
# a modifier-side hash ``MS[m, t]``, both computed once per sentence by
# :func:`token_states`; an arc then costs one multiply per template before
# the final hash. Whether each template is emitted plain (P) and / or
# conjoined with direction x distance (C):
_P = 1
_C = 2
_PC = 3
TEMPLATE_FLAGS = np.array([
    # McDonald et al. (2005): head unigrams; modifier unigrams (conjoined only)
    _PC, _PC, _PC, _C, _C, _C,
    # bigrams
    _PC, _PC, _PC, _PC, _PC, _PC, _PC,
    # the same with 5-character prefixes
    _PC, _PC, _PC, _PC,
    # surrounding POS 4-grams and 3-gram back-offs
    _PC, _PC, _PC, _PC, _PC, _PC, _PC, _PC,
    # direction x distance alone
    _C,
    # rich: context words
    _PC, _PC, _PC, _PC, _P, _P,
    # rich: POS trigrams around head and modifier
    _PC, _PC, _P, _P,
    # rich: XPOS
    _PC, _PC, _PC, _PC, _PC,
    # rich: lemmas and morphology
    _PC, _PC, _PC, _PC, _PC, _P, _PC,
    # rich: the bigram and surrounding templates with XPOS for POS
    _PC, _PC, _PC, _PC, _PC, _PC, _PC,
], dtype=np.int64)
N_MST_TEMPLATES = 26
N_TEMPLATES = 55
# Upper bounds on the number of features of one arc: the fixed templates
# plus those repeated for every word between the head and the modifier.
FIXED_PER_ARC = 2 * N_TEMPLATES + 40
BETWEEN_PER_WORD = 5
AUX_COLUMNS = 8
LABEL_FEATURES = 32
_GOLDEN = -7046029254386353131  # 0x9e3779b97f4a7c15 as a signed int64
_THRESHOLDS = (1, 2, 3, 5, 7, 10, 15, 20, 30)


@njit
def max_arc_features(n):
    """Size of a buffer that holds the features of any arc of ``n`` words."""
    return FIXED_PER_ARC + BETWEEN_PER_WORD * n


@njit
def _mix(state, value):
    return (state ^ value) * _PRIME


@njit
def _index(state, mask):
    """Final avalanche (MurmurHash3's fmix64, logical shifts) then the low bits."""
    x = state
    x ^= (x >> 33) & _LOW31
    x *= _FMIX1
    x ^= (x >> 33) & _LOW31
    x *= _FMIX2
    x ^= (x >> 33) & _LOW31
    return x & mask


@njit
def index_shift(mask):
    """``64 - log2(mask + 1)``: the shift of :func:`_fib` for ``n_features = mask + 1``."""
    bits = 0
    while (np.int64(1) << bits) <= mask:
        bits += 1
    return 64 - bits


@njit
def _fib(state, shift, mask):
    """Feature index: the top bits of ``state`` times the golden ratio (Fibonacci hashing)."""
    return ((state * _GOLDEN) >> shift) & mask


@njit
def _attr(tokens, start, n, i, col):
    if i < 0:
        return _BOS + col
    if i > n:
        return _EOS + col
    return tokens[start + i, col]


@njit
def distance_bin(d):
    """0..6 for distances 1, 2, 3, 4, 5, 6-10, > 10."""
    if d <= 5:
        return d - 1
    if d <= 10:
        return 5
    return 6


@njit
def _s(t, a):
    return _mix((t + 1) * 2654435761, a)


@njit
def _s2(t, a, b):
    return _mix(_mix((t + 1) * 2654435761, a), b)


@njit
def _s3(t, a, b, c):
    return _mix(_mix(_mix((t + 1) * 2654435761, a), b), c)


@njit
def _v2(a, b):
    return _mix(a * _PRIME, b)


@njit
def _v3(a, b, c):
    return _mix(_mix(a * _PRIME, b), c)


@njit
def token_states(tokens, start, n, HS, MS, aux):
    """Head-side (``HS``) and modifier-side (``MS``) hashes of every template.

    Rows ``0..n`` of the ``(>= n + 1, N_TEMPLATES)`` int64 arrays are
    written (``MS``'s row 0 is unused: the root is never a modifier).
    ``aux`` (``(>= n + 1, AUX_COLUMNS)`` int64) receives the sentence-local
    ids of every word's UPOS and XPOS (columns 0, 1) and the values of
    those ids (columns 2, 3); columns 4-7 are zeroed work space of
    :func:`arc_features_from_states`, which marks in-between tags by id.
    """
    n_p = 0
    n_x = 0
    for i in range(n + 1):
        for c in range(4, AUX_COLUMNS):
            aux[i, c] = 0
        for col, dest, k in ((UPOS, 0, n_p), (XPOS, 1, n_x)):
            v = tokens[start + i, col]
            j = 0
            while j < k and aux[j, 2 + dest] != v:
                j += 1
            if j == k:
                aux[k, 2 + dest] = v
                if dest == 0:
                    n_p += 1
                else:
                    n_x += 1
            aux[i, dest] = j
    for i in range(n + 1):
        w = _attr(tokens, start, n, i, FORM)
        p = _attr(tokens, start, n, i, UPOS)
        x = _attr(tokens, start, n, i, XPOS)
        lem = _attr(tokens, start, n, i, LEMMA)
        pre = _attr(tokens, start, n, i, PREFIX)
        f = _attr(tokens, start, n, i, FEATS)
        p_l = _attr(tokens, start, n, i - 1, UPOS)
        p_r = _attr(tokens, start, n, i + 1, UPOS)
        x_l = _attr(tokens, start, n, i - 1, XPOS)
        x_r = _attr(tokens, start, n, i + 1, XPOS)
        w_l = _attr(tokens, start, n, i - 1, FORM)
        w_r = _attr(tokens, start, n, i + 1, FORM)
        H = HS[i]
        M = MS[i]
        # Head side.
        H[0] = _s2(0, w, p)
        H[1] = _s(1, w)
        H[2] = _s(2, p)
        H[3] = _s(3, 0)
        H[4] = _s(4, 0)
        H[5] = _s(5, 0)
        H[6] = _s2(6, w, p)
        H[7] = _s(7, p)
        H[8] = _s(8, w)
        H[9] = _s2(9, w, p)
        H[10] = _s2(10, w, p)
        H[11] = _s(11, w)
        H[12] = _s(12, p)
        H[13] = _s2(13, pre, p)
        H[14] = _s(14, p)
        H[15] = _s2(15, pre, p)
        H[16] = _s(16, pre)
        H[17] = _s2(17, p, p_r)
        H[18] = _s2(18, p_l, p)
        H[19] = _s2(19, p, p_r)
        H[20] = _s2(20, p_l, p)
        H[21] = _s2(21, p, p_r)
        H[22] = _s(22, p)
        H[23] = _s2(23, p_l, p)
        H[24] = _s(24, p)
        H[25] = _s(25, 0)
        H[26] = _s2(26, w_l, p)
        H[27] = _s2(27, w_r, p)
        H[28] = _s(28, p)
        H[29] = _s(29, p)
        H[30] = _s(30, w)
        H[31] = _s(31, w)
        H[32] = _s3(32, p_l, p, p_r)
        H[33] = _s(33, p)
        H[34] = _s3(34, p_l, p, p_r)
        H[35] = _s(35, w)
        H[36] = _s(36, x)
        H[37] = _s(37, x)
        H[38] = _s2(38, w, x)
        H[39] = _s2(39, x, x_r)
        H[40] = _s2(40, x_l, x)
        H[41] = _s(41, lem)
        H[42] = _s(42, lem)
        H[43] = _s(43, p)
        H[44] = _s2(44, lem, p)
        H[45] = _s(45, x)
        H[46] = _s(46, lem)
        H[47] = _s(47, p)
        H[48] = _s2(48, w, x)
        H[49] = _s(49, x)
        H[50] = _s(50, w)
        H[51] = _s2(51, w, x)
        H[52] = _s2(52, w, x)
        H[53] = _s2(53, x, x_r)
        H[54] = _s2(54, x_l, x)
        # Modifier side.
        M[0] = 0
        M[1] = 0
        M[2] = 0
        M[3] = _v2(w, p)
        M[4] = w
        M[5] = p
        M[6] = _v2(w, p)
        M[7] = _v2(w, p)
        M[8] = _v2(w, p)
        M[9] = p
        M[10] = w
        M[11] = w
        M[12] = p
        M[13] = _v2(pre, p)
        M[14] = _v2(pre, p)
        M[15] = p
        M[16] = pre
        M[17] = _v2(p_l, p)
        M[18] = _v2(p_l, p)
        M[19] = _v2(p, p_r)
        M[20] = _v2(p, p_r)
        M[21] = p
        M[22] = _v2(p_l, p)
        M[23] = p
        M[24] = _v2(p, p_r)
        M[25] = 0
        M[26] = p
        M[27] = p
        M[28] = _v2(w_l, p)
        M[29] = _v2(w_r, p)
        M[30] = _v2(p, p_r)
        M[31] = _v2(p_l, p)
        M[32] = p
        M[33] = _v3(p_l, p, p_r)
        M[34] = w
        M[35] = _v3(p_l, p, p_r)
        M[36] = x
        M[37] = _v2(x, w)
        M[38] = x
        M[39] = _v2(x_l, x)
        M[40] = _v2(x, x_r)
        M[41] = lem
        M[42] = p
        M[43] = lem
        M[44] = x
        M[45] = _v2(lem, p)
        M[46] = f
        M[47] = _v2(p, f)
        M[48] = _v2(w, x)
        M[49] = _v2(w, x)
        M[50] = _v2(w, x)
        M[51] = x
        M[52] = w
        M[53] = _v2(x, x_r)
        M[54] = _v2(x_l, x)


@njit
def arc_features_from_states(tokens, start, n, h, m, preset, HS, MS, aux, shift, mask, out):
    """Write the feature indices of the arc ``h -> m`` into ``out``; return how many.

    Every feature is binary (value 1). The in-between tag templates fire
    once per distinct tag between ``h`` and ``m``, however often it occurs:
    with counts as values instead, the averaged perceptron lost 0.37 test
    UAS on UD English-EWT (three seeds), its updates dominated by the
    long arcs' large counts; the other losses did not change. ``HS``,
    ``MS``, ``aux`` from :func:`token_states`; ``shift`` is
    ``index_shift(mask)``; ``out`` holds ``max_arc_features(n)`` entries.
    """
    right = h < m
    d = m - h if right else h - m
    bin_dir = distance_bin(d) + (7 if right else 0)
    dd = 7919 + bin_dir
    # A conjunction with direction x distance lies at ``plain ^ slot``
    # (slot 1-14): in the plain feature's aligned block of 16 weights, so
    # that both are read with about one cache line, while the plain index
    # keeps every bit of the hash (aligning the blocks instead would make
    # collisions 16 times more frequent, and cost accuracy).
    slot = 1 + bin_dir
    rich = preset == RICH
    T = N_TEMPLATES if rich else N_MST_TEMPLATES
    Hh = HS[h]
    Mm = MS[m]
    k = 0
    for t in range(T):
        block = _fib((Hh[t] ^ Mm[t]) * _PRIME, shift, mask)
        fl = TEMPLATE_FLAGS[t]
        if fl & _P:
            out[k] = block
            k += 1
        if fl & _C:
            out[k] = block ^ slot
            k += 1
    lo = h if right else m
    hi = m if right else h
    hp = tokens[start + h, UPOS]
    mp = tokens[start + m, UPOS]
    hw = tokens[start + h, FORM]
    mw = tokens[start + m, FORM]
    # Mark the tags in between by sentence-local id (aux columns 4, 5),
    # listing the distinct ids met (columns 6, 7).
    n_p = 0
    n_x = 0
    n_verb = 0
    n_punct = 0
    n_coord = 0
    for b in range(lo + 1, hi):
        pid = aux[b, 0]
        if aux[pid, 4] == 0:
            aux[pid, 4] = 1
            aux[n_p, 6] = pid
            n_p += 1
        if rich:
            xid = aux[b, 1]
            if aux[xid, 5] == 0:
                aux[xid, 5] = 1
                aux[n_x, 7] = xid
                n_x += 1
            flags = tokens[start + b, FLAGS]
            if flags & VERB_FLAG:
                n_verb += 1
            if flags & PUNCT_FLAG:
                n_punct += 1
            if flags & COORD_FLAG:
                n_coord += 1
    # In-between POS (hp, bp, mp), plain and conjoined; rich: lexicalised
    # (hw, bp, mp), (hp, bp, mw) and in-between XPOS (hp, bx, mp, dd).
    base = _s2(60, hp, mp)
    lex_h = _s2(61, hw, mp)
    lex_m = _s2(62, hp, mw)
    for j in range(n_p):
        pid = aux[j, 6]
        aux[pid, 4] = 0
        bp = aux[pid, 2]
        block = _fib((base ^ bp) * _PRIME, shift, mask)
        out[k] = block
        out[k + 1] = block ^ slot
        k += 2
        if rich:
            out[k] = _fib((lex_h ^ bp) * _PRIME, shift, mask)
            out[k + 1] = _fib((lex_m ^ bp) * _PRIME, shift, mask)
            k += 2
    if not rich:
        return k
    fine = _s3(63, hp, mp, dd)
    for j in range(n_x):
        xid = aux[j, 7]
        out[k] = _fib((fine ^ aux[xid, 3]) * _PRIME, shift, mask)
        aux[xid, 5] = 0
        k += 1
    # Exact distance (capped) and a thermometer of distance thresholds.
    exact = d if d < 40 else 40
    sign = 1 if right else -1
    pair = _s2(64, hp, mp)
    out[k] = _fib(_s(65, sign * exact), shift, mask)
    out[k + 1] = _fib(_mix(pair, sign * exact), shift, mask)
    k += 2
    head = _s(66, hp)
    for threshold in _THRESHOLDS:
        if d > threshold:
            out[k] = _fib(_mix(head, sign * threshold), shift, mask)
            out[k + 1] = _fib(_mix(pair, 100 + sign * threshold), shift, mask)
            k += 2
    # Counts (0, 1, 2, 3+) of verbs, punctuation and coordinations in between.
    cv = n_verb if n_verb < 3 else 3
    cp = n_punct if n_punct < 3 else 3
    cc = n_coord if n_coord < 3 else 3
    for st in (_mix(pair, 1000 + cv), _mix(pair, 2000 + cp), _mix(pair, 3000 + cc)):
        block = _fib(st, shift, mask)
        out[k] = block
        out[k + 1] = block ^ slot
        k += 2
    out[k] = _fib(_mix(_s3(67, cv, cp, cc), dd), shift, mask)
    k += 1
    return k


@njit
def new_states(L):
    """Work arrays for the arcs of sentences of up to ``L`` words.

    ``(HS, MS, aux, out)`` for :func:`token_states` and
    :func:`arc_features_from_states`.
    """
    HS = np.empty((L + 1, N_TEMPLATES), dtype=np.int64)
    MS = np.empty((L + 1, N_TEMPLATES), dtype=np.int64)
    aux = np.zeros((L + 1, AUX_COLUMNS), dtype=np.int64)
    out = np.empty(max_arc_features(L), dtype=np.int64)
    return HS, MS, aux, out


@njit
def arc_features(tokens, start, n, h, m, preset, mask, out):
    """Write the feature indices of the arc ``h -> m`` into ``out``; return how many.

    Builds the sentence's template states first: for inspection and tests;
    the parser's kernels build them once per sentence.
    """
    HS, MS, aux, _ = new_states(n)
    token_states(tokens, start, n, HS, MS, aux)
    return arc_features_from_states(tokens, start, n, h, m, preset, HS, MS, aux,
                                    index_shift(mask), mask, out)


@njit
def label_features(tokens, start, n, h, m, mask, out):
    """Write the (label-independent) features of the relation of ``h -> m``; return how many.

    Callers conjoin each with the label (:func:`label_index`). ``out`` must
    hold ``LABEL_FEATURES`` entries.
    """
    right = h < m
    d = m - h if right else h - m
    ddv = distance_bin(d) + (7 if right else 0)
    hw = _attr(tokens, start, n, h, FORM)
    hp = _attr(tokens, start, n, h, UPOS)
    hx = _attr(tokens, start, n, h, XPOS)
    hl = _attr(tokens, start, n, h, LEMMA)
    mw = _attr(tokens, start, n, m, FORM)
    mp = _attr(tokens, start, n, m, UPOS)
    mx = _attr(tokens, start, n, m, XPOS)
    ml = _attr(tokens, start, n, m, LEMMA)
    mf = _attr(tokens, start, n, m, FEATS)
    mp_l = _attr(tokens, start, n, m - 1, UPOS)
    mp_r = _attr(tokens, start, n, m + 1, UPOS)
    mw_l = _attr(tokens, start, n, m - 1, FORM)
    mw_r = _attr(tokens, start, n, m + 1, FORM)
    out[0] = _s(100, 0)
    out[1] = _s(101, mw)
    out[2] = _s(102, mp)
    out[3] = _s(103, mx)
    out[4] = _s(104, ml)
    out[5] = _s(105, mf)
    out[6] = _s(106, hw)
    out[7] = _s(107, hp)
    out[8] = _s(108, hx)
    out[9] = _s(109, hl)
    out[10] = _s2(110, hp, mp)
    out[11] = _s2(111, hw, mw)
    out[12] = _s2(112, hp, mw)
    out[13] = _s2(113, hw, mp)
    out[14] = _s2(114, hx, mx)
    out[15] = _s(115, ddv)
    out[16] = _s3(116, ddv, hp, mp)
    out[17] = _s2(117, mp_l, mp)
    out[18] = _s2(118, mp, mp_r)
    out[19] = _s3(119, mp_l, mp, mp_r)
    out[20] = _s2(120, ml, ddv)
    out[21] = _s2(121, mf, mp)
    out[22] = _s2(122, hl, ml)
    out[23] = _s2(123, mw_l, mp)
    out[24] = _s2(124, mp, mw_r)
    out[25] = _s3(125, hx, mx, ddv)
    out[26] = _s2(126, mx, ddv)
    return 27


# Labels conjoined with one relation feature lie in one aligned block of
# LABEL_GROUP weights (a group of labels per block when there are more).
LABEL_GROUP = 64


@njit
def label_block(feature, group, shift, mask):
    """Index of a relation feature conjoined with label ``LABEL_GROUP * group``.

    Label ``LABEL_GROUP * group + r`` takes index ``(label_block(...) ^ r) &
    mask``: all the labels of a feature lie in one aligned block of 512
    bytes, read as a few consecutive cache lines (which the hardware
    prefetches) for one hash, rather than a hash and a random cache line per
    group of eight labels: scoring the labels is bound by memory reads.
    Each (feature, label) index still uses every bit of the hash (aligned
    blocks would make collisions 64 times more frequent).
    """
    return _fib((feature ^ (104729 + group)) * _PRIME, shift, mask)


@njit
def label_index(feature, label, shift, mask):
    """Weight index of a relation feature conjoined with a label."""
    return (label_block(feature, label // LABEL_GROUP, shift, mask)
            ^ (label % LABEL_GROUP)) & mask
