"""The pytest plugin: idle without its options; with them, one test per case and mode that fails
with `conform run`'s text, and works with pytest's -k, -x, --junitxml and xdist."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

# Imported here, before any in-process pytester run: such a run removes from sys.modules what it
# imported but leaves the package's attribute (harness.drive.messages), so a module imported later
# by `from harness.drive import messages` would get the old module while the driver, by `from
# harness.drive.messages import Refused`, gets a new one: a refusal then escapes as another class
# (test_an_unimportable_target_is_a_usage_error, after any in-process run, failed so).
import harness.drive.batched  # noqa: F401
from harness.check.modes import MODES
from harness.reports.junit import junit_names
from harness.suite.cases import Suite
from tests.conftest import FOREIGN_PLUGINS_OFF, invoke

pytest_plugins = ["pytester"]

TESTS = Path(__file__).resolve().parents[1]
MINIATURES = TESTS / "miniatures.py"
BROKEN = f"{MINIATURES}:ServerErrorAsProtocol"  # fails the r8_* cases (server errors)


@pytest.fixture(scope="module")
def r8_cases() -> list[str]:
    """The r8_* cases BROKEN fails in plain mode, as conform run finds them."""
    cli = invoke("run", BROKEN, "--in-process", "--mode", "plain", "-k", "synthetic/r8_*")
    cases = [line.split()[1] for line in cli.output.splitlines() if line.startswith("FAIL ")]
    assert len(cases) >= 2, cli.output
    return cases


def outcomes(result: pytest.RunResult) -> dict[str, int]:
    return result.parseoutcomes()


def test_without_its_options_the_plugin_adds_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_one():\n    assert True\n")
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["*.py::test_one", "1 test collected*"])
    assert "conform" not in result.stdout.str()
    help_text = pytester.runpytest("--help").stdout.str()
    assert "--conform-target" in help_text and "--conform-suite" in help_text


def test_one_test_per_case_and_mode_named_like_the_junit_report(
    pytester: pytest.Pytester, suite: Suite
) -> None:
    cases = suite.cases(("synthetic/r1_*",))
    result = pytester.runpytest(
        "--conform-target", "reference:Assembler", "--conform-in-process", "-k", "r1_", "-v"
    )
    assert result.ret == 0
    assert outcomes(result)["passed"] == len(cases) * len(MODES)
    first = cases[0].case_id.rpartition("/")[2]
    result.stdout.fnmatch_lines([f"conform/synthetic::{first}[[]plain[]] PASSED*"])


def test_a_failure_shows_what_conform_run_prints(
    pytester: pytest.Pytester, r8_cases: list[str]
) -> None:
    result = pytester.runpytest(
        "--conform-target", BROKEN, "--conform-in-process", "--conform-mode", "plain", "-k", "r8_"
    )
    assert result.ret == 1
    assert outcomes(result)["failed"] == len(r8_cases)
    cli = invoke("run", BROKEN, "--in-process", "--mode", "plain", "-k", "synthetic/r8_*")
    mismatch_lines = [line for line in cli.output.splitlines() if line.startswith("  steps[")]
    assert mismatch_lines
    for line in mismatch_lines:
        assert line in result.stdout.lines


def test_pytest_junitxml_carries_the_same_failures_as_conform_junit_xml(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    ours, theirs = tmp_path / "conform.xml", tmp_path / "pytest.xml"
    args = ["--mode", "plain", "-k", "synthetic/r8_*", "-k", "synthetic/r1_*"]
    invoke("run", BROKEN, "--in-process", *args, "--junit-xml", str(ours))
    pytester.runpytest(
        "--conform-target",
        BROKEN,
        "--conform-in-process",
        "--conform-mode",
        "plain",
        "-k",
        "r8_ or r1_",
        f"--junitxml={theirs}",
    )

    def failures(path: Path) -> dict[tuple[str, str], str]:
        found = {}
        for case in ET.parse(path).getroot().iter("testcase"):
            failure = case.find("failure")
            if failure is not None:
                found[(case.get("classname", ""), case.get("name", ""))] = failure.text or ""
        return found

    in_conform, in_pytest = failures(ours), failures(theirs)
    assert in_conform and set(in_pytest) == set(in_conform)
    assert all(name[0] == junit_names("synthetic/x", "plain")[0] for name in in_pytest)
    for name, text in in_pytest.items():
        lines = text.splitlines()  # conform's JUnit report has no `rerun:` line; pytest's has
        mismatches = [line for line in lines if line.startswith("  ") and "rerun: " not in line]
        assert mismatches and all(line in in_conform[name].splitlines() for line in mismatches)


def test_k_matches_the_case_id_and_x_stops_at_the_first_failure(
    pytester: pytest.Pytester, r8_cases: list[str], suite: Suite
) -> None:
    result = pytester.runpytest(
        "--conform-target", BROKEN, "--conform-in-process", "-k", f"{r8_cases[0]} and plain"
    )
    every = len(suite.cases()) * len(MODES)
    assert outcomes(result) == {"failed": 1, "deselected": every - 1}
    result = pytester.runpytest(
        "--conform-target", BROKEN, "--conform-in-process", "-x", "-k", "r8_"
    )
    assert outcomes(result)["failed"] == 1


def test_an_xfail_file_makes_strict_xfails(
    pytester: pytest.Pytester, r8_cases: list[str], suite: Suite
) -> None:
    xfail = pytester.path / "conform.xfail"
    xfail.write_text(f"{r8_cases[0]}  plain  # server errors not done\n", encoding="utf-8")
    common = ["--conform-in-process", "--conform-mode", "plain", "--conform-xfail", str(xfail)]
    broken = pytester.runpytest("--conform-target", BROKEN, *common, "-k", r8_cases[0], "-rx")
    assert outcomes(broken) == {"xfailed": 1, "deselected": len(suite.cases()) - 1}
    broken.stdout.fnmatch_lines(["*server errors not done*"])
    fixed = pytester.runpytest(
        "--conform-target", "reference:Assembler", *common, "-k", r8_cases[0]
    )
    assert fixed.ret == 1 and outcomes(fixed)["failed"] == 1  # XPASS(strict)


def test_conform_class_selects_the_cases_of_a_class_of_input(
    pytester: pytest.Pytester, suite: Suite
) -> None:
    from harness.suite.golden import open_golden

    # The R6 and I2 cases (-k): cases of all three classes; the whole suite adds only more of each.
    chosen = [c for c in suite.cases() if "r6_" in c.case_id or "i2_" in c.case_id]
    classes = {c.case_id: open_golden(c).input_class for c in chosen}
    invalid = [c for c, kind in classes.items() if kind == "invalid"]
    assert len(set(classes.values())) == 3, classes
    lax = f"{MINIATURES}:AcceptsInvalidInput"  # every valid stream right, no invalid refused
    common = ["--conform-in-process", "--conform-mode", "plain", "-k", "r6_ or i2_"]
    result = pytester.runpytest("--conform-target", lax, *common, "--conform-class", "invalid")
    found = outcomes(result)
    found.pop("deselected")  # by -k, among the invalid cases
    assert found == {"failed": len(invalid)}
    result = pytester.runpytest("--conform-target", lax, *common, "--conform-class", "valid",
                                "--conform-class", "implementation-defined")  # fmt: skip
    assert result.ret == 0 and outcomes(result)["passed"] == len(chosen) - len(invalid)
    result = pytester.runpytest("--conform-target", lax, *common, "--conform-class", "nonsense")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: 'nonsense' is not a class of input*"])


def test_an_unimportable_target_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--conform-target", "no_such_module:Assembler")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: cannot import module 'no_such_module'*"])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--conform-timeout", "0"], "--conform-timeout: * is not above 0 seconds*"),
        (["--conform-exec", "true", "--conform-in-process"], "--in-process runs a Python TARGET*"),
    ],
)
def test_options_conform_run_refuses_are_usage_errors(
    pytester: pytest.Pytester, options: list[str], message: str
) -> None:
    target = [] if "--conform-exec" in options else ["--conform-target", "reference:Assembler"]
    result = pytester.runpytest(*target, *options, "--conform-mode", "plain", "-k", "r8_")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


def test_exec_runs_a_protocol_program(pytester: pytest.Pytester) -> None:
    program = f"{sys.executable} -m harness.adapter {BROKEN}"
    result = pytester.runpytest("--conform-exec", program, "--conform-mode", "plain", "-k", "r8_")
    assert result.ret == 1 and outcomes(result)["failed"] >= 2


def test_worker_processes_and_xdist(pytester: pytest.Pytester, r8_cases: list[str]) -> None:
    result = pytester.runpytest(
        *FOREIGN_PLUGINS_OFF,
        *("--conform-target", BROKEN, "--conform-mode", "plain", "-k", "r8_ or r1_", "-n", "2"),
    )
    assert result.ret == 1
    assert outcomes(result)["failed"] == len(r8_cases)
    assert outcomes(result)["passed"] > 0
    result.stdout.fnmatch_lines(["*2 workers*"])


def test_a_program_that_cannot_start_is_one_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        *FOREIGN_PLUGINS_OFF, "--conform-exec", "no-such-program-conform-xyz"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "cannot start 'no-such-program-conform-xyz'" in err
    assert err.count("no-such-program-conform-xyz") <= 2 and "Traceback" not in err
    assert "failed" not in result.stdout.str()


def test_ids_stay_conforms_own_when_the_suite_sets_the_rootdir(
    pytester: pytest.Pytester, suite: Suite
) -> None:
    """A suite given as a separate argument makes pytest take it for the rootdir; the tests are
    still shown as conform/..., never as a path relative to the current folder."""
    result = pytester.runpytest(
        "--conform-target", "reference:Assembler", "--conform-in-process",
        "--conform-suite", str(suite.root), "--conform-mode", "plain",
        "-k", "llama-server/tool_call", "-v", "-n", "0",
    )  # fmt: skip
    assert result.ret == 0
    result.stdout.fnmatch_lines(["conform/llama-server::tool_call[[]plain[]] PASSED*"])
    assert "../" not in result.stdout.str()


@pytest.mark.parametrize("value", ["inf", "nan", "1e300", "0", "abc"])
def test_a_bad_timeout_is_one_usage_error(pytester: pytest.Pytester, value: str) -> None:
    # In-process: a traceback would still reach the captured stderr (pytester prints what escapes).
    result = pytester.runpytest(
        "--conform-target", "reference:Assembler", "--conform-timeout", value
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "--conform-timeout" in err and "Traceback" not in err and len(err.splitlines()) <= 3


def test_a_stale_golden_file_is_named_not_blamed_on_the_target(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """A recording whose `thinking_capped` its golden file does not share is the suite's fault,
    as `conform run` says: the test fails naming the golden file, whatever the target does."""
    case = "synthetic/r3_timings_draft_fields"
    root = Path(__file__).resolve().parents[2]
    for folder, suffix in (("recordings", ".sse"), ("golden", ".json")):
        (tmp_path / folder / "synthetic").mkdir(parents=True)
        (tmp_path / folder / f"{case}{suffix}").write_bytes(
            (root / folder / f"{case}{suffix}").read_bytes()
        )
    recording = tmp_path / "recordings" / f"{case}.sse"
    first, rest = recording.read_text(encoding="utf-8").split("\n", 1)
    assert first.startswith(": ")  # a comment line, made a directive: no line moves
    recording.write_text(": thinking_capped: true\n" + rest, encoding="utf-8")
    result = pytester.runpytest(
        "--conform-target", "reference:Assembler", "--conform-in-process",
        "--conform-suite", str(tmp_path), "--conform-mode", "plain", "-n", "0",
    )  # fmt: skip
    assert outcomes(result).get("failed") == 1, result.stdout.str()
    result.stdout.fnmatch_lines(["*out of date with*thinking_capped is true*"])
