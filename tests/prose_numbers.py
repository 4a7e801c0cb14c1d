"""Which numbers a chapter's static prose may state, and which it states without the computation behind them.

A sentence that interprets a measurement must be rendered by the cell that made the measurement
(``display(Markdown(f"…"))``), so that re-running the chapter with another seed, backbone or dataset keeps the
prose true. Typed markdown may therefore state only numbers that cannot drift from a run:

* **references** — equation, table, figure, section, appendix and chapter numbers (``Eq. 2``, ``Table A5``,
  ``§2.4``, ``Fig. 3, 5``), and the year of an author–year citation (``Liang et al. 2022``, ``Zhang et al., 2024``);
* **the paper's numbers**, in a sentence that says they are the paper's (it names the paper, a table, a figure
  or a section, and not the toy or our runs) and equal to a number of the paper data
  (``hnclip_core.replication.paper``) at the printed precision (a percentage also matches the paper's fraction:
  ``80 %`` ↔ ``0.8``);
* **inputs** — numbers that occur in the chapter's own code (its parameters and constants: ``16 × 8``,
  ``γ = 0.5``, the threshold ``1e-3``) or are the recipe's fixed sizes (:data:`RECIPE_CONSTANTS`), which the
  reader sets rather than measures; and the integers 0–10, which prose uses for counting ("two losses");
* anything inside LaTeX (``$…$``) or code spans (`` `…` ``).

Every other number in typed markdown is reported: a measurement quoted by hand, which no output guarantees.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path

PAPER_DIR = Path(__file__).resolve().parents[1] / "hnclip_core" / "replication" / "paper"

#: What makes a sentence the paper's: it names the paper or cites one of its tables, figures or sections ...
PAPER_LABEL = re.compile(r"paper|Long-CLIP-L|Table|Fig\.|§|App\.|Appendix|arXiv", re.IGNORECASE)
#: ... and does not also speak of our own runs (a sentence setting ours beside the paper's is computed).
OURS = re.compile(r"\btoy\b|\bours\b|\bour\b|embedded|synthetic|we measure|measured here|this run", re.IGNORECASE)
#: The recipe's fixed sizes, which prose names as often as the code: micro-batch 16, effective batches 32 and 128,
#: contexts 77 and 248, s = 100.
RECIPE_CONSTANTS = frozenset({16, 32, 77, 100, 128, 248})
#: A reference and the numbers it lists: "Eq. 1–4", "Table 3(a)", "Fig. 3, 5, A9", "§2.1–2.4", "chapter 2 and 3".
REFERENCE = re.compile(
    r"(?:\bEqs?\.|\bEquations?|\bTables?|\bFigs?\.|\bFigures?|§|\bApp\.|\bAppendix|\bchapters?|\bChapters?|"
    r"\bSections?|\barXiv|\bv)\s*[A-Z]?\d+(?:[.(][\w.)]*)?(?:\s*(?:,|–|-|and|or|&)\s*[A-Z]?\d+(?:[.(][\w.)]*)?)*"
    r"|\bet al\.,?\s*(?:19|20)\d{2}[a-z]?\b"
)
MATH = re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.DOTALL)
CODE = re.compile(r"`[^`]*`")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
LINK_TARGET = re.compile(r"\]\([^)]*\)")
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
#: A number as prose writes it: 0.84, 1,200, 47 %, 1e-3, 10⁻³, 10^2, −0.27.
SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
NUMBER = re.compile(
    r"(?<![\w.,/#])[−-]?\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][−-]?\d+|\^[−-]?\d+|(?:[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+))?(?:\s?%)?(?![\w/])"
)


@dataclass(frozen=True)
class StaleNumber:
    """A number typed in a markdown cell that is neither a reference, the paper's, nor an input."""

    cell: int
    number: str
    sentence: str

    def __str__(self) -> str:
        return f"markdown cell {self.cell}: {self.number!r} in “{self.sentence.strip()}”"


def _value(text: str) -> Decimal | None:
    """The number ``text`` denotes (a percentage as its fraction), or None if it is not one."""
    text = text.replace("−", "-").replace(",", "").strip()
    percent = text.endswith("%")
    text = text.rstrip("%").strip()
    if "^" in text:
        base, exponent = text.split("^")
        text = f"{base}e{exponent}" if base == "10" else text
    elif re.search(r"[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]", text):
        base, exponent = re.match(r"(\d+)(.*)", text).groups()
        text = f"1e{exponent.translate(SUPERSCRIPTS)}" if base == "10" else text
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    return value / 100 if percent else value


def _precision(text: str) -> Decimal:
    """Half a unit in the last printed place of ``text`` (the rounding a matching number may differ by)."""
    digits = text.replace("−", "-").replace(",", "").rstrip("% ").split("e")[0].split("^")[0]
    places = len(digits.split(".")[1]) if "." in digits else 0
    half = Decimal(5) / Decimal(10) ** (places + 1)
    return half / 100 if text.rstrip().endswith("%") else half


def _numbers_in(text: str) -> set[Decimal]:
    found = set()
    for match in NUMBER.finditer(text.translate(str.maketrans({"−": "-"}))):
        value = _value(match.group())
        if value is not None:
            found |= {value, abs(value)}
    return found


@cache
def paper_numbers() -> tuple[Decimal, ...]:
    """Every number of the paper data: table values and the numbers written in notes and captions."""
    found: set[Decimal] = set()

    def walk(node) -> None:
        if isinstance(node, bool) or node is None:
            return
        if isinstance(node, int | float):
            found.add(Decimal(repr(node)))
        elif isinstance(node, str):
            found.update(_numbers_in(node))
        elif isinstance(node, dict):
            for item in node.values():
                walk(item)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    for path in sorted(PAPER_DIR.glob("*.json")):
        if path.name != "schema.json":
            walk(json.loads(path.read_text()))
    return tuple(sorted(found))


def _matches(text: str, candidates) -> bool:
    """Whether one of ``candidates`` prints as ``text`` (a percentage may be a fraction or a percentage)."""
    value, tolerance = abs(_value(text)), _precision(text)
    pairs = [(value, tolerance)]
    if text.rstrip().endswith("%"):
        pairs.append((value * 100, tolerance * 100))
    return any(abs(abs(c) - v) <= t for c in candidates for v, t in pairs)


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?;:])\s+(?=[A-Z*(\[])|\n\s*[*-]\s|\n\n|\|", text) if s.strip()]


def _stale_in(texts: list[str | None], inputs: set[Decimal]) -> list[StaleNumber]:
    """The typed numbers of the markdown ``texts`` (None: not markdown, skipped) that are not ``inputs``."""
    inputs = inputs | {Decimal(n) for n in RECIPE_CONSTANTS}
    found = []
    for index, text in enumerate(texts):
        if text is None:
            continue
        for pattern in (COMMENT, FENCE, MATH, CODE, LINK_TARGET, REFERENCE):
            text = pattern.sub(" ", text)
        for sentence in _sentences(text):
            for match in NUMBER.finditer(sentence):
                number = match.group()
                value = _value(number)
                if value is None or (value == value.to_integral_value() and 0 <= value <= 10
                                     and "%" not in number):
                    continue
                if _matches(number, inputs):
                    continue
                if PAPER_LABEL.search(sentence) and not OURS.search(sentence) and _matches(number, paper_numbers()):
                    continue
                found.append(StaleNumber(index, number, sentence))
    return found


def stale_numbers(notebook: dict) -> list[StaleNumber]:
    """The typed numbers of ``notebook`` (an nbformat dict) that only a computation could vouch for."""
    cells = notebook["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return _stale_in(["".join(c["source"]) if c["cell_type"] == "markdown" else None for c in cells],
                     _numbers_in(code))


def stale_numbers_in_document(text: str, inputs: str = "") -> list[StaleNumber]:
    """The typed numbers of a markdown document (its generated blocks left out by the caller) that no computation
    vouches for; ``inputs`` is text whose numbers are settings the reader chooses (e.g. the Makefile). Each
    paragraph counts as a cell."""
    return _stale_in(re.split(r"\n\s*\n", text), _numbers_in(inputs))


if __name__ == "__main__":
    import sys

    for name in sys.argv[1:]:
        for stale in stale_numbers(json.loads(Path(name).read_text())):
            print(f"{name}: {stale}")
