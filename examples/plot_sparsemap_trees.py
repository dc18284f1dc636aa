"""Marginal vs SparseMAP posteriors over the dependency trees of a real sentence.

For one sentence of the bundled UD English Web Treebank sample
(:func:`sksparse_struct.datasets.load_ewt_sample`), the script scores every
possible arc with a *toy* scorer, then computes

- the arc marginals of the Gibbs distribution over all non-projective,
  single-rooted trees (matrix-tree theorem, ``DependencyTree.marginals``):
  every arc gets some probability;
- the SparseMAP posterior (``sksparse_struct.inference.sparsemap``): a
  distribution over a handful of trees, so most arcs get exactly zero;
- the trees in the SparseMAP support with their probabilities.

The scorer is **not a trained parser**: a small hand-set table of scores for
(head UPOS, modifier UPOS) pairs, a preferred side of the head for some
modifier tags, a penalty growing with the distance between the two words (the
root counting as a word before the first one), and Gaussian noise with a fixed
seed. It is just good enough to make the posteriors look like those of
a parser that hesitates between a few attachments.

Pictures (Fig. 6.2 of V. Niculae's 2018 PhD thesis shows the same kind of
support trees):

``sparsemap_trees_heatmaps.png``
    The two arc-posterior matrices side by side (rows: heads, columns:
    modifiers); white cells are exact zeros; squares mark the treebank's arcs.
``sparsemap_trees_support.png``
    The trees in the SparseMAP support, most probable first, as arcs over the
    words labelled with the tree's probability; arcs that differ from the
    most probable tree are drawn in orange.

Run ``python examples/plot_sparsemap_trees.py --output-dir DIR``. It prints
the posteriors' summary and needs matplotlib for the pictures (the
``examples`` extra); without it, it prints the summary and says so.
"""

import argparse
import os
import sys

import numpy as np

from sksparse_struct.datasets import load_ewt_sample
from sksparse_struct.inference import sparsemap
from sksparse_struct.structures import DependencyTree

SENTENCE_INDEX = 32  # "I was amazed at the spiel they delivered ."
SEED = 0
NOISE = 0.5

# Toy attachment preferences: score of an arc head UPOS -> modifier UPOS.
# Pairs not listed score 0. "ROOT" is the artificial root word.
PAIR_SCORES = {
    ("ROOT", "VERB"): 3.0, ("ROOT", "ADJ"): 2.5, ("ROOT", "NOUN"): 1.0,
    ("VERB", "PRON"): 2.0, ("VERB", "NOUN"): 2.0, ("VERB", "PROPN"): 2.0,
    ("VERB", "AUX"): 2.0, ("VERB", "ADV"): 1.5, ("VERB", "PUNCT"): 1.5,
    ("VERB", "VERB"): 1.0, ("VERB", "SCONJ"): 1.0,
    ("ADJ", "PRON"): 2.0, ("ADJ", "AUX"): 2.0, ("ADJ", "NOUN"): 1.5,
    ("ADJ", "ADV"): 1.5, ("ADJ", "PUNCT"): 1.5, ("ADJ", "VERB"): 1.0,
    ("NOUN", "DET"): 2.5, ("NOUN", "ADJ"): 2.0, ("NOUN", "ADP"): 2.0,
    ("NOUN", "NOUN"): 1.0, ("NOUN", "VERB"): 1.5, ("NOUN", "PRON"): 0.5,
    ("PROPN", "ADP"): 2.0, ("PRON", "ADP"): 1.5,
}
# Side of its head on which a modifier with this tag usually sits.
SIDE = {"DET": "left", "ADJ": "left", "AUX": "left", "ADP": "left",
        "PRON": "left", "SCONJ": "left", "PUNCT": "right"}
SIDE_BONUS = 1.0
DISTANCE_PENALTY = 0.3  # per word of distance beyond 1 (the root is at 0)


def toy_arc_scores(sentence, seed=SEED):
    """(n+1) x (n+1) arc scores ``scores[h, m]`` for a toy scorer; 0 is the root."""
    tags = ["ROOT"] + [token["upos"] for token in sentence]
    n = len(sentence)
    scores = np.zeros((n + 1, n + 1))
    for h in range(n + 1):
        for m in range(1, n + 1):
            if h == m:
                continue
            s = PAIR_SCORES.get((tags[h], tags[m]), 0.0)
            if h > 0:
                side = SIDE.get(tags[m])
                if side is not None:
                    s += SIDE_BONUS if (m < h) == (side == "left") else -SIDE_BONUS
            # The root sits at position 0, so late words pay to be the root.
            s -= DISTANCE_PENALTY * (abs(h - m) - 1)
            scores[h, m] = s
    rng = np.random.default_rng(seed)
    scores += NOISE * rng.standard_normal(scores.shape)
    return scores


def analyse(sentence):
    """Arc scores, matrix-tree marginals, the SparseMAP result and the MAP tree."""
    tree = DependencyTree(projective=False, single_root=True)
    scores = toy_arc_scores(sentence)
    marginals, log_z = tree.marginals(scores)
    result = sparsemap(tree, scores)
    return {
        "scores": scores,
        "marginals": marginals,
        "log_z": log_z,
        "sparsemap": result,
        "map": tree.map(scores),
    }


def summary(sentence, out):
    words = [token["form"] for token in sentence]
    gold = np.array([-1] + [token["head"] for token in sentence])
    n = len(words)
    result = out["sparsemap"]

    def accuracy(heads):
        return np.mean(np.asarray(heads)[1:] == gold[1:])

    lines = [
        "sentence: " + " ".join(words),
        f"treebank heads: {gold[1:].tolist()}",
        f"MAP heads:      {np.asarray(out['map'])[1:].tolist()} "
        f"(attachment accuracy {accuracy(out['map']):.2f})",
        f"possible arcs: {n * n}; with nonzero marginal probability: "
        f"{int(np.sum(out['marginals'][:, 1:] > 0))}; in the SparseMAP posterior: "
        f"{int(np.sum(result.marginals[:, 1:] > 0))}",
        f"SparseMAP support: {len(result.support)} trees "
        f"({result.n_iter} active-set iterations, gap {result.gap:.1e})",
    ]
    for heads, p in result.support:
        lines.append(f"  p = {p:.3f}  heads {np.asarray(heads)[1:].tolist()} "
                     f"(attachment accuracy {accuracy(heads):.2f})")
    return "\n".join(lines)


def plot_heatmaps(plt, sentence, out, path):
    words = [token["form"] for token in sentence]
    gold = [token["head"] for token in sentence]
    n = len(words)
    panels = [("Marginals (matrix-tree)", out["marginals"]),
              ("SparseMAP", out["sparsemap"].marginals)]
    fig, axes = plt.subplots(1, 2, figsize=(11, 5.2), constrained_layout=True)
    for ax, (title, post) in zip(axes, panels):
        # Rows: heads (root and words); columns: the modifiers (words only).
        # Exact zeros are masked so that they show as white.
        data = np.ma.masked_equal(post[:, 1:], 0.0)
        image = ax.imshow(data, cmap="Blues", vmin=0.0, vmax=1.0)
        for m in range(1, n + 1):
            for h in range(n + 1):
                p = post[h, m]
                if p >= 0.01:
                    text = f"{p:.2f}"
                    ax.text(m - 1, h, "1" if text == "1.00" else text[1:],
                            ha="center", va="center", fontsize=7,
                            color="white" if p > 0.6 else "black")
            ax.add_patch(plt.Rectangle((m - 1.5, gold[m - 1] - 0.5), 1, 1,
                                       fill=False, edgecolor="crimson", lw=1.5))
        ax.set_xticks(range(n))
        ax.set_xticklabels(words, rotation=60, ha="right")
        ax.set_yticks(range(n + 1))
        ax.set_yticklabels(["ROOT"] + words)
        ax.set_xlabel("modifier")
        ax.set_ylabel("head")
        nonzero = int(np.sum(post[:, 1:] > 0))
        ax.set_title(f"{title}: {nonzero} of {n * n} arcs nonzero")
    fig.colorbar(image, ax=axes.tolist(), shrink=0.7, label="arc probability")
    fig.suptitle("Arc posteriors of a toy scorer (red squares: treebank arcs)")
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _draw_tree(ax, words, heads, reference, prob):
    """Arcs over the words, from head to modifier, like thesis Fig. 6.2."""
    from matplotlib.patches import FancyArrowPatch
    from matplotlib.path import Path

    labels = ["ROOT"] + words
    for i, w in enumerate(labels):
        ax.text(i, 0, w, ha="center", va="top", fontsize=10,
                style="italic" if i == 0 else "normal")
    top = 0.0
    for m in range(1, len(labels)):
        h = heads[m]
        changed = h != reference[m]
        # A quadratic Bezier curve peaking at half its control point's height;
        # longer arcs rise higher so that they nest over the shorter ones.
        height = 0.35 + 0.3 * abs(h - m)
        top = max(top, height)
        path = Path([(h, 0.1), ((h + m) / 2, 0.1 + 2 * height), (m, 0.1)],
                    [Path.MOVETO, Path.CURVE3, Path.CURVE3])
        ax.add_patch(FancyArrowPatch(
            path=path, arrowstyle="-|>", mutation_scale=10,
            lw=2.0 if changed else 1.2,
            color="darkorange" if changed else "steelblue"))
    ax.set_xlim(-0.7, len(labels) - 0.3)
    ax.set_ylim(-0.45, top + 0.25)
    ax.axis("off")
    ax.set_title(f"p = {prob:.3f}", loc="left", fontsize=11)


def plot_support(plt, sentence, out, path):
    words = [token["form"] for token in sentence]
    support = out["sparsemap"].support
    reference = np.asarray(support[0][0])
    fig, axes = plt.subplots(len(support), 1, figsize=(8, 2.0 * len(support) + 0.4),
                             squeeze=False, constrained_layout=True)
    for ax, (heads, p) in zip(axes[:, 0], support):
        _draw_tree(ax, words, np.asarray(heads), reference, p)
    fig.suptitle("Trees in the SparseMAP support (orange: arcs that differ "
                 "from the most probable tree)", fontsize=11)
    fig.savefig(path, dpi=80)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", default=".",
                        help="where to write the PNG files (default: .)")
    args = parser.parse_args(argv)
    sentence = load_ewt_sample("train")[SENTENCE_INDEX]
    out = analyse(sentence)
    print(summary(sentence, out))
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
    for name, draw in [("sparsemap_trees_heatmaps.png", plot_heatmaps),
                       ("sparsemap_trees_support.png", plot_support)]:
        path = os.path.join(args.output_dir, name)
        draw(plt, sentence, out, path)
        written.append(path)
    print("wrote " + ", ".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
