"""The form every reply of the line protocol must have, whatever checks are asked for: no field
the protocol does not define (`unknown_field`, always), and with `--validate-protocol` the
protocol's JSON Schemas (`Validator`, `harness/schemas/`). `harness.drive.messages` reads each
reply through both; what a reply's values are is left to the comparison with the golden file.
"""

from __future__ import annotations

import json
from typing import Any

from harness.drive.normalize import TIMINGS_FIELDS
from harness.errors import ConformError

#: The fields of each reply.
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
_TOOL_CALL_DELTA = _EVENTS["tool_call_delta"]  # (an event of no known type: as if a tool call's)
_TOOL_CALL = frozenset({"id", "name", "arguments"})
_TIMINGS = frozenset(TIMINGS_FIELDS)


def _extra(value: Any, known: frozenset[str], where: str) -> str | None:
    """The path of `value`'s first member that `known` does not hold (`value` an object)."""
    for key in value:
        if key not in known:
            return f"{where}.{key}" if isinstance(key, str) else where
    return None


def _fits(value: Any, known: frozenset[str]) -> bool:
    """True unless `value` is an object with a member `known` does not hold."""
    return not isinstance(value, dict) or value.keys() <= known


def unknown_field(op: str, reply: dict[str, Any]) -> str | None:
    """The JSON path of the first field of `reply` that the protocol does not define, or None.

    Only the objects whose fields the protocol lists are looked into; a value of a wrong type is
    left to the comparison (a mismatch) or to `--validate-protocol`. (A path is written only for
    an object that does not fit.)
    """
    if "error" in reply:
        if not _fits(reply, _ERROR_REPLY):
            return _extra(reply, _ERROR_REPLY, "$")
        error = reply["error"]
        return None if _fits(error, _ERROR) else _extra(error, _ERROR, "$.error")
    top = _TOP.get(op, frozenset())
    if not _fits(reply, top):
        return _extra(reply, top, "$")
    if op == "push":
        events = reply.get("events")
        for number, event in enumerate(events if isinstance(events, list) else ()):
            kind = event.get("type") if isinstance(event, dict) else None
            known = (
                _EVENTS.get(kind, _TOOL_CALL_DELTA) if isinstance(kind, str) else _TOOL_CALL_DELTA
            )
            if not _fits(event, known):
                return _extra(event, known, f"$.events[{number}]")
        state = reply.get("state")
        return None if _fits(state, _STATE) else _extra(state, _STATE, "$.state")
    if op != "finish":
        return None
    completion = reply.get("completion")
    if not _fits(completion, _COMPLETION):
        return _extra(completion, _COMPLETION, "$.completion")
    if not isinstance(completion, dict):
        return None
    calls = completion.get("tool_calls")
    for number, call in enumerate(calls if isinstance(calls, list) else ()):
        if not _fits(call, _TOOL_CALL):
            return _extra(call, _TOOL_CALL, f"$.completion.tool_calls[{number}]")
    timings = completion.get("timings")
    return None if _fits(timings, _TIMINGS) else _extra(timings, _TIMINGS, "$.completion.timings")


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
        from importlib import resources  # here: only --validate-protocol reads the schemas

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
