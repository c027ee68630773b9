// openai-node as a conform target: its HTTP layer, its SSE decoder and its ChatCompletionStream.
//
//     conform run --exec 'node examples/clients/node/openai-node.mjs' \
//         --xfail examples/clients/openai-node.xfail
//
// What is being tested is the client (npm `openai`, the version package.json pins):
//
// - FROM THE CLIENT: everything from the HTTP response on. Each case is one
//   `client.chat.completions.stream(...)` call whose `fetch` (the client's transport hook) answers
//   with a body the kit's PayloadFeed writes one server-sent event at a time: the client's own SSE
//   decoder, `JSON.parse`, its check for an `error` object (`APIError`), its accumulation
//   (`ChatCompletionStream`: the snapshot, the `content.delta` and
//   `tool_calls.function.arguments.delta` events) and its final completion
//   (`finalChatCompletion()`), including `reasoning_content`, which it accumulates as an unknown
//   delta field, and its check that every choice got a finish reason.
// - FROM THE ADAPTER (the kit's llama-server glue): `timings`, `prompt_progress` and the
//   reasoning state, read from the client's parsed chunk (the `chunk` event); reasoning events,
//   which the client has none of; a tool-call event's own `id` and `name` (the client's event has
//   the accumulated name and no id) from the same chunk; no event for empty text; and the error
//   mapping below.
//
// Errors: the client's `APIError` is the server's error (`server`, with the client's message); the
// `SyntaxError` it throws for a payload that is not JSON is `protocol`; its own `OpenAIError`
// refusals ("... contains an invalid tool call index", "missing role for choice 0") are
// `protocol`, except "missing finish_reason for choice N" at the end: `stream_closed_early`.
// Anything else the client throws (a `TypeError` it re-throws as an `OpenAIError` whose `cause`
// is the original) is left alone: conform reports it as a crash with the client's stack.

import OpenAI, { APIError, OpenAIError } from "openai";
import {
  FEED_HEADER,
  FeedRouter,
  isMain,
  PayloadFeed,
  ReasoningState,
  readProgress,
  readReasoning,
  readTimings,
  StreamError,
  protocolError,
  serve,
} from "../../kits/js/conform-kit.mjs";

const VERSION = JSON.parse(
  await import("node:fs").then((fs) =>
    fs.readFileSync(new URL("./node_modules/openai/package.json", import.meta.url), "utf8"),
  ),
).version;

function mapError(error) {
  // The stream re-throws what is not its own error as an OpenAIError with the original as `cause`.
  const e = !(error instanceof APIError) && error?.cause instanceof Error ? error.cause : error;
  if (e instanceof APIError) return new StreamError("server", e.message);
  if (e instanceof SyntaxError) return protocolError(e.message);
  if (e instanceof OpenAIError) {
    // The client's own refusals ("Chat completion stream contains an invalid tool call index",
    // "missing role for choice 0"): it checked the stream and rejected it.
    // Its own checks for a stream that ended early: without a finish reason, or without a chunk.
    if (/^missing finish_reason|^request ended without sending any chunks/.test(e.message)) {
      return new StreamError("stream_closed_early", e.message);
    }
    return protocolError(e.message);
  }
  return e; // a crash: the client did not expect this input
}

// The client, made once as an application makes it; each case's request is answered by that
// case's feed (FeedRouter).
const feeds = new FeedRouter();
const client = new OpenAI({
  apiKey: "unused",
  baseURL: "http://127.0.0.1:9/v1",
  fetch: feeds.fetch,
  maxRetries: 0,
});

export class Target {
  #feed = new PayloadFeed();
  #feedId = feeds.add(this.#feed);
  #llama = new ReasoningState();
  #stream;
  #final; // the client's own end: its final completion, or its error
  #failure = null;
  #chunks = []; // the client's parsed chunks since the last push
  #clientEvents = []; // its content and tool-call events since the last push

  constructor() {
    this.#stream = client.chat.completions.stream(
      { model: "llama", messages: [{ role: "user", content: "conform" }] },
      { headers: { [FEED_HEADER]: this.#feedId } },
    );
    this.#stream.on("chunk", (chunk) => this.#chunks.push(chunk));
    this.#stream.on("content.delta", (e) => this.#clientEvents.push({ type: "content", e }));
    this.#stream.on("tool_calls.function.arguments.delta", (e) =>
      this.#clientEvents.push({ type: "tool", e }),
    );
    this.#stream.on("error", () => {}); // the failure is read from `#final`
    this.#final = this.#stream.finalChatCompletion().then(
      (completion) => completion,
      (e) => {
        this.#failure = e;
        return null;
      },
    );
  }

  get #snapshot() {
    return this.#stream.currentChatCompletionSnapshot;
  }

  get id() {
    return this.#snapshot?.id ?? null;
  }

  get isFinished() {
    const choices = this.#snapshot?.choices;
    return Array.isArray(choices) && choices.some((c) => c?.finish_reason);
  }

  get reasoningTokens() {
    return this.#llama.reasoningTokens;
  }

  get inReasoning() {
    return this.#llama.inReasoning;
  }

  async push(data) {
    this.#chunks = [];
    this.#clientEvents = [];
    await this.#feed.write(data, this.#final);
    if (this.#failure !== null) throw mapError(this.#failure);
    const events = [];
    const wanted = this.#clientEvents;
    for (const chunk of this.#chunks) {
      // Adapter: the llama-server fields, read from the client's chunk and validated first.
      this.#llama.takeTimings(readTimings(chunk.timings));
      const progress = readProgress(chunk.prompt_progress);
      // Whatever the client let through: only a list of choices is read.
      const choices = Array.isArray(chunk.choices) ? chunk.choices : [];
      const reasoning = choices.map((c) => readReasoning(c?.delta?.reasoning_content));
      if (progress !== null) events.push(progress);
      choices.forEach((choice, i) => {
        const delta = choice?.delta;
        if (reasoning[i]) events.push({ type: "reasoning", text: reasoning[i] });
        if (delta?.content != null && wanted[0]?.type === "content") {
          const text = wanted.shift().e.delta; // the client's content.delta event
          if (text) events.push({ type: "content", text });
        }
        for (const piece of Array.isArray(delta?.tool_calls) ? delta.tool_calls : []) {
          if (wanted[0]?.type !== "tool") continue; // the client emitted no event for it
          const e = wanted.shift().e; // the client's tool_calls.function.arguments.delta event
          events.push({
            type: "tool_call_delta",
            index: e.index,
            id: piece?.id ?? null,
            name: piece?.function?.name ?? null,
            arguments: e.arguments_delta ?? "",
          });
        }
      });
    }
    for (const event of events) this.#llama.saw(event);
    return events;
  }

  async finish(thinkingCapped) {
    this.#feed.end();
    const final = await this.#final;
    feeds.remove(this.#feedId);
    if (this.#failure !== null) throw mapError(this.#failure);
    const choice = final.choices?.[0] ?? null;
    const message = choice?.message ?? null;
    return {
      id: final.id ?? null,
      content: message?.content ?? null,
      reasoning_content: message?.reasoning_content ?? null,
      tool_calls: (Array.isArray(message?.tool_calls) ? message.tool_calls : []).map((call) => ({
        id: call?.id ?? null,
        name: call?.function?.name ?? null,
        arguments: call?.function?.arguments ?? null,
      })),
      finish_reason: choice?.finish_reason ?? null,
      timings: this.#llama.timings,
      reasoning_tokens: this.#llama.reasoningTokens,
      thinking_capped: thinkingCapped === true,
    };
  }

  close() {
    this.#stream.abort();
    this.#feed.end();
    feeds.remove(this.#feedId);
  }
}

if (isMain(import.meta.url)) {
  serve({
    hello: { name: "openai-node", version: VERSION, language: "javascript" },
    create: () => new Target(),
    // The package this adapter wraps: a crash in it is the client's, one here the adapter's.
    wraps: ["openai"],
  });
}
