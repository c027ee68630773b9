"""Runs a program offered protocol 1 alone: `python protocol1.py PROGRAM ARGS...`.

The harness offers the newer versions in its `hello` (`accept`, and the files of versions 3 and
4); this wrapper takes them out of that one line and passes every other line through unchanged,
both ways, so a test can drive a kit through the real harness at version 1. It checks the
program's answer: a `hello` reply of any other version makes it exit with status 3 (a failed
handshake, which `conform run` reports with exit status 2).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from typing import IO


def copy(source: IO[bytes], sink: IO[bytes]) -> None:
    """Everything from `source` to `sink` as it comes, then close `sink`."""
    with contextlib.suppress(BrokenPipeError, ValueError):  # the other side closed
        while chunk := source.read1(1 << 16):  # type: ignore[attr-defined]
            sink.write(chunk)
            sink.flush()
    with contextlib.suppress(BrokenPipeError):
        sink.close()


def main(program: list[str]) -> int:
    child = subprocess.Popen(program, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    hello = json.loads(requests.readline())
    for newer in ("accept", "shared", "replies"):
        hello.pop(newer, None)
    child.stdin.write(json.dumps(hello).encode() + b"\n")
    child.stdin.flush()
    answer = child.stdout.readline()
    if json.loads(answer).get("protocol") != 1:
        print(f"protocol1.py: offered 1 alone, the program answered {answer!r}", file=sys.stderr)
        child.kill()
        return 3
    replies.write(answer)
    replies.flush()
    threading.Thread(target=copy, args=(requests, child.stdin), daemon=True).start()
    copy(child.stdout, replies)
    return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
