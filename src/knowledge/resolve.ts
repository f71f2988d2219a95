/**
 * Source normalization and validation. `normalizeAndValidate` accepts any JavaScript value and never throws:
 * every problem becomes an issue with a code, the entry and source it concerns, and a path such as
 * `sources[0].entries[3].title`. Errors block the whole set; warnings do not.
 */
import type {
  KnowledgeEntryInput,
  KnowledgeEntryKind,
  KnowledgeIssueCode,
  KnowledgeManifest,
  KnowledgeNormalizeOptions,
  KnowledgeNormalizeResult,
  KnowledgeSource,
  KnowledgeStatus,
  KnowledgeValidationIssue,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { encodeCitationPart } from "./citation.js";
import {
  DEFAULT_ENTRY_KIND,
  DEFAULT_ENTRY_STATUS,
  FALLBACK_VERSION,
  KNOWLEDGE_ENTRY_FIELDS,
  KNOWLEDGE_ENTRY_KINDS,
  KNOWLEDGE_STATUSES,
  MAX_ALIASES_PER_ENTRY,
  MAX_BODY_CHARS,
  MAX_ENTRIES,
  MAX_FIELD_CHARS,
  MAX_KEYWORDS_PER_ENTRY,
  MAX_RELATIONS_PER_ENTRY,
} from "./defaults.js";
import { phraseKey } from "./normalize.js";
import { runSteps, runStepsYielding } from "./steps.js";

const KIND_SET: ReadonlySet<string> = new Set(KNOWLEDGE_ENTRY_KINDS);
const STATUS_SET: ReadonlySet<string> = new Set(KNOWLEDGE_STATUSES);
const KNOWN_ENTRY_FIELDS: ReadonlySet<string> = new Set(KNOWLEDGE_ENTRY_FIELDS);
/** Freezes an array after copying it, so no caller can change a snapshot through it. */
function frozenCopy(values: readonly string[] | undefined): string[] {
  return Object.freeze(values ? values.slice() : []) as string[];
}

/**
 * Applies every default to one entry: copies of the arrays, `body` `""`, `kind` `"text"`, `status` `"active"`,
 * and the given source version. The input must already be valid (see {@link normalizeAndValidate}); the result is
 * frozen.
 */
export function resolveEntry(input: KnowledgeEntryInput, version: string): NormalizedKnowledgeEntry {
  const entry: NormalizedKnowledgeEntry = {
    id: input.id,
    title: input.title,
    summary: input.summary,
    domain: input.domain,
    integrations: frozenCopy(Array.isArray(input.integrations) ? input.integrations : []),
    kind: input.kind ?? DEFAULT_ENTRY_KIND,
    status: input.status ?? DEFAULT_ENTRY_STATUS,
    body: input.body ?? "",
    aliases: frozenCopy(input.aliases),
    keywords: frozenCopy(input.keywords),
    relatedEntryIds: frozenCopy(input.relatedEntryIds),
    version,
  };
  if (input.parentEntryId !== undefined) entry.parentEntryId = input.parentEntryId;
  return Object.freeze(entry);
}

/**
 * Turns a build manifest into sources: one per catalog, `{id: catalog.id, version: manifest.contentVersion,
 * entries}`. `schemaVersion` and `generatedAt` are not used. A manifest that is not an object, or has no catalogs
 * array, gives `[]`; bad catalogs are passed through for {@link normalizeAndValidate} to report.
 */
export function manifestToSources(manifest: KnowledgeManifest): KnowledgeSource[] {
  if (!isRecord(manifest) || !Array.isArray(manifest.catalogs)) return [];
  return manifest.catalogs.map((catalog) => {
    const record = isRecord(catalog) ? catalog : ({} as Record<string, unknown>);
    return {
      id: record.id as string,
      version: manifest.contentVersion,
      entries: record.entries as KnowledgeEntryInput[],
    };
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// Host input is read exactly once per property (issue 11, item 12): a getter or proxy that answers differently on
// each read could otherwise pass validation with one value and be indexed with another. A read that throws (a
// throwing getter, a revoked proxy) is kept as an UnreadableValue and reported at its path.

// Markers are recognized through WeakSets: `instanceof` on a host value runs its getPrototypeOf trap, which throws
// on a revoked proxy.
const unreadableMarkers = new WeakSet<object>();
const oversizedMarkers = new WeakSet<object>();

/** What a property read threw; stands in for the value so validation can report it where it belongs. */
export class UnreadableValue {
  constructor(readonly error: unknown) {
    unreadableMarkers.add(this);
  }
}

/** A list longer than its field's cap: only its length was read, for the `limit-exceeded` message. */
class OversizedList {
  constructor(readonly length: number) {
    oversizedMarkers.add(this);
  }
}

export function isUnreadable(value: unknown): value is UnreadableValue {
  return typeof value === "object" && value !== null && unreadableMarkers.has(value);
}

function isOversized(value: unknown): value is OversizedList {
  return typeof value === "object" && value !== null && oversizedMarkers.has(value);
}

/** `target[key]`, read once; an {@link UnreadableValue} when the read throws. */
export function readProperty(target: object, key: string | number): unknown {
  try {
    return (target as Record<string | number, unknown>)[key];
  } catch (caught) {
    return new UnreadableValue(caught);
  }
}

/** Whether a value is an array, a record or neither; `Array.isArray` throws on a revoked proxy. */
export function shapeOf(value: unknown): "array" | "record" | "other" | UnreadableValue {
  if (typeof value !== "object" || value === null) return "other";
  if (isUnreadable(value)) return value;
  try {
    return Array.isArray(value) ? "array" : "record";
  } catch (caught) {
    return new UnreadableValue(caught);
  }
}

/** The length of a host array, read once (0 when it is not a number). */
function lengthOf(list: object): number | UnreadableValue {
  const length = readProperty(list, "length");
  if (isUnreadable(length)) return length;
  return typeof length === "number" && Number.isSafeInteger(length) && length > 0 ? length : 0;
}

/**
 * A plain copy of a host array, reading its length and each item once. Longer than `cap`: an {@link OversizedList}
 * (or, with `truncate`, the first `cap + 1` items, enough for the caller to report the overflow).
 */
export function copyList(
  list: object,
  cap: number,
  truncate = false,
): unknown[] | OversizedList | UnreadableValue {
  const length = lengthOf(list);
  if (isUnreadable(length)) return length;
  if (length > cap && !truncate) return new OversizedList(length);
  const count = Math.min(length, cap + 1);
  const copy: unknown[] = new Array(count);
  const items = list as Record<number, unknown>;
  // One try around the loop (resumed after an item that throws) rather than one per item: lists are long.
  let index = 0;
  while (index < count) {
    try {
      for (; index < count; index++) copy[index] = items[index];
    } catch (caught) {
      copy[index] = new UnreadableValue(caught);
      index++;
    }
  }
  return copy;
}

/** `String(error)`, which itself can throw (an error object with a throwing `toString`). */
export function describeError(error: unknown): string {
  try {
    return String(error);
  } catch {
    return "an error that cannot be printed";
  }
}

/** A list field read once: a plain copy when it is an array, else the value as read. */
function readList(input: object, field: string, cap: number): unknown {
  const value = readProperty(input, field);
  const shape = shapeOf(value);
  if (isUnreadable(shape)) return shape;
  return shape === "array" ? copyList(value as object, cap) : value;
}

/** The known fields of one entry, each read once, lists copied; and its own keys (for unknown-field warnings). */
type EntrySnapshot = { fields: Record<string, unknown>; keys: string[] | UnreadableValue };

function snapshotEntry(input: object): EntrySnapshot {
  // A fixed-shape literal (one hidden class for every entry); `integrations` has no item cap.
  const fields: Record<string, unknown> = {
    id: readProperty(input, "id"),
    title: readProperty(input, "title"),
    summary: readProperty(input, "summary"),
    domain: readProperty(input, "domain"),
    integrations: readList(input, "integrations", Number.POSITIVE_INFINITY),
    kind: readProperty(input, "kind"),
    status: readProperty(input, "status"),
    body: readProperty(input, "body"),
    aliases: readList(input, "aliases", MAX_ALIASES_PER_ENTRY),
    keywords: readList(input, "keywords", MAX_KEYWORDS_PER_ENTRY),
    relatedEntryIds: readList(input, "relatedEntryIds", MAX_RELATIONS_PER_ENTRY),
    parentEntryId: readProperty(input, "parentEntryId"),
  };
  let keys: string[] | UnreadableValue;
  try {
    keys = Object.keys(input);
  } catch (caught) {
    keys = new UnreadableValue(caught);
  }
  return { fields, keys };
}

/** A short description of a value's type for messages: `number`, `null`, `array`, `object`. */
export function describeType(value: unknown): string {
  if (value === null) return "null";
  try {
    if (Array.isArray(value)) return "array";
  } catch {
    // Array.isArray throws on a revoked proxy.
    return "revoked proxy";
  }
  if (typeof value === "number" && Number.isNaN(value)) return "NaN";
  return typeof value;
}

function quote(value: string): string {
  const shown = value.length > 80 ? `${value.slice(0, 77)}...` : value;
  return JSON.stringify(shown);
}

/** Collects issues for one validation run. */
class IssueCollector {
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

type EntryContext = { path: string; entryId: string; sourceId: string | undefined; issues: IssueCollector };

function error(context: EntryContext, code: KnowledgeIssueCode, field: string, message: string): void {
  context.issues.add("error", code, message, {
    path: field ? `${context.path}.${field}` : context.path,
    entryId: context.entryId,
    sourceId: context.sourceId,
  });
}

function warning(context: EntryContext, code: KnowledgeIssueCode, field: string, message: string): void {
  context.issues.add("warning", code, message, {
    path: field ? `${context.path}.${field}` : context.path,
    entryId: context.entryId,
    sourceId: context.sourceId,
  });
}

/** An `unreadable-input` error: reading `path` threw (a throwing getter, a revoked proxy). */
function reportUnreadable(
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
function unreadableField(context: EntryContext, field: string, value: unknown): value is UnreadableValue {
  if (!isUnreadable(value)) return false;
  reportUnreadable(context.issues, `${context.path}.${field}`, value, {
    entryId: context.entryId,
    sourceId: context.sourceId,
  });
  return true;
}

/** Validates a required non-blank string field; returns the value, or `""` when unusable. */
function requiredText(
  context: EntryContext,
  record: Record<string, unknown>,
  field: string,
  missingCode: KnowledgeIssueCode,
): string {
  const value = record[field];
  if (unreadableField(context, field, value)) return "";
  if (typeof value === "string") {
    if (value.trim() === "") {
      error(context, missingCode, field, `entry ${quote(context.entryId)} has no ${field}`);
      return "";
    }
    if (value.length > MAX_FIELD_CHARS) {
      error(
        context,
        "limit-exceeded",
        field,
        `${field} of entry ${quote(context.entryId)} has ${value.length} characters; the limit is ${MAX_FIELD_CHARS}`,
      );
    }
    return value;
  }
  if (value === undefined || value === null || value === "") {
    error(context, missingCode, field, `entry ${quote(context.entryId)} has no ${field}`);
  } else {
    error(
      context,
      "bad-field-type",
      field,
      `${field} of entry ${quote(context.entryId)} must be a string, got ${describeType(value)}`,
    );
  }
  return "";
}

/**
 * Validates an optional array of strings (already copied by {@link snapshotEntry}); returns the usable strings.
 */
function optionalStringList(
  context: EntryContext,
  record: Record<string, unknown>,
  field: string,
  limit: number,
): string[] | undefined {
  const value = record[field];
  if (value === undefined || unreadableField(context, field, value)) return undefined;
  if (isOversized(value)) {
    error(
      context,
      "limit-exceeded",
      field,
      `entry ${quote(context.entryId)} has ${value.length} ${field}; the limit is ${limit}`,
    );
    return undefined;
  }
  if (!Array.isArray(value)) {
    error(
      context,
      "bad-field-type",
      field,
      `${field} of entry ${quote(context.entryId)} must be an array of strings, got ${describeType(value)}`,
    );
    return undefined;
  }
  if (value.length > limit) {
    error(
      context,
      "limit-exceeded",
      field,
      `entry ${quote(context.entryId)} has ${value.length} ${field}; the limit is ${limit}`,
    );
    return undefined;
  }
  const strings: string[] = [];
  for (let index = 0; index < value.length; index++) {
    const item: unknown = value[index];
    if (unreadableField(context, `${field}[${index}]`, item)) continue;
    if (typeof item !== "string") {
      error(
        context,
        "bad-field-type",
        `${field}[${index}]`,
        `${field}[${index}] of entry ${quote(context.entryId)} must be a string, got ${describeType(item)}`,
      );
    } else if (item.length > MAX_FIELD_CHARS) {
      error(
        context,
        "limit-exceeded",
        `${field}[${index}]`,
        `${field}[${index}] of entry ${quote(context.entryId)} has ${item.length} characters; the limit is ${MAX_FIELD_CHARS}`,
      );
    } else {
      strings.push(item);
    }
  }
  return strings;
}

/**
 * Normalizes and validates sources. Never throws, whatever it is given. Each source's version is
 * `source.version ?? manifestVersion` and every entry inherits it. Issue codes (errors unless noted):
 * `bad-sources`, `bad-field-type`, `missing-source-id`, `missing-entry-id`,
 * `duplicate-entry-id`, `missing-title`, `missing-summary`, `missing-domain`, `missing-integrations`,
 * `bad-integrations`, `bad-kind`, `bad-status`, `limit-exceeded`, `unreadable-input` (a getter or proxy threw);
 * warnings `ambiguous-entry-id`, `unknown-field`, `empty-alias`, `duplicate-alias`, `broken-relation`,
 * `broken-parent`, `encoded-in-citation` (an id or version holds characters that are percent-encoded in its
 * `[KB:id@version]` marker; see `formatKnowledgeCitation`). Like NeuroLink, any non-empty string is an id and any
 * string a version.
 *
 * Each property of the input is read exactly once (lists are copied item by item), and only what was read is
 * validated and returned, so a getter that answers differently on a second read cannot bypass a check.
 *
 * Entries with field errors are still normalized (with safe defaults in place of unusable values) and returned,
 * but `validation.ok` is false. Entries without a usable id, and duplicates, are skipped.
 */
export function normalizeAndValidate(
  sources: unknown,
  options: KnowledgeNormalizeOptions = { manifestVersion: FALLBACK_VERSION },
): KnowledgeNormalizeResult {
  const { entries, validation } = normalizeSources(sources, options);
  return { entries, validation };
}

/** Entries of one source after normalization, with the source's id and effective version. */
export type NormalizedSourceGroup = { id: string; version: string; entries: NormalizedKnowledgeEntry[] };

/** {@link normalizeAndValidate}, also returning the entries grouped by source (for the cache key). */
export function normalizeSources(
  sources: unknown,
  options: KnowledgeNormalizeOptions = { manifestVersion: FALLBACK_VERSION },
): KnowledgeNormalizeResult & { groups: NormalizedSourceGroup[] } {
  const issues = new IssueCollector();
  const entries: NormalizedKnowledgeEntry[] = [];
  const groups: NormalizedSourceGroup[] = [];
  try {
    runSteps(collectEntries(sources, options, issues, entries, groups));
  } catch (caught) {
    // Reached only through exotic inputs such as throwing getters or revoked proxies.
    issues.add("error", "unreadable-input", `sources could not be read: ${String(caught)}`, {
      path: "sources",
    });
  }
  return { entries, validation: { ok: issues.errorCount === 0, issues: issues.issues }, groups };
}

/**
 * {@link normalizeSources}, yielding to the event loop whenever it has worked for `sliceMs` milliseconds, so a
 * server keeps answering while a large registry is validated. Same result; never rejects. The caller must not
 * change the entry objects until it resolves (the engine passes its own shallow copy of the source arrays).
 */
export async function normalizeSourcesAsync(
  sources: unknown,
  options: KnowledgeNormalizeOptions = { manifestVersion: FALLBACK_VERSION },
  sliceMs = 8,
): Promise<KnowledgeNormalizeResult & { groups: NormalizedSourceGroup[] }> {
  const issues = new IssueCollector();
  const entries: NormalizedKnowledgeEntry[] = [];
  const groups: NormalizedSourceGroup[] = [];
  try {
    await runStepsYielding(collectEntries(sources, options, issues, entries, groups), sliceMs);
  } catch (caught) {
    issues.add("error", "unreadable-input", `sources could not be read: ${String(caught)}`, {
      path: "sources",
    });
  }
  return { entries, validation: { ok: issues.errorCount === 0, issues: issues.issues }, groups };
}

/**
 * A copy of the source list and of each source's `id`, `version` and entry list, taken synchronously, so a host
 * that clears or reuses its arrays right after handing them over cannot change what an asynchronous build reads.
 * Each of those properties is read exactly once; entries themselves are read (once) by validation. Never throws:
 * what cannot be read is kept as a marker that validation reports as `unreadable-input` at its path.
 */
export function snapshotSourceArrays(sources: unknown): unknown {
  const shape = shapeOf(sources);
  if (shape !== "array") return isUnreadable(shape) ? shape : sources;
  const list = copyList(sources as object, Number.POSITIVE_INFINITY);
  if (!Array.isArray(list)) return list;
  return list.map((source: unknown) => {
    const sourceShape = shapeOf(source);
    if (sourceShape !== "record") return isUnreadable(sourceShape) ? sourceShape : source;
    const record = source as object;
    const id = readProperty(record, "id");
    const version = readProperty(record, "version");
    let entries = readProperty(record, "entries");
    const entriesShape = shapeOf(entries);
    if (isUnreadable(entriesShape)) entries = entriesShape;
    else if (entriesShape === "array") entries = copyList(entries as object, MAX_ENTRIES, true);
    return { id, version, entries };
  });
}

/** Entries validated between two yields of {@link collectEntries}. */
const ENTRIES_PER_STEP = 256;

/**
 * Validates every entry. A generator, so that an async caller can yield to the event loop between steps (a large
 * registry takes seconds); synchronous callers drain it in one go.
 */
function* collectEntries(
  sources: unknown,
  options: KnowledgeNormalizeOptions,
  issues: IssueCollector,
  entries: NormalizedKnowledgeEntry[],
  groups: NormalizedSourceGroup[],
): Generator<void, void, void> {
  const sourcesShape = shapeOf(sources);
  if (isUnreadable(sourcesShape)) {
    reportUnreadable(issues, "sources", sourcesShape, {});
    return;
  }
  if (sourcesShape !== "array") {
    issues.add("error", "bad-sources", `sources must be an array of sources, got ${describeType(sources)}`, {
      path: "sources",
    });
    return;
  }
  const sourceCount = lengthOf(sources as object);
  if (isUnreadable(sourceCount)) {
    reportUnreadable(issues, "sources", sourceCount, {});
    return;
  }
  const optionVersion = isRecord(options) ? readProperty(options, "manifestVersion") : undefined;
  const manifestVersion = typeof optionVersion === "string" ? optionVersion : FALLBACK_VERSION;
  const seenIds = new Set<string>();
  const seenCanonicalIds = new Map<string, string>();
  const seenCaseFoldedIds = new Map<string, string>();
  const aliasOwners = new Map<string, string>();
  const locations = new Map<string, { path: string; sourceId: string | undefined }>();
  let total = 0;

  for (let sourceIndex = 0; sourceIndex < sourceCount; sourceIndex++) {
    const sourcePath = `sources[${sourceIndex}]`;
    const source: unknown = readProperty(sources as object, sourceIndex);
    const sourceShape = shapeOf(source);
    if (isUnreadable(sourceShape)) {
      reportUnreadable(issues, sourcePath, sourceShape, {});
      continue;
    }
    if (sourceShape !== "record") {
      issues.add("error", "bad-field-type", `${sourcePath} must be an object, got ${describeType(source)}`, {
        path: sourcePath,
      });
      continue;
    }
    const rawSourceId = readProperty(source as object, "id");
    let sourceId: string | undefined;
    if (typeof rawSourceId === "string" && rawSourceId !== "") sourceId = rawSourceId;
    else if (isUnreadable(rawSourceId)) reportUnreadable(issues, `${sourcePath}.id`, rawSourceId, {});
    else if (!rawSourceId)
      issues.add("error", "missing-source-id", `${sourcePath} has no id`, { path: `${sourcePath}.id` });
    else
      issues.add(
        "error",
        "bad-field-type",
        `${sourcePath}.id must be a string, got ${describeType(rawSourceId)}`,
        {
          path: `${sourcePath}.id`,
        },
      );

    const rawVersion = readProperty(source as object, "version") ?? manifestVersion;
    let version = FALLBACK_VERSION;
    if (isUnreadable(rawVersion)) {
      reportUnreadable(issues, `${sourcePath}.version`, rawVersion, { sourceId });
    } else if (typeof rawVersion !== "string") {
      issues.add(
        "error",
        "bad-field-type",
        `${sourcePath}.version must be a string, got ${describeType(rawVersion)}`,
        {
          path: `${sourcePath}.version`,
          sourceId,
        },
      );
    } else if (rawVersion.length > MAX_FIELD_CHARS) {
      issues.add(
        "error",
        "limit-exceeded",
        `version of ${sourcePath} has ${rawVersion.length} characters; the limit is ${MAX_FIELD_CHARS}`,
        { path: `${sourcePath}.version`, sourceId },
      );
    } else {
      // Any string is a version, as in NeuroLink; one that cannot stand verbatim in a marker is encoded there.
      version = rawVersion;
      const encoded = encodeCitationPart(version, "version");
      if (encoded !== version) {
        issues.add(
          "warning",
          "encoded-in-citation",
          `version ${quote(version)} of ${sourcePath} is written ${quote(encoded)} in [KB:id@version] markers (percent-encoded characters; citations keep the original)`,
          { path: `${sourcePath}.version`, sourceId },
        );
      }
    }

    const group: NormalizedSourceGroup = { id: sourceId ?? "", version, entries: [] };
    groups.push(group);
    const sourceEntries = readProperty(source as object, "entries");
    const entriesShape = shapeOf(sourceEntries);
    const entryCount = entriesShape === "array" ? lengthOf(sourceEntries as object) : entriesShape;
    if (isUnreadable(entryCount)) {
      reportUnreadable(issues, `${sourcePath}.entries`, entryCount, { sourceId });
      continue;
    }
    if (entriesShape !== "array") {
      issues.add(
        "error",
        "bad-field-type",
        `${sourcePath}.entries must be an array of entries, got ${describeType(sourceEntries)}`,
        { path: `${sourcePath}.entries`, sourceId },
      );
      continue;
    }
    for (let entryIndex = 0; entryIndex < (entryCount as number); entryIndex++) {
      total++;
      if (total % ENTRIES_PER_STEP === 0) yield;
      if (total > MAX_ENTRIES) {
        issues.add("error", "limit-exceeded", `more than ${MAX_ENTRIES} entries; the rest were not read`, {
          path: `${sourcePath}.entries[${entryIndex}]`,
          sourceId,
        });
        return;
      }
      const path = `${sourcePath}.entries[${entryIndex}]`;
      const input: unknown = readProperty(sourceEntries as object, entryIndex);
      const inputShape = shapeOf(input);
      if (isUnreadable(inputShape)) {
        reportUnreadable(issues, path, inputShape, { sourceId });
        continue;
      }
      if (inputShape !== "record") {
        issues.add("error", "bad-field-type", `${path} must be an object, got ${describeType(input)}`, {
          path,
          sourceId,
        });
        continue;
      }
      const snapshot = snapshotEntry(input as object);
      const id = snapshot.fields.id;
      if (typeof id !== "string" || id === "") {
        if (isUnreadable(id)) reportUnreadable(issues, `${path}.id`, id, { sourceId });
        else if (!id)
          issues.add("error", "missing-entry-id", `${path} has no id`, { path: `${path}.id`, sourceId });
        else
          issues.add("error", "bad-field-type", `${path}.id must be a string, got ${describeType(id)}`, {
            path: `${path}.id`,
            sourceId,
          });
        continue;
      }
      const context: EntryContext = { path, entryId: id, sourceId, issues };
      if (id.length > MAX_FIELD_CHARS) {
        error(
          context,
          "limit-exceeded",
          "id",
          `id has ${id.length} characters; the limit is ${MAX_FIELD_CHARS}`,
        );
        continue;
      }
      if (seenIds.has(id)) {
        error(
          context,
          "duplicate-entry-id",
          "id",
          `duplicate entry id ${quote(id)}; the first entry with it is kept`,
        );
        continue;
      }
      const canonicalId = id.normalize("NFC");
      const canonicalTwin = seenCanonicalIds.get(canonicalId);
      if (canonicalTwin !== undefined) {
        error(
          context,
          "duplicate-entry-id",
          "id",
          `entry id ${quote(id)} differs from ${quote(canonicalTwin)} only in Unicode normalization; the first is kept`,
        );
        continue;
      }
      seenIds.add(id);
      seenCanonicalIds.set(canonicalId, id);
      const caseFolded = canonicalId.toLowerCase();
      const caseTwin = seenCaseFoldedIds.get(caseFolded);
      if (caseTwin !== undefined) {
        warning(
          context,
          "ambiguous-entry-id",
          "id",
          `entry id ${quote(id)} differs from ${quote(caseTwin)} only in case`,
        );
      } else {
        seenCaseFoldedIds.set(caseFolded, id);
      }
      // Any non-empty string is an id, as in NeuroLink; one that cannot stand verbatim in a marker is encoded there.
      const encodedId = encodeCitationPart(id, "id");
      if (encodedId !== id) {
        warning(
          context,
          "encoded-in-citation",
          "id",
          `entry id ${quote(id)} is written ${quote(encodedId)} in [KB:id@version] markers (percent-encoded characters; citations keep the original)`,
        );
      }
      const entry = validateEntry(snapshot, context, version, aliasOwners);
      entries.push(entry);
      group.entries.push(entry);
      locations.set(id, { path, sourceId });
    }
  }

  for (const entry of entries) {
    const location = locations.get(entry.id)!;
    entry.relatedEntryIds.forEach((relatedId, index) => {
      if (!seenIds.has(relatedId)) {
        issues.add(
          "warning",
          "broken-relation",
          `entry ${quote(entry.id)} relates to missing entry ${quote(relatedId)}`,
          {
            entryId: entry.id,
            sourceId: location.sourceId,
            path: `${location.path}.relatedEntryIds[${index}]`,
          },
        );
      }
    });
    if (entry.parentEntryId !== undefined && !seenIds.has(entry.parentEntryId)) {
      issues.add(
        "warning",
        "broken-parent",
        `entry ${quote(entry.id)} has missing parent entry ${quote(entry.parentEntryId)}`,
        {
          entryId: entry.id,
          sourceId: location.sourceId,
          path: `${location.path}.parentEntryId`,
        },
      );
    }
  }
}

function validateEntry(
  snapshot: EntrySnapshot,
  context: EntryContext,
  version: string,
  aliasOwners: Map<string, string>,
): NormalizedKnowledgeEntry {
  // Only the snapshot is used from here on: each field of the host's entry was read exactly once.
  const input = snapshot.fields;
  const title = requiredText(context, input, "title", "missing-title");
  const summary = requiredText(context, input, "summary", "missing-summary");
  const domain = requiredText(context, input, "domain", "missing-domain");

  let integrations: string[] = [];
  const rawIntegrations = input.integrations;
  if (unreadableField(context, "integrations", rawIntegrations)) {
    // Reported; the entry is kept with no integrations.
  } else if (rawIntegrations === undefined) {
    error(
      context,
      "missing-integrations",
      "integrations",
      `entry ${quote(context.entryId)} has no integrations (use [] for all)`,
    );
  } else if (!Array.isArray(rawIntegrations)) {
    error(
      context,
      "bad-integrations",
      "integrations",
      `integrations of entry ${quote(context.entryId)} must be an array of strings, got ${describeType(rawIntegrations)}`,
    );
  } else {
    const badIndex = rawIntegrations.findIndex((item) => typeof item !== "string");
    const badItem: unknown = badIndex >= 0 ? rawIntegrations[badIndex] : undefined;
    const longIndex = rawIntegrations.findIndex(
      (item) => typeof item === "string" && item.length > MAX_FIELD_CHARS,
    );
    if (unreadableField(context, `integrations[${badIndex}]`, badItem)) {
      // Reported.
    } else if (badIndex >= 0) {
      error(
        context,
        "bad-integrations",
        `integrations[${badIndex}]`,
        `integrations[${badIndex}] of entry ${quote(context.entryId)} must be a string, got ${describeType(badItem)}`,
      );
    } else if (longIndex >= 0) {
      error(
        context,
        "limit-exceeded",
        `integrations[${longIndex}]`,
        `integrations[${longIndex}] of entry ${quote(context.entryId)} has ${(rawIntegrations[longIndex] as string).length} characters; the limit is ${MAX_FIELD_CHARS}`,
      );
    } else {
      integrations = rawIntegrations as string[];
    }
  }

  const rawKind = input.kind;
  const kind = (
    unreadableField(context, "kind", rawKind) ? DEFAULT_ENTRY_KIND : (rawKind ?? DEFAULT_ENTRY_KIND)
  ) as KnowledgeEntryKind;
  if (typeof kind !== "string" || !KIND_SET.has(kind)) {
    error(
      context,
      "bad-kind",
      "kind",
      `kind ${typeof kind === "string" ? quote(kind) : describeType(kind)} of entry ${quote(context.entryId)} is not one of ${KNOWLEDGE_ENTRY_KINDS.join(", ")}`,
    );
  }
  const rawStatus = input.status;
  const status = (
    unreadableField(context, "status", rawStatus) ? DEFAULT_ENTRY_STATUS : (rawStatus ?? DEFAULT_ENTRY_STATUS)
  ) as KnowledgeStatus;
  if (typeof status !== "string" || !STATUS_SET.has(status)) {
    error(
      context,
      "bad-status",
      "status",
      `status ${typeof status === "string" ? quote(status) : describeType(status)} of entry ${quote(context.entryId)} is not one of ${KNOWLEDGE_STATUSES.join(", ")}`,
    );
  }

  let body: string | undefined;
  const rawBody = input.body;
  if (rawBody !== undefined && !unreadableField(context, "body", rawBody)) {
    if (typeof rawBody !== "string") {
      error(
        context,
        "bad-field-type",
        "body",
        `body of entry ${quote(context.entryId)} must be a string, got ${describeType(rawBody)}`,
      );
    } else if (rawBody.length > MAX_BODY_CHARS) {
      error(
        context,
        "limit-exceeded",
        "body",
        `body of entry ${quote(context.entryId)} has ${rawBody.length} characters; the limit is ${MAX_BODY_CHARS}`,
      );
    } else {
      body = rawBody;
    }
  }

  const aliases = optionalStringList(context, input, "aliases", MAX_ALIASES_PER_ENTRY);
  const keywords = optionalStringList(context, input, "keywords", MAX_KEYWORDS_PER_ENTRY);
  const relatedEntryIds = optionalStringList(context, input, "relatedEntryIds", MAX_RELATIONS_PER_ENTRY);

  let parentEntryId: string | undefined;
  const rawParent = input.parentEntryId;
  if (rawParent !== undefined && !unreadableField(context, "parentEntryId", rawParent)) {
    if (typeof rawParent !== "string") {
      error(
        context,
        "bad-field-type",
        "parentEntryId",
        `parentEntryId of entry ${quote(context.entryId)} must be a string, got ${describeType(rawParent)}`,
      );
    } else {
      parentEntryId = rawParent;
    }
  }

  const keys = snapshot.keys;
  if (isUnreadable(keys)) {
    reportUnreadable(context.issues, context.path, keys, {
      entryId: context.entryId,
      sourceId: context.sourceId,
    });
  }
  for (const key of isUnreadable(keys) ? [] : keys) {
    if (!KNOWN_ENTRY_FIELDS.has(key)) {
      warning(
        context,
        "unknown-field",
        key,
        `entry ${quote(context.entryId)} has unknown field ${quote(key)}; it is ignored`,
      );
    }
  }

  if (aliases) {
    const ownKeys = new Set<string>();
    aliases.forEach((alias, index) => {
      const key = phraseKey(alias);
      if (key === "") {
        warning(
          context,
          "empty-alias",
          `aliases[${index}]`,
          `alias ${quote(alias)} of entry ${quote(context.entryId)} has no letters or digits; it is not indexed`,
        );
        return;
      }
      if (ownKeys.has(key)) return;
      ownKeys.add(key);
      const owner = aliasOwners.get(key);
      if (owner === undefined) aliasOwners.set(key, context.entryId);
      else if (owner !== context.entryId) {
        warning(
          context,
          "duplicate-alias",
          `aliases[${index}]`,
          `alias ${quote(alias)} of entry ${quote(context.entryId)} is also an alias of ${quote(owner)}`,
        );
      }
    });
  }

  const resolvedInput: KnowledgeEntryInput = {
    id: context.entryId,
    title,
    summary,
    domain,
    integrations,
    kind: KIND_SET.has(kind) ? kind : DEFAULT_ENTRY_KIND,
    status: STATUS_SET.has(status) ? status : DEFAULT_ENTRY_STATUS,
  };
  if (body !== undefined) resolvedInput.body = body;
  if (aliases !== undefined) resolvedInput.aliases = aliases;
  if (keywords !== undefined) resolvedInput.keywords = keywords;
  if (relatedEntryIds !== undefined) resolvedInput.relatedEntryIds = relatedEntryIds;
  if (parentEntryId !== undefined) resolvedInput.parentEntryId = parentEntryId;
  return resolveEntry(resolvedInput, version);
}
