/** Scripted `MockLanguageModelV3` results for the integration tests. */
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3GenerateResult,
  LanguageModelV3StreamPart,
} from "@ai-sdk/provider";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";

export const USAGE = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

export function textResult(text: string): LanguageModelV3GenerateResult {
  return {
    content: [{ type: "text", text }],
    finishReason: { unified: "stop", raw: "stop" },
    usage: USAGE,
    warnings: [],
  };
}

export function toolCallResult(
  toolName: string,
  input: unknown,
  toolCallId = "call-1",
): LanguageModelV3GenerateResult {
  return {
    content: [{ type: "tool-call", toolCallId, toolName, input: JSON.stringify(input) }],
    finishReason: { unified: "tool-calls", raw: "tool_calls" },
    usage: USAGE,
    warnings: [],
  };
}

export function textStreamParts(text: string): LanguageModelV3StreamPart[] {
  return [
    { type: "stream-start", warnings: [] },
    { type: "text-start", id: "t1" },
    { type: "text-delta", id: "t1", delta: text },
    { type: "text-end", id: "t1" },
    { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage: USAGE },
  ];
}

/** A model that answers `text` to every generate and stream call. */
export function answeringModel(text = "Answer.", modelId = "answering"): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    provider: "mock",
    modelId,
    doGenerate: async () => textResult(text),
    doStream: async () => ({ stream: convertArrayToReadableStream(textStreamParts(text)) }),
  });
}

/** A model whose every call fails as an unavailable provider would. */
export function failingModel(modelId = "failing"): MockLanguageModelV3 {
  const fail = async (): Promise<never> => {
    throw new Error(`${modelId} is unavailable`);
  };
  return new MockLanguageModelV3({ provider: "mock", modelId, doGenerate: fail, doStream: fail });
}

/**
 * A minimal fallback model: tries each model in order and returns the first success (what `ai-fallback` does,
 * without its retry heuristics). Records which models were attempted.
 */
export function fallbackModel(models: LanguageModelV3[]): LanguageModelV3 & { attempts: string[] } {
  const attempts: string[] = [];
  async function attempt<T>(call: (model: LanguageModelV3) => PromiseLike<T>): Promise<T> {
    let lastError: unknown;
    for (const model of models) {
      attempts.push(model.modelId);
      try {
        return await call(model);
      } catch (error) {
        lastError = error;
      }
    }
    throw lastError;
  }
  return {
    specificationVersion: "v3",
    provider: "fallback",
    modelId: models.map((model) => model.modelId).join(","),
    supportedUrls: {},
    attempts,
    doGenerate: (options: LanguageModelV3CallOptions) => attempt((model) => model.doGenerate(options)),
    doStream: (options: LanguageModelV3CallOptions) => attempt((model) => model.doStream(options)),
  };
}
