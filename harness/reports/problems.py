"""Distinct problems: a run's failing results grouped by cause, each ready to paste upstream.

A target that gets one thing wrong fails many cases in many modes; its maintainer wants the one
thing. Results group by a *cause*: for a mismatch, the field of the first difference with its
indexes taken out (`finish.completion.tool_calls[].name`), the kind of difference (a value, a type,
a missing or an extra field, or the target raising an error where it should not have) and what the
target raised; for a crash or a timeout, the call it happened in, the exception's type and its
message with the quoted values and numbers taken out. Each problem keeps its cases and modes, the
smallest case that shows it (the shortest recording, in `plain` when it fails there), the command
that reproduces that case alone, and a Markdown text for a bug report: what happens, what the
spec says, the minimal stream.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.check.modes import MODES
from harness.check.results import CaseResult
from harness.safetext import ABSENT, printable, shorten, shorten_with_size, shown

#: What each rule says, in one sentence: the "what the spec says" of a bug report.
RULE_TEXT: dict[str, str] = {
    "R1": "Per payload, events come in order: progress, then per choice reasoning, content, and "
    "one tool_call_delta per tool_calls entry carrying that piece's own id, name and arguments; "
    "empty or null text makes no event.",
    "R2": "content and reasoning_content are the concatenation of the event texts (null if none); "
    "a tool call's arguments concatenate its pieces, and its id and name come from the first "
    "piece that has them non-empty (later values are ignored, never concatenated).",
    "R3": "timings is the latest timings object seen, replaced whole.",
    "R4": "reasoning_tokens takes the latest timings' predicted_n whenever a chunk carries "
    "reasoning text; in_reasoning follows the event order.",
    "R5": "finish fails with stream_closed_early when no finish_reason arrived, else with protocol "
    "when no chunk carried an id or a tool call never got an id or name; the latest non-null "
    "finish_reason wins.",
    "R6": "push fails with protocol for a payload that is not a chunk of the documented shape, an "
    "unknown finish_reason, or a tool-call index that is negative or skips ahead.",
    "R7": "Unknown fields are ignored at every level; choices may be empty (absent or null: I5); "
    "chunks after the finish reason are still read.",
    "R8": "A payload with a top-level error object fails with kind server and the server's "
    "message; error: null is no error.",
    "R9": "id is the first non-empty id; progress and timings carry llama-server's fields as "
    "numbers, null when absent.",
    "I1": "An integral number written 1.0 in an integer field: read it, or fail with protocol.",
    "I2": "An integer beyond 2^53-1: read it exactly, or fail with protocol.",
    "I3": "Nesting beyond 128 levels: fail with protocol, or ignore a deep value in an ignored "
    "field; 100,000 levels must not crash.",
    "I4": "A key twice in one object: the last one wins, or fail with protocol.",
    "I5": "A member OpenAI's schema defines but the rules do not read, with a value of the wrong "
    "type, or one it requires (choices, delta, a choice's index) left out or null: ignore it, or "
    "fail with protocol; never read meaning from it.",
    "I6": "A member named __proto__: ignore it, or fail with protocol; never let it change a "
    "later result.",
    "I7": "More than one choice, or a choice index other than 0: fold every choice in order, keep "
    "only index 0, or fail with protocol.",
    "I8": 'A server error without a message: the message is "" or a text of the client\'s own; '
    "a non-empty message is carried exactly.",
    "I9": "A later chunk with another non-empty id: the completion id is the first, or the latest.",
    "SSE": "The event stream is read as the WHATWG server-sent-events rules say; [DONE] ends it.",
}
_STREAM_LINES = 40
_STREAM_CHARS = 4_000
_INDEX = re.compile(r"\[\d+\]")
_CUT = re.compile(r"^prefix\[\d+\]\.")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_NUMBER = re.compile(r"\b\d+(\.\d+)?\b|0x[0-9a-fA-F]+")
_CUT_NOTE = re.compile(r" \(the recording cut after \d+ payload\(s\)\)$")


@dataclass(frozen=True)
class Problem:
    """One cause of failure and every result it explains."""

    title: str
    rule: str | None
    results: tuple[CaseResult, ...]
    example: CaseResult
    command: str
    report: str

    @property
    def cases(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.case_id for r in self.results))

    @property
    def modes(self) -> tuple[str, ...]:
        seen = {r.mode for r in self.results}
        return tuple(m for m in MODES if m in seen) + tuple(sorted(seen - set(MODES)))

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "rule": self.rule,
            "cases": list(self.cases),
            "modes": list(self.modes),
            "runs": len(self.results),
            "example": {"case": self.example.case_id, "mode": self.example.mode},
            "command": self.command,
            "report": self.report,
        }


def _kind(expected: Any, actual: Any, said: str | None) -> str:
    if said is not None:
        return f"raised {said.split(':', 1)[0]}"
    if actual is ABSENT:
        return "missing"
    if expected is ABSENT:
        return "extra"
    if type(expected) is not type(actual) and not (
        isinstance(expected, int | float) and isinstance(actual, int | float)
    ):
        return "type"
    return "value"


def _shape(message: str) -> str:
    """A crash message with its particulars taken out, so that one bug hit with other values is
    one problem."""
    text = _CUT_NOTE.sub("", message)
    text = _QUOTED.sub("<…>", text)
    return _NUMBER.sub("N", text)


def cause(result: CaseResult) -> tuple[str, ...]:
    """What makes two failing results one problem."""
    was = result.expectation.was if result.expectation is not None else result.status
    if result.crash is not None and not result.mismatches:
        return (str(was), result.crash.stage, _shape(result.crash.message))
    if not result.mismatches:
        return (str(was),)
    first = result.mismatches[0]
    path = _INDEX.sub("[]", _CUT.sub("", first.path))
    return ("mismatch", path, _kind(first.expected, first.actual, first.said))


def _title(result: CaseResult, key: tuple[str, ...]) -> str:
    if key[0] == "mismatch":
        _, path, kind = key
        words = {
            "missing": "is missing",
            "extra": "is there although it should not be",
            "type": "has the wrong type",
            "value": "has the wrong value",
        }
        if kind.startswith("raised "):
            return f"raises {kind[7:]} where {path} is expected"
        return f"{path} {words[kind]}"
    if result.crash is not None:
        verb = "times out" if key[0] == "timed-out" else "crashes"
        return f"{verb} in {key[1]}: {shorten(result.crash.message, 120)}"
    return key[0]


def _rule(results: Sequence[CaseResult]) -> str | None:
    counts: dict[str, int] = {}
    for result in results:
        for tag in result.pins:
            counts[tag] = counts.get(tag, 0) + 1
    return (
        max(
            counts,
            key=lambda tag: (counts[tag], -list(RULE_TEXT).index(tag) if tag in RULE_TEXT else 0),
        )
        if counts
        else None
    )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 1 << 62


def _stream(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(the recording cannot be read)"
    lines = text.splitlines()
    shown_lines = lines[:_STREAM_LINES]
    body = "\n".join(shown_lines)
    if len(lines) > _STREAM_LINES:
        body += f"\n… ({len(lines) - _STREAM_LINES} more lines)"
    return shorten_with_size(printable(body, keep_lines=True), _STREAM_CHARS)


def _what_happens(result: CaseResult) -> list[str]:
    lines = []
    if result.mismatches:
        m = result.mismatches[0]
        where = f"at the payload on line {m.line}" if m.line is not None else "at finish"
        lines.append(f"In `{result.case_id}` ({result.mode} mode), {where}, `{m.path}`:")
        lines.append(f"- expected: `{shown(m.expected, 300)}`")
        lines.append(f"- got: `{shown(m.actual, 300)}`")
        if m.said is not None:
            lines.append(f"- the assembler raised `{shorten(m.said, 300)}`")
        if len(result.mismatches) > 1:
            lines.append(f"- and {len(result.mismatches) - 1} more difference(s) in this run")
    elif result.crash is not None:
        verb = "timed out" if "timed" in str(result.status) else "crashed"
        lines.append(
            f"In `{result.case_id}` ({result.mode} mode) the assembler {verb} at "
            f"{result.crash.stage}: `{shorten(result.crash.message, 300)}`"
        )
    return lines


def group(
    results: Iterable[CaseResult],
    *,
    recording: Callable[[CaseResult], Path],
    command: Callable[[CaseResult], str],
) -> list[Problem]:
    """The distinct problems among `results` that are not passes (expected failures included:
    a baseline lists problems too), most runs first. `recording` says where a result's recording
    lies; `command` gives the command that reproduces a result alone."""
    groups: dict[tuple[str, ...], list[CaseResult]] = {}
    for result in results:
        if result.status.not_passing:
            groups.setdefault(cause(result), []).append(result)
    problems = []
    for key, members in groups.items():
        example = min(
            members,
            key=lambda r: (_size(recording(r)), r.mode != "plain", r.case_id, r.mode),
        )
        title = _title(example, key)
        rule = _rule(members)
        problems.append(
            Problem(
                title,
                rule,
                tuple(members),
                example,
                command(example),
                _markdown(title, rule, members, example, recording, command),
            )
        )
    return sorted(problems, key=lambda p: (-len(p.results), p.title))


def _markdown(
    title: str,
    rule: str | None,
    members: Sequence[CaseResult],
    example: CaseResult,
    recording: Callable[[CaseResult], Path],
    command: Callable[[CaseResult], str],
) -> str:
    cases = list(dict.fromkeys(r.case_id for r in members))
    modes = sorted({r.mode for r in members}, key=lambda m: MODES.index(m) if m in MODES else 99)
    lines = [f"### Stream assembly: {title}", "", "**What happens**", "", *_what_happens(example)]
    lines += ["", "**What the spec says**", ""]
    if rule is not None and rule in RULE_TEXT:
        lines.append(f"{rule}: {RULE_TEXT[rule]} (conform's spec, docs/spec.md)")
    else:
        lines.append("The golden file of the case, made by conform's reference assembler.")
    lines += [
        "",
        f"**Minimal stream** (`{example.case_id}`, the smallest of the {len(cases)} case(s) "
        "that show this)",
        "",
        "```",
        _stream(recording(example)),
        "```",
        "",
        f"Reproduce: `{command(example)}`",
        "",
        f"Seen in {len(members)} run(s): {len(cases)} case(s) ({', '.join(cases[:8])}"
        + (f", and {len(cases) - 8} more" if len(cases) > 8 else "")
        + f"), in {', '.join(modes)}.",
    ]
    return "\n".join(lines) + "\n"


def summary_lines(problems: Sequence[Problem], *, limit: int = 20) -> list[str]:
    """The short list `conform run` ends with: one line per problem and its command."""
    if not problems:
        return []
    lines = [f"distinct problems: {len(problems)}"]
    for n, problem in enumerate(problems[:limit], start=1):
        rule = f" [{problem.rule}]" if problem.rule else ""
        lines.append(
            printable(
                f"  {n}. {problem.title}{rule}: {len(problem.cases)} case(s), "
                f"{len(problem.results)} run(s) in {', '.join(problem.modes)}"
            )
        )
        lines.append(printable(f"     rerun: {problem.command}"))
    if len(problems) > limit:
        lines.append(f"  … and {len(problems) - limit} more (the JSON report lists them all)")
    return lines


def problems_json(problems: Sequence[Problem]) -> list[Mapping[str, Any]]:
    """The problems as the JSON report holds them."""
    return [p.to_json() for p in problems]
