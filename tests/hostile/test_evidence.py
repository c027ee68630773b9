"""No verdict without evidence: a pass needs the target's answers; every printed `rerun:` line
selects exactly the case it names; columns run on different input are never put side by side
without a word.

- A program that dies at every `new` once passed the `truncated` runs of the two recordings of one
  payload (no cut point: nothing was asked). They are now cut before their payload (`new`, then
  `finish`: the empty stream).
- A case id with glob characters (`mine/a[1]`, `mine/a*`) once printed a `rerun:` that selected
  another case or two; a case id that is also a folder of cases selected those too.
- `matrix --from` put reports of different seeds side by side.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

from tests.conftest import conform
from tests.hostile.support import CASE, ROOT, small_suite

DIES_AT_NEW = """\
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    if request["op"] != "hello":
        sys.exit(1)
    print(json.dumps({"seq": request["seq"], "name": "dies", "version": "1",
                      "language": "python", "protocol": 1}), flush=True)
"""

ONE_PAYLOAD = ("synthetic/r1_chunk_role_finish", "synthetic/i2_i3_read_exactly_then_deep_ignored")


def test_a_program_that_answers_nothing_passes_nothing(tmp_path: Path) -> None:
    suite = small_suite(tmp_path / "suite", *ONE_PAYLOAD)
    program = tmp_path / "dies.py"
    program.write_text(DIES_AT_NEW)
    code, output = conform(
        "run", "--exec", f"{sys.executable} {program}", "--suite", suite, "-q",
        "--mode", "truncated", "--mode", "plain",
    )  # fmt: skip
    assert code == 1, output
    assert "totals: 4 crashed (4 runs" in output, output


def test_a_one_payload_recording_is_cut_before_its_payload(tmp_path: Path) -> None:
    suite = small_suite(tmp_path / "suite", *ONE_PAYLOAD)
    code, output = conform(
        "run", "reference:Assembler", "--in-process", "--suite", suite, "--mode", "truncated", "-q"
    )
    assert code == 0 and "2 passed" in output, output


#: Case ids a glob would read as patterns, beside the ids those patterns also match.
TRICKY = ("mine/a[1]", "mine/a1", "mine/a*", "mine/ab", "mine/b?", "mine/bc", "mine/x", "mine/x/y")


def test_every_rerun_line_selects_exactly_its_case(tmp_path: Path) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    for case in TRICKY:
        (suite / "recordings" / case).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "recordings" / f"{CASE}.http", suite / "recordings" / f"{case}.http")
    code, output = conform("golden", "update", "--suite", suite)
    assert code == 0, output
    target = f"{ROOT / 'tests' / 'miniatures.py'}:DropsProgress"  # fails each of them
    code, output = conform("run", target, "--in-process", "--suite", suite, "--mode", "plain")
    assert code == 1, output
    reruns: dict[str, list[str]] = {}
    current = None
    for line in output.splitlines():
        if line.startswith("FAIL "):
            current = line.split()[1]
        elif line.startswith("  rerun: ") and current is not None:
            reruns[current] = shlex.split(line.split("rerun: ", 1)[1])
    assert set(TRICKY) <= set(reruns), output
    for case in TRICKY:
        words = reruns[case]
        assert words[:2] == ["conform", "run"]
        code, again = conform(*words[1:], "-v")
        assert code == 1, again
        ran = [line.split()[1] for line in again.splitlines() if line.startswith("FAIL ")]
        assert ran == [case], (case, words, again)


def test_matrix_never_puts_columns_of_different_seeds_side_by_side(tmp_path: Path) -> None:
    suite = small_suite(tmp_path / "suite", CASE)
    reports = []
    for seed in ("7", "8"):
        report = tmp_path / f"seed{seed}.json"
        code, output = conform(
            "run", "reference:Assembler", "--in-process", "--suite", suite, "--mode", "key-order",
            "--seed", seed, "--json", report, "-q",
        )  # fmt: skip
        assert code == 0, output
        reports.append(report)
    code, output = conform("matrix", "--from", f"a={reports[0]}", "--from", f"b={reports[1]}")
    assert code == 2 and "different seeds" in output and "a 7" in output, output
    code, output = conform(
        "matrix", "--from", f"a={reports[0]}", "reference:Assembler", "--suite", suite,
        "--mode", "key-order", "--seed", "9",
    )  # fmt: skip
    assert code == 2 and "different seeds" in output, output
    other = small_suite(tmp_path / "other", CASE)
    report = tmp_path / "other.json"
    code, output = conform(
        "run", "reference:Assembler", "--in-process", "--suite", other, "--mode", "key-order",
        "--seed", "7", "--json", report, "-q",
    )  # fmt: skip
    assert code == 0, output
    code, output = conform("matrix", "--from", f"a={reports[0]}", "--from", f"b={report}")
    assert "different suites" in output, output
