/**
 * The split search's fallbacks (`splitScoring.ts`): a worker that is late has its part scored by the main thread,
 * with the same result, and is not used again; lists outside shared memory are never split. (That split searches
 * return exactly what one thread returns is `test/property/pruning.test.ts`.)
 */
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_FIELD_WEIGHTS } from "./defaults.js";
import { KnowledgeLexicalIndex } from "./lexicalIndex.js";
import { scoreLists } from "./scoreLists.js";
import {
  scoreListsSplit,
  scoringWorkerReady,
  setSplitScoring,
  splitSearchCount,
  stopScoringWorker,
} from "./splitScoring.js";

const defaults = setSplitScoring({});

function buildIndex(): KnowledgeLexicalIndex {
  const index = new KnowledgeLexicalIndex(DEFAULT_FIELD_WEIGHTS);
  for (let position = 0; position < 400; position++)
    index.add({
      id: `entry-${(position * 7919) % 1009}`,
      exactKeys: [],
      fields: {
        title: [`title${position % 7}`],
        aliases: [],
        keywords: [`key${position % 11}`],
        summary: ["a", `summary${position % 13}`],
        body: Array.from({ length: 1 + (position % 9) }, (_, word) => `word${(position * word) % 17}`),
      },
    });
  index.finalize();
  return index;
}

const QUERY = ["title3", "key5", "summary7", "word1", "word2", "word3", "word5", "word8", "word13"];

describe("split search fallbacks", () => {
  afterEach(async () => {
    setSplitScoring(defaults);
    await stopScoringWorker();
  });

  it("scores a late worker's part on the main thread, with the same matches, and stops using that worker", async () => {
    const index = buildIndex();
    const expected = index.searchWithMask(QUERY, 5, null);
    setSplitScoring({ minimumPostings: 0 });
    expect(await scoringWorkerReady()).toBe(true);
    setSplitScoring({ minimumPostings: 0, waitMilliseconds: 0 });
    const before = splitSearchCount();
    expect(index.searchWithMask(QUERY, 5, null)).toEqual(expected);
    expect(splitSearchCount()).toBe(before + 1);
    // The worker missed its deadline: later searches run on the main thread alone.
    expect(index.searchWithMask(QUERY, 5, null)).toEqual(expected);
    expect(splitSearchCount()).toBe(before + 1);
  });

  it("splits no search whose postings are not in shared memory", async () => {
    setSplitScoring({ minimumPostings: 0 });
    expect(await scoringWorkerReady()).toBe(true);
    const docs = Int32Array.from([0, 1, 2, 3]);
    const contributions = Float64Array.from([1, 2, 3, 4]);
    const lists = {
      postings: [{ docs, contributions }],
      starts: Int32Array.of(0),
      ends: Int32Array.of(4),
      upper: Float64Array.of(4),
      fields: Int32Array.of(0),
    };
    const ranks = Int32Array.from([0, 1, 2, 3]);
    const index = { postings: [{ docs, contributions }], ranks, documentCount: 4 };
    expect(scoreListsSplit(index, lists, 2, null, new Map())).toBeNull();
    expect(scoreLists(lists, 4, ranks, 2, null)).toEqual([
      { doc: 3, score: 4 },
      { doc: 2, score: 3 },
    ]);
  });
});
