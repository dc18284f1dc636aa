"""The tag filter on candidate arcs and the skipping of negligible gradient entries."""

import itertools
import pickle

import numpy as np
import pytest

from sksparse_struct import SparseMAPParser
from sksparse_struct.datasets import load_ewt_sample
from sksparse_struct.feature_extraction import ArcFeatures


def _sample(subset, n=None):
    sentences = load_ewt_sample(subset)[:n]
    X = [[{k: tok[k] for k in ("form", "lemma", "upos", "xpos", "feats")} for tok in s]
         for s in sentences]
    y = [[tok["head"] for tok in s] for s in sentences]
    return X, y


def _projective(heads):
    arcs = [(min(h, m), max(h, m)) for m, h in enumerate(heads, 1)]
    return not any(a < c < b < d or c < a < d < b
                   for (a, b), (c, d) in itertools.combinations(arcs, 2))


def _projective_sample(n):
    # The filter is built on the arcs the parser trains on; with projective
    # gold trees those are the gold arcs themselves.
    X, y = _sample("train", n)
    keep = [i for i, heads in enumerate(y) if _projective(heads)]
    return [X[i] for i in keep], [y[i] for i in keep]


def _bin(d):
    return d - 1 if d <= 5 else (5 if d <= 10 else 6)


def _seen_keys(X, y):
    # Independent of the kernels: the raw tags, not their hashes.
    return {(s[h - 1]["upos"], s[m - 1]["upos"], h < m, _bin(abs(h - m)))
            for s, heads in zip(X, y) for m, h in enumerate(heads, 1) if h > 0}


def _kept(sentence, h, m, seen):
    if h == 0 or abs(h - m) == 1:
        return True
    return (sentence[h - 1]["upos"], sentence[m - 1]["upos"], h < m,
            _bin(abs(h - m))) in seen


@pytest.fixture(scope="module")
def fitted():
    X, y = _projective_sample(150)
    assert len(X) > 100
    parser = SparseMAPParser("perceptron", projective=True, arc_filter="tags",
                             features=ArcFeatures(n_features=2**16), max_iter=2,
                             random_state=0).fit(X, y)
    return parser, X, y


def test_filter_drops_exactly_the_unseen_tag_pairs(fitted):
    parser, X, y = fitted
    seen = _seen_keys(X, y)
    Xt, _ = _sample("test", 40)
    total = kept = 0
    for sentence, S in zip(Xt, parser.decision_function(Xt)):
        n = len(sentence)
        for h in range(n + 1):
            for m in range(1, n + 1):
                if h == m:
                    continue
                expected = _kept(sentence, h, m, seen)
                assert np.isfinite(S[h, m]) == expected, (h, m)
                total += 1
                kept += expected
    assert 0 < kept < total
    assert len(parser.arc_filter_keys_) == len(seen)


def test_filter_keeps_every_training_arc_and_reports_the_fraction(fitted):
    parser, X, y = fitted
    seen = _seen_keys(X, y)
    total = kept = 0
    for sentence, heads, S in zip(X, y, parser.decision_function(X)):
        n = len(sentence)
        assert all(np.isfinite(S[h, m]) for m, h in enumerate(heads, 1))
        for h in range(n + 1):
            for m in range(1, n + 1):
                if h != m:
                    total += 1
                    kept += _kept(sentence, h, m, seen)
    assert parser.arc_filter_kept_ == pytest.approx(kept / total, rel=1e-12)
    assert parser.arc_filter_kept_ < 0.9


def test_filtered_parser_always_finds_a_tree():
    # Tags never seen in training: only root and neighbour arcs remain.
    parser = SparseMAPParser("sparsemap", arc_filter="tags", single_root=True,
                             features=ArcFeatures(n_features=2**12), max_iter=2,
                             random_state=0)
    X = [[{"form": "a", "upos": "DET"}, {"form": "b", "upos": "NOUN"},
          {"form": "c", "upos": "VERB"}]] * 4
    parser.fit(X, [[2, 3, 0]] * 4)
    new = [[{"form": f"z{i}", "upos": "INTJ"} for i in range(7)]]
    for projective in (False, True):
        parser.set_params(projective=projective).fit(X, [[2, 3, 0]] * 4)
        heads = parser.predict(new)[0]
        assert sum(heads == 0) == 1
        for m, h in enumerate(heads, 1):
            assert h == 0 or abs(h - m) == 1
        marginals = parser.predict_marginals(new)[0]
        np.testing.assert_allclose(marginals[:, 1:].sum(axis=0), 1.0)
        support = parser.predict_sparse(new)[0]
        assert sum(p for _, p in support) == pytest.approx(1.0)


def test_filter_off_by_default_and_state_survives_pickle(fitted):
    X, y = _sample("train", 30)
    plain = SparseMAPParser("perceptron", features=ArcFeatures(n_features=2**12), max_iter=1,
                            random_state=0).fit(X, y)
    assert plain.arc_filter_keys_ is None and plain.arc_filter_kept_ is None
    S = plain.decision_function(X[:3])
    for M in S:
        off = ~np.eye(M.shape[0], dtype=bool)
        off[:, 0] = False
        assert np.isfinite(M[off]).all()
    parser = fitted[0]
    clone = pickle.loads(pickle.dumps(parser))
    Xt, _ = _sample("test", 20)
    for a, b in zip(parser.predict(Xt), clone.predict(Xt)):
        np.testing.assert_array_equal(a, b)


def test_filtered_training_is_identical_across_n_jobs():
    X, y = _sample("train", 60)
    coefs = [SparseMAPParser("crf", arc_filter="tags", features=ArcFeatures(n_features=2**14),
                             max_iter=2, random_state=0, n_jobs=n_jobs).fit(X, y).coef_
             for n_jobs in (1, 2)]
    np.testing.assert_array_equal(coefs[0], coefs[1])


def test_warm_start_keeps_the_previous_arcs():
    X, y = _sample("train", 80)
    parser = SparseMAPParser("perceptron", arc_filter="tags", warm_start=True,
                             features=ArcFeatures(n_features=2**12), max_iter=1,
                             random_state=0).fit(X[:40], y[:40])
    first = set(parser.arc_filter_keys_.tolist())
    parser.fit(X[40:], y[40:])
    second = SparseMAPParser("perceptron", arc_filter="tags",
                             features=ArcFeatures(n_features=2**12), max_iter=1,
                             random_state=0).fit(X[40:], y[40:])
    assert set(parser.arc_filter_keys_.tolist()) == first | set(second.arc_filter_keys_.tolist())


# --- min_arc_gradient -----------------------------------------------------------


def _pushed_gradient(kind, min_gradient, seed=3, key=0, step=1):
    from .test_train_part import _encoded_problem, _train_part

    treebank, encoded = _encoded_problem(seed, 2**10, 0)
    w = 0.3 * np.random.default_rng(seed).normal(size=2**10)
    result = _train_part(kind, False, treebank, 0, w, min_gradient, key, step)
    return result, (treebank, encoded), treebank.heads, w


@pytest.mark.parametrize("kind", ["perceptron", "hinge"])
def test_min_gradient_below_one_changes_nothing_for_unit_gradients(kind):
    (loss0, g0, _), *_ = _pushed_gradient(kind, 0.0)
    (loss1, g1, _), *_ = _pushed_gradient(kind, 0.5)
    assert loss0 == loss1
    np.testing.assert_array_equal(g0, g1)


@pytest.mark.parametrize("loss", ["perceptron", "hinge"])
def test_min_arc_gradient_never_touches_the_perceptron_or_hinge_updates(loss):
    # Their gradient entries are 0 or +-1: the documented promise holds for
    # any threshold, even one above 1.
    X, y = _sample("train", 30)
    models = [SparseMAPParser(loss, features=ArcFeatures(n_features=2**12), max_iter=2,
                              random_state=0, min_arc_gradient=t).fit(X, y)
              for t in (0.0, 5.0)]
    np.testing.assert_array_equal(models[0].coef_, models[1].coef_)


def _crf_arc_gradients(corpus, gold, w):
    """Per sentence, the CRF gradient w.r.t. the arc scores and each arc's feature indices,
    from the public DependencyTree marginals and ArcFeatures' public indices."""
    from sksparse_struct.structures import DependencyTree

    treebank, encoded = corpus
    indices = ArcFeatures(n_features=2**10).arc_feature_indices
    out = []
    for s, sentence in enumerate(encoded):
        n = len(sentence)
        arcs = {(h, m): indices(sentence, h, m)
                for h in range(n + 1) for m in range(1, n + 1) if h != m}
        S = np.full((n + 1, n + 1), -np.inf)
        for (h, m), idx in arcs.items():
            S[h, m] = w[idx].sum()
        mu = DependencyTree(projective=False, single_root=True).marginals(S)[0]
        for m in range(1, n + 1):
            mu[gold[treebank.offsets[s] + m], m] -= 1.0
        out.append((mu, arcs))
    return out


def test_min_gradient_keeps_large_crf_entries_and_rounds_small_ones():
    # Entries above the threshold are pushed exactly; each smaller one is
    # pushed as +-threshold or not at all, as the keyed draw decides.
    from sksparse_struct.parsing._scoring_fast import arc_uniform

    threshold = 0.05
    (loss, g, _), corpus, gold, w = _pushed_gradient("crf", threshold, key=11, step=4)
    (loss_exact, g_exact, _), *_ = _pushed_gradient("crf", 0.0)
    assert loss == loss_exact  # the loss is always exact
    expected = np.zeros_like(w)
    exact = np.zeros_like(w)
    kept = dropped = 0
    for s, (mu, arcs) in enumerate(_crf_arc_gradients(corpus, gold, w)):
        n = len(corpus[1][s])
        for (h, m), idx in arcs.items():
            v = mu[h, m]
            np.add.at(exact, idx, v)
            if 0 < abs(v) < threshold:
                if arc_uniform(11, 4, s, h * (n + 1) + m) < abs(v) / threshold:
                    v = np.sign(v) * threshold
                    kept += 1
                else:
                    v = 0.0
                    dropped += 1
            np.add.at(expected, idx, v)
    assert kept > 0 and dropped > kept
    np.testing.assert_allclose(g, expected, atol=1e-10)
    np.testing.assert_allclose(g_exact, exact, atol=1e-10)


def test_sparsified_entries_are_unbiased():
    # Each small entry is +-threshold with probability |entry| / threshold
    # (over the keys), so its expectation is the entry; others pass as they are.
    from sksparse_struct.parsing._scoring_fast import sparsified

    tau = 0.1
    keys = [(s, a) for s in range(100) for a in range(200)]
    for v in (0.003, -0.02, 0.05, -0.0999):
        draws = np.array([sparsified(v, tau, 7, 3, s, a) for s, a in keys])
        assert set(np.unique(draws).tolist()) <= {0.0, float(np.sign(v) * tau)}
        p = abs(v) / tau
        assert abs(np.mean(draws != 0) - p) <= 5 * np.sqrt(p * (1 - p) / len(keys))
    for v in (0.1, -0.5, 0.0, 2.0):
        assert all(sparsified(v, tau, 7, 3, s, a) == v for s, a in keys[:50])


def test_arc_uniform_is_uniform():
    from scipy.stats import kstest

    from sksparse_struct.parsing._scoring_fast import arc_uniform

    u = np.array([arc_uniform(5, step, s, a)
                  for step in (1, 2) for s in range(50) for a in range(100)])
    assert u.min() >= 0 and u.max() < 1
    assert kstest(u, "uniform").pvalue > 1e-3


def test_sparsified_feature_gradient_averages_to_the_exact_one():
    threshold = 0.2
    (_, g_exact, _), *_ = _pushed_gradient("crf", 0.0)
    draws = np.array([_pushed_gradient("crf", threshold, key=k)[0][1] for k in range(400)])
    one_draw = np.mean([np.linalg.norm(d - g_exact) for d in draws])
    assert one_draw > 0  # it is random
    # Unbiased: averaging 400 draws shrinks the error about 20 times.
    assert np.linalg.norm(draws.mean(axis=0) - g_exact) < 0.15 * one_draw
    # Another step key gives other draws.
    other = _pushed_gradient("crf", threshold, key=0, step=2)[0][1]
    assert not np.array_equal(other, draws[0])
