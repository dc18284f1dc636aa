"""Time structured inference: MAP, marginals, SparseMAP (sksparse_struct).

Run from anywhere, in an environment where sksparse_struct is installed::

    python benchmarks/bench_inference.py            # full run (several minutes)
    python benchmarks/bench_inference.py --quick    # smoke run (about a minute)

What is measured (median over ``--repeats`` timed calls; every numba kernel
is compiled, or loaded from numba's cache, by a warm-up call first):

1. Maximum spanning arborescence: ``DependencyTree(projective=False,
   single_root=False).map`` (Chu-Liu-Edmonds / Tarjan) against
   ``networkx.maximum_spanning_arborescence`` on the equivalent complete
   digraph (root 0 with no incoming arc), at n = 10, 40, 100 words with
   N(0, 1) arc scores; both trees must have the same score. The single-root
   variant (``single_root=True``, which networkx has no equivalent of) is
   timed alongside.
2. Sequences (``Sequence``): Viterbi, forward-backward and the backward pass
   of the marginals, in tokens per second, for n = 25 positions and K = 22
   and 45 labels.
3. Dependency-tree marginals: matrix-tree theorem (non-projective) and
   inside-outside (projective), forward and backward, at n = 20, 50, 100,
   with the growth exponent fitted on a log-log scale (cubic algorithms
   approach 3; at these sizes constant and quadratic costs still weigh, so
   the fitted exponent is lower, markedly for the matrix-tree theorem whose
   cubic step is a fast LAPACK factorization).
4. SparseMAP on a non-projective tree (``single_root=False``) with N(0, 1) arc
   scores at n = 10, 20, 40, over several random instances: time per solve,
   iterations, support size, the final Wolfe gap and how far the objective
   is from the active set's, for the active set (Niculae 2018, PhD thesis,
   Alg. 1) and the three conditional-gradient variants, with the same
   ``max_iter`` (thesis Fig. 4.3: the active set reaches a far smaller gap
   in far fewer iterations). Alongside, the C++ active set of AD3
   (``FactorTree`` in a ``PFactorGraph``, a fresh factor per solve so that it
   does not warm-start from the previous solve) when the ``ad3`` module can
   be imported and offers ``solve_qp``; otherwise reference figures for
   AD3's C++ active set, measured on another machine, are printed, labelled
   as quoted, not measured.
5. Cold start: in fresh interpreters, after a warm-up process has filled
   numba's on-disk cache, the import time and the first and second
   SparseMAP calls (active set, n = 10 tree), with the number of numba cache
   misses in that process (should be 0).

A line whose piece of the package does not exist (yet) is skipped with a
message. The tables are printed as reStructuredText "simple tables", ready to
paste in ``doc/benchmarks.rst``.

Extra packages: ``networkx`` (section 1) and ``ad3`` (section 4). AD3 2.2.1
(the release pip picks) does not build on Python >= 3.11 as released; the
benchmark environment used for ``doc/benchmarks.rst`` builds it from the
source distribution after (a) regenerating its Cython files with
``cython<3`` (the shipped ones include ``longintrepr.h``), (b) adding the
missing ``return 0;`` at the end of ``FactorTree::RunCLE`` in
``examples/cpp/parsing/FactorTree.cpp`` (modern compilers turn the missing
return into a crash) and (c) exposing ``GenericFactor::SolveQP`` to Python as
``PGenericFactor.solve_qp(eta_u, eta_v, max_iter)`` returning
``(u, v, active_set, distribution)`` in ``python/ad3/base.pyx``; then::

    pip download --no-deps --no-binary :all: ad3 && tar xzf ad3-2.2.1.tar.gz
    # apply (b) and (c), then, in ad3-2.2.1/python/ad3:
    for f in base factor_graph extensions; do cython --cplus -2 $f.pyx -o $f.cpp; done
    # and in ad3-2.2.1 (with cython<3 installed):
    pip install --no-build-isolation .
"""

import argparse
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np

from _bench_utils import fmt, loglog_slope, machine_header, median_ms, rst_table

TREE_SIZES = [10, 40, 100]
SEQ_N = 25
SEQ_LABELS = [22, 45]
MARGINAL_SIZES = [20, 50, 100]
SPARSEMAP_SIZES = [10, 20, 40]
SPARSEMAP_METHODS = ["active_set", "frank_wolfe", "away_step", "pairwise"]
SPARSEMAP_MAX_ITER = 1000
# Reference figures for AD3's C++ active set, measured on another machine:
# ms per solve and mean support size at n = 10 / 20 / 40.
AD3_QUOTED = {10: (0.13, 15), 20: (1.07, 35), 40: (4.59, 40)}


# --------------------------------------------------------------------------
# availability
# --------------------------------------------------------------------------


def get_structure(name, **kwargs):
    """An instance of ``sksparse_struct.structures.<name>``, or None."""
    try:
        import sksparse_struct.structures as s
    except ImportError:
        return None
    cls = getattr(s, name, None)
    return None if cls is None else cls(**kwargs)


def get_inference(name):
    try:
        import sksparse_struct.inference as inf
    except ImportError:
        return None
    return getattr(inf, name, None)


def skip(what, why):
    print(f"skipped: {what} ({why})")
    print()


def fmt_ms(x):
    """Milliseconds: three decimals below 1 ms, three significant digits above."""
    return fmt(x, 3 if x is not None and x < 1 else 2)


def tree_scores(n, seed):
    """N(0, 1) scores of the arcs of an n-word sentence, (n+1) x (n+1)."""
    return np.random.default_rng(seed).standard_normal((n + 1, n + 1))


def tree_score(scores, heads):
    return float(sum(scores[heads[m], m] for m in range(1, len(heads))))


# --------------------------------------------------------------------------
# 1. Chu-Liu-Edmonds vs networkx
# --------------------------------------------------------------------------


def networkx_arborescence(nx, scores):
    """Heads of networkx's maximum spanning arborescence rooted at 0."""
    n = scores.shape[0] - 1
    g = nx.DiGraph()
    g.add_weighted_edges_from(
        (h, m, scores[h, m]) for h in range(n + 1) for m in range(1, n + 1) if h != m
    )
    tree = nx.maximum_spanning_arborescence(g, attr="weight")
    heads = np.full(n + 1, -1)
    for h, m in tree.edges():
        heads[m] = h
    return heads


def bench_cle(repeats):
    tree = get_structure("DependencyTree", projective=False, single_root=False)
    if tree is None:
        skip("Chu-Liu-Edmonds", "sksparse_struct.structures.DependencyTree not available")
        return
    single = get_structure("DependencyTree", projective=False, single_root=True)
    try:
        import networkx as nx
    except ImportError:
        nx = None
    header = ["n", "ours ms", "single-root ms", "networkx ms", "speed-up", "same score"]
    rows = []
    for n in TREE_SIZES:
        scores = tree_scores(n, seed=n)
        heads = tree.map(scores)
        single.map(scores)
        t_ours = median_ms(lambda: tree.map(scores), repeats)
        t_single = median_ms(lambda: single.map(scores), repeats)
        row = [n, fmt_ms(t_ours), fmt_ms(t_single), "-", "-", "-"]
        if nx is not None:
            nx_heads = networkx_arborescence(nx, scores)
            # networkx costs tens to hundreds of ms per call: fewer repeats.
            t_nx = median_ms(lambda: networkx_arborescence(nx, scores), max(1, min(repeats, 5)))
            same = abs(tree_score(scores, heads) - tree_score(scores, nx_heads)) < 1e-9
            row[3:] = [fmt(t_nx), fmt(t_nx / t_ours), "yes" if same else "NO"]
        rows.append(row)
    print("Maximum spanning arborescence, N(0,1) arc scores; ms per call; speed-up = "
          "networkx / ours (single_root=False, the problem networkx solves)")
    if nx is None:
        print("networkx not installed: its columns are empty (pip install networkx)")
    print()
    print(rst_table(header, rows))
    print()


# --------------------------------------------------------------------------
# 2. Viterbi and forward-backward
# --------------------------------------------------------------------------


def bench_sequence(repeats):
    seq = get_structure("Sequence")
    if seq is None:
        skip("Viterbi / forward-backward", "sksparse_struct.structures.Sequence not available")
        return
    has_bwd = hasattr(seq, "marginals_backward")
    header = ["K", "n", "Viterbi tok/s", "fwd-bwd tok/s", "marginals bwd tok/s",
              "Viterbi us", "fwd-bwd us", "bwd us"]
    rows = []
    for k in SEQ_LABELS:
        rng = np.random.default_rng(k)
        unary = rng.standard_normal((SEQ_N, k))
        trans = rng.standard_normal((k, k))
        start = rng.standard_normal(k)
        end = rng.standard_normal(k)
        d_unary = rng.standard_normal((SEQ_N, k))
        d_trans = rng.standard_normal((k, k))
        seq.map(unary, trans, start, end)
        seq.marginals(unary, trans, start, end)
        t_vit = median_ms(lambda: seq.map(unary, trans, start, end), repeats)
        t_fb = median_ms(lambda: seq.marginals(unary, trans, start, end), repeats)
        t_bwd = None
        if has_bwd:
            def backward():
                return seq.marginals_backward(unary, trans, start, end, d_unary, d_trans)
            backward()
            t_bwd = median_ms(backward, repeats)
        rows.append([
            k, SEQ_N,
            f"{SEQ_N / t_vit * 1e3:,.0f}",
            f"{SEQ_N / t_fb * 1e3:,.0f}",
            f"{SEQ_N / t_bwd * 1e3:,.0f}" if t_bwd else "-",
            fmt(1e3 * t_vit), fmt(1e3 * t_fb), fmt(1e3 * t_bwd) if t_bwd else "-",
        ])
    print("Linear chain (Sequence), one sentence per call, with start and end scores: "
          "tokens per second and microseconds per call")
    print()
    print(rst_table(header, rows))
    print()


# --------------------------------------------------------------------------
# 3. matrix-tree and inside-outside
# --------------------------------------------------------------------------


def bench_tree_marginals(repeats):
    variants = [("matrix-tree", False), ("inside-outside", True)]
    header = ["algorithm", "n", "fwd ms", "bwd ms", "MAP ms"]
    rows = []
    for label, projective in variants:
        tree = get_structure("DependencyTree", projective=projective, single_root=False)
        if tree is None or not getattr(tree, "has_marginals", False):
            skip(label, "DependencyTree marginals not available")
            continue
        has_bwd = hasattr(tree, "marginals_backward")
        if has_bwd:
            try:
                tree.marginals_backward(tree_scores(3, 0), np.ones((4, 4)))
            except Exception as exc:  # e.g. a piece still missing
                print(f"{label}: no backward pass ({type(exc).__name__}: {exc})")
                has_bwd = False
        fwd, bwd, maps = [], [], []
        for n in MARGINAL_SIZES:
            scores = tree_scores(n, seed=100 + n)
            d_marg = np.random.default_rng(n).standard_normal((n + 1, n + 1))
            tree.marginals(scores)
            tree.map(scores)
            t_f = median_ms(lambda: tree.marginals(scores), repeats)
            t_m = median_ms(lambda: tree.map(scores), repeats)
            t_b = None
            if has_bwd:
                tree.marginals_backward(scores, d_marg)
                t_b = median_ms(lambda: tree.marginals_backward(scores, d_marg), repeats)
            fwd.append(t_f)
            bwd.append(t_b)
            maps.append(t_m)
            rows.append([label, n, fmt_ms(t_f), fmt_ms(t_b), fmt_ms(t_m)])
        slope_b = fmt(loglog_slope(MARGINAL_SIZES, bwd)) if has_bwd else "-"
        rows.append([label, "exponent", fmt(loglog_slope(MARGINAL_SIZES, fwd)), slope_b,
                     fmt(loglog_slope(MARGINAL_SIZES, maps))])
    if not rows:
        return
    print("Dependency-tree marginals (single_root=False), N(0,1) arc scores; ms per call; "
          "'exponent' = least-squares slope of log time vs log n. MAP: Chu-Liu-Edmonds "
          "(matrix-tree rows) or Eisner (inside-outside rows)")
    print()
    print(rst_table(header, rows))
    print()


# --------------------------------------------------------------------------
# 4. SparseMAP: active set vs conditional gradients vs AD3
# --------------------------------------------------------------------------


def arc_marginals(result):
    marg = result.marginals
    return marg[0] if isinstance(marg, tuple) else marg


def ad3_status():
    """(solver or None, message)."""
    try:
        from ad3 import PFactorGraph
        from ad3.extensions import PFactorTree
    except ImportError as exc:
        return None, f"AD3 not importable ({exc})"
    if not hasattr(PFactorTree, "solve_qp"):
        return None, "this AD3 build does not expose solve_qp (see the module docstring)"

    def solve(scores, max_iter):
        n = scores.shape[0] - 1
        arcs = [(h, m) for m in range(1, n + 1) for h in range(n + 1) if h != m]
        graph = PFactorGraph()
        variables = [graph.create_binary_variable() for _ in arcs]
        factor = PFactorTree()
        graph.declare_factor(factor, variables)
        factor.initialize(n + 1, arcs)
        eta = [float(scores[h, m]) for h, m in arcs]
        t0 = time.perf_counter()
        u, _, active, dist = factor.solve_qp(eta, [], max_iter)
        elapsed = time.perf_counter() - t0
        marg = np.zeros_like(scores)
        for (h, m), val in zip(arcs, u):
            marg[h, m] = val
        support = sum(1 for p in dist if p > 0)
        return elapsed, marg, support

    return solve, "AD3 C++ active set (measured)"


def bench_sparsemap(repeats, n_instances):
    sparsemap = get_inference("sparsemap")
    tree = get_structure("DependencyTree", projective=False, single_root=False)
    if sparsemap is None or tree is None:
        skip("SparseMAP", "sparsemap or DependencyTree not available")
        return
    ad3_solve, ad3_msg = ad3_status()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in SPARSEMAP_METHODS:  # compile every solver's kernels first
            try:
                sparsemap(tree, tree_scores(4, 0), method=method, max_iter=50)
            except Exception:  # reported in the table below
                pass
    header = ["n", "method", "ms/solve", "iterations", "support", "gap (median)",
              "gap (max)", "obj. below AS", "max |u - u_AS|"]
    rows = []
    for n in SPARSEMAP_SIZES:
        instances = [tree_scores(n, seed=1000 * n + i) for i in range(n_instances)]
        reference = {}
        for method in SPARSEMAP_METHODS:
            times, iters, supports, gaps, obj_diff, u_diff = [], [], [], [], [], []
            try:
                for i, scores in enumerate(instances):
                    with warnings.catch_warnings():
                        # The CG variants hit max_iter on purpose (that is the
                        # point of the comparison); their gap is in the table.
                        warnings.simplefilter("ignore")
                        t0 = time.perf_counter()
                        res = sparsemap(tree, scores, method=method,
                                        max_iter=SPARSEMAP_MAX_ITER)
                        elapsed = 1e3 * (time.perf_counter() - t0)
                        # The CG variants take 10 ms to 10 s per solve: the
                        # single (warm: same kernels) solve is timed as is.
                        if method == "active_set":
                            elapsed = median_ms(
                                lambda: sparsemap(tree, scores, method=method,
                                                  max_iter=SPARSEMAP_MAX_ITER),
                                repeats)
                        times.append(elapsed)
                    u = arc_marginals(res)
                    if method == "active_set":
                        reference[i] = (u, getattr(res, "objective", None))
                    ref_u, ref_obj = reference[i]
                    iters.append(res.n_iter)
                    supports.append(len(res.support))
                    gaps.append(res.gap)
                    u_diff.append(float(np.abs(u - ref_u).max()))
                    obj = getattr(res, "objective", None)
                    if obj is not None and ref_obj is not None:
                        obj_diff.append(ref_obj - obj)
            except Exception as exc:  # report and go on with the other methods
                rows.append([n, method, f"error: {type(exc).__name__}: {exc}"] + [""] * 6)
                continue
            rows.append([
                n, method, fmt_ms(np.median(times)), fmt(np.mean(iters), 1),
                fmt(np.mean(supports), 1), f"{np.median(gaps):.1e}", f"{np.max(gaps):.1e}",
                f"{np.max(obj_diff):.1e}" if obj_diff else "-",
                f"{np.max(u_diff):.1e}" if method != "active_set" else "",
            ])
        if ad3_solve is not None and reference:
            times, supports, u_diff = [], [], []
            for i, scores in enumerate(instances):
                ad3_solve(scores, SPARSEMAP_MAX_ITER)  # warm-up
                runs = [ad3_solve(scores, SPARSEMAP_MAX_ITER) for _ in range(repeats)]
                times.append(1e3 * np.median([r[0] for r in runs]))
                supports.append(runs[-1][2])
                u_diff.append(float(np.abs(runs[-1][1] - reference[i][0]).max()))
            rows.append([n, "AD3 (measured)", fmt_ms(np.median(times)), "-",
                         fmt(np.mean(supports), 1), "-", "-", "-", f"{np.max(u_diff):.1e}"])
        elif n in AD3_QUOTED:
            ms, sup = AD3_QUOTED[n]
            rows.append([n, "AD3 (quoted, not measured)", fmt(ms), "-", fmt(sup, 1),
                         "-", "-", "-", "-"])
    print(f"SparseMAP on a non-projective tree (single_root=False), N(0,1) arc scores, "
          f"{n_instances} random instances per n, max_iter={SPARSEMAP_MAX_ITER} for every "
          "method, default tol. ms/solve: median over instances of the time per "
          "solve (median of the repeats for the active set and AD3, one solve for "
          "CG); iterations and support: means; gap: final Wolfe gap; obj. below "
          "AS: largest amount by which the objective falls short of the active set's; "
          "u_AS: the active set's arc posteriors")
    print(ad3_msg if ad3_solve is not None else
          f"{ad3_msg}: AD3 rows are reference figures measured on another machine, "
          "not measured here")
    print()
    print(rst_table(header, rows))
    print()


# --------------------------------------------------------------------------
# 5. cold start
# --------------------------------------------------------------------------

_COLD_SNIPPET = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import numba
t1 = time.perf_counter()
from sksparse_struct.structures import DependencyTree
from sksparse_struct.inference import sparsemap
t2 = time.perf_counter()
sys.path.insert(0, {bench_dir!r})
from _bench_utils import numba_cache_misses
scores = np.random.default_rng(0).standard_normal((11, 11))
tree = DependencyTree(projective=False, single_root=False)
t3 = time.perf_counter()
sparsemap(tree, scores)
t4 = time.perf_counter()
sparsemap(tree, scores)
t5 = time.perf_counter()
print(json.dumps({{"deps": t1 - t0, "import": t2 - t1, "first": t4 - t3,
                  "second": t5 - t4, "misses": numba_cache_misses()}}))
"""


def run_cold():
    bench_dir = os.path.dirname(os.path.abspath(__file__))
    code = _COLD_SNIPPET.format(bench_dir=bench_dir)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench_cold_start(samples):
    if get_inference("sparsemap") is None or get_structure("DependencyTree") is None:
        skip("cold start", "sparsemap or DependencyTree not available")
        return
    run_cold()  # fills numba's cache if needed
    runs = [run_cold() for _ in range(samples)]
    med = {key: float(np.median([r[key] for r in runs])) for key in runs[0]}
    header = ["deps import s", "pkg import s", "1st sparsemap ms", "2nd sparsemap ms",
              "misses"]
    rows = [[fmt(med["deps"]), fmt(med["import"]), fmt(1e3 * med["first"]),
             fmt_ms(1e3 * med["second"]), str(max(r["misses"] for r in runs))]]
    print(f"Cold start in a new process with a warm numba cache (median of {samples}): "
          "SparseMAP (active set) on a 10-word non-projective tree. deps = numpy + numba; "
          "pkg = sksparse_struct.structures and .inference on top; the first call "
          "includes numba's one-time runtime set-up; misses = kernels recompiled")
    print()
    print(rst_table(header, rows))
    print()


# --------------------------------------------------------------------------


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed runs per measurement (median is reported); "
                        "default 15, or 3 with --quick")
    parser.add_argument("--quick", action="store_true",
                        help="few repeats, few SparseMAP instances, one cold-start sample")
    parser.add_argument("--no-cold-start", action="store_true",
                        help="skip the cold-start subprocess measurements")
    args = parser.parse_args(argv)
    repeats = args.repeats or (3 if args.quick else 15)
    n_instances = 3 if args.quick else 10
    cold_samples = 1 if args.quick else 3

    for line in machine_header():
        print(line)
    for mod in ("networkx", "ad3"):
        try:
            from importlib.metadata import version

            print(f"{mod} {version(mod)}")
        except Exception:  # not installed
            print(f"{mod}: not installed")
    print(f"repeats: {repeats} (median reported), float64 throughout")
    print()

    sections = [
        ("Chu-Liu-Edmonds vs networkx", lambda: bench_cle(repeats)),
        ("Viterbi / forward-backward", lambda: bench_sequence(repeats)),
        ("tree marginals", lambda: bench_tree_marginals(repeats)),
        ("SparseMAP", lambda: bench_sparsemap(repeats, n_instances)),
    ]
    if not args.no_cold_start:
        sections.append(("cold start", lambda: bench_cold_start(cold_samples)))
    for name, run in sections:
        try:
            run()
        except Exception as exc:  # a piece that fails must not hide the others
            skip(name, f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main()
