"""The replication's figures, one module per notebook chapter.

Every function draws one figure from plain numbers (the outputs of :mod:`hnclip_core`'s analysis
functions) and returns a :class:`matplotlib.figure.Figure` built without pyplot, so nothing needs closing
and a notebook shows it exactly once with :func:`show`; :func:`save_figure` writes it as PNG next to the
run's results.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

#: Colours used for the same method in every figure.
METHOD_COLOURS = {
    "zero-shot": "#7f7f7f",
    "clip": "#1f77b4",
    "tok": "#17becf",
    "hn": "#ff7f0e",
    "hn+tok": "#d62728",
}


def show(fig: Figure) -> None:
    """Display ``fig`` in a notebook as a PNG and nothing else.

    ``display(fig)`` would also attach the text fallback ``<Figure size … with N Axes>``, which is all a reader
    sees wherever the PNG is dropped, and which looks exactly like the symptom of a kernel without matplotlib's
    inline formatter. The chapters turn that formatter on with ``%matplotlib inline``.
    """
    from IPython.display import display

    display(fig, include=["image/png"])


def finish_axes(ax, legend_fontsize: int | None = 8, integer_x: bool = False, **labels: str) -> None:
    """Set ``ax``'s labels (``xlabel=``, ``ylabel=``, ``title=``), a light grid and, unless ``legend_fontsize``
    is None, a legend below the axes, where it covers no data: the finish every line chart of the chapters
    shares. ``integer_x``: ticks only at whole numbers (epochs)."""
    ax.set(**labels)
    if integer_x:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    if legend_fontsize is not None:
        # anchored at the axes' bottom and padded (in font sizes) past the tick labels and the x label, so the gap
        # does not shrink with a short panel
        ax.legend(fontsize=legend_fontsize, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=2, frameon=False,
                  borderaxespad=4.8 * 8 / legend_fontsize)


def save_figure(fig: Figure, directory: str | Path | None, name: str, dpi: int = 120) -> Path | None:
    """Write ``fig`` to ``directory/name.png`` (folders created); nothing is written if ``directory`` is None."""
    if directory is None:
        return None
    path = Path(directory) / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    return path
