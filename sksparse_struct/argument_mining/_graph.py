"""The factor graph of one document for argument mining (Niculae, Park & Cardie 2017).

Variables: one one-of-``n_labels`` group of binaries per proposition (its
label), one binary per candidate link (on: the source supports the target),
and for tree constraints one binary per proposition (attached to the root).
Scored factors: a dense compatibility factor per link over (source label,
target label, link), and second-order pair factors over two links sharing a
proposition. Hard factors: the link-structure constraints and the strictness
rules on labels.
"""

from typing import NamedTuple

import numpy as np

from ..inference import FactorGraph
from ..structures import DependencyTree
from ..utils._validation import check_integer

__all__ = ["SECOND_ORDER_TYPES", "ArgumentGraph", "build_argument_graph",
           "constraint_violations", "round_to_constraints"]

#: Second-order pair types and the two links each forms from a triple (a, b, c).
SECOND_ORDER_TYPES = {
    "coparent": ((0, 1), (2, 1)),  # a -> b and c -> b
    "grandparent": ((0, 1), (1, 2)),  # a -> b and b -> c
    "sibling": ((1, 0), (1, 2)),  # b -> a and b -> c
}

_CONSTRAINTS = ("none", "cdcp", "tree")


class ArgumentGraph(NamedTuple):
    """A document's factor graph and where its parts live.

    Attributes
    ----------
    graph : FactorGraph
        The factor graph.
    prop_vars : ndarray of shape (n_props, n_labels), int64
        Variable of "proposition ``a`` has label ``i``" (one XOR group per row).
    link_vars : ndarray of shape (n_links,), int64
        Variable of "candidate link ``k`` is on".
    compat_offsets : ndarray of shape (n_links,), int64
        Offset in ``factor_scores`` of link ``k``'s compatibility factor:
        ``n_labels * n_labels * 2`` scores, configuration
        ``i * n_labels * 2 + j * 2 + r`` for source label ``i``, target label
        ``j`` and link off (``r = 0``) or on (``r = 1``).
    pair_offsets : dict of str to ndarray of shape (n_triples,), int64
        For each second-order type, the offset in ``factor_scores`` of the
        pair factor of each triple.
    root_vars : ndarray of shape (n_props,), int64, or None
        With tree constraints, the variable of "proposition ``a`` is attached
        to the root" (-1 for a proposition alone in its paragraph); else None.
    """

    graph: FactorGraph
    prop_vars: np.ndarray
    link_vars: np.ndarray
    compat_offsets: np.ndarray
    pair_offsets: dict
    root_vars: np.ndarray = None


def pair_links(link_index, triples, kind):
    """The two candidate links of the ``kind`` pair factor of each triple.

    ``link_index[s, t]`` is the id of candidate link ``s -> t`` (-1 if none).
    """
    (i0, j0), (i1, j1) = SECOND_ORDER_TYPES[kind]
    if not triples.size:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return (link_index[triples[:, i0], triples[:, j0]],
            link_index[triples[:, i1], triples[:, j1]])


def _int_array(x, name, ncols):
    arr = np.asarray(x)
    if arr.size == 0:
        return np.zeros((0, ncols), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != ncols:
        raise ValueError(f"{name} must have shape (n, {ncols}), got {arr.shape}.")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must hold integers, got dtype {arr.dtype}.")
    return arr.astype(np.int64)


def compat_configurations(n_labels):
    """The ``(n_labels * n_labels * 2, 2 * n_labels + 1)`` configurations of a compat factor."""
    K = n_labels
    C = np.zeros((K * K * 2, 2 * K + 1), dtype=np.uint8)
    idx = np.arange(K * K * 2)
    i, j, r = idx // (2 * K), (idx // 2) % K, idx % 2
    C[idx, i] = 1
    C[idx, K + j] = 1
    C[idx, 2 * K] = r
    return C


def build_argument_graph(n_props, n_labels, link_pairs, triples, *, constraints="cdcp",
                         second_order=("coparent", "sibling"), illegal_label_pairs=(),
                         required_source_label=None, proposition_paragraph=None,
                         strict_in_compat=False):
    """Build the factor graph of one document.

    Parameters
    ----------
    n_props : int
        Number of propositions.
    n_labels : int
        Number of proposition labels.
    link_pairs : array-like of shape (n_links, 2)
        ``(source, target)`` of each candidate link.
    triples : array-like of shape (n_triples, 3)
        ``(a, b, c)`` triples of propositions for the second-order factors.
    constraints : {"cdcp", "tree", "none"}, default="cdcp"
        Link structure. ``"cdcp"``: at most one of ``a -> b`` and ``b -> a``
        for every pair, and transitivity (``a -> b`` and ``b -> c`` imply
        ``a -> c``) for every ordered triple of candidate links. ``"tree"``:
        in each paragraph, the links form a forest: a dependency tree over
        the root and the paragraph's propositions, the link ``s -> t`` being
        the arc with head ``t`` and modifier ``s``, each proposition has one
        head (a target or the root). ``"none"``: no constraint.
    second_order : sequence of {"coparent", "grandparent", "sibling"}, \
default=("coparent", "sibling")
        The second-order pair factors added for each triple ``(a, b, c)``:
        co-parent ``a -> b`` and ``c -> b``; grandparent ``a -> b`` and
        ``b -> c``; sibling ``b -> a`` and ``b -> c``.
    illegal_label_pairs : sequence of (int, int), default=()
        ``(i, j)``: a link from a proposition labelled ``i`` to one labelled
        ``j`` must be off.
    required_source_label : int or None, default=None
        If given, the source of every link that is on has this label.
    proposition_paragraph : array-like of shape (n_props,) or None
        Paragraph of each proposition (tree constraints); None: one paragraph.
    strict_in_compat : bool, default=False
        How ``illegal_label_pairs`` and ``required_source_label`` are
        enforced. False: one implication factor per link and rule (the
        formulation of Niculae et al.). True: the compatibility factors
        forbid the configurations "link on" with an illegal label pair (or a
        source label other than the required one), keeping the layout of
        their scores. The MAP is the same; the LP relaxation is tighter
        (more often integral) and has far fewer factors.

    Returns
    -------
    result : ArgumentGraph
    """
    check_integer(n_props, "n_props", minimum=0)
    check_integer(n_labels, "n_labels", minimum=1)
    if constraints not in _CONSTRAINTS:
        raise ValueError(f"constraints must be one of {_CONSTRAINTS}, got {constraints!r}.")
    second_order = tuple(second_order)
    for kind in second_order:
        if kind not in SECOND_ORDER_TYPES:
            raise ValueError(
                f"unknown second-order type {kind!r}; expected some of "
                f"{sorted(SECOND_ORDER_TYPES)}.")
    if len(set(second_order)) != len(second_order):
        raise ValueError(f"second_order lists a type twice: {second_order}.")
    n_props, K = int(n_props), int(n_labels)
    pairs = _int_array(link_pairs, "link_pairs", 2)
    trip = _int_array(triples, "triples", 3)
    for name, arr in (("link_pairs", pairs), ("triples", trip)):
        if arr.size and (arr.min() < 0 or arr.max() >= n_props):
            r = int(np.flatnonzero(((arr < 0) | (arr >= n_props)).any(axis=1))[0])
            raise ValueError(
                f"{name}[{r}] = {arr[r].tolist()} refers to a proposition outside "
                f"0..{n_props - 1}.")
    if pairs.size and (pairs[:, 0] == pairs[:, 1]).any():
        r = int(np.flatnonzero(pairs[:, 0] == pairs[:, 1])[0])
        raise ValueError(f"link_pairs[{r}] = {pairs[r].tolist()} links a proposition to itself.")
    n_links = pairs.shape[0]
    # link id lookup: index[s, t] = k, or -1
    index = np.full((n_props, n_props), -1, dtype=np.int64)
    if n_links:
        if np.unique(pairs, axis=0).shape[0] != n_links:
            raise ValueError("link_pairs has duplicate links.")
        index[pairs[:, 0], pairs[:, 1]] = np.arange(n_links)
    illegal = _int_array(illegal_label_pairs, "illegal_label_pairs", 2)
    if illegal.size and (illegal.min() < 0 or illegal.max() >= K):
        raise ValueError(f"illegal_label_pairs must hold labels in 0..{K - 1}, "
                         f"got {illegal.tolist()}.")
    if required_source_label is not None and not (
            isinstance(required_source_label, (int, np.integer))
            and 0 <= required_source_label < K):
        raise ValueError(f"required_source_label must be a label in 0..{K - 1} or None, got "
                         f"{required_source_label!r}.")
    if proposition_paragraph is None:
        para = np.zeros(n_props, dtype=np.int64)
    else:
        para = np.asarray(proposition_paragraph)
        if para.shape != (n_props,) or (para.size and not np.issubdtype(para.dtype, np.integer)):
            raise ValueError(f"proposition_paragraph must be {n_props} integers, got "
                             f"shape {para.shape}, dtype {para.dtype}.")
        para = para.astype(np.int64)

    prop_vars = np.arange(n_props * K, dtype=np.int64).reshape(n_props, K)
    link_vars = n_props * K + np.arange(n_links, dtype=np.int64)
    n_vars = n_props * K + n_links
    root_vars = None
    if constraints == "tree":
        root_vars = n_vars + np.arange(n_props, dtype=np.int64)
        n_vars += n_props
    fg = FactorGraph(n_vars)
    if n_props:
        fg.add_xors(prop_vars)
    src, trg = pairs[:, 0], pairs[:, 1]
    if n_links:
        compat_vars = np.column_stack([prop_vars[src], prop_vars[trg], link_vars])
        forbidden = None
        if strict_in_compat and (illegal.size or required_source_label is not None):
            idx = np.arange(K * K * 2)
            i, j, r = idx // (2 * K), (idx // 2) % K, idx % 2
            bad = np.zeros((K, K), dtype=bool)
            if illegal.size:
                bad[illegal[:, 0], illegal[:, 1]] = True
            if required_source_label is not None:
                bad[np.arange(K) != required_source_label, :] = True
            forbidden = (r == 1) & bad[i, j]
        compat_offsets = fg.add_denses(compat_vars, compat_configurations(K), forbidden)
    else:
        compat_offsets = np.zeros(0, dtype=np.int64)
    pair_offsets = {}
    for kind in second_order:
        first, second = pair_links(index, trip, kind)
        missing = (first < 0) | (second < 0)
        if missing.any():
            r = int(np.flatnonzero(missing)[0])
            raise ValueError(
                f"triples[{r}] = {trip[r].tolist()}: a {kind} pair needs links that are not "
                "candidates in link_pairs.")
        if trip.shape[0]:
            pair_offsets[kind] = fg.add_pairs(np.column_stack([link_vars[first],
                                                               link_vars[second]]))
        else:
            pair_offsets[kind] = np.zeros(0, dtype=np.int64)
    if constraints == "cdcp" and n_links:
        back = index[trg, src]
        both = (back >= 0) & (np.arange(n_links) < back)
        if both.any():
            fg.add_at_most_ones(np.column_stack([link_vars[both], link_vars[back[both]]]))
        # a -> b and b -> c imply a -> c, for every ordered triple of distinct props
        a, b = src, trg
        rows = []
        for k in range(n_links):
            out = index[b[k]]  # links b -> c
            cs = np.flatnonzero(out >= 0)
            cs = cs[cs != a[k]]
            ac = index[a[k], cs]
            ok = ac >= 0
            if ok.any():
                rows.append(np.column_stack([np.full(ok.sum(), k), out[cs[ok]], ac[ok]]))
        if rows:
            t = np.concatenate(rows)
            fg.add_implications(link_vars[t[:, :2]], link_vars[t[:, 2]])
    if constraints == "tree":
        for p in np.unique(para):
            props = np.flatnonzero(para == p)
            n = props.shape[0]
            if n < 2:
                root_vars[props] = -1
                continue
            heads = np.tile(np.arange(n + 1), (n, 1))
            heads = heads[heads != np.arange(1, n + 1)[:, None]]  # modifier-major parts
            mods = np.repeat(np.arange(1, n + 1), n)
            s = props[mods - 1]
            t = props[np.maximum(heads, 1) - 1]
            lk = index[s, t]
            arc_link = heads > 0
            if (lk[arc_link] < 0).any():
                r = int(np.flatnonzero(arc_link & (lk < 0))[0])
                raise ValueError(
                    f"tree constraints need every ordered pair of propositions of a paragraph "
                    f"as a candidate link; {s[r]} -> {t[r]} (paragraph {p}) is not one.")
            variables = np.where(arc_link, link_vars[np.maximum(lk, 0)], root_vars[s])
            fg.add_structure(DependencyTree(single_root=False), variables,
                             np.zeros((n + 1, n + 1)))
        # a proposition alone in its paragraph keeps an unused root variable
    if n_links and illegal.size and not strict_in_compat:
        ant = np.concatenate([np.column_stack([prop_vars[src, i], prop_vars[trg, j]])
                              for i, j in illegal])
        cons = np.tile(link_vars, illegal.shape[0])
        neg = np.zeros((ant.shape[0], 3), dtype=bool)
        neg[:, 2] = True
        fg.add_implications(ant, cons, neg)
    if n_links and required_source_label is not None and not strict_in_compat:
        fg.add_implications(link_vars[:, None], prop_vars[src, required_source_label])
    return ArgumentGraph(graph=fg, prop_vars=prop_vars, link_vars=link_vars,
                         compat_offsets=np.asarray(compat_offsets, dtype=np.int64),
                         pair_offsets=pair_offsets, root_vars=root_vars)


def _rules(n_labels, illegal_label_pairs, required_source_label):
    """``allowed[i, j]``: may a link go from a proposition labelled ``i`` to one labelled ``j``."""
    allowed = np.ones((n_labels, n_labels), dtype=bool)
    illegal = np.asarray(illegal_label_pairs, dtype=np.int64).reshape(-1, 2)
    allowed[illegal[:, 0], illegal[:, 1]] = False
    if required_source_label is not None:
        allowed[np.arange(n_labels) != required_source_label, :] = False
    return allowed


def _same_paragraph(link_pairs, proposition_paragraph, n_props):
    para = (np.zeros(n_props, dtype=np.int64) if proposition_paragraph is None
            else np.asarray(proposition_paragraph, dtype=np.int64))
    return para, para[link_pairs[:, 0]] == para[link_pairs[:, 1]]


def constraint_violations(constraints, labels, link_pairs, on, *, n_labels,
                          proposition_paragraph=None, illegal_label_pairs=(),
                          required_source_label=None, label_names=None, limit=3):
    """How a decoded structure breaks the hard constraints of :func:`build_argument_graph`.

    Parameters
    ----------
    constraints : {"cdcp", "tree", "none"}
        As in :func:`build_argument_graph`.
    labels : array-like of shape (n_props,), int
        The label of each proposition.
    link_pairs : ndarray of shape (n_links, 2), int64
        ``(source, target)`` of each candidate link.
    on : array-like of shape (n_links,), bool
        Which candidate links are on.
    n_labels : int
        Number of labels.
    proposition_paragraph, illegal_label_pairs, required_source_label :
        As in :func:`build_argument_graph`.
    label_names : sequence or None, default=None
        The name of each label, for the messages (default: its number).
    limit : int, default=3
        At most this many violations are described.

    Returns
    -------
    violations : list of str
        Empty when every constraint holds.
    """
    labels = np.asarray(labels, dtype=np.int64)
    on = np.asarray(on, dtype=bool)
    pairs = np.asarray(link_pairs, dtype=np.int64).reshape(-1, 2)
    n = labels.shape[0]
    out = []
    allowed = _rules(n_labels, illegal_label_pairs, required_source_label)
    names = list(range(n_labels)) if label_names is None else list(label_names)
    for s, t in pairs[on]:
        if not allowed[labels[s], labels[t]]:
            out.append(f"link {s} -> {t} goes from label {names[labels[s]]!r} to label "
                       f"{names[labels[t]]!r}, which the strictness rule forbids")
    A = np.zeros((n, n), dtype=bool)
    A[pairs[on, 0], pairs[on, 1]] = True
    cand = np.zeros((n, n), dtype=bool)
    cand[pairs[:, 0], pairs[:, 1]] = True
    if constraints == "cdcp":
        for s, t in pairs[on]:
            if A[t, s] and cand[t, s] and s < t:
                out.append(f"links {s} -> {t} and {t} -> {s} are both on")
            for c in np.flatnonzero(A[t]):
                if c != s and cand[s, c] and not A[s, c]:
                    out.append(f"links {s} -> {t} and {t} -> {c} are on but {s} -> {c} is "
                               "off (transitivity)")
    elif constraints == "tree":
        _, inside = _same_paragraph(pairs, proposition_paragraph, n)
        T = np.zeros((n, n), dtype=bool)
        T[pairs[on & inside, 0], pairs[on & inside, 1]] = True
        for s in np.flatnonzero(T.sum(axis=1) > 1):
            out.append(f"proposition {s} supports {np.flatnonzero(T[s]).tolist()}, more than "
                       "one proposition")
        heads = np.where(T.any(axis=1), T.argmax(axis=1), -1)
        for start in range(n):
            node, steps = start, 0
            while heads[node] >= 0 and steps <= n:
                node, steps = heads[node], steps + 1
                if node == start:
                    out.append(f"the links through proposition {start} form a cycle")
                    break
    return out[:limit]


def round_to_constraints(constraints, prop_marginals, link_marginals, link_pairs, *,
                         proposition_paragraph=None, illegal_label_pairs=(),
                         required_source_label=None):
    """A structure that satisfies the hard constraints, close to (fractional) marginals.

    Each proposition takes its most probable label. The links are then the
    feasible set (given those labels) that is close in Hamming distance to
    the link marginals ``u``, i.e. of high total ``2 u - 1``:

    - ``"none"``: the links with ``u > 0.5`` (and a legal label pair);
    - ``"tree"``: in each paragraph, the maximum spanning forest under arc
      scores ``2 u - 1`` (Chu-Liu-Edmonds, exact): every proposition supports
      at most one other and there is no cycle;
    - ``"cdcp"``: greedily, links in decreasing ``u > 0.5``, each added with
      the links transitivity then implies when the additions keep the set
      antisymmetric and legal and gain in total (a heuristic: the exact
      nearest transitive set is NP-hard).

    Parameters
    ----------
    constraints : {"cdcp", "tree", "none"}
        As in :func:`build_argument_graph`.
    prop_marginals : ndarray of shape (n_props, n_labels)
    link_marginals : ndarray of shape (n_links,)
        The probability that each candidate link is on.
    link_pairs : ndarray of shape (n_links, 2), int64
    proposition_paragraph, illegal_label_pairs, required_source_label :
        As in :func:`build_argument_graph`.

    Returns
    -------
    labels : ndarray of shape (n_props,), int64
    on : ndarray of shape (n_links,), bool
    """
    prop_marginals = np.asarray(prop_marginals, dtype=np.float64)
    n, n_labels = prop_marginals.shape
    labels = np.argmax(prop_marginals, axis=1).astype(np.int64)
    pairs = np.asarray(link_pairs, dtype=np.int64).reshape(-1, 2)
    gain = 2.0 * np.asarray(link_marginals, dtype=np.float64) - 1.0
    allowed = _rules(n_labels, illegal_label_pairs, required_source_label)
    legal = allowed[labels[pairs[:, 0]], labels[pairs[:, 1]]]
    on = (gain > 0) & legal
    if constraints == "tree":
        para, inside = _same_paragraph(pairs, proposition_paragraph, n)
        on &= ~inside  # links across paragraphs are not constrained
        tree = DependencyTree(single_root=False)
        for p in np.unique(para):
            props = np.flatnonzero(para == p)
            if props.shape[0] < 2:
                continue
            local = np.full(n, -1, dtype=np.int64)
            local[props] = np.arange(1, props.shape[0] + 1)
            links = np.flatnonzero(inside & legal & (para[pairs[:, 0]] == p))
            scores = np.full((props.shape[0] + 1,) * 2, -np.inf)
            scores[0, 1:] = 0.0
            scores[local[pairs[links, 1]], local[pairs[links, 0]]] = gain[links]
            heads = tree.map(scores)
            on[links] = heads[local[pairs[links, 0]]] == local[pairs[links, 1]]
    elif constraints == "cdcp":
        on = _greedy_transitive(n, pairs, gain, legal)
    return labels, on


def _greedy_transitive(n, pairs, gain, legal):
    """Links added by decreasing gain with their transitive consequences (see above)."""
    index = np.full((n, n), -1, dtype=np.int64)
    index[pairs[:, 0], pairs[:, 1]] = np.arange(pairs.shape[0])
    cand = index >= 0
    A = np.zeros((n, n), dtype=bool)
    for e in np.argsort(-gain, kind="stable"):
        if gain[e] <= 0:
            break
        s, t = pairs[e]
        if A[s, t] or not legal[e]:
            continue
        trial = A.copy()
        trial[s, t] = True
        added, stack, ok = [e], [(s, t)], True
        while stack and ok:
            a, b = stack.pop()
            if cand[b, a] and trial[b, a]:
                ok = False
                break
            implied = [(a, c) for c in np.flatnonzero(trial[b]) if c != a and cand[a, c]]
            implied += [(x, b) for x in np.flatnonzero(trial[:, a]) if x != b and cand[x, b]]
            for a2, c2 in implied:
                if not trial[a2, c2]:
                    k = index[a2, c2]
                    if not legal[k]:
                        ok = False
                        break
                    trial[a2, c2] = True
                    added.append(k)
                    stack.append((a2, c2))
        if ok and gain[added].sum() > 0:
            A = trial
    return A[pairs[:, 0], pairs[:, 1]]
