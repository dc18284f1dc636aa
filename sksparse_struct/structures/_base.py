"""The Structure contract: what SparseMAP, the losses and the estimators rely on.

A structure is a set ``Y`` of discrete objects (label sequences, dependency
trees, matchings, ...). Following Niculae (2018, eq. 4.2), each ``y`` is
encoded by two indicator vectors: ``m_y`` over the *unary parts* (the parts
whose posterior SparseMAP regularizes, e.g. the label of each token or each
arc of a tree) and ``n_y`` over the *higher-order parts* (e.g. label
transitions; empty for many structures). The potentials the user passes are
flattened into matching score vectors ``eta_u`` and ``eta_v``, so that the
score of ``y`` is ``eta_u . m_y + eta_v . n_y``.

Everything generic (SparseMAP, its backward pass, the structured losses)
works with these flat vectors only, through five methods:

- :meth:`Structure.encode` validates the user's potentials and flattens them
  into :class:`Parts` (``eta_u``, ``eta_v`` and the shape context);
- :meth:`Structure.oracle` is the MAP oracle on flat potentials: it returns the
  best structure and its indicator vectors;
- :meth:`Structure.indicators` gives ``(m_y, n_y)`` for a structure value
  (e.g. a gold sequence);
- :meth:`Structure.decode` reshapes flat posteriors ``(u, v)`` into the public
  layout of the structure's marginals;
- :meth:`Structure.encode_backward` maps gradients with respect to the flat
  scores back to the user's potentials (the adjoint of ``encode``).

Forbidden parts carry the score ``-inf``; generic code never multiplies them
by a zero indicator (``0 * -inf`` is NaN) but sums the scores of the parts a
structure uses.

Adding your own structure
-------------------------
A structure whose only potentials are one array of unary scores (one score per
part, no higher-order parts) only needs a MAP function. Subclass
:class:`UnaryStructure` and implement ``_map_unary(scores)``, returning the
best structure for a (validated, float64) score array of the shape the user
passes, and ``_indicators_unary(value, shape)``, returning the 0/1 array of
that shape marking the parts the structure ``value`` uses. For instance, a
structure "pick exactly two of K items"::

    class PickTwo(UnaryStructure):
        def _map_unary(self, scores):
            return np.sort(np.argsort(-scores, kind="stable")[:2])

        def _indicators_unary(self, value, shape):
            m = np.zeros(shape)
            m[np.asarray(value)] = 1.0
            return m

SparseMAP then works on it at once: ``sparsemap(PickTwo(), scores)``.
Structures with higher-order parts implement the four methods of
:class:`Structure` directly.
"""

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..utils._validation import as_part_vector, as_real_array, check_scores

__all__ = ["CompiledOracle", "Parts", "Structure", "UnaryStructure", "check_part_scores",
           "dot_masked"]

# Oracles the compiled solvers can call (``CompiledOracle.kind``); their code
# is ``_oracle`` in ``inference/_sparsemap_fast.py``.
ORACLE_TREE = 0
ORACLE_SEQUENCE = 1
ORACLE_PROJECTIVE_TREE = 2
ORACLE_HEAD_AUTOMATON = 3
ORACLE_SIBLING_TREE = 4


class CompiledOracle(NamedTuple):
    """How compiled code calls a structure's MAP oracle (:meth:`Structure.compiled_oracle`).

    Attributes
    ----------
    kind : int
        Which compiled oracle: ``ORACLE_TREE`` (Chu-Liu-Edmonds on ``n``
        words, the ``n * n`` arc scores of :class:`DependencyTree`),
        ``ORACLE_PROJECTIVE_TREE`` (Eisner, likewise), ``ORACLE_SEQUENCE``
        (Viterbi on ``n`` positions and ``K`` labels, the flat unary scores
        and ``K * K`` transitions of :class:`Sequence`) or
        ``ORACLE_HEAD_AUTOMATON`` (Viterbi over ``n`` modifiers, once per
        each of ``K`` incoming arcs, in the flat layout of
        :class:`HeadAutomaton` (``K = 0``) and
        :class:`GrandparentHeadAutomaton`) or ``ORACLE_SIBLING_TREE``
        (second-order Eisner on ``n`` words, the flat layout of
        :class:`ProjectiveSiblingTree`).
    n : int
        Size of the instance (words, positions, modifiers).
    K : int
        Number of labels (sequences), of incoming arcs (head automata; 0
        for the plain one); 0 otherwise.
    single_root : bool
        Trees: whether the root has exactly one child.
    """

    kind: int
    n: int
    K: int = 0
    single_root: bool = False


@dataclass(frozen=True)
class Parts:
    """Validated potentials of one structured instance, as flat part scores.

    Attributes
    ----------
    eta_u : ndarray of shape (n_unary_parts,), float64
        Scores of the unary parts; ``-inf`` marks a forbidden part.
    eta_v : ndarray of shape (n_higher_order_parts,), float64
        Scores of the higher-order parts (possibly empty).
    context : object
        Whatever the structure needs to decode flat vectors back to its public
        layout (typically shapes). Opaque to generic code.
    """

    eta_u: np.ndarray
    eta_v: np.ndarray
    context: Any = None


class Structure(ABC):
    """A set of discrete structures with a MAP oracle and a part encoding.

    Subclasses implement :meth:`encode`, :meth:`oracle`, :meth:`indicators`,
    :meth:`decode` and :meth:`encode_backward` (and may override the generic
    :meth:`decode_backward`, the adjoint of :meth:`decode` that SparseMAP's
    backward pass uses); the public :meth:`map` and
    :meth:`score` are built on them. Structures with tractable marginals also implement
    ``marginals`` (returning the marginals in the layout of :meth:`decode`
    followed by ``log_z``) and ``marginals_backward``. Structures are plain
    objects holding only their (hashable) options, so they pickle.
    """

    #: Whether :meth:`marginals` is tractable for this structure.
    has_marginals = False

    @abstractmethod
    def encode(self, *potentials):
        """Validate the user's potentials and flatten them into :class:`Parts`."""

    @abstractmethod
    def oracle(self, parts, eta_u, eta_v):
        """MAP on flat potentials.

        Parameters
        ----------
        parts : Parts
            The encoded instance (its ``context`` gives the shapes; its own
            ``eta_u`` / ``eta_v`` are ignored in favour of the arguments).
        eta_u, eta_v : ndarray of float64
            Flat part scores, of the lengths of ``parts.eta_u`` and
            ``parts.eta_v`` (SparseMAP calls the oracle on modified scores).

        Returns
        -------
        value : object
            The best structure, in the form :meth:`map` returns. Ties are
            broken deterministically.
        m, n : ndarray of float64
            Its indicator vectors over the unary and higher-order parts.
        """

    @abstractmethod
    def indicators(self, value, parts):
        """``(m, n)``: indicator vectors of the structure ``value``."""

    @abstractmethod
    def decode(self, u, v, parts):
        """Flat posteriors ``(u, v)`` in the public layout of the marginals."""

    @abstractmethod
    def encode_backward(self, d_eta_u, d_eta_v, parts):
        """Adjoint of :meth:`encode`: gradients w.r.t. the user's potentials.

        Given the gradient of a loss with respect to the flat part scores
        ``eta_u`` and ``eta_v``, return a tuple with one gradient per
        potential argument of :meth:`encode`, in the same order and shapes
        (``None`` for an optional potential the user did not pass).
        """

    def decode_backward(self, d_marginals, parts):
        """Adjoint of :meth:`decode`: ``(d_u, d_v)`` from a gradient on the marginals.

        ``d_marginals`` has the layout :meth:`decode` returns (one array, or a
        tuple of arrays). :meth:`decode` is linear, so this default applies it
        to every unit vector (one call per part); structures whose decode is a
        reshape or a concatenation should override it with the direct adjoint.
        """
        n_u, n_v = parts.eta_u.shape[0], parts.eta_v.shape[0]
        target = _flatten_layout(d_marginals)
        d_flat = np.empty(n_u + n_v)
        unit = np.zeros(n_u + n_v)
        for i in range(n_u + n_v):
            unit[i] = 1.0
            column = _flatten_layout(self.decode(unit[:n_u], unit[n_u:], parts))
            if column.shape != target.shape:
                raise ValueError(
                    f"the gradient w.r.t. the marginals has {target.shape[0]} entries, "
                    f"the marginals of {self!r} have {column.shape[0]}."
                )
            d_flat[i] = column @ target
            unit[i] = 0.0
        return d_flat[:n_u], d_flat[n_u:]

    def compiled_oracle(self, parts):
        """The structure's MAP oracle as compiled solvers call it, or None.

        SparseMAP's compiled active set and AD3's structure factors run
        entirely in compiled code when the structure returns a
        :class:`CompiledOracle` for the instance ``parts``; otherwise they
        call :meth:`oracle` from Python (slower, same results). The default
        is None. A subclass that overrides :meth:`oracle` must override this
        too (the built-in structures return None for subclasses that
        override their oracle).
        """
        return None

    def map(self, *potentials):
        """The highest-scoring structure."""
        parts = self.encode(*potentials)
        value, _, _ = self.oracle(parts, parts.eta_u, parts.eta_v)
        return value

    def score(self, value, *potentials):
        """Score ``eta_u . m + eta_v . n`` of the structure ``value``."""
        parts = self.encode(*potentials)
        m, n = self.indicators(value, parts)
        return float(dot_masked(parts.eta_u, m) + dot_masked(parts.eta_v, n))

    def marginals(self, *potentials):
        """Marginals and log-partition function (where tractable)."""
        raise TypeError(
            f"{type(self).__name__} has no tractable marginal inference; use "
            "MAP or SparseMAP (sksparse_struct.inference.sparsemap) instead."
        )

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({params})"

    def __eq__(self, other):
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self):
        return hash((type(self).__name__, tuple(sorted(vars(self).items()))))


def _flatten_layout(arrays):
    """Concatenate an array or a tuple of arrays into one flat float64 vector."""
    if isinstance(arrays, (tuple, list)):
        return np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in arrays])
    return np.asarray(arrays, dtype=np.float64).ravel()


def check_part_scores(scores, ndim, owner):
    """Validate an array of part scores with ``ndim`` dimensions.

    NaN, ``+inf``, non-numeric and empty arrays are rejected, naming the
    position. ``-inf`` (a forbidden part) is allowed everywhere, even on every
    part: whether any structure remains is the structure's call (the empty
    subset of a budget uses no part; a one-of-K choice has none left).

    Returns
    -------
    scores : ndarray of float64, C-contiguous, of the input's shape
    """
    arr = np.asarray(scores)
    if arr.ndim != ndim:
        raise ValueError(
            f"{owner} expects scores with {ndim} dimension(s), got shape {arr.shape}."
        )
    if arr.size == 0:
        raise ValueError(f"{owner} needs at least one item, got scores of shape {arr.shape}.")
    check_scores(arr.reshape(1, -1), "scores", allow_all_masked=True)
    return np.ascontiguousarray(arr, dtype=np.float64)


def dot_masked(eta, indicator):
    """``eta . indicator`` where ``0 * -inf`` counts as 0 (unused forbidden parts)."""
    used = indicator != 0
    return float(np.dot(eta[used], indicator[used]))


class UnaryStructure(Structure):
    """A structure whose only potentials are one array of unary part scores.

    Subclasses implement ``_map_unary(scores)`` → value and
    ``_indicators_unary(value, shape)`` → 0/1 array of ``scores``' shape; see
    the module docstring. The marginals layout is the shape of ``scores``.
    """

    #: Number of dimensions the scores array must have.
    scores_ndim = 1

    def encode(self, scores):
        scores = check_part_scores(scores, self.scores_ndim, type(self).__name__)
        return Parts(scores.ravel(), np.zeros(0), scores.shape)

    def oracle(self, parts, eta_u, eta_v):
        scores = self._flat_scores(eta_u, "eta_u", "oracle", parts).reshape(parts.context)
        value = self._map_unary(scores)
        m, n = self.indicators(value, parts)
        return value, m, n

    def indicators(self, value, parts):
        m = np.asarray(self._indicators_unary(value, parts.context), dtype=np.float64)
        return m.ravel(), np.zeros(0)

    def decode(self, u, v, parts):
        return self._flat_scores(u, "u", "decode", parts).reshape(parts.context)

    def encode_backward(self, d_eta_u, d_eta_v, parts):
        d_u = self._flat_scores(d_eta_u, "d_eta_u", "encode_backward", parts)
        return (d_u.reshape(parts.context),)

    def decode_backward(self, d_marginals, parts):
        owner = f"{type(self).__name__}.decode_backward"
        d_u = np.asarray(as_real_array(d_marginals, f"{owner}: d_marginals"), dtype=np.float64)
        if d_u.shape != tuple(parts.context):
            raise ValueError(
                f"the gradient w.r.t. the marginals has shape {d_u.shape}, the "
                f"marginals have shape {tuple(parts.context)}."
            )
        return d_u.ravel(), np.zeros(0)

    def _flat_scores(self, x, name, method, parts):
        """``x`` checked as a flat float64 vector with one entry per part."""
        owner = f"{type(self).__name__}.{method}"
        return as_part_vector(x, name, owner, math.prod(parts.context))

    @abstractmethod
    def _map_unary(self, scores):
        """Best structure for validated float64 ``scores``."""

    @abstractmethod
    def _indicators_unary(self, value, shape):
        """0/1 array of shape ``shape`` marking the parts used by ``value``."""
