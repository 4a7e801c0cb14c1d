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
# schedule, but uses the toy model's learning-rate preset (1e-4, chosen by the sweep in `results/README.md`)
# and 3 epochs so that the chapter runs in a few minutes on a laptop CPU.
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
import torch
import torch.nn.functional as F
from chapter03_helpers import plot_retrievals, plot_training_losses
from IPython.display import Markdown, display

from hnclip_core.evaluate import encode_dataset, retrieval_examples
from hnclip_core.losses import HNClipTokenLoss, valid_text_token_mask
from hnclip_core.replication.experiment import OBJECTIVES, Experiment
from hnclip_core.replication.paper import DOCCI_RECALL, paper_mean_r1
from hnclip_core.replication.plots import show
from hnclip_core.replication.plots.training import plot_convergence
from hnclip_core.replication.report import recall_table

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
# with the same in-batch negatives and targets $y_i = i$ as Eq. 1. Written in torch — one similarity tensor over
# every (image, caption, patch, word) and two maxima — and checked against the package's `HNClipTokenLoss`,
# which computes the same in memory-bounded chunks:

# %% tags=[]
def filip_token_loss(patches, words, word_mask, s):
    """L_tok of Eq. 3 for patches [B, P, D], words [B, L, D] and the mask of real words [B, L]."""
    patches, words = F.normalize(patches, dim=-1), F.normalize(words, dim=-1)
    similarity = torch.einsum("ipd,jkd->ijpk", patches, words)  # image i, caption j, patch p, word k
    best_word = similarity.masked_fill(~word_mask[None, :, None, :], float("-inf")).amax(dim=3)
    image_to_text = best_word.mean(dim=2)  # σ^{I→T}: [images, captions]
    best_patch = similarity.amax(dim=2)  # [images, captions, words]
    text_to_image = (best_patch * word_mask[None]).sum(dim=2) / word_mask.sum(dim=1)[None]
    y = torch.arange(len(patches))
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
mine = filip_token_loss(patches, words, valid_text_token_mask(token_ids), 100.0)
torch.testing.assert_close(mine, terms["token_loss"])
print(f"L_tok = {mine.item():.4f}, as HNClipTokenLoss computes it (its L_HN: {terms['contrastive_loss'].item():.4f})")

# %% [markdown] tags=[]
# ## 1. Train both objectives
# Each run evaluates Recall@K on the test split before training (epoch 0, the zero-shot model) and after
# every epoch.

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

# %% [markdown] tags=[]
# The training losses live on different scales — L_HN includes the margin γḠ, so it cannot fall to
# InfoNCE's values — but the trend shows what each objective still has to work on:

# %% tags=[]
fig = plot_training_losses(results)
exp.save_figure(fig, "03_training_losses")
show(fig)

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
features = {}
for objective in (baseline, method):
    model, _, _ = exp.load_trained_model(results[objective])
    features[objective] = encode_dataset(model, test_set, device=exp.torch_device, progress=interactive)
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
# **Reading the results.** Three things to read off the table, next to the paper's DOCCI rows.
#
# * **Chance and the ceiling.** The test split has 250 families of 4 near-twins. R@5 and R@10 are ≈ 100 % for
#   every model: the shipped toy finds the right *family* for 97 % of queries (`results/README.md`), so
#   Recall@1 measures only the choice *inside* a family, where guessing gives 25 %. The zero-shot toy's ≈ 61 %
#   is that choice made right well above chance — and everything a fine-tuning can still gain.
# * **HN-CLIP vs InfoNCE reproduces.** With the same data, batches and schedule, the boosted loss ends ahead
#   of InfoNCE by about as much as the paper's +2.0 on DOCCI (printed above), and the convergence plot shows
#   where: InfoNCE loses more in epoch 1, on batches it already calls solved (chapter 2).
# * **Beating zero-shot does not.** Both fine-tuned models end *below* the zero-shot toy, whereas the paper's
#   fine-tuning gains 12–14 points over Long-CLIP-L. No learning rate tried (3e-5 to 3e-4, 3 and 5 epochs)
#   changed that on this toy. One reading: Long-CLIP-L meets DOCCI with a domain gap that fine-tuning closes;
#   the toy was pretrained on the same kind of scenes and every content word, so 2,000 in-domain pairs add
#   little it lacks, while each Adam step still moves every weight. The seeds' spread is in chapter 5
#   (`results/calibration.json`).

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
