/**
 * Limits that matter at millions of entries (issue 14), with small stand-ins: the same code, with the constants
 * mocked so that the tests do not need millions of entries. MAX_ENTRIES (2,000,000) → 1,000; the entries all cached
 * snapshots may hold together (2,000,000) → 5; the bytes of cached eligibility masks per snapshot (32 MiB) → 10.
 */
import { describe, expect, it, vi } from "vitest";

vi.mock("../../src/knowledge/defaults.js", async (importOriginal) => ({
  ...(await importOriginal<typeof import("../../src/knowledge/defaults.js")>()),
  MAX_ENTRIES: 1_000,
  KNOWLEDGE_INDEX_CACHE_MAX_ENTRIES: 5,
  ELIGIBILITY_CACHE_MAX_BYTES: 10,
}));

const {
  buildIndexSnapshot,
  clearKnowledgeIndexCache,
  getKnowledgeIndexCacheSize,
  getOrBuildKnowledgeIndexSnapshot,
  normalizeAndValidate,
  MAX_ENTRIES,
  resolveRetrieval,
  retrieve,
} = await import("../../src/index.js");
const { getCompiledSnapshot } = await import("../../src/knowledge/knowledgeIndex.js");

const base = { title: "Title", summary: "Summary", domain: "d" };

describe("the entry cap", () => {
  it("more than MAX_ENTRIES entries is a limit-exceeded error naming the first entry past it", () => {
    expect(MAX_ENTRIES).toBe(1_000);
    const entries = Array.from({ length: MAX_ENTRIES + 1 }, (_, index) => ({ ...base, id: `e${index}` }));
    const { validation } = normalizeAndValidate([{ id: "s", version: "1", entries }]);
    expect(validation.ok).toBe(false);
    expect(validation.issues).toContainEqual(
      expect.objectContaining({ code: "limit-exceeded", path: `sources[0].entries[${MAX_ENTRIES}]` }),
    );
  });

  it("exactly MAX_ENTRIES entries, also across sources, are accepted", () => {
    const entries = Array.from({ length: MAX_ENTRIES }, (_, index) => ({ ...base, id: `e${index}` }));
    const { validation } = normalizeAndValidate([
      { id: "a", version: "1", entries: entries.slice(0, 600) },
      { id: "b", version: "1", entries: entries.slice(600) },
    ]);
    expect(validation.issues.filter((issue) => issue.code === "limit-exceeded")).toEqual([]);
    const over = normalizeAndValidate([
      { id: "a", version: "1", entries: entries.slice(0, 600) },
      { id: "b", version: "1", entries: [...entries.slice(600), { ...base, id: "one-more" }] },
    ]);
    expect(over.validation.issues.some((issue) => issue.code === "limit-exceeded")).toBe(true);
  });
});

describe("caches bounded by entries, not only by count", () => {
  const source = (id: string, count: number) => ({
    id,
    version: "1",
    entries: Array.from({ length: count }, (_, index) => ({
      ...base,
      id: `${id}-${index}`,
      integrations: [],
      kind: "text" as const,
    })),
  });

  it("the process cache drops older snapshots once they hold more entries together than the bound", async () => {
    clearKnowledgeIndexCache();
    const first = await getOrBuildKnowledgeIndexSnapshot([source("a", 3)]);
    expect(first.validation.issues.filter((issue) => issue.level === "error")).toEqual([]);
    expect(getKnowledgeIndexCacheSize()).toBe(1);
    // 3 + 3 > 5: the older one goes, the new one stays (even alone over the bound).
    await getOrBuildKnowledgeIndexSnapshot([source("b", 3)]);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(getKnowledgeIndexCacheSize()).toBe(1);
    expect((await getOrBuildKnowledgeIndexSnapshot([source("b", 3)])).cacheHit).toBe(true);
    expect((await getOrBuildKnowledgeIndexSnapshot([source("a", 3)])).cacheHit).toBe(false);
    await getOrBuildKnowledgeIndexSnapshot([source("c", 1)]);
    await getOrBuildKnowledgeIndexSnapshot([source("d", 1)]);
    await new Promise((resolve) => setTimeout(resolve, 0));
    // a (3) + c (1) + d (1) = 5: all kept.
    expect(getKnowledgeIndexCacheSize()).toBe(3);
    clearKnowledgeIndexCache();
  });

  it("fewer eligibility masks are cached per snapshot when each is large (never fewer than 4)", () => {
    const entries = normalizeAndValidate([
      {
        id: "s",
        version: "1",
        entries: Array.from({ length: 3 }, (_, index) => ({
          ...base,
          id: `e${index}`,
          integrations: [`i${index}`],
        })),
      },
    ]).entries;
    const snapshot = buildIndexSnapshot(entries);
    const resolved = resolveRetrieval();
    for (let scope = 0; scope < 10; scope++) {
      retrieve(snapshot, { query: "title", recentTurns: [], enabledIntegrations: [`x${scope}`] }, resolved);
    }
    // floor(10 bytes / 3 entries) = 3 masks, raised to the minimum of 4 (the default would keep 10 of 64).
    expect(getCompiledSnapshot(snapshot)!.eligibilityCache.size).toBe(4);
  });

  it("a full cache's least recently used mask is reused for a new scope, which selects as a fresh snapshot does", () => {
    // Fails when each new scope allocates its own mask (10 arrays seen, not 4), or when a reused mask keeps the
    // evicted scope's eligible entries.
    const sources = () => [
      {
        id: "s",
        version: "1",
        entries: Array.from({ length: 6 }, (_, index) => ({
          ...base,
          id: `e${index}`,
          // e0, e1 are in every scope; each of e2..e5 only where its integration is enabled.
          ...(index >= 2 ? { integrations: [`i${index}`] } : {}),
        })),
      },
    ];
    const snapshot = buildIndexSnapshot(normalizeAndValidate(sources()).entries);
    const resolved = resolveRetrieval();
    const cache = getCompiledSnapshot(snapshot)!.eligibilityCache;
    const masks = new Set<Uint8Array>();
    const selected = (target: typeof snapshot, enabledIntegrations: string[]) =>
      retrieve(target, { query: "title", recentTurns: [], enabledIntegrations }, resolved)
        .primary.map((entry) => entry.id)
        .sort();
    for (let round = 0; round < 2; round++) {
      for (let scope = 0; scope < 10; scope++) {
        // Ten scopes, each enabling one of e2..e5 (and an integration no entry has, to tell them apart).
        const enabled = [`i${2 + (scope % 4)}`, `x${scope}`];
        const fresh = buildIndexSnapshot(normalizeAndValidate(sources()).entries);
        expect(selected(snapshot, enabled)).toEqual(selected(fresh, enabled));
        expect(selected(snapshot, enabled)).toHaveLength(3);
        for (const key of cache.keys()) masks.add(cache.peek(key)!);
      }
    }
    expect(cache.size).toBe(4);
    expect(masks.size).toBe(4);
  });
});
