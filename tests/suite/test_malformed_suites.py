"""Malformed suites: each command says what is wrong in one line naming the file, no traceback.

Setup errors exit 2 with one `Error:` line naming the file (and line where there is one); `golden
check` keeps reporting missing and orphaned golden files as problems (exit 1). Each test builds a
small suite in a temporary folder, so nothing here touches the shipped one.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from harness.suite.cases import Suite
from harness.suite.golden import update
from tests.conftest import invoke

ROOT = Path(__file__).resolve().parents[2]
GOOD = ROOT / "recordings" / "synthetic" / "r3_no_timings.sse"
HTTP = ROOT / "recordings" / "llama-server" / "content_stop.http"
RUN = ("run", "reference:Assembler", "--in-process")


def error_line(result: Result) -> str:
    """The output's single `Error:` line; fails when there is none, or a traceback."""
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, result.output
    return errors[0]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A suite of one good case with its golden file."""
    (tmp_path / "recordings").mkdir()
    shutil.copy(GOOD, tmp_path / "recordings" / "good.sse")
    suite = Suite.open(tmp_path)
    update(suite.cases())
    return tmp_path


def add_case(root: Path, name: str, content: bytes) -> Path:
    """A recording and (when it can be built) its golden file."""
    path = root / "recordings" / name
    path.write_bytes(content)
    return path


def test_the_fixture_suite_passes(root: Path) -> None:
    assert invoke(*RUN, "--suite", root).exit_code == 0
    assert invoke("golden", "check", "--suite", root).exit_code == 0


# A recording that is not UTF-8 -----------------------------------------------------------------


def test_invalid_utf8_recording(root: Path) -> None:
    path = add_case(root, "bad.sse", b': a comment\ndata: {"id":"x"}\n\ndata: {"id":"\xff"}\n\n')
    (root / "golden" / "bad.json").write_bytes((root / "golden" / "good.json").read_bytes())
    for args in (RUN, ("golden", "update"), ("golden", "check")):
        result = invoke(*args, "--suite", root)
        assert result.exit_code == 2, (args, result.output)
        line = error_line(result)
        assert f"{path}:4: not valid UTF-8" in line, line
    assert invoke("list", "--suite", root).exit_code == 0  # listing reads no recording


def test_invalid_utf8_in_the_head_of_an_http_recording(root: Path) -> None:
    text = HTTP.read_bytes().replace(b"Host:", b"Ho\xc3st:", 1)
    path = add_case(root, "head.http", text)
    result = invoke("golden", "update", "--suite", root)
    assert result.exit_code == 2
    line_number = text[: text.index(b"\xc3")].count(b"\n") + 1
    assert f"{path}:{line_number}: not valid UTF-8" in error_line(result)


# An .http file with no response part ----------------------------------------------------------


def test_http_without_a_response_part(root: Path) -> None:
    path = add_case(root, "nohead.http", b"POST /v1/chat/completions HTTP/1.1\nHost: x\n\n{}\n\n")
    for args in (("golden", "update"), RUN):
        result = invoke(*args, "--suite", root)
        assert result.exit_code == 2
        line = error_line(result)
        if args == RUN:  # run needs the golden file first, and says so
            assert "no golden file for 'nohead'" in line
        else:
            assert f"{path}:6:" in line and "no response part" in line, line


def test_http_that_ends_inside_the_request(root: Path) -> None:
    path = add_case(root, "short.http", b"# just a comment\nPOST / HTTP/1.1\n")
    result = invoke("golden", "update", "--suite", root)
    assert result.exit_code == 2
    assert f"{path}:3: the file ends before" in error_line(result)


def test_empty_http_recording(root: Path) -> None:
    path = add_case(root, "empty.http", b"")
    result = invoke("golden", "update", "--suite", root)
    assert result.exit_code == 2
    assert f"{path}: is empty" in error_line(result)


def test_http_with_a_response_that_is_not_a_status_line(root: Path) -> None:
    path = add_case(root, "nostatus.http", b"POST / HTTP/1.1\n\n{}\n\ndata: {}\n\n")
    result = invoke("golden", "update", "--suite", root)
    assert result.exit_code == 2
    assert f"{path}:5: expected the response status line" in error_line(result)


# Golden files: invalid JSON, another schema, not UTF-8, not a file --------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b'{\n  "schema": 2,\n  "steps": [\n', "invalid JSON at line 4, column 1"),
        (b'{\n  "schema": 2,,\n}\n', "invalid JSON at line 2, column 15"),
        (b"", "invalid JSON at line 1, column 1"),
        (b'{"schema": 1, "steps": [], "thinking_capped": false}', "golden schema 1 is not 2"),
        (b'{"steps": []}', "golden schema None is not 2"),
        (b"[1, 2]", "not a golden file: the top level must be an object"),
        (b'{"schema": 2, "steps": []}', "'steps' or 'thinking_capped' is missing"),
        (
            b'{"schema": 2, "recording": "good.sse", "thinking_capped": false, "pins": []}',
            "golden file schema at $: 'steps' is missing",
        ),
        (
            b'{"schema": 2, "recording": "good.sse", "thinking_capped": false, "pins": [], '
            b'"steps": [{}]}',
            "golden file schema at $.steps[0]: 'line' is missing",
        ),
        (
            b'{"schema": 2, "recording": "good.sse", "thinking_capped": false, "pins": [], '
            b'"steps": []}',
            "'finish' is missing",
        ),
        (b'{"schema": 2, "steps": [], "thinking_capped": false, \n "x": "\xff"}', "UTF-8 (line 2)"),
    ],
    ids=[
        *("cut", "comma", "empty", "schema-2", "no-schema"),
        *("array", "no-capped", "no-steps", "bad-step", "end", "utf8"),
    ],
)
def test_malformed_golden_file(root: Path, text: bytes, expected: str) -> None:
    golden = root / "golden" / "good.json"
    golden.write_bytes(text)
    result = invoke(*RUN, "--suite", root)
    assert result.exit_code == 2
    line = error_line(result)
    assert line.startswith(f"Error: {golden}: ") and expected in line, line
    assert "conform golden update" in line  # the hint says how to fix it
    check = invoke("golden", "check", "--suite", root)
    assert check.exit_code == 1 and f"drifted: {golden}" in check.output
    assert invoke("golden", "update", "--suite", root).exit_code == 0
    assert invoke(*RUN, "--suite", root).exit_code == 0


def test_golden_path_that_is_a_folder(root: Path) -> None:
    golden = root / "golden" / "good.json"
    golden.unlink()
    golden.mkdir()
    result = invoke(*RUN, "--suite", root)
    assert result.exit_code == 2
    assert f"{golden}: cannot be read" in error_line(result)


def test_recording_that_cannot_be_read(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = root / "recordings" / "good.sse"
    real_open = Path.open

    def refusing_open(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self == path:  # as a permission error would (root may read any file, so fake it)
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refusing_open)
    result = invoke("golden", "update", "--suite", root)
    assert result.exit_code == 2
    assert f"{path}: cannot be read: Permission denied" in error_line(result)


def test_golden_file_out_of_date_with_its_recording(root: Path) -> None:
    path = root / "recordings" / "good.sse"
    text = path.read_text()
    assert "data: [DONE]" in text
    path.write_text(text.replace("data: [DONE]", "data: {}\n\ndata: [DONE]"))
    result = invoke(*RUN, "--suite", root)
    assert result.exit_code == 2
    assert "out of date" in error_line(result)


# A recording without golden, a golden without recording ----------------------------------------


def test_recording_without_golden(root: Path) -> None:
    shutil.copy(GOOD, root / "recordings" / "new.sse")
    golden = root / "golden" / "new.json"
    result = invoke(*RUN, "--suite", root)
    assert result.exit_code == 2
    line = error_line(result)
    assert f"{golden}: no golden file for 'new'" in line and "conform golden update -k new" in line
    check = invoke("golden", "check", "--suite", root)
    assert check.exit_code == 1 and f"missing: {golden}" in check.output
    assert invoke("list", "--ids", "--suite", root).output.split() == ["good", "new"]
    assert invoke(*RUN, "--suite", root, "-k", "good").exit_code == 0


def test_golden_without_recording(root: Path) -> None:
    orphan = root / "golden" / "sub" / "gone.json"
    orphan.parent.mkdir()
    shutil.copy(root / "golden" / "good.json", orphan)
    result = invoke(*RUN, "--suite", root)
    assert result.exit_code == 2
    line = error_line(result)
    assert f"{orphan}: a golden file without a recording" in line and "delete" in line
    check = invoke("golden", "check", "--suite", root)
    assert check.exit_code == 1 and f"orphaned: {orphan}" in check.output
    listed = invoke("list", "--suite", root)
    assert listed.exit_code == 0 and listed.stdout.split() == ["good", "valid", "R3"]
    assert f"warning: {orphan}: a golden file without a recording" in listed.stderr
    updated = invoke("golden", "update", "--suite", root)
    assert updated.exit_code == 0 and f"warning: {orphan}" in updated.stderr
    # A run of other cases is not blocked by it; a run that would have included it is.
    assert invoke(*RUN, "--suite", root, "-k", "good").exit_code == 0
    assert invoke(*RUN, "--suite", root, "-k", "sub/*").exit_code == 2


def test_two_orphans_are_counted(root: Path) -> None:
    for name in ("a", "b"):
        shutil.copy(root / "golden" / "good.json", root / "golden" / f"{name}.json")
    line = error_line(invoke(*RUN, "--suite", root))
    assert "a.json: a golden file without a recording (and 1 more)" in line


# Not a suite --------------------------------------------------------------------------------------


def test_suite_without_recordings_folder(tmp_path: Path) -> None:
    for args in (RUN, ("list",), ("golden", "check"), ("golden", "update")):
        result = invoke(*args, "--suite", tmp_path)
        assert result.exit_code == 2
        assert f"{tmp_path} has no recordings/ folder" in error_line(result)


def test_suite_with_no_cases(tmp_path: Path) -> None:
    (tmp_path / "recordings").mkdir()
    result = invoke(*RUN, "--suite", tmp_path)
    assert result.exit_code == 2
    assert "no cases" in error_line(result)


def test_two_recordings_for_one_case(root: Path) -> None:
    shutil.copy(HTTP, root / "recordings" / "good.http")
    result = invoke("list", "--suite", root)
    assert result.exit_code == 2
    assert "two recordings make case 'good'" in error_line(result)
