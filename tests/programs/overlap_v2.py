"""The reference over protocol 2 (planned cases, framed payloads), misbehaving on marked payloads.

A push whose payload holds `EXIT` makes the program exit (status 3) before it answers, `HANG`
makes it wait for ever, `GARBAGE` makes it answer with a line that is not JSON, `SLOW` makes it
wait a second before it logs the push, and `QUIT` makes it exit once it has answered that case's
`finish`. Every push logs `pushed <the payload's id>` to stderr, so a test can see whose case a
line of stderr belongs to. tests/drive/test_overlap.py uses it for the next case sent ahead
(docs/protocol.md, Planned cases).
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from pathlib import Path
from typing import IO

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from harness.drive.inprocess import load_target
from harness.worker.program import Session


def main() -> None:
    session = Session("reference:Assembler", load_target("reference:Assembler"), None)
    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    quit_after = False
    for line in iter(requests.readline, b""):
        request = json.loads(line)
        source: IO[bytes] = requests
        if request.get("op") == "hello":
            request["accept"] = [1, 2]  # not 3: every payload through the pipe
            line = json.dumps(request).encode() + b"\n"
        if request.get("op") == "push":
            if "bytes" in request:
                framed = requests.read(request["bytes"] + 1)
                source = io.BytesIO(framed)
                data = framed[:-1].decode()
            else:
                data = request["data"]
            try:
                marker = json.loads(data).get("id")
            except ValueError:
                marker = None
            if "SLOW" in data:
                time.sleep(1)
            sys.stderr.write(f"pushed {marker}\n")
            sys.stderr.flush()
            if "EXIT" in data:
                os._exit(3)
            if "HANG" in data:
                time.sleep(3600)
            quit_after = quit_after or "QUIT" in data
            if "GARBAGE" in data:
                replies.write(b"this is not a reply\n")
                replies.flush()
                continue
        reply, done = session.answer(line, source)
        replies.write(session.encode(reply))
        replies.flush()
        if done or (quit_after and request.get("op") == "finish"):
            return


main()
