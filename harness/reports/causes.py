"""The cause of a failing result: what makes two failures one problem, and the rule it breaks.

The same grouping at every level (`full` or `completion`) and in every mode:

- a **crash** is its exception's type and the frame it happened in: its innermost frame in the
  target's own code or in a client it wraps (`harness.drive.blame`; as Hypothesis tells failures
  apart). A crash in an adapter's own code is an **adapter fault**, never blamed on the client.
  A crash without a known frame (a program in another language, a reply conform cannot read)
  is its call, type and message with the particulars taken out;
- **invalid input a target answered** instead of refusing it with `protocol` is what the rules
  refuse in it: the reference's own reason for that input, particulars taken out (`accepts
  invalid input: not a chunk: Expected int, got str - at $.choices[].delta.tool_calls[].index`);
- any other **mismatch** is the field of its first difference with the indexes taken out, the
  kind of difference (a value, a type, a missing or an extra field, an error raised where none
  belongs), and the rule that governs that field (`RULE_OF_FIELD`), not the rules its case pins.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.check.results import CaseResult, Mismatch
from harness.check.status import Status
from harness.drive.blame import ADAPTER
from harness.safetext import ABSENT, shorten
from harness.suite.classes import InputClass
from reference import Progress

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
    "I7": "More than one choice, or a choice index other than 0: fold them all, keep only index "
    "0, or fail with protocol.",
    "I8": "A server error without a message: the message is '' or a text the implementation "
    "supplies; a non-empty message is carried exactly.",
    "I9": "A later chunk with another non-empty id: the completion id is the first, or the latest.",
    "SSE": "The event stream is read as the WHATWG server-sent-events rules say; [DONE] ends it.",
}

#: The rule that governs each field of a result (its path with the indexes taken out), most
#: specific first: the rule a difference there breaks, whatever its case pins.
RULE_OF_FIELD: tuple[tuple[str, str], ...] = (
    *((f"steps[].events[].{name}", "R9") for name in Progress.__struct_fields__),  # R9's fields
    ("steps[].events", "R1"),
    ("steps[].state.id", "R9"),
    ("steps[].state.reasoning_tokens", "R4"),
    ("steps[].state.in_reasoning", "R4"),
    ("steps[].state.is_finished", "R5"),
    ("steps[].error.message", "R8"),
    ("finish.error.message", "R8"),
    ("finish.completion.content", "R2"),
    ("finish.completion.reasoning_content", "R2"),
    ("finish.completion.tool_calls", "R2"),
    ("finish.completion.id", "R9"),
    ("finish.completion.finish_reason", "R5"),
    ("finish.completion.timings", "R3"),
    ("finish.completion.reasoning_tokens", "R4"),
    ("finish.completion", "R5"),
)
#: The rule of an expected error, by its kind and where it stands.
_RULE_OF_ERROR = {("steps", "protocol"): "R6", ("steps", "server"): "R8"}

_INDEX = re.compile(r"\[\d+\]")
_CUT = re.compile(r"^prefix\[\d+\]\.")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_NUMBER = re.compile(
    r"(?<![\w-])-?\d+(\.\d+)?([eE][-+]?\d+)?\b|0x[0-9a-fA-F]+|\b(None|True|False|NaN)\b"
)
_CUT_NOTE = re.compile(r" \(the recording cut after \d+ payload\(s\)\)$")
_BYTE = re.compile(r" \(byte \d+\)")
_EXCEPTION = re.compile(r"\braised ([A-Za-z_][\w.]*)")
#: A result conform cannot read (`harness.drive.normalize`): the field and what is wrong with it,
#: whatever value it held instead.
_UNREADABLE = re.compile(
    r"(?P<head>.*cannot read: \S+) "
    r"(?:is an? \w+, not a JSON scalar|(?P<lacks>has no field '[^']*')): .*$",
    re.DOTALL,
)

#: What a failing run is about, in the order problems are listed (README, "Reading a failure").
VALID, VALID_IN_MODES = "valid", "valid-under-mutation"
INVALID_CRASHED, INVALID_ACCEPTED = "invalid-crashed", "invalid-accepted"
IMPLEMENTATION_DEFINED, ADAPTER_FAULT = "implementation-defined", "adapter-fault"
CATEGORIES = (
    VALID,
    VALID_IN_MODES,
    INVALID_CRASHED,
    INVALID_ACCEPTED,
    IMPLEMENTATION_DEFINED,
    ADAPTER_FAULT,
)


@dataclass(frozen=True)
class Cause:
    """What makes failing results one problem: its key, and how a report names it."""

    key: tuple[str, ...]
    title: str
    rule: str | None  # None: the rule is read from the cases' pins
    adapter: bool = False  # a crash in the adapter's own code (`harness.drive.blame`)
    accepted: bool = False  # invalid input answered instead of refused


def shape(message: str) -> str:
    """A message with its particulars (quoted values, numbers, indexes, byte offsets) taken
    out, so that one bug hit with other values is one problem."""
    text = _BYTE.sub("", _CUT_NOTE.sub("", message))
    text = _INDEX.sub("[]", text)
    text = _QUOTED.sub("<…>", text)
    return _NUMBER.sub("N", text)


_AT = re.compile(r" - at `(\$[^`]*)`")
_MUST = re.compile(r"^(?P<what>.+? must (?:be|hold) .+?), (?:not|got) .+$", re.DOTALL)


def refusal_kind(reason: str) -> str:
    """The kind of invalid input the reference's `reason` names: what a field must be, whatever
    wrong type or value it had (`tool_calls[].index must be an integer`, or `a wrong type or
    value at $.choices[].delta.tool_calls[].index`: a target that does not check one field lets
    every wrong value through), else the reason with its particulars taken out."""
    found = _AT.search(reason)
    if found is not None:
        return f"a wrong type or value at `{_INDEX.sub('[]', found.group(1))}`"
    must = _MUST.match(reason)
    if must is not None:
        return shape(must.group("what"))
    return shape(reason)


def field(path: str) -> str:
    """A mismatch's path with its `truncated` cut and indexes taken out."""
    return _INDEX.sub("[]", _CUT.sub("", path))


def rule_of_field(path: str, expected: Any) -> str | None:
    """The rule that governs the field at `path` (indexes out) whose golden value is
    `expected`; None when no rule names it."""
    if path.endswith(".error") or path.endswith(".error.kind"):
        kind = expected.get("kind") if isinstance(expected, Mapping) else expected
        where = path.partition("[")[0].partition(".")[0]
        if where == "finish":
            return "R8" if kind == "server" else "R5"
        return _RULE_OF_ERROR.get((where, str(kind)))
    for prefix, rule in RULE_OF_FIELD:
        if path == prefix or path.startswith((prefix + ".", prefix + "[")):
            return rule
    return None


def _kind(m: Mismatch) -> str:
    if m.said is not None:
        return f"raised {m.said.split(':', 1)[0]}"
    if m.actual is ABSENT:
        return "missing"
    if m.expected is ABSENT:
        return "extra"
    expected, actual = m.expected, m.actual
    if expected is None or actual is None:  # null is no value, not a type of its own
        return "value"
    if type(expected) is not type(actual) and not (
        isinstance(expected, int | float)
        and isinstance(actual, int | float)
        and not isinstance(expected, bool)
        and not isinstance(actual, bool)
    ):
        return "type"
    return "value"


def refused(m: Mismatch) -> str | None:
    """How the target answered where the golden file has a `protocol` error, or None when `m`
    is not at such an error: `events` (it went on), `completion`, or the error kind it raised."""
    expected = m.expected
    at_error = field(m.path).endswith(".error") and isinstance(expected, Mapping)
    if at_error and expected.get("kind") == "protocol" and m.actual is ABSENT:
        return "completion" if field(m.path).startswith("finish") else "events"
    if field(m.path).endswith(".error.kind") and expected == "protocol":
        return f"{m.actual} error" if isinstance(m.actual, str) else "another error"
    return None


_WORDS = {
    "missing": "is missing",
    "extra": "is there although it should not be",
    "type": "has the wrong type",
    "value": "has the wrong value",
}


def cause(
    result: CaseResult, *, refusal: Callable[[CaseResult], str | None] | None = None
) -> Cause:
    """What makes `result` (one that did not pass) one problem with others. `refusal` gives the
    reference's reason for refusing the result's input (for invalid input a target answered)."""
    was = result.expectation.was if result.expectation is not None else result.status
    crash = result.crash
    if crash is not None and not result.mismatches:
        if was == Status.TIMED_OUT:
            return Cause(("timed-out", crash.stage), f"times out in {crash.stage}", None)
        origin = crash.origin
        if origin is not None:
            where = f"{origin.frame} ({origin.function})"
            title = f"crashes with {origin.exception} in {where}"
            if origin.owner == ADAPTER:
                title = f"the adapter crashes with {origin.exception} in {where}"
            return Cause(
                ("crash", origin.owner, origin.exception, origin.frame),
                title,
                None,
                adapter=origin.owner == ADAPTER,
            )
        unreadable = _UNREADABLE.match(crash.message)
        if unreadable is not None:  # a value of another type kept: one problem a field
            what = unreadable.group("lacks") or "is not a JSON scalar"
            head = _INDEX.sub("[]", unreadable.group("head"))
            return Cause(("unreadable", crash.stage, head, what), f"{head} {what}", None)
        found = _EXCEPTION.search(crash.message)
        exception = found.group(1) if found else ""
        return Cause(
            ("crash", crash.stage, exception, shape(crash.message)),
            f"crashes in {crash.stage}: {shorten(crash.message, 120)}",
            None,
        )
    if not result.mismatches:
        return Cause((str(was),), str(was), None)
    for m in result.mismatches:
        answered = refused(m)
        if answered is not None and result.input_class is not InputClass.IMPLEMENTATION_DEFINED:
            reason = refusal(result) if refusal is not None else None
            at_finish = field(m.path).startswith("finish")
            refusing = "R5" if at_finish else _refusal_rule(result.pins)
            if reason is None:
                reason = f"{field(m.path)} is a protocol error"
            how = "" if answered in ("events", "completion") else f" (it raises {answered})"
            kind = refusal_kind(reason)
            return Cause(
                ("accepts", kind, answered),
                f"accepts invalid input{how}: {shorten(kind, 160)}",
                refusing,
                accepted=True,
            )
    first = result.mismatches[0]
    path = field(first.path)
    kind = _kind(first)
    rule: str | None = None  # raised where it should not: the rule of the case's own pins
    if kind.startswith("raised "):
        title = f"raises {kind[7:]} where {path} is expected"
    else:
        title = f"{path} {_WORDS[kind]}"
        rule = rule_of_field(path, first.expected)
    if result.input_class is InputClass.IMPLEMENTATION_DEFINED:
        points = [tag for tag in result.pins if tag.startswith("I")]
        rule = points[0] if points else rule
    return Cause(("mismatch", path, kind, rule or ""), title, rule)


def _refusal_rule(pins: Sequence[str]) -> str:
    """The rule that refuses an input at a push: R6, unless the case pins R4, R8 or SSE only."""
    for tag in ("R6", "R4", "R8", "SSE"):
        if tag in pins:
            return tag
    return "R6"


def category(result: CaseResult, found: Cause) -> str:
    """What a failing run is about (`CATEGORIES`): valid input in `plain`, valid input under a
    mutation mode, invalid input the target crashed on or answered, implementation-defined
    input; an adapter fault apart."""
    if found.adapter:
        return ADAPTER_FAULT
    kind = result.input_class
    if kind is InputClass.IMPLEMENTATION_DEFINED:
        return IMPLEMENTATION_DEFINED
    if found.accepted:  # the input as pushed is refused by the rules: a cut after an early finish
        return INVALID_ACCEPTED
    if kind is InputClass.INVALID:
        was = result.expectation.was if result.expectation is not None else result.status
        crashed = was in (Status.CRASHED, Status.TIMED_OUT)
        return INVALID_CRASHED if crashed else INVALID_ACCEPTED
    return VALID if result.mode == "plain" else VALID_IN_MODES
