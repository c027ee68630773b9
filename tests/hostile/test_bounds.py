"""Every input bounded: what a target sends or keeps is bounded by conform, and a limit reached is
a failure of the target that names the limit, never a crash or a hang of conform.

- a target wrong at every step of a long recording keeps 100 mismatches and counts the rest
  (once every one: 18 times slower, a 5 MB report);
- an in-process target that leaks descriptors (once exit 2 and no report) fails its cases, the
  limit named, and the reports are written; one that leaks them all at once stops the run, the
  reports written and partial;
- an in-process target that leaves a thread spinning (once: conform, and pytest with the plugin,
  never exited) lets them exit with their verdict.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

from tests.conftest import conform
from tests.hostile.support import CASE, ROOT


def _long_recording(path: Path, payloads: int) -> None:
    chunk = '{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"word "}}]}'
    last = '{"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}'
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        out.writelines(f"data: {chunk}\n\n" for _ in range(payloads))
        out.write(f"data: {last}\n\ndata: [DONE]\n\n")


DOUBLES = """\
from reference import Assembler as Reference


class Doubles(Reference):
    def push(self, data):
        events = super().push(data)
        return events + events
"""


def test_a_target_wrong_at_every_step_keeps_a_bounded_number_of_mismatches(
    tmp_path: Path,
) -> None:
    suite = tmp_path / "suite"
    _long_recording(suite / "recordings" / "mine" / "long.sse", 3_000)
    code, output = conform("golden", "update", "--suite", suite)
    assert code == 0, output
    (tmp_path / "doubles.py").write_text(DOUBLES)
    report = tmp_path / "report.json"
    code, output = conform(
        "run", f"{tmp_path / 'doubles.py'}:Doubles", "--in-process", "--suite", suite,
        "--mode", "plain", "--json", report,
    )  # fmt: skip
    assert code == 1, output
    (result,) = json.loads(report.read_text())["results"]
    assert len(result["mismatches"]) == 100
    assert result["unlisted"] == 2_900  # steps 100 to 2,999 (the finish is right)
    assert "2,900 more step(s) that differ, not listed" in output


LEAKS = """\
import os
from reference import Assembler as Reference

kept = []


class Leaks(Reference):
    def push(self, data):
        kept.append(os.open(os.devnull, os.O_RDONLY))
        return super().push(data)


class LeaksAll(Reference):
    def push(self, data):
        try:
            while True:
                kept.append(os.open(os.devnull, os.O_RDONLY))
        except OSError:
            pass
        return super().push(data)
"""


def _few_descriptors() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))


def _run_limited(tmp_path: Path, target: str) -> tuple[subprocess.CompletedProcess[str], dict]:  # type: ignore[type-arg]
    (tmp_path / "leaks.py").write_text(LEAKS)
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", f"{tmp_path / 'leaks.py'}:{target}",
         "--in-process", "-k", "llama-server", "-k", "synthetic/r1_*", "--json", str(report)],
        capture_output=True, text=True, cwd=ROOT, timeout=300, preexec_fn=_few_descriptors,
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    return done, json.loads(report.read_text())


def test_an_in_process_target_leaking_descriptors_fails_at_the_limit(tmp_path: Path) -> None:
    done, report = _run_limited(tmp_path, "Leaks")
    assert done.returncode == 1, done.stdout + done.stderr
    crashes = [r["crash"]["message"] for r in report["results"] if r["crash"]]
    assert crashes and all("too many open files" in m and "256" in m for m in crashes)
    assert report["totals"]["passed"] > 0  # the cases before the limit ran as usual


def test_an_in_process_target_taking_every_descriptor_stops_the_run_with_reports(
    tmp_path: Path,
) -> None:
    done, report = _run_limited(tmp_path, "LeaksAll")
    assert done.returncode == 1, done.stdout + done.stderr
    assert report["partial"] is not None and "open files" in report["partial"]
    assert "too many open files" in report["stopped"] and "256" in report["stopped"]
    assert "stopped: too many open files" in done.stdout


SPINS = """\
import threading
from reference import Assembler as Reference

started = []


class Spins(Reference):
    def __init__(self):
        super().__init__()
        if not started:
            thread = threading.Thread(target=lambda: [None for _ in iter(int, 1)], name="spin")
            thread.start()
            started.append(thread)
"""


def test_an_in_process_target_leaving_a_thread_spinning_lets_conform_exit(tmp_path: Path) -> None:
    (tmp_path / "spins.py").write_text(SPINS)
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", f"{tmp_path / 'spins.py'}:Spins",
         "--in-process", "-k", CASE, "--mode", "plain", "--json", str(report)],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "thread(s) the target started still run ('spin')" in done.stderr
    assert json.loads(report.read_text())["ok"] is True


def test_pytest_with_an_in_process_target_leaving_a_thread_spinning_exits(tmp_path: Path) -> None:
    from tests.conftest import FOREIGN_PLUGINS_OFF

    (tmp_path / "spins.py").write_text(SPINS)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *FOREIGN_PLUGINS_OFF, "-p", "no:randomly", "-p",
         "no:cacheprovider", "--conform-target", "spins.py:Spins", "--conform-in-process",
         "--conform-mode", "plain", "-k", CASE, "-q"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert "thread(s) the target started still run ('spin')" in done.stderr
