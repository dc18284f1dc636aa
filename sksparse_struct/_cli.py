"""The ``sksparse-struct`` command: train, predict, evaluate, info, samples.

``sksparse-struct`` (a console script) and ``python -m sksparse_struct`` run
:func:`main`. Without a command it runs the quickstart, so that the
README's first command keeps working.

Results go to standard output, as plain lines a script can read (``UAS
87.12``); progress, warnings and errors go to standard error, and progress
only on a terminal (or with ``--progress``). A mistake a user makes (a
missing file, a wrong column, a file that is not CoNLL-U) ends the command
with one ``sksparse-struct: error: ...`` line and exit status 2, never a
traceback.
"""

import argparse
import ast
import contextlib
import json
import os
import shutil
import sys
import time
import warnings

from ._model_io import load_model, save_model
from ._version import __version__

__all__ = ["main"]

PROG = "sksparse-struct"
COMMANDS = ("train", "predict", "evaluate", "info", "samples")
TASKS = ("tagger", "parser", "tagger+parser", "argument-miner")
# The parser of the "parser" task (doc/command_line.rst): on UD English-EWT
# dev, margin-SparseMAP with Eisner's projective decoding parses best of the
# first-order parsers.
PARSER_DEFAULTS = {"loss": "margin_sparsemap", "projective": True, "max_iter": 10}
# The parser of the "tagger+parser" task, trained on jackknifed and gold tags
# (TagParsePipeline): with predicted tags, this second-order parser (siblings
# and grandparents) parses EWT dev at 86.5 UAS, PARSER_DEFAULTS at 84.1.
TAGGED_PARSER_DEFAULTS = {"loss": "hinge", "projective": True,
                          "parts": ("arc", "sibling", "grandparent"), "max_iter": 5,
                          "tol": None}
# The user mistakes that end a command with one line rather than a traceback.
USER_ERRORS = (ValueError, OSError, LookupError, UnicodeError)


class CommandError(Exception):
    """A user mistake the command reports in one line."""


# --------------------------------------------------------------------------
# Models for each task

def _chunker(columns):
    """A column file with a ``pos`` column: the CRFsuite CoNLL-2000 template and the CRF."""
    from sklearn.pipeline import Pipeline

    from .feature_extraction import TokenFeatures
    from .tagging import LinearChainCRF

    return Pipeline([
        # Compiled features: the same as the dicts', without building them.
        ("features", TokenFeatures(preset="conll2000", columns=columns, output="matrix")),
        ("tagger", LinearChainCRF()),
    ])


def _word_tagger():
    """Tags from the words alone (a CoNLL-U column): ColumnTagger's tagger."""
    from .tagging._column_tagger import default_tagger

    return default_tagger("word")


def _parser():
    from .parsing import SparseMAPParser

    return SparseMAPParser(**PARSER_DEFAULTS)


def _tagger_parser():
    from .parsing import SparseMAPParser
    from .tagging import ColumnTagger, TagParsePipeline

    return TagParsePipeline([("tags", ColumnTagger()),
                             ("parser", SparseMAPParser(**TAGGED_PARSER_DEFAULTS))])


def _argument_miner(corpus):
    from sklearn.pipeline import Pipeline

    from .argument_mining import StructuredSVMArgumentMiner
    from .feature_extraction import ArgumentFeatures

    # brat documents (e.g. the persuasive essays) come without the CoreNLP
    # annotations of the CDCP distribution: features from the text only.
    features = ArgumentFeatures() if corpus == "cdcp" else ArgumentFeatures(groups="text")
    return Pipeline([("features", features), ("miner", StructuredSVMArgumentMiner())])


# --------------------------------------------------------------------------
# Reading the data of each task

# The labels of CoNLL-U models: only they can take plain text, whose words
# they write as CoNLL-U (column models need their input's other columns).
CONLLU_LABELS = ("upos", "xpos", "lemma", "head")


def _input_format(path, given, label=None):
    """``"conll"``, ``"conllu"`` or ``"text"`` for an input file.

    As :func:`~sksparse_struct.datasets.predict_file` decides: ``.conllu``
    is CoNLL-U; ``.txt`` is plain text for a model of CoNLL-U columns
    (``label``), else a column file, as CoNLL-2000's ``train.txt``.
    """
    if given != "auto":
        return given
    name = os.fspath(path).lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if name.endswith(".conllu"):
        return "conllu"
    if name.endswith(".txt") and label in CONLLU_LABELS:
        return "text"
    return "conll"


def _check_file(path, what):
    if path == "-":
        return
    if not os.path.exists(path):
        raise CommandError(f"{what} {path} does not exist.")
    if os.path.isdir(path):
        raise CommandError(f"{what} {path} is a folder, not a file.")


def _columns(text):
    columns = tuple(c.strip() for c in text.split(",") if c.strip())
    if not columns:
        raise CommandError(f"--columns needs comma-separated names, got {text!r}.")
    return columns


def _tagger_data(path, args):
    """``(X, y, columns, label, format)`` of a tagger's training file."""
    from .datasets import read_conll

    fmt = _input_format(path, args.format)
    if fmt == "conllu":
        label = args.label or "upos"
        if label not in ("upos", "xpos", "lemma"):
            raise CommandError(f"--label for a CoNLL-U file is upos, xpos or lemma; "
                               f"got {label!r}.")
        columns = ("word", label)
    else:
        columns = _columns(args.columns) if args.columns else ("word", "pos", "chunk")
        label = args.label or ("chunk" if "chunk" in columns else columns[-1])
        if label not in columns:
            raise CommandError(f"--label {label!r} is not one of the columns {list(columns)} "
                               "(give the file's columns with --columns).")
    X, y = read_conll(path, columns, label, format=fmt)
    return X, y, columns, label, fmt


def _treebank(path, what):
    from .datasets import read_conllu

    X, heads, deprels = read_conllu(path, return_deprel=True)
    if not X:
        raise CommandError(f"{what} {path} has no sentences.")
    return X, list(zip(heads, deprels))


def _documents(path):
    """``(X, y, corpus)`` of a folder of CDCP or brat argument-mining documents."""
    from .datasets import read_brat, read_cdcp

    if not os.path.isdir(path):
        raise CommandError(f"{path}: an argument miner reads a folder of CDCP documents "
                           "(<id>.txt and <id>.ann.json) or of brat documents (<name>.txt "
                           "and <name>.ann).")
    names = os.listdir(path)
    if any(name.endswith(".ann.json") for name in names):
        X, y = read_cdcp(path)
        corpus = "cdcp"
    elif any(name.endswith(".ann") for name in names):
        X, y = read_brat(path)
        corpus = "brat"
    else:
        raise CommandError(f"{path} has neither CDCP (.ann.json) nor brat (.ann) annotation "
                           "files.")
    if not X:
        raise CommandError(f"{path} has no documents.")
    return X, y, corpus


# --------------------------------------------------------------------------
# Parameters given on the command line

def _value(text):
    """A ``--set`` value: a Python literal (1, 0.5, True, None, "a", (1, 2)) or a string."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _apply_settings(model, settings):
    """``model.set_params`` from ``PARAM=VALUE`` strings, naming unknown parameters."""
    if not settings:
        return {}
    available = model.get_params(deep=True)
    chosen = {}
    for setting in settings:
        name, sep, text = setting.partition("=")
        name = name.strip()
        if not sep or not name:
            raise CommandError(f"--set takes PARAM=VALUE, got {setting!r}.")
        if name not in available:
            # A parameter of one step may be given without the step's name.
            matches = [key for key in available if key.endswith("__" + name)]
            if len(matches) != 1:
                known = sorted(k for k, v in available.items() if not hasattr(v, "get_params"))
                hint = (f"it could be any of {matches}" if matches else
                        f"known parameters: {', '.join(known)}")
                raise CommandError(f"--set {name}: no such parameter of this model ({hint}).")
            name = matches[0]
        chosen[name] = _value(text)
    try:
        model.set_params(**chosen)
    except (ValueError, TypeError) as error:
        raise CommandError(f"--set: {error}") from None
    return chosen


def _set_progress(model, on):
    """Turn on the ``verbose`` of every step that has one, for a progress display."""
    if not on:
        return
    verbose = {k: 1 for k, v in _params_named(model, "verbose").items() if not v}
    if verbose:
        model.set_params(**verbose)


def _progress_on(args):
    if args.progress is not None:
        return args.progress
    return sys.stderr.isatty()


@contextlib.contextmanager
def _progress_block(on, what):
    """Progress lines on standard error while the block runs (when ``on``)."""
    if not on:
        yield
        return
    from .utils._reporting import compile_notice, progress_ticker

    # Estimators print their progress on standard output: keep it clean.
    with contextlib.redirect_stdout(sys.stderr), compile_notice(PROG), \
            progress_ticker(10.0, what=what, indent=""):
        yield


# --------------------------------------------------------------------------
# Commands

def _train(args):
    if args.task != "argument-miner":  # a miner reads folders, checked by _documents
        _check_file(args.train, "training file")
        if args.dev is not None:
            _check_file(args.dev, "dev file")
    started = time.perf_counter()
    summary = {"train": os.path.abspath(args.train)}
    columns = label = None
    if args.task == "tagger":
        X, y, columns, label, fmt = _tagger_data(args.train, args)
        if fmt == "conll" and "pos" in columns and label != "pos":
            model = _chunker(tuple(c for c in columns if c != label))
        else:
            model = _word_tagger()
        summary["format"] = fmt
    elif args.task in ("parser", "tagger+parser"):
        X, y = _treebank(args.train, "training file")
        model = _parser() if args.task == "parser" else _tagger_parser()
        label = "head"
        summary["format"] = "conllu"
    else:
        X, y, corpus = _documents(args.train)
        model = _argument_miner(corpus)
        summary["format"] = corpus
    # The same data and settings give the same model: seeded unless --set says otherwise.
    model.set_params(**{k: 0 for k in _params_named(model, "random_state")})
    chosen = _apply_settings(model, args.set)
    if args.n_jobs is not None:
        model.set_params(**{k: args.n_jobs for k in _params_named(model, "n_jobs")})
    progress = _progress_on(args)
    _set_progress(model, progress)
    summary["sentences" if args.task != "argument-miner" else "documents"] = len(X)
    if args.task != "argument-miner":
        summary["tokens"] = sum(len(s) for s in X)
    summary["settings"] = {k: repr(v) for k, v in chosen.items()}
    _say(f"training a {args.task} on {len(X)} "
         f"{'documents' if args.task == 'argument-miner' else 'sentences'} of {args.train}",
         progress)
    with _progress_block(progress, "training"):
        model.fit(X, y)
    summary["fit_seconds"] = round(time.perf_counter() - started, 1)
    print(f"trained in {summary['fit_seconds']:.1f} s")
    if args.dev is not None:
        scores = _scores(model, args.task, args.dev, args, columns, label, progress)
        summary["dev"] = {"file": os.path.abspath(args.dev), **scores}
        _print_scores(scores, prefix="dev ")
    metadata = save_model(_unverbose(model), args.model, task=args.task, columns=columns,
                          label=label, summary=summary)
    print(f"model saved to {args.model} ({metadata['estimator']})")
    return 0


def _unverbose(model):
    """The model with the progress display turned off again, for saving."""
    model.set_params(**{k: 0 for k in _params_named(model, "verbose")})
    return model


def _params_named(model, name):
    """``{key: value}`` of the parameter ``name`` of every estimator of the model.

    A pipeline's own parameters are not its estimators' (its ``verbose`` is
    a bool that times its steps).
    """
    params = model.get_params(deep=True)
    own = name if not hasattr(model, "steps") else None
    return {k: v for k, v in params.items() if k == own or k.endswith("__" + name)}


def _say(message, progress):
    if progress:
        print(f"[{PROG}] {message}", file=sys.stderr, flush=True)


def _load(path):
    _check_file(path, "model file")
    return load_model(path, return_metadata=True)


def _predict_file_options(metadata, path, args):
    task = metadata["task"]
    label = metadata.get("label") or ("head" if "parser" in task else None)
    if label is None:
        raise CommandError("the model file does not say which column it predicts (it was "
                           "not saved by sksparse-struct train or save_model(label=...)).")
    fmt = _input_format(path, args.format, label) if path != "-" else (
        args.format if args.format != "auto" else "conllu" if "parser" in task else "conll")
    columns = metadata.get("columns")
    options = {"label": label, "format": fmt}
    # Column files name their columns; a CoNLL-U tagger the fields it reads.
    if columns and (fmt == "conll" or task == "tagger"):
        options["columns"] = tuple(columns)
    return options


def _predict(args):
    model, metadata = _load(args.model)
    if metadata["task"] != "argument-miner":  # a miner reads a folder
        _check_file(args.input, "input")
    progress = _progress_on(args)
    if metadata["task"] == "argument-miner":
        return _predict_documents(model, args, progress)
    from .datasets import predict_file

    options = _predict_file_options(metadata, args.input, args)
    source = sys.stdin if args.input == "-" else args.input
    output = sys.stdout if args.output in (None, "-") else args.output
    with _progress_block(progress, "predicting"):
        predict_file(model, source, output, n_jobs=args.n_jobs, verbose=1 if progress else 0,
                     **options)
    if output is not sys.stdout:
        _say(f"predictions written to {args.output}", progress)
    return 0


def _predict_documents(model, args, progress):
    X, _, _ = _documents(args.input)
    with _progress_block(progress, "predicting"):
        predicted = model.predict(X)
    lines = []
    for doc, (labels, links) in zip(X, predicted):
        lines.append(json.dumps({
            "id": doc["id"],
            "propositions": [list(span) for span in doc["propositions"]],
            "labels": list(labels),
            "links": [list(link) for link in links],
        }))
    text = "\n".join(lines) + ("\n" if lines else "")
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


def _scores(model, task, path, args, columns, label, progress):
    """The scores of ``model`` on the gold file (or folder) ``path``, by name."""
    if task == "argument-miner":
        from .metrics import argument_f1_score, link_f1_score, proposition_f1_score

        X, y, _ = _documents(path)
        with _progress_block(progress, "predicting"):
            predicted = model.predict(X)
        return {"link F1": 100 * link_f1_score(y, predicted),
                "proposition F1": 100 * proposition_f1_score(y, predicted),
                "argument F1": 100 * argument_f1_score(y, predicted)}
    import io

    from .datasets import predict_file

    metadata = {"task": task, "label": label, "columns": columns}
    options = _predict_file_options(metadata, path, args)
    if options["format"] == "text":
        raise CommandError(f"{path}: evaluation needs a gold CoNLL or CoNLL-U file, not plain "
                           "text.")
    predicted = io.StringIO()
    with _progress_block(progress, "predicting"):
        predict_file(model, path, predicted, **options)
    predicted.seek(0)
    if task == "tagger":
        return _tagger_scores(path, predicted, options)
    return _parser_scores(path, predicted, task)


def _tagger_scores(gold_path, predicted, options):
    from .datasets import read_conll
    from .metrics import chunk_f1_score, flat_accuracy_score

    columns = options.get("columns", ("word", "pos", "chunk"))
    label, fmt = options["label"], options["format"]
    _, y_true = read_conll(gold_path, columns, label, format=fmt)
    _, y_pred = read_conll(predicted, columns, label, format=fmt)
    scores = {"accuracy": 100 * flat_accuracy_score(y_true, y_pred)}
    labels = {tag for seq in y_true for tag in seq}
    if labels and all(tag == "O" or tag[:2] in ("B-", "I-", "E-", "S-", "L-", "U-")
                      for tag in labels):
        scores["chunk F1"] = 100 * chunk_f1_score(y_true, y_pred)
    return scores


def _parser_scores(gold_path, predicted, task):
    from .datasets import read_conllu
    from .metrics import las_score, uas_score

    gold, gold_heads, gold_rels = read_conllu(gold_path, return_deprel=True)
    pred, pred_heads, pred_rels = read_conllu(predicted, return_deprel=True)
    scores = {}
    if task == "tagger+parser":
        for field in ("upos", "xpos"):
            pairs = [(g[field], p[field]) for gs, ps in zip(gold, pred) for g, p in zip(gs, ps)]
            if pairs and any(p != "_" for _, p in pairs):
                scores[field.upper()] = 100 * sum(g == p for g, p in pairs) / len(pairs)
    scores["UAS"] = 100 * uas_score(gold_heads, pred_heads)
    if any(rel != "_" for rels in pred_rels for rel in rels):
        scores["LAS"] = 100 * las_score(gold_heads, pred_heads, gold_rels, pred_rels)
    return scores


def _print_scores(scores, prefix=""):
    for name, value in scores.items():
        print(f"{prefix}{name} {value:.2f}")


def _evaluate(args):
    model, metadata = _load(args.model)
    if metadata["task"] != "argument-miner":
        _check_file(args.gold, "gold file")
    scores = _scores(model, metadata["task"], args.gold, args, metadata.get("columns"),
                     metadata.get("label"), _progress_on(args))
    _print_scores(scores)
    return 0


def _info(args):
    model, metadata = _load(args.model)
    print(f"model {args.model}")
    print(f"task {metadata['task']}")
    print(f"estimator {metadata['estimator']}")
    if metadata.get("columns"):
        print(f"columns {','.join(metadata['columns'])}")
    if metadata.get("label"):
        print(f"label {metadata['label']}")
    if metadata.get("created"):
        print(f"created {metadata['created']}")
    for name, version in metadata.get("versions", {}).items():
        print(f"version {name} {version}")
    summary = metadata.get("summary", {})
    for key, value in summary.items():
        if isinstance(value, dict):
            for sub, item in value.items():
                item = f"{item:.2f}" if isinstance(item, float) else item
                print(f"training {key} {sub} {item}")
        else:
            print(f"training {key} {value}")
    if args.params:
        for name, value in sorted(model.get_params(deep=True).items()):
            if not hasattr(value, "get_params") and not isinstance(value, list):
                print(f"param {name} {value!r}")
    return 0


def _samples(args):
    """Write the bundled samples as files: EWT train/test CoNLL-U, its raw text, CDCP."""
    import gzip
    import importlib.resources

    from .datasets import load_ewt_sample

    folder = args.folder
    os.makedirs(folder, exist_ok=True)
    data = importlib.resources.files("sksparse_struct.datasets") / "data"
    written = []
    for subset in ("train", "test"):
        with (data / f"en_ewt-ud-{subset}-sample.conllu.gz").open("rb") as f:
            text = gzip.decompress(f.read()).decode("utf-8")
        path = os.path.join(folder, f"ewt-{subset}.conllu")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        written.append(path)
    # The test sentences' raw text (their "# text" comments), in the
    # treebank's paragraphs (the sample is runs of sentences from several
    # documents), a blank line between two.
    paragraphs, document = [], None
    for sentence in load_ewt_sample("test"):
        starts = any(c.startswith(("# newdoc", "# newpar")) for c in sentence.comments)
        sent_document = sentence.metadata.get("sent_id", "").rpartition("-")[0]
        if starts or sent_document != document:
            paragraphs.append([])
        document = sent_document
        paragraphs[-1].append(sentence.metadata["text"])
    path = os.path.join(folder, "ewt-test.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n\n".join(" ".join(p) for p in paragraphs) + "\n")
    written.append(path)
    with (data / "cdcp_sample.json.gz").open("rb") as f:
        bundle = json.loads(gzip.decompress(f.read()).decode("utf-8"))
    for split in ("train", "test"):
        sub = os.path.join(folder, f"cdcp-{split}")
        if os.path.isdir(sub):
            shutil.rmtree(sub)
        os.makedirs(sub)
        for doc_id, files in sorted(bundle[split].items()):
            for suffix, content in files.items():
                if content is not None:
                    with open(os.path.join(sub, doc_id + suffix), "w", encoding="utf-8") as f:
                        f.write(content)
        written.append(sub + os.sep)
    for path in written:
        print(path)
    return 0


# --------------------------------------------------------------------------
# The command line

def _parser_of_arguments():
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Train, apply and inspect sksparse_struct models on CoNLL, CoNLL-U, "
                    "plain-text and argument-mining files. Without a command: the quickstart "
                    "(see 'python -m sksparse_struct --help').",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def progress_options(p):
        p.add_argument("--progress", dest="progress", action="store_true", default=None,
                       help="show progress on standard error (default: on a terminal)")
        p.add_argument("--no-progress", dest="progress", action="store_false",
                       help="never show progress")

    train = sub.add_parser("train", help="train a model and save it",
                           description="Train a model on a file and save it.")
    train.add_argument("task", choices=TASKS, metavar="TASK",
                       help=f"one of {', '.join(TASKS)}")
    train.add_argument("--train", required=True, metavar="FILE",
                       help="training data: CoNLL / CoNLL-U file, or a folder of CDCP or "
                            "brat documents for an argument miner")
    train.add_argument("--dev", metavar="FILE", help="held-out data, scored after training")
    train.add_argument("--model", required=True, metavar="PATH", help="where to save the model")
    train.add_argument("--format", choices=("auto", "conll", "conllu"), default="auto",
                       help="tagger input format (default: from the file name)")
    train.add_argument("--columns", metavar="NAMES",
                       help="tagger, CoNLL files: comma-separated column names "
                            "(default: word,pos,chunk)")
    train.add_argument("--label", help="tagger: the column to predict (default: chunk for "
                                       "CoNLL files, upos for CoNLL-U)")
    train.add_argument("--set", action="append", default=[], metavar="PARAM=VALUE",
                       help="set a parameter of the model (repeatable), e.g. --set max_iter=5")
    train.add_argument("--n-jobs", type=int, default=None, metavar="N",
                       help="threads or processes for training")
    progress_options(train)

    predict = sub.add_parser("predict", help="predict a file with a saved model",
                             description="Tag or parse a file of any size with a saved model.")
    predict.add_argument("--model", required=True, metavar="PATH")
    predict.add_argument("input", metavar="INPUT",
                         help="CoNLL / CoNLL-U / plain-text file ('-' for standard input), or "
                              "a folder of documents for an argument miner")
    predict.add_argument("--output", metavar="PATH",
                         help="where to write (default: standard output)")
    predict.add_argument("--format", choices=("auto", "conll", "conllu", "text"),
                         default="auto", help="input format (default: from the file name: "
                                              ".conllu, .txt, else CoNLL columns)")
    predict.add_argument("--n-jobs", type=int, default=None, metavar="N",
                         help="chunks of the file predicted at once")
    progress_options(predict)

    evaluate = sub.add_parser("evaluate", help="score a saved model on a gold file",
                              description="Predict a gold file with a saved model and print "
                                          "its scores, one 'NAME value' line each.")
    evaluate.add_argument("--model", required=True, metavar="PATH")
    evaluate.add_argument("gold", metavar="GOLD")
    evaluate.add_argument("--format", choices=("auto", "conll", "conllu"), default="auto")
    progress_options(evaluate)

    info = sub.add_parser("info", help="describe a saved model",
                          description="Print what a saved model is and how it was trained.")
    info.add_argument("model", metavar="PATH")
    info.add_argument("--params", action="store_true", help="also list every parameter")

    samples = sub.add_parser("samples", help="write the bundled sample data to a folder",
                             description="Write the bundled samples (UD English-EWT slices as "
                                         "CoNLL-U and raw text, CDCP documents) to a folder.")
    samples.add_argument("folder", metavar="FOLDER")
    return parser


_RUN = {"train": _train, "predict": _predict, "evaluate": _evaluate, "info": _info,
        "samples": _samples}


def main(argv=None):
    """Entry point of ``sksparse-struct`` and ``python -m sksparse_struct``; the exit status.

    Parameters
    ----------
    argv : list of str, default=None
        The arguments without the program name; None means ``sys.argv[1:]``.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or (argv[0].startswith("--") and argv[0] not in ("--help", "--version")):
        # No command: the quickstart, with its own options.
        from ._quickstart import main as quickstart

        return quickstart(argv)
    args = _parser_of_arguments().parse_args(argv)
    if args.command is None:
        return 0
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return _RUN[args.command](args)
    except CommandError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
    except USER_ERRORS as error:
        print(f"{PROG}: error: {_one_line(error)}", file=sys.stderr)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    return 2


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """Warnings as one line on standard error, without the source line."""
    print(f"{PROG}: warning: {category.__name__}: {_one_line(message)}", file=sys.stderr)


def _one_line(error):
    text = str(error) or type(error).__name__
    if isinstance(error, FileNotFoundError) and error.filename:
        text = f"{error.filename}: {error.strerror}"
    return " ".join(text.split())
