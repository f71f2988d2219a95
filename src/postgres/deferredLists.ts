/**
 * A turn's frequent lists, deferred (see `frequentLists.ts`): the turn first receives only their headers (count,
 * distinct values, bound) and the other lists whole. What it then reads of each frequent list:
 *
 * 1. The other lists are summed per entry (every eligible entry's partial score); the K-th best partial score is a
 *    lower bound of the K-th best full score.
 * 2. The frequent lists with the smallest bounds are deferred while their bounds sum to at most
 *    {@link DEFERRED_SHARE} of that lower bound; the others are read whole (a second round trip) and summed too
 *    (with `sumLists`, summed as their bytes arrive, or by blocks of entries for those the reader kept, without
 *    making their arrays: at a million entries a history-heavy turn reads about 5 M postings of them, which it
 *    only sums).
 * 3. An entry whose partial score plus the deferred lists' bounds stays below the K-th best partial score cannot be
 *    among the best K. The others (the candidates) are few: their rows of the `frequent` table are read (a third
 *    round trip) and each deferred list becomes the list of the candidates' postings in it (and so does each list
 *    summed by `sumLists`: a row holds the entry's postings in every frequent list).
 * 4. The scorer then ranks the candidates' postings in every list (`candidatePostings`). A candidate holds all of
 *    its postings, so its score is the same sum in the same order; an entry that is not a candidate was below the
 *    K-th best score in full already. So the top K, their scores and their breakdowns are those of the whole lists.
 *
 * When the bounds leave too many candidates (their rows would cost more than the lists), the deferred lists are
 * read whole instead.
 */
import { findPosting } from "../knowledge/fieldScores.js";
import { BinaryArrayError } from "./binaryArrays.js";
import { readFrequentRow } from "./frequentLists.js";
import type { FetchedList } from "./postingCache.js";
import { addWireList, addWireLists, type WireListHeader } from "./wireLists.js";

/** A frequent list that a turn received as its header (a term's list in one field). */
export type DeferredHeader = WireListHeader & {
  /** Its number among the generation's frequent lists. */
  number: number;
};

/**
 * The relative margin by which sums compared here may differ from the scorer's (the same non-negative numbers
 * added in another order: a relative 1e-12 at most; see `BOUND_SLACK` in `scoreLists.ts`).
 */
const SLACK = 1 + 2 ** -20;

/**
 * The largest share of the K-th best partial score that the deferred lists' bounds may sum to (any share gives the
 * same answers: the candidates are every entry that could still reach the top K; a larger share leaves more).
 */
const DEFERRED_SHARE = 0.4;

/**
 * How a turn weighs reading the candidates' rows against reading the deferred lists whole, in bytes:
 * `listBytesPerPosting`, a whole coded list's bytes per posting (about 3); `rowOverheadBytes`, what reading one
 * entry's row costs beyond its bytes (a lookup in the rows' primary key and a heap page: a few microseconds of the
 * server's, where it sends a list's bytes at about 1 ns each); `share`, {@link DEFERRED_SHARE}; `firstStage` and
 * `twoStagesFrom`, the candidates' rows read in two rounds when there are more than `twoStagesFrom` × K
 * candidates, the first round `firstStage` × K of them (see `readCandidateRows`: at a million entries, a
 * history-heavy turn's 4,000 candidates became about 1,700 rows read; each row is a heap page and an index page
 * the server touches). `sumBlock`: entries per block of `addLists` (65,536: 512 KB of totals, which stay in a
 * core's cache while every list adds its postings of the block). Tests defer every frequent list and make rows
 * always cheaper, so that small registries take the rows' way too, and sum by small blocks.
 * @internal
 */
export const deferralCosts = {
  listBytesPerPosting: 3,
  rowOverheadBytes: 256,
  share: DEFERRED_SHARE,
  firstStage: 2,
  twoStagesFrom: 8,
  sumBlock: 65_536,
};

/**
 * What a deferral gives the turn: the lists to rank in place of the deferred ones (same order; null: no posting),
 * whether each is the whole list (one a reader may keep), and, when the candidates' rows were read, the candidates
 * (marked by dense id, and their count): the best K are among them, so the turn may rank only their postings.
 */
export type DeferralResult = {
  lists: (FetchedList | null)[];
  whole: boolean[];
  candidates: CandidateSet | null;
};

/** What a deferral needs from the turn: its reads and the generation's figures. */
export type DeferralContext = {
  entryCount: number;
  topK: number;
  mask: Uint8Array;
  /** Average bytes of an entry's `frequent` row (the generation's statistics). */
  rowBytesPerEntry: number;
  /** Reads these deferred lists whole (by their index in the deferred lists; results in the given order). */
  readLists: (indexes: readonly number[]) => Promise<FetchedList[]>;
  /**
   * Reads these deferred lists whole as their coded bytes (`wireLists.ts`), each handed to `onList` with its index
   * as it arrives (a view: valid during the call), or several at once to `onLists` (those the reader kept: summed
   * by blocks of entries). When given, the lists a deferral reads only to sum are read so.
   */
  sumLists?: (
    indexes: readonly number[],
    onList: (index: number, bytes: Uint8Array) => void,
    onLists: (indexes: readonly number[], lists: readonly Uint8Array[]) => void,
  ) => Promise<void>;
  /** Reads the `frequent` rows of `docs` (ascending), each handed to `onRow` as it arrives (a view: copy to keep). */
  readRows: (docs: Int32Array, onRow: (doc: number, bytes: Uint8Array) => void) => Promise<void>;
  /** Where a partial-sum buffer is kept between turns (the reader's posting cache); a fresh one when absent. */
  scratch?: { take: (length: number) => Float64Array | undefined; keep: (buffer: Float64Array) => void };
  /** Adds a step's wall milliseconds to the turn's profile (benchmarks). */
  profile?: (step: string, milliseconds: number) => void;
};

/**
 * Adds each posting's contribution of every list in `lists` to its entry's total, block of entries by block: the
 * postings of a turn's lists are spread over the whole 8 MB of totals (at a million entries), so adding list by
 * list fetches each total from memory once per list; by blocks, each block is fetched once. Every entry's total
 * receives the same additions in the same order (list by list) as list by list, so the sums are the same bit for bit.
 */
function addLists(totals: Float64Array, lists: readonly FetchedList[]): void {
  const positions = new Int32Array(lists.length);
  const block = Math.max(1, Math.floor(deferralCosts.sumBlock));
  for (let end = block; end - block < totals.length; end += block)
    for (let index = 0; index < lists.length; index++)
      positions[index] = addListUpTo(totals, lists[index]!, positions[index]!, end);
}

/** Adds `list`'s postings from `start` on, up to the first one of entry `end` or later; returns where it stopped. */
function addListUpTo(totals: Float64Array, list: FetchedList, start: number, end: number): number {
  const docs = list.docs;
  const values = list.contributions;
  const codes = list.codes;
  let position = start;
  if (codes === undefined)
    for (; position < docs.length && docs[position]! < end; position++)
      totals[docs[position]!]! += values[position]!;
  else if (codes instanceof Uint8Array)
    for (; position < docs.length && docs[position]! < end; position++)
      totals[docs[position]!]! += values[codes[position]!]!;
  else
    for (; position < docs.length && docs[position]! < end; position++)
      totals[docs[position]!]! += values[codes[position]!]!;
  return position;
}

/** The `k`-th largest total of an eligible entry (0 when fewer than `k` are positive). */
function kthTotal(totals: Float64Array, mask: Uint8Array, k: number): number {
  if (k <= 0) return 0;
  // A min-heap of the best k totals. One predictable comparison per entry against the heap's least (0 until it
  // is full): testing "positive and eligible" first mispredicts on half the entries (5x slower at a million).
  const heap = new Float64Array(k);
  let size = 0;
  let floor = 0;
  for (let doc = 0; doc < totals.length; doc++) {
    const total = totals[doc]!;
    if (total <= floor || mask[doc] !== 1) continue;
    if (size < k) {
      let child = size++;
      while (child > 0) {
        const parent = (child - 1) >> 1;
        if (heap[parent]! <= total) break;
        heap[child] = heap[parent]!;
        child = parent;
      }
      heap[child] = total;
      if (size === k) floor = heap[0]!;
    } else {
      let parent = 0;
      for (;;) {
        let child = parent * 2 + 1;
        if (child >= k) break;
        if (child + 1 < k && heap[child + 1]! < heap[child]!) child++;
        if (heap[child]! >= total) break;
        heap[parent] = heap[child]!;
        parent = child;
      }
      heap[parent] = total;
      floor = heap[0]!;
    }
  }
  return size < k ? 0 : heap[0]!;
}

/**
 * The lists to rank in place of `deferred` (same order): each read whole, or (see the module comment) the list of
 * the candidates' postings in it. `complete`: the other lists of the query, whole (any order). `whole[i]` says
 * whether list `i` is the whole list (one a reader may keep).
 */
export async function resolveDeferred(
  complete: readonly FetchedList[],
  deferred: readonly DeferredHeader[],
  context: DeferralContext,
): Promise<DeferralResult> {
  const lists = new Array<FetchedList | null>(deferred.length).fill(null);
  const whole = new Array<boolean>(deferred.length).fill(false);
  const readWhole = async (indexes: readonly number[]) => {
    if (indexes.length === 0) return [];
    const read = await context.readLists(indexes);
    if (read.length !== indexes.length) throw new BinaryArrayError("postings: a deferred list is missing");
    indexes.forEach((index, position) => {
      lists[index] = read[position]!;
      whole[index] = true;
    });
    return read;
  };
  const everyIndex = deferred.map((_, index) => index);
  const { entryCount, mask } = context;
  const topK = Math.min(Math.ceil(context.topK), entryCount);
  if (!(topK > 0) || deferred.length === 0) {
    await readWhole(everyIndex);
    return { lists, whole, candidates: null };
  }
  const totals = context.scratch?.take(entryCount) ?? new Float64Array(entryCount);
  try {
    return await deferWithTotals(totals);
  } finally {
    if (context.scratch) {
      totals.fill(0);
      context.scratch.keep(totals);
    }
  }

  /** The deferral proper, over `totals` (zeroed, one per entry). */
  async function deferWithTotals(totals: Float64Array): Promise<DeferralResult> {
    const profile = context.profile;
    let mark = performance.now();
    const lap = (step: string) => {
      if (!profile) return;
      const now = performance.now();
      profile(step, now - mark);
      mark = now;
    };
    addLists(totals, complete);
    lap("defer: sum");
    const firstBound = kthTotal(totals, mask, topK) / SLACK;
    lap("defer: kth");
    // Defer the smallest bounds first (usually the longest lists: the most common terms).
    const byBound = everyIndex
      .filter((index) => Number.isFinite(deferred[index]!.upper))
      .sort((left, right) => deferred[left]!.upper - deferred[right]!.upper || left - right);
    const kept: number[] = [];
    let keptBound = 0;
    const limit =
      deferralCosts.share === Number.POSITIVE_INFINITY
        ? deferralCosts.share
        : deferralCosts.share * firstBound;
    for (const index of byBound) {
      const upper = deferred[index]!.upper;
      if (!(limit > 0) || (keptBound + upper) * SLACK > limit) break;
      kept.push(index);
      keptBound += upper;
    }
    if (kept.length === 0) {
      await readWhole(everyIndex);
      return { lists, whole, candidates: null };
    }
    const isKept = new Uint8Array(deferred.length);
    for (const index of kept) isKept[index] = 1;
    const rest = everyIndex.filter((index) => isKept[index] === 0);
    // The lists only summed (`sumLists`): the candidates' postings in them come from the candidates' rows.
    let summed: number[] = [];
    if (context.sumLists && rest.length > 0) {
      const seen = new Uint8Array(deferred.length);
      const asked = (index: number) => {
        if (!(index >= 0 && index < deferred.length) || isKept[index] !== 0 || seen[index] !== 0)
          throw new BinaryArrayError("postings: a deferred list not asked for");
        seen[index] = 1;
      };
      const counted = (index: number, count: number) => {
        if (count !== deferred[index]!.count)
          throw new BinaryArrayError("postings: a deferred list differs from its header");
      };
      await context.sumLists(
        rest,
        (index, bytes) => {
          asked(index);
          counted(index, addWireList(bytes, totals));
        },
        (indexes, lists) => {
          if (lists.length !== indexes.length)
            throw new BinaryArrayError("postings: a deferred list is missing");
          for (const index of indexes) asked(index);
          addWireLists(lists, totals, deferralCosts.sumBlock).forEach((count, at) => {
            counted(indexes[at]!, count);
          });
        },
      );
      if (rest.some((index) => seen[index] === 0))
        throw new BinaryArrayError("postings: a deferred list is missing");
      summed = rest;
      lap("defer: read whole");
    } else {
      const wholeLists = await readWhole(rest);
      lap("defer: read whole");
      addLists(totals, wholeLists);
      lap("defer: sum");
    }
    const bound = kthTotal(totals, mask, topK);
    lap("defer: kth");
    // A candidate may still reach the K-th best partial score with every deferred posting at its bound.
    const candidates: number[] = [];
    const reach = keptBound * SLACK;
    // Entries below `low` cannot pass the test (the margin covers its roundings): most are passed over by one
    // predictable comparison.
    const low = ((bound / SLACK / SLACK - reach) / SLACK) * (1 - 2 ** -30) - bound * 2 ** -40;
    for (let doc = 0; doc < entryCount; doc++) {
      const total = totals[doc]!;
      if (total >= low && mask[doc] === 1 && (total * SLACK + reach) * SLACK >= bound) candidates.push(doc);
    }
    lap("defer: candidates");
    let deferredPostings = 0;
    for (const index of kept) deferredPostings += deferred[index]!.count;
    if (
      candidates.length * (context.rowBytesPerEntry + deferralCosts.rowOverheadBytes) >
      deferredPostings * deferralCosts.listBytesPerPosting
    ) {
      // The lists only summed are read again, whole (rare: the bounds left too many candidates).
      await readWhole([...kept, ...summed]);
      return { lists, whole, candidates: null };
    }
    // The candidates' postings in the deferred lists and in those only summed, from their rows (see
    // `readCandidateRows`); positions below `kept.length` are the deferred ones.
    const fromRows = [...kept, ...summed];
    const deferredPositions = kept.length;
    const candidateDocs = Int32Array.from(candidates);
    const wanted = Int32Array.from(fromRows.map((index) => deferred[index]!.number));
    const order = Int32Array.from(wanted.keys()).sort((left, right) => wanted[left]! - wanted[right]!);
    const sortedWanted = Int32Array.from(order, (index) => wanted[index]!);
    const values = fromRows.map((index) => deferred[index]!.values);
    const rounds = await readCandidateRows(candidateDocs, totals, reach, bound, (docs, onRow) => {
      // One round's postings per deferred list, decoded as the rows arrive (each row's bytes are a view).
      const run: RowRun = { docs: fromRows.map(() => []), codes: fromRows.map(() => []), ordered: true };
      let previous = -1;
      let current = -1;
      let sum = 0;
      const found = (sortedIndex: number, code: number) => {
        const position = order[sortedIndex]!;
        const value = values[position]![code];
        if (value === undefined) throw new BinaryArrayError("frequent row: a code names no value");
        run.docs[position]!.push(current);
        run.codes[position]!.push(code);
        // The partial sums already hold the lists only summed.
        if (position < deferredPositions) sum += value;
      };
      return {
        run,
        read: context.readRows(docs, (doc, bytes) => {
          if (!isAmong(docs, doc)) throw new BinaryArrayError("frequent row: an entry not asked for");
          if (doc <= previous) run.ordered = false;
          previous = doc;
          current = doc;
          sum = 0;
          readFrequentRow(bytes, sortedWanted, found);
          onRow?.(doc, sum);
        }),
      };
    });
    lap("defer: read rows");
    const chosen = candidateSet(rounds.chosen, entryCount);
    fromRows.forEach((index, position) => {
      const header = deferred[index]!;
      const { docs, codes } = mergedRuns(rounds.runs, position);
      if (docs.length === 0) return;
      lists[index] = {
        docs: Int32Array.from(docs),
        contributions: header.values,
        codes: header.width === 1 ? Uint8Array.from(codes) : Uint16Array.from(codes),
        upper: header.upper,
      };
    });
    lap("defer: row lists");
    return { lists, whole, candidates: chosen };
  }

  /**
   * Reads the `frequent` rows of the candidates that can still reach the top K (`readRound`: one round's rows,
   * decoded into a run of postings per deferred list, `onRow` told each row's entry and the sum of its deferred
   * contributions); returns those candidates (ascending) and the runs. With many candidates, in two rounds: first
   * the rows of the `firstStage` × K candidates with the best partial sums; each of them then has a known lower
   * bound of its full score (its partial sum plus its deferred contributions, every one of them read), so the K-th
   * best of those bounds is a lower bound of the K-th best score, above the K-th partial sum; only the other
   * candidates that can still reach it are read next. An entry in the best K scores at least that bound, so it is
   * among the candidates of one round or the other.
   */
  async function readCandidateRows(
    candidates: Int32Array,
    totals: Float64Array,
    reach: number,
    bound: number,
    readRound: (
      docs: Int32Array,
      onRow?: (doc: number, deferredSum: number) => void,
    ) => { run: RowRun; read: Promise<void> },
  ): Promise<{ chosen: Int32Array; runs: RowRun[] }> {
    const firstCount = Math.ceil(deferralCosts.firstStage * topK);
    if (
      !(candidates.length > deferralCosts.twoStagesFrom * topK) ||
      !(firstCount >= topK && firstCount < candidates.length)
    ) {
      const round = readRound(candidates);
      await round.read;
      return { chosen: candidates, runs: [round.run] };
    }
    // Round one: the best partial sums (ties: the lower entry), read in ascending order.
    const first = Int32Array.from(
      Array.from(candidates)
        .sort((left, right) => totals[right]! - totals[left]! || left - right)
        .slice(0, firstCount),
    ).sort();
    // Each first-round candidate's full score, less the margin of sums in another order (non-negative terms); an
    // entry without a row has no deferred posting.
    const lowers = Float64Array.from(first, (doc) => totals[doc]! / SLACK / SLACK);
    const firstRound = readRound(first, (doc, deferredSum) => {
      const at = findPosting(first, 0, first.length, doc);
      lowers[at] = (totals[doc]! + deferredSum) / SLACK / SLACK;
    });
    await firstRound.read;
    lowers.sort();
    const raised = Math.max(bound, lowers[lowers.length - topK]!);
    const second: number[] = [];
    for (const doc of candidates)
      if ((totals[doc]! * SLACK + reach) * SLACK >= raised && !isAmong(first, doc)) second.push(doc);
    const secondDocs = Int32Array.from(second);
    const runs = [firstRound.run];
    if (secondDocs.length > 0) {
      const secondRound = readRound(secondDocs);
      await secondRound.read;
      runs.push(secondRound.run);
    }
    const chosen = new Int32Array(first.length + secondDocs.length);
    chosen.set(first);
    chosen.set(secondDocs, first.length);
    chosen.sort();
    context.profile?.("defer: two rounds", 0);
    return { chosen, runs };
  }
}

/** One round's postings of each deferred list (by position), in the order its rows arrived. */
type RowRun = { docs: number[][]; codes: number[][]; ordered: boolean };

/**
 * A deferred list's postings (`position`) from every round, in ascending order of entries: each round's run as it
 * came when its rows arrived in order (as the rows' primary key returns them), else sorted; then merged. Checked:
 * an entry read twice raises a `BinaryArrayError`.
 */
function mergedRuns(runs: readonly RowRun[], position: number): { docs: number[]; codes: number[] } {
  const sorted = runs.map((run) => {
    const docs = run.docs[position]!;
    const codes = run.codes[position]!;
    if (run.ordered) return { docs, codes };
    const pairs = docs.map((doc, at) => [doc, codes[at]!] as const).sort((left, right) => left[0] - right[0]);
    return { docs: pairs.map((pair) => pair[0]), codes: pairs.map((pair) => pair[1]) };
  });
  let merged = sorted[0]!;
  for (let round = 1; round < sorted.length; round++) {
    const next = sorted[round]!;
    if (next.docs.length === 0) continue;
    const docs: number[] = [];
    const codes: number[] = [];
    let left = 0;
    let right = 0;
    while (left < merged.docs.length || right < next.docs.length) {
      if (
        right >= next.docs.length ||
        (left < merged.docs.length && merged.docs[left]! < next.docs[right]!)
      ) {
        docs.push(merged.docs[left]!);
        codes.push(merged.codes[left++]!);
      } else {
        docs.push(next.docs[right]!);
        codes.push(next.codes[right++]!);
      }
    }
    merged = { docs, codes };
  }
  for (let at = 1; at < merged.docs.length; at++)
    if (merged.docs[at]! <= merged.docs[at - 1]!)
      throw new BinaryArrayError("frequent row: an entry read twice");
  return merged;
}

/** Whether `doc` is in `docs` (ascending). */
function isAmong(docs: Int32Array, doc: number): boolean {
  return findPosting(docs, 0, docs.length, doc) >= 0;
}

/** The candidates of a deferring turn: one bit per dense id (bit `doc & 31` of word `doc >>> 5`), and their count. */
export type CandidateSet = { bits: Int32Array; count: number };

/** Whether `doc` is one of `candidates`. */
export function isCandidate(candidates: CandidateSet, doc: number): boolean {
  return ((candidates.bits[doc >>> 5]! >>> (doc & 31)) & 1) === 1;
}

/** The candidate set of `docs` among `entryCount` entries. */
export function candidateSet(docs: ArrayLike<number>, entryCount: number): CandidateSet {
  const bits = new Int32Array((entryCount + 31) >>> 5);
  for (let index = 0; index < docs.length; index++) {
    const doc = docs[index]!;
    bits[doc >>> 5]! |= 1 << (doc & 31);
  }
  return { bits, count: docs.length };
}

/**
 * Scratch space of {@link candidatePostings} (one list at a time), grown as needed: a list's kept postings are
 * gathered here and copied out at their exact size, so a turn allocates what it keeps, not the room each list
 * might have needed (fresh memory costs page faults: up to 7 MB a history-heavy turn at a million entries).
 */
const keptScratch = {
  docs: new Int32Array(1024),
  bytes: new Uint8Array(1024),
  shorts: new Uint16Array(1024),
  values: new Float64Array(1024),
};

/** {@link keptScratch}, each array at least `length` long. */
function scratchFor(length: number): typeof keptScratch {
  if (keptScratch.docs.length < length) {
    const grown = Math.max(length, keptScratch.docs.length * 2);
    keptScratch.docs = new Int32Array(grown);
    keptScratch.bytes = new Uint8Array(grown);
    keptScratch.shorts = new Uint16Array(grown);
    keptScratch.values = new Float64Array(grown);
  }
  return keptScratch;
}

/**
 * `list`'s postings of the entries in `candidates`, in order (the list itself when it holds only those; null when
 * it holds none of them). Its bound stays the whole list's (still a bound).
 */
export function candidatePostings(list: FetchedList, candidates: CandidateSet): FetchedList | null {
  const docs = list.docs;
  const bits = candidates.bits;
  // At most one posting per candidate.
  const scratch = scratchFor(Math.min(docs.length, candidates.count));
  const keptDocs = scratch.docs;
  const codes = list.codes;
  let kept = 0;
  if (codes === undefined) {
    const values = scratch.values;
    const contributions = list.contributions;
    for (let position = 0; position < docs.length; position++) {
      const doc = docs[position]!;
      if (((bits[doc >>> 5]! >>> (doc & 31)) & 1) === 0) continue;
      keptDocs[kept] = doc;
      values[kept++] = contributions[position]!;
    }
    if (kept === 0) return null;
    if (kept === docs.length) return list;
    return { docs: keptDocs.slice(0, kept), contributions: values.slice(0, kept), upper: list.upper };
  }
  const keptCodes = codes instanceof Uint8Array ? scratch.bytes : scratch.shorts;
  for (let position = 0; position < docs.length; position++) {
    const doc = docs[position]!;
    if (((bits[doc >>> 5]! >>> (doc & 31)) & 1) === 0) continue;
    keptDocs[kept] = doc;
    keptCodes[kept++] = codes[position]!;
  }
  if (kept === 0) return null;
  if (kept === docs.length) return list;
  return {
    docs: keptDocs.slice(0, kept),
    contributions: list.contributions,
    codes: keptCodes.slice(0, kept),
    upper: list.upper,
  };
}
