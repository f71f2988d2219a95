/**
 * The worker threads of a parallel build as the main thread sees them (see `parallelBuild.ts`): starting them,
 * reading their replies, waiting for them, giving one up and stopping them all; and the finalize side, where a
 * worker scatters a range of a large field's postings while the main thread scatters the rest.
 */
import type { KnowledgeAnalyzerName } from "../types/knowledge.js";
import { type NodePort, type NodeWorker, startBuildWorker, type WorkerThreads } from "./buildThreads.js";
import type { BuildWorkerReply, BuildWorkerScatterTask } from "./buildWorker.js";
import {
  PARALLEL_SCATTER_MIN_POSTINGS,
  type ScatteredRange,
  type ScatterHelper,
  type ScatterInput,
  type ScatterTarget,
} from "./fieldPostings.js";

/** Entries per part, before the parts of a round are sized by the measured speeds. */
export const DEFAULT_PART_ENTRIES = 1024;
/** A worker silent this long while the main thread waits for it is given up (its parts go to the main thread). */
export const STALL_MILLISECONDS = 60_000;
/** Weight of the latest measurement in a smoothed speed. */
export const SMOOTHING = 0.3;

type Counted = Extract<BuildWorkerReply, { kind: "counted" }>;

/** A worker thread and what the main thread knows of it. */
export type Helper = {
  worker: NodeWorker;
  port: NodePort;
  ready: boolean;
  failed: boolean;
  /** The worker's term ids → the index's (filled part by part, in order). */
  termIds: Int32Array;
  mappedTerms: number;
  /** Smoothed milliseconds per entry the worker takes, or 0 before the first part. */
  millisecondsPerEntry: number;
  replies: Map<number, Counted>;
  /** Parts sent and not answered. */
  outstanding: number;
  /** Buffers of merged counts, sent back with the next parts for the worker to fill again (see `recycle`). */
  spareBuffers: ArrayBuffer[];
  /** Scattered ranges of postings that arrived, by request (see {@link ParallelBuildWorkers.scatterHelper}). */
  scattered: Map<number, ScatteredRange>;
  lastHeard: number;
};

/** What the last parallel build of this thread did (for benchmarks and tests). */
export type ParallelBuildStats = {
  /** Worker threads that started. */
  workers: number;
  /** Entries counted by workers (the rest the main thread indexed itself). */
  countedEntries: number;
  /** Milliseconds the main thread waited for a worker. */
  waitedMilliseconds: number;
  /** Ranges of postings a worker scattered when finalizing. */
  scatteredRanges: number;
  /** Of those, the ranges it wrote straight into the shared finished arrays (no copy on this thread). */
  scatteredInPlace: number;
};

/**
 * The workers of a {@link ParallelIndexing} and what the main thread knows of them (that class plans the parts
 * they count and merges their counts).
 */
export abstract class ParallelBuildWorkers {
  protected readonly partEntries: number;
  protected readonly helpers: Helper[] = [];
  private threads: WorkerThreads | null = null;
  /** Incremented by every worker reply. */
  protected readonly signal = new Int32Array(new SharedArrayBuffer(4));
  /** Entries of each part sent and not answered. */
  protected readonly partLengths = new Map<number, number>();
  private closed = false;
  /** @internal */
  readonly stats: ParallelBuildStats = {
    workers: 0,
    countedEntries: 0,
    waitedMilliseconds: 0,
    scatteredRanges: 0,
    scatteredInPlace: 0,
  };

  constructor(partEntries: number) {
    this.partEntries = Math.max(1, Math.floor(partEntries));
  }

  /** Workers that started. */
  get helperCount(): number {
    return this.helpers.length;
  }

  /** Starts one worker (ignored when it cannot start). @internal */
  startHelper(threads: WorkerThreads, analyzer: KnowledgeAnalyzerName): void {
    try {
      const { worker, port } = startBuildWorker(threads, analyzer, this.signal);
      const helper: Helper = {
        worker,
        port,
        ready: false,
        failed: false,
        termIds: new Int32Array(1024),
        mappedTerms: 0,
        millisecondsPerEntry: 0,
        replies: new Map(),
        outstanding: 0,
        spareBuffers: [],
        scattered: new Map(),
        lastHeard: performance.now(),
      };
      // Errors reach the main thread as events; the build notices a failed worker by its silence or its reply.
      worker.on("error", () => {
        helper.failed = true;
      });
      worker.on("messageerror", () => {
        helper.failed = true;
      });
      worker.unref();
      this.threads = threads;
      this.helpers.push(helper);
      this.stats.workers++;
    } catch {
      // No worker: the main thread does its share.
    }
  }

  /** Blocks until every worker started (or failed, or a stall's time passed). @internal */
  waitForWorkers(): void {
    const started = performance.now();
    while (this.helpers.some((helper) => !helper.ready && !helper.failed)) {
      if (performance.now() - started > STALL_MILLISECONDS) return;
      const observed = Atomics.load(this.signal, 0);
      if (this.receive()) continue;
      Atomics.wait(this.signal, 0, observed, 100);
    }
  }

  /**
   * The finalize side of the build: a worker scatters the upper range of a large field's terms while the main
   * thread scatters the rest (see `fieldPostings`). A worker that fails or stalls answers null: the main thread
   * then scatters that range itself.
   */
  scatterHelper(): ScatterHelper {
    const requests = new Map<number, number>();
    const inPlace = new Set<number>();
    let nextRequest = 0;
    return {
      // Tests (small parts) split every field, so that the split is exercised at any size.
      minimumPostings: this.partEntries === DEFAULT_PART_ENTRIES ? PARALLEL_SCATTER_MIN_POSTINGS : 1,
      start: (input: ScatterInput, fromTerm: number, target: ScatterTarget | null): number | null => {
        this.receive();
        const index = this.helpers.findIndex((helper) => helper.ready && !helper.failed);
        if (index < 0 || this.closed) return null;
        const request = nextRequest++;
        const task: BuildWorkerScatterTask = { kind: "scatter", request, input, fromTerm, target };
        try {
          this.helpers[index]!.port.postMessage(task);
        } catch {
          this.giveUp(index);
          return null;
        }
        this.helpers[index]!.lastHeard = performance.now();
        requests.set(request, index);
        if (target) inPlace.add(request);
        return request;
      },
      result: (request: number, milliseconds: number): ScatteredRange | null | undefined => {
        const index = requests.get(request);
        if (index === undefined) return null;
        const helper = this.helpers[index]!;
        const started = performance.now();
        for (;;) {
          this.receive();
          const range = helper.scattered.get(request);
          if (range) {
            helper.scattered.delete(request);
            requests.delete(request);
            this.stats.scatteredRanges++;
            if (inPlace.delete(request)) this.stats.scatteredInPlace++;
            return range;
          }
          if (helper.failed || performance.now() - helper.lastHeard > STALL_MILLISECONDS) {
            this.giveUp(index);
            requests.delete(request);
            return null;
          }
          const remaining = milliseconds - (performance.now() - started);
          if (remaining <= 0) return undefined;
          const observed = Atomics.load(this.signal, 0);
          if (this.receive()) continue;
          const waitStarted = performance.now();
          Atomics.wait(this.signal, 0, observed, remaining);
          this.stats.waitedMilliseconds += performance.now() - waitStarted;
        }
      },
    };
  }

  /** Stops the workers (idempotent). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const helper of this.helpers) {
      helper.failed = true;
      try {
        helper.port.close();
        void helper.worker.terminate().catch(() => undefined);
      } catch {
        // Already gone.
      }
    }
  }

  /** Reads every reply that arrived; true when there was any. */
  protected receive(): boolean {
    const threads = this.threads;
    if (!threads) return false;
    let any = false;
    for (const helper of this.helpers) {
      if (helper.failed) continue;
      for (;;) {
        const received = threads.receiveMessageOnPort(helper.port);
        if (!received) break;
        any = true;
        const reply = received.message;
        helper.lastHeard = performance.now();
        if (reply.kind === "ready") helper.ready = true;
        else if (reply.kind === "failed") helper.failed = true;
        else if (reply.kind === "scattered") helper.scattered.set(reply.request, reply.range);
        else {
          helper.outstanding--;
          helper.replies.set(reply.part, reply);
          const perEntry = reply.milliseconds / Math.max(1, this.partLength(reply.part));
          helper.millisecondsPerEntry =
            helper.millisecondsPerEntry === 0
              ? perEntry
              : helper.millisecondsPerEntry + SMOOTHING * (perEntry - helper.millisecondsPerEntry);
        }
      }
    }
    return any;
  }

  private partLength(part: number): number {
    const length = this.partLengths.get(part) ?? this.partEntries;
    this.partLengths.delete(part);
    return length;
  }

  /** Appends the index's ids of a worker's new terms (in the worker's id order) to its map. */
  protected mapTerms(helper: Helper, ids: readonly number[]): void {
    let termIds = helper.termIds;
    if (helper.mappedTerms + ids.length > termIds.length) {
      let length = termIds.length * 2;
      while (length < helper.mappedTerms + ids.length) length *= 2;
      const grown = new Int32Array(length);
      grown.set(termIds);
      termIds = grown;
      helper.termIds = termIds;
    }
    termIds.set(ids, helper.mappedTerms);
    helper.mappedTerms += ids.length;
  }

  /** A worker is given up: its planned parts that have not been merged become the main thread's. */
  protected giveUp(index: number): void {
    const helper = this.helpers[index]!;
    helper.failed = true;
    helper.replies.clear();
    this.handBack(index);
    try {
      void helper.worker.terminate().catch(() => undefined);
    } catch {
      // Already gone.
    }
  }

  /** Makes a given-up worker's planned parts that have not been merged the main thread's. */
  protected abstract handBack(index: number): void;
}
