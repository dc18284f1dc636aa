"""Tag, then parse: SparseMAPParser on predicted tags (ColumnTagger) against gold tags.

Run from anywhere, in an environment where sksparse_struct is installed::

    python benchmarks/bench_tag_then_parse.py                   # UD English-EWT
    python benchmarks/bench_tag_then_parse.py --parsers margin_eisner --inputs gold,predicted
    python benchmarks/bench_tag_then_parse.py --quick           # smoke run (1,000 sentences)
    python benchmarks/bench_tag_then_parse.py --out benchmarks/results/bench_tag_then_parse.txt

Data: ``UD_English-EWT`` (``en_ewt-ud-{train,dev,test}.conllu``) in the
folder given with ``--data DIR`` (or in ``$SKSPARSE_STRUCT_SHARED_DATA/ud``
when that variable is set). The treebank is not shipped with the package.

What is measured
----------------
Trained on the training set; settings chosen on the development set; the
test set reported. Gold tokenisation, punctuation included in every score.

* The taggers: ``ColumnTagger`` at its defaults (UPOS and XPOS, each from
  the words alone; a 5-fold jackknife over consecutive sentences), with
  ``random_state=0``. Token
  accuracy of UPOS and XPOS on the training set (jackknifed: each sentence
  tagged by taggers that did not see it), dev and test (the final taggers,
  trained on all of train), and the time of ``fit_transform`` (5 + 1 fits
  per column) on the training set.
* For each parser setting (``--parsers``), the same ``SparseMAPParser``
  (``random_state=0``) trained and evaluated on up to five inputs
  (``--inputs``):

  - ``gold``: gold UPOS, XPOS, lemmas and features (the usual benchmark);
  - ``gold tags``: gold UPOS and XPOS only, lemmas and features cleared to
    ``_`` (``ColumnTagger.gold_transform``: what ColumnTagger's output gives
    a parser when every tag is right);
  - ``predicted``: the tag-then-parse pipeline, ``Pipeline([("tags",
    ColumnTagger()), ("parser", parser)])``: trained on the jackknifed tags,
    evaluated on the final taggers' tags of dev and test (from the words
    alone);
  - ``predicted+gold``: ``TagParsePipeline`` (the model of ``sksparse-struct
    train tagger+parser``): trained on the jackknifed tags and on the gold
    tags (``gold tags``), twice the sentences, evaluated as ``predicted``;
  - ``gold-trained``: the ``gold tags`` parser evaluated on predicted tags
    (no jackknife: trained on tags better than those it parses).

  UAS and LAS on dev and test, the training time of the parser, and the
  training time of the whole pipeline (taggers and parser).
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

from _bench_utils import machine_header, rst_table

PARSERS = {
    # The parser of `sksparse-struct train parser`.
    "margin_eisner": {"loss": "margin_sparsemap", "projective": True, "max_iter": 10},
    "sparsemap_cle": {"loss": "sparsemap", "projective": False, "max_iter": 10},
    "margin_eisner_5": {"loss": "margin_sparsemap", "projective": True, "max_iter": 5,
                        "tol": None},
    # The standard second-order model (siblings and grandparents): the parser of
    # `sksparse-struct train tagger+parser`.
    "second_order": {"loss": "hinge", "projective": True,
                     "parts": ("arc", "sibling", "grandparent"), "max_iter": 5, "tol": None},
}
FILES = ("train", "dev", "test")


def default_data_dir():
    env = os.environ.get("SKSPARSE_STRUCT_SHARED_DATA")
    return Path(env) / "ud" if env else None


def tag_accuracy(X_gold, X_pred, column):
    pairs = [(g[column], p[column]) for gs, ps in zip(X_gold, X_pred) for g, p in zip(gs, ps)]
    return 100.0 * sum(g == p for g, p in pairs) / len(pairs)


def words_only(X):
    return [[{"form": t["form"]} for t in s] for s in X]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=default_data_dir(),
                        help="folder holding UD_English-EWT/")
    parser.add_argument("--parsers", default="second_order",
                        help=f"comma-separated parser settings among {sorted(PARSERS)}")
    parser.add_argument("--cv", type=int, default=5, help="folds of the jackknife")
    parser.add_argument("--n-jobs", type=int, default=2,
                        help="n_jobs of the ColumnTagger (folds) and of the parser")
    parser.add_argument("--inputs", default="gold_tags,predicted,predicted+gold",
                        help="comma-separated parser inputs among gold, gold_tags, predicted, "
                        "predicted+gold (gold-trained comes with gold_tags and predicted)")
    parser.add_argument("--quick", action="store_true",
                        help="1,000 training and 300 dev / test sentences")
    parser.add_argument("--out", type=Path, help="also write the report to this file")
    args = parser.parse_args(argv)
    if args.data is None:
        parser.error("give --data DIR or set SKSPARSE_STRUCT_SHARED_DATA")
    names = args.parsers.split(",")
    kinds = [kind.replace("_", " ") for kind in args.inputs.split(",")]
    if any(kind not in ("gold", "gold tags", "predicted", "predicted+gold") for kind in kinds):
        parser.error(f"unknown inputs {args.inputs!r}")
    unknown = [n for n in names if n not in PARSERS]
    if unknown:
        parser.error(f"unknown parser settings {unknown}; known: {sorted(PARSERS)}")

    from sklearn.base import clone
    from sklearn.pipeline import Pipeline

    from sksparse_struct import ColumnTagger, SparseMAPParser
    from sksparse_struct.datasets import read_conllu
    from sksparse_struct.metrics import las_score, uas_score

    folder = args.data / "UD_English-EWT"
    data = {}
    for name in FILES:
        path = folder / f"en_ewt-ud-{name}.conllu"
        if not path.exists():
            sys.exit(f"missing {path}")
        data[name] = read_conllu(path, return_deprel=True)
    if args.quick:
        data = {name: tuple(part[:1000 if name == "train" else 300] for part in data[name])
                for name in FILES}
    X = {name: data[name][0] for name in FILES}
    heads = {name: data[name][1] for name in FILES}
    deprels = {name: data[name][2] for name in FILES}
    train_pairs = list(zip(heads["train"], deprels["train"]))

    lines = [
        f"UD English-EWT, gold tokens: train {len(X['train']):,} sentences / "
        f"{sum(map(len, X['train'])):,} words, dev {len(X['dev']):,}, test {len(X['test']):,}",
        *machine_header(),
        "timings on a shared machine are noisy; accuracies are not",
        "",
    ]
    out = []

    def say(text=""):
        print(text, flush=True)
        out.append(text)

    for line in lines:
        say(line)

    # Load the kernels (a fit on a few sentences) so that compiling is not timed.
    warm = Pipeline([("tags", ColumnTagger(cv=2, random_state=0)),
                     ("parser", SparseMAPParser(max_iter=1, tol=None, random_state=0))])
    warm.fit(X["train"][:20], train_pairs[:20])

    # --- taggers -------------------------------------------------------------
    tagger = ColumnTagger(cv=args.cv, random_state=0, n_jobs=args.n_jobs)
    t0 = time.perf_counter()
    X_jack = tagger.fit_transform(X["train"])
    tag_fit_s = time.perf_counter() - t0
    predicted = {"train": X_jack}
    tag_speed = {}
    for name in ("dev", "test"):
        t0 = time.perf_counter()
        predicted[name] = tagger.transform(words_only(X[name]))
        tag_speed[name] = sum(map(len, X[name])) / (time.perf_counter() - t0)
    rows = [[name + (" (jackknifed)" if name == "train" else ""),
             f"{tag_accuracy(X[name], predicted[name], 'upos'):.2f}",
             f"{tag_accuracy(X[name], predicted[name], 'xpos'):.2f}"]
            for name in FILES]
    say(f"Taggers: ColumnTagger(cv={args.cv}, random_state=0, n_jobs={args.n_jobs}) "
        f"at its defaults; fit_transform on train {tag_fit_s:.1f} s, "
        f"tagging {tag_speed['test']:,.0f} words/s")
    say()
    say(rst_table(["set", "UPOS acc %", "XPOS acc %"], rows))
    say()

    # --- parsers -------------------------------------------------------------
    # Gold UPOS and XPOS, lemmas and features "_": the tokens the fitted taggers
    # would give a parser if every tag were right.
    gold_tags = {name: tagger.gold_transform(X[name]) for name in FILES}
    inputs = {
        "gold": {name: X[name] for name in FILES},
        "gold tags": gold_tags,
        "predicted": predicted,
        # TagParsePipeline's training set: the jackknifed copy, then the gold one.
        "predicted+gold": dict(predicted, train=predicted["train"] + gold_tags["train"]),
    }
    targets = {kind: train_pairs * (2 if kind == "predicted+gold" else 1) for kind in inputs}
    rows = []
    for setting in names:
        params = dict(PARSERS[setting], random_state=0, n_jobs=args.n_jobs)
        fitted, fit_s = {}, {}
        for kind in kinds:
            model = SparseMAPParser(**params)
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(inputs[kind]["train"], targets[kind])
            fit_s[kind] = time.perf_counter() - t0
            fitted[kind] = model
        evaluations = [(kind, fitted[kind], inputs[kind]) for kind in fitted]
        if "gold tags" in fitted and "predicted" in fitted:
            evaluations.append(("gold-trained", fitted["gold tags"], predicted))
        for kind, model, sets in evaluations:
            row = [setting, kind]
            for name in ("dev", "test"):
                pred_heads, pred_deprels = model.predict(sets[name], return_deprel=True)
                las = las_score(heads[name], pred_heads, deprels[name], pred_deprels)
                row += [f"{100 * uas_score(heads[name], pred_heads):.2f}", f"{100 * las:.2f}"]
            train_s = fit_s.get(kind)
            row += [f"{train_s:.0f}" if train_s else "-",
                    f"{train_s + tag_fit_s:.0f}" if kind.startswith("predicted") else "-",
                    str(fitted[kind].n_iter_) if kind in fit_s else "-"]
            rows.append(row)
            print(row, flush=True)
    say(rst_table(["parser", "input", "dev UAS", "dev LAS", "test UAS", "test LAS",
                   "parser fit s", "pipeline fit s", "epochs"], rows))
    say()
    for setting in names:
        params = ", ".join(f"{k}={v!r}" for k, v in PARSERS[setting].items())
        say(f"{setting}: SparseMAPParser({params}, random_state=0, n_jobs={args.n_jobs})")
    say("gold: gold UPOS, XPOS, lemmas, features; gold tags: gold UPOS and XPOS, lemmas and "
        "features '_'")
    say("predicted: Pipeline([('tags', ColumnTagger()), ('parser', parser)]), trained on "
        "jackknifed tags,")
    say("  evaluated on the tags the final taggers give the words of dev / test")
    say("predicted+gold: TagParsePipeline([('tags', ColumnTagger()), ('parser', parser)]), "
        "trained on the jackknifed")
    say("  and the gold-tag ('gold tags') training sentences, evaluated as predicted")
    say("gold-trained: the 'gold tags' parser evaluated on those predicted tags")
    say("parser fit s: the parser's fit; pipeline fit s: taggers' fit_transform + parser's fit")
    if args.out:
        args.out.write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
