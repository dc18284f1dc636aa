"""The bracketed-tree reader of feature_extraction (a private module)."""

import pytest

from sksparse_struct.feature_extraction._ptb import Tree, parse_ptb

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
