"""Easy-first part-of-speech tagging on UD English-EWT (UPOS, gold tokens).

Run from anywhere, in an environment where sksparse_struct is installed::

    python benchmarks/bench_easy_first.py                 # every model
    python benchmarks/bench_easy_first.py --quick         # smoke run (1,000 sentences)
    python benchmarks/bench_easy_first.py --models crf,easy_first
    python benchmarks/bench_easy_first.py --out benchmarks/results/bench_easy_first.txt

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
import os
import sys
import time
import warnings
from pathlib import Path

import _bench_utils as bu

FEATURES = {"preset": "pos", "prefixes": (1, 2, 3, 4), "window": 2}


def default_data_dir():
    env = os.environ.get("SKSPARSE_STRUCT_SHARED_DATA")
    return Path(env) / "ud" if env else None


def _crf(args):
    from sksparse_struct import LinearChainCRF

    return LinearChainCRF(loss="crf", c2=1.0, max_iter=args.max_iter_crf, n_jobs=args.n_jobs)


def _crf_perceptron(args):
    from sksparse_struct import LinearChainCRF

    return LinearChainCRF(loss="perceptron", max_iter=args.epochs, random_state=0,
                          n_jobs=args.n_jobs)


def _easy_first(window):
    def factory(args):
        from sksparse_struct import EasyFirstTagger

        return EasyFirstTagger(max_iter=args.epochs, window=window, random_state=0,
                               n_jobs=args.n_jobs)

    return factory


def _neural(**params):
    """A factory of NeuralEasyFirstTagger with ``params`` (and the script's options).

    The paper's settings (its defaults), up to ``--nef-epochs`` epochs with
    early stopping on 10% of the training sentences, training sentences of
    at most 50 words (as in the paper), ``--n-jobs`` threads.
    """

    def factory(args):
        from sksparse_struct import NeuralEasyFirstTagger

        return NeuralEasyFirstTagger(random_state=0, max_epochs=args.nef_epochs,
                                     max_train_length=50, n_jobs=args.n_jobs,
                                     verbose=args.verbose, **params)

    return factory


_NEF = (", paper's sizes, at most {nef_epochs} epochs (early stopping), training sentences "
        "of at most 50 words, {n_jobs} threads")

# name -> (input, factory, description); the description may name the options
# of the command line in braces ("{epochs}").
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


def run_model(name, args, inputs):
    from sksparse_struct.metrics import flat_accuracy_score

    kind, factory, _ = MODELS[name]
    try:
        model = factory(args)
    except ImportError as exc:
        # The message without the path of the installed package.
        return None, f"{name}: skipped, {str(exc).split(' (')[0]}"
    X_train, y_train, X_test, y_test = inputs[kind]
    warm = factory(args)
    if "max_iter" in warm.get_params():
        warm.set_params(max_iter=1)
    if "max_epochs" in warm.get_params():
        warm.set_params(max_epochs=1, validation_fraction=0, verbose=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a one-iteration fit does not converge
        warm.fit(X_train[:20], y_train[:20]).predict(X_test[:20])
    t0 = time.perf_counter()
    model.fit(X_train, y_train)
    fit_s = time.perf_counter() - t0
    n_epochs = getattr(model, "n_iter_", None) or model.get_params().get("max_iter", 1)
    t0 = time.perf_counter()
    y_pred = model.predict(X_test)
    predict_s = time.perf_counter() - t0
    n_tokens = sum(len(s) for s in y_test)
    acc = 100 * flat_accuracy_score(y_test, y_pred)
    return [name, f"{acc:.2f}", n_epochs, bu.fmt(fit_s / n_epochs), bu.fmt(fit_s),
            f"{n_tokens / predict_s:,.0f}"], None


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
    lines.append("timings on a shared machine are noisy; accuracies are not")
    print("\n".join(lines), flush=True)
    rows, notes = [], []
    for name in names:
        row, note = run_model(name, args, inputs)
        if note:
            print(note, flush=True)
            notes.append(note)
            continue
        print("  ".join(map(str, row)), flush=True)
        rows.append(row)
    header = ["model", "test acc %", "epochs", "s / epoch", "fit s", "predict tok/s"]
    table = bu.rst_table(header, rows)
    legend = [f"{row[0]}: " + MODELS[row[0]][2].format(**vars(args)) for row in rows]
    report = "\n".join(lines + ["", table, ""] + legend + notes) + "\n"
    print()
    print(report)
    if args.out:
        Path(args.out).write_text(report)


if __name__ == "__main__":
    main()
