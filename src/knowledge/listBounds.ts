/**
 * The pruning's per-list upper bounds: a posting list's largest contribution. A search computes the bound of each
 * of its lists the first time a query reads the term (then caches it), which costs a pass over the whole list: at
 * a million entries a frequent term's body list holds ~10^6 postings, and the first long queries paid ~100 such
 * passes per turn. A build therefore computes the bounds of its long lists once, while finalizing, in slices
 * ({@link longListBoundSteps}); short lists stay computed on demand (a few microseconds each).
 */
import { largestWebAssembly } from "./checksum.js";
import type { FieldPostings } from "./postings.js";

/** Lists with at least this many postings get their bound at build time. */
export const LONG_LIST_POSTINGS = 4096;

/** From this many postings {@link listUpperBound} copies the contributions into the WebAssembly kernel. */
const WEBASSEMBLY_MIN_POSTINGS = 256;

/** Postings read per slice of {@link longListBoundSteps} (about a millisecond). */
const POSTINGS_PER_SLICE = 1 << 20;

/**
 * The largest of `contributions[start, end)` (0 for an empty range), or `Infinity` when one is negative or not a
 * number, which turns pruning off for queries with that list.
 */
export function listUpperBound(contributions: Float64Array, start: number, end: number): number {
  // Long lists in the WebAssembly kernel (see `largestWebAssembly`): at a cold start this loop runs interpreted.
  if (end - start >= WEBASSEMBLY_MIN_POSTINGS) {
    const largest = largestWebAssembly(contributions, start, end);
    if (largest !== null) return largest;
  }
  let bound = 0;
  for (let position = start; position < end; position++) {
    const contribution = contributions[position]!;
    if (contribution > bound) bound = contribution;
    else if (!(contribution >= 0)) return Number.POSITIVE_INFINITY;
  }
  return bound;
}

/**
 * Per entry of `postings`: term id → {@link listUpperBound} of each list of at least {@link LONG_LIST_POSTINGS}
 * postings, or `minimumPostings` (terms below `termCount`). A generator that yields after about {@link POSTINGS_PER_SLICE} postings
 * read, so a sliced caller (an async build, a compaction) keeps its slices short.
 */
export function* longListBoundSteps(
  postings: readonly FieldPostings[],
  termCount: number,
  minimumPostings = LONG_LIST_POSTINGS,
): Generator<void, Map<number, number>[], void> {
  const bounds: Map<number, number>[] = [];
  let sinceYield = 0;
  for (const field of postings) {
    const fieldBounds = new Map<number, number>();
    bounds.push(fieldBounds);
    if (!field.active) continue;
    const { offsets, contributions } = field;
    for (let term = 0; term < termCount; term++) {
      const start = offsets[term]!;
      const end = offsets[term + 1]!;
      if (end - start < minimumPostings) continue;
      fieldBounds.set(term, listUpperBound(contributions, start, end));
      sinceYield += end - start;
      if (sinceYield >= POSTINGS_PER_SLICE) {
        sinceYield = 0;
        yield;
      }
    }
  }
  return bounds;
}
