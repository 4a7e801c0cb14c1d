"""Peak memory and time of the token term L_tok (``token_loss``, forward + backward) per ``max_elements`` setting.

    python benchmarks/token_loss_memory.py [--settings unchunked 2**25 2**23] [--max-gb 16] [--device cpu] [--json FILE]

Shapes default to Long-CLIP-L's (arXiv 2608.18521 App. D.1): B = 128 pairs (the effective batch, as
``cached`` accumulation evaluates L_tok; ``naive`` accumulation only ever sees micro-batches of 16),
256 patches (ViT-L/14 at 224 px), 248 text tokens (Long-CLIP's context, the worst case of
``encode_texts``' trimming to the longest caption), D = 768. The full B × B × patches × tokens similarity
tensor would be 128·128·256·248 ≈ 1.04e9 entries (4.16 GB in fp32); ``token_similarity`` forms it
``chunk`` images at a time, ``chunk = max_elements // (B·patches·tokens)`` (``unchunked``: one chunk).

Each setting runs in a fresh subprocess, so peaks do not mask each other. Memory is the peak *extra*
memory of one forward + backward over what the process holds once the inputs exist: on the CPU the
process's peak RSS (``ru_maxrss``, which sees torch's allocations) minus its RSS after the inputs were
allocated; on CUDA ``torch.cuda.max_memory_allocated`` minus ``memory_allocated`` at that point. It
includes the gradients of the two input tensors (0.2 GB at the default shapes).

On the CPU the workers run with ``MALLOC_MMAP_THRESHOLD_=1048576`` (unless already set), so that every
allocation of 1 MiB or more is its own mapping, returned to the system when freed, and RSS follows the
tensors alive. ``--glibc-dynamic-threshold`` measures with glibc's default instead, i.e. what a training
process holds: glibc then serves allocations up to 32 MiB from its heap, and a chunk just under that size
(``2**23``: one image, 32.5 MB) fragments the heap so much that RSS grows by several GB although the
tensors alive stay below 1 GB.

A setting whose estimated peak exceeds ``--max-gb`` or 80 % of the memory free now (the system's
``MemAvailable``, or the GPU's free memory) is skipped, and the table says so. Every setting's loss and
input gradients are compared with the unchunked run's (or, if that was skipped, with the run that had
the largest chunks). With ``--rounds`` > 1 the settings are interleaved round by round; time is the
median, memory the maximum. Not a test: the numbers depend on the machine, which the script prints.
A CPU run at the defaults takes ~4 min on 2 idle cores (each setting does the same ~5 TFLOP of
products, ~1–1.5 min), about twice that on a busy machine.

``--json FILE`` also records the measurements and their conditions in ``FILE`` under ``default`` (or
``glibc_dynamic_threshold``), keeping the other's record (``results/token_loss_memory.json``, which
``docs/benchmarks.md`` is rendered from).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import torch
from conditions import conditions, machine, write_json

from hnclip_core.losses import _default_chunk_size, token_loss, valid_text_token_mask
from hnclip_core.replication.report import describe_machine

GB = 1e9
DEFAULT_SETTINGS = ("unchunked", "2**25", "2**23")
#: The skip rule's estimate of the peak: this many similarity chunks plus ``INPUT_COPIES`` copies of the
#: two input tensors (their normalised copies, their gradients, one gradient temporary). Measured on the
#: CPU: ~3 chunks when the chunk dominates (unchunked); both numbers are rounded up to err on the safe side.
CHUNK_COPIES = 3.5
INPUT_COPIES = 3
LOGIT_SCALE = 100.0  # Long-CLIP's inverse temperature at initialisation
MMAP_THRESHOLD = 2**20  # bytes; see the module docstring


def _integer(text: str) -> int:
    base, power = text.split("**") if "**" in text else (text, "1")
    return int(base) ** int(power)


def parse_setting(text: str) -> str:
    if text == "unchunked":
        return text
    try:
        value = _integer(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{text!r}: expected 'unchunked', an integer or a power like 2**25") from err
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: max_elements must be positive")
    return text


def max_elements_of(setting: str, batch: int, patches: int, tokens: int) -> int:
    """``unchunked`` = exactly one chunk of all images."""
    return batch * batch * patches * tokens if setting == "unchunked" else _integer(setting)


def make_inputs(batch: int, patches: int, tokens: int, dim: int, device: torch.device):
    """Random patch and word tokens (leaf tensors with gradient) and a valid-token mask of ragged captions."""
    generator = torch.Generator().manual_seed(0)
    image_tokens = torch.randn(batch, patches, dim, generator=generator)
    text_tokens = torch.randn(batch, tokens, dim, generator=generator)
    lengths = torch.randint(tokens // 3, tokens + 1, (batch,), generator=generator)
    lengths[0] = tokens  # the longest caption fills the trimmed context, as after encode_texts
    ids = (torch.arange(tokens)[None] < lengths[:, None]).long()
    mask = valid_text_token_mask(ids)
    return (
        image_tokens.to(device).requires_grad_(),
        text_tokens.to(device).requires_grad_(),
        mask.to(device),
    )


def current_rss() -> int:
    """Resident set size now, in bytes (Linux: /proc/self/statm; elsewhere the peak so far)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return peak_rss()


def peak_rss() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB on Linux


def available_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def worker(args) -> None:
    """One setting, one forward + backward; prints a JSON line and optionally saves loss and gradients."""
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if args.autocast else nullcontext()
    max_elements = max_elements_of(args.worker, args.batch, args.patches, args.tokens)

    def sync():
        if cuda:
            torch.cuda.synchronize(device)

    # Warm-up at a tiny shape: library initialisation is not charged to the measured run.
    small = make_inputs(4, 8, 8, 16, device)
    with autocast:
        token_loss(small[0], small[1], small[2], LOGIT_SCALE, max_elements=max_elements).backward()
    del small
    image_tokens, text_tokens, mask = make_inputs(args.batch, args.patches, args.tokens, args.dim, device)
    sync()
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
        baseline = torch.cuda.memory_allocated(device)
    else:
        baseline = current_rss()
    started = time.perf_counter()
    with autocast:
        loss = token_loss(image_tokens, text_tokens, mask, LOGIT_SCALE, max_elements=max_elements)
    loss.backward()
    sync()
    seconds = time.perf_counter() - started
    peak = torch.cuda.max_memory_allocated(device) if cuda else peak_rss()
    if args.save:
        torch.save(
            {"loss": loss.detach().float().cpu(), "image": image_tokens.grad.float().cpu(),
             "text": text_tokens.grad.float().cpu()},
            args.save,
        )
    print(json.dumps({"extra_bytes": max(0, peak - baseline), "baseline_bytes": baseline, "seconds": seconds,
                      "loss": loss.item()}))


def run_setting(args, setting: str, save: Path | None) -> dict:
    env = dict(os.environ)
    if args.device == "cpu" and not args.glibc_dynamic_threshold:
        env.setdefault("MALLOC_MMAP_THRESHOLD_", str(MMAP_THRESHOLD))
    command = [sys.executable, __file__, "--worker", setting, "--device", args.device, "--batch", str(args.batch),
               "--patches", str(args.patches), "--tokens", str(args.tokens), "--dim", str(args.dim)]
    if args.autocast:
        command.append("--autocast")
    if args.threads:
        command += ["--threads", str(args.threads)]
    if save is not None:
        command += ["--save", str(save)]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        reason = "killed (out of memory?)" if done.returncode < 0 else f"exit {done.returncode}"
        tail = done.stderr.strip().splitlines()[-1:] or [""]
        return {"error": f"{reason} {tail[0]}".strip()}
    return json.loads(done.stdout.strip().splitlines()[-1])


def record_json(args, measured_under: dict, settings, plan, runs, differences, scale, reference) -> None:
    """Merge this run's settings, measurements and conditions into ``args.json`` under its malloc mode."""
    label = "glibc_dynamic_threshold" if args.glibc_dynamic_threshold else "default"
    threshold = None
    if args.device == "cpu":
        threshold = os.environ.get("MALLOC_MMAP_THRESHOLD_",
                                   "glibc default" if args.glibc_dynamic_threshold else str(MMAP_THRESHOLD))
    element = 2 if args.autocast else 4
    b, p, t = args.batch, args.patches, args.tokens
    rows = []
    for setting in settings:
        chunk = plan[setting]["chunk"]
        rows.append({"setting": setting, "max_elements": max_elements_of(setting, b, p, t), "images_per_chunk": chunk,
                     "chunks": -(-b // chunk), "chunk_bytes": chunk * b * p * t * element,
                     "skipped": plan[setting]["skip"], "runs": runs[setting],
                     "max_abs_difference": differences.get(setting)})
    record = json.loads(args.json.read_text()) if args.json.is_file() else {}
    record[label] = {**measured_under, "device": args.device, "batch": b, "patches": p, "tokens": t, "dim": args.dim,
                     "element_bytes": element, "autocast": args.autocast, "rounds": args.rounds,
                     "threads": torch.get_num_threads(), "malloc_mmap_threshold": threshold,
                     "reference": reference, "reference_scale": scale, "settings": rows}
    write_json(args.json, record)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", type=parse_setting, nargs="+", default=list(DEFAULT_SETTINGS),
                        help="max_elements values: 'unchunked' (one chunk), integers or powers; default: unchunked, "
                             "2**25 (token_loss's default: 4 images per chunk at B = 128), 2**23 (1 image)")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--patches", type=int, default=256)
    parser.add_argument("--tokens", type=int, default=248)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--autocast", action="store_true", help="bf16 autocast, as training on CUDA runs")
    parser.add_argument("--max-gb", type=float, default=16.0, help="skip settings estimated to need more")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--glibc-dynamic-threshold", action="store_true",
                        help="CPU: keep glibc's default malloc thresholds (RSS then includes heap fragmentation)")
    parser.add_argument("--threads", type=int, help="torch CPU threads of each worker (default: torch's)")
    parser.add_argument("--json", type=Path, help="also record the measurements in this file")
    parser.add_argument("--note", help="with --json: a remark on the conditions, e.g. what else ran")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--save", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.worker is not None:
        worker(args)
        return

    b, p, t = args.batch, args.patches, args.tokens
    element = 2 if args.autocast else 4
    full = b * b * p * t
    settings = list(dict.fromkeys(args.settings))
    # Largest chunks first, so the reference (the unchunked run, or the largest chunk that runs) comes first.
    settings.sort(key=lambda s: -_default_chunk_size(b, p, t, max_elements_of(s, b, p, t)))
    plan = {}
    limit = args.max_gb * GB
    if args.device == "cpu":
        free = available_bytes()
    else:
        free = torch.cuda.mem_get_info(torch.device(args.device))[0] if args.device.startswith("cuda") else None
    inputs = 4 * b * (p + t) * args.dim
    for setting in settings:
        chunk = _default_chunk_size(b, p, t, max_elements_of(setting, b, p, t))
        estimate = CHUNK_COPIES * chunk * b * p * t * element + INPUT_COPIES * inputs
        skip = None
        if estimate > limit:
            skip = f"skipped: estimated {estimate / GB:.1f} GB > --max-gb {args.max_gb:g}"
        elif free is not None and estimate > 0.8 * free:
            skip = f"skipped: estimated {estimate / GB:.1f} GB > 80% of the {free / GB:.1f} GB free now"
        plan[setting] = {"chunk": chunk, "estimate": estimate, "skip": skip}

    measured_under = conditions(args.note) if args.json else None
    runs = {s: [] for s in settings}
    with tempfile.TemporaryDirectory(prefix="token-loss-memory-") as tmp:
        saved = {}
        for round_index in range(args.rounds):
            for setting in settings:
                if plan[setting]["skip"]:
                    continue
                save = Path(tmp) / f"{len(saved)}.pt" if round_index == 0 else None
                result = run_setting(args, setting, save)
                runs[setting].append(result)
                if save is not None and "error" not in result:
                    saved[setting] = save
                print(f"  round {round_index + 1}, {setting}: "
                      + (result["error"] if "error" in result else
                         f"{result['extra_bytes'] / GB:.2f} GB, {result['seconds']:.1f} s"), file=sys.stderr)
        reference = next(iter(saved), None)
        differences = {}
        if reference is not None:
            ref = torch.load(saved[reference])
            for setting, path in saved.items():
                other = torch.load(path)
                differences[setting] = {key: (other[key] - ref[key]).abs().max().item() for key in ref}
            scale = {key: ref[key].abs().max().item() for key in ref}

    if args.json:
        record_json(args, measured_under, settings, plan, runs, differences, scale if reference else None, reference)
    device = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else "cpu"
    print(f"machine: {describe_machine(machine())}, device {device}")
    print(f"L_tok forward + backward, B = {b}, {p} patches, {t} text tokens, D = {args.dim}, "
          f"{'bf16 autocast' if args.autocast else 'fp32'}, {args.rounds} round(s), one fresh process per setting")
    if args.device == "cpu":
        fallback = "glibc's default (dynamic, up to 32 MiB)" if args.glibc_dynamic_threshold else str(MMAP_THRESHOLD)
        threshold = os.environ.get("MALLOC_MMAP_THRESHOLD_", fallback)
        print(f"memory: peak RSS growth of each worker; MALLOC_MMAP_THRESHOLD_ = {threshold}")
    print(f"full B x B x P x T similarity tensor: {b}*{b}*{p}*{t} = {full:.3g} entries = "
          f"{full * element / GB:.2f} GB ({element} bytes each); a chunked setting forms chunk/B of it at a time")
    header = f"{'setting':<12}{'max_elements':>14}{'img/chunk':>10}{'chunks':>8}{'chunk GB':>10}" \
             f"{'peak extra GB':>15}{'peak/chunk':>12}{'time s':>9}"
    print(header)
    for setting in settings:
        chunk = plan[setting]["chunk"]
        chunk_bytes = chunk * b * p * t * element
        head = (f"{setting:<12}{max_elements_of(setting, b, p, t):>14,}{chunk:>10}{-(-b // chunk):>8}"
                f"{chunk_bytes / GB:>10.2f}")
        good = [r for r in runs[setting] if "error" not in r]
        if plan[setting]["skip"] or not good:
            reason = plan[setting]["skip"] or runs[setting][-1]["error"]
            print(f"{head}   {reason}")
            continue
        extra = max(r["extra_bytes"] for r in good)
        seconds = statistics.median(r["seconds"] for r in good)
        print(f"{head}{extra / GB:>15.2f}{extra / chunk_bytes:>12.1f}{seconds:>9.1f}")
    if reference is None:
        print("no setting ran: nothing to compare")
        return
    print(f"agreement with {'the unchunked run' if reference == 'unchunked' else f'{reference} (largest chunk run)'}"
          f" (max |difference|; reference scale: |loss| {scale['loss']:.4g}, max |grad image| {scale['image']:.3g},"
          f" max |grad text| {scale['text']:.3g}):")
    for setting, diff in differences.items():
        if setting != reference:
            print(f"  {setting:<12} loss {diff['loss']:.3g}   grad image tokens {diff['image']:.3g}"
                  f"   grad text tokens {diff['text']:.3g}")


if __name__ == "__main__":
    main()
