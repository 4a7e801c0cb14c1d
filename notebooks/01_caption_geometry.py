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
# project on other scenes, with captions in many other voices: `results/README.md`). Set the
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
output_dir = None  # None: $HNCLIP_OUTPUT_DIR or runs/notebooks; figures and geometry.json go there
interactive = True  # progress bars and widgets; papermill batch runs pass False

# %% tags=[]
# %matplotlib inline
#papermill_description=setup
from chapter01_helpers import (
    batch_caption_matrix,
    near_duplicate_pairs,
    near_twin_html,
    off_diagonal_mean,
    plot_batch_matrix,
    plot_caption_similarity,
    plot_hardness_buckets,
    plot_near_twins,
)
from IPython.display import HTML, Markdown, display

from hnclip_core.replication.experiment import Experiment
from hnclip_core.replication.geometry import caption_similarity_stats, encode_captions, in_batch_hardness
from hnclip_core.replication.paper import CAPTION_GEOMETRY, IN_BATCH_AT_LEAST_0_8
from hnclip_core.replication.plots import show
from hnclip_core.replication.report import geometry_table

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

# %% tags=[]
geometry = caption_similarity_stats(features)
display(Markdown(geometry_table({f"{exp.eval_name} (ours)": geometry.as_dict()}, CAPTION_GEOMETRY)))

# %% tags=[]
fig = plot_caption_similarity(geometry, exp.eval_name, paper=CAPTION_GEOMETRY)
exp.save_figure(fig, "01_caption_similarity")
show(fig)

# %% [markdown] tags=[]
# **Reading the plot.** The hardest-negative distribution (b) is what matters for Recall@1: if it sits near
# 1, almost every caption has a near-twin somewhere in the test set. On the synthetic benchmark that is by
# construction (each family's members differ in one detail). The *pairwise* distribution (a) says how
# crowded the whole space is. Long-CLIP-L packs real captions into a narrow cone (mean 0.84); the toy's
# text encoder spreads unrelated captions far apart (mean ≈ 0.14) while keeping each family's twins at
# ≈ 0.96 — one of the places where the toy is an imperfect stand-in: pretraining it longer made it a
# stronger initialisation and spread its captions further at every step (`results/README.md`). For HN-CLIP
# this means the boost γḠ falls almost entirely on the near-twins.

# %% [markdown] tags=[]
# ## 3. One batch's Ḡ (Fig. A5)
# This matrix — caption cosines within one batch, diagonal masked — is, scaled by γ, *everything* HN-CLIP
# adds to the logits. Bright off-diagonal cells are negatives that will have to be beaten by a larger margin.

# %% tags=[]
batch_indices, batch_matrix = batch_caption_matrix(features, batch_size=matrix_batch_size, seed=seed)
fig = plot_batch_matrix(batch_matrix, [captions[i] for i in batch_indices.tolist()],
                        title=f"Ḡ of one random batch of {matrix_batch_size}")
exp.save_figure(fig, "01_batch_matrix")
show(fig)

# %% [markdown] tags=[]
# ## 4. How hard are the negatives a caption actually meets? (Fig. A6C)
# In training, a caption only competes with the other captions of its batch. Drawing batches of the
# paper's effective size as a shuffling loader does, we sort every (caption, negative) pair into hardness
# buckets. The paper finds 86–99 % of in-batch negatives at Ḡ ≥ 0.8 on its four benchmarks.

# %% tags=[]
hardness = in_batch_hardness(features, batch_size=min(in_batch_size, len(captions)), seed=seed)
fig = plot_hardness_buckets({f"{exp.eval_name}\nin-batch (B={hardness.batch_size})": hardness,
                             f"{exp.eval_name}\nall pairs": geometry.bucket_fractions})
exp.save_figure(fig, "01_hardness_buckets")
show(fig)
low, high = IN_BATCH_AT_LEAST_0_8
print(f"in-batch negatives with Ḡ ≥ 0.8: {100 * hardness.fraction_at_least[0.8]:.1f}% "
      f"(paper: {100 * low:.0f}–{100 * high:.0f}%)")

# %% [markdown] tags=[]
# ## 5. What near-twins look like (Fig. A1–A4)
# The paper shows pairs near the 90th percentile of hardest-negative similarity: "striking but not
# extreme". Below each image is where its caption differs from its twin's (a word-level diff);
# everything else is shared, word for word. The highlighted text shows the full captions.

# %% tags=[]
twins = near_duplicate_pairs(features, captions, top=3, quantile=0.9)
images = [(pairs[twin.i].load_image(), pairs[twin.j].load_image()) for twin in twins]
fig = plot_near_twins(twins, images, captions)
exp.save_figure(fig, "01_near_twins")
show(fig)

# %% tags=[]
display(HTML(near_twin_html(twins[0], captions)))

# %% [markdown] tags=[]
# ## 6. Save the numbers for the results chapter

# %% tags=[]
summary = {
    "dataset": exp.eval_name,
    "backbone": backbone,
    "geometry": geometry.as_dict(),
    "in_batch": hardness.as_dict(),
    "batch_matrix_off_diagonal_mean": off_diagonal_mean(batch_matrix),
    "near_twins": [{"i": t.i, "j": t.j, "similarity": t.similarity} for t in twins],
}
print(exp.save_json("geometry", summary).name)

# %% [markdown] tags=[]
# **Take-away.** Every caption has a near-twin, and the loss will see them as negatives. Chapter 2 shows
# what InfoNCE does with such batches — and why, under a strong initialisation, it can stop learning
# before the near-twins are resolved.

# %% [markdown] tags=[]
# ## Exercises
# 1. **The table by hand.** From `features` alone, compute in a few lines of torch the mean pairwise
#    similarity, each caption's hardest companion (value and index) with their mean, and the share of pairs
#    with Ḡ ≥ 0.8, then check them against `geometry` (`caption_similarity_stats`). Why must the diagonal be
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
