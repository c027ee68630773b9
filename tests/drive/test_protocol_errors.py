"""Every malformed reply an `--exec` program can give, and the message each gets in the report.

Each case is one program (tests/programs/scripted.py) that answers like the reference except for
one reply; the driver must turn that reply into a crash of the case with exactly this message (a
restart follows, so the next case runs), or, in the handshake, into a setup error.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.drive.inprocess import TargetCrash
from harness.drive.process import ProcessDriver
from harness.errors import TargetError

SCRIPTED = Path(__file__).resolve().parents[1] / "programs" / "scripted.py"
CHUNK = '{"choices":[{"delta":{"content":"Hi"}}],"id":"c1"}'


@pytest.fixture
def driver(tmp_path: Path) -> Callable[[str, str], ProcessDriver]:
    def make(op: str, raw: str) -> ProcessDriver:
        script = tmp_path / "script.json"
        script.write_text(json.dumps({"op": op, "raw": raw}), encoding="utf-8")
        return scripted(str(script))

    return make


def scripted(script: str) -> ProcessDriver:
    env = {**os.environ, "CONFORM_SCRIPT": script}
    return ProcessDriver([sys.executable, str(SCRIPTED)], env=env, timeout=20, label="scripted")


DEEP = "[" * 100_000 + "]" * 100_000
STATE = '{"id": "c1", "reasoning_tokens": 0, "in_reasoning": false, "is_finished": false}'


@pytest.mark.parametrize(
    ("op", "raw", "message"),
    [
        ("push", "debug: not json",
         "the program wrote a line that is not JSON in reply to push: debug: not json"),
        ("push", "\xff\xfe", "the program wrote a line that is not JSON in reply to push"),
        ("push", DEEP, "the program's reply to push (200,000 bytes) nests too deep to read: "),
        ("push", "[1, 2]", "bad reply to push: a reply must be a JSON object"),
        ("push", '{"seq": 99, "events": [], "state": {}}',
         "bad reply to push: it carries seq 99, not {seq} (out of order, or a stray line)"),
        ("push", '{"seq": true, "events": [], "state": {}}',
         "bad reply to push: it carries seq true, not {seq}"),
        ("push", '{"seq": {seq}, "error": "boom"}', "bad reply to push: 'error' must be an object"),
        ("push", '{"seq": {seq}, "error": {"kind": "bad_request", "message": "what?"}}',
         "bad reply to push: the program refused the request: what?"),
        ("push", '{"seq": {seq}, "error": {"kind": "crash", "message": "boom\\nat line 3"}}',
         "the program crashed in push: boom"),
        ("push", '{"seq": {seq}, "error": {"kind": "weird", "message": "odd"}}',
         'the program answered push with error "weird" in push: odd'),
        ("push", '{"seq": {seq}, "error": {"kind": "crash", "message": ["not", "text"]}}',
         'the program crashed in push: ["not", "text"]'),
        ("push", '{"seq": {seq}, "events": []}',
         "bad reply to push: a reply to push needs a list 'events' and an object 'state'"),
        ("push", '{"seq": {seq}, "events": {}, "state": {}}',
         "bad reply to push: a reply to push needs a list 'events' and an object 'state'"),
        ("finish", '{"seq": {seq}}',
         "bad reply to finish: a reply to finish needs an object 'completion'"),
        ("new", '{"seq": {seq}, "error": {"kind": "protocol", "message": "no"}}',
         'the program answered new with error "protocol" in new: no'),
        # The protocol's own rules hold without --validate-protocol: JSON has no NaN, and a reply
        # holds only the fields the protocol defines (docs/protocol.md, Values).
        ("push", '{"seq": {seq}, "events": [], "state": ' + STATE.replace("0,", "NaN,") + "}",
         "the program wrote a line that is not JSON in reply to push"),
        ("push", '{"seq": {seq}, "events": [], "state": ' + STATE + ', "zzz": 1}',
         "bad reply to push: unknown field $.zzz"),
        ("push", '{"seq": {seq}, "events": [{"type": "content", "text": "Hi", "zzz": 1}], '
         '"state": ' + STATE + "}",
         "bad reply to push: unknown field $.events[0].zzz"),
        ("push", '{"seq": {seq}, "events": [], "state": ' + STATE.replace("}", ', "zzz": 1}') + "}",
         "bad reply to push: unknown field $.state.zzz"),
        ("finish", '{"seq": {seq}, "completion": {"zzz": 1}}',
         "bad reply to finish: unknown field $.completion.zzz"),
    ],
)  # fmt: skip
def test_each_malformed_reply_crashes_the_case_with_its_message(
    driver: Callable[[str, str], ProcessDriver], op: str, raw: str, message: str
) -> None:
    with driver(op, raw) as program:
        program.start()
        with pytest.raises(TargetCrash) as caught:
            program.start_case()
            program.push(CHUNK, 1)
            program.finish(False)
        request_seq = {"new": 2, "push": 3, "finish": 4}[op]
        assert caught.value.message.startswith(message.replace("{seq}", str(request_seq)))
        in_step = "error" in raw and "bad_request" not in raw and "must be" not in message
        if in_step:
            # An error reply keeps the program in step: its message's other lines are the details.
            assert "request:" not in caught.value.details
            assert caught.value.details == ("at line 3" if "at line 3" in raw else "")
        else:  # a reply the harness cannot take: the request is quoted
            assert f'request: {{"op": "{op}"' in caught.value.details
        # The case after it runs on the same program, still in step after an error reply: the
        # driver is usable. After a reply it cannot take, the program is stopped, to be started
        # afresh for the next case (that restart itself: test_process.py's
        # test_a_wrong_answer_keeps_the_program_and_a_crash_restarts_it; each start here would
        # cost a program's start, 0.13 s of CPU).
        if in_step:
            worker = program._worker
            assert worker is not None
            if op != "new":  # (the program answers every `new` so)
                program.start_case()
                assert program._worker is worker
        else:
            assert program._worker is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('{"seq": {seq}, "protocol": 1}', "the reply to hello needs name, version and language"),
        ('{"seq": {seq}, "protocol": true, "name": "n", "version": "1", "language": "x"}',
         "it speaks protocol true, not 1"),
        ('{"seq": {seq}, "error": {"kind": "crash", "message": "cannot load"}}',
         "it answered with an error: cannot load"),
        ("garbage", "the program wrote a line that is not JSON in reply to hello"),
    ],
)  # fmt: skip
def test_a_malformed_handshake_is_a_setup_error(
    driver: Callable[[str, str], ProcessDriver], raw: str, message: str
) -> None:
    program = driver("hello", raw)
    with pytest.raises(TargetError) as caught:
        program.start()
    program.close()
    assert str(caught.value).startswith(f"scripted failed the handshake: {message}")
