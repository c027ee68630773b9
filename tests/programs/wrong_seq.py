"""Answers the third push of a case with the seq of the request before it."""

from __future__ import annotations

import sys

from _serve import serve


def hook(request: dict, pushes: int, message: dict) -> dict | None:
    if request["op"] == "push" and pushes == 3:
        print("wrong-seq: answering out of order", file=sys.stderr, flush=True)
        return {**message, "seq": request["seq"] - 1}
    return message


serve(hook)
