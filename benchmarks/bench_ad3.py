"""AD3 against the HiGHS LP on CDCP-shaped argument graphs.

One factor graph per document of the CDCP test split (its number of
propositions counted from ``prop_offsets`` of ``<id>.ann.json``, no
normalisation), with the strict CDCP model: five labels, a dense
compatibility factor per candidate link, co-parent and sibling pair factors,
antisymmetry and transitivity, and the ten illegal label pairs. Potentials
are synthetic but shaped like a trained model's (and, with
``--trained-passes N``, also those of a strict model trained for N passes on
the training split, the strict rules inside the compatibility factors as
the estimator builds them): proposition scores
N(0, 1) plus 2 on a preferred label, link on-scores N(-3, 1.5) (N(1, 1.5) on
the few "gold" links), compatibility scores from a shared tensor and the
link's two compatibility features, small pair scores. The strict rules are
implication factors, or (``strict in compat``) forbidden configurations of
the compatibility factors (same MAP, tighter LP). With ``cost``, the
scores are loss-augmented as in training (+1 on every non-gold label and on
gold-off links, -30 on gold-on links, i.e. +30 on their "off" state).

For each setting the table gives the time per document (median, max), the
total, the ratio HiGHS / AD3 and the largest relative difference of the LP
objectives. The cold numba compile time of the AD3 kernels is measured in a
fresh process with an empty ``NUMBA_CACHE_DIR``.

Usage: ``python benchmarks/bench_ad3.py [--data DIR] [--out FILE]``; the
data folder holds ``cdcp/test/*.ann.json`` (default:
``$SKSPARSE_STRUCT_SHARED_DATA``).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _bench_utils import fmt, machine_header, rst_table

LABELS = ["fact", "policy", "reference", "testimony", "value"]
# most objective first; a link from a less objective source is illegal
OBJECTIVITY = {"reference": 0, "testimony": 1, "fact": 2, "value": 3, "policy": 4}
ILLEGAL = [(i, j) for i, a in enumerate(LABELS) for j, b in enumerate(LABELS)
           if OBJECTIVITY[a] > OBJECTIVITY[b]]


def default_data_dir():
    env = os.environ.get("SKSPARSE_STRUCT_SHARED_DATA")
    return Path(env) if env else None


def document_sizes(data_dir):
    sizes = []
    for path in sorted((Path(data_dir) / "cdcp" / "test").glob("*.ann.json")):
        with open(path) as f:
            sizes.append(len(json.load(f)["prop_offsets"]))
    return sizes


def candidates(n):
    pairs = np.array([(s, t) for s in range(n) for t in range(n) if s != t],
                     dtype=np.int64).reshape(-1, 2)
    by_source = {}
    for k, (s, t) in enumerate(pairs):
        by_source.setdefault(s, []).append(t)
    triples = [(a, b, c) for a, b in pairs for c in by_source.get(b, []) if c != a]
    return pairs, np.array(triples, dtype=np.int64).reshape(-1, 3)


def make_problem(n, rng, tensors, cost, pair_sd=0.2, strict_in_compat=False):
    from sksparse_struct.argument_mining._graph import build_argument_graph

    K = len(LABELS)
    pairs, triples = candidates(n)
    ag = build_argument_graph(n, K, pairs, triples, constraints="cdcp",
                              second_order=("coparent", "sibling"), illegal_label_pairs=ILLEGAL,
                              strict_in_compat=strict_in_compat)
    fg = ag.graph
    theta = np.zeros(fg.n_variables)
    preferred = rng.integers(K, size=n)
    prop = rng.normal(size=(n, K)) + 2.0 * np.eye(K)[preferred]
    gold_on = rng.random(pairs.shape[0]) < 0.07
    link = np.where(gold_on, rng.normal(1.0, 1.5, pairs.shape[0]),
                    rng.normal(-3.0, 1.5, pairs.shape[0]))
    if cost:
        gold_label = np.where(rng.random(n) < 0.8, preferred, rng.integers(K, size=n))
        prop = prop + 1.0 - np.eye(K)[gold_label]
        link = link + np.where(gold_on, -30.0, 1.0)
    theta[ag.prop_vars] = prop
    theta[ag.link_vars] = link
    fs = np.zeros(fg.n_factor_scores)
    bias, adj, order = tensors
    is_adj = (np.abs(pairs[:, 0] - pairs[:, 1]) == 1).astype(float)
    is_order = (pairs[:, 0] < pairs[:, 1]).astype(float)
    compat = bias[None] + is_adj[:, None] * adj[None] + is_order[:, None] * order[None]
    fs[ag.compat_offsets[:, None] + np.arange(2 * K * K)] = compat
    for off in ag.pair_offsets.values():
        fs[off] = rng.normal(-0.1, pair_sd, off.shape[0])
    return fg, theta, fs


def problems(sizes, cost, seed=0, strict_in_compat=False):
    rng = np.random.default_rng(seed)
    K = len(LABELS)
    tensors = tuple(rng.normal(0.0, 0.3, 2 * K * K) for _ in range(3))
    out = []
    for n in sizes:
        fg, theta, fs = make_problem(n, rng, tensors, cost, strict_in_compat=strict_in_compat)
        fg.compile()
        out.append((fg, theta, fs))
    return out


def trained_problems(data_dir, passes, max_props):
    """The strict graphs of the CDCP test documents, scored by a trained model.

    Trains ``StructuredSVMArgumentMiner()`` (strict, the library's defaults)
    for ``passes`` passes on the training split, then scores the graphs of
    the test documents with at most ``max_props`` propositions, as
    ``predict`` does (plain) and as training does (cost-augmented against
    the gold structure). Returns ``{cost: [(graph, theta, fs)]}`` and the
    number of documents.
    """
    from sksparse_struct import StructuredSVMArgumentMiner
    from sksparse_struct.argument_mining._problem import ArgumentProblem
    from sksparse_struct.datasets import read_cdcp
    from sksparse_struct.feature_extraction import ArgumentFeatures

    X_train, y_train = read_cdcp(Path(data_dir) / "cdcp" / "train")
    X_test, y_test = read_cdcp(Path(data_dir) / "cdcp" / "test")
    features = ArgumentFeatures().fit(X_train, y_train)
    miner = StructuredSVMArgumentMiner(max_iter=passes, random_state=0)
    miner.fit(features.transform(X_train), y_train)
    test = features.transform(X_test)
    keep = [d for d, doc in enumerate(test) if doc.props.shape[0] <= max_props]
    docs = [test[d] for d in keep]
    targets = miner._targets([y_test[d] for d in keep], docs, miner.classes_)
    graphs = [miner._graph(doc) for doc in docs]
    problem = ArgumentProblem(docs, targets, graphs, miner.layout_, miner.link_cost_, {})
    out = {}
    for cost in (False, True):
        out[cost] = []
        for i, graph in enumerate(graphs):
            theta, fs = problem.scores(miner.coef_, i, cost_augmented=cost)
            graph.graph.compile()
            out[cost].append((graph.graph, theta, fs))
    return out, len(keep)


def time_highs(probs):
    from sksparse_struct.inference import highs_lp

    times, values = [], []
    for fg, theta, fs in probs:
        t0 = time.perf_counter()
        values.append(highs_lp(fg, theta, fs).primal)
        times.append(time.perf_counter() - t0)
    return np.array(times), np.array(values)


def time_ad3(probs, tol, gap_tol=None):
    from sksparse_struct.inference import ad3

    times, values, iters, integral, converged = [], [], [], 0, 0
    for fg, theta, fs in probs:
        t0 = time.perf_counter()
        r = ad3(fg, theta, fs, tol=tol, gap_tol=gap_tol)
        times.append(time.perf_counter() - t0)
        values.append(r.primal)
        iters.append(r.n_iter)
        integral += r.integral
        converged += r.converged
    return np.array(times), np.array(values), np.array(iters), integral, converged


def cold_compile_seconds():
    code = ("import time, numpy as np\n"
            "t = time.perf_counter()\n"
            "from sksparse_struct.inference import FactorGraph, ad3, ad3_map\n"
            "fg = FactorGraph(4); fg.add_xor([0, 1]); fg.add_or([1, 2], [True, False])\n"
            "fg.add_at_most_one([2, 3]); fg.add_dense([0, 3], [[0, 0], [1, 1]])\n"
            "fg.add_pair(0, 2)\n"
            "ad3_map(fg, np.ones(4), np.zeros(fg.n_factor_scores))\n"
            "import resource; r = resource.getrusage(resource.RUSAGE_SELF)\n"
            "print(time.perf_counter() - t, r.ru_utime + r.ru_stime)\n")
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True)
    wall, cpu = out.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="folder holding cdcp/test")
    parser.add_argument("--out", default=None, help="also write the report to this file")
    parser.add_argument("--tol", default="1e-6,1e-5,1e-4",
                        help="AD3 residual tolerances (comma separated)")
    parser.add_argument("--gap-tol", default="1e-4",
                        help="AD3 gap tolerances (comma separated; with the first tol)")
    parser.add_argument("--max-props", type=int, default=16,
                        help="largest document (in propositions) given to HiGHS")
    parser.add_argument("--trained-passes", type=int, default=15,
                        help="also time the graphs scored by a strict model trained for this "
                        "many passes on the training split (0: skip)")
    args = parser.parse_args()
    data_dir = Path(args.data) if args.data else default_data_dir()
    if data_dir is None or not (data_dir / "cdcp" / "test").is_dir():
        print("skipped: no CDCP data; pass --data DIR or set SKSPARSE_STRUCT_SHARED_DATA")
        return
    tols = [float(t) for t in args.tol.split(",")]
    gaps = [float(t) for t in args.gap_tol.split(",")] if args.gap_tol else []
    all_sizes = document_sizes(data_dir)
    sizes = [n for n in all_sizes if n <= args.max_props]
    big = [n for n in all_sizes if n > args.max_props]
    lines = machine_header()
    lines.append(f"{len(sizes)} of the {len(all_sizes)} CDCP test documents (those with at most "
                 f"{args.max_props} propositions: {sum(sizes)} propositions, mean "
                 f"{np.mean(sizes):.1f}, median {int(np.median(sizes))}); strict CDCP graphs; "
                 f"AD3 eta=0.1 adaptive, max_iter=5000")
    time_ad3(problems(sizes[:3], False), 1e-6)  # load the cached kernels
    rows = []
    for cost, in_compat in ((False, False), (True, False), (False, True), (True, True)):
        name = ("cost-augmented" if cost else "plain") + (
            ", strict in compat" if in_compat else "")
        probs = problems(sizes, cost, strict_in_compat=in_compat)
        th, ref = time_highs(probs)
        rows.append([name, "HiGHS LP", fmt(1e3 * np.median(th)), fmt(1e3 * th.max()),
                     fmt(th.sum()), "1", "", "", "", ""])
        for tol, gap in [(t, None) for t in tols] + [(tols[0], g) for g in gaps]:
            ta, val, iters, integral, converged = time_ad3(probs, tol, gap)
            rel = np.abs(val - ref) / np.maximum(1.0, np.abs(ref))
            label = f"AD3 tol={tol:g}" + (f" gap_tol={gap:g}" if gap else "")
            rows.append([name, label, fmt(1e3 * np.median(ta)),
                         fmt(1e3 * ta.max()), fmt(ta.sum()), fmt(th.sum() / ta.sum()),
                         f"{rel.max():.1e}", f"{int(np.median(iters))} / {iters.max()}",
                         f"{integral}/{len(sizes)}", f"{converged}/{len(sizes)}"])
        print(rst_table(["potentials", "solver", "median ms/doc", "max ms/doc", "total s",
                         "speed-up", "max rel. obj. diff", "AD3 iter (median / max)",
                         "integral", "converged"], rows[-1 - len(tols) - len(gaps):]),
              flush=True)
    if args.trained_passes:
        trained, n_docs = trained_problems(data_dir, args.trained_passes, args.max_props)
        for cost in (False, True):
            name = f"trained ({args.trained_passes} passes)" + (", cost-augmented" if cost
                                                                 else "")
            probs = trained[cost]
            th, ref = time_highs(probs)
            rows.append([name, "HiGHS LP", fmt(1e3 * np.median(th)), fmt(1e3 * th.max()),
                         fmt(th.sum()), "1", "", "", "", ""])
            for tol in tols:
                ta, val, iters, integral, converged = time_ad3(probs, tol)
                rel = np.abs(val - ref) / np.maximum(1.0, np.abs(ref))
                rows.append([name, f"AD3 tol={tol:g}", fmt(1e3 * np.median(ta)),
                             fmt(1e3 * ta.max()), fmt(ta.sum()), fmt(th.sum() / ta.sum()),
                             f"{rel.max():.1e}", f"{int(np.median(iters))} / {iters.max()}",
                             f"{integral}/{n_docs}", f"{converged}/{n_docs}"])
            print(rst_table(["potentials", "solver", "median ms/doc", "max ms/doc", "total s",
                             "speed-up", "max rel. obj. diff", "AD3 iter (median / max)",
                             "integral", "converged"], rows[-1 - len(tols):]), flush=True)
    table = rst_table(["potentials", "solver", "median ms/doc", "max ms/doc", "total s",
                       "speed-up", "max rel. obj. diff", "AD3 iter (median / max)",
                       "integral", "converged"], rows)
    lines += ["", table, ""]
    if big:
        for cost in (False, True):
            ta, _, iters, integral, converged = time_ad3(problems(big, cost), tols[0])
            lines.append(
                f"AD3 alone (tol={tols[0]:g}, {'cost-augmented' if cost else 'plain'}) on the "
                f"{len(big)} larger documents ({min(big)}-{max(big)} propositions): median "
                f"{fmt(1e3 * np.median(ta))} ms, max {fmt(1e3 * ta.max())} ms, total "
                f"{fmt(ta.sum())} s, iterations median {int(np.median(iters))}, "
                f"{integral} integral, {converged} converged")
    wall, cpu = cold_compile_seconds()
    lines.append(f"cold start (fresh process, empty NUMBA_CACHE_DIR: import, compile, one "
                 f"ad3_map call): {wall:.1f} s wall, {cpu:.1f} s CPU")
    report = "\n".join(lines)
    print(report)
    if args.out:
        Path(args.out).write_text(report + "\n")


if __name__ == "__main__":
    main()
