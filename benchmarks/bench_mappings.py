"""Time the forward and backward passes of every mapping in sksparse_struct.

Run from anywhere, in an environment where sksparse_struct is installed::

    python benchmarks/bench_mappings.py            # full run (a few minutes)
    python benchmarks/bench_mappings.py --quick    # smoke run (under a minute)

What is measured
----------------
1. Throughput: for float64 score arrays of shape 2000 x 512 and 200 x 10000,
   the median over ``--repeats`` runs of the forward pass and of the backward
   pass (vector-Jacobian product from the forward output), in milliseconds.
   Every kernel is compiled (or loaded from numba's cache) by a warm-up call
   before timing starts.
2. The same for the ``entmax`` package (PyTorch CPU, 2 threads, float64) for
   sparsemax and entmax15, with the ratio ours / theirs (below 1 means we are
   faster). Its backward is autograd's ``y.backward(dp)`` on a graph built by
   the forward of the same repeat; forward and backward are timed separately.
   Skipped with a message when torch or entmax cannot be imported.
3. Linear-time check for csparsemax: time per row at dimension 1,000 (2000
   rows) and 10,000 (200 rows; the same total size, so the same memory
   traffic) for every ``method``; an O(d) algorithm gives a ratio 10k / 1k
   close to 10.
4. Cold start: in fresh interpreters, after a warm-up process has filled
   numba's on-disk cache, the time to import ``sksparse_struct.mappings`` and
   the time of the first forward and backward call of each mapping, with the
   number of numba cache misses seen in that process (should be 0: a miss
   means the kernel was recompiled). The first call of *any* numba function
   in a process pays a one-time set-up of numba's runtime; a trivial cached
   kernel is called first to measure that part ("numba init") apart from
   what each mapping adds.

The tables are printed as reStructuredText "simple tables", ready to paste in
``doc/benchmarks.rst``. Numbers depend on the machine and on its load; the
header says which machine produced them.

The comparison needs ``entmax`` and a CPU build of ``torch`` (the
``benchmark`` extra); neither is a dependency of sksparse_struct.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numba
import numpy as np

from _bench_utils import (  # noqa: F401 (numba_cache_misses: used by _COLD_SNIPPET)
    fmt,
    machine_header,
    median_ms,
    numba_cache_misses,
    rst_table,
)

SHAPES = [(2000, 512), (200, 10000)]
# Same total size (2e6 scores) at both dimensions, so that both runs stream
# the same amount of memory and the per-row ratio reflects the algorithm, not
# the arrays falling out of the CPU caches.
CSPARSEMAX_SHAPES = [(2000, 1000), (200, 10000)]
TORCH_THREADS = 2

# Mapping name -> the public names it needs from sksparse_struct.mappings.
# A case whose names are not all there is reported as "not available".
REQUIRED = {
    "softmax": ["softmax", "softmax_backward"],
    "sparsemax": ["sparsemax", "sparsemax_backward"],
    "entmax15": ["entmax15", "entmax15_backward"],
    "sq_pnorm_max": ["sq_pnorm_max", "sq_pnorm_max_backward"],
    # The generic solver of Niculae (2018) (accelerated projected gradient), for
    # comparison with the exact default; same backward pass.
    "sq_pnorm_max[pgd]": ["sq_pnorm_max", "sq_pnorm_max_backward"],
    "fusedmax": ["fusedmax", "fusedmax_backward"],
    "oscarmax": ["oscarmax", "oscarmax_backward"],
    "csoftmax": ["csoftmax", "csoftmax_backward"],
    "csparsemax": ["csparsemax", "csparsemax_backward"],
    "project_simplex": ["project_simplex"],
    "project_capped_simplex": ["project_capped_simplex"],
    "prox_tv1d": ["prox_tv1d"],
    "prox_oscar": ["prox_oscar"],
    "fertility_attention": ["fertility_attention"],
}


# --------------------------------------------------------------------------
# inputs and cases
# --------------------------------------------------------------------------


def make_inputs(n_rows, dim, seed=0):
    """Scores, an upstream gradient and upper bounds for one array shape.

    The bounds sum to about 2 per row and are uneven, so that a fair share of
    coordinates hit their cap in csoftmax / csparsemax (the interesting case
    for the capped algorithms), while the problem stays feasible.
    """
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n_rows, dim))
    dp = rng.standard_normal((n_rows, dim))
    u = rng.uniform(0.5, 1.5, size=(n_rows, dim)) * (2.0 / dim)
    return z, dp, u


def csparsemax_methods(m):
    """The ``method`` values of csparsemax to time (those it accepts)."""
    methods = []
    for method in ("linear", "sort"):
        try:
            m.csparsemax(np.zeros(3), np.ones(3), method=method)
        except (ValueError, TypeError):
            continue
        methods.append(method)
    return methods


def build_cases(m, z, dp, u, csparsemax_method=None):
    """Return ``{name: (forward, backward)}`` closures on the given inputs.

    ``forward()`` returns the forward output; ``backward(out)`` takes it and
    returns the gradient (``None`` for forward-only building blocks).
    """
    cases = {}
    n_rows, dim = z.shape

    cases["softmax"] = (
        lambda: m.softmax(z, 1.0),
        lambda p: m.softmax_backward(p, dp, 1.0),
    )
    cases["sparsemax"] = (
        lambda: m.sparsemax(z),
        lambda p: m.sparsemax_backward(p, dp),
    )
    cases["entmax15"] = (
        lambda: m.entmax15(z),
        lambda p: m.entmax15_backward(p, dp),
    )
    cases["sq_pnorm_max"] = (
        lambda: m.sq_pnorm_max(z, p=1.5),
        lambda prob: m.sq_pnorm_max_backward(prob, dp, p=1.5),
    )
    cases["sq_pnorm_max[pgd]"] = (
        lambda: m.sq_pnorm_max(z, p=1.5, method="projected_gradient"),
        lambda prob: m.sq_pnorm_max_backward(prob, dp, p=1.5),
    )
    cases["fusedmax"] = (
        lambda: m.fusedmax(z, alpha=0.1, return_groups=True),
        lambda out: m.fusedmax_backward(out[0], out[1], dp),
    )
    cases["oscarmax"] = (
        lambda: m.oscarmax(z, alpha=0.01, return_groups=True),
        lambda out: m.oscarmax_backward(out[0], out[1], dp),
    )
    cases["csoftmax"] = (
        lambda: m.csoftmax(z, u),
        lambda p: m.csoftmax_backward(p, u, dp),
    )
    kw = {} if csparsemax_method is None else {"method": csparsemax_method}
    cases["csparsemax"] = (
        lambda: m.csparsemax(z, u, **kw),
        lambda p: m.csparsemax_backward(p, u, dp),
    )
    cases["project_simplex"] = (lambda: m.project_simplex(z), None)
    cases["project_capped_simplex"] = (
        lambda: m.project_capped_simplex(z, np.zeros_like(u), u, **kw),
        None,
    )
    cases["prox_tv1d"] = (lambda: m.prox_tv1d(z, 0.1), None)
    cases["prox_oscar"] = (lambda: m.prox_oscar(z, 0.01), None)

    # Fertility-bounded attention is sequential over the rows (target steps):
    # each step's bounds are the fertilities minus the attention already
    # received. Fertilities large enough for all steps keep it feasible.
    fertility = np.full(dim, 2.0 * n_rows / dim)

    def fertility_backward(att):
        return m.fertility_attention_backward(att, fertility, dp, "csparsemax")

    cases["fertility_attention"] = (
        lambda: m.fertility_attention(z, fertility, "csparsemax"),
        fertility_backward if hasattr(m, "fertility_attention_backward") else None,
    )
    cases[NUMBA_BASELINE] = (lambda: _numba_baseline(z[0]), None)
    return cases


def available(m, name):
    if name == NUMBA_BASELINE:
        return True
    if name == "sq_pnorm_max[pgd]" and not _accepts(m, "sq_pnorm_max", "method"):
        return False
    return all(hasattr(m, attr) for attr in REQUIRED[name])


def _accepts(m, func, param):
    import inspect

    try:
        return param in inspect.signature(getattr(m, func)).parameters
    except (AttributeError, TypeError, ValueError):
        return False


# A trivial cached kernel: its first call in a new process shows what any
# numba function costs to load from the cache (runtime and LLVM set-up),
# independently of sksparse_struct.
NUMBA_BASELINE = "(numba baseline)"


@numba.njit(cache=True)
def _numba_baseline(a):
    out = 0.0
    for v in a:
        out += v
    return out


# --------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------


def time_case(forward, backward, repeats):
    """Warm up (compile / load the cache), then time forward and backward."""
    out = forward()
    if backward is not None:
        backward(out)
    t_fwd = median_ms(forward, repeats)
    t_bwd = median_ms(lambda: backward(out), repeats) if backward else None
    return t_fwd, t_bwd, out


def time_entmax(name, z, dp, repeats):
    """Forward and backward medians of the entmax package, and its outputs."""
    import torch
    from entmax import entmax15, sparsemax

    fn = {"sparsemax": sparsemax, "entmax15": entmax15}[name]
    z_t = torch.from_numpy(z)
    dp_t = torch.from_numpy(dp)
    fwd, bwd = [], []
    # One extra unrecorded repeat warms up the allocator and dispatch.
    for r in range(repeats + 1):
        x = z_t.clone().requires_grad_(True)
        t0 = time.perf_counter()
        y = fn(x, dim=-1)
        t1 = time.perf_counter()
        y.backward(dp_t)
        t2 = time.perf_counter()
        if r > 0:
            fwd.append(t1 - t0)
            bwd.append(t2 - t1)
    return (
        1e3 * statistics.median(fwd),
        1e3 * statistics.median(bwd),
        y.detach().numpy(),
        x.grad.numpy(),
    )


def torch_status():
    """Return (ok, message) for the optional torch/entmax comparison."""
    try:
        import torch
        import entmax
    except ImportError as exc:
        return False, f"entmax comparison skipped: {exc} (pip install entmax torch)"
    torch.set_num_threads(TORCH_THREADS)
    version = getattr(entmax, "__version__", None)
    if version is None:
        try:
            from importlib.metadata import version as _v

            version = _v("entmax")
        except Exception:  # metadata missing for a source checkout
            version = "?"
    return True, f"torch {torch.__version__}, entmax {version}"


# --------------------------------------------------------------------------
# benchmark sections
# --------------------------------------------------------------------------


def bench_throughput(m, repeats, torch_ok):
    header = ["mapping", "shape", "fwd ms", "bwd ms", "entmax fwd", "entmax bwd",
              "fwd ratio", "bwd ratio", "max diff"]
    rows = []
    missing = []
    for n_rows, dim in SHAPES:
        z, dp, u = make_inputs(n_rows, dim)
        cases = build_cases(m, z, dp, u)
        for name, (forward, backward) in cases.items():
            if name == NUMBA_BASELINE:
                continue
            if not available(m, name):
                if name not in missing:
                    missing.append(name)
                continue
            shape = f"{n_rows}x{dim}"
            try:
                t_fwd, t_bwd, out = time_case(forward, backward, repeats)
            except Exception as exc:  # report and go on with the others
                rows.append([name, shape, f"error: {type(exc).__name__}: {exc}"]
                            + [""] * 6)
                continue
            row = [name, shape, fmt(t_fwd), fmt(t_bwd), "", "", "", "", ""]
            if torch_ok and name in ("sparsemax", "entmax15"):
                e_fwd, e_bwd, e_p, e_dz = time_entmax(name, z, dp, repeats)
                dz = backward(out)
                diff = max(np.abs(out - e_p).max(), np.abs(dz - e_dz).max())
                row[4:] = [
                    fmt(e_fwd),
                    fmt(e_bwd),
                    fmt(t_fwd / e_fwd),
                    fmt(t_bwd / e_bwd),
                    f"{diff:.1e}",
                ]
            rows.append(row)
    return header, rows, missing


def bench_csparsemax_scaling(m, repeats):
    header = ["method", "rows x d", "fwd us/row", "bwd us/row", "fwd 10k/1k",
              "bwd 10k/1k"]
    rows = []
    if not available(m, "csparsemax"):
        return header, rows
    for method in csparsemax_methods(m):
        per_row = []
        for n_rows, dim in CSPARSEMAX_SHAPES:
            z, dp, u = make_inputs(n_rows, dim, seed=1)
            forward, backward = build_cases(m, z, dp, u, method)["csparsemax"]
            t_fwd, t_bwd, _ = time_case(forward, backward, repeats)
            fwd_us, bwd_us = 1e3 * t_fwd / n_rows, 1e3 * t_bwd / n_rows
            per_row.append((fwd_us, bwd_us))
            rows.append([method, f"{n_rows} x {dim:,}", fmt(fwd_us), fmt(bwd_us),
                         "", ""])
        rows[-1][4] = fmt(per_row[1][0] / per_row[0][0])
        rows[-1][5] = fmt(per_row[1][1] / per_row[0][1])
    return header, rows


# The snippet run in a fresh interpreter for the cold-start measurement. It
# imports this very file (by path) to reuse build_cases on a tiny problem.
_COLD_SNIPPET = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy, numba
t1 = time.perf_counter()
import sksparse_struct.mappings as m
t2 = time.perf_counter()
sys.path.insert(0, {bench_dir!r})
import bench_mappings as b
names = {names!r}
result = {{"deps_s": t1 - t0, "import_s": t2 - t1, "calls": {{}}}}
z, dp, u = b.make_inputs(4, 16, seed=2)
cases = b.build_cases(m, z, dp, u)
for name in names:
    forward, backward = cases[name]
    t0 = time.perf_counter()
    out = forward()
    t1 = time.perf_counter()
    if backward is not None:
        backward(out)
    t2 = time.perf_counter()
    forward()
    t3 = time.perf_counter()
    result["calls"][name] = [t1 - t0, t2 - t1 if backward else None, t3 - t2]
result["cache_misses"] = b.numba_cache_misses()
print(json.dumps(result))
"""


def run_cold(names):
    bench_dir = os.path.dirname(os.path.abspath(__file__))
    code = _COLD_SNIPPET.format(bench_dir=bench_dir, names=list(names))
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench_cold_start(m, samples):
    names = [name for name in REQUIRED if available(m, name)]
    # The warm-up process compiles whatever is not yet in numba's cache.
    warm = run_cold([NUMBA_BASELINE] + names)
    header = ["mapping", "deps import s", "pkg import s", "numba init ms",
              "1st fwd ms", "1st bwd ms", "1st total ms", "2nd fwd ms", "misses"]
    rows = []
    for name in names:
        # The trivial baseline kernel runs first and absorbs numba's one-time
        # set-up, so "first fwd/bwd" are what this mapping itself adds.
        runs = [run_cold([NUMBA_BASELINE, name]) for _ in range(samples)]
        deps = statistics.median(r["deps_s"] for r in runs)
        imp = statistics.median(r["import_s"] for r in runs)
        init = statistics.median(r["calls"][NUMBA_BASELINE][0] for r in runs) * 1e3
        calls = [r["calls"][name] for r in runs]
        first_fwd = statistics.median(c[0] for c in calls) * 1e3
        has_bwd = calls[0][1] is not None
        first_bwd = statistics.median(c[1] for c in calls) * 1e3 if has_bwd else None
        total = statistics.median(
            r["calls"][NUMBA_BASELINE][0] + r["calls"][name][0]
            + (r["calls"][name][1] or 0.0) for r in runs
        ) * 1e3
        second = statistics.median(c[2] for c in calls) * 1e3
        misses = max(r["cache_misses"] for r in runs)
        rows.append([name, fmt(deps), fmt(imp), fmt(init), fmt(first_fwd),
                     fmt(first_bwd), fmt(total), fmt(second, 3), str(misses)])
    return header, rows, warm


# --------------------------------------------------------------------------


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed runs per measurement (median is reported); "
                        "default 15, or 3 with --quick")
    parser.add_argument("--quick", action="store_true",
                        help="few repeats and one cold-start sample per mapping")
    parser.add_argument("--no-cold-start", action="store_true",
                        help="skip the cold-start subprocess measurements")
    args = parser.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 15)
    cold_samples = 1 if args.quick else 3

    import sksparse_struct.mappings as m

    torch_ok, torch_msg = torch_status()
    for line in machine_header():
        print(line)
    print(torch_msg + (f" (torch threads: {TORCH_THREADS})" if torch_ok else ""))
    print(f"repeats: {repeats} (median reported), float64 throughout")
    print()

    print("Forward / backward time per call on the whole array, ms; entmax columns: "
          "the entmax package (PyTorch), ratio = ours / entmax, max diff = largest "
          "difference of outputs and gradients")
    print()
    header, rows, missing = bench_throughput(m, repeats, torch_ok)
    print(rst_table(header, rows))
    if missing:
        print(f"not available in sksparse_struct.mappings: {', '.join(missing)}")
    print()

    print("csparsemax time per row at d = 1,000 and 10,000 (same total size): "
          "linear growth gives a 10k/1k ratio close to 10")
    print()
    header, rows = bench_csparsemax_scaling(m, repeats)
    if rows:
        print(rst_table(header, rows))
    else:
        print("csparsemax not available")
    print()

    if not args.no_cold_start:
        print("Cold start in a new process with a warm numba cache "
              f"(median of {cold_samples}; tiny 4x16 input). deps = numpy + numba; "
              "pkg = sksparse_struct on top; numba init = first call of a trivial "
              "cached kernel; misses = kernels recompiled")
        print()
        header, rows, _ = bench_cold_start(m, cold_samples)
        print(rst_table(header, rows))
        print()


if __name__ == "__main__":
    main()
