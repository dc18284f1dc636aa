"""Projective dependency trees: Eisner's algorithm and inside-outside.

These functions are the engine behind
``DependencyTree(projective=True)``; they do no validation. ``scores`` is a
C-contiguous float64 array of shape ``(n + 1, n + 1)``: ``scores[h, m]`` is
the score of the arc ``h -> m``, index 0 is the root, column 0 and the
diagonal are ignored and ``-inf`` forbids an arc. NaN and ``+inf`` must have
been rejected by the caller.

A tree is projective when no two arcs cross, the arcs from the root (drawn
at the left of the sentence) included; equivalently every word's subtree
covers a contiguous span. With ``single_root=True`` exactly one word is
attached to the root.

The chart is Eisner's (1996, 2000) first-order O(n^3) chart, see
:mod:`._projective_fast`. The marginals come from the inside pass and its
reverse-mode derivative (the outside pass), run in terms of the
probability of each chart item, and the backward pass of the marginals is
the forward-mode derivative of that computation (see
:func:`projective_marginals_backward`).
"""

import numpy as np

from ._projective_fast import eisner, inside_outside, inside_outside_jvp

__all__ = [
    "eisner_map",
    "no_projective_tree_error",
    "projective_marginals",
    "projective_marginals_backward",
]


def _as_scores(scores):
    return np.ascontiguousarray(scores, dtype=np.float64)


def no_projective_tree_error(single_root):
    """The error for scores that leave no (single-rooted) projective tree."""
    rooted = " with a single root word" if single_root else ""
    return ValueError(
        f"no projective dependency tree{rooted} has a finite score: the "
        "arcs that are not -inf cannot attach every word to the root "
        "without two arcs crossing."
    )


def eisner_map(scores, single_root):
    """Highest-scoring projective dependency tree (Eisner's algorithm).

    Parameters
    ----------
    scores : ndarray of shape (n + 1, n + 1), float64, C-contiguous
        Arc scores, ``scores[h, m]`` for the arc ``h -> m`` (0 = root);
        column 0 and the diagonal are ignored; ``-inf`` forbids an arc.
        Not validated.
    single_root : bool
        Whether exactly one word must be attached to the root.

    Returns
    -------
    heads : ndarray of shape (n + 1,), int64
        ``heads[m]`` is the head of word ``m``; ``heads[0] = -1``.

    Raises
    ------
    ValueError
        If no projective tree (single-rooted if required) avoids every
        ``-inf`` arc.

    Notes
    -----
    O(n^3) time, O(n^2) memory. Ties are broken deterministically: every
    chart item keeps the smallest split point among its best ones (the first
    maximum), so the same scores always give the same tree; with all scores
    equal the result is the right-branching chain ``0 -> 1 -> ... -> n``.

    Examples
    --------
    >>> import numpy as np
    >>> from sksparse_struct.structures._projective import eisner_map
    >>> scores = np.array([[0.0, 1.0, 5.0, 1.0],
    ...                    [0.0, 0.0, 0.0, 0.0],
    ...                    [0.0, 3.0, 0.0, 3.0],
    ...                    [0.0, 0.0, 0.0, 0.0]])
    >>> eisner_map(scores, single_root=True).tolist()
    [-1, 2, 0, 2]
    >>> eisner_map(np.zeros((4, 4)), single_root=False).tolist()
    [-1, 0, 1, 2]
    """
    scores = _as_scores(scores)
    heads = np.empty(scores.shape[0], dtype=np.int64)
    best = eisner(scores, bool(single_root), heads)
    if not best > -np.inf:
        raise no_projective_tree_error(single_root)
    return heads


def projective_marginals(scores, single_root):
    """Arc marginals and log-partition function of projective trees (inside-outside).

    Under the Gibbs distribution ``p(y) = exp(score(y) - log_z)`` over the
    projective trees ``y`` (single-rooted if required), the marginal of the
    arc ``h -> m`` is the probability that ``y`` contains it.

    Parameters
    ----------
    scores : ndarray of shape (n + 1, n + 1), float64, C-contiguous
        Arc scores as in :func:`eisner_map`. Not validated.
    single_root : bool
        Whether exactly one word must be attached to the root.

    Returns
    -------
    arc_marginals : ndarray of shape (n + 1, n + 1)
        ``arc_marginals[h, m]``; column 0, the diagonal and forbidden arcs are
        0, and every column ``m >= 1`` sums to 1.
    log_z : float
        Log of the sum of ``exp(score(y))`` over the projective trees.

    Raises
    ------
    ValueError
        If no projective tree (single-rooted if required) avoids every
        ``-inf`` arc.

    Notes
    -----
    O(n^3) time, O(n^2) memory. The inside pass runs in log space; the outside
    pass is its reverse-mode derivative computed on the probabilities of the
    chart items (numbers in [0, 1]), every exponential being shifted by its
    own item's log-value, so scores of magnitude 1e4 are safe.

    Examples
    --------
    >>> import numpy as np
    >>> from sksparse_struct.structures._projective import projective_marginals
    >>> marginals, log_z = projective_marginals(np.zeros((3, 3)), single_root=False)
    >>> marginals.round(3).tolist()
    [[0.0, 0.667, 0.667], [0.0, 0.0, 0.333], [0.0, 0.333, 0.0]]
    >>> round(log_z, 4) == round(float(np.log(3)), 4)
    True
    """
    scores = _as_scores(scores)
    marginals = np.empty_like(scores)
    log_z = inside_outside(scores, bool(single_root), marginals)
    if not log_z > -np.inf:
        raise no_projective_tree_error(single_root)
    return marginals, float(log_z)


def projective_marginals_backward(scores, single_root, d_arc_marginals):
    """Vector-Jacobian product of :func:`projective_marginals` w.r.t. the scores.

    Parameters
    ----------
    scores : ndarray of shape (n + 1, n + 1), float64, C-contiguous
        Arc scores as in :func:`eisner_map`. Not validated.
    single_root : bool
        Whether exactly one word must be attached to the root.
    d_arc_marginals : ndarray of shape (n + 1, n + 1), float64
        Gradient of a loss with respect to the arc marginals (finite); its
        column 0 and diagonal are ignored. Not validated.

    Returns
    -------
    d_scores : ndarray of shape (n + 1, n + 1)
        Gradient of the loss with respect to ``scores``; 0 on column 0, the
        diagonal and the forbidden (``-inf``) arcs.

    Raises
    ------
    ValueError
        If no projective tree (single-rooted if required) avoids every
        ``-inf`` arc.

    Notes
    -----
    The marginals are the gradient of ``log_z``, so their Jacobian is the
    (symmetric) Hessian of ``log_z`` and the vector-Jacobian product equals
    the derivative of the marginals in the direction ``d_arc_marginals``.
    It is computed by forward-mode differentiation of the inside-outside
    pass, in O(n^3) like the forward pass. This replaces the signed log-space
    backpropagation of Kim et al. (2017, App. B, Fig. 7) with an equally
    stable scheme: each inside log-value carries the conditional expectation
    of ``d_arc_marginals . arcs`` given its chart item, each item probability
    and local weight (numbers in [0, 1]) carries its derivative, and these are
    combined by sums and products with weights in [0, 1], without any
    exponential of an unshifted score; so it is stable for scores of
    magnitude 1e4, with an absolute error of a few ulps times
    ``sum(abs(d_arc_marginals))``.

    Examples
    --------
    >>> import numpy as np
    >>> from sksparse_struct.structures._projective import (
    ...     projective_marginals_backward)
    >>> d = np.zeros((3, 3)); d[0, 1] = 1.0
    >>> projective_marginals_backward(np.zeros((3, 3)), False, d).round(4).tolist()
    [[0.0, 0.2222, -0.1111], [0.0, 0.0, 0.1111], [0.0, -0.2222, 0.0]]
    """
    scores = _as_scores(scores)
    direction = np.ascontiguousarray(d_arc_marginals, dtype=np.float64)
    d_scores = np.empty_like(scores)
    log_z = inside_outside_jvp(scores, bool(single_root), direction, d_scores)
    if not log_z > -np.inf:
        raise no_projective_tree_error(single_root)
    return d_scores
