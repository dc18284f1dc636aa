"""The tokens of many sequences in one sparse matrix, seen as a list of matrices."""

from collections.abc import Sequence
from numbers import Integral

import numpy as np
import scipy.sparse as sp

__all__ = ["StackedSequences"]


class StackedSequences(Sequence):
    """Feature matrices of many sequences, stacked in one CSR matrix.

    Row ``i`` of :attr:`matrix` is a token; the sequences follow one another,
    of lengths :attr:`lengths`. The object behaves as the list of the
    per-sequence CSR matrices (``len``, indexing, iteration), so anything
    that takes a list of sequence matrices takes it, while the taggers of
    :mod:`sksparse_struct.tagging` read the stacked matrix directly.

    Parameters
    ----------
    matrix : scipy.sparse matrix of shape (n_tokens, n_features)
        The tokens' features, converted to CSR.
    lengths : array-like of int
        The number of tokens of each sequence; they add up to ``n_tokens``.

    Attributes
    ----------
    matrix : scipy.sparse.csr_matrix of shape (n_tokens, n_features)
    lengths : ndarray of int64 of shape (n_sequences,)
    offsets : ndarray of int64 of shape (n_sequences + 1,)
        Sequence ``s`` is rows ``offsets[s]:offsets[s + 1]``.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from sksparse_struct.feature_extraction import StackedSequences
    >>> X = StackedSequences(sp.eye(3, 4, format="csr"), [2, 0, 1])
    >>> len(X), X[0].shape, X[1].shape, [m.shape for m in X[1:]]
    (3, (2, 4), (0, 4), [(0, 4), (1, 4)])
    """

    def __init__(self, matrix, lengths):
        if not sp.issparse(matrix) or matrix.ndim != 2:
            raise ValueError(f"matrix must be a 2-D sparse matrix, got {type(matrix).__name__}.")
        lengths = np.asarray(lengths)
        if lengths.ndim != 1 or (lengths.size and lengths.dtype.kind not in "iu"):
            raise ValueError("lengths must be a 1-D array of integers.")
        lengths = lengths.astype(np.int64)
        if lengths.size and lengths.min() < 0:
            raise ValueError("lengths must not be negative.")
        if int(lengths.sum()) != matrix.shape[0]:
            raise ValueError(
                f"the lengths add up to {int(lengths.sum())} tokens but the matrix has "
                f"{matrix.shape[0]} rows."
            )
        self.matrix = sp.csr_matrix(matrix)
        self.lengths = lengths
        self.offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.offsets[1:])

    @property
    def n_features(self):
        """Number of columns of every sequence's matrix."""
        return self.matrix.shape[1]

    def __len__(self):
        return len(self.lengths)

    def __getitem__(self, index):
        if isinstance(index, slice):
            s = range(len(self))[index]
            if s.step == 1 or len(s) <= 1:
                lo = self.offsets[s.start] if len(s) else 0
                hi = self.offsets[s.start + len(s)] if len(s) else 0
                return StackedSequences(self.matrix[lo:hi], self.lengths[index])
            rows = np.concatenate(
                [np.arange(self.offsets[i], self.offsets[i + 1]) for i in s] + [[]]
            ).astype(np.int64)
            return StackedSequences(self.matrix[rows], self.lengths[index])
        if not isinstance(index, Integral) or isinstance(index, bool):
            raise TypeError(
                f"StackedSequences indices must be integers or slices, not "
                f"{type(index).__name__}."
            )
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"sequence index {index} out of range for {n} sequences.")
        index = int(index) % n
        lo, hi = self.offsets[index], self.offsets[index + 1]
        m = self.matrix
        start, stop = m.indptr[lo], m.indptr[hi]
        return sp.csr_matrix(
            (m.data[start:stop], m.indices[start:stop], m.indptr[lo:hi + 1] - start),
            shape=(hi - lo, m.shape[1]),
        )

    def __repr__(self):
        return (
            f"StackedSequences(n_sequences={len(self)}, n_tokens={self.matrix.shape[0]}, "
            f"n_features={self.n_features})"
        )
