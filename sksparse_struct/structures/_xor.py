"""XOR: exactly one of K items (the one-of-K structure, Niculae 2018, sec. 4.1)."""

import numbers

import numpy as np

from ..mappings import softmax, softmax_backward
from ..utils._validation import check_scores
from ._base import Parts, UnaryStructure, check_part_scores

__all__ = ["XOR"]


class XOR(UnaryStructure):
    """One-of-K: a structure is the choice of exactly one of K items.

    The unary parts are the K items; there are no higher-order parts. The
    MAP is the argmax of the scores, the marginals are the softmax and the
    log-partition function is the log-sum-exp, so SparseMAP on this
    structure is sparsemax (Niculae 2018, sec. 4.1).

    A structure value is the index of the chosen item, a Python ``int``.

    Examples
    --------
    >>> from sksparse_struct.structures import XOR
    >>> xor = XOR()
    >>> xor.map([0.5, 2.0, 2.0, -1.0])
    1
    >>> p, log_z = xor.marginals([0.0, 0.0, float("-inf")])
    >>> p.tolist(), round(log_z, 4)
    ([0.5, 0.5, 0.0], 0.6931)
    >>> xor.marginals_backward([0.0, 0.0], [1.0, 0.0])[0].tolist()
    [0.25, -0.25]
    """

    has_marginals = True
    scores_ndim = 1

    def encode(self, scores):
        eta = check_part_scores(scores, 1, "XOR")
        if not np.isfinite(eta).any():
            raise ValueError(
                f"XOR: every one of the {eta.shape[0]} items is forbidden (-inf), "
                "but exactly one must be chosen."
            )
        return Parts(eta, np.zeros(0), eta.shape)

    def _map_unary(self, scores):
        # np.argmax returns the first maximum: ties go to the lowest index.
        return int(np.argmax(scores))

    def _indicators_unary(self, value, shape):
        if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, numbers.Integral
        ):
            raise ValueError(
                f"an XOR structure value is the index of one item (an int), "
                f"got {value!r}."
            )
        if not 0 <= value < shape[0]:
            raise ValueError(
                f"XOR value {value} is out of range for {shape[0]} items."
            )
        m = np.zeros(shape)
        m[int(value)] = 1.0
        return m

    def marginals(self, scores):
        """Item probabilities (softmax) and log-partition function (log-sum-exp).

        Parameters
        ----------
        scores : array-like of shape (K,)
            Item scores; ``-inf`` forbids an item (probability 0). At least
            one item must be allowed.

        Returns
        -------
        marginals : ndarray of shape (K,)
            ``softmax(scores)``.
        log_z : float
            ``log(sum(exp(scores)))``.
        """
        eta = self.encode(scores).eta_u
        top = eta.max()
        log_z = float(top + np.log(np.sum(np.exp(eta - top))))
        return softmax(eta), log_z

    def marginals_backward(self, scores, d_marginals):
        """Vector-Jacobian product of the marginals with respect to the scores.

        Parameters
        ----------
        scores : array-like of shape (K,)
            The scores given to :meth:`marginals`.
        d_marginals : array-like of shape (K,)
            Gradient of a loss with respect to the marginals. (The gradient
            of ``log_z`` is the marginals themselves; add
            ``d_log_z * marginals`` to the result if the loss uses it.)

        Returns
        -------
        d_scores : tuple of one ndarray of shape (K,)
            Gradient with respect to ``scores`` (0 at forbidden items).
        """
        eta = self.encode(scores).eta_u
        d, _ = check_scores(d_marginals, "d_marginals", allow_neg_inf=False)
        if d.shape[0] != 1 or d.shape[1] != eta.shape[0] or np.ndim(d_marginals) != 1:
            raise ValueError(
                f"d_marginals has shape {np.shape(d_marginals)}, which does not "
                f"match the scores' shape {eta.shape}."
            )
        return (softmax_backward(softmax(eta), d[0]),)
