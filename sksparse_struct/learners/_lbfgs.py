"""Limited-memory quasi-Newton minimisation: L-BFGS and OWL-QN.

The solver sees a single callable, ``fun(x) -> (f, g)``, the value and
gradient of the smooth part of the objective, so it knows nothing of models
or data. An optional L1 term ``c1 * ||x||_1`` is handled by the orthant-wise
variant OWL-QN (Andrew and Gao, 2007), which never asks ``fun`` about it.

Settings and stopping tests follow libLBFGS, the library behind CRFsuite, so
that the same ``c1``, ``c2``, ``epsilon``, ``period``, ``delta`` and iteration
budget give comparable runs:

* L-BFGS two-loop recursion with ``n_memory`` correction pairs and the
  initial scaling ``s'y / y'y`` of the newest pair;
* the More-Thuente line search (strong Wolfe conditions, ``ftol = 1e-4``,
  ``gtol = 0.9``; first trial step ``1 / ||g||`` on the first iteration and
  1 afterwards) for smooth problems;
* for OWL-QN: pseudo-gradient, direction projected on the sign pattern of
  the pseudo-gradient, trial points projected on the current orthant, and a
  backtracking line search with Armijo's condition on the projected point;
* stops when ``||g|| / max(1, ||x||) <= epsilon``, when the relative decrease
  of the objective over the last ``period`` iterations is below ``delta``, or
  after ``max_iter`` iterations;
* and, as libLBFGS and scipy's L-BFGS-B do, stops converged at the round-off
  limit: when a line search fails because no trial point lowers the
  objective by more than its rounding error while the gradient is tiny
  (see :func:`minimize_lbfgs`). Which iterate reaches that limit first
  depends on the last bits of ``fun``, so on the processor; a line-search
  failure anywhere else is reported as one.

Memory: ``2 * n_memory`` correction vectors plus five work vectors (six with
L1) of the size of ``x``; every per-iteration update is done in place.

References
----------
J. Nocedal (1980). Updating quasi-Newton matrices with limited storage.
Mathematics of Computation 35(151).

J. J. More and D. J. Thuente (1994). Line search algorithms with guaranteed
sufficient decrease. ACM Transactions on Mathematical Software 20(3).

G. Andrew and J. Gao (2007). Scalable training of L1-regularized log-linear
models. ICML.
"""

import math
import time
from typing import NamedTuple

import numpy as np

from ..utils._validation import as_real_array, check_integer, check_positive_scalar

__all__ = ["minimize_lbfgs", "LBFGSResult", "LBFGSIteration"]

# Line-search constants, libLBFGS's defaults.
_FTOL = 1e-4  # sufficient decrease (Armijo)
_GTOL = 0.9  # curvature (strong Wolfe, More-Thuente)
_WOLFE = 0.9  # curvature (regular Wolfe, backtracking)
_XTOL = 1e-16  # relative width of the interval of uncertainty
_MIN_STEP = 1e-20
_MAX_STEP = 1e20
_DECREASE = 0.5
_INCREASE = 2.1
# More-Thuente's extrapolation bounds before a minimiser is bracketed.
_XTRAP_LOWER = 1.1
_XTRAP_UPPER = 4.0

# Reductions over huge vectors are done by blocks so that their temporaries
# stay small (a few MB) whatever the number of parameters.
_BLOCK = 1 << 14

_LINESEARCHES = ("auto", "more_thuente", "backtracking")

# The round-off limit (see _RoundOff): a failed line search at a point where
# the gradient vanishes to working precision (||g|| / max(1, ||x||) <=
# sqrt(eps)), or whose trials never lowered the objective by more than its
# rounding error at a point where the gradient is tiny relative to the
# objective's scale (||g|| * max(1, ||x||) <= _ROUNDOFF_GRADIENT * |f|:
# moving x by its own size changes f by a hundred-thousandth at most). Far
# from a stationary point (badly scaled features, a wrong gradient) the
# failure is reported.
_ROUNDOFF_ULPS = 64  # the least rounding error granted to f, in units in the last place
_ROUNDOFF_GRADIENT = 1e-5
_EPS = np.finfo(np.float64).eps


class LBFGSResult(NamedTuple):
    """Outcome of :func:`minimize_lbfgs`.

    Attributes
    ----------
    x : ndarray of shape (n,)
        The final point: the last accepted iterate, the one the
        ``callback`` saw last (``x0`` if no step was accepted), also when a
        line search failed.
    fun : float
        The objective at ``x``, the L1 term included.
    grad : ndarray of shape (n,)
        The gradient of the smooth part at ``x`` (what ``fun`` returned).
    n_iter : int
        Number of iterations (accepted line-search steps).
    n_evals : int
        Number of calls to ``fun``.
    converged : bool
        Whether the gradient test, the ``delta`` test or the round-off
        limit stopped the run.
    message : str
        Which test stopped the run.
    """

    x: np.ndarray
    fun: float
    grad: np.ndarray
    n_iter: int
    n_evals: int
    converged: bool
    message: str


class LBFGSIteration(NamedTuple):
    """Progress report passed to the ``callback`` of :func:`minimize_lbfgs`.

    Attributes
    ----------
    iteration : int
        1 after the first accepted step.
    fun : float
        Objective, the L1 term included.
    grad_norm : float
        Euclidean norm of the gradient (of the pseudo-gradient with L1).
    x_norm : float
        Euclidean norm of the current point.
    n_active : int
        Number of non-zero entries of the current point.
    step : float
        Step length accepted by the line search.
    n_linesearch : int
        Evaluations made by this iteration's line search.
    n_evals : int
        Evaluations of ``fun`` so far.
    elapsed : float
        Seconds since the call started.
    """

    iteration: int
    fun: float
    grad_norm: float
    x_norm: float
    n_active: int
    step: float
    n_linesearch: int
    n_evals: int
    elapsed: float


# ---------------------------------------------------------------------------
# Argument checks
# ---------------------------------------------------------------------------


def _as_start_point(x0):
    arr = as_real_array(x0, "x0")
    if arr.ndim != 1:
        raise ValueError(f"x0 must be a 1-D vector, got shape {arr.shape}.")
    if arr.shape[0] == 0:
        raise ValueError("x0 is empty: there is nothing to optimise.")
    # Always a private copy: x0 is never modified.
    x = np.array(arr, dtype=np.float64, order="C", copy=True)
    bad = ~np.isfinite(x)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"x0 must be finite; x0[{i}] = {x[i]!r}.")
    return x


# ---------------------------------------------------------------------------
# Vector helpers (in place, no full-size temporaries of float64)
# ---------------------------------------------------------------------------


def _dot(a, b):
    """``a . b`` accumulated in a fixed order on one thread.

    ``np.dot`` hands 1-D products to BLAS, whose threaded reductions make
    the last bits depend on the thread count and whose spinning threads
    steal cores from a parallel ``fun``; einsum's own loop avoids both.
    """
    return float(np.einsum("i,i->", a, b))


def _axpy(alpha, x, y, buffer):
    """``y += alpha * x`` in place, by blocks through a small buffer."""
    size = buffer.shape[0]
    for start in range(0, x.shape[0], size):
        stop = min(start + size, x.shape[0])
        tmp = buffer[: stop - start]
        np.multiply(x[start:stop], alpha, out=tmp)
        y_block = y[start:stop]
        np.add(y_block, tmp, out=y_block)


def _norm(x):
    return math.sqrt(_dot(x, x))


def _diff_dot(a, b, c, buffer):
    """``(a - b) . c`` by blocks through a small buffer."""
    size = buffer.shape[0]
    total = 0.0
    for start in range(0, a.shape[0], size):
        stop = min(start + size, a.shape[0])
        tmp = buffer[: stop - start]
        np.subtract(a[start:stop], b[start:stop], out=tmp)
        total += _dot(tmp, c[start:stop])
    return total


class _L1Region:
    """The entries carrying the L1 penalty: a slice plus an optional mask.

    A contiguous block (all entries, or a range as libLBFGS's
    ``orthantwise_start/end``) is handled with views only; a scattered mask
    is handled with ``where=`` arguments, so no gather/scatter copies are
    made either way. The element-wise updates go block by block through
    preallocated buffers: fresh temporaries of more than a few hundred KB
    come from the system page by page and cost more than the arithmetic.
    """

    def __init__(self, l1_mask, n):
        size = max(1, min(n, _BLOCK))
        self.buf_a = np.empty(size)
        self.buf_b = np.empty(size)
        self.flags = np.empty(size, dtype=bool)
        if l1_mask is None:
            self.sl, self.mask = slice(0, n), None
            return
        mask = np.asarray(l1_mask)
        if mask.dtype != bool:
            raise ValueError(
                f"l1_mask must be a boolean array, got dtype {mask.dtype}."
            )
        if mask.shape != (n,):
            raise ValueError(
                f"l1_mask must have the shape of x0, ({n},), got {mask.shape}."
            )
        nonzero = np.flatnonzero(mask)
        if nonzero.size == 0:
            self.sl, self.mask = slice(0, 0), None
            return
        lo, hi = int(nonzero[0]), int(nonzero[-1]) + 1
        self.sl = slice(lo, hi)
        self.mask = None if nonzero.size == hi - lo else np.ascontiguousarray(mask[lo:hi])

    def _blocks(self):
        """Per block: (slice of x, slice relative to the region, mask)."""
        lo, hi = self.sl.start, self.sl.stop
        for start in range(lo, hi, _BLOCK):
            stop = min(start + _BLOCK, hi)
            local = slice(start - lo, stop - lo)
            yield slice(start, stop), local, None if self.mask is None else self.mask[local]

    def _buffers(self, block):
        k = block.stop - block.start
        return self.buf_a[:k], self.buf_b[:k], self.flags[:k]

    # Selections are made by multiplying with 0/1 factors rather than with
    # ``where=``: a data-dependent ``where`` costs a branch per entry.

    def norm1(self, x):
        total = 0.0
        for block, _, mask in self._blocks():
            tmp, _, _ = self._buffers(block)
            np.abs(x[block], out=tmp)
            if mask is not None:
                tmp *= mask
            total += float(tmp.sum())
        return total

    def pseudo_gradient(self, x, g, c, out):
        """Steepest-descent-defining subgradient of ``f + c ||x||_1``.

        Where ``x_i != 0`` it is ``g_i + c sign(x_i)``; where ``x_i == 0`` it
        is the one-sided derivative that points downhill, or 0 when neither
        does (that is, ``g_i`` soft-thresholded by ``c``). Computed as
        ``g + [x != 0] c sign(x) - [x == 0] clip(g, -c, c)``, exact in
        floating point since one of the two corrections is zero.
        """
        lo, hi = self.sl.start, self.sl.stop
        out[:lo] = g[:lo]
        out[hi:] = g[hi:]
        for block, _, mask in self._blocks():
            clipped, factor, _ = self._buffers(block)
            xb, gb, ob = x[block], g[block], out[block]
            np.maximum(gb, -c, out=clipped)
            np.minimum(clipped, c, out=clipped)
            np.equal(xb, 0.0, out=factor)
            if mask is not None:
                factor *= mask
            clipped *= factor
            np.not_equal(xb, 0.0, out=factor)
            if mask is not None:
                factor *= mask
            np.copysign(c, xb, out=ob)
            ob *= factor
            ob += gb
            ob -= clipped

    def constrain_direction(self, d, pg):
        """Zero the entries of ``d`` that do not oppose the pseudo-gradient."""
        for block, _, mask in self._blocks():
            product, factor, _ = self._buffers(block)
            db = d[block]
            np.multiply(db, pg[block], out=product)
            np.greater_equal(product, 0.0, out=factor)  # entries to drop
            if mask is not None:
                factor *= mask
            np.subtract(1.0, factor, out=factor)
            db *= factor

    def orthant(self, x, pg):
        """Sign pattern of the orthant searched: True for the positive side.

        The sign of ``x_i``, or of ``-pg_i`` where ``x_i == 0``; where both
        are zero the direction is zero and so is every trial point.
        """
        xs, ps = x[self.sl], pg[self.sl]
        positive = xs > 0
        positive |= (xs == 0) & (ps < 0)
        return positive

    def project(self, x, positive):
        """Zero the penalised entries of ``x`` that left the orthant."""
        for block, local, mask in self._blocks():
            _, factor, flags = self._buffers(block)
            xb = x[block]
            np.greater(xb, 0.0, out=flags)
            np.not_equal(flags, positive[local], out=factor)  # entries to zero
            if mask is not None:
                factor *= mask
            np.subtract(1.0, factor, out=factor)
            xb *= factor
            xb += 0.0  # turns the -0.0 of zeroed negative entries into 0.0


# ---------------------------------------------------------------------------
# Evaluations
# ---------------------------------------------------------------------------


class _Objective:
    """Calls ``fun``, checks what it returns, copies the gradient into a buffer.

    The gradient is always copied, so ``fun`` may return a fresh array or the
    same buffer every time. ``fun`` receives the solver's own buffer, left
    writeable so that compiled kernels see the usual array type (numba
    compiles read-only arrays as a separate type).
    """

    def __init__(self, fun, n, region, c1):
        self.fun = fun
        self.n = n
        self.region = region
        self.c1 = c1
        self.n_evals = 0

    def __call__(self, x, g_out, where):
        out = self.fun(x)
        self.n_evals += 1
        try:
            f, g = out
        except (TypeError, ValueError):
            raise ValueError(
                f"fun must return a pair (f, g), got {type(out).__name__} {where}."
            ) from None
        f_arr = np.asarray(f)
        if f_arr.shape != () or not (
            np.issubdtype(f_arr.dtype, np.floating) or np.issubdtype(f_arr.dtype, np.integer)
        ):
            raise ValueError(f"fun must return a real scalar f, got {f!r} {where}.")
        f = float(f_arr)
        if not math.isfinite(f):
            raise ValueError(f"fun returned a non-finite objective value ({f}) {where}.")
        g = np.asarray(g)
        if g.shape != (self.n,):
            raise ValueError(
                f"fun returned a gradient of shape {g.shape}, expected ({self.n},), {where}."
            )
        if not (np.issubdtype(g.dtype, np.floating) or np.issubdtype(g.dtype, np.integer)):
            raise ValueError(
                f"fun returned a gradient of dtype {g.dtype}, expected real numbers, {where}."
            )
        np.copyto(g_out, g)
        if not math.isfinite(_dot(g_out, g_out)):
            bad = np.flatnonzero(~np.isfinite(g_out))
            if bad.size:  # otherwise the squared norm merely overflowed
                i = int(bad[0])
                raise ValueError(
                    f"fun returned a non-finite gradient (g[{i}] = {g_out[i]}) {where}."
                )
        if self.c1 > 0:
            f += self.c1 * self.region.norm1(x)
        return f


# ---------------------------------------------------------------------------
# Line searches. Each evaluates trial points into ``xt`` / ``gt`` and returns
# (failure message or None, step, objective at the last trial, trials).
# ---------------------------------------------------------------------------


def _trial_point(x, d, step, xt):
    np.multiply(d, step, out=xt)
    xt += x


def _step_choice(stx, fx, dx, sty, fy, dy, stp, fp, dp, brackt, stpmin, stpmax):
    """One safeguarded step of More and Thuente's interval update.

    ``(stx, fx, dx)`` is the best step so far, ``(sty, fy, dy)`` the other
    end of the interval, ``(stp, fp, dp)`` the latest trial. Returns the
    updated ends, the next trial step and whether a minimiser is bracketed.
    Steps come from cubic and quadratic (secant) interpolation of the
    values and derivatives, chosen by the four cases of the paper.
    """

    def cubic_gamma(theta, da, db):
        s = max(abs(theta), abs(da), abs(db))
        return s * math.sqrt(max(0.0, (theta / s) ** 2 - (da / s) * (db / s)))

    def ratio(p, q):
        return p / q if q != 0 else math.nan

    same_sign = (dp > 0) == (dx > 0) and dp != 0 and dx != 0
    if fp > fx:
        # Case 1: higher value, the minimiser is bracketed. Take the cubic
        # step if closer to stx than the quadratic one, else their average.
        theta = 3.0 * (fx - fp) / (stp - stx) + dx + dp
        gamma = cubic_gamma(theta, dx, dp)
        if stp < stx:
            gamma = -gamma
        r = ratio((gamma - dx) + theta, ((gamma - dx) + gamma) + dp)
        stpc = stx + r * (stp - stx)
        stpq = stx + ratio(dx, (fx - fp) / (stp - stx) + dx) / 2.0 * (stp - stx)
        if abs(stpc - stx) < abs(stpq - stx):
            stpf = stpc
        else:
            stpf = stpc + (stpq - stpc) / 2.0
        brackt = True
    elif not same_sign:
        # Case 2: lower value, derivatives of opposite sign: bracketed. Take
        # the step farther from stp (cubic or secant).
        theta = 3.0 * (fx - fp) / (stp - stx) + dx + dp
        gamma = cubic_gamma(theta, dx, dp)
        if stp > stx:
            gamma = -gamma
        r = ratio((gamma - dp) + theta, ((gamma - dp) + gamma) + dx)
        stpc = stp + r * (stx - stp)
        stpq = stp + ratio(dp, dp - dx) * (stx - stp)
        stpf = stpc if abs(stpc - stp) > abs(stpq - stp) else stpq
        brackt = True
    elif abs(dp) < abs(dx):
        # Case 3: lower value, same sign, the derivative decreases in size.
        # The cubic may have no minimiser in the right direction; then
        # extrapolate to the bound.
        theta = 3.0 * (fx - fp) / (stp - stx) + dx + dp
        gamma = cubic_gamma(theta, dx, dp)
        if stp > stx:
            gamma = -gamma
        r = ratio((gamma - dp) + theta, (gamma + (dx - dp)) + gamma)
        if r < 0 and gamma != 0:
            stpc = stp + r * (stx - stp)
        elif stp > stx:
            stpc = stpmax
        else:
            stpc = stpmin
        stpq = stp + ratio(dp, dp - dx) * (stx - stp)
        if brackt:
            stpf = stpc if abs(stpc - stp) < abs(stpq - stp) else stpq
            bound = stp + 0.66 * (sty - stp)
            stpf = min(bound, stpf) if stp > stx else max(bound, stpf)
        else:
            stpf = stpc if abs(stpc - stp) > abs(stpq - stp) else stpq
            stpf = min(stpmax, max(stpmin, stpf))
    else:
        # Case 4: lower value, same sign, the derivative does not decrease:
        # cubic step between stp and sty when bracketed, else the bound.
        if brackt:
            theta = 3.0 * (fp - fy) / (sty - stp) + dy + dp
            gamma = cubic_gamma(theta, dy, dp)
            if stp > sty:
                gamma = -gamma
            r = ratio((gamma - dp) + theta, ((gamma - dp) + gamma) + dy)
            stpf = stp + r * (sty - stp)
        elif stp > stx:
            stpf = stpmax
        else:
            stpf = stpmin

    # Update the interval of uncertainty.
    if fp > fx:
        sty, fy, dy = stp, fp, dp
    else:
        if not same_sign:
            sty, fy, dy = stx, fx, dx
        stx, fx, dx = stp, fp, dp
    if not math.isfinite(stpf):  # degenerate interpolation (0 / 0)
        stpf = 0.5 * (stx + sty) if brackt else stpmax
    return stx, fx, dx, sty, fy, dy, stpf, brackt


def _more_thuente(phi, finit, dginit, stp, max_evals, ftol=_FTOL, gtol=_GTOL):
    """Find a step satisfying the strong Wolfe conditions.

    ``phi(step) -> (f, f')`` evaluates the objective and its directional
    derivative at ``x + step * d`` (``dginit < 0``).
    """
    gtest = ftol * dginit
    width = _MAX_STEP - _MIN_STEP
    width_prev = 2.0 * width
    brackt = False
    stage = 1
    stx, fx, gx = 0.0, finit, dginit
    sty, fy, gy = 0.0, finit, dginit
    stmin, stmax = 0.0, stp + _XTRAP_UPPER * stp
    stp = min(max(stp, _MIN_STEP), _MAX_STEP)
    f = finit
    for count in range(1, max_evals + 1):
        f, dg = phi(stp)
        ftest = finit + stp * gtest
        if f <= ftest and abs(dg) <= gtol * (-dginit):
            return None, stp, f, count
        if stage == 1 and f <= ftest and dg >= 0:
            stage = 2
        if brackt and (stp <= stmin or stp >= stmax):
            return "rounding errors prevent further progress", stp, f, count
        if brackt and stmax - stmin <= _XTOL * stmax:
            return "the interval of uncertainty became too small", stp, f, count
        if stp == _MAX_STEP and f <= ftest and dg <= gtest:
            return f"the step reached its upper bound {_MAX_STEP:g}", stp, f, count
        if stp == _MIN_STEP and (f > ftest or dg >= gtest):
            return f"the step reached its lower bound {_MIN_STEP:g}", stp, f, count
        if count == max_evals:
            break
        if stage == 1 and f <= fx and f > ftest:
            # Before a step with sufficient decrease and a non-negative
            # derivative is found, work on the shifted function
            # f(a) - f(0) - ftol * a * f'(0), as the paper prescribes.
            stx, fxm, gxm, sty, fym, gym, stp, brackt = _step_choice(
                stx, fx - stx * gtest, gx - gtest,
                sty, fy - sty * gtest, gy - gtest,
                stp, f - stp * gtest, dg - gtest,
                brackt, stmin, stmax,
            )
            fx, gx = fxm + stx * gtest, gxm + gtest
            fy, gy = fym + sty * gtest, gym + gtest
        else:
            stx, fx, gx, sty, fy, gy, stp, brackt = _step_choice(
                stx, fx, gx, sty, fy, gy, stp, f, dg, brackt, stmin, stmax
            )
        if brackt:
            # Bisect when the interval does not shrink fast enough.
            if abs(sty - stx) >= 0.66 * width_prev:
                stp = stx + 0.5 * (sty - stx)
            width_prev = width
            width = abs(sty - stx)
            stmin, stmax = min(stx, sty), max(stx, sty)
        else:
            stmin = stp + _XTRAP_LOWER * (stp - stx)
            stmax = stp + _XTRAP_UPPER * (stp - stx)
        stp = min(max(stp, _MIN_STEP), _MAX_STEP)
        if brackt and (stp <= stmin or stp >= stmax or stmax - stmin <= _XTOL * stmax):
            stp = stx
    return (
        f"no step satisfied the strong Wolfe conditions within max_linesearch="
        f"{max_evals} evaluations",
        stp, f, max_evals,
    )


def _backtracking_wolfe(phi, finit, dginit, stp, max_evals):
    """Shrink or grow the step until the regular Wolfe conditions hold."""
    f = finit
    for count in range(1, max_evals + 1):
        f, dg = phi(stp)
        if f > finit + stp * _FTOL * dginit:
            factor = _DECREASE
        elif dg < _WOLFE * dginit:
            factor = _INCREASE
        else:
            return None, stp, f, count
        if stp <= _MIN_STEP:
            return f"the step reached its lower bound {_MIN_STEP:g}", stp, f, count
        if stp >= _MAX_STEP:
            return f"the step reached its upper bound {_MAX_STEP:g}", stp, f, count
        if count < max_evals:
            stp *= factor
    return (
        f"no step satisfied the Wolfe conditions within max_linesearch={max_evals} "
        "evaluations",
        stp, f, max_evals,
    )


def _backtracking_owlqn(evaluate, region, x, pg, d, finit, stp, max_evals, xt, gt):
    """Halve the step until the orthant-projected point decreases enough."""
    positive = region.orthant(x, pg)
    f = finit
    for count in range(1, max_evals + 1):
        _trial_point(x, d, stp, xt)
        region.project(xt, positive)
        f = evaluate(xt, gt, stp)
        decrease = _diff_dot(xt, x, pg, region.buf_a)
        if decrease >= 0:
            # The projected step no longer moves x (in floating point).
            return "rounding errors prevent further progress", stp, f, count
        if f <= finit + _FTOL * decrease:
            return None, stp, f, count
        if stp <= _MIN_STEP:
            return f"the step reached its lower bound {_MIN_STEP:g}", stp, f, count
        if count < max_evals:
            stp *= _DECREASE
    return (
        f"no step satisfied the sufficient decrease condition within "
        f"max_linesearch={max_evals} evaluations",
        stp, f, max_evals,
    )


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------


class _RoundOff:
    """The trials of one line search, and whether its failure is the round-off limit.

    The rounding error of ``f`` is measured on the trials themselves: the
    change of the objective from ``x`` to a trial ``x_t`` is predicted by the
    trapezoidal rule on the gradients, ``(g + g_t) . (x_t - x) / 2`` (exact
    for a quadratic, and the gradients are accurate where ``f`` is not,
    being no difference of large numbers), plus the exact change of the L1
    term; what the evaluated change departs from it by is rounding error
    (or curvature, which only overstates it). It is at least
    ``_ROUNDOFF_ULPS`` units in the last place of ``|f|``.
    """

    def __init__(self, x, f, g, region, c1, buffer):
        self.x, self.f, self.g = x, f, g
        self.region, self.c1, self.buffer = region, c1, buffer
        self.norm1 = region.norm1(x) if c1 > 0 else 0.0
        self.lowest = math.inf
        self.error = _ROUNDOFF_ULPS * _EPS * abs(f)

    def record(self, xt, f_t, g_t):
        """Note the trial ``x_t`` (value ``f_t``, smooth gradient ``g_t``)."""
        self.lowest = min(self.lowest, f_t)
        change = 0.5 * (_diff_dot(xt, self.x, self.g, self.buffer)
                        + _diff_dot(xt, self.x, g_t, self.buffer))
        if self.c1 > 0:
            change += self.c1 * (self.region.norm1(xt) - self.norm1)
        departure = abs(f_t - self.f - change)
        if math.isfinite(departure):
            self.error = max(self.error, departure)

    def reached(self, g_norm, x_norm):
        """Whether a failed search met the rounding error of ``f`` near a minimum.

        Either the gradient vanishes to working precision (a stationary
        point for any ``epsilon`` above ``sqrt(eps)``; ``f``'s rounding error
        may then exceed what the trials show, e.g. where ``f`` tends to 0 as
        a difference of large numbers), or no trial lowered ``f`` by more
        than its rounding error and the gradient is tiny relative to ``f``.
        """
        if g_norm / max(1.0, x_norm) <= math.sqrt(_EPS):
            return True
        return (self.lowest >= self.f - self.error
                and g_norm * max(1.0, x_norm) <= _ROUNDOFF_GRADIENT * abs(self.f))


def minimize_lbfgs(
    fun,
    x0,
    *,
    c1=0.0,
    l1_mask=None,
    n_memory=6,
    max_iter=100,
    epsilon=1e-5,
    period=10,
    delta=1e-5,
    max_linesearch=20,
    linesearch="auto",
    callback=None,
):
    """Minimise ``f(x) + c1 * ||x||_1`` by L-BFGS, or OWL-QN when ``c1 > 0``.

    Parameters and stopping tests mean what they mean in CRFsuite's
    ``lbfgs`` trainer (libLBFGS), so the same settings give comparable runs.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (f, g)``: value and gradient of the smooth part (an L2
        penalty belongs here). ``x`` is a C-contiguous float64 buffer that
        the solver reuses: ``fun`` must not modify it, and must copy it to
        keep it. ``g`` is copied, so it may be a fresh array or a buffer
        reused by ``fun``.
    x0 : array-like of shape (n,)
        Starting point; not modified.
    c1 : float, default=0.0
        Coefficient of the L1 term. ``c1 > 0`` switches to OWL-QN.
    l1_mask : array-like of bool, shape (n,), default=None
        Entries carrying the L1 penalty (all of them when None); the others
        are optimised without it (e.g. intercepts).
    n_memory : int, default=6
        Number of correction pairs kept (CRFsuite's ``num_memories``).
    max_iter : int, default=100
        Maximum number of iterations (accepted steps, not evaluations); 0
        only evaluates ``x0``.
    epsilon : float, default=1e-5
        Stop when ``||g|| / max(1, ||x||) <= epsilon`` (pseudo-gradient of
        the whole objective under L1).
    period : int, default=10
        Stop when the relative decrease ``(f_{k - period} - f_k) / |f_k|`` is
        below ``delta``; 0 disables the test.
    delta : float, default=1e-5
        Threshold of the test above.
    max_linesearch : int, default=20
        Maximum number of evaluations per line search.
    linesearch : {"auto", "more_thuente", "backtracking"}, default="auto"
        "auto" is More-Thuente (strong Wolfe) without L1 and backtracking
        along the orthant-projected path (Armijo) with L1; "backtracking"
        without L1 grows or shrinks the step until the regular Wolfe
        conditions hold. More-Thuente cannot be used with ``c1 > 0``.
    callback : callable, default=None
        Called after every iteration as ``callback(info)`` with an
        :class:`LBFGSIteration`; returning a true value stops the run.

    Returns
    -------
    result : LBFGSResult
        ``x``, ``fun``, ``grad``, ``n_iter``, ``n_evals``, ``converged`` and
        ``message``. ``x``, ``fun`` and ``grad`` are always those of the last
        accepted iterate (the one ``callback`` saw last). A line search that
        fails ends the run rather than raising:

        - at the round-off limit, ``converged`` is True: the gradient
          vanishes to working precision (``||g|| / max(1, ||x||) <=
          sqrt(machine epsilon)``), or no trial point lowered the objective
          by more than its rounding error (measured on the trials: how far
          their values depart from what the gradients predict, and at least
          64 units in the last place of ``|f|``) and the gradient is tiny,
          ``||g|| * max(1, ||x||) <= 1e-5 * |f|``. Near a minimum, rounding
          hides what is left to gain before ``epsilon`` is met (libLBFGS and
          scipy's L-BFGS-B stop there too); which iteration gets there
          depends on the last bits of ``fun``, so on the processor;
        - anywhere else (badly scaled features or a wrong gradient, for
          instance) ``converged`` is False and ``message`` gives the reason
          and ``||g|| / max(1, ||x||)``.

    Raises
    ------
    ValueError
        On invalid arguments, or when ``fun`` returns a non-finite value, a
        non-finite gradient or a gradient of the wrong shape (the message
        says at which iteration and step).

    Examples
    --------
    >>> import numpy as np
    >>> from sksparse_struct.learners import minimize_lbfgs
    >>> A = np.array([[3.0, 1.0], [1.0, 2.0]])
    >>> b = np.array([1.0, 0.0])
    >>> def fun(x):
    ...     return 0.5 * x @ A @ x - b @ x, A @ x - b
    >>> res = minimize_lbfgs(fun, np.zeros(2), epsilon=1e-10)
    >>> res.x.round(6).tolist(), res.converged
    ([0.4, -0.2], True)

    With an L1 term, coordinates are set exactly to zero:

    >>> res = minimize_lbfgs(fun, np.zeros(2), c1=0.5, epsilon=1e-10)
    >>> res.x.round(6).tolist()
    [0.166667, 0.0]
    """
    if not callable(fun):
        raise ValueError(f"fun must be callable, got {type(fun).__name__}.")
    if callback is not None and not callable(callback):
        raise ValueError(f"callback must be callable or None, got {type(callback).__name__}.")
    x = _as_start_point(x0)
    n = x.shape[0]
    c1 = check_positive_scalar(c1, "c1", allow_zero=True)
    m = check_integer(n_memory, "n_memory", minimum=1)
    max_iter = check_integer(max_iter, "max_iter", minimum=0)
    epsilon = check_positive_scalar(epsilon, "epsilon", allow_zero=True)
    period = check_integer(period, "period", minimum=0)
    delta = check_positive_scalar(delta, "delta", allow_zero=True)
    max_linesearch = check_integer(max_linesearch, "max_linesearch", minimum=1)
    if linesearch not in _LINESEARCHES:
        raise ValueError(f"linesearch must be one of {_LINESEARCHES}, got {linesearch!r}.")
    owlqn = c1 > 0
    if owlqn and linesearch == "more_thuente":
        raise ValueError(
            "linesearch='more_thuente' needs a smooth objective; with c1 > 0 use "
            "'backtracking' or 'auto'."
        )
    if l1_mask is not None and not owlqn:
        # Still validated, so that a wrong mask is caught before the L1 run.
        _L1Region(l1_mask, n)
    region = _L1Region(l1_mask, n) if owlqn else None
    use_more_thuente = not owlqn and linesearch != "backtracking"

    start_time = time.perf_counter()
    objective = _Objective(fun, n, region, c1)
    xt = np.empty(n)
    g = np.empty(n)
    gt = np.empty(n)
    d = np.empty(n)
    pg = np.empty(n) if owlqn else g  # the gradient that drives the search
    # np.empty only reserves the correction pairs; pages are touched as used.
    S = np.empty((m, n))
    Y = np.empty((m, n))
    rho = np.zeros(m)
    alpha = np.zeros(m)
    block = np.empty(min(n, _BLOCK))
    n_pairs = 0
    newest = -1
    gamma = 1.0

    f = objective(x, g, "at the starting point x0")
    if owlqn:
        region.pseudo_gradient(x, g, c1, pg)
    history = np.empty(period) if period else None
    if period:
        history[0] = f

    def result(converged, message, n_iter):
        return LBFGSResult(x, f, g, n_iter, objective.n_evals, converged, message)

    x_norm = _norm(x)
    g_norm = _norm(pg)
    if g_norm <= epsilon * max(1.0, x_norm):
        return result(True, "converged: ||g|| / max(1, ||x||) <= epsilon at x0", 0)
    if max_iter == 0:
        return result(False, "max_iter=0: no iteration was made", 0)

    np.negative(pg, out=d)
    step = 1.0 / g_norm
    k = 0
    while True:
        where = f"at iteration {k + 1}"

        trials = _RoundOff(x, f, g, region, c1, block)

        def evaluate(point, grad_out, stp):
            value = objective(point, grad_out, f"{where} (line-search step {stp:.6g})")
            trials.record(point, value, grad_out)
            return value

        if owlqn:
            failure, step, f_trial, n_ls = _backtracking_owlqn(
                evaluate, region, x, pg, d, f, step, max_linesearch, xt, gt
            )
        else:

            def phi(stp):
                _trial_point(x, d, stp, xt)
                value = evaluate(xt, gt, stp)
                return value, _dot(gt, d)

            search = _more_thuente if use_more_thuente else _backtracking_wolfe
            failure, step, f_trial, n_ls = search(
                phi, f, _dot(g, d), step, max_linesearch
            )
        if failure is not None:
            # x, f and g are still the last accepted iterate's: a trial the
            # line search did not accept is never returned.
            relative_gradient = g_norm / max(1.0, x_norm)
            if trials.reached(g_norm, x_norm):
                return result(
                    True,
                    f"converged: round-off limit {where} (what is left to gain is "
                    f"below the objective's rounding error; ||g|| / max(1, ||x||) = "
                    f"{relative_gradient:.3g})",
                    k,
                )
            return result(
                False,
                f"line search failed {where}: {failure} (||g|| / max(1, ||x||) = "
                f"{relative_gradient:.3g})",
                k,
            )

        k += 1
        x, xt = xt, x
        g, gt = gt, g
        f = f_trial
        if owlqn:
            region.pseudo_gradient(x, g, c1, pg)
        else:
            pg = g
        x_norm = _norm(x)
        g_norm = _norm(pg)

        if callback is not None:
            info = LBFGSIteration(
                iteration=k,
                fun=f,
                grad_norm=g_norm,
                x_norm=x_norm,
                n_active=int(np.count_nonzero(x)),
                step=step,
                n_linesearch=n_ls,
                n_evals=objective.n_evals,
                elapsed=time.perf_counter() - start_time,
            )
            if callback(info):
                return result(False, f"stopped by the callback at iteration {k}", k)

        if g_norm <= epsilon * max(1.0, x_norm):
            return result(True, "converged: ||g|| / max(1, ||x||) <= epsilon", k)
        if period:
            if k >= period:
                past = history[k % period]
                if f != 0:
                    rate = (past - f) / abs(f)
                else:
                    rate = 0.0 if past == f else math.inf
                if rate < delta:
                    return result(
                        True,
                        f"converged: relative decrease over the last {period} "
                        f"iterations below delta",
                        k,
                    )
            history[k % period] = f
        if k >= max_iter:
            return result(False, f"max_iter={max_iter} iterations reached", k)

        # New correction pair s = x_k - x_{k-1}, y = g_k - g_{k-1} (the
        # smooth gradients, also under OWL-QN). A pair without positive
        # curvature (possible only through rounding, or under OWL-QN) would
        # break the positive definiteness of the update: skip it.
        slot = (newest + 1) % m
        s_new, y_new = S[slot], Y[slot]
        np.subtract(x, xt, out=s_new)
        np.subtract(g, gt, out=y_new)
        sy = _dot(s_new, y_new)
        yy = _dot(y_new, y_new)
        if sy > np.finfo(np.float64).eps * yy and yy > 0:
            newest = slot
            rho[slot] = 1.0 / sy
            gamma = sy / yy
            n_pairs = min(n_pairs + 1, m)
        elif n_pairs == m:
            n_pairs = m - 1  # the slot just overwritten held the oldest pair

        # Two-loop recursion: d = -H pg.
        np.negative(pg, out=d)
        order = [(newest - i) % m for i in range(n_pairs)]
        for j in order:
            alpha[j] = rho[j] * _dot(S[j], d)
            _axpy(-alpha[j], Y[j], d, block)
        if n_pairs:
            d *= gamma
        for j in reversed(order):
            beta = rho[j] * _dot(Y[j], d)
            _axpy(alpha[j] - beta, S[j], d, block)
        if owlqn:
            region.constrain_direction(d, pg)
        if n_pairs == 0 or not _dot(d, pg) < 0:
            # No usable curvature information: restart from steepest descent.
            n_pairs = 0
            np.negative(pg, out=d)
            step = 1.0 / g_norm
        else:
            step = 1.0
