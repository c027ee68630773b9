"""Pydantic AI as a conform target: a streamed model request through `OpenAIChatModel`.

    conform run examples/clients/pydantic_ai_adapter.py:Assembler \
        --xfail examples/clients/pydantic-ai.xfail

What is being tested is the client (`pydantic-ai-slim[openai]`, the version pyproject's `clients`
extra pins), wrapped as its docs show for an OpenAI-compatible server: `OpenAIChatModel` with an
`OpenAIProvider(base_url=..., http_client=...)`, streamed with `pydantic_ai.direct
.model_request_stream` (the model layer an `Agent` streams through, without the agent's tool loop,
which would answer a tool call with a second request). The profile sets
`openai_chat_streaming_requires_finish_reason`: without it Pydantic AI invents a finish reason
for a stream that was cut off, and a caller of llama-server that wants to know sets it
(docs/clients.md says what the default does).

- FROM THE CLIENT: everything from the HTTP response on. The response is the feed's (conform's
  adapter kit, `harness.clients`, docs/clients.md), whose body is the pushed payloads, one
  server-sent event each, served by the transport of the
  `http_client` (the client's transport hook, an `httpx2.AsyncClient`); Pydantic AI's call of
  openai-python's `chat.completions.create(stream=True)` gets the `openai.AsyncStream` over it
  that openai-python makes for a 200 event-stream response, without building the request
  (`_Completions`): Pydantic AI's mapping of the request, openai-python's async SSE decoder,
  `json.loads` and `error` check, Pydantic AI's chunk handling and its parts manager, whose events
  are the events here (`PartStartEvent` and `PartDeltaEvent` of `ThinkingPart`, `TextPart`,
  `ToolCallPart`), and its final `ModelResponse`: the completion's texts (its parts of each kind,
  joined), tool calls, finish reason (`provider_details["finish_reason"]`, the server's word;
  `finish_reason` is Pydantic AI's own vocabulary) and id (`provider_response_id`).
- FROM THE ADAPTER: `timings`, `prompt_progress` and the reasoning state, read from the payload
  after the client has dealt with it (`peek`, which never raises; Pydantic AI keeps neither); a
  tool-call event's `index`, which
  counts tool-call parts (Pydantic AI's part index counts every part); no event for empty text;
  the error mapping below.

Errors (`harness.clients.ClientErrors`, which follows Pydantic AI's `ModelAPIError` to what it
wraps): `openai.APIError` raised inside the client is the server's error (`server`, with
openai-python's message); Pydantic AI's "Streamed response ended without a `finish_reason`" is
`stream_closed_early`; `APIResponseValidationError` and the JSON parser's error for a payload
that is not JSON ("Failed to decode response as JSON") are `protocol`. Anything else is a crash,
at the client's own frame.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import httpx2
import openai
from openai.types.chat import ChatCompletionChunk
from pydantic_ai.direct import model_request_stream
from pydantic_ai.exceptions import ModelAPIError, UnexpectedModelBehavior
from pydantic_ai.messages import (
    ModelRequest,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
)
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.profiles.openai import OpenAIModelProfile
from pydantic_ai.providers.openai import OpenAIProvider

from harness.clients import (
    API_BASE,
    AsyncInlineFeed,
    ClientErrors,
    Completion,
    Content,
    Progress,
    Reasoning,
    ReasoningReaders,
    ReasoningState,
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

#: The packages this adapter wraps: a crash in them is the client's, one here the adapter's.
CONFORM_WRAPS = ("pydantic_ai", "openai")
#: Pydantic AI's own checks of a stream that ended early: without a finish reason (with the
#: profile setting below), or without any content or tool call.
_ENDED_EARLY = ("ended without a `finish_reason`", "Streamed response ended without content")
#: How the client says what went wrong.
ERRORS = ClientErrors(
    server=(openai.APIError,),
    refused=(openai.APIResponseValidationError,),
    closed_early=lambda exc: (
        isinstance(exc, ModelAPIError | UnexpectedModelBehavior)
        and any(text in str(exc) for text in _ENDED_EARLY)
    ),
    message=lambda exc: getattr(exc, "message", str(exc)),
)


def _args(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


#: The transport that serves the running case's feed, and the one request it answers.
_TRANSPORT = shared_transport(httpx2)
_REQUEST = stream_request(httpx2)


class _Completions:
    """openai-python's `chat.completions`, which Pydantic AI calls (`create(..., stream=True)`),
    answering as it does for a 200 event-stream response: with the `openai.AsyncStream` over the
    response, here the feed's. What is left out is openai-python's building and sending of the
    request (its parameters transformed, headers, JSON), the same every case and nothing of the
    stream: a quarter of the CPU of a run. Pydantic AI's own code (its messages and settings
    mapped into that call, its stream handling, parts manager and response) runs as before;
    so do openai-python's SSE decoder and chunk parsing. Any other call goes to openai-python's
    resource."""

    def __init__(self, client: openai.AsyncOpenAI) -> None:
        self._completions = client.chat.completions
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._completions, name)

    async def create(self, **params: Any) -> Any:
        if params.get("stream") is not True:
            return await self._completions.create(**params)
        return openai.AsyncStream(
            cast_to=ChatCompletionChunk,
            response=await _TRANSPORT.handle_async_request(_REQUEST),
            client=self._client,
        )


def _model() -> OpenAIChatModel:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecations of the client's own API are not ours
        model = OpenAIChatModel(
            "llama",
            provider=OpenAIProvider(
                base_url=API_BASE,
                api_key="unused",
                http_client=httpx2.AsyncClient(transport=_TRANSPORT),
            ),
            profile=OpenAIModelProfile(openai_chat_streaming_requires_finish_reason=True),
        )
    client = model.client
    vars(client.chat)["completions"] = _Completions(client)  # its cached resource, replaced
    return model


#: The model, made once as an application makes it: its transport serves the running case's feed.
_MODEL = _model()


class _Reader:
    """The client's side, run in the feed's thread; it holds nothing of the Assembler."""

    def __init__(self) -> None:
        self.events: list[Any] = []  # Pydantic AI's events since the last push
        self.stream: Any = None

    async def read(self) -> Any:
        model = _MODEL
        request = [ModelRequest.user_text_prompt("conform")]
        async with model_request_stream(model, request) as stream:
            self.stream = stream
            async for event in stream:
                self.events.append(event)
            return stream.get()


class Assembler(ReasoningReaders):
    """One streamed model request, read and accumulated by Pydantic AI."""

    def __init__(self) -> None:
        self._feed = AsyncInlineFeed(http=httpx2)
        self._reader = _Reader()
        self._llama = ReasoningState()
        self._tool_parts: dict[int, int] = {}  # Pydantic AI's part index -> tool-call index
        self._feed.start(self._reader.read)

    def __del__(self) -> None:
        self._feed.close()  # dropped mid-stream: let the client's thread end

    @property
    def _stream(self) -> Any:
        return self._reader.stream

    # -- state readers: from the client's streamed response --------------------------------------

    @property
    def id(self) -> str | None:
        return getattr(self._stream, "provider_response_id", None)

    @property
    def is_finished(self) -> bool:
        details = getattr(self._stream, "provider_details", None) or {}
        return bool(details.get("finish_reason"))

    # -- push ------------------------------------------------------------------------------------

    def push(self, data: str) -> list[Any]:
        self._reader.events = []
        self._feed.write(data)
        try:
            if self._feed.error is not None:
                raise_for(ERRORS, self._feed.error)
            return self._translate(data)
        except BaseException:
            self._feed.end()  # the case ends here: let the client go
            raise

    def _translate(self, data: str) -> list[Any]:
        # Adapter: the llama-server fields of the payload the client dealt with.
        payload = peek(data)
        self._llama.take_timings(read_timings(payload.get("timings")))
        progress: Progress | None = read_progress(payload.get("prompt_progress"))
        for choice in payload.get("choices") or []:
            if isinstance(choice, dict) and isinstance(choice.get("delta"), dict):
                read_reasoning(choice["delta"].get("reasoning_content"))

        events: list[Any] = [] if progress is None else [progress]
        for event in self._reader.events:  # Client: Pydantic AI's part events for this payload
            if isinstance(event, PartStartEvent):
                part = event.part
                if isinstance(part, ThinkingPart) and part.content:
                    events.append(Reasoning(part.content))
                elif isinstance(part, TextPart) and part.content:
                    events.append(Content(part.content))
                elif isinstance(part, ToolCallPart):
                    index = self._tool_parts.setdefault(event.index, len(self._tool_parts))
                    events.append(
                        ToolCallDelta(index, part.tool_call_id, part.tool_name, _args(part.args))
                    )
            elif isinstance(event, PartDeltaEvent):
                delta = event.delta
                if isinstance(delta, ThinkingPartDelta) and delta.content_delta:
                    events.append(Reasoning(delta.content_delta))
                elif isinstance(delta, TextPartDelta) and delta.content_delta:
                    events.append(Content(delta.content_delta))
                elif isinstance(delta, ToolCallPartDelta):
                    index = self._tool_parts.setdefault(event.index, len(self._tool_parts))
                    events.append(
                        ToolCallDelta(
                            index,
                            delta.tool_call_id,
                            delta.tool_name_delta,
                            _args(delta.args_delta),
                        )
                    )
        for event in events:
            self._llama.saw(event)
        return events

    # -- finish ----------------------------------------------------------------------------------

    def finish(self, thinking_capped: bool) -> Completion:
        self._feed.end()
        if self._feed.error is not None:
            raise_for(ERRORS, self._feed.error)
        response = self._feed.result
        texts = [p.content for p in response.parts if isinstance(p, TextPart)]
        thoughts = [p.content for p in response.parts if isinstance(p, ThinkingPart)]
        return Completion(
            id=response.provider_response_id,
            content="".join(texts) if texts else None,
            reasoning_content="".join(thoughts) if thoughts else None,
            tool_calls=[
                ToolCall(p.tool_call_id, p.tool_name, _args(p.args))
                for p in response.parts
                if isinstance(p, ToolCallPart)
            ],
            finish_reason=(response.provider_details or {}).get("finish_reason"),
            timings=self._llama.timings,
            reasoning_tokens=self._llama.reasoning_tokens,
            thinking_capped=bool(thinking_capped),
        )
