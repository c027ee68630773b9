"""Prints a line that is not JSON to stdout before its reply to the third push of a case."""

from __future__ import annotations

import sys

from _serve import serve


def hook(request: dict, pushes: int, message: dict) -> dict | None:
    if request["op"] == "push" and pushes == 3:
        print("garbage-printer: about to print junk", file=sys.stderr, flush=True)
        print("debug: third push coming up", flush=True)
    return message


serve(hook)
