"""Input validation shared by the public functions of the package.

Public functions validate and convert their input here, then hand contiguous
float64 arrays to numba kernels, which do no checking of their own. Error
messages say what is wrong and where (which row, which position), so a user
never sees a crash deep inside a compiled kernel.
"""

import math
import numbers

import numpy as np

__all__ = [
    "as_real_array",
    "as_part_vector",
    "as_float_rows",
    "check_scores",
    "check_bounds",
    "check_same_rows",
    "check_backward_inputs",
    "check_simplex_rows",
    "check_positive_scalar",
    "check_integer",
    "restore_shape",
]


def as_real_array(x, name):
    """``np.asarray(x)``, raising a clear ValueError unless it holds real numbers.

    Ragged nested lists, strings and objects are rejected with ``name`` in
    the message; bool, integer and floating dtypes are accepted as they are.
    """
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged nested lists and the like
        raise ValueError(f"{name} could not be converted to an array: {exc}") from exc
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating)
        or np.issubdtype(arr.dtype, np.integer)
        or arr.dtype == bool
    ):
        raise ValueError(
            f"{name} must be an array of real numbers, got dtype {arr.dtype}."
        )
    return arr


def as_part_vector(x, name, owner, size):
    """A flat vector of part scores or gradients as float64, or a ValueError naming it.

    For the :class:`~sksparse_struct.structures.Structure` methods on flat
    part vectors (``oracle``, ``decode``, ``encode_backward``), which would
    otherwise fail inside NumPy (``could not convert string to float``) or
    read past the end of a short vector in a compiled kernel. Values are not
    checked.

    Parameters
    ----------
    x : array-like
        The vector.
    name : str
        Name of the argument, used in error messages.
    owner : str
        The method, e.g. ``"Sequence.decode"``; messages start with it.
    size : int
        The number of entries ``x`` must have.

    Returns
    -------
    vector : ndarray of shape (size,), float64, C-contiguous
        ``x`` itself when it already is one.
    """
    if not (isinstance(x, np.ndarray) and x.dtype == np.float64):
        x = as_real_array(x, f"{owner}: {name}")
    if x.shape != (size,):
        raise ValueError(
            f"{owner}: {name} must be a flat vector of {size} entries, got shape {x.shape}."
        )
    return np.ascontiguousarray(x, dtype=np.float64)


def as_float_rows(x, name, allow_empty=False):
    """Convert ``x`` to a C-contiguous 2-D float64 array of rows.

    Parameters
    ----------
    x : array-like of shape (d,) or (n_rows, d)
        A single vector or a batch of row vectors. float32 and integer input
        is converted to float64: every computation in the package is done in
        float64.
    name : str
        Name of the argument, used in error messages.
    allow_empty : bool, default=False
        Whether a zero-length last dimension is accepted.

    Returns
    -------
    rows : ndarray of shape (n_rows, d), float64
        A new array if a copy was needed; ``x`` itself is never modified by
        the callers, which treat ``rows`` as read-only.
    was_1d : bool
        Whether the input was a single vector; :func:`restore_shape` uses it
        to give the output the shape of the input.
    """
    arr = as_real_array(x, name)
    if arr.ndim == 1:
        was_1d = True
        arr = arr[np.newaxis, :]
    elif arr.ndim == 2:
        was_1d = False
    else:
        raise ValueError(
            f"{name} must be a 1-D vector or a 2-D array of rows, "
            f"got an array with {arr.ndim} dimensions and shape {arr.shape}."
        )
    if arr.shape[1] == 0 and not allow_empty:
        raise ValueError(
            f"{name} has shape {arr.shape if not was_1d else arr.shape[1:]}: "
            "each row needs at least one entry."
        )
    return np.ascontiguousarray(arr, dtype=np.float64), was_1d


def _first_bad(mask):
    """Return (row, col) of the first True entry of a 2-D boolean mask."""
    row, col = np.argwhere(mask)[0]
    return int(row), int(col)


def check_scores(z, name="z", allow_neg_inf=True, allow_all_masked=False):
    """Validate a vector or batch of score rows for a probability mapping.

    NaN and ``+inf`` are rejected. ``-inf`` marks an entry that must receive
    probability exactly zero (masking); a row made only of ``-inf`` has no
    valid distribution and is rejected.

    Parameters
    ----------
    z : array-like of shape (d,) or (n_rows, d)
        Scores.
    name : str, default="z"
        Name of the argument, used in error messages.
    allow_neg_inf : bool, default=True
        Whether ``-inf`` entries are accepted as masks.
    allow_all_masked : bool, default=False
        Whether a row made only of ``-inf`` is accepted. Probability mappings
        have no output for such a row; some structures do (e.g. the empty
        subset of a budget uses no part), so they decide feasibility
        themselves.

    Returns
    -------
    rows : ndarray of shape (n_rows, d), float64, C-contiguous
    was_1d : bool
    """
    rows, was_1d = as_float_rows(z, name)
    finite = np.isfinite(rows)
    if not finite.all():
        nan = np.isnan(rows)
        if nan.any():
            r, c = _first_bad(nan)
            raise ValueError(f"{name} contains NaN (row {r}, position {c}).")
        pos_inf = rows == np.inf
        if pos_inf.any():
            r, c = _first_bad(pos_inf)
            raise ValueError(
                f"{name} contains +inf (row {r}, position {c}); scores must be "
                "finite, or -inf to mask an entry."
            )
        if not allow_neg_inf:
            r, c = _first_bad(~finite)
            raise ValueError(
                f"{name} contains -inf (row {r}, position {c}); this function "
                "needs finite scores."
            )
        all_masked = ~finite.any(axis=1)
        if all_masked.any() and not allow_all_masked:
            r = int(np.flatnonzero(all_masked)[0])
            raise ValueError(
                f"every entry of row {r} of {name} is -inf: no probability "
                "distribution puts its mass on masked entries only."
            )
    return rows, was_1d


def check_bounds(u, z_rows, name="u"):
    """Validate upper bounds for the constrained mappings.

    Parameters
    ----------
    u : array-like of shape (d,) or (n_rows, d)
        Upper bounds on each probability. A single vector is broadcast to
        every row of ``z_rows``. Bounds must be finite and non-negative and
        each row must sum to at least 1, or no distribution fits under them.
    z_rows : ndarray of shape (n_rows, d)
        The validated scores the bounds go with.
    name : str, default="u"

    Returns
    -------
    u_rows : ndarray of shape (n_rows, d), float64, C-contiguous
    """
    u_rows, _ = as_float_rows(u, name)
    if u_rows.shape[0] == 1 and z_rows.shape[0] != 1:
        u_rows = np.ascontiguousarray(np.broadcast_to(u_rows, z_rows.shape))
    if u_rows.shape != z_rows.shape:
        raise ValueError(
            f"{name} has shape {u_rows.shape}, which does not match the scores' "
            f"shape {z_rows.shape}."
        )
    if not np.isfinite(u_rows).all():
        r, c = _first_bad(~np.isfinite(u_rows))
        raise ValueError(f"{name} must be finite; row {r}, position {c} is {u_rows[r, c]}.")
    if (u_rows < 0).any():
        r, c = _first_bad(u_rows < 0)
        raise ValueError(
            f"{name} must be non-negative; row {r}, position {c} is {u_rows[r, c]}."
        )
    # Masked scores (-inf) get probability 0, so their bound does not count.
    usable = np.where(np.isneginf(z_rows), 0.0, u_rows).sum(axis=1)
    short = usable < 1.0 - 1e-12
    if short.any():
        r = int(np.flatnonzero(short)[0])
        raise ValueError(
            f"the bounds {name} of row {r} sum to {usable[r]:.6g} < 1 over the "
            "entries that are not masked: no probability distribution fits "
            "under them (infeasible)."
        )
    return u_rows


def check_same_rows(a, b, name_a, name_b):
    """Raise if two row batches do not have the same shape."""
    if a.shape != b.shape:
        raise ValueError(
            f"{name_b} has shape {b.shape}, which does not match {name_a}'s "
            f"shape {a.shape}."
        )


def check_backward_inputs(p, dp, name="p"):
    """Validate a forward output and an incoming gradient for a backward pass.

    Both must be finite (a forward output never holds NaN or inf) and have
    the same shape.

    Returns
    -------
    p_rows, dp_rows : ndarray of shape (n_rows, d), float64, C-contiguous
    was_1d : bool
    """
    p_rows, was_1d = check_scores(p, name, allow_neg_inf=False)
    dp_rows, _ = check_scores(dp, "dp", allow_neg_inf=False)
    check_same_rows(p_rows, dp_rows, name, "dp")
    return p_rows, dp_rows, was_1d


def check_simplex_rows(rows, name, atol=1e-6):
    """Raise unless every row of a 2-D float array is a probability distribution.

    Entries must be finite and non-negative and each row must sum to 1
    within ``atol``; the message names the row (and position).
    """
    finite = np.isfinite(rows)
    if not finite.all():
        r, c = _first_bad(~finite)
        raise ValueError(f"{name} must be finite; row {r}, position {c} is {rows[r, c]}.")
    if (rows < 0).any():
        r, c = _first_bad(rows < 0)
        raise ValueError(
            f"{name} rows must be probability distributions, with non-negative "
            f"entries; row {r}, position {c} is negative ({rows[r, c]})."
        )
    sums = rows.sum(axis=1)
    off = np.abs(sums - 1.0) > atol
    if off.any():
        r = int(np.flatnonzero(off)[0])
        raise ValueError(
            f"{name} rows must be probability distributions; row {r} of {name} "
            f"sums to {sums[r]:.9g}, not 1."
        )


def check_positive_scalar(value, name, allow_zero=False):
    """Return ``value`` as a float, raising unless it is a finite real number > 0.

    Parameters
    ----------
    value : object
        The parameter to check. bool is rejected; Python and NumPy real
        numbers are accepted.
    name : str
        Name of the parameter, used in error messages. Callers add where it
        belongs, e.g. ``"ad3: eta"`` or ``"options.tol"``.
    allow_zero : bool, default=False
        Whether 0 is accepted (the bound becomes ``>= 0``).

    Returns
    -------
    value : float

    Raises
    ------
    ValueError
        "{name} must be a real number, got {value!r}." or
        "{name} must be finite and > 0, got {value!r}." (``>= 0`` with
        ``allow_zero``).
    """
    if type(value) is not float:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise ValueError(f"{name} must be a real number, got {value!r}.")
    number = float(value)
    if not math.isfinite(number) or number < 0 or (number == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}, got {value!r}.")
    return number


def check_integer(value, name, minimum=0, allow_none=False):
    """Return ``value`` as a Python int, raising unless it is an integer >= ``minimum``.

    The one check of the package's integer parameters (counts, sizes,
    iteration limits, digits), with one message.

    Parameters
    ----------
    value : object
        The parameter to check. Python and NumPy integers are accepted;
        bool and every non-integral type are rejected, floats with an
        integral value (``2.0``) included.
    name : str
        Name of the parameter, used in error messages. Callers add where it
        belongs, e.g. ``"ad3: max_iter"`` or ``"problem.n_samples"``.
    minimum : int, default=0
        The smallest accepted value.
    allow_none : bool, default=False
        Whether ``None`` is accepted (and returned as it is).

    Returns
    -------
    value : int or None
        ``None`` only when ``allow_none`` and ``value`` is ``None``.

    Raises
    ------
    ValueError
        "{name} must be an integer >= {minimum}, got {value!r}." (``"must be
        None or an integer >= ..."`` with ``allow_none``).

    Examples
    --------
    >>> import numpy as np
    >>> from sksparse_struct.utils import check_integer
    >>> check_integer(np.int64(3), "max_iter", minimum=1)
    3
    >>> check_integer(2.0, "max_iter", minimum=1)
    Traceback (most recent call last):
    ...
    ValueError: max_iter must be an integer >= 1, got 2.0.
    """
    if value is None and allow_none:
        return None
    number = value
    if type(value) is not int:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            number = None
        else:
            number = int(value)
    if number is None or number < minimum:
        what = "None or an integer" if allow_none else "an integer"
        raise ValueError(f"{name} must be {what} >= {minimum}, got {value!r}.")
    return number


def restore_shape(rows, was_1d):
    """Undo the 1-D to 2-D promotion of :func:`as_float_rows`."""
    return rows[0] if was_1d else rows
