/** A generation's searcher sizes the backend's default posting cache for that generation (`defaultPostingCacheBytes`). */
import { describe, expect, it } from "vitest";
import type { PostgresBackend } from "./backend.js";
import { resolveIndexParameters } from "./indexData.js";
import { defaultPostingCacheBytes, PostingCache } from "./postingCache.js";
import { PostgresSearcher } from "./searcher.js";
import { generationTables } from "./sql.js";

/** A searcher of a generation of `entryCount` entries over a backend holding only `cache` (no statement is run). */
function searcherOf(cache: PostingCache, entryCount: number, generation = 1): PostgresSearcher {
  const backend = { postingCache: cache, schema: "lexground" } as unknown as PostgresBackend;
  return new PostgresSearcher(
    backend,
    {
      generation,
      entryCount,
      contentKey: `k${generation}`,
      parameters: resolveIndexParameters({}),
      maxPhraseWords: 4,
      layout: 1,
      frequent: null,
    },
    generationTables("lexground", generation),
  );
}

describe("the posting cache's default follows the generation served", () => {
  it("is 64 MiB for 100,000 entries, 24 MiB once a million-entry generation is served, and a given size stays", () => {
    const cache = new PostingCache("auto");
    searcherOf(cache, 100_000);
    expect(cache.limitBytes).toBe(64 * 1024 ** 2);
    searcherOf(cache, 1_000_000, 2);
    expect(cache.limitBytes).toBe(defaultPostingCacheBytes(1_000_000));
    expect(cache.limitBytes).toBe(24 * 1024 ** 2);
    const given = new PostingCache(64 * 1024 ** 2);
    searcherOf(given, 1_000_000);
    expect(given.limitBytes).toBe(64 * 1024 ** 2);
  });
});
