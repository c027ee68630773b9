"""Protocol 4 (docs/protocol.md): the long texts of replies through a memory file the program
writes and the harness reads; offered with protocol 3, spoken by conform's own worker; a piece
that lies beyond the file, or that is not UTF-8, is garbage and never harms the harness."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness.drive.inprocess import InProcessDriver, load_target
from harness.drive.pipes import SHARED_FROM, SharedPayloads, SharedReplies, Worker
from harness.drive.process import REPLIES_PROTOCOL, SHARED_PROTOCOL, ProcessDriver
from harness.drive.replies import MAX_REPLY_TEXT, resolve_texts
from harness.drive.spec import python_target_driver
from harness.errors import TargetCrash
from tests.drive.test_protocol_v3 import _case, _sent

pytestmark = pytest.mark.skipif(
    SharedPayloads.make() is None or SharedReplies.make() is None,
    reason="no /dev/shm or no sealed memory files here",
)


def _payloads(size: int) -> list[str]:
    # Texts the payload escapes (newlines, quotes, \u escapes): no reference into it can hold them.
    answer = {"content": "line\n" * (size // 5 + 1)}
    thought = {"reasoning_content": 'say "é"\t' * (size // 8 + 1)}
    args = {
        "index": 0,
        "id": "t",
        "function": {"name": "f", "arguments": '{"a": "b"}' * (size // 10 + 1)},
    }
    chunks = [answer, thought, {"tool_calls": [args]}, answer, {"content": "x" * size}]
    payloads = [{"id": "c1", "choices": [{"index": 0, "delta": delta}]} for delta in chunks]
    payloads.append({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return [json.dumps(p, ensure_ascii=n % 2 == 0) for n, p in enumerate(payloads)]


def _replies(driver: Any) -> list[bytes]:
    """Spy on the reply lines `driver` reads."""
    found: list[bytes] = []
    worker = driver._worker
    real = worker.receive

    def receive(*args: Any) -> Any:
        line = real(*args)
        found.append(line)
        return line

    worker.receive = receive
    return found


def test_the_worker_speaks_4_and_agrees_with_in_process() -> None:
    in_process = InProcessDriver(load_target("reference:Assembler"))
    with python_target_driver("reference:Assembler") as worker:
        worker.start()
        assert worker.protocol == REPLIES_PROTOCOL
        lines = _replies(worker)
        for size in (SHARED_FROM, 3 * 2**20, 10):  # past the file's first MiB, then small again
            payloads = _payloads(size)
            assert _case(worker, payloads) == _case(in_process, payloads), size
        in_file = [line for line in lines if b'"at":' in line]
        # Four escaped texts in each of two cases, and their finish (the same pieces again),
        # never the one that stands in its payload as it is (a reference), nor a short one.
        assert len(in_file) == 2 * 4 + 2, [line[:200] for line in lines]
        assert all(len(line) < 1000 for line in lines)  # no long text crossed the pipe


def test_without_a_sealed_memory_file_3_is_spoken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SharedReplies, "make", classmethod(lambda cls: None))
    with python_target_driver("reference:Assembler") as worker:
        worker.start()
        assert worker.protocol == SHARED_PROTOCOL
        payloads = _payloads(SHARED_FROM)
        expected = _case(InProcessDriver(load_target("reference:Assembler")), payloads)
        assert _case(worker, payloads) == expected


class _File:
    """A replies' file holding `data` (as a program would have written it)."""

    def __init__(self, data: bytes) -> None:
        self.replies = SharedReplies.make()
        os.pwrite(self.replies.fd, data, 0)


def _resolved(replies: Any, piece: Any) -> tuple[str | None, Any]:
    reply = {"seq": 3, "events": [{"type": "content", "text": {"$text": ["<", piece, ">"]}}]}
    problem = resolve_texts("push", reply, {}, {}, replies)
    return problem, reply["events"][0]["text"]


def test_pieces_in_the_replies_file_are_checked() -> None:
    file = _File("héllo wörld".encode() + b"\xff")
    try:
        assert _resolved(file.replies, {"at": 0, "bytes": 6}) == (None, "<héllo>")
        for piece, problem in [
            ({"at": 0, "bytes": 6}, "protocol 4, which was not agreed"),
            ({"at": 8, "bytes": 6}, "not UTF-8"),
            ({"at": 2, "bytes": 1}, "not UTF-8"),  # half of "é"
            ({"at": 0, "bytes": 99}, "beyond the replies' file's 14"),
            ({"at": 2**62, "bytes": 1}, "beyond the replies' file"),
            ({"at": -1, "bytes": 1}, "must be non-negative"),
            ({"at": 0, "bytes": True}, 'must be {"at": offset, "bytes": size}'),
            ({"at": 0, "bytes": 1, "x": 1}, 'must be {"at": offset, "bytes": size}'),
            ({"at": 0}, 'must be {"at": offset, "bytes": size}'),
        ]:
            replies = None if "not agreed" in problem else file.replies
            found, _ = _resolved(replies, piece)
            assert found is not None and problem in found, (piece, found)
    finally:
        file.replies.close()


def test_a_reply_stands_for_a_bounded_text_however_few_its_bytes() -> None:
    # A piece, or references into a payload repeated, must not make the harness hold gigabytes:
    # a reply's texts are bounded as a reply line in the pipe is (MAX_REPLY_TEXT).
    class Unread:
        def text(self, at: int, size: int) -> tuple[str | None, str | None]:
            raise AssertionError("a piece beyond the bound is refused before it is read")

    found, _ = _resolved(Unread(), {"at": 0, "bytes": MAX_REPLY_TEXT + 1})
    assert found is not None and "longer than 268,435,456 characters" in found
    payload = "x" * 2**20
    many = [[2, 0, len(payload)]] * 257  # 257 MiB from one reply of a few kilobytes
    reply = {"seq": 3, "events": [{"type": "content", "text": {"$text": many}}]}
    found = resolve_texts("push", reply, {2: payload}, {}, None)
    assert found is not None and "$.events[0].text.$text[256] would make" in found
    reply = {"seq": 3, "events": [{"type": "content", "text": {"$text": many[:256]}}]}
    assert resolve_texts("push", reply, {2: payload}, {}, None) is None  # at the bound: read


def test_the_replies_file_cannot_be_shrunk_under_the_harness() -> None:
    file = _File(b"x" * 100)
    try:
        with pytest.raises(OSError):
            os.ftruncate(file.replies.fd, 10)  # sealed: a program cannot make a mapping dangle
        assert _resolved(file.replies, {"at": 90, "bytes": 10}) == (None, "<" + "x" * 10 + ">")
    finally:
        file.replies.close()


LIAR = """
import sys
import time
from harness.worker.program import Session, serve
from harness.drive.inprocess import load_target

class Liar(Session):
    def _shared_text(self, text):
        piece = super()._shared_text(text)
        if piece is None:
            return None
        if sys.argv[1] == "utf8":
            return {"at": self._replies.put(b"\\xff\\xfe"), "bytes": 2}
        return {"at": piece["at"] + 2**30, "bytes": piece["bytes"]}

session = Liar("reference:Assembler", load_target("reference:Assembler"), None)
serve(session, sys.stdin.buffer, sys.stdout.buffer)
"""


@pytest.mark.parametrize(
    ("how", "problem"), [("beyond", "beyond the replies' file"), ("utf8", "not UTF-8")]
)
def test_a_program_that_lies_about_its_replies_file_crashes_the_case(
    tmp_path: Path, how: str, problem: str
) -> None:
    program = tmp_path / "liar.py"
    program.write_text(LIAR)
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root}
    with ProcessDriver([sys.executable, str(program), how], env=env, timeout=20) as liar:
        liar.start()
        assert liar.protocol == REPLIES_PROTOCOL
        liar.start_case()
        with pytest.raises(TargetCrash, match=f"bad reference: .*{problem}"):
            liar.push(_payloads(SHARED_FROM)[0], 1)
        assert liar._worker is None  # discarded: the next case gets a fresh program
        payloads = _payloads(10)
        expected = _case(InProcessDriver(load_target("reference:Assembler")), payloads)
        assert _case(liar, payloads) == expected  # (short texts: no piece to lie about)


def test_the_program_inherits_the_replies_file() -> None:
    replies = SharedReplies.make()
    try:
        script = "import os, sys; print(sorted(int(f) for f in os.listdir('/proc/self/fd')))"
        worker = Worker([sys.executable, "-c", script], None, family="test", pass_fds=(replies.fd,))
        line = worker.receive(time.monotonic() + 20)
        worker.stop(kill=False)
        assert line is not None and replies.fd in json.loads(line)
    finally:
        replies.close()


def test_large_non_ascii_payloads_go_as_utf16_unless_four_bytes_a_character() -> None:
    in_process = InProcessDriver(load_target("reference:Assembler"))
    texts = ["é" + "x" * SHARED_FROM, "—" + "世界" * SHARED_FROM, "😀" + "x" * SHARED_FROM]
    payloads = [
        json.dumps({"id": "c1", "choices": [{"delta": {"content": t}}]}, ensure_ascii=False)
        for t in texts
    ]
    with python_target_driver("reference:Assembler") as worker:
        worker.start()
        sent = _sent(worker)
        assert _case(worker, payloads) == _case(in_process, payloads)
    pushes = [r for r in sent if r["op"] == "push"]
    assert [r.get("encoding") for r in pushes] == ["utf-16le", "utf-16le", None]
    assert pushes[0]["bytes"] == 2 * len(payloads[0])  # (all below U+10000: two bytes each)


def test_utf16_payloads_the_worker_refuses(tmp_path: Path) -> None:
    from harness.worker.program import Session

    path = tmp_path / "shared"
    path.write_bytes('{"id":"c1","choices":[]}'.encode("utf-16-le") + b"\x00\xd8")
    hello = {"seq": 1, "op": "hello", "protocol": 1, "accept": [1, 2, 3], "shared": str(path)}
    v3 = Session("reference:Assembler", load_target("reference:Assembler"), None)
    v3.answer(json.dumps(hello).encode())
    v3.answer(b'{"seq":2,"op":"new"}')
    reply, _ = v3.answer(b'{"seq":3,"op":"push","bytes":48,"at":0,"encoding":"utf-16le"}')
    assert "is not spoken here" in reply["error"]["message"]
    v4 = Session("reference:Assembler", load_target("reference:Assembler"), None)
    replies = SharedReplies.make()
    try:
        line = {**hello, "accept": [1, 2, 3, 4], "replies": replies.fd}
        assert v4.answer(json.dumps(line).encode())[0]["protocol"] == REPLIES_PROTOCOL
        v4.answer(b'{"seq":2,"op":"new"}')
        ok, _ = v4.answer(b'{"seq":3,"op":"push","bytes":48,"at":0,"encoding":"utf-16le"}')
        assert ok["state"]["id"] == "c1"
        for request, problem in [
            (b'{"seq":4,"op":"push","bytes":47,"at":0,"encoding":"utf-16le"}', "not UTF-16"),
            (b'{"seq":5,"op":"push","bytes":2,"at":48,"encoding":"utf-16le"}', "not UTF-16"),
            (b'{"seq":6,"op":"push","bytes":48,"at":0,"encoding":"latin-1"}', "not spoken here"),
        ]:
            reply, _ = v4.answer(request)
            assert reply["error"]["kind"] == "bad_request", request
            assert problem in reply["error"]["message"], reply
    finally:
        replies.close()
