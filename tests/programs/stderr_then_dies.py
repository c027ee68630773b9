"""Writes a fatal message to stderr on the third push of a case, then kills itself (SIGABRT)."""

from __future__ import annotations

import os
import signal
import sys

from _serve import serve


def hook(request: dict, pushes: int, message: dict) -> dict | None:
    if request["op"] == "push" and pushes == 3:
        sys.stderr.write("fatal: out of cheese at the third push\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGABRT)
    return message


serve(hook)
