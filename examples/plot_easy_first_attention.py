"""Where a neural easy-first tagger looks at each sketch step (csoftmax, softmax, sparsemax, hard).

The script trains four :class:`sksparse_struct.NeuralEasyFirstTagger` models
(full-state sketches, as many steps as words) as universal part-of-speech
taggers on the training split of the bundled sample of the UD English Web
Treebank (:func:`sksparse_struct.datasets.load_ewt_sample`: 360 sentences),
differing only in their attention: the constrained softmax ("csoftmax"),
"softmax", "sparsemax", and "hard" attention (the classic easy-first
decoder: one word per step, the one with the highest tag score). For one
test sentence it shows the attention of every step over the words
(``predict_attention``: one row per step), side by side, after Martins &
Kreutzer (2017, Fig. 2):

- csoftmax gives every word one unit of attention in total: the rows are
  soft and often sparse, a word's column fades out once its unit is spent,
  and every column sums to one;
- softmax spreads its attention thinly and keeps returning to the same words;
- sparsemax is sparse but keeps returning to the same words too;
- hard attention visits each word exactly once, in the order of its
  confidence.

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
                                   max_epochs=EPOCHS, random_state=0, **SIZES)
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
    fig, axes = plt.subplots(1, len(results), figsize=(4 * len(results), 4.2))
    for ax, (name, att) in zip(axes, results):
        ax.imshow(att, vmin=0.0, vmax=1.0, cmap="viridis")
        ax.set_title(name)
        ax.set_xticks(range(len(words)))
        ax.set_xticklabels(words, rotation=90)
        ax.set_yticks(range(att.shape[0]))
        ax.set_yticklabels([str(n + 1) for n in range(att.shape[0])])
        ax.set_ylabel("sketch step")
    fig.tight_layout()
    fig.savefig(path, dpi=72)
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
        results.append((attention, tagger.predict_attention([words])[0]))
    for name, att in results:
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
