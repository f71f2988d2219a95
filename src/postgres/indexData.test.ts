import { describe, expect, it } from "vitest";
import { ImpactCollector } from "./impactBlocks.js";
import type { ForwardRow, ImpactRow } from "./indexData.js";
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
    const collector = new ImpactCollector(terms);
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
