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
              entries: data.entries,
              postings: [...data.postings()],
              phrases: [...data.phrases],
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
});
