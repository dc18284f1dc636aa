"""Utilities shared across sksparse_struct: numba defaults, sklearn glue, and the
validation of arrays and of dependency heads."""

from ._heads import as_heads, first_bad_tree, is_labelled_pair, tree_error
from ._numba import njit
from ._validation import (
    as_float_rows,
    as_real_array,
    check_backward_inputs,
    check_bounds,
    check_integer,
    check_positive_scalar,
    check_same_rows,
    check_scores,
    check_simplex_rows,
    restore_shape,
)

__all__ = [
    "njit",
    "as_heads",
    "first_bad_tree",
    "is_labelled_pair",
    "tree_error",
    "as_float_rows",
    "as_real_array",
    "check_backward_inputs",
    "check_bounds",
    "check_integer",
    "check_positive_scalar",
    "check_same_rows",
    "check_scores",
    "check_simplex_rows",
    "restore_shape",
]
