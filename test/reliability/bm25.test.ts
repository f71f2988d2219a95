/**
 * BM25's properties (checklist row 39): the lexical scorer against a naive one, and the properties Lucene's BM25 tests check: every
 * score is finite and ≥ 0; at fixed length and corpus statistics, one more occurrence of a query term never
 * lowers a document's score; the term occurring in one more document (rarer → commoner) never raises it; a longer
 * document (more non-query tokens) never scores higher. Both scoring modes ("sum", the default, and "bm25f").
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  buildIndexSnapshot,
  type KnowledgeFieldWeights,
  type KnowledgeScoringMode,
  type NormalizedKnowledgeEntry,
  resolveEntry,
} from "../../src/index.js";
import { propertyRuns, propertySeed } from "../property/seed.js";
import { fieldTokens, naiveFieldScores, ORACLE_FIELDS } from "./oracle.js";

const TERMS = ["alpha", "beta", "gamma", "delta"];
const FILLERS = ["filler", "padding", "noise"];

type Document = { title: string[]; summary: string[]; body: string[]; aliases: string[][] };

const token = fc.constantFrom(...TERMS, ...FILLERS);
const documentArbitrary: fc.Arbitrary<Document> = fc.record({
  title: fc.array(token, { minLength: 1, maxLength: 3 }),
  summary: fc.array(token, { minLength: 0, maxLength: 6 }),
  body: fc.array(token, { minLength: 0, maxLength: 25 }),
  aliases: fc.array(fc.array(token, { minLength: 1, maxLength: 2 }), { maxLength: 2 }),
});
const corpusArbitrary = fc.array(documentArbitrary, { minLength: 1, maxLength: 8 });
const weight = fc.oneof(fc.constant(0), fc.double({ min: 0.01, max: 10, noNaN: true }));
const settingsArbitrary = fc.record({
  k1: fc.oneof(fc.constant(0), fc.constant(1.5), fc.double({ min: 0, max: 3, noNaN: true })),
  b: fc.oneof(fc.constant(0), fc.constant(1), fc.double({ min: 0, max: 1, noNaN: true })),
  fieldWeights: fc.record({
    title: weight,
    aliases: weight,
    keywords: weight,
    summary: weight,
    body: weight,
  }),
  scoring: fc.constantFrom<KnowledgeScoringMode>("sum", "bm25f"),
});
type Settings = { k1: number; b: number; fieldWeights: KnowledgeFieldWeights; scoring: KnowledgeScoringMode };

function toEntries(documents: readonly Document[]): NormalizedKnowledgeEntry[] {
  return documents.map((document, index) =>
    resolveEntry(
      {
        id: `doc${index}`,
        title: document.title.join(" "),
        summary: document.summary.join(" "),
        body: document.body.join(" "),
        aliases: document.aliases.map((alias) => alias.join(" ")),
        domain: "d",
        integrations: [],
      },
      "1",
    ),
  );
}

/** Every document's lexical score for the query (0 when it does not match). */
function scores(
  documents: readonly Document[],
  query: readonly string[],
  settings: Settings,
): Map<string, number> {
  const snapshot = buildIndexSnapshot(toEntries(documents), settings);
  const result = new Map<string, number>();
  for (const match of snapshot.lexical.search([...query], documents.length))
    result.set(match.id, match.score);
  return result;
}

/** Naive true BM25F: per term, weighted length-normalized frequencies summed over fields, then one saturation. */
function naiveBm25f(
  corpus: readonly NormalizedKnowledgeEntry[],
  entry: NormalizedKnowledgeEntry,
  terms: readonly string[],
  settings: Settings,
): number {
  const { k1, b, fieldWeights } = settings;
  const N = corpus.length;
  const scored = ORACLE_FIELDS.filter((field) => {
    const total = corpus.reduce((sum, other) => sum + fieldTokens(other, field).length, 0);
    return fieldWeights[field] > 0 && total > 0;
  });
  const averages = new Map(
    scored.map((field) => [
      field,
      corpus.reduce((sum, other) => sum + fieldTokens(other, field).length, 0) / N,
    ]),
  );
  let total = 0;
  for (const term of terms) {
    const df = corpus.filter((other) =>
      scored.some((field) => fieldTokens(other, field).includes(term)),
    ).length;
    let pseudo = 0;
    for (const field of scored) {
      const tokens = fieldTokens(entry, field);
      const tf = tokens.filter((value) => value === term).length;
      if (tf === 0) continue;
      pseudo += (fieldWeights[field] * tf) / (1 - b + (b * tokens.length) / averages.get(field)!);
    }
    if (pseudo === 0) continue;
    const idf = Math.log(1 + (N - df + 0.5) / (df + 0.5));
    total += (idf * (pseudo * (k1 + 1))) / (pseudo + k1);
  }
  return total;
}

function close(actual: number, expected: number): boolean {
  return (
    actual === expected ||
    Math.abs(actual - expected) <= 1e-9 * Math.max(Math.abs(actual), Math.abs(expected))
  );
}

/** `later` is not above `earlier` beyond rounding. */
function notAbove(later: number, earlier: number): boolean {
  return later <= earlier + 1e-12 * Math.max(1, Math.abs(earlier));
}

describe("BM25 scoring properties", () => {
  it("scores are finite, non-negative and equal a naive scorer within 1e-9", () => {
    fc.assert(
      fc.property(
        corpusArbitrary,
        fc.uniqueArray(fc.constantFrom(...TERMS, ...FILLERS), { minLength: 1, maxLength: 4 }),
        settingsArbitrary,
        (documents, query, settings) => {
          const entries = toEntries(documents);
          const actual = scores(documents, query, settings);
          for (const entry of entries) {
            const score = actual.get(entry.id) ?? 0;
            expect(Number.isFinite(score)).toBe(true);
            expect(score).toBeGreaterThanOrEqual(0);
            const expected =
              settings.scoring === "sum"
                ? naiveFieldScores(entries, entry, query, settings.fieldWeights, settings.k1, settings.b)
                    .total
                : naiveBm25f(entries, entry, query, settings);
            expect(close(score, expected), `${entry.id}: ${score} vs naive ${expected}`).toBe(true);
          }
        },
      ),
      { seed: propertySeed("bm25 vs naive"), numRuns: propertyRuns(300) },
    );
  });

  it("one more occurrence of the term (same length) never lowers the score", () => {
    fc.assert(
      fc.property(
        corpusArbitrary,
        fc.constantFrom(...TERMS),
        settingsArbitrary,
        fc.nat(),
        (documents, term, settings, pick) => {
          // A document whose body has the term and a filler: turn the filler into the term.
          const index = documents.findIndex(
            (document) =>
              document.body.includes(term) && document.body.some((value) => FILLERS.includes(value)),
          );
          if (index < 0) return;
          const before = scores(documents, [term], settings).get(`doc${index}`) ?? 0;
          const body = documents[index]!.body.slice();
          const fillerPositions = body.flatMap((value, position) =>
            FILLERS.includes(value) ? [position] : [],
          );
          body[fillerPositions[pick % fillerPositions.length]!] = term;
          const changed = documents.map((document, position) =>
            position === index ? { ...document, body } : document,
          );
          const after = scores(changed, [term], settings).get(`doc${index}`) ?? 0;
          expect(notAbove(before, after), `tf+1: ${before} → ${after}`).toBe(true);
        },
      ),
      { seed: propertySeed("bm25 non-decreasing in tf"), numRuns: propertyRuns(300) },
    );
  });

  it("the term occurring in one more document (less rare) never raises the score", () => {
    fc.assert(
      fc.property(
        corpusArbitrary,
        fc.constantFrom(...TERMS),
        settingsArbitrary,
        (documents, term, settings) => {
          const index = documents.findIndex((document) => document.body.includes(term));
          const other = documents.findIndex(
            (document, position) =>
              position !== index &&
              !document.body.includes(term) &&
              document.body.some((value) => FILLERS.includes(value)),
          );
          if (index < 0 || other < 0) return;
          const before = scores(documents, [term], settings).get(`doc${index}`) ?? 0;
          const body = documents[other]!.body.slice();
          body[body.findIndex((value) => FILLERS.includes(value))] = term;
          const changed = documents.map((document, position) =>
            position === other ? { ...document, body } : document,
          );
          const after = scores(changed, [term], settings).get(`doc${index}`) ?? 0;
          expect(notAbove(after, before), `df+1: ${before} → ${after}`).toBe(true);
        },
      ),
      { seed: propertySeed("bm25 non-decreasing in rarity"), numRuns: propertyRuns(300) },
    );
  });

  it("a longer document (more non-query tokens) never scores higher", () => {
    fc.assert(
      fc.property(
        corpusArbitrary,
        fc.constantFrom(...TERMS),
        settingsArbitrary,
        fc.array(fc.constantFrom(...FILLERS), { minLength: 1, maxLength: 30 }),
        (documents, term, settings, padding) => {
          const index = documents.findIndex((document) => document.body.includes(term));
          if (index < 0) return;
          const before = scores(documents, [term], settings).get(`doc${index}`) ?? 0;
          const changed = documents.map((document, position) =>
            position === index ? { ...document, body: [...document.body, ...padding] } : document,
          );
          const after = scores(changed, [term], settings).get(`doc${index}`) ?? 0;
          expect(notAbove(after, before), `longer: ${before} → ${after}`).toBe(true);
        },
      ),
      { seed: propertySeed("bm25 non-increasing in length"), numRuns: propertyRuns(300) },
    );
  });

  it("term-frequency saturation: a body repeating the term 10,000 times stays under weight × idf × (k1 + 1)", () => {
    for (const scoring of ["sum", "bm25f"] as const) {
      const documents: Document[] = [
        { title: ["other"], summary: [], body: Array.from({ length: 10_000 }, () => "alpha"), aliases: [] },
        { title: ["plain"], summary: [], body: ["alpha", "filler"], aliases: [] },
        { title: ["none"], summary: [], body: ["filler"], aliases: [] },
      ];
      const settings: Settings = {
        k1: 1.5,
        b: 0.75,
        fieldWeights: { title: 5, aliases: 5, keywords: 3, summary: 3, body: 1 },
        scoring,
      };
      const result = scores(documents, ["alpha"], settings);
      const idf = Math.log(1 + (3 - 2 + 0.5) / (2 + 0.5));
      expect(result.get("doc0")!).toBeLessThan(1 * idf * 2.5);
      expect(result.get("doc0")!).toBeGreaterThan(0);
    }
  });
});
