/**
 * Determinism (checklist row 38). Building the same sources twice (from independent copies) gives the same cache key
 * and byte-identical index artifacts; the same entries in another order give the same key and the same results
 * (ids, scores to the bit, rendered block); an artifact loaded back retrieves exactly like the built snapshot and
 * serializes to the same bytes again.
 */
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import {
  assembleKnowledgeContext,
  buildIndexSnapshot,
  buildKnowledgeIndexCacheKey,
  clearKnowledgeIndexCache,
  deserializeIndexSnapshot,
  getOrBuildKnowledgeIndexSnapshot,
  type KnowledgeEntryInput,
  type KnowledgeIndexBuildOptions,
  type KnowledgeIndexSnapshot,
  type KnowledgeRetrievalRequest,
  type KnowledgeSelection,
  retrieve,
  serializeIndexSnapshot,
} from "../../src/index.js";
import { normalizeSources } from "../../src/knowledge/resolve.js";
import {
  blockedArbitrary,
  registryArbitrary,
  requestArbitrary,
  resolvedArbitrary,
} from "../property/arbitraries.js";
import { propertyRuns, propertySeed } from "../property/seed.js";

afterAll(() => clearKnowledgeIndexCache());

const optionsArbitrary: fc.Arbitrary<KnowledgeIndexBuildOptions> = fc.record({
  k1: fc.constantFrom(1.5, 0, 0.9),
  b: fc.constantFrom(0.75, 0, 1),
  analyzer: fc.constantFrom("none" as const, "english" as const),
  scoring: fc.constantFrom("sum" as const, "bm25f" as const),
  fieldWeights: fc.record({ title: fc.constantFrom(5, 0, 2), body: fc.constantFrom(1, 0) }),
});

function keyAndSnapshot(entries: KnowledgeEntryInput[], options: KnowledgeIndexBuildOptions) {
  const normalized = normalizeSources([{ id: "kb", version: "v1", entries: structuredClone(entries) }], {
    manifestVersion: "0",
  });
  if (!normalized.validation.ok) return null;
  const key = buildKnowledgeIndexCacheKey(normalized.groups, options);
  const snapshot = buildIndexSnapshot(normalized.entries, options);
  return { key, snapshot };
}

function view(selection: KnowledgeSelection) {
  return {
    primary: selection.primary.map((entry) => entry.id),
    expanded: selection.expanded.map((entry) => entry.id),
    candidates: selection.candidates.map((candidate) => ({ ...candidate })),
    confidence: selection.confidence,
    candidateCount: selection.candidateCount,
    context: assembleKnowledgeContext(selection).assembledContext,
  };
}

function results(
  snapshot: KnowledgeIndexSnapshot,
  requests: KnowledgeRetrievalRequest[],
  resolved: Parameters<typeof retrieve>[2],
  blocked: string[],
) {
  return requests.map((request) => view(retrieve(snapshot, request, resolved, blocked)));
}

describe("the same sources give the same key, bytes and results, in any entry order", () => {
  it("same sources → same key and bytes; permuted entries → same key, bytes and results; artifacts round-trip", () => {
    let runs = 0;
    fc.assert(
      fc.property(
        registryArbitrary,
        fc.infiniteStream(fc.nat()),
        optionsArbitrary,
        fc.array(requestArbitrary, { minLength: 1, maxLength: 4 }),
        resolvedArbitrary,
        blockedArbitrary,
        (registry, randomness, options, requests, resolved, blocked) => {
          const first = keyAndSnapshot(registry, options);
          if (first === null) return;
          runs++;
          const second = keyAndSnapshot(registry, options)!;
          expect(second.key).toBe(first.key);
          const bytes = serializeIndexSnapshot(first.snapshot, first.key, { includeEntries: true });
          expect(
            Buffer.from(serializeIndexSnapshot(second.snapshot, second.key, { includeEntries: true })).equals(
              Buffer.from(bytes),
            ),
          ).toBe(true);

          // The same entries in another order (Fisher-Yates driven by the generated numbers).
          const permuted = registry.slice();
          const draws = randomness[Symbol.iterator]();
          for (let index = permuted.length - 1; index > 0; index--) {
            const swap = draws.next().value! % (index + 1);
            [permuted[index], permuted[swap]] = [permuted[swap]!, permuted[index]!];
          }
          const shuffled = keyAndSnapshot(permuted, options)!;
          expect(shuffled.key).toBe(first.key);
          // Index options apply to the snapshot; the retrieval settings come from the generated resolution.
          const settings = {
            ...resolved,
            k1: options.k1,
            b: options.b,
            analyzer: options.analyzer,
            scoring: options.scoring,
          };
          const expected = results(first.snapshot, requests, settings, blocked);
          expect(results(shuffled.snapshot, requests, settings, blocked)).toEqual(expected);
          // The index orders entries by id, so even the artifact bytes do not depend on the input order.
          expect(
            Buffer.from(
              serializeIndexSnapshot(shuffled.snapshot, shuffled.key, { includeEntries: true }),
            ).equals(Buffer.from(bytes)),
          ).toBe(true);

          // Export and import.
          const loaded = deserializeIndexSnapshot(bytes, first.key).snapshot;
          expect(results(loaded, requests, settings, blocked)).toEqual(expected);
          expect(
            Buffer.from(serializeIndexSnapshot(loaded, first.key, { includeEntries: true })).equals(
              Buffer.from(bytes),
            ),
          ).toBe(true);
        },
      ),
      { seed: propertySeed("determinism"), numRuns: propertyRuns(200) },
    );
    console.log(`[property] determinism: ${runs} registries built twice, permuted and round-tripped`);
    expect(runs).toBeGreaterThan(0);
  });

  it("the process cache gives the same key for an equal source set built after the cache was cleared", async () => {
    const sources = [
      {
        id: "kb",
        version: "2",
        entries: [{ id: "a", title: "Alpha", summary: "s", domain: "d", integrations: [] }],
      },
    ];
    const first = await getOrBuildKnowledgeIndexSnapshot(structuredClone(sources));
    clearKnowledgeIndexCache();
    const second = await getOrBuildKnowledgeIndexSnapshot(structuredClone(sources));
    expect(second.cacheHit).toBe(false);
    expect(second.cacheKey).toBe(first.cacheKey);
    expect(
      Buffer.from(serializeIndexSnapshot(second.snapshot!, second.cacheKey)).equals(
        Buffer.from(serializeIndexSnapshot(first.snapshot!, first.cacheKey)),
      ),
    ).toBe(true);
  });
});
