"""Draw the probability mappings of sksparse_struct.mappings.

Three pictures, in the spirit of Niculae (2018), chapter 3:

``mappings_1d.png``
    The slice ``Pi([t, 0])_1`` as a function of ``t`` (thesis Fig. 3.4, right):
    softmax is a sigmoid that never reaches 0 or 1; sparsemax is a hard
    sigmoid that does; entmax15 and sq_pnorm_max (p = 1.5) lie in between,
    sparse but with smoother transitions.
``mappings_3d.png``
    For three scores ``[t1, t2, 0]``, the weight of the second one,
    ``Pi([t1, t2, 0])_2``, as a heat map over ``(t1, t2)`` (thesis Fig. 3.6).
    White regions are exact zeros; fusedmax and oscarmax show plateaus and
    ridges where weights are fused into groups.
``fertility_attention.png``
    Attention of 8 decoding steps over 6 source words: softmax and sparsemax
    applied step by step can attend to the same word again and again, while
    fertility-bounded attention (csoftmax / csparsemax with the budgets left,
    Malaviya et al. 2018) gives no word more than its fertility in total.

Run ``python examples/plot_mappings.py --output-dir DIR``; it takes a few
seconds after numba has compiled the kernels. It needs matplotlib (the
``examples`` extra); a mapping missing from this version of the package is
left out with a note.
"""

import argparse
import os
import sys

import numpy as np

import sksparse_struct.mappings as mappings


def _available(*names):
    return all(hasattr(mappings, name) for name in names)


def slice_mappings():
    """(label, function of an (n, d) score array) for the 1-D slice plot."""
    out = [("softmax", lambda z: mappings.softmax(z))]
    out.append(("sparsemax", lambda z: mappings.sparsemax(z)))
    if _available("entmax15"):
        out.append(("entmax15", lambda z: mappings.entmax15(z)))
    if _available("sq_pnorm_max"):
        out.append(("sq_pnorm_max (p=1.5)", lambda z: mappings.sq_pnorm_max(z, p=1.5)))
    return out


def surface_mappings():
    """(label, function) for the d = 3 heat maps."""
    out = [("softmax", lambda z: mappings.softmax(z))]
    out.append(("sparsemax", lambda z: mappings.sparsemax(z)))
    if _available("fusedmax"):
        out.append(("fusedmax (alpha=0.3)", lambda z: mappings.fusedmax(z, alpha=0.3)))
    if _available("oscarmax"):
        out.append(("oscarmax (alpha=0.3)", lambda z: mappings.oscarmax(z, alpha=0.3)))
    if _available("sq_pnorm_max"):
        out.append(("sq_pnorm_max (p=1.5)", lambda z: mappings.sq_pnorm_max(z, p=1.5)))
    return out


def missing_names():
    wanted = ["entmax15", "sq_pnorm_max", "fusedmax", "oscarmax", "csoftmax",
              "csparsemax", "fertility_attention"]
    return [name for name in wanted if not _available(name)]


def plot_1d(plt, path):
    t = np.linspace(-3.0, 3.0, 601)
    z = np.column_stack([t, np.zeros_like(t)])
    fig, (ax, zoom) = plt.subplots(1, 2, figsize=(9, 3.4), layout="constrained")
    styles = ["-", "--", "-.", ":"]
    for (label, fn), style in zip(slice_mappings(), styles):
        p1 = fn(z)[:, 0]
        ax.plot(t, p1, style, lw=2, label=label)
        zoom.plot(t, p1, style, lw=2, label=label)
    ax.set_xlabel("t")
    ax.set_ylabel("Pi([t, 0])_1")
    ax.set_title("two scores [t, 0]")
    ax.legend(loc="upper left", fontsize=8)
    # Sparsemax reaches 1 at t = 1 with a kink; the sparse mappings with
    # p < 2 (entmax15, sq_pnorm_max) reach it later and without a kink.
    zoom.set_xlim(0.5, 2.5)
    zoom.set_ylim(0.8, 1.01)
    zoom.set_xlabel("t")
    zoom.set_title("zoom: where the weight reaches 1")
    for a in (ax, zoom):
        a.grid(alpha=0.3)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_3d(plt, path, n_grid=161):
    t = np.linspace(-2.0, 2.0, n_grid)
    t1, t2 = np.meshgrid(t, t)
    z = np.column_stack([t1.ravel(), t2.ravel(), np.zeros(t1.size)])
    panels = surface_mappings()
    fig, axes = plt.subplots(1, len(panels), figsize=(2.6 * len(panels) + 1, 3.0),
                             squeeze=False, layout="constrained")
    cmap = plt.get_cmap("viridis").copy()
    # Exact zeros (the sparse region) are drawn white.
    cmap.set_under("white")
    for ax, (label, fn) in zip(axes[0], panels):
        p2 = fn(z)[:, 1].reshape(t1.shape)
        image = ax.imshow(p2, origin="lower", extent=(-2, 2, -2, 2), cmap=cmap,
                          vmin=1e-12, vmax=1.0, interpolation="nearest")
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("t1")
    axes[0, 0].set_ylabel("t2")
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8,
                 label="Pi([t1, t2, 0])_2 (white: exactly 0)")
    fig.savefig(path, dpi=80, bbox_inches="tight")
    plt.close(fig)


def attention_example():
    """Scores of 8 target steps over 6 source words (the last is a sink).

    The scores make word 1 attractive at every step, as a model that keeps
    translating the same source word would; fertility stops that.
    """
    rng = np.random.default_rng(3)
    n_steps, n_words = 8, 6
    steps = np.arange(n_steps)[:, None]
    words = np.arange(n_words)[None, :]
    # A rough diagonal alignment, plus a strong pull towards word 1.
    scores = -0.6 * np.abs(steps * (n_words - 2) / (n_steps - 1) - words)
    scores[:, 1] += 1.2
    scores[:, -1] = -1.5  # the sink word: low score, unbounded fertility
    scores += 0.1 * rng.standard_normal(scores.shape)
    fertility = np.array([1.5, 1.5, 1.5, 1.5, 1.5, np.inf])
    return scores, fertility


def plot_attention(plt, path):
    scores, fertility = attention_example()
    panels = [("softmax", mappings.softmax(scores)),
              ("sparsemax", mappings.sparsemax(scores))]
    if _available("fertility_attention"):
        for name in ("csoftmax", "csparsemax"):
            if _available(name):
                att = mappings.fertility_attention(scores, fertility, mapping=name)
                panels.append((f"{name}, fertility 1.5", att))
    fig, axes = plt.subplots(1, len(panels), figsize=(2.5 * len(panels) + 1, 3.6),
                             squeeze=False, layout="constrained")
    cmap = plt.get_cmap("Blues").copy()
    cmap.set_under("white")
    labels = ["w0", "w1", "w2", "w3", "w4", "sink"]
    for ax, (title, att) in zip(axes[0], panels):
        image = ax.imshow(att, cmap=cmap, vmin=1e-12, vmax=1.0, aspect="auto")
        ax.set_title(title, fontsize=10)
        ax.set_xticks(range(len(labels)), labels, fontsize=8, rotation=45)
        ax.set_yticks(range(att.shape[0]))
        totals = att.sum(axis=0)
        ax.set_xlabel("total: " + " ".join(f"{v:.1f}" for v in totals[:-1]),
                      fontsize=8)
    axes[0, 0].set_ylabel("decoding step")
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label="attention")
    fig.savefig(path, dpi=80, bbox_inches="tight")
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", default=".",
                        help="where to write the PNG files (default: .)")
    args = parser.parse_args(argv)
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
    for name, draw in [("mappings_1d.png", plot_1d),
                       ("mappings_3d.png", plot_3d),
                       ("fertility_attention.png", plot_attention)]:
        path = os.path.join(args.output_dir, name)
        draw(plt, path)
        written.append(path)
    missing = missing_names()
    if missing:
        print("not in this version of sksparse_struct.mappings, left out: "
              + ", ".join(missing))
    print("wrote " + ", ".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
