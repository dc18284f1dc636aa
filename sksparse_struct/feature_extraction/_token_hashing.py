"""``TokenFeatures(output="matrix")``: the attribute hashes of tokens, the
templates as arrays, and the vocabulary of the columns learnt by ``fit``.

Each distinct string of a call is hashed once (``hash_ranges``); the
compiled kernels of ``_token_features_fast`` combine the hashes of every
token's templates into 64-bit feature keys and look them up in the
vocabulary's table.
"""

import numpy as np

from . import _token_features_fast as fast
from ._token_attributes import _FLAGS, _is_affix, _is_word_attr, _WordInfo

# --- output="matrix": hashed features --------------------------------------


def _code_points(strings):
    """All the strings' code points in one array, with where each starts and its length."""
    code_points = np.frombuffer(
        "".join(strings).encode("utf-32-le", "surrogatepass"), dtype=np.uint32
    )
    lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
    return code_points, np.cumsum(lengths) - lengths, lengths


def _hash_strings(strings):
    """Deterministic 64-bit hashes (never 0) of strings, by their code points.

    Python's ``hash`` of a string changes from one process to the next; these
    do not, so a pickled vocabulary works anywhere.
    """
    code_points, starts, lengths = _code_points(list(strings))
    out = np.empty(len(starts), dtype=np.int64)
    fast.hash_ranges(code_points, starts, starts + lengths, out)
    return out


def _factorize(values):
    """``(distinct values in first-seen order, int64 code of every value)``."""
    index = dict.fromkeys(values)
    distinct = list(index)
    index = dict(zip(distinct, range(len(distinct))))
    codes = np.fromiter(map(index.__getitem__, values), dtype=np.int64, count=len(values))
    return distinct, codes


def _affix_hashes(words, attr):
    """Hashes of ``prefix{k}`` / ``suffix{k}`` of distinct words (0: shorter than k)."""
    k = int(attr[6:])
    code_points, starts, lengths = _code_points(words)
    if attr.startswith("suffix"):
        starts = starts + lengths - k
    out = np.empty(len(words), dtype=np.int64)
    fast.hash_ranges(code_points, starts, starts + k, out)
    out[lengths < k] = 0
    return out


class _HashedTokens:
    """The attribute hashes of every token of one call, and the strings behind them.

    ``attrs[a, i]`` is the hash of attribute ``names[a]`` at token ``i``
    (sequences stacked), 0 when absent.
    """

    def __init__(self, plan, cols, lengths):
        self.lengths = np.asarray(lengths, dtype=np.int64)
        n_tokens = int(self.lengths.sum())
        self.names = (("w",) if plan.needs_word else ()) + plan.word_attrs + plan.columns
        self.attrs = np.zeros((len(self.names), n_tokens), dtype=np.int64)
        # attribute -> (distinct strings, codes of the tokens); derived word
        # attributes share the words' (their values are computed when named)
        self.sources = {}
        row = 0
        if plan.needs_word:
            words, codes = _factorize(cols[plan.word_column])
            word_info = _WordInfo(plan.word_attrs)
            self.attrs[row] = _hash_strings(words)[codes]
            self.sources["w"] = (words, codes)
            row += 1
            for attr, func in zip(plan.word_attrs, word_info.funcs):
                if _is_affix(attr):
                    hashes = _affix_hashes(words, attr)
                elif attr in _FLAGS:
                    hashes = np.fromiter(map(func, words), dtype=bool, count=len(words))
                    hashes = hashes.astype(np.int64)
                else:
                    hashes = _hash_strings(map(func, words))
                self.attrs[row] = hashes[codes]
                self.sources[attr] = (words, codes)
                row += 1
        for column in plan.columns:
            distinct, codes = _factorize(cols[column])
            self.attrs[row] = _hash_strings(distinct)[codes]
            self.sources[column] = (distinct, codes)
            row += 1


class _TemplateTable:
    """The templates of a plan as the arrays of ``fast.token_keys``.

    Besides the plan's templates: ``bias`` everywhere and ``__BOS__`` /
    ``__EOS__`` on the first / last token, as the plan asks.
    """

    def __init__(self, plan, attr_names):
        position = {a: k for k, a in enumerate(attr_names)}
        rows = [(name, parts, kind, fast.EVERYWHERE) for name, parts, kind in plan.templates]
        if plan.bias:
            rows.append(("bias", (), "flag", fast.EVERYWHERE))
        if plan.bos_eos:
            rows.append(("__BOS__", (), "flag", fast.FIRST))
            rows.append(("__EOS__", (), "flag", fast.LAST))
        self.rows = rows
        self.seed = _hash_strings(name for name, _, _, _ in rows)
        self.where = np.array([w for _, _, _, w in rows], dtype=np.int64)
        sizes = [len(parts) for _, parts, _, _ in rows]
        self.part_ptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(sizes, out=self.part_ptr[1:])
        parts = [p for _, ps, _, _ in rows for p in ps]
        self.part_attr = np.array([position[a] for a, _ in parts], dtype=np.int64)
        self.part_offset = np.array([o for _, o in parts], dtype=np.int64)

    def keys(self, hashed):
        return fast.token_keys(hashed.attrs, hashed.lengths, self.seed, self.where,
                               self.part_ptr, self.part_attr, self.part_offset)



class _Vocabulary:
    """The columns ``fit`` learnt: their hash table, and what names them.

    Column ``c`` is template ``template[c]`` with the values
    ``strings[a][codes[c, p]]`` of its parts ``(a, o)`` (the function of a
    derived word attribute applied). Names are built when first asked for.
    """

    def __init__(self, templates, hashed, keys, indptr, template):
        self.table, first = fast.learn_columns(keys)
        self.n_columns = len(first)
        self.rows = [(name, parts, kind) for name, parts, kind, _ in templates.rows]
        self.template = template[first]
        tokens = np.searchsorted(indptr, first, side="right") - 1
        width = max([len(parts) for _, parts, _ in self.rows], default=0)
        self.codes = np.zeros((self.n_columns, width), dtype=np.int64)
        for t, (_, parts, kind) in enumerate(self.rows):
            if kind == "flag":
                continue
            cols = np.flatnonzero(self.template == t)
            for p, (attr, offset) in enumerate(parts):
                self.codes[cols, p] = hashed.sources[attr][1][tokens[cols] + offset]
        self.strings = {attr: distinct for attr, (distinct, _) in hashed.sources.items()}
        self._names = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_names"] = None
        return state

    def names(self):
        """The name SequenceVectorizer would give each column."""
        if self._names is not None:
            return self._names
        names = [None] * self.n_columns
        for t, (name, parts, kind) in enumerate(self.rows):
            cols = np.flatnonzero(self.template == t).tolist()
            if kind == "flag":
                for c in cols:
                    names[c] = name
                continue
            values = []
            for p, (attr, _) in enumerate(parts):
                strings = self.strings[attr]
                column = [strings[k] for k in self.codes[cols, p].tolist()]
                if _is_word_attr(attr) and attr != "w":
                    column = list(map(_WordInfo((attr,)).funcs[0], column))
                values.append(column)
            for c, value in zip(cols, map("|".join, zip(*values))):
                names[c] = f"{name}={value}"
        self._names = names
        return names
