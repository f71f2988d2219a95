/**
 * A background compaction's heavy part in a worker thread (Node): writing each field's fresh postings and
 * contributions (`compactedField`, about all of a compaction's CPU) runs in `compactionWorker.ts`, so the main
 * thread neither computes them nor allocates the memory that computing them takes. What stays on the main thread
 * is cheap and sliced: the renumbering, the lengths, streaming each field's inputs to the worker in chunks of
 * {@link CHUNK_BYTES} through a shared staging buffer (copied {@link COPY_BYTES} per step), and
 * adopting the finished arrays, which the worker writes on `SharedArrayBuffer`s when `compactionMemory.ts` allows
 * (their arrival then starts no collection of the host's heap) or else transfers (moved, not copied).
 *
 * A worker is started per compaction and ended after it, so everything it held is freed at once. When no worker
 * can start or one fails, the field is compacted on the main thread, in slices, with the same code: the result is
 * the same either way.
 */

import { isNode } from "./buildThreads.js";
import type { FieldCompactionInput, FieldCompactionResult, FieldCompactor } from "./compaction.js";
import { BYTES_PER_POSTING, SharedArrayLedger } from "./compactionMemory.js";
import {
  COMPACTION_WORKER_MARKER,
  type CompactionReply,
  type CompactionTask,
  type CompactionWorkerData,
  mapOfPairs,
  pairsOf,
  STREAMED,
  type StreamedArray,
  type StreamedArrayKind,
} from "./compactionProtocol.js";
import { inactivePostings } from "./postings.js";
import { nodeBuiltin } from "./runtime.js";

/** Bytes sent to the worker per chunk (one message and one reply each). */
const CHUNK_BYTES = 4 << 20;
/**
 * Bytes of a chunk copied into the staging buffer per step: 64 pages, a fraction of a millisecond, or a few
 * milliseconds where a page's first touch is slow (on this VM under load, 50-80 µs a page: a staging buffer is
 * reused by later compactions, see {@link stagingBuffers}, so its pages are touched once per process).
 */
const COPY_BYTES = 1 << 18;

/**
 * Staging buffers no compaction is using, kept for the next (one per compaction running at a time: 4 MB each),
 * so their memory is not allocated and first touched again per compaction.
 */
const stagingBuffers: SharedArrayBuffer[] = [];

/** Registries smaller than this are compacted on the main thread (a few milliseconds; a worker costs more). */
const DEFAULT_MINIMUM_DOCUMENTS = 16_384;
let minimumDocuments = DEFAULT_MINIMUM_DOCUMENTS;

/**
 * Sets the number of documents from which a compaction runs in a worker thread (tests use 0 to run small
 * registries there); returns the previous value. @internal
 */
export function setCompactionThreadMinimum(documents: number): number {
  const previous = minimumDocuments;
  minimumDocuments = documents;
  return previous;
}

let workerFieldsInProcess = 0;

/** The shared result arrays of every compaction in this process (see `compactionMemory.ts`). */
const sharedArrays = new SharedArrayLedger();

/** Shared bytes of `field`'s compacted arrays not known to be collected (tests). @internal */
export function sharedCompactionBytes(field: number): number {
  return sharedArrays.outstandingBytes(field);
}

/** Fields compacted by worker threads in this process so far (tests check the worker was used). @internal */
export function fieldsCompactedByWorkers(): number {
  return workerFieldsInProcess;
}

/** The part of Node's `Worker` used here. */
type NodeCompactionWorker = {
  postMessage(message: CompactionTask): void;
  on(event: "message", listener: (message: CompactionReply) => void): void;
  on(event: "error" | "exit", listener: (value: unknown) => void): void;
  ref(): void;
  unref(): void;
  terminate(): Promise<number>;
};
type WorkerThreads = {
  Worker: new (
    filename: URL | string,
    options: { workerData: unknown; eval?: boolean },
  ) => NodeCompactionWorker;
};

/** The worker's script when the engine runs from its TypeScript sources: tsx's loader, then the worker module. */
const SOURCE_WORKER = `const { workerData } = process.getBuiltinModule("node:worker_threads");
import("tsx/esm/api").then((api) => { api.register(); return import(workerData.entry); });`;

function kindOf(array: StreamedArray): StreamedArrayKind {
  return array instanceof Int32Array ? "int32" : array instanceof Uint8Array ? "uint8" : "float64";
}

/**
 * A compaction worker and the main thread's end of it. Its field compactor ({@link compactField}) is a generator
 * that, while it waits for the worker, sets {@link waiting} and yields: whoever runs the steps awaits that promise
 * before the next step ({@link runCompactionSteps}).
 */
export class CompactionThread {
  private readonly worker: NodeCompactionWorker;
  private readonly staging: Uint8Array;
  /** What the running step waits for, if anything. */
  waiting: Promise<void> | null = null;
  private settle: (() => void) | null = null;
  private reply: CompactionReply | null = null;
  /** Why the worker cannot be used any more, once it cannot. */
  private failure: string | null = null;
  private renumberingSent: Int32Array | null = null;
  /** Fields the worker compacted (the others, if any, were compacted on the main thread). */
  fieldsCompacted = 0;

  private constructor(worker: NodeCompactionWorker, staging: Uint8Array) {
    this.worker = worker;
    this.staging = staging;
    worker.on("message", (message) => this.settled(message));
    worker.on("error", (error) => this.failed(error instanceof Error ? error.message : String(error)));
    worker.on("exit", () => this.failed("the compaction worker exited"));
    // Held only while it works for us (see request): an idle worker never keeps a process alive.
    worker.unref();
  }

  /** A worker for compacting an index of `documentCount` documents, or null (not Node, small, cannot start). */
  static start(documentCount: number): CompactionThread | null {
    if (!isNode() || documentCount < minimumDocuments) return null;
    const threads = nodeBuiltin<WorkerThreads>("node:worker_threads");
    if (!threads) return null;
    try {
      // A file name in a variable: bundlers leave this `new URL` alone (the worker only ever runs in Node).
      const here = import.meta.url;
      const entry = new URL(here.endsWith(".ts") ? "./compactionWorker.ts" : "./compactionWorker.js", here);
      const staging = stagingBuffers.pop() ?? new SharedArrayBuffer(CHUNK_BYTES);
      const workerData: CompactionWorkerData = {
        marker: COMPACTION_WORKER_MARKER,
        staging,
        entry: entry.href,
      };
      // From the TypeScript sources (development, tests), the worker registers tsx's loader before loading them.
      const worker = entry.pathname.endsWith(".ts")
        ? new threads.Worker(SOURCE_WORKER, { workerData, eval: true })
        : new threads.Worker(entry, { workerData });
      return new CompactionThread(worker, new Uint8Array(staging));
    } catch {
      return null;
    }
  }

  /** Ends the worker (what it holds is freed with it). */
  close(): void {
    if (this.failure === "closed") return;
    this.failure ??= "closed";
    // The staging buffer is reused once the worker is gone (nothing reads it any more).
    const staging = this.staging.buffer as SharedArrayBuffer;
    void this.worker.terminate().then(
      () => stagingBuffers.push(staging),
      () => {},
    );
  }

  private settled(message: CompactionReply): void {
    this.worker.unref();
    if (message.kind === "failed") this.failure = message.message;
    this.reply = message;
    this.release();
  }

  private failed(reason: string): void {
    this.failure ??= reason;
    this.release();
  }

  private release(): void {
    const settle = this.settle;
    this.settle = null;
    this.waiting = null;
    settle?.();
  }

  /** Posts a task and sets {@link waiting} until the worker answers (or fails). */
  private request(task: CompactionTask): void {
    this.reply = null;
    this.waiting = new Promise((resolve) => {
      this.settle = resolve;
    });
    this.worker.ref();
    this.worker.postMessage(task);
  }

  /** Streams `array` to the worker as `name`, one chunk per step; false when the worker failed. */
  private *send(name: string, array: StreamedArray): Generator<void, boolean, void> {
    const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
    let byteOffset = 0;
    do {
      const byteLength = Math.min(CHUNK_BYTES, bytes.length - byteOffset);
      // Copied a piece per step: a whole chunk was a step of several milliseconds on a loaded machine.
      for (let copied = 0; copied < byteLength; copied += COPY_BYTES) {
        const piece = Math.min(COPY_BYTES, byteLength - copied);
        const from = byteOffset + copied;
        this.staging.set(bytes.subarray(from, from + piece), copied);
        if (copied + piece < byteLength) yield;
      }
      this.request({
        kind: "chunk",
        name,
        arrayKind: kindOf(array),
        length: array.length,
        byteOffset,
        byteLength,
      });
      yield;
      if (this.failure !== null || this.reply?.kind !== "received") return false;
      byteOffset += byteLength;
    } while (byteOffset < bytes.length);
    return true;
  }

  /** This worker as a {@link FieldCompactor}. */
  readonly compactor: FieldCompactor = (input) => this.compactField(input);

  /**
   * Compacts one field in the worker; null when the worker cannot (the caller then compacts the field itself).
   */
  *compactField(input: FieldCompactionInput): Generator<void, FieldCompactionResult | null, void> {
    if (this.failure !== null) return null;
    const { base, added, scored } = input;
    const streams: [string, StreamedArray][] = [];
    if (this.renumberingSent !== input.newDenseIds) {
      streams.push([STREAMED.newDenseIds, input.newDenseIds]);
      this.renumberingSent = input.newDenseIds;
    }
    streams.push([STREAMED.offsets, base.offsets], [STREAMED.docs, base.docs]);
    const recovery = base.recovery;
    // Frequencies every term of which is recovered already are a byte per posting; contributions are eight.
    const recovering = recovery !== null && recovery.recovered.indexOf(0) >= 0;
    if (recovering)
      streams.push(
        [STREAMED.contributions, recovery.contributions],
        [STREAMED.recoveryLengths, recovery.lengths],
      );
    else
      streams.push(
        [STREAMED.frequencies, base.frequencies ?? new Uint8Array(0)],
        [STREAMED.largeFrequencies, pairsOf(base.largeFrequencies)],
      );
    streams.push(
      [STREAMED.addedTerms, added.terms],
      [STREAMED.addedStarts, added.starts],
      [STREAMED.addedPairs, added.pairs],
    );
    if (scored) streams.push([STREAMED.lengths, scored.lengths]);
    for (const [name, array] of streams) if (!(yield* this.send(name, array))) return null;
    const postingBytes = scored ? BYTES_PER_POSTING : BYTES_PER_POSTING - 8;
    const shared = sharedArrays.allows(
      input.field,
      (base.docs.length + added.pairs.length / 2) * postingBytes,
    );
    this.request({
      kind: "field",
      termCount: input.termCount,
      recovery: recovering
        ? {
            weight: recovery.weight,
            averageLength: recovery.averageLength,
            k1: recovery.k1,
            b: recovery.b,
            documentCount: recovery.documentCount,
          }
        : null,
      scored: scored
        ? {
            weight: scored.weight,
            k1: scored.k1,
            b: scored.b,
            documentCount: scored.documentCount,
            averageLength: scored.averageLength,
          }
        : null,
      field: input.field,
      shared,
    });
    yield;
    const reply = this.reply;
    if (this.failure !== null || reply?.kind !== "field") return null;
    const { offsets, docs, frequencies, largeFrequencies, contributions } = reply.arrays;
    sharedArrays.adopted(input.field, [offsets, docs, frequencies, contributions]);
    this.fieldsCompacted++;
    workerFieldsInProcess++;
    return {
      postings: contributions ? { offsets, docs, contributions, active: true } : inactivePostings(),
      frequencies: {
        offsets,
        docs,
        frequencies,
        largeFrequencies: mapOfPairs(largeFrequencies),
        recovery: null,
      },
    };
  }
}

/**
 * Runs compaction steps to their end, yielding to the event loop after `sliceMs` of work and awaiting the
 * worker whenever `thread` says a step waits for it.
 */
export async function runCompactionSteps<Result>(
  steps: Generator<void, Result, void>,
  thread: CompactionThread | null,
  sliceMs: number,
  yieldToEventLoop: () => Promise<void>,
): Promise<Result> {
  // Starting a worker took a few milliseconds of this thread just before: the first slice gets a turn of its own.
  if (thread) await yieldToEventLoop();
  let sliceStart = performance.now();
  let step = steps.next();
  while (!step.done) {
    const waiting = thread?.waiting;
    if (waiting) {
      await waiting;
      sliceStart = performance.now();
    } else if (performance.now() - sliceStart >= sliceMs) {
      await yieldToEventLoop();
      sliceStart = performance.now();
    }
    step = steps.next();
  }
  return step.value;
}
