/**
 * Scripted AI SDK models for offline tests. Each builder returns a `MockLanguageModelV3`, whose
 * `doGenerateCalls`/`doStreamCalls` record the exact prompt every attempt received.
 */
import type {
  LanguageModelV3CallOptions,
  LanguageModelV3GenerateResult,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult,
} from "@ai-sdk/provider";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";

export const USAGE = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

const FINISH: LanguageModelV3StreamPart = {
  type: "finish",
  finishReason: { unified: "stop", raw: "stop" },
  usage: USAGE,
};

export function generateResult(text: string): LanguageModelV3GenerateResult {
  return {
    content: text.length > 0 ? [{ type: "text", text }] : [],
    finishReason: { unified: "stop", raw: "stop" },
    usage: USAGE,
    warnings: [],
  };
}

export function textParts(chunks: string[]): LanguageModelV3StreamPart[] {
  return [
    { type: "stream-start", warnings: [] },
    { type: "text-start", id: "t1" },
    ...chunks.map((delta): LanguageModelV3StreamPart => ({ type: "text-delta", id: "t1", delta })),
    { type: "text-end", id: "t1" },
    FINISH,
  ];
}

function streamOf(parts: LanguageModelV3StreamPart[]): LanguageModelV3StreamResult {
  return { stream: convertArrayToReadableStream(parts) };
}

/** Answers `text` to generate and streams it in `chunks` (default: the whole text as one chunk). */
export function answeringModel(text: string, options: { modelId?: string; chunks?: string[] } = {}) {
  return new MockLanguageModelV3({
    provider: "mock",
    modelId: options.modelId ?? "answering",
    doGenerate: async () => generateResult(text),
    doStream: async () => streamOf(textParts(options.chunks ?? [text])),
  });
}

/** Throws `error` from both doGenerate and doStream (a failure creating the call). */
export function throwingModel(error: unknown, modelId = "throwing") {
  return new MockLanguageModelV3({
    provider: "mock",
    modelId,
    doGenerate: async () => {
      throw error;
    },
    doStream: async () => {
      throw error;
    },
  });
}

/** Streams an error part before any content (the error is inside the stream, not thrown). */
export function errorPartModel(error: unknown, modelId = "error-part") {
  return new MockLanguageModelV3({
    provider: "mock",
    modelId,
    doStream: async () =>
      streamOf([
        { type: "stream-start", warnings: [] },
        { type: "error", error },
      ]),
  });
}

/** A stream that finishes without text. */
export function emptyStreamModel(modelId = "empty") {
  return new MockLanguageModelV3({
    provider: "mock",
    modelId,
    doStream: async () => streamOf([{ type: "stream-start", warnings: [] }, FINISH]),
  });
}

/**
 * A stream that opens and never sends anything, and a generate that never answers. Neither settles on abort
 * (like a wedged provider); `cancelled` records whether the attempt's abort signal fired or the source stream
 * was cancelled, which is how a real provider's HTTP request gets torn down.
 */
export function stallingModel(modelId = "stalling") {
  const state = { cancelled: false };
  const watch = (options: LanguageModelV3CallOptions): void => {
    options.abortSignal?.addEventListener("abort", () => {
      state.cancelled = true;
    });
  };
  const model = new MockLanguageModelV3({
    provider: "mock",
    modelId,
    doGenerate: (options) => {
      watch(options);
      return new Promise<never>(() => {});
    },
    doStream: async (options) => {
      watch(options);
      return {
        stream: new ReadableStream<LanguageModelV3StreamPart>({
          start(controller) {
            controller.enqueue({ type: "stream-start", warnings: [] });
          },
          cancel() {
            state.cancelled = true;
          },
        }),
      };
    },
  });
  return { model, state };
}

/** Streams `before` chunks, then an error part (failure after content). */
export function failsAfterContentModel(before: string[], error: unknown, modelId = "fails-after-content") {
  return new MockLanguageModelV3({
    provider: "mock",
    modelId,
    doStream: async () =>
      streamOf([
        { type: "stream-start", warnings: [] },
        { type: "text-start", id: "t1" },
        ...before.map((delta): LanguageModelV3StreamPart => ({ type: "text-delta", id: "t1", delta })),
        { type: "error", error },
      ]),
  });
}

/** Streams `first`, then waits for `release()` before sending `rest` (for abort-mid-stream tests). */
export function gatedStreamModel(first: string, rest: string[], modelId = "gated") {
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const model = new MockLanguageModelV3({
    provider: "mock",
    modelId,
    doStream: async () => ({
      stream: new ReadableStream<LanguageModelV3StreamPart>({
        async start(controller) {
          controller.enqueue({ type: "stream-start", warnings: [] });
          controller.enqueue({ type: "text-start", id: "t1" });
          controller.enqueue({ type: "text-delta", id: "t1", delta: first });
          await gate;
          for (const delta of rest) controller.enqueue({ type: "text-delta", id: "t1", delta });
          controller.enqueue({ type: "text-end", id: "t1" });
          controller.enqueue(FINISH);
          controller.close();
        },
      }),
    }),
  });
  return { model, release: () => release() };
}

/** The system text of a recorded call (the prompt's leading system message), or undefined. */
export function systemOf(call: LanguageModelV3CallOptions | undefined): string | undefined {
  const first = call?.prompt[0];
  return first?.role === "system" ? first.content : undefined;
}

/** The text of every user/assistant message of a recorded call, in order. */
export function turnsOf(call: LanguageModelV3CallOptions | undefined): Array<{ role: string; text: string }> {
  const turns: Array<{ role: string; text: string }> = [];
  for (const message of call?.prompt ?? []) {
    if (message.role !== "user" && message.role !== "assistant") continue;
    let text = "";
    for (const part of message.content) if (part.type === "text") text += part.text;
    turns.push({ role: message.role, text });
  }
  return turns;
}

/** An error shaped like a provider HTTP failure. */
export function httpError(status: number, message = `HTTP ${status}`): Error & { statusCode: number } {
  return Object.assign(new Error(message), { statusCode: status });
}

/** Drains a stream result's chunks into one string. */
export async function drain(stream: AsyncIterable<{ content: string }>): Promise<string> {
  let text = "";
  for await (const chunk of stream) text += chunk.content;
  return text;
}

/** Reads a stream to its end or its error: the text received before, and what it threw (undefined if none). */
export async function drainUntilError(
  stream: AsyncIterable<{ content: string }>,
): Promise<{ text: string; thrown: unknown }> {
  let text = "";
  try {
    for await (const chunk of stream) text += chunk.content;
  } catch (error) {
    return { text, thrown: error };
  }
  return { text, thrown: undefined };
}
