"""Where a neural easy-first tagger looks at each sketch step (csoftmax, softmax, sparsemax, hard).

The script trains four :class:`sksparse_struct.NeuralEasyFirstTagger` models
(full-state sketches, as many steps as words) as universal part-of-speech
taggers on the training split of the bundled sample of the UD English Web
Treebank (:func:`sksparse_struct.datasets.load_ewt_sample`: 360 sentences),
differing only in their attention: the constrained softmax ("csoftmax"),
"softmax", "sparsemax", and "hard" attention (the classic easy-first
decoder: one word per step, the one with the highest tag score). For one
test sentence it shows, after Martins & Kreutzer (2017, Fig. 2), the
attention of every step over the words (``predict_attention``: one row per
step, one column per word), in a 2 x 2 grid with one colour scale for the
four models (square-root scale, white for weights that are exactly zero),
and under each panel the total attention each word received over all the
steps (a column's sum; the dashed line is one unit):

- csoftmax gives every word one unit of attention in total, so every column
  sums to one (all the bars reach the dashed line). The first steps spread
  their attention almost evenly, much like softmax; once a word's unit is
  spent its column turns white (exactly zero from then on: "I" after six
  steps), and the last steps concentrate on the words that still have
  attention left;
- softmax spreads its attention thinly (pale cells everywhere, never
  exactly zero) and keeps returning to the same words: the same columns are
  darkest at every step, and the totals range from about half a unit to
  nearly two;
- sparsemax is sparse (about half of the cells are white) but keeps
  returning to the same words too: a few words get about two units in
  total, others almost nothing;
- hard attention visits each word exactly once, in the order of its
  confidence: one dark cell in every row and every column.

It prints the test accuracy of each model, the attention matrices (in
tenths) and, per step, the word that received the most attention. With
matplotlib (the ``examples`` extra) it also saves
``easy_first_attention.png``; without it, it prints the numbers and says so.

The models here are small (32-dimensional embeddings and states, 8
epochs) so that the script runs in about a minute on a laptop; the
defaults of the estimator are the sizes of the paper.

Run ``python examples/plot_easy_first_attention.py --output-dir DIR``.
"""

import argparse
import os
import time

import numpy as np

from sksparse_struct import NeuralEasyFirstTagger
from sksparse_struct.datasets import load_ewt_sample

# "I assume you are talking about a pacman frog ." (test sample)
SENTENCE_INDEX = 66
ATTENTIONS = ["csoftmax", "softmax", "sparsemax", "hard"]
SIZES = {"word_dim": 32, "affix_dim": 32, "hidden_dim": 32, "sketch_dim": 32, "attention_dim": 32}
EPOCHS = 8


def train(attention, X, y):
    tagger = NeuralEasyFirstTagger(attention=attention, state="full", n_steps="L",
                                   max_iter=EPOCHS, random_state=0, **SIZES)
    start = time.perf_counter()
    tagger.fit(X, y)
    return tagger, time.perf_counter() - start


def show_text(name, words, tags, att):
    """The attention matrix in tenths (``.`` for zero), and the top word of each step."""
    width = max(5, max(len(w) for w in words) + 1)
    print(f"\n{name}: rows = steps, columns = words (attention x 10, '.' = exactly 0)")
    print(" " * 6 + "".join(w.rjust(width) for w in words))
    print(" " * 6 + "".join(t.rjust(width) for t in tags))
    for n, row in enumerate(att):
        cells = ["." if v == 0 else f"{10 * v:.0f}" for v in row]
        top = words[int(np.argmax(row))]
        print(f"{n + 1:>5} " + "".join(c.rjust(width) for c in cells) + f"   -> {top}")
    print(" sum  " + "".join(f"{v:.2f}".rjust(width) for v in att.sum(axis=0)))


def plot(results, words, path, plt):
    """Save a 2 x 2 grid of panels, one per ``(name, test accuracy, attention)`` of
    ``results``: the attention (steps x words) on a shared colour scale, and below it
    each word's total attention over the steps."""
    from matplotlib.colors import ListedColormap, PowerNorm

    # White is kept for exact zeros (masked cells), so the colour map starts at a
    # light blue: the smallest nonzero weights stay visible. A square-root scale
    # separates the many small weights of softmax from each other.
    cmap = ListedColormap(plt.get_cmap("Blues")(np.linspace(0.12, 1.0, 256)))
    cmap.set_bad("white")
    norm = PowerNorm(gamma=0.5, vmin=0.0, vmax=1.0)
    n_steps, n_words = results[0][2].shape
    top = max(1.0, max(att.sum(axis=0).max() for _, _, att in results))
    # Rows: attention, totals, room for the next panel's title and words, attention,
    # totals; the last column holds the colour bar.
    fig = plt.figure(figsize=(11, 10.5))
    grid = fig.add_gridspec(5, 3, height_ratios=[n_steps, 2.6, 3.2, n_steps, 2.6],
                            width_ratios=[1, 1, 0.04], hspace=0.08, wspace=0.2,
                            left=0.07, right=0.93, top=0.88, bottom=0.03)
    for k, (name, accuracy, att) in enumerate(results):
        row, column = 3 * (k // 2), k % 2
        ax = fig.add_subplot(grid[row, column])
        image = ax.imshow(np.ma.masked_equal(att, 0.0), cmap=cmap, norm=norm, aspect="auto")
        ax.set_xticks(np.arange(n_words - 1) + 0.5, minor=True)
        ax.set_yticks(np.arange(n_steps - 1) + 0.5, minor=True)
        ax.grid(which="minor", color="#d0d0d0", linewidth=0.6)
        ax.tick_params(which="minor", length=0)
        ax.xaxis.tick_top()
        ax.set_xticks(range(n_words))
        ax.set_xticklabels(words, rotation=45, ha="left", fontsize=10)
        ax.set_yticks(range(n_steps))
        ax.set_yticklabels([str(n + 1) for n in range(n_steps)], fontsize=9)
        ax.set_ylabel("sketch step", fontsize=10)
        ax.set_title(f"{name} (test accuracy {accuracy:.3f})", fontsize=12, loc="left")

        totals = fig.add_subplot(grid[row + 1, column], sharex=ax)
        totals.bar(range(n_words), att.sum(axis=0), width=0.7, color="#2f6fad")
        totals.axhline(1.0, color="black", linestyle="--", linewidth=0.8)
        totals.set_ylim(0, 1.08 * top)
        totals.set_yticks([0, 1, 2] if top > 1.5 else [0, 1])
        totals.tick_params(labelbottom=False, bottom=False, labelsize=9)
        totals.set_ylabel("sum over\nsteps", fontsize=9)
        for side in ("top", "right"):
            totals.spines[side].set_visible(False)
    bar = fig.colorbar(image, cax=fig.add_subplot(grid[:, 2]),
                       ticks=[0.01, 0.05, 0.1, 0.25, 0.5, 1.0])
    bar.set_label("attention (white: exactly 0)", fontsize=10)
    bar.ax.tick_params(labelsize=9)
    fig.suptitle(f"Attention of each sketch step over \u201c{' '.join(words)}\u201d",
                 fontsize=13)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", default=".", help="where to save the picture")
    args = parser.parse_args(argv)
    X_train, y_train = load_ewt_sample("train", return_X_y=True)
    X_test, y_test = load_ewt_sample("test", return_X_y=True)
    words, tags = X_test[SENTENCE_INDEX], y_test[SENTENCE_INDEX]
    print(f"sentence: {' '.join(words)}")
    results = []
    for attention in ATTENTIONS:
        tagger, seconds = train(attention, X_train, y_train)
        accuracy = tagger.score(X_test, y_test)
        print(f"{attention:>9}: test token accuracy {accuracy:.3f} "
              f"({tagger.n_iter_} epochs, {seconds:.1f} s)")
        results.append((attention, accuracy, tagger.predict_attention([words])[0]))
    for name, _, att in results:
        show_text(name, words, tags, att)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\nmatplotlib is not installed: pip install matplotlib (or the 'examples' "
              "extra) for the picture; the numbers are above.")
        return
    os.makedirs(args.output_dir, exist_ok=True)
    path = os.path.join(args.output_dir, "easy_first_attention.png")
    plot(results, words, path, plt)
    print(f"\nsaved {path}")


if __name__ == "__main__":
    main()
