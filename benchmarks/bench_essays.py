"""Structured-SVM training on essay-shaped documents: CDCP comments grouped as paragraphs.

Run from anywhere, in an environment where sksparse_struct is installed::

    python benchmarks/bench_essays.py                     # 10 passes
    python benchmarks/bench_essays.py --max-iter 3        # time per pass only
    python benchmarks/bench_essays.py --out benchmarks/results/bench_essays.txt

Data: the ``train`` and ``test`` folders of the Cornell eRulemaking Corpus
(CDCP) in the folder given with ``--data DIR`` (or in
``$SKSPARSE_STRUCT_SHARED_DATA/cdcp``); the script says so and stops when it
is absent.

What is measured
----------------
Persuasive essays have 3-5 paragraphs of a few propositions each, links
only inside a paragraph, and links that form a forest in each paragraph
(every proposition supports at most one other). This benchmark builds
documents of that shape from CDCP:

* comments with at most ``--max-props`` (8) propositions, in file order,
  grouped ``--group`` (4) to a document, each comment one paragraph (its
  features come from one :class:`~sksparse_struct.feature_extraction.ArgumentFeatures`
  fitted on the training comments; the documents' features are the
  comments' stacked, with ``proposition_paragraph`` the comment's number,
  so candidate links, compatibility and second-order triples stay inside a
  paragraph);
* gold links made a forest: CDCP's transitively closed links are reduced
  (a link ``a -> c`` implied by ``a -> b -> c`` is dropped) and a source
  that still supports several targets keeps the nearest one (ties: the
  later one);
* :class:`~sksparse_struct.StructuredSVMArgumentMiner` with
  ``constraints="tree"``, co-parent and grandparent factors, C = 0.1, the
  other parameters at their defaults unless given on the command line,
  ``random_state=0``.

Reported: seconds per BCFW pass (the mean over the passes that compute no
duality gap), the seconds of the final duality-gap computation, the fit's
wall time, the share of integral LP solutions in the last pass, the final
duality gap, and the test scores (link F1, proposition macro-F1 and their
mean; exact decoding), each beside the machine's load average.
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from _bench_utils import fmt, machine_header, rst_table


def default_data_dir():
    shared = os.environ.get("SKSPARSE_STRUCT_SHARED_DATA")
    return Path(shared) / "cdcp" if shared else None


def forest_links(links):
    """The links of one comment reduced to a forest (see the module docstring)."""
    links = {(int(s), int(t)) for s, t in links}
    targets = {}
    for s, t in links:
        targets.setdefault(s, set()).add(t)
    out = []
    for s, ts in sorted(targets.items()):
        direct = [t for t in ts if not any((u, t) in links for u in ts if u != t)]
        direct = direct or sorted(ts)
        out.append((s, min(direct, key=lambda t: (abs(t - s), -t))))
    return out


def select(X, y, max_props):
    keep = [k for k, doc in enumerate(X) if 1 <= len(doc["propositions"]) <= max_props]
    return [X[k] for k in keep], [(list(y[k][0]), forest_links(y[k][1])) for k in keep]


def group(F, y, size):
    """Documents of ``size`` comments each, a comment per paragraph."""
    from sksparse_struct.feature_extraction import DocumentFeatures

    docs, targets = [], []
    for start in range(0, len(F) - size + 1, size):
        parts, offset = F[start:start + size], 0
        pairs, triples, para, labels, links = [], [], [], [], []
        for p, (doc, (lab, lk)) in enumerate(zip(parts, y[start:start + size])):
            pairs.append(doc.link_pairs + offset)
            triples.append(doc.triples + offset)
            para.append(np.full(doc.props.shape[0], p, dtype=np.int64))
            labels += lab
            links += [(s + offset, t + offset) for s, t in lk]
            offset += doc.props.shape[0]
        docs.append(DocumentFeatures(
            sp.vstack([d.props for d in parts]).tocsr(), sp.vstack([d.links for d in parts]).tocsr(),
            np.concatenate(pairs).reshape(-1, 2), np.concatenate([d.compat for d in parts]),
            np.concatenate(triples).reshape(-1, 3),
            np.concatenate([d.second_order for d in parts]), np.concatenate(para)))
        targets.append((labels, sorted(links)))
    return docs, targets


def load():
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=default_data_dir())
    parser.add_argument("--max-iter", type=int, default=10, help="BCFW passes")
    parser.add_argument("--max-props", type=int, default=8)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--n-jobs", type=int, default=None)
    parser.add_argument("--param", action="append", default=[],
                        help="extra miner parameter NAME=VALUE (Python literal), repeatable")
    parser.add_argument("--label", default="tree, coparent + grandparent")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.data is None or not (args.data / "train").is_dir():
        print("skipped: no data folder; pass --data DIR or set SKSPARSE_STRUCT_SHARED_DATA")
        return

    import ast

    import sksparse_struct
    from sksparse_struct import StructuredSVMArgumentMiner
    from sksparse_struct.datasets import read_cdcp
    from sksparse_struct.feature_extraction import ArgumentFeatures
    from sksparse_struct.metrics import link_f1_score, proposition_f1_score

    class TimedMiner(StructuredSVMArgumentMiner):
        """Also keeps the time at the end of each pass."""

        def _record(self, info):
            super()._record(info)
            self.pass_end_.append((info.n_iter, info.elapsed, info.gap is not None))
            self.decoded_.append(getattr(info, "n_decoded", -1))

    lines = machine_header()
    lines.append(f"sksparse_struct from {Path(sksparse_struct.__file__).parent}")
    X_train, y_train = select(*read_cdcp(args.data / "train"), args.max_props)
    X_test, y_test = select(*read_cdcp(args.data / "test"), args.max_props)
    features = ArgumentFeatures().fit(X_train, y_train)
    F_train, y_train = group(features.transform(X_train), y_train, args.group)
    F_test, y_test = group(features.transform(X_test), y_test, args.group)
    n_props = [d.props.shape[0] for d in F_train]
    lines.append(
        f"documents: train {len(F_train)}, test {len(F_test)} ({args.group} comments of at most "
        f"{args.max_props} propositions each); propositions per train document "
        f"{min(n_props)}-{max(n_props)} (mean {np.mean(n_props):.1f}); candidate links "
        f"{sum(d.link_pairs.shape[0] for d in F_train)}, gold links "
        f"{sum(len(t[1]) for t in y_train)}")
    params = dict(constraints="tree", second_order=("coparent", "grandparent"), C=0.1,
                  max_iter=args.max_iter, random_state=0, n_jobs=args.n_jobs, verbose=1)
    for item in args.param:
        name, value = item.split("=", 1)
        params[name] = ast.literal_eval(value)
    lines.append("miner: " + ", ".join(f"{k}={v!r}" for k, v in params.items()))
    miner = TimedMiner(**params)
    miner.pass_end_, miner.decoded_ = [], []
    load_before = load()
    t0 = time.perf_counter()
    miner.fit(F_train, y_train)
    fit_time = time.perf_counter() - t0
    load_after_fit = load()
    previous, plain, gap_time = 0.0, [], 0.0
    for _, elapsed, has_gap in miner.pass_end_:
        (plain if not has_gap else []).append(elapsed - previous)
        if has_gap:
            gap_time = elapsed - previous
        previous = elapsed
    per_pass = float(np.mean(plain)) if plain else gap_time
    t0 = time.perf_counter()
    y_pred = miner.predict(F_test)
    predict_time = time.perf_counter() - t0
    link = 100 * link_f1_score(y_test, y_pred)
    prop = 100 * proposition_f1_score(y_test, y_pred)
    header = ["model", "s / pass", "last pass + gap s", "fit s", "passes", "integral last %",
              "duality gap", "average", "link", "prop.", "predict s", "load before / after fit"]
    gap = miner.duality_gaps_[-1][1] if miner.duality_gaps_ else None
    row = [args.label, fmt(per_pass), fmt(gap_time), fmt(fit_time), miner.n_iter_,
           fmt(100 * miner.integral_fraction_[-1]), fmt(gap, 3), fmt((link + prop) / 2),
           fmt(link), fmt(prop), fmt(predict_time), f"{load_before} / {load_after_fit}"]
    lines.append("seconds per pass: " + ", ".join(
        f"{b - a:.1f}" for (_, a, _), (_, b, _) in zip([(0, 0.0, False)] + miner.pass_end_,
                                                        miner.pass_end_)))
    if miner.decoded_[0] != -1:
        lines.append("documents decoded per pass: " + ", ".join(map(str, miner.decoded_)))
    text = "\n".join(lines + ["", rst_table(header, [row])])
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
