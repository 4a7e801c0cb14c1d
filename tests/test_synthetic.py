"""Tests of the synthetic near-duplicate benchmark (hnclip_core.toy.synthetic) and the cache folder."""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import json
import statistics
import time
from pathlib import Path

import numpy as np
import pytest

from hnclip_core.data.docci import load_docci_pairs
from hnclip_core.toy import synthetic
from hnclip_core.toy.cache import cache_dir
from hnclip_core.toy.synthetic import (
    OBJECT_COLOURS,
    SyntheticConfig,
    caption_stats,
    describe_scene,
    ensure_synthetic_benchmark,
    generate_examples,
    render_scene,
    write_synthetic_benchmark,
)

# Through the plain camera, so that the images are the renderer's own (the warm camera is tested on its own).
SMALL = SyntheticConfig(num_train_families=12, num_test_families=6, num_val_families=6, family_size=4, camera="plain")


@pytest.fixture(scope="module")
def small_train():
    return generate_examples(SMALL, "train")


def families(examples):
    grouped: dict[str, list] = {}
    for example in examples:
        grouped.setdefault(example.family_id, []).append(example)
    return grouped


def words_changed(a: str, b: str) -> int:
    """Words inserted, deleted or replaced to turn caption ``a`` into caption ``b``."""
    words_a, words_b = a.split(), b.split()
    matched = sum(block.size for block in difflib.SequenceMatcher(None, words_a, words_b).get_matching_blocks())
    return len(words_a) + len(words_b) - 2 * matched


def scene_details(example) -> dict:
    """Every discrete detail of an example's scene, keyed by what it is."""
    details = {"background": example.background["colour"], "pattern": example.background["pattern"]}
    for index, obj in enumerate(example.objects):
        for attribute in ("shape", "colour", "size", "region"):
            details[(index, attribute)] = obj[attribute]
    return details


# ---------------------------------------------------------------------------------------------------- cache


def test_cache_dir_follows_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("HNCLIP_CACHE", str(tmp_path / "cache"))
    assert cache_dir() == tmp_path / "cache"
    assert cache_dir().is_dir()

    monkeypatch.delenv("HNCLIP_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "hnclip"


# --------------------------------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    "bad",
    [
        {"caption_style": "poem"},
        {"family_size": 0},
        {"family_fraction": 1.5},
        {"min_objects": 1},
        {"min_objects": 4, "max_objects": 3},
        {"image_size": 16},
        {"camera": "pinhole"},
    ],
)
def test_invalid_config_is_rejected(bad):
    with pytest.raises(ValueError):
        SyntheticConfig(**bad)


def test_counts_follow_config(small_train):
    assert len(small_train) == SMALL.num_train_families * SMALL.family_size
    assert len(generate_examples(SMALL, "test")) == SMALL.num_test_families * SMALL.family_size
    assert [e.example_id for e in small_train[:2]] == ["train_00000", "train_00001"]
    singletons = SyntheticConfig(num_train_families=10, num_test_families=0, num_val_families=0, family_fraction=0.0)
    assert len(generate_examples(singletons, "train")) == 10


# ---------------------------------------------------------------------------------------------- determinism


def test_same_seed_gives_identical_captions_and_pixels(small_train):
    again = generate_examples(SMALL, "train")
    assert [e.caption for e in again] == [e.caption for e in small_train]
    assert [e.captions for e in again] == [e.captions for e in small_train]
    assert [e.image.tobytes() for e in again] == [e.image.tobytes() for e in small_train]
    assert [e.objects for e in again] == [e.objects for e in small_train]


def test_different_seed_gives_different_benchmark(small_train):
    other = generate_examples(SyntheticConfig(**{**SMALL.__dict__, "seed": 1}), "train")
    assert sum(a.caption != b.caption for a, b in zip(other, small_train, strict=True)) > len(other) // 2
    assert any(a.image.tobytes() != b.image.tobytes() for a, b in zip(other, small_train, strict=True))


def test_a_family_does_not_depend_on_how_many_families_are_generated(small_train):
    fewer = generate_examples(SyntheticConfig(num_train_families=3, num_test_families=0, num_val_families=0), "train")
    assert [e.caption for e in fewer] == [e.caption for e in small_train[: len(fewer)]]
    # A smaller family is a prefix of a larger one.
    pairs = generate_examples(SyntheticConfig(num_train_families=3, num_test_families=0, num_val_families=0,
                                              family_size=2), "train")
    by_family = families(small_train)
    for family_id, members in families(pairs).items():
        assert [e.caption for e in members] == [e.caption for e in by_family[family_id][:2]]


# ------------------------------------------------------------------------------------------------- families


def test_each_member_differs_from_its_family_base_in_exactly_one_detail(small_train):
    for members in families(small_train).values():
        base, *others = members
        assert base.changed_detail is None
        base_details = scene_details(base)
        for member in others:
            detail = member.changed_detail
            details = scene_details(member)
            changed = {key for key in details if details[key] != base_details[key]}
            if detail["kind"] == "background":
                assert changed == {"background"}
            elif detail["kind"] == "swap":
                i, j = detail["objects"]
                assert changed == {(i, "region"), (j, "region")}
                assert (details[(i, "region")], details[(j, "region")]) == (
                    base_details[(j, "region")],
                    base_details[(i, "region")],
                )
            else:
                (index,) = detail["objects"]
                assert changed == {(index, detail["kind"])}
                assert (base_details[(index, detail["kind"])], details[(index, detail["kind"])]) == (
                    detail["before"],
                    detail["after"],
                )


def test_family_captions_are_near_duplicates_and_other_families_are_not(small_train):
    groups = list(families(small_train).values())
    pairs = [(base, member) for base, *others in groups for member in others]
    within = [words_changed(base.caption, member.caption) for base, member in pairs]
    across = [words_changed(a[0].caption, b[0].caption) for a, b in itertools.combinations(groups, 2)]
    # A colour/shape/size/background edit touches one or two phrases; a swap moves two region
    # phrases and the relations that mention the swapped objects.
    for (_, member), changed in zip(pairs, within, strict=True):
        limit = 40 if member.changed_detail["kind"] == "swap" else 16
        assert 0 < changed <= limit, (member.changed_detail, changed)
    assert statistics.fmean(across) > 4 * statistics.fmean(within)
    assert min(across) > statistics.median(within)
    for members in groups:  # every member is distinguishable from its siblings by its caption
        assert len({m.caption for m in members}) == len(members)


# ------------------------------------------------------------------------------------------------- captions


def test_dense_captions_are_long_and_describe_every_object(small_train):
    stats = caption_stats([e.caption for e in small_train])
    assert 80 <= stats["mean"] <= 130, stats
    for example in small_train:
        assert example.background["colour"] in example.caption
        for obj in example.objects:
            assert obj["sentence"] in example.caption
            assert obj["colour"] in obj["sentence"] and obj["shape"] in obj["sentence"]
            assert obj["size"] in obj["sentence"]


def test_dense_alt_has_the_same_content_in_other_words(small_train):
    for example in small_train:
        alt = example.captions["dense-alt"]
        assert alt != example.caption
        for obj in example.objects:
            assert obj["colour"] in alt and obj["shape"] in alt
    assert 80 <= caption_stats([e.captions["dense-alt"] for e in small_train])["mean"] <= 130


def test_short_style_is_one_short_sentence(small_train):
    stats = caption_stats([e.captions["short"] for e in small_train])
    assert stats["max"] <= 15 and stats["mean"] < 13, stats
    short = generate_examples(SyntheticConfig(**{**SMALL.__dict__, "caption_style": "short"}), "train")
    assert [e.caption for e in short] == [e.captions["short"] for e in small_train]
    assert sum(obj["sentence"] is not None for obj in short[0].objects) == 2


def test_describe_scene_shares_templates_given_a_choice(small_train):
    scene = small_train[0].scene
    choice = synthetic.draw_template_choice(len(scene.objects), np.random.default_rng(5))
    first = describe_scene(scene, "dense", choice)
    assert describe_scene(scene, "dense", choice) == first
    fresh = describe_scene(scene, "dense", np.random.default_rng(5))
    assert fresh == first  # the generator is used to draw the same choice


# --------------------------------------------------------------------------------------------------- images


def test_boxes_lie_inside_the_image_do_not_overlap_and_show_the_object_colour(small_train):
    size = SMALL.image_size
    for example in small_train:
        assert example.image.size == (size, size) and example.image.mode == "RGB"
        pixels = np.asarray(example.image).astype(int)
        for obj in example.objects:
            x0, y0, x1, y1 = obj["bbox"]
            assert 0 <= x0 < x1 <= size and 0 <= y0 < y1 <= size
            if obj["shape"] in synthetic.FILLED_SHAPES:
                centre = pixels[(y0 + y1) // 2, (x0 + x1) // 2]
                assert np.abs(centre - OBJECT_COLOURS[obj["colour"]]).max() <= 2, (example.example_id, obj)
        # The exact (unrounded) boxes are disjoint; the integer bboxes are rounded outwards.
        exact_boxes = [synthetic.object_box(obj, size) for obj in example.scene.objects]
        for a, b in itertools.combinations(exact_boxes, 2):
            overlap_x = min(a[2], b[2]) - max(a[0], b[0])
            overlap_y = min(a[3], b[3]) - max(a[1], b[1])
            assert overlap_x <= 0 or overlap_y <= 0


def test_render_scene_is_pure(small_train):
    scene = small_train[0].scene
    assert render_scene(scene, 64).tobytes() == small_train[0].image.tobytes()
    assert render_scene(scene, 128).size == (128, 128)


def test_another_camera_changes_only_the_pixels_and_keeps_them_recognisable(small_train):
    warm = generate_examples(dataclasses.replace(SMALL, camera="warm"), "train")
    assert [e.captions for e in warm] == [e.captions for e in small_train]
    assert [e.objects for e in warm] == [e.objects for e in small_train]
    plain = np.stack([np.asarray(e.image, dtype=float) for e in small_train])
    shot = np.stack([np.asarray(e.image, dtype=float) for e in warm])
    # The cast pulls every pixel towards WARM_CAST: on average over the images, red rises well above blue.
    shift = (shot - plain).mean(axis=(0, 1, 2))
    assert shift[0] - shift[2] > 10
    # Still the same scenes: each image's nearest plain rendering is of its own family (its near-twins differ from
    # it in one detail, less than the camera changes it, so the nearest need not be the image itself).
    distances = ((shot[:, None] - plain[None]) ** 2).mean(axis=(2, 3, 4))
    families = np.array([e.family_id for e in small_train])
    assert (families[distances.argmin(axis=1)] == families).all()
    again = generate_examples(dataclasses.replace(SMALL, camera="warm"), "train")
    assert [e.image.tobytes() for e in again] == [e.image.tobytes() for e in warm]


def test_the_plain_camera_is_the_renderer_itself(small_train):
    rng = np.random.default_rng(0)
    image = small_train[0].image
    assert synthetic.photograph(image, synthetic.CAMERAS["plain"], rng).tobytes() == image.tobytes()
    noisy = synthetic.photograph(image, synthetic.Camera(noise=6.0), rng)
    assert noisy.tobytes() != image.tobytes()


# --------------------------------------------------------------------------------------------------- splits


def test_train_test_and_validation_are_disjoint_by_family(small_train):
    test, validation = generate_examples(SMALL, "test"), generate_examples(SMALL, "val")
    assert len(validation) == SMALL.num_val_families * SMALL.family_size
    for one, other in [(small_train, test), (small_train, validation), (test, validation)]:
        assert {e.family_id for e in one}.isdisjoint({e.family_id for e in other})
        assert {e.caption for e in one}.isdisjoint({e.caption for e in other})
    assert all(e.example_id.startswith("test_") for e in test)
    assert all(e.example_id.startswith("qual_dev_") for e in validation)  # DOCCI's validation split


# -------------------------------------------------------------------------------------------------- on disk


def read_jsonlines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_written_benchmark_uses_docci_format(tmp_path, small_train):
    root = write_synthetic_benchmark(tmp_path / "bench", SMALL)
    assert root == tmp_path / "bench"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench"]  # no staging folder left behind

    rows = read_jsonlines(root / "docci_descriptions.jsonlines")
    expected = (SMALL.num_train_families + SMALL.num_test_families + SMALL.num_val_families) * SMALL.family_size
    assert len(rows) == expected == len(list((root / "images").glob("*.png")))
    for row in rows:
        assert set(row) == {"example_id", "split", "image_file", "description"}
        assert row["split"] in ("train", "test", "qual_dev") and row["example_id"].startswith(row["split"] + "_")
        assert row["image_file"] == row["example_id"] + ".png"
    train_rows = [r for r in rows if r["split"] == "train"]
    assert [r["description"] for r in train_rows] == [e.caption for e in small_train]

    metadata = read_jsonlines(root / "synthetic_metadata.jsonlines")
    assert [m["example_id"] for m in metadata] == [r["example_id"] for r in rows]
    assert metadata[0]["objects"] == small_train[0].objects
    assert json.loads((root / "config.json").read_text())["config"]["seed"] == SMALL.seed

    pairs = load_docci_pairs(root, "test")  # the project's DOCCI reader accepts it unchanged
    assert len(pairs) == SMALL.num_test_families * SMALL.family_size
    assert pairs[0].image_path.name == "test_00000.png"
    validation = load_docci_pairs(root, "val")  # DOCCI's qual_dev rows
    assert [p.caption for p in validation] == [e.caption for e in generate_examples(SMALL, "val")]


def test_write_refuses_a_non_empty_root(tmp_path):
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "something").write_text("x")
    with pytest.raises(FileExistsError):
        write_synthetic_benchmark(tmp_path / "bench", SMALL)


def test_ensure_reuses_a_matching_benchmark_and_rejects_a_different_one(monkeypatch, tmp_path):
    monkeypatch.setenv("HNCLIP_CACHE", str(tmp_path))
    root = ensure_synthetic_benchmark(config=SMALL)
    assert root.parent == tmp_path / "synthetic"
    stamp = (root / "config.json").stat().st_mtime_ns

    monkeypatch.setattr(synthetic, "write_synthetic_benchmark", lambda *args: pytest.fail("regenerated"))
    assert ensure_synthetic_benchmark(config=SMALL) == root
    assert ensure_synthetic_benchmark(root, SMALL) == root
    assert (root / "config.json").stat().st_mtime_ns == stamp

    other = SyntheticConfig(**{**SMALL.__dict__, "seed": 7})
    with pytest.raises(ValueError, match="different configuration"):
        ensure_synthetic_benchmark(root, other)
    assert synthetic.default_root(other) != root  # root=None keeps one folder per config


# --------------------------------------------------------------------------------------------- default size


def test_default_config_generates_and_writes_quickly(tmp_path):
    """Generates the full default benchmark once; prints the time (run with -s to see it)."""
    config = SyntheticConfig()
    start = time.perf_counter()
    root = write_synthetic_benchmark(tmp_path / "default", config)
    seconds = time.perf_counter() - start
    rows = read_jsonlines(root / "docci_descriptions.jsonlines")
    train = [r for r in rows if r["split"] == "train"]
    validation = [r for r in rows if r["split"] == "qual_dev"]
    test = len(rows) - len(train) - len(validation)
    images = f"{len(train)} train + {test} test + {len(validation)} validation images"
    print(f"\ndefault synthetic benchmark: {images} generated and written in {seconds:.2f} s")
    assert len(train) == 2000 and len(validation) == 1000 and len(rows) == 4000
    assert 80 <= caption_stats([r["description"] for r in rows])["mean"] <= 130


def test_synthetic_alt_is_the_same_scenes_in_the_other_voice(tmp_path):
    from hnclip_core.data import DatasetLayoutError, load_pairs
    from hnclip_core.toy import register_datasets

    register_datasets()
    config = SyntheticConfig(seed=5, num_train_families=2, num_test_families=2, num_val_families=2, image_size=32)
    dense = write_synthetic_benchmark(tmp_path / "dense", config)
    alt = write_synthetic_benchmark(tmp_path / "alt", dataclasses.replace(config, caption_style="dense-alt"))
    dense_pairs, alt_pairs = load_pairs("synthetic", dense, "test"), load_pairs("synthetic-alt", alt, "test")
    assert len(dense_pairs) == len(alt_pairs) == 8
    for a, b in zip(dense_pairs, alt_pairs, strict=True):
        assert a.caption != b.caption
        assert a.load_image().tobytes() == b.load_image().tobytes()
    with pytest.raises(DatasetLayoutError, match="synthetic benchmark with 'dense' captions, not 'dense-alt'"):
        load_pairs("synthetic-alt", dense, "test")
    with pytest.raises(DatasetLayoutError, match="synthetic benchmark with 'dense-alt' captions, not 'dense'"):
        load_pairs("synthetic", alt, "test")
