"""First-order arc pruning for higher-order parsing (TurboParser's ``prune_basic``).

A second-order parser builds sibling and grandparent parts on pairs of arcs,
so it first keeps only a few candidate heads per word, chosen by the arc
posteriors of a first-order model (``SparseMAPParser(loss="crf")`` and its
``predict_marginals``).

Conventions: tokens are ``0..n`` with 0 the root; an arc ``h -> m`` has
``m >= 1`` and ``h != m``. Posteriors and candidate masks are
``(n + 1, n + 1)`` arrays indexed ``[h, m]`` (column 0 and the diagonal are
unused; in a mask they are False). Trees are ``heads`` arrays of length
``n + 1`` with ``heads[0] = -1``.

The rule (spec ``second_order_parsing.md`` §1.2), in this order:

1. For each word ``m``, rank its heads by posterior (ties: lower ``h``
   first) and keep at most ``max_heads`` of them, while
   ``P[h, m] >= threshold * max_h' P[h', m]``. The best head is always kept.
2. At training time the gold arcs are kept too (``gold_heads``).
3. Repair, so that a tree of the kind the parser decodes exists among the
   candidates (the pruner may reject every tree otherwise):

   * projective: every missing ``m - 1 -> m`` arc is added, ``0 -> 1``
     included, so the right-branching chain ``0 -> 1 -> ... -> n`` (a
     projective tree with one root word) is always a candidate tree;
   * non-projective, ``single_root=False``: the root gets arcs to the fewest
     words from which every word it does not yet reach can be reached (one
     word per source component of the unreachable words; one pass finds
     them). The spec's rule attaches every unreachable word to the root; this
     adds only the root arcs that rule needs, the others being reachable
     through them;
   * non-projective, ``single_root=True``: a tree with one root word ``r``
     needs ``0 -> r`` and every word reachable from ``r`` through arcs
     between words. For every ``r`` the fewest arcs that achieve it are
     ``0 -> r`` (if missing) and ``r -> v`` for one word ``v`` of each source
     component of the words ``r`` misses; the ``r`` with the fewest such arcs
     is taken (ties: larger posterior of ``0 -> r``, then lower ``r``). This
     differs from TurboParser, whose non-projective decoder is multi-root.
"""

from dataclasses import dataclass
from numbers import Real

import numpy as np

from ..structures._tree import check_heads
from ..utils._validation import as_real_array, check_integer
from . import _pruning_fast

__all__ = ["PruningReport", "part_counts", "prune_arcs", "pruning_report"]

# Rounding in the posteriors of the matrix-tree theorem or inside-outside
# leaves entries a hair outside [0, 1]; beyond these it is not rounding.
_NEGATIVE_TOL = 1e-9
_ABOVE_ONE_TOL = 1e-6


def _check_marginals(marginals):
    """The posteriors as a C-contiguous float64 array, rounding below zero cleared."""
    arr = as_real_array(marginals, "marginals")
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] < 2:
        raise ValueError(
            "marginals must be a square (n + 1, n + 1) array of arc posteriors "
            "(row: head, column: modifier, index 0: the root) with n >= 1 words, "
            f"got shape {arr.shape}."
        )
    n = arr.shape[0] - 1
    arr = np.array(arr, dtype=np.float64, order="C")  # a copy: cleared in place below
    # The unused entries (column 0, the diagonal) may hold anything.
    arr[:, 0] = 0.0
    arr[np.arange(n + 1), np.arange(n + 1)] = 0.0
    bad = np.isnan(arr)
    if bad.any():
        h, m = np.argwhere(bad)[0]
        raise ValueError(f"marginals contains NaN at the arc {h} -> {m}.")
    bad = (arr < -_NEGATIVE_TOL) | (arr > 1.0 + _ABOVE_ONE_TOL)
    if bad.any():
        h, m = np.argwhere(bad)[0]
        raise ValueError(
            f"marginals must be probabilities in [0, 1]; the arc {h} -> {m} has "
            f"{arr[h, m]!r}. Pass arc posteriors (e.g. predict_marginals), not scores."
        )
    np.maximum(arr, 0.0, out=arr)
    return arr


def _check_flag(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}.")
    return bool(value)


def prune_arcs(marginals, max_heads=10, threshold=1e-4, gold_heads=None,
               projective=False, single_root=True):
    """Candidate arcs of one sentence, from its first-order arc posteriors.

    Parameters
    ----------
    marginals : array-like of shape (n + 1, n + 1)
        ``marginals[h, m]`` is the posterior probability of the arc
        ``h -> m``; column 0 and the diagonal are ignored.
    max_heads : int, default=10
        At most this many heads are kept per word (before the gold arcs and
        the repair are added).
    threshold : float, default=1e-4
        A head is kept only if its posterior is at least ``threshold`` times
        the word's best posterior. ``0`` keeps the ``max_heads`` best heads
        whatever their posterior.
    gold_heads : array-like of shape (n + 1,), default=None
        At training time, the gold tree (``heads[0] = -1``): its arcs are
        kept whatever their posterior.
    projective : bool, default=False
        Whether the parser decodes projective trees; decides the repair.
    single_root : bool, default=True
        Whether the parser's trees have exactly one word attached to the
        root; decides the repair.

    Returns
    -------
    mask : ndarray of shape (n + 1, n + 1), dtype bool
        ``mask[h, m]`` says whether ``h -> m`` is a candidate arc. At least
        one tree of the requested kind uses only candidate arcs.

    Notes
    -----
    See the module docstring for the rule and the repair. Every word keeps
    at least its best head, so the mask has at least ``n`` arcs.

    Examples
    --------
    >>> import numpy as np
    >>> from sksparse_struct.parsing._pruning import prune_arcs
    >>> P = np.array([[0, .9, .05], [0, 0, .95], [0, .1, 0]])
    >>> prune_arcs(P, max_heads=1).astype(int)
    array([[0, 1, 0],
           [0, 0, 1],
           [0, 0, 0]])
    """
    P = _check_marginals(marginals)
    n = P.shape[0] - 1
    check_integer(max_heads, "max_heads", minimum=1)
    if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, Real) \
            or not 0.0 <= threshold < 1.0:
        raise ValueError(f"threshold must be a number in [0, 1), got {threshold!r}.")
    projective = _check_flag(projective, "projective")
    single_root = _check_flag(single_root, "single_root")
    mask = np.zeros((n + 1, n + 1), dtype=bool)
    _pruning_fast.select_heads(P, int(max_heads), float(threshold), mask)
    if gold_heads is not None:
        # Any tree is accepted: a non-projective or multi-root gold is still
        # kept (the parser lifts or rejects it on its own).
        gold = check_heads(gold_heads, n, single_root=False, name="gold_heads")
        mask[gold[1:], np.arange(1, n + 1)] = True
    if projective:
        _pruning_fast.repair_chain(mask)
    elif single_root:
        _pruning_fast.repair_single_root(mask, np.ascontiguousarray(P[0]))
    else:
        _pruning_fast.repair_reachability(mask)
    return mask


def part_counts(mask):
    """Arcs and second-order parts built on one sentence's candidate arcs.

    The formulas of spec §1.3, with ``L_r(h)``, ``L_l(h)`` the candidate
    modifiers right and left of ``h`` and ``in(h)`` its candidate heads:
    arcs ``sum_h (L_r + L_l)``; next siblings (every ordered pair of a
    side's modifiers plus START and STOP, for both sides of every head, the
    root included) ``sum_h [(L_r+1)(L_r+2)/2 + (L_l+1)(L_l+2)/2]``;
    grandparents ``sum_{h>=1} in(h) (L_r(h) + L_l(h))``; grand-siblings
    ``sum_{h>=1} in(h) [(L_r+1)(L_r+2)/2 + (L_l+1)(L_l+2)/2]``.

    Parameters
    ----------
    mask : ndarray of shape (n + 1, n + 1), dtype bool
        Candidate arcs, as :func:`prune_arcs` returns them.

    Returns
    -------
    counts : tuple of int
        ``(arcs, siblings, grandparents, grand_siblings)``.
    """
    mask = np.asarray(mask, dtype=bool)
    right = np.triu(mask, 1).sum(axis=1)
    left = np.tril(mask, -1).sum(axis=1)
    in_degree = mask.sum(axis=0)
    sides = (right + 1) * (right + 2) // 2 + (left + 1) * (left + 2) // 2
    return (int(right.sum() + left.sum()), int(sides.sum()),
            int((in_degree[1:] * (right[1:] + left[1:])).sum()),
            int((in_degree[1:] * sides[1:]).sum()))


@dataclass(frozen=True)
class PruningReport:
    """How well candidate arcs cover gold trees, and what they cost.

    Counts are totals over the sentences; the properties give the rates and
    the means per sentence.

    Attributes
    ----------
    n_sentences, n_words : int
        Sentences, and words (= gold arcs) in them.
    n_gold_kept : int
        Gold arcs among the candidates.
    n_covered : int
        Sentences whose gold arcs are all candidates.
    n_arcs, n_sibling_parts, n_grandparent_parts, n_grandsibling_parts : int
        Candidate arcs, and the second-order parts built on them (see
        :func:`part_counts`).
    """

    n_sentences: int
    n_words: int
    n_gold_kept: int
    n_covered: int
    n_arcs: int
    n_sibling_parts: int
    n_grandparent_parts: int
    n_grandsibling_parts: int

    @property
    def recall(self):
        """Fraction of the gold arcs kept."""
        return self.n_gold_kept / self.n_words

    @property
    def heads_per_word(self):
        """Mean number of candidate heads of a word."""
        return self.n_arcs / self.n_words

    @property
    def covered(self):
        """Fraction of the sentences whose gold tree is among the candidates."""
        return self.n_covered / self.n_sentences

    @property
    def mean_length(self):
        return self.n_words / self.n_sentences

    @property
    def arcs_per_sentence(self):
        return self.n_arcs / self.n_sentences

    @property
    def sibling_parts_per_sentence(self):
        return self.n_sibling_parts / self.n_sentences

    @property
    def grandparent_parts_per_sentence(self):
        return self.n_grandparent_parts / self.n_sentences

    @property
    def grandsibling_parts_per_sentence(self):
        return self.n_grandsibling_parts / self.n_sentences


def pruning_report(masks, gold_heads_list):
    """Gold-arc recall and part counts of the candidate arcs of many sentences.

    Parameters
    ----------
    masks : list of ndarray of shape (n + 1, n + 1), dtype bool
        Each sentence's candidate arcs (:func:`prune_arcs`).
    gold_heads_list : list of array-like of shape (n + 1,)
        Each sentence's gold tree (``heads[0] = -1``).

    Returns
    -------
    report : PruningReport

    Examples
    --------
    >>> import numpy as np
    >>> from sksparse_struct.parsing._pruning import pruning_report
    >>> mask = np.zeros((3, 3), dtype=bool)
    >>> mask[0, 1] = mask[1, 2] = mask[0, 2] = True
    >>> report = pruning_report([mask], [[-1, 0, 0]])
    >>> report.recall, report.heads_per_word, report.n_sibling_parts
    (1.0, 1.5, 13)
    """
    masks = list(masks)
    gold_heads_list = list(gold_heads_list)
    if len(masks) != len(gold_heads_list):
        raise ValueError(f"{len(masks)} masks but {len(gold_heads_list)} gold trees.")
    if not masks:
        raise ValueError("pruning_report needs at least one sentence.")
    totals = np.zeros(7, dtype=np.int64)
    for i, (mask, gold) in enumerate(zip(masks, gold_heads_list)):
        mask = np.asarray(mask)
        if mask.ndim != 2 or mask.shape[0] != mask.shape[1] or mask.shape[0] < 2:
            raise ValueError(f"masks[{i}] must be a square (n + 1, n + 1) array, "
                             f"got shape {mask.shape}.")
        if mask.dtype != bool:
            raise ValueError(f"masks[{i}] must be a boolean array, got dtype {mask.dtype}.")
        n = mask.shape[0] - 1
        if mask[:, 0].any() or mask.diagonal().any():
            raise ValueError(f"masks[{i}] marks an arc into the root or from a word to "
                             "itself: column 0 and the diagonal must be False.")
        heads = check_heads(gold, n, single_root=False, name=f"gold_heads_list[{i}]")
        kept = int(mask[heads[1:], np.arange(1, n + 1)].sum())
        totals += (n, kept, kept == n, *part_counts(mask))
    return PruningReport(len(masks), *(int(t) for t in totals))
