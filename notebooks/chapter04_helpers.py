"""Chapter 4's own sentences: the closing reading of each study, worded from its numbers.

Kept beside the notebooks (as rasbt keeps ``previous_chapters.py``): only chapter 4 uses them. Each ``*_reading``
takes plain numbers (last-epoch average R@1 by configuration, σ, the paper's values), fills one short template
per sentence, and picks every qualitative word through :mod:`hnclip_core.replication.words`, so that
``tests/test_chapter04_helpers.py`` can perturb the numbers and see the words follow. Every comparison of two runs
reads by the scorecard's one rule: A is *ahead of* B beyond 2√2σ (:func:`~hnclip_core.replication.words.compared`).

By section of ``04_ablations``: the yardstick and zero-shot (:func:`yardstick_reading`,
:func:`zero_shot_reading`), the paired test over seeds (:func:`paired_reading`), (b) :func:`components_reading`,
(a) :func:`boost_reading`, (f) :func:`transfer_reading`, (c) :func:`margin_source_reading`, (d)
:func:`sample_efficiency_reading`, (e) :func:`seeds_reading`, (g) :func:`temperature_reading`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from hnclip_core.replication.objectives import BASELINES, METHOD, OBJECTIVES
from hnclip_core.replication.significance import SINGLE_RUN_MARGIN, Comparison, SeedSpread
from hnclip_core.replication.words import compared, gap_note, how_many, trend

YARDSTICK = ("**The yardstick.** {spread}, from the seeds of (e) ({where}); a difference of two single runs must "
             "exceed 2√2σ = {margin:.2f} points to count. {one_seed}")
NO_YARDSTICK = ("**The yardstick.** (e) ran no two seeds of one method here, so there is no σ: every difference "
                "below is one run against another, and none is called beyond the noise. {one_seed}")
ZERO_SHOT = ("**Against zero-shot** ({zero:.1f}): of the {total} fine-tuned models of (a) and (b), {counts} "
             "(from {low:+.1f} to {high:+.1f} points).")
ALL_BELOW = (" At this scale fine-tuning costs this model accuracy: (a) and (b) compare how much each loss loses, "
             "and a loss \"ahead\" of another here loses less; it does not improve on the pre-trained model.")
ALL_ABOVE = " (a) and (b) compare how much each loss adds to the pre-trained model."
COMPONENTS = ("**(b) Components.** L_HN alone is {hn} InfoNCE ({hn_gap}); HN-CLIP (L_HN + L_tok) is {both} InfoNCE "
              "({both_gap}); L_tok alone is {tok} InfoNCE ({tok_gap}); and adding L_tok to L_HN {adding} "
              "({adding_gap}). In the paper (Table 3b, average of DCI and Long-DCI) L_tok alone moves InfoNCE by "
              "{paper_tok:+.2f} and adds {paper_adding:+.2f} to L_HN.")
BOOST = "**(a) Boost strength.** γ = 0 is L_tok alone; {against_zero}. The γ > 0 runs lie within {width:.1f} points " \
        "of each other ({width_word} 2√2σ)."
TRANSFER = "**(f) Transfer.** On {dataset} the {total} models of (b) rank {order} in-domain ({ranking}){method}; " \
           "{below} end below the zero-shot model on it ({zero:.1f}) by more than 2√2σ."
MARGIN_SOURCE = ("**(c) Recomputed vs frozen Ḡ** ({where}): the recomputed run is {standing} the frozen one "
                 "({gap}). The margin a frozen Ḡ keeps all training is the captions' mean similarity before "
                 "fine-tuning, {start:.3f} here; under the recomputing run's encoder it {moves} {end:.3f} by its "
                 "last epoch. DOCCI's under Long-CLIP-L is {docci:.2f} (Table A1), so these captions are {crowded} "
                 "crowded, and the boost either variant applies is correspondingly {boost}.")
SAMPLE_EFFICIENCY = ("**(d) Sample efficiency** ({where}): against InfoNCE on the same data, HN-CLIP is {standing} "
                     "(2√2σ as above)")
PAPERS_COMPARISON = (". The paper's comparison: HN-CLIP on {small:g} % of the data is {standing} the strongest "
                     "baseline ({baseline}) on all of it ({gap})")
DAMAGE_LIMITATION = (" — but both end below the zero-shot model ({zero:.1f}): HN-CLIP wins by losing less, damage "
                     "limitation rather than the paper's gain")
NO_PAPERS_COMPARISON = ". This grid has no {small:g} % and 100 % pair, so the paper's comparison is not made here"
MORE_DATA_COSTS = (". InfoNCE ends *lower* the more data it trains on ({low_r1:.1f} at {low:g} % → {high_r1:.1f} at "
                   "{high:g} %): on this model more InfoNCE training costs more accuracy")
SEEDS = ("**(e) Seeds** ({where}): over {seeds} seeds HN-CLIP's largest seed-to-seed difference over R@1/5/10 of both "
         "directions is {worst:.1f} points ({metric}), {versus} the paper's {paper:.2f} for the same six metrics over "
         "its {paper_seeds} seeds (Table A8, Long-DCI); its average R@1 moves by {average:.1f}{caveat}")
MORE_SEEDS = " (max − min over {seeds} seeds tends to exceed that over {paper_seeds}, for the same noise)."
TEMPERATURE = "**(g) Temperature × γ** ({where}): every γ > 0 is {everywhere} ({gains})"
SAME_GAMMA = "; at the same γ the boost adds {summary} ({each})"
SAME_PRODUCT = ("; the runs with the same s·γ = {product:g} (s = {s:g}, γ = {g:g} and s = {t:g}, γ = {h:g}) score "
                "{alike} ({gap})")

PAIRED = ("**Paired over {seeds} seeds**, HN-CLIP is ahead of InfoNCE at {ahead} (d = {each}); the mean d̄ = "
          "{mean:+.2f} is {beyond} 2 SE = {margin:.2f}, so by the paired rule HN-CLIP {verdict} InfoNCE. Judged one "
          "seed at a time against 2√2σ = {single:.2f}, {passing} would count as a win{which}.")

#: Table A8's six metrics, as the seeds reading names them.
SIX_METRICS = {f"{d}_r{k}": f"{name} R@{k}" for d, name in (("t2i", "T→I"), ("i2t", "I→T")) for k in (1, 5, 10)}


def _listed(parts: Sequence[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def yardstick_reading(spread: SeedSpread, where_seeds: str, one_seed: str) -> str:
    """What every later difference is read against: σ from the seeds study, 2√2σ for two single runs."""
    if not spread.measured:
        return NO_YARDSTICK.format(one_seed=one_seed)
    return YARDSTICK.format(spread=spread.describe(), where=where_seeds, margin=SINGLE_RUN_MARGIN * spread.value,
                            one_seed=one_seed)


def zero_shot_reading(zero: float, finals: Sequence[float], sigma: float) -> str:
    """Where the fine-tuned models of (a) and (b) end against the zero-shot model they start from."""
    standing = [compared(r1 - zero, sigma) for r1 in finals]
    groups = (("ahead of", "above it by more than 2√2σ"), ("behind", "below it by more than 2√2σ"),
              ("level with", "within 2√2σ of it"))
    counts = [f"{how_many(n, len(finals))} {'ends' if n == 1 else 'end'} {what}"
              for word, what in groups if (n := standing.count(word))]
    drops = [r1 - zero for r1 in finals]
    text = ZERO_SHOT.format(zero=zero, total=len(finals), counts=_listed(counts), low=min(drops), high=max(drops))
    if standing.count("behind") == len(finals):
        return text + ALL_BELOW
    return text + (ALL_ABOVE if standing.count("ahead of") == len(finals) else "")


def paired_reading(paired: Comparison) -> str:
    """What the paired test says of HN-CLIP vs InfoNCE over seeds, beside what each seed alone would say."""
    differences = paired.differences
    ahead = sum(d > 0 for d in differences.values())
    winners = [seed for seed, d in differences.items() if compared(d, paired.sigma) == "ahead of"]
    return PAIRED.format(
        seeds=paired.seeds, ahead=how_many(ahead, paired.seeds, "seeds"),
        each=", ".join(f"{d:+.2f}" for d in differences.values()), mean=paired.mean, margin=paired.margin,
        beyond="beyond" if paired.mean > paired.margin else "within",
        verdict="beats" if paired.beats else "trails" if paired.behind else "does not beat",
        single=SINGLE_RUN_MARGIN * paired.sigma,
        passing=how_many(len(winners), paired.seeds),
        which=f" (seed {', '.join(map(str, winners))})" if 0 < len(winners) < paired.seeds else "")


def components_reading(r1: Mapping[str, float], paper_3b: Mapping[str, float], sigma: float) -> str:
    """(b): each component against InfoNCE, and what L_tok adds to L_HN (``r1`` and ``paper_3b`` keyed by objective:
    ``clip``, ``tok``, ``hn``, ``hn+tok``)."""
    gaps = {"hn": r1["hn"] - r1["clip"], "both": r1["hn+tok"] - r1["clip"], "tok": r1["tok"] - r1["clip"],
            "adding": r1["hn+tok"] - r1["hn"]}
    words = {name: compared(gap, sigma) for name, gap in gaps.items()}
    words["adding"] = compared(gaps["adding"], sigma, "helps", "changes nothing beyond 2√2σ", "costs accuracy")
    return COMPONENTS.format(**words, **{f"{name}_gap": gap_note(gap, sigma) for name, gap in gaps.items()},
                             paper_tok=paper_3b["tok"] - paper_3b["clip"],
                             paper_adding=paper_3b["hn+tok"] - paper_3b["hn"])


def boost_reading(r1_by_gamma: Mapping[float, float], sigma: float) -> str:
    """(a): every γ > 0 against γ = 0 (L_tok alone), and how far apart the γ > 0 runs lie."""
    leads = {g: r1 - r1_by_gamma[0.0] for g, r1 in r1_by_gamma.items() if g > 0}
    short = [g for g, lead in leads.items() if compared(lead, sigma) != "ahead of"]
    if short:
        against_zero = "not every γ > 0 is ahead of it by more than 2√2σ: " + ", ".join(
            f"γ = {g:g} ({gap_note(leads[g], sigma)})" for g in short)
    else:
        against_zero = (f"every γ > 0 is ahead of it by more than 2√2σ, by {min(leads.values()):+.1f} to "
                        f"{max(leads.values()):+.1f} points")
    width = max(leads.values()) - min(leads.values())
    return BOOST.format(against_zero=against_zero, width=width,
                        width_word=compared(width, sigma, "beyond", "within", "beyond"))


def transfer_reading(dataset: str, home: Mapping[str, float], away: Mapping[str, float], away_zero: float,
                     sigma: float) -> str:
    """(f): the models of (b) on another benchmark, ranked as in-domain or not (``home``/``away`` by objective)."""
    order = sorted(away, key=away.get, reverse=True)
    method = ""
    if {"hn+tok", "clip"} <= set(away):
        gap = away["hn+tok"] - away["clip"]
        method = f"; HN-CLIP is {compared(gap, sigma)} InfoNCE there ({gap_note(gap, sigma)})"
    below = sum(compared(r1 - away_zero, sigma) == "behind" for r1 in away.values())
    return TRANSFER.format(
        dataset=dataset, total=len(away), ranking=" > ".join(OBJECTIVES[o] for o in order), method=method,
        order="as they do" if order == sorted(home, key=home.get, reverse=True) else "differently from",
        below=how_many(below, len(away)), zero=away_zero)


def margin_source_reading(recomputed: float, frozen: float, similarity: Sequence[float], docci: float, sigma: float,
                          where: str) -> str:
    """(c): recomputed against frozen Ḡ, and the caption similarity the frozen margin keeps (``similarity``: the
    recomputing run's mean caption cosine by epoch, epoch 0 first)."""
    gap, start = recomputed - frozen, similarity[0]
    return MARGIN_SOURCE.format(
        where=where, standing=compared(gap, sigma), gap=gap_note(gap, sigma), start=start, end=similarity[-1],
        moves=trend(similarity, rises="rises to", falls="falls to", stays="stays level, at"), docci=docci,
        crowded="far less" if start < docci / 2 else "less" if start < docci else "at least as",
        boost="smaller" if start < docci else "as large or larger")


def sample_efficiency_reading(r1_by_fraction: Mapping[float, Mapping[str, float]], zero: float, sigma: float,
                              where: str, paper_fraction: float) -> str:
    """(d): HN-CLIP against InfoNCE at each fraction, the paper's comparison (HN-CLIP on ``paper_fraction`` of the
    data against the strongest baseline on all of it), and whether a win is a gain or a smaller loss.
    ``r1_by_fraction[f][objective]`` is a run's last-epoch average R@1."""
    standing = {f: compared(runs["hn+tok"] - runs["clip"], sigma)
                for f, runs in sorted(r1_by_fraction.items()) if {"clip", "hn+tok"} <= set(runs)}
    text = SAMPLE_EFFICIENCY.format(where=where, standing="; ".join(
        f"{word} it at " + ", ".join(f"{100 * f:g} %" for f, w in standing.items() if w == word)
        for word in ("ahead of", "level with", "behind") if word in standing.values()))
    low, high = min(r1_by_fraction), max(r1_by_fraction)
    baselines = {o: r1 for o, r1 in r1_by_fraction[high].items() if o in BASELINES}
    if paper_fraction in r1_by_fraction and high == 1.0 and baselines:
        best = max(baselines, key=baselines.get)
        small, full = r1_by_fraction[paper_fraction][METHOD], baselines[best]
        text += PAPERS_COMPARISON.format(small=100 * paper_fraction, standing=compared(small - full, sigma),
                                         baseline=OBJECTIVES[best], gap=gap_note(small - full, sigma))
        if all(compared(r1 - zero, sigma) == "behind" for r1 in (small, full)):
            text += DAMAGE_LIMITATION.format(zero=zero)
    else:
        text += NO_PAPERS_COMPARISON.format(small=100 * paper_fraction)
    if "clip" in r1_by_fraction[low] and "clip" in r1_by_fraction[high]:
        low_r1, high_r1 = r1_by_fraction[low]["clip"], r1_by_fraction[high]["clip"]
        if compared(high_r1 - low_r1, sigma) == "behind":
            text += MORE_DATA_COSTS.format(low_r1=low_r1, low=100 * low, high_r1=high_r1, high=100 * high)
    return text + "."


def seeds_reading(method_runs: Sequence[Mapping[str, float]], paper_spread: float, paper_seeds: int,
                  where: str) -> str:
    """(e): HN-CLIP's largest seed-to-seed difference over Table A8's six metrics against the paper's
    (``method_runs``: one last-epoch metrics row per seed)."""
    deltas = {m: max(r[m] for r in method_runs) - min(r[m] for r in method_runs) for m in SIX_METRICS}
    worst = max(deltas, key=deltas.get)
    seeds = len(method_runs)
    return SEEDS.format(
        where=where, seeds=seeds, worst=deltas[worst], metric=SIX_METRICS[worst],
        versus="more than" if deltas[worst] > paper_spread else "within", paper=paper_spread,
        paper_seeds=paper_seeds,
        average=max(r["mean_r1"] for r in method_runs) - min(r["mean_r1"] for r in method_runs),
        caveat=MORE_SEEDS.format(seeds=seeds, paper_seeds=paper_seeds) if seeds > paper_seeds else ".")


def temperature_reading(grid: Mapping[tuple[float, float], float], sigma: float, where: str) -> str:
    """(g): the boost at each fixed s against γ = 0 at that s, the same γ across s, and runs with the same s·γ
    (``grid[s, γ]`` a run's last-epoch average R@1)."""
    gains = {(s, g): r1 - grid[s, 0.0] for (s, g), r1 in grid.items() if g > 0 and (s, 0.0) in grid}
    everywhere = all(compared(gain, sigma) == "ahead of" for gain in gains.values())
    text = TEMPERATURE.format(
        where=where, gains="; ".join(f"s = {s:g}, γ = {g:g}: {v:+.1f}" for (s, g), v in sorted(gains.items())),
        everywhere="ahead of γ = 0 at its s by more than 2√2σ" if everywhere else
        "not ahead of γ = 0 at its s by more than 2√2σ everywhere")
    temperatures = sorted({s for s, _ in grid})
    shared = sorted({g for _, g in gains if all((t, g) in gains for t in temperatures)})
    if len(temperatures) > 1 and shared:
        a, b = temperatures[0], temperatures[-1]
        words = {compared(gains[a, g] - gains[b, g], sigma, "more", "as much", "less") for g in shared}
        summary = (f"about as much at s = {a:g} as at s = {b:g}" if words == {"as much"} else
                   f"{words.pop()} at s = {a:g} than at s = {b:g}" if len(words) == 1 else
                   f"different amounts at s = {a:g} and at s = {b:g}")
        text += SAME_GAMMA.format(summary=summary, each="; ".join(
            f"γ = {g:g}: {gains[a, g]:+.1f} vs {gains[b, g]:+.1f}, a difference of "
            f"{gap_note(gains[a, g] - gains[b, g], sigma)}" for g in shared))
    twins = [((s, g), (t, h)) for (s, g) in grid for (t, h) in grid
             if s < t and g > 0 and h > 0 and math.isclose(s * g, t * h)]
    for (s, g), (t, h) in twins:
        gap = grid[s, g] - grid[t, h]
        text += SAME_PRODUCT.format(product=s * g, s=s, g=g, t=t, h=h, gap=gap_note(gap, sigma),
                                    alike="alike" if compared(gap, sigma) == "level with" else "differently")
    if twins:
        text += (", so the boost does not act through s·γ alone" if any(
            compared(grid[x] - grid[y], sigma) != "level with" for x, y in twins) else
            ", as if the boost acted through s·γ alone")
    return text + "."
