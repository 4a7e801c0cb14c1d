"""Pretraining the embedded toy Long-CLIP on a stream of fresh scenes in many caption voices.

The two stages of the real model (arXiv 2608.18521 App. D.1 fine-tunes Long-CLIP-L = OpenAI CLIP + a
long-caption stage):

1. **CLIP stage** — from scratch, context 77, InfoNCE on one-line alt-texts
   (:func:`~hnclip_core.toy.voices.varied_short_caption`) of random scenes, s fixed at 100 from the start
   (a narrow text cone, as CLIP's).
2. **Long-CLIP stage** — the positional table stretched 77 → 248, rows 0–19 frozen, training continued
   on long captions (:func:`~hnclip_core.toy.voices.varied_long_caption`, with a share of ``dense-alt``)
   of other random scenes.
3. **Token stage** (where ``token_steps`` > 0) — the same long captions of new scenes, with FILIP's token term
   (L_tok of Eq. 3) added to InfoNCE at a small weight and s held, from the Long-CLIP stage's weights as
   stored (fp16): a large CLIP's word tokens and patches come out of pretraining partly aligned, a small toy's
   out of global losses alone do not (``results/README.md``). ``continue_from`` runs this stage alone from a toy
   of the first two stages.

Every step draws a new batch of scenes from ``numpy.random.default_rng([seed, stage, step])`` — the
generator is free, so no scene is seen twice and a resumed run draws exactly the batches an
uninterrupted one would. Scenes have no near-duplicate families, and the benchmark's own caption
templates (``dense``) are never used. The state (model, optimiser, scheduler, traces) is saved every
``save_every`` steps next to the output, so ``pretrain(..., resume=True)`` continues after an
interruption; a probe of the zero-shot regime (:mod:`hnclip_core.toy.regime`) is recorded every
``probe_every`` Long-CLIP-stage steps.
"""

from __future__ import annotations

import dataclasses
import json
import math
import platform
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import open_clip
import torch
import torch.nn.functional as F
from open_clip.loss import ClipLoss
from tqdm.auto import tqdm

from ..features import encode_batch
from ..files import config_digest, file_sha256, write_atomically, write_text_atomically
from ..longclip import (
    LONG_CONTEXT,
    ClipArchitecture,
    build_clip,
    keep_first_positions_frozen,
    load_longclip,
    longclip_param_groups,
    save_longclip,
    stretch_positional_embedding,
)
from ..losses import token_loss, valid_text_token_mask
from ..train import cosine_with_warmup
from .synthetic import SyntheticConfig, describe_scene, render_scene, sample_scene
from .voices import varied_long_caption, varied_short_caption

__all__ = ["PretrainRecipe", "pretrain"]


@dataclass(frozen=True)
class PretrainRecipe:
    """Everything that determines the pretrained weights (same recipe, same machine → same file)."""

    architecture: ClipArchitecture
    seed: int = 0
    clip_steps: int = 1200
    clip_lr: float = 1e-3
    long_steps: int = 2400
    long_lr: float = 5e-4
    logit_scale: float = 100.0
    batch_size: int = 128
    weight_decay: float = 0.1
    warmup_steps: int = 100
    dense_alt_share: float = 0.25  #: share of Long-CLIP-stage captions in the ``dense-alt`` voice
    min_objects: int = 3
    max_objects: int = 5
    image_size: int = 64
    #: Probability that a pretraining caption names an object's size, its place, a relation (the detail gap
    #: of :mod:`.voices`; 1 = always, as the benchmark's captions do).
    detail_rate: float = 1.0
    #: The same probability for the Long-CLIP stage's captions alone (None: ``detail_rate``). A grounded CLIP
    #: stage (1) under a gapped Long-CLIP stage (< 1) teaches the image encoder what the long-caption pathway
    #: is never tied to: headroom that fine-tuning on dense captions can reach.
    long_detail_rate: float | None = None
    #: False holds s at ``logit_scale`` throughout (CLIP's clamp value), so margins stop widening once
    #: batches are solved; True learns it from there (clamped at 100).
    learn_logit_scale: bool = True
    #: A third stage (0 steps: none): Long-CLIP-stage captions of new scenes, InfoNCE plus ``token_weight`` × the
    #: token term of Eq. 3 (L_tok, FILIP's late interaction), s held where stage 2 left it. Global pretraining
    #: alone leaves the toy's word tokens and patches unaligned, so that L_tok would have to align them from
    #: scratch during fine-tuning; a large CLIP starts with them partly aligned. The stage starts from stage 2's
    #: weights as stored (fp16, :func:`stored_precision`), so it can continue a shipped toy of stages 1–2.
    token_steps: int = 0
    token_weight: float = 0.0
    token_lr: float = 1e-4
    token_warmup_steps: int = 20
    #: α², the share of every caption embedding's squared norm held on one axis that images never use (0: none): a
    #: *caption cone*, as a real CLIP's captions share a common direction (DOCCI pairwise 0.84) across a modality gap.
    #: Held from the first step (:func:`hold_caption_cone`), so the image–text margins are learned under it.
    caption_cone: float = 0.0
    #: > 0: probe the zero-shot regime on the benchmark's *validation* split every this many Long-CLIP-stage steps
    #: and end that stage at the first probe that meets :data:`~hnclip_core.toy.regime.REGIME_TARGETS`.
    target_probe_every: int = 0

    #: Fields added after the shipped recipe; left out of the record (and the digest) at these values, so a
    #: recipe that does not use them keeps its digest and its shipped file name.
    LATER_FIELDS = {"detail_rate": 1.0, "learn_logit_scale": True, "long_detail_rate": None, "token_steps": 0,
                    "token_weight": 0.0, "token_lr": 1e-4, "token_warmup_steps": 20, "caption_cone": 0.0,
                    "target_probe_every": 0}

    def as_dict(self) -> dict:
        record = dataclasses.asdict(self)
        record["architecture"] = self.architecture.as_dict()
        for name, default in self.LATER_FIELDS.items():
            if record[name] == default:
                del record[name]
        return record

    def stage_detail_rate(self, stage: int) -> float:
        """The detail rate of stage 1 (CLIP) or 2 (Long-CLIP)."""
        return self.long_detail_rate if stage == 2 and self.long_detail_rate is not None else self.detail_rate

    def digest(self) -> str:
        return config_digest(self.as_dict(), 10)

    def without_token_stage(self) -> PretrainRecipe:
        """The recipe of stages 1–2 alone (a toy that :func:`pretrain` can continue with the token stage)."""
        return dataclasses.replace(self, **{k: PretrainRecipe.LATER_FIELDS[k] for k in TOKEN_STAGE_FIELDS})


TOKEN_STAGE_FIELDS = ("token_steps", "token_weight", "token_lr", "token_warmup_steps")
#: Tensors a shipped toy keeps in fp32 (fp16 would round s = 100 up to 100.03).
FP32_KEYS = ("logit_scale",)


def stored_precision(model) -> None:
    """Round ``model``'s weights, in place, to what the shipped file stores: fp16, except :data:`FP32_KEYS`."""
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            if name not in FP32_KEYS and tensor.is_floating_point():
                tensor.copy_(tensor.half().float())


def cone_channel(model) -> int:
    """The channel of ``ln_final`` that carries the caption cone's constant (the last one)."""
    return model.ln_final.weight.shape[0] - 1


@torch.no_grad()
def hold_caption_cone(model, text_features: torch.Tensor, share: float) -> None:
    """Put ``share`` (α²) of a typical caption embedding's squared norm on the last embedding axis, which the images
    never use, by editing ``model``'s weights in place (so the model stays a plain CLIP in Long-CLIP's format):

    * channel *j* of ``ln_final`` gets gain 0 and bias c, so it outputs the constant c for every caption;
    * ``text_projection`` maps channel *j* to the last axis alone, and no other channel to it;
    * ``visual.proj`` maps nothing to the last axis.

    A caption then embeds as [V, c] with V its learned part, and an image as [v, 0]: every image–text cosine is
    β·cos(v, V) with β² = |V|² / (|V|² + c²), and two captions meet at β²·cos(V, V') + α². c is set from
    ``text_features`` (this step's, unnormalised) so that α² holds at their root-mean-square |V|: the model cannot
    leave the cone by growing V, and the margins it needs at s·β are learned from the first step.
    """
    j = cone_channel(model)
    learned = text_features[:, :-1].float().pow(2).sum(dim=1).mean().sqrt()
    model.ln_final.weight[j] = 0.0
    model.ln_final.bias[j] = float(learned * math.sqrt(share / (1 - share)))
    model.text_projection[:, -1] = 0.0
    model.text_projection[j] = 0.0
    model.text_projection[j, -1] = 1.0
    model.visual.proj[:, -1] = 0.0


def scene_batch(recipe: PretrainRecipe, stage: int, step: int, preprocess) -> tuple[torch.Tensor, list[str]]:
    """The images and captions of one training step: ``batch_size`` new scenes, each captioned afresh."""
    rng = np.random.default_rng([recipe.seed, stage, step])
    config = SyntheticConfig(image_size=recipe.image_size, min_objects=recipe.min_objects,
                             max_objects=recipe.max_objects)
    images, captions = [], []
    for _ in range(recipe.batch_size):
        scene = sample_scene(rng, config)
        images.append(preprocess(render_scene(scene, recipe.image_size)))
        if stage == 1:
            captions.append(varied_short_caption(scene, rng, recipe.stage_detail_rate(1)))
        elif rng.random() < recipe.dense_alt_share:
            captions.append(describe_scene(scene, "dense-alt", rng).text)
        else:
            captions.append(varied_long_caption(scene, rng, recipe.stage_detail_rate(2)))
    return torch.stack(images), captions


def _long_model(clip_model, recipe: PretrainRecipe):
    """Long-CLIP's stage-2 start: the CLIP-stage weights with the positional table stretched to 248."""
    model = build_clip(dataclasses.replace(recipe.architecture, context_length=LONG_CONTEXT))
    state = clip_model.state_dict()
    state["positional_embedding"] = stretch_positional_embedding(state["positional_embedding"])
    state["logit_scale"] = torch.tensor(math.log(recipe.logit_scale))
    model.load_state_dict(state)
    return model


def checkpoint_record(checkpoint: str | Path) -> dict:
    """The record :func:`pretrain` writes beside a toy checkpoint (its ``.json``: recipe, losses, probes, and for the
    shipped toy also its file's SHA-256, :func:`~hnclip_core.toy.model.ship_toy`): the one reader of that file."""
    path = Path(checkpoint).with_suffix(".json")
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the record pretraining writes beside {Path(checkpoint).name}")
    return json.loads(path.read_text())


def _continued(recipe: PretrainRecipe, checkpoint: Path) -> dict:
    """A saved state at the end of stage 2, from ``checkpoint``: a toy of ``recipe``'s stages 1–2 with its record
    (``.json``) beside it, as :func:`pretrain` or :func:`~hnclip_core.toy.model.ship_toy` wrote it."""
    base = recipe.without_token_stage()
    record = checkpoint_record(checkpoint)
    if record["recipe"] != base.as_dict():
        raise ValueError(f"{checkpoint} was not pretrained with this recipe's stages 1–2 ({base.digest()})")
    model, _, _ = load_longclip(checkpoint)
    stored_precision(model)
    return {"recipe": recipe.as_dict(), "stage": 2, "step": recipe.long_steps, "model": model.state_dict(),
            "trace": {"clip": record["clip_stage_losses"], "long": record["long_stage_losses"],
                      "token": [], "probes": record["probes"], "seconds": record["seconds"],
                      "continued_from": {"file": checkpoint.name, "sha256": file_sha256(checkpoint)}}}


def _stages(recipe: PretrainRecipe):
    """(stage, steps, learning rate, warm-up steps, context) of each stage the recipe runs."""
    yield 1, recipe.clip_steps, recipe.clip_lr, recipe.warmup_steps, 77
    yield 2, recipe.long_steps, recipe.long_lr, recipe.warmup_steps, LONG_CONTEXT
    if recipe.token_steps:
        yield 3, recipe.token_steps, recipe.token_lr, recipe.token_warmup_steps, LONG_CONTEXT


STAGE_NAMES = {1: "CLIP", 2: "Long-CLIP", 3: "token"}


def pretrain(
    recipe: PretrainRecipe, output: str | Path, resume: bool = True, save_every: int = 100,
    probe_every: int = 0, progress: bool = True, continue_from: str | Path | None = None,
) -> Path:
    """Run the stages of ``recipe`` and write the Long-CLIP-format checkpoint ``output`` with a JSON report
    (``output`` with suffix ``.json``) beside it; returns ``output``. ``probe_every`` > 0 measures the
    zero-shot regime on the synthetic benchmark during the Long-CLIP and token stages (recorded in the report).
    ``continue_from``: a toy of the recipe's stages 1–2 (e.g. the one shipped before the token stage), from which
    only the token stage is run."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    state_path = output.with_name(output.name + ".state")
    torch.manual_seed(recipe.seed)
    preprocess = open_clip.image_transform(recipe.image_size, is_train=False)
    model = build_clip(recipe.architecture)
    with torch.no_grad():
        model.logit_scale.fill_(math.log(recipe.logit_scale))
    model.logit_scale.requires_grad_(recipe.learn_logit_scale)
    saved = torch.load(state_path, weights_only=False) if resume and state_path.is_file() else None
    if saved is not None and saved["recipe"] != recipe.as_dict():
        raise ValueError(f"{state_path} belongs to another recipe; delete it or pass resume=False")
    if saved is None and continue_from is not None:
        if not recipe.token_steps:
            raise ValueError("continue_from needs a recipe with a token stage (token_steps > 0)")
        saved = _continued(recipe, Path(continue_from))
        model = _long_model(model, recipe)
    trace = saved["trace"] if saved else {"clip": [], "long": [], "token": [], "probes": [], "seconds": 0.0}
    trace.setdefault("token", [])

    probe_data = target_data = None
    if probe_every or recipe.target_probe_every:
        from .regime import benchmark_tensors  # only the probes need the benchmark in memory

        if probe_every:
            probe_data = (benchmark_tensors("train"), benchmark_tensors("test"))
        if recipe.target_probe_every:
            validation = benchmark_tensors("val")
            target_data = (validation, validation)

    for stage, steps, lr, warmup, context in _stages(recipe):
        if stage == 2:
            if model.positional_embedding.shape[0] != LONG_CONTEXT:
                model = _long_model(model, recipe)
            keep_first_positions_frozen(model)
        model.logit_scale.requires_grad_(recipe.learn_logit_scale and stage < 3)
        if saved is not None and saved["stage"] > stage:
            continue  # finished before the interruption; the saved state holds a later stage's weights
        resuming = saved is not None and saved["stage"] == stage
        if stage == 3 and not resuming:
            stored_precision(model)  # stage 2's weights as the shipped file stores them
        optimizer = torch.optim.AdamW(longclip_param_groups(model, recipe.weight_decay), lr=lr)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, cosine_with_warmup(warmup, steps))
        losses = trace[{1: "clip", 2: "long", 3: "token"}[stage]]
        start = saved["step"] if resuming else 0
        if resuming:  # a finished stage (e.g. a continued toy of stages 1–2) has no optimiser state to restore
            model.load_state_dict(saved["model"])
            if start < steps:
                optimizer.load_state_dict(saved["optimizer"])
                scheduler.load_state_dict(saved["scheduler"])
        tokenizer = open_clip.SimpleTokenizer(context_length=context)
        if recipe.caption_cone and stage == 1 and start == 0:
            with torch.no_grad():
                first_images, first_captions = scene_batch(recipe, 1, 0, preprocess)
                hold_caption_cone(model, model.encode_text(tokenizer(first_captions)), recipe.caption_cone)
        model.train()
        bar = tqdm(total=steps, initial=start, desc=f"toy {STAGE_NAMES[stage]} stage", disable=not progress,
                   smoothing=0.05)
        began = time.perf_counter()
        for step in range(start, steps):
            images, captions = scene_batch(recipe, stage, step, preprocess)
            batch = encode_batch(model, images, tokenizer(captions), with_tokens=stage == 3)
            scale = model.logit_scale.exp()
            loss = ClipLoss()(F.normalize(batch.image_features, dim=-1), F.normalize(batch.text_features, dim=-1),
                              scale)
            if stage == 3:
                loss_tok = token_loss(batch.image_tokens, batch.text_tokens, valid_text_token_mask(batch.text_ids),
                                      scale)
                total = loss + recipe.token_weight * loss_tok
            else:
                total = loss
            optimizer.zero_grad(set_to_none=True)
            total.backward()
            optimizer.step()
            scheduler.step()
            with torch.no_grad():
                model.logit_scale.clamp_(0, math.log(100))
            if recipe.caption_cone:
                hold_caption_cone(model, batch.text_features.detach(), recipe.caption_cone)
            losses.append([loss.item(), loss_tok.item()] if stage == 3 else loss.item())
            bar.update()
            recent = [x[0] if stage == 3 else x for x in losses[-20:]]
            bar.set_postfix(loss=f"{sum(recent) / len(recent):.3f}")
            done = step + 1
            if stage >= 2 and probe_data is not None and (done % probe_every == 0 or done == steps):
                from .regime import zero_shot_regime

                probe = zero_shot_regime(model, *probe_data, tokenizer)
                trace["probes"].append({"stage": stage, "step": done, **probe})
                bar.write(f"step {done}: " + ", ".join(f"{k} {v:.3f}" for k, v in probe.items()))
                model.train()
            if stage == 2 and target_data is not None and done % recipe.target_probe_every == 0 and done < steps:
                from .regime import meets_regime_targets, zero_shot_regime

                probe = zero_shot_regime(model, *target_data, tokenizer)
                trace.setdefault("validation_probes", []).append({"stage": stage, "step": done, **probe})
                bar.write(f"validation, step {done}: " + ", ".join(f"{k} {v:.3f}" for k, v in probe.items()))
                model.train()
                if meets_regime_targets(probe):
                    trace["stopped_on_targets"] = {"stage": stage, "step": done}
                    done = steps  # the stage is complete: a resumed run goes on with the next one
            if done % save_every == 0 or done == steps:
                trace["seconds"] += time.perf_counter() - began
                began = time.perf_counter()
                write_atomically(state_path, partial(torch.save, {
                    "recipe": recipe.as_dict(), "stage": stage, "step": done, "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "trace": trace,
                }))
            if done == steps:
                break
        bar.close()
        if stage == 1:
            save_longclip(model.eval(), output.with_name(f"{output.stem}-clip-stage{output.suffix}"))
    model.eval()
    save_longclip(model, output)
    report = {
        "recipe": recipe.as_dict(),
        "seconds": trace["seconds"],
        "machine": {"platform": platform.platform(), "processor": platform.machine(),
                    "threads": torch.get_num_threads(), "torch": torch.__version__},
        "clip_stage_losses": trace["clip"],
        "long_stage_losses": trace["long"],
        **({"token_stage_losses": trace["token"]} if recipe.token_steps else {}),
        **({"continued_from": trace["continued_from"]} if "continued_from" in trace else {}),
        "probes": trace["probes"],
        **({"probe_camera": SyntheticConfig().camera} if probe_every or recipe.target_probe_every else {}),
        **{key: trace[key] for key in ("validation_probes", "stopped_on_targets") if key in trace},
        "parameters": sum(p.numel() for p in model.parameters()),
    }
    write_text_atomically(output.with_suffix(".json"), json.dumps(report, indent=2))  # read by checkpoint_record
    return output
