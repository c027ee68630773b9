"""Class 7, exit 3 ("a bug in conform") for the world's faults: a full or read-only disk, no
permission, bad numbers, bad ports and a deleted current folder are one `Error:` line and exit
2; a closed stdout (`conform list | head -1`) exits quietly. Exit 3 stays for conform's own bugs.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from harness import files
from harness.seconds import MAX_SECONDS, Seconds
from tests.conftest import conform
from tests.hostile.support import CASE, ROOT, small_suite


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (errno.ENOSPC, "No space left on device"),
        (errno.EROFS, "Read-only file system"),
        (errno.EACCES, "Permission denied"),
        (errno.EDQUOT, "quota"),
    ],
    ids=["ENOSPC", "EROFS", "EACCES", "EDQUOT"],
)
def test_a_disk_fault_in_golden_update_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, words: str
) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    (suite / "golden" / f"{CASE}.json").unlink()  # so that update writes it

    def fail(*args: object, **kwargs: object) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(files.os, "replace", fail)
    monkeypatch.setattr(files.os, "fsync", fail)
    status, output = conform("golden", "update", "--suite", suite)
    assert status == 2, output
    (line,) = output.splitlines()
    assert line.startswith("Error: cannot write ") and words.lower() in line.lower()
    assert "Traceback" not in output
    assert list((suite / "golden").rglob("*.tmp")) == []


def test_an_unexpected_oserror_outside_writes_is_one_line_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.suite import golden

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", "somewhere")

    monkeypatch.setattr(golden, "update", full)
    status, output = conform("golden", "update", "--suite", small_suite(tmp_path / "s", CASE))
    assert status == 2 and output.startswith("Error: somewhere: No space left"), output


def test_a_bug_in_conform_still_exits_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.suite import golden

    def bug(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(golden, "update", bug)
    status, output = conform("golden", "update", "--suite", small_suite(tmp_path / "s", CASE))
    assert status == 3 and "Internal error" in output


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e300", "0", "-1", "abc", "", "1e7"])
def test_record_refuses_a_timeout_that_is_not_a_finite_positive_number(
    tmp_path: Path, value: str
) -> None:
    (tmp_path / "req.json").write_text('{"messages": []}')
    status, output = conform(
        "record", "http://127.0.0.1:9", "--request", tmp_path / "req.json",
        "--suite", small_suite(tmp_path / "s", CASE), "--timeout", value, "x",
    )  # fmt: skip
    assert status == 2, output
    assert "Invalid value for '--timeout'" in output and "Traceback" not in output


def test_seconds_accepts_what_a_timeout_can_be() -> None:
    seconds = Seconds()
    assert seconds.convert("2.5", None, None) == 2.5
    assert seconds.convert(30, None, None) == 30.0
    assert seconds.convert(str(MAX_SECONDS), None, None) == MAX_SECONDS
    with pytest.raises(click.BadParameter):
        seconds.convert(float("inf"), None, None)


@pytest.mark.parametrize("port", ["99999", "0", "65536"])
def test_record_refuses_a_port_out_of_range_in_one_line(tmp_path: Path, port: str) -> None:
    (tmp_path / "req.json").write_text('{"messages": []}')
    status, output = conform(
        "record", f"http://127.0.0.1:{port}", "--request", tmp_path / "req.json",
        "--suite", small_suite(tmp_path / "s", CASE), "x",
    )  # fmt: skip
    assert status == 2, output
    assert f"port {port}" in output and "ExceptionGroup" not in output


def _conform_process(*args: str, cwd: Path | None = None, shell: str | None = None) -> Any:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if shell is not None:
        return subprocess.run(shell, shell=True, capture_output=True, text=True, env=env,
                              cwd=cwd, executable="/bin/bash", timeout=120)  # fmt: skip
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=120)  # fmt: skip


def test_a_closed_pipe_exits_quietly() -> None:
    for _ in range(3):  # it once failed 5 of 5 tries
        done = _conform_process(
            shell=f"set -o pipefail; {sys.executable} -m harness list | head -1; "
            "echo status=${PIPESTATUS[0]} >&2"
        )
        assert done.stdout.count("\n") == 1
        stderr = done.stderr.strip()
        assert stderr.startswith("status=") and stderr.splitlines() == [stderr.splitlines()[0]]
        assert stderr.removeprefix("status=") in ("0", "141"), done.stderr


def test_a_deleted_current_folder_is_one_line(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    done = _conform_process(
        shell=f"cd {gone} && rmdir {gone} && {sys.executable} -m harness list --suite {ROOT}"
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "Error: the current folder no longer exists (cd to a folder that exists and run it again)"
    ]


def test_an_unknown_host_is_named_as_such() -> None:
    import socket

    from harness.capture.live import _reason

    try:
        raise socket.gaierror(-2, "Name or service not known")
    except socket.gaierror as cause:
        error = OSError("connect failed")
        error.__cause__ = cause
    assert _reason(error) == "cannot resolve the host name (name or service not known)"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
def test_a_really_full_device_is_one_line(tmp_path: Path) -> None:
    suite = small_suite(tmp_path / "s", CASE)
    status, output = conform(
        "run", "reference:Assembler", "--in-process", "--suite", suite, "--mode", "plain",
        "--json", "/dev/full",
    )  # fmt: skip
    assert status == 2 and "Error: cannot write /dev/full: No space left on device" in output
    assert Path("/dev/full").is_char_device()
    done = _conform_process(shell=f"{sys.executable} -m harness list --suite {suite} > /dev/full")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "Error: No space left on device (the disk is full: free some space and run it again)"
    ]
