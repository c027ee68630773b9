"""Silent or misleading: what went wrong is said, in words that are right, before the run when
it can be known then.

An output that cannot be the file named (`--json ''`, `--json dir/`, `--json file/x`, a folder
that cannot be written, one option given twice) is refused before anything runs; a machine that
cannot start the target (`ulimit -n 16`) is one `Error:` line, not "no cases" first; a program
that closed its stdin is said to have done that; and an `Error:` line never shows a line break
as a byte's code (`\\x0a`): the program's stderr stands below it, one line a line.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import conform
from tests.hostile.support import CASE, ROOT, small_suite

HELLO_ONLY = """\
import json, os, sys, time
line = sys.stdin.readline()
seq = json.loads(line)["seq"]
os.close(0)  # before the reply: every request after hello finds stdin closed
print(json.dumps({"seq": seq, "name": "n", "version": "1", "language": "python",
                  "protocol": 1}), flush=True)
time.sleep(30)
"""


def test_a_program_that_closed_its_stdin_is_said_to_have_done_so(tmp_path: Path) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    program = tmp_path / "closes_stdin.py"
    program.write_text(HELLO_ONLY)
    code, output = conform(
        "run", "--exec", f"{sys.executable} {program}", "--suite", suite, "--mode", "plain"
    )
    assert code == 1, output
    assert "the program closed its stdin before answering new" in output
    assert "stdout" not in output


def test_an_error_line_shows_line_breaks_as_a_string_does_and_details_below(
    tmp_path: Path,
) -> None:
    program = tmp_path / "says_two_lines.py"
    program.write_text("import sys\nsys.stderr.write('first\\nsecond\\n')\nsys.exit(1)\n")
    code, output = conform("run", "--exec", f"{sys.executable} {program}")
    assert code == 2, output
    lines = output.splitlines()
    assert lines[0].startswith("Error: ") and "failed the handshake" in lines[0]
    assert "  stderr:" in lines and "    first" in lines and "    second" in lines
    code, output = conform("run", "mod\nname:Assembler")
    assert code == 2, output
    (line,) = output.splitlines()
    assert "'mod\\nname'" in line
    assert "\\x0a" not in output and "\\x0d" not in output


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--json", ""], "an empty name"),
        (["--json", "{tmp}/made/"], "names a folder"),
        (["--junit-xml", "{tmp}"], "is a directory"),
        (["--json", "{tmp}/a.json", "--json", "{tmp}/b.json"], "given 2 times"),
        (["--badge", "{tmp}/plain-file/badge.json"], "Not a directory"),
        (["--write-xfail", "{tmp}/x", "--write-xfail", "{tmp}/y"], "given 2 times"),
    ],
    ids=["empty", "slash", "folder", "json-twice", "under-a-file", "xfail-twice"],
)
def test_an_output_that_cannot_be_the_file_named_is_refused_before_the_run(
    tmp_path: Path, extra: list[str], words: str
) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    (tmp_path / "plain-file").write_text("mine\n")
    before = sorted(tmp_path.iterdir())
    code, output = conform(
        "run", "reference:Assembler", "--in-process", "--suite", suite, "--mode", "plain",
        *(word.format(tmp=tmp_path) for word in extra),
    )  # fmt: skip
    assert code == 2, output
    assert words in output and "totals" not in output, output
    assert sorted(tmp_path.iterdir()) == before
    assert (tmp_path / "plain-file").read_text() == "mine\n"


def test_matrix_refuses_an_output_named_twice_or_a_folder(tmp_path: Path) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    matrix = ["matrix", "reference:Assembler", "--suite", suite, "--mode", "plain"]
    code, output = conform(*matrix, "--html", tmp_path / "a", "--html", tmp_path / "b")
    assert code == 2 and "given 2 times" in output, output
    code, output = conform(*matrix, "--json", f"{tmp_path}/out/")
    assert code == 2 and "names a folder" in output, output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["suite"]


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a read-only file system needs root")
def test_a_read_only_folder_is_refused_before_the_run(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro", "tmpfs", str(folder)])
    if mounted.returncode != 0:
        pytest.skip("cannot mount a read-only file system here")
    try:
        suite = small_suite(tmp_path / "suite", CASE)
        code, output = conform(
            "run", "reference:Assembler", "--in-process", "--suite", suite, "--mode", "plain",
            "--json", folder / "r.json",
        )  # fmt: skip
        assert code == 2 and "read-only" in output and "totals" not in output, output
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def _few_descriptors() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (14, 14))


def test_too_few_descriptors_to_start_is_the_error_not_no_cases() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", "reference:Assembler", "-k", "llama-server",
         "--mode", "plain"],
        capture_output=True, text=True, cwd=ROOT, timeout=120, preexec_fn=_few_descriptors,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == "", done.stdout
    assert done.stderr.startswith("Error: Too many open files"), done.stderr
    assert "ulimit -n" in done.stderr


def test_an_option_that_names_one_thing_given_twice_is_refused(tmp_path: Path) -> None:
    first, second = small_suite(tmp_path / "a", CASE), small_suite(tmp_path / "b", CASE)
    (second / "golden" / f"{CASE}.json").unlink()
    for command in (
        ["golden", "update", "--suite", first, "--suite", second],
        ["run", "--exec", "prog-a", "--exec", "prog-b", "--suite", first],
        ["record", "http://127.0.0.1:9", "--request", tmp_path / "r.json", "--suite", first,
         "--suite", second, "mine/x"],
    ):  # fmt: skip
        (tmp_path / "r.json").write_text('{"messages": []}')
        code, output = conform(*command)
        assert code == 2 and "given 2 times" in output, (command, output)
    assert not (second / "golden" / f"{CASE}.json").exists()  # nothing written into either
