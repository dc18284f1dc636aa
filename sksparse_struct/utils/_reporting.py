"""How the estimators talk to their users: warnings and progress lines.

Warnings
    :func:`warn` issues a warning attributed to the user's own call: the
    first frame of the stack outside this package and outside scikit-learn
    (whose ``fit`` wrapper, pipelines and model selection stand between a
    user and an estimator). A user sees the line of their script that
    caused it, and the warnings filters' "once per location" rule applies
    to that line.

Progress lines
    Every estimator with a ``verbose`` parameter prints its progress through
    :class:`Progress`, in one format::

        [LinearChainCRF] epoch  3/10  loss 12.3457  mistakes 4  epoch_time 0.21 s  total_time 0.64 s

    the class name in brackets; the unit (``iteration``, ``epoch`` or
    ``pass``) with its number out of the most there can be; then ``name
    value`` fields, two spaces apart; last, the time of this iteration
    (``<unit>_time``) and the time since training started (``total_time``).
    One-off lines go through :meth:`Progress.note`, with the same prefix.

First compilation
    The numba kernels are compiled the first time they run and cached on
    disk for later processes. While a fit with ``verbose`` on (or the
    quickstart) compiles, :func:`compile_notice` says so once, on standard
    error: ``[LinearChainCRF] compiling numba kernels on first use ...``.

Long steps
    :func:`progress_ticker` keeps a user company through a step that may
    take a while (the quickstart wraps each of its models in one): on
    standard error, a line every ``interval`` seconds that says whether
    numba is compiling, and at the end the step's time and how much of it
    went to compiling::

          ... still compiling numba kernels (first run only), 20 s
          ... training, 30 s
          done in 34.2 s (of which compiling 28.1 s)
"""

import os
import sys
import threading
import warnings
from contextlib import contextmanager
from time import perf_counter

import sklearn
from numba.core import event
from sklearn.exceptions import ConvergenceWarning

__all__ = ["COMPILING_NOTICE", "Progress", "compile_notice", "format_progress",
           "progress_ticker", "user_stacklevel", "warn", "warn_max_iter"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_SKLEARN = os.path.dirname(os.path.abspath(sklearn.__file__)) + os.sep
_SKIPPED = (_PACKAGE, _SKLEARN)


def user_stacklevel():
    """The ``stacklevel`` that attributes a warning to the user's call.

    For a ``warnings.warn`` made by the caller of this function: the level
    of the first frame outside this package and outside scikit-learn.

    Returns
    -------
    stacklevel : int
    """
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_SKIPPED):
        frame, level = frame.f_back, level + 1
    return level


def warn(message, category=UserWarning):
    """``warnings.warn(message, category)`` attributed to the user's call.

    Parameters
    ----------
    message : str
    category : type of Warning, default=UserWarning
    """
    warnings.warn(message, category, stacklevel=user_stacklevel())


def warn_max_iter(who, max_iter, unit, rule):
    """The ``ConvergenceWarning`` of a fit that ``max_iter`` ended before its stopping rule.

    The estimators' rule, scikit-learn's: warn when ``tol`` is set and
    ``max_iter`` stops the fit; not with ``tol=None`` (a fixed number of
    iterations was asked for), nor when the stopping rule ended it.

    Parameters
    ----------
    who : str
        The estimator, e.g. ``"LinearChainCRF (solver='adagrad')"``.
    max_iter : int
    unit : str
        ``"iteration"``, ``"epoch"`` or ``"pass"``.
    rule : str
        What had not happened yet, ending the sentence "max_iter epochs
        ended the fit before ...", e.g. ``"the mean training loss stopped
        falling by more than tol=0.0001 (3 epochs in a row)"``.
    """
    plural = f"{unit}es" if unit == "pass" else f"{unit}s"
    warn(f"{who} did not converge: max_iter={max_iter} {unit if max_iter == 1 else plural} "
         f"ended the fit before {rule}. Increase max_iter (or tol); tol=None runs max_iter "
         f"{plural} without this warning.", ConvergenceWarning)


def _value(value):
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def format_progress(name, unit, k, total, fields, step_time, total_time):
    """One progress line (without the newline); see the module docstring.

    Parameters
    ----------
    name : str
        The estimator's class name.
    unit : str
        ``"iteration"``, ``"epoch"`` or ``"pass"``.
    k : int
        Number of the iteration, from 1.
    total : int or None
        The most iterations there can be (``max_iter``).
    fields : sequence of (str, object)
        ``(name, value)`` pairs, in order; floats are written with 6
        significant digits, pairs whose value is None are left out.
    step_time, total_time : float
        Seconds of this iteration, and since training started.

    Returns
    -------
    line : str

    Examples
    --------
    >>> from sksparse_struct.utils._reporting import format_progress
    >>> format_progress("LinearChainCRF", "epoch", 3, 10, [("loss", 12.345678),
    ...                 ("mistakes", 4), ("val_acc", None)], 0.2051, 0.6449)
    '[LinearChainCRF] epoch  3/10  loss 12.3457  mistakes 4  epoch_time 0.21 s  total_time 0.64 s'
    """
    if total is None:
        counter = str(k)
    else:
        counter = f"{k:>{len(str(total))}}/{total}"
    parts = [f"[{name}] {unit} {counter}"]
    parts.extend(f"{label} {_value(value)}" for label, value in fields if value is not None)
    parts.append(f"{unit}_time {step_time:.2f} s")
    parts.append(f"total_time {total_time:.2f} s")
    return "  ".join(parts)


class Progress:
    """The progress lines of one training run, printed when ``verbose`` is on.

    Create it when training starts; call :meth:`update` after every
    iteration (it times each one, and prints every ``verbose``-th).

    Parameters
    ----------
    owner : object or str
        The estimator (its class name is printed) or a name.
    verbose : int or bool
        0 or False: print nothing; ``k``: every ``k``-th iteration.
    unit : str
        ``"iteration"``, ``"epoch"`` or ``"pass"``.
    total : int or None, default=None
        The most iterations there can be (``max_iter``).
    """

    def __init__(self, owner, verbose, unit, total=None):
        self.name = owner if isinstance(owner, str) else type(owner).__name__
        self.every = max(int(verbose), 1) if verbose else 0
        self.unit = unit
        self.total = total
        self.start = self._last = perf_counter()

    def __bool__(self):
        return self.every > 0

    def update(self, k, fields=(), force=False):
        """Time iteration ``k`` and print its line if it is due (or ``force``).

        Parameters
        ----------
        k : int
            Number of the iteration just finished, from 1.
        fields : sequence of (str, object), default=()
            As in :func:`format_progress`.
        force : bool, default=False
            Print even if ``k`` is not a multiple of ``verbose`` (e.g. on the
            iterations that compute a duality gap).
        """
        now = perf_counter()
        step_time, self._last = now - self._last, now
        if self.every and (force or k % self.every == 0):
            self._print(format_progress(self.name, self.unit, k, self.total, fields,
                                        step_time, now - self.start))

    def note(self, text):
        """Print ``[name] text`` when verbose: a one-off line of the same run."""
        if self.every:
            self._print(f"[{self.name}] {text}")

    @staticmethod
    def _print(line):
        print(line, file=sys.stdout, flush=True)



COMPILING_NOTICE = ("compiling numba kernels on first use: once, up to about a minute; "
                    "later runs load them from numba's cache")


class _FirstCompile(event.Listener):
    """Prints ``[name] COMPILING_NOTICE`` when the first kernel starts compiling."""

    def __init__(self, name, thread):
        self.name = name
        self.thread = thread
        self.told = False

    def on_start(self, event):
        # Only this run's compilations (another thread may be compiling too).
        if not self.told and threading.get_ident() == self.thread:
            self.told = True
            print(f"[{self.name}] {COMPILING_NOTICE}", file=sys.stderr, flush=True)

    def on_end(self, event):
        pass


@contextmanager
def compile_notice(owner, active=True):
    """Say once, on standard error, when numba compiles inside the block.

    Kernels loaded from numba's on-disk cache fire nothing, so the line
    appears only on a first run (or after the package changed).

    Parameters
    ----------
    owner : object or str
        The estimator (its class name is printed) or a name.
    active : bool, default=True
        Whether to listen at all (an estimator passes its ``verbose``).
    """
    if not active:
        yield
        return
    name = owner if isinstance(owner, str) else type(owner).__name__
    with event.install_listener("numba:compile", _FirstCompile(name, threading.get_ident())):
        yield


class _CompileClock(event.Listener):
    """The wall time during which numba compiles, in any thread of the process.

    numba's compile events nest (a kernel compiles the kernels it calls
    inside its own compilation) and may come from several threads: the
    clock runs while at least one compilation is open.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._open = 0
        self._since = None
        self._seconds = 0.0

    def on_start(self, event):
        with self._lock:
            if self._open == 0:
                self._since = perf_counter()
            self._open += 1

    def on_end(self, event):
        with self._lock:
            self._open -= 1
            if self._open == 0:
                self._seconds += perf_counter() - self._since
                self._since = None

    @property
    def compiling(self):
        """Whether a compilation is under way."""
        return self._open > 0

    @property
    def seconds(self):
        """Seconds spent compiling so far, including an open compilation."""
        with self._lock:
            if self._since is None:
                return self._seconds
            return self._seconds + perf_counter() - self._since


def _say(line, stream):
    stream = sys.stderr if stream is None else stream
    # One write per line, so that lines of two threads do not mix.
    stream.write(line + "\n")
    stream.flush()


@contextmanager
def progress_ticker(interval=10.0, what="training", indent="  ", stream=None):
    """Say every ``interval`` seconds that the block is still running, then its time.

    While the block runs, a background thread writes a line every
    ``interval`` seconds: ``... still compiling numba kernels (first run
    only), 20 s`` while numba compiles (anywhere in the process), else
    ``... training, 20 s``. When the block ends (also by an exception),
    ``done in 34.2 s``, with ``(of which compiling 28.1 s)`` if numba
    compiled. A block shorter than ``interval`` gets only the last line.

    Parameters
    ----------
    interval : float, default=10.0
        Seconds between two lines; positive.
    what : str, default="training"
        What the block does when it is not compiling, as the lines say it.
    indent : str, default="  "
        Written before each line.
    stream : file-like or None, default=None
        Where the lines go; None means standard error (looked up when each
        line is written), where :func:`compile_notice` writes too.

    Examples
    --------
    A block shorter than ``interval`` gets only the last line:

    >>> import io
    >>> from sksparse_struct.utils._reporting import progress_ticker
    >>> out = io.StringIO()
    >>> with progress_ticker(interval=60, stream=out):
    ...     total = sum(range(1000))
    >>> out.getvalue()
    '  done in 0.0 s\\n'
    """
    if not interval > 0:
        raise ValueError(f"interval must be a positive number of seconds, got {interval!r}")
    clock = _CompileClock()
    stop = threading.Event()
    start = perf_counter()

    def tick():
        while not stop.wait(interval):
            doing = ("still compiling numba kernels (first run only)" if clock.compiling
                     else what)
            _say(f"{indent}... {doing}, {perf_counter() - start:.0f} s", stream)

    ticker = threading.Thread(target=tick, name="progress_ticker", daemon=True)
    with event.install_listener("numba:compile", clock):
        ticker.start()
        try:
            yield
        finally:
            stop.set()
            ticker.join()
            elapsed = perf_counter() - start
            compiled = clock.seconds
            # The compile time is rounded like the total, and shown when it
            # shows as more than nothing.
            note = f" (of which compiling {compiled:.1f} s)" if compiled >= 0.05 else ""
            _say(f"{indent}done in {elapsed:.1f} s{note}", stream)

