"""The reference, answering with hostile values beside its own events; HOSTILE picks which:

surrogate  a content event whose text holds a lone surrogate, an ANSI escape, NUL and DEL
huge       a content event whose text is HOSTILE_HUGE characters (default 3,000,000)
deep       a content event whose text is a list nested 10,000 levels (no decoder takes it)
deepish    the same nested 600 levels (decodes, so it reaches comparing and the reports)
errtext    every push an error of kind protocol, its message hostile (surrogate, 1 MB)
"""

from __future__ import annotations

import json
import os
import sys

from _serve import serve

KIND = os.environ.get("HOSTILE", "surrogate")
HUGE = int(os.environ.get("HOSTILE_HUGE", "3000000"))


def hook(request: dict, pushes: int, message: dict) -> dict | None:
    if request["op"] != "push" or "events" not in message:
        return message
    if KIND == "surrogate":
        message["events"].insert(0, {"type": "content", "text": "bad \ud800 \x1b[31m\x00\x7f end"})
    elif KIND == "huge":
        message["events"].insert(0, {"type": "content", "text": "x" * HUGE})
    elif KIND in ("deep", "deepish"):
        levels = 10_000 if KIND == "deep" else 600
        nested = "[" * levels + "]" * levels
        state = json.dumps(message["state"])
        sys.stdout.write(
            f'{{"seq": {message["seq"]}, "events": [{{"type": "content", "text": {nested}}}], '
            f'"state": {state}}}\n'
        )
        sys.stdout.flush()
        return None
    elif KIND == "errtext":
        text = "nope \ud800\x1b " + "y" * 1_000_000
        return {"seq": message["seq"], "error": {"kind": "protocol", "message": text}}
    return message


serve(hook)
