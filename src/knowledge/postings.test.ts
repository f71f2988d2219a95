import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { drain } from "./compiledSnapshot.js";
import { fieldPostings } from "./fieldPostings.js";
import { KnowledgeLexicalIndex } from "./lexicalIndex.js";
import {
  createFieldBuilder,
  type FieldBuilder,
  type FinishedField,
  frequencyAt,
  recoverable,
} from "./postings.js";

/** A field builder over documents given as (term, frequency) lists, as the index fills it. */
function builderOf(documents: readonly (readonly [number, number])[][]): {
  builder: FieldBuilder;
  lengths: Int32Array;
} {
  const builder = createFieldBuilder();
  const lengths = new Int32Array(documents.length);
  documents.forEach((pairs, doc) => {
    let length = 0;
    for (const [term, frequency] of pairs) {
      builder.terms.push(term);
      builder.frequencies.push(frequency);
      length += frequency;
    }
    // Other tokens of the field (terms not listed) make some documents longer than their listed terms.
    length += doc % 3;
    builder.lengths.push(length);
    lengths[doc] = length;
    builder.total += length;
    builder.ends.push(builder.terms.length);
  });
  return { builder, lengths };
}

/** Every posting's frequency, by term then position, read through the recovery when the field has one. */
function allFrequencies(finished: FinishedField, termCount: number): number[] {
  const postings = finished.frequencies;
  const values: number[] = [];
  for (let term = 0; term < termCount; term++)
    for (let position = postings.offsets[term]!; position < postings.offsets[term + 1]!; position++)
      values.push(frequencyAt(postings, term, position));
  return values;
}

const TERMS = 12;
const documentArbitrary = fc
  .uniqueArray(fc.integer({ min: 0, max: TERMS - 1 }), { maxLength: 6 })
  .chain((terms) =>
    fc.tuple(
      ...terms.map((term) =>
        fc.tuple(
          fc.constant(term),
          fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 600 })),
        ),
      ),
    ),
  );

describe("term frequencies of a finished field", () => {
  it("are not kept by a scored field, and are recovered exactly from the contributions on first read", () => {
    const seed = propertySeed("postings frequency recovery");
    fc.assert(
      fc.property(
        fc.array(documentArbitrary, { minLength: 1, maxLength: 30 }),
        fc.double({ min: 0.05, max: 4, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0.01, max: 10, noNaN: true }),
        (documents, k1, b, weight) => {
          const { builder, lengths } = builderOf(documents);
          const averageLength = builder.total / documents.length;
          fc.pre(averageLength > 0 && builder.terms.length > 0);
          const scored = { weight, averageLength, k1, b };
          const kept = drain(fieldPostings(builder, lengths, TERMS, documents.length, null));
          const recovered = drain(fieldPostings(builder, lengths, TERMS, documents.length, scored));
          expect(kept.frequencies.recovery).toBeNull();
          expect(recovered.frequencies.recovery).not.toBeNull();
          expect(recovered.frequencies.frequencies).toBeNull();
          expect(allFrequencies(recovered, TERMS)).toEqual(allFrequencies(kept, TERMS));
        },
      ),
      { seed, numRuns: propertyRuns(200) },
    );
  });

  it("are kept when the contributions cannot give them back (k1 = 0, or frequencies too close to tell apart)", () => {
    const { builder, lengths } = builderOf([[[0, 3]], [[0, 1]]]);
    const finished = drain(
      fieldPostings(builder, lengths, 1, 2, { weight: 1, averageLength: 3, k1: 0, b: 0.75 }),
    );
    expect(finished.frequencies.recovery).toBeNull();
    expect(allFrequencies(finished, 1)).toEqual([3, 1]);
    const scored = { weight: 1, averageLength: 100, k1: 1e-6, b: 1 };
    expect(recoverable(scored, 10, 100_000, 1, 100_000)).toBe(false);
    expect(recoverable({ ...scored, k1: 1.2 }, 10, 300, 1, 5_000)).toBe(true);
    expect(recoverable({ ...scored, k1: 1.2, weight: 1e-300 }, 10, 300, 1, 5_000)).toBe(false);
  });
});

describe("a full build's memory", () => {
  const document = (doc: number) => ({
    id: `entry-${doc}`,
    exactKeys: [],
    fields: {
      title: [`title${doc % 7}`],
      aliases: [],
      keywords: ["shared"],
      summary: ["alpha", "beta", `word${doc % 5}`],
      body: Array.from({ length: 5 + (doc % 9) }, (_, token) => `word${(token * doc) % 11}`),
    },
  });
  const indexOf = (docs: readonly number[]): KnowledgeLexicalIndex => {
    const index = new KnowledgeLexicalIndex();
    for (const doc of docs) index.add(document(doc));
    index.finalize();
    return index;
  };

  it("holds no term-frequency bytes until a change reads them", () => {
    const all = Array.from({ length: 40 }, (_, doc) => doc);
    const index = indexOf(all);
    const indexed = index.finishedState().termPostings.filter((postings) => postings.docs.length > 0);
    expect(indexed).toHaveLength(4);
    for (const postings of indexed) expect(postings.frequencies).toBeNull();
    // A change scores with the recovered frequencies: as a full build of the changed registry.
    const changed = index.withChanges(["entry-3", "entry-8"], []);
    const full = indexOf(all.filter((doc) => doc !== 3 && doc !== 8));
    for (const query of [["word3", "alpha"], ["shared", "word7", "title2"], ["beta"]])
      expect(changed.search(query, 10)).toEqual(full.search(query, 10));
  });
});
