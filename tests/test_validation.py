"""Tests of the shared input validation helpers."""

import re

import numpy as np
import pytest

import sksparse_struct
from sksparse_struct.utils import (
    as_float_rows,
    check_bounds,
    check_integer,
    check_positive_scalar,
    check_scores,
    restore_shape,
)


def test_version_is_a_string():
    assert isinstance(sksparse_struct.__version__, str)
    assert sksparse_struct.__version__.count(".") >= 2


def test_as_float_rows_promotes_and_restores():
    rows, was_1d = as_float_rows(np.arange(3, dtype=np.float32), "z")
    assert was_1d and rows.shape == (1, 3) and rows.dtype == np.float64
    assert rows.flags.c_contiguous
    np.testing.assert_array_equal(restore_shape(rows, was_1d), [0.0, 1.0, 2.0])
    rows, was_1d = as_float_rows(np.ones((2, 3), order="F"), "z")
    assert not was_1d and rows.flags.c_contiguous


@pytest.mark.parametrize(
    "bad, message",
    [
        (np.ones((2, 2, 2)), "3 dimensions"),
        (np.ones((2, 0)), "at least one entry"),
        (np.array(["a", "b"]), "real numbers"),
        (np.array([1.0, None], dtype=object), "real numbers"),
    ],
)
def test_as_float_rows_rejects(bad, message):
    with pytest.raises(ValueError, match=message):
        as_float_rows(bad, "z")


def test_check_scores_names_row_and_position():
    z = np.zeros((3, 4))
    z[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN \(row 2, position 1\)"):
        check_scores(z)
    z[2, 1] = np.inf
    with pytest.raises(ValueError, match=r"\+inf \(row 2, position 1\)"):
        check_scores(z)
    z[2, 1] = -np.inf
    rows, _ = check_scores(z)  # a mask is fine
    assert rows[2, 1] == -np.inf
    with pytest.raises(ValueError, match=r"-inf \(row 2, position 1\)"):
        check_scores(z, allow_neg_inf=False)
    z[1, :] = -np.inf
    with pytest.raises(ValueError, match="every entry of row 1"):
        check_scores(z)


def test_check_bounds():
    z = np.zeros((2, 3))
    u = check_bounds([0.5, 0.5, 0.5], z)
    assert u.shape == (2, 3)
    with pytest.raises(ValueError, match="row 1 sum to 0.9"):
        check_bounds([[0.5, 0.5, 0.5], [0.3, 0.3, 0.3]], z)
    with pytest.raises(ValueError, match="non-negative; row 0, position 2"):
        check_bounds([0.5, 0.6, -0.1], z)
    with pytest.raises(ValueError, match="does not match"):
        check_bounds(np.ones((3, 3)), z)
    # bounds of masked entries do not count towards feasibility
    z[0, 0] = -np.inf
    with pytest.raises(ValueError, match="row 0"):
        check_bounds([0.9, 0.05, 0.05], z)


@pytest.mark.parametrize("value", [0, -1.0, np.nan, np.inf, "1", True])
def test_check_positive_scalar_rejects(value):
    with pytest.raises(ValueError):
        check_positive_scalar(value, "alpha")


def test_check_positive_scalar_zero_allowed():
    assert check_positive_scalar(0, "alpha", allow_zero=True) == 0.0
    assert check_positive_scalar(np.float32(2), "alpha") == 2.0


@pytest.mark.parametrize("value, expected", [
    (0, 0), (3, 3), (np.int64(7), 7), (np.int32(2), 2), (np.uint8(5), 5), (10**20, 10**20),
])
def test_check_integer_accepts_python_and_numpy_integers(value, expected):
    out = check_integer(value, "n", minimum=0)
    assert out == expected and type(out) is int


@pytest.mark.parametrize("value", [True, False, np.bool_(True), 2.0, 2.5, np.float64(3.0),
                                   "3", None, [1], np.array(2), np.nan])
def test_check_integer_rejects_non_integers(value):
    message = f"^max_iter must be an integer >= 0, got {re.escape(repr(value))}.$"
    with pytest.raises(ValueError, match=message):
        check_integer(value, "max_iter")


def test_check_integer_minimum_none_and_where():
    assert check_integer(1, "max_iter", minimum=1) == 1
    with pytest.raises(ValueError, match=r"^max_iter must be an integer >= 1, got 0\.$"):
        check_integer(0, "max_iter", minimum=1)
    with pytest.raises(ValueError, match=r"^n must be an integer >= -1, got np.int64\(-2\)"):
        check_integer(np.int64(-2), "n", minimum=-1)
    # The name carries where the parameter belongs.
    with pytest.raises(ValueError, match=r"^ad3: max_iter must be an integer >= 1, got 0\.$"):
        check_integer(0, "ad3: max_iter", minimum=1)
    assert check_integer(None, "gap_every", allow_none=True) is None
    with pytest.raises(ValueError, match=r"^gap_every must be None or an integer >= 0, got -1"):
        check_integer(-1, "gap_every", allow_none=True)
    with pytest.raises(ValueError, match=r"^gap_every must be an integer >= 0, got None"):
        check_integer(None, "gap_every")


@pytest.mark.parametrize("value, message", [
    (True, "a real number"), (np.bool_(False), "a real number"), ("1", "a real number"),
    (None, "a real number"), (0, "finite and > 0"), (-1.0, "finite and > 0"),
    (np.inf, "finite and > 0"), (np.nan, "finite and > 0"),
])
def test_check_positive_scalar_messages(value, message):
    with pytest.raises(ValueError, match=f"^ad3: eta must be {message}, got "):
        check_positive_scalar(value, "ad3: eta")


def test_check_backward_inputs():
    from sksparse_struct.utils import check_backward_inputs

    p, dp, was_1d = check_backward_inputs([0.5, 0.5], [1, 2])
    assert was_1d and p.shape == dp.shape == (1, 2) and dp.dtype == np.float64
    with pytest.raises(ValueError, match="does not match"):
        check_backward_inputs([0.5, 0.5], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"p contains NaN \(row 0, position 1\)"):
        check_backward_inputs([0.5, np.nan], [1.0, 2.0])
    with pytest.raises(ValueError, match=r"dp contains -inf"):
        check_backward_inputs([0.5, 0.5], [1.0, -np.inf])


def test_check_scores_allow_all_masked():
    z = np.full((2, 3), -np.inf)
    z[0, 0] = 1.0
    rows, _ = check_scores(z, allow_all_masked=True)
    assert np.isneginf(rows[1]).all()
    with pytest.raises(ValueError, match="every entry of row 1"):
        check_scores(z)
    z[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"NaN \(row 1, position 2\)"):
        check_scores(z, allow_all_masked=True)


def test_check_simplex_rows():
    from sksparse_struct.utils import check_simplex_rows

    check_simplex_rows(np.array([[0.25, 0.75], [1.0, 0.0]]), "y")
    with pytest.raises(ValueError, match=r"y must be finite; row 1, position 0"):
        check_simplex_rows(np.array([[0.5, 0.5], [np.nan, 1.0]]), "y")
    with pytest.raises(ValueError, match=r"non-negative entries; row 0, position 1"):
        check_simplex_rows(np.array([[1.5, -0.5]]), "y")
    with pytest.raises(ValueError, match=r"row 1 of y sums to 0.9, not 1"):
        check_simplex_rows(np.array([[0.5, 0.5], [0.4, 0.5]]), "y")
