# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] tags=[]
# # Chapter 3 — Fine-tuning: InfoNCE vs HN-CLIP
#
# *Replicates Table 1, Fig. 3, Fig. 5, Fig. A9 and Fig. A10 of HN-CLIP (arXiv 2608.18521).*
#
# Chapters 1–2 showed that dense captions come with near-twins and that InfoNCE can stop learning before
# it separates them. Here we fine-tune the same pre-trained model three ways and compare retrieval:
#
# * **zero-shot** — the pre-trained model as it is (the paper's "Long-CLIP" row);
# * **InfoNCE** (`clip`, Eq. 1) — standard symmetric contrastive fine-tuning;
# * **HN-CLIP** (`hn+tok`, Eq. 3) — the boosted loss L_HN of Eq. 2 (γḠ added to the negative logits) plus
#   the FILIP token-level term L_tok with λ = 1.
#
# Everything else — data, batches, optimiser, schedule, seed — is identical; only the loss changes. The
# paper's recipe (§3.1) is AdamW at lr 2e-6, cosine schedule with warm-up, effective batch 128 (16 × 8
# gradient accumulation) and 10 epochs on Long-CLIP-L. The embedded default keeps the batch layout and
# schedule, but uses the toy model's learning-rate preset (`TOY_FINETUNE`: the rate at which InfoNCE, the
# baseline, ends best in the sweep in `results/README.md`, so that HN-CLIP is compared with InfoNCE at its best;
# the setup cell prints it) and 3 epochs so that the chapter runs in a few minutes on a laptop CPU.
#
# Runs are cached: a second execution with the same parameters reads the stored results instead of training
# again (the run folders are under `output_dir/runs/`).

# %% tags=["parameters"]
backbone = "toy"  # "toy" or the path of a Long-CLIP checkpoint (longclip-L.pt)
dataset = "synthetic"  # training benchmark: synthetic, docci, dci, long-dci or vg
data_root = None  # its folder (not needed for synthetic)
eval_dataset = None  # evaluate on another benchmark (e.g. "urban1k" after training on vg); None: dataset
eval_data_root = None  # folder of eval_dataset
device = "auto"
seed = 0
epochs = 3  # the paper trains 10
lr = None  # None: 2e-6 (paper) for a real checkpoint, the toy's calibrated preset for the toy
micro_batch_size = 16
accumulation_steps = 8  # effective batch: micro_batch_size × accumulation_steps (128)
accumulation = "naive"  # naive: each micro-batch is its own contrastive batch; cached: all 128 negatives
train_fraction = 1.0
baseline = "clip"  # the objective HN-CLIP is compared with
method = "hn+tok"  # HN-CLIP (Eq. 3)
output_dir = None  # None: $HNCLIP_OUTPUT_DIR or runs/notebooks
interactive = True  # progress bars; papermill batch runs pass False

# %% tags=[]
# %matplotlib inline
#papermill_description=setup
import dataclasses

import torch
import torch.nn.functional as F
from chapter03_helpers import (
    epoch_micro_batches,
    family_ids,
    losses_table,
    micro_batch_losses,
    own_family_top1,
    package_first_steps,
    plot_retrievals,
    plot_training_losses,
    reading_the_convergence,
    reading_the_loop,
    reading_the_losses,
    reading_the_results,
)
from IPython.display import Markdown, display
from torch.utils.data import default_collate

from hnclip_core.data import PairDataset
from hnclip_core.evaluate import encode_dataset, retrieval_examples
from hnclip_core.features import encode_batch
from hnclip_core.longclip import keep_first_positions_frozen, load_longclip, longclip_param_groups
from hnclip_core.losses import HNClipTokenLoss, valid_text_token_mask
from hnclip_core.replication.experiment import Experiment
from hnclip_core.replication.objectives import OBJECTIVES
from hnclip_core.replication.paper import DOCCI_RECALL, paper_mean_r1
from hnclip_core.replication.plots import show
from hnclip_core.replication.plots.training import plot_convergence
from hnclip_core.replication.report import recall_table
from hnclip_core.train import cosine_with_warmup, epoch_batches, seed_everything, training_subset

exp = Experiment(
    backbone=backbone, dataset=dataset, data_root=data_root, eval_dataset=eval_dataset,
    eval_data_root=eval_data_root, device=device, seed=seed, epochs=epochs, lr=lr,
    micro_batch_size=micro_batch_size, accumulation_steps=accumulation_steps, accumulation=accumulation,
    train_fraction=train_fraction, output_dir=output_dir, progress=interactive,
)
print(f"train on {exp.dataset}, evaluate on {exp.eval_name}; lr {exp.learning_rate:g}, {epochs} epochs, "
      f"effective batch {micro_batch_size * accumulation_steps} ({accumulation} accumulation)")

# %% [markdown] tags=[]
# ## The objective in full: Eq. 3
# Chapter 2 wrote InfoNCE (Eq. 1) and the boosted L_HN (Eq. 2). HN-CLIP trains their sum with a token-level
# late-interaction term (FILIP, §2.3):
#
# $$\mathcal{L} = \mathcal{L}_\mathrm{HN} + \lambda\,\mathcal{L}_\mathrm{tok}, \qquad \lambda = 1. \tag{3}$$
#
# L_tok compares an image's patch embeddings $x_{i,p}$ ($p = 1 \dots P$) with a caption's word-token embeddings
# $w_{j,k}$ ($k \in T_j$, its tokens without padding and the start token), all L2-normalised. Each patch takes
# its best-matching word, each word its best-matching patch, and both are averaged:
#
# $$\sigma^{I\to T}_{ij} = \frac{1}{P}\sum_{p=1}^{P} \max_{k \in T_j} x_{i,p}^\top w_{j,k}, \qquad
#   \sigma^{T\to I}_{ij} = \frac{1}{|T_j|}\sum_{k \in T_j} \max_{p} x_{i,p}^\top w_{j,k},$$
#
# $$\mathcal{L}_\mathrm{tok} = \tfrac{1}{2}\big[\mathrm{CE}(s\,\sigma^{I\to T}, y) +
#   \mathrm{CE}(s\,(\sigma^{T\to I})^\top, y)\big],$$
#
# with the same in-batch negatives and targets $y_i = i$ as Eq. 1. Written in torch — L_HN as in chapter 2
# (InfoNCE's logits plus the detached margin $s\gamma\bar G$ on the negatives), L_tok with one similarity tensor
# over every (image, caption, patch, word) and two maxima — and both checked against the package's
# `HNClipTokenLoss`, which computes L_tok in memory-bounded chunks:

# %% tags=[]
def hn_loss(images, texts, s, gamma):
    """L_HN of Eq. 2 for unit image and caption features [B, D]: InfoNCE's logits plus the margin sγḠ."""
    with torch.no_grad():  # Ḡ = stopgrad(T Tᵀ) ⊙ (1 − I)
        G_bar = texts @ texts.T
        G_bar.fill_diagonal_(0)
    margin = s * (gamma * G_bar)
    y = torch.arange(len(images), device=images.device)
    return (F.cross_entropy(s * images @ texts.T + margin, y) + F.cross_entropy(s * texts @ images.T + margin, y)) / 2


def filip_token_loss(patches, words, word_mask, s):
    """L_tok of Eq. 3 for patches [B, P, D], words [B, L, D] and the mask of real words [B, L]."""
    patches, words = F.normalize(patches, dim=-1), F.normalize(words, dim=-1)
    similarity = torch.einsum("ipd,jkd->ijpk", patches, words)  # image i, caption j, patch p, word k
    # max(...).values, not amax: on an exact tie amax splits the gradient among the tied entries, max gives it to
    # one of them, as the package does; the training loop below then reproduces the trainer bit for bit
    best_word = similarity.masked_fill(~word_mask[None, :, None, :], float("-inf")).max(dim=3).values
    image_to_text = best_word.mean(dim=2)  # σ^{I→T}: [images, captions]
    best_patch = similarity.max(dim=2).values  # [images, captions, words]
    text_to_image = (best_patch * word_mask[None]).sum(dim=2) / word_mask.sum(dim=1)[None]
    y = torch.arange(len(patches), device=patches.device)
    return (F.cross_entropy(s * image_to_text, y) + F.cross_entropy(s * text_to_image.T, y)) / 2


generator = torch.Generator().manual_seed(seed)
B, P, L, D = 6, 9, 12, 32
patches, words = torch.randn(B, P, D, generator=generator), torch.randn(B, L, D, generator=generator)
token_ids = torch.randint(1, 1000, (B, L), generator=generator)
token_ids[:, 0] = 49406  # the start token, which L_tok leaves out
for i in range(B):
    token_ids[i, 4 + i :] = 0  # captions of different lengths, right-padded
image_features, text_features = (F.normalize(torch.randn(B, D, generator=generator), dim=-1) for _ in range(2))
terms = HNClipTokenLoss(gamma=0.5, token_weight=1.0)(
    image_features, text_features, 100.0, output_dict=True,
    image_tokens=patches, text_tokens=words, text_ids=token_ids)
mine = {"contrastive_loss": hn_loss(image_features, text_features, 100.0, 0.5),
        "token_loss": filip_token_loss(patches, words, valid_text_token_mask(token_ids), 100.0)}
torch.testing.assert_close(mine, terms)
print(f"L_HN = {mine['contrastive_loss'].item():.4f}, L_tok = {mine['token_loss'].item():.4f}, "
      "as HNClipTokenLoss computes them")

# %% [markdown] tags=[]
# ## The training loop, by hand
# The package's trainer (`hnclip_core.train`) minimises Eq. 3 with the recipe of §3.1. Its loop is short. An
# epoch is a permutation of the training pairs fixed by (seed, epoch), cut into effective batches of
# `micro_batch_size × accumulation_steps` pairs. Each optimizer step takes the next effective batch and splits it
# into `accumulation_steps` micro-batches. With `naive` accumulation each micro-batch is a contrastive batch of
# its own (its captions meet only each other, and Ḡ is `micro_batch_size × micro_batch_size`): its loss, divided
# by the number of micro-batches, is backpropagated at once, so the gradients add up in `.grad` while only one
# micro-batch's activations are held. Then one AdamW step at the learning rate of the schedule (linear warm-up,
# then cosine decay), and the schedule moves on. Long-CLIP's rule that the first `KEEP_POSITIONS` rows of the
# positional table never change is a gradient hook on the model (`keep_first_positions_frozen`).
#
# Written out below, with the package's pieces for what is not the loop: the model (`load_longclip`), the data
# (`training_subset`, `epoch_batches`, `PairDataset`), one forward pass (`encode_batch`), the AdamW parameter
# groups and the schedule's formula. Then the same steps through `hnclip_core.train` itself, whose weights after
# each step must equal ours. To keep the check to seconds it runs `loop_steps` optimizer steps of
# `loop_accumulation` micro-batches; the loop is the same for the chapter's `accumulation_steps`. (The `cached`
# reading of accumulation is in `hnclip_core.accumulation`; the loop here is the `naive` one.)

# %% tags=[]
#papermill_description=training_loop
# NBVAL_IGNORE_OUTPUT
def train_by_hand(config, steps):
    """The first `steps` optimizer steps of naive-accumulation fine-tuning on `config` (a TrainConfig)."""
    device = exp.torch_device
    seed_everything(config.seed)  # as the trainer does before it builds the model
    model, preprocess, tokenizer = load_longclip(config.checkpoint, device=device)
    model.train()
    keep_first_positions_frozen(model)
    pairs = exp.pairs(config.train_split, evaluation=False)
    subset = training_subset(len(pairs), config.train_fraction, config.seed).tolist()
    train_set = PairDataset([pairs[i] for i in subset], preprocess, tokenizer)
    optimizer = torch.optim.AdamW(longclip_param_groups(model, config.weight_decay), lr=config.lr)
    total_steps = len(train_set) // config.effective_batch_size * config.epochs
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, cosine_with_warmup(config.warmup_steps, total_steps))
    on_gpu = device.type == "cuda"  # the trainer computes in bf16 autocast there
    size, log, weights = config.micro_batch_size, [], []
    for batch in epoch_batches(len(train_set), config.effective_batch_size, config.seed, epoch=1)[:steps]:
        images, token_ids = (x.to(device) for x in default_collate([train_set[i] for i in batch.tolist()]))
        optimizer.zero_grad(set_to_none=True)
        micro_losses = []
        for start in range(0, len(batch), size):  # the micro-batches of this step
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=on_gpu):
                encoded = encode_batch(model, images[start : start + size], token_ids[start : start + size],
                                       with_tokens=bool(config.token_weight))
                s = model.logit_scale.exp()
                loss = hn_loss(F.normalize(encoded.image_features, dim=-1), F.normalize(encoded.text_features, dim=-1),
                               s, config.gamma)
                if config.token_weight:  # Eq. 3: L_HN + λ L_tok
                    loss = loss + config.token_weight * filip_token_loss(
                        encoded.image_tokens, encoded.text_tokens, valid_text_token_mask(encoded.text_ids), s)
                (loss / config.accumulation_steps).backward()  # the gradients of the micro-batches add up
            micro_losses.append(loss.item())
        log.append({"lr": optimizer.param_groups[0]["lr"], "loss": sum(micro_losses) / len(micro_losses),
                    "micro_losses": micro_losses})
        optimizer.step()
        scheduler.step()
        weights.append({name: p.detach().cpu().clone() for name, p in model.named_parameters()})
    return log, weights


loop_steps, loop_accumulation = 2, 2
loop_config = dataclasses.replace(exp.train_config(method), accumulation="naive", accumulation_steps=loop_accumulation)
log, by_hand = train_by_hand(loop_config, loop_steps)
by_package = package_first_steps(loop_config, loop_steps)
differences = []
for step, (ours, theirs) in enumerate(zip(by_hand, by_package, strict=True), start=1):
    torch.testing.assert_close(ours, theirs)
    differences.append(max((ours[name] - theirs[name]).abs().max().item() for name in ours))
    print(f"step {step}: lr {log[step - 1]['lr']:.3g}, micro-batch losses "
          f"{', '.join(f'{v:.3f}' for v in log[step - 1]['micro_losses'])}; largest weight difference to "
          f"hnclip_core.train: {differences[-1]:.3g}")
display(Markdown(reading_the_loop(log, differences, loop_config.warmup_steps, loop_config.lr, method)))

# %% [markdown] tags=[]
# ## 1. Train both objectives
# The full runs go through the package: `exp.run` calls `hnclip_core.train`, the loop checked above, for every
# epoch, and caches the result. Each run evaluates Recall@K on the test split before training (epoch 0, the
# zero-shot model) and after every epoch.

# %% tags=[]
#papermill_description=train
# NBVAL_IGNORE_OUTPUT
results = {objective: exp.run(objective=objective) for objective in (baseline, method)}

# %% [markdown] tags=[]
# ## 2. Retrieval after fine-tuning (Table 1 layout)
# The last epoch of each run (no selection on the test split). The paper's DOCCI rows are shown for
# orientation only: a different model, data set and scale. Rows carry the paper's names (`OBJECTIVES` maps
# the parameters' short names to them: `clip` is InfoNCE, `hn+tok` is HN-CLIP).

# %% tags=[]
# NBVAL_IGNORE_OUTPUT
rows = {"zero-shot": results[baseline]["zero_shot"]}
rows.update({OBJECTIVES[objective]: results[objective]["last"] for objective in (baseline, method)})
paper_rows = {OBJECTIVES.get(name, name): recall for name, recall in DOCCI_RECALL.items()}
display(Markdown(recall_table(rows, paper=paper_rows)))
gain = results[method]["last"]["mean_r1"] - results[baseline]["last"]["mean_r1"]
print(f"{OBJECTIVES[method]} − {OBJECTIVES[baseline]}: {gain:+.1f} average R@1 (paper, DOCCI: "
      f"{paper_mean_r1('hn+tok') - paper_mean_r1('clip'):+.1f})")

# %% [markdown] tags=[]
# ## 3. Convergence (Fig. 5, Fig. A9)
# Average R@1 per epoch (left) and per retrieval direction (right). The paper's claim is that HN-CLIP leads
# from the first epoch in both directions.

# %% tags=[]
fig = plot_convergence(results)
exp.save_figure(fig, "03_convergence")
show(fig)

# %% tags=[]
# NBVAL_IGNORE_OUTPUT
display(Markdown(reading_the_convergence(results, baseline, method)))

# %% [markdown] tags=[]
# The training losses, the mean over each epoch's optimizer steps, live on different scales: HN-CLIP's holds
# the margin γḠ and the token term L_tok, InfoNCE's holds neither. Their trends show what each objective
# still has to work on:

# %% tags=[]
fig = plot_training_losses(results)
exp.save_figure(fig, "03_training_losses")
show(fig)

# %% [markdown] tags=[]
# Why each curve goes where it goes is read off the micro-batches themselves. Every micro-batch the trainer drew
# (its own order, epoch by epoch, each a contrastive batch of its own as in `naive` accumulation) is scored with
# L_CLIP (Eq. 1) and L_HN (Eq. 2) under fixed models: the zero-shot one, and each fine-tuned one after its last
# epoch. The zero-shot model does not change, so what moves its column from epoch to epoch is the batches, which
# every epoch reshuffles; a training loss is measured while the weights move. "Solved" is chapter 2's
# criterion, a loss below 1e-3 (§2.4).

# %% tags=[]
#papermill_description=micro_batches
# NBVAL_IGNORE_OUTPUT
zero_shot_model, preprocess, tokenizer = exp.load_model()
models = {"zero-shot": zero_shot_model}
for objective in (baseline, method):
    models[OBJECTIVES[objective]] = exp.load_trained_model(results[objective])[0]
run_config = exp.train_config(method)
train_pairs = exp.pairs("train", evaluation=False)
train_set = PairDataset([train_pairs[i] for i in training_subset(len(train_pairs), train_fraction, seed).tolist()],
                        preprocess, tokenizer)  # the trainer's training set, in its order
micro_batches = {epoch: epoch_micro_batches(run_config, len(train_set), epoch) for epoch in range(1, epochs + 1)}
batch_losses = {}
for name, model in models.items():
    train_images, train_texts = encode_dataset(model, train_set, device=exp.torch_device, progress=interactive)
    scale = model.logit_scale.exp().item()
    batch_losses[name] = {epoch: micro_batch_losses(train_images, train_texts, batches, scale, run_config.gamma)
                          for epoch, batches in micro_batches.items()}
display(Markdown(losses_table(results, baseline, method, batch_losses, zero_shot="zero-shot")))
display(Markdown(reading_the_losses(results, baseline, method, batch_losses, zero_shot="zero-shot")))

# %% [markdown] tags=[]
# ## 4. What changes in the ranking (Fig. 3, Fig. A10)
# The paper shows DOCCI queries where the baseline ranks the ground truth far down, usually below a
# near-twin's image, and HN-CLIP ranks it first. To stay honest we pick queries **by rule**: the two with
# the largest rank gain of HN-CLIP over InfoNCE *and* the one with the largest loss. Ground truth is framed
# in green.

# %% tags=[]
#papermill_description=retrieval_examples
# NBVAL_IGNORE_OUTPUT
test_set = exp.dataset_of("test")
features = {objective: encode_dataset(models[OBJECTIVES[objective]], test_set, device=exp.torch_device,
                                      progress=interactive) for objective in (baseline, method)}
named = {OBJECTIVES[objective]: features[objective] for objective in (baseline, method)}  # the figure's labels
examples = retrieval_examples(named, OBJECTIVES[baseline], OBJECTIVES[method], best=2, worst=1, k=5)

# %% tags=[]
# NBVAL_IGNORE_OUTPUT
changes = examples["changes"]
print(f"ground-truth rank under {OBJECTIVES[method]} vs {OBJECTIVES[baseline]}: better for {changes['improved']} "
      f"queries, worse for {changes['worsened']}, unchanged for {changes['unchanged']}")
fig = plot_retrievals(examples, test_set.pairs)
exp.save_figure(fig, "03_retrievals")
show(fig)

# %% tags=[]
print(exp.save_json("fine_tuning", {
    "parameters": {"backbone": backbone, "dataset": dataset, "eval_dataset": exp.eval_name, "epochs": epochs,
                   "lr": exp.learning_rate, "seed": seed, "accumulation": accumulation},
    "runs": {objective: {k: results[objective][k] for k in ("zero_shot", "best", "last", "history", "run_dir")}
             for objective in results},
    "rank_changes": changes,
}).name)

# %% [markdown] tags=[]
# **Reading the results.** Where chance and the ceiling lie, whether HN-CLIP beats InfoNCE, and whether
# fine-tuning beats the zero-shot model — computed from the table's rows and, on the synthetic benchmark, from
# each test pair's near-twin family (the generator records it beside the images) and the zero-shot model's test
# features:

# %% tags=[]
#papermill_description=reading
# NBVAL_IGNORE_OUTPUT
families = family_ids(test_set.pairs)
family_share = None
if families is not None:
    zero_shot_features = encode_dataset(zero_shot_model, test_set, device=exp.torch_device, progress=interactive)
    family_share = {"zero-shot": own_family_top1(*zero_shot_features, families)}
    family_share.update({OBJECTIVES[objective]: own_family_top1(*features[objective], families)
                         for objective in (baseline, method)})
paper_r1 = {"zero-shot": paper_mean_r1("zero-shot"), baseline: paper_mean_r1("clip"), method: paper_mean_r1("hn+tok")}
display(Markdown(reading_the_results(rows, baseline, method, paper_r1, family_share, families,
                                     num_test_pairs=len(test_set), num_train_pairs=len(train_set), is_toy=exp.is_toy)))

# %% [markdown] tags=[]
# ## Exercises
# 1. **Recall@K by hand.** `features[method]` holds the test split's image and caption features (unit rows,
#    row i of one belongs to row i of the other). Build the caption–image cosine matrix, find the rank of each
#    caption's own image (1 + the number of other images scoring at least as high: a tie counts against the
#    query) and of each image's own caption, and compute T→I and I→T R@1/5/10. Check them against
#    `hnclip_core.evaluate.recall_at_k`.
# 2. **Chance levels.** Predict the R@1 of a model that ranks at random over the whole test split, and of one
#    that always finds a caption's family of four but cannot tell its members apart. Simulate both with random
#    features (for the second: every image and caption is its family's direction plus its own noise). Then,
#    for both trained models, what share of the captions whose top-1 image is wrong picked a family twin's
#    image? (`synthetic_metadata.jsonlines`, beside the benchmark's `images/` folder, gives each pair's
#    `family_id`.)
# 3. **What R@1 counts.** Section 4 counts the queries whose ground-truth rank got better or worse. From both
#    models' T→I ranks (`hnclip_core.evaluate.ranks_of_ground_truth`), count the queries that entered rank 1
#    and those that left it, and check that their difference divided by the number of queries is the T→I R@1
#    difference of the two models. How many improved queries does R@1 not see at all?
#
# Solutions: `notebooks/solutions/chapter03.py` (functions of the features; checked by `tests/test_exercises.py`).
