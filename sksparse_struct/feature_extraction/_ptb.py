"""A small reader of bracketed Penn Treebank trees.

Constituency parsers (Stanford CoreNLP among them) write trees such as
``(ROOT (S (NP (PRP I)) (VP (VBP agree)) (. .)))``. :func:`parse_ptb` reads
one into a :class:`Tree`, which knows its label, children, leaves, height,
subtrees and context-free productions, with the conventions of NLTK's
``Tree`` (a preterminal over a word has height 2; productions are written
``S -> NP VP`` and ``NN -> 'state'``, terminals quoted by ``repr``).
:func:`read_constituents` reads the same string in one pass into what
feature extraction needs, without building the tree.
"""

import re

__all__ = ["Tree", "parse_ptb", "read_constituents"]

_TOKEN = re.compile(r"\(|\)|[^\s()]+")


class Tree:
    """A constituent: a label and a list of children (trees or leaf strings).

    Parameters
    ----------
    label : str
        The node's label (a phrase or part-of-speech tag).
    children : list of (Tree or str)
        The node's children in order; strings are leaves (words).
    """

    __slots__ = ("children", "label")

    def __init__(self, label, children):
        self.label = label
        self.children = list(children)

    def __repr__(self):
        return f"Tree({self.label!r}, {self.children!r})"

    def __str__(self):
        inner = " ".join(str(c) for c in self.children)
        return f"({self.label} {inner})" if inner else f"({self.label})"

    def __eq__(self, other):
        return (isinstance(other, Tree) and self.label == other.label
                and self.children == other.children)

    def __hash__(self):
        return hash(str(self))

    def leaves(self):
        """The words under this node, left to right."""
        out = []
        stack = [self]
        while stack:
            node = stack.pop()
            if isinstance(node, Tree):
                stack.extend(reversed(node.children))
            else:
                out.append(node)
        return out

    def height(self):
        """Length of the longest path to a leaf, counting nodes (a word's preterminal: 2)."""
        best = 1
        for child in self.children:
            h = child.height() + 1 if isinstance(child, Tree) else 2
            best = max(best, h)
        return best

    def subtrees(self, label=None):
        """Every node of the tree (this one first, depth-first), or only those with ``label``."""
        stack = [self]
        while stack:
            node = stack.pop()
            if label is None or node.label == label:
                yield node
            stack.extend(c for c in reversed(node.children) if isinstance(c, Tree))

    def production(self):
        """This node's production as a string, e.g. ``'S -> NP VP'`` or ``"NN -> 'state'"``."""
        rhs = " ".join(c.label if isinstance(c, Tree) else repr(c) for c in self.children)
        return f"{self.label} -> {rhs}"

    def productions(self):
        """The productions of every node, depth-first (with repetitions)."""
        return [node.production() for node in self.subtrees()]

    def spans(self):
        """``(node, start, end)`` for every node: the leaf positions ``[start, end)`` it covers.

        Depth-first, parents before children (the order of :meth:`subtrees`).
        """
        out = []
        self._spans(0, out)
        return out

    def _spans(self, start, out):
        here = len(out)
        out.append(None)
        pos = start
        for child in self.children:
            pos = child._spans(pos, out) if isinstance(child, Tree) else pos + 1
        out[here] = (self, start, pos)
        return pos


def parse_ptb(text):
    """Read one bracketed tree.

    Parameters
    ----------
    text : str
        The tree, e.g. ``"(ROOT (S (NP (PRP I)) (VP (VBP agree))))"``; line
        breaks and indentation are ignored. A node without a label (the
        outer brackets of the original Penn Treebank files) gets the label
        ``""``.

    Returns
    -------
    tree : Tree

    Raises
    ------
    ValueError
        If the brackets do not balance, the string holds more or less than
        one tree, or a word stands outside any bracket.
    """
    if not isinstance(text, str):
        raise TypeError(f"a bracketed tree must be a str, got {type(text).__name__}")
    tokens = _TOKEN.findall(text)
    if not tokens or tokens[0] != "(":
        raise ValueError(f"a bracketed tree must start with '(': {text[:60]!r}")
    stack = []
    root = None
    i = 0
    n = len(tokens)
    while i < n:
        tok = tokens[i]
        if tok == "(":
            if root is not None:
                raise ValueError(f"text after the end of the tree: {text[:60]!r}...")
            label = ""
            if i + 1 < n and tokens[i + 1] not in "()":
                label = tokens[i + 1]
                i += 1
            stack.append(Tree(label, []))
        elif tok == ")":
            if not stack:
                raise ValueError(f"unbalanced ')' in tree: {text[:60]!r}...")
            node = stack.pop()
            if stack:
                stack[-1].children.append(node)
            else:
                root = node
        else:
            if not stack or root is not None:
                raise ValueError(f"word {tok!r} outside any bracket in tree: {text[:60]!r}")
            stack[-1].children.append(tok)
        i += 1
    if stack:
        raise ValueError(f"unbalanced '(' in tree: {text[:60]!r}...")
    return root


def read_constituents(text):
    """The leaves and constituents of a bracketed tree, in one pass.

    The same as ``tree = parse_ptb(text)`` followed by ``tree.leaves()``,
    ``[(node.label, start, end, node.production()) for node, start, end in
    tree.spans()]`` and ``tree.height()``, several times faster.

    Parameters
    ----------
    text : str
        One bracketed tree.

    Returns
    -------
    leaves : list of str
        The words, left to right.
    constituents : list of (str, int, int, str)
        ``(label, start, end, production)`` of every node, parents before
        children (depth-first), covering the leaves ``[start, end)``.
    height : int
        The tree's height (NLTK's convention).

    Raises
    ------
    ValueError
        As :func:`parse_ptb`.
    """
    if not isinstance(text, str):
        raise TypeError(f"a bracketed tree must be a str, got {type(text).__name__}")
    tokens = _TOKEN.findall(text)
    if not tokens or tokens[0] != "(":
        raise ValueError(f"a bracketed tree must start with '(': {text[:60]!r}")
    leaves = []
    nodes = []
    # open nodes: [label, start, child symbols, height, index in nodes]
    stack = []
    done = False
    height = 0
    i, n = 0, len(tokens)
    while i < n:
        tok = tokens[i]
        if tok == "(":
            if done:
                raise ValueError(f"text after the end of the tree: {text[:60]!r}...")
            label = ""
            if i + 1 < n and tokens[i + 1] not in "()":
                label = tokens[i + 1]
                i += 1
            stack.append([label, len(leaves), [], 1, len(nodes)])
            nodes.append(None)
        elif tok == ")":
            if not stack:
                raise ValueError(f"unbalanced ')' in tree: {text[:60]!r}...")
            label, start, rhs, h, at = stack.pop()
            nodes[at] = (label, start, len(leaves), f"{label} -> {' '.join(rhs)}")
            if stack:
                parent = stack[-1]
                parent[2].append(label)
                parent[3] = max(parent[3], h + 1)
            else:
                done = True
                height = h
        else:
            if not stack or done:
                raise ValueError(f"word {tok!r} outside any bracket in tree: {text[:60]!r}")
            leaves.append(tok)
            top = stack[-1]
            top[2].append(repr(tok))
            top[3] = max(top[3], 2)
        i += 1
    if stack:
        raise ValueError(f"unbalanced '(' in tree: {text[:60]!r}...")
    return leaves, nodes, height
