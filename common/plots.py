"""Charts. matplotlib with the Agg backend, so they work on machines with no display.

    ladder_chart(series, sizes, path, title, ylabel)   grouped bars: one group per size,
                                                       one bar per kernel, baseline hatched
"""
from pathlib import Path

from . import writes


def ladder_chart(series, sizes, path, title, ylabel="TFLOP/s", baseline=None, ceiling=None):
    """series: {kernel: [value per size]} in ladder order; baseline: the name of the reference."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(series)
    fig, ax = plt.subplots(figsize=(1.6 + 1.1 * len(names) * len(sizes) / 2, 4.2))
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        xs = [s + (i - (len(names) - 1) / 2) * width for s in range(len(sizes))]
        # a size the row was not timed at (a tuned row has no 1024^3 record) gets no bar, not a 0
        timed = [(x, v) for x, v in zip(xs, series[name]) if v is not None]
        bars = ax.bar([x for x, _ in timed], [v for _, v in timed], width * 0.95, label=name,
                      hatch="//" if name == baseline else None,
                      color="0.7" if name == baseline else None, edgecolor="0.3" if name == baseline else None)
        ax.bar_label(bars, fmt="%.0f", fontsize=7, padding=1)
    if ceiling:
        ax.axhline(ceiling[1], color="crimson", lw=1, ls="--")
        ax.text(len(sizes) - 0.5, ceiling[1], ceiling[0], color="crimson", fontsize=8, ha="right", va="bottom")
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels([f"{s}³" for s in sizes])
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, ncol=min(len(names), 4), loc="upper left")
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    writes.note(path)
    plt.close(fig)
    return Path(path)
