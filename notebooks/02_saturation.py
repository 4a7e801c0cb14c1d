# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 2 — Saturation: when InfoNCE stops learning, and what the boost changes
#
# *Replicates §2.1–2.4, Eq. 4 / App. B.2, Fig. 4 and Fig. A8 of HN-CLIP (arXiv 2608.18521).*
#
# The paper's diagnosis: fine-tuning a strong model such as Long-CLIP-L with InfoNCE on DOCCI, the loss
# falls below 10⁻³ on **80 %** of batches within the first epoch, and its full-parameter gradient is
# **exactly zero in fp32 in 47 %** of measurements. The batch is "solved" for the easy negatives while the
# near-twins of chapter 1 are still confused. HN-CLIP adds the detached caption-similarity matrix γḠ to the
# negative logits (Eq. 2), so a negative must be beaten by a margin that grows with how similar its caption
# is — and the gradient concentrates on exactly those negatives (Eq. 4).
#
# This chapter takes the claim apart in six steps:
# 1. **the two losses, written out** — Eq. 1 and Eq. 2 in a few lines of torch, checked against
#    `hnclip_core`, and drawn for a constructed batch;
# 2. **saturation in seconds** — on that batch, InfoNCE's gradient on a near-twin in fp32 and fp16, then
#    forty optimisation steps of each loss;
# 3. the **arithmetic** in general — at which margins the loss and the gradient become exactly zero, in each
#    precision;
# 4. a **real batch** — the two losses on the first micro-batch training would draw;
# 5. **gradient concentration** (Eq. 4) — how the boost re-weights the repulsion of each negative, with an
#    interactive explorer for γ and s;
# 6. the **gradient-dynamics run** of Fig. 4 — both losses and both gradients measured during fine-tuning.
#
# Exercises close the chapter.

# %% tags=["parameters"]
backbone = "toy"  # "toy" or the path of a Long-CLIP checkpoint (longclip-L.pt)
dataset = "synthetic"  # synthetic, docci, dci, long-dci or vg
data_root = None  # its folder (not needed for synthetic)
device = "auto"
seed = 0
gamma = 0.5  # boost strength γ of Eq. 2
logit_scale = 100.0  # s of sections 1–3 (Long-CLIP's learned value is 100)
micro_batch_size = 16  # contrastive batch of the paper's naive accumulation
accumulation_steps = 8  # micro-batches per optimizer step (effective batch 128)
dynamics_objective = "hn+tok"  # the objective trained during the gradient-dynamics run
dynamics_epochs = 2  # the paper measures 10 epochs of Long-CLIP-L
dynamics_fraction = 0.5  # share of the training set used by the dynamics run
monitor_every = 2  # measure every k optimizer steps (the paper: every 5)
lr = None  # None: 2e-6 (paper) for a real checkpoint, the toy's calibrated preset for the toy
output_dir = None  # None: $HNCLIP_OUTPUT_DIR or runs/notebooks
interactive = True  # progress bars and the γ/s explorer widget; papermill batch runs pass False

# %%
# %matplotlib inline
#papermill_description=setup
import math

import torch
import torch.nn.functional as F
from chapter02_helpers import (
    TWIN,
    batch_summary,
    boost_explorer_widget,
    boost_reweighting,
    hardness_concentration,
    margin_sweep,
    plot_batch_matrices,
    plot_boost_posteriors,
    plot_fp32_saturation,
    plot_gradient_dynamics,
    plot_real_batches,
    plot_twin_dynamics,
    reading_the_dynamics,
    saturation_thresholds,
    strong_init_batch,
    twin_margin,
)
from IPython.display import Markdown, display

from hnclip_core.data import PairDataset
from hnclip_core.evaluate import encode_dataset
from hnclip_core.losses import SOLVED_LOSS_THRESHOLD, HNClipLoss
from hnclip_core.replication.experiment import Experiment
from hnclip_core.replication.paper import SATURATION
from hnclip_core.replication.plots import show
from hnclip_core.replication.report import diagnostics_table, thresholds_table

exp = Experiment(
    backbone=backbone, dataset=dataset, data_root=data_root, device=device, seed=seed, lr=lr,
    micro_batch_size=micro_batch_size, accumulation_steps=accumulation_steps, output_dir=output_dir,
    progress=interactive,
)

# %% [markdown]
# ## 1. The two losses, written out
# Notation of §2.1: a batch of B image–caption pairs with L2-normalised embeddings $v_i$ (images) and $t_i$
# (captions), the rows of $V$ and $T$; the image–caption similarities $S = VT^\top$, so $S_{ij} = v_i^\top t_j$;
# the inverse temperature $s$ (Long-CLIP's is 100); and $\mathrm{CE}(Z, y)$, the softmax cross-entropy of each
# row of $Z$ with target $y_i = i$, averaged over the rows. InfoNCE lets every image pick its caption (the
# rows of $sS$) and every caption its image (the rows of $sS^\top$):
#
# $$\mathcal{L}_\mathrm{CLIP} = \tfrac12\big[\mathrm{CE}(sS,\,y) + \mathrm{CE}(sS^\top,\,y)\big],
# \qquad \mathrm{CE}(Z, y) = \frac1B\sum_{i=1}^{B}\Big(-Z_{ii} + \log\sum_{j=1}^{B} e^{Z_{ij}}\Big). \qquad (1)$$
#
# HN-CLIP evaluates the same loss on shifted logits. With the caption–caption similarities $G = TT^\top$:
#
# $$\mathcal{L}_\mathrm{HN} = \tfrac12\big[\mathrm{CE}\big(s(S+\gamma\bar G),\,y\big)
#   + \mathrm{CE}\big(s(S+\gamma\bar G)^\top,\,y\big)\big],
# \qquad \bar G = \mathrm{stopgrad}(G)\odot(\mathbf{1}-I). \qquad (2)$$
#
# Three details decide what Eq. 2 computes:
# * **stopgrad** — $\bar G$ is a constant for autograd, so the loss cannot lower itself by moving captions
#   through $\bar G$; it is still recomputed from the current captions at every step;
# * **$\odot(\mathbf{1}-I)$** — the diagonal is zeroed: positives keep their logits, and negative $j$ of query
#   $i$ has $\gamma\bar G_{ij}$ added to its similarity $S_{ij}$, a margin by which the positive must now win;
# * **symmetry** — $\bar G = \bar G^\top$, so the caption→image direction gets the same boost.
#
# With $\gamma = 0$ Eq. 2 is Eq. 1; the paper's default is $\gamma = 0.5$. In torch:

# %%
def contrastive_ce(Z):
    """½[CE(Z, y) + CE(Zᵀ, y)], y_i = i: the rows of Z are images choosing a caption, its columns captions."""
    y = torch.arange(Z.shape[0], device=Z.device)
    return (F.cross_entropy(Z, y) + F.cross_entropy(Z.T, y)) / 2


def clip_logits(v, t, s):
    """The logits of Eq. 1: s·S with S = V Tᵀ."""
    return s * (v @ t.T)


def boosted_logits(v, t, s, gamma):
    """The logits of Eq. 2: s·(S + γḠ)."""
    G = (t @ t.T).detach()  # stopgrad(T Tᵀ)
    G_bar = G.masked_fill(torch.eye(len(t), dtype=torch.bool, device=t.device), 0.0)  # ⊙ (1 − I)
    return s * (v @ t.T + gamma * G_bar)


def info_nce(v, t, s):  # Eq. 1, L_CLIP
    return contrastive_ce(clip_logits(v, t, s))


def boosted_loss(v, t, s, gamma=0.5):  # Eq. 2, L_HN
    return contrastive_ce(boosted_logits(v, t, s, gamma))


# %% [markdown]
# **A strong initialisation, constructed.** To watch both losses at work in milliseconds, whatever the
# backbone, we build a batch by hand (`strong_init_batch` in `chapter02_helpers.py`, beside this notebook):
# B = 16 pairs of unit vectors in 64 dimensions. Every image already beats its easy negatives by a wide cosine
# margin, as a Long-CLIP initialisation does on unrelated scenes, and one pair of near-twins — two captions
# of one scene that differ in a detail, almost the same vector — is ranked correctly, but only narrowly. Pairs 0
# and 1 are the twins; the cell prints the batch's numbers.

# %%
V0, T0 = strong_init_batch(seed=seed)  # images and captions, [16, 64] each, unit norm; twins: pairs 0, 1
summary = batch_summary(V0, T0)
print(f"positive cosines S_ii: {summary['positive_min']:.2f}–{summary['positive_max']:.2f}; "
      f"every easy negative trails its positive by ≥ {summary['easy_lead_min']:.2f}")
print(f"the twins: caption cosine Ḡ_01 = {summary['twin_caption_similarity']:.2f}, "
      f"each twin's positive leads the other twin by Δ = {summary['twin_margin']:.2f}")
print(f"caption cosine between unrelated captions: "
      f"{summary['caption_similarity_min']:.2f}–{summary['caption_similarity_max']:.2f}")

# %% [markdown]
# **Does the code compute what the package trains with?** Agreement of the loss values is not enough: drop
# the `.detach()` and the values stay the same while the gradient w.r.t. the captions changes. So we compare
# values *and* gradients with `hnclip_core.losses`, on a random batch (losses of order ln B) and on the
# constructed one.

# %%
def loss_and_gradients(loss_fn, v, t):
    v, t = v.clone().requires_grad_(), t.clone().requires_grad_()
    loss = loss_fn(v, t)
    loss.backward()
    return loss.detach(), v.grad, t.grad


# The package's loss is an open_clip ClipLoss with the margin added to its logits; γ = 0 is InfoNCE.
package_infonce, package_hn = HNClipLoss(gamma=0.0), HNClipLoss(gamma=gamma)
generator = torch.Generator().manual_seed(seed)
random_batch = [F.normalize(torch.randn(16, 64, generator=generator), dim=1) for _ in range(2)]
for v, t in (random_batch, (V0, T0)):
    torch.testing.assert_close(loss_and_gradients(lambda v, t: info_nce(v, t, logit_scale), v, t),
                               loss_and_gradients(lambda v, t: package_infonce(v, t, logit_scale), v, t))
    torch.testing.assert_close(loss_and_gradients(lambda v, t: boosted_loss(v, t, logit_scale, gamma), v, t),
                               loss_and_gradients(lambda v, t: package_hn(v, t, logit_scale), v, t))
print("Eq. 1 and Eq. 2 above match HNClipLoss(γ = 0) and HNClipLoss(γ): values and gradients, on both batches")

# %% [markdown]
# The three matrices of Eq. 2 for the constructed batch:

# %%
S = V0 @ T0.T
G_bar = (T0 @ T0.T).fill_diagonal_(0.0)
fig = plot_batch_matrices(S, G_bar, boosted_logits(V0, T0, logit_scale, gamma), logit_scale, gamma)
exp.save_figure(fig, "02_constructed_batch")
show(fig)

# %%
Z_boosted = boosted_logits(V0, T0, logit_scale, gamma)
twin_lead_boosted = (Z_boosted[0, 1] - Z_boosted[0, 0]).item()  # > 0: the boosted twin beats the positive
display(Markdown(
    f"**What you see.** *Left*: a bright diagonal over a dark field — every image prefers its own caption by "
    f"at least {summary['easy_lead_min']:.2f} — except the two outlined twin cells, only "
    f"{summary['twin_margin']:.2f} below the twins' positives. *Middle*: unrelated captions share some wording "
    f"(Ḡ of {summary['caption_similarity_min']:.2f}–{summary['caption_similarity_max']:.2f}), the twins stand "
    f"out at {summary['twin_caption_similarity']:.2f}. *Right*: with the boost "
    f"γḠ_01 = {gamma * summary['twin_caption_similarity']:.3f} the twin's logit s(S_01 + γḠ_01) "
    + (f"overtakes the positive's s·S_00 by {twin_lead_boosted:.1f}: for Eq. 2 the twins are still mistaken "
       "for each other" if twin_lead_boosted > 0 else
       f"stays {-twin_lead_boosted:.1f} behind the positive's s·S_00: Eq. 2 already counts the twins as apart")
    + f", while the easy negatives, boosted by γḠ ≤ {gamma * summary['caption_similarity_max']:.2f}, stay behind. "
    "InfoNCE, which sees only the left matrix, considers this batch solved — the next section measures how solved."
))

# %% [markdown]
# ## 2. Saturation in seconds
# **(a) One backward pass.** What would push the twins apart is the gradient of the batch loss w.r.t. the
# twin's logit $z_{01}$ (image 0 against caption 1). We compute it in fp32, and with the logits in fp16 as
# mixed-precision training does: under `torch.autocast` the matrix product runs in half precision, the
# cross-entropy in fp32 (autocast upcasts it), and the gradient that flows back into the fp16 logits is
# rounded to fp16.

# %%
def twin_gradient(make_logits, dtype):
    """Loss and ∂loss/∂z_01 on the constructed batch, the logits computed in `dtype` (fp16: under autocast)."""
    v, t = V0.clone().requires_grad_(), T0.clone().requires_grad_()
    with torch.autocast("cpu", dtype=torch.float16, enabled=dtype == torch.float16):
        Z = make_logits(v, t)
        Z.retain_grad()  # keep the gradient of this intermediate tensor
        loss = contrastive_ce(Z)
    loss.backward()
    assert Z.dtype == dtype
    return loss.item(), Z.grad[TWIN].item()


logits_of = {"InfoNCE": lambda v, t: clip_logits(v, t, logit_scale),
             "L_HN": lambda v, t: boosted_logits(v, t, logit_scale, gamma)}
measured = {(name, precision): twin_gradient(make, dtype) for name, make in logits_of.items()
            for precision, dtype in (("fp32", torch.float32), ("fp16", torch.float16))}
(loss_clip_32, grad_clip_32), (_, grad_clip_16) = measured["InfoNCE", "fp32"], measured["InfoNCE", "fp16"]
(loss_hn_32, grad_hn_32), (_, grad_hn_16) = measured["L_HN", "fp32"], measured["L_HN", "fp16"]
print(f"L_CLIP = {loss_clip_32:.3g} ({'solved' if loss_clip_32 < SOLVED_LOSS_THRESHOLD else 'not solved'}: "
      f"< {SOLVED_LOSS_THRESHOLD:g})    L_HN (γ = {gamma}) = {loss_hn_32:.3g}")
print("gradient on the twin's logit z_01:")
print(f"  InfoNCE  fp32: {grad_clip_32:.3g}    fp16 logits: {grad_clip_16!r}")
print(f"  L_HN     fp32: {grad_hn_32:.3g}    fp16 logits: {grad_hn_16:.3g}")
print(f"  ratio L_HN / InfoNCE in fp32: {grad_hn_32 / grad_clip_32:.2g}")

# %% [markdown]
# **The arithmetic.** The batch loss averages B rows and halves the sum of two directions, so each direction
# contributes $p/(2B)$ to the gradient on a negative logit, where $p$ is that negative's softmax probability
# in its row; a positive that leads by the logit gap $s\Delta$ gives $p \approx e^{-s\Delta}$. A number
# rounds to 0 in a floating-point format once it is below half of the format's smallest subnormal,
# $2^{-24}$ in fp16 and $2^{-149}$ in fp32. Loss scaling (`torch.amp.GradScaler` multiplies the loss by,
# e.g., $2^{16}$ before the backward pass) moves the fp16 threshold out by $16\ln 2$ logits: it postpones the
# underflow, it does not remove it. The cell below puts in this batch's numbers.

# %%
B = len(V0)
s_delta = logit_scale * summary["twin_margin"]  # the twin's logit gap
p_twin = math.exp(-s_delta)
fp16_half, fp32_half = 2.0**-25, 2.0**-150  # half the smallest subnormal: below it, a number rounds to 0
boosted_ahead = twin_lead_boosted > 0


def latex_sci(x):
    """x as $a\\cdot10^{b}$ (two significant digits)."""
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa}\\cdot10^{{{int(exponent)}}}"


display(Markdown(
    f"**What you see.** InfoNCE's loss is {loss_clip_32:.2g}, "
    + ("far below" if loss_clip_32 < SOLVED_LOSS_THRESHOLD / 100 else
       "below" if loss_clip_32 < SOLVED_LOSS_THRESHOLD else "above")
    + f" the \"solved\" level {SOLVED_LOSS_THRESHOLD:g}, and its push on the twin is {grad_clip_32:.2g} in fp32 — "
    + ("and exactly 0.0 in fp16. " if grad_clip_16 == 0.0 else f"and {grad_clip_16:.2g} in fp16. ")
    + f"L_HN's loss is {loss_hn_32:.2g} and its push on the twin is {grad_hn_32:.3g} in fp32 "
    f"({grad_hn_16:.3g} in fp16), {grad_hn_32 / grad_clip_32:.1e} times larger.\n\n"
    f"**The numbers.** Here $s\\Delta = {logit_scale:g} \\cdot {summary['twin_margin']:.2f} = {s_delta:.1f}$: "
    f"$p \\approx {latex_sci(p_twin)}$, $p/(2B) \\approx {latex_sci(p_twin / (2 * B))}$, "
    "twice that for both directions: "
    f"{p_twin / B:.2g}, the fp32 value above. In fp16 each half of the gradient vanishes once "
    f"$p/(2B) < 2^{{-25}}$, i.e. from $s\\Delta \\approx \\ln(2^{{25}}/2B) = {math.log(1 / (fp16_half * 2 * B)):.1f}$ "
    f"for B = {B} (the probability $p$ itself from $\\ln 2^{{25}} = {math.log(1 / fp16_half):.1f}$); in fp32 only "
    f"from $\\ln(2^{{150}}/2B) = {math.log(1 / (fp32_half * 2 * B)):.1f}$ (for $p$ itself "
    f"{math.log(1 / fp32_half):.1f}), a cosine margin of {math.log(1 / (fp32_half * 2 * B)) / logit_scale:.2f} "
    f"at s = {logit_scale:g}; loss scaling by $2^{{16}}$ adds {16 * math.log(2):.1f} logits to the fp16 threshold. "
    + (f"Under the boost the twin's logit is ahead of the positive, so $p \\approx 1$ and its gradient is "
       f"$2/(2B) = {1 / B:.4g}$, which no precision loses." if boosted_ahead else
       "Under the boost the twin's logit is still behind its positive, so its gradient is smaller than $1/B$.")
))

# %% [markdown]
# **(b) Forty steps.** Now let the batch learn. The 32 embeddings become free parameters
# (`torch.nn.Parameter`, re-normalised inside the loss), and plain SGD takes 40 steps of each loss from the
# same start. Every step records the loss, the gradient on the twin's logit $z_{01}$ and the twins' margin
# (the smallest lead of a twin's positive over the other twin).

# %%
def optimise(make_logits, steps=40, lr=2e-3):
    V, T = torch.nn.Parameter(V0.clone()), torch.nn.Parameter(T0.clone())
    optimiser = torch.optim.SGD([V, T], lr=lr)
    history = {"loss": [], "twin_grad": [], "twin_margin": [], "twin_caption_similarity": []}
    for step in range(steps + 1):  # the last pass only measures
        v, t = F.normalize(V, dim=1), F.normalize(T, dim=1)
        Z = make_logits(v, t)
        Z.retain_grad()
        loss = contrastive_ce(Z)
        optimiser.zero_grad()
        loss.backward()
        history["loss"].append(loss.item())
        history["twin_grad"].append(Z.grad[TWIN].item())
        history["twin_margin"].append(twin_margin(v, t))
        history["twin_caption_similarity"].append((t[0] @ t[1]).item())
        if step < steps:
            optimiser.step()
    return history


INFONCE = r"InfoNCE $\mathcal{L}_\mathrm{CLIP}$ (Eq. 1)"  # legend labels, in the paper's names
L_HN = rf"$\mathcal{{L}}_\mathrm{{HN}}$ (Eq. 2, γ = {gamma:g})"
histories = {INFONCE: optimise(logits_of["InfoNCE"]), L_HN: optimise(logits_of["L_HN"])}
for name, history in zip(("InfoNCE", "L_HN"), histories.values(), strict=True):
    print(f"{name:8s} twin margin {history['twin_margin'][0]:.3f} → {history['twin_margin'][-1]:.3f} after 40 steps; "
          f"loss {history['loss'][0]:.3g} → {history['loss'][-1]:.3g}; "
          f"gradient on z_01 {history['twin_grad'][0]:.3g} → {history['twin_grad'][-1]:.3g}")
print(f"the margin L_HN asks for, γ·Ḡ_01: {gamma * histories[L_HN]['twin_caption_similarity'][0]:.3f} → "
      f"{gamma * histories[L_HN]['twin_caption_similarity'][-1]:.3f}")
fig = plot_twin_dynamics(histories, gamma, boosted=L_HN)
exp.save_figure(fig, "02_twin_dynamics")
show(fig)

# %%
clip_run, hn_run = histories[INFONCE], histories[L_HN]
clip_moved = clip_run["twin_margin"][-1] - clip_run["twin_margin"][0]
target = [gamma * g for g in hn_run["twin_caption_similarity"]]
hn_reached = hn_run["twin_margin"][-1] >= target[-1]
display(Markdown(
    ("**What you see.** InfoNCE stands still: " if abs(clip_moved) < 1e-3 else
     f"**What you see.** InfoNCE moves the twins' margin by {clip_moved:+.3f}: ")
    + f"with a gradient of {max(abs(g) for g in clip_run['twin_grad']):.1g} on the twin's logit, its margin goes "
    f"{clip_run['twin_margin'][0]:.3f} → {clip_run['twin_margin'][-1]:.3f} in {len(clip_run['loss']) - 1} steps — "
    "the batch is \"solved\", the twins are not. L_HN pushes on the twin at full strength until the margin "
    f"approaches the one it asks for, γḠ_01 (dotted). That target itself moves from {target[0]:.3f} to "
    f"{target[-1]:.3f}: Ḡ is detached but recomputed every step, and the steps that push each image away from the "
    "other twin's caption also move the two captions (the drift of App. B.2 and Table 3c). "
    + (f"Once the lead exceeds γḠ_01, L_HN saturates in turn — but only after the twins have been separated by "
       f"the full margin, {hn_run['twin_margin'][-1]:.3f} here (loss {hn_run['loss'][-1]:.2g})."
       if hn_reached else
       f"After {len(hn_run['loss']) - 1} steps the twins' margin is {hn_run['twin_margin'][-1]:.3f}, still short of "
       f"the target {target[-1]:.3f}, so L_HN keeps pushing (loss {hn_run['loss'][-1]:.2g}).")
))

# %% [markdown]
# *Why plain SGD?* Its step is proportional to the gradient, as the argument needs. Adam divides each
# parameter's step by the running size of that parameter's own gradient, so here, where every embedding is
# its own parameter, it would blow a 10⁻⁸ gradient up to a full step (as long as it stays above Adam's
# ε = 10⁻⁸) — but not an exact 0, as in fp16. In a network the parameters are shared by all pairs of all
# batches, and a solved pair's tiny gradient is drowned by the others' instead of being rescaled.

# %% [markdown]
# ## 3. The arithmetic of saturation, in general
# The constructed batch was one point of a general picture. Take a batch of B pairs in which every positive
# leads every negative by the same cosine margin Δ, so each logit gap is s·Δ. InfoNCE's loss is −log of the
# positive's softmax probability; the gradient on a negative logit is that negative's softmax probability
# p ≈ e^(−s·Δ) (divided by 2B in the batch loss). Computed with torch in each precision, exactly as the
# training loss is:

# %%
thresholds = {dtype: saturation_thresholds(logit_scale, micro_batch_size, dtype)
              for dtype in (torch.float32, torch.bfloat16, torch.float16)}
display(Markdown(thresholds_table(thresholds.values())))
fp32 = thresholds[torch.float32]

# %%
sweep = margin_sweep(torch.linspace(0, 1.2, 121), logit_scale, micro_batch_size)
fig = plot_fp32_saturation(sweep, thresholds[torch.float32])
exp.save_figure(fig, "02_fp32_saturation")
show(fig)

# %%
half_precision = [thresholds[d]["negative_grad_zero_margin"] for d in (torch.bfloat16, torch.float16)]
display(Markdown(
    f"**What this means.** In fp32 the *loss* rounds to exactly zero from a logit gap of "
    f"{fp32['loss_zero_logit_gap']:.1f} (Δ = {fp32['loss_zero_margin']:.3f} at s = {logit_scale:g}), long before "
    f"the *gradient* does: a negative's gradient e^(−s·Δ) only underflows at s·Δ = "
    f"{fp32['negative_grad_zero_logit_gap']:.1f}, a cosine margin of {fp32['negative_grad_zero_margin']:.3f}"
    + (" — more than 1, so the positive cosine must beat a negative by more than 1. That is possible (cosines "
       "live in [−1, 1]) but demanding. " if fp32["negative_grad_zero_margin"] > 1 else ". ")
    + f"The paper's \"exactly zero gradient in {100 * SATURATION['grad_zero_clip']:.0f} % of measurements\" (Fig. 4) "
    "therefore needs very well-separated batches, or reduced precision: in bf16 and fp16 the gradient vanishes from "
    f"Δ = {half_precision[0]:.3f} and {half_precision[1]:.3f}. Loss < {SOLVED_LOSS_THRESHOLD:g}, the paper's other "
    f"criterion (\"solved\"), is reached at Δ = {fp32['solved_margin']:.3f}."
))

# %% [markdown]
# ## 4. A real batch
# The first micro-batch that fine-tuning would draw, encoded by the pre-trained model, at the model's own
# learned logit scale:

# %%
images, texts, model_scale = exp.first_training_batch()
loss_clip = package_infonce(images, texts, model_scale).item()
loss_hn = package_hn(images, texts, model_scale).item()
print(f"B = {len(images)}, s = {model_scale:.1f}")
print(f"L_CLIP = {loss_clip:.4g} ({'solved' if loss_clip < SOLVED_LOSS_THRESHOLD else 'not solved'})")
print(f"L_HN (γ = {gamma}) = {loss_hn:.4g}")

# %% [markdown]
# **Many real batches.** One batch is an anecdote. Encode the whole training split once with the
# pre-trained model, draw one epoch of random micro-batches as a shuffling loader would, and compute both
# losses for each — the measurement behind the paper's "80 % of first-epoch batches solved" (§2.4, Fig. 4),
# before any fine-tuning. The right panel asks *which* batches stay unsolved: those holding a pair of very
# similar captions (a large off-diagonal Ḡ).

# %%
#papermill_description=many_real_batches
model, preprocess, tokenizer = exp.load_model()
train_images, train_texts = encode_dataset(model, PairDataset(exp.pairs("train", evaluation=False), preprocess,
                                                              tokenizer), device=exp.torch_device, progress=False)
order = torch.randperm(len(train_images), generator=torch.Generator().manual_seed(seed))
batch_losses = {"InfoNCE (L_CLIP)": [], f"L_HN (γ = {gamma})": []}
max_similarity = []
for start in range(0, len(order) - micro_batch_size + 1, micro_batch_size):
    rows = order[start : start + micro_batch_size]
    v, t = train_images[rows], train_texts[rows]
    batch_losses["InfoNCE (L_CLIP)"].append(package_infonce(v, t, model_scale).item())
    batch_losses[f"L_HN (γ = {gamma})"].append(package_hn(v, t, model_scale).item())
    G = t @ t.T
    max_similarity.append(G.masked_fill(torch.eye(len(rows), dtype=torch.bool), -1).max().item())
batch_losses = {name: torch.tensor(values) for name, values in batch_losses.items()}
max_similarity = torch.tensor(max_similarity)
solved = {name: (values < SOLVED_LOSS_THRESHOLD).float().mean().item() for name, values in batch_losses.items()}
for name, share in solved.items():
    print(f"{name}: {100 * share:.0f}% of {len(max_similarity)} micro-batches below 1e-3")
print(f"(paper, InfoNCE on DOCCI within epoch 1: {100 * SATURATION['solved_clip_first_epoch']:.0f}%)")

# %%
fig = plot_real_batches(batch_losses, max_similarity, model_scale)
exp.save_figure(fig, "02_real_batches")
show(fig)

# %%
infonce_losses, hn_losses = batch_losses.values()
unsolved = infonce_losses >= SOLVED_LOSS_THRESHOLD
share_solved, share_hn_solved = solved.values()
display(Markdown(
    f"**What you see.** Before fine-tuning starts, InfoNCE is already below {SOLVED_LOSS_THRESHOLD:g} on "
    f"{100 * share_solved:.0f} % of {len(infonce_losses)} random micro-batches — "
    + ("most of them, as on DOCCI within epoch 1" if share_solved > 0.5 else "a minority, unlike DOCCI in epoch 1")
    + f" (the paper: {100 * SATURATION['solved_clip_first_epoch']:.0f} %). "
    + (f"The unsolved ones hold a caption pair more similar than the rest: their most similar pair has mean "
       f"cosine {max_similarity[unsolved].mean():.3f}, against {max_similarity[~unsolved].mean():.3f} in the solved "
       "ones (on the synthetic benchmark such a pair is two members of one near-twin family). "
       if unsolved.any() and (~unsolved).any() else "")
    + "L_HN, whose margin γḠ is largest exactly there, "
    + (f"leaves none of them below {SOLVED_LOSS_THRESHOLD:g}." if share_hn_solved == 0 else
       f"is below {SOLVED_LOSS_THRESHOLD:g} on {100 * share_hn_solved:.0f} % of them.")
))

# %% [markdown]
# ## 5. Where the gradient goes (Eq. 4)
# Write the boosted logits as $z_{ij} = s(S_{ij} + \gamma\bar G_{ij})$ and their row-wise softmax as
# $p_{ij} = \mathrm{softmax}_j(z_{i,:})$ (App. B.2). For the loss of one row, $\ell_i = -\log p_{ii}$, the
# gradient w.r.t. a negative's similarity is its posterior, $\partial\ell_i/\partial S_{ij} = s\,p_{ij}$
# ($j \ne i$; the batch loss divides by 2B and adds the column term), and for two negatives $j, k$ of query $i$
#
# $$\frac{p_{ij}}{p_{ik}} = \exp\big(s(S_{ij}-S_{ik})\big)\cdot\exp\big(s\gamma(\bar G_{ij}-\bar G_{ik})\big).
# \qquad (4)$$
#
# The first factor is InfoNCE's own ratio, the second is the boost: equivalently,
# $p_{ij} \propto e^{sS_{ij}}\,e^{s\gamma\bar G_{ij}}$ — InfoNCE's posterior re-weighted by
# $\exp(s\gamma\bar G_{ij})$ and renormalised over the row.
#
# So the force on negative j is s·p_ij, and adding γḠ multiplies the relative repulsion of two negatives by
# exp(sγ·(Ḡ_ij − Ḡ_ik)).

# %%
caption_gap = 0.1
boost_factor = math.exp(logit_scale * gamma * caption_gap)
display(Markdown(f"At s = {logit_scale:g} and γ = {gamma:g}, a caption-similarity gap of only {caption_gap:g} "
                 f"multiplies it by e^{logit_scale * gamma * caption_gap:g} ≈ {boost_factor:.0f}."))

# %% [markdown]
# Below: one query of the real batch, its negatives sorted by caption similarity, with the standard and the
# boosted posterior. Which query? One where the boost changes something: the query whose most
# caption-similar negative gains the largest share of the query's negative gradient.

# %%
reweighting = boost_reweighting(images, texts, model_scale, gamma)
negatives = ~torch.eye(len(images), dtype=torch.bool)
most_similar = reweighting["caption_similarity"].masked_fill(~negatives, -math.inf).argmax(dim=1, keepdim=True)


def share_on_most_similar(weight):
    """Per query: the share of its negative gradient weight on its most caption-similar negative."""
    weight = weight.masked_fill(~negatives, 0.0)
    return (weight.gather(1, most_similar).squeeze(1) / weight.sum(dim=1)).nan_to_num(0.0)


shares = share_on_most_similar(reweighting["weight"]), share_on_most_similar(reweighting["weight_boosted"])
row = int((shares[1] - shares[0]).argmax())
fig = plot_boost_posteriors(reweighting, row=row)
exp.save_figure(fig, "02_boost_posteriors")
show(fig)
standard = hardness_concentration(reweighting["weight"], reweighting["caption_similarity"], top=1)
boosted = hardness_concentration(reweighting["weight_boosted"], reweighting["caption_similarity"], top=1)
display(Markdown(
    f"Query {row}: its most caption-similar negative (Ḡ = {reweighting['caption_similarity'][row].max():.3f}) "
    f"takes {100 * shares[0][row]:.1f} % of its negative gradient under InfoNCE and {100 * shares[1][row]:.1f} % "
    f"under the boost. Over all {len(images)} queries of the batch the average share is {100 * standard:.1f} % "
    f"(InfoNCE) and {100 * boosted:.1f} % (γ = {gamma:g})."
))

# %% [markdown]
# **Try it.** With `interactive=True` the sliders below (press *draw*) redraw the same figure for any γ
# and s (the static figure above is always drawn, so the notebook reads the same without widgets).

# %%
# NBVAL_SKIP
if interactive:
    display(boost_explorer_widget(images, texts, gamma, model_scale))

# %% [markdown]
# ## 6. Gradient dynamics during fine-tuning (Fig. 4)
# Every `monitor_every` optimizer steps the monitor takes the current batch and, without changing the
# training trajectory, computes both losses and the full-parameter gradients of each in fp32: their norms,
# whether they are exactly zero, and the cosine between them. (Cost: two extra backward passes on measured
# steps only.)

# %%
#papermill_description=gradient_dynamics
# NBVAL_IGNORE_OUTPUT
dynamics = exp.run(objective=dynamics_objective, gamma=gamma, epochs=dynamics_epochs,
                   train_fraction=dynamics_fraction, monitor_every=monitor_every)
measurements = exp.gradient_measurements(dynamics)

# %%
fig = plot_gradient_dynamics(measurements, dynamics["history"])
exp.save_figure(fig, "02_gradient_dynamics")
show(fig)

# %%
# NBVAL_IGNORE_OUTPUT
display(Markdown(diagnostics_table(dynamics["diagnostics"], SATURATION)))

# %%
print(exp.save_json("saturation", {
    "thresholds": {t["dtype"]: t for t in thresholds.values()},
    "real_batch": {"batch_size": len(images), "logit_scale": model_scale, "loss_clip": loss_clip,
                   "loss_hn": loss_hn, "concentration_standard": standard, "concentration_boosted": boosted},
    "dynamics": {"objective": dynamics_objective, "diagnostics": dynamics["diagnostics"],
                 "run_dir": dynamics["run_dir"]},
}).name)

# %%
# NBVAL_IGNORE_OUTPUT
display(Markdown(reading_the_dynamics(share_solved, dynamics["diagnostics"], dynamics["history"], SATURATION)))

# %% [markdown]
# With `backbone` set to longclip-L.pt and `dataset="docci"` this chapter measures the real thing: every
# sentence above that quotes a number is rendered from this run.

# %% [markdown]
# ## Exercises
# 1. **A fixed margin.** Metric learning often adds one constant margin $m$ to every negative logit:
#    logits $s(S + m(\mathbf{1}-I))$. Implement `fixed_margin_loss(v, t, s, m)` beside `boosted_loss`, check
#    that $m = 0$ gives Eq. 1, and compare it with Eq. 2 on the constructed batch at $m = \gamma\bar G_{01}$
#    (the boost Eq. 2 gives the twin). (a) By Eq. 4, how does each change the relative repulsion of the
#    twin and of an easy negative, compared with InfoNCE? (b) Which negatives does each leave unresolved
#    (lead smaller than the margin it asks for), and what share of the gradient on negative logits goes to
#    the twin?
# 2. **When is the twin no longer solved?** At s = 100, find the γ from which L_HN of the constructed batch
#    exceeds 10⁻³. Predict it first from the twin's boosted logit gap $s(\Delta - \gamma\bar G_{01})$ (the twin
#    appears in two rows and two columns of the batch loss), then find it by bisection.
# 3. **Predict the underflow.** For a batch in which every positive leads every negative by the same cosine
#    margin Δ (section 3), predict from fp16's smallest subnormal ($2^{-24} \approx 6\cdot10^{-8}$) the Δ at
#    s = 100 from which the gradient on a negative logit is exactly 0 when the logits are fp16 — (a) for one
#    query's own loss $\ell_i$, (b) for the symmetric batch loss with B = 16 — then measure both.
#
# Solutions: `notebooks/solutions/chapter02.py` (one function per exercise, returning its numbers; checked by
# `tests/test_exercises.py`).
