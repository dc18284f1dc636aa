"""SparseMAP on long sentences: time, memory and convergence of the active set.

Run from anywhere, in an environment where sksparse_struct is installed::

    python benchmarks/bench_sparsemap_long.py              # n = 50 ... 1000
    python benchmarks/bench_sparsemap_long.py --sizes 50 100 200
    python benchmarks/bench_sparsemap_long.py --no-parser  # random scores only

What is measured, for ``sparsemap(DependencyTree(), scores)`` (non-projective,
single root, the default active set with its default ``max_iter`` and
``tol``) at n = 50, 100, 200, 500, 1000 words:

- wall-clock time of one solve (the kernels are compiled, or loaded from
  numba's cache, by a solve on a 5-word sentence first);
- peak memory allocated during the solve (``tracemalloc``, which sees
  numpy's allocations and those of numba's compiled code; the scores
  themselves are allocated before), in a second, traced solve;
- iterations, support size, whether the gap reached the tolerance, and the
  final Wolfe gap.

Two kinds of scores:

``normal``
    N(0, 1) arc scores (seed = n).
``parser``
    Realistic scores: a ``SparseMAPParser`` (5 epochs) is trained on the
    bundled sample of UD English-EWT, and scores "sentences" of n words made
    by concatenating the sample's sentences (test, then train) in order.
    Skipped with ``--no-parser``.

Every solve runs in a fresh process (so that one size's peak memory does not
hide the next one's, and a solve that runs out of memory does not stop the
benchmark); ``--timeout`` seconds per solve (default 1800). The table is
printed as a reStructuredText simple table, ready for ``doc/benchmarks.rst``.
To compare two versions of the package, run the script with each on
``PYTHONPATH``.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from _bench_utils import fmt, machine_header, rst_table

SIZES = [50, 100, 200, 500, 1000]
PARSER_EPOCHS = 5

_SOLVE = r"""
import json, sys, time, tracemalloc, warnings
import numpy as np
from sksparse_struct.inference import sparsemap
from sksparse_struct.structures import DependencyTree
scores = np.load({path!r})[{key!r}]
tree = DependencyTree()
sparsemap(tree, np.random.default_rng(0).standard_normal((6, 6)))  # compile / load
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    res = sparsemap(tree, scores)
    seconds = time.perf_counter() - t0
    del res
    tracemalloc.start()
    res = sparsemap(tree, scores)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
print(json.dumps({{
    "seconds": seconds, "peak_mb": peak / 2**20,
    "n_iter": res.n_iter, "support": len(res.probabilities),
    "converged": res.converged, "gap": res.gap, "objective": res.objective,
}}))
"""


def normal_scores(n):
    return np.random.default_rng(n).standard_normal((n + 1, n + 1))


def parser_scores(sizes):
    """Arc scores of a parser trained on the bundled sample, on long "sentences"."""
    from sksparse_struct.datasets import load_ewt_sample
    from sksparse_struct.parsing import SparseMAPParser

    X_train, y_train = load_ewt_sample("train", return_X_y=True, target="tree")
    X_test, _ = load_ewt_sample("test", return_X_y=True, target="tree")
    parser = SparseMAPParser(max_iter=PARSER_EPOCHS, random_state=0)
    parser.fit(X_train, y_train)
    tokens = [tok for sentence in list(X_test) + list(X_train) for tok in sentence]
    out = {}
    for n in sizes:
        (S,) = parser.decision_function([tokens[:n]])
        out[n] = S
    return out


def solve_in_subprocess(path, key, timeout):
    code = _SOLVE.format(path=path, key=key)
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout} s"}
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        reason = lines[-1] if lines else f"exit code {proc.returncode}"
        if proc.returncode < 0:
            reason = f"killed by signal {-proc.returncode} (out of memory?)"
        return {"error": reason}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    parser.add_argument("--no-parser", action="store_true",
                        help="only N(0, 1) scores (no parser is trained)")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds allowed per solve")
    args = parser.parse_args(argv)

    for line in machine_header():
        print(line)
    print()

    kinds = {"normal": {n: normal_scores(n) for n in args.sizes}}
    if not args.no_parser:
        kinds["parser"] = parser_scores(args.sizes)
    header = ["scores", "n", "seconds", "peak MB", "iterations", "support", "converged",
              "gap"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "scores.npz")
        np.savez(path, **{f"{kind}_{n}": S for kind, by_n in kinds.items()
                          for n, S in by_n.items()})
        for kind, by_n in kinds.items():
            for n in by_n:
                r = solve_in_subprocess(path, f"{kind}_{n}", args.timeout)
                if "error" in r:
                    rows.append([kind, n, r["error"]] + [""] * 5)
                else:
                    rows.append([kind, n, fmt(r["seconds"]), fmt(r["peak_mb"]),
                                 r["n_iter"], r["support"],
                                 "yes" if r["converged"] else "NO", f"{r['gap']:.1e}"])
                print(" ".join(map(str, rows[-1])), file=sys.stderr, flush=True)
    print("sparsemap(DependencyTree(), scores): non-projective, single root, active set "
          "with the default max_iter and tol; one solve per row in a fresh process. "
          "seconds: wall clock of the solve; peak MB: largest memory allocated during "
          "the solve (tracemalloc); gap: final Wolfe gap")
    print()
    print(rst_table(header, rows))


if __name__ == "__main__":
    main()
