"""One SparseMAPOptions, one set of defaults: inference, the losses and the estimators."""

import dataclasses
import warnings

import numpy as np
import pytest

import sksparse_struct.inference as inference
import sksparse_struct.inference._sparsemap as sm
import sksparse_struct.losses as losses
from sksparse_struct import LinearChainCRF, SparseMAPParser
from sksparse_struct.inference import SparseMAPOptions, sparsemap, sparsemap_parts
from sksparse_struct.inference._sparsemap_fast import (
    DEPENDENT_TOL,
    ITER_PER_PART,
    MIN_ITER,
    SPARSEMAP_OPTIONS,
    iteration_limit,
)
from sksparse_struct.losses import structured_loss
from sksparse_struct.losses._kinds_fast import SPARSEMAP, SPARSEMAP_OPTIONS as LOSS_OPTIONS
from sksparse_struct.losses._sequence_fast import sequence_sparsemap_loss
from sksparse_struct.structures import XOR, DependencyTree, Sequence


def _tree_scores(n, seed=0):
    return np.random.default_rng(seed).normal(size=(n + 1, n + 1))


def _sequence_scores(n=6, K=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, K)), rng.normal(size=(K, K))


def _same_result(a, b):
    assert a.n_iter == b.n_iter and a.converged == b.converged
    assert np.array_equal(a.u, b.u) and np.array_equal(a.probabilities, b.probabilities)


# --- one object, one set of defaults ----------------------------------------------------


def test_one_class_and_one_default_object():
    assert losses.SparseMAPOptions is inference.SparseMAPOptions is SparseMAPOptions
    assert LOSS_OPTIONS is SPARSEMAP_OPTIONS
    assert SPARSEMAP_OPTIONS == SparseMAPOptions()
    assert SPARSEMAP_OPTIONS == (None, 1e-9, DEPENDENT_TOL)
    assert "SparseMAPOptions" in inference.__all__ and "SparseMAPOptions" in losses.__all__
    # sparsemap's defaults for the active set are these.
    assert sm._METHOD_DEFAULTS["active_set"] == (SPARSEMAP_OPTIONS.max_iter,
                                                 SPARSEMAP_OPTIONS.tol)
    assert sm._DEPENDENT_TOL == SPARSEMAP_OPTIONS.dependent_tol == DEPENDENT_TOL


def test_estimators_default_to_the_same_object():
    assert LinearChainCRF()._sparsemap_options() is SPARSEMAP_OPTIONS
    assert SparseMAPParser()._sparsemap_options() is SPARSEMAP_OPTIONS
    assert LinearChainCRF(sparsemap_max_iter=7)._sparsemap_options() == (
        SPARSEMAP_OPTIONS._replace(max_iter=7))
    assert SparseMAPParser(sparsemap_max_iter=7)._sparsemap_options() == (
        SPARSEMAP_OPTIONS._replace(max_iter=7))


def test_iteration_limit_is_the_width_rule():
    assert (MIN_ITER, ITER_PER_PART) == (1000, 10)
    for width in (0, 1, 50, 100, 101, 250):
        assert iteration_limit(None, width) == max(1000, 10 * width)
        assert sm._active_set_max_iter(width) == max(1000, 10 * width)
    assert iteration_limit(7, 500) == 7


def test_default_max_iter_grows_with_the_sentence(monkeypatch):
    seen = []
    compiled = sm.active_set_tree

    def spy(eta_u, n, single_root, max_iter, tol, dep_tol):
        seen.append(max_iter)
        return compiled(eta_u, n, single_root, max_iter, tol, dep_tol)

    monkeypatch.setattr(sm, "active_set_tree", spy)
    for n in (5, 100, 130):
        sparsemap(DependencyTree(), _tree_scores(n))
    assert seen == [1000, 1000, 1300]


def test_structured_loss_defaults_to_the_shared_options():
    unary, trans = _sequence_scores()
    y = [0, 1, 2, 0, 1, 2]
    default = structured_loss(Sequence(), unary, trans, y=y, loss="sparsemap")
    explicit = structured_loss(Sequence(), unary, trans, y=y, loss="sparsemap",
                               sparsemap_options=SPARSEMAP_OPTIONS)
    assert default[0] == explicit[0]
    parts = Sequence().encode(unary, trans)
    direct = sparsemap_parts(Sequence(), parts)
    m_y, _ = Sequence().indicators(y, parts)
    assert np.array_equal(default[1][0], (direct.u - m_y).reshape(unary.shape))


def test_loss_kernels_read_none_as_the_width_rule():
    # Short sequences: None is max(1000, 10 n) = 1000 iterations, bit for bit.
    unary, trans = _sequence_scores(n=8, K=4, seed=3)
    labels = np.array([0, 1, 2, 3, 0, 1, 2, 3])
    out = []
    for options in (SPARSEMAP_OPTIONS, SPARSEMAP_OPTIONS._replace(max_iter=1000)):
        g = np.zeros_like(unary)
        d_trans, d_start, d_end = np.zeros((4, 4)), np.zeros(4), np.zeros(4)
        loss, converged = sequence_sparsemap_loss(SPARSEMAP, unary.copy(), 8, trans, labels,
                                                  options, g, d_trans, d_start, d_end)
        out.append((loss, converged, g, d_trans))
    assert out[0][0] == out[1][0] and out[0][1] and out[1][1]
    assert np.array_equal(out[0][2], out[1][2]) and np.array_equal(out[0][3], out[1][3])


# --- sparsemap(..., options=...) ---------------------------------------------------------


@pytest.mark.parametrize("structure, potentials", [
    (DependencyTree(), (_tree_scores(7),)),
    (DependencyTree(projective=True), (_tree_scores(6, seed=1),)),
    (Sequence(), _sequence_scores()),
    (XOR(), (np.array([1.0, 0.8, -1.0, 0.9]),)),
])
def test_options_equal_the_keywords(structure, potentials):
    for max_iter, tol in ((None, None), (3, None), (50, 1e-12)):
        options = SPARSEMAP_OPTIONS._replace(
            max_iter=max_iter, tol=SPARSEMAP_OPTIONS.tol if tol is None else tol)
        with warnings.catch_warnings():
            # max_iter=3 stops some solves early: the same way, either way.
            warnings.simplefilter("ignore")
            a = sparsemap(structure, *potentials, max_iter=max_iter, tol=tol)
            b = sparsemap(structure, *potentials, options=options)
            parts = structure.encode(*potentials)
            c = sparsemap_parts(structure, parts, options=options)
        _same_result(a, b)
        _same_result(a, c)


def test_dependent_tol_reaches_the_solvers(monkeypatch):
    seen = []
    compiled = sm.active_set_tree

    def spy_compiled(eta_u, n, single_root, max_iter, tol, dep_tol):
        seen.append(("compiled", max_iter, tol, dep_tol))
        return compiled(eta_u, n, single_root, max_iter, tol, dep_tol)

    insert = sm.kkt_insert

    def spy_insert(*args):
        seen.append(("generic", args[-2]))
        return insert(*args)

    monkeypatch.setattr(sm, "active_set_tree", spy_compiled)
    monkeypatch.setattr(sm, "kkt_insert", spy_insert)
    S = _tree_scores(5)
    options = SparseMAPOptions(max_iter=40, tol=1e-11, dependent_tol=1e-8)
    sparsemap(DependencyTree(), S, options=options)
    assert seen == [("compiled", 40, 1e-11, 1e-8)]
    seen.clear()
    sparsemap(DependencyTree(), S)
    assert seen == [("compiled", max(1000, 50), 1e-9, DEPENDENT_TOL)]
    seen.clear()
    # The generic loop (a warm start): its KKT insertions use it too.
    first = sparsemap(DependencyTree(), S)
    seen.clear()
    sparsemap(DependencyTree(), S, init=first, options=options)
    assert seen and all(entry == ("generic", 1e-8) for entry in seen)


def test_check_options_returns_plain_types():
    options = sm.check_options(SparseMAPOptions(np.int64(5), 1, np.float32(1e-6)))
    assert options == (5, 1.0, pytest.approx(1e-6))
    assert type(options.max_iter) is int and type(options.tol) is float
    assert type(options.dependent_tol) is float
    assert sm.check_options(SPARSEMAP_OPTIONS) == SPARSEMAP_OPTIONS


# --- clear errors ------------------------------------------------------------------------


@pytest.mark.parametrize("options, message", [
    ({"max_iter": 10}, r"options must be a SparseMAPOptions \(from sksparse_struct.inference\), "
                       r"got dict"),
    ((10, 1e-9, 1e-10), "options must be a SparseMAPOptions"),
    (SparseMAPOptions(max_iter=0), r"options.max_iter must be an integer >= 1, got 0"),
    (SparseMAPOptions(max_iter=-3), "options.max_iter must be an integer >= 1, got -3"),
    (SparseMAPOptions(max_iter=2.5), "options.max_iter must be an integer >= 1, got 2.5"),
    (SparseMAPOptions(max_iter=True), "options.max_iter must be an integer >= 1, got True"),
    (SparseMAPOptions(tol=0.0), r"options.tol must be finite and > 0, got 0.0"),
    (SparseMAPOptions(tol=-1e-9), "options.tol must be finite and > 0"),
    (SparseMAPOptions(tol=np.nan), "options.tol must be finite and > 0"),
    (SparseMAPOptions(tol="small"), "options.tol must be a real number"),
    (SparseMAPOptions(dependent_tol=0.0), "options.dependent_tol must be finite and > 0"),
    (SparseMAPOptions(dependent_tol=np.inf), "options.dependent_tol must be finite and > 0"),
])
def test_bad_options(options, message):
    S = _tree_scores(4)
    with pytest.raises(ValueError, match=message):
        sparsemap(DependencyTree(), S, options=options)
    parts = DependencyTree().encode(S)
    with pytest.raises(ValueError, match=message):
        sparsemap_parts(DependencyTree(), parts, options=options)
    # The losses check them alike, under their own name.
    heads = np.array([-1, 0, 1, 2, 3])
    with pytest.raises(ValueError, match="sparsemap_" + message):
        structured_loss(DependencyTree(), S, y=heads, loss="sparsemap",
                        sparsemap_options=options)


def test_options_only_for_the_active_set():
    with pytest.raises(ValueError, match=r"options \(a SparseMAPOptions\) sets the active "
                                         r"set's solver; method='frank_wolfe' takes max_iter "
                                         "and tol"):
        sparsemap(XOR(), [1.0, 0.5], method="frank_wolfe", options=SparseMAPOptions())


@pytest.mark.parametrize("keywords, named", [
    (dict(max_iter=10), "max_iter"),
    (dict(tol=1e-6), "tol"),
    (dict(max_iter=10, tol=1e-6), "max_iter and tol"),
])
def test_options_and_keywords_not_both(keywords, named):
    with pytest.raises(ValueError, match=f"{named} given both as keyword and in options; "
                                         "pass one of them"):
        sparsemap(XOR(), [1.0, 0.5], options=SparseMAPOptions(), **keywords)
    parts = XOR().encode([1.0, 0.5])
    with pytest.raises(ValueError, match=f"{named} given both"):
        sparsemap_parts(XOR(), dataclasses.replace(parts), options=SparseMAPOptions(),
                        **keywords)
