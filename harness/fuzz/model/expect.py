"""What a generated stream should give, worked out in memory by the reference.

A stream's expected result is what its golden file would hold (`harness.suite.golden`): the steps
and finish the reference makes of its payloads (`expected`), and, for a stream that touches
implementation-defined points, one alternative per other outcome (`with_alternatives`). The
alternatives cost a reference pass per combination of outcomes, so a fuzz run works them out only
for a stream a target does not pass as the reference assembles it (or when the run gates on an
outcome other than the reference's). Which points a stream touches is found by running the
reference once per other outcome of each point: a point counts when one of its other outcomes
changes the result, alone or beside another point's other outcome (an integer beyond 2^53 read
exactly, and only then a deep value ignored further on).

A finding kept as a case is written as an ordinary `.sse` recording (`case_text`, whose comment
lines say what was generated and what it pins), and its golden file is then built from that text
as any case's is; tests/fuzz/test_model.py holds the two ways equal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import reference
from harness.fuzz.model.features import BY_NAME
from harness.fuzz.model.stream import Stream
from harness.suite.golden import store as golden_store
from harness.suite.recording import PIN_TAGS
from harness.suite.sse import Payload
from reference import choices as choices_of

#: The golden file schema the documents are built in.
SCHEMA = golden_store.SCHEMA


def outcome(
    payloads: Sequence[Payload], capped: bool, choices: choices_of.Choices = choices_of.REFERENCE
) -> dict[str, Any]:
    """The steps and finish the (fast) reference makes of `payloads` under `choices`, as a golden
    file holds them."""
    return golden_store.outcome(payloads, capped, choices, assembler=reference.Assembler)


def expected(payloads: Sequence[Payload], capped: bool, recording: str) -> dict[str, Any]:
    """The golden document of a stream as the reference assembles it (no alternatives)."""
    document: dict[str, Any] = {
        "schema": SCHEMA,
        "recording": recording,
        "thinking_capped": capped,
        "pins": [],
    }
    return document | outcome(payloads, capped)


def _key(found: dict[str, Any]) -> str:
    return json.dumps(found, sort_keys=True)


def touched_points(
    payloads: Sequence[Payload], capped: bool, *, candidates: Sequence[str] = ()
) -> tuple[str, ...]:
    """The implementation-defined points whose outcome changes the result of `payloads`.

    Each point is tried alone (another outcome, the others the reference's own); `candidates`
    (the points the stream's features touch) are also tried in every combination, because a
    point may matter only beside another's other outcome.
    """
    own = _key(outcome(payloads, capped))
    points = set(candidates) & set(choices_of.OUTCOMES)
    alone = set()
    for point, values in choices_of.OUTCOMES.items():
        mine = getattr(choices_of.REFERENCE, point)
        for value in values:
            if value == mine:
                continue
            changed = choices_of.REFERENCE.replace({point: value})
            if _key(outcome(payloads, capped, changed)) != own:
                alone.add(point)
                break
    points |= alone
    if len(points) < 2:
        return tuple(p for p in choices_of.OUTCOMES if p in alone)
    keys: dict[str, object] = {
        json.dumps(combination, sort_keys=True): _key(
            outcome(payloads, capped, choices_of.REFERENCE.replace(combination))
        )
        for combination in choices_of.combinations(points)
    }
    found = [point for point in points if golden_store.matters(point, keys)]
    return tuple(p for p in choices_of.OUTCOMES if p in found)


def candidates_of(stream: Stream) -> tuple[str, ...]:
    """The points the stream's features exercise (tried together by `touched_points`)."""
    return tuple(
        dict.fromkeys(
            r for name in stream.features for r in BY_NAME[name].rules if r in choices_of.OUTCOMES
        )
    )


def with_alternatives(
    payloads: Sequence[Payload], capped: bool, recording: str, pins: Sequence[str]
) -> dict[str, Any]:
    """The golden document of a recording that pins `pins`, with one alternative per other
    outcome of the implementation-defined points among them, as
    `harness.suite.golden.build_golden` builds it."""
    document: dict[str, Any] = {
        "schema": SCHEMA,
        "recording": recording,
        "thinking_capped": capped,
        "pins": [p for p in PIN_TAGS if p in pins],
    }
    points = [p for p in document["pins"] if p in choices_of.OUTCOMES]
    if not points:
        return document | outcome(payloads, capped)
    return document | golden_store.with_alternatives(
        points, lambda choices: outcome(payloads, capped, choices)
    )


def comments(stream: Stream, *, pins: Sequence[str], notes: Sequence[str] = ()) -> tuple[str, ...]:
    """The recording's leading comment lines: what was generated, its features, what it pins."""
    lines = [*notes, f"features (as drawn): {', '.join(stream.features) or 'none'}"]
    if stream.broken:
        lines.append(f"broken in one place: {stream.broken}")
    if stream.thinking_capped:
        lines.append("thinking_capped: true")
    if pins:
        lines.append(f"pins: {' '.join(pins)}")
    return tuple(lines)


#: The rule of the field a target departed on: the first of these prefixes its path starts with
#: (indices left out), or `R6` for an error step (a payload refused or accepted).
_FIELD_RULES = (
    ("steps.state.reasoning_tokens", "R4"),
    ("steps.state.in_reasoning", "R4"),
    ("steps.state.id", "R9"),
    ("steps.state.is_finished", "R5"),
    ("steps.events", "R1"),
    ("steps.error.message", "R8"),
    ("steps.error.kind", "R8"),
    ("finish.completion.timings", "R3"),
    ("finish.completion.reasoning_tokens", "R4"),
    ("finish.completion.finish_reason", "R5"),
    ("finish.completion.thinking_capped", "R5"),
    ("finish.completion.id", "R9"),
    ("finish.completion", "R2"),
    ("finish", "R5"),
    ("steps", "R6"),
)


def rule_of(path: str) -> str | None:
    """The rule a mismatch at `path` (`steps[2].events[0].type`) is about, if one is plain."""
    bare = re.sub(r"\[\d+\]", "", re.sub(r"^prefix\[\d+\]\.", "", path))
    return next((rule for prefix, rule in _FIELD_RULES if bare.startswith(prefix)), None)


def framing_rules(stream: Stream) -> tuple[str, ...]:
    """`SSE` when the stream's framing is not the plain one (a shrunk stream keeps it only when
    the difference needs it)."""
    plain = (stream.line_end, stream.space, stream.unterminated, stream.done) == (
        "\n",
        True,
        False,
        True,
    )
    odd = stream.pings or stream.other_fields or any("\n" in p for p in stream.payloads)
    return () if plain and not odd else ("SSE",)


def rules_of(stream: Stream) -> tuple[str, ...]:
    """The rules (and `SSE`) the stream's features exercise, as pin tags."""
    rules = {rule for name in stream.features for rule in BY_NAME[name].rules}
    return tuple(tag for tag in PIN_TAGS if tag in rules and tag not in choices_of.OUTCOMES)


@dataclass(frozen=True)
class Kept:
    """A stream as a case keeps it: the recording's text, how many comment lines open it, and
    what it pins."""

    text: str
    comments: int
    pins: tuple[str, ...]


def kept(stream: Stream, *, notes: Sequence[str] = (), rules: Sequence[str] | None = None) -> Kept:
    """The `.sse` recording a finding is kept as: its comment lines name the notes, the features,
    and the pins: `rules` (by default the rules its features exercise; for a shrunk stream, the
    rule of the field the target departed on, which its features as drawn no longer show), and
    the implementation-defined points it touches, which its golden file then holds every
    outcome of."""
    payloads = stream.payload_records()
    points = touched_points(payloads, stream.thinking_capped, candidates=candidates_of(stream))
    ruled = rules_of(stream) if rules is None else rules
    pins = tuple(tag for tag in PIN_TAGS if tag in {*points, *ruled})
    lines = comments(stream, pins=pins, notes=notes)
    return Kept(stream.sse(lines), len(lines), pins)
