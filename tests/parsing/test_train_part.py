"""The parser's training kernel: losses pushed through the hashed features.

``train_part`` scores the arcs of each sentence, computes its loss and the
gradient with respect to the arc scores, and pushes that gradient through
the features into the online learner's sparse gradient; checked here
against directional finite differences of the loss with respect to the
weights (hash collisions included).
"""

import numpy as np
import pytest

from sksparse_struct.feature_extraction import ARC_PRESETS, ArcFeatures
from sksparse_struct.learners import SparseGradient
from sksparse_struct.learners._online_fast import aligned_zeros
from sksparse_struct.losses._kinds_fast import LOSS_KINDS as KINDS
from sksparse_struct.losses._kinds_fast import SparseMAPOptions
from sksparse_struct.parsing._parser_fast import ArcModel, TrainingOptions, train_kernel
from sksparse_struct.parsing._problem import stack_sentences

from .._helpers import all_trees

MAX_ITER, TOL, DEP_TOL = 200, 1e-12, 1e-12


def _encoded_problem(seed, n_features, n_labels):

    rng = np.random.default_rng(seed)
    tags = ["NOUN", "VERB", "DET", "ADJ", "PUNCT", "CCONJ"]
    X, heads = [], []
    for n in (1, 3, 5, 7, 12):
        X.append([{"form": f"w{rng.integers(5)}", "upos": tags[rng.integers(len(tags))]}
                  for _ in range(n)])
        trees = all_trees(min(n, 4), False, True)
        h = trees[rng.integers(len(trees))][1:].tolist()
        heads.append(h + list(range(len(h), n)))  # a chain after the first words
    encoded = ArcFeatures(n_features=n_features).fit_transform(X)
    treebank, _ = stack_sentences(encoded)
    gold = np.full(treebank.offsets[-1], -1, dtype=np.int64)
    labels = np.full(treebank.offsets[-1], -1, dtype=np.int64)
    for s, h in enumerate(heads):
        rows = slice(treebank.offsets[s] + 1, treebank.offsets[s + 1])
        gold[rows] = h
        if n_labels:
            labels[rows] = rng.integers(n_labels, size=len(h))
    return treebank._replace(heads=gold, labels=labels), encoded


def _train_part(kind, projective, treebank, n_labels, w, min_gradient=0.0, seed=0, step=1):
    """``train_part`` on every sentence: total loss, gradient and touched coordinates."""
    nf = w.shape[0]
    gradient = SparseGradient(aligned_zeros((nf, 2)), np.zeros((1, nf), dtype=np.int64),
                              np.zeros(1, dtype=np.int64))
    n_sent = treebank.offsets.shape[0] - 1
    ids = np.arange(n_sent, dtype=np.int64)
    losses = np.zeros(n_sent)
    label_losses = np.zeros(n_sent)
    model = ArcModel(preset=np.int64(ARC_PRESETS.index("rich")), mask=np.int64(nf - 1),
                     n_labels=np.int64(n_labels), root_label=np.int64(-1),
                     keys=np.zeros(0, dtype=np.int64), use_filter=np.bool_(False),
                     projective=np.bool_(projective), single_root=np.bool_(True))
    options = TrainingOptions(kind=np.int64(KINDS[kind]), label_margin=1.0,
                              sparsemap=SparseMAPOptions(MAX_ITER, TOL, DEP_TOL),
                              min_gradient=float(min_gradient), seed=np.int64(seed))
    train = train_kernel(KINDS[kind], projective)
    not_converged = train(treebank, model, options, ids, w, gradient, 0, step, losses,
                          label_losses)
    assert not_converged == 0
    n_touched = gradient.n_touched[0]
    touched = gradient.touched[0, :n_touched]
    # The stamps mark exactly the listed coordinates.
    np.testing.assert_array_equal(np.flatnonzero(gradient.values[:, 1] == step), np.sort(touched))
    return losses.sum() + label_losses.sum(), gradient.values[:, 0].copy(), touched


@pytest.mark.parametrize("kind", [pytest.param(kind, marks=pytest.mark.slow)
                                  if kind == "margin_sparsemap" else kind for kind in KINDS])
@pytest.mark.parametrize("projective", [False, True])
@pytest.mark.parametrize("n_labels", [0, 3])
def test_feature_gradient_matches_directional_finite_differences(kind, projective, n_labels):
    # margin_sparsemap (sparsemap's kernel with the costs added, ~10 s a case) runs with
    # --runslow; its gradient against brute force is in tests/losses/test_tree_kernel.py.
    # The whole chain: hashed features -> arc scores -> loss -> gradient
    # pushed back through the features (with hash collisions: 2**10 weights).
    treebank, _ = _encoded_problem(4, 2**10, n_labels)
    rng = np.random.default_rng(5)
    w = 0.1 * rng.normal(size=2**10)
    loss, g, touched = _train_part(kind, projective, treebank, n_labels, w)
    assert loss > 0
    assert set(np.flatnonzero(g)) <= set(touched.tolist())
    assert len(set(touched.tolist())) == len(touched)
    eps = 1e-6
    for _ in range(3):
        v = rng.normal(size=w.shape[0])
        plus = _train_part(kind, projective, treebank, n_labels, w + eps * v)[0]
        minus = _train_part(kind, projective, treebank, n_labels, w - eps * v)[0]
        assert g @ v == pytest.approx((plus - minus) / (2 * eps), rel=1e-5, abs=1e-6)
