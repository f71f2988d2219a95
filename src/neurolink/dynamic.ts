/**
 * Call isolation, dynamic arguments and the knowledge-block append.
 *
 * @module
 */

import { DynamicArgumentError } from "./errors.js";
import type {
  ChatMessage,
  DynamicArgument,
  DynamicResolutionContext,
  GenerateOptions,
  LanguageModelObject,
  StreamOptions,
} from "./types.js";

/**
 * Appends a knowledge block to a system prompt after a blank line.
 * - A non-empty string prompt becomes `prompt + "\n\n" + block`; an empty or absent one becomes the block alone.
 * - A function prompt (a dynamic argument) is wrapped: the wrapper resolves the original and appends the block
 *   to its value the same way, so the block always ends up after what the host's function returns.
 */
export function appendKnowledgeGroundingBlockToSystemPrompt(
  systemPrompt: DynamicArgument<string> | undefined,
  block: string,
): DynamicArgument<string> {
  if (typeof systemPrompt === "function") {
    const original = systemPrompt as (context: DynamicResolutionContext) => string | Promise<string>;
    return async (context: DynamicResolutionContext) => {
      const resolved = await original(context);
      return typeof resolved === "string" && resolved.length > 0 ? `${resolved}\n\n${block}` : block;
    };
  }
  return typeof systemPrompt === "string" && systemPrompt.length > 0 ? `${systemPrompt}\n\n${block}` : block;
}

/** Resolves a dynamic argument: calls it with the context when it is a function, returns it otherwise. */
export async function resolveDynamicArgument<T>(
  value: DynamicArgument<T> | undefined,
  context: DynamicResolutionContext,
): Promise<T | undefined> {
  if (typeof value === "function") {
    return await (value as (context: DynamicResolutionContext) => T | Promise<T>)(context);
  }
  return value;
}

/** Options after dynamic resolution: every function-valued field replaced by its value. */
export type ResolvedCallOptions = Omit<
  StreamOptions,
  "provider" | "model" | "systemPrompt" | "temperature" | "maxTokens" | "timeout"
> & {
  provider?: string;
  model?: string | LanguageModelObject;
  systemPrompt?: string;
  temperature?: number;
  maxTokens?: number;
  timeout?: number | string;
};

/**
 * Resolves the function-valued fields of call options (`provider`, `model`, `systemPrompt`, `temperature`,
 * `maxTokens`, `timeout`) with `{requestContext: dynamicContext ?? {}, signal: abortSignal}`. Returns a new object.
 * A function that throws or rejects gives {@link DynamicArgumentError} naming the option.
 */
export async function resolveDynamicOptions(
  options: GenerateOptions | StreamOptions,
): Promise<ResolvedCallOptions> {
  const context: DynamicResolutionContext = {
    requestContext: options.dynamicContext ?? {},
    ...(options.abortSignal === undefined ? {} : { signal: options.abortSignal }),
  };
  // A host function that fails is reported by the option it computes; a caller abort keeps its own reason.
  const resolveOption = <T>(path: string, value: DynamicArgument<T> | undefined): Promise<T | undefined> =>
    resolveDynamicArgument(value, context).catch((error: unknown) => {
      if (options.abortSignal?.aborted && error === options.abortSignal.reason) throw error;
      throw new DynamicArgumentError(path, error);
    });
  const [provider, model, systemPrompt, temperature, maxTokens, timeout] = await Promise.all([
    resolveOption("provider", options.provider),
    typeof options.model === "function"
      ? resolveOption("model", options.model as DynamicArgument<string>)
      : Promise.resolve(options.model as string | LanguageModelObject | undefined),
    resolveOption("systemPrompt", options.systemPrompt),
    resolveOption("temperature", options.temperature),
    resolveOption("maxTokens", options.maxTokens),
    resolveOption("timeout", options.timeout),
  ]);
  const resolved: ResolvedCallOptions = { ...(options as object) } as ResolvedCallOptions;
  assign(resolved, "provider", provider);
  assign(resolved, "model", model);
  assign(resolved, "systemPrompt", systemPrompt);
  assign(resolved, "temperature", temperature);
  assign(resolved, "maxTokens", maxTokens);
  assign(resolved, "timeout", timeout);
  return resolved;
}

function assign<K extends keyof ResolvedCallOptions>(
  target: ResolvedCallOptions,
  key: K,
  value: ResolvedCallOptions[K] | undefined,
): void {
  if (value === undefined) delete target[key];
  else target[key] = value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/**
 * Copies call options so nothing done during the call can reach the caller's object: plain objects and arrays
 * are copied two levels deep (`input`, `context`, `knowledgeContext.enabledIntegrations`, `conversationMessages`
 * and its messages); functions, signals and model objects are shared, since they are not data.
 */
export function cloneOptionsForCallIsolation<T extends GenerateOptions | StreamOptions>(options: T): T {
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(options)) {
    if (Array.isArray(value)) {
      copy[key] = value.map((item: unknown) => (isPlainObject(item) ? { ...item } : item));
    } else if (isPlainObject(value)) {
      const inner: Record<string, unknown> = {};
      for (const [innerKey, innerValue] of Object.entries(value)) {
        inner[innerKey] = Array.isArray(innerValue)
          ? [...innerValue]
          : isPlainObject(innerValue)
            ? { ...innerValue }
            : innerValue;
      }
      copy[key] = inner;
    } else {
      copy[key] = value;
    }
  }
  if (Array.isArray(copy.conversationMessages)) {
    copy.conversationMessages = (copy.conversationMessages as ChatMessage[]).map((message) => ({
      ...message,
    }));
  }
  return copy as T;
}
