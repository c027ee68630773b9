"""openai-python as a conform target: its Stream parses, its ChatCompletionStreamState accumulates.

    conform run examples/clients/openai_adapter.py:Assembler --xfail examples/clients/openai.xfail

What is being tested is the client (openai-python >= 1.40; read against 3.x):

- FROM THE CLIENT: everything from the HTTP response on. Each case is one `openai.Stream`, the
  object `client.chat.completions.create(stream=True)` returns for a 200 event-stream response,
  over the response of `_http_feed`'s transport, whose body is the pushed payloads, one
  server-sent event each (the request, the same every case, is not built each time: it was a
  third of the CPU of a run): the client's own SSE decoder and `openai.Stream` (`json.loads`, the
  `error` check that raises `openai.APIError`, building a `ChatCompletionChunk` without
  validation), then folding chunks
  (`ChatCompletionStreamState.handle_chunk`: text, tool calls, finish reason, id), the content and
  tool-call events it returns, and the final completion (`get_final_completion`), including
  `reasoning_content`, which the client accumulates as an unknown delta field.
- FROM THE ADAPTER (`_llama.py`): `timings`, `prompt_progress` and the reasoning state, which no
  OpenAI client keeps; reasoning events (the client has no event for an unknown field, so the
  adapter reads `reasoning_content` from the client's parsed delta); the piece's own tool-call `id`
  and `name` (the client's event carries the accumulated name and no id); dropping the client's
  events for empty text (the contract has none); `stream_closed_early` when `finish` comes before
  any finish reason (the client's docstring leaves that check to its caller); and the error
  mapping below.

Errors: `openai.APIError` from the stream is the server's error (`server`, with the client's
message); `APIResponseValidationError`, and the `ValueError`/`RecursionError` that `json.loads`
raises through the client, are `protocol`. Anything else the client raises is left alone, so
conform reports it as a crash with the client's traceback.
"""

from __future__ import annotations

from typing import Any, cast

import openai
from _http_feed import API_BASE, HttpFeed, InlineFeed, shared_transport, stream_request
from _llama import (
    Completion,
    Content,
    Reasoning,
    ReasoningReaders,
    ReasoningState,
    StreamError,
    ToolCall,
    ToolCallDelta,
    protocol,
    read_progress,
    read_reasoning,
    read_timings,
)
from openai.lib.streaming.chat import (
    ChatCompletionStreamState,
    ContentDeltaEvent,
    FunctionToolCallArgumentsDeltaEvent,
)
from openai.types.chat import ChatCompletion, ChatCompletionChunk


def _extra(model: Any, name: str) -> Any:
    """An unknown field the client kept on its (unvalidated) model, or None."""
    return (getattr(model, "model_extra", None) or {}).get(name)


#: The client, made once as an application makes it: its SSE decoder and chunk parsing read the
#: stream.
_CLIENT = openai.OpenAI(api_key="unused", base_url=API_BASE, max_retries=0)
#: The transport that serves the running case's feed, and the one request it answers.
_TRANSPORT = shared_transport()
_REQUEST = stream_request()


class _Reader:
    """The client's side, run by the feed (in a greenlet); it holds nothing of the Assembler."""

    def __init__(self) -> None:
        self.client = _CLIENT
        self.chunks: list[Any] = []  # the client's parsed chunks since the last push

    def read(self) -> None:
        # The `openai.Stream` that `chat.completions.create(stream=True)` returns for a 200
        # event-stream response, over the feed's response: building the request (the same one
        # every case) was a third of the CPU of a run, and nothing of the stream.
        stream = openai.Stream(
            cast_to=ChatCompletionChunk,
            response=_TRANSPORT.handle_request(_REQUEST),
            client=self.client,
        )
        for chunk in stream:
            self.chunks.append(chunk)


class Assembler(ReasoningReaders):
    """One stream, read by openai-python's own HTTP stack and folded by its stream state."""

    def __init__(self) -> None:
        self._feed: HttpFeed = InlineFeed()
        self._reader = _Reader()
        self._state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
        self._started = False
        self._llama = ReasoningState()
        self._feed.start(self._reader.read)

    def __del__(self) -> None:
        self._feed.close()  # dropped mid-stream: let the client end

    # -- state readers: id and is_finished from the client's snapshot ----------------------------

    @property
    def _snapshot(self) -> Any:
        return self._state.current_completion_snapshot if self._started else None

    @property
    def id(self) -> str | None:
        return getattr(self._snapshot, "id", None)

    @property
    def is_finished(self) -> bool:
        choices = getattr(self._snapshot, "choices", None) or []
        return any(getattr(choice, "finish_reason", None) for choice in choices)

    # -- push ------------------------------------------------------------------------------------

    def push(self, data: str) -> list[Any]:
        self._reader.chunks = []
        self._feed.write(data)  # after a payload starting with [DONE] the client reads no more
        if self._feed.error is not None:
            self._feed.end()  # the case ends here: let the client go
            raise _map(self._feed.error) from self._feed.error
        try:
            events: list[Any] = []
            for chunk in self._reader.chunks:
                events += self._fold(chunk)
            return events
        except BaseException:
            self._feed.end()
            raise

    def _fold(self, chunk: Any) -> list[Any]:
        # Adapter: the llama-server fields, read from the client's chunk and validated first.
        self._llama.take_timings(read_timings(_extra(chunk, "timings")))
        progress = read_progress(_extra(chunk, "prompt_progress"))
        reasoning = [read_reasoning(_extra(c.delta, "reasoning_content")) for c in chunk.choices]

        # Client: fold the chunk; its events come per choice, content first, then tool calls.
        client_events = [e for e in self._state.handle_chunk(chunk) if e.type != "chunk"]
        self._started = True
        wanted = iter(e for e in client_events if e.type in _DELTA_EVENTS)

        events: list[Any] = [] if progress is None else [progress]
        for choice, reasoning_text in zip(chunk.choices, reasoning, strict=True):
            if reasoning_text:
                events.append(Reasoning(reasoning_text))
            if choice.delta.content is not None:
                text = cast(ContentDeltaEvent, next(wanted)).delta  # the client's content.delta
                if text:
                    events.append(Content(text))
            for piece in choice.delta.tool_calls or []:
                # the client's tool_calls.function.arguments.delta event
                event = cast(FunctionToolCallArgumentsDeltaEvent, next(wanted))
                function = piece.function
                events.append(
                    ToolCallDelta(
                        index=event.index,
                        id=piece.id,
                        name=None if function is None else function.name,
                        arguments=event.arguments_delta,
                    )
                )
        for event in events:
            self._llama.saw(event)
        return events

    # -- finish ----------------------------------------------------------------------------------

    def finish(self, thinking_capped: bool) -> Completion:
        self._feed.end()
        if self._feed.error is not None:
            raise _map(self._feed.error) from self._feed.error
        if not self.is_finished:
            raise StreamError("stream_closed_early", "no finish reason arrived")
        final: ChatCompletion
        try:
            final = self._state.get_final_completion()
        except openai.LengthFinishReasonError as exc:
            # The client raises this for every `length` finish, even without a response format
            # to parse; the completion it could not parse travels on the exception.
            final = exc.completion
        choice = final.choices[0] if final.choices else None
        message = None if choice is None else choice.message
        return Completion(
            id=getattr(final, "id", None),
            content=getattr(message, "content", None),
            reasoning_content=_extra(message, "reasoning_content"),
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


_DELTA_EVENTS = frozenset({"content.delta", "tool_calls.function.arguments.delta"})


def _map(exc: BaseException) -> BaseException:
    if isinstance(exc, openai.APIResponseValidationError):
        return protocol(str(exc))
    if isinstance(exc, openai.APIError):
        return StreamError("server", exc.message)
    if isinstance(exc, ValueError | RecursionError):  # json.loads, through the client
        return protocol(f"{type(exc).__name__}: {exc}")
    return exc
