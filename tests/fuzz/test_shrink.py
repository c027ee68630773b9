"""Shrinking (harness/fuzz/shrink.py) and the spans it cuts at (harness/fuzz/spans.py).

Each test gives the shrinker a property of the stream that stands for a bug ("a tool call with
this name", "a payload that is not JSON") and checks that what is left is the least that keeps it:
no payload, tool call, member or character it does not need.
"""

from __future__ import annotations

import json

import pytest

from harness.fuzz import spans
from harness.fuzz.model.stream import Stream
from harness.fuzz.shrink import Shrinker, Spent


def _call(index: int, name: str | None = None, args: str = "") -> str:
    function: dict[str, object] = {"arguments": args}
    if name is not None:
        function["name"] = name
    piece = (
        {"index": index, "id": f"c{index}", "function": function}
        if name
        else {
            "index": index,
            "function": function,
        }
    )
    return json.dumps({"id": "x", "choices": [{"index": 0, "delta": {"tool_calls": [piece]}}]})


def _calls(stream: Stream) -> list[dict[str, object]]:
    found = []
    for payload in stream.payloads:
        try:
            chunk = json.loads(payload)
        except ValueError:
            continue
        for choice in chunk.get("choices") or ():
            found += (choice.get("delta") or {}).get("tool_calls") or ()
    return found


def test_tool_calls_it_does_not_need_go_and_the_rest_are_renumbered() -> None:
    # Issue 36: a shrunk stream kept three tool calls it did not need. The "bug" here needs only
    # one call named `bad`, which is call 3 of 4 and split over two pieces.
    stream = Stream(
        payloads=(
            _call(0, "read_file", '{"a":'),
            _call(1, "search"),
            _call(2, "f", "{}"),
            _call(0, args="1}"),
            _call(3, "bad", '{"x"'),
            _call(3, args=":2}"),
            json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        ),
        features=(),
    )

    def fails(candidate: Stream) -> bool:
        calls = _calls(candidate)
        named = [c for c in calls if (c.get("function") or {}).get("name") == "bad"]  # type: ignore[union-attr]
        # the call must stay valid: indices from 0 without a gap
        indices = [c.get("index") for c in calls]
        if not all(isinstance(i, int) for i in indices):
            return False
        return bool(named) and sorted(set(indices)) == list(range(len(set(indices))))  # type: ignore[arg-type]

    shrunk = Shrinker(stream, fails).run()
    calls = _calls(shrunk)
    assert len(shrunk.payloads) == 1, shrunk.payloads
    assert [c["index"] for c in calls] == [0]
    assert calls[0]["function"] == {"name": "bad"}


def test_members_and_characters_it_does_not_need_go() -> None:
    chunk = {
        "id": "chatcmpl-123",
        "model": "qwen3",
        "choices": [{"index": 0, "delta": {"content": "Hello world, and more"}}],
        "timings": {"predicted_n": 3, "prompt_ms": 1.5},
    }
    stream = Stream(payloads=(json.dumps(chunk),), features=(), pings=frozenset({0}))
    shrunk = Shrinker(stream, lambda s: "world" in s.payloads[0]).run()
    assert shrunk.payloads == ('{"choices": [{"delta": {"content": "world"}}]}',)
    assert shrunk.pings == frozenset()


def test_a_payload_that_is_not_json_is_cut_by_characters() -> None:
    stream = Stream(payloads=('{"choices": [], "x": NaN, "y": 1}',), features=())
    shrunk = Shrinker(stream, lambda s: "NaN" in "".join(s.payloads)).run()
    assert shrunk.payloads == ("NaN",)


def test_the_budget_ends_shrinking_with_the_smallest_stream_so_far() -> None:
    stream = Stream(payloads=tuple(json.dumps({"n": n}) for n in range(8)), features=())
    tries = []

    def fails(candidate: Stream) -> bool:
        tries.append(candidate)
        if len(tries) > 3:
            raise Spent
        return True

    shrinker = Shrinker(stream, fails)
    shrunk = shrinker.run()
    assert shrunk == shrinker.best
    assert len(shrunk.payloads) < len(stream.payloads)


def test_ctrl_c_leaves_the_smallest_stream_so_far_in_best() -> None:
    stream = Stream(payloads=tuple(json.dumps({"n": n}) for n in range(8)), features=())
    tries = []

    def fails(candidate: Stream) -> bool:
        tries.append(candidate)
        if len(tries) > 2:
            raise KeyboardInterrupt
        return True

    shrinker = Shrinker(stream, fails)
    with pytest.raises(KeyboardInterrupt):
        shrinker.run()
    assert len(shrinker.best.payloads) < len(stream.payloads)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, 2.0, -0, 1e5], "b": {"c": "\\u00e9\\""}, "a": null}',
        "[]",
        '"x"',
        "{ }",
        "[" * 200 + "]" * 200,
    ],
)
def test_spans_cover_the_text_as_written(text: str) -> None:
    tree = spans.parse(text)
    assert tree is not None and (tree.start, tree.end) == (0, len(text))
    for container in spans.walk(tree):
        for part in range(len(container.parts)):
            cut = spans.without_part(text, container, part)
            json.loads(cut)  # still JSON


@pytest.mark.parametrize("text", ["{", '{"a" 1}', "[1,]", "NaN", '{"a": 1} x', ""])
def test_text_that_is_not_json_has_no_spans(text: str) -> None:
    assert spans.parse(text) is None
