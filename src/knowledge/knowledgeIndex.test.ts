import { describe, expect, it } from "vitest";
import type { NormalizedKnowledgeEntry } from "../types/knowledge.js";
import { buildDocument, buildIndexSnapshot, KnowledgeLexicalIndex } from "./knowledgeIndex.js";
import { tokenize } from "./normalize.js";
import { resolveEntry } from "./resolve.js";

/**
 * Golden registry. Field token counts (title / summary / body):
 *   golden.a: "alpha beta" (2) / "gamma" (1)             / ""            (0)
 *   golden.b: "beta"       (1) / "alpha alpha delta" (3) / "x y"         (2)
 *   golden.c: "gamma delta"(2) / "beta" (1)              / "alpha"       (1)
 * N = 3; avgdl: title 5/3, summary 5/3, body 3/3 = 1. Aliases and keywords are empty everywhere (skipped).
 * Weights 5 (title) / 3 (summary) / 1 (body); k1 = 1.5, b = 0.75.
 */
const golden: NormalizedKnowledgeEntry[] = [
  resolveEntry({ id: "golden.a", title: "alpha beta", summary: "gamma", domain: "d", integrations: [] }, "1"),
  resolveEntry(
    {
      id: "golden.b",
      title: "beta",
      summary: "alpha alpha delta",
      body: "x y",
      domain: "d",
      integrations: [],
    },
    "1",
  ),
  resolveEntry(
    { id: "golden.c", title: "gamma delta", summary: "beta", body: "alpha", domain: "d", integrations: [] },
    "1",
  ),
];

// "alpha" has df = 1 in each of title, summary and body: idf = ln(1 + (3 − 1 + 0.5) / (1 + 0.5)) = ln(8/3).
const IDF_DF1 = 0.9808292530117262;
// title, golden.a: tf 1, len 2 → 5 · idf · (1 · 2.5) / (1 + 1.5 · (0.25 + 0.75 · 2 / (5/3))) = 5 · idf · 2.5 / 2.725
const ALPHA_TITLE_A = 4.499216756934524;
// summary, golden.b: tf 2, len 3 → 3 · idf · (2 · 2.5) / (2 + 1.5 · (0.25 + 0.75 · 3 / (5/3))) = 3 · idf · 5 / 4.4
const ALPHA_SUMMARY_B = 3.3437360898127024;
// body, golden.c: tf 1, len 1 → 1 · idf · 2.5 / (1 + 1.5 · (0.25 + 0.75)) = idf
const ALPHA_BODY_C = IDF_DF1;
// "delta": title golden.c (tf 1, len 2) = ALPHA_TITLE_A; summary golden.b (tf 1, len 3): 3 · idf · 2.5 / 3.4
const DELTA_SUMMARY_B = 2.163593940467043;

describe("KnowledgeLexicalIndex golden scores (sum of per-field BM25)", () => {
  const snapshot = buildIndexSnapshot(golden);

  it("scores a one-term query by hand-computed values", () => {
    const matches = snapshot.lexical.search(["alpha"], 10);
    expect(matches.map((match) => match.id)).toEqual(["golden.a", "golden.b", "golden.c"]);
    expect(matches[0]!.score).toBeCloseTo(ALPHA_TITLE_A, 12);
    expect(matches[0]!.fieldScores).toEqual({ title: matches[0]!.score });
    expect(matches[1]!.score).toBeCloseTo(ALPHA_SUMMARY_B, 12);
    expect(matches[2]!.score).toBeCloseTo(ALPHA_BODY_C, 12);
    expect(matches[2]!.fieldScores).toEqual({ body: matches[2]!.score });
  });

  it("sums fields and terms", () => {
    const matches = snapshot.lexical.search(["alpha", "delta", "alpha"], 10);
    expect(matches.map((match) => match.id)).toEqual(["golden.b", "golden.c", "golden.a"]);
    expect(matches[0]!.score).toBeCloseTo(ALPHA_SUMMARY_B + DELTA_SUMMARY_B, 12);
    expect(matches[1]!.score).toBeCloseTo(ALPHA_BODY_C + ALPHA_TITLE_A, 12);
    expect(Object.keys(matches[1]!.fieldScores).sort()).toEqual(["body", "title"]);
  });

  it("honours topK and the eligible set", () => {
    expect(snapshot.lexical.search(["alpha"], 1).map((match) => match.id)).toEqual(["golden.a"]);
    expect(snapshot.lexical.search(["alpha"], 10, new Set(["golden.c"])).map((match) => match.id)).toEqual([
      "golden.c",
    ]);
    expect(snapshot.lexical.search(["alpha"], 0)).toEqual([]);
    expect(snapshot.lexical.search([], 10)).toEqual([]);
    expect(snapshot.lexical.search(["unknown"], 10)).toEqual([]);
  });

  it("breaks ties by id in code-unit order", () => {
    const twins = ["b", "B", "a", "é", "Z"].map((id) =>
      resolveEntry({ id, title: "same words", summary: "same", domain: "d", integrations: [] }, "1"),
    );
    const matches = buildIndexSnapshot(twins).lexical.search(["same"], 10);
    expect(matches.map((match) => match.id)).toEqual(["B", "Z", "a", "b", "é"]);
  });

  it("skips zero-weight fields", () => {
    const weighted = buildIndexSnapshot(golden, { title: 0, aliases: 5, keywords: 3, summary: 3, body: 1 });
    const matches = weighted.lexical.search(["alpha"], 10);
    expect(matches.map((match) => match.id)).toEqual(["golden.b", "golden.c"]);
  });

  it("accepts partial weights merged over the defaults", () => {
    const partial = buildIndexSnapshot(golden, { fieldWeights: { body: 2 } });
    const match = partial.lexical.search(["alpha"], 10).find((candidate) => candidate.id === "golden.c");
    expect(match!.score).toBeCloseTo(2 * ALPHA_BODY_C, 12);
  });

  it("rejects invalid parameters with a clear RangeError", () => {
    expect(() => new KnowledgeLexicalIndex({ title: Number.NaN })).toThrow(
      /fieldWeights.title must be a finite number >= 0/,
    );
    expect(() => new KnowledgeLexicalIndex({}, { k1: -1 })).toThrow(RangeError);
    expect(() => new KnowledgeLexicalIndex({}, { b: 1.5 })).toThrow(/b must be a number in \[0, 1\]/);
  });

  it("refuses duplicate ids and search before finalize", () => {
    const index = new KnowledgeLexicalIndex();
    index.add(buildDocument(golden[0]!));
    expect(() => index.add(buildDocument(golden[0]!))).toThrow(/duplicate id/);
    expect(() => index.search(["alpha"], 1)).toThrow(/finalize/);
  });
});

describe("true BM25F scoring", () => {
  // One IDF over all fields: "alpha" occurs in some field of all 3 documents → idf = ln(1 + 0.5 / 3.5) = ln(8/7).
  // Pseudo-frequency: Σ_f w_f · tf_f / (1 − b + b · len_f / avgdl_f); score = idf · tf~ · (k1 + 1) / (tf~ + k1).
  //   golden.a: 5 · 1 / (0.25 + 0.75 · 2 / (5/3)) = 4.3478…  → 0.24819961454372225
  //   golden.b: 3 · 2 / (0.25 + 0.75 · 3 / (5/3)) = 3.75      → 0.23844891540093321
  //   golden.c: 1 · 1 / (0.25 + 0.75 · 1 / 1)     = 1         → ln(8/7) = 0.13353139262452257
  it("scores by hand-computed values and splits the breakdown by field", () => {
    const snapshot = buildIndexSnapshot(golden, { scoring: "bm25f" });
    const matches = snapshot.lexical.search(["alpha"], 10);
    expect(matches.map((match) => match.id)).toEqual(["golden.a", "golden.b", "golden.c"]);
    expect(matches[0]!.score).toBeCloseTo(0.24819961454372225, 12);
    expect(matches[1]!.score).toBeCloseTo(0.23844891540093321, 12);
    expect(matches[2]!.score).toBeCloseTo(0.13353139262452257, 12);
    expect(matches[1]!.fieldScores.summary).toBeCloseTo(matches[1]!.score, 12);
  });
});

describe("snapshot", () => {
  it("is frozen and keeps relation order including missing ids", () => {
    const entry = resolveEntry(
      {
        id: "p",
        title: "P",
        summary: "s",
        domain: "d",
        integrations: [],
        relatedEntryIds: ["x", "golden.a"],
        parentEntryId: "golden.b",
      },
      "1",
    );
    const snapshot = buildIndexSnapshot([...golden, entry]);
    expect(Object.isFrozen(snapshot)).toBe(true);
    expect(snapshot.relationIndex.get("p")).toEqual(["x", "golden.a", "golden.b"]);
    expect(snapshot.relationIndex.has("golden.a")).toBe(false);
    expect(snapshot.entryCount).toBe(4);
  });

  it("indexes prototype-named ids, aliases and tokens without touching Object.prototype", () => {
    const names = ["__proto__", "constructor", "hasOwnProperty", "toString"];
    const entries = names.map((name) =>
      resolveEntry(
        {
          id: name,
          title: name,
          summary: `${name} summary`,
          aliases: [name],
          keywords: [name],
          domain: "d",
          integrations: [],
        },
        "1",
      ),
    );
    const snapshot = buildIndexSnapshot(entries);
    for (const name of names) {
      const [top] = snapshot.lexical.search(tokenize(name), 5);
      expect(top?.id).toBe(name);
    }
    expect(Object.keys(Object.prototype)).toEqual([]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("large builds", () => {
  // Past the point where the build sizes its buffers for the whole registry (1,024 documents), in shuffled,
  // sorted and reversed input order.
  const words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"];
  const entries: NormalizedKnowledgeEntry[] = Array.from({ length: 3000 }, (_, index) =>
    resolveEntry(
      {
        id: `large.${((index * 7919) % 3000).toString(36)}`,
        title: `${words[index % 10]} ${words[(index * 3) % 10]}`,
        summary: `${words[(index * 7) % 10]} item${index % 97}`,
        body: `${words[index % 10]} `.repeat(1 + (index % 5)) + `body${index % 13}`,
        domain: "d",
        integrations: [],
      },
      "1",
    ),
  );
  const queries = [["alpha"], ["beta", "item5"], ["body3", "kappa", "zeta"], ["item96"]];

  function reference(): KnowledgeLexicalIndex {
    const index = new KnowledgeLexicalIndex();
    const sorted = entries.slice().sort((left, right) => (left.id < right.id ? -1 : 1));
    for (const entry of sorted) index.add(buildDocument(entry));
    index.finalize();
    return index;
  }

  it("scores exactly as documents added one by one, whatever the input order", () => {
    const expected = reference();
    for (const order of [
      entries,
      entries.slice().sort((l, r) => (l.id < r.id ? -1 : 1)),
      entries.slice().reverse(),
    ]) {
      const snapshot = buildIndexSnapshot(order);
      for (const query of queries)
        expect(snapshot.lexical.search(query, 50)).toEqual(expected.search(query, 50));
    }
  });

  it("caps the advance reservation when the first documents are unusually large, and stays exact", () => {
    const big = Array.from({ length: 3000 }, (_, index) => `w${index}`).join(" ");
    const documents = [
      resolveEntry(
        { id: "cap.a", title: "first", summary: "s", body: big, domain: "d", integrations: [] },
        "1",
      ),
      resolveEntry(
        { id: "cap.b", title: "second", summary: "s", body: `${big} extra`, domain: "d", integrations: [] },
        "1",
      ),
      ...Array.from({ length: 20 }, (_, index) =>
        resolveEntry(
          {
            id: `cap.c${index}`,
            title: `small ${index}`,
            summary: "s",
            body: "w7 w8",
            domain: "d",
            integrations: [],
          },
          "1",
        ),
      ),
    ];
    const capped = new KnowledgeLexicalIndex();
    const plainOrder = new KnowledgeLexicalIndex();
    documents.forEach((entry, position) => {
      capped.add(buildDocument(entry));
      plainOrder.add(buildDocument(entry));
      if (position === 1) capped.reserveFor(1_000_000, 10_000);
    });
    const buffers = (capped as unknown as { builder: { builders: { terms: { data: Int32Array } }[] } })
      .builder.builders;
    const reserved = buffers.reduce((sum, builder) => sum + builder.terms.data.length, 0);
    expect(reserved).toBeLessThanOrEqual(10_000 + 5 * 1024);
    capped.finalize();
    plainOrder.finalize();
    for (const query of [["w7"], ["w2999", "extra"], ["small", "first"]])
      expect(capped.search(query, 30)).toEqual(plainOrder.search(query, 30));
  });

  it("reports duplicate ids given without validation", () => {
    expect(() => buildIndexSnapshot([...entries, entries[5]!])).toThrow(/duplicate id "large\./);
  });

  it("finds every id, during the build and after, whether ids come in code-unit order or not", () => {
    const sorted = entries.slice().sort((l, r) => (l.id < r.id ? -1 : 1));
    for (const order of [sorted, entries, sorted.slice(0, 1500).concat(sorted.slice(1500).reverse())]) {
      const index = new KnowledgeLexicalIndex();
      for (const entry of order) index.add(buildDocument(entry));
      const during = order.map((entry) => index.denseIdOf(entry.id));
      expect(during).toEqual(order.map((_, position) => position));
      index.finalize();
      expect(order.map((entry) => index.denseIdOf(entry.id))).toEqual(during);
      for (const missing of ["", "large", "large.0 ", "zzz", "__proto__", "Large.1"])
        expect(index.denseIdOf(missing)).toBe(-1);
      expect(order.map((_, position) => index.idAt(position))).toEqual(order.map((entry) => entry.id));
    }
  });

  it("refuses an id equal to the previous one, or to an earlier one once out of order", () => {
    const sorted = entries.slice().sort((l, r) => (l.id < r.id ? -1 : 1));
    const ascending = new KnowledgeLexicalIndex();
    for (const entry of sorted.slice(0, 10)) ascending.add(buildDocument(entry));
    expect(() => ascending.add(buildDocument(sorted[9]!))).toThrow(/duplicate id/);
    const outOfOrder = new KnowledgeLexicalIndex();
    for (const entry of sorted.slice(0, 10)) outOfOrder.add(buildDocument(entry));
    outOfOrder.add(buildDocument(sorted[20]!));
    outOfOrder.add(buildDocument(sorted[15]!));
    expect(() => outOfOrder.add(buildDocument(sorted[3]!))).toThrow(/duplicate id/);
    expect(() => outOfOrder.add(buildDocument(sorted[20]!))).toThrow(/duplicate id/);
  });

  it("serves entriesById like a map of the entries in id order", () => {
    const snapshot = buildIndexSnapshot(entries);
    const sorted = entries.slice().sort((l, r) => (l.id < r.id ? -1 : 1));
    expect(snapshot.entriesById.size).toBe(entries.length);
    expect([...snapshot.entriesById.keys()]).toEqual(sorted.map((entry) => entry.id));
    expect([...snapshot.entriesById.values()]).toEqual(sorted);
    for (const entry of entries) {
      expect(snapshot.entriesById.get(entry.id)).toBe(entry);
      expect(snapshot.entriesById.has(entry.id)).toBe(true);
    }
    expect(snapshot.entriesById.get("missing")).toBeUndefined();
    expect(snapshot.entriesById.has("__proto__")).toBe(false);
    expect(() => snapshot.entriesById.set("x", entries[0]!)).toThrow(TypeError);
  });
});

describe("BM25 with k1 = 0 (term frequency ignored)", () => {
  it("gives every document containing the term exactly the same score, so ties go to the lower id", () => {
    // With k1 = 0 the saturated frequency tf · 1 / tf is exactly 1; scaling first and dividing afterwards
    // ((weightedIdf · tf) / tf) rounds differently for some tf, which made the engine and NeuroLink's order
    // disagree on the tie-break.
    const entries = Array.from({ length: 40 }, (_, index) =>
      resolveEntry(
        {
          id: `entry.${String(39 - index).padStart(2, "0")}`,
          title: "t",
          summary: "s",
          body: `${"word ".repeat(index + 1)}filler${index}`,
          domain: "d",
          integrations: [],
        },
        "1",
      ),
    );
    const snapshot = buildIndexSnapshot(entries, { k1: 0, b: 0.75 });
    const matches = snapshot.lexical.search(["word"], 40);
    expect(matches).toHaveLength(40);
    const scores = new Set(matches.map((match) => match.score));
    expect(scores.size).toBe(1);
    expect(matches.map((match) => match.id)).toEqual(entries.map((entry) => entry.id).sort());
  });
});
