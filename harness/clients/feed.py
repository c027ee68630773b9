"""The feed: a Python client's own HTTP layer served the payloads conform pushes.

conform hands a target one payload at a time and wants that payload's events back before the
next. A client that reads an HTTP response itself (openai-python, and litellm, LangChain and
Pydantic AI on top of it) pulls bytes when it wants them, from its own loop. A feed sits at the
client's transport hook (an `httpx.MockTransport`, or httpx2's, which every httpx-based client
accepts through its `http_client`) and turns the two around:

- the client reads one response whose body is the pushed payloads, each written as one
  server-sent event (`sse_event`);
- `write(data)` hands that event over and returns once the client has dealt with it and asks for
  more bytes (or has ended: returned or raised), so whatever the client did for that event has
  happened. The body counts the client's reads, so "asks for more" is never mistaken for a read
  that came before the event.

Where the client runs: `InlineFeed` (a sync client, in a greenlet of the caller's thread: no
thread per case, no thread switch per payload; needs `greenlet`), `AsyncInlineFeed` (an async
client, as a task on one event loop of the caller's thread, run only while a push waits),
`HttpFeed` (a sync or async client on a thread of its own).

conform may drop a target in mid-stream (it stops a case at its first difference), so an adapter
closes its feed when it is garbage (`__del__`), and the client's side must not hold the adapter:
it holds only the feed and what the adapter collects.

A client object is made once per process, as an application makes it, not once per case: its
transport is `shared_transport()`, which serves the feed whose client runs in the calling thread
(or task), and `stream_request()` is the one request it answers.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import queue
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from types import ModuleType
from typing import Any

import httpx

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
#: Seconds a push waits for the client before giving up: conform's --timeout bounds a worker, but
#: an in-process run (`--in-process`, the tests) has no other guard against a client that hangs.
HANG = 60.0
_running = threading.local()  # `feed`: the HttpFeed whose client runs in this thread
_task_feed: contextvars.ContextVar[HttpFeed] = contextvars.ContextVar("feed")  # AsyncInlineFeed's


def sse_event(data: str) -> bytes:
    """One payload as the bytes of one server-sent event, each of its lines a `data:` line.

    A CR inside a payload (the `whitespace` mode puts CR between JSON tokens) cannot travel
    inside an SSE line, since CR ends one; it goes as a line break, which the client's decoder
    joins back as LF: the same JSON, as any HTTP stream would carry it.
    """
    if "\n" not in data and "\r" not in data:  # one line, as nearly every payload
        return b"data: " + data.encode("utf-8", "surrogatepass") + b"\n\n"
    lines = _LINE_BREAK.split(data)
    return ("".join(f"data: {line}\n" for line in lines) + "\n").encode("utf-8", "surrogatepass")


@functools.cache
def _body_class(http: ModuleType) -> type:
    """The streamed body for `http` (httpx, or its successor httpx2: same API, other classes),
    made once per module."""

    class Body(http.SyncByteStream, http.AsyncByteStream):  # type: ignore[name-defined,misc]
        def __init__(self, feed: HttpFeed) -> None:
            self._feed = feed

        def __iter__(self) -> Iterator[bytes]:
            while (item := self._feed._next()) is not None:
                yield item

        async def __aiter__(self) -> AsyncIterator[bytes]:
            while (item := await self._feed._anext()) is not None:
                yield item
                await asyncio.sleep(0)  # let the client's tasks run between events

    return Body


class HttpFeed:
    """An httpx transport whose one streamed response is the payloads handed to `write`."""

    #: Whether the client runs in a thread of its own (the queue and lock below are for it).
    _threaded = True

    def __init__(self, *, status: int = 200, http: ModuleType = httpx) -> None:
        self._status = status
        self._http = http
        self._body = _body_class(http)
        if self._threaded:  # an inline feed, one per case, needs neither
            self._queue: queue.Queue[bytes | None] = queue.Queue()
            self._lock = threading.Condition()
        self._reads = 0  # how often the client asked for the next event
        self._writes = 0
        self._ended = False
        self._thread: threading.Thread | None = None
        #: What the client's thread raised, if it did.
        self.error: BaseException | None = None
        #: What it returned.
        self.result: Any = None
        self.requests: list[Any] = []

    @functools.cached_property
    def transport(self) -> Any:
        """The transport to hand the client's http client (`httpx.Client(transport=...)`); an
        adapter that keeps its client across cases uses `shared_transport()` instead."""
        return self._http.MockTransport(self._respond)

    def _respond(self, request: Any) -> Any:
        self.requests.append(request)
        return self._http.Response(
            self._status,
            headers={"content-type": "text/event-stream"},
            stream=self._body(self),
            request=request,
        )

    def _next(self) -> bytes | None:
        with self._lock:
            self._reads += 1
            self._lock.notify_all()
        return self._queue.get()

    async def _anext(self) -> bytes | None:
        return self._next()  # blocks the client's loop, which runs in its own thread

    def start(self, run: Callable[[], Any]) -> None:
        """Runs the client (`run` reads the whole stream) in a thread of its own."""

        def main() -> None:
            _running.feed = self
            try:
                self.result = run()
            except BaseException as exc:  # handed over to the caller of write or end
                self.error = exc
            finally:
                _running.feed = None
                with self._lock:
                    self._ended = True
                    self._lock.notify_all()

        self._thread = threading.Thread(target=main, name="client", daemon=True)
        self._thread.start()

    @property
    def ended(self) -> bool:
        return self._ended

    def write(self, data: str) -> None:
        """Sends one payload; returns when the client waits for more bytes or has ended."""
        with self._lock:
            self._writes += 1
            wanted = self._writes + 1  # the read after the one that takes this event
        self._queue.put(sse_event(data))
        with self._lock:
            if not self._lock.wait_for(lambda: self._reads >= wanted or self._ended, HANG):
                raise TimeoutError(f"the client did not read the next event in {HANG:g} s")

    def close(self) -> None:
        """Ends the body without waiting: the client's thread ends on its own."""
        self._queue.put(None)

    def end(self) -> None:
        """Ends the body (the server closed the stream) and waits for the client to finish."""
        self.close()
        if self._thread is not None:
            self._thread.join(HANG)
            if self._thread.is_alive():
                raise TimeoutError(f"the client did not end in {HANG:g} s")


def _respond_running(request: Any) -> Any:
    feed = _task_feed.get(None) or getattr(_running, "feed", None)
    if feed is None:
        raise RuntimeError("no HttpFeed runs its client in this thread (HttpFeed.start)")
    return feed._respond(request)


def shared_transport(http: ModuleType = httpx) -> Any:
    """A transport for a client kept across cases: it serves the feed running in this thread."""
    return http.MockTransport(_respond_running)


#: Where the adapters' clients send their requests: nothing listens there, the transport answers.
API_BASE = "http://127.0.0.1:9/v1"


def stream_request(http: ModuleType = httpx, *, model: str = "llama") -> Any:
    """The one streamed chat request a client kept across cases sends, made once: what
    `shared_transport` answers with the running feed, for an adapter that makes the client's
    stream over that answer without building the request each case."""
    body = {"model": model, "messages": [{"role": "user", "content": "conform"}], "stream": True}
    return http.Request("POST", f"{API_BASE}/chat/completions", json=body)


class InlineFeed(HttpFeed):
    """An HttpFeed for a sync client that runs it in a greenlet of the caller's thread.

    The same turn-taking as HttpFeed's, without a thread per case or two thread switches per
    payload (each a wait for the scheduler on a busy machine): `write` switches into the client,
    which runs until it asks for bytes that are not there yet (then switches back) or ends. The
    client's code runs unchanged, only on another stack. For sync clients only: an async one
    suspended mid-stream would leave its event loop marked running in the thread.

    A feed closed mid-stream (its case dropped) cannot be resumed from `__del__`; the next feed
    started in the thread resumes it first, so that its client sees the end of the body and ends,
    as a thread would.
    """

    _threaded = False

    def __init__(self, *, status: int = 200, http: ModuleType = httpx) -> None:
        super().__init__(status=status, http=http)
        self._pending: list[bytes | None] = []
        self._client: Any = None  # the client's greenlet
        self._unfinished = _unfinished_here()  # this thread's: only it can resume the client

    def _next(self) -> bytes | None:
        self._reads += 1
        while not self._pending:
            assert self._client is not None and self._client.parent is not None
            self._client.parent.switch()  # back to `write`: the client waits for more bytes
        return self._pending.pop(0)

    def _resume(self) -> None:
        client = self._client
        if client is None or client.dead:
            return
        previous, _running.feed = getattr(_running, "feed", None), self
        try:
            client.switch()
        finally:
            _running.feed = previous

    def start(self, run: Callable[[], Any]) -> None:
        """Runs the client up to its first read of the body, in a greenlet of this thread."""
        while self._unfinished:  # feeds dropped mid-stream: let their clients end first
            self._unfinished.pop()._resume()

        import greenlet  # the `clients` extra's: only a sync client run inline needs it

        def main() -> None:
            try:
                self.result = run()
            except greenlet.GreenletExit:
                raise
            except BaseException as exc:  # handed over to the caller of write or end
                self.error = exc
            finally:
                self._ended = True

        self._client = greenlet.greenlet(main)
        self._resume()

    def write(self, data: str) -> None:
        """Sends one payload; returns when the client waits for more bytes or has ended."""
        self._writes += 1
        self._pending.append(sse_event(data))
        self._resume()

    def close(self) -> None:
        """Ends the body without waiting: the next feed started here lets the client end."""
        if not self._ended and self._client is not None and None not in self._pending:
            self._pending.append(None)
            self._unfinished.append(self)

    def end(self) -> None:
        """Ends the body (the server closed the stream) and lets the client finish."""
        if None not in self._pending:
            self._pending.append(None)
        while self._client is not None and not self._client.dead:
            self._resume()
        if self in self._unfinished:
            self._unfinished.remove(self)


_threads = threading.local()  # `unfinished`: this thread's inline feeds closed mid-stream


def _unfinished_here() -> list[InlineFeed]:
    """The inline feeds of this thread closed mid-stream whose clients have not ended yet."""
    if not hasattr(_threads, "unfinished"):
        _threads.unfinished = []
    unfinished: list[InlineFeed] = _threads.unfinished
    return unfinished


class AsyncInlineFeed(HttpFeed):
    """An HttpFeed for an async client that runs it on one event loop of the caller's thread.

    The same turn-taking, without a thread and an `asyncio.run` per case: `start(run)` makes the
    client's coroutine (`run()`) a task on this thread's loop, kept for every case, and `write`
    runs that loop only until the client awaits bytes that are not there yet, or ends. Between
    pushes no loop runs. A feed closed mid-stream gets the end of its body at once; its client
    ends the next time the loop runs (the next case's first push).
    """

    _threaded = False

    def __init__(self, *, status: int = 200, http: ModuleType = httpx) -> None:
        super().__init__(status=status, http=http)
        self._loop = _loop_here()
        self._pending: list[bytes | None] = []
        self._wake: asyncio.Future[None] | None = None  # the client awaits it for more bytes
        self._idle: asyncio.Future[None] | None = None  # done when it waits, or has ended
        self._task: asyncio.Task[None] | None = None

    def _next(self) -> bytes | None:
        raise RuntimeError("AsyncInlineFeed serves async clients only")

    async def _anext(self) -> bytes | None:
        self._reads += 1
        while not self._pending:
            self._settle()
            self._wake = self._loop.create_future()
            await self._wake
        return self._pending.pop(0)

    def _settle(self) -> None:
        if self._idle is not None and not self._idle.done():
            self._idle.set_result(None)

    def _drive(self) -> None:
        assert self._task is not None
        self._idle = self._loop.create_future()
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)
        self._loop.run_until_complete(self._idle)

    def start(self, run: Callable[[], Any]) -> None:
        """Starts the client's coroutine `run()`; returns when it first waits for the body."""

        async def main() -> None:
            try:
                self.result = await run()
            except BaseException as exc:  # handed over to the caller of write or end
                self.error = exc
            finally:
                self._ended = True
                self._settle()

        context = contextvars.copy_context()
        context.run(_task_feed.set, self)  # shared_transport() serves this task's feed
        self._task = self._loop.create_task(main(), context=context)
        self._drive()

    def write(self, data: str) -> None:
        """Sends one payload; returns when the client waits for more bytes or has ended."""
        self._writes += 1
        self._pending.append(sse_event(data))
        if not self._ended:
            self._drive()

    def close(self) -> None:
        """Ends the body without running the loop: the client ends when it next runs."""
        if None not in self._pending:
            self._pending.append(None)
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    def end(self) -> None:
        """Ends the body (the server closed the stream) and lets the client finish."""
        self.close()
        if self._task is not None and not self._task.done():
            self._loop.run_until_complete(self._task)


def _loop_here() -> asyncio.AbstractEventLoop:
    """This thread's event loop for AsyncInlineFeed, made once."""
    loop: asyncio.AbstractEventLoop | None = getattr(_threads, "loop", None)
    if loop is None or loop.is_closed():
        loop = _threads.loop = asyncio.new_event_loop()
    return loop
