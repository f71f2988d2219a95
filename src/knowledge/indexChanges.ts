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
  /** The dead base documents. */
  deadDocs: readonly number[];
  /** Added documents sorted by id; the dense id of `addedIds[index]` is `base.ids.length + index`. */
  addedIds: readonly string[];
  addedTerms: readonly DocumentTerms[];
  /** Added id → dense id. */
  addedDenseIds: ReadonlyMap<string, number>;
  /** Live documents (base minus dead plus added): the N of IDF and of the average lengths. */
  documentCount: number;
  totalLengths: Float64Array;
  averageLengths: Float64Array;
  /** Per dense id: 1 when live. */
  live: Uint8Array;
  /** Per dense id: a key whose order is the code-unit order of the ids (the tie-break). */
  rankKeys: Float64Array;
  /** Per field: the added documents' postings. */
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
 * `removedIds` (ids that are not live are ignored), plus `added` (their ids must not be live afterwards).
 */
export function deriveChanges(
  base: IndexBase,
  previous: IndexChanges | null,
  removedIds: Iterable<string>,
  added: ReadonlyMap<string, DocumentTerms>,
): IndexChanges {
  const baseCount = base.ids.length;
  const dead = previous ? previous.dead.slice() : new Uint8Array(baseCount);
  const deadDocs = previous ? previous.deadDocs.slice() : [];
  const addedById = new Map<string, DocumentTerms>();
  if (previous) previous.addedIds.forEach((id, index) => addedById.set(id, previous.addedTerms[index]!));
  for (const id of removedIds) {
    if (addedById.delete(id)) continue;
    const doc = base.denseIds.get(id);
    if (doc !== undefined && dead[doc] === 0) {
      dead[doc] = 1;
      deadDocs.push(doc);
    }
  }
  for (const [id, terms] of added) {
    const doc = base.denseIds.get(id);
    if (addedById.has(id) || (doc !== undefined && dead[doc] === 0))
      throw new Error(`KnowledgeLexicalIndex: id ${JSON.stringify(id)} is already indexed`);
    addedById.set(id, terms);
  }
  const addedIds = [...addedById.keys()].sort();
  const addedTerms = addedIds.map((id) => addedById.get(id)!);
  const capacity = baseCount + addedIds.length;
  const addedDenseIds = new Map<string, number>();
  addedIds.forEach((id, index) => addedDenseIds.set(id, baseCount + index));

  const totalLengths = base.totalLengths.slice();
  for (const doc of deadDocs)
    for (let field = 0; field < FIELD_COUNT; field++) totalLengths[field]! -= base.lengths[field]![doc]!;
  for (const terms of addedTerms)
    for (let field = 0; field < FIELD_COUNT; field++) totalLengths[field]! += terms.lengths[field]!;
  const documentCount = baseCount - deadDocs.length + addedIds.length;
  // Integer sums divided once, exactly as a full build computes them.
  const averageLengths = new Float64Array(FIELD_COUNT);
  for (let field = 0; field < FIELD_COUNT; field++)
    averageLengths[field] = documentCount > 0 ? totalLengths[field]! / documentCount : 0;

  const live = new Uint8Array(capacity).fill(1);
  for (const doc of deadDocs) live[doc] = 0;
  const rankKeys = new Float64Array(capacity);
  rankKeys.set(base.ranks);
  // An added id sorts between the base ids around it: its key is in (below − 1, below), ordered among the added
  // ids by their own (sorted) position. A replaced base document keeps its rank but is never live.
  addedIds.forEach((id, index) => {
    rankKeys[baseCount + index] = baseIdsBelow(base, id) - 1 + (index + 1) / (addedIds.length + 1);
  });

  const deltaPostings: DeltaPostings[] = [];
  for (let field = 0; field < FIELD_COUNT; field++) {
    const lists = new Map<number, { docs: number[]; frequencies: number[] }>();
    addedTerms.forEach((terms, index) => {
      const fieldTerms = terms.terms[field]!;
      const fieldFrequencies = terms.frequencies[field]!;
      for (let position = 0; position < fieldTerms.length; position++) {
        const term = fieldTerms[position]!;
        let list = lists.get(term);
        if (!list) {
          list = { docs: [], frequencies: [] };
          lists.set(term, list);
        }
        list.docs.push(baseCount + index);
        list.frequencies.push(fieldFrequencies[position]!);
      }
    });
    const postings: DeltaPostings = new Map();
    for (const [term, list] of lists)
      postings.set(term, {
        docs: Int32Array.from(list.docs),
        frequencies: Int32Array.from(list.frequencies),
      });
    deltaPostings.push(postings);
  }
  return {
    dead,
    deadDocs,
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
