"""Neural easy-first tagger (Martins & Kreutzer 2017): sketch steps with (constrained) attention."""

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import threadpool_limits

from ..learners import minimize_online
from ..learners._online_fast import push_all
from ..metrics import flat_accuracy_score
from ..utils._estimator import StructuredEstimatorMixin, validation_split
from ..utils._reporting import Progress, warn_max_iter
from ..utils._sklearn_compat import Interval, StrOptions, fit_context
from ._nef_fast import (
    ATTENTIONS,
    CSOFTMAX,
    CSPARSEMAX,
    HARD,
    LEFT_TO_RIGHT,
    RIGHT_TO_LEFT,
)
from ._nef_network import N_AFFIX, SOFT_ATTENTIONS, Batch, Config, Network

__all__ = ["NeuralEasyFirstTagger"]

# Every mini-batch is cut into this many fixed parts (by the online learner;
# threads take parts): fixed, so that results do not depend on n_jobs.
_BATCH_PARTS = 2
# Sentences per batch at prediction time.
_PREDICT_BATCH = 64
# Mini-batches are formed among this many consecutive batches' worth of
# shuffled sentences sorted by length, so that a batch pads little.
_BUCKET_BATCHES = 20
# The attentions that cannot take more steps than a sentence has words
# (each word has one unit of attention, or is visited once).
_CAPPED = {CSOFTMAX, CSPARSEMAX, HARD, LEFT_TO_RIGHT, RIGHT_TO_LEFT}


def _token_text(token, s, i):
    if isinstance(token, str):
        return token
    if isinstance(token, dict):
        for key in ("word", "form"):
            value = token.get(key)
            if isinstance(value, str):
                return value
        raise ValueError(
            f"X[{s}][{i}] is a token dict without a string 'word' or 'form' entry "
            f"(keys: {sorted(map(str, token))})."
        )
    raise ValueError(
        f"X[{s}][{i}] is {type(token).__name__} {token!r}; a token must be a string or a "
        "dict with a 'word' or 'form' key."
    )


def _sentences(X):
    """``X`` as a list of lists of word strings, with clear errors."""
    if isinstance(X, (str, bytes, dict)) or not hasattr(X, "__len__"):
        raise ValueError(
            "X must be a list of sentences (each a list of tokens: strings, or dicts with a "
            f"'word' or 'form' key); got {type(X).__name__}."
        )
    out = []
    for s, sent in enumerate(X):
        if isinstance(sent, (str, bytes, dict)) or not hasattr(sent, "__len__"):
            raise ValueError(
                f"X[{s}] is {type(sent).__name__}, expected a list of tokens (a sentence)."
            )
        out.append([_token_text(tok, s, i) for i, tok in enumerate(sent)])
    return out


def _affixes(word):
    """Keys of the prefixes then the suffixes of 1 .. N_AFFIX characters (None if too short)."""
    pre = [("p" + word[:n]) if len(word) >= n else None for n in range(1, N_AFFIX + 1)]
    suf = [("s" + word[-n:]) if len(word) >= n else None for n in range(1, N_AFFIX + 1)]
    return pre + suf


class NEFProblem:
    """The online problem (``learners._online``) of training a :class:`NeuralEasyFirstTagger`.

    The samples are the training sentences. A part of a mini-batch is one
    batch of the network (padded to its longest sentence): its loss and
    gradient (each sentence's clipped to ``clip_norm``) are pushed to the
    learner's sparse gradient, every dense parameter and the embedding rows
    the part read. Mini-batches are formed among ``_BUCKET_BATCHES``
    batches' worth of shuffled sentences sorted by length, so that they pad
    little (:meth:`epoch_batches`). Dropout masks come from a generator
    seeded by ``(dropout_seed, step, part)``: the same for every ``n_jobs``.
    """

    def __init__(self, tagger, word_ids, affix_ids, gold, class_weight, dropout_seed, pool):
        self.tagger = tagger
        self.net = tagger.network_
        self.n_params = self.net.size
        self.word_ids, self.affix_ids, self.gold = word_ids, affix_ids, gold
        self.class_weight = class_weight
        self.dropout_seed = dropout_seed
        self.pool = pool
        self.lengths = np.array([len(w) for w in word_ids], dtype=np.float64)
        self.epoch = 1
        # The flat coordinates of each dense block and each embedding table's width.
        self._blocks = [(name, np.arange(a, b, dtype=np.int64), shape)
                        for name, (a, b, shape) in self.net.offsets.items()]

    def sample_costs(self):
        return self.lengths

    def epoch_batches(self, order, batch_size, rng):
        """Mini-batches of sentences of similar lengths, in a random order."""
        chunk = batch_size * _BUCKET_BATCHES
        batches = []
        for c in range(0, len(order), chunk):
            part = order[c:c + chunk]
            part = part[np.argsort(self.lengths[part], kind="stable")]
            batches.extend(part[b:b + batch_size] for b in range(0, len(part), batch_size))
        return [batches[k] for k in rng.permutation(len(batches))]

    def batch_gradient(self, w, sample_ids, gradient, part, step):
        """Push the sum of the sentences' (clipped) gradients; statistics: the summed loss."""
        tagger = self.tagger
        batch = tagger._batch(sample_ids, self.word_ids, self.affix_ids, self.gold)
        rng = np.random.default_rng([self.dropout_seed, step, part])
        try:
            value, grads = self.net.loss(w, batch, self.class_weight, rng=rng,
                                         dropout=tagger.dropout, clip_norm=tagger.clip_norm)
        except FloatingPointError:
            value = np.nan
        n = float(len(sample_ids))
        count = 0
        col, touched, stamp = 2 * part, gradient.touched[part], float(step)
        for name, idx, shape in self._blocks:
            if not np.isfinite(value):
                break
            g = grads[name]
            if name.startswith("E_"):
                rows, values = g
                dim = shape[1]
                idx = (idx[0] + rows[:, None] * dim + np.arange(dim)).ravel()
                g = values
            g = np.ascontiguousarray(g, dtype=np.float64).ravel()
            if not np.isfinite(g).all():
                value = np.nan
                break
            count = push_all(idx, g, n, gradient.values, col, touched, count, stamp)
        if not np.isfinite(value):
            raise ValueError(tagger._diverged(self.epoch - 1))
        gradient.n_touched[part] = count
        return np.array([n * value])

    def score(self, w, sample_ids):
        """Token accuracy of the predicted tags of ``sample_ids`` (early stopping)."""
        try:
            pred = self.tagger._predict_ids(w, sample_ids, self.word_ids, self.affix_ids,
                                            self.pool)
        except FloatingPointError:
            raise ValueError(self.tagger._diverged(self.epoch - 1)) from None
        correct = sum(int((p == self.gold[i]).sum()) for p, i in zip(pred, sample_ids))
        return correct / sum(len(self.gold[i]) for i in sample_ids)


class NeuralEasyFirstTagger(StructuredEstimatorMixin, BaseEstimator):
    """Neural easy-first sequence tagger with constrained attention.

    The model of Martins & Kreutzer (2017, Alg. 2): the words are encoded
    by a BiLSTM over the sum of word, prefix and suffix embeddings; then
    ``n_steps`` *sketch steps* each put an attention distribution over the
    words (which ones to work on now) and add to the attended words' sketch
    vectors an update computed from a window of encoder states and sketches;
    finally every word is tagged from its encoder state and its last sketch.
    With csoftmax attention (the default) the bounds ``1 - cumulative
    attention`` give every word one unit of attention to spend over the
    steps: with as many steps as words, each word receives exactly one unit,
    as in the classic easy-first tagger, which decides one word per step,
    easiest first.

    ``X`` is a list of sentences, each a list of tokens: strings, or dicts
    with a ``"word"`` or ``"form"`` key (as :func:`~sksparse_struct.datasets.read_conll`
    and :func:`~sksparse_struct.datasets.read_conllu` return them). The
    tagger builds its own word and affix vocabularies.

    Read more in the :ref:`User Guide <neural_easy_first>`.

    Parameters
    ----------
    n_steps : int or "L", default="L"
        Sketch steps: ``"L"`` takes as many steps as the sentence has words,
        an integer a fixed number (0 gives a plain BiLSTM tagger). The
        attentions that spend a unit per word ("csoftmax", "csparsemax",
        "hard" and the prescribed orders) take at most as many steps as the
        sentence has words.
    state : {"full", "single"}, default="full"
        Sketch update: "full" (NEF-F) updates each word from its own context,
        ``s_i += a_i tanh(affine(c_i))``; "single" (NEF-S) gives every
        attended word the same update, computed from the attention-weighted
        average context.
    attention : {"csoftmax", "csparsemax", "softmax", "sparsemax", "hard", \
"uniform", "left_to_right", "right_to_left"}, default="csoftmax"
        How the attention of a step is computed from the scores of the words.
        "csoftmax" and "csparsemax" bound each word's attention by
        ``1 - (its attention so far)``; "softmax" and "sparsemax" do not.
        "hard" is the classic easy-first decoder: each step attends only the
        not yet attended word with the highest output score (no gradient
        flows through the choice). "uniform", "left_to_right" (step ``n``
        attends word ``n``) and "right_to_left" are the ablations of the
        paper.
    discount_factor : float, default=0.0
        Soft attentions only: each step's scores are lowered by
        ``discount_factor`` times each word's attention so far before the
        mapping, steering later steps to words not yet attended (the
        authors' code has it, the paper does not; 0 leaves them).
    temperature : float, default=1.0
        Soft attentions only: the (discounted) scores are divided by it
        before the mapping, as in the authors' code; above 1 spreads the
        attention, below 1 sharpens it.
    window : int, default=2
        The context of a word is the encoder states and sketches of the
        words at most ``window`` positions away.
    output : {"softmax", "crf"}, default="softmax"
        Output layer: independent softmax per word, or a linear-chain CRF
        (transition, start and end scores; trained by its negative
        log-likelihood, decoded by Viterbi).
    concat_encoder : bool, default=True
        Tag from ``concat(h_i, s_i)``; if False from the sketch ``s_i`` alone
        (an ablation).
    word_dim, affix_dim, hidden_dim, sketch_dim, attention_dim : int, \
default=64, 50, 50, 50, 50
        Sizes of the word and affix embeddings, of each LSTM direction, of
        the sketches and of the attention's hidden layer.
    dropout : float, default=0.2
        Dropout probability after the embeddings, after the BiLSTM and
        before the output layer.
    min_count : int, default=2
        Words and affixes seen fewer times in training are unknown (a word
        then keeps its known affixes).
    max_iter : int, default=20
        Epochs (passes over the training sentences) at most.
    tol : float or None, default=1e-4
        Stop when ``n_iter_no_change`` epochs in a row fail to bring the
        held-out accuracy above the best so far plus ``tol`` (without
        ``early_stopping``: the mean training loss below the best minus
        ``tol``). A ``ConvergenceWarning`` says when ``max_iter`` ended the
        fit first. None: run ``max_iter`` epochs and do not warn.
    batch_size : int, default=16
        Sentences per AdaGrad step.
    learning_rate : float, default=0.1
        AdaGrad step size (the package's AdaGrad,
        :func:`~sksparse_struct.learners.minimize_online`: per-parameter
        steps ``learning_rate / sqrt(sum of squared gradients + 1e-8)``).
        With ``attention="sparsemax"`` use 0.05: at 0.1 its training
        stalls (see the User Guide).
    clip_norm : float or None, default=5.0
        The gradient of each sentence's loss is rescaled to this Euclidean
        norm when longer, before the average over the mini-batch (as when
        updating after every sentence). So one sentence whose gradient
        explodes, as the gradient through many sketch steps can under
        ``attention="sparsemax"``, does not wipe out the other sentences'
        share of the step. None: no clipping.
    class_weight : dict, "balanced" or None, default=None
        Weights of the tags in the cross-entropy (softmax output only).
    early_stopping : bool, default=True
        Hold out ``validation_fraction`` of the training sentences, keep the
        parameters of the epoch with the best token accuracy on them, and
        stop as ``tol`` says. False trains on every sentence.
    validation_fraction : float, default=0.1
        Fraction of the sentences held out with ``early_stopping`` (rounded
        up).
    n_iter_no_change : int, default=3
        Epochs without improvement before stopping (see ``tol``).
    max_train_length : int or None, default=None
        Training sentences longer than this are left out (with ``n_steps="L"``
        a sentence of ``L`` words costs ``L**2``); prediction takes any
        length.
    random_state : int, RandomState instance or None, default=None
        Initialization, dropout, shuffling and the validation split.
    verbose : int, default=0
        If positive, print a progress line every ``verbose`` epochs: the mean
        training loss, the held-out accuracy, the epoch's time and the total
        time (the format is described in the :ref:`User Guide <progress>`).
    n_jobs : int, default=None
        Threads over two fixed halves of every mini-batch (and over chunks of
        sentences at prediction); ``None`` means 1, -1 all cores. Each thread
        runs single-threaded matrix products. Results are identical for
        every value.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The tags, sorted.
    vocabulary_ : dict
        Word -> row of the word embeddings (0 is the unknown word).
    affix_vocabulary_ : dict
        Affix key (``"p"`` or ``"s"`` followed by the prefix or suffix) ->
        row of the affix embeddings (0: none or unknown).
    network_ : object
        The network's configuration and parameter layout.
    params_ : ndarray
        All parameters, flat (cut by the layout of ``network_``).
    n_iter_ : int
        Epochs run.
    loss_curve_ : list of float
        Mean training loss per sentence of each epoch (with dropout).
    validation_scores_ : list of float
        Token accuracy on the held-out sentences after each epoch (empty
        without early stopping).

    Notes
    -----
    One sketch step costs time in proportion to the sentence length, so a
    sentence costs ``O((N + K) L)`` for ``N`` steps and ``K`` tags, quadratic
    in its length when ``n_steps="L"``; a plain BiLSTM (``n_steps=0``) costs
    ``O(K L)``.

    References
    ----------
    André F. T. Martins and Julia Kreutzer (2017). Learning What's Easy:
    Fully Differentiable Neural Easy-First Taggers. EMNLP.

    See Also
    --------
    sksparse_struct.LinearChainCRF : A linear-chain tagger on token features.
    sksparse_struct.mappings.csoftmax : The constrained softmax.

    Examples
    --------
    >>> from sksparse_struct import NeuralEasyFirstTagger
    >>> X = [["the", "dog", "barks"], ["a", "cat", "sleeps"], ["the", "cat", "barks"]] * 10
    >>> y = [["DET", "NOUN", "VERB"]] * 30
    >>> tagger = NeuralEasyFirstTagger(word_dim=8, affix_dim=4, hidden_dim=8, sketch_dim=8,
    ...                                attention_dim=8, max_iter=5, random_state=0)
    >>> tagger.fit(X, y).predict([["a", "dog", "sleeps"]])
    [['DET', 'NOUN', 'VERB']]
    >>> tagger.predict_attention([["a", "dog", "sleeps"]])[0].sum(axis=0).round(6).tolist()
    [1.0, 1.0, 1.0]
    """

    _parameter_constraints: dict = {
        "n_steps": [Interval(Integral, 0, None, closed="left"), StrOptions({"L"})],
        "state": [StrOptions({"full", "single"})],
        "attention": [StrOptions(set(ATTENTIONS))],
        "discount_factor": [Interval(Real, 0, None, closed="left")],
        "temperature": [Interval(Real, 0, None, closed="neither")],
        "window": [Interval(Integral, 0, None, closed="left")],
        "output": [StrOptions({"softmax", "crf"})],
        "concat_encoder": ["boolean"],
        "word_dim": [Interval(Integral, 1, None, closed="left")],
        "affix_dim": [Interval(Integral, 1, None, closed="left")],
        "hidden_dim": [Interval(Integral, 1, None, closed="left")],
        "sketch_dim": [Interval(Integral, 1, None, closed="left")],
        "attention_dim": [Interval(Integral, 1, None, closed="left")],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "min_count": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [None, Interval(Real, 0, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "clip_norm": [None, Interval(Real, 0, None, closed="neither")],
        "class_weight": [None, dict, StrOptions({"balanced"})],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "max_train_length": [None, Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "n_jobs": [None, Integral],
    }

    def __init__(
        self,
        n_steps="L",
        *,
        state="full",
        attention="csoftmax",
        discount_factor=0.0,
        temperature=1.0,
        window=2,
        output="softmax",
        concat_encoder=True,
        word_dim=64,
        affix_dim=50,
        hidden_dim=50,
        sketch_dim=50,
        attention_dim=50,
        dropout=0.2,
        min_count=2,
        max_iter=20,
        tol=1e-4,
        batch_size=16,
        learning_rate=0.1,
        clip_norm=5.0,
        class_weight=None,
        early_stopping=True,
        validation_fraction=0.1,
        n_iter_no_change=3,
        max_train_length=None,
        random_state=None,
        verbose=0,
        n_jobs=None,
    ):
        self.n_steps = n_steps
        self.state = state
        self.attention = attention
        self.discount_factor = discount_factor
        self.temperature = temperature
        self.window = window
        self.output = output
        self.concat_encoder = concat_encoder
        self.word_dim = word_dim
        self.affix_dim = affix_dim
        self.hidden_dim = hidden_dim
        self.sketch_dim = sketch_dim
        self.attention_dim = attention_dim
        self.dropout = dropout
        self.min_count = min_count
        self.max_iter = max_iter
        self.tol = tol
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.clip_norm = clip_norm
        self.class_weight = class_weight
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.max_train_length = max_train_length
        self.random_state = random_state
        self.verbose = verbose
        self.n_jobs = n_jobs

    _sklearn_tags = {"input_tags.string": True}
    _score_metric = staticmethod(flat_accuracy_score)

    # --- data -----------------------------------------------------------------------------

    def _build_vocabularies(self, sentences):
        words = Counter(w for sent in sentences for w in sent)
        affixes = Counter()
        for w, c in words.items():
            for a in _affixes(w):
                if a is not None:
                    affixes[a] += c
        keep = sorted(w for w, c in words.items() if c >= self.min_count)
        self.vocabulary_ = {w: i + 1 for i, w in enumerate(keep)}
        keep = sorted(a for a, c in affixes.items() if c >= self.min_count)
        self.affix_vocabulary_ = {a: i + 1 for i, a in enumerate(keep)}

    def _encode(self, sentences):
        """Word ids and affix ids of every sentence (lists of arrays)."""
        vocab, avocab = self.vocabulary_, self.affix_vocabulary_
        word_ids, affix_ids = [], []
        cache = {}
        for sent in sentences:
            w = np.array([vocab.get(t, 0) for t in sent], dtype=np.int64)
            a = np.zeros((len(sent), 2 * N_AFFIX), dtype=np.int64)
            for i, t in enumerate(sent):
                row = cache.get(t)
                if row is None:
                    row = [avocab.get(k, 0) if k is not None else 0 for k in _affixes(t)]
                    cache[t] = row
                a[i] = row
            word_ids.append(w)
            affix_ids.append(a)
        return word_ids, affix_ids

    def _labels(self, y, lengths):
        if isinstance(y, (str, bytes, dict)) or not hasattr(y, "__len__"):
            raise ValueError(f"y must be a list of tag sequences; got {type(y).__name__}.")
        if len(y) != len(lengths):
            raise ValueError(f"X has {len(lengths)} sentences but y has {len(y)} tag sequences.")
        for s, (seq, n) in enumerate(zip(y, lengths)):
            if isinstance(seq, (str, bytes)) or not hasattr(seq, "__len__"):
                raise ValueError(
                    f"y[{s}] is {type(seq).__name__} {seq!r}, expected a sequence of tags."
                )
            if len(seq) != n:
                raise ValueError(f"sentence {s} has {n} tokens in X but {len(seq)} tags in y.")
        return [list(seq) for seq in y]

    def _steps(self, length):
        if self.n_steps == "L":
            return length
        if ATTENTIONS[self.attention] in _CAPPED:
            return min(self.n_steps, length)
        return self.n_steps

    def _batch(self, ids, word_ids, affix_ids, gold=None):
        lengths = np.array([len(word_ids[i]) for i in ids], dtype=np.int64)
        B, T = len(ids), max(int(lengths.max()), 1)
        words = np.zeros((B, T), dtype=np.int64)
        affixes = np.zeros((B, T, 2 * N_AFFIX), dtype=np.int64)
        labels = np.zeros((B, T), dtype=np.int64)
        for b, i in enumerate(ids):
            n = lengths[b]
            words[b, :n] = word_ids[i]
            affixes[b, :n] = affix_ids[i]
            if gold is not None:
                labels[b, :n] = gold[i]
        n_steps = np.array([self._steps(int(n)) for n in lengths], dtype=np.int64)
        return Batch(words, affixes, lengths, labels, n_steps)

    def _config(self):
        return Config(
            n_words=len(self.vocabulary_) + 1,
            n_affixes=len(self.affix_vocabulary_) + 1,
            n_tags=len(self.classes_),
            word_dim=self.word_dim,
            affix_dim=self.affix_dim,
            hidden=self.hidden_dim,
            sketch_dim=self.sketch_dim,
            attention_dim=self.attention_dim,
            window=self.window,
            state=self.state,
            attention=self.attention,
            output=self.output,
            concat_encoder=self.concat_encoder,
            use_sketch=self.n_steps != 0,
            discount=float(self.discount_factor),
            temperature=float(self.temperature),
        )

    def _class_weights(self, gold):
        cw = self.class_weight
        if cw is None:
            return None
        if self.output == "crf":
            raise ValueError("class_weight applies to the softmax output; use output='softmax'.")
        K = len(self.classes_)
        if cw == "balanced":
            counts = np.bincount(np.concatenate(gold), minlength=K).astype(float)
            return np.where(counts > 0, counts.sum() / (K * np.maximum(counts, 1)), 1.0)
        weights = np.ones(K)
        index = {c: k for k, c in enumerate(self.classes_.tolist())}
        for label, value in cw.items():
            if label not in index:
                raise ValueError(
                    f"class_weight names tag {label!r}, which is not among the training tags "
                    f"{self.classes_.tolist()}."
                )
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"class_weight[{label!r}] = {value!r} must be finite and >= 0.")
            weights[index[label]] = value
        return weights

    # --- training ------------------------------------------------------------------------------

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Train on sentences ``X`` with tag sequences ``y``.

        Parameters
        ----------
        X : list of list of (str or dict)
            Sentences of tokens.
        y : list of list of labels
            The tag of every token.

        Returns
        -------
        self : NeuralEasyFirstTagger
        """
        rescaled = self.discount_factor != 0 or self.temperature != 1
        if rescaled and ATTENTIONS[self.attention] not in SOFT_ATTENTIONS:
            raise ValueError(
                f"discount_factor and temperature apply to the soft attentions (softmax, "
                f"sparsemax, csoftmax, csparsemax), not attention={self.attention!r}; leave "
                "them at 0 and 1.")
        sentences = _sentences(X)
        tags = self._labels(y, [len(s) for s in sentences])
        flat = [t for seq in tags for t in seq]
        if not flat:
            raise ValueError("y has no tags: every training sentence is empty.")
        try:
            classes = sorted(set(flat))
        except TypeError as exc:
            raise ValueError("the tags in y must be mutually comparable (e.g. all str).") from exc
        self.classes_ = np.array(classes)
        index = {c: k for k, c in enumerate(classes)}
        gold = [np.array([index[t] for t in seq], dtype=np.int64) for seq in tags]
        class_weight = self._class_weights(gold)
        rng = check_random_state(self.random_state)

        keep = [i for i, s in enumerate(sentences) if len(s) > 0
                and (self.max_train_length is None or len(s) <= self.max_train_length)]
        if not keep:
            raise ValueError("no training sentence left (all empty or longer than "
                             f"max_train_length={self.max_train_length}).")
        keep = np.array(keep, dtype=np.int64)
        train, valid = keep, None
        if self.early_stopping:
            train, valid = validation_split(keep, self.validation_fraction, rng)

        self._build_vocabularies([sentences[i] for i in train])
        word_ids, affix_ids = self._encode(sentences)
        self.network_ = Network(self._config())
        theta = self.network_.init(rng)
        dropout_seed = int(rng.randint(np.iinfo(np.int32).max))
        progress = Progress(self, self.verbose, "epoch", self.max_iter)
        with threadpool_limits(limits=1, user_api="blas"), \
                ThreadPoolExecutor(max_workers=self._n_threads()) as pool:
            problem = NEFProblem(self, word_ids, affix_ids, gold, class_weight, dropout_seed,
                                 pool)

            def callback(info):
                problem.epoch = info.epoch + 1
                progress.update(info.epoch, [("loss", info.loss),
                                             ("val_acc", info.validation_score)])

            # No numpy warning on the way: a non-finite result is an error (below).
            with np.errstate(all="ignore"):
                result = minimize_online(
                    problem, theta, train, learning_rate=self.learning_rate,
                    batch_size=self.batch_size, max_iter=self.max_iter, tol=self.tol,
                    n_iter_no_change=self.n_iter_no_change, average=False,
                    validation_ids=valid, random_state=rng, n_parts=_BATCH_PARTS,
                    n_threads=min(self._n_threads(), _BATCH_PARTS), callback=callback)
        if not np.isfinite(result.coef).all():
            raise ValueError(self._diverged(result.n_epochs - 1))
        self.params_ = result.coef
        self.n_iter_ = result.n_epochs
        self.loss_curve_ = [float(loss) for loss in result.loss_curve]
        self.validation_scores_ = [float(score) for score in result.validation_scores]
        if self.tol is not None and not result.converged:
            rule = ("the held-out accuracy stopped rising" if self.early_stopping else
                    "the mean training loss stopped falling")
            warn_max_iter("NeuralEasyFirstTagger", self.max_iter, "epoch",
                          f"{rule} by more than tol={self.tol} ({self.n_iter_no_change} "
                          "epochs in a row)")
        return self

    def _diverged(self, epoch):
        return (f"NeuralEasyFirstTagger: training diverged in epoch {epoch + 1}: the loss, "
                "its gradient or the parameters are no longer finite numbers. Lower "
                f"learning_rate (now {self.learning_rate!r}) or clip_norm (now "
                f"{self.clip_norm!r}).")

    # --- prediction ---------------------------------------------------------------------------

    def _predict_ids(self, theta, ids, word_ids, affix_ids, pool, record_attention=False):
        """Predicted tag ids (and attention) of the sentences ``ids``, in that order."""
        net = self.network_
        ids = np.asarray(ids)
        order = ids[np.argsort([len(word_ids[i]) for i in ids], kind="stable")]
        chunks = [order[c:c + _PREDICT_BATCH] for c in range(0, len(order), _PREDICT_BATCH)]

        def run(chunk):
            batch = self._batch(chunk, word_ids, affix_ids)
            with np.errstate(all="ignore"):  # a non-finite score raises (fit)
                return batch, net.predict(theta, batch, record_attention=record_attention)

        found = {}
        for chunk, (batch, (tags, att)) in zip(chunks, pool.map(run, chunks)):
            for b, i in enumerate(chunk):
                n = batch.lengths[b]
                found[i] = (tags[b, :n],
                            att[b, :batch.n_steps[b], :n].copy() if att is not None else None)
        if record_attention:
            return [found[i] for i in ids]
        return [found[i][0] for i in ids]

    def _predict(self, X, record_attention):
        check_is_fitted(self, "params_")
        sentences = _sentences(X)
        word_ids, affix_ids = self._encode(sentences)
        ids = [i for i, s in enumerate(sentences) if len(s) > 0]
        n_jobs = self._n_threads()
        with threadpool_limits(limits=1, user_api="blas"), \
                ThreadPoolExecutor(max_workers=n_jobs) as pool:
            found = self._predict_ids(self.params_, ids, word_ids, affix_ids, pool,
                                      record_attention)
        out = [None] * len(sentences)
        for i, r in zip(ids, found):
            out[i] = r
        return sentences, out

    def predict(self, X):
        """Tag sequences of the sentences ``X``.

        Parameters
        ----------
        X : list of list of (str or dict)

        Returns
        -------
        y : list of list of labels
        """
        _, out = self._predict(X, False)
        classes = self.classes_.tolist()
        return [[classes[k] for k in tags] if tags is not None else []
                for tags in out]

    def predict_attention(self, X):
        """The attention of every sketch step over the words of each sentence.

        Parameters
        ----------
        X : list of list of (str or dict)

        Returns
        -------
        attention : list of ndarray of shape (n_steps, n_words)
            Row ``n`` is the attention of step ``n + 1``; the rows of a
            sentence with ``N`` steps sum to one (``N`` may be smaller than
            ``n_steps``, see there). Empty for ``n_steps=0``.
        """
        sentences, out = self._predict(X, True)
        result = []
        for sent, r in zip(sentences, out):
            if r is None or r[1] is None:
                result.append(np.zeros((0 if self.n_steps == 0 else self._steps(len(sent)),
                                        len(sent))))
            else:
                result.append(r[1])
        return result
