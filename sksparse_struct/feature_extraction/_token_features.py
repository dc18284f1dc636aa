"""Sequences of tokens to sequences of feature dicts.

Every feature is the value of a token *attribute* (the word, its lower-case
form, its shape, an affix, a flag, another column such as the part of
speech) at an offset from the current token, or a conjunction of several
such values (a *template*, as in CRFsuite). Features whose offset falls
outside the sequence are left out, as CRFsuite's example scripts do; the
``__BOS__`` / ``__EOS__`` markers say where the sequence starts and ends.

For speed the work is done per template over a whole sequence (list slices
and ``zip``), and the attributes of a word (shape, affixes, flags) are
computed once per distinct word within a call.

With ``output="matrix"`` no dict is built: each distinct string of a call
is hashed once (``_token_features_fast.hash_ranges``), and compiled kernels
combine the hashes of every token's templates into 64-bit feature keys and
look them up in the vocabulary learnt by ``fit`` (``_token_hashing``). The
attributes derived from a word (flags, shapes, affixes) are defined once,
for both outputs, in ``_token_attributes``.
"""

from collections import deque
from itertools import repeat
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from ..utils._estimator import TagsMixin
from ..utils._sklearn_compat import StrOptions
from . import _token_features_fast as fast
from ._stacked import StackedSequences
from ._token_attributes import _FLAGS, ALL_FLAGS, _is_affix, _is_word_attr, _WordInfo
from ._token_hashing import _HashedTokens, _TemplateTable, _Vocabulary

__all__ = ["TokenFeatures", "CONLL2000_TEMPLATES"]

# The classic CRFsuite chunking template (example/chunking.py of CRFsuite):
# words at -2..2, the two word bigrams around the current word, POS at
# -2..2, the four POS bigrams and the three POS trigrams.
CONLL2000_TEMPLATES = (
    (("w", -2),),
    (("w", -1),),
    (("w", 0),),
    (("w", 1),),
    (("w", 2),),
    (("w", -1), ("w", 0)),
    (("w", 0), ("w", 1)),
    (("pos", -2),),
    (("pos", -1),),
    (("pos", 0),),
    (("pos", 1),),
    (("pos", 2),),
    (("pos", -2), ("pos", -1)),
    (("pos", -1), ("pos", 0)),
    (("pos", 0), ("pos", 1)),
    (("pos", 1), ("pos", 2)),
    (("pos", -2), ("pos", -1), ("pos", 0)),
    (("pos", -1), ("pos", 0), ("pos", 1)),
    (("pos", 0), ("pos", 1), ("pos", 2)),
)

_BASE = {
    "window": 0,
    "word": True,
    "lower": False,
    "prefixes": (),
    "suffixes": (),
    "shape": False,
    "short_shape": False,
    "flags": (),
    "spelling_window": 0,
    "column_features": (),
    "templates": (),
    "bias": True,
    "bos_eos": False,
}

_PRESETS = {
    None: {},
    "conll2000": {
        "word": False,
        "bias": False,
        "templates": CONLL2000_TEMPLATES,
        "bos_eos": True,
    },
    "pos": {
        "window": 1,
        "word": False,
        "lower": True,
        "prefixes": (1, 2, 3),
        "suffixes": (1, 2, 3, 4),
        "short_shape": True,
        "flags": ("is_title", "is_upper", "is_digit", "has_digit",
                  "has_hyphen", "is_punct"),
        # The current word as written and the 2- and 3-letter suffixes of
        # the neighbours: 5 features per token for +0.6 points of token
        # accuracy on EWT dev (a linear SVM on 5,000 training sentences:
        # 91.55% -> 92.17%).
        "templates": (
            (("w", 0),),
            (("suffix2", -1),),
            (("suffix3", -1),),
            (("suffix2", 1),),
            (("suffix3", 1),),
        ),
        "bias": True,
        "bos_eos": True,
    },
}


def _offsets(window, name):
    """``range`` of offsets of a window given as ``k`` or ``(left, right)``."""
    if isinstance(window, Integral) and not isinstance(window, bool):
        left = right = int(window)
    elif (
        isinstance(window, (tuple, list))
        and len(window) == 2
        and all(isinstance(k, Integral) and not isinstance(k, bool) for k in window)
    ):
        left, right = int(window[0]), int(window[1])
    else:
        raise ValueError(
            f"{name} must be a non-negative int or a pair (left, right) of "
            f"non-negative ints, got {window!r}."
        )
    if left < 0 or right < 0:
        raise ValueError(f"{name} must not be negative, got {window!r}.")
    return range(-left, right + 1)


def _lengths(value, name):
    if not isinstance(value, (tuple, list)) or not all(
        isinstance(k, Integral) and not isinstance(k, bool) and k >= 1 for k in value
    ):
        raise ValueError(
            f"{name} must be a tuple of positive ints (affix lengths), got {value!r}."
        )
    return tuple(dict.fromkeys(int(k) for k in value))


class _Plan:
    """The resolved feature set: unigram and conjunction templates over
    attributes, and the columns and word attributes they need."""

    def __init__(self, params, columns, word_column):
        self.bias = params["bias"]
        self.bos_eos = params["bos_eos"]
        self.word_column = word_column
        window = _offsets(params["window"], "window")
        spelling = _offsets(params["spelling_window"], "spelling_window")
        # (name, attribute, offset, kind): kind "str" (always present),
        # "opt" (an affix, absent for short words) or "flag" (True or absent).
        unigrams = []
        if params["word"]:
            unigrams += [("w", o, "str") for o in window]
        if params["lower"]:
            unigrams += [("lower", o, "str") for o in window]
        for k in _lengths(params["prefixes"], "prefixes"):
            unigrams += [(f"prefix{k}", o, "opt") for o in spelling]
        for k in _lengths(params["suffixes"], "suffixes"):
            unigrams += [(f"suffix{k}", o, "opt") for o in spelling]
        if params["shape"]:
            unigrams += [("shape", o, "str") for o in spelling]
        if params["short_shape"]:
            unigrams += [("short_shape", o, "str") for o in spelling]
        flags = params["flags"]
        if not isinstance(flags, (tuple, list)) or any(f not in _FLAGS for f in flags):
            raise ValueError(
                f"flags must be a tuple of names among {ALL_FLAGS}, got {flags!r}."
            )
        for flag in dict.fromkeys(flags):
            unigrams += [(flag, o, "flag") for o in spelling]
        column_features = params["column_features"]
        if isinstance(column_features, str) or not isinstance(
            column_features, (tuple, list)
        ):
            raise ValueError(
                "column_features must be a tuple of column names, got "
                f"{column_features!r}."
            )
        for column in column_features:
            attr = self._attribute(column, "column_features")
            unigrams += [(attr, o, "str") for o in window]
        templates = []
        for name, offset, kind in unigrams:
            templates.append((f"{name}[{offset}]", ((name, offset),), kind))
        raw = params["templates"]
        if not isinstance(raw, (tuple, list)):
            raise ValueError(
                "templates must be a tuple of templates, each a tuple of "
                f"(attribute, offset) pairs; got {raw!r}."
            )
        for template in raw:
            templates.append(self._template(template))
        self.templates = templates
        attrs = {attr for _, parts, _ in templates for attr, _ in parts}
        self.word_attrs = tuple(sorted(a for a in attrs if a != "w" and _is_word_attr(a)))
        self.needs_word = "w" in attrs or bool(self.word_attrs)
        self.columns = tuple(sorted(a for a in attrs if not _is_word_attr(a)))
        needed = ((word_column,) if self.needs_word else ()) + self.columns
        missing = [c for c in needed if c not in columns]
        self.tuple_positions = None
        if not missing:
            self.tuple_positions = tuple(columns.index(c) for c in needed)
        self.missing_tuple_columns = missing
        self.n_tuple_columns = len(columns)

    def _attribute(self, name, where):
        if not isinstance(name, str):
            raise ValueError(f"{where}: attribute names must be strings, got {name!r}.")
        if name in ("w", "word", self.word_column):
            return "w"
        return name

    def _template(self, template):
        bad = ValueError(
            "each template must be a non-empty tuple of (attribute, offset) "
            f"pairs, e.g. (('w', -1), ('w', 0)); got {template!r}."
        )
        if not isinstance(template, (tuple, list)) or not template:
            raise bad
        parts = []
        for part in template:
            if (
                not isinstance(part, (tuple, list))
                or len(part) != 2
                or not isinstance(part[1], Integral)
                or isinstance(part[1], bool)
            ):
                raise bad
            attr = self._attribute(part[0], "templates")
            parts.append((attr, int(part[1])))
        kinds = {
            "flag" if a in _FLAGS else "opt" if _is_affix(a) else "str"
            for a, _ in parts
        }
        if len(parts) > 1 and kinds != {"str"}:
            raise ValueError(
                f"template {template!r}: conjunctions take string attributes "
                "(the word, lower, shape, short_shape or a column), not "
                "affixes or flags."
            )
        name = "|".join(f"{a}[{o}]" for a, o in parts)
        return name, tuple(parts), kinds.pop()


def _token_error(i, j, message):
    return ValueError(f"token {j} of sequence {i}: {message}")


class TokenFeatures(TagsMixin, TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """Turn sequences of tokens into sequences of feature dicts, or feature matrices.

    A token is a string (the word), a tuple of columns named by ``columns``
    (e.g. ``("He", "PRP")``) or a dict of columns (e.g. ``{"word": "He",
    "pos": "PRP"}``, as :func:`~sksparse_struct.datasets.read_conll` returns
    them). The output, one dict ``{feature: value}`` per token, is what
    :class:`SequenceVectorizer`, the estimators of this package and
    sklearn-crfsuite consume. With ``output="matrix"`` the same features
    go straight to sparse matrices, computed in compiled code without a
    dict: ``fit`` learns the vocabulary of the features seen in training
    (as :class:`SequenceVectorizer` would on the dicts), and ``transform``
    returns a :class:`StackedSequences`, the matrix of every token that is
    also the list of the per-sequence matrices, which the taggers read
    directly.

    Features are named ``attribute[offset]``: ``w[-1]`` is the previous
    word, ``pos[0]`` the current column ``pos``, ``suffix3[0]`` the last
    three letters of the current word; a template joins names and values
    with ``|`` (``w[-1]|w[0]`` with value ``"He|reckons"``). Features that
    would look outside the sequence are left out.

    **Presets and explicit parameters.** Every feature parameter defaults to
    None, meaning "as the preset says"; a value given explicitly replaces
    the preset's value for that parameter only. With ``preset=None`` the
    base values are: ``window=0, word=True, lower=False, prefixes=(),
    suffixes=(), shape=False, short_shape=False, flags=(),
    spelling_window=0, column_features=(), templates=(), bias=True,
    bos_eos=False`` (the current word and a bias). :meth:`resolved_params`
    shows the values in force.

    - ``preset="conll2000"``: exactly the classic CRFsuite CoNLL-2000
      chunking template (``templates=CONLL2000_TEMPLATES``: ``w[-2]`` ...
      ``w[2]``, ``w[-1]|w[0]``, ``w[0]|w[1]``, ``pos[-2]`` ... ``pos[2]``, the
      four POS bigrams and three POS trigrams) with ``__BOS__``/``__EOS__``,
      no bias and nothing else.
    - ``preset="pos"``: a part-of-speech tagging set from words only: bias,
      lower-cased words at -1, 0, 1, prefixes 1-3 and suffixes 1-4, short
      shape and the flags ``is_title``, ``is_upper``, ``is_digit``,
      ``has_digit``, ``has_hyphen``, ``is_punct`` of the current word, and
      as ``templates`` the current word as written and the suffixes 2 and 3
      of the previous and next words; ``__BOS__``/``__EOS__``.

    Parameters
    ----------
    preset : {"conll2000", "pos"} or None, default=None
        Named feature set the other parameters start from.
    columns : tuple of str, default=("word", "pos")
        Names of the columns of tuple tokens, by position.
    word_column : str, default="word"
        Name of the word column (key of dict tokens; a string token is the
        word itself). In templates the word is called ``"w"`` (``"word"`` and
        ``word_column`` are accepted too).
    window : int or (int, int), default=None
        Offsets (``k`` means ``-k..k``, ``(left, right)`` means
        ``-left..right``) at which ``word``, ``lower`` and
        ``column_features`` are extracted.
    word : bool, default=None
        The word as it is, ``w[o]``.
    lower : bool, default=None
        The lower-cased word, ``lower[o]``.
    prefixes, suffixes : tuple of int, default=None
        Affix lengths: ``prefix{k}[o]`` / ``suffix{k}[o]``, for words of at
        least ``k`` characters.
    shape : bool, default=None
        ``shape[o]``: letters mapped to ``X``/``x``, digits to ``d``
        (``"Xxxx"``, ``"dd"``).
    short_shape : bool, default=None
        ``short_shape[o]``: the shape with repeated characters collapsed
        (``"Xx"``, ``"d"``).
    flags : tuple of str, default=None
        Boolean features ``flag[o]`` (present only when true), among
        ``"is_title"``, ``"is_upper"``, ``"is_lower"``, ``"is_digit"``,
        ``"has_digit"``, ``"has_upper"``, ``"has_hyphen"``, ``"is_punct"``
        (every character a Unicode punctuation mark).
    spelling_window : int or (int, int), default=None
        Offsets at which affixes, shapes and flags are extracted.
    column_features : tuple of str, default=None
        Other columns (e.g. ``("pos",)``) extracted at the ``window`` offsets.
    templates : tuple of templates, default=None
        Extra features, each a tuple of ``(attribute, offset)`` pairs; several
        pairs make a conjunction, e.g. ``(("w", -1), ("w", 0))``. Attributes:
        ``"w"``, ``"lower"``, ``"shape"``, ``"short_shape"`` or a column
        name; single-pair templates may also use ``"prefix{k}"``,
        ``"suffix{k}"`` and the flags. These derived names take precedence
        over columns of the same name.
    bias : bool, default=None
        A constant feature ``bias`` (value 1.0) on every token.
    bos_eos : bool, default=None
        ``__BOS__`` on the first token and ``__EOS__`` on the last (both
        True).
    output : {"dicts", "matrix"}, default="dicts"
        ``"dicts"``: lists of feature dicts. ``"matrix"``: a
        :class:`StackedSequences` in the column space of the features seen
        by ``fit``; features unseen in ``fit`` are dropped, and every value
        is 1 (each feature is an indicator, ``bias`` and the flags
        included).

    Attributes
    ----------
    feature_names_ : list of str
        Only with ``output="matrix"``: the name of each column, as
        :class:`SequenceVectorizer` names the dicts' features
        (``"w[0]=He"``, ``"is_title[0]"``, ``"bias"``).

    See Also
    --------
    SequenceVectorizer : Turns the feature dicts into sparse matrices.
    StackedSequences : The output with ``output="matrix"``.

    Notes
    -----
    With ``output="dicts"`` the transformer is stateless: ``fit`` only
    validates the parameters, and ``transform`` can be called without it.

    With ``output="matrix"`` a matrix holds the features the dicts would
    hold, feature for feature, except where a conjunction's values contain
    ``|``: the dicts join ``("a|b", "c")`` and ``("a", "b|c")`` into the
    same string, the matrix keeps them apart. A feature is known by a
    64-bit hash of its template's name and values, computed from the
    strings' code points (the same in every process, so a pickled model
    works anywhere); two features of a vocabulary share a hash with
    negligible probability (about ``n**2 / 2**65`` for ``n`` features).
    Columns follow the order in which ``fit`` first sees the features (as
    ``SequenceVectorizer(sort=False)`` orders them).

    Examples
    --------
    >>> from sksparse_struct.feature_extraction import TokenFeatures
    >>> sentence = [("He", "PRP"), ("reckons", "VBZ"), ("the", "DT")]
    >>> feats = TokenFeatures(preset="conll2000").fit_transform([sentence])
    >>> feats[0][0]
    {'w[0]': 'He', 'w[1]': 'reckons', 'w[2]': 'the', 'w[0]|w[1]': 'He|reckons', \
'pos[0]': 'PRP', 'pos[1]': 'VBZ', 'pos[2]': 'DT', 'pos[0]|pos[1]': 'PRP|VBZ', \
'pos[1]|pos[2]': 'VBZ|DT', 'pos[0]|pos[1]|pos[2]': 'PRP|VBZ|DT', '__BOS__': True}
    >>> TokenFeatures(lower=True, word=False, suffixes=(2,), flags=("is_title",)
    ...               ).transform([["He", "ran"]])
    [[{'bias': 1.0, 'lower[0]': 'he', 'suffix2[0]': 'He', 'is_title[0]': True}, \
{'bias': 1.0, 'lower[0]': 'ran', 'suffix2[0]': 'an'}]]

    The same features as a matrix, ready for a tagger:

    >>> tf = TokenFeatures(preset="conll2000", output="matrix").fit([sentence])
    >>> Xt = tf.transform([sentence, [("She", "PRP")]])
    >>> Xt
    StackedSequences(n_sequences=2, n_tokens=4, n_features=33)
    >>> Xt.matrix.shape, Xt[1].shape
    ((4, 33), (1, 33))
    >>> sorted(tf.feature_names_[j] for j in Xt[1].indices)
    ['__BOS__', '__EOS__', 'pos[0]=PRP']
    """

    _parameter_constraints: dict = {
        "preset": [StrOptions(set(p for p in _PRESETS if p)), None],
        "columns": [tuple, list],
        "word_column": [str],
        "window": "no_validation",
        "word": ["boolean", None],
        "lower": ["boolean", None],
        "prefixes": [tuple, list, None],
        "suffixes": [tuple, list, None],
        "shape": ["boolean", None],
        "short_shape": ["boolean", None],
        "flags": [tuple, list, None],
        "spelling_window": "no_validation",
        "column_features": [tuple, list, None],
        "templates": [tuple, list, None],
        "bias": ["boolean", None],
        "bos_eos": ["boolean", None],
        "output": [StrOptions({"dicts", "matrix"})],
    }

    def __init__(
        self,
        preset=None,
        *,
        columns=("word", "pos"),
        word_column="word",
        window=None,
        word=None,
        lower=None,
        prefixes=None,
        suffixes=None,
        shape=None,
        short_shape=None,
        flags=None,
        spelling_window=None,
        column_features=None,
        templates=None,
        bias=None,
        bos_eos=None,
        output="dicts",
    ):
        self.preset = preset
        self.columns = columns
        self.word_column = word_column
        self.window = window
        self.word = word
        self.lower = lower
        self.prefixes = prefixes
        self.suffixes = suffixes
        self.shape = shape
        self.short_shape = short_shape
        self.flags = flags
        self.spelling_window = spelling_window
        self.column_features = column_features
        self.templates = templates
        self.bias = bias
        self.bos_eos = bos_eos
        self.output = output

    def resolved_params(self):
        """The feature parameters in force: the preset's, then explicit ones.

        Returns
        -------
        params : dict
            One entry per feature parameter (``window`` ... ``bos_eos``).

        Examples
        --------
        >>> from sksparse_struct.feature_extraction import TokenFeatures
        >>> p = TokenFeatures(preset="pos", suffixes=(1, 2)).resolved_params()
        >>> p["suffixes"], p["prefixes"], p["window"]
        ((1, 2), (1, 2, 3), 1)
        """
        self._validate_params()
        params = dict(_BASE)
        params.update(_PRESETS[self.preset])
        for name in _BASE:
            value = getattr(self, name)
            if value is not None:
                params[name] = value
        return params

    def _plan(self):
        params = self.resolved_params()
        columns = self.columns
        if not all(isinstance(c, str) for c in columns) or len(set(columns)) != len(
            columns
        ):
            raise ValueError(
                f"columns must be distinct strings, got {columns!r}."
            )
        return _Plan(params, tuple(columns), self.word_column)

    def fit(self, X=None, y=None):
        """Check the parameters; with ``output="matrix"``, learn the vocabulary.

        Parameters
        ----------
        X : list of sequences of tokens, default=None
            Ignored with ``output="dicts"``; the training sequences with
            ``output="matrix"``.
        y : None
            Ignored.

        Returns
        -------
        self : TokenFeatures
        """
        plan = self._plan()
        if self.output == "matrix":
            self._fit_matrix(plan, X)
        return self

    def fit_transform(self, X, y=None):
        """Fit, then transform ``X``, in one pass over it.

        Parameters
        ----------
        X : list of sequences of tokens
            Each token a string, a tuple of columns or a dict of columns.
        y : None
            Ignored.

        Returns
        -------
        Xt : list of lists of dicts, or StackedSequences
            As :meth:`transform` returns it.
        """
        plan = self._plan()
        if self.output != "matrix":
            return self.transform(X)
        return self._fit_matrix(plan, X)

    def transform(self, X):
        """Feature dicts (or the feature matrix) of every token.

        Parameters
        ----------
        X : list of sequences of tokens
            Each token a string, a tuple of columns or a dict of columns.

        Returns
        -------
        Xt : list of lists of dicts, or StackedSequences
            With ``output="dicts"``, one dict ``{feature name: value}`` per
            token; string values mean indicator features, True a binary
            feature, numbers real features. With ``output="matrix"``, the
            token matrix of shape ``(n_tokens, len(feature_names_))``, also
            the list of the per-sequence matrices; features unseen in
            ``fit`` are dropped.
        """
        plan = self._plan()
        if self.output == "matrix":
            check_is_fitted(self)
            hashed = self._hashed(plan, X)
            indptr, keys, _ = _TemplateTable(plan, hashed.names).keys(hashed)
            return self._rows(hashed, indptr, keys)
        sequences = self._sequences(X)
        info = _WordInfo(plan.word_attrs)
        return [self._sequence(plan, info, seq, i) for i, seq in enumerate(sequences)]

    @staticmethod
    def _sequences(X):
        if isinstance(X, (str, bytes, dict)):
            raise ValueError(
                "X must be a list of sequences of tokens, got a "
                f"{type(X).__name__}."
            )
        try:
            return iter(X)
        except TypeError:
            raise ValueError(
                f"X must be a list of sequences of tokens, got a "
                f"{type(X).__name__}."
            ) from None

    def _hashed(self, plan, X):
        """The attribute hashes of every token of X."""
        needed = ((plan.word_column,) if plan.needs_word else ()) + plan.columns
        flat = lengths = None
        if type(X) is list and all(type(seq) is list for seq in X):
            flat, lengths = self._flat_columns(plan, X, needed)
        if flat is None:
            # Sequence by sequence, which names the first bad token.
            flat = {name: [] for name in needed}
            lengths = []
            for i, seq in enumerate(self._sequences(X)):
                n, cols = self._columns(plan, seq, i)
                for name, values in cols.items():
                    flat[name] += values
                lengths.append(n)
        return _HashedTokens(plan, flat, lengths)

    @staticmethod
    def _flat_columns(plan, X, needed):
        """The needed columns of all tokens when they are all of one kind and
        hold strings, else ``(None, None)``."""
        tokens = [t for seq in X for t in seq]
        kinds = set(map(type, tokens))
        try:
            if kinds == {dict}:
                flat = {name: [t[name] for t in tokens] for name in needed}
            elif kinds == {tuple} and plan.tuple_positions is not None:
                if set(map(len, tokens)) != {plan.n_tuple_columns}:
                    return None, None
                flat = {name: [t[k] for t in tokens]
                        for name, k in zip(needed, plan.tuple_positions)}
            elif kinds <= {str} and not plan.columns:
                flat = {name: tokens for name in needed}
            else:
                return None, None
        except KeyError:
            return None, None
        if any(set(map(type, values)) - {str} for values in flat.values()):
            return None, None
        return flat, list(map(len, X))

    def _fit_matrix(self, plan, X):
        """Learn the vocabulary of ``X``'s features; return ``X``'s matrix."""
        if X is None:
            raise ValueError(
                "TokenFeatures(output='matrix').fit needs the training sequences X "
                "(it learns the vocabulary of their features)."
            )
        hashed = self._hashed(plan, X)
        table = _TemplateTable(plan, hashed.names)
        indptr, keys, template = table.keys(hashed)
        self._vocabulary = _Vocabulary(table, hashed, keys, indptr, template)
        return self._rows(hashed, indptr, keys)

    def _rows(self, hashed, indptr, keys):
        vocabulary = self._vocabulary
        indptr, indices = fast.lookup_rows(indptr, keys, vocabulary.table)
        data = np.ones(indices.shape[0], dtype=np.float64)
        matrix = sp.csr_matrix(
            (data, indices, indptr), shape=(len(indptr) - 1, vocabulary.n_columns)
        )
        return StackedSequences(matrix, hashed.lengths)

    def __sklearn_is_fitted__(self):
        return self.output != "matrix" or "_vocabulary" in self.__dict__

    @property
    def feature_names_(self):
        """Column names of ``output="matrix"`` (see the class docstring)."""
        if "_vocabulary" not in self.__dict__:
            raise NotFittedError(
                "feature_names_ exists once TokenFeatures(output='matrix') is fitted."
            )
        return self._vocabulary.names()

    def get_feature_names_out(self, input_features=None):
        """Names of the columns of ``output="matrix"``.

        Parameters
        ----------
        input_features : None
            Ignored; present for API consistency.

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        if self.output != "matrix":
            raise ValueError(
                "TokenFeatures has column names only with output='matrix'; its dicts "
                "name their features (SequenceVectorizer learns their columns)."
            )
        check_is_fitted(self)
        return np.asarray(self.feature_names_, dtype=object)

    def _columns(self, plan, seq, i):
        """The needed columns of one sequence, as lists of str."""
        if isinstance(seq, (str, bytes)) or isinstance(seq, dict):
            raise ValueError(
                f"sequence {i} is a {type(seq).__name__}, not a sequence of "
                "tokens. X must be a list of sequences; to transform one "
                "sequence pass [sequence]."
            )
        try:
            seq = list(seq)
        except TypeError:
            raise ValueError(
                f"sequence {i} is a {type(seq).__name__}, which is not iterable."
            ) from None
        word_column = plan.word_column
        needed = ((word_column,) if plan.needs_word else ()) + plan.columns
        cols = self._columns_fast(plan, seq, needed)
        if cols is None:
            cols = self._columns_checked(plan, seq, i, needed)
        for name, values in cols.items():
            if set(map(type, values)) - {str}:
                j = next(j for j, v in enumerate(values) if not isinstance(v, str))
                raise _token_error(
                    i, j, f"column {name!r} holds a {type(values[j]).__name__}, "
                    "not a string."
                )
        return len(seq), cols

    @staticmethod
    def _columns_fast(plan, seq, needed):
        """Columns of a sequence whose tokens are all of one common kind
        (dicts, tuples, strings), or None to take the checked path."""
        if not seq:
            return {name: [] for name in needed}
        kinds = set(map(type, seq))
        try:
            if kinds == {dict}:
                return {name: [t[name] for t in seq] for name in needed}
            if kinds == {tuple} and plan.tuple_positions is not None:
                if set(map(len, seq)) == {plan.n_tuple_columns}:
                    return {
                        name: [t[k] for t in seq]
                        for name, k in zip(needed, plan.tuple_positions)
                    }
            if kinds == {str} and not plan.columns:
                return {name: seq for name in needed}
        except KeyError:
            pass
        return None

    def _columns_checked(self, plan, seq, i, needed):
        """Columns of a sequence, token by token, naming the first bad one."""
        cols = {name: [] for name in needed}
        appends = [cols[name].append for name in needed]
        for j, token in enumerate(seq):
            if type(token) is str:
                if plan.columns:
                    raise _token_error(
                        i, j, f"a string token has only a word, but the features "
                        f"need the column(s) {list(plan.columns)}; give tuples "
                        "or dicts of columns."
                    )
                if plan.needs_word:
                    appends[0](token)
            elif isinstance(token, (tuple, list)):
                if len(token) != plan.n_tuple_columns:
                    raise _token_error(
                        i, j, f"a tuple of {len(token)} values, but columns="
                        f"{tuple(self.columns)!r} names {plan.n_tuple_columns}."
                    )
                if plan.missing_tuple_columns:
                    raise _token_error(
                        i, j, f"the features need the column(s) "
                        f"{plan.missing_tuple_columns}, absent from columns="
                        f"{tuple(self.columns)!r}."
                    )
                for append, k in zip(appends, plan.tuple_positions):
                    append(token[k])
            elif isinstance(token, dict):
                for append, name in zip(appends, needed):
                    try:
                        append(token[name])
                    except KeyError:
                        raise _token_error(
                            i, j, f"the dict token has no column {name!r} "
                            f"(its keys: {list(token)})."
                        ) from None
            else:
                raise _token_error(
                    i, j, f"a {type(token).__name__}; tokens must be strings, "
                    "tuples of columns or dicts of columns."
                )
        return cols

    def _sequence(self, plan, info, seq, i):
        n, cols = self._columns(plan, seq, i)
        if plan.bias:
            dicts = [{"bias": 1.0} for _ in range(n)]
        else:
            dicts = [{} for _ in range(n)]
        if n == 0:
            return dicts
        attrs = {}
        if plan.needs_word:
            words = cols.pop(plan.word_column)
            attrs["w"] = words
            if plan.word_attrs:
                derived = zip(*map(info.__getitem__, words))
                attrs.update(zip(plan.word_attrs, derived))
        attrs.update(cols)
        setitem = dict.__setitem__
        for name, parts, kind in plan.templates:
            offsets = [o for _, o in parts]
            lo = max(0, -min(offsets))
            hi = n - max(0, max(offsets))
            if lo >= hi:
                continue
            targets = dicts[lo:hi]
            if len(parts) == 1:
                attr, o = parts[0]
                values = attrs[attr][lo + o : hi + o]
                if kind == "str":
                    deque(map(setitem, targets, repeat(name), values), maxlen=0)
                elif kind == "opt":
                    for d, v in zip(targets, values):
                        if v is not None:
                            d[name] = v
                else:
                    for d, v in zip(targets, values):
                        if v:
                            d[name] = True
            else:
                slices = [attrs[a][lo + o : hi + o] for a, o in parts]
                values = map("|".join, zip(*slices))
                deque(map(setitem, targets, repeat(name), values), maxlen=0)
        if plan.bos_eos:
            dicts[0]["__BOS__"] = True
            dicts[-1]["__EOS__"] = True
        return dicts

    _sklearn_tags = {"input_tags.two_d_array": False, "input_tags.string": True,
                     "requires_fit": False}

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = self.output == "matrix"
        return tags
