"""AD3 against the HiGHS LP on CDCP-shaped argument graphs, or against C++ AD3.

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

``--families`` instead compares LP-MAP with the C++ AD3 library (Martins et
al.; its ``ad3`` Python bindings) on several graph families: a tiny graph
(one XOR over 3 variables: the per-call overhead), Ising-like grids,
argument-mining graphs and dependency trees with grandparent pair factors.
Each graph is written once as a neutral description (binary variables and
their scores, one-of-K groups, logic, pair, dense and tree factors), from
which this process builds a :class:`~sksparse_struct.inference.FactorGraph`
and a subprocess in the environment holding ``ad3`` (``--ad3-python``,
default ``$AD3_PYTHON`` or ``/work/ad3env/bin/python``) builds AD3's
``PFactorGraph``; both solve it with eta 0.1, adaptive eta, the same
``max_iter`` and residual threshold 1e-6, and the objectives are compared.
``ad3`` 2.2.1 builds on Python 3.11 from its source distribution once its
Cython files are regenerated with ``cython<3`` (``cython --cplus -2 -I.
*.pyx`` in ``python/ad3``) and ``return 0;`` is added at the end of
``FactorTree::RunCLE`` (``examples/cpp/parsing/FactorTree.cpp``; without it
the tree factor crashes), then ``pip install --no-build-isolation .`` in a
separate virtual environment::

    python benchmarks/bench_ad3.py --families --out benchmarks/results/bench_ad3_cpp.txt
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


def cold_compile_seconds(tree=False):
    """Wall and CPU seconds of a fresh process (empty ``NUMBA_CACHE_DIR``) solving one graph.

    With ``tree``, ``ad3`` on a graph with a dependency-tree factor (and a
    pair and an XOR factor): the structure factors' machinery compiles too.
    """
    if tree:
        solve = ("from sksparse_struct.structures import DependencyTree\n"
                 "arcs = [(h, m) for m in range(1, 6) for h in range(6) if h != m]\n"
                 "fg = FactorGraph(len(arcs) + 1)\n"
                 "fg.add_structure(DependencyTree(single_root=False), list(range(len(arcs))),"
                 " np.zeros((6, 6)))\n"
                 "fg.add_pair(0, len(arcs)); fg.add_xor([1, len(arcs)])\n"
                 "ad3(fg, np.ones(fg.n_variables), np.zeros(fg.n_factor_scores))\n")
    else:
        solve = ("fg = FactorGraph(4); fg.add_xor([0, 1]); fg.add_or([1, 2], [True, False])\n"
                 "fg.add_at_most_one([2, 3]); fg.add_dense([0, 3], [[0, 0], [1, 1]])\n"
                 "fg.add_pair(0, 2)\n"
                 "ad3_map(fg, np.ones(4), np.zeros(fg.n_factor_scores))\n")
    code = ("import time, numpy as np\n"
            "t = time.perf_counter()\n"
            "from sksparse_struct.inference import FactorGraph, ad3, ad3_map\n"
            + solve +
            "import resource; r = resource.getrusage(resource.RUSAGE_SELF)\n"
            "print(time.perf_counter() - t, r.ru_utime + r.ru_stime)\n")
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True)
    wall, cpu = out.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


# -- LP-MAP against the C++ AD3 library, on several graph families -----------

#: Run by the Python that holds ``ad3`` (a separate environment), driven
#: through its stdin: builds a graph description (a JSON file) as a
#: ``PFactorGraph`` and times blocks of ``solve_lp_map_ad3`` calls, answering
#: one ``RESULT {json}`` line per command.
_CPP_WORKER = r'''
import json, os, re, sys, tempfile, time
from ad3 import PFactorGraph

def build(d, s):
    g = PFactorGraph()
    scores = d["var_scores"]
    var = [None] * len(scores)
    multis = []
    for group in d["groups"]:
        mv = g.create_multi_variable(len(group))
        multis.append(mv)
        for k, i in enumerate(group):
            var[i] = mv.get_state(k)
    for i in range(len(var)):
        if var[i] is None:
            var[i] = g.create_binary_variable()
        var[i].set_log_potential(float(scores[i]))
    for kind, vs, neg in d["logic"]:
        g.create_factor_logic(kind, [var[i] for i in vs], [bool(x) for x in neg])
    for x, y, sc in d["pairs"]:
        g.create_factor_pair([var[int(x)], var[int(y)]], float(sc))
    for groups, sc in d["dense"]:
        g.create_factor_dense([multis[k] for k in groups], [float(x) for x in sc])
    keep = [var, multis]
    if d.get("tree"):
        from ad3.extensions import PFactorTree
        length, arcs, vs = d["tree"]
        tree = PFactorTree()
        g.declare_factor(tree, [var[i] for i in vs])
        tree.initialize(length, [tuple(a) for a in arcs])
        keep.append(tree)
    g.set_eta_ad3(s["eta"])
    g.adapt_eta_ad3(True)
    g.set_max_iterations_ad3(s["max_iter"])
    g.set_residual_threshold_ad3(s["tol"])
    return g, keep

def iterations(g):
    # AD3 prints its iteration count at verbosity 2 (to C++ stdout)
    sys.stdout.flush()
    with tempfile.TemporaryFile(mode="w+") as f:
        saved = os.dup(1)
        os.dup2(f.fileno(), 1)
        try:
            g.set_verbosity(2)
            g.solve_lp_map_ad3()
            g.set_verbosity(0)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        f.seek(0)
        m = re.findall(r"Solution value after (\d+) iterations \(AD3\)", f.read())
    return int(m[-1]) if m else -1

s = json.loads(sys.argv[1])
g = keep = None
for line in sys.stdin:  # "load PATH" builds and solves once; "time SECONDS" times a block
    cmd, arg = line.split(None, 1)
    if cmd == "load":
        with open(arg.strip()) as f:
            d = json.load(f)
        t0 = time.perf_counter()
        g, keep = build(d, s)
        build_s = time.perf_counter() - t0
        value, post, add, status = g.solve_lp_map_ad3()
        out = dict(value=value, status=status, iters=iterations(g), build_s=build_s)
    else:
        times, cpu = [], []
        start = time.perf_counter()
        while len(times) < s["min_reps"] or (time.perf_counter() - start < float(arg)
                                             and len(times) < s["max_reps"]):
            t0, c0 = time.perf_counter(), time.process_time()
            g.solve_lp_map_ad3()
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        out = dict(times=times, cpu=cpu)
    print("RESULT " + json.dumps(out), flush=True)
'''


def _one_hot_configurations(sizes):
    """Rows of one-hot blocks, one per joint state, the last group fastest (AD3's order)."""
    import itertools

    rows = []
    for states in itertools.product(*[range(k) for k in sizes]):
        row = np.zeros(sum(sizes), dtype=np.uint8)
        start = 0
        for k, st in zip(sizes, states):
            row[start + st] = 1
            start += k
        rows.append(row)
    return np.array(rows)


def family_graph_ours(d):
    """A ``FactorGraph`` and its scores from a neutral graph description."""
    from sksparse_struct.inference import FactorGraph
    from sksparse_struct.structures import DependencyTree

    theta = np.asarray(d["var_scores"], dtype=float)
    fg = FactorGraph(theta.shape[0])
    fill = []
    logic = {}
    for kind, vs, neg in d["logic"]:
        rows = logic.setdefault((kind, len(vs)), ([], []))
        rows[0].append(vs)
        rows[1].append(neg)
    for (kind, _), (V, N) in logic.items():
        V, N = np.array(V, dtype=np.int64), np.array(N, dtype=bool)
        if kind in ("XOR", "ATMOSTONE"):
            assert not N.any()
            (fg.add_xors if kind == "XOR" else fg.add_at_most_ones)(V)
        elif kind == "OR":
            fg.add_ors(V, N)
        elif kind == "IMPLY":
            fg.add_implications(V[:, :-1], V[:, -1], N)
        else:
            raise ValueError(kind)
    if d["pairs"]:
        P = np.array(d["pairs"], dtype=float)
        fill.append((fg.add_pairs(P[:, :2].astype(np.int64)), P[:, 2:3]))
    groups = d["groups"]
    dense = {}
    for gs, sc in d["dense"]:
        rows = dense.setdefault(tuple(len(groups[k]) for k in gs), ([], []))
        rows[0].append(np.concatenate([groups[k] for k in gs]))
        rows[1].append(sc)
    for sizes, (V, S) in dense.items():
        off = fg.add_denses(np.array(V, dtype=np.int64), _one_hot_configurations(sizes))
        fill.append((off, np.array(S, dtype=float)))
    if d.get("tree"):
        length, arcs, vs = d["tree"]
        fg.add_structure(DependencyTree(single_root=False), vs, np.zeros((length, length)))
    fs = np.zeros(fg.n_factor_scores)
    for off, S in fill:
        fs[off[:, None] + np.arange(S.shape[1])] = S
    fg.compile()
    return fg, theta, fs


def _graph(n_vars, rng):
    return dict(var_scores=rng.normal(size=n_vars).tolist(), groups=[], logic=[], pairs=[],
                dense=[], tree=None)


def family_tiny(rng):
    d = _graph(3, rng)
    d["logic"].append(["XOR", [0, 1, 2], [False] * 3])
    return d


def family_grid(side, rng):
    d = _graph(side * side, rng)
    idx = np.arange(side * side).reshape(side, side)
    edges = np.concatenate([np.column_stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()]),
                            np.column_stack([idx[:-1].ravel(), idx[1:].ravel()])])
    d["pairs"] = [[int(x), int(y), float(s)]
                  for (x, y), s in zip(edges, rng.normal(size=edges.shape[0]))]
    return d


def family_argument(n, rng, K=5):
    """CDCP-shaped: labels, links as off/on pairs, compat, co-parent/sibling, cdcp rules."""
    prop = np.arange(n * K).reshape(n, K)
    pairs, triples = candidates(n)
    n_links = pairs.shape[0]
    link = n * K + 2 * np.arange(n_links)[:, None] + np.arange(2)  # (off, on)
    d = _graph(n * K + 2 * n_links, rng)
    theta = np.zeros(n * K + 2 * n_links)
    preferred = rng.integers(K, size=n)
    theta[prop] = rng.normal(size=(n, K)) + 2.0 * np.eye(K)[preferred]
    gold_on = rng.random(n_links) < 0.07
    theta[link[:, 1]] = np.where(gold_on, rng.normal(1.0, 1.5, n_links),
                                 rng.normal(-3.0, 1.5, n_links))
    d["var_scores"] = theta.tolist()
    d["groups"] = prop.tolist() + link.tolist()
    d["logic"] = [["XOR", row, [False] * K] for row in prop.tolist()]
    index = {(int(s), int(t)): k for k, (s, t) in enumerate(pairs)}
    bias, adj, order = (rng.normal(0.0, 0.3, 2 * K * K) for _ in range(3))
    for k, (s, t) in enumerate(pairs):
        compat = bias + (abs(s - t) == 1) * adj + (s < t) * order
        d["dense"].append([[int(s), int(t), n + k], compat.tolist()])
    for a, b, c in triples.tolist():
        for x, y in (((a, b), (c, b)), ((b, a), (b, c))):  # co-parent, sibling
            d["pairs"].append([int(link[index[x], 1]), int(link[index[y], 1]),
                               float(rng.normal(-0.1, 0.2))])
    for (s, t), k in index.items():
        if s < t:
            d["logic"].append(["ATMOSTONE", [int(link[k, 1]), int(link[index[t, s], 1])],
                               [False, False]])
    for a, b, c in triples.tolist():
        if (a, c) in index:
            d["logic"].append(["IMPLY", [int(link[index[a, b], 1]), int(link[index[b, c], 1]),
                                         int(link[index[a, c], 1])], [False] * 3])
    return d


def family_tree(n, rng, grandparents=True):
    """Dependency trees over n words (any number of root children) and grandparent pairs."""
    arcs = [(h, m) for m in range(1, n + 1) for h in range(n + 1) if h != m]
    d = _graph(len(arcs), rng)
    d["tree"] = [n + 1, arcs, list(range(len(arcs)))]
    if not grandparents:
        return d
    index = {a: k for k, a in enumerate(arcs)}
    for (g, h), k in index.items():
        if h == 0:
            continue
        for m in range(1, n + 1):
            if m not in (g, h):
                d["pairs"].append([k, index[h, m], float(rng.normal(0.0, 0.5))])
    return d


def families(seed=0):
    rng = np.random.default_rng(seed)
    out = [("tiny (XOR of 3)", "3 variables", family_tiny(rng))]
    for side in (10, 30):
        out.append(("grid (pairs)", f"{side}x{side}", family_grid(side, rng)))
    for n in (5, 10, 20, 30):
        out.append(("argument mining", f"{n} props", family_argument(n, rng)))
    out.append(("tree alone", "20 words", family_tree(20, rng, grandparents=False)))
    for n in (10, 20):
        out.append(("tree + grandparents", f"{n} words", family_tree(n, rng)))
    return out


def time_block(solve, budget, settings):
    """Wall-clock and CPU seconds of repeated ``solve()`` calls for about ``budget`` seconds."""
    times, cpu = [], []
    start = time.perf_counter()
    while len(times) < settings["min_reps"] or (time.perf_counter() - start < budget
                                                and len(times) < settings["max_reps"]):
        t0, c0 = time.perf_counter(), time.process_time()
        solve()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return times, cpu


class CppAD3:
    """The C++ AD3 library in a subprocess of the environment that holds it."""

    def __init__(self, ad3_python, settings):
        self.proc = subprocess.Popen([ad3_python, "-c", _CPP_WORKER, json.dumps(settings)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)

    def ask(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        for out in self.proc.stdout:
            if out.startswith("RESULT "):
                return json.loads(out[7:])
        raise RuntimeError("the ad3 subprocess stopped (see its stderr above)")

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def ad3_version(ad3_python):
    code = "import ad3, sys; print(getattr(ad3, '__version__', '?'), sys.version.split()[0])"
    out = subprocess.run([ad3_python, "-c", code], capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None


def compare_families(ad3_python, max_iter, budget, out_path=None, rounds=5, cold=True):
    from sksparse_struct.inference import ad3

    settings = dict(eta=0.1, max_iter=max_iter, tol=1e-6, min_reps=1, max_reps=2000)
    lines = machine_header()
    version = ad3_version(ad3_python)
    if version is None:
        print(f"skipped: {ad3_python} cannot import ad3 (see the docstring to build it)")
        return
    lines.append(f"C++ AD3 {version.split()[0]} (Python {version.split()[1]} bindings, "
                 f"{ad3_python}); both: eta=0.1 adaptive, max_iter={max_iter}, residual "
                 f"threshold 1e-6; median over repeated solves of one graph, {rounds} "
                 f"alternating rounds of about {budget / rounds:g} s per side (at least one "
                 f"solve each)")
    header = ["family", "size", "vars / factors", "ours ms/solve", "C++ ms/solve",
              "ours / C++", "(CPU time)", "iterations ours / C++", "converged ours / C++ status",
              "rel. obj. diff", "load"]
    rows = []
    cpp = CppAD3(ad3_python, settings)
    with tempfile.TemporaryDirectory() as tmp:
        for k, (family, size, d) in enumerate(families()):
            path = os.path.join(tmp, f"graph{k}.json")
            with open(path, "w") as f:
                json.dump(d, f)
            fg, theta, fs = family_graph_ours(d)

            def solve():
                return ad3(fg, theta, fs, eta=settings["eta"], adaptive_eta=True,
                           max_iter=settings["max_iter"], tol=settings["tol"])

            r = solve()  # warm-up (and compile)
            info = cpp.ask(f"load {path}")
            ours, theirs, ours_cpu, theirs_cpu = [], [], [], []
            for _ in range(rounds):  # alternate, so that both sides see the same load
                wall, cpu = time_block(solve, budget / rounds, settings)
                ours += wall
                ours_cpu += cpu
                block = cpp.ask(f"time {budget / rounds}")
                theirs += block["times"]
                theirs_cpu += block["cpu"]
            ours_ms, cpp_ms = 1e3 * np.median(ours), 1e3 * np.median(theirs)
            cpu_ratio = np.median(ours_cpu) / np.median(theirs_cpu)
            rel = abs(r.primal - info["value"]) / max(1.0, abs(info["value"]))
            load = os.getloadavg()[0]
            rows.append([family, size, f"{fg.n_variables} / {fg.n_factors}",
                         fmt(ours_ms, 3), fmt(cpp_ms, 3), fmt(ours_ms / cpp_ms),
                         fmt(cpu_ratio),
                         f"{r.n_iter} / {info['iters']}",
                         f"{'yes' if r.converged else 'no'} / {info['status']}",
                         f"{rel:.1e}", f"{load:.2f}"])
            print(rst_table(header, rows[-1:]) + f"  (solves timed {len(ours)} / "
                  f"{len(theirs)})", flush=True)
    cpp.close()
    lines.append(f"load average after the run (1, 5, 15 min): "
                 + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    if cold:
        for tree in (False, True):
            wall, cpu = cold_compile_seconds(tree)
            lines.append(f"cold start (fresh process, empty NUMBA_CACHE_DIR: import, compile, one "
                         f"{'ad3 call on a graph with a tree factor' if tree else 'ad3_map call'}"
                         f"): {wall:.1f} s wall, {cpu:.1f} s CPU (load "
                         f"{os.getloadavg()[0]:.2f})")
    lines += ["", rst_table(header, rows), "",
              "C++ status: 0 integral, 1 fractional, 2 infeasible, 3 not solved "
              "(iteration limit); ms/solve: median wall clock; (CPU time): the ratio of the "
              "median CPU times; load: 1-minute load average after the row"]
    report = "\n".join(lines)
    print(report)
    if out_path:
        Path(out_path).write_text(report + "\n")


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
    parser.add_argument("--families", action="store_true",
                        help="compare LP-MAP with the C++ AD3 library on several graph "
                        "families instead")
    parser.add_argument("--ad3-python", default=os.environ.get("AD3_PYTHON",
                                                                "/work/ad3env/bin/python"),
                        help="Python of the environment holding the ad3 bindings")
    parser.add_argument("--max-iter", type=int, default=1000,
                        help="AD3 iterations per solve (--families)")
    parser.add_argument("--no-cold", action="store_true",
                        help="skip the cold-compile timings (--families)")
    parser.add_argument("--budget", type=float, default=2.5,
                        help="seconds of repeated solves per graph and side (--families)")
    args = parser.parse_args()
    if args.families:
        compare_families(args.ad3_python, args.max_iter, args.budget, args.out,
                         cold=not args.no_cold)
        return
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
