"""The adapter kit's feed (`harness/clients/feed.py`) hands over one event at a time.

`write` must return only once the client has dealt with the event it sent (else a push would
report the previous payload's events), also when the client does work between reads, and as soon
as the client has ended; the same for a sync and an async httpx client, and for a sync client
run inline (`InlineFeed`, in a greenlet of the caller's thread).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
import time
from typing import Any

import httpx
import pytest

# The feeds are the client adapters' glue: without the clients extra (greenlet) they are skipped
# with the adapters' gate (tests/integration/test_clients.py), except in CI, which installs it.
if importlib.util.find_spec("greenlet") is None and os.environ.get("CI") != "true":
    pytest.skip("greenlet is not installed (pip install -e '.[clients]')", allow_module_level=True)

from harness.clients.feed import AsyncInlineFeed, HttpFeed, InlineFeed, shared_transport, sse_event

SYNC_FEEDS = pytest.mark.parametrize("feed_class", [HttpFeed, InlineFeed])


def _events(lines: Any) -> Any:
    """The data of each server-sent event, from an iterator of text lines."""
    data: list[str] = []
    for line in lines:
        if line == "":
            yield "\n".join(data)
            data = []
        elif line.startswith("data: "):
            data.append(line[len("data: ") :])


def test_sse_event_writes_each_line_as_data_and_a_cr_as_a_line_break() -> None:
    assert sse_event('{"a":1}') == b'data: {"a":1}\n\n'
    assert sse_event("a\r\nb\rc\nd") == b"data: a\ndata: b\ndata: c\ndata: d\n\n"


@SYNC_FEEDS
def test_write_returns_after_a_sync_client_dealt_with_the_event(feed_class: type[HttpFeed]) -> None:
    feed = feed_class()
    seen: list[str] = []

    def read() -> str:
        with (
            httpx.Client(transport=feed.transport) as client,
            client.stream("POST", "http://127.0.0.1:9/v1/chat/completions") as response,
        ):
            for data in _events(response.iter_lines()):
                time.sleep(0.02)  # work between reads: write must wait for it
                if data == "stop":
                    return "stopped"
                seen.append(data)
        return "ended"

    feed.start(read)
    feed.write("one")
    assert seen == ["one"]
    feed.write("two\nlines")
    assert seen == ["one", "two\nlines"]
    feed.write("stop")  # the client returns: write does not wait for a read that never comes
    assert feed.ended
    feed.write("ignored")
    feed.end()
    assert feed.result == "stopped" and feed.error is None
    assert [r.url.path for r in feed.requests] == ["/v1/chat/completions"]


def test_write_returns_after_an_async_client_dealt_with_the_event() -> None:
    feed = HttpFeed()
    seen: list[str] = []

    async def read() -> None:
        async with (
            httpx.AsyncClient(transport=feed.transport) as client,
            client.stream("POST", "http://127.0.0.1:9/v1") as response,
        ):
            lines = [line async for line in response.aiter_lines()]
            for data in _events(iter(lines)):
                seen.append(data)

    def run() -> None:
        asyncio.run(read())

    # aiter_lines is read to the end here, so the events show once the body ends.
    feed.start(run)
    feed.write("a")
    feed.write("b")
    feed.end()
    assert feed.error is None
    assert seen == ["a", "b"]


def test_an_async_client_on_the_threads_loop_takes_one_event_a_write() -> None:
    seen: list[str] = []
    client = httpx.AsyncClient(transport=shared_transport())

    def reader(name: str) -> Any:
        async def read() -> str:
            async with client.stream("POST", "http://127.0.0.1:9/v1") as response:
                async for data in _events_async(response.aiter_lines()):
                    await asyncio.sleep(0)  # work between reads: write must wait for it
                    seen.append(f"{name}:{data}")
            return name

        return read

    dropped = AsyncInlineFeed()
    dropped.start(reader("dropped"))
    dropped.write("x")
    assert seen == ["dropped:x"]
    dropped.close()  # its case was dropped: it ends when the loop next runs
    feed = AsyncInlineFeed()
    feed.start(reader("case"))
    assert dropped.ended and dropped.result == "dropped"
    feed.write("one")
    assert seen == ["dropped:x", "case:one"]
    feed.write("two")
    assert seen[-1] == "case:two" and not feed.ended
    feed.end()
    assert feed.result == "case" and feed.error is None and len(feed.requests) == 1


async def _events_async(lines: Any) -> Any:
    data: list[str] = []
    async for line in lines:
        if line == "":
            yield "\n".join(data)
            data = []
        elif line.startswith("data: "):
            data.append(line[len("data: ") :])


@SYNC_FEEDS
def test_an_error_in_the_client_ends_the_wait_and_is_kept(feed_class: type[HttpFeed]) -> None:
    feed = feed_class()

    def read() -> None:
        with (
            httpx.Client(transport=feed.transport) as client,
            client.stream("GET", "http://127.0.0.1:9/") as response,
        ):
            for _ in _events(response.iter_lines()):
                raise ValueError("not JSON")

    feed.start(read)
    feed.write("{")
    assert feed.ended
    assert isinstance(feed.error, ValueError)


def test_close_lets_a_dropped_client_thread_end() -> None:
    feed = HttpFeed()
    started = threading.Event()

    def read() -> None:
        with (
            httpx.Client(transport=feed.transport) as client,
            client.stream("GET", "http://127.0.0.1:9/") as response,
        ):
            started.set()
            for _ in response.iter_lines():
                pass

    feed.start(read)
    assert started.wait(10)
    threads = threading.active_count()
    feed.close()
    deadline = time.monotonic() + 10
    while threading.active_count() >= threads and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() < threads, "the client's thread still runs"


def test_a_dropped_inline_client_ends_when_the_next_feed_starts() -> None:
    ended: list[str] = []

    def reader(feed: HttpFeed, name: str) -> Any:
        def read() -> None:
            with (
                httpx.Client(transport=feed.transport) as client,
                client.stream("GET", "http://127.0.0.1:9/") as response,
            ):
                for _ in response.iter_lines():
                    pass
            ended.append(name)

        return read

    first = InlineFeed()
    first.start(reader(first, "first"))
    first.write("x")
    first.close()  # the case was dropped mid-stream (from __del__: nothing is resumed there)
    assert ended == [] and not first.ended
    second = InlineFeed()
    second.start(reader(second, "second"))
    assert ended == ["first"] and first.ended and first.error is None
    second.end()
    assert ended == ["first", "second"]


@SYNC_FEEDS
def test_a_client_made_once_reads_the_feed_of_each_case(feed_class: type[HttpFeed]) -> None:
    client = httpx.Client(transport=shared_transport())

    def read() -> list[str]:
        with client.stream("POST", "http://127.0.0.1:9/v1") as response:
            return list(_events(response.iter_lines()))

    for payload in ("one", "two"):
        feed = feed_class()
        feed.start(read)
        feed.write(payload)
        feed.end()
        assert feed.error is None and feed.result == [payload] and len(feed.requests) == 1


@pytest.mark.parametrize("module", ["httpx2"])
def test_another_httpx_flavour_is_served(module: str) -> None:
    http = pytest.importorskip(module)
    feed = HttpFeed(http=http)
    seen: list[str] = []

    def read() -> None:
        with (
            http.Client(transport=feed.transport) as client,
            client.stream("GET", "http://127.0.0.1:9/") as response,
        ):
            for data in _events(response.iter_lines()):
                seen.append(data)

    feed.start(read)
    feed.write("x")
    assert seen == ["x"]
    feed.end()
    assert feed.error is None
