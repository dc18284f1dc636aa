"""scikit-learn's estimator checks for every public estimator of the package.

Estimators are found by crawling the package (like sklearn's
``all_estimators``), so a new estimator is checked as soon as it is exported
in the ``__all__`` of its module. Estimators that take 2-D arrays get the full
``parametrize_with_checks`` suite; structured estimators (input tag
``two_d_array=False``: ``ClassifierMixin`` would make ``GridSearchCV``
reject y given as lists of label lists) get the checks that do not need
data, plus our own contract tests written next to each estimator.
"""

import importlib
import inspect
import pkgutil

import pytest
from sklearn.base import BaseEstimator
from sklearn.utils import estimator_checks
from sklearn.utils.estimator_checks import parametrize_with_checks

import sksparse_struct


def all_estimators():
    """``(name, class)`` of every public estimator, sorted by name.

    A class counts when it subclasses ``BaseEstimator``, is listed in the
    ``__all__`` of a module of the package, and neither it nor any module on
    its import path is private (leading underscore), tests excluded.
    """
    found = {}
    modules = [sksparse_struct]
    for info in pkgutil.walk_packages(
        sksparse_struct.__path__, prefix="sksparse_struct."
    ):
        parts = info.name.split(".")[1:]
        if any(part.startswith("_") or part == "tests" for part in parts):
            continue
        modules.append(importlib.import_module(info.name))
    for module in modules:
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseEstimator)
                and not name.startswith("_")
                and not inspect.isabstract(obj)
            ):
                found[name] = obj
    return sorted(found.items())


ESTIMATORS = all_estimators()


# Meta-estimators cannot be built without their steps: built with the
# package's own.
REQUIRED_STEPS = {
    "TagParsePipeline": lambda cls: cls([("tags", sksparse_struct.ColumnTagger()),
                                         ("parser", sksparse_struct.SparseMAPParser())]),
}


def _instances(two_d):
    """Default-constructed instances whose ``two_d_array`` input tag is ``two_d``.

    Estimators that need extra variants to cover their code paths get them
    here (each variant is checked in full).
    """
    instances = []
    for _, cls in ESTIMATORS:
        est = REQUIRED_STEPS[cls.__name__](cls) if cls.__name__ in REQUIRED_STEPS else cls()
        if est.__sklearn_tags__().input_tags.two_d_array != two_d:
            continue
        instances.append(est)
        if cls.__name__ == "FenchelYoungClassifier":
            # The default is sparsemax; the other two losses go through
            # different mappings (dense softmax, 1.5-entmax).
            instances.append(cls(loss="softmax"))
            instances.append(cls(loss="entmax15"))
    return instances


TWO_D_INSTANCES = _instances(two_d=True)
STRUCTURED_INSTANCES = _instances(two_d=False)

# Checks that need no data: the ones that still apply to estimators taking
# lists of sequences, graphs, ... (parametrize_with_checks skips nearly
# everything for estimators that do not take 2-D arrays).
DATA_INDEPENDENT_CHECKS = [
    "check_no_attributes_set_in_init",
    "check_parameters_default_constructible",
    "check_get_params_invariance",
    "check_set_params",
    "check_estimator_repr",
    "check_do_not_raise_errors_in_init_or_set_params",
]


def test_crawler_finds_the_classifier():
    # Guards the crawler itself: if it found nothing, every check below would
    # be silently skipped.
    names = [name for name, _ in ESTIMATORS]
    assert "FenchelYoungClassifier" in names
    assert all(
        inspect.isclass(cls) and issubclass(cls, BaseEstimator) for _, cls in ESTIMATORS
    )


def test_crawler_finds_the_structured_estimators():
    # The structured estimators and transformers get the data-independent
    # checks below only if the crawler finds them with two_d_array=False.
    names = {type(est).__name__ for est in STRUCTURED_INSTANCES}
    assert {"LinearChainCRF", "SequenceVectorizer", "SparseMAPParser", "ArcFeatures",
            "StructuredSVMArgumentMiner", "SparseMAPArgumentMiner", "ArgumentFeatures",
            "EasyFirstTagger", "NeuralEasyFirstTagger", "ColumnTagger",
            "TagParsePipeline"} <= names


def _expected_failed_checks(estimator):
    # None: every check is expected to pass.
    return {}


@parametrize_with_checks(
    TWO_D_INSTANCES, expected_failed_checks=_expected_failed_checks
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


@pytest.mark.parametrize("check_name", DATA_INDEPENDENT_CHECKS)
@pytest.mark.parametrize(
    "estimator",
    STRUCTURED_INSTANCES or [pytest.param(None, marks=pytest.mark.skip(
        reason="no structured (non 2-D input) estimator exported yet"))],
    ids=lambda est: type(est).__name__,
)
def test_structured_estimator_api(estimator, check_name):
    check = getattr(estimator_checks, check_name)
    check(type(estimator).__name__, estimator)
