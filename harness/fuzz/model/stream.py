"""One generated stream: its payloads, how they are framed as an event stream, and its features.

`Stream.sse` writes it as a `.sse` recording's text; `Stream.payload_records` gives the payloads
with the line each one's first `data:` line stands on, without reading that text back (the event
stream reader would give the same: tests/fuzz/test_model.py holds them equal).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from harness.suite.sse import Payload


@dataclass(frozen=True)
class Stream:
    """One generated stream: its payloads (the data of each event), how they are framed, and the
    features it used."""

    payloads: tuple[str, ...]
    features: tuple[str, ...]
    thinking_capped: bool = False
    done: bool = True  # `[DONE]` after the last payload
    line_end: str = "\n"
    space: bool = True  # `data: x` rather than `data:x`
    pings: frozenset[int] = frozenset()  # a `:` comment line before these payloads
    other_fields: frozenset[int] = frozenset()  # `event:` / `id:` / `retry:` lines before these
    unterminated: bool = False  # no blank line after the last event
    broken: str = ""  # the breaker applied, "" when none

    def sse(self, comments: tuple[str, ...] = ()) -> str:
        """The event stream as a `.sse` recording's text, `comments` as its leading `:` lines."""
        end = self.line_end
        out = [f": {line}{end}" if line else f":{end}" for line in comments]
        events = [*self.payloads, "[DONE]"] if self.done else list(self.payloads)
        last = len(events) - 1
        for index, payload in enumerate(events):
            if index in self.pings:
                out.append(f":{end}")
            if index in self.other_fields:
                out.append(f"event: message{end}id: {index}{end}retry: 3000{end}")
            for part in payload.split("\n"):
                glue = "data: " if self.space or part.startswith(" ") or not part else "data:"
                out.append(f"{glue}{part}{end}")
            if not (self.unterminated and index == last):
                out.append(end)
        return "".join(out)

    def payload_records(self, comments: int = 0) -> list[Payload]:
        """The payloads as the recording's reader gives them (each with the line of its first
        `data:` line), for a recording with `comments` leading comment lines."""
        line = comments + 1
        found = []
        pings, other = self.pings, self.other_fields
        for index, payload in enumerate(self.payloads):
            if index in pings:
                line += 1
            if index in other:
                line += 3
            found.append(Payload(line, payload))
            line += payload.count("\n") + 2
        return found

    def without(self, indices: set[int]) -> Stream:
        """This stream without the payloads at `indices` (their framing lines go with them)."""
        kept = [i for i in range(len(self.payloads)) if i not in indices]
        renumber = {old: new for new, old in enumerate(kept)}
        renumber[len(self.payloads)] = len(kept)  # `[DONE]`'s own event
        return replace(
            self,
            payloads=tuple(self.payloads[i] for i in kept),
            pings=frozenset(renumber[i] for i in self.pings if i in renumber),
            other_fields=frozenset(renumber[i] for i in self.other_fields if i in renumber),
        )
