/**
 * What one call of the client reads from its options, before any work: their validation, the session they name,
 * the timeouts they give, the text of history messages, and how a failure is typed when the call rejects.
 */
import { MissingPeerDependencyError } from "../peerDependency.js";
import { loadAiSdk } from "./attempts.js";
import { errorMessageOf, InvalidOptionsError, NeuroLinkError, ProviderNotConfiguredError } from "./errors.js";
import type { ConversationSessionKey } from "./memory/types.js";
import type { ChatMessage, GenerateOptions } from "./types.js";

/** Default deadline for a stream's first content chunk, in ms (`firstContentTimeoutMs`). */
export const DEFAULT_FIRST_CONTENT_TIMEOUT_MS = 60_000;
/** Default longest pause between two chunks of a stream, in ms (`streamIdleTimeoutMs`). */
export const DEFAULT_STREAM_IDLE_TIMEOUT_MS = 60_000;
/** Default deadline of one generate attempt, in ms (`generateTimeoutMs`; 0 disables). */
export const DEFAULT_GENERATE_TIMEOUT_MS = 120_000;

/** Does nothing (what a stream result's settle functions are until they are set). */
export function noop(): void {}

/** Text of a message's content: a string as is; text parts of an array joined; anything else empty. */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  let text = "";
  for (const part of content) {
    if (part && typeof part === "object" && (part as { type?: unknown }).type === "text") {
      const value = (part as { text?: unknown }).text;
      if (typeof value === "string") text += value;
    }
  }
  return text;
}

/** The session of a call: none without a non-empty `sessionId`; an empty `userId` means no user. */
export function sessionOf(options: GenerateOptions): ConversationSessionKey | undefined {
  const sessionId = options.context?.sessionId;
  if (typeof sessionId !== "string" || sessionId.length === 0) return undefined;
  return withUser(sessionId, options.context?.userId);
}

/** A session key with the user when `userId` is a non-empty string (the same rule for turns and for lookups). */
export function withUser(sessionId: string, userId: unknown): ConversationSessionKey {
  return typeof userId === "string" && userId.length > 0 ? { sessionId, userId } : { sessionId };
}

/** Checks the shape of a call's options; a wrong field is an {@link InvalidOptionsError} naming it. */
export function validateCallOptions(options: GenerateOptions, method: "generate" | "stream"): void {
  if (typeof options !== "object" || options === null) {
    throw new InvalidOptionsError("options", `${method}() expects an options object`);
  }
  if (typeof options.input !== "object" || options.input === null) {
    throw new InvalidOptionsError("input", `${method}() expects \`input: { text }\``);
  }
  if (typeof options.input.text !== "string") {
    throw new InvalidOptionsError("input.text", "`input.text` must be a string");
  }
  if (options.conversationMessages !== undefined && !Array.isArray(options.conversationMessages)) {
    throw new InvalidOptionsError(
      "conversationMessages",
      "`conversationMessages` must be an array when given",
    );
  }
  if (options.abortSignal !== undefined && !(options.abortSignal instanceof AbortSignal)) {
    throw new InvalidOptionsError("abortSignal", "`abortSignal` must be an AbortSignal");
  }
  if (options.knowledgeShadow !== undefined && typeof options.knowledgeShadow !== "boolean") {
    throw new InvalidOptionsError("knowledgeShadow", "`knowledgeShadow` must be a boolean when given");
  }
}

/** The caller's abort signal of a call, read defensively (the options may be anything). */
function callerSignalOf(options: unknown): AbortSignal | undefined {
  try {
    const signal = (options as { abortSignal?: unknown } | null)?.abortSignal;
    return signal instanceof AbortSignal ? signal : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What a call rejects with: our errors and the caller's own abort reason as they are; anything else (a failure no
 * specific class describes) wrapped in a {@link NeuroLinkError} with code `UNEXPECTED_ERROR` and the original as
 * `cause`, so a host never has to handle a raw value.
 */
export function typedRejection(error: unknown, method: "generate" | "stream", options: unknown): unknown {
  if (NeuroLinkError.isInstance(error)) return error;
  const signal = callerSignalOf(options);
  if (signal?.aborted && error === signal.reason) return error;
  return new NeuroLinkError("UNEXPECTED_ERROR", `${method}() failed: ${errorMessageOf(error)}`, {
    cause: error,
  });
}

/**
 * Makes sure the AI SDK is installed before a call does any work: without `ai` no provider can be called, so the
 * call fails at once with {@link ProviderNotConfiguredError} (`setting` `"ai"`, the `MissingPeerDependencyError`
 * naming the install command as `cause`), as for a provider whose own package is missing.
 */
export async function requireAiSdk(): Promise<void> {
  try {
    await loadAiSdk();
  } catch (error) {
    if (!MissingPeerDependencyError.isInstance(error)) throw error;
    throw new ProviderNotConfiguredError({
      provider: undefined,
      setting: error.packageName,
      message: error.message,
      cause: error,
    });
  }
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A timeout in ms from a number or a duration string such as `"500ms"`, `"30s"`, `"2m"` (NeuroLink accepts both). */
export function parseTimeout(value: unknown, path: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value === "number" && Number.isFinite(value) && value >= 0) return value;
  if (typeof value === "string") {
    const match = /^(\d+(?:\.\d+)?) ?(ms|s|m|h)?$/.exec(value.trim());
    if (match) return Number(match[1]) * (DURATION_UNITS[match[2] ?? "ms"] ?? 1);
  }
  throw new InvalidOptionsError(path, 'must be a non-negative number of ms or a duration such as "30s"');
}

/** Per-call state shared by retrieval and prompt building, so memory is read at most once per call. */
export type CallState = {
  memoryHistory?: Promise<ChatMessage[]>;
};
