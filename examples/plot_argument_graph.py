"""Gold and predicted argument graphs of one comment of the CDCP corpus.

The script trains :class:`sksparse_struct.StructuredSVMArgumentMiner` (the
strict model of Niculae, Park and Cardie, ACL 2017: links antisymmetric and
transitive, no proposition supporting a more objective one, compatibility
and second-order factors) on the bundled sample of the Cornell eRulemaking
Corpus (:func:`sksparse_struct.datasets.load_cdcp_sample`: 20 training and 8
test comments on a consumer-protection rule), through the
:class:`~sksparse_struct.feature_extraction.ArgumentFeatures` transformer,
prints its scores on the test comments, and draws, for one test comment, the
gold argument graph (left) beside the predicted one (right). Every
proposition is a box in text order, coloured by its type (fact, policy,
reference, testimony, value), and every link an arrow from the right edge of
the supporting proposition to the right edge of the supported one; longer
links are drawn wider, around the shorter ones. In the predicted graph,
links that are not in the gold graph are orange, gold links the model
missed are grey and dashed, and a proposition whose predicted type is wrong
has a thick red outline, its gold type written in red beside the predicted
one.

The default comment (``--document 4``, comment 00722: six propositions, a
policy statement followed by five values) shows each kind of mistake: the
model finds one of the three gold links (3 -> 2), misses the other two
(1 -> 0 and 4 -> 5), adds two links that are not in the gold graph (3 -> 4
and 3 -> 5: proposition 3 supports everything after it), and takes the
policy statement [0] for a value. ``--document`` 0 to 7 draws the other test
comments (3 to 6 propositions each).

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
EXTRA = "#dd8452"  # a predicted link that is not in the gold graph
MISSED = "grey"  # a gold link the model did not predict, drawn dashed
DASHED = (0, (4, 2))
WRONG_TYPE = "#d62728"  # outline of a proposition whose predicted type is wrong
FILL_ALPHA = 0.45

# Layout, in inches: the axes are in inches too, so that boxes measured with
# the renderer and arcs of a given width keep their size whatever the figure.
FONT_SIZE = 9
PAD = 0.06  # between a box's edge and its text
ROW_GAP = 0.3  # between two boxes
ARC_WIDTH = 0.3  # horizontal reach of the innermost arc's control points
ARC_STEP = 0.2  # added for each arc it has to enclose


def describe(doc, target, title, gold=None):
    """The graph as text: one line per proposition, then the links; given the gold
    graph, the mistakes are marked as in the picture."""
    labels, links = target
    if gold is not None:
        labels = [label if label == truth else f"{label} (gold: {truth})"
                  for label, truth in zip(labels, gold[0])]
    width = max(len(label) for label in labels)
    lines = [title]
    for a, (start, end) in enumerate(doc["propositions"]):
        snippet = textwrap.shorten(doc["text"][start:end], 70)
        lines.append(f"  [{a}] {labels[a]:<{width}} {snippet}")
    shown = [f"{s} -> {t}" + (" (not in gold)" if gold is not None and (s, t) not in gold[1]
                              else "") for s, t in links]
    lines.append("  links: " + (", ".join(shown) or "none"))
    if gold is not None:
        missed = [f"{s} -> {t}" for s, t in gold[1] if (s, t) not in links]
        lines.append("  gold links missed: " + (", ".join(missed) or "none"))
    return "\n".join(lines)


def _box_texts(doc, labels, gold_labels=None):
    """Per proposition, the box's first line (number and type, with the gold type
    when it differs), its colour, and the proposition's text on two lines at most."""
    boxes = []
    for a, (start, end) in enumerate(doc["propositions"]):
        head, colour = f"[{a}] {labels[a]}", "black"
        if gold_labels is not None and labels[a] != gold_labels[a]:
            head, colour = f"{head}  (gold: {gold_labels[a]})", WRONG_TYPE
        text = textwrap.shorten(doc["text"][start:end], 116, placeholder=" [...]")
        boxes.append((head, colour, textwrap.fill(text, 60)))
    return boxes


def _arc_levels(links):
    """Rank the links by span: an arc is drawn wider than every shorter one, so that
    nested arcs do not cross (ties broken by position, the same at both ends)."""
    order = sorted(links, key=lambda link: (abs(link[0] - link[1]), min(link), link))
    return {link: level for level, link in enumerate(order)}


def _attachments(links, levels, n, box_height):
    """Where each link leaves and reaches a box's right edge, as a vertical offset from
    the box's centre (upwards positive).

    The links of a box share its edge: those going up are placed from the top, the
    shortest highest, then those going down, the longest first, so that an arc
    never passes between another arc's end and its box.
    """
    offsets = {}
    for a in range(n):
        up = sorted((levels[link], link) for link in links if a in link and min(link) < a)
        down = sorted(((levels[link], link) for link in links if a in link and min(link) == a),
                      reverse=True)
        ends = [link for _, link in up + down]
        spread = 0.7 * box_height
        for i, link in enumerate(ends):
            offsets[link, a] = 0.0 if len(ends) == 1 else spread * (0.5 - i / (len(ends) - 1))
    return offsets


def _draw_graph(ax, boxes, type_labels, links, styles, wrong, layout):
    """Boxes down the page in text order, and an arc for each link from the right edge
    of the supporting proposition to the right edge of the supported one."""
    from matplotlib.colors import to_rgba
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
    from matplotlib.path import Path

    box_width, box_height, head_height, panel_height = layout
    n = len(boxes)

    def centre(a):
        return panel_height - (a + 0.5) * (box_height + ROW_GAP)

    for a, (head, colour, body) in enumerate(boxes):
        top = centre(a) + box_height / 2
        # A light fill keeps black text legible; the outline stays opaque.
        ax.add_patch(FancyBboxPatch(
            (0, top - box_height), box_width, box_height,
            boxstyle="round,pad=0,rounding_size=0.05",
            facecolor=to_rgba(COLOURS.get(type_labels[a], "#dddddd"), FILL_ALPHA),
            edgecolor=WRONG_TYPE if a in wrong else "#555555",
            linewidth=3.0 if a in wrong else 0.8))
        ax.text(PAD, top - PAD, head, ha="left", va="top", fontsize=FONT_SIZE,
                fontweight="bold", color=colour)
        ax.text(PAD, top - PAD - head_height, body, ha="left", va="top", fontsize=FONT_SIZE)

    levels = _arc_levels(links)
    offsets = _attachments(links, levels, n, box_height)
    for link in links:
        s, t = link
        ys, yt = centre(s) + offsets[link, s], centre(t) + offsets[link, t]
        reach = box_width + ARC_WIDTH + ARC_STEP * levels[link]
        path = Path([(box_width, ys), (reach, ys), (reach, yt), (box_width, yt)],
                    [Path.MOVETO, Path.CURVE4, Path.CURVE4, Path.CURVE4])
        colour, linestyle = styles[link]
        ax.add_patch(FancyArrowPatch(path=path, arrowstyle="-|>,head_length=0.6,head_width=0.3",
                                     mutation_scale=12, color=colour, linestyle=linestyle,
                                     linewidth=1.4))


def plot(doc, gold, pred, path, plt):
    """Save the gold graph (left) beside the predicted one (right) as ``path``."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    (gold_labels, gold_links), (labels, links) = gold, pred
    gold_boxes = _box_texts(doc, gold_labels)
    pred_boxes = _box_texts(doc, labels, gold_labels)
    wrong = {a for a in range(len(labels)) if labels[a] != gold_labels[a]}
    gold_links, links = sorted(gold_links), sorted(links)
    shown = sorted(set(links) | set(gold_links))
    gold_styles = {link: ("black", "-") for link in gold_links}
    pred_styles = {}
    for link in shown:
        if link not in links:
            pred_styles[link] = (MISSED, DASHED)
        else:
            pred_styles[link] = ("black", "-") if link in gold_links else (EXTRA, "-")

    # Measure the rendered text so that every box is as wide as the widest text.
    dpi = 120
    fig = plt.figure(dpi=dpi)
    renderer = fig.canvas.get_renderer()

    def extent(text, **kwargs):
        artist = fig.text(0, 0, text, fontsize=FONT_SIZE, **kwargs)
        box = artist.get_window_extent(renderer)
        artist.remove()
        return box.width / dpi, box.height / dpi

    heads = [extent(head, fontweight="bold") for head, _, _ in gold_boxes + pred_boxes]
    bodies = [extent(body) for _, _, body in gold_boxes + pred_boxes]
    head_height = max(h for _, h in heads) + 0.02
    box_width = max(w for w, _ in heads + bodies) + 2 * PAD
    box_height = head_height + max(h for _, h in bodies) + 2 * PAD
    n = len(labels)
    panel_width = box_width + 0.75 * (ARC_WIDTH + ARC_STEP * max(len(shown) - 1, 0)) + 0.15
    panel_height = n * (box_height + ROW_GAP)
    margin, gap, title, legend = 0.15, 0.4, 0.45, 0.75
    width = 2 * panel_width + gap + 2 * margin
    height = panel_height + title + legend
    fig.set_size_inches(width, height)
    layout = (box_width, box_height, head_height, panel_height)
    for k, (boxes, type_labels, panel_links, styles, marked, name) in enumerate([
            (gold_boxes, gold_labels, gold_links, gold_styles, set(), "gold"),
            (pred_boxes, labels, shown, pred_styles, wrong, "predicted")]):
        left = margin + k * (panel_width + gap)
        ax = fig.add_axes((left / width, legend / height, panel_width / width,
                           panel_height / height))
        ax.set_xlim(0, panel_width)
        ax.set_ylim(0, panel_height)
        ax.axis("off")
        ax.set_title(name, fontsize=12, loc="left")
        _draw_graph(ax, boxes, type_labels, panel_links, styles, marked, layout)

    # Two legends, one row each: the colours of the types, then the marks.
    types = [Patch(facecolor=c, alpha=FILL_ALPHA, edgecolor="#555555", label=label)
             for label, c in COLOURS.items()]
    marks = [Line2D([], [], color="black", marker=">", label="link: supporting \u2192 supported"),
             Line2D([], [], color=EXTRA, label="predicted link not in gold"),
             Line2D([], [], color=MISSED, linestyle=DASHED, label="gold link missed"),
             Patch(facecolor="white", edgecolor=WRONG_TYPE, linewidth=3.0,
                   label="predicted type \u2260 gold type")]
    for handles, y in [(types, 0.38), (marks, 0.05)]:
        fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=FONT_SIZE,
                   frameon=False, bbox_to_anchor=(0.5, y / height))
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", default=".", help="where to write the picture")
    parser.add_argument("--document", type=int, default=4,
                        help="which test comment to draw (0 to 7)")
    args = parser.parse_args()

    X_train, y_train, X_test, y_test = load_cdcp_sample()
    features = ArgumentFeatures().fit(X_train, y_train)
    miner = StructuredSVMArgumentMiner(max_iter=30, random_state=0)
    miner.fit(features.transform(X_train), y_train)
    y_pred = miner.predict(features.transform(X_test))
    print(argument_classification_report(y_test, y_pred))

    doc, gold, pred = X_test[args.document], y_test[args.document], y_pred[args.document]
    print(describe(doc, gold, f"comment {doc['id']}, gold:"))
    print(describe(doc, pred, "predicted:", gold))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no picture (pip install matplotlib).")
        return
    os.makedirs(args.output_dir, exist_ok=True)
    path = os.path.join(args.output_dir, "argument_graph.png")
    plot(doc, gold, pred, path, plt)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
