"""A strict protocol-1 program: it refuses a request with any field protocol 1 does not define
(as one that validates requests against protocol 1's schema would), so it refuses the offer of
protocol 2 in `hello`; otherwise it is the reference."""

from __future__ import annotations

import json
import sys

from harness.drive.inprocess import load_target
from harness.worker.program import Session

FIELDS = {"hello": {"seq", "op", "protocol"}}

session = Session("reference:Assembler", load_target("reference:Assembler"), None)
for line in sys.stdin:
    request = json.loads(line)
    extra = set(request) - FIELDS.get(request["op"], set(request))
    if extra:
        message = {"kind": "bad_request", "message": f"unknown fields {sorted(extra)}"}
        reply: dict = {"seq": request["seq"], "error": message}
    else:
        reply, _ = session.answer(line.encode())
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
    if request["op"] == "bye":
        break
