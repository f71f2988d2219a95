/**
 * Process-level cache of built snapshots, shared by every engine (and client) in the process: identical source
 * sets with identical index parameters build once. Bounded (LRU, {@link KNOWLEDGE_INDEX_CACHE_LIMIT}),
 * single-flight (concurrent identical builds share one promise), keyed by a content hash so any change to the
 * effective content gives a new key. Validation failures are cached like successes (they are a pure function of
 * the content); builds that throw are not.
 */
import type {
  KnowledgeFieldWeights,
  KnowledgeIndexSnapshot,
  KnowledgeSource,
  KnowledgeValidationResult,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { loadIndexArtifact, openIndexArtifact } from "./artifact.js";
import { readIndexArtifactHeaderFrom } from "./artifactHeader.js";
import type { ArtifactIndexOptions } from "./artifactLexical.js";
import { serializeIndexSnapshot, serializeIndexSnapshotChunks } from "./artifactWriter.js";
import {
  CACHE_SCHEMA_VERSION,
  DEFAULT_ANALYZER,
  DEFAULT_BM25_B,
  DEFAULT_BM25_K1,
  DEFAULT_SCORING_MODE,
  FALLBACK_VERSION,
  KNOWLEDGE_FIELD_NAMES,
  KNOWLEDGE_INDEX_CACHE_LIMIT,
  KNOWLEDGE_INDEX_CACHE_MAX_ENTRIES,
  toIndexBuildOptions,
} from "./defaults.js";
import { snapshotSourceArrays } from "./hostValues.js";
import {
  compareCodeUnits,
  type KnowledgeIndexBuildOptions,
  resolveFieldWeights,
  startIndexBuild,
} from "./knowledgeIndex.js";
import { LruCache } from "./lruCache.js";
import { type NormalizedSourceGroup, normalizeSources, normalizeSourcesAsync } from "./resolve.js";
import { yieldToEventLoop } from "./runtime.js";
import { createSha256 } from "./sha256.js";
import { runSteps, runStepsYielding } from "./steps.js";

export { KNOWLEDGE_INDEX_CACHE_LIMIT } from "./defaults.js";

/** What the cache holds per key: the snapshot (null when validation failed) and the validation result. */
export type KnowledgeIndexBuildResult = {
  snapshot: KnowledgeIndexSnapshot | null;
  validation: KnowledgeValidationResult;
  /** The cache key of this build. */
  cacheKey: string;
  /** How the snapshot was produced: indexed here, or loaded from a prebuilt artifact. */
  origin: "built" | "artifact";
  /** Why a given artifact was not used, when it was not. */
  notes: string[];
  /** The validated entries by source (what incremental updates start from). */
  groups?: readonly NormalizedSourceGroup[];
};

/**
 * Where to find a prebuilt index artifact: its bytes (any runtime), or a file path (read only in Node; elsewhere the
 * artifact is reported as not used and the index is built from the sources).
 */
export type KnowledgeIndexArtifactSource = string | Uint8Array;

const cache = new LruCache<string, Promise<KnowledgeIndexBuildResult>>(KNOWLEDGE_INDEX_CACHE_LIMIT);
/** Entry counts of the cached snapshots that have settled (for the bound on entries held). */
const cachedEntryCounts = new Map<string, number>();

/**
 * Drops the least recently used snapshots while the cached ones hold more than
 * {@link KNOWLEDGE_INDEX_CACHE_MAX_ENTRIES} entries together; the one just settled stays.
 */
function trimCacheByEntries(
  cacheKey: string,
  promise: Promise<KnowledgeIndexBuildResult>,
  result: KnowledgeIndexBuildResult,
): void {
  if (cache.peek(cacheKey) !== promise) return;
  cachedEntryCounts.set(cacheKey, result.snapshot?.entryCount ?? 0);
  let total = 0;
  for (const [key, count] of cachedEntryCounts) {
    if (cache.peek(key) === undefined) cachedEntryCounts.delete(key);
    else total += count;
  }
  for (const key of [...cache.keys()]) {
    if (total <= KNOWLEDGE_INDEX_CACHE_MAX_ENTRIES) break;
    if (key === cacheKey) continue;
    total -= cachedEntryCounts.get(key) ?? 0;
    cachedEntryCounts.delete(key);
    cache.delete(key);
  }
}

/** Milliseconds of synchronous indexing between yields to the event loop during a cached (async) build. */
const BUILD_SLICE_MS = 8;

/**
 * A normalized entry as the cache key hashes it: JSON with its fields in code-unit order, the text a generic
 * recursive serializer with sorted keys gives (NeuroLink's form), written as one native `JSON.stringify` of an
 * object literal (string keys keep insertion order; an absent `parentEntryId` is left out). Hashing every entry is
 * the main cost of a cache key, and both the generic form and a loop over a field list are slower than this
 * literal. `satisfies` makes the compiler reject a field of `NormalizedKnowledgeEntry` left out here; a test
 * checks the text against the generic serializer (`test/support/stableStringify.ts`).
 */
export function serializeEntry(entry: NormalizedKnowledgeEntry): string {
  return JSON.stringify({
    aliases: entry.aliases,
    body: entry.body,
    domain: entry.domain,
    id: entry.id,
    integrations: entry.integrations,
    keywords: entry.keywords,
    kind: entry.kind,
    parentEntryId: entry.parentEntryId,
    relatedEntryIds: entry.relatedEntryIds,
    status: entry.status,
    summary: entry.summary,
    title: entry.title,
    version: entry.version,
  } satisfies Record<keyof NormalizedKnowledgeEntry, unknown>);
}

/**
 * The cache key of a normalized source set: schema version, resolved weights, non-default index parameters, then
 * per source (in the given order) its percent-encoded id and version, entry count and a SHA-256 over its entries
 * sorted by id in code-unit order (so entry order does not matter, and no locale can change the key).
 *
 * Two forms: lexground's `(groups, options)`, with the groups of `normalizeSources`, and NeuroLink's positional
 * `(sources, fallbackVersion, fieldWeights)`, with the sources as a host passes them (each source's version is
 * `source.version ?? fallbackVersion`). Both give the same key for the same content. Never throws.
 */
export function buildKnowledgeIndexCacheKey(
  groups: readonly NormalizedSourceGroup[],
  options?: Partial<KnowledgeFieldWeights> | KnowledgeIndexBuildOptions,
): string;
export function buildKnowledgeIndexCacheKey(
  sources: readonly KnowledgeSource[],
  fallbackVersion: string,
  fieldWeights?: Partial<KnowledgeFieldWeights>,
): string;
export function buildKnowledgeIndexCacheKey(
  sourcesOrGroups: readonly NormalizedSourceGroup[] | readonly KnowledgeSource[],
  optionsOrFallbackVersion?: Partial<KnowledgeFieldWeights> | KnowledgeIndexBuildOptions | string,
  fieldWeights?: Partial<KnowledgeFieldWeights>,
): string {
  const [groups, options] = keyArguments(sourcesOrGroups, optionsOrFallbackVersion, fieldWeights);
  return runSteps(cacheKeySteps(groups, options));
}

/** Reads both forms of {@link buildKnowledgeIndexCacheKey}'s arguments as groups and options. */
function keyArguments(
  sourcesOrGroups: unknown,
  optionsOrFallbackVersion: unknown,
  fieldWeights: unknown,
): [readonly NormalizedSourceGroup[], unknown] {
  if (typeof optionsOrFallbackVersion === "string") {
    // NeuroLink's positional form: host sources, validated here as the engine would.
    const { groups } = normalizeSources(sourcesOrGroups, { manifestVersion: optionsOrFallbackVersion });
    return [groups, fieldWeights];
  }
  return [Array.isArray(sourcesOrGroups) ? sourcesOrGroups : [], optionsOrFallbackVersion];
}

/** {@link buildKnowledgeIndexCacheKey} that yields to the event loop every `sliceMs` of hashing. */
export async function buildKnowledgeIndexCacheKeyAsync(
  groups: readonly NormalizedSourceGroup[],
  options?: Partial<KnowledgeFieldWeights> | KnowledgeIndexBuildOptions,
  sliceMs = BUILD_SLICE_MS,
): Promise<string> {
  return runStepsYielding(cacheKeySteps(groups, options), sliceMs);
}

/** Hashing entries is the main cost of a key; a generator lets a caller pause between entries. */
function* cacheKeySteps(
  groups: readonly NormalizedSourceGroup[],
  options?: unknown,
): Generator<void, string, void> {
  const resolvedOptions = toIndexBuildOptions(options);
  const weights = resolveFieldWeights(resolvedOptions.fieldWeights);
  const parts = [
    CACHE_SCHEMA_VERSION,
    `weights=${KNOWLEDGE_FIELD_NAMES.map((field) => `${field}=${weights[field]}`).join(",")}`,
  ];
  const k1 = resolvedOptions.k1 ?? DEFAULT_BM25_K1;
  const b = resolvedOptions.b ?? DEFAULT_BM25_B;
  const analyzer = resolvedOptions.analyzer ?? DEFAULT_ANALYZER;
  const scoring = resolvedOptions.scoring ?? DEFAULT_SCORING_MODE;
  if (
    k1 !== DEFAULT_BM25_K1 ||
    b !== DEFAULT_BM25_B ||
    analyzer !== DEFAULT_ANALYZER ||
    scoring !== DEFAULT_SCORING_MODE
  ) {
    parts.push(`params=k1=${k1},b=${b},analyzer=${analyzer},scoring=${scoring}`);
  }
  for (const group of groups) {
    const hash = createSha256();
    // Keys in sorted order and both values strings: the same text the generic sorted-key serializer gives.
    hash.update(JSON.stringify({ id: group.id, version: group.version }));
    const sorted = group.entries.slice().sort((left, right) => compareCodeUnits(left.id, right.id));
    for (let index = 0; index < sorted.length; index++) {
      hash.update("\n");
      hash.update(serializeEntry(sorted[index]!));
      if ((index & 255) === 255) yield;
    }
    parts.push(
      [
        encodeURIComponent(group.id),
        encodeURIComponent(group.version),
        String(group.entries.length),
        hash.digestHex(),
      ].join(":"),
    );
  }
  return parts.join("|");
}

/**
 * Validates the sources and returns the cached snapshot for their content, building it (asynchronously, yielding
 * to the event loop every few milliseconds) on a miss. Never rejects for bad sources: validation problems come
 * back in `validation` with a null snapshot. Rejects only when the index build itself fails (for example bad
 * index parameters), and such a failure is not cached.
 */
export async function getOrBuildKnowledgeIndexSnapshot(
  sources: unknown,
  options?: Partial<KnowledgeFieldWeights> | KnowledgeIndexBuildOptions,
  fallbackVersion: string = FALLBACK_VERSION,
  artifact?: KnowledgeIndexArtifactSource,
): Promise<KnowledgeIndexBuildResult & { cacheHit: boolean }> {
  // The arrays are copied before the first yield (a host may clear or reuse them right after constructing an
  // engine); validation and hashing then yield to the event loop, so a large registry never stalls a server.
  const normalized = await normalizeSourcesAsync(snapshotSourceArrays(sources), {
    manifestVersion: fallbackVersion,
  });
  const cacheKey = await buildKnowledgeIndexCacheKeyAsync(normalized.groups, options);
  const existing = cache.get(cacheKey);
  if (existing) {
    return { ...(await existing), cacheHit: true };
  }
  const promise = (async (): Promise<KnowledgeIndexBuildResult> => {
    if (!normalized.validation.ok) {
      return { snapshot: null, validation: normalized.validation, cacheKey, origin: "built", notes: [] };
    }
    const groups = normalized.groups;
    const notes: string[] = [];
    if (artifact !== undefined) {
      try {
        const { snapshot } = await loadIndexArtifact(artifact, { cacheKey });
        return { snapshot, validation: normalized.validation, cacheKey, origin: "artifact", notes, groups };
      } catch (caught) {
        const reason = caught instanceof Error ? caught.message : String(caught);
        notes.push(`prebuilt index not used (${reason}); built from the sources instead`);
      }
    }
    const build = startIndexBuild(normalized.entries, toIndexBuildOptions(options));
    while (!build.step(BUILD_SLICE_MS)) await yieldToEventLoop();
    return {
      snapshot: build.finish(),
      validation: normalized.validation,
      cacheKey,
      origin: "built",
      notes,
      groups,
    };
  })();
  return { ...(await remember(cacheKey, promise)), cacheHit: false };
}

/**
 * Caches a pending build or load under its key; once it settles, a success trims the cache to its entry budget
 * and a failure is forgotten (unless a newer promise took the key), so the next call tries again.
 */
function remember(
  cacheKey: string,
  promise: Promise<KnowledgeIndexBuildResult>,
): Promise<KnowledgeIndexBuildResult> {
  cache.set(cacheKey, promise);
  promise.then(
    (result) => trimCacheByEntries(cacheKey, promise, result),
    () => {
      if (cache.peek(cacheKey) === promise) cache.delete(cacheKey);
    },
  );
  return promise;
}

/** The index settings of build options, resolved as the cache key resolves them. */
export function resolveArtifactIndexOptions(options?: unknown): ArtifactIndexOptions {
  const resolvedOptions = toIndexBuildOptions(options);
  return {
    fieldWeights: { ...resolveFieldWeights(resolvedOptions.fieldWeights) },
    k1: resolvedOptions.k1 ?? DEFAULT_BM25_K1,
    b: resolvedOptions.b ?? DEFAULT_BM25_B,
    analyzer: resolvedOptions.analyzer ?? DEFAULT_ANALYZER,
    scoring: resolvedOptions.scoring ?? DEFAULT_SCORING_MODE,
  };
}

/**
 * Loads a self-contained index artifact on its own (no sources): nothing is validated or hashed, the artifact's
 * checksums vouch for its integrity and its stored content key names its content. Its index settings must equal
 * `options` (an `options-mismatch` otherwise). Shares the process cache with builds: an artifact whose content
 * key is cached already (built from the same sources, or loaded before) is not loaded again. Rejects with a
 * {@link KnowledgeArtifactError} when the artifact cannot be used.
 */
export async function getOrLoadKnowledgeIndexArtifact(
  artifact: KnowledgeIndexArtifactSource,
  options?: Partial<KnowledgeFieldWeights> | KnowledgeIndexBuildOptions,
): Promise<KnowledgeIndexBuildResult & { cacheHit: boolean }> {
  const expectedOptions = resolveArtifactIndexOptions(options);
  // A file is opened once: its header names the content key (the cache's), the rest is read only on a miss.
  const opened =
    typeof artifact === "string" ? openIndexArtifact(artifact, { options: expectedOptions }) : null;
  const header = opened ? opened.header : readIndexArtifactHeaderFrom(artifact, { options: expectedOptions });
  const cacheKey = header.cacheKey;
  const existing = cache.get(cacheKey);
  if (existing) {
    let result: KnowledgeIndexBuildResult;
    try {
      result = await existing;
    } catch (caught) {
      opened?.close();
      throw caught;
    }
    if (result.snapshot) {
      opened?.close();
      return { ...result, cacheHit: true };
    }
  }
  const expected = { cacheKey, options: expectedOptions };
  const promise = (opened ? opened.load(expected) : loadIndexArtifact(artifact, expected)).then(
    ({ snapshot }): KnowledgeIndexBuildResult => ({
      snapshot,
      validation: { ok: true, issues: [] },
      cacheKey,
      origin: "artifact",
      notes: [],
    }),
  );
  return { ...(await remember(cacheKey, promise)), cacheHit: false };
}

/**
 * Builds (or takes from the cache) the snapshot of `sources` and serializes it as an index artifact tagged with
 * the cache key. Rejects with the validation issues' summary when the sources are invalid.
 */
export async function buildIndexArtifact(
  sources: unknown,
  options?: Partial<KnowledgeFieldWeights> | KnowledgeIndexBuildOptions,
  fallbackVersion: string = FALLBACK_VERSION,
  artifactOptions: { includeEntries?: boolean } = {},
): Promise<Uint8Array> {
  const result = await getOrBuildKnowledgeIndexSnapshot(sources, options, fallbackVersion);
  if (!result.snapshot) {
    const errors = result.validation.issues.filter((issue) => issue.level === "error");
    throw new Error(
      `cannot build an index artifact: ${errors.length} validation error(s), first: ${errors[0]?.message}`,
    );
  }
  return serializeIndexSnapshot(result.snapshot, result.cacheKey, artifactOptions);
}

/**
 * {@link buildIndexArtifact} as pieces to write one after the other (see `serializeIndexSnapshotChunks`), for
 * artifacts of any size (one buffer stops at 4 GiB: about a million entries of the synthetic benchmark).
 */
export async function buildIndexArtifactChunks(
  sources: unknown,
  options?: Partial<KnowledgeFieldWeights> | KnowledgeIndexBuildOptions,
  fallbackVersion: string = FALLBACK_VERSION,
): Promise<Uint8Array[]> {
  const result = await getOrBuildKnowledgeIndexSnapshot(sources, options, fallbackVersion);
  if (!result.snapshot) {
    const errors = result.validation.issues.filter((issue) => issue.level === "error");
    throw new Error(
      `cannot build an index artifact: ${errors.length} validation error(s), first: ${errors[0]?.message}`,
    );
  }
  return serializeIndexSnapshotChunks(result.snapshot, result.cacheKey);
}

/** Removes every cached snapshot (for tests and for hosts that want to release memory). */
export function clearKnowledgeIndexCache(): void {
  cache.clear();
  cachedEntryCounts.clear();
}

/** Number of cached builds. */
export function getKnowledgeIndexCacheSize(): number {
  return cache.size;
}
