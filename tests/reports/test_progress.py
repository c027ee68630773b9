"""The progress bar and colours: drawn only where asked, erased at the end, NO_COLOR honoured."""

from __future__ import annotations

import io
from pathlib import Path

import click
import pytest

from harness.check.results import FAILED, PASSED, XPASSED, CaseResult
from harness.reports.progress import ProgressBar, paint_line, paint_status, wants_colour
from tests.conftest import invoke


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def result(status: str, case_id: str = "synthetic/a") -> CaseResult:
    return CaseResult(case_id, "plain", f"{case_id}.sse", status, 0.0)


def test_the_bar_counts_results_and_problems_and_is_erased_at_the_end() -> None:
    stream = Terminal()
    with ProgressBar(4, stream=stream, enabled=True, colour=False) as bar:
        for status in (PASSED, FAILED, PASSED, PASSED):
            bar.advance(result(status))
        assert bar.render("x [plain]", 80) == "[" + "#" * 26 + "] 4/4, 1 not passing  x [plain]"
    written = stream.getvalue()
    assert "4/4, 1 not passing" in written  # the last result is always drawn
    assert written.endswith("\r\033[K")  # and then erased


def test_a_disabled_bar_writes_nothing() -> None:
    stream = Terminal()
    with ProgressBar(2, stream=stream, enabled=False, colour=True) as bar:
        bar.advance(result(FAILED))
        bar.advance(result(PASSED))
    assert stream.getvalue() == ""


def test_the_bar_fits_the_terminal() -> None:
    bar = ProgressBar(10, stream=Terminal(), enabled=True, colour=False)
    bar.done = 5
    assert len(bar.render("llama-server/" + "x" * 200 + " [plain]", 60)) == 59


def test_status_words_are_coloured_only_when_asked() -> None:
    line = "FAIL synthetic/a [plain]  recordings/synthetic/a.sse"
    assert paint_line(line, colour=False) == line
    painted = paint_line(line, colour=True)
    assert painted != line and click.unstyle(painted) == line
    assert paint_line("  steps[1].text: FAIL", colour=True) == "  steps[1].text: FAIL"
    assert click.unstyle(paint_status(XPASSED, colour=True)) == "XPASS"


@pytest.mark.parametrize(
    ("no_color", "tty", "expected"),
    [(None, True, True), ("1", True, False), ("", True, True), (None, False, False)],
)
def test_colour_needs_a_terminal_and_no_no_color(
    monkeypatch: pytest.MonkeyPatch, no_color: str | None, tty: bool, expected: bool
) -> None:
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    assert wants_colour(Terminal() if tty else io.StringIO()) is expected


def test_quiet_prints_the_totals_only() -> None:
    target = f"{Path(__file__).resolve().parents[1] / 'miniatures.py'}:ServerErrorAsProtocol"
    args = ["run", target, "--in-process", "--mode", "plain", "-k", "synthetic/r8_*"]
    loud = invoke(*args)
    quiet = invoke(*args, "-q")
    assert loud.exit_code == quiet.exit_code == 1
    assert "FAIL " in loud.output
    (line,) = quiet.output.splitlines()
    counts = line.split(" (")[0]
    assert counts.startswith("totals: ") and loud.output.splitlines()[-1].startswith(counts)
