"""Each TrainConfig field declares its role in a run once (train.FIELD_ROLES); every list of fields is derived from
it. A field added by one edit, to TrainConfig alone, is seen by the command line, the run cache's identity, the shared
zero-shot evaluation and resume's check; the tidy table's config columns are identity fields."""

import dataclasses

import pytest

from hnclip_core import cli as cli_module
from hnclip_core import train as train_module
from hnclip_core.replication import experiment as experiment_module
from hnclip_core.replication import tidy
from hnclip_core.replication.objectives import objective_parameters
from hnclip_core.train import FIELD_ROLES, IDENTITY_ROLES, TrainConfig, changed_identity, config_fields


def test_every_field_declares_one_known_role():
    assert {f.metadata["role"] for f in dataclasses.fields(TrainConfig)} == set(FIELD_ROLES)
    assert set(config_fields(*FIELD_ROLES)) == {f.name for f in dataclasses.fields(TrainConfig)}
    assert "eval_batch_size" in config_fields("runtime") and "gamma" in config_fields("training")
    with pytest.raises(ValueError, match="unknown role"):
        config_fields("identity")
    with pytest.raises(ValueError, match="role must be one of"):
        train_module._option(0, "a knob", "sometimes")


@pytest.fixture
def config_with_a_new_field(monkeypatch):
    """TrainConfig with one more field, ``new_knob``, a training option: the single edit a new setting takes."""
    extended = dataclasses.make_dataclass(
        "TrainConfig", [("new_knob", float, train_module._option(0.0, "a knob added by a test", "training"))],
        bases=(TrainConfig,))
    for module in (train_module, cli_module, experiment_module):
        monkeypatch.setattr(module, "TrainConfig", extended)
    return extended


def test_a_new_field_is_an_option_in_its_role_group(config_with_a_new_field):
    parser = cli_module.build_parser()
    assert parser.parse_args(["train", "--checkpoint", "a.pt", "--new-knob", "2"]).new_knob == 2.0
    train_parser = next(a for a in parser._subparsers._group_actions[0].choices.values() if a.prog.endswith("train"))
    group = next(g for g in train_parser._action_groups if g.title == "training options")
    assert "--new-knob" in [option for action in group._group_actions for option in action.option_strings]


def test_a_new_field_is_part_of_the_run_identity_and_leaves_the_zero_shot_shared(config_with_a_new_field):
    assert "new_knob" in config_fields(*IDENTITY_ROLES)

    def settings(**changes):
        config = config_with_a_new_field(checkpoint="a.pt", **objective_parameters("hn"), **changes)
        return {**dataclasses.asdict(config), "objective": "hn", "framework": "longclip",
                "caption_augmentation": "none", "segment_file": None}

    assert experiment_module.run_directory("runs", settings(new_knob=1.0)) != \
        experiment_module.run_directory("runs", settings())
    assert experiment_module._zero_shot_identity(settings(new_knob=1.0)) == \
        experiment_module._zero_shot_identity(settings())
    # a runtime field changes neither
    assert experiment_module.run_directory("runs", settings(eval_batch_size=8)) == \
        experiment_module.run_directory("runs", settings())


def test_resume_refuses_a_changed_identity_field_and_accepts_a_runtime_one(config_with_a_new_field):
    saved = dataclasses.asdict(config_with_a_new_field(checkpoint="a.pt"))
    saved["eval_ks"] = list(saved["eval_ks"])  # as it comes back from the state file
    assert changed_identity(saved, config_with_a_new_field(checkpoint="a.pt", new_knob=1.0)) == ["new_knob"]
    # Experiment.run(eval_batch_size=32) maps an interrupted run to its own folder; its resume must go on.
    assert changed_identity(saved, config_with_a_new_field(checkpoint="a.pt", eval_batch_size=32,
                                                           output_dir="elsewhere", device="cpu")) == []
    assert changed_identity(saved, config_with_a_new_field(checkpoint="a.pt", epochs=3)) == ["epochs"]


def test_the_tidy_tables_config_columns_are_identity_fields():
    labels = {"source", "study", "run", "objective", "framework", "epoch"}
    assert set(tidy.PARAMETERS) - labels == set(tidy._CONFIG_PARAMETERS)
    assert set(tidy._CONFIG_PARAMETERS) <= set(config_fields(*IDENTITY_ROLES))
    # every parameter a study's keys name is a column
    assert {name for names in tidy.STUDY_KEYS.values() for name in names} <= set(tidy.PARAMETERS)
    row = tidy._parameters({"gamma": 0.5, "token_weight": 0.0, "seed": 3, "margin_source": "frozen",
                            "dataset": "synthetic", "lr": 1e-3})
    assert (row["objective"], row["seed"], row["margin_source"], row["eval_dataset"]) == ("hn", 3, "frozen",
                                                                                          "synthetic")
