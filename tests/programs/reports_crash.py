"""Answers the third push of a case with a `crash` error, logging a stack to stderr first."""

from __future__ import annotations

import sys

from _serve import serve


def hook(request: dict, pushes: int, message: dict) -> dict | None:
    if request["op"] == "push" and pushes == 3:
        print("panic: index out of range\n  at push (assembler.rs:42)", file=sys.stderr, flush=True)
        return {"seq": request["seq"], "error": {"kind": "crash", "message": "index out of range"}}
    return message


serve(hook)
