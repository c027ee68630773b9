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

Then the reference is timed against a msgspec typed decode alone on every stream shape of
`SHAPES`, each side by side with its own decode: the main stream, the real captures (each a
stream of its own), long reasoning, small and large content pieces, non-ASCII text (raw and as
`\\u` escapes), escapes-heavy code, timings on every chunk, one tool call and parallel ones (ids
once, ids repeated, sixteen in random order), many short completions with `usage`, prompt
progress, members nobody reads at every level (newer servers), `logprobs`, and bare chunks (`id`
and `choices` alone, as hand-written cases). The typed decode is of every member the reference
reads and no fewer (`check_typed_shape` compares it with `reference.fast.Chunk`), and before a
shape is timed the reference must fold each of its streams to the completion the dict-walking
assembler makes (`check_shape_folds`), so neither side is timed doing less.

The garbage collector is off while a contender runs (as `timeit` does). Each figure is the median
of the repeats; each is also shown as a ratio to `json.loads`. The targets: the reference at or
below 1.0 times `json.loads` and at least 20 times faster than openai's accumulator (issue 6), and
within 2 times a bare msgspec typed decode on every shape (issue 22; the ratio is the median of
the repeats' ratios, each repeat timing both side by side, so that load from other processes
cancels out).

Run: `python benchmarks/bench_assembler.py` (`--help` for the options; `-k TEXT` times only the
shapes whose name holds TEXT, `--shapes-only` skips the other contenders; `--check` exits 1 when a
target is missed).
"""

from __future__ import annotations

import argparse
import functools
import gc
import itertools
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import msgspec
import msgspec.inspect

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.suite.recording import iter_payloads  # noqa: E402
from reference import Assembler, InferError  # noqa: E402

RECORDINGS = ROOT / "recordings" / "llama-server"


# --- the stream -----------------------------------------------------------------------------------


@functools.cache
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


# --- the stream shapes ----------------------------------------------------------------------------

#: Text that is not ASCII: accented Latin, CJK (its full-width punctuation too), Cyrillic, Arabic,
#: emoji (some of them joined sequences and flags, outside the Basic Multilingual Plane).
NON_ASCII = (
    "Voilà: déjà vu, naïve café. 日本語のテキストを少しずつ送ります。中文文本，逐字流式输出。"  # noqa: RUF001
    "Привет, мир! مرحبا بالعالم 😀🎉🚀 👩‍💻 🇫🇷 ✓ — «quotes» ½ ∑ x² ≤ π "
)

#: Code as a model writes it in an answer: quotes, backslashes, tabs and newlines to escape.
CODE = (
    'def read(path: str) -> str:\n\t"""Read \\"path\\" and return its text."""\n'
    "\twith open(path, encoding='utf-8') as f:\n\t\treturn f.read().replace('\\r\\n', '\\n')\n\n"
    'print(f"{read(\\"a.txt\\")!r}\\t\\\\done")  # C:\\\\Users\\\\me\n'
    '{"key": "value", "list": [1, 2, "\\u00e9"], "path": "C:\\\\tmp\\\\x"}\n'
)


def _pieces(text: str, sizes: tuple[int, ...], seed: int) -> Iterator[str]:
    """`text` over and over, cut into pieces of the given sizes (in characters), drawn at random."""
    rng = random.Random(seed)
    source = itertools.cycle(text)
    while True:
        yield "".join(itertools.islice(source, rng.choice(sizes)))


class _Writer:
    """Writes chunk texts the way llama-server does: `choices` first, then its envelope (`created`,
    `id`, `model`, `system_fingerprint`, `object`), then `timings` (and `usage`) when asked for;
    compact, UTF-8 unescaped. `bare` drops the envelope to `id` alone, as hand-written cases do;
    `extra` adds members nobody reads at every level (what newer servers add)."""

    def __init__(
        self, *, timings: bool = True, bare: bool = False, ascii: bool = False, extra: bool = False
    ) -> None:
        recorded = _recorded_chunks()
        envelope = {k: v for k, v in recorded[0].items() if k not in ("choices", "timings")}
        self.envelope = {"id": envelope["id"]} if bare else envelope
        self.timings_base = next(c["timings"] for c in recorded if "timings" in c)
        self.usage = next(c["usage"] for c in recorded if "usage" in c)
        self.every_timings, self.bare, self.ascii, self.extra = timings, bare, ascii, extra
        self.tokens = itertools.count(1)

    def timings(self) -> dict[str, Any]:
        n = next(self.tokens)
        ms = n * 7.925051282051282 + 0.3333
        found = {
            **self.timings_base,
            "predicted_n": n,
            "predicted_ms": round(ms, 3),
            "predicted_per_token_ms": ms / n,
            "predicted_per_second": 1000.0 * n / ms,
        }
        if self.extra:
            found |= {"n_ctx": 32768, "n_past": 600 + n, "draft_n": 0, "draft_n_accepted": 0}
        return found

    def dumps(self, body: dict[str, Any]) -> str:
        return json.dumps(body, separators=(",", ":"), ensure_ascii=self.ascii)

    def chunk(
        self,
        delta: dict[str, Any],
        *,
        finish: str | None = None,
        timings: bool | None = None,
        logprobs: dict[str, Any] | None = None,
        **more: Any,
    ) -> str:
        if self.extra:
            delta = {**delta, "reasoning": None, "annotations": []}
            for piece in delta.get("tool_calls") or ():
                piece["x_call"] = {"partial": True}
        if self.bare:
            choice: dict[str, Any] = {"index": 0, "delta": delta}
            if finish is not None:
                choice["finish_reason"] = finish
        else:
            choice = {"finish_reason": finish, "index": 0, "delta": delta}
        if logprobs is not None:
            choice["logprobs"] = logprobs
        if self.extra:
            choice |= {"stop_reason": None, "matched_stop": None, "x_choice": {"seq": 1}}
        body = {"choices": [choice], **self.envelope}
        if self.every_timings if timings is None else timings:
            body["timings"] = self.timings()
        if self.extra:
            body |= {"x_server": {"slot_id": 0, "build": "b7321", "flags": [1, 2]}, "n_probs": 0}
        return self.dumps(body | more)

    def finish(self, reason: str, *, usage: bool = True) -> list[str]:
        """The last chunk with its finish reason, then (`usage`) llama-server's usage chunk."""
        last = [self.chunk({}, finish=reason, timings=True)]
        if usage:
            body = {"choices": [], **self.envelope, "usage": self.usage, "timings": self.timings()}
            last.append(self.dumps(body))
        return last


def _answer(writer: _Writer, pieces: Iterator[str], count: int) -> list[str]:
    """A stream of `count` content pieces: the role chunk, the pieces, the finish (and usage)."""
    stream = [writer.chunk({"role": "assistant", "content": None})]
    stream += [writer.chunk({"content": next(pieces)}) for _ in range(max(1, count - 3))]
    return stream + writer.finish("stop")


def _content_pieces() -> Iterator[str]:
    recorded = _texts(_recorded_chunks(), "content")
    return itertools.cycle(recorded)


def shape_long_reasoning(size: int) -> list[list[str]]:
    writer = _Writer()
    reasoning = itertools.cycle(_texts(_recorded_chunks(), "reasoning_content"))
    stream = [writer.chunk({"role": "assistant", "content": None})]
    stream += [writer.chunk({"reasoning_content": next(reasoning)}) for _ in range(size * 9 // 10)]
    content = _content_pieces()
    stream += [writer.chunk({"content": next(content)}) for _ in range(size - len(stream) - 2)]
    return [stream + writer.finish("stop")]


def shape_small_pieces(size: int) -> list[list[str]]:
    return [_answer(_Writer(timings=False), _pieces("The answer is 42. " * 3, (1, 2, 3), 1), size)]


def shape_large_pieces(size: int) -> list[list[str]]:
    text = "".join(_texts(_recorded_chunks(), "content")) * 40
    pieces = _pieces(text, (4096, 8192, 16384), 2)
    return [_answer(_Writer(), pieces, max(20, size // 20))]


def shape_non_ascii(size: int) -> list[list[str]]:
    return [_answer(_Writer(), _pieces(NON_ASCII, (1, 2, 3, 5), 3), size)]


def shape_non_ascii_escaped(size: int) -> list[list[str]]:
    return [_answer(_Writer(ascii=True), _pieces(NON_ASCII, (1, 2, 3, 5), 3), size)]


def shape_escapes(size: int) -> list[list[str]]:
    return [_answer(_Writer(), _pieces(CODE, (1, 2, 4, 6), 4), size)]


def shape_timings_every_chunk(size: int) -> list[list[str]]:
    return [_answer(_Writer(timings=True), _content_pieces(), size)]


def _tool_calls(
    writer: _Writer, size: int, *, calls: int, repeat_ids: bool, pieces: Iterator[str]
) -> list[str]:
    """`calls` tool calls whose arguments come in small pieces, round robin."""
    stream = [writer.chunk({"role": "assistant", "content": None})]
    names = ("read_file", "list_dir", "grep", "write_file")
    first = [True] * calls
    for index in itertools.cycle(range(calls)):
        if len(stream) >= size - 2:
            break
        piece: dict[str, Any] = {"index": index, "function": {"arguments": next(pieces)}}
        if first[index] or repeat_ids:
            piece["id"] = f"call{index}{'7' * 28}"
            piece["type"] = "function"
            piece["function"]["name"] = names[index % len(names)]
            first[index] = False
        stream.append(writer.chunk({"tool_calls": [piece]}))
    return stream + writer.finish("tool_calls")


def _argument_pieces() -> Iterator[str]:
    return _pieces('{"path": "src/main.py", "pattern": "def \\\\w+\\\\(", "max": 40}', (1, 2, 3), 5)


def shape_one_tool_call(size: int) -> list[list[str]]:
    writer = _Writer(timings=False)
    return [_tool_calls(writer, size, calls=1, repeat_ids=False, pieces=_argument_pieces())]


def shape_parallel_ids_once(size: int) -> list[list[str]]:
    writer = _Writer()
    return [_tool_calls(writer, size, calls=4, repeat_ids=False, pieces=_argument_pieces())]


def shape_parallel_ids_repeated(size: int) -> list[list[str]]:
    writer = _Writer()
    return [_tool_calls(writer, size, calls=4, repeat_ids=True, pieces=_argument_pieces())]


def shape_short_completions(size: int) -> list[list[str]]:
    """Many short answers, each its role chunk, four pieces, its finish and its usage chunk."""
    return [_answer(_Writer(timings=False), _content_pieces(), 7) for _ in range(size // 7)]


def shape_prompt_progress(size: int) -> list[list[str]]:
    """Long prompts processed in batches (`return_progress`), each then a short answer."""
    streams: list[list[str]] = []
    while sum(map(len, streams)) < size:
        writer = _Writer()
        stream = [
            writer.chunk(
                {"role": "assistant", "content": None},
                prompt_progress={"total": 8192, "cache": 0, "processed": p, "time_ms": p // 3},
            )
            for p in range(0, 8193, 512)
        ]
        streams.append(stream + _answer(writer, _content_pieces(), 20)[1:])
    return streams


def shape_unknown_fields(size: int) -> list[list[str]]:
    """Members no rule reads at every level (a newer server's): top, choice, delta, timings."""
    writer = _Writer(extra=True)
    content = _answer(writer, _content_pieces(), size // 2)[:-2]
    calls = _tool_calls(writer, size - len(content), calls=2, repeat_ids=False,
                        pieces=_argument_pieces())  # fmt: skip
    return [content + calls[1:]]


def shape_logprobs(size: int, top: int = 5, tokens: int = 1) -> list[list[str]]:
    """`logprobs` on every chunk (llama-server's `n_probs` / OpenAI's `top_logprobs`): `tokens`
    tokens a chunk, each with its `top` alternatives."""
    writer = _Writer()
    rng = random.Random(6)
    pieces = _content_pieces()

    def entry(token: str) -> dict[str, Any]:
        data = token.encode()
        return {"id": rng.randrange(50000), "token": token, "bytes": list(data),
                "logprob": -rng.random() * 4}  # fmt: skip

    stream = [writer.chunk({"role": "assistant", "content": None})]
    while len(stream) < size - 2:
        chosen = [next(pieces) for _ in range(tokens)]
        items = [
            entry(token) | {"top_logprobs": [entry(next(pieces)) for _ in range(top)]}
            for token in chosen
        ]
        stream.append(writer.chunk({"content": "".join(chosen)}, logprobs={"content": items}))
    return [stream + writer.finish("stop")]


def shape_bare(size: int) -> list[list[str]]:
    """Chunks with `id` and `choices` alone, as hand-written cases and small servers have them."""
    return [_answer(_Writer(timings=False, bare=True), _content_pieces(), size)]


def shape_generated(size: int) -> list[list[str]]:
    return [build_stream(size)]


def shape_heavy_tool_calls(size: int) -> list[list[str]]:
    return [build_tool_stream(size)]


#: Every stream shape the reference is timed on against its own msgspec typed decode: the name
#: shown, and what builds about `size` payloads of it (in one stream or several).
SHAPES: dict[str, Callable[[int], list[list[str]]]] = {
    "generated (the main stream)": shape_generated,
    "llama-server captures": real_captures,
    "long reasoning, then answer": shape_long_reasoning,
    "small content pieces, no timings": shape_small_pieces,
    "large content pieces (4-16 KB)": shape_large_pieces,
    "non-ASCII and emoji": shape_non_ascii,
    "non-ASCII as \\u escapes": shape_non_ascii_escaped,
    "escapes-heavy code": shape_escapes,
    "timings on every chunk": shape_timings_every_chunk,
    "one tool call, small pieces": shape_one_tool_call,
    "4 parallel calls, ids once": shape_parallel_ids_once,
    "4 parallel calls, ids repeated": shape_parallel_ids_repeated,
    "16 parallel calls, random order": shape_heavy_tool_calls,
    "short completions with usage": shape_short_completions,
    "prompt progress, then answer": shape_prompt_progress,
    "unknown members at every level": shape_unknown_fields,
    "logprobs, top 5": shape_logprobs,
    # About 50 openers a payload; then 136 and 210, beyond MAX_DEPTH: the depth is read, not
    # vouched for by the count (OpenAI's `top_logprobs` goes to 20, llama-server's `n_probs` on)
    "logprobs, top 20": functools.partial(shape_logprobs, top=20),
    "logprobs, top 20 x 3 tokens": functools.partial(shape_logprobs, top=20, tokens=3),
    "logprobs, n_probs 100": functools.partial(shape_logprobs, top=100),
    "bare chunks (id and choices)": shape_bare,
}


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


class _Error(msgspec.Struct):
    message: str | None = None


class _Chunk(msgspec.Struct):
    """Every member the reference reads, typed as the rules read it, and nothing more."""

    id: str | None = None
    choices: list[_Choice] | None = None
    timings: _Timings | None = None
    prompt_progress: _Progress | None = None
    error: _Error | None = None


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


def declared(kind: Any) -> dict[str, Any]:
    """The members a msgspec Struct type declares, each with those of the Structs it holds (in a
    list, a union or alone); None for a scalar member."""
    info = msgspec.inspect.type_info(kind) if isinstance(kind, type) else kind
    assert isinstance(info, msgspec.inspect.StructType)

    def structs(node: Any) -> list[Any]:
        if isinstance(node, msgspec.inspect.StructType):
            return [node]
        if isinstance(node, msgspec.inspect.UnionType):
            return [found for member in node.types for found in structs(member)]
        if isinstance(node, msgspec.inspect.ListType):
            return structs(node.item_type)
        return []

    shape: dict[str, Any] = {}
    for field in info.fields:
        inner = structs(field.type)
        shape[field.name] = declared(inner[0]) if inner else None
    return shape


def check_typed_shape() -> None:
    """The msgspec side decodes exactly the members the reference reads (`reference.fast.Chunk`,
    the open shape), no fewer: else its ratio flatters the reference."""
    from reference.fast import Chunk

    if declared(_Chunk) != declared(Chunk):
        raise SystemExit(
            f"the typed decode's shape differs from the reference's:\n  {declared(_Chunk)}\n"
            f"  {declared(Chunk)}"
        )


class _Failed(Exception):
    """What `_fold` returns for a stream that fails: `reference` says the reference's own error."""

    def __init__(self, reference: bool) -> None:
        self.reference = reference

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Failed) and other.reference == self.reference

    __hash__ = None  # type: ignore[assignment]


def _fold(run: Callable[[list[str]], Any], stream: list[str]) -> Any:
    try:
        return run(stream)
    except (InferError, ValueError) as exc:
        return _Failed(isinstance(exc, InferError))


def check_shape_folds(name: str, streams: list[list[str]]) -> None:
    """The reference folds every stream of a shape to its completion, with the same texts as the
    dict-walking assembler (a stream that ends in the server's error object fails in both): so
    it is timed doing the whole work, not failing early."""
    for stream in streams:
        mine = _fold(run_reference, stream)
        theirs = _fold(run_dict_walking, stream)
        if "error" in json.loads(stream[-1]):
            ok = mine == _Failed(True) and theirs == _Failed(False)
        else:
            ok = mine == theirs and not isinstance(mine, _Failed)
        if not ok:
            raise SystemExit(f"shape {name!r}: the reference folds a stream differently")


@dataclass(frozen=True)
class ShapeFigure:
    """The reference against a msgspec typed decode of one stream shape."""

    name: str
    payloads: int
    size: int  # bytes, all payloads
    typed: float  # seconds, median of the repeats
    reference: float
    ratio: float  # the median of the repeats' ratios

    @property
    def met(self) -> bool:
        return self.ratio <= TYPED_GOAL

    def line(self) -> str:
        per = 1e6 / self.payloads
        return (
            f"{self.name:<34}{self.payloads:>7}{self.size // self.payloads:>8}"
            f"{self.typed * per:>8.2f}{self.reference * per:>8.2f}{self.ratio:>7.2f}x"
            f"  {'met' if self.met else 'MISSED'}"
        )


SHAPE_HEADER = f"{'shape':<34}{'chunks':>7}{'bytes':>8}{'typed':>8}{'ref':>8}{'ratio':>8}"


def measure_shapes(size: int, repeats: int, pick: str = "") -> Iterator[ShapeFigure]:
    """Each shape of `SHAPES` whose name holds `pick`: the reference and the msgspec typed decode
    over its payloads, timed side by side repeat by repeat (µs per payload, median)."""
    check_typed_shape()
    contenders = {
        "reference": over_streams(run_reference_to_the_end),
        "msgspec typed": over_streams(run_msgspec_typed),
    }
    for name, build in SHAPES.items():
        if pick.lower() not in name.lower():
            continue
        streams = build(size)
        check_shape_folds(name, streams)
        times: dict[str, list[float]] = {key: [] for key in contenders}
        for run in contenders.values():
            _time_once(run, streams)
        for order in _rotations(list(contenders), repeats):
            for key in order:
                times[key].append(_time_once(contenders[key], streams))
        yield ShapeFigure(
            name,
            sum(len(stream) for stream in streams),
            sum(len(data.encode()) for stream in streams for data in stream),
            statistics.median(times["msgspec typed"]),
            statistics.median(times["reference"]),
            _paired_ratio(times["reference"], times["msgspec typed"]),
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Time the reference assembler against json.loads, msgspec, a dict-walking "
        "assembler and openai-python's ChatCompletionStreamState, on one realistic stream; and "
        "against a msgspec typed decode on every stream shape of SHAPES (realistic ones: "
        "reasoning, small and large pieces, non-ASCII, escapes, tool calls, timings, usage, "
        "progress, unknown members, logprobs, the real captures)."
    )
    parser.add_argument("--payloads", type=int, default=4000, help="stream length (default 4000)")
    parser.add_argument("--repeats", type=int, default=15, help="timed runs each (default 15)")
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when a target is missed (among them: the reference within 2x msgspec typed)",
    )
    parser.add_argument(
        "-k", "--shape", default="", help="time only the shapes whose name holds this text"
    )
    parser.add_argument(
        "--shapes-only", action="store_true", help="only the shapes' table (no other contender)"
    )
    parser.add_argument(
        "--wall", action="store_true", help="time by the wall clock, not the thread's CPU time"
    )
    args = parser.parse_args(argv)
    global CLOCK
    CLOCK = time.perf_counter if args.wall else time.thread_time
    if args.payloads < 20 or args.repeats < 1:
        parser.error("--payloads must be at least 20 and --repeats at least 1")
    if not any(args.shape.lower() in name.lower() for name in SHAPES):
        parser.error(f"no shape's name holds {args.shape!r}; the shapes: {', '.join(SHAPES)}")
    met = args.shapes_only or compare_contenders(args.payloads, args.repeats, wall=args.wall)
    met = measure_table(args.payloads, args.repeats, args.shape) and met
    return 0 if met or not args.check else 1


def compare_contenders(payloads: int, repeats: int, *, wall: bool) -> bool:
    """Every contender over the main stream; True when the reference meets its targets there."""
    stream = build_stream(payloads)
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
            raise SystemExit(f"{name} folds the stream differently from the reference")

    times: dict[str, list[float]] = {name: [] for name in contenders}
    for run in contenders.values():  # warm up: imports, caches, specializing interpreter
        _time_once(run, stream)
    for order in _rotations(list(contenders), repeats):
        for name in order:
            times[name].append(_time_once(contenders[name], stream))

    size = sum(len(data.encode()) for data in stream)
    print(
        f"stream: {len(stream)} payloads, {size / 1e6:.2f} MB, {size // len(stream)} bytes each "
        f"on average; median of {repeats} interleaved repeats, gc off while timing, "
        f"{'wall' if wall else 'thread CPU'} time"
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
    if run_openai is None:
        print("openai not installed (pip install -e '.[bench]'): its target is not measured")
    else:
        speedup = medians["openai"] / medians["reference"]
        print(
            f"target reference >= 20x faster than openai: {speedup:.1f}x "
            f"({'met' if speedup >= 20 else 'MISSED'})"
        )
        met = met and speedup >= 20
    return met


def measure_table(payloads: int, repeats: int, pick: str) -> bool:
    """The shapes' table; True when every shape meets the typed-decode target."""
    print(
        f"\nthe reference against a msgspec typed decode of each shape (us/payload, median of "
        f"{repeats}; ratio: the median of the repeats' ratios):\n{SHAPE_HEADER}"
    )
    figures = []
    for figure in measure_shapes(payloads, repeats, pick):
        print(figure.line(), flush=True)
        figures.append(figure)
    worst = max(figures, key=lambda f: f.ratio)
    print(
        f"target reference <= {TYPED_GOAL:.0f}x msgspec typed on every shape: worst "
        f"{worst.ratio:.2f}x ({worst.name}; {'met' if worst.met else 'MISSED'})"
    )
    return all(figure.met for figure in figures)


if __name__ == "__main__":
    sys.exit(main())
