"""The compiled loss kernels compute what the generic structured_loss computes.

``losses._sequence_fast`` and ``losses._tree_fast`` are what the tagger and
the parser train with; ``structured_loss`` is the definition that works for
any structure through its contract. Same losses, same gradients, on random
instances of every kind (the generic function is itself checked against
brute force in ``test_structured.py``).
"""

import numpy as np
import pytest

from sksparse_struct.losses import structured_loss
from sksparse_struct.losses._kinds_fast import LOSS_KINDS, SparseMAPOptions
from sksparse_struct.losses._sequence_fast import (
    sequence_loss,
    sequence_loss_work,
    sequence_sparsemap_loss,
)
from sksparse_struct.losses._tree_fast import tree_loss
from sksparse_struct.structures import DependencyTree, Sequence

OPTIONS = SparseMAPOptions(200, 1e-12, 1e-12)
LOSSES = list(LOSS_KINDS)


def _random_tree(rng, n, projective, single_root):
    structure = DependencyTree(projective=projective, single_root=single_root)
    S = 2.0 * rng.normal(size=(n + 1, n + 1))
    S[:, 0] = -np.inf
    np.fill_diagonal(S, -np.inf)
    # A gold tree: the best tree under other random scores.
    other = rng.normal(size=S.shape)
    other[:, 0] = -np.inf
    np.fill_diagonal(other, -np.inf)
    return structure, S, structure.map(other)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("projective", [False, True])
@pytest.mark.parametrize("single_root", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_tree_kernel_equals_the_generic_loss(loss, projective, single_root, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 8))
    structure, S, gold = _random_tree(rng, n, projective, single_root)
    D = np.empty_like(S)
    value, converged = tree_loss(
        np.int64(LOSS_KINDS[loss]), S.copy(), np.asarray(gold, dtype=np.int64), np.int64(n),
        np.bool_(projective), np.bool_(single_root), OPTIONS, D, np.empty(n + 1, np.int64),
        np.empty_like(S),
    )
    assert converged
    expected, (d_scores,) = structured_loss(structure, S, y=gold, loss=loss,
                                            sparsemap_options=None if "sparsemap" not in loss
                                            else OPTIONS)
    assert value == pytest.approx(expected, rel=1e-9, abs=1e-9)
    arcs = np.isfinite(S)
    np.testing.assert_allclose(D[arcs], d_scores[arcs], atol=1e-8)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("seed", range(4))
def test_sequence_kernels_equal_the_generic_loss(loss, seed):
    rng = np.random.default_rng(seed)
    n, K = int(rng.integers(1, 7)), int(rng.integers(2, 5))
    unary = 2.0 * rng.normal(size=(n, K))
    trans = rng.normal(size=(K, K))
    trans[0, K - 1] = -np.inf  # a forbidden transition
    gold = Sequence().map(rng.normal(size=(n, K)), np.where(np.isinf(trans), -np.inf, 0.0))
    kind = np.int64(LOSS_KINDS[loss])
    u = np.vstack([unary, np.zeros((2, K))])  # a longer buffer, as the kernels get
    g = np.full_like(u, np.nan)
    d_trans, d_start, d_end = np.zeros((K, K)), np.zeros(K), np.zeros(K)
    labels = np.asarray(gold, dtype=np.int64)
    if "sparsemap" in loss:
        value, converged = sequence_sparsemap_loss(kind, u, np.int64(n), trans, labels, OPTIONS,
                                                   g, d_trans, d_start, d_end)
        assert converged
    else:
        value = sequence_loss(kind, u, np.int64(n), trans, labels,
                              sequence_loss_work(np.int64(n + 2), trans, loss == "crf"), g, d_trans, d_start,
                              d_end)
    expected, (d_unary, d_trans_ref, _, _) = structured_loss(
        Sequence(), unary, trans, y=gold, loss=loss,
        sparsemap_options=OPTIONS if "sparsemap" in loss else None)
    assert value == pytest.approx(expected, rel=1e-9, abs=1e-9)
    np.testing.assert_allclose(g[:n], d_unary, atol=1e-8)
    allowed = np.isfinite(trans)
    np.testing.assert_allclose(d_trans[allowed], d_trans_ref[allowed], atol=1e-8)
    # The start and end scores enter the first and last rows of the unary scores.
    np.testing.assert_allclose(d_start, g[0], atol=1e-12)
    np.testing.assert_allclose(d_end, g[n - 1], atol=1e-12)
