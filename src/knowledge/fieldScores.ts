/**
 * The BM25F per-field breakdown of one selected document's score, summed in the order the exhaustive scorer
 * accumulates it (so every part is bit-identical to it), and the searches in a sorted posting list that scoring
 * uses. (The pruned scorer reads its breakdowns from the postings it found while summing exact scores.)
 */
import type { KnowledgeFieldName } from "../types/knowledge.js";
import { KNOWLEDGE_FIELD_NAMES } from "./defaults.js";
import { FIELD_COUNT } from "./postings.js";
import type { ScoredIndex } from "./scoring.js";

/**
 * One document's BM25F score split by field: each matched term's posting shares, added in query-term order (the
 * order the totals were summed in), so every part is bit-identical to accumulating them in the scoring loop.
 */
export function bm25fFieldScores(
  index: ScoredIndex,
  termIds: readonly number[],
  doc: number,
): Partial<Record<KnowledgeFieldName, number>> {
  const postings = index.postings[0]!;
  const positions = new Int32Array(termIds.length);
  for (let list = 0; list < termIds.length; list++) {
    const term = termIds[list]!;
    positions[list] = findPosting(postings.docs, postings.offsets[term]!, postings.offsets[term + 1]!, doc);
  }
  return bm25fBreakdownAt(index.bm25fShares!, positions);
}

/**
 * The same breakdown from the document's position in each term's list (-1 where the term does not match it), in
 * query-term order: what the pruned scorer reads from the postings it found while summing exact scores.
 */
export function bm25fBreakdownAt(
  shares: Float64Array,
  positions: Int32Array,
): Partial<Record<KnowledgeFieldName, number>> {
  const parts = new Float64Array(FIELD_COUNT);
  let fieldBits = 0;
  for (let list = 0; list < positions.length; list++) {
    const position = positions[list]!;
    if (position < 0) continue;
    for (let field = 0; field < FIELD_COUNT; field++) {
      const share = shares[position * FIELD_COUNT + field]!;
      if (share > 0) {
        parts[field]! += share;
        fieldBits |= 1 << field;
      }
    }
  }
  const fieldScores: Partial<Record<KnowledgeFieldName, number>> = {};
  for (let field = 0; field < FIELD_COUNT; field++) {
    if (fieldBits & (1 << field)) fieldScores[KNOWLEDGE_FIELD_NAMES[field]!] = parts[field]!;
  }
  return fieldScores;
}

/** Position of `doc` in the ascending `docs[start, end)`, or -1. */
export function findPosting(docs: Int32Array, start: number, end: number, doc: number): number {
  let low = start;
  let high = end - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const value = docs[middle]!;
    if (value === doc) return middle;
    if (value < doc) low = middle + 1;
    else high = middle - 1;
  }
  return -1;
}

/** Per target of {@link findPostings}: where its search stands (grown as needed). */
let searchBases = new Int32Array(64);

/**
 * The position of each of `targets[0, count)` in the ascending `docs[start, end)` (-1 where absent), written to
 * `into[offset + index * stride]`: the same positions as {@link findPosting}, found by searches run side by side, one
 * halving step for every target before the next step, with no branch on the comparisons. At a million entries a
 * long list's search misses the cache at nearly every step; searches that do not wait on each other's loads (nor on
 * a mispredicted branch) let the processor overlap their misses.
 */
export function findPostings(
  docs: Int32Array,
  start: number,
  end: number,
  targets: Int32Array,
  count: number,
  into: Int32Array,
  offset: number,
  stride: number,
): void {
  if (end <= start) {
    for (let index = 0; index < count; index++) into[offset + index * stride] = -1;
    return;
  }
  if (searchBases.length < count) searchBases = new Int32Array(Math.max(count, 2 * searchBases.length));
  const bases = searchBases;
  bases.fill(start, 0, count);
  // The lower bound of each target lies in [base, base + length] (Khuong and Morin's branch-free search): ids are
  // int32 and non-negative, so the sign of their difference says whether the probed id is below the target.
  let length = end - start;
  while (length > 1) {
    const half = length >>> 1;
    for (let index = 0; index < count; index++) {
      const base = bases[index]!;
      bases[index] = base + (((docs[base + half]! - targets[index]!) >> 31) & half);
    }
    length -= half;
  }
  for (let index = 0; index < count; index++) {
    const target = targets[index]!;
    let position = bases[index]!;
    if (docs[position]! < target) position++;
    into[offset + index * stride] = position < end && docs[position] === target ? position : -1;
  }
}

/**
 * The first position from `position` in the ascending `docs[position, end)` whose document is at least `doc`
 * (`end` if none): galloping, so a probe costs the logarithm of the distance moved, not of the list's length.
 */
export function seek(docs: Int32Array, position: number, end: number, doc: number): number {
  if (position >= end || docs[position]! >= doc) return position;
  // docs[low] < doc throughout.
  let low = position;
  let step = 1;
  while (low + step < end && docs[low + step]! < doc) {
    low += step;
    step *= 2;
  }
  let high = Math.min(low + step, end);
  low++;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (docs[middle]! < doc) low = middle + 1;
    else high = middle;
  }
  return low;
}
