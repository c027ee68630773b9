"""The two versions of the line protocol an example program speaks through its adapter kit
(examples/kits/): version 2 when `hello` offers it, version 1 otherwise.

`conform run` offers 2, so a plain run drives a kit at 2; `at_protocol_1` wraps a command so that
the harness drives it at 1 (protocol1.py); `check_both_versions` talks to the program directly and
checks what version 2 changes: the `hello` answer, framed payloads, and `skipped` after the reply
that ends a case.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

PROTOCOL1 = Path(__file__).with_name("protocol1.py")

# A content with a non-ASCII letter, quotes and a line break (escaped in a JSON string, not in a
# frame), a server error, and a finish_reason.
CONTENT = '{"id":"chatcmpl-k","choices":[{"index":0,"delta":{"content":"H\u00e9 \\"q\\"\\n"}}]}'
ERROR = '{"error":{"code":500,"message":"boom","type":"server_error"}}'
STOP = '{"id":"chatcmpl-k","choices":[{"index":0,"finish_reason":"stop","delta":{}}]}'


def at_protocol_1(command: str) -> str:
    """`command` (an --exec command line) offered protocol 1 alone."""
    return f"{shlex.join([sys.executable, str(PROTOCOL1)])} {command}"


def _session(argv: list[str], *, version: int) -> list[dict[str, Any]]:
    hello: dict[str, Any] = {"seq": 1, "op": "hello", "protocol": 1}
    if version == 2:
        hello["accept"] = [1, 2, 3, 4]
    cases = [["new", CONTENT, ERROR, CONTENT, "finish"], ["new", CONTENT, STOP, "finish", STOP]]
    lines = [json.dumps(hello).encode() + b"\n"]
    for request in (r for case in cases for r in case):
        seq = len(lines) + 1
        if request in ("new", "finish"):
            fields = {"thinking_capped": False} if request == "finish" else {}
            lines.append(json.dumps({"seq": seq, "op": request, **fields}).encode() + b"\n")
        elif version == 2:  # framed, raw UTF-8
            raw = request.encode()
            lines.append(b'{"seq":%d,"op":"push","bytes":%d}\n%s\n' % (seq, len(raw), raw))
        else:
            lines.append(json.dumps({"seq": seq, "op": "push", "data": request}).encode() + b"\n")
    lines.append(json.dumps({"seq": len(lines) + 1, "op": "bye"}).encode() + b"\n")
    # Everything in one write, as the harness sends a planned case.
    done = subprocess.run(argv, input=b"".join(lines), capture_output=True, timeout=60, check=True)
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["seq"] for r in replies] == list(range(1, len(lines) + 1)), replies
    return replies


def check_both_versions(argv: list[str]) -> None:
    """The program at each version, over the same two cases (the first ends at a server error)."""
    one, two = _session(argv, version=1), _session(argv, version=2)
    assert one[0]["protocol"] == 1 and two[0]["protocol"] == 2, (one[0], two[0])
    skipped = {4, 5, 10}  # the indexes after the replies that end a case
    for i, (old, new) in enumerate(zip(one, two, strict=True)):
        if i in skipped:
            assert new == {"seq": i + 1, "skipped": True}, new
            assert "skipped" not in old, old  # version 1 calls the assembler, as it always did
        elif i > 0:
            assert new == old, (i, old, new)
    assert two[2]["events"] == [{"type": "content", "text": 'H\u00e9 "q"\n'}], two[2]
    assert two[3]["error"] == {"kind": "server", "message": "boom"}, two[3]
    assert two[9]["completion"]["content"] == 'H\u00e9 "q"\n', two[9]
    assert two[9]["completion"]["finish_reason"] == "stop", two[9]
