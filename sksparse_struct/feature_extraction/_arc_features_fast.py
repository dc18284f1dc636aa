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


# Template states (:func:`token_states`) from a table rather than one line of
# code per template: numba compiles a loop over a constant table in a fraction
# of the time it takes to compile a hundred calls. The attributes of word
# ``i`` and its neighbours (``_L``: word ``i - 1``, ``_R``: word ``i + 1``),
# by their place in the vector the loop reads; ``_ZERO`` is the constant 0.
(_ZERO, _FORM_, _UPOS_, _XPOS_, _LEMMA_, _PREFIX_, _FEATS_, _UPOS_L, _UPOS_R, _XPOS_L,
 _XPOS_R, _FORM_L, _FORM_R) = range(13)
_N_WORD_ATTRS = 13


def _template_table(templates):
    """Rows ``(arity, a, b, c)``: how many attributes a template combines, and which."""
    table = np.zeros((len(templates), 4), dtype=np.int64)
    for t, attrs in enumerate(templates):
        table[t, 0] = len(attrs)
        table[t, 1:1 + len(attrs)] = attrs
    return table


# Per template ``t``, the attributes of its head-side and modifier-side
# states. The head side hashes them as template ``t`` (:func:`_template_hash`);
# the modifier side is 0 for none, the attribute itself for one, else
# ``_mix(a * _PRIME, b)`` and ``_mix(_mix(a * _PRIME, b), c)``.
_TEMPLATE_ATTRS = [
    ((_FORM_, _UPOS_), ()),  # 0
    ((_FORM_,), ()),  # 1
    ((_UPOS_,), ()),  # 2
    ((_ZERO,), (_FORM_, _UPOS_)),  # 3
    ((_ZERO,), (_FORM_,)),  # 4
    ((_ZERO,), (_UPOS_,)),  # 5
    ((_FORM_, _UPOS_), (_FORM_, _UPOS_)),  # 6
    ((_UPOS_,), (_FORM_, _UPOS_)),  # 7
    ((_FORM_,), (_FORM_, _UPOS_)),  # 8
    ((_FORM_, _UPOS_), (_UPOS_,)),  # 9
    ((_FORM_, _UPOS_), (_FORM_,)),  # 10
    ((_FORM_,), (_FORM_,)),  # 11
    ((_UPOS_,), (_UPOS_,)),  # 12
    ((_PREFIX_, _UPOS_), (_PREFIX_, _UPOS_)),  # 13
    ((_UPOS_,), (_PREFIX_, _UPOS_)),  # 14
    ((_PREFIX_, _UPOS_), (_UPOS_,)),  # 15
    ((_PREFIX_,), (_PREFIX_,)),  # 16
    ((_UPOS_, _UPOS_R), (_UPOS_L, _UPOS_)),  # 17
    ((_UPOS_L, _UPOS_), (_UPOS_L, _UPOS_)),  # 18
    ((_UPOS_, _UPOS_R), (_UPOS_, _UPOS_R)),  # 19
    ((_UPOS_L, _UPOS_), (_UPOS_, _UPOS_R)),  # 20
    ((_UPOS_, _UPOS_R), (_UPOS_,)),  # 21
    ((_UPOS_,), (_UPOS_L, _UPOS_)),  # 22
    ((_UPOS_L, _UPOS_), (_UPOS_,)),  # 23
    ((_UPOS_,), (_UPOS_, _UPOS_R)),  # 24
    ((_ZERO,), ()),  # 25
    ((_FORM_L, _UPOS_), (_UPOS_,)),  # 26
    ((_FORM_R, _UPOS_), (_UPOS_,)),  # 27
    ((_UPOS_,), (_FORM_L, _UPOS_)),  # 28
    ((_UPOS_,), (_FORM_R, _UPOS_)),  # 29
    ((_FORM_,), (_UPOS_, _UPOS_R)),  # 30
    ((_FORM_,), (_UPOS_L, _UPOS_)),  # 31
    ((_UPOS_L, _UPOS_, _UPOS_R), (_UPOS_,)),  # 32
    ((_UPOS_,), (_UPOS_L, _UPOS_, _UPOS_R)),  # 33
    ((_UPOS_L, _UPOS_, _UPOS_R), (_FORM_,)),  # 34
    ((_FORM_,), (_UPOS_L, _UPOS_, _UPOS_R)),  # 35
    ((_XPOS_,), (_XPOS_,)),  # 36
    ((_XPOS_,), (_XPOS_, _FORM_)),  # 37
    ((_FORM_, _XPOS_), (_XPOS_,)),  # 38
    ((_XPOS_, _XPOS_R), (_XPOS_L, _XPOS_)),  # 39
    ((_XPOS_L, _XPOS_), (_XPOS_, _XPOS_R)),  # 40
    ((_LEMMA_,), (_LEMMA_,)),  # 41
    ((_LEMMA_,), (_UPOS_,)),  # 42
    ((_UPOS_,), (_LEMMA_,)),  # 43
    ((_LEMMA_, _UPOS_), (_XPOS_,)),  # 44
    ((_XPOS_,), (_LEMMA_, _UPOS_)),  # 45
    ((_LEMMA_,), (_FEATS_,)),  # 46
    ((_UPOS_,), (_UPOS_, _FEATS_)),  # 47
    ((_FORM_, _XPOS_), (_FORM_, _XPOS_)),  # 48
    ((_XPOS_,), (_FORM_, _XPOS_)),  # 49
    ((_FORM_,), (_FORM_, _XPOS_)),  # 50
    ((_FORM_, _XPOS_), (_XPOS_,)),  # 51
    ((_FORM_, _XPOS_), (_FORM_,)),  # 52
    ((_XPOS_, _XPOS_R), (_XPOS_, _XPOS_R)),  # 53
    ((_XPOS_L, _XPOS_), (_XPOS_L, _XPOS_)),  # 54
]
_HEAD_TEMPLATES = _template_table([head for head, _ in _TEMPLATE_ATTRS])
_MODIFIER_TEMPLATES = _template_table([modifier for _, modifier in _TEMPLATE_ATTRS])


# Relation features (:func:`label_features`), from a table as the templates:
# feature ``j`` hashes its attributes as template ``100 + j``
# (:func:`_template_hash`). The attributes of the arc, by their place in the
# vector the loop reads:
(_HEAD_FORM, _HEAD_UPOS, _HEAD_XPOS, _HEAD_LEMMA, _MOD_FORM, _MOD_UPOS, _MOD_XPOS, _MOD_LEMMA,
 _MOD_FEATS, _MOD_UPOS_L, _MOD_UPOS_R, _MOD_FORM_L, _MOD_FORM_R, _DIRECTED_DISTANCE) = range(1, 15)
_N_ARC_ATTRS = 15
_LABEL_TEMPLATES = _template_table([
    (_ZERO,),  # 100
    (_MOD_FORM,),  # 101
    (_MOD_UPOS,),  # 102
    (_MOD_XPOS,),  # 103
    (_MOD_LEMMA,),  # 104
    (_MOD_FEATS,),  # 105
    (_HEAD_FORM,),  # 106
    (_HEAD_UPOS,),  # 107
    (_HEAD_XPOS,),  # 108
    (_HEAD_LEMMA,),  # 109
    (_HEAD_UPOS, _MOD_UPOS),  # 110
    (_HEAD_FORM, _MOD_FORM),  # 111
    (_HEAD_UPOS, _MOD_FORM),  # 112
    (_HEAD_FORM, _MOD_UPOS),  # 113
    (_HEAD_XPOS, _MOD_XPOS),  # 114
    (_DIRECTED_DISTANCE,),  # 115
    (_DIRECTED_DISTANCE, _HEAD_UPOS, _MOD_UPOS),  # 116
    (_MOD_UPOS_L, _MOD_UPOS),  # 117
    (_MOD_UPOS, _MOD_UPOS_R),  # 118
    (_MOD_UPOS_L, _MOD_UPOS, _MOD_UPOS_R),  # 119
    (_MOD_LEMMA, _DIRECTED_DISTANCE),  # 120
    (_MOD_FEATS, _MOD_UPOS),  # 121
    (_HEAD_LEMMA, _MOD_LEMMA),  # 122
    (_MOD_FORM_L, _MOD_UPOS),  # 123
    (_MOD_UPOS, _MOD_FORM_R),  # 124
    (_HEAD_XPOS, _MOD_XPOS, _DIRECTED_DISTANCE),  # 125
    (_MOD_XPOS, _DIRECTED_DISTANCE),  # 126
])
_N_LABEL_TEMPLATES = _LABEL_TEMPLATES.shape[0]


@njit
def max_arc_features(n):
    """Size of a buffer that holds the features of any arc of ``n`` words."""
    return FIXED_PER_ARC + BETWEEN_PER_WORD * n


@njit(internal=True)
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


@njit(internal=True)
def _fib(state, shift, mask):
    """Feature index: the top bits of ``state`` times the golden ratio (Fibonacci hashing)."""
    return ((state * _GOLDEN) >> shift) & mask


@njit(internal=True)
def _attr(tokens, start, n, i, col):
    if i < 0:
        return _BOS + col
    if i > n:
        return _EOS + col
    return tokens[start + i, col]


@njit(internal=True)
def _template_hash(t, attrs, v):
    """:func:`_s`, :func:`_s2` or :func:`_s3` of template ``t`` on the attributes a table row names.

    ``attrs`` is a row ``(arity, a, b, c)`` of a template table, ``v`` the
    attribute vector it indexes.
    """
    state = (t + 1) * 2654435761
    for j in range(1, attrs[0] + 1):
        state = _mix(state, v[attrs[j]])
    return state


@njit(internal=True)
def distance_bin(d):
    """0..6 for distances 1, 2, 3, 4, 5, 6-10, > 10."""
    if d <= 5:
        return d - 1
    if d <= 10:
        return 5
    return 6


@njit(internal=True)
def _s(t, a):
    return _mix((t + 1) * 2654435761, a)


@njit(internal=True)
def _s2(t, a, b):
    return _mix(_mix((t + 1) * 2654435761, a), b)


@njit(internal=True)
def _s3(t, a, b, c):
    return _mix(_mix(_mix((t + 1) * 2654435761, a), b), c)


@njit(internal=True)
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
    v = np.empty(_N_WORD_ATTRS, dtype=np.int64)
    v[_ZERO] = 0
    for i in range(n + 1):
        v[_FORM_] = _attr(tokens, start, n, i, FORM)
        v[_UPOS_] = _attr(tokens, start, n, i, UPOS)
        v[_XPOS_] = _attr(tokens, start, n, i, XPOS)
        v[_LEMMA_] = _attr(tokens, start, n, i, LEMMA)
        v[_PREFIX_] = _attr(tokens, start, n, i, PREFIX)
        v[_FEATS_] = _attr(tokens, start, n, i, FEATS)
        v[_UPOS_L] = _attr(tokens, start, n, i - 1, UPOS)
        v[_UPOS_R] = _attr(tokens, start, n, i + 1, UPOS)
        v[_XPOS_L] = _attr(tokens, start, n, i - 1, XPOS)
        v[_XPOS_R] = _attr(tokens, start, n, i + 1, XPOS)
        v[_FORM_L] = _attr(tokens, start, n, i - 1, FORM)
        v[_FORM_R] = _attr(tokens, start, n, i + 1, FORM)
        for t in range(N_TEMPLATES):
            HS[i, t] = _template_hash(t, _HEAD_TEMPLATES[t], v)
            arity = _MODIFIER_TEMPLATES[t, 0]
            state = 0
            if arity > 0:
                state = v[_MODIFIER_TEMPLATES[t, 1]]
            if arity > 1:
                state *= _PRIME
                for j in range(2, arity + 1):
                    state = _mix(state, v[_MODIFIER_TEMPLATES[t, j]])
            MS[i, t] = state


@njit(internal=True)
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
    v = np.empty(_N_ARC_ATTRS, dtype=np.int64)
    v[_ZERO] = 0
    v[_DIRECTED_DISTANCE] = distance_bin(d) + (7 if right else 0)
    v[_HEAD_FORM] = _attr(tokens, start, n, h, FORM)
    v[_HEAD_UPOS] = _attr(tokens, start, n, h, UPOS)
    v[_HEAD_XPOS] = _attr(tokens, start, n, h, XPOS)
    v[_HEAD_LEMMA] = _attr(tokens, start, n, h, LEMMA)
    v[_MOD_FORM] = _attr(tokens, start, n, m, FORM)
    v[_MOD_UPOS] = _attr(tokens, start, n, m, UPOS)
    v[_MOD_XPOS] = _attr(tokens, start, n, m, XPOS)
    v[_MOD_LEMMA] = _attr(tokens, start, n, m, LEMMA)
    v[_MOD_FEATS] = _attr(tokens, start, n, m, FEATS)
    v[_MOD_UPOS_L] = _attr(tokens, start, n, m - 1, UPOS)
    v[_MOD_UPOS_R] = _attr(tokens, start, n, m + 1, UPOS)
    v[_MOD_FORM_L] = _attr(tokens, start, n, m - 1, FORM)
    v[_MOD_FORM_R] = _attr(tokens, start, n, m + 1, FORM)
    for j in range(_N_LABEL_TEMPLATES):
        out[j] = _template_hash(100 + j, _LABEL_TEMPLATES[j], v)
    return _N_LABEL_TEMPLATES


# Labels conjoined with one relation feature lie in one aligned block of
# LABEL_GROUP weights (a group of labels per block when there are more).
LABEL_GROUP = 64


@njit(internal=True)
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
