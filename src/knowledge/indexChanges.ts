/**
 * Changes to a finished lexical index without rebuilding it: a derived index shares its base's postings (never
 * modified) and adds an {@link IndexChanges}: which base documents are gone (removed or replaced), the added
 * documents' terms, the collection statistics of the result (document count, field lengths) and small postings of
 * the added documents. Scoring a derived index computes every contribution at query time from stored term
 * frequencies and field lengths with the statistics of the result (`liveScoring.ts`), with the same functions a
 * full build uses, so its scores are those of a full build of the same entries.
 */
import { FIELD_COUNT, type FrequencyPostings } from "./postings.js";
import type { ScoringScratch } from "./scoring.js";

/** The terms of one added document, per field: distinct term ids, their frequencies, and the field's length. */
export type DocumentTerms = {
  terms: Int32Array[];
  frequencies: Int32Array[];
  lengths: Int32Array;
};

/** The finished arrays of a full build, shared (never modified) by every index derived from it. */
export type IndexBase = {
  ids: readonly string[];
  denseIds: ReadonlyMap<string, number>;
  /** Rank of each base document in code-unit order of ids. */
  ranks: Int32Array;
  /** Base documents in rank order (computed when first needed). */
  order: Int32Array | null;
  /** Per field: term-frequency postings (empty for fields that are never scored). */
  termPostings: readonly FrequencyPostings[];
  /** Per field, per base document: the field's length in tokens. */
  lengths: readonly Int32Array[];
  /** Per field: the sum of the lengths over every base document. */
  totalLengths: Float64Array;
  /** Accumulators shared by the searches of every derived index (searches are synchronous). */
  scratch: LiveScratch | null;
};

/** {@link ScoringScratch} plus BM25F's per-term accumulators, sized for a derived index's dense ids. */
export type LiveScratch = ScoringScratch & {
  capacity: number;
  termParts: Float64Array[];
  termMarks: Uint8Array;
  termTouched: Int32Array;
};

/** The postings of the added documents for one field: term id → dense ids and frequencies. */
export type DeltaPostings = Map<number, { docs: Int32Array; frequencies: Int32Array }>;

/** The difference between a derived index and its base (see the module comment). */
export type IndexChanges = {
  /** Per base document: 1 when it was removed or replaced. */
  dead: Uint8Array;
  /** Number of dead base documents. */
  deadBaseCount: number;
  /**
   * Added documents in the order they were added (dense id `base.ids.length + index`); an added document that was
   * removed or replaced later stays here, marked not live, until a compaction.
   */
  addedIds: readonly string[];
  addedTerms: readonly DocumentTerms[];
  /** Live added id → dense id. */
  addedDenseIds: ReadonlyMap<string, number>;
  /** Live documents (base minus dead plus live added): the N of IDF and of the average lengths. */
  documentCount: number;
  totalLengths: Float64Array;
  averageLengths: Float64Array;
  /** Per dense id: 1 when live. */
  live: Uint8Array;
  /**
   * Per dense id: a key whose order is the code-unit order of the ids, except that added documents between the
   * same two base ids share a key (`selectTop` then compares their ids).
   */
  rankKeys: Float64Array;
  /** Per field: the added documents' postings (including those of added documents no longer live). */
  deltaPostings: DeltaPostings[];
};

/** Base documents in rank order (the inverse of `ranks`), computed once per base. */
function baseOrder(base: IndexBase): Int32Array {
  if (!base.order) {
    const order = new Int32Array(base.ranks.length);
    for (let doc = 0; doc < base.ranks.length; doc++) order[base.ranks[doc]!] = doc;
    base.order = order;
  }
  return base.order;
}

/** Number of base ids below `id` in code-unit order (binary search over the base's rank order). */
function baseIdsBelow(base: IndexBase, id: string): number {
  const order = baseOrder(base);
  let low = 0;
  let high = order.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (base.ids[order[middle]!]! < id) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * The changes of a derived index: `previous` (the changes of the index being updated, or null for a base) without
 * `removedIds` (ids that are not live are ignored), plus `added` (their ids must not be live afterwards). Work:
 * copies of a few arrays over the dense ids, plus the postings of the added documents' terms.
 */
export function deriveChanges(
  base: IndexBase,
  previous: IndexChanges | null,
  removedIds: Iterable<string>,
  added: ReadonlyMap<string, DocumentTerms>,
): IndexChanges {
  const baseCount = base.ids.length;
  const previousCapacity = previous ? previous.live.length : baseCount;
  const capacity = previousCapacity + added.size;
  const dead = previous ? previous.dead.slice() : new Uint8Array(baseCount);
  const live = new Uint8Array(capacity);
  if (previous) live.set(previous.live);
  else live.fill(1, 0, baseCount);
  const addedIds = previous ? previous.addedIds.slice() : [];
  const addedTerms = previous ? previous.addedTerms.slice() : [];
  const addedDenseIds = new Map(previous?.addedDenseIds ?? []);
  const totalLengths = (previous?.totalLengths ?? base.totalLengths).slice();
  let documentCount = previous ? previous.documentCount : baseCount;
  let deadBaseCount = previous ? previous.deadBaseCount : 0;
  const drop = (doc: number, lengths: ArrayLike<number>): void => {
    live[doc] = 0;
    documentCount--;
    for (let field = 0; field < FIELD_COUNT; field++) totalLengths[field]! -= lengths[field]!;
  };
  for (const id of removedIds) {
    const addedDoc = addedDenseIds.get(id);
    if (addedDoc !== undefined) {
      addedDenseIds.delete(id);
      drop(addedDoc, addedTerms[addedDoc - baseCount]!.lengths);
      continue;
    }
    const doc = base.denseIds.get(id);
    if (doc !== undefined && dead[doc] === 0) {
      dead[doc] = 1;
      deadBaseCount++;
      const lengths = new Float64Array(FIELD_COUNT);
      for (let field = 0; field < FIELD_COUNT; field++) lengths[field] = base.lengths[field]![doc]!;
      drop(doc, lengths);
    }
  }
  const rankKeys = new Float64Array(capacity);
  if (previous) rankKeys.set(previous.rankKeys);
  else rankKeys.set(base.ranks);
  const deltaPostings = previous
    ? previous.deltaPostings.map((postings) => new Map(postings))
    : Array.from({ length: FIELD_COUNT }, (): DeltaPostings => new Map());
  for (const [id, terms] of added) {
    const baseDoc = base.denseIds.get(id);
    if (addedDenseIds.has(id) || (baseDoc !== undefined && dead[baseDoc] === 0))
      throw new Error(`KnowledgeLexicalIndex: id ${JSON.stringify(id)} is already indexed`);
    const doc = baseCount + addedTerms.length;
    addedIds.push(id);
    addedTerms.push(terms);
    addedDenseIds.set(id, doc);
    live[doc] = 1;
    documentCount++;
    // Between the base ids around it; added ids with the same neighbours share the key (ties compare ids).
    rankKeys[doc] = baseIdsBelow(base, id) - 0.5;
    for (let field = 0; field < FIELD_COUNT; field++) {
      totalLengths[field]! += terms.lengths[field]!;
      const postings = deltaPostings[field]!;
      const fieldTerms = terms.terms[field]!;
      const fieldFrequencies = terms.frequencies[field]!;
      for (let position = 0; position < fieldTerms.length; position++) {
        const term = fieldTerms[position]!;
        const list = postings.get(term);
        const length = list ? list.docs.length : 0;
        const docs = new Int32Array(length + 1);
        const frequencies = new Int32Array(length + 1);
        if (list) {
          docs.set(list.docs);
          frequencies.set(list.frequencies);
        }
        docs[length] = doc;
        frequencies[length] = fieldFrequencies[position]!;
        postings.set(term, { docs, frequencies });
      }
    }
  }
  // Integer sums divided once, exactly as a full build computes them.
  const averageLengths = new Float64Array(FIELD_COUNT);
  for (let field = 0; field < FIELD_COUNT; field++)
    averageLengths[field] = documentCount > 0 ? totalLengths[field]! / documentCount : 0;
  return {
    dead,
    deadBaseCount,
    addedIds,
    addedTerms,
    addedDenseIds,
    documentCount,
    totalLengths,
    averageLengths,
    live,
    rankKeys,
    deltaPostings,
  };
}
