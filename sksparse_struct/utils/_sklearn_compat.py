"""The only importer of scikit-learn private or version-dependent helpers.

scikit-learn moves its private helpers between releases; keeping every such
import here means a new release breaks one file, not the whole package.
The rest of the package imports them from here under public names
(``fit_context`` for scikit-learn's ``_fit_context``, ``check_sample_weight``
for ``_check_sample_weight``).
"""

import functools

from sklearn.base import _fit_context  # sklearn >= 1.3
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight as check_sample_weight
from sklearn.utils.validation import validate_data  # sklearn >= 1.6

from ._reporting import compile_notice

__all__ = [
    "Interval",
    "StrOptions",
    "check_sample_weight",
    "fit_context",
    "validate_data",
]


def fit_context(*, prefer_skip_nested_validation):
    """scikit-learn's ``_fit_context`` (parameter validation, configuration).

    Also, when the estimator's ``verbose`` is on, says once when the fit
    compiles numba kernels (:func:`~._reporting.compile_notice`).
    """
    sklearn_context = _fit_context(prefer_skip_nested_validation=prefer_skip_nested_validation)

    def decorate(fit):
        validated_fit = sklearn_context(fit)

        @functools.wraps(fit)
        def wrapper(estimator, *args, **kwargs):
            with compile_notice(estimator, bool(getattr(estimator, "verbose", 0))):
                return validated_fit(estimator, *args, **kwargs)

        return wrapper

    return decorate
