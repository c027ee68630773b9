"""The long fuzz run: the SSE reader and the reference assembler against a million inputs or more.

Every input is a file's bytes. It is written as a recording (`.http` when it starts like one, with
`#` or a request line, else `.sse`) and read with `harness.suite.recording.read_info` and
`iter_payloads`; its payloads are pushed into a `reference.Assembler`, then `finish` is called. The
input's text is also pushed whole, as one payload, into a fresh assembler. What must hold, for every
input:

- the reader raises nothing but `harness.errors.ConformError` (a clear error naming the file);
- payload lines rise, lie within the file, and `[DONE]` is never a payload; for a UTF-8 `.sse`
  input, the payloads and their lines equal those of a second, independent reader written below
  straight from docs/spec.md section 1 (differential check);
- `push` and `finish` raise nothing but `InferError`, and return events and a `Completion`;
- a completion's texts are the concatenation of its events' texts (content, reasoning, each tool
  call's arguments);
- the payloads give the same events, state, finish and error kinds once unknown fields are injected
  into them (`harness.check.modes.unknown_fields`);
- the fast reference (`reference.Assembler`) and the plain one (`reference.PlainAssembler`, which
  generates the golden files) give the same of every input (tests/assembler/test_differential.py
  is the short run of this).

Two engines. With atheris installed (`pip install -e '.[fuzz]'`), libFuzzer drives coverage-guided
mutation of the seed corpus (the shipped recordings, whole and one payload at a time) with a
dictionary of the chunk shape's tokens. Without it, a plain random mutator does the same from a
fixed seed (no coverage feedback; reproducible with `--seed`).

Run it from the repository root, at low priority (it takes a while on a busy machine):

    nice -n 10 python tests/fuzz/fuzz_reference.py                      # 1,000,000 inputs
    nice -n 10 python tests/fuzz/fuzz_reference.py --runs 200000 --engine random --seed 7

It prints progress every 100,000 inputs, then the inputs tried, the time and the failures. A failure
prints the input and its traceback; atheris also saves it as `crash-*` in the working folder, and
`python tests/fuzz/fuzz_reference.py --replay crash-...` runs one saved input again. Exit status: 0
when every input held, 1 otherwise. pytest never collects this file (tests/conftest.py ignores
`fuzz/`); `tests/assembler/test_properties.py` is the short run of the same properties.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))

try:
    import atheris
except ImportError:  # the random engine needs nothing beyond the project
    atheris = None

import harness.suite.recording  # noqa: E402
import reference  # noqa: E402
import reference.assembler  # noqa: E402
import reference.fast  # noqa: E402
import reference.json_text  # noqa: E402
import reference.shape  # noqa: E402
from harness.check.modes import unknown_fields  # noqa: E402
from harness.errors import ConformError  # noqa: E402

PROGRESS_EVERY = 100_000
EVENT_TYPES = (reference.Progress, reference.Reasoning, reference.Content, reference.ToolCallDelta)

#: Tokens libFuzzer (and the random engine) splice into inputs.
TOKENS = [
    b'"choices"', b'"delta"', b'"content"', b'"reasoning_content"', b'"tool_calls"', b'"index"',
    b'"function"', b'"arguments"', b'"name"', b'"id"', b'"finish_reason"', b'"stop"', b'"length"',
    b'"timings"', b'"predicted_n"', b'"prompt_progress"', b'"total"', b'"error"', b'"message"',
    b"null", b"true", b"-1", b"1.0", b"1.5", b"1e400", b"NaN", b"9007199254740992", b"[]", b"{}",
    b'"\\ud800"', b'"\\udc00"', b'"\\ud83d\\ude00"', b"[[[[[[[[", b"]]]]]]]]", b"{\"a\":",
    b"data: ", b"data:", b"data", b"\n\n", b"\r\n", b"\r", b": ping\n", b"event: x\n",
    b"[DONE]", b"\xef\xbb\xbf", b"# thinking_capped: true\n", b": thinking_capped: true\n",
    b"HTTP/1.1 200 OK\n", b"POST /v1/chat/completions HTTP/1.1\n", b"\xff", b"\xc3",
]  # fmt: skip


class Failure(Exception):
    """A property did not hold for one input."""


# --- an independent reader, from docs/spec.md section 1 -------------------------------------------

_LINE_END = re.compile(r"\r\n|\r|\n")


def spec_payloads(text: str) -> list[tuple[int, str]]:
    """The payloads of an event stream and their lines, read as the spec words it."""
    found: list[tuple[int, str]] = []
    data: list[str] | None = None
    first = 0
    lines = _LINE_END.split(text.removeprefix("\ufeff"))
    if lines[-1] == "":  # the end of the last line, not a line of its own
        lines.pop()
    for number, line in enumerate(lines, start=1):
        if line == "":
            if data is not None:
                payload = "\n".join(data)
                if payload == "[DONE]":
                    return found
                found.append((first, payload))
                data = None
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            if name == "data":
                if data is None:
                    data, first = [], number
                data.append(value[1:] if value.startswith(" ") else value)
    if data is not None and "\n".join(data) != "[DONE]":
        found.append((first, "\n".join(data)))
    return found


# --- the properties -------------------------------------------------------------------------------


def run_reference(
    payloads: list[str], capped: bool, assembler: Any = reference.Assembler
) -> list[Any]:
    """Push every payload and finish; check the types and the completion texts; return all seen."""
    asm = assembler()
    seen: list[Any] = []
    events: list[Any] = []
    for data in payloads:
        try:
            got = asm.push(data)
        except reference.InferError as exc:
            seen.append(("error", exc.kind, exc.message if exc.kind == "server" else None))
            return seen
        if type(got) is not list or not all(isinstance(e, EVENT_TYPES) for e in got):
            raise Failure(f"push returned {got!r}")
        events += got
        seen.append((got, asm.id, asm.reasoning_tokens, asm.in_reasoning, asm.is_finished))
    try:
        completion = asm.finish(capped)
    except reference.InferError as exc:
        seen.append(("error", exc.kind))
        return seen
    if not isinstance(completion, reference.Completion):
        raise Failure(f"finish returned {completion!r}")
    _check_texts(completion, events)
    seen.append(completion)
    return seen


def _check_texts(completion: reference.Completion, events: list[Any]) -> None:
    for field, kind in (("content", reference.Content), ("reasoning_content", reference.Reasoning)):
        pieces = [e.text for e in events if isinstance(e, kind)]
        if getattr(completion, field) != ("".join(pieces) if pieces else None):
            raise Failure(f"completion {field} is not the concatenation of its events")
    deltas = [e for e in events if isinstance(e, reference.ToolCallDelta)]
    for index, call in enumerate(completion.tool_calls):
        if call.arguments != "".join(d.arguments for d in deltas if d.index == index):
            raise Failure(f"tool call {index}'s arguments are not the concatenation of its pieces")


def check_one(data: bytes, scratch: Path) -> None:
    """Every property, on one input; raises Failure (or the unexpected exception) when one fails."""
    http = data[:1] == b"#" or data[:5] in (b"POST ", b"GET /")
    path = scratch / ("input.http" if http else "input.sse")
    path.write_bytes(data)
    read = True
    try:
        capped = harness.suite.recording.read_info(path).thinking_capped
        payloads = list(harness.suite.recording.iter_payloads(path))
    except ConformError as exc:
        if str(path) not in str(exc):
            raise Failure(f"the reader's error does not name the file: {exc}") from None
        payloads, capped, read = [], False, False
    last = 0
    total_lines = len(_LINE_END.split(data.decode("utf-8", "replace")))
    for payload in payloads:
        if not last < payload.line <= total_lines or payload.data == "[DONE]":
            raise Failure(f"bad payload {payload!r} after line {last} of {total_lines}")
        last = payload.line
    if read and not http:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            got, expected = [(p.line, p.data) for p in payloads], spec_payloads(text)
            if got != expected:
                pairs = enumerate(zip(got, expected, strict=False))
                at = next((i for i, (a, b) in pairs if a != b), min(len(got), len(expected)))
                raise Failure(
                    f"payload {at}: the reader gives {got[at : at + 1]!r}, the spec "
                    f"{expected[at : at + 1]!r} ({len(got)} and {len(expected)} payloads)"
                )
    _check_injection([p.data for p in payloads], capped, seed=len(data))

    # The whole input as one payload: lone surrogates kept, so push sees them too.
    text = data.decode("utf-8", "surrogatepass") if _is_utf8ish(data) else data.decode("latin-1")
    _check_injection([text], False, seed=len(data))


def _check_injection(payloads: list[str], capped: bool, *, seed: int) -> None:
    """Run the reference on the payloads as they are and with unknown fields; same result. The
    plain reference gives what the fast one gives (`repr`, so that `1` and `1.0` differ)."""
    plain = run_reference(payloads, capped)
    if repr(run_reference(payloads, capped, reference.PlainAssembler)) != repr(plain):
        raise Failure("the plain reference gives another result than the fast one")
    rng = random.Random(seed)
    injected = run_reference([unknown_fields(data, rng) for data in payloads], capped)
    if injected != plain:
        raise Failure(f"unknown fields changed the result: {plain!r} became {injected!r}")


def _is_utf8ish(data: bytes) -> bool:
    try:
        data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return False
    return True


# --- seeds and engines ----------------------------------------------------------------------------


def seed_inputs() -> list[bytes]:
    """The shipped recordings, whole, and each of their payloads on its own."""
    seeds = []
    for path in sorted((ROOT / "recordings").rglob("*")):
        if path.suffix in (".http", ".sse") and path.is_file():
            seeds.append(path.read_bytes())
            with contextlib.suppress(ConformError):
                seeds += [p.data.encode() for p in harness.suite.recording.iter_payloads(path)]
    return [seed for seed in dict.fromkeys(seeds) if len(seed) <= 4096]


class Tally:
    """Inputs tried, time, failures; printed as the run goes and at its end."""

    def __init__(self, runs: int) -> None:
        self.runs = runs
        self.tried = 0
        self.failures = 0
        self.start = time.monotonic()

    def line(self) -> str:
        elapsed = time.monotonic() - self.start
        rate = self.tried / elapsed if elapsed else 0.0
        return (
            f"{self.tried:,} inputs in {elapsed:,.1f} s ({rate:,.0f}/s), {self.failures} failure(s)"
        )

    def count(self) -> None:
        self.tried += 1
        if self.tried % PROGRESS_EVERY == 0 or self.tried == self.runs:
            print(f"fuzz: {self.line()}", flush=True)


def report_failure(data: bytes, exc: BaseException) -> None:
    print(f"\nFAILURE on input {data!r}:", flush=True)
    traceback.print_exception(exc)


def run_random(runs: int, seed: int, scratch: Path, tally: Tally) -> None:
    rng = random.Random(seed)
    seeds = seed_inputs()
    for _ in range(runs):
        data = _mutate(rng.choice(seeds), rng, seeds)
        try:
            check_one(data, scratch)
        except Exception as exc:
            tally.failures += 1
            report_failure(data, exc)
            if tally.failures >= 10:
                print("fuzz: stopping after 10 failures", flush=True)
                return
        tally.count()


def _mutate(data: bytes, rng: random.Random, seeds: list[bytes]) -> bytes:
    """One to a few small edits, mostly ones that keep the input close to a recording."""
    buf = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 5))):
        at = rng.randrange(len(buf) + 1)
        op = rng.choices(_OPS, weights=_WEIGHTS)[0]
        if op == "flip" and buf:
            buf[min(at, len(buf) - 1)] = rng.randrange(256)
        elif op == "token":
            buf[at:at] = rng.choice(TOKENS)
        elif op == "swap":  # one of the tokens in the input becomes another
            old = next((t for t in rng.sample(TOKENS, 8) if t in buf), None)
            if old is not None:
                buf = buf.replace(old, rng.choice(TOKENS), 1)
        elif op == "delete":
            del buf[at : at + rng.randrange(1, 16)]
        elif op == "duplicate":
            end = min(len(buf), at + rng.randrange(1, 64))
            buf[end:end] = buf[at:end]
        elif op == "splice":  # the rest comes from another seed
            other = rng.choice(seeds)
            buf = buf[:at] + other[rng.randrange(len(other) + 1) :]
        elif op == "character":
            code = rng.choice((rng.randrange(32, 127), rng.randrange(0x80, 0x110000)))
            buf[at:at] = chr(code).encode("utf-8", "surrogatepass")
        elif op == "truncate":
            del buf[at:]
    return bytes(buf[:4096])


_OPS = ("flip", "token", "swap", "delete", "duplicate", "splice", "character", "truncate")
_WEIGHTS = (3, 4, 4, 2, 2, 1, 2, 1)


def _escaped(token: bytes) -> str:
    """A token as a libFuzzer dictionary entry writes it: every byte as `\\xNN`."""
    return "".join(f"\\x{byte:02x}" for byte in token)


def _instrument_code_under_test() -> None:
    """Let libFuzzer see which branches of the reader and the reference an input reaches."""
    assert atheris is not None
    modules = (reference.assembler, reference.fast, reference.json_text, reference.shape)
    for module in (harness.suite.recording, *modules):
        for value in vars(module).values():
            members = vars(value).values() if isinstance(value, type) else [value]
            for member in members:
                if isinstance(member, property):
                    member = member.fget
                code = getattr(member, "__code__", None)
                if code is not None and code.co_filename == module.__file__:
                    atheris.instrument_func(member)


def run_atheris(runs: int, seed: int, tally: Tally, corpus: Path) -> None:
    assert atheris is not None
    _instrument_code_under_test()
    # libFuzzer ends the process itself (no cleanup runs), so the scratch file lives in the corpus
    # folder, which is kept between runs anyway.
    scratch = corpus / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    seeds = corpus / "seeds"
    seeds.mkdir(exist_ok=True)
    for number, data in enumerate(seed_inputs()):
        (seeds / f"seed-{number:04d}").write_bytes(data)
    tokens = corpus / "tokens.dict"
    tokens.write_text("".join(f'"{_escaped(token)}"\n' for token in TOKENS), encoding="ascii")

    def test_one_input(data: bytes) -> None:
        try:
            check_one(data, scratch)
        except Exception as exc:
            tally.failures += 1
            report_failure(data, exc)
            raise
        tally.count()
        if tally.tried == runs:
            print(f"fuzz: done: {tally.line()}", flush=True)

    argv = [
        sys.argv[0],
        f"-runs={runs}",
        f"-seed={seed}",
        f"-dict={tokens}",
        "-max_len=4096",
        "-print_final_stats=1",
        str(corpus / "found"),
        str(seeds),
    ]
    (corpus / "found").mkdir(exist_ok=True)
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()  # libFuzzer exits the process when done


def _memory_folder() -> str | None:
    """A folder in memory where there is one: rewriting a file on disk a million times is slow."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Fuzz the SSE reader and the reference assembler (see the module docstring)."
    )
    parser.add_argument("--runs", type=int, default=1_000_000, help="inputs to try (1,000,000)")
    parser.add_argument(
        "--engine",
        choices=["atheris", "random"],
        default="atheris" if atheris is not None else "random",
        help="atheris (coverage-guided, when installed) or random (default: atheris if present)",
    )
    parser.add_argument("--seed", type=int, default=20261129, help="random seed (20261129)")
    parser.add_argument(
        "--corpus",
        type=Path,
        default=Path(_memory_folder() or tempfile.gettempdir()) / "conform-fuzz-corpus",
        help="atheris: where seeds and the inputs it finds are kept (kept between runs)",
    )
    parser.add_argument("--replay", type=Path, metavar="FILE", help="check one saved input")
    args = parser.parse_args(argv)
    if args.engine == "atheris" and atheris is None:
        parser.error("atheris is not installed: pip install -e '.[fuzz]', or use --engine random")
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    tally = Tally(args.runs)
    if args.engine == "atheris" and args.replay is None:
        print(f"fuzz: engine atheris, {args.runs:,} inputs, seed {args.seed}", flush=True)
        run_atheris(args.runs, args.seed, tally, args.corpus)  # never returns
    with tempfile.TemporaryDirectory(prefix="conform-fuzz-", dir=_memory_folder()) as tmp:
        if args.replay is not None:
            data = args.replay.read_bytes()
            try:
                check_one(data, Path(tmp))
            except Exception as exc:
                report_failure(data, exc)
                return 1
            print(f"fuzz: {args.replay} holds")
            return 0
        print(f"fuzz: engine random, {args.runs:,} inputs, seed {args.seed}", flush=True)
        run_random(args.runs, args.seed, Path(tmp), tally)
    print(f"fuzz: done: {tally.line()}", flush=True)
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
