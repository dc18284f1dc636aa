"""What keeps the first run short: one compile per type, pruned variants, a notice.

And what keeps a user company through a first run: the progress lines of
``progress_ticker``.

The toy kernels here are not cached (``cache=False``) so that every test
process compiles them afresh and the counts are exact.
"""

import io
import os
import re
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from numba.core import event
from sklearn.base import BaseEstimator

from sksparse_struct.utils._numba import njit
from sksparse_struct.utils._reporting import (
    COMPILING_NOTICE,
    _CompileClock,
    compile_notice,
    progress_ticker,
)
from sksparse_struct.utils._sklearn_compat import fit_context

KIND_A = 0
KIND_B = 1


@njit(cache=False)
def _scaled(t, a):
    return t * a


@njit(cache=False)
def _constants_caller(a):
    return _scaled(3, a) + _scaled(5, a) + _scaled(a, 2)


def test_calls_between_kernels_compile_once_per_type_not_per_constant():
    assert _constants_caller(2) == 6 + 10 + 4
    # numba's own njit would compile _scaled three times (Literal[int](3),
    # Literal[int](5), and (int64, Literal[int](2))).
    assert len(_scaled.signatures) == 1


@njit(cache=False)
def _branch_a(x):
    return x + 1


@njit(cache=False)
def _branch_b(x):
    return x * 2


@njit(cache=False, inline="always")
def _variant_body(kind, x):
    if kind == KIND_A:
        return _branch_a(x)
    return _branch_b(x)


@njit(cache=False)
def _variant_a(x):
    return _variant_body(KIND_A, x)


def test_inlined_body_with_constant_compiles_only_its_branch():
    assert _variant_a(3) == 4
    assert len(_branch_a.signatures) == 1
    assert _branch_b.signatures == []


def _variant_kernel(kind):
    @njit(cache=False)
    def variant(x):
        if kind == KIND_A:
            return _branch_a(x)
        return _branch_b(x)

    return variant


def test_closure_over_a_constant_compiles_only_its_branch():
    # The parser's training kernels and the active sets are built this way.
    assert _variant_kernel(KIND_A)(np.int64(7)) == 8
    assert len(_branch_a.signatures) == 1
    assert _branch_b.signatures == []


_CACHED_CLOSURES = textwrap.dedent("""
    import numpy as np
    from sksparse_struct.inference import _sparsemap_fast as fast
    # Scores whose best tree is not projective: the two kernels disagree.
    n = 4
    S = np.full((n + 1, n + 1), -5.0)
    for h, m in [(0, 2), (2, 4), (4, 1), (2, 3)]:
        S[h, m] = 5.0
    S[1, 3] = 4.0
    eta = np.array([S[h, m] for m in range(1, n + 1) for h in range(n + 1) if h != m])
    for kernel in (fast.active_set_tree, fast.active_set_projective_tree):
        out = kernel(eta, n, True, 100, 1e-9, 1e-9)
        print(out[3][0].tolist())
    print(sum(fast._active_set_tree.stats.cache_hits.values()),
          sum(fast._active_set_projective_tree.stats.cache_hits.values()))
""")


@pytest.mark.slow  # compiles two active sets in a fresh process, then loads them in another
def test_cached_closures_of_one_factory_stay_apart(tmp_path):
    # numba keys a cached closure by the values it closes over: a second
    # process must load each kind's kernel, not the first one it finds.
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", _CACHED_CLOSURES], env=env,
                           capture_output=True, text=True, check=True).stdout.split("\n")
            for _ in range(2)]
    cold, warm = runs
    assert cold[:2] == warm[:2]
    assert cold[0] != cold[1]  # a non-projective and a projective tree
    assert cold[2] == "0 0" and warm[2] == "1 1"


@pytest.mark.slow  # a cold compilation of the active set in a fresh process
def test_the_tree_active_set_compiles_no_other_oracle(tmp_path):
    # In a fresh process with an empty cache: the non-projective active set
    # must not compile Eisner's algorithm or Viterbi (the other kinds'
    # oracles), which its shared loop mentions.
    code = textwrap.dedent("""
        import numpy as np
        from numba.core import event
        compiled = []

        class Listener(event.Listener):
            def on_start(self, ev):
                compiled.append(ev.data["dispatcher"].py_func.__name__)

            def on_end(self, ev):
                pass

        event.register("numba:compile", Listener())
        from sksparse_struct.inference._sparsemap_fast import active_set_tree
        n = 4
        eta = np.random.default_rng(0).normal(size=n * n)
        out = active_set_tree(eta, n, True, 100, 1e-9, 1e-9)
        assert out[7], "not converged"
        print(" ".join(sorted(set(compiled))))
    """)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, check=True)
    compiled = set(result.stdout.split())
    assert "chu_liu_edmonds_parts_ws" in compiled
    assert not {"eisner_parts_ws", "eisner_chart", "viterbi"} & compiled, compiled


@njit(cache=False)
def _first_use(x):
    return x + 0.5


def test_compile_notice_speaks_once_and_only_when_compiling(capsys):
    with compile_notice("Toy"):
        _first_use(1.0)
        _first_use(np.int64(1))  # a second compilation: still one line
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"[Toy] {COMPILING_NOTICE}\n"
    with compile_notice("Toy"):
        _first_use(2.0)  # compiled already
    assert capsys.readouterr().err == ""


@njit(cache=False)
def _fit_kernel(x):
    return x * 3.0


class _Verbose(BaseEstimator):
    _parameter_constraints: dict = {"verbose": ["verbose"]}

    def __init__(self, verbose=0):
        self.verbose = verbose

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        self.value_ = _fit_kernel(float(X))
        return self


def test_verbose_fits_announce_compilation(capsys):
    _Verbose(verbose=0).fit(1.0)  # compiles silently
    assert capsys.readouterr().err == ""
    _Verbose(verbose=1).fit(2.0)  # nothing left to compile
    assert capsys.readouterr().err == ""

    @njit(cache=False)
    def fresh(x):
        return x - 1.0

    class _VerboseFresh(_Verbose):
        @fit_context(prefer_skip_nested_validation=True)
        def fit(self, X, y=None):
            self.value_ = fresh(float(X))
            return self

    _VerboseFresh(verbose=1).fit(2.0)
    assert capsys.readouterr().err == f"[_VerboseFresh] {COMPILING_NOTICE}\n"


@njit(cache=False, internal=True)
def _internal_helper(x):
    return x + 2


@njit(cache=False)
def _calls_internal_helper(x):
    return _internal_helper(x) * 10


def test_internal_kernels_serve_kernels_and_refuse_python_calls():
    # No Python entry point is built for them (compile time); a call from
    # Python must say so, not crash the interpreter.
    assert _calls_internal_helper(1) == 30
    with pytest.raises(TypeError, match="calls from other kernels only"):
        _internal_helper(1)


# --------------------------------------------------------------------------
# progress_ticker: company through a long step, and its compile time

TICK = re.compile(r"^  \.\.\. (?P<doing>.+), (?P<seconds>\d+) s$")
DONE = re.compile(r"^  done in (?P<total>\d+\.\d) s(?: \(of which compiling (?P<compiling>\d+\.\d) s\))?$")


def test_progress_ticker_ticks_while_the_block_runs(capsys):
    with progress_ticker(interval=0.02):
        time.sleep(0.2)
    captured = capsys.readouterr()
    assert captured.out == ""
    *ticks, done = captured.err.splitlines()
    # About ten ticks (a busy machine may delay some), in order.
    assert len(ticks) >= 3, ticks
    assert all(TICK.match(line)["doing"] == "training" for line in ticks), ticks
    seconds = [int(TICK.match(line)["seconds"]) for line in ticks]
    assert seconds == sorted(seconds)
    match = DONE.match(done)
    assert match and 0.2 <= float(match["total"]) < 1.0, done
    assert match["compiling"] is None  # nothing was compiled


def test_progress_ticker_says_when_numba_compiles(capsys):
    out = io.StringIO()
    with progress_ticker(interval=0.02, what="fitting", indent="    ", stream=out):
        # A compilation as numba reports it (a real one may be too short to
        # be seen by a tick): the events bracket it, nested ones count once.
        event.start_event("numba:compile")
        event.start_event("numba:compile")
        time.sleep(0.15)
        event.end_event("numba:compile")
        time.sleep(0.05)
        event.end_event("numba:compile")
        time.sleep(0.3)
    assert capsys.readouterr().err == ""  # all went to the stream
    *ticks, done = out.getvalue().splitlines()
    doing = [line.strip().split(", ")[0] for line in ticks]
    assert doing[0] == "... still compiling numba kernels (first run only)"
    assert doing[-1] == "... fitting"
    # Compiling first, then fitting: the lines switch once.
    assert doing == sorted(doing, key=lambda d: d == "... fitting")
    match = re.fullmatch(r"    done in (\d+\.\d) s \(of which compiling (\d+\.\d) s\)", done)
    assert match, done
    total, compiling = map(float, match.groups())
    assert 0.2 <= compiling <= total - 0.2


def test_the_compile_clock_times_real_compilations():
    @njit(cache=False)
    def fresh(x):
        return x * 2.0 + 1.0

    clock = _CompileClock()
    with event.install_listener("numba:compile", clock):
        assert fresh(1.0) == 3.0
    assert not clock.compiling and clock.seconds > 0.0
    seconds = clock.seconds
    with event.install_listener("numba:compile", clock):
        fresh(2.0)  # compiled already
    assert clock.seconds == seconds


def test_progress_ticker_ends_with_the_block_also_on_an_error(capsys):
    with pytest.raises(KeyError):
        with progress_ticker(interval=0.01):
            raise KeyError("boom")
    [done] = capsys.readouterr().err.splitlines()
    assert DONE.match(done)
    assert not [t for t in threading.enumerate() if t.name == "progress_ticker"]
    with pytest.raises(ValueError, match="interval must be a positive number of seconds"):
        with progress_ticker(interval=0):
            pass
