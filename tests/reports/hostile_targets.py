"""A hostile Python target of tests/reports/test_hostile_reports.py, run in a worker: a module of
its own, so that the worker imports this alone."""

from __future__ import annotations

from typing import Any

import reference
from tests.miniatures import _Base


class Surrogates(_Base):
    """Adds a content event whose text holds a lone surrogate and control characters."""

    def push(self, data: str) -> list[Any]:
        return [reference.Content("bad \ud800 \x1b[31m\x00 end"), *super().push(data)]
