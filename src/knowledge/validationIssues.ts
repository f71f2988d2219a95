/**
 * The issues of one validation run: the collector, and the messages an entry's checks report (each with the code,
 * the entry, its source and the path of the field, such as `sources[0].entries[3].title`).
 */
import type { KnowledgeIssueCode, KnowledgeValidationIssue } from "../types/knowledge.js";
import { describeError, describeType, isUnreadable, type UnreadableValue } from "./hostValues.js";

/** A value for a message: JSON-quoted, cut to 80 characters. */
export function quote(value: string): string {
  const shown = value.length > 80 ? `${value.slice(0, 77)}...` : value;
  return JSON.stringify(shown);
}

/** Collects issues for one validation run. */
export class IssueCollector {
  readonly issues: KnowledgeValidationIssue[] = [];
  errorCount = 0;

  add(
    level: "error" | "warning",
    code: KnowledgeIssueCode,
    message: string,
    where: { path?: string; entryId?: string; sourceId?: string },
  ): void {
    const issue: KnowledgeValidationIssue = { level, code, message };
    if (where.entryId !== undefined) issue.entryId = where.entryId;
    if (where.sourceId !== undefined) issue.sourceId = where.sourceId;
    if (where.path !== undefined) issue.path = where.path;
    this.issues.push(issue);
    if (level === "error") this.errorCount++;
  }
}

/** The entry being validated: where it is, its id and source, and the run's issues. */
export type EntryContext = {
  path: string;
  entryId: string;
  sourceId: string | undefined;
  issues: IssueCollector;
};

/** An error about `field` of the current entry. */
export function error(context: EntryContext, code: KnowledgeIssueCode, field: string, message: string): void {
  context.issues.add("error", code, message, {
    path: field ? `${context.path}.${field}` : context.path,
    entryId: context.entryId,
    sourceId: context.sourceId,
  });
}

/** A warning about `field` of the current entry. */
export function warning(
  context: EntryContext,
  code: KnowledgeIssueCode,
  field: string,
  message: string,
): void {
  context.issues.add("warning", code, message, {
    path: field ? `${context.path}.${field}` : context.path,
    entryId: context.entryId,
    sourceId: context.sourceId,
  });
}

/** A `limit-exceeded` error: `field` of the entry holds `length` characters, more than `limit`. */
export function tooManyCharacters(context: EntryContext, field: string, length: number, limit: number): void {
  error(
    context,
    "limit-exceeded",
    field,
    `${field} of entry ${quote(context.entryId)} has ${length} characters; the limit is ${limit}`,
  );
}

/** A `limit-exceeded` error: the entry lists `count` items in `field`, more than `limit`. */
export function tooManyItems(context: EntryContext, field: string, count: number, limit: number): void {
  error(
    context,
    "limit-exceeded",
    field,
    `entry ${quote(context.entryId)} has ${count} ${field}; the limit is ${limit}`,
  );
}

/** A type error (`bad-field-type`, or `bad-integrations` for integrations): `field` must be `expected`. */
export function mustBe(
  context: EntryContext,
  code: "bad-field-type" | "bad-integrations",
  field: string,
  expected: string,
  value: unknown,
): void {
  error(
    context,
    code,
    field,
    `${field} of entry ${quote(context.entryId)} must be ${expected}, got ${describeType(value)}`,
  );
}

/** An `unreadable-input` error: reading `path` threw (a throwing getter, a revoked proxy). */
export function reportUnreadable(
  issues: IssueCollector,
  path: string,
  value: UnreadableValue,
  where: { entryId?: string; sourceId?: string | undefined },
): void {
  issues.add("error", "unreadable-input", `${path} could not be read: ${describeError(value.error)}`, {
    path,
    ...(where.entryId === undefined ? {} : { entryId: where.entryId }),
    ...(where.sourceId === undefined ? {} : { sourceId: where.sourceId }),
  });
}

/** Reports an unreadable field of the current entry; true when `value` was unreadable. */
export function unreadableField(
  context: EntryContext,
  field: string,
  value: unknown,
): value is UnreadableValue {
  if (!isUnreadable(value)) return false;
  reportUnreadable(context.issues, `${context.path}.${field}`, value, {
    entryId: context.entryId,
    sourceId: context.sourceId,
  });
  return true;
}
