"""The loop the misbehaving programs share: the reference, served as `harness.adapter` serves it,
with a hook that sees each request and its correct reply and decides what is sent instead.

A hook gets the request, the number of pushes so far in the case, and the correct reply; it
returns the reply to send (None: send nothing), or never returns.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from harness.drive.inprocess import load_target
from harness.worker.program import Session

Hook = Callable[[dict[str, Any], int, dict[str, Any]], dict[str, Any] | None]


def reply(message: dict[str, Any]) -> None:
    """Write one reply line and flush it."""
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def serve(hook: Hook) -> None:
    """Answer requests on stdin like the adapter does, through `hook`."""
    session = Session("reference:Assembler", load_target("reference:Assembler"), None)
    pushes = 0
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "hello" and "accept" in request:
            # These programs speak protocol 1 (one request, one line): decline the offer of 2.
            del request["accept"]
            line = json.dumps(request)
        if request["op"] == "new":
            pushes = 0
        elif request["op"] == "push":
            pushes += 1
        message, done = session.answer(line.encode())
        sent = hook(request, pushes, message)
        if sent is not None:
            reply(sent)
        if done:
            return
