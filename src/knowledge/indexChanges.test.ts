import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertySeed } from "../../test/property/seed.js";
import { heapBytesAllocatedBy } from "../../test/support/heapAllocation.js";
import type { KnowledgeEntryInput } from "../types/knowledge.js";
import { AddedPostingPool, addedPostingsOf, type DocumentTerms, deriveChanges } from "./indexChanges.js";
import { KnowledgeLexicalIndex } from "./lexicalIndex.js";
import { FIELD_COUNT } from "./postings.js";
import { normalizeAndValidate } from "./resolve.js";

/** What a pool's list of `term` holds, read as a snapshot of `capacity` dense ids reads it. */
function listBelow(pool: AddedPostingPool, term: number, capacity: number): [number, number][] {
  const list = pool.listOf(term);
  if (list < 0) return [];
  const read: [number, number][] = [];
  for (let position = pool.start(list); position < pool.start(list) + pool.length(list); position++)
    if (pool.docs[position]! < capacity) read.push([pool.docs[position]!, pool.frequencies[position]!]);
  return read;
}

describe("added postings", () => {
  it("keeps every term's postings in order as lists move and the pool grows, and forks a prefix", () => {
    fc.assert(
      fc.property(
        // Per added document (dense ids ascending): the distinct terms it has and their frequencies.
        fc.array(fc.uniqueArray(fc.integer({ min: 0, max: 40 }), { maxLength: 30 }), { maxLength: 120 }),
        fc.nat(),
        (documents, forkAt) => {
          const pool = new AddedPostingPool();
          const model = new Map<number, [number, number][]>();
          documents.forEach((terms, doc) => {
            for (const term of terms) {
              pool.append(term, doc, term + doc);
              model.set(term, [...(model.get(term) ?? []), [doc, term + doc]]);
            }
          });
          for (let term = 0; term <= 40; term++)
            expect(listBelow(pool, term, documents.length)).toEqual(model.get(term) ?? []);
          const capacity = documents.length === 0 ? 0 : forkAt % (documents.length + 1);
          const fork = pool.forked(capacity);
          for (let term = 0; term <= 40; term++) {
            const kept = (model.get(term) ?? []).filter(([doc]) => doc < capacity);
            expect(listBelow(fork, term, Number.POSITIVE_INFINITY)).toEqual(kept);
            if (kept.length === 0) expect(fork.listOf(term)).toBe(-1);
          }
        },
      ),
      { seed: propertySeed("added-posting-pool"), numRuns: 80 },
    );
  });

  it("reads, for an index of the chain, only the postings below its capacity", () => {
    const entries: KnowledgeEntryInput[] = ["a.one", "b.two", "c.three"].map((id) => ({
      id,
      title: `alpha ${id}`,
      summary: "beta",
      domain: "help",
      integrations: [],
    }));
    const normalized = normalizeAndValidate([{ id: "source", version: "v1", entries }], {
      manifestVersion: "0",
    }).entries;
    const index = new KnowledgeLexicalIndex();
    index.addEntry(normalized[0]!);
    index.finalize();
    const first = index.withChanges([], [normalized[1]!]);
    const second = first.withChanges([], [normalized[2]!]);
    const alpha = index.finishedState().dictionary.get("alpha")!;
    const title = 0;
    const read = (changed: KnowledgeLexicalIndex) => {
      const postings = addedPostingsOf(changed.finishedState().changes!, title, alpha)!;
      return [...postings.docs.subarray(postings.start, postings.end)];
    };
    expect(read(first)).toEqual([1]);
    expect(read(second)).toEqual([1, 2]);
  });

  it("an update keeps no objects per added term on the host's heap", () => {
    const index = new KnowledgeLexicalIndex();
    const [first] = normalizeAndValidate(
      [
        {
          id: "source",
          version: "v1",
          entries: [{ id: "a", title: "alpha", domain: "help", integrations: [] }],
        },
      ],
      { manifestVersion: "0" },
    ).entries;
    index.addEntry(first!);
    index.finalize();
    const { base } = index.finishedState();
    // 400 documents of 40 terms of their own in every field: 16,000 distinct terms per field.
    const added = new Map<string, DocumentTerms>();
    for (let doc = 0; doc < 400; doc++) {
      const terms = Int32Array.from({ length: 40 }, (_, word) => 1000 + doc * 40 + word);
      added.set(`added.${doc}`, {
        terms: Array.from({ length: FIELD_COUNT }, () => terms),
        frequencies: Array.from({ length: FIELD_COUNT }, () => new Int32Array(40).fill(1)),
        lengths: new Int32Array(FIELD_COUNT).fill(40),
      });
    }
    const termsAdded = 16_000 * FIELD_COUNT;
    const { result: changes, bytes } = heapBytesAllocatedBy(() => deriveChanges(base!, null, [], added));
    expect(changes.documentCount).toBe(401);
    // A map entry per term (with the map's growth) is what is left; two typed arrays and a record per term (about
    // 400 bytes, all kept by the chain and copied by every young-generation collection) were the cost before.
    expect(bytes / termsAdded).toBeLessThan(100);
  });
});
