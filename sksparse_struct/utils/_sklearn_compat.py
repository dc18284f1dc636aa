"""The only importer of scikit-learn private or version-dependent helpers.

scikit-learn moves its private helpers between releases; keeping every such
import here means a new release breaks one file, not the whole package.
"""

from sklearn.utils._param_validation import Interval, StrOptions  # noqa: F401
from sklearn.utils.validation import validate_data  # noqa: F401  (sklearn >= 1.6)

__all__ = ["Interval", "StrOptions", "validate_data"]
