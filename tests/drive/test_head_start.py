"""The fork server of `conform run TARGET` started ahead (`harness.drive.forked.head_start`): it
imports the target while conform imports itself, and the run forks its workers from it as from a
server it started; a server no run takes is stopped with the run; only a command line that will
run a Python TARGET in workers starts one.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

import harness
from harness.cli import main, start_ahead
from harness.drive import forked
from harness.suite.cases import Suite
from tests.conftest import SUBREAPER, conform, live_children, wait_for_children

pytestmark = pytest.mark.skipif(
    not (SUBREAPER and sys.platform == "linux"), reason="the fork server is for Linux only"
)

#: A target that logs each import of it (with the importing process) and each worker it runs in.
TARGET = """
import json, os, pathlib
from reference import Assembler as _Reference

_LOG = pathlib.Path(os.environ["HEAD_START_LOG"])
with _LOG.open("a") as file:
    file.write(json.dumps({"imported": os.getpid()}) + "\\n")


class Target(_Reference):
    def __init__(self):
        super().__init__()
        with _LOG.open("a") as file:
            file.write(json.dumps({"worker": os.getpid()}) + "\\n")
"""


def _target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    path = tmp_path / "head_start_target.py"
    path.write_text(TARGET)
    log = tmp_path / "log.jsonl"
    monkeypatch.setenv("HEAD_START_LOG", str(log))
    return f"{path}:Target", log


def _log(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _ahead() -> list[forked.ForkServer]:
    return list(forked._SERVERS._ahead.values())


def _alive(pid: int) -> bool:
    return pid in live_children()


def test_the_run_forks_its_workers_from_the_server_started_ahead(
    tmp_path: Path, mini: Suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    target, log = _target(tmp_path, monkeypatch)
    before = live_children()
    args = ["run", target, "--suite", str(mini.root), "--mode", "plain"]
    assert forked.head_start(args)
    (server,) = _ahead()
    status, output = conform(*args)
    assert status == 0, output
    entries = _log(log)
    # One import, in the server started ahead; every worker forked from it (none imported it).
    assert [e["imported"] for e in entries if "imported" in e] == [server._worker.proc.pid]
    workers = {e["worker"] for e in entries if "worker" in e}
    assert workers and server._worker.proc.pid not in workers
    assert server.forks == 1
    assert _ahead() == []  # taken, and stopped with the run
    assert wait_for_children(before) == {}


def test_a_server_no_run_takes_is_stopped_with_the_run(
    tmp_path: Path, mini: Suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    target, log = _target(tmp_path, monkeypatch)
    before = live_children()
    assert forked.head_start(["run", target])
    (server,) = _ahead()
    server.wait_ready(30)  # its import logged before the run (a loaded machine may be slower)
    # Another environment than the one it was started with: the run starts a server of its own.
    monkeypatch.setenv("HEAD_START_OTHER", "1")
    status, output = conform("run", target, "--suite", str(mini.root), "--mode", "plain")
    assert status == 0, output
    imports = [e["imported"] for e in _log(log) if "imported" in e]
    assert len(imports) == 2 and server._worker.proc.pid in imports
    assert server.forks == 0
    assert _ahead() == []
    assert not _alive(server._worker.proc.pid)
    assert wait_for_children(before) == {}


@pytest.mark.parametrize(
    ("args", "started"),
    [
        (["run", "reference:Assembler"], True),
        (["run", "reference:Assembler", "-q", "-j", "2", "--mode", "plain"], True),
        (["run", "my_file.py:Target", "--timeout", "3"], True),
        (["run", "reference:Assembler", "--in-process"], False),
        (["run", "reference:Assembler", "--exec", "node x.mjs"], False),
        (["run", "reference:Assembler", "--exec=node x.mjs"], False),
        (["run", "reference:Assembler", "--help"], False),
        (["run", "--exec", "node x.mjs"], False),
        (["run", "-q", "reference:Assembler"], False),  # (not found where it is sure to be)
        (["run", "reference"], False),
        (["run"], False),
        (["matrix", "reference:Assembler"], False),
        (["golden", "update"], False),
        ([], False),
    ],
)
def test_only_a_run_of_a_python_target_in_workers_starts_one(
    args: list[str], started: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[list[str]] = []
    monkeypatch.setattr(forked._SERVERS, "start_ahead", lambda command, env: asked.append(command))
    assert forked.head_start(args) is started
    assert len(asked) == started
    if started:  # the very command line the run's workers get
        assert asked[0] == forked.worker_command(args[1])[0]
    monkeypatch.setenv(forked.NO_FORK_SERVER, "1")
    assert forked.head_start(args) is False


MAIN = str(Path(harness.__file__).with_name("__main__.py"))  # `python -m harness`'s argv[0]
ADAPTER = str(Path(harness.__file__).parent / "adapter" / "__main__.py")


@pytest.mark.parametrize(
    ("argv", "asked"),
    [
        (["/venv/bin/conform", "run", "reference:Assembler"], True),
        (["conform", "run", "reference:Assembler", "-q"], True),
        (["/venv/bin/conform", "matrix"], False),
        (["/venv/bin/pytest", "run", "reference:Assembler"], False),
        (["-c", "run", "reference:Assembler"], False),
        ([MAIN, "run", "reference:Assembler"], True),  # python -m harness run ...
        (["-m", "run", "reference:Assembler"], False),  # (the package imported, not yet run)
        ([ADAPTER, "reference:Assembler"], False),  # python -m harness.adapter TARGET
        ([], False),
    ],
)
def test_the_conform_command_asks_for_it_from_its_own_command_line(
    argv: list[str], asked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []
    monkeypatch.setattr(forked, "head_start", lambda args: bool(seen.append(list(args))))
    assert start_ahead(argv) is asked
    assert seen == ([argv[1:]] if asked else [])


def test_only_the_entry_point_asks_for_it_not_an_import_or_a_call_with_arguments(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[list[str]] = []
    monkeypatch.setattr(forked, "head_start", lambda args: bool(seen.append(list(args))))
    argv = ["/venv/bin/conform", "run", "reference:Assembler", "--help"]
    monkeypatch.setattr(sys, "argv", argv)
    # As the installed script's __main__ is: under `python -m pytest` click would name the
    # program after pytest's package instead of sys.argv[0].
    monkeypatch.setattr(sys.modules["__main__"], "__package__", None, raising=False)
    with pytest.raises(SystemExit) as given:  # CliRunner and the Python API pass arguments
        main(argv[1:])
    assert given.value.code == 0 and seen == []
    with pytest.raises(SystemExit) as entry:  # the installed `conform`: main() reads sys.argv
        main()
    assert entry.value.code == 0 and seen == [argv[1:]]
    assert "Usage: conform run" in capsys.readouterr().out


def test_the_worker_command_is_the_drivers(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.drive.spec import python_target_driver

    driver = python_target_driver("reference:Assembler", max_memory=512)
    command, env = forked.worker_command("reference:Assembler", max_memory=512)
    assert driver._command == command and driver._env == env
    assert json.loads(env["CONFORM_SYS_PATH"]) == [os.path.abspath(p or ".") for p in sys.path]
