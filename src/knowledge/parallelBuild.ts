/**
 * Parallel builds: worker threads tokenize and count parts of the registry while the main thread indexes the rest,
 * with the same index as one thread, bit for bit.
 *
 * The registry (in dense order) is cut into rounds; a round is a part the main thread indexes itself, then one
 * part per worker. Workers get their parts ahead of time and count them with term dictionaries of their own. The
 * main thread goes through the entries in order: its own parts straight into the index, a worker's part by
 * mapping the worker's term ids to its own. A worker reports with each part the terms it met first in that part,
 * in order; the main thread adds them to its dictionary when it reaches that part, which gives every new term the
 * id a single-threaded build gives it (terms get ids in order of first occurrence, and every term that is new to
 * the whole build at that part is new to the worker too). Every other buffer is filled in entry order exactly as
 * one thread fills it. Part sizes follow the measured speeds so that neither side waits for the other.
 *
 * Only in Node (worker threads, found at run time so that the root export imports no `node:` module), only for
 * large registries unless asked, and never needed for the result: a worker that fails, stalls or cannot start
 * hands its parts back to the main thread, which indexes them itself.
 */
import type { KnowledgeAnalyzerName, NormalizedKnowledgeEntry } from "../types/knowledge.js";
import { availableCores, isNode, workerThreads } from "./buildThreads.js";
import type { BuildWorkerTask, PartPhrases } from "./buildWorker.js";
import {
  DEFAULT_PART_ENTRIES,
  type Helper,
  type ParallelBuildStats,
  ParallelBuildWorkers,
  SMOOTHING,
  STALL_MILLISECONDS,
} from "./parallelWorkers.js";
import { FIELD_COUNT } from "./postings.js";

export type { ParallelBuildStats } from "./parallelWorkers.js";

/** With automatic threads, registries smaller than this are indexed by one thread (starting a worker costs more). */
export const PARALLEL_MIN_ENTRIES = 16_384;
/** With automatic threads, at most this many workers (the main thread's own share bounds what more would add). */
const MAX_AUTOMATIC_WORKERS = 3;
/** Counts buffers kept per worker for its next parts (parts in flight are about two rounds). */
const SPARE_BUFFERS = 4;

/** A range of entries, indexed by the main thread (`helper` -1) or counted by a worker. */
export type BuildSegment = {
  start: number;
  end: number;
  helper: number;
  part: number;
  /** A worker's counts, once they arrived and its new terms were mapped. */
  counts: Int32Array | null;
  termIds: Int32Array | null;
  /** Where the next entry's counts start in {@link counts}. */
  offset: number;
  /** A worker's phrase keys of the segment's entries (see `PartPhrases`), once they arrived. */
  phrases: PartPhrases | null;
  /** Where the next entry's keys start in {@link phrases}. */
  phraseOffset: number;
};

/** Options of a parallel build. */
export type ParallelBuildOptions = {
  analyzer: KnowledgeAnalyzerName;
  /** Threads in all (the main thread included); undefined: automatic (see {@link parallelIndexing}). */
  threads: number | undefined;
  /** Entries per part, and wait for the workers to start before the first part (tests: many parts at any size). */
  partEntries?: number;
};

let lastStats: ParallelBuildStats | null = null;

/** What the last parallel build did, or null when none ran. @internal */
export function lastParallelBuildStats(): ParallelBuildStats | null {
  return lastStats;
}

/**
 * The workers of a parallel build over `entries` (in dense order), or null when the build runs on one thread: not
 * Node, one thread asked for or available, a small registry with automatic threads, or no worker could start.
 * Automatic: one thread per available core, at most {@link MAX_AUTOMATIC_WORKERS} workers besides the main thread,
 * from {@link PARALLEL_MIN_ENTRIES} entries.
 */
export function parallelIndexing(
  entries: readonly NormalizedKnowledgeEntry[],
  options: ParallelBuildOptions,
): ParallelIndexing | null {
  if (!isNode()) return null;
  let workers: number;
  if (options.threads !== undefined) workers = Math.floor(options.threads) - 1;
  else {
    if (entries.length < PARALLEL_MIN_ENTRIES) return null;
    workers = Math.min(availableCores() - 1, MAX_AUTOMATIC_WORKERS);
  }
  if (!(workers >= 1) || entries.length === 0) return null;
  const threads = workerThreads();
  if (!threads) return null;
  const parallel = new ParallelIndexing(entries, options.partEntries ?? DEFAULT_PART_ENTRIES);
  for (let index = 0; index < workers; index++) parallel.startHelper(threads, options.analyzer);
  if (parallel.helperCount === 0) return null;
  if (options.partEntries !== undefined) parallel.waitForWorkers();
  lastStats = parallel.stats;
  return parallel;
}

/**
 * The plan of a parallel build: the segments of entries planned in rounds from the measured speeds, and merging
 * the workers' counts in entry order (the workers themselves: {@link ParallelBuildWorkers}).
 */
export class ParallelIndexing extends ParallelBuildWorkers {
  private readonly entries: readonly NormalizedKnowledgeEntry[];
  /** Planned segments not yet passed by the main thread, in entry order. */
  private readonly segments: BuildSegment[] = [];
  private plannedEnd = 0;
  /** Where the last planned round starts: reaching it plans the next one. */
  private lastRoundStart = 0;
  private nextPart = 0;
  /** Smoothed milliseconds per entry: the main thread indexing an entry itself, and merging a counted one. */
  private indexing = 0;
  private merging = 0;

  constructor(entries: readonly NormalizedKnowledgeEntry[], partEntries: number) {
    super(partEntries);
    this.entries = entries;
  }

  /** The segment holding entry `position` (the next one the main thread indexes); plans rounds ahead as needed. */
  segmentAt(position: number): BuildSegment {
    while (this.segments.length > 0 && this.segments[0]!.end <= position)
      this.recycle(this.segments.shift()!);
    this.receive();
    // Two rounds ahead, so a worker always has its next part when it finishes one.
    while (
      this.plannedEnd < this.entries.length &&
      (this.plannedEnd <= position || position >= this.lastRoundStart)
    )
      this.planRound();
    return this.segments.find((segment) => segment.start <= position && position < segment.end)!;
  }

  /**
   * Waits until a worker's segment can be merged (true), or until `deadline` (false: call again). A failed or
   * stalled worker's segments become the main thread's (check `helper` again after a true).
   */
  await(
    segment: BuildSegment,
    deadline: number,
    internTerms: (terms: readonly string[]) => number[],
  ): boolean {
    for (;;) {
      if (segment.helper < 0 || segment.counts) return true;
      const helper = this.helpers[segment.helper]!;
      this.receive();
      const reply = helper.replies.get(segment.part);
      if (reply) {
        helper.replies.delete(segment.part);
        this.mapTerms(helper, internTerms(reply.newTerms));
        segment.counts = reply.counts;
        segment.phrases = reply.phrases;
        segment.phraseOffset = 0;
        this.stats.countedEntries += segment.end - segment.start;
        segment.termIds = helper.termIds;
        segment.offset = 0;
        return true;
      }
      if (helper.failed || performance.now() - helper.lastHeard > STALL_MILLISECONDS) {
        this.giveUp(segment.helper);
        continue;
      }
      const now = performance.now();
      if (now >= deadline) return false;
      const observed = Atomics.load(this.signal, 0);
      if (this.receive()) continue;
      Atomics.wait(this.signal, 0, observed, Math.min(deadline - now, 1000));
      this.stats.waitedMilliseconds += performance.now() - now;
    }
  }

  /** Records the main thread's speed indexing `count` entries itself (`merged`: merging counted ones). */
  record(count: number, milliseconds: number, merged: boolean): void {
    if (count <= 0) return;
    const perEntry = milliseconds / count;
    if (merged)
      this.merging = this.merging === 0 ? perEntry : this.merging + SMOOTHING * (perEntry - this.merging);
    else
      this.indexing = this.indexing === 0 ? perEntry : this.indexing + SMOOTHING * (perEntry - this.indexing);
  }

  /** Stops the workers (idempotent). */
  override close(): void {
    super.close();
    this.segments.length = 0;
  }

  /**
   * Keeps the counts buffer of a merged segment for its worker's next part: every part would otherwise allocate a
   * new buffer (about 2 KB per entry), and at a million entries that churn of external memory alone starts many
   * full garbage collections of the host's heap.
   */
  private recycle(segment: BuildSegment): void {
    if (segment.helper < 0 || !segment.counts) return;
    const helper = this.helpers[segment.helper]!;
    if (!helper.failed && helper.spareBuffers.length < SPARE_BUFFERS)
      helper.spareBuffers.push(segment.counts.buffer as ArrayBuffer);
    segment.counts = null;
    segment.phrases = null;
  }

  protected override handBack(index: number): void {
    for (const segment of this.segments)
      if (segment.helper === index && !segment.counts) {
        segment.helper = -1;
        segment.part = -1;
      }
  }

  /**
   * Plans the next round: the main thread's part, then one part per ready worker, sized so that all take about as
   * long (from the measured speeds; equal shares before any was measured); sends the workers their parts.
   */
  private planRound(): void {
    const start = this.plannedEnd;
    const ready = this.helpers
      .map((helper, index) => ({ helper, index }))
      .filter((each) => each.helper.ready && !each.helper.failed);
    const roundEntries = this.partEntries * (1 + ready.length);
    const remaining = this.entries.length - start;
    const total = Math.min(roundEntries, remaining);
    const shares = this.shares(
      ready.map((each) => each.helper),
      total,
    );
    let cursor = start;
    this.lastRoundStart = start;
    const own = total - shares.reduce((sum, share) => sum + share, 0);
    if (own > 0) {
      this.segments.push({
        start: cursor,
        end: cursor + own,
        helper: -1,
        part: -1,
        counts: null,
        termIds: null,
        offset: 0,
        phrases: null,
        phraseOffset: 0,
      });
      cursor += own;
    }
    ready.forEach(({ helper, index }, position) => {
      const share = shares[position]!;
      if (share <= 0) return;
      const part = this.nextPart++;
      const segment: BuildSegment = {
        start: cursor,
        end: cursor + share,
        helper: index,
        part,
        counts: null,
        termIds: null,
        offset: 0,
        phrases: null,
        phraseOffset: 0,
      };
      cursor += share;
      this.segments.push(segment);
      try {
        const task = this.task(part, segment.start, segment.end);
        const spare = helper.spareBuffers.pop();
        if (spare) task.buffer = spare;
        helper.port.postMessage(task, spare ? [spare] : []);
        helper.outstanding++;
        this.partLengths.set(part, share);
      } catch {
        this.giveUp(index);
      }
    });
    this.plannedEnd = cursor;
  }

  /**
   * Shares of `total` entries for the ready workers (the rest is the main thread's): with speeds r (ms per entry)
   * for the main thread indexing (m) and merging (g) and each worker (w_j), a round takes T on every side when
   * worker j counts T / w_j entries and the main thread indexes (T − g · Σ T / w_j) / m itself.
   */
  private shares(ready: readonly Helper[], total: number): number[] {
    if (ready.length === 0) return [];
    const indexing = this.indexing > 0 ? this.indexing : 1;
    const merging = this.merging > 0 ? this.merging : indexing * 0.25;
    const speeds = ready.map((helper) =>
      helper.millisecondsPerEntry > 0 ? helper.millisecondsPerEntry : indexing,
    );
    const inverse = speeds.reduce((sum, speed) => sum + 1 / speed, 0);
    const mergeLoad = speeds.reduce((sum, speed) => sum + merging / speed, 0);
    const mainShare = Math.max(0, (1 - mergeLoad) / indexing);
    const time = total / (mainShare + inverse);
    return speeds.map((speed) => Math.min(total, Math.floor(time / speed)));
  }

  /** The ids and texts of entries `[start, end)` for a worker, texts flattened in field order (`entryFieldTexts`). */
  private task(part: number, start: number, end: number): BuildWorkerTask {
    const ids: string[] = [];
    const texts: string[] = [];
    const textCounts = new Int32Array((end - start) * FIELD_COUNT);
    let index = 0;
    const pushAll = (list: readonly string[]): void => {
      textCounts[index++] = list.length;
      for (const text of list) texts.push(text);
    };
    for (let position = start; position < end; position++) {
      const entry = this.entries[position]!;
      ids.push(entry.id);
      textCounts[index++] = 1;
      texts.push(entry.title);
      pushAll(entry.aliases);
      pushAll(entry.keywords);
      textCounts[index++] = 1;
      texts.push(entry.summary);
      textCounts[index++] = 1;
      texts.push(entry.body);
    }
    return { part, ids, texts, textCounts };
  }
}
