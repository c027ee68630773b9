// An independent assembler for llama-server's streamed chat completions, for Node.js 20.
//
// It is written from conform's contract (contract.md, version 1) and its spec (docs/spec.md) alone,
// so that the golden files, made by the Python reference, are checked against a second reading of
// the same rules. No npm dependencies. As a library it exports `Assembler` and `InferError`; run as
// a program (`node examples/js/assembler.mjs`) it speaks conform's line protocol
// (docs/protocol.md) on stdin and stdout through the adapter kit (examples/kits/js/conform-kit.mjs),
// so the harness can drive it as an out-of-process target.
//
// The payload parser is our own rather than JSON.parse: the spec needs things JSON.parse does not
// give (a nesting limit that also covers ignored fields, unpaired surrogates rejected anywhere,
// `1e400` in a read field rejected instead of read as Infinity, integer literals told apart from fractions).

import { isMain, serve } from "../kits/js/conform-kit.mjs";

const MAX_DEPTH = 128;
const MAX_SAFE = Number.MAX_SAFE_INTEGER; // 2^53 - 1
const FINISH_REASONS = new Set(["stop", "tool_calls", "length"]);
const TIMING_FIELDS = [
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
];
const PROGRESS_FIELDS = ["total", "cache", "processed", "time_ms"];

/** The one error push and finish raise; `kind` is protocol, stream_closed_early or server. */
export class InferError extends Error {
  constructor(kind, message) {
    super(message);
    this.name = "InferError";
    this.kind = kind;
  }
}

function protocolError(message) {
  return new InferError("protocol", message);
}

// ---------------------------------------------------------------------------------------------
// The JSON reader (RFC 8259, plus the spec's limits)

/**
 * A number the spec does not let a read field hold: an integer literal beyond ±(2^53−1), or a
 * number beyond the range of a double (`1e400`). It is not an error by itself: such a number in an
 * ignored field is fine (spec section 2 checks numbers only in *read* fields), so the parser keeps
 * this marker and the shape check rejects it where a number is read.
 */
class OutOfRangeNumber {
  constructor(text, isInteger) {
    this.text = text;
    this.isInteger = isInteger;
  }
}

const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
const HEX4 = /^[0-9a-fA-F]{4}$/;
const SIMPLE_ESCAPES = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };

class JsonReader {
  constructor(text) {
    this.text = text;
    this.pos = 0;
  }

  fail(what) {
    return protocolError(`payload is not valid JSON: ${what} at offset ${this.pos}`);
  }

  skipWhitespace() {
    const s = this.text;
    let i = this.pos;
    for (;;) {
      const c = s.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i += 1;
      else break;
    }
    this.pos = i;
  }

  readDocument() {
    this.skipWhitespace();
    if (this.pos >= this.text.length) throw this.fail("no value");
    const value = this.readValue(0);
    this.skipWhitespace();
    if (this.pos !== this.text.length) throw this.fail("trailing characters after the value");
    return value;
  }

  // `depth` is the number of arrays and objects around the value; recursion is bounded by it.
  readValue(depth) {
    const c = this.text[this.pos];
    switch (c) {
      case "{":
        return this.readObject(depth + 1);
      case "[":
        return this.readArray(depth + 1);
      case '"':
        return this.readString();
      case "t":
        return this.readLiteral("true", true);
      case "f":
        return this.readLiteral("false", false);
      case "n":
        return this.readLiteral("null", null);
      default:
        if (c === "-" || (c >= "0" && c <= "9")) return this.readNumber();
        throw this.fail(c === undefined ? "unexpected end" : "unexpected character");
    }
  }

  enter(depth) {
    if (depth > MAX_DEPTH) {
      throw protocolError(`payload nests deeper than ${MAX_DEPTH} levels`);
    }
    this.pos += 1;
    this.skipWhitespace();
  }

  readObject(depth) {
    this.enter(depth);
    // A prototype-less object: keys such as "__proto__" are plain keys, and nothing is inherited.
    const object = Object.create(null);
    if (this.text[this.pos] === "}") {
      this.pos += 1;
      return object;
    }
    for (;;) {
      if (this.text[this.pos] !== '"') throw this.fail("expected a string key");
      const key = this.readString();
      this.skipWhitespace();
      if (this.text[this.pos] !== ":") throw this.fail("expected ':'");
      this.pos += 1;
      this.skipWhitespace();
      object[key] = this.readValue(depth); // a repeated key: the last one wins
      this.skipWhitespace();
      const c = this.text[this.pos];
      this.pos += 1;
      if (c === "}") return object;
      if (c !== ",") throw this.fail("expected ',' or '}'");
      this.skipWhitespace();
    }
  }

  readArray(depth) {
    this.enter(depth);
    const array = [];
    if (this.text[this.pos] === "]") {
      this.pos += 1;
      return array;
    }
    for (;;) {
      array.push(this.readValue(depth));
      this.skipWhitespace();
      const c = this.text[this.pos];
      this.pos += 1;
      if (c === "]") return array;
      if (c !== ",") throw this.fail("expected ',' or ']'");
      this.skipWhitespace();
    }
  }

  readLiteral(word, value) {
    if (!this.text.startsWith(word, this.pos)) throw this.fail("unexpected character");
    this.pos += word.length;
    return value;
  }

  readNumber() {
    NUMBER.lastIndex = this.pos;
    const match = NUMBER.exec(this.text);
    if (match === null) throw this.fail("malformed number");
    const literal = match[0];
    this.pos += literal.length;
    const value = Number(literal);
    if (match[1] === undefined && match[2] === undefined) {
      // An integer literal. Beyond ±(2^53−1) it may round, even to Infinity: keep a marker.
      return Math.abs(value) > MAX_SAFE ? new OutOfRangeNumber(literal, true) : value;
    }
    return Number.isFinite(value) ? value : new OutOfRangeNumber(literal, false);
  }

  // Reads a string, checking surrogates as UTF-16 code units. A pair is fine when both halves are
  // escapes or both are raw code units; anything else is an unpaired surrogate. Raw lone units can
  // come from a caller's string (the line protocol decodes "\ud800" into one), never from UTF-8.
  readString() {
    const s = this.text;
    let i = this.pos + 1;
    let out = "";
    let runStart = i;
    for (;;) {
      if (i >= s.length) {
        this.pos = i;
        throw this.fail("unterminated string");
      }
      const c = s.charCodeAt(i);
      if (c === 0x22) {
        out += s.slice(runStart, i);
        this.pos = i + 1;
        return out;
      }
      if (c < 0x20) {
        this.pos = i;
        throw this.fail("control character in a string");
      }
      if (c >= 0xd800 && c <= 0xdfff) {
        const next = s.charCodeAt(i + 1);
        if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
          i += 2;
          continue;
        }
        this.pos = i;
        throw this.unpaired(c);
      }
      if (c !== 0x5c) {
        i += 1;
        continue;
      }
      out += s.slice(runStart, i);
      const e = s[i + 1];
      if (e === "u") {
        const unit = this.hexAt(i + 2);
        if (unit >= 0xd800 && unit <= 0xdbff) {
          const low = s[i + 6] === "\\" && s[i + 7] === "u" ? this.hexAt(i + 8) : -1;
          if (low < 0xdc00 || low > 0xdfff) {
            this.pos = i;
            throw this.unpaired(unit);
          }
          out += String.fromCharCode(unit, low);
          i += 12;
        } else if (unit >= 0xdc00 && unit <= 0xdfff) {
          this.pos = i;
          throw this.unpaired(unit);
        } else {
          out += String.fromCharCode(unit);
          i += 6;
        }
      } else if (e !== undefined && Object.hasOwn(SIMPLE_ESCAPES, e)) {
        out += SIMPLE_ESCAPES[e];
        i += 2;
      } else {
        this.pos = i;
        throw this.fail("invalid escape");
      }
      runStart = i;
    }
  }

  hexAt(i) {
    const digits = this.text.slice(i, i + 4);
    if (!HEX4.test(digits)) {
      this.pos = i;
      throw this.fail("invalid \\u escape");
    }
    return parseInt(digits, 16);
  }

  unpaired(unit) {
    const hex = unit.toString(16).padStart(4, "0");
    return protocolError(`payload has an unpaired surrogate \\u${hex} at offset ${this.pos}`);
  }
}

// ---------------------------------------------------------------------------------------------
// The shape (spec section 2): every read field checked before anything is taken

function isObject(v) {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof OutOfRangeNumber);
}

function field(object, key) {
  const v = Object.hasOwn(object, key) ? object[key] : null;
  return v === undefined ? null : v;
}

function describe(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (v instanceof OutOfRangeNumber) {
    return v.isInteger
      ? `the integer ${v.text}, beyond ±(2^53−1)`
      : `the number ${v.text}, beyond the range of a double`;
  }
  if (typeof v === "object") return "an object";
  if (typeof v === "number") return `the number ${v}`;
  return `a ${typeof v}`;
}

function wrongType(where, expected, v) {
  return protocolError(`${where} must be ${expected}, not ${describe(v)}`);
}

function optString(object, key, where) {
  const v = field(object, key);
  if (v !== null && typeof v !== "string") throw wrongType(where, "a string", v);
  return v;
}

function optObject(object, key, where) {
  const v = field(object, key);
  if (v !== null && !isObject(v)) throw wrongType(where, "an object", v);
  return v;
}

function optArrayOfObjects(object, key, where) {
  const v = field(object, key);
  if (v === null) return null;
  if (!Array.isArray(v)) throw wrongType(where, "an array", v);
  v.forEach((item, i) => {
    if (!isObject(item)) throw wrongType(`${where}[${i}]`, "an object", item);
  });
  return v;
}

// An integer field: any number with an integral value within ±(2^53−1); -0 reads as 0.
function toInteger(v, where) {
  if (typeof v !== "number" || !Number.isInteger(v) || Math.abs(v) > MAX_SAFE) {
    throw wrongType(where, "an integer within ±(2^53−1)", v);
  }
  return v === 0 ? 0 : v;
}

function optInteger(object, key, where) {
  const v = field(object, key);
  return v === null ? null : toInteger(v, where);
}

// A number field: an integer literal within range (kept as an integer) or any finite fraction.
function optNumber(object, key, where) {
  const v = field(object, key);
  if (v !== null && typeof v !== "number") throw wrongType(where, "a number", v);
  return v === 0 ? 0 : v;
}

function readTimings(object) {
  const timings = {};
  for (const name of TIMING_FIELDS) timings[name] = optNumber(object, name, `timings.${name}`);
  return timings;
}

// Reads one payload into a plain description of what it carries; throws on any shape error.
function readChunk(root) {
  if (!isObject(root)) throw wrongType("the payload", "a JSON object", root);
  const chunk = { id: optString(root, "id", "id"), timings: null, progress: null, error: null, choices: [] };

  const timings = optObject(root, "timings", "timings");
  if (timings !== null) chunk.timings = readTimings(timings);

  const progress = optObject(root, "prompt_progress", "prompt_progress");
  if (progress !== null) {
    chunk.progress = { type: "progress" };
    for (const name of PROGRESS_FIELDS) {
      chunk.progress[name] = optInteger(progress, name, `prompt_progress.${name}`);
    }
  }

  const error = optObject(root, "error", "error");
  if (error !== null) chunk.error = { message: optString(error, "message", "error.message") ?? "" };

  const choices = optArrayOfObjects(root, "choices", "choices") ?? [];
  choices.forEach((choice, c) => {
    const where = `choices[${c}]`;
    const finishReason = field(choice, "finish_reason");
    if (finishReason !== null && !FINISH_REASONS.has(finishReason)) {
      const shown = typeof finishReason === "string" ? JSON.stringify(finishReason) : describe(finishReason);
      throw protocolError(`${where}.finish_reason must be stop, tool_calls or length, not ${shown}`);
    }
    const read = { reasoning: null, content: null, toolCalls: [], finishReason };
    const delta = optObject(choice, "delta", `${where}.delta`);
    if (delta !== null) {
      read.reasoning = optString(delta, "reasoning_content", `${where}.delta.reasoning_content`);
      read.content = optString(delta, "content", `${where}.delta.content`);
      const calls = optArrayOfObjects(delta, "tool_calls", `${where}.delta.tool_calls`) ?? [];
      calls.forEach((call, t) => {
        const at = `${where}.delta.tool_calls[${t}]`;
        const index = field(call, "index");
        if (index === null) throw protocolError(`${at}.index is required`);
        const position = toInteger(index, `${at}.index`);
        // A negative index is a shape error: it wins over an error object beside it (R8).
        if (position < 0) throw protocolError(`${at}.index ${position} is negative`);
        const fn = optObject(call, "function", `${at}.function`);
        read.toolCalls.push({
          index: position,
          id: optString(call, "id", `${at}.id`),
          name: fn === null ? null : optString(fn, "name", `${at}.function.name`),
          arguments: (fn === null ? null : optString(fn, "arguments", `${at}.function.arguments`)) ?? "",
        });
      });
    }
    chunk.choices.push(read);
  });
  return chunk;
}

// ---------------------------------------------------------------------------------------------
// The assembler

/** Folds the payloads of one streamed chat completion into events and one completion. */
export class Assembler {
  #id = null;
  #content = null;
  #reasoning = null;
  #calls = []; // {id, name, arguments}, by index
  #finishReason = null;
  #timings = null;
  #reasoningTokens = 0;
  #inReasoning = false;

  get id() {
    return this.#id;
  }

  get reasoningTokens() {
    return this.#reasoningTokens;
  }

  get inReasoning() {
    return this.#inReasoning;
  }

  get isFinished() {
    return this.#finishReason !== null;
  }

  /** Takes one payload (the text of one SSE event) and returns its events, in order. */
  push(data) {
    if (typeof data !== "string") throw protocolError(`a payload is text, not ${describe(data)}`);
    const chunk = readChunk(new JsonReader(data).readDocument());
    // An error object wins once the payload's shape is valid (spec section 2): the rules that
    // depend on state (tool-call index, predicted_n) apply only to payloads without one.
    if (chunk.error !== null) throw new InferError("server", chunk.error.message);
    this.#check(chunk);
    return this.#apply(chunk);
  }

  // The rules that depend on state, checked before anything changes (validation comes first).
  #check(chunk) {
    let calls = this.#calls.length;
    const timings = chunk.timings ?? this.#timings;
    for (const choice of chunk.choices) {
      if (choice.reasoning && timings !== null && timings.predicted_n !== null) {
        const n = timings.predicted_n;
        if (!Number.isSafeInteger(n) || n < 0) {
          throw protocolError(`timings.predicted_n must be a non-negative integer, not ${describe(n)}`);
        }
      }
      for (const call of choice.toolCalls) {
        if (call.index < 0 || call.index > calls) {
          throw protocolError(`tool call index ${call.index} is out of order: ${calls} call(s) so far`);
        }
        if (call.index === calls) calls += 1;
      }
    }
  }

  #apply(chunk) {
    const events = [];
    if (chunk.timings !== null) this.#timings = chunk.timings;
    if (this.#id === null && chunk.id) this.#id = chunk.id;
    if (chunk.progress !== null) events.push(chunk.progress);
    for (const choice of chunk.choices) {
      if (choice.reasoning) {
        events.push({ type: "reasoning", text: choice.reasoning });
        this.#reasoning = (this.#reasoning ?? "") + choice.reasoning;
        const n = this.#timings?.predicted_n ?? null;
        if (n !== null) this.#reasoningTokens = n;
        this.#inReasoning = true;
      }
      if (choice.content) {
        events.push({ type: "content", text: choice.content });
        this.#content = (this.#content ?? "") + choice.content;
        this.#inReasoning = false;
      }
      for (const piece of choice.toolCalls) {
        events.push({ type: "tool_call_delta", ...piece });
        if (piece.index === this.#calls.length) this.#calls.push({ id: null, name: null, arguments: "" });
        const call = this.#calls[piece.index];
        if (call.id === null && piece.id) call.id = piece.id;
        if (call.name === null && piece.name) call.name = piece.name;
        call.arguments += piece.arguments;
        this.#inReasoning = false;
      }
      if (choice.finishReason !== null) this.#finishReason = choice.finishReason;
    }
    return events;
  }

  /** Ends the stream and returns the completion. */
  finish(thinkingCapped) {
    if (this.#finishReason === null) {
      throw new InferError("stream_closed_early", "the stream ended before a finish_reason arrived");
    }
    if (this.#id === null) throw protocolError("no chunk carried an id");
    this.#calls.forEach((call, i) => {
      if (call.id === null) throw protocolError(`tool call ${i} never got an id`);
      if (call.name === null) throw protocolError(`tool call ${i} never got a name`);
    });
    return {
      id: this.#id,
      content: this.#content,
      reasoning_content: this.#reasoning,
      tool_calls: this.#calls.map((call) => ({ ...call })),
      finish_reason: this.#finishReason,
      timings: this.#timings === null ? null : { ...this.#timings },
      reasoning_tokens: this.#reasoningTokens,
      thinking_capped: thinkingCapped === true,
    };
  }
}

// ---------------------------------------------------------------------------------------------
// The line protocol (docs/protocol.md): the kit runs it, this file only says what to call.

const HELLO = { name: "conform-js-example", version: "0.1.0", language: "javascript" };

if (isMain(import.meta.url)) serve({ hello: HELLO, create: () => new Assembler() });
