import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { registryArbitrary } from "../../test/property/arbitraries.js";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { lastParallelBuildStats } from "../knowledge/parallelBuild.js";
import { normalizeAndValidate } from "../knowledge/resolve.js";
import type { KnowledgeAnalyzerName, KnowledgeScoringMode } from "../types/knowledge.js";
import { ImpactCollector } from "./impactBlocks.js";
import { computeGenerationData, type ForwardRow, type ImpactRow } from "./indexData.js";
import { IMPACT_BLOCK_ENDS } from "./sql.js";

describe("ImpactCollector", () => {
  it("keeps each term's best postings in impact order (ties by dense id), in blocks, past many cuts", () => {
    // 20,000 documents, impacts from few values (many exact ties), so long lists are cut again and again.
    let state = 7;
    const random = () => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return state / 4294967296;
    };
    const terms = ["frequent", "rare", "flat"];
    const expected: { doc: number; impact: number }[][] = [[], [], []];
    const collector = new ImpactCollector(terms, [20_000, Math.ceil(20_000 / 7), 20_000]);
    for (let doc = 0; doc < 20_000; doc++) {
      const impactTerms: number[] = [];
      const impacts: number[] = [];
      const add = (term: number, impact: number) => {
        impactTerms.push(term);
        impacts.push(impact);
        expected[term]!.push({ doc, impact });
      };
      add(0, Math.floor(random() * 50) / 7);
      if (doc % 7 === 0) add(1, random() * 3);
      add(2, 1.5);
      const row: ForwardRow = {
        doc,
        keys: new Int32Array(0),
        contributions: new Float64Array(0),
        impactTerms: Int32Array.from(impactTerms),
        impacts: Float64Array.from(impacts),
      };
      collector.add(row);
    }
    const rows: ImpactRow[] = [...collector.rows()];
    const limit = IMPACT_BLOCK_ENDS[IMPACT_BLOCK_ENDS.length - 1]!;
    terms.forEach((term, termId) => {
      const sorted = expected[termId]!.slice().sort(
        (left, right) => right.impact - left.impact || left.doc - right.doc,
      );
      const blocks = rows.filter((row) => row.term === term);
      expect(blocks.map((row) => row.block)).toEqual(blocks.map((_, index) => index));
      const docs = blocks.flatMap((row) => [...row.docs]);
      const impacts = blocks.flatMap((row) => [...row.impacts]);
      const kept = sorted.slice(0, limit);
      expect(docs).toEqual(kept.map((posting) => posting.doc));
      expect(impacts).toEqual(kept.map((posting) => posting.impact));
      let start = 0;
      for (const row of blocks) {
        expect(row.documentFrequency).toBe(sorted.length);
        const end = start + row.docs.length;
        expect(row.nextImpact).toBe(sorted[end]?.impact ?? 0);
        start = end;
      }
    });
    expect(collector.bounded).toBe(true);
  });
});

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
              terms: data.terms,
              bounds: data.termBounds(),
              postings: [...data.postings()],
              documents: [...data.documents()],
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
