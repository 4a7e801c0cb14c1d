# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # One ablation run: a single configuration, trained, evaluated and stored
#
# *The notebook behind every point of the ablation studies (`make ablations`; `replication.ablations.STUDIES`).*
#
# The chapters compare several configurations side by side. The ablation studies of HN-CLIP (arXiv
# 2608.18521, Table 3, Tables A2 and A5–A11, Fig. 5–6) instead vary one setting over a grid, and each point
# of a grid runs this notebook once with its own parameters (papermill), writing `run.json` to its own
# folder. Chapter 5 collects them. Opened by hand, the notebook trains one configuration at the tutorial's
# reduced scale (a quarter of the training set, 2 epochs).
#
# What can vary (everything else is the fine-tuning recipe of chapter 3):
#
# * `objective` — `clip` (Eq. 1), `tok` (+ L_tok), `hn` (Eq. 2) or `hn+tok` (Eq. 3, HN-CLIP); `gamma` is γ;
# * `margin_source` — Ḡ from the live text encoder (`recomputed`) or from a frozen copy of the initial one;
# * `logit_scale` — fix the inverse temperature s (not learned) for the s × γ study of App. B.2;
# * `train_fraction`, `seed` — the sample-efficiency and seed studies;
# * `dataset` / `eval_dataset` and `transfer` — train on one benchmark and also evaluate the final model on
#   others (the cross-domain settings of Tables A7 and A10; `synthetic-alt` is the synthetic scenes with
#   captions in another voice);
# * `framework` — the fine-tuning framework whose global term `objective` replaces (`clip` or `hn`), for the
#   plug-and-play study (Table 2, App. D.2): `longclip`, `lora`, `dora`, `goal`, `structxlip`, `finelip`;
#   `caption_augmentation = "debias"` adds DeBias-CLIP's caption augmentation.
#
# Points of a grid share `runs_dir`, so a configuration that appears in two studies is trained once.

# %% tags=["parameters"]
backbone = "toy"  # "toy" or the path of a Long-CLIP checkpoint (longclip-L.pt)
dataset = "synthetic"
data_root = None
eval_dataset = None  # None: evaluate on the training benchmark's test split
eval_data_root = None
transfer = {}  # {benchmark name: its data root or None}; the final model is evaluated on each
device = "auto"
seed = 0
epochs = 2  # the paper trains 10
train_fraction = 0.25  # the paper uses the full training set
warmup_steps = 2  # optimizer steps of linear warm-up (paper: 10)
lr = None  # None: 2e-6 (paper) for a real checkpoint, the toy's calibrated preset for the toy
micro_batch_size = 16
accumulation_steps = 8  # effective batch 128, as in the paper
objective = "hn+tok"  # clip, tok, hn or hn+tok
gamma = 0.5
margin_source = "recomputed"  # or frozen (Table 3c)
logit_scale = None  # a number fixes s (App. B.2); None: learned from the checkpoint's value
framework = "longclip"  # longclip, lora, dora, goal, structxlip or finelip (Table 2)
caption_augmentation = "none"  # or debias
segment_file = None  # GOAL-format segments for goal/structxlip on real data
runs_dir = None  # the shared run cache; None: output_dir/runs
output_dir = None  # None: $HNCLIP_OUTPUT_DIR or runs/notebooks
interactive = True  # progress bars; papermill batch runs pass False

# %%
# %matplotlib inline
#papermill_description=setup
from IPython.display import Markdown, display

from hnclip_core.replication.experiment import Experiment
from hnclip_core.replication.plots import show
from hnclip_core.replication.plots.ablations import plot_margin_annealing
from hnclip_core.replication.plots.training import plot_convergence
from hnclip_core.replication.report import recall_table

exp = Experiment(
    backbone=backbone, dataset=dataset, data_root=data_root, eval_dataset=eval_dataset,
    eval_data_root=eval_data_root, device=device, seed=seed, epochs=epochs, lr=lr,
    micro_batch_size=micro_batch_size, accumulation_steps=accumulation_steps, train_fraction=train_fraction,
    output_dir=output_dir, runs_dir=runs_dir, framework=framework, caption_augmentation=caption_augmentation,
    segment_file=segment_file, progress=interactive,
)
settings = {"objective": objective, "gamma": gamma, "margin_source": margin_source, "logit_scale": logit_scale,
            "warmup_steps": warmup_steps}
temperature = "learned" if logit_scale is None else f"{logit_scale:g}"
print(f"{framework}: {objective} (γ = {gamma:g}, Ḡ {margin_source}, s {temperature}) on {100 * train_fraction:g}% "
      f"of {dataset}, seed {seed}, {epochs} epochs, lr {exp.learning_rate:g}; evaluated on {exp.eval_name}")

# %%
#papermill_description=train
# NBVAL_IGNORE_OUTPUT
result = exp.run(**settings)

# %% [markdown]
# ## Recall@K: zero-shot, best epoch, last epoch
# Every study reads the **last** epoch; the best one is shown because Table 3c reports it.

# %%
# NBVAL_IGNORE_OUTPUT
display(Markdown(recall_table({"zero-shot": result["zero_shot"], f"best (epoch {result['best']['epoch']})":
                               result["best"], f"last (epoch {result['last']['epoch']})": result["last"]})))

# %% [markdown]
# ## Convergence and the drift of Ḡ
# Left: Recall@1 per epoch in each direction (Fig. 5, Fig. A9). Right: the mean off-diagonal caption
# similarity of the test captions under the current text encoder — the mean of the Ḡ that a *recomputed*
# boost applies. As fine-tuning separates the captions it shrinks, and with it the margin γ·s·Ḡ: the
# implicit annealing of App. B.2. A frozen Ḡ stays at its epoch-0 value throughout.

# %%
fig = plot_convergence({objective: result})
exp.save_figure(fig, "convergence")
show(fig)
fig = plot_margin_annealing({f"{objective}, Ḡ {margin_source}": result})
exp.save_figure(fig, "margin_annealing")
show(fig)

# %% [markdown]
# ## Cross-domain evaluation
# The same final weights (and, for reference, the backbone before fine-tuning) on each benchmark named in
# `transfer`.

# %%
#papermill_description=transfer
transferred = {name: {"zero_shot": exp.evaluate_on(name, root), "last": exp.evaluate_on(name, root, result)}
               for name, root in transfer.items()}
if transferred:
    display(Markdown(recall_table({f"{name}: {when}": rows[when] for name, rows in transferred.items()
                                   for when in ("zero_shot", "last")})))
else:
    print("no transfer benchmark given")

# %%
print(exp.save_json("run", {
    "parameters": {"backbone": backbone, "dataset": dataset, "eval_dataset": exp.eval_name, "seed": seed,
                   "epochs": epochs, "train_fraction": train_fraction, "lr": exp.learning_rate,
                   "effective_batch": micro_batch_size * accumulation_steps, "framework": framework,
                   "caption_augmentation": caption_augmentation, **settings},
    "result": {k: result[k] for k in ("config", "zero_shot", "best", "last", "history")},
    "transfer": transferred,
}).name)
