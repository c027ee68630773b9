"""The targets of tests/check/test_levels.py: right completions with wrong events, and the
reverse. A module of their own, so that a worker running one imports this alone."""

from __future__ import annotations

from typing import Any

import msgspec

import reference


class SnapshotEvents(reference.Assembler):
    """A client whose events are snapshots (the whole text so far) and that never reports its
    reasoning state, but whose completions and errors are right."""

    def __init__(self) -> None:
        super().__init__()
        self._texts: dict[str, str] = {}

    def push(self, data: str) -> list[Any]:
        events = []
        for event in super().push(data):
            if isinstance(event, reference.Content | reference.Reasoning):
                kind = type(event).__name__
                self._texts[kind] = self._texts.get(kind, "") + event.text
                event = type(event)(self._texts[kind])
            events.append(event)
        return events

    @property
    def in_reasoning(self) -> bool:
        return False


class WrongCompletion(reference.Assembler):
    """Right events, but the completion's content loses its first piece."""

    def finish(self, thinking_capped: bool) -> Any:
        completion = super().finish(thinking_capped)
        if completion.content:
            completion = msgspec.structs.replace(completion, content=completion.content[1:])
        return completion
