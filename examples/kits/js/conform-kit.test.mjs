// Tests of the JavaScript adapter kit, with Node's own test runner: `node --test` in this folder
// (tests/test_js_example.py runs them).

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  FEED_HEADER,
  FeedRouter,
  PayloadFeed,
  ReasoningState,
  readId,
  readInteger,
  readProgress,
  readTimings,
  Session,
  sseEvent,
} from "./conform-kit.mjs";

// A client the way openai-node or the AI SDK read a body: a decoder stream, a line splitter, and
// an async callback per event, which itself awaits before it records what it saw.
function startClient(feed, seen) {
  return (async () => {
    const response = await feed.fetch("http://127.0.0.1:9/v1/chat/completions", { method: "POST" });
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return "ended";
      buffer += value;
      let blank;
      while ((blank = buffer.indexOf("\n\n")) !== -1) {
        const event = buffer.slice(0, blank);
        buffer = buffer.slice(blank + 2);
        const data = event
          .split("\n")
          .map((line) => line.slice("data: ".length))
          .join("\n");
        await Promise.resolve();
        if (data === "fail") throw new Error("the client gave up");
        seen.push(data);
      }
    }
  })();
}

test("write resolves once the client has dealt with the event and waits for more", async () => {
  const feed = new PayloadFeed();
  const seen = [];
  const done = startClient(feed, seen);
  await feed.write('{"a":1}', done);
  assert.deepEqual(seen, ['{"a":1}']);
  await feed.write("two\nlines", done);
  assert.deepEqual(seen, ['{"a":1}', "two\nlines"]);
  feed.end();
  assert.equal(await done, "ended");
  assert.equal(feed.requests.length, 1);
});

test("write resolves when the client's own end settles", async () => {
  const feed = new PayloadFeed();
  const seen = [];
  const done = startClient(feed, seen);
  await feed.write("fail", done);
  await assert.rejects(done, /gave up/);
});

test("a client made once reads each case's own feed through the router", async () => {
  const router = new FeedRouter();
  const asHeaders = [(id) => ({ [FEED_HEADER]: id }), (id) => new Headers({ [FEED_HEADER]: id })];
  const cases = asHeaders.map((headers) => {
    const feed = new PayloadFeed();
    const id = router.add(feed);
    const seen = [];
    const client = { fetch: (url) => router.fetch(url, { headers: headers(id) }) };
    return { feed, id, seen, headers, done: startClient(client, seen) };
  });
  for (const [i, c] of cases.entries()) await c.feed.write(`case ${i}`, c.done);
  assert.deepEqual(
    cases.map((c) => c.seen),
    [["case 0"], ["case 1"]],
  );
  for (const c of cases) {
    c.feed.end();
    assert.equal(await c.done, "ended");
    assert.equal(c.feed.requests.length, 1);
    router.remove(c.id);
    await assert.rejects(router.fetch("http://x", { headers: c.headers(c.id) }), /no PayloadFeed/);
  }
});

test("a CR travels as a line break", () => {
  assert.equal(sseEvent("a\r\nb\rc"), "data: a\ndata: b\ndata: c\n\n");
});

test("the session awaits an async target and answers in order", async () => {
  const session = new Session({
    hello: { name: "t", version: "1", language: "javascript" },
    create: () => ({
      n: 0,
      async push(data) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        if (data === "bad") throw Object.assign(new Error("nope"), { kind: "protocol" });
        if (data === "bug") throw new TypeError("oops");
        this.n += 1;
        return [{ type: "content", text: data }];
      },
      async finish() {
        return { content: String(this.n) };
      },
      state() {
        return { id: null, reasoning_tokens: 0, in_reasoning: false, is_finished: false };
      },
    }),
  });
  const ask = async (request) => (await session.answer(JSON.stringify(request)))[0];
  assert.equal((await ask({ seq: 1, op: "hello", protocol: 1 })).protocol, 1);
  assert.equal((await ask({ seq: 2, op: "push", data: "x" })).error.kind, "bad_request");
  await ask({ seq: 3, op: "new" });
  assert.equal((await ask({ seq: 4, op: "push", data: "hi" })).events[0].text, "hi");
  assert.equal((await ask({ seq: 5, op: "push", data: "bad" })).error.kind, "protocol");
  assert.equal((await ask({ seq: 6, op: "push", data: "bug" })).error.kind, "crash");
  assert.equal((await ask({ seq: 7, op: "finish", thinking_capped: false })).completion.content, "1");
  assert.equal((await session.answer("{"))[0].error.kind, "bad_request");
  assert.equal((await session.answer(JSON.stringify({ seq: 8, op: "bye" })))[1], true);
});

test("the glue range-checks integers and keeps all eleven timings", () => {
  assert.equal(readInteger(3, "x"), 3);
  assert.equal(readInteger(9007199254740991, "x"), 9007199254740991);
  for (const bad of [9007199254740992, JSON.parse("9007199254740993.0"), 1e300, 1.5, "3", Infinity]) {
    assert.throws(() => readInteger(bad, "x"), { kind: "protocol" });
  }
  const timings = readTimings({ predicted_n: 1e300 });
  assert.equal(Object.keys(timings).length, 11);
  assert.equal(timings.draft_n, null);
  const state = new ReasoningState();
  state.takeTimings(timings);
  assert.throws(() => state.saw({ type: "reasoning", text: "x" }), { kind: "protocol" });
  assert.deepEqual(readProgress({ total: 36, cache: null }), {
    type: "progress",
    total: 36,
    cache: null,
    processed: null,
    time_ms: null,
  });
  assert.throws(() => readProgress([]), { kind: "protocol" });
  assert.equal(readId(null, ""), null);
  assert.equal(readId(null, "a"), "a");
  assert.equal(readId("a", "b"), "a");
  assert.throws(() => readId(null, 7), { kind: "protocol" });
});
