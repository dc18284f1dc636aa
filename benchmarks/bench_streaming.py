"""Corpora of any size: lazy readers and predict_file on EWT train repeated 20 times.

Run from anywhere, in an environment where sksparse_struct is installed::

    python benchmarks/bench_streaming.py                    # 20 copies, tagger and parser, n_jobs 1, 2
    python benchmarks/bench_streaming.py --copies 2 --train sample   # smoke run, a few minutes
    python benchmarks/bench_streaming.py --out benchmarks/results/bench_streaming.txt

Data: ``UD_English-EWT/en_ewt-ud-train.conllu`` in the folder given with
``--data DIR`` (or in ``$SKSPARSE_STRUCT_SHARED_DATA/ud``). The big file is
written to a temporary folder (``--tmp-dir``; about 14 MB per copy) and
deleted at the end.

What is measured
----------------
The input is ``en_ewt-ud-train.conllu`` written ``--copies`` times in a row
(20 copies: 250,880 sentences, 4.09 million words). The models are trained
on EWT train itself (``--train ewt``; ``--train sample``: on the bundled
sample, faster, for smoke runs), in a process of their own, and pickled:

* tagger: ``TokenFeatures(preset="pos")`` + ``LinearChainCRF(loss="perceptron",
  max_iter=5)``, UPOS; ``predict_file(..., label="upos")``;
* parser: ``SparseMAPParser(loss="perceptron", max_iter=2)`` with relation
  labels; ``predict_file(..., label="head")``.

Every measurement runs in a fresh interpreter (the parent only watches):

* reading: ``read_conllu`` and ``read_conll(label="upos")`` (everything in
  memory), ``iter_conllu`` and ``iter_conll`` (one sentence at a time,
  nothing kept);
* predicting: ``predict_file`` for each ``--n-jobs`` (joblib's default
  backend, worker processes; the estimators' own ``n_jobs`` is 1) with
  ``--chunk-size`` sentences per chunk, starting the workers included.

For each: the wall time, words per second, the peak resident memory of the
whole process tree (the sum of the resident set sizes of the process and
its worker processes, sampled by the parent from ``/proc`` every 0.1 s), of
the main process alone (``VmHWM``) and of the largest worker (``getrusage``
of the children, once they have exited). The outputs of the different
``n_jobs`` are compared byte for byte. Linux only (``/proc``).

The table is printed as a reStructuredText "simple table".
"""

import argparse
import hashlib
import json
import os
import pickle
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bench_utils


def default_data_dir():
    env = os.environ.get("SKSPARSE_STRUCT_SHARED_DATA")
    if env:
        return Path(env) / "ud"
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "ud"


def vm_hwm_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


# --------------------------------------------------------------------------
# Children: each does one thing and prints one RESULT line.


def child_train(cfg):
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.pipeline import make_pipeline

    from sksparse_struct import LinearChainCRF, SparseMAPParser
    from sksparse_struct.datasets import load_ewt_sample, read_conll, read_conllu
    from sksparse_struct.feature_extraction import TokenFeatures

    warnings.simplefilter("ignore", ConvergenceWarning)
    out = {}
    t0 = time.perf_counter()
    if cfg["train"] == "ewt":
        X, y = read_conll(cfg["ewt"], label="upos")
    else:
        X, y = load_ewt_sample("train", return_X_y=True)
    tagger = make_pipeline(TokenFeatures(preset="pos"),
                           LinearChainCRF(loss="perceptron", max_iter=5, random_state=0))
    tagger.fit(X, y)
    tagger.predict(X[:10])
    out["tagger_fit_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    if cfg["train"] == "ewt":
        X, heads, deprels = read_conllu(cfg["ewt"], return_deprel=True)
        y = list(zip(heads, deprels))
    else:
        X, y = load_ewt_sample("train", return_X_y=True, target="tree")
    parser = SparseMAPParser(loss="perceptron", max_iter=2, random_state=0).fit(X, y)
    parser.predict(X[:10], return_deprel=True)
    out["parser_fit_s"] = time.perf_counter() - t0
    for name, model in (("tagger", tagger), ("parser", parser)):
        path = Path(cfg["folder"]) / f"{name}.pkl"
        with open(path, "wb") as f:
            pickle.dump(model, f, protocol=pickle.HIGHEST_PROTOCOL)
        out[f"{name}_pickle_mb"] = path.stat().st_size / 1e6
    return out


def child_read(cfg):
    from sksparse_struct.datasets import (
        iter_conll,
        iter_conllu,
        read_conll,
        read_conllu,
    )

    path = cfg["input"]
    t0 = time.perf_counter()
    if cfg["reader"] == "read_conllu":
        X = read_conllu(path)[0]
        n_sentences, n_words = len(X), sum(map(len, X))
    elif cfg["reader"] == "read_conll":
        X = read_conll(path, label="upos")[0]
        n_sentences, n_words = len(X), sum(map(len, X))
    else:
        sentences = (iter_conllu(path) if cfg["reader"] == "iter_conllu"
                     else iter_conll(path, label="upos"))
        n_sentences = n_words = 0
        for tokens, _ in sentences:
            n_sentences += 1
            n_words += len(tokens)
    return {"seconds": time.perf_counter() - t0, "n_sentences": n_sentences,
            "n_words": n_words, "main_mb": vm_hwm_mb(), "worker_mb": None}


def child_predict(cfg):
    from joblib.externals.loky import get_reusable_executor

    from sksparse_struct.datasets import predict_file

    with open(cfg["model"], "rb") as f:
        model = pickle.load(f)
    t0 = time.perf_counter()
    predict_file(model, cfg["input"], cfg["output"], label=cfg["label"],
                 chunk_size=cfg["chunk_size"], n_jobs=cfg["n_jobs"])
    seconds = time.perf_counter() - t0
    if cfg["n_jobs"] != 1:
        # Stop the workers, so that getrusage sees them.
        get_reusable_executor().shutdown(wait=True)
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    digest = hashlib.sha256()
    with open(cfg["output"], "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    os.remove(cfg["output"])
    return {"seconds": seconds, "main_mb": vm_hwm_mb(),
            "worker_mb": children if cfg["n_jobs"] > 1 else None,
            "sha256": digest.hexdigest()}


CHILDREN = {"train": child_train, "read": child_read, "predict": child_predict}


# --------------------------------------------------------------------------
# The parent: spawn a child, sample its process tree's memory.


def _tree_rss_mb(root):
    """Sum of the resident set sizes of ``root`` and its descendants, in MB."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name (field 2) may hold spaces: split after its ")".
        fields = stat[stat.rfind(")") + 2:].split()
        parents[int(entry)] = int(fields[1])
    tree, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in tree:
                tree.add(child)
                frontier.append(child)
    total = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total / 1024.0


def spawn(kind, cfg, timeout):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cfg, f)
        path = f.name
    cmd = [sys.executable, __file__, "--child", kind, path]
    peak = [0.0]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def watch():
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss_mb(proc.pid))
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return {"error": f"timeout after {timeout} s"}
    finally:
        watcher.join()
        os.unlink(path)
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT "):])
            result["tree_mb"] = peak[0]
            return result
    return {"error": (stderr.strip().splitlines() or ["no output"])[-1]}


def make_input(ewt, folder, copies):
    path = Path(folder) / f"ewt_train_x{copies}.conllu"
    with open(ewt, "rb") as f:
        data = f.read()
    if not data.endswith(b"\n\n"):
        data = data.rstrip(b"\n") + b"\n\n"
    with open(path, "wb") as f:
        f.writelines(data for _ in range(copies))
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--data", default=None, help="folder holding UD_English-EWT")
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--train", choices=("ewt", "sample"), default="ewt")
    parser.add_argument("--models", default="tagger,parser")
    parser.add_argument("--n-jobs", default="1,2", help="comma-separated predict_file n_jobs")
    parser.add_argument("--chunk-size", type=int, default=1000)
    parser.add_argument("--readers", default="read_conllu,iter_conllu,read_conll,iter_conll")
    parser.add_argument("--tmp-dir", default=None, help="where to write the big file")
    parser.add_argument("--timeout", type=float, default=7200)
    parser.add_argument("--out", default=None, help="also write the report to this file")
    args = parser.parse_args(argv)
    if args.child:
        kind, path = args.child
        with open(path) as f:
            cfg = json.load(f)
        print("RESULT " + json.dumps(CHILDREN[kind](cfg)), flush=True)
        return
    data_dir = Path(args.data) if args.data else default_data_dir()
    ewt = data_dir / "UD_English-EWT" / "en_ewt-ud-train.conllu"
    if not ewt.is_file():
        print(f"skipped: {ewt} not found; pass --data DIR or set SKSPARSE_STRUCT_SHARED_DATA")
        return
    start = time.perf_counter()
    header = _bench_utils.machine_header()
    folder = tempfile.mkdtemp(prefix="bench_streaming_", dir=args.tmp_dir)
    try:
        big = make_input(ewt, folder, args.copies)
        size_mb = big.stat().st_size / 1e6
        print(f"input: {big} ({size_mb:.0f} MB)", file=sys.stderr, flush=True)
        trained = spawn("train", {"train": args.train, "ewt": str(ewt), "folder": folder},
                        args.timeout)
        if "error" in trained:
            print(f"training failed: {trained['error']}", file=sys.stderr)
            return
        print(f"trained: {trained}", file=sys.stderr, flush=True)
        rows, n_words, digests = [], None, {}
        for reader in filter(None, args.readers.split(",")):
            res = spawn("read", {"reader": reader, "input": str(big)}, args.timeout)
            print(f"{reader}: {res}", file=sys.stderr, flush=True)
            n_words = res.get("n_words", n_words)
            rows.append((reader, "-", "-", res))
        if n_words is None:
            from sksparse_struct.datasets import iter_conllu

            n_words = sum(len(tokens) for tokens, _ in iter_conllu(big))
        for model in filter(None, args.models.split(",")):
            label = {"tagger": "upos", "parser": "head"}[model]
            for n_jobs in (int(v) for v in args.n_jobs.split(",")):
                cfg = {"model": str(Path(folder) / f"{model}.pkl"), "input": str(big),
                       "output": str(Path(folder) / f"out_{model}_{n_jobs}.conllu"),
                       "label": label, "n_jobs": n_jobs, "chunk_size": args.chunk_size}
                res = spawn("predict", cfg, args.timeout)
                print(f"predict_file {model} n_jobs={n_jobs}: {res}", file=sys.stderr,
                      flush=True)
                if "sha256" in res:
                    digests.setdefault(model, set()).add(res["sha256"])
                rows.append((f"predict_file {model}", str(n_jobs), str(args.chunk_size), res))
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    table_rows = []
    for task, n_jobs, chunk, res in rows:
        if "error" in res:
            table_rows.append([task, n_jobs, chunk, "error: " + res["error"], "", "", "", ""])
            continue
        worker = res.get("worker_mb")
        table_rows.append([
            task, n_jobs, chunk, f"{res['seconds']:.1f}", f"{n_words / res['seconds']:,.0f}",
            f"{res['tree_mb']:.0f}", f"{res['main_mb']:.0f}",
            f"{worker:.0f}" if worker is not None else "-",
        ])
    same = {model: ("identical" if len(d) == 1 else "DIFFERENT") for model, d in digests.items()}
    trained_on = "EWT train" if args.train == "ewt" else "the bundled sample"
    report = header + [
        (f"input: en_ewt-ud-train.conllu x {args.copies} ({size_mb:.0f} MB, {n_words:,} "
         f"words); models trained on {trained_on} (tagger {trained['tagger_fit_s']:.0f} s, "
         f"pickle {trained['tagger_pickle_mb']:.1f} MB; parser {trained['parser_fit_s']:.0f} "
         f"s, pickle {trained['parser_pickle_mb']:.1f} MB)"),
        "",
        _bench_utils.rst_table(
            ["task", "n_jobs", "chunk", "seconds", "words/s", "peak RSS tree MB",
             "main MB", "worker MB"], table_rows),
        "",
        "outputs of the n_jobs values: "
        + (", ".join(f"{model} {verdict}" for model, verdict in same.items()) or "-"),
        f"total benchmark time {time.perf_counter() - start:.0f} s",
    ]
    text = "\n".join(report)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
