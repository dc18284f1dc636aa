"""Argument mining on CDCP: the structured SVM beside the same model trained with LP-SparseMAP.

Run from anywhere, in an environment where sksparse_struct is installed::

    python benchmarks/bench_cdcp_sparsemap.py --data DIR
    python benchmarks/bench_cdcp_sparsemap.py --models margin_sparsemap,sparsemap
    python benchmarks/bench_cdcp_sparsemap.py --out benchmarks/results/bench_cdcp_sparsemap.txt

Data as for ``bench_cdcp.py`` (the CDCP ``train`` and ``test`` folders, in
``--data DIR`` or ``$SKSPARSE_STRUCT_SHARED_DATA/cdcp``).

What is measured
----------------
The strict model of ``bench_cdcp.py`` (``cdcp_strict`` constraints,
compatibility features, co-parent and sibling factors, ``C = 0.1``, exact
decoding), trained three ways in one run, one after the other:

* ``svm``: :class:`~sksparse_struct.StructuredSVMArgumentMiner` (multi-plane
  BCFW, 100 passes, ``random_state=0``);
* ``margin_sparsemap`` and ``sparsemap``:
  :class:`~sksparse_struct.SparseMAPArgumentMiner` with that loss (its
  defaults: AdaGrad, at most 30 epochs, each solving LP-SparseMAP on every
  training document, ``random_state=0``).

Scores on the test split, pooled over comments: the mean of link F1 and
proposition macro-F1, each of them, the F1 of each type; fit time (wall
clock, features excluded), iterations (passes for the SVM), and the load
average before and after the fit.
"""

import argparse
import os
import sys
import time
from pathlib import Path

from _bench_utils import fmt, machine_header, rst_table
from bench_cdcp import LABELS, SSVM, cdcp_features, default_data_dir, scores


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=default_data_dir())
    parser.add_argument("--models", default="svm,margin_sparsemap,sparsemap",
                        help="comma-separated among svm, margin_sparsemap, sparsemap")
    parser.add_argument("--max-iter", type=int, default=None,
                        help="epochs (SparseMAP) and passes (SVM); default: each one's own")
    parser.add_argument("--C", type=float, default=SSVM["strict"]["C"])
    parser.add_argument("--n-jobs", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.data is None or not (args.data / "train").is_dir():
        print("skipped: no data folder; pass --data DIR or set SKSPARSE_STRUCT_SHARED_DATA")
        return

    from sksparse_struct import SparseMAPArgumentMiner, StructuredSVMArgumentMiner

    lines = machine_header()
    F_train, y_train, F_test, y_test, _ = cdcp_features(args.data)
    header = ["model", "average", "link", "prop.", *(c.upper() for c in LABELS), "fit s",
              "iterations", "load before / after fit"]
    rows = []
    settings = {**SSVM["strict"], "C": args.C}
    for name in args.models.split(","):
        if name == "svm":
            miner = StructuredSVMArgumentMiner(**settings, random_state=0, n_jobs=args.n_jobs)
        else:
            miner = SparseMAPArgumentMiner(**settings, loss=name, random_state=0,
                                           n_jobs=args.n_jobs, verbose=5)
        if args.max_iter is not None:
            miner.set_params(max_iter=args.max_iter)
        load_before = f"{os.getloadavg()[0]:.2f}"
        t0 = time.perf_counter()
        miner.fit(F_train, y_train)
        fit_time = time.perf_counter() - t0
        load_after = f"{os.getloadavg()[0]:.2f}"
        y_pred = miner.predict(F_test)
        label = "S-SVM strict" if name == "svm" else f"{name} strict"
        rows.append([label, *map(fmt, scores(y_test, y_pred)), fmt(fit_time), miner.n_iter_,
                     f"{load_before} / {load_after}"])
        print(rows[-1], flush=True)
    text = "\n".join(lines + [f"C = {args.C}", "", rst_table(header, rows)])
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
