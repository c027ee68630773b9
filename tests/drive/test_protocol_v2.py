"""Protocol 2 (docs/protocol.md): offered in `hello`, spoken by conform's own worker, declined by
every version-1 program without harm; framed payloads, text references and `$number`."""

from __future__ import annotations

import io
import json
import math
import os
import sys
from pathlib import Path

import pytest

from harness.drive.inprocess import InProcessDriver, load_target
from harness.drive.pipes import SharedPayloads
from harness.drive.process import (
    FAST_PROTOCOL,
    PROTOCOL_VERSION,
    ProcessDriver,
)
from harness.drive.replies import resolve_numbers, resolve_texts
from harness.drive.spec import python_target_driver
from harness.errors import TargetCrash
from harness.worker.program import Session

ROOT = Path(__file__).resolve().parents[2]
STRICT = ROOT / "tests" / "programs" / "strict_v1.py"
TEXT = "é" + "x" * 5000 + '"'  # long enough to be referenced; the quote is escaped in JSON


def _payloads(text: str) -> list[str]:
    chunk = {"id": "c1", "choices": [{"index": 0, "delta": {"content": "a"}}]}
    long = {"id": "c1", "choices": [{"index": 0, "delta": {"content": "x" * 5000}}]}
    args = {"index": 0, "id": "t", "function": {"name": "f", "arguments": "y" * 3000}}
    tool = {"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [args]}}]}
    last = {
        "id": "c1",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}],
    }
    return [json.dumps(p, ensure_ascii=False) for p in (chunk, long, tool, last)]


def _case(driver: object) -> tuple[list[dict], dict]:
    driver.start_case()  # type: ignore[attr-defined]
    steps = [driver.push(data, n) for n, data in enumerate(_payloads(TEXT), 1)]  # type: ignore[attr-defined]
    return steps, driver.finish(False)  # type: ignore[attr-defined]


def test_the_worker_speaks_2_and_agrees_with_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SharedPayloads, "make", classmethod(lambda cls: None))  # 3 not offered
    expected = _case(InProcessDriver(load_target("reference:Assembler")))
    with python_target_driver("reference:Assembler") as worker:
        worker.start()
        assert worker.protocol == FAST_PROTOCOL
        assert _case(worker) == expected


def test_a_strict_version_1_program_is_asked_again_without_the_offer() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with ProcessDriver([sys.executable, str(STRICT)], env=env, timeout=20) as program:
        program.start()
        assert program.protocol == PROTOCOL_VERSION
        expected = _case(InProcessDriver(load_target("reference:Assembler")))
        assert _case(program) == expected


def _session() -> Session:
    session = Session("reference:Assembler", load_target("reference:Assembler"), None)
    hello, _ = session.answer(b'{"seq":1,"op":"hello","protocol":1,"accept":[1,2]}')
    assert hello["protocol"] == FAST_PROTOCOL
    session.answer(b'{"seq":2,"op":"new"}')
    return session


def _framed_push(session: Session, seq: int, data: str) -> dict:
    raw = data.encode()
    line = f'{{"seq":{seq},"op":"push","bytes":{len(raw)}}}'.encode()
    reply, _ = session.answer(line, io.BytesIO(raw + b"\n"))
    return reply


def test_long_texts_come_back_as_references_into_the_payload() -> None:
    session = _session()
    payloads = dict(enumerate(_payloads("short"), start=3))
    replies = [_framed_push(session, seq, data) for seq, data in payloads.items()]
    long_text = replies[1]["events"][0]["text"]
    assert long_text == {
        "$text": [[4, payloads[4].index("x" * 5000), payloads[4].index("x" * 5000) + 5000]]
    }
    assert replies[0]["events"][0]["text"] == "a"  # a short text is sent as it is
    finish, _ = session.answer(b'{"seq":7,"op":"finish","thinking_capped":false}')
    content = finish["completion"]["content"]
    assert content["$text"][0] == "a" and content["$text"][-1] == "short"
    assert resolve_texts("finish", finish, payloads) is None
    assert finish["completion"]["content"] == "a" + "x" * 5000 + "short"
    assert finish["completion"]["tool_calls"][0]["arguments"] == "y" * 3000


def test_a_text_that_needs_escapes_is_sent_as_it_is() -> None:
    session = _session()
    data = _payloads("short")[0].replace('"a"', json.dumps("\n" * 300))
    reply = _framed_push(session, 3, data)
    assert reply["events"][0]["text"] == "\n" * 300


@pytest.mark.parametrize(
    ("ref", "problem"),
    [
        ([[3, 0, 99]], "is [3, 0, 99], outside the 5 characters of push 3's data"),
        ([[9, 0, 1]], "must be a string or [seq, start, end]"),
        ([[3, 2, 1]], "outside the 5 characters"),
        ([3], "must be a string or [seq, start, end]"),
    ],
)
def test_a_bad_text_reference_is_named(ref: list, problem: str) -> None:
    reply = {"seq": 4, "events": [{"type": "content", "text": {"$text": ref}}], "state": {}}
    found = resolve_texts("push", reply, {3: "hello"})
    assert found is not None and problem in found


def test_an_object_that_is_no_reference_is_a_value_as_in_version_1() -> None:
    # A client that passes a tool call's JSON arguments on as an object: a mismatch (R6), as in
    # version 1, not a crash of the program (and its restart).
    arguments = {"path": "a.txt"}
    event = {"type": "tool_call_delta", "index": 0, "id": None, "name": None}
    reply = {"seq": 4, "events": [{**event, "arguments": arguments}], "state": {}}
    assert resolve_texts("push", reply, {3: "hello"}) is None
    assert reply["events"][0]["arguments"] == {"path": "a.txt"}
    finish = {"seq": 5, "completion": {"content": {"x": 1}, "tool_calls": [{"arguments": {}}]}}
    assert resolve_texts("finish", finish, {3: "hello"}) is None
    assert finish["completion"] == {"content": {"x": 1}, "tool_calls": [{"arguments": {}}]}
    bad = {"seq": 6, "events": [{"type": "content", "text": {"$text": [[3, 0, 1]], "x": 1}}]}
    assert "must be a string or" in str(resolve_texts("push", bad, {3: "hello"}))


def test_numbers_json_cannot_hold_cross_as_marks() -> None:
    reply = {"state": {"reasoning_tokens": {"$number": "NaN"}}, "x": [{"$number": "-Infinity"}]}
    assert resolve_numbers(reply) is None
    assert math.isnan(reply["state"]["reasoning_tokens"]) and reply["x"] == [-math.inf]
    assert resolve_numbers({"a": {"$number": "nan"}}) is not None


def test_a_framed_push_before_2_was_agreed_is_a_bad_request() -> None:
    session = Session("reference:Assembler", load_target("reference:Assembler"), None)
    session.answer(b'{"seq":1,"op":"hello","protocol":1}')
    session.answer(b'{"seq":2,"op":"new"}')
    reply, _ = session.answer(b'{"seq":3,"op":"push","bytes":2}', io.BytesIO(b"{}\n"))
    assert reply["error"]["kind"] == "bad_request"


def test_a_reference_outside_the_case_is_garbage(tmp_path: Path) -> None:
    # A program of protocol 2 that points a text outside the payload: the case crashes.
    program = tmp_path / "liar.py"
    program.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    r = json.loads(line)\n"
        "    if r['op'] == 'hello':\n"
        "        out = {'name': 'liar', 'version': '1', 'language': 'python', 'protocol': 2}\n"
        "    elif r['op'] == 'push':\n"
        "        text = {'$text': [[r['seq'], 0, 10**6]]}\n"
        "        out = {'events': [{'type': 'content', 'text': text}],\n"
        "               'state': {'id': None, 'reasoning_tokens': 0, 'in_reasoning': False,\n"
        "                         'is_finished': False}}\n"
        "    else:\n"
        "        out = {'ok': True}\n"
        "    print(json.dumps({'seq': r['seq'], **out}), flush=True)\n"
    )
    with ProcessDriver([sys.executable, str(program)], timeout=20) as liar:
        liar.start()
        liar.start_case()
        with pytest.raises(TargetCrash, match=r"bad reference: .* outside the"):
            liar.push('{"\\ud800": 1}', 1)  # a lone surrogate: sent as JSON, not framed
