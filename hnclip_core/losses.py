"""The HN-CLIP objective: InfoNCE (Eq. 1), the caption-similarity boost L_HN (Eq. 2) and the FILIP-style
token term L_tok of the full objective L = L_HN + λ·L_tok (Eq. 3), arXiv 2608.18521 §2.1–2.3 and App. B.

Conventions: global embeddings are L2-normalised ``[B, D]`` tensors, row ``i`` of the image features
belongs to row ``i`` of the text features, and ``logit_scale`` is the inverse temperature *s* itself
(``model.logit_scale.exp()``), as a tensor or a float.

Both are open_clip loss modules: :class:`HNClipLoss` is ``ClipLoss`` with the margin added to its logits
(``gamma=0`` is InfoNCE), and :class:`HNClipTokenLoss` adds λ·L_tok on top, the way open_clip's ``CoCaLoss``
adds its caption term. Objectives are named by their parameters: γ = 0, λ = 0 is InfoNCE (Eq. 1);
γ > 0, λ = 0 is L_HN (Eq. 2); γ > 0, λ > 0 is HN-CLIP (Eq. 3).

Why the boost works, in one line (App. B.2, Eq. 4): adding the detached margin γ·Ḡ_ij to negative *j*'s
logit multiplies its softmax weight, and so its share of the gradient, by exp(s·γ·Ḡ_ij); near-duplicate
captions (Ḡ → 1) keep receiving gradient after the easy negatives have been separated.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from open_clip.loss import ClipLoss, gather_features

__all__ = [
    "PAPER_GAMMA",
    "PAPER_TOKEN_WEIGHT",
    "SOLVED_LOSS_THRESHOLD",
    "HNClipLoss",
    "HNClipTokenLoss",
    "caption_margin",
    "token_loss",
    "token_similarity",
    "valid_text_token_mask",
]

#: The paper's margin strength γ of Eq. 2 (§3.1; Table 3a sweeps it) and weight λ of L_tok in Eq. 3.
PAPER_GAMMA = 0.5
PAPER_TOKEN_WEIGHT = 1.0
#: A batch whose loss is below this value counts as "solved" in the paper's gradient analysis (§2.4, Fig. 4).
SOLVED_LOSS_THRESHOLD = 1e-3


def caption_margin(
    row_text_features: torch.Tensor,
    column_text_features: torch.Tensor,
    gamma: float,
    positive_offset: int = 0,
) -> torch.Tensor:
    """The additive logit margin γ·Ḡ of Eq. 2, with Ḡ = stopgrad(T Tᵀ) ⊙ (1 − I).

    Rows and columns may be different sets of captions (a rank's local captions against all gathered
    ones, under distributed training); the positive of row ``i`` then sits at column
    ``positive_offset + i`` and is the entry masked to zero. The matrix is computed without autograd
    history, so no gradient can flow through it.
    """
    with torch.no_grad():
        margin = gamma * (row_text_features @ column_text_features.t())
        rows = torch.arange(margin.shape[0], device=margin.device)
        margin[rows, rows + positive_offset] = 0.0
    return margin


def valid_text_token_mask(token_ids: torch.Tensor) -> torch.Tensor:
    """Tokens that take part in L_tok: not padding (id 0) and not the start token at position 0.

    With a causal text encoder the start token's output only sees itself and is identical for every
    caption, so it carries no information about the caption (research notes, longclip.md §5).
    """
    positions = torch.arange(token_ids.shape[-1], device=token_ids.device)
    return (token_ids != 0) & (positions > 0)


def _default_chunk_size(batch: int, patches: int, tokens: int, max_elements: int) -> int:
    return max(1, min(batch, max_elements // max(1, batch * patches * tokens)))


def token_similarity(
    image_tokens: torch.Tensor,
    text_tokens: torch.Tensor,
    text_mask: torch.Tensor,
    max_elements: int = 2**25,
) -> tuple[torch.Tensor, torch.Tensor]:
    """FILIP late-interaction scores for every image–caption pair of a batch (§2.3, Yao et al. 2021).

    Returns ``(image_to_text, text_to_image)``, both ``[B_img, B_txt]``:

    * image→text score of (i, j): each patch of image *i* takes its best cosine over caption *j*'s valid
      tokens; the maxima are averaged over the patches;
    * text→image score of (i, j): each valid token of caption *j* takes its best cosine over image *i*'s
      patches; the maxima are averaged over caption *j*'s valid tokens.

    Tokens are L2-normalised here. The ``B × B × patches × tokens`` similarity tensor is never formed at
    once: images are processed in chunks holding at most ``max_elements`` entries, and ``torch.max``
    keeps only argmax indices for backward, so memory stays bounded during training as well.
    """
    image_tokens = F.normalize(image_tokens, dim=-1)
    text_tokens = F.normalize(text_tokens, dim=-1)
    mask = text_mask.bool()
    num_valid = mask.sum(dim=1).clamp(min=1).to(text_tokens.dtype)  # [B_txt]
    n_img, n_patch = image_tokens.shape[:2]
    n_txt, n_tok = text_tokens.shape[:2]
    chunk = _default_chunk_size(n_txt, n_patch, n_tok, max_elements)

    image_to_text, text_to_image = [], []
    for start in range(0, n_img, chunk):
        sim = torch.einsum("ipd,jtd->ijpt", image_tokens[start : start + chunk], text_tokens)
        best_token = sim.masked_fill(~mask[None, :, None, :], float("-inf")).max(dim=3).values
        image_to_text.append(best_token.mean(dim=2))
        best_patch = sim.max(dim=2).values  # [c, B_txt, tokens]
        text_to_image.append((best_patch * mask[None]).sum(dim=2) / num_valid[None])
    return torch.cat(image_to_text), torch.cat(text_to_image)


def token_loss(
    image_tokens: torch.Tensor,
    text_tokens: torch.Tensor,
    text_mask: torch.Tensor,
    logit_scale,
    max_elements: int = 2**25,
) -> torch.Tensor:
    """L_tok of Eq. 3: symmetric in-batch cross-entropy over FILIP late-interaction scores.

    ``image_tokens`` ``[B, patches, D]`` are projected patch embeddings (class token excluded),
    ``text_tokens`` ``[B, L, D]`` projected per-token text states, ``text_mask`` ``[B, L]`` marks the
    valid text tokens (see :func:`valid_text_token_mask`). Each image is classified among the batch's
    captions by the image→text score, each caption among the images by the text→image score
    (:func:`token_similarity`), and the two cross-entropies are averaged.
    """
    image_to_text, text_to_image = token_similarity(image_tokens, text_tokens, text_mask, max_elements)
    targets = torch.arange(image_to_text.shape[0], device=image_to_text.device)
    return (
        F.cross_entropy(logit_scale * image_to_text, targets)
        + F.cross_entropy(logit_scale * text_to_image.t(), targets)
    ) / 2


class HNClipLoss(ClipLoss):
    """L_HN of Eq. 2 as a drop-in replacement for open_clip's ``ClipLoss`` (same call and options):
    ½·[CE(s·(S + γḠ), y) + CE(s·(S + γḠ)ᵀ, y)] with S = V Tᵀ and Ḡ = stopgrad(T Tᵀ) ⊙ (1 − I).

    A negative *j* of query *i* must be beaten by an extra margin γ·Ḡ_ij; the positives' logits are
    untouched. ``gamma=0`` is ``ClipLoss`` exactly (InfoNCE, Eq. 1). Features are L2-normalised ``[B, D]``
    (row *i* of the images belongs to row *i* of the captions) and ``logit_scale`` is *s* itself.
    ``margin_text_features`` (keyword of ``forward``) optionally gives the caption features Ḡ is built
    from — a frozen copy of the initial text encoder's, Table 3c. Distributed gathering (``world_size``,
    ``local_loss``, ``gather_with_grad``) works as in ``ClipLoss``; under ``local_loss`` Ḡ is
    stopgrad(local captions · all captionsᵀ) with the positives at column ``rank·B + i``.
    """

    def __init__(self, gamma: float = PAPER_GAMMA, **clip_loss_kwargs):
        super().__init__(**clip_loss_kwargs)
        self.gamma = gamma
        self._margin_text_features: torch.Tensor | None = None

    def get_logits(self, image_features, text_features, logit_scale, logit_bias=None):
        logits_per_image, logits_per_text = super().get_logits(
            image_features, text_features, logit_scale, logit_bias=logit_bias
        )
        if self.gamma == 0:
            return logits_per_image, logits_per_text
        captions = text_features if self._margin_text_features is None else self._margin_text_features
        all_captions, offset = captions, 0
        if self.world_size > 1:
            all_captions, _ = gather_features(
                captions.detach(), captions.detach(), local_loss=True, gather_with_grad=False,
                rank=self.rank, world_size=self.world_size, use_horovod=self.use_horovod,
            )
            if self.local_loss:
                offset = self.rank * captions.shape[0]
            else:
                captions = all_captions
        margin = (logit_scale * caption_margin(captions, all_captions, self.gamma, offset)).to(logits_per_image.dtype)
        # Ḡ is symmetric over captions, so the text→image logits get the same margin as image→text.
        return logits_per_image + margin, logits_per_text + margin

    def forward(self, image_features, text_features, logit_scale, logit_bias=None, output_dict=False,
                margin_text_features: torch.Tensor | None = None):
        self._margin_text_features = margin_text_features
        try:
            return super().forward(
                image_features, text_features, logit_scale, logit_bias=logit_bias, output_dict=output_dict
            )
        finally:
            self._margin_text_features = None


class HNClipTokenLoss(HNClipLoss):
    """The full objective of Eq. 3, L = L_HN + λ·L_tok: :class:`HNClipLoss` plus the FILIP token term.

    ``forward(image_features, text_features, logit_scale, image_tokens=..., text_tokens=..., text_ids=...)``
    takes the batch's patch embeddings ``[B, patches, D]``, per-token text embeddings ``[B, L, D]`` and the
    token ids they belong to (padding and the start token are left out, :func:`valid_text_token_mask`).
    With ``output_dict=True`` it returns both terms, as ``CoCaLoss`` does. Across processes (``world_size``)
    the global features and Ḡ's captions are gathered as in :class:`HNClipLoss`, and the token tensors with
    gradient as well (:meth:`gather_tokens`), so L_tok's negatives span every process too; that needs the whole
    batch on every process: ``gather_with_grad=True``, not ``local_loss`` or horovod.
    """

    def __init__(self, gamma: float = PAPER_GAMMA, token_weight: float = PAPER_TOKEN_WEIGHT, **clip_loss_kwargs):
        super().__init__(gamma, **clip_loss_kwargs)
        if token_weight and self.world_size > 1 and (self.local_loss or self.use_horovod or not self.gather_with_grad):
            raise ValueError("L_tok over several processes needs the whole batch's token tensors with gradient: "
                             "gather_with_grad=True, without local_loss or horovod")
        self.token_weight = token_weight

    def gather_tokens(self, image_tokens, text_tokens, text_ids):
        """Every process's token tensors in rank order, differentiable (as given, in one process); word tokens
        are right-padded to the longest caption of any process (id 0 = padding, which L_tok masks).

        Patches and words travel packed in *one* differentiable all-gather on purpose: nothing makes the backward
        collectives of two separate gathers run in the same order on every process, and with two gathers here
        the text tower's gradients across two processes came out wrong (``tests/test_distributed.py`` checks them
        against one process).
        """
        if self.world_size == 1:
            return image_tokens, text_tokens, text_ids
        from torch.distributed.nn.functional import all_gather

        length = torch.tensor([text_ids.shape[1]], device=text_ids.device)
        dist.all_reduce(length, op=dist.ReduceOp.MAX)
        pad = int(length) - text_ids.shape[1]
        text_tokens = F.pad(text_tokens, (0, 0, 0, pad))
        batch = image_tokens.shape[0]
        packed = torch.cat([image_tokens.reshape(batch, -1), text_tokens.reshape(batch, -1)], dim=1).contiguous()
        patches, words = torch.cat(all_gather(packed)).split([image_tokens[0].numel(), text_tokens[0].numel()], dim=1)
        image_tokens = patches.reshape(-1, *image_tokens.shape[1:])
        text_tokens = words.reshape(-1, *text_tokens.shape[1:])
        text_ids = F.pad(text_ids, (0, pad)).contiguous()
        all_ids = [torch.empty_like(text_ids) for _ in range(self.world_size)]
        dist.all_gather(all_ids, text_ids)
        return image_tokens, text_tokens, torch.cat(all_ids)

    def forward(self, image_features, text_features, logit_scale, logit_bias=None, output_dict=False,
                margin_text_features=None, *, image_tokens=None, text_tokens=None, text_ids=None):
        contrastive = super().forward(image_features, text_features, logit_scale, logit_bias,
                                      margin_text_features=margin_text_features)
        token_term = torch.zeros_like(contrastive)
        if self.token_weight:
            image_tokens, text_tokens, text_ids = self.gather_tokens(image_tokens, text_tokens, text_ids)
            mask = valid_text_token_mask(text_ids)
            token_term = self.token_weight * token_loss(image_tokens, text_tokens, mask, logit_scale)
        if output_dict:
            return {"contrastive_loss": contrastive, "token_loss": token_term}
        return contrastive + token_term
