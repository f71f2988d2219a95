/**
 * Errors of the NeuroLink client. Each class carries a stable `code` and a marker symbol registered with
 * `Symbol.for`, so `XError.isInstance(error)` works across duplicated copies of the package (the AI SDK's
 * convention, shared by every lexground error: see `src/knowledge/errors.ts`), where `instanceof` would not.
 *
 * @module
 */

import type { KnowledgeRegistryError } from "../knowledge/engine.js";
import { hasErrorMarker } from "../knowledge/errors.js";
import type { KnowledgeValidationIssue } from "../types/knowledge.js";

const BASE_MARKER = Symbol.for("lexground.neurolink.error");

/** Stable machine-readable codes of the client's errors. */
export type NeuroLinkErrorCode =
  | "PROVIDER_NOT_CONFIGURED"
  | "UNKNOWN_PROVIDER"
  | "INVALID_OPTIONS"
  | "ALL_ATTEMPTS_FAILED"
  | "PROVIDER_ERROR"
  | "DYNAMIC_ARGUMENT_FAILED"
  | "FIRST_CONTENT_TIMEOUT"
  | "STREAM_IDLE_TIMEOUT"
  | "ATTEMPT_TIMEOUT"
  | "GENERATE_TIMEOUT"
  | "EMPTY_OUTPUT"
  | "STREAM_INTERRUPTED"
  | "STREAM_ABANDONED"
  | "KNOWLEDGE_NOT_CONFIGURED"
  | "KNOWLEDGE_UNAVAILABLE"
  | "MEMORY_TIMEOUT"
  | "MEMORY_UNAVAILABLE"
  | "UNEXPECTED_ERROR";

/**
 * Base class of every error thrown by `lexground/neurolink`. Thrown as such (code `UNEXPECTED_ERROR`, the
 * original as `cause`) only for a failure no more specific class describes, so that `generate()` and `stream()`
 * never reject with anything but one of these (or the caller's own abort reason).
 */
export class NeuroLinkError extends Error {
  /** Stable machine-readable code. */
  readonly code: NeuroLinkErrorCode;
  readonly [BASE_MARKER] = true;

  constructor(code: NeuroLinkErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "NeuroLinkError";
    this.code = code;
  }

  /** True for any lexground NeuroLink error, from any copy of the package. */
  static isInstance(error: unknown): error is NeuroLinkError {
    return hasErrorMarker(error, BASE_MARKER);
  }
}

const PROVIDER_NOT_CONFIGURED = Symbol.for("lexground.neurolink.ProviderNotConfiguredError");

/**
 * A provider was selected (or none could be selected) but a setting it needs is missing, e.g. no
 * `OPENAI_API_KEY`. `setting` names what to set.
 */
export class ProviderNotConfiguredError extends NeuroLinkError {
  readonly [PROVIDER_NOT_CONFIGURED] = true;
  /** The provider that could not be configured, or `undefined` when no provider could be chosen. */
  readonly provider: string | undefined;
  /**
   * The missing setting (environment variable or config path), e.g. `OPENAI_API_KEY`; or, when the provider's
   * package is not installed, that package, e.g. `@ai-sdk/openai` (the `cause` is a `MissingPeerDependencyError`).
   */
  readonly setting: string;

  constructor(params: { provider: string | undefined; setting: string; message: string; cause?: unknown }) {
    super("PROVIDER_NOT_CONFIGURED", params.message, { cause: params.cause });
    this.name = "ProviderNotConfiguredError";
    this.provider = params.provider;
    this.setting = params.setting;
  }

  static override isInstance(error: unknown): error is ProviderNotConfiguredError {
    return hasErrorMarker(error, PROVIDER_NOT_CONFIGURED);
  }
}

const UNKNOWN_PROVIDER = Symbol.for("lexground.neurolink.UnknownProviderError");

/** The `provider` option names no supported provider. */
export class UnknownProviderError extends NeuroLinkError {
  readonly [UNKNOWN_PROVIDER] = true;
  readonly provider: string;

  constructor(provider: string, supported: readonly string[]) {
    super(
      "UNKNOWN_PROVIDER",
      `Unknown provider "${provider}". Supported providers: ${supported.join(", ")}; or pass an AI SDK LanguageModel as \`model\`.`,
    );
    this.name = "UnknownProviderError";
    this.provider = provider;
  }

  static override isInstance(error: unknown): error is UnknownProviderError {
    return hasErrorMarker(error, UNKNOWN_PROVIDER);
  }
}

const INVALID_OPTIONS = Symbol.for("lexground.neurolink.InvalidOptionsError");

/**
 * Call options or constructor config are malformed (or could not be read: a throwing getter, a revoked proxy,
 * whose error is the `cause`). `path` names the offending field, e.g. `input.text`.
 */
export class InvalidOptionsError extends NeuroLinkError {
  readonly [INVALID_OPTIONS] = true;
  readonly path: string;

  constructor(path: string, message: string, options?: { cause?: unknown }) {
    super("INVALID_OPTIONS", `${message} (at ${path})`, options);
    this.name = "InvalidOptionsError";
    this.path = path;
  }

  static override isInstance(error: unknown): error is InvalidOptionsError {
    return hasErrorMarker(error, INVALID_OPTIONS);
  }
}

const DYNAMIC_ARGUMENT_FAILED = Symbol.for("lexground.neurolink.DynamicArgumentError");

/**
 * A function-valued call option (a dynamic argument such as `systemPrompt` or `model`) threw or rejected. `path`
 * names the option, `cause` is what the host's function threw. No provider was called.
 */
export class DynamicArgumentError extends NeuroLinkError {
  readonly [DYNAMIC_ARGUMENT_FAILED] = true;
  readonly path: string;

  constructor(path: string, cause: unknown) {
    super("DYNAMIC_ARGUMENT_FAILED", `The dynamic argument \`${path}\` failed: ${errorMessageOf(cause)}`, {
      cause,
    });
    this.name = "DynamicArgumentError";
    this.path = path;
  }

  static override isInstance(error: unknown): error is DynamicArgumentError {
    return hasErrorMarker(error, DYNAMIC_ARGUMENT_FAILED);
  }
}

/** Which phase of an attempt failed. */
export type AttemptFailurePhase = "setup" | "generate" | "before-first-content" | "empty-output";

/** One provider/model attempt of a call, as reported on results and on {@link AllAttemptsFailedError}. */
export type AttemptRecord = {
  /** 1-based position in the attempt sequence. */
  attempt: number;
  provider: string;
  model: string;
  /** Where the target came from: the primary selection, the model chain, the model pool or the fallback callback. */
  source: "primary" | "model-chain" | "model-pool" | "fallback-option" | "provider-fallback";
  outcome: "success" | "failure";
  durationMs: number;
  /** The error of a failed attempt. */
  error?: unknown;
  /** `error`'s message, for logs. */
  errorMessage?: string;
  phase?: AttemptFailurePhase;
};

const ALL_ATTEMPTS_FAILED = Symbol.for("lexground.neurolink.AllAttemptsFailedError");

/**
 * Every provider/model attempt of a call failed. `attempts` lists each one with its error; `cause` is the last
 * error. Thrown when more than one attempt ran; a single failed attempt gives {@link ProviderCallError} (or, when
 * the failure was already one of ours, such as a timeout or a missing setting, that error unchanged).
 */
export class AllAttemptsFailedError extends NeuroLinkError {
  readonly [ALL_ATTEMPTS_FAILED] = true;
  readonly attempts: readonly AttemptRecord[];
  /** The errors of the attempts, in order. */
  readonly errors: readonly unknown[];

  constructor(attempts: readonly AttemptRecord[]) {
    const lines = attempts.map(
      (record) =>
        `  ${record.attempt}. ${record.provider}/${record.model} (${record.phase ?? "generate"}): ${record.errorMessage ?? "unknown error"}`,
    );
    const last = attempts[attempts.length - 1];
    super("ALL_ATTEMPTS_FAILED", `All ${attempts.length} provider attempts failed:\n${lines.join("\n")}`, {
      cause: last?.error,
    });
    this.name = "AllAttemptsFailedError";
    this.attempts = attempts;
    this.errors = attempts.map((record) => record.error);
  }

  static override isInstance(error: unknown): error is AllAttemptsFailedError {
    return hasErrorMarker(error, ALL_ATTEMPTS_FAILED);
  }
}

const PROVIDER_CALL_ERROR = Symbol.for("lexground.neurolink.ProviderCallError");

/**
 * The only attempt of a call failed with a provider error (HTTP error, an error event inside the stream, a thrown
 * SDK error). `cause` is the provider's error exactly as received (it may be a plain object, e.g. the `error` of
 * an SSE `data: {"error": {...}}` event); `statusCode` is copied from it when it has a numeric one.
 */
export class ProviderCallError extends NeuroLinkError {
  readonly [PROVIDER_CALL_ERROR] = true;
  readonly provider: string;
  readonly model: string;
  readonly phase: AttemptFailurePhase;
  /** HTTP status of the provider's answer, when the provider error carries one. */
  readonly statusCode: number | undefined;
  /** The one attempt, as on results and on {@link AllAttemptsFailedError}. */
  readonly attempts: readonly AttemptRecord[];

  constructor(attempt: AttemptRecord) {
    const phase = attempt.phase ?? "generate";
    super(
      "PROVIDER_ERROR",
      `The ${attempt.provider}/${attempt.model} call failed (${phase}): ${attempt.errorMessage ?? errorMessageOf(attempt.error)}`,
      { cause: attempt.error },
    );
    this.name = "ProviderCallError";
    this.provider = attempt.provider;
    this.model = attempt.model;
    this.phase = phase;
    const status =
      typeof attempt.error === "object" && attempt.error !== null
        ? (attempt.error as { statusCode?: unknown }).statusCode
        : undefined;
    this.statusCode = typeof status === "number" ? status : undefined;
    this.attempts = [attempt];
  }

  static override isInstance(error: unknown): error is ProviderCallError {
    return hasErrorMarker(error, PROVIDER_CALL_ERROR);
  }
}

const STREAM_IDLE_TIMEOUT = Symbol.for("lexground.neurolink.StreamIdleTimeoutError");

/**
 * A stream that had produced content went silent for `streamIdleTimeoutMs`; the attempt is cancelled and the stream
 * ends with a {@link StreamInterruptedError} whose `cause` is this error (no fallback after content).
 */
export class StreamIdleTimeoutError extends NeuroLinkError {
  readonly [STREAM_IDLE_TIMEOUT] = true;
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(
      "STREAM_IDLE_TIMEOUT",
      `The stream sent nothing for ${timeoutMs}ms after content had started; it was cancelled`,
    );
    this.name = "StreamIdleTimeoutError";
    this.timeoutMs = timeoutMs;
  }

  static override isInstance(error: unknown): error is StreamIdleTimeoutError {
    return hasErrorMarker(error, STREAM_IDLE_TIMEOUT);
  }
}

const FIRST_CONTENT_TIMEOUT = Symbol.for("lexground.neurolink.FirstContentTimeoutError");

/** A stream opened but produced no content within `firstContentTimeoutMs`; the attempt is cancelled. */
export class FirstContentTimeoutError extends NeuroLinkError {
  readonly [FIRST_CONTENT_TIMEOUT] = true;
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super("FIRST_CONTENT_TIMEOUT", `No content received within ${timeoutMs}ms; the stream was cancelled`);
    this.name = "FirstContentTimeoutError";
    this.timeoutMs = timeoutMs;
  }

  static override isInstance(error: unknown): error is FirstContentTimeoutError {
    return hasErrorMarker(error, FIRST_CONTENT_TIMEOUT);
  }
}

const ATTEMPT_TIMEOUT = Symbol.for("lexground.neurolink.AttemptTimeoutError");

/** One attempt exceeded the call's `timeout`; it is cancelled. */
export class AttemptTimeoutError extends NeuroLinkError {
  readonly [ATTEMPT_TIMEOUT] = true;
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super("ATTEMPT_TIMEOUT", `The provider call did not finish within ${timeoutMs}ms and was cancelled`);
    this.name = "AttemptTimeoutError";
    this.timeoutMs = timeoutMs;
  }

  static override isInstance(error: unknown): error is AttemptTimeoutError {
    return hasErrorMarker(error, ATTEMPT_TIMEOUT);
  }
}

const GENERATE_TIMEOUT = Symbol.for("lexground.neurolink.GenerateTimeoutError");

/**
 * A generate attempt did not finish within `generateTimeoutMs` (default 120 000 ms), for instance a server that
 * keeps the connection alive by trickling bytes but never completes the answer. The attempt's request is aborted
 * and the next target tried.
 */
export class GenerateTimeoutError extends NeuroLinkError {
  readonly [GENERATE_TIMEOUT] = true;
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(
      "GENERATE_TIMEOUT",
      `The generate call did not finish within ${timeoutMs}ms (generateTimeoutMs) and was cancelled`,
    );
    this.name = "GenerateTimeoutError";
    this.timeoutMs = timeoutMs;
  }

  static override isInstance(error: unknown): error is GenerateTimeoutError {
    return hasErrorMarker(error, GENERATE_TIMEOUT);
  }
}

const EMPTY_OUTPUT = Symbol.for("lexground.neurolink.EmptyOutputError");

/** A stream finished without any text content. Treated as a failure so the next attempt can answer. */
export class EmptyOutputError extends NeuroLinkError {
  readonly [EMPTY_OUTPUT] = true;
  readonly finishReason: string | undefined;

  constructor(finishReason: string | undefined) {
    super(
      "EMPTY_OUTPUT",
      `The stream finished without content${finishReason ? ` (finish reason: ${finishReason})` : ""}`,
    );
    this.name = "EmptyOutputError";
    this.finishReason = finishReason;
  }

  static override isInstance(error: unknown): error is EmptyOutputError {
    return hasErrorMarker(error, EMPTY_OUTPUT);
  }
}

const STREAM_INTERRUPTED = Symbol.for("lexground.neurolink.StreamInterruptedError");

/**
 * A stream failed after content had already been delivered. There is no fallback at that point (a retry would
 * duplicate or splice answers); `partialContent` is what the consumer received, `cause` the provider error.
 */
export class StreamInterruptedError extends NeuroLinkError {
  readonly [STREAM_INTERRUPTED] = true;
  readonly provider: string;
  readonly model: string;
  readonly partialContent: string;

  constructor(params: { provider: string; model: string; partialContent: string; cause: unknown }) {
    super(
      "STREAM_INTERRUPTED",
      `The ${params.provider}/${params.model} stream failed after ${params.partialContent.length} characters of content: ${errorMessageOf(params.cause)}`,
      { cause: params.cause },
    );
    this.name = "StreamInterruptedError";
    this.provider = params.provider;
    this.model = params.model;
    this.partialContent = params.partialContent;
  }

  static override isInstance(error: unknown): error is StreamInterruptedError {
    return hasErrorMarker(error, STREAM_INTERRUPTED);
  }
}

const STREAM_ABANDONED = Symbol.for("lexground.neurolink.StreamAbandonedError");

/**
 * The consumer stopped iterating a stream before its end (break, return, or a thrown error in its loop body).
 * `result` rejects with it; the attempt is cancelled and the incomplete turn is not stored in memory.
 */
export class StreamAbandonedError extends NeuroLinkError {
  readonly [STREAM_ABANDONED] = true;
  readonly partialContent: string;

  constructor(partialContent: string) {
    super(
      "STREAM_ABANDONED",
      `The stream was not consumed to the end (${partialContent.length} characters received)`,
    );
    this.name = "StreamAbandonedError";
    this.partialContent = partialContent;
  }

  static override isInstance(error: unknown): error is StreamAbandonedError {
    return hasErrorMarker(error, STREAM_ABANDONED);
  }
}

const KNOWLEDGE_NOT_CONFIGURED = Symbol.for("lexground.neurolink.KnowledgeNotConfiguredError");

/** `rebuildKnowledge()` was called on an instance without knowledge grounding enabled. */
export class KnowledgeNotConfiguredError extends NeuroLinkError {
  readonly [KNOWLEDGE_NOT_CONFIGURED] = true;

  constructor(message: string) {
    super("KNOWLEDGE_NOT_CONFIGURED", message);
    this.name = "KnowledgeNotConfiguredError";
  }

  static override isInstance(error: unknown): error is KnowledgeNotConfiguredError {
    return hasErrorMarker(error, KNOWLEDGE_NOT_CONFIGURED);
  }
}

const KNOWLEDGE_UNAVAILABLE = Symbol.for("lexground.neurolink.KnowledgeUnavailableError");

/**
 * With `knowledgeGrounding.strict: true`: `knowledgeReady()`, or a turn with `useKnowledgeGrounding: true`, found
 * no index serving because validation (of the sources or the configuration) failed or the build threw. `cause` is
 * the engine's `KnowledgeRegistryError`; `reason` and `issues` are copied from it.
 */
export class KnowledgeUnavailableError extends NeuroLinkError {
  readonly [KNOWLEDGE_UNAVAILABLE] = true;
  /** The turns' `failureReason` for the same cause. */
  readonly reason: "validation-failed" | "build-failed";
  /** Every validation issue of the failed attempt. */
  readonly issues: KnowledgeValidationIssue[];

  constructor(cause: KnowledgeRegistryError) {
    super("KNOWLEDGE_UNAVAILABLE", cause.message, { cause });
    this.name = "KnowledgeUnavailableError";
    this.reason = cause.reason;
    this.issues = cause.issues.slice();
  }

  static override isInstance(error: unknown): error is KnowledgeUnavailableError {
    return hasErrorMarker(error, KNOWLEDGE_UNAVAILABLE);
  }
}

const MEMORY_ERROR = Symbol.for("lexground.neurolink.ConversationMemoryError");

/** A conversation-memory operation failed or timed out. `operation` says which. */
export class ConversationMemoryError extends NeuroLinkError {
  readonly [MEMORY_ERROR] = true;
  readonly operation: "read" | "write" | "connect" | "close";

  constructor(params: {
    code: "MEMORY_TIMEOUT" | "MEMORY_UNAVAILABLE";
    operation: "read" | "write" | "connect" | "close";
    message: string;
    cause?: unknown;
  }) {
    super(params.code, params.message, { cause: params.cause });
    this.name = "ConversationMemoryError";
    this.operation = params.operation;
  }

  static override isInstance(error: unknown): error is ConversationMemoryError {
    return hasErrorMarker(error, MEMORY_ERROR);
  }
}

/** The message of any thrown value. */
export function errorMessageOf(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  if (typeof error === "string") return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}
