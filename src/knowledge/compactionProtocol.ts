/**
 * What the main thread and a compaction worker (`compactionWorker.ts`, started by `compactionThread.ts`) say to
 * each other, and the worker's side of it ({@link FieldCompactionServer}): the main thread streams each field's
 * inputs through a shared staging buffer in chunks, asks for the field, and gets the finished arrays back
 * transferred. Imports no `node:` module and looks nothing up when imported.
 */
import {
  compactedField,
  type FieldCompactionInput,
  type FieldCompactionResult,
  ORDINARY_ARRAYS,
} from "./compaction.js";
import type { AddedFieldPostings } from "./compactionInputs.js";
import { SHARED_ARRAYS } from "./compactionMemory.js";
import type { FrequencyPostings } from "./postings.js";
import { runSteps } from "./steps.js";

/** Marks the `workerData` of a compaction worker. */
export const COMPACTION_WORKER_MARKER = "lexground.compactionWorker";

/** What a compaction worker is started with. */
export type CompactionWorkerData = {
  marker: typeof COMPACTION_WORKER_MARKER;
  /** Where the main thread puts each chunk of an input array. */
  staging: SharedArrayBuffer;
  /** The URL of this module (what a worker started from the TypeScript sources imports). */
  entry: string;
};

/** The kinds of typed array an input can be. */
export type StreamedArrayKind = "int32" | "uint8" | "float64";

/** The typed arrays a compaction streams. */
export type StreamedArray = Int32Array | Uint8Array | Float64Array;

/**
 * A chunk of an input array, in the staging buffer's first `byteLength` bytes: the worker creates the array
 * (`kind`, `length` values) on its first chunk and copies the bytes to `byteOffset`.
 */
export type CompactionChunk = {
  kind: "chunk";
  name: string;
  arrayKind: StreamedArrayKind;
  length: number;
  byteOffset: number;
  byteLength: number;
};

/** Compact one field from the arrays streamed so far (see {@link FieldCompactionInput}), then forget them. */
export type CompactionFieldTask = {
  kind: "field";
  field: number;
  termCount: number;
  /** The base's frequencies are recovered from its contributions (`recovery`), or streamed as `frequencies`. */
  recovery: {
    weight: number;
    averageLength: number;
    k1: number;
    b: number;
    documentCount: number;
  } | null;
  scored: { weight: number; k1: number; b: number; documentCount: number; averageLength: number } | null;
  /** Whether the kept arrays go on `SharedArrayBuffer`s (see `compactionThread.ts`) or ordinary, transferred ones. */
  shared: boolean;
};

/** The main thread's messages. */
export type CompactionTask = CompactionChunk | CompactionFieldTask;

/** A compacted field's arrays; `largeFrequencies` as (position, frequency) pairs. */
export type CompactedFieldArrays = {
  offsets: Int32Array;
  docs: Int32Array;
  frequencies: Uint8Array;
  largeFrequencies: Int32Array;
  contributions: Float64Array | null;
};

/** The worker's replies. */
export type CompactionReply =
  | { kind: "received" }
  | { kind: "field"; arrays: CompactedFieldArrays }
  | { kind: "failed"; message: string };

/** Names of the streamed arrays. */
export const STREAMED = {
  newDenseIds: "newDenseIds",
  offsets: "offsets",
  docs: "docs",
  frequencies: "frequencies",
  largeFrequencies: "largeFrequencies",
  contributions: "contributions",
  recoveryLengths: "recoveryLengths",
  addedTerms: "addedTerms",
  addedStarts: "addedStarts",
  addedPairs: "addedPairs",
  lengths: "lengths",
} as const;

/** A map's (key, value) pairs, flattened. */
export function pairsOf(map: ReadonlyMap<number, number> | null): Int32Array {
  const pairs = new Int32Array((map?.size ?? 0) * 2);
  let at = 0;
  if (map)
    for (const [key, value] of map) {
      pairs[at++] = key;
      pairs[at++] = value;
    }
  return pairs;
}

/** The map of flattened (key, value) pairs, or null when there are none. */
export function mapOfPairs(pairs: Int32Array): Map<number, number> | null {
  if (pairs.length === 0) return null;
  const map = new Map<number, number>();
  for (let at = 0; at < pairs.length; at += 2) map.set(pairs[at]!, pairs[at + 1]!);
  return map;
}

/** Receives streamed arrays and compacts fields from them. */
export class FieldCompactionServer {
  private readonly arrays = new Map<string, StreamedArray>();

  constructor(private readonly staging: Uint8Array) {}

  /** Copies a chunk out of the staging buffer. */
  receive(chunk: CompactionChunk): void {
    let array = this.arrays.get(chunk.name);
    if (!array) {
      array =
        chunk.arrayKind === "int32"
          ? new Int32Array(chunk.length)
          : chunk.arrayKind === "uint8"
            ? new Uint8Array(chunk.length)
            : new Float64Array(chunk.length);
      this.arrays.set(chunk.name, array);
    }
    new Uint8Array(array.buffer).set(this.staging.subarray(0, chunk.byteLength), chunk.byteOffset);
  }

  private take<Kind extends StreamedArray>(name: string): Kind {
    const array = this.arrays.get(name);
    if (!array) throw new Error(`compaction worker: ${name} was not streamed`);
    // Every input but the renumbering belongs to one field.
    if (name !== STREAMED.newDenseIds) this.arrays.delete(name);
    return array as Kind;
  }

  /** Compacts the field whose inputs were streamed (see {@link CompactionFieldTask}). */
  compact(task: CompactionFieldTask): CompactedFieldArrays {
    const offsets = this.take<Int32Array>(STREAMED.offsets);
    const docs = this.take<Int32Array>(STREAMED.docs);
    const base: FrequencyPostings = task.recovery
      ? {
          offsets,
          docs,
          frequencies: null,
          largeFrequencies: null,
          recovery: {
            ...task.recovery,
            contributions: this.take<Float64Array>(STREAMED.contributions),
            lengths: this.take<Int32Array>(STREAMED.recoveryLengths),
            recovered: new Uint8Array(Math.max(0, offsets.length - 1)),
          },
        }
      : {
          offsets,
          docs,
          frequencies: this.take<Uint8Array>(STREAMED.frequencies),
          largeFrequencies: mapOfPairs(this.take<Int32Array>(STREAMED.largeFrequencies)),
          recovery: null,
        };
    const added: AddedFieldPostings = {
      terms: this.take<Int32Array>(STREAMED.addedTerms),
      starts: this.take<Int32Array>(STREAMED.addedStarts),
      pairs: this.take<Int32Array>(STREAMED.addedPairs),
    };
    const input: FieldCompactionInput = {
      field: task.field,
      base,
      added,
      newDenseIds: this.take<Int32Array>(STREAMED.newDenseIds),
      termCount: task.termCount,
      scored: task.scored ? { ...task.scored, lengths: this.take<Int32Array>(STREAMED.lengths) } : null,
    };
    const result: FieldCompactionResult = runSteps(
      compactedField(input, task.shared ? SHARED_ARRAYS : ORDINARY_ARRAYS),
    );
    return {
      offsets: result.frequencies.offsets,
      docs: result.frequencies.docs,
      frequencies: result.frequencies.frequencies!,
      largeFrequencies: pairsOf(result.frequencies.largeFrequencies),
      contributions: result.postings.active ? result.postings.contributions : null,
    };
  }
}

/** The buffers of a compacted field to transfer (shared ones are not transferred: both threads see them). */
export function transferredBuffers(arrays: CompactedFieldArrays): ArrayBuffer[] {
  const buffers: ArrayBuffer[] = [];
  for (const array of [
    arrays.offsets,
    arrays.docs,
    arrays.frequencies,
    arrays.largeFrequencies,
    arrays.contributions,
  ])
    if (array && !(array.buffer instanceof SharedArrayBuffer)) buffers.push(array.buffer);
  return buffers;
}
