"""Distinct problems: failing runs grouped by cause, ordered by what they are about, each with the
example that shows it best (as pushed), the command that reproduces it as pasted, and a bug
report to paste upstream (README.md, "Reading a failure")."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.check.results import FAILED, CaseResult, Crash, Expectation, Mismatch
from harness.drive.blame import Origin
from harness.reports.causes import rule_of_field
from harness.reports.problems import cause, group
from harness.safetext import ABSENT
from harness.suite.classes import InputClass
from tests.conftest import invoke
from tests.schemas import validate

ROOT = Path(__file__).resolve().parents[2]
MINIATURES = ROOT / "tests" / "miniatures.py"
SCHEMA = json.loads((ROOT / "harness/schemas/report.schema.json").read_text(encoding="utf-8"))
VALID, INVALID = InputClass.VALID, InputClass.INVALID
DEFINED = InputClass.IMPLEMENTATION_DEFINED


def run_json(tmp_path: Path, target: str, *args: str) -> dict[str, Any]:
    out = tmp_path / "r.json"
    result = invoke("run", target, "--in-process", *args, "--json", str(out))
    assert result.exit_code == 1, result.output
    document: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    validate(document, SCHEMA)
    return document


@pytest.mark.parametrize(
    ("miniature", "rule"),
    [("LastToolCallIdWins", "R2"), ("DropsServerMessage", "R8"), ("MergesTimings", "R3")],
)
def test_one_bug_is_one_problem_however_many_runs_it_fails(
    tmp_path: Path, miniature: str, rule: str
) -> None:
    # The real captures and the synthetic cases of the rule, in every mode: where each of these
    # bugs shows (a few cases, failing in each mode but `truncated`); the rest of the suite only
    # adds passes.
    some = ("-k", "llama-server/*", "-k", f"synthetic/{rule.lower()}_*")
    report = run_json(tmp_path, f"{MINIATURES}:{miniature}", *some)
    failing = [r for r in report["results"] if r["status"] != "passed"]
    problems = report["problems"]
    assert len(failing) > 5 * len(problems), (len(failing), [p["title"] for p in problems])
    assert sum(p["runs"] for p in problems) == len(failing)
    top = problems[0]
    assert top["rule"] == rule
    assert top["category"] == "valid"
    assert top["example"]["case"] in top["cases"]
    assert top["example"]["mode"] == "plain"
    # The example is a real capture when one shows it, else the smallest recording.
    if top["real_captures"]:
        assert top["example"]["case"] in top["real_captures"]
    else:
        sizes = {case: _size(case) for case in top["cases"]}
        assert sizes[top["example"]["case"]] == min(sizes.values())
    words = shlex.split(top["command"].split(" && ")[-1])  # an absolute file: no `cd` needed
    assert words[:3] == ["conform", "run", f"{MINIATURES}:{miniature}"]
    assert words[words.index("-k") + 1] == top["example"]["case"]
    for heading in ("**What happens**", "**What the spec says**", "**Stream as pushed**"):
        assert heading in top["report"]
    assert top["command"] in top["report"]
    assert ": pins:" not in top["report"] and "# pins:" not in top["report"]


def _size(case: str) -> int:
    return next((ROOT / "recordings").glob(f"{case}.*")).stat().st_size


def test_the_text_report_ends_with_the_problems_and_problems_prints_only_them() -> None:
    target = f"{MINIATURES}:LastToolCallIdWins"
    some = ("-k", "synthetic/r2_*", "--mode", "plain", "--mode", "whitespace")  # R2: it fails
    out = invoke("run", target, "--in-process", *some)
    assert out.exit_code == 1
    lines = out.output.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("distinct problems: "))
    assert lines[at + 1] == " on valid input:"
    assert lines[at + 2].startswith("  1. ") and "rerun: conform run " in lines[at + 3]
    assert any(line.startswith("verdict: gets ") for line in lines[:at])
    only = invoke("run", target, "--in-process", *some, "--problems")
    assert only.exit_code == 1
    assert only.output.startswith("verdict: ")
    assert "\n## Problem 1 of " in only.output
    assert "FAIL " not in only.output  # no per-case blocks
    assert only.output.splitlines()[-1].startswith("totals: ")


def _result(case: str, mode: str, path: str, expected: Any, actual: Any, **more: Any) -> CaseResult:
    found = (Mismatch(path, expected, actual),)
    return CaseResult(case, mode, f"{case}.sse", FAILED, 0.0, found, **more)


def _crash(case: str, message: str, origin: Origin | None, **more: Any) -> CaseResult:
    crash = Crash(message, "", 1, 2, None, origin=origin)
    return CaseResult(case, "plain", f"{case}.sse", "crashed", 0.0, crash=crash, **more)  # type: ignore[arg-type]


def _group(results: list[CaseResult]) -> list[Any]:
    return group(
        results,
        recording=lambda r: ROOT / "no-such" / r.recording,
        command=lambda r: f"conform run x -k {r.case_id}",
    )


def test_a_cause_ignores_indexes_cuts_and_the_values_themselves() -> None:
    a = _result("a", "plain", "steps[3].events[0].name", "x", "xx")
    b = _result("b", "truncated", "prefix[2].steps[1].events[4].name", "y", "yy")
    c = _result("c", "plain", "steps[3].events[0].name", "x", 7)
    assert cause(a).key == cause(b).key != cause(c).key
    # null is no value: "expected null, got x" is the same kind as "expected "", got x".
    d = _result("d", "plain", "steps[3].events[0].name", None, "x")
    assert cause(d).key == cause(a).key


def test_crashes_group_by_exception_and_frame_not_by_message() -> None:
    # As Hypothesis tells failures apart: one frame and type is one bug whatever the message
    # says; the same message from two frames is two.
    at = Origin("client", "AttributeError", "lib/core.py", 12, "fold", "lib")
    other = Origin("client", "AttributeError", "lib/core.py", 40, "read", "lib")
    one = _crash("a", "push raised AttributeError: 'NoneType' object has no attribute 'get'", at)
    two = _crash("b", "push raised AttributeError: 'list' object has no attribute 'x'", at)
    three = _crash(
        "c", "push raised AttributeError: 'NoneType' object has no attribute 'get'", other
    )
    assert cause(one).key == cause(two).key != cause(three).key
    assert "lib/core.py:12" in cause(one).title
    # Without a known frame (a program in another language): by type and message shape.
    index = _crash("d", "push raised TypeError: index is not an integer; None", None)
    fraction = _crash("e", "push raised TypeError: index is not an integer; 1.5", None)
    assert cause(index).key == cause(fraction).key
    # A result conform cannot read: by its field, whatever value of another type a client kept.
    unreadable = "push returned something conform cannot read: content.text is a {}, not a JSON"
    as_dict = _crash("f", unreadable.format("dict") + " scalar: {'Hi': 1}", None)
    as_list = _crash("g", unreadable.format("list") + " scalar: [{'text': 'Hi'}, 2]", None)
    other = _crash(
        "h", unreadable.format("list").replace("content.text", "x.id") + " scalar: []", None
    )
    assert cause(as_dict).key == cause(as_list).key != cause(other).key
    assert cause(as_dict).title.endswith("cannot read: content.text is not a JSON scalar")


def test_a_cut_the_rules_refuse_is_invalid_input_though_its_case_is_valid() -> None:
    # `truncated` cuts a valid stream after each payload; a cut right after an early finish reason
    # (pieces after it still count, R7) is a finished stream whose call has no id yet, which R5
    # refuses: a target that answers it accepts invalid input, not a bug on valid input.
    refused = {"kind": "protocol"}
    cut = _result("t", "truncated", "prefix[3].finish.error", refused, ABSENT, input_class=VALID)
    whole = _result("t", "plain", "finish.completion.id", "a", "b", input_class=VALID)
    problems = _group([cut, whole])
    assert sorted(p.category for p in problems) == ["invalid-accepted", "valid"]
    assert [p.accepted for p in problems if p.category == "invalid-accepted"] == [True]


def test_the_rule_quoted_is_the_rule_of_the_field_that_differs() -> None:
    # The case pins R1 first, but a tool call's arguments are R2's.
    result = _result(
        "a", "plain", "finish.completion.tool_calls[0].arguments", "", None, pins=("R1", "R2", "R5")
    )
    assert cause(result).rule == "R2"
    assert rule_of_field("steps[].events[].arguments", "") == "R1"
    assert rule_of_field("steps[].state.reasoning_tokens", 3) == "R4"
    assert rule_of_field("finish.completion.finish_reason", "stop") == "R5"
    assert rule_of_field("finish.completion.timings.predicted_n", 3) == "R3"
    assert rule_of_field("steps[].error", {"kind": "server", "message": "x"}) == "R8"
    assert rule_of_field("finish.error", {"kind": "stream_closed_early"}) == "R5"


def test_problems_are_ordered_by_what_they_are_about_then_by_cases() -> None:
    missing = {"kind": "protocol"}
    on = {
        "mutation": _result("m", "whitespace", "steps[1].events", [], [1], input_class=VALID),
        "plain": _result("p", "plain", "steps[1].state.id", "a", "b", input_class=VALID),
        "real": _result(
            "r", "plain", "finish.completion.content", "a", "b", input_class=VALID, real=True
        ),
        "defined": _result("d", "plain", "finish.completion.id", "a", "b", input_class=DEFINED),
        "accepted": _result("i", "plain", "steps[2].error", missing, ABSENT, input_class=INVALID),
        "crashed": _crash("c", "push raised KeyError: 'x'", None, input_class=INVALID),
    }
    more = [
        _result(f"p{n}", "plain", "steps[1].state.id", "a", "b", input_class=VALID)
        for n in range(3)
    ]
    problems = _group([*on.values(), *more])
    order = [p.category for p in problems]
    assert order == [
        "valid",
        "valid",
        "valid-under-mutation",
        "invalid-crashed",
        "invalid-accepted",
        "implementation-defined",
    ]
    assert problems[0].real_cases == ("r",)  # a real capture first, though it has one case
    assert len(problems[1].cases) == 4


def test_invalid_input_accepted_groups_by_what_the_rules_refuse_in_it() -> None:
    missing = {"kind": "protocol"}
    reasons = {
        "a": "not a chunk: Expected `int`, got `str` - at `$.choices[0].index`",
        "b": "not a chunk: Expected `int`, got `str` - at `$.choices[3].index`",
        "c": "tool call index -1 is negative",
    }
    results = [
        _result(case, "plain", "steps[2].error", missing, ABSENT, input_class=INVALID)
        for case in reasons
    ]
    problems = group(
        results,
        recording=lambda r: ROOT / "no-such" / r.recording,
        command=lambda r: "conform run x",
        refusal=lambda r: reasons[r.case_id],
    )
    assert sorted(len(p.cases) for p in problems) == [1, 2]
    assert all(p.accepted and p.category == "invalid-accepted" for p in problems)
    assert any(
        p.title == "accepts invalid input: a wrong type or value at `$.choices[].index`"
        for p in problems
    )
    # The plain reference's words: what the field must be, whatever wrong value it had.
    from harness.reports.causes import refusal_kind

    assert refusal_kind("id must be a string, not a number") == refusal_kind(
        "id must be a string, not a boolean"
    )
    assert refusal_kind("tool_calls[].index must be an integer, got 1.5") == (
        "tool_calls[].index must be an integer"
    )


def test_an_adapter_fault_is_apart_and_never_the_clients() -> None:
    adapter = Origin("adapter", "StopIteration", "my_adapter.py", 9, "_fold")
    client = Origin("client", "TypeError", "lib/core.py", 3, "fold", "lib")
    problems = _group(
        [
            _crash("a", "push raised StopIteration", adapter, input_class=VALID),
            _crash("b", "push raised TypeError: x", client, input_class=VALID),
        ]
    )
    assert [p.category for p in problems] == ["valid", "adapter-fault"]
    fault = problems[1]
    assert fault.adapter_fault and fault.title.startswith("the adapter crashes")
    assert fault.to_json()["origin"]["owner"] == "adapter"
    from harness.reports.problems import summary_lines

    lines = summary_lines(problems)
    assert lines[0] == "distinct problems: 1 (and 1 adapter faults)"
    assert any(line.startswith("adapter faults") for line in lines)


def test_the_reasons_of_the_xfail_lines_stand_beside_their_problem() -> None:
    expectation = Expectation("bug: loses the tool call", "client.xfail:3", FAILED)
    results = [
        _result("a", "plain", "finish.completion.tool_calls", [1], []),
    ]
    xfailed = [
        CaseResult(
            r.case_id,
            r.mode,
            r.recording,
            "xfailed",
            0.0,
            r.mismatches,  # type: ignore[arg-type]
            expectation=expectation,
        )
        for r in results
    ]
    (problem,) = _group(xfailed)
    assert problem.expected == (("bug: loses the tool call", "client.xfail:3"),)
    assert "The baseline says: bug: loses the tool call (client.xfail:3)." in problem.report
    assert problem.to_json()["expected"] == [
        {"reason": "bug: loses the tool call", "source": "client.xfail:3"}
    ]


def test_a_mutation_only_problem_shows_the_payloads_as_pushed(tmp_path: Path) -> None:
    # RejectsUnknownFields passes plain and fails unknown-fields: its example is the mutated
    # stream, cut after the payload it fails at, without conform's comment lines.
    report = run_json(
        tmp_path,
        f"{MINIATURES}:RejectsUnknownFields",
        "-k",
        "llama-server/content_stop",
        "--mode",
        "plain",
        "--mode",
        "unknown-fields",
    )
    (problem,) = report["problems"]
    assert problem["category"] == "valid-under-mutation"
    assert problem["example"]["mode"] == "unknown-fields"
    text = problem["report"]
    stream = text.split("```\n", 2)[1]
    assert stream.startswith("data: {")
    assert "x_future" in stream or "zz_future" in stream or "x_conform" in stream
    assert "# source:" not in stream and "POST " not in stream
    result = next(r for r in report["results"] if r["mode"] == "unknown-fields")
    pushed = result["mismatches"][0]["payload"]
    assert f"data: {pushed}" in stream


def test_the_reproducing_command_works_pasted_in_another_folder(tmp_path: Path) -> None:
    # The target is a module importable only from tests/: the command says where to run it.
    here = Path.cwd()
    os.chdir(ROOT / "tests")
    try:
        out = tmp_path / "r.json"
        invoke(
            "run",
            "miniatures:LastToolCallIdWins",
            "-k",
            "synthetic/r2_tool_call_id_name_*",
            "--mode",
            "plain",
            "--in-process",
            "--json",
            str(out),
        )
    finally:
        os.chdir(here)
    command = json.loads(out.read_text(encoding="utf-8"))["problems"][0]["command"]
    assert command.startswith(f"cd {shlex.quote(str(ROOT / 'tests'))} && conform run ")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL synthetic/r2_tool_call_id_name_" in done.stdout
