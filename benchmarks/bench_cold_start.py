"""How long a first run takes: cold and warm starts in fresh processes.

numba compiles the package's kernels the first time they run and caches the
machine code on disk; a new user's first fit pays that compilation, every
later process loads the cache. Each scenario runs in a fresh Python process
twice: *cold*, with an empty ``NUMBA_CACHE_DIR`` (nothing compiled yet), then
*warm*, with the cache the cold run left. Scenarios (all on the bundled
sample, nothing to download):

* ``import``: ``import sksparse_struct``;
* ``classifier``: ``FenchelYoungClassifier(loss="sparsemax")`` on the
  quickstart's token features;
* ``crf``: ``LinearChainCRF(loss="crf")`` fit, predict and marginals, as in
  the quickstart;
* ``parser``: the quickstart's ``SparseMAPParser`` (SparseMAP loss, 5 epochs,
  relation labels), fit, predict and ``predict_sparse``;
* ``second-order``: a second-order ``SparseMAPParser`` (arcs, siblings and
  grandparents; hinge loss, one epoch on 40 sentences), fit and predict:
  the pruner's CRF, the part features and the factor-graph engine (AD3);
* ``quickstart``: ``python -m sksparse_struct``, all of the above but the
  second-order parser;
* ``tagger+parser``: the command line's worked example,
  ``sksparse-struct train tagger+parser`` on the bundled sample (taggers,
  jackknife and the parser of that task); *fit* is the command's time.

Wall time is what a user waits; CPU time (of the process, numba compiles on
one thread) is less sensitive to other load on the machine. *fit* is the
wall time of the ``fit`` call alone (crf and parser), without starting
Python, importing the package and loading the data. With
``--baseline REV`` the same scenarios also run on the package as it was at
git revision ``REV`` (extracted to a temporary directory), side by side::

    python benchmarks/bench_cold_start.py
    python benchmarks/bench_cold_start.py --baseline HEAD~5 --only parser crf
"""

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _bench_utils import fmt, machine_header, rst_table

REPO = Path(__file__).resolve().parents[1]

_FEATURES = """
from sksparse_struct.datasets import load_ewt_sample
from sksparse_struct._quickstart import corpus_features, sentence_features
X, y = load_ewt_sample(return_X_y=True)
"""

SCENARIOS = {
    "import": ["-c", "import sksparse_struct"],
    "classifier": ["-c", _FEATURES + """
import numpy as np
from sklearn.feature_extraction import DictVectorizer
from sksparse_struct import FenchelYoungClassifier
F = DictVectorizer().fit_transform(corpus_features(X))
tags = np.array([t for s in y for t in s])
FenchelYoungClassifier(loss="sparsemax", alpha=1e-4, tol=1e-4).fit(F, tags).predict_proba(F)
"""],
    "crf": ["-c", _FEATURES + """
import time
from sksparse_struct import LinearChainCRF
F = [sentence_features(words) for words in X]
start = time.perf_counter()
tagger = LinearChainCRF(loss="crf", c2=0.1, tol=1e-3).fit(F, y)
print("fit seconds:", time.perf_counter() - start)
tagger.predict(F)
tagger.predict_marginals(F)
"""],
    "parser": ["-c", """
from sksparse_struct._quickstart import run_parser
print("fit seconds:", run_parser()["fit_seconds"])
"""],
    "second-order": ["-c", """
import time
from sksparse_struct import SparseMAPParser
from sksparse_struct.datasets import load_ewt_sample
X, y = load_ewt_sample("train", return_X_y=True, target="tree")
X, y = X[:40], y[:40]
parser = SparseMAPParser("hinge", projective=True, parts=("arc", "sibling", "grandparent"),
                         max_iter=1, tol=None, random_state=0)
start = time.perf_counter()
parser.fit(X, y)
print("fit seconds:", time.perf_counter() - start)
parser.predict(X[:5])
"""],
    "quickstart": ["-m", "sksparse_struct"],
    "tagger+parser": ["-c", """
import os, tempfile, time
from sksparse_struct._cli import main
folder = tempfile.mkdtemp()
main(["samples", folder])
start = time.perf_counter()
main(["train", "tagger+parser", "--train", os.path.join(folder, "ewt-train.conllu"),
      "--model", os.path.join(folder, "ewt.joblib"), "--no-progress"])
print("fit seconds:", time.perf_counter() - start)
"""],
}


def run_once(args, cache_dir, pythonpath):
    """Wall and CPU seconds of ``python args`` in a fresh process, and its fit's seconds.

    The fit's own wall time is what the scenario prints as ``fit seconds:``
    (None if it prints none).
    """
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), PYTHONPATH=str(pythonpath))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, *args], env=env, check=True,
                         cwd=tempfile.gettempdir(), stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    fits = [float(line.split(":")[1]) for line in out.splitlines()
            if line.startswith("fit seconds:")]
    return wall, cpu, fits[-1] if fits else None


def extract(revision, into):
    """The ``sksparse_struct`` folder of git ``revision``, under ``into``."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", revision, "sksparse_struct"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="+", choices=sorted(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument("--baseline", help="git revision to compare with")
    parser.add_argument("--output", help="also write the report to this file")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        versions = [("current", REPO)]
        if args.baseline:
            base = Path(tmp) / "baseline"
            base.mkdir()
            versions.insert(0, (args.baseline, extract(args.baseline, base)))
        rows = []
        for name in args.only:
            for label, path in versions:
                cache = Path(tmp) / f"cache-{name}-{len(rows)}"
                cold = run_once(SCENARIOS[name], cache, path)
                warm = run_once(SCENARIOS[name], cache, path)
                rows.append([name, label, fmt(cold[0]), fmt(cold[1]),
                             fmt(cold[2]), fmt(warm[0]),
                             fmt(warm[1]), fmt(warm[2])])
                print("  ".join(rows[-1]), flush=True)
    header = ["scenario", "version", "cold wall (s)", "cold CPU (s)", "cold fit (s)",
              "warm wall (s)", "warm CPU (s)", "warm fit (s)"]
    report = "\n".join([*machine_header(), "", rst_table(header, rows)])
    print(report)
    if args.output:
        Path(args.output).write_text(report + "\n")


if __name__ == "__main__":
    main()
