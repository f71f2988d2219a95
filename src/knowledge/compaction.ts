/**
 * Compaction: the build buffers of a fresh index holding exactly the live documents of a changed index (its
 * base minus the removed or replaced documents, plus the added ones), in code-unit order of their ids, read from
 * the stored term-frequency postings instead of tokenizing any text again. Finalizing them gives the index a
 * full build of the same entries gives (same term ids, dense ids, statistics and contributions). A generator, so
 * a background compaction yields to the event loop in slices.
 */
import type { KnowledgeFieldWeights } from "../types/knowledge.js";
import { KNOWLEDGE_FIELD_NAMES } from "./defaults.js";
import { baseOrder, type IndexBase, type IndexChanges } from "./indexChanges.js";
import { FIELD_COUNT, type FieldBuilder, frequencyAt, IntBuffer } from "./postings.js";

/** Postings (or documents) handled between two yields. */
const WORK_PER_STEP = 1 << 15;

function bufferOf(data: Int32Array, length: number): IntBuffer {
  const buffer = new IntBuffer();
  buffer.data = data;
  buffer.length = length;
  return buffer;
}

/** The live documents' ids in code-unit order and their build buffers (see the module comment). */
export function* compactedBuilders(
  base: IndexBase,
  changes: IndexChanges,
  fieldWeights: Readonly<KnowledgeFieldWeights>,
): Generator<void, { ids: string[]; builders: FieldBuilder[] }, void> {
  const baseCount = base.ids.length;
  const order = baseOrder(base);
  const live = changes.live;
  const added = changes.added;
  // Merge the live base documents (in rank order) with the added ones (sorted).
  const ids: string[] = [];
  const newOfBase = new Int32Array(baseCount).fill(-1);
  const newOfAdded = new Int32Array(changes.addedCount).fill(-1);
  // Live added documents in id order.
  const addedOrder: number[] = [];
  for (let index = 0; index < changes.addedCount; index++)
    if (live[baseCount + index] === 1) addedOrder.push(index);
  addedOrder.sort((left, right) => (added.ids[left]! < added.ids[right]! ? -1 : 1));
  let next = 0;
  for (let rank = 0; rank <= baseCount; rank++) {
    const doc = rank < baseCount ? order[rank]! : -1;
    if (doc >= 0 && live[doc] === 0) continue;
    while (next < addedOrder.length && (doc < 0 || added.ids[addedOrder[next]!]! < base.ids[doc]!)) {
      newOfAdded[addedOrder[next]!] = ids.length;
      ids.push(added.ids[addedOrder[next++]!]!);
    }
    if (doc < 0) break;
    newOfBase[doc] = ids.length;
    ids.push(base.ids[doc]!);
    if ((rank & (WORK_PER_STEP - 1)) === 0) yield;
  }
  const documentCount = ids.length;
  const addedTerms = added.terms.slice(0, changes.addedCount);
  const builders: FieldBuilder[] = [];
  for (let field = 0; field < FIELD_COUNT; field++) {
    const lengths = new Int32Array(documentCount);
    let total = 0;
    const baseLengths = base.lengths[field]!;
    for (let doc = 0; doc < baseCount; doc++) {
      const target = newOfBase[doc]!;
      if (target < 0) continue;
      lengths[target] = baseLengths[doc]!;
      total += baseLengths[doc]!;
    }
    addedTerms.forEach((terms, index) => {
      if (newOfAdded[index]! < 0) return;
      lengths[newOfAdded[index]!] = terms.lengths[field]!;
      total += terms.lengths[field]!;
    });
    const postings = base.termPostings[field]!;
    const scored = fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!] > 0 && postings.offsets.length > 0;
    // Per new document: the end of its postings, from each document's posting count.
    const ends = new Int32Array(documentCount);
    if (scored) {
      for (let position = 0; position < postings.docs.length; position++) {
        const target = newOfBase[postings.docs[position]!]!;
        if (target >= 0) ends[target]!++;
        if ((position & (WORK_PER_STEP - 1)) === 0) yield;
      }
      addedTerms.forEach((terms, index) => {
        if (newOfAdded[index]! >= 0) ends[newOfAdded[index]!]! += terms.terms[field]!.length;
      });
    }
    const cursor = new Int32Array(documentCount);
    let running = 0;
    for (let doc = 0; doc < documentCount; doc++) {
      cursor[doc] = running;
      running += ends[doc]!;
      ends[doc] = running;
    }
    const terms = new Int32Array(running);
    const frequencies = new Int32Array(running);
    if (scored) {
      const termLimit = postings.offsets.length - 1;
      let sinceYield = 0;
      for (let term = 0; term < termLimit; term++) {
        const end = postings.offsets[term + 1]!;
        for (let position = postings.offsets[term]!; position < end; position++) {
          const target = newOfBase[postings.docs[position]!]!;
          if (target < 0) continue;
          const slot = cursor[target]!++;
          terms[slot] = term;
          frequencies[slot] = frequencyAt(postings, term, position);
        }
        sinceYield += end - postings.offsets[term]!;
        if (sinceYield >= WORK_PER_STEP) {
          sinceYield = 0;
          yield;
        }
      }
      addedTerms.forEach((documentTerms, index) => {
        const target = newOfAdded[index]!;
        if (target < 0) return;
        const fieldTerms = documentTerms.terms[field]!;
        const fieldFrequencies = documentTerms.frequencies[field]!;
        for (let position = 0; position < fieldTerms.length; position++) {
          const slot = cursor[target]!++;
          terms[slot] = fieldTerms[position]!;
          frequencies[slot] = fieldFrequencies[position]!;
        }
      });
    }
    builders.push({
      terms: bufferOf(terms, running),
      frequencies: bufferOf(frequencies, running),
      ends: bufferOf(ends, documentCount),
      lengths: bufferOf(lengths, documentCount),
      total,
    });
    yield;
  }
  return { ids, builders };
}
