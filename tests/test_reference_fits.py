"""Refactorings keep every result: fits compared with those recorded in reference_fits.json.

See ``tests/_reference_fits.py`` for the configurations and how the record
is made.
"""

import json
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from . import _reference_fits as ref

RECORD = json.loads(ref.REFERENCE_FILE.read_text())
SAME_HOST = RECORD["host"] == ref.host()


def _compare(name, got):
    want = RECORD["fits"][name]
    assert set(got) == set(want)
    if SAME_HOST:
        # The processor and libraries the record was made with: bit for bit.
        assert got == want, f"{name}: results changed; differing fields: " + ", ".join(
            f"{k} ({want[k]!r} -> {got[k]!r})" for k in want if got[k] != want[k])
        return
    for key, value in want.items():
        if key == "accuracy":
            assert abs(got[key] - value) <= 0.01, (name, key)
        elif key == "n_iter":
            assert abs(got[key] - value) <= 1, (name, key)
        elif isinstance(value, float):
            assert got[key] == pytest.approx(value, rel=1e-6, abs=1e-9), (name, key)


@pytest.fixture(scope="module")
def tagger_data():
    return ref._tagger_data()


@pytest.fixture(scope="module")
def parser_data():
    return ref._parser_data()


@pytest.mark.parametrize("name", sorted(ref.TAGGER_CONFIGS))
def test_tagger_fits_unchanged(name, tagger_data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        got = ref.tagger_record(ref.TAGGER_CONFIGS[name], tagger_data)
    _compare(name, got)


@pytest.mark.parametrize("name", sorted(ref.PARSER_CONFIGS))
def test_parser_fits_unchanged(name, parser_data):
    _compare(name, ref.parser_record(ref.PARSER_CONFIGS[name], parser_data))


def test_record_covers_every_configuration():
    assert set(RECORD["fits"]) == set(ref.TAGGER_CONFIGS) | set(ref.PARSER_CONFIGS)


def test_n_jobs_pairs_agree():
    # Results never depend on n_jobs: the j1 / j2 records are the same.
    fits = RECORD["fits"]
    pairs = [n[:-3] for n in fits if n.endswith("-j1")]
    assert pairs
    for stem in pairs:
        assert fits[stem + "-j1"] == fits[stem + "-j2"], stem
    assert np.isfinite([f["accuracy"] for f in fits.values()]).all()
