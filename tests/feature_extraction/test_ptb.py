"""The bracketed-tree reader of feature_extraction (a private module)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sksparse_struct.feature_extraction._ptb import Tree, parse_ptb, read_constituents

SENTENCE = """(ROOT
  (S
    (NP (PRP I))
    (VP (VBP think)
      (SBAR (IN that)
        (S (NP (PRP it)) (VP (VBZ works)))))
    (. .)))"""


def test_reads_labels_leaves_and_height():
    tree = parse_ptb(SENTENCE)
    assert tree.label == "ROOT"
    assert tree.leaves() == ["I", "think", "that", "it", "works", "."]
    # ROOT > S > VP > SBAR > S > VP > VBZ > works: 8 nodes on the path, NLTK
    # counts the word as one level under its preterminal (height 2).
    assert tree.height() == 8
    assert parse_ptb("(NN state)").height() == 2
    assert str(parse_ptb("(S (NP (PRP I)) (VP (VBP agree)))")) == "(S (NP (PRP I)) (VP (VBP agree)))"


def test_subtrees_and_productions():
    tree = parse_ptb(SENTENCE)
    labels = [t.label for t in tree.subtrees()]
    assert labels == ["ROOT", "S", "NP", "PRP", "VP", "VBP", "SBAR", "IN", "S", "NP",
                      "PRP", "VP", "VBZ", "."]
    assert len(list(tree.subtrees("SBAR"))) == 1
    assert len(list(tree.subtrees("S"))) == 2
    assert tree.productions()[:4] == ["ROOT -> S", "S -> NP VP .", "NP -> PRP", "PRP -> 'I'"]
    assert "VBZ -> 'works'" in tree.productions()
    assert parse_ptb("(POS 's)").production() == '''POS -> "'s"'''


def test_spans_are_leaf_ranges():
    tree = parse_ptb(SENTENCE)
    spans = {(node.label, start, end) for node, start, end in tree.spans()}
    assert ("ROOT", 0, 6) in spans
    assert ("SBAR", 2, 5) in spans
    assert ("VP", 1, 5) in spans
    assert (".", 5, 6) in spans
    assert [n.label for n, _, _ in tree.spans()] == [t.label for t in tree.subtrees()]
    for node, start, end in tree.spans():
        assert node.leaves() == tree.leaves()[start:end]


def test_unlabelled_outer_brackets_and_equality():
    tree = parse_ptb("( (S (NP (NNP Ann)) (VP (VBD left))))")
    assert tree.label == ""
    assert tree.children[0] == parse_ptb("(S (NP (NNP Ann)) (VP (VBD left)))")
    assert tree.leaves() == ["Ann", "left"]


@pytest.mark.parametrize("bad, match", [
    ("(S (NP I)", "unbalanced '\\('"),
    ("(S (NP I)))", "unbalanced '\\)'"),
    ("S (NP I)", "must start with"),
    ("(S I) (S you)", "after the end"),
    ("", "must start with"),
])
def test_malformed_trees_are_errors(bad, match):
    with pytest.raises(ValueError, match=match):
        parse_ptb(bad)
    with pytest.raises(TypeError, match="must be a str"):
        parse_ptb(None)


def test_tree_constructor():
    t = Tree("NP", [Tree("DT", ["the"]), Tree("NN", ["cat"])])
    assert t.leaves() == ["the", "cat"]
    assert t.production() == "NP -> DT NN"


@st.composite
def trees(draw, depth=0):
    label = draw(st.sampled_from(["S", "NP", "VP", "NN", "SBAR", "-LRB-"]))
    if depth >= 3 or draw(st.booleans()):
        words = draw(st.lists(st.sampled_from(["a", "it's", "b", "'s", '"x"', "."]),
                              min_size=0, max_size=2))
        return Tree(label, words)
    return Tree(label, draw(st.lists(trees(depth + 1), min_size=1, max_size=3)))


@given(trees())
def test_read_constituents_equals_the_tree(tree):
    text = str(tree)
    parsed = parse_ptb(text)
    assert parsed == tree
    leaves, nodes, height = read_constituents(text)
    assert leaves == parsed.leaves()
    assert nodes == [(node.label, a, b, node.production()) for node, a, b in parsed.spans()]
    assert height == parsed.height()


def test_read_constituents_sentence_and_errors():
    leaves, nodes, height = read_constituents(SENTENCE)
    assert leaves == ["I", "think", "that", "it", "works", "."]
    assert height == 8
    assert nodes[0] == ("ROOT", 0, 6, "ROOT -> S")
    assert ("SBAR", 2, 5, "SBAR -> IN S") in nodes
    for bad, match in [("(S (NP I)", "unbalanced '\\("), ("(S (NP I)))", "unbalanced '\\)'"),
                       ("S (NP I)", "must start with"), ("(S I) (S you)", "after the end")]:
        with pytest.raises(ValueError, match=match):
            read_constituents(bad)
    with pytest.raises(TypeError, match="must be a str"):
        read_constituents(None)
