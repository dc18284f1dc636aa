"""LinearChainCRF(loss="hinge", solver="bcfw"): the chain's BCFW problem against brute force,
the objective and its duality gap, learning, the scikit-learn contract, errors."""

import itertools
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from sksparse_struct import LinearChainCRF
from sksparse_struct.learners import minimize_bcfw
from sksparse_struct.tagging._problem import ChainBCFWProblem, ChainData, ChainModel
from tests.tagging.test_linear_chain import _chunk_data, _tiny_tagging_data

# --- the BCFW problem against enumeration ---------------------------------------------


def _masked_problem(seed, dense):
    """Random features and gold labels; a model with learned, pinned and forbidden tails."""
    rng = np.random.default_rng(seed)
    K, n_features = 3, 5
    lengths = np.array([1, 3, 2, 4])
    N = int(lengths.sum())
    X = sp.random(N, n_features, density=0.5, random_state=seed, format="csr")
    X.data = rng.normal(size=X.nnz)
    trans_mask = np.ones((K, K))
    trans_mask[0, 2] = 0.0  # pinned at zero
    trans_mask[2, 1] = -1.0  # forbidden
    start_mask, end_mask = np.ones(K), np.ones(K)
    start_mask[1] = -1.0
    end_mask[2] = 0.0
    # Gold sequences that respect the forbidden parts.
    allowed = [p for n in range(1, 5) for p in itertools.product(range(K), repeat=n)
               if p[0] != 1 and (2, 1) not in itertools.pairwise(p)]
    gold = []
    for n in lengths:
        options = [p for p in allowed if len(p) == n]
        gold.extend(options[rng.integers(len(options))])
    data = ChainData(X, lengths, np.array(gold, dtype=np.int64))
    attr_ptr, pair_label = data.pairs(K, all_possible_states=dense)
    model = ChainModel(attr_ptr, pair_label, trans_mask, start_mask, end_mask)
    w = rng.normal(size=model.n_params) * model.learned
    return data, model, w, X


def _encode(labels, K):
    n = len(labels)
    m = np.zeros(n * K + K * K)
    m[np.arange(n) * K + np.asarray(labels, dtype=int)] = 1.0
    for a, b in itertools.pairwise(labels):
        m[n * K + a * K + b] += 1.0
    return m


def _path_score(model, w, X, r0, labels):
    """Score of a labelling from the parameter vector, feature by feature."""
    w_unary, trans, start, end = model.split(w)
    total = start[labels[0]] + end[labels[-1]]
    for a, b in itertools.pairwise(labels):
        total += trans[a, b]
    for t, b in enumerate(labels):
        row = X[r0 + t]
        for f, x in zip(row.indices, row.data):
            for p in range(model.attr_ptr[f], model.attr_ptr[f + 1]):
                if model.pair_label[p] == b:
                    total += x * w_unary[p]
    return total


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("dense", [True, False])
def test_chain_problem_matches_enumeration(seed, dense):
    data, model, w, X = _masked_problem(seed, dense)
    problem = ChainBCFWProblem(model, data)
    K = model.n_labels
    assert problem.n_params == model.n_params and problem.n_samples == 4
    pinned_or_forbidden = model.n_pairs + np.flatnonzero(model.learned[model.n_pairs:] == 0)
    for s in range(data.n_sequences):
        r0, r1 = data.offsets[s], data.offsets[s + 1]
        gold = data.gold[r0:r1]
        np.testing.assert_array_equal(problem.gold(s), _encode(gold, K))
        best, best_labels = -np.inf, None
        for labels in itertools.product(range(K), repeat=r1 - r0):
            score = _path_score(model, w, X, r0, labels)
            if not np.isfinite(score):
                continue
            # The joint feature vector gives the score of every allowed labelling.
            idx, val = problem.joint_feature(s, _encode(labels, K))
            assert not np.isin(idx, pinned_or_forbidden).any()
            assert val @ w[idx] == pytest.approx(score, rel=1e-12, abs=1e-12)
            augmented = score + np.sum(np.array(labels) != gold)
            if augmented > best:
                best, best_labels = augmented, labels
        m, cost, stats = problem.loss_augmented(w, s)
        np.testing.assert_array_equal(m, _encode(best_labels, K))
        assert cost == np.sum(np.array(best_labels) != gold)
        hinge = best - _path_score(model, w, X, r0, gold)
        assert stats[0] == pytest.approx(hinge, rel=1e-12, abs=1e-12)
        assert stats[1] == float(cost > 0)


def test_joint_feature_is_linear_in_the_structure():
    data, model, _, _ = _masked_problem(5, dense=False)
    problem = ChainBCFWProblem(model, data)
    rng = np.random.default_rng(0)
    for s in range(data.n_sequences):
        a, b = (rng.normal(size=problem.gold(s).shape[0]) for _ in range(2))
        dense = []
        for m in (a, b, 2.0 * a - 0.5 * b):
            idx, val = problem.joint_feature(s, m)
            out = np.zeros(model.n_params)
            np.add.at(out, idx, val)
            dense.append(out)
        np.testing.assert_allclose(dense[2], 2.0 * dense[0] - 0.5 * dense[1], atol=1e-12)


class _WithoutFastPath:
    """The problem's methods, without its compiled pass."""

    def __init__(self, problem):
        self.problem = problem
        self.n_params, self.n_samples = problem.n_params, problem.n_samples
        self.stat_names = problem.stat_names
        self.gold = problem.gold
        self.loss_augmented = problem.loss_augmented
        self.joint_feature = problem.joint_feature


@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize("line_search, average", [(True, True), (False, False)])
def test_compiled_pass_equals_the_learner_loop(dense, line_search, average):
    data, model, _, _ = _masked_problem(7, dense)
    problem = ChainBCFWProblem(model, data)
    assert hasattr(problem, "bcfw_pass")
    runs = [minimize_bcfw(p, C=2.0, max_iter=7, line_search=line_search, average=average,
                          gap_every=3, random_state=0)
            for p in (problem, _WithoutFastPath(problem))]
    a, b = runs
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.coef_last, b.coef_last)
    assert a.dual_curve == b.dual_curve
    for x, y in zip(a.stats, b.stats):
        np.testing.assert_array_equal(x, y)
    assert np.any(a.coef_last != 0)
    # The gaps: the problem's hinge_sum against the learner's sum over samples.
    assert [h.n_iter for h in a.history] == [h.n_iter for h in b.history] == [3, 6, 7]
    for x, y in zip(a.history, b.history):
        assert x.dual == y.dual
        assert x.primal == pytest.approx(y.primal, rel=1e-12)
    for n_threads in (1, 2):
        parallel = ChainBCFWProblem(model, data, n_threads)
        assert parallel.hinge_sum(a.coef) == pytest.approx(
            sum(parallel.loss_augmented(a.coef, i)[2][0] for i in range(data.n_sequences)),
            rel=1e-12)


# --- the estimator --------------------------------------------------------------------


def _brute_force_objective(crf, X, y, c2):
    """``sum_i max_y' [Hamming + score(y')] - score(y_i) + c2 ||w||^2`` from the fitted attributes."""
    index = {c: i for i, c in enumerate(crf.classes_)}
    W = crf.coef_.toarray()
    trans, start, end = crf.transition_, crf.start_transition_, crf.end_transition_
    total = 0.0
    for M, labels in zip(X, y):
        gold = np.array([index[c] for c in labels])
        U = M @ W.T
        U[0] += start
        U[-1] += end

        def score(p, U=U):
            return U[np.arange(len(p)), p].sum() + sum(trans[a, b]
                                                       for a, b in itertools.pairwise(p))

        best = max(score(np.array(p)) + np.sum(np.array(p) != gold)
                   for p in itertools.product(range(len(index)), repeat=len(gold)))
        total += best - score(gold)
    finite = np.isfinite(trans)
    norm = (W ** 2).sum() + (trans[finite] ** 2).sum() + (start[np.isfinite(start)] ** 2).sum() \
        + (end[np.isfinite(end)] ** 2).sum()
    return total + c2 * norm


def _matrix_data(seed, n_seqs=6, n_features=4):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_seqs):
        n = int(rng.integers(1, 4))
        X.append(sp.csr_matrix(rng.normal(size=(n, n_features))))
        y.append(list(rng.choice(["A", "B", "C"], size=n)))
    return X, y


@pytest.mark.parametrize("c2, forbidden", [(0.5, None), (0.05, [("A", "C"), (None, "B")])])
def test_objective_and_gap_against_brute_force(c2, forbidden):
    X, y = _matrix_data(0)
    if forbidden:
        y = [["A" if (t == 0 and c == "B") else c for t, c in enumerate(s)] for s in y]
        y = [[c if not (t and s[t - 1] == "A" and c == "C") else "B" for t, c in enumerate(s)]
             for s in y]
    kwargs = {"loss": "hinge", "solver": "bcfw", "c2": c2,
              "forbidden_transitions": forbidden, "random_state": 0}
    short = LinearChainCRF(max_iter=5, **kwargs).fit(X, y)
    # The objective is exact at the final weights; C = 1 / (2 c2) maps it.
    assert short.objective_ == pytest.approx(_brute_force_objective(short, X, y, c2),
                                             rel=1e-10)
    assert short.n_iter_ == 5
    assert short.duality_gap_ > 0
    # The gap certifies: no run gets below objective_ - duality_gap_.
    long = LinearChainCRF(max_iter=300, **kwargs).fit(X, y)
    assert long.objective_ == pytest.approx(_brute_force_objective(long, X, y, c2), rel=1e-10)
    lower = short.objective_ - short.duality_gap_
    assert lower <= long.objective_ + 1e-12
    assert long.objective_ - long.duality_gap_ <= short.objective_ + 1e-12
    assert long.duality_gap_ < 0.1 * short.duality_gap_


def test_fits_a_separable_task():
    X, y = _tiny_tagging_data()
    crf = LinearChainCRF(loss="hinge", solver="bcfw", c2=0.01, max_iter=50,
                         random_state=0).fit(X, y)
    assert crf.predict(X) == y
    assert crf.score(X, y) == 1.0


def test_learns_chunks_and_generalizes():
    X, y = _chunk_data(0, n_seqs=50)
    Xt, yt = _chunk_data(1, n_seqs=30)
    crf = LinearChainCRF(loss="hinge", solver="bcfw", max_iter=20, random_state=0).fit(X, y)
    assert crf.score(Xt, yt) > 0.95
    assert crf.n_iter_ == 20


def test_empty_and_single_token_sequences():
    X, y = _tiny_tagging_data()
    X, y = [[], *X, [{"w": "dog"}]], [[], *y, ["NOUN"]]
    crf = LinearChainCRF(loss="hinge", solver="bcfw", c2=0.01, max_iter=50,
                         random_state=0).fit(X, y)
    assert crf.predict(X) == y
    assert crf.objective_ == pytest.approx(
        _brute_force_objective(crf, [crf.vectorizer_.transform([s])[0] for s in X[1:]], y[1:],
                               0.01), rel=1e-10)


def test_tol_stops_on_the_relative_gap():
    X, y = _tiny_tagging_data()
    crf = LinearChainCRF(loss="hinge", solver="bcfw", c2=1.0, max_iter=500, tol=1e-2,
                         random_state=0).fit(X, y)
    assert crf.n_iter_ < 500 and crf.n_iter_ % 10 == 0
    assert crf.duality_gap_ <= 1e-2 * crf.objective_


def test_random_state_n_jobs_pickle_clone(tmp_path):
    X, y = _chunk_data(9, n_seqs=40)
    crf = LinearChainCRF(loss="hinge", solver="bcfw", max_iter=6, random_state=3)
    a = crf.fit(X, y)
    b = clone(crf).set_params(n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(a._params, b._params)
    assert clone(crf).get_params() == crf.get_params()
    c = LinearChainCRF(loss="hinge", solver="bcfw", max_iter=6, random_state=4).fit(X, y)
    assert not np.array_equal(a._params, c._params)
    again = pickle.loads(pickle.dumps(a))
    assert again.predict(X) == a.predict(X)
    assert again.duality_gap_ == a.duality_gap_


def test_other_solvers_have_no_gap():
    X, y = _tiny_tagging_data()
    assert LinearChainCRF(loss="hinge", max_iter=3).fit(X, y).duality_gap_ is None


def test_verbose(capsys):
    X, y = _tiny_tagging_data()
    LinearChainCRF(loss="hinge", solver="bcfw", max_iter=12, verbose=5,
                   random_state=0).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    # Every 5th pass, and every pass that computes the gap (the 10th, the last).
    assert [line.split()[2] for line in lines] == ["5/12", "10/12", "12/12"]
    assert "  duality_gap " in lines[1] and "duality_gap" not in lines[0]
    assert "  mistakes " in lines[0] and lines[0].startswith("[LinearChainCRF] pass  5/12  dual ")


def test_errors():
    X, y = _tiny_tagging_data()
    for loss in ("crf", "perceptron", "sparsemap", "margin_sparsemap"):
        with pytest.raises(ValueError, match=f"solver='bcfw' cannot train loss='{loss}'"):
            LinearChainCRF(loss=loss, solver="bcfw").fit(X, y)
    with pytest.raises(ValueError, match=r"solver='bcfw' needs c2 > 0 and c1 = 0.*c1=0.1"):
        LinearChainCRF(loss="hinge", solver="bcfw", c1=0.1).fit(X, y)
    with pytest.raises(ValueError, match=r"solver='bcfw' needs c2 > 0 .*c2=0"):
        LinearChainCRF(loss="hinge", solver="bcfw", c2=0).fit(X, y)
    with pytest.raises(ValueError, match="warm_start=True is not supported by solver='bcfw'"):
        LinearChainCRF(loss="hinge", solver="bcfw", warm_start=True).fit(X, y)
