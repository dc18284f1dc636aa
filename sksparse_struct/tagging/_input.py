"""Token-feature input of the feature-based taggers: sequences to one token matrix, labels.

:class:`LinearChainCRF` and :class:`EasyFirstTagger` take the same ``X`` (per
sequence, a list of feature dicts or a sparse matrix, or all sequences at
once as a :class:`~sksparse_struct.feature_extraction.StackedSequences`) and
``y``; they share its validation and vectorization through
:class:`TokenInputMixin`.
"""

import numbers

import numpy as np
import scipy.sparse as sp

from ..feature_extraction import SequenceVectorizer, StackedSequences

__all__ = ["TokenInputMixin", "check_sequence_list"]


def _is_matrix(seq):
    return sp.issparse(seq) or (isinstance(seq, np.ndarray) and seq.ndim == 2)


def _is_empty_list(seq):
    return isinstance(seq, (list, tuple)) and len(seq) == 0


def check_sequence_list(X, name="X"):
    """``X`` as a list of sequences, or a ValueError naming ``name``.

    A :class:`StackedSequences` is returned as it is: it is already one.
    """
    if isinstance(X, StackedSequences):
        return X
    if isinstance(X, (str, bytes, dict)) or sp.issparse(X) or not hasattr(X, "__len__"):
        raise ValueError(
            f"{name} must be a list of sequences (one list of token feature dicts, or one "
            f"sparse matrix, per sequence); got {type(X).__name__}."
        )
    return list(X)


class TokenInputMixin:
    """``_features`` and ``_labels`` of the feature-based taggers.

    They set the fitted attributes ``vectorizer_`` (when ``X`` holds feature
    dicts) and ``classes_``, and read ``n_features_in_``.
    """

    def _features(self, X, *, fit):
        """Stack the sequences of ``X`` into one token matrix; returns ``(matrix, lengths)``."""
        X = check_sequence_list(X)
        if isinstance(X, StackedSequences):
            return self._stacked_features(X, fit=fit)
        # Empty lists fit either form; everything else decides.
        kinds = {_is_matrix(seq) for seq in X if _is_matrix(seq) or not _is_empty_list(seq)}
        if len(kinds) > 1:
            raise ValueError(
                "X mixes sequences given as matrices and as lists of feature dicts; "
                "use one form for all sequences."
            )
        as_matrix = kinds == {True}
        if fit:
            self.vectorizer_ = None if as_matrix else SequenceVectorizer()
        elif (self.vectorizer_ is None) != as_matrix:
            raise ValueError(
                "this tagger was fitted on "
                + ("feature matrices" if self.vectorizer_ is None else "feature dicts")
                + " and X has sequences of the other kind."
            )
        if not as_matrix:
            if fit:
                return self.vectorizer_._fit_transform_stacked(X)
            return self.vectorizer_._transform_stacked(X)
        blocks = []
        for s, seq in enumerate(X):
            M = sp.csr_matrix(seq, dtype=np.float64)
            _check_finite(M, s)
            blocks.append(M)
        widths = {M.shape[1] for M in blocks}
        if len(widths) > 1:
            raise ValueError(
                f"the sequence matrices of X have different numbers of columns: {sorted(widths)}."
            )
        n_features = widths.pop() if widths else 0
        self._check_n_features(n_features, fit)
        lengths = np.array([M.shape[0] for M in blocks], dtype=np.int64)
        if not blocks:
            return sp.csr_matrix((0, 0)), lengths
        return sp.vstack(blocks, format="csr"), lengths

    def _stacked_features(self, X, *, fit):
        """``_features`` of a StackedSequences: its matrix as it is, no per-sequence loop."""
        if fit:
            self.vectorizer_ = None
        elif self.vectorizer_ is not None:
            raise ValueError(
                "this tagger was fitted on feature dicts and X has sequences of the other kind."
            )
        M = X.matrix
        if M.dtype != np.float64:
            M = M.astype(np.float64)
        if not np.isfinite(M.data).all():
            # The sequence of the first bad value says what is wrong.
            i = np.flatnonzero(~np.isfinite(M.data))[0]
            row = np.searchsorted(M.indptr, i, side="right") - 1
            s = int(np.searchsorted(X.offsets, row, side="right")) - 1
            _check_finite(X[s], s)
        self._check_n_features(M.shape[1], fit)
        return M, X.lengths

    def _check_n_features(self, n_features, fit):
        if not fit and n_features != self.n_features_in_:
            raise ValueError(
                f"X has {n_features} features per token, the tagger was fitted with "
                f"{self.n_features_in_}."
            )

    def _labels(self, y, lengths, *, learn_classes):
        """Label codes of ``y``, all sequences flat; ``learn_classes`` sets ``classes_`` first."""
        y = check_sequence_list(y, "y")
        if len(y) != len(lengths):
            raise ValueError(
                f"X has {len(lengths)} sequences but y has {len(y)} label sequences."
            )
        flat = []
        for s, (seq, n) in enumerate(zip(y, lengths)):
            if isinstance(seq, (str, bytes)) or not hasattr(seq, "__len__"):
                raise ValueError(
                    f"y[{s}] is {type(seq).__name__} {seq!r}, expected a sequence of labels "
                    "(y is a list of label lists)."
                )
            if len(seq) != n:
                raise ValueError(
                    f"sequence {s} has {n} tokens in X but {len(seq)} labels in y."
                )
            flat.extend(seq)
        if learn_classes:
            seen = dict.fromkeys(flat)
            try:
                classes = sorted(seen)
            except TypeError:
                classes = list(seen)
            if not classes:
                raise ValueError("y has no labels: every training sequence is empty.")
            self.classes_ = np.array(classes) if _homogeneous(classes) else _object_array(classes)
        index = {c: i for i, c in enumerate(self.classes_.tolist())}
        gold = np.empty(len(flat), dtype=np.int64)
        for i, label in enumerate(flat):
            k = index.get(label)
            if k is None:
                s = np.searchsorted(np.cumsum(lengths), i, side="right")
                raise ValueError(
                    f"y[{s}] has label {label!r}, which is not one of the labels the tagger "
                    f"was first fitted with ({self.classes_.tolist()})."
                )
            gold[i] = k
        return gold


def _check_finite(M, s):
    """A ValueError naming sequence ``s`` and the token when ``M`` has a non-finite value."""
    if not np.all(np.isfinite(M.data)):
        i = np.flatnonzero(~np.isfinite(M.data))[0]
        token = np.searchsorted(M.indptr, i, side="right") - 1
        raise ValueError(
            f"X[{s}] has a non-finite feature value ({M.data[i]}) at token {token}."
        )


def _homogeneous(classes):
    return all(isinstance(c, str) for c in classes) or all(
        isinstance(c, numbers.Integral) and not isinstance(c, bool) for c in classes
    )


def _object_array(values):
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out
