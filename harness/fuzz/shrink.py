"""Shrinking a stream a target fails on to a small one it still fails on the same way.

Delta debugging, as C-Reduce and Hypothesis do it, from the coarsest cut to the finest: whole
payloads (halves, quarters, ... single ones), the event stream's framing (line ends, comment
lines, `[DONE]`), whole tool calls (every piece of one call, the later calls renumbered), the
members and elements of each payload (outer ones first, so a whole subtree goes in one try), the
characters of each string value, and the characters of a payload that is not JSON. Each pass runs
again while another made progress. A cut is kept when `fails` says the smaller stream still
fails the same way; `fails` counts the budget and raises `Spent` when it is used up, which ends
shrinking with the smallest stream so far (as a KeyboardInterrupt does: `Shrinker.best` holds it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from harness.fuzz import spans
from harness.fuzz.model.stream import Stream


class Spent(Exception):
    """The shrinking budget (tries or time) is used up."""


def size(stream: Stream) -> tuple[int, int]:
    """How big a stream is: payloads, then characters (smaller is a better report)."""
    return (len(stream.payloads), sum(map(len, stream.payloads)))


class Shrinker:
    """Shrinks `stream` while `fails` holds; `best` is the smallest failing stream so far."""

    def __init__(self, stream: Stream, fails: Callable[[Stream], bool]) -> None:
        self.best = stream
        self._fails = fails

    def _try(self, candidate: Stream) -> bool:
        if candidate == self.best or size(candidate) > size(self.best):
            return False
        if self._fails(candidate):
            self.best = candidate
            return True
        return False

    def run(self) -> Stream:
        """Shrink until no pass makes progress (or `Spent`, or Ctrl-C: `best` stands)."""
        try:
            progress = True
            while progress:
                before = self.best
                for shrink_pass in (
                    self._payloads,
                    self._framing,
                    self._tool_calls,
                    self._members,
                    self._strings,
                    self._characters,
                ):
                    shrink_pass()
                progress = self.best != before
        except Spent:
            pass
        return self.best

    # --- whole payloads ---------------------------------------------------------------------

    def _payloads(self) -> None:
        chunk = max(1, len(self.best.payloads) // 2)
        while chunk >= 1:
            start = 0
            while start < len(self.best.payloads):
                cut = set(range(start, min(start + chunk, len(self.best.payloads))))
                if len(cut) == len(self.best.payloads) or not self._try(self.best.without(cut)):
                    start += chunk
            chunk //= 2

    # --- framing ----------------------------------------------------------------------------

    def _framing(self) -> None:
        changes: dict[str, Any]
        for changes in (
            {"line_end": "\n"},
            {"pings": frozenset()},
            {"other_fields": frozenset()},
            {"space": True},
            {"unterminated": False},
            {"done": True},
            {"thinking_capped": False},
        ):
            candidate = replace(self.best, **changes)
            if candidate != self.best:
                self._try(candidate)

    # --- payload texts ----------------------------------------------------------------------

    def _with_payload(self, index: int, text: str) -> Stream:
        payloads = list(self.best.payloads)
        payloads[index] = text
        return replace(self.best, payloads=tuple(payloads))

    def _members(self) -> None:
        for index in range(len(self.best.payloads)):
            at = 0
            while True:
                text = self.best.payloads[index]
                tree = spans.parse(text)
                if tree is None:
                    break
                cuts = [
                    spans.without_part(text, container, part)
                    for container in spans.walk(tree)
                    for part in range(len(container.parts))
                ]
                if at >= len(cuts):
                    break
                if not self._try(self._with_payload(index, cuts[at])):
                    at += 1

    def _strings(self) -> None:
        for index in range(len(self.best.payloads)):
            at = 0
            while True:
                text = self.best.payloads[index]
                tree = spans.parse(text)
                values = spans.strings(tree) if tree is not None else []
                if at >= len(values):
                    break
                node = values[at]
                if not self._shorten_string(index, text, node):
                    at += 1

    def _shorten_string(self, index: int, text: str, node: spans.Node) -> bool:
        """Try shorter texts for one string value; True when one was kept."""
        raw = text[node.start : node.end]
        try:
            value = json.loads(raw)
        except ValueError:  # a lone surrogate escape: json.loads reads it, but keep it whole
            return False
        if not isinstance(value, str) or not value:
            return False
        ascii = "\\u" in raw
        for shorter in _shorter(value):
            spelled = json.dumps(shorter, ensure_ascii=ascii)
            candidate = text[: node.start] + spelled + text[node.end :]
            if self._try(self._with_payload(index, candidate)):
                return True
        return False

    def _characters(self) -> None:
        for index in range(len(self.best.payloads)):
            if spans.parse(self.best.payloads[index]) is not None:
                continue
            chunk = max(1, len(self.best.payloads[index]) // 2)
            while chunk >= 1:
                start = 0
                while start < len(self.best.payloads[index]):
                    text = self.best.payloads[index]
                    candidate = text[:start] + text[start + chunk :]
                    if not self._try(self._with_payload(index, candidate)):
                        start += chunk
                chunk //= 2

    # --- whole tool calls -------------------------------------------------------------------

    def _tool_calls(self) -> None:
        index = 0
        while index < _call_count(self.best):
            if not self._try(_without_call(self.best, index)):
                index += 1


def _shorter(value: str) -> Iterator[str]:
    """Shorter versions of `value`: empty, then with halves, quarters, ... cut out."""
    yield ""
    chunk = len(value) // 2
    while chunk >= 1:
        for start in range(0, len(value), chunk):
            yield value[:start] + value[start + chunk :]
        chunk //= 2


_INDEX_KEY = '"index"'
_INTEGER = re.compile(r"(?:0|[1-9][0-9]*)")


def _calls_of(tree: spans.Node) -> list[tuple[spans.Node, int, int]]:
    """Each tool-call piece of a chunk: (its tool_calls array, its position there, its index)."""
    found = []
    choices = spans.member(tree, '"choices"') if tree.kind == "object" else None
    for _, _, _, choice in choices.parts if choices is not None and choices.kind == "array" else ():
        delta = spans.member(choice, '"delta"') if choice.kind == "object" else None
        calls = (
            spans.member(delta, '"tool_calls"')
            if delta is not None and delta.kind == "object"
            else None
        )
        if calls is None or calls.kind != "array":
            continue
        for position, (_, _, _, call) in enumerate(calls.parts):
            number = spans.member(call, _INDEX_KEY) if call.kind == "object" else None
            if number is not None and number.kind == "number":
                found.append((calls, position, number.start))
    return found


def _call_count(stream: Stream) -> int:
    highest = -1
    for text in stream.payloads:
        tree = spans.parse(text)
        if tree is None:
            continue
        for _, _, at in _calls_of(tree):
            match = _INTEGER.match(text, at)
            if match is not None and match.end() == _number_end(text, at):
                highest = max(highest, int(match.group()))
    return highest + 1


def _number_end(text: str, at: int) -> int:
    end = at
    while end < len(text) and text[end] in "0123456789.eE+-":
        end += 1
    return end


def _without_call(stream: Stream, number: int) -> Stream:
    """`stream` without every piece of tool call `number`, the calls after it renumbered."""
    payloads = []
    for text in stream.payloads:
        tree = spans.parse(text)
        if tree is None:
            payloads.append(text)
            continue
        arrays: dict[int, tuple[spans.Node, dict[int, tuple[int, int, int]]]] = {}
        for calls, position, at in _calls_of(tree):
            end = _number_end(text, at)
            if _INTEGER.fullmatch(text, at, end) is not None:
                found = arrays.setdefault(id(calls), (calls, {}))[1]
                found[position] = (at, end, int(text[at:end]))
        edits: list[tuple[int, int, str]] = []  # (start, end, replacement), none overlapping
        for calls, indices in arrays.values():
            if all(value < number for _, _, value in indices.values()):
                continue
            kept = []
            for position, (start, end, _, _) in enumerate(calls.parts):
                piece = text[start:end]
                if position in indices:
                    at, stop, value = indices[position]
                    if value == number:
                        continue
                    if value > number:
                        piece = piece[: at - start] + str(value - 1) + piece[stop - start :]
                kept.append(piece)
            edits.append((calls.start, calls.end, "[" + ",".join(kept) + "]"))
        for start, end, replacement in sorted(edits, reverse=True):
            text = text[:start] + replacement + text[end:]
        payloads.append(text)
    return replace(stream, payloads=tuple(payloads))
