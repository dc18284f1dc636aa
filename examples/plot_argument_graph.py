"""Gold and predicted argument graphs of one comment of the CDCP corpus.

The script trains :class:`sksparse_struct.StructuredSVMArgumentMiner` (the
strict model of Niculae, Park and Cardie, ACL 2017: links antisymmetric and
transitive, no proposition supporting a more objective one, compatibility
and second-order factors) on the bundled sample of the Cornell eRulemaking
Corpus (:func:`sksparse_struct.datasets.load_cdcp_sample`: 20 training and 8
test comments on a consumer-protection rule), through the
:class:`~sksparse_struct.feature_extraction.ArgumentFeatures` transformer,
prints its scores on the test comments, and draws, for one test comment, the
gold argument graph beside the predicted one: every proposition is a box in
text order, coloured by its type (fact, policy, reference, testimony,
value), and every link an arc from the supporting proposition to the
supported one. Predicted links that are not in the gold graph are drawn in
orange, gold links the model missed are dashed.

A sample of 20 comments is far too small to learn the task (the full corpus
has 581 training comments; ``benchmarks/bench_cdcp.py`` trains on them):
what the picture shows is the *shape* of the predictions, which the
constraints guarantee whatever the weights: transitive, antisymmetric,
never from a less objective to a more objective proposition.

Run ``python examples/plot_argument_graph.py --output-dir DIR`` (about ten
seconds once numba has compiled the kernels). It needs matplotlib for the
picture (the ``examples`` extra); without it, it prints the graphs as text.
"""

import argparse
import os
import textwrap

from sksparse_struct import StructuredSVMArgumentMiner
from sksparse_struct.datasets import load_cdcp_sample
from sksparse_struct.feature_extraction import ArgumentFeatures
from sksparse_struct.metrics import argument_classification_report

COLOURS = {"fact": "#4c72b0", "policy": "#c44e52", "reference": "#8172b2",
           "testimony": "#55a868", "value": "#ccb974"}


def describe(doc, target, title):
    """The graph as text: one line per proposition, then the links."""
    labels, links = target
    lines = [title]
    for a, (start, end) in enumerate(doc["propositions"]):
        snippet = textwrap.shorten(doc["text"][start:end], 70)
        lines.append(f"  [{a}] {labels[a]:<9} {snippet}")
    lines.append("  links: " + (", ".join(f"{s} -> {t}" for s, t in links) or "none"))
    return "\n".join(lines)


def draw(ax, doc, target, gold_links, title):
    """Propositions as boxes down the page, links as arcs on their right (a box's text
    is cut to 48 characters so that the arcs clear it)."""
    labels, links = target
    n = len(labels)
    for a, (start, end) in enumerate(doc["propositions"]):
        snippet = textwrap.shorten(doc["text"][start:end], 48)
        ax.text(0.0, n - a, f"[{a}] {snippet}", va="center", ha="left", fontsize=8,
                bbox={"boxstyle": "round", "facecolor": COLOURS.get(labels[a], "#dddddd"),
                      "alpha": 0.6})
    predicted = set(links)
    for s, t in sorted(predicted | set(gold_links)):
        missed = (s, t) not in predicted
        colour = "#dd8452" if (s, t) not in gold_links else "black"
        ax.annotate("", xy=(0.62, n - t), xytext=(0.62, n - s),
                    arrowprops={"arrowstyle": "->", "color": "grey" if missed else colour,
                                "linestyle": "--" if missed else "-",
                                "connectionstyle": f"arc3,rad={-0.25 - 0.05 * abs(s - t)}"})
    ax.set_xlim(-0.02, 0.85)
    ax.set_ylim(0.3, n + 0.7)
    ax.axis("off")
    ax.set_title(title)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", default=".", help="where to write the picture")
    parser.add_argument("--document", type=int, default=0, help="which test comment to draw")
    args = parser.parse_args()

    X_train, y_train, X_test, y_test = load_cdcp_sample()
    features = ArgumentFeatures().fit(X_train, y_train)
    miner = StructuredSVMArgumentMiner(max_iter=30, random_state=0)
    miner.fit(features.transform(X_train), y_train)
    y_pred = miner.predict(features.transform(X_test))
    print(argument_classification_report(y_test, y_pred))

    doc, gold, pred = X_test[args.document], y_test[args.document], y_pred[args.document]
    print(describe(doc, gold, f"comment {doc['id']}, gold:"))
    print(describe(doc, pred, "predicted:"))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no picture (pip install matplotlib).")
        return
    fig, axes = plt.subplots(1, 2, figsize=(13, 0.6 * len(gold[0]) + 1.5))
    draw(axes[0], doc, gold, set(gold[1]), "gold")
    draw(axes[1], doc, pred, set(gold[1]),
         "predicted (orange: not in gold; dashed: missed)")
    from matplotlib.patches import Patch

    fig.legend(handles=[Patch(facecolor=c, alpha=0.6, label=label)
                        for label, c in COLOURS.items()], loc="lower center", ncol=5)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    path = os.path.join(args.output_dir, "argument_graph.png")
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
