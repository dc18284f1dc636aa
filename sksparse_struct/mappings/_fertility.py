"""Fertility-bounded attention over decoding steps (Malaviya et al. 2018, eq. 5)."""

import numpy as np

from ..utils._validation import as_float_rows, check_same_rows, check_scores
from ._capped_simplex import shift_by_row_max
from ._fertility_fast import (
    fertility_csoftmax,
    fertility_csoftmax_backward,
    fertility_csparsemax,
    fertility_csparsemax_backward,
)

__all__ = ["fertility_attention", "fertility_attention_backward"]

_FORWARD = {"csparsemax": fertility_csparsemax, "csoftmax": fertility_csoftmax}
_BACKWARD = {
    "csparsemax": fertility_csparsemax_backward,
    "csoftmax": fertility_csoftmax_backward,
}


def _check_mapping(mapping):
    if mapping not in _FORWARD:
        raise ValueError(
            f"mapping must be one of {sorted(_FORWARD)}, got {mapping!r}."
        )
    return mapping


def _check_steps(x, name, allow_neg_inf):
    arr = np.asarray(x) if not isinstance(x, np.ndarray) else x
    if np.ndim(arr) != 2:
        raise ValueError(
            f"{name} must be a 2-D array of shape (n_steps, n_words), got shape "
            f"{np.shape(arr)}."
        )
    if allow_neg_inf:
        rows, _ = check_scores(arr, name)
    else:
        rows, _ = check_scores(arr, name, allow_neg_inf=False)
    return rows


def _check_fertility(fertility, n_words):
    f_rows, was_1d = as_float_rows(fertility, "fertility")
    if not was_1d:
        raise ValueError(
            f"fertility must be a 1-D vector of length n_words, got shape "
            f"{np.shape(fertility)}."
        )
    f = f_rows[0]
    if f.shape[0] != n_words:
        raise ValueError(
            f"fertility has {f.shape[0]} entries but scores have {n_words} "
            "words (columns)."
        )
    bad = np.isnan(f) | (f < 0)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"fertility must be non-negative (np.inf allowed for a sink word); "
            f"position {j} is {f[j]}."
        )
    return np.ascontiguousarray(f)


def fertility_attention(scores, fertility, mapping="csparsemax"):
    """Attention over source words with a fertility budget per word.

    Each source word ``j`` has a fertility ``f_j``: the total attention it may
    receive over all decoding steps. Step ``t`` uses the bounds
    ``u_t = f - sum_{s<t} a_s`` (what is left of every budget) and
    ``a_t = mapping(scores[t], u_t)`` with ``mapping`` csparsemax
    (Malaviya et al. 2018, eq. 5-6) or csoftmax (their eq. 4; Martins &
    Kreutzer 2017, eq. 11, use ``f = 1``). Every row of the output sums to
    one and every column sums to at most ``f_j``.

    A step is only feasible if the budgets left sum to at least one, so
    ``sum(f) >= n_steps`` is required. Malaviya et al. (sec. 5) guarantee
    this with a ``<sink>`` source word of unbounded fertility, akin to the
    NULL word of the IBM models. This function does not add one silently: if
    the budgets run out, it raises a ValueError naming the step. To follow
    the paper, append a column of sink scores and give it fertility
    ``np.inf`` (infinite fertilities are accepted exactly for this).

    Parameters
    ----------
    scores : array-like of shape (n_steps, n_words)
        Attention scores; row ``t`` is decoding step ``t``. ``-inf`` masks a
        word at a step (it gets 0 and uses none of its budget).
    fertility : array-like of shape (n_words,)
        Non-negative budgets; ``np.inf`` for an unbounded (sink) word.
    mapping : {"csparsemax", "csoftmax"}, default="csparsemax"

    Returns
    -------
    attention : ndarray of shape (n_steps, n_words), float64

    Raises
    ------
    ValueError
        If ``sum(fertility) < n_steps``, or if at some step the budgets left
        over the unmasked words sum to less than 1 (masking can cause this
        even when the total is enough); the message names the step.

    See Also
    --------
    fertility_attention_backward, csparsemax, csoftmax

    Examples
    --------
    >>> import numpy as np
    >>> from sksparse_struct.mappings import fertility_attention
    >>> scores = np.array([[1.2, 0.8, -0.2], [0.7, 0.9, 0.1], [-0.2, 0.2, 0.9]])
    >>> fertility_attention(scores, [1.0, 1.0, 1.0]).round(3).tolist()
    [[0.7, 0.3, 0.0], [0.3, 0.7, 0.0], [0.0, 0.0, 1.0]]
    >>> a = fertility_attention(scores, [1.0, 1.0, 1.0], mapping="csoftmax")
    >>> a.sum(axis=0).round(3).tolist()
    [1.0, 1.0, 1.0]
    """
    _check_mapping(mapping)
    z = _check_steps(scores, "scores", allow_neg_inf=True)
    f = _check_fertility(fertility, z.shape[1])
    n_steps = z.shape[0]
    total = f.sum()
    if total < n_steps * (1.0 - 1e-12):
        raise ValueError(
            f"the fertilities sum to {total:.6g} < {n_steps} decoding steps: the "
            "budgets run out before the last step. Append a <sink> word with "
            "fertility np.inf (Malaviya et al. 2018, sec. 5) or raise fertilities."
        )
    out = np.empty_like(z)
    if mapping == "csparsemax":
        z = shift_by_row_max(z)  # exact at any magnitude, see there
    step = _FORWARD[mapping](z, f, out)
    if step >= 0:
        raise ValueError(
            f"at step {step} the fertility left over the unmasked words sums to "
            "less than 1: no attention distribution fits under the budgets "
            "(infeasible). Append a <sink> word with fertility np.inf, or mask "
            "fewer words."
        )
    return out


def fertility_attention_backward(attention, fertility, d_attention, mapping="csparsemax"):
    """Backward pass of :func:`fertility_attention` through the recurrence.

    Reverse-mode over the steps: the gradient reaching ``a_t`` is its own
    ``d_attention[t]`` minus the gradient of the budgets left after step
    ``t`` (which ``a_t`` consumed); each step then applies
    :func:`csparsemax_backward` or :func:`csoftmax_backward` and passes the
    bound gradient back to the budgets. The bounds of every step are replayed
    from ``attention`` and ``fertility`` exactly as the forward pass built
    them; the scores are not needed. Conventions at kinks are those of the
    per-step backward functions (a word whose budget is exactly used up keeps
    a bound of exactly 0 afterwards; the gradient through such zero bounds
    cancels, so only a fertility that is 0 from the start is affected: it
    gets the derivative for an increase). An infinite fertility gets
    gradient 0.

    Parameters
    ----------
    attention : array-like of shape (n_steps, n_words)
        Output of :func:`fertility_attention`.
    fertility : array-like of shape (n_words,)
        The fertilities given to the forward pass.
    d_attention : array-like of shape (n_steps, n_words)
        Gradient of a loss with respect to the attention.
    mapping : {"csparsemax", "csoftmax"}, default="csparsemax"
        The mapping used in the forward pass.

    Returns
    -------
    d_scores : ndarray of shape (n_steps, n_words)
    d_fertility : ndarray of shape (n_words,)

    Examples
    --------
    >>> import numpy as np
    >>> from sksparse_struct.mappings import (
    ...     fertility_attention, fertility_attention_backward)
    >>> scores = np.array([[1.2, 0.8, -0.2], [0.7, 0.9, 0.1], [-0.2, 0.2, 0.9]])
    >>> a = fertility_attention(scores, [1.0, 1.0, 1.0])
    >>> d_scores, d_fert = fertility_attention_backward(a, [1.0, 1.0, 1.0], np.eye(3))
    >>> d_scores.shape, d_fert.shape
    ((3, 3), (3,))
    """
    _check_mapping(mapping)
    a = _check_steps(attention, "attention", allow_neg_inf=False)
    da = _check_steps(d_attention, "d_attention", allow_neg_inf=False)
    check_same_rows(a, da, "attention", "d_attention")
    f = _check_fertility(fertility, a.shape[1])
    d_scores = np.empty_like(a)
    d_fertility = np.empty(a.shape[1])
    _BACKWARD[mapping](a, f, da, d_scores, d_fertility)
    return d_scores, d_fertility
