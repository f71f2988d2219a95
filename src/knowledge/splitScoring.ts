/**
 * A long search split between two threads (issue 14's 1M turn): the main thread and a resident scoring worker
 * (`scoringWorker.ts`) score a search's document ids over the same postings in shared memory (a build allocates
 * them there: `allocateFieldArrays`). The ids are cut into ranges that the two threads claim in turn from a shared
 * counter, so the faster thread reads more of them; before each window each side publishes its best scores and
 * takes the K-th best of both sides' together as its floor (`exchangeBest`, `ScoringPart`); the two results are
 * merged into the whole search's top K (`mergeRanked`). Exact: every document of the whole top K is in its side's
 * result with the score one thread would have summed, bit for bit (property tests `scoreLists.test.ts`,
 * `pruning.test.ts`).
 *
 * Only in Node with at least two cores, only for searches of at least {@link SplitSettings.minimumPostings}
 * postings whose every list is in shared memory and has a finite bound; the worker is started by the first such
 * search (which, like any search while it starts, runs on the main thread alone) and never keeps a process alive.
 * When the worker fails or is late, the main thread scores its part itself.
 */
import { availableCores, isNode } from "./buildThreads.js";
import { nodeBuiltin } from "./runtime.js";
import {
  DEFAULT_WINDOWS,
  mergeRanked,
  type QueryLists,
  type ScoringList,
  type ScoringWindows,
  scoreLists,
} from "./scoreLists.js";
import {
  CANCELLED,
  CONTROL_WORDS,
  DONE,
  exchangeBest,
  FAILED,
  MAIN_SIDE,
  NEXT_RANGE,
  READY,
  rangeClaimer,
  resultBytes,
  resultViews,
  SCORING_WORKER_MARKER,
  type ScoringMessage,
  type ScoringReply,
  type ScoringWorkerData,
} from "./scoringProtocol.js";

/** When searches are split. @internal */
export type SplitSettings = {
  /** Postings (summed over the query's lists) from which a search is split. */
  minimumPostings: number;
  /** False: never split (and start no worker). */
  enabled: boolean;
  /** How long the main thread waits for the worker's part; by default see {@link LEAST_WAIT_MILLISECONDS}. */
  waitMilliseconds?: number;
};

/**
 * From about 8 million postings a search costs ~30 ms or more of CPU (at a million entries the slowest read ~30
 * million), where the second core pays. From 2 million (the first choice) the 100k turns that followed a compaction
 * were slower (p50 4.0 -> 6.0-6.9 ms in bench/updates.ts, 4.0-4.2 ms with 8 million or with no split): at that size
 * the main thread's wait for the worker costs more than the half of the search it saves.
 */
const settings: SplitSettings = { minimumPostings: 1 << 23, enabled: true };

/** Changes when searches are split (tests, benchmarks); returns the previous settings. @internal */
export function setSplitScoring(changes: Partial<SplitSettings>): SplitSettings {
  const previous = { ...settings };
  Object.assign(settings, changes);
  return previous;
}

/** The least time the main thread waits for the worker's part, and how many times its own part's time it waits. */
const LEAST_WAIT_MILLISECONDS = 2000;
const WAIT_FACTOR = 20;

/** The script a worker runs from the TypeScript sources: tsx's loader, then the worker module. */
const SOURCE_WORKER = `const { workerData } = process.getBuiltinModule("node:worker_threads");
import("tsx/esm/api").then((api) => { api.register(); return import(workerData.entry); });`;

type NodeWorker = {
  on(event: "message", listener: (message: ScoringReply) => void): void;
  on(event: "error" | "exit", listener: (value: unknown) => void): void;
  postMessage(message: ScoringMessage): void;
  unref(): void;
  terminate(): Promise<number>;
};
type WorkerThreads = { Worker: new (filename: URL | string, options: object) => NodeWorker };

/** The index a split search reads: its postings by field, ranks and size. */
export type SplitIndex = { postings: readonly ScoringList[]; ranks: Int32Array; documentCount: number };

let splitSearches = 0;

/** Searches split with the worker in this process so far (tests check the worker was used). @internal */
export function splitSearchCount(): number {
  return splitSearches;
}

/** The resident scoring worker, once started (null: not yet, or cannot). */
let helper: ScoringHelper | null = null;
let helperStarted = false;

class ScoringHelper {
  private readonly worker: NodeWorker;
  readonly control: Int32Array;
  ready = false;
  failed = false;
  private readyWaiters: ((ready: boolean) => void)[] = [];
  private readonly indexIds = new WeakMap<object, number>();
  private nextIndex = 1;
  private sequence = 0;
  private result = new SharedArrayBuffer(0);
  private board = new SharedArrayBuffer(0);
  /** Tells the worker to drop an index's postings once the main thread no longer holds them. */
  private readonly dropped = new FinalizationRegistry<number>((id) => {
    if (!this.failed) this.worker.postMessage({ kind: "drop", id });
  });

  constructor(worker: NodeWorker, control: Int32Array) {
    this.worker = worker;
    this.control = control;
    worker.on("message", (message) => {
      if (message.kind === "ready") this.settle(true);
    });
    worker.on("error", () => this.fail());
    worker.on("exit", () => this.fail());
    // An idle worker never keeps a process alive (a search waits for it synchronously, with no event).
    worker.unref();
  }

  stop(): Promise<unknown> {
    this.failed = true;
    return this.worker.terminate().catch(() => undefined);
  }

  fail(): void {
    this.failed = true;
    this.settle(false);
  }

  private settle(ready: boolean): void {
    this.ready = ready && !this.failed;
    for (const waiter of this.readyWaiters.splice(0)) waiter(this.ready);
  }

  whenReady(): Promise<boolean> {
    if (this.ready || this.failed) return Promise.resolve(this.ready);
    return new Promise((resolve) => this.readyWaiters.push(resolve));
  }

  /** The worker's id of `index` (keyed by its postings array), registering it first. */
  indexId(index: SplitIndex): number {
    let id = this.indexIds.get(index.postings);
    if (id !== undefined) return id;
    id = this.nextIndex++;
    this.worker.postMessage({
      kind: "index",
      id,
      fields: index.postings.map((field) =>
        field.docs.buffer instanceof SharedArrayBuffer
          ? { docs: field.docs, contributions: field.contributions }
          : null,
      ),
      ranks: index.ranks,
      documentCount: index.documentCount,
    });
    this.indexIds.set(index.postings, id);
    this.dropped.register(index.postings, id);
    return id;
  }

  /** Posts a search of the part [from, to) and returns its sequence number and result buffer. */
  post(
    id: number,
    lists: QueryLists & { fields: Int32Array },
    topK: number,
    mask: Uint8Array | null,
    windows: ScoringWindows,
    bounds: Int32Array,
    capacity: number,
  ): { sequence: number; result: SharedArrayBuffer; board: Int32Array } {
    const bytes = resultBytes(capacity, lists.fields.length);
    if (this.result.byteLength < bytes) this.result = new SharedArrayBuffer(bytes);
    if (this.board.byteLength < capacity * 8) this.board = new SharedArrayBuffer(capacity * 8);
    // No score known on either side yet (the worker has finished every earlier search).
    const board = new Int32Array(this.board, 0, 2 * capacity);
    board.fill(-1);
    Atomics.store(this.control, NEXT_RANGE, 0);
    const sequence = ++this.sequence;
    this.worker.postMessage({
      kind: "search",
      sequence,
      id,
      fields: lists.fields,
      starts: lists.starts,
      ends: lists.ends,
      upper: lists.upper,
      topK,
      mask,
      windows,
      bounds,
      board: this.board,
      result: this.result,
    });
    return { sequence, result: this.result, board };
  }

  /**
   * Waits until the worker finished `sequence` (true) or `milliseconds` passed (false: the search is cancelled; at
   * once when not positive).
   */
  wait(sequence: number, milliseconds: number): boolean {
    const deadline = performance.now() + milliseconds;
    for (;;) {
      const done = Atomics.load(this.control, DONE);
      if (done === sequence && milliseconds > 0) return Atomics.load(this.control, FAILED) !== sequence;
      const left = deadline - performance.now();
      if (left <= 0) {
        Atomics.store(this.control, CANCELLED, sequence);
        // A worker that misses a deadline this long is not used again (nor kept: it holds the postings too).
        void this.stop();
        return false;
      }
      Atomics.wait(this.control, DONE, done, Math.min(left, 100));
    }
  }
}

/** Starts the resident worker (once per process), when this runtime can run it. */
function startHelper(): void {
  helperStarted = true;
  if (!isNode() || availableCores() < 2) return;
  const threads = nodeBuiltin<WorkerThreads>("node:worker_threads");
  if (!threads) return;
  try {
    // A file name in a variable: bundlers leave this `new URL` alone (the worker only ever runs in Node).
    const here = import.meta.url;
    const entry = new URL(here.endsWith(".ts") ? "./scoringWorker.ts" : "./scoringWorker.js", here);
    const control = new SharedArrayBuffer(CONTROL_WORDS * 4);
    const workerData: ScoringWorkerData = { marker: SCORING_WORKER_MARKER, control, entry: entry.href };
    const worker = entry.pathname.endsWith(".ts")
      ? new threads.Worker(SOURCE_WORKER, { workerData, eval: true })
      : new threads.Worker(entry, { workerData });
    helper = new ScoringHelper(worker, new Int32Array(control));
  } catch {
    helper = null;
  }
}

/** Ends the scoring worker, if any; the next long search starts a new one (tests). @internal */
export async function stopScoringWorker(): Promise<void> {
  const stopping = helper;
  helper = null;
  helperStarted = false;
  await stopping?.stop();
}

/**
 * Starts the scoring worker if it is not started, and resolves once it can take searches (false when it cannot:
 * not Node, one core, failed). Tests and benchmarks wait for it; searches never do. @internal
 */
export function scoringWorkerReady(): Promise<boolean> {
  if (!settings.enabled) return Promise.resolve(false);
  if (!helperStarted) startHelper();
  return helper ? helper.whenReady() : Promise.resolve(false);
}

/** Whether every list of `lists` is in shared memory and bounded (a split needs both). */
function splittable(lists: QueryLists): boolean {
  for (let list = 0; list < lists.postings.length; list++) {
    const { docs, contributions } = lists.postings[list]!;
    if (!(docs.buffer instanceof SharedArrayBuffer) || !(contributions.buffer instanceof SharedArrayBuffer))
      return false;
    if (!Number.isFinite(lists.upper[list]!)) return false;
  }
  return true;
}

/**
 * The best `topK` of `lists` split between this thread and the scoring worker, as `scoreLists` ranks them (with
 * `windows`, which tests make tiny), with every ranked document's positions in `positions`; or null when the search is not split
 * (small, not in shared memory, no worker yet): the caller then scores it alone.
 */
export function scoreListsSplit(
  index: SplitIndex,
  lists: QueryLists & { fields: Int32Array },
  topK: number,
  mask: Uint8Array | null,
  positions: Map<number, Int32Array>,
  windows: ScoringWindows = DEFAULT_WINDOWS,
): { doc: number; score: number }[] | null {
  if (!settings.enabled) return null;
  const { documentCount, ranks } = index;
  const listCount = lists.postings.length;
  let postingCount = 0;
  let longest = 0;
  for (let list = 0; list < listCount; list++) {
    const count = lists.ends[list]! - lists.starts[list]!;
    postingCount += count;
    if (count > lists.ends[longest]! - lists.starts[longest]!) longest = list;
  }
  if (postingCount < settings.minimumPostings || listCount === 0 || documentCount < 2) return null;
  if (windows.pruning === false) return null;
  if (!helperStarted) startHelper();
  // Ready as soon as the worker says so in shared memory: turns run back to back may never let its message in.
  if (helper && !helper.ready && Atomics.load(helper.control, READY) === 1) helper.ready = !helper.failed;
  if (!helper?.ready || helper.failed || !splittable(lists)) return null;
  const capacity = Math.min(Math.ceil(topK), documentCount);
  if (!(capacity > 0)) return null;
  const bounds = rangeBounds(lists, longest, documentCount);
  const scoring = helper;
  const id = scoring.indexId(index);
  const { sequence, result, board } = scoring.post(id, lists, topK, mask, windows, bounds, capacity);
  const started = performance.now();
  // This thread's ranges, claimed in turn with the worker's (which may already have taken every one).
  const claimed: number[] = [];
  const claim = rangeClaimer(scoring.control, bounds, claimed);
  const first = claim() ?? { from: 0, to: 0 };
  const own = scoreLists(lists, documentCount, ranks, topK, mask, windows, positions, {
    from: first.from,
    to: first.to,
    next: claim,
    exchange: (_threshold, best) => exchangeBest(board, MAIN_SIDE, capacity, best),
  });
  const ownMilliseconds = performance.now() - started;
  let other: { doc: number; score: number }[];
  const patience =
    settings.waitMilliseconds ?? Math.max(LEAST_WAIT_MILLISECONDS, ownMilliseconds * WAIT_FACTOR);
  if (scoring.wait(sequence, patience)) {
    const views = resultViews(result, capacity, listCount);
    other = [];
    for (let slot = 0; slot < views.count[0]!; slot++) {
      const doc = views.docs[slot]!;
      other.push({ doc, score: views.scores[slot]! });
      positions.set(doc, views.positions.slice(slot * listCount, (slot + 1) * listCount));
    }
  } else {
    // The worker failed or is late: this thread scores every range it did not read (its own K-th as the floor).
    const floor = own.length >= capacity ? own[own.length - 1]!.score : Number.NEGATIVE_INFINITY;
    const left: number[] = [];
    for (let range = 0; range + 1 < bounds.length; range++) if (!claimed.includes(range)) left.push(range);
    let next = 0;
    const claimLeft = () => {
      const range = left[next++];
      return range === undefined ? null : { from: bounds[range]!, to: bounds[range + 1]! };
    };
    const start = claimLeft() ?? { from: 0, to: 0 };
    other = scoreLists(lists, documentCount, ranks, topK, mask, windows, positions, {
      ...start,
      next: claimLeft,
      exchange: () => floor,
    });
  }
  splitSearches++;
  return mergeRanked([own, other], ranks, capacity);
}

/** Ranges a split search's document ids are cut into (see {@link rangeBounds}). */
const SPLIT_RANGES = 8;

/**
 * The ranges of a split search (range `r` is [`bounds[r]`, `bounds[r + 1]`)): cut at the longest list's
 * quantiles, so that each holds about as many of the heaviest postings. The two threads claim them in turn, so a
 * thread that runs slower (a query's postings unevenly spread, a core taken by other work) reads fewer of them
 * instead of keeping the other waiting.
 */
function rangeBounds(lists: QueryLists, longest: number, documentCount: number): Int32Array {
  const docs = lists.postings[longest]!.docs;
  const start = lists.starts[longest]!;
  const length = lists.ends[longest]! - start;
  const bounds = [0];
  for (let range = 1; range < SPLIT_RANGES; range++) {
    const cut = docs[start + Math.floor((range * length) / SPLIT_RANGES)]!;
    if (cut > bounds[bounds.length - 1]! && cut < documentCount) bounds.push(cut);
  }
  bounds.push(documentCount);
  return Int32Array.from(bounds);
}
