"""``python -m hnclip_core`` maps its options onto TrainConfig (hnclip_core/cli.py, the core's commands;
replication/cli.py adds the harness's calibrate on top)."""

import json

import pytest

from hnclip_core.cli import build_parser, main
from hnclip_core.toy import TOY_FINETUNE


def test_every_config_field_is_an_option_with_help():
    parser = build_parser()
    args = parser.parse_args(["train", "--gamma", "0", "--token-weight", "0", "--eval-ks", "1", "5", "--resume"])
    assert args.gamma == 0 and args.token_weight == 0 and args.eval_ks == [1, 5] and args.resume is True
    # options not given stay unset here; TrainConfig's defaults (the paper's recipe) apply
    assert args.lr is None and args.micro_batch_size is None
    assert "(default: 2e-06)" in parser._subparsers._group_actions[0].choices["train"].format_help()


def test_train_command_runs_and_prints_results(tiny_checkpoint, tiny_benchmark, tmp_path, capsys):
    code = main([
        "train", "--checkpoint", str(tiny_checkpoint), "--dataset", "synthetic", "--data-root", str(tiny_benchmark),
        "--epochs", "1", "--micro-batch-size", "8", "--accumulation-steps", "2", "--token-weight", "0",
        "--eval-ks", "1", "--output-dir", str(tmp_path / "run"), "--no-progress",
    ])
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["last"]["epoch"] == 1 and "t2i_r1" in printed["best"]
    history = json.loads((tmp_path / "run" / "history.json").read_text())
    assert history["config"]["gamma"] == 0.5 and history["config"]["token_weight"] == 0.0
    assert history["config"]["lr"] == 2e-6  # the paper's recipe for a real checkpoint


def test_the_toy_checkpoint_takes_the_toy_preset(monkeypatch):
    import hnclip_core.train

    seen = {}

    def record(config):
        seen["config"] = config
        return {"zero_shot": {}, "best": {}, "last": {}}

    monkeypatch.setattr(hnclip_core.train, "train", record)
    main(["train", "--checkpoint", "toy", "--epochs", "1"])
    config = seen["config"]
    assert config.dataset == "synthetic" and config.lr == TOY_FINETUNE["lr"] and config.epochs == 1
    assert config.checkpoint.endswith(".pt")


def test_bad_values_are_reported(tiny_checkpoint):
    with pytest.raises(ValueError, match="checkpoint is required"):
        main(["train", "--dataset", "docci"])
    with pytest.raises(ValueError, match="gamma and token_weight must be"):
        main(["train", "--checkpoint", str(tiny_checkpoint), "--gamma", "-1"])
    with pytest.raises(SystemExit):
        main(["train", "--epochs", "many"])


def test_pretrain_toy_variants_change_only_what_they_name():
    from hnclip_core.cli import toy_recipe
    from hnclip_core.toy import TOY_RECIPE

    parser = build_parser()
    assert toy_recipe(parser.parse_args(["pretrain-toy"])) == TOY_RECIPE
    gap = toy_recipe(parser.parse_args(["pretrain-toy", "--detail-rate", "0.1", "--fixed-logit-scale",
                                        "--dense-alt-share", "0"]))
    assert (gap.detail_rate, gap.learn_logit_scale, gap.dense_alt_share) == (0.1, False, 0.0)
    assert gap.digest() != TOY_RECIPE.digest() and gap.clip_steps == TOY_RECIPE.clip_steps
    grounded = toy_recipe(parser.parse_args(["pretrain-toy", "--long-detail-rate", "0.1"]))
    assert (grounded.stage_detail_rate(1), grounded.stage_detail_rate(2)) == (1.0, 0.1)
    assert (gap.stage_detail_rate(1), gap.stage_detail_rate(2)) == (0.1, 0.1)
    args = parser.parse_args(["pretrain-toy", "--token-steps", "300", "--token-weight", "0.3", "--continue-from",
                              "base.pt"])
    tokens = toy_recipe(args)
    assert (tokens.token_steps, tokens.token_weight, args.continue_from) == (300, 0.3, "base.pt")
    uncrowded = toy_recipe(parser.parse_args(["pretrain-toy", "--caption-cone", "0", "--target-probe-every", "0"]))
    assert (uncrowded.caption_cone, uncrowded.target_probe_every) == (0.0, 0)
    assert tokens.without_token_stage() == TOY_RECIPE.without_token_stage()


def test_a_harness_command_without_the_lab_extra_names_it():
    from hnclip_core.replication.cli import LAB_INSTALL, needs_lab

    with pytest.raises(SystemExit) as stopped, needs_lab("calibrate"):
        raise ModuleNotFoundError("No module named 'jsonschema'", name="jsonschema")
    assert "jsonschema is not installed" in str(stopped.value) and LAB_INSTALL in str(stopped.value)
    assert LAB_INSTALL == "pip install 'hnclip-core[lab]'"
    # a module of the package itself missing is a broken install: the error stays as it is
    with pytest.raises(ModuleNotFoundError), needs_lab("calibrate"):
        raise ModuleNotFoundError("No module named 'hnclip_core.gone'", name="hnclip_core.gone")


def test_importing_the_command_line_or_the_experiments_registers_no_dataset():
    """The embedded benchmark joins load_pairs' names when a command or an Experiment runs, not on import."""
    import subprocess
    import sys

    probe = ("import hnclip_core.cli, hnclip_core.replication.cli, hnclip_core.replication.experiment\n"
             "from hnclip_core.data import SPLITS\n"
             "assert 'synthetic' not in SPLITS, sorted(SPLITS)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_whole_command_line_is_the_cores_with_calibrate_added():
    from hnclip_core.cli import COMMANDS
    from hnclip_core.replication.cli import build_parser as whole

    def commands(parser):
        return set(parser._subparsers._group_actions[0].choices)

    assert commands(build_parser()) == set(COMMANDS) and commands(whole()) == {*COMMANDS, "calibrate"}
    with pytest.raises(SystemExit):  # the core's own parser knows no calibrate
        build_parser().parse_args(["calibrate", "--recheck"])
