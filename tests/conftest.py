"""Shared pytest configuration: markers and the location of ../shared/data."""

import os
from pathlib import Path

import pytest

from hypothesis import settings

# Property tests must stay cheap on the 2-core CI machine; derandomize so
# that a CI failure reproduces locally.
settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

SHARED_DATA = Path(
    os.environ.get(
        "SKSPARSE_STRUCT_SHARED_DATA",
        Path(__file__).resolve().parents[1].parent / "shared" / "data",
    )
)


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running test, run with --runslow")
    config.addinivalue_line(
        "markers", "shared_data: needs the datasets in ../shared/data"
    )


def pytest_addoption(parser):
    parser.addoption(
        "--runslow", action="store_true", default=False, help="run tests marked slow"
    )


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    skip_slow = pytest.mark.skip(reason="slow test: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


@pytest.fixture(scope="session")
def shared_data():
    """Path of ../shared/data; skips the test when it is absent (a user's clone)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(
            f"needs the project's shared datasets at {SHARED_DATA} (absent in a "
            "fresh clone; set SKSPARSE_STRUCT_SHARED_DATA to point elsewhere)"
        )
    return SHARED_DATA
