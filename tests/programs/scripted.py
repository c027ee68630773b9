"""The reference served over the protocol, except for one reply: the JSON file CONFORM_SCRIPT
names (`op` and `raw`) the request whose reply is replaced by the line `raw`, `{seq}` standing for
the request's seq. tests/drive/test_protocol_errors.py gives it every malformed reply."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _serve import serve

SCRIPT = json.loads(Path(os.environ["CONFORM_SCRIPT"]).read_text(encoding="utf-8"))


def hook(request: dict[str, Any], pushes: int, message: dict[str, Any]) -> dict[str, Any] | None:
    if request["op"] != SCRIPT["op"]:
        return message
    sys.stdout.write(SCRIPT["raw"].replace("{seq}", str(request["seq"])) + "\n")
    sys.stdout.flush()
    return None


serve(hook)
