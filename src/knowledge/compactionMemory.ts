/**
 * Where a compaction worker puts the arrays it hands back, and how much of that memory may be outstanding.
 *
 * Arrays that arrive as transferred `ArrayBuffer`s count, on the main thread, as external memory that V8 has just
 * allocated: tens of megabytes of it at 100k entries, which makes V8 scavenge the young generation at once (a
 * young buffer that large is "external memory pressure"), more than once, and start marking the whole heap. Those
 * collections of the host's heap were the longest event-loop blocks of a compaction. Arrays on a
 * `SharedArrayBuffer` are not counted as any one isolate's memory, so their arrival starts no collection.
 *
 * The price: V8, not counting them, is not pushed to collect a dropped index either, so it is freed at the host's
 * next major collection, whenever that comes. {@link SharedArrayLedger} bounds that: it adds up the shared bytes
 * handed out and subtracts them when their buffers are collected (a `FinalizationRegistry`), and per field allows
 * shared arrays only while what is outstanding stays within {@link SHARED_BUDGET} times the field's expected size
 * (the serving index's arrays plus about one dropped index not collected yet). Past that, the worker's arrays are
 * ordinary transferred ones again: V8 counts them, collects, the dropped shared ones are freed, and later
 * compactions use shared arrays again.
 */
import type { FieldArrayAllocator } from "./compaction.js";

/**
 * Shared bytes a field may have outstanding, in multiples of the bytes it is expected to take: the index serving
 * (shared when it was compacted by a worker), one dropped index waiting for a collection, and slack for growth.
 */
export const SHARED_BUDGET = 2.5;

/** Bytes per posting a compacted field keeps: a document id, a frequency byte and a contribution. */
export const BYTES_PER_POSTING = 13;

/** Typed arrays on `SharedArrayBuffer`s (zeroed, as ordinary ones): what a worker allocates when allowed. */
export const SHARED_ARRAYS: FieldArrayAllocator = {
  int32: (length) => new Int32Array(new SharedArrayBuffer(length * 4)),
  uint8: (length) => new Uint8Array(new SharedArrayBuffer(length)),
  float64: (length) => new Float64Array(new SharedArrayBuffer(length * 8)),
};

/** Outstanding shared bytes per field, and the decision whether a field's arrays may be shared. */
export class SharedArrayLedger {
  private readonly outstanding = new Map<number, number>();
  private readonly registry: FinalizationRegistry<{ field: number; bytes: number }> | null;
  /** Whether collections are learned of (without a `FinalizationRegistry`, shared arrays are never allowed). */
  private readonly tracking: boolean;

  /** `finalization`: false to count without a registry (tests call {@link released} themselves). */
  constructor(finalization = true) {
    this.registry =
      finalization && typeof FinalizationRegistry === "function"
        ? new FinalizationRegistry(({ field, bytes }) => this.released(field, bytes))
        : null;
    this.tracking = !finalization || this.registry !== null;
  }

  /** Shared bytes of `field` handed out and not known to be collected. */
  outstandingBytes(field: number): number {
    return this.outstanding.get(field) ?? 0;
  }

  /** Whether `field`'s arrays may go on shared buffers, for a field expected to keep `expectedBytes`. */
  allows(field: number, expectedBytes: number): boolean {
    return this.tracking && this.outstandingBytes(field) <= SHARED_BUDGET * Math.max(expectedBytes, 1);
  }

  /** Records the arrays of `field` as handed out (those on shared buffers; ordinary ones V8 counts itself). */
  adopted(field: number, arrays: readonly (ArrayBufferView | null)[]): void {
    for (const array of arrays) {
      if (!array || !(array.buffer instanceof SharedArrayBuffer)) continue;
      const bytes = array.buffer.byteLength;
      this.outstanding.set(field, this.outstandingBytes(field) + bytes);
      // The main thread's buffer object lives as long as any view of it, that is as long as the index holding it.
      this.registry?.register(array.buffer, { field, bytes });
    }
  }

  /** A shared buffer of `field` was collected. */
  released(field: number, bytes: number): void {
    this.outstanding.set(field, Math.max(0, this.outstandingBytes(field) - bytes));
  }
}
