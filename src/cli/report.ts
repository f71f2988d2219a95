/**
 * Printing located issues the way compilers do, so editors and CI annotate them.
 *
 * @module
 */
import type { KnowledgeFileIssue } from "../files/issues.js";
import type { Colors } from "./io.js";

/**
 * `file:line: level: message [code] (entry id, field)`: the compiler format editors and CI annotate; a hint, when
 * there is one, follows on an indented line.
 */
export function formatIssue(issue: KnowledgeFileIssue, colors: Colors): string {
  const position = issue.line ? `:${issue.line}${issue.column ? `:${issue.column}` : ""}` : "";
  const where = issue.file ? `${issue.file}${position}: ` : issue.path ? `${issue.path}: ` : "";
  const level =
    issue.level === "error"
      ? colors.red("error")
      : issue.level === "warning"
        ? colors.yellow("warning")
        : colors.dim("info");
  const details = [
    issue.entryId !== undefined ? `entry ${issue.entryId}` : undefined,
    issue.field !== undefined ? `field ${issue.field}` : undefined,
  ].filter((item) => item !== undefined);
  const hint = issue.hint !== undefined ? `\n  ${colors.dim(`hint: ${issue.hint}`)}` : "";
  return `${colors.bold(where)}${level}: ${issue.message} ${colors.dim(`[${issue.code}]`)}${details.length ? colors.dim(` (${details.join(", ")})`) : ""}${hint}`;
}
