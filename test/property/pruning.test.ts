/**
 * The pruned scorer (windows of document ids, MaxScore over per-list upper bounds) against the exhaustive one, on
 * indexes built to stress the pruning: hundreds of documents over a small vocabulary with very skewed term
 * frequencies (long lists of cheap terms, short lists of expensive ones), duplicated documents (ties at the K-th
 * place, decided by id), `k1 = 0` (every posting of a term scores the same), zero field weights, small K,
 * eligibility masks, and windows of a few documents so that the threshold is known early and most lists are
 * skipped, every window layout (branch-free dense reads with marks or from the totals, tracked sparse ones) and several shares of the
 * threshold for the skipped lists. Matches must be identical: ids, order, scores and per-field breakdowns bit for bit.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KNOWLEDGE_FIELD_NAMES } from "../../src/knowledge/defaults.js";
import { KnowledgeLexicalIndex } from "../../src/knowledge/lexicalIndex.js";
import { longListBoundSteps } from "../../src/knowledge/listBounds.js";
import { FIELD_COUNT } from "../../src/knowledge/postings.js";
import { type ScoredIndex, scoreQuery, scoreQueryExhaustive } from "../../src/knowledge/scoring.js";
import {
  type SplitSettings,
  scoringWorkerReady,
  setSplitScoring,
  splitSearchCount,
} from "../../src/knowledge/splitScoring.js";
import type { KnowledgeFieldWeights } from "../../src/types/knowledge.js";
import { propertyRuns, propertySeed } from "./seed.js";

const VOCABULARY = Array.from({ length: 40 }, (_, index) => `w${index}`);

/** A word drawn with a strongly skewed frequency: `w0` is in most documents, `w39` in few. */
const skewedWord = fc
  .integer({ min: 0, max: 9999 })
  .map((value) => VOCABULARY[Math.floor(40 * (value / 10000) ** 3)]!);
const uniformWord = fc.constantFrom(...VOCABULARY);
const fieldTokens = (maxLength: number) =>
  fc.array(fc.oneof(skewedWord, skewedWord, uniformWord), { maxLength });

const documentArbitrary = fc.record({
  title: fieldTokens(4),
  aliases: fieldTokens(3),
  keywords: fieldTokens(4),
  summary: fieldTokens(10),
  body: fieldTokens(40),
  /** When set, the document repeats the fields of an earlier one (equal scores, ties broken by id). */
  copyOf: fc.option(fc.nat(), { freq: 3 }),
});

/** Long queries (many lists, so a document's probed sum differs from the exhaustive order's in its last bits). */
const longQueries = fc.array(
  fc.record({
    words: fc.array(fc.oneof(skewedWord, uniformWord, uniformWord), { minLength: 15, maxLength: 40 }),
    topK: fc.integer({ min: 1, max: 8 }),
    eligible: fc.constant(null),
    maskSeed: fc.nat(),
  }),
  { minLength: 1, maxLength: 4 },
);

const caseFields = {
  documents: fc.array(documentArbitrary, { minLength: 1, maxLength: 300 }),
  weights: fc.tuple(...Array.from({ length: FIELD_COUNT }, () => fc.constantFrom(0, 0.5, 1, 3, 5))),
  k1: fc.constantFrom(0, 0.6, 1.2, 1.5, 3),
  b: fc.constantFrom(0, 0.5, 0.75, 1),
  scoring: fc.constantFrom("sum" as const, "bm25f" as const),
  queries: fc.array(
    fc.record({
      words: fc.array(fc.oneof(skewedWord, uniformWord, fc.constant("unknown")), {
        minLength: 1,
        maxLength: 14,
      }),
      topK: fc.integer({ min: 1, max: 8 }),
      /** Null: every document eligible; otherwise the share of eligible documents. */
      eligible: fc.option(fc.constantFrom(0.1, 0.5, 0.9), { freq: 2 }),
      maskSeed: fc.nat(),
    }),
    { minLength: 1, maxLength: 4 },
  ),
  windows: fc.record({
    first: fc.integer({ min: 1, max: 16 }),
    later: fc.integer({ min: 1, max: 40 }),
  }),
};
const caseArbitrary = fc.record(caseFields);

type Case = typeof caseArbitrary extends fc.Arbitrary<infer T> ? T : never;

function buildIndex(testCase: Case): KnowledgeLexicalIndex {
  const weights = Object.fromEntries(
    KNOWLEDGE_FIELD_NAMES.map((field, index) => [field, testCase.weights[index]!]),
  ) as unknown as KnowledgeFieldWeights;
  const index = new KnowledgeLexicalIndex(weights, {
    k1: testCase.k1,
    b: testCase.b,
    scoring: testCase.scoring,
  });
  testCase.documents.forEach((document, position) => {
    const source =
      document.copyOf !== null && position > 0 ? testCase.documents[document.copyOf % position]! : document;
    // Ids in an order unrelated to insertion, so ties are decided by rank, not by dense id.
    index.add({
      id: `doc-${(position * 7919) % 1009}-${position}`,
      exactKeys: [],
      fields: {
        title: source.title,
        aliases: source.aliases,
        keywords: source.keywords,
        summary: source.summary,
        body: source.body,
      },
    });
  });
  index.finalize();
  return index;
}

/** A deterministic mask from a seed: about `share` of the documents eligible. */
function maskOf(documentCount: number, share: number, seed: number): Uint8Array {
  const mask = new Uint8Array(documentCount);
  let state = seed >>> 0 || 1;
  for (let doc = 0; doc < documentCount; doc++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    mask[doc] = (state >>> 0) / 4294967296 < share ? 1 : 0;
  }
  return mask;
}

describe("pruned top-K scoring", () => {
  it("returns exactly the exhaustive scorer's matches: ids, order, scores and field breakdowns (property)", () => {
    const seed = propertySeed("pruning");
    fc.assert(fc.property(caseArbitrary, checkCase), { seed, numRuns: propertyRuns(120) });
  });

  it("returns the exhaustive scores bit for bit for long queries, whose probed sums round differently (property)", () => {
    const seed = propertySeed("pruning-long");
    const longCase = fc.record({
      ...caseFields,
      documents: fc.array(documentArbitrary, { minLength: 100, maxLength: 300 }),
      weights: fc.tuple(...Array.from({ length: FIELD_COUNT }, () => fc.constantFrom(0.5, 1, 3, 5))),
      scoring: fc.constant("sum" as const),
      queries: longQueries,
    });
    fc.assert(fc.property(longCase, checkCase), { seed, numRuns: propertyRuns(60) });
  });
});

describe("pruned top-K scoring split with the scoring worker", () => {
  let previous: SplitSettings;
  beforeAll(async () => {
    previous = setSplitScoring({ minimumPostings: 0, enabled: true });
    expect(await scoringWorkerReady()).toBe(true);
  });
  afterAll(() => {
    setSplitScoring(previous);
  });

  it("returns exactly the exhaustive scorer's matches when every search is split in two threads (property)", () => {
    const seed = propertySeed("pruning-split");
    const splitBefore = splitSearchCount();
    fc.assert(fc.property(caseArbitrary, checkCase), { seed, numRuns: propertyRuns(40) });
    fc.assert(
      fc.property(
        fc.record({
          ...caseFields,
          documents: fc.array(documentArbitrary, { minLength: 100, maxLength: 300 }),
          weights: fc.tuple(...Array.from({ length: FIELD_COUNT }, () => fc.constantFrom(0.5, 1, 3, 5))),
          scoring: fc.constant("sum" as const),
          queries: longQueries,
        }),
        checkCase,
      ),
      { seed, numRuns: propertyRuns(20) },
    );
    expect(splitSearchCount()).toBeGreaterThan(splitBefore);
  });
});

/** Every search of one case against the exhaustive scorer (see the module comment). */
function checkCase(testCase: Case): void {
  const lexical = buildIndex(testCase);
  const parts = lexical.exportParts();
  const documentCount = parts.ids.length;
  const upperBounds = parts.postings.map(() => new Map<number, number>());
  const scored: ScoredIndex = {
    ids: parts.ids,
    ranks: parts.ranks,
    postings: parts.postings,
    bm25f: parts.scoring === "bm25f",
    bm25fShares: parts.bm25fShares,
    upperBounds,
  };
  const scratch = {
    totals: new Float64Array(documentCount),
    fieldTotals: Array.from({ length: FIELD_COUNT }, () => new Float64Array(documentCount)),
    marks: new Uint8Array(documentCount),
    touched: new Int32Array(documentCount),
  };
  // Every list's bound computed ahead, as a build does for its long lists (here from one posting on).
  const steps = longListBoundSteps(parts.postings, parts.termCount, 1);
  let step = steps.next();
  while (!step.done) step = steps.next();
  const precomputed: ScoredIndex = { ...scored, upperBounds: step.value };
  for (const query of testCase.queries) {
    const termIds: number[] = [];
    for (const word of query.words) {
      const termId = parts.dictionary!.get(word);
      if (termId >= 0 && !termIds.includes(termId)) termIds.push(termId);
    }
    const mask = query.eligible === null ? null : maskOf(documentCount, query.eligible, query.maskSeed);
    const expected = scoreQueryExhaustive(scored, termIds, query.topK, mask, scratch);
    // With the bounds cached by earlier queries, and the default windows (no pruning inside the first one).
    // Every way of reading a window (branch-free with the mask copied into the marks, branch-free finding the
    // documents from their totals once the threshold is positive, or tracking touched documents), and several
    // shares of the threshold that the skipped lists' bounds may sum to.
    for (const [layout, unmarked] of [
      ["dense", true],
      ["dense", false],
      ["sparse", true],
    ] as const) {
      for (const nonEssentialShare of [0.1, 0.4, 1]) {
        // Probing wherever lists are skipped, too (by default a window is read whole when that costs less).
        for (const alwaysProbe of [false, true]) {
          const windows = { ...testCase.windows, layout, unmarked, nonEssentialShare, alwaysProbe };
          expect(scoreQuery(scored, termIds, query.topK, mask, windows)).toEqual(expected);
          expect(scoreQuery(precomputed, termIds, query.topK, mask, windows)).toEqual(expected);
        }
      }
    }
    expect(scoreQuery(scored, termIds, query.topK, mask)).toEqual(expected);
    // The index's own search path (default windows, its own bound cache) agrees too.
    if (mask === null) expect(lexical.searchWithMask(query.words, query.topK, null)).toEqual(expected);
  }
}
