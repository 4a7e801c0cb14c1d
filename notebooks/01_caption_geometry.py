# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] tags=[]
# # Chapter 1 — Caption geometry: why dense captions are near-duplicates
#
# *Replicates §2.1, Fig. 1, Fig. A1–A6 and Table A1 of "Which Negatives Matter? Ask Your Text Encoder"
# (HN-CLIP, arXiv 2608.18521).*
#
# HN-CLIP starts from a measurement that needs nothing but a text encoder. Encode every caption of a
# dense-caption benchmark and compare the captions **with each other**. The paper finds, with the
# pre-trained Long-CLIP-L text encoder, that an average pair of DOCCI captions has cosine similarity
# **0.84**, and that each caption's closest companion ("hardest negative") sits at **0.93**. Long
# descriptions of different scenes reuse the same vocabulary, so most captions look alike to the encoder
# and a few look *almost identical*.
#
# Why this matters for training: in a contrastive batch, every other caption is a negative. If nearly all
# negatives are easy, InfoNCE solves the batch quickly and stops learning (chapter 2); the few near-twins
# that decide Recall@1 are exactly the ones HN-CLIP targets by adding the caption-similarity matrix Ḡ to
# the logits.
#
# This chapter measures the same statistics on the default data: the embedded **synthetic dense-caption
# benchmark** (procedurally drawn scenes in families of near-duplicates, each family member differing in
# one detail) under the **toy Long-CLIP** text encoder that ships with the package (pretrained once by this
# project on other scenes, with captions in many other voices: `results/README.md`). The benchmark's images are
# photographed through another camera than the pretraining world's (section 5 shows both): as DOCCI's photographs
# are for Long-CLIP, it is a domain the toy has not seen, so fine-tuning has something to learn. Set the
# parameters below to run it on the real thing (e.g. `backbone="/data/longclip-L.pt"`,
# `dataset="docci"`, `data_root="/data/docci"`).

# %% tags=["parameters"]
backbone = "toy"  # "toy" (the embedded toy Long-CLIP) or the path of a Long-CLIP checkpoint (longclip-L.pt)
dataset = "synthetic"  # synthetic, docci, dci, long-dci, urban1k or vg
data_root = None  # folder of the benchmark (not needed for synthetic)
device = "auto"  # auto, cpu, cuda, mps
seed = 0  # which batch is drawn for the Ḡ heatmap and the in-batch statistics
matrix_batch_size = 8  # batch size of the Ḡ heatmap (Fig. A5 uses 8)
in_batch_size = 128  # effective batch of the paper's recipe, for the in-batch hardness buckets
micro_batch_size = 16  # contrastive batch of the paper's naive accumulation: the negatives the loss sees
gamma = 0.5  # boost strength γ of Eq. 2 (the paper's default), for the margins quoted in sections 2–4
output_dir = None  # None: $HNCLIP_OUTPUT_DIR or runs/notebooks; figures and geometry.json go there
interactive = True  # progress bars and widgets; papermill batch runs pass False

# %% tags=[]
# %matplotlib inline
#papermill_description=setup
import itertools
import math

import torch
from chapter01_helpers import (
    REAL_CLIP_GEOMETRY,
    TwinsInBatches,
    batch_caption_matrix,
    camera_parts,
    differing_phrases,
    near_duplicate_pairs,
    near_twin_html,
    off_diagonal_mean,
    plot_batch_matrix,
    plot_cameras,
    plot_caption_similarity,
    plot_cone,
    plot_hardness_buckets,
    plot_near_twins,
    reading_the_batches,
    reading_the_cone,
    reading_the_geometry,
    the_toys_cone,
)
from IPython.display import HTML, Markdown, display

from hnclip_core.evaluate import caption_geometry, encode_dataset
from hnclip_core.replication.experiment import Experiment
from hnclip_core.replication.geometry import caption_similarity_stats, encode_captions, in_batch_hardness
from hnclip_core.replication.paper import CAPTION_GEOMETRY, IN_BATCH_AT_LEAST_0_8
from hnclip_core.replication.plots import show
from hnclip_core.replication.report import geometry_table
from hnclip_core.toy import TOY_RECIPE
from hnclip_core.toy.synthetic import CAMERAS, SyntheticConfig, iter_examples

exp = Experiment(
    backbone=backbone, dataset=dataset, data_root=data_root, device=device, seed=seed,
    output_dir=output_dir, progress=interactive,
)
print(f"backbone: {'embedded toy Long-CLIP' if exp.is_toy else exp.checkpoint}; dataset: {exp.eval_name}")

# %% [markdown] tags=[]
# ## 1. Encode every test caption
# The paper measures the test split with the *pre-trained* text encoder, before any fine-tuning: this is
# the geometry the loss meets at step 0. Captions are tokenised with Long-CLIP's 248-token context.

# %% tags=[]
#papermill_description=encode_captions
# NBVAL_IGNORE_OUTPUT
model, _, tokenizer = exp.load_model()
pairs = exp.pairs("test")
captions = [pair.caption for pair in pairs]
features = encode_captions(model, tokenizer, captions, device=exp.torch_device, progress=interactive)
print(f"{len(captions)} captions encoded into {features.shape[1]}-dimensional unit vectors")

# %% [markdown] tags=[]
# ## 2. Pairwise and hardest-negative similarity (Fig. 1, Table A1)
# Panel (a) is every pair of captions; panel (b) is, for each caption, its single most similar *other*
# caption — the negative that will get the largest boost γḠ. The dashed lines are the paper's benchmarks
# under Long-CLIP-L.
#
# **By hand first.** The caption features are unit vectors, the rows of $T$, so $TT^\top$ holds every
# caption–caption cosine; with its diagonal zeroed it is the $\bar G = \mathrm{stopgrad}(TT^\top)\odot(\mathbf{1}-I)$
# of Eq. 2, here for the whole split instead of one batch. Table A1's two statistics are the mean of its
# $N(N-1)$ off-diagonal entries and the mean, over captions, of the largest entry in each row with the caption
# itself left out. `hnclip_core.evaluate.caption_geometry` computes both a block of rows at a time, never holding
# the $N \times N$ matrix; the cell checks our few lines against it.

# %% tags=[]
T = features  # [N, D]: one unit vector per caption
N = len(T)
not_self = ~torch.eye(N, dtype=torch.bool)
G_bar = (T @ T.T).detach() * not_self  # Ḡ = stopgrad(T Tᵀ) ⊙ (1 − I), Eq. 2
mean_pairwise = G_bar.sum(dtype=torch.float64) / not_self.sum()  # mean over the ordered pairs i ≠ j
hardest = G_bar.masked_fill(~not_self, -math.inf).max(dim=1).values  # each caption's closest other caption
mean_hardest = hardest.double().mean()

package = caption_geometry(features)
torch.testing.assert_close(torch.tensor([mean_pairwise.item(), mean_hardest.item()]),
                           torch.tensor([package["mean_pairwise"], package["mean_hardest"]]))
print(f"by hand: mean pairwise {mean_pairwise:.3f}, mean hardest companion {mean_hardest:.3f} "
      "(the same as hnclip_core.evaluate.caption_geometry)")

# %% [markdown] tags=[]
# From here on the chapter uses `caption_similarity_stats`, which computes the same two means (and each
# caption's hardest companion with its index) together with the histograms of Fig. 1 and the hardness buckets
# of Fig. A6C.

# %% tags=[]
geometry = caption_similarity_stats(features)
display(Markdown(geometry_table({f"{exp.eval_name} (ours)": geometry.as_dict()}, CAPTION_GEOMETRY)))

# %% tags=[]
fig = plot_caption_similarity(geometry, exp.eval_name, paper=CAPTION_GEOMETRY)
exp.save_figure(fig, "01_caption_similarity")
show(fig)

# %% tags=[]
twin_threshold = 0.8  # Fig. A6C's hard buckets start here: a companion this close is a "near-twin" below
with_twin = float((geometry.hardest_negative >= twin_threshold).double().mean())
display(Markdown(reading_the_geometry(geometry, with_twin, twin_threshold, gamma,
                                      synthetic=dataset.startswith("synthetic"), toy=exp.is_toy)))

# %% [markdown] tags=[]
# ## 3. One batch's Ḡ (Fig. A5)
# This matrix — caption cosines within one batch, diagonal masked — is, scaled by γ, *everything* HN-CLIP
# adds to the logits. Red off-diagonal cells are negatives that will have to be beaten by a larger margin; blue
# ones (a negative cosine) lower the bar instead. Rows are labelled by each caption's rarest words in the batch.

# %% tags=[]
batch_indices, batch_matrix = batch_caption_matrix(features, batch_size=matrix_batch_size, seed=seed)
fig = plot_batch_matrix(batch_matrix, [captions[i] for i in batch_indices.tolist()],
                        title=f"Ḡ of one random batch of {matrix_batch_size}")
exp.save_figure(fig, "01_batch_matrix")
show(fig)
batch_negatives = batch_matrix[~torch.eye(matrix_batch_size, dtype=torch.bool)]
brightest = float(batch_negatives.max())
display(Markdown(
    f"**What you see.** This batch's off-diagonal mean is {off_diagonal_mean(batch_matrix):.2f} and its largest "
    f"cell {brightest:.2f}: "
    + (f"it holds a near-twin pair (Ḡ ≥ {twin_threshold:g}), a negative that must now be beaten by a margin of "
       f"{gamma * brightest:.2f} (γ = {gamma:g})" if brightest >= twin_threshold else
       f"none of its pairs reaches Ḡ ≥ {twin_threshold:g}, so every negative here gets a margin of at most "
       f"{gamma * brightest:.2f} (γ = {gamma:g})")
    + (", and the batch is red all over, as the paper's Fig. A5 batches are."
       if float(batch_negatives.min()) >= twin_threshold else
       ", while the paper's Fig. A5 batches are red all over. Section 4 counts how often a batch holds a near-twin.")
))

# %% [markdown] tags=[]
# ## 4. How hard are the negatives a caption actually meets? (Fig. A6C)
# In training, a caption only competes with the other captions of its batch. Drawing batches of the
# paper's effective size as a shuffling loader does, we sort every (caption, negative) pair into hardness
# buckets. The paper finds 86–99 % of in-batch negatives at Ḡ ≥ 0.8 on its four benchmarks.
#
# Under naive accumulation, though, each micro-batch of 16 is its own contrastive batch (chapter 3): the
# negatives L_HN can boost are the other captions of the micro-batch. So we also ask how often a caption's
# near-twins land in the same batch as the caption. A batch's other B − 1 captions are drawn without
# replacement from the N − 1 others; if k of those are near-twins, the batch holds none of them with
# probability $\prod_{m=0}^{B-2} \frac{N-1-k-m}{N-1-m}$.

# %% tags=[]
hardness = in_batch_hardness(features, batch_size=min(in_batch_size, len(captions)), seed=seed)
fig = plot_hardness_buckets({f"{exp.eval_name}\nin-batch (B={hardness.batch_size})": hardness,
                             f"{exp.eval_name}\nall pairs": geometry.bucket_fractions},
                            paper_at_least_0_8=IN_BATCH_AT_LEAST_0_8)
exp.save_figure(fig, "01_hardness_buckets")
show(fig)
low, high = IN_BATCH_AT_LEAST_0_8
print(f"in-batch negatives with Ḡ ≥ 0.8: {100 * hardness.fraction_at_least[0.8]:.1f}% "
      f"(paper: {100 * low:.0f}–{100 * high:.0f}%)")

# %% tags=[]
near_twins = (G_bar >= twin_threshold).sum(dim=1)  # per caption: how many other captions are its near-twins


def share_meeting_a_twin(near_twins, batch_size):
    """Mean over captions of P(a random batch of `batch_size` holds at least one of the caption's near-twins)."""
    n, m = len(near_twins), torch.arange(batch_size - 1, dtype=torch.float64)
    p_none = ((n - 1 - near_twins[:, None] - m) / (n - 1 - m)).clamp(min=0).prod(dim=1)
    return float((1 - p_none).mean())


in_micro = share_meeting_a_twin(near_twins, micro_batch_size)
in_effective = share_meeting_a_twin(near_twins, hardness.batch_size)
# the same question per micro-batch: one shuffled epoch, and the near-twin pairs (i < j) inside each micro-batch
order = torch.randperm(N, generator=torch.Generator().manual_seed(seed))
micro_batches = order[: N // micro_batch_size * micro_batch_size].view(-1, micro_batch_size)
pairs_per_batch = torch.stack([torch.triu(G_bar[b][:, b] >= twin_threshold, diagonal=1).sum() for b in micro_batches])
holding = pairs_per_batch > 0

twin_pairs = G_bar[G_bar >= twin_threshold]
other_pairs = G_bar[not_self & (G_bar < twin_threshold)]
display(Markdown(reading_the_batches(TwinsInBatches(
    twin=twin_threshold, share_hard=hardness.fraction_at_least[twin_threshold], with_twin=with_twin,
    per_caption=float(near_twins.double().mean()), companions=N - 1, batch=hardness.batch_size, micro=micro_batch_size,
    in_effective=in_effective, in_micro=in_micro,
    twin_margin=gamma * float(twin_pairs.double().mean()) if len(twin_pairs) else None,
    other_margin=gamma * float(other_pairs.double().mean()) if len(other_pairs) else None,
    batches=len(micro_batches), holding=float(holding.double().mean()),
    pairs_in_holding=float(pairs_per_batch[holding].double().mean()) if holding.any() else None),
    gamma, IN_BATCH_AT_LEAST_0_8)))

# %% [markdown] tags=[]
# ## 5. What near-twins look like (Fig. A1–A4)
# The paper shows pairs near the 90th percentile of hardest-negative similarity: "striking but not
# extreme". Below each image is where its caption differs from its twin's (a word-level diff);
# everything else is shared, word for word. The highlighted text shows the full captions.

# %% tags=[]
twin_quantile = 0.9  # the paper's choice (App. A.3)
twins = near_duplicate_pairs(features, captions, top=3, quantile=twin_quantile)
images = [(pairs[twin.i].load_image(), pairs[twin.j].load_image()) for twin in twins]
fig = plot_near_twins(twins, images, captions)
exp.save_figure(fig, "01_near_twins")
show(fig)

# %% tags=[]
display(HTML(near_twin_html(twins[0], captions)))

# %% tags=[]
at_quantile = torch.quantile(geometry.hardest_negative.double(), twin_quantile).item()
median_hardest = geometry.hardest_negative.double().median().item()
shown = sorted(f"{twin.similarity:.3f}" for twin in twins)
first = twins[0]
changed_words = sum(len(phrase.split()) for phrase in differing_phrases(captions[first.i], captions[first.j])[0])
display(Markdown(
    f"**What you see.** Here the {100 * twin_quantile:.0f}th percentile of the hardest-companion cosine is "
    f"{at_quantile:.3f} (the median {median_hardest:.3f}), and the pairs shown sit at cosine "
    + (shown[0] if shown[0] == shown[-1] else f"{shown[0]}–{shown[-1]}") + ". "
    + ("That is within a hundredth of a perfect 1: distribution (b) is piled up against 1, so on this split the "
       "paper's rule picks pairs that are extreme rather than \"striking but not extreme\". "
       if 1 - at_quantile < 0.01 else
       "Striking but not extreme, as the paper intends: the closest pairs of the split lie further up. ")
    + f"The highlighted pair differs in {changed_words} of caption {first.i}'s "
    f"{len(captions[first.i].split())} words, and the encoder scores it {first.similarity:.3f}."
))

# %% [markdown] tags=[]
# The embedded benchmark is photographed: the toy was pretrained on plain renderings of its kind of scene, and the
# benchmark's camera changes how the pixels look. What a scene holds, and every caption, stay the same. The shift
# costs the zero-shot model retrieval accuracy and gives fine-tuning something to learn (chapter 3);
# `camera="plain"` in `hnclip_core.toy.SyntheticConfig` removes it.

# %% tags=[]
if dataset == "synthetic":
    benchmark = SyntheticConfig()
    display(Markdown(f"The benchmark's camera, `{benchmark.camera}`, adds {camera_parts(CAMERAS[benchmark.camera])}."))
    first_of_families = list(itertools.islice(iter_examples(benchmark, "test"), 0, 4 * benchmark.family_size,
                                              benchmark.family_size))
    fig = plot_cameras(first_of_families, benchmark.camera, CAMERAS[benchmark.camera])
    exp.save_figure(fig, "01_cameras")
    show(fig)

# %% [markdown] tags=[]
# ## 6. Why a real CLIP's captions crowd: one common direction across a modality gap
# Sections 2–4 measured how alike the captions are. Here is where that likeness lives. Suppose every caption's
# unit embedding splits into a part along one common direction $u$ and a part orthogonal to it,
# $t_i = a_i\,u + b_i\,t_i^\perp$ with $a_i^2 + b_i^2 = 1$, and an image's embedding $v$ has (almost) nothing along
# $u$. Then
#
# $$\cos(t_i, t_j) = a_i a_j + b_i b_j \cos(t_i^\perp, t_j^\perp), \qquad
#   \cos(v_k, t_i) \approx b_i \cos(v_k, t_i^\perp).$$
#
# With $a^2 = \alpha^2$ for every caption, two captions meet at $\alpha^2 + \beta^2 G^\perp$ ($\beta^2 = 1 - \alpha^2$):
# the common part alone crowds them, whatever their content. Every image–text logit is scaled by $\beta$, so InfoNCE
# at scale $s$ sees an effective scale $s\beta$, and a model can hold crowded captions *and* solved batches only if
# its image–text margins in the remaining part are $1/\beta$ as wide. A real CLIP is such a model: Long-CLIP-L's
# DOCCI captions meet at 0.84 (Table A1) while a matching image and caption meet at only about 0.3, across the
# *modality gap* that contrastive training opens from a narrow cone at initialisation and keeps at a low temperature
# (Liang et al. 2022, "Mind the Gap").
#
# **A cone for the toy.** A toy pretrained on a few thousand scenes has no reason to grow one, and adding a common
# direction to a finished toy crowds its captions but unsolves its batches (`results/README.md`). The toy's recipe
# can therefore hold one from the first step of pretraining, inside plain CLIP weights
# (`PretrainRecipe.caption_cone`, `hnclip_core.toy.pretrain.hold_caption_cone`): one channel of the text tower's
# final LayerNorm has gain 0 and bias $c$, so it outputs the constant $c$ for every caption; the text projection maps
# that channel to the last embedding axis alone, and the image projection maps nothing there. $c$ is reset after
# every step so that $\alpha^2$ is the recipe's share of a typical caption's squared norm, with $s$ held at CLIP's
# 100, so the margins are learned at $s\beta$. The file stays an ordinary Long-CLIP checkpoint, and fine-tuning is
# free to move all of it, as it moves a real CLIP's geometry.
#
# **By hand.** Summing every caption–caption cosine at once gives an identity:
# $\sum_{i \ne j} t_i \cdot t_j = \lVert \sum_i t_i \rVert^2 - N$, so the mean pairwise cosine is the squared length of
# the mean caption $\bar t$, up to $1/N$. Crowded captions *are* a long mean: a common direction
# $u = \bar t / \lVert \bar t \rVert$ (found without knowing how the model was built) along which each caption puts a
# share $a_i^2$ of its squared norm. We check the identity, then measure that share for captions and images, and
# the cosine of matching pairs.

# %% tags=[]
#papermill_description=cone
# NBVAL_IGNORE_OUTPUT
image_features, _ = encode_dataset(model, exp.dataset_of("test"), progress=interactive)

# %% tags=[]
t_mean = T.mean(dim=0, dtype=torch.float64)
from_the_mean = (N**2 * t_mean.pow(2).sum() - N) / (N * (N - 1))  # (‖Σ t_i‖² − N) / (N(N − 1))
torch.testing.assert_close(from_the_mean, mean_pairwise)
u = torch.nn.functional.normalize(t_mean.float(), dim=0)  # the common direction
caption_share = (T @ u).pow(2)  # a_i²
image_share = (image_features @ u).pow(2)
matching_cosine = (image_features * T).sum(dim=1).mean().item()
cone = {"caption_share_mean": caption_share.mean().item(), "image_share_mean": image_share.mean().item(),
        "matching_cosine": matching_cosine, "mean_pairwise": mean_pairwise.item(), "mean_hardest": mean_hardest.item()}
print(f"mean pairwise {mean_pairwise:.3f} = (N²‖t̄‖² − N) / (N(N − 1)) = {from_the_mean:.3f}; captions put "
      f"{100 * cone['caption_share_mean']:.0f} % of their squared norm on u, images "
      f"{100 * cone['image_share_mean']:.1f} %; matching image–text cosine {matching_cosine:.3f}")

# %% tags=[]
fig = plot_cone(caption_share, image_share, cone, real=REAL_CLIP_GEOMETRY, name=exp.eval_name)
exp.save_figure(fig, "01_cone")
show(fig)
display(Markdown(reading_the_cone(cone, REAL_CLIP_GEOMETRY)))
if backbone == "toy":
    display(Markdown(the_toys_cone(TOY_RECIPE.caption_cone)))

# %% [markdown] tags=[]
# ## 7. Save the numbers for the results chapter

# %% tags=[]
summary = {
    "dataset": exp.eval_name,
    "backbone": backbone,
    "geometry": geometry.as_dict(),
    "in_batch": hardness.as_dict(),
    "batch_matrix_off_diagonal_mean": off_diagonal_mean(batch_matrix),
    "near_twins": [{"i": t.i, "j": t.j, "similarity": t.similarity} for t in twins],
    "cone": cone,
}
print(exp.save_json("geometry", summary).name)

# %% tags=[]
display(Markdown(
    "**Take-away.** "
    + (f"Nearly every caption ({100 * with_twin:.0f} %) has" if with_twin >= 0.9 else
       f"{100 * with_twin:.0f} % of the captions have")
    + f" a near-twin (Ḡ ≥ {twin_threshold:g}) in the test split, the hardest companions at mean cosine "
    f"{geometry.mean_hardest:.2f}"
    + (f", but the loss meets that twin as a negative only when the loader draws both into one micro-batch: for "
       f"{100 * in_micro:.0f} % of the captions per epoch here. The margin γḠ is strongest where the twins are, "
       "yet only where a batch happens to hold them. " if in_micro < 0.5 else
       f", and {100 * in_micro:.0f} % of the captions meet a near-twin in their micro-batch, so the loss sees "
       "near-twins as negatives at every step. ")
    + "Chapter 2 shows what InfoNCE does with such batches — and why, under a strong initialisation, it can stop "
    "learning before the near-twins are resolved."
))

# %% [markdown] tags=[]
# ## Exercises
# 1. **The table by hand, completed.** Section 2 computed the two means from `features` in a few lines of
#    torch. Extend them: each caption's hardest companion as value *and* index, and the share of pairs with
#    Ḡ ≥ 0.8, then check all of them against `geometry` (`caption_similarity_stats`). Why must the diagonal be
#    masked before taking the hardest companion, and why may a mean over ordered pairs i ≠ j stand for the
#    package's mean over unordered pairs i < j?
# 2. **Twins and strangers** (synthetic benchmark). Each family is a base scene and members that differ from
#    it in one detail; `synthetic_metadata.jsonlines`, beside the benchmark's `images/` folder, records each
#    pair's `family_id` and `changed_detail` (the image file's name is the `example_id`). Print a base caption
#    and one of its members side by side (`differing_phrases` in `chapter01_helpers.py` shows where they differ)
#    and predict their Ḡ before reading it off `features`. Then, over the whole split: the mean Ḡ within families
#    and across families, and the share of captions whose hardest companion (`geometry.hardest_negative_index`)
#    is a family member. Which negatives will γḠ boost the most?
# 3. **Which edit makes the closest twin?** Group the Ḡ between every member and its family's base by the kind
#    of edit (`changed_detail["kind"]`: colour, shape, size, swap or background) and count the words in which
#    the two captions differ. Predict the order first: is the twin with the fewest changed words the one the
#    encoder finds most similar?
#
# Solutions: `notebooks/solutions/chapter01.py` (one function per exercise, taking the features so that any
# text encoder can be measured; checked by `tests/test_exercises.py`).
