"""Class 2, baselines shrink silently: `--write-xfail` merges with the file it replaces. Lines
for cases and modes this run did not run (`-k`, `--shard`, `--mode`) are kept with their
reasons, `--mode plain` never narrows a kept line to `plain`, and a glob line the run covered
in part still covers the cases it did not run."""

from __future__ import annotations

from pathlib import Path

from harness.check.modes import MODES
from harness.check.results import FAILED, PASSED, CaseResult, Mismatch
from harness.check.xfail import XfailList, baseline_text, parse_lines, write_baseline
from tests.conftest import conform
from tests.hostile.support import small_suite


def _failed(case: str, mode: str) -> CaseResult:
    return CaseResult(case, mode, f"{case}.sse", FAILED, 0.0, (Mismatch("finish", 1, 2),))


def _passed(case: str, mode: str) -> CaseResult:
    return CaseResult(case, mode, f"{case}.sse", PASSED, 0.0)


OLD = """\
s/a              # a drops the id, see #12
s/b  escapes     # b: escapes not done
s/glob_*  plain  # globs of mine
"""


def _covers(text: str, case: str, mode: str) -> str | None:
    """The reason of the line that expects `case` to fail in `mode`, or None."""
    for entry in parse_lines(Path("f"), text):
        if entry.matches(case, mode):
            return entry.reason
    return None


def test_lines_of_cases_not_run_are_kept_with_their_reasons() -> None:
    results = [_failed("s/c", mode) for mode in MODES]  # -k s/c: only s/c ran
    text = baseline_text(results, previous=OLD, all_modes=MODES)
    assert _covers(text, "s/a", "truncated") == "a drops the id, see #12"
    assert _covers(text, "s/b", "escapes") == "b: escapes not done"
    assert _covers(text, "s/b", "plain") is None
    assert _covers(text, "s/glob_x", "plain") == "globs of mine"
    assert _covers(text, "s/c", "plain") is not None


def test_mode_plain_never_narrows_a_kept_line() -> None:
    results = [_failed("s/a", "plain"), _passed("s/b", "plain"), _passed("s/glob_x", "plain")]
    text = baseline_text(
        results, previous=OLD, all_modes=MODES, suite_cases=["s/a", "s/b", "s/glob_x", "s/glob_y"]
    )
    for mode in MODES:  # s/a still fails in plain; its other modes were not run
        assert _covers(text, "s/a", mode) == "a drops the id, see #12", mode
    assert _covers(text, "s/b", "escapes") == "b: escapes not done"  # plain ran; escapes did not
    assert _covers(text, "s/glob_x", "plain") is None  # ran and passed: off the list
    assert _covers(text, "s/glob_y", "plain") == "globs of mine"  # not run: still expected
    entries = parse_lines(Path("f"), text)
    (line_a,) = [e for e in entries if e.case_glob == "s/a"]
    assert line_a.mode_glob == "*"  # every mode again, not `plain`


def test_a_case_that_passes_where_it_ran_keeps_its_other_modes() -> None:
    results = [_passed("s/a", "plain")]
    text = baseline_text(results, previous=OLD, all_modes=MODES)
    assert _covers(text, "s/a", "plain") is None
    assert all(_covers(text, "s/a", m) == "a drops the id, see #12" for m in MODES[1:])


def test_a_line_whose_cases_are_gone_is_dropped() -> None:
    text = baseline_text([_passed("s/a", "plain")], previous=OLD, all_modes=MODES,
                         suite_cases=["s/a"])  # fmt: skip
    assert _covers(text, "s/b", "escapes") is None and "globs of mine" not in text


def test_a_shard_keeps_the_other_shards_lines(tmp_path: Path) -> None:
    path = tmp_path / "conform.xfail"
    write_baseline(path, [_failed("s/a", m) for m in MODES] + [_failed("s/b", "escapes")])
    first = path.read_text()
    write_baseline(path, [_passed("s/c", m) for m in MODES])  # another shard: only s/c
    second = path.read_text()
    assert [(e.case_glob, e.mode_glob) for e in parse_lines(path, first)] == [
        (e.case_glob, e.mode_glob) for e in parse_lines(path, second)
    ]


TARGET = '''\
from reference import Assembler


class Crashes(Assembler):
    """Fails the cases that finish with tool calls or for length, in every mode."""

    def finish(self, thinking_capped):
        completion = super().finish(thinking_capped)
        if completion.tool_calls or completion.finish_reason == "length":
            raise RuntimeError("not done")
        return completion
'''


def test_write_xfail_with_k_and_mode_keeps_the_rest_through_the_cli(tmp_path: Path) -> None:
    suite = small_suite(
        tmp_path / "suite",
        "llama-server/content_stop",
        "llama-server/tool_call",
        "llama-server/reasoning_length",
    )
    (tmp_path / "crashes.py").write_text(TARGET)
    target = f"{tmp_path / 'crashes.py'}:Crashes"
    baseline = tmp_path / "conform.xfail"
    base = ["run", target, "--in-process", "--suite", suite]
    code, output = conform(*base, "--write-xfail", baseline)
    assert code == 0, output
    full = baseline.read_text()
    before = XfailList.load(baseline)
    assert len(before.entries) == 2
    line = next(line for line in full.splitlines() if line.startswith("llama-server/tool_call"))
    baseline.write_text(full.replace(line, line.split("#")[0] + "# mine: tool calls not done"))
    code, output = conform(
        *base, "-k", "llama-server/content_stop", "--mode", "plain", "--write-xfail", baseline
    )
    assert code == 0, output
    again = baseline.read_text()
    assert "# mine: tool calls not done" in again
    after = XfailList.load(baseline)
    for case in ("llama-server/tool_call", "llama-server/reasoning_length"):
        for mode in MODES:
            assert (before.find(case, mode) is None) == (after.find(case, mode) is None), again
    code, output = conform(*base, "--xfail", baseline)  # the full run still passes on it
    assert code == 0, output
