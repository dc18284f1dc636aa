"""Sequences of feature dicts to per-sequence sparse matrices.

The input format is the one sklearn-crfsuite and python-crfsuite users
already write: a list of sequences, each a list of token dicts
``{name: value}``. The output is one CSR matrix per sequence, rows being
tokens, in the column space of a vocabulary learnt in ``fit``.

Speed comes from caching: the column of a ``(name, value)`` pair whose
contribution is a single 1 (a string value, ``True``, the number 1) is
kept in a two-level dict ``cache[name][value]``, so a token whose pairs
were all seen before is looked up with two nested ``map`` calls over its
keys and values, entirely in C. Only the first occurrence of a pair, other
numbers, nested dicts and lists go through the general (slower) path.
"""

import math
import numbers
from collections.abc import Mapping
from itertools import islice

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ..utils._estimator import TagsMixin
from ..utils._sklearn_compat import fit_context
from ._stacked import StackedSequences

__all__ = ["SequenceVectorizer"]

# The column of a pair that contributes nothing: a zero value (False, 0) or,
# at transform time, an unseen feature. Removed in one NumPy pass at the end.
_DROP = -1


def _describe(obj):
    return type(obj).__name__


def _iter_sequences(X):
    """Yield ``(i, sequence)`` after checking that X is a list of sequences."""
    if isinstance(X, (str, bytes)):
        raise ValueError(
            "X must be a list of sequences of token dicts, got a string."
        )
    if isinstance(X, Mapping):
        raise ValueError(
            "X must be a list of sequences of token dicts, got a single dict; "
            "wrap one sequence of one token as [[token]]."
        )
    if sp.issparse(X):
        raise ValueError(
            "X must be a list of sequences of token dicts, got a sparse "
            "matrix; already vectorized sequences need no SequenceVectorizer."
        )
    try:
        iterator = iter(X)
    except TypeError:
        raise ValueError(
            "X must be a list of sequences of token dicts, got a "
            f"{_describe(X)}, which is not iterable."
        ) from None
    for i, seq in enumerate(iterator):
        if type(seq) is list:
            yield i, seq
            continue
        if isinstance(seq, Mapping):
            raise ValueError(
                f"element {i} of X is a dict (a token), not a sequence of "
                "tokens. X must be a list of sequences; to vectorize a single "
                "sequence of token dicts, pass [sequence]."
            )
        if isinstance(seq, (str, bytes)):
            raise ValueError(
                f"sequence {i} is a string, not a sequence of token dicts."
            )
        if sp.issparse(seq):
            raise ValueError(
                f"sequence {i} is a sparse matrix; SequenceVectorizer takes "
                "sequences of token dicts (already vectorized sequences go "
                "to the estimator directly)."
            )
        try:
            seq = list(seq)
        except TypeError:
            raise ValueError(
                f"sequence {i} is a {_describe(seq)}, which is not iterable; "
                "each sequence must be a list of token dicts."
            ) from None
        yield i, seq


def _ignore(*args):
    return None


class _SeenValues(dict):
    """Columns of the string values seen with one feature name in ``fit``.

    An unseen *string* value is dropped without raising (``__missing__`` is
    called by ``dict.__getitem__`` on subclasses), so that the C-level hot
    path of ``_Encoder.run`` keeps going on test tokens, most of which have
    an unseen word or bigram somewhere. Other unseen values (numbers other
    than 1, nested dicts, lists) still raise and take the general path.
    """

    def __missing__(self, value):
        if type(value) is str:
            return _DROP
        raise KeyError(value)


def _transform_cache(vocabulary, separator):
    """``{name: _SeenValues}`` from a vocabulary, for :class:`_Encoder`.

    ``name + separator + value`` is split at its first separator: any split
    gives the same feature string, which is all that identifies a column
    (a name that itself contains the separator just takes the general path).
    A name without a value is a feature of value 1 (``True``, ``1``).
    """
    cache = {}
    for feature, column in vocabulary.items():
        name, sep, value = feature.partition(separator)
        sub = cache.get(name)
        if sub is None:
            sub = cache[name] = _SeenValues()
        sub[value if sep else True] = column
    return cache


class _Encoder:
    """One vectorization pass: the column lookups and the growing CSR arrays.

    ``cache[name][value]`` is the column of a pair whose contribution is a
    single 1 (a string value, ``True``, the number 1), or ``_DROP`` when it
    contributes nothing (``False``, 0, or a feature unseen at transform
    time). Two levels rather than ``(name, value)`` tuples: no tuple is
    built or hashed, and the first level is small and stays in the CPU
    cache. ``lookup(name)`` gives the column of a feature name: at fit time
    it adds unseen names to ``vocab`` (first-seen order), at transform time
    it returns ``_DROP`` for them.
    """

    def __init__(self, vocab, fitting, separator, cache=None):
        self.separator = separator
        if cache is None:
            self.cache = {}
        else:
            # The fitted vectorizer's shared cache: read it, never grow it.
            self.cache = cache
            self.remember = _ignore
        self.indices = []
        # Positions (into indices) of entries whose value is not 1, and the
        # values: most entries are indicators, so data starts as all ones.
        self.value_pos = []
        self.values = []
        if fitting:
            def lookup(name):
                return vocab.setdefault(name, len(vocab))
        else:
            def lookup(name):
                return vocab.get(name, _DROP)
        self.lookup = lookup

    def emit(self, column, value):
        if value != 1.0:
            self.value_pos.append(len(self.indices))
            self.values.append(value)
        self.indices.append(column)

    def remember(self, key, value, column):
        sub = self.cache.get(key)
        if sub is None:
            sub = self.cache[key] = {}
        sub[value] = column

    def pair(self, key, value, i, j):
        """General path for one ``(name, value)`` pair of token ``j`` of
        sequence ``i``: append its entries and cache it when it is a single
        1 or nothing."""
        if not isinstance(key, str):
            raise ValueError(
                f"token {j} of sequence {i}: feature names must be "
                f"strings, got the key {key!r} ({_describe(key)})."
            )
        if isinstance(value, str):
            column = self.lookup(f"{key}{self.separator}{value}")
            self.remember(key, value, column)
            self.indices.append(column)
        elif isinstance(value, (bool, np.bool_)):
            column = self.lookup(key) if value else _DROP
            self.remember(key, value, column)
            self.indices.append(column)
        elif isinstance(value, numbers.Real):
            number = self.number(value, key, i, j)
            if number == 0.0:
                self.remember(key, value, _DROP)
                return
            column = self.lookup(key)
            if number == 1.0:
                self.remember(key, value, column)
            self.emit(column, number)
        else:
            self.nested(key, value, i, j)

    def nested(self, name, value, i, j):
        """Dict values (prefix ``name:``) and string collections, recursively."""
        sep = self.separator
        if isinstance(value, Mapping):
            for sub, sub_value in value.items():
                if not isinstance(sub, str):
                    raise ValueError(
                        f"token {j} of sequence {i}: feature names must be "
                        f"strings, got the key {sub!r} ({_describe(sub)}) "
                        f"inside the dict value of {name!r}."
                    )
                full = f"{name}:{sub}"
                if isinstance(sub_value, str):
                    self.emit(self.lookup(f"{full}{sep}{sub_value}"), 1.0)
                elif isinstance(sub_value, (bool, np.bool_)):
                    if sub_value:
                        self.emit(self.lookup(full), 1.0)
                elif isinstance(sub_value, numbers.Real):
                    number = self.number(sub_value, full, i, j)
                    if number != 0.0:
                        self.emit(self.lookup(full), number)
                else:
                    self.nested(full, sub_value, i, j)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for element in value:
                if not isinstance(element, str):
                    raise ValueError(
                        f"token {j} of sequence {i}, feature {name!r}: a list, "
                        "tuple or set value must hold strings (one indicator "
                        f"each), found a {_describe(element)}."
                    )
                self.emit(self.lookup(f"{name}{sep}{element}"), 1.0)
        else:
            raise ValueError(
                f"token {j} of sequence {i}, feature {name!r}: unsupported "
                f"value type {_describe(value)}; use a string (indicator), a "
                "bool, a real number, a dict (nested features) or a list of "
                "strings."
            )

    @staticmethod
    def number(value, name, i, j):
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(
                f"token {j} of sequence {i}, feature {name!r}: the value "
                f"{number} is not finite; feature values must be finite numbers."
            )
        return number

    def resume(self, token, row_start, i, j):
        """Finish a token after the hot path stopped at an uncached pair.

        The hot path appended the columns of the pairs before the first
        uncached one (dicts keep their order), so the work restarts there,
        pair by pair: a token with one unseen pair often has several (a rare
        word shows up in several window and conjunction features), and a
        plain loop costs less than one exception per miss.
        """
        indices = self.indices
        append = indices.append
        cache_get = self.cache.get
        lookup = self.lookup
        remember = self.remember
        sep = self.separator
        done = len(indices) - row_start
        for key, value in islice(token.items(), done, None):
            sub = cache_get(key)
            if sub is not None:
                if type(value) is str:
                    column = sub.get(value)
                    if column is not None:
                        append(column)
                        continue
                else:
                    try:
                        append(sub[value])
                        continue
                    except (KeyError, TypeError):  # unseen, or unhashable
                        pass
            if type(value) is str and type(key) is str:
                column = lookup(f"{key}{sep}{value}")
                if sub is None:
                    remember(key, value, column)
                else:
                    sub[value] = column
                append(column)
            else:
                self.pair(key, value, i, j)

    def run(self, X):
        """Encode every token of X; return (indptr list, lengths list).

        ``indices`` may hold ``_DROP`` entries, removed by the caller.
        """
        cache_get = self.cache.__getitem__
        sub_get = dict.__getitem__
        indices = self.indices
        extend = indices.extend
        indptr = [0]
        add_row = indptr.append
        lengths = []
        add_length = lengths.append
        resume = self.resume
        for i, seq in _iter_sequences(X):
            for j, token in enumerate(seq):
                if type(token) is not dict and not isinstance(token, Mapping):
                    raise ValueError(
                        f"token {j} of sequence {i} is a {_describe(token)}, "
                        "not a dict of features."
                    )
                # Hot path, when every pair of the token is cached: the
                # lookups run in C, with no Python-level loop over the pairs;
                # dropped pairs give _DROP, removed later in one NumPy pass.
                try:
                    extend(map(sub_get, map(cache_get, token), token.values()))
                except (KeyError, TypeError):
                    resume(token, indptr[-1], i, j)
                add_row(len(indices))
            add_length(len(seq))
        return indptr, lengths


def _column_dtype(n):
    return np.int32 if n <= np.iinfo(np.int32).max else np.int64


class SequenceVectorizer(TagsMixin, TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """Turn sequences of feature dicts into per-sequence sparse matrices.

    Each sequence is a list of tokens and each token a dict ``{name: value}``
    written as for sklearn-crfsuite:

    - a string value ``v`` is an indicator: feature ``name + separator + v``
      with value 1;
    - a bool is the feature ``name`` with value 1 when True (absent when
      False);
    - a real number (int, float, NumPy scalar) is the feature ``name`` with
      that value; NaN and infinities are rejected;
    - a dict value ``{sub: value}`` gives the features ``name:sub`` with the
      same rules, recursively (as python-crfsuite does);
    - a list, tuple or set of strings gives one indicator
      ``name + separator + element`` per element (repeats add up).

    Zero values are not stored. Features not seen in ``fit`` are ignored by
    ``transform``. With ``separator=":"`` the feature names are exactly those
    python-crfsuite builds (and sklearn-crfsuite shows in ``state_features_``).

    Parameters
    ----------
    separator : str, default="="
        Placed between a feature name and a string value.
    dtype : floating dtype, default=np.float64
        Dtype of the matrices' values.
    sort : bool, default=True
        Sort the vocabulary by feature name, so that columns do not depend
        on the order of the training data. With False, columns follow the
        order in which features are first seen.

    Attributes
    ----------
    vocabulary_ : dict
        Feature name to column index.
    feature_names_ : list of str
        Feature names, in column order.

    See Also
    --------
    TokenFeatures : Builds the feature dicts from words and columns.
    sklearn.feature_extraction.DictVectorizer : The same for flat samples.

    Examples
    --------
    >>> from sksparse_struct.feature_extraction import SequenceVectorizer
    >>> X = [[{"w": "the", "title": False}, {"w": "Cat", "title": True, "len": 3}],
    ...      [{"w": "sat"}]]
    >>> vec = SequenceVectorizer()
    >>> matrices = vec.fit_transform(X)
    >>> vec.get_feature_names_out().tolist()
    ['len', 'title', 'w=Cat', 'w=sat', 'w=the']
    >>> matrices[0].toarray().tolist()
    [[0.0, 0.0, 0.0, 0.0, 1.0], [3.0, 1.0, 1.0, 0.0, 0.0]]
    >>> vec.transform([[{"w": "sat", "w2": "unseen"}], []])[1].shape
    (0, 5)
    """

    _parameter_constraints: dict = {
        "separator": [str],
        "dtype": "no_validation",
        "sort": ["boolean"],
    }

    def __init__(self, *, separator="=", dtype=np.float64, sort=True):
        self.separator = separator
        self.dtype = dtype
        self.sort = sort

    def __getstate__(self):
        # The transform cache is rebuilt from the vocabulary when needed.
        state = dict(super().__getstate__())
        state.pop("_pair_cache", None)
        return state

    def _value_dtype(self):
        try:
            dtype = np.dtype(self.dtype)
        except TypeError as exc:
            raise ValueError(f"dtype={self.dtype!r} is not a NumPy dtype.") from exc
        if dtype.kind != "f":
            raise ValueError(
                f"dtype must be a floating dtype (e.g. np.float64, np.float32), "
                f"got {dtype}."
            )
        return dtype

    def _encode(self, X, fitting):
        dtype = self._value_dtype()
        vocab = {} if fitting else self.vocabulary_
        cache = None
        if not fitting:
            cache = self.__dict__.get("_pair_cache")
            if cache is None:
                cache = self._pair_cache = _transform_cache(vocab, self.separator)
        encoder = _Encoder(vocab, fitting, self.separator, cache)
        indptr, lengths = encoder.run(X)
        n_features = len(vocab)
        indices = np.array(encoder.indices, dtype=_column_dtype(n_features))
        data = np.ones(indices.shape[0], dtype=dtype)
        if encoder.value_pos:
            data[encoder.value_pos] = encoder.values
        indptr = np.array(indptr, dtype=np.int64)
        keep = indices >= 0
        if not keep.all():
            kept_before = np.zeros(keep.shape[0] + 1, dtype=np.int64)
            np.cumsum(keep, out=kept_before[1:])
            indptr = kept_before[indptr]
            indices = indices[keep]
            data = data[keep]
        if fitting:
            names = list(vocab)
            if self.sort and n_features:
                # C-level steps only: sort the strings themselves, build the
                # new dict from zip, and map old columns to new ones.
                first_seen = names
                names = sorted(first_seen)
                vocab = dict(zip(names, range(n_features)))
                new_column = np.fromiter(
                    map(vocab.__getitem__, first_seen),
                    dtype=indices.dtype,
                    count=n_features,
                )
                indices = new_column[indices]
            self.vocabulary_ = vocab
            self.feature_names_ = names
            # The transform cache is built now, while the strings are hot (a
            # first transform would otherwise pay for it, e.g. in predict).
            self._pair_cache = _transform_cache(vocab, self.separator)
        stacked = sp.csr_matrix(
            (data, indices, indptr), shape=(len(indptr) - 1, n_features)
        )
        # Sorted column indices without repeats (a list value with a
        # repeated string, a name built two ways) is what kernels expect.
        stacked.sum_duplicates()
        return stacked, np.asarray(lengths, dtype=np.int64)

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the vocabulary of feature names.

        Parameters
        ----------
        X : list of sequences of dicts
            Training sequences; each a list of token dicts.
        y : None
            Ignored.

        Returns
        -------
        self : SequenceVectorizer
            The fitted vectorizer.
        """
        self._encode(X, fitting=True)
        return self

    def _fit_transform_stacked(self, X):
        """Fit, then return all tokens stacked in one CSR matrix and the lengths.

        Private fast path for estimators: no per-sequence matrices are built.
        """
        self._validate_params()
        return self._encode(X, fitting=True)

    def _transform_stacked(self, X):
        """All tokens of X stacked in one CSR matrix, and the sequence lengths."""
        check_is_fitted(self, "vocabulary_")
        return self._encode(X, fitting=False)

    @staticmethod
    def _split(stacked, lengths):
        """Cut a stacked CSR matrix into one CSR matrix per sequence."""
        return list(StackedSequences(stacked, lengths))

    def fit_transform(self, X, y=None):
        """Learn the vocabulary and return one sparse matrix per sequence.

        Parameters
        ----------
        X : list of sequences of dicts
            Training sequences; each a list of token dicts.
        y : None
            Ignored.

        Returns
        -------
        Xt : list of scipy.sparse.csr_matrix
            Matrix ``i`` has shape ``(len(X[i]), n_features)``.
        """
        return self._split(*self._fit_transform_stacked(X))

    def transform(self, X):
        """Vectorize sequences with the learnt vocabulary.

        Parameters
        ----------
        X : list of sequences of dicts
            Sequences to vectorize; features not seen in ``fit`` are ignored.

        Returns
        -------
        Xt : list of scipy.sparse.csr_matrix
            Matrix ``i`` has shape ``(len(X[i]), n_features)``; an empty
            sequence gives a matrix with no rows.
        """
        return self._split(*self._transform_stacked(X))

    def inverse_transform(self, Xt):
        """Turn matrices back into sequences of ``{feature name: value}`` dicts.

        String features come back under their full name (``"w=the": 1.0``).

        Parameters
        ----------
        Xt : list of sparse matrices or arrays of shape (n_tokens, n_features)
            As returned by :meth:`transform`.

        Returns
        -------
        X : list of lists of dicts
            One dict per token, holding its nonzero features.
        """
        check_is_fitted(self, "vocabulary_")
        names = self.feature_names_
        out = []
        for i, matrix in enumerate(Xt):
            matrix = sp.csr_matrix(matrix)
            if matrix.ndim != 2 or matrix.shape[1] != len(names):
                raise ValueError(
                    f"matrix {i} has shape {matrix.shape}; expected "
                    f"(n_tokens, {len(names)})."
                )
            tokens = []
            for r in range(matrix.shape[0]):
                lo, hi = matrix.indptr[r], matrix.indptr[r + 1]
                tokens.append(
                    {
                        names[c]: v
                        for c, v in zip(
                            matrix.indices[lo:hi].tolist(), matrix.data[lo:hi].tolist()
                        )
                        if v != 0
                    }
                )
            out.append(tokens)
        return out

    def get_feature_names_out(self, input_features=None):
        """Feature names in column order.

        Parameters
        ----------
        input_features : None
            Ignored; present for API consistency.

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self, "vocabulary_")
        return np.asarray(self.feature_names_, dtype=object)

    _sklearn_tags = {"input_tags.two_d_array": False, "input_tags.dict": True}
