/**
 * The knowledge compiler's error: names what is wrong, where (file and line when known) and what to do about it.
 *
 * @module
 */
import { hasErrorMarker } from "../knowledge/errors.js";

/** Stable codes of {@link KnowledgeCompileError}. */
export type KnowledgeCompileErrorCode =
  | "not-found"
  | "unreadable"
  | "file-too-large"
  | "unsupported-file"
  | "yaml-syntax"
  | "yaml-aliases"
  | "json-syntax"
  | "missing-front-matter"
  | "unclosed-front-matter"
  | "bad-front-matter"
  | "bad-entry-file"
  | "bad-catalog-file"
  | "duplicate-catalog-id"
  | "bad-manifest"
  | "bad-config"
  | "bad-corpus"
  | "bad-content-version"
  | "bad-generated-at"
  | "no-entries";

// One error pattern for every class, written out per class on purpose: see `knowledge/errors.ts`.
const COMPILE_ERROR_MARKER = Symbol.for("lexground.KnowledgeCompileError");

/** A knowledge base could not be compiled or loaded. `file` and `line` locate the problem when known. */
export class KnowledgeCompileError extends Error {
  override readonly name = "KnowledgeCompileError";
  readonly [COMPILE_ERROR_MARKER] = true;
  /** Stable machine-readable code. */
  readonly code: KnowledgeCompileErrorCode;
  /** Display path of the offending file, when there is one. */
  readonly file: string | undefined;
  /** 1-based line in `file`, when known. */
  readonly line: number | undefined;
  /** 1-based column on `line`, when known (JSON syntax errors). */
  readonly column: number | undefined;
  /** What the author can do about it. */
  readonly hint: string | undefined;
  /** The message without its `file:line[:column]: ` prefix. */
  readonly description: string;

  constructor(
    code: KnowledgeCompileErrorCode,
    description: string,
    location: { file?: string; line?: number; column?: number; hint?: string } = {},
  ) {
    const position = location.line ? `:${location.line}${location.column ? `:${location.column}` : ""}` : "";
    const where = location.file ? `${location.file}${position}: ` : "";
    super(`${where}${description}`);
    this.code = code;
    this.description = description;
    this.file = location.file;
    this.line = location.line;
    this.column = location.line ? location.column : undefined;
    this.hint = location.hint;
  }

  /** True for a `KnowledgeCompileError` from any copy of the package. */
  static isInstance(error: unknown): error is KnowledgeCompileError {
    return hasErrorMarker(error, COMPILE_ERROR_MARKER);
  }

  /** The same error with another hint. */
  withHint(hint: string): KnowledgeCompileError {
    return new KnowledgeCompileError(this.code, this.description, {
      ...(this.file !== undefined ? { file: this.file } : {}),
      ...(this.line !== undefined ? { line: this.line } : {}),
      ...(this.column !== undefined ? { column: this.column } : {}),
      hint,
    });
  }
}
