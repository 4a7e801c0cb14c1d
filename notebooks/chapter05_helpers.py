"""Chapter 5's own sentences: what the embedded toy cannot show of the paper's story, and why, worded from the
calibration's measurements (``results/calibration.json``) and the verdicts of the toy's design targets.

Kept beside the notebooks (as rasbt keeps ``previous_chapters.py``): only chapter 5 uses it. A condition appears
only while its design target is missed, with the numbers that miss it, so that the section stays true when the toy,
its benchmark or the calibration change.
"""

from __future__ import annotations

import math
from statistics import fmean

from hnclip_core.replication import paper
from hnclip_core.replication.scorecard import GAIN_OVER_INFONCE, Verdict
from hnclip_core.replication.significance import compare


def _share(value: float) -> str:
    return f"{100 * value:.1f} %" if value < 0.1 else f"{100 * value:.0f} %"


def _per_seed(values) -> str:
    return ", ".join(f"{v:+.2f}" for v in values)


def _last_r1(calibration: dict, objective: str) -> dict[int, float]:
    return {entry["seed"]: entry[objective]["last"]["mean_r1"] for entry in calibration["runs"] if objective in entry}


def crowding_reading(calibration: dict) -> str:
    """Crowded captions (Table A1, Fig. A6C) and the modality gap, the toy's against DOCCI's."""
    geometry, regime = calibration["geometry"], calibration["zero_shot_regime"]
    at_least = geometry["in_batch"]["fraction_at_least"]["0.8"]
    docci = paper.CAPTION_GEOMETRY["DOCCI"]
    low, high = paper.IN_BATCH_AT_LEAST_0_8
    text = (f"**Crowded captions.** The toy's test captions have a mean pairwise cosine of "
            f"{geometry['mean_pairwise']:.2f} (hardest companion {geometry['mean_hardest']:.2f}) under its own text "
            f"encoder, and {_share(at_least)} of in-batch negatives reach Ḡ ≥ 0.8; DOCCI's are "
            f"{docci['mean_pairwise']:.2f} / {docci['mean_hardest']:.2f} under Long-CLIP-L, with {_share(low)}–"
            f"{_share(high)} of in-batch negatives at Ḡ ≥ 0.8 (Table A1, Fig. A6C).")
    if at_least < 0.5:
        text += (" So the boost's margin γḠ is small for most negatives, and L_HN works mainly on the near-twins, "
                 "which rarely share a random micro-batch with their caption (chapter 1).")
    if regime["positive_cosine"] > 0.5:
        text += (f" The toy's images and captions also lie close together (matching image–text cosine "
                 f"{regime['positive_cosine']:.2f}, centroids {regime['centroid_distance']:.2f} apart) where a real "
                 "CLIP keeps its captions in a narrow cone across a modality gap from its images.")
    text += (" A common direction built "
             "into the toy's outputs crowds the captions, but shrinks the image–text margins with them, and random "
             "batches stop being solved (the probes in `results/README.md`): crowding and saturation together would "
             "need a toy pretrained with that geometry.")
    return text


def token_term_reading(verdict: Verdict, calibration: dict) -> str:
    """What L_tok costs (Table A5: neutral in the paper), and what the initial model's token scores say about why."""
    changes = verdict.ours["hn+tok − hn avg R@1 per seed"]
    mean = fmean(changes)
    text = (f"**A neutral token term.** Adding L_tok to L_HN {'costs' if mean < 0 else 'adds'} {abs(mean):.2f} points "
            f"of average R@1 on the mean of the seeds (per seed {_per_seed(changes)}), more than the seed spread σ; "
            "the paper finds it neutral (Table A5).")
    alignment = calibration.get("token_alignment")
    if not alignment:
        return text
    token_top1 = min(alignment["token_i2t_top1"], alignment["token_t2i_top1"])
    text += (f" Before fine-tuning, the toy's token scores rank the pair's own caption first in "
             f"{_share(alignment['token_i2t_top1'])} of the image rows of random micro-batches and its own image "
             f"first in {_share(alignment['token_t2i_top1'])} of the caption rows, where its global embeddings do in "
             f"{_share(alignment['global_top1'])}; L_tok starts at {alignment['loss_tok']:.2f}, with a gradient "
             f"{alignment['grad_norm_ratio']:.2f} times as large as L_HN's, at cosine "
             f"{alignment['grad_cosine']:+.2f} to it.")
    if token_top1 < alignment["global_top1"] - 0.25:
        text += (" The toy's word tokens and image patches are not aligned where its global embeddings are: the "
                 "term spends the fine-tuning's few dozen optimizer steps aligning them, against L_HN, where a large "
                 "pretrained CLIP starts with them partly aligned.")
    else:
        text += " Its tokens already rank pairs nearly as well as its global embeddings, so the cost lies elsewhere."
    return text


def lead_reading(verdict: Verdict, calibration: dict, crowded: bool, token_neutral: bool) -> str:
    """HN-CLIP's lead over InfoNCE against the +2 of Table 1 that the toy was designed for."""
    gains = verdict.ours["hn+tok − clip avg R@1 per seed"]
    clip, boost = _last_r1(calibration, "clip"), _last_r1(calibration, "hn")
    paper_gain = next(iter(verdict.paper.values()))
    text = (f"**A lead of Table 1's size.** HN-CLIP leads InfoNCE by {fmean(gains):+.2f} points of average R@1 on the "
            f"mean of the seeds (per seed {_per_seed(gains)})")
    seeds = sorted(set(clip) & set(boost))
    boost_lead = fmean(boost[k] - clip[k] for k in seeds) if seeds else None
    if boost_lead is not None:
        text += f", L_HN alone by {boost_lead:+.2f}"
    text += f"; the paper's gain on DOCCI is {paper_gain:+.1f} (Table 1, Table A5)."
    paired, least = compare(dict(enumerate(gains)), dict.fromkeys(range(len(gains)), 0.0), math.nan), min(gains)
    if fmean(gains) <= GAIN_OVER_INFONCE:
        text += f" The toy was designed for more than {GAIN_OVER_INFONCE:+g} on the mean of the seeds."
    elif not paired.beats:
        text += (f" The mean reaches the {GAIN_OVER_INFONCE:+g} the toy was designed for, but the seeds do not agree "
                 f"on a lead: the mean difference is not beyond twice its standard error ({paired.describe()}), "
                 "what a change of seed alone can give.")
    else:
        text += (f" The mean reaches the {GAIN_OVER_INFONCE:+g} the toy was designed for, but not every seed: the "
                 f"least is {least:+.2f}.")
    causes = []
    if not token_neutral and boost_lead is not None and boost_lead > fmean(gains):
        causes.append(f"the token term takes back {boost_lead - fmean(gains):.2f} of L_HN's lead (the bullet above)")
    if not crowded:
        causes.append("with few crowded negatives the boost has less to act on than on DOCCI (the first bullet)")
    if causes:
        joined = "; and ".join(causes)
        text += f" {joined[0].upper()}{joined[1:]}."
    return text


def reading_the_frontier(view: list[Verdict], calibration: dict) -> str:
    """The section "What the toy cannot show, and why": one bullet per design target the calibration misses, among
    crowding (the scorecard's ``geometry``), the neutral token term and HN-CLIP's lead."""
    status = {v.claim_id: v for v in view}
    missed = {name: status[name].status == "not reproduced" for name in ("geometry", "token_term_neutral",
                                                                          "hn_clip_gain") if name in status}
    bullets = []
    if missed.get("geometry"):
        bullets.append(crowding_reading(calibration))
    if missed.get("token_term_neutral"):
        bullets.append(token_term_reading(status["token_term_neutral"], calibration))
    if missed.get("hn_clip_gain"):
        bullets.append(lead_reading(status["hn_clip_gain"], calibration, crowded=not missed.get("geometry"),
                                    token_neutral=not missed.get("token_term_neutral")))
    if not bullets:
        return ("The toy shows every condition of this section: crowded captions, a neutral token term and a lead "
                "of Table 1's size (the design targets above).")
    count = {1: "One", 2: "Two", 3: "Three"}[len(bullets)]
    return (f"{count} of the paper's conditions {'stays' if len(bullets) == 1 else 'stay'} out of the toy's reach in "
            "the calibration; `results/README.md` records what was tried for each.\n\n"
            + "\n".join(f"* {b}" for b in bullets))


def plot_paired_seeds(method: dict[int, float], baseline: dict[int, float], sigma: float, method_name: str = "HN-CLIP",
                      baseline_name: str = "InfoNCE"):
    """Why a comparison over seeds is paired: left, each seed's two runs (its baseline and its method, joined);
    right, their differences by seed with the mean ± 2 standard errors, beside ± 2√2σ, what a difference of two
    unpaired runs would have to clear."""
    from matplotlib.figure import Figure

    from hnclip_core.replication.significance import SINGLE_RUN_MARGIN

    seeds = sorted(set(method) & set(baseline))
    differences = [method[s] - baseline[s] for s in seeds]
    mean = fmean(differences)
    standard_error = (sum((d - mean) ** 2 for d in differences) / (len(seeds) - 1)) ** 0.5 / len(seeds) ** 0.5
    fig = Figure(figsize=(8.4, 3.2))
    runs, gaps = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.2, 1]})
    for s in seeds:
        runs.plot([0, 1], [baseline[s], method[s]], "o-", label=f"seed {s}")
    runs.set_xticks([0, 1], [baseline_name, method_name])
    runs.set_xlim(-0.4, 1.4)
    runs.set_ylabel("average R@1 (%), last epoch")
    runs.set_title("each seed's two runs")
    runs.legend(fontsize=8)
    gaps.axhspan(mean - 2 * standard_error, mean + 2 * standard_error, color="tab:green", alpha=0.2,
                 label="mean ± 2 SE (paired)")
    gaps.axhline(SINGLE_RUN_MARGIN * sigma, color="tab:red", linestyle="--", label="2√2σ (one unpaired pair)")
    gaps.axhline(0, color="black", linewidth=0.8)
    gaps.plot(seeds, differences, "o", color="black", label=f"{method_name} − {baseline_name}")
    gaps.set_xticks(seeds, [f"seed {s}" for s in seeds])
    gaps.set_ylabel("difference (points)")
    gaps.set_title("their differences")
    gaps.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig
