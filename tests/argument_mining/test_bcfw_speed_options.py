"""The argument miner's fast training keeps BCFW's guarantees.

Training uses multi-plane BCFW (cached LP solutions) and loose LP solves;
the objective and duality gap reported at the end come from tight solves
bounded by AD3's dual, on ``n_jobs`` threads. Checked here: that objective
against an independent recomputation (HiGHS), ``n_jobs`` changing nothing,
and the cache reaching the same optimum as plain BCFW.
"""

import numpy as np
import pytest

from sksparse_struct import StructuredSVMArgumentMiner
from sksparse_struct.argument_mining._problem import (
    ArgumentProblem,
    DocumentTarget,
    ParameterLayout,
    structure_from_marginals,
)
from sksparse_struct.datasets import load_cdcp_sample
from sksparse_struct.feature_extraction import ArgumentFeatures
from sksparse_struct.inference import highs_lp
from sksparse_struct.learners import minimize_bcfw

from .test_miner import LABELS, random_document


@pytest.fixture(scope="module")
def sample():
    X_train, y_train, _, _ = load_cdcp_sample()
    return ArgumentFeatures().fit(X_train, y_train).transform(X_train), y_train


def _tight_primal(miner, docs, y):
    """``1/2 ||w||^2 + C sum_i hinge_i`` with the LPs solved exactly by HiGHS."""
    targets = miner._targets(y, docs, miner.classes_)
    graphs = [miner._graph(doc) for doc in docs]
    problem = ArgumentProblem(docs, targets, graphs, miner.layout_, miner.link_cost_, {})
    w = miner.coef_
    hinge = 0.0
    for i, graph in enumerate(graphs):
        scores = problem.scores(w, i, cost_augmented=True)
        result = highs_lp(graph.graph, *scores)
        m = structure_from_marginals(graph, miner.layout_, result.variables, result.factors)
        indices, values = problem.joint_feature(i, m - problem.gold(i))
        hinge += problem.cost(i, m) + values @ w[indices]
    return 0.5 * w @ w + miner.C * hinge


def test_reported_objective_is_the_tight_one(sample):
    docs, y = sample
    miner = StructuredSVMArgumentMiner(max_iter=4, random_state=0).fit(docs, y)
    want = _tight_primal(miner, docs, y)
    # AD3's dual bounds the LP from above: never below, and equal to the
    # tolerance of the solves.
    assert miner.objective_ >= want - 1e-9 * abs(want)
    assert miner.objective_ == pytest.approx(want, rel=1e-6)
    n_iter, gap = miner.duality_gaps_[-1]
    assert n_iter == 4 and gap > 0


def test_results_do_not_depend_on_n_jobs(sample):
    docs, y = sample
    fits = [StructuredSVMArgumentMiner(max_iter=3, random_state=0, n_jobs=n_jobs).fit(docs, y)
            for n_jobs in (None, 2)]
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    assert fits[0].duality_gaps_ == fits[1].duality_gaps_
    assert fits[0].integral_fraction_ == fits[1].integral_fraction_
    assert fits[0].objective_ == fits[1].objective_


def _small_problem(seed):
    rng = np.random.RandomState(seed)
    docs = [random_document(rng, n) for n in (3, 4, 3, 4)]
    layout = ParameterLayout(len(LABELS), 6, 5, 3, ("coparent",), 35)
    miner = StructuredSVMArgumentMiner(constraints="cdcp", second_order=("coparent",))
    miner.classes_, miner.layout_ = LABELS, layout
    miner._illegal_, miner._required_source_ = [], None
    targets = [DocumentTarget(rng.randint(len(LABELS), size=doc.props.shape[0]),
                              (rng.rand(doc.link_pairs.shape[0]) < 0.3).astype(np.int64))
               for doc in docs]
    return ArgumentProblem(docs, targets, [miner._graph(doc) for doc in docs], layout, 2.0,
                           {"max_iter": 3000, "tol": 1e-8})


@pytest.mark.slow  # ~10 s; the cache's decodings are also checked in test_reported_objective
def test_the_cache_reaches_the_same_optimum():
    # Exact LP solves on small documents: the decoder is exact for the LP
    # relaxation, so the gaps certify the distances to the one optimum.
    C = 1.0
    results = []
    for options in ({}, dict(cache_size=4, cache_steps=2),
                    dict(cache_size=8, cache_steps=5, cache_tol=0.2)):
        results.append(minimize_bcfw(_small_problem(0), C=C, max_iter=120, average=False,
                                     gap_every=120, random_state=0, **options))
    plain = results[0]
    assert plain.gap.gap <= 2e-2 * plain.gap.primal
    for result in results[1:]:
        gap = result.gap
        # The cache gets closer in as many passes, with fewer decodings.
        assert 0 <= gap.gap <= plain.gap.gap
        assert sum(result.n_decoded) < 0.6 * sum(plain.n_decoded)
        bound = np.sqrt(2 * gap.gap) + np.sqrt(2 * plain.gap.gap)
        assert np.linalg.norm(result.coef - plain.coef) <= bound
        # Weak duality across the runs: every dual below every primal.
        assert gap.dual <= plain.gap.primal + 1e-9 and plain.gap.dual <= gap.primal + 1e-9


def test_the_duality_gap_is_computed_after_the_last_pass_only(sample):
    docs, y = sample
    gaps = []
    miner = StructuredSVMArgumentMiner(max_iter=3, random_state=0)
    record = miner._record
    miner._record = lambda info: (gaps.append(info.gap), record(info))
    miner.fit(docs, y)
    assert gaps[:2] == [None, None] and gaps[2] is not None
    assert [n for n, _ in miner.duality_gaps_] == [3]


@pytest.mark.parametrize("lp_gap_tol", [None, 1e-2, 1e-6])
def test_lp_gap_tol_only_loosens_the_training_decodings(sample, lp_gap_tol):
    # The training solves stop at the gap tolerance; the reported objective
    # is still the tight one (an upper bound within the solves' tolerance).
    docs, y = sample
    miner = StructuredSVMArgumentMiner(max_iter=3, random_state=0,
                                       lp_gap_tol=lp_gap_tol).fit(docs, y)
    want = _tight_primal(miner, docs, y)
    assert miner.objective_ >= want - 1e-9 * abs(want)
    assert miner.objective_ == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("value", [0.0, -1e-3, "1e-2"])
def test_bad_lp_gap_tol(sample, value):
    docs, y = sample
    with pytest.raises(ValueError, match="'lp_gap_tol' parameter"):
        StructuredSVMArgumentMiner(max_iter=1, lp_gap_tol=value).fit(docs, y)
