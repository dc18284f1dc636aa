"""Truncated (semismooth) Newton solver for the linear Fenchel-Young models.

The solver only sees two callables, ``loss_grad(w) -> (value, gradient)`` and
``hessp(v)`` (a generalized-Hessian-vector product at the point last passed to
``loss_grad``), so it knows nothing of losses, mappings or data.

Why not only L-BFGS-B: the sparsemax and 1.5-entmax losses are flat wherever
they are zero, so the curvature of the penalised objective can be as small as
``alpha``; a quasi-Newton method then stops with a small gradient but a
solution that is only accurate to ``gradient / alpha``. The mappings'
Jacobians (their backward passes) give the exact generalized Hessian, and
Newton's method on these piecewise-smooth objectives converges superlinearly,
to the optimum rather than to its neighbourhood.
"""

import numpy as np

__all__ = ["newton_cg"]


def _truncated_cg(hessp, grad, rtol, maxiter):
    """Approximately solve ``H d = -grad`` by conjugate gradients.

    Stops at relative residual ``rtol``, after ``maxiter`` steps, or on a
    direction of (numerically) zero curvature, which appears when the
    intercepts have no curvature (e.g. every sample predicted one-hot); the
    iterate so far is still a descent direction.
    """
    d = np.zeros_like(grad)
    r = -grad
    s = r.copy()
    rr = r @ r
    stop = (rtol * np.sqrt(rr)) ** 2
    for _ in range(maxiter):
        if rr <= stop:
            break
        hs = hessp(s)
        curvature = s @ hs
        if curvature <= 1e-16 * (s @ s):
            if not d.any():
                d = -grad  # first step: fall back to steepest descent
            break
        step = rr / curvature
        d += step * s
        r -= step * hs
        rr_new = r @ r
        s = r + (rr_new / rr) * s
        rr = rr_new
    return d


def newton_cg(loss_grad, hessp, w0, *, tol, max_iter, callback=None):
    """Minimise a convex, piecewise twice-differentiable function.

    Inexact Newton steps (CG with forcing term ``min(0.5, sqrt(||g||))``)
    with an Armijo backtracking line search.

    Parameters
    ----------
    loss_grad : callable
        ``w -> (value, gradient)``.
    hessp : callable
        ``v -> H v`` at the point most recently passed to ``loss_grad``.
    w0 : ndarray of shape (n_params,)
    tol : float
        Stop when the largest absolute entry of the gradient is ``<= tol``.
    max_iter : int
        Maximum number of Newton steps.
    callback : callable, optional
        Called as ``callback(iteration, value, grad_max)`` after each step.

    Returns
    -------
    w : ndarray of shape (n_params,)
    info : dict
        ``value``, ``grad_max``, ``n_iter`` and ``status``: 0 converged,
        1 ``max_iter`` reached, 2 the line search found no decrease.

    See Also
    --------
    minimize_lbfgs : A quasi-Newton method, which only needs the gradient.

    Examples
    --------
    A convex quadratic ``0.5 w'Aw - b'w``, whose minimiser solves ``Aw = b``:

    >>> import numpy as np
    >>> from sksparse_struct.learners import newton_cg
    >>> A = np.array([[3.0, 1.0], [1.0, 2.0]])
    >>> b = np.array([1.0, 1.0])
    >>> def loss_grad(w):
    ...     return 0.5 * w @ A @ w - b @ w, A @ w - b
    >>> w, info = newton_cg(loss_grad, lambda v: A @ v, np.zeros(2), tol=1e-10, max_iter=20)
    >>> w
    array([0.2, 0.4])
    >>> info["status"], round(float(info["value"]), 10)
    (0, -0.3)
    """
    w = np.array(w0, dtype=np.float64)
    value, grad = loss_grad(w)
    status = 1
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        grad_max = np.max(np.abs(grad)) if grad.size else 0.0
        if grad_max <= tol:
            status = 0
            n_iter -= 1
            break
        grad_norm = np.sqrt(grad @ grad)
        direction = _truncated_cg(
            hessp, grad, rtol=min(0.5, np.sqrt(grad_norm)), maxiter=max(20, 2 * w.size)
        )
        slope = grad @ direction
        if slope >= 0:  # numerical trouble in CG: take the gradient step
            direction = -grad
            slope = -grad_norm**2
        step = 1.0
        # Near the optimum the decrease of a Newton step (~ g^2 / curvature)
        # drops below the round-off of the objective, and Armijo's test
        # becomes a coin toss; a step that keeps the value within round-off
        # and shrinks the gradient is then accepted.
        slack = 16 * np.finfo(np.float64).eps * max(abs(value), 1.0)
        for _ in range(60):
            w_new = w + step * direction
            value_new, grad_new = loss_grad(w_new)
            if value_new <= value + 1e-4 * step * slope or (
                value_new <= value + slack and grad_new @ grad_new < grad_norm**2
            ):
                break
            step *= 0.5
        else:
            # No decrease along a descent direction: the change is below
            # what the objective's round-off can resolve. Restore the cache
            # of `hessp` and report.
            loss_grad(w)
            status = 2
            break
        w, value, grad = w_new, value_new, grad_new
        if callback is not None:
            callback(n_iter, value, np.max(np.abs(grad)) if grad.size else 0.0)
    grad_max = np.max(np.abs(grad)) if grad.size else 0.0
    if grad_max <= tol:
        status = 0
    return w, {"value": value, "grad_max": grad_max, "n_iter": n_iter, "status": status}
