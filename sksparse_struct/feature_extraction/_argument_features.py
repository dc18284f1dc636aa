"""Documents with argumentative propositions to proposition, link and factor features.

A document is a dict with its ``"text"``, the character spans of its
``"propositions"`` and, optionally, ``"paragraphs"`` (with
``"proposition_paragraph"``), Stanford CoreNLP annotations (``"corenlp"``:
the parsed JSON, with tokens, lemmas, parts of speech, constituency parses
and dependencies) and PDTB discourse relations (``"discourse"``). Each
proposition gets a set of attributes (its lemmas, parts of speech,
productions, dependency tuples, discourse relations, argumentative
markers, position and length), from which :class:`ArgumentFeatures`
builds, with vocabularies, PMI tables and scalers fit on the training
documents only:

- a sparse feature vector per proposition,
- a sparse feature vector per candidate link (an ordered pair of distinct
  propositions of the same paragraph), from the attributes of its two ends
  and of the pair,
- three compatibility features per candidate link,
- 35 second-order features per pair of candidate links sharing a
  proposition (co-parent, grandparent and sibling factors).

The feature set follows Niculae, Park and Cardie (ACL 2017), after Stab and
Gurevych (2017).

Where things are: this module holds the transformer, its vocabularies and
the proposition features; ``_argument_analysis.py`` the tokenising and the
analysis of a document into proposition attributes; ``_argument_links.py``
the candidate links and what their ends share; ``_argument_second_order.py``
the compatibility and second-order features.
"""

import math
import re
from collections import Counter
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ..utils._estimator import TagsMixin
from ..utils._validation import check_integer
from ._argument_analysis import (
    _ANNOTATIONS,
    _INDICATOR_SETS,
    _analyse,
    _check_is_document,
    _doc_name,
)
from ._argument_lexicon import ARGUMENT_MARKERS
from ._argument_links import (
    _candidates,
    _gather_rows,
    _nouns,
    _same_sentence,
    _shared_counts,
)
from ._argument_second_order import (
    COMPAT_FEATURES,
    SECOND_ORDER_FEATURES,
    _second_order,
    _triples,
)

__all__ = ["ArgumentFeatures", "DocumentFeatures"]


class DocumentFeatures(NamedTuple):
    """The features of one document, as :meth:`ArgumentFeatures.transform` returns them.

    Attributes
    ----------
    props : scipy.sparse.csr_matrix of shape (n_props, n_prop_features)
        One row per proposition, in text order.
    links : scipy.sparse.csr_matrix of shape (n_links, n_link_features)
        One row per candidate link, in the order of ``link_pairs``.
    link_pairs : ndarray of shape (n_links, 2), int64
        ``(source, target)`` of each candidate link: every ordered pair of
        distinct propositions of the same paragraph, source ascending, then
        target ascending.
    compat : ndarray of shape (n_links, 3), float64
        ``[1, |source - target| == 1, source < target]`` per candidate link.
    triples : ndarray of shape (n_triples, 3), int64
        ``(a, b, c)`` for every candidate link ``(a, b)`` (in candidate
        order) and every candidate link ``(b, c)`` with ``c != a`` (in
        candidate order).
    second_order : ndarray of shape (n_triples, 35), float64
        The second-order features of each triple (see
        :attr:`ArgumentFeatures.SECOND_ORDER_FEATURES`).
    proposition_paragraph : ndarray of shape (n_props,), int64
        The paragraph of each proposition.
    """

    props: sp.csr_matrix
    links: sp.csr_matrix
    link_pairs: np.ndarray
    compat: np.ndarray
    triples: np.ndarray
    second_order: np.ndarray
    proposition_paragraph: np.ndarray


# What each kind of feature needs beyond the text: "parse" = CoreNLP
# annotations, "discourse" = PDTB relations, "links" = gold links (fit's y),
# "vectors" = word vectors.
_KIND_NEEDS = {
    "dependency_tuples": "parse",
    "discourse": "discourse",
    "indicators": None,
    "lemmas": None,
    "pos": "parse",
    "productions": "parse",
    "structure": None,
    "pmi": "links",
    "embeds": "vectors",
    "essay": None,
    "proba": "labels",
}
# Kinds that "auto" and "text" select only with essays=True.
_ESSAY_KINDS = ("essay", "proba")
_KINDS = tuple(_KIND_NEEDS)

_PROP_SCALED = ("n_tokens", "n_toks_in_sent", "n_toks_in_para", "n_toks_preceding_in_sent",
                "n_toks_following_in_sent", "preceding_props_in_para",
                "following_props_in_para")
_PROP_SCALED_PARSE = ("parse_tree_height", "n_subordinate_clauses")
_PROP_RAW = ("is_first_in_para", "is_last_in_para", "toks_to_sent_ratio",
             "relative_in_para", "first_person_any")
_LINK_RAW = ("src_is_first_in_para", "src_is_last_in_para", "trg_is_first_in_para",
             "trg_is_last_in_para", "same_sentence", "src_precedes_trg",
             "trg_precedes_src", "any_shared_nouns")
_LINK_PMI = ("src_pmi_pos_ratio", "src_pmi_neg_ratio", "src_pmi_pos_any", "src_pmi_neg_any",
             "trg_pmi_pos_ratio", "trg_pmi_neg_ratio", "trg_pmi_pos_any", "trg_pmi_neg_any")
_LINK_SCALED = ("src_n_tokens", "trg_n_tokens", "props_between", "n_props", "n_shared_nouns")
# The set-valued attributes each side of a link contributes, in column order.
_SIDE_SETS = ("discourse", "indicator_following_in_para", "indicator_preceding_in_para",
              "indicators", "lemmas", "pos", "productions")


# What transform's errors call the annotations the fitted features may use.
# ---------------------------------------------------------------------------
# Pairs and triples
# ---------------------------------------------------------------------------

def _top_k(counter, k):
    """The k most frequent items, ties by the item ascending; as a sorted vocabulary."""
    items = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    return sorted(w for w, _ in items)


# ---------------------------------------------------------------------------
# The transformer
# ---------------------------------------------------------------------------

class ArgumentFeatures(TagsMixin, TransformerMixin, BaseEstimator):
    """Proposition, link and factor features of argumentative documents.

    Fit on training documents, it learns vocabularies, PMI tables and
    min-max scalers; :meth:`transform` turns each document into a
    :class:`DocumentFeatures`: a sparse feature matrix of its propositions,
    one of its candidate links (ordered pairs of distinct propositions of
    the same paragraph), compatibility features of the links and
    second-order features of pairs of links sharing a proposition, for a
    structured model such as a factor graph over proposition types and
    links (Niculae, Park and Cardie, ACL 2017).

    A document is a dict with:

    - ``"text"`` (str) and ``"propositions"``: sorted, non-overlapping
      ``(start, end)`` character spans;
    - optionally ``"id"`` (named in error messages), ``"paragraphs"``
      (``(start, end)`` spans; default: the whole text) and
      ``"proposition_paragraph"`` (the paragraph of each proposition;
      default: the paragraph it starts in);
    - optionally ``"corenlp"``: Stanford CoreNLP's JSON output for the text
      (``sentences`` with ``tokens`` (``word``, ``lemma``, ``pos``,
      ``characterOffsetBegin``), ``parse``, ``basic-dependencies`` and
      ``collapsed-ccprocessed-dependencies``);
    - optionally ``"discourse"``: PDTB relations ``(reltype, sem_class,
      arg1_spans, arg2_spans)`` with character spans (an end-to-end
      discourse parser's output).

    Without ``"corenlp"``, documents are tokenized by a regular expression,
    split into sentences after ``.``, ``!`` and ``?``, and their lower-cased
    words stand for lemmas; the features that need a parse are left out.
    Features fitted on annotated documents need the same annotations in
    the documents they transform; to transform documents that have only
    ``"text"`` and ``"propositions"``, fit with ``groups="text"``.

    **Kinds of features** (the names ``groups`` accepts), and what they need:

    ============================ =================== =====================================
    kind                         needs               proposition / link columns
    ============================ =================== =====================================
    ``"dependency_tuples"``      CoreNLP             props: ``"lemma -> head lemma"`` of
                                                     the collapsed dependencies of the
                                                     proposition's tokens (the
                                                     ``n_dependency_tuples`` most frequent
                                                     in training)
    ``"discourse"``              PDTB relations      both: ``"<class>_<type>_Arg1|Arg2"``
                                                     of the relations whose arguments
                                                     overlap the proposition
    ``"indicators"``             text                both: marker categories of
                                                     ``lexicon`` in the proposition,
                                                     before it and after it in its
                                                     paragraph (three groups)
    ``"lemmas"``                 text                props: every training lemma; links:
                                                     the ``n_link_lemmas`` most frequent
    ``"pos"``                    CoreNLP             both: part-of-speech tags
    ``"productions"``            CoreNLP             links: the ``n_link_productions``
                                                     most frequent productions of
                                                     constituents inside the proposition
    ``"structure"``              text (more with     props: position in the paragraph,
                                 CoreNLP)            first person, token counts (and,
                                                     with CoreNLP, parse height,
                                                     subordinate clauses, root verb modal
                                                     and tense); links: positions, same
                                                     sentence, shared nouns, distances
    ``"pmi"``                    gold links (``y``)  links: share of tokens with positive /
                                                     negative pointwise mutual information
                                                     (PMI) with being a source or target
                                                     of a training link
    ``"embeds"``                 ``word_vectors``    props: mean word vector
    ``"essay"``                  text (more with     props: in the introduction or the
                                 CoreNLP);           conclusion (the first and last
                                 ``essays=True``     paragraphs with propositions); with
                                                     CoreNLP, NPs and VPs shared with
                                                     their sentences
    ``"proba"``                  labels (``y``);     props: training distribution of the
                                 ``essays=True``     labels of propositions preceded by
                                                     the same words in their sentence
    ============================ =================== =====================================

    ``"auto"`` and ``"text"`` select the last two only with ``essays=True``.

    Binary features are 0/1; counts are min-max scaled with the training
    minimum and maximum (not clipped, so held-out values may leave
    [0, 1]). Set-valued attributes of a link's source and target give two
    groups each (``src_...``, ``trg_...``). Without CoreNLP, the "nouns" of
    a proposition (for shared-noun features) are its lower-cased words less
    common function words. :attr:`feature_groups_` tells which groups are
    active and where their columns are.

    The compatibility features (3 per link) and the second-order features
    (35 per triple, :attr:`SECOND_ORDER_FEATURES`: same sentence, the order
    of the three propositions, their sentence range, shared nouns and
    overlap ratios) are always computed; they need only the text.

    Parameters
    ----------
    n_dependency_tuples : int, default=2000
        Size of the dependency-tuple vocabulary.
    n_link_lemmas : int, default=500
        Size of the lemma vocabulary of each side of a link.
    n_link_productions : int, default=500
        Size of the production vocabulary of each side of a link.
    word_vectors : dict or (words, matrix) pair, default=None
        Word vectors for the ``"embeds"`` group: a dict word -> 1-D array, or
        a sequence of words with a 2-D array of their vectors (one row per
        word). A proposition's vector is the mean of the vectors of its
        lower-cased words found (with repetitions), zeros if none is found.
    lexicon : dict, default=None
        Argumentative markers: category -> list of phrases. ``None`` uses
        the built-in lexicon of Stab and Gurevych (2017, Table C1):
        categories ``forward``, ``backward``, ``thesis`` and ``rebuttal``,
        several phrases in both casings.
    groups : "auto", "text" or list of str, default="auto"
        The kinds of features to compute (table above). ``"auto"``: every
        kind whose needs the training data meet (CoreNLP and discourse
        relations are used when every training document has them; a mix
        of documents with and without them is an error). ``"text"``: only
        what needs the text alone, ignoring any annotations. A list of kind
        names: those kinds (an error if the data lack what they need).
    lemma_case : {"as_is", "lower"}, default="as_is"
        How a proposition's lemmas meet the (lower-cased) lemma vocabularies.
        ``"as_is"`` matches them as CoreNLP writes them, as the original
        implementation of Niculae et al. does, so capitalised lemmas (``I``, proper nouns)
        never fire; ``"lower"`` lower-cases them first.
    indicator_match : {"substring", "word"}, default="substring"
        How marker phrases are found: as raw, case-sensitive substrings of
        the text, as the original implementation does ("so" also fires
        inside "also"), or only as whole words (still case-sensitive).
    pmi_sides : {"both", "directional"}, default="both"
        Which PMI table counts a token of each side of a link. ``"both"``
        (the original implementation): a token is positive if its PMI with being a source
        *or* a target of a link is positive, on both sides;
        ``"directional"``: the source side uses the source table, the
        target side the target table.
    essays : bool, default=False
        The persuasive-essay setting of Niculae et al. (2017) for corpora such
        as Stab and Gurevych's essays (read by
        :func:`~sksparse_struct.datasets.read_brat`): each proposition's
        token attributes (lemmas, parts of speech, productions, dependency
        tuples, markers, discourse, words) start at the beginning of its
        sentence, and the ``"essay"`` and ``"proba"`` kinds are used.
    root_verb : {"original", "whole_sentence"}, default="original"
        When a proposition gets its sentence's root-verb features (modal,
        tense). ``"original"`` reproduces the original implementation's
        off-by-one test: only when the proposition starts a sentence and
        ends one token before its end (which never happens when
        propositions end with the sentence's final punctuation, so
        ``root_vb_modal`` is 0 and ``root_vb_tense`` is ``unk`` on such
        corpora); ``"whole_sentence"``: when the proposition covers the
        whole sentence.

    Attributes
    ----------
    groups_ : tuple of str
        The kinds of features in use.
    uses_corenlp_ : bool
        Whether tokens come from CoreNLP (else from the built-in tokenizer).
    feature_groups_ : dict
        ``{"props": {group: slice}, "links": {group: slice}}``: the active
        groups of each matrix, in column order, and their columns.
    feature_names_props_, feature_names_links_ : ndarray of str
        The name of every column of ``props`` and ``links``.
    feature_names_compat_, feature_names_second_order_ : ndarray of str
        The names of the compatibility and second-order features.
    vocabularies_ : dict
        Each set-valued attribute's vocabulary (sorted list), e.g.
        ``vocabularies_["lemmas"]``, ``vocabularies_["link_lemmas"]``.
    pmi_in_, pmi_out_ : dict
        PMI of each lower-cased lemma with being the target (in) or the
        source (out) of a training link (only for lemmas seen in that role).
    prop_scaler_, link_scaler_, essay_scaler_ : tuple of ndarray or None
        ``(minimum, maximum)`` of the scaled proposition, link and essay
        columns on the training data (None when not used).
    proba_classes_ : list of str
        The labels of the ``"proba"`` columns (with that kind only).
    n_prop_features_, n_link_features_ : int
        Widths of ``props`` and ``links``.

    Notes
    -----
    The defaults reproduce the feature set of Niculae et al. (2017),
    including four behaviours of their implementation that the options
    ``lemma_case``, ``indicator_match``, ``pmi_sides`` and ``root_verb``
    can change. Two further details follow it without an option: the parse
    tree height and the number of subordinate clauses of a proposition are
    those of its whole sentences, and the PMI ratios divide by the number
    of the proposition's own tokens (so with ``essays=True``, where the
    lemmas start at the sentence, they may exceed 1). Word vectors are looked up for any
    word found in ``word_vectors`` (not only for words of the training
    documents).

    On CDCP (Niculae et al.'s training split, with CoreNLP and discourse
    relations) the defaults give 6,330 proposition features (6,630 with
    300-dimensional word vectors) and 2,151 link features.

    References
    ----------
    .. [1] V. Niculae, J. Park and C. Cardie. "Argument Mining with
       Structured SVMs and RNNs". ACL 2017.
    .. [2] C. Stab and I. Gurevych. "Parsing Argumentation Structures in
       Persuasive Essays". Computational Linguistics 43(3), 2017.

    Examples
    --------
    >>> from sksparse_struct.feature_extraction import ArgumentFeatures
    >>> doc = {"text": "I agree. Therefore we should act. Thus it is so.",
    ...        "propositions": [(0, 8), (9, 33), (34, 48)]}
    >>> features = ArgumentFeatures().fit([doc], [(["value"] * 3, [(0, 1)])])
    >>> features.uses_corenlp_, features.groups_
    (False, ('indicators', 'lemmas', 'structure', 'pmi'))
    >>> out = features.transform([doc])[0]
    >>> out.props.shape[0], out.link_pairs.tolist()
    (3, [[0, 1], [0, 2], [1, 0], [1, 2], [2, 0], [2, 1]])
    >>> out.triples.shape, out.second_order.shape
    ((6, 3), (6, 35))

    With CoreNLP annotations and discourse relations, as the bundled CDCP
    sample has them, every kind is used:

    >>> from sksparse_struct.datasets import load_cdcp_sample
    >>> X_train, y_train, X_test, y_test = load_cdcp_sample()
    >>> features = ArgumentFeatures().fit(X_train, y_train)
    >>> features.groups_
    ('dependency_tuples', 'discourse', 'indicators', 'lemmas', 'pos', 'productions', 'structure', 'pmi')
    >>> out = features.transform(X_test[:1])[0]
    >>> out.props.shape == (6, features.n_prop_features_)
    True
    >>> out.links.shape == (30, features.n_link_features_), out.triples.shape
    (True, (120, 3))
    >>> features.feature_groups_["props"]["discourse"]
    slice(994, 1002, None)
    """

    COMPAT_FEATURES = COMPAT_FEATURES
    SECOND_ORDER_FEATURES = SECOND_ORDER_FEATURES

    def __init__(self, n_dependency_tuples=2000, n_link_lemmas=500, n_link_productions=500,
                 word_vectors=None, lexicon=None, groups="auto", lemma_case="as_is",
                 indicator_match="substring", pmi_sides="both", root_verb="original",
                 essays=False):
        self.n_dependency_tuples = n_dependency_tuples
        self.n_link_lemmas = n_link_lemmas
        self.n_link_productions = n_link_productions
        self.word_vectors = word_vectors
        self.lexicon = lexicon
        self.groups = groups
        self.lemma_case = lemma_case
        self.indicator_match = indicator_match
        self.pmi_sides = pmi_sides
        self.root_verb = root_verb
        self.essays = essays

    _sklearn_tags = {"input_tags.two_d_array": False, "input_tags.string": True,
                     "transformer_tags.preserves_dtype": []}

    # -- parameters -------------------------------------------------------

    def _check_params(self):
        for name in ("n_dependency_tuples", "n_link_lemmas", "n_link_productions"):
            check_integer(getattr(self, name), name)
        for name, allowed in (("lemma_case", ("as_is", "lower")),
                              ("indicator_match", ("substring", "word")),
                              ("pmi_sides", ("both", "directional")),
                              ("root_verb", ("original", "whole_sentence"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got "
                                 f"{getattr(self, name)!r}")
        if self.essays not in (True, False):
            raise ValueError(f"essays must be True or False, got {self.essays!r}")
        lexicon = ARGUMENT_MARKERS if self.lexicon is None else self.lexicon
        if not isinstance(lexicon, dict) or not lexicon:
            raise ValueError("lexicon must be a non-empty dict category -> phrases")
        res = []
        for cat in sorted(lexicon):
            phrases = lexicon[cat]
            if isinstance(phrases, str) or not all(isinstance(x, str) and x
                                                   for x in phrases):
                raise ValueError(f"lexicon[{cat!r}] must be a list of non-empty strings")
            body = "|".join(re.escape(x) for x in sorted(set(phrases), key=len,
                                                          reverse=True))
            if self.indicator_match == "word":
                body = rf"(?<!\w)(?:{body})(?!\w)"
            res.append((str(cat), re.compile(body) if phrases else re.compile(r"(?!)")))
        return res

    def _check_vectors(self):
        """Validate ``word_vectors``; return (lookup, dimension) or (None, None).

        ``lookup`` maps a word to its vector: the user's dict itself, or a
        dict word -> row over the user's matrix (no copy of the vectors).
        """
        wv = self.word_vectors
        if wv is None:
            return None, None
        if isinstance(wv, dict):
            if not wv:
                raise ValueError("word_vectors is empty")
            shapes = {np.shape(v) for v in wv.values()}
            if len(shapes) != 1 or len(next(iter(shapes))) != 1:
                raise ValueError("word_vectors must map words to 1-D arrays of one length")
            if not all(np.all(np.isfinite(v)) for v in wv.values()):
                raise ValueError("word_vectors must be finite")
            return None, next(iter(shapes))[0]
        try:
            words, matrix = wv
        except (TypeError, ValueError):
            raise ValueError("word_vectors must be a dict word -> vector or a "
                             "(words, matrix) pair") from None
        words = list(words)
        shape = np.shape(matrix)
        if len(shape) != 2 or shape[0] != len(words) or not words:
            raise ValueError(f"word_vectors: a matrix of shape {shape} for "
                             f"{len(words)} words; need one row per word")
        if not np.all(np.isfinite(matrix)):
            raise ValueError("word_vectors must be finite")
        index = {}
        for i, w in enumerate(words):
            index.setdefault(w, i)
        return index, shape[1]

    # -- fitting ----------------------------------------------------------

    def fit(self, X, y=None):
        """Learn vocabularies, PMI tables and scalers from training documents.

        Parameters
        ----------
        X : list of dict
            Training documents (see the class docstring).
        y : list of (labels, links), default=None
            Their targets: ``labels`` gives the label of each proposition
            and ``links`` the ``(source, target)`` proposition pairs of each
            document. The links are needed for the ``"pmi"`` kind and the
            labels for ``"proba"``, left out without them.

        Returns
        -------
        self : ArgumentFeatures
        """
        self._fit(X, y)
        return self

    def fit_transform(self, X, y=None, **fit_params):
        """Fit on ``X`` and return its features (same as ``fit(X, y).transform(X)``)."""
        docs = self._fit(X, y)
        return [self._vectorize(d) for d in docs]

    def _fit(self, X, y):
        lexicon_res = self._check_params()
        X = self._check_X(X)
        if not X:
            raise ValueError("ArgumentFeatures needs at least one training document")
        vec_index, vec_dim = self._check_vectors()
        links, labels = self._check_y(X, y)
        has_parse = self._availability(X, "corenlp")
        # A mix of documents with and without relations matters only when
        # the discourse group may be used.
        wants_disc = (self.groups == "auto" if isinstance(self.groups, str)
                      else "discourse" in self.groups)
        has_disc = (self._availability(X, "discourse") if wants_disc
                    else all(d.get("discourse") is not None for d in X))
        have = {None: True, "parse": has_parse, "discourse": has_disc,
                "links": links is not None and sum(len(x) for x in links) > 0,
                "vectors": vec_dim is not None, "labels": labels is not None}
        if isinstance(self.groups, str) and self.groups in ("auto", "text"):
            if self.groups == "text":
                have["parse"] = have["discourse"] = False
            kinds = tuple(k for k in _KINDS if have[_KIND_NEEDS[k]]
                          and (self.essays or k not in _ESSAY_KINDS))
        else:
            if isinstance(self.groups, str):
                raise ValueError(f"groups must be 'auto', 'text' or a list of {_KINDS}, "
                                 f"got {self.groups!r}")
            kinds = tuple(self.groups)
            unknown = [k for k in kinds if k not in _KIND_NEEDS]
            if unknown or not kinds:
                raise ValueError(f"unknown feature kinds {unknown} in groups; choose "
                                 f"from {_KINDS}")
            for k in kinds:
                if not have[_KIND_NEEDS[k]]:
                    need = {"parse": "CoreNLP annotations ('corenlp') in every training "
                                     "document",
                            "discourse": "discourse relations in every training document",
                            "links": "gold links: fit(X, y) with at least one link",
                            "vectors": "word_vectors",
                            "labels": "proposition labels: fit(X, y)"}[_KIND_NEEDS[k]]
                    raise ValueError(f"feature kind {k!r} needs {need}")
            kinds = tuple(k for k in _KINDS if k in kinds)
        self.groups_ = kinds
        self.uses_corenlp_ = bool(has_parse and self.groups != "text")
        self._uses_discourse = "discourse" in kinds
        self._cfg = {"use_parse": self.uses_corenlp_, "use_discourse": self._uses_discourse,
                     "lexicon": lexicon_res, "root_verb": self.root_verb,
                     "include_preceding": bool(self.essays), "essay": "essay" in kinds}
        docs = [_analyse(d, i, self._cfg) for i, d in enumerate(X)]
        if not any(d.n_props for d in docs):
            raise ValueError("the training documents hold no proposition")

        # Training statistics.
        lemma_freq = Counter(x.lower() for d in docs for x in d.all_lemmas)
        voc = {}
        if "dependency_tuples" in kinds:
            dep_freq = Counter(s for d in docs for sent in d.sentences
                               for s in sent.dep_strings)
            voc["dependency_tuples"] = _top_k(dep_freq, self.n_dependency_tuples)
        if "productions" in kinds:
            prod_freq = Counter(s for d in docs for sent in d.sentences
                                for s in sent.prod_strings)
            voc["link_productions"] = _top_k(prod_freq, self.n_link_productions)
        if "lemmas" in kinds:
            voc["lemmas"] = sorted(lemma_freq)
            voc["link_lemmas"] = _top_k(lemma_freq, self.n_link_lemmas)
        for name in ("discourse", "pos", *_INDICATOR_SETS):
            kind = "indicators" if name in _INDICATOR_SETS else name
            if kind in kinds:
                voc[name] = sorted(set().union(*(s for d in docs for s in d.attrs[name])))
        if "structure" in kinds and self.uses_corenlp_:
            voc["root_vb_tense"] = sorted({t for d in docs for t in d.tense})
        self.vocabularies_ = voc
        self._index = {name: {w: i for i, w in enumerate(v)} for name, v in voc.items()}

        if "pmi" in kinds:
            in_count, out_count = Counter(), Counter()
            for d, lk in zip(docs, links):
                for s, t in lk:
                    out_count.update(d.attrs["lower_lemmas"][s])
                    in_count.update(d.attrs["lower_lemmas"][t])
            n_links = sum(len(lk) for lk in links)
            base = math.log(n_links) - math.log(sum(d.n_props for d in docs))
            self.pmi_in_ = {w: math.log(c) - math.log(lemma_freq[w]) - base
                            for w, c in in_count.items()}
            self.pmi_out_ = {w: math.log(c) - math.log(lemma_freq[w]) - base
                             for w, c in out_count.items()}
        if "embeds" in kinds:
            self._vec_index, self._vec_dim = vec_index, vec_dim
        if "proba" in kinds:
            classes = sorted({x for lab in labels for x in lab})
            col = {c: i for i, c in enumerate(classes)}
            table = {}
            for d, lab in zip(docs, labels):
                for prec, c in zip(d.preceding, lab):
                    table.setdefault(prec, np.zeros(len(classes)))[col[c]] += 1
            self.proba_classes_ = classes
            self._proba = {k: (v + 0.001) / (v + 0.001).sum() for k, v in table.items()}
            self._proba_default = np.full(len(classes), 1.0 / len(classes))
        self.essay_scaler_ = None
        if "essay" in kinds and self.uses_corenlp_:
            E = np.vstack([d.essay_scaled for d in docs])
            self.essay_scaler_ = (E.min(0), E.max(0))

        # Scalers, from the training propositions and links.
        self.prop_scaler_ = self.link_scaler_ = None
        if "structure" in kinds:
            P = np.vstack([d.scaled for d in docs])
            self.prop_scaler_ = (P.min(0), P.max(0))
            L = [self._link_scaled(d, _candidates(d.prop_para)) for d in docs]
            L = np.vstack(L) if L else np.zeros((0, len(_LINK_SCALED)))
            if len(L):
                self.link_scaler_ = (L.min(0), L.max(0))
            else:
                self.link_scaler_ = (np.zeros(L.shape[1]), np.zeros(L.shape[1]))
        self._layout()
        return docs

    def _availability(self, X, key):
        present = [d.get(key) is not None for d in X]
        if all(present):
            return True
        if not any(present):
            return False
        if self.groups == "text":
            return False
        i = present.index(False)
        j = present.index(True)
        raise ValueError(f"{_doc_name(X[i], i)} has no {key!r} while {_doc_name(X[j], j)} "
                         f"has: give every training document {key!r}, or none, or pass "
                         "groups='text' to use the text alone")

    @staticmethod
    def _check_X(X):
        if isinstance(X, (dict, str)):
            raise TypeError("X must be a list of documents (dicts), not a single "
                            f"{type(X).__name__}")
        return list(X)

    @staticmethod
    def _check_y(X, y):
        if y is None:
            return None, None
        y = list(y)
        if len(y) != len(X):
            raise ValueError(f"X has {len(X)} documents but y has {len(y)} targets")
        out, out_labels = [], []
        for i, (doc, target) in enumerate(zip(X, y)):
            where = _doc_name(doc, i)
            try:
                labels, links = target
                labels = [str(x) for x in labels]
                links = [(int(s), int(t)) for s, t in links]
            except (TypeError, ValueError):
                raise ValueError(f"y[{i}] ({where}) must be (labels, links) with links "
                                 "a list of (source, target) pairs") from None
            n = len(doc.get("propositions", ()))
            for s, t in links:
                if not (0 <= s < n and 0 <= t < n) or s == t:
                    raise ValueError(f"y[{i}] ({where}): link {(s, t)} is not a pair of "
                                     f"distinct propositions among {n}")
            if len(labels) != n:
                raise ValueError(f"y[{i}] ({where}) has {len(labels)} labels for {n} "
                                 "propositions")
            out.append(links)
            out_labels.append(labels)
        return out, out_labels

    # -- layout -----------------------------------------------------------

    def _layout(self):
        kinds = self.groups_
        voc = self.vocabularies_
        props, links = [], []  # (group, names)
        if "dependency_tuples" in kinds:
            props.append(("dependency_tuples",
                          [f"dependency_tuples={x}" for x in voc["dependency_tuples"]]))
        for name in ("discourse", *_INDICATOR_SETS, "lemmas", "pos"):
            if name in voc:
                props.append((name, [f"{name}={x}" for x in voc[name]]))
        if "structure" in kinds:
            raw = list(_PROP_RAW)
            scaled = list(_PROP_SCALED)
            if self.uses_corenlp_:
                raw += ["root_vb_modal"] + [f"root_vb_tense={t}"
                                            for t in voc["root_vb_tense"]]
                scaled += list(_PROP_SCALED_PARSE)
            props += [("raw", raw), ("scaled", scaled)]
        if "essay" in kinds:
            names = ["is_in_intro", "is_in_conclusion"]
            if self.uses_corenlp_:
                shared = [f"shared_{x}_{y}" for y in ("intro", "conclusion")
                          for x in ("np", "vp")]
                names += [f"has_{x}" for x in shared] + [f"n_{x}" for x in shared]
            props.append(("essay", names))
        if "proba" in kinds:
            props.append(("proba", [f"proba={c}" for c in self.proba_classes_]))
        if "embeds" in kinds:
            props.append(("embeds", [f"embeds_{i}" for i in
                                     range(self._vec_dim)]))
        side = []
        for name in _SIDE_SETS:
            key = {"lemmas": "link_lemmas", "productions": "link_productions"}.get(name, name)
            if key in voc:
                side.append((name, key, voc[key]))
        self._side = side
        for prefix in ("src", "trg"):
            for name, _, v in side:
                links.append((f"{prefix}_{name}", [f"{prefix}_{name}={x}" for x in v]))
        if "structure" in kinds:
            links.append(("raw", list(_LINK_RAW)))
        if "pmi" in kinds:
            links.append(("pmi", list(_LINK_PMI)))
        if "structure" in kinds:
            links.append(("scaled", list(_LINK_SCALED)))
        self.feature_groups_ = {}
        for key, groups in (("props", props), ("links", links)):
            start = 0
            table = {}
            for name, names in groups:
                table[name] = slice(start, start + len(names))
                start += len(names)
            self.feature_groups_[key] = table
        self.feature_names_props_ = np.array([n for _, ns in props for n in ns], dtype=object)
        self.feature_names_links_ = np.array([n for _, ns in links for n in ns], dtype=object)
        self.feature_names_compat_ = np.array(COMPAT_FEATURES, dtype=object)
        self.feature_names_second_order_ = np.array(SECOND_ORDER_FEATURES, dtype=object)
        self.n_prop_features_ = len(self.feature_names_props_)
        self.n_link_features_ = len(self.feature_names_links_)
        side_width = sum(len(v) for _, _, v in side)
        self._side_width = side_width

    # -- transforming -----------------------------------------------------

    def transform(self, X):
        """Features of each document.

        Parameters
        ----------
        X : list of dict
            Documents (see the class docstring). They need the annotations
            the fitted groups use (``"corenlp"`` when :attr:`uses_corenlp_`,
            ``"discourse"`` when the discourse group is active).

        Returns
        -------
        features : list of DocumentFeatures

        Raises
        ------
        ValueError
            Before any document is transformed, if one lacks an annotation
            the fitted features use. The error names the first such
            document; a model fitted with ``groups="text"`` needs only the
            ``"text"`` and ``"propositions"`` of each document.
        """
        check_is_fitted(self, "feature_groups_")
        X = self._check_X(X)
        self._check_annotations(X)
        return [self._vectorize(_analyse(d, i, self._cfg)) for i, d in enumerate(X)]

    def _check_annotations(self, X):
        """Name the first document without an annotation the fitted kinds use."""
        needed = [key for key, used in (("corenlp", self.uses_corenlp_),
                                        ("discourse", self._uses_discourse)) if used]
        if not needed:
            return
        for i, doc in enumerate(X):
            _check_is_document(doc, i)
            missing = [key for key in needed if doc.get(key) is None]
            if not missing:
                continue
            fitted = " and ".join(_ANNOTATIONS[key] for key in needed)
            if "corenlp" in missing:
                way = ("or, to predict documents with only 'text' and 'propositions', "
                       "train the model on the text alone with ArgumentFeatures("
                       "groups=\"text\") (it leaves out the features that need a parse "
                       "or discourse relations)")
            else:
                kinds = [k for k in self.groups_ if k != "discourse"]
                way = ("or train the model without discourse relations, with "
                       f"ArgumentFeatures(groups={kinds!r}) (or groups=\"text\" for "
                       "documents with only 'text' and 'propositions')")
            raise ValueError(
                f"{_doc_name(doc, i)} has no "
                f"{' and no '.join(_ANNOTATIONS[key] for key in missing)}, which these "
                f"features need: they were fitted on documents with {fitted}. Give it "
                f"the annotations the training documents had, {way}")

    @staticmethod
    def _set_entries(sets, index, offset, lower, rows, cols):
        """Append the (row, column) of every vocabulary item of each set."""
        for k, items in enumerate(sets):
            if lower:
                items = {x.lower() for x in items}
            found = [index[x] + offset for x in items if x in index]
            rows.extend([k] * len(found))
            cols.extend(found)

    def _scale(self, values, scaler):
        lo, hi = scaler
        span = hi - lo
        return (values - lo) / np.where(span > 0, span, 1.0)

    def _link_scaled(self, d, pairs):
        s, t = pairs[:, 0], pairs[:, 1]
        shared = _shared_counts(d)
        return np.column_stack([d.n_tokens[s], d.n_tokens[t],
                                np.abs(s - t) - 1.0, np.full(len(s), float(d.n_props)),
                                shared[s, t]]).reshape(-1, len(_LINK_SCALED))

    def _vectorize(self, d):
        kinds = self.groups_
        lower = self.lemma_case == "lower"
        n = d.n_props
        rows, cols, dense = [], [], []
        for name, sl in self.feature_groups_["props"].items():
            if name in ("dependency_tuples", "discourse", "pos", "lemmas", *_INDICATOR_SETS):
                self._set_entries(d.attrs[name], self._index[name], sl.start,
                                  lower and name == "lemmas", rows, cols)
            elif name == "raw":
                raw = d.raw
                if self.uses_corenlp_:
                    idx = self._index["root_vb_tense"]
                    onehot = np.zeros((n, len(idx)))
                    for k, t in enumerate(d.tense):
                        if t in idx:
                            onehot[k, idx[t]] = 1.0
                    raw = np.hstack([raw, onehot])
                dense.append((sl.start, raw))
            elif name == "scaled":
                dense.append((sl.start, self._scale(d.scaled, self.prop_scaler_)))
            elif name == "embeds":
                dense.append((sl.start, self._embeds(d)))
            elif name == "essay":
                block = d.essay_raw
                if self.uses_corenlp_:
                    block = np.hstack([block, self._scale(d.essay_scaled,
                                                          self.essay_scaler_)])
                dense.append((sl.start, block.reshape(n, sl.stop - sl.start)))
            elif name == "proba":
                rows_p = [self._proba.get(prec, self._proba_default) for prec in d.preceding]
                dense.append((sl.start, np.array(rows_p).reshape(n, sl.stop - sl.start)))
        props = _build_csr(n, self.n_prop_features_, rows, cols, dense)

        pairs = _candidates(d.prop_para)
        s, t = pairs[:, 0], pairs[:, 1]
        # Each proposition's side columns once, then gathered for every link.
        side_rows, side_cols = [], []
        offset = 0
        for name, key, voc in self._side:
            self._set_entries(d.attrs[name], self._index[key], offset,
                              lower and name == "lemmas", side_rows, side_cols)
            offset += len(voc)
        side = sp.csr_matrix((np.ones(len(side_cols)), (side_rows, side_cols)),
                             shape=(n, self._side_width))
        side.sum_duplicates()
        r_src, c_src = _gather_rows(side.indptr, side.indices, s)
        r_trg, c_trg = _gather_rows(side.indptr, side.indices, t)
        rows = np.concatenate([r_src, r_trg])
        cols = np.concatenate([c_src, c_trg + self._side_width])
        dense = []
        groups = self.feature_groups_["links"]
        if "structure" in kinds:
            shared = _shared_counts(d)
            same = _same_sentence(d)
            raw = np.column_stack([d.raw[s, 0], d.raw[s, 1], d.raw[t, 0], d.raw[t, 1],
                                   same[s, t], s < t, t < s, shared[s, t] > 0])
            dense.append((groups["raw"].start, raw.astype(np.float64).reshape(-1, 8)))
            dense.append((groups["scaled"].start,
                          self._scale(self._link_scaled(d, pairs), self.link_scaler_)))
        if "pmi" in kinds:
            dense.append((groups["pmi"].start, self._pmi(d, s, t)))
        links = _build_csr(len(pairs), self.n_link_features_, rows, cols, dense)

        compat = np.column_stack([np.ones(len(pairs)), np.abs(s - t) == 1, s < t]
                                 ).astype(np.float64).reshape(-1, 3)
        triples = _triples(pairs, n)
        second = _second_order(triples, d.prop_sents, _nouns(d), d.n_sents)
        return DocumentFeatures(props, links, pairs, compat, triples, second,
                                d.prop_para.copy())

    def _pmi(self, d, s, t):
        n = d.n_props
        pos = {"in": np.zeros(n), "out": np.zeros(n), "both": np.zeros(n)}
        neg = {"in": np.zeros(n), "out": np.zeros(n), "both": np.zeros(n)}
        for k, lem in enumerate(d.attrs["lower_lemmas"]):
            pi = np.array([self.pmi_in_.get(x, 0.0) for x in lem])
            po = np.array([self.pmi_out_.get(x, 0.0) for x in lem])
            pos["in"][k], neg["in"][k] = (pi > 0).sum(), (pi < 0).sum()
            pos["out"][k], neg["out"][k] = (po > 0).sum(), (po < 0).sum()
            pos["both"][k] = ((pi > 0) | (po > 0)).sum()
            neg["both"][k] = ((pi < 0) | (po < 0)).sum()
        # The original implementation counts a token on either side if either
        # table says so.
        src, trg = ("both", "both") if self.pmi_sides == "both" else ("out", "in")
        cols = []
        for idx, table in ((s, src), (t, trg)):
            nt = d.n_tokens[idx]
            p, q = pos[table][idx], neg[table][idx]
            cols += [np.divide(p, nt, out=np.zeros(len(idx)), where=nt > 0),
                     np.divide(q, nt, out=np.zeros(len(idx)), where=nt > 0),
                     p > 0, q > 0]
        return np.column_stack(cols).astype(np.float64).reshape(-1, 8)

    def _embeds(self, d):
        out = np.zeros((d.n_props, self._vec_dim))
        if self._vec_index is None:  # a dict of vectors
            table = self.word_vectors
            for k, words in enumerate(d.words):
                found = [table[w] for w in (x.lower() for x in words) if w in table]
                if found:
                    out[k] = np.mean(np.asarray(found, dtype=np.float64), axis=0)
        else:
            index = self._vec_index
            matrix = np.asarray(self.word_vectors[1])
            for k, words in enumerate(d.words):
                rows = [index[w] for w in (x.lower() for x in words) if w in index]
                if rows:
                    out[k] = np.asarray(matrix[rows], dtype=np.float64).mean(0)
        return out


def _build_csr(n_rows, width, rows, cols, dense):
    """One CSR matrix from binary (row, column) entries and dense blocks at column offsets."""
    rows = [np.asarray(rows, dtype=np.int64)]
    cols = [np.asarray(cols, dtype=np.int64)]
    vals = [np.ones(len(rows[0]))]
    for offset, block in dense:
        r, c = np.nonzero(block)
        rows.append(r)
        cols.append(c + offset)
        vals.append(block[r, c])
    out = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                        shape=(n_rows, width))
    out.sum_duplicates()
    return out


