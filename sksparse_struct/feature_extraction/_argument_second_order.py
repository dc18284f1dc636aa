"""Compatibility and second-order features of :class:`ArgumentFeatures`.

Three compatibility features per candidate link, and 35 features per pair
of candidate links sharing a proposition, a triple ``(a, b, c)`` of the
co-parent, grandparent and sibling factors (Niculae, Park and Cardie, 2017):
whether the three share a sentence, their order, the span of their
sentences, and the nouns they share.
"""

import numpy as np

COMPAT_FEATURES = ("bias", "adjacent", "source_precedes_target")
SECOND_ORDER_FEATURES = (
    "same_sentence_abc", "same_sentence_ab", "same_sentence_ac", "same_sentence_bc",
    "order_abc", "order_acb", "order_bac", "order_bca", "order_cab", "order_cba",
    "sentence_range_le_1", "sentence_range_le_2", "sentence_range_le_3",
    "sentence_range_le_4", "sentence_range_le_5",
    "shared_nouns_abc", "shared_nouns_ab", "shared_nouns_ac", "shared_nouns_bc",
    "jaccard_abc", "jaccard_ab", "jaccard_ac", "jaccard_bc",
    "shared_abc_over_a", "shared_abc_over_b", "shared_abc_over_c",
    "shared_abc_over_ab", "shared_abc_over_ac", "shared_abc_over_bc",
    "shared_ab_over_a", "shared_ab_over_b", "shared_ac_over_a", "shared_ac_over_c",
    "shared_bc_over_b", "shared_bc_over_c",
)

# Word tokens (with inner apostrophes, hyphens and dots) or single symbols.


def _triples(pairs, n_props):
    """``(a, b, c)`` for every candidate (a, b) and every candidate (b, c), c != a."""
    if len(pairs) == 0:
        return np.zeros((0, 3), dtype=np.int64)
    src, trg = pairs[:, 0], pairs[:, 1]
    out_count = np.bincount(src, minlength=n_props)
    out_start = np.concatenate([[0], np.cumsum(out_count)])
    count = out_count[trg]
    first = np.repeat(np.arange(len(pairs)), count)
    # position of each (b, c) within the candidates leaving b
    offset = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    second = out_start[trg][first] + offset
    a, b, c = src[first], trg[first], trg[second]
    keep = c != a
    return np.column_stack([a[keep], b[keep], c[keep]]).astype(np.int64).reshape(-1, 3)


def _second_order(triples, sent_sets, noun_sets, n_sents):
    """The 35 second-order features of each triple."""
    n_props = len(sent_sets)
    if len(triples) == 0:
        return np.zeros((0, len(SECOND_ORDER_FEATURES)))
    S = np.zeros((n_props, max(n_sents, 1)), dtype=bool)
    for k, ss in enumerate(sent_sets):
        S[k, ss] = True
    vocab = sorted(set().union(*noun_sets))
    index = {w: i for i, w in enumerate(vocab)}
    N = np.zeros((n_props, max(len(vocab), 1)), dtype=bool)
    for k, ns in enumerate(noun_sets):
        N[k, [index[w] for w in ns]] = True
    a, b, c = triples.T
    Sa, Sb, Sc = S[a], S[b], S[c]
    same_abc = (Sa & Sb & Sc).any(1)
    same_ab, same_ac, same_bc = (Sa & Sb).any(1), (Sa & Sc).any(1), (Sb & Sc).any(1)
    order = [(a < b) & (b < c), (a < c) & (c < b), (b < a) & (a < c),
             (b < c) & (c < a), (c < a) & (a < b), (c < b) & (b < a)]
    big = np.int64(1 << 40)
    has = S.any(1)
    smin = np.where(has, S.argmax(1), big)
    smax = np.where(has, S.shape[1] - 1 - S[:, ::-1].argmax(1), -big)
    hi = np.maximum(np.maximum(smax[a], smax[b]), smax[c])
    lo = np.minimum(np.minimum(smin[a], smin[b]), smin[c])
    rng = np.where(hi >= lo, hi - lo, 0)
    ranges = [rng <= k for k in range(1, 6)]
    Na, Nb, Nc = N[a], N[b], N[c]
    size = N.sum(1).astype(np.float64)
    na, nb, nc = size[a], size[b], size[c]
    pair = (N.astype(np.float64) @ N.T.astype(np.float64))
    ab, ac, bc = pair[a, b], pair[a, c], pair[b, c]
    abc = (Na & Nb & Nc).sum(1).astype(np.float64)
    u_ab, u_ac, u_bc = na + nb - ab, na + nc - ac, nb + nc - bc
    u_abc = na + nb + nc - ab - ac - bc + abc
    cols = [same_abc, same_ab, same_ac, same_bc, *order, *ranges,
            abc > 0, ab > 0, ac > 0, bc > 0,
            abc / (1 + u_abc), ab / (1 + u_ab), ac / (1 + u_ac), bc / (1 + u_bc),
            abc / (1 + na), abc / (1 + nb), abc / (1 + nc),
            abc / (1 + u_ab), abc / (1 + u_ac), abc / (1 + u_bc),
            ab / (1 + na), ab / (1 + nb), ac / (1 + na), ac / (1 + nc),
            bc / (1 + nb), bc / (1 + nc)]
    return np.column_stack([np.asarray(x, dtype=np.float64) for x in cols])
