/**
 * What a compaction derives from a changed index before writing the fresh postings (`compaction.ts`): the
 * renumbering (the live documents in code-unit order of their ids, and where each dense id goes), the fields'
 * lengths, and the live added documents' postings per term. Generators, sliced as the writing is.
 */
import { compactionStep } from "./compactionStep.js";
import { baseOrder, type IndexBase, type IndexChanges } from "./indexChanges.js";
import { FIELD_COUNT } from "./postings.js";

/** The live documents of a changed index in code-unit order of their ids, and where each dense id goes. */
type Renumbering = {
  ids: string[];
  /** Per dense id of the changed index (base, then added): its dense id in the fresh index, -1 when not live. */
  newDenseIds: Int32Array;
  /** Whether the base's dense ids follow the ids' order (then renumbering keeps base postings in order). */
  baseInOrder: boolean;
  /** The live added documents (their index among the added ones), in the order of their fresh dense ids. */
  addedInOrder: Int32Array;
};

/** Where {@link renumbering} is in the base's rank order: the next added document, ids written so far. */
type RenumberingCursor = {
  base: IndexBase;
  order: Int32Array;
  live: Uint8Array;
  addedIds: readonly string[];
  rankKeys: Float64Array;
  addedInOrder: Int32Array;
  ids: string[];
  newDenseIds: Int32Array;
  /** The next added document (index into `addedInOrder`), and its key. */
  next: number;
  nextKey: number;
  written: number;
  baseInOrder: boolean;
};

/**
 * Ranks `from` to `to` of {@link renumbering} (with `to` the base's count, the added documents after the last
 * base id too). A plain function, not the generator's own loop: a generator that runs once per compaction stays
 * in V8's interpreter, where a step of 16,384 ranks took several milliseconds; this loop is optimized like any.
 */
function renumberRanks(cursor: RenumberingCursor, from: number, to: number): void {
  const { base, order, live, addedIds, rankKeys, addedInOrder, ids, newDenseIds } = cursor;
  const baseCount = base.ids.length;
  let { next, nextKey, written, baseInOrder } = cursor;
  for (let rank = from; rank < to || (to === baseCount && rank === baseCount); rank++) {
    // Added ids below the base id of this rank (a dead base document with the same id emits nothing).
    while (next < addedInOrder.length && (rank === baseCount || nextKey < rank)) {
      newDenseIds[baseCount + addedInOrder[next]!] = written;
      ids[written++] = addedIds[addedInOrder[next++]!]!;
      if (next < addedInOrder.length) nextKey = rankKeys[baseCount + addedInOrder[next]!]!;
    }
    if (rank === baseCount) break;
    const doc = order[rank]!;
    if (doc !== rank) baseInOrder = false;
    if (live[doc] === 0) {
      newDenseIds[doc] = -1;
      continue;
    }
    newDenseIds[doc] = written;
    ids[written++] = base.ids.at(doc)!;
  }
  compactionStep.done += to - from;
  cursor.next = next;
  cursor.nextKey = nextKey;
  cursor.written = written;
  cursor.baseInOrder = baseInOrder;
}

/**
 * Merges the live base documents (in rank order) with the live added ones (sorted by id). Where each added
 * document goes among the base's is its tie-break key (the number of base ids below its id, less a half: see
 * `IndexChanges.rankKeys`), found by binary search when it was added: the merge compares no ids with the base's
 * (one string comparison per base document was most of a compaction's main-thread time at 100k entries). The
 * fresh ids are written into an array of the live count allocated once (growing it by pushes allocated about three
 * times its size in copies: 3 MB of the young generation per compaction at 100k entries). Yields every
 * `compactionStep.work` ranks (`compactionStep.ts`).
 */
export function* renumbering(base: IndexBase, changes: IndexChanges): Generator<void, Renumbering, void> {
  const baseCount = base.ids.length;
  const live = changes.live;
  const added = changes.added;
  let liveAdded = 0;
  for (let index = 0; index < changes.addedCount; index++) if (live[baseCount + index] === 1) liveAdded++;
  const addedInOrder = new Int32Array(liveAdded);
  liveAdded = 0;
  for (let index = 0; index < changes.addedCount; index++)
    if (live[baseCount + index] === 1) addedInOrder[liveAdded++] = index;
  // Live ids are distinct, so the order of the added ones is strict.
  addedInOrder.sort((left, right) => (added.ids[left]! < added.ids[right]! ? -1 : 1));
  yield;
  const order = baseOrder(base);
  // Added documents not live keep -1 (the live ones are written by the merge).
  const cursor: RenumberingCursor = {
    base,
    order,
    live,
    addedIds: added.ids,
    rankKeys: changes.rankKeys,
    addedInOrder,
    ids: new Array<string>(changes.documentCount),
    // Written range by range (each base dense id once, -1 when dead): filling it first touched all its memory in
    // one step, and on this VM a fresh page's first touch costs tens of microseconds under load.
    newDenseIds: new Int32Array(baseCount + changes.addedCount),
    next: 0,
    nextKey: addedInOrder.length > 0 ? changes.rankKeys[baseCount + addedInOrder[0]!]! : baseCount,
    written: 0,
    baseInOrder: true,
  };
  cursor.newDenseIds.fill(-1, baseCount);
  yield;
  for (let from = 0; ; from += compactionStep.work) {
    const to = Math.min(baseCount, from + compactionStep.work);
    renumberRanks(cursor, from, to);
    if (to === baseCount) break;
    yield;
  }
  const { ids, newDenseIds, written, baseInOrder } = cursor;
  // The live count is the changes' document count; a shorter array would leave holes.
  if (written !== ids.length) ids.length = written;
  return { ids, newDenseIds, baseInOrder, addedInOrder };
}

/**
 * Lengths of `field` of dense ids `from` to `to` (of the changed index: base, then added) written at their fresh
 * dense ids; returns their sum (of integers: exact in any order). A plain function, for the reason
 * {@link renumberRanks} is.
 */
function copyLengths(
  base: IndexBase,
  changes: IndexChanges,
  field: number,
  newDenseIds: Int32Array,
  target: Int32Array,
  from: number,
  to: number,
): number {
  const baseCount = base.ids.length;
  const baseLengths = base.lengths[field]!;
  const added = changes.added.terms;
  let total = 0;
  for (let doc = from; doc < to; doc++) {
    const fresh = newDenseIds[doc]!;
    if (fresh < 0) continue;
    const length = doc < baseCount ? baseLengths[doc]! : added[doc - baseCount]!.lengths[field]!;
    target[fresh] = length;
    total += length;
  }
  compactionStep.done += to - from;
  return total;
}

/**
 * Per field and live document (fresh dense ids): the field's length, and per field the sum of the lengths. Yields
 * every `compactionStep.work` documents (once per field, as it did, was a step of a few milliseconds at 100k).
 */
export function* compactedLengths(
  base: IndexBase,
  changes: IndexChanges,
  newDenseIds: Int32Array,
  documentCount: number,
): Generator<void, { lengths: Int32Array[]; totals: number[] }, void> {
  const baseCount = base.ids.length;
  const capacity = baseCount + changes.addedCount;
  const lengths: Int32Array[] = [];
  const totals: number[] = [];
  for (let field = 0; field < FIELD_COUNT; field++) {
    const fieldLengths = new Int32Array(documentCount);
    let total = 0;
    for (let from = 0; from < capacity; from += compactionStep.work) {
      const to = Math.min(capacity, from + compactionStep.work);
      total += copyLengths(base, changes, field, newDenseIds, fieldLengths, from, to);
      yield;
    }
    lengths.push(fieldLengths);
    totals.push(total);
  }
  return { lengths, totals };
}

/**
 * The live added documents' postings of one field, by term: for each term with any, its (fresh dense id,
 * frequency) pairs sorted by dense id, packed in `pairs` from `starts[index]` to `starts[index + 1]`.
 */
export type AddedFieldPostings = { terms: Int32Array; starts: Int32Array; pairs: Int32Array };

/**
 * {@link AddedFieldPostings} of `field`, read from each live added document's own terms, the documents taken in
 * the order of their fresh dense ids (`addedInOrder`), so each term's pairs come out sorted with no sort: a count
 * per term, then each pair written at its term's cursor. `termCounts`: scratch of the dictionary's size, zero on
 * entry and on return. It allocates the three arrays it returns and one of the field's posting count, and
 * nothing per term or per document: reading the per-term lists instead (map entries, a view and a sort per term)
 * put megabytes of short-lived objects in the host's young generation per compaction.
 */
export function* addedFieldPostings(
  changes: IndexChanges,
  field: number,
  newDenseIds: Int32Array,
  addedInOrder: Int32Array,
  termCounts: Int32Array,
): Generator<void, AddedFieldPostings, void> {
  const documents = changes.added.terms;
  const baseCount = changes.live.length - changes.addedCount;
  // Terms past the dictionary's size when the compaction started belong to documents added after it (not read).
  const termCount = termCounts.length;
  let postingCount = 0;
  for (let at = 0; at < addedInOrder.length; at++)
    postingCount += documents[addedInOrder[at]!]!.terms[field]!.length;
  const distinct = new Int32Array(postingCount);
  let termTotal = 0;
  let work = 0;
  for (let at = 0; at < addedInOrder.length; at++) {
    const fieldTerms = documents[addedInOrder[at]!]!.terms[field]!;
    const count = fieldTerms.length;
    for (let position = 0; position < count; position++) {
      const term = fieldTerms[position]!;
      if (term >= termCount) continue;
      if (termCounts[term]!++ === 0) distinct[termTotal++] = term;
    }
    work += count + 1;
    compactionStep.done += count + 1;
    if (work >= compactionStep.work) {
      work = 0;
      yield;
    }
  }
  const terms = distinct.slice(0, termTotal).sort();
  const starts = new Int32Array(termTotal + 1);
  // Each term's count becomes its cursor: where its next pair goes.
  for (let index = 0; index < termTotal; index++) {
    const term = terms[index]!;
    starts[index + 1] = starts[index]! + termCounts[term]!;
    termCounts[term] = starts[index]!;
  }
  const pairCount = starts[termTotal]!;
  const pairs = new Int32Array(pairCount * 2);
  for (let at = 0; at < addedInOrder.length; at++) {
    const index = addedInOrder[at]!;
    const target = newDenseIds[baseCount + index]!;
    const fieldTerms = documents[index]!.terms[field]!;
    const frequencies = documents[index]!.frequencies[field]!;
    const count = fieldTerms.length;
    for (let position = 0; position < count; position++) {
      const term = fieldTerms[position]!;
      if (term >= termCount) continue;
      const slot = termCounts[term]!++;
      pairs[slot * 2] = target;
      pairs[slot * 2 + 1] = frequencies[position]!;
    }
    work += count + 1;
    compactionStep.done += count + 1;
    if (work >= compactionStep.work) {
      work = 0;
      yield;
    }
  }
  for (let index = 0; index < termTotal; index++) termCounts[terms[index]!] = 0;
  return { terms, starts, pairs };
}
