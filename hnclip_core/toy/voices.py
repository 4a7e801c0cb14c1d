"""Many caption voices for pretraining the embedded toy: the content of a scene, said in ever new words.

Why: the benchmark's captions (``dense`` in :mod:`.synthetic`) are written from a handful of sentence
templates. A toy pretrained on one other template (``dense-alt``) learns that template's surface and
does not transfer: measured on an earlier toy, half of the benchmark's word types — every position word among
them — never occurred in its pretraining captions. Long-CLIP's long-caption stage saw detailed captions
written by many hands; this module is the toy's stand-in for that breadth. Every caption is composed
afresh from independent random choices — sentence frames, the order of the sentences, synonyms for
sizes and positions, whether a relation is said from one object or the other — so that what all
captions of a scene share is its content (background, and each object's shape, colour, size and place),
not a wording.

What is held out: the benchmark's own sentence templates (``DENSE_*``) are never used here. The content
words they use (``corner``, ``edge``, ``halfway``, ``center``, ``medium-sized``, ``backdrop``, …) do occur,
in other frames, as any web-scale pretraining would have seen them; :func:`coverage` measures that.

Two lengths: :func:`varied_long_caption` (all objects, one or two relations, 60–140 words: the Long-CLIP
stage) and :func:`varied_short_caption` (one or two objects, an alt-text: the CLIP stage).

The detail gap: ``detail_rate`` < 1 makes both voices name an object's size, and its place (and a relation),
only with that probability, as web alt-text names what an object is far more often than how big it is or
exactly where. The images always show both, and the benchmark's dense captions always name both, so a
model pretrained with a gap still separates unrelated scenes (by shape, colour and background) but
confuses the near-twins that differ in size or placement — the details that fine-tuning on dense
captions then teaches (the situation of Long-CLIP-L on DOCCI, §3.2).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

import numpy as np

from .synthetic import NUMBER_WORDS, Scene, SceneObject, capitalise, pick_one, relation_phrase

__all__ = ["varied_long_caption", "varied_short_caption", "coverage"]

#: Ways to name each grid cell, as a noun phrase after a preposition ("in the …", "at the …").
REGION_NOUNS: dict[str, tuple[str, ...]] = {
    "top left": ("top left corner", "upper left corner", "top-left part", "upper left area", "corner at the top left",
                 "top left of the picture", "upper left"),
    "top center": ("top edge, in the middle", "middle of the top edge", "top center", "upper middle",
                   "center of the top row", "top, halfway across", "upper center"),
    "top right": ("top right corner", "upper right corner", "top-right part", "upper right area",
                  "corner at the top right", "top right of the picture", "upper right"),
    "middle left": ("left side, halfway down", "middle of the left side", "left edge, halfway down",
                    "center left", "left middle", "left-hand side, halfway down"),
    "center": ("center", "very center", "middle of the picture", "center of the image", "dead center",
               "middle"),
    "middle right": ("right side, halfway down", "middle of the right side", "right edge, halfway down",
                     "center right", "right middle", "right-hand side, halfway down"),
    "bottom left": ("bottom left corner", "lower left corner", "bottom-left part", "lower left area",
                    "corner at the bottom left", "bottom left of the picture", "lower left"),
    "bottom center": ("bottom edge, in the middle", "middle of the bottom edge", "bottom center", "lower middle",
                      "center of the bottom row", "bottom, halfway across", "lower center"),
    "bottom right": ("bottom right corner", "lower right corner", "bottom-right part", "lower right area",
                     "corner at the bottom right", "bottom right of the picture", "lower right"),
}
PREPOSITIONS = ("in the", "at the", "near the", "toward the", "over in the", "over at the")
SIZE_WORDS: dict[str, tuple[str, ...]] = {
    "small": ("small", "little", "tiny", "smallish", "small-sized"),
    "medium": ("medium-sized", "medium", "mid-sized", "moderately sized", "middle-sized"),
    "large": ("large", "big", "huge", "large-sized", "sizable"),
}
SIZE_NOUNS = {"small": "small size", "medium": "medium size", "large": "large size"}
#: Where an object is when its place goes unsaid (the preposition included, as in :func:`_where`).
UNPLACED = ("in the picture", "in the image", "in this drawing", "on the canvas", "in the scene")

# Object sentences: {size} {colour} {shape} {where} ({where} includes its preposition).
OBJECT_FRAMES = (
    "There is a {size} {colour} {shape} {where}.",
    "{Where} we see a {size} {colour} {shape}.",
    "A {colour} {shape}, {size}, is drawn {where}.",
    "{Where} sits a {colour} {shape} of {size_noun}.",
    "You can spot a {size} {shape} in {colour} {where}.",
    "The picture has a {size} {colour} {shape} {where}.",
    "{Where}: a {size}, {colour} {shape}.",
    "A {shape} colored {colour} and {size} in scale appears {where}.",
    "I notice a {colour} {shape} {where}; it is {size}.",
    "{Where} there is also a {size} {colour} {shape}.",
    "Placed {where} is a {size} {colour} {shape}.",
    "A {size} {colour} {shape} can be seen {where}.",
    "{Where} lies a {colour} {shape}, rather {size}.",
    "Next, a {colour} {shape} of {size_noun} rests {where}.",
    "The {colour} {shape} {where} is {size}.",
    "One {size} {shape}, painted {colour}, is {where}.",
)
INTRO_FRAMES = (
    "A picture with {count} shapes on a {bg} background.",
    "{Count} flat figures are drawn on {bg}.",
    "An image of {count} simple shapes over a {bg} backdrop.",
    "This graphic shows {count} colored shapes against {bg}.",
    "A flat drawing: {count} geometric figures on a {bg} field.",
    "Here {count} shapes are spread over a {bg} surface.",
    "We are looking at {count} plain shapes set on {bg}.",
    "In this illustration there are {count} shapes, and the background is {bg}.",
    "",
    "",
)
BACKGROUND_FRAMES = {
    "plain": (
        "The {bg} background is plain.", "Behind the shapes the {bg} color is even, with no pattern.",
        "The backdrop is a flat {bg} without texture.", "Nothing is drawn on the {bg} background besides the shapes.",
        "All of it sits on plain {bg}.",
    ),
    "ground": (
        "A strip of a darker or lighter shade runs along the bottom of the {bg} background, like ground.",
        "The {bg} backdrop has a band of another shade at its bottom.",
        "At the bottom, a band of another {bg} shade looks like the ground.",
        "The lower part of the {bg} background is a ground band of another shade.",
    ),
    "stripes": (
        "Thin horizontal stripes cross the {bg} background.",
        "The {bg} backdrop is covered in evenly spaced horizontal lines of another shade.",
        "Stripes of another shade run across the whole {bg} background.",
        "The {bg} background carries thin stripes, evenly spaced, from side to side.",
    ),
}
RELATION_FRAMES = (
    "The {a} is {relation} the {b}.",
    "The {a} lies {relation} the {b}.",
    "Seen from the {b}, the {a} is {relation} it.",
    "The {b} has the {a} {relation} it.",
    "{Relation} the {b} we find the {a}.",
    "Note that the {a} is placed {relation} the {b}.",
)
#: Object sentences that leave the size unsaid (same slots as ``OBJECT_FRAMES`` without ``{size}``).
UNSIZED_OBJECT_FRAMES = (
    "There is a {colour} {shape} {where}.",
    "{Where} we see a {colour} {shape}.",
    "A {colour} {shape} is drawn {where}.",
    "You can spot a {shape} in {colour} {where}.",
    "The picture has a {colour} {shape} {where}.",
    "{Where}: a {colour} {shape}.",
    "A {shape} colored {colour} appears {where}.",
    "{Where} there is also a {colour} {shape}.",
    "A {colour} {shape} can be seen {where}.",
    "One {shape}, painted {colour}, is {where}.",
)
CLOSINGS = (
    "", "", "", "The shapes are all separate.", "No shape overlaps another.", "There is no text in the picture.",
    "Each shape is one flat color.", "The figures do not touch.", "There are no shadows.",
)
SHORT_FRAMES = (
    "a {o1} and a {o2}",
    "{o1} next to {o2}",
    "a {o1} with a {o2} on {bg}",
    "drawing of a {o1} {relation} a {o2}",
    "{o1}, {o2}, {bg} background",
    "a {o1} {where1}",
    "a {o1} on a {bg} backdrop",
    "flat graphic: {o1} and {o2}",
    "{o1} {where1} and {o2} {where2}",
    "simple shapes: a {o1}",
)


def _said(rate: float, rng: np.random.Generator) -> bool:
    """Whether a detail is named; at rate 1 no random number is drawn (captions as before the detail gap)."""
    return rate >= 1.0 or rng.random() < rate


def _where(obj: SceneObject, rng: np.random.Generator, detail_rate: float = 1.0) -> str:
    if not _said(detail_rate, rng):
        return pick_one(rng, UNPLACED)
    return f"{pick_one(rng, PREPOSITIONS)} {pick_one(rng, REGION_NOUNS[obj.region])}"


def _object_sentence(obj: SceneObject, rng: np.random.Generator, detail_rate: float = 1.0) -> str:
    where = _where(obj, rng, detail_rate)
    frames = OBJECT_FRAMES if _said(detail_rate, rng) else UNSIZED_OBJECT_FRAMES
    return pick_one(rng, frames).format(
        size=pick_one(rng, SIZE_WORDS[obj.size]), size_noun=SIZE_NOUNS[obj.size], colour=obj.colour,
        shape=obj.shape, where=where, Where=capitalise(where),
    )


def _relation_sentence(a: SceneObject, b: SceneObject, rng: np.random.Generator) -> str:
    relation = relation_phrase(a, b)
    return pick_one(rng, RELATION_FRAMES).format(a=a.name, b=b.name, relation=relation, Relation=capitalise(relation))


def _short_object(obj: SceneObject, rng: np.random.Generator, detail_rate: float = 1.0) -> str:
    words = [obj.colour, obj.shape]
    if rng.random() < 0.5 and _said(detail_rate, rng):
        words.insert(0, pick_one(rng, SIZE_WORDS[obj.size]))
    return " ".join(words)


def varied_long_caption(scene: Scene, rng: np.random.Generator, detail_rate: float = 1.0) -> str:
    """A long caption naming the background and every object (shape, colour, size, place) in a fresh voice;
    each size, place and relation only with probability ``detail_rate``."""
    count = NUMBER_WORDS[len(scene.objects)]
    bg = scene.background.colour
    order = [int(k) for k in rng.permutation(len(scene.objects))] if rng.random() < 0.7 else list(
        range(len(scene.objects))
    )
    objects = [_object_sentence(scene.objects[k], rng, detail_rate) for k in order]
    relations = []
    for _ in range(int(rng.integers(0, 3))):
        if not _said(detail_rate, rng):
            continue
        i, j = (int(k) for k in rng.choice(len(scene.objects), size=2, replace=False))
        relations.append(_relation_sentence(scene.objects[i], scene.objects[j], rng))
    background = pick_one(rng, BACKGROUND_FRAMES[scene.background.pattern]).format(bg=bg)
    intro = pick_one(rng, INTRO_FRAMES).format(count=count, Count=capitalise(count), bg=bg)
    body = [*objects, *relations]
    if rng.random() < 0.5:
        body.insert(int(rng.integers(len(body) + 1)), background)
    else:
        body = [background, *body] if rng.random() < 0.5 else [*body, background]
    return " ".join(s for s in (intro, *body, pick_one(rng, CLOSINGS)) if s)


def varied_short_caption(scene: Scene, rng: np.random.Generator, detail_rate: float = 1.0) -> str:
    """A one-line alt-text naming one or two of the objects, sometimes with a size, a place or the background
    (sizes, places and relations only with probability ``detail_rate``)."""
    i, j = (int(k) for k in rng.choice(len(scene.objects), size=2, replace=False))
    first, second = scene.objects[i], scene.objects[j]
    relation = relation_phrase(first, second) if _said(detail_rate, rng) else "and"
    return pick_one(rng, SHORT_FRAMES).format(
        o1=_short_object(first, rng, detail_rate), o2=_short_object(second, rng, detail_rate),
        bg=scene.background.colour, relation=relation, where1=_where(first, rng, detail_rate),
        where2=_where(second, rng, detail_rate),
    )


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z][a-z\-]*", text.lower())


def coverage(target_captions: Iterable[str], seen_captions: Iterable[str]) -> dict:
    """How much of the target captions' vocabulary the seen captions contain: word types and token share
    never seen (the measurement of DESIGN-NOTES' "lexical coverage")."""
    target = Counter(w for caption in target_captions for w in _words(caption))
    seen = {w for caption in seen_captions for w in _words(caption)}
    unseen = {w: n for w, n in target.items() if w not in seen}
    return {
        "word_types": len(target),
        "unseen_types": sorted(unseen),
        "unseen_token_share": sum(unseen.values()) / max(1, sum(target.values())),
    }
