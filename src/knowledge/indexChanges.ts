/**
 * Changes to a finished lexical index without rebuilding it: a derived index shares its base's postings (never
 * modified) and adds an {@link IndexChanges}: which documents are live, the collection statistics of the result
 * (document count, field lengths) and a view of the documents added since the base. Scoring a derived index
 * computes every contribution at query time from stored term frequencies and field lengths with the statistics
 * of the result (`liveScoring.ts`), with the same functions a full build uses, so its scores are those of a full
 * build of the same entries.
 *
 * Cost of a change: the chain of indexes derived from one base shares one append-only record of the added
 * documents ({@link AddedDocuments}; each index sees a prefix of it), so deriving an index appends the new
 * documents' postings and copies one byte per document (the liveness array) instead of copying what earlier
 * changes added.
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

/** The postings of added documents for one term and field, in ascending dense ids; the first `length` count. */
export type GrowingPostings = { docs: Int32Array; frequencies: Int32Array; length: number };

/**
 * Every document added since a base, in the order added (dense id `base.ids.length + index`), shared by the
 * chain of indexes derived from that base. Append-only: an index with `addedCount` added documents reads the
 * first `addedCount` of them and ignores the rest (postings past its dense ids, ids added after it).
 */
export type AddedDocuments = {
  ids: string[];
  terms: DocumentTerms[];
  /** Per field: term id → postings of the added documents. */
  postings: Map<number, GrowingPostings>[];
  /** Entry id → the dense ids added with it, ascending (an id removed and added again has several). */
  docsOfId: Map<string, number[]>;
  /** Per dense id, base then added: the tie-break key (see {@link IndexChanges.rankKeys}); grows as added. */
  rankKeys: Float64Array;
};

/** The difference between a derived index and its base (see the module comment). */
export type IndexChanges = {
  /** The documents added since the base (shared; this index sees the first {@link addedCount}). */
  added: AddedDocuments;
  addedCount: number;
  /** Number of base documents removed or replaced. */
  deadBaseCount: number;
  /** Live documents (base minus dead plus live added): the N of IDF and of the average lengths. */
  documentCount: number;
  totalLengths: Float64Array;
  averageLengths: Float64Array;
  /** Per dense id: 1 when live (a removed or replaced document stays, not live, until a compaction). */
  live: Uint8Array;
  /**
   * Per dense id: a key whose order is the code-unit order of the ids, except that added documents between the
   * same two base ids share a key (`selectTop` then compares their ids).
   */
  rankKeys: Float64Array;
};

/** Base documents in rank order (the inverse of `ranks`), computed once per base. */
export function baseOrder(base: IndexBase): Int32Array {
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

/** Dense id of a live added document with this id, or -1. */
export function addedDenseIdOf(changes: IndexChanges, id: string): number {
  const docs = changes.added.docsOfId.get(id);
  if (!docs) return -1;
  const live = changes.live;
  for (let index = docs.length - 1; index >= 0; index--) {
    const doc = docs[index]!;
    if (doc < live.length && live[doc] === 1) return doc;
  }
  return -1;
}

/**
 * The postings of added documents that `changes` sees for a term in a field (live or not: callers check
 * liveness), as the arrays and the number of leading values to read; null when there are none.
 */
export function addedPostingsOf(
  changes: IndexChanges,
  field: number,
  term: number,
): { docs: Int32Array; frequencies: Int32Array; end: number } | null {
  const list = changes.added.postings[field]!.get(term);
  if (!list || list.length === 0) return null;
  const capacity = changes.live.length;
  let end = list.length;
  if (list.docs[end - 1]! >= capacity) {
    // Added after this index (the chain went on): the values below its capacity are a prefix.
    let low = 0;
    while (low < end) {
      const middle = (low + end) >>> 1;
      if (list.docs[middle]! < capacity) low = middle + 1;
      else end = middle;
    }
  }
  return end === 0 ? null : { docs: list.docs, frequencies: list.frequencies, end };
}

function grownInt32(array: Int32Array, length: number): Int32Array {
  if (length <= array.length) return array;
  const grown = new Int32Array(Math.max(length, array.length * 2, 4));
  grown.set(array);
  return grown;
}

/** A copy of the first `count` added documents of `added`, for a chain that branches off an earlier index. */
function forkAdded(added: AddedDocuments, baseCount: number, count: number): AddedDocuments {
  const capacity = baseCount + count;
  const postings = added.postings.map((field) => {
    const copy = new Map<number, GrowingPostings>();
    for (const [term, list] of field) {
      let length = 0;
      while (length < list.length && list.docs[length]! < capacity) length++;
      if (length > 0)
        copy.set(term, {
          docs: list.docs.slice(0, length),
          frequencies: list.frequencies.slice(0, length),
          length,
        });
    }
    return copy;
  });
  const docsOfId = new Map<string, number[]>();
  for (const [id, docs] of added.docsOfId) {
    const kept = docs.filter((doc) => doc < capacity);
    if (kept.length > 0) docsOfId.set(id, kept);
  }
  return {
    ids: added.ids.slice(0, count),
    terms: added.terms.slice(0, count),
    postings,
    docsOfId,
    rankKeys: added.rankKeys.slice(0, Math.max(capacity, 1)),
  };
}

/**
 * The changes of a derived index: `previous` (the changes of the index being updated, or null for a base) without
 * `removedIds` (ids that are not live are ignored), plus `added` (their ids must not be live afterwards). Work:
 * the added documents' postings, plus one byte per document (the liveness array); what earlier changes added is
 * shared, not copied (unless `previous` is not the latest index of its chain, which copies it once).
 */
export function deriveChanges(
  base: IndexBase,
  previous: IndexChanges | null,
  removedIds: Iterable<string>,
  added: ReadonlyMap<string, DocumentTerms>,
): IndexChanges {
  const baseCount = base.ids.length;
  let store: AddedDocuments;
  if (!previous) {
    const rankKeys = new Float64Array(baseCount + Math.max(added.size, 16));
    rankKeys.set(base.ranks);
    store = {
      ids: [],
      terms: [],
      postings: Array.from({ length: FIELD_COUNT }, () => new Map<number, GrowingPostings>()),
      docsOfId: new Map(),
      rankKeys,
    };
  } else if (previous.added.ids.length !== previous.addedCount) {
    store = forkAdded(previous.added, baseCount, previous.addedCount);
  } else store = previous.added;
  const previousCapacity = baseCount + (previous ? previous.addedCount : 0);
  const capacity = previousCapacity + added.size;
  const live = new Uint8Array(capacity);
  if (previous) live.set(previous.live);
  else live.fill(1, 0, baseCount);
  const totalLengths = (previous?.totalLengths ?? base.totalLengths).slice();
  let documentCount = previous ? previous.documentCount : baseCount;
  let deadBaseCount = previous ? previous.deadBaseCount : 0;
  const view: IndexChanges = {
    added: store,
    addedCount: previous ? previous.addedCount : 0,
    deadBaseCount,
    documentCount,
    totalLengths,
    averageLengths: new Float64Array(FIELD_COUNT),
    live,
    rankKeys: store.rankKeys,
  };
  for (const id of removedIds) {
    const addedDoc = addedDenseIdOf(view, id);
    if (addedDoc >= 0) {
      live[addedDoc] = 0;
      documentCount--;
      const lengths = store.terms[addedDoc - baseCount]!.lengths;
      for (let field = 0; field < FIELD_COUNT; field++) totalLengths[field]! -= lengths[field]!;
      continue;
    }
    const doc = base.denseIds.get(id);
    if (doc !== undefined && live[doc] === 1) {
      live[doc] = 0;
      documentCount--;
      deadBaseCount++;
      for (let field = 0; field < FIELD_COUNT; field++) totalLengths[field]! -= base.lengths[field]![doc]!;
    }
  }
  if (capacity > store.rankKeys.length) {
    const grown = new Float64Array(Math.max(capacity, Math.ceil(store.rankKeys.length * 1.5)));
    grown.set(store.rankKeys);
    store.rankKeys = grown;
  }
  for (const [id, terms] of added) {
    const baseDoc = base.denseIds.get(id);
    if (addedDenseIdOf(view, id) >= 0 || (baseDoc !== undefined && live[baseDoc] === 1))
      throw new Error(`KnowledgeLexicalIndex: id ${JSON.stringify(id)} is already indexed`);
    const doc = baseCount + store.ids.length;
    store.ids.push(id);
    store.terms.push(terms);
    const docs = store.docsOfId.get(id);
    if (docs) docs.push(doc);
    else store.docsOfId.set(id, [doc]);
    live[doc] = 1;
    documentCount++;
    // Between the base ids around it; added ids with the same neighbours share the key (ties compare ids).
    store.rankKeys[doc] = baseIdsBelow(base, id) - 0.5;
    for (let field = 0; field < FIELD_COUNT; field++) {
      totalLengths[field]! += terms.lengths[field]!;
      const postings = store.postings[field]!;
      const fieldTerms = terms.terms[field]!;
      const fieldFrequencies = terms.frequencies[field]!;
      for (let position = 0; position < fieldTerms.length; position++) {
        const term = fieldTerms[position]!;
        let list = postings.get(term);
        if (!list) {
          list = { docs: new Int32Array(2), frequencies: new Int32Array(2), length: 0 };
          postings.set(term, list);
        }
        list.docs = grownInt32(list.docs, list.length + 1);
        list.frequencies = grownInt32(list.frequencies, list.length + 1);
        list.docs[list.length] = doc;
        list.frequencies[list.length] = fieldFrequencies[position]!;
        list.length++;
      }
    }
  }
  // Integer sums divided once, exactly as a full build computes them.
  const averageLengths = view.averageLengths;
  for (let field = 0; field < FIELD_COUNT; field++)
    averageLengths[field] = documentCount > 0 ? totalLengths[field]! / documentCount : 0;
  view.addedCount = capacity - baseCount;
  view.deadBaseCount = deadBaseCount;
  view.documentCount = documentCount;
  view.rankKeys = store.rankKeys.subarray(0, capacity);
  return view;
}
