"""How fast the reference assembler folds llama-server streams, against its floors and its peers.

The main workload is one long, realistic stream (by default 4,000 payloads) built from the shipped
llama-server recordings: prompt progress, a reasoning phase, an answer phase and three parallel
tool calls built from many small argument pieces, with `timings` on every chunk and the fields
real servers send and nobody reads (`created`, `model`, `system_fingerprint`, `object`, `index`,
`role`, `type`, `usage`), in llama-server's own key order and compact form. Every contender then
gets the same payload texts, in one process, interleaved repeat by repeat:

- `json.loads`: parse every payload and nothing else (the stdlib floor every ratio is taken to);
- `msgspec typed`: decode every payload into typed structs of the chunk shape (the fast floor);
- `reference`: `reference.Assembler`, push every payload, then `finish`;
- `dict-walking`: a straightforward assembler written here, `json.loads` plus dict access;
- `openai`: openai-python's `ChatCompletionStreamState`, fed `ChatCompletionChunk` objects made from
  the same texts the way the openai client makes them (`json.loads`, then `construct_type`), so its
  parsing is counted too; only when `openai` is installed (`pip install -e '.[bench]'`).

Two more workloads run the reference against the two floors only: `real captures`, the shipped
llama-server recordings themselves (each a stream of its own, the set repeated to about as many
payloads), and `heavy tool calls`, a stream of sixteen parallel tool calls whose argument pieces
come interleaved in random order, one a chunk and every fourth chunk two.

The garbage collector is off while a contender runs (as `timeit` does). Each figure is the median
of the repeats; each is also shown as a ratio to `json.loads`. The targets: the reference at or
below 1.0 times `json.loads` and at least 20 times faster than openai's accumulator (issue 6), and
within 2 times a bare msgspec typed decode on every workload (issue 22; the ratio is the median of
the repeats' ratios, each repeat timing both side by side, so that load from other processes
cancels out).

Run: `python benchmarks/bench_assembler.py` (`--help` for the options; `--check` exits 1 when a
target is missed).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

import msgspec

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.suite.recording import iter_payloads  # noqa: E402
from reference import Assembler, InferError  # noqa: E402

RECORDINGS = ROOT / "recordings" / "llama-server"


# --- the stream -----------------------------------------------------------------------------------


def _recorded_chunks() -> list[dict[str, Any]]:
    chunks = []
    for path in sorted(RECORDINGS.glob("*.http")):
        for payload in iter_payloads(path):
            chunk = json.loads(payload.data)
            if isinstance(chunk, dict) and "error" not in chunk:
                chunks.append(chunk)
    return chunks


def _texts(chunks: list[dict[str, Any]], field: str) -> list[str]:
    found = []
    for chunk in chunks:
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            if field == "arguments":
                for call in delta.get("tool_calls") or ():
                    text = (call.get("function") or {}).get("arguments")
                    if text:
                        found.append(text)
            elif delta.get(field):
                found.append(delta[field])
    return found


def real_captures(size: int) -> list[list[str]]:
    """The shipped llama-server recordings, one stream each, repeated to about `size` payloads."""
    streams = [
        [payload.data for payload in iter_payloads(path)]
        for path in sorted(RECORDINGS.glob("*.http"))
    ]
    total = sum(len(stream) for stream in streams)
    return streams * max(1, round(size / total))


def build_tool_stream(size: int, *, calls: int = 16, seed: int = 22) -> list[str]:
    """About `size` payloads of `calls` parallel tool calls, interleaved in random order: one
    piece a chunk as llama-server sends them, every fourth chunk two."""
    recorded = _recorded_chunks()
    envelope = {k: v for k, v in recorded[0].items() if k not in ("choices", "timings")}
    timings = next(c["timings"] for c in recorded if "timings" in c)
    arguments = itertools.cycle(_texts(recorded, "arguments"))
    rng = random.Random(seed)

    def chunk(delta: dict[str, Any], *, finish: str | None = None) -> str:
        choice = {"finish_reason": finish, "index": 0, "delta": delta}
        body = {"choices": [choice], **envelope, "timings": timings}
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False)

    stream = [chunk({"role": "assistant", "content": None})]
    for index in range(calls):
        piece = {"index": index, "id": f"call{index:02d}{'x' * 22}", "type": "function"}
        function = {"name": f"tool_{index}", "arguments": next(arguments)}
        stream.append(chunk({"tool_calls": [{**piece, "function": function}]}))
    while len(stream) < size - 1:
        indexes = rng.sample(range(calls), rng.choice((1, 1, 1, 2)))
        pieces = [{"index": i, "function": {"arguments": next(arguments)}} for i in indexes]
        stream.append(chunk({"tool_calls": pieces}))
    stream.append(chunk({}, finish="tool_calls"))
    return stream


def build_stream(size: int) -> list[str]:
    """About `size` payload texts of one completion, shaped and worded as the recordings are."""
    recorded = _recorded_chunks()
    envelope = {k: v for k, v in recorded[0].items() if k not in ("choices", "timings")}
    timings_base = next(c["timings"] for c in recorded if "timings" in c)
    usage = next(c["usage"] for c in recorded if "usage" in c)
    reasoning = itertools.cycle(_texts(recorded, "reasoning_content"))
    content = itertools.cycle(_texts(recorded, "content"))
    arguments = itertools.cycle(_texts(recorded, "arguments"))
    tokens = itertools.count(1)

    def timings() -> dict[str, Any]:
        n = next(tokens)
        ms = n * 7.925051282051282 + 0.3333
        return {
            **timings_base,
            "predicted_n": n,
            "predicted_ms": round(ms, 3),
            "predicted_per_token_ms": ms / n,
            "predicted_per_second": 1000.0 * n / ms,
        }

    def chunk(delta: dict[str, Any], *, finish: str | None = None, **extra: Any) -> str:
        choice = {"finish_reason": finish, "index": 0, "delta": delta}
        body = {"choices": [choice], **envelope, "timings": timings(), **extra}
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False)

    stream = []
    for processed in range(0, 577, 96):
        progress = {"total": 577, "cache": 0, "processed": processed, "time_ms": processed // 3}
        stream.append(chunk({"role": "assistant", "content": None}, prompt_progress=progress))
    phase = max(1, (size - len(stream) - 2) // 4)
    stream += [chunk({"reasoning_content": next(reasoning)}) for _ in range(phase)]
    stream += [chunk({"content": next(content)}) for _ in range(phase)]
    calls = 3
    for index in range(calls):
        name = ("read_file", "list_dir", "grep")[index]
        first = {"name": name, "arguments": next(arguments)}
        piece = {"index": index, "id": f"call{index}x{'7' * 24}", "type": "function"}
        stream.append(chunk({"tool_calls": [{**piece, "function": first}]}))
    while len(stream) < size - 2:
        index = len(stream) % calls
        piece = {"index": index, "function": {"arguments": next(arguments)}}
        stream.append(chunk({"tool_calls": [piece]}))
    stream.append(chunk({}, finish="tool_calls"))
    last = {"choices": [], **envelope, "usage": usage, "timings": timings()}
    stream.append(json.dumps(last, separators=(",", ":"), ensure_ascii=False))
    return stream


# --- the contenders -------------------------------------------------------------------------------


class _Function(msgspec.Struct):
    name: str | None = None
    arguments: str | None = None


class _Piece(msgspec.Struct):
    index: int
    id: str | None = None
    function: _Function | None = None


class _Delta(msgspec.Struct):
    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[_Piece] | None = None


class _Choice(msgspec.Struct):
    delta: _Delta | None = None
    finish_reason: Literal["stop", "tool_calls", "length", None] = None


class _Timings(msgspec.Struct):
    cache_n: int | None = None
    prompt_n: int | None = None
    prompt_ms: float | None = None
    prompt_per_token_ms: float | None = None
    prompt_per_second: float | None = None
    predicted_n: int | None = None
    predicted_ms: float | None = None
    predicted_per_token_ms: float | None = None
    predicted_per_second: float | None = None
    draft_n: int | None = None
    draft_n_accepted: int | None = None


class _Progress(msgspec.Struct):
    total: int | None = None
    cache: int | None = None
    processed: int | None = None
    time_ms: int | None = None


class _Chunk(msgspec.Struct):
    id: str | None = None
    choices: list[_Choice] | None = None
    timings: _Timings | None = None
    prompt_progress: _Progress | None = None


def over_streams(run: Callable[[list[str]], Any]) -> Callable[[list[list[str]]], Any]:
    """`run` over each stream of a workload in turn."""

    def run_all(streams: list[list[str]]) -> Any:
        return [run(stream) for stream in streams]

    return run_all


def run_reference_to_the_end(stream: list[str]) -> Any:
    """The reference over one stream, which may end in a server error (a real capture does)."""
    asm = Assembler()
    push = asm.push
    try:
        for data in stream:
            push(data)
        return asm.finish(False)
    except InferError as exc:
        return exc.kind


def run_json_loads(stream: list[str]) -> Any:
    loads = json.loads
    for data in stream:
        loads(data)
    return None


_decode_typed = msgspec.json.Decoder(_Chunk).decode


def run_msgspec_typed(stream: list[str]) -> Any:
    decode = _decode_typed
    for data in stream:
        decode(data)
    return None


def run_reference(stream: list[str]) -> tuple[str | None, str | None, list[str]]:
    asm = Assembler()
    push = asm.push
    for data in stream:
        push(data)
    done = asm.finish(False)
    return done.content, done.reasoning_content, [call.arguments for call in done.tool_calls]


class DictAssembler:
    """The straightforward way: `json.loads`, then walk the dicts (a few type checks, no more)."""

    def __init__(self) -> None:
        self.id: str | None = None
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[dict[str, Any]] = []
        self.timings: dict[str, Any] | None = None
        self.finish_reason: str | None = None
        self.reasoning_tokens = 0
        self.in_reasoning = False

    def push(self, data: str) -> list[tuple[Any, ...]]:
        chunk = json.loads(data)
        if not isinstance(chunk, dict):
            raise ValueError("not an object")
        if chunk.get("error") is not None:
            raise ValueError(chunk["error"].get("message"))
        if chunk.get("id") and self.id is None:
            self.id = chunk["id"]
        if chunk.get("timings") is not None:
            self.timings = chunk["timings"]
        events: list[tuple[Any, ...]] = []
        progress = chunk.get("prompt_progress")
        if progress is not None:
            events.append(
                (
                    "progress",
                    progress.get("total"),
                    progress.get("cache"),
                    progress.get("processed"),
                    progress.get("time_ms"),
                )
            )
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            text = delta.get("reasoning_content")
            if text:
                self.reasoning.append(text)
                self.in_reasoning = True
                if self.timings and self.timings.get("predicted_n") is not None:
                    self.reasoning_tokens = self.timings["predicted_n"]
                events.append(("reasoning", text))
            text = delta.get("content")
            if text:
                self.content.append(text)
                self.in_reasoning = False
                events.append(("content", text))
            for piece in delta.get("tool_calls") or ():
                index = piece["index"]
                if not isinstance(index, int) or index < 0 or index > len(self.calls):
                    raise ValueError("bad index")
                if index == len(self.calls):
                    self.calls.append({"id": None, "name": None, "parts": []})
                call = self.calls[index]
                function = piece.get("function") or {}
                name = function.get("name")
                arguments = function.get("arguments") or ""
                if piece.get("id") and call["id"] is None:
                    call["id"] = piece["id"]
                if name and call["name"] is None:
                    call["name"] = name
                call["parts"].append(arguments)
                self.in_reasoning = False
                events.append(("tool_call_delta", index, piece.get("id"), name, arguments))
            reason = choice.get("finish_reason")
            if reason is not None:
                if reason not in ("stop", "tool_calls", "length"):
                    raise ValueError("bad finish reason")
                self.finish_reason = reason
        return events

    def finish(self) -> tuple[str | None, str | None, list[str]]:
        if self.finish_reason is None or self.id is None:
            raise ValueError("unfinished")
        return (
            "".join(self.content) if self.content else None,
            "".join(self.reasoning) if self.reasoning else None,
            ["".join(call["parts"]) for call in self.calls],
        )


def run_dict_walking(stream: list[str]) -> tuple[str | None, str | None, list[str]]:
    asm = DictAssembler()
    push = asm.push
    for data in stream:
        push(data)
    return asm.finish()


def _openai_runner() -> Callable[[list[str]], Any] | None:
    try:
        from openai._models import construct_type
        from openai.lib.streaming.chat import ChatCompletionStreamState
        from openai.types.chat import ChatCompletionChunk
    except ImportError:
        return None

    def run_openai(stream: list[str]) -> tuple[str | None, str | None, list[str]]:
        state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
        loads = json.loads
        for data in stream:
            # What openai's Stream does with each event: sse.json(), then construct_type.
            chunk = construct_type(type_=ChatCompletionChunk, value=loads(data))
            state.handle_chunk(chunk)  # type: ignore[arg-type]
        message = state.get_final_completion().choices[0].message
        reasoning = getattr(message, "reasoning_content", None)
        calls = [call.function.arguments for call in message.tool_calls or ()]
        return message.content, reasoning, calls

    return run_openai


# --- timing ---------------------------------------------------------------------------------------


#: The time a contender's thread spends on the CPU: every contender runs in this one thread and
#: waits on nothing, so on an idle machine it is the wall time, and on a busy one (other processes
#: taking turns on the cores) it still is what the contender costs. `--wall` times by the clock.
CLOCK = time.thread_time


def _time_once(run: Callable[[Any], Any], stream: Any) -> float:
    gc.collect()
    gc.disable()
    try:
        start = CLOCK()
        run(stream)
        return CLOCK() - start
    finally:
        gc.enable()


def _rotations(names: list[str], repeats: int) -> Iterator[list[str]]:
    for repeat in range(repeats):
        shift = repeat % len(names)
        yield names[shift:] + names[:shift]


#: The reference within this many times a bare msgspec typed decode, on every workload (issue 22).
TYPED_GOAL = 2.0


def _paired_ratio(numerator: list[float], denominator: list[float]) -> float:
    """The median of the repeats' ratios: each repeat timed both side by side."""
    return statistics.median(a / b for a, b in zip(numerator, denominator, strict=True))


def _other_workloads(size: int, repeats: int) -> dict[str, float]:
    """The reference over the real captures and a heavy tool-call stream: its median ratio to a
    bare msgspec typed decode of the same payloads, the two timed side by side per repeat."""
    found: dict[str, float] = {}
    workloads = {
        "real captures": real_captures(size),
        "heavy tool calls": [build_tool_stream(size)],
    }
    for name, streams in workloads.items():
        contenders = {
            "reference": over_streams(run_reference_to_the_end),
            "msgspec typed": over_streams(run_msgspec_typed),
        }
        times: dict[str, list[float]] = {key: [] for key in contenders}
        for run in contenders.values():
            _time_once(run, streams)
        for order in _rotations(list(contenders), repeats):
            for key in order:
                times[key].append(_time_once(contenders[key], streams))
        payloads = sum(len(stream) for stream in streams)
        per = {key: statistics.median(values) / payloads * 1e6 for key, values in times.items()}
        print(
            f"{name}: {payloads} payloads in {len(streams)} stream(s); us/payload: "
            + ", ".join(f"{key} {value:.2f}" for key, value in per.items())
        )
        found[name] = _paired_ratio(times["reference"], times["msgspec typed"])
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Time the reference assembler against json.loads, msgspec, a dict-walking "
        "assembler and openai-python's ChatCompletionStreamState, on one realistic stream; and "
        "against msgspec on the real captures and a heavy tool-call stream."
    )
    parser.add_argument("--payloads", type=int, default=4000, help="stream length (default 4000)")
    parser.add_argument("--repeats", type=int, default=15, help="timed runs each (default 15)")
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when a target is missed (among them: the reference within 2x msgspec typed)",
    )
    parser.add_argument(
        "--wall", action="store_true", help="time by the wall clock, not the thread's CPU time"
    )
    args = parser.parse_args(argv)
    global CLOCK
    CLOCK = time.perf_counter if args.wall else time.thread_time
    if args.payloads < 20 or args.repeats < 1:
        parser.error("--payloads must be at least 20 and --repeats at least 1")

    stream = build_stream(args.payloads)
    contenders: dict[str, Callable[[list[str]], Any]] = {
        "json.loads": run_json_loads,
        "msgspec typed": run_msgspec_typed,
        "reference": run_reference,
        "dict-walking": run_dict_walking,
    }
    run_openai = _openai_runner()
    if run_openai is not None:
        contenders["openai"] = run_openai

    # Same answer from every assembler, or the comparison means nothing.
    expected = run_reference(stream)
    for name in ("dict-walking", "openai"):
        if name in contenders and contenders[name](stream) != expected:
            print(f"{name} folds the stream differently from the reference", file=sys.stderr)
            return 1

    times: dict[str, list[float]] = {name: [] for name in contenders}
    for run in contenders.values():  # warm up: imports, caches, specializing interpreter
        _time_once(run, stream)
    for order in _rotations(list(contenders), args.repeats):
        for name in order:
            times[name].append(_time_once(contenders[name], stream))

    size = sum(len(data.encode()) for data in stream)
    print(
        f"stream: {len(stream)} payloads, {size / 1e6:.2f} MB, {size // len(stream)} bytes each "
        f"on average; median of {args.repeats} interleaved repeats, gc off while timing, "
        f"{'wall' if args.wall else 'thread CPU'} time"
    )
    print(f"python {sys.version.split()[0]}, msgspec {msgspec.__version__}", end="")
    if run_openai is not None:
        import openai

        print(f", openai {openai.__version__}", end="")
    print()
    medians = {name: statistics.median(values) for name, values in times.items()}
    floor = medians["json.loads"]
    print(f"{'contender':<15}{'median ms':>11}{'us/payload':>12}{'x json.loads':>14}")
    for name, median in medians.items():
        per = median / len(stream) * 1e6
        print(f"{name:<15}{median * 1e3:>11.2f}{per:>12.2f}{median / floor:>14.2f}")

    ratio = medians["reference"] / floor
    met = ratio <= 1.0
    print(f"target reference <= 1.0x json.loads: {ratio:.2f}x ({'met' if met else 'MISSED'})")
    typed = _paired_ratio(times["reference"], times["msgspec typed"])
    workloads = {"generated": typed}
    workloads |= _other_workloads(args.payloads, args.repeats)
    for name, value in workloads.items():
        ok = value <= TYPED_GOAL
        print(
            f"target reference <= {TYPED_GOAL:.0f}x msgspec typed ({name}): {value:.2f}x "
            f"({'met' if ok else 'MISSED'})"
        )
        met = met and ok
    if run_openai is None:
        print("openai not installed (pip install -e '.[bench]'): its target is not measured")
    else:
        speedup = medians["openai"] / medians["reference"]
        print(
            f"target reference >= 20x faster than openai: {speedup:.1f}x "
            f"({'met' if speedup >= 20 else 'MISSED'})"
        )
        met = met and speedup >= 20
    return 0 if met or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
