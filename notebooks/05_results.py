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
# paper's. Run chapters 1–4 first (`make tutorial` runs all five in order).
#
# The honest headline is the calibration over three seeds (section 5): which of the paper's claims the
# embedded toy reproduces, and which it does not.

# %% tags=["parameters"]
output_dir = None  # where chapters 1–4 wrote their results; None: $HNCLIP_OUTPUT_DIR or runs/notebooks
results_dir = "../results"  # the project's committed results (calibration over 3 seeds)
interactive = True  # unused here; kept so that every chapter takes the same switches

# %%
import json
from dataclasses import asdict
from pathlib import Path

from IPython.display import Markdown, display

from hnclip_core.experiment import Experiment
from hnclip_core.paper import CAPTION_GEOMETRY, DOCCI_RECALL, SATURATION
from hnclip_core.plots.training import plot_convergence
from hnclip_core.report import checks_table, diagnostics_table, geometry_table, recall_table
from hnclip_core.scorecard import build_scorecard, measurements_from_outputs, scorecard_table

exp = Experiment(output_dir=output_dir, progress=False)
geometry = exp.load_json("geometry")
saturation = exp.load_json("saturation")
fine_tuning = exp.load_json("fine_tuning")
ablations = exp.load_json("ablations")
calibration = json.loads((Path(results_dir) / "calibration.json").read_text())

# %% [markdown]
# ## 1. Caption geometry (chapter 1; §2.1, Table A1, Fig. A6)

# %%
display(Markdown(geometry_table({f"{geometry['dataset']} ({geometry['backbone']} text encoder)": geometry["geometry"]},
                                CAPTION_GEOMETRY)))
print(f"in-batch negatives with Ḡ ≥ 0.8 (B = {geometry['in_batch']['batch_size']}): "
      f"{100 * geometry['in_batch']['fraction_at_least']['0.8']:.1f}% (paper: 86–99%)")

# %% [markdown]
# ## 2. Saturation (chapter 2; §2.4, Fig. 4)

# %%
display(Markdown(diagnostics_table(saturation["dynamics"]["diagnostics"], SATURATION)))
fp32 = saturation["thresholds"]["float32"]
print(f"fp32 at s = {fp32['logit_scale']:g}, B = {fp32['batch_size']}: loss exactly 0 from Δ = "
      f"{fp32['loss_zero_margin']:.3f}, negative's gradient exactly 0 from Δ = {fp32['negative_grad_zero_margin']:.3f}")

# %% [markdown]
# ## 3. Fine-tuning (chapter 3; Table 1, Fig. 5)

# %%
runs = fine_tuning["runs"]
first = next(iter(runs.values()))
rows = {"zero-shot": first["zero_shot"], **{objective: run["last"] for objective, run in runs.items()}}
display(Markdown(recall_table(rows, paper=DOCCI_RECALL)))
fig = plot_convergence(runs)
exp.save_figure(fig, "05_convergence")
display(fig)

# %% [markdown]
# ## 4. Ablations at tutorial scale (chapter 4; Table 3)

# %%
scale = ablations["scale"]
print(f"scale: {100 * scale['train_fraction']:.0f}% of the training set, {scale['epochs']} epochs, "
      f"seed {scale['seed']}")
display(Markdown(recall_table({f"γ = {g}": r["last"] for g, r in ablations["gamma"].items()}, ks=(1,))))
display(Markdown(recall_table({o: r["last"] for o, r in ablations["components"].items()}, ks=(1,))))
display(Markdown(recall_table({f"Ḡ {s}": r["last"] for s, r in ablations["margin_source"].items()}, ks=(1,))))

# %% [markdown]
# ## 5. The headline: does the toy reproduce the paper's phenomenon? (3 seeds)
# `results/calibration.json` is produced by `python -m hnclip_core calibrate --seeds 0 1 2` (InfoNCE and
# HN-CLIP, 5 epochs each, gradient monitor on). Each claim has a threshold fixed before the runs.

# %%
display(Markdown(checks_table(calibration["checks"])))

# %% [markdown]
# ## 6. The scorecard: every claim of the paper, checked
# `hnclip_core.scorecard` holds the paper's tables as data (`results/paper/`, transcribed from arXiv
# 2608.18521v1) and, for each of its qualitative claims, a fixed test on our measurements (the last epoch
# of every run; thresholds stated in `scorecard.claims_table()`). "not measured" means this tutorial run
# does not produce what the claim needs (e.g. the data-fraction study, run by the ablation grids).

# %%
measurements = measurements_from_outputs(exp.output_path, calibration=Path(results_dir) / "calibration.json")
scorecard = build_scorecard(measurements)
display(Markdown(scorecard_table(scorecard)))
counts = {status: sum(r.status == status for r in scorecard) for status in ("reproduced", "not reproduced",
                                                                          "not measured")}
print(", ".join(f"{n} {status}" for status, n in counts.items()))
print(exp.save_json("scorecard", [asdict(r) for r in scorecard]).name)

# %% [markdown]
# **Summary.** The toy reproduces the *mechanism's* side of the paper — the boosted loss stays active while
# InfoNCE's decays, its gradient is larger and positively aligned with InfoNCE's, and HN-CLIP beats InfoNCE
# fine-tuning (by a small, seed-dependent margin). It does not reproduce the *saturation* itself (no batch
# below 10⁻³, no exactly-zero gradient), nor Long-CLIP-L's crowded caption space. Chapter 2 explains the
# arithmetic; `results/README.md` lists the toy recipes tried. On real Long-CLIP-L and DOCCI every chapter
# runs unchanged with `backbone` and `dataset` set.
