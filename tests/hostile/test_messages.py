"""Class 10, messages: what selected no case says so in words a user can retype (`-k ''` once
printed "no cases matching  in"), and a target's text is printed escaped wherever conform shows
it (a newline, U+2028, U+202E or a BOM in a mismatch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import conform
from tests.hostile.support import CASE, small_suite


def test_an_empty_k_is_named_and_explained(tmp_path: Path) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    for command in (["list"], ["golden", "check"], ["golden", "update"],
                    ["run", "reference:Assembler", "--in-process"]):  # fmt: skip
        code, output = conform(*command, "--suite", suite, "-k", "")
        assert code == 2, output
        (line,) = output.splitlines()
        assert f"no case of {suite} is selected by -k ''" in line, line
        assert "an empty -k pattern matches no case" in line
        assert "  " not in line.split("(")[0]


def test_selections_that_match_nothing_say_which_options(tmp_path: Path) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    code, output = conform("list", "--suite", suite, "-k", "no such*", "--rule", "R8")
    assert code == 2
    assert "selected by -k 'no such*' --rule R8" in output and "'conform list'" in output
    code, output = conform("list", "--suite", suite, "--exclude", "*")
    assert code == 2 and "selected by --exclude '*'" in output


def test_a_suite_without_cases_says_so(tmp_path: Path) -> None:
    (tmp_path / "empty" / "recordings").mkdir(parents=True)
    code, output = conform("list", "--suite", tmp_path / "empty")
    assert code == 2 and "no cases in" in output and "below recordings/" in output


TARGET = """\
from reference import Assembler


class Says(Assembler):
    def finish(self, thinking_capped):
        completion = super().finish(thinking_capped)
        return completion.__class__(**{
            **{f: getattr(completion, f) for f in completion.__struct_fields__},
            "content": TEXT,
        })
"""


@pytest.mark.parametrize("text", ["a\nb", "a\u2028b", "\u202eevil", "\ufeffbom"])
def test_a_targets_text_is_printed_escaped(tmp_path: Path, text: str) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    (tmp_path / "says.py").write_text(f"TEXT = {text!r}\n" + TARGET)
    for how in ("--in-process", "-j1"):
        code, output = conform(
            "run", f"{tmp_path / 'says.py'}:Says", how, "--suite", suite, "--mode", "plain"
        )
        assert code == 1, output
        assert "FAIL" in output
        assert text not in output, how
        assert not any(c in output for c in "\u2028\u202e\ufeff"), how


def test_golden_commands_help_mentions_no_option_they_lack() -> None:
    for command in ("update", "check"):
        code, output = conform("golden", command, "--help")
        assert code == 0 and "-k PATTERN" in output
        assert "--xfail" not in output, command
