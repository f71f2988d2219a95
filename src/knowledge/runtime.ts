/**
 * The few host facilities the engine needs beyond the language, looked up at run time so the root export imports
 * no `node:` module and runs unchanged in Node, browsers, and edge and worker runtimes.
 */

type HostGlobals = {
  setImmediate?: (callback: () => void) => unknown;
  MessageChannel?: new () => {
    port1: { onmessage: ((event: unknown) => void) | null; close(): void };
    port2: { postMessage(message: unknown): void; close(): void };
  };
  process?: { getBuiltinModule?: (name: string) => unknown };
};

const host = globalThis as unknown as HostGlobals;

/**
 * Memory the engine's Node loader (`dist/knowledge/rootChunk.node.js`) hands over while this code's top level runs:
 * its code cache check's WebAssembly memory, whose pages it already touched (the script's source, then the cache)
 * and no longer needs. A first touch of a fresh page is a page fault (about 15 microseconds on some virtual
 * machines), so a load's first read of up to its size (a 10k artifact's eager sections) goes there (see
 * {@link takeLoaderScratch}). Null elsewhere.
 */
let loaderScratch: ArrayBuffer | null = (() => {
  const offered = (globalThis as Record<symbol, unknown>)[Symbol.for("lexground.loaderScratch")];
  return offered instanceof ArrayBuffer ? offered : null;
})();

/** `length` bytes of the loader's memory, once (null when there is none, it was taken, or it is too small). */
export function takeLoaderScratch(length: number): Uint8Array | null {
  if (loaderScratch === null || loaderScratch.byteLength < length) return null;
  const bytes = new Uint8Array(loaderScratch, 0, length);
  loaderScratch = null;
  return bytes;
}

/**
 * Resolves on the next turn of the event loop, letting timers and I/O run: `setImmediate` in Node, a message
 * channel in browsers and workers (a nested `setTimeout(0)` is clamped to 4 ms there, which would slow a sliced
 * build by half), `setTimeout` as the last resort.
 */
export function yieldToEventLoop(): Promise<void> {
  return new Promise<void>((resolve) => {
    if (typeof host.setImmediate === "function") {
      host.setImmediate(resolve);
    } else if (typeof host.MessageChannel === "function") {
      const channel = new host.MessageChannel();
      channel.port1.onmessage = () => {
        channel.port1.close();
        resolve();
      };
      channel.port2.postMessage(null);
    } else {
      setTimeout(resolve, 0);
    }
  });
}

/**
 * A Node built-in module when the host is Node (`process.getBuiltinModule`, Node >= 20.16), otherwise undefined.
 * No `import` of a `node:` specifier appears, so browser bundlers have nothing to resolve or polyfill.
 */
export function nodeBuiltin<Module>(name: string): Module | undefined {
  try {
    return host.process?.getBuiltinModule?.(name) as Module | undefined;
  } catch {
    return undefined;
  }
}

/** Reads a file in Node; elsewhere throws an error that says to pass the bytes instead. */
export async function readFileBytes(path: string): Promise<Uint8Array> {
  const fs = nodeBuiltin<{ readFile(path: string): Promise<Uint8Array> }>("node:fs/promises");
  if (!fs) {
    throw new Error(
      `a file path (${path}) needs Node's file system, which this runtime does not have: pass the artifact's bytes (a Uint8Array) instead`,
    );
  }
  return fs.readFile(path);
}

/** A file opened for reads at any position: what a self-contained index artifact reads its entries from. */
export type RandomAccessFile = {
  /** The file's size in bytes when it was opened. */
  readonly size: number;
  /** Reads `length` bytes at `position` into a new buffer, synchronously (one entry of a turn). */
  readSync(position: number, length: number): Uint8Array;
  /** Reads `target.byteLength` bytes at `position` into `target`, synchronously (no buffer of its own). */
  readIntoSync(position: number, target: Uint8Array): void;
  /** Reads `length` bytes at `position` into a new buffer without blocking the event loop. */
  read(position: number, length: number): Promise<Uint8Array>;
  /** Releases the file descriptor (idempotent). */
  close(): void;
};

type NodeFs = {
  openSync(path: string, flags: string): number;
  fstatSync(fd: number): { size: number; isFile(): boolean };
  readSync(fd: number, buffer: Uint8Array, offset: number, length: number, position: number): number;
  read(
    fd: number,
    buffer: Uint8Array,
    offset: number,
    length: number,
    position: number,
    callback: (error: Error | null, bytesRead: number) => void,
  ): void;
  closeSync(fd: number): void;
};

/** Largest single read (Node refuses reads over 2 GiB). */
const READ_CHUNK_BYTES = 1 << 30;

/**
 * Opens a file for positional reads in Node; elsewhere throws an error that says to pass the bytes instead. The
 * descriptor stays open until `close()` (callers that keep the file for the life of an object close it with a
 * `FinalizationRegistry`).
 */
export function openRandomAccessFile(path: string): RandomAccessFile {
  const fs = nodeBuiltin<NodeFs>("node:fs");
  if (!fs) {
    throw new Error(
      `a file path (${path}) needs Node's file system, which this runtime does not have: pass the artifact's bytes (a Uint8Array) instead`,
    );
  }
  const fd = fs.openSync(path, "r");
  let open = true;
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) throw new Error(`${path} is not a file`);
    const size = stat.size;
    const check = (position: number, length: number): void => {
      if (!open) throw new Error(`${path} was closed`);
      if (position < 0 || length < 0 || position + length > size)
        throw new RangeError(`read of ${length} bytes at ${position} is outside ${path} (${size} bytes)`);
    };
    const shortRead = (): Error => new Error(`${path} is shorter than when it was opened (changed on disk?)`);
    const readIntoSync = (position: number, target: Uint8Array): void => {
      const length = target.byteLength;
      check(position, length);
      let done = 0;
      while (done < length) {
        const count = fs.readSync(
          fd,
          target,
          done,
          Math.min(READ_CHUNK_BYTES, length - done),
          position + done,
        );
        if (count <= 0) throw shortRead();
        done += count;
      }
    };
    return {
      size,
      readSync(position, length) {
        const buffer = new Uint8Array(length);
        readIntoSync(position, buffer);
        return buffer;
      },
      readIntoSync,
      async read(position, length) {
        check(position, length);
        const buffer = new Uint8Array(length);
        let done = 0;
        while (done < length) {
          const count = await new Promise<number>((resolve, reject) =>
            fs.read(
              fd,
              buffer,
              done,
              Math.min(READ_CHUNK_BYTES, length - done),
              position + done,
              (error, read) => (error ? reject(error) : resolve(read)),
            ),
          );
          if (count <= 0) throw shortRead();
          done += count;
        }
        return buffer;
      },
      close() {
        if (!open) return;
        open = false;
        fs.closeSync(fd);
      },
    };
  } catch (caught) {
    fs.closeSync(fd);
    throw caught;
  }
}

const typedArrayTag = Object.getOwnPropertyDescriptor(
  Object.getPrototypeOf(Uint8Array.prototype),
  Symbol.toStringTag,
)?.get as ((this: unknown) => string | undefined) | undefined;

/**
 * Whether `value` is a Uint8Array (a Node Buffer included), from any realm, and not an object merely claiming to be
 * one: the typed-array brand check that `node:util`'s `types.isUint8Array` does, without importing it.
 */
export function isUint8Array(value: unknown): value is Uint8Array {
  return typedArrayTag !== undefined && typedArrayTag.call(value) === "Uint8Array";
}
