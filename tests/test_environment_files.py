"""The conda environment files (root and Binder) list every dependency of pyproject.toml's core and of its [lab]
extra (they are the notebooks' environments), with the core's version ranges of torch and open_clip_torch."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest itself depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
ROOT_ENV = ROOT / "environment.yml"
BINDER_ENV = ROOT / "binder" / "environment.yml"
POST_BUILD = ROOT / "binder" / "postBuild"

# PyPI name (normalised) -> the conda-forge names that provide it. Checked by hand: add new dependencies here.
CONDA_FORGE_NAMES = {
    "torch": {"pytorch"},
    "open-clip-torch": {"open-clip-torch"},
    "peft": {"peft"},
    "numpy": {"numpy"},
    "pillow": {"pillow"},
    "matplotlib": {"matplotlib", "matplotlib-base"},
    "tqdm": {"tqdm"},
    "ipykernel": {"ipykernel"},
    "ipywidgets": {"ipywidgets"},
    "nbformat": {"nbformat"},
    "papermill": {"papermill"},
    "pyyaml": {"pyyaml"},
    "jsonschema": {"jsonschema"},
    "psutil": {"psutil"},
    "jupyterlab": {"jupyterlab"},
}
# On Binder the CPU-only build stands for pytorch.
BINDER_EXTRA_NAMES = {"torch": {"pytorch-cpu"}}


def normalise(name: str) -> str:
    """PEP 503 normalisation: open_clip_torch and Open-CLIP-Torch are the same project."""
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_requirements() -> dict[str, SpecifierSet]:
    """{normalised name: version range} of pyproject.toml's [project].dependencies and of its [lab] extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [Requirement(spec) for spec in project["dependencies"] + project["optional-dependencies"]["lab"]]
    return {normalise(requirement.name): requirement.specifier for requirement in requirements}


def runtime_dependencies() -> list[str]:
    return list(runtime_requirements())


def load_environment(path: Path) -> dict:
    environment = yaml.safe_load(path.read_text())
    assert isinstance(environment, dict) and "dependencies" in environment, f"{path} is not a conda environment file"
    return environment


def conda_packages(environment: dict) -> dict[str, str]:
    """{package name: full spec} for the conda dependencies (the pip: section, if any, left out)."""
    packages = {}
    for spec in environment["dependencies"]:
        if isinstance(spec, str):
            packages[re.match(r"[A-Za-z0-9_.-]+", spec).group().lower()] = spec
    return packages


ENVIRONMENTS = [pytest.param(ROOT_ENV, id="root"), pytest.param(BINDER_ENV, id="binder")]


def test_every_runtime_dependency_has_a_conda_forge_name():
    unmapped = [name for name in runtime_dependencies() if name not in CONDA_FORGE_NAMES]
    assert not unmapped, (
        f"new dependencies {unmapped} of the core or the [lab] extra in pyproject.toml: add their conda-forge names "
        f"to CONDA_FORGE_NAMES in {Path(__file__).name}, and the packages to environment.yml and binder/environment.yml"
    )


@pytest.mark.parametrize("path", ENVIRONMENTS)
def test_environment_lists_every_runtime_dependency(path):
    packages = conda_packages(load_environment(path))
    missing = []
    for name in runtime_dependencies():
        accepted = CONDA_FORGE_NAMES.get(name, set())
        if path == BINDER_ENV:
            accepted = accepted | BINDER_EXTRA_NAMES.get(name, set())
        if not accepted & set(packages):
            missing.append(f"{name} (conda-forge: {' or '.join(sorted(accepted)) or 'unmapped'})")
    assert not missing, f"{path.relative_to(ROOT)} lacks {', '.join(missing)}"


@pytest.mark.parametrize("path", ENVIRONMENTS)
def test_environment_uses_conda_forge_python_and_jupyterlab(path):
    environment = load_environment(path)
    assert environment.get("channels") == ["conda-forge"]
    packages = conda_packages(environment)
    assert re.fullmatch(r"python\s*>=\s*3\.10", packages.get("python", "")), "python >=3.10 expected"
    assert {"jupyterlab", "pip"} <= set(packages)


def test_root_pytorch_is_cpu_agnostic_and_binder_cpu_only():
    root = conda_packages(load_environment(ROOT_ENV))
    version = r"[<>=!]=?[\d.*]+"
    assert re.fullmatch(rf"pytorch(\s+{version}(,{version})*)?", root["pytorch"]), "a version range, no build string"
    assert not {"pytorch-cpu", "pytorch-gpu"} & set(root)
    binder = conda_packages(load_environment(BINDER_ENV))
    assert "pytorch-cpu" in binder and not {"pytorch", "pytorch-gpu"} & set(binder)


@pytest.mark.parametrize("path", ENVIRONMENTS)
@pytest.mark.parametrize("name", ["torch", "open-clip-torch"])
def test_environment_pins_what_pyproject_pins(path, name):
    """The committed outputs were made with these releases: conda must not pick another minor (e.g. open_clip 3.0)."""
    pinned = runtime_requirements()[name]
    assert pinned, f"pyproject.toml gives {name} no version range"
    packages = conda_packages(load_environment(path))
    conda_name = next(n for n in CONDA_FORGE_NAMES[name] | BINDER_EXTRA_NAMES.get(name, set()) if n in packages)
    conda_range = SpecifierSet(packages[conda_name].removeprefix(conda_name).strip())  # conda: ">=2.14,<2.15"
    assert conda_range == pinned, f"{path.relative_to(ROOT)}: {packages[conda_name]!r}; pyproject.toml: {name}{pinned}"


def test_post_build_installs_the_package_and_fails_fast():
    assert os.access(POST_BUILD, os.X_OK), "binder/postBuild must be executable (chmod +x)"
    lines = [line.strip() for line in POST_BUILD.read_text().splitlines()]
    commands = [line for line in lines if line and not line.startswith("#")]
    assert lines[0] == "#!/bin/bash"
    assert commands[0] in ("set -euo pipefail", "set -e"), "postBuild must stop at the first failing command"
    assert any(re.fullmatch(r"(python -m )?pip install (--no-deps )?-e \.", line) for line in commands)
    assert not any("pretrain-toy" in line for line in commands), "the toy is shipped: Binder must not pretrain"
