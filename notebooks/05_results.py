# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 5 — Results: what reproduces, side by side with the paper
#
# This chapter computes nothing new. It collects the results files written by chapters 1–4 (in
# `output_dir`) and the project's committed measurements (in `results/`), and puts every number next to the
# paper's. Sections 1–4 show what chapters 1–4 wrote (run them first: `make tutorial` runs all five in order);
# without them those sections say so, and sections 5–7 still run: they read only the committed results.
#
# The honest headline is the scorecard (section 7): which of the paper's claims the embedded toy
# reproduces, and which it does not, measured on the full ablation grids of `make ablations` (section 6)
# and the calibration over three seeds (section 5).

# %% tags=["parameters"]
output_dir = None  # where chapters 1–4 wrote their results; None: $HNCLIP_OUTPUT_DIR or runs/notebooks
results_dir = "../results"  # the project's committed results (calibration, full ablation grids)
interactive = True  # unused here; kept so that every chapter takes the same switches

# %%
# %matplotlib inline
import json
from dataclasses import asdict
from pathlib import Path

from IPython.display import Markdown, display

from hnclip_core.replication import ablations as studies
from hnclip_core.replication import paper
from hnclip_core.replication.experiment import Experiment
from hnclip_core.replication.plots import show
from hnclip_core.replication.plots.ablations import (
    plot_margin_annealing,
    plot_plug_and_play,
    plot_sample_efficiency,
    plot_seed_convergence,
    plot_temperature_grid,
)
from hnclip_core.replication.plots.training import plot_convergence, plot_metric_sweep
from hnclip_core.replication.report import diagnostics_table, geometry_table, recall_table
from hnclip_core.replication.scorecard import CALIBRATION, calibration_view, claims_table, judge, scorecard_table
from hnclip_core.replication.tidy import read_results
from hnclip_core.toy.model import shipped_toy_path

exp = Experiment(output_dir=output_dir, progress=False)
# What chapters 1–4 wrote to output_dir (None where a chapter has not run there: its section is left out).
chapter_files = {1: "geometry", 2: "saturation", 3: "fine_tuning", 4: "ablations"}
found = {n: exp.load_json(name) if (exp.output_path / f"{name}.json").is_file() else None
         for n, name in chapter_files.items()}
geometry, saturation, fine_tuning, ablations = found.values()
missing = ", ".join(str(n) for n, data in found.items() if data is None)
print(f"not run in output_dir: chapter(s) {missing}; their sections are left out" if missing
      else "results of chapters 1–4 found: sections 1–4 show them")
calibration = json.loads((Path(results_dir) / "calibration.json").read_text())
grids = json.loads((Path(results_dir) / "ablations.json").read_text())
throughput = json.loads((Path(results_dir) / "framework_throughput.json").read_text())
# Everything above as one tidy table, a row per run and epoch: what the judge of sections 5 and 7 reads.
results = read_results(exp.output_path, calibration=Path(results_dir) / "calibration.json",
                       ablations=Path(results_dir) / "ablations.json",
                       throughput=Path(results_dir) / "framework_throughput.json")

# %% [markdown]
# ## 1. Caption geometry (chapter 1; §2.1, Table A1, Fig. A6)

# %%
if geometry:
    name = f"{geometry['dataset']} ({geometry['backbone']} text encoder)"
    display(Markdown(geometry_table({name: geometry["geometry"]}, paper.CAPTION_GEOMETRY)))
    low, high = paper.IN_BATCH_AT_LEAST_0_8
    print(f"in-batch negatives with Ḡ ≥ 0.8 (B = {geometry['in_batch']['batch_size']}): "
          f"{100 * geometry['in_batch']['fraction_at_least']['0.8']:.1f}% (paper: {100 * low:.0f}–{100 * high:.0f}%)")

# %% [markdown]
# ## 2. Saturation (chapter 2; §2.4, Fig. 4)

# %%
# NBVAL_IGNORE_OUTPUT
if saturation:
    display(Markdown(diagnostics_table(saturation["dynamics"]["diagnostics"], paper.SATURATION)))
    fp32 = saturation["thresholds"]["float32"]
    print(f"fp32 at s = {fp32['logit_scale']:g}, B = {fp32['batch_size']}: loss exactly 0 from Δ = "
          f"{fp32['loss_zero_margin']:.3f}, negative's gradient exactly 0 from Δ = "
          f"{fp32['negative_grad_zero_margin']:.3f}")

# %% [markdown]
# ## 3. Fine-tuning (chapter 3; Table 1, Fig. 5)

# %%
# NBVAL_IGNORE_OUTPUT
if fine_tuning:
    runs = fine_tuning["runs"]
    first = next(iter(runs.values()))
    rows = {"zero-shot": first["zero_shot"], **{objective: run["last"] for objective, run in runs.items()}}
    display(Markdown(recall_table(rows, paper=paper.DOCCI_RECALL)))
    fig = plot_convergence(runs)
    exp.save_figure(fig, "05_convergence")
    show(fig)

# %% [markdown]
# ## 4. Ablations at tutorial scale (chapter 4; Table 3)

# %%
# NBVAL_IGNORE_OUTPUT
if ablations:
    scale = ablations["scale"]
    print(f"scale: {100 * scale['train_fraction']:.0f}% of the training set, {scale['epochs']} epochs, "
          f"seed {scale['seed']}")
    display(Markdown(recall_table({f"γ = {g}": r["last"] for g, r in ablations["gamma"].items()}, ks=(1,))))
    display(Markdown(recall_table({o: r["last"] for o, r in ablations["components"].items()}, ks=(1,))))
    display(Markdown(recall_table({f"Ḡ {s}": r["last"] for s, r in ablations["margin_source"].items()}, ks=(1,))))

# %% [markdown]
# ## 5. The headline: does the toy reproduce the paper's phenomenon? (3 seeds)
# `results/calibration.json` is produced by `python -m hnclip_core calibrate --seeds 0 1 2` (InfoNCE and
# HN-CLIP at chapter 3's recipe, 3 epochs each, gradient monitor on) plus the zero-shot measurements of the
# shipped toy. Issue 12's seven checks are claims of the scorecard (section 7), judged by the same rules on the
# calibration's rows: the last epoch of every run (every epoch where a check says so), every seed, the targets
# issue 12 fixed before the runs, and σ — the seed spread of average R@1 over these three seeds — where a check
# compares two runs. A result exactly at its threshold fails.

# %%
display(Markdown(claims_table(CALIBRATION)))
display(Markdown(scorecard_table(calibration_view(results))))

# %% [markdown]
# ## 6. The ablation studies at full scale (`make ablations`)
# Every study of the paper (`hnclip_core.replication.ablations.STUDIES`) as a papermill grid over
# `notebooks/ablation_run`: full training set, 3 epochs (chapter 3's recipe), effective batch 128, seed 0 unless
# the study varies it, last epoch reported. The numbers are the committed `results/ablations.json`;
# `make ablations` recomputes it (time per study below, measured on 2 CPU cores). The last column names the
# model every point was fine-tuned from, and the line under the table says whether that is the toy shipped now.

# %%
display(Markdown(studies.timing_table(grids["studies"])))
shipped = shipped_toy_path().name
grid_models = sorted({study.get("checkpoint") or "not recorded" for study in grids["studies"].values()})
if grid_models == [shipped]:
    print(f"Every grid was fine-tuned from the toy shipped now, {shipped}.")
else:
    print(f"The grids were fine-tuned from {', '.join(grid_models)}, not from the toy shipped now ({shipped}): "
          "re-run `make ablations` before reading them, and section 7's ablation claims, as results of this toy.")

# %% [markdown]
# ### (a) Boost strength γ (Table 3a, Table A6)
# L_tok is on in every run, so γ = 0 is "L_tok only". The transfer column evaluates the same models on
# `synthetic-alt` (the same kind of scenes, captions in another voice), the role Urban-1K plays in Table 3a.

# %%
display(Markdown(recall_table({f"γ = {g}": r["last"] for g, r in grids["gamma"].items()}, ks=(1, 5, 10, 25, 50))))
gammas = [float(g) for g in grids["gamma"]]
fig = plot_metric_sweep(
    gammas, {"in-domain avg R@1": [r["last"]["mean_r1"] for r in grids["gamma"].values()],
             f"{grids['studies']['gamma']['transfer_dataset']} (transfer) avg R@1":
                 [grids["gamma_transfer"][g]["last"]["mean_r1"] for g in grids["gamma"]]},
    x_label="boost strength γ", y_label="average R@1 (%)", title="γ sweep, full scale (L_tok on)",
    baseline={"zero-shot (in-domain)": next(iter(grids["gamma"].values()))["zero_shot"]["mean_r1"]},
)
exp.save_figure(fig, "05_gamma_full")
show(fig)

# %% [markdown]
# ### (b) Loss components and convergence (Table 3b, Table A5; Fig. 5, Fig. A9)

# %%
display(Markdown(studies.components_table(grids["components"])))
fig = plot_convergence(grids["components"])
exp.save_figure(fig, "05_convergence_full")
show(fig)

# %% [markdown]
# ### (c) Recomputed vs frozen Ḡ, and the drift of Ḡ (Table 3c, Table A2, App. B.2)

# %%
display(Markdown(studies.margin_source_table(grids["margin_source"])))
fig = plot_margin_annealing({f"Ḡ {source}": run for source, run in grids["margin_source"].items()})
exp.save_figure(fig, "05_margin_annealing")
show(fig)

# %% [markdown]
# ### (d) Sample efficiency (Fig. 6, Table A9)
# Identical seeded subsets for every method; effective batch 32 at every fraction (5 % of the synthetic
# training set is 100 pairs, less than one batch of 128). The dotted line is the strongest baseline at 100 %.

# %%
display(Markdown(studies.fractions_table(grids["fractions"])))
full_data = grids["fractions"][max(grids["fractions"], key=float)]
fig = plot_sample_efficiency(grids["fractions"], studies.strongest_baseline(full_data))
exp.save_figure(fig, "05_sample_efficiency")
show(fig)

# %% [markdown]
# ### (e) Seeds (Table A8, Table A11): mean ± std over three seeds, and convergence with its spread

# %%
display(Markdown(studies.seeds_table(grids["seeds"])))
fig = plot_seed_convergence(grids["seeds"])
exp.save_figure(fig, "05_seed_convergence")
show(fig)

# %% [markdown]
# ### (f) Cross-domain transfer (Table A10, Table A7)
# Trained on one caption style, tested on both; zero-shot is the toy before fine-tuning.

# %%
display(Markdown(studies.transfer_table(grids["transfer"])))

# %% [markdown]
# ### (g) Temperature × γ (App. B.2, §3.5)
# s is fixed (not learned) in every run. If the boost acted only through s·γ, runs with the same product
# would score alike and the right panel's lines would lie on one curve.

# %%
display(Markdown(studies.temperature_table(grids["temperature"])))
fig = plot_temperature_grid(grids["temperature"])
exp.save_figure(fig, "05_temperature_gamma")
show(fig)

# %% [markdown]
# ### (h) Plug-and-play: L_HN inside six fine-tuning frameworks (Table 2, Table A4, App. D.2)
# Each framework of `hnclip_core.frameworks` trained twice with the same recipe: its global contrastive term as
# InfoNCE, then as L_HN (γ = 0.5, no L_tok, no per-framework tuning); everything else of the framework (adapters,
# segment, edge-map and token-refinement terms) unchanged. The paper's gains on DOCCI are beside ours in the
# figure. The toy's adapter learning rate is the toy's full fine-tuning rate × 25 (the paper's adapter/full
# ratio), not tuned on the toy.

# %%
display(Markdown(studies.plug_and_play_table(grids["plug_and_play"])))
fig = plot_plug_and_play(grids["plug_and_play"], paper.plug_and_play_deltas("DOCCI"))
exp.save_figure(fig, "05_plug_and_play")
show(fig)

# %% [markdown]
# **Training cost (Table A3).** `benchmarks/framework_throughput.py` times one optimizer step of every framework
# × global term at effective batch 128 (16 × 8), interleaved over rounds on one machine, *including* the
# per-pair inputs each framework builds (segment crops, edge maps, filtered captions), which the paper computes
# offline and leaves out of its wall-clock. The paper's L_HN column is HN-CLIP (L_HN + L_tok) on an Ascend 910B;
# ours is L_HN alone on the toy, on CPU.

# %%
print(throughput["machine"])
print(throughput["setting"])
display(Markdown(studies.throughput_table(throughput, paper.THROUGHPUT)))

# %% [markdown]
# ## 7. The scorecard: every claim of the paper, checked
# `hnclip_core.replication.scorecard` judges each of the paper's qualitative claims by a query on the tidy table
# of the first cell (`results`) beside the paper's numbers (`hnclip_core.replication.paper`: its tables transcribed
# from arXiv 2608.18521v1 as JSON, validated by a JSON Schema). Every rule reads the last epoch of every run; a
# comparison "A beats B" needs a gap larger than σ, the seed spread of that metric measured in the same table
# (the calibration's and the seeds study's runs); a result exactly at a threshold fails. The table below states
# each rule and why its threshold is what it is. Claims about a measurement (caption geometry, the gradient
# monitor) must hold in every run that measured it (chapters 1–2 and the calibration); comparisons read the
# study that replicates the paper's experiment, at every seed it has: chapter 3's recipe (its run and the
# calibration's three seeds) and the full grids of section 6 (the efficiency claim the throughput benchmark of 6h).

# %%
display(Markdown(claims_table()))

# %%
# NBVAL_IGNORE_OUTPUT
scorecard = judge(results)
display(Markdown(scorecard_table(scorecard)))
counts = {status: sum(r.status == status for r in scorecard) for status in ("reproduced", "not reproduced",
                                                                          "not measured")}
print(", ".join(f"{n} {status}" for status, n in counts.items()))
print(exp.save_json("scorecard", [asdict(r) for r in scorecard]).name)

# %% [markdown]
# **Summary.** Chapters 1–3 and the calibration run on the shipped toy, a strong initialisation: before any
# fine-tuning most random micro-batches are already solved for InfoNCE and 92 % of its retrieval errors are
# near-twins. On it the paper's *diagnosis* reproduces — InfoNCE saturates (most epoch-1 micro-batches below
# 10⁻³) while L_HN stays active on all of them — and so does the headline comparison: HN-CLIP ends ahead of
# InfoNCE fine-tuning at every seed and every epoch, by about the paper's DOCCI margin (+2 average R@1).
# Not reproduced: no fine-tuning beats the zero-shot toy (every learning rate tried; `results/README.md`),
# the toy's captions are far less crowded than DOCCI's under Long-CLIP-L (its stronger pretraining spread
# them further), no fp32 gradient is exactly zero, and the boosted gradient is larger than InfoNCE's by
# 10¹–10², not 10²–10⁶, and hardly aligned with it (mean cosines of 0.01–0.2, within one standard deviation
# of 0). The ablation verdicts come from the full grids of section 6, run on this same toy: every γ > 0 and
# both fixed temperatures beat γ = 0, L_HN raises every framework's R@1, and HN-CLIP on a fifth of the data beats
# InfoNCE on all of it — but L_HN alone is ahead of L_HN + L_tok, a frozen Ḡ does as well as a recomputed one
# (on this toy Ḡ is small and falls within epoch 1), milder γ does not transfer better, the seed spread exceeds
# the paper's, and L_HN's gains inside LoRA and DoRA are within it. On real Long-CLIP-L and DOCCI every chapter
# and grid runs unchanged with `backbone` and `dataset` set.

# %% [markdown]
# ## Exercises
# 1. **Is the gain larger than the noise?** From `calibration["runs"]`, compute HN-CLIP − InfoNCE (average
#    R@1, last epoch) for each seed, their mean and its standard error over the seeds. How many standard errors
#    is the mean gain, and what would a fourth seed have to show to halve your confidence?
# 2. **A verdict by hand.** From each seed's InfoNCE run (`calibration["runs"][k]["clip"]["diagnostics"]`), read
#    the share of epoch-1 micro-batches with L_CLIP < 1e-3 and compare it with the saturation check of section 5
#    (which reads every monitored run, HN-CLIP's too) and the paper's 80 %. Why does the share of whole optimizer
#    steps (`solved_clip`, the mean over 8 micro-batches) come out so much lower?
#
# Solutions: `notebooks/solutions/chapter05.py`.

