"""The only importer of scikit-learn private or version-dependent helpers.

scikit-learn moves its private helpers between releases; keeping every such
import here means a new release breaks one file, not the whole package.
The rest of the package imports them from here under public names
(``fit_context`` for scikit-learn's ``_fit_context``, ``check_sample_weight``
for ``_check_sample_weight``).
"""

from sklearn.base import _fit_context as fit_context  # noqa: F401  (sklearn >= 1.3)
from sklearn.utils._param_validation import Interval, StrOptions  # noqa: F401
from sklearn.utils.validation import _check_sample_weight as check_sample_weight  # noqa: F401
from sklearn.utils.validation import validate_data  # noqa: F401  (sklearn >= 1.6)

__all__ = [
    "Interval",
    "StrOptions",
    "check_sample_weight",
    "fit_context",
    "validate_data",
]
