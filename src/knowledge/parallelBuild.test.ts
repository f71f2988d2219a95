import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { registryArbitrary } from "../../test/property/arbitraries.js";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import type {
  KnowledgeAnalyzerName,
  KnowledgeEntryInput,
  KnowledgeScoringMode,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import {
  buildIndexSnapshot,
  type KnowledgeIndexBuildOptions,
  type KnowledgeLexicalIndex,
} from "./knowledgeIndex.js";
import { lastParallelBuildStats, parallelIndexing } from "./parallelBuild.js";
import { normalizeAndValidate } from "./resolve.js";

const entry = (id: string, title: string, body: string): KnowledgeEntryInput => ({
  id,
  title,
  summary: title,
  body,
  domain: "d",
  integrations: [],
});

function normalized(registry: KnowledgeEntryInput[]) {
  return normalizeAndValidate([{ id: "s", version: "1", entries: registry }], { manifestVersion: "0" })
    .entries;
}

/** Everything a finished lexical index holds, as plain values (typed arrays compared element by element). */
function indexState(entries: readonly NormalizedKnowledgeEntry[], options: KnowledgeIndexBuildOptions) {
  const snapshot = buildIndexSnapshot(entries, options);
  const { dictionary, ...parts } = (snapshot.lexical as KnowledgeLexicalIndex).exportParts();
  return {
    parts,
    terms: dictionary?.allTerms() ?? [],
    exact: [...snapshot.exactIndex],
    alias: [...snapshot.aliasIndex],
  };
}

describe("parallel build", () => {
  it("worker threads build the same index as one thread, bit for bit (property)", () => {
    const seed = propertySeed("parallel build");
    fc.assert(
      fc.property(
        fc.array(registryArbitrary, { minLength: 1, maxLength: 3 }).map((registries) => registries.flat()),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 2, max: 3 }),
        fc.constantFrom<KnowledgeAnalyzerName>("none", "english"),
        fc.constantFrom<KnowledgeScoringMode>("sum", "bm25f"),
        (registry, partEntries, threads, analyzer, scoring) => {
          // Unique ids across the concatenated registries.
          const entries = normalized(
            registry.map((entry, index) => ({ ...entry, id: `${entry.id}.${index}` })),
          );
          const single = indexState(entries, { analyzer, scoring, threads: 1 });
          const parallel = indexState(entries, { analyzer, scoring, threads, partEntries });
          const stats = lastParallelBuildStats()!;
          expect(stats.workers).toBe(threads - 1);
          // The workers counted parts (the test is about their merge, not only the main thread's share).
          if (entries.length >= 4 * partEntries * threads) expect(stats.countedEntries).toBeGreaterThan(0);
          expect(parallel).toEqual(single);
        },
      ),
      { seed, numRuns: propertyRuns(6) },
    );
  }, 120_000);

  it("on a fixed registry, workers count parts and scatter postings, in place with sum scoring", () => {
    // The property's draws need not take these paths (with LEXGROUND_SEED=32 its 6 runs all drew BM25F: nothing was
    // scattered in place), so they are asserted here, on a registry whose first round gives the worker a part
    // whatever the timing.
    const registry = Array.from({ length: 24 }, (_, index) =>
      entry(
        `entry.${String(index).padStart(2, "0")}`,
        `Title ${index % 5} refund policy`,
        `Body of entry ${index}: payment ${index % 3} checkout account ${index % 7} flow step`,
      ),
    );
    const entries = normalized(registry);
    for (const scoring of ["sum", "bm25f"] as const) {
      const single = indexState(entries, { analyzer: "english", scoring, threads: 1 });
      const parallel = indexState(entries, { analyzer: "english", scoring, threads: 2, partEntries: 2 });
      const stats = lastParallelBuildStats()!;
      expect(parallel).toEqual(single);
      expect(stats.workers).toBe(1);
      expect(stats.countedEntries).toBeGreaterThan(0);
      // A worker also scattered ranges of postings when finalizing (tests split every field).
      expect(stats.scatteredRanges).toBeGreaterThan(0);
      // Into the shared finished arrays where the frequencies are left to recovery (sum scoring), with no copy.
      if (scoring === "sum") expect(stats.scatteredInPlace).toBeGreaterThan(0);
    }
  });

  it("one thread, a small registry with automatic threads, or no entries: no worker starts", () => {
    const entries = normalized([entry("a", "A", "b")]);
    expect(parallelIndexing(entries, { analyzer: "none", threads: 1 })).toBeNull();
    expect(parallelIndexing(entries, { analyzer: "none", threads: undefined })).toBeNull();
    expect(parallelIndexing([], { analyzer: "none", threads: 4 })).toBeNull();
  });

  it("a duplicate id is reported as on one thread, and the workers are stopped", () => {
    const entries = normalized([entry("a", "A", "one"), entry("b", "B", "two"), entry("c", "C", "three")]);
    const duplicated = [...entries, ...entries];
    expect(() => buildIndexSnapshot(duplicated, { threads: 1 })).toThrow(/duplicate id "a"/);
    expect(() => buildIndexSnapshot(duplicated, { threads: 2, partEntries: 1 })).toThrow(/duplicate id "a"/);
  });
});
