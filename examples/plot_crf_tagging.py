"""Part-of-speech tagging with a linear-chain CRF, and what it is unsure about.

The script trains :class:`sksparse_struct.LinearChainCRF` (``loss="crf"``) as a
universal part-of-speech (UPOS) tagger on the training split of the bundled
sample of the UD English Web Treebank
(:func:`sksparse_struct.datasets.load_ewt_sample`: 360 sentences), with the
``"pos"`` preset of :class:`sksparse_struct.feature_extraction.TokenFeatures`
(words and affixes around the current one, shape, spelling flags), evaluates
it on the test split (100 sentences) and prints the per-tag report of
:func:`sksparse_struct.metrics.flat_classification_report`. Then, for one
ambiguous test sentence ("Any particular shop that you know of AND their
number ."), it prints the CRF's token marginals and the SparseMAP support of
the same scores (:meth:`~sksparse_struct.LinearChainCRF.predict_sparse`): a
handful of whole tag sequences with their probabilities.

Pictures:

``crf_tagging_transitions.png``
    The learned transition scores ``transition_[a, b]`` (tag ``a`` followed
    by tag ``b``), with the start scores as an extra first row and the end
    scores as an extra last column.
``crf_tagging_marginals.png``
    The marginal probability of each tag at each word of the sentence
    (forward-backward, ``predict_marginals``); squares mark the treebank's
    tags.
``crf_tagging_support.png``
    The tag sequences of the SparseMAP support, most probable first, with
    their probabilities; tags that differ from the most probable sequence
    are highlighted.

Run ``python examples/plot_crf_tagging.py --output-dir DIR``; it takes a few
seconds after numba has compiled the kernels. It needs matplotlib for the
pictures (the ``examples`` extra); without it, it prints the numbers and says
so.
"""

import argparse
import os
import sys
import time

import numpy as np

from sksparse_struct import LinearChainCRF
from sksparse_struct.datasets import load_ewt_sample
from sksparse_struct.feature_extraction import TokenFeatures
from sksparse_struct.metrics import (
    flat_accuracy_score,
    flat_classification_report,
    sequence_accuracy_score,
)

# "Any particular shop that you know of AND their number ." Three words with
# two likely tags each ("particular" ADJ / NOUN, "that" PRON / SCONJ, the
# upper-case "AND" CCONJ / PROPN), whose choices depend on each other.
SENTENCE_INDEX = 59
# CRFsuite-style L2 penalty on the sum of the sentence losses. Test token
# accuracy on this sample: 0.833 / 0.832 / 0.827 / 0.822 for c2 = 0.03 / 0.1 /
# 0.3 / 1; 0.1 needs fewer iterations than 0.03.
C2 = 0.1
# L-BFGS converges in a little over 100 iterations here; the default
# max_iter=100 would stop just short (with a ConvergenceWarning).
MAX_ITER = 200


def train(X_train, y_train):
    """Feature extractor and CRF tagger fitted on words and tags."""
    features = TokenFeatures(preset="pos")
    # The tagger takes the feature dicts directly and vectorizes them itself.
    crf = LinearChainCRF(loss="crf", c2=C2, max_iter=MAX_ITER)
    start = time.perf_counter()
    crf.fit(features.transform(X_train), y_train)
    return features, crf, time.perf_counter() - start


def analyse(features, crf, words):
    """Viterbi tags, token marginals and SparseMAP support of one sentence.

    SparseMAP is run on the scores of the CRF model. A model trained with
    ``loss="sparsemap"`` (c2=1) is about as accurate here (0.836 vs 0.832),
    but its scores are on a margin scale, small on this small sample: its
    SparseMAP supports have a median of 14 sequences on the test split (up
    to 68), a less readable picture. The CRF's larger scores give supports
    of 1 to 11 sequences (median 2), which is the point of the picture: a
    few whole readings.
    """
    F = features.transform([words])
    return {
        "viterbi": crf.predict(F)[0],
        "marginals": crf.predict_marginals(F)[0],
        "support": crf.predict_sparse(F)[0],
    }


def summary(crf, fit_seconds, y_test, y_pred, words, gold, out):
    classes = crf.classes_.tolist()
    lines = [
        f"LinearChainCRF(loss='crf', c2={C2}) on the UD English EWT sample: "
        f"{crf.n_iter_} L-BFGS iterations, {fit_seconds:.1f} s; "
        f"{crf.coef_.nnz:,} (feature, tag) weights, {len(classes)} tags",
        f"test token accuracy {flat_accuracy_score(y_test, y_pred):.3f}, "
        f"sentence accuracy {sequence_accuracy_score(y_test, y_pred):.3f}",
        "",
        flat_classification_report(y_test, y_pred, digits=3, zero_division=0.0),
        f"sentence: {' '.join(words)}",
        f"  {'word':<14}{'gold':<7}{'Viterbi':<9}marginals (>= 0.01)",
    ]
    for i, word in enumerate(words):
        row = out["marginals"][i]
        order = np.argsort(-row, kind="stable")
        cands = " ".join(f"{classes[k]} {row[k]:.2f}" for k in order if row[k] >= 0.01)
        lines.append(f"  {word:<14}{gold[i]:<7}{out['viterbi'][i]:<9}{cands}")
    support = out["support"]
    lines.append(f"SparseMAP support: {len(support)} tag sequences")
    for tags, p in support:
        n_right = sum(a == b for a, b in zip(tags, gold))
        lines.append(f"  p = {p:.3f}  {' '.join(tags)}  ({n_right}/{len(gold)} correct)")
    return "\n".join(lines)


def plot_transitions(plt, crf, path):
    classes = crf.classes_.tolist()
    K = len(classes)
    # Start scores as a first row, end scores as a last column; the unused
    # corner cells are masked.
    grid = np.full((K + 1, K + 1), np.nan)
    grid[0, :K] = crf.start_transition_
    grid[1:, :K] = crf.transition_
    grid[1:, K] = crf.end_transition_
    vmax = np.nanmax(np.abs(grid))
    fig, ax = plt.subplots(figsize=(7.4, 6.4), constrained_layout=True)
    image = ax.imshow(np.ma.masked_invalid(grid), cmap="RdBu_r", vmin=-vmax, vmax=vmax)
    ax.set_xticks(range(K + 1))
    ax.set_xticklabels(classes + ["end"], rotation=60, ha="right")
    ax.set_yticks(range(K + 1))
    ax.set_yticklabels(["start"] + classes)
    ax.axhline(0.5, color="black", lw=0.8)
    ax.axvline(K - 0.5, color="black", lw=0.8)
    ax.set_xlabel("next tag")
    ax.set_ylabel("previous tag")
    fig.colorbar(image, ax=ax, shrink=0.8, label="transition score")
    ax.set_title("Learned transition scores (red: likely, blue: unlikely)")
    fig.savefig(path, dpi=72)
    plt.close(fig)


def plot_marginals(plt, crf, words, gold, out, path):
    classes = crf.classes_.tolist()
    marginals = out["marginals"]
    n, K = marginals.shape
    fig, ax = plt.subplots(figsize=(8.0, 0.36 * n + 1.6), constrained_layout=True)
    image = ax.imshow(marginals, cmap="Blues", vmin=0.0, vmax=1.0, aspect="auto")
    for i in range(n):
        for k in range(K):
            p = marginals[i, k]
            if p >= 0.01:
                text = "1" if f"{p:.2f}" == "1.00" else f"{p:.2f}"[1:]
                ax.text(k, i, text, ha="center", va="center", fontsize=7,
                        color="white" if p > 0.6 else "black")
        ax.add_patch(plt.Rectangle((classes.index(gold[i]) - 0.5, i - 0.5), 1, 1,
                                   fill=False, edgecolor="crimson", lw=1.5))
    ax.set_xticks(range(K))
    ax.set_xticklabels(classes, rotation=60, ha="right")
    ax.set_yticks(range(n))
    ax.set_yticklabels(words)
    fig.colorbar(image, ax=ax, shrink=0.8, label="marginal probability")
    ax.set_title("CRF tag marginals (red squares: treebank tags)")
    fig.savefig(path, dpi=72)
    plt.close(fig)


def plot_support(plt, words, gold, out, path):
    support = out["support"]
    best = support[0][0]
    rows = len(support) + 1
    fig, ax = plt.subplots(figsize=(0.82 * len(words) + 1.4, 0.42 * rows + 1.0),
                           constrained_layout=True)
    # One row per sequence of the support and a last row for the treebank's
    # tags; a column per word, and the probability on the left.
    table = [(f"p = {p:.3f}", tags) for tags, p in support] + [("treebank", gold)]
    for r, (label, tags) in enumerate(table):
        for i, tag in enumerate(tags):
            differs = r < len(support) and tag != best[i]
            wrong = tag != gold[i]
            if differs:
                ax.add_patch(plt.Rectangle((i - 0.5, r - 0.5), 1, 1,
                                           color="moccasin", lw=0))
            ax.text(i, r, tag, ha="center", va="center", fontsize=8,
                    color="crimson" if wrong else "black",
                    fontweight="bold" if differs else "normal")
        ax.text(-0.6, r, label, ha="right", va="center", fontsize=9,
                style="italic" if r == len(support) else "normal")
    ax.axhline(len(support) - 0.5, color="gray", lw=0.8)
    ax.set_xlim(-0.5, len(words) - 0.5)
    ax.set_ylim(rows - 0.5, -0.5)
    ax.set_xticks(range(len(words)))
    ax.set_xticklabels(words, fontsize=9)
    ax.xaxis.tick_top()
    ax.set_yticks([])
    for side in ("left", "right", "bottom"):
        ax.spines[side].set_visible(False)
    ax.set_title("SparseMAP support of the CRF scores (shaded: differs from the "
                 "most probable sequence; red: wrong)", fontsize=10)
    fig.savefig(path, dpi=72)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", default=".",
                        help="where to write the PNG files (default: .)")
    args = parser.parse_args(argv)
    X_train, y_train = load_ewt_sample("train", return_X_y=True)
    X_test, y_test = load_ewt_sample("test", return_X_y=True)
    features, crf, fit_seconds = train(X_train, y_train)
    y_pred = crf.predict(features.transform(X_test))
    words, gold = X_test[SENTENCE_INDEX], y_test[SENTENCE_INDEX]
    out = analyse(features, crf, words)
    print(summary(crf, fit_seconds, y_test, y_pred, words, gold, out))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: pip install matplotlib "
              "(or pip install \".[examples]\" from the clone). Nothing drawn.")
        return 0
    os.makedirs(args.output_dir, exist_ok=True)
    written = []
    for name, draw in [
        ("crf_tagging_transitions.png", lambda path: plot_transitions(plt, crf, path)),
        ("crf_tagging_marginals.png",
         lambda path: plot_marginals(plt, crf, words, gold, out, path)),
        ("crf_tagging_support.png", lambda path: plot_support(plt, words, gold, out, path)),
    ]:
        path = os.path.join(args.output_dir, name)
        draw(path)
        written.append(path)
    print("wrote " + ", ".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
