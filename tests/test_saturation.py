"""Saturation arithmetic of InfoNCE, the boost's gradient re-weighting (Eq. 4) and their figures: chapter 2's
helpers (``notebooks/chapter02_helpers.py``)."""

import csv
import io
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from hnclip_core.diagnostics import GradientMeasurement, GradientMonitor  # noqa: E402
from hnclip_core.losses import SOLVED_LOSS_THRESHOLD, HNClipLoss, caption_margin  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))

from chapter02_helpers import (  # noqa: E402
    THRESHOLDS,
    boost_explorer_figure,
    boost_explorer_widget,
    boost_reweighting,
    hardness_concentration,
    margin_sweep,
    plot_boost_posteriors,
    plot_fp32_saturation,
    plot_gradient_dynamics,
    saturation_thresholds,
)

EVENTS = {
    "solved": lambda sweep: sweep["loss"] < SOLVED_LOSS_THRESHOLD,
    "loss_zero": lambda sweep: sweep["loss"] == 0.0,
    "negative_grad_zero": lambda sweep: sweep["negative_grad"] == 0.0,
    "positive_grad_zero": lambda sweep: sweep["positive_grad"] == 0.0,
}


@pytest.fixture(scope="module")
def fp32_thresholds():
    return saturation_thresholds(logit_scale=100.0, batch_size=16, dtype=torch.float32)


def test_events_match_the_documented_thresholds():
    assert set(EVENTS) == set(THRESHOLDS)


def test_margin_sweep_returns_exact_float64_arrays():
    sweep = margin_sweep([0.0, 0.5, 2.0], logit_scale=100.0, batch_size=16)
    assert set(sweep) == {"margin", "logit_gap", "loss", "negative_grad", "positive_grad"}
    assert all(v.dtype == np.float64 and v.shape == (3,) for v in sweep.values())
    # Δ = 0: uniform posteriors, loss ln B, negative gradient p/B = 1/B², positive (1/B − 1)/B.
    assert sweep["loss"][0] == pytest.approx(math.log(16), rel=1e-6)
    assert sweep["negative_grad"][0] == pytest.approx(1 / 256, rel=1e-6)
    assert sweep["positive_grad"][0] == pytest.approx((1 / 16 - 1) / 16, rel=1e-6)
    np.testing.assert_array_equal(sweep["logit_gap"], [0.0, 50.0, 200.0])
    assert sweep["loss"][2] == 0.0 and sweep["negative_grad"][2] == 0.0


def test_fp32_loss_underflows_long_before_the_gradient(fp32_thresholds):
    """§2.1/§2.4: at s = 100 the fp32 loss is exactly 0 over a wide range of margins where the negatives'
    gradient is still non-zero; the gradient only vanishes near a cosine margin of 1."""
    t = fp32_thresholds
    assert 0.08 < t["solved_margin"] < 0.11
    assert 0.15 < t["loss_zero_margin"] < 0.22
    assert 0.95 < t["negative_grad_zero_margin"] < 1.1
    assert t["solved_margin"] < t["loss_zero_margin"] < t["negative_grad_zero_margin"]
    middle = 0.5 * (t["loss_zero_margin"] + t["negative_grad_zero_margin"])
    sweep = margin_sweep([t["loss_zero_margin"], middle], logit_scale=100.0, batch_size=16)
    np.testing.assert_array_equal(sweep["loss"], 0.0)
    assert (sweep["negative_grad"] > 0).all()
    # the positive's pull vanishes together with the loss; the push on the negatives does not
    np.testing.assert_array_equal(sweep["positive_grad"], 0.0)
    assert t["dtype"] == "float32" and t["logit_scale"] == 100.0 and t["batch_size"] == 16


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_thresholds_separate_the_margins_exactly(dtype):
    """Just below each threshold (the next smaller float64) the event does not hold, at it it does, and on a
    dense grid it holds exactly from the threshold on."""
    thresholds = saturation_thresholds(logit_scale=100.0, batch_size=16, dtype=dtype)
    grid = np.linspace(0.0, 1.2, 241)
    sweep = margin_sweep(grid, logit_scale=100.0, batch_size=16, dtype=dtype)
    for name, holds in EVENTS.items():
        margin = thresholds[f"{name}_margin"]
        assert np.isfinite(margin), name
        edge = margin_sweep([np.nextafter(margin, -np.inf), margin], logit_scale=100.0, batch_size=16, dtype=dtype)
        assert holds(edge).tolist() == [False, True], name
        assert edge["logit_gap"][1] == thresholds[f"{name}_logit_gap"]
        np.testing.assert_array_equal(holds(sweep), grid >= margin, err_msg=name)


def test_thresholds_scale_with_the_temperature_only_through_the_logit_gap():
    by_scale = {s: saturation_thresholds(logit_scale=s, batch_size=16) for s in (25.0, 50.0, 100.0, 200.0)}
    for name in EVENTS:
        margins = [by_scale[s][f"{name}_margin"] for s in sorted(by_scale)]
        assert all(a > b for a, b in zip(margins, margins[1:], strict=False)), name
        # in fp32 the event depends only on the logit gap, so every s reaches it at the same fp32 gap
        gaps = {by_scale[s][f"{name}_logit_gap"] for s in by_scale}
        assert len(gaps) == 1, (name, gaps)


def test_thresholds_move_with_the_batch_size(fp32_thresholds):
    small, large = fp32_thresholds, saturation_thresholds(logit_scale=100.0, batch_size=128)
    # more negatives: loss ≈ (B−1)·exp(−s·Δ) needs a larger gap to become small / round to zero ...
    assert large["solved_margin"] > small["solved_margin"]
    assert large["loss_zero_margin"] > small["loss_zero_margin"]
    assert large["solved_logit_gap"] - small["solved_logit_gap"] == pytest.approx(math.log(127 / 15), abs=0.05)
    # ... but each logit's gradient of the batch-mean loss is p/B, which underflows earlier for larger B
    assert large["negative_grad_zero_margin"] < small["negative_grad_zero_margin"]


def test_half_precision_saturates_at_much_smaller_margins(fp32_thresholds):
    fp16 = saturation_thresholds(logit_scale=100.0, batch_size=16, dtype=torch.float16)
    bf16 = saturation_thresholds(logit_scale=100.0, batch_size=16, dtype=torch.bfloat16)
    assert fp16["negative_grad_zero_margin"] < 0.2 < fp32_thresholds["negative_grad_zero_margin"]
    # bf16 keeps fp32's exponent range: its gradient survives far longer than fp16's
    assert bf16["negative_grad_zero_margin"] > 0.5
    # bf16 cannot represent a loss between 0 and ~2e-3: "solved" and "exactly 0" coincide
    assert bf16["solved_margin"] == bf16["loss_zero_margin"]


def _batch(batch=8, dim=16, seed=0, dtype=torch.float64, twin_noise=0.05):
    """Normalised features with caption 1 planted as a near-twin of caption 0."""
    generator = torch.Generator().manual_seed(seed)
    text = F.normalize(torch.randn(batch, dim, generator=generator, dtype=dtype), dim=1)
    text[1] = F.normalize(text[0] + twin_noise * torch.randn(dim, generator=generator, dtype=dtype), dim=0)
    image = F.normalize(text + 0.4 * torch.randn(batch, dim, generator=generator, dtype=dtype), dim=1)
    return image, text


@pytest.mark.parametrize("gamma", [0.0, 0.5])
def test_boost_weights_equal_autograd(gamma):
    image, text = _batch()
    scale = 30.0
    result = boost_reweighting(image, text, scale, gamma)
    batch = image.shape[0]
    targets = torch.arange(batch)

    # image→text row terms, logits formed as in HNClipLoss: ∂(Σ_i L_i)/∂S_ij = s·(p̃_ij − δ_ij)
    similarity = (image @ text.t()).requires_grad_(True)
    logits = scale * similarity + scale * caption_margin(text, text, gamma)
    F.cross_entropy(logits, targets, reduction="sum").backward()
    torch.testing.assert_close(result["weight_boosted"], similarity.grad, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(result["similarity"], image @ text.t())
    assert (result["weight_boosted"].diagonal() < 0).all()

    # the full symmetric HNClipLoss, through V = S, T = I (so VTᵀ = S exactly) and Ḡ from the captions `text`:
    # its gradient is the mean of the two directions' weights, each divided by B
    leaf = (image @ text.t()).requires_grad_(True)
    HNClipLoss(gamma)(leaf, torch.eye(batch, dtype=leaf.dtype), scale, margin_text_features=text).backward()
    text_to_image = boost_reweighting(text, image, scale, gamma, text_sim=text @ text.t())
    expected = (result["weight_boosted"] + text_to_image["weight_boosted"].t()) / (2 * batch)
    torch.testing.assert_close(leaf.grad, expected, rtol=1e-12, atol=1e-14)

    # the standard weights are the γ = 0 ones, i.e. InfoNCE's
    plain = (image @ text.t()).requires_grad_(True)
    HNClipLoss(gamma=0.0)(plain, torch.eye(batch, dtype=plain.dtype), scale).backward()
    expected = (result["weight"] + boost_reweighting(text, image, scale, 0.0)["weight"].t()) / (2 * batch)
    torch.testing.assert_close(plain.grad, expected, rtol=1e-12, atol=1e-14)


def test_boost_weights_in_fp32_match_autograd():
    image, text = _batch(dtype=torch.float32)
    result = boost_reweighting(image, text, torch.tensor(100.0), 0.5)
    similarity = (image @ text.t()).requires_grad_(True)
    logits = 100.0 * similarity + 100.0 * caption_margin(text, text, 0.5)
    F.cross_entropy(logits, torch.arange(len(image)), reduction="sum").backward()
    torch.testing.assert_close(result["weight_boosted"], similarity.grad)


def test_eq4_relative_repulsion_is_reweighted_by_exp_s_gamma_delta_g():
    image, text = _batch(batch=10, dim=12, seed=3)
    scale, gamma = 100.0, 0.5
    r = boost_reweighting(image, text, scale, gamma)
    p, q, g = r["posterior"], r["posterior_boosted"], r["caption_similarity"]
    assert torch.equal(g, caption_margin(text, text, 1.0))
    batch = len(image)
    for i in range(batch):
        negatives = [j for j in range(batch) if j != i]
        for j in negatives:
            for k in negatives:
                measured = (q[i, j] / q[i, k]) / (p[i, j] / p[i, k])
                predicted = math.exp(scale * gamma * (g[i, j] - g[i, k]))
                assert measured.item() == pytest.approx(predicted, rel=1e-9)
                assert (r["reweighting"][i, j] / r["reweighting"][i, k]).item() == pytest.approx(predicted, rel=1e-9)
    torch.testing.assert_close(r["log_reweighting"], scale * gamma * g, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(r["reweighting"].diagonal(), torch.ones(batch, dtype=torch.float64))
    # the paper's number: a caption-similarity gap of 0.1 at s = 100, γ = 0.5 is a factor e^5 ≈ 148
    assert math.exp(scale * gamma * 0.1) == pytest.approx(148.4, abs=0.1)


def test_gamma_zero_changes_nothing():
    image, text = _batch(dtype=torch.float32)
    r = boost_reweighting(image, text, 100.0, 0.0)
    assert torch.equal(r["reweighting"], torch.ones_like(r["reweighting"]))
    assert torch.equal(r["posterior_boosted"], r["posterior"])
    assert torch.equal(r["weight_boosted"], r["weight"])


def test_hardness_concentration_rises_with_gamma_on_a_planted_near_twin():
    image, text = _batch(batch=8, dim=16, seed=1, twin_noise=0.05)
    shares = []
    for gamma in (0.0, 0.25, 0.5, 1.0):
        r = boost_reweighting(image, text, 30.0, gamma)
        shares.append(hardness_concentration(r["weight_boosted"], r["caption_similarity"]))
    assert all(a < b for a, b in zip(shares, shares[1:], strict=False)), shares
    # the near-twin rows: with γ = 0.5 almost all of the push goes to the twin
    r = boost_reweighting(image[:2], text[:2], 30.0, 0.5)
    assert hardness_concentration(r["weight_boosted"], r["caption_similarity"]) == 1.0
    r = boost_reweighting(image, text, 30.0, 0.5)
    twin_rows = r["weight_boosted"][:2]
    assert hardness_concentration(twin_rows[:, :2].clone(), r["caption_similarity"][:2, :2]) == 1.0


def test_hardness_concentration_edge_cases():
    weights = torch.tensor([[0.0, 1.0, 3.0], [2.0, 0.0, 2.0], [0.0, 0.0, 0.0]])
    similarity = torch.tensor([[0.0, 0.9, 0.1], [0.5, 0.0, 0.2], [0.3, 0.4, 0.0]])
    # row 0: top negative (column 1) gets 1/4; row 1: column 0 gets 2/4; row 2 has no weight and is skipped
    assert hardness_concentration(weights, similarity) == pytest.approx((0.25 + 0.5) / 2)
    assert hardness_concentration(weights.numpy(), similarity.numpy(), top=2) == pytest.approx(1.0)
    assert math.isnan(hardness_concentration(torch.zeros(3, 3), similarity))
    with pytest.raises(ValueError):
        hardness_concentration(weights, similarity, top=3)


@pytest.fixture
def close_figures():
    yield
    plt.close("all")


def _render(fig: Figure) -> None:
    fig.savefig(io.BytesIO(), format="png", dpi=40)
    plt.close(fig)


def test_plot_fp32_saturation(close_figures, fp32_thresholds):
    sweep = margin_sweep(np.linspace(0.0, 1.1, 23))
    fig = plot_fp32_saturation(sweep, fp32_thresholds)
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    labels = ax.get_legend_handles_labels()[1]
    assert "loss exactly 0 in fp32" in labels and "gradient exactly 0 in fp32" in labels
    assert sum(label.startswith("(") for label in labels) == 4  # the four threshold lines
    _render(fig)


def test_plot_boost_posteriors_and_explorer(close_figures):
    image, text = _batch(batch=6, dim=8, dtype=torch.float32)
    fig = plot_boost_posteriors(boost_reweighting(image, text, 50.0, 0.5), row=1)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    tick_labels = [t.get_text() for t in fig.axes[1].get_xticklabels()]
    assert tick_labels[0] == "positive" and len(tick_labels) == 6
    _render(fig)
    fig = boost_explorer_figure(image, text, gamma=0.25, logit_scale=20.0, row=0)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    _render(fig)


def _measurements():
    rows = []
    for k in range(6):
        zero = k in (3, 5)
        rows.append(GradientMeasurement(
            step=5 * k, epoch=k // 3, loss_clip=0.0 if zero else 10.0 ** -(k + 1), loss_hn=0.05 / (k + 1),
            grad_norm_clip=0.0 if zero else 10.0 ** -(k + 2), grad_norm_hn=0.01, grad_zero_clip=zero,
            grad_zero_hn=False, grad_cosine=math.nan if zero else 0.4, solved_clip=k >= 2, solved_hn=False,
        ))
    return rows


def test_plot_gradient_dynamics_from_dataclasses_and_csv(close_figures, tmp_path):
    measurements = _measurements()
    history = [{"epoch": 0, "mean_r1": 70.0}, {"epoch": 1, "mean_r1": "74.5"}]
    fig = plot_gradient_dynamics(measurements, history)
    assert isinstance(fig, Figure) and len(fig.axes) == 5  # four panels + the ratio's twin axis
    assert fig.axes[0].get_yscale() == "log" and fig.axes[1].get_yscale() == "log"
    np.testing.assert_allclose(fig.axes[3].lines[0].get_ydata(), [30.0, 25.5])
    assert "solved: L_CLIP" in fig.axes[0].get_title() and "∇L_CLIP exactly 0" in fig.axes[1].get_title()

    monitor = GradientMonitor(every=5)
    monitor.measurements = measurements
    monitor.write_csv(tmp_path / "gradients.csv")
    with open(tmp_path / "gradients.csv") as handle:
        csv_rows = list(csv.DictReader(handle))
    assert isinstance(csv_rows[0]["grad_zero_clip"], str)
    from_csv = plot_gradient_dynamics(csv_rows)
    assert len(from_csv.axes) == 5
    for a, b in zip(fig.axes[:3], from_csv.axes[:3], strict=True):
        for line_a, line_b in zip(a.lines, b.lines, strict=True):
            np.testing.assert_array_equal(line_a.get_xdata(), line_b.get_xdata())
            np.testing.assert_array_equal(line_a.get_ydata(), line_b.get_ydata())
    _render(fig)
    _render(from_csv)


def test_boost_explorer_widget_draws_only_on_request():
    torch.manual_seed(0)
    features = torch.nn.functional.normalize(torch.randn(4, 8), dim=-1)
    widget = boost_explorer_widget(features, features.flip(0), gamma=0.25, logit_scale=50.0)
    assert [c.description for c in widget.children[:3]] == ["γ", "s", "query"]
    assert widget.children[1].value == 50.0 and widget.children[2].max == 3
    assert widget.out.outputs == ()  # manual: nothing drawn when the cell runs
