"""Tests of the scikit-learn glue: private helpers under public names."""

import pytest
import sklearn.base
import sklearn.utils.validation

from sksparse_struct.utils import _sklearn_compat


def test_fit_context_wraps_sklearns():
    # scikit-learn's _fit_context (parameter validation) around the fit, with
    # the fit's name and docstring; the compile notice is tested in
    # test_compile_time.py.
    from sklearn.base import BaseEstimator
    from sklearn.utils._param_validation import InvalidParameterError

    class Toy(BaseEstimator):
        _parameter_constraints: dict = {"alpha": [float]}

        def __init__(self, alpha=1.0):
            self.alpha = alpha

        @_sklearn_compat.fit_context(prefer_skip_nested_validation=True)
        def fit(self, X, y=None):
            """Fit the toy."""
            self.fitted_ = X
            return self

    assert Toy().fit(3).fitted_ == 3
    assert Toy.fit.__name__ == "fit" and Toy.fit.__doc__ == "Fit the toy."
    with pytest.raises(InvalidParameterError, match="alpha"):
        Toy(alpha="x").fit(3)
    assert "fit_context" in _sklearn_compat.__all__


def test_check_sample_weight_is_sklearns():
    check = sklearn.utils.validation._check_sample_weight
    assert _sklearn_compat.check_sample_weight is check
    assert "check_sample_weight" in _sklearn_compat.__all__
