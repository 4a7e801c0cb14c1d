"""``python -m hnclip_core`` maps its options onto TrainConfig (__main__.py)."""

import json

import pytest

from hnclip_core.replication.cli import build_parser, main


def test_every_config_field_is_an_option_with_help():
    parser = build_parser()
    args = parser.parse_args(["train", "--objective", "clip", "--gamma", "0.25", "--eval-ks", "1", "5", "--resume"])
    assert args.objective == "clip" and args.gamma == 0.25 and args.eval_ks == [1, 5] and args.resume is True
    assert args.lr == 2e-6 and args.micro_batch_size == 16 and args.accumulation_steps == 8


def test_train_command_runs_and_prints_results(tiny_checkpoint, tiny_benchmark, tmp_path, capsys):
    code = main([
        "train", "--checkpoint", str(tiny_checkpoint), "--data-root", str(tiny_benchmark), "--epochs", "1",
        "--micro-batch-size", "8", "--accumulation-steps", "2", "--objective", "hn", "--eval-ks", "1",
        "--output-dir", str(tmp_path / "run"), "--no-progress",
    ])
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["last"]["epoch"] == 1 and "t2i_r1" in printed["best"]
    assert (tmp_path / "run" / "history.json").is_file()


def test_bad_values_are_reported(tiny_checkpoint):
    with pytest.raises(ValueError, match="unknown objective"):
        main(["train", "--checkpoint", str(tiny_checkpoint), "--objective", "infonce"])
    with pytest.raises(SystemExit):
        main(["train", "--epochs", "many"])
