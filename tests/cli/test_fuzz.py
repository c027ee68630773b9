"""`conform fuzz`: no false alarm on correct targets, a difference found, shrunk, shown and saved.

Each test gives the search the least work that shows its property: a fixed seed known to reach
what the test needs within a small budget (the same seed gives the same streams in the same
order, docs/fuzz.md), and a few shrink steps. A seed that stops reaching it fails the test (it
says what the seed no longer reaches); pick another with the same check. The searches run in
this process (`run_fuzz`, or `conform` through `invoke`) unless a worker is what is tested;
benchmarks/fuzz_miniatures.py is the full check of the search (every miniature, 30 s each).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.check.options import RunOptions
from harness.fuzz.loop import FuzzRecord, FuzzRequest, run_fuzz
from tests.check.fair_targets import OTHERS
from tests.conftest import conform

TESTS = Path(__file__).resolve().parents[1]
MINIATURES = str(TESTS / "miniatures.py")
FAIR = str(TESTS / "check" / "fair_targets.py")


def fuzz(target: str, *, seed: int, examples: int, shrink: int = 0) -> FuzzRecord:
    """`conform fuzz TARGET --in-process --seed S --examples N --shrink K`, as its record."""
    options = RunOptions(target=target, in_process=True, seed=seed)
    return run_fuzz(FuzzRequest(options=options, examples=examples, shrink_steps=shrink))


def test_the_reference_is_never_flagged() -> None:
    code, output = conform("fuzz", "reference:Assembler", "--in-process", "--examples", "40")
    assert code == 0, output
    assert "no difference from the reference in 40 streams" in output


def test_the_reference_in_a_worker_process_is_never_flagged() -> None:
    code, output = conform("fuzz", "reference:Assembler", "--examples", "6", "-j", "2")
    assert code == 0, output
    assert "no difference from the reference in 6 streams" in output


#: For each implementation-defined point, a seed among whose first 10 streams one touches it (pins
#: it, with alternatives in its expected result) in a way every other outcome of the point changes:
#: 1.0 and 2^53 read as integers, deep nesting, duplicate keys, OpenAI's types, `__proto__`, a
#: server error without a message, an id that changes. (Without the alternatives, each of these
#: targets is flagged on these streams.) Not I7: the model draws one choice a chunk.
POINT_SEEDS = {"I1": 13, "I2": 7, "I3": 13, "I4": 14, "I5": 13, "I6": 7, "I8": 6, "I9": 3}
FUZZED = [(p, v) for p, v in OTHERS if p in POINT_SEEDS]


@pytest.mark.parametrize(("point", "outcome"), FUZZED, ids=[f"{p}_{v}" for p, v in FUZZED])
def test_a_target_taking_another_allowed_outcome_is_never_flagged(point: str, outcome: str) -> None:
    record = fuzz(f"{FAIR}:{point}_{outcome}", seed=POINT_SEEDS[point], examples=10)
    assert record.finding is None, record.finding.results if record.finding else None
    assert record.streams == 10
    assert record.points.get(point, 0) >= 1, f"no stream of the seed touches {point}: {record}"


#: A sample of the miniatures, of different kinds (the order of events, a finish rule, a value a
#: reader must refuse, a field it must ignore, a rule of the error object), each with a seed that
#: finds its bug within a few streams in a stream that 10 shrink steps make smaller.
SAMPLE = {
    "ContentBeforeReasoning": 6,
    "MergesTimings": 1,
    "LastToolCallIdWins": 3,
    "AcceptsAnyFinishReason": 21,
    "StripsPayload": 6,
    "DropsServerMessage": 31,
}


@pytest.mark.parametrize("name", SAMPLE)
def test_a_planted_bug_is_found_and_shrunk(name: str) -> None:
    record = fuzz(f"{MINIATURES}:{name}", seed=SAMPLE[name], examples=40, shrink=10)
    assert record.finding is not None, f"seed {SAMPLE[name]} no longer finds {name}"
    assert record.found_size is not None
    assert record.finding.size < record.found_size, "not shrunk"
    assert all(result.status != "passed" for result in record.finding.results)


def test_a_planted_bug_is_found_whatever_the_seed() -> None:
    # The search itself, at the default seed and two others: a field the target must ignore
    # (unknown-fields mode adds one to every chunk) is found in the first stream of any seed.
    for seed in ((), ("--seed", "1"), ("--seed", "2")):
        args = ("fuzz", f"{MINIATURES}:RejectsUnknownFields", "--in-process", "--examples", "5")
        code, output = conform(*args, *seed, "--shrink", "0")
        assert code == 1, output
        assert "differs from the reference, found in 1 streams" in output


def test_no_shrinking_reports_the_stream_as_found() -> None:
    # Seed 31 finds DropsServerMessage in its 20th stream, of 25 payloads; 10 steps shrink it to 1
    # (a server error without a message may take any text, I8: only one with a message counts).
    args = ("fuzz", f"{MINIATURES}:DropsServerMessage", "--in-process", "--seed", "31", "--shrink")
    code, raw = conform(*args, "0")
    assert code == 1, raw
    code, shrunk = conform(*args, "10")
    assert code == 1, shrunk
    for output in (raw, shrunk):  # reported like a `conform run` failure, then the stream
        assert output.startswith("FAIL fuzz/stream ["), output
        assert f"fuzz: {MINIATURES}:DropsServerMessage differs from the reference" in output

    def size(output: str) -> int:
        return int(output.split("the stream, shrunk to ")[1].split(" ")[0])

    assert size(shrunk) < size(raw)


def test_the_same_seed_gives_the_same_report() -> None:
    # Seed 1 finds MergesTimings in its third stream; 10 steps shrink it (the same way twice).
    args: tuple[str, ...] = (
        "fuzz",
        f"{MINIATURES}:MergesTimings",
        "--in-process",
        "--examples",
        "40",
    )
    args += ("--seed", "1", "--shrink", "10")
    first, second = conform(*args), conform(*args)
    assert first[0] == 1, first[1]
    strip = [line for line in first[1].splitlines() if not line.startswith("fuzz:")]
    again = [line for line in second[1].splitlines() if not line.startswith("fuzz:")]
    assert strip == again
    assert first[1].splitlines()[-1].split(" (")[0] == second[1].splitlines()[-1].split(" (")[0]


def test_save_writes_a_case_that_catches_the_bug(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    target = f"{MINIATURES}:DropsServerMessage"
    code, output = conform(
        "fuzz",
        target,
        "--in-process",
        "--examples",
        "40",
        "--seed",
        "31",
        "--save",
        str(suite),
        "--shrink",
        "10",
    )
    assert code == 1, output
    recordings = list((suite / "recordings" / "fuzz").glob("*.sse"))
    assert len(recordings) == 1, output
    text = recordings[0].read_text(encoding="utf-8")
    assert text.startswith(": generated by 'conform fuzz --seed 31'")
    assert ": pins: " in text and "R8" in text
    golden = suite / "golden" / "fuzz" / (recordings[0].stem + ".json")
    assert json.loads(golden.read_text(encoding="utf-8"))["recording"].startswith("fuzz/")
    # The saved case is an ordinary case: the bug fails it, the reference passes it.
    assert conform("run", target, "--suite", str(suite), "--in-process")[0] == 1
    code, output = conform("run", "reference:Assembler", "--suite", str(suite), "--in-process")
    assert code == 0, output
    code, output = conform("golden", "check", "--suite", str(suite))
    assert code == 0, output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--examples", "0"), "--examples"),
        (("--examples", "3", "--time", "1"), "not both"),
        (("--exec", "x"), "exactly one"),
        (("--mode", "nope"), "nope"),
        (("-j", "2", "--in-process"), "-j runs worker processes"),
        (("--choose", "I9=x"), "POINT=OUTCOME"),
    ],
)
def test_bad_input_is_one_error_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    code, output = conform("fuzz", "reference:Assembler", *args)
    assert code == 2, output
    assert message in output and "Traceback" not in output


def test_a_target_that_cannot_be_imported_is_a_setup_error() -> None:
    code, output = conform("fuzz", "no_such_module_here:Assembler", "--in-process")
    assert code == 2, output
    assert "Error: cannot import module 'no_such_module_here'" in output


def test_help_names_the_budget_options() -> None:
    code, output = conform("fuzz", "--help")
    assert code == 0
    for option in ("--time", "--examples", "--seed", "--save", "--exec", "-j", "--shrink"):
        assert option in output


def test_the_shrink_default_is_the_searchs_own() -> None:
    from harness.cli.fuzz import SHRINK_DEFAULT
    from harness.fuzz.loop import SHRINK_STEPS

    assert SHRINK_DEFAULT == SHRINK_STEPS
