"""Argument mining on CDCP: linear baselines and structured SVMs, as in Table 7.2 of Niculae (2018).

Run from anywhere, in an environment where sksparse_struct is installed::

    python benchmarks/bench_cdcp.py                       # every row (about half an hour)
    python benchmarks/bench_cdcp.py --models strict       # one structured SVM row
    python benchmarks/bench_cdcp.py --max-iter 10         # fewer passes (smoke run)
    python benchmarks/bench_cdcp.py --max-iter 100        # the paper's 100 passes
    python benchmarks/bench_cdcp.py --out benchmarks/results/bench_cdcp.txt

Data: the ``train`` and ``test`` folders of the Cornell eRulemaking Corpus
(CDCP; per comment ``.txt``, ``.ann.json`` and the CoreNLP ``.txt.json`` and
PDTB ``.txt.pipe`` files) in the folder given with ``--data DIR`` (or in
``$SKSPARSE_STRUCT_SHARED_DATA/cdcp``). Not shipped with the package; the
script says so and stops when it is absent.

What is measured
----------------
Both splits are read with :func:`sksparse_struct.datasets.read_cdcp`
(nested propositions merged, links transitively closed) and encoded by one
:class:`~sksparse_struct.feature_extraction.ArgumentFeatures` fitted on the
training split. No word vectors are used (the paper's models had GloVe).

* Linear baselines ("B-SVM"): two independent linear classifiers without
  intercept, trained by L-BFGS on the smoothed hinge loss with an L2 penalty
  ``alpha = 1e-3`` (one-vs-rest for the proposition types; for links, the
  positive and negative classes weighted to balance). Decoded three ways:
  ``basic``, each proposition its best type and each link on iff its score
  is positive; ``full`` and ``strict``, the exact MAP of the factor graph of
  the structured model with the classifiers' scores as unary potentials, no
  compatibility or second-order scores, and the ``cdcp`` resp.
  ``cdcp_strict`` constraints.
* Structured SVMs ("S-SVM"), :class:`~sksparse_struct.StructuredSVMArgumentMiner`
  with the paper's settings: ``basic`` (no constraints, one shared
  compatibility table, no second order, C = 0.3); ``full`` (``cdcp``
  constraints, compatibility features, co-parent and sibling factors,
  C = 0.1); ``strict`` (the same with ``cdcp_strict``, C = 0.1); the
  miner's default number of passes of block-coordinate Frank-Wolfe (50; the
  paper ran 100, ``--max-iter 100``), ``random_state=0``, exact decoding.

Scores on the test split, pooled over comments (as the paper): link F1
(272 gold links), proposition macro-F1 over the five types, their mean, and
the F1 of each type; fit time (wall clock and CPU time of the process,
features excluded), passes, and
the share of integral loss-augmented LP solutions in pass 15 and in the last
pass (of the documents decoded in the pass: training decodes a document only
when its cached LP solutions fall behind), the final objective and duality
gap (tight LP solves), and the load average (1 min) before and after the fit.
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from _bench_utils import fmt, machine_header, rst_table
from scipy.optimize import minimize

LABELS = ["value", "policy", "testimony", "fact", "reference"]
PAPER = {  # Table 7.2 (average, link, proposition F1, %)
    "B-SVM basic": (47.4, 22.0, 72.7), "B-SVM full": (47.3, 21.9, 72.7),
    "B-SVM strict": (47.9, 23.8, 72.0), "S-SVM basic": (48.1, 24.7, 71.6),
    "S-SVM full": (49.3, 25.1, 73.5), "S-SVM strict": (50.0, 26.7, 73.2),
}
SSVM = {
    "basic": {"constraints": "none", "compat_features": False, "second_order": (), "C": 0.3},
    "full": {"constraints": "cdcp", "C": 0.1},
    "strict": {"constraints": "cdcp_strict", "C": 0.1},
}


def default_data_dir():
    shared = os.environ.get("SKSPARSE_STRUCT_SHARED_DATA")
    return Path(shared) / "cdcp" if shared else None


def smooth_hinge_classifier(X, y, alpha, sample_weight=None):
    """Weights minimising mean smoothed hinge(y * Xw) + alpha / 2 ||w||^2 (y in {-1, 1})."""
    n = X.shape[0]
    s = np.ones(n) if sample_weight is None else sample_weight

    def fun(w):
        m = y * (X @ w)
        loss = np.where(m >= 1, 0.0, np.where(m > 0, 0.5 * (1 - m) ** 2, 0.5 - m))
        dloss = np.where(m >= 1, 0.0, np.where(m > 0, m - 1, -1.0))
        g = X.T @ (s * dloss * y) / n + alpha * w
        return (s * loss).sum() / n + 0.5 * alpha * w @ w, g

    res = minimize(fun, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B",
                   options={"maxiter": 2000, "gtol": 1e-8})
    return res.x


def linear_baseline(F_train, y_train, alpha=1e-3):
    """Proposition weights (labels x features) and link weights of the independent classifiers."""
    import scipy.sparse as sp

    classes = sorted({label for labels, _ in y_train for label in labels})
    props = sp.vstack([doc.props for doc in F_train]).tocsr()
    labels = np.array([label for labels, _ in y_train for label in labels])
    W_prop = np.array([smooth_hinge_classifier(props, np.where(labels == c, 1.0, -1.0), alpha)
                       for c in classes])
    links = sp.vstack([doc.links for doc in F_train]).tocsr()
    on = np.concatenate([[1.0 if (s, t) in set(map(tuple, lk)) else -1.0
                          for s, t in doc.link_pairs] for doc, (_, lk) in zip(F_train, y_train)])
    n_pos, n = (on > 0).sum(), on.shape[0]
    weight = np.where(on > 0, n / (2 * n_pos), n / (2 * (n - n_pos)))
    w_link = smooth_hinge_classifier(links, on, alpha, weight)
    return np.array(classes, dtype=object), W_prop, w_link


def baseline_predict(F_test, classes, W_prop, w_link, decoding):
    from sksparse_struct import StructuredSVMArgumentMiner

    if decoding == "basic":
        out = []
        for doc in F_test:
            labels = [str(classes[c]) for c in np.argmax(doc.props @ W_prop.T, axis=1)]
            on = doc.links @ w_link > 0
            out.append((labels, sorted(map(tuple, doc.link_pairs[on].tolist()))))
        return out
    miner = StructuredSVMArgumentMiner(
        "cdcp" if decoding == "full" else "cdcp_strict", compat_features=False, second_order=())
    miner.set_unary_weights(classes, W_prop, np.vstack([np.zeros_like(w_link), w_link]))
    return miner.predict(F_test)


def scores(y_true, y_pred):
    from sksparse_struct.metrics import link_f1_score, proposition_f1_score

    link = 100 * link_f1_score(y_true, y_pred)
    per_class = 100 * np.asarray(proposition_f1_score(y_true, y_pred, average=None,
                                                      labels=LABELS))
    prop = per_class.mean()
    return [(link + prop) / 2, link, prop] + list(per_class)


def cdcp_features(data):
    """Both CDCP splits read and encoded by one ArgumentFeatures fitted on train.

    Returns ``(F_train, y_train, F_test, y_test, line)``, ``line`` describing
    the features and the time taken.
    """
    from sksparse_struct.datasets import read_cdcp
    from sksparse_struct.feature_extraction import ArgumentFeatures

    X_train, y_train = read_cdcp(data / "train")
    X_test, y_test = read_cdcp(data / "test")
    t0 = time.perf_counter()
    features = ArgumentFeatures().fit(X_train, y_train)
    F_train, F_test = features.transform(X_train), features.transform(X_test)
    line = (f"features: {F_train[0].props.shape[1]} proposition, "
            f"{F_train[0].links.shape[1]} link columns; fit and transform "
            f"{time.perf_counter() - t0:.1f} s")
    return F_train, y_train, F_test, y_test, line


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=default_data_dir())
    parser.add_argument("--models", default="baseline,basic,full,strict",
                        help="comma-separated among baseline, basic, full, strict")
    parser.add_argument("--max-iter", type=int, default=None,
                        help="passes of the SSVMs (default: the miner's, 50)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.data is None or not (args.data / "train").is_dir():
        print("skipped: no data folder; pass --data DIR or set SKSPARSE_STRUCT_SHARED_DATA")
        return

    from sksparse_struct import StructuredSVMArgumentMiner

    lines = machine_header()
    F_train, y_train, F_test, y_test, line = cdcp_features(args.data)
    lines.append(line)
    header = ["model", "average", "link", "prop.", *(c.upper() for c in LABELS), "fit s",
              "fit CPU s",
              "passes", "integral p15 %", "integral last %", "objective / gap",
              "load before / after fit", "paper avg/link/prop"]
    rows = []
    models = args.models.split(",")
    if "baseline" in models:
        t0 = time.perf_counter()
        classes, W_prop, w_link = linear_baseline(F_train, y_train)
        fit_time = time.perf_counter() - t0
        for decoding in ("basic", "full", "strict"):
            name = f"B-SVM {decoding}"
            y_pred = baseline_predict(F_test, classes, W_prop, w_link, decoding)
            rows.append([name, *map(fmt, scores(y_test, y_pred)), fmt(fit_time), "-", "-", "-",
                         "-", "-", "-", "/".join(map(str, PAPER[name]))])
            print(rows[-1], flush=True)
    for variant in ("basic", "full", "strict"):
        if variant not in models:
            continue
        name = f"S-SVM {variant}"
        passes = {} if args.max_iter is None else {"max_iter": args.max_iter}
        miner = StructuredSVMArgumentMiner(**SSVM[variant], **passes, random_state=0, verbose=1)
        load_before = f"{os.getloadavg()[0]:.2f}"
        t0, cpu0 = time.perf_counter(), time.process_time()
        miner.fit(F_train, y_train)
        fit_time, fit_cpu = time.perf_counter() - t0, time.process_time() - cpu0
        load_after = f"{os.getloadavg()[0]:.2f} ({os.getloadavg()[1]:.2f} over 5 min)"
        y_pred = miner.predict(F_test)
        integral = miner.integral_fraction_
        p15 = fmt(100 * integral[14]) if len(integral) >= 15 else "-"
        gap = miner.duality_gaps_[-1][1] if miner.duality_gaps_ else None
        objective = f"{fmt(miner.objective_)} / {fmt(gap)}" if gap is not None else "-"
        rows.append([name, *map(fmt, scores(y_test, y_pred)), fmt(fit_time), fmt(fit_cpu),
                     miner.n_iter_,
                     p15, fmt(100 * integral[-1]), objective, f"{load_before} / {load_after}",
                     "/".join(map(str, PAPER[name]))])
        print(rows[-1], flush=True)
    text = "\n".join(lines + ["", rst_table(header, rows)])
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
