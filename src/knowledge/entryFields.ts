/**
 * One entry: its fields read once from the host (`snapshotEntry`), each validated with its issues
 * (`validateEntry`), and the defaults applied (`resolveEntry`). The walk over sources and ids is in `resolve.ts`.
 */
import type {
  KnowledgeEntryInput,
  KnowledgeIssueCode,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import {
  DEFAULT_ENTRY_KIND,
  DEFAULT_ENTRY_STATUS,
  KNOWLEDGE_ENTRY_FIELDS,
  KNOWLEDGE_ENTRY_KINDS,
  KNOWLEDGE_STATUSES,
  MAX_ALIASES_PER_ENTRY,
  MAX_BODY_CHARS,
  MAX_FIELD_CHARS,
  MAX_KEYWORDS_PER_ENTRY,
  MAX_RELATIONS_PER_ENTRY,
} from "./defaults.js";
import {
  copyList,
  describeType,
  isOversized,
  isUnreadable,
  readProperty,
  shapeOf,
  UnreadableValue,
} from "./hostValues.js";
import { phraseKey } from "./normalize.js";
import {
  type EntryContext,
  error,
  mustBe,
  quote,
  reportUnreadable,
  tooManyCharacters,
  tooManyItems,
  unreadableField,
  warning,
} from "./validationIssues.js";

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

/** A list field read once: a plain copy when it is an array, else the value as read. */
function readList(input: object, field: string, cap: number): unknown {
  const value = readProperty(input, field);
  const shape = shapeOf(value);
  if (isUnreadable(shape)) return shape;
  return shape === "array" ? copyList(value as object, cap) : value;
}

/** The known fields of one entry, each read once, lists copied; and its own keys (for unknown-field warnings). */
export type EntrySnapshot = { fields: Record<string, unknown>; keys: string[] | UnreadableValue };

export function snapshotEntry(input: object): EntrySnapshot {
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

/** Validates one entry's fields (its id is already admitted) and returns the normalized entry. */
export function validateEntry(
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
