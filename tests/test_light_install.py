"""``pip install hnclip-core`` alone — the core, without the harness's ``[lab]`` extra — imports, fine-tunes the toy
for an epoch through the command line, and names the extra where a command of the harness needs it.

The package is built as a wheel from a copy of the source (neither editable nor the test environment's install) and
installed by pip into a new virtual environment, so that pip resolves the wheel's own requirements. One shortcut
nearly halves its time: torch and what torch itself requires (5.5 GB on Linux, a CUDA build, which pip takes 75 s or
more to unpack, whether the wheels come from its cache or from a local folder) are not unpacked a second time. The
new environment sees the test environment's copies through a folder of links named by a ``.pth`` file; pip finds
them installed and checks them against the wheel's torch range, and installs every other requirement
(open_clip_torch, numpy, pillow, tqdm and what they need) into the new environment from the index it is configured
with. Nothing else of the test environment, where the extra is installed, is visible there.

Marked ``install`` and left out of ``make test``: ``make install-test`` runs it, a step of ``.ci/run``. The rule that no
core module imports a package of the extra is also checked statically, in ``make test``, by ``lint-imports``
(pyproject.toml).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest itself depends on tomli there
    import tomli as tomllib

pytestmark = [pytest.mark.slow, pytest.mark.install]

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: Import names of the [lab] extra's packages (pyyaml is missing here: open_clip_torch's huggingface_hub requires it).
LAB_MODULES = ("IPython", "ipykernel", "ipywidgets", "jsonschema", "jupyterlab", "matplotlib", "nbformat", "papermill",
               "peft", "psutil")
#: Requirements of the extra that the core's own dependencies bring all the same.
BROUGHT_BY_THE_CORE = {"pyyaml"}  # huggingface_hub (open_clip_torch) requires it


def core_modules() -> list[str]:
    """The core's modules, as pyproject.toml's import contract "The core never imports the harness…" lists them."""
    contract = next(c for c in PYPROJECT["tool"]["importlinter"]["contracts"]
                    if c["name"].startswith("The core never imports the harness"))
    return contract["source_modules"]


def lab_requirements() -> set[str]:
    return {canonicalize_name(Requirement(spec).name) for spec in PYPROJECT["project"]["optional-dependencies"]["lab"]}


def requirement_closure(name: str) -> list[importlib.metadata.Distribution]:
    """The installed distribution ``name`` and everything it requires, recursively (markers and extras evaluated)."""
    wanted: dict[str, set[str]] = {}  # distribution -> the extras asked of it
    todo = [Requirement(name)]
    while todo:
        requirement = todo.pop()
        key, extras = canonicalize_name(requirement.name), set(requirement.extras)
        if key in wanted and extras <= wanted[key]:
            continue
        wanted[key] = wanted.get(key, set()) | extras
        for spec in importlib.metadata.distribution(key).requires or []:
            needed = Requirement(spec)
            if needed.marker is None or any(needed.marker.evaluate({"extra": e}) for e in ("", *wanted[key])):
                todo.append(needed)
    return [importlib.metadata.distribution(key) for key in wanted]


def top_level_entries(distribution: importlib.metadata.Distribution) -> set[str]:
    """What a distribution puts at the top of site-packages (its packages, modules and .dist-info folder)."""
    return {path.parts[0] for path in distribution.files or [] if path.parts[0] not in ("..", "__pycache__")}


def link_torch(into: Path) -> Path:
    """A folder of links to the test environment's torch and what torch requires, nothing else."""
    closure = requirement_closure("torch")
    site = Path(closure[0].locate_file(""))
    names = {canonicalize_name(d.metadata["Name"]) for d in closure}
    entries = set().union(*(top_level_entries(d) for d in closure))
    # A top-level folder shared with a distribution outside the closure (a namespace package) would show it too.
    for other in importlib.metadata.distributions(path=[str(site)]):
        if canonicalize_name(other.metadata["Name"]) not in names:
            shared = entries & top_level_entries(other)
            assert not shared, f"{sorted(shared)} of torch's requirements are shared with {other.metadata['Name']}"
    into.mkdir()
    for entry in entries:
        (into / entry).symlink_to(site / entry)
    return into


def run(command: list, **options) -> subprocess.CompletedProcess:
    return subprocess.run([str(part) for part in command], capture_output=True, text=True, **options)


def checked(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, f"{result.args} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def core_install(tmp_path_factory) -> dict:
    """A new virtual environment with the wheel installed, no extra: its python, bin and site-packages folders, and
    the environment variables and working folder to run it with."""
    work = tmp_path_factory.mktemp("light-install")
    source = work / "source"  # what the wheel is built from: setuptools reads no other file of the repository
    source.mkdir()
    shutil.copy2(ROOT / "pyproject.toml", source)
    shutil.copy2(ROOT / "README.md", source)
    shutil.copytree(ROOT / "hnclip_core", source / "hnclip_core", ignore=shutil.ignore_patterns("__pycache__"))
    checked(run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", work / "dist", source]))
    wheel = next((work / "dist").glob("hnclip_core-*.whl"))

    venv = work / "venv"
    checked(run([sys.executable, "-m", "venv", "--without-pip", venv]))
    python = venv / "bin" / "python"
    purelib = checked(run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])).stdout
    site = Path(purelib.strip())
    (site / "torch-of-the-test-environment.pth").write_text(f"{link_torch(work / 'torch')}\n")
    # the test environment's pip, run for the new environment's interpreter (which needs no pip of its own)
    checked(run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-compile", wheel]))

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(HNCLIP_CACHE=str(work / "cache"), OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"))
    return {"python": python, "bin": venv / "bin", "site": site, "env": env, "cwd": work}


def in_venv(install: dict, command: list) -> subprocess.CompletedProcess:
    return run(command, env=install["env"], cwd=install["cwd"])


def test_the_core_installs_without_the_harness_packages(core_install):
    script = f"""
import importlib, importlib.metadata, importlib.util, json, sys
absent = []
for name in {sorted(lab_requirements() - BROUGHT_BY_THE_CORE)!r}:
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        absent.append(name)
found = [m for m in {LAB_MODULES!r} if importlib.util.find_spec(m) is not None]
for module in {core_modules()!r} + ["hnclip_core", "hnclip_core.__main__", "hnclip_core.toy"]:
    importlib.import_module(module)
import hnclip_core
print(json.dumps({{"absent": absent, "found": found, "package": hnclip_core.__file__,
                   "loaded": sorted(m for m in sys.modules if m.partition(".")[0] in {LAB_MODULES!r})}}))
"""
    report = json.loads(checked(in_venv(core_install, [core_install["python"], "-c", script])).stdout)
    assert sorted(report["absent"]) == sorted(lab_requirements() - BROUGHT_BY_THE_CORE), "[lab] packages installed"
    assert report["found"] == [], f"importable without the [lab] extra: {report['found']}"
    assert report["loaded"] == []
    assert Path(report["package"]).is_relative_to(core_install["site"]), "hnclip_core not imported from the install"


def test_a_harness_command_names_the_lab_extra(core_install):
    result = in_venv(core_install, [core_install["bin"] / "hnclip", "calibrate", "--recheck"])
    assert result.returncode == 1, result.stderr
    assert "pip install 'hnclip-core[lab]'" in result.stderr
    assert re.search(r"\w+ is not installed", result.stderr) and "Traceback" not in result.stderr


def test_the_core_fine_tunes_the_toy_from_the_command_line(core_install):
    output = core_install["cwd"] / "run"
    result = checked(in_venv(core_install, [
        core_install["python"], "-m", "hnclip_core", "train", "--checkpoint", "toy", "--epochs", "1",
        "--train-fraction", "0.1", "--output-dir", output, "--no-progress",
    ]))
    summary = json.loads(result.stdout)
    assert summary["last"]["epoch"] == 1 and summary["last"]["train_loss"] > 0
    # the shipped toy's weights, not a random model: far above chance (0.1 %) zero-shot, on the benchmark generated
    # in the new environment
    assert summary["zero_shot"]["mean_r1"] > 30
    assert json.loads((output / "history.json").read_text())["config"]["dataset"] == "synthetic"
