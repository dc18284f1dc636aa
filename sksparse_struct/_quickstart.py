"""The quickstart behind ``python -m sksparse_struct``.

Trains a part-of-speech classifier on the bundled sample of the UD English Web
Treebank, one token at a time, with a sparsemax and a softmax Fenchel-Young
loss, and reports accuracy and how sparse the predicted probabilities are.
Then trains a linear-chain CRF tagger on the same features, which tags whole
sentences (it also scores which tag follows which), and reports its accuracy
next to the classifiers'. Last, trains a dependency parser with the SparseMAP
loss on the same sentences and reports its attachment scores and how few
trees SparseMAP keeps per sentence.

Everything but :func:`main` is a pure function returning values, so that the
pieces can be tested and reused; only :func:`main` prints.
"""

import argparse
import time
from contextlib import nullcontext

import numpy as np
from sklearn.feature_extraction import DictVectorizer

from .datasets import load_ewt_sample
from .datasets._conllu import words_and_tags
from .linear_model import FenchelYoungClassifier
from .metrics import attachment_report, flat_accuracy_score
from .parsing import SparseMAPParser
from .tagging import LinearChainCRF
from .utils._reporting import compile_notice, progress_ticker

__all__ = ["main"]

LOSSES = ("sparsemax", "softmax", "entmax15")
DEFAULT_LOSSES = ("sparsemax", "softmax")
DEFAULT_ALPHA = 1e-4
# "Of course, you could just go in by main force." - short, with words of
# more than one plausible tag ("Of", "could", "in", "main"), where sparsemax
# keeps two or three candidates and rules out the rest.
DEFAULT_SENTENCE = 12
# L2 penalty of the CRF tagger, CRFsuite's c2 (on the sum of the sentence
# losses); on this sample 0.1 is about the best of 0.03 / 0.1 / 0.3 / 1.
DEFAULT_CRF_C2 = 0.1
# The parser's loss and epochs: on this sample the test UAS is the same after
# 5 epochs as after 10 (0.751), in about half the time.
DEFAULT_PARSER_LOSS = "sparsemap"
DEFAULT_PARSER_EPOCHS = 5
# Seconds between two of main()'s "still compiling" / "training" lines while a
# model trains (on a first run, the CRF and the parser compile for 15 to 25 s
# each on 2 cores).
TICK_SECONDS = 10.0


def word_shape(word):
    """Collapsed character classes of a word: ``X`` upper, ``x`` lower, ``d`` digit.

    Runs of the same class are collapsed and other characters are kept as
    they are, so that the shape generalises across words of one kind.

    Examples
    --------
    >>> from sksparse_struct._quickstart import word_shape
    >>> [word_shape(w) for w in ["Google", "USA", "01/24/2001", "e-mail", "n't"]]
    ['Xx', 'X', 'd/d/d', 'x-x', "x'x"]
    """
    shape = []
    for char in word:
        if char.isupper():
            kind = "X"
        elif char.islower():
            kind = "x"
        elif char.isdigit():
            kind = "d"
        else:
            kind = char
        if not shape or shape[-1] != kind:
            shape.append(kind)
    return "".join(shape)


def token_features(words, i):
    """Indicator features of the ``i``-th word of a sentence, as a dict.

    The lower-cased word, its prefixes and suffixes of length 1 to 3, its
    shape, whether it is all digits, title-cased or upper-cased, and the
    lower-cased previous and next words (``<s>`` / ``</s>`` at the edges).

    Examples
    --------
    >>> from sksparse_struct._quickstart import token_features
    >>> sorted(token_features(["I", "saw", "Bob"], 2))
    ['bias', 'is_title', 'next=</s>', 'prefix1=b', 'prefix2=bo', 'prefix3=bob',
     'prev=saw', 'shape=Xx', 'suffix1=b', 'suffix2=ob', 'suffix3=bob', 'word=bob']
    """
    word = words[i]
    lower = word.lower()
    features = {"bias": 1.0, f"word={lower}": 1.0, f"shape={word_shape(word)}": 1.0}
    for k in (1, 2, 3):
        features[f"prefix{k}={lower[:k]}"] = 1.0
        features[f"suffix{k}={lower[-k:]}"] = 1.0
    if word.isdigit():
        features["is_digit"] = 1.0
    if word.istitle():
        features["is_title"] = 1.0
    if word.isupper():
        features["is_upper"] = 1.0
    features["prev=" + (words[i - 1].lower() if i > 0 else "<s>")] = 1.0
    features["next=" + (words[i + 1].lower() if i + 1 < len(words) else "</s>")] = 1.0
    return features


def sentence_features(words):
    """Feature dicts of every word of one sentence (see :func:`token_features`)."""
    return [token_features(words, i) for i in range(len(words))]


def corpus_features(sentences):
    """Feature dicts of every word of a list of sentences, flattened."""
    return [features for words in sentences for features in sentence_features(words)]


def sparsity(proba):
    """How sparse rows of predicted probabilities are.

    Returns ``(mean_nonzero, single_fraction)``: the average number of
    classes with a nonzero probability per row, and the fraction of rows
    with exactly one (a certain prediction).

    Examples
    --------
    >>> from sksparse_struct._quickstart import sparsity
    >>> sparsity([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]])
    (1.5, 0.5)
    """
    n_nonzero = np.count_nonzero(np.asarray(proba) > 0, axis=1)
    return float(n_nonzero.mean()), float(np.mean(n_nonzero == 1))


def top_candidates(proba_row, classes, k=None):
    """The classes with a nonzero probability, most probable first.

    Parameters
    ----------
    proba_row : array-like of shape (n_classes,)
        Probabilities of one sample.
    classes : sequence of str
        The class labels, aligned with ``proba_row``.
    k : int or None, default=None
        Keep at most ``k`` classes; ``None`` keeps every nonzero one.

    Returns
    -------
    candidates : list of (str, float)

    Examples
    --------
    >>> from sksparse_struct._quickstart import top_candidates
    >>> top_candidates([0.2, 0.0, 0.8], ["ADJ", "ADV", "NOUN"])
    [('NOUN', 0.8), ('ADJ', 0.2)]
    >>> top_candidates([0.2, 0.0, 0.8], ["ADJ", "ADV", "NOUN"], k=1)
    [('NOUN', 0.8)]
    """
    proba_row = np.asarray(proba_row, dtype=np.float64)
    # A stable sort keeps ties in class order, so the output is deterministic.
    order = np.argsort(-proba_row, kind="stable")
    candidates = [(str(classes[j]), float(proba_row[j])) for j in order
                  if proba_row[j] > 0]
    return candidates if k is None else candidates[:k]


def run(losses=DEFAULT_LOSSES, alpha=DEFAULT_ALPHA, sentence=DEFAULT_SENTENCE,
        top_k=3, crf=True, crf_c2=DEFAULT_CRF_C2, parser=True, log=None, step=None):
    """Train and evaluate classifiers, a CRF tagger and a parser on the EWT sample.

    Parameters
    ----------
    losses : sequence of str, default=("sparsemax", "softmax")
        Losses of :class:`~sksparse_struct.FenchelYoungClassifier` to compare.
    alpha : float, default=1e-4
        L2 penalty of every classifier.
    sentence : int, default=12
        Index of the test sentence shown as an example.
    top_k : int, default=3
        Number of candidate tags per word of the example that
        :func:`format_report` shows.
    crf : bool, default=True
        Also train a :class:`~sksparse_struct.LinearChainCRF` tagger
        (``loss="crf"``) on the same features, one sequence per sentence.
    crf_c2 : float, default=0.1
        Its L2 penalty ``c2``.
    parser : bool, default=True
        Also train a :class:`~sksparse_struct.SparseMAPParser` (SparseMAP
        loss, 5 epochs, with relation labels) on the training sentences'
        trees; see :func:`run_parser`.
    log : callable or None, default=None
        Called with a one-line message as each model starts training.
    step : callable or None, default=None
        Called with no argument as each model starts training, after
        ``log``; the model's training and scoring run inside the context
        manager it returns. :func:`main` passes one that writes progress
        lines (:func:`~sksparse_struct.utils._reporting.progress_ticker`).

    Returns
    -------
    results : dict
        Data sizes (``n_train_sentences``, ``n_train_tokens``,
        ``n_test_sentences``, ``n_test_tokens``, ``n_features``,
        ``n_classes``), ``alpha``, ``models`` (per loss: ``accuracy``,
        ``mean_nonzero``, ``single_fraction``, ``fit_seconds``, ``n_iter``)
        and ``example`` (``index``, ``text``, ``words``, ``gold``,
        ``top_k``, per loss the ``candidates`` of each word: every
        (tag, probability) with a nonzero probability, best first, and
        ``tagger``: the CRF's tag of each word in its best sequence, with
        that tag's marginal probability, or None). ``tagger`` is None
        without the CRF, else like a model of ``models`` (with the token
        marginals as probabilities) plus ``c2``. ``parser`` is None without
        the parser, else what :func:`run_parser` returns.
    """
    X_train, y_train = load_ewt_sample("train", return_X_y=True)
    test_sentences = load_ewt_sample("test")
    X_test, y_test = words_and_tags(test_sentences)
    if not 0 <= sentence < len(X_test):
        raise ValueError(f"sentence must be in [0, {len(X_test) - 1}]; got {sentence}")
    vectorizer = DictVectorizer()
    F_train = vectorizer.fit_transform(corpus_features(X_train))
    F_test = vectorizer.transform(corpus_features(X_test))
    F_example = vectorizer.transform(sentence_features(X_test[sentence]))
    tags_train = np.array([tag for tags in y_train for tag in tags])
    tags_test = np.array([tag for tags in y_test for tag in tags])

    results = {
        "n_train_sentences": len(X_train),
        "n_train_tokens": len(tags_train),
        "n_test_sentences": len(X_test),
        "n_test_tokens": len(tags_test),
        "n_features": F_train.shape[1],
        "n_classes": len(np.unique(tags_train)),
        "alpha": alpha,
        "models": {},
        "example": {
            "index": sentence,
            "text": test_sentences[sentence].metadata["text"],
            "words": list(X_test[sentence]),
            "gold": list(y_test[sentence]),
            "top_k": top_k,
            "candidates": {},
            "tagger": None,
        },
        "tagger": None,
        "parser": None,
    }
    log = log or (lambda message: None)

    def model(message):
        log(message)
        return nullcontext() if step is None else step()

    for loss in losses:
        with model(f"  FenchelYoungClassifier(loss={loss!r})"):
            # tol=1e-4 on the gradient: on this sample, tighter tolerances move
            # at most a token or two of the test predictions but triple the time.
            clf = FenchelYoungClassifier(loss=loss, alpha=alpha, tol=1e-4)
            start = time.perf_counter()
            clf.fit(F_train, tags_train)
            fit_seconds = time.perf_counter() - start
            mean_nonzero, single_fraction = sparsity(clf.predict_proba(F_test))
            results["models"][loss] = {
                "accuracy": float(clf.score(F_test, tags_test)),
                "mean_nonzero": mean_nonzero,
                "single_fraction": single_fraction,
                "fit_seconds": fit_seconds,
                "n_iter": clf.n_iter_,
            }
            results["example"]["candidates"][loss] = [
                top_candidates(row, clf.classes_) for row in clf.predict_proba(F_example)
            ]
    if crf:
        with model("  LinearChainCRF(loss='crf')"):
            results["tagger"], results["example"]["tagger"] = _run_tagger(
                X_train, y_train, X_test, y_test, sentence, crf_c2)
    if parser:
        with model(f"  SparseMAPParser(loss={DEFAULT_PARSER_LOSS!r})"):
            results["parser"] = run_parser(sentence=sentence)
    return results


def run_parser(loss=DEFAULT_PARSER_LOSS, max_iter=DEFAULT_PARSER_EPOCHS,
               sentence=DEFAULT_SENTENCE):
    """Train a dependency parser on the EWT sample and score it on the test split.

    Parameters
    ----------
    loss : str, default="sparsemap"
        Loss of the :class:`~sksparse_struct.SparseMAPParser`.
    max_iter : int, default=5
        Its epochs.
    sentence : int, default=12
        Index of the test sentence whose SparseMAP support is reported.

    Returns
    -------
    results : dict
        ``loss``, ``max_iter``, ``n_iter``, ``fit_seconds``, the test
        ``uas``, ``las`` and ``exact_match`` (unlabelled), the SparseMAP
        sparsity on the test sentences: ``mean_trees`` (trees in the
        support per sentence) and ``single_tree`` (the fraction of sentences
        with one tree), and ``example``: the example sentence's support as
        ``(probability, number of words with the right head)`` pairs, most
        probable first, and its number of words ``example_words``.
    """
    # Token dicts, and (heads, relation labels) pairs.
    X_train, y_train = load_ewt_sample("train", return_X_y=True, target="tree")
    X_test, y_test = load_ewt_sample("test", return_X_y=True, target="tree")
    heads_test = [heads for heads, _ in y_test]
    deprels_test = [deprels for _, deprels in y_test]
    # tol=None: exactly max_iter epochs (chosen above), no stopping rule.
    model = SparseMAPParser(loss=loss, max_iter=max_iter, tol=None, random_state=0)
    start = time.perf_counter()
    model.fit(X_train, y_train)
    fit_seconds = time.perf_counter() - start
    heads_pred, deprels_pred = model.predict(X_test, return_deprel=True)
    report = attachment_report(heads_test, heads_pred, deprels_test, deprels_pred)
    supports = model.predict_sparse(X_test)
    n_trees = np.array([len(support) for support in supports])
    gold = heads_test[sentence]
    return {
        "loss": loss,
        "max_iter": max_iter,
        "n_iter": model.n_iter_,
        "fit_seconds": fit_seconds,
        "uas": float(report["uas"]),
        "las": float(report["las"]),
        "exact_match": float(report["unlabelled_exact_match"]),
        "mean_trees": float(n_trees.mean()),
        "single_tree": float(np.mean(n_trees == 1)),
        "example": [(p, int(np.sum(heads == gold))) for heads, p in supports[sentence]],
        "example_words": len(gold),
    }


def _run_tagger(X_train, y_train, X_test, y_test, sentence, c2):
    """Fit and evaluate the CRF tagger; returns its scores and the example's tags."""
    # The tagger takes the same feature dicts, one list per sentence.
    train_features = [sentence_features(words) for words in X_train]
    test_features = [sentence_features(words) for words in X_test]
    # tol=1e-3: about 80 L-BFGS iterations instead of 110, and the same test
    # accuracy to a token or two.
    tagger = LinearChainCRF(loss="crf", c2=c2, tol=1e-3)
    start = time.perf_counter()
    tagger.fit(train_features, y_train)
    fit_seconds = time.perf_counter() - start
    y_pred = tagger.predict(test_features)
    marginals = tagger.predict_marginals(test_features)
    mean_nonzero, single_fraction = sparsity(np.vstack(marginals))
    scores = {
        "accuracy": float(flat_accuracy_score(y_test, y_pred)),
        "mean_nonzero": mean_nonzero,
        "single_fraction": single_fraction,
        "fit_seconds": fit_seconds,
        "n_iter": tagger.n_iter_,
        "c2": c2,
    }
    column = {tag: k for k, tag in enumerate(tagger.classes_.tolist())}
    example = [(tag, float(row[column[tag]]))
               for tag, row in zip(y_pred[sentence], marginals[sentence])]
    return scores, example


def _format_candidates(candidates, top_k):
    text = " ".join(f"{tag} {p:.2f}" for tag, p in candidates[:top_k])
    if len(candidates) > top_k:
        text += f" +{len(candidates) - top_k}"
    return text


def format_report(results):
    """The human-readable report of :func:`run`'s results, as a string."""
    models = dict(results["models"])
    losses = list(models)
    tagger = results.get("tagger")
    if tagger is not None:
        models["crf"] = tagger
    columns = list(models)
    n_classes = results["n_classes"]
    title = "part-of-speech tagging, one token at a time"
    if tagger is not None:
        title = "part-of-speech tagging, by token and by sentence"
    if results.get("parser") is not None:
        title += "; dependency parsing"
    lines = [
        f"sksparse_struct quickstart: {title}",
        "",
        "Data: the bundled sample of the UD English Web Treebank (CC BY-SA 4.0)",
        f"  train {results['n_train_sentences']} sentences, "
        f"{results['n_train_tokens']:,} tokens; test {results['n_test_sentences']} "
        f"sentences, {results['n_test_tokens']:,} tokens",
        f"  {results['n_features']:,} features (word, prefixes, suffixes, shape, "
        f"neighbours); {n_classes} UPOS tags",
        f"Model: DictVectorizer -> FenchelYoungClassifier(loss=..., "
        f"alpha={results['alpha']:g})",
    ]
    if tagger is not None:
        lines += [f"Tagger (crf): the same features -> LinearChainCRF(loss='crf', "
                  f"c2={tagger['c2']:g}),",
                  "  which also scores tag transitions; its probabilities are the "
                  "token marginals"]
    lines.append("")
    rows = [
        ("test accuracy", [f"{models[m]['accuracy']:.3f}" for m in columns]),
        (f"nonzero probabilities (of {n_classes})",
         [f"{models[m]['mean_nonzero']:.2f}" for m in columns]),
        ("tokens with one nonzero probability",
         [f"{100 * models[m]['single_fraction']:.1f}%" for m in columns]),
        ("fit time (s)", [f"{models[m]['fit_seconds']:.1f}" for m in columns]),
    ]
    label_width = max(len(label) for label, _ in rows) + 2
    header = " " * label_width + "".join(f"{name:>11}" for name in columns)
    lines.append(header)
    for label, values in rows:
        lines.append(f"{label:<{label_width}}" + "".join(f"{v:>11}" for v in values))
    lines.append("")

    example = results["example"]
    lines.append(f"Example, test sentence {example['index']}: {example['text']}")
    top_k = example["top_k"]
    legend = (f"(the {top_k} most probable tags; +n: n more tags with a "
              "nonzero probability")
    tags = example.get("tagger")
    if tags is None:
        lines.append(legend + ")")
    else:
        lines += [legend + ";",
                  " crf: the tag in the tagger's best sequence, with its marginal "
                  "probability)"]
    word_width = max(len("word"), *(len(w) for w in example["words"])) + 2
    gold_width = 7
    cand_text = {
        loss: [_format_candidates(cands, top_k)
               for cands in example["candidates"][loss]]
        for loss in losses
    }
    if tags is not None:
        cand_text["crf"] = [f"{tag} {p:.2f}" for tag, p in tags]
    cand_width = {
        name: max(len(name), *(len(t) for t in texts)) + 3
        for name, texts in cand_text.items()
    }
    lines.append(f"  {'word':<{word_width}}{'gold':<{gold_width}}"
                 + "".join(f"{name:<{cand_width[name]}}" for name in cand_text).rstrip())
    for i, (word, gold) in enumerate(zip(example["words"], example["gold"])):
        lines.append(f"  {word:<{word_width}}{gold:<{gold_width}}"
                     + "".join(f"{texts[i]:<{cand_width[name]}}"
                               for name, texts in cand_text.items()).rstrip())
    parsed = results.get("parser")
    if parsed is not None:
        lines += [""] + format_parser_report(parsed, example["index"])
    return "\n".join(lines)


def format_parser_report(parsed, index):
    """The lines of the report about :func:`run_parser`'s results."""
    probabilities = ", ".join(f"{p:.2f}" for p, _ in parsed["example"])
    right = ", ".join(str(r) for _, r in parsed["example"])
    return [
        f"Dependency parsing: SparseMAPParser(loss={parsed['loss']!r}, "
        f"max_iter={parsed['max_iter']}) on the",
        "  same sentences' trees (words, lemmas, gold UPOS and XPOS), with relations",
        f"  test UAS {parsed['uas']:.3f}, LAS {parsed['las']:.3f}, whole trees right "
        f"{parsed['exact_match']:.2f}; fit time {parsed['fit_seconds']:.1f} s",
        f"  SparseMAP keeps {parsed['mean_trees']:.2f} trees per test sentence on "
        f"average; {100 * parsed['single_tree']:.0f}% keep one",
        f"  test sentence {index}, the trees SparseMAP keeps: p = {probabilities}",
        f"    with {right} of its {parsed['example_words']} heads right",
    ]


def _parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m sksparse_struct",
        description=(
            "Quickstart: train FenchelYoungClassifier as a part-of-speech "
            "classifier on the bundled sample of the UD English Web Treebank "
            "(360 training and 100 test sentences) with several losses, and "
            "report test accuracy and how sparse predict_proba is; then train "
            "LinearChainCRF, a sequence tagger, on the same features and "
            "report its accuracy next to theirs; then train SparseMAPParser, a "
            "dependency parser, on the same sentences' trees and report its "
            "attachment scores and how many trees SparseMAP keeps."
        ),
    )
    parser.add_argument(
        "--losses", nargs="+", choices=LOSSES, default=list(DEFAULT_LOSSES),
        metavar="LOSS",
        help=f"losses to compare, among {', '.join(LOSSES)} "
             f"(default: {' '.join(DEFAULT_LOSSES)})",
    )
    parser.add_argument(
        "--alpha", type=float, default=DEFAULT_ALPHA,
        help=f"L2 penalty of the classifiers (default: {DEFAULT_ALPHA:g})",
    )
    parser.add_argument(
        "--sentence", type=int, default=DEFAULT_SENTENCE,
        help="index (0-99) of the test sentence shown as an example "
             f"(default: {DEFAULT_SENTENCE})",
    )
    parser.add_argument(
        "--top-k", type=int, default=3,
        help="candidate tags shown per word of the example (default: 3)",
    )
    parser.add_argument(
        "--no-crf", dest="crf", action="store_false",
        help="skip the LinearChainCRF tagger",
    )
    parser.add_argument(
        "--no-parser", dest="parser", action="store_false",
        help="skip the SparseMAPParser dependency parser",
    )
    args = parser.parse_args(argv)
    if not 0 <= args.sentence < 100:
        parser.error(f"--sentence must be between 0 and 99; got {args.sentence}")
    if args.alpha <= 0:
        parser.error(f"--alpha must be positive; got {args.alpha}")
    if args.top_k < 1:
        parser.error(f"--top-k must be at least 1; got {args.top_k}")
    # Keep the order given but drop repeats.
    args.losses = list(dict.fromkeys(args.losses))
    return args


def main(argv=None, tick_seconds=TICK_SECONDS):
    """Entry point of ``python -m sksparse_struct``; returns the exit status.

    On standard output: the name of each model as it starts training, then
    the report. On standard error, while each model trains: a line every
    ``tick_seconds`` that says whether numba is still compiling (a first
    run only), the model's time when it is done, and how much of it went to
    compiling (:func:`~sksparse_struct.utils._reporting.progress_ticker`).

    Parameters
    ----------
    argv : list of str, default=None
        Command-line arguments without the program name; ``None`` means
        ``sys.argv[1:]``.
    tick_seconds : float, default=10.0
        Seconds between two progress lines.
    """
    args = _parse_args(argv)
    print("Training on the bundled UD English EWT sample:", flush=True)
    with compile_notice("sksparse_struct"):
        results = run(losses=args.losses, alpha=args.alpha, sentence=args.sentence,
                      top_k=args.top_k, crf=args.crf, parser=args.parser,
                      log=lambda message: print(message, flush=True),
                      step=lambda: progress_ticker(tick_seconds, indent="    "))
    print(format_report(results))
    return 0
