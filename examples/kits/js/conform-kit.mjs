// conform-kit: what every JavaScript target of conform needs besides its assembler (Node.js 20).
//
// - `serve({ hello, create })` runs conform's line protocol (docs/protocol.md) on stdin and
//   stdout: one request at a time, in order, and it **awaits** whatever `push` and `finish`
//   return, so the assembler may be synchronous or async. It speaks version 2 when `hello` offers
//   it: payloads framed after their request line (no JSON string to unescape), cases planned
//   ahead (what comes after the reply that ends a case is answered `skipped`), and NaN or an
//   infinity in a reply written as `{"$number": "NaN"}` (JSON.stringify would write `null`).
// - `PayloadFeed` is a `fetch` for clients that read an HTTP body themselves (openai-node, the
//   Vercel AI SDK): each pushed payload becomes one server-sent event on the response body, and
//   `write` resolves when the client has read it and waits for more bytes.
// - The validated llama-server glue (`readTimings`, `readProgress`, `readReasoning`, `readId`,
//   `ReasoningState`): the fields no OpenAI client keeps, checked as docs/spec.md says, so that a
//   failure in them is never blamed on the client (docs/clients.md).
//
// A target is an object made by `create()` per case, with `push(data)` -> events (or a promise of
// them), `finish(thinkingCapped)` -> completion (or a promise), and the four readers, either as
// properties (`id`, `reasoningTokens`, `inReasoning`, `isFinished`) or as one `state()` method
// returning the protocol's `state` object. An error whose `kind` is `protocol`,
// `stream_closed_early` or `server` is the assembler's error; anything else is reported as a crash.
// No npm dependencies.

import { realpathSync } from "node:fs";
import process from "node:process";
import { pathToFileURL } from "node:url";

/** The highest version of the line protocol the kit speaks: 2 when `hello` offers it, else 1. */
export const PROTOCOL = 2;
export const KINDS = Object.freeze(["protocol", "stream_closed_early", "server"]);
export const TIMINGS_FIELDS = Object.freeze([
  "cache_n",
  "prompt_n",
  "prompt_ms",
  "prompt_per_token_ms",
  "prompt_per_second",
  "predicted_n",
  "predicted_ms",
  "predicted_per_token_ms",
  "predicted_per_second",
  "draft_n",
  "draft_n_accepted",
]);
export const PROGRESS_FIELDS = Object.freeze(["total", "cache", "processed", "time_ms"]);

/** The error an assembler (or the glue) raises; `kind` is protocol, stream_closed_early or server. */
export class StreamError extends Error {
  constructor(kind, message) {
    super(message);
    this.name = "StreamError";
    this.kind = kind;
  }
}

export function protocolError(message) {
  return new StreamError("protocol", message);
}

// ---------------------------------------------------------------------------------------------
// The validated llama-server glue

function describe(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return typeof v === "object" ? "an object" : JSON.stringify(v) ?? typeof v;
}

function isPlainObject(v) {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A number field: finite, or null when absent. JSON.parse gives Infinity for `1e400`. */
export function readNumber(value, where) {
  if (value === undefined || value === null) return null;
  if (typeof value !== "number") throw protocolError(`${where} must be a number, not ${describe(value)}`);
  if (!Number.isFinite(value)) throw protocolError(`${where} is out of range`);
  return value;
}

/**
 * An integer field: an integral number within ±(2^53−1) (contract I1, I2). JSON.parse has already
 * rounded anything beyond (9007199254740993 reads as ...992), so no exact value is left to read.
 */
export function readInteger(value, where) {
  const number = readNumber(value, where);
  if (number === null) return null;
  if (!Number.isInteger(number)) throw protocolError(`${where} must be an integer, not ${number}`);
  if (!Number.isSafeInteger(number)) throw protocolError(`${where} is out of range`);
  return number;
}

/** A chunk's `timings` with all eleven fields (null where the server left one out), or null. */
export function readTimings(value) {
  if (value === undefined || value === null) return null;
  if (!isPlainObject(value)) throw protocolError(`timings must be an object, not ${describe(value)}`);
  return Object.fromEntries(TIMINGS_FIELDS.map((k) => [k, readNumber(value[k], `timings.${k}`)]));
}

/** A chunk's `prompt_progress` as the progress event, or null when it has none. */
export function readProgress(value) {
  if (value === undefined || value === null) return null;
  if (!isPlainObject(value)) {
    throw protocolError(`prompt_progress must be an object, not ${describe(value)}`);
  }
  const event = { type: "progress" };
  for (const k of PROGRESS_FIELDS) event[k] = readInteger(value[k], `prompt_progress.${k}`);
  return event;
}

/** A delta's `reasoning_content`: a string, or null. */
export function readReasoning(value) {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string") {
    throw protocolError(`reasoning_content must be a string, not ${describe(value)}`);
  }
  return value;
}

/** R9 for a client that keeps no completion id as it streams: the first non-empty `id` seen. */
export function readId(current, value) {
  if (value !== undefined && value !== null && typeof value !== "string") {
    throw protocolError(`id must be a string, not ${describe(value)}`);
  }
  return current || !value ? current : value;
}

/** Timings, `reasoning_tokens` and `in_reasoning` (contract R3, R4), derived from events in order. */
export class ReasoningState {
  timings = null;
  reasoningTokens = 0;
  inReasoning = false;

  /** R4: a chunk's timings are taken before any of its text. */
  takeTimings(timings) {
    if (timings !== null) this.timings = timings;
  }

  /** Updates the state for one event (an object with `type`), in event order. */
  saw(event) {
    if (event.type === "reasoning") {
      this.inReasoning = true;
      const n = this.timings === null ? null : this.timings.predicted_n;
      if (n !== null) {
        const count = readInteger(n, "timings.predicted_n");
        if (count < 0) throw protocolError("timings.predicted_n must be a non-negative integer");
        this.reasoningTokens = count;
      }
    } else if (event.type === "content" || event.type === "tool_call_delta") {
      this.inReasoning = false;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Feeding a client's own HTTP layer

const tick = () => new Promise((resolve) => setImmediate(resolve));

/**
 * One payload as the text of one server-sent event: each of its lines a `data:` line. A CR inside
 * a payload (the `whitespace` mode puts CR between JSON tokens) cannot travel inside an SSE line,
 * since CR ends one; it goes as a line break, which the client's decoder joins back as LF: the
 * same JSON, as any HTTP stream would carry it.
 */
export function sseEvent(data) {
  return `${data
    .split(/\r\n|\r|\n/)
    .map((line) => `data: ${line}`)
    .join("\n")}\n\n`;
}

/**
 * A `fetch` whose response body is the payloads handed to `write`, one server-sent event each.
 *
 * The body is a ReadableStream with no buffer: the client pulls bytes when it wants them, and a
 * pull with nothing queued means the client has dealt with everything it was given and waits for
 * more. `write(data)` enqueues one event and resolves at the client's next such pull, after the
 * microtasks the pull set off have run (so callbacks the client fires for that event have fired),
 * or when `settled` (a promise the adapter passes: the client's own end, done or failed) does.
 */
export class PayloadFeed {
  #controller = null;
  #wantMore = null; // resolves the promise `write` returns at the client's next pull
  #wanted = false; // the client pulled and nothing is queued for it
  #released = null; // resolves the promise a pull returns
  #encoder = new TextEncoder();
  requests = []; // what the client sent: [url, init]

  constructor({ status = 200, headers = { "content-type": "text/event-stream" } } = {}) {
    this.body = new ReadableStream(
      {
        start: (controller) => {
          this.#controller = controller;
        },
        pull: () => {
          this.#wanted = true;
          this.#wantMore?.();
          return new Promise((resolve) => {
            this.#released = resolve;
          });
        },
      },
      { highWaterMark: 0 },
    );
    this.response = new Response(this.body, { status, headers });
    this.fetch = async (url, init) => {
      this.requests.push([String(url), init]);
      return this.response;
    };
  }

  /** Sends one payload; resolves when the client waits for more bytes, or `settled` settles. */
  async write(data, settled = new Promise(() => {})) {
    const read = new Promise((resolve) => {
      this.#wantMore = resolve;
    });
    this.#wanted = false;
    this.#controller.enqueue(this.#encoder.encode(sseEvent(data)));
    const release = this.#released;
    this.#released = null;
    release?.();
    await Promise.race([read, settled.then(noop, noop)]);
    await tick();
  }

  /** Ends the body (the server closed the stream). */
  end() {
    try {
      this.#controller.close();
    } catch {
      // already closed or cancelled by the client
    }
    const release = this.#released;
    this.#released = null;
    release?.();
  }
}

function noop() {}

/** The header by which a client made once per program names the feed of the case it reads. */
export const FEED_HEADER = "x-conform-feed";

function headerOf(headers, name) {
  if (headers == null) return undefined;
  if (typeof headers.get === "function") return headers.get(name) ?? undefined;
  const entries = Array.isArray(headers) ? headers : Object.entries(headers);
  return entries.find(([key]) => key.toLowerCase() === name)?.[1];
}

/**
 * One `fetch` for a client made once per program, as an application makes it, rather than once
 * per case (building a client, or the AI SDK's model with its schemas, costs more than reading a
 * short stream): each request is answered by the PayloadFeed that its `x-conform-feed` header
 * names, as `add` returned it (pass `{ [FEED_HEADER]: id }` as the call's own headers).
 */
export class FeedRouter {
  #feeds = new Map();
  #count = 0;

  fetch = async (url, init) => {
    const id = headerOf(init?.headers, FEED_HEADER);
    const feed = this.#feeds.get(id);
    if (feed === undefined) throw new Error(`no PayloadFeed is open as ${JSON.stringify(id)}`);
    return feed.fetch(url, init);
  };

  /** Opens `feed` to requests; returns the id for its header. */
  add(feed) {
    const id = String(++this.#count);
    this.#feeds.set(id, feed);
    return id;
  }

  /** Closes `id` to requests (the case is over). */
  remove(id) {
    this.#feeds.delete(id);
  }
}

// ---------------------------------------------------------------------------------------------
// The line protocol

class BadRequest extends Error {}

const escape = (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;

// Protocol 2: a number JSON cannot hold, as `{"$number": "NaN"}` ("Infinity", "-Infinity").
const markNumbers = (key, value) =>
  typeof value === "number" && !Number.isFinite(value) ? { $number: String(value) } : value;

/**
 * One reply as its line. Replies are written in ASCII: no raw U+2028 or U+2029 that a line
 * splitter might break on. With `numbers` (protocol 2), NaN and the infinities are marked.
 */
export function encodeReply(reply, { numbers = false } = {}) {
  const text = numbers ? JSON.stringify(reply, markNumbers) : JSON.stringify(reply);
  return `${text.replace(/[\u007f-\uffff]/g, escape)}\n`;
}

function errorReply(seq, kind, message) {
  return { seq, error: { kind, message: String(message) } };
}

function stateOf(target) {
  if (typeof target.state === "function") return target.state();
  return {
    id: target.id ?? null,
    reasoning_tokens: target.reasoningTokens,
    in_reasoning: target.inReasoning,
    is_finished: target.isFinished,
  };
}

function crashMessage(e, wraps) {
  const message = `${e?.name ?? "Error"}: ${e?.message ?? e}`;
  const origin = wraps === undefined ? null : crashOrigin(e, wraps);
  return origin === null ? message : `${message}\n${origin}`;
}

const KIT_FILE = new URL(import.meta.url).pathname;
const FRAME = /^\s*at (?:(?:async )?(.*?) \()?(?:file:\/\/)?([^()]+?):(\d+):\d+\)?$/;

/**
 * The line that says whose code a crash happened in (docs/protocol.md, "Errors"):
 * `origin: OWNER TYPE PATH:LINE in FUNCTION`, at the innermost frame of the stack in the
 * adapter's own files (`adapter`, or `target` when it wraps nothing) or in a package it wraps
 * (`client`, from `node_modules/PACKAGE/`); null when the stack has none. The kit's own frames
 * are the adapter's; Node's own, and other packages', are no one's.
 */
export function crashOrigin(e, wraps) {
  const lines = typeof e?.stack === "string" ? e.stack.split("\n") : [];
  for (const line of lines) {
    const found = FRAME.exec(line);
    if (found === null) continue;
    const [, name, file, number] = found;
    if (file.startsWith("node:") || file.startsWith("internal/")) continue;
    const modules = file.lastIndexOf("/node_modules/");
    let owner;
    let shown;
    if (modules >= 0) {
      shown = file.slice(modules + "/node_modules/".length);
      const parts = shown.split("/");
      const pkg = parts[0].startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0];
      if (!wraps.includes(pkg)) continue;
      owner = "client";
    } else {
      owner = wraps.length > 0 || file === KIT_FILE ? "adapter" : "target";
      const here = `${process.cwd()}/`;
      shown = file.startsWith(here) ? file.slice(here.length) : file;
    }
    return `origin: ${owner} ${e?.name ?? "Error"} ${shown}:${number} in ${name || "<anonymous>"}`;
  }
  return null;
}

/** The size of the payload framed after this request (protocol 2), or null when none follows. */
export function framedSize(request) {
  const size = isPlainObject(request) && request.op === "push" ? request.bytes : undefined;
  return Number.isSafeInteger(size) && size >= 0 ? size : null;
}

/**
 * Answers requests one at a time; `answer(line, frame)` returns [reply, exit]. `frame` is what
 * followed the line when `framedSize` of its request is not null: the payload's bytes and a LF.
 */
export class Session {
  target = null;
  protocol = 1; // the version agreed in `hello`
  ended = false; // the case had its error or its finish: protocol 2 skips what was planned after

  constructor({ hello, create, wraps }) {
    this.hello = hello;
    this.create = create;
    // The npm packages the adapter wraps (`["openai"]`): a crash's origin line names whose code
    // it happened in; undefined sends none.
    this.wraps = wraps;
  }

  async answer(line, frame) {
    let request;
    try {
      request = JSON.parse(line);
    } catch (e) {
      return [errorReply(null, "bad_request", `the request is not valid JSON: ${e.message}`), false];
    }
    return this.answerRequest(request, frame);
  }

  /** `answer` for a request already parsed. */
  async answerRequest(request, frame) {
    const seq = isPlainObject(request) && Number.isSafeInteger(request.seq) ? request.seq : null;
    try {
      if (seq === null) throw new BadRequest('every request needs an integer "seq"');
      if (request.op === "push" && "bytes" in request) request.data = this.#framed(request, frame);
      return await this.#dispatch(seq, request);
    } catch (e) {
      if (e instanceof BadRequest) return [errorReply(seq, "bad_request", e.message), false];
      process.stderr.write(`program crashed: ${e?.stack ?? e}\n`);
      this.ended = true;
      return [errorReply(seq, "crash", crashMessage(e, this.wraps)), false];
    }
  }

  #framed(request, frame) {
    if (this.protocol < 2) throw new BadRequest('"bytes" is protocol 2, which was not agreed in "hello"');
    const size = framedSize(request);
    if (size === null) throw new BadRequest('"bytes" must be a non-negative integer');
    if (frame === undefined || frame.length !== size + 1 || frame[size] !== 0x0a) {
      throw new BadRequest(`the payload after the request line is not ${size} bytes and a LF`);
    }
    try {
      return utf8.decode(frame.subarray(0, size));
    } catch {
      throw new BadRequest("the framed payload is not UTF-8");
    }
  }

  async #dispatch(seq, request) {
    const skipped = () => this.ended && this.protocol >= 2;
    switch (request.op) {
      case "hello": {
        const { protocol, accept } = request;
        if (protocol !== 1 && protocol !== PROTOCOL) {
          throw new BadRequest(`protocol ${JSON.stringify(protocol)} is not spoken here; 1 and 2 are`);
        }
        this.protocol = Array.isArray(accept) && accept.includes(PROTOCOL) ? PROTOCOL : protocol;
        return [{ seq, ...this.hello, protocol: this.protocol }, false];
      }
      case "new":
        await this.#close();
        this.ended = false;
        this.target = await this.create();
        return [{ seq, ok: true }, false];
      case "push": {
        if (typeof request.data !== "string") throw new BadRequest('"push" needs a string "data"');
        if (skipped()) return [{ seq, skipped: true }, false];
        const reply = await this.#run(seq, async (t) => {
          const events = await t.push(request.data);
          return { seq, events, state: stateOf(t) };
        });
        return [reply, false];
      }
      case "finish": {
        if (typeof request.thinking_capped !== "boolean") {
          throw new BadRequest('"finish" needs a boolean "thinking_capped"');
        }
        if (skipped()) return [{ seq, skipped: true }, false];
        const capped = request.thinking_capped;
        const reply = await this.#run(seq, async (t) => ({ seq, completion: await t.finish(capped) }));
        this.ended = true;
        return [reply, false];
      }
      case "bye":
        await this.#close();
        return [{ seq, ok: true }, true];
      default:
        throw new BadRequest(`unknown op ${JSON.stringify(request.op) ?? "(none)"}`);
    }
  }

  // A target may hold a client mid-stream: `close()` (when it has one) lets it stop.
  async #close() {
    const target = this.target;
    this.target = null;
    if (target && typeof target.close === "function") {
      try {
        await target.close();
      } catch {
        // the case is over; nothing to report
      }
    }
  }

  async #run(seq, call) {
    if (this.target === null) throw new BadRequest('no case is open: send "new" first');
    try {
      return await call(this.target);
    } catch (e) {
      this.ended = true;
      if (e && KINDS.includes(e.kind)) return errorReply(seq, e.kind, e.message ?? "");
      process.stderr.write(`assembler crashed: ${e?.stack ?? e}\n`);
      return errorReply(seq, "crash", crashMessage(e, this.wraps));
    }
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Splits what arrives on standard input into requests: each line, parsed (or the error reply for
 * it), with the payload framed after it (protocol 2) gathered whole. `write(chunk)` takes the
 * next bytes and returns the requests they completed, as [request, frame] or [null, reply].
 */
export class RequestReader {
  #pending = []; // the bytes of an unfinished line (or frame), in chunks
  #length = 0;
  #want = null; // the frame awaited: its size with the LF, and the request it belongs to
  #request = null;

  write(chunk) {
    const done = [];
    let start = 0;
    while (start < chunk.length) {
      if (this.#want !== null) {
        const take = Math.min(this.#want - this.#length, chunk.length - start);
        this.#keep(chunk.subarray(start, start + take));
        start += take;
        if (this.#length === this.#want) {
          done.push([this.#request, this.#take()]);
          this.#want = this.#request = null;
        }
        continue;
      }
      const nl = chunk.indexOf(0x0a, start);
      if (nl === -1) {
        this.#keep(chunk.subarray(start));
        break;
      }
      this.#keep(chunk.subarray(start, nl));
      start = nl + 1;
      const line = this.#take();
      const [request, reply] = parseLine(line);
      const size = framedSize(request);
      if (size === null) done.push(request === null ? [null, reply] : [request, undefined]);
      else [this.#want, this.#request] = [size + 1, request];
    }
    return done;
  }

  /** What is left at the end of input: a last line without its LF, or an unfinished frame. */
  end() {
    if (this.#want !== null) return [[this.#request, this.#take()]];
    if (this.#length === 0) return [];
    const [request, reply] = parseLine(this.#take());
    return [request === null ? [null, reply] : [request, undefined]];
  }

  #keep(bytes) {
    if (bytes.length === 0) return;
    this.#pending.push(bytes);
    this.#length += bytes.length;
  }

  #take() {
    const bytes = this.#pending.length === 1 ? this.#pending[0] : Buffer.concat(this.#pending);
    this.#pending = [];
    this.#length = 0;
    return bytes;
  }
}

function parseLine(bytes) {
  let text;
  try {
    text = utf8.decode(bytes);
  } catch {
    return [null, errorReply(null, "bad_request", "the request is not valid UTF-8")];
  }
  try {
    return [JSON.parse(text), null];
  } catch (e) {
    return [null, errorReply(null, "bad_request", `the request is not valid JSON: ${e.message}`)];
  }
}

/**
 * Runs the line protocol on stdin/stdout until `bye` or end of input.
 * `hello` is {name, version, language}; `create()` makes (or resolves to) one case's target.
 */
export function serve({ hello, create, wraps }) {
  // The harness closing our stdout (it gave up on us) is no reason for a stack trace.
  process.stdout.on("error", () => process.exit(0));
  // Standard output carries replies only: a client's own logging goes to standard error.
  for (const name of ["log", "info", "debug"]) console[name] = console.error;
  const session = new Session({ hello, create, wraps });
  const reader = new RequestReader();
  const requests = [];
  let ended = false;
  let busy = false;
  let done = false;

  const handle = async ([request, frameOrReply]) =>
    request === null ? [frameOrReply, false] : session.answerRequest(request, frameOrReply);

  const finish = () => {
    done = true;
    process.stdin.pause();
    process.stdout.end(() => process.exit(0));
  };

  // One request at a time, in order, each awaited before the next is read.
  const drain = async () => {
    if (busy) return;
    busy = true;
    while (requests.length > 0 && !done) {
      const [reply, exit] = await handle(requests.shift());
      process.stdout.write(encodeReply(reply, { numbers: session.protocol >= 2 }));
      if (exit) finish();
    }
    busy = false;
    if (ended && !done) finish();
  };

  process.stdin.on("data", (chunk) => {
    if (done) return;
    requests.push(...reader.write(chunk));
    void drain();
  });
  process.stdin.on("end", () => {
    requests.push(...reader.end());
    ended = true;
    void drain();
  });
}

/** True when `importMetaUrl` is the program Node was started with (through symbolic links too). */
export function isMain(importMetaUrl) {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return pathToFileURL(realpathSync(script)).href === importMetaUrl;
  } catch {
    return false;
  }
}
