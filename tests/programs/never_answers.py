"""Says on stderr that it is stuck, then never answers the third push of a case."""

from __future__ import annotations

import sys
import time

from _serve import serve


def hook(request: dict, pushes: int, message: dict) -> dict | None:
    if request["op"] == "push" and pushes == 3:
        print("sleeper: stuck on the third push", file=sys.stderr, flush=True)
        while True:
            time.sleep(60)
    return message


serve(hook)
