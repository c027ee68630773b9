"""openai-python's own `Stream`, fed one payload at a time instead of reading an HTTP body.

`openai.Stream` is what `client.chat.completions.create(stream=True)` returns, and what litellm
iterates for an OpenAI-compatible server such as llama-server. For each server-sent event it checks
for `[DONE]`, parses the data with `json.loads`, raises `openai.APIError` when the object has a
truthy `error`, and builds a `ChatCompletionChunk` (without validation, as the client does by
default). conform has already split the stream into payloads, so this module replaces only the
byte-level SSE decoder: each payload becomes one `ServerSentEvent`, and everything after that is
the client's code.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
from openai import Stream
from openai._streaming import ServerSentEvent
from openai.types.chat import ChatCompletionChunk

# One client for every stream: building it opens no connection (nothing is ever sent).
_CLIENT = openai.OpenAI(api_key="unused", base_url="http://127.0.0.1:9/v1", max_retries=0)


class _PayloadDecoder:
    """Stands in for the client's SSE decoder: yields the payload last handed to `feed`."""

    def __init__(self, source: Iterator[str]) -> None:
        self._source = source

    def iter_bytes(self, _body: Any) -> Iterator[ServerSentEvent]:
        for data in self._source:
            yield ServerSentEvent(data=data)


class _NoBody:
    """The HTTP response the client closes at the end; it has no body to read."""

    request = None

    def iter_bytes(self) -> Iterator[bytes]:
        return iter(())

    def close(self) -> None:
        pass


def chunk_stream(source: Iterator[str]) -> Stream[ChatCompletionChunk]:
    """openai-python's Stream of ChatCompletionChunk over the payloads `source` yields."""
    stream: Stream[ChatCompletionChunk] = Stream(
        cast_to=ChatCompletionChunk,
        response=_NoBody(),  # type: ignore[arg-type]
        client=_CLIENT,
    )
    stream._decoder = _PayloadDecoder(source)  # type: ignore[assignment]
    return stream


class OneAtATime:
    """A payload source for `chunk_stream` that yields each payload handed to `put`, once."""

    def __init__(self) -> None:
        self._next: str | None = None

    def put(self, data: str) -> None:
        self._next = data

    def __iter__(self) -> Iterator[str]:
        while True:
            data, self._next = self._next, None
            assert data is not None, "the stream asked for a payload nobody pushed"
            yield data
