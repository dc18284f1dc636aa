"""Head automata: the dependents of one head on one side, with sibling and grandparent scores.

The factors of second-order dependency parsing (Koo et al. 2010; Martins,
Almeida & Smith 2013): for one head ``h`` and one side, the ``L`` candidate
modifiers are listed in *outward* order (closest to the head first) and a
structure is the subset of them that ``h`` takes as dependents. Consecutive
chosen dependents are scored as siblings, with a START state before the
first and a STOP state after the last, so the automaton's states are
numbered ``0`` (START), ``1..L`` (modifier position ``p`` is state ``p +
1``) and ``L + 1`` (STOP). The grandparent variant also picks exactly one of
``G`` candidate incoming arcs ``g -> h`` and scores every chosen modifier
together with it.

Flat layout (shared with the kernels of ``_head_automaton_fast``):
``eta_u`` is the ``G`` incoming scores then the ``L`` arc scores (``G = 0``
for :class:`HeadAutomaton`); ``eta_v`` is the upper triangle ``j < k`` of the
``(L + 2, L + 2)`` sibling scores, row-major (``(L + 1)(L + 2) / 2``
entries, the order of ``np.triu_indices(L + 2, 1)``), then the ``(G, L)``
grandparent scores, row-major.
"""

import numbers

import numpy as np

from ..utils._validation import as_part_vector, as_real_array

from ._base import ORACLE_HEAD_AUTOMATON, CompiledOracle, Parts, Structure
from ._head_automaton_fast import head_automaton_parts

__all__ = [
    "GrandparentHeadAutomaton",
    "HeadAutomaton",
    "automaton_values",
    "no_automaton_error",
]


def _n_siblings(L):
    """Number of sibling parts ``(j, k)``, ``0 <= j < k <= L + 1``."""
    return (L + 1) * (L + 2) // 2


def _sibling_index(j, k, L):
    """Position of the sibling part ``(j, k)`` in the flat layout (``j < k``)."""
    return j * (2 * L + 3 - j) // 2 + k - j - 1


# L -> np.triu_indices(L + 2, 1), read-only: encode and decode would otherwise
# rebuild them at every call (most of the time of a small automaton's encode).
_TRIU_CACHE = {}


def _upper(L):
    """Row and column indices of the sibling parts ``j < k``, row-major."""
    index = _TRIU_CACHE.get(L)
    if index is None:
        index = np.triu_indices(L + 2, 1)
        for a in index:
            a.flags.writeable = False
        _TRIU_CACHE[L] = index
    return index


def _as_scores(x, name, ndim):
    """``x`` as a C-contiguous float64 array with ``ndim`` dimensions (no value check)."""
    arr = as_real_array(x, name)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {arr.shape}.")
    return np.ascontiguousarray(arr, dtype=np.float64)


def _check_values(arr, name, where=None):
    """Reject NaN and ``+inf`` in ``arr`` (only at the entries ``where`` if given).

    ``-inf`` (a forbidden part) is allowed; the message names the first bad index.
    """
    if np.isfinite(arr).all():  # the common case, in one pass
        return
    bad = np.isnan(arr) | (arr == np.inf)
    if where is not None:
        used = np.zeros(arr.shape, dtype=bool)
        used[where] = True
        bad &= used
    if not bad.any():
        return
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    what = "NaN" if np.isnan(arr[index]) else "+inf"
    shown = index[0] if len(index) == 1 else index
    raise ValueError(
        f"{name} contains {what} at index {shown}; scores must be finite, or -inf to "
        "forbid a part."
    )


def _check_sibling_scores(sibling_scores, L):
    """The ``(L + 2, L + 2)`` sibling scores, validated on their upper triangle."""
    sib = _as_scores(sibling_scores, "sibling_scores", 2)
    if sib.shape != (L + 2, L + 2):
        raise ValueError(
            f"sibling_scores has shape {sib.shape}, expected ({L + 2}, {L + 2}) for "
            f"arc_scores with L={L} modifiers (index 0: START, p + 1: modifier p, "
            f"{L + 1}: STOP)."
        )
    # Entries with j >= k are ignored: they may hold anything, NaN included.
    _check_values(sib, "sibling_scores", _upper(L))
    return sib


def _check_modifiers(value, L, owner):
    """The chosen modifier positions of a structure value, as int64, validated."""
    try:
        items = None if isinstance(value, (str, bytes)) else list(value)
    except TypeError:
        items = None
    if items is None:
        raise ValueError(
            f"{owner}: the chosen modifiers must be a sequence of positions in 0..L-1, "
            f"got {value!r}."
        )
    for p in items:
        if isinstance(p, (bool, np.bool_)) or not isinstance(p, numbers.Integral):
            raise ValueError(
                f"{owner}: modifier positions must be integers, got {p!r} in {value!r}."
            )
        if not 0 <= p < L:
            raise ValueError(
                f"{owner}: modifier position {p} is out of range for L={L} modifiers "
                f"(positions 0..{L - 1})."
            )
    for a, b in zip(items, items[1:]):
        if b <= a:
            raise ValueError(
                f"{owner}: the chosen modifiers must be strictly increasing (outward "
                f"order, each at most once), got {tuple(int(p) for p in items)}."
            )
    return np.asarray(items, dtype=np.int64)


def _indicators(mods, g, L, G):
    """``(m, n)`` of the structure choosing ``mods`` (and incoming arc ``g`` if ``G``)."""
    T = _n_siblings(L)
    m = np.zeros(G + L)
    n = np.zeros(T + G * L)
    m[G + mods] = 1.0
    states = np.concatenate([[0], mods + 1, [L + 1]])
    n[_sibling_index(states[:-1], states[1:], L)] = 1.0
    if G:
        m[g] = 1.0
        n[T + g * L + mods] = 1.0
    return m, n


def automaton_values(rows, k, grandparent):
    """Structure values of the first ``k`` identifying rows of the compiled oracle.

    A row is ``[g, chosen_0, ..., chosen_{L-1}]`` (see ``_head_automaton_fast``);
    the values are in the form :meth:`HeadAutomaton.map` and
    :meth:`GrandparentHeadAutomaton.map` return.
    """
    out = []
    for row in rows[:k]:
        mods = tuple(int(p) for p in np.flatnonzero(row[1:]))
        out.append((int(row[0]), mods) if grandparent else mods)
    return out


def no_automaton_error(structure, parts, eta_u, eta_v):
    """The ValueError for scores under which every structure scores ``-inf``.

    ``eta_u`` and ``eta_v`` are the flat scores the oracle was called on; the
    message names the reason: every incoming arc forbidden, the forbidden
    parts leaving no path from START to STOP, or sums overflowing float64.
    """
    L, G = parts.context
    name = type(structure).__name__
    head = f"no structure of {name} has a finite score: "
    if G and np.all(eta_u[:G] == -np.inf):
        return ValueError(
            head + "every incoming score is -inf (forbidden), and exactly one incoming "
            "arc must be on."
        )
    # The same search with every allowed part scored 0: whether the forbidden
    # parts alone leave nothing, or finite sums overflowed.
    zero_u = np.where(eta_u == -np.inf, -np.inf, 0.0)
    zero_v = np.where(eta_v == -np.inf, -np.inf, 0.0)
    if head_automaton_parts(zero_u, zero_v, L, G, np.empty(L + 1, dtype=np.int64),
                            np.empty(G + L), np.empty(eta_v.shape[0])):
        return ValueError(
            head + "the sums of the scores overflow float64 (scores of magnitude near "
            "1e308)."
        )
    scores = "arc and sibling" if not G else "incoming, arc, sibling and grandparent"
    return ValueError(
        head + f"the -inf (forbidden) {scores} scores leave no path of the automaton "
        "from START to STOP."
    )


class _HeadAutomatonBase(Structure):
    """What both automata share: the oracle, indicators of the flat layout, decoding."""

    def compiled_oracle(self, parts):
        """The automaton's Viterbi, compiled (see :meth:`Structure.compiled_oracle`)."""
        if type(self).oracle is not _HeadAutomatonBase.oracle:
            return None
        L, G = parts.context
        return CompiledOracle(ORACLE_HEAD_AUTOMATON, int(L), int(G))

    def oracle(self, parts, eta_u, eta_v):
        """Viterbi on flat scores (one compiled call); see :meth:`map` for ties."""
        L, G = parts.context
        owner = f"{type(self).__name__}.oracle"
        eta_u = as_part_vector(eta_u, "eta_u", owner, G + L)
        eta_v = as_part_vector(eta_v, "eta_v", owner, _n_siblings(L) + G * L)
        row = np.empty(L + 1, dtype=np.int64)
        m = np.empty(G + L)
        n = np.empty(eta_v.shape[0])
        if not head_automaton_parts(eta_u, eta_v, L, G, row, m, n):
            raise no_automaton_error(self, parts, eta_u, eta_v)
        return automaton_values(row[None], 1, G > 0)[0], m, n

    def _decode(self, u, v, parts):
        L, G = parts.context
        T = _n_siblings(L)
        owner = f"{type(self).__name__}.decode"
        u = np.array(as_part_vector(u, "u", owner, G + L))
        v = as_part_vector(v, "v", owner, T + G * L)
        sib = np.zeros((L + 2, L + 2))
        sib[_upper(L)] = v[:T]
        return u[:G], u[G:], sib, v[T:].reshape(G, L).copy()

    def _decode_backward(self, d_incoming, d_arc, d_sibling, d_grandparent, parts):
        L, G = parts.context
        arrays = []
        for name, d, shape in (("d_incoming", d_incoming, (G,)), ("d_arc", d_arc, (L,)),
                               ("d_sibling", d_sibling, (L + 2, L + 2)),
                               ("d_grandparent", d_grandparent, (G, L))):
            d = _as_scores(d, name, len(shape))
            if d.shape != shape:
                raise ValueError(f"{name} has shape {d.shape}, expected {shape}.")
            arrays.append(d)
        d_incoming, d_arc, d_sibling, d_grandparent = arrays
        # decode writes constant zeros where j >= k: those entries are ignored.
        d_tri = d_sibling[_upper(L)]
        d_u = np.concatenate([d_incoming, d_arc])
        d_v = np.concatenate([d_tri, d_grandparent.ravel()])
        if not (np.isfinite(d_u).all() and np.isfinite(d_v).all()):
            raise ValueError("the gradient w.r.t. the marginals must be finite.")
        return d_u, d_v

    def _check_parts_shapes(self, parts, eta_u, eta_v):
        L, G = parts.context
        T = _n_siblings(L)
        owner = f"{type(self).__name__}.encode_backward"
        d_u = np.asarray(as_real_array(eta_u, f"{owner}: d_eta_u"), dtype=np.float64)
        d_v = np.asarray(as_real_array(eta_v, f"{owner}: d_eta_v"), dtype=np.float64)
        if d_u.shape != (G + L,) or d_v.shape != (T + G * L,):
            raise ValueError(
                f"{owner}: flat gradients of shapes {d_u.shape} and {d_v.shape}, expected "
                f"({G + L},) and ({T + G * L},)."
            )
        return d_u, d_v


class HeadAutomaton(_HeadAutomatonBase):
    """The dependents of one head on one side, scored by arcs and consecutive siblings.

    The ``L`` candidate modifiers are given in outward order (position 0 is
    the closest to the head). A structure is the tuple of the chosen
    positions, increasing (``()`` chooses none). With the automaton's states
    ``0`` = START, ``p + 1`` = modifier ``p`` and ``L + 1`` = STOP, the
    structure choosing states ``c_1 < ... < c_k`` scores::

        sum_i arc_scores[c_i - 1] + sibling_scores[0, c_1] + sibling_scores[c_1, c_2]
            + ... + sibling_scores[c_k, L + 1]

    and the empty one ``sibling_scores[0, L + 1]``. ``-inf`` forbids an arc
    or a sibling pair; it is an error if every structure is forbidden.

    Notes
    -----
    MAP (:meth:`map`) is Viterbi over the last chosen state in ``O(L^2)``.
    Ties are broken deterministically: the structure whose outermost chosen
    modifier is closest to the head wins (the empty structure first), then
    the one whose next-to-outermost is, and so on. (Structures whose scores
    agree mathematically but not after floating-point rounding are not
    ties.)

    Part encoding (for SparseMAP, the losses and factor graphs): ``eta_u``
    is ``arc_scores`` (``L``); ``eta_v`` the upper triangle ``j < k`` of
    ``sibling_scores`` in row-major order (``(L + 1)(L + 2) / 2``: every
    pair, only the consecutive ones of a structure are on). ``L = 0`` is
    allowed: the only structure is ``()``, with no unary part. The automaton
    has a compiled oracle, so it runs in SparseMAP's compiled active set and
    as a structure factor of a
    :class:`~sksparse_struct.inference.FactorGraph` (with ``L >= 1``; for
    ``L = 0`` it is a constant ``sibling_scores[0, 1]``).

    Examples
    --------
    >>> import numpy as np
    >>> from sksparse_struct.structures import HeadAutomaton
    >>> arc = np.array([1.0, -0.5])
    >>> sib = np.zeros((4, 4))
    >>> HeadAutomaton().map(arc, sib)
    (0,)
    >>> sib[1, 2] = 1.0  # modifier 0 followed by modifier 1
    >>> HeadAutomaton().map(arc, sib)
    (0, 1)
    >>> HeadAutomaton().score((0, 1), arc, sib), HeadAutomaton().score((), arc, sib)
    (1.5, 0.0)
    >>> from sksparse_struct.inference import sparsemap
    >>> arc_marginals, sibling_marginals = sparsemap(HeadAutomaton(), arc, sib).marginals
    >>> arc_marginals.tolist()  # half on (0, 1), half on (0,)
    [1.0, 0.5]
    """

    def encode(self, arc_scores, sibling_scores):
        """Validate the potentials and flatten them into :class:`Parts`.

        Parameters
        ----------
        arc_scores : array-like of shape (L,)
            Score of each candidate modifier (outward order); ``L >= 0``.
        sibling_scores : array-like of shape (L + 2, L + 2)
            ``sibling_scores[j, k]``, ``j < k``, scores state ``k`` following
            state ``j`` (0: START, ``p + 1``: modifier ``p``, ``L + 1``:
            STOP); entries with ``j >= k`` are ignored (never read, may hold
            anything).

        Returns
        -------
        parts : Parts
            ``eta_u`` of length ``L``, ``eta_v`` of length ``(L + 1)(L + 2)
            / 2`` and the context ``(L, 0)``.
        """
        arc = _as_scores(arc_scores, "arc_scores", 1)
        _check_values(arc, "arc_scores")
        L = arc.shape[0]
        sib = _check_sibling_scores(sibling_scores, L)
        return Parts(arc.copy(), np.ascontiguousarray(sib[_upper(L)]), (L, 0))

    def map(self, arc_scores, sibling_scores):
        """The highest-scoring set of dependents (Viterbi, ``O(L^2)``).

        Parameters
        ----------
        arc_scores, sibling_scores
            As in :meth:`encode`.

        Returns
        -------
        modifiers : tuple of int
            The chosen positions, increasing; ties as in the class Notes.

        Raises
        ------
        ValueError
            On invalid input, or if every structure has score ``-inf``.
        """
        return super().map(arc_scores, sibling_scores)

    def score(self, value, arc_scores, sibling_scores):
        """Score of the structure ``value`` (``-inf`` if it uses a forbidden part)."""
        return super().score(value, arc_scores, sibling_scores)

    def indicators(self, value, parts):
        """``(m, n)``: the chosen arcs (``L``) and the consecutive sibling pairs."""
        L, _ = parts.context
        mods = _check_modifiers(value, L, "HeadAutomaton")
        return _indicators(mods, 0, L, 0)

    def decode(self, u, v, parts):
        """``(arc (L,), sibling (L + 2, L + 2))``; zeros where ``j >= k``."""
        _, arc, sib, _ = self._decode(u, v, parts)
        return arc, sib

    def decode_backward(self, d_marginals, parts):
        """Adjoint of :meth:`decode`: ``(d_u, d_v)`` from ``(d_arc, d_sibling)``."""
        L, _ = parts.context
        if not isinstance(d_marginals, (tuple, list)) or len(d_marginals) != 2:
            raise ValueError(
                "the gradient w.r.t. HeadAutomaton marginals is a pair (d_arc, d_sibling)."
            )
        return self._decode_backward(np.zeros(0), d_marginals[0], d_marginals[1],
                                     np.zeros((0, L)), parts)

    def encode_backward(self, d_eta_u, d_eta_v, parts):
        """Gradients w.r.t. ``(arc_scores, sibling_scores)`` (zero where ``j >= k``)."""
        d_u, d_v = self._check_parts_shapes(parts, d_eta_u, d_eta_v)
        return self.decode(d_u, d_v, parts)


class GrandparentHeadAutomaton(_HeadAutomatonBase):
    """A head automaton that also picks the head's own incoming arc (grandparent parts).

    Besides the ``L`` candidate modifiers of :class:`HeadAutomaton` (outward
    order), the head ``h`` has ``G >= 1`` candidate incoming arcs ``g -> h``
    of which exactly one is on. A structure is a pair ``(g, modifiers)`` and
    scores::

        incoming_scores[g] + (the HeadAutomaton score of modifiers)
            + sum_{p in modifiers} grandparent_scores[g, p]

    ``-inf`` forbids a part; it is an error if every structure is forbidden.

    Notes
    -----
    MAP (:meth:`map`) runs the head automaton's Viterbi once per incoming
    arc, with ``grandparent_scores[g]`` added to the arcs: ``O(G L^2)``.
    Ties go to the lowest ``g``, then as in :class:`HeadAutomaton`.

    Part encoding: ``eta_u`` is ``incoming_scores`` then ``arc_scores``
    (``G + L``); ``eta_v`` the upper triangle ``j < k`` of
    ``sibling_scores`` in row-major order, then ``grandparent_scores``
    row-major (``(L + 1)(L + 2) / 2 + G L``). With ``L = 0`` the structure
    is a one-of-``G`` choice carrying the constant ``sibling_scores[0, 1]``.

    Examples
    --------
    >>> import numpy as np
    >>> from sksparse_struct.structures import GrandparentHeadAutomaton
    >>> incoming = np.array([0.0, 0.5])   # two candidate heads of the head
    >>> arc = np.array([1.0, -0.5])       # two candidate modifiers, outward
    >>> sib = np.zeros((4, 4))
    >>> grand = np.array([[0.0, 2.0],     # g = 0 likes modifier 1
    ...                   [-2.0, 0.0]])   # g = 1 dislikes modifier 0
    >>> GrandparentHeadAutomaton().map(incoming, arc, sib, grand)
    (0, (0, 1))
    >>> GrandparentHeadAutomaton().score((1, ()), incoming, arc, sib, grand)
    0.5
    """

    def encode(self, incoming_scores, arc_scores, sibling_scores, grandparent_scores):
        """Validate the potentials and flatten them into :class:`Parts`.

        Parameters
        ----------
        incoming_scores : array-like of shape (G,)
            Score of each candidate incoming arc ``g -> h``; ``G >= 1``.
        arc_scores : array-like of shape (L,)
            Score of each candidate modifier (outward order); ``L >= 0``.
        sibling_scores : array-like of shape (L + 2, L + 2)
            As in :meth:`HeadAutomaton.encode` (entries with ``j >= k``
            ignored).
        grandparent_scores : array-like of shape (G, L)
            ``grandparent_scores[g, p]`` scores modifier ``p`` together with
            the incoming arc ``g``.

        Returns
        -------
        parts : Parts
            ``eta_u`` of length ``G + L``, ``eta_v`` of length ``(L + 1)(L +
            2) / 2 + G L`` and the context ``(L, G)``.
        """
        incoming = _as_scores(incoming_scores, "incoming_scores", 1)
        _check_values(incoming, "incoming_scores")
        G = incoming.shape[0]
        if G == 0:
            raise ValueError(
                "incoming_scores is empty: a GrandparentHeadAutomaton needs at least one "
                "candidate incoming arc (use HeadAutomaton for a head without one)."
            )
        arc = _as_scores(arc_scores, "arc_scores", 1)
        _check_values(arc, "arc_scores")
        L = arc.shape[0]
        sib = _check_sibling_scores(sibling_scores, L)
        grand = _as_scores(grandparent_scores, "grandparent_scores", 2)
        if grand.shape != (G, L):
            raise ValueError(
                f"grandparent_scores has shape {grand.shape}, expected ({G}, {L}) for "
                f"G={G} incoming arcs and L={L} modifiers."
            )
        _check_values(grand, "grandparent_scores")
        eta_u = np.concatenate([incoming, arc])
        eta_v = np.concatenate([sib[_upper(L)], grand.ravel()])
        return Parts(eta_u, eta_v, (L, G))

    def map(self, incoming_scores, arc_scores, sibling_scores, grandparent_scores):
        """The highest-scoring incoming arc and set of dependents (``O(G L^2)``).

        Parameters
        ----------
        incoming_scores, arc_scores, sibling_scores, grandparent_scores
            As in :meth:`encode`.

        Returns
        -------
        (g, modifiers) : tuple of (int, tuple of int)
            The incoming arc and the chosen positions, increasing; ties as
            in the class Notes.

        Raises
        ------
        ValueError
            On invalid input, or if every structure has score ``-inf``.
        """
        return super().map(incoming_scores, arc_scores, sibling_scores, grandparent_scores)

    def score(self, value, incoming_scores, arc_scores, sibling_scores, grandparent_scores):
        """Score of the structure ``value`` (``-inf`` if it uses a forbidden part)."""
        return super().score(value, incoming_scores, arc_scores, sibling_scores,
                             grandparent_scores)

    def indicators(self, value, parts):
        """``(m, n)``: incoming arc and chosen arcs; sibling pairs and grandparent parts."""
        L, G = parts.context
        if not isinstance(value, (tuple, list)) or len(value) != 2:
            raise ValueError(
                "a GrandparentHeadAutomaton value is a pair (g, modifiers), got "
                f"{value!r}."
            )
        g, mods = value
        if isinstance(g, (bool, np.bool_)) or not isinstance(g, numbers.Integral):
            raise ValueError(
                f"GrandparentHeadAutomaton: the incoming arc must be an integer, got {g!r}."
            )
        if not 0 <= g < G:
            raise ValueError(
                f"GrandparentHeadAutomaton: incoming arc {g} is out of range for G={G} "
                f"candidates (0..{G - 1})."
            )
        mods = _check_modifiers(mods, L, "GrandparentHeadAutomaton")
        return _indicators(mods, int(g), L, G)

    def decode(self, u, v, parts):
        """``(incoming (G,), arc (L,), sibling (L + 2, L + 2), grandparent (G, L))``."""
        return self._decode(u, v, parts)

    def decode_backward(self, d_marginals, parts):
        """Adjoint of :meth:`decode`: ``(d_u, d_v)`` from the four gradients."""
        if not isinstance(d_marginals, (tuple, list)) or len(d_marginals) != 4:
            raise ValueError(
                "the gradient w.r.t. GrandparentHeadAutomaton marginals is a 4-tuple "
                "(d_incoming, d_arc, d_sibling, d_grandparent)."
            )
        return self._decode_backward(*d_marginals, parts)

    def encode_backward(self, d_eta_u, d_eta_v, parts):
        """Gradients w.r.t. ``(incoming, arc, sibling, grandparent)`` scores."""
        d_u, d_v = self._check_parts_shapes(parts, d_eta_u, d_eta_v)
        return self.decode(d_u, d_v, parts)
