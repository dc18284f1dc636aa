"""Linear multiclass classifier trained with a Fenchel-Young loss."""

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets, unique_labels
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import threadpool_limits  # a dependency of scikit-learn

from ..losses import SMOOTH_LOSS_NAMES, fenchel_young_predict_proba

# The unchecked per-row loss and Hessian product have no public name in
# sksparse_struct.losses yet; import them from ..losses once they do.
from ..losses._classification import loss_hessp_rows, loss_rows
from ..learners import newton_cg
from ..utils._estimator import TagsMixin
from ..utils._reporting import Progress, warn
from ..utils._sklearn_compat import (
    Interval,
    StrOptions,
    check_sample_weight,
    fit_context,
    validate_data,
)

__all__ = ["FenchelYoungClassifier"]

# Losses the estimator accepts: the smooth ones, whose objective the Newton
# and quasi-Newton solvers minimise reliably. The piecewise-linear losses of
# `sksparse_struct.losses` are left out on purpose: the perceptron loss is
# zero at W = 0 and positively homogeneous, so with an L2 penalty its
# minimiser is W = 0; the hinge loss makes the objective non-differentiable
# exactly where the solvers start (W = 0, all scores tied) and their line
# searches fail there. They need a dedicated solver (e.g. dual coordinate ascent).
_ESTIMATOR_LOSSES = SMOOTH_LOSS_NAMES


# Largest feature magnitude fit accepts. The objective's gradient scales with
# X and its curvature with X**2: on small benchmark problems scipy's L-BFGS-B
# stopped at W = 0 from 1e35 on (its line search cannot shrink the first
# step enough), and the Newton-CG products overflow float64 from about 1e75.
_MAX_FEATURE_SCALE = 1e20


def _check_feature_scale(X):
    """Raise a ValueError naming the entry when ``|X|`` exceeds what the solvers handle."""
    values = X.data if sp.issparse(X) else X
    if values.size == 0:
        return
    flat = int(np.argmax(np.abs(values)))
    largest = values.flat[flat]
    if abs(largest) <= _MAX_FEATURE_SCALE:
        return
    if sp.issparse(X):
        coo = X.tocoo()
        flat = int(np.flatnonzero(np.abs(coo.data) == abs(largest))[0])
        row, col = int(coo.row[flat]), int(coo.col[flat])
    else:
        row, col = (int(v) for v in np.unravel_index(flat, X.shape))
    raise ValueError(
        f"X[{row}, {col}] = {largest:.3g}: feature values above "
        f"{_MAX_FEATURE_SCALE:.0e} in magnitude are out of reach of the solvers "
        "(the objective's gradient grows with X and its curvature with X**2, "
        "and the solvers stall or overflow float64). Rescale the features, "
        "e.g. with sklearn.preprocessing.StandardScaler or MaxAbsScaler."
    )


def _check_label_types(estimator, y):
    """Raise a ValueError naming two entries when ``y`` mixes strings and other labels.

    Checked on ``y`` as given: ``np.asarray([1, "a"])`` turns every label into
    a string, so the classes would silently become ``"1"`` and ``"a"`` (and
    ``predict`` would return strings). Arrays of a non-object dtype hold one
    type and are not scanned.
    """
    if isinstance(y, np.ndarray) and y.dtype != object:
        return
    try:
        labels = np.asarray(y, dtype=object).ravel()
    except Exception:  # ragged input: validate_data reports it
        return
    is_str = np.fromiter((isinstance(v, (str, bytes)) for v in labels), bool, labels.size)
    if is_str.any() and not is_str.all():
        i, j = int(np.argmax(is_str)), int(np.argmin(is_str))
        raise ValueError(
            f"{type(estimator).__name__}: y contains mixed types of labels, "
            f"strings and non-strings: y[{i}] = {labels[i]!r} "
            f"({type(labels[i]).__name__}) and y[{j}] = {labels[j]!r} "
            f"({type(labels[j]).__name__}). Use labels of one type."
        )


class _LinearProblem:
    """Penalised Fenchel-Young risk of a linear model, for the solvers.

    Parameters are the flattened ``(n_features, n_classes)`` weight matrix
    followed by the intercepts (when fitted). ``sample_weight`` is already
    divided by its sum. ``loss_grad`` remembers the prediction ``p_hat`` at
    the last point, which ``hessp`` needs.
    """

    def __init__(self, X, targets, sample_weight, loss, temperature, alpha, fit_intercept):
        self.X = X
        self.targets = targets
        self.sample_weight = sample_weight
        self.loss = loss
        self.temperature = temperature
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.n_classes = targets.shape[1]
        self.n_coef = X.shape[1] * self.n_classes
        self._p_hat = None

    def _scores(self, w):
        W = w[: self.n_coef].reshape(-1, self.n_classes)
        scores = np.asarray(self.X @ W)
        if self.fit_intercept:
            scores = scores + w[self.n_coef :]
        return np.ascontiguousarray(scores)

    def _backprop(self, grad_scores, w_coef):
        """Gradient w.r.t. the parameters from a gradient w.r.t. the scores."""
        grad = np.empty(self.n_coef + (self.n_classes if self.fit_intercept else 0))
        grad[: self.n_coef] = np.asarray(self.X.T @ grad_scores).ravel()
        grad[: self.n_coef] += self.alpha * w_coef
        if self.fit_intercept:
            grad[self.n_coef :] = grad_scores.sum(axis=0)
        return grad

    def loss_grad(self, w):
        values, grad_scores, self._p_hat = loss_rows(
            self._scores(w), self.targets, self.loss, self.temperature,
            return_prediction=True,
        )
        w_coef = w[: self.n_coef]
        value = values @ self.sample_weight + 0.5 * self.alpha * (w_coef @ w_coef)
        grad_scores *= self.sample_weight[:, np.newaxis]
        return value, self._backprop(grad_scores, w_coef)

    def hessp(self, v):
        d_scores = loss_hessp_rows(
            self._p_hat, self._scores(v), self.loss, self.temperature
        )
        d_scores *= self.sample_weight[:, np.newaxis]
        return self._backprop(d_scores, v[: self.n_coef])


class FenchelYoungClassifier(TagsMixin, ClassifierMixin, BaseEstimator):
    """Linear multiclass classifier trained with a Fenchel-Young loss.

    With scores ``theta_i = W^T x_i + b`` (one per class), the model minimises
    the penalised empirical risk (a strongly convex problem for ``alpha > 0``)

    .. math::

        \\frac{1}{\\sum_i s_i} \\sum_i s_i \\, L(\\theta_i; e_{y_i})
        + \\frac{\\alpha}{2} \\|W\\|_F^2

    where ``L`` is the Fenchel-Young loss selected by ``loss`` (see
    :func:`sksparse_struct.losses.fenchel_young_loss`), ``s_i`` is the sample
    weight times the class weight of sample ``i``, and the intercepts ``b``
    are not penalised. It is solved by a Newton method (or L-BFGS-B) on
    dense or sparse ``X``. Normalising by the total weight makes integer
    sample weights equivalent to repeating samples. With ``loss="softmax"``
    this is
    multinomial logistic regression: scikit-learn's ``LogisticRegression(C)``
    with the multinomial loss solves the same problem for
    ``alpha = 1 / (C * sum(sample_weight))``.

    Binary problems are fitted with two score columns like any other; since
    every Fenchel-Young loss only depends on score differences, the model is
    then reported the scikit-learn way: ``coef_`` of shape ``(1, n_features)``
    and ``intercept_`` of shape ``(1,)`` hold ``w_1 - w_0`` and ``b_1 - b_0``,
    and ``decision_function`` returns one score per sample, positive for
    ``classes_[1]``. At the optimum ``w_0 = -w_1``, so the penalty amounts
    to ``alpha / 4 * ||w_1 - w_0||^2``: binary ``loss="softmax"`` is
    scikit-learn's binary ``LogisticRegression(C)`` for
    ``alpha = 2 / (C * sum(sample_weight))``.

    Parameters
    ----------
    loss : {"sparsemax", "softmax", "entmax15"}, default="sparsemax"
        The Fenchel-Young loss. ``"softmax"`` is the multinomial logistic
        loss; ``"sparsemax"`` and ``"entmax15"`` give sparse probability
        estimates (exact zeros for unlikely classes). All three are
        differentiable, so ``predict_proba`` is always available. The
        piecewise-linear ``"perceptron"`` and ``"hinge"`` losses of
        :func:`~sksparse_struct.losses.fenchel_young_loss` are not offered:
        with an L2 penalty the perceptron loss is minimised by ``W = 0``, and
        the hinge loss is not differentiable, which both solvers need.
    alpha : float, default=1e-4
        Strength of the L2 penalty on the weights (not on the intercepts).
        ``alpha=0`` is allowed but may not converge on separable data.
    fit_intercept : bool, default=True
        Whether to fit one unpenalised intercept per class.
    temperature : float, default=1.0
        Scale of the loss's regularizer ``Omega`` (Prop. 6.1.4: ``L_{t Omega}
        (theta) = t L_Omega(theta / t)``), so it trades off against the
        scale of the weights and hence ``alpha``: at a fixed ``alpha``, larger
        values give smoother (denser) probability estimates.
    solver : {"newton-cg", "lbfgs"}, default="newton-cg"
        ``"newton-cg"``: truncated Newton steps with the exact (generalized)
        Hessian, applied through the mappings' backward passes, and an Armijo
        line search; it converges superlinearly to the optimum even where the
        loss is flat. ``"lbfgs"``: scipy's L-BFGS-B, cheaper per iteration
        but its solutions are less accurate when the loss is flat (sparse
        losses, small ``alpha``).
    max_iter : int, default=100
        Maximum number of iterations (Newton steps, or L-BFGS-B iterations).
    tol : float, default=1e-10
        ``"newton-cg"`` stops when the largest absolute entry of the
        objective's gradient is at most ``tol`` (Newton's method gets there
        in a few steps once close, and the solution is then accurate to about
        ``tol / alpha``). ``"lbfgs"`` uses it as ``gtol`` and also stops,
        normally, when the objective stops decreasing to machine precision.
        A ``ConvergenceWarning`` is issued when neither happens within
        ``max_iter`` iterations or the line search fails.
    class_weight : dict, "balanced" or None, default=None
        Weights multiplying the sample weights of each class: ``{label:
        weight}``, or ``"balanced"`` for ``n_samples / (n_classes *
        np.bincount(y))``.
    warm_start : bool, default=False
        Start from the previous solution when refitting on data with the same
        classes and number of features (otherwise from zero).
    verbose : int, default=0
        If positive, print a progress line every ``verbose`` iterations: the
        objective, the largest absolute entry of its gradient, the
        iteration's time and the total time (the format is described in the
        :ref:`User Guide <progress>`).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    coef_ : ndarray of shape (n_classes, n_features) or (1, n_features)
        Weights (rows: classes); one row ``w_1 - w_0`` for binary problems.
    intercept_ : ndarray of shape (n_classes,) or (1,)
        Intercepts (zeros when ``fit_intercept=False``).
    n_iter_ : int
        Number of L-BFGS-B iterations of the last fit.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features, when ``X`` had string column names.

    See Also
    --------
    sksparse_struct.losses.fenchel_young_loss : the losses.
    sklearn.linear_model.LogisticRegression : the ``"softmax"`` case.

    Examples
    --------
    >>> import numpy as np
    >>> from sksparse_struct import FenchelYoungClassifier
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [3.0, 0.0], [3.0, 1.0],
    ...               [0.0, 4.0], [1.0, 4.0]])
    >>> y = ["a", "a", "b", "b", "c", "c"]
    >>> clf = FenchelYoungClassifier(loss="sparsemax", alpha=0.01).fit(X, y)
    >>> clf.predict([[0.0, 0.5], [4.0, 0.0]]).tolist()
    ['a', 'b']
    >>> clf.predict_proba([[4.0, 0.0]]).round(3).tolist()
    [[0.0, 1.0, 0.0]]
    """

    _sklearn_tags = {"input_tags.sparse": True}

    _parameter_constraints: dict = {
        "loss": [StrOptions(set(_ESTIMATOR_LOSSES))],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "fit_intercept": ["boolean"],
        "temperature": [Interval(Real, 0, None, closed="neither")],
        "solver": [StrOptions({"newton-cg", "lbfgs"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        loss="sparsemax",
        alpha=1e-4,
        *,
        fit_intercept=True,
        temperature=1.0,
        solver="newton-cg",
        max_iter=100,
        tol=1e-10,
        class_weight=None,
        warm_start=False,
        verbose=0,
    ):
        self.loss = loss
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.temperature = temperature
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.class_weight = class_weight
        self.warm_start = warm_start
        self.verbose = verbose

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the model: minimise the objective described above.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; CSR and CSC matrices are used without densifying.
            Values must be finite and at most 1e20 in magnitude (a
            ValueError says which entry is not): rescale larger features.
        y : array-like of shape (n_samples,)
            Class labels (at least two distinct classes).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; ``None`` means all ones.

        Returns
        -------
        self : FenchelYoungClassifier
            The fitted estimator.
        """
        previous = self._previous_solution() if self.warm_start else None
        _check_label_types(self, y)
        X, y = validate_data(
            self, X, y, accept_sparse=["csr", "csc"], dtype=np.float64
        )
        try:
            check_classification_targets(y)
            unique_labels(y)  # raises for a mix of strings and numbers
            encoder = LabelEncoder().fit(y)
        except TypeError as exc:
            # numpy cannot sort labels of mixed types (e.g. 1 and "a").
            raise ValueError(
                f"Mix of label types in y that cannot be ordered: {exc}"
            ) from exc
        classes = encoder.classes_
        y_ind = encoder.transform(y)
        _check_feature_scale(X)
        n_samples, n_features = X.shape
        n_classes = len(classes)
        if n_classes < 2:
            raise ValueError(
                f"{type(self).__name__} needs samples of at least 2 classes; "
                f"got 1 class ({classes[0]!r})."
            )

        sample_weight = check_sample_weight(
            sample_weight, X, dtype=np.float64, ensure_non_negative=True
        )
        sample_weight = sample_weight * compute_class_weight(
            self.class_weight, classes=classes, y=y
        )[y_ind]
        class_mass = np.bincount(y_ind, weights=sample_weight, minlength=n_classes)
        if np.count_nonzero(class_mass > 0) < 2:
            raise ValueError(
                f"{type(self).__name__} needs positive total weight on at least 2 "
                f"classes; the sample and class weights leave "
                f"{np.count_nonzero(class_mass > 0)} class with positive weight."
            )
        sample_weight = sample_weight / sample_weight.sum()

        targets = np.zeros((n_samples, n_classes))
        targets[np.arange(n_samples), y_ind] = 1.0

        n_coef = n_features * n_classes
        w0 = np.zeros(n_coef + (n_classes if self.fit_intercept else 0))
        if previous is not None:
            prev_classes, W_prev, b_prev = previous
            if (
                len(prev_classes) == n_classes
                and np.array_equal(prev_classes, classes)
                and W_prev.shape[0] == n_features
            ):
                w0[:n_coef] = W_prev.ravel()
                if self.fit_intercept:
                    w0[n_coef:] = b_prev

        problem = _LinearProblem(
            X,
            targets,
            sample_weight,
            self.loss,
            float(self.temperature),
            float(self.alpha),
            self.fit_intercept,
        )
        # The solvers' BLAS calls are dot products and axpys on parameter
        # vectors, too small to gain from threads; on a busy machine idle
        # BLAS threads spinning for a core made fits much slower. One
        # thread also keeps the result independent of the thread count.
        with threadpool_limits(limits=1, user_api="blas"):
            if self.solver == "newton-cg":
                w, info = newton_cg(
                    problem.loss_grad,
                    problem.hessp,
                    w0,
                    tol=self.tol,
                    max_iter=self.max_iter,
                    callback=self._progress_callback(),
                )
            else:
                w, info = self._lbfgs(problem, w0)
        if info["status"] != 0:
            reason = (
                f"it reached max_iter={self.max_iter} iterations; increase "
                "max_iter or tol, or scale the features"
                if info["status"] == 1
                else "the objective stopped decreasing (round-off) before the "
                "gradient reached tol; try solver='newton-cg' or a larger tol"
            )
            warn(
                f"{type(self).__name__} (solver={self.solver!r}) did not "
                f"converge: {reason} (objective {info['value']:.10g}, gradient "
                f"max-norm {info['grad_max']:.3g} > tol={self.tol}).",
                ConvergenceWarning,
            )

        W = w[:n_coef].reshape(n_features, n_classes)
        b = w[n_coef:] if self.fit_intercept else np.zeros(n_classes)
        if n_classes == 2:
            self.coef_ = (W[:, 1] - W[:, 0])[np.newaxis, :]
            self.intercept_ = np.array([b[1] - b[0]])
        else:
            self.coef_ = np.ascontiguousarray(W.T)
            self.intercept_ = np.array(b, dtype=np.float64)
        self.classes_ = classes
        self.n_iter_ = int(info["n_iter"])
        return self

    def _previous_solution(self):
        """``(classes, W (n_features, n_classes), b)`` of the last fit, or None."""
        if not hasattr(self, "coef_"):
            return None
        if len(self.classes_) == 2:
            # The two-column optimum is symmetric: the penalty is smallest for
            # w_0 = -d / 2, w_1 = d / 2 given the difference d.
            d = self.coef_[0]
            W = np.column_stack([-0.5 * d, 0.5 * d])
            b = np.array([-0.5, 0.5]) * self.intercept_[0]
        else:
            W = self.coef_.T
            b = self.intercept_
        return self.classes_, W, b

    def _progress_callback(self):
        """``callback(iteration, value, grad_max)`` writing progress, or None."""
        if not self.verbose:
            return None
        progress = Progress(self, self.verbose, "iteration", self.max_iter)

        def callback(iteration, value, grad_max):
            progress.update(iteration, [("objective", value), ("grad_max", grad_max)])

        return callback

    def _lbfgs(self, problem, w0):
        """Minimise with scipy's L-BFGS-B; same ``info`` as :func:`newton_cg`."""
        progress = self._progress_callback()
        callback = None
        if progress is not None:
            state = {"iteration": 0}

            def callback(intermediate_result):
                state["iteration"] += 1
                progress(
                    state["iteration"],
                    intermediate_result.fun,
                    np.max(np.abs(problem.loss_grad(intermediate_result.x)[1])),
                )

        result = minimize(
            problem.loss_grad,
            w0,
            jac=True,
            method="L-BFGS-B",
            callback=callback,
            options={
                "maxiter": self.max_iter,
                "gtol": self.tol,
                # Stop on relative decrease at machine precision only, so that
                # `tol` on the gradient is what ends a normal run.
                "ftol": 64 * np.finfo(np.float64).eps,
                "maxls": 50,
            },
        )
        grad_max = np.max(np.abs(result.jac)) if result.jac.size else 0.0
        # scipy's own verdict: besides `gtol`, L-BFGS-B also stops normally
        # when the objective no longer decreases in relative terms (`ftol`).
        status = 0 if result.status == 0 else (1 if result.status == 1 else 2)
        info = {
            "value": float(result.fun),
            "grad_max": grad_max,
            "n_iter": int(result.nit),
            "status": status,
        }
        return result.x, info

    def decision_function(self, X):
        """Class scores ``X W + b``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples, n_classes) or (n_samples,)
            For binary problems, ``theta_1 - theta_0``: positive values
            predict ``classes_[1]``.
        """
        check_is_fitted(self)
        X = validate_data(
            self, X, accept_sparse=["csr", "csc"], dtype=np.float64, reset=False
        )
        with np.errstate(over="ignore", invalid="ignore"):
            scores = np.asarray(X @ self.coef_.T) + self.intercept_
        finite = np.isfinite(scores).all(axis=1)
        if not finite.all():
            i = int(np.flatnonzero(~finite)[0])
            raise ValueError(
                f"the class scores of sample {i} of X overflow float64 "
                f"({scores[i].tolist()}): its features are far larger than "
                "those the model was fitted on. Scale X as for fit."
            )
        return scores[:, 0] if len(self.classes_) == 2 else scores

    def _full_scores(self, X):
        """One score per class, also for binary problems (``[0, theta_1 - theta_0]``)."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            # Every loss's prediction only depends on score differences.
            scores = np.column_stack([np.zeros_like(scores), scores])
        return scores

    def predict(self, X):
        """Predict the class of each sample: the one with the largest score.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Labels from ``classes_``; ties go to the first class.
        """
        scores = self._full_scores(X)  # checks that the model is fitted
        return self.classes_[np.argmax(scores, axis=1)]

    def predict_proba(self, X):
        """Probability estimates: the loss's mapping applied to the scores.

        Sparsemax and 1.5-entmax give exact zeros to unlikely classes;
        softmax is always dense.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Rows sum to 1; columns follow ``classes_``.
        """
        return fenchel_young_predict_proba(
            self._full_scores(X), loss=self.loss, temperature=self.temperature
        )
