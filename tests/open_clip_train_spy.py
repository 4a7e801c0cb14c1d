"""``python -m hnclip_core.open_clip_train`` with a recorder attached (run by tests/test_open_clip_train.py).

Runs the launcher unchanged on its command line and writes ``$HNCLIP_SPY_DIR/rank<r>.pt`` with what open_clip_train
did in its first optimizer step on this process: the model inputs (images, token ids), the loss it computed and the
parameter gradients the optimizer was about to apply (after DistributedDataParallel's averaging). The test then
recomputes that step with hnclip's own trainer code on the same global batch.
"""

import os
import sys
from pathlib import Path

import open_clip_train.main as open_clip_trainer
import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

import hnclip_core.open_clip_train as launcher

RECORD = {}
OUTPUT = Path(os.environ["HNCLIP_SPY_DIR"])
RANK = int(os.environ.get("RANK", "0"))
create_model = open_clip_trainer.create_model_and_transforms
create_loss = launcher.create_hn_clip_loss


def recording_model(*args, **kwargs):
    model, *transforms = create_model(*args, **kwargs)
    RECORD["names"] = {id(p): name for name, p in model.named_parameters()}

    def record_inputs(module, inputs):
        RECORD.setdefault("images", inputs[0].detach().clone())
        RECORD.setdefault("texts", inputs[1].detach().clone())

    model.register_forward_pre_hook(record_inputs)
    return (model, *transforms)


def recording_loss(*args, **kwargs):
    loss = create_loss(*args, **kwargs)
    forward = loss.forward

    def record(*inputs, **options):
        value = forward(*inputs, **options)
        if "loss" not in RECORD:
            RECORD["loss"] = (sum(value.values()) if isinstance(value, dict) else value).detach().clone()
        return value

    loss.forward = record
    return loss


def record_gradients(optimizer, args, kwargs):
    if "grads" in RECORD:
        return
    RECORD["grads"] = {RECORD["names"][id(p)]: p.grad.detach().clone()
                       for group in optimizer.param_groups for p in group["params"] if p.grad is not None}
    OUTPUT.mkdir(parents=True, exist_ok=True)
    torch.save({key: RECORD[key] for key in ("images", "texts", "loss", "grads")}, OUTPUT / f"rank{RANK}.pt")


open_clip_trainer.create_model_and_transforms = recording_model
launcher.create_hn_clip_loss = recording_loss
register_optimizer_step_pre_hook(record_gradients)

if __name__ == "__main__":
    sys.exit(launcher.main())
