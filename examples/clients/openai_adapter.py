"""openai-python as a conform target: its Stream parses, its ChatCompletionStreamState accumulates.

    conform run examples/clients/openai_adapter.py:Assembler --xfail examples/clients/openai.xfail

What is being tested is the client (openai-python, the version pyproject's `clients` extra pins),
fed through conform's adapter kit (`harness.clients`, docs/clients.md):

- FROM THE CLIENT: everything from the HTTP response on. Each case is one `openai.Stream`, the
  object `client.chat.completions.create(stream=True)` returns for a 200 event-stream response,
  over the response of the kit's transport, whose body is the pushed payloads, one server-sent
  event each (the request, the same every case, is not built each time: it was a third of the
  CPU of a run): the client's own SSE decoder and `openai.Stream` (`json.loads`, the `error`
  check that raises `openai.APIError`, building a `ChatCompletionChunk` without validation),
  then folding chunks (`ChatCompletionStreamState.handle_chunk`: text, tool calls, finish reason,
  id), the content and tool-call events it returns, and the final completion
  (`get_final_completion`), including `reasoning_content`, which the client accumulates as an
  unknown delta field.
- FROM THE ADAPTER: `timings`, `prompt_progress` and the reasoning state, which no OpenAI client
  keeps, read from the payload after the client has dealt with it (`peek`, which never raises);
  reasoning events (the client has no event for an unknown field); the piece's own tool-call
  `id` and `name` (the client's event carries the accumulated name and no id); dropping the
  client's events for empty text (the contract has none); `stream_closed_early` when `finish`
  comes before any finish reason (the client's docstring leaves that check to its caller).

Errors (`harness.clients.ClientErrors`): `openai.APIError` from the stream is the server's error
(`server`, with the client's message); `APIResponseValidationError` and the JSON parser's error
for a payload that is not JSON are `protocol`. Anything else the client raises is a crash, at
the client's own frame.
"""

from __future__ import annotations

from typing import Any

import openai
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletion, ChatCompletionChunk

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
    peek,
    raise_for,
    read_progress,
    read_reasoning,
    read_timings,
    shared_transport,
    stream_request,
)

#: The package this adapter wraps: a crash in it is the client's, one here the adapter's.
CONFORM_WRAPS = ("openai",)
#: How openai-python says what went wrong.
ERRORS = ClientErrors(
    server=(openai.APIError,),
    refused=(openai.APIResponseValidationError,),
    message=lambda exc: getattr(exc, "message", str(exc)),
)

#: The client, made once as an application makes it: its SSE decoder and chunk parsing read the
#: stream.
_CLIENT = openai.OpenAI(api_key="unused", base_url=API_BASE, max_retries=0)
#: The transport that serves the running case's feed, and the one request it answers.
_TRANSPORT = shared_transport()
_REQUEST = stream_request()


def _extra(model: Any, name: str) -> Any:
    """An unknown field the client kept on its (unvalidated) model, or None."""
    return (getattr(model, "model_extra", None) or {}).get(name)


class _Reader:
    """The client's side, run by the feed (in a greenlet); it holds nothing of the Assembler."""

    def __init__(self) -> None:
        self.chunks: list[Any] = []  # the client's parsed chunks since the last push

    def read(self) -> None:
        # The `openai.Stream` that `chat.completions.create(stream=True)` returns for a 200
        # event-stream response, over the feed's response: building the request (the same one
        # every case) was a third of the CPU of a run, and nothing of the stream.
        stream = openai.Stream(
            cast_to=ChatCompletionChunk,
            response=_TRANSPORT.handle_request(_REQUEST),
            client=_CLIENT,
        )
        for chunk in stream:
            self.chunks.append(chunk)


class Assembler(ReasoningReaders):
    """One stream, read by openai-python's own HTTP stack and folded by its stream state."""

    def __init__(self) -> None:
        self._feed = InlineFeed()
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
        try:
            if self._feed.error is not None:
                raise_for(ERRORS, self._feed.error)
            events: list[Any] = []
            for chunk in self._reader.chunks:
                # Client: fold the chunk; its events come per choice, content, then tool calls.
                client_events = [e for e in self._state.handle_chunk(chunk) if e.type != "chunk"]
                self._started = True
                events += self._events(chunk, client_events)
            # Adapter: the llama-server fields of the payload the client accepted.
            return self._llama_fields(data, events)
        except BaseException:
            self._feed.end()  # the case ends here: let the client go
            raise

    def _events(self, chunk: Any, client_events: list[Any]) -> list[Any]:
        """The client's events for `chunk`, with the adapter's reasoning and each piece's own id
        and name, in the contract's order (per choice: reasoning, content, tool calls)."""
        pending = [e for e in client_events if e.type in _DELTA_EVENTS]
        events: list[Any] = []
        choices = chunk.choices if isinstance(chunk.choices, list) else []
        for choice in choices:
            delta = getattr(choice, "delta", None)
            reasoning = read_reasoning(_extra(delta, "reasoning_content"))
            if reasoning:
                events.append(Reasoning(reasoning))
            if getattr(delta, "content", None) is not None and _next(pending, "content.delta"):
                text = pending.pop(0).delta  # the client's content.delta
                if text:
                    events.append(Content(text))
            for piece in getattr(delta, "tool_calls", None) or []:
                if not _next(pending, "tool_calls.function.arguments.delta"):
                    continue  # the client made no event for this piece
                event = pending.pop(0)
                function = getattr(piece, "function", None)
                events.append(
                    ToolCallDelta(
                        index=event.index,
                        id=getattr(piece, "id", None),
                        name=getattr(function, "name", None),
                        arguments=event.arguments_delta,
                    )
                )
        return events

    def _llama_fields(self, data: str, events: list[Any]) -> list[Any]:
        payload = peek(data)
        self._llama.take_timings(read_timings(payload.get("timings")))
        progress = read_progress(payload.get("prompt_progress"))
        found = events if progress is None else [progress, *events]
        for event in found:
            self._llama.saw(event)
        return found

    # -- finish ----------------------------------------------------------------------------------

    def finish(self, thinking_capped: bool) -> Completion:
        self._feed.end()
        if self._feed.error is not None:
            raise_for(ERRORS, self._feed.error)
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


def _next(pending: list[Any], kind: str) -> bool:
    """True when the client's next event is of `kind`."""
    return bool(pending) and pending[0].type == kind
