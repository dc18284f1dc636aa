"""minimize_bcfw's speed options: multi-plane caching, batches of decodings on threads.

The guarantees: the cache only chooses other steps of the same algorithm, so
it reaches the same optimum (checked against the QP of the enumerated
problems, to the precision the duality gap certifies) and the duality gap
is still computed with the decoder; batches decode at the same weights, so
the result never depends on ``n_jobs``.
"""

import threading

import numpy as np
import pytest

from sksparse_struct.learners import minimize_bcfw

from .test_bcfw import Sequences, multiclass, ssvm_qp, triangle

MAKERS = [lambda: multiclass(n=8, K=3, d=3, seed=1), lambda: Sequences(n=5, seed=2),
          lambda: triangle(n=5, seed=3)]


@pytest.mark.parametrize("make", MAKERS)
@pytest.mark.parametrize("options", [dict(cache_size=3), dict(cache_size=5, cache_steps=3),
                                     dict(cache_size=2, cache_tol=0.0),
                                     dict(cache_size=4, cache_steps=2, batch_size=3)])
def test_the_cache_reaches_the_same_optimum(make, options):
    problem = make()
    C = 1.0
    result = minimize_bcfw(problem, C=C, max_iter=2000, average=False, gap_every=500,
                           random_state=0, **options)
    # The reported objective is the problem's, with the decoder (not the cache).
    gap = result.gap
    assert gap.primal == pytest.approx(problem.primal(result.coef, C), rel=1e-12, abs=1e-12)
    assert -1e-10 <= gap.gap <= 5e-4 * gap.primal
    # The QP's weights within the distance the gap certifies (SLSQP's own
    # solution is accurate to about 1e-7).
    w_qp = ssvm_qp(problem, C)
    p_qp = problem.primal(w_qp, C)
    assert gap.dual - 1e-9 <= p_qp <= gap.primal + 1e-9
    bound = np.sqrt(2 * max(gap.gap, 0.0)) + np.sqrt(2 * max(p_qp - gap.dual, 0.0))
    assert np.linalg.norm(result.coef - w_qp) <= bound + 1e-6


def test_the_cache_saves_decodings_and_still_ascends():
    problem = Sequences(n=6, seed=4)
    duals, decoded = [], []
    result = minimize_bcfw(problem, C=1.0, max_iter=60, average=False, gap_every=0,
                           random_state=0, cache_size=4, cache_steps=2,
                           callback=lambda info: (duals.append(info.dual),
                                                  decoded.append(info.n_decoded)))
    assert result.n_decoded == decoded
    assert decoded[0] == problem.n_samples
    assert all(0 <= d <= problem.n_samples for d in decoded)
    assert sum(decoded) < 0.8 * 60 * problem.n_samples
    # Every step is a line search towards a point of the block's domain.
    assert np.all(np.diff(duals) >= -1e-12)
    # More steps than decodings: the cached steps count as steps.
    assert result.n_steps > sum(decoded)


class Threaded:
    """Wraps a problem: records the threads that decode, and the decoding order."""

    def __init__(self, problem):
        self.problem = problem
        self.n_params, self.n_samples = problem.n_params, problem.n_samples
        self.threads = set()
        self.lock = threading.Lock()

    def gold(self, i):
        return self.problem.gold(i)

    def loss_augmented(self, w, i):
        with self.lock:
            self.threads.add(threading.get_ident())
        return self.problem.loss_augmented(w, i)

    def joint_feature(self, i, m):
        return self.problem.joint_feature(i, m)


@pytest.mark.parametrize("cache_size", [0, 3])
def test_results_do_not_depend_on_n_jobs(cache_size):
    results = []
    for n_jobs in (None, 1, 2, -1):
        problem = Threaded(Sequences(n=9, seed=5))
        results.append(minimize_bcfw(problem, C=0.5, max_iter=20, gap_every=5, random_state=0,
                                     cache_size=cache_size, cache_steps=1, batch_size=4,
                                     n_jobs=n_jobs))
    for other in results[1:]:
        np.testing.assert_array_equal(other.coef, results[0].coef)
        np.testing.assert_array_equal(other.coef_last, results[0].coef_last)
        assert other.history == results[0].history
        assert other.dual_curve == results[0].dual_curve
        assert other.n_decoded == results[0].n_decoded


def test_n_jobs_decodes_on_several_threads():
    problem = Threaded(Sequences(n=9, seed=5))
    minimize_bcfw(problem, max_iter=3, gap_every=0, random_state=0, batch_size=9, n_jobs=2)
    assert len(problem.threads) >= 1  # a pool of 2; which threads run is up to the pool
    problem = Threaded(Sequences(n=9, seed=5))
    minimize_bcfw(problem, max_iter=3, gap_every=0, random_state=0, batch_size=9)
    assert problem.threads == {threading.get_ident()}


@pytest.mark.parametrize("cache_size", [0, 3])
def test_batch_size_one_is_plain_bcfw(cache_size):
    problem = Sequences(n=5, seed=6)
    a = minimize_bcfw(problem, max_iter=15, random_state=0, cache_size=cache_size)
    b = minimize_bcfw(problem, max_iter=15, random_state=0, cache_size=cache_size,
                      batch_size=1, n_jobs=2)
    np.testing.assert_array_equal(a.coef, b.coef)
    assert a.history == b.history
    assert a.n_decoded == b.n_decoded


class Batches(Threaded):
    """Records the weights of every decoding, pass by pass."""

    def __init__(self, problem):
        super().__init__(problem)
        self.passes = [[]]

    def loss_augmented(self, w, i):
        with self.lock:
            self.passes[-1].append((i, w.copy()))
        return self.problem.loss_augmented(w, i)


def test_with_a_cache_a_batch_gathers_the_blocks_to_decode():
    # The next batch_size blocks that need a decoding are decoded at the same
    # weights (the cached steps of the blocks visited meanwhile made at
    # once): within a pass, the decodings come in runs of batch_size at equal
    # weights (the last run possibly shorter); the weights change between runs.
    problem = Batches(Sequences(n=9, seed=5))
    result = minimize_bcfw(problem, C=0.5, max_iter=12, gap_every=0, random_state=0,
                           cache_size=3, batch_size=3, n_jobs=2,
                           callback=lambda info: problem.passes.append([]))
    passes = problem.passes[:-1]
    assert [len(p) for p in passes] == result.n_decoded
    assert any(0 < len(p) < problem.n_samples for p in passes)
    changes = 0
    for decodings in passes:
        for k in range(1, len(decodings)):
            same = np.array_equal(decodings[k][1], decodings[k - 1][1])
            if k % 3:
                assert same, (k, len(decodings))
            changes += not same
    assert changes > 0


@pytest.mark.parametrize("kwargs, message", [
    (dict(cache_size=-1), "cache_size must be an integer >= 0"),
    (dict(cache_size=1.5), "cache_size must be an integer >= 0"),
    (dict(cache_steps=-2), "cache_steps must be an integer >= 0"),
    (dict(cache_tol=-0.1), "cache_tol must be finite and >= 0"),
    (dict(cache_tol=np.nan), "cache_tol must be finite and >= 0"),
    (dict(batch_size=0), "batch_size must be an integer >= 1"),
    (dict(n_jobs=0), "n_jobs must be None or a non-zero integer"),
    (dict(cache_size=2, line_search=False), "cache_size > 0 needs line_search=True"),
])
def test_bad_speed_options(kwargs, message):
    with pytest.raises(ValueError, match=message):
        minimize_bcfw(multiclass(), **kwargs)
