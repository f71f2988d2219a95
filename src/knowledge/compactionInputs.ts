/**
 * What a compaction derives from a changed index before writing the fresh postings (`compaction.ts`): the
 * renumbering (the live documents in code-unit order of their ids, and where each dense id goes), the fields'
 * lengths, and the live added documents' postings per term. Generators, sliced as the writing is.
 */
import { baseOrder, type IndexBase, type IndexChanges } from "./indexChanges.js";
import { FIELD_COUNT } from "./postings.js";

/** Postings (or documents) handled between two yields. */
const WORK_PER_STEP = 1 << 14;

/** The live documents of a changed index in code-unit order of their ids, and where each dense id goes. */
type Renumbering = {
  ids: string[];
  /** Per dense id of the changed index (base, then added): its dense id in the fresh index, -1 when not live. */
  newDenseIds: Int32Array;
  /** Whether the base's dense ids follow the ids' order (then renumbering keeps base postings in order). */
  baseInOrder: boolean;
};

/**
 * Merges the live base documents (in rank order) with the live added ones (sorted by id). Where each added
 * document goes among the base's is its tie-break key (the number of base ids below its id, less a half: see
 * `IndexChanges.rankKeys`), found by binary search when it was added: the merge compares no ids with the base's
 * (one string comparison per base document was most of a compaction's main-thread time at 100k entries).
 */
export function* renumbering(base: IndexBase, changes: IndexChanges): Generator<void, Renumbering, void> {
  const baseCount = base.ids.length;
  const order = baseOrder(base);
  const live = changes.live;
  const added = changes.added;
  const ids: string[] = [];
  const newDenseIds = new Int32Array(baseCount + changes.addedCount).fill(-1);
  const addedOrder: number[] = [];
  for (let index = 0; index < changes.addedCount; index++)
    if (live[baseCount + index] === 1) addedOrder.push(index);
  // Live ids are distinct, so the order of the added ones is strict.
  addedOrder.sort((left, right) => (added.ids[left]! < added.ids[right]! ? -1 : 1));
  let baseInOrder = true;
  let next = 0;
  for (let rank = 0; rank <= baseCount; rank++) {
    // Added ids below the base id of this rank (a dead base document with the same id emits nothing).
    while (
      next < addedOrder.length &&
      (rank === baseCount || changes.rankKeys[baseCount + addedOrder[next]!]! < rank)
    ) {
      newDenseIds[baseCount + addedOrder[next]!] = ids.length;
      ids.push(added.ids[addedOrder[next++]!]!);
    }
    if (rank === baseCount) break;
    const doc = order[rank]!;
    if (doc !== rank) baseInOrder = false;
    if (live[doc] === 0) continue;
    newDenseIds[doc] = ids.length;
    ids.push(base.ids[doc]!);
    if ((rank & (WORK_PER_STEP - 1)) === 0) yield;
  }
  return { ids, newDenseIds, baseInOrder };
}

/** Per field and live document (fresh dense ids): the field's length, and per field the sum of the lengths. */
export function* compactedLengths(
  base: IndexBase,
  changes: IndexChanges,
  newDenseIds: Int32Array,
  documentCount: number,
): Generator<void, { lengths: Int32Array[]; totals: number[] }, void> {
  const baseCount = base.ids.length;
  const lengths: Int32Array[] = [];
  const totals: number[] = [];
  for (let field = 0; field < FIELD_COUNT; field++) {
    const fieldLengths = new Int32Array(documentCount);
    let total = 0;
    const baseLengths = base.lengths[field]!;
    for (let doc = 0; doc < baseCount; doc++) {
      const target = newDenseIds[doc]!;
      if (target < 0) continue;
      fieldLengths[target] = baseLengths[doc]!;
      total += baseLengths[doc]!;
    }
    for (let index = 0; index < changes.addedCount; index++) {
      const target = newDenseIds[baseCount + index]!;
      if (target < 0) continue;
      const length = changes.added.terms[index]!.lengths[field]!;
      fieldLengths[target] = length;
      total += length;
    }
    lengths.push(fieldLengths);
    totals.push(total);
    yield;
  }
  return { lengths, totals };
}

/**
 * The live added documents' postings of one field, by term: for each term with any, its (fresh dense id,
 * frequency) pairs sorted by dense id, packed in `pairs` from `starts[index]` to `starts[index + 1]`.
 */
export type AddedFieldPostings = { terms: Int32Array; starts: Int32Array; pairs: Int32Array };

export function* addedFieldPostings(
  changes: IndexChanges,
  field: number,
  newDenseIds: Int32Array,
  termCount: number,
  frequencyOf: Int32Array,
): Generator<void, AddedFieldPostings, void> {
  const capacity = changes.live.length;
  const lists = changes.added.postings[field]!;
  let listed = 0;
  let longest = 0;
  for (const [term, list] of lists)
    if (term < termCount) {
      listed++;
      longest = Math.max(longest, list.length);
    }
  const terms = new Int32Array(listed);
  let postingCount = 0;
  listed = 0;
  for (const [term, list] of lists)
    if (term < termCount) {
      terms[listed++] = term;
      postingCount += list.length;
    }
  terms.sort();
  const starts = new Int32Array(terms.length + 1);
  const pairs = new Int32Array(postingCount * 2);
  // Typed arrays and a numeric sort: no pair objects (at 100k entries and a few hundred added documents these
  // were tens of milliseconds of allocation in one step).
  const targets = new Int32Array(longest);
  let pair = 0;
  let work = 0;
  for (let index = 0; index < terms.length; index++) {
    const list = lists.get(terms[index]!)!;
    let count = 0;
    for (let position = 0; position < list.length; position++) {
      const doc = list.docs[position]!;
      // Documents added after the changed index (the chain went on) are not its own.
      if (doc >= capacity) break;
      const target = newDenseIds[doc]!;
      if (target < 0) continue;
      targets[count++] = target;
      frequencyOf[target] = list.frequencies[position]!;
    }
    const sorted = targets.subarray(0, count).sort();
    for (let at = 0; at < count; at++) {
      pairs[pair++] = sorted[at]!;
      pairs[pair++] = frequencyOf[sorted[at]!]!;
    }
    starts[index + 1] = pair / 2;
    work += count + 1;
    if (work >= WORK_PER_STEP) {
      work = 0;
      yield;
    }
  }
  return { terms, starts, pairs: pairs.subarray(0, pair) };
}
