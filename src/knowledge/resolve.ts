/**
 * Source normalization and validation. `normalizeAndValidate` accepts any JavaScript value and never throws:
 * every problem becomes an issue with a code, the entry and source it concerns, and a path such as
 * `sources[0].entries[3].title`. Errors block the whole set; warnings do not.
 *
 * This file walks the sources; one entry's fields are read and checked in `entryFields.ts`, its id admitted in
 * `entryIds.ts`, the issues written in `validationIssues.ts`, and host values read safely in `hostValues.ts`.
 */
import type {
  KnowledgeEntryInput,
  KnowledgeManifest,
  KnowledgeNormalizeOptions,
  KnowledgeNormalizeResult,
  KnowledgeSource,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { encodeCitationPart } from "./citation.js";
import { FALLBACK_VERSION, MAX_ENTRIES, MAX_FIELD_CHARS } from "./defaults.js";
import { type EntrySnapshot, snapshotEntry, validateEntry } from "./entryFields.js";
import { EntryIdRegistry } from "./entryIds.js";
import { describeType, isRecord, isUnreadable, lengthOf, readProperty, shapeOf } from "./hostValues.js";
import { runSteps, runStepsYielding } from "./steps.js";
import { type EntryContext, IssueCollector, quote, reportUnreadable } from "./validationIssues.js";

export { resolveEntry } from "./entryFields.js";

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

/** Entries validated between two yields of {@link collectEntries}. */
const ENTRIES_PER_STEP = 256;

/** Where a validated entry was found, for the issues that the relation checks report after the last source. */
type EntryLocation = { path: string; sourceId: string | undefined };

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
