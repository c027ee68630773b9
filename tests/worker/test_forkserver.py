"""Python workers forked from a fork server (`harness.drive.forked`, `harness.worker.forkserver`):
the target is imported once per run, whatever restarts it; every worker is isolated as a started one
is; a target that cannot start fails as it does without the server; nothing is left running.

Each test runs `conform run` in this process (a run opens `forked_workers()`), against a target
that logs each import and each assembler it makes, and compares with the same run without the
server (`forked_workers` replaced by a scope that opens none) where the difference is the point.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.drive.programs import _RUN, MARK, _marked
from harness.suite.cases import Suite
from tests.conftest import SUBREAPER, conform, live_children, wait_for_children

pytestmark = pytest.mark.skipif(
    not (SUBREAPER and sys.platform == "linux"), reason="the fork server is for Linux only"
)

#: A target logging each import and each assembler (with where and how its worker runs), that
#: misbehaves at the third push of a case (only the mini suite's middle case has one): as
#: ZYGOTE_DO says, it exits (a crash) or hangs (a timeout), or not ("pass").
TARGET = """
import json, os, pathlib, sys, time
from reference import Assembler as _Reference

_LOG = pathlib.Path(os.environ["ZYGOTE_LOG"])


def _log(**entry):
    with _LOG.open("a") as file:
        file.write(json.dumps(entry) + "\\n")


_log(imported=os.getpid())
{extra}

class Target(_Reference):
    def __init__(self):
        super().__init__()
        self._pushes = 0
        stdin = os.readlink("/proc/self/fd/0")
        _log(pid=os.getpid(), ppid=os.getppid(), session=os.getsid(0), group=os.getpgid(0),
             cwd=os.getcwd(), seen=os.environ.get("ZYGOTE_SEEN"), argv=sys.argv, stdin=stdin,
             at_import=os.environ.get("ZYGOTE_AT_IMPORT"),
             stdout_is_stderr=os.path.samestat(os.fstat(1), os.fstat(2)))

    def push(self, data):
        self._pushes += 1
        if self._pushes == 3 and os.environ["ZYGOTE_DO"] != "pass":
            print("misbehaving now", file=sys.stderr, flush=True)
            if os.environ["ZYGOTE_DO"] == "exit":
                os._exit(7)
            time.sleep(60)
        return super().push(data)
"""


#: `--timeout` for a run where a call hangs: each hang (a time.sleep of 30 s or more) costs this
#: long, and every other call (a push into the reference, a forked or started worker's `hello`,
#: which has at least 5 s) has a margin of a hundred times its own time on a loaded machine.
HANG_TIMEOUT = "1"


@contextlib.contextmanager
def _no_server() -> Iterator[None]:
    yield


def _run(
    tmp_path: Path,
    mini: Suite,
    *extra: str,
    do: str = "exit",
    code: str = "",
    server: bool = True,
    env: dict[str, str] | None = None,
    timeout: str = "2",
    hello: float | None = None,
) -> tuple[int, str, list[dict[str, Any]], dict[str, Any]]:
    """`conform run` of TARGET over the mini suite: exit code, output, the log, the report.

    `hello`, when given, is the least time a worker (and the fork server) has to start, instead
    of the harness's 5 s: the time allowed is then the larger of it and `timeout`."""
    log = tmp_path / "log.jsonl"
    log.unlink(missing_ok=True)
    target = tmp_path / "zygote_target.py"
    target.write_text(TARGET.replace("{extra}", code))
    report = tmp_path / "report.json"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ZYGOTE_LOG", str(log))
        patch.setenv("ZYGOTE_DO", do)
        patch.setenv("ZYGOTE_SEEN", "the run's environment")
        for name, value in (env or {}).items():
            patch.setenv(name, value)
        if not server:
            patch.setattr("harness.pipeline.run.forked_workers", _no_server)
        if hello is not None:
            patch.setattr("harness.drive.process.HELLO_TIME", hello)
            patch.setattr("harness.drive.spec.HELLO_TIME", hello)
        status, output = conform(
            "run", f"{target}:Target", "--suite", str(mini.root), "--mode", "plain",
            "--mode", "key-order", "--timeout", timeout, "--json", str(report), *extra,
        )  # fmt: skip
    lines = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    shown = json.loads(report.read_text()) if report.exists() else {}
    return status, output, lines, shown


def _imports(log: list[dict[str, Any]]) -> int:
    return sum("imported" in entry for entry in log)


def _workers(log: list[dict[str, Any]]) -> set[int]:
    return {entry["pid"] for entry in log if "pid" in entry}


def _results(report: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (r["case"], r["mode"], r["status"], r.get("message"), r.get("step"))
        for r in report["results"]
    ]


@pytest.mark.parametrize("do", ["exit", "hang"])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_restarts_and_jobs_fork_from_one_import(
    tmp_path: Path, mini: Suite, do: str, jobs: str
) -> None:
    timeout = HANG_TIMEOUT if do == "hang" else "2"
    before = live_children()
    status, output, log, report = _run(tmp_path, mini, "-j", jobs, do=do, timeout=timeout)
    assert status == 1, output
    # Nothing is left running: neither the server nor a worker (one that hung, killed on the
    # timeout, or one a crash left), nor what left their groups.
    assert not wait_for_children(before, within=2.0)
    assert not _marked(f"{MARK}={_RUN}.".encode())
    # Two modes of the middle case misbehave: each needs a new worker (after a crash, or the
    # kill on a timeout), and -j 2 starts two from the start: all forked from the one import.
    assert len(_workers(log)) >= 3
    assert _imports(log) == 1, log
    statuses = sorted(r["status"] for r in report["results"])
    assert statuses == sorted(["crashed" if do == "exit" else "timed-out"] * 2 + ["passed"] * 4)
    assert "misbehaving now" in output  # the forked worker's own stderr, in the failure

    plain = _run(tmp_path, mini, "-j", jobs, do=do, server=False, timeout=timeout)
    assert _imports(plain[2]) >= len(_workers(plain[2])) >= 3  # a new import for each worker
    assert _results(plain[3]) == _results(report)  # the same results, word for word
    assert plain[0] == status


def test_a_forked_worker_runs_as_a_started_one_would(
    tmp_path: Path, mini: Suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    monkeypatch.chdir(folder)
    _, _, forked, _ = _run(tmp_path, mini)
    _, _, started, _ = _run(tmp_path, mini, server=False)
    assert _imports(forked) == 1 < len(_workers(forked))  # forked indeed (a restart)

    def seen(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
        assert log
        for entry in log:
            if "pid" in entry:  # a session and process group of its own, this run's child
                assert entry.pop("session") == entry.pop("group") == entry.pop("pid")
                assert entry.pop("ppid") == os.getpid()
        return [entry for entry in log if "imported" not in entry]

    assert seen(forked)[0] == {
        "cwd": str(folder),
        "seen": "the run's environment",
        "at_import": None,
        "argv": ["-c", f"{tmp_path / 'zygote_target.py'}:Target"],
        "stdin": os.devnull,
        "stdout_is_stderr": True,
    }
    assert seen(forked) == seen(started)


def test_what_the_import_sets_and_sees_is_as_in_a_started_worker(
    tmp_path: Path, mini: Suite
) -> None:
    # A variable the target sets at import (litellm's adapter does), and the arguments it sees.
    code = 'os.environ.setdefault("ZYGOTE_AT_IMPORT", "set at import"); _log(at_import=sys.argv)'
    _, _, forked, _ = _run(tmp_path, mini, code=code)
    _, _, started, _ = _run(tmp_path, mini, code=code, server=False)
    assert _imports(forked) == 1 and len(_workers(forked)) >= 2  # forked, after a crash
    workers = [entry for entry in forked if "pid" in entry]
    assert {entry["at_import"] for entry in workers} == {"set at import"}
    assert {entry["at_import"] for entry in started if "pid" in entry} == {"set at import"}

    def argv(log: list[dict[str, Any]]) -> list[Any]:  # what the import saw
        return [entry["at_import"] for entry in log if "at_import" in entry and "pid" not in entry]

    assert argv(forked) == [["-c", f"{tmp_path / 'zygote_target.py'}:Target"]]
    assert set(map(tuple, argv(started))) == {tuple(argv(forked)[0])}


def test_a_server_that_stops_serving_leaves_its_workers_at_work(
    tmp_path: Path, mini: Suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server refuses the second worker's fork (as it does when the target holds, from its
    # import, a file at a number that worker's files take) while the first worker is at work:
    # it stops serving, and that worker goes on.
    from harness.drive import forked

    forks: list[int] = []
    fork = forked.ForkServer.fork

    def refuse_the_second(self: Any, *args: Any) -> Any:
        forks.append(1)
        if len(forks) == 2:
            raise forked.ForkServerUnavailable("the fork server could not fork: refused")
        return fork(self, *args)

    monkeypatch.setattr(forked.ForkServer, "fork", refuse_the_second)
    code = (
        "_slow = _Reference.push\n_Reference.push = lambda s, d: (time.sleep(0.05), _slow(s, d))[1]"
    )
    forked = _run(tmp_path, mini, "-j", "2", code=code, do="pass")
    assert len(forks) >= 2
    started = _run(tmp_path, mini, "-j", "2", code=code, do="pass", server=False)
    assert _results(forked[3]) == _results(started[3])
    assert "killed" not in forked[1], forked[1]


@pytest.mark.parametrize(
    "code",
    [
        "raise ImportError('no such thing as zygote_dependency')",
        "sys.exit(4)",
        "os._exit(5)",
        "time.sleep(30)",
    ],
    ids=["raises", "exits", "dies", "hangs"],
)
def test_a_target_that_cannot_start_fails_as_without_the_server(
    tmp_path: Path, mini: Suite, code: str
) -> None:
    # The time allowed to start is --timeout alone: short for the target that hangs (both ways
    # time out alike), long for the others, which fail at once; a short one there would let a
    # slow start on a loaded machine time out one way and exit the other.
    timeout = "0.5" if "sleep" in code else "60"
    forked = _run(tmp_path, mini, code=code, timeout=timeout, hello=0)
    started = _run(tmp_path, mini, code=code, server=False, timeout=timeout, hello=0)
    assert forked[0] == started[0] == 2
    assert forked[1] == started[1]  # the same error, word for word
    assert forked[1].startswith("Error: "), forked[1]


def test_a_target_running_threads_after_its_import_is_not_forked(
    tmp_path: Path, mini: Suite
) -> None:
    code = "import threading; threading.Thread(target=time.sleep, args=(30,), daemon=True).start()"
    status, output, log, report = _run(tmp_path, mini, code=code)
    assert status == 1, output
    # The server refused (forking a process with threads is unsafe): every worker imported
    # the target itself, after the server's own import.
    assert _imports(log) == len(_workers(log)) + 1
    assert _results(report) == _results(_run(tmp_path, mini, code=code, server=False)[3])


def test_the_server_can_be_turned_off(tmp_path: Path, mini: Suite) -> None:
    _, output, log, report = _run(tmp_path, mini, env={"CONFORM_NO_FORK_SERVER": "1"})
    assert _imports(log) == len(_workers(log)) >= 2, output  # each worker imported it itself
    assert _results(report) == _results(_run(tmp_path, mini)[3])
