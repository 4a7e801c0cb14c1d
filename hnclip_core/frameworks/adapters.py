"""LoRA (Hu et al., ICLR'22) and DoRA (Liu et al., ICML'24) adapters on the Long-CLIP backbone, through the
`peft` library — the parameter-efficient rows of the plug-and-play study (arXiv 2608.18521 Table 2, Table A4,
App. D.1/D.2: "adapters (r = 16) are trained with L_HN in place of InfoNCE while the backbone stays frozen",
"LoRA/DoRA adapters: 5×10⁻⁵, r = 16").

What is trained: only the adapter tensors peft adds (``lora_A``/``lora_B``, and DoRA's magnitude vectors). The
whole backbone is frozen — the learned temperature included, so the global term (InfoNCE or L_HN, with
L_tok when the objective asks for it) runs at the checkpoint's s.

Which modules carry adapters, and why (the paper does not say): the two linear layers of every MLP
(``mlp.c_fc``, ``mlp.c_proj``) of every residual block of both towers. Long-CLIP's attention is a
``torch.nn.MultiheadAttention`` with a fused ``in_proj_weight`` *parameter*; peft wraps that module as a whole
(LoRA on in- and out-projection together, by merging before and unmerging after each forward) but refuses
DoRA on it ("does not support DoRA (yet)"), and an adapter on ``attn.out_proj`` alone would never be called,
because ``MultiheadAttention`` reads ``out_proj.weight`` directly. The MLP linears are plain ``nn.Linear``
that both LoRA and DoRA support, so both variants adapt exactly the same layers and differ only in DoRA's
magnitude/direction decomposition — the comparison Table 2 makes.

Other choices of ours, as the paper is silent: ``lora_alpha = r`` (scaling 1), no adapter dropout, no bias
training. The paper's adapter learning rate is :data:`ADAPTER_LR`; the trainer does not impose it (``lr`` is
whatever the configuration says), so pass ``lr=ADAPTER_LR`` to follow the paper's recipe.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from .base import Framework

if TYPE_CHECKING:
    from peft import LoraConfig

__all__ = ["ADAPTER_LR", "ADAPTER_RANK", "ADAPTER_TARGET_MODULES", "AdapterFramework", "adapter_config"]

#: Learning rate of the LoRA/DoRA rows of Table 2 (App. D.1).
ADAPTER_LR = 5e-5
#: Adapter rank r of Table 2 (App. D.1).
ADAPTER_RANK = 16
#: peft ``target_modules`` (a regular expression over module names): the MLP linears of every residual block,
#: in the text tower (``transformer.resblocks.*``) and the image tower (``visual.transformer.resblocks.*``).
ADAPTER_TARGET_MODULES = r".*resblocks\.\d+\.mlp\.(c_fc|c_proj)"


def adapter_config(use_dora: bool) -> LoraConfig:
    """The peft configuration of the LoRA (``use_dora=False``) or DoRA adapters."""
    from peft import LoraConfig  # imported on use: peft (and transformers) load only for adapter runs

    return LoraConfig(
        r=ADAPTER_RANK,
        lora_alpha=ADAPTER_RANK,
        lora_dropout=0.0,
        target_modules=ADAPTER_TARGET_MODULES,
        use_dora=use_dora,
        bias="none",
    )


class AdapterFramework(Framework):
    """``lora`` or ``dora``: the backbone frozen, peft adapters trained with the standard objective."""

    def __init__(self, use_dora: bool, augmentation=None):
        super().__init__(augmentation)
        self.use_dora = use_dora
        self.name = "dora" if use_dora else "lora"

    def prepare_model(self, model: torch.nn.Module) -> torch.nn.Module:
        from peft import get_peft_model

        # get_peft_model freezes every base parameter and adds trainable adapters; logit_scale is frozen with them.
        return get_peft_model(model, adapter_config(self.use_dora))

    def unwrap_for_inference(self, model: torch.nn.Module) -> torch.nn.Module:
        """Fold the adapters into the backbone's weights: a plain open_clip ``CLIP`` again."""
        return model.merge_and_unload()
