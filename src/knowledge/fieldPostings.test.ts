/**
 * Where a build puts its finished postings: a scored field's documents and contributions are in shared memory, so a
 * scoring thread can read them without a copy (`splitScoring.ts`).
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_FIELD_WEIGHTS } from "./defaults.js";
import { KnowledgeLexicalIndex } from "./lexicalIndex.js";

describe("finished postings", () => {
  it("keeps a scored field's documents and contributions in shared memory", () => {
    const index = new KnowledgeLexicalIndex(DEFAULT_FIELD_WEIGHTS);
    for (let position = 0; position < 20; position++)
      index.add({
        id: `entry-${position}`,
        exactKeys: [],
        fields: {
          title: [`title${position % 3}`],
          aliases: [],
          keywords: ["shared"],
          summary: ["a", "summary"],
          body: ["body", `word${position % 5}`],
        },
      });
    index.finalize();
    const postings = (
      index as unknown as { postings: { docs: Int32Array; contributions: Float64Array; active: boolean }[] }
    ).postings;
    const active = postings.filter((field) => field.active);
    expect(active.length).toBeGreaterThan(0);
    for (const field of active) {
      expect(field.docs.buffer).toBeInstanceOf(SharedArrayBuffer);
      expect(field.contributions.buffer).toBeInstanceOf(SharedArrayBuffer);
    }
  });
});
