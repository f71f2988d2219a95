import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { registryArbitrary } from "../../test/property/arbitraries.js";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { lastParallelBuildStats } from "../knowledge/parallelBuild.js";
import { normalizeAndValidate } from "../knowledge/resolve.js";
import type {
  KnowledgeAnalyzerName,
  KnowledgeEntryInput,
  KnowledgeScoringMode,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { computeGenerationData } from "./indexData.js";

function normalized(registry: KnowledgeEntryInput[]): NormalizedKnowledgeEntry[] {
  return normalizeAndValidate([{ id: "s", version: "1", entries: registry }], { manifestVersion: "0" })
    .entries;
}

/** Everything {@link computeGenerationData} gives, as plain values, built on `threads` threads. */
function generationState(
  entries: readonly NormalizedKnowledgeEntry[],
  options: { analyzer: KnowledgeAnalyzerName; scoring: KnowledgeScoringMode },
  threads: number,
  partEntries?: number,
) {
  const data = computeGenerationData(entries, {
    ...options,
    threads,
    ...(partEntries !== undefined ? { partEntries } : {}),
  });
  return {
    entries: Array.from(data.entryRows(), (row) => ({
      ...row,
      relations: Array.from(row.relations),
      fieldLengths: Array.from(row.fieldLengths),
    })),
    // A row's arrays are reused by the next row: each copied as it comes.
    postings: Array.from(data.postings(), (row) => ({
      ...row,
      docs: row.docs.slice(),
      frequencies: row.frequencies.slice(),
      contributions: row.contributions.slice(),
    })),
    phrases: Array.from(data.phrases, ([key, ids]) => [key, Array.from(ids.exact), Array.from(ids.alias)]),
    averageLengths: data.averageLengths,
  };
}

describe("computeGenerationData", () => {
  it("with the in-memory build's worker threads counting, computes what one thread computes (property)", () => {
    fc.assert(
      fc.property(
        fc.array(registryArbitrary, { minLength: 1, maxLength: 3 }).map((registries) => registries.flat()),
        fc.integer({ min: 1, max: 4 }),
        fc.constantFrom<KnowledgeAnalyzerName>("none", "english"),
        fc.constantFrom<KnowledgeScoringMode>("sum", "bm25f"),
        (registry, partEntries, analyzer, scoring) => {
          const entries = normalized(
            registry.map((entry, index) => ({ ...entry, id: `${entry.id}.${index}` })),
          );
          const options = { analyzer, scoring };
          expect(generationState(entries, options, 2, partEntries)).toEqual(
            generationState(entries, options, 1),
          );
        },
      ),
      { seed: propertySeed("parallel generation data"), numRuns: propertyRuns(6) },
    );
  }, 120_000);

  it("on a fixed registry, the worker counts a part and the data is what one thread computes", () => {
    // Random registries need not give a worker a part (a registry of one entry is the main thread's alone), so the
    // workers' share is asserted here: the first round gives the worker a part of these 24 entries, whatever the
    // timing.
    const entries = normalized(
      Array.from({ length: 24 }, (_, index) => ({
        id: `entry.${String(index).padStart(2, "0")}`,
        title: `Title ${index % 5} refund policy`,
        summary: `Summary ${index}`,
        body: `Body of entry ${index}: payment ${index % 3} checkout account ${index % 7} flow step`,
        domain: "d",
        integrations: [],
      })),
    );
    for (const scoring of ["sum", "bm25f"] as const) {
      const options = { analyzer: "english" as const, scoring };
      const parallel = generationState(entries, options, 2, 2);
      expect(lastParallelBuildStats()!.countedEntries).toBeGreaterThan(0);
      expect(parallel).toEqual(generationState(entries, options, 1));
    }
  });

  it("sum-mode rows of every field are views of the same scratch space (no per-field or per-term arrays)", () => {
    const entries = normalizeAndValidate(
      [
        {
          id: "s",
          version: "1",
          entries: Array.from({ length: 60 }, (_, index) => ({
            id: `entry-${index}`,
            title: `title ${index % 7} word${index % 3}`,
            aliases: [`alias ${index % 5}`],
            keywords: [`keyword${index % 4}`, "shared"],
            summary: `summary of entry ${index} with common words`,
            body: `body text ${index} repeats common words and word${index % 11} often`,
          })),
        },
      ],
      { manifestVersion: "0" },
    ).entries;
    const buffers = { docs: new Set<ArrayBufferLike>(), contributions: new Set<ArrayBufferLike>() };
    const fields = new Set<number>();
    let rows = 0;
    for (const row of computeGenerationData(entries, {}).postings()) {
      buffers.docs.add(row.docs.buffer);
      buffers.contributions.add(row.contributions.buffer);
      fields.add(row.field);
      rows++;
    }
    // Per-field (or per-term) arrays were allocated anew by the gigabyte at a million entries: external memory
    // that set off full collections of the publishing heap, registry included.
    expect(fields.size).toBe(5);
    expect(rows).toBeGreaterThan(50);
    expect(buffers.docs.size).toBe(1);
    expect(buffers.contributions.size).toBe(1);
  });
});
