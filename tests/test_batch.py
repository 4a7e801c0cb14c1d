"""The papermill batch runner, on tiny notebooks made here (two kernel starts for the whole file)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from hnclip_core.replication import batch

PARAMETERS = 'output_dir = None\ninteractive = True\nx = 1\nlabel = "a"\nrate = 0.5\nextra = None\n'
BODY = """\
import json, pathlib
pathlib.Path(output_dir, "result.json").write_text(json.dumps({"x": x, "label": label, "interactive": interactive}))
if x == 3:
    raise ValueError("x must not be 3")
"""


def write_notebook(path: Path, parameters: str = PARAMETERS) -> Path:
    """A notebook with a cell tagged ``parameters`` and a cell writing ``result.json`` (failing for x == 3)."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cell = nbformat.v4.new_code_cell(parameters)
    cell.metadata["tags"] = ["parameters"]
    notebook.cells = [cell, nbformat.v4.new_code_cell(BODY)]
    nbformat.write(notebook, path)
    return path


def write_grid(path: Path, **spec) -> Path:
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """One grid run through the command line: x = 1 succeeds, x = 3 fails."""
    root = tmp_path_factory.mktemp("batch")
    notebook = write_notebook(root / "nb.ipynb")
    grid = write_grid(
        root / "grid.yaml", notebook=str(notebook), output_dir=str(root / "runs"),
        parameters={"label": "b"}, grid={"x": [1, 3]},
    )
    code = batch.main([str(grid), "--quiet"])
    return root, grid, code


def test_grid_expands_to_the_cartesian_product(tmp_path):
    notebook = write_notebook(tmp_path / "nb.ipynb")
    spec = {
        "notebook": str(notebook), "output_dir": str(tmp_path / "runs"),
        "parameters": {"extra": [1, 2]}, "grid": {"x": [1, 2], "label": ["a", "b/c"], "rate": [0, 0.25]},
    }
    results = batch.run_grid(spec, dry_run=True)
    assert [r.name for r in results] == [
        f"x={x},label={label},rate={rate}" for x in (1, 2) for label in ("a", "b_c") for rate in (0, 0.25)
    ]
    assert results[1].parameters == {"extra": [1, 2], "x": 1, "label": "a", "rate": 0.25}
    assert {r.status for r in results} == {"pending"}
    assert not (tmp_path / "runs").exists()  # a dry run writes nothing


def test_no_grid_is_one_point(tmp_path):
    notebook = write_notebook(tmp_path / "nb.ipynb")
    results = batch.run_grid({"notebook": str(notebook), "output_dir": str(tmp_path / "runs")}, dry_run=True)
    assert [(r.name, r.parameters) for r in results] == [("default", {})]


def test_each_point_runs_in_its_own_folder(executed):
    root, _, code = executed
    runs = root / "runs"
    assert code == 1  # one point failed
    assert json.loads((runs / "x=1" / "result.json").read_text()) == {"x": 1, "label": "b", "interactive": False}
    assert (runs / "x=1" / "nb.ipynb").is_file()
    assert json.loads((runs / "x=1" / "point.json").read_text())["status"] == "ok"


def test_a_failed_point_is_reported_and_the_others_run(executed):
    root, _, _ = executed
    points = {entry["name"]: entry for entry in batch.load_summary(root / "runs")}
    assert points["x=1"]["status"] == "ok"
    failed = points["x=3"]
    assert failed["status"] == "failed"
    assert failed["parameters"] == {"label": "b", "x": 3}
    assert failed["error"] == "ValueError: x must not be 3"
    assert Path(failed["notebook"]).is_file()  # the partially executed notebook is kept
    assert failed["seconds"] > 0


def test_collect_json_reads_the_completed_points(executed):
    root, _, _ = executed
    # x=3 wrote its file before failing; failed points are left out
    assert batch.collect_json(root / "runs", "result.json") == {"x=1": {"x": 1, "label": "b", "interactive": False}}


def test_rerun_skips_completed_points(executed, capsys):
    root, grid, _ = executed
    notebook = root / "runs" / "x=1" / "nb.ipynb"
    before = notebook.stat().st_mtime_ns
    assert batch.main([str(grid), "--only", "x=1", "--quiet"]) == 0
    assert notebook.stat().st_mtime_ns == before
    out = capsys.readouterr().out
    assert "x=1" in out and "skipped" in out
    statuses = {r.name: r.status for r in batch.run_grid(grid, dry_run=True)}
    assert statuses == {"x=1": "skipped", "x=3": "pending"}  # the failed point would run again
    assert batch.run_grid(grid, dry_run=True, force=True)[0].status == "pending"


def test_changed_parameters_for_an_existing_folder_is_an_error(executed, capsys):
    root, _, _ = executed
    grid = write_grid(
        root / "changed.yaml", notebook=str(root / "nb.ipynb"), output_dir=str(root / "runs"),
        parameters={"label": "c"}, grid={"x": [1, 3]},
    )
    with pytest.raises(batch.GridError, match="x=1, x=3 .*other parameters"):
        batch.run_grid(grid, dry_run=True)
    assert batch.main([str(grid)]) == 2
    assert "other parameters" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("parameters", "grid", "message"),
    [
        ({"y": 1}, {}, "unknown parameter 'y' .* valid parameters: x, label, rate, extra"),
        ({}, {"x": [1, "2"]}, "parameter 'x' expects int .*got str '2'"),
        ({}, {"x": [True]}, "parameter 'x' expects int .*got bool"),
        ({"x": 1.5}, {}, "parameter 'x' expects int .*got float"),
        ({"label": 1}, {}, "parameter 'label' expects str"),
        ({"rate": "1e-3"}, {}, "expects float .*write 1.0e-3"),
        ({"output_dir": "elsewhere"}, {}, "'output_dir' is set by the batch runner"),
    ],
)
def test_bad_parameters_are_rejected_before_anything_runs(tmp_path, capsys, parameters, grid, message):
    notebook = write_notebook(tmp_path / "nb.ipynb")
    spec = write_grid(
        tmp_path / "grid.yaml", notebook=str(notebook), output_dir=str(tmp_path / "runs"),
        parameters=parameters, grid=grid,
    )
    with pytest.raises(batch.GridError, match=message):
        batch.run_grid(spec)
    assert batch.main([str(spec)]) == 2
    assert "error:" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_accepted_types(tmp_path):
    """int where the default is float; anything where it is None."""
    notebook = write_notebook(tmp_path / "nb.ipynb")
    spec = {"notebook": str(notebook), "output_dir": str(tmp_path / "runs"), "grid": {"rate": [0, 1.5]},
            "parameters": {"extra": {"any": ["thing"]}}}
    assert len(batch.run_grid(spec, dry_run=True)) == 2


def test_a_notebook_without_output_dir_is_refused(tmp_path):
    notebook = write_notebook(tmp_path / "nb.ipynb", parameters="x = 1\n")
    with pytest.raises(batch.GridError, match="no 'output_dir' parameter"):
        batch.run_grid({"notebook": str(notebook), "output_dir": str(tmp_path / "runs")}, dry_run=True)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"notebook": "nb.ipynb"}, "'output_dir' is required"),
        ({"notebook": "nb.ipynb", "output_dir": "runs", "grids": {}}, "unknown key"),
        ({"notebook": "nb.ipynb", "output_dir": "runs", "grid": {"x": 1}}, "grid.x must be a non-empty list"),
        ({"notebook": "nb.ipynb", "output_dir": "runs", "parameters": {"x": 1}, "grid": {"x": [2]}}, "both"),
        ({"notebook": "missing.ipynb", "output_dir": "runs"}, "not found"),
    ],
)
def test_malformed_grid_files(tmp_path, monkeypatch, spec, message):
    monkeypatch.chdir(tmp_path)
    write_notebook(tmp_path / "nb.ipynb")
    with pytest.raises(batch.GridError, match=message):
        batch.run_grid(spec, dry_run=True)


def test_only_and_kernel_are_checked(tmp_path):
    notebook = write_notebook(tmp_path / "nb.ipynb")
    spec = {"notebook": str(notebook), "output_dir": str(tmp_path / "runs"), "grid": {"x": [1, 2]}}
    with pytest.raises(batch.GridError, match="no point named x=5; points: x=1, x=2"):
        batch.run_grid(spec, only=["x=5"], dry_run=True)
    with pytest.raises(batch.GridError, match="no Jupyter kernel named 'nope'"):
        batch.run_grid(spec, kernel="nope", dry_run=True)


def test_point_names_are_filesystem_safe():
    assert batch.point_name({"gamma": 0.25, "seed": 1}) == "gamma=0.25,seed=1"
    assert batch.point_name({"lr": 1e-05, "flag": True, "ks": [1, 5]}) == "lr=1e-05,flag=True,ks=_1,5_"
    assert batch.point_name({"path": "../a b"}) == "path=.._a_b"
    assert batch.point_name({}) == "default"


def test_the_tutorial_runner_measures_a_childs_peak_memory():
    """What the per-chapter Binder check reads: the peak RSS of the child processes started during a block."""
    import subprocess

    from hnclip_core.replication.tutorial import KernelMemory

    def allocate(mb: int) -> list[str]:
        return [sys.executable, "-c", f"x = bytearray({mb} * 2**20); print(flush=True); import time; time.sleep(1)"]

    # already running when the block starts (a kernel shutting down, another test's process): not counted
    earlier = subprocess.Popen(allocate(400), stdout=subprocess.PIPE)
    try:
        earlier.stdout.readline()  # its 400 MB are allocated
        with KernelMemory() as memory:
            subprocess.run(allocate(300), check=True, stdout=subprocess.DEVNULL)
        assert 300 < memory.peak_mb < 600
        # a child sampled between fork and exec is a copy of this (large) process: not counted either
        large = bytearray(800 * 2**20)
        large[::4096] = b"\1" * len(large[::4096])  # resident
        for _ in range(5):
            with KernelMemory(interval=0.001) as memory:
                subprocess.run(allocate(300), check=True, stdout=subprocess.DEVNULL)
            assert 300 < memory.peak_mb < 600
        del large
        with KernelMemory() as idle:
            pass
        assert idle.peak_mb < 300
    finally:
        earlier.communicate()
