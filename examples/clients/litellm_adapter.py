"""litellm as a conform target: its stream wrapper folds the chunks, `stream_chunk_builder` builds.

    conform run examples/clients/litellm_adapter.py:Assembler --timeout 60 \
        --xfail examples/clients/litellm.xfail

For an OpenAI-compatible server (`model="openai/..."` with `api_base`, as llama-server is used
from litellm), litellm asks openai-python for the stream and wraps it in its
`CustomStreamWrapper`, whose chunks (`ModelResponseStream`) the caller iterates and finally hands
to `litellm.stream_chunk_builder`. This adapter builds exactly that stack, fed one payload a push:

- FROM THE CLIENT: parsing (openai-python's `Stream`, which litellm uses: `json.loads`, the
  `error` check, the `ChatCompletionChunk`), litellm's per-chunk handling (`CustomStreamWrapper`:
  what it passes on, holds back, or raises, mapped through litellm's own exception types), the
  events (read from the deltas of the chunks litellm yields during that push, `reasoning_content`
  included, which litellm maps itself), `stream_closed_early` (litellm itself fails a stream
  that ends before a finish reason: "Stream ended before a finish_reason was received"), and the
  completion (`stream_chunk_builder` over every chunk litellm yielded: text, reasoning text, tool
  calls, id, finish reason).
- FROM THE ADAPTER (conform's adapter kit, `harness.clients`, docs/clients.md): `timings`,
  `prompt_progress` and the reasoning state, read from openai-python's chunk before litellm sees
  it (litellm drops both fields); dropping empty text; and the error mapping below.

The stream is openai-python's `Stream` (its SSE decoder, `json.loads`, the `error` check, the
`ChatCompletionChunk`) over the response of the kit's transport, whose body is the pushed
payloads, one server-sent event each: the object `chat.completions.create(stream=True)` returns
for a 200 response, made without building the request every time. litellm iterates its source
itself and may read several chunks before it yields one, so the wrapper runs in a greenlet
(`InlineFeed`, as the openai-python and LangChain adapters run); a push returns once litellm waits
for the next event. Chunks litellm yields only when the stream ends appear at `finish` (no events).

What litellm does around the stream, not with it, is off (docs/clients.md): the call's logging
object has no success, failure or cost handlers (they build a logging payload, price the call and
run callbacks, of which there are none), and the wrapper skips the `stream_chunk_builder` it runs
at the end of the stream only for them. (With the handlers on, litellm hands its exceptions, with
their tracebacks' frames on the client's stack, to logging threads of its own, which is why the
client used to run on a thread.) What the wrapper does to reach those handlers is made cheap by
replacing three names in litellm's `streaming_handler` module (a monkeypatch of litellm's
internals, of code that runs around the stream only, like the one of `_restore_correlation_context`
below): `threading` (a failing stream's thread for its failure handler: the handler, which does
nothing, is called at once), `traceback` (the traceback text made for that handler is not made)
and `executor` (the success logging handed to litellm's logging pool at the end of every stream
runs at once, as it does nothing). The call's parameters carry `api_base`, as
`completion(api_base=...)` puts it there, and fastapi, which litellm imports to ask whether an
exception is FastAPI's, is found missing once when it is not installed. None of it changes the
chunks, the errors raised to the caller or the completion built from them.

Errors (`harness.clients.ClientErrors`): litellm raises its own exception types
(`litellm.exceptions`, subclasses of openai-python's), with the original error as their cause.
One whose cause is openai-python's `APIError` for an `error` payload is `server`, with that
error's message (litellm's own message prefixes it with its exception names); litellm's "Stream
ended before a finish_reason was received" is `stream_closed_early`; openai-python's
`APIResponseValidationError` and the JSON parser's error for a payload that is not JSON are
`protocol`. Anything else is a crash, raised as what litellm caught, at its own frame (litellm
wraps a `TypeError` of its chunk handling in an `APIConnectionError` too: it is no error of the
contract's).
"""

from __future__ import annotations

import datetime
import importlib.util
import os
import sys
import threading
import traceback
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

# litellm fetches a model price list from the network when imported, unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm
import openai
from litellm.litellm_core_utils import streaming_handler
from litellm.litellm_core_utils.litellm_logging import Logging
from litellm.litellm_core_utils.streaming_handler import CustomStreamWrapper
from openai.types.chat import ChatCompletionChunk

from harness.clients import (
    API_BASE,
    ClientErrors,
    Completion,
    Content,
    InlineFeed,
    Reasoning,
    ReasoningReaders,
    ReasoningState,
    StreamError,
    ToolCall,
    ToolCallDelta,
    raise_for,
    read_progress,
    read_reasoning,
    read_timings,
    shared_transport,
    stream_request,
)

#: The packages this adapter wraps: a crash in them is the client's, one here the adapter's.
CONFORM_WRAPS = ("litellm", "openai")
MODEL = "openai/llama-server"
# litellm resets two contextvars of its logging (the trace and session ids) when a stream closes;
# on this machine, with CPython 3.11.7, that `ContextVar.set` in the client's thread killed the
# worker with SIGSEGV in about one run in two of the r6_nesting_* cases (7 crashes in 8 runs, none
# in 8 without it). The ids only label log lines, which nothing here writes, so the resets are
# left out and the gate sees the client's assembly, not a crash of its logging.
Logging._restore_correlation_context = lambda self: None  # type: ignore[method-assign]
Logging._restore_correlation_context_if_unclaimed = lambda self: None  # type: ignore[method-assign]
litellm.disable_streaming_logging = True  # no logging threads: nothing is sent anywhere
litellm.suppress_debug_info = True
# What a caller of a local server switches off or tells litellm: no token counting (llama-server
# counts, in `timings`), and the model's price, zero, so that litellm's cost tracking finds it at
# once instead of searching its price list for a model it cannot know. Neither touches the stream.
litellm.disable_token_counter = True
_FREE = {
    "input_cost_per_token": 0.0,
    "output_cost_per_token": 0.0,
    "litellm_provider": "openai",
    "mode": "chat",
}
litellm.register_model({MODEL: _FREE, "llama-server": _FREE})
_EOF_MESSAGE = "Stream ended before a finish_reason was received"


def _server_error(exc: BaseException) -> bool:
    """openai-python's own error for an `error` payload (litellm's exceptions subclass
    openai-python's, and wrap it: the server's message is on that cause)."""
    return (
        isinstance(exc, openai.APIError)
        and type(exc).__module__.startswith("openai")
        and not isinstance(exc, openai.APIResponseValidationError)
    )


#: How litellm says what went wrong: it raises its own exception types, with what it caught as
#: their cause (or `original_exception`), which `ClientErrors` follows.
ERRORS = ClientErrors(
    server=_server_error,
    refused=(openai.APIResponseValidationError,),
    # litellm's own check when its source ends (`_stream_eof_error`, an httpx.RemoteProtocolError
    # that reaches the caller only as text in litellm's message).
    closed_early=lambda exc: _EOF_MESSAGE in str(exc),
    message=lambda exc: getattr(exc, "message", str(exc)),
)


def _extra(model: Any, name: str) -> Any:
    return (getattr(model, "model_extra", None) or {}).get(name)


#: The feed of the stream being assembled. conform runs one case at a time per worker and calls
#: no `finish` after an error, so a new stream closes the last one's feed and its thread ends.
_OPEN: list[InlineFeed] = []


#: openai-python's client, made once as litellm keeps it: its SSE decoder and chunk parsing make
#: the stream (`openai.Stream`, as `chat.completions.create(stream=True)` returns it).
_CLIENT = openai.OpenAI(api_key="unused", base_url=API_BASE, max_retries=0)
#: The transport that serves the running feed, and the request it answers.
_TRANSPORT = shared_transport()
_REQUEST = stream_request(model="llama-server")


class _QuietLogging(Logging):
    """litellm's logging object for one call, with its success, failure and cost handlers off.

    litellm runs them after the stream (on its thread pool, or a thread per failure): they build
    the standard logging payload, price the response and call the callbacks, of which there are
    none here. None of it reaches the chunks the caller iterates or `stream_chunk_builder`'s
    result, and it was more of litellm's CPU per run than its per-chunk handling.
    """

    def success_handler(self, *args: Any, **kwargs: Any) -> None:
        return None

    def failure_handler(self, *args: Any, **kwargs: Any) -> None:
        return None

    def response_cost_calculator(self, *args: Any, **kwargs: Any) -> None:
        return None


class _Wrapper(CustomStreamWrapper):
    """litellm's stream wrapper, without the `stream_chunk_builder` runs it makes only to log and
    price the call: the whole response at the end of the stream, the partial one when the stream
    breaks (its "partial usage for failure", stashed on the logging object). The chunks the caller
    gets are unchanged, and the caller builds the completion from them, as `finish` does."""

    def _build_complete_streaming_response(self) -> None:
        return None

    def _record_partial_usage_for_failure(self) -> None:
        return None


# What litellm does around the stream when a stream fails or ends, made cheap (docs/clients.md).
# These replace names in litellm's `streaming_handler` module, not its code: every use of them
# there is the failure and success logging of the call, whose handlers do nothing here
# (`_QuietLogging`); the chunks, the errors raised to the caller and the completion are the same.

#: The handlers of `_QuietLogging` that do nothing.
_NO_OPS = (_QuietLogging.success_handler, _QuietLogging.failure_handler)


def _does_nothing(target: Any) -> bool:
    """Whether `target` is a bound logging handler that does nothing here."""
    function = getattr(target, "__func__", None)
    if function is CustomStreamWrapper.run_success_logging_and_cache_storage:
        return litellm.disable_streaming_logging is True  # then it returns at once
    return function in _NO_OPS


class _DoneThread:
    """A thread, started, that ran a handler doing nothing at once."""

    def __init__(self, target: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self._call = (target, args)

    def start(self) -> None:
        target, args = self._call
        target(*args)

    def join(self, timeout: float | None = None) -> None:
        return None

    def is_alive(self) -> bool:
        return False


class _LoggingThreads:
    """`threading`, as litellm's stream wrapper sees it. The wrapper starts a thread for its
    failure handler on every stream that fails (`threading.Thread(target=failure_handler)`): a
    thread start, and a wait for the scheduler, per failing case, to run a handler that does
    nothing. That one is called at once instead; any other thread is a real one."""

    def __getattr__(self, name: str) -> Any:
        return getattr(threading, name)

    @staticmethod
    def Thread(*args: Any, **kwargs: Any) -> Any:
        target: Any = kwargs.get("target")
        if not args and _does_nothing(target) and set(kwargs) <= {"target", "args"}:
            return _DoneThread(target, tuple(kwargs.get("args", ())))
        return threading.Thread(*args, **kwargs)


class _LoggingTracebacks:
    """`traceback`, as litellm's stream wrapper sees it. Each `traceback.format_exc()` there
    formats the traceback of a failed stream for the failure handlers (or for nothing: one result
    is dropped), never for the exception the caller gets; with the handlers off the text is never
    read, so it is not made. The exception and its traceback reach the adapter unchanged."""

    def __getattr__(self, name: str) -> Any:
        return getattr(traceback, name)

    @staticmethod
    def format_exc(*args: Any, **kwargs: Any) -> str:
        return ""


class _LoggingExecutor:
    """litellm's logging thread pool, as its stream wrapper sees it. At the end of every stream
    it submits its success logging (`success_handler`, `run_success_logging_and_cache_storage`)
    to the pool, a hand-over to another thread per case; those do nothing here, so they run at
    once. Anything else goes to litellm's pool."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        if not _does_nothing(fn):
            return self._pool.submit(fn, *args, **kwargs)  # type: ignore[no-any-return]
        done: Future[Any] = Future()
        done.set_result(fn(*args, **kwargs))
        return done


vars(streaming_handler).update(
    threading=_LoggingThreads(),
    traceback=_LoggingTracebacks(),
    executor=_LoggingExecutor(vars(streaming_handler)["executor"]),
)

# litellm asks, for every exception it maps (`is_guardrail_intervention`), whether it is
# FastAPI's `HTTPException`, importing fastapi to see: with fastapi not installed, a failed
# import (a search of every path entry) per failing case. Found missing once, it stays missing
# (`None` in sys.modules is how Python records that); the answer, "not FastAPI's", is the same.
if importlib.util.find_spec("fastapi") is None:
    sys.modules["fastapi"] = None  # type: ignore[assignment]


def _logging() -> Logging:
    logging = _QuietLogging(
        model=MODEL,
        messages=[{"role": "user", "content": "conform"}],
        stream=True,
        call_type="completion",
        start_time=datetime.datetime.now(),
        litellm_call_id=str(uuid.uuid4()),
        function_id="conform",
    )
    # `api_base` is in the call's parameters as `completion(api_base=...)` puts it there: litellm
    # reads it to label the stream and its errors, and without it works out a provider's default
    # address for every stream and every error (a search of its provider table).
    logging.update_environment_variables(
        model=MODEL,
        user=None,
        optional_params={},
        litellm_params={"api_base": API_BASE},
        custom_llm_provider="openai",
    )
    return logging


class Assembler(ReasoningReaders):
    """One stream, folded by litellm on top of openai-python."""

    def __init__(self) -> None:
        while _OPEN:
            _OPEN.pop().close()
        self._feed = InlineFeed()
        _OPEN.append(self._feed)
        self._lock = threading.Lock()
        self._seen: list[Any] = []  # openai-python's chunks, for the fields litellm drops
        self._out: list[Any] = []  # the chunks litellm yielded and no push has taken yet
        self._chunks: list[Any] = []  # every chunk litellm yielded, for stream_chunk_builder
        self._error: BaseException | None = None
        self._llama = ReasoningState()
        self._finish_reason: str | None = None
        self._id: str | None = None
        self._logging = _logging()
        self._feed.start(self._consume)

    def _tap(self, stream: Any) -> Iterator[Any]:
        for chunk in stream:
            self._seen.append(chunk)
            yield chunk

    def _consume(self) -> None:
        """litellm's side, in the feed's thread: openai-python's stream, wrapped as litellm does."""
        try:
            # openai-python's Stream over the feed's response, as `create(stream=True)` returns
            # it for a 200 response, without building the request each time (a fifth of the CPU
            # of a run; the openai-python adapter shows that path).
            stream = openai.Stream(
                cast_to=ChatCompletionChunk,
                response=_TRANSPORT.handle_request(_REQUEST),
                client=_CLIENT,
            )
            wrapper = _Wrapper(
                completion_stream=self._tap(stream),
                model="llama-server",
                custom_llm_provider="openai",
                logging_obj=self._logging,
            )
            for chunk in wrapper:
                with self._lock:
                    self._out.append(chunk)
        except BaseException as exc:  # handed to the caller of push or finish
            self._error = exc

    def _take(self) -> list[Any]:
        with self._lock:
            out, self._out = self._out, []
        self._chunks.extend(out)
        return out

    # -- state readers ---------------------------------------------------------------------------

    @property
    def id(self) -> str | None:
        return self._id

    @property
    def is_finished(self) -> bool:
        return self._finish_reason is not None

    # -- push ------------------------------------------------------------------------------------

    def push(self, data: str) -> list[Any]:
        if self._feed.ended:
            self._raise_error()
            return []  # litellm stopped reading (openai-python's stream ended at [DONE])
        seen = len(self._seen)
        self._feed.write(data)  # returns when litellm waits for the next event, or has stopped
        self._raise_error()
        events: list[Any] = []
        # Adapter: timings and progress from openai-python's chunk, which litellm drops.
        for chunk in self._seen[seen:]:
            self._llama.take_timings(read_timings(_extra(chunk, "timings")))
            progress = read_progress(_extra(chunk, "prompt_progress"))
            if progress is not None:
                events.append(progress)
        # Client: the events are the deltas of the chunks litellm yielded.
        for chunk in self._take():
            events.extend(self._events(chunk))
        for event in events:
            self._llama.saw(event)
        return events

    def _events(self, chunk: Any) -> list[Any]:
        if self._id is None and getattr(chunk, "id", None):
            self._id = chunk.id
        events: list[Any] = []
        for choice in chunk.choices or []:
            delta = choice.delta
            reasoning = read_reasoning(getattr(delta, "reasoning_content", None))
            if reasoning:
                events.append(Reasoning(reasoning))
            if delta.content:
                events.append(Content(delta.content))
            for piece in delta.tool_calls or []:
                if not hasattr(piece, "index"):
                    continue  # not a tool call: what litellm passed on of a malformed one
                function = getattr(piece, "function", None)
                events.append(
                    ToolCallDelta(
                        index=piece.index,
                        id=getattr(piece, "id", None),
                        name=getattr(function, "name", None),
                        arguments=getattr(function, "arguments", None) or "",
                    )
                )
            if choice.finish_reason:
                self._finish_reason = choice.finish_reason
        return events

    def _raise_error(self) -> None:
        exc = self._error
        if exc is None:
            return
        self._error = None
        raise_for(ERRORS, exc)

    # -- finish ----------------------------------------------------------------------------------

    def finish(self, thinking_capped: bool) -> Completion:
        self._feed.end()
        self._raise_error()
        for chunk in self._take():  # what litellm held back until the end: no events
            self._events(chunk)
        if not self.is_finished:
            raise StreamError("stream_closed_early", "no finish reason arrived")
        built = litellm.stream_chunk_builder(self._chunks, logging_obj=self._logging)
        choice = built.choices[0] if built is not None and built.choices else None
        message = getattr(choice, "message", None)
        return Completion(
            id=getattr(built, "id", None),
            content=getattr(message, "content", None),
            reasoning_content=getattr(message, "reasoning_content", None),
            tool_calls=[
                ToolCall(
                    id=getattr(call, "id", None),
                    name=getattr(getattr(call, "function", None), "name", None),
                    arguments=getattr(getattr(call, "function", None), "arguments", None),
                )
                for call in (getattr(message, "tool_calls", None) or [])
            ],
            finish_reason=getattr(choice, "finish_reason", None),
            timings=self._llama.timings,
            reasoning_tokens=self._llama.reasoning_tokens,
            thinking_capped=bool(thinking_capped),
        )
