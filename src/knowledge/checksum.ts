/**
 * The 32-bit checksum of index artifacts: CRC-32 (IEEE 802.3, the checksum of zlib, gzip and PNG). It detects
 * accidental corruption (a flipped byte, a truncated or partly overwritten file; every burst of up to 32 bits),
 * not tampering: whoever can change the file can recompute it, so a cryptographic hash would add cost without
 * adding protection.
 *
 * In Node it is zlib's native CRC-32 (`zlib.crc32`, Node >= 20.15; several gigabytes per second, which keeps a cold
 * start's checks to about a millisecond), looked up at run time so the root export imports no `node:` module;
 * elsewhere a table-driven implementation (slicing by 4) computes the same values.
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

/** zlib's CRC-32 when the host is Node with it (looked up once, on first use), otherwise null. */
let native: Crc32 | null | undefined;

function nativeCrc32(): Crc32 | null {
  if (native === undefined) {
    const crc32 = nodeBuiltin<{ crc32?: unknown }>("node:zlib")?.crc32;
    native = typeof crc32 === "function" ? (crc32 as Crc32) : null;
  }
  return native;
}

/** Below this length the JavaScript loop is as fast as a call into zlib (and needs no zlib at all). */
const NATIVE_MIN_BYTES = 64;

/** The CRC-32 of `bytes` (an unsigned 32-bit integer); equal bytes give equal checksums on every host. */
export function checksum32(bytes: Uint8Array): number {
  if (bytes.byteLength >= NATIVE_MIN_BYTES) {
    const crc32 = nativeCrc32();
    if (crc32) return crc32(bytes) >>> 0;
  }
  return crc32Portable(bytes);
}
