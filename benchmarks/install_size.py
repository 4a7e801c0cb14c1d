"""Install time and size of the package in a new virtual environment: the core alone, and with the ``[lab]`` extra.

    python benchmarks/install_size.py [--cases core lab core-with-torch lab-with-torch] [--json FILE]

The wheel is built as ``tests/test_light_install.py`` builds it (``pip wheel --no-deps`` of a copy of
pyproject.toml, README.md and ``hnclip_core/``) and installed by this environment's pip, for the new environment's
interpreter, from the index pip is configured with. Cases:

* ``core``: ``pip install hnclip_core-….whl`` into an empty venv;
* ``lab``: ``pip install 'hnclip-core[lab] @ file://….whl'`` into an empty venv;
* ``core-with-torch`` and ``lab-with-torch``: the same, with torch and what torch requires already visible (linked
  from this environment through a ``.pth`` file, as the install test does), so pip installs only the rest.

Measured per case: the wall time of ``pip install``; ``du`` of the new site-packages (links not followed); the
number of distributions installed there; and the part of it that is torch and its requirements (their top-level
entries, by ``du``). Each venv is deleted after its measurement. ``--json`` also writes the numbers and the
conditions (``results/install_size.json``, which ``docs/package.md`` is rendered from). Not a test: the times
depend on the machine and the disk, which the file records.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from conditions import REPOSITORY, conditions, write_json

CASES = ("core", "lab", "core-with-torch", "lab-with-torch")

#: Run by the new environment's interpreter: its distributions, torch's version and the top-level entries of torch
#: and everything it requires (markers and extras evaluated), as JSON.
SURVEY = r"""
import importlib.metadata as md, json, re, sys, sysconfig
from pathlib import Path
site = Path(sysconfig.get_paths()["purelib"])
def key(name): return re.sub(r"[-_.]+", "-", name).lower()
local = {key(d.metadata["Name"]): d for d in md.distributions(path=[str(site)])}
entries, todo, seen = set(), ["torch"], set()
while todo:
    name = todo.pop()
    if key(name) in seen:
        continue
    seen.add(key(name))
    dist = local.get(key(name))
    if dist is None:
        continue
    entries |= {p.parts[0] for p in dist.files or [] if p.parts[0] not in ("..", "__pycache__")}
    for spec in dist.requires or []:
        name_part, _, marker = spec.partition(";")
        if marker and "extra" in marker:
            continue
        if marker:
            from packaging.markers import Marker
            if not Marker(marker).evaluate():
                continue
        todo.append(re.split(r"[\s<>=!~\[(;]", name_part.strip(), maxsplit=1)[0])
torch = local.get("torch")
print(json.dumps({"site": str(site), "distributions": sorted(local), "torch": torch.version if torch else None,
                  "torch_entries": sorted(e for e in entries if (site / e).exists())}))
"""


def run(command: list, **options) -> subprocess.CompletedProcess:
    done = subprocess.run([str(part) for part in command], capture_output=True, text=True, **options)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, command))} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done


def du_bytes(folder: Path, entries: list[str] | None = None) -> int:
    """``du`` of ``folder`` (or of its ``entries`` together), links not followed, in bytes."""
    paths = [folder / e for e in entries] if entries is not None else [folder]
    if not paths:
        return 0
    output = run(["du", "-sk", "--total", *paths]).stdout.strip().splitlines()[-1]
    return int(output.split()[0]) * 1024


def build_wheel(work: Path) -> Path:
    source = work / "source"
    source.mkdir()
    shutil.copy2(REPOSITORY / "pyproject.toml", source)
    shutil.copy2(REPOSITORY / "README.md", source)
    shutil.copytree(REPOSITORY / "hnclip_core", source / "hnclip_core", ignore=shutil.ignore_patterns("__pycache__"))
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", work / "dist", source])
    return next((work / "dist").glob("hnclip_core-*.whl"))


def link_torch(into: Path) -> Path:
    """Links to this environment's torch and what torch requires (``tests/test_light_install.py``'s folder)."""
    sys.path.insert(0, str(REPOSITORY))
    from tests.test_light_install import link_torch as link

    return link(into)


def measure(case: str, wheel: Path, work: Path) -> dict:
    venv = work / case
    run([sys.executable, "-m", "venv", "--without-pip", venv])
    python = venv / "bin" / "python"
    site = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    with_torch = case.endswith("-with-torch")
    if with_torch:
        (site / "torch-of-this-environment.pth").write_text(f"{link_torch(work / f'{case}-torch')}\n")
    target = str(wheel) if case.startswith("core") else f"hnclip-core[lab] @ {wheel.resolve().as_uri()}"
    started = time.perf_counter()
    run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-compile", target])
    seconds = time.perf_counter() - started
    # the survey needs packaging: this environment's, on the path only for the survey
    packaging = Path(__import__("packaging").__file__).parent.parent
    survey = json.loads(run([python, "-c", f"import sys; sys.path.append({str(packaging)!r})\n" + SURVEY]).stdout)
    record = {"requirement": "hnclip_core wheel" if case.startswith("core") else "hnclip-core[lab] @ wheel",
              "torch_already_there": with_torch, "install_seconds": round(seconds, 1),
              "site_packages_bytes": du_bytes(site), "distributions": len(survey["distributions"])}
    if not with_torch:
        record |= {"torch": survey["torch"], "torch_and_requirements_bytes": du_bytes(site, survey["torch_entries"])}
    shutil.rmtree(venv)
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--json", type=Path, help="also write the measurements to this file")
    parser.add_argument("--note", help="with --json: a remark on the conditions, e.g. what else ran")
    args = parser.parse_args(argv)
    measured_under = conditions(args.note)
    pip_version = run([sys.executable, "-m", "pip", "--version"]).stdout.split()[1]
    index = {k: v.strip("'") for k, v in (line.split("=", 1) for line in run(
        [sys.executable, "-m", "pip", "config", "list"]).stdout.splitlines() if "=" in line)
        if k.endswith(("index-url", "find-links"))}
    cases = {}
    with tempfile.TemporaryDirectory(prefix="hnclip-install-size-") as folder:
        work = Path(folder)
        wheel = build_wheel(work)
        for case in args.cases:
            print(f"{case} …", file=sys.stderr, flush=True)
            cases[case] = measure(case, wheel, work)
            print(f"{case}: {cases[case]}", file=sys.stderr, flush=True)
    if args.json:
        write_json(args.json, {**measured_under, "pip": pip_version, "pip_index": index, "wheel": wheel.name,
                               "cases": cases})
    return 0


if __name__ == "__main__":
    sys.exit(main())
