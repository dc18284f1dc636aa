"""The neural easy-first network: every backward pass against central finite differences.

Checked on tiny networks (a few hundred parameters): the LSTM alone, the
encoder (N = 0), the sketch steps with every attention and both states, the
CRF output layer, and the loss with dropout masks and class weights. Also the
invariants of the attention: csoftmax and csparsemax spend exactly one unit
of attention per word when N = L, hard attention visits each word once.
"""

import numpy as np
import pytest

from sksparse_struct.tagging import _nef_network as nef_network
from sksparse_struct.tagging._nef_fast import ATTENTIONS
from sksparse_struct.tagging._nef_network import (
    Batch,
    Config,
    Network,
    lstm_backward,
    lstm_forward,
)


def _batch(rng, lengths, n_words, n_affixes, n_tags, n_steps):
    B, T = len(lengths), max(lengths)
    lengths = np.array(lengths)
    words = rng.integers(0, n_words, (B, T))
    affixes = rng.integers(0, n_affixes, (B, T, 8))
    labels = rng.integers(0, n_tags, (B, T))
    for b in range(B):
        words[b, lengths[b]:] = 0
        affixes[b, lengths[b]:] = 0
        labels[b, lengths[b]:] = 0
    return Batch(words, affixes, lengths, labels, np.array(n_steps))


def _tiny(seed=0, **options):
    rng = np.random.default_rng(seed)
    cfg = Config(n_words=6, n_affixes=7, n_tags=3, word_dim=3, affix_dim=2, hidden=3,
                 sketch_dim=3, attention_dim=2, window=1, **options)
    net = Network(cfg)
    theta = net.init(rng) + rng.normal(0.0, 0.3, net.size)
    return net, theta, rng


def _numeric_gradient(f, theta, eps=1e-6):
    g = np.empty_like(theta)
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = eps
        g[i] = (f(theta + e) - f(theta - e)) / (2 * eps)
    return g


def _check_loss_gradient(net, theta, batch, class_weight=None, dropout=0.2, full=False):
    """Analytic gradient vs central differences: every coordinate (``full``), or
    three random directions within each parameter group (cheaper, and a wrong
    term shows up along a random direction with probability one)."""
    def f(t):
        return net.loss(t, batch, class_weight, rng=np.random.default_rng(5),
                        dropout=dropout)[0]

    value, grads = net.loss(theta, batch, class_weight, rng=np.random.default_rng(5),
                            dropout=dropout)
    analytic = net.dense_gradient(grads)
    if full:
        numeric = _numeric_gradient(f, theta)
        for name, (a, b, _) in net.offsets.items():
            np.testing.assert_allclose(analytic[a:b], numeric[a:b], rtol=1e-5, atol=1e-7,
                                       err_msg=name)
    else:
        rng = np.random.default_rng(1)
        eps = 1e-6
        for name, (a, b, _) in net.offsets.items():
            for _ in range(3):
                d = np.zeros_like(theta)
                d[a:b] = rng.normal(size=b - a)
                numeric = (f(theta + eps * d) - f(theta - eps * d)) / (2 * eps)
                assert analytic @ d == pytest.approx(numeric, rel=1e-5, abs=1e-7), name
    # every parameter group is exercised (a zero gradient would hide a missing term)
    for name, (a, b, _) in net.offsets.items():
        if name != "att_v" or net.config.attention in ("softmax", "sparsemax", "csoftmax",
                                                      "csparsemax"):
            assert np.abs(analytic[a:b]).max() > 0, name
    return value


def test_lstm_backward_matches_finite_differences():
    rng = np.random.default_rng(0)
    B, T, D, H = 2, 4, 3, 2
    x = rng.normal(size=(B, T, D))
    Wx, Wh, b = rng.normal(size=(D, 4 * H)), rng.normal(size=(H, 4 * H)), rng.normal(size=4 * H)
    dh = rng.normal(size=(B, T, H))
    shapes = [x.shape, Wx.shape, Wh.shape, b.shape]
    sizes = [int(np.prod(s)) for s in shapes]
    flat = np.concatenate([x.ravel(), Wx.ravel(), Wh.ravel(), b.ravel()])

    def unpack(v):
        out, pos = [], 0
        for s, n in zip(shapes, sizes):
            out.append(v[pos:pos + n].reshape(s))
            pos += n
        return out

    def f(v):
        return float((lstm_forward(*unpack(v))[0] * dh).sum())

    _, cache = lstm_forward(x, Wx, Wh, b)
    dx, dWx, dWh, db = lstm_backward(cache, dh)
    # the parameter gradients come per row of the batch
    analytic = np.concatenate([a.ravel() for a in (dx, dWx.sum(0), dWh.sum(0), db.sum(0))])
    np.testing.assert_allclose(analytic, _numeric_gradient(f, flat), rtol=1e-6, atol=1e-8)
    for r in range(B):
        _, cache_r = lstm_forward(x[r:r + 1], Wx, Wh, b)
        for part, alone in zip((dWx, dWh, db), lstm_backward(cache_r, dh[r:r + 1])[1:]):
            np.testing.assert_allclose(part[r], alone[0], rtol=1e-12, atol=1e-14)


def test_encoder_gradient_without_sketch_steps():
    net, theta, rng = _tiny(use_sketch=False)
    batch = _batch(rng, [4, 2, 3], 6, 7, 3, [0, 0, 0])
    _check_loss_gradient(net, theta, batch, class_weight=np.array([1.0, 2.0, 0.5]), full=True)


@pytest.mark.parametrize("state", ["full", "single"])
def test_csoftmax_sketch_gradient_every_coordinate(state):
    net, theta, rng = _tiny(attention="csoftmax", state=state)
    batch = _batch(rng, [4, 2, 3], 6, 7, 3, [4, 2, 2])
    _check_loss_gradient(net, theta, batch, class_weight=np.array([1.0, 2.0, 0.5]), full=True)


@pytest.mark.parametrize("state", ["full", "single"])
@pytest.mark.parametrize("attention", sorted(ATTENTIONS))
def test_sketch_steps_gradient(attention, state):
    net, theta, rng = _tiny(attention=attention, state=state)
    # N = L for two sentences, fewer steps for the third
    batch = _batch(rng, [4, 2, 3], 6, 7, 3, [4, 2, 2])
    _check_loss_gradient(net, theta, batch)


@pytest.mark.parametrize("state", ["full", "single"])
@pytest.mark.parametrize("attention", ["softmax", "sparsemax", "csoftmax", "csparsemax"])
def test_discounted_tempered_attention_gradient(attention, state):
    # The discount makes each step's attention depend on the earlier steps'
    # through the scores (the authors' cumulative-attention penalty): the
    # gradient must flow back through it.
    net, theta, rng = _tiny(attention=attention, state=state, discount=0.7, temperature=0.6)
    batch = _batch(rng, [4, 2, 3], 6, 7, 3, [4, 2, 2])
    _check_loss_gradient(net, theta, batch)


def test_discount_and_temperature_change_the_attention_and_defaults_do_not():
    net, theta, rng = _tiny(attention="sparsemax")
    batch = _batch(rng, [5, 3], 6, 7, 3, [5, 3])
    plain = net.forward(theta, batch, record_attention=True)[1]["attention"]
    same = Network(net.config._replace(discount=0.0, temperature=1.0))
    np.testing.assert_array_equal(
        same.forward(theta, batch, record_attention=True)[1]["attention"], plain)
    steered = Network(net.config._replace(discount=50.0)).forward(
        theta, batch, record_attention=True)[1]["attention"]
    # Without a discount this sparsemax keeps returning to the last two words
    # (2.2 and 1.8 units over 5 steps); a large one spreads the steps over
    # every word.
    before, after = plain[0].sum(axis=0)[:5], steered[0].sum(axis=0)[:5]
    assert before.max() > 2.0 and before.min() < 0.2
    assert after.max() < 1.3 and after.min() > 0.7


@pytest.mark.parametrize("options", [
    dict(attention="csoftmax"), dict(attention="sparsemax", state="single"),
    dict(attention="hard"), dict(attention="softmax", discount=0.5, temperature=2.0),
    dict(attention="csparsemax", output="crf")])
def test_checkpointed_sketch_steps_give_the_same_gradient(monkeypatch, options):
    # Long sentences keep only checkpoints of the sketch steps and recompute
    # them in backward: the same arithmetic, so the same bits.
    net, theta, rng = _tiny(**options)
    batch = _batch(rng, [7, 5, 6], 6, 7, 3, [7, 3, 6])
    value, grads = net.loss(theta, batch, rng=np.random.default_rng(5), dropout=0.2)
    monkeypatch.setattr(nef_network, "_STEP_CACHE_BYTES", 0)
    assert net._checkpoint_every(3, 7, 7) == 3
    cached, again = net.loss(theta, batch, rng=np.random.default_rng(5), dropout=0.2)
    assert cached == value
    for name in grads:
        a, b = grads[name], again[name]
        if isinstance(a, tuple):  # embedding tables: (rows, values)
            for x, y in zip(a, b):
                np.testing.assert_array_equal(x, y, err_msg=name)
        else:
            np.testing.assert_array_equal(a, b, err_msg=name)


@pytest.mark.parametrize("attention", ["csoftmax", "softmax"])
def test_crf_output_layer_gradient(attention):
    net, theta, rng = _tiny(attention=attention, output="crf")
    batch = _batch(rng, [4, 1, 3], 6, 7, 3, [4, 1, 3])
    _check_loss_gradient(net, theta, batch)


def test_gradient_without_encoder_in_the_output_layer_and_more_steps_than_words():
    net, theta, rng = _tiny(attention="softmax", concat_encoder=False)
    batch = _batch(rng, [3, 2], 6, 7, 3, [5, 5])
    _check_loss_gradient(net, theta, batch, dropout=0.0)


def test_crf_loss_is_the_negative_log_likelihood():
    # brute force over the 3 ** 3 tag sequences of one sentence
    import itertools

    net, theta, rng = _tiny(attention="csoftmax", output="crf")
    batch = _batch(rng, [3], 6, 7, 3, [3])
    value, _ = net.loss(theta, batch)
    scores, _ = net.forward(theta, batch)
    p = net.views(theta)
    u, tr = scores[0], p["crf_trans"]

    def total(y):
        s = p["crf_start"][y[0]] + p["crf_end"][y[-1]] + sum(u[i, y[i]] for i in range(3))
        return s + sum(tr[y[i - 1], y[i]] for i in range(1, 3))

    log_z = np.logaddexp.reduce([total(y) for y in itertools.product(range(3), repeat=3)])
    assert value == pytest.approx(log_z - total(batch.labels[0]), rel=1e-10)
    tags, _ = net.predict(theta, batch)
    best = max(itertools.product(range(3), repeat=3), key=total)
    assert tuple(tags[0]) == best


def _attention(attention, lengths, n_steps, seed=0):
    net, theta, rng = _tiny(seed, attention=attention)
    batch = _batch(rng, lengths, 6, 7, 3, n_steps)
    _, att = net.predict(theta, batch, record_attention=True)
    return att, batch


@pytest.mark.parametrize("attention", ["csoftmax", "csparsemax"])
@pytest.mark.parametrize("seed", range(5))
def test_constrained_attention_spends_one_unit_per_word(attention, seed):
    lengths = [7, 3, 5]
    att, _ = _attention(attention, lengths, lengths, seed)
    for b, n in enumerate(lengths):
        rows = att[b, :n, :n]
        np.testing.assert_allclose(rows.sum(axis=1), 1.0, atol=1e-12)
        cumulative = np.cumsum(rows, axis=0)
        assert cumulative.max() <= 1.0 + 1e-12
        np.testing.assert_allclose(cumulative[-1], 1.0, atol=1e-9)
        assert not att[b, n:].any() and not att[b, :, n:].any()


@pytest.mark.parametrize("seed", range(3))
def test_hard_attention_visits_every_word_once(seed):
    lengths = [6, 2, 4]
    att, _ = _attention("hard", lengths, lengths, seed)
    for b, n in enumerate(lengths):
        rows = att[b, :n, :n]
        assert set(np.unique(rows)) <= {0.0, 1.0}
        np.testing.assert_array_equal(rows.sum(axis=0), 1.0)
        np.testing.assert_array_equal(rows.sum(axis=1), 1.0)


def test_prescribed_orders_and_uniform_attention():
    lengths = [4, 2]
    att, _ = _attention("left_to_right", lengths, lengths)
    np.testing.assert_array_equal(att[0], np.eye(4))
    np.testing.assert_array_equal(att[1, :2, :2], np.eye(2))
    att, _ = _attention("right_to_left", lengths, lengths)
    np.testing.assert_array_equal(att[0], np.eye(4)[::-1])
    att, _ = _attention("uniform", lengths, [3, 3])
    np.testing.assert_allclose(att[1, :3, :2], 0.5)
    np.testing.assert_allclose(att[0], 0.25)


def test_padding_does_not_change_a_sentence():
    # a sentence scored alone or next to a longer one gets the same scores
    net, theta, rng = _tiny(attention="csoftmax")
    batch = _batch(rng, [3, 6], 6, 7, 3, [3, 6])
    alone = Batch(batch.words[:1, :3], batch.affixes[:1, :3], batch.lengths[:1],
                  batch.labels[:1, :3], batch.n_steps[:1])
    s_batch, _ = net.forward(theta, batch)
    s_alone, _ = net.forward(theta, alone)
    np.testing.assert_allclose(s_batch[0, :3], s_alone[0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("state", ["full", "single"])
@pytest.mark.parametrize("attention", ["csoftmax", "sparsemax", "hard"])
def test_rows_sorted_by_steps_skip_finished_rows(attention, state):
    # sorted step counts: the finished rows are left out of later steps
    net, theta, rng = _tiny(attention=attention, state=state)
    batch = _batch(rng, [2, 3, 4], 6, 7, 3, [1, 3, 4])
    _check_loss_gradient(net, theta, batch)
    # same scores and attention as with the rows in an unsorted order
    perm = np.array([2, 0, 1])
    shuffled = Batch(*(a[perm] for a in batch))
    s_sorted, _ = net.forward(theta, batch)
    s_shuffled, _ = net.forward(theta, shuffled)
    np.testing.assert_allclose(s_sorted[perm], s_shuffled, rtol=1e-12, atol=1e-12)
    _, a_sorted = net.predict(theta, batch, record_attention=True)
    _, a_shuffled = net.predict(theta, shuffled, record_attention=True)
    np.testing.assert_allclose(a_sorted[perm], a_shuffled, rtol=1e-12, atol=1e-12)


def _alone(batch, b):
    n = batch.lengths[b]
    return Batch(batch.words[b:b + 1, :n], batch.affixes[b:b + 1, :n], batch.lengths[b:b + 1],
                 batch.labels[b:b + 1, :n], batch.n_steps[b:b + 1])


@pytest.mark.parametrize("attention, state, output", [
    ("sparsemax", "full", "softmax"), ("csoftmax", "single", "softmax"),
    ("softmax", "full", "crf"),
])
def test_clip_norm_clips_each_sentence_before_averaging(attention, state, output):
    # reference: each sentence's own gradient, from a batch holding it alone
    net, theta, rng = _tiny(attention=attention, state=state, output=output)
    batch = _batch(rng, [4, 2, 3, 4], 6, 7, 3, [4, 2, 3, 2])
    weight = np.array([1.0, 2.0, 0.5]) if output == "softmax" else None
    alone = []
    for b in range(4):
        single = _alone(batch, b)
        if b == 0:  # the reference's own gradient, by finite differences
            _check_loss_gradient(net, theta, single, class_weight=weight, dropout=0.0)
        alone.append(net.dense_gradient(net.loss(theta, single, weight)[1]))
    norms = np.array([np.linalg.norm(g) for g in alone])
    clip = np.median(norms)  # about half of the sentences get clipped
    assert (norms > clip).any() and (norms < clip).any()
    expected = sum(min(1.0, clip / n) * g for n, g in zip(norms, alone)) / 4
    value, grads = net.loss(theta, batch, weight, clip_norm=clip)
    np.testing.assert_allclose(net.dense_gradient(grads), expected, rtol=1e-9, atol=1e-12)
    assert value == pytest.approx(net.loss(theta, batch, weight)[0], rel=1e-12)
    # a loose bound changes nothing; no bound gives the plain average
    _, loose = net.loss(theta, batch, weight, clip_norm=2 * norms.max())
    np.testing.assert_allclose(net.dense_gradient(loose), sum(alone) / 4, rtol=1e-9, atol=1e-12)
    _, plain = net.loss(theta, batch, weight)
    np.testing.assert_allclose(net.dense_gradient(plain), sum(alone) / 4, rtol=1e-9, atol=1e-12)


def test_sentence_gradients_sum_to_the_batch_gradient():
    net, theta, rng = _tiny(attention="sparsemax")
    batch = _batch(rng, [4, 2, 3], 6, 7, 3, [4, 2, 3])
    scores, cache = net.forward(theta, batch, rng=np.random.default_rng(3), dropout=0.2)
    dscores = rng.normal(size=scores.shape)
    per = net.sentence_gradients(theta, cache, dscores)
    total = net.dense_gradient(net.backward(theta, cache, dscores))
    views = net.views(total)
    for name, g in per.items():
        if name.startswith("E_"):
            ids, vals = g
            dense = np.zeros(views[name].shape)
            np.add.at(dense, ids.ravel(), vals.reshape(-1, vals.shape[-1]))
            np.testing.assert_allclose(dense, views[name], rtol=1e-12, atol=1e-14)
        else:
            assert g.shape == (3,) + views[name].shape
            np.testing.assert_allclose(g.sum(axis=0), views[name], rtol=1e-12, atol=1e-14)
