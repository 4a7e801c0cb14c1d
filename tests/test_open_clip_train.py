"""L_HN inside open_clip's own trainer (``hnclip_core.open_clip_train``).

Checked: the exported ``local-dir:`` model is the model hnclip loads; the exported CSV is what open_clip_train's
reader reads; one step of open_clip_train with L_HN has the loss and gradients of hnclip's trainer on the same global
batch, in one process and in two (torchrun, gloo: ``HNClipLoss``'s gather path); ``--gamma 0`` is open_clip_train's
stock ``ClipLoss`` run bit for bit.
"""

import os
import subprocess
import sys
from pathlib import Path

import open_clip
import pytest
import torch

from hnclip_core.accumulation import MicroBatch, accumulated_losses
from hnclip_core.data import load_pairs
from hnclip_core.features import BatchEncoder
from hnclip_core.longclip import load_longclip
from hnclip_core.losses import HNClipTokenLoss
from hnclip_core.open_clip_train import (
    CSV_COLUMNS,
    create_hn_clip_loss,
    export_csv,
    export_model,
    hook_hn_clip_loss,
    main,
)

SPY = Path(__file__).with_name("open_clip_train_spy.py")
#: One optimizer step of 8 pairs on the CPU, in fp32 (open_clip_train's default ``amp`` would be bf16 on a CPU).
STEP = ["--dataset-type", "csv", "--csv-img-key", CSV_COLUMNS[0], "--csv-caption-key", CSV_COLUMNS[1],
        "--epochs", "1", "--lr", "1e-4", "--warmup", "1", "--workers", "0", "--device", "cpu", "--precision", "fp32",
        "--seed", "0", "--report-to", "", "--save-frequency", "1"]


@pytest.fixture(scope="module")
def exported(tiny_checkpoint, tiny_benchmark, tmp_path_factory):
    """The tiny checkpoint as a local-dir model, and 8 of the tiny benchmark's train pairs as open_clip's CSV."""
    root = tmp_path_factory.mktemp("open_clip_train")
    pairs = load_pairs("synthetic", tiny_benchmark, "train")[:8]
    return {"model": export_model(tiny_checkpoint, root / "model"), "csv": export_csv(pairs, root / "train.csv"),
            "pairs": pairs}


def run(command, cwd, **env):
    done = subprocess.run(command, cwd=cwd, env={**os.environ, "OMP_NUM_THREADS": "1", **env}, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def open_clip_train_step(exported, folder: Path, *launcher, gamma: float | None = 0.5, batch: int = 8,
                         extra=()) -> Path:
    """Run one epoch (one step) under ``launcher``; returns its log folder. ``gamma=None``: stock open_clip_train."""
    options = ["--model", f"local-dir:{exported['model']}", "--train-data", str(exported["csv"]),
               "--batch-size", str(batch), "--name", "run", *STEP, *extra]
    ours = [] if gamma is None else ["--gamma", str(gamma)]
    folder.mkdir()
    done = run([*launcher, *ours, *options], cwd=folder, HNCLIP_SPY_DIR=str(folder / "spy"))
    if gamma is not None:  # torch's compiler statistics stay quiet at exit (stock open_clip_train prints them)
        assert "FakeTensor cache stats" not in done.stderr and "TorchDynamo" not in done.stderr
    return folder


def assert_same_gradient(theirs: torch.Tensor, ours: torch.Tensor, name: str) -> None:
    """Equal up to float rounding. hnclip's text encoder cuts the sequences after the batch's longest caption,
    open_clip's runs all 248 positions, and two processes sum in another order: the same sums blocked differently.
    The absolute slack is relative to the tensor's largest entry (measured: ≤ 4e-7 of it beyond 1e-3 relative)."""
    torch.testing.assert_close(theirs, ours, rtol=1e-3, atol=1e-5 * float(ours.abs().max()), msg=name)


def hnclip_step(checkpoint, images, texts, gamma):
    """Loss and gradients of one step of hnclip's trainer (one micro-batch, L_HN alone) on the global batch."""
    model = load_longclip(checkpoint)[0].train()
    loss = HNClipTokenLoss(gamma=gamma, token_weight=0.0)
    micro = MicroBatch(images, texts, torch.arange(len(images)))
    (value,) = list(accumulated_losses(BatchEncoder(model), model.logit_scale, [micro], loss))
    value.backward()
    return value.detach(), {name: p.grad for name, p in model.named_parameters()}


def test_exported_model_is_the_model_hnclip_loads(tiny_checkpoint, exported):
    theirs, _, preprocess = open_clip.create_model_and_transforms(f"local-dir:{exported['model']}")
    ours, our_preprocess, our_tokenizer = load_longclip(tiny_checkpoint)
    assert list(theirs.state_dict()) == list(ours.state_dict())
    for key, value in ours.state_dict().items():
        assert torch.equal(theirs.state_dict()[key], value), key
    image = exported["pairs"][0].load_image()
    assert torch.equal(preprocess(image), our_preprocess(image))
    caption = exported["pairs"][0].caption
    tokenizer = open_clip.get_tokenizer(f"local-dir:{exported['model']}")
    assert torch.equal(tokenizer([caption]), our_tokenizer([caption]))


def test_exported_csv_is_what_open_clip_train_reads(exported):
    from open_clip_train.data import CsvDataset

    dataset = CsvDataset(str(exported["csv"]), transforms=lambda image: image, img_key=CSV_COLUMNS[0],
                         caption_key=CSV_COLUMNS[1], tokenizer=lambda texts: texts)
    assert len(dataset) == len(exported["pairs"])
    for i, pair in enumerate(exported["pairs"]):
        image, caption = dataset[i]
        assert caption == " ".join(pair.caption.split())
        assert image.tobytes() == pair.load_image().tobytes()


def test_command_line_exports(tiny_checkpoint, tiny_benchmark, tmp_path, capsys):
    from hnclip_core.replication.cli import main as cli

    assert cli(["export-model", "--checkpoint", str(tiny_checkpoint), "--output", str(tmp_path / "model")]) == 0
    assert capsys.readouterr().out.strip() == f"local-dir:{tmp_path / 'model'}"
    assert open_clip.create_model(f"local-dir:{tmp_path / 'model'}").visual.image_size == (32, 32)
    assert cli(["export-csv", "--data-root", str(tiny_benchmark), "--split", "test", "--output",
                str(tmp_path / "test.csv")]) == 0
    lines = (tmp_path / "test.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "\t".join(CSV_COLUMNS)
    assert len(lines) == 1 + len(load_pairs("synthetic", tiny_benchmark, "test"))


def test_loss_with_a_loss_of_its_own_is_refused():
    class Args:
        model, distill, siglip, local_loss, gather_with_grad, rank, world_size, horovod = (
            "coca_ViT-B-32", False, False, False, False, 0, 1, False)

    with pytest.raises(SystemExit, match="CoCa"):
        create_hn_clip_loss(Args(), gamma=0.5)
    Args.model, Args.siglip = "ViT-B-32", True
    with pytest.raises(SystemExit, match="--siglip"):
        create_hn_clip_loss(Args(), gamma=0.5)
    with pytest.raises(SystemExit, match="γ|gamma"):
        main(["--gamma", "-1"])


@pytest.mark.slow
def test_one_open_clip_train_step_is_hnclip_s_trainer_step(tiny_checkpoint, exported, tmp_path):
    spy = open_clip_train_step(exported, tmp_path / "one", sys.executable, str(SPY)) / "spy"
    record = torch.load(spy / "rank0.pt", weights_only=True)
    loss, grads = hnclip_step(tiny_checkpoint, record["images"], record["texts"], gamma=0.5)
    torch.testing.assert_close(record["loss"], loss, rtol=1e-5, atol=1e-6)
    assert set(record["grads"]) == set(grads)
    for name, grad in record["grads"].items():
        assert_same_gradient(grad, grads[name], name)


def test_an_open_clip_train_without_the_hook_point_is_refused_by_version():
    from types import SimpleNamespace

    with pytest.raises(SystemExit, match=rf"open_clip {open_clip.__version__}.*no create_loss"):
        hook_hn_clip_loss(SimpleNamespace(train_one_epoch=lambda *args: None), gamma=0.5)


def test_a_loss_built_past_create_loss_stops_the_run_before_its_first_step():
    """As on open_clip's main branch, where the loss is built inside ``create_task``: replacing ``create_loss``
    changes nothing, and the loss that reaches ``train_one_epoch`` is stock ``ClipLoss``."""
    from types import SimpleNamespace

    from open_clip.loss import ClipLoss

    from hnclip_core.losses import HNClipLoss

    trained = []
    trainer = SimpleNamespace(create_loss=lambda args: ClipLoss(),
                              train_one_epoch=lambda model, data, loss, *rest: trained.append(loss))
    hook_hn_clip_loss(trainer, gamma=0.5)
    with pytest.raises(SystemExit, match=r"trains with ClipLoss, not HNClipLoss\(gamma=0.5\)"):
        trainer.train_one_epoch(None, None, ClipLoss(), 0)
    with pytest.raises(SystemExit, match="HNClipLoss"):
        trainer.train_one_epoch(None, None, HNClipLoss(gamma=0.25), 0)
    assert trained == []
    ours = trainer.create_loss(SimpleNamespace(model="ViT-B-32", distill=False, siglip=False, local_loss=False,
                                               gather_with_grad=False, rank=0, world_size=1, horovod=False))
    trainer.train_one_epoch(None, None, ours, 0)
    assert trained == [ours] and ours.gamma == 0.5


@pytest.mark.slow
def test_two_process_open_clip_train_step_is_hnclip_s_step_on_the_global_batch(tiny_checkpoint, exported, tmp_path):
    """torchrun, 2 CPU processes of 4 pairs: with open_clip's ``--local-loss --gather-with-grad`` each process's
    loss covers its own rows against all 8 columns (Ḡ's captions gathered by ``HNClipLoss``), and DDP's averaged
    gradient is the gradient of the global loss."""
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(SPY)]
    folder = open_clip_train_step(exported, tmp_path / "two", *launcher, batch=4,
                                  extra=["--local-loss", "--gather-with-grad", "--training-logs", "two-logs"])
    assert (folder / "two-logs" / "run" / "checkpoints" / "epoch_1.pt").is_file()  # --logs, spelt for torchrun
    spy = folder / "spy"
    records = [torch.load(spy / f"rank{rank}.pt", weights_only=True) for rank in range(2)]
    images = torch.cat([r["images"] for r in records])
    texts = torch.cat([r["texts"] for r in records])
    loss, grads = hnclip_step(tiny_checkpoint, images, texts, gamma=0.5)
    torch.testing.assert_close(sum(r["loss"] for r in records) / 2, loss, rtol=1e-5, atol=1e-6)
    for name, grad in records[0]["grads"].items():
        assert_same_gradient(grad, grads[name], name)
        torch.testing.assert_close(records[1]["grads"][name], grad, rtol=0, atol=0, msg=name)


@pytest.mark.slow
def test_gamma_zero_is_open_clip_train_s_stock_run_bit_for_bit(exported, tmp_path):
    stock = open_clip_train_step(exported, tmp_path / "stock", sys.executable, "-m", "open_clip_train.main",
                                 gamma=None, batch=4)
    ours = open_clip_train_step(exported, tmp_path / "ours", sys.executable, "-m", "hnclip_core.open_clip_train",
                                gamma=0.0, batch=4)
    boosted = open_clip_train_step(exported, tmp_path / "boosted", sys.executable, "-m",
                                   "hnclip_core.open_clip_train", gamma=0.5, batch=4)

    def weights(folder):
        return torch.load(folder / "logs" / "run" / "checkpoints" / "epoch_1.pt", weights_only=True)["state_dict"]

    stock_weights, our_weights, boosted_weights = weights(stock), weights(ours), weights(boosted)
    assert list(our_weights) == list(stock_weights)
    for key, value in stock_weights.items():
        assert torch.equal(our_weights[key], value), key
    assert not all(torch.equal(boosted_weights[key], value) for key, value in stock_weights.items())
