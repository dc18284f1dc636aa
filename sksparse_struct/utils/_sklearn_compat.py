"""The only importer of scikit-learn private or version-dependent helpers.

scikit-learn moves its private helpers between releases; keeping every such
import here means a new release breaks one file, not the whole package.
"""

from sklearn.base import _fit_context  # noqa: F401  (sklearn >= 1.3)
from sklearn.utils._param_validation import Interval, StrOptions  # noqa: F401
from sklearn.utils.validation import _check_sample_weight  # noqa: F401
from sklearn.utils.validation import validate_data  # noqa: F401  (sklearn >= 1.6)

__all__ = [
    "Interval",
    "StrOptions",
    "_check_sample_weight",
    "_fit_context",
    "validate_data",
]
