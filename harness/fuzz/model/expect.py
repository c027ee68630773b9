"""What a generated stream should give: written as a recording, judged by the reference.

A stream becomes an ordinary `.sse` recording (its leading comment lines say what was generated
and what it pins), so the expected result is built exactly as a shipped case's golden file is:
`harness.suite.golden.build_golden`, which runs the reference under every combination of the
allowed outcomes of the implementation-defined points the recording pins. Which points a stream
touches is found here by running the reference once per other outcome of each point: a point is
pinned when one of its other outcomes changes what the reference gives.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import reference
from harness.drive.inprocess import finish_step, push_step
from harness.files import write_atomically
from harness.fuzz.model.features import BY_NAME
from harness.fuzz.model.streams import Stream
from harness.suite.cases import Case
from harness.suite.golden import build_golden
from harness.suite.recording import PIN_TAGS, iter_payloads
from harness.suite.sse import Payload
from reference import choices as choices_of


def _outcome(payloads: Sequence[Payload], capped: bool, choices: choices_of.Choices) -> str:
    assembler = reference.PlainAssembler(choices)
    steps: list[dict[str, Any]] = []
    for payload in payloads:
        step = push_step(assembler, payload.data, payload.line)
        steps.append(step)
        if "error" in step:
            return json.dumps(steps, sort_keys=True)
    return json.dumps([steps, finish_step(assembler, capped)], sort_keys=True)


def touched_points(
    recording: Path, *, capped: bool, candidates: Sequence[str] = ()
) -> tuple[str, ...]:
    """The implementation-defined points whose outcome changes the result of the recording.

    Each point is tried alone (another outcome, the others the reference's own); `candidates`
    (the points the stream's features touch) are also tried in every combination, because a
    point may matter only beside another's other outcome: an integer beyond 2^53 read exactly,
    and only then a deep value further on ignored.
    """
    payloads = list(iter_payloads(recording))
    own = _outcome(payloads, capped, choices_of.REFERENCE)
    points = set(candidates) & set(choices_of.OUTCOMES)
    for point, values in choices_of.OUTCOMES.items():
        mine = getattr(choices_of.REFERENCE, point)
        if point in points:
            continue
        for value in values:
            if value == mine:
                continue
            if _outcome(payloads, capped, choices_of.REFERENCE.replace({point: value})) != own:
                points.add(point)
                break
    if len(points) < 2:
        return tuple(
            p
            for p in choices_of.OUTCOMES
            if p in points and _matters_alone(p, own, payloads, capped)
        )
    keys = {
        json.dumps(combination, sort_keys=True): _outcome(
            payloads, capped, choices_of.REFERENCE.replace(combination)
        )
        for combination in choices_of.combinations(points)
    }
    found = []
    for point in sorted(points):
        groups: dict[str, set[str]] = {}
        for text, key in keys.items():
            others = {p: v for p, v in json.loads(text).items() if p != point}
            groups.setdefault(json.dumps(others, sort_keys=True), set()).add(key)
        if any(len(group) > 1 for group in groups.values()):
            found.append(point)
    return tuple(p for p in choices_of.OUTCOMES if p in found)


def _matters_alone(point: str, own: str, payloads: Sequence[Payload], capped: bool) -> bool:
    mine = getattr(choices_of.REFERENCE, point)
    return any(
        _outcome(payloads, capped, choices_of.REFERENCE.replace({point: value})) != own
        for value in choices_of.OUTCOMES[point]
        if value != mine
    )


def comments(stream: Stream, *, pins: Sequence[str], notes: Sequence[str] = ()) -> tuple[str, ...]:
    """The recording's leading comment lines: what was generated, its features, what it pins."""
    lines = [*notes, f"features: {', '.join(stream.features) or 'none'}"]
    if stream.broken:
        lines.append(f"broken in one place: {stream.broken}")
    if stream.thinking_capped:
        lines.append("thinking_capped: true")
    if pins:
        lines.append(f"pins: {' '.join(pins)}")
    return tuple(lines)


def rules_of(stream: Stream) -> tuple[str, ...]:
    """The rules (and `SSE`) the stream's features exercise, as pin tags."""
    rules = {rule for name in stream.features for rule in BY_NAME[name].rules}
    return tuple(tag for tag in PIN_TAGS if tag in rules and tag not in choices_of.OUTCOMES)


def write_case(
    stream: Stream,
    recordings: Path,
    golden: Path,
    case_id: str,
    *,
    notes: Sequence[str] = (),
    keep: bool = False,
) -> Case:
    """Write `stream` as the recording of `case_id` (its pins found), and return the case.

    With `keep` (a recording kept in a suite) it also pins the rules its features exercise, and
    is written atomically; a scratch recording is simply overwritten.
    """
    case = Case(case_id, recordings / f"{case_id}.sse", golden / f"{case_id}.json")

    def write(text: str) -> None:
        if keep:
            write_atomically(case.recording, text)
        else:
            case.recording.parent.mkdir(parents=True, exist_ok=True)
            case.recording.write_text(text, encoding="utf-8", newline="")

    write(stream.sse(comments(stream, pins=())))
    candidates = [r for name in stream.features for r in BY_NAME[name].rules]
    points = touched_points(case.recording, capped=stream.thinking_capped, candidates=candidates)
    pins = [*points, *(rules_of(stream) if keep else ())]
    pins = [tag for tag in PIN_TAGS if tag in pins]
    if pins or notes:
        write(stream.sse(comments(stream, pins=pins, notes=notes)))
    return case


def expected(case: Case) -> dict[str, Any]:
    """The golden document of a written stream: the reference's outcome and its alternatives."""
    return build_golden(case)
