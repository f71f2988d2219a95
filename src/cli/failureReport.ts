/**
 * How a failed command is reported: the error described (code, message, hint, place, exit code), printed on
 * stderr, and with `--json` also as a {@link CliErrorReport} on stdout.
 */
import { KnowledgeCompileError } from "../files/errors.js";
import type { KnowledgeFileIssue } from "../files/issues.js";
import { MissingPeerDependencyError } from "../peerDependency.js";
import { type CliErrorDetails, CliFailure, CliUsageError, KnowledgeBaseInvalidError } from "./errors.js";
import { type CommandContext, printError } from "./io.js";

/** Exit code of a usage error (unknown command or flag, missing argument, bad flag value). */
export const EXIT_USAGE = 2;

/** What `--json` prints on stdout when a command fails (the same error also goes to stderr). */
export type CliErrorReport = {
  error: {
    /** Stable code: the compiler's (`json-syntax`, `bad-manifest`, …), `usage`, `invalid-knowledge-base`, `failure`. */
    code: string;
    message: string;
    hint?: string;
    file?: string;
    line?: number;
    column?: number;
    exitCode: number;
    /** Validation issues, when the knowledge base is invalid. */
    issues?: KnowledgeFileIssue[];
  };
};

/** The report of a failure: its code, message, hint, place and exit code (and the stack of an unexpected one). */
function describeFailure(error: unknown): CliErrorReport["error"] & { stack?: string } {
  const withDetails = (
    exitCode: number,
    code: string,
    message: string,
    hint: string | undefined,
    details: CliErrorDetails,
  ) => ({
    code: details.code ?? code,
    message,
    ...(hint !== undefined ? { hint } : {}),
    ...(details.file !== undefined ? { file: details.file } : {}),
    ...(details.line !== undefined ? { line: details.line } : {}),
    ...(details.column !== undefined ? { column: details.column } : {}),
    exitCode,
  });
  if (MissingPeerDependencyError.isInstance(error)) {
    return {
      code: "missing-package",
      message: `${error.feature} needs the package ${error.packageName}, which is not installed`,
      hint: `install it next to lexground: ${error.installCommand}`,
      exitCode: 1,
    };
  }
  if (KnowledgeCompileError.isInstance(error)) {
    return withDetails(1, error.code, error.message, error.hint, {
      ...(error.file !== undefined ? { file: error.file } : {}),
      ...(error.line !== undefined ? { line: error.line } : {}),
      ...(error.column !== undefined ? { column: error.column } : {}),
    });
  }
  if (CliFailure.isInstance(error))
    return withDetails(1, "failure", error.message, error.hint, error.details);
  if (CliUsageError.isInstance(error))
    return withDetails(EXIT_USAGE, "usage", error.message, error.hint, error.details);
  if (KnowledgeBaseInvalidError.isInstance(error)) {
    return {
      code: "invalid-knowledge-base",
      message: error.message,
      hint: "run 'lexground validate' on the knowledge base to see every issue",
      exitCode: 1,
      issues: error.issues,
    };
  }
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return {
    code: "internal",
    message: message.split("\n")[0]!,
    hint: "re-run with LEXGROUND_DEBUG=1 for the stack trace",
    exitCode: 1,
    ...(error instanceof Error && error.stack ? { stack: error.stack } : {}),
  };
}

/** Prints a failure as a {@link CliErrorReport} on stdout. */
export function printJsonError(context: CommandContext, report: CliErrorReport["error"]): void {
  context.io.stdout.write(`${JSON.stringify({ error: report } satisfies CliErrorReport, null, 2)}\n`);
}

/** Reports a failure on stderr (and as JSON with `--json`); returns the exit code. */
export function reportFailure(context: CommandContext, error: unknown, json: boolean): number {
  const { stack, ...report } = describeFailure(error);
  printError(context, report.message, report.hint);
  if (stack !== undefined && context.io.env.LEXGROUND_DEBUG) context.io.stderr.write(`${stack}\n`);
  if (json) printJsonError(context, report);
  return report.exitCode;
}
