"""The worker's own way for the reference's assembler (`harness.adapter._own_line`: its reply
line made from the reference's own events and state) answers exactly as `push_step`'s way,
byte for byte, on every recording of the shipped suite and in each protocol."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest

import reference
from harness.drive.inprocess import load_target
from harness.suite.cases import Suite
from harness.suite.recording import iter_payloads, read_info
from harness.worker.program import Session
from tests.conftest import ROOT


class _NotTheReference(reference.Assembler):
    """The reference under another type: the worker reads it the way of any target."""


def _lines(
    session: Session, accept: list[int], cases: list[tuple[list[str], bool]]
) -> Iterator[bytes]:
    hello = {"seq": 1, "op": "hello", "protocol": 1, "accept": accept}
    seq = 1
    session.answer(json.dumps(hello).encode())
    for pushes, capped in cases:
        requests: list[tuple[bytes, bytes | None]] = [(b'{"seq":%d,"op":"new"}', None)]
        for data in pushes:
            raw = data.encode("utf-8", "surrogatepass")
            if len(accept) > 1 and data.isascii():  # framed (protocol 2)
                requests.append((b'{"seq":%%d,"op":"push","bytes":%d}' % len(raw), raw + b"\n"))
            else:
                line = json.dumps({"seq": 0, "op": "push", "data": data}).encode()
                requests.append((line.replace(b'"seq": 0', b'"seq": %d'), None))
        flag = b"true" if capped else b"false"
        requests.append((b'{"seq":%d,"op":"finish","thinking_capped":' + flag + b"}", None))
        for line, framed in requests:
            seq += 1
            source = None if framed is None else io.BytesIO(framed)
            reply, _ = session.reply(line % seq, source)
            yield session.encode(reply)


def _cases() -> list[tuple[list[str], bool]]:
    found = []
    for case in Suite.open(ROOT).cases():
        capped = bool(read_info(case.recording).thinking_capped)
        found.append(([p.data for p in iter_payloads(case.recording)], capped))
    return found


@pytest.mark.parametrize("accept", [[1], [1, 2]], ids=["protocol-1", "protocol-2"])
def test_own_replies_are_push_step_s_byte_for_byte(accept: list[int]) -> None:
    cases = _cases()
    own = Session("reference:Assembler", load_target("reference:Assembler"), None)
    other = Session("reference:Assembler", _NotTheReference, None)
    found = list(_lines(own, accept, cases))
    expected = list(_lines(other, accept, cases))
    assert len(found) == len(expected) > 1000
    for number, (got, want) in enumerate(zip(found, expected, strict=True)):
        assert got == want, f"reply {number}"
