"""sq-pnorm-max: the regularized max with a squared p-norm."""

import numbers

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..utils._reporting import warn
from ..utils._validation import (
    check_integer,
    check_positive_scalar,
    check_same_rows,
    check_scores,
    restore_shape,
)
from ._pnorm_fast import (
    sq_pnorm_max_backward_rows,
    sq_pnorm_max_pg_rows,
    sq_pnorm_max_rows,
)
from ._simplex_fast import project_simplex_rows
from ._temperature import divide_by_temperature

__all__ = ["sq_pnorm_max", "sq_pnorm_max_backward"]


def _check_p_param(p):
    """The norm's exponent: a real number in (1, 2]."""
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 1.0 < p <= 2.0:
        raise ValueError(f"p must be a real number in (1, 2], got {p!r}.")
    return float(p)


# method -> (default max_iter, default tol); see the docstring of sq_pnorm_max.
_METHOD_DEFAULTS = {"newton": (100, 1e-12), "projected_gradient": (10_000, 1e-6)}


def _check_method(method):
    if not isinstance(method, str) or method not in _METHOD_DEFAULTS:
        raise ValueError(f"method must be one of {sorted(_METHOD_DEFAULTS)}, got {method!r}.")
    return method


def _sq_pnorm_max_rows(z_rows, temperature, p=1.5, max_iter=None, tol=None, method="newton"):
    """sq-pnorm-max of validated rows (used by regularized_max too)."""
    q = _check_p_param(p)
    method = _check_method(method)
    default_iter, default_tol = _METHOD_DEFAULTS[method]
    max_iter = (default_iter if max_iter is None
                else check_integer(max_iter, "max_iter", minimum=1))
    tol = default_tol if tol is None else check_positive_scalar(tol, "tol")
    out = np.empty_like(z_rows)
    scaled, shifted = divide_by_temperature(z_rows, temperature)
    if q == 2.0:
        # Exactly sparsemax: use the exact projection, no iterations.
        project_simplex_rows(scaled, 1.0, out)
        return out
    if shifted or not np.isfinite(1.0 / temperature):
        # The solvers work in units of z, and z / temperature overflows:
        # solve the same problem on the scaled scores at temperature 1.
        z_rows, temperature = scaled, 1.0
    n_iter = np.empty(z_rows.shape[0], dtype=np.int64)
    residual = np.empty(z_rows.shape[0])
    if method == "newton":
        sq_pnorm_max_rows(z_rows, q, temperature, max_iter, tol, out, n_iter, residual)
        failed = n_iter >= max_iter
        units = ""
    else:
        sq_pnorm_max_pg_rows(z_rows, q, temperature, max_iter, tol, out, n_iter, residual)
        failed = residual > tol
        units = ", in units of z / temperature"
    if failed.any():
        r = int(np.flatnonzero(failed)[0])
        warn(
            f"sq_pnorm_max (method={method!r}) did not converge in max_iter={max_iter} "
            f"iterations ({int(failed.sum())} of {failed.size} rows; row {r} has KKT "
            f"residual {residual[r]:.3g}{units}); increase max_iter.",
            ConvergenceWarning,
        )
    return out


def sq_pnorm_max(z, p=1.5, temperature=1.0, max_iter=None, tol=None, method="newton"):
    """sq-pnorm-max: the regularized max with ``Omega(x) = ||x||_p^2 / 2``.

    Solves ``argmin_x temperature / 2 * ||x||_p^2 - <x, z>`` over the
    probability simplex (Niculae 2018, sec. 3.4), for ``p`` in (1, 2]; ``p=2``
    is sparsemax, smaller ``p`` gives smoother transitions and denser
    outputs. With ``p=2`` both methods return the exact sparsemax projection
    without iterating. Two solvers:

    ``method="newton"`` (default, exact)
        The KKT conditions give ``x = w^r / sum(w^r)`` with
        ``w = (z - tau)_+`` and ``r = 1 / (p - 1)``; the scalar ``tau`` is
        found by safeguarded Newton steps (bisection bracket). This converges
        in a few iterations to machine precision: the KKT residual (in the
        units of ``z``) is below ``1e-12 * max(1, |z|)`` for ``p >= 1.1`` in
        our tests. As ``p`` approaches 1, ``r`` grows and accuracy degrades
        (``p=1.01`` can leave residuals of 1e-3).
    ``method="projected_gradient"``
        The generic solver of the thesis: accelerated projected gradient
        (FISTA with gradient restart) on the objective above, with a
        backtracking step and the sparsemax projection, started from
        sparsemax. Each iteration costs one projection (plus one per
        backtracking trial) and one or two gradients. It stops at the first
        iterate ``x`` whose KKT residual is at most ``tol``; the residual is
        the largest of ``|g_j - mean_S(g)|`` over the support ``S`` of ``x``
        and of ``mean_S(g) - g_j`` off it, where
        ``g = grad(||x||_p^2 / 2) - z / temperature`` (units of
        ``z / temperature``). In our measurements on 512-dim rows of
        standard normal scores, the returned ``x`` is then within
        ``tol / (p - 1)`` (max-norm) of the exact solution (at most
        ``1.2 * tol`` for ``p=1.8``, ``1.6 * tol`` for ``p=1.5``,
        ``2.9 * tol`` for ``p=1.2``). The gradient is not Lipschitz near 0
        for ``p < 2``, so rows whose solution has tiny positive entries
        converge slowly; measured mean (max) iterations on 2000 such rows
        for ``tol=1e-6``: ``p=1.8`` 15 (19), ``p=1.5`` 33 (476), against
        about 6 Newton steps; ``p=1.2`` needs thousands (median about 3000
        for ``tol=1e-4``), and 36% (``tol=1e-4``) to 42% (``tol=1e-6``) of
        100 rows reach the default ``max_iter``, which raises the warning.
        Use it as a cross-check or with a moderate ``tol``.

    Parameters
    ----------
    z : array-like of shape (d,) or (n_rows, d)
        Scores; the mapping is applied to every row of a 2-D array. ``-inf``
        entries are masked (probability 0); a row of only ``-inf`` is an error.
    p : float, default=1.5
        Exponent of the norm, in (1, 2].
    temperature : float, default=1.0
        Multiplies ``Omega``; larger values give denser outputs.
    max_iter : int or None, default=None
        Iterations per row; a ``ConvergenceWarning`` is raised when a row does
        not converge (for ``"projected_gradient"``: its final KKT residual
        exceeds ``tol``; the last iterate is returned). ``None`` means 100
        Newton steps for ``"newton"`` and 10000 projected-gradient steps
        (backtracking trials not counted) for ``"projected_gradient"``.
    tol : float or None, default=None
        For ``"newton"``: relative step size of the threshold at which the
        iteration stops (``None`` means 1e-12). For ``"projected_gradient"``:
        bound on the KKT residual defined above, in units of
        ``z / temperature`` (``None`` means 1e-6).
    method : {"newton", "projected_gradient"}, default="newton"
        Forward solver.

    Returns
    -------
    prob : ndarray of the shape of ``z``, float64
        Rows on the probability simplex, with exact zeros.

    See Also
    --------
    sq_pnorm_max_backward : the backward pass.

    Examples
    --------
    >>> from sksparse_struct.mappings import sq_pnorm_max
    >>> sq_pnorm_max([1.0, 0.8, -1.0], p=1.5).round(3).tolist()
    [0.655, 0.345, 0.0]
    >>> sq_pnorm_max([1.0, 0.8, -1.0], p=1.5, method="projected_gradient").round(3).tolist()
    [0.655, 0.345, 0.0]
    >>> sq_pnorm_max([1.0, 0.8, -1.0], p=2).round(3).tolist()  # sparsemax
    [0.6, 0.4, 0.0]
    """
    temperature = check_positive_scalar(temperature, "temperature")
    z_rows, was_1d = check_scores(z, "z")
    out = _sq_pnorm_max_rows(z_rows, temperature, p=p, max_iter=max_iter, tol=tol, method=method)
    return restore_shape(out, was_1d)


def sq_pnorm_max_backward(prob, dp, p=1.5, temperature=1.0):
    """Backward pass of :func:`sq_pnorm_max`: ``J^T dp`` from the forward output.

    Proposition 3.2 of Niculae (2018) restricted to the support ``S`` of
    ``prob`` (the rows of the Jacobian outside ``S`` are zero): with
    ``B = temperature * H_Omega(prob)_SS`` and ``H = diag(d) + u u^T``
    (eq. 3.9), ``J_SS = B^-1 - B^-1 1 1^T B^-1 / (1^T B^-1 1)``. ``B`` is
    inverted in ``O(|S|)`` by the Sherman-Morrison formula; ``d`` is only
    evaluated on the support, where it is finite. The Jacobian is symmetric,
    so this is also the Jacobian-vector product.

    Parameters
    ----------
    prob : array-like of shape (d,) or (n_rows, d)
        Output of :func:`sq_pnorm_max`.
    dp : array-like of the shape of ``prob``
        Gradient of a loss with respect to ``prob`` (or a direction).
    p : float, default=1.5
        The exponent used in the forward pass.
    temperature : float, default=1.0
        The temperature used in the forward pass.

    Returns
    -------
    dz : ndarray of the shape of ``prob``
        Gradient with respect to the scores ``z``.

    Examples
    --------
    >>> from sksparse_struct.mappings import sq_pnorm_max_backward
    >>> sq_pnorm_max_backward([0.5, 0.5, 0.0], [1.0, 0.0, 3.0], p=2).tolist()
    [0.5, -0.5, 0.0]
    """
    q = _check_p_param(p)
    temperature = check_positive_scalar(temperature, "temperature")
    p_rows, was_1d = check_scores(prob, "prob", allow_neg_inf=False)
    dp_rows, _ = check_scores(dp, "dp", allow_neg_inf=False)
    check_same_rows(p_rows, dp_rows, "prob", "dp")
    if (p_rows < 0).any():
        r, c = np.argwhere(p_rows < 0)[0]
        raise ValueError(
            f"prob must be non-negative (an output of sq_pnorm_max); row {r}, "
            f"position {c} is {p_rows[r, c]}."
        )
    empty = ~(p_rows > 0).any(axis=1)
    if empty.any():
        r = int(np.flatnonzero(empty)[0])
        raise ValueError(f"row {r} of prob has no positive entry: not a distribution.")
    out = np.empty_like(p_rows)
    if np.isfinite(1.0 / temperature):
        sq_pnorm_max_backward_rows(p_rows, dp_rows, q, temperature, out)
    else:  # subnormal temperature: divide last, so that 0 stays 0 (not inf * 0)
        sq_pnorm_max_backward_rows(p_rows, dp_rows, q, 1.0, out)
        with np.errstate(over="ignore"):
            out /= temperature
    return restore_shape(out, was_1d)
