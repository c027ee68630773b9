"""Answers the third push of a case, says so on stderr, and exits with status 3."""

from __future__ import annotations

import sys

from _serve import reply, serve


def hook(request: dict, pushes: int, message: dict) -> dict | None:
    if request["op"] == "push" and pushes == 3:
        reply(message)
        print("exiter: leaving after the third push", file=sys.stderr, flush=True)
        sys.exit(3)
    return message


serve(hook)
