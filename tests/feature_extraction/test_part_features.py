"""Hashed features of second-order parts: ranges, salting, scores and their adjoint."""

import numpy as np
import pytest

from sksparse_struct.datasets import load_ewt_sample
from sksparse_struct.feature_extraction import ArcFeatures, EncodedSentence
from sksparse_struct.feature_extraction import _arc_features_fast as af
from sksparse_struct.feature_extraction import _part_features_fast as pf
from sksparse_struct.parsing._problem import stack_sentences

KINDS = [pf.SIBLING, pf.GRANDPARENT]
PRESETS = ["mst", "rich"]
TAGS = [pf.TAGS_UPOS, pf.TAGS_XPOS, pf.TAGS_BOTH]
# test_hashes_are_stable: "Dogs bark", n_features 2**22.
PINNED_SIBLING = [796034, 564004, 2956492]
PINNED_GRANDPARENT = [1823274, 704249, 3455176]
PINNED_GRANDPARENT_PAIR = [2725714, 2725722, 1030072]


def _stacked(preset="rich", n_features=2**22, length=12):
    """A real EWT sentence of ``length`` words, stacked after another one."""
    X, _ = load_ewt_sample(return_X_y=True, target="tree")
    sentence = next(s for s in X if len(s) == length)
    encoded = ArcFeatures(preset=preset, n_features=n_features).fit_transform([X[0], sentence])
    treebank, lengths = stack_sentences(encoded)
    return treebank.tokens, int(treebank.offsets[1]), int(lengths[1])


def _sibling_parts(n):
    """Every sibling part: each ordered pair of a side's sequence START, d1, ..., STOP."""
    parts = []
    for h in range(n + 1):
        for mods, stop in ((list(range(h + 1, n + 1)), n + 1), (list(range(h - 1, 0, -1)), -1)):
            seq = [h] + mods + [stop]
            for i in range(len(seq) - 1):
                for j in range(i + 1, len(seq)):
                    parts.append((h, seq[i], seq[j]))
    return np.array(parts, dtype=np.int64)


def _grandparent_parts(n):
    """Every grandparent part ``(g, h, m)``, 2-cycles ``m == g`` included."""
    parts = [(g, h, m) for h in range(1, n + 1) for g in range(n + 1) for m in range(1, n + 1)
             if g != h and m != h]
    return np.array(parts, dtype=np.int64)


def _all_parts(kind, n):
    return _sibling_parts(n) if kind == pf.SIBLING else _grandparent_parts(n)


def _random_parts(kind, n, rng, size=300):
    """Random parts with repeats, some of them consecutive (the memo's pending pair)."""
    parts = _all_parts(kind, n)
    chosen = parts[rng.randint(len(parts), size=size)]
    return np.ascontiguousarray(np.repeat(chosen, rng.randint(1, 3, size=size), axis=0))


def _indices(kind, tokens, start, n, part, preset, tags, mask):
    return pf.part_feature_indices(kind, tokens, start, n, *(int(x) for x in part),
                                   af.RICH if preset == "rich" else af.MST, tags, mask)


def _state(tokens, start, n, L=None):
    work = pf.new_part_work(n + 3 if L is None else L)  # longer, as for a batch
    pf.part_states(tokens, start, n, work)
    return work


@pytest.mark.parametrize("kind", KINDS)
def test_indices_in_range_counts_and_deterministic(kind):
    tokens, start, n = _stacked()
    rng = np.random.RandomState(0)
    parts = _random_parts(kind, n, rng, size=40)
    for bits in (6, 10, 22):
        mask = 2**bits - 1
        for tags in TAGS:
            for part in parts:
                idx = _indices(kind, tokens, start, n, part, "rich", tags, mask)
                assert idx.dtype == np.int64
                assert idx.min() >= 0 and idx.max() <= mask
                np.testing.assert_array_equal(
                    idx, _indices(kind, tokens, start, n, part, "rich", tags, mask))
    # Triple templates: 20 per tag set less the 4 without a tag.
    assert [pf.n_triple_features(t) for t in TAGS] == [20, 20, 36]
    n_triples = pf.n_triple_features(pf.TAGS_XPOS)
    for part in parts:
        a, b, c = part
        idx = _indices(kind, tokens, start, n, part, "mst", pf.TAGS_XPOS, 2**22 - 1)
        if kind == pf.SIBLING:
            has_pair = b != a and 1 <= c <= n
        else:
            has_pair = c != a
        assert (idx.shape[0] > n_triples) == has_pair


def test_both_tag_sets_are_the_union_of_each():
    tokens, start, n = _stacked()
    mask = 2**22 - 1
    for kind, part in ((pf.SIBLING, (3, 4, 7)), (pf.GRANDPARENT, (2, 5, 9))):
        u, x, both = (set(_indices(kind, tokens, start, n, part, "mst", t, mask)[:20 if t < 3
                                                                                  else 36])
                      for t in TAGS)
        assert both == u | x and len(both) == 36


def _triples(kind, tokens, start, n, part, tags=pf.TAGS_XPOS, mask=2**22 - 1, work=None):
    if work is None:
        work = _state(tokens, start, n)
    out = np.empty(pf.N_TRIPLE_ROWS, dtype=np.int64)
    fn = pf.sibling_features if kind == pf.SIBLING else pf.grandparent_features
    k = fn(n, *(int(x) for x in part), tags, work, af.index_shift(mask), mask, out)
    return set(out[:k].tolist())


def test_different_parts_have_different_features():
    tokens, start, n = _stacked()
    h, m, s = 4, 6, 9
    sib = _triples(pf.SIBLING, tokens, start, n, (h, m, s))
    # The same three tokens as a grandparent part: nothing shared.
    assert not sib & _triples(pf.GRANDPARENT, tokens, start, n, (h, m, s))
    # START is not the root: (h, START, s) against m = 0 (the root's attributes).
    start_part = _triples(pf.SIBLING, tokens, start, n, (h, h, s))
    root_part = _triples(pf.SIBLING, tokens, start, n, (h, 0, s))
    # Shared: the templates without M (bias, HP SP, HW SP, HP SW, HW SW).
    assert len(start_part & root_part) == 5
    # Left and right sides differ, empty sides included.
    left = _triples(pf.SIBLING, tokens, start, n, (h, h, -1))
    right = _triples(pf.SIBLING, tokens, start, n, (h, h, n + 1))
    assert len(left) == len(right) == 20 and not left & right
    # STOP is not a word: (h, m, STOP) against every real s on the side.
    stop = _triples(pf.SIBLING, tokens, start, n, (h, m, n + 1))
    for s2 in range(m + 1, n + 1):
        shared = stop & _triples(pf.SIBLING, tokens, start, n, (h, m, s2))
        assert len(shared) == 5  # without S: bias, HP MP, HW MP, HP MW, HW MW
    # Grandparent configurations: reversing the chain changes every feature
    # (the direction of g -> h is part of the configuration).
    g1 = _triples(pf.GRANDPARENT, tokens, start, n, (2, 5, 8))
    g2 = _triples(pf.GRANDPARENT, tokens, start, n, (8, 5, 2))
    assert not g1 & g2
    # The 2-cycle has triple features of its own and no pair features.
    cycle = _indices(pf.GRANDPARENT, tokens, start, n, (5, 2, 5), "rich", pf.TAGS_XPOS,
                     2**22 - 1)
    assert cycle.shape[0] == 20
    assert not set(cycle.tolist()) & _triples(pf.GRANDPARENT, tokens, start, n, (5, 2, 8))


@pytest.mark.parametrize("preset", PRESETS)
def test_salted_apart_from_arc_features(preset):
    n_features = 2**22
    mask = n_features - 1
    tokens, start, n = _stacked(preset, n_features, length=20)
    sentence_tokens = tokens[start:start + n + 1]
    encoder = ArcFeatures(preset=preset, n_features=n_features)
    sentence = EncodedSentence(np.ascontiguousarray(sentence_tokens), preset, n_features)
    arcs = {(h, m): encoder.arc_feature_indices(sentence, h, m)
            for h in range(n + 1) for m in range(1, n + 1) if h != m}
    arc_set = set(np.concatenate(list(arcs.values())).tolist())
    # Chance collisions only: about |arc features| / n_features of any other set.
    chance = len(arc_set) / n_features
    work = _state(tokens, start, n)
    triple_sets = {}
    for kind in KINDS:
        triple_sets[kind] = set()
        for part in _all_parts(kind, n):
            triple_sets[kind] |= _triples(kind, tokens, start, n, part, work=work)
        overlap = len(triple_sets[kind] & arc_set) / len(triple_sets[kind])
        assert overlap < 3 * chance + 1e-3
    sib, grand = triple_sets[pf.SIBLING], triple_sets[pf.GRANDPARENT]
    assert len(sib & grand) / len(sib) < 3 * len(grand) / n_features + 1e-3
    # The pair features are the pair's arc features XOR-ed with the type's
    # salt (the arc's aligned blocks of 16 weights stay aligned) ...
    shift = af.index_shift(mask)
    out = np.empty(af.max_arc_features(n), dtype=np.int64)
    pair_sets = {pf.SIBLING: set(), pf.GRANDPARENT: set()}
    for (p, q), arc in arcs.items():
        for kind in KINDS:
            if kind == pf.SIBLING and p == 0:
                continue  # the root is never a sibling
            k = pf.pair_features(kind, tokens, start, n, p, q, af.RICH if preset == "rich"
                                 else af.MST, work, shift, mask, out)
            salt = int(pf._PAIR_SALTS[kind]) & mask
            assert salt != 0 and salt & 15 == 0
            np.testing.assert_array_equal(out[:k] ^ salt, arc)
            pair_sets[kind] |= set(out[:k].tolist())
    # ... so that they share weights with the arcs, or with each other, by chance only.
    for kind in KINDS:
        assert len(pair_sets[kind] & arc_set) / len(pair_sets[kind]) < 3 * chance + 1e-3
    both = pair_sets[pf.SIBLING] & pair_sets[pf.GRANDPARENT]
    assert len(both) / len(pair_sets[pf.SIBLING]) < 3 * chance + 1e-3


def _reference_scores(kind, tokens, start, n, parts, w, preset, tags, mask):
    """Sums of ``w`` over :func:`part_feature_indices`, triples then pair, in order."""
    k_t = pf.n_triple_features(tags)
    ref = np.empty(len(parts))
    for i, part in enumerate(parts):
        idx = _indices(kind, tokens, start, n, part, preset, tags, mask)
        triple = 0.0
        for j in idx[:k_t]:
            triple += w[j]
        pair = 0.0
        for j in idx[k_t:]:
            pair += w[j]
        ref[i] = triple + pair if idx.shape[0] > k_t else triple
    return ref


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("preset", PRESETS)
def test_scores_equal_the_sum_over_the_part_indices(kind, preset):
    mask = 2**16 - 1
    tokens, start, n = _stacked(preset, mask + 1)
    rng = np.random.RandomState(1)
    w = rng.randn(mask + 1)
    parts = _random_parts(kind, n, rng)
    code = af.RICH if preset == "rich" else af.MST
    # The work arrays served another sentence first (stacked at row 0): its
    # states and memo must not leak into this one's scores.
    other_n = start - 1
    work = _state(tokens, 0, other_n, L=max(n, other_n) + 1)
    other = _random_parts(kind, other_n, rng, size=50)
    pf.part_scores(kind, tokens, 0, other_n, other, w, code, pf.TAGS_BOTH, mask, work,
                   np.empty(len(other)), True)
    pf.part_states(tokens, start, n, work)
    for tags in (pf.TAGS_XPOS, pf.TAGS_BOTH):
        ref = _reference_scores(kind, tokens, start, n, parts, w, preset, tags, mask)
        for memoise in (True, False):
            out = np.full(len(parts), np.nan)
            pf.part_scores(kind, tokens, start, n, parts, w, code, tags, mask, work, out,
                           memoise)
            np.testing.assert_array_equal(out, ref)
    # The memo holds the pairs met, and only those.
    pf.part_scores(kind, tokens, start, n, parts, w, code, pf.TAGS_BOTH, mask, work, out, True)
    expected = set()
    for a, b, c in parts.tolist():
        if kind == pf.SIBLING and b != a and 1 <= c <= n:
            expected.add((b, c))
        elif kind == pf.GRANDPARENT and c != a:
            expected.add((a, c))
    computed = np.argwhere(~np.isnan(work.table[:n + 1, :n + 1]))
    assert set(map(tuple, computed.tolist())) == expected
    # Named entry points.
    out = np.empty(len(parts))
    if kind == pf.SIBLING:
        pf.sibling_scores(tokens, start, n, parts, w, code, pf.TAGS_BOTH, mask, work, out)
    else:
        pf.grandparent_scores(tokens, start, n, parts, w, code, pf.TAGS_BOTH, mask, work, out)
    np.testing.assert_array_equal(out, ref)


def _sparse_gradient(n_features):
    return (np.zeros((n_features, 2)), np.zeros(n_features, dtype=np.int64))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("preset", PRESETS)
def test_gradient_is_the_adjoint_of_the_scores(kind, preset):
    mask = 2**16 - 1
    tokens, start, n = _stacked(preset, mask + 1)
    rng = np.random.RandomState(2)
    w = rng.randn(mask + 1)
    parts = _random_parts(kind, n, rng)
    coef = rng.randn(len(parts))
    coef[rng.rand(len(parts)) < 0.3] = 0.0
    code = af.RICH if preset == "rich" else af.MST
    tags = pf.TAGS_XPOS
    work = _state(tokens, start, n)
    scores = np.empty(len(parts))
    pf.part_scores(kind, tokens, start, n, parts, w, code, tags, mask, work, scores, True)
    grad, touched = _sparse_gradient(mask + 1)
    stamp = 7
    add = pf.add_sibling_parts if kind == pf.SIBLING else pf.add_grandparent_parts
    n_touched = add(tokens, start, n, parts, coef, code, tags, mask, work, grad, 0, touched, 0,
                    stamp)
    lhs = grad[:, 0] @ w
    rhs = coef @ scores
    assert abs(lhs - rhs) <= 1e-10 * max(1.0, np.abs(coef) @ np.abs(scores))
    # Exactly sum_i coef_i f_i, and every coordinate it touches is listed once.
    dense = np.zeros(mask + 1)
    for part, c in zip(parts, coef):
        np.add.at(dense, _indices(kind, tokens, start, n, part, preset, tags, mask), c)
    np.testing.assert_allclose(grad[:, 0], dense, rtol=0, atol=1e-12)
    listed = touched[:n_touched]
    assert len(set(listed.tolist())) == n_touched
    assert set(np.flatnonzero(grad[:, 0]).tolist()) <= set(listed.tolist())
    assert np.all(grad[listed, 1] == stamp)
    # The generic kernel gives the same, and a second call adds to the first.
    n_again = pf.add_part_gradient(kind, tokens, start, n, parts, coef, code, tags, mask, work,
                                   grad, 0, touched, n_touched, stamp)
    assert n_again == n_touched
    np.testing.assert_allclose(grad[:, 0], 2 * dense, rtol=0, atol=1e-12)


def test_hashes_are_stable():
    # Fixed values: a change of the hashing silently invalidates fitted
    # models, so it must be deliberate.
    encoded = ArcFeatures(preset="mst").transform([[("Dogs", "NOUN"), ("bark", "VERB")]])[0]
    mask = 2**22 - 1
    sib = pf.part_feature_indices(pf.SIBLING, encoded.tokens, 0, 2, 2, 1, -1, af.MST,
                                  pf.TAGS_XPOS, mask)
    grand = pf.part_feature_indices(pf.GRANDPARENT, encoded.tokens, 0, 2, 0, 2, 1, af.MST,
                                    pf.TAGS_XPOS, mask)
    assert sib.shape == (20,) and grand.shape == (20 + 48,)
    assert sib[:3].tolist() == PINNED_SIBLING
    assert grand[:3].tolist() == PINNED_GRANDPARENT
    assert grand[20:23].tolist() == PINNED_GRANDPARENT_PAIR
