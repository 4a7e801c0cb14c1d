"""The fine-tuning loop (train.py): determinism, resume, the monitor's neutrality, frozen positions,
outputs on disk."""

import csv
import json

import pytest
import torch

from hnclip_core import train as train_module
from hnclip_core.longclip import KEEP_POSITIONS, load_longclip, load_longclip_state_dict
from hnclip_core.train import TrainConfig, epoch_batches, shuffled_batches, train, training_subset

#: Table 3b's objectives as (γ, λ) of the loss
OBJECTIVES = {"clip": {"gamma": 0.0, "token_weight": 0.0}, "hn": {"gamma": 0.5, "token_weight": 0.0},
              "hn+tok": {"gamma": 0.5, "token_weight": 1.0}}


def tiny_config(tiny_checkpoint, tiny_benchmark, tmp_path, objective="hn+tok", **changes):
    values = dict(
        checkpoint=str(tiny_checkpoint), dataset="synthetic", data_root=str(tiny_benchmark), epochs=2,
        micro_batch_size=4, accumulation_steps=4, lr=1e-3, warmup_steps=2, eval_batch_size=16,
        eval_ks=(1, 5), output_dir=str(tmp_path / "run"), progress=False, **OBJECTIVES[objective],
    )
    values.update(changes)
    return TrainConfig(**values)


def final_weights(output_dir):
    state = torch.load(output_dir / "training_state.pt", weights_only=True)
    return state["model"]


def strip_timing(history):
    return [{k: v for k, v in row.items() if k != "seconds"} for row in history]


def test_two_epoch_run_is_bit_for_bit_repeatable_and_writes_results(tiny_checkpoint, tiny_benchmark, tmp_path):
    first = train(tiny_config(tiny_checkpoint, tiny_benchmark, tmp_path / "a"))
    second = train(tiny_config(tiny_checkpoint, tiny_benchmark, tmp_path / "b"))
    assert strip_timing(first["history"]) == strip_timing(second["history"])
    a, b = final_weights(tmp_path / "a" / "run"), final_weights(tmp_path / "b" / "run")
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert [row["epoch"] for row in first["history"]] == [0, 1, 2]
    assert first["best"]["epoch"] in (1, 2) and first["last"]["epoch"] == 2
    written = json.loads((tmp_path / "a" / "run" / "history.json").read_text())
    assert written["last"]["mean_r1"] == first["last"]["mean_r1"]
    csv_lines = (tmp_path / "a" / "run" / "history.csv").read_text().splitlines()
    assert len(csv_lines) == 4 and "t2i_r1" in csv_lines[0]
    # training moved the weights, except Long-CLIP's frozen positional rows 0-19
    initial = load_longclip_state_dict(tiny_checkpoint)
    assert not torch.equal(a["text_projection"], initial["text_projection"])
    assert torch.equal(a["positional_embedding"][:KEEP_POSITIONS], initial["positional_embedding"][:KEEP_POSITIONS])
    assert not torch.equal(a["positional_embedding"][KEEP_POSITIONS:], initial["positional_embedding"][KEEP_POSITIONS:])


def test_resume_after_a_killed_run_reproduces_the_uninterrupted_history(
    tiny_checkpoint, tiny_benchmark, tmp_path, monkeypatch
):
    config = tiny_config(tiny_checkpoint, tiny_benchmark, tmp_path / "full", objective="hn", epochs=3)
    uninterrupted = train(config)

    killed = tiny_config(tiny_checkpoint, tiny_benchmark, tmp_path / "killed", objective="hn", epochs=3)
    original = train_module._Run.train_epoch

    def dies_in_epoch_3(self, epoch):
        if epoch == 3:
            raise KeyboardInterrupt("simulated kill")
        return original(self, epoch)

    monkeypatch.setattr(train_module._Run, "train_epoch", dies_in_epoch_3)
    with pytest.raises(KeyboardInterrupt):
        train(killed)
    monkeypatch.setattr(train_module._Run, "train_epoch", original)
    resumed = train(killed, resume=True)
    assert strip_timing(resumed["history"]) == strip_timing(uninterrupted["history"])
    a, b = final_weights(tmp_path / "full" / "run"), final_weights(tmp_path / "killed" / "run")
    assert all(torch.equal(a[k], b[k]) for k in a)
    with pytest.raises(ValueError, match="different configuration"):
        train(killed, resume=True, gamma=0.25)


def cosines(run_dir):
    """The gradient cosines of a run's measurements, from the monitor's CSV."""
    with open(run_dir / "gradient_measurements.csv") as handle:
        return [float(row["grad_cosine"]) for row in csv.DictReader(handle)]


def test_gradient_monitor_does_not_change_the_trajectory(tiny_checkpoint, tiny_benchmark, tmp_path):
    plain = train(tiny_config(tiny_checkpoint, tiny_benchmark, tmp_path / "plain", epochs=1, objective="clip"))
    monitored = train(
        tiny_config(tiny_checkpoint, tiny_benchmark, tmp_path / "mon", epochs=1, objective="clip", monitor_every=1)
    )
    assert strip_timing(plain["history"]) == strip_timing(monitored["history"])
    a, b = final_weights(tmp_path / "plain" / "run"), final_weights(tmp_path / "mon" / "run")
    assert all(torch.equal(a[k], b[k]) for k in a)
    (summary,) = monitored["diagnostics"]
    assert summary["epoch"] == 1 and summary["measurements"] == 3  # 48 pairs // 16 = 3 steps
    assert 0.0 <= summary["solved_clip"] <= 1.0 and summary["cosine_mean"] == summary["cosine_mean"]
    trainable = sum(p.numel() for p in load_longclip(tiny_checkpoint)[0].parameters())
    assert summary["cosines"] == 3 and summary["parameters"] <= trainable  # frozen positions are not spanned
    assert summary["cosine_positive"] == sum(c > 0 for c in cosines(tmp_path / "mon" / "run")) / 3
    # an InfoNCE run (γ = 0) is still compared with the boosted loss at the monitor's γ = 0.5
    assert summary["median_loss_hn"] > summary["median_loss_clip"]
    rows = (tmp_path / "mon" / "run" / "gradient_measurements.csv").read_text().splitlines()
    assert len(rows) == 4 and rows[0].startswith("step,epoch,loss_clip")


def test_frozen_margin_source_and_fraction(tiny_checkpoint, tiny_benchmark, tmp_path):
    result = train(
        tiny_config(tiny_checkpoint, tiny_benchmark, tmp_path, epochs=1, objective="hn", margin_source="frozen",
                    train_fraction=0.5, micro_batch_size=8, accumulation_steps=2)
    )
    assert result["last"]["epoch"] == 1 and result["config"]["margin_source"] == "frozen"


def test_subsets_are_identical_across_methods_and_nested():
    small, large = training_subset(100, 0.2, seed=1), training_subset(100, 0.5, seed=1)
    assert torch.equal(small, training_subset(100, 0.2, seed=1))
    assert set(small.tolist()) <= set(large.tolist()) and len(small) == 20
    assert not torch.equal(small, training_subset(100, 0.2, seed=2))
    batches = epoch_batches(50, 16, seed=0, epoch=1)
    assert len(batches) == 3 and all(len(b) == 16 for b in batches)
    assert not torch.equal(batches[0], epoch_batches(50, 16, seed=0, epoch=2)[0])


def test_shuffled_batches_reshuffle_one_generator_like_a_drop_last_loader():
    generator = torch.Generator().manual_seed(4)
    batches = list(shuffled_batches(10, 4, generator, num_batches=5))  # two batches per epoch, two left over
    expected = torch.Generator().manual_seed(4)
    orders = [torch.randperm(10, generator=expected) for _ in range(3)]
    assert all(torch.equal(b, order[start : start + 4])
               for b, (order, start) in zip(batches, [(o, s) for o in orders for s in (0, 4)][:5], strict=True))
    # one epoch by default; epoch_batches is that epoch under a generator seeded by (seed, epoch)
    assert len(list(shuffled_batches(10, 4, torch.Generator()))) == 2
    one_epoch = shuffled_batches(50, 16, torch.Generator().manual_seed(3 * 100_003 + 2))
    assert all(torch.equal(a, b) for a, b in zip(one_epoch, epoch_batches(50, 16, seed=3, epoch=2), strict=True))
    assert epoch_batches(5, 8, seed=0, epoch=0) == []
    with pytest.raises(ValueError, match="cannot be drawn"):
        list(shuffled_batches(5, 8, torch.Generator(), num_batches=1))
    with pytest.raises(ValueError, match="at least 1"):
        shuffled_batches(5, 0, torch.Generator())


def test_config_validation():
    with pytest.raises(ValueError, match="checkpoint is required"):
        TrainConfig()
    with pytest.raises(ValueError, match="gamma and token_weight must be"):
        TrainConfig(checkpoint="x.pt", gamma=-0.5)
    with pytest.raises(ValueError, match="margin_source"):
        TrainConfig(checkpoint="x.pt", margin_source="ema")
    with pytest.raises(ValueError, match="unknown TrainConfig field"):
        TrainConfig.from_dict({"checkpoint": "x.pt", "objective": "clip"})
    with pytest.raises(ValueError, match="resume needs"):
        TrainConfig(checkpoint="x.pt", resume=True)


def test_nan_loss_stops_training_and_names_the_step(tiny_checkpoint, tiny_benchmark, tmp_path, monkeypatch):
    def nan_losses(*args, **kwargs):
        yield torch.tensor(float("nan"), requires_grad=True)

    monkeypatch.setattr(train_module, "accumulated_losses", nan_losses)
    with pytest.raises(train_module.TrainingDiverged, match=r"epoch 1, optimizer step 0"):
        train(tiny_config(tiny_checkpoint, tiny_benchmark, tmp_path, epochs=1))


def test_unreadable_image_stops_training_naming_the_file_or_is_skipped(tiny_checkpoint, tiny_benchmark, tmp_path):
    import shutil

    from hnclip_core.data import DatasetLayoutError

    bench = tmp_path / "bench"
    shutil.copytree(tiny_benchmark, bench)
    (bench / "images" / "train_00005.png").write_bytes(b"not a png")
    with pytest.raises(DatasetLayoutError, match="train_00005.png"):
        train(tiny_config(tiny_checkpoint, bench, tmp_path / "strict", epochs=1))
    result = train(tiny_config(tiny_checkpoint, bench, tmp_path / "skip", epochs=1, skip_bad_images=True))
    assert [row["epoch"] for row in result["history"]] == [0, 1]


def test_fixed_logit_scale_stays_fixed_and_history_records_caption_geometry(tiny_checkpoint, tiny_benchmark,
                                                                            tmp_path):
    result = train(tiny_config(tiny_checkpoint, tiny_benchmark, tmp_path, logit_scale=25.0, epochs=1))
    assert result["history"][1]["logit_scale"] == pytest.approx(25.0)
    learned = train(tiny_config(tiny_checkpoint, tiny_benchmark, tmp_path / "learned", epochs=1))
    assert learned["history"][1]["logit_scale"] != pytest.approx(100.0, abs=1e-6)  # learned: it moved
    for row in result["history"]:
        assert -1 <= row["caption_mean_similarity"] < row["caption_hardest_similarity"] <= 1
    with pytest.raises(ValueError, match="logit_scale must be positive"):
        tiny_config(tiny_checkpoint, tiny_benchmark, tmp_path, logit_scale=0.0)
