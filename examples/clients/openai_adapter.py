"""openai-python as a conform target: its Stream parses, its ChatCompletionStreamState accumulates.

    conform run examples/clients/openai_adapter.py:Assembler --xfail examples/clients/openai.xfail

What is being tested is the client (openai-python >= 1.40; read against 3.x):

- FROM THE CLIENT: parsing each payload (`openai.Stream`: `json.loads`, the `error` check that
  raises `openai.APIError`, building a `ChatCompletionChunk` without validation), folding chunks
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

from typing import Any

import openai
from _llama import (
    Completion,
    Content,
    Reasoning,
    ReasoningState,
    StreamError,
    ToolCall,
    ToolCallDelta,
    protocol,
    read_progress,
    read_reasoning,
    read_timings,
)
from _openai_stream import OneAtATime, chunk_stream
from openai.lib.streaming.chat import ChatCompletionStreamState


def _extra(model: Any, name: str) -> Any:
    """An unknown field the client kept on its (unvalidated) model, or None."""
    return (getattr(model, "model_extra", None) or {}).get(name)


class Assembler:
    """One stream, folded by openai-python."""

    def __init__(self) -> None:
        self._payloads = OneAtATime()
        self._stream = chunk_stream(iter(self._payloads))
        self._state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
        self._started = False
        self._ended = False  # the client's stream stopped (a payload starting with [DONE])
        self._llama = ReasoningState()

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

    @property
    def reasoning_tokens(self) -> int:
        return self._llama.reasoning_tokens

    @property
    def in_reasoning(self) -> bool:
        return self._llama.in_reasoning

    # -- push ------------------------------------------------------------------------------------

    def push(self, data: str) -> list[Any]:
        if self._ended:
            return []  # the client stops reading at a payload that starts with [DONE]
        self._payloads.put(data)
        try:
            chunk = next(self._stream)
        except StopIteration:
            self._ended = True
            return []
        except openai.APIResponseValidationError as exc:
            raise protocol(str(exc)) from exc
        except openai.APIError as exc:
            raise StreamError("server", exc.message) from exc
        except (ValueError, RecursionError) as exc:  # json.loads, through the client
            raise protocol(f"{type(exc).__name__}: {exc}") from exc

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
                text = next(wanted).delta  # the client's content.delta event
                if text:
                    events.append(Content(text))
            for piece in choice.delta.tool_calls or []:
                event = next(wanted)  # the client's tool_calls.function.arguments.delta event
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
        if not self.is_finished:
            raise StreamError("stream_closed_early", "no finish reason arrived")
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
