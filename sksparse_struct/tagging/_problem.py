"""The training problems of the feature-based taggers: data layout, objective, decoding.

Kept apart from the estimators so that the learners only see an objective
(``loss_and_grad(w)`` for L-BFGS), an online problem (:class:`ChainProblem`,
for ``learners.minimize_online``; :class:`EasyFirstProblem`, the easy-first
tagger's guided learning) or a BCFW problem (:class:`ChainBCFWProblem`, for
``learners.minimize_bcfw``), and the estimators only deal with validation
and scikit-learn glue.
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

from ..learners import SparseGradient
from ..losses._kinds_fast import HINGE, MARGIN_SPARSEMAP, SPARSEMAP, SPARSEMAP_OPTIONS
from . import _chain_fast as fast
from . import _easy_first_fast
from ._chain_bcfw_fast import chain_bcfw_pass, chain_joint_feature, chain_loss_augmented
from ._chain_fast import ChainGradient, Chains, ChainScores

# Work is cut into fixed chunks (never into "one per thread") so that sums
# are always taken in the same order: results do not depend on n_jobs.
_TOKENS_PER_CHUNK = 4096
# Training splits the data into this many parts (balanced by tokens), each
# with its own gradient buffer; more would cost memory for nothing on
# typical machines.
_TRAINING_PARTS = 4
# Dense-mode placeholder for the sparse gradient (see ChainGradient).
_NO_SPARSE = SparseGradient(np.zeros((0, 2)), np.zeros((1, 0), dtype=np.int64),
                            np.zeros(1, dtype=np.int64))
# Sparse-mode placeholder for the dense unary gradient.
_EMPTY = np.zeros(0)


def frequency_rank(X):
    """Internal feature numbering by decreasing number of tokens with a nonzero value.

    Frequent attributes then have neighbouring weights, which keeps the
    kernels' random accesses within a few cache lines.
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

    def chains(self, attr_ptr, pair_label):
        """The kernels' view of the data under a model's unary pairs (a :class:`Chains`)."""
        pair_start, pair_stop = self.pair_ranges(attr_ptr)
        gold = self.gold if self.gold is not None else np.zeros(0, dtype=np.int64)
        return Chains(self.indptr, pair_start, pair_stop, self.data, pair_label,
                      self.offsets, gold)

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
        self.tail_learned = np.ascontiguousarray(self.learned[self.n_pairs:])

    def split(self, w):
        """``(w_unary, trans, start, end)`` with ``-inf`` at forbidden entries."""
        K, P = self.n_labels, self.n_pairs
        trans = np.where(self.trans_mask < 0, -np.inf, w[P:P + K * K].reshape(K, K))
        start = np.where(self.start_mask < 0, -np.inf, w[P + K * K:P + K * K + K])
        end = np.where(self.end_mask < 0, -np.inf, w[P + K * K + K:])
        return w[:P], np.ascontiguousarray(trans), start, end

    def scores(self, w):
        """The weights ``w`` as the kernels' :class:`ChainScores`."""
        return ChainScores(*self.split(w))


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
        chains = data.chains(model.attr_ptr, model.pair_label)
        w_unary = w[:model.n_pairs]
        self.map(lambda ids: fast.unary_part(chains, w_unary, ids, U), data.chunks())
        return U

    def decode(self, model, data, w, marginals, seq_ids=None):
        """Viterbi labels per token, or (``marginals=True``) the unary marginals.

        Of the sequences ``seq_ids`` only when given (the other tokens' stay 0).
        """
        scores = model.scores(w)
        labels = np.zeros(data.n_tokens if not marginals else 0, dtype=np.int64)
        mu = np.zeros((data.n_tokens, model.n_labels) if marginals else (0, model.n_labels))
        chains = data.chains(model.attr_ptr, model.pair_label)
        infeasible = self.map(
            lambda ids: fast.decode_part(marginals, chains, scores, ids, labels, mu),
            data.chunks() if seq_ids is None else [np.asarray(seq_ids, dtype=np.int64)],
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

    # --- full-batch objective -----------------------------------------------

    def loss_and_grad(self, kind, model, data, w, sparsemap_options=SPARSEMAP_OPTIONS):
        """Sum of the losses over all sequences and its gradient (no penalty).

        The data are cut in fixed parts, each with its own dense gradient
        buffer, added in a fixed order: the same sums for any number of
        threads. Also returns the part kernels' counts, summed (see
        :func:`part_loss`).
        """
        K = model.n_labels
        scores = model.scores(w)
        chains = data.chains(model.attr_ptr, model.pair_label)
        losses = np.zeros(data.n_sequences)
        parts = data.parts()

        def run(seq_ids):
            out = ChainGradient(np.zeros(model.n_pairs), np.zeros((K, K)), np.zeros(K),
                                np.zeros(K), _NO_SPARSE, 0, 0, model.tail_learned)
            part_losses = np.empty(seq_ids.shape[0])
            failed = part_loss(kind, chains, scores, seq_ids, out, part_losses,
                               sparsemap_options)
            return out, part_losses, failed

        results = self.map(run, parts)
        grad = np.empty(model.n_params)
        unary, tail = grad[:model.n_pairs], grad[model.n_pairs:]
        failed = 0
        # Parts are added in a fixed order: the same sums for any n_jobs.
        for i, ((out, part_losses, f), seq_ids) in enumerate(zip(results, parts)):
            losses[seq_ids] = part_losses
            t = np.concatenate([out.trans.ravel(), out.start, out.end])
            if i == 0:
                unary[:] = out.unary
                tail[:] = t
            else:
                unary += out.unary
                tail += t
            failed += f
        tail *= model.learned[model.n_pairs:]
        return float(np.sum(losses)), grad, failed


def part_loss(kind, chains, scores, seq_ids, out, losses, sparsemap_options=SPARSEMAP_OPTIONS):
    """Run the part kernel of the loss ``kind``.

    Returns its count: for the SparseMAP losses, the solves that did not
    converge; for the others, the sequences with a nonzero gradient.
    """
    if kind in (SPARSEMAP, MARGIN_SPARSEMAP):
        return fast.chain_sparsemap_part(kind, chains, scores, seq_ids, sparsemap_options,
                                         out, losses)
    return fast.chain_part(kind, chains, scores, seq_ids, out, losses)


class ChainProblem:
    """The online problem (``learners._online``) of training the tagger.

    Parameters
    ----------
    kind : int
        The loss (``losses._kinds_fast`` code).
    model : ChainModel
    data : ChainData
        With gold labels.
    sparsemap_options : SparseMAPOptions, default=SPARSEMAP_OPTIONS
        The active set's settings, for the SparseMAP losses.
    n_threads : int, default=1
        Threads of the held-out decoding (:meth:`score`).
    """

    def __init__(self, kind, model, data, sparsemap_options=SPARSEMAP_OPTIONS, n_threads=1):
        self.n_threads = n_threads
        self.kind = kind
        self.model = model
        self.data = data
        self.sparsemap_options = sparsemap_options
        self.chains = data.chains(model.attr_ptr, model.pair_label)
        self.n_params = model.n_params
        K, P = model.n_labels, model.n_pairs
        # Forbidden scores as -inf to add to the weights (which stay 0 there):
        # a step costs a few small additions, not a where() per array.
        self._forbidden = tuple(np.where(mask < 0, -np.inf, 0.0) for mask in
                                (model.trans_mask, model.start_mask, model.end_mask))
        self._slices = (slice(P, P + K * K), slice(P + K * K, P + K * K + K),
                        slice(P + K * K + K, P + K * K + 2 * K))
        # Dense transition buffers per part, handed back zeroed by the kernels.
        self._tails = {}

    def sample_costs(self):
        return np.diff(self.data.offsets) + 1.0

    def _scores(self, w):
        (t, s, e), (ft, fs, fe) = self._slices, self._forbidden
        return ChainScores(w[:self.model.n_pairs], w[t].reshape(ft.shape) + ft, w[s] + fs,
                           w[e] + fe)

    def batch_gradient(self, w, sample_ids, gradient, part, step):
        """Push the part's gradient; statistics: loss, then the part kernel's count."""
        K = self.model.n_labels
        tail = self._tails.get(part)
        if tail is None:
            tail = self._tails[part] = (np.zeros((K, K)), np.zeros(K), np.zeros(K))
        out = ChainGradient(_EMPTY, *tail, gradient, part, step, self.model.tail_learned)
        losses = np.empty(sample_ids.shape[0])
        count = part_loss(self.kind, self.chains, self._scores(w), sample_ids, out, losses,
                          self.sparsemap_options)
        return np.array([losses.sum(), count])

    def score(self, w, sample_ids):
        """Token accuracy of the Viterbi labels of ``sample_ids`` (early stopping)."""
        with ChainRunner(self.n_threads) as runner:
            labels = runner.decode(self.model, self.data, w, False, sample_ids)
        offsets = self.data.offsets
        rows = np.concatenate([np.arange(offsets[s], offsets[s + 1]) for s in sample_ids]
                              + [np.zeros(0, np.int64)])
        return float(np.mean(labels[rows] == self.data.gold[rows]))

    def sequential_steps(self, w, sample_ids, gradient, first_step, scale, opt, rule):
        """One update per sequence, in one compiled call (the SparseMAP losses: None).

        The optional fast path of the online problem interface for batches of
        one sequence (the perceptron's): see ``learners._online``.
        """
        if self.kind in (SPARSEMAP, MARGIN_SPARSEMAP):
            return None
        total, count = fast.chain_steps(self.kind, self.chains, w, self._forbidden,
                                        sample_ids, gradient, first_step, scale, opt, rule,
                                        self.model.tail_learned)
        return np.array([total, count])


class ChainBCFWProblem:
    """The BCFW problem (``learners._bcfw``) of the tagger's structured SVM (Hamming cost).

    A structure of a sequence of ``n`` tokens is a vector of ``n K + K K``
    entries: the label indicators of its tokens, then its transition
    counts (see ``_chain_bcfw_fast``). Its statistics are the structured
    hinge loss at the weights of the call and whether the decoding differs
    from the gold labels.

    Parameters
    ----------
    model : ChainModel
    data : ChainData
        With gold labels.
    n_threads : int, default=1
        Threads of :meth:`hinge_sum` (the same sums for any number).
    """

    stat_names = ("loss", "mistakes")

    def __init__(self, model, data, n_threads=1):
        self.model = model
        self.data = data
        self.n_threads = n_threads
        self.chains = data.chains(model.attr_ptr, model.pair_label)
        self.n_params = model.n_params
        self.n_samples = data.n_sequences
        K, P = model.n_labels, model.n_pairs
        self._forbidden = tuple(np.where(mask < 0, -np.inf, 0.0) for mask in
                                (model.trans_mask, model.start_mask, model.end_mask))
        self._slices = (slice(P, P + K * K), slice(P + K * K, P + K * K + K),
                        slice(P + K * K + K, P + K * K + 2 * K))
        lengths = np.diff(data.offsets)
        longest = max(int(lengths.max(initial=0)), 1)
        self._u = np.empty((longest, K))
        self._m = np.empty(longest * K + K * K)
        self._diff = np.empty(longest * K + K * K)

    def _length(self, i):
        return int(self.data.offsets[i + 1] - self.data.offsets[i])

    def gold(self, i):
        K = self.model.n_labels
        n = self._length(i)
        labels = self.data.gold[self.data.offsets[i]:self.data.offsets[i + 1]]
        m = np.zeros(n * K + K * K)
        m[np.arange(n) * K + labels] = 1.0
        np.add.at(m, n * K + labels[:-1] * K + labels[1:], 1.0)
        return m

    def loss_augmented(self, w, i):
        (t, s, e), (ft, fs, fe) = self._slices, self._forbidden
        scores = ChainScores(w[:self.model.n_pairs], w[t].reshape(ft.shape) + ft,
                                  w[s] + fs, w[e] + fe)
        K = self.model.n_labels
        m = np.empty(self._length(i) * K + K * K)
        cost, loss = chain_loss_augmented(self.chains, scores, np.int64(i), self._u, m)
        return m, cost, np.array([loss, float(cost > 0.0)])

    def bcfw_pass(self, state, order):
        """A whole pass in one compiled call (the optional fast path of ``learners._bcfw``)."""
        total, bad = chain_bcfw_pass(self.chains, self._forbidden,
                                     np.ascontiguousarray(order, dtype=np.int64), self._u,
                                     self._m, self._diff, self.model.tail_learned, state)
        if bad >= 0:
            # Our own kernels write valid entries; this would be a bug.
            raise RuntimeError(f"the BCFW step of sequence {bad} met an invalid feature entry.")
        return total

    def hinge_sum(self, w):
        """The sum of the hinge losses at ``w`` (for the duality gap), over fixed parts."""
        with ChainRunner(self.n_threads) as runner:
            return runner.loss_and_grad(HINGE, self.model, self.data, w)[0]

    def joint_feature(self, i, m):
        return chain_joint_feature(self.chains, np.int64(i), np.ascontiguousarray(m),
                                   np.int64(self.model.n_labels), self.model.tail_learned)


class EasyFirstProblem:
    """The online problem (``learners._online``) of the easy-first tagger's guided learning.

    Each sequence is one step of the averaged perceptron: the weights move
    after every wrong decision while the sequence is decoded (see
    ``_easy_first_fast.guided_steps``), so the steps always run in
    :meth:`sequential_steps`, with ``batch_size=1``.

    Parameters
    ----------
    data : ChainData
        With gold labels.
    attr_ptr, pair_label : ndarray
        The model's unary pairs (:meth:`ChainData.pairs`).
    n_labels, window : int
        Tags, and the sketch window.
    n_threads : int, default=1
        Threads of the held-out decoding (:meth:`score`).
    """

    def __init__(self, data, attr_ptr, pair_label, n_labels, window, n_threads=1):
        self.data = data
        self.chains = data.chains(attr_ptr, pair_label)
        self.n_pairs = int(attr_ptr[-1])
        self.n_labels = int(n_labels)
        self.window = int(window)
        self.n_params = self.n_pairs + (
            _easy_first_fast.n_sketch_rows(self.n_labels, self.window) * self.n_labels)
        self.n_threads = n_threads

    def sample_costs(self):
        return np.diff(self.data.offsets) + 1.0

    def sequential_steps(self, w, sample_ids, gradient, first_step, scale, opt, rule):
        """Guided learning on ``sample_ids`` in order; statistics: the mistakes (updates)."""
        mistakes = _easy_first_fast.guided_steps(
            self.chains, w, self.n_pairs, self.n_labels, self.window, sample_ids, gradient,
            first_step, scale, opt, rule)
        return np.array([mistakes.sum()])

    def decode(self, w, seq_ids=None):
        """Tags and decision orders (stacked) of ``seq_ids`` (default: all sequences)."""
        return easy_first_decode(self.chains, w, self.n_pairs, self.n_labels, self.window,
                                 self.data, self.n_threads, seq_ids)

    def score(self, w, sample_ids):
        """Token accuracy of the decoded ``sample_ids`` (early stopping)."""
        tags, _ = self.decode(w, sample_ids)
        offsets = self.data.offsets
        rows = np.concatenate([np.arange(offsets[s], offsets[s + 1]) for s in sample_ids]
                              + [np.zeros(0, np.int64)])
        return float(np.mean(tags[rows] == self.data.gold[rows]))


def easy_first_decode(chains, w, n_pairs, n_labels, window, data, n_threads, seq_ids=None):
    """Easy-first tags and decision orders (stacked) of ``seq_ids`` (default: all) of ``data``."""
    tags = np.zeros(data.n_tokens, dtype=np.int64)
    order = np.zeros(data.n_tokens, dtype=np.int64)
    parts = data.chunks() if seq_ids is None else [np.asarray(seq_ids, dtype=np.int64)]
    with ChainRunner(n_threads) as runner:
        runner.map(
            lambda ids: _easy_first_fast.decode_part(chains, w, n_pairs, n_labels, window, ids,
                                                     tags, order),
            parts,
        )
    return tags, order
