"""Tests for read_cdcp: the CDCP format, normalisation, closure and errors."""

import collections
import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sksparse_struct.datasets import read_cdcp
from sksparse_struct.datasets._cdcp import (
    _merge_nested,
    _parse_pipe,
    _transitive_closure,
)

PIPE_LINE = ("Explicit|||79..90||For example||1|for example|||Expansion|||||||||||"
             "0..77|0|State and local court rules||||||||92..241;250..260|1|when a person"
             "|||||||||||||")
TOKEN = {"word": "Fees", "originalText": "Fees", "lemma": "fee", "pos": "NNS",
         "characterOffsetBegin": 0, "characterOffsetEnd": 4, "index": 1,
         "ner": "O", "before": "", "after": " "}
ARC = {"dep": "ROOT", "governor": 0, "governorGloss": "ROOT", "dependent": 1,
       "dependentGloss": "Fees"}
SENTENCE = {"index": 0, "parse": "(ROOT (NP (NNS Fees)))", "basic-dependencies": [ARC],
            "collapsed-dependencies": [ARC], "collapsed-ccprocessed-dependencies": [ARC],
            "sentimentValue": "1", "sentiment": "Negative", "tokens": [TOKEN]}


def write_doc(folder, doc_id, text, offsets, labels, reasons=(), evidences=(),
              corenlp=None, pipe=None, ann=None):
    (folder / f"{doc_id}.txt").write_text(text, encoding="utf-8", newline="")
    if ann is None:
        ann = json.dumps({"prop_offsets": offsets, "prop_labels": labels,
                          "reasons": list(reasons), "evidences": list(evidences),
                          "url": {}})
    if ann is not False:
        (folder / f"{doc_id}.ann.json").write_text(ann, encoding="utf-8")
    if corenlp is not None:
        (folder / f"{doc_id}.txt.json").write_text(json.dumps(corenlp), encoding="utf-8")
    if pipe is not None:
        (folder / f"{doc_id}.txt.pipe").write_text(pipe, encoding="utf-8")


def simple_doc(n):
    """A text of ``n`` propositions ``"p0. p1. ..."`` and their offsets."""
    parts = [f"p{i}." for i in range(n)]
    text = " ".join(parts)
    offsets, start = [], 0
    for part in parts:
        offsets.append([start, start + len(part)])
        start += len(part) + 1
    return text, offsets


def test_reads_text_spans_labels_links_and_annotations(tmp_path):
    text = "Fees are too high.\r\nThey hurt the poor. Cap them." + " " * 250
    offsets = [[0, 18], [20, 39], [40, 49]]
    write_doc(tmp_path, "00002", text, offsets, ["value", "fact", "policy"],
              reasons=[[[1, 1], 0]], evidences=[[[0, 0], 2]],
              corenlp={"sentences": [SENTENCE]}, pipe=PIPE_LINE + "\n")
    write_doc(tmp_path, "00001", "Hi.", [[0, 3]], ["value"], pipe="")
    X, y = read_cdcp(tmp_path)
    assert [doc["id"] for doc in X] == ["00001", "00002"]
    doc = X[1]
    assert doc["text"] == text  # "\r\n" kept: offsets count it
    assert [text[a:b] for a, b in doc["propositions"]] == [
        "Fees are too high.", "They hurt the poor.", "Cap them."]
    assert doc["paragraphs"] == [(0, len(text))]
    assert doc["proposition_paragraph"] == [0, 0, 0]
    assert y[1] == (["value", "fact", "policy"], [(0, 2), (1, 0), (1, 2)])
    # The CoreNLP document keeps only what features use.
    sentence = doc["corenlp"]["sentences"][0]
    assert set(sentence) == {"index", "parse", "basic-dependencies",
                             "collapsed-ccprocessed-dependencies", "tokens"}
    assert set(sentence["tokens"][0]) == {
        "word", "originalText", "lemma", "pos", "characterOffsetBegin",
        "characterOffsetEnd", "index"}
    assert sentence["basic-dependencies"] == [{"dep": "ROOT", "governor": 0, "dependent": 1}]
    assert doc["discourse"] == [("Explicit", "Expansion", [(0, 77)],
                                 [(92, 241), (250, 260)])]
    assert X[0]["corenlp"] is None and X[0]["discourse"] == []
    assert y[0] == (["value"], [])
    X, _ = read_cdcp(str(tmp_path), annotations=False)
    assert X[1]["corenlp"] is None and X[1]["discourse"] is None


def test_merging_nested_sources(tmp_path):
    text, offsets = simple_doc(7)
    labels = ["fact", "value", "fact", "testimony", "policy", "value", "fact"]
    # 1..2 -> 0 merges (nothing else touches 1..2); 3..5 -> 6 is dropped
    # because 4 -> 0 starts inside it; 4 -> 0 itself stays.
    write_doc(tmp_path, "d", text, offsets, labels,
              reasons=[[[1, 2], 0], [[3, 5], 6]], evidences=[[[4, 4], 0]])
    X, y = read_cdcp(tmp_path, transitive_closure=False)
    props = X[0]["propositions"]
    assert [text[a:b] for a, b in props] == ["p0.", "p1. p2.", "p3.", "p4.", "p5.", "p6."]
    # value and fact disagree: value has the higher priority.
    assert y[0] == (["fact", "value", "testimony", "policy", "value", "fact"],
                    [(1, 0), (3, 0)])
    # Without merging, every proposition of a source supports the target.
    X, y = read_cdcp(tmp_path, merge_nested=False, transitive_closure=False)
    assert len(X[0]["propositions"]) == 7
    assert y[0] == (labels, [(1, 0), (2, 0), (3, 6), (4, 0), (4, 6), (5, 6)])


@pytest.mark.parametrize("links, expected_props, expected_links, n_dropped", [
    # Same source span, two targets: both survive.
    ([((0, 1), 2), ((0, 1), 3)], [(0, 1), (2, 2), (3, 3)], [(0, 1), (0, 2)], 0),
    # A link pointing into the span rejects it.
    ([((0, 1), 2), ((3, 3), 1)], [(0, 0), (1, 1), (2, 2), (3, 3)], [(3, 1)], 1),
    # Nested spans: the outer one is dropped, the inner merges.
    ([((0, 1), 3), ((0, 2), 3)], [(0, 1), (2, 2), (3, 3)], [(0, 2)], 1),
    # Each span is the other's target: both dropped.
    ([((0, 1), 2), ((2, 3), 0)], [(0, 0), (1, 1), (2, 2), (3, 3)], [], 2),
])
def test_merge_rules(links, expected_props, expected_links, n_dropped):
    spans = [(2 * i, 2 * i + 1) for i in range(4)]
    labels = ["fact"] * 4
    new_spans, _, new_links, dropped = _merge_nested(spans, labels, links, "d")
    assert new_spans == [(2 * a, 2 * b + 1) for a, b in expected_props]
    assert new_links == expected_links
    assert dropped == n_dropped


def test_adjacent_merged_sources():
    spans = [(2 * i, 2 * i + 1) for i in range(5)]
    links = [((0, 1), 4), ((2, 3), 4)]
    new_spans, _, new_links, dropped = _merge_nested(spans, ["fact"] * 5, links, "d")
    assert new_spans == [(0, 3), (4, 7), (8, 9)]
    assert new_links == [(0, 2), (1, 2)]
    assert dropped == 0


@pytest.mark.parametrize("parts, label", [
    (["fact", "fact"], "fact"),
    (["fact", "reference"], "reference"),
    (["reference", "testimony", "fact"], "testimony"),
    (["fact", "value", "policy"], "policy"),
    (["claim", "premise"], "claim"),  # no priority: the first part's label
])
def test_merged_label(parts, label):
    spans = [(2 * i, 2 * i + 1) for i in range(len(parts) + 1)]
    links = [((0, len(parts) - 1), len(parts))]
    _, labels, _, _ = _merge_nested(spans, parts + ["value"], links, "d")
    assert labels == [label, "value"]


def test_partially_overlapping_sources_are_an_error():
    spans = [(2 * i, 2 * i + 1) for i in range(6)]
    with pytest.raises(ValueError, match=r"document 'x'.*1\.\.3 and 2\.\.4 overlap"):
        _merge_nested(spans, ["fact"] * 6, [((1, 3), 5), ((2, 4), 0)], "x")


@st.composite
def digraphs(draw):
    n = draw(st.integers(1, 7))
    pairs = [(a, b) for a in range(n) for b in range(n) if a != b]
    return n, draw(st.lists(st.sampled_from(pairs), max_size=12)) if pairs else []


@given(digraphs())
def test_transitive_closure_against_matrix_powers(graph):
    n, links = graph
    reach = [[False] * n for _ in range(n)]
    for a, b in links:
        reach[a][b] = True
    for k, a, b in itertools.product(range(n), repeat=3):  # Floyd-Warshall
        reach[a][b] = reach[a][b] or (reach[a][k] and reach[k][b])
    expected = [(a, b) for a in range(n) for b in range(n) if a != b and reach[a][b]]
    assert _transitive_closure(links, n) == expected


def test_closure_on_a_chain(tmp_path):
    text, offsets = simple_doc(4)
    write_doc(tmp_path, "d", text, offsets, ["value"] * 4,
              reasons=[[[0, 0], 1], [[1, 1], 2], [[2, 2], 3]])
    _, y = read_cdcp(tmp_path)
    assert y[0][1] == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]


def _error(tmp_path, match, **kwargs):
    with pytest.raises(ValueError, match=match):
        read_cdcp(tmp_path, **kwargs)


@pytest.mark.parametrize("offsets, labels, reasons, match", [
    ([[0, 3], [2, 7]], ["a", "b"], [], r"proposition 1 \[2, 7\) overlaps proposition 0"),
    ([[4, 7], [0, 3]], ["a", "b"], [], "not sorted"),
    ([[0, 3], [4, 99]], ["a", "b"], [], r"\[4, 99\) is empty or out of range"),
    ([[0, 3], [3, 3]], ["a", "b"], [], "empty or out of range"),
    ([[0, 3], [4, 7]], ["a"], [], "1 prop_labels for 2 propositions"),
    ([[0, 3], [4, 7]], ["a", "b"], [[[0, 0], 2]], "does not exist"),
    ([[0, 3], [4, 7]], ["a", "b"], [[[1, 0], 0]], "does not exist"),
    ([[0, 3], [4, 7]], ["a", "b"], [[[1, 1], 1]], "to itself"),
    ([[0, 3], [4, 7]], ["a", "b"], [[0, 1]], r"reasons\[0\].*not \[\[source_start"),
    ([[0, 3], [4.0, 7]], ["a", "b"], [], r"prop_offsets\[1\].*not a pair of integers"),
])
def test_malformed_annotations(tmp_path, offsets, labels, reasons, match):
    write_doc(tmp_path, "00001", "p0. p1.", [[0, 3]], ["value"])
    write_doc(tmp_path, "00007", "p0. p1.", offsets, labels, reasons=reasons)
    _error(tmp_path, "document '00007'.*" + match)


def test_malformed_files(tmp_path):
    write_doc(tmp_path, "a", "p0.", [[0, 3]], ["value"], ann=False)
    _error(tmp_path, r"document 'a': annotation file .*a\.ann\.json is missing")
    write_doc(tmp_path, "a", "p0.", [[0, 3]], ["value"], ann='{"prop_offsets": [[0, 3]],\n x')
    _error(tmp_path, r"document 'a'.*not valid JSON \(line 2")
    write_doc(tmp_path, "a", "p0.", [[0, 3]], ["value"], ann='{"prop_labels": []}')
    _error(tmp_path, r"document 'a'.*missing key\(s\) \['prop_offsets'\]")
    write_doc(tmp_path, "a", "p0.", [[0, 3]], ["value"],
              corenlp={"sentences": [{**SENTENCE, "tokens": [{"word": "p0"}]}]})
    _error(tmp_path, "document 'a'.*sentence 0, token 0 lacks")
    _error(tmp_path / "nowhere", "is not a folder")
    (tmp_path / "a.txt.json").write_text("[]")
    _error(tmp_path, "document 'a'.*'sentences' list")
    (tmp_path / "a.txt.json").unlink()
    (tmp_path / "a.txt").write_bytes(b"p0\xff")
    _error(tmp_path, r"document 'a': .*a\.txt is not UTF-8")
    (tmp_path / "b.ann.json").write_text("{}")
    _error(tmp_path, r"document 'b': b\.ann\.json has no text file")


@pytest.mark.parametrize("pipe, match", [
    ("Explicit|a|b\n", r"line 1: 3 '\|'-separated fields, expected 48"),
    ("\n" + PIPE_LINE.replace("0..77", "0-77") + "\n", r"line 2: bad arg1 span field '0-77'"),
    (PIPE_LINE + "\n" + PIPE_LINE.replace("92..241", "92..x"), "line 2: bad arg2"),
    (PIPE_LINE.replace("250..260", "250..9999"), "line 1: arg2 .* past the end of the text"),
])
def test_malformed_pipe(tmp_path, pipe, match):
    write_doc(tmp_path, "d", "x" * 300, [[0, 3]], ["value"], pipe=pipe)
    _error(tmp_path, r"document 'd' \(.*d\.txt\.pipe\), " + match)
    # Not read at all without annotations.
    read_cdcp(tmp_path, annotations=False)


def test_pipe_empty_argument_field():
    relations = _parse_pipe(PIPE_LINE.replace("0..77", ""), "d", "d.txt.pipe", 300)
    assert relations == [("Explicit", "Expansion", [], [(92, 241), (250, 260)])]


def test_bad_options(tmp_path):
    write_doc(tmp_path, "d", "p0.", [[0, 3]], ["value"])
    for option in ("merge_nested", "transitive_closure", "annotations"):
        _error(tmp_path, f"{option} must be True or False", **{option: 1})
    (tmp_path / "d.txt").unlink()
    _error(tmp_path, "no documents")


# The corpus as Niculae, Park and Cardie (2017) use it (after merging and
# closure), counted on the shared copy; props and links match their paper.
CDCP_STATS = {
    "train": {"docs": 581, "props": 3806, "raw_props": 3906, "raw_links": 969,
              "direct": 955, "closed": 1081, "merged": 66, "dropped": 14, "no_link": 158,
              "sentences": 3051, "tokens": 70642, "empty_pipe": 75,
              "labels": {"value": 1669, "testimony": 822, "policy": 662, "fact": 622,
                         "reference": 31}},
    "test": {"docs": 150, "props": 973, "raw_props": 1026, "raw_links": 252,
             "direct": 244, "closed": 272, "merged": 24, "dropped": 8, "no_link": 49,
             "sentences": 794, "tokens": 18005, "empty_pipe": 21,
             "labels": {"value": 491, "testimony": 204, "policy": 153, "fact": 124,
                        "reference": 1}},
}


@pytest.mark.shared_data
@pytest.mark.parametrize("split", ["train", "test"])
def test_cdcp_corpus_statistics(shared_data, split):
    folder = shared_data / "cdcp" / split
    stats = CDCP_STATS[split]
    X, y = read_cdcp(folder)
    _, y_direct = read_cdcp(folder, transitive_closure=False, annotations=False)
    raw = [json.loads((folder / f"{doc['id']}.ann.json").read_text()) for doc in X]
    assert len(X) == stats["docs"]
    assert [doc["id"] for doc in X] == sorted(doc["id"] for doc in X)
    assert sum(len(labels) for labels, _ in y) == stats["props"]
    assert sum(len(a["prop_offsets"]) for a in raw) == stats["raw_props"]
    n_raw = sum(len(a["reasons"]) + len(a["evidences"]) for a in raw)
    assert n_raw == stats["raw_links"]
    n_direct = sum(len(links) for _, links in y_direct)
    assert n_direct == stats["direct"]
    assert n_raw - n_direct == stats["dropped"]
    assert sum(len(links) for _, links in y) == stats["closed"]
    merged = sum(list(span) not in a["prop_offsets"]
                 for doc, a in zip(X, raw) for span in doc["propositions"])
    assert merged == stats["merged"]
    assert collections.Counter(a for labels, _ in y for a in labels) == stats["labels"]
    assert sum(not links for _, links in y) == stats["no_link"]
    assert sum(len(doc["corenlp"]["sentences"]) for doc in X) == stats["sentences"]
    assert sum(len(s["tokens"]) for doc in X
               for s in doc["corenlp"]["sentences"]) == stats["tokens"]
    assert sum(doc["discourse"] == [] for doc in X) == stats["empty_pipe"]
    for doc, (labels, links) in zip(X, y):
        spans = doc["propositions"]
        assert len(labels) == len(spans)
        assert all(a < b <= c for (a, b), (c, _) in itertools.pairwise(spans))
        assert all(s != t and (t, s) not in links for s, t in links)
        assert links == sorted(set(links))
