"""Golden files that cannot be read, met by `conform golden update`, `golden check` and `run`:
each is one `Error:` line naming the file (exit 2), never a traceback; a file that is merely
not UTF-8 is rewritten by update."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import GoldenError
from harness.suite.cases import Suite
from harness.suite.golden import read_golden
from tests.conftest import conform, suite_of

CASE = "llama-server/content_stop"


@pytest.fixture
def case_copy(suite: Suite, tmp_path: Path) -> Suite:
    """A private suite holding the one case these tests break (each selects it with -k alone:
    a copy of the whole shipped suite would cost 0.25 s of CPU a test for nothing)."""
    return suite_of(suite, (CASE,), tmp_path)


@pytest.mark.parametrize("command", [("golden", "update"), ("golden", "check")])
def test_a_golden_path_that_is_a_folder_is_one_error_line(
    case_copy: Suite, command: tuple[str, ...]
) -> None:
    path = case_copy.golden_path(CASE)
    path.unlink()
    path.mkdir()
    code, output = conform(*command, "--suite", str(case_copy.root), "-k", CASE)
    assert code == 2, output
    assert output.startswith(f"Error: {path}: cannot be read: Is a directory")
    assert output.count("\n") == 1 and "Traceback" not in output


def test_update_rewrites_a_golden_file_that_is_not_utf8(case_copy: Suite) -> None:
    path = case_copy.golden_path(CASE)
    good = path.read_bytes()
    path.write_bytes(good.replace(b'"schema"', b'"sch\xffema"', 1))
    code, output = conform("golden", "check", "--suite", str(case_copy.root), "-k", CASE)
    assert (code, output) == (1, f"drifted: {path}\n1 problem(s); 'conform golden update' "
                                 "regenerates, then review\n")  # fmt: skip
    code, output = conform("golden", "update", "--suite", str(case_copy.root), "-k", CASE)
    assert (code, output) == (0, f"changed: {path}\n1 of 1 golden files written\n")
    assert path.read_bytes() == good


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"schema": 2, "x": "\xff"}', "not valid UTF-8 (line 1)"),
        (b"[" * 100_000 + b"]" * 100_000, "nests too deep to be a golden file"),
        (b'{"schema": 2,\n "steps": [}', "invalid JSON at line 2, column 12"),
    ],
)
def test_a_golden_file_that_cannot_be_read_names_itself(
    case_copy: Suite, content: bytes, message: str
) -> None:
    (case,) = case_copy.cases((CASE,))
    case.golden.write_bytes(content)
    with pytest.raises(GoldenError) as caught:
        read_golden(case)
    assert str(caught.value).startswith(f"{case.golden}: {message}")
    code, output = conform("run", "reference:Assembler", "--in-process", "--suite",
                           str(case_copy.root), "-k", CASE)  # fmt: skip
    assert code == 2 and output.startswith(f"Error: {case.golden}: {message}")
