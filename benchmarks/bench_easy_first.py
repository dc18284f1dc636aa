"""Easy-first part-of-speech tagging on UD English-EWT (UPOS, gold tokens).

Run from anywhere, in an environment where sksparse_struct is installed::

    python benchmarks/bench_easy_first.py                 # every model
    python benchmarks/bench_easy_first.py --quick         # smoke run (1,000 sentences)
    python benchmarks/bench_easy_first.py --models crf,easy_first
    python benchmarks/bench_easy_first.py --out benchmarks/results/bench_easy_first.txt
    python benchmarks/bench_easy_first.py --models bilstm --random-state 0,1,2

Data: ``UD_English-EWT/en_ewt-ud-{train,test}.conllu`` in the folder given
with ``--data DIR`` (or in ``$SKSPARSE_STRUCT_SHARED_DATA/ud`` when that
variable is set), read with ``sksparse_struct.datasets.read_conllu``. The
treebank is not shipped with the package; the script stops with a message
when the files are absent.

What is measured
----------------
Train on the training set, evaluate on the test set; the words are the gold
tokens (FORM), the labels the UPOS tags. For each model, in this process,
after a warm-up fit and predict on 20 sentences (so that loading or compiling
the numba kernels is not counted):

* test token accuracy (percent);
* wall-clock seconds per training epoch (fit time divided by ``n_iter_``:
  L-BFGS iterations for the CRF, epochs otherwise), and the whole fit;
* tokens per second of ``predict(X_test)`` (feature extraction excluded for
  the feature-based models, whose features are computed once up front;
  the neural models take the words themselves).

``--random-state`` gives the seed of the models that draw random numbers
(every model but the L-BFGS CRF, which runs once): the perceptrons' and
``EasyFirstTagger``'s shuffling; the neural models' initialization, dropout,
shuffling and held-out sentences. It takes a comma-separated list: each model
is then trained once per seed, one run after another, the table has a row
per seed and a second table gives, per model, the mean test accuracy over
the seeds with its standard deviation (``n - 1`` in the denominator), its
range and the mean time per epoch. The load average at the start of every
run is printed with the report; with ``--verbose`` so is each neural run's
per-epoch log (training loss, held-out accuracy, times).

The feature-based models share one feature set, ``FEATURES`` below:
``TokenFeatures(preset="pos")`` (lower-cased words at -1..1, the word as
written, prefixes 1-3 and suffixes 1-4, short shape and spelling flags,
suffixes 2-3 of the neighbours) with prefixes up to 4 and lower-cased words
at -2..2.

Models are entries of ``MODELS``: a name, the input they take
(``"features"``: the feature dicts; ``"words"``: lists of word strings) and a
factory that returns an unfitted estimator, or raises ImportError when its
class is not available in the installed package (the row is then skipped
with a message).

The machine may be shared: timings are noisy (the load average is printed in
the header); accuracies do not depend on it.
"""

import argparse
import contextlib
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import _bench_utils as bu

FEATURES = {"preset": "pos", "prefixes": (1, 2, 3, 4), "window": 2}


def default_data_dir():
    env = os.environ.get("SKSPARSE_STRUCT_SHARED_DATA")
    return Path(env) / "ud" if env else None


def _crf(args, seed):
    from sksparse_struct import LinearChainCRF

    return LinearChainCRF(loss="crf", c2=1.0, max_iter=args.max_iter_crf, n_jobs=args.n_jobs)


def _crf_perceptron(args, seed):
    from sksparse_struct import LinearChainCRF

    return LinearChainCRF(loss="perceptron", max_iter=args.epochs, random_state=seed,
                          n_jobs=args.n_jobs)


def _easy_first(window):
    def factory(args, seed):
        from sksparse_struct import EasyFirstTagger

        return EasyFirstTagger(max_iter=args.epochs, window=window, random_state=seed,
                               n_jobs=args.n_jobs)

    return factory


def _neural(**params):
    """A factory of NeuralEasyFirstTagger with ``params`` (and the script's options).

    The paper's settings (its defaults), up to ``--nef-epochs`` epochs with
    early stopping on 10% of the training sentences, training sentences of
    at most 50 words (as in the paper), ``--n-jobs`` threads.
    """

    def factory(args, seed):
        from sksparse_struct import NeuralEasyFirstTagger

        return NeuralEasyFirstTagger(random_state=seed, max_iter=args.nef_epochs,
                                     max_train_length=50, n_jobs=args.n_jobs,
                                     verbose=args.verbose, **params)

    return factory


_NEF = (", paper's sizes, at most {nef_epochs} epochs (early stopping), training sentences "
        "of at most 50 words, {n_jobs} threads")

# name -> (input, factory, description); factory(args, seed) returns the
# unfitted estimator; the description may name the options of the command
# line in braces ("{epochs}").
MODELS = {
    "crf": ("features", _crf, "LinearChainCRF, loss='crf', L-BFGS, c2=1, at most {max_iter_crf} iterations"),
    "crf_perceptron": ("features", _crf_perceptron,
                       "LinearChainCRF, loss='perceptron' (averaged, Viterbi), {epochs} epochs"),
    "easy_first": ("features", _easy_first(2),
                   "EasyFirstTagger, window=2, averaged, {epochs} epochs"),
    "easy_first_w0": ("features", _easy_first(0),
                      "EasyFirstTagger, window=0 (no sketch features: a per-token classifier)"),
    "bilstm": ("words", _neural(n_steps=0), "NeuralEasyFirstTagger N=0 (BiLSTM)" + _NEF),
    "nef_hard": ("words", _neural(n_steps="L", state="full", attention="hard"),
                 "NeuralEasyFirstTagger N=L, hard attention" + _NEF),
    "nef_s_csoftmax": ("words", _neural(n_steps="L", state="single", attention="csoftmax"),
                       "NEF-S csoftmax, N=L" + _NEF),
    "nef_f_softmax": ("words", _neural(n_steps="L", state="full", attention="softmax"),
                      "NEF-F softmax, N=L" + _NEF),
    "nef_f_sparsemax": ("words", _neural(n_steps="L", state="full", attention="sparsemax"),
                        "NEF-F sparsemax, N=L" + _NEF),
    "nef_f_sparsemax_lr05": ("words", _neural(n_steps="L", state="full", attention="sparsemax",
                                              learning_rate=0.05),
                             "NEF-F sparsemax, N=L, learning_rate=0.05" + _NEF),
    "nef_f_csoftmax": ("words", _neural(n_steps="L", state="full", attention="csoftmax"),
                       "NEF-F csoftmax, N=L" + _NEF),
    "nef_f_csoftmax_n5": ("words", _neural(n_steps=5, state="full", attention="csoftmax"),
                          "NEF-F csoftmax, N=5" + _NEF),
}


def load(data_dir, quick):
    from sksparse_struct.datasets import read_conllu

    folder = Path(data_dir) / "UD_English-EWT"
    paths = [folder / f"en_ewt-ud-{split}.conllu" for split in ("train", "test")]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        sys.exit(f"UD English-EWT not found ({', '.join(missing)}); pass --data DIR.")
    out = []
    for p in paths:
        X = read_conllu(p)[0]
        words = [[t["form"] for t in sent] for sent in X]
        tags = [[t["upos"] for t in sent] for sent in X]
        out.append((words, tags))
    (w_train, t_train), (w_test, t_test) = out
    if quick:
        w_train, t_train = w_train[:1000], t_train[:1000]
        w_test, t_test = w_test[:300], t_test[:300]
    return w_train, t_train, w_test, t_test


# Models that draw no random numbers: trained once whatever the seeds.
UNSEEDED = {"crf"}


class _Tee:
    """Writes to a stream and keeps a copy of the lines (the verbose log of a fit)."""

    def __init__(self, stream):
        self.stream = stream
        self.text = []

    def write(self, s):
        self.text.append(s)
        return self.stream.write(s)

    def flush(self):
        self.stream.flush()

    def lines(self):
        return "".join(self.text).splitlines()


def run_model(name, args, inputs, seed):
    """Fit and evaluate one model with one seed.

    Returns ``(result, note)``: a dict (``row``: the table row without the
    seed; ``acc``, ``epochs``, ``epoch_s``: the numbers; ``log``: the lines
    the fit printed), or None and a note saying why the model was skipped.
    """
    from sksparse_struct.metrics import flat_accuracy_score

    kind, factory, _ = MODELS[name]
    try:
        model = factory(args, seed)
    except ImportError as exc:
        # The message without the path of the installed package.
        return None, f"{name}: skipped, {str(exc).split(' (')[0]}"
    X_train, y_train, X_test, y_test = inputs[kind]
    warm = factory(args, seed)
    warm.set_params(max_iter=1)
    if "early_stopping" in warm.get_params():
        warm.set_params(early_stopping=False, verbose=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a one-iteration fit does not converge
        warm.fit(X_train[:20], y_train[:20]).predict(X_test[:20])
    tee = _Tee(sys.stdout)
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(tee):
        model.fit(X_train, y_train)
    fit_s = time.perf_counter() - t0
    n_epochs = getattr(model, "n_iter_", None) or model.get_params().get("max_iter", 1)
    t0 = time.perf_counter()
    y_pred = model.predict(X_test)
    predict_s = time.perf_counter() - t0
    n_tokens = sum(len(s) for s in y_test)
    acc = 100 * flat_accuracy_score(y_test, y_pred)
    log = tee.lines()
    scores = getattr(model, "validation_scores_", None)
    if log and scores:
        best = max(range(len(scores)), key=scores.__getitem__)
        log.append(f"kept the parameters of epoch {best + 1} (best held-out accuracy)")
    row = [name, f"{acc:.2f}", n_epochs, bu.fmt(fit_s / n_epochs), bu.fmt(fit_s),
           f"{n_tokens / predict_s:,.0f}"]
    return {"row": row, "acc": acc, "epochs": n_epochs, "epoch_s": fit_s / n_epochs,
            "log": log}, None


def _load_average():
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def parse_seeds(text):
    """``"0,1,2"`` -> ``[0, 1, 2]``; an error message for anything else."""
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        seeds = []
    if not seeds or any(s < 0 for s in seeds) or len(set(seeds)) < len(seeds):
        raise argparse.ArgumentTypeError(
            f"expected distinct non-negative integers separated by commas, got {text!r}")
    return seeds


def summary_table(runs):
    """Mean and standard deviation of the test accuracy per model, over its seeds.

    ``runs`` are ``(name, seed, result)`` in the order they ran; models run
    with a single seed are left out.
    """
    by_model = {}
    for name, seed, result in runs:
        by_model.setdefault(name, []).append((seed, result))
    out = []
    for name, seeded in by_model.items():
        if len(seeded) < 2:
            continue
        # Means of the rounded accuracies, so that they agree with the table.
        acc = [float(r["row"][1]) for _, r in seeded]
        out.append([name, ",".join(str(seed) for seed, _ in seeded),
                    f"{statistics.mean(acc):.2f}", f"{statistics.stdev(acc):.2f}",
                    f"{min(acc):.2f}", f"{max(acc):.2f}",
                    bu.fmt(statistics.mean(r["epochs"] for _, r in seeded), 1),
                    bu.fmt(statistics.mean(r["epoch_s"] for _, r in seeded))])
    if not out:
        return None
    header = ["model", "seeds", "mean acc %", "std", "min", "max", "mean epochs",
              "mean s / epoch"]
    return bu.rst_table(header, out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=default_data_dir(),
                        help="folder holding UD_English-EWT/")
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated, among {', '.join(MODELS)}")
    parser.add_argument("--quick", action="store_true", help="1,000 training sentences")
    parser.add_argument("--epochs", type=int, default=10,
                        help="epochs of EasyFirstTagger and of the CRF's perceptron")
    parser.add_argument("--max-iter-crf", type=int, default=100, help="L-BFGS iterations")
    parser.add_argument("--nef-epochs", type=int, default=20,
                        help="maximum epochs of NeuralEasyFirstTagger (early stopping)")
    parser.add_argument("--n-jobs", type=int, default=1,
                        help="threads at prediction (and in NeuralEasyFirstTagger's training)")
    parser.add_argument("--random-state", type=parse_seeds, default=[0],
                        help="seed of the models, or comma-separated seeds (e.g. 0,1,2): "
                             "one run per seed, with the mean and standard deviation")
    parser.add_argument("--verbose", action="store_true",
                        help="NeuralEasyFirstTagger prints its loss and validation accuracy "
                             "after every epoch")
    parser.add_argument("--out", help="also write the report to this file")
    args = parser.parse_args(argv)
    if args.data is None:
        sys.exit("no data folder: pass --data DIR or set SKSPARSE_STRUCT_SHARED_DATA.")
    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        sys.exit(f"unknown models {unknown}; choose among {list(MODELS)}")

    from sksparse_struct.feature_extraction import TokenFeatures

    w_train, t_train, w_test, t_test = load(args.data, args.quick)
    t0 = time.perf_counter()
    features = TokenFeatures(**FEATURES)
    f_train = features.fit_transform(w_train)
    f_test = features.transform(w_test)
    feature_s = time.perf_counter() - t0
    inputs = {"features": (f_train, t_train, f_test, t_test),
              "words": (w_train, t_train, w_test, t_test)}

    lines = [f"UD English-EWT UPOS, gold tokens: train {len(w_train):,} sentences / "
             f"{sum(map(len, w_train)):,} tokens, test {len(w_test):,} / "
             f"{sum(map(len, w_test)):,}" + (" (--quick)" if args.quick else ""),
             "token features: TokenFeatures("
             + ", ".join(f"{k}={v!r}" for k, v in FEATURES.items())
             + f"), computed in {feature_s:.1f} s (train + test)"]
    lines += bu.machine_header()
    seeds = args.random_state
    several = len(seeds) > 1
    unseeded = [name for name in names if name in UNSEEDED]
    lines.append("random_state: " + ", ".join(map(str, seeds))
                 + (f" (not for {', '.join(unseeded)}, which draws no random numbers and "
                    "runs once)" if several and unseeded else ""))
    lines.append("timings on a shared machine are noisy; accuracies are not")
    print("\n".join(lines), flush=True)
    runs, notes, loads = [], [], []
    for name in names:
        for seed in [None] if name in UNSEEDED else seeds:
            loads.append(f"{name}" + ("" if seed is None or not several else f", seed {seed}")
                         + f": {_load_average()}")
            result, note = run_model(name, args, inputs, 0 if seed is None else seed)
            if note:
                print(note, flush=True)
                notes.append(note)
                loads.pop()
                break
            print("  ".join(map(str, result["row"]))
                  + (f"  (seed {seed})" if several and seed is not None else ""), flush=True)
            runs.append((name, seed, result))
    header = ["model", "test acc %", "epochs", "s / epoch", "fit s", "predict tok/s"]
    if several:
        header.insert(1, "seed")
        rows = [[r["row"][0], "-" if seed is None else seed] + r["row"][1:]
                for _, seed, r in runs]
    else:
        rows = [r["row"] for _, _, r in runs]
    table = bu.rst_table(header, rows)
    ran = list(dict.fromkeys(name for name, _, _ in runs))
    legend = [f"{name}: " + MODELS[name][2].format(**vars(args)) for name in ran]
    parts = lines + ["", table, ""]
    summary = summary_table(runs) if several else None
    if summary:
        parts += [("test accuracy over the seeds: mean, standard deviation (n - 1), range; "
                  "mean epochs and time per epoch"), "", summary, ""]
    parts += legend + notes
    if runs:
        parts += [("runs one after another in this process; load average "
                  "(1, 5, 15 min) at the start of each:")] + loads
    for name, seed, r in runs:
        if r["log"]:
            parts.append(f"{name}" + (f", seed {seed}" if several else "")
                         + ", per-epoch log (--verbose): mean training loss per sentence, "
                         "accuracy on the held-out 10%")
            parts += r["log"]
    report = "\n".join(parts) + "\n"
    print()
    print(report)
    if args.out:
        Path(args.out).write_text(report)


if __name__ == "__main__":
    main()
