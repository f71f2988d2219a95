/**
 * Errors of the CLI. Every error names what is wrong, where (file and line when known) and what to do about it, so
 * the CLI can print one clear line plus a hint. The knowledge compiler's own error is in `src/files/errors.ts`.
 */
import type { KnowledgeFileIssue } from "../files/issues.js";
import { hasErrorMarker } from "../knowledge/errors.js";

// One error pattern for every class, written out per class on purpose: see `knowledge/errors.ts`.
const USAGE_ERROR_MARKER = Symbol.for("lexground.CliUsageError");
const FAILURE_MARKER = Symbol.for("lexground.CliFailure");
const INVALID_KNOWLEDGE_BASE_MARKER = Symbol.for("lexground.KnowledgeBaseInvalidError");

/** Where a CLI error is, and its stable code, for `--json` error reports. */
export type CliErrorDetails = {
  /** Stable machine-readable code, e.g. `bad-config`, `json-syntax`, `not-found`. */
  code?: string;
  file?: string;
  line?: number;
  column?: number;
};

/**
 * A command was used wrongly (bad flag value, missing argument, a `--config` or `--queries` file that is missing or
 * malformed, an unknown provider). Exit code 2, like commander's usage errors.
 */
export class CliUsageError extends Error {
  override readonly name = "CliUsageError";
  /** Stable machine-readable code of the class (the finer one, when known, is `details.code`). */
  readonly code = "CLI_USAGE_ERROR";
  readonly [USAGE_ERROR_MARKER] = true;
  readonly hint: string | undefined;
  readonly details: CliErrorDetails;
  constructor(message: string, hint?: string, details: CliErrorDetails = {}) {
    super(message);
    this.hint = hint;
    this.details = details;
  }

  /** True for a `CliUsageError` from any copy of the package. */
  static isInstance(error: unknown): error is CliUsageError {
    return hasErrorMarker(error, USAGE_ERROR_MARKER);
  }
}

/** A command failed for a reason outside the user's arguments (a provider error, an I/O failure). Exit code 1. */
export class CliFailure extends Error {
  override readonly name = "CliFailure";
  /** Stable machine-readable code of the class (the finer one, when known, is `details.code`). */
  readonly code = "CLI_FAILURE";
  readonly [FAILURE_MARKER] = true;
  readonly hint: string | undefined;
  readonly details: CliErrorDetails;
  constructor(message: string, hint?: string, options?: { cause?: unknown; details?: CliErrorDetails }) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.hint = hint;
    this.details = options?.details ?? {};
  }

  /** True for a `CliFailure` from any copy of the package. */
  static isInstance(error: unknown): error is CliFailure {
    return hasErrorMarker(error, FAILURE_MARKER);
  }
}

/** The knowledge base failed validation; `issues` are located for printing. */
export class KnowledgeBaseInvalidError extends Error {
  override readonly name = "KnowledgeBaseInvalidError";
  /** Stable machine-readable code. */
  readonly code = "KNOWLEDGE_BASE_INVALID";
  readonly [INVALID_KNOWLEDGE_BASE_MARKER] = true;
  readonly issues: KnowledgeFileIssue[];
  constructor(issues: KnowledgeFileIssue[]) {
    const errors = issues.filter((issue) => issue.level === "error");
    const first = errors[0];
    const where = first?.file ? `${first.file}${first.line ? `:${first.line}` : ""}: ` : "";
    super(
      `the knowledge base has ${errors.length} validation error${errors.length === 1 ? "" : "s"}; first: ${where}${first?.message ?? "unknown"}`,
    );
    this.issues = issues;
  }

  /** True for a `KnowledgeBaseInvalidError` from any copy of the package. */
  static isInstance(error: unknown): error is KnowledgeBaseInvalidError {
    return hasErrorMarker(error, INVALID_KNOWLEDGE_BASE_MARKER);
  }
}
