"""How conform quotes a value in a message: one line of JSON, shortened to a limit.

Every report, error and baseline quotes values through these two functions, so a value reads the
same wherever it is shown.
"""

from __future__ import annotations

import json
from typing import Any

#: How many characters a quoted value may take in a text report line.
SHOWN_CHARS = 300


def shown(value: Any, limit: int = SHOWN_CHARS) -> str:
    """A value as JSON on one line, shortened to `limit` characters.

    A value JSON cannot hold (the comparison's "absent" marker included) is shown by its repr.
    """
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return shorten(text, limit)


def shorten(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, the last one an ellipsis when anything was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
