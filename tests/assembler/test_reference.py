"""The reference on what the shipped suite cannot hold cheaply (contract section 6): payloads of
16 MiB and more, and many tool calls whose pieces arrive in any order."""

from __future__ import annotations

import json
import random

import reference

MIB = 1024 * 1024


def _chunk(delta: dict[str, object], finish: str | None = None) -> str:
    return json.dumps(
        {"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    )


def test_a_16_mib_payload_is_read_like_any_other() -> None:
    arguments = json.dumps({"text": "x\u00e9\U0001f600" * (16 * MIB // 7)})
    content = "y" * (17 * MIB)
    asm = reference.Assembler()
    call = {"index": 0, "id": "t", "function": {"name": "write", "arguments": arguments}}
    events = asm.push(_chunk({"tool_calls": [call]}))
    assert len(_chunk({"tool_calls": [call]}).encode()) > 16 * MIB
    assert events == [reference.ToolCallDelta(0, "t", "write", arguments)]
    assert asm.push(_chunk({"content": content})) == [reference.Content(content)]
    asm.push(_chunk({}, "tool_calls"))
    completion = asm.finish(False)
    assert completion.tool_calls[0].arguments == arguments and completion.content == content


def test_many_tool_calls_come_out_in_index_order_whatever_order_pieces_arrive() -> None:
    rng = random.Random(7)
    count = 25
    asm = reference.Assembler()
    for index in range(count):  # each call must start in index order (R6: no skipping ahead)
        piece = {"index": index, "id": f"id{index}", "function": {"name": f"f{index}"}}
        asm.push(_chunk({"tool_calls": [piece]}))
    expected = {index: "" for index in range(count)}
    pieces = [(index, f"<{index}:{part}>") for index in range(count) for part in range(4)]
    rng.shuffle(pieces)
    while pieces:
        size = rng.randint(1, 5)
        batch, pieces = pieces[:size], pieces[size:]
        for index, text in batch:
            expected[index] += text
        calls = [{"index": i, "function": {"arguments": t}} for i, t in batch]
        events = asm.push(_chunk({"tool_calls": calls}))
        assert [e.index for e in events if isinstance(e, reference.ToolCallDelta)] == [
            i for i, _ in batch
        ]
    asm.push(_chunk({}, "tool_calls"))
    calls = asm.finish(False).tool_calls
    assert [c.id for c in calls] == [f"id{index}" for index in range(count)]
    assert [c.arguments for c in calls] == [expected[index] for index in range(count)]
