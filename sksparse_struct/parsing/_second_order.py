"""The factor graph of a second-order (siblings, grandparents) dependency parse.

A sentence of ``n`` words (tokens ``0..n``, 0 the root) becomes a factor
graph over binary arc variables (Martins et al. 2013; Koo et al. 2010):

- one variable per arc ``h -> m`` (``m >= 1``, ``h != m``), numbered as the
  unary parts of :class:`~sksparse_struct.structures.DependencyTree`
  (modifier-major: :func:`arc_variable`). Every arc has a variable, pruned
  ones included, so that the tree factor sees the whole arc set; a pruned
  arc is forbidden (``-inf``) in the tree factor and in no other factor,
  so its marginal is 0 and it costs one copy per iteration.
- a tree factor (``DependencyTree``: Chu-Liu-Edmonds or Eisner) over all
  the arcs;
- per head ``h >= 1`` and side (left, right), a
  :class:`~sksparse_struct.structures.GrandparentHeadAutomaton` over the
  candidate arcs into ``h`` (its grandparents ``g -> h``) and out of ``h``
  on that side, in outward order. It owns that side's consecutive-sibling
  parts and the grandparent parts ``(g, h, m)`` with ``m`` on that side.
  Without grandparent parts it is a plain
  :class:`~sksparse_struct.structures.HeadAutomaton`;
- for the root, a :class:`~sksparse_struct.structures.HeadAutomaton` over
  its right side (its left side is always empty: the one part ``(0, 0,
  -1)`` is a constant, left out, as is any side whose automaton has no
  variable at all).

Sibling and grandparent parts are not variables but the automata's
higher-order parts: their scores go in ``factor_scores`` and their
posteriors come back there.

**Part conventions.** A consecutive-sibling part is a row ``(h, m, s)``:
``m == h`` means START (``s`` is the first, closest, dependent of ``h`` on
its side), ``s == n + 1`` means STOP on the right side and ``s == -1`` STOP
on the left side; otherwise ``m`` and ``s`` are consecutive dependents of
``h`` on one side, ``s`` further from ``h``. An empty side activates ``(h,
h, n + 1)`` or ``(h, h, -1)``. A part for every ordered pair of candidate
modifiers of a side exists; whether two dependents are consecutive is the
automaton's business. A grandparent part is ``(g, h, m)``: arcs ``g -> h``
and ``h -> m``, ``h >= 1`` (``g == m`` included: a two-cycle no tree holds,
which only the tree factor excludes).
"""

import numpy as np

from ..inference import FactorGraph, ad3, ad3_map
from ..inference._ad3 import check_graph_scores, evaluate
from ..structures import (
    DependencyTree,
    GrandparentHeadAutomaton,
    HeadAutomaton,
    ProjectiveSiblingTree,
)
from ..structures._tree import arc_index, arc_part, heads_to_parts
from ._second_order_graph_fast import graph_layout

__all__ = ["CERTIFIED", "BRANCH_AND_BOUND", "ROUNDED", "SecondOrderGraph", "arc_variable",
           "build_graph", "decode_graph", "tree_parts"]

# How a parse was decoded (``decode_graph``).
CERTIFIED = 0  # the LP's dual bound certifies the rounded tree as the exact MAP
BRANCH_AND_BOUND = 1  # the LP was not tight; branch-and-bound proved the MAP
ROUNDED = 2  # neither within the limits: the best tree found (maybe not the MAP)


# The variable of the arc h -> m is its DependencyTree unary part (arrays too).
arc_variable = arc_part


_AUTOMATA = (HeadAutomaton(), GrandparentHeadAutomaton())
_SHAPE_PARTS = {}


def shape_parts(G, L):
    """Encoded zero potentials of an automaton: ``G`` grandparents (0: plain), ``L`` modifiers.

    The automata's potentials are zeros (their scores come as factor
    scores), so one encoding per shape serves every graph (read-only).
    """
    parts = _SHAPE_PARTS.get((G, L))
    if parts is None:
        sib = np.zeros((L + 2, L + 2))
        head_automaton, grand_automaton = _AUTOMATA
        parts = (head_automaton.encode(np.zeros(L), sib) if G == 0 else
                 grand_automaton.encode(np.zeros(G), np.zeros(L), sib, np.zeros((G, L))))
        parts.eta_u.flags.writeable = False
        parts.eta_v.flags.writeable = False
        if G <= 64 and L <= 64:
            _SHAPE_PARTS[(G, L)] = parts
    return parts


class SecondOrderGraph:
    """A sentence's second-order factor graph and the layout of its parts.

    Built by :func:`build_graph`.

    Attributes
    ----------
    n : int
        Words.
    candidates : ndarray of shape (n + 1, n + 1), bool
        The candidate arcs (``candidates[h, m]``).
    graph : FactorGraph
        Variables: the ``n * n`` arcs (:func:`arc_variable`).
    siblings : ndarray of shape (n_siblings, 3), int64
        The sibling parts ``(h, m, s)`` (module docstring); empty without
        sibling parts.
    sibling_slots : ndarray of shape (n_siblings,), int64
        Their positions in ``factor_scores``.
    grandparents : ndarray of shape (n_grandparents, 3), int64
        The grandparent parts ``(g, h, m)``; empty without them.
    grandparent_slots : ndarray of shape (n_grandparents,), int64
        Their positions in ``factor_scores``.
    """

    def __init__(self, n, candidates, graph, siblings, sibling_slots, grandparents,
                 grandparent_slots):
        self.n = n
        self.candidates = candidates
        self.graph = graph
        self.siblings = siblings
        self.sibling_slots = sibling_slots
        self.grandparents = grandparents
        self.grandparent_slots = grandparent_slots
        self._sibling_index = None
        self._grandparent_index = None

    @property
    def n_variables(self):
        return self.graph.n_variables

    @property
    def n_factor_scores(self):
        return self.graph.n_factor_scores

    def factor_scores(self, sibling_scores=None, grandparent_scores=None):
        """The graph's ``factor_scores`` from the parts' scores (zeros where not given).

        Slots of no part stay 0: those of sibling parts whose arcs are
        pruned (in a ``ProjectiveSiblingTree``) and the sibling slots of
        automata that have grandparent parts only.
        """
        phi = np.zeros(self.n_factor_scores)
        if sibling_scores is not None:
            phi[self.sibling_slots] = sibling_scores
        if grandparent_scores is not None:
            phi[self.grandparent_slots] = grandparent_scores
        return phi

    def variable_scores(self, arc_scores):
        """The arc variables' scores from an ``(n + 1, n + 1)`` arc score matrix.

        Pruned arcs get 0 (the tree factor forbids them).
        """
        n = self.n
        theta = np.zeros(n * n)
        heads, mods = arc_index(n)
        theta[:] = np.where(self.candidates[heads, mods], arc_scores[heads, mods], 0.0)
        return theta

    def arc_matrix(self, u):
        """Arc marginals ``u`` (per variable) as an ``(n + 1, n + 1)`` matrix."""
        n = self.n
        out = np.zeros((n + 1, n + 1))
        heads, mods = arc_index(n)
        out[heads, mods] = u
        return out

    def gold(self, heads):
        """Indicators ``(y_u, y_v)`` of the tree ``heads`` (length ``n + 1``).

        ``y_u`` over the arc variables, ``y_v`` over ``factor_scores`` (its
        active sibling and grandparent parts). Parts of the tree that are
        not in the graph (a gold arc pruned away) are left out.
        """
        n = self.n
        heads = np.asarray(heads, dtype=np.int64)
        y_u = heads_to_parts(heads)
        y_v = np.zeros(self.n_factor_scores)
        sib, gp = tree_parts(heads)
        if self.siblings.shape[0]:
            if self._sibling_index is None:
                self._sibling_index = {tuple(r): s for r, s in
                                       zip(self.siblings.tolist(), self.sibling_slots.tolist())}
            for r in sib.tolist():
                slot = self._sibling_index.get(tuple(r))
                if slot is not None:
                    y_v[slot] = 1.0
        if self.grandparents.shape[0]:
            if self._grandparent_index is None:
                self._grandparent_index = {
                    tuple(r): s for r, s in
                    zip(self.grandparents.tolist(), self.grandparent_slots.tolist())}
            for r in gp.tolist():
                slot = self._grandparent_index.get(tuple(r))
                if slot is not None:
                    y_v[slot] = 1.0
        return y_u, y_v


def tree_parts(heads):
    """Sibling and grandparent parts active in the tree ``heads`` (length ``n + 1``).

    Returns ``(siblings, grandparents)``, int64 arrays of rows ``(h, m, s)``
    and ``(g, h, m)`` (module docstring): per head and side, one sibling
    part more than the side has dependents (the root's left side
    included); one grandparent part per arc out of a word.
    """
    heads = np.asarray(heads, dtype=np.int64)
    n = heads.shape[0] - 1
    deps = [[] for _ in range(n + 1)]
    for m in range(1, n + 1):
        deps[heads[m]].append(m)
    sib = []
    gp = []
    for h in range(n + 1):
        right = [m for m in deps[h] if m > h]
        left = sorted((m for m in deps[h] if m < h), reverse=True)
        for side, stop in ((right, n + 1), (left, -1)):
            prev = h
            for m in side:
                sib.append((h, prev, m))
                prev = m
            sib.append((h, prev, stop))
        if h >= 1:
            for m in deps[h]:
                gp.append((heads[h], h, m))
    return (np.array(sib, dtype=np.int64).reshape(-1, 3),
            np.array(gp, dtype=np.int64).reshape(-1, 3))


def build_graph(n, candidates, *, siblings=True, grandparents=True, projective=False,
                single_root=True, sibling_tree=None):
    """The second-order factor graph of a sentence of ``n`` words.

    Parameters
    ----------
    n : int
        Words (at least 1).
    candidates : ndarray of shape (n + 1, n + 1), bool
        Candidate arcs ``candidates[h, m]``; at least one tree must use only
        candidates (column 0 and the diagonal are ignored).
    siblings, grandparents : bool, default=True
        Which second-order parts the graph has.
    projective, single_root : bool
        The tree factor's kind.
    sibling_tree : bool or None, default=None
        Projective trees with sibling parts: whether the tree factor is a
        :class:`~sksparse_struct.structures.ProjectiveSiblingTree` owning
        the sibling parts (second-order Eisner: an exact factor, so that the
        LP of a sibling-only model is its MAP) rather than a
        ``DependencyTree`` with the sibling parts in the head automata.
        None: for sibling-only models. (With grandparents too it is a
        tighter relaxation but a slower one: its factor carries all
        ``n^3 / 3`` sibling parts of the sentence, pruned or not.)

    Returns
    -------
    SecondOrderGraph
    """
    candidates = np.array(candidates, dtype=bool)
    candidates[:, 0] = False
    np.fill_diagonal(candidates, False)
    fg = FactorGraph(n * n)
    tree_scores = np.where(candidates, 0.0, -np.inf)
    if sibling_tree is None:
        sibling_tree = not grandparents
    tree_siblings = bool(siblings and projective and sibling_tree)
    if tree_siblings:
        fg.add_structure(ProjectiveSiblingTree(single_root=single_root), np.arange(n * n),
                         tree_scores)
    else:
        fg.add_structure(DependencyTree(projective=projective, single_root=single_root),
                         np.arange(n * n), tree_scores)
    if not (siblings or grandparents):
        none, no_slots = np.zeros((0, 3), dtype=np.int64), np.zeros(0, dtype=np.int64)
        return SecondOrderGraph(n, candidates, fg, none, no_slots, none, no_slots)
    shapes, variables, sib_rows, sib_slots, gp_rows, gp_slots, bad_word = graph_layout(
        candidates, bool(siblings), bool(grandparents), tree_siblings)
    if bad_word >= 0:
        raise ValueError(f"word {bad_word} has no candidate head.")
    # The automata in order: the root's first (a plain one: G = 0), then the
    # words' sides (grandparent automata, G >= 1, or plain ones without
    # grandparent parts).
    head_automaton, grand_automaton = _AUTOMATA
    parts = [shape_parts(G, L) for G, L in shapes.tolist()]
    n_root = 1 if grandparents and shapes.shape[0] and shapes[0, 0] == 0 else 0
    if n_root:
        size = parts[0].eta_u.shape[0]
        fg.add_structures_parts(head_automaton, variables[:size], parts[:1])
        variables = variables[size:]
    fg.add_structures_parts(grand_automaton if grandparents else head_automaton, variables,
                            parts[n_root:])
    return SecondOrderGraph(n, candidates, fg, sib_rows, sib_slots, gp_rows, gp_slots)


def _heads_of(x, n):
    """Heads (length ``n + 1``, ``heads[0] = -1``) of a 0/1 assignment of the arcs."""
    heads, mods = arc_index(n)
    out = np.full(n + 1, -1, dtype=np.int64)
    on = np.flatnonzero(x > 0.5)
    out[mods[on]] = heads[on]
    return out


# A rounded tree within this relative gap of the LP's bound has the LP
# solved on, to a tolerance this much finer, before branch-and-bound.
_REFINE_GAP = 1e-4
_REFINE_TOL = 1e-3


def _rounded(sog, tree, cg, theta, factor_scores, result):
    """The tree factor's MAP on the arc marginals (TurboParser's rounding).

    Returns ``(heads, assignment, feasible, gap)``, ``gap`` the LP's dual
    bound minus the tree's score, relative to the score.
    """
    n = sog.n
    scores = np.full((n + 1, n + 1), -np.inf)
    scores[sog.candidates] = 0.0
    scores += sog.arc_matrix(result.variables)
    heads = np.asarray(tree.map(scores), dtype=np.int64)
    x = heads_to_parts(heads)
    feasible, value, _ = evaluate(cg, theta, factor_scores, x)
    gap = (result.dual - value) / max(1.0, abs(value)) if feasible else np.inf
    return heads, x, feasible, gap


def decode_graph(sog, theta, phi, *, projective, single_root, eta=1.0, max_iter=500, tol=1e-4,
                 gap_tol=1e-9, max_nodes=4, warm_start=None):
    """The highest-scoring tree of a second-order graph, with how it was found.

    AD3 solves the LP relaxation; the tree that the tree factor's oracle
    finds on the arc marginals (TurboParser's rounding) is certified as
    the exact MAP when its score reaches the LP's dual bound (within
    ``gap_tol``, relative); when it is within 1e-4, the LP is first solved
    on to a 1000 times finer tolerance and the rounding tried again.
    Otherwise branch-and-bound (:func:`ad3_map`, at most ``max_nodes``
    nodes, its root the LP just solved and the rounded tree its first
    incumbent) looks for the proven MAP; failing that, the best tree it saw
    is returned.

    Returns
    -------
    heads : ndarray of shape (n + 1,), int64
    status : int
        ``CERTIFIED``, ``BRANCH_AND_BOUND`` or ``ROUNDED``.
    result : AD3Result
        The root LP's solution (refined if it was: ``n_iter`` counts both
        solves, ``converged`` is the first one's, at ``tol``).
    """
    n = sog.n
    result = ad3(sog.graph, theta, phi, eta=eta, max_iter=max_iter, tol=tol,
                 warm_start=warm_start)
    tree = DependencyTree(projective=projective, single_root=single_root)
    cg, th, fs = check_graph_scores(sog.graph, theta, phi, "decode_graph")
    heads, x, feasible, gap = _rounded(sog, tree, cg, th, fs, result)
    if feasible and gap <= gap_tol:
        return heads, CERTIFIED, result
    if feasible and gap <= _REFINE_GAP:
        # Nearly certified: most often the LP is tight but solved only to
        # ``tol``. Solving on to a finer tolerance settles it for less than
        # branching costs.
        refined = ad3(sog.graph, theta, phi, eta=eta, max_iter=max_iter,
                      tol=tol * _REFINE_TOL, warm_start=result)
        result = refined._replace(n_iter=result.n_iter + refined.n_iter,
                                  converged=result.converged)
        heads, x, feasible, gap = _rounded(sog, tree, cg, th, fs, result)
        if feasible and gap <= gap_tol:
            return heads, CERTIFIED, result
    if max_nodes == 0:
        return heads, ROUNDED, result
    # Branch-and-bound from the root LP just solved, with the rounded tree as
    # the assignment to beat (always feasible unless a fixed score forbids it).
    try:
        exact = ad3_map(sog.graph, theta, phi, gap_tol=gap_tol, max_nodes=max_nodes, eta=eta,
                        max_iter=max_iter, tol=tol, warm_start=result,
                        incumbent=x if feasible else None)
    except ValueError:
        # No incumbent and no assignment found within max_nodes.
        return heads, ROUNDED, result
    heads = _heads_of(exact.variables, n)
    return heads, BRANCH_AND_BOUND if exact.optimal else ROUNDED, result
