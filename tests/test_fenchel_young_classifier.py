"""Tests of FenchelYoungClassifier."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.datasets import make_blobs, make_classification
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV

from sksparse_struct import FenchelYoungClassifier
from sksparse_struct.losses import fenchel_young_loss
from sksparse_struct.mappings import entmax15, softmax, sparsemax

LOSSES = ["sparsemax", "softmax", "entmax15"]
MAPPINGS = {"sparsemax": sparsemax, "softmax": softmax, "entmax15": entmax15}


@pytest.fixture(scope="module")
def multiclass():
    X, y = make_classification(
        n_samples=120, n_features=8, n_informative=5, n_classes=3, random_state=0
    )
    return X, y


def _separable(n_per_class=20, seed=0):
    X, y = make_blobs(
        n_samples=3 * n_per_class,
        centers=[[0, 8], [8, 0], [-8, -8]],
        cluster_std=1.0,
        random_state=seed,
    )
    return X, y


def _objective_gradient(clf, X, y, sample_weight=None):
    """Gradient of the documented objective at the fitted model, computed
    independently with the public loss function (binary: two-column form)."""
    classes = clf.classes_
    y_ind = np.searchsorted(classes, y)
    sw = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, float)
    if len(classes) == 2:
        W = np.column_stack([-0.5 * clf.coef_[0], 0.5 * clf.coef_[0]])
        b = np.array([-0.5, 0.5]) * clf.intercept_[0]
    else:
        W, b = clf.coef_.T, clf.intercept_
    _, G = fenchel_young_loss(X @ W + b, y_ind, loss=clf.loss, temperature=clf.temperature)
    G = G * (sw / sw.sum())[:, None]
    return X.T @ G + clf.alpha * W, G.sum(axis=0)


@pytest.mark.parametrize("loss", LOSSES)
def test_fit_solves_the_documented_objective(multiclass, loss):
    X, y = multiclass
    sw = np.random.RandomState(0).uniform(0.5, 2.0, size=len(y))
    clf = FenchelYoungClassifier(loss=loss, alpha=1e-2, temperature=0.8)
    clf.fit(X, y, sample_weight=sw)
    g_coef, g_intercept = _objective_gradient(clf, X, y, sw)
    assert np.abs(g_coef).max() < 1e-9
    assert np.abs(g_intercept).max() < 1e-9


@pytest.mark.parametrize("loss", LOSSES)
def test_separable_data_fit_perfectly(loss):
    X, y = _separable()
    clf = FenchelYoungClassifier(loss=loss).fit(X, y)
    assert clf.score(X, y) == 1.0
    proba = clf.predict_proba(X)
    assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    assert_array_equal(clf.classes_[proba.argmax(axis=1)], clf.predict(X))


@pytest.mark.parametrize("loss", ["sparsemax", "entmax15"])
def test_sparse_losses_give_exact_zeros(loss):
    X, y = _separable()
    clf = FenchelYoungClassifier(loss=loss, alpha=1e-3).fit(X, y)
    proba = clf.predict_proba(X)
    # Well separated: most samples get a one-hot prediction, exactly.
    assert np.mean(proba == 0.0) > 0.5
    assert np.all(proba[np.arange(len(y)), y] > 0)
    assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    # predict_proba is the mapping of the decision function.
    assert_allclose(proba, MAPPINGS[loss](clf.decision_function(X)), atol=0)
    dense = FenchelYoungClassifier(loss="softmax", alpha=1e-3).fit(X, y)
    assert np.all(dense.predict_proba(X) > 0)


def test_temperature_makes_probabilities_denser():
    X, y = _separable()
    clf = FenchelYoungClassifier(alpha=1e-3).fit(X, y)
    scores = clf.decision_function(X)
    hot = FenchelYoungClassifier(alpha=1e-3, temperature=1e3).fit(X, y)
    # The fitted model differs, but for the same scores a higher temperature
    # gives at least as many non-zeros (sparsemax(z / t)).
    hot.coef_, hot.intercept_ = clf.coef_, clf.intercept_
    assert np.count_nonzero(hot.predict_proba(X)) > np.count_nonzero(clf.predict_proba(X))
    assert_allclose(hot.predict_proba(X), sparsemax(scores / 1e3), atol=1e-15)


@pytest.mark.parametrize("sample_weight", [False, True])
def test_softmax_matches_logistic_regression(multiclass, sample_weight):
    X, y = multiclass
    sw = np.random.RandomState(1).randint(1, 4, size=len(y)) if sample_weight else None
    C = 0.5
    total = len(y) if sw is None else sw.sum()
    # newton-cholesky: sklearn's lbfgs stops with gradients ~1e-8, too coarse here.
    lr = LogisticRegression(C=C, tol=1e-12, solver="newton-cholesky").fit(X, y, sample_weight=sw)
    fy = FenchelYoungClassifier(loss="softmax", alpha=1.0 / (C * total))
    fy.fit(X, y, sample_weight=sw)
    assert_allclose(fy.coef_, lr.coef_, atol=1e-10)
    assert_allclose(fy.intercept_, lr.intercept_, atol=1e-10)
    assert_allclose(fy.predict_proba(X), lr.predict_proba(X), atol=1e-12)


def test_binary_softmax_matches_logistic_regression():
    # Two score columns with penalty alpha/2 ||W||^2 equal one column
    # d = w_1 - w_0 with penalty alpha/4 ||d||^2: sklearn's C = 2 / (alpha n).
    X, y = make_classification(n_samples=100, n_features=5, random_state=2)
    C = 0.3
    lr = LogisticRegression(C=C, tol=1e-12, solver="newton-cholesky").fit(X, y)
    fy = FenchelYoungClassifier(loss="softmax", alpha=2.0 / (C * len(y))).fit(X, y)
    assert fy.coef_.shape == (1, 5) and fy.intercept_.shape == (1,)
    assert_allclose(fy.coef_, lr.coef_, atol=1e-10)
    assert_allclose(fy.intercept_, lr.intercept_, atol=1e-10)
    assert_allclose(fy.decision_function(X), lr.decision_function(X), atol=1e-9)
    assert_allclose(fy.predict_proba(X), lr.predict_proba(X), atol=1e-12)


@pytest.mark.parametrize("loss", LOSSES)
def test_binary_problem(loss):
    X, y = make_classification(n_samples=80, n_features=4, random_state=3)
    labels = np.array(["neg", "pos"])[y]
    clf = FenchelYoungClassifier(loss=loss, alpha=1e-2).fit(X, labels)
    scores = clf.decision_function(X)
    assert scores.shape == (80,)
    assert_array_equal(clf.predict(X), np.where(scores > 0, "pos", "neg"))
    proba = clf.predict_proba(X)
    assert proba.shape == (80, 2)
    full = np.column_stack([np.zeros(80), scores])
    assert_allclose(proba, MAPPINGS[loss](full), atol=1e-15)
    g_coef, g_intercept = _objective_gradient(clf, X, labels)
    assert np.abs(g_coef).max() < 1e-9 and np.abs(g_intercept).max() < 1e-9


def test_label_types():
    X, y = _separable()
    names = np.array(["dog", "cat", "emu"], dtype=object)[y]
    clf = FenchelYoungClassifier().fit(X, names)
    assert clf.classes_.tolist() == ["cat", "dog", "emu"]
    assert clf.predict(X).tolist() == names.tolist()
    ints = np.array([-3, 10, 7])[y]
    assert_array_equal(FenchelYoungClassifier().fit(X, ints).predict(X), ints)
    floats = np.array([1.0, 2.0, 3.0])[y]  # non-integer floats are "continuous"
    assert_array_equal(FenchelYoungClassifier().fit(X, floats).predict(X), floats)
    with pytest.raises(ValueError, match="[Mm]ix"):
        FenchelYoungClassifier().fit(X, np.array([1, "a", 2], dtype=object)[y])


@pytest.mark.parametrize(
    "y, match",
    [
        ([1, "a", 1, "a"], r"y\[1\] = 'a' \(str\) and y\[0\] = 1 \(int\)"),
        ([1.0, "x", 1.0, "x"], r"y\[1\] = 'x' \(str\) and y\[0\] = 1.0 \(float\)"),
        (("b", "b", 2, 3), r"y\[0\] = 'b' \(str\) and y\[2\] = 2 \(int\)"),
        (np.array([1, "a", 1, "a"], dtype=object), r"y\[1\] = 'a'"),
    ],
)
def test_labels_mixing_strings_and_numbers(y, match):
    # A list [1, "a"] became the string classes "1" and "a" (as in
    # scikit-learn's own classifiers), and predict returned strings.
    X = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 2.0], [2.0, 0.0]])
    with pytest.raises(ValueError, match="^FenchelYoungClassifier: y contains mixed types"):
        FenchelYoungClassifier().fit(X, y)
    with pytest.raises(ValueError, match=match):
        FenchelYoungClassifier().fit(X, y)
    # One type is fine, whatever the container.
    assert FenchelYoungClassifier().fit(X, [str(v) for v in y]).classes_.tolist() == sorted(
        {str(v) for v in y}
    )


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_and_dense_give_the_same_model(multiclass, fmt):
    X, y = multiclass
    X = X * (np.abs(X) > 0.7)  # make it actually sparse
    Xs = sp.csr_matrix(X) if fmt == "csr" else sp.csc_matrix(X)
    dense = FenchelYoungClassifier(alpha=1e-2).fit(X, y)
    sparse = FenchelYoungClassifier(alpha=1e-2).fit(Xs, y)
    assert_allclose(sparse.coef_, dense.coef_, atol=1e-9)
    assert_allclose(sparse.intercept_, dense.intercept_, atol=1e-9)
    assert_allclose(sparse.predict_proba(Xs), dense.predict_proba(X), atol=1e-9)


@pytest.mark.parametrize("loss", LOSSES)
def test_sample_weight_equals_repetition(multiclass, loss):
    X, y = multiclass
    sw = np.random.RandomState(4).randint(0, 4, size=len(y))
    weighted = FenchelYoungClassifier(loss=loss).fit(X, y, sample_weight=sw)
    repeated = FenchelYoungClassifier(loss=loss).fit(X.repeat(sw, axis=0), y.repeat(sw))
    assert_allclose(weighted.coef_, repeated.coef_, rtol=1e-7, atol=1e-8)
    assert_allclose(
        weighted.decision_function(X), repeated.decision_function(X), rtol=1e-7, atol=1e-8
    )


def test_class_weight_is_sample_weight(multiclass):
    X, y = multiclass
    cw = {0: 2.0, 1: 0.5, 2: 1.0}
    a = FenchelYoungClassifier(class_weight=cw).fit(X, y)
    b = FenchelYoungClassifier().fit(X, y, sample_weight=np.array([2.0, 0.5, 1.0])[y])
    assert_allclose(a.coef_, b.coef_, atol=1e-10)
    balanced = FenchelYoungClassifier(class_weight="balanced").fit(X[:100], y[:100])
    counts = np.bincount(y[:100])
    manual = FenchelYoungClassifier(
        class_weight={k: 100 / (3 * c) for k, c in enumerate(counts)}
    ).fit(X[:100], y[:100])
    assert_allclose(balanced.coef_, manual.coef_, atol=1e-8)


def test_lbfgs_solver_agrees_with_newton(multiclass):
    X, y = multiclass
    newton = FenchelYoungClassifier(loss="softmax", alpha=1e-2).fit(X, y)
    lbfgs = FenchelYoungClassifier(loss="softmax", alpha=1e-2, solver="lbfgs").fit(X, y)
    assert_allclose(lbfgs.coef_, newton.coef_, atol=1e-5)
    assert lbfgs.n_iter_ > newton.n_iter_


def test_fit_intercept_false(multiclass):
    X, y = multiclass
    clf = FenchelYoungClassifier(fit_intercept=False, alpha=1e-2).fit(X, y)
    assert_array_equal(clf.intercept_, np.zeros(3))
    g_coef, _ = _objective_gradient(clf, X, y)
    assert np.abs(g_coef).max() < 1e-9


def test_fitted_attributes_and_unfitted_errors(multiclass):
    X, y = multiclass
    clf = FenchelYoungClassifier()
    for method in ("predict", "predict_proba", "decision_function"):
        with pytest.raises(NotFittedError):
            getattr(clf, method)(X)
    assert clf.fit(X, y) is clf
    assert clf.coef_.shape == (3, 8) and clf.intercept_.shape == (3,)
    assert clf.n_features_in_ == 8 and clf.n_iter_ >= 1
    assert not hasattr(clf, "feature_names_in_")


def test_feature_names():
    pd = pytest.importorskip("pandas")
    X, y = _separable()
    frame = pd.DataFrame(X, columns=["a", "b"])
    clf = FenchelYoungClassifier().fit(frame, y)
    assert clf.feature_names_in_.tolist() == ["a", "b"]


def test_clone_and_pickle_round_trip(multiclass):
    X, y = multiclass
    clf = FenchelYoungClassifier(loss="entmax15", alpha=1e-3, temperature=2.0).fit(X, y)
    restored = pickle.loads(pickle.dumps(clf))
    assert_array_equal(restored.predict_proba(X), clf.predict_proba(X))
    fresh = clone(clf)
    assert fresh.get_params() == clf.get_params()
    assert not hasattr(fresh, "coef_")
    assert_allclose(fresh.fit(X, y).coef_, clf.coef_, atol=0)


def test_grid_search_over_loss_and_alpha(multiclass):
    X, y = multiclass
    search = GridSearchCV(
        FenchelYoungClassifier(),
        {"loss": LOSSES, "alpha": [1e-3, 1e-1]},
        cv=3,
    ).fit(X, y)
    assert search.best_params_["loss"] in LOSSES
    assert len(search.cv_results_["params"]) == 6
    assert search.best_score_ > 0.6
    assert search.predict_proba(X).shape == (120, 3)


def test_warm_start(multiclass):
    X, y = multiclass
    clf = FenchelYoungClassifier(warm_start=True).fit(X, y)
    coef = clf.coef_.copy()
    clf.fit(X, y)
    assert clf.n_iter_ == 0  # already at the optimum
    assert_allclose(clf.coef_, coef, atol=1e-12)
    # Binary models warm-start from their one-row coefficients too.
    Xb, yb = X[y < 2], y[y < 2]
    binary = FenchelYoungClassifier(warm_start=True).fit(Xb, yb)
    coef = binary.coef_.copy()
    assert binary.fit(Xb, yb).n_iter_ == 0
    assert_allclose(binary.coef_, coef, atol=1e-12)
    # A cold start ignores the previous solution.
    cold = FenchelYoungClassifier().fit(X, y)
    n_iter = cold.n_iter_
    assert cold.fit(X, y).n_iter_ == n_iter


def test_convergence_warning_and_verbose(multiclass, capsys):
    X, y = multiclass
    with pytest.warns(ConvergenceWarning, match="max_iter=1"):
        FenchelYoungClassifier(max_iter=1).fit(X, y)
    with pytest.warns(ConvergenceWarning):
        FenchelYoungClassifier(max_iter=1, solver="lbfgs").fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        FenchelYoungClassifier(verbose=1).fit(X, y)
    out = capsys.readouterr().out
    assert out.startswith("[FenchelYoungClassifier] iteration   1/100  objective ")


def test_inputs_not_modified(multiclass):
    X, y = multiclass
    X_copy, y_copy = X.copy(), y.copy()
    sw = np.ones(len(y))
    FenchelYoungClassifier(class_weight="balanced").fit(X, y, sample_weight=sw)
    assert_array_equal(X, X_copy)
    assert_array_equal(y, y_copy)
    assert_array_equal(sw, np.ones(len(y)))


@pytest.mark.parametrize(
    "X, y, match",
    [
        ([[0.0, np.nan], [1.0, 0.0]], [0, 1], "NaN"),
        ([[0.0, np.inf], [1.0, 0.0]], [0, 1], "infinity"),
        ([0.0, 1.0, 2.0], [0, 1, 0], "2D array"),
        ([[0.0], [1.0], [2.0]], [0, 1], "inconsistent numbers of samples"),
        ([[0.0], [1.0], [2.0]], [1, 1, 1], "at least 2 classes; got 1 class"),
        ([[0.0], [1.0]], [0.5, 1.7], "Unknown label type"),
    ],
)
def test_bad_input(X, y, match):
    with pytest.raises(ValueError, match=match):
        FenchelYoungClassifier().fit(X, y)


def test_bad_weights_and_params(multiclass):
    X, y = multiclass
    with pytest.raises(ValueError, match="[Nn]egative"):
        FenchelYoungClassifier().fit(X, y, sample_weight=-np.ones(len(y)))
    with pytest.raises(ValueError, match="positive total weight on at least 2 classes"):
        FenchelYoungClassifier().fit(X, y, sample_weight=(y == 1).astype(float))
    for params in (
        {"loss": "hinge"},
        {"loss": "perceptron"},
        {"alpha": -1.0},
        {"temperature": 0.0},
        {"solver": "sgd"},
        {"max_iter": 0},
        {"class_weight": "auto"},
    ):
        with pytest.raises(ValueError, match="parameter"):
            FenchelYoungClassifier(**params).fit(X, y)
    clf = FenchelYoungClassifier().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :5])


@pytest.mark.parametrize("solver", ["newton-cg", "lbfgs"])
@pytest.mark.parametrize("scale", [1e40, 1e150, 1e200])
def test_huge_features_get_a_clear_error(multiclass, solver, scale):
    # Used to fail deep inside with "z contains +inf" / "dp contains NaN", or
    # to stop silently at W = 0; the message now names the entry of X.
    X, y = multiclass
    big = X * scale
    i, j = np.unravel_index(np.argmax(np.abs(big)), big.shape)
    for data in (big, sp.csr_matrix(big)):
        with pytest.raises(ValueError, match=rf"X\[{i}, {j}\] = .*Rescale the features"):
            FenchelYoungClassifier(solver=solver).fit(data, y)
    # Features up to the limit fit as well as unscaled ones.
    clf = FenchelYoungClassifier(solver=solver, alpha=0.0, max_iter=300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        small = X / np.abs(X).max()
        ref = clone(clf).fit(small, y).score(small, y)
        assert clf.fit(small * 1e20, y).score(small * 1e20, y) >= ref - 0.02


def test_overflowing_scores_at_prediction_get_a_clear_error(multiclass):
    X, y = multiclass
    X = X / 10  # larger weights
    clf = FenchelYoungClassifier().fit(X, y)
    k = int(np.argmax(np.abs(clf.coef_).sum(axis=1)))
    assert np.abs(clf.coef_[k]).sum() > 1.1  # so that this sample's score overflows
    huge = np.vstack([X[:3], np.sign(clf.coef_[k]) * 1.7e308])
    for method in (clf.predict, clf.predict_proba, clf.decision_function):
        with pytest.raises(ValueError, match="class scores of sample 3 of X overflow"):
            method(huge)


def test_predict_proba_errors_name_scores():
    from sksparse_struct.losses import fenchel_young_predict_proba

    for loss in ("softmax", "sparsemax", "entmax15", "hinge"):
        with pytest.raises(ValueError, match=r"^scores contains \+inf"):
            fenchel_young_predict_proba([np.inf, 0.0], loss=loss)
