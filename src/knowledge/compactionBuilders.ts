/**
 * Compaction through the build buffers (BM25F, or a base whose dense ids are not in the ids' order; the usual case
 * is `compactedPostings` in `compaction.ts`): the live documents' postings are written document by document into
 * the buffers a full build fills, and the index finalizes them as a build does.
 */
import type { KnowledgeFieldWeights } from "../types/knowledge.js";
import { compactedLengths, renumbering } from "./compactionInputs.js";
import { compactionStep } from "./compactionStep.js";
import { KNOWLEDGE_FIELD_NAMES } from "./defaults.js";
import type { IndexBase, IndexChanges } from "./indexChanges.js";
import { FIELD_COUNT, type FieldBuilder, frequencyAt, IntBuffer } from "./postings.js";

function bufferOf(data: Int32Array, length: number): IntBuffer {
  const buffer = new IntBuffer();
  buffer.data = data;
  buffer.length = length;
  return buffer;
}

/**
 * The live documents' ids in code-unit order, where each dense id goes, and their build buffers (BM25F, or a base
 * in another order than its ids': see the module comment).
 */
export function* compactedBuilders(
  base: IndexBase,
  changes: IndexChanges,
  fieldWeights: Readonly<KnowledgeFieldWeights>,
): Generator<void, { ids: string[]; newDenseIds: Int32Array; builders: FieldBuilder[] }, void> {
  const baseCount = base.ids.length;
  const { ids, newDenseIds } = yield* renumbering(base, changes);
  const documentCount = ids.length;
  const addedTerms = changes.added.terms.slice(0, changes.addedCount);
  const { lengths, totals } = yield* compactedLengths(base, changes, newDenseIds, documentCount);
  const builders: FieldBuilder[] = [];
  for (let field = 0; field < FIELD_COUNT; field++) {
    const postings = base.termPostings[field]!;
    const scored = fieldWeights[KNOWLEDGE_FIELD_NAMES[field]!] > 0 && postings.offsets.length > 0;
    // Per new document: the end of its postings, from each document's posting count.
    const ends = new Int32Array(documentCount);
    if (scored) {
      for (let position = 0; position < postings.docs.length; position++) {
        const target = newDenseIds[postings.docs[position]!]!;
        if (target >= 0) ends[target]!++;
        if (position % compactionStep.work === 0) yield;
      }
      addedTerms.forEach((terms, index) => {
        const target = newDenseIds[baseCount + index]!;
        if (target >= 0) ends[target]! += terms.terms[field]!.length;
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
          const target = newDenseIds[postings.docs[position]!]!;
          if (target < 0) continue;
          const slot = cursor[target]!++;
          terms[slot] = term;
          frequencies[slot] = frequencyAt(postings, term, position);
        }
        sinceYield += end - postings.offsets[term]!;
        if (sinceYield >= compactionStep.work) {
          sinceYield = 0;
          yield;
        }
      }
      addedTerms.forEach((documentTerms, index) => {
        const target = newDenseIds[baseCount + index]!;
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
      lengths: bufferOf(lengths[field]!, documentCount),
      total: totals[field]!,
    });
    yield;
  }
  return { ids, newDenseIds, builders };
}
