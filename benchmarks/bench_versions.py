"""Two versions of sksparse_struct side by side, in one process: is a change faster or slower?

For contributors. The baseline is any git revision of this repository: its
``sksparse_struct`` folder is extracted into a temporary directory under the
name ``sksparse_struct_baseline`` and imported next to the working copy, so
both versions run in the same process, on the same data, alternately
(baseline, current, current, baseline, ...), which cancels most of the drift
in the machine's speed. Run from the repository::

    python benchmarks/bench_versions.py --baseline HEAD~3 --data DIR
    python benchmarks/bench_versions.py --baseline main --only parser --repeats 5

``DIR`` holds ``conll2000/{train,test}.txt`` and
``ud/UD_English-EWT/en_ewt-ud-{train,test}.conllu`` (or set
``SKSPARSE_STRUCT_SHARED_DATA``). Measured, with ``n_jobs=2``:

* ``crf``: ``LinearChainCRF(loss="crf", c2=1.0, max_iter=100)`` fit on
  CoNLL-2000 (L-BFGS; feature dicts from ``TokenFeatures(preset="conll2000")``);
* ``tagger``: the online losses of ``LinearChainCRF`` ("hinge",
  "sparsemap", "margin_sparsemap": AdaGrad; "perceptron"), ``--epochs``
  epochs on CoNLL-2000, with the test chunk F1 of each version;
* ``parser``: one epoch of ``SparseMAPParser`` per loss on UD English-EWT
  (rich features, Eisner, relation labels), with its test UAS.

Each version encodes its own input (an estimator only accepts its own
version's encoded sentences), outside the timings. Compilation is kept out
of the timings by a warm-up fit on a few sentences. The table gives the
median time of each version over ``--repeats`` runs and their ratio
(current / baseline: below 1 means the current code is faster).
"""

import argparse
import importlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import _bench_utils as bu

REPO = Path(__file__).resolve().parents[1]
BASELINE = "sksparse_struct_baseline"
PARSER_LOSSES = ("perceptron", "hinge", "crf", "sparsemap", "margin_sparsemap")
TAGGER_LOSSES = ("hinge", "sparsemap", "margin_sparsemap", "perceptron")


def default_data_dir():
    env = os.environ.get("SKSPARSE_STRUCT_SHARED_DATA")
    return Path(env) if env else None


def extract_baseline(revision, where):
    """``sksparse_struct`` at ``revision``, importable as ``sksparse_struct_baseline``."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", revision, "sksparse_struct"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    package = Path(where) / BASELINE
    (Path(where) / "sksparse_struct").rename(package)
    # The package finds its bundled data by its own name in one place.
    for path in package.rglob("*.py"):
        text = path.read_text()
        if '"sksparse_struct.' in text:
            path.write_text(text.replace('"sksparse_struct.', f'"{BASELINE}.'))
    sys.path.insert(0, str(where))
    return importlib.import_module(BASELINE)


def alternate(fits, repeats):
    """``{name: [seconds, ...]}``: the fits run alternately, ``repeats`` times each."""
    times = {name: [] for name in fits}
    names = list(fits)
    for r in range(repeats):
        for name in (names if r % 2 == 0 else names[::-1]):
            t0 = time.perf_counter()
            fits[name]()
            times[name].append(time.perf_counter() - t0)
    return times


def conll_data(package, data_dir):
    from sksparse_struct.datasets import read_conll

    X, y = read_conll(data_dir / "conll2000" / "train.txt")
    Xt, yt = read_conll(data_dir / "conll2000" / "test.txt")
    features = package.feature_extraction.TokenFeatures(preset="conll2000")
    return features.fit_transform(X), y, features.transform(Xt), yt


def ewt_data(package, data_dir):
    from sksparse_struct.datasets import read_conllu

    folder = data_dir / "ud" / "UD_English-EWT"
    X, heads, deprels = read_conllu(folder / "en_ewt-ud-train.conllu", return_deprel=True)
    Xt, yt = read_conllu(folder / "en_ewt-ud-test.conllu")
    encoder = package.feature_extraction.ArcFeatures()
    return (encoder.fit_transform(X), list(zip(heads, deprels)), encoder.transform(Xt), yt)


def bench_crf(versions, data, repeats):
    rows = []
    fits = {}
    for label, package in versions.items():
        X, y, _, _ = data[label]
        model = package.LinearChainCRF

        def fit(model=model, X=X, y=y):
            model(loss="crf", c2=1.0, max_iter=100, n_jobs=2).fit(X, y)

        model(loss="crf", max_iter=2).fit(X[:20], y[:20])  # compile
        fits[label] = fit
    times = alternate(fits, repeats)
    rows.append(_row("tagger", "crf (L-BFGS, 100 it.)", times, "-", "-"))
    return rows


def bench_tagger(versions, data, repeats, epochs):
    from sksparse_struct.metrics import chunk_f1_score

    rows = []
    for loss in TAGGER_LOSSES:
        fits, scores = {}, {}
        for label, package in versions.items():
            X, y, Xt, yt = data[label]
            package.LinearChainCRF(loss=loss, max_iter=1).fit(X[:20], y[:20])  # compile

            def fit(package=package, X=X, y=y, Xt=Xt, yt=yt, label=label):
                model = package.LinearChainCRF(loss=loss, max_iter=epochs, random_state=0,
                                               n_jobs=2).fit(X, y)
                scores[label] = 100 * chunk_f1_score(yt, model.predict(Xt))

            fits[label] = fit
        times = alternate(fits, repeats)
        rows.append(_row("tagger", f"{loss} ({epochs} epochs)", times,
                         f"{scores['baseline']:.2f}", f"{scores['current']:.2f}"))
    return rows


def bench_parser(versions, data, repeats):
    from sksparse_struct.metrics import uas_score

    rows = []
    for loss in PARSER_LOSSES:
        fits, scores = {}, {}
        for label, package in versions.items():
            X, y, Xt, yt = data[label]
            package.SparseMAPParser(loss, max_iter=1).fit(X[:20], y[:20])  # compile

            def fit(package=package, X=X, y=y, Xt=Xt, yt=yt, label=label):
                model = package.SparseMAPParser(loss, max_iter=1, random_state=0,
                                                n_jobs=2).fit(X, y)
                scores[label] = 100 * uas_score(yt, model.predict(Xt))

            fits[label] = fit
        times = alternate(fits, repeats)
        rows.append(_row("parser", f"{loss} (1 epoch)", times,
                         f"{scores['baseline']:.2f}", f"{scores['current']:.2f}"))
    return rows


def _row(model, what, times, score_baseline, score_current):
    base = statistics.median(times["baseline"])
    cur = statistics.median(times["current"])
    return [model, what, bu.fmt(base), bu.fmt(cur), f"{cur / base:.3f}",
            " ".join(bu.fmt(t) for t in times["baseline"]),
            " ".join(bu.fmt(t) for t in times["current"]), score_baseline, score_current]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", required=True, help="git revision to compare with")
    parser.add_argument("--data", type=Path, default=None, help="data folder (see above)")
    parser.add_argument("--only", default="crf,tagger,parser",
                        help="comma-separated subset of crf, tagger, parser")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3, help="epochs of the online taggers")
    parser.add_argument("--out", type=Path, default=None, help="also write the report here")
    args = parser.parse_args()
    data_dir = args.data or default_data_dir()
    if data_dir is None:
        sys.exit("no data folder: pass --data DIR or set SKSPARSE_STRUCT_SHARED_DATA")
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    import sksparse_struct

    with tempfile.TemporaryDirectory() as tmp:
        baseline = extract_baseline(args.baseline, tmp)
        versions = {"baseline": baseline, "current": sksparse_struct}
        rows = []
        parts = args.only.split(",")
        if "crf" in parts or "tagger" in parts:
            conll = {label: conll_data(p, data_dir) for label, p in versions.items()}
            if "crf" in parts:
                rows += bench_crf(versions, conll, args.repeats)
            if "tagger" in parts:
                rows += bench_tagger(versions, conll, args.repeats, args.epochs)
            del conll
        if "parser" in parts:
            ewt = {label: ewt_data(p, data_dir) for label, p in versions.items()}
            rows += bench_parser(versions, ewt, args.repeats)
    revision = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", args.baseline],
                              capture_output=True, text=True).stdout.strip()
    current = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                             capture_output=True, text=True).stdout.strip()
    header = ["model", "fit", "baseline s", "current s", "ratio", "baseline runs",
              "current runs", "score baseline", "score current"]
    report = "\n".join([
        *bu.machine_header(),
        f"baseline {args.baseline} ({revision}), current {current}; n_jobs=2, "
        f"{args.repeats} alternating runs each, medians; scores: chunk F1 / UAS on test",
        "",
        bu.rst_table(header, rows),
        "",
        f"total benchmark time {time.perf_counter() - start:.0f} s",
    ])
    print(report)
    if args.out:
        args.out.write_text(report + "\n")


if __name__ == "__main__":
    main()
