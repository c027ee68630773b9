"""The shortcuts that tests/check/test_modes.py's modes catch: the reference with one thing
changed, each failing only in the mode that breaks its shortcut. A module of their own, so that a
worker running one imports this alone, not the test module (pytest, the command line)."""

from __future__ import annotations

import json
import re
from typing import Any

import reference
from tests.miniatures import _Base as _Wrapper  # the reference, with one thing to change


class IndexIsFirstMember(_Wrapper):
    """Reads a tool call's index as the first member of its object, where llama-server puts it."""

    def push(self, data: str) -> list[Any]:
        events = self.inner.push(data)
        calls = [
            call
            for choice in json.loads(data, object_pairs_hook=list)
            if choice[0] == "choices"
            for entry in choice[1] or ()
            for key, delta in entry
            if key == "delta" and delta
            for name, calls in delta
            if name == "tool_calls" and calls
            for call in calls
        ]
        pieces = iter(calls)
        return [
            reference.ToolCallDelta(next(pieces)[0][1], e.id, e.name, e.arguments)
            if isinstance(e, reference.ToolCallDelta)
            else e
            for e in events
        ]


class FinishReasonByRegex(_Wrapper):
    """Spots the finish reason in the raw text, as written without white space."""

    _FINISHED = re.compile(r'"finish_reason":"(stop|length|tool_calls)"')

    def __init__(self) -> None:
        super().__init__()
        self.finished = False

    def push(self, data: str) -> list[Any]:
        events = self.inner.push(data)
        self.finished = self.finished or bool(self._FINISHED.search(data))
        return events

    @property
    def is_finished(self) -> bool:
        return self.finished


class ContentKeyFastPath(_Wrapper):
    """Drops content events from payloads whose raw text has no `"content"` key (a fast path)."""

    def push(self, data: str) -> list[Any]:
        events = self.inner.push(data)
        if '"content"' in data:
            return events
        return [e for e in events if not isinstance(e, reference.Content)]


class ToolCallMeansFinished(_Wrapper):
    """Assumes a stream cut inside a tool call's arguments ended there: no closed-early error
    then. (A stream whose complete calls end without a finish reason is a plain case:
    synthetic/tool_pairs/no_finish_reason.)"""

    def __init__(self) -> None:
        super().__init__()
        self.arguments: dict[int, str] = {}

    def push(self, data: str) -> list[Any]:
        events = self.inner.push(data)
        for e in events:
            if isinstance(e, reference.ToolCallDelta):
                self.arguments[e.index] = self.arguments.get(e.index, "") + e.arguments
        return events

    def finish(self, thinking_capped: bool) -> Any:
        if (
            any(not _is_json(text) for text in self.arguments.values())
            and not self.inner.is_finished
        ):
            self.inner.push('{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}')
        return self.inner.finish(thinking_capped)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
