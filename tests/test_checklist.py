"""docs/layout.md's "Changing a rule or a field", enforced: every place a field or a rule must go
names it, so a place missed fails here rather than in a user's run.

The fields come from the reference's own types (`reference.Timings`, the event types,
`reference.Completion`) and the rules from the tags a case may pin (`PIN_TAGS`): add one there,
and each place below that does not name it yet fails with its path. A file of the product, its
docs or its examples that lists every timings or progress field is one of these places, so a new
place is added to the checklist (and to docs/layout.md) rather than forgotten.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import reference
from harness.reports.matrix_table import RULE_TITLES
from harness.suite.cases import Suite
from harness.suite.recording import PIN_TAGS
from reference.choices import OUTCOMES

ROOT = Path(__file__).resolve().parents[1]
LAYOUT = ROOT / "docs" / "layout.md"

_SCHEMAS = "harness/schemas/"
_REPLIES = tuple(
    f"{_SCHEMAS}reply-{name}.schema.json" for name in ("hello", "ok", "push", "finish")
)
_EXAMPLES = (
    "examples/python/simple_assembler.py",
    "examples/js/assembler.mjs",
    "examples/go/assembler.go",
    "examples/rust/src/assembler.rs",
)
_KITS = (
    "harness/clients/llama.py",
    "examples/kits/js/conform-kit.mjs",
    "examples/kits/go/llama.go",
    "examples/kits/rust/src/lib.rs",
)


def _fields(kind: Any) -> tuple[str, ...]:
    """A reference type's field names, in order."""
    return tuple(kind.__struct_fields__)


#: Each family of fields: where its names come from, and every place that must name each one.
#: (harness/drive/normalize.py's TIMINGS_FIELDS, reply_form.py and check/members.py read the timings
#: fields from `reference.Timings`: no edit there.)
FAMILIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "timings": (
        _fields(reference.Timings),
        (
            f"{_SCHEMAS}golden.schema.json",
            *_REPLIES,
            "harness/check/known_fields.py",
            "harness/suite/read_fields.py",
            "harness/fuzz/model/values.py",
            *_EXAMPLES,
            *_KITS,
            "docs/spec.md",
            "docs/protocol.md",
            "docs/clients.md",
        ),
    ),
    "progress": (
        _fields(reference.Progress),
        (
            f"{_SCHEMAS}golden.schema.json",
            *_REPLIES,
            "harness/drive/normalize.py",
            "harness/drive/reply_form.py",
            "harness/check/members.py",
            "harness/check/known_fields.py",
            "harness/suite/read_fields.py",
            "harness/fuzz/model/values.py",
            *_EXAMPLES,
            *_KITS,
            "docs/spec.md",
            "docs/protocol.md",
            "docs/golden-files.md",
            "docs/recording.md",
        ),
    ),
    "tool-call piece": (
        _fields(reference.ToolCallDelta),
        (
            f"{_SCHEMAS}golden.schema.json",
            *_REPLIES,
            "harness/drive/normalize.py",
            "harness/drive/reply_form.py",
            *_EXAMPLES,
            "docs/spec.md",
            "docs/protocol.md",
            "docs/golden-files.md",
        ),
    ),
    "completion": (
        _fields(reference.Completion),
        (
            f"{_SCHEMAS}golden.schema.json",
            *_REPLIES,
            "harness/drive/normalize.py",
            "harness/drive/reply_form.py",
            *_EXAMPLES,
            "docs/spec.md",
            "docs/protocol.md",
            "docs/golden-files.md",
        ),
    ),
}

#: Files that name every field of a family without being a place of it, and why.
NOT_PLACES = {
    "harness/fuzz/model/breakers.py": "breaks prompt_progress with odd values; needs no new field",
}

#: The places that must name every rule and implementation-defined point a case may pin.
RULE_PLACES = (
    f"{_SCHEMAS}golden.schema.json",
    "harness/reports/causes.py",
    "harness/fuzz/model/features.py",
    "docs/spec.md",
    "docs/matrix.md",
)


def _names(path: str) -> str:
    return (ROOT / path).read_text(encoding="utf-8")


def _missing(text: str, names: tuple[str, ...]) -> list[str]:
    return [name for name in names if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text)]


_CASES = [(family, path) for family, (_, places) in FAMILIES.items() for path in places]


@pytest.mark.parametrize(("family", "path"), _CASES, ids=[f"{f}:{p}" for f, p in _CASES])
def test_every_place_names_every_field(family: str, path: str) -> None:
    names, _ = FAMILIES[family]
    assert _missing(_names(path), names) == [], f"{path} lacks {family} fields"


@pytest.mark.parametrize("family", ["timings", "progress"])
def test_every_file_that_lists_the_fields_is_a_place(family: str) -> None:
    # The distinctive families only: a tool-call piece's and a completion's field names (`id`,
    # `name`, `content`) are words that many files hold.
    names, places = FAMILIES[family]
    listing = [
        str(path.relative_to(ROOT))
        for folder in ("harness", "docs", "examples")
        for path in sorted((ROOT / folder).rglob("*"))
        if path.is_file()
        and "test" not in path.name
        and path.suffix in {".py", ".json", ".md", ".mjs", ".go", ".rs"}
        and not _missing(path.read_text(encoding="utf-8", errors="replace"), names)
    ]
    unlisted = [p for p in listing if p not in places and p not in NOT_PLACES]
    assert unlisted == [], f"files that list every {family} field: add them to FAMILIES"


def test_every_place_is_in_the_checklist() -> None:
    checklist = LAYOUT.read_text(encoding="utf-8").split("## Changing a rule or a field", 1)[1]
    places = {p for _, ps in FAMILIES.values() for p in ps} | set(RULE_PLACES)
    absent = sorted(p for p in places if p not in checklist)
    assert absent == [], "docs/layout.md's checklist does not name these places"


@pytest.mark.parametrize("path", RULE_PLACES)
def test_every_place_names_every_rule(path: str) -> None:
    assert _missing(_names(path), PIN_TAGS) == [], f"{path} lacks a rule or point"


def test_every_rule_has_a_title_an_outcome_and_a_case() -> None:
    assert set(PIN_TAGS) <= set(RULE_TITLES)  # the matrix's and reports' headings
    points = [tag for tag in PIN_TAGS if tag.startswith("I")]
    assert sorted(OUTCOMES) == sorted(points)  # reference/choices.py: the allowed outcomes
    pinned = {tag for case in Suite.open(ROOT).cases() for tag in case.pins}
    assert set(PIN_TAGS) - pinned == set()  # a shipped recording pins each one


#: "R1..R9", "I1 to I6", "R1-R9": a sentence that names the whole range of rules or points.
_RANGE = re.compile(r"\b([RI])1(?:\.\.| to |-)\1(\d+)\b")
_TEXT = {".py", ".json", ".md", ".mjs", ".go", ".rs", ".xfail"}


def _stale_ranges(text: str) -> list[str]:
    last = {k: max(int(t[1:]) for t in PIN_TAGS if t[0] == k and t[1:].isdigit()) for k in "RI"}
    return [m.group(0) for m in _RANGE.finditer(text) if int(m.group(2)) != last[m.group(1)]]


def test_every_range_of_rules_ends_at_the_last_one() -> None:
    # Such a sentence goes stale when a rule or point is added (CHANGELOG.md is history).
    paths = [ROOT / "README.md"] + [
        path
        for folder in ("harness", "reference", "docs", "examples")
        for path in sorted((ROOT / folder).rglob("*"))
        if path.is_file() and path.suffix in _TEXT
    ]
    stale = [
        f"{path.relative_to(ROOT)}: {found}"
        for path in paths
        for found in _stale_ranges(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert stale == []


def test_the_checks_can_fail() -> None:
    assert _missing("cache_n draft_n_accepted `prompt_n`", ("cache_n", "prompt_n", "draft_n")) == [
        "draft_n"
    ]
    r, i = (max(int(t[1:]) for t in PIN_TAGS if t[0] == k and t[1:].isdigit()) for k in "RI")
    text = f"rules R1..R{r} and R1 to R{r - 1}, points I1-I{i}, I1..I{i + 1}"
    assert _stale_ranges(text) == [f"R1 to R{r - 1}", f"I1..I{i + 1}"]
