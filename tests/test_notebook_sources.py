"""The committed chapter notebooks: paired with their scripts, papermill-ready, stripped of volatile metadata."""

from pathlib import Path

import jupytext
import nbformat
import pytest

from hnclip_core.replication.committed import WIDGET_VIEW

FOLDER = Path(__file__).resolve().parent.parent / "notebooks"
CHAPTERS = sorted(FOLDER.glob("[0-9][0-9]_*.ipynb"))
NOTEBOOKS = sorted(FOLDER.glob("*.ipynb"))  # the chapters and the ablation-run notebook of the grids


def test_all_five_chapters_and_the_ablation_notebook_are_there():
    assert [p.stem[:2] for p in CHAPTERS] == ["01", "02", "03", "04", "05"]
    assert {p.name for p in NOTEBOOKS} - {p.name for p in CHAPTERS} == {"ablation_run.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_matches_its_script_and_follows_the_conventions(path):
    notebook = nbformat.read(path, as_version=4)
    script = jupytext.read(path.with_suffix(".py"))
    # tags too: JupyterLab's jupytext refuses to open a notebook whose cells differ from an older paired script
    assert [(c.cell_type, c.source, c.metadata.get("tags")) for c in notebook.cells] == [
        (c.cell_type, c.source, c.metadata.get("tags")) for c in script.cells], (
        f"{path.name} and {path.with_suffix('.py').name} differ: edit the .py and run `make notebooks`")
    tagged = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, "exactly one cell tagged 'parameters' (papermill)"
    assert "output_dir = None" in tagged[0].source and "interactive = True" in tagged[0].source
    assert "=" not in "".join(line.partition("#")[2] for line in tagged[0].source.splitlines()), (
        "papermill cannot parse parameter comments that contain '='")
    assert "papermill" not in notebook.metadata and "widgets" not in notebook.metadata
    for cell in notebook.cells:
        assert "papermill" not in cell.metadata and "execution" not in cell.metadata
        if cell.cell_type == "code":
            shows = ("display(" in cell.source or "print(" in cell.source) and "if interactive" not in cell.source
            assert cell.outputs or not shows, f"committed notebooks carry their outputs:\n{cell.source[:200]}"
            assert all(o.output_type != "error" for o in cell.outputs)
            # widget views are dropped before committing (hnclip_core.replication.committed): their frozen text fallback
            # is not what a reader should see, and only cells nbval does not compare may have had them
            assert not any(WIDGET_VIEW in o.get("data", {}) for o in cell.outputs), "run `make notebooks`"
            # nbval treats a cell without an execution count as never run and fails it if it has outputs.
            assert cell.execution_count is not None or not cell.outputs, "keep counts: nbstripout --keep-count"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_figure_is_committed_as_a_picture(path):
    """A figure cell must carry a PNG: ``<Figure size …>`` text means the kernel had no formatter for it."""
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        # show() displays the PNG alone: a "<Figure size …>" text anywhere is a figure a reader may see as text
        texts = [o.get("text", "") + str(o.get("data", {}).get("text/plain", "")) for o in cell.outputs]
        assert not any("<Figure size" in text for text in texts), f"a figure shown as text:\n{cell.source[:200]}"
        draws = "show(fig" in cell.source and "if interactive" not in cell.source
        if draws and cell.outputs:
            assert any("image/png" in o.get("data", {}) for o in cell.outputs), f"no PNG:\n{cell.source[:200]}"
