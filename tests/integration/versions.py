"""The line protocol the example programs speak through their adapter kits (examples/kits/):
version 1, which is what conform's `hello` asks for. (The kits also speak a version 2 that earlier
releases of conform offered in `hello`; conform no longer offers it, and a kit offered nothing
more answers 1, so a program built on an older kit keeps working.)

`check_protocol_1` talks to the program directly, with the requests conform sends, and checks its
answers: the `hello` answer and two cases, the first ending at a server error.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from harness.drive.messages import Bye, Finish, Hello, New, Push, request_line

# A content with a non-ASCII letter, quotes and a line break, a server error, and a finish_reason.
CONTENT = '{"id":"chatcmpl-k","choices":[{"index":0,"delta":{"content":"H\u00e9 \\"q\\"\\n"}}]}'
ERROR = '{"error":{"code":500,"message":"boom","type":"server_error"}}'
STOP = '{"id":"chatcmpl-k","choices":[{"index":0,"finish_reason":"stop","delta":{}}]}'


def check_protocol_1(argv: list[str]) -> None:
    """The program answers conform's `hello` with version 1, and each request as version 1
    says, over two cases (the first ends at a server error, after which nothing is sent)."""
    requests = [Hello(1), New(2), Push(3, CONTENT), Push(4, ERROR)]
    requests += [New(5), Push(6, CONTENT), Push(7, STOP), Finish(8, False), Bye(9)]
    lines = b"".join(request_line(request) for request in requests)
    done = subprocess.run(argv, input=lines, capture_output=True, timeout=60, check=True)
    replies: list[dict[str, Any]] = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["seq"] for r in replies] == list(range(1, len(requests) + 1)), replies
    assert replies[0]["protocol"] == 1, replies[0]
    assert replies[2]["events"] == [{"type": "content", "text": 'H\u00e9 "q"\n'}], replies[2]
    assert replies[3]["error"] == {"kind": "server", "message": "boom"}, replies[3]
    assert replies[7]["completion"]["content"] == 'H\u00e9 "q"\n', replies[7]
    assert replies[7]["completion"]["finish_reason"] == "stop", replies[7]
