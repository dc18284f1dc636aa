"""Sentences to the compact token encoding that first-order parsers score.

The candidate arcs of a sentence are far too many to store with their
features (UD English-EWT's training set has 5.3 million arcs per epoch and
about 110 features per arc: 2.3 GB as int32). :class:`ArcFeatures` therefore
stores one hash per token attribute (form, lemma, tags, prefix, morphology,
a few flags): 56 bytes per token. The parser's compiled kernels enumerate
the feature templates of every arc from these on the fly and hash them into
the weight vector (``_arc_features_fast.py``).
"""

import zlib
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from ..utils._estimator import TagsMixin
from . import _arc_features_fast as fast

__all__ = ["ARC_PRESETS", "ArcFeatures", "EncodedSentence"]

# The presets of ArcFeatures in the order of their codes in the compiled
# kernels: ARC_PRESETS.index(name) is the code (fast.MST, fast.RICH).
ARC_PRESETS = ("mst", "rich")
_KEYS = ("form", "lemma", "upos", "xpos", "feats")
# Reserved values of the root's attributes.
_ROOT_VALUE = "\x00<root>"


class EncodedSentence:
    """One sentence as :class:`ArcFeatures` hands it to a parser.

    Attributes
    ----------
    tokens : ndarray of shape (n_words + 1, 7), int64
        One hashed value per token attribute (row 0 is the root).
    preset : str
        The feature templates the parser enumerates (``"mst"`` or ``"rich"``).
    n_features : int
        Size of the hashed feature space.
    """

    __slots__ = ("tokens", "preset", "n_features")

    def __init__(self, tokens, preset, n_features):
        self.tokens = tokens
        self.preset = preset
        self.n_features = n_features

    def __len__(self):
        return self.tokens.shape[0] - 1

    def __repr__(self):
        return (
            f"EncodedSentence(n_words={len(self)}, preset={self.preset!r}, "
            f"n_features={self.n_features})"
        )

    def __getstate__(self):
        return (self.tokens, self.preset, self.n_features)

    def __setstate__(self, state):
        self.tokens, self.preset, self.n_features = state


def _hash(column, value):
    return zlib.crc32(f"{column}\x1f{value}".encode("utf-8", "surrogatepass"))


def _flags(upos):
    flags = 0
    if upos in ("VERB", "AUX"):
        flags |= fast.VERB_FLAG
    if upos == "PUNCT":
        flags |= fast.PUNCT_FLAG
    if upos == "CCONJ":
        flags |= fast.COORD_FLAG
    return flags


def _missing(value):
    return value is None or value == "_" or value == ""


class ArcFeatures(TagsMixin, TransformerMixin, BaseEstimator):
    """Encode sentences for the first-order parser's hashed arc features.

    Each token becomes a row of hashed attributes: lower-cased form, lemma,
    universal and language-specific part of speech, five-character prefix,
    morphological features, and flags (verb, punctuation, coordinating
    conjunction) counted between the words of an arc. The parser's compiled
    kernels build every candidate arc's features from them on the fly, so
    nothing the size of the arcs is ever stored.

    The templates, each of them both plain and conjoined with the arc's
    direction and binned distance (1, 2, 3, 4, 5, 6-10, > 10), except that
    features of the modifier alone are only conjoined (alone, they score all
    heads alike):

    - ``"mst"`` (McDonald, Crammer & Pereira 2005): head and modifier word /
      POS unigrams and bigrams (also with five-character prefixes in place of
      words), the POS of every word in between with the two POS, the POS
      around the head and the modifier (4-grams and their 3-gram back-offs),
      direction and distance alone: 48 features per arc plus 2 per
      distinct tag in between.
    - ``"rich"``: ``"mst"`` plus TurboParser-style extras: context words of
      the head and modifier, head and modifier POS trigrams, exact distance
      and a thermometer of distance thresholds, counts of verbs, punctuation
      and coordinations in between, lexicalised in-between POS and
      in-between XPOS, the bigram and surrounding templates again with the
      fine-grained tags (XPOS), lemma pairs, the modifier's morphology:
      about 110 features per arc plus 5 per distinct tag in between.

    Every feature is binary: the in-between templates fire once per distinct
    tag in between, however many words carry it (counts as values made the
    averaged perceptron 0.37 UAS worse on UD English-EWT and changed
    nothing for the other losses).

    This transformer is stateless: ``fit`` only checks the parameters.

    Parameters
    ----------
    preset : {"rich", "mst"}, default="rich"
        The feature templates (the names in
        :data:`~sksparse_struct.feature_extraction.ARC_PRESETS`).
    n_features : int, default=2**22
        Size of the hashed feature space, a power of two (the index of a
        feature is the low bits of its 64-bit hash).

    See Also
    --------
    sksparse_struct.SparseMAPParser : The parser that scores these features.
    sksparse_struct.datasets.read_conllu : Reads sentences in the input format.

    Notes
    -----
    Missing lemmas (``"_"``) fall back to the lower-cased form, a missing
    XPOS to the UPOS. Input sentences are lists of token dicts with at
    least a ``"form"`` key (``"lemma"``, ``"upos"``, ``"xpos"``, ``"feats"``
    used when present), as :func:`~sksparse_struct.datasets.read_conllu`
    returns them, or lists of ``(form, upos)`` pairs, or lists of words.
    ``"feats"`` may be CoNLL-U's string (``"Number=Sing|Person=3"``) or a
    dict (``{"Number": "Sing", "Person": "3"}``, as
    :func:`~sksparse_struct.datasets.load_ewt_sample` gives them): both
    encode alike, whatever the order of the items.

    Examples
    --------
    >>> from sksparse_struct.feature_extraction import ArcFeatures
    >>> sentence = [{"form": "Dogs", "upos": "NOUN"}, {"form": "bark", "upos": "VERB"}]
    >>> encoded = ArcFeatures(preset="mst").fit_transform([sentence])
    >>> encoded[0]
    EncodedSentence(n_words=2, preset='mst', n_features=4194304)
    >>> encoded[0].tokens.shape
    (3, 7)
    >>> ArcFeatures().arc_feature_indices(encoded[0], 2, 1).shape
    (110,)
    """

    def __init__(self, preset="rich", n_features=2**22):
        self.preset = preset
        self.n_features = n_features

    _sklearn_tags = {"input_tags.two_d_array": False, "input_tags.string": True,
                     "requires_fit": False, "transformer_tags.preserves_dtype": []}

    def _check_params(self):
        if not isinstance(self.preset, str) or self.preset not in ARC_PRESETS:
            raise ValueError(
                f"preset must be one of {sorted(ARC_PRESETS)}, got {self.preset!r}."
            )
        n = self.n_features
        if (
            not isinstance(n, Integral)
            or isinstance(n, bool)
            or n < 16
            or n & (n - 1)
            or n > 2**40
        ):
            raise ValueError(
                f"n_features must be a power of two between 16 and 2**40, got {n!r}."
            )
        return self.preset, int(n)

    def fit(self, X, y=None):
        """Check the parameters (nothing is learnt).

        Parameters
        ----------
        X : list of sentences
            Ignored.
        y : None
            Ignored.

        Returns
        -------
        self : ArcFeatures
        """
        self._check_params()
        return self

    def transform(self, X):
        """Encode sentences.

        Parameters
        ----------
        X : list of sentences
            Each a non-empty list of token dicts (``"form"`` required;
            ``"lemma"``, ``"upos"``, ``"xpos"``, ``"feats"`` optional), of
            ``(form, upos)`` pairs, or of words.

        Returns
        -------
        encoded : list of EncodedSentence
        """
        preset, n_features = self._check_params()
        if isinstance(X, (str, bytes)) or not hasattr(X, "__len__"):
            raise ValueError(
                "X must be a list of sentences (lists of tokens), "
                f"got {type(X).__name__}."
            )
        cache = {}
        root = np.array(
            [_hash(c, _ROOT_VALUE) for c in range(fast.N_COLUMNS)], dtype=np.int64
        )
        root[fast.FLAGS] = 0
        out = []
        for i, sentence in enumerate(X):
            if isinstance(sentence, EncodedSentence):
                raise ValueError(
                    f"sentence {i} is already encoded (an EncodedSentence); "
                    "do not apply ArcFeatures twice."
                )
            if isinstance(sentence, (str, bytes)) or not hasattr(sentence, "__len__"):
                raise ValueError(
                    f"sentence {i} must be a list of tokens, got {type(sentence).__name__}."
                )
            n = len(sentence)
            if n == 0:
                raise ValueError(f"sentence {i} is empty: every sentence needs a word.")
            tokens = np.empty((n + 1, fast.N_COLUMNS), dtype=np.int64)
            tokens[0] = root
            for j, token in enumerate(sentence):
                # Rows are cached per distinct token (most tokens repeat).
                key = _token_key(token)
                try:
                    row = cache.get(key)
                except TypeError:  # unhashable values: encode (and complain) directly
                    key = row = None
                if row is None:
                    row = _encode_token(token, i, j)
                    if key is not None:
                        cache[key] = row
                tokens[j + 1] = row
            out.append(EncodedSentence(tokens, preset, n_features))
        return out

    def arc_feature_indices(self, sentence, head, modifier):
        """Indices of the hashed features of one arc (for inspection).

        Parameters
        ----------
        sentence : EncodedSentence
            A sentence returned by :meth:`transform`.
        head, modifier : int
            The arc ``head -> modifier`` (0 is the root, words from 1).

        Returns
        -------
        indices : ndarray of int64
            One entry per feature, each of value 1 (an index repeated by a
            hash collision counts twice).
        """
        preset, n_features = self._check_params()
        if not isinstance(sentence, EncodedSentence):
            raise ValueError("sentence must be an EncodedSentence from transform().")
        n = len(sentence)
        for name, value in (("head", head), ("modifier", modifier)):
            # 1.5 or True would silently be truncated to an arc.
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral):
                raise ValueError(f"{name} must be an integer word index, got {value!r}.")
        if not (0 <= head <= n and 1 <= modifier <= n and head != modifier):
            raise ValueError(
                f"no arc {head} -> {modifier} in a sentence of {n} words "
                "(heads 0..n, modifiers 1..n, head != modifier)."
            )
        out = np.empty(fast.max_arc_features(n), dtype=np.int64)
        k = fast.arc_features(
            sentence.tokens, 0, n, int(head), int(modifier), ARC_PRESETS.index(preset),
            n_features - 1, out,
        )
        return out[:k].copy()


def _canonical_feats(feats):
    """FEATS as one string, the same for a dict and for CoNLL-U's string.

    ``Name=Value`` items sorted by name (code point order), joined by ``|``
    (``"_"`` when empty): the order of the items does not matter, so
    ``{"Number": "Sing", "NumForm": "Word"}`` (as ``load_ewt_sample`` gives
    them) and ``"Number=Sing|NumForm=Word"`` (as ``read_conllu`` gives
    them, sorted ignoring case) hash alike. A string that is not a list of
    ``Name=Value`` items is left as it is.
    """
    if isinstance(feats, dict):
        items = feats.items()
    elif isinstance(feats, str) and not _missing(feats):
        items = [item.split("=", 1) for item in feats.split("|")]
        if any(len(item) != 2 for item in items):
            return feats
        items = [tuple(item) for item in items]
    else:
        return feats
    return "|".join(f"{k}={v}" for k, v in sorted(items)) or "_"


def _token_key(token):
    if isinstance(token, dict):
        return tuple(token.get(k) for k in _KEYS)
    if isinstance(token, (str, tuple)):
        return (type(token), token)
    return None


def _encode_token(token, i, j):
    if isinstance(token, dict):
        form = token.get("form")
        lemma = token.get("lemma")
        upos = token.get("upos")
        xpos = token.get("xpos")
        feats = token.get("feats")
    elif isinstance(token, tuple) and len(token) == 2:
        form, upos = token
        lemma = xpos = feats = None
    elif isinstance(token, str):
        form = token
        lemma = upos = xpos = feats = None
    else:
        raise ValueError(
            f"token {j} of sentence {i} must be a dict with a 'form', a (form, upos) "
            f"pair or a string, got {token!r}."
        )
    if not isinstance(form, str):
        raise ValueError(
            f"token {j} of sentence {i} has no string 'form' (got {form!r})."
        )
    feats = _canonical_feats(feats)
    for name, value in (("lemma", lemma), ("upos", upos), ("xpos", xpos), ("feats", feats)):
        if value is not None and not isinstance(value, str):
            raise ValueError(
                f"token {j} of sentence {i}: {name!r} must be a string, got {value!r}."
            )
    lower = form.lower()
    if _missing(lemma):
        lemma = lower
    if _missing(upos):
        upos = "_"
    if _missing(xpos):
        xpos = upos
    if _missing(feats):
        feats = "_"
    row = np.empty(fast.N_COLUMNS, dtype=np.int64)
    row[fast.FORM] = _hash(fast.FORM, lower)
    row[fast.LEMMA] = _hash(fast.LEMMA, lemma)
    row[fast.UPOS] = _hash(fast.UPOS, upos)
    row[fast.XPOS] = _hash(fast.XPOS, xpos)
    row[fast.PREFIX] = _hash(fast.PREFIX, lower[:5])
    row[fast.FLAGS] = _flags(upos)
    row[fast.FEATS] = _hash(fast.FEATS, feats)
    return row

