"""Leaves `is_finished` out of the state it gives for the third push of a case."""

from __future__ import annotations

import sys

from _serve import serve


def hook(request: dict, pushes: int, message: dict) -> dict | None:
    if request["op"] == "push" and pushes == 3 and "state" in message:
        print("breaks-schema: leaving out is_finished", file=sys.stderr, flush=True)
        del message["state"]["is_finished"]
    return message


serve(hook)
