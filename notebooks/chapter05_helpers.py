"""Chapter 5's own sentences: what the embedded toy cannot show of the paper's story, and why, worded from the
calibration's measurements (``results/calibration.json``) and the verdicts of the toy's design targets
(:func:`reading_the_frontier`); and the chapter's summary of the scorecard (:func:`summary_reading`).

Kept beside the notebooks (as rasbt keeps ``previous_chapters.py``): only chapter 5 uses it. A condition appears
only while its design target is missed, with the numbers that miss it, so that the section stays true when the toy,
its benchmark or the calibration change. The summary is one short template per sentence; its qualitative words
come from the verdicts and from :mod:`hnclip_core.replication.words` (``tests/test_chapter05_helpers.py`` perturbs
them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import fmean

from matplotlib.figure import Figure

from hnclip_core.replication import paper
from hnclip_core.replication.objectives import OBJECTIVES
from hnclip_core.replication.report import power_of_ten, renamed
from hnclip_core.replication.scorecard import GAIN_OVER_INFONCE, Verdict
from hnclip_core.replication.significance import compare
from hnclip_core.replication.words import at_least, compared


def _share(value: float) -> str:
    return f"{100 * value:.1f} %" if value < 0.1 else f"{100 * value:.0f} %"


def _span(values) -> str:
    """"+1.20 to +3.05", or one number where they print alike."""
    low, high = f"{min(values):+.2f}", f"{max(values):+.2f}"
    return low if low == high else f"{low} to {high}"


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


# ------------------------------------------------------------------------------------------------- the summary
SUMMARY = ("**Summary.** On the embedded default {reproduced} of the paper's {total} claims reproduce and {missed} "
           "do not")
REGIME = ("{opening}: before any fine-tuning {solved:.0f} % of random micro-batches are already solved for InfoNCE, "
          "{twins:.0f} % of its T→I retrieval errors are near-twins and {family:.0f} % of its top-1 images lie in "
          "the query's own family{closing}")
SATURATES = ("{claim}: in epoch 1 {least} of the measured micro-batches of every run {verb} solved for it (the paper: "
             "{paper:.0f} %, Fig. 4)")
STAYS_ACTIVE = "{claim} on {least} of them in every epoch (the paper's least: {paper:.0f} %)"
GRADIENT_RATIO = ("the boosted gradient is {low:.0f}–{high:.0f} times InfoNCE's (per-epoch medians), {versus} the "
                  "paper's {paper}")
ALIGNED = ("it {verb} positively aligned with InfoNCE's (positive on {share:.0f} % of a run's measurements at least, "
           "where two random directions are on 50 %; median cosines {low:.2g}–{high:.2g} per epoch; the paper: "
           "{paper_share:.0f} %, median {paper_median:.2f})")
HEADLINE = "HN-CLIP {verb} InfoNCE over the {seeds} of chapter 3's recipe, by {by} points ({why})"
BOTH_BELOW = (" — but both end below the zero-shot model they start from (HN-CLIP by {m_low:.2f} to {m_high:.2f}, "
              "InfoNCE by {b_low:.2f} to {b_high:.2f} points)")
LOSING_LESS = (": fine-tuning costs this model accuracy, and HN-CLIP wins by losing less — damage limitation, not "
               "the paper's gain over the pre-trained model")
DAMAGE_LIMITED = ("The sample-efficiency win is damage limitation: {method} ({method_r1:.1f}) and {baseline} "
                  "({baseline_r1:.1f}) both end below the zero-shot model ({zero:.1f}); HN-CLIP loses less")
WORST_AT_FULL = ("InfoNCE is best on the least data ({low_r1:.1f} at {low:g} %) and worse with more ({high_r1:.1f} "
                 "at {high:g} %), so its 100 % run is InfoNCE at its worst")

#: The ablation claims of section 6, in the order the summary names them.
ABLATION_CLAIMS = ("gamma_beats_zero", "components", "recomputed_beats_frozen", "milder_gamma_transfers",
                   "data_efficiency", "seed_spread", "cross_domain", "temperature_plateau", "plug_and_play",
                   "efficiency")


def _holds(verdicts: Mapping[str, Verdict], claim_id: str) -> bool | None:
    """True / False for a reproduced / not reproduced claim, None where it is absent or was not measured."""
    verdict = verdicts.get(claim_id)
    return None if verdict is None or verdict.status == "not measured" else verdict.status == "reproduced"


def _quoted(verdict: Verdict) -> str:
    return f"“{verdict.text.rstrip('.')}”"


def _judged(verdict: Verdict) -> str:
    """"“claim” reproduces — why" for a measured verdict."""
    word = "reproduces" if verdict.status == "reproduced" else "does not reproduce"
    return f"{_quoted(verdict)} {word} — {renamed(verdict.explanation)}"


def _per_run(verdict: Verdict, key: str) -> list[list[float]]:
    """A fine-tuning claim's numbers of ``key``, one list per run of chapter 3's recipe (one run or several)."""
    value = verdict.ours[key]
    return value if isinstance(value[0], list) else [value]


def regime_sentence(strong: Verdict | None, regime: Mapping[str, float]) -> str:
    """The toy's design target of a strong initialisation: where the paper's diagnosis starts (section 5)."""
    if strong is None:
        return ""
    met = strong.status == "reproduced"
    return REGIME.format(
        opening="The toy starts where the paper's diagnosis starts" if met else
        "The toy misses its design target of a strong initialisation",
        solved=100 * regime["solved_share"], twins=100 * regime["twin_error_share"],
        family=100 * regime["own_family_top1"],
        closing="." if met else f" (short of the target: {strong.explanation}).")


def diagnosis_sentence(verdicts: Mapping[str, Verdict], ratios: Sequence[float]) -> str:
    """§2.4's diagnosis as the scorecard judged it: saturation, the boosted loss and its gradient (``ratios``: the
    per-epoch median gradient ratios of the monitored runs)."""
    fig4, parts = paper.SATURATION, []
    if (saturates := _holds(verdicts, "infonce_saturates")) is not None:
        least = next(iter(verdicts["infonce_saturates"].ours.values()))
        parts.append(SATURATES.format(
            claim="InfoNCE saturates" if saturates else "InfoNCE does not saturate as the paper says",
            least=at_least(least), verb="is" if least >= 1 else "are", paper=100 * fig4["solved_clip_first_epoch"]))
    if (active := _holds(verdicts, "hn_stays_active")) is not None:
        parts.append(STAYS_ACTIVE.format(claim="L_HN stays active" if active else "L_HN does not stay active",
                                         least=at_least(next(iter(verdicts["hn_stays_active"].ours.values()))),
                                         paper=100 * fig4["active_hn_min"]))
    if (within := _holds(verdicts, "gradient_ratio")) is not None and ratios:
        low, high = fig4["grad_ratio_range"]
        parts.append(GRADIENT_RATIO.format(low=min(ratios), high=max(ratios), versus="within" if within else "short of",
                                           paper=f"{power_of_ten(low)}–{power_of_ten(high)}"))
    if (aligned := _holds(verdicts, "gradient_aligned")) is not None:
        ours = verdicts["gradient_aligned"].ours
        low, high = ours["per-epoch median cosine"]
        share = next(v for k, v in ours.items() if k.startswith("least share of positive cosines"))
        parts.append(ALIGNED.format(verb="stays" if aligned else "is not", share=100 * share, low=low, high=high,
                                    paper_share=100 * fig4["cosine_positive"], paper_median=fig4["cosine_median"]))
    text = f"**The diagnosis** (§2.4): {'; '.join(parts)}." if parts else ""
    measured = [verdicts[c] for c in ("geometry", "exact_zero_gradients") if _holds(verdicts, c) is not None]
    if measured:
        text += f"\n\nOf the measurements behind it, {'; '.join(map(_judged, measured))}."
    return text


def headline_sentence(verdicts: Mapping[str, Verdict], sigma: float) -> str:
    """HN-CLIP against InfoNCE and against the zero-shot model, at every seed of chapter 3's recipe (Table 1, Fig. 5),
    and the two claims about the epochs."""
    parts = []
    beats, above_zero = _holds(verdicts, "beats_infonce"), _holds(verdicts, "beats_zero_shot")
    if beats is not None and above_zero is not None:
        pairs = _per_run(verdicts["beats_infonce"], "hn+tok / clip avg R@1")
        zero = [z for _, z in _per_run(verdicts["beats_zero_shot"], "hn+tok / zero-shot avg R@1")]
        gaps = [a - b for a, b in pairs]
        method_drop = [z - a for (a, _), z in zip(pairs, zero, strict=True)]
        baseline_drop = [z - b for (_, b), z in zip(pairs, zero, strict=True)]
        text = HEADLINE.format(verb="beats" if beats else "does not beat",
                               seeds=f"{len(gaps)} seed{'s' * (len(gaps) > 1)}",
                               by=_span(gaps), why=renamed(verdicts["beats_infonce"].explanation))
        if above_zero:
            text += ", and ends above the zero-shot model it starts from, as in the paper"
        elif all(compared(-d, sigma) == "behind" for d in method_drop + baseline_drop):
            text += BOTH_BELOW.format(m_low=min(method_drop), m_high=max(method_drop), b_low=min(baseline_drop),
                                      b_high=max(baseline_drop)) + (LOSING_LESS if beats else "")
        else:
            text += (", but does not beat the zero-shot model it starts from "
                     f"({renamed(verdicts['beats_zero_shot'].explanation)})")
        parts.append(text)
    epochs = [_judged(verdicts[c]) for c in ("leads_from_first_epoch", "first_epoch_matches_final")
              if _holds(verdicts, c) is not None]
    if not parts and not epochs:
        return ""
    return ("**The headline** (Table 1, Fig. 5): " + "; ".join(parts) + ". "
            + (f"Over the epochs, {'; '.join(epochs)}." if epochs else ""))


def ablations_sentence(verdicts: Mapping[str, Verdict]) -> str:
    """Which ablation claims reproduce on the full grids of section 6, and which do not."""
    kept = [_quoted(verdicts[c]) for c in ABLATION_CLAIMS if _holds(verdicts, c)]
    lost = [_quoted(verdicts[c]) for c in ABLATION_CLAIMS if _holds(verdicts, c) is False]
    if not kept and not lost:
        return ""
    return (f"**The ablations** (section 6; the table says why). Reproduced: {'; '.join(kept) or 'none'}. "
            f"Not reproduced: {'; '.join(lost) or 'none'}.")


def sample_efficiency_note(verdict: Verdict | None, last: Mapping[tuple[float, str], float], zero_shot: float,
                           sigma: float) -> str:
    """Whether a reproduced sample-efficiency win is a gain or a smaller loss, and whether InfoNCE is worst on all the
    data (``last[fraction, objective]``: the fractions grid's last-epoch average R@1)."""
    if verdict is None or verdict.status != "reproduced" or not last:
        return ""
    (method, method_r1), (baseline, baseline_r1) = verdict.ours.items()

    def named(label: str) -> str:
        """"hn+tok at 20 % avg R@1" → "HN-CLIP on 20 % of the data"."""
        objective, share = label.removesuffix(" avg R@1").split(" at ")
        return f"{OBJECTIVES.get(objective, objective)} on {share} of the data"

    notes = []
    if all(compared(r1 - zero_shot, sigma) == "behind" for r1 in (method_r1, baseline_r1)):
        notes.append(DAMAGE_LIMITED.format(method=named(method), method_r1=method_r1, baseline=named(baseline),
                                           baseline_r1=baseline_r1, zero=zero_shot))
    least, most = min(f for f, _ in last), max(f for f, _ in last)
    if (least, "clip") in last and (most, "clip") in last and \
            compared(last[most, "clip"] - last[least, "clip"], sigma) == "behind":
        notes.append(WORST_AT_FULL.format(low_r1=last[least, "clip"], low=100 * least, high_r1=last[most, "clip"],
                                          high=100 * most))
    return "; ".join(notes) + "." if notes else ""


def summary_reading(scorecard: Sequence[Verdict], targets: Sequence[Verdict], regime: Mapping[str, float],
                    ratios: Sequence[float], fractions_last: Mapping[tuple[float, str], float],
                    fractions_zero_shot: float | None, sigma: float) -> str:
    """The chapter's summary, one paragraph per part of the scorecard, each worded from its verdicts and numbers."""
    verdicts = {v.claim_id: v for v in scorecard}
    counts = {s: sum(v.status == s for v in scorecard) for s in ("reproduced", "not reproduced", "not measured")}
    summary = SUMMARY.format(reproduced=counts["reproduced"], total=len(scorecard), missed=counts["not reproduced"])
    summary += f"; {counts['not measured']} could not be measured." if counts["not measured"] else "."
    strong = next((v for v in targets if v.claim_id == "strong_initialisation"), None)
    paragraphs = [summary, regime_sentence(strong, regime), diagnosis_sentence(verdicts, ratios),
                  headline_sentence(verdicts, sigma), ablations_sentence(verdicts),
                  sample_efficiency_note(verdicts.get("data_efficiency"), fractions_last, fractions_zero_shot, sigma)
                  if fractions_zero_shot is not None else "",
                  "On real Long-CLIP-L and DOCCI every chapter and grid runs unchanged with `backbone` and `dataset` "
                  "set; there the same rules judge the paper's claims on the paper's own model."]
    return "\n\n".join(p for p in paragraphs if p)


#: How far the figure's axis reaches either side of a rule's threshold (in the rule's own units); a margin beyond it is
#: drawn to the edge with its value written.
MARGIN_AXIS = 2.0
STATUS_COLOURS = {"reproduced": "#2ca02c", "not reproduced": "#d62728", "not measured": "#bdbdbd"}


def plot_scorecard(verdicts: Sequence[Verdict], title: str = "The scorecard: each claim's margin to its rule"
                   ) -> Figure:
    """One bar per claim: how far the number that decided it lies past its rule's threshold (``Verdict.margin``; 0 is
    the threshold, +1 a margin as large again as the threshold itself, or as the comparison's 2 SE), coloured by the
    verdict, with the deciding number written beside it. Claims not measured sit at 0, hatched."""
    fig = Figure(figsize=(11, 0.42 * len(verdicts) + 1.2))
    ax = fig.subplots()
    for row, v in enumerate(verdicts):
        measured = v.margin is not None
        width = max(-MARGIN_AXIS, min(MARGIN_AXIS, v.margin)) if measured else 0.0
        ax.barh(row, width or 0.02, left=0 if width else -0.01, color=STATUS_COLOURS[v.status],
                hatch=None if measured else "//", edgecolor="white" if measured else "#7f7f7f", height=0.62)
        clipped = measured and abs(v.margin) > MARGIN_AXIS
        note = (f"{v.margin:+.1f} → " if clipped else "") + (v.deciding or "not measured")
        ax.text(max(width, 0) + 0.05, row, note, va="center", fontsize=7, color="#333333")
    ax.axvline(0, color="black", linewidth=1)
    ax.set_yticks(range(len(verdicts)), [v.claim_id.replace("_", " ") for v in verdicts], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(-MARGIN_AXIS, MARGIN_AXIS + 5.4)  # room on the right for the notes
    ax.set_xticks([-2, -1, 0, 1, 2], ["−2", "−1", "0: the rule's\nthreshold", "+1", "+2"])
    ax.set_xlabel("margin to the rule, in units of its threshold (comparisons: of their 2 SE or 2√2σ); > 0 reproduces")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    handles = [ax.bar(0, 0, color=c, label=s) for s, c in STATUS_COLOURS.items()]
    ax.legend(handles=handles, fontsize=8, loc="lower right", frameon=False)
    fig.tight_layout()
    return fig
