"""The matrix page in a real browser: Debian's headless Chromium, started here and driven over the
DevTools protocol (tests/reports/chromium.py), opens the page of a small suite with a passing and a
failing target, and the cells, the totals, the hover tip and the details a click opens are
there; a screenshot is saved (CONFORM_SCREENSHOTS=DIR keeps it).

Without Chromium the test skips; with CI=true it fails instead, so a CI image that lost the
browser cannot pass unnoticed (.ci/run installs it).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import invoke
from tests.reports.chromium import Chromium, find_chromium

ROOT = Path(__file__).resolve().parents[2]
BAD = "tests/miniatures.py:LastToolCallIdWins"  # R2: takes a tool call's last id, not its first
SELECT = (
    "-k",
    "synthetic/r2_*",
    "-k",
    "llama-server/tool_call",
    "--mode",
    "plain",
    "--mode",
    "key-order",
)


@pytest.fixture(scope="module")
def browser() -> Any:
    if find_chromium() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true, and chromium is not installed (apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    with Chromium() as opened:
        opened.size(1280, 900)
        yield opened


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("matrix-page")
    html, data = folder / "matrix.html", folder / "matrix.json"
    result = invoke(
        "matrix",
        "reference:Assembler",
        f"bad={BAD}",
        *SELECT,
        "--html",
        str(html),
        "--json",
        str(data),
    )
    assert result.exit_code == 1, result.output  # the bad target fails, with no --xfail
    return html, json.loads(data.read_text(encoding="utf-8"))


def test_the_page_shows_cells_totals_and_details(
    browser: Chromium, page: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    html, data = page
    browser.open(html)
    rows = browser.evaluate(
        "[...document.querySelectorAll('#matrix tbody tr:not(.rule)')].map(tr =>"
        " [tr.querySelector('th').textContent,"
        "  ...[...tr.querySelectorAll('td.s')].map(td => td.dataset.s)])"
    )
    cases = {row["case"]: [c["status"] for c in row["cells"]] for row in data["cases"]}
    assert len(cases) >= 5
    assert {row[0]: row[1:] for row in rows} == cases  # every case, a cell per target
    assert all(row[1] == "passed" for row in rows)  # the reference
    failing = [row[0] for row in rows if row[2] == "failed"]
    assert failing, "the bad target fails some R2 case"

    totals = browser.evaluate(
        "[...document.querySelectorAll('#scores tr.total td')].map(td => td.textContent)"
    )
    n = len(cases)
    bad_ok = data["targets"][1]["cases"]["conforming"]
    assert totals == [f"{n}/{n}", f"{bad_ok}/{n}"] and bad_ok < n
    r2 = browser.evaluate(
        "[...document.querySelectorAll('#scores tbody tr')].find(tr =>"
        " tr.querySelector('th').textContent.startsWith('R2')).textContent"
    )
    assert f"{bad_ok}/{n}" in r2 or "✗" in r2

    # Hover: a real mouse move over a failing cell shows its first mismatch.
    box = browser.evaluate(
        "(() => { const td = [...document.querySelectorAll('#matrix td.s.f')][0];"
        " td.scrollIntoView({block: 'center'}); const r = td.getBoundingClientRect();"
        " return {x: r.x + r.width / 2, y: r.y + r.height / 2,"
        " row: td.parentElement.querySelector('th').textContent}; })()"
    )
    browser.mouse("mouseMoved", box["x"], box["y"])
    tip = browser.evaluate(
        "(() => { const t = document.getElementById('tip'); return {hidden: t.hidden,"
        " text: t.textContent, shown: getComputedStyle(t).display !== 'none'}; })()"
    )
    cell = next(row["cells"][1] for row in data["cases"] if row["case"] == box["row"])
    assert not tip["hidden"] and tip["shown"]
    assert box["row"] in tip["text"] and "bad" in tip["text"]
    assert cell["first"]["headline"] in tip["text"]
    assert "expected" in tip["text"] and "got" in tip["text"]

    # Click: the details panel, with the command that reproduces the failure.
    browser.mouse("click", box["x"], box["y"])
    panel = browser.evaluate(
        "(() => { const p = document.getElementById('panel'); return {hidden: p.hidden,"
        " title: p.querySelector('h2').textContent,"
        " detail: p.querySelector('.detail').textContent,"
        " command: p.querySelector('.cmd').textContent}; })()"
    )
    assert not panel["hidden"]
    assert panel["title"] == f"bad · {box['row']}: failed"
    assert "first mismatch [" in panel["detail"]
    assert panel["command"] == cell["first"]["command"]
    assert panel["command"].startswith(f"conform run {BAD} -k {box['row']} --mode ")

    # A rule's group collapses and opens again.
    hidden = browser.evaluate(
        "(() => { const b = document.querySelector('#matrix tbody tr.rule button'); b.click();"
        " const n = [...b.closest('tbody').querySelectorAll('tr:not(.rule)')]"
        ".filter(tr => tr.offsetParent !== null).length; b.click(); return n; })()"
    )
    assert hidden == 0

    shot = browser.screenshot(tmp_path / "matrix.png")
    assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 10_000
    keep = os.environ.get("CONFORM_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy2(shot, Path(keep) / "matrix-small.png")


def test_the_page_needs_nothing_from_the_network(page: tuple[Path, dict[str, Any]]) -> None:
    text = page[0].read_text(encoding="utf-8")
    for needle in ("http://", "https://", "//cdn", "<link", " src=", "@import", "url("):
        assert needle not in text
