"""Wall time and peak memory of the project's commands as a new user meets them: a fresh clone, empty caches.

    python benchmarks/time_commands.py test tutorial [--env ATEN_CPU_CAPABILITY=avx2 ...] [--label NAME]

Each ``make TARGET`` runs in its own fresh clone of the current commit (``git clone`` of this repository, so only
committed work is timed) with an empty ``HNCLIP_CACHE``; nothing of this checkout's venv or caches is reused.
Measured: wall time; the peak resident memory of the largest process it started (``wait4``'s usage, which
is what GNU ``time -v`` reports); pytest's summary lines; for ``make tutorial`` the
per-chapter seconds and kernel memory of ``runs/tutorial/tutorial_summary.json``; and the memory of importing
torch, open_clip and the package in the clone's venv. The measurements are merged into
``results/timings.json`` (``--output``) under ``make TARGET`` (or ``--label``), which the timing blocks of
``docs/tutorial.md`` are rendered from (``make docs``). Not a test: the numbers belong to the machine, which the
file records; run it with the machine otherwise idle.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from conditions import machine, write_json

REPOSITORY = Path(__file__).resolve().parents[1]
#: pytest's closing line: "= 598 passed, 1 skipped in 545.32s (0:09:05) =".
PYTEST_SUMMARY = re.compile(r"^=+ (?P<counts>(?:\d+ \w+(?:, )?)+) in (?P<seconds>[\d.]+)s", re.MULTILINE)


def pytest_runs(output: str) -> list[dict]:
    """Every pytest run of ``output``: its counts ({"passed": 598, "skipped": 1}) and seconds."""
    runs = []
    for match in PYTEST_SUMMARY.finditer(output):
        counts = {word: int(n) for n, word in (part.split(" ") for part in match["counts"].split(", "))}
        runs.append({"counts": counts, "seconds": float(match["seconds"])})
    return runs


def time_target(target: str, env: dict[str, str]) -> dict:
    """Run ``make target`` in a fresh clone with an empty cache; what it took, and what pytest said."""
    with tempfile.TemporaryDirectory(prefix="hnclip-timing-") as scratch:
        clone, cache = Path(scratch) / "clone", Path(scratch) / "cache"
        subprocess.run(["git", "clone", "--quiet", str(REPOSITORY), str(clone)], check=True)
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, check=True, capture_output=True,
                                text=True).stdout.strip()
        log = Path(scratch) / "output.txt"
        started = time.perf_counter()
        with log.open("w") as sink:
            process = subprocess.Popen(["make", target], cwd=clone, stdout=sink, stderr=subprocess.STDOUT,
                                       env={**os.environ, **env, "HNCLIP_CACHE": str(cache)})
            # wait4's usage covers make and every descendant it waited for; ru_maxrss is in KiB on Linux
            _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        output = log.read_text()
        if os.waitstatus_to_exitcode(status) != 0:
            sys.stderr.write(output[-4000:])
            raise SystemExit(f"make {target} failed (exit {os.waitstatus_to_exitcode(status)})")
        record = {
            "commit": commit, "env": env, "wall_seconds": round(seconds, 1),
            "peak_memory_gb": round(usage.ru_maxrss * 1024 / 1e9, 2), "pytest": pytest_runs(output),
        }
        record["import_memory_mb"] = import_memory_mb(clone / ".venv" / "bin" / "python")
        tutorial = clone / "runs" / "tutorial" / "tutorial_summary.json"
        if tutorial.is_file():
            summary = json.loads(tutorial.read_text())
            record["chapters"] = [{k: c[k] for k in ("notebook", "seconds", "peak_kernel_memory_mb")}
                                  for c in summary["chapters"]]
        return record


def import_memory_mb(python: Path) -> float:
    """The resident memory a kernel holds before it computes anything: importing torch, open_clip and the package
    (with the CUDA build of torch most of a small chapter's peak)."""
    probe = ("import resource, torch, open_clip, hnclip_core.replication; "
             "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    kib = subprocess.run([str(python), "-c", probe], check=True, capture_output=True, text=True).stdout
    return round(int(kib) / 1024)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="+", help="make targets, e.g. test tutorial notebook-test")
    parser.add_argument("--env", nargs="*", default=[], metavar="NAME=VALUE", help="extra environment variables")
    parser.add_argument("--label", default=None, help="the key to record under (one target only)")
    parser.add_argument("--output", type=Path, default=REPOSITORY / "results" / "timings.json")
    args = parser.parse_args(argv)
    if args.label and len(args.targets) > 1:
        parser.error("--label names one measurement: give one target")
    env = dict(item.split("=", 1) for item in args.env)
    record = json.loads(args.output.read_text()) if args.output.is_file() else {"commands": {}}
    for target in args.targets:
        label = args.label or f"make {target}"
        print(f"{label} …", file=sys.stderr, flush=True)
        measured = time_target(target, env)
        record["commands"][label] = {**measured, "date": datetime.date.today().isoformat(), "machine": machine()}
        print(f"{label}: {measured['wall_seconds'] / 60:.1f} min, peak {measured['peak_memory_gb']} GB",
              file=sys.stderr)
        write_json(args.output, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
