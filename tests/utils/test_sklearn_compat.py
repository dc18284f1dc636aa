"""Tests of the scikit-learn glue: private helpers under public names."""

import sklearn.base
import sklearn.utils.validation

from sksparse_struct.utils import _sklearn_compat


def test_fit_context_is_sklearns():
    assert _sklearn_compat.fit_context is sklearn.base._fit_context
    assert "fit_context" in _sklearn_compat.__all__


def test_check_sample_weight_is_sklearns():
    check = sklearn.utils.validation._check_sample_weight
    assert _sklearn_compat.check_sample_weight is check
    assert "check_sample_weight" in _sklearn_compat.__all__
