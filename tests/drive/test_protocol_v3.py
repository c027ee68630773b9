"""Protocol 3 (docs/protocol.md): offered where a shared file can be made, spoken by conform's own
worker; large payloads read from the file both sides map, the rest framed as in version 2."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from harness.drive import pipes
from harness.drive.inprocess import InProcessDriver, load_target
from harness.drive.pipes import SHARED_FROM, SharedPayloads
from harness.drive.process import FAST_PROTOCOL, REPLIES_PROTOCOL, SHARED_PROTOCOL
from harness.drive.spec import python_target_driver
from harness.worker.program import Session

pytestmark = pytest.mark.skipif(SharedPayloads.make() is None, reason="no /dev/shm here")


def _payloads(size: int) -> list[str]:
    big = {"id": "c1", "choices": [{"index": 0, "delta": {"content": "é" + "x" * size}}]}
    args = {"index": 0, "id": "t", "function": {"name": "f", "arguments": "y" * size}}
    tool = {"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [args]}}]}
    small = {"id": "c1", "choices": [{"index": 0, "delta": {"content": "a"}}]}
    last = {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    return [json.dumps(p, ensure_ascii=False) for p in (small, big, tool, big, last)]


def _case(driver: Any, payloads: list[str]) -> tuple[list[dict], dict]:
    driver.start_case()
    steps = [driver.push(data, n) for n, data in enumerate(payloads, 1)]
    return steps, driver.finish(False)


def _sent(driver: Any) -> list[dict]:
    """Spy on the requests `driver` queues: each one's fields, as sent."""
    found: list[dict] = []
    real = driver._send

    def send(op: str, fields: dict, **options: Any) -> Any:
        found.append({"op": op, **fields})
        return real(op, fields, **options)

    driver._send = send
    return found


def test_the_worker_speaks_3_and_agrees_with_in_process() -> None:
    in_process = InProcessDriver(load_target("reference:Assembler"))
    with python_target_driver("reference:Assembler") as worker:
        worker.start()
        assert worker.protocol == REPLIES_PROTOCOL
        path = worker._shared.path  # a memory file (no name), or unlinked once opened
        assert path.startswith("/proc/self/fd/") or not os.path.exists(path)
        sent = _sent(worker)
        # Small, then past the file's first MiB (it grows, and the program maps it again), then
        # small again: each case starts at offset 0.
        for size in (SHARED_FROM, 3 * 2**20, 10):
            payloads = _payloads(size)
            assert _case(worker, payloads) == _case(in_process, payloads), size
        shared = [r for r in sent if "at" in r]
        assert len(shared) == 6  # the three big payloads of the first two cases, and only those
        assert shared[0]["at"] == shared[3]["at"] == 0  # each case from the start of the file
        assert [r["at"] for r in shared[3:]] == [
            0,
            shared[3]["bytes"],
            shared[4]["at"] + shared[4]["bytes"],
        ]


def test_a_payload_without_room_in_the_shared_file_is_framed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def full(fd: int, offset: int, size: int) -> None:
        raise OSError(28, "No space left on device")

    in_process = InProcessDriver(load_target("reference:Assembler"))
    with python_target_driver("reference:Assembler") as worker:
        worker.start()
        monkeypatch.setattr(pipes.os, "posix_fallocate", full)
        sent = _sent(worker)
        payloads = _payloads(2 * 2**20)
        assert _case(worker, payloads) == _case(in_process, payloads)
        assert not any("at" in r for r in sent) and any("bytes" in r for r in sent)


def test_without_a_shared_file_2_is_offered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SharedPayloads, "make", classmethod(lambda cls: None))
    with python_target_driver("reference:Assembler") as worker:
        assert worker.start() is not None and worker.protocol == FAST_PROTOCOL


def _hello(session: Session, shared: object) -> int:
    line = {"seq": 1, "op": "hello", "protocol": 1, "accept": [1, 2, 3], "shared": shared}
    reply, _ = session.answer(json.dumps(line).encode())
    return int(reply["protocol"])


def test_a_program_that_cannot_open_the_file_speaks_2(tmp_path: Path) -> None:
    session = Session("reference:Assembler", load_target("reference:Assembler"), None)
    assert _hello(session, str(tmp_path / "gone")) == FAST_PROTOCOL
    session = Session("reference:Assembler", load_target("reference:Assembler"), None)
    assert _hello(session, 7) == FAST_PROTOCOL


def test_shared_pushes_the_worker_refuses(tmp_path: Path) -> None:
    path = tmp_path / "shared"
    path.write_bytes(b'{"id":"c1","choices":[]}' + b"\xff")
    v2 = Session("reference:Assembler", load_target("reference:Assembler"), None)
    v2.answer(b'{"seq":1,"op":"hello","protocol":1,"accept":[1,2]}')
    v2.answer(b'{"seq":2,"op":"new"}')
    reply, _ = v2.answer(b'{"seq":3,"op":"push","bytes":2,"at":0}')
    assert "protocol 3, which was not agreed" in reply["error"]["message"]
    v3 = Session("reference:Assembler", load_target("reference:Assembler"), None)
    assert _hello(v3, str(path)) == SHARED_PROTOCOL
    v3.answer(b'{"seq":2,"op":"new"}')
    ok, _ = v3.answer(b'{"seq":3,"op":"push","bytes":24,"at":0}')
    assert ok["state"]["id"] == "c1"
    for line, problem in [
        (b'{"seq":4,"op":"push","bytes":24,"at":9}', "beyond the shared file's 25"),
        (b'{"seq":5,"op":"push","bytes":1,"at":24}', "not UTF-8"),
        (b'{"seq":6,"op":"push","bytes":-1,"at":0}', "non-negative integers"),
    ]:
        reply, _ = v3.answer(line)
        assert reply["error"]["kind"] == "bad_request" and problem in reply["error"]["message"]


def test_a_shared_file_is_removed_however_its_driver_ends() -> None:
    import gc

    shared = SharedPayloads.make()
    assert shared is not None and os.path.exists(shared.path)
    path, fd = shared.path, shared.fd
    del shared  # dropped without close (a program that never answered hello, a stopped run)
    gc.collect()
    with pytest.raises(OSError):
        os.fstat(fd)  # closed
    assert not path.startswith("/dev/shm") or not os.path.exists(path)


_SHRINKS = """
import json, os, sys
from harness.worker.program import Session
from harness.drive.inprocess import load_target
session = Session("reference:Assembler", load_target("reference:Assembler"), None)
for line in iter(sys.stdin.buffer.readline, b""):
    request = json.loads(line)
    if request.get("op") == "hello":
        fd = os.open(request["shared"], os.O_RDWR)
    reply, done = session.answer(line, sys.stdin.buffer)
    sys.stdout.buffer.write(session.encode(reply))
    sys.stdout.buffer.flush()
    if request.get("op") == "push" and "at" in request:
        try:
            os.ftruncate(fd, 0)  # the harness writes into its mapping of this file
            print("shrunk", file=sys.stderr)
        except OSError as exc:
            print("refused", exc, file=sys.stderr)
    if done:
        break
"""

_HARNESS = """
import json, sys
from harness.drive.process import ProcessDriver
from harness.errors import TargetCrash
big = json.dumps({"id": "c", "choices": [{"index": 0, "delta": {"content": "x" * 100000}}]})
driver = ProcessDriver([sys.executable, sys.argv[1]])
driver.start()
assert driver.protocol >= 3, driver.protocol
for _ in range(3):
    driver.start_case()
    try:
        driver.push(big, 1)
    except TargetCrash:
        pass
print("alive")
"""


def test_a_program_that_shrinks_the_shared_file_cannot_kill_the_harness(tmp_path: Path) -> None:
    # Where the file can be truncated, the harness's next write into its mapping is a SIGBUS.
    import subprocess
    import sys

    program, harness = tmp_path / "shrinks.py", tmp_path / "drives_it.py"
    program.write_text(_SHRINKS, "utf-8")
    harness.write_text(_HARNESS, "utf-8")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, str(harness), str(program)],
        capture_output=True, text=True, timeout=60, check=False, env=env,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == "alive", (done.returncode, done.stderr)


def test_ascii_text_is_written_to_the_shared_file_as_its_bytes() -> None:
    shared = SharedPayloads.make()
    assert shared is not None
    try:
        first = '{"a":"' + "x" * SHARED_FROM + '"}'
        grown = "y" * (3 * 2**20)  # past the file's first size: mapped again while in use
        assert shared.put_text(first) == 0
        assert shared.put_text(grown) == len(first)
        assert shared.put_text("é" * SHARED_FROM) is None  # not ASCII: the caller encodes it
        with open(shared.path, "rb") as file:
            written = file.read(len(first) + len(grown))
        assert written == (first + grown).encode()
        shared.reset()
        assert shared.put_text("z" * 10) == 0
    finally:
        shared.close()
