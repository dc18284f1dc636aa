"""The training problem of the linear-chain tagger: data layout and objective.

Kept apart from the estimator so that the learners only see a
``loss_and_grad(w, ...)`` interface (DESIGN.md) and the estimator only deals
with scikit-learn glue.
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

from . import _chain_fast as fast

# Work is cut into fixed chunks (never into "one per thread") so that sums
# are always taken in the same order: results do not depend on n_jobs.
_TOKENS_PER_CHUNK = 4096
# Training splits the data into this many parts (balanced by tokens), each
# with its own gradient buffer; more would cost memory for nothing on
# typical machines.
_TRAINING_PARTS = 4
_BATCH_PARTS = 2

LOSS_KINDS = {
    "crf": fast.CRF,
    "hinge": fast.HINGE,
    "perceptron": fast.PERCEPTRON,
    "sparsemap": fast.SPARSEMAP,
    "margin_sparsemap": fast.MARGIN_SPARSEMAP,
}


def frequency_rank(X):
    """Internal feature numbering by decreasing number of tokens with a nonzero value.

    Frequent attributes then have neighbouring weights, which keeps the
    kernels' random accesses within a few cache lines (about 1.2x faster on
    CoNLL-2000 than alphabetical order).
    """
    X = sp.csr_matrix(X)
    counts = np.bincount(X.indices[X.data != 0], minlength=X.shape[1])
    order = np.argsort(-counts, kind="stable")
    rank = np.empty(X.shape[1], dtype=np.int64)
    rank[order] = np.arange(X.shape[1])
    return rank


class ChainData:
    """Stacked token features of a list of sequences.

    Parameters
    ----------
    X : scipy.sparse matrix of shape (n_tokens, n_features)
        One row per token, sequences one after the other.
    lengths : ndarray of int
        Length of each sequence.
    gold : ndarray of int64 of shape (n_tokens,), optional
        Gold label index of every token.
    attr_rank : ndarray of int of shape (n_features,), optional
        Internal number of each feature (see :func:`frequency_rank`).
    """

    def __init__(self, X, lengths, gold=None, attr_rank=None):
        X = sp.csr_matrix(X, dtype=np.float64)
        X.sum_duplicates()
        self.indptr = X.indptr.astype(np.int64)
        indices = X.indices if attr_rank is None else attr_rank[X.indices]
        self.indices = indices.astype(np.int32)
        self.data = X.data.astype(np.float64)
        self.n_tokens, self.n_features = X.shape
        self.offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.offsets[1:])
        self.gold = gold
        self._chunks = None
        self._bound = (None, None, None)

    def pair_ranges(self, attr_ptr):
        """``(pair_start, pair_stop)`` of every stored entry under a model's ``attr_ptr``."""
        if self._bound[0] is not attr_ptr:
            self._bound = (attr_ptr, attr_ptr[self.indices], attr_ptr[self.indices + 1])
        return self._bound[1], self._bound[2]

    @property
    def n_sequences(self):
        return self.offsets.shape[0] - 1

    def chunks(self):
        """Sequence index arrays of about ``_TOKENS_PER_CHUNK`` tokens each."""
        if self._chunks is None:
            bounds = [0]
            target = _TOKENS_PER_CHUNK
            for s in range(self.n_sequences):
                if self.offsets[s + 1] >= target:
                    bounds.append(s + 1)
                    target = self.offsets[s + 1] + _TOKENS_PER_CHUNK
            if bounds[-1] != self.n_sequences:
                bounds.append(self.n_sequences)
            self._chunks = [
                np.arange(a, b, dtype=np.int64) for a, b in zip(bounds[:-1], bounds[1:]) if b > a
            ]
        return self._chunks

    def parts(self):
        """``_TRAINING_PARTS`` sequence index arrays with about as many tokens each."""
        targets = np.linspace(0, self.n_tokens, _TRAINING_PARTS + 1)[1:-1]
        cuts = np.searchsorted(self.offsets, targets)
        bounds = np.unique(np.concatenate([[0], cuts, [self.n_sequences]]))
        return [np.arange(a, b, dtype=np.int64) for a, b in zip(bounds[:-1], bounds[1:])]

    def pairs(self, n_labels, all_possible_states):
        """``(attr_ptr, pair_label)``: the unary parameters of the model.

        Every (attribute, label) pair when ``all_possible_states``, otherwise
        the pairs whose attribute fires (nonzero value) on a token of that
        gold label, as CRFsuite does, except that an attribute seen with at
        least a quarter of the labels gets all of them: its weights are then a
        dense row, which the kernels add with vectorized loops (a few
        thousand frequent attributes account for most of the work).
        """
        F = self.n_features
        if all_possible_states:
            attr_ptr = np.arange(F + 1, dtype=np.int64) * n_labels
            pair_label = np.tile(np.arange(n_labels, dtype=np.int32), F)
            return attr_ptr, pair_label
        rows = np.repeat(np.arange(self.n_tokens), np.diff(self.indptr))
        used = self.data != 0.0
        keys = self.indices[used].astype(np.int64) * n_labels + self.gold[rows[used]]
        if F * n_labels <= 1 << 27:
            # A mark per possible pair is much faster than sorting the keys.
            seen = np.zeros((F, n_labels), dtype=bool)
            seen.ravel()[keys] = True
        else:
            seen = None
            keys = np.unique(keys)
        if seen is None:
            counts = np.bincount(keys // n_labels, minlength=F)
            dense = counts * 4 >= n_labels
            keys = np.union1d(
                keys,
                (np.flatnonzero(dense)[:, None] * n_labels + np.arange(n_labels)).ravel(),
            )
        else:
            dense = seen.sum(axis=1) * 4 >= n_labels
            seen[dense] = True
            keys = np.flatnonzero(seen.ravel())
        counts = np.bincount(keys // n_labels, minlength=F)
        attr_ptr = np.zeros(F + 1, dtype=np.int64)
        np.cumsum(counts, out=attr_ptr[1:])
        return attr_ptr, (keys % n_labels).astype(np.int32)


class ChainModel:
    """Parameter layout: unary pairs, then ``K * K`` transitions, ``K`` start, ``K`` end.

    ``trans_mask`` (and ``start_mask``, ``end_mask``) is 1 where the score is
    learned, 0 where it stays 0 and -1 where it is forbidden (score -inf).
    """

    def __init__(self, attr_ptr, pair_label, trans_mask, start_mask, end_mask):
        self.attr_ptr = attr_ptr
        self.pair_label = pair_label
        self.trans_mask = trans_mask
        self.start_mask = start_mask
        self.end_mask = end_mask
        self.n_labels = trans_mask.shape[0]
        self.n_pairs = int(attr_ptr[-1])
        K = self.n_labels
        self.n_params = self.n_pairs + K * K + 2 * K
        # Which parameters are free (1) or pinned to zero (0).
        self.learned = np.concatenate([
            np.ones(self.n_pairs),
            (trans_mask.ravel() > 0).astype(np.float64),
            (start_mask > 0).astype(np.float64),
            (end_mask > 0).astype(np.float64),
        ])

    def split(self, w):
        """``(w_unary, trans, start, end)`` with ``-inf`` at forbidden entries."""
        K, P = self.n_labels, self.n_pairs
        trans = np.where(self.trans_mask < 0, -np.inf, w[P:P + K * K].reshape(K, K))
        start = np.where(self.start_mask < 0, -np.inf, w[P + K * K:P + K * K + K])
        end = np.where(self.end_mask < 0, -np.inf, w[P + K * K + K:])
        return w[:P], np.ascontiguousarray(trans), start, end


class ChainRunner:
    """Runs the kernels over fixed parts of a dataset, serially or on threads."""

    def __init__(self, n_threads):
        self.n_threads = n_threads
        self._pool = ThreadPoolExecutor(n_threads) if n_threads > 1 else None

    def map(self, func, items):
        if self._pool is None:
            return [func(item) for item in items]
        return list(self._pool.map(func, items))

    def close(self):
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- prediction ---------------------------------------------------------

    def unary(self, model, data, w):
        """Unary scores (n_tokens, K), without the start / end scores."""
        U = np.zeros((data.n_tokens, model.n_labels))
        w_unary = w[:model.n_pairs]
        start, stop = data.pair_ranges(model.attr_ptr)
        self.map(lambda ids: fast.unary_part(data.indptr, start, stop, data.data,
                                             model.pair_label, w_unary,
                                             data.offsets, ids, U), data.chunks())
        return U

    def decode(self, model, data, w, marginals):
        """Viterbi labels per token, or (``marginals=True``) the unary marginals."""
        w_unary, trans, start, end = model.split(w)
        labels = np.zeros(data.n_tokens if not marginals else 0, dtype=np.int64)
        mu = np.zeros((data.n_tokens, model.n_labels) if marginals else (0, model.n_labels))
        p0, p1 = data.pair_ranges(model.attr_ptr)
        infeasible = self.map(
            lambda ids: fast.decode_part(marginals, data.indptr, p0, p1, data.data,
                                         model.pair_label, w_unary, data.offsets, trans,
                                         start, end, ids, labels, mu),
            data.chunks(),
        )
        bad = [s for s in infeasible if s >= 0]
        if bad:
            s = min(bad)
            n = data.offsets[s + 1] - data.offsets[s]
            raise ValueError(
                f"sequence {s} ({n} tokens) cannot be tagged: every label sequence of that "
                "length uses a forbidden transition, start or end (see forbidden_transitions)."
            )
        return mu if marginals else labels

    # --- training -----------------------------------------------------------

    def _run_parts(self, kind, model, data, w, parts, sparsemap_options):
        K = model.n_labels
        w_unary, trans, start, end = model.split(w)
        losses = np.zeros(data.n_sequences)
        p0, p1 = data.pair_ranges(model.attr_ptr)

        def run(seq_ids):
            grad = np.zeros(model.n_pairs)
            d_trans = np.zeros((K, K))
            d_start = np.zeros(K)
            d_end = np.zeros(K)
            args = (data.indptr, p0, p1, data.data, model.pair_label,
                    w_unary, data.offsets, data.gold, trans, start, end, seq_ids)
            if kind in (fast.SPARSEMAP, fast.MARGIN_SPARSEMAP):
                from ._chain_sparsemap_fast import sparsemap_part

                failed = sparsemap_part(kind, *args, *sparsemap_options,
                                        grad, d_trans, d_start, d_end, losses)
            else:
                fast.chain_part(kind, *args, grad, d_trans, d_start, d_end, losses)
                failed = 0
            return grad, np.concatenate([d_trans.ravel(), d_start, d_end]), failed

        results = self.map(run, parts)
        grad = np.empty(model.n_params)
        unary, tail = grad[:model.n_pairs], grad[model.n_pairs:]
        failed = 0
        # Parts are added in a fixed order: the same sums for any n_jobs.
        for i, (g, t, f) in enumerate(results):
            if i == 0:
                unary[:] = g
                tail[:] = t
            else:
                unary += g
                tail += t
            failed += f
        tail *= model.learned[model.n_pairs:]
        return losses, grad, failed

    def loss_and_grad(self, kind, model, data, w, sparsemap_options=()):
        """Sum of the losses over all sequences and its gradient (no penalty)."""
        losses, grad, failed = self._run_parts(kind, model, data, w, data.parts(),
                                               sparsemap_options)
        return float(np.sum(losses)), grad, failed

    def batch_loss_and_grad(self, kind, model, data, w, seq_ids, sparsemap_options=()):
        """Like :meth:`loss_and_grad` on the sequences ``seq_ids`` only.

        The batch is cut in ``_BATCH_PARTS`` fixed halves whatever the
        number of threads, so that results do not depend on it.
        """
        parts = [p for p in np.array_split(seq_ids, _BATCH_PARTS) if len(p)]
        losses, grad, failed = self._run_parts(kind, model, data, w, parts,
                                               sparsemap_options)
        return float(np.sum(losses[seq_ids])), grad, failed
