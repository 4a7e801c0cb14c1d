"""What `make notebooks` does to executed chapters before they are committed, besides nbstripout.

Widget views — tqdm's notebook progress bars, chapter 2's γ/s explorer — are saved without their widget state,
so a reader who opens the committed notebook sees their frozen text fallback (``encode captions: 0%|``,
``interactive(children=(FloatSlider(…``) instead of a bar or sliders. They are dropped; running the chapter
brings them back. Every cell that has one is excluded from nbval's comparison (NBVAL_IGNORE_OUTPUT / SKIP), which
``tests/test_notebook_sources.py`` checks.

    python -m tests.committed_notebooks notebooks/*.ipynb
"""

import sys

import nbformat

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def drop_widget_views(path: str) -> int:
    """Remove the widget-view outputs of the notebook at ``path`` in place; returns how many went."""
    notebook = nbformat.read(path, as_version=4)
    dropped = 0
    for cell in notebook.cells:
        if cell.cell_type == "code":
            kept = [output for output in cell.outputs if WIDGET_VIEW not in output.get("data", {})]
            dropped += len(cell.outputs) - len(kept)
            cell.outputs = kept
    if dropped:
        nbformat.write(notebook, path)
    return dropped


if __name__ == "__main__":
    for notebook_path in sys.argv[1:]:
        print(f"{notebook_path}: {drop_widget_views(notebook_path)} widget views dropped")
