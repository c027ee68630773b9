"""Any environment: whatever the locale, the encoding of stdout, the file-system encoding, the
length of a name the OS accepts, or the state of stdout, a command does its job: no exit 3, no
false drift, no report lost.

Each probe runs `conform` in a fresh process, since the environment is read when Python starts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.conftest import conform
from tests.hostile.support import CASE, ROOT, small_suite

#: A case id no Latin encoding holds.
WIDE = "mine/日本語"


def _run(
    *args: str | Path, env: Mapping[str, str] | None = None, close_stdout: bool = False
) -> tuple[int, str, str]:
    """`conform ARGS` in a new process with `env` added (stdout closed with `close_stdout`):
    (exit status, stdout, stderr)."""
    command = [sys.executable, "-m", "harness", *map(str, args)]
    if close_stdout:
        command = ["sh", "-c", 'exec "$@" >&-', "sh", *command]
    done = subprocess.run(
        command, capture_output=True, cwd=ROOT, env={**os.environ, **(env or {})}, timeout=120
    )
    return (
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
    )


def _wide_suite(tmp_path: Path) -> Path:
    """A suite of one case whose id is `WIDE`, its golden file made by `golden update`."""
    suite = tmp_path / "suite"
    (suite / "recordings" / "mine").mkdir(parents=True)
    (suite / "golden").mkdir()
    shutil.copy(ROOT / "recordings" / f"{CASE}.http", suite / "recordings" / f"{WIDE}.http")
    code, output = conform("golden", "update", "--suite", suite)
    assert code == 0, output
    return suite


C_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}


@pytest.mark.parametrize(
    "env",
    [{"PYTHONIOENCODING": "latin-1"}, C_LOCALE],
    ids=["latin-1", "C-locale"],
)
def test_a_case_id_no_encoding_of_stdout_holds_is_printed_not_fatal(
    tmp_path: Path, env: dict[str, str]
) -> None:
    suite = _wide_suite(tmp_path)
    code, out, err = _run("list", "--suite", suite, env=env)
    assert code == 0, err
    assert "mine/" in out
    report = tmp_path / "report.json"
    run = ["run", "tests/miniatures.py:RepeatsToolCallId", "--in-process", "--suite", suite]
    code, out, err = _run(*run, "--mode", "plain", "--json", report, env=env)
    assert code == 0, err  # the case has no tool call: it passes
    assert json.loads(report.read_text(encoding="utf-8"))["results"][0]["case"] == WIDE


def test_the_c_locale_sees_no_drift_and_writes_the_same_golden_file(tmp_path: Path) -> None:
    suite = _wide_suite(tmp_path)
    golden = suite / "golden" / f"{WIDE}.json"
    before = golden.read_bytes()
    code, out, err = _run("golden", "check", "--suite", suite, env=C_LOCALE)
    assert code == 0, out + err
    code, out, err = _run("golden", "update", "--suite", suite, env=C_LOCALE)
    assert code == 0 and "0 of 1 golden files written" in out, out + err
    assert golden.read_bytes() == before
    assert sorted(p.name for p in golden.parent.iterdir()) == [golden.name]
    code, out, err = _run(
        "run", "reference:Assembler", "--in-process", "--suite", suite, "--mode", "plain",
        "-k", WIDE, env=C_LOCALE,
    )  # fmt: skip
    assert code == 0 and "1 passed" in out, out + err


def test_long_names_the_os_accepts_are_run_and_written(tmp_path: Path) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    long_id = "mine/" + "c" * 240  # its golden file's name: 245 bytes
    (suite / "recordings" / "mine").mkdir()
    shutil.copy(ROOT / "recordings" / f"{CASE}.http", suite / "recordings" / f"{long_id}.http")
    code, output = conform("golden", "update", "--suite", suite)
    assert code == 0, output
    report = tmp_path / ("r" * 245 + ".json")  # 250 bytes
    code, output = conform(
        "run", "reference:Assembler", "--in-process", "--suite", suite, "--mode", "plain",
        "--json", report,
    )  # fmt: skip
    assert code == 0, output
    assert len(json.loads(report.read_text())["results"]) == 2
    assert list(tmp_path.rglob("*.tmp")) == []


@pytest.mark.parametrize("target", ["reference:Assembler", "tests/miniatures.py:RepeatsToolCallId"])
def test_a_closed_stdout_keeps_the_verdict_and_the_report(tmp_path: Path, target: str) -> None:
    suite = small_suite(tmp_path / "suite", "llama-server/tool_call")
    report = tmp_path / "report.json"
    args = ["run", target, "--in-process", "--suite", suite, "--mode", "plain", "--json", report]
    code, _, err = _run(*args, close_stdout=True)
    expected = 0 if target.startswith("reference") else 1
    assert code == expected, err
    assert "Traceback" not in err
    assert json.loads(report.read_text())["ok"] is (expected == 0)


def test_stdout_on_a_full_device_still_gets_the_report_written(tmp_path: Path) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    report = tmp_path / "report.json"
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, "-m", "harness", "run", "reference:Assembler", "--in-process",
             "--suite", str(suite), "--mode", "plain", "--json", str(report)],
            stdout=full, stderr=subprocess.PIPE, cwd=ROOT, timeout=120,
        )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert b"No space left on device" in done.stderr and b"Traceback" not in done.stderr
    assert json.loads(report.read_text())["ok"] is True
