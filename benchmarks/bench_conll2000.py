"""CoNLL-2000 chunking: sklearn-crfsuite against sksparse_struct's LinearChainCRF.

Run from anywhere, in an environment where sksparse_struct is installed::

    python benchmarks/bench_conll2000.py                  # full run (tens of minutes)
    python benchmarks/bench_conll2000.py --quick          # smoke run (a minute or two)
    python benchmarks/bench_conll2000.py --losses crf     # only loss="crf" for ours
    python benchmarks/bench_conll2000.py --losses none    # only sklearn-crfsuite
    python benchmarks/bench_conll2000.py --out benchmarks/results/bench_conll2000.txt

Data: ``train.txt`` and ``test.txt`` of CoNLL-2000 (word, POS, chunk columns,
blank-line separated sentences) in the folder given with ``--data DIR`` (or
in ``$SKSPARSE_STRUCT_SHARED_DATA/conll2000`` when that variable is set).
The data is not shipped with the package. The script prints a message and
stops when the files are absent.

What is measured
----------------
Both libraries get the same input: the sentences are read with
``sksparse_struct.datasets.read_conll`` and turned into feature dicts with
``sksparse_struct.feature_extraction.TokenFeatures(preset="conll2000")``
(when either is not importable, a local reader / a local copy of the template
is used and the header says so). The template is the classic CRFsuite
CoNLL-2000 chunking one: words w[-2..2], the word bigrams w[-1]|w[0] and
w[0]|w[1], POS tags pos[-2..2], the POS bigrams -2|-1, -1|0, 0|1, 1|2 and
trigrams -2|-1|0, -1|0|1, 0|1|2 (a feature whose window leaves the sentence
is absent), plus __BOS__ / __EOS__ on the first and last token.

Models, each trained and evaluated in its own fresh interpreter so that its
memory is its own:

* sklearn-crfsuite: ``CRF(algorithm="lbfgs", c1=0, c2=1.0,
  max_iterations=100, all_possible_transitions=True)`` (single-threaded);
* ours: ``LinearChainCRF(loss="crf", c1=0, c2=1.0, max_iter=100)`` with the
  same regularization and iteration budget, then the other losses ("hinge",
  "perceptron", "sparsemap", "margin_sparsemap") with ``--max-iter-online``
  epochs (default 10), and the row "bcfw": ``loss="hinge"`` trained with
  ``solver="bcfw"`` (block-coordinate Frank-Wolfe, as many passes; its
  duality gap is computed after the last one and listed below the table).
  ``--n-jobs 1,2`` (the default) trains loss="crf" once with each value;
  the other losses use the last one. A row of ours is skipped with a
  message while ``from sksparse_struct import LinearChainCRF`` fails.

For each model: chunk F1 on test (conlleval-exact, in percent; computed with
``sksparse_struct.metrics.chunk_f1_score`` when it exists *and* with a local
port of conlleval's counting, which must agree), wall-clock seconds of
``fit(X_train, y_train)`` on feature dicts (for ours after a small warm-up fit
on 20 sentences, so that loading or compiling the numba kernels is not
counted; the warm-up time is listed below the table), ``predict(X_test)``
throughput in tokens per second, and memory: the peak resident set size of
the child process (``VmHWM`` from ``/proc/self/status``; on Linux
``getrusage(RUSAGE_SELF).ru_maxrss`` also counts the parent's peak, which the
child inherits through fork/exec), with the peak already reached before
``fit`` (data and features, the same for every model) shown alongside.
The CPU time of the model's process in fit and predict is listed below the
table too (on a loaded machine it says more than the wall clock; with
``--n-jobs`` above 1 the work done in joblib's worker processes is not in it).
Ratios are ours / sklearn-crfsuite: fit time (below 1 means we train faster)
and predict throughput (above 1 means we predict faster).

Reference figures for sklearn-crfsuite, measured on another machine: chunk
F1 93.57, fit 46.0 s, predict 162,776 tokens/s. They are printed for
orientation only; the ratios compare with sklearn-crfsuite measured in the
same run. Targets for ``loss="crf"``: F1 at least 93.5, fit time at most
1.0x and throughput at least 1.0x sklearn-crfsuite's, measured in the same
run.

Environment: sklearn-crfsuite is not a dependency of sksparse_struct. The
benchmark environment is a virtualenv with sksparse_struct installed editable
and the peers from PyPI (python-crfsuite ships manylinux wheels)::

    python3 -m venv benchenv
    benchenv/bin/pip install -e /path/to/repo
    benchenv/bin/pip install sklearn-crfsuite   # pulls python-crfsuite
    benchenv/bin/python benchmarks/bench_conll2000.py --data DIR

End to end
----------
A second table measures what a user runs, raw columns in and labels out,
with the same template (``--no-end-to-end`` leaves it out):

* sklearn-crfsuite: its users' features, the local ``template_features``
  (a Python function building one dict per token, as sklearn-crfsuite's
  tutorials do), then ``fit`` / ``predict`` on them; end-to-end fit seconds
  are the features of the training sentences plus ``fit``, end-to-end
  predict the features of the test sentences plus ``predict`` (both steps
  measured in the model's child process);
* ours: ``Pipeline([TokenFeatures(preset="conll2000", output="matrix"),
  LinearChainCRF(loss="crf", ...)])`` fitted on the raw training sentences
  (``read_conll``'s dicts of columns) and predicting the raw test sentences,
  once per ``--n-jobs`` value, each in its own child process (after a
  warm-up of the pipeline on 20 sentences, listed below the table), when
  ``--losses`` includes ``crf``.

Targets of issue 28: end-to-end predict throughput at least 5x
sklearn-crfsuite's, end-to-end fit time at most 0.5x, chunk F1 within 0.1
of ours on feature dicts.

The tables are printed as reStructuredText "simple tables", ready to paste in
``doc/benchmarks.rst``.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _bench_utils import fmt, machine_header, rst_table

ALL_LOSSES = ["crf", "hinge", "perceptron", "sparsemap", "margin_sparsemap", "bcfw"]
# Rows of ours: (loss, solver); "bcfw" is the hinge loss trained by block-coordinate
# Frank-Wolfe instead of AdaGrad.
ROWS = {loss: (loss, "auto") for loss in ALL_LOSSES}
ROWS["bcfw"] = ("hinge", "bcfw")
QUICK_TRAIN, QUICK_TEST = 500, 200
WARMUP_SENTENCES = 20
REFERENCE = {"f1": 93.57, "fit": 46.0, "tok_s": 162776}

# The CRFsuite chunking template: (column, offset) tuples joined with "|".
TEMPLATE = (
    [(("w", k),) for k in (-2, -1, 0, 1, 2)]
    + [(("w", -1), ("w", 0)), (("w", 0), ("w", 1))]
    + [(("pos", k),) for k in (-2, -1, 0, 1, 2)]
    + [(("pos", k), ("pos", k + 1)) for k in (-2, -1, 0, 1)]
    + [(("pos", k), ("pos", k + 1), ("pos", k + 2)) for k in (-2, -1, 0)]
)


def default_data_dir():
    shared = os.environ.get("SKSPARSE_STRUCT_SHARED_DATA")
    return Path(shared) / "conll2000" if shared else None


# --------------------------------------------------------------------------
# local fallbacks (used while the package's versions are not importable)
# --------------------------------------------------------------------------


def read_conll_local(path):
    """(X, y) from a word/POS/chunk file: X[i] is a list of {"word", "pos"} dicts."""
    X, y, toks, labels = [], [], [], []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            fields = line.split()
            if not fields:
                if toks:
                    X.append(toks)
                    y.append(labels)
                    toks, labels = [], []
                continue
            if len(fields) != 3:
                raise ValueError(f"{path}, line {lineno}: expected 3 columns, got "
                                 f"{len(fields)}")
            toks.append({"word": fields[0], "pos": fields[1]})
            labels.append(fields[2])
    if toks:
        X.append(toks)
        y.append(labels)
    return X, y


def template_features(sentence):
    """The CRFsuite chunking template on one sentence of {"word", "pos"} dicts."""
    n = len(sentence)
    cols = {"w": [t["word"] for t in sentence], "pos": [t["pos"] for t in sentence]}
    out = []
    for i in range(n):
        feats = {}
        for tpl in TEMPLATE:
            if all(0 <= i + off < n for _, off in tpl):
                name = "|".join(f"{col}[{off}]" for col, off in tpl)
                feats[name] = "|".join(cols[col][i + off] for col, off in tpl)
        if i == 0:
            feats["__BOS__"] = 1.0
        if i == n - 1:
            feats["__EOS__"] = 1.0
        out.append(feats)
    return out


def _split_tag(label):
    # conlleval splits "B-NP" on "-" into (tag, type); "O" has an empty type.
    parts = str(label).split("-")
    return parts[0], (parts[1] if len(parts) > 1 else "")


def _chunk_end(prev_tag, tag, prev_type, type_):
    if prev_tag in ("E", "S"):
        return True
    if prev_tag in ("B", "I") and tag in ("B", "S", "O"):
        return True
    return prev_tag not in ("O", ".") and prev_type != type_


def _chunk_start(prev_tag, tag, prev_type, type_):
    if tag in ("B", "S"):
        return True
    if prev_tag in ("E", "S", "O") and tag in ("E", "I"):
        return True
    return tag not in ("O", ".") and prev_type != type_


def chunk_f1_local(y_true, y_pred):
    """Overall chunk F1 in [0, 1], counted as conlleval does.

    The sentences are processed as one stream separated by boundary tokens
    tagged "O" (what conlleval sees for a file with blank lines); a chunk is
    correct when both streams start it at the same token with the same type
    and end it at the same token.
    """
    correct = found_true = found_pred = 0
    in_correct = False
    last_t, last_tt, last_p, last_pt = "O", "", "O", ""
    for yt, yp in zip(y_true, y_pred):
        if len(yt) != len(yp):
            raise ValueError("a predicted sequence differs in length from the truth")
        for lt, lp in list(zip(yt, yp)) + [("O", "O")]:
            t, tt = _split_tag(lt)
            p, pt = _split_tag(lp)
            end_t = _chunk_end(last_t, t, last_tt, tt)
            end_p = _chunk_end(last_p, p, last_pt, pt)
            if in_correct:
                if end_t and end_p and last_pt == last_tt:
                    in_correct = False
                    correct += 1
                elif end_t != end_p or pt != tt:
                    in_correct = False
            start_t = _chunk_start(last_t, t, last_tt, tt)
            start_p = _chunk_start(last_p, p, last_pt, pt)
            if start_t and start_p and pt == tt:
                in_correct = True
            found_true += start_t
            found_pred += start_p
            last_t, last_tt, last_p, last_pt = t, tt, p, pt
    if in_correct:
        correct += 1
    precision = correct / found_pred if found_pred else 0.0
    recall = correct / found_true if found_true else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


# --------------------------------------------------------------------------
# what the package offers right now
# --------------------------------------------------------------------------


def library_reader():
    try:
        from sksparse_struct.datasets import read_conll
    except ImportError:
        return None
    return lambda path: read_conll(path, columns=("word", "pos", "chunk"), label="chunk")


def library_featurizer():
    try:
        from sksparse_struct.feature_extraction import TokenFeatures
    except ImportError:
        return None
    return TokenFeatures(preset="conll2000")


def library_chunk_f1():
    try:
        from sksparse_struct.metrics import chunk_f1_score
    except ImportError:
        return None
    return chunk_f1_score


def our_estimator_class():
    try:
        from sksparse_struct import LinearChainCRF
    except ImportError as exc:
        return None, f"from sksparse_struct import LinearChainCRF failed: {exc}"
    return LinearChainCRF, None


# --------------------------------------------------------------------------
# child process: one model
# --------------------------------------------------------------------------


def peak_rss_mb():
    """Peak resident set size of this process in MB (see the module docstring)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    # No /proc: ru_maxrss is in kB on Linux, in bytes on macOS.
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 1024


def raw_data(cfg):
    """Read train/test in this process: raw sentences (dicts of columns) and labels."""
    reader = library_reader() if cfg["reader"] == "library" else read_conll_local
    t0 = time.perf_counter()
    X_train, y_train = reader(os.path.join(cfg["data"], "train.txt"))
    X_test, y_test = reader(os.path.join(cfg["data"], "test.txt"))
    read_s = time.perf_counter() - t0
    if cfg["n_train"] is not None:
        X_train, y_train = X_train[: cfg["n_train"]], y_train[: cfg["n_train"]]
        X_test, y_test = X_test[: cfg["n_test"]], y_test[: cfg["n_test"]]
    return dict(X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test,
                read_s=read_s)


def load_data(cfg):
    """Read and featurize train/test in this process; returns a dict."""
    raw = raw_data(cfg)
    X_train, y_train, X_test, y_test, read_s = (
        raw[k] for k in ("X_train", "y_train", "X_test", "y_test", "read_s"))
    del raw
    t0 = time.perf_counter()
    if cfg["features"] == "library":
        tf = library_featurizer()
        F_train = list(tf.fit(X_train).transform(X_train))
        F_test = list(tf.transform(X_test))
    else:
        F_train = [template_features(s) for s in X_train]
        F_test = [template_features(s) for s in X_test]
    feat_s = time.perf_counter() - t0
    del X_train, X_test
    return dict(F_train=F_train, y_train=y_train, F_test=F_test, y_test=y_test,
                read_s=read_s, feat_s=feat_s)


def run_child_end_to_end(cfg):
    """Ours, raw columns in and labels out: TokenFeatures(output="matrix") + the CRF."""
    from sklearn.pipeline import Pipeline
    from sksparse_struct.feature_extraction import TokenFeatures

    res = {"model": "ours end to end", "loss": cfg["loss"], "max_iter": cfg["max_iter"],
           "n_jobs": cfg["n_jobs"]}
    cls, why = our_estimator_class()
    if cls is None:
        return dict(res, skipped=why)

    def make(max_iter):
        return Pipeline([
            ("features", TokenFeatures(preset="conll2000", output="matrix")),
            ("crf", cls(loss="crf", c1=cfg["c1"], c2=cfg["c2"], max_iter=max_iter,
                        n_jobs=cfg["n_jobs"], random_state=0, verbose=cfg["verbose"])),
        ])

    raw = raw_data(cfg)
    X_train, y_train, X_test, y_test = (raw[k] for k in ("X_train", "y_train", "X_test",
                                                         "y_test"))
    res.update(read_s=raw["read_s"], n_train_sent=len(X_train),
               n_train_tok=sum(map(len, X_train)), n_test_sent=len(X_test),
               n_test_tok=sum(map(len, X_test)), rss_before_fit=peak_rss_mb())
    t0 = time.perf_counter()
    make(2).fit(X_train[:WARMUP_SENTENCES], y_train[:WARMUP_SENTENCES]).predict(
        X_test[:WARMUP_SENTENCES])
    res["warmup_s"] = time.perf_counter() - t0
    model = make(cfg["max_iter"])
    t0, c0 = time.perf_counter(), time.process_time()
    model.fit(X_train, y_train)
    res["fit_s"] = time.perf_counter() - t0
    res["fit_cpu_s"] = time.process_time() - c0
    res["n_iter"] = n_iterations(model[-1])
    res["n_features"] = len(model[0].feature_names_)
    t0, c0 = time.perf_counter(), time.process_time()
    y_pred = model.predict(X_test)
    res["predict_s"] = time.perf_counter() - t0
    res["predict_cpu_s"] = time.process_time() - c0
    res["tok_s"] = res["n_test_tok"] / res["predict_s"]
    res["f1_local"] = 100 * chunk_f1_local(y_test, [list(p) for p in y_pred])
    lib_f1 = library_chunk_f1()
    if lib_f1 is not None:
        res["f1_library"] = 100 * float(lib_f1(y_test, y_pred))
    res["f1"] = res.get("f1_library", res["f1_local"])
    res["rss_peak"] = peak_rss_mb()
    return res


def run_child(cfg):
    if cfg["model"] == "ours end to end":
        return run_child_end_to_end(cfg)
    res = {"model": cfg["model"], "loss": cfg["loss"], "max_iter": cfg["max_iter"],
           "n_jobs": 1 if cfg["model"] == "sklearn-crfsuite" else cfg["n_jobs"]}
    if cfg["model"] == "sklearn-crfsuite":
        try:
            import sklearn_crfsuite
        except ImportError as exc:
            return dict(res, skipped=f"sklearn_crfsuite not importable: {exc}")

        def make(max_iter):
            return sklearn_crfsuite.CRF(
                algorithm="lbfgs", c1=cfg["c1"], c2=cfg["c2"], max_iterations=max_iter,
                all_possible_transitions=True, verbose=cfg["verbose"])
    else:
        cls, why = our_estimator_class()
        if cls is None:
            return dict(res, skipped=why)

        def make(max_iter):
            loss, solver = ROWS[cfg["loss"]]
            return cls(loss=loss, solver=solver, c1=cfg["c1"], c2=cfg["c2"], max_iter=max_iter,
                       n_jobs=cfg["n_jobs"], random_state=0, verbose=cfg["verbose"])

    data = load_data(cfg)
    F_train, y_train, F_test, y_test = (data[k] for k in ("F_train", "y_train",
                                                          "F_test", "y_test"))
    res.update(read_s=data["read_s"], feat_s=data["feat_s"],
               n_train_sent=len(F_train), n_train_tok=sum(map(len, F_train)),
               n_test_sent=len(F_test), n_test_tok=sum(map(len, F_test)),
               rss_before_fit=peak_rss_mb())

    if cfg["model"] == "sklearn-crfsuite" and cfg.get("end_to_end"):
        # The users' own features, timed on the raw sentences (the model
        # below is trained on them when --features local, on TokenFeatures'
        # otherwise: the same features).
        raw = raw_data(cfg)
        for part in ("train", "test"):
            t0 = time.perf_counter()
            features = [template_features(s) for s in raw[f"X_{part}"]]
            res[f"user_feat_{part}_s"] = time.perf_counter() - t0
            res[f"user_feat_{part}_dicts"] = sum(map(len, features))

    if cfg["model"] != "sklearn-crfsuite":
        # Loads (or compiles) the numba kernels of fit and predict, which a
        # user pays once per process rather than per call; timed apart.
        t0 = time.perf_counter()
        warm = make(2).fit(F_train[:WARMUP_SENTENCES], y_train[:WARMUP_SENTENCES])
        warm.predict(F_test[:WARMUP_SENTENCES])
        res["warmup_s"] = time.perf_counter() - t0

    model = make(cfg["max_iter"])
    t0, c0 = time.perf_counter(), time.process_time()
    model.fit(F_train, y_train)
    res["fit_s"] = time.perf_counter() - t0
    res["fit_cpu_s"] = time.process_time() - c0
    res["n_iter"] = n_iterations(model)
    for name in ("objective_", "duality_gap_"):
        value = getattr(model, name, None)
        if value is not None:
            res[name.rstrip("_")] = float(value)

    t0, c0 = time.perf_counter(), time.process_time()
    y_pred = model.predict(F_test)
    res["predict_s"] = time.perf_counter() - t0
    res["predict_cpu_s"] = time.process_time() - c0
    res["tok_s"] = res["n_test_tok"] / res["predict_s"]
    y_pred = [list(p) for p in y_pred]

    res["f1_local"] = 100 * chunk_f1_local(y_test, y_pred)
    lib_f1 = library_chunk_f1()
    if lib_f1 is not None:
        res["f1_library"] = 100 * float(lib_f1(y_test, y_pred))
    res["f1"] = res.get("f1_library", res["f1_local"])
    res["rss_peak"] = peak_rss_mb()
    return res


def n_iterations(model):
    """Iterations the solver ran, when the model says so."""
    n = getattr(model, "n_iter_", None)
    if n is not None:
        return int(n)
    log = getattr(model, "training_log_", None)  # sklearn-crfsuite
    if log is not None and getattr(log, "iterations", None):
        return len(log.iterations)
    return None


def spawn(cfg, timeout):
    """Run one model in a fresh interpreter; its result dict."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(cfg),
               "--child-out", out]
        try:
            proc = subprocess.run(cmd, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return dict(cfg, skipped=f"stopped after the {timeout} s timeout")
        if proc.returncode != 0 or not os.path.exists(out):
            return dict(cfg, failed=f"child exited with status {proc.returncode} "
                        "(its traceback is above)")
        with open(out) as f:
            return json.load(f)


# --------------------------------------------------------------------------
# parent: checks, runs, table
# --------------------------------------------------------------------------


def check_pieces(data_dir, features):
    """Which reader / features the children use, with cross-checks; lines to print."""
    lines = []
    lib_read = library_reader()
    train_path = str(data_dir / "train.txt")
    X_local, y_local = read_conll_local(train_path)
    if lib_read is None:
        reader = "local"
        lines.append("reader: local (sksparse_struct.datasets.read_conll not available)")
    else:
        reader = "library"
        X_lib, y_lib = lib_read(train_path)
        same = ([[dict(t) for t in s] for s in X_lib] == X_local
                and [list(s) for s in y_lib] == y_local)
        lines.append("reader: sksparse_struct.datasets.read_conll "
                     f"({'same' if same else 'DIFFERENT'} sentences as the local reader "
                     "on train.txt)")

    tf = library_featurizer() if features != "local" else None
    if features == "library" and tf is None:
        raise SystemExit("--features library: sksparse_struct.feature_extraction."
                         "TokenFeatures is not importable")
    if tf is None:
        used = "local"
        lines.append("features: local copy of the CRFsuite chunking template"
                     + (" (TokenFeatures not available)" if features == "auto" else ""))
    else:
        used = "library"
        # Names may be spelled differently; the number of features of every
        # token must be the template's.
        sample = X_local[:1000]
        ours = tf.fit(sample).transform(sample)
        counts_lib = [len(t) for s in ours for t in s]
        counts_loc = [len(t) for s in sample for t in template_features(s)]
        same = counts_lib == counts_loc
        lines.append('features: sksparse_struct TokenFeatures(preset="conll2000") '
                     f"({'same' if same else 'DIFFERENT'} number of features per token "
                     "as the CRFsuite template on the first 1000 training sentences)")
    return reader, used, lines


def peer_versions():
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for dist in ("sklearn-crfsuite", "python-crfsuite"):
        try:
            out.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            out.append(f"{dist}: not installed")
    return out


def fmt_int(x):
    return "-" if x is None else f"{x:,.0f}"


def _row_label(row):
    if row is None:
        return "-"
    loss, solver = ROWS[row]
    return loss if solver == "auto" else f"{loss} ({solver})"


def build_report(results, args):
    """The lines after the header: sizes, table, per-model details, reference."""
    ref = next((r for r in results if r["model"] == "sklearn-crfsuite"
                and "fit_s" in r), None)
    rows, notes = [], []
    for r in results:
        if r["model"] == "ours end to end":
            continue
        name = (f"{r['model']} {r['loss']} n_jobs={r.get('n_jobs')}" if r["model"] == "ours"
                else r["model"])
        if "fit_s" not in r:
            notes.append(f"skipped: {name} ({r.get('skipped') or r.get('failed')})")
            continue
        fit_ratio = tok_ratio = None
        if ref is not None and r is not ref:
            fit_ratio = r["fit_s"] / ref["fit_s"]
            tok_ratio = r["tok_s"] / ref["tok_s"]
        rows.append([
            r["model"], _row_label(r["loss"]), r.get("n_jobs", "-"), r["max_iter"],
            "-" if r["n_iter"] is None else r["n_iter"],
            f"{r['f1']:.2f}", fmt(r["fit_s"]), fmt(fit_ratio), fmt_int(r["tok_s"]),
            fmt(tok_ratio), fmt(r["rss_before_fit"]), fmt(r["rss_peak"]),
        ])
        detail = (f"{name}: read {fmt(r['read_s'])} s, features {fmt(r['feat_s'])} s, "
                  f"CPU time of this process in fit {fmt(r['fit_cpu_s'])} s and in "
                  f"predict {fmt(r['predict_cpu_s'])} s")
        if "warmup_s" in r:
            detail += f", warm-up fit {fmt(r['warmup_s'])} s (not in fit s)"
        if r.get("duality_gap") is not None:
            detail += (f", final objective {r['objective']:.6g} with duality gap "
                       f"{r['duality_gap']:.4g} ({r['duality_gap'] / r['objective']:.2%})")
        if "f1_library" in r:
            agree = abs(r["f1_library"] - r["f1_local"]) < 1e-9
            detail += (f", chunk F1 metrics.chunk_f1_score {r['f1_library']:.4f} / local "
                       f"conlleval {r['f1_local']:.4f} ({'agree' if agree else 'DISAGREE'})")
        else:
            detail += ", chunk F1 from the local conlleval port"
        notes.append(detail)
    sizes = next((r for r in results if "n_train_tok" in r), None)
    header = ["model", "loss", "n_jobs", "max_iter", "iters", "chunk F1", "fit s", "fit ratio",
              "predict tok/s", "tok/s ratio", "RSS before fit MB", "peak RSS MB"]
    lines = []
    if sizes is not None:
        lines.append(f"train: {sizes['n_train_sent']:,} sentences, "
                     f"{sizes['n_train_tok']:,} tokens; test: {sizes['n_test_sent']:,} "
                     f"sentences, {sizes['n_test_tok']:,} tokens")
    lines += [
        f"c1={args.c1}, c2={args.c2}; ours: random_state=0, default solvers (L-BFGS for "
        "crf, AdaGrad for hinge and the SparseMAP losses, averaged perceptron; the row "
        "'hinge (bcfw)': block-coordinate Frank-Wolfe, C = 1 / (2 c2)); "
        "sklearn-crfsuite is single-threaded",
        "",
        "CoNLL-2000 chunking; chunk F1 (conlleval, %) on test; fit s = wall clock of "
        "fit on feature dicts; ratios = ours / sklearn-crfsuite (fit ratio < 1 and "
        "tok/s ratio > 1 favour ours); RSS = peak resident memory of the model's own "
        "process, before fit (data and features) and overall",
        "",
        rst_table(header, rows) if rows else "(no model ran)",
        "",
    ]
    lines += notes
    lines += end_to_end_report(results, ref)
    try:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        lines += ["", f"load average at the end (1, 5, 15 min): {load}"]
    except OSError:
        pass
    lines += [
        "",
        "reference figures (sklearn-crfsuite, measured on another machine): "
        f"F1 {REFERENCE['f1']}, fit {REFERENCE['fit']} s, predict "
        f"{REFERENCE['tok_s']:,} tok/s; targets for ours loss=crf: F1 >= 93.5, fit "
        "ratio <= 1.0, tok/s ratio >= 1.0 (same run)",
    ]
    return lines


def end_to_end_report(results, ref):
    """The end-to-end table (raw columns in, labels out) and its notes."""
    ours = [r for r in results if r["model"] == "ours end to end"]
    if not ours:
        return []
    lines = ["", "End to end (raw columns in, labels out): fit s = features of the "
             "training sentences + fit, predict tok/s = test tokens / (features of the "
             "test sentences + predict); ratios = ours / sklearn-crfsuite (targets: fit "
             "ratio <= 0.5, tok/s ratio >= 5); sklearn-crfsuite with its users' dict "
             "features (template_features), ours Pipeline([TokenFeatures(preset="
             "'conll2000', output='matrix'), LinearChainCRF(loss='crf')])", ""]
    rows, notes = [], []
    base = None
    if ref is not None and "user_feat_train_s" in ref:
        base = {"fit_s": ref["user_feat_train_s"] + ref["fit_s"],
                "tok_s": ref["n_test_tok"] / (ref["user_feat_test_s"] + ref["predict_s"])}
        rows.append(["sklearn-crfsuite", "1", f"{ref['f1']:.2f}", fmt(base["fit_s"]), "-",
                     fmt_int(base["tok_s"]), "-"])
        notes.append("sklearn-crfsuite end to end: template_features "
                     f"{fmt(ref['user_feat_train_s'])} s on train, "
                     f"{fmt(ref['user_feat_test_s'])} s on test; fit {fmt(ref['fit_s'])} s, "
                     f"predict {fmt(ref['predict_s'])} s")
    for r in ours:
        name = f"ours end to end n_jobs={r.get('n_jobs')}"
        if "fit_s" not in r:
            notes.append(f"skipped: {name} ({r.get('skipped') or r.get('failed')})")
            continue
        fit_ratio = tok_ratio = None
        if base is not None:
            fit_ratio = r["fit_s"] / base["fit_s"]
            tok_ratio = r["tok_s"] / base["tok_s"]
        rows.append(["ours (pipeline)", r["n_jobs"], f"{r['f1']:.2f}", fmt(r["fit_s"]),
                     fmt(fit_ratio), fmt_int(r["tok_s"]), fmt(tok_ratio)])
        notes.append(f"{name}: {r['n_features']:,} features, {r['n_iter']} iterations, "
                     f"CPU time of this process in fit {fmt(r['fit_cpu_s'])} s and in predict "
                     f"{fmt(r['predict_cpu_s'])} s, warm-up {fmt(r['warmup_s'])} s (not in "
                     f"fit s), peak RSS {fmt(r['rss_peak'])} MB")
    header = ["model", "n_jobs", "chunk F1", "fit s", "fit ratio", "predict tok/s",
              "tok/s ratio"]
    return lines + [rst_table(header, rows), ""] + notes


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None,
                        help="directory holding train.txt and test.txt (default: "
                        "$SKSPARSE_STRUCT_SHARED_DATA/conll2000)")
    parser.add_argument("--losses", default=",".join(ALL_LOSSES),
                        help="comma-separated losses of ours to run, or 'none' "
                        f"(default {','.join(ALL_LOSSES)})")
    parser.add_argument("--no-crfsuite", action="store_true",
                        help="do not run sklearn-crfsuite (no ratios then)")
    parser.add_argument("--max-iter", type=int, default=100,
                        help="iterations for sklearn-crfsuite and ours loss=crf")
    parser.add_argument("--max-iter-online", type=int, default=10,
                        help="epochs for the other losses of ours (default 10)")
    parser.add_argument("--c1", type=float, default=0.0)
    parser.add_argument("--c2", type=float, default=1.0)
    parser.add_argument("--n-jobs", default="1,2",
                        help="n_jobs of ours: loss=crf runs once per value of this "
                             "comma-separated list, the other losses with the last one")
    parser.add_argument("--features", choices=["auto", "library", "local"],
                        default="auto",
                        help="TokenFeatures(preset='conll2000') or the local template "
                        "(auto: the former when importable)")
    parser.add_argument("--no-end-to-end", action="store_true",
                        help="leave out the end-to-end table (raw columns in, labels out)")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke run on the first {QUICK_TRAIN} training and "
                        f"{QUICK_TEST} test sentences")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds after which a model's process is stopped")
    parser.add_argument("--verbose", type=int, default=0,
                        help="verbose= given to the models (progress on stderr)")
    parser.add_argument("--out", type=Path, default=None,
                        help="also write the report to this file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child is not None:
        res = run_child(json.loads(args.child))
        with open(args.child_out, "w") as f:
            json.dump(res, f)
        return

    data_dir = args.data if args.data is not None else default_data_dir()
    if data_dir is None:
        print("skipped: no data folder; pass --data DIR or set SKSPARSE_STRUCT_SHARED_DATA")
        return 0
    if not ((data_dir / "train.txt").is_file() and (data_dir / "test.txt").is_file()):
        print(f"skipped: CoNLL-2000 train.txt / test.txt not found in {data_dir} "
              "(give the directory with --data)")
        return
    losses = [] if args.losses.strip() == "none" else [
        s.strip() for s in args.losses.split(",") if s.strip()]
    unknown = sorted(set(losses) - set(ALL_LOSSES))
    if unknown:
        parser.error(f"unknown loss(es) {unknown}; choose among {ALL_LOSSES} or 'none'")

    header_lines = machine_header() + peer_versions()
    reader, features, check_lines = check_pieces(data_dir, args.features)
    header_lines += [f"data: {data_dir}"] + check_lines
    if args.quick:
        header_lines.append(f"--quick: first {QUICK_TRAIN} training and {QUICK_TEST} "
                            "test sentences only (smoke run, not comparable to the "
                            "reference)")
    for line in header_lines:
        print(line, flush=True)
    print(flush=True)

    n_jobs_list = [int(v) for v in str(args.n_jobs).split(",") if v.strip()]
    base = dict(data=str(data_dir), reader=reader, features=features, c1=args.c1,
                c2=args.c2, n_jobs=n_jobs_list[-1], verbose=args.verbose,
                n_train=QUICK_TRAIN if args.quick else None,
                n_test=QUICK_TEST if args.quick else None)
    configs, results = [], []
    end_to_end = not args.no_end_to_end
    if not args.no_crfsuite:
        configs.append(dict(base, model="sklearn-crfsuite", loss=None,
                            max_iter=args.max_iter, end_to_end=end_to_end))
    unavailable = []
    cls, why = our_estimator_class()
    if cls is None and losses:
        # One message rather than one per loss.
        unavailable.append(dict(model="ours", loss=",".join(losses), skipped=why))
        losses = []
    for loss in losses:
        for n_jobs in (n_jobs_list if loss == "crf" else n_jobs_list[-1:]):
            configs.append(dict(base, model="ours", loss=loss, n_jobs=n_jobs,
                                max_iter=args.max_iter if loss == "crf"
                                else args.max_iter_online))
    if end_to_end and cls is not None and "crf" in losses:
        for n_jobs in n_jobs_list:
            configs.append(dict(base, model="ours end to end", loss="crf", n_jobs=n_jobs,
                                max_iter=args.max_iter))
    for cfg in configs:
        name = cfg["model"] + (f" loss={cfg['loss']} n_jobs={cfg['n_jobs']}"
                               if cfg["loss"] else "")
        print(f"running {name} ...", flush=True)
        results.append(spawn(cfg, args.timeout))
    results += unavailable
    print(flush=True)

    body = build_report(results, args)
    print("\n".join(body))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(header_lines + [""] + body) + "\n")


if __name__ == "__main__":
    main()
