"""Numba kernels of :class:`TokenFeatures` with ``output="matrix"``.

A token's feature is identified by a 64-bit key: the hash of its template's
name (the *seed*) mixed with the hashes of the attribute values the template
reads (FNV-1a steps, then MurmurHash3's final avalanche, the mixing of
``_arc_features_fast``). Attribute values arrive already hashed, one int64
per token and attribute, 0 meaning "absent" (a short word's affix, a false
flag); string hashes are never 0. Keys are never 0 either, so 0 marks an
empty slot of the vocabulary's open-addressing table.

Nothing is validated here (see ``_token_features.py``).
"""

import numpy as np

from ..utils._numba import njit
from ..utils._prefetch_fast import prefetch
from ._arc_features_fast import _index, _mix

# Where a template fires: on every token, the first one or the last one.
EVERYWHERE = 0
FIRST = 1
LAST = 2

_BASIS = -3750763034362895579  # FNV-1a's 64-bit offset basis as a signed int64


@njit(internal=True)
def _final(state):
    """The avalanche of ``state``, never 0."""
    key = _index(state, -1)
    return key if key != 0 else 1


@njit
def hash_ranges(code_points, starts, stops, out):
    """``out[k]``: the hash of the code points ``starts[k]:stops[k]``, never 0."""
    for k in range(starts.shape[0]):
        state = _BASIS
        for p in range(starts[k], stops[k]):
            state = _mix(state, np.int64(code_points[p]))
        out[k] = _final(_mix(state, stops[k] - starts[k]))


@njit
def token_keys(attrs, lengths, seed, where, part_ptr, part_attr, part_offset):
    """The feature keys of every token, rows one after the other.

    ``attrs[a, i]`` is the hash of attribute ``a`` at token ``i`` (sequences
    stacked, of lengths ``lengths``). Template ``t`` reads the attributes
    ``part_attr[part_ptr[t]:part_ptr[t + 1]]`` at the offsets
    ``part_offset[...]`` from the token, and fires where ``where[t]`` says,
    when every offset falls inside the sequence and no value is absent.

    Returns ``(indptr, keys, template)``: token ``i``'s keys are
    ``keys[indptr[i]:indptr[i + 1]]``, ``template`` the template of each.
    """
    n_tokens = attrs.shape[1]
    n_templates = seed.shape[0]
    indptr = np.empty(n_tokens + 1, dtype=np.int64)
    keys = np.empty(n_tokens * n_templates, dtype=np.int64)
    template = np.empty(n_tokens * n_templates, dtype=np.int32)
    indptr[0] = 0
    k = 0
    start = 0
    for n in lengths:
        for j in range(n):
            for t in range(n_templates):
                if (where[t] == FIRST and j != 0) or (where[t] == LAST and j != n - 1):
                    continue
                state = seed[t]
                fires = True
                for p in range(part_ptr[t], part_ptr[t + 1]):
                    jj = j + part_offset[p]
                    if jj < 0 or jj >= n:
                        fires = False
                        break
                    value = attrs[part_attr[p], start + jj]
                    if value == 0:
                        fires = False
                        break
                    state = _mix(state, value)
                if fires:
                    keys[k] = _final(state)
                    template[k] = t
                    k += 1
            indptr[start + j + 1] = k
        start += n
    return indptr, keys[:k], template[:k]


@njit(internal=True)
def _slot(table, key):
    """The slot of ``key`` in ``table``, or of the empty slot where it would go.

    Slot ``s`` is ``table[2 * s]`` (the key, 0 when empty) and
    ``table[2 * s + 1]`` (its column), so a look-up reads one cache line.
    """
    mask = (table.shape[0] >> 1) - 1
    s = key & mask
    while table[2 * s] != 0 and table[2 * s] != key:
        s = (s + 1) & mask
    return s


@njit(internal=True)
def _grown(old):
    """``old`` rehashed into a table twice its size."""
    table = np.zeros(2 * old.shape[0], dtype=np.int64)
    for r in range(0, old.shape[0], 2):
        if old[r] != 0:
            s = _slot(table, old[r])
            table[2 * s] = old[r]
            table[2 * s + 1] = old[r + 1]
    return table


@njit
def learn_columns(keys):
    """The vocabulary of ``keys``: one column per distinct key, in first-seen order.

    Returns ``(table, first)``: ``table`` an open-addressing table (linear
    probing, see :func:`_slot`) filled to at most half, ``first[c]`` the
    position in ``keys`` of column ``c``'s first key.
    """
    table = np.zeros(32, dtype=np.int64)
    first = np.empty(keys.shape[0], dtype=np.int64)
    n = 0
    for e in range(keys.shape[0]):
        s = _slot(table, keys[e])
        if table[2 * s] != 0:
            continue
        table[2 * s] = keys[e]
        table[2 * s + 1] = n
        first[n] = e
        n += 1
        if 4 * n > table.shape[0]:
            table = _grown(table)
    return table, first[:n].copy()


# Look-ups ahead of the current one whose slots are requested early: the
# table is larger than the caches, and each look-up would wait for memory.
_AHEAD = 16


@njit
def lookup_rows(indptr, keys, table):
    """CSR rows of the keys' columns: unseen keys dropped, columns sorted, repeats once.

    Returns ``(new_indptr, indices)`` with int32 indices.
    """
    n_rows = indptr.shape[0] - 1
    n_keys = keys.shape[0]
    mask = (table.shape[0] >> 1) - 1
    out_ptr = np.empty(n_rows + 1, dtype=np.int64)
    out = np.empty(n_keys, dtype=np.int32)
    out_ptr[0] = 0
    for e in range(min(_AHEAD, n_keys)):
        prefetch(table, 2 * (keys[e] & mask))
    k = 0
    for i in range(n_rows):
        row = k
        for e in range(indptr[i], indptr[i + 1]):
            if e + _AHEAD < n_keys:
                prefetch(table, 2 * (keys[e + _AHEAD] & mask))
            s = _slot(table, keys[e])
            if table[2 * s] == 0:
                continue
            c = table[2 * s + 1]
            # Insertion into the sorted row; a repeat (the same template
            # given twice) is kept once, as a dict key would be.
            q = k
            while q > row and out[q - 1] > c:
                q -= 1
            if q > row and out[q - 1] == c:
                continue
            for r in range(k, q, -1):
                out[r] = out[r - 1]
            out[q] = c
            k += 1
        out_ptr[i + 1] = k
    return out_ptr, out[:k].copy()
