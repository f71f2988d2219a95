/**
 * Process-level cache of built snapshots, shared by every engine (and client) in the process: identical source
 * sets with identical index parameters build once. Bounded (LRU, {@link KNOWLEDGE_INDEX_CACHE_LIMIT}),
 * single-flight (concurrent identical builds share one promise), keyed by a content hash so any change to the
 * effective content gives a new key. Validation failures are cached like successes (they are a pure function of
 * the content); builds that throw are not.
 */
import { createHash } from "node:crypto";
import type {
  KnowledgeFieldWeights,
  KnowledgeIndexSnapshot,
  KnowledgeValidationResult,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import {
  CACHE_SCHEMA_VERSION,
  DEFAULT_BM25_B,
  DEFAULT_BM25_K1,
  FALLBACK_VERSION,
  KNOWLEDGE_FIELD_NAMES,
  KNOWLEDGE_INDEX_CACHE_LIMIT,
} from "./defaults.js";
import {
  compareCodeUnits,
  type KnowledgeIndexBuildOptions,
  resolveFieldWeights,
  startIndexBuild,
} from "./knowledgeIndex.js";
import { type NormalizedSourceGroup, normalizeSources } from "./resolve.js";

export { KNOWLEDGE_INDEX_CACHE_LIMIT } from "./defaults.js";

/** What the cache holds per key: the snapshot (null when validation failed) and the validation result. */
export type KnowledgeIndexBuildResult = {
  snapshot: KnowledgeIndexSnapshot | null;
  validation: KnowledgeValidationResult;
  /** The cache key of this build. */
  cacheKey: string;
};

const cache = new Map<string, Promise<KnowledgeIndexBuildResult>>();

/** Milliseconds of synchronous indexing between yields to the event loop during a cached (async) build. */
const BUILD_SLICE_MS = 8;

/** JSON with object keys sorted recursively; `undefined` is written as the bare word (NeuroLink's convention). */
function stableStringify(value: unknown): string {
  if (value === undefined) return "undefined";
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(",")}]`;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort(compareCodeUnits);
  return `{${keys.map((key) => `${JSON.stringify(key)}:${stableStringify(record[key])}`).join(",")}}`;
}

function normalizeOptions(
  options?: Partial<KnowledgeFieldWeights> | KnowledgeIndexBuildOptions,
): KnowledgeIndexBuildOptions {
  if (options && ["fieldWeights", "k1", "b", "analyzer", "scoring"].some((key) => key in options)) {
    return options as KnowledgeIndexBuildOptions;
  }
  return { fieldWeights: options as Partial<KnowledgeFieldWeights> | undefined };
}

/**
 * The cache key of a normalized source set: schema version, resolved weights, non-default index parameters, then
 * per source (in the given order) its percent-encoded id and version, entry count and a SHA-256 over its entries
 * sorted by id in code-unit order (so entry order does not matter, and no locale can change the key).
 */
export function buildKnowledgeIndexCacheKey(
  groups: readonly NormalizedSourceGroup[],
  options?: Partial<KnowledgeFieldWeights> | KnowledgeIndexBuildOptions,
): string {
  const resolvedOptions = normalizeOptions(options);
  const weights = resolveFieldWeights(resolvedOptions.fieldWeights);
  const parts = [
    CACHE_SCHEMA_VERSION,
    `weights=${KNOWLEDGE_FIELD_NAMES.map((field) => `${field}=${weights[field]}`).join(",")}`,
  ];
  const k1 = resolvedOptions.k1 ?? DEFAULT_BM25_K1;
  const b = resolvedOptions.b ?? DEFAULT_BM25_B;
  const analyzer = resolvedOptions.analyzer ?? "none";
  const scoring = resolvedOptions.scoring ?? "sum";
  if (k1 !== DEFAULT_BM25_K1 || b !== DEFAULT_BM25_B || analyzer !== "none" || scoring !== "sum") {
    parts.push(`params=k1=${k1},b=${b},analyzer=${analyzer},scoring=${scoring}`);
  }
  for (const group of groups) {
    const hash = createHash("sha256");
    hash.update(stableStringify({ id: group.id, version: group.version }));
    const sorted = group.entries.slice().sort((left, right) => compareCodeUnits(left.id, right.id));
    for (const entry of sorted) {
      hash.update("\n");
      hash.update(stableStringify(entry satisfies NormalizedKnowledgeEntry));
    }
    parts.push(
      [
        encodeURIComponent(group.id),
        encodeURIComponent(group.version),
        String(group.entries.length),
        hash.digest("hex"),
      ].join(":"),
    );
  }
  return parts.join("|");
}

function touch(key: string, promise: Promise<KnowledgeIndexBuildResult>): void {
  cache.delete(key);
  cache.set(key, promise);
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
): Promise<KnowledgeIndexBuildResult & { cacheHit: boolean }> {
  const normalized = normalizeSources(sources, { manifestVersion: fallbackVersion });
  const cacheKey = buildKnowledgeIndexCacheKey(normalized.groups, options);
  const existing = cache.get(cacheKey);
  if (existing) {
    touch(cacheKey, existing);
    return { ...(await existing), cacheHit: true };
  }
  const promise = (async (): Promise<KnowledgeIndexBuildResult> => {
    if (!normalized.validation.ok) return { snapshot: null, validation: normalized.validation, cacheKey };
    const build = startIndexBuild(normalized.entries, normalizeOptions(options));
    while (!build.step(BUILD_SLICE_MS)) await new Promise<void>((resolve) => setImmediate(resolve));
    return { snapshot: build.finish(), validation: normalized.validation, cacheKey };
  })();
  cache.set(cacheKey, promise);
  while (cache.size > KNOWLEDGE_INDEX_CACHE_LIMIT) cache.delete(cache.keys().next().value!);
  promise.catch(() => {
    if (cache.get(cacheKey) === promise) cache.delete(cacheKey);
  });
  return { ...(await promise), cacheHit: false };
}

/** Removes every cached snapshot (for tests and for hosts that want to release memory). */
export function clearKnowledgeIndexCache(): void {
  cache.clear();
}

/** Number of cached builds. */
export function getKnowledgeIndexCacheSize(): number {
  return cache.size;
}

/** Cached keys, least recently used first (for diagnostics and tests). */
export function getKnowledgeIndexCacheKeys(): string[] {
  return [...cache.keys()];
}
