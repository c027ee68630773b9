"""Takes 0.4 s over every push: a slow program that never hangs (no call takes the timeout)."""

from __future__ import annotations

import time

from _serve import serve


def hook(request: dict, pushes: int, message: dict) -> dict | None:
    if request["op"] == "push":
        time.sleep(0.4)
    return message


serve(hook)
