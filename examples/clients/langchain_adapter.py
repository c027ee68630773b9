"""LangChain as a conform target: `ChatOpenAI.stream`, its chunks added up as LangChain's docs show.

    conform run examples/clients/langchain_adapter.py:Assembler --timeout 60 \
        --xfail examples/clients/langchain.xfail

What is being tested is the client (`langchain-openai`, the version pyproject's `clients` extra
pins), wrapped as its docs show: `ChatOpenAI(base_url=..., http_client=...)` pointed at
llama-server, `llm.stream(prompt)`, and `gathered = gathered + chunk` for the final message.

- FROM THE CLIENT: everything from the HTTP response on. The response is the feed's (conform's
  adapter kit, `harness.clients`, docs/clients.md), whose body is the pushed payloads, one
  server-sent event each, served by the transport of the
  `http_client` (the client's transport hook); `ChatOpenAI`'s call of openai-python's
  `chat.completions.create(stream=True)` gets the `openai.Stream` over it that openai-python makes
  for a 200 event-stream response, without building the request (`_Completions`), so the client's
  own stack reads them: LangChain's request payload, openai-python's SSE decoder,
  `json.loads` and `error` check, LangChain's conversion of each chunk into an `AIMessageChunk`
  (its `content` and `tool_call_chunks` are the events), and LangChain's own accumulation
  (`AIMessageChunk.__add__`): the completion's content, tool calls and finish reason
  (`response_metadata["finish_reason"]`).
- FROM THE ADAPTER: `timings`, `prompt_progress` and the reasoning state; two fields
  LangChain has no place for, read from the payload after the client has dealt with it (`peek`,
  which never raises: a payload that is not a JSON object has none of them):
  `reasoning_content` (`ChatOpenAI` documents that it does not extract it: "API scope" in its
  module docstring; the completion's `reasoning_content` is the adapter's concatenation) and the
  completion id (a streamed message's `id` is LangChain's own run id, `lc_run--...`, and the
  server's id is kept nowhere); no event for empty text; `stream_closed_early` when `finish`
  comes before any finish reason (LangChain does not check); the error mapping below.

Errors (`harness.clients.ClientErrors`): `openai.APIError` raised through LangChain is the
server's error (`server`, with the client's message); `APIResponseValidationError` and the JSON
parser's error for a payload that is not JSON are `protocol`. Anything else the client raises is
a crash, at the client's own frame.
"""

from __future__ import annotations

from typing import Any

import httpx
import openai
from langchain_openai import ChatOpenAI
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
    peek,
    raise_for,
    read_id,
    read_progress,
    read_reasoning,
    read_timings,
    shared_transport,
    stream_request,
)

#: The packages this adapter wraps: a crash in them is the client's, one here the adapter's.
CONFORM_WRAPS = ("langchain_openai", "langchain_core", "openai")
#: How the client says what went wrong (LangChain lets openai-python's errors through).
ERRORS = ClientErrors(
    server=(openai.APIError,),
    refused=(openai.APIResponseValidationError,),
    # LangChain's own check of a stream that ended before any chunk (`BaseChatModel.stream`).
    closed_early=lambda exc: "No generation chunks were returned" in str(exc),
    message=lambda exc: getattr(exc, "message", str(exc)),
)


#: The transport that serves the running case's feed, and the one request it answers.
_TRANSPORT = shared_transport()
_REQUEST = stream_request()
#: The client, made once as an application makes it: its transport serves the running case's feed.
_LLM = ChatOpenAI(
    model="llama",
    api_key="unused",  # type: ignore[arg-type]
    base_url=API_BASE,
    max_retries=0,
    http_client=httpx.Client(transport=_TRANSPORT),
)


class _Completions:
    """openai-python's `chat.completions`, which ChatOpenAI calls (`self.client.create(**payload)`
    with `stream=True`), answering as it does for a 200 event-stream response: with the
    `openai.Stream` over the response, here the feed's. What is left out is openai-python's
    building and sending of the request (its parameters transformed, headers, JSON), the same
    every case and nothing of the stream: a third of the CPU of a run. LangChain's own code
    (its request payload, the chunk conversion, the adding up) runs as before; so do
    openai-python's SSE decoder and chunk parsing (the openai-python adapter makes its stream
    the same way). Any other call goes to openai-python's resource."""

    def __init__(self, completions: Any, client: openai.OpenAI) -> None:
        self._completions = completions
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._completions, name)

    def create(self, **payload: Any) -> Any:
        if payload.get("stream") is not True:
            return self._completions.create(**payload)
        return openai.Stream(
            cast_to=ChatCompletionChunk,
            response=_TRANSPORT.handle_request(_REQUEST),
            client=self._client,
        )


_LLM.client = _Completions(_LLM.client, _LLM.root_client)


class _Reader:
    """The client's side, run by the feed (in a greenlet); it holds nothing of the Assembler."""

    def __init__(self) -> None:
        self.llm = _LLM
        self.chunks: list[Any] = []  # LangChain's chunks since the last push
        self.gathered: Any = None

    def read(self) -> None:
        for chunk in self.llm.stream("conform"):
            self.chunks.append(chunk)
            # Client: LangChain's own accumulation, as its docs show.
            self.gathered = chunk if self.gathered is None else self.gathered + chunk


class Assembler(ReasoningReaders):
    """One stream, read and added up by LangChain's ChatOpenAI."""

    def __init__(self) -> None:
        self._feed = InlineFeed()
        self._reader = _Reader()
        self._llama = ReasoningState()
        self._reasoning: str | None = None
        self._id: str | None = None
        self._feed.start(self._reader.read)

    def __del__(self) -> None:
        self._feed.close()  # dropped mid-stream: let the client end

    @property
    def _gathered(self) -> Any:
        return self._reader.gathered

    # -- state readers ---------------------------------------------------------------------------

    @property
    def id(self) -> str | None:
        return self._id

    @property
    def is_finished(self) -> bool:
        metadata = getattr(self._gathered, "response_metadata", None) or {}
        return bool(metadata.get("finish_reason"))

    # -- push ------------------------------------------------------------------------------------

    def push(self, data: str) -> list[Any]:
        self._reader.chunks = []
        self._feed.write(data)
        try:
            if self._feed.error is not None:
                raise_for(ERRORS, self._feed.error)
            return self._events(data)
        except BaseException:
            self._feed.end()  # the case ends here: let the client go
            raise

    def _events(self, data: str) -> list[Any]:
        # Adapter: the llama-server fields of the payload the client dealt with.
        payload = peek(data)
        self._id = read_id(self._id, payload.get("id"))
        self._llama.take_timings(read_timings(payload.get("timings")))
        progress = read_progress(payload.get("prompt_progress"))
        # LangChain reads only the first choice (`choices[0]`), so the adapter does too.
        choices = payload.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        delta = choice.get("delta") if isinstance(choice, dict) else None
        reasoning = (
            read_reasoning(delta.get("reasoning_content")) if isinstance(delta, dict) else None
        )

        events: list[Any] = [] if progress is None else [progress]
        if reasoning:
            events.append(Reasoning(reasoning))
            self._reasoning = (self._reasoning or "") + reasoning
        for chunk in self._reader.chunks:  # Client: LangChain's chunk for this payload
            if isinstance(chunk.content, str) and chunk.content:
                events.append(Content(chunk.content))
            # An AIMessageChunk has them; a chunk of another role (LangChain makes one for a
            # delta whose role is not the assistant's) has none.
            for piece in getattr(chunk, "tool_call_chunks", None) or []:
                events.append(
                    ToolCallDelta(
                        index=piece.get("index"),
                        id=piece.get("id"),
                        name=piece.get("name"),
                        arguments=piece.get("args") or "",
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
        if not self.is_finished:
            raise StreamError("stream_closed_early", "no finish reason arrived")
        message = self._gathered
        content = message.content if isinstance(message.content, str) else None
        return Completion(
            id=self._id,
            content=content or None,  # LangChain has no null text: "" is none
            reasoning_content=self._reasoning,
            tool_calls=[
                ToolCall(id=call.get("id"), name=call.get("name"), arguments=call.get("args"))
                for call in message.tool_call_chunks
            ],
            finish_reason=message.response_metadata.get("finish_reason"),
            timings=self._llama.timings,
            reasoning_tokens=self._llama.reasoning_tokens,
            thinking_capped=bool(thinking_capped),
        )
