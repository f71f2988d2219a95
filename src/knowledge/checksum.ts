/**
 * The 32-bit checksum of index artifacts: CRC-32 (IEEE 802.3, the checksum of zlib, gzip and PNG). It detects
 * accidental corruption (a flipped byte, a truncated or partly overwritten file; every burst of up to 32 bits),
 * not tampering: whoever can change the file can recompute it, so a cryptographic hash would add cost without
 * adding protection.
 *
 * Three implementations compute the same values, chosen by what a call costs at a cold start:
 * - a table-driven JavaScript loop (slicing by 4) for a few bytes, and on hosts without the others; it runs
 *   interpreted at first (about 10 MB/s cold), so it is no choice for kilobytes at a cold start;
 * - the same loop as a tiny WebAssembly module (a few hundred bytes, compiled by the baseline compiler in well
 *   under a millisecond, about 1 GB/s from its first call): what a cold start's checks of its header, its small
 *   eager sections and the blocks its first turn reads use;
 * - zlib's native CRC-32 in Node (`zlib.crc32`, Node >= 20.15, several GB/s) for large inputs (from
 *   {@link BULK_BYTES}: writing an artifact, a million entries' sections). Looking zlib up loads Node's stream
 *   modules (about 7 ms of a 10k-entry cold start), so it is looked up only when a large input comes, at run time
 *   (the root export imports no `node:` module), and used for every input after that.
 */
import { nodeBuiltin } from "./runtime.js";

type Crc32 = (data: Uint8Array, value?: number) => number;

/** The reflected CRC-32 polynomial. */
const POLYNOMIAL = 0xedb88320;

let tables: Int32Array[] | null = null;

/** Four 256-entry tables: table 0 is the classic byte table, table k advances k more zero bytes. */
function crcTables(): Int32Array[] {
  if (tables) return tables;
  const made = [0, 1, 2, 3].map(() => new Int32Array(256));
  for (let byte = 0; byte < 256; byte++) {
    let value = byte;
    for (let bit = 0; bit < 8; bit++) value = value & 1 ? (value >>> 1) ^ POLYNOMIAL : value >>> 1;
    made[0]![byte] = value;
  }
  for (let byte = 0; byte < 256; byte++)
    for (let table = 1; table < 4; table++) {
      const previous = made[table - 1]![byte]!;
      made[table]![byte] = (previous >>> 8) ^ made[0]![previous & 0xff]!;
    }
  tables = made;
  return made;
}

/** CRC-32 in JavaScript (slicing by 4): the same values as zlib's, for hosts without it. */
export function crc32Portable(bytes: Uint8Array): number {
  const [table0, table1, table2, table3] = crcTables() as [Int32Array, Int32Array, Int32Array, Int32Array];
  let crc = -1;
  const length = bytes.byteLength;
  let index = 0;
  for (const end = length - (length % 4); index < end; index += 4) {
    crc ^= bytes[index]! | (bytes[index + 1]! << 8) | (bytes[index + 2]! << 16) | (bytes[index + 3]! << 24);
    crc =
      table3[crc & 0xff]! ^ table2[(crc >>> 8) & 0xff]! ^ table1[(crc >>> 16) & 0xff]! ^ table0[crc >>> 24]!;
  }
  for (; index < length; index++) crc = (crc >>> 8) ^ table0[(crc ^ bytes[index]!) & 0xff]!;
  return ~crc >>> 0;
}

/** Where the module's memory holds the four tables (1 KiB each, table k at k KiB) and the bytes to check. */
const DATA_OFFSET = 4096;
/** Bytes checked per call into the module (its memory is two 64 KiB pages: the tables, then one chunk). */
const CHUNK_BYTES = 65536;

/** Unsigned LEB128, the WebAssembly binary format's integers. */
function leb128(value: number): number[] {
  const out: number[] = [];
  let rest = value;
  do {
    let byte = rest & 0x7f;
    rest >>>= 7;
    if (rest !== 0) byte |= 0x80;
    out.push(byte);
  } while (rest !== 0);
  return out;
}

/**
 * The module, in the WebAssembly binary format: one memory of two pages and one function `update(crc, length)`
 * that folds `length` bytes at {@link DATA_OFFSET} into the running (inverted) `crc`, four bytes at a time as
 * {@link crc32Portable} does, then byte by byte; it returns the new running value.
 */
function kernelModuleBytes(): Uint8Array {
  const localGet = (index: number) => [0x20, index];
  const localSet = (index: number) => [0x21, index];
  const constant = (value: number) => [0x41, ...leb128(value)];
  /** `i32.load` of the table entry at the byte offset on the stack, from table `table`. */
  const tableLoad = (table: number) => [0x28, 0x02, ...leb128(table * 1024)];
  /** `((crc >>> shift) & 0xff) << 2`: a table entry's byte offset. */
  const entry = (shift: number) => [
    ...localGet(0),
    ...(shift > 0 ? [...constant(shift), 0x76] : []),
    ...constant(0xff),
    0x71,
    ...constant(2),
    0x74,
  ];
  // Locals: 0 crc, 1 length (parameters), 2 position, 3 end.
  const body = [
    0x01,
    0x02,
    0x7f,
    // position = DATA_OFFSET; end = position + (length & ~3)
    ...constant(DATA_OFFSET),
    ...localSet(2),
    ...localGet(2),
    ...localGet(1),
    0x41,
    0x7c, // i32.const -4
    0x71,
    0x6a,
    ...localSet(3),
    // block { loop { if position >= end break; crc ^= load32(position); crc = T3[..] ^ T2[..] ^ T1[..] ^ T0[..] } }
    0x02,
    0x40,
    0x03,
    0x40,
    ...localGet(2),
    ...localGet(3),
    0x4f,
    0x0d,
    0x01,
    ...localGet(0),
    ...localGet(2),
    0x28,
    0x02,
    0x00,
    0x73,
    ...localSet(0),
    ...entry(0),
    ...tableLoad(3),
    ...entry(8),
    ...tableLoad(2),
    0x73,
    ...entry(16),
    ...tableLoad(1),
    0x73,
    ...localGet(0),
    ...constant(24),
    0x76,
    ...constant(2),
    0x74,
    ...tableLoad(0),
    0x73,
    ...localSet(0),
    ...localGet(2),
    ...constant(4),
    0x6a,
    ...localSet(2),
    0x0c,
    0x00,
    0x0b,
    0x0b,
    // end = DATA_OFFSET + length; the last bytes one at a time: crc = (crc >>> 8) ^ T0[(crc ^ byte) & 0xff]
    ...constant(DATA_OFFSET),
    ...localGet(1),
    0x6a,
    ...localSet(3),
    0x02,
    0x40,
    0x03,
    0x40,
    ...localGet(2),
    ...localGet(3),
    0x4f,
    0x0d,
    0x01,
    ...localGet(0),
    ...constant(8),
    0x76,
    ...localGet(0),
    ...localGet(2),
    0x2d,
    0x00,
    0x00,
    0x73,
    ...constant(0xff),
    0x71,
    ...constant(2),
    0x74,
    ...tableLoad(0),
    0x73,
    ...localSet(0),
    ...localGet(2),
    ...constant(1),
    0x6a,
    ...localSet(2),
    0x0c,
    0x00,
    0x0b,
    0x0b,
    ...localGet(0),
    0x0b,
  ];
  const section = (id: number, content: number[]) => [id, ...leb128(content.length), ...content];
  const name = (text: string) => [text.length, ...Array.from(text, (character) => character.charCodeAt(0))];
  return Uint8Array.from([
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00,
    // type 0: (i32, i32) -> i32
    ...section(1, [0x01, 0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f]),
    ...section(3, [0x01, 0x00]),
    // one memory, two pages
    ...section(5, [0x01, 0x00, 0x02]),
    ...section(7, [0x02, ...name("memory"), 0x02, 0x00, ...name("update"), 0x00, 0x00]),
    ...section(10, [0x01, ...leb128(body.length), ...body]),
  ]);
}

type WebAssemblyHost = {
  WebAssembly?: {
    Module: new (bytes: Uint8Array) => unknown;
    Instance: new (
      module: unknown,
    ) => { exports: { memory: { buffer: ArrayBuffer }; update: (crc: number, length: number) => number } };
  };
};

/** The WebAssembly CRC-32, compiled on first use; null where WebAssembly is missing or refused (a policy). */
let kernel: ((bytes: Uint8Array) => number) | null | undefined;

function webAssemblyCrc32(): ((bytes: Uint8Array) => number) | null {
  if (kernel !== undefined) return kernel;
  kernel = null;
  const host = (globalThis as WebAssemblyHost).WebAssembly;
  if (!host) return null;
  try {
    const { memory, update } = new host.Instance(new host.Module(kernelModuleBytes())).exports;
    const heap = new Uint8Array(memory.buffer);
    const [table0, table1, table2, table3] = crcTables() as [Int32Array, Int32Array, Int32Array, Int32Array];
    const moduleTables = new Int32Array(memory.buffer, 0, 1024);
    moduleTables.set(table0, 0);
    moduleTables.set(table1, 256);
    moduleTables.set(table2, 512);
    moduleTables.set(table3, 768);
    kernel = (bytes) => {
      let crc = -1;
      for (let offset = 0; offset < bytes.byteLength; offset += CHUNK_BYTES) {
        const length = Math.min(CHUNK_BYTES, bytes.byteLength - offset);
        heap.set(bytes.subarray(offset, offset + length), DATA_OFFSET);
        crc = update(crc, length);
      }
      return ~crc >>> 0;
    };
  } catch {
    // A host that forbids compiling WebAssembly (a content security policy, `--jitless`): the other two remain.
  }
  return kernel;
}

/** The WebAssembly CRC-32 of `bytes`, or null where WebAssembly is unavailable (for tests). @internal */
export function crc32WebAssembly(bytes: Uint8Array): number | null {
  const compute = webAssemblyCrc32();
  return compute ? compute(bytes) : null;
}

/** zlib's CRC-32 when the host is Node with it (looked up once, on first use), otherwise null. */
let native: Crc32 | null | undefined;

function nativeCrc32(): Crc32 | null {
  if (native === undefined) {
    const crc32 = nodeBuiltin<{ crc32?: unknown }>("node:zlib")?.crc32;
    native = typeof crc32 === "function" ? (crc32 as Crc32) : null;
  }
  return native;
}

/** Below this length the JavaScript loop costs less than a call into either of the others. */
const PORTABLE_MAX_BYTES = 64;
/** From this length zlib is looked up (once) and used (see the module comment). */
const BULK_BYTES = 1 << 20;

/** The CRC-32 of `bytes` (an unsigned 32-bit integer); equal bytes give equal checksums on every host. */
export function checksum32(bytes: Uint8Array): number {
  const length = bytes.byteLength;
  if (length < PORTABLE_MAX_BYTES) return crc32Portable(bytes);
  if (native || length >= BULK_BYTES) {
    const crc32 = nativeCrc32();
    if (crc32) return crc32(bytes) >>> 0;
  }
  const compute = webAssemblyCrc32();
  if (compute) return compute(bytes);
  const crc32 = nativeCrc32();
  return crc32 ? crc32(bytes) >>> 0 : crc32Portable(bytes);
}
