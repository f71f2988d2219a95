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
import type { EntryIds } from "./denseIds.js";
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
  ids: EntryIds;
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

/** Room of a term's first list in an {@link AddedPostingPool}. */
const FIRST_LIST_ROOM = 2;

/**
 * The postings of the added documents in one field, every term's in one pool: per term a list of (dense id,
 * frequency), ascending, in a slice of two shared typed arrays; a full list moves to the pool's end with twice the
 * room (what it leaves is not reused: the pool lives until the next compaction), and a full pool is copied into
 * arrays twice its size. Append-only: an index reads, of each list, the postings below its capacity.
 *
 * Why a pool: a pair of small typed arrays and a record per term (as before) were about 400 bytes of objects per
 * term and field, all kept by the chain of changes: at 100k entries, 30 updates of 10 entries left about 12 MB of
 * them in the host's young generation, which each young-generation collection then copied (pauses of 20 ms and
 * more). The pool's contents live outside the heap; per term there is only its map entry.
 */
export class AddedPostingPool {
  /** Term id → its list's number. */
  private readonly lists = new Map<number, number>();
  /** Per list: where it starts in the pool, its length and its room (three values per list). */
  private records: Int32Array = new Int32Array(3 * 64);
  private listCount = 0;
  /** Dense ids of the lists' postings (replaced by a larger copy when full: read it after any append). */
  docs: Int32Array = new Int32Array(256);
  /** Frequencies, beside {@link docs}. */
  frequencies: Int32Array = new Int32Array(256);
  /** Pool slots in use, left by moved lists included. */
  private used = 0;

  /** The list of `term`, or -1 when it has none. */
  listOf(term: number): number {
    return this.lists.get(term) ?? -1;
  }

  /** Where list `list` starts in {@link docs} and {@link frequencies}. */
  start(list: number): number {
    return this.records[list * 3]!;
  }

  /** Number of postings in list `list`. */
  length(list: number): number {
    return this.records[list * 3 + 1]!;
  }

  /** Appends a posting to `term`'s list (`doc` above every dense id in it). */
  append(term: number, doc: number, frequency: number): void {
    let list = this.lists.get(term);
    if (list === undefined) {
      list = this.listCount++;
      if (list * 3 + 3 > this.records.length) this.records = grownInt32(this.records, list * 3 + 3);
      this.records[list * 3] = this.reserve(FIRST_LIST_ROOM);
      this.records[list * 3 + 1] = 0;
      this.records[list * 3 + 2] = FIRST_LIST_ROOM;
      this.lists.set(term, list);
    }
    const records = this.records;
    let start = records[list * 3]!;
    const length = records[list * 3 + 1]!;
    const room = records[list * 3 + 2]!;
    if (length === room) {
      const moved = this.reserve(room * 2);
      this.docs.copyWithin(moved, start, start + length);
      this.frequencies.copyWithin(moved, start, start + length);
      start = moved;
      records[list * 3] = moved;
      records[list * 3 + 2] = room * 2;
    }
    this.docs[start + length] = doc;
    this.frequencies[start + length] = frequency;
    records[list * 3 + 1] = length + 1;
  }

  /** `count` free slots at the pool's end (the pool grows when it must); where they start. */
  private reserve(count: number): number {
    const at = this.used;
    this.used += count;
    if (this.used > this.docs.length) {
      this.docs = grownInt32(this.docs, this.used);
      this.frequencies = grownInt32(this.frequencies, this.used);
    }
    return at;
  }

  /** A new pool with the postings below `capacity` (a chain that branches off an earlier index). */
  forked(capacity: number): AddedPostingPool {
    const copy = new AddedPostingPool();
    this.lists.forEach((list, term) => {
      const start = this.start(list);
      const end = start + this.length(list);
      for (let position = start; position < end && this.docs[position]! < capacity; position++)
        copy.append(term, this.docs[position]!, this.frequencies[position]!);
    });
    return copy;
  }
}

/**
 * Every document added since a base, in the order added (dense id `base.ids.length + index`), shared by the
 * chain of indexes derived from that base. Append-only: an index with `addedCount` added documents reads the
 * first `addedCount` of them and ignores the rest (postings past its dense ids, ids added after it).
 */
export type AddedDocuments = {
  ids: string[];
  terms: DocumentTerms[];
  /** Per field: the postings of the added documents, by term. */
  postings: AddedPostingPool[];
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
    if (base.ids.at(order[middle]!)! < id) low = middle + 1;
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
 * liveness): the pool's arrays, and the positions from `start` to `end` to read; null when there are none.
 */
export function addedPostingsOf(
  changes: IndexChanges,
  field: number,
  term: number,
): { docs: Int32Array; frequencies: Int32Array; start: number; end: number } | null {
  const pool = changes.added.postings[field]!;
  const list = pool.listOf(term);
  if (list < 0) return null;
  const capacity = changes.live.length;
  const docs = pool.docs;
  const start = pool.start(list);
  let end = start + pool.length(list);
  if (end > start && docs[end - 1]! >= capacity) {
    // Added after this index (the chain went on): the values below its capacity are a prefix.
    let low = start;
    while (low < end) {
      const middle = (low + end) >>> 1;
      if (docs[middle]! < capacity) low = middle + 1;
      else end = middle;
    }
  }
  return end === start ? null : { docs, frequencies: pool.frequencies, start, end };
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
  const postings = added.postings.map((pool) => pool.forked(capacity));
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
      postings: Array.from({ length: FIELD_COUNT }, () => new AddedPostingPool()),
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
      for (let position = 0; position < fieldTerms.length; position++)
        postings.append(fieldTerms[position]!, doc, fieldFrequencies[position]!);
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
