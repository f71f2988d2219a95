/**
 * The pruned scorer's loop ({@link scoreLists}): a query's posting lists read window by window of document ids, so
 * the accumulators stay in the CPU cache, skipping exactly what cannot reach the top K (MaxScore over per-list
 * upper bounds; see `scoreQuery` in `scoring.ts`, which calls it for the in-memory index, as the PostgreSQL backend
 * does for the postings it fetched).
 */
import { findPostings, seek } from "./fieldScores.js";
import { type ScoringKernel, SELECT_MAX_K, scoringKernelOf } from "./scoringKernel.js";
import {
  contributionAt,
  type ScoringList,
  WINDOW_DOCUMENTS,
  windowContributions,
  windowRead,
} from "./scoringList.js";
import { RESERVE_SLACK, TopDocuments } from "./topDocuments.js";

export { contributionAt, type ScoringList } from "./scoringList.js";

/** The first window is smaller, so that the top K, and with it the pruning threshold, are known early. */
const FIRST_WINDOW_DOCUMENTS = 1 << 12;
/** Sizes of the scoring windows, in document ids (at most {@link WINDOW_DOCUMENTS}); tests make them tiny. */
export type ScoringWindows = {
  first: number;
  later: number;
  /** False: read every list (tests, measurements). */
  pruning?: boolean;
  /** How windows are read (tests force each; by default chosen from the query's postings per document). */
  layout?: "dense" | "sparse";
  /** Largest share of the threshold the skipped lists' bounds may sum to (default {@link NON_ESSENTIAL_SHARE}). */
  nonEssentialShare?: number;
  /** True: probe skipped lists even where reading the window whole would cost less (tests of the probing). */
  alwaysProbe?: boolean;
  /**
   * False: dense windows always mark the documents they touch (tests, measurements). By default a dense window
   * read once the threshold is positive finds its documents from their totals instead (see `scanWindowTotals`).
   */
  unmarked?: boolean;
};
export const DEFAULT_WINDOWS: ScoringWindows = {
  first: FIRST_WINDOW_DOCUMENTS,
  later: WINDOW_DOCUMENTS,
  pruning: true,
};

/**
 * How far a bound must fall below the threshold before a document is skipped. Bounds and scores are sums of the
 * same non-negative numbers in different orders; their rounding differs by a relative 1e-12 at most for the
 * longest query (5,120 lists), far below this factor, so a skipped document's score is certainly below the
 * threshold (the pruning never relies on exact floating-point ties).
 */
const BOUND_SLACK = 1 + 2 ** -20;

/**
 * What one probe of a skipped list costs, in postings read (measured: a galloping probe with its unpredictable
 * branches ~45 ns, reading a posting into the window's totals ~4 ns).
 */
const PROBE_COST = 12;

/**
 * The skipped (non-essential) lists' bounds may sum to at most this share of the threshold, not all of it: a
 * document is then probed only when the lists it was read from bring it within that share of the threshold. With
 * the benchmark's long queries (hundreds of lists, flat scores), skipping lists up to the whole threshold left
 * nearly every document to probe; at 0.4 the probes fell 4x and the postings read by a quarter (measured at
 * 100k entries, 300 queries: CPU -30%). Any share is exact: it only decides which lists are read.
 */
const NON_ESSENTIAL_SHARE = 0.4;

/**
 * From this many postings per document (summed over the query's lists), windows are read without a branch per
 * posting (see `scanWindowDense`); below, the touched documents are tracked per posting.
 */
const DENSE_POSTINGS_PER_DOCUMENT = 2;

/** Window accumulators shared by every search (searches are synchronous and never interleave). */
const windowTotals = new Float64Array(WINDOW_DOCUMENTS);
const windowMarks = new Uint8Array(WINDOW_DOCUMENTS);
const windowTouched = new Int32Array(WINDOW_DOCUMENTS);

/**
 * Per-list scratch shared by every search the same way (grown as needed): at a million entries a long query's
 * per-search arrays (its lists' order, bounds, cursors) were a fair part of what a turn allocated, and every ~16 MB
 * allocated costs a scavenge of 25-140 ms there (see README, "A million entries").
 */
let listOrder = new Int32Array(64);
let listMerge = new Int32Array(64);
let listPrefix = new Float64Array(65);
let listEssential = new Uint8Array(64);
let listCursors = new Int32Array(64);
let listWindowFirst = new Int32Array(64);

/** Grows the per-list scratch to hold `listCount` lists. */
function reserveLists(listCount: number): void {
  if (listOrder.length >= listCount) return;
  const length = Math.max(listCount, 2 * listOrder.length);
  listOrder = new Int32Array(length);
  listMerge = new Int32Array(length);
  listPrefix = new Float64Array(length + 1);
  listEssential = new Uint8Array(length);
  listCursors = new Int32Array(length);
  listWindowFirst = new Int32Array(length);
}

/** The scoring kernel every list of `postings` lives in (uncoded), or undefined. */
function listsKernel(postings: readonly ScoringList[]): ScoringKernel | undefined {
  const kernel = scoringKernelOf(postings[0]!.docs.buffer);
  if (kernel === undefined) return undefined;
  for (const list of postings)
    if (
      list.codes !== undefined ||
      list.docs.buffer !== kernel.buffer ||
      list.contributions.buffer !== kernel.buffer
    )
      return undefined;
  return kernel;
}

/**
 * Writes to `order[0, count)` the lists 0 to `count - 1` by ascending `upper`, ties by list (a stable merge sort
 * through `merge`: a typed array's sort with a comparison function copies the array and boxes what it returns).
 */
function sortByBound(order: Int32Array, merge: Int32Array, count: number, upper: Float64Array): void {
  for (let list = 0; list < count; list++) order[list] = list;
  let from = order;
  let to = merge;
  for (let width = 1; width < count; width *= 2) {
    for (let left = 0; left < count; left += 2 * width) {
      const middle = Math.min(left + width, count);
      const right = Math.min(left + 2 * width, count);
      let first = left;
      let second = middle;
      let out = left;
      while (first < middle && second < right)
        to[out++] = upper[from[second]!]! < upper[from[first]!]! ? from[second++]! : from[first++]!;
      while (first < middle) to[out++] = from[first++]!;
      while (second < right) to[out++] = from[second++]!;
    }
    const swap = from;
    from = to;
    to = swap;
  }
  if (from !== order) order.set(from.subarray(0, count));
}

/**
 * A query's posting lists in the exhaustive order (field, then query term): list `n` is
 * `postings[n]` from `starts[n]` to `ends[n]`, and none of its contributions exceeds `upper[n]` (`Infinity` when
 * one is negative or not a number, which turns pruning off).
 */
export type QueryLists = {
  postings: ScoringList[];
  starts: Int32Array;
  ends: Int32Array;
  upper: Float64Array;
};

/**
 * A part of a search (see `splitScoring.ts`): only the documents in [`from`, `to`) (and the ranges `next` gives)
 * are ranked. `exchange`, when given, is called before each window and once after the last with this part's
 * threshold (its K-th score held, minus infinity before) and best scores, and returns a lower bound of the whole
 * search's K-th score (minus infinity when none is known). A document below that floor cannot be among the whole
 * search's best K, so pruning may skip it and the final exact sums leave it out: the part's result is then not its
 * own top K, but every document of the whole search's top K in its ranges is in it, with its exact score, so
 * merging the parts' results (`mergeRanked`) gives the whole top K exactly.
 */
export type ScoringPart = {
  from: number;
  to: number;
  /**
   * Once [`from`, `to`) is read, the next range of document ids this part ranks (above the ranges before it), or
   * null when none is left: two threads claiming ranges from one counter share a search's work however fast each
   * runs. The part's result then covers all of its ranges.
   */
  next?: () => { from: number; to: number } | null;
  /** `best`: this part's documents held so far, see {@link TopDocuments.bestScores}. */
  exchange?: (threshold: number, best: TopDocuments) => number;
};

/**
 * {@link scoreQuery}'s loop over lists given by the caller (the PostgreSQL backend scores the postings it fetched
 * with it): the best `topK` documents of `lists` (dense ids below `documentCount`), score descending, ties by
 * `ranks`, each score summed in the list order. `positions`: filled with each ranked document's position in
 * every list (-1 where absent).
 */
export function scoreLists(
  lists: QueryLists,
  documentCount: number,
  ranks: Int32Array,
  topK: number,
  mask: Uint8Array | null,
  windows: ScoringWindows = DEFAULT_WINDOWS,
  positions?: Map<number, Int32Array>,
  part?: ScoringPart,
): { doc: number; score: number }[] {
  let rangeStart = part ? Math.max(0, part.from) : 0;
  let rangeEnd = part ? Math.min(documentCount, part.to) : documentCount;
  const firstWindow = Math.max(1, Math.min(WINDOW_DOCUMENTS, windows.first));
  const laterWindows = Math.max(1, Math.min(WINDOW_DOCUMENTS, windows.later));
  const listCount = lists.postings.length;
  const capacity = Math.min(Math.ceil(topK), documentCount);
  if (listCount === 0 || !(capacity > 0)) return [];
  const { postings, starts, ends, upper } = lists;
  let postingCount = 0;
  for (let list = 0; list < listCount; list++) postingCount += ends[list]! - starts[list]!;
  const dense =
    windows.layout === undefined
      ? postingCount >= documentCount * DENSE_POSTINGS_PER_DOCUMENT
      : windows.layout === "dense";
  const nonEssentialShare = windows.nonEssentialShare ?? NON_ESSENTIAL_SHARE;
  // The lists by ascending bound, and prefix sums of those bounds: the first `count` lists of `order` can add at
  // most `prefix[count]` to any document.
  reserveLists(listCount);
  const order = listOrder;
  sortByBound(order, listMerge, listCount, upper);
  const prefix = listPrefix;
  prefix[0] = 0;
  for (let position = 0; position < listCount; position++)
    prefix[position + 1] = prefix[position]! + upper[order[position]!]!;
  const essential = listEssential;
  let finiteBounds = true;
  for (let list = 0; list < listCount; list++)
    if (upper[list] === Number.POSITIVE_INFINITY) finiteBounds = false;
  /** Whether the current dense window is read without marks (see `scanWindowTotals`). */
  let unmarked = false;
  // Per list: a position at or before its first posting in the current window. A skipped list is not searched for
  // the window's end (at a million entries that cost ~30 cache misses per list and window); its cursor only moves
  // when a probe or a later read needs it.
  const cursors = listCursors;
  for (let list = 0; list < listCount; list++) cursors[list] = starts[list]!;
  /** Per list read in the current window: where its window's postings start (to read the window again). */
  const windowFirst = listWindowFirst;

  // The best documents so far.
  const top = new TopDocuments(capacity, ranks);
  const offer = (score: number, doc: number, exact: boolean): void => top.offer(score, doc, exact);
  const exchange = part?.exchange;
  /** The other parts' floor (see {@link ScoringPart}), read before each window. */
  let floor = Number.NEGATIVE_INFINITY;
  /** The pruning's threshold: the K-th score held, or the other parts' floor when higher (one closure either way). */
  const threshold = (): number => Math.max(floor, top.threshold());

  // Documents are probed in ascending order, so a skipped list's cursor only moves forward.
  /** The contribution of `doc` in skipped `list` (0 when absent), moving the list's cursor up to `doc`. */
  const probe = (list: number, doc: number): number => {
    const docs = postings[list]!.docs;
    const end = ends[list]!;
    const position = seek(docs, cursors[list]!, end, doc);
    cursors[list] = position;
    return position < end && docs[position] === doc ? contributionAt(postings[list]!, position) : 0;
  };
  // The exact scores of `docs[0, count)` (zeros in `scores`): each summed over every list in the exhaustive order
  // (an absent posting adds nothing), each list searched whole for all of them together (this runs once the windows
  // are done, for the few documents ranked at the end). Their positions are kept in one array, a row per document.
  const exactScores = (docs: Int32Array, count: number, scores: Float64Array): void => {
    const found = new Int32Array(count * listCount);
    for (let list = 0; list < listCount; list++) {
      const listPostings = postings[list]!;
      findPostings(listPostings.docs, starts[list]!, ends[list]!, docs, count, found, list, listCount);
      for (let index = 0; index < count; index++) {
        const position = found[index * listCount + list]!;
        if (position >= 0) scores[index]! += contributionAt(listPostings, position);
      }
    }
    if (positions)
      for (let index = 0; index < count; index++)
        positions.set(docs[index]!, found.subarray(index * listCount, (index + 1) * listCount));
  };

  // Lists that all live in one scoring memory (a loaded artifact's) are read by its WebAssembly kernel, with the
  // memory's own window scratch (see `scoringKernel.ts`).
  const kernel = listsKernel(postings);
  const totals = kernel === undefined ? windowTotals : kernel.totals;
  const marks = kernel === undefined ? windowMarks : kernel.marks;
  const touched = kernel === undefined ? windowTouched : kernel.touched;
  let remaining = false;
  /**
   * Reads the window's postings of the essential lists (every list when none is skipped) into the window's
   * totals, in the exhaustive order, and moves their cursors to the window's end. Returns the number of documents
   * touched; `remaining` tells whether any list may go on past the window.
   */
  const scanWindow = (windowStart: number, windowEnd: number): number =>
    !dense
      ? scanWindowSparse(windowStart, windowEnd)
      : unmarked
        ? scanWindowTotals(windowStart, windowEnd)
        : scanWindowDense(windowStart, windowEnd);
  const scanWindowSparse = (windowStart: number, windowEnd: number): number => {
    let touchedCount = 0;
    remaining = false;
    if (kernel !== undefined) {
      if (mask !== null) kernel.mask.set(mask.subarray(windowStart, windowEnd));
      const masked = mask === null ? 0 : 1;
      for (let list = 0; list < listCount; list++) {
        const end = ends[list]!;
        if (essential[list] === 0) {
          if (cursors[list]! < end) remaining = true;
          continue;
        }
        const { docs, contributions } = postings[list]!;
        const position = seek(docs, cursors[list]!, end, windowStart);
        windowFirst[list] = position;
        touchedCount = kernel.sparse(
          docs.byteOffset,
          contributions.byteOffset,
          position,
          end,
          windowStart,
          windowEnd,
          masked,
          touchedCount,
        );
        const reached = kernel.state[0]!;
        cursors[list] = reached;
        if (reached < end) remaining = true;
      }
      return touchedCount;
    }
    for (let list = 0; list < listCount; list++) {
      const end = ends[list]!;
      if (essential[list] === 0) {
        if (cursors[list]! < end) remaining = true;
        continue;
      }
      const docs = postings[list]!.docs;
      let position = seek(docs, cursors[list]!, end, windowStart);
      windowFirst[list] = position;
      // A coded list's window is decoded up to its end (a list as it is needs no end).
      const coded = postings[list]!.codes !== undefined;
      const windowStop = coded ? seek(docs, position, end, windowEnd) : position;
      const contributions = windowContributions(postings[list]!, position, windowStop);
      const offset = windowRead.offset;
      for (; position < end; position++) {
        const doc = docs[position]!;
        if (doc >= windowEnd) break;
        if (mask !== null && mask[doc] === 0) continue;
        const local = doc - windowStart;
        if (marks[local] === 0) {
          marks[local] = 1;
          touched[touchedCount++] = local;
        }
        totals[local]! += contributions[position - offset]!;
      }
      cursors[list] = position;
      if (position < end) remaining = true;
    }
    return touchedCount;
  };
  // Dense windows: no branch per posting. The marks start as a copy of the mask (1 = eligible), every posting
  // sets bit 2, so a touched eligible document's mark is 3; ineligible documents accumulate like the others (their
  // totals are discarded). The touched documents are collected from the marks, in ascending order.
  const scanWindowDense = (windowStart: number, windowEnd: number): number => {
    const span = windowEnd - windowStart;
    // Totals and marks are zero here (every window leaves them so).
    if (mask === null) marks.fill(1, 0, span);
    else marks.set(mask.subarray(windowStart, windowEnd));
    remaining = false;
    for (let list = 0; list < listCount; list++) {
      const end = ends[list]!;
      if (essential[list] === 0) {
        if (cursors[list]! < end) remaining = true;
        continue;
      }
      const docs = postings[list]!.docs;
      const from = seek(docs, cursors[list]!, end, windowStart);
      const stop = seek(docs, from, end, windowEnd);
      windowFirst[list] = from;
      const contributions = windowContributions(postings[list]!, from, stop);
      const offset = windowRead.offset;
      // Eight postings a step, as in `scanWindowTotals`.
      let position = from;
      for (const unrolledStop = stop - 7; position < unrolledStop; position += 8) {
        const at = position - offset;
        const local0 = docs[position]! - windowStart;
        const local1 = docs[position + 1]! - windowStart;
        const local2 = docs[position + 2]! - windowStart;
        const local3 = docs[position + 3]! - windowStart;
        const local4 = docs[position + 4]! - windowStart;
        const local5 = docs[position + 5]! - windowStart;
        const local6 = docs[position + 6]! - windowStart;
        const local7 = docs[position + 7]! - windowStart;
        marks[local0]! |= 2;
        marks[local1]! |= 2;
        marks[local2]! |= 2;
        marks[local3]! |= 2;
        marks[local4]! |= 2;
        marks[local5]! |= 2;
        marks[local6]! |= 2;
        marks[local7]! |= 2;
        totals[local0]! += contributions[at]!;
        totals[local1]! += contributions[at + 1]!;
        totals[local2]! += contributions[at + 2]!;
        totals[local3]! += contributions[at + 3]!;
        totals[local4]! += contributions[at + 4]!;
        totals[local5]! += contributions[at + 5]!;
        totals[local6]! += contributions[at + 6]!;
        totals[local7]! += contributions[at + 7]!;
      }
      for (; position < stop; position++) {
        const local = docs[position]! - windowStart;
        marks[local]! |= 2;
        totals[local]! += contributions[position - offset]!;
      }
      cursors[list] = stop;
      if (stop < end) remaining = true;
    }
    let touchedCount = 0;
    for (let local = 0; local < span; local++) if (marks[local] === 3) touched[touchedCount++] = local;
    return touchedCount;
  };
  // Dense windows once the threshold is positive and every contribution is known non-negative (every bound
  // finite): a document whose total is 0 cannot reach the threshold (nor can it with the skipped lists, whose
  // bounds sum below it), so the documents worth ranking are the eligible ones with a positive total, and
  // nothing needs marking per posting (measured at 300k entries: the slowest queries' search CPU -9%). The totals
  // of every document in the window, eligible or not, are cleared after it.
  const scanWindowTotals = (windowStart: number, windowEnd: number): number => {
    const span = windowEnd - windowStart;
    remaining = false;
    for (let list = 0; list < listCount; list++) {
      const end = ends[list]!;
      if (essential[list] === 0) {
        if (cursors[list]! < end) remaining = true;
        continue;
      }
      const docs = postings[list]!.docs;
      const from = seek(docs, cursors[list]!, end, windowStart);
      const stop = seek(docs, from, end, windowEnd);
      windowFirst[list] = from;
      const contributions = windowContributions(postings[list]!, from, stop);
      const offset = windowRead.offset;
      // Eight postings a step (the 300 benchmark searches at a million entries: CPU -15 to -20% against one a step;
      // see README, "A million entries"). A list's documents are distinct within it, so each total still adds its
      // lists in the exhaustive order, the same bits.
      let position = from;
      for (const unrolledStop = stop - 7; position < unrolledStop; position += 8) {
        const at = position - offset;
        const local0 = docs[position]! - windowStart;
        const local1 = docs[position + 1]! - windowStart;
        const local2 = docs[position + 2]! - windowStart;
        const local3 = docs[position + 3]! - windowStart;
        const local4 = docs[position + 4]! - windowStart;
        const local5 = docs[position + 5]! - windowStart;
        const local6 = docs[position + 6]! - windowStart;
        const local7 = docs[position + 7]! - windowStart;
        totals[local0]! += contributions[at]!;
        totals[local1]! += contributions[at + 1]!;
        totals[local2]! += contributions[at + 2]!;
        totals[local3]! += contributions[at + 3]!;
        totals[local4]! += contributions[at + 4]!;
        totals[local5]! += contributions[at + 5]!;
        totals[local6]! += contributions[at + 6]!;
        totals[local7]! += contributions[at + 7]!;
      }
      for (; position < stop; position++)
        totals[docs[position]! - windowStart]! += contributions[position - offset]!;
      cursors[list] = stop;
      if (stop < end) remaining = true;
    }
    // Only the documents the window's loop below would not pass over (see `collectAbove`): once the threshold is
    // high, a well-predicted branch per document instead of one on its total's sign.
    const shift = collectShift;
    const scale = collectScale;
    const minimum = collectMinimum;
    let touchedCount = 0;
    if (mask === null) {
      for (let local = 0; local < span; local++) {
        const total = totals[local]!;
        if ((total + shift) * scale >= minimum && total > 0) touched[touchedCount++] = local;
      }
    } else {
      // As the marks would: eligible when the mask's value with bit 2 set is 3.
      for (let local = 0; local < span; local++) {
        const total = totals[local]!;
        if ((total + shift) * scale >= minimum && total > 0 && (mask[windowStart + local]! | 2) === 3)
          touched[touchedCount++] = local;
      }
    }
    return touchedCount;
  };
  // What `scanWindowTotals` collects: a document whose `(total + shift) * scale` is below `minimum` is one the
  // window's loop would pass over, at a threshold that only rises meanwhile. With skipped lists, one that cannot
  // reach the threshold even with every skipped list's bound (the loop's first test); without, one whose offer
  // to the top K would change nothing (below its K-th score by more than `RESERVE_SLACK`).
  let collectShift = 0;
  let collectScale = 1;
  let collectMinimum = Number.NEGATIVE_INFINITY;
  const collectAbove = (nonEssential: number): void => {
    if (nonEssential > 0) {
      collectShift = prefix[nonEssential]!;
      collectScale = BOUND_SLACK;
      collectMinimum = threshold();
    } else {
      collectShift = 0;
      collectScale = 1 + RESERVE_SLACK;
      collectMinimum = top.threshold();
    }
  };

  // Pruning pays when probing the skipped lists costs less than reading them. A window where it would not is read
  // whole and followed by windows read whole: 2 of them, then twice as many after each further such window.
  let pruneAfter = 0;
  let cooldown = 2;
  let windowIndex = 0;
  let windowStart = rangeStart;
  for (;;) {
    if (windowStart >= rangeEnd) {
      // A part may go on with further ranges (ascending), claimed one at a time (see `ScoringPart`).
      const next = part?.next?.();
      if (!next) break;
      rangeStart = Math.max(rangeEnd, next.from);
      rangeEnd = Math.min(documentCount, next.to);
      windowStart = rangeStart;
      continue;
    }
    const windowEnd = Math.min(rangeEnd, windowStart + (windowIndex === 0 ? firstWindow : laterWindows));
    if (exchange !== undefined) floor = exchange(top.threshold(), top);
    const windowThreshold =
      windows.pruning === false || windowIndex < pruneAfter ? Number.NEGATIVE_INFINITY : threshold();
    windowIndex++;
    let nonEssential = 0;
    const splitLimit = windowThreshold * nonEssentialShare;
    while (
      nonEssential < listCount &&
      prefix[nonEssential + 1]! * BOUND_SLACK < windowThreshold &&
      prefix[nonEssential + 1]! <= splitLimit
    )
      nonEssential++;
    for (let position = 0; position < listCount; position++)
      essential[order[position]!] = position < nonEssential ? 0 : 1;

    unmarked = dense && finiteBounds && windows.unmarked !== false && threshold() > 0;
    collectAbove(nonEssential);
    let touchedCount = scanWindow(windowStart, windowEnd);
    let skippedPostings = 0;
    if (nonEssential > 0) {
      // Probing pays when it costs less than reading the skipped postings: count the documents that would need
      // probes (at least two each, usually more); when too many, read the window whole instead.
      const bar = threshold();
      const nonEssentialBound = prefix[nonEssential]!;
      let candidates = 0;
      for (let index = 0; index < touchedCount; index++)
        if ((totals[touched[index]!]! + nonEssentialBound) * BOUND_SLACK >= bar) candidates++;
      // The skipped lists' postings in the window, estimated from their density (their window's end is not
      // searched): this only chooses between probing and reading, both exact.
      const span = windowEnd - windowStart;
      for (let position = 0; position < nonEssential; position++) {
        const list = order[position]!;
        skippedPostings += ((ends[list]! - starts[list]!) * span) / documentCount;
      }
      if (candidates * 2 * PROBE_COST > skippedPostings && windows.alwaysProbe !== true) {
        if (unmarked) totals.fill(0, 0, span);
        else
          for (let index = 0; index < touchedCount; index++) {
            totals[touched[index]!] = 0;
            marks[touched[index]!] = 0;
          }
        // The lists read go back to the window's start; the skipped ones are still at or before it.
        for (let list = 0; list < listCount; list++)
          if (essential[list] === 1) cursors[list] = windowFirst[list]!;
        nonEssential = 0;
        essential.fill(1, 0, listCount);
        collectAbove(0);
        touchedCount = scanWindow(windowStart, windowEnd);
        pruneAfter = windowIndex + cooldown;
        cooldown *= 2;
      }
    }

    if (nonEssential === 0) {
      // A document more than RESERVE_SLACK below the K-th score held is one `offer` would turn away and not keep
      // aside: it is not offered (a score passed to a call that is not inlined is a fresh heap number, and at a
      // million entries a search offered tens of thousands of them).
      let bar = top.threshold();
      // The kernel first passes over the documents this loop would: below the bar it starts from (which only
      // rises), or, every contribution being non-negative, below the K-th largest total before them in the
      // window, since the K-th score held is at least that (a document not offered is below it, so leaving it out
      // changes no K-th score). Both are lower bounds of the bar each document meets here, so the same documents
      // are offered in the same order.
      if (kernel !== undefined)
        touchedCount = kernel.select(
          touchedCount,
          0,
          1 + RESERVE_SLACK,
          bar,
          finiteBounds && capacity <= SELECT_MAX_K ? capacity : 0,
          0,
        );
      for (let index = 0; index < touchedCount; index++) {
        const local = touched[index]!;
        const total = totals[local]!;
        if (total * (1 + RESERVE_SLACK) >= bar) {
          offer(total, windowStart + local, true);
          bar = top.threshold();
        }
        totals[local] = 0;
        marks[local] = 0;
      }
    } else {
      const nonEssentialBound = prefix[nonEssential]!;
      // The touched documents in ascending order: from the marks when they are dense, else sorted.
      const span = windowEnd - windowStart;
      if (dense) {
        // Already ascending.
      } else if (touchedCount * 16 >= span) {
        let count = 0;
        for (let local = 0; local < span; local++) if (marks[local] !== 0) touched[count++] = local;
      } else touched.subarray(0, touchedCount).sort();
      // The documents below the threshold as it stands (it only rises) are passed over by the kernel.
      if (kernel !== undefined)
        touchedCount = kernel.select(touchedCount, nonEssentialBound, BOUND_SLACK, threshold(), 0, 1);
      for (let index = 0; index < touchedCount; index++) {
        const local = touched[index]!;
        const partial = totals[local]!;
        totals[local] = 0;
        marks[local] = 0;
        const doc = windowStart + local;
        const bar = threshold();
        if ((partial + nonEssentialBound) * BOUND_SLACK < bar) continue;
        // Probe the non-essential lists, largest bound first, while the document can still reach the threshold.
        let running = partial;
        let hits = 0;
        let reaches = true;
        for (let position = nonEssential - 1; position >= 0; position--) {
          const contribution = probe(order[position]!, doc);
          if (contribution !== 0) {
            running += contribution;
            hits++;
          }
          if ((running + prefix[position]!) * BOUND_SLACK < bar) {
            reaches = false;
            break;
          }
        }
        if (!reaches) continue;
        // Without a posting in a non-essential list, the partial score was summed in the exhaustive order; else
        // the sum is approximate (another order), and the document's exact score is summed once it is ranked.
        offer(running, doc, hits === 0);
      }
      cooldown = 2;
    }
    if (dense) {
      // Blocked documents accumulated too: clear the whole window for the next one (and the next search).
      totals.fill(0, 0, windowEnd - windowStart);
      if (!unmarked) marks.fill(0, 0, windowEnd - windowStart);
    }
    if (!remaining) break;
    windowStart = windowEnd;
  }

  // A part reads the other parts' floor once more: its documents certainly below the whole search's K-th score
  // need no exact sum (with two parts, each then sums about half of the K documents instead of K).
  if (exchange !== undefined) floor = exchange(top.threshold(), top);
  return top.rankedTogether(exactScores, positions !== undefined, floor);
}

/**
 * The best `topK` of the parts' results (each ranked best first, see {@link ScoringPart}): score descending, ties
 * by `ranks`, as one search over every part's range would rank them.
 */
export function mergeRanked(
  parts: readonly { doc: number; score: number }[][],
  ranks: Int32Array,
  topK: number,
): { doc: number; score: number }[] {
  const merged = parts.flat();
  merged.sort((left, right) => right.score - left.score || ranks[left.doc]! - ranks[right.doc]!);
  if (merged.length > topK) merged.length = Math.max(0, Math.ceil(topK));
  return merged;
}
