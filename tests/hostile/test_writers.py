"""Class 1, writers destroy what they write over: a device or FIFO is written through (never
replaced by a regular file), a symbolic link is followed (and stays a link), one path for two
outputs or an output over an input is refused before anything is written."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from harness.errors import ConformError, WriteError
from harness.files import check_outputs, same_file, write_atomically, write_report
from tests.conftest import conform
from tests.hostile.support import CASE, ROOT, small_suite


def _read_fifo(path: Path, into: list[bytes]) -> threading.Thread:
    def read() -> None:
        with open(path, "rb") as fifo:
            into.append(fifo.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


def test_a_fifo_is_written_through_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _read_fifo(fifo, got)
    write_report(fifo, '{"ok": true}\n')
    reader.join(10)
    assert got == [b'{"ok": true}\n']
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]  # no temporary left


def test_a_run_report_into_a_fifo_keeps_the_fifo(tmp_path: Path) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    fifo = tmp_path / "junit.xml"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _read_fifo(fifo, got)
    code, output = conform(
        "run", "reference:Assembler", "--in-process", "--suite", suite, "--mode", "plain",
        "--junit-xml", fifo,
    )  # fmt: skip
    reader.join(10)
    assert code == 0, output
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert got and got[0].startswith(b"<?xml")


def test_a_character_device_is_written_through(tmp_path: Path) -> None:
    # /dev/null itself: replacing it (as root, by a rename) would break the machine, so the
    # check is that its inode and kind stay, through a link of our own to it.
    link = tmp_path / "null"
    link.symlink_to(os.devnull)
    before = os.stat(os.devnull)
    write_atomically(link, "gone\n")
    after = os.stat(os.devnull)
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino
    assert link.is_symlink()


def test_a_symlink_is_followed_and_stays_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old\n")
    real.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(real.name)
    write_report(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == real.name
    assert real.read_text() == "new\n"
    assert stat.S_IMODE(real.stat().st_mode) == 0o640  # a replaced file keeps its mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json"]


def test_a_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to("sub/made.json")
    (tmp_path / "sub").mkdir()
    write_report(link, "x\n")
    assert link.is_symlink() and (tmp_path / "sub" / "made.json").read_text() == "x\n"


def test_a_folder_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(WriteError, match="folder"):
        write_report(tmp_path, "x")


def test_two_outputs_on_one_path_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(ConformError, match="both --json and --junit-xml"):
        check_outputs({"--json": out, "--junit-xml": out}, [])
    (tmp_path / "real").write_text("")
    out.symlink_to("real")
    with pytest.raises(ConformError, match="both"):  # one file under two names
        check_outputs({"--json": out, "--junit-xml": tmp_path / "real"}, [])
    with pytest.raises(ConformError, match="both"):  # ./x and x
        check_outputs({"--json": tmp_path / "a", "--html": tmp_path / "." / "a"}, [])


def test_distinct_outputs_and_devices_pass(tmp_path: Path) -> None:
    check_outputs({"--json": tmp_path / "a", "--junit-xml": tmp_path / "b", "--x": None}, [])
    check_outputs({"--json": Path(os.devnull), "--junit-xml": Path(os.devnull)}, [])


def test_an_output_over_an_input_is_refused(tmp_path: Path) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    xfail = tmp_path / "conform.xfail"
    xfail.write_text("")
    recording = suite / "recordings" / f"{CASE}.http"
    inputs = [xfail, suite / "recordings", suite / "golden"]
    with pytest.raises(ConformError, match=r"--json .* would overwrite .*conform\.xfail"):
        check_outputs({"--json": xfail}, inputs)
    with pytest.raises(ConformError, match=r"would overwrite a file in .*recordings, a folder"):
        check_outputs({"--junit-xml": recording}, inputs)
    with pytest.raises(ConformError, match=r"would overwrite .*content_stop\.http, an input"):
        check_outputs({"--junit-xml": recording}, [recording])
    with pytest.raises(ConformError, match=r"would write into .*golden, a folder"):  # new, too
        check_outputs({"--json": suite / "golden" / "report.json"}, inputs)
    check_outputs({"--json": tmp_path / "report.json"}, inputs)
    assert recording.read_bytes().startswith(b"#") or recording.stat().st_size > 0


def test_same_file_sees_through_links(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("")
    (tmp_path / "b").symlink_to("a")
    assert same_file(tmp_path / "a", tmp_path / "b")
    assert not same_file(tmp_path / "a", tmp_path / "c")


@pytest.mark.parametrize("name", ["/dev/stdout", "/dev/fd/1"])
def test_dev_stdout_redirected_to_a_file_gets_the_report_after_the_output(
    tmp_path: Path, name: str
) -> None:
    import subprocess
    import sys

    out = tmp_path / "out.txt"
    script = (
        "from pathlib import Path; from harness.files import write_report; "
        f"print('before'); write_report(Path({name!r}), 'report\\n'); print('after')"
    )
    with out.open("w") as stdout:
        subprocess.run([sys.executable, "-c", script], stdout=stdout, check=True, cwd=ROOT)
    assert out.read_text() == "before\nreport\nafter\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_run_and_matrix_refuse_before_anything_is_written(tmp_path: Path) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    recording = suite / "recordings" / f"{CASE}.http"
    before = recording.read_bytes()
    xfail = tmp_path / "conform.xfail"
    xfail.write_text(f"{CASE}  # mine\n")
    out = tmp_path / "out"
    run = ["run", "reference:Assembler", "--suite", suite, "--mode", "plain"]
    for extra, words in (
        (["--json", out, "--junit-xml", out], "both --json and --junit-xml"),
        (["--json", recording], "would overwrite"),
        (["--junit-xml", suite / "golden" / "r.xml"], "would write into"),
        (["--xfail", xfail, "--json", xfail], "would overwrite"),
    ):
        code, output = conform(*run, *extra)
        assert code == 2 and words in output, output
    matrix = ["matrix", "r=reference:Assembler", "--suite", suite, "--mode", "plain"]
    code, output = conform(*matrix, "--json", out, "--html", out)
    assert code == 2 and "both --json and --html" in output, output
    code, output = conform(*matrix, "--markdown", recording)
    assert code == 2 and "would overwrite" in output, output
    assert recording.read_bytes() == before and xfail.read_text() == f"{CASE}  # mine\n"
    assert not out.exists()


def test_write_xfail_may_rebaseline_the_xfail_file_in_place(tmp_path: Path) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    xfail = tmp_path / "conform.xfail"
    xfail.write_text("")
    run = ["run", "reference:Assembler", "--suite", suite, "--mode", "plain", "--xfail", xfail]
    code, output = conform(*run, "--write-xfail", xfail)
    assert code == 0, output
    code, output = conform(*run, "--write-xfail", tmp_path / "other", "--json", xfail)
    assert code == 2 and "would overwrite" in output, output


def test_record_golden_never_replaces_a_golden_file_without_force(tmp_path: Path) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    golden = suite / "golden" / "mine" / "new.json"
    golden.parent.mkdir(parents=True)
    golden.write_text("mine\n")  # a golden file whose recording is not there (yet)
    (tmp_path / "req.json").write_text('{"messages": []}')
    code, output = conform(
        "record", "http://127.0.0.1:9", "--request", tmp_path / "req.json", "--suite", suite,
        "--golden", "mine/new",
    )  # fmt: skip
    assert code == 2 and "already exists" in output and "--force" in output, output
    assert golden.read_text() == "mine\n"
    assert not (suite / "recordings" / "mine").exists()  # refused before the server was asked
