"""Universal Dependencies parsing: SparseMAPParser with every loss and both decoders.

Run from anywhere, in an environment where sksparse_struct is installed::

    python benchmarks/bench_ud_parsing.py            # EWT and VTB, all losses, both decoders
    python benchmarks/bench_ud_parsing.py --quick    # smoke run (1,000 sentences, 2 epochs)
    python benchmarks/bench_ud_parsing.py --treebanks ewt --decoders eisner --losses perceptron
    python benchmarks/bench_ud_parsing.py --out benchmarks/results/bench_ud_parsing.txt
    python benchmarks/bench_ud_parsing.py --treebanks ewt --decoders eisner \
        --losses perceptron --n-features 4194304,8388608,16777216   # hash-space sizes

Data: the Universal Dependencies folders ``UD_English-EWT`` and
``UD_Vietnamese-VTB`` (``*-ud-train.conllu``, ``*-ud-test.conllu``) in the
folder given with ``--data DIR`` (or in ``$SKSPARSE_STRUCT_SHARED_DATA/ud``
when that variable is set). The treebanks are not shipped with the package.
A treebank whose files are absent is skipped with a message.

What is measured
----------------
Train on the training set, evaluate on the test set, gold UPOS / XPOS /
lemmas / morphology as input, punctuation included in every score. Each
model is trained and evaluated in its own fresh interpreter (its memory is
its own), after a warm-up fit on 20 sentences so that loading the compiled
kernels is not counted. For each treebank, decoder (``eisner``: projective,
``cle``: non-projective Chu-Liu-Edmonds) and loss:

* test UAS and LAS (percent; relation labels from the parser's labeller);
* training seconds per epoch (wall clock, mean over the epochs) and the CPU
  seconds of the whole fit;
* parse speed: sentences per second of ``predict(X_test, return_deprel=True)``
  (feature encoding included);
* peak resident set size of the process (``VmHWM``) and the peak reached
  before ``fit`` (data loaded);
* the sparsity of SparseMAP (Niculae 2018, Fig. 6.1), from ``predict_sparse``
  on the test set: mean number of trees in the support per sentence and mean
  number of candidate heads per word (heads with a nonzero posterior). For the
  CRF and the other losses the same statistics describe the SparseMAP
  distribution of their scores (``predict_sparse`` works for every loss);
* the speed of the machine at the time ("probe ns"): nanoseconds per read
  of 8 million scattered float64 from a 32 MB array (what scoring arcs
  does), measured by the parent process just before and after the model's
  run and averaged. The same code's
  epochs vary by 20-35% over a day on a shared machine, with this figure;
  compare times between tables only at similar probe readings.

Reference figures (no other parser is run by this script): a minimal
first-order averaged-perceptron parser written for comparison (not part of
the package), measured on the benchmark machine, 5 epochs: EWT test UAS
84.25 (MST templates, CLE), 85.49 (MST, Eisner), 85.88 (rich, CLE), 87.22
(rich + XPOS / lemma, Eisner); VTB 74.9 (rich, Eisner). Niculae (2018, PhD
thesis), Table 6.1 (BiLSTM features, UD 2.0, English): structured SVM 87.02,
CRF 86.74, SparseMAP 86.90, margin-SparseMAP 87.34. Targets: best loss at
least 87.4 test UAS on EWT with the rich preset and Eisner, every loss within
0.5 of it, perceptron / hinge epochs at most 5 s and SparseMAP / CRF epochs
at most 15 s on 2 cores.

The table is printed as a reStructuredText "simple table".
"""

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TREEBANKS = {
    "ewt": ("UD_English-EWT", "en_ewt"),
    "vtb": ("UD_Vietnamese-VTB", "vi_vtb"),
}
LOSSES = ("perceptron", "hinge", "crf", "sparsemap", "margin_sparsemap")
DECODERS = ("eisner", "cle")


def default_data_dir():
    env = os.environ.get("SKSPARSE_STRUCT_SHARED_DATA")
    return Path(env) / "ud" if env else None


def peak_rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


@functools.lru_cache(maxsize=None)
def _probe_kernel(size, n_reads):
    """The probe's compiled loop and data, built once per process."""
    import numpy as np
    from numba import njit

    @njit
    def gather(a, idx):
        s = 0.0
        for i in idx:
            s += a[i]
        return s

    rng = np.random.default_rng(0)
    a = rng.standard_normal(size)
    idx = rng.integers(0, size, n_reads)
    gather(a, idx[:10])  # compile
    return gather, a, idx


def memory_probe_ns(n_reads=1 << 23, size=1 << 22):
    """Nanoseconds per read of scattered float64 from a 32 MB array (one thread)."""
    gather, a, idx = _probe_kernel(size, n_reads)
    t0 = time.perf_counter()
    gather(a, idx)
    return 1e9 * (time.perf_counter() - t0) / n_reads


def treebank_files(data_dir, name):
    folder, prefix = TREEBANKS[name]
    train = Path(data_dir) / folder / f"{prefix}-ud-train.conllu"
    test = Path(data_dir) / folder / f"{prefix}-ud-test.conllu"
    return train, test


def run_child(cfg):
    """Train and evaluate one model; print one JSON line."""
    import numpy as np

    from sksparse_struct import SparseMAPParser
    from sksparse_struct.datasets import read_conllu
    from sksparse_struct.feature_extraction import ArcFeatures
    from sksparse_struct.metrics import las_score, uas_score

    X_train, y_train, d_train = read_conllu(cfg["train"], return_deprel=True)
    X_test, y_test, d_test = read_conllu(cfg["test"], return_deprel=True)
    if cfg["n_train"]:
        X_train, y_train, d_train = (X_train[:cfg["n_train"]], y_train[:cfg["n_train"]],
                                     d_train[:cfg["n_train"]])
    if cfg["n_test"]:
        k = cfg["n_test"]
        X_test, y_test, d_test = X_test[:k], y_test[:k], d_test[:k]
    pairs = list(zip(y_train, d_train))

    features = cfg["preset"]
    if cfg.get("n_features"):
        features = ArcFeatures(preset=cfg["preset"], n_features=cfg["n_features"])

    def make(max_iter):
        return SparseMAPParser(
            cfg["loss"], projective=cfg["decoder"] == "eisner", features=features,
            max_iter=max_iter, tol=None, random_state=0, n_jobs=cfg["n_jobs"],
            **cfg["params"],
        )

    make(1).fit(X_train[:20], pairs[:20]).predict(X_train[:20])  # load the kernels
    rss_before = peak_rss_mb()
    parser = make(cfg["max_iter"])
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    parser.fit(X_train, pairs)
    fit_s = time.perf_counter() - t0
    fit_cpu = time.process_time() - cpu0
    t0 = time.perf_counter()
    heads, deprels = parser.predict(X_test, return_deprel=True)
    predict_s = time.perf_counter() - t0
    uas = uas_score(y_test, heads)
    las = las_score(y_test, heads, d_test, deprels)
    t0 = time.perf_counter()
    supports = parser.predict_sparse(X_test)
    sparse_s = time.perf_counter() - t0
    n_trees = float(np.mean([len(s) for s in supports]))
    cand = []
    for support in supports:
        H = np.array([h for h, _ in support])
        cand.extend(len(set(H[:, j].tolist())) for j in range(H.shape[1]))
    result = {
        "uas": 100 * uas, "las": 100 * las, "epochs": parser.n_iter_,
        "epoch_s": fit_s / parser.n_iter_, "fit_s": fit_s, "fit_cpu": fit_cpu,
        "sent_per_s": len(X_test) / predict_s, "sparse_s": sparse_s,
        "trees": n_trees, "heads_per_word": float(np.mean(cand)),
        "rss_before": rss_before, "rss_peak": peak_rss_mb(),
        "not_converged": parser.n_sparsemap_not_converged_,
        "n_train": len(X_train), "n_test": len(X_test),
    }
    print("RESULT " + json.dumps(result), flush=True)


def spawn(cfg, timeout):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cfg, f)
        path = f.name
    cmd = [sys.executable, __file__, "--child", path]
    try:
        proc = subprocess.run(cmd, timeout=timeout, check=False, capture_output=True, text=True)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout} s"}
    finally:
        os.unlink(path)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}


def build_table(rows):
    # The n_features column only when the hash-space size was varied.
    sized = any(r.get("n_features") for r in rows)
    header = (["treebank", "decoder", "loss"] + (["n_features"] if sized else [])
              + ["epochs", "UAS", "LAS", "s/epoch", "fit CPU s", "sent/s", "trees",
                 "heads/word", "RSS before MB", "peak RSS MB", "probe ns"])
    body = []
    for r in rows:
        res = r["result"]
        first = [r["treebank"], r["decoder"], r["loss"]]
        if sized:
            first.append(f"2**{int(r['n_features']).bit_length() - 1}"
                         if r.get("n_features") else "default")
        if "error" in res:
            body.append(first + ["-", "error: " + res["error"]]
                        + [""] * (len(header) - len(first) - 2))
            continue
        body.append(first + [
            str(res["epochs"]), f"{res['uas']:.2f}",
            f"{res['las']:.2f}", f"{res['epoch_s']:.2f}", f"{res['fit_cpu']:.1f}",
            f"{res['sent_per_s']:,.0f}", f"{res['trees']:.2f}", f"{res['heads_per_word']:.3f}",
            f"{res['rss_before']:.0f}", f"{res['rss_peak']:.0f}", f"{res['probe_ns']:.1f}",
        ])
    widths = [max(len(h), *(len(row[i]) for row in body)) if body else len(h)
              for i, h in enumerate(header)]
    rule = "  ".join("=" * w for w in widths)
    lines = [rule, "  ".join(h.ljust(w) for h, w in zip(header, widths)), rule]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in body]
    lines.append(rule)
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--data", default=None, help="folder holding the UD_* treebanks")
    parser.add_argument("--treebanks", default="ewt,vtb")
    parser.add_argument("--decoders", default="eisner,cle")
    parser.add_argument("--losses", default=",".join(LOSSES))
    parser.add_argument("--preset", default="rich", choices=("rich", "mst"))
    parser.add_argument("--max-iter", type=int, default=10)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--params", default="{}", help="JSON dict of extra parser parameters")
    parser.add_argument("--n-features", default="",
                        help="comma-separated ArcFeatures n_features (powers of two) to "
                             "compare; default: the preset's own")
    parser.add_argument("--quick", action="store_true", help="1,000 training sentences, 2 epochs")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("--out", default=None, help="also write the report to this file")
    args = parser.parse_args(argv)
    if args.child:
        with open(args.child) as f:
            run_child(json.load(f))
        return
    data_dir = Path(args.data) if args.data else default_data_dir()
    if data_dir is None:
        print("skipped: no data folder; pass --data DIR or set SKSPARSE_STRUCT_SHARED_DATA")
        return
    sizes = [int(v) for v in args.n_features.split(",") if v.strip()] or [None]
    rows = []
    start = time.perf_counter()
    for tb in args.treebanks.split(","):
        train, test = treebank_files(data_dir, tb)
        if not (train.exists() and test.exists()):
            print(f"skipping {tb}: {train} or {test} not found", file=sys.stderr)
            continue
        for decoder in args.decoders.split(","):
            for loss in args.losses.split(","):
                for n_features in sizes:
                    cfg = {"train": str(train), "test": str(test), "loss": loss,
                           "decoder": decoder, "preset": args.preset,
                           "n_features": n_features,
                           "max_iter": 2 if args.quick else args.max_iter,
                           "n_jobs": args.n_jobs, "params": json.loads(args.params),
                           "n_train": 1000 if args.quick else 0,
                           "n_test": 300 if args.quick else 0}
                    probe_before = memory_probe_ns()
                    result = spawn(cfg, args.timeout)
                    result["probe_ns"] = (probe_before + memory_probe_ns()) / 2
                    rows.append({"treebank": tb, "decoder": decoder, "loss": loss,
                                 "n_features": n_features, "result": result})
                    print(f"{tb} {decoder} {loss} {n_features}: {result}", file=sys.stderr,
                          flush=True)
    report = [
        f"SparseMAPParser on UD, preset={args.preset!r}, {args.max_iter if not args.quick else 2} "
        f"epochs, n_jobs={args.n_jobs}, params={args.params}"
        + (" (QUICK: 1,000 training / 300 test sentences)" if args.quick else ""),
        "",
        build_table(rows),
        "",
        f"total benchmark time {time.perf_counter() - start:.0f} s; "
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs",
    ]
    text = "\n".join(report)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
