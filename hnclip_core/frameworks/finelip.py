"""FineLIP-style fine-tuning: token refinement and cross-modal late interaction (Asokan et al., "FineLIP: Extending
CLIP's Reach via Fine-Grained Alignment with Longer Text Inputs", CVPR'25; the FineLIP rows of arXiv 2608.18521
Table 2 / A4, App. D.2: "the global term is swapped; the fine-grained cross-modal module and its losses are
untouched"; App. D.1: "FineLIP: backbone 10⁻⁶, cross-modal module 2×10⁻⁴").

The official repository (tiiuae/FineLIP) holds no code; what follows is the paper's public description, checked
against the commented-out original classes in a third-party copy (gaodz-111/my_research, ``FineLIP-main``),
with every number we could not confirm marked as inferred:

* **Token refinement (ATRM).** For each modality a small network turns the N projected tokens into K
  aggregated ones: weights = Linear(GELU(Linear(LayerNorm(x), 0.2·D)), K), transposed to ``[K, N]``, times a
  learned scale, softmax over the N tokens; the K tokens are weights @ x. K keeps about 20 % of the tokens
  (``aggr_ratio`` 0.4 × ``sparse_ratio`` 0.5): :func:`kept_tokens`. The image set gets its class embedding
  (the global image feature) prepended, the text set its end-of-text embedding (the global caption feature)
  appended. Inferred: the networks act on the projected (joint-space) tokens, padding and the start token are
  masked out of the text softmax, and the learned scale starts at 1.
* **Cross-modal late interaction (CLIM).** For an image–caption pair, the cosines between refined tokens pass
  through leaky_relu(·, 0.1); the score is mean over text tokens of their best image token + mean over image
  tokens of their best text token (:func:`cross_modal_scores`).
* **Loss.** A VSE++-style hinge over in-batch negatives with margin 0.2, summed (not hardest-negative):
  Σ_{j≠i} [0.2 + S(i, j) − S(i, i)]₊ + [0.2 + S(j, i) − S(i, i)]₊ (:func:`hinge_loss`), ramped in linearly over
  the first epoch (``warmup_alpha``; inferred: (step + 1) / steps per epoch, then 1).
* **Global term.** The HN-CLIP paper swaps FineLIP's global contrastive term, so FineLIP's loss is taken as
  L = L_global + warm-up · L_hinge (here ``objective`` is the global term). The third-party copy suggests the
  original may train the hinge alone in FineLIP mode; App. D.2 describes a global term, which we follow.

The refinement networks are attached to the model as the sub-module ``finelip_head`` so that the optimizer, the
saved training state and resume include them; they get their own learning rate :data:`FINELIP_MODULE_LR`
(FineLIP's ``cross_net_lr``), the backbone the configured ``lr``. Retrieval is scored by the global embeddings
only (App. D.3: one shared evaluation loop for all methods), so the head is used in training only.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..accumulation import MicroBatch, batch_loss
from ..features import encode_batch
from ..losses import HNClipTokenLoss, valid_text_token_mask
from .base import Framework

__all__ = [
    "FINELIP_MODULE_LR", "FINELIP_MARGIN", "HEAD_NAME", "FineLIPFramework", "FineLIPHead", "TokenRefiner",
    "kept_tokens", "cross_modal_scores", "hinge_loss",
]

#: Learning rate of the refinement networks (FineLIP's cross_net_lr; App. D.1).
FINELIP_MODULE_LR = 2e-4
#: Margin of the hinge loss.
FINELIP_MARGIN = 0.2
#: Share of tokens the refinement keeps: aggr_ratio 0.4 × sparse_ratio 0.5.
KEEP_RATIO = 0.4 * 0.5
HEAD_NAME = "finelip_head"


def kept_tokens(count: int) -> int:
    """How many refined tokens a set of ``count`` tokens yields (about 20 %, at least 1)."""
    return max(1, int(count * KEEP_RATIO))


class TokenRefiner(nn.Module):
    """FineLIP's adaptive token refinement: K softmax-weighted combinations of the input tokens."""

    def __init__(self, dim: int, keep: int):
        super().__init__()
        self.weights = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, max(1, int(0.2 * dim))), nn.GELU(),
                                     nn.Linear(max(1, int(0.2 * dim)), keep))
        self.scale = nn.Parameter(torch.ones(()))

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``tokens`` ``[B, N, D]`` (``mask`` ``[B, N]``: which take part) → ``[B, K, D]``."""
        logits = self.weights(tokens).transpose(1, 2) * self.scale  # [B, K, N]
        if mask is not None:
            logits = logits.masked_fill(~mask[:, None, :].bool(), float("-inf"))
        return torch.softmax(logits, dim=-1) @ tokens


class FineLIPHead(nn.Module):
    """The two refinement networks (image patches, caption tokens)."""

    def __init__(self, dim: int, num_patches: int, context_length: int):
        super().__init__()
        self.image = TokenRefiner(dim, kept_tokens(num_patches))
        self.text = TokenRefiner(dim, kept_tokens(context_length))


def cross_modal_scores(image_sets: torch.Tensor, text_sets: torch.Tensor) -> torch.Tensor:
    """CLIM scores ``[B_img, B_txt]`` of refined token sets ``[B_img, P, D]`` and ``[B_txt, T, D]``."""
    image_sets, text_sets = F.normalize(image_sets, dim=-1), F.normalize(text_sets, dim=-1)
    similarity = F.leaky_relu(torch.einsum("ipd,jtd->ijpt", image_sets, text_sets), negative_slope=0.1)
    return similarity.max(dim=2).values.mean(dim=2) + similarity.max(dim=3).values.mean(dim=2)


def hinge_loss(scores: torch.Tensor, margin: float = FINELIP_MARGIN) -> torch.Tensor:
    """Summed VSE++ hinge over in-batch negatives of a square score matrix (row i, column i positive)."""
    positives = scores.diagonal()
    negatives_of_image = (margin + scores - positives[:, None]).clamp(min=0)
    negatives_of_text = (margin + scores - positives[None, :]).clamp(min=0)
    off_diagonal = ~torch.eye(scores.shape[0], dtype=torch.bool, device=scores.device)
    return (negatives_of_image * off_diagonal).sum() + (negatives_of_text * off_diagonal).sum()


class FineLIPFramework(Framework):
    """``finelip``: the global term plus the refined-token hinge loss."""

    name = "finelip"
    has_auxiliary_loss = True

    def __init__(self, augmentation=None):
        super().__init__(augmentation)
        self.warmup = 1.0

    def prepare_model(self, model):
        visual = model.visual
        num_patches = (visual.image_size[0] // visual.patch_size[0]) * (visual.image_size[1] // visual.patch_size[1])
        head = FineLIPHead(model.text_projection.shape[1], num_patches, model.positional_embedding.shape[0])
        model.add_module(HEAD_NAME, head.to(model.logit_scale.device))
        return model

    def param_groups(self, model, weight_decay: float) -> list[dict]:
        head = {id(p) for p in getattr(model, HEAD_NAME).parameters()}
        groups = super().param_groups(model, weight_decay)
        for group in groups:
            group["params"] = [p for p in group["params"] if id(p) not in head]
        module_group = {"params": list(getattr(model, HEAD_NAME).parameters()), "weight_decay": weight_decay,
                        "lr": FINELIP_MODULE_LR}
        return [*groups, module_group]

    def start_step(self, epoch: int, step: int, steps_per_epoch: int) -> None:
        self.warmup = min(1.0, (step + 1) / max(1, steps_per_epoch))

    def loss(self, model, micro: MicroBatch, loss_fn: HNClipTokenLoss, logit_scale: torch.Tensor,
             margin_text_features: torch.Tensor | None = None) -> torch.Tensor:
        encoded = encode_batch(model, micro.images, micro.token_ids, with_tokens=True)
        global_term = batch_loss(loss_fn, encoded, logit_scale, margin_text_features)
        head = getattr(model, HEAD_NAME)
        image_sets = torch.cat([encoded.image_features[:, None], head.image(encoded.image_tokens)], dim=1)
        text_mask = valid_text_token_mask(encoded.text_ids)
        text_sets = torch.cat([head.text(encoded.text_tokens, text_mask), encoded.text_features[:, None]], dim=1)
        return global_term + self.warmup * hinge_loss(cross_modal_scores(image_sets, text_sets))

    def unwrap_for_inference(self, model):
        if hasattr(model, HEAD_NAME):
            delattr(model, HEAD_NAME)
        return model
