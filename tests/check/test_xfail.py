"""Expected failures: the file format, judging results, baselines, and the CLI's exit codes."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

from harness.check.modes import MODES
from harness.check.results import (
    CRASHED,
    FAILED,
    PASSED,
    TIMED_OUT,
    XFAILED,
    XPASSED,
    CaseResult,
    Crash,
    Mismatch,
)
from harness.check.xfail import (
    XfailList,
    baseline_text,
    escape_glob,
    parse_lines,
    write_baseline,
)
from harness.errors import ConformError
from tests.conftest import conform, invoke

TESTS = Path(__file__).resolve().parents[1]
#: Two independent bugs (R1: no progress events; R2: "" for a completion without text), and the
#: same target with the R2 bug fixed: the cases only R2 broke then pass.
TWO_BUGS = '''
from tests.miniatures import DropsProgress, EmptyContentNotNull


class Broken(DropsProgress, EmptyContentNotNull):
    """DropsProgress's push, EmptyContentNotNull's finish."""


class OneFixed(DropsProgress):
    """Only the progress bug is left."""
'''
#: Cases where the two bugs show (progress events, completions without content), kept few for speed.
SOME_CASES = ("-k", "llama-server/progress_*", "-k", "synthetic/r2_*", "-k", "synthetic/r1_*")


def result(case_id: str, mode: str, status: str, **fields: object) -> CaseResult:
    return CaseResult(case_id, mode, f"{case_id}.sse", status, 0.01, **fields)  # type: ignore[arg-type]


def xfail_list(text: str) -> XfailList:
    path = Path("expected.xfail")
    return XfailList(path, tuple(parse_lines(path, text)))


# -- the format ---------------------------------------------------------------------------------


def test_lines_have_a_case_glob_optional_mode_globs_and_a_reason() -> None:
    entries = parse_lines(
        Path("f"),
        "# a comment line\n"
        "\n"
        "llama-server/tool_call  unknown-fields  # drops unknown fields # see #12\n"
        "synthetic/r6_*   # every mode\n"
        "synthetic/x  plain,key-order\n"
        "issue#7\n",
    )
    assert [(e.case_glob, e.mode_glob, e.reason, e.line) for e in entries] == [
        ("llama-server/tool_call", "unknown-fields", "drops unknown fields # see #12", 3),
        ("synthetic/r6_*", "*", "every mode", 4),
        ("synthetic/x", "plain,key-order", "", 5),
        ("issue#7", "*", "", 6),  # a '#' inside a word is part of it
    ]


def test_a_line_with_three_fields_is_a_usage_error_naming_file_and_line() -> None:
    with pytest.raises(ConformError, match=r"^f:2: expected 'CASE_GLOB \[MODE_GLOB\]"):
        parse_lines(Path("f"), "ok/case\nsynthetic/x plain extra\n")


@pytest.mark.parametrize(
    "case_id", ["plain/id", "with space/and\ttab", "star*and?mark[x]", "#hash,comma", "a # b"]
)
def test_an_escaped_case_id_is_one_field_that_matches_only_itself(case_id: str) -> None:
    glob = escape_glob(case_id)
    (entry,) = parse_lines(Path("f"), f"{glob}  plain  # why\n")
    assert entry.case_glob == glob and entry.reason == "why"
    assert fnmatch.fnmatchcase(case_id, entry.case_glob)
    assert not fnmatch.fnmatchcase(case_id + "x", entry.case_glob)
    assert not fnmatch.fnmatchcase("x" + case_id, entry.case_glob)


def test_check_names_the_first_line_that_matches_no_case_or_no_mode() -> None:
    ids = ["llama-server/tool_call", "synthetic/r1_a"]
    xfail_list("synthetic/*\nllama-server/tool_call plain,*-fields\n").check(ids, MODES)
    with pytest.raises(ConformError, match=r"expected\.xfail:2: 'synthetic/r9_\*' matches no case"):
        xfail_list("synthetic/*\nsynthetic/r9_*\n").check(ids, MODES)
    with pytest.raises(ConformError, match=r"expected\.xfail:1: mode 'plian' matches no mode"):
        xfail_list("synthetic/* plain,plian\n").check(ids, MODES)


# -- judging results ----------------------------------------------------------------------------


@pytest.mark.parametrize("status", [FAILED, CRASHED, TIMED_OUT])
def test_an_expected_failure_is_xfailed_and_keeps_what_it_was(status: str) -> None:
    expected = xfail_list("# header\nsynthetic/r1_*  plain  # not yet\n")
    judged = expected.apply(result("synthetic/r1_a", "plain", status))
    assert judged.status == XFAILED
    assert judged.expectation is not None
    assert (judged.expectation.was, judged.expectation.reason) == (status, "not yet")
    assert judged.expectation.source == "expected.xfail:2"


def test_an_expected_failure_that_passes_is_xpassed_and_others_are_untouched() -> None:
    expected = xfail_list("synthetic/r1_*  plain\n")
    assert expected.apply(result("synthetic/r1_a", "plain", PASSED)).status == XPASSED
    assert expected.apply(result("synthetic/r1_a", "escapes", FAILED)).status == FAILED
    assert expected.apply(result("synthetic/r2_a", "plain", PASSED)).status == PASSED


def test_the_first_line_covering_a_result_applies_in_every_mode_and_case() -> None:
    # The lines covering a case are found once per case: the order and the modes still hold.
    expected = xfail_list(
        "synthetic/r1_a  escapes  # exact\nsynthetic/r1_*  plain,escapes  # glob\n"
        "synthetic  # folder\n"
    )
    reasons = [
        (case, mode, getattr(expected.find(case, mode), "reason", None))
        for case in ("synthetic/r1_a", "synthetic/r1_b", "synthetic/r1_a", "llama-server/x")
        for mode in ("plain", "escapes", "truncated")
    ]
    assert reasons == [
        ("synthetic/r1_a", "plain", "glob"),
        ("synthetic/r1_a", "escapes", "exact"),
        ("synthetic/r1_a", "truncated", "folder"),
        ("synthetic/r1_b", "plain", "glob"),
        ("synthetic/r1_b", "escapes", "glob"),
        ("synthetic/r1_b", "truncated", "folder"),
        ("synthetic/r1_a", "plain", "glob"),
        ("synthetic/r1_a", "escapes", "exact"),
        ("synthetic/r1_a", "truncated", "folder"),
        ("llama-server/x", "plain", None),
        ("llama-server/x", "escapes", None),
        ("llama-server/x", "truncated", None),
    ]


def test_the_baseline_lists_failures_with_status_and_first_mismatch_and_reads_back() -> None:
    mismatch = Mismatch("steps[1].events[0].text", "Hi", None, 1, 5)
    crash = Crash("push raised KeyError: 'x'", "Traceback ...", 0, 3, None)
    results = [
        result("a b/c", "plain", FAILED, mismatches=(mismatch,)),
        result("a b/c", "escapes", PASSED),
        result("d", "plain", CRASHED, crash=crash),
    ]
    text = baseline_text(results)
    entries = parse_lines(Path("f"), text)
    assert [(e.case_glob, e.mode_glob) for e in entries] == [("a[ ]b/c", "plain"), ("d", "plain")]
    assert entries[0].reason == 'failed: steps[1].events[0].text: expected "Hi", got null'
    assert entries[1].reason == "crashed: push raised KeyError: 'x'"
    judged = [XfailList(Path("f"), tuple(entries)).apply(r) for r in results]
    assert [r.status for r in judged] == [XFAILED, PASSED, XFAILED]


def test_write_baseline_counts_the_lines_it_writes(tmp_path: Path) -> None:
    # One case failing in two modes is one line; passes, and an xpass, are none.
    mismatch = Mismatch("finish", 1, 2)
    results = [
        result("a", "plain", FAILED, mismatches=(mismatch,)),
        result("a", "escapes", TIMED_OUT),
        result("b", "plain", PASSED),
        result("c", "plain", XPASSED),
        result("d", "plain", CRASHED, crash=Crash("boom", "", None, None, None)),
    ]
    path = tmp_path / "conform.xfail"
    written = write_baseline(path, results)
    entries = XfailList.load(path).entries
    assert [e.case_glob for e in entries] == ["a", "d"]
    assert written == len(entries) == 2


def test_rewriting_a_baseline_keeps_the_reasons_people_wrote() -> None:
    expected = xfail_list("d  plain  # waiting for upstream\n")
    judged = expected.apply(result("d", "plain", FAILED, mismatches=(Mismatch("x", 1, 2),)))
    (entry,) = parse_lines(Path("f"), baseline_text([judged]))
    assert entry.reason == "waiting for upstream"


def _rebaselined(previous: str, mismatch: Mismatch, *, through_xfail: bool) -> str:
    """The one reason of case `d` once its baseline `previous` is written again over a run in
    which `d` fails in plain with `mismatch`: read back as `--xfail` (the expectation carries
    the old reason) or only merged with the file it replaces."""
    failed = result("d", "plain", FAILED, mismatches=(mismatch,))
    judged = xfail_list(previous).apply(failed) if through_xfail else failed
    (entry,) = parse_lines(Path("f"), baseline_text([judged], previous=previous))
    return entry.reason


@pytest.mark.parametrize("through_xfail", [True, False])
def test_a_generated_reason_stays_while_the_case_fails_the_same_way(through_xfail: bool) -> None:
    old = 'failed: steps[0].state.id: expected null, got "chatcmpl-8e4f"'
    previous = f"d  plain  # {old}\n"
    # Only what the target gave differs (an id a client invents on each run): the line stays.
    invented = Mismatch("steps[0].state.id", None, "chatcmpl-dd55")
    assert _rebaselined(previous, invented, through_xfail=through_xfail) == old
    # Another expected value, field or status is another failure: its own reason.
    for other, reason in [
        (Mismatch("steps[0].state.id", "x", "chatcmpl-dd55"), 'expected "x", got "chatcmpl-dd55"'),
        (Mismatch("steps[1].state.id", None, "chatcmpl-dd55"), "steps[1].state.id: expected null"),
    ]:
        got = _rebaselined(previous, other, through_xfail=through_xfail)
        assert got != old and reason in got, got
    # A crash's message word for word, but for a memory address (another on each run).
    crashed = (
        "crashed: push raised KeyError: <built-in method index of str object at 0x7fb3f89ccb30>"
    )
    for message, kept in [
        (crashed.replace("fb3f8", "02aa9"), True),
        ("crashed: push raised E", False),
    ]:
        crash = Crash(message.removeprefix("crashed: "), "", 0, 1, None)
        failed = result("d", "plain", CRASHED, crash=crash)
        judged = xfail_list(f"d  plain  # {crashed}\n").apply(failed) if through_xfail else failed
        (entry,) = parse_lines(Path("f"), baseline_text([judged], previous=f"d  # {crashed}\n"))
        assert (entry.reason == crashed) is kept, entry.reason
    timed_out = previous.replace("failed:", "timed-out:")
    got = _rebaselined(timed_out, invented, through_xfail=through_xfail)
    assert got.startswith("failed: steps[0].state.id: expected null, got"), got
    assert got != old


# -- through conform run ------------------------------------------------------------------------


@pytest.fixture
def two_bugs(tmp_path: Path) -> Path:
    path = tmp_path / "two_bugs.py"
    path.write_text(TWO_BUGS, encoding="utf-8")
    return path


def test_a_baseline_makes_a_broken_target_pass_until_one_case_is_fixed(
    two_bugs: Path, tmp_path: Path
) -> None:
    baseline = tmp_path / "conform.xfail"
    broken, one_fixed = f"{two_bugs}:Broken", f"{two_bugs}:OneFixed"
    code, output = conform("run", broken, "--mode", "plain", *SOME_CASES)
    assert code == 1, output
    failures = output.count("\nFAIL ") + output.startswith("FAIL ")
    assert failures >= 2, output

    code, output = conform(
        "run", broken, "--mode", "plain", *SOME_CASES, "--write-xfail", str(baseline)
    )
    assert code == 0, output
    lines = [line for line in baseline.read_text().splitlines() if line and line[0] != "#"]
    assert len(lines) == failures
    assert f"wrote {failures} expected failure(s), one line a case, to {baseline}" in output
    assert not list(tmp_path.glob(".conform.xfail.*"))  # written atomically, nothing left over

    code, output = conform("run", broken, "--mode", "plain", *SOME_CASES, "--xfail", str(baseline))
    assert code == 0, output
    totals = re.fullmatch(
        rf"totals: (\d+) passed, {failures} xfailed \((\d+) runs in [\d.]+ s\)",
        output.splitlines()[-1],
    )
    assert totals is not None, output
    assert int(totals[1]) + failures == int(totals[2])

    code, output = conform(
        "run", one_fixed, "--mode", "plain", *SOME_CASES, "--xfail", str(baseline)
    )
    assert code == 1, output
    assert "XPASS " in output and "xpassed" in output
    assert "xfailed" in output  # the progress bug still fails where it did


def test_an_xfail_line_naming_no_case_exits_2_with_one_line(tmp_path: Path) -> None:
    xfail = tmp_path / "stale.xfail"
    xfail.write_text("# header\nllama-server/no_such_case  plain  # renamed\n", encoding="utf-8")
    result = invoke("run", "reference:Assembler", "--in-process", "--xfail", str(xfail))
    assert result.exit_code == 2
    error_lines = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(error_lines) == 1, result.output
    assert f"{xfail}:2:" in error_lines[0] and "no_such_case" in error_lines[0]
    assert "Traceback" not in result.output


def test_a_missing_xfail_file_exits_2(tmp_path: Path) -> None:
    code, output = conform("run", "reference:Assembler", "--xfail", str(tmp_path / "nope.xfail"))
    assert code == 2
    assert output.startswith("Error: no expected-failures file") and "--write-xfail" in output


def test_the_status_groups_and_counts() -> None:
    from harness.check.status import STATUS_ORDER, Status, count_statuses

    assert {s for s in Status if s.fails_run} == {FAILED, CRASHED, TIMED_OUT, XPASSED}
    assert {s for s in Status if s.not_passing} == {FAILED, CRASHED, TIMED_OUT, XFAILED}
    assert {s for s in Status if s.conforms} == {PASSED, XPASSED}
    assert {s for s in Status if s.is_failure} == {FAILED, CRASHED, TIMED_OUT}
    assert STATUS_ORDER == (PASSED, FAILED, CRASHED, TIMED_OUT, XFAILED, XPASSED)
    assert sorted(Status, key=lambda s: s.severity) == [
        PASSED,
        XFAILED,
        XPASSED,
        FAILED,
        TIMED_OUT,
        CRASHED,
    ]
    assert [s.label for s in STATUS_ORDER] == ["PASS", "FAIL", "CRASH", "TIMEOUT", "XFAIL", "XPASS"]
    assert Status("timed-out") is TIMED_OUT and str(TIMED_OUT) == "timed-out"
    found = count_statuses(
        r.status for r in [result("a", "plain", FAILED), result("b", "plain", FAILED)]
    )
    assert found == {PASSED: 0, FAILED: 2, CRASHED: 0, TIMED_OUT: 0, XFAILED: 0, XPASSED: 0}
    assert list(found) == list(STATUS_ORDER)


def test_a_generated_reason_is_cut_to_200_characters() -> None:
    from harness.check.xfail import baseline_reason

    long_path = "steps[1]." + ".".join(["field"] * 60)
    reason = baseline_reason(result("a", "plain", FAILED, mismatches=(Mismatch(long_path, 1, 2),)))
    assert len(reason) == 200 and reason.endswith("…") and reason.startswith("failed: steps[1].")


def test_modes_failing_at_the_same_first_field_are_alike() -> None:
    # Alike by the first mismatch only: later ones may differ between modes (a cut, a payload).
    first = Mismatch("steps[1].events", [], [1], 1, 3)
    results = [
        result("a", mode, FAILED, mismatches=(first, Mismatch(f"finish.{mode}", 1, 2)))
        for mode in MODES
    ]
    text = baseline_text(results, all_modes=MODES)
    (entry,) = parse_lines(Path("f"), text)
    assert (entry.case_glob, entry.mode_glob) == ("a", "*")  # no MODES field: every mode
    other = [*results[:-1], result("a", MODES[-1], FAILED, mismatches=(Mismatch("finish", 1, 2),))]
    (entry,) = parse_lines(Path("f"), baseline_text(other, all_modes=MODES))
    assert entry.mode_glob == ",".join(MODES)


def test_rewriting_a_baseline_with_its_comments_changes_nothing() -> None:
    results = [result("a", "plain", FAILED, mismatches=(Mismatch("finish", 1, 2),))]
    previous = (
        "# header line of my own\n\n# about a\na  plain  # my reason\n\n# a note at the end\n"
    )
    once = baseline_text(results, previous=previous)
    assert baseline_text(results, previous=once) == once
    assert once.count("\n\n") == previous.count("\n\n") + 1  # the generated header's own gap


def test_a_baseline_written_again_unchanged_keeps_its_day_and_a_changed_one_says_today() -> None:
    from datetime import UTC, datetime

    failing_a = [result("a", "plain", FAILED, mismatches=(Mismatch("finish", 1, 2),))]
    monday, tuesday = datetime(2026, 11, 30, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)
    first = baseline_text(failing_a, when=monday)
    assert "--write-xfail, 2026-11-30)." in first.splitlines()[0]
    assert baseline_text(failing_a, when=tuesday, previous=first) == first
    failing_b = [*failing_a, result("b", "plain", FAILED, mismatches=(Mismatch("x", 1, 2),))]
    changed = baseline_text(failing_b, when=tuesday, previous=first)
    assert "--write-xfail, 2026-12-01)." in changed.splitlines()[0]
    assert changed.splitlines()[1:] != first.splitlines()[1:]
