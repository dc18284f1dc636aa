"""LinearChainCRF: losses against brute force, learning, sklearn contract, bad input."""

import itertools
import pickle

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline

from sksparse_struct import LinearChainCRF
from sksparse_struct.feature_extraction import SequenceVectorizer
from sksparse_struct.metrics import chunk_f1_scorer
from sksparse_struct.learners import SparseGradient
from sksparse_struct.losses._kinds_fast import LOSS_KINDS, SparseMAPOptions
from sksparse_struct.tagging._linear_chain import _forbidden_pairs
from sksparse_struct.tagging._problem import (
    ChainData,
    ChainModel,
    ChainProblem,
    ChainRunner,
)

LOSSES = ["crf", "hinge", "perceptron", "sparsemap", "margin_sparsemap"]

# Most tests stop L-BFGS early on purpose; test_convergence_warning checks the warning.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


# --- helpers -----------------------------------------------------------------


def _random_problem(seed, n_seqs=3, max_len=3, n_features=4, K=3, dense=True):
    """Random sparse token features, gold labels and a model with random weights."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, max_len + 1, size=n_seqs)
    N = int(lengths.sum())
    X = sp.random(N, n_features, density=0.6, random_state=seed, format="csr")
    X.data = rng.normal(size=X.nnz)
    gold = rng.integers(0, K, size=N).astype(np.int64)
    data = ChainData(X, lengths, gold)
    attr_ptr, pair_label = data.pairs(K, all_possible_states=dense)
    ones = np.ones((K, K))
    model = ChainModel(attr_ptr, pair_label, ones, np.ones(K), np.ones(K))
    w = rng.normal(size=model.n_params)
    return data, model, w


def _sequence_terms(data, model, w, s):
    """Unary scores (with start/end), transitions and gold labels of sequence ``s``."""
    K = model.n_labels
    w_unary, trans, start, end = model.split(w)
    W = np.zeros((data.n_features, K))
    for a in range(data.n_features):
        for p in range(model.attr_ptr[a], model.attr_ptr[a + 1]):
            W[a, model.pair_label[p]] = w_unary[p]
    X = sp.csr_matrix((data.data, data.indices, data.indptr), shape=(data.n_tokens, data.n_features))
    r0, r1 = data.offsets[s], data.offsets[s + 1]
    u = X[r0:r1] @ W
    u[0] += start
    u[-1] += end
    return u, trans, data.gold[r0:r1]


def _path_score(u, trans, labels):
    return u[np.arange(len(labels)), labels].sum() + sum(
        trans[a, b] for a, b in zip(labels[:-1], labels[1:])
    )


def _brute_force_loss(loss, data, model, w):
    total = 0.0
    for s in range(data.n_sequences):
        u, trans, gold = _sequence_terms(data, model, w, s)
        n, K = u.shape
        paths = [np.array(p) for p in itertools.product(range(K), repeat=n)]
        scores = np.array([_path_score(u, trans, p) for p in paths])
        cost = np.array([(p != gold).sum() for p in paths])
        ref = _path_score(u, trans, gold)
        if loss == "crf":
            m = scores.max()
            total += m + np.log(np.exp(scores - m).sum()) - ref
        elif loss == "hinge":
            total += (scores + cost).max() - ref
        elif loss == "perceptron":
            total += scores.max() - ref
    return total


def _brute_force_crf_gradient(data, model, w):
    """Gradient of the CRF loss: expected minus gold counts, by enumerating every path."""
    K, P = model.n_labels, model.n_pairs
    X = sp.csr_matrix((data.data, data.indices, data.indptr), shape=(data.n_tokens, data.n_features))
    d_u = np.zeros((data.n_tokens, K))
    d_trans = np.zeros((K, K))
    d_start = np.zeros(K)
    d_end = np.zeros(K)
    for s in range(data.n_sequences):
        u, trans, gold = _sequence_terms(data, model, w, s)
        n = u.shape[0]
        paths = [np.array(p) for p in itertools.product(range(K), repeat=n)]
        scores = np.array([_path_score(u, trans, p) for p in paths])
        prob = np.exp(scores - scores.max())
        prob /= prob.sum()
        r0 = data.offsets[s]
        for path, weight in ((gold, -1.0), *zip(paths, prob)):
            d_u[r0 + np.arange(n), path] += weight
            for a, b in itertools.pairwise(path):
                d_trans[a, b] += weight
            d_start[path[0]] += weight
            d_end[path[-1]] += weight
    grad_w = X.T @ d_u  # (n_features, K): d loss / d weight of (feature, label)
    grad = np.zeros(model.n_params)
    for a in range(data.n_features):
        for p in range(model.attr_ptr[a], model.attr_ptr[a + 1]):
            grad[p] = grad_w[a, model.pair_label[p]]
    grad[P:P + K * K] = d_trans.ravel()
    grad[P + K * K:P + K * K + K] = d_start
    grad[P + K * K + K:] = d_end
    return grad


def _tiny_tagging_data():
    """Words determine labels except 'x', whose label depends on the previous one."""
    X = [
        [{"w": "the"}, {"w": "dog"}, {"w": "runs"}],
        [{"w": "a"}, {"w": "cat"}, {"w": "sleeps"}],
        [{"w": "the"}, {"w": "cat"}, {"w": "runs"}],
        [{"w": "dogs"}, {"w": "run"}],
        [{"w": "a"}, {"w": "x"}],
        [{"w": "runs"}, {"w": "x"}],
    ]
    y = [
        ["DET", "NOUN", "VERB"],
        ["DET", "NOUN", "VERB"],
        ["DET", "NOUN", "VERB"],
        ["NOUN", "VERB"],
        ["DET", "NOUN"],
        ["VERB", "ADV"],
    ]
    return X, y


def _chunk_data(seed, n_seqs=40):
    """BIO chunks of random length over random 'words' that reveal the chunk type."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_seqs):
        tokens, labels = [], []
        while len(tokens) < 6:
            kind = rng.choice(["NP", "VP", "O"])
            length = int(rng.integers(1, 4))
            for i in range(length):
                if kind == "O":
                    tokens.append({"w": f"o{rng.integers(3)}"})
                    labels.append("O")
                else:
                    tokens.append({"w": f"{kind.lower()}{rng.integers(3)}", "first": i == 0})
                    labels.append(("B-" if i == 0 else "I-") + kind)
        X.append(tokens)
        y.append(labels)
    return X, y


# --- losses and gradients ----------------------------------------------------


@pytest.mark.parametrize("loss", ["crf", "hinge", "perceptron"])
@pytest.mark.parametrize("seed", range(4))
def test_losses_match_brute_force(loss, seed):
    data, model, w = _random_problem(seed)
    with ChainRunner(1) as runner:
        value, _, _ = runner.loss_and_grad(LOSS_KINDS[loss], model, data, w)
    assert value == pytest.approx(_brute_force_loss(loss, data, model, w), rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("loss", ["sparsemap", "margin_sparsemap"])
@pytest.mark.parametrize("seed", range(3))
def test_sparsemap_losses_match_the_generic_solver(loss, seed):
    from sksparse_struct.inference import sparsemap
    from sksparse_struct.structures import Sequence

    data, model, w = _random_problem(seed, n_seqs=3, max_len=4)
    with ChainRunner(1) as runner:
        value, _, failed = runner.loss_and_grad(
            LOSS_KINDS[loss], model, data, w, SparseMAPOptions(200, 1e-12, 1e-12)
        )
    assert failed == 0
    expected = 0.0
    for s in range(data.n_sequences):
        u, trans, gold = _sequence_terms(data, model, w, s)
        n, K = u.shape
        scores = u + (gold[:, None] != np.arange(K)) if loss == "margin_sparsemap" else u
        res = sparsemap(Sequence(), scores, trans, tol=1e-12)
        # max_mu <eta~, mu> - |mu_u|^2 / 2, from the support.
        value_s = sum(p * _path_score(scores, trans, np.asarray(y)) for y, p in res.support)
        value_s -= 0.5 * np.sum(res.marginals[0] ** 2)
        expected += value_s - _path_score(u, trans, gold) + 0.5 * n
    assert value == pytest.approx(expected, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("loss", ["sparsemap", "margin_sparsemap"])
def test_sparsemap_gradient_matches_finite_differences(loss):
    data, model, w = _random_problem(5, n_seqs=3, max_len=3)
    options = SparseMAPOptions(200, 1e-12, 1e-12)
    with ChainRunner(1) as runner:
        def f(v):
            return runner.loss_and_grad(LOSS_KINDS[loss], model, data, v, options)[0]

        _, grad, _ = runner.loss_and_grad(LOSS_KINDS[loss], model, data, w, options)
        eps = 1e-6
        numeric = np.array([
            (f(w + eps * e) - f(w - eps * e)) / (2 * eps) for e in np.eye(len(w))
        ])
    np.testing.assert_allclose(grad, numeric, atol=1e-6)


@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_crf_gradient_matches_finite_differences(seed, dense):
    data, model, w = _random_problem(seed, n_seqs=4, max_len=4, dense=dense)
    with ChainRunner(1) as runner:
        def f(v):
            return runner.loss_and_grad(LOSS_KINDS["crf"], model, data, v)[0]

        _, grad, _ = runner.loss_and_grad(LOSS_KINDS["crf"], model, data, w)
        eps = 1e-6
        numeric = np.array([
            (f(w + eps * e) - f(w - eps * e)) / (2 * eps) for e in np.eye(len(w))
        ])
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("loss", ["hinge", "perceptron"])
def test_subgradient_matches_finite_differences_away_from_kinks(loss):
    data, model, w = _random_problem(7, n_seqs=3, max_len=3)
    with ChainRunner(1) as runner:
        def f(v):
            return runner.loss_and_grad(LOSS_KINDS[loss], model, data, v)[0]

        _, grad, _ = runner.loss_and_grad(LOSS_KINDS[loss], model, data, w)
        eps = 1e-7
        numeric = np.array([
            (f(w + eps * e) - f(w - eps * e)) / (2 * eps) for e in np.eye(len(w))
        ])
    np.testing.assert_allclose(grad, numeric, atol=1e-5)


def test_crf_loss_survives_extreme_scores():
    # Scores of +-1e4 push the scaled recursion below its safe range: the
    # kernel falls back to log space and stays exact.
    data, model, w = _random_problem(3, n_seqs=3, max_len=4)
    w = w * 1e4
    with ChainRunner(1) as runner:
        value, grad, _ = runner.loss_and_grad(LOSS_KINDS["crf"], model, data, w)
    assert np.isfinite(value) and np.all(np.isfinite(grad))
    assert value == pytest.approx(_brute_force_loss("crf", data, model, w), rel=1e-9)
    # The gradient too: expected minus gold counts of every feature,
    # transition, start and end label, by enumeration on the same scores.
    np.testing.assert_allclose(grad, _brute_force_crf_gradient(data, model, w), rtol=0, atol=1e-9)
    # The same check at ordinary scores (the scaled recursion).
    w = w * 1e-4
    with ChainRunner(1) as runner:
        value, grad, _ = runner.loss_and_grad(LOSS_KINDS["crf"], model, data, w)
    np.testing.assert_allclose(grad, _brute_force_crf_gradient(data, model, w), rtol=0, atol=1e-12)


def test_gradients_do_not_depend_on_the_number_of_threads():
    data, model, w = _random_problem(11, n_seqs=60, max_len=6, n_features=10, K=4, dense=False)
    results = []
    for n_threads in (1, 2, 3):
        with ChainRunner(n_threads) as runner:
            results.append(runner.loss_and_grad(LOSS_KINDS["crf"], model, data, w))
    for value, grad, _ in results[1:]:
        assert value == results[0][0]
        assert np.array_equal(grad, results[0][1])


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("dense", [True, False])
def test_online_sparse_gradient_equals_the_dense_one(loss, dense):
    # ChainProblem pushes the gradient of a batch into the online learner's
    # sparse layout, part by part; added up, it is the full-batch gradient
    # of those sequences, with zeros where weights are pinned.
    data, model, w = _random_problem(13, n_seqs=12, max_len=5, n_features=6, K=3,
                                     dense=dense)
    model.trans_mask[0, 1] = 0.0  # pinned at zero: no gradient
    model = ChainModel(model.attr_ptr, model.pair_label, model.trans_mask,
                       model.start_mask, model.end_mask)
    kind = LOSS_KINDS[loss]
    with ChainRunner(1) as runner:
        total, dense_grad, _ = runner.loss_and_grad(kind, model, data, w)
    problem = ChainProblem(kind, model, data)
    n_parts = 3
    gradient = SparseGradient(np.zeros((model.n_params, 2 * n_parts)),
                              np.zeros((n_parts, model.n_params), dtype=np.int64),
                              np.zeros(n_parts, dtype=np.int64))
    ids = np.arange(data.n_sequences)
    loss_sum = 0.0
    for part, part_ids in enumerate(np.array_split(ids, n_parts)):
        loss_sum += problem.batch_gradient(w, part_ids, gradient, part, 7)[0]
    sparse_grad = gradient.values[:, 0::2].sum(axis=1)
    assert loss_sum == pytest.approx(total, rel=1e-12)
    np.testing.assert_allclose(sparse_grad, dense_grad, rtol=1e-12, atol=1e-12)
    assert sparse_grad[model.n_pairs + 1] == 0.0
    for part in range(n_parts):
        listed = gradient.touched[part, :gradient.n_touched[part]]
        assert len(set(listed.tolist())) == len(listed)  # each coordinate once
        assert np.all(gradient.values[listed, 2 * part + 1] == 7)  # stamped
        others = np.setdiff1d(np.arange(model.n_params), listed)
        assert np.all(gradient.values[others, 2 * part] == 0.0)


@pytest.mark.parametrize("loss, method", [("perceptron", "perceptron"), ("hinge", "adagrad"),
                                          ("crf", "adagrad")])
def test_sequential_steps_equal_the_learner_loop(loss, method):
    # ChainProblem.sequential_steps runs an epoch of one-sequence batches in
    # one compiled call; the learner's own loop must give the same bits.
    from sksparse_struct.learners import minimize_online

    data, model, _ = _random_problem(17, n_seqs=25, max_len=5, n_features=6, K=3, dense=False)
    problem = ChainProblem(LOSS_KINDS[loss], model, data)

    class Loop:
        """The same problem without the fast path."""
        n_params = problem.n_params
        sample_costs = problem.sample_costs
        batch_gradient = problem.batch_gradient

    penalties = {} if method == "perceptron" else {"l1": 0.01, "l2": 0.1}
    runs = [minimize_online(p, np.zeros(problem.n_params), np.arange(25), method=method,
                            batch_size=1, max_iter=4, tol=None, random_state=0,
                            **penalties) for p in (problem, Loop())]
    assert np.array_equal(runs[0].coef, runs[1].coef)
    assert runs[0].loss_curve == runs[1].loss_curve
    assert [s.tolist() for s in runs[0].stats] == [s.tolist() for s in runs[1].stats]
    assert runs[0].n_steps == runs[1].n_steps == 100


# --- learning ----------------------------------------------------------------


@pytest.mark.parametrize("loss", LOSSES)
def test_each_loss_fits_a_separable_task(loss):
    X, y = _tiny_tagging_data()
    crf = LinearChainCRF(loss=loss, c2=0.01, max_iter=100, random_state=0).fit(X, y)
    assert crf.predict(X) == y
    assert crf.score(X, y) == 1.0
    assert crf.n_iter_ >= 1


@pytest.mark.parametrize(
    "loss, solver",
    [("crf", "adagrad"), ("sparsemap", "lbfgs"), ("margin_sparsemap", "lbfgs")],
)
def test_other_solvers(loss, solver):
    X, y = _chunk_data(12, n_seqs=30)
    crf = LinearChainCRF(loss=loss, solver=solver, max_iter=30, random_state=0).fit(X, y)
    assert crf.score(X, y) > 0.95


@pytest.mark.parametrize("loss", LOSSES)
def test_each_loss_decreases_and_generalizes(loss):
    X, y = _chunk_data(0, n_seqs=50)
    Xt, yt = _chunk_data(1, n_seqs=30)
    short = LinearChainCRF(loss=loss, max_iter=1, tol=0, random_state=0).fit(X, y)
    full = LinearChainCRF(loss=loss, max_iter=30, random_state=0).fit(X, y)
    assert full.objective_ < short.objective_
    assert full.score(Xt, yt) > 0.95


def test_crf_marginals_match_brute_force():
    X, y = _tiny_tagging_data()
    crf = LinearChainCRF(c2=0.5).fit(X, y)
    marg = crf.predict_marginals(X)
    model = crf._model()
    data = ChainData(crf.vectorizer_._transform_stacked(X)[0], [len(s) for s in X],
                     np.zeros(sum(map(len, X)), dtype=np.int64), crf._attr_rank)
    for s in range(len(X)):
        u, trans, _ = _sequence_terms(data, model, crf._params, s)
        n, K = u.shape
        mu = np.zeros((n, K))
        paths = list(itertools.product(range(K), repeat=n))
        scores = np.array([_path_score(u, trans, np.array(p)) for p in paths])
        probs = np.exp(scores - scores.max())
        probs /= probs.sum()
        for p, q in zip(paths, probs):
            mu[np.arange(n), list(p)] += q
        np.testing.assert_allclose(marg[s], mu, atol=1e-12)
        np.testing.assert_allclose(marg[s].sum(axis=1), 1.0)


def test_predict_sparse_returns_a_short_distribution():
    X, y = _chunk_data(2, n_seqs=30)
    crf = LinearChainCRF(loss="sparsemap", max_iter=20).fit(X, y)
    supports = crf.predict_sparse(X[:5] + [[]])
    assert supports[-1] == [([], 1.0)]
    for seq, support in zip(X[:5], supports):
        probs = [p for _, p in support]
        assert sum(probs) == pytest.approx(1.0)
        assert probs == sorted(probs, reverse=True)
        assert all(len(labels) == len(seq) for labels, _ in support)
        assert all(set(labels) <= set(crf.classes_) for labels, _ in support)
    # The most probable sequence of the support is the MAP when it is unique.
    assert supports[0][0][0] == crf.predict(X[:1])[0] or len(supports[0]) > 1


def test_bio_constraints_are_enforced():
    X, y = _chunk_data(3, n_seqs=30)
    crf = LinearChainCRF(forbidden_transitions="bio", max_iter=3).fit(X, y)
    for labels in crf.predict(X) + crf.predict(_chunk_data(4, n_seqs=30)[0]):
        previous = "O"
        for t, label in enumerate(labels):
            if label.startswith("I-"):
                assert previous in ("B-" + label[2:], label), (labels, t)
            previous = label
    k = {c: i for i, c in enumerate(crf.classes_)}
    assert crf.transition_[k["O"], k["I-NP"]] == -np.inf
    assert crf.start_transition_[k["I-VP"]] == -np.inf
    assert np.isfinite(crf.transition_[k["B-NP"], k["I-NP"]])
    assert ("O", "I-NP") not in crf.transition_features_


def test_forbidden_pairs_of_the_schemes():
    bio = set(_forbidden_pairs("bio", ["B-NP", "I-NP", "O"]))
    assert bio == {(None, "I-NP"), ("O", "I-NP")}
    iobes = set(_forbidden_pairs("iobes", ["B-X", "I-X", "E-X", "S-X", "O"]))
    assert (None, "I-X") in iobes and (None, "E-X") in iobes
    assert ("B-X", None) in iobes and ("I-X", None) in iobes
    assert ("O", "I-X") in iobes and ("B-X", "O") in iobes and ("E-X", "I-X") in iobes
    assert ("B-X", "I-X") not in iobes and ("I-X", "E-X") not in iobes
    assert ("E-X", "B-X") not in iobes and ("S-X", "S-X") not in iobes


def test_explicit_forbidden_transitions_and_gold_violations():
    X, y = _tiny_tagging_data()
    crf = LinearChainCRF(forbidden_transitions=[("DET", "VERB"), (None, "ADV")]).fit(X, y)
    k = {c: i for i, c in enumerate(crf.classes_)}
    assert crf.transition_[k["DET"], k["VERB"]] == -np.inf
    assert crf.start_transition_[k["ADV"]] == -np.inf
    with pytest.raises(ValueError, match=r"y\[0\] has 'NOUN' after 'DET' at position 1"):
        LinearChainCRF(forbidden_transitions=[("DET", "NOUN")]).fit(X, y)
    with pytest.raises(ValueError, match="not in the training labels"):
        LinearChainCRF(forbidden_transitions=[("DET", "PRON")]).fit(X, y)
    with pytest.raises(ValueError, match=r"y\[3\] starts with 'NOUN'"):
        LinearChainCRF(forbidden_transitions=[(None, "NOUN")]).fit(X, y)


def test_sequences_that_no_allowed_path_can_tag_are_an_error():
    # IOBES without S- or O labels: a one-token sequence must start with B-
    # and end with E-, which is impossible.
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "c"}, {"w": "d"}, {"w": "e"}]]
    y = [["B-X", "E-X"], ["B-X", "I-X", "E-X"]]
    crf = LinearChainCRF(forbidden_transitions="iobes").fit(X, y)
    assert crf.predict(X) == y
    for method in (crf.predict, crf.predict_marginals):
        with pytest.raises(ValueError, match="sequence 1 .1 tokens. cannot be tagged"):
            method([[{"w": "a"}, {"w": "b"}], [{"w": "a"}]])


def test_all_possible_states_and_transitions():
    X, y = _tiny_tagging_data()
    sparse = LinearChainCRF().fit(X, y)
    dense = LinearChainCRF(all_possible_states=True).fit(X, y)
    assert dense.coef_.nnz == len(dense.classes_) * dense.n_features_in_
    assert sparse.coef_.nnz <= dense.coef_.nnz
    observed = LinearChainCRF(all_possible_transitions=False).fit(X, y)
    k = {c: i for i, c in enumerate(observed.classes_)}
    assert observed.transition_[k["VERB"], k["DET"]] == 0.0  # never seen: pinned
    assert observed.transition_[k["DET"], k["NOUN"]] != 0.0


def test_c1_gives_sparse_models():
    X, y = _chunk_data(5, n_seqs=40)
    l2 = LinearChainCRF(c1=0.0, c2=0.1).fit(X, y)
    l1 = LinearChainCRF(c1=1.0, c2=0.0).fit(X, y)
    assert np.count_nonzero(l1.coef_.data) < np.count_nonzero(l2.coef_.data)
    assert l1.score(X, y) > 0.9
    ada = LinearChainCRF(loss="hinge", c1=3.0, c2=0.0, max_iter=20, random_state=0).fit(X, y)
    assert np.count_nonzero(ada.coef_.data) < ada.coef_.nnz
    assert ada.score(X, y) > 0.8


def test_sparse_matrix_input_matches_dicts():
    X, y = _chunk_data(6, n_seqs=20)
    vec = SequenceVectorizer().fit(X)
    mats = vec.transform(X)
    a = LinearChainCRF().fit(X, y)
    b = LinearChainCRF().fit(mats, y)
    assert a.predict(X) == b.predict(mats)
    np.testing.assert_allclose(a.coef_.toarray(), b.coef_.toarray(), atol=1e-12)
    assert all(name.startswith("x") for name, _ in b.state_features_)
    with pytest.raises(ValueError, match="feature matrices"):
        b.predict(X)
    with pytest.raises(ValueError, match="features per token"):
        b.predict([sp.csr_matrix((2, mats[0].shape[1] + 1))])


def test_pipelines_with_and_without_vectorizer():
    from sksparse_struct.feature_extraction import TokenFeatures

    sents = [["the", "dog", "runs"], ["a", "cat", "sleeps"], ["dogs", "run"]]
    y = [["DET", "NOUN", "VERB"], ["DET", "NOUN", "VERB"], ["NOUN", "VERB"]]
    feats = TokenFeatures(preset="pos")
    two = Pipeline([("feats", feats), ("crf", LinearChainCRF(c2=0.01))]).fit(sents, y)
    three = Pipeline([
        ("feats", feats), ("vec", SequenceVectorizer()), ("crf", LinearChainCRF(c2=0.01))
    ]).fit(sents, y)
    assert two.predict(sents) == y
    assert three.predict(sents) == two.predict(sents)
    # Pipeline forwards predict/score only; marginals come from the last step.
    np.testing.assert_allclose(
        np.vstack(three[-1].predict_marginals(three[:-1].transform(sents))),
        np.vstack(two[-1].predict_marginals(two[:-1].transform(sents))),
    )


def test_state_features_are_readable():
    X, y = _tiny_tagging_data()
    crf = LinearChainCRF(c2=0.01).fit(X, y)
    feats = crf.state_features_
    best = max(feats.items(), key=lambda kv: kv[1] if kv[0][1] == "DET" else -np.inf)
    assert best[0][0] in ("w=the", "w=a")
    assert crf.coef_.shape == (len(crf.classes_), crf.n_features_in_)


def test_unseen_features_labels_and_empty_sequences():
    X, y = _tiny_tagging_data()
    crf = LinearChainCRF(c2=0.01).fit(X, y)
    assert crf.predict([[{"w": "the", "unseen": "zzz"}, {"w": "dog"}]]) == [["DET", "NOUN"]]
    assert crf.predict([[], [{"w": "a"}]])[0] == []
    assert crf.predict_marginals([[]])[0].shape == (0, len(crf.classes_))
    # An unseen gold label can never be predicted: counted as an error.
    assert crf.score([[{"w": "the"}, {"w": "dog"}]], [["DET", "PROPN"]]) == 0.5
    with pytest.raises(ValueError, match="sequence 0"):
        crf.score([[{"w": "the"}, {"w": "dog"}]], [["DET"]])


def test_non_string_labels():
    X, y = _tiny_tagging_data()
    codes = {"DET": 0, "NOUN": 1, "VERB": 2, "ADV": 3}
    y_int = [[codes[t] for t in s] for s in y]
    crf = LinearChainCRF(c2=0.01).fit(X, y_int)
    assert crf.classes_.tolist() == [0, 1, 2, 3]
    assert crf.predict(X) == y_int
    mixed = [[("a", 1) if t == "DET" else t for t in s] for s in y]
    crf = LinearChainCRF(c2=0.01).fit(X, mixed)
    assert crf.predict(X[:1]) == mixed[:1]


def test_warm_start_continues():
    X, y = _chunk_data(7, n_seqs=30)
    cold = LinearChainCRF(max_iter=2, tol=0).fit(X, y)
    warm = LinearChainCRF(max_iter=2, tol=0, warm_start=True).fit(X, y)
    warm.set_params(max_iter=30).fit(X, y)
    assert warm.objective_ < cold.objective_
    with pytest.raises(ValueError, match="not one of the labels"):
        warm.fit(X + [[{"w": "zz"}]], y + [["B-ZZ"]])


@pytest.mark.filterwarnings("error::sklearn.exceptions.ConvergenceWarning")
def test_convergence_warning():
    from sklearn.exceptions import ConvergenceWarning

    X, y = _chunk_data(13, n_seqs=20)
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        LinearChainCRF(max_iter=2).fit(X, y)
    LinearChainCRF(max_iter=200).fit(X, y)  # converges: no warning


def test_verbose_prints_progress(capsys):
    X, y = _tiny_tagging_data()
    LinearChainCRF(verbose=1, max_iter=3).fit(X, y)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("[LinearChainCRF] iteration 1/3  objective ")
    assert all("  iteration_time " in line and "  total_time " in line for line in out)
    LinearChainCRF(loss="perceptron", verbose=1, max_iter=2).fit(X, y)
    assert "  mistakes " in capsys.readouterr().out


# --- scikit-learn contract ----------------------------------------------------


def test_fit_returns_self_and_not_fitted_error():
    X, y = _tiny_tagging_data()
    crf = LinearChainCRF()
    with pytest.raises(NotFittedError):
        crf.predict(X)
    assert crf.fit(X, y) is crf


@pytest.mark.parametrize("loss", LOSSES)
def test_pickle_and_joblib_round_trip(loss, tmp_path):
    X, y = _chunk_data(8, n_seqs=20)
    crf = LinearChainCRF(loss=loss, max_iter=10, random_state=0).fit(X, y)
    again = pickle.loads(pickle.dumps(crf))
    joblib.dump(crf, tmp_path / "crf.joblib")
    loaded = joblib.load(tmp_path / "crf.joblib")
    for other in (again, loaded):
        assert other.predict(X) == crf.predict(X)
        for a, b in zip(other.predict_marginals(X), crf.predict_marginals(X)):
            assert np.array_equal(a, b)


@pytest.mark.parametrize("loss", LOSSES)
def test_n_jobs_gives_identical_models(loss):
    X, y = _chunk_data(9, n_seqs=60)
    a = LinearChainCRF(loss=loss, max_iter=8, random_state=0, n_jobs=1).fit(X, y)
    b = LinearChainCRF(loss=loss, max_iter=8, random_state=0, n_jobs=2).fit(X, y)
    assert np.array_equal(a._params, b._params)
    assert a.predict(X) == b.predict(X)


def test_clone_grid_search_and_cross_val_score():
    X, y = _chunk_data(10, n_seqs=30)
    crf = LinearChainCRF(max_iter=20, random_state=0)
    assert clone(crf).get_params() == crf.get_params()
    grid = GridSearchCV(
        crf, {"c2": [0.1, 1.0], "loss": ["crf", "hinge"]}, scoring=chunk_f1_scorer, cv=2
    ).fit(X, y)
    assert set(grid.best_params_) == {"c2", "loss"}
    assert 0.8 < grid.best_score_ <= 1.0
    scores = cross_val_score(LinearChainCRF(max_iter=20), X, y, cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.8)


# --- bad input ----------------------------------------------------------------


def test_bad_input_gets_clear_errors():
    X, y = _tiny_tagging_data()
    crf = LinearChainCRF()
    with pytest.raises(ValueError, match="6 sequences but y has 5"):
        crf.fit(X, y[:5])
    with pytest.raises(ValueError, match="sequence 1 has 3 tokens in X but 2 labels"):
        crf.fit(X, [y[0], y[1][:2]] + y[2:])
    with pytest.raises(ValueError, match="empty"):
        crf.fit([], [])
    with pytest.raises(ValueError, match="y has no labels"):
        crf.fit([[]], [[]])
    with pytest.raises(ValueError, match="token 1 of sequence 0 is a str"):
        crf.fit([[{"w": "a"}, "b"]], [["A", "B"]])
    with pytest.raises(ValueError, match="nan|NaN"):
        crf.fit([[{"w": "a"}, {"v": float("nan")}]], [["A", "B"]])
    with pytest.raises(ValueError, match=r"X\[1\] has a non-finite feature value"):
        crf.fit([sp.csr_matrix(np.ones((1, 2))), sp.csr_matrix([[np.inf, 1.0]])], [["A"], ["B"]])
    with pytest.raises(ValueError, match=r"y\[0\] is str"):
        crf.fit([[{"w": "a"}]], ["A"])
    with pytest.raises(ValueError, match="list of sequences"):
        crf.fit("abc", [["A"]])
    with pytest.raises(ValueError, match="mixes"):
        crf.fit([[{"w": "a"}], sp.csr_matrix((1, 2))], [["A"], ["B"]])
    with pytest.raises(ValueError, match="cannot train"):
        LinearChainCRF(loss="hinge", solver="lbfgs").fit(X, y)
    with pytest.raises(ValueError, match="loss"):
        LinearChainCRF(loss="svm").fit(X, y)


@pytest.mark.parametrize("scale", [1e20, -1e20, 1e200, -1e200])
def test_huge_feature_values_get_a_clear_error(scale):
    # Features of +-1e20 used to give all-zero weights silently (L-BFGS's
    # line search failed at the first step), +-1e200 an L-BFGS message about
    # a non-finite objective; every solver gets the same clear error.
    X, y = _tiny_tagging_data()
    vec = SequenceVectorizer().fit(X)
    mats = [m.copy() for m in vec.transform(X)]
    mats[4].data[-1] = scale  # sequence 4, last token
    for solver in ("lbfgs", "adagrad"):
        crf = LinearChainCRF(solver=solver, max_iter=5)
        with pytest.raises(ValueError, match=r"X\[4\] has the feature value .* at token 1 "
                           r"\(column \d+\): feature values above 1e\+10.*Rescale"):
            crf.fit(mats, y)
    X[2][1] = {"w": "cat", "len": scale}
    with pytest.raises(ValueError, match=r"X\[2\] has the feature value .* at token 1 \(len\)"):
        LinearChainCRF(max_iter=5).fit(X, y)


def test_large_feature_values_below_the_limit_still_fit():
    X, y = _tiny_tagging_data()
    mats = SequenceVectorizer().fit_transform(X)
    scaled = [m * 1e9 for m in mats]
    crf = LinearChainCRF().fit(scaled, y)
    assert crf.coef_.nnz > 0
    gold = np.concatenate(y)
    assert np.mean(np.concatenate(crf.predict(scaled)) == gold) >= 13 / 14


def test_single_label_and_single_token_sequences():
    X = [[{"w": "a"}], [{"w": "b"}, {"w": "c"}]]
    crf = LinearChainCRF().fit(X, [["A"], ["A", "A"]])
    assert crf.predict(X) == [["A"], ["A", "A"]]
    np.testing.assert_allclose(crf.predict_marginals(X)[1], [[1.0], [1.0]])


@pytest.mark.parametrize("loss", ["hinge", "perceptron"])
def test_online_early_stopping_keeps_the_best_epoch(loss):
    from sksparse_struct.datasets import load_ewt_sample
    from sksparse_struct.feature_extraction import TokenFeatures

    X, y = load_ewt_sample("train", return_X_y=True)
    Xf = TokenFeatures(preset="pos").fit_transform(X[:120])
    crf = LinearChainCRF(loss, c2=0.1, max_iter=15, tol=0.0, early_stopping=True,
                         validation_fraction=0.2, n_iter_no_change=2,
                         random_state=0).fit(Xf, y[:120])
    scores = crf.validation_scores_
    assert len(scores) == crf.n_iter_ <= 15
    if crf.n_iter_ < 15:  # stopped: the last two epochs did not beat the best
        assert max(scores[-2:]) <= max(scores[:-2])
    # The held-out sequences are utils.validation_split's first draw of the
    # random state; the weights kept are the best epoch's.
    from sksparse_struct.utils._estimator import validation_split

    _, valid = validation_split(np.arange(120), 0.2, np.random.RandomState(0))
    assert len(valid) == 24
    assert crf.score([Xf[i] for i in valid], [y[i] for i in valid]) == max(scores)


def test_early_stopping_needs_an_online_solver():
    X = [[{"w": "a"}, {"w": "b"}]] * 4
    y = [["A", "B"]] * 4
    with pytest.raises(ValueError, match="early_stopping needs an online solver"):
        LinearChainCRF(early_stopping=True).fit(X, y)
    assert LinearChainCRF(c2=0.1).fit(X, y).validation_scores_ is None
