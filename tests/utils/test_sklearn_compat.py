"""Tests of the scikit-learn glue: private helpers under public names."""

import sklearn.base

from sksparse_struct.utils import _sklearn_compat


def test_fit_context_is_sklearns():
    assert _sklearn_compat.fit_context is sklearn.base._fit_context
    assert "fit_context" in _sklearn_compat.__all__


def test_fit_context_old_name():
    # Temporary alias for tagging/ and parsing/: delete this test with it.
    assert _sklearn_compat._fit_context is _sklearn_compat.fit_context
