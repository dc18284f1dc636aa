"""Every fitted attribute of the estimators is listed in its docstring's Attributes section.

The API pages are generated from these docstrings, so an attribute missing
here is missing from the documentation.
"""

import re
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sksparse_struct import FenchelYoungClassifier, LinearChainCRF, SparseMAPParser


def documented_attributes(cls):
    """The names in the numpydoc "Attributes" section of ``cls.__doc__``."""
    doc = cls.__doc__
    match = re.search(r"\n    Attributes\n    -{10}\n(.*?)(?:\n\n    \S[^\n]*\n    -{3,}\n|\Z)",
                      doc, re.S)
    assert match, f"{cls.__name__} has no Attributes section"
    names = set()
    for line in match.group(1).splitlines():
        if re.match(r"    \S", line):
            names.update(name.strip() for name in line.split(" : ")[0].split(","))
    return names


def fitted_attributes(estimator):
    """Public names ending in an underscore that exist once ``estimator`` is fitted."""
    return {name for name in dir(estimator)
            if name.endswith("_") and not name.startswith("_") and not name.endswith("__")}


def _fitted(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if name == "LinearChainCRF":
            X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}]]
            return LinearChainCRF(max_iter=5).fit(X, [["D", "N"], ["D", "N"]])
        if name == "SparseMAPParser":
            X = [[{"form": "dogs", "upos": "NOUN"}, {"form": "bark", "upos": "VERB"}]]
            return SparseMAPParser(max_iter=1, random_state=0).fit(X, [([2, 0], ["a", "root"])])
        rng = np.random.default_rng(0)
        return FenchelYoungClassifier().fit(rng.normal(size=(20, 3)), np.arange(20) % 3)


@pytest.mark.parametrize("name", ["LinearChainCRF", "SparseMAPParser", "FenchelYoungClassifier"])
def test_every_fitted_attribute_is_documented(name):
    estimator = _fitted(name)
    missing = fitted_attributes(estimator) - documented_attributes(type(estimator))
    assert not missing, f"{name}: fitted attributes missing from the docstring: {missing}"


def test_crfsuite_style_views_are_documented():
    documented = documented_attributes(LinearChainCRF)
    assert {"state_features_", "transition_features_"} <= documented
    crf = _fitted("LinearChainCRF")
    assert crf.state_features_ and crf.transition_features_
