"""Deliberately broken assemblers: each gets exactly one rule wrong.

Like bowtie's miniatures, they prove the suite catches what it claims to: `tests/test_miniatures.py`
runs `conform run` on each and checks that it fails, at the field the broken rule governs. Each is
the reference with one behaviour changed, so a failure can only come from that change.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import reference
from reference import (
    Completion,
    Content,
    ErrorKind,
    FinishReason,
    InferError,
    Progress,
    Reasoning,
    Timings,
    ToolCall,
    ToolCallDelta,
)


class _Base:
    """Delegates everything to the reference; subclasses change one thing."""

    def __init__(self) -> None:
        self.inner = reference.Assembler()

    def push(self, data: str) -> list[Any]:
        return self.inner.push(data)

    @property
    def id(self) -> str | None:
        return self.inner.id

    @property
    def reasoning_tokens(self) -> int:
        return self.inner.reasoning_tokens

    @property
    def in_reasoning(self) -> bool:
        return self.inner.in_reasoning

    @property
    def is_finished(self) -> bool:
        return self.inner.is_finished

    def finish(self, thinking_capped: bool) -> Completion:
        return self.inner.finish(thinking_capped)


def _json(data: str) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def _with_completion(completion: Completion, **changes: Any) -> Completion:
    fields = {name: getattr(completion, name) for name in completion.__struct_fields__}
    fields.update(changes)
    return Completion(**fields)


class ContentBeforeReasoning(_Base):
    """R1: emits a chunk's content before its reasoning."""

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        order = {Progress: 0, Content: 1, Reasoning: 2, ToolCallDelta: 3}
        return sorted(events, key=lambda e: order[type(e)])


class EmitsEmptyContent(_Base):
    """R1: an empty `content` string still produces a content event."""

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        chunk = _json(data)
        for choice in chunk.get("choices") or [] if isinstance(chunk, dict) else []:
            if (choice.get("delta") or {}).get("content") == "":
                events.append(Content(""))
        return events


class DropsProgress(_Base):
    """R1: ignores `prompt_progress`."""

    def push(self, data: str) -> list[Any]:
        return [e for e in super().push(data) if not isinstance(e, Progress)]


class RepeatsToolCallId(_Base):
    """R1: fills the id and name of later tool-call pieces with the call's first ones."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[int, tuple[str | None, str | None]] = {}

    def push(self, data: str) -> list[Any]:
        events = []
        for e in super().push(data):
            if isinstance(e, ToolCallDelta):
                first_id, first_name = self.seen.setdefault(e.index, (e.id, e.name))
                e = ToolCallDelta(e.index, e.id or first_id, e.name or first_name, e.arguments)
            events.append(e)
        return events


class NullArguments(_Base):
    """R1: a tool-call piece without arguments carries null instead of ""."""

    def push(self, data: str) -> list[Any]:
        return [
            ToolCallDelta(e.index, e.id, e.name, e.arguments or None)  # type: ignore[arg-type]
            if isinstance(e, ToolCallDelta)
            else e
            for e in super().push(data)
        ]


class LastToolCallIdWins(_Base):
    """R2: a tool call takes the id and name of its last piece that has them."""

    def __init__(self) -> None:
        super().__init__()
        self.last: dict[int, tuple[str | None, str | None]] = {}

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        for e in events:
            if isinstance(e, ToolCallDelta):
                old_id, old_name = self.last.get(e.index, (None, None))
                self.last[e.index] = (e.id or old_id, e.name or old_name)
        return events

    def finish(self, thinking_capped: bool) -> Completion:
        completion = super().finish(thinking_capped)
        calls = tuple(
            ToolCall(self.last[i][0] or c.id, self.last[i][1] or c.name, c.arguments)
            for i, c in enumerate(completion.tool_calls)
        )
        return _with_completion(completion, tool_calls=calls)


class EmptyContentNotNull(_Base):
    """R2: a completion without answer text has content "" instead of null."""

    def finish(self, thinking_capped: bool) -> Completion:
        completion = super().finish(thinking_capped)
        return _with_completion(completion, content=completion.content or "")


class MergesTimings(_Base):
    """R3: merges each timings object into the last instead of replacing it."""

    def __init__(self) -> None:
        super().__init__()
        self.merged: dict[str, Any] = {}

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        chunk = _json(data)
        if isinstance(chunk, dict) and isinstance(chunk.get("timings"), dict):
            known = Timings.__struct_fields__
            self.merged.update({k: v for k, v in chunk["timings"].items() if k in known})
        return events

    def finish(self, thinking_capped: bool) -> Completion:
        completion = super().finish(thinking_capped)
        if completion.timings is None:
            return completion
        return _with_completion(completion, timings=Timings(**self.merged))


class CountsReasoningEvents(_Base):
    """R4: counts reasoning events instead of taking `predicted_n`."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        self.count += sum(isinstance(e, Reasoning) for e in events)
        return events

    @property
    def reasoning_tokens(self) -> int:
        return self.count

    def finish(self, thinking_capped: bool) -> Completion:
        return _with_completion(super().finish(thinking_capped), reasoning_tokens=self.count)


class ToolCallKeepsReasoning(_Base):
    """R4: a tool-call piece does not end `in_reasoning`."""

    def __init__(self) -> None:
        super().__init__()
        self.reasoning = False

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        for e in events:
            if isinstance(e, Reasoning):
                self.reasoning = True
            elif isinstance(e, Content):
                self.reasoning = False
        return events

    @property
    def in_reasoning(self) -> bool:
        return self.reasoning


class FinishesWithoutReason(_Base):
    """R5: a stream that never sent a finish reason finishes as if it had said `stop`."""

    def finish(self, thinking_capped: bool) -> Completion:
        try:
            return super().finish(thinking_capped)
        except InferError as error:
            if error.kind is not ErrorKind.STREAM_CLOSED_EARLY:
                raise
            self.inner.push('{"id": "made-up", "choices": [{"finish_reason": "stop"}]}')
            return super().finish(thinking_capped)


class AcceptsNamelessToolCall(_Base):
    """R5: finishes although a tool call never got a name."""

    def finish(self, thinking_capped: bool) -> Completion:
        try:
            return super().finish(thinking_capped)
        except InferError as error:
            if "never got a name" not in error.message:
                raise
            calls = []
            for call in self.inner._calls:
                if call.id is None:
                    raise
                calls.append(ToolCall(call.id, call.name or "", "".join(call.parts)))
            inner = self.inner
            assert inner._finish_reason is not None and inner._id is not None
            return Completion(
                inner._id,
                "".join(inner._content) or None,
                "".join(inner._reasoning) or None,
                tuple(calls),
                inner._finish_reason,
                inner._timings,
                inner._reasoning_tokens,
                thinking_capped,
            )


class SkipsAheadSilently(_Base):
    """R6: a tool-call index that skips ahead creates the missing calls instead of failing."""

    def push(self, data: str) -> list[Any]:
        try:
            return super().push(data)
        except InferError as error:
            if "out of order" not in error.message or "index -" in error.message:
                raise
            chunk = _json(data)
            return [
                ToolCallDelta(
                    call["index"],
                    call.get("id"),
                    (call.get("function") or {}).get("name"),
                    (call.get("function") or {}).get("arguments") or "",
                )
                for choice in chunk["choices"]
                for call in (choice.get("delta") or {}).get("tool_calls") or []
            ]


class AcceptsAnyFinishReason(_Base):
    """R6: an unknown finish reason is read as `stop`."""

    def push(self, data: str) -> list[Any]:
        chunk = _json(data)
        if isinstance(chunk, dict) and isinstance(chunk.get("choices"), list):
            for choice in chunk["choices"]:
                reason = choice.get("finish_reason") if isinstance(choice, dict) else None
                if isinstance(reason, str) and reason not in FinishReason.__members__.values():
                    choice["finish_reason"] = "stop"
                    return super().push(json.dumps(chunk))
        return super().push(data)


class AcceptsNaN(_Base):
    """R6: reads `NaN` (which is not JSON) as null, as Python's json module would let it."""

    def push(self, data: str) -> list[Any]:
        return super().push(data.replace("NaN", "null"))


class RaisesValueError(_Base):
    """Contract section 2: reports a protocol error with a plain ValueError (a crash)."""

    def push(self, data: str) -> list[Any]:
        try:
            return super().push(data)
        except InferError as error:
            if error.kind is ErrorKind.PROTOCOL:
                raise ValueError(error.message) from None
            raise


def _recorded_names() -> dict[str, set[str]]:
    """Every field name that the shipped recordings use, by level."""
    from harness.suite.recording import iter_payloads

    names: dict[str, set[str]] = {level: set() for level in ("top", "choice", "delta", "call")}
    root = Path(__file__).resolve().parent.parent / "recordings"
    for path in root.rglob("*"):
        if path.suffix not in (".http", ".sse"):
            continue
        for payload in iter_payloads(path):
            chunk = _json(payload.data)
            if not isinstance(chunk, dict):
                continue
            names["top"] |= set(chunk)
            for choice in chunk.get("choices") or []:
                if isinstance(choice, dict):
                    names["choice"] |= set(choice)
                    delta = choice.get("delta")
                    if isinstance(delta, dict):
                        names["delta"] |= set(delta)
                        for call in delta.get("tool_calls") or []:
                            if isinstance(call, dict):
                                names["call"] |= set(call)
    return names


class RejectsUnknownFields(_Base):
    """R7: rejects any field it has not seen in the shipped recordings (`deny_unknown_fields`).

    It passes `--mode plain` by construction and must fail `--mode unknown-fields`.
    """

    known: dict[str, set[str]] | None = None

    def push(self, data: str) -> list[Any]:
        if RejectsUnknownFields.known is None:
            RejectsUnknownFields.known = _recorded_names()
        known = RejectsUnknownFields.known
        chunk = _json(data)
        if isinstance(chunk, dict):
            unknown = set(chunk) - known["top"]
            for choice in (
                chunk.get("choices") or [] if isinstance(chunk.get("choices"), list) else []
            ):
                if isinstance(choice, dict):
                    unknown |= set(choice) - known["choice"]
                    if isinstance(choice.get("delta"), dict):
                        unknown |= set(choice["delta"]) - known["delta"]
            if unknown:
                raise InferError(ErrorKind.PROTOCOL, f"unknown fields {sorted(unknown)}")
        return super().push(data)


class ServerErrorAsProtocol(_Base):
    """R8: reports the server's error as a protocol error."""

    def push(self, data: str) -> list[Any]:
        try:
            return super().push(data)
        except InferError as error:
            if error.kind is ErrorKind.SERVER:
                raise InferError(ErrorKind.PROTOCOL, error.message) from None
            raise


class DropsServerMessage(_Base):
    """R8: loses the server's message."""

    def push(self, data: str) -> list[Any]:
        try:
            return super().push(data)
        except InferError as error:
            if error.kind is ErrorKind.SERVER:
                raise InferError(ErrorKind.SERVER, "server error") from None
            raise


class LastIdWins(_Base):
    """R9: the completion id is the last id seen, not the first."""

    def __init__(self) -> None:
        super().__init__()
        self.last: str | None = None

    def push(self, data: str) -> list[Any]:
        events = super().push(data)
        chunk = _json(data)
        if isinstance(chunk, dict) and isinstance(chunk.get("id"), str) and chunk["id"]:
            self.last = chunk["id"]
        return events

    @property
    def id(self) -> str | None:
        return self.last

    def finish(self, thinking_capped: bool) -> Completion:
        return _with_completion(super().finish(thinking_capped), id=self.last)


class ForgetsThinkingCapped(_Base):
    """Contract section 4: ignores the `thinking_capped` argument of `finish`."""

    def finish(self, thinking_capped: bool) -> Completion:
        return super().finish(False)


#: Each miniature, the mode that catches it, and a pattern the mismatch report must contain.
BATTERY: dict[str, tuple[str, str]] = {
    "ContentBeforeReasoning": ("plain", r"events\[0\]\.type"),
    "EmitsEmptyContent": ("plain", r"steps\[\d+\]\.events\[\d+\]"),
    "DropsProgress": ("plain", r"steps\[\d+\]\.events\[0\]"),
    "RepeatsToolCallId": ("plain", r"events\[\d+\]\.(id|name)"),
    "NullArguments": ("plain", r"events\[\d+\]\.arguments"),
    "LastToolCallIdWins": ("plain", r"finish\.completion\.tool_calls\[\d+\]\.(id|name)"),
    "EmptyContentNotNull": ("plain", r"finish\.completion\.content"),
    "MergesTimings": ("plain", r"finish\.completion\.timings\.\w+"),
    "CountsReasoningEvents": ("plain", r"state\.reasoning_tokens"),
    "ToolCallKeepsReasoning": ("plain", r"state\.in_reasoning"),
    "FinishesWithoutReason": ("plain", r"finish\.(error|completion)"),
    "AcceptsNamelessToolCall": ("plain", r"finish\.(error|completion)"),
    "SkipsAheadSilently": ("plain", r"steps\[\d+\]\.(error|events)"),
    "AcceptsAnyFinishReason": ("plain", r"steps\[\d+\]\.(error|events)"),
    "AcceptsNaN": ("plain", r"steps\[\d+\]\.(error|events)"),
    "RaisesValueError": ("plain", r"push raised ValueError"),
    "RejectsUnknownFields": ("unknown-fields", r"steps\[\d+\]\.(error|events)"),
    "ServerErrorAsProtocol": ("plain", r"steps\[\d+\]\.error\.kind"),
    "DropsServerMessage": ("plain", r"steps\[\d+\]\.error\.message"),
    "LastIdWins": ("plain", r"state\.id"),
    "ForgetsThinkingCapped": ("plain", r"finish\.completion\.thinking_capped"),
}
