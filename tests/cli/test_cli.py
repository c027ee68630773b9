"""The `conform` command: help, exit codes, one-line errors, golden update and check."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

from harness.cli import main
from harness.suite.cases import Suite
from tests.conftest import conform, suite_of


def _subcommand(group: click.Group, name: str) -> click.Command:
    """`group`'s command `name` (the `conform` group imports each one on first use)."""
    command = group.get_command(click.Context(group), name)
    assert command is not None, name
    return command


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name in group.list_commands(click.Context(group)):
        command = _subcommand(group, name)
        found.append((*prefix, name))
        if isinstance(command, click.Group):
            found += _commands(command, (*prefix, name))
    return found


#: The cases the golden-file tests below break or run: the real captures and one synthetic case
#: (whose folder also takes an orphan). What `golden check`, `update` and `run` do with a missing,
#: edited, unreadable or orphaned file does not depend on how many cases stand beside it; that
#: the shipped suite's own golden files all match is test_golden_check_passes_on_the_shipped_suite.
SMALL = ("llama-server", "synthetic/r9_id_changes_midstream")


@pytest.fixture
def small_copy(suite: Suite, tmp_path: Path) -> Suite:
    """A private suite holding the SMALL cases of the shipped one, that a test may break."""
    return suite_of(suite, SMALL, tmp_path)


@pytest.mark.parametrize("path", _commands(main), ids=" ".join)
def test_every_command_has_help(path: tuple[str, ...]) -> None:
    code, output = conform(*path, "--help")
    assert code == 0
    command: click.Command = main
    for name in path:
        assert isinstance(command, click.Group)
        command = _subcommand(command, name)
    assert command.help and " ".join(command.help.split()[:4]) in " ".join(output.split())


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no.such:Thing", "Error: cannot import module 'no.such'"),
        ("reference:NoSuchThing", "Error: 'reference' has no attribute 'NoSuchThing'"),
        ("reference:MAX_DEPTH", "Error: 'reference:MAX_DEPTH' is a int, not a class or factory"),
        ("missing/file.py:Assembler", "Error: no such file: missing/file.py"),
    ],
)
def test_a_target_that_cannot_load_is_one_line_and_exit_2(target: str, message: str) -> None:
    """The loader's own message, whether the target is loaded in-process or in a worker."""
    code, output = conform("run", target)
    assert code == 2
    assert output.startswith(message)
    assert output.count("\n") == 1 and "Traceback" not in output


def test_a_target_whose_import_fails(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("raise RuntimeError('broken at import')\n")
    code, output = conform("run", f"{tmp_path / 'bad.py'}:Assembler")
    assert code == 2
    assert "RuntimeError: broken at import" in output and "Traceback" not in output


def test_a_malformed_target_is_a_usage_error() -> None:
    code, output = conform("run", "reference")
    assert code == 2 and "MODULE:ATTRIBUTE" in output


def test_a_factory_in_a_file(tmp_path: Path) -> None:
    (tmp_path / "mine.py").write_text(
        "import reference\ndef make():\n    return reference.Assembler()\n"
    )
    code, output = conform(
        "run", f"{tmp_path / 'mine.py'}:make", "-k", "llama-server/*", "--mode", "plain"
    )
    assert code == 0, output
    assert "totals: 9 passed" in output


def test_list_and_patterns(suite: Suite) -> None:
    code, output = conform("list", "--ids", "-k", "llama-server/tool_*")
    assert code == 0
    assert output.split() == ["llama-server/tool_call", "llama-server/tool_calls_parallel"]
    code, output = conform("list", "--ids")
    assert len(output.split()) == len(suite.cases())
    code, output = conform("list", "-k", "no-such-case")
    assert code == 2 and output.startswith("Error: no case of ")
    assert "selected by -k no-such-case" in output


def test_a_missing_suite_is_exit_2(tmp_path: Path) -> None:
    code, output = conform("list", "--suite", str(tmp_path))
    assert code == 2 and "has no recordings/ folder" in output


def test_golden_check_passes_on_the_shipped_suite(suite: Suite) -> None:
    code, output = conform("golden", "check")
    assert code == 0, output
    assert output == f"{len(suite.cases())} golden files match the reference\n"
    code, output = conform("golden", "check", "-k", "llama-server/*")
    assert output == f"{len(suite.cases(('llama-server/*',)))} golden files match the reference\n"


def test_golden_check_finds_a_deleted_an_edited_and_an_orphaned_file(small_copy: Suite) -> None:
    root = str(small_copy.root)
    deleted = small_copy.golden_path("llama-server/content_stop")
    edited = small_copy.golden_path("synthetic/r9_id_changes_midstream")
    orphan = small_copy.golden_dir / "synthetic" / "gone.json"
    deleted.unlink()
    edited.write_text(edited.read_text().replace('"is_finished": false', '"is_finished": true'))
    orphan.write_text("{}")
    code, output = conform("golden", "check", "--suite", root)
    assert code == 1
    assert f"missing: {deleted}" in output
    assert f"drifted: {edited}" in output
    assert f"orphaned: {orphan}" in output
    assert output.splitlines()[-1].startswith("3 problem(s); ")

    code, output = conform(
        "run", "reference:Assembler", "--suite", root, "-k", "llama-server/content_stop"
    )
    assert code == 2 and "no golden file for 'llama-server/content_stop'" in output

    code, output = conform("golden", "update", "--suite", root)
    assert code == 0
    assert f"created: {deleted}" in output and f"changed: {edited}" in output
    assert output.rstrip().endswith(f"2 of {len(small_copy.cases())} golden files written")
    orphan.unlink()
    assert conform("golden", "check", "--suite", root)[0] == 0


def test_an_edited_golden_file_fails_the_run(small_copy: Suite) -> None:
    path = small_copy.golden_path("llama-server/tool_call")
    golden = json.loads(path.read_text())
    golden["finish"]["completion"]["tool_calls"][0]["name"] = "write_file"
    path.write_text(json.dumps(golden, indent=2))
    code, output = conform(
        "run", "reference:Assembler", "--suite", str(small_copy.root), "-k", "llama-server/*"
    )
    assert code == 1
    assert (
        'finish.completion.tool_calls[0].name (finish): expected "write_file", got "read_file"'
        in output
    )


def test_an_unreadable_golden_file_is_exit_2(small_copy: Suite) -> None:
    small_copy.golden_path("llama-server/tool_call").write_text('{"schema": 1,')
    code, output = conform("run", "reference:Assembler", "--suite", str(small_copy.root))
    assert code == 2
    assert "tool_call.json: invalid JSON at line 1" in output and output.count("\n") == 1


def test_golden_check_with_a_pattern_looks_for_orphans_only_among_matching_ids(
    small_copy: Suite,
) -> None:
    (small_copy.golden_dir / "synthetic" / "gone.json").write_text("{}")
    root = str(small_copy.root)
    assert conform("golden", "check", "--suite", root, "-k", "llama-server/*")[0] == 0
    code, output = conform("golden", "check", "--suite", root, "-k", "synthetic/*")
    assert code == 1 and "orphaned:" in output


def test_list_shows_each_cases_class_and_what_it_pins() -> None:
    code, output = conform("list", "-k", "synthetic/r6_nesting_12[9]")
    assert code == 0
    assert output.split() == ["synthetic/r6_nesting_129", "implementation-defined", "R6", "I3"]
    code, output = conform("list", "-k", "llama-server/tool_call", "-k", "synthetic/r6_nan")
    lines = output.splitlines()
    assert lines[0].split() == [
        "llama-server/tool_call",
        "valid,",
        "real",
        *["R1", "R2", "R3", "R5", "R7", "R9"],
    ]
    assert lines[1].split() == ["synthetic/r6_nan", "invalid", "R6"]
    # The columns line up: the pins start where they start on every line.
    assert len({line.index("R") for line in lines}) == 1


def test_class_selects_on_list_and_run(suite: Suite, tmp_path: Path) -> None:
    from harness.suite.golden import open_golden

    classes = {case.case_id: str(open_golden(case).input_class) for case in suite.cases()}
    for kind in ("valid", "invalid", "implementation-defined"):
        code, output = conform("list", "--ids", "--class", kind)
        assert code == 0
        assert output.split() == [c for c, k in classes.items() if k == kind]
    code, output = conform("list", "--ids", "--class", "valid", "--class", "invalid")
    assert len(output.split()) == sum(k != "implementation-defined" for k in classes.values())
    report = tmp_path / "r.json"
    code, output = conform(
        "run",
        "reference:Assembler",
        "--in-process",
        "--mode",
        "plain",
        "--class",
        "invalid",
        "--json",
        str(report),
    )
    assert code == 0, output
    data = json.loads(report.read_text())
    assert {r["class"] for r in data["results"]} == {"invalid"}
    assert data["suite"]["cases"] == sum(k == "invalid" for k in classes.values())
    assert data["classes"]["valid"]["cases"] == 0
    code, output = conform("list", "--class", "nonsense")
    assert code == 2 and "'nonsense' is not one of" in output
    code, output = conform("run", "reference:Assembler", "-k", "llama-server", "--class", "invalid")
    assert code == 2 and "Error: no case of " in output and "--class invalid" in output


def test_rule_selects_and_exclude_removes(suite: Suite) -> None:
    code, output = conform("list", "--ids", "--rule", "i3")
    assert code == 0
    pinned = [c.case_id for c in suite.cases() if "I3" in c.pins]
    assert output.split() == pinned and len(pinned) >= 3
    code, output = conform("list", "--ids", "--rule", "I3", "--exclude", "*_objects")
    assert output.split() == [c for c in pinned if not c.endswith("_objects")]
    code, output = conform("list", "--ids", "--rule", "R8", "--rule", "I1")
    wanted = [c.case_id for c in suite.cases() if {"R8", "I1"} & set(c.pins)]
    assert output.split() == wanted
    code, output = conform("list", "--rule", "R10")
    assert code == 2 and "'R10' is not one of" in output


def test_run_reports_totals_per_rule(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    args = ("run", "reference:Assembler", "--in-process", "--mode", "plain", "--rule", "R6")
    code, output = conform(*args, "--json", str(report))
    assert code == 0, output
    data = json.loads(report.read_text())
    r6 = [r for r in data["results"] if "R6" in r["pins"]]
    assert len(r6) == data["suite"]["cases"] == data["rules"]["R6"]["cases"]
    assert data["rules"]["R6"] == {
        "cases": len(r6),
        "passed": len(r6),
        "failed": 0,
        "unexpected": 0,
    }
    rules = next(line for line in output.splitlines() if line.startswith("by rule"))
    assert f"R6 {len(r6)}/{len(r6)}" in rules


@pytest.mark.usefixtures("depth_read_once")  # tests/conftest.py: r6_nesting_100000 under I3 ignore
def test_every_report_totals_per_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    junit = tmp_path / "r.xml"
    target = "tests.check.fair_targets:I3_ignore"
    args = ("run", target, "--in-process", "--mode", "plain", "--rule", "I3", "--strict")
    code, output = conform(*args, "--junit-xml", str(junit))
    assert code == 1
    deep = Suite.open(Path(__file__).resolve().parents[2]).cases(rules=("I3",))
    i3, r6 = len(deep), sum("R6" in case.pins for case in deep)  # a new I3 case counts in both
    line = f"by rule (cases conforming): R1 1/1, R6 0/{r6} FAIL, R9 1/1, I2 1/1, I3 1/{i3} FAIL"
    assert line in output
    assert f'<property name="rule.I3" value="1/{i3} cases conforming" />' in junit.read_text()
    assert f"| I3 | 1/{i3} | ❌ |" in summary.read_text(encoding="utf-8")
