/**
 * How the scoring loop (`scoreLists.ts`) reads a posting list's contributions: from the list's own array, or from a
 * coded list (the PostgreSQL reader's cached lists, `postgres/codedLists.ts`), whose postings each name one of the
 * list's distinct values. The in-memory index's lists are read as before.
 */

/**
 * Document ids per scoring window after the first (`scoreLists.ts`): 256 KiB of totals, which stay in the CPU's L2
 * cache. Also the most postings of one list within a window. Each window costs every list read a search for the
 * window's end and a loop start: at a million entries a long query's 400 lists over 31 windows instead of 61 (16,384
 * ids) cost 5-7% less CPU on the same searches; 65,536 ids (512 KiB of totals) cost more (README, "A million entries").
 */
export const WINDOW_DOCUMENTS = 1 << 15;

/**
 * One posting list as the scoring loop reads it: `docs` ascending, each with its contribution, which is
 * `contributions[position]`, or in a coded list (`codes` set: the PostgreSQL reader's cached lists, see
 * `postgres/codedLists.ts`) `contributions[codes[position]]`, `contributions` then holding the list's distinct
 * values: the same numbers, so the same sums bit for bit.
 */
export type ScoringList = {
  docs: Int32Array;
  contributions: Float64Array;
  codes?: Uint8Array | Uint16Array | undefined;
};

/** The contribution of `list`'s posting at `position`. */
export function contributionAt(list: ScoringList, position: number): number {
  const codes = list.codes;
  return list.contributions[codes === undefined ? position : codes[position]!]!;
}

/** A coded list's contributions over one window, decoded for the window's loop (see {@link windowContributions}). */
const windowValues = new Float64Array(WINDOW_DOCUMENTS);
/** Where the array {@link windowContributions} returned last starts in its list: read it at `position - offset`. */
export const windowRead = { offset: 0 };

/**
 * The contributions of `list`'s postings `from` to `stop` (at most one window's: its documents are distinct), as an
 * array read at `position - windowRead.offset`: the list's own (offset 0), or a coded list's decoded into `windowValues`.
 */
export function windowContributions(list: ScoringList, from: number, stop: number): Float64Array {
  const codes = list.codes;
  if (codes === undefined) {
    windowRead.offset = 0;
    return list.contributions;
  }
  const values = list.contributions;
  // One loop per code width: each stays monomorphic.
  if (codes instanceof Uint8Array)
    for (let position = from; position < stop; position++)
      windowValues[position - from] = values[codes[position]!]!;
  else
    for (let position = from; position < stop; position++)
      windowValues[position - from] = values[codes[position]!]!;
  windowRead.offset = from;
  return windowValues;
}
