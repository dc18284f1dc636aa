"""The few trees a SparseMAP-trained dependency parser keeps for a sentence.

The script trains :class:`sksparse_struct.SparseMAPParser` with the
margin-SparseMAP loss (Def. 6.3 of V. Niculae's 2018 PhD thesis; the best
loss on English in its Table 6.1) on the training split of the bundled
sample of the UD English Web Treebank (360 sentences, loaded with
``sksparse_struct.datasets.load_ewt_sample(..., target="tree")``),
reports its attachment scores on the test split (100 sentences) and how
sparse its SparseMAP distributions are (thesis Fig. 6.1: trees in the
support, candidate heads per word). Then, for one ambiguous test sentence, it
shows what SparseMAP keeps: a handful of whole trees with their
probabilities (:meth:`~sksparse_struct.SparseMAPParser.predict_sparse`) and
the arc posteriors they add up to
(:meth:`~sksparse_struct.SparseMAPParser.predict_marginals`).

The sentence is "A real pleasure training with Natasha ." (test sentence
97): is "pleasure" the head of the sentence, with "training with Natasha" as
its subject, or is "training" the head? The parser keeps two trees, one for
each reading, almost equally probable (0.52 and 0.48); both hang the final
full stop on "training", where the treebank has "pleasure". If a future
version of
the parser gives that sentence fewer than 2 or more than 5 trees, the script
searches the test split for another one (see :func:`choose_sentence`) and
says so.

Pictures:

``sparse_parses_marginals.png``
    The arc posteriors of the sentence (rows: heads, columns: modifiers;
    white cells are exact zeros; squares mark the treebank's arcs): on the
    left the Gibbs (CRF-style) marginals of the same arc scores, where every
    arc gets some probability, on the right the SparseMAP posterior, which
    is zero outside the arcs of the kept trees.
``sparse_parses_support.png``
    The trees of the SparseMAP support, most probable first, as arcs drawn
    over the words, with their probabilities; arcs that are not in the
    treebank's tree are drawn in orange.

Run ``python examples/plot_sparse_parses.py --output-dir DIR``: a few seconds
of training once numba has compiled the kernels. It needs matplotlib for the
pictures (the ``examples`` extra); without it, it prints the numbers and
says so.
"""

import argparse
import os
import sys
import time

import numpy as np

from sksparse_struct import SparseMAPParser
from sksparse_struct.datasets import load_ewt_sample
from sksparse_struct.metrics import attachment_report
from sksparse_struct.structures import DependencyTree

# "A real pleasure training with Natasha ." (test split): three trees in
# the support, the treebank's among them but not the most probable.
SENTENCE_INDEX = 97
LOSS = "margin_sparsemap"
MIN_TREES, MAX_TREES = 2, 5


def load_sample(subset):
    """Words, heads and relations of a split of the bundled EWT sample."""
    X, y = load_ewt_sample(subset, return_X_y=True, target="tree")
    return X, [heads for heads, _ in y], [deprels for _, deprels in y]


def train(X_train, heads_train, deprels_train):
    """A parser fitted on the training split, with its relation labeller."""
    # tol=None: the default 10 epochs, always (no early stop, no ConvergenceWarning).
    parser = SparseMAPParser(loss=LOSS, tol=None, random_state=0)
    start = time.perf_counter()
    parser.fit(X_train, list(zip(heads_train, deprels_train)))
    return parser, time.perf_counter() - start


def support_statistics(supports, marginals):
    """Thesis Fig. 6.1's sparsity: trees per sentence, candidate heads per word."""
    n_trees = np.array([len(s) for s in supports])
    # A word's candidate heads: the rows of its column with a nonzero posterior.
    heads_per_word = np.concatenate([np.count_nonzero(mu[:, 1:] > 0, axis=0)
                                     for mu in marginals])
    return {
        "mean_trees": float(n_trees.mean()),
        "median_trees": float(np.median(n_trees)),
        "max_trees": int(n_trees.max()),
        "single_tree": float(np.mean(n_trees == 1)),
        "heads_per_word": float(heads_per_word.mean()),
    }


def choose_sentence(supports, heads_true, lengths, preferred=SENTENCE_INDEX):
    """Index of the sentence to draw: ``preferred`` if it keeps 2 to 5 trees.

    Otherwise the sentence of 5 to 12 words with 2 to 5 trees that is most
    like thesis Fig. 6.2: the treebank's tree in the support but not first,
    then more trees, then a more probable runner-up.
    """
    def fits(i):
        return MIN_TREES <= len(supports[i]) <= MAX_TREES

    if fits(preferred):
        return preferred
    candidates = [i for i in range(len(supports)) if fits(i) and 5 <= lengths[i] <= 12]
    if not candidates:
        candidates = [i for i in range(len(supports)) if fits(i)]
    if not candidates:
        raise RuntimeError("no test sentence has 2 to 5 trees in its SparseMAP support")

    def key(i):
        ranks = [k for k, (h, _) in enumerate(supports[i])
                 if np.array_equal(h, heads_true[i])]
        gold_later = bool(ranks) and ranks[0] > 0
        return (not gold_later, -len(supports[i]), -supports[i][1][1], i)

    return min(candidates, key=key)


def analyse(parser, sentence):
    """Arc scores, Gibbs marginals, SparseMAP posterior and support of one sentence."""
    scores = parser.decision_function([sentence])[0]
    tree = DependencyTree(projective=parser.projective, single_root=parser.single_root)
    gibbs, _ = tree.marginals(scores)
    heads, deprels = parser.predict([sentence], return_deprel=True)
    return {
        "gibbs": gibbs,
        "sparsemap": parser.predict_marginals([sentence])[0],
        "support": parser.predict_sparse([sentence])[0],
        "heads": heads[0],
        "deprels": deprels[0],
    }


def summary(parser, fit_seconds, report, stats, index, changed, words, gold, gold_deprels,
            out):
    lines = [
        f"SparseMAPParser(loss={LOSS!r}) on the UD English EWT sample: "
        f"{parser.n_iter_} epochs, {fit_seconds:.1f} s",
        f"test UAS {report['uas']:.3f}, LAS {report['las']:.3f}, "
        f"exact match {report['unlabelled_exact_match']:.2f}",
        f"SparseMAP on the test sentences: {stats['mean_trees']:.2f} trees per sentence "
        f"(median {stats['median_trees']:g}, max {stats['max_trees']}); "
        f"{100 * stats['single_tree']:.0f}% keep a single tree; "
        f"{stats['heads_per_word']:.2f} candidate heads per word",
        "",
    ]
    if changed:
        lines.append(f"(test sentence {SENTENCE_INDEX} no longer keeps {MIN_TREES} to "
                     f"{MAX_TREES} trees; showing sentence {index} instead)")
    lines.append(f"test sentence {index}: {' '.join(words)}")
    names = ["ROOT"] + words
    lines.append(f"  {'word':<12}{'treebank':<22}parser")
    for m, word in enumerate(words):
        g = f"{names[gold[m]]} ({gold_deprels[m]})"
        p = f"{names[out['heads'][m]]} ({out['deprels'][m]})"
        lines.append(f"  {word:<12}{g:<22}{p}")
    support = out["support"]
    lines.append(f"SparseMAP support: {len(support)} trees")
    for heads, p in support:
        wrong = [f"{words[m]} <- {names[heads[m]]}" for m in range(len(words))
                 if heads[m] != gold[m]]
        lines.append(f"  p = {p:.3f}  heads {heads.tolist()}  "
                     + ("(the treebank's tree)" if not wrong
                        else "not in the treebank: " + ", ".join(wrong)))
    n = len(words)
    lines.append(f"arcs with a nonzero posterior: {np.count_nonzero(out['sparsemap'][:, 1:])} "
                 f"of {n * n} (Gibbs marginals: {np.count_nonzero(out['gibbs'][:, 1:])})")
    return "\n".join(lines)


def plot_marginals(plt, words, gold, out, path):
    n = len(words)
    panels = [("Gibbs marginals of the same scores", out["gibbs"]),
              ("SparseMAP posterior (predict_marginals)", out["sparsemap"])]
    fig, axes = plt.subplots(1, 2, figsize=(11, 5.0), constrained_layout=True)
    for ax, (title, post) in zip(axes, panels):
        # Rows: heads (the root and the words); columns: modifiers. Exact
        # zeros are masked so that they show as white.
        image = ax.imshow(np.ma.masked_equal(post[:, 1:], 0.0), cmap="Blues",
                          vmin=0.0, vmax=1.0)
        for m in range(1, n + 1):
            for h in range(n + 1):
                p = post[h, m]
                if p >= 0.01:
                    text = "1" if f"{p:.2f}" == "1.00" else f"{p:.2f}"[1:]
                    ax.text(m - 1, h, text, ha="center", va="center", fontsize=8,
                            color="white" if p > 0.6 else "black")
            ax.add_patch(plt.Rectangle((m - 1.5, gold[m - 1] - 0.5), 1, 1, fill=False,
                                       edgecolor="crimson", lw=1.5))
        ax.set_xticks(range(n))
        ax.set_xticklabels(words, rotation=45, ha="right")
        ax.set_yticks(range(n + 1))
        ax.set_yticklabels(["ROOT"] + words)
        ax.set_xlabel("modifier")
        ax.set_ylabel("head")
        ax.set_title(f"{title}\n{np.count_nonzero(post[:, 1:])} of {n * n} arcs nonzero",
                     fontsize=10)
    fig.colorbar(image, ax=axes.tolist(), shrink=0.7, label="arc probability")
    fig.suptitle("Arc posteriors of the trained parser (red squares: treebank arcs)")
    fig.savefig(path, dpi=72)
    plt.close(fig)


def _draw_tree(ax, words, heads, gold, title):
    """Arcs from head to modifier over the words, as in thesis Fig. 6.2."""
    from matplotlib.patches import FancyArrowPatch
    from matplotlib.path import Path

    names = ["ROOT"] + words
    for i, word in enumerate(names):
        ax.text(i, 0, word, ha="center", va="top", fontsize=10,
                style="italic" if i == 0 else "normal")
    top = 0.0
    for m in range(1, len(names)):
        h = int(heads[m - 1])
        wrong = h != gold[m - 1]
        # A quadratic Bezier curve whose height grows with the arc's length,
        # so that long arcs pass over the short ones they span.
        height = 0.3 + 0.28 * abs(h - m)
        top = max(top, height)
        path = Path([(h, 0.12), ((h + m) / 2, 0.12 + 2 * height), (m, 0.12)],
                    [Path.MOVETO, Path.CURVE3, Path.CURVE3])
        ax.add_patch(FancyArrowPatch(path=path, arrowstyle="-|>", mutation_scale=10,
                                     lw=2.0 if wrong else 1.2,
                                     color="darkorange" if wrong else "steelblue"))
    ax.set_xlim(-0.7, len(names) - 0.3)
    ax.set_ylim(-0.45, top + 0.3)
    ax.axis("off")
    ax.set_title(title, loc="left", fontsize=11)


def plot_support(plt, words, gold, out, path):
    support = out["support"]
    fig, axes = plt.subplots(len(support), 1, figsize=(8, 1.9 * len(support) + 0.5),
                             squeeze=False, constrained_layout=True)
    for ax, (heads, p) in zip(axes[:, 0], support):
        title = f"p = {p:.3f}"
        if np.array_equal(heads, gold):
            title += "  (the treebank's tree)"
        _draw_tree(ax, words, heads, gold, title)
    fig.suptitle("Trees in the SparseMAP support (orange: arcs not in the treebank)",
                 fontsize=11)
    fig.savefig(path, dpi=72)
    plt.close(fig)


def main(argv=None):
    arg_parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arg_parser.add_argument("--output-dir", default=".",
                            help="where to write the PNG files (default: .)")
    args = arg_parser.parse_args(argv)
    X_train, heads_train, deprels_train = load_sample("train")
    X_test, heads_test, deprels_test = load_sample("test")
    parser, fit_seconds = train(X_train, heads_train, deprels_train)

    heads_pred, deprels_pred = parser.predict(X_test, return_deprel=True)
    report = attachment_report(heads_test, heads_pred, deprels_test, deprels_pred)
    supports = parser.predict_sparse(X_test)
    stats = support_statistics(supports, parser.predict_marginals(X_test))
    index = choose_sentence(supports, heads_test, [len(s) for s in X_test])

    sentence = X_test[index]
    words = [token["form"] for token in sentence]
    gold = heads_test[index]
    out = analyse(parser, sentence)
    print(summary(parser, fit_seconds, report, stats, index, index != SENTENCE_INDEX,
                  words, gold, deprels_test[index], out))
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
    for name, draw in [("sparse_parses_marginals.png", plot_marginals),
                       ("sparse_parses_support.png", plot_support)]:
        path = os.path.join(args.output_dir, name)
        draw(plt, words, gold, out, path)
        written.append(path)
    print("wrote " + ", ".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
