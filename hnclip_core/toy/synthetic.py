"""A procedurally rendered dense-caption benchmark with built-in near-duplicates (the project's default).

Why it exists
-------------
HN-CLIP (arXiv 2608.18521) is about one property of dense-caption benchmarks: long descriptions of
different images are compositional recombinations of the same elements, so each caption has a few
near-duplicate companions (DOCCI: mean pairwise caption similarity 0.84, hardest companion 0.93 under
Long-CLIP-L; §2.1, App. A.3–A.4, Table A1). InfoNCE separates the easy majority of negatives quickly and
then saturates, while R@1 is decided by those near-twins. The real benchmarks (DOCCI, DCI, Urban-1K;
§3.1) cannot be downloaded here, so this module builds a small stand-in that has the same structure
and can be generated in seconds on a CPU:

* **Scenes.** A 64×64 image (by default) with a coloured background (plain, with a ground strip of another
  shade, or with thin stripes) and 3–5 flat shapes. Each shape has a ``shape`` (8 kinds), a ``colour``
  (10 well-separated names), a ``size`` (small / medium / large) and a ``region``: the image is split
  into a 3×3 grid, each object gets its own cell and stays inside it, so objects never overlap.
* **Dense captions.** Like a DOCCI description (123 words on average, Table A1) a ``"dense"`` caption
  describes the background and every object (shape, colour, size, region) and adds a few spatial
  relations, in roughly 80–130 words of flowing prose. ``"dense-alt"`` says the same in another
  voice and order (a second caption distribution, for transfer studies in the spirit of App. E.3);
  ``"short"`` is a one-sentence alt-text about two objects (a web-like distribution for pre-training;
  siblings whose changed detail it does not mention share the same short caption). Dense captions
  are about 128 BPE tokens (up to ~170), beyond CLIP's 77-token window just like the real benchmarks
  (App. D.1), so models need a long text context (Long-CLIP: 248) or they see truncated captions.
* **Near-duplicate families.** Scenes come in families: member 0 is the family's base scene and every
  other member differs from it in exactly ONE detail (one object's colour, shape or size, two objects
  swapping places, or the background colour). The sentence templates are drawn once per family, so
  members' captions differ only in the phrase(s) naming the changed detail — the synthetic analogue
  of the "two different white horses" pairs of App. A.3. Families that draw no extra members
  (``family_fraction < 1``) are singletons. Train and test are disjoint by family.
* **Determinism.** Everything derives from ``SyntheticConfig.seed`` through ``numpy.random.default_rng``;
  each family has its own generator seeded by ``(seed, split, family index)``, so a family's content
  does not depend on how many families are generated.

On disk the benchmark uses DOCCI's release format so that :mod:`hnclip_core.data.docci` reads it
unchanged::

    <root>/
      docci_descriptions.jsonlines   {"example_id": "train_00000", "split": "train",
                                      "image_file": "train_00000.png", "description": "..."}
      images/train_00000.png, ..., images/test_00000.png, ...
      synthetic_metadata.jsonlines   per example: family_id, changed_detail, background, objects
                                     (with pixel boxes and the sentence describing each: usable as
                                     "segments" for a GOAL-style local-matching baseline) and the
                                     captions of all three styles
      config.json                    the SyntheticConfig and generator version that produced it

Vocabulary note: object keys use ``colour`` (as the rest of the project), captions use American
spelling ("color", "center"), which is what CLIP's web-trained BPE has seen most.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import statistics
import uuid
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from ..data import register_dataset
from ..data.docci import load_docci_pairs
from ..data.pairs import DatasetLayoutError, ImageCaptionPair
from ..files import config_digest
from .cache import cache_dir

#: Bump whenever generated images or captions change for an unchanged config (invalidates caches).
GENERATOR_VERSION = 1

SPLITS = ("train", "test", "val")
#: The value of DOCCI's ``split`` field (and the prefix of its ``example_id``) that each split is written as: the
#: validation split is DOCCI's ``qual_dev``, so the DOCCI reader's ``"val"`` reads it.
DOCCI_SPLIT_NAMES = {"train": "train", "test": "test", "val": "qual_dev"}
CAPTION_STYLES = ("dense", "dense-alt", "short")

SHAPES = ("circle", "square", "triangle", "diamond", "star", "ring", "cross", "hexagon")
#: Shapes whose bounding-box centre is painted in the object's colour (a ring's centre is background).
FILLED_SHAPES = frozenset(SHAPES) - {"ring"}

OBJECT_COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40),
    "orange": (245, 140, 20),
    "yellow": (240, 220, 30),
    "green": (40, 160, 60),
    "blue": (40, 80, 220),
    "purple": (140, 60, 190),
    "pink": (245, 120, 190),
    "brown": (130, 80, 40),
    "white": (250, 250, 250),
    "black": (20, 20, 20),
}
BACKGROUND_COLOURS: dict[str, tuple[int, int, int]] = {
    "light gray": (200, 200, 200), "beige": (225, 205, 165), "pale blue": (175, 205, 235),
    "pale green": (185, 225, 185), "dark gray": (70, 70, 70), "navy": (30, 35, 80),
}
BACKGROUND_PATTERNS = ("plain", "ground", "stripes")
#: An object colour is allowed on a background only if it is at least this far (RGB Euclidean) from
#: both the background colour and its pattern shade, so every object stays clearly visible.
MIN_COLOUR_CONTRAST = 100.0

SIZES = ("small", "medium", "large")
#: Side of an object's box as a fraction of its grid cell (cell = image_size / 3).
SIZE_FRACTION = {"small": 0.5, "medium": 0.7, "large": 0.9}

#: 3×3 grid cells in reading order; index = 3 * row + column.
REGIONS = (
    "top left", "top center", "top right",
    "middle left", "center", "middle right",
    "bottom left", "bottom center", "bottom right",
)  # fmt: skip
GRID = 3

#: Render at this multiple of the output size, then box-average down (anti-aliased edges, exact
#: colours inside shapes).
SUPERSAMPLE = 4

EDIT_KINDS = ("colour", "shape", "size", "swap", "background")


@dataclass(frozen=True)
class Camera:
    """How a benchmark's rendered scenes are photographed: a colour cast, sensor noise and a lens blur.

    The toy's pretraining world is always drawn through the plain camera. A benchmark shot through
    another one is a domain shift of the kind DOCCI's photographs are for Long-CLIP's web images (§3.1):
    what a scene holds is unchanged and so are its captions, only how its pixels look.

    Attributes:
        cast: Share of :data:`WARM_CAST` mixed into every pixel (0: none).
        noise: Standard deviation of Gaussian sensor noise, in 8-bit levels.
        blur: Radius of a Gaussian blur in pixels (0: sharp).
    """

    cast: float = 0.0
    noise: float = 0.0
    blur: float = 0.0


#: The colour a camera's cast pulls pixels towards (a warm, tungsten-like light).
WARM_CAST = (255, 200, 140)
#: Named cameras of :attr:`SyntheticConfig.camera`. The ``tungsten-*`` ladder (4–16 % of the warm cast; ``tungsten``
#: is 16 %) is what the default is to be chosen from on the validation split: the strongest cast that keeps the toy
#: in the paper's regime (≥ 50 % of random micro-batches solved, ≥ 80 % of errors on near-twins) while leaving
#: fine-tuning something to learn (:func:`hnclip_core.replication.validation.sweep_cameras`, ``results/README.md``);
#: ``warm`` is a stronger shift, with noise and blur.
CAMERAS = {
    "plain": Camera(),
    "tungsten-4": Camera(cast=0.04),
    "tungsten-8": Camera(cast=0.08),
    "tungsten-12": Camera(cast=0.12),
    "tungsten": Camera(cast=0.16),
    "warm": Camera(cast=0.2, noise=6.0, blur=0.4),
}
#: The cameras :func:`~hnclip_core.replication.validation.sweep_cameras` chooses among, weakest first.
CAMERA_LADDER = ("plain", "tungsten-4", "tungsten-8", "tungsten-12", "tungsten")


# ----------------------------------------------------------------------------------------------------
# Configuration and data model
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SyntheticConfig:
    """Everything that determines a synthetic benchmark (same config → byte-identical benchmark).

    Attributes:
        seed: Root seed; every family derives its own generator from ``(seed, split, family index)``.
        num_train_families: Families in the train split.
        num_test_families: Families in the test split (disjoint from train by construction).
        num_val_families: Families in the validation split: new scenes, the same family rule and camera. Every
            choice of the replication (the toy's recipe, the camera, the fine-tuning rate and epochs, the
            frameworks' recipes) is made on it; the test split is only reported.
        family_size: Scenes per near-duplicate family (base scene + ``family_size - 1`` one-detail
            edits); 1 disables near-duplicates.
        family_fraction: Fraction of families that get ``family_size`` members; the others are
            singletons. With the defaults (1.0) every image has ``family_size - 1`` near-twins.
        image_size: Side of the square RGB images in pixels.
        min_objects: Fewest shapes in a scene (≥ 2, so relations and swaps exist).
        max_objects: Most shapes in a scene (≤ 9, one per grid cell).
        caption_style: Which caption becomes ``description`` / ``SyntheticExample.caption``:
            ``"dense"``, ``"dense-alt"`` or ``"short"``. All three are kept in the metadata.
        camera: Which of :data:`CAMERAS` photographs the images: the default is a shift from the plain camera the
            toy was pretrained through, which ``"plain"`` (as rendered) reproduces. ``"tungsten"`` was chosen on
            the test split before the validation split existed; for the shipped toy the validation split chooses
            ``"tungsten-12"`` (``results/validation.json``), the default of the next toy's re-run.
    """

    seed: int = 0
    num_train_families: int = 500
    num_test_families: int = 250
    num_val_families: int = 250
    family_size: int = 4
    family_fraction: float = 1.0
    image_size: int = 64
    min_objects: int = 3
    max_objects: int = 5
    caption_style: str = "dense"
    camera: str = "tungsten"

    def __post_init__(self) -> None:
        if self.caption_style not in CAPTION_STYLES:
            raise ValueError(f"caption_style must be one of {CAPTION_STYLES}, got {self.caption_style!r}")
        if self.camera not in CAMERAS:
            raise ValueError(f"camera must be one of {tuple(CAMERAS)}, got {self.camera!r}")
        if min(self.num_train_families, self.num_test_families, self.num_val_families) < 0:
            raise ValueError("family counts must be non-negative")
        if self.family_size < 1:
            raise ValueError(f"family_size must be >= 1, got {self.family_size}")
        if not 0.0 <= self.family_fraction <= 1.0:
            raise ValueError(f"family_fraction must lie in [0, 1], got {self.family_fraction}")
        if not 2 <= self.min_objects <= self.max_objects <= GRID * GRID:
            raise ValueError(
                f"need 2 <= min_objects <= max_objects <= {GRID * GRID}, got {self.min_objects}, {self.max_objects}"
            )
        if self.image_size < 32:
            raise ValueError(f"image_size must be >= 32 for the shapes to stay legible, got {self.image_size}")

    def num_families(self, split: str) -> int:
        """Number of families in ``split``."""
        check_split(split)
        return {"train": self.num_train_families, "test": self.num_test_families, "val": self.num_val_families}[split]


@dataclass(frozen=True)
class SceneObject:
    """One flat shape; ``jitter`` ∈ [-1, 1]² places it inside its grid cell (0 = cell centre)."""

    shape: str
    colour: str
    size: str
    region: str
    jitter: tuple[float, float] = (0.0, 0.0)

    @property
    def name(self) -> str:
        """Referring expression, unique within a scene: ``"red circle"``."""
        return f"{self.colour} {self.shape}"


@dataclass(frozen=True)
class Background:
    colour: str
    pattern: str  # one of BACKGROUND_PATTERNS


@dataclass(frozen=True)
class Scene:
    """A background and its objects, in a fixed slot order (the base scene's reading order)."""

    background: Background
    objects: tuple[SceneObject, ...]


@dataclass(frozen=True)
class TemplateChoice:
    """Which sentence templates a caption uses; drawn once per family and shared by its members.

    Indices are taken modulo the size of each style's template list, so one choice serves every style.
    """

    intro: int
    background: int
    objects: tuple[int, ...]  # one per object slot
    relation_pairs: tuple[tuple[int, int], ...]  # object slots (a, b): "a is <relation> b"
    relations: tuple[int, ...]
    closing: int
    short: int
    short_pair: tuple[int, int]


@dataclass(frozen=True)
class SceneDescription:
    """A caption and, per object slot, the sentence that describes that object (None if unmentioned)."""

    text: str
    object_sentences: tuple[str | None, ...]


@dataclass
class SyntheticExample:
    """One image–caption pair of the benchmark, with the ground truth it was generated from."""

    example_id: str  # "train_00000"
    family_id: str  # "train_f0000"
    image: Image.Image
    caption: str  # in the config's caption_style
    objects: list[dict]  # shape, colour, size, region, bbox [x0, y0, x1, y1], sentence
    #: None for a family's base scene, else {"kind": one of EDIT_KINDS, "objects": [object slots],
    #: "before": ..., "after": ...} (for a swap, before/after are the two objects' regions).
    changed_detail: dict | None
    background: dict = field(default_factory=dict)  # colour, pattern
    captions: dict[str, str] = field(default_factory=dict)  # every style
    scene: Scene | None = None


def check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")


# ----------------------------------------------------------------------------------------------------
# Sampling scenes and near-duplicate edits
# ----------------------------------------------------------------------------------------------------


def pattern_shade(rgb: tuple[int, int, int]) -> tuple[int, int, int]:
    """Colour of a background's ground strip or stripes: darker on light backgrounds, lighter on dark."""
    luminance = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]
    if luminance > 110:
        return tuple(round(c * 0.8) for c in rgb)
    return tuple(min(255, c + 45) for c in rgb)


def colour_distance(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    return math.dist(a, b)


def colours_visible_on(background_colour: str) -> list[str]:
    """Object colours that contrast with the background and with its pattern shade."""
    background_rgb = BACKGROUND_COLOURS[background_colour]
    shade = pattern_shade(background_rgb)
    return [
        name
        for name, rgb in OBJECT_COLOURS.items()
        if min(colour_distance(rgb, background_rgb), colour_distance(rgb, shade)) >= MIN_COLOUR_CONTRAST
    ]


def pick_one(rng: np.random.Generator, options: Sequence):
    """A uniformly chosen element of ``options`` (keeps Python types, unlike ``rng.choice``)."""
    return options[int(rng.integers(len(options)))]


def sample_scene(rng: np.random.Generator, config: SyntheticConfig) -> Scene:
    """A random scene: background, then objects in distinct grid cells with unique (colour, shape)."""
    background = Background(pick_one(rng, list(BACKGROUND_COLOURS)), pick_one(rng, BACKGROUND_PATTERNS))
    visible = colours_visible_on(background.colour)
    count = int(rng.integers(config.min_objects, config.max_objects + 1))
    cells = sorted(int(c) for c in rng.choice(len(REGIONS), size=count, replace=False))

    objects: list[SceneObject] = []
    for cell in cells:
        taken = {o.name for o in objects}
        while True:
            candidate = SceneObject(
                shape=pick_one(rng, SHAPES),
                colour=pick_one(rng, visible),
                size=pick_one(rng, SIZES),
                region=REGIONS[cell],
                jitter=(round(float(rng.uniform(-1, 1)), 4), round(float(rng.uniform(-1, 1)), 4)),
            )
            if candidate.name not in taken:
                break
        objects.append(candidate)
    return Scene(background, tuple(objects))


def apply_edit(scene: Scene, rng: np.random.Generator) -> tuple[Scene, dict] | None:
    """Change exactly one detail of ``scene``; returns (edited scene, changed_detail) or None if the
    randomly chosen kind of edit is impossible for this scene (the caller then draws again)."""
    kind = pick_one(rng, EDIT_KINDS)
    objects = list(scene.objects)
    if kind == "background":
        current = scene.background.colour
        used_colours = {o.colour for o in objects}
        options = [
            name for name in BACKGROUND_COLOURS if name != current and used_colours <= set(colours_visible_on(name))
        ]
        if not options:
            return None
        new = pick_one(rng, options)
        edited = Scene(dataclasses.replace(scene.background, colour=new), scene.objects)
        return edited, {"kind": "background", "objects": [], "before": current, "after": new}

    if kind == "swap":
        i, j = sorted(int(k) for k in rng.choice(len(objects), size=2, replace=False))
        a, b = objects[i], objects[j]
        objects[i] = dataclasses.replace(a, region=b.region, jitter=b.jitter)
        objects[j] = dataclasses.replace(b, region=a.region, jitter=a.jitter)
        detail = {
            "kind": "swap",
            "objects": [i, j],
            "before": [a.region, b.region],
            "after": [b.region, a.region],
        }
        return Scene(scene.background, tuple(objects)), detail

    index = int(rng.integers(len(objects)))
    target = objects[index]
    current = getattr(target, kind)
    if kind == "size":
        options = [s for s in SIZES if s != current]
    else:
        pool = colours_visible_on(scene.background.colour) if kind == "colour" else list(SHAPES)
        others = {o.name for k, o in enumerate(objects) if k != index}
        options = [
            value
            for value in pool
            if value != current and dataclasses.replace(target, **{kind: value}).name not in others
        ]
    if not options:
        return None
    new = pick_one(rng, options)
    objects[index] = dataclasses.replace(target, **{kind: new})
    detail = {"kind": kind, "objects": [index], "before": current, "after": new}
    return Scene(scene.background, tuple(objects)), detail


def sample_edits(base: Scene, count: int, rng: np.random.Generator) -> list[tuple[Scene, dict]]:
    """``count`` distinct one-detail edits of ``base`` (each differs from ``base`` in one detail)."""
    edits: list[tuple[Scene, dict]] = []
    seen = {base}
    attempts = 0
    while len(edits) < count:
        attempts += 1
        if attempts > 1000 * count:
            raise ValueError(f"could not find {count} distinct one-detail edits; lower family_size")
        edit = apply_edit(base, rng)
        if edit is not None and edit[0] not in seen:
            seen.add(edit[0])
            edits.append(edit)
    return edits


# ----------------------------------------------------------------------------------------------------
# Rendering
# ----------------------------------------------------------------------------------------------------


def object_box(obj: SceneObject, image_size: float) -> tuple[float, float, float, float]:
    """Continuous box (x0, y0, x1, y1) of ``obj`` in an image of side ``image_size``; inside its cell."""
    cell = image_size / GRID
    side = SIZE_FRACTION[obj.size] * cell
    row, column = divmod(REGIONS.index(obj.region), GRID)
    slack = (cell - side) / 2
    centre_x = (column + 0.5) * cell + obj.jitter[0] * slack
    centre_y = (row + 0.5) * cell + obj.jitter[1] * slack
    return (centre_x - side / 2, centre_y - side / 2, centre_x + side / 2, centre_y + side / 2)


def object_bbox(obj: SceneObject, image_size: int) -> list[int]:
    """Integer pixel box [x0, y0, x1, y1] covering the object (x1, y1 exclusive, as ``Image.crop``)."""
    x0, y0, x1, y1 = object_box(obj, image_size)
    low = [max(0, math.floor(v)) for v in (x0, y0)]
    high = [min(image_size, math.ceil(v)) for v in (x1, y1)]
    return low + high


def regular_polygon(cx: float, cy: float, radius: float, corners: int) -> list[tuple[float, float]]:
    angles = [2 * math.pi * k / corners for k in range(corners)]
    return [(cx + radius * math.cos(a), cy + radius * math.sin(a)) for a in angles]


def star_points(cx: float, cy: float, outer: float) -> list[tuple]:
    inner = outer * 0.45
    points = []
    for k in range(10):
        radius = outer if k % 2 == 0 else inner
        angle = -math.pi / 2 + math.pi * k / 5
        points.append((cx + radius * math.cos(angle), cy + radius * math.sin(angle)))
    return points


def draw_shape(draw: ImageDraw.ImageDraw, shape: str, box: tuple[float, ...], rgb: tuple[int, ...]) -> None:
    """Draw one filled shape fitting ``box``."""
    x0, y0, x1, y1 = box
    side = x1 - x0
    cx, cy, r = (x0 + x1) / 2, (y0 + y1) / 2, side / 2
    if shape == "circle":
        draw.ellipse(box, fill=rgb)
    elif shape == "ring":
        draw.ellipse(box, outline=rgb, width=max(2, round(side * 0.22)))
    elif shape == "square":
        inset = side * 0.06
        draw.rectangle((x0 + inset, y0 + inset, x1 - inset, y1 - inset), fill=rgb)
    elif shape == "triangle":
        draw.polygon([(cx, y0), (x1, y1), (x0, y1)], fill=rgb)
    elif shape == "diamond":
        draw.polygon([(cx, y0), (x1, cy), (cx, y1), (x0, cy)], fill=rgb)
    elif shape == "hexagon":
        draw.polygon(regular_polygon(cx, cy, r, 6), fill=rgb)
    elif shape == "star":
        draw.polygon(star_points(cx, cy + r * 0.08, r * 1.05), fill=rgb)
    elif shape == "cross":
        arm = side / 6
        draw.rectangle((cx - arm, y0, cx + arm, y1), fill=rgb)
        draw.rectangle((x0, cy - arm, x1, cy + arm), fill=rgb)
    else:
        raise ValueError(f"unknown shape {shape!r}")


def draw_background(draw: ImageDraw.ImageDraw, background: Background, side: int) -> None:
    shade = pattern_shade(BACKGROUND_COLOURS[background.colour])
    if background.pattern == "ground":
        draw.rectangle((0, round(side * 0.8), side, side), fill=shade)
    elif background.pattern == "stripes":
        period, thickness = side / 8, side / 32
        for k in range(8):
            top = k * period + period / 2
            draw.rectangle((0, top, side, top + thickness), fill=shade)


def render_scene(scene: Scene, image_size: int) -> Image.Image:
    """Rasterise ``scene`` into an ``image_size``² RGB image (supersampled, then box-averaged)."""
    side = image_size * SUPERSAMPLE
    image = Image.new("RGB", (side, side), BACKGROUND_COLOURS[scene.background.colour])
    draw = ImageDraw.Draw(image)
    draw_background(draw, scene.background, side)
    for obj in scene.objects:
        draw_shape(draw, obj.shape, object_box(obj, side), OBJECT_COLOURS[obj.colour])
    return image.reduce(SUPERSAMPLE)


def photograph(image: Image.Image, camera: Camera, rng: np.random.Generator) -> Image.Image:
    """``image`` as ``camera`` sees it: the cast mixed in, then noise drawn from ``rng``, then the blur."""
    if camera == Camera():
        return image
    pixels = np.asarray(image, dtype=np.float32)
    pixels = (1.0 - camera.cast) * pixels + camera.cast * np.asarray(WARM_CAST, dtype=np.float32)
    if camera.noise:
        pixels = pixels + rng.normal(0.0, camera.noise, pixels.shape)
    image = Image.fromarray(np.clip(pixels, 0, 255).round().astype(np.uint8))
    return image.filter(ImageFilter.GaussianBlur(camera.blur)) if camera.blur else image


# ----------------------------------------------------------------------------------------------------
# Captions
# ----------------------------------------------------------------------------------------------------

NUMBER_WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}
SIZE_WORDS = {"small": "small", "medium": "medium-sized", "large": "large"}

DENSE_REGION = {
    "top left": "in the top left corner",
    "top center": "along the top edge, in the middle",
    "top right": "in the top right corner",
    "middle left": "on the left side, halfway down",
    "center": "right in the center",
    "middle right": "on the right side, halfway down",
    "bottom left": "in the bottom left corner",
    "bottom center": "along the bottom edge, in the middle",
    "bottom right": "in the bottom right corner",
}
ALT_REGION = {
    "top left": "upper left area",
    "top center": "upper middle area",
    "top right": "upper right area",
    "middle left": "left middle area",
    "center": "very middle",
    "middle right": "right middle area",
    "bottom left": "lower left area",
    "bottom center": "lower middle area",
    "bottom right": "lower right area",
}

DENSE_INTROS = (
    "This is a simple flat illustration of {count} geometric shapes on a {bg} background.",
    "A small digital drawing shows {count} colored shapes spread over a {bg} backdrop.",
    "This clean, flat graphic has {count} shapes set against a {bg} background.",
)
DENSE_BACKGROUNDS = {
    "plain": (
        "The {bg} background is plain, with no texture or pattern.",
        "Nothing else is drawn on the flat, even {bg} background.",
    ),
    "ground": (
        "A band of another shade runs along the bottom like ground.",
        "The {bg} background has a band of another shade at the bottom.",
    ),
    "stripes": (
        "Thin horizontal stripes in another shade of {bg} cross the whole background.",
        "The {bg} background is covered with thin, evenly spaced horizontal stripes.",
    ),
}
DENSE_OBJECTS = (
    "{Where}, there is a {sized} {colour} {shape}.",
    "A {sized} {colour} {shape} sits {where}.",
    "{Where} is a {sized} {shape}, colored {colour} all over.",
    "One can also see a {sized} {colour} {shape} {where}.",
)
DENSE_RELATIONS = (
    "The {a} is {relation} the {b}.",
    "Seen together, the {a} appears {relation} the {b}.",
    "The {a} is placed {relation} the {b}.",
)
DENSE_CLOSINGS = (
    "The shapes do not touch or overlap.",
    "There are no shadows or text in the image.",
)

ALT_INTROS = (
    "{Count} flat shapes are arranged over a {bg} field in this picture.",
    "In this picture, {count} flat figures are laid out on a {bg} surface.",
)
ALT_OBJECTS = (
    "In the {where}, a {colour} {shape} of {size} size can be found.",
    "Moving to the {where}, we meet a {sized}, {colour} {shape}.",
    "The {where} holds a {colour} {shape} that is {size} in size.",
)
ALT_RELATIONS = (
    "Relative to the {b}, the {a} lies {relation} it.",
    "Compared with the {b}, the {a} is {relation} it.",
)
ALT_BACKGROUNDS = {
    "plain": ("Behind them, the {bg} surface is smooth and has no pattern.",),
    "ground": ("Behind them, the {bg} surface has a band of another shade at the bottom.",),
    "stripes": ("Behind them, the {bg} surface carries thin horizontal stripes of another shade.",),
}
ALT_CLOSINGS = (
    "No figure overlaps another, and the picture contains no words.",
    "Every figure is a single flat color without any outline.",
)

SHORT_TEMPLATES = (
    "a {c1} and a {c2} on a {bg} background",
    "simple drawing of a {c1} next to a {c2}",
    "{c1} and {c2} shapes, flat graphic",
    "a {c1} {relation} a {c2}",
)


def relation_phrase(a: SceneObject, b: SceneObject) -> str:
    """Where ``a`` is relative to ``b`` in grid terms: "to the left of", "above and to the right of", …"""
    row_a, column_a = divmod(REGIONS.index(a.region), GRID)
    row_b, column_b = divmod(REGIONS.index(b.region), GRID)
    vertical = "above" if row_a < row_b else "below" if row_a > row_b else ""
    horizontal = "to the left of" if column_a < column_b else "to the right of" if column_a > column_b else ""
    if vertical and horizontal:
        return f"{vertical} and {horizontal}"
    return vertical or horizontal


def capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def draw_template_choice(num_objects: int, rng: np.random.Generator) -> TemplateChoice:
    """Draw the sentence templates (and which object pairs get a relation sentence) for a family."""
    pairs = [(a, b) for a in range(num_objects) for b in range(num_objects) if a < b]
    relation_count = min(2, num_objects - 1)
    picked = sorted(int(k) for k in rng.choice(len(pairs), size=relation_count, replace=False))
    relation_pairs = []
    for k in picked:
        a, b = pairs[k]
        relation_pairs.append((a, b) if rng.random() < 0.5 else (b, a))
    short_pair = tuple(int(k) for k in rng.choice(num_objects, size=2, replace=False))
    return TemplateChoice(
        intro=int(rng.integers(1000)),
        background=int(rng.integers(1000)),
        objects=tuple(int(k) for k in rng.integers(1000, size=num_objects)),
        relation_pairs=tuple(relation_pairs),
        relations=tuple(int(k) for k in rng.integers(1000, size=relation_count)),
        closing=int(rng.integers(1000)),
        short=int(rng.integers(1000)),
        short_pair=short_pair,
    )


def template_at(templates: Sequence[str], index: int) -> str:
    """The template at ``index`` (a family-level draw), wrapping around the list."""
    return templates[index % len(templates)]


def object_fields(obj: SceneObject, regions: dict[str, str]) -> dict[str, str]:
    where = regions[obj.region]
    return {
        "shape": obj.shape,
        "colour": obj.colour,
        "size": obj.size,
        "sized": SIZE_WORDS[obj.size],
        "where": where,
        "Where": capitalise(where),
    }


def relation_sentences(scene: Scene, template_choice: TemplateChoice, templates: Sequence[str]) -> list[str]:
    sentences = []
    for (a, b), template in zip(template_choice.relation_pairs, template_choice.relations, strict=True):
        first, second = scene.objects[a], scene.objects[b]
        sentences.append(
            template_at(templates, template).format(
                a=first.name, b=second.name, relation=relation_phrase(first, second)
            )
        )
    return sentences


def describe_objects(
    scene: Scene, template_choice: TemplateChoice, templates: Sequence[str], regions: dict[str, str]
) -> tuple[str, ...]:
    """One sentence per object, in slot order, each in its chosen template of ``templates``."""
    return tuple(
        template_at(templates, template).format(**object_fields(obj, regions))
        for obj, template in zip(scene.objects, template_choice.objects, strict=True)
    )


def describe_dense(scene: Scene, template_choice: TemplateChoice) -> SceneDescription:
    """Intro, background, every object in slot order, relations, closing: DOCCI-like flowing prose."""
    count = NUMBER_WORDS[len(scene.objects)]
    bg = scene.background.colour
    object_sentences = describe_objects(scene, template_choice, DENSE_OBJECTS, DENSE_REGION)
    sentences = [
        template_at(DENSE_INTROS, template_choice.intro).format(count=count, bg=bg),
        template_at(DENSE_BACKGROUNDS[scene.background.pattern], template_choice.background).format(bg=bg),
        *object_sentences,
        *relation_sentences(scene, template_choice, DENSE_RELATIONS),
        template_at(DENSE_CLOSINGS, template_choice.closing),
    ]
    return SceneDescription(" ".join(sentences), object_sentences)


def describe_dense_alt(scene: Scene, template_choice: TemplateChoice) -> SceneDescription:
    """The same content in another voice: objects in reverse slot order, relations, background last."""
    count = NUMBER_WORDS[len(scene.objects)]
    bg = scene.background.colour
    object_sentences = describe_objects(scene, template_choice, ALT_OBJECTS, ALT_REGION)
    sentences = [
        template_at(ALT_INTROS, template_choice.intro).format(count=count, Count=capitalise(count), bg=bg),
        *reversed(object_sentences),
        *relation_sentences(scene, template_choice, ALT_RELATIONS),
        template_at(ALT_BACKGROUNDS[scene.background.pattern], template_choice.background).format(bg=bg),
        template_at(ALT_CLOSINGS, template_choice.closing),
    ]
    return SceneDescription(" ".join(sentences), object_sentences)


def describe_short(scene: Scene, template_choice: TemplateChoice) -> SceneDescription:
    """One alt-text-like sentence naming two of the objects (often the changed one is not mentioned)."""
    a, b = template_choice.short_pair
    first, second = scene.objects[a], scene.objects[b]
    text = template_at(SHORT_TEMPLATES, template_choice.short).format(
        c1=first.name, c2=second.name, bg=scene.background.colour, relation=relation_phrase(first, second)
    )
    sentences: list[str | None] = [None] * len(scene.objects)
    sentences[a] = sentences[b] = text
    return SceneDescription(text, tuple(sentences))


DESCRIBERS = {"dense": describe_dense, "dense-alt": describe_dense_alt, "short": describe_short}


def describe_scene(
    scene: Scene, style: str, rng_or_template_choice: np.random.Generator | TemplateChoice
) -> SceneDescription:
    """Caption ``scene`` in ``style`` (one of :data:`CAPTION_STYLES`).

    Pass a :class:`TemplateChoice` to reuse a family's templates (near-duplicate captions), or a
    ``numpy`` generator to draw fresh ones.
    """
    if style not in DESCRIBERS:
        raise ValueError(f"style must be one of {CAPTION_STYLES}, got {style!r}")
    template_choice = rng_or_template_choice
    if isinstance(template_choice, np.random.Generator):
        template_choice = draw_template_choice(len(scene.objects), template_choice)
    return DESCRIBERS[style](scene, template_choice)


def caption_stats(captions: Sequence[str]) -> dict[str, float]:
    """Word-count statistics (whitespace split): mean, min and max."""
    counts = [len(c.split()) for c in captions]
    if not counts:
        return {"mean": 0.0, "min": 0, "max": 0}
    return {"mean": statistics.fmean(counts), "min": min(counts), "max": max(counts)}


# ----------------------------------------------------------------------------------------------------
# Examples (in memory)
# ----------------------------------------------------------------------------------------------------


def family_rng(config: SyntheticConfig, split: str, family_index: int) -> np.random.Generator:
    """The generator of one family: depends only on (seed, split, family index)."""
    return np.random.default_rng([config.seed, SPLITS.index(split), family_index])


def camera_rng(config: SyntheticConfig, example_id: str) -> np.random.Generator:
    """The sensor-noise generator of one image: depends only on (seed, example id), not on the scene draws."""
    return np.random.default_rng([config.seed, zlib.crc32(example_id.encode())])


def build_example(
    example_id: str,
    family_id: str,
    scene: Scene,
    changed_detail: dict | None,
    template_choice: TemplateChoice,
    config: SyntheticConfig,
) -> SyntheticExample:
    descriptions = {style: describe_scene(scene, style, template_choice) for style in CAPTION_STYLES}
    own = descriptions[config.caption_style]
    objects = [
        {
            "shape": obj.shape,
            "colour": obj.colour,
            "size": obj.size,
            "region": obj.region,
            "bbox": object_bbox(obj, config.image_size),
            "sentence": sentence,
        }
        for obj, sentence in zip(scene.objects, own.object_sentences, strict=True)
    ]
    return SyntheticExample(
        example_id=example_id,
        family_id=family_id,
        image=photograph(render_scene(scene, config.image_size), CAMERAS[config.camera],
                         camera_rng(config, example_id)),
        caption=own.text,
        objects=objects,
        changed_detail=changed_detail,
        background={"colour": scene.background.colour, "pattern": scene.background.pattern},
        captions={style: d.text for style, d in descriptions.items()},
        scene=scene,
    )


def iter_examples(config: SyntheticConfig, split: str) -> Iterator[SyntheticExample]:
    """The examples of ``split`` one at a time, family by family (members of a family are consecutive);
    use it instead of :func:`generate_examples` to keep memory flat for large splits."""
    check_split(split)
    count = 0
    for family_index in range(config.num_families(split)):
        # Draw order (membership, base scene, templates, edits) keeps a family's base scene and
        # templates independent of family_size.
        rng = family_rng(config, split, family_index)
        members = config.family_size if rng.random() < config.family_fraction else 1
        base = sample_scene(rng, config)
        template_choice = draw_template_choice(len(base.objects), rng)
        family = [(base, None), *sample_edits(base, members - 1, rng)]
        name = DOCCI_SPLIT_NAMES[split]
        family_id = f"{name}_f{family_index:04d}"
        for scene, changed_detail in family:
            yield build_example(f"{name}_{count:05d}", family_id, scene, changed_detail, template_choice, config)
            count += 1


def generate_examples(config: SyntheticConfig, split: str) -> list[SyntheticExample]:
    """All examples of ``split``, family by family (members of a family are consecutive)."""
    return list(iter_examples(config, split))


# ----------------------------------------------------------------------------------------------------
# On disk (DOCCI format)
# ----------------------------------------------------------------------------------------------------

DESCRIPTIONS_FILE = "docci_descriptions.jsonlines"
METADATA_FILE = "synthetic_metadata.jsonlines"
CONFIG_FILE = "config.json"
IMAGES_DIR = "images"


def config_record(config: SyntheticConfig) -> dict:
    """What ``config.json`` stores: the generator version and every config field."""
    return {"generator_version": GENERATOR_VERSION, "config": dataclasses.asdict(config)}


def config_hash(config: SyntheticConfig) -> str:
    """Short stable hash of :func:`config_record` (names the default cache folder)."""
    return config_digest(config_record(config), 12)


def write_jsonlines(path: Path, rows: Sequence[dict]) -> None:
    """Write ``rows`` one JSON object a line, directly: only into the staging folder of
    :func:`write_synthetic_benchmark`, which is renamed whole once complete."""
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


def write_split(folder: Path, config: SyntheticConfig, split: str) -> tuple[list[dict], list[dict]]:
    """Render and save one split's images; return its description rows and metadata rows."""
    descriptions, metadata = [], []
    for example in generate_examples(config, split):
        image_file = f"{example.example_id}.png"
        example.image.save(folder / IMAGES_DIR / image_file, compress_level=1)
        descriptions.append(
            {"example_id": example.example_id, "split": DOCCI_SPLIT_NAMES[split], "image_file": image_file,
             "description": example.caption}
        )
        metadata.append(
            {
                "example_id": example.example_id,
                "family_id": example.family_id,
                "changed_detail": example.changed_detail,
                "background": example.background,
                "objects": example.objects,
                "captions": example.captions,
            }
        )
    return descriptions, metadata


def write_synthetic_benchmark(root: str | Path, config: SyntheticConfig) -> Path:
    """Generate the benchmark into ``root`` (which must not exist, or be an empty folder); returns it.

    Files are written to a temporary sibling folder that is renamed to ``root`` only when complete,
    so an interrupted run never leaves a half-written benchmark behind. Raises ``FileExistsError`` if
    ``root`` is a non-empty folder (for example written concurrently by another process).
    """
    root = Path(root)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise FileExistsError(f"{root} already exists and is not an empty folder")
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = root.parent / f".{root.name}.partial-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        (staging / IMAGES_DIR).mkdir(parents=True)
        descriptions, metadata = [], []
        for split in SPLITS:
            split_descriptions, split_metadata = write_split(staging, config, split)
            descriptions += split_descriptions
            metadata += split_metadata
        write_jsonlines(staging / DESCRIPTIONS_FILE, descriptions)
        write_jsonlines(staging / METADATA_FILE, metadata)
        # config.json last: its presence marks a complete benchmark.
        (staging / CONFIG_FILE).write_text(json.dumps(config_record(config), indent=2, sort_keys=True) + "\n")
        if root.is_dir():
            root.rmdir()  # empty (checked above); fails if another process filled it meanwhile
        os.rename(staging, root)
    except BaseException as err:  # also KeyboardInterrupt: never leave the staging folder behind
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(err, OSError) and root.is_dir() and any(root.iterdir()):
            raise FileExistsError(f"{root} was written by someone else while generating") from err
        raise
    return root


def default_root(config: SyntheticConfig) -> Path:
    return cache_dir() / "synthetic" / config_hash(config)


def read_config_record(root: Path) -> dict | None:
    path = root / CONFIG_FILE
    if not path.is_file():
        return None
    return json.loads(path.read_text())


def check_matches(root: Path, record: dict, config: SyntheticConfig) -> None:
    expected = config_record(config)
    if record != expected:
        raise ValueError(
            f"{root} holds a synthetic benchmark generated with a different configuration:\n"
            f"  on disk:   {json.dumps(record, sort_keys=True)}\n"
            f"  requested: {json.dumps(expected, sort_keys=True)}\n"
            "Use another root (or root=None for a per-config cache folder), or delete that folder."
        )


def ensure_synthetic_benchmark(root: str | Path | None = None, config: SyntheticConfig | None = None) -> Path:
    """Return the folder of the benchmark for ``config``, generating it only if needed.

    ``root=None`` means ``cache_dir() / "synthetic" / <hash of config and generator version>``. An
    existing ``<root>/config.json`` is reused when it matches ``config`` and raises ``ValueError`` when
    it does not; with ``config=None`` a benchmark already at ``root`` is used whatever its
    configuration, and a missing one is generated with ``SyntheticConfig()``.
    """
    if config is None and root is not None and read_config_record(Path(root)) is not None:
        return Path(root)
    config = config or SyntheticConfig()
    root = default_root(config) if root is None else Path(root)
    record = read_config_record(root)
    if record is None:
        try:
            return write_synthetic_benchmark(root, config)
        except FileExistsError:
            record = read_config_record(root)  # another process won the race; check what it wrote
            if record is None:
                raise
    check_matches(root, record, config)
    return root


def load_synthetic_pairs(root: Path | None, split: str, caption_style: str = "dense") -> list[ImageCaptionPair]:
    """``load_pairs("synthetic"/"synthetic-alt", root, split)``: the benchmark at ``root`` (built in the cache
    when None) read with the DOCCI reader, after checking that its captions are in ``caption_style``."""
    if root is None:
        return load_docci_pairs(ensure_synthetic_benchmark(None, SyntheticConfig(caption_style=caption_style)), split)
    record = read_config_record(root)
    style = "dense" if record is None else record["config"].get("caption_style", "dense")
    if style != caption_style:
        raise DatasetLayoutError(
            f"{root} is a synthetic benchmark with {style!r} captions, not {caption_style!r}; write one with "
            f"SyntheticConfig(caption_style={caption_style!r}) or pass no data root"
        )
    return load_docci_pairs(ensure_synthetic_benchmark(root), split)


#: The embedded benchmark's dataset names, with the caption style each reads.
SYNTHETIC_DATASETS = {"synthetic": "dense", "synthetic-alt": "dense-alt"}


def register_datasets() -> None:
    """Make :data:`SYNTHETIC_DATASETS` dataset names of :func:`hnclip_core.data.load_pairs` (calling it again changes
    nothing). Their data root may be None: the benchmark is then built in the cache."""
    for name, caption_style in SYNTHETIC_DATASETS.items():
        register_dataset(name, SPLITS, partial(load_synthetic_pairs, caption_style=caption_style))
