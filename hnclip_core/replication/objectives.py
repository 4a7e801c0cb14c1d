"""The objectives the studies compare, by the short names they use (Table 3b): one home for the names, their (γ, λ)
and which of them are the baselines. A leaf module: it imports nothing of the harness, so plots, the tidy table,
the scorecard, the studies and the experiments can all read it.

Each objective is a setting of the loss's two parameters: γ of Eq. 2 (the margin of L_HN) and λ of Eq. 3 (the
weight of the token term L_tok), whose paper values the core defines once (:data:`hnclip_core.losses.PAPER_GAMMA`,
:data:`~hnclip_core.losses.PAPER_TOKEN_WEIGHT`; the learning rate :data:`hnclip_core.train.PAPER_LR`).
"""

from __future__ import annotations

from ..losses import PAPER_GAMMA, PAPER_TOKEN_WEIGHT

__all__ = ["OBJECTIVES", "BASELINES", "METHOD", "objective_parameters", "objective_name"]

#: Short name → the paper's name.
OBJECTIVES = {"clip": "InfoNCE", "tok": "InfoNCE + L_tok", "hn": "L_HN", "hn+tok": "HN-CLIP"}
#: The objectives without L_HN: what HN-CLIP is compared with.
BASELINES = ("clip", "tok")
#: The paper's method, L_HN + L_tok (Eq. 3).
METHOD = "hn+tok"


def objective_parameters(objective: str, gamma: float = PAPER_GAMMA, token_weight: float = PAPER_TOKEN_WEIGHT) -> dict:
    """γ and λ of one of :data:`OBJECTIVES`: ``clip`` γ = λ = 0 (Eq. 1), ``tok`` λ only, ``hn`` γ only (Eq. 2),
    ``hn+tok`` both (Eq. 3)."""
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; choose one of {list(OBJECTIVES)}")
    return {"gamma": gamma if objective.startswith("hn") else 0.0,
            "token_weight": token_weight if objective.endswith("tok") else 0.0}


def objective_name(gamma: float, token_weight: float) -> str:
    """The short name of a setting of (γ, λ): the inverse of :func:`objective_parameters` up to the strengths."""
    return {(False, False): "clip", (False, True): "tok", (True, False): "hn", (True, True): "hn+tok"}[
        (bool(gamma), bool(token_weight))]
