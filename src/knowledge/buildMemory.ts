/**
 * Memory for the large, growing arrays of a build. V8 counts an `ArrayBuffer`'s memory as its heap's external
 * memory, and past about 64 MB of growth since the last collection it starts a full collection of the whole heap,
 * which marks the host's registry too (at a million entries ~3.5 GB, several seconds of CPU each time); it does not
 * count a `SharedArrayBuffer`'s. So arrays that grow by doubling while a build runs (the phrase trie's table, the
 * phrase lists' pairs) are allocated in shared memory where the runtime has it: same zeroed arrays, no collection
 * started by their growth.
 */

/** A zeroed Int32Array of `length` values, in shared memory where available. */
export function buildInt32Array(length: number): Int32Array {
  return typeof SharedArrayBuffer === "function" && length > 0
    ? new Int32Array(new SharedArrayBuffer(length * Int32Array.BYTES_PER_ELEMENT))
    : new Int32Array(length);
}
