"""Tokenising and analysis of argumentative documents, for :class:`ArgumentFeatures`.

:func:`_analyse` checks a document and reads its tokens and sentences
(from its CoreNLP annotations, or by :func:`_tokenize` without them), then
the attributes of each proposition: its position in its sentence and
paragraph, lemmas, parts of speech, productions and dependency tuples of
its parse, discourse relations, argumentative markers, and the persuasive
essays' attributes. The feature modules (``_argument_features.py``,
``_argument_links.py``, ``_argument_second_order.py``) turn them into
vectors.
"""

from numbers import Integral

import numpy as np

from ..utils._tokenize import tokenize
from ._ptb import read_constituents

_MODALS = frozenset(["can", "could", "may", "might", "must", "shall", "should", "will",
                     "would"])
_FIRST_PERSON = frozenset(["I", "me", "my", "mine", "myself"])

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

_INDICATOR_SETS = ("indicator_following_in_para", "indicator_preceding_in_para", "indicators")

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


def _tokens(doc, text, where, use_parse):
    """The document's tokens and sentences: from its CoreNLP annotations, or by :func:`_tokenize`.

    Returns ``(words, lemmas, pos, begins, tok_ends, original, sent_first,
    sentences)``; ``pos`` and ``sentences`` (the parsed sentences) are None
    without the annotations.
    """
    sentences = None
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
    return words, lemmas, pos, begins, tok_ends, original, sent_first, sentences


def _parse_attributes(a, b, prop_sents, sentences, sent_first, root_verb_rule):
    """What the parses say of the proposition of tokens ``a .. b - 1`` (sentences ``prop_sents``).

    Returns its productions and dependency tuples (sets of strings), the mean
    height of its sentences' parse trees, its count of clauses (one per
    sentence plus their SBARs) and ``(modal, tense)`` of the root verb of
    the last sentence it covers whole (None if none; ``root_verb_rule``:
    ``"original"`` reproduces the original implementation's off-by-one).
    """
    prods, deps = set(), set()
    heights = []
    n_clauses = 0.0
    verb = None
    for j, s in enumerate(prop_sents):
        sent = sentences[s]
        ls = int(a - sent_first[s]) if j == 0 else 0
        le = int(b - sent_first[s] - 1)
        le_clip = min(le, sent.n_leaves - 1)
        mask = (sent.prod_start >= ls) & (sent.prod_end <= le_clip + 1)
        prods.update(sent.prod_strings[i] for i in np.flatnonzero(mask))
        mask = (sent.dep_dependent >= ls) & (sent.dep_dependent <= le)
        deps.update(sent.dep_strings[i] for i in np.flatnonzero(mask))
        heights.append(sent.height)
        n_clauses += 1 + sent.n_sbar
        n_s = int(sent_first[s + 1] - sent_first[s])
        if root_verb_rule == "original":
            # The original implementation compares the inclusive sentence end with
            # the exclusive proposition end: off by one.
            covers = ls == 0 and le == n_s - 2
        else:
            covers = ls == 0 and le >= n_s - 1
        if covers and sent.root_verb is _UNSET:
            sent.root_verb = _root_verb(*sent.root_verb_args)
        if covers and sent.root_verb is not None:
            verb = sent.root_verb
    return prods, deps, (np.mean(heights) if heights else 0.0), n_clauses, verb


def _discourse_attributes(rels, char_start, spans):
    """The PDTB relations overlapping each proposition, as ``"{sense}_{type}_{Arg1|Arg2}"``."""
    out = []
    for k in range(len(spans)):
        cs, ce = char_start[k], spans[k][1]
        labels = set()
        for reltype, sem, arg1, arg2 in rels:
            for arg, pieces in (("Arg1", arg1), ("Arg2", arg2)):
                if any(not (pb <= cs or pa >= ce) for pa, pb in pieces):
                    labels.add(f"{sem}_{reltype}_{arg}")
        out.append(labels)
    return out


def _marker_attributes(text, char_start, spans, paragraphs, prop_para, lexicon):
    """The argumentative markers' categories inside, before and after each proposition.

    Before and after within its paragraph; ``lexicon``: ``(category,
    compiled pattern)`` pairs.
    """
    out = {name: [] for name in ("indicators", "indicator_preceding_in_para",
                                 "indicator_following_in_para")}
    for k in range(len(spans)):
        cs, ce = char_start[k], spans[k][1]
        pa, pb = paragraphs[prop_para[k]]
        for name, piece in (("indicators", text[cs:ce]),
                            ("indicator_preceding_in_para", text[pa:cs]),
                            ("indicator_following_in_para", text[ce:pb])):
            out[name].append({cat for cat, rx in lexicon if rx.search(piece)})
    return out


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
    # fit and transform have checked that every document has the annotations
    # the fitted kinds use (ArgumentFeatures._availability / _check_annotations).
    words, lemmas, pos, begins, tok_ends, original, sent_first, sentences = _tokens(
        doc, text, where, use_parse)
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
            prods, deps, height[k], n_clauses, verb = _parse_attributes(
                a, b, prop_sents[k], sentences, sent_first, cfg["root_verb"])
            subclauses[k] += n_clauses
            if verb is not None:
                modal[k], tense[k] = verb
            attrs["productions"].append(prods)
            attrs["dependency_tuples"].append(deps)
        else:
            attrs["nouns"].append({x for x in attrs["lower_lemmas"][-1]
                                   if x not in _STOPWORDS and any(c.isalpha() for c in x)})

    if use_discourse:
        attrs["discourse"] = _discourse_attributes(_check_discourse(doc["discourse"], where),
                                                   char_start, spans)
    for name, sets in _marker_attributes(text, char_start, spans, paragraphs, p,
                                         cfg["lexicon"]).items():
        attrs[name] = sets

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

    The ``"simple"`` rules of the shared tokenizer: a sentence ends after
    ``.``, ``!`` or ``?`` (and any more of them) and at a line break.
    """
    tokens = tokenize(text, style="simple")
    words = [text[a:b] for a, b in zip(tokens.starts.tolist(), tokens.ends.tolist())]
    return words, tokens.starts, tokens.sentence_starts
