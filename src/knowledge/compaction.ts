/**
 * Compaction: a fresh index holding exactly the live documents of a changed index (its base minus the removed or
 * replaced documents, plus the added ones), in code-unit order of their ids, read from the stored term-frequency
 * postings instead of tokenizing any text again. Its postings, statistics and contributions are those a full
 * build of the same entries gives. Generators, so a background compaction yields to the event loop in slices.
 *
 * The usual case ({@link compactedPostings}: scores summed over fields, a base whose dense ids follow the ids'
 * order, which every snapshot's has) writes the finished postings term by term straight from the base's
 * postings: renumbering keeps each term's base postings in document order, so only the few added documents are
 * merged in. It allocates what the fresh index keeps and two arrays the size of the registry, nothing the size of
 * the postings besides: at 100k entries a compaction used to allocate twice the index in build buffers, and that
 * memory made V8 collect the host's whole heap in pauses longer than the slices. Otherwise
 * (`compactedBuilders` in `compactionBuilders.ts`: BM25F, or a base in another order) it fills the build buffers a
 * full build fills and the index finalizes them. What both read first (the renumbering, the lengths, the added
 * documents' postings) is derived in `compactionInputs.ts`.
 */
import type { KnowledgeFieldWeights } from "../types/knowledge.js";
import { bm25Idf, bm25LengthNormalization, bm25TermScore } from "./bm25.js";
import {
  type AddedFieldPostings,
  addedFieldPostings,
  compactedLengths,
  renumbering,
} from "./compactionInputs.js";
import { compactionStep } from "./compactionStep.js";
import { KNOWLEDGE_FIELD_NAMES } from "./defaults.js";
import type { IndexBase, IndexChanges } from "./indexChanges.js";
import {
  emptyFrequencyPostings,
  FIELD_COUNT,
  type FieldPostings,
  type FrequencyPostings,
  inactivePostings,
  LARGE_FREQUENCY,
  termFrequencies,
} from "./postings.js";

/** The finished state of a compacted index (see {@link compactedPostings}). */
export type CompactedIndex = {
  ids: string[];
  /** Per dense id of the changed index: its dense id in the compacted one, -1 when not live. */
  newDenseIds: Int32Array;
  /** Per field: postings with precomputed contributions (inactive for fields that are not scored). */
  postings: FieldPostings[];
  termPostings: FrequencyPostings[];
  averageLengths: Float64Array;
  lengths: Int32Array[];
  totalLengths: Float64Array;
};

/** Compacts one field elsewhere (a worker thread), or says it cannot (null: compact it here instead). */
export type FieldCompactor = (
  input: FieldCompactionInput,
) => Generator<void, FieldCompactionResult | null, void>;

/**
 * The compacted index of a changed index whose base's dense ids follow the ids' order, scores summed over fields
 * (see the module comment): per field, a counting pass over each term's postings gives its document frequency
 * and place, then a writing pass fills the documents, frequencies and contributions, each computed as a full
 * build computes it (`postings.ts`, `fieldPostings`). Null when the base is in another order (use
 * `compactedBuilders`). `termCount`: the dictionary's size (terms past the base's only have added postings).
 * `elsewhere`: compacts each field in a worker thread when it can (`compactionThread.ts`); the same code runs
 * there, so the result is the same bit for bit.
 */
export function* compactedPostings(
  base: IndexBase,
  changes: IndexChanges,
  parameters: { fieldWeights: Readonly<KnowledgeFieldWeights>; k1: number; b: number; termCount: number },
  elsewhere: FieldCompactor | null = null,
): Generator<void, CompactedIndex | null, void> {
  const { ids, newDenseIds, baseInOrder, addedInOrder } = yield* renumbering(base, changes);
  if (!baseInOrder) return null;
  const documentCount = ids.length;
  const { lengths, totals } = yield* compactedLengths(base, changes, newDenseIds, documentCount);
  const averageLengths = new Float64Array(FIELD_COUNT);
  for (let field = 0; field < FIELD_COUNT; field++)
    averageLengths[field] = documentCount > 0 ? totals[field]! / documentCount : 0;
  const { termCount, k1, b } = parameters;
  const postings: FieldPostings[] = [];
  const termPostings: FrequencyPostings[] = [];
  // Scratch of the added postings: per term, a count, then a cursor (zero between fields).
  const termCounts = new Int32Array(termCount);
  for (let field = 0; field < FIELD_COUNT; field++) {
    const weight = parameters.fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!];
    if (!(weight > 0)) {
      postings.push(inactivePostings());
      termPostings.push(emptyFrequencyPostings());
      continue;
    }
    const averageLength = averageLengths[field]!;
    const input: FieldCompactionInput = {
      field,
      base: base.termPostings[field]!,
      added: yield* addedFieldPostings(changes, field, newDenseIds, addedInOrder, termCounts),
      newDenseIds,
      termCount,
      scored:
        averageLength > 0 ? { weight, k1, b, documentCount, averageLength, lengths: lengths[field]! } : null,
    };
    const finished = (elsewhere ? yield* elsewhere(input) : null) ?? (yield* compactedField(input));
    postings.push(finished.postings);
    termPostings.push(finished.frequencies);
  }
  return {
    ids,
    newDenseIds,
    postings,
    termPostings,
    averageLengths,
    lengths,
    totalLengths: Float64Array.from(totals),
  };
}

/**
 * What compacting one field reads: the base's postings of the field, the live added documents' postings, where
 * each dense id goes, and, when the field is scored, what its contributions are computed from (typed arrays and
 * numbers only, so a worker thread can be given them).
 */
export type FieldCompactionInput = {
  /** The field's number (what a worker's memory is accounted by). */
  field: number;
  base: FrequencyPostings;
  added: AddedFieldPostings;
  newDenseIds: Int32Array;
  termCount: number;
  /** Null when no live document has the field (no average length): frequencies only. */
  scored: {
    weight: number;
    k1: number;
    b: number;
    documentCount: number;
    averageLength: number;
    /** Per fresh dense id: the field's length. */
    lengths: Int32Array;
  } | null;
};

/** One compacted field: postings with contributions (inactive when not scored) and its frequency postings. */
export type FieldCompactionResult = { postings: FieldPostings; frequencies: FrequencyPostings };

/**
 * Where the arrays a compacted field keeps are allocated: ordinary typed arrays, or (a compaction worker allowed
 * to) typed arrays on `SharedArrayBuffer`s (`compactionMemory.ts`).
 */
export type FieldArrayAllocator = {
  int32(length: number): Int32Array;
  uint8(length: number): Uint8Array;
  float64(length: number): Float64Array;
};

/** Ordinary typed arrays. */
export const ORDINARY_ARRAYS: FieldArrayAllocator = {
  int32: (length) => new Int32Array(length),
  uint8: (length) => new Uint8Array(length),
  float64: (length) => new Float64Array(length),
};

/** One field's compaction between two steps: its inputs, the arrays being written, and where it is. */
type FieldWriting = {
  basePostings: FrequencyPostings;
  baseTermCount: number;
  added: AddedFieldPostings;
  newDenseIds: Int32Array;
  termCount: number;
  scored: { weight: number; k1: number; documentCount: number; normalizations: Float64Array } | null;
  offsets: Int32Array;
  docs: Int32Array;
  frequencies: Uint8Array;
  contributions: Float64Array;
  largeFrequencies: Map<number, number> | null;
  /** The next of the added postings' terms. */
  addedAt: number;
  /** The next posting written. */
  slot: number;
};

/**
 * Counting, from term `from`: each term's live postings, base then added, into `offsets`, until about
 * `compactionStep.work` postings were read; returns the term to go on from. Plain functions, not the generator's
 * own loops: a generator run once per compaction stays in V8's interpreter, where a step took milliseconds.
 */
function countPostings(writing: FieldWriting, from: number): number {
  const { basePostings, baseTermCount, added, newDenseIds, termCount, offsets } = writing;
  const baseOffsets = basePostings.offsets;
  const baseDocs = basePostings.docs;
  let addedAt = writing.addedAt;
  let work = 0;
  let term = from;
  const budget = compactionStep.work;
  while (term < termCount && work < budget) {
    let count = 0;
    if (term < baseTermCount) {
      const end = baseOffsets[term + 1]!;
      for (let position = baseOffsets[term]!; position < end; position++)
        if (newDenseIds[baseDocs[position]!]! >= 0) count++;
      work += end - baseOffsets[term]!;
    }
    if (addedAt < added.terms.length && added.terms[addedAt] === term) {
      count += added.starts[addedAt + 1]! - added.starts[addedAt]!;
      addedAt++;
    }
    offsets[term + 1] = offsets[term]! + count;
    work++;
    term++;
  }
  compactionStep.done += work;
  writing.addedAt = addedAt;
  return term;
}

/**
 * Writing, from term `from`: each term's documents, frequencies and contributions, merged from the base's and the
 * added postings, until about `compactionStep.work` postings were read; returns the term to go on from.
 */
function writePostings(writing: FieldWriting, from: number): number {
  const { basePostings, baseTermCount, added, newDenseIds, termCount, scored, offsets } = writing;
  const { docs, frequencies, contributions } = writing;
  const baseOffsets = basePostings.offsets;
  const baseDocs = basePostings.docs;
  const pairs = added.pairs;
  let addedAt = writing.addedAt;
  let slot = writing.slot;
  let work = 0;
  let term = from;
  const budget = compactionStep.work;
  for (; term < termCount && work < budget; term++) {
    const documentFrequency = offsets[term + 1]! - offsets[term]!;
    if (documentFrequency === 0) {
      if (addedAt < added.terms.length && added.terms[addedAt] === term) addedAt++;
      continue;
    }
    const weightedIdf = scored ? scored.weight * bm25Idf(scored.documentCount, documentFrequency) : 0;
    let pair = 0;
    let pairEnd = 0;
    if (addedAt < added.terms.length && added.terms[addedAt] === term) {
      pair = added.starts[addedAt]!;
      pairEnd = added.starts[addedAt + 1]!;
      addedAt++;
    }
    let position = term < baseTermCount ? baseOffsets[term]! : 0;
    const end = term < baseTermCount ? baseOffsets[term + 1]! : 0;
    // Read once per term (a full build's frequencies are recovered term by term when first read).
    const baseFrequencies = end > position ? termFrequencies(basePostings, term) : null;
    work += end - position + 1;
    // Merge: renumbering keeps the base postings in order; the added ones are sorted.
    while (position < end || pair < pairEnd) {
      let doc: number;
      let frequency: number;
      const baseDoc = position < end ? newDenseIds[baseDocs[position]!]! : -1;
      if (position < end && baseDoc < 0) {
        position++;
        continue;
      }
      if (pair < pairEnd && (position >= end || pairs[pair * 2]! < baseDoc)) {
        doc = pairs[pair * 2]!;
        frequency = pairs[pair * 2 + 1]!;
        pair++;
      } else {
        doc = baseDoc;
        frequency = baseFrequencies![position]!;
        if (frequency === LARGE_FREQUENCY) frequency = basePostings.largeFrequencies!.get(position)!;
        position++;
      }
      docs[slot] = doc;
      if (frequency >= LARGE_FREQUENCY) {
        frequencies[slot] = LARGE_FREQUENCY;
        writing.largeFrequencies ??= new Map();
        writing.largeFrequencies.set(slot, frequency);
      } else frequencies[slot] = frequency;
      if (scored)
        contributions[slot] = bm25TermScore(weightedIdf, frequency, scored.k1, scored.normalizations[doc]!);
      slot++;
    }
  }
  compactionStep.done += work;
  writing.addedAt = addedAt;
  writing.slot = slot;
  return term;
}

/**
 * One field of {@link compactedPostings}; `allocate`: where the kept arrays go. Yields after about
 * `compactionStep.work` postings (or documents) read.
 */
export function* compactedField(
  input: FieldCompactionInput,
  allocate: FieldArrayAllocator = ORDINARY_ARRAYS,
): Generator<void, FieldCompactionResult, void> {
  const { base: basePostings, added, newDenseIds, termCount } = input;
  let scored: FieldWriting["scored"] = null;
  if (input.scored) {
    const { weight, k1, b, documentCount, averageLength, lengths } = input.scored;
    // Per fresh dense id, the length part of BM25's denominator.
    const normalizations = new Float64Array(documentCount);
    for (let from = 0; from < documentCount; from += compactionStep.work) {
      normalizeLengths(
        normalizations,
        lengths,
        k1,
        b,
        averageLength,
        from,
        Math.min(documentCount, from + compactionStep.work),
      );
      yield;
    }
    scored = { weight, k1, documentCount, normalizations };
  }
  const writing: FieldWriting = {
    basePostings,
    baseTermCount: Math.max(0, basePostings.offsets.length - 1),
    added,
    newDenseIds,
    termCount,
    scored,
    offsets: allocate.int32(termCount + 1),
    docs: new Int32Array(0),
    frequencies: new Uint8Array(0),
    contributions: new Float64Array(0),
    largeFrequencies: null,
    addedAt: 0,
    slot: 0,
  };
  for (let term = 0; term < termCount; ) {
    term = countPostings(writing, term);
    yield;
  }
  const postingCount = writing.offsets[termCount]!;
  writing.docs = allocate.int32(postingCount);
  writing.frequencies = allocate.uint8(postingCount);
  writing.contributions = allocate.float64(scored ? postingCount : 0);
  writing.addedAt = 0;
  for (let term = 0; term < termCount; ) {
    term = writePostings(writing, term);
    yield;
  }
  const { offsets, docs, frequencies, contributions, largeFrequencies } = writing;
  return {
    postings: scored ? { offsets, docs, contributions, active: true } : inactivePostings(),
    frequencies: { offsets, docs, frequencies, largeFrequencies, recovery: null },
  };
}

/** Per fresh dense id from `from` to `to`: the length part of BM25's denominator. */
function normalizeLengths(
  normalizations: Float64Array,
  lengths: Int32Array,
  k1: number,
  b: number,
  averageLength: number,
  from: number,
  to: number,
): void {
  for (let doc = from; doc < to; doc++)
    normalizations[doc] = bm25LengthNormalization(k1, b, lengths[doc]!, averageLength);
  compactionStep.done += to - from;
}
