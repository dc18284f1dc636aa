"""First- vs second-order dependency parsing on UD English-EWT.

Run from anywhere, in an environment where sksparse_struct is installed::

    python benchmarks/bench_second_order.py                       # Eisner, hinge, 5 epochs
    python benchmarks/bench_second_order.py --decoders eisner cle --losses hinge
    python benchmarks/bench_second_order.py --quick               # 1,000 sentences, 2 epochs
    python benchmarks/bench_second_order.py --out benchmarks/results/bench_second_order.txt

Data: ``UD_English-EWT`` (``en_ewt-ud-{train,test}.conllu``) in the folder
given with ``--data DIR`` (or in ``$SKSPARSE_STRUCT_SHARED_DATA/ud``). Gold
tags, lemmas and features; punctuation included; relation labels learnt.

For every decoder and loss, one first-order parser (``parts=("arc",)``)
and the second-order ones asked for (``--parts``; default the standard
model, arcs + siblings + grandparents) are trained with the same loss,
epochs, ``alpha`` and seed, one after the other in the same run, then parse
the test set. Columns:

* UAS, LAS on test (percent);
* s/epoch: mean wall time of the training epochs after the first (the
  first also holds the pruner's training and the graphs' construction:
  all is in *fit s*);
* tok/s: test tokens parsed per second (``predict``, ``n_jobs`` threads),
  pruning and graph construction included; *tok/s 1 thr*: the same on one
  thread;
* certified, b&b, rounded: how the test parses were decoded (percent of
  sentences: the LP relaxation's tree certified optimal by its dual bound,
  proven optimal by branch-and-bound, or the best tree found);
* lp cap: test sentences whose LP hit ``lp_max_iter``.

A row ``1st pruned`` decodes the test set with the first-order parser's
arc scores restricted to the candidate arcs that the second-order parser's
pruner keeps (what pruning alone costs).

A second table measures the relaxation of each second-order parser on the
development set: the share of sentences certified, the mean AD3
iterations, the sentences at the iteration cap, and UAS three ways: the
rounded relaxation alone (``max_bb_nodes=0``), the default
(``max_bb_nodes=4``) and exact decoding (branch-and-bound up to
``EXACT_NODES`` nodes; the sentences left unproven are counted).
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _bench_utils import machine_header, rst_table  # noqa: E402

PARTS = {"1st": ("arc",), "sib": ("arc", "sibling"), "gp": ("arc", "grandparent"),
         "std": ("arc", "sibling", "grandparent")}


def default_data_dir():
    env = os.environ.get("SKSPARSE_STRUCT_SHARED_DATA")
    return Path(env) / "ud" if env else None


def load_split(data_dir, split, limit):
    from sksparse_struct.datasets import read_conllu

    path = Path(data_dir) / "UD_English-EWT" / f"en_ewt-ud-{split}.conllu"
    X, heads, deprels = read_conllu(path, return_deprel=True)
    y = list(zip(heads, deprels))
    if limit:
        X, y = X[:limit], y[:limit]
    return X, y


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=default_data_dir())
    parser.add_argument("--decoders", nargs="+", default=["eisner"], choices=["eisner", "cle"])
    parser.add_argument("--losses", nargs="+", default=["hinge"])
    parser.add_argument("--parts", nargs="+", default=["std"], choices=sorted(PARTS))
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.data is None:
        sys.exit("give --data DIR (holding UD_English-EWT) or set SKSPARSE_STRUCT_SHARED_DATA")
    from sksparse_struct import SparseMAPParser
    from sksparse_struct.metrics import las_score, uas_score

    limit = 1000 if args.quick else None
    epochs = 2 if args.quick else args.epochs
    X_train, y_train = load_split(args.data, "train", limit)
    X_test, y_test = load_split(args.data, "test", None if not args.quick else 500)
    X_dev, y_dev = load_split(args.data, "dev", None if not args.quick else 500)
    heads_dev = [y[0] for y in y_dev]
    n_tokens = sum(len(s) for s in X_test)
    heads_test = [y[0] for y in y_test]
    rows = []
    relaxation = []
    start = time.time()
    for decoder in args.decoders:
        for loss in args.losses:
            first = None
            for name in ["1st"] + [p for p in args.parts if p != "1st"]:
                model = SparseMAPParser(loss, projective=decoder == "eisner", parts=PARTS[name],
                                        max_iter=epochs, tol=None, random_state=0,
                                        n_jobs=args.n_jobs)
                times = []
                t0 = time.time()
                model.set_params(verbose=0)
                model._report = _timer(model._report, times)
                model.fit(X_train, y_train)
                fit_s = time.time() - t0
                del model._report
                t0 = time.time()
                heads, deprels = model.predict(X_test, return_deprel=True)
                tok_s = n_tokens / (time.time() - t0)
                model.set_params(n_jobs=1)
                t0 = time.time()
                model.predict(X_test)
                tok_s_1 = n_tokens / (time.time() - t0)
                model.set_params(n_jobs=args.n_jobs)
                uas = 100 * uas_score(heads_test, heads)
                las = 100 * las_score(heads_test, heads, [y[1] for y in y_test], deprels)
                counts = getattr(model, "decoding_counts_", None)
                n = len(X_test)
                pct = (lambda k: f"{100 * counts[k] / n:.1f}") if counts else (lambda k: "")
                epoch_s = np.mean(np.diff(times)) if len(times) > 1 else times[0]
                rows.append([decoder, loss, name, str(epochs), f"{uas:.2f}", f"{las:.2f}",
                             f"{epoch_s:.1f}", f"{fit_s:.0f}", f"{tok_s:,.0f}",
                             f"{tok_s_1:,.0f}", pct("certified"), pct("branch_and_bound"),
                             pct("rounded"), str(counts["lp_not_converged"]) if counts else ""])
                print(" ".join(rows[-1]), flush=True)
                if name == "1st":
                    first = model
                    continue
                if not any(r[2] == "1st pruned" and r[0] == decoder and r[1] == loss
                           for r in rows):
                    uas = 100 * uas_score(heads_test, pruned_first_order(first, model, X_test))
                    rows.append([decoder, loss, "1st pruned", str(epochs), f"{uas:.2f}"]
                                + [""] * 9)
                    print(" ".join(rows[-1]), flush=True)
                relaxation.append([decoder, loss, name]
                                  + relaxation_quality(model, X_dev, heads_dev, uas_score))
                print(" ".join(relaxation[-1]), flush=True)
    header = ["decoder", "loss", "parts", "epochs", "UAS", "LAS", "s/epoch", "fit s", "tok/s",
              "tok/s 1 thr", "certified", "b&b", "rounded", "lp cap"]
    text = ("\n".join(machine_header())
            + "\n\nSparseMAPParser on UD English-EWT test (gold tags), "
            f"first vs second order, n_jobs={args.n_jobs}\n\n" + rst_table(header, rows)
            + "\n\nRelaxation of the second-order parsers on UD English-EWT dev: certified "
            "(percent of sentences), mean AD3 iterations, sentences at lp_max_iter, and UAS "
            "with the rounded relaxation, the default decoding and exact decoding "
            f"(branch-and-bound up to {EXACT_NODES} nodes; unproven: sentences where that was "
            "not enough)\n\n"
            + rst_table(["decoder", "loss", "parts", "certified", "AD3 iter", "lp cap",
                         "UAS rounded", "UAS default", "UAS exact", "unproven"],
                        relaxation)
            + f"\n\ntotal benchmark time {time.time() - start:.0f} s\n")
    print(text)
    if args.out:
        Path(args.out).write_text(text)


def pruned_first_order(first, second, X):
    """The first-order parser's trees over the arcs the second-order parser's pruner keeps."""
    from sksparse_struct.parsing._pruning import prune_arcs
    from sksparse_struct.structures import DependencyTree

    tree = DependencyTree(projective=bool(first.projective), single_root=bool(first.single_root))
    heads = []
    for S, P in zip(first.decision_function(X), second.pruner_.predict_marginals(X)):
        mask = prune_arcs(P, max_heads=second.pruner_max_heads,
                          threshold=second.pruner_threshold, projective=bool(first.projective),
                          single_root=bool(first.single_root))
        heads.append(np.asarray(tree.map(np.where(mask, S, -np.inf)))[1:])
    return heads


# Branch-and-bound nodes per sentence for "exact" decoding: enough to prove
# the MAP of every trained model's sentence seen so far, and a bound on the
# time an undertrained model's long sentences take (the unproven ones are
# counted).
EXACT_NODES = 1000


def relaxation_quality(model, X, heads, uas_score):
    """Certified %, mean AD3 iterations, iteration cap, UAS rounded / default / exact, unproven."""
    default = model.max_bb_nodes
    out = {}
    for nodes in (0, default, EXACT_NODES):
        model.set_params(max_bb_nodes=nodes)
        with warnings.catch_warnings():  # the iteration cap is a column of the table
            warnings.simplefilter("ignore")
            predicted = model.predict(X)
        out[nodes] = (100 * uas_score(heads, predicted), dict(model.decoding_counts_))
    model.set_params(max_bb_nodes=default)
    counts = out[default][1]
    n = len(X)
    return [f"{100 * counts['certified'] / n:.1f}", f"{counts['lp_iterations'] / n:.1f}",
            str(counts["lp_not_converged"]), f"{out[0][0]:.2f}", f"{out[default][0]:.2f}",
            f"{out[EXACT_NODES][0]:.2f}", str(out[EXACT_NODES][1]["rounded"])]


def _timer(report, times):
    """Wrap the estimator's per-epoch callback to record the epochs' end times."""
    t0 = time.time()

    def wrapped(info, progress):
        times.append(time.time() - t0)
        return report(info, progress)

    return wrapped


if __name__ == "__main__":
    main()
