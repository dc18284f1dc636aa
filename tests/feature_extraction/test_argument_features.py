"""ArgumentFeatures: every feature group on hand-made documents, and on CDCP."""

import itertools
import math
import pickle
import re
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.base import clone

from sksparse_struct.feature_extraction import (
    ARGUMENT_MARKERS,
    ArgumentFeatures,
    DocumentFeatures,
)

TEXT = "Cats sleep. So dogs bark because cats sleep."
# p0 = "Cats sleep.", p1 = "So dogs bark", p2 = "because cats sleep."
SPANS = [(0, 11), (12, 24), (25, 44)]
SENTENCES = [
    {
        "tokens": [("Cats", "cat", "NNS"), ("sleep", "sleep", "VBP"), (".", ".", ".")],
        "parse": "(ROOT (S (NP (NNS Cats)) (VP (VBP sleep)) (. .)))",
        "arcs": [(2, 1), (0, 2), (2, 3)],  # (governor, dependent), 1-based
    },
    {
        "tokens": [("So", "so", "RB"), ("dogs", "dog", "NNS"), ("bark", "bark", "VBP"),
                   ("because", "because", "IN"), ("cats", "cat", "NNS"),
                   ("sleep", "sleep", "VBP"), (".", ".", ".")],
        "parse": "(ROOT (S (ADVP (RB So)) (NP (NNS dogs)) (VP (VBP bark) (SBAR (IN because)"
                 " (S (NP (NNS cats)) (VP (VBP sleep))))) (. .)))",
        "arcs": [(3, 1), (3, 2), (0, 3), (6, 4), (6, 5), (3, 6), (3, 7)],
    },
]
DISCOURSE = [("Explicit", "Expansion", [(0, 10)], [(12, 24)]),
             ("Explicit", "Contingency", [(12, 24)], [(33, 43)])]
LINKS = [(0, 1), (0, 2), (2, 1)]


def corenlp(text, sentences):
    """A CoreNLP-like dict: token offsets found in the text, both dependency views."""
    out, pos = [], 0
    for k, sent in enumerate(sentences):
        tokens = []
        for i, (word, lemma, tag) in enumerate(sent["tokens"]):
            begin = text.index(word, pos)
            pos = begin + len(word)
            tokens.append({"index": i + 1, "word": word, "originalText": word,
                           "lemma": lemma, "pos": tag, "characterOffsetBegin": begin,
                           "characterOffsetEnd": pos})
        arcs = [{"dep": "x", "governor": g, "dependent": d} for g, d in sent["arcs"]]
        out.append({"index": k, "parse": sent["parse"], "tokens": tokens,
                    "basic-dependencies": arcs,
                    "collapsed-ccprocessed-dependencies": arcs})
    return {"sentences": out}


def make_doc(text=TEXT, spans=SPANS, sentences=SENTENCES, discourse=DISCOURSE, doc_id="d0"):
    return {"id": doc_id, "text": text, "propositions": list(spans),
            "paragraphs": [(0, len(text))], "proposition_paragraph": [0] * len(spans),
            "corenlp": corenlp(text, sentences) if sentences is not None else None,
            "discourse": discourse}


def text_doc(text, spans, doc_id="t"):
    return {"id": doc_id, "text": text, "propositions": list(spans)}


@pytest.fixture(scope="module")
def fitted():
    doc = make_doc()
    af = ArgumentFeatures()
    out = af.fit_transform([doc], [(["value"] * 3, LINKS)])
    return af, out[0]


def row(matrix, names, i):
    """Nonzero features of row i as {name: value}."""
    r = matrix.getrow(i)
    return {names[j]: v for j, v in zip(r.indices, r.data)}


def group(af, kind, name, matrix, i):
    sl = af.feature_groups_[kind][name]
    names = (af.feature_names_props_ if kind == "props" else af.feature_names_links_)
    prefix = f"{name}="
    return {k.removeprefix(prefix): v
            for k, v in row(matrix[:, sl], names[sl], i).items()}


# ---------------------------------------------------------------------------
# Proposition features on a hand-made parsed document
# ---------------------------------------------------------------------------

def test_output_layout(fitted):
    af, out = fitted
    assert isinstance(out, DocumentFeatures)
    assert af.groups_ == ("dependency_tuples", "discourse", "indicators", "lemmas", "pos",
                          "productions", "structure", "pmi")
    assert af.uses_corenlp_
    assert out.props.shape == (3, af.n_prop_features_)
    assert out.props.dtype == np.float64 and out.links.dtype == np.float64
    assert out.links.shape == (6, af.n_link_features_)
    assert out.link_pairs.dtype == np.int64 and out.triples.dtype == np.int64
    assert out.proposition_paragraph.tolist() == [0, 0, 0]
    # Group slices tile the columns in order, and names match widths.
    for kind, names in (("props", af.feature_names_props_),
                        ("links", af.feature_names_links_)):
        stop = 0
        for sl in af.feature_groups_[kind].values():
            assert sl.start == stop
            stop = sl.stop
        assert stop == len(names)
    assert len(set(af.feature_names_props_)) == af.n_prop_features_
    assert len(set(af.feature_names_links_)) == af.n_link_features_


def test_dependency_tuples_lemmas_pos(fitted):
    af, out = fitted
    # 10 arcs, "cat -> sleep" twice: a vocabulary of 9 tuples.
    assert len(af.vocabularies_["dependency_tuples"]) == 9
    assert set(group(af, "props", "dependency_tuples", out.props, 0)) == {
        "cat -> sleep", "sleep -> ROOT", ". -> sleep"}
    assert set(group(af, "props", "dependency_tuples", out.props, 1)) == {
        "so -> bark", "dog -> bark", "bark -> ROOT"}
    assert set(group(af, "props", "dependency_tuples", out.props, 2)) == {
        "because -> sleep", "cat -> sleep", "sleep -> bark", ". -> bark"}
    assert af.vocabularies_["lemmas"] == [".", "bark", "because", "cat", "dog", "sleep", "so"]
    assert set(group(af, "props", "lemmas", out.props, 1)) == {"so", "dog", "bark"}
    assert set(group(af, "props", "pos", out.props, 2)) == {"IN", "NNS", "VBP", "."}


def test_productions_of_constituents_inside_the_proposition(fitted):
    af, out = fitted
    assert set(group(af, "links", "src_productions", out.links, 0)) == {
        "ROOT -> S", "S -> NP VP .", "NP -> NNS", "NNS -> 'Cats'", "VP -> VBP",
        "VBP -> 'sleep'", ". -> '.'"}
    # link 2 = (1, 0): source p1 = "So dogs bark", the VP spans beyond it.
    assert out.link_pairs[2].tolist() == [1, 0]
    assert set(group(af, "links", "src_productions", out.links, 2)) == {
        "ADVP -> RB", "RB -> 'So'", "NP -> NNS", "NNS -> 'dogs'", "VBP -> 'bark'"}
    # link 4 = (2, 0): source p2 = "because cats sleep."
    assert set(group(af, "links", "src_productions", out.links, 4)) == {
        "SBAR -> IN S", "IN -> 'because'", "S -> NP VP", "NP -> NNS", "NNS -> 'cats'",
        "VP -> VBP", "VBP -> 'sleep'", ". -> '.'"}


def test_discourse_and_indicators(fitted):
    af, out = fitted
    assert set(group(af, "props", "discourse", out.props, 0)) == {"Expansion_Explicit_Arg1"}
    assert set(group(af, "props", "discourse", out.props, 1)) == {
        "Expansion_Explicit_Arg2", "Contingency_Explicit_Arg1"}
    assert set(group(af, "props", "discourse", out.props, 2)) == {"Contingency_Explicit_Arg2"}
    # "So" is both a forward and a backward marker; "because" a backward one.
    ind = [set(group(af, "props", "indicators", out.props, i)) for i in range(3)]
    pre = [set(group(af, "props", "indicator_preceding_in_para", out.props, i))
           for i in range(3)]
    fol = [set(group(af, "props", "indicator_following_in_para", out.props, i))
           for i in range(3)]
    assert ind == [set(), {"forward", "backward"}, {"backward"}]
    assert pre == [set(), set(), {"forward", "backward"}]
    assert fol == [{"forward", "backward"}, {"backward"}, set()]


def test_raw_and_min_max_scaled(fitted):
    af, out = fitted
    raw = [group(af, "props", "raw", out.props, i) for i in range(3)]
    assert raw[0] == {"is_first_in_para": 1.0, "toks_to_sent_ratio": 1.0,
                      "root_vb_tense=unk": 1.0}
    assert raw[1] == pytest.approx({"toks_to_sent_ratio": 3 / 7, "relative_in_para": 0.3,
                                    "root_vb_tense=unk": 1.0})
    assert raw[2] == pytest.approx({"is_last_in_para": 1.0, "toks_to_sent_ratio": 4 / 7,
                                    "relative_in_para": 0.6, "root_vb_tense=unk": 1.0})
    # Raw counts per proposition (n_tokens, in sentence, in paragraph, before and
    # after in the sentence, props before and after, tree height, clauses):
    counts = np.array([[3, 3, 10, 0, 0, 0, 2, 5, 1],
                       [3, 7, 10, 0, 4, 1, 1, 8, 2],
                       [4, 7, 10, 3, 0, 2, 0, 8, 2]], dtype=float)
    lo, hi = counts.min(0), counts.max(0)
    expected = (counts - lo) / np.where(hi > lo, hi - lo, 1)  # zero range: shift only
    np.testing.assert_allclose(af.prop_scaler_[0], lo)
    np.testing.assert_allclose(af.prop_scaler_[1], hi)
    sl = af.feature_groups_["props"]["scaled"]
    np.testing.assert_allclose(out.props[:, sl].toarray(), expected)
    assert list(af.feature_names_props_[sl]) == [
        "n_tokens", "n_toks_in_sent", "n_toks_in_para", "n_toks_preceding_in_sent",
        "n_toks_following_in_sent", "preceding_props_in_para", "following_props_in_para",
        "parse_tree_height", "n_subordinate_clauses"]


def test_scaling_is_not_clipped_on_new_documents(fitted):
    af, _ = fitted
    text = "Cats sleep and dogs bark and birds sing."
    sents = [{"tokens": [(w, w.lower(), t) for w, t in zip(
        ["Cats", "sleep", "and", "dogs", "bark", "and", "birds", "sing", "."],
        ["NNS", "VBP", "CC", "NNS", "VBP", "CC", "NNS", "VBP", "."])],
        "parse": "(ROOT (S (NP (NNS Cats)) (VP (VBP sleep) (CC and) (NNS dogs) (VBP bark)"
                 " (CC and) (NNS birds) (VBP sing)) (. .)))",
        "arcs": [(2, 1), (0, 2)] + [(2, i) for i in range(3, 10)]}]
    doc = make_doc(text, [(0, 10), (11, 40)], sents, [])
    out = af.transform([doc])[0]
    sl = af.feature_groups_["props"]["scaled"]
    # n_tokens of prop 1 = 7: (7 - 3) / (4 - 3) = 4, beyond [0, 1].
    assert out.props[1, sl.start] == pytest.approx(4.0)
    # lemmas only in this test document have no column ("and", "dogs", "birds")
    lem = set(group(af, "props", "lemmas", out.props, 1))
    assert lem == {"bark", "."}
    assert not any("bird" in n for n in af.feature_names_props_)


def test_embeds_mean_of_found_words():
    vectors = {"cats": np.array([1.0, 0.0]), "sleep": np.array([0.0, 2.0]),
               "dogs": np.array([4.0, 4.0])}
    af = ArgumentFeatures(word_vectors=vectors)
    out = af.fit_transform([make_doc()], [(["value"] * 3, LINKS)])[0]
    assert "embeds" in af.groups_
    sl = af.feature_groups_["props"]["embeds"]
    emb = out.props[:, sl].toarray()
    np.testing.assert_allclose(emb[0], [0.5, 1.0])   # Cats, sleep ("." not found)
    np.testing.assert_allclose(emb[1], [4.0, 4.0])   # dogs
    np.testing.assert_allclose(emb[2], [0.5, 1.0])   # cats, sleep
    af2 = ArgumentFeatures(word_vectors=(["cats", "sleep", "dogs"],
                                         np.vstack(list(vectors.values()))))
    out2 = af2.fit_transform([make_doc()], [(["value"] * 3, LINKS)])[0]
    np.testing.assert_allclose(out2.props.toarray(), out.props.toarray())
    # plain lists work too, and the vectors are not copied into the estimator
    af4 = ArgumentFeatures(word_vectors=(["cats", "sleep", "dogs"],
                                         [list(v) for v in vectors.values()]))
    out4 = af4.fit_transform([make_doc()], [(["value"] * 3, LINKS)])[0]
    np.testing.assert_allclose(out4.props.toarray(), out.props.toarray())
    assert not any(isinstance(v, np.ndarray) and v.shape == (3, 2)
                   for v in vars(af2).values())
    # no vector for any word: zeros
    doc = make_doc()
    doc["text"] = doc["text"]
    af3 = ArgumentFeatures(word_vectors={"zebra": np.ones(3)})
    out3 = af3.fit_transform([doc])[0]
    assert out3.props[:, af3.feature_groups_["props"]["embeds"]].nnz == 0


# ---------------------------------------------------------------------------
# Link features, PMI, compatibility
# ---------------------------------------------------------------------------

def test_candidate_links_and_compat(fitted):
    _, out = fitted
    assert out.link_pairs.tolist() == [[0, 1], [0, 2], [1, 0], [1, 2], [2, 0], [2, 1]]
    np.testing.assert_array_equal(out.compat, [[1, 1, 1], [1, 0, 1], [1, 1, 0],
                                               [1, 1, 1], [1, 0, 0], [1, 1, 0]])


def test_candidates_stay_in_their_paragraph():
    text = "A is so. B is so. C is so. D is so. E is so."
    spans = [(9 * i, 9 * i + 8) for i in range(5)]
    doc = {"id": "p", "text": text, "propositions": spans,
           "paragraphs": [(0, 17), (18, 44)], "proposition_paragraph": [0, 0, 1, 1, 1]}
    out = ArgumentFeatures().fit_transform([doc])[0]
    assert out.link_pairs.tolist() == [[0, 1], [1, 0], [2, 3], [2, 4], [3, 2], [3, 4],
                                       [4, 2], [4, 3]]
    assert out.triples.tolist() == [[2, 3, 4], [2, 4, 3], [3, 2, 4], [3, 4, 2],
                                    [4, 2, 3], [4, 3, 2]]
    assert out.proposition_paragraph.tolist() == [0, 0, 1, 1, 1]
    # paragraphs default to the one containing each proposition
    del doc["proposition_paragraph"]
    again = ArgumentFeatures().fit_transform([doc])[0]
    assert again.link_pairs.tolist() == out.link_pairs.tolist()


def test_link_raw_and_scaled(fitted):
    af, out = fitted
    raw = {tuple(p): group(af, "links", "raw", out.links, i)
           for i, p in enumerate(out.link_pairs.tolist())}
    assert raw[(0, 2)] == {"src_is_first_in_para": 1, "trg_is_last_in_para": 1,
                           "src_precedes_trg": 1, "any_shared_nouns": 1}
    assert raw[(1, 2)] == {"trg_is_last_in_para": 1, "same_sentence": 1,
                           "src_precedes_trg": 1}
    assert raw[(2, 1)] == {"src_is_last_in_para": 1, "same_sentence": 1,
                           "trg_precedes_src": 1}
    sl = af.feature_groups_["links"]["scaled"]
    # src n_tokens, trg n_tokens, props between, n_props (zero range), shared nouns
    expected = np.array([[3, 3, 0, 3, 0], [3, 4, 1, 3, 1], [3, 3, 0, 3, 0],
                         [3, 4, 0, 3, 0], [4, 3, 1, 3, 1], [4, 3, 0, 3, 0]], dtype=float)
    lo, hi = expected.min(0), expected.max(0)
    np.testing.assert_allclose(out.links[:, sl].toarray(),
                               (expected - lo) / np.where(hi > lo, hi - lo, 1))


def test_link_side_groups_use_the_link_vocabularies():
    af = ArgumentFeatures(n_link_lemmas=2, n_link_productions=3)
    out = af.fit_transform([make_doc()])[0]
    # lemma counts: cat 2, sleep 2, . 2, then 1 each: top 2 by count, ties by string
    assert af.vocabularies_["link_lemmas"] == [".", "cat"]
    assert len(af.vocabularies_["link_productions"]) == 3
    assert set(group(af, "links", "trg_lemmas", out.links, 0)) == set()  # (0, 1): p1
    assert set(group(af, "links", "trg_lemmas", out.links, 1)) == {".", "cat"}  # (0, 2)
    assert "pmi" not in af.groups_  # fit without y


def pmi_tables():
    # lemma_freq over all tokens (lower-cased), links (0,1), (0,2), (2,1)
    freq = {"cat": 2, "sleep": 2, ".": 2, "so": 1, "dog": 1, "bark": 1, "because": 1}
    lem = [["cat", "sleep", "."], ["so", "dog", "bark"], ["because", "cat", "sleep", "."]]
    base = math.log(3) - math.log(3)
    out_c, in_c = {}, {}
    for s, t in LINKS:
        for w in lem[s]:
            out_c[w] = out_c.get(w, 0) + 1
        for w in lem[t]:
            in_c[w] = in_c.get(w, 0) + 1
    pin = {w: math.log(c) - math.log(freq[w]) - base for w, c in in_c.items()}
    pout = {w: math.log(c) - math.log(freq[w]) - base for w, c in out_c.items()}
    return lem, pin, pout


def test_pmi_tables_and_features(fitted):
    af, out = fitted
    lem, pin, pout = pmi_tables()
    assert af.pmi_in_ == pytest.approx(pin)
    assert af.pmi_out_ == pytest.approx(pout)
    assert pin["cat"] == pytest.approx(math.log(1 / 2))   # negative as a target
    assert pout["cat"] == pytest.approx(math.log(3 / 2))  # positive as a source
    assert pin["because"] == pytest.approx(0.0)

    def side(k, tables):
        pos = sum(any(t.get(w, 0) > 0 for t in tables) for w in lem[k])
        neg = sum(any(t.get(w, 0) < 0 for t in tables) for w in lem[k])
        n = len(lem[k])
        return [pos / n, neg / n, pos > 0, neg > 0]

    sl = af.feature_groups_["links"]["pmi"]
    got = out.links[:, sl].toarray()
    for i, (s, t) in enumerate(out.link_pairs.tolist()):
        np.testing.assert_allclose(got[i], side(s, [pin, pout]) + side(t, [pin, pout]))
    # p2: "because" has PMI 0 both ways, the 3 others are positive and negative
    np.testing.assert_allclose(got[4, :4], [0.75, 0.75, 1, 1])

    directional = ArgumentFeatures(pmi_sides="directional")
    got = directional.fit_transform([make_doc()], [(["v"] * 3, LINKS)])[0]
    got = got.links[:, directional.feature_groups_["links"]["pmi"]].toarray()
    for i, (s, t) in enumerate(out.link_pairs.tolist()):
        np.testing.assert_allclose(got[i], side(s, [pout]) + side(t, [pin]))


# ---------------------------------------------------------------------------
# Second-order features
# ---------------------------------------------------------------------------

def second_order_reference(a, b, c, S, N):
    """The 35 features of one triple from Python sets."""
    def j(*xs):
        return set.intersection(*[N[x] for x in xs])

    def u(*xs):
        return set.union(*[N[x] for x in xs])

    allS = S[a] | S[b] | S[c]
    rng = max(allS) - min(allS) if allS else 0
    i3, iab, iac, ibc = len(j(a, b, c)), len(j(a, b)), len(j(a, c)), len(j(b, c))
    order = sorted([(a, "a"), (b, "b"), (c, "c")])
    names = "".join(n for _, n in order)
    return ([bool(S[a] & S[b] & S[c]), bool(S[a] & S[b]), bool(S[a] & S[c]),
             bool(S[b] & S[c])]
            + [names == o for o in ("abc", "acb", "bac", "bca", "cab", "cba")]
            + [rng <= k for k in range(1, 6)]
            + [i3 > 0, iab > 0, iac > 0, ibc > 0,
               i3 / (1 + len(u(a, b, c))), iab / (1 + len(u(a, b))),
               iac / (1 + len(u(a, c))), ibc / (1 + len(u(b, c))),
               i3 / (1 + len(N[a])), i3 / (1 + len(N[b])), i3 / (1 + len(N[c])),
               i3 / (1 + len(u(a, b))), i3 / (1 + len(u(a, c))), i3 / (1 + len(u(b, c))),
               iab / (1 + len(N[a])), iab / (1 + len(N[b])),
               iac / (1 + len(N[a])), iac / (1 + len(N[c])),
               ibc / (1 + len(N[b])), ibc / (1 + len(N[c]))])


def test_second_order_three_propositions(fitted):
    af, out = fitted
    assert out.triples.tolist() == [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1],
                                    [2, 1, 0]]
    assert out.second_order.shape == (6, 35)
    assert len(af.feature_names_second_order_) == 35
    S = [{0}, {1}, {1}]
    N = [{"cat"}, {"dog"}, {"cat"}]
    for row_, (a, b, c) in zip(out.second_order, out.triples.tolist()):
        np.testing.assert_allclose(row_, np.array(second_order_reference(a, b, c, S, N),
                                                  dtype=float))
    # by hand, (0, 1, 2): b and c share a sentence, a and c the noun "cat"
    f = dict(zip(ArgumentFeatures.SECOND_ORDER_FEATURES, out.second_order[0]))
    assert {k for k, v in f.items() if v} == {
        "same_sentence_bc", "order_abc", *(f"sentence_range_le_{k}" for k in range(1, 6)),
        "shared_nouns_ac", "jaccard_ac", "shared_ac_over_a", "shared_ac_over_c"}
    assert f["jaccard_ac"] == 0.5 and f["shared_ac_over_c"] == 0.5


def test_triples_order_and_count_on_random_paragraphs():
    rng = np.random.default_rng(0)
    for n in (1, 2, 4, 7):
        paras = np.sort(rng.integers(0, 2, size=n))
        text = " ".join(["Yes."] * n)
        spans = [(5 * i, 5 * i + 4) for i in range(n)]
        second = [a for (a, _), q in zip(spans, paras) if q == 1]
        cut = second[0] if second else len(text)
        doc = {"text": text, "propositions": spans,
               "paragraphs": [(0, cut), (cut, len(text))],
               "proposition_paragraph": paras.tolist()}
        out = ArgumentFeatures(groups=["lemmas"]).fit_transform([doc])[0]
        pairs = [(s, t) for s in range(n) for t in range(n)
                 if s != t and paras[s] == paras[t]]
        assert out.link_pairs.tolist() == [list(p) for p in pairs]
        triples = [(a, b, c) for a, b in pairs for b2, c in pairs if b2 == b and c != a]
        assert [tuple(t) for t in out.triples.tolist()] == triples
        assert out.second_order.shape == (len(triples), 35)
        assert out.links.shape == (len(pairs), 4)  # src / trg lemmas "yes", "."


# ---------------------------------------------------------------------------
# Text-only documents, options, validation
# ---------------------------------------------------------------------------

TRAIN_TEXT = [
    text_doc("I think taxes are too high. Therefore we should cut them.",
             [(0, 27), (28, 57)], "a"),
    text_doc("Rates rose also. But people still pay. In my opinion rates must fall!",
             [(0, 16), (17, 38), (39, 69)], "b"),
]


def test_text_only_documents():
    y = [(["value", "policy"], [(0, 1)]), (["fact"] * 3, [(0, 2), (1, 2)])]
    af = ArgumentFeatures()
    out = af.fit_transform(TRAIN_TEXT, y)
    assert not af.uses_corenlp_
    assert af.groups_ == ("indicators", "lemmas", "structure", "pmi")
    assert "pos" not in af.feature_groups_["props"]
    assert list(af.feature_names_props_[af.feature_groups_["props"]["raw"]]) == [
        "is_first_in_para", "is_last_in_para", "toks_to_sent_ratio", "relative_in_para",
        "first_person_any"]
    a, b = out
    # lower-cased words as lemmas; "I" is lower-cased too
    assert set(group(af, "props", "lemmas", a.props, 0)) == {
        "i", "think", "taxes", "are", "too", "high", "."}
    assert group(af, "props", "raw", a.props, 0)["first_person_any"] == 1
    # raw substring markers: "so" inside "also" fires (a forward marker),
    # "But" rebuttal, "In my opinion" thesis, "Therefore" forward
    ind = [set(group(af, "props", "indicators", b.props, i)) for i in range(3)]
    assert ind == [{"forward"}, {"rebuttal"}, {"thesis"}]
    assert set(group(af, "props", "indicators", a.props, 1)) == {"forward"}
    # one sentence per proposition: the whole sentence
    assert group(af, "props", "raw", b.props, 2)["toks_to_sent_ratio"] == 1
    # shared "nouns" of text documents are content words: "rates" in b0 and b2
    raw = {tuple(p): group(af, "links", "raw", b.links, i)
           for i, p in enumerate(b.link_pairs.tolist())}
    assert raw[(0, 2)].get("any_shared_nouns") == 1
    assert raw[(0, 1)].get("any_shared_nouns") is None
    # a line break ends a sentence too
    doc = text_doc("Taxes rise\nWe pay", [(0, 5), (11, 17)])
    out = ArgumentFeatures(groups=["structure"]).fit_transform([doc])[0]
    np.testing.assert_allclose(out.props[:, 2].toarray().ravel(), [0.5, 1.0])


def test_indicator_matching_options():
    doc = TRAIN_TEXT[1]
    sub = ArgumentFeatures(groups=["indicators"]).fit_transform([doc])[0]
    word = ArgumentFeatures(groups=["indicators"], indicator_match="word")
    wout = word.fit_transform([doc])[0]
    af = ArgumentFeatures(groups=["indicators"]).fit([doc])
    assert set(group(af, "props", "indicator_preceding_in_para", sub.props, 1)) == {
        "forward"}  # "so" in "also"
    assert set(group(word, "props", "indicator_preceding_in_para", wout.props, 1)) == set()
    custom = ArgumentFeatures(groups=["indicators"], lexicon={"doubt": ["still"]})
    cout = custom.fit_transform([doc])[0]
    assert custom.vocabularies_["indicators"] == ["doubt"]
    assert set(group(custom, "props", "indicators", cout.props, 1)) == {"doubt"}
    assert set(ARGUMENT_MARKERS) == {"forward", "backward", "thesis", "rebuttal"}
    assert [len(ARGUMENT_MARKERS[k]) for k in ("forward", "backward", "thesis",
                                               "rebuttal")] == [24, 33, 48, 10]


def test_lemma_case():
    sents = [{"tokens": [("I", "I", "PRP"), ("agree", "agree", "VBP"), (".", ".", ".")],
              "parse": "(ROOT (S (NP (PRP I)) (VP (VBP agree)) (. .)))",
              "arcs": [(2, 1), (0, 2), (2, 3)]}]
    doc = make_doc("I agree.", [(0, 8)], sents, [])
    as_is = ArgumentFeatures()
    out = as_is.fit_transform([doc])[0]
    assert "i" in as_is.vocabularies_["lemmas"]
    assert set(group(as_is, "props", "lemmas", out.props, 0)) == {"agree", "."}
    lower = ArgumentFeatures(lemma_case="lower")
    out = lower.fit_transform([doc])[0]
    assert set(group(lower, "props", "lemmas", out.props, 0)) == {"i", "agree", "."}


def test_root_verb_rule():
    # "We will go now ." : the proposition "We will go now" stops one token
    # before the sentence's end, the only case the original rule fires on.
    sents = [{"tokens": [("We", "we", "PRP"), ("will", "will", "MD"), ("go", "go", "VB"),
                         ("now", "now", "RB"), (".", ".", ".")],
              "parse": "(ROOT (S (NP (PRP We)) (VP (MD will) (VP (VB go) (ADVP (RB now))))"
                       " (. .)))",
              "arcs": [(3, 1), (3, 2), (0, 3), (3, 4), (3, 5)]}]
    for end, rule, expected in [(14, "original", ("future", 1.0)),
                                (16, "original", ("unk", 0.0)),
                                (16, "whole_sentence", ("future", 1.0)),
                                (14, "whole_sentence", ("unk", 0.0))]:
        doc = make_doc("We will go now .", [(0, end)], sents, [])
        af = ArgumentFeatures(root_verb=rule, groups=["structure"])
        raw = group(af, "props", "raw", af.fit_transform([doc])[0].props, 0)
        assert raw.get(f"root_vb_tense={expected[0]}") == 1
        assert raw.get("root_vb_modal", 0.0) == expected[1]


def test_groups_parameter():
    doc = make_doc()
    af = ArgumentFeatures(groups="text").fit([doc], [(["v"] * 3, LINKS)])
    assert not af.uses_corenlp_ and "discourse" not in af.groups_
    af = ArgumentFeatures(groups=["pos", "lemmas"]).fit([doc])
    assert af.groups_ == ("lemmas", "pos")
    assert list(af.feature_groups_["props"]) == ["lemmas", "pos"]
    with pytest.raises(ValueError, match="needs gold links"):
        ArgumentFeatures(groups=["pmi"]).fit([doc])
    with pytest.raises(ValueError, match="needs CoreNLP"):
        ArgumentFeatures(groups=["pos"]).fit(TRAIN_TEXT)
    with pytest.raises(ValueError, match="needs word_vectors"):
        ArgumentFeatures(groups=["embeds"]).fit([doc])
    with pytest.raises(ValueError, match="unknown feature kinds"):
        ArgumentFeatures(groups=["lemma"]).fit([doc])
    with pytest.raises(ValueError, match="groups must be"):
        ArgumentFeatures(groups="all").fit([doc])


def test_mixed_annotations_are_an_error():
    parsed = make_doc()
    plain = make_doc(sentences=None, doc_id="plain")
    with pytest.raises(ValueError, match=r"document 'plain' \(X\[1\]\) has no 'corenlp'"):
        ArgumentFeatures().fit([parsed, plain])
    # with groups="text" the annotations are ignored
    out = ArgumentFeatures(groups="text").fit_transform([parsed, plain])
    np.testing.assert_allclose(out[0].props.toarray(), out[1].props.toarray())
    # a parse-fitted transformer needs parses at transform time
    af = ArgumentFeatures().fit([parsed])
    with pytest.raises(ValueError, match="'plain' .* no CoreNLP"):
        af.transform([plain])
    no_disc = make_doc(discourse=None, doc_id="nd")
    with pytest.raises(ValueError, match="'nd' .* no discourse"):
        af.transform([no_disc])
    with pytest.raises(ValueError, match=r"'nd' \(X\[1\]\) has no 'discourse'"):
        ArgumentFeatures().fit([parsed, no_disc])
    # relations are not needed when the discourse group is not asked for
    af = ArgumentFeatures(groups=["lemmas", "pos"]).fit([parsed, no_disc])
    assert af.groups_ == ("lemmas", "pos")


@pytest.mark.parametrize("change, match", [
    (lambda d: d.pop("text"), "document 'bad' \\(X\\[0\\]\\) has no 'text'"),
    (lambda d: d.pop("propositions"), "has no 'propositions'"),
    (lambda d: d.update(propositions=[(0, 11), (12, 99)]), "proposition 1 span .* outside"),
    (lambda d: d.update(propositions=[(0, 14), (12, 24)]), "proposition 0 .* and 1 .* overlap"),
    (lambda d: d.update(propositions=[(12, 24), (0, 11)]), "not sorted"),
    (lambda d: d.update(propositions=[(3, 3)]), "outside the text .* or empty"),
    (lambda d: d.update(propositions=[(0, "a")]), "not a pair of ints"),
    (lambda d: d.update(proposition_paragraph=[0, 0]), "2 entries for 3 propositions"),
    (lambda d: d.update(proposition_paragraph=[0, 0, 1]), "paragraph 1, not one"),
    (lambda d: d.update(paragraphs=[(0, 11), (12, 44)], proposition_paragraph=[0, 0, 1]),
     r"proposition 1 \(12, 24\) does not start in its paragraph 0 \(0, 11\)"),
    (lambda d: d.update(paragraphs=[(12, 44)], proposition_paragraph=None),
     r"proposition 0 \(0, 11\) starts in no paragraph"),
    (lambda d: d.update(discourse=[("Explicit",)]), "discourse relation 0"),
    (lambda d: d["corenlp"]["sentences"][1].pop("parse"), "sentence 1 has no 'parse'"),
    (lambda d: d["corenlp"]["sentences"][0].update(parse="(S (NP"), "sentence 0: unbalanced"),
    (lambda d: d["corenlp"]["sentences"][0]["tokens"][0].pop("lemma"), "'corenlp' must hold"),
])
def test_bad_documents_are_named(change, match):
    doc = make_doc(doc_id="bad")
    change(doc)
    with pytest.raises((ValueError, TypeError), match=match):
        ArgumentFeatures().fit([doc])


def test_bad_parameters_and_targets():
    doc = make_doc()
    for params, match in [({"lemma_case": "upper"}, "lemma_case"),
                          ({"n_link_lemmas": -1}, "n_link_lemmas must be an integer >= 0"),
                          ({"n_dependency_tuples": 2.0}, "n_dependency_tuples must be an integer"),
                          ({"lexicon": {"x": "so"}}, "lexicon"),
                          ({"word_vectors": (["a"], np.ones((2, 3)))}, "one row per word")]:
        with pytest.raises(ValueError, match=match):
            ArgumentFeatures(**params).fit([doc])
    with pytest.raises(ValueError, match="1 documents but y has 2"):
        ArgumentFeatures().fit([doc], [([], []), ([], [])])
    with pytest.raises(ValueError, match=r"y\[0\] .*link \(0, 5\)"):
        ArgumentFeatures().fit([doc], [([], [(0, 5)])])
    with pytest.raises(TypeError, match="list of documents"):
        ArgumentFeatures().fit(doc)
    with pytest.raises(Exception, match="not fitted"):
        ArgumentFeatures().transform([doc])


def test_pickle_and_clone(fitted):
    af, out = fitted
    again = pickle.loads(pickle.dumps(af))
    out2 = again.transform([make_doc()])[0]
    for a, b in zip(out, out2):
        a = a.toarray() if hasattr(a, "toarray") else a
        b = b.toarray() if hasattr(b, "toarray") else b
        np.testing.assert_array_equal(a, b)
    c = clone(af)
    assert c.get_params() == af.get_params()
    assert not hasattr(c, "feature_groups_")


def test_fit_transform_equals_fit_then_transform(fitted):
    _, out = fitted
    out2 = ArgumentFeatures().fit([make_doc()], [(["v"] * 3, LINKS)]).transform([make_doc()])
    for a, b in zip(out, out2[0]):
        a = a.toarray() if hasattr(a, "toarray") else a
        b = b.toarray() if hasattr(b, "toarray") else b
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------
# CDCP
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cdcp_train(shared_data):
    from sksparse_struct.datasets import read_cdcp
    folder = shared_data / "cdcp" / "train"
    if not folder.is_dir():
        pytest.skip(f"needs the CDCP training split at {folder}")
    return read_cdcp(folder)


@pytest.mark.shared_data
def test_cdcp_dimensions(cdcp_train):
    X, y = cdcp_train
    af = ArgumentFeatures()
    start = time.perf_counter()
    out = af.fit_transform(X, y)
    elapsed = time.perf_counter() - start
    sizes = {k: v.stop - v.start for k, v in af.feature_groups_["props"].items()}
    assert sizes == {"dependency_tuples": 2000, "discourse": 8,
                     "indicator_following_in_para": 4, "indicator_preceding_in_para": 4,
                     "indicators": 4, "lemmas": 4249, "pos": 45, "raw": 7, "scaled": 9}
    assert af.n_prop_features_ == 6330
    assert af.n_link_features_ == 2151
    assert sum(o.props.shape[0] for o in out) == 3806
    assert sum(o.links.shape[0] for o in out) == 33900
    assert sum(o.triples.shape[0] for o in out) == 414294
    # The original root-verb test never fires on CDCP: tense is always "unk".
    assert af.vocabularies_["root_vb_tense"] == ["unk"]
    assert elapsed < 120  # seconds, not minutes (generous for a loaded CI machine)
    # Second-order features against the set-based reference on a few documents.
    for d, o in list(zip(X, out))[:40]:
        if len(o.triples) == 0:
            continue
        ref = _cdcp_sets(d, o)
        for (a, b, c), row_ in zip(o.triples.tolist()[:300], o.second_order[:300]):
            np.testing.assert_allclose(row_, np.array(second_order_reference(
                a, b, c, *ref), dtype=float))


def _cdcp_sets(doc, out):
    """Sentence and noun sets of each proposition, straight from the CoreNLP tokens."""
    tokens = [(k, t) for k, s in enumerate(doc["corenlp"]["sentences"]) for t in s["tokens"]]
    begins = [t["characterOffsetBegin"] for _, t in tokens]
    S, N = [], []
    for cs, ce in doc["propositions"]:
        t0 = next((i for i, b in enumerate(begins) if b >= cs), len(begins))
        t1 = next((i for i, b in enumerate(begins) if b >= ce), len(begins))
        S.append({tokens[i][0] for i in range(t0, t1)})
        N.append({tokens[i][1]["lemma"] for i in range(t0, t1)
                  if tokens[i][1]["pos"].startswith("N")})
    return S, N


@pytest.mark.shared_data
def test_cdcp_vocabularies_fit_on_train_only(cdcp_train):
    X, y = cdcp_train
    af = ArgumentFeatures(groups=["lemmas"]).fit(X[:50], y[:50])
    vocab = set(af.vocabularies_["lemmas"])
    seen = {t["lemma"].lower() for d in X[:50] for s in d["corenlp"]["sentences"]
            for t in s["tokens"]}
    assert vocab == seen
    out = af.transform(X[50:80])
    names = af.feature_names_props_
    for d, o in zip(X[50:80], out):
        for k in range(o.props.shape[0]):
            for j in o.props.getrow(k).indices:
                assert names[j].split("=", 1)[1] in seen
    assert re.match(r"lemmas=", names[0])


# ---------------------------------------------------------------------------
# The persuasive-essay setting
# ---------------------------------------------------------------------------

ESSAY = "Title\n\nCars pollute. We should ban cars.\nBuses help.\nIn conclusion we should ban cars."
ESSAY_SENTENCES = [
    {"tokens": [("Title", "title", "NN")], "parse": "(ROOT (NP (NN Title)))",
     "arcs": [(0, 1)]},
    {"tokens": [("Cars", "car", "NNS"), ("pollute", "pollute", "VBP"), (".", ".", ".")],
     "parse": "(ROOT (S (NP (NNS Cars)) (VP (VBP pollute)) (. .)))",
     "arcs": [(2, 1), (0, 2), (2, 3)]},
    {"tokens": [("We", "we", "PRP"), ("should", "should", "MD"), ("ban", "ban", "VB"),
                ("cars", "car", "NNS"), (".", ".", ".")],
     "parse": "(ROOT (S (NP (PRP We)) (VP (MD should) (VP (VB ban) (NP (NNS cars)))) (. .)))",
     "arcs": [(3, 1), (3, 2), (0, 3), (3, 4), (3, 5)]},
    {"tokens": [("Buses", "bus", "NNS"), ("help", "help", "VBP"), (".", ".", ".")],
     "parse": "(ROOT (S (NP (NNS Buses)) (VP (VBP help)) (. .)))",
     "arcs": [(2, 1), (0, 2), (2, 3)]},
    {"tokens": [("In", "in", "IN"), ("conclusion", "conclusion", "NN"), ("we", "we", "PRP"),
                ("should", "should", "MD"), ("ban", "ban", "VB"), ("cars", "car", "NNS"),
                (".", ".", ".")],
     "parse": "(ROOT (S (PP (IN In) (NP (NN conclusion))) (NP (PRP we)) (VP (MD should)"
              " (VP (VB ban) (NP (NNS cars)))) (. .)))",
     "arcs": [(2, 1), (5, 2), (5, 3), (5, 4), (0, 5), (5, 6), (5, 7)]},
]


def essay_doc():
    starts = [ESSAY.index("Cars"), ESSAY.index("We"), ESSAY.index("Buses"),
              ESSAY.index("we should")]
    lengths = [len("Cars pollute"), len("We should ban cars"), len("Buses help"),
               len("we should ban cars")]
    lines, pos = [], 0
    for line in ESSAY.split("\n"):
        lines.append((pos, pos + len(line)))
        pos += len(line) + 1
    return {"id": "essay", "text": ESSAY,
            "propositions": [(a, a + n) for a, n in zip(starts, lengths)],
            "paragraphs": lines, "proposition_paragraph": [2, 2, 3, 4],
            "corenlp": corenlp(ESSAY, ESSAY_SENTENCES), "discourse": []}


ESSAY_Y = [(["Premise", "MajorClaim", "Premise", "MajorClaim"], [(0, 1), (2, 3)])]


def test_essay_features():
    af = ArgumentFeatures(essays=True)
    out = af.fit_transform([essay_doc()], ESSAY_Y)[0]
    assert af.groups_[-2:] == ("essay", "proba")
    names = list(af.feature_names_props_[af.feature_groups_["props"]["essay"]])
    assert names == ["is_in_intro", "is_in_conclusion", "has_shared_np_intro",
                     "has_shared_vp_intro", "has_shared_np_conclusion",
                     "has_shared_vp_conclusion", "n_shared_np_intro", "n_shared_vp_intro",
                     "n_shared_np_conclusion", "n_shared_vp_conclusion"]
    got = out.props[:, af.feature_groups_["props"]["essay"]].toarray()
    # NP / VP leaf sequences shared with the intro's sentences (2 and 3) and
    # the conclusion's (5); "Cars" and "cars" differ, a proposition trivially
    # shares with its own sentence.
    counts = np.array([[1, 1, 0, 0], [2, 2, 1, 2], [0, 0, 0, 0], [1, 2, 3, 2]], float)
    flags = np.array([[1, 0], [1, 0], [0, 0], [0, 1]], float)
    lo, hi = counts.min(0), counts.max(0)
    np.testing.assert_allclose(got, np.hstack([flags, counts > 0, (counts - lo) / (hi - lo)]))
    # The label distribution of propositions with the same preceding words.
    assert af.proba_classes_ == ["MajorClaim", "Premise"]
    proba = out.props[:, af.feature_groups_["props"]["proba"]].toarray()
    empty = np.array([1.001, 2.001]) / 3.002
    np.testing.assert_allclose(proba, [empty, empty, empty,
                                       np.array([1.001, 0.001]) / 1.002])
    # "we should ban cars" starts at "In conclusion": its lemmas and markers too
    assert set(group(af, "props", "lemmas", out.props, 3)) == {
        "in", "conclusion", "we", "should", "ban", "car"}
    assert set(group(af, "props", "indicators", out.props, 3)) == {"thesis"}
    # ... but its token count stays strict
    sl = af.feature_groups_["props"]["scaled"]
    assert list(af.prop_scaler_[0][:1]) == [2] and list(af.prop_scaler_[1][:1]) == [4]
    assert out.props[3, sl.start] == pytest.approx(1.0)
    # an unseen preceding sequence gets the uniform distribution
    doc = essay_doc()
    doc["text"] = doc["text"].replace("In conclusion", "To be sure   ")
    doc["corenlp"]["sentences"][4]["tokens"][0].update(word="To", originalText="To")
    doc["corenlp"]["sentences"][4]["tokens"][1].update(word="be", originalText="be")
    again = af.transform([doc])[0]
    np.testing.assert_allclose(
        again.props[3, af.feature_groups_["props"]["proba"]].toarray(), [[0.5, 0.5]])


def test_essay_defaults_and_text_mode():
    # without essays=True, propositions keep their own spans and no essay kinds
    af = ArgumentFeatures().fit([essay_doc()], ESSAY_Y)
    assert "essay" not in af.groups_ and "proba" not in af.groups_
    out = af.transform([essay_doc()])[0]
    assert set(group(af, "props", "lemmas", out.props, 3)) == {"we", "should", "ban", "car"}
    # text alone: the intro / conclusion flags only
    doc = essay_doc()
    doc["corenlp"] = None
    af = ArgumentFeatures(essays=True)
    out = af.fit_transform([doc], ESSAY_Y)[0]
    assert list(af.feature_groups_["props"]) [-2:] == ["essay", "proba"]
    got = out.props[:, af.feature_groups_["props"]["essay"]].toarray()
    np.testing.assert_array_equal(got, [[1, 0], [1, 0], [0, 0], [0, 1]])
    # the essay kind alone, asked for by name, without labels
    af = ArgumentFeatures(groups=["essay"]).fit([doc])
    assert af.groups_ == ("essay",)
    with pytest.raises(ValueError, match="needs proposition labels"):
        ArgumentFeatures(groups=["proba"]).fit([doc])
    with pytest.raises(ValueError, match="3 labels for 4 propositions"):
        ArgumentFeatures(essays=True).fit([doc], [(["Premise"] * 3, [])])


# ---------------------------------------------------------------------------
# The bundled CDCP sample (always available)
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sample():
    from sksparse_struct.datasets import load_cdcp_sample
    X_train, y_train, X_test, _ = load_cdcp_sample()
    af = ArgumentFeatures()
    train = af.fit_transform(X_train, y_train)
    return af, X_train, train, X_test, af.transform(X_test)


def _productions_inside(node, counter, inside, prods):
    """Add the productions of the nodes whose leaves are all in ``inside``; return leaf ids."""
    ids = []
    for child in node.children:
        ids += ([next(counter)] if isinstance(child, str)
                else _productions_inside(child, counter, inside, prods))
    if all(i in inside for i in ids):
        prods.add(node.production())
    return ids


def _reference_attributes(doc):
    """Productions, dependency tuples, sentences and nouns of each proposition,
    by brute force over the CoreNLP sentences (independent of the transformer)."""
    from sksparse_struct.feature_extraction._ptb import parse_ptb
    sents = doc["corenlp"]["sentences"]
    tokens = [(k, i, t) for k, s in enumerate(sents) for i, t in enumerate(s["tokens"])]
    begins = [t["characterOffsetBegin"] for _, _, t in tokens]
    out = []
    for cs, ce in doc["propositions"]:
        inside = [j for j, b in enumerate(begins) if cs <= b < ce]
        # positions (sentence, index) of the proposition's tokens
        mine = {(tokens[j][0], tokens[j][1]) for j in inside}
        prods, deps = set(), set()
        for k in sorted({tokens[j][0] for j in inside}):
            _productions_inside(parse_ptb(sents[k]["parse"]), iter(range(10**6)),
                                {i for kk, i in mine if kk == k}, prods)
            lem = [t["lemma"] for t in sents[k]["tokens"]]
            for arc in sents[k]["collapsed-ccprocessed-dependencies"]:
                if (k, arc["dependent"] - 1) in mine:
                    head = lem[arc["governor"] - 1] if arc["governor"] else "ROOT"
                    deps.add(f"{lem[arc['dependent'] - 1]} -> {head}")
        out.append((prods, deps, {tokens[j][0] for j in inside},
                    {tokens[j][2]["lemma"] for j in inside
                     if tokens[j][2]["pos"].startswith("N")}))
    return out


def test_cdcp_sample_against_brute_force(sample):
    af, X_train, train, X_test, test = sample
    assert af.groups_ == ("dependency_tuples", "discourse", "indicators", "lemmas", "pos",
                          "productions", "structure", "pmi")
    prod_voc = set(af.vocabularies_["link_productions"])
    dep_voc = set(af.vocabularies_["dependency_tuples"])
    checked = 0
    for X, outs in ((X_train, train), (X_test, test)):
        for doc, out in zip(X, outs):
            n = len(doc["propositions"])
            assert out.props.shape == (n, af.n_prop_features_)
            assert out.links.shape == (n * (n - 1), af.n_link_features_)
            assert out.triples.shape == (n * (n - 1) * (n - 2), 3)
            ref = _reference_attributes(doc)
            for k, (prods, deps, sents, nouns) in enumerate(ref):
                got = set(group(af, "props", "dependency_tuples", out.props, k))
                assert got == deps & dep_voc
                # a link leaving k carries k's productions on its source side
                rows = np.flatnonzero(out.link_pairs[:, 0] == k)
                if len(rows):
                    got = set(group(af, "links", "src_productions", out.links, rows[0]))
                    assert got == prods & prod_voc
                checked += 1
            S = [r[2] for r in ref]
            N = [r[3] for r in ref]
            for (a, b, c), row_ in zip(out.triples.tolist(), out.second_order):
                np.testing.assert_allclose(row_, np.array(
                    second_order_reference(a, b, c, S, N), dtype=float))
    assert checked == 144  # 101 train + 43 test propositions


def test_cdcp_sample_text_mode(sample):
    _, X_train, _, X_test, _ = sample
    af = ArgumentFeatures(groups="text")
    out = af.fit(X_train).transform(X_test)
    assert not af.uses_corenlp_
    assert af.groups_ == ("indicators", "lemmas", "structure")
    assert all(o.props.shape[1] == af.n_prop_features_ for o in out)


def test_a_model_with_corenlp_names_the_document_and_the_text_only_way(sample, monkeypatch):
    from sksparse_struct.feature_extraction import _argument_features
    af, _, _, X_test, _ = sample
    plain = {"id": "plain", "text": X_test[0]["text"],
             "propositions": X_test[0]["propositions"]}

    def no_work(*args):
        raise AssertionError("a document was analysed before the check")

    # The first offending document is named, before any document is analysed
    # (the one after it is not even a valid document).
    monkeypatch.setattr(_argument_features, "_analyse", no_work)
    with pytest.raises(ValueError) as info:
        af.transform([X_test[1], plain, {"propositions": [(0, 1)]}])
    monkeypatch.undo()
    message = str(info.value)
    assert message.startswith("document 'plain' (X[1]) has no CoreNLP annotations "
                              "('corenlp') and no discourse relations ('discourse')")
    assert "fitted on documents with CoreNLP annotations" in message
    assert "only 'text' and 'propositions'" in message
    assert 'ArgumentFeatures(groups="text")' in message
    # With CoreNLP but no discourse relations: the groups without them.
    no_disc = dict(X_test[2], discourse=None)
    with pytest.raises(ValueError, match=re.escape(
            f"document {X_test[2]['id']!r} (X[0]) has no discourse relations ('discourse'),")
            ) as info:
        af.transform([no_disc])
    kinds = [k for k in af.groups_ if k != "discourse"]
    assert f"ArgumentFeatures(groups={kinds!r})" in str(info.value)
    # The suggested groups do fit and transform such documents.
    from sksparse_struct.datasets import load_cdcp_sample
    X_train, y_train, _, _ = load_cdcp_sample()
    assert ArgumentFeatures(groups=kinds).fit(X_train, y_train).transform([no_disc])


def test_a_text_only_model_takes_text_only_documents():
    from sksparse_struct import StructuredSVMArgumentMiner
    from sksparse_struct.datasets import load_cdcp_sample
    X_train, y_train, X_test, _ = load_cdcp_sample()
    af = ArgumentFeatures(groups="text").fit(X_train, y_train)
    plain = [{"text": d["text"], "propositions": d["propositions"]} for d in X_test[:3]]
    out = af.transform(plain)
    assert [o.props.shape for o in out] == [(len(d["propositions"]), af.n_prop_features_)
                                            for d in plain]
    # The annotations of the training documents were ignored: the same
    # features with them as without them.
    annotated = af.transform([dict(d, paragraphs=None, proposition_paragraph=None)
                              for d in X_test[:3]])
    for a, b in zip(out, annotated):
        np.testing.assert_array_equal(a.props.toarray(), b.props.toarray())
        np.testing.assert_array_equal(a.links.toarray(), b.links.toarray())
    miner = StructuredSVMArgumentMiner(max_iter=2, random_state=0)
    miner.fit(af.transform(X_train), y_train)
    predicted = miner.predict(out)
    assert [len(labels) for labels, _ in predicted] == [len(d["propositions"]) for d in plain]


# ---------------------------------------------------------------------------
# Properties on random text-only documents
# ---------------------------------------------------------------------------


_PIECES = ["I", "so", "also", "But", "cats", "Cats", "sleep", "we", "Therefore",
           "because", "in my opinion", ".", ",", "!", " ", "  ", "\n"]


@st.composite
def text_documents(draw):
    text = "".join(draw(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=30)))
    cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=12))))
    spans = [(a, b) for a, b in zip(cuts[::2], cuts[1::2]) if a < b]
    # paragraphs: split at the start of some propositions
    splits = sorted({a for (a, _), take in zip(spans, draw(st.lists(
        st.booleans(), min_size=len(spans), max_size=len(spans)))) if take and a > 0})
    bounds = [0, *splits, len(text)]
    paragraphs = list(itertools.pairwise(bounds))
    return {"text": text, "propositions": spans, "paragraphs": paragraphs}


@given(st.lists(text_documents(), min_size=1, max_size=4), st.booleans())
def test_random_text_documents(docs, essays):
    af = ArgumentFeatures(essays=essays)
    if not any(d["propositions"] for d in docs):
        with pytest.raises(ValueError, match="no proposition"):
            af.fit(docs)
        return
    y = [(["x"] * len(d["propositions"]),
          [(0, 1)] if len(d["propositions"]) > 1 and d.get("paragraphs") else [])
         for d in docs]
    # a link must join propositions of one paragraph to be a candidate, but
    # PMI counts every gold link: keep it simple and use them as given
    outs = af.fit_transform(docs, y)
    again = af.transform(docs)
    for doc, out, out2 in zip(docs, outs, again):
        n = len(doc["propositions"])
        para = out.proposition_paragraph
        pairs = [(s, t) for s in range(n) for t in range(n) if s != t and para[s] == para[t]]
        assert out.link_pairs.tolist() == [list(p) for p in pairs]
        assert out.props.shape == (n, af.n_prop_features_)
        assert out.links.shape == (len(pairs), af.n_link_features_)
        for m in (out.props, out.links):
            assert np.all(np.isfinite(m.data))
        # training values of scaled columns lie in [0, 1]; everything else too
        assert out.props.nnz == 0 or (out.props.data.min() >= 0
                                      and out.props.data.max() <= 1 + 1e-12)
        # (with essays=True the PMI ratios count the words before the
        # proposition in its sentence over its own tokens: may exceed 1)
        assert out.links.nnz == 0 or (out.links.data.min() >= 0
                                      and (essays or out.links.data.max() <= 1 + 1e-12))
        if len(pairs):
            s, t = out.link_pairs.T
            np.testing.assert_array_equal(out.compat[:, 1], np.abs(s - t) == 1)
        assert np.all((out.second_order >= 0) & (out.second_order <= 1))
        assert out.second_order.shape == (len(out.triples), 35)
        for a, b in zip(out, out2):
            a = a.toarray() if hasattr(a, "toarray") else a
            b = b.toarray() if hasattr(b, "toarray") else b
            np.testing.assert_array_equal(a, b)
