import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { registryArbitrary } from "../../test/property/arbitraries.js";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { lastParallelBuildStats } from "../knowledge/parallelBuild.js";
import { normalizeAndValidate } from "../knowledge/resolve.js";
import type { KnowledgeAnalyzerName, KnowledgeScoringMode } from "../types/knowledge.js";
import { computeGenerationData } from "./indexData.js";

describe("computeGenerationData", () => {
  it("with the in-memory build's worker threads counting, computes what one thread computes (property)", () => {
    let counted = 0;
    fc.assert(
      fc.property(
        fc.array(registryArbitrary, { minLength: 1, maxLength: 3 }).map((registries) => registries.flat()),
        fc.integer({ min: 1, max: 4 }),
        fc.constantFrom<KnowledgeAnalyzerName>("none", "english"),
        fc.constantFrom<KnowledgeScoringMode>("sum", "bm25f"),
        (registry, partEntries, analyzer, scoring) => {
          const entries = normalizeAndValidate(
            [
              {
                id: "s",
                version: "1",
                entries: registry.map((entry, index) => ({ ...entry, id: `${entry.id}.${index}` })),
              },
            ],
            { manifestVersion: "0" },
          ).entries;
          const state = (threads: number, parts?: number) => {
            const data = computeGenerationData(entries, {
              analyzer,
              scoring,
              threads,
              ...(parts !== undefined ? { partEntries: parts } : {}),
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
              phrases: Array.from(data.phrases, ([key, ids]) => [
                key,
                Array.from(ids.exact),
                Array.from(ids.alias),
              ]),
              averageLengths: data.averageLengths,
            };
          };
          const single = state(1);
          const parallel = state(2, partEntries);
          counted += lastParallelBuildStats()!.countedEntries;
          expect(parallel).toEqual(single);
        },
      ),
      { seed: propertySeed("parallel generation data"), numRuns: propertyRuns(6) },
    );
    expect(counted).toBeGreaterThan(0);
  }, 120_000);

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
