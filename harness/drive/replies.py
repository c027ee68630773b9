"""The rules every reply follows whatever checks are asked for: no unknown field, and (in protocol
2) text references that point into the case's own payloads (docs/protocol.md).

Both walk only the few objects of a reply (events, state, completion, its tool calls and timings),
so they cost microseconds a reply and run on every one; the JSON Schemas of
`--validate-protocol` check the rest of a reply's form.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any, Protocol

import msgspec

from harness.drive.normalize import TIMINGS_FIELDS
from harness.errors import ConformError

_TOP = {
    "hello": frozenset({"seq", "name", "version", "language", "protocol"}),
    "new": frozenset({"seq", "ok"}),
    "bye": frozenset({"seq", "ok"}),
    "push": frozenset({"seq", "events", "state"}),
    "finish": frozenset({"seq", "completion"}),
}
_ERROR_REPLY = frozenset({"seq", "error"})
_ERROR = frozenset({"kind", "message"})
_EVENTS = {
    "progress": frozenset({"type", "total", "cache", "processed", "time_ms"}),
    "reasoning": frozenset({"type", "text"}),
    "content": frozenset({"type", "text"}),
    "tool_call_delta": frozenset({"type", "index", "id", "name", "arguments"}),
}
_TOOL_CALL_DELTA = _EVENTS["tool_call_delta"]
_STATE = frozenset({"id", "reasoning_tokens", "in_reasoning", "is_finished"})
_COMPLETION = frozenset(
    {
        "id",
        "content",
        "reasoning_content",
        "tool_calls",
        "finish_reason",
        "timings",
        "reasoning_tokens",
        "thinking_capped",
    }
)
_TOOL_CALL = frozenset({"id", "name", "arguments"})
_TIMINGS = frozenset(TIMINGS_FIELDS)
_NOTHING: frozenset[str] = frozenset()
_TEXT_REF = "$text"


def _extra(value: Any, known: frozenset[str], where: str) -> str | None:
    if isinstance(value, dict):
        for key in value:
            if key not in known:
                return f"{where}.{key}" if isinstance(key, str) else where
    return None


def unknown_field(op: str, reply: dict[str, Any]) -> str | None:
    """The JSON path of the first field of `reply` that the protocol does not define, or None.

    Only the objects whose fields the protocol lists are looked into; a value of a wrong type is
    left to the comparison (a mismatch) or to `--validate-protocol`.
    """
    if "error" in reply:
        return _extra(reply, _ERROR_REPLY, "$") or _extra(reply["error"], _ERROR, "$.error")
    top = _TOP.get(op, _NOTHING)
    if not reply.keys() <= top:  # (set tests first: paths are written only for a problem)
        return _extra(reply, top, "$")
    if op == "push":
        events = reply.get("events")
        for number, event in enumerate(events if isinstance(events, list) else ()):
            if isinstance(event, dict):
                known = _EVENTS.get(event.get("type"), _TOOL_CALL_DELTA)  # type: ignore[arg-type]
                if not event.keys() <= known:  # (its path is written only then)
                    return _extra(event, known, f"$.events[{number}]")
        state = reply.get("state")
        if type(state) is dict and state.keys() <= _STATE:
            return None
        return _extra(state, _STATE, "$.state")
    if op != "finish":
        return None
    completion = reply.get("completion")
    found = _extra(completion, _COMPLETION, "$.completion")
    if found is None and isinstance(completion, dict):
        calls = completion.get("tool_calls")
        for number, call in enumerate(calls if isinstance(calls, list) else ()):
            found = found or _extra(call, _TOOL_CALL, f"$.completion.tool_calls[{number}]")
        found = found or _extra(completion.get("timings"), _TIMINGS, "$.completion.timings")
    return found


_PUSH_REPLY = _TOP["push"]
_PLAIN_EVENTS = {
    kind: (known, "arguments" if "arguments" in known else "text")
    for kind, known in _EVENTS.items()
}


def plain_push(reply: dict[str, Any]) -> bool:
    """True for the usual reply to `push`: `seq`, a list of `events` and a `state`, every event
    of a known type with only its own fields and its text a string (no text reference), and
    only the state's four fields. For such a reply `unknown_field` finds nothing and
    `resolve_texts` has nothing to resolve; any other reply (False) takes them both."""
    if len(reply) != 3 or reply.keys() != _PUSH_REPLY:
        return False
    state = reply["state"]
    if type(state) is not dict or not state.keys() <= _STATE:
        return False
    events = reply["events"]
    if type(events) is not list:
        return False
    for event in events:
        if type(event) is not dict:
            return False
        found = _PLAIN_EVENTS.get(event.get("type"))  # type: ignore[arg-type]
        if found is None or not event.keys() <= found[0] or type(event.get(found[1])) is dict:
            return False
    return True


# The usual push reply as types, in the golden files' order: what `plain_push_line` reads in one
# pass. Each event kind, the state and the reply take only their own fields, each of its type.


class _Progress(msgspec.Struct, tag="progress", tag_field="type", forbid_unknown_fields=True):
    total: int | None
    cache: int | None
    processed: int | None
    time_ms: int | None


class _Reasoning(msgspec.Struct, tag="reasoning", tag_field="type", forbid_unknown_fields=True):
    text: str


class _Content(msgspec.Struct, tag="content", tag_field="type", forbid_unknown_fields=True):
    text: str


class _ToolCallDelta(
    msgspec.Struct, tag="tool_call_delta", tag_field="type", forbid_unknown_fields=True
):
    index: int
    id: str | None
    name: str | None
    arguments: str


class _State(msgspec.Struct, forbid_unknown_fields=True):
    id: str | None
    reasoning_tokens: int
    in_reasoning: bool
    is_finished: bool


class _PlainPush(msgspec.Struct, forbid_unknown_fields=True):
    seq: int
    events: list[_Progress | _Reasoning | _Content | _ToolCallDelta]
    state: _State


_decode_plain_push = msgspec.json.Decoder(_PlainPush).decode
_builtins = msgspec.to_builtins


def plain_push_line(line: bytes) -> tuple[int, list[dict[str, Any]], dict[str, Any]] | None:
    """The usual reply to `push` read from its line in one pass: its `seq`, `events` and `state`,
    each event and the state with all their fields and only those, each of its own type (a
    string text, an integer index, ...: no text reference, no `$number`), as `plain_push` of
    the decoded line gives them; None for any other line, which takes the general way (and
    there shows as the same mismatch, garbage or reference it always was)."""
    try:
        reply = _decode_plain_push(line)
    except (ValueError, RecursionError):  # (msgspec's DecodeError is a ValueError)
        return None
    return reply.seq, _builtins(reply.events), _builtins(reply.state)


Slices = dict[tuple[int, int, int], str]  # texts resolved this case, reused (not copied) later


class SharedTexts(Protocol):
    """Protocol 4: the file the program writes its replies' long texts into."""

    def text(self, at: int, size: int) -> tuple[str | None, str | None]: ...


_SHARED_PIECE = frozenset({"at", "bytes"})


def _shared_text(
    piece: dict[str, Any], replies: SharedTexts | None, where: str, slices: Slices
) -> tuple[str | None, str | None]:
    """A piece `{"at": offset, "bytes": size}` of protocol 4: its text, or what is wrong."""
    at, size = piece.get("at"), piece.get("bytes")
    if replies is None:
        return None, f"{where} is in the replies' file of protocol 4, which was not agreed"
    if piece.keys() != _SHARED_PIECE or type(at) is not int or type(size) is not int:
        return None, f'{where} must be {{"at": offset, "bytes": size}}'
    if at < 0 or size < 0:
        return None, f"{where} is {{at: {at}, bytes: {size}}}: both must be non-negative"
    key = (-1, at, size)  # (no push has seq -1)
    text = slices.get(key)
    if text is None:
        text, problem = replies.text(at, size)
        if text is None:
            return None, f"{where}: {problem}"
        slices[key] = text
    return text, None


#: The characters the texts of one reply may stand for, references resolved: as much as a reply
#: line in the pipe may hold (a reply of a few bytes must not make the harness hold gigabytes).
MAX_REPLY_TEXT = 256 * 1024 * 1024


#: The pieces (references and strings) the texts of one reply may have: `PIECES_PER_PUSH` for
#: each push of the case so far, and `PIECES_BASE`. conform's own worker sends a completion's
#: text as one piece per event; a program that answered each push with millions of one-character
#: references once took the harness to 3.3 GB and 50 s for one case.
PIECES_PER_PUSH, PIECES_BASE = 4, 4096


class _Budget:
    """What is left of `MAX_REPLY_TEXT`, and of the pieces allowed, for the reply being
    resolved (a case of `pushes` pushes so far)."""

    def __init__(self, pushes: int = 0) -> None:
        self.left = MAX_REPLY_TEXT
        self.pieces = self.allowed = PIECES_PER_PUSH * pushes + PIECES_BASE

    def take(self, size: int, where: str) -> str | None:
        """None when `size` more characters (or bytes, which are never fewer) fit; else why not."""
        if size > self.left:
            return f"{where} would make the reply's texts longer than {MAX_REPLY_TEXT:,} characters"
        self.left -= size
        return None

    def count(self, pieces: int, where: str) -> str | None:
        """None when `pieces` more pieces fit; else why not (the limit named)."""
        self.pieces -= pieces
        if self.pieces >= 0:
            return None
        return (
            f"{where}: the reply's texts have more than {self.allowed:,} pieces, conform's limit "
            f"({PIECES_PER_PUSH} for each push of the case so far, and {PIECES_BASE:,})"
        )


def _text(
    value: Any,
    payloads: dict[int, str],
    where: str,
    slices: Slices,
    replies: SharedTexts | None = None,
    budget: _Budget | None = None,
) -> tuple[str | None, str | None]:
    """(the text a reference stands for, None) or (None, what is wrong with it)."""
    pieces = value.get(_TEXT_REF)
    if len(value) != 1 or not isinstance(pieces, list):
        return None, f'{where} must be a string or {{"$text": [piece, ...]}}'
    budget = _Budget(len(payloads)) if budget is None else budget
    problem = budget.count(len(pieces), f"{where}.$text")
    if problem is not None:
        return None, problem
    parts: list[str] = []
    for number, piece in enumerate(pieces):
        if isinstance(piece, str):
            parts.append(piece)
            continue
        if isinstance(piece, dict):
            size = piece.get("bytes")
            if type(size) is int and size > 0:
                problem = budget.take(size, f"{where}.$text[{number}]")
                if problem is not None:
                    return None, problem
            text, problem = _shared_text(piece, replies, f"{where}.$text[{number}]", slices)
            if text is None:
                return None, problem
            parts.append(text)
            continue
        ok = (
            isinstance(piece, list)
            and len(piece) == 3
            and all(type(n) is int for n in piece)
            and piece[0] in payloads
        )
        if not ok:
            shared = ' or {"at": offset, "bytes": size}' if replies is not None else ""
            return None, f"{where}.$text[{number}] must be a string or [seq, start, end]{shared}"
        seq, start, end = piece
        data = payloads[seq]
        if not 0 <= start <= end <= len(data):
            return None, (
                f"{where}.$text[{number}] is [{seq}, {start}, {end}], outside the {len(data):,} "
                f"characters of push {seq}'s data"
            )
        problem = budget.take(end - start, f"{where}.$text[{number}]")
        if problem is not None:
            return None, problem
        key = (seq, start, end)
        text = slices.get(key)
        if text is None:  # the completion's text is often one event's: the same string object
            text = slices[key] = data[start:end]
        parts.append(text)
    return "".join(parts), None


def _resolve_in(
    obj: Any,
    key: str,
    payloads: dict[int, str],
    where: str,
    slices: Slices,
    replies: SharedTexts | None,
    budget: _Budget,
) -> str | None:
    # An object that is no reference (no "$text") is a value of the wrong type, as in version 1:
    # a mismatch, shown against the golden text, not garbage.
    value = obj.get(key) if isinstance(obj, dict) else None
    if isinstance(value, dict) and _TEXT_REF in value:
        text, problem = _text(obj[key], payloads, f"{where}.{key}", slices, replies, budget)
        if problem is not None:
            return problem
        obj[key] = text
    return None


def resolve_texts(
    op: str,
    reply: dict[str, Any],
    payloads: dict[int, str],
    slices: Slices | None = None,
    replies: SharedTexts | None = None,
) -> str | None:
    """Replace each text reference of a protocol-2 reply by its text, in place; what is wrong
    with the first bad one, or None.

    `payloads` maps the `seq` of each push of the case so far to the payload it carried;
    `slices` keeps the case's resolved texts, so that a text referenced again is not copied again;
    `replies` is the file of protocol 4 (None in 2 and 3, where a piece in it is garbage).
    """
    slices = {} if slices is None else slices
    budget = _Budget(len(payloads))  # for the whole reply
    if op == "push":
        events = reply.get("events")
        for number, event in enumerate(events if isinstance(events, list) else ()):
            if isinstance(event, dict):
                key = "arguments" if "arguments" in event else "text"
                if isinstance(event.get(key), dict):  # (its path is written only then)
                    where = f"$.events[{number}]"
                    problem = _resolve_in(event, key, payloads, where, slices, replies, budget)
                    if problem is not None:
                        return problem
    elif op == "finish":
        completion = reply.get("completion")
        for key in ("content", "reasoning_content"):
            problem = _resolve_in(
                completion, key, payloads, "$.completion", slices, replies, budget
            )
            if problem is not None:
                return problem
        calls = completion.get("tool_calls") if isinstance(completion, dict) else None
        for number, call in enumerate(calls if isinstance(calls, list) else ()):
            where = f"$.completion.tool_calls[{number}]"
            problem = _resolve_in(call, "arguments", payloads, where, slices, replies, budget)
            if problem is not None:
                return problem
    return None


NUMBER_MARK = b'"$number"'
_NUMBERS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def resolve_numbers(reply: dict[str, Any]) -> str | None:
    """Replace each `{"$number": "NaN"}` (or `"Infinity"`, `"-Infinity"`) of a protocol-2 reply
    by that float, in place; what is wrong with the first bad one, or None."""
    stack: list[Any] = [reply]
    while stack:
        item = stack.pop()
        pairs = item.items() if isinstance(item, dict) else enumerate(item)
        for key, value in list(pairs):
            if isinstance(value, dict) and "$number" in value:
                name = value["$number"]
                if len(value) != 1 or name not in _NUMBERS:
                    return '{"$number": ...} must hold exactly "NaN", "Infinity" or "-Infinity"'
                item[key] = _NUMBERS[name]
            elif isinstance(value, dict | list):
                stack.append(value)
    return None


_SCHEMAS = {
    "hello": "reply-hello",
    "new": "reply-ok",
    "push": "reply-push",
    "finish": "reply-finish",
    "bye": "reply-ok",
}


class Validator:
    """Checks replies against the protocol's JSON Schemas (`--validate-protocol`)."""

    def __init__(self) -> None:
        try:
            import jsonschema  # type: ignore[import-untyped]
        except ImportError:
            raise ConformError(
                "--validate-protocol needs the jsonschema package",
                hint="pip install 'jsonschema>=4.20'",
            ) from None
        folder = resources.files("harness").joinpath("schemas")
        self._validators: dict[str, Any] = {}
        for op, name in _SCHEMAS.items():
            schema = json.loads(folder.joinpath(f"{name}.schema.json").read_text("utf-8"))
            self._validators[op] = jsonschema.Draft202012Validator(schema)
        self._best_match = jsonschema.exceptions.best_match

    def problem(self, op: str, reply: Any) -> str | None:
        """What is wrong with `reply` to `op`, or None when it follows the schema."""
        error = self._best_match(self._validators[op].iter_errors(reply))
        if error is None:
            return None
        where = error.json_path
        return f"{error.message} (at {where})" if where != "$" else str(error.message)


def is_error_reply(reply: dict[str, Any]) -> bool:
    """True when `reply` carries an error object."""
    return isinstance(reply.get("error"), dict)


def said(reply: dict[str, Any]) -> str:
    """`kind: message`: the program's own words for its error (shown, not compared)."""
    error = reply["error"]
    message = error.get("message")
    text = message if isinstance(message, str) else f"(a {type(message).__name__}, not a message)"
    return f"{error['kind']}: {text}"


def contract_error(reply: dict[str, Any]) -> dict[str, Any]:
    """The golden error object of an error reply of one of the contract's kinds."""
    error = reply["error"]
    if error["kind"] == "server":
        return {"kind": "server", "message": error.get("message")}
    return {"kind": error["kind"]}
