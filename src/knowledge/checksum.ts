/**
 * The 32-bit checksum of index artifacts: CRC-32 (IEEE 802.3, the checksum of zlib, gzip and PNG). It detects
 * accidental corruption (a flipped byte, a truncated or partly overwritten file; every burst of up to 32 bits),
 * not tampering: whoever can change the file can recompute it, so a cryptographic hash would add cost without
 * adding protection.
 *
 * Three implementations compute the same values, chosen by what a call costs at a cold start:
 * - a table-driven JavaScript loop (slicing by 4) for a few bytes, and on hosts without the others; it runs
 *   interpreted at first (about 10 MB/s cold), so it is no choice for kilobytes at a cold start;
 * - a tiny WebAssembly module (about 300 bytes, slicing by 8, compiled by the baseline compiler in well under a
 *   millisecond, about 1 GB/s from its first call): what a cold start's checks of its header, its small eager
 *   sections and the blocks its first turn reads use; its bytes are a constant, so a cold start runs no
 *   JavaScript to assemble them;
 * - zlib's native CRC-32 in Node (`zlib.crc32`, Node >= 20.15, several GB/s) for large inputs (from
 *   {@link BULK_BYTES}: writing an artifact, a million entries' sections). Looking zlib up loads Node's stream
 *   modules (about 7 ms of a 10k-entry cold start), so it is looked up only when a large input comes, at run time
 *   (the root export imports no `node:` module), and used for every input after that.
 */
import { nodeBuiltin } from "./runtime.js";
import {
  bytesFromHex,
  codeSection,
  MODULE_PREAMBLE,
  moduleName,
  moduleSection,
  signedLeb128,
  unsignedLeb128,
} from "./webAssemblyBytes.js";

type Crc32 = (data: Uint8Array, value?: number) => number;

/** The reflected CRC-32 polynomial. */
const POLYNOMIAL = 0xedb88320;

let tables: Int32Array[] | null = null;

/** Eight 256-entry tables: table 0 is the classic byte table, table k advances k more zero bytes. */
function crcTables(): Int32Array[] {
  if (tables) return tables;
  const made = [0, 1, 2, 3, 4, 5, 6, 7].map(() => new Int32Array(256));
  for (let byte = 0; byte < 256; byte++) {
    let value = byte;
    for (let bit = 0; bit < 8; bit++) value = value & 1 ? (value >>> 1) ^ POLYNOMIAL : value >>> 1;
    made[0]![byte] = value;
  }
  for (let byte = 0; byte < 256; byte++)
    for (let table = 1; table < 8; table++) {
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

/** The kernel's tables in its memory: table k (1 KiB) at k KiB. */
const KERNEL_TABLES = 8;
/** Where the module's memory holds the bytes to check, after the tables. */
const DATA_OFFSET = KERNEL_TABLES * 1024;
/** Bytes checked per call into the module (its memory is two 64 KiB pages: the tables, then one chunk). */
const CHUNK_BYTES = 65536;

/** The WebAssembly instructions the kernel uses (binary opcodes). */
const OP = {
  block: 0x02,
  loop: 0x03,
  end: 0x0b,
  if: 0x04,
  br: 0x0c,
  brIf: 0x0d,
  return: 0x0f,
  localGet: 0x20,
  localSet: 0x21,
  i32Load: 0x28,
  i32Load8U: 0x2d,
  f64Load: 0x2b,
  i32Const: 0x41,
  f64Const: 0x44,
  i32Eqz: 0x45,
  i32GeU: 0x4f,
  i32Add: 0x6a,
  i32And: 0x71,
  i32Xor: 0x73,
  i32Shl: 0x74,
  i32ShrU: 0x76,
  f64Ge: 0x66,
  f64Max: 0xa5,
  voidBlock: 0x40,
  i32: 0x7f,
  f64: 0x7c,
} as const;

/** The kernel's locals: its parameters `crc` and `length`, then `position`, `end` and `word`. */
const CRC = 0;
const LENGTH = 1;
const POSITION = 2;
const END = 3;
const WORD = 4;

const get = (local: number) => [OP.localGet, local];
const set = (local: number) => [OP.localSet, local];
const constant = (value: number) => [OP.i32Const, ...signedLeb128(value)];
/** `i32.load` of the word at the address on the stack plus `offset` (4-byte aligned). */
const loadWord = (offset: number) => [OP.i32Load, 2, ...unsignedLeb128(offset)];
/** The byte offset of entry `(local >>> shift) & 0xff`, then that entry of table `table` loaded. */
const tableEntry = (local: number, shift: number, table: number) => [
  ...get(local),
  ...(shift > 0 ? [...constant(shift), OP.i32ShrU] : []),
  ...(shift < 24 ? [...constant(0xff), OP.i32And] : []),
  ...constant(2),
  OP.i32Shl,
  ...loadWord(table * 1024),
];
/** `while (position < end) { body; position += step }` */
const whileBelowEnd = (step: number, body: number[]) => [
  OP.block,
  OP.voidBlock,
  OP.loop,
  OP.voidBlock,
  ...get(POSITION),
  ...get(END),
  OP.i32GeU,
  OP.brIf,
  1,
  ...body,
  ...get(POSITION),
  ...constant(step),
  OP.i32Add,
  ...set(POSITION),
  OP.br,
  0,
  OP.end,
  OP.end,
];

/** `f64.const` of `value` (its eight bytes, little-endian). */
const float = (value: number) => [OP.f64Const, ...new Uint8Array(Float64Array.of(value).buffer)];

/**
 * The module, in the WebAssembly binary format: one memory of two pages and three functions of the data at
 * {@link DATA_OFFSET}. `update(crc, length)` folds `length` bytes into the running (inverted) `crc`, eight bytes at
 * a time (slicing by 8: two words, eight independent table lookups), then byte by byte, and returns the new
 * running value. `below(count, length)` returns 1 when each of the `length / 4` words is below `count` (unsigned),
 * else 0: the artifact's checks that lists name existing entries, which a cold start otherwise runs as cold
 * JavaScript (see {@link allBelowWebAssembly}). `largest(bound, length)` returns the largest of `bound` and the
 * `length / 8` doubles, or Infinity at the first that is negative or not a number: a posting list's upper bound
 * (see {@link largestWebAssembly}). Built here from named opcodes; a process uses
 * {@link KERNEL_MODULE_HEX}, the same bytes (checked by `checksum.test.ts`), because building them runs cold
 * JavaScript at a cold start (about 1 ms). @internal
 */
export function kernelModuleBytes(): Uint8Array {
  const body = [
    // Three more i32 locals: position, end, word.
    1,
    3,
    OP.i32,
    ...constant(DATA_OFFSET),
    ...set(POSITION),
    // end = position + (length & ~7)
    ...get(POSITION),
    ...get(LENGTH),
    ...constant(-8),
    OP.i32And,
    OP.i32Add,
    ...set(END),
    // crc ^= first word; word = second word;
    // crc = T7[crc & 0xff] ^ T6[(crc >>> 8) & 0xff] ^ T5[(crc >>> 16) & 0xff] ^ T4[crc >>> 24]
    //     ^ T3[word & 0xff] ^ T2[(word >>> 8) & 0xff] ^ T1[(word >>> 16) & 0xff] ^ T0[word >>> 24]
    ...whileBelowEnd(8, [
      ...get(CRC),
      ...get(POSITION),
      ...loadWord(0),
      OP.i32Xor,
      ...set(CRC),
      ...get(POSITION),
      ...loadWord(4),
      ...set(WORD),
      ...tableEntry(CRC, 0, 7),
      ...tableEntry(CRC, 8, 6),
      OP.i32Xor,
      ...tableEntry(CRC, 16, 5),
      OP.i32Xor,
      ...tableEntry(CRC, 24, 4),
      OP.i32Xor,
      ...tableEntry(WORD, 0, 3),
      OP.i32Xor,
      ...tableEntry(WORD, 8, 2),
      OP.i32Xor,
      ...tableEntry(WORD, 16, 1),
      OP.i32Xor,
      ...tableEntry(WORD, 24, 0),
      OP.i32Xor,
      ...set(CRC),
    ]),
    // The last bytes: end = DATA_OFFSET + length; crc = (crc >>> 8) ^ T0[(crc ^ byte) & 0xff]
    ...constant(DATA_OFFSET),
    ...get(LENGTH),
    OP.i32Add,
    ...set(END),
    ...whileBelowEnd(1, [
      ...get(CRC),
      ...constant(8),
      OP.i32ShrU,
      ...get(CRC),
      ...get(POSITION),
      OP.i32Load8U,
      0,
      0,
      OP.i32Xor,
      ...set(CRC),
      ...tableEntry(CRC, 0, 0),
      OP.i32Xor,
      ...set(CRC),
    ]),
    ...get(CRC),
    OP.end,
  ];
  // below(count, length): locals count (0), length (1), then position (2) and end (3).
  const belowBody = [
    1,
    2,
    OP.i32,
    ...constant(DATA_OFFSET),
    ...set(POSITION),
    ...constant(DATA_OFFSET),
    ...get(LENGTH),
    OP.i32Add,
    ...set(END),
    // while (position < end) { if (word(position) >= count) return 0; position += 4 }
    ...whileBelowEnd(4, [
      ...get(POSITION),
      ...loadWord(0),
      ...get(0),
      OP.i32GeU,
      OP.if,
      OP.voidBlock,
      ...constant(0),
      OP.return,
      OP.end,
    ]),
    ...constant(1),
    OP.end,
  ];
  // largest(bound, length): locals bound (0, f64), length (1), then position (2), end (3) and value (4, f64).
  const VALUE = 4;
  const largestBody = [
    2,
    2,
    OP.i32,
    1,
    OP.f64,
    ...constant(DATA_OFFSET),
    ...set(POSITION),
    ...constant(DATA_OFFSET),
    ...get(LENGTH),
    OP.i32Add,
    ...set(END),
    // while (position < end) { value = f64(position); if (!(value >= 0)) return Infinity; bound = max(bound, value) }
    ...whileBelowEnd(8, [
      ...get(POSITION),
      OP.f64Load,
      3,
      0,
      ...set(VALUE),
      ...get(VALUE),
      ...float(0),
      OP.f64Ge,
      OP.i32Eqz,
      OP.if,
      OP.voidBlock,
      ...float(Number.POSITIVE_INFINITY),
      OP.return,
      OP.end,
      ...get(0),
      ...get(VALUE),
      OP.f64Max,
      ...set(0),
    ]),
    ...get(0),
    OP.end,
  ];
  // Magic and version; then the types (i32, i32) -> i32 and (f64, i32) -> f64, three functions (two of the first),
  // one memory of two pages, the exports and the code.
  return Uint8Array.from([
    ...MODULE_PREAMBLE,
    ...moduleSection(1, [2, 0x60, 2, OP.i32, OP.i32, 1, OP.i32, 0x60, 2, OP.f64, OP.i32, 1, OP.f64]),
    ...moduleSection(3, [3, 0, 0, 1]),
    ...moduleSection(5, [1, 0, 2]),
    ...moduleSection(7, [
      4,
      ...moduleName("memory"),
      2,
      0,
      ...moduleName("update"),
      0,
      0,
      ...moduleName("below"),
      0,
      1,
      ...moduleName("largest"),
      0,
      2,
    ]),
    ...codeSection(body, belowBody, largestBody),
  ]);
}

/** {@link kernelModuleBytes}, in hexadecimal (what a process compiles). @internal */
export const KERNEL_MODULE_HEX =
  "0061736d01000000010d0260027f7f017f60027c7f017c0304030000010503010002072504066d656d6f727902000675706461746500000562656c6f770001076c61726765737400020a870303f40101037f4180c0002102200220014178716a210302400340200220034f0d012000200228020073210020022802042104200041ff017141027428028038200041087641ff01714102742802803073200041107641ff0171410274280280287320004118764102742802802073200441ff01714102742802801873200441087641ff01714102742802801073200441107641ff017141027428028008732004411876410274280200732100200241086a21020c000b0b4180c00020016a210302400340200220034f0d012000410876200020022d0000732100200041ff0171410274280200732100200241016a21020c000b0b20000b3901027f4180c00021024180c00020016a210302400340200220034f0d01200228020020004f044041000f0b200241046a21020c000b0b41010b5502027f017c4180c00021024180c00020016a210302400340200220034f0d0120022b0300210420044400000000000000006645044044000000000000f07f0f0b20002004a52100200241086a21020c000b0b20000b";

/** The bytes of {@link KERNEL_MODULE_HEX}. */
function kernelModule(): Uint8Array {
  return bytesFromHex(KERNEL_MODULE_HEX);
}

type KernelFunction = (first: number, length: number) => number;

type WebAssemblyHost = {
  WebAssembly?: {
    Module: new (bytes: Uint8Array) => unknown;
    Instance: new (
      module: unknown,
    ) => {
      exports: {
        memory: { buffer: ArrayBuffer };
        update: KernelFunction;
        below: KernelFunction;
        largest: KernelFunction;
      };
    };
  };
};

/** The kernel's two functions over JavaScript arrays (see {@link kernelModuleBytes}). */
type Kernel = {
  crc32: (bytes: Uint8Array) => number;
  allBelow: (values: Int32Array, from: number, to: number, count: number) => boolean;
  largest: (values: Float64Array, from: number, to: number) => number;
};

/** The WebAssembly kernel, compiled on first use; null where WebAssembly is missing or refused (a policy). */
let kernel: Kernel | null | undefined;

function webAssemblyKernel(): Kernel | null {
  if (kernel !== undefined) return kernel;
  kernel = null;
  const host = (globalThis as WebAssemblyHost).WebAssembly;
  if (!host) return null;
  try {
    const { memory, update, below, largest } = new host.Instance(new host.Module(kernelModule())).exports;
    const heap = new Uint8Array(memory.buffer);
    const moduleTables = new Int32Array(memory.buffer, 0, KERNEL_TABLES * 256);
    crcTables().forEach((table, index) => {
      moduleTables.set(table, index * 256);
    });
    kernel = {
      crc32(bytes) {
        let crc = -1;
        for (let offset = 0; offset < bytes.byteLength; offset += CHUNK_BYTES) {
          const length = Math.min(CHUNK_BYTES, bytes.byteLength - offset);
          heap.set(bytes.subarray(offset, offset + length), DATA_OFFSET);
          crc = update(crc, length);
        }
        return ~crc >>> 0;
      },
      allBelow(values, from, to, count) {
        // Whole words per chunk: CHUNK_BYTES is a multiple of 4.
        const bytes = new Uint8Array(values.buffer, values.byteOffset + from * 4, (to - from) * 4);
        for (let offset = 0; offset < bytes.byteLength; offset += CHUNK_BYTES) {
          const length = Math.min(CHUNK_BYTES, bytes.byteLength - offset);
          heap.set(bytes.subarray(offset, offset + length), DATA_OFFSET);
          if (below(count, length) === 0) return false;
        }
        return true;
      },
      largest(values, from, to) {
        const bytes = new Uint8Array(values.buffer, values.byteOffset + from * 8, (to - from) * 8);
        let bound = 0;
        for (let offset = 0; offset < bytes.byteLength; offset += CHUNK_BYTES) {
          const length = Math.min(CHUNK_BYTES, bytes.byteLength - offset);
          heap.set(bytes.subarray(offset, offset + length), DATA_OFFSET);
          bound = largest(bound, length);
          if (bound === Number.POSITIVE_INFINITY) break;
        }
        return bound;
      },
    };
  } catch {
    // A host that forbids compiling WebAssembly (a content security policy, `--jitless`): the other two remain.
  }
  return kernel;
}

/** The WebAssembly CRC-32 of `bytes`, or null where WebAssembly is unavailable (for tests). @internal */
export function crc32WebAssembly(bytes: Uint8Array): number | null {
  const compute = webAssemblyKernel();
  return compute ? compute.crc32(bytes) : null;
}

/**
 * Whether every value of `values[from..to)` is below `count` (unsigned comparison: a negative value is not), by the
 * WebAssembly kernel; null where WebAssembly is unavailable. The same answer as a JavaScript loop, without running
 * one cold: a 10k cold start's load checks 13,448 scope-list values, and its first turn 42,369 posting documents,
 * which a loop runs interpreted until V8 compiles it. @internal
 */
export function allBelowWebAssembly(
  values: Int32Array,
  from: number,
  to: number,
  count: number,
): boolean | null {
  const compute = webAssemblyKernel();
  return compute ? compute.allBelow(values, from, to, count) : null;
}

/**
 * The largest of 0 and `values[from..to)`, or Infinity when one is negative or not a number (as `listUpperBound`
 * answers), by the WebAssembly kernel; null where WebAssembly is unavailable. A 10k cold start's first turn takes
 * the bound of its lists' 17,777 contributions, which a loop runs interpreted, allocating a heap number per
 * contribution (60-290 KB of that turn's 1.5-1.7 MB). @internal
 */
export function largestWebAssembly(values: Float64Array, from: number, to: number): number | null {
  const compute = webAssemblyKernel();
  return compute ? compute.largest(values, from, to) : null;
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
  const compute = webAssemblyKernel();
  if (compute) return compute.crc32(bytes);
  const crc32 = nativeCrc32();
  return crc32 ? crc32(bytes) >>> 0 : crc32Portable(bytes);
}
