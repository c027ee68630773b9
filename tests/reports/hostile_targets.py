"""The hostile Python targets of tests/reports/test_hostile_reports.py, in a module of their own:
the `conform` process or worker that runs one imports this alone."""

from __future__ import annotations

from typing import Any

import reference
from tests.miniatures import _Base

#: Every report together stays below this, whatever the target returned.
MAX_REPORT_BYTES = 2_000_000
#: The huge text a hostile target returns on every push. A report keeps min(size, its cap) of it,
#: so any size above the bound fails exactly the caps that 10 MB fails (at 1.6 times the CPU).
HUGE = 3 * MAX_REPORT_BYTES // 2


class Surrogates(_Base):
    """Adds a content event whose text holds a lone surrogate and control characters."""

    def push(self, data: str) -> list[Any]:
        return [reference.Content("bad \ud800 \x1b[31m\x00 end"), *super().push(data)]


class HugeText(_Base):
    """Adds a content event of HUGE characters to every step."""

    def push(self, data: str) -> list[Any]:
        return [reference.Content("x" * HUGE), *super().push(data)]
