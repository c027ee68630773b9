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
  RequestReader,
  Session,
  crashOrigin,
  encodeReply,
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

// A target that echoes each payload; "bad" is a protocol error, "nan" makes the completion NaN.
function echoSession() {
  return new Session({
    hello: { name: "t", version: "1", language: "javascript" },
    create: () => ({
      texts: [],
      score: 0,
      push(data) {
        if (data === "bad") throw Object.assign(new Error("nope"), { kind: "protocol" });
        if (data === "nan") this.score = NaN;
        this.texts.push(data);
        return [{ type: "content", text: data }];
      },
      finish() {
        return { content: this.texts.join(""), score: this.score };
      },
      state() {
        return { id: null, reasoning_tokens: 0, in_reasoning: false, is_finished: false };
      },
    }),
  });
}

const framedLine = (seq, payload) =>
  JSON.stringify({ seq, op: "push", bytes: Buffer.byteLength(payload) });
const frameOf = (payload) => Buffer.from(`${payload}\n`);

test("version 2: framed payloads, skipped after the end of a case, $number", async () => {
  const session = echoSession();
  const ask = async (line, frame) => (await session.answer(line, frame))[0];
  const hello = await ask(JSON.stringify({ seq: 1, op: "hello", protocol: 1, accept: [1, 2, 3, 4] }));
  assert.equal(hello.protocol, 2);
  await ask('{"seq":2,"op":"new"}');
  const text = 'H\u00e9\n"\\'; // a LF, a quote and a backslash: framed, not escaped
  assert.equal((await ask(framedLine(3, text), frameOf(text))).events[0].text, text);
  assert.equal((await ask(framedLine(4, "bad"), frameOf("bad"))).error.kind, "protocol");
  assert.deepEqual(await ask(framedLine(5, "x"), frameOf("x")), { seq: 5, skipped: true });
  assert.deepEqual(await ask('{"seq":6,"op":"finish","thinking_capped":false}'), {
    seq: 6,
    skipped: true,
  });
  await ask('{"seq":7,"op":"new"}');
  await ask(framedLine(8, "nan"), frameOf("nan"));
  assert.equal((await ask('{"seq":9,"op":"push","data":"!"}')).events[0].text, "!");
  const done = await ask('{"seq":10,"op":"finish","thinking_capped":false}');
  assert.equal(done.completion.content, "nan!");
  const marked = '{"seq":10,"completion":{"content":"nan!","score":{"$number":"NaN"}}}\n';
  assert.equal(encodeReply(done, { numbers: true }), marked);
  assert.deepEqual(await ask(framedLine(11, "y"), frameOf("y")), { seq: 11, skipped: true });
  await ask('{"seq":12,"op":"new"}');
  assert.equal((await ask(framedLine(13, "abc"), Buffer.from("ab\n"))).error.kind, "bad_request");
  const latin = await ask(framedLine(14, "x"), Buffer.from([0xff, 0x0a]));
  assert.equal(latin.error.kind, "bad_request");
});

test("version 1 stays as it was: no frames, nothing skipped, NaN as null", async () => {
  const session = echoSession();
  const ask = async (line, frame) => (await session.answer(line, frame))[0];
  assert.equal((await ask('{"seq":1,"op":"hello","protocol":1}')).protocol, 1);
  await ask('{"seq":2,"op":"new"}');
  assert.equal((await ask('{"seq":3,"op":"push","data":"bad"}')).error.kind, "protocol");
  assert.equal((await ask('{"seq":4,"op":"push","data":"nan"}')).events[0].text, "nan");
  const done = await ask('{"seq":5,"op":"finish","thinking_capped":false}');
  assert.equal(encodeReply(done), '{"seq":5,"completion":{"content":"nan","score":null}}\n');
  assert.equal((await ask(framedLine(6, "x"), frameOf("x"))).error.kind, "bad_request");
  assert.equal((await ask('{"seq":7,"op":"hello","protocol":3}')).error.kind, "bad_request");
});

test("the reader splits lines and frames however the bytes arrive", () => {
  const payload = "one\ntwo é";
  const input = Buffer.from(
    `{"seq":1,"op":"new"}\n${framedLine(2, payload)}\n${payload}\n{"seq":3,"op":"push","data":"x"}\n{"bad\n{"seq":4}`,
  );
  for (const step of [1, 2, 3, 7, input.length]) {
    const reader = new RequestReader();
    const got = [];
    for (let at = 0; at < input.length; at += step) {
      got.push(...reader.write(input.subarray(at, at + step)));
    }
    got.push(...reader.end());
    assert.equal(got.length, 5, `chunks of ${step}`);
    assert.deepEqual(got[0], [{ seq: 1, op: "new" }, undefined]);
    assert.equal(got[1][0].bytes, Buffer.byteLength(payload));
    assert.equal(got[1][1].toString(), `${payload}\n`);
    assert.deepEqual(got[2], [{ seq: 3, op: "push", data: "x" }, undefined]);
    assert.equal(got[3][0], null);
    assert.equal(got[3][1].error.kind, "bad_request");
    assert.deepEqual(got[4], [{ seq: 4 }, undefined]);
  }
});

test("a crash's origin is its innermost frame in the adapter or a package it wraps", () => {
  const error = new TypeError("Cannot read properties of undefined (reading 'arguments')");
  error.stack = [
    "TypeError: Cannot read properties of undefined (reading 'arguments')",
    "    at node:internal/process/task_queues:95:5",
    "    at Object.parse (file:///srv/app/node_modules/zod/lib/index.js:10:3)",
    "    at ChatCompletionStream.#accumulate (/srv/app/node_modules/openai/lib/Stream.js:412:31)",
    "    at Target.push (/srv/app/adapter.mjs:88:12)",
  ].join("\n");
  assert.equal(
    crashOrigin(error, ["openai"]),
    "origin: client TypeError openai/lib/Stream.js:412 in ChatCompletionStream.#accumulate",
  );
  // Nothing of the wrapped package: the adapter's own frame, an adapter fault.
  assert.equal(
    crashOrigin(error, ["ai"]),
    "origin: adapter TypeError /srv/app/adapter.mjs:88 in Target.push",
  );
  // An assembler that wraps nothing owns its crashes.
  assert.equal(
    crashOrigin(error, []),
    "origin: target TypeError /srv/app/adapter.mjs:88 in Target.push",
  );
  assert.equal(crashOrigin({ stack: "no frames here" }, ["openai"]), null);
});
