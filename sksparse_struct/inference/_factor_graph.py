"""Factor graphs over binary variables, for LP-MAP inference with AD3.

A :class:`FactorGraph` holds ``n_variables`` binary variables (a variable
with ``K`` states is a one-of-``K`` group of binaries tied by an XOR factor)
and factors of two sorts:

- *hard* factors, which only restrict the assignments: XOR (exactly one),
  AtMostOne, OR of literals (a literal is a variable or its negation), and
  implications (an OR of negated antecedents and the consequent);
- *scored* factors, which add marginals of their own with scores given at
  solve time: the pair factor (``z = x AND y``), the dense factor (a
  distribution over given configurations of its variables) and structures
  with a compiled MAP oracle
  (:meth:`~sksparse_struct.structures.Structure.compiled_oracle`:
  dependency trees, label sequences) whose unary parts are bound to
  variables.

The scores of the scored factors are one flat array, concatenated in the
order the factors were added; ``factor_offsets`` gives each factor's slice.
"""

from typing import NamedTuple

import numpy as np

from ..structures import Parts, Structure
from ..utils._validation import check_integer
from ._ad3_fast import (
    AT_MOST_ONE,
    DENSE,
    OR,
    PAIR,
    STRUCT,
    XOR,
    DenseTables,
    GraphArrays,
    GraphData,
    StructureTable,
)

__all__ = ["FactorGraph"]


class CompiledGraph(NamedTuple):
    """A factor graph as flat arrays: the kernels' named tuples, and what Python code reads.

    ``arrays``, ``dense`` and ``structs`` are what the compiled solver reads
    (see ``_ad3_fast``), ``data`` the three behind one reference, as the
    solver takes them; the other fields repeat some of them for Python
    readers (the HiGHS formulation, branch-and-bound) and keep the
    structures themselves.
    """

    n_variables: int
    data: GraphData
    arrays: GraphArrays
    dense: DenseTables
    structs: StructureTable
    f_type: np.ndarray
    f_start: np.ndarray
    slot_var: np.ndarray
    slot_neg: np.ndarray
    f_score: np.ndarray
    f_table: np.ndarray
    deg: np.ndarray
    n_scores: int
    structures: tuple  # (factor index, structure, parts, score offset, n_v)
    tables: tuple  # dense configuration tables (n_c, arity) uint8
    masks: tuple  # their forbidden configurations
    # The solver's idle workspaces (``_ad3_fast.Workspace``), kept between
    # solves and allocated on first use (``_ad3._run``).
    workspaces: list


#: The factor kinds, by code (``f_type``): each is one function of
#: ``_ad3_fast`` and one line of its table ``factor_op``.
FACTOR_KINDS = {XOR: "XOR", AT_MOST_ONE: "AtMostOne", OR: "OR", PAIR: "pair", DENSE: "dense",
                STRUCT: "structure"}


class FactorGraph:
    """A factor graph over binary variables.

    Parameters
    ----------
    n_variables : int
        Number of binary variables, identified by ``0 .. n_variables - 1``.

    Attributes
    ----------
    n_variables : int
        Number of binary variables.
    n_factors : int
        Number of factors added.
    n_factor_scores : int
        Length of the ``factor_scores`` array the solvers expect (the sum of
        the sizes of the scored factors).
    factor_offsets : ndarray of shape (n_scored_factors + 1,), int64
        Scored factor ``k`` (in the order added) reads its scores from, and
        returns its marginals in, ``factor_scores[factor_offsets[k]:
        factor_offsets[k + 1]]``.

    Notes
    -----
    Every ``add_*`` method has a bulk twin (``add_xors``, ``add_pairs``, ...)
    taking one factor per row, much faster for thousands of factors. The
    scored ones return the offsets of their scores in ``factor_scores``.

    Examples
    --------
    Two three-state variables ``a`` (binaries 0-2) and ``b`` (3-5) that may
    not take the same state: at most one of ``a = k`` and ``b = k``, for
    each ``k``:

    >>> from sksparse_struct.inference import FactorGraph
    >>> fg = FactorGraph(6)
    >>> fg.add_xor([0, 1, 2])
    >>> fg.add_xor([3, 4, 5])
    >>> for k in range(3):
    ...     fg.add_at_most_one([k, 3 + k])
    >>> fg.n_factors, fg.n_factor_scores
    (5, 0)
    """

    def __init__(self, n_variables):
        self.n_variables = check_integer(n_variables, "n_variables", minimum=0)
        self._blocks = []  # (kind, V, neg, score_offsets, table)
        self._structures = []  # (structure, variables, parts, score offset, n_v)
        self._tables = []
        self._masks = []
        self._table_index = {}
        self._sizes = []  # sizes of the scored factors, in order
        self._n_scores = 0
        self._n_factors = 0
        self._compiled = None

    # -- bookkeeping --------------------------------------------------------

    @property
    def n_factors(self):
        return self._n_factors

    @property
    def n_factor_scores(self):
        return self._n_scores

    @property
    def factor_offsets(self):
        return np.concatenate([[0], np.cumsum(np.asarray(self._sizes, dtype=np.int64))]).astype(
            np.int64)

    def __repr__(self):
        return (f"FactorGraph(n_variables={self.n_variables}, n_factors={self.n_factors}, "
                f"n_factor_scores={self.n_factor_scores})")

    def _variable_ids(self, arr, name):
        """``arr`` as int64 variable ids (integral values), or the error."""
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            if not (np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr))):
                raise ValueError(f"{name}: variable ids must be integers, got dtype {arr.dtype}.")
        return arr.astype(np.int64)

    def _check_vars(self, variables, name, min_arity=1):
        """Validate a 2-D array of variable ids, one factor per row."""
        arr = np.asarray(variables)
        if arr.ndim != 2:
            raise ValueError(f"{name}: expected one factor per row (2-D), got shape {arr.shape}.")
        arr = self._variable_ids(arr, name)
        if arr.shape[1] < min_arity:
            raise ValueError(
                f"{name}: a factor needs at least {min_arity} variable(s), got {arr.shape[1]}.")
        if arr.size:
            bad = (arr < 0) | (arr >= self.n_variables)
            if bad.any():
                r, c = np.argwhere(bad)[0]
                raise ValueError(
                    f"{name}: factor {r} refers to variable {arr[r, c]}, outside "
                    f"0..{self.n_variables - 1}.")
            srt = np.sort(arr, axis=1)
            dup = (srt[:, 1:] == srt[:, :-1]).any(axis=1)
            if dup.any():
                r = int(np.flatnonzero(dup)[0])
                raise ValueError(
                    f"{name}: factor {r} uses a variable twice ({arr[r].tolist()}); the "
                    "variables of a factor must be distinct.")
        return np.ascontiguousarray(arr)

    def _check_neg(self, negated, shape, name):
        if negated is None:
            return np.zeros(shape, dtype=np.bool_)
        neg = np.asarray(negated)
        if neg.shape != shape:
            raise ValueError(
                f"{name}: negated must have the shape of the variables, {shape}, got {neg.shape}.")
        if neg.dtype != np.bool_:
            if not np.all((neg == 0) | (neg == 1)):
                raise ValueError(f"{name}: negated must hold booleans.")
        return np.ascontiguousarray(neg.astype(np.bool_))

    def _add_block(self, kind, V, neg, sizes, table=-1):
        n = V.shape[0]
        offsets = None
        if sizes:
            offsets = self._n_scores + sizes * np.arange(n, dtype=np.int64)
            self._sizes.extend([sizes] * n)
            self._n_scores += sizes * n
        if n:
            self._blocks.append((kind, V, neg, offsets, table))
        self._n_factors += n
        self._compiled = None
        return offsets

    # -- hard factors -------------------------------------------------------

    def add_xor(self, variables):
        """Exactly one of ``variables`` is 1 (a one-of-K group)."""
        self.add_xors([variables])

    def add_xors(self, variables):
        """One XOR factor per row of the 2-D array ``variables``."""
        V = self._check_vars(variables, "add_xor")
        self._add_block(XOR, V, np.zeros(V.shape, dtype=np.bool_), 0)

    def add_at_most_one(self, variables):
        """At most one of ``variables`` is 1."""
        self.add_at_most_ones([variables])

    def add_at_most_ones(self, variables):
        """One AtMostOne factor per row of the 2-D array ``variables``."""
        V = self._check_vars(variables, "add_at_most_one")
        self._add_block(AT_MOST_ONE, V, np.zeros(V.shape, dtype=np.bool_), 0)

    def add_or(self, variables, negated=None):
        """At least one literal is true; literal ``i`` is ``NOT x`` where ``negated[i]``."""
        self.add_ors([variables], None if negated is None else [negated])

    def add_ors(self, variables, negated=None):
        """One OR factor per row of ``variables`` (and of ``negated``)."""
        V = self._check_vars(variables, "add_or")
        neg = self._check_neg(negated, V.shape, "add_or")
        self._add_block(OR, V, neg, 0)

    def add_implication(self, antecedents, consequent, negated=None):
        """``AND(antecedents) => consequent``, one OR factor of literals.

        Parameters
        ----------
        antecedents : sequence of int
            Variables whose conjunction implies the consequent.
        consequent : int
            The implied variable.
        negated : sequence of bool of length ``len(antecedents) + 1``, default=None
            Which literals are negated, antecedents first, then the
            consequent: e.g. ``x AND y => NOT z`` is
            ``add_implication([x, y], z, negated=[False, False, True])``.
        """
        self.add_implications([antecedents], [consequent],
                              None if negated is None else [negated])

    def add_implications(self, antecedents, consequents, negated=None):
        """One implication per row of ``antecedents`` (2-D) and ``consequents`` (1-D)."""
        A = self._check_vars(antecedents, "add_implication")
        c = np.asarray(consequents)
        if c.ndim != 1 or c.shape[0] != A.shape[0]:
            raise ValueError(
                f"add_implication: consequents must be 1-D with one entry per row of "
                f"antecedents ({A.shape[0]}), got shape {c.shape}.")
        V = self._check_vars(np.column_stack([A, c]) if A.shape[0] else
                             np.zeros((0, A.shape[1] + 1), dtype=np.int64), "add_implication")
        neg = self._check_neg(negated, V.shape, "add_implication")
        # a1 AND ... AND ak => c  <=>  NOT a1 OR ... OR NOT ak OR c
        lit = neg.copy()
        lit[:, :-1] = ~neg[:, :-1]
        self._add_block(OR, V, lit, 0)

    # -- scored factors -----------------------------------------------------

    def add_pair(self, x, y):
        """A pair factor: one extra marginal ``z = P(x AND y)``, one score.

        Returns
        -------
        offset : int
            Position of its score in ``factor_scores``.
        """
        return int(self.add_pairs([[x, y]])[0])

    def add_pairs(self, pairs):
        """One pair factor per row ``(x, y)`` of ``pairs``; returns their offsets."""
        V = self._check_vars(np.asarray(pairs).reshape(-1, 2) if np.size(pairs) else
                             np.zeros((0, 2), dtype=np.int64), "add_pair")
        return self._add_block(PAIR, V, np.zeros(V.shape, dtype=np.bool_), 1)

    def add_dense(self, variables, configurations, forbidden=None):
        """A dense factor: a distribution over given 0/1 configurations.

        Parameters
        ----------
        variables : sequence of int
            The factor's variables.
        configurations : array-like of shape (n_configurations, len(variables))
            The allowed joint 0/1 values of the variables, one per row (no
            duplicates); any other joint value is forbidden. Configuration
            ``c`` scores ``factor_scores[offset + c]``.
        forbidden : array-like of bool of shape (n_configurations,), default=None
            Configurations that are listed (they keep their place in the
            scores' layout) but not allowed: their scores are ignored and
            their marginals are 0.

        Returns
        -------
        offset : int
            Position of its first score in ``factor_scores``.
        """
        return int(self.add_denses([variables], configurations, forbidden)[0])

    def add_denses(self, variables, configurations, forbidden=None):
        """One dense factor per row of ``variables``, all with the same configurations."""
        V = self._check_vars(variables, "add_dense")
        C = np.asarray(configurations)
        if C.ndim != 2 or C.shape[1] != V.shape[1] or C.shape[0] == 0:
            raise ValueError(
                f"add_dense: configurations must be a non-empty 2-D array with one column "
                f"per variable ({V.shape[1]}), got shape {C.shape}.")
        if not np.all((C == 0) | (C == 1)):
            raise ValueError("add_dense: configurations must hold 0/1 values.")
        C = np.ascontiguousarray(C.astype(np.uint8))
        if np.unique(C, axis=0).shape[0] != C.shape[0]:
            raise ValueError("add_dense: configurations has duplicate rows.")
        if forbidden is None:
            mask = np.zeros(C.shape[0], dtype=np.bool_)
        else:
            mask = np.asarray(forbidden)
            if mask.shape != (C.shape[0],) or not np.all((mask == 0) | (mask == 1)):
                raise ValueError(
                    f"add_dense: forbidden must be {C.shape[0]} booleans, one per "
                    f"configuration, got shape {mask.shape}.")
            mask = mask.astype(np.bool_)
            if mask.all():
                raise ValueError("add_dense: every configuration is forbidden.")
        key = (C.shape, C.tobytes(), mask.tobytes())
        table = self._table_index.get(key)
        if table is None:
            table = len(self._tables)
            self._tables.append(C)
            self._masks.append(mask)
            self._table_index[key] = table
        return self._add_block(DENSE, V, np.zeros(V.shape, dtype=np.bool_), C.shape[0], table)

    def add_structure(self, structure, variables, *potentials):
        """A structure factor: a distribution over the structures of ``structure``.

        Parameters
        ----------
        structure : Structure
            A structure with a compiled MAP oracle
            (:meth:`~sksparse_struct.structures.Structure.compiled_oracle`):
            :class:`~sksparse_struct.structures.DependencyTree` (projective
            or not), :class:`~sksparse_struct.structures.ProjectiveSiblingTree`,
            :class:`~sksparse_struct.structures.Sequence`,
            :class:`~sksparse_struct.structures.HeadAutomaton` or
            :class:`~sksparse_struct.structures.GrandparentHeadAutomaton`.
        variables : array-like of int
            One variable per unary part of the structure, in the order of its
            flat encoding (``structure.encode(*potentials).eta_u``); e.g. for
            a :class:`~sksparse_struct.structures.DependencyTree`, the arcs in
            modifier-major order. The structure's unary marginals are these
            variables.
        *potentials
            Potentials for ``structure.encode``: they fix the shape and give
            fixed scores of the parts (usually zeros; ``-inf`` forbids a
            part).

        Returns
        -------
        offset : int
            Position in ``factor_scores`` of the scores of the structure's
            higher-order parts (it has as many scores as such parts, often
            none), whose marginals come back there.
        """
        if not isinstance(structure, Structure):
            raise ValueError(
                f"add_structure: structure must be a sksparse_struct.structures.Structure, "
                f"got {type(structure).__name__}.")
        return self.add_structure_parts(structure, variables, structure.encode(*potentials))

    def add_structure_parts(self, structure, variables, parts):
        """:meth:`add_structure` with potentials already encoded by ``structure.encode``.

        For graphs with many factors of a few shapes (e.g. the head automata
        of a second-order parser): the potentials of each shape are encoded
        once and their :class:`~sksparse_struct.structures.Parts` reused.

        Parameters
        ----------
        structure : Structure
            As in :meth:`add_structure`.
        variables : array-like of int
            As in :meth:`add_structure`.
        parts : Parts
            ``structure.encode(*potentials)`` (read, not copied: do not
            modify it afterwards).

        Returns
        -------
        offset : int
            As in :meth:`add_structure`.
        """
        if not isinstance(structure, Structure):
            raise ValueError(
                f"add_structure: structure must be a sksparse_struct.structures.Structure, "
                f"got {type(structure).__name__}.")
        if not isinstance(parts, Parts):
            raise ValueError("add_structure: structure.encode did not return Parts.")
        V = self._check_vars(np.asarray(variables).reshape(1, -1), "add_structure")[0]
        n_u = parts.eta_u.shape[0]
        if V.shape[0] != n_u:
            raise ValueError(
                f"add_structure: {type(structure).__name__} has {n_u} unary parts for these "
                f"potentials, got {V.shape[0]} variables.")
        self._check_structure_parts(structure, parts)
        n_v = parts.eta_v.shape[0]
        offset = self._n_scores
        self._sizes.append(n_v)
        self._n_scores += n_v
        self._structures.append((structure, V, parts, offset, n_v))
        self._n_factors += 1
        self._compiled = None
        return offset

    def add_structures_parts(self, structure, variables, parts):
        """Many factors of one structure class at once: :meth:`add_structure_parts` in bulk.

        The same result as one :meth:`add_structure_parts` per factor, in
        order, with the checks done once over all of them (graphs with
        hundreds of small factors, such as a second-order parser's head
        automata, are built in a fraction of the time).

        Parameters
        ----------
        structure : Structure
            As in :meth:`add_structure`; every factor is of this structure.
        variables : array-like of int
            The factors' variables, concatenated (factor ``i`` takes the
            next ``parts[i].eta_u.shape[0]`` of them).
        parts : sequence of Parts
            Each factor's ``structure.encode(...)`` (read, not copied; the
            same object may serve many factors).

        Returns
        -------
        offsets : ndarray of shape (len(parts),), int64
            Each factor's offset in ``factor_scores``, as
            :meth:`add_structure` returns it.
        """
        if not isinstance(structure, Structure):
            raise ValueError(
                f"add_structure: structure must be a sksparse_struct.structures.Structure, "
                f"got {type(structure).__name__}.")
        parts = list(parts)
        distinct = {id(p): p for p in parts}
        for p in distinct.values():
            if not isinstance(p, Parts):
                raise ValueError("add_structure: structure.encode did not return Parts.")
            self._check_structure_parts(structure, p)
        n_u = np.fromiter((p.eta_u.shape[0] for p in parts), dtype=np.int64, count=len(parts))
        n_v = np.fromiter((p.eta_v.shape[0] for p in parts), dtype=np.int64, count=len(parts))
        V = np.ascontiguousarray(self._variable_ids(np.asarray(variables).reshape(-1),
                                                    "add_structure"))
        if V.shape[0] != n_u.sum():
            raise ValueError(
                f"add_structure: the {len(parts)} {type(structure).__name__} factors have "
                f"{int(n_u.sum())} unary parts together, got {V.shape[0]} variables.")
        ends = np.cumsum(n_u)
        starts = ends - n_u
        if V.shape[0]:
            bad = (V < 0) | (V >= self.n_variables)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(
                    f"add_structure: factor {int(np.searchsorted(ends, i, side='right'))} of "
                    f"the batch refers to variable {V[i]}, outside 0..{self.n_variables - 1}.")
            # The variables of each factor must be distinct (shared across factors is fine).
            factor = np.repeat(np.arange(len(parts)), n_u)
            order = np.lexsort((V, factor))
            same = (factor[order][1:] == factor[order][:-1]) & (V[order][1:] == V[order][:-1])
            if same.any():
                f = int(factor[order][1:][same][0])
                raise ValueError(
                    f"add_structure: factor {f} of the batch uses a variable twice "
                    f"({V[starts[f]:ends[f]].tolist()}); the variables of a factor must be "
                    "distinct.")
        offsets = self._n_scores + np.concatenate([[0], np.cumsum(n_v)[:-1]]).astype(np.int64) \
            if len(parts) else np.zeros(0, dtype=np.int64)
        self._structures.extend(
            (structure, V[b:e], p, o, k)
            for b, e, p, o, k in zip(starts.tolist(), ends.tolist(), parts, offsets.tolist(),
                                     n_v.tolist()))
        self._sizes.extend(n_v.tolist())
        self._n_scores += int(n_v.sum())
        self._n_factors += len(parts)
        self._compiled = None
        return offsets

    def _check_structure_parts(self, structure, parts):
        if np.isnan(parts.eta_u).any() or (parts.eta_u == np.inf).any():
            raise ValueError("add_structure: the part scores must be finite or -inf.")
        if structure.compiled_oracle(parts) is None:
            raise ValueError(
                f"add_structure: {type(structure).__name__} has no compiled MAP oracle "
                "(Structure.compiled_oracle), which the factor-graph solvers run on; "
                "DependencyTree, Sequence, HeadAutomaton and GrandparentHeadAutomaton "
                "have one. A one-of-K choice is add_xor, "
                "at most one is add_at_most_one, and a small structure can be listed "
                "with add_dense.")

    # -- compilation --------------------------------------------------------

    def compile(self):
        """The flat arrays the kernels read (cached until the next ``add``)."""
        if self._compiled is None:
            self._compiled = self._compile()
        return self._compiled

    def _compile(self):
        types, starts, svar, sneg, fscore, ftable = [], [], [], [], [], []
        for kind, V, neg, offsets, table in self._blocks:
            n, a = V.shape
            types.append(np.full(n, kind, dtype=np.int64))
            starts.append(np.full(n, a, dtype=np.int64))
            svar.append(V.ravel())
            sneg.append(neg.ravel())
            fscore.append(offsets if offsets is not None else np.full(n, -1, dtype=np.int64))
            ftable.append(np.full(n, table, dtype=np.int64))
        n_block_factors = sum(len(t) for t in types)
        structures = [(n_block_factors + j, structure, parts, offset, n_v)
                      for j, (structure, _, parts, offset, n_v) in enumerate(self._structures)]
        n_struct = len(self._structures)
        if n_struct:
            arity = np.fromiter((item[1].shape[0] for item in self._structures),
                                dtype=np.int64, count=n_struct)
            types.append(np.full(n_struct, STRUCT, dtype=np.int64))
            starts.append(arity)
            svar.append(np.concatenate([item[1] for item in self._structures]))
            sneg.append(np.zeros(int(arity.sum()), dtype=np.bool_))
            fscore.append(np.fromiter((item[3] for item in self._structures), dtype=np.int64,
                                      count=n_struct))
            ftable.append(np.full(n_struct, -1, dtype=np.int64))

        def cat(parts, dtype):
            return (np.ascontiguousarray(np.concatenate(parts).astype(dtype)) if parts
                    else np.zeros(0, dtype=dtype))

        f_type = cat(types, np.int64)
        sizes = cat(starts, np.int64)
        f_start = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        slot_var = cat(svar, np.int64)
        slot_neg = cat(sneg, np.bool_)
        f_score = cat(fscore, np.int64)
        f_table = cat(ftable, np.int64)
        f_aux = f_table.copy()
        f_aux[n_block_factors:] = np.arange(len(structures), dtype=np.int64)
        slot_factor = np.repeat(np.arange(f_type.shape[0], dtype=np.int64), sizes)
        deg = np.bincount(slot_var, minlength=self.n_variables).astype(np.int64)
        v_slots = np.argsort(slot_var, kind="stable").astype(np.int64)
        v_ptr = np.concatenate([[0], np.cumsum(deg)]).astype(np.int64)
        arrays = GraphArrays(f_type, f_start, slot_var, slot_neg, f_score, f_aux, v_ptr,
                             v_slots, slot_factor, deg)
        dense = self._dense_tables()
        structs = _structure_table(self._structures)
        return CompiledGraph(
            n_variables=self.n_variables,
            data=GraphData(arrays, dense, structs if self._structures else None),
            arrays=arrays, dense=dense, structs=structs, f_type=f_type, f_start=f_start,
            slot_var=slot_var, slot_neg=slot_neg, f_score=f_score, f_table=f_table, deg=deg,
            n_scores=self._n_scores, structures=tuple(structures),
            tables=tuple(self._tables), masks=tuple(self._masks), workspaces=[],
        )

    def _dense_tables(self):
        """Each configuration's sorted "on" positions (no Gram matrix: it is n_c^2)."""
        tab_cfg, tab_nc, cfg_ptr, cfg_on = [], [], [np.zeros(1, dtype=np.int64)], []
        n_cfg = 0
        n_on = 0
        for C in self._tables:
            tab_cfg.append(n_cfg)
            tab_nc.append(C.shape[0])
            rows, cols = np.nonzero(C)
            cfg_on.append(cols.astype(np.int64))
            cfg_ptr.append(n_on + np.cumsum(np.bincount(rows, minlength=C.shape[0])))
            n_cfg += C.shape[0]
            n_on += cols.shape[0]
        return DenseTables(
            tab_cfg=np.asarray(tab_cfg, dtype=np.int64),
            tab_nc=np.asarray(tab_nc, dtype=np.int64),
            cfg_ptr=np.concatenate(cfg_ptr).astype(np.int64),
            cfg_on=(np.concatenate(cfg_on).astype(np.int64) if cfg_on
                    else np.zeros(0, dtype=np.int64)),
            cfg_ok=(~np.concatenate(self._masks) if self._masks
                    else np.zeros(0, dtype=np.bool_)),
        )


# Active-set iterations per AD3 iteration on a structure factor. The active
# set is warm-started from the previous iteration's support, so a few steps
# follow the slowly moving targets (AD3's C++ library also caps its inner
# solves); a full solve each time costs more than it saves.
_STRUCTURE_QP_ITER = 10


def _structure_table(structures):
    """The structure factors' compiled oracles, fixed scores and active-set limits."""
    from ._sparsemap import _METHOD_DEFAULTS

    tol = _METHOD_DEFAULTS["active_set"][1]
    kind, n, K, root, max_iter, eta_u, eta_v = [], [], [], [], [], [], []
    specs = {}  # factors often share their (read-only) Parts
    for structure, _, parts, _, _ in structures:
        key = (id(structure), id(parts))
        spec = specs.get(key)
        if spec is None:
            spec = specs[key] = structure.compiled_oracle(parts)
        kind.append(spec.kind)
        n.append(spec.n)
        K.append(spec.K)
        root.append(spec.single_root)
        max_iter.append(_STRUCTURE_QP_ITER)
        eta_u.append(parts.eta_u)
        eta_v.append(parts.eta_v)

    def ptr(arrays):
        return np.concatenate([[0], np.cumsum([a.shape[0] for a in arrays])]).astype(np.int64)

    def cat(arrays):
        return np.ascontiguousarray(np.concatenate(arrays)) if arrays else np.zeros(0)

    return StructureTable(
        kind=np.asarray(kind, dtype=np.int64), n=np.asarray(n, dtype=np.int64),
        K=np.asarray(K, dtype=np.int64), single_root=np.asarray(root, dtype=np.bool_),
        eta_u=cat(eta_u), u_ptr=ptr(eta_u), eta_v=cat(eta_v), v_ptr=ptr(eta_v),
        max_iter=np.asarray(max_iter, dtype=np.int64),
        tol=np.full(len(structures), tol),
    )
