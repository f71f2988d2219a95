/**
 * Why grounding is off: the errors a host gets (a turn's timeout, a strict engine's blocked registry), the failure
 * reasons turns report, and the one warning per cause that the engine logs.
 */
import type { KnowledgeEngineStatus, KnowledgeLogger, KnowledgeValidationIssue } from "../types/knowledge.js";
import { hasErrorMarker } from "./errors.js";

// One error pattern for every class, written out per class on purpose: see `knowledge/errors.ts`.
const TIMEOUT_ERROR_MARKER = Symbol.for("lexground.KnowledgeGroundingTimeoutError");

/**
 * Raised (and caught) when a grounding operation exceeds its timeout, whether the timer fired or a synchronous step
 * overran and its late result was discarded: the turn's `failureReason` is its `String()` either way,
 * `TimeoutError: Knowledge grounding timed out after <N>ms`.
 */
export class KnowledgeGroundingTimeoutError extends Error {
  override readonly name = "TimeoutError";
  /** Stable machine-readable code. */
  readonly code = "KNOWLEDGE_GROUNDING_TIMEOUT";
  readonly [TIMEOUT_ERROR_MARKER] = true;
  /** The timeout that was exceeded, in milliseconds. */
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(`Knowledge grounding timed out after ${timeoutMs}ms`);
    this.timeoutMs = timeoutMs;
  }

  /** True for a `KnowledgeGroundingTimeoutError` from any copy of the package. */
  static isInstance(error: unknown): error is KnowledgeGroundingTimeoutError {
    return hasErrorMarker(error, TIMEOUT_ERROR_MARKER);
  }
}

/** Failure reason when no snapshot is installed yet (or there are no sources). */
export const INDEX_NOT_READY = "index-not-ready";
/** Failure reason when validation blocked the sources or the configuration, so no snapshot serves. */
export const VALIDATION_FAILED = "validation-failed";
/** Failure reason when the build threw, so no snapshot serves (a later turn retries it). */
export const BUILD_FAILED = "build-failed";

const REGISTRY_ERROR_MARKER = Symbol.for("lexground.KnowledgeRegistryError");

/**
 * Raised by `ready()` of a `strict` engine (and by NeuroLink's `knowledgeReady()` and grounded turns) when no
 * index serves because validation blocked the sources or the configuration, or the build threw.
 */
export class KnowledgeRegistryError extends Error {
  override readonly name = "KnowledgeRegistryError";
  readonly [REGISTRY_ERROR_MARKER] = true;
  /** Stable machine-readable code. */
  readonly code: "KNOWLEDGE_VALIDATION_FAILED" | "KNOWLEDGE_BUILD_FAILED";
  /** The turns' `failureReason` for the same cause. */
  readonly reason: "validation-failed" | "build-failed";
  /** Every validation issue (errors and warnings) of the failed attempt. */
  readonly issues: KnowledgeValidationIssue[];
  /** The engine status when the error was raised. */
  readonly status: KnowledgeEngineStatus;

  constructor(reason: "validation-failed" | "build-failed", status: KnowledgeEngineStatus) {
    super(
      reason === VALIDATION_FAILED
        ? `knowledge grounding is off: ${describeIssues(status.validationIssues)}`
        : `knowledge grounding is off: the index build failed: ${status.lastError}`,
    );
    this.code = reason === VALIDATION_FAILED ? "KNOWLEDGE_VALIDATION_FAILED" : "KNOWLEDGE_BUILD_FAILED";
    this.reason = reason;
    this.issues = status.validationIssues.slice();
    this.status = status;
  }

  /** True for a `KnowledgeRegistryError` from any copy of the package. */
  static isInstance(error: unknown): error is KnowledgeRegistryError {
    return hasErrorMarker(error, REGISTRY_ERROR_MARKER);
  }
}

/** Entry ids named in a warning before "and N more". */
const NAMED_ENTRIES = 5;

/** `3 error(s) in 2 entries ("a", "b"); first: <path>: <message>` for the error-level issues. */
export function describeIssues(issues: readonly KnowledgeValidationIssue[]): string {
  const errors = issues.filter((issue) => issue.level === "error");
  const ids = [...new Set(errors.flatMap((issue) => (issue.entryId === undefined ? [] : [issue.entryId])))];
  const named = ids
    .slice(0, NAMED_ENTRIES)
    .map((id) => JSON.stringify(id.length > 60 ? `${id.slice(0, 57)}...` : id));
  const more = ids.length > NAMED_ENTRIES ? ` and ${ids.length - NAMED_ENTRIES} more` : "";
  const where =
    ids.length > 0
      ? ` in ${ids.length} ${ids.length === 1 ? "entry" : "entries"} (${named.join(", ")}${more})`
      : "";
  const first = errors[0];
  // Configuration messages already start with their path.
  const prefix = first?.path && !first.message.startsWith(first.path) ? `${first.path}: ` : "";
  const firstText = first ? `; first: ${prefix}${first.message}` : "";
  return `${errors.length} validation error(s)${where}${firstText}`;
}

/** Keys already warned about, per logger: one warning per logger and content (bounded). */
const warnedKeys = new WeakMap<object, Set<string>>();
const WARNED_KEYS_LIMIT = 1_024;

/** Logs `message` once per logger and `key`; a logger that throws is ignored (logging must not break a build). */
export function warnOnce(logger: KnowledgeLogger | null, key: string, message: string): void {
  if (logger === null || (typeof logger !== "object" && typeof logger !== "function")) return;
  let keys = warnedKeys.get(logger);
  if (!keys) {
    keys = new Set();
    warnedKeys.set(logger, keys);
  }
  if (keys.has(key)) return;
  if (keys.size >= WARNED_KEYS_LIMIT) keys.clear();
  keys.add(key);
  try {
    logger.warn(message);
  } catch {
    // A host logger that throws is its own problem; the status still says everything.
  }
}
