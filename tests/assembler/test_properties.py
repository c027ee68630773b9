"""Properties of the reference assembler, over inputs nobody wrote by hand (hypothesis).

- Whatever text it is pushed, `push` returns a list of events or raises `InferError`, and `finish`
  after any sequence returns a `Completion` or raises `InferError`: nothing else, ever.
- The same for any JSON value built from the chunk shape with fields added, removed or retyped.
- Unknown-field injection (`harness.check.modes.unknown_fields`, any seed) never changes a
  result, on the shipped recordings and on generated chunks.
- A completion's texts are the concatenation of its events' texts (content, reasoning, and each
  tool call's arguments), and its tool calls take the first non-empty id and name.

The budget here is small, to keep the default run quick; `tests/fuzz/fuzz_reference.py` is the long
run.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from harness.check.modes import unknown_fields
from harness.drive.normalize import TIMINGS_FIELDS
from harness.suite.recording import case_id_of, iter_payloads, read_recording
from reference import (
    Assembler,
    Completion,
    Content,
    ErrorKind,
    InferError,
    Progress,
    Reasoning,
    ToolCallDelta,
)
from tests.folds import each, parts

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = sorted(
    path
    for path in (ROOT / "recordings").rglob("*")
    if path.suffix in (".http", ".sse") and path.is_file()
)
EVENT_TYPES = (Progress, Reasoning, Content, ToolCallDelta)

BUDGET = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# --- running the reference ------------------------------------------------------------------------


def outcome(payloads: Iterable[str], *, capped: bool = False) -> list[Any]:
    """What the reference makes of a stream, as comparable data; raises anything but InferError."""
    asm = Assembler()
    seen: list[Any] = []
    for data in payloads:
        try:
            events = asm.push(data)
        except InferError as exc:
            seen.append(_error(exc))
            return seen
        assert type(events) is list
        assert all(isinstance(event, EVENT_TYPES) for event in events), events
        state = (asm.id, asm.reasoning_tokens, asm.in_reasoning, asm.is_finished)
        seen.append((events, state))
    try:
        completion = asm.finish(capped)
    except InferError as exc:
        seen.append(_error(exc))
    else:
        assert isinstance(completion, Completion)
        seen.append(completion)
    return seen


def _error(exc: InferError) -> tuple[str, str | None]:
    assert isinstance(exc.kind, ErrorKind)
    # Only a server error's message is part of the contract (section 4).
    return (exc.kind.value, exc.message if exc.kind is ErrorKind.SERVER else None)


# --- strategies -----------------------------------------------------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),  # NaN and infinities too: json.dumps writes them, and they are not JSON
    st.text(max_size=8),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=5,
)
texts = st.text(max_size=6)
optional_texts = st.none() | texts


@st.composite
def valid_chunks(draw: st.DrawFn) -> dict[str, Any]:
    """One chunk as llama-server sends it: every field optional, each of the right type."""
    chunk: dict[str, Any] = {"object": "chat.completion.chunk"}
    if draw(st.booleans()):
        chunk["id"] = draw(st.sampled_from(["", "chatcmpl-a", "chatcmpl-b"]))
    if draw(st.booleans()):
        chunk["choices"] = draw(st.lists(choices(), max_size=2))
    if draw(st.booleans()):
        numbers = st.none() | st.integers(0, 10**6) | st.floats(0, 1e6)
        names = draw(st.lists(st.sampled_from(TIMINGS_FIELDS), unique=True, max_size=4))
        chunk["timings"] = {name: draw(numbers) for name in names}
    if draw(st.booleans()):
        names = ("total", "cache", "processed", "time_ms")
        chunk["prompt_progress"] = {name: draw(st.none() | st.integers(0, 999)) for name in names}
    return chunk


@st.composite
def choices(draw: st.DrawFn) -> dict[str, Any]:
    delta: dict[str, Any] = {}
    for name in ("content", "reasoning_content"):
        if draw(st.booleans()):
            delta[name] = draw(optional_texts)
    if draw(st.booleans()):
        delta["tool_calls"] = draw(st.lists(tool_pieces(), max_size=2))
    reason = st.sampled_from([None, "stop", "tool_calls", "length"])
    return {"finish_reason": draw(reason), "index": 0, "delta": delta}


@st.composite
def tool_pieces(draw: st.DrawFn) -> dict[str, Any]:
    piece: dict[str, Any] = {"index": draw(st.integers(0, 2)), "type": "function"}
    if draw(st.booleans()):
        piece["id"] = draw(optional_texts)
    if draw(st.booleans()):
        piece["function"] = {"name": draw(optional_texts), "arguments": draw(optional_texts)}
    return piece


def _objects(value: Any) -> list[dict[str, Any]]:
    """Every object in `value`, outermost first."""
    found = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found.append(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


@st.composite
def mutated_chunks(draw: st.DrawFn) -> dict[str, Any]:
    """A valid chunk with one to three changes: a field added, removed, or given another type."""
    chunk = draw(valid_chunks())
    for _ in range(draw(st.integers(1, 3))):
        target = draw(st.sampled_from(_objects(chunk)))
        action = draw(st.sampled_from(["add", "remove", "retype"]))
        if action == "add" or not target:
            name = draw(st.sampled_from(READ_NAMES) | st.text(max_size=4))
            target[name] = draw(json_values)
        elif action == "remove":
            del target[draw(st.sampled_from(sorted(target)))]
        else:
            target[draw(st.sampled_from(sorted(target)))] = draw(json_values | odd_values)
    return chunk


#: Every name the shape reads somewhere; added elsewhere, they must be ignored.
READ_NAMES = sorted(
    {"id", "choices", "timings", "prompt_progress", "error", "delta", "finish_reason", "content"}
    | {"reasoning_content", "tool_calls", "index", "function", "name", "arguments", "message"}
    | {"total", "cache", "processed", "time_ms", *TIMINGS_FIELDS}
)
odd_values = st.sampled_from([-1, 1.5, 2.0, 2**53 - 1, 2**53, 1e400, True, "", "stop", "eos", []])
chunks = st.one_of(
    valid_chunks(),
    mutated_chunks(),
    st.builds(lambda message: {"error": {"message": message}}, optional_texts),
)


def dump(value: Any, ascii_only: bool) -> str:
    return json.dumps(value, ensure_ascii=ascii_only)


@st.composite
def valid_streams(draw: st.DrawFn) -> list[str]:
    """A well-formed stream: an id, texts (empty and null ones too), tool calls, a finish reason."""
    calls = 0
    predicted = 0
    payloads = []
    for position in range(draw(st.integers(1, 12))):
        delta: dict[str, Any] = {}
        for name in ("reasoning_content", "content"):
            if draw(st.booleans()):
                delta[name] = draw(st.none() | st.text(max_size=5))
        pieces = []
        for _ in range(draw(st.integers(0, 2))):
            index = draw(st.integers(0, calls))
            piece: dict[str, Any] = {"index": index}
            if index == calls:  # a new call gets its id and name in its first piece
                calls += 1
                piece["id"] = f"call-{index}"
                piece["function"] = {"name": draw(st.sampled_from(["f", "g"]))}
            else:
                if draw(st.booleans()):
                    piece["id"] = draw(st.sampled_from(["", "other", None]))
                piece["function"] = {"name": draw(st.sampled_from(["", "h", None]))}
            if draw(st.booleans()):
                piece["function"]["arguments"] = draw(st.none() | st.text(max_size=5))
            pieces.append(piece)
        if pieces:
            delta["tool_calls"] = pieces
        predicted += draw(st.integers(0, 3))
        chunk: dict[str, Any] = {
            "choices": [{"finish_reason": None, "index": 0, "delta": delta}],
            "created": 1795992403,
            "id": "chatcmpl-x" if position == 0 else draw(st.sampled_from(["chatcmpl-x", "", "y"])),
            "object": "chat.completion.chunk",
        }
        if draw(st.booleans()):
            chunk["timings"] = {"prompt_n": 3, "predicted_n": predicted, "predicted_ms": 1.5}
        if draw(st.booleans()):
            chunk["prompt_progress"] = {"total": 9, "cache": 0, "processed": 9, "time_ms": 4}
        payloads.append(dump(chunk, draw(st.booleans())))
    last = {"choices": [{"finish_reason": draw(st.sampled_from(["stop", "length"])), "delta": {}}]}
    payloads.append(json.dumps(last))
    return payloads


# --- the properties -------------------------------------------------------------------------------


@BUDGET
@given(st.lists(st.text(), max_size=4), st.booleans())
def test_any_text_gives_events_or_infer_error(payloads: list[str], capped: bool) -> None:
    outcome(payloads, capped=capped)


@BUDGET
@given(st.lists(st.text(alphabet='{}[]":,.-+0123456789eEtrufalsn \\u"dX', max_size=40), max_size=4))
def test_json_like_text_gives_events_or_infer_error(payloads: list[str]) -> None:
    outcome(payloads)


@BUDGET
@given(st.lists(chunks | json_values, max_size=4), st.booleans(), st.booleans())
def test_any_chunk_shaped_value_gives_events_or_infer_error(
    values: list[Any], ascii_only: bool, capped: bool
) -> None:
    outcome([dump(value, ascii_only) for value in values], capped=capped)


@functools.lru_cache(maxsize=256)  # more than a part's recordings: read and run once a test
def _recorded(path: Path) -> tuple[bool, tuple[str, ...], list[Any]]:
    """A recording's thinking_capped, its payloads, and the reference's outcome on them."""
    info, payloads = read_recording(path)
    plain = tuple(payload.data for payload in payloads or iter_payloads(path))
    return info.thinking_capped, plain, outcome(plain, capped=info.thinking_capped)


@pytest.mark.parametrize(
    "recordings", parts([(case_id_of(ROOT / "recordings", path), path) for path in RECORDINGS])
)
# Two seeds (Hypothesis tries 0 first, then a new random one each run), each on every recording:
# every case in unknown-fields mode at the default seed is tests/check/test_modes.py's and
# tests/assembler/test_differential.py's; five seeds cost 5 s of CPU a run for little more.
# Not shrunk: a smaller seed is no simpler, and each try runs every recording of the part.
@settings(BUDGET, max_examples=2, phases=(Phase.explicit, Phase.reuse, Phase.generate))
@given(seed=st.integers(min_value=0, max_value=2**64))
def test_unknown_fields_never_change_a_shipped_recording(
    recordings: list[tuple[str, Path]], seed: int
) -> None:
    def unchanged(path: Path) -> None:
        capped, plain, expected = _recorded(path)
        rng = random.Random(seed)
        assert outcome((unknown_fields(data, rng) for data in plain), capped=capped) == expected

    each(recordings, unchanged)


@BUDGET
@given(st.lists(chunks, max_size=3) | valid_streams(), st.booleans(), st.integers(min_value=0))
def test_unknown_fields_never_change_a_generated_stream(
    values: list[Any], ascii_only: bool, seed: int
) -> None:
    plain = [v if isinstance(v, str) else dump(v, ascii_only) for v in values]
    rng = random.Random(seed)
    assert outcome(unknown_fields(data, rng) for data in plain) == outcome(plain)


@BUDGET
@given(valid_streams())
def test_completion_texts_are_the_events_texts(payloads: list[str]) -> None:
    asm = Assembler()
    events = [event for data in payloads for event in asm.push(data)]
    completion = asm.finish(False)

    def joined(kind: type[Content] | type[Reasoning]) -> str | None:
        pieces = [event.text for event in events if isinstance(event, kind)]
        return "".join(pieces) if pieces else None

    assert completion.content == joined(Content)
    assert completion.reasoning_content == joined(Reasoning)
    deltas = [event for event in events if isinstance(event, ToolCallDelta)]
    assert len(completion.tool_calls) == len({delta.index for delta in deltas})
    for index, call in enumerate(completion.tool_calls):
        mine = [delta for delta in deltas if delta.index == index]
        assert call.arguments == "".join(delta.arguments for delta in mine)
        assert call.id == next(delta.id for delta in mine if delta.id)
        assert call.name == next(delta.name for delta in mine if delta.name)
    assert all(event.text for event in events if isinstance(event, Content | Reasoning))
