/**
 * Source normalization and validation. `normalizeAndValidate` accepts any JavaScript value and never throws:
 * every problem becomes an issue with a code, the entry and source it concerns, and a path such as
 * `sources[0].entries[3].title`. Errors block the whole set; warnings do not.
 */
import type {
  KnowledgeEntryInput,
  KnowledgeIssueCode,
  KnowledgeManifest,
  KnowledgeNormalizeOptions,
  KnowledgeNormalizeResult,
  KnowledgeSource,
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

/** A `limit-exceeded` error: `field` of the entry holds `length` characters, more than `limit`. */
function tooManyCharacters(context: EntryContext, field: string, length: number, limit: number): void {
  error(
    context,
    "limit-exceeded",
    field,
    `${field} of entry ${quote(context.entryId)} has ${length} characters; the limit is ${limit}`,
  );
}

/** A `limit-exceeded` error: the entry lists `count` items in `field`, more than `limit`. */
function tooManyItems(context: EntryContext, field: string, count: number, limit: number): void {
  error(
    context,
    "limit-exceeded",
    field,
    `entry ${quote(context.entryId)} has ${count} ${field}; the limit is ${limit}`,
  );
}

/** A type error (`bad-field-type`, or `bad-integrations` for integrations): `field` must be `expected`. */
function mustBe(
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
      tooManyCharacters(context, field, value.length, MAX_FIELD_CHARS);
    }
    return value;
  }
  if (value === undefined || value === null || value === "") {
    error(context, missingCode, field, `entry ${quote(context.entryId)} has no ${field}`);
  } else {
    mustBe(context, "bad-field-type", field, "a string", value);
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
    tooManyItems(context, field, value.length, limit);
    return undefined;
  }
  if (!Array.isArray(value)) {
    mustBe(context, "bad-field-type", field, "an array of strings", value);
    return undefined;
  }
  if (value.length > limit) {
    tooManyItems(context, field, value.length, limit);
    return undefined;
  }
  const strings: string[] = [];
  for (let index = 0; index < value.length; index++) {
    const item: unknown = value[index];
    if (unreadableField(context, `${field}[${index}]`, item)) continue;
    if (typeof item !== "string") {
      mustBe(context, "bad-field-type", `${field}[${index}]`, "a string", item);
    } else if (item.length > MAX_FIELD_CHARS) {
      tooManyCharacters(context, `${field}[${index}]`, item.length, MAX_FIELD_CHARS);
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

/** Where a validated entry was found, for the issues that the relation checks report after the last source. */
type EntryLocation = { path: string; sourceId: string | undefined };

/**
 * Entry ids seen so far in one validation run, with the checks an id must pass before its entry is read: within
 * the length limit, not a duplicate (also after Unicode normalization), and warnings for a twin that differs only
 * in case and for an id that citations must percent-encode.
 */
class EntryIdRegistry {
  readonly seen = new Set<string>();
  private readonly canonical = new Map<string, string>();
  private readonly caseFolded = new Map<string, string>();

  /** Reports what is wrong with `id`; true when its entry is to be read, false when it is skipped. */
  admit(id: string, context: EntryContext): boolean {
    if (id.length > MAX_FIELD_CHARS) {
      error(
        context,
        "limit-exceeded",
        "id",
        `id has ${id.length} characters; the limit is ${MAX_FIELD_CHARS}`,
      );
      return false;
    }
    if (this.seen.has(id)) {
      error(
        context,
        "duplicate-entry-id",
        "id",
        `duplicate entry id ${quote(id)}; the first entry with it is kept`,
      );
      return false;
    }
    const canonicalId = id.normalize("NFC");
    const canonicalTwin = this.canonical.get(canonicalId);
    if (canonicalTwin !== undefined) {
      error(
        context,
        "duplicate-entry-id",
        "id",
        `entry id ${quote(id)} differs from ${quote(canonicalTwin)} only in Unicode normalization; the first is kept`,
      );
      return false;
    }
    this.seen.add(id);
    this.canonical.set(canonicalId, id);
    const caseFolded = canonicalId.toLowerCase();
    const caseTwin = this.caseFolded.get(caseFolded);
    if (caseTwin !== undefined) {
      warning(
        context,
        "ambiguous-entry-id",
        "id",
        `entry id ${quote(id)} differs from ${quote(caseTwin)} only in case`,
      );
    } else {
      this.caseFolded.set(caseFolded, id);
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
    return true;
  }
}

/** The number of sources in `sources`, or null (reported) when it is not a readable array. */
function sourceCountOf(sources: unknown, issues: IssueCollector): number | null {
  const sourcesShape = shapeOf(sources);
  if (isUnreadable(sourcesShape)) {
    reportUnreadable(issues, "sources", sourcesShape, {});
    return null;
  }
  if (sourcesShape !== "array") {
    issues.add("error", "bad-sources", `sources must be an array of sources, got ${describeType(sources)}`, {
      path: "sources",
    });
    return null;
  }
  const sourceCount = lengthOf(sources as object);
  if (isUnreadable(sourceCount)) {
    reportUnreadable(issues, "sources", sourceCount, {});
    return null;
  }
  return sourceCount;
}

/** A source's id (undefined, reported, when it has none or a bad one). */
function readSourceId(source: object, sourcePath: string, issues: IssueCollector): string | undefined {
  const rawSourceId = readProperty(source, "id");
  if (typeof rawSourceId === "string" && rawSourceId !== "") return rawSourceId;
  if (isUnreadable(rawSourceId)) reportUnreadable(issues, `${sourcePath}.id`, rawSourceId, {});
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
  return undefined;
}

/** A source's version, `source.version ?? manifestVersion` (the fallback version, reported, when unusable). */
function readSourceVersion(
  source: object,
  sourcePath: string,
  sourceId: string | undefined,
  manifestVersion: string,
  issues: IssueCollector,
): string {
  const rawVersion = readProperty(source, "version") ?? manifestVersion;
  const where = { path: `${sourcePath}.version`, sourceId };
  if (isUnreadable(rawVersion)) {
    reportUnreadable(issues, `${sourcePath}.version`, rawVersion, { sourceId });
    return FALLBACK_VERSION;
  }
  if (typeof rawVersion !== "string") {
    issues.add(
      "error",
      "bad-field-type",
      `${sourcePath}.version must be a string, got ${describeType(rawVersion)}`,
      where,
    );
    return FALLBACK_VERSION;
  }
  if (rawVersion.length > MAX_FIELD_CHARS) {
    issues.add(
      "error",
      "limit-exceeded",
      `version of ${sourcePath} has ${rawVersion.length} characters; the limit is ${MAX_FIELD_CHARS}`,
      where,
    );
    return FALLBACK_VERSION;
  }
  // Any string is a version, as in NeuroLink; one that cannot stand verbatim in a marker is encoded there.
  const encoded = encodeCitationPart(rawVersion, "version");
  if (encoded !== rawVersion) {
    issues.add(
      "warning",
      "encoded-in-citation",
      `version ${quote(rawVersion)} of ${sourcePath} is written ${quote(encoded)} in [KB:id@version] markers (percent-encoded characters; citations keep the original)`,
      where,
    );
  }
  return rawVersion;
}

/** A source's entry list and its length, or null (reported) when it is not a readable array. */
function readEntryList(
  source: object,
  sourcePath: string,
  sourceId: string | undefined,
  issues: IssueCollector,
): { list: object; count: number } | null {
  const sourceEntries = readProperty(source, "entries");
  const entriesShape = shapeOf(sourceEntries);
  const entryCount = entriesShape === "array" ? lengthOf(sourceEntries as object) : entriesShape;
  if (isUnreadable(entryCount)) {
    reportUnreadable(issues, `${sourcePath}.entries`, entryCount, { sourceId });
    return null;
  }
  if (entriesShape !== "array") {
    issues.add(
      "error",
      "bad-field-type",
      `${sourcePath}.entries must be an array of entries, got ${describeType(sourceEntries)}`,
      { path: `${sourcePath}.entries`, sourceId },
    );
    return null;
  }
  return { list: sourceEntries as object, count: entryCount as number };
}

/** An entry's fields read once, and its id; null (reported) when it is not an object or has no usable id. */
function readEntryHead(
  input: unknown,
  path: string,
  sourceId: string | undefined,
  issues: IssueCollector,
): { snapshot: EntrySnapshot; id: string } | null {
  const inputShape = shapeOf(input);
  if (isUnreadable(inputShape)) {
    reportUnreadable(issues, path, inputShape, { sourceId });
    return null;
  }
  if (inputShape !== "record") {
    issues.add("error", "bad-field-type", `${path} must be an object, got ${describeType(input)}`, {
      path,
      sourceId,
    });
    return null;
  }
  const snapshot = snapshotEntry(input as object);
  const id = snapshot.fields.id;
  if (typeof id === "string" && id !== "") return { snapshot, id };
  if (isUnreadable(id)) reportUnreadable(issues, `${path}.id`, id, { sourceId });
  else if (!id)
    issues.add("error", "missing-entry-id", `${path} has no id`, { path: `${path}.id`, sourceId });
  else
    issues.add("error", "bad-field-type", `${path}.id must be a string, got ${describeType(id)}`, {
      path: `${path}.id`,
      sourceId,
    });
  return null;
}

/**
 * Validates every entry. A generator, so that an async caller can yield to the event loop between steps (a large
 * registry takes seconds); synchronous callers drain it in one go. Sources are read in order, entries in order
 * within each; relations and parents are checked once every id is known.
 */
function* collectEntries(
  sources: unknown,
  options: KnowledgeNormalizeOptions,
  issues: IssueCollector,
  entries: NormalizedKnowledgeEntry[],
  groups: NormalizedSourceGroup[],
): Generator<void, void, void> {
  const sourceCount = sourceCountOf(sources, issues);
  if (sourceCount === null) return;
  const optionVersion = isRecord(options) ? readProperty(options, "manifestVersion") : undefined;
  const manifestVersion = typeof optionVersion === "string" ? optionVersion : FALLBACK_VERSION;
  const ids = new EntryIdRegistry();
  const aliasOwners = new Map<string, string>();
  const locations = new Map<string, EntryLocation>();
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
    const sourceId = readSourceId(source as object, sourcePath, issues);
    const version = readSourceVersion(source as object, sourcePath, sourceId, manifestVersion, issues);
    const group: NormalizedSourceGroup = { id: sourceId ?? "", version, entries: [] };
    groups.push(group);
    const entryList = readEntryList(source as object, sourcePath, sourceId, issues);
    if (entryList === null) continue;

    for (let entryIndex = 0; entryIndex < entryList.count; entryIndex++) {
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
      const head = readEntryHead(readProperty(entryList.list, entryIndex), path, sourceId, issues);
      if (head === null) continue;
      const context: EntryContext = { path, entryId: head.id, sourceId, issues };
      if (!ids.admit(head.id, context)) continue;
      const entry = validateEntry(head.snapshot, context, version, aliasOwners);
      entries.push(entry);
      group.entries.push(entry);
      locations.set(head.id, { path, sourceId });
    }
  }
  reportBrokenReferences(entries, locations, ids.seen, issues);
}

/** Warns about relations and parents that name an entry the sources do not hold. */
function reportBrokenReferences(
  entries: readonly NormalizedKnowledgeEntry[],
  locations: ReadonlyMap<string, EntryLocation>,
  knownIds: ReadonlySet<string>,
  issues: IssueCollector,
): void {
  for (const entry of entries) {
    const location = locations.get(entry.id)!;
    const where = (field: string) => ({
      entryId: entry.id,
      sourceId: location.sourceId,
      path: `${location.path}.${field}`,
    });
    entry.relatedEntryIds.forEach((relatedId, index) => {
      if (!knownIds.has(relatedId)) {
        issues.add(
          "warning",
          "broken-relation",
          `entry ${quote(entry.id)} relates to missing entry ${quote(relatedId)}`,
          where(`relatedEntryIds[${index}]`),
        );
      }
    });
    if (entry.parentEntryId !== undefined && !knownIds.has(entry.parentEntryId)) {
      issues.add(
        "warning",
        "broken-parent",
        `entry ${quote(entry.id)} has missing parent entry ${quote(entry.parentEntryId)}`,
        where("parentEntryId"),
      );
    }
  }
}

/** Validates one entry's fields (its id is already admitted) and returns the normalized entry. */
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
  const integrations = readIntegrations(context, input.integrations);
  const kind = readChoice(context, input, "kind", "bad-kind", KNOWLEDGE_ENTRY_KINDS, DEFAULT_ENTRY_KIND);
  const status = readChoice(context, input, "status", "bad-status", KNOWLEDGE_STATUSES, DEFAULT_ENTRY_STATUS);
  const body = optionalString(context, input, "body", MAX_BODY_CHARS);
  const aliases = optionalStringList(context, input, "aliases", MAX_ALIASES_PER_ENTRY);
  const keywords = optionalStringList(context, input, "keywords", MAX_KEYWORDS_PER_ENTRY);
  const relatedEntryIds = optionalStringList(context, input, "relatedEntryIds", MAX_RELATIONS_PER_ENTRY);
  const parentEntryId = optionalString(context, input, "parentEntryId", Number.POSITIVE_INFINITY);
  reportUnknownFields(context, snapshot.keys);
  if (aliases) checkAliases(context, aliases, aliasOwners);

  const resolvedInput: KnowledgeEntryInput = {
    id: context.entryId,
    title,
    summary,
    domain,
    integrations,
    kind,
    status,
  };
  if (body !== undefined) resolvedInput.body = body;
  if (aliases !== undefined) resolvedInput.aliases = aliases;
  if (keywords !== undefined) resolvedInput.keywords = keywords;
  if (relatedEntryIds !== undefined) resolvedInput.relatedEntryIds = relatedEntryIds;
  if (parentEntryId !== undefined) resolvedInput.parentEntryId = parentEntryId;
  return resolveEntry(resolvedInput, version);
}

/** The entry's integrations: required (`[]` for all), strings within the length limit; `[]` when unusable. */
function readIntegrations(context: EntryContext, rawIntegrations: unknown): string[] {
  if (unreadableField(context, "integrations", rawIntegrations)) return [];
  if (rawIntegrations === undefined) {
    error(
      context,
      "missing-integrations",
      "integrations",
      `entry ${quote(context.entryId)} has no integrations (use [] for all)`,
    );
    return [];
  }
  if (!Array.isArray(rawIntegrations)) {
    mustBe(context, "bad-integrations", "integrations", "an array of strings", rawIntegrations);
    return [];
  }
  const badIndex = rawIntegrations.findIndex((item) => typeof item !== "string");
  const badItem: unknown = badIndex >= 0 ? rawIntegrations[badIndex] : undefined;
  const longIndex = rawIntegrations.findIndex(
    (item) => typeof item === "string" && item.length > MAX_FIELD_CHARS,
  );
  if (unreadableField(context, `integrations[${badIndex}]`, badItem)) return [];
  if (badIndex >= 0) {
    mustBe(context, "bad-integrations", `integrations[${badIndex}]`, "a string", badItem);
    return [];
  }
  if (longIndex >= 0) {
    tooManyCharacters(
      context,
      `integrations[${longIndex}]`,
      (rawIntegrations[longIndex] as string).length,
      MAX_FIELD_CHARS,
    );
    return [];
  }
  return rawIntegrations as string[];
}

/** An optional field with a fixed set of values (`kind`, `status`); the default when absent or unusable. */
function readChoice<Value extends string>(
  context: EntryContext,
  input: Record<string, unknown>,
  field: "kind" | "status",
  code: "bad-kind" | "bad-status",
  choices: readonly Value[],
  fallback: Value,
): Value {
  const raw = input[field];
  const value = unreadableField(context, field, raw) ? fallback : (raw ?? fallback);
  if (typeof value === "string" && (choices as readonly string[]).includes(value)) return value as Value;
  error(
    context,
    code,
    field,
    `${field} ${typeof value === "string" ? quote(value) : describeType(value)} of entry ${quote(context.entryId)} is not one of ${choices.join(", ")}`,
  );
  return fallback;
}

/** An optional string field (`body`, `parentEntryId`) up to `maxChars` characters; undefined when absent or bad. */
function optionalString(
  context: EntryContext,
  input: Record<string, unknown>,
  field: "body" | "parentEntryId",
  maxChars: number,
): string | undefined {
  const raw = input[field];
  if (raw === undefined || unreadableField(context, field, raw)) return undefined;
  if (typeof raw !== "string") {
    mustBe(context, "bad-field-type", field, "a string", raw);
    return undefined;
  }
  if (raw.length > maxChars) {
    tooManyCharacters(context, field, raw.length, maxChars);
    return undefined;
  }
  return raw;
}

/** Warns about each key of the entry that is not an entry field (see `KNOWLEDGE_ENTRY_FIELDS`). */
function reportUnknownFields(context: EntryContext, keys: string[] | UnreadableValue): void {
  if (isUnreadable(keys)) {
    reportUnreadable(context.issues, context.path, keys, {
      entryId: context.entryId,
      sourceId: context.sourceId,
    });
    return;
  }
  for (const key of keys) {
    if (!KNOWN_ENTRY_FIELDS.has(key)) {
      warning(
        context,
        "unknown-field",
        key,
        `entry ${quote(context.entryId)} has unknown field ${quote(key)}; it is ignored`,
      );
    }
  }
}

/**
 * Warns about aliases that index nothing (no letters or digits) and about aliases another entry already has
 * (after normalization; once per alias, however often the entry lists it). `aliasOwners` maps an alias's phrase
 * key to the first entry that has it, across the whole run.
 */
function checkAliases(
  context: EntryContext,
  aliases: readonly string[],
  aliasOwners: Map<string, string>,
): void {
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
