"""The network of the neural easy-first tagger (Martins & Kreutzer 2017, Alg. 2), in numpy.

Every layer has a forward function that returns its output and a cache, and
a backward function that takes the cache and the gradient of the output and
returns the gradients of the inputs and parameters (written by hand; the
tests check each of them by central finite differences). A mini-batch is a
:class:`Batch` of ``B`` sentences padded to ``T`` positions; the padding is
masked everywhere (zero encoder states, zero sketches, zero attention).

Shapes: ``Dx = word_dim + 2 * affix_dim`` (the word embedding, the sum of
the prefix embeddings and the sum of the suffix embeddings), ``Dh = 2 *
hidden`` (the BiLSTM), ``Ds`` the sketch size, ``Dz`` the pre-attention
size, ``W = 2 * window + 1`` the context window of eq. 1. The affine maps of
eq. 2 (scores) and eqs. 4 / 7 (sketch updates) read the same context
``c_i = concat(h_{i-w..i+w}, s_{i-w..i+w})``; their encoder part is constant
across sketch steps, so it is computed once (``A = Hwin @ Wh + b``) and each
step adds only its sketch part (``Swin @ Ws``). NEF-S's average context goes
through the same affine map, which is linear: ``affine(sum_i a_i c_i) =
sum_i a_i affine(c_i)`` since ``sum_i a_i = 1``.
"""

from typing import NamedTuple

import numpy as np

from ._nef_fast import (
    ATTENTIONS,
    CSOFTMAX,
    CSPARSEMAX,
    HARD,
    SOFTMAX,
    SPARSEMAX,
    attention_backward,
    crf_loss_batch,
    csoftmax_attention,
    csparsemax_attention,
    fixed_attention,
    softmax_attention,
    sparsemax_attention,
    viterbi_batch,
)

__all__ = ["SOFT_ATTENTIONS", "Batch", "Config", "Network"]

N_AFFIX = 4  # prefixes and suffixes of 1 .. N_AFFIX characters


class Batch(NamedTuple):
    """A padded mini-batch: ids, lengths, gold labels and per-sentence step counts."""

    words: np.ndarray  # (B, T) int64, word ids (0 = unknown; also on the padding)
    affixes: np.ndarray  # (B, T, 2 * N_AFFIX) int64: prefix ids then suffix ids (0 = none)
    lengths: np.ndarray  # (B,) int64
    labels: np.ndarray  # (B, T) int64 (0 on the padding)
    n_steps: np.ndarray  # (B,) int64: sketch steps taken by each sentence


class Config(NamedTuple):
    """Sizes and options of the network (all hashable, so that it pickles)."""

    n_words: int
    n_affixes: int
    n_tags: int
    word_dim: int = 64
    affix_dim: int = 50
    hidden: int = 50
    sketch_dim: int = 50
    attention_dim: int = 50
    window: int = 2
    state: str = "full"  # "full" (NEF-F, eq. 7) or "single" (NEF-S, eq. 4)
    attention: str = "csoftmax"
    output: str = "softmax"  # or "crf"
    concat_encoder: bool = True
    use_sketch: bool = True  # False when n_steps == 0 (plain BiLSTM tagger)
    # The scores z of a step enter the (soft) attention mapping as
    # (z - discount * cumulative attention) / temperature.
    discount: float = 0.0
    temperature: float = 1.0


# Above this many bytes of per-step arrays in a batch, the sketch steps keep
# checkpoints and backward recomputes (Network._sketch_forward).
_STEP_CACHE_BYTES = 256 * 2 ** 20


class _SketchCache(NamedTuple):
    """What backward needs of the sketch steps (see ``Network._sketch_forward``)."""

    entries: list  # every step's arrays (every == 1), else empty
    checkpoints: dict  # step -> (sketches, attention so far) before it (every > 1)
    every: int
    A: np.ndarray  # the encoder part of the context's affine map
    Hwin: np.ndarray
    Hs: np.ndarray
    first: np.ndarray
    n_max: int


_ATTENTION_KERNELS = {SOFTMAX: softmax_attention, SPARSEMAX: sparsemax_attention,
                      CSOFTMAX: csoftmax_attention, CSPARSEMAX: csparsemax_attention}


def attention_forward(kind, z, beta, lengths, n_steps, step, alpha):
    """The attention of one sketch step (see the kernels of ``_nef_fast``)."""
    kernel = _ATTENTION_KERNELS.get(kind)
    if kernel is None:
        fixed_attention(kind, z, beta, lengths, n_steps, step, alpha)
    else:
        kernel(z, beta, lengths, n_steps, step, alpha)


#: The attentions computed from the scores by a mapping (discount and temperature apply).
SOFT_ATTENTIONS = frozenset(_ATTENTION_KERNELS)


def _rescaled(cfg, kind):
    """Whether the scores of a step are discounted or tempered (soft attentions only)."""
    return kind in SOFT_ATTENTIONS and (cfg.discount != 0.0 or cfg.temperature != 1.0)


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _window(x, w):
    """(B, T, D) -> (B, T, (2w+1) D): concat of x_{i-w} .. x_{i+w}, zeros outside."""
    B, T, D = x.shape
    out = np.zeros((B, T, (2 * w + 1) * D))
    for k in range(2 * w + 1):
        off = k - w
        lo, hi = max(0, -off), min(T, T - off)
        if lo < hi:
            out[:, lo:hi, k * D:(k + 1) * D] = x[:, lo + off:hi + off]
    return out


def _unwindow(dwin, w, D):
    """Backward pass of :func:`_window`."""
    B, T, _ = dwin.shape
    out = np.zeros((B, T, D))
    for k in range(2 * w + 1):
        off = k - w
        lo, hi = max(0, -off), min(T, T - off)
        if lo < hi:
            out[:, lo + off:hi + off] += dwin[:, lo:hi, k * D:(k + 1) * D]
    return out


def lstm_forward(x, Wx, Wh, b):
    """One-directional LSTM over (B, T, D) inputs, gates (i, f, o, g); no peepholes.

    Padding at the end of a row does not change the states of its words (the
    recurrence is causal), so the caller only needs to mask the outputs.
    """
    B, T, _ = x.shape
    H = Wh.shape[0]
    xp = x @ Wx + b
    gates = np.empty((B, T, 4 * H))
    c = np.empty((B, T, H))
    h = np.empty((B, T, H))
    h_prev = np.zeros((B, H))
    c_prev = np.zeros((B, H))
    for t in range(T):
        a = xp[:, t] + h_prev @ Wh
        gt = gates[:, t]
        gt[:, :3 * H] = _sigmoid(a[:, :3 * H])
        gt[:, 3 * H:] = np.tanh(a[:, 3 * H:])
        c[:, t] = gt[:, H:2 * H] * c_prev + gt[:, :H] * gt[:, 3 * H:]
        h[:, t] = gt[:, 2 * H:3 * H] * np.tanh(c[:, t])
        h_prev = h[:, t]
        c_prev = c[:, t]
    return h, (x, Wx, Wh, gates, c, h)


def lstm_backward(cache, dh):
    """Gradients of :func:`lstm_forward`: ``(dx, dWx, dWh, db)``.

    The parameter gradients come per row of the batch (a leading axis of
    size ``B``; their sum over it is the batch's gradient), so that each
    sentence's gradient can be clipped on its own.
    """
    x, Wx, Wh, gates, c, h = cache
    B, T, H = h.shape
    da = np.empty((B, T, 4 * H))
    dh_next = np.zeros((B, H))
    dc_next = np.zeros((B, H))
    for t in range(T - 1, -1, -1):
        gt = gates[:, t]
        i, f, o, g = gt[:, :H], gt[:, H:2 * H], gt[:, 2 * H:3 * H], gt[:, 3 * H:]
        c_prev = c[:, t - 1] if t > 0 else np.zeros((B, H))
        dht = dh[:, t] + dh_next
        tc = np.tanh(c[:, t])
        dc = dc_next + dht * o * (1.0 - tc * tc)
        dat = da[:, t]
        dat[:, :H] = dc * g * i * (1.0 - i)
        dat[:, H:2 * H] = dc * c_prev * f * (1.0 - f)
        dat[:, 2 * H:3 * H] = dht * tc * o * (1.0 - o)
        dat[:, 3 * H:] = dc * i * (1.0 - g * g)
        dc_next = dc * f
        dh_next = dat @ Wh.T
    h_prev = np.zeros_like(h)
    h_prev[:, 1:] = h[:, :-1]
    dWh = _outer(h_prev, da)
    dWx = _outer(x, da)
    db = da.sum(axis=1)
    dx = da @ Wx.T
    return dx, dWx, dWh, db


def _outer(x, d):
    """Per-row gradient of a weight applied position-wise: (B, T, p), (B, T, q) -> (B, p, q)."""
    return np.matmul(x.transpose(0, 2, 1), d)


def _reverse_index(lengths, T):
    """(B, T) index reversing each row within its length (the padding stays put)."""
    idx = np.tile(np.arange(T), (lengths.shape[0], 1))
    for b, n in enumerate(lengths):
        idx[b, :n] = np.arange(n - 1, -1, -1)
    return idx


def _first_active(n_steps, n_max):
    """``first[n]``: the first row still taking step ``n`` when the rows are sorted by
    their number of steps (then the active rows are a suffix); 0 otherwise."""
    if n_steps.shape[0] > 1 and np.any(np.diff(n_steps) < 0):
        return np.zeros(n_max, dtype=np.int64)
    return np.searchsorted(n_steps, np.arange(n_max), side="right")


def _dropout_mask(rng, shape, rate):
    if rng is None or rate <= 0.0:
        return None
    return (rng.random(shape) >= rate) / (1.0 - rate)


class Network:
    """Parameters (one flat vector) and the forward / backward passes.

    ``theta`` holds every parameter; :meth:`views` cuts it into named arrays.
    Gradients come back in the same layout, except that the two embedding
    tables get their touched rows only (``(rows, values)``); see
    :meth:`dense_gradient`.
    """

    def __init__(self, config):
        self.config = config
        cfg = config
        Dx = cfg.word_dim + 2 * cfg.affix_dim
        H = cfg.hidden
        Dh = 2 * H
        W = 2 * cfg.window + 1
        Ds, Dz = cfg.sketch_dim, cfg.attention_dim
        K = cfg.n_tags
        layout = [
            ("E_word", (cfg.n_words, cfg.word_dim)),
            ("E_affix", (cfg.n_affixes, cfg.affix_dim)),
            ("lstm_f_Wx", (Dx, 4 * H)), ("lstm_f_Wh", (H, 4 * H)), ("lstm_f_b", (4 * H,)),
            ("lstm_b_Wx", (Dx, 4 * H)), ("lstm_b_Wh", (H, 4 * H)), ("lstm_b_b", (4 * H,)),
        ]
        out_in = 0
        if cfg.use_sketch:
            layout += [
                ("ctx_Wh", (W * Dh, Dz + Ds)),
                ("ctx_Ws", (W * Ds, Dz + Ds)),
                ("ctx_b", (Dz + Ds,)),
                ("att_v", (Dz,)),
            ]
            out_in += Ds
        if cfg.concat_encoder or not cfg.use_sketch:
            out_in += Dh
        layout += [("out_W", (out_in, K)), ("out_b", (K,))]
        if cfg.output == "crf":
            layout += [("crf_trans", (K, K)), ("crf_start", (K,)), ("crf_end", (K,))]
        self.layout = layout
        self.offsets = {}
        pos = 0
        for name, shape in layout:
            size = int(np.prod(shape))
            self.offsets[name] = (pos, pos + size, shape)
            pos += size
        self.size = pos

    # -- parameters -----------------------------------------------------------------------

    def init(self, rng):
        """Random initial parameters: Glorot-uniform matrices, zero biases (forget gate 1)."""
        theta = np.zeros(self.size)
        p = self.views(theta)
        H = self.config.hidden
        for name, arr in p.items():
            if name.startswith("E_"):
                arr[...] = rng.uniform(-0.1, 0.1, arr.shape)
            elif arr.ndim == 2 and name != "crf_trans":
                fan_in, fan_out = arr.shape
                if name.startswith("lstm"):
                    fan_out //= 4
                r = np.sqrt(6.0 / (fan_in + fan_out))
                arr[...] = rng.uniform(-r, r, arr.shape)
            elif name == "att_v":
                r = np.sqrt(6.0 / (arr.shape[0] + 1))
                arr[...] = rng.uniform(-r, r, arr.shape)
        p["lstm_f_b"][H:2 * H] = 1.0
        p["lstm_b_b"][H:2 * H] = 1.0
        return theta

    def views(self, theta):
        """Named views into a flat parameter (or gradient) vector."""
        return {name: theta[a:b].reshape(shape) for name, (a, b, shape) in self.offsets.items()}

    def dense_gradient(self, grads):
        """The flat gradient vector from what :meth:`backward` returns."""
        g = np.zeros(self.size)
        v = self.views(g)
        for name, value in grads.items():
            if name.startswith("E_"):
                rows, vals = value
                v[name][rows] += vals
            else:
                v[name][...] = value
        return g

    # -- forward ----------------------------------------------------------------------------

    def forward(self, theta, batch, rng=None, dropout=0.0, need_cache=True,
                record_attention=False):
        """Scores of every tag at every position, (B, T, K), and the cache for backward.

        ``rng`` draws the dropout masks (no dropout when ``rng`` is None).
        """
        cfg = self.config
        p = self.views(theta)
        B, T = batch.words.shape
        mask = (np.arange(T)[None, :] < batch.lengths[:, None]).astype(float)
        cache = {"batch": batch, "mask": mask}

        # Embeddings: word, sum of prefixes, sum of suffixes.
        Ea = p["E_affix"]
        x = np.concatenate([
            p["E_word"][batch.words],
            Ea[batch.affixes[:, :, :N_AFFIX]].sum(axis=2),
            Ea[batch.affixes[:, :, N_AFFIX:]].sum(axis=2),
        ], axis=2)
        x *= mask[:, :, None]
        m_x = _dropout_mask(rng, x.shape, dropout)
        if m_x is not None:
            x *= m_x

        # BiLSTM; the backward direction runs on each row reversed within its length.
        rev = _reverse_index(batch.lengths, T)
        rows = np.arange(B)[:, None]
        hf, cache_f = lstm_forward(x, p["lstm_f_Wx"], p["lstm_f_Wh"], p["lstm_f_b"])
        hb_rev, cache_b = lstm_forward(x[rows, rev], p["lstm_b_Wx"], p["lstm_b_Wh"],
                                       p["lstm_b_b"])
        Hs = np.concatenate([hf, hb_rev[rows, rev]], axis=2) * mask[:, :, None]
        m_h = _dropout_mask(rng, Hs.shape, dropout)
        if m_h is not None:
            Hs *= m_h
        cache.update(m_x=m_x, m_h=m_h, rev=rev, cache_f=cache_f, cache_b=cache_b)

        attention = None
        if cfg.use_sketch:
            S, steps, attention = self._sketch_forward(p, Hs, batch, need_cache,
                                                       record_attention)
            cache.update(S=S, steps=steps)
            parts = [Hs, S] if cfg.concat_encoder else [S]
            o_in = np.concatenate(parts, axis=2) if len(parts) > 1 else S
        else:
            o_in = Hs
        m_o = _dropout_mask(rng, o_in.shape, dropout)
        o_drop = o_in * m_o if m_o is not None else o_in
        scores = o_drop @ p["out_W"] + p["out_b"]
        cache.update(Hs=Hs, o_drop=o_drop, m_o=m_o)
        if record_attention:
            cache["attention"] = attention
        return scores, cache

    def _easiness(self, p, Hs, S):
        """Hard attention's score of a position: its best output score (eq. 6) given the sketch."""
        cfg = self.config
        o_in = np.concatenate([Hs, S], axis=2) if cfg.concat_encoder else S
        return (o_in @ p["out_W"] + p["out_b"]).max(axis=2)

    def _sketch_forward(self, p, Hs, batch, need_cache, record_attention):
        """The sketch steps: final sketches, what backward needs, the attention if asked.

        Backward needs every step's intermediate arrays, ``O(T)`` vectors of
        the sketch and attention sizes per step: ``O(N T dim)`` in all, 6 GB
        for one sentence of 2,000 words with ``n_steps="L"``. When a batch's
        would exceed ``_STEP_CACHE_BYTES``, only the attention of each step
        and the sketches every ``sqrt(N)`` steps are kept, and backward
        recomputes one stretch of steps at a time from them (the same
        operations on the same values: the same results, for one more
        forward pass over the steps).
        """
        cfg = self.config
        B, T, _ = Hs.shape
        w = cfg.window
        kind = ATTENTIONS[cfg.attention]
        Hwin = _window(Hs, w)
        A = Hwin @ p["ctx_Wh"] + p["ctx_b"]
        S = np.zeros((B, T, cfg.sketch_dim))
        beta = np.zeros((B, T))
        n_max = int(batch.n_steps.max()) if B else 0
        attention = np.zeros((B, n_max, T)) if record_attention else None
        first = _first_active(batch.n_steps, n_max)
        every = self._checkpoint_every(B, T, n_max) if need_cache else 0
        entries, checkpoints = [], {}
        for n in range(n_max):
            if every > 1 and n % every == 0:
                checkpoints[n] = (S, beta)  # never modified in place: the steps copy
            S, beta, entry = self._sketch_step(p, A, Hs, S, beta, first[n], n, batch, kind,
                                               copy=need_cache)
            if every == 1:
                entries.append(entry)
            if record_attention:
                attention[first[n]:, n] = entry[5]
        steps = None
        if need_cache:
            steps = _SketchCache(entries, checkpoints, every, A, Hwin, Hs, first, n_max)
        return S, steps, attention

    def _checkpoint_every(self, B, T, n_max):
        """1 (keep every step) or the stretch of steps between kept sketches."""
        cfg = self.config
        per_step = B * T * (3 * cfg.sketch_dim + cfg.attention_dim + 2) * 8
        if n_max * per_step <= _STEP_CACHE_BYTES:
            return 1
        return max(2, int(np.ceil(np.sqrt(n_max))))

    def _sketch_step(self, p, A, Hs, S, beta, lo, n, batch, kind, copy=True):
        """Sketch step ``n`` on the rows ``lo:``: new sketches and attention so far, and the
        step's arrays for backward ``(lo, S_prev, q, g, t, alpha, beta_prev)``.

        With ``copy`` the new sketches and attention are new arrays (the old
        ones stay as backward needs them); without, they are updated in place.
        """
        cfg = self.config
        w, Dz = cfg.window, cfg.attention_dim
        B, T = beta.shape
        S_a, H_a, beta_a = S[lo:], Hs[lo:], beta[lo:]
        pre = A[lo:] + _window(S_a, w) @ p["ctx_Ws"]
        q = np.tanh(pre[:, :, :Dz])
        g = pre[:, :, Dz:]
        z = self._easiness(p, H_a, S_a) if kind == HARD else q @ p["att_v"]
        if _rescaled(cfg, kind):
            z = (z - cfg.discount * beta_a) / cfg.temperature
        if not np.isfinite(z).all():
            # Only diverged parameters get here; the attention kernels must
            # not see it (the estimator reports it).
            raise FloatingPointError("the attention scores are not finite")
        alpha = np.empty((B - lo, T))
        attention_forward(kind, np.ascontiguousarray(z), beta_a, batch.lengths[lo:],
                          batch.n_steps[lo:], n, alpha)
        if cfg.state == "full":
            t = np.tanh(g)
            upd = alpha[:, :, None] * t
        else:
            t = np.tanh(np.einsum("bt,btd->bd", alpha, g))
            upd = alpha[:, :, None] * t[:, None, :]
        entry = (lo, S_a, q, g, t, alpha, beta_a)
        if copy:
            S = S.copy()
            beta = beta.copy()
        S[lo:] += upd
        beta[lo:] += alpha
        return S, beta, entry

    def _steps_backward_order(self, p, steps, batch, kind):
        """Every step's arrays, last step first (recomputed stretch by stretch if needed)."""
        if steps.every == 1:
            yield from reversed(steps.entries)
            return
        starts = sorted(steps.checkpoints)
        for c in reversed(starts):
            S, beta = steps.checkpoints[c]
            stretch = []
            for n in range(c, min(c + steps.every, steps.n_max)):
                S, beta, entry = self._sketch_step(p, steps.A, steps.Hs, S, beta,
                                                   steps.first[n], n, batch, kind)
                stretch.append(entry)
            yield from reversed(stretch)

    # -- loss and backward --------------------------------------------------------------------

    def loss(self, theta, batch, class_weight=None, rng=None, dropout=0.0, clip_norm=None):
        """Mean loss per sentence of the batch and the gradients (see :meth:`backward`).

        Softmax output: the (class-weighted) cross-entropy summed over the
        words of a sentence; CRF output: the sentence's negative
        log-likelihood. With ``clip_norm``, the gradient of each sentence's
        loss is rescaled to that Euclidean norm when it is longer, before
        the average over the batch.
        """
        scores, cache = self.forward(theta, batch, rng=rng, dropout=dropout)
        mask = cache["mask"]
        B = batch.words.shape[0]
        if self.config.output == "crf":
            p = self.views(theta)
            K = self.config.n_tags
            dscores = np.empty_like(scores)
            d_crf = {"crf_trans": np.zeros((B, K, K)), "crf_start": np.zeros((B, K)),
                     "crf_end": np.zeros((B, K))}
            losses = np.empty(B)
            scores = np.ascontiguousarray(scores)
            trans = np.ascontiguousarray(p["crf_trans"])
            start, end = p["crf_start"].copy(), p["crf_end"].copy()
            for b in range(B):  # one sentence at a time: its own transition gradients
                crf_loss_batch(scores[b:b + 1], batch.lengths[b:b + 1], batch.labels[b:b + 1],
                               trans, start, end, dscores[b:b + 1], d_crf["crf_trans"][b],
                               d_crf["crf_start"][b], d_crf["crf_end"][b], losses[b:b + 1])
            value = losses.sum() / B
            dscores /= B
            for arr in d_crf.values():
                arr /= B
        else:
            top = scores.max(axis=2, keepdims=True)
            e = np.exp(scores - top)
            z = e.sum(axis=2, keepdims=True)
            prob = e / z
            logp = (scores - top - np.log(z))
            gold = np.take_along_axis(logp, batch.labels[:, :, None], axis=2)[:, :, 0]
            weight = mask if class_weight is None else mask * class_weight[batch.labels]
            value = -(weight * gold).sum() / B
            dscores = prob
            np.put_along_axis(dscores, batch.labels[:, :, None],
                              np.take_along_axis(prob, batch.labels[:, :, None], axis=2) - 1.0,
                              axis=2)
            dscores *= weight[:, :, None] / B
            d_crf = {}
        per = self.sentence_gradients(theta, cache, dscores)
        per.update(d_crf)
        scale = np.ones(B)
        if clip_norm is not None:
            # B * |per-sentence part|: the norm of the gradient of that sentence's own loss
            norm = B * np.sqrt(_sentence_squared_norms(per, B))
            long = norm > clip_norm
            scale[long] = clip_norm / norm[long]
        return value, _combine(per, scale)

    def backward(self, theta, cache, dscores):
        """Gradients of ``sum(scores * dscores)`` w.r.t. every parameter.

        Returns a dict name -> gradient array; the embedding tables get
        ``(rows, values)`` pairs (the rows the batch touched, unique).
        """
        per = self.sentence_gradients(theta, cache, dscores)
        return _combine(per, np.ones(cache["batch"].words.shape[0]))

    def sentence_gradients(self, theta, cache, dscores):
        """The gradients of :meth:`backward`, one per sentence of the batch.

        Every parameter gets an array with a leading axis of size ``B``
        (sentence ``b``'s part in row ``b``); the embedding tables get
        ``(ids, values)``: the ids read by each sentence, ``(B, T)`` or
        ``(B, T, 2 * N_AFFIX)``, and the gradient reaching each read, with a
        trailing embedding axis (a table's gradient sums the values by id).
        """
        cfg = self.config
        p = self.views(theta)
        batch = cache["batch"]
        mask = cache["mask"]
        B, T = batch.words.shape
        grads = {}
        grads["out_W"] = _outer(cache["o_drop"], dscores)
        grads["out_b"] = dscores.sum(axis=1)
        d_o = dscores @ p["out_W"].T
        if cache["m_o"] is not None:
            d_o *= cache["m_o"]
        Dh = 2 * cfg.hidden
        if cfg.use_sketch:
            if cfg.concat_encoder:
                dH, dS = d_o[:, :, :Dh].copy(), d_o[:, :, Dh:]
            else:
                dH, dS = np.zeros((B, T, Dh)), d_o
            dH += self._sketch_backward(p, cache, dS, grads)
        else:
            dH = d_o
        if cache["m_h"] is not None:
            dH = dH * cache["m_h"]
        dH = dH * mask[:, :, None]
        H = cfg.hidden
        rev, rows = cache["rev"], np.arange(B)[:, None]
        dx_f, grads["lstm_f_Wx"], grads["lstm_f_Wh"], grads["lstm_f_b"] = lstm_backward(
            cache["cache_f"], dH[:, :, :H])
        dx_b, grads["lstm_b_Wx"], grads["lstm_b_Wh"], grads["lstm_b_b"] = lstm_backward(
            cache["cache_b"], dH[:, :, H:][rows, rev])
        dx = dx_f + dx_b[rows, rev]  # rev is its own inverse
        if cache["m_x"] is not None:
            dx *= cache["m_x"]
        dx *= mask[:, :, None]
        Dw, Da = cfg.word_dim, cfg.affix_dim
        grads["E_word"] = (batch.words, dx[:, :, :Dw])
        # each prefix id reads the prefix sum's gradient, each suffix id the suffix sum's
        d_aff = np.empty((B, T, 2 * N_AFFIX, Da))
        d_aff[:, :, :N_AFFIX] = dx[:, :, None, Dw:Dw + Da]
        d_aff[:, :, N_AFFIX:] = dx[:, :, None, Dw + Da:]
        grads["E_affix"] = (batch.affixes, d_aff)
        return grads

    def _sketch_backward(self, p, cache, dS, grads):
        """Backward through the sketch steps; returns the gradient w.r.t. the encoder states."""
        cfg = self.config
        batch = cache["batch"]
        steps = cache["steps"]
        Hwin = steps.Hwin
        B, T, _ = dS.shape
        w, Ds, Dz = cfg.window, cfg.sketch_dim, cfg.attention_dim
        kind = ATTENTIONS[cfg.attention]
        Ws, v = p["ctx_Ws"], p["att_v"]
        dWs = np.zeros((B,) + Ws.shape)
        dv = np.zeros((B, Dz))
        dA = np.zeros((B, T, Dz + Ds))
        dS = dS.copy()
        d_beta = np.zeros((B, T))
        # The attention of later steps depends on beta, the attention so far,
        # through the bounds 1 - beta of the constrained mappings and the
        # discount of the scores.
        uses_beta = kind == CSOFTMAX or kind == CSPARSEMAX or (
            _rescaled(cfg, kind) and cfg.discount != 0.0)
        n = steps.n_max
        for lo, S_prev, q, g, t, alpha, beta_prev in self._steps_backward_order(
                p, steps, batch, kind):
            n -= 1
            dS_a, d_beta_a = dS[lo:], d_beta[lo:]
            if cfg.state == "full":
                d_alpha = np.einsum("btd,btd->bt", dS_a, t)
                dg = alpha[:, :, None] * dS_a * (1.0 - t * t)
            else:
                d_alpha = np.einsum("btd,bd->bt", dS_a, t)
                d_gbar = np.einsum("bt,btd->bd", alpha, dS_a) * (1.0 - t * t)
                dg = alpha[:, :, None] * d_gbar[:, None, :]
                d_alpha += np.einsum("btd,bd->bt", g, d_gbar)
            if uses_beta:
                d_alpha += d_beta_a  # beta^n = beta^{n-1} + alpha^n
            dz = np.empty(alpha.shape)
            attention_backward(kind, alpha, beta_prev, np.ascontiguousarray(d_alpha),
                               batch.lengths[lo:], batch.n_steps[lo:], n, dz, d_beta_a)
            if _rescaled(cfg, kind):
                # dz is the gradient w.r.t. (z - discount * beta) / temperature.
                dz /= cfg.temperature
                if cfg.discount != 0.0:
                    d_beta_a -= cfg.discount * dz
            dq = dz[:, :, None] * v * (1.0 - q * q)
            dv[lo:] += np.einsum("bt,btd->bd", dz, q)
            d_pre = np.concatenate([dq, dg], axis=2)
            dA[lo:] += d_pre
            dWs[lo:] += _outer(_window(S_prev, w), d_pre)
            dS_a += _unwindow(d_pre @ Ws.T, w, Ds)
        grads["ctx_Ws"] = dWs
        grads["att_v"] = dv
        grads["ctx_Wh"] = _outer(Hwin, dA)
        grads["ctx_b"] = dA.sum(axis=1)
        return _unwindow(dA @ p["ctx_Wh"].T, w, 2 * cfg.hidden)

    # -- prediction ----------------------------------------------------------------------------

    def predict(self, theta, batch, record_attention=False):
        """Best tags (B, T) and, if asked, the attention (B, N, T)."""
        scores, cache = self.forward(theta, batch, need_cache=False,
                                     record_attention=record_attention)
        if self.config.output == "crf":
            p = self.views(theta)
            out = np.zeros(batch.words.shape, dtype=np.int64)
            viterbi_batch(np.ascontiguousarray(scores), batch.lengths,
                          np.ascontiguousarray(p["crf_trans"]), p["crf_start"].copy(),
                          p["crf_end"].copy(), out)
        else:
            out = scores.argmax(axis=2)
        return out, cache.get("attention")


def _embedding_grad(ids, values):
    """Sum the rows of ``values`` by id: ``(unique ids, summed rows)``."""
    rows, inverse = np.unique(ids, return_inverse=True)
    out = np.zeros((rows.shape[0], values.shape[1]))
    np.add.at(out, inverse.ravel(), values)
    return rows, out


def _row_shape(B, ndim):
    return (B,) + (1,) * (ndim - 1)


def _combine(per, scale):
    """The batch's gradients from :meth:`Network.sentence_gradients`: sentence ``b``'s
    part weighted by ``scale[b]``; the tables as ``(rows, values)`` of :func:`_embedding_grad`."""
    out = {}
    for name, g in per.items():
        if name.startswith("E_"):
            ids, vals = g
            vals = vals * scale.reshape(_row_shape(len(scale), vals.ndim))
            out[name] = _embedding_grad(ids.ravel(), vals.reshape(-1, vals.shape[-1]))
        else:
            out[name] = np.tensordot(scale, g, axes=1)
    return out


def _sentence_squared_norms(per, B):
    """Squared Euclidean norm of each sentence's part of the gradients, over every parameter."""
    total = np.zeros(B)
    for name, g in per.items():
        if name.startswith("E_"):
            ids, vals = g
            # a table's rows: the reads of one id within one sentence add up
            width = int(ids.max()) + 1
            key = (np.arange(B).reshape(_row_shape(B, ids.ndim)) * width + ids).ravel()
            rows, summed = _embedding_grad(key, vals.reshape(-1, vals.shape[-1]))
            total += np.bincount(rows // width, weights=(summed * summed).sum(axis=1),
                                 minlength=B)
        else:
            total += (g.reshape(B, -1) ** 2).sum(axis=1)
    return total
