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
"""

import math
import re
from collections import Counter
from numbers import Integral
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ..utils._estimator import TagsMixin
from ._argument_lexicon import ARGUMENT_MARKERS
from ._ptb import read_constituents

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

_MODALS = frozenset(["can", "could", "may", "might", "must", "shall", "should", "will",
                     "would"])
_FIRST_PERSON = frozenset(["I", "me", "my", "mine", "myself"])

COMPAT_FEATURES = ("bias", "adjacent", "source_precedes_target")
SECOND_ORDER_FEATURES = (
    "same_sentence_abc", "same_sentence_ab", "same_sentence_ac", "same_sentence_bc",
    "order_abc", "order_acb", "order_bac", "order_bca", "order_cab", "order_cba",
    "sentence_range_le_1", "sentence_range_le_2", "sentence_range_le_3",
    "sentence_range_le_4", "sentence_range_le_5",
    "shared_nouns_abc", "shared_nouns_ab", "shared_nouns_ac", "shared_nouns_bc",
    "jaccard_abc", "jaccard_ab", "jaccard_ac", "jaccard_bc",
    "shared_abc_over_a", "shared_abc_over_b", "shared_abc_over_c",
    "shared_abc_over_ab", "shared_abc_over_ac", "shared_abc_over_bc",
    "shared_ab_over_a", "shared_ab_over_b", "shared_ac_over_a", "shared_ac_over_c",
    "shared_bc_over_b", "shared_bc_over_c",
)

# Word tokens (with inner apostrophes, hyphens and dots) or single symbols.
_TOKEN = re.compile(r"\w+(?:['\u2019.\-]\w+)*|[^\w\s]")
_SENTENCE_END = frozenset([".", "!", "?"])
# Function words left out of the "nouns" of text-only documents.
_STOPWORD_LIST = """
a about above after again against all also am an and any are as at be because been
before being below between both but by can could did do does doing down during each
even ever few for from further had has have having he her here hers herself him
himself his how i if in into is it its itself just let me more most much must my
myself no nor not now of off on once only or other our ours ourselves out over own
per same shall she should so some such than that the their theirs them themselves
then there these they this those through thus to too under until up upon us very was
we were what when where which while who whom why will with within without would
yet you your yours yourself yourselves
"""
_STOPWORDS = frozenset(_STOPWORD_LIST.split())

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
_INDICATOR_SETS = ("indicator_following_in_para", "indicator_preceding_in_para", "indicators")


# What transform's errors call the annotations the fitted features may use.
_ANNOTATIONS = {"corenlp": "CoreNLP annotations ('corenlp')",
                "discourse": "discourse relations ('discourse')"}


def _doc_name(doc, index):
    name = doc.get("id") if isinstance(doc, dict) else None
    return f"document {name!r} (X[{index}])" if name is not None else f"document X[{index}]"


# ---------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------

def _check_is_document(doc, index):
    if not isinstance(doc, dict):
        raise TypeError(f"document X[{index}] must be a dict, got {type(doc).__name__}")


def _check_document(doc, index):
    """Check a document's keys and spans; return (text, spans, paragraphs, prop_paragraph)."""
    _check_is_document(doc, index)
    where = _doc_name(doc, index)
    for key in ("text", "propositions"):
        if key not in doc:
            raise ValueError(f"{where} has no {key!r} key")
    text = doc["text"]
    if not isinstance(text, str):
        raise TypeError(f"{where}: 'text' must be a str, got {type(text).__name__}")
    spans = _check_spans(doc["propositions"], len(text), where, "proposition")
    if doc.get("paragraphs") is None:
        paragraphs = [(0, len(text))]
    else:
        paragraphs = _check_spans(doc["paragraphs"], len(text), where, "paragraph",
                                  allow_empty=True)
    if doc.get("proposition_paragraph") is None:
        # a proposition belongs to the paragraph its start is in
        prop_para = []
        for k, (a, b) in enumerate(spans):
            inside = [p for p, (pa, pb) in enumerate(paragraphs) if pa <= a < pb]
            if not inside:
                raise ValueError(f"{where}: proposition {k} {(a, b)} starts in no paragraph")
            prop_para.append(inside[0])
    else:
        prop_para = list(doc["proposition_paragraph"])
        if len(prop_para) != len(spans):
            raise ValueError(f"{where}: 'proposition_paragraph' has {len(prop_para)} "
                             f"entries for {len(spans)} propositions")
        for k, p in enumerate(prop_para):
            if not isinstance(p, Integral) or not 0 <= p < len(paragraphs):
                raise ValueError(f"{where}: proposition {k} is in paragraph {p!r}, not one "
                                 f"of the {len(paragraphs)} paragraphs")
            if not paragraphs[p][0] <= spans[k][0] <= paragraphs[p][1]:
                raise ValueError(f"{where}: proposition {k} {spans[k]} does not start in "
                                 f"its paragraph {p} {paragraphs[p]}")
        prop_para = [int(p) for p in prop_para]
    return text, spans, paragraphs, np.asarray(prop_para, dtype=np.int64)


def _check_spans(spans, n_chars, where, what, allow_empty=False):
    try:
        spans = [tuple(s) for s in spans]
    except TypeError:
        raise TypeError(f"{where}: {what} spans must be a list of (start, end) pairs") from None
    out = []
    for k, span in enumerate(spans):
        if len(span) != 2 or not all(isinstance(v, Integral) for v in span):
            raise ValueError(f"{where}: {what} {k} span {span!r} is not a pair of ints")
        a, b = int(span[0]), int(span[1])
        if not 0 <= a <= b <= n_chars or (a == b and not allow_empty):
            raise ValueError(f"{where}: {what} {k} span {(a, b)} is outside the text "
                             f"(0..{n_chars}) or empty")
        if out and a < out[-1][1]:
            prev = out[-1]
            if a < prev[0]:
                raise ValueError(f"{where}: {what} spans are not sorted ({what} {k - 1} "
                                 f"{prev} before {k} {(a, b)})")
            raise ValueError(f"{where}: {what} {k - 1} {prev} and {k} {(a, b)} overlap")
        out.append((a, b))
    return out


def _check_discourse(relations, where):
    out = []
    for k, rel in enumerate(relations):
        try:
            reltype, sem_class, arg1, arg2 = rel
            arg1 = [(int(a), int(b)) for a, b in arg1]
            arg2 = [(int(a), int(b)) for a, b in arg2]
        except (TypeError, ValueError):
            raise ValueError(f"{where}: discourse relation {k} is not (reltype, sem_class, "
                             f"arg1_spans, arg2_spans): {rel!r}") from None
        out.append((str(reltype), str(sem_class), arg1, arg2))
    return out


# ---------------------------------------------------------------------------
# Per-document analysis: tokens, sentences and proposition attributes
# ---------------------------------------------------------------------------

_UNSET = object()


class _Sentence:
    """One CoreNLP sentence, read once per document."""

    __slots__ = ("dep_dependent", "dep_strings", "height", "n_leaves", "n_sbar",
                 "np_seqs", "prod_end", "prod_start", "prod_strings", "root_verb",
                 "root_verb_args", "vp_seqs")


def _read_sentence(sent, lemmas, words, pos, first, where, k):
    out = _Sentence()
    try:
        leaves, nodes, out.height = read_constituents(sent["parse"])
    except KeyError:
        raise ValueError(f"{where}: CoreNLP sentence {k} has no 'parse'") from None
    except (ValueError, TypeError) as e:
        raise ValueError(f"{where}: CoreNLP sentence {k}: {e}") from None
    out.prod_strings = [prod for _, _, _, prod in nodes]
    out.prod_start = np.fromiter((a for _, a, _, _ in nodes), np.int64, len(nodes))
    out.prod_end = np.fromiter((b for _, _, b, _ in nodes), np.int64, len(nodes))
    out.n_leaves = len(leaves)
    out.n_sbar = sum(1 for label, _, _, _ in nodes if label == "SBAR")
    out.np_seqs = [tuple(leaves[a:b]) for label, a, b, _ in nodes if label == "NP"]
    out.vp_seqs = [tuple(leaves[a:b]) for label, a, b, _ in nodes if label == "VP"]
    n = len(sent["tokens"])
    try:
        arcs = sent["collapsed-ccprocessed-dependencies"]
        dependents = np.array([a["dependent"] for a in arcs], dtype=np.int64) - 1
        governors = [a["governor"] for a in arcs]
    except (KeyError, TypeError):
        raise ValueError(f"{where}: CoreNLP sentence {k} has no readable "
                         "'collapsed-ccprocessed-dependencies'") from None
    if len(arcs) and (dependents.min() < 0 or dependents.max() >= n
                      or min(governors) < 0 or max(governors) > n):
        raise ValueError(f"{where}: CoreNLP sentence {k} has a dependency arc to a token "
                         f"outside its {n} tokens")
    out.dep_dependent = dependents
    out.dep_strings = [
        f"{lemmas[first + d]} -> {lemmas[first + g - 1] if g else 'ROOT'}"
        for d, g in zip(dependents.tolist(), governors)
    ]
    # The root verb is found only for sentences that need it (rarely).
    out.root_verb = _UNSET
    out.root_verb_args = (sent, words, pos, first, n)
    return out


def _root_verb(sent, words, pos, first, n):
    """``(modal, tense)`` of the sentence's root verb, or None without a verb."""
    arcs = sent.get("basic-dependencies")
    if not arcs:
        return None
    head = np.full(n, -1, dtype=np.int64)
    for a in arcs:
        d = a["dependent"] - 1
        if 0 <= d < n:
            head[d] = a["governor"] - 1  # -1 = ROOT
    depth = np.full(n, n + 1, dtype=np.int64)
    for i in range(n):
        j, steps = i, 0
        while j >= 0 and steps <= n:
            j = head[j]
            steps += 1
        if j < 0:
            depth[i] = steps
    verbs = [i for i in range(n) if pos[first + i].startswith("V")]
    if not verbs:
        return None
    root = min(verbs, key=lambda i: (depth[i], i))
    # Modals attached to the root verb, or beside it under the same head.
    attached = [i for i in range(n)
                if head[i] == root or (head[root] >= 0 and head[i] == head[root])]
    modal = any(words[first + i].lower() in _MODALS for i in attached)
    low = [w.lower() for w in words[first:first + n]]
    if (root >= 1 and low[root - 1] == "will") or (
            root >= 2 and low[root - 2:root] == ["going", "to"]):
        tense = "future"
    elif pos[first + root] in ("VBD", "VBN"):
        tense = "past"
    else:
        tense = "pres"
    return modal, tense


class _Doc:
    """A document's tokens, sentences and per-proposition attributes."""


def _analyse(doc, index, cfg):
    """Tokens, sentences and proposition attributes of one document.

    ``cfg``: use_parse, use_discourse, lexicon (compiled), root_verb,
    include_preceding, essay.
    """
    use_parse, use_discourse = cfg["use_parse"], cfg["use_discourse"]
    where = _doc_name(doc, index)
    text, spans, paragraphs, prop_para = _check_document(doc, index)
    out = _Doc()
    out.name = where
    out.prop_para = prop_para
    n_props = len(spans)
    sentences = None
    # fit and transform have checked that every document has the annotations
    # the fitted kinds use (ArgumentFeatures._availability / _check_annotations).
    if use_parse:
        ann = doc["corenlp"]
        try:
            raw_sents = ann["sentences"]
            toks = [(t["word"], t["lemma"], t["pos"], int(t["characterOffsetBegin"]),
                     t.get("originalText", t["word"]),
                     int(t.get("characterOffsetEnd", int(t["characterOffsetBegin"])
                                + len(t["word"]))))
                    for s in raw_sents for t in s["tokens"]]
            sent_sizes = [len(s["tokens"]) for s in raw_sents]
        except (KeyError, TypeError):
            raise ValueError(f"{where}: 'corenlp' must hold 'sentences' of 'tokens' with "
                             "'word', 'lemma', 'pos' and 'characterOffsetBegin'") from None
        words = [t[0] for t in toks]
        lemmas = [t[1] for t in toks]
        pos = [t[2] for t in toks]
        begins = np.array([t[3] for t in toks], dtype=np.int64)
        tok_ends = np.array([t[5] for t in toks], dtype=np.int64)
        original = [t[4] for t in toks]
        sent_first = np.concatenate([[0], np.cumsum(sent_sizes)]).astype(np.int64)
        sentences = [_read_sentence(s, lemmas, words, pos, int(sent_first[k]), where, k)
                     for k, s in enumerate(raw_sents)]
    else:
        words, begins, sent_first = _tokenize(text)
        tok_ends = begins + np.array([len(w) for w in words], dtype=np.int64)
        original = words
        lemmas = [w.lower() for w in words]
        pos = None
    if len(begins) and np.any(np.diff(begins) < 0):
        raise ValueError(f"{where}: token offsets are not in text order")
    n_sents = len(sent_first) - 1
    sent_of = np.repeat(np.arange(n_sents), np.diff(sent_first))
    out.all_lemmas = lemmas
    out.sentences = sentences

    starts = np.array([a for a, _ in spans], dtype=np.int64)
    ends = np.array([b for _, b in spans], dtype=np.int64)
    t0 = np.searchsorted(begins, starts, "left")
    t1 = np.searchsorted(begins, ends, "left")
    out.t0, out.t1 = t0, t1
    n_tokens = (t1 - t0).astype(np.float64)
    # Paragraph boundaries in tokens.
    para_start = np.array([a for a, _ in paragraphs], dtype=np.int64)
    para_end = np.array([b for _, b in paragraphs], dtype=np.int64)
    para_t0 = np.searchsorted(begins, para_start, "left")
    para_t1 = np.searchsorted(begins, para_end, "left")
    p = prop_para
    # t0p: where token attributes start; with include_preceding, the start of
    # the proposition's first sentence (the persuasive-essay setting), but
    # not before its paragraph.
    t0p = t0.copy()
    char_start = starts.copy()
    if cfg["include_preceding"] and len(begins):
        has = t0 < t1
        first_of = sent_first[sent_of[np.minimum(t0, len(begins) - 1)]]
        t0p = np.where(has, np.maximum(first_of, np.minimum(para_t0[p], t0)), t0)
        moved = t0p < t0
        char_start[moved] = begins[t0p[moved]]
    out.preceding = [tuple(original[t0p[k]:t0[k]]) for k in range(n_props)]

    # Paragraph attributes.
    n_toks_in_para = (para_t1 - para_t0)[p].astype(np.float64)
    relative = np.divide(t0p - para_t0[p], n_toks_in_para, out=np.zeros(n_props),
                         where=n_toks_in_para > 0)
    same_para = p[:, None] == p[None, :]
    order = np.arange(n_props)
    before = same_para & (order[None, :] < order[:, None])
    after = same_para & (order[None, :] > order[:, None])
    preceding_props = before.sum(1).astype(np.float64)
    following_props = after.sum(1).astype(np.float64)

    # Sentences of each proposition and the counts around it.
    prop_sents = []
    n_toks_in_sent = np.zeros(n_props)
    n_prec = np.zeros(n_props)
    n_foll = np.zeros(n_props)
    for k in range(n_props):
        if t1[k] > t0[k]:
            ss = np.arange(sent_of[t0[k]], sent_of[t1[k] - 1] + 1)
            n_toks_in_sent[k] = sent_first[ss[-1] + 1] - sent_first[ss[0]]
            n_prec[k] = t0[k] - sent_first[ss[0]]
            n_foll[k] = sent_first[ss[-1] + 1] - t1[k]
        else:
            ss = np.zeros(0, dtype=np.int64)
        prop_sents.append(ss)
    out.prop_sents = prop_sents
    out.n_sents = n_sents

    attrs = {name: [] for name in ("lemmas", "pos", "productions", "dependency_tuples",
                                   "discourse", "nouns", "lower_lemmas")}
    attrs.update({name: [] for name in _INDICATOR_SETS})
    height = np.zeros(n_props)
    subclauses = np.zeros(n_props)
    modal = np.zeros(n_props)
    tense = ["unk"] * n_props
    first_person = np.zeros(n_props)
    for k in range(n_props):
        a, b = t0p[k], t1[k]
        lem = lemmas[a:b]
        attrs["lemmas"].append(set(lem))
        attrs["lower_lemmas"].append([x.lower() for x in lem])
        first_person[k] = any(w in _FIRST_PERSON for w in words[a:b])
        if use_parse:
            ps = pos[a:b]
            attrs["pos"].append(set(ps))
            attrs["nouns"].append({x for x, t in zip(lem, ps) if t.startswith("N")})
            prods, deps = set(), set()
            heights = []
            for j, s in enumerate(prop_sents[k]):
                sent = sentences[s]
                ls = int(a - sent_first[s]) if j == 0 else 0
                le = int(b - sent_first[s] - 1)
                le_clip = min(le, sent.n_leaves - 1)
                mask = (sent.prod_start >= ls) & (sent.prod_end <= le_clip + 1)
                prods.update(sent.prod_strings[i] for i in np.flatnonzero(mask))
                mask = (sent.dep_dependent >= ls) & (sent.dep_dependent <= le)
                deps.update(sent.dep_strings[i] for i in np.flatnonzero(mask))
                heights.append(sent.height)
                subclauses[k] += 1 + sent.n_sbar
                n_s = int(sent_first[s + 1] - sent_first[s])
                if cfg["root_verb"] == "original":
                    # The original implementation compares the inclusive sentence end with
                    # the exclusive proposition end: off by one.
                    covers = ls == 0 and le == n_s - 2
                else:
                    covers = ls == 0 and le >= n_s - 1
                if covers and sent.root_verb is _UNSET:
                    sent.root_verb = _root_verb(*sent.root_verb_args)
                if covers and sent.root_verb is not None:
                    modal[k], tense[k] = sent.root_verb
            attrs["productions"].append(prods)
            attrs["dependency_tuples"].append(deps)
            height[k] = np.mean(heights) if heights else 0.0
        else:
            attrs["nouns"].append({x for x in attrs["lower_lemmas"][-1]
                                   if x not in _STOPWORDS and any(c.isalpha() for c in x)})

    # Discourse relations overlapping each proposition.
    if use_discourse:
        rels = _check_discourse(doc["discourse"], where)
        for k in range(n_props):
            cs, ce = char_start[k], spans[k][1]
            labels = set()
            for reltype, sem, arg1, arg2 in rels:
                for arg, pieces in (("Arg1", arg1), ("Arg2", arg2)):
                    if any(not (pb <= cs or pa >= ce) for pa, pb in pieces):
                        labels.add(f"{sem}_{reltype}_{arg}")
            attrs["discourse"].append(labels)

    # Argumentative markers inside, before and after each proposition.
    for k in range(n_props):
        cs, ce = char_start[k], spans[k][1]
        pa, pb = paragraphs[p[k]]
        for name, piece in (("indicators", text[cs:ce]),
                            ("indicator_preceding_in_para", text[pa:cs]),
                            ("indicator_following_in_para", text[ce:pb])):
            attrs[name].append({cat for cat, rx in cfg["lexicon"] if rx.search(piece)})

    if cfg["essay"]:
        _essay_attributes(out, paragraphs, begins, tok_ends, sent_first, sentences)

    is_first = preceding_props == 0
    is_last = following_props == 0
    ratio = np.divide(n_tokens, n_toks_in_sent, out=np.zeros(n_props),
                      where=n_toks_in_sent > 0)
    out.attrs = attrs
    out.raw = np.column_stack([is_first, is_last, ratio, relative, first_person]
                              + ([modal] if use_parse else []))
    out.tense = tense
    scaled = [n_tokens, n_toks_in_sent, n_toks_in_para, n_prec, n_foll, preceding_props,
              following_props]
    if use_parse:
        scaled += [height, subclauses]
    out.scaled = np.column_stack(scaled)
    out.n_tokens = n_tokens
    out.words = [words[t0p[k]:t1[k]] for k in range(n_props)]
    out.n_props = n_props
    return out


def _essay_attributes(out, paragraphs, begins, tok_ends, sent_first, sentences):
    """Introduction / conclusion position and NP / VP sharing of each proposition.

    The introduction is the first paragraph holding a proposition, the
    conclusion the last one. A proposition shares an NP (VP) with a sentence
    when the leaves of an NP (VP) of its last sentence equal those of an NP
    (VP) of that sentence; counts sum over the introduction's sentences
    (those inside the paragraph) and the conclusion's (those starting in it).
    """
    p = out.prop_para
    n = len(p)
    flags = np.zeros((n, 2))
    counts = np.zeros((n, 4))
    if n:
        intro, concl = p.min(), p.max()
        flags[:, 0] = p == intro
        flags[:, 1] = p == concl
        if sentences is not None and len(sentences):
            s_begin = begins[sent_first[:-1]]
            s_end = tok_ends[sent_first[1:] - 1]
            ia, ib = paragraphs[intro]
            ca, cb = paragraphs[concl]
            intro_s = np.flatnonzero((s_begin >= ia) & (s_end <= ib))
            concl_s = np.flatnonzero((s_begin >= ca) & (s_begin < cb))
            for k in range(n):
                if not len(out.prop_sents[k]):
                    continue
                last = sentences[out.prop_sents[k][-1]]
                for j, (mine, kind) in enumerate(((last.np_seqs, "np_seqs"),
                                                  (last.vp_seqs, "vp_seqs"))):
                    for col, group_s in ((j, intro_s), (2 + j, concl_s)):
                        counts[k, col] = sum(
                            sum(x in other for x in mine)
                            for other in (set(getattr(sentences[s], kind))
                                          for s in group_s))
    # counts: n_shared_{np,vp}_intro, n_shared_{np,vp}_conclusion
    if sentences is None:
        out.essay_raw, out.essay_scaled = flags, np.zeros((n, 0))
    else:
        out.essay_raw = np.hstack([flags, counts > 0])
        out.essay_scaled = counts


def _tokenize(text):
    """Words, their start offsets and sentence boundaries of a text without annotations.

    A sentence ends after ``.``, ``!`` or ``?`` (and any more of them) and at
    a line break.
    """
    words, begins, sent_first = [], [], [0]
    end = 0
    for m in _TOKEN.finditer(text):
        if sent_first[-1] < len(words) and (
                (words[-1] in _SENTENCE_END and m.group() not in _SENTENCE_END)
                or "\n" in text[end:m.start()]):
            sent_first.append(len(words))
        words.append(m.group())
        begins.append(m.start())
        end = m.end()
    if len(words) > sent_first[-1]:
        sent_first.append(len(words))
    return words, np.array(begins, dtype=np.int64), np.array(sent_first, dtype=np.int64)


# ---------------------------------------------------------------------------
# Pairs and triples
# ---------------------------------------------------------------------------

def _candidates(prop_para):
    """Ordered pairs of distinct propositions of the same paragraph, source-major."""
    n = len(prop_para)
    s, t = np.nonzero((prop_para[:, None] == prop_para[None, :]) & ~np.eye(n, dtype=bool))
    return np.column_stack([s, t]).astype(np.int64).reshape(-1, 2)


def _triples(pairs, n_props):
    """``(a, b, c)`` for every candidate (a, b) and every candidate (b, c), c != a."""
    if len(pairs) == 0:
        return np.zeros((0, 3), dtype=np.int64)
    src, trg = pairs[:, 0], pairs[:, 1]
    out_count = np.bincount(src, minlength=n_props)
    out_start = np.concatenate([[0], np.cumsum(out_count)])
    count = out_count[trg]
    first = np.repeat(np.arange(len(pairs)), count)
    # position of each (b, c) within the candidates leaving b
    offset = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    second = out_start[trg][first] + offset
    a, b, c = src[first], trg[first], trg[second]
    keep = c != a
    return np.column_stack([a[keep], b[keep], c[keep]]).astype(np.int64).reshape(-1, 3)


def _second_order(triples, sent_sets, noun_sets, n_sents):
    """The 35 second-order features of each triple."""
    n_props = len(sent_sets)
    if len(triples) == 0:
        return np.zeros((0, len(SECOND_ORDER_FEATURES)))
    S = np.zeros((n_props, max(n_sents, 1)), dtype=bool)
    for k, ss in enumerate(sent_sets):
        S[k, ss] = True
    vocab = sorted(set().union(*noun_sets))
    index = {w: i for i, w in enumerate(vocab)}
    N = np.zeros((n_props, max(len(vocab), 1)), dtype=bool)
    for k, ns in enumerate(noun_sets):
        N[k, [index[w] for w in ns]] = True
    a, b, c = triples.T
    Sa, Sb, Sc = S[a], S[b], S[c]
    same_abc = (Sa & Sb & Sc).any(1)
    same_ab, same_ac, same_bc = (Sa & Sb).any(1), (Sa & Sc).any(1), (Sb & Sc).any(1)
    order = [(a < b) & (b < c), (a < c) & (c < b), (b < a) & (a < c),
             (b < c) & (c < a), (c < a) & (a < b), (c < b) & (b < a)]
    big = np.int64(1 << 40)
    has = S.any(1)
    smin = np.where(has, S.argmax(1), big)
    smax = np.where(has, S.shape[1] - 1 - S[:, ::-1].argmax(1), -big)
    hi = np.maximum(np.maximum(smax[a], smax[b]), smax[c])
    lo = np.minimum(np.minimum(smin[a], smin[b]), smin[c])
    rng = np.where(hi >= lo, hi - lo, 0)
    ranges = [rng <= k for k in range(1, 6)]
    Na, Nb, Nc = N[a], N[b], N[c]
    size = N.sum(1).astype(np.float64)
    na, nb, nc = size[a], size[b], size[c]
    pair = (N.astype(np.float64) @ N.T.astype(np.float64))
    ab, ac, bc = pair[a, b], pair[a, c], pair[b, c]
    abc = (Na & Nb & Nc).sum(1).astype(np.float64)
    u_ab, u_ac, u_bc = na + nb - ab, na + nc - ac, nb + nc - bc
    u_abc = na + nb + nc - ab - ac - bc + abc
    cols = [same_abc, same_ab, same_ac, same_bc, *order, *ranges,
            abc > 0, ab > 0, ac > 0, bc > 0,
            abc / (1 + u_abc), ab / (1 + u_ab), ac / (1 + u_ac), bc / (1 + u_bc),
            abc / (1 + na), abc / (1 + nb), abc / (1 + nc),
            abc / (1 + u_ab), abc / (1 + u_ac), abc / (1 + u_bc),
            ab / (1 + na), ab / (1 + nb), ac / (1 + na), ac / (1 + nc),
            bc / (1 + nb), bc / (1 + nc)]
    return np.column_stack([np.asarray(x, dtype=np.float64) for x in cols])


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
            value = getattr(self, name)
            if not isinstance(value, Integral) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative int, got {value!r}")
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


def _gather_rows(indptr, indices, rows):
    """(output row, column) of the entries of CSR ``rows``, one output row per entry of rows."""
    lens = indptr[rows + 1] - indptr[rows]
    total = int(lens.sum())
    first = np.repeat(indptr[rows] - (np.cumsum(lens) - lens), lens)
    return np.repeat(np.arange(len(rows)), lens), indices[first + np.arange(total)]


def _nouns(d):
    return d.attrs["nouns"] if d.attrs["nouns"] else [set() for _ in range(d.n_props)]


def _shared_counts(d):
    """|N_x ∩ N_y| for every pair of propositions."""
    nouns = _nouns(d)
    vocab = {w: i for i, w in enumerate(sorted(set().union(*nouns)))}
    N = np.zeros((d.n_props, max(len(vocab), 1)))
    for k, ns in enumerate(nouns):
        N[k, [vocab[w] for w in ns]] = 1.0
    return N @ N.T


def _same_sentence(d):
    S = np.zeros((d.n_props, max(d.n_sents, 1)))
    for k, ss in enumerate(d.prop_sents):
        S[k, ss] = 1.0
    return (S @ S.T) > 0
