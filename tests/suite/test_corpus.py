"""The shipped corpus looks like real streams: every case starts with llama-server's role chunk
unless it is about how a stream starts, and the generated cases are what their script writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness.suite.cases import Suite
from harness.suite.recording import iter_payloads

ROOT = Path(__file__).resolve().parents[2]

#: The cases about how a stream starts, each with why it may not start with a role chunk.
ABOUT_THE_START: dict[str, str] = {
    "synthetic/r7_no_role_chunk": "a stream without a role chunk (delta.role is not read)",
}


def _starts_with_role(path: Path) -> bool:
    first = next(iter(iter_payloads(path)), None)
    try:
        chunk: Any = json.loads(first.data) if first is not None else None
        return bool(chunk["choices"][0]["delta"]["role"] == "assistant")
    except (ValueError, KeyError, IndexError, TypeError):
        return False


CASES = {case.case_id: case for case in Suite(ROOT).cases()}


def test_each_case_starts_like_a_real_stream() -> None:
    """One test over every case (a test per case cost more in pytest than the check itself),
    naming every case that breaks the rule."""
    wrong = []
    for case_id, case in sorted(CASES.items()):
        starts = _starts_with_role(case.recording)
        if case_id in ABOUT_THE_START and starts:
            wrong.append(f"{case_id} starts with a role chunk: drop it from ABOUT_THE_START")
        elif case_id not in ABOUT_THE_START and not starts:
            wrong.append(
                f'{case_id}: its first payload is not a role chunk (delta.role "assistant"); '
                "add one, or list the case in ABOUT_THE_START with the reason"
            )
    assert not wrong, "\n".join(wrong)


def test_the_cases_about_the_start_exist() -> None:
    assert set(ABOUT_THE_START) <= set(CASES)


def test_the_generated_cases_are_current() -> None:
    script = ROOT / "tests" / "tools" / "grow_corpus.py"
    result = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
