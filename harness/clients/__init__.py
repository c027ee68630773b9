"""The adapter kit for Python clients: what a conform target that wraps an existing client needs
(docs/clients.md).

A client such as openai-python, litellm, LangChain or Pydantic AI has no assembler of its own: it
reads an HTTP response and accumulates what it reads. An **adapter** is a conform target that
hands each pushed payload to the client through the client's own HTTP layer and reads the events
and the completion back out of it. The kit gives it:

- **the feed** (`InlineFeed`, `AsyncInlineFeed`, `HttpFeed`, `shared_transport`,
  `stream_request`): an httpx transport whose one streamed response is the pushed payloads,
  written as server-sent events; `write(data)` returns once the client has dealt with that event;
- **the error mapping** (`ClientErrors`, `raise_for`): only the server's error, a response the
  client refused (malformed JSON, a shape its validation refuses) and a stream it found cut short
  are the contract's errors; anything else is raised as the crash it is, at the client's frame;
- **the llama-server fields** no OpenAI client keeps (`read_timings`, `read_progress`,
  `read_reasoning`, `read_id`, `ReasoningState`, `ReasoningReaders`), read from the payload with
  `peek`, which never raises;
- **the events and the completion** conform reads (`Progress`, `Reasoning`, `Content`,
  `ToolCallDelta`, `ToolCall`, `Completion`) and the contract's error (`StreamError`,
  `protocol`).

An adapter declares the packages it wraps, so that a crash in its own code is reported as an
adapter fault and never blamed on the client (`harness.drive.blame`):

    CONFORM_WRAPS = ("openai",)

`examples/clients/` holds six adapters written with it. Importing the kit imports httpx (a
dependency of conform); `InlineFeed` needs `greenlet`, which the `clients` extra installs.
"""

from __future__ import annotations

from harness.clients.errors import ClientErrors, chain, malformed_json, raise_for
from harness.clients.feed import (
    API_BASE,
    AsyncInlineFeed,
    HttpFeed,
    InlineFeed,
    shared_transport,
    sse_event,
    stream_request,
)
from harness.clients.llama import (
    Completion,
    Content,
    Progress,
    Reasoning,
    ReasoningReaders,
    ReasoningState,
    StreamError,
    ToolCall,
    ToolCallDelta,
    as_integer,
    peek,
    protocol,
    read_id,
    read_progress,
    read_reasoning,
    read_timings,
)

__all__ = [
    "API_BASE",
    "AsyncInlineFeed",
    "ClientErrors",
    "Completion",
    "Content",
    "HttpFeed",
    "InlineFeed",
    "Progress",
    "Reasoning",
    "ReasoningReaders",
    "ReasoningState",
    "StreamError",
    "ToolCall",
    "ToolCallDelta",
    "as_integer",
    "chain",
    "malformed_json",
    "peek",
    "protocol",
    "raise_for",
    "read_id",
    "read_progress",
    "read_reasoning",
    "read_timings",
    "shared_transport",
    "sse_event",
    "stream_request",
]
