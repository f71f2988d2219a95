/**
 * Planning one change of the engine's registry (`knowledgeRegistry.ts`): which entries an upsert adds or replaces
 * and which ids a removal drops, validated as a build validates them. Planning never changes the registry;
 * `commitChange` does, once the change went live.
 */
import type {
  KnowledgeIssueCode,
  KnowledgeUpsertOptions,
  KnowledgeValidationIssue,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { MAX_ENTRIES } from "./defaults.js";
import { copyList, describeType, isUnreadable, readProperty, shapeOf } from "./hostValues.js";
import type { KnowledgeRegistry } from "./knowledgeRegistry.js";
import { type NormalizedSourceGroup, normalizeSources } from "./resolve.js";

/** A validated change, ready to apply. */
export type PlannedChange = {
  ok: boolean;
  issues: KnowledgeValidationIssue[];
  /** Ids to remove (present in the registry). */
  removed: string[];
  /** Entries to add or to put in place of the entries with their ids, with their target source. */
  upserted: { entry: NormalizedKnowledgeEntry; source: number | { id: string; version: string } }[];
};

/** An issue of a planned change, in the shape validation reports. */
function issue(
  level: "error" | "warning",
  code: KnowledgeIssueCode,
  message: string,
  path: string,
  entryId?: string,
): KnowledgeValidationIssue {
  return { level, code, message, path, ...(entryId === undefined ? {} : { entryId }) };
}

/**
 * Plans an upsert: `input` is a list of sources (`{ id, version?, entries }`: entries go to that source) or a list
 * of entries (each replaces the entry with its id where it lives; new ones go to `options.sourceId`, default the
 * first source). Entries are validated as a build validates them (issue paths point into `input`), plus what
 * involves the rest of the registry: an id that lives in another source, or that differs from an existing id only
 * in Unicode normalization, is an error; a source's version cannot change (use `rebuild`); relations are checked
 * against the registry after the change.
 */
export function planUpsert(
  registry: KnowledgeRegistry,
  input: unknown,
  options: KnowledgeUpsertOptions | undefined,
  fallbackVersion: string,
  removing: ReadonlySet<string> = new Set(),
): PlannedChange {
  const issues: KnowledgeValidationIssue[] = [];
  const refused = (problem: KnowledgeValidationIssue): PlannedChange => ({
    ok: false,
    issues: [problem],
    removed: [],
    upserted: [],
  });
  const inputShape = shapeOf(input);
  if (isUnreadable(inputShape) || inputShape !== "array")
    return refused(
      issue(
        "error",
        "bad-sources",
        `an update must be an array of entries or of sources, got ${describeType(input)}`,
        "update",
      ),
    );
  const items = copyList(input as object, MAX_ENTRIES + 1, true);
  if (!Array.isArray(items))
    return refused(issue("error", "unreadable-input", "the update could not be read", "update"));
  const isSource = (item: unknown): boolean =>
    shapeOf(item) === "record" && shapeOf(readProperty(item as object, "entries")) === "array";
  const sourcesForm = items.length > 0 && items.every(isSource);
  const optionSource = options && typeof options === "object" ? readProperty(options, "sourceId") : undefined;
  if (optionSource !== undefined && (typeof optionSource !== "string" || optionSource === ""))
    return refused(
      issue("error", "bad-field-type", "options.sourceId must be a non-empty string", "options.sourceId"),
    );

  const targets = changeTargets(
    registry,
    items,
    sourcesForm,
    typeof optionSource === "string" ? optionSource : undefined,
    removing,
    issues,
  );
  const normalized = normalizeSources(
    targets.map((target) => ({ id: target.id, version: target.version, entries: target.entries })),
    { manifestVersion: fallbackVersion },
  );
  // Paths of the change's own validation point into the caller's input.
  for (const found of normalized.validation.issues) {
    if (found.code === "broken-relation" || found.code === "broken-parent") continue; // checked below
    const match = found.path?.match(/^sources\[(\d+)\]\.entries\[(\d+)\](.*)$/);
    const target = match ? targets[Number(match[1])] : undefined;
    const path = match && target ? `${target.paths[Number(match[2])]}${match[3]}` : found.path;
    issues.push({ ...found, ...(path === undefined ? {} : { path }) });
  }
  const upserted = admittedEntries(registry, normalized.groups, targets, removing, issues);
  const added = upserted.filter(({ entry }) => !registry.sourceOf.has(entry.id)).length;
  if (registry.sourceOf.size - removing.size + added > MAX_ENTRIES)
    issues.push(issue("error", "limit-exceeded", `the update would exceed ${MAX_ENTRIES} entries`, "update"));
  relationIssues(registry, upserted, removing, issues);
  const ok = !issues.some((found) => found.level === "error");
  return { ok, issues, removed: [], upserted: ok ? upserted : [] };
}

/** The change as sources, with the place in the caller's input of each entry (for issue paths). */
type ChangeTarget = { id: unknown; version: unknown; entries: unknown[]; paths: string[] };

/**
 * The change as sources: one per target source, each with the registry's version when the source exists. Given
 * sources keep their own (a changed version is an issue); given entries go to the source where their id lives,
 * else to `optionSource` or the first source.
 */
function changeTargets(
  registry: KnowledgeRegistry,
  items: unknown[],
  sourcesForm: boolean,
  optionSource: string | undefined,
  removing: ReadonlySet<string>,
  issues: KnowledgeValidationIssue[],
): ChangeTarget[] {
  const targets: ChangeTarget[] = [];
  const targetFor = (id: unknown, version: unknown): ChangeTarget => {
    let target = targets.find((candidate) => candidate.id === id && typeof id === "string");
    if (!target) {
      target = { id, version, entries: [], paths: [] };
      targets.push(target);
    }
    return target;
  };
  if (sourcesForm) {
    items.forEach((item, sourceIndex) => {
      const sourceId = readProperty(item as object, "id");
      const version = readProperty(item as object, "version");
      const existing =
        typeof sourceId === "string" ? registry.sources.find((source) => source.id === sourceId) : undefined;
      if (existing && version !== undefined && version !== existing.version) {
        issues.push(
          issue(
            "error",
            "source-version-changed",
            `source ${JSON.stringify(sourceId)} has version ${JSON.stringify(existing.version)}; an update keeps it (rebuild() to change a version)`,
            `sources[${sourceIndex}].version`,
          ),
        );
      }
      const target =
        targets[
          targets.push({
            id: sourceId,
            version: existing ? existing.version : version,
            entries: [],
            paths: [],
          }) - 1
        ]!;
      const entries = copyList(readProperty(item as object, "entries") as object, MAX_ENTRIES + 1, true);
      if (Array.isArray(entries))
        entries.forEach((entry, entryIndex) => {
          target.entries.push(entry);
          target.paths.push(`sources[${sourceIndex}].entries[${entryIndex}]`);
        });
    });
  } else {
    const fallbackSource =
      (typeof optionSource === "string" ? optionSource : undefined) ?? registry.sources[0]?.id ?? undefined;
    items.forEach((item, entryIndex) => {
      const id = shapeOf(item) === "record" ? readProperty(item as object, "id") : undefined;
      const home = typeof id === "string" && !removing.has(id) ? registry.sourceOf.get(id) : undefined;
      const source =
        typeof optionSource === "string"
          ? optionSource
          : home !== undefined
            ? registry.sources[home]!.id
            : fallbackSource;
      const existing = registry.sources.find((candidate) => candidate.id === source);
      const target = targetFor(source, existing ? existing.version : undefined);
      target.entries.push(item);
      target.paths.push(`entries[${entryIndex}]`);
    });
  }
  return targets;
}

/**
 * The validated entries of the change that the registry admits, with their target source: an id that lives in
 * another source, or that differs from an existing id only in Unicode normalization, is an error instead.
 */
function admittedEntries(
  registry: KnowledgeRegistry,
  groups: readonly NormalizedSourceGroup[],
  targets: readonly ChangeTarget[],
  removing: ReadonlySet<string>,
  issues: KnowledgeValidationIssue[],
): PlannedChange["upserted"] {
  const upserted: PlannedChange["upserted"] = [];
  groups.forEach((group, groupIndex) => {
    const sourceIndex = registry.sources.findIndex((source) => source.id === group.id);
    group.entries.forEach((entry) => {
      const home = removing.has(entry.id) ? undefined : registry.sourceOf.get(entry.id);
      const entryIndex = targets[groupIndex]!.entries.findIndex(
        (item) => shapeOf(item) === "record" && readProperty(item as object, "id") === entry.id,
      );
      const path = targets[groupIndex]!.paths[entryIndex] ?? "update";
      if (home !== undefined && home !== sourceIndex) {
        issues.push(
          issue(
            "error",
            "duplicate-entry-id",
            `entry id ${JSON.stringify(entry.id)} already exists in source ${JSON.stringify(registry.sources[home]!.id)}; remove it there first`,
            `${path}.id`,
            entry.id,
          ),
        );
        return;
      }
      const canonical = entry.id.normalize("NFC");
      const twin =
        canonical !== entry.id && registry.sourceOf.has(canonical)
          ? canonical
          : registry.canonicalTwins.get(canonical);
      if (twin !== undefined && twin !== entry.id) {
        issues.push(
          issue(
            "error",
            "duplicate-entry-id",
            `entry id ${JSON.stringify(entry.id)} differs from ${JSON.stringify(twin)} only in Unicode normalization`,
            `${path}.id`,
            entry.id,
          ),
        );
        return;
      }
      upserted.push({
        entry,
        source: sourceIndex >= 0 ? sourceIndex : { id: group.id, version: group.version },
      });
    });
  });
  return upserted;
}

/** Warnings for the relations of the changed entries that name no entry of the registry after the change. */
function relationIssues(
  registry: KnowledgeRegistry,
  upserted: PlannedChange["upserted"],
  removing: ReadonlySet<string>,
  issues: KnowledgeValidationIssue[],
): void {
  const finalIds = new Set(upserted.map(({ entry }) => entry.id));
  const exists = (id: string): boolean =>
    finalIds.has(id) || (registry.sourceOf.has(id) && !removing.has(id));
  for (const { entry } of upserted) {
    entry.relatedEntryIds.forEach((relatedId, index) => {
      if (!exists(relatedId))
        issues.push(
          issue(
            "warning",
            "broken-relation",
            `entry ${JSON.stringify(entry.id)} relates to missing entry ${JSON.stringify(relatedId)}`,
            `${entry.id}.relatedEntryIds[${index}]`,
            entry.id,
          ),
        );
    });
    if (entry.parentEntryId !== undefined && !exists(entry.parentEntryId))
      issues.push(
        issue(
          "warning",
          "broken-parent",
          `entry ${JSON.stringify(entry.id)} has missing parent entry ${JSON.stringify(entry.parentEntryId)}`,
          `${entry.id}.parentEntryId`,
          entry.id,
        ),
      );
  }
}

/** Plans a removal: `ids` must be an array of strings; ids that are not in the registry are reported as warnings. */
export function planRemove(registry: KnowledgeRegistry, ids: unknown): PlannedChange {
  const shape = shapeOf(ids);
  if (isUnreadable(shape) || shape !== "array")
    return {
      ok: false,
      issues: [
        issue(
          "error",
          "bad-field-type",
          `ids must be an array of entry ids, got ${describeType(ids)}`,
          "ids",
        ),
      ],
      removed: [],
      upserted: [],
    };
  const list = copyList(ids as object, MAX_ENTRIES + 1, true);
  const issues: KnowledgeValidationIssue[] = [];
  const removed: string[] = [];
  if (Array.isArray(list))
    list.forEach((id, index) => {
      if (typeof id !== "string")
        issues.push(
          issue(
            "error",
            "bad-field-type",
            `ids[${index}] must be a string, got ${describeType(id)}`,
            `ids[${index}]`,
          ),
        );
      else if (!registry.sourceOf.has(id))
        issues.push(
          issue("warning", "unknown-entry-id", `no entry has id ${JSON.stringify(id)}`, `ids[${index}]`, id),
        );
      else if (!removed.includes(id)) removed.push(id);
    });
  const ok = !issues.some((found) => found.level === "error");
  return { ok, issues, removed: ok ? removed : [], upserted: [] };
}

/**
 * Plans removals and upserts as one change (applied atomically): `remove` ids go first, so an entry can move to
 * another source by removing and upserting it in the same change.
 */
export function planUpdate(
  registry: KnowledgeRegistry,
  changes: { upsert?: unknown; remove?: unknown },
  options: KnowledgeUpsertOptions | undefined,
  fallbackVersion: string,
): PlannedChange {
  const removal = changes.remove === undefined ? null : planRemove(registry, changes.remove);
  const removing = new Set(removal?.removed ?? []);
  const upsert =
    changes.upsert === undefined
      ? null
      : planUpsert(registry, changes.upsert, options, fallbackVersion, removing);
  const issues = [...(removal?.issues ?? []), ...(upsert?.issues ?? [])];
  const ok = !issues.some((found) => found.level === "error");
  return {
    ok,
    issues,
    removed: ok ? [...removing] : [],
    upserted: ok ? (upsert?.upserted ?? []) : [],
  };
}
