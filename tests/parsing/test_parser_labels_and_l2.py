"""Relation labels follow UD's root rule; strong L2 cannot make AdaGrad diverge."""

import numpy as np

from sksparse_struct import SparseMAPParser
from sksparse_struct.feature_extraction import ArcFeatures


def _treebank(n_sent=30, seed=0):
    rng = np.random.RandomState(seed)
    X, y, d = [], [], []
    for _ in range(n_sent):
        n = rng.randint(2, 7)
        words = [{"form": f"w{rng.randint(5)}", "upos": ["NOUN", "VERB", "DET"][rng.randint(3)]}
                 for _ in range(n)]
        heads = [0] + [rng.randint(1, m + 1) for m in range(1, n)]  # a chain-like tree
        rels = ["root"] + [["nsubj", "obj", "det"][rng.randint(3)] for _ in range(1, n)]
        X.append(words)
        y.append(heads)
        d.append(rels)
    return X, y, d


def test_root_label_exactly_on_root_attached_words():
    X, y, d = _treebank()
    for loss in ["perceptron", "sparsemap"]:
        parser = SparseMAPParser(loss, features=ArcFeatures(n_features=2**12), max_iter=2,
                                 random_state=0).fit(X, list(zip(y, d)))
        heads, rels = parser.predict(X, return_deprel=True)
        for h, r in zip(heads, rels):
            for head, rel in zip(h, r):
                assert (head == 0) == (rel == "root")


def test_strong_l2_keeps_weights_bounded():
    X, y, _ = _treebank(seed=1)
    for loss in ["crf", "sparsemap", "hinge"]:
        norms = []
        for alpha in [1e-3, 1.0, 10.0]:
            # Exact gradients: the comparison is about L2, not the sparsification.
            parser = SparseMAPParser(loss, features=ArcFeatures(n_features=2**12), alpha=alpha,
                                     max_iter=5, random_state=0,
                                     min_arc_gradient=0.0).fit(X, y)
            norms.append(np.linalg.norm(parser.coef_))
            assert np.all(np.isfinite(parser.coef_))
        # More shrinkage never means larger weights; alpha = 10 shrinks to 0.
        assert norms[0] >= norms[1] >= norms[2]
        assert norms[2] < norms[0]
