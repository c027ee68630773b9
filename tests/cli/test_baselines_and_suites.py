"""Baselines a maintainer can read (one line a case, what is kept) and suites that compose (one
rule for where commands look, several --suite, nothing written into an installed package)."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harness.check.modes import MODES
from harness.check.results import FAILED, PASSED, CaseResult, Mismatch
from harness.check.xfail import XfailList, baseline_text, parse_lines
from harness.suite import cases as suite_module
from tests.conftest import invoke

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
WHEN = datetime(2026, 12, 1, tzinfo=UTC)


def _failed(case: str, mode: str, field: str = "content") -> CaseResult:
    mismatch = Mismatch(f"finish.completion.{field}", "a", "x")
    return CaseResult(case, mode, f"{case}.sse", FAILED, 0.0, (mismatch,))


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_a_baseline_has_one_line_a_case_and_names_its_target_and_date() -> None:
    results = [_failed("s/every", mode) for mode in MODES]
    results += [_failed("s/some", "plain"), _failed("s/some", "escapes")]
    results += [_failed("s/unlike", mode, field=mode) for mode in MODES]
    cut = Mismatch("prefix[2].finish.completion.content", "a", "y")  # the same field, cut
    results[MODES.index("truncated")] = CaseResult("s/every", "truncated", "", FAILED, 0.0, (cut,))
    results.append(CaseResult("s/ok", "plain", "s/ok.sse", PASSED, 0.0))
    text = baseline_text(results, target="mypkg:Assembler", when=WHEN, all_modes=MODES)
    assert text.startswith("# Expected failures of mypkg:Assembler (conform run --write-xfail, "
                           "2026-12-01).")  # fmt: skip
    every, some, unlike = _lines(text)
    assert every.split()[0:2] == ["s/every", "#"]  # no modes: every mode, alike
    assert some.split()[1] == "plain,escapes"
    assert unlike.split()[1] == ",".join(MODES)  # every mode, but not alike: named
    entries = parse_lines(Path("f"), text)
    assert [e.mode_glob for e in entries] == ["*", "plain,escapes", ",".join(MODES)]


OLD = """\
# Expected failures of conform (written by 'conform run --write-xfail').
# One line each: CASE_GLOB [MODE_GLOB]  # reason. Remove a line once its case passes.
# Kept: a note at the top.

# why s/a fails: see #12
s/a  plain           # drops the id, see #12
s/a  escapes         # failed: finish.completion.content: expected "a", got "x"
# gone with its entry
s/gone  plain        # fixed meanwhile
"""


def test_rewriting_a_baseline_keeps_hand_written_reasons_and_comments(tmp_path: Path) -> None:
    results = [_failed("s/a", "plain"), _failed("s/a", "escapes"), _failed("s/new", "plain")]
    results.append(CaseResult("s/gone", "plain", "s/gone.sse", PASSED, 0.0))  # ran, and passes
    text = baseline_text(results, target="t", when=WHEN, previous=OLD, all_modes=MODES)
    lines = text.splitlines()
    assert "# Kept: a note at the top." in lines
    assert "# Expected failures of conform (written by 'conform run --write-xfail')." not in lines
    at = lines.index("# why s/a fails: see #12")
    assert lines[at + 1].startswith("s/a ") and lines[at + 1].endswith("# drops the id, see #12")
    assert "# gone with its entry" not in text and "fixed meanwhile" not in text
    assert _lines(text)[1].endswith('# failed: finish.completion.content: expected "a", got "x"')
    again = baseline_text(results, target="t", when=WHEN, previous=text, all_modes=MODES)
    assert again == text  # writing it again changes nothing


def test_an_old_format_baseline_is_still_read(tmp_path: Path) -> None:
    path = tmp_path / "old.xfail"
    path.write_text(OLD, encoding="utf-8")
    expected = XfailList.load(path)
    assert expected.find("s/a", "escapes") is not None
    assert expected.apply(_failed("s/a", "plain")).status == "xfailed"


def test_write_xfail_through_the_cli_keeps_what_the_file_had(tmp_path: Path) -> None:
    baseline = tmp_path / "conform.xfail"
    target = f"{TESTS / 'miniatures.py'}:ContentBeforeReasoning"
    # The R1 cases (six of them fail) in two modes: what the rewrite keeps does not depend on
    # more cases or modes.
    some = ("-k", "synthetic/r1_*", "--mode", "plain", "--mode", "whitespace")
    run = ["run", target, "--in-process", *some, "--write-xfail", str(baseline)]
    assert invoke(*run).exit_code == 0
    first = baseline.read_text("utf-8")
    case_line = _lines(first)[0]
    baseline.write_text(first.replace(case_line, "# mine\n" + case_line.split("#")[0] + "# R1"))
    assert invoke(*run).exit_code == 0
    second = baseline.read_text("utf-8")
    assert "# mine\n" in second and _lines(second)[0].endswith("# R1")
    assert len(_lines(second)) == len(_lines(first))


def _own_suite(tmp_path: Path, case: str = "mine/content_stop") -> Path:
    own = tmp_path / "own"
    (own / "recordings" / Path(case).parent).mkdir(parents=True)
    (own / "golden" / Path(case).parent).mkdir(parents=True)
    shutil.copy(ROOT / "recordings/llama-server/content_stop.http", own / f"recordings/{case}.http")
    return own


def test_several_suites_run_together(tmp_path: Path) -> None:
    own = _own_suite(tmp_path)
    assert invoke("golden", "update", "--suite", str(own)).exit_code == 0
    listed = invoke("list", "--suite", ":shipped", "--suite", str(own))
    assert listed.exit_code == 0
    assert "mine/content_stop" in listed.output and "llama-server/content_stop" in listed.output
    out = invoke(
        "run", "reference:Assembler", "--in-process", "--suite", ":shipped", "--suite", own,
        "-k", "*/content_stop", "--mode", "plain", "-v",
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "PASS mine/content_stop" in out.output and "PASS llama-server/content_stop" in out.output


def test_a_case_id_in_two_suites_is_an_error(tmp_path: Path) -> None:
    own = _own_suite(tmp_path, "llama-server/content_stop")
    invoke("golden", "update", "--suite", str(own))
    out = invoke("list", "--suite", ":shipped", "--suite", str(own))
    assert out.exit_code == 2
    assert "case 'llama-server/content_stop' is in two suites" in out.output


@pytest.fixture
def installed_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shipped suite as a wheel installs it: inside site-packages (its real captures only:
    what a command may write there does not depend on how many cases it holds, and `golden
    check` over the 700 synthetic ones would add 1 s of CPU a test)."""
    packages = tmp_path / "site-packages"
    shipped = packages / "harness" / "_suite"
    for name in ("recordings", "golden"):
        shutil.copytree(ROOT / name / "llama-server", shipped / name / "llama-server")
    monkeypatch.setattr(suite_module, "default_suite_root", lambda: shipped)
    monkeypatch.setattr(suite_module, "_install_folders", lambda: [packages.resolve()])
    return shipped


@pytest.mark.parametrize(
    "command",
    [
        ["golden", "update"],
        ["golden", "update", "--suite", ":shipped"],
        ["record", "http://127.0.0.1:9", "--request", "REQ", "x/y"],
    ],
    ids=["golden-update", "golden-update-shipped", "record"],
)
def test_nothing_writes_into_an_installed_package(
    installed_suite: Path, tmp_path: Path, command: list[str]
) -> None:
    request = tmp_path / "req.json"
    request.write_text('{"messages": []}', encoding="utf-8")
    before = sorted(installed_suite.rglob("*"))
    out = invoke(*[str(request) if a == "REQ" else a for a in command])
    assert out.exit_code == 2, out.output
    assert "inside an installed package" in out.output and "--suite DIR" in out.output
    assert sorted(installed_suite.rglob("*")) == before
    assert invoke("golden", "check").exit_code == 0  # reading is fine
