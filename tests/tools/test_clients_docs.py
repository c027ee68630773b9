"""docs/clients.md's figures are generated (`tests/tools/clients_docs.py`), never typed: the parts
that need no client run are checked here, so that the tables cannot drift from the suite and the
baselines unnoticed (the rest is rewritten by the script whenever the baselines are)."""

from __future__ import annotations

import re

from harness.suite.cases import Suite
from tests.tools.clients_docs import BEGIN, CLIENTS, DOC, END, baseline_lines


def _block() -> str:
    text = DOC.read_text(encoding="utf-8")
    return text[text.index(BEGIN) + len(BEGIN) : text.index(END)]


def _rows() -> dict[str, list[str]]:
    rows = {}
    for line in _block().splitlines():
        found = re.match(r"\| `([^`]+)` \| (.*) \|$", line)
        if found and "/" in found.group(2):
            rows.setdefault(found.group(1), [c.strip() for c in found.group(2).split("|")])
    return rows


def test_every_client_has_its_row_over_the_whole_suite() -> None:
    rows = _rows()
    assert set(rows) == {label for label, _, _ in CLIENTS}
    cases = len(Suite.open(None).cases())
    for label, cells in rows.items():
        assert cells[1].endswith(f"/{cases}"), (label, cells[1], cases)


def test_the_baselines_lines_are_the_files() -> None:
    rows = _rows()
    for label, _, baseline in CLIENTS:
        assert rows[label][-1] == str(baseline_lines(baseline)), label
