# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] tags=[]
# # Chapter 4 — Ablations: γ, the loss components, where Ḡ comes from, and four more studies
#
# *Replicates, at reduced scale, Table 3 (a, b) and Tables A5, A6, A10 of HN-CLIP (arXiv 2608.18521); draws
# Table 3c, Tables A2, A8, A9, Fig. 6 and App. B.2 from the full grids of `make ablations`.*
#
# Three questions, each answered by changing one thing and keeping the rest of the recipe fixed:
#
# * **(a) How strong should the boost be?** γ ∈ {0, …, 1} with L_tok on (γ = 0 is "L_tok only"). The paper:
#   every γ ∈ [0.25, 1] beats γ = 0 in-domain; γ = 0.5 is the default.
# * **(b) Which component does the work?** L_tok and L_HN switched on and off (Eq. 1 → Eq. 3). The paper:
#   L_HN carries the gain; L_tok adds a little on top.
# * **(c) Recomputed or frozen Ḡ?** Ḡ from the live text encoder (default) vs from a frozen copy of the
#   initial one. The paper: recomputing wins 22 of 24 columns, because the margins shrink as training
#   separates the captions — an implicit annealing (App. B.2).
#
# and four more: **(d)** sample efficiency (Fig. 6), **(e)** seeds (Table A8), **(f)** cross-domain transfer
# (Table A10) and **(g)** temperature × γ (App. B.2).
#
# **Scale.** So that the chapter runs in a few minutes, it trains the two knobs of the loss — (a) and (b) —
# here, each configuration on a quarter of the training set for 2 epochs (a configuration the two studies share is
# trained once; (f) re-evaluates three of them). One seed at that scale settles little, so the chapter reads every
# difference of two runs against 2√2σ, with σ the seed spread of average R@1 that (e) measures, and its closing
# sentences are computed from the runs: they say which differences exceed it, and whether the fine-tuned models
# end above or below the zero-shot model they start from (on a strong initialisation a short fine-tuning can end
# below it). Compare the configurations with each other first, and with zero-shot second.
#
# Sections (c), (d), (e) and (g) would need eleven more runs, so by default they *read* the full grids that
# `make ablations` ran (all values, full data, 3 epochs; `results/ablations.json`, the grids chapter 5 sets beside
# the paper); the line under each section's heading says which. Name them in `trained_here` (`"margin_source"`,
# `"fractions"`, `"seeds"`, `"temperature"`) to train their reduced grids here instead.

# %% tags=["parameters"]
backbone = "toy"  # "toy" or the path of a Long-CLIP checkpoint (longclip-L.pt)
dataset = "synthetic"
data_root = None
eval_dataset = None
eval_data_root = None
device = "auto"
seed = 0
scale = "reduced"  # "reduced": a quarter of the data, 2 epochs, short grids; "full": the grids of chapter 5
recipe = None  # e.g. {"epochs": 1}: changes the scale's epochs / train_fraction / warmup_steps
grids = None  # e.g. {"gamma": {"gamma": [0.0, 0.5]}}: replaces values a study varies at this scale
lr = None  # None: 2e-6 (paper) for a real checkpoint, the toy's calibrated preset for the toy
micro_batch_size = 16
accumulation_steps = 8  # effective batch 128, as in the paper
transfer_dataset = "synthetic-alt"  # (f) evaluated on this benchmark; None skips (f)
transfer_data_root = None
trained_here = None  # studies trained here; None: (a), (b) at the embedded default (full grids committed), else all
results_dir = "../results"  # the committed full grids (results/ablations.json) read for the studies not trained here
output_dir = None  # None: $HNCLIP_OUTPUT_DIR or runs/notebooks
interactive = True  # progress bars; papermill batch runs pass False

# %% tags=[]
# %matplotlib inline
#papermill_description=setup
from dataclasses import asdict
from pathlib import Path

from chapter04_helpers import (
    boost_reading,
    components_reading,
    margin_source_reading,
    paired_reading,
    sample_efficiency_reading,
    seeds_reading,
    temperature_reading,
    transfer_reading,
    yardstick_reading,
    zero_shot_reading,
)
from IPython.display import Markdown, display

from hnclip_core.replication import ablations as studies
from hnclip_core.replication import paper
from hnclip_core.replication.experiment import Experiment
from hnclip_core.replication.plots import show
from hnclip_core.replication.plots.ablations import (
    plot_margin_annealing,
    plot_paired_seeds,
    plot_sample_efficiency,
    plot_seed_convergence,
    plot_temperature_grid,
)
from hnclip_core.replication.plots.training import plot_convergence, plot_metric_sweep
from hnclip_core.replication.report import markdown_table, recall_table
from hnclip_core.replication.results_files import Results
from hnclip_core.replication.scorecard import SEED_SPREAD
from hnclip_core.replication.significance import compare, seed_spread
from hnclip_core.replication.tidy import read_results
from hnclip_core.train import train, training_subset

exp = Experiment(
    backbone=backbone, dataset=dataset, data_root=data_root, eval_dataset=eval_dataset,
    eval_data_root=eval_data_root, device=device, seed=seed, lr=lr, micro_batch_size=micro_batch_size,
    accumulation_steps=accumulation_steps, output_dir=output_dir, progress=interactive,
)


# Which studies run here and which are read from the committed full grids (only at the embedded default, where they
# are the same experiment at make ablations' scale).
trained_here, read_here = studies.chapter_plan(exp, scale, trained_here)
full_grids = Results(Path(results_dir)).grids if read_here else {}


def run_study(name: str) -> dict:
    """Train (or read back) every point of one study at this chapter's scale, keyed as chapter 5 keys them, or,
    for a study not in ``trained_here``, read its full grid (the same keys, at ``make ablations``' scale)."""
    if name not in trained_here:
        print(f"{name}: read from the full grid of `make ablations` ({results_dir}/ablations.json: "
              f"{studies.SCALES['full']}), not trained here")
        return full_grids[name]
    points = studies.STUDIES[name].points(scale, (grids or {}).get(name), recipe)
    print(f"{name}: {len(points)} points trained here at scale {scale!r} (a configuration already run is read back)")
    return studies.section(name, [(point, exp.run(**point)) for point in points])


print(f"scale {scale!r}: every run {studies.SCALES[scale] | (recipe or {})}")

# %% [markdown] tags=[]
# ## (a) Boost strength γ (Table 3a, Table A6)

# %% tags=[]
#papermill_description=gamma_sweep
# NBVAL_IGNORE_OUTPUT
gamma_runs = run_study("gamma")

# %% tags=[]
# NBVAL_IGNORE_OUTPUT
display(Markdown(recall_table({f"γ = {g}": run["last"] for g, run in gamma_runs.items()})))
fig = plot_metric_sweep(
    [float(g) for g in gamma_runs], {"T→I R@1": [r["last"]["t2i_r1"] for r in gamma_runs.values()],
             "I→T R@1": [r["last"]["i2t_r1"] for r in gamma_runs.values()]},
    x_label="boost strength γ", y_label="Recall@1 (%)", title="γ sweep (L_tok on; γ = 0 is L_tok only)",
    own_baselines={f"{d} R@1": (f"zero-shot {d} R@1", next(iter(gamma_runs.values()))["zero_shot"][f"{key}_r1"])
                   for d, key in (("T→I", "t2i"), ("I→T", "i2t"))},
)
exp.save_figure(fig, "04_gamma_sweep")
show(fig)

# %% [markdown] tags=[]
# ### One point of (a), by hand
# A study is a list of configurations that differ from chapter 3's recipe in the scale (epochs, the share of the
# training set, the warm-up) and in the one field the study varies. `run_study` hands each to `exp.run`, which
# trains it with `hnclip_core.train` — the loop chapter 3 wrote out and checked step by step against its own — and
# caches the result. Here one point is built field by field and trained by `train` itself, with no study and no
# cache. Every random choice of a run comes from its seed, so its recall must equal the grid's point, query for
# query.

# %% tags=[]
#papermill_description=gamma_by_hand
# NBVAL_IGNORE_OUTPUT
hand_gamma = max(map(float, gamma_runs))  # the strongest boost of the grid: γ is the field it changes
recipe_of_chapter_3 = asdict(exp.train_config("hn+tok"))
hand_config = exp.train_config("hn+tok", **{**studies.SCALES[scale], **(recipe or {}), "gamma": hand_gamma})
print("fields that differ from chapter 3's recipe:",
      {name: value for name, value in asdict(hand_config).items() if value != recipe_of_chapter_3[name]} or "none")
by_hand = train(hand_config, zero_shot=next(iter(gamma_runs.values()))["zero_shot"])
grid_point = next(run for g, run in gamma_runs.items() if float(g) == hand_gamma)
display(Markdown(markdown_table(["epoch", "avg R@1, by hand", "avg R@1, the grid's point"], [
    [h["epoch"], f"{h['mean_r1']:.2f}", f"{g['mean_r1']:.2f}"]
    for h, g in zip(by_hand["history"], grid_point["history"], strict=True)])))
difference = by_hand["last"]["mean_r1"] - grid_point["last"]["mean_r1"]
print(f"γ = {hand_gamma:g}, last epoch: by hand {by_hand['last']['mean_r1']:.2f}, the grid "
      f"{grid_point['last']['mean_r1']:.2f} "
      f"(difference {difference:+.2f})")
assert abs(difference) < 0.1, "the same configuration gave another recall: a run is not a function of its seed"

# %% [markdown] tags=[]
# ## (b) Loss components (Table 3b, Table A5)

# %% tags=[]
#papermill_description=components
# NBVAL_IGNORE_OUTPUT
component_runs = run_study("components")

# %% tags=[]
# NBVAL_IGNORE_OUTPUT
display(Markdown(studies.components_table(component_runs, ks=(1, 5, 10))))
fig = plot_convergence(component_runs)
exp.save_figure(fig, "04_convergence")
show(fig)

# %% [markdown] tags=[]
# ## (c) Recomputed vs frozen Ḡ (Table 3c, Table A2, App. B.2)
# With a frozen Ḡ the margins never relax. The paper reports the mean off-diagonal Ḡ of DOCCI as 0.84, so a
# frozen boost at γ = 0.5, s ≈ 100 is a handicap of about 42 logits that lasts all training; the recomputed
# one decays as the text embeddings separate. The best epoch of each is reported too (the paper's frozen
# variant peaks at epoch 1 on two benchmarks).

# %% tags=[]
#papermill_description=margin_source
# NBVAL_IGNORE_OUTPUT
source_runs = run_study("margin_source")

# %% tags=[]
# NBVAL_IGNORE_OUTPUT
display(Markdown(recall_table({f"Ḡ {source} (last epoch)": run["last"] for source, run in source_runs.items()})))
display(Markdown(studies.margin_source_table(source_runs)))
fig = plot_margin_annealing({f"Ḡ {source}": run for source, run in source_runs.items()})
exp.save_figure(fig, "04_margin_annealing")
show(fig)

# %% [markdown] tags=[]
# ## (d) Sample efficiency (Fig. 6, Table A9)
# The same seeded subset for every method at each fraction. The paper's claim (Fig. 6, Table A9): HN-CLIP on 20 %
# of the data beats the strongest baseline on all of it (`PAPER_FRACTION` below). The cell under the table says
# which effective batch these runs use.

# %% tags=[]
#papermill_description=fractions
# NBVAL_IGNORE_OUTPUT
PAPER_FRACTION = 0.2  # Fig. 6: HN-CLIP on this share of the data against the strongest baseline on all of it
fraction_runs = run_study("fractions")

# %% tags=[]
# NBVAL_IGNORE_OUTPUT
display(Markdown(studies.fractions_table(fraction_runs)))
fig = plot_sample_efficiency(fraction_runs, studies.strongest_baseline(fraction_runs[max(fraction_runs, key=float)]))
exp.save_figure(fig, "04_sample_efficiency")
show(fig)
# The effective batch of (d), read from its runs' configurations, beside this chapter's (and chapter 3's).
configs = [run["config"] for runs in fraction_runs.values() for run in runs.values()]
batches = {(c["micro_batch_size"], c["accumulation_steps"]) for c in configs}
chapter_batch = micro_batch_size * accumulation_steps
smallest, largest = min(map(float, fraction_runs)), max(map(float, fraction_runs))
smallest_pairs = len(training_subset(len(exp.pairs("train", evaluation=False)), smallest, seed))
if len(batches) == 1:
    (micro, accumulation), = batches
    batch = micro * accumulation
    note = (f"Every run of (d) accumulates {accumulation} micro-batches of {micro}: effective batch **{batch}**")
    if batch != chapter_batch:
        note += (f", where the rest of this chapter and chapter 3 use {micro_batch_size} × {accumulation_steps} = "
                 f"{chapter_batch}. {100 * smallest:g} % of the training set is {smallest_pairs} pairs"
                 + (f", fewer than one batch of {chapter_batch}" if smallest_pairs < chapter_batch else "")
                 + f". So its {100 * largest:g} % row is not chapter 3's run even where the data match: its "
                 f"batches are {'smaller' if batch < chapter_batch else 'larger'}, and it takes "
                 f"{chapter_batch / batch:g}× as many optimizer steps per epoch.")
    else:
        note += f", as in the rest of this chapter and in chapter 3 ({100 * smallest:g} % is {smallest_pairs} pairs)."
else:
    note = f"The runs of (d) use several batch shapes (micro-batch, accumulation): {sorted(batches)}."
display(Markdown(note))

# %% [markdown] tags=[]
# ## (e) Seeds (Table A8)
# The seed fixes the data subset and the batch order (the toy's weights are the same for every seed).

# %% tags=[]
#papermill_description=seeds
# NBVAL_IGNORE_OUTPUT
seed_runs = run_study("seeds")

# %% tags=[]
# NBVAL_IGNORE_OUTPUT
display(Markdown(studies.seeds_table(seed_runs)))
fig = plot_seed_convergence(seed_runs)
exp.save_figure(fig, "04_seed_convergence")
show(fig)

# %% [markdown] tags=[]
# ## (f) Cross-domain transfer (Table A10)
# The models of (b), trained on the training benchmark, are evaluated as they are on `transfer_dataset`:
# for the synthetic default the same kind of scenes described in another voice and order.

# %% tags=[]
# NBVAL_IGNORE_OUTPUT
#papermill_description=transfer
transfer_runs = {}
if transfer_dataset is not None:
    transfer_runs = {exp.dataset: {o: {exp.eval_name: run, transfer_dataset: {
        "zero_shot": exp.evaluate_on(transfer_dataset, transfer_data_root),
        "last": exp.evaluate_on(transfer_dataset, transfer_data_root, run)}}
        for o, run in component_runs.items() if o in ("clip", "tok", "hn+tok")}}
    display(Markdown(studies.transfer_table(transfer_runs)))

# %% [markdown] tags=[]
# ## (g) Temperature × γ (App. B.2)
# The boost enters the logits as s·γ·Ḡ. Here s is held fixed (not learned) at each value, and γ = 0 is
# run at each s as its own reference.

# %% tags=[]
#papermill_description=temperature
# NBVAL_IGNORE_OUTPUT
temperature_runs = run_study("temperature")

# %% tags=[]
# NBVAL_IGNORE_OUTPUT
display(Markdown(studies.temperature_table(temperature_runs)))
fig = plot_temperature_grid(temperature_runs)
exp.save_figure(fig, "04_temperature_gamma")
show(fig)

# %% tags=[]
print(exp.save_json("ablations", studies.slim({
    "scale": {"name": scale, **studies.SCALES[scale], **(recipe or {}), "seed": seed, "trained": list(trained_here)},
    "gamma": gamma_runs,
    "components": component_runs,
    "margin_source": source_runs,
    "fractions": fraction_runs,
    "seeds": seed_runs,
    "transfer": transfer_runs,
    "temperature": temperature_runs,
})).name)

# %% [markdown] tags=[]
# ## Reading the results
# Every comparison below is read against σ, the seed spread of average R@1 that (e) measures: the pooled standard
# deviation over seeds of one run's last epoch (`hnclip_core.replication.significance.seed_spread`, the computation
# chapter 5's scorecard uses). (a)–(d) and (f) compare *two single runs*, and a difference of two independent runs
# spreads by √2·σ, not σ: so A is *ahead of* B only when A − B exceeds 2·√2·σ (twice that spread), *level* with it
# otherwise, by the scorecard's one rule. A gap of 1.5σ is what two seeds of one method often show (see the figure of
# seed differences below). The sentences are computed from the runs above, so they stay true on another seed,
# backbone or dataset.

# %% tags=[]
#papermill_description=reading
# NBVAL_IGNORE_OUTPUT
# σ from the seeds study as this chapter saved it (read back as chapter 5's tidy table reads it).
saved = read_results(exp.output_path).where(source="ablations.json")
spread = seed_spread(saved.where(study="seeds"))
sigma = spread.value  # nan without two seeds of one method: nothing beyond noise


def r1(run: dict) -> float:
    """A run's last-epoch average R@1."""
    return run["last"]["mean_r1"]


def r1s(runs: dict, numeric: bool = False) -> dict:
    """A study's runs → their last-epoch average R@1, keyed by the value the study varies (γ, fraction: ``numeric``)."""
    return {(float(key) if numeric else key): r1(run) for key, run in runs.items()}


where = {name: f"trained here at {scale!r} scale" if name in trained_here else "the full grid of `make ablations`"
         for name in studies.CHAPTER_STUDIES}
one_seed = ("(a) and (b) ran one seed each, " + (where["gamma"] if where["gamma"] == where["components"] else
            f"(a) {where['gamma']}, (b) {where['components']}") + ".")
# a configuration (a) and (b) both ran counts once
models = {run["config"]["output_dir"]: run for run in [*gamma_runs.values(), *component_runs.values()]}
zero = next(iter(models.values()))["zero_shot"]["mean_r1"]
lines = [yardstick_reading(spread, where["seeds"], one_seed),
         zero_shot_reading(zero, [r1(run) for run in models.values()], sigma),
         components_reading(r1s(component_runs), {o: paper.value("3b", method=o, dataset="average (DCI, Long-DCI)",
                                                                  metric="mean_r1") for o in component_runs}, sigma)]
if 0.0 in r1s(gamma_runs, numeric=True) and len(gamma_runs) > 1:
    lines.append(boost_reading(r1s(gamma_runs, numeric=True), sigma))
if transfer_runs:
    runs = transfer_runs[exp.dataset]
    lines.append(transfer_reading(transfer_dataset, {o: r1(ev[exp.eval_name]) for o, ev in runs.items()},
                                  {o: r1(ev[transfer_dataset]) for o, ev in runs.items()},
                                  next(iter(runs.values()))[transfer_dataset]["zero_shot"]["mean_r1"], sigma))
if {"recomputed", "frozen"} <= set(source_runs):
    lines.append(margin_source_reading(
        r1(source_runs["recomputed"]), r1(source_runs["frozen"]),
        [h["caption_mean_similarity"] for h in source_runs["recomputed"]["history"] if "caption_mean_similarity" in h],
        paper.CAPTION_GEOMETRY["DOCCI"]["mean_pairwise"], sigma, where["margin_source"]))
fractions = {float(f): r1s(runs) for f, runs in fraction_runs.items()}
lines.append(sample_efficiency_reading(
    fractions, next(iter(fraction_runs[min(fraction_runs, key=float)].values()))["zero_shot"]["mean_r1"], sigma,
    where["fractions"], PAPER_FRACTION))
lines.append(seeds_reading(
    [runs["hn+tok"]["last"] for runs in seed_runs.values() if "hn+tok" in runs], SEED_SPREAD,
    sum(r.method == "HN-CLIP" and (r.setting or "").startswith("seed ") for r in paper.table("A8").rows),
    where["seeds"]))
lines.append(temperature_reading({(float(s), float(g)): r1(run) for s, by_gamma in temperature_runs.items()
                                  for g, run in by_gamma.items()}, sigma, where["temperature"]))
display(Markdown("\n\n".join(f"* {line}" for line in lines)))

# %% [markdown] tags=[]
# ### Why a difference of two runs needs a paired test
# Each seed fixes the data subset and the batch order for both methods, so the two runs of one seed are a *pair*.
# A comparison of two methods at one seed is one draw of their difference, and it spreads by √2σ if the two runs'
# noise is unrelated: one seed can show a lead, or hide one, of that size. Over several seeds the difference
# itself can be measured — each seed's d = HN-CLIP − InfoNCE — and its mean judged against its own standard error,
# the paired test of the scorecard (`hnclip_core.replication.significance.compare`; chapter 5 computes it by hand).
# Right: the differences by seed, the band of their mean ± 2 standard errors, and 2√2σ, the line one pair of runs
# would have to clear.

# %% tags=[]
# NBVAL_IGNORE_OUTPUT
paired_seeds = {objective: {int(seed): r1(runs[objective]) for seed, runs in seed_runs.items() if objective in runs}
                for objective in ("hn+tok", "clip")}
if len(paired_seeds["hn+tok"]) > 1 and spread.measured:
    fig = plot_paired_seeds(paired_seeds["hn+tok"], paired_seeds["clip"], sigma)
    exp.save_figure(fig, "04_paired_seeds")
    show(fig)
    display(Markdown(paired_reading(compare(paired_seeds["hn+tok"], paired_seeds["clip"], sigma))))

# %% [markdown] tags=[]
# Chapter 5 sets all of these beside the paper's numbers and judges each claim, on the full grids.

# %% [markdown] tags=[]
# ## Exercises
# 1. **What a frozen margin costs.** A negative's mean handicap is s·γ·Ḡ logits. Check the paper's ≈ 42 for
#    DOCCI (mean Ḡ 0.84, γ = 0.5, s ≈ 100; App. B.2). Then, from the two runs of (c), compute the margin each
#    applied per epoch: the recomputed run its live Ḡ, the frozen one its epoch-0 Ḡ throughout (`history` rows
#    carry `caption_mean_similarity`, and from epoch 1 the learned `logit_scale`; for epoch 0 take the
#    pre-trained model's s, `exp.load_model()[0].logit_scale.exp().item()`). By how many logits did the
#    recomputed margin relax, and how many more does the frozen run demand after its last epoch?
# 2. **s and γ are not interchangeable.** By Eq. 4 the boost re-weights negatives through s·γ only. On one
#    training batch (`v, t, _ = exp.first_training_batch()`), evaluate L_HN (`hnclip_core.losses.HNClipLoss`) at
#    $(s, \gamma) = (100, 0.5)$ and $(50, 1)$. Compare (a) the two losses, (b) for query 0, how each changes the
#    ratio of two negatives' posteriors relative to InfoNCE at the same s, and (c) both losses with the image
#    features set to zero (S = 0). Why does (g) train γ = 0 at every s as that s's own reference?
# 3. **How long is an ablation run?** With the chapter's recipe (`studies.SCALES[scale]`), predict how many
#    optimizer steps each run of (a)–(c) takes, how many training pairs every epoch leaves out (the last partial
#    batch is dropped), and the learning-rate factor of each step (linear warm-up over `warmup_steps`, then
#    cosine decay to 0). Do the same for (d)'s 5 % runs at batch 16 × 2. Check with
#    `hnclip_core.train.training_subset`, `epoch_batches` and `cosine_with_warmup` (the training set has
#    `len(exp.pairs("train", evaluation=False))` pairs).
#
# 4. **How often does noise win?** Two runs of one configuration at different seeds differ by noise alone.
#    (a) If each run's average R@1 is its configuration's mean plus normal noise of spread σ, what share of such
#    pairs differ by more than σ, and by more than 2√2σ? Compute it with `math.erf`, then check it by drawing a
#    hundred thousand pairs with `random.Random(0).gauss`. (b) From the runs of (e), take the differences between
#    the seeds of each method and set their size beside √2σ. (c) Why does this chapter read a difference of two runs
#    against 2√2σ rather than σ?
#
# Solutions: `notebooks/solutions/chapter04.py` (functions of the runs, a batch or the parameters; checked by
# `tests/test_exercises.py`).
