"""First-order arc pruning for second-order parsing, on UD English-EWT.

Run from anywhere, in an environment where sksparse_struct is installed::

    python benchmarks/bench_pruning.py                 # both decoders, K 5/10, 1e-4/1e-3
    python benchmarks/bench_pruning.py --quick         # smoke run (1,000 sentences, 2 epochs)
    python benchmarks/bench_pruning.py --decoders cle --max-heads 10 --thresholds 1e-4
    python benchmarks/bench_pruning.py --out benchmarks/results/bench_pruning.txt

Data: ``UD_English-EWT`` (``en_ewt-ud-{train,dev,test}.conllu``) in the
folder given with ``--data DIR`` (or in ``$SKSPARSE_STRUCT_SHARED_DATA/ud``
when that variable is set). The treebank is not shipped with the package.

What is measured
----------------
For each decoder (``cle``: non-projective, ``eisner``: projective), the
pruner of spec ``second_order_parsing.md`` §1.2: a first-order
``SparseMAPParser(loss="crf", max_iter=5)`` (single root, the default
``rich`` features) trained on EWT train, whose ``predict_marginals`` give
the arc posteriors of train, dev and test. For each setting of the rule
(``max_heads`` K, ``threshold``) the candidate arcs of
``sksparse_struct.parsing._pruning.prune_arcs`` are described per split and
sentence-length bucket (1-10, 11-30, >30 words, as in spec §1.4):

* cand. heads/word: candidate arcs per word;
* recall: gold arcs among the candidates (percent);
* covered: sentences whose whole gold tree is among the candidates (percent);
* arcs, next-sibl, grandpar, grand-sibl: mean number per sentence of
  candidate arcs and of the second-order parts built on them (formulas of
  spec §1.3, ``part_counts``).

Split ``train`` is pruned as at test time (no gold kept), which shows how
overconfident the pruner is on its own training data (spec §6, pitfall 6);
``train+gold`` keeps the gold arcs as training does (recall 100% by
construction): its counts are the cost of a training epoch. ``unpruned``
rows give the counts with every arc a candidate. Gold trees are EWT's own
(not lifted to projective trees for ``eisner``).
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _bench_utils import machine_header, rst_table  # noqa: E402

BUCKETS = (("all", 1, None), ("1-10", 1, 10), ("11-30", 11, 30), (">30", 31, None))


def default_data_dir():
    env = os.environ.get("SKSPARSE_STRUCT_SHARED_DATA")
    return Path(env) / "ud" if env else None


def load_split(data_dir, split, limit):
    from sksparse_struct.datasets import read_conllu

    path = Path(data_dir) / "UD_English-EWT" / f"en_ewt-ud-{split}.conllu"
    X, y = read_conllu(path)
    if limit:
        X, y = X[:limit], y[:limit]
    # The pruner's trees are heads arrays of length n + 1 with heads[0] = -1.
    gold = [np.concatenate([[-1], np.asarray(h, dtype=np.int64)]) for h in y]
    return X, y, gold


def bucket_rows(split, masks, gold):
    from sksparse_struct.parsing._pruning import pruning_report

    lengths = np.array([len(g) - 1 for g in gold])
    rows = []
    for name, lo, hi in BUCKETS:
        keep = (lengths >= lo) & (lengths <= (hi if hi is not None else lengths.max()))
        if not keep.any():
            continue
        idx = np.flatnonzero(keep)
        r = pruning_report([masks[i] for i in idx], [gold[i] for i in idx])
        rows.append([split, name, f"{r.n_sentences:,}", f"{r.mean_length:.1f}",
                     f"{r.heads_per_word:.2f}", f"{100 * r.recall:.2f}",
                     f"{100 * r.covered:.2f}", f"{r.arcs_per_sentence:,.0f}",
                     f"{r.sibling_parts_per_sentence:,.0f}",
                     f"{r.grandparent_parts_per_sentence:,.0f}",
                     f"{r.grandsibling_parts_per_sentence:,.0f}"])
    return rows


HEADER = ["split", "bucket", "sent", "len", "cand. heads/word", "recall %", "covered %",
          "arcs", "next-sibl", "grandpar", "grand-sibl"]


def run_decoder(decoder, data, args, out):
    from sksparse_struct import SparseMAPParser
    from sksparse_struct.metrics import uas_score
    from sksparse_struct.parsing._pruning import prune_arcs

    projective = decoder == "eisner"
    X_train, y_train, _ = data["train"]
    parser = SparseMAPParser("crf", projective=projective, max_iter=args.max_iter,
                             tol=None, n_jobs=args.n_jobs, random_state=0)
    t0 = time.perf_counter()
    parser.fit(X_train, y_train)
    fit_s = time.perf_counter() - t0
    X_test, y_test, _ = data["test"]
    uas = 100 * uas_score(y_test, parser.predict(X_test))
    marginals = {}
    t0 = time.perf_counter()
    for split in ("train", "dev", "test"):
        marginals[split] = parser.predict_marginals(data[split][0])
    marg_s = time.perf_counter() - t0
    out(f"decoder {decoder} (projective={projective}, single_root=True): fit "
        f"{parser.n_iter_} epochs in {fit_s:.0f} s, test UAS {uas:.2f}; "
        f"predict_marginals on train+dev+test {marg_s:.1f} s")
    out("")
    # Compile (or load) the kernels first, so that the timings are pruning only.
    prune_arcs(marginals["dev"][0], projective=projective, single_root=True)
    rows = []
    for split in ("train", "dev", "test"):
        gold = data[split][2]
        full = [~np.eye(len(g), dtype=bool) & (np.arange(len(g)) > 0)[None, :] for g in gold]
        rows += bucket_rows(f"{split} unpruned", full, gold)[:1]
    out(rst_table(HEADER, rows))
    out("")
    for K in args.max_heads:
        for threshold in args.thresholds:
            rows = []
            timings = []
            for split, keep_gold in (("train", False), ("train+gold", True),
                                     ("dev", False), ("test", False)):
                base = split.split("+")[0]
                gold = data[base][2]
                t0 = time.perf_counter()
                masks = [prune_arcs(P, K, threshold, gold_heads=g if keep_gold else None,
                                    projective=projective, single_root=True)
                         for P, g in zip(marginals[base], gold)]
                timings.append(f"{split} {time.perf_counter() - t0:.2f} s")
                split_rows = bucket_rows(split, masks, gold)
                rows += split_rows if split in ("dev", "test") else split_rows[:1]
            out(f"{decoder}, K = {K}, threshold = {threshold:g} "
                f"(pruning time: {', '.join(timings)})")
            out("")
            out(rst_table(HEADER, rows))
            out("")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="folder holding UD_English-EWT")
    parser.add_argument("--decoders", default="cle,eisner")
    parser.add_argument("--max-heads", default="5,10")
    parser.add_argument("--thresholds", default="1e-4,1e-3")
    parser.add_argument("--max-iter", type=int, default=5)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--quick", action="store_true",
                        help="1,000 training / 300 dev and test sentences, 2 epochs")
    parser.add_argument("--out", default=None, help="also write the report to this file")
    args = parser.parse_args(argv)
    args.max_heads = [int(v) for v in args.max_heads.split(",")]
    args.thresholds = [float(v) for v in args.thresholds.split(",")]
    if args.quick:
        args.max_iter = 2
    data_dir = Path(args.data) if args.data else default_data_dir()
    if data_dir is None:
        print("skipped: no data folder; pass --data DIR or set SKSPARSE_STRUCT_SHARED_DATA")
        return
    if not (data_dir / "UD_English-EWT").is_dir():
        print(f"skipped: {data_dir / 'UD_English-EWT'} not found")
        return
    lines = []

    def out(line):
        print(line, flush=True)
        lines.append(line)

    start = time.perf_counter()
    data = {split: load_split(data_dir, split, (1000 if split == "train" else 300)
                              if args.quick else 0)
            for split in ("train", "dev", "test")}
    out("First-order pruning on UD English-EWT: SparseMAPParser(loss='crf', "
        f"max_iter={args.max_iter}, n_jobs={args.n_jobs})"
        + (" (QUICK: 1,000 training / 300 dev and test sentences)" if args.quick else ""))
    for line in machine_header():
        out(line)
    out("")
    for decoder in args.decoders.split(","):
        run_decoder(decoder, data, args, out)
    out(f"total benchmark time {time.perf_counter() - start:.0f} s")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
