// The Vercel AI SDK as a conform target: `streamText` over `@ai-sdk/openai-compatible`.
//
//     conform run --exec 'node examples/clients/node/vercel-ai.mjs' \
//         --xfail examples/clients/vercel-ai.xfail
//
// What is being tested is the client (npm `ai` and `@ai-sdk/openai-compatible`, the versions
// package.json pins), wrapped as its docs show: `createOpenAICompatible({ baseURL, fetch })` for
// llama-server, and `streamText({ model, prompt })` read through its `fullStream`.
//
// - FROM THE CLIENT: everything from the HTTP response on. The provider's `fetch` (its transport
//   hook) answers with a body the kit's PayloadFeed writes one server-sent event at a time: the
//   SDK's own SSE parser, its JSON parsing and zod schema for a chunk (and for an `error` object),
//   its stream parts (`reasoning-delta`, `text-delta`, `tool-input-start`, `tool-input-delta`,
//   `error`, `finish-step`), and its final result (`text`, `reasoningText`, `toolCalls`,
//   `rawFinishReason`, `response.id`).
// - FROM THE ADAPTER (the kit's llama-server glue): `timings`, `prompt_progress` and the reasoning
//   state, read from the SDK's `raw` parts (`includeRawChunks`: the chunk as the SDK parsed it),
//   which nothing else in the SDK keeps; the state's `id` and `is_finished` while the stream runs,
//   read from the same raw chunks (the first non-empty id; a finish reason in `choices[0]`, the
//   only choice the SDK reads), since the SDK tells the response id and the finish reason only
//   when the stream has ended (`finish-step`); the completion's id and finish reason are the
//   SDK's; the translation of stream parts into conform's events
//   (a `tool-input-start` and the `tool-input-delta` that follows it in the same payload are one
//   piece, carrying the id and name; later pieces have none, as the SDK tells none); no event for
//   empty text.
//
// What the SDK does not tell:
// - a tool call's arguments as text: its final tool call holds only the parsed `input`. The
//   completion's `arguments` is therefore the concatenation of the SDK's own `tool-input-delta`
//   parts for that call, and its id and name are the SDK's final `toolCallId` and `toolName`.
//
// Errors: an `error` part whose error is the server's error (the SDK's `StreamProviderError`, or
// the error object itself) is `server` (its `message`);
// one whose error is an AI SDK error (`AI_JSONParseError`, `AI_TypeValidationError`: the SDK
// refused the chunk) is `protocol`, except the SDK's own "stream ended without a finish reason"
// (or "... finish chunk"), which is `stream_closed_early`, as is a stream whose `rawFinishReason`
// is undefined at the end. Anything else is left alone, so
// conform reports it as a crash.

import { readFileSync } from "node:fs";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { AISDKError, StreamProviderError, streamText } from "ai";
import {
  FEED_HEADER,
  FeedRouter,
  isMain,
  PayloadFeed,
  ReasoningState,
  readId,
  readProgress,
  readReasoning,
  readTimings,
  StreamError,
  protocolError,
  serve,
} from "../../kits/js/conform-kit.mjs";

const version = (name) =>
  JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url), "utf8"))
    .version;
const VERSION = `ai ${version("ai")}, @ai-sdk/openai-compatible ${version("@ai-sdk/openai-compatible")}`;

function isServerError(error) {
  return typeof error === "object" && error !== null && !(error instanceof Error);
}

function mapError(error) {
  // The SDK turns the server's error object into a StreamProviderError with its message.
  if (StreamProviderError.isInstance(error)) return new StreamError("server", error.message ?? "");
  if (isServerError(error)) {
    return new StreamError("server", typeof error.message === "string" ? error.message : "");
  }
  if (AISDKError.isInstance(error)) {
    // "Response stream ended without a finish reason." (AI_InvalidResponseDataError), "The model
    // stream ended without a finish chunk." (AI_NoOutputGeneratedError): the stream was cut off.
    if (/stream ended without a finish/.test(error.message)) {
      return new StreamError("stream_closed_early", `${error.name}: ${error.message}`);
    }
    return protocolError(`${error.name}: ${error.message}`);
  }
  return error; // a crash: the SDK did not expect this input
}

// The provider and its model, made once as an application makes them; each case's request is
// answered by that case's feed (FeedRouter).
const feeds = new FeedRouter();
const provider = createOpenAICompatible({
  name: "llama-server",
  baseURL: "http://127.0.0.1:9/v1",
  fetch: feeds.fetch,
});
const model = provider.chatModel("llama");

export class Target {
  #feed = new PayloadFeed();
  #feedId = feeds.add(this.#feed);
  #llama = new ReasoningState();
  #result;
  #done; // the SDK's own end: its full stream read to the end, or failed
  #parts = []; // the SDK's stream parts since the last push
  #calls = new Map(); // tool call id -> {index, arguments} from the SDK's tool-input parts
  #id = null; // the SDK's response id, once it tells it
  #finished = false; // the SDK's finish-step came with a finish reason
  #rawId = null; // the adapter's reading of the raw chunks, while the SDK tells nothing
  #rawFinished = false;

  constructor() {
    this.#result = streamText({
      model,
      prompt: "conform",
      headers: { [FEED_HEADER]: this.#feedId },
      includeRawChunks: true,
      maxRetries: 0,
      onError: () => {}, // errors are read from the stream's `error` parts
    });
    this.#done = (async () => {
      for await (const part of this.#result.fullStream) this.#parts.push(part);
    })();
    this.#done.catch(() => {});
  }

  get id() {
    return this.#id ?? this.#rawId;
  }

  get isFinished() {
    return this.#finished || this.#rawFinished;
  }

  get reasoningTokens() {
    return this.#llama.reasoningTokens;
  }

  get inReasoning() {
    return this.#llama.inReasoning;
  }

  #take() {
    const parts = this.#parts;
    this.#parts = [];
    for (const part of parts) {
      if (part.type === "finish-step") {
        this.#id = part.response?.id ?? this.#id;
        this.#finished = part.rawFinishReason != null;
      }
    }
    return parts;
  }

  async push(data) {
    await this.#feed.write(data, this.#done);
    const events = [];
    let piece = null; // the tool-call event a tool-input-delta in this payload still belongs to
    for (const part of this.#take()) {
      switch (part.type) {
        case "raw": {
          // Adapter: the llama-server fields, read from the SDK's parsed chunk, validated first.
          const chunk = part.rawValue;
          this.#rawId = readId(this.#rawId, chunk?.id);
          if (chunk?.choices?.[0]?.finish_reason != null) this.#rawFinished = true;
          this.#llama.takeTimings(readTimings(chunk?.timings));
          const progress = readProgress(chunk?.prompt_progress);
          if (progress !== null) events.push(progress);
          for (const choice of Array.isArray(chunk?.choices) ? chunk.choices : []) {
            readReasoning(choice?.delta?.reasoning_content);
          }
          piece = null;
          break;
        }
        case "error":
          throw mapError(part.error);
        case "reasoning-delta":
          if (part.text) events.push({ type: "reasoning", text: part.text });
          break;
        case "text-delta":
          if (part.text) events.push({ type: "content", text: part.text });
          break;
        case "tool-input-start": {
          const index = this.#calls.size;
          this.#calls.set(part.id, { index, arguments: "" });
          piece = { type: "tool_call_delta", index, id: part.id, name: part.toolName, arguments: "" };
          events.push(piece);
          break;
        }
        case "tool-input-delta": {
          const call = this.#calls.get(part.id);
          if (call === undefined) break;
          call.arguments += part.delta;
          if (piece !== null && piece.index === call.index && piece.arguments === "") {
            piece.arguments = part.delta;
          } else {
            piece = { type: "tool_call_delta", index: call.index, id: null, name: null };
            piece.arguments = part.delta;
            events.push(piece);
          }
          break;
        }
        default:
          break;
      }
    }
    for (const event of events) this.#llama.saw(event);
    return events;
  }

  async finish(thinkingCapped) {
    this.#feed.end();
    await this.#done;
    feeds.remove(this.#feedId);
    for (const part of this.#take()) if (part.type === "error") throw mapError(part.error);
    const rawFinishReason = await this.#result.rawFinishReason;
    if (rawFinishReason == null) {
      throw new StreamError("stream_closed_early", "the SDK saw no finish reason");
    }
    const [text, reasoning, toolCalls, response] = await Promise.all([
      this.#result.text,
      this.#result.reasoningText,
      this.#result.toolCalls,
      this.#result.response,
    ]);
    return {
      id: response?.id ?? null,
      content: text === "" ? null : text,
      reasoning_content: reasoning ?? null,
      tool_calls: toolCalls.map((call) => ({
        id: call.toolCallId ?? null,
        name: call.toolName ?? null,
        arguments: this.#calls.get(call.toolCallId)?.arguments ?? null,
      })),
      finish_reason: rawFinishReason,
      timings: this.#llama.timings,
      reasoning_tokens: this.#llama.reasoningTokens,
      thinking_capped: thinkingCapped === true,
    };
  }

  close() {
    this.#feed.end();
    feeds.remove(this.#feedId);
  }
}

if (isMain(import.meta.url)) {
  serve({
    hello: { name: "vercel-ai", version: VERSION, language: "javascript" },
    create: () => new Target(),
    // The packages this adapter wraps: a crash in them is the client's, one here the adapter's.
    wraps: ["ai", "@ai-sdk/openai-compatible", "@ai-sdk/provider-utils", "@ai-sdk/provider"],
  });
}
