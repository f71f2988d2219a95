/**
 * Posting lists as a publication stores them for turns (`coded_list`, one `bytea` per term and field) and a turn
 * receives them: the documents as gaps in a variable-length code, and the contributions coded as the reader's
 * cache codes them (`codedLists.ts`: each distinct value once, each posting a one- or two-byte code), so a turn
 * decodes a list straight into its cached form. About 3 bytes per posting where the packed lists they replace
 * took 12 (4-byte documents, 8-byte contributions): less to send, to hold while ranking, and to code afterwards.
 *
 * Layout: a kind byte (0: contributions as they are, 1: one-byte codes, 2: two-byte codes), the posting count
 * (unsigned LEB128), for kinds 1 and 2 the count of distinct values (LEB128) and those values, else every
 * contribution (little-endian float64s), then the codes (little-endian for two bytes), then each document's gap
 * from the previous one (the first from -1: every gap at least 1), in LEB128. The values are copied bit for bit
 * (-0, NaN payloads), so every score is unchanged.
 */
import { BinaryArrayError, packedFloat64s } from "./binaryArrays.js";
import { codeWidth, contributionCodes } from "./codedLists.js";
import { type FetchedList, listUpperBound } from "./postingCache.js";

/** List kinds: contributions as they are, or coded in one or two bytes. */
const PLAIN = 0;
const BYTE_CODES = 1;
const SHORT_CODES = 2;

/** Whether typed arrays are little-endian here (then values are copied as they are). */
const LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

/** Scratch space of the encoder (one list at a time), grown as needed. */
let scratch = new Uint8Array(1 << 16);
let scratchCodes = new Uint16Array(1 << 14);

/** Writes `value` (0 to 2^32 - 1) in LEB128 at `offset`; returns the offset after it. */
export function writeVarint(target: Uint8Array, offset: number, value: number): number {
  let rest = value;
  while (rest > 0x7f) {
    target[offset++] = (rest & 0x7f) | 0x80;
    rest = Math.floor(rest / 128);
  }
  target[offset++] = rest;
  return offset;
}

/** Copies float64 values into `target` at `offset`, little-endian; returns the offset after them. */
function writeFloat64s(target: Uint8Array, offset: number, values: Float64Array): number {
  if (LITTLE_ENDIAN) target.set(new Uint8Array(values.buffer, values.byteOffset, values.byteLength), offset);
  else {
    const view = new DataView(target.buffer, target.byteOffset, target.byteLength);
    for (let index = 0; index < values.length; index++)
      view.setFloat64(offset + index * 8, values[index]!, true);
  }
  return offset + values.byteLength;
}

/**
 * The list of `docs` (ascending, non-negative) and `contributions` in the wire form: a view of scratch space,
 * valid until the next call (copy it or write it out before).
 */
export function encodeWireList(docs: ArrayLike<number>, contributions: Float64Array): Uint8Array {
  return encodeWireListParts(docs, contributions).bytes;
}

/** A list in the wire form with what a publication also needs of it (see {@link encodeWireListParts}). */
export type WireListParts = {
  /** The whole list (a view of scratch space, valid until the next call). */
  bytes: Uint8Array;
  /** Bytes from the start up to the codes: the kind, the counts and the distinct values (its header). */
  headerBytes: number;
  /** Each posting's code (a view of scratch space, valid until the next call), null for kind 0 (no codes). */
  codes: Uint16Array | null;
};

/**
 * {@link encodeWireList} with the header's length and the codes: a publication stores the header's length (a turn
 * may read only the header of a frequent list, see `frequentLists.ts`) and each posting's code per entry.
 */
export function encodeWireListParts(docs: ArrayLike<number>, contributions: Float64Array): WireListParts {
  const count = docs.length;
  if (contributions.length !== count)
    throw new RangeError("wire list: docs and contributions differ in length");
  // Kind, two counts, values (at most 8 per posting), codes (at most 2), gaps (at most 5).
  const most = 11 + count * 15;
  if (scratch.length < most) scratch = new Uint8Array(Math.max(most, scratch.length * 2));
  if (scratchCodes.length < count) scratchCodes = new Uint16Array(Math.max(count, scratchCodes.length * 2));
  const target = scratch;
  const values = contributionCodes(contributions, scratchCodes);
  let offset: number;
  let headerBytes: number;
  if (values === null) {
    target[0] = PLAIN;
    offset = writeVarint(target, 1, count);
    offset = writeFloat64s(target, offset, contributions);
    headerBytes = offset;
  } else {
    const width = codeWidth(values.length);
    target[0] = width === 1 ? BYTE_CODES : SHORT_CODES;
    offset = writeVarint(target, 1, count);
    offset = writeVarint(target, offset, values.length);
    offset = writeFloat64s(target, offset, values);
    headerBytes = offset;
    const codes = scratchCodes;
    if (width === 1) for (let position = 0; position < count; position++) target[offset++] = codes[position]!;
    else
      for (let position = 0; position < count; position++) {
        const code = codes[position]!;
        target[offset++] = code & 0xff;
        target[offset++] = code >>> 8;
      }
  }
  let previous = -1;
  for (let position = 0; position < count; position++) {
    const doc = docs[position]!;
    if (!(doc > previous) || doc > 0x7fff_ffff)
      throw new RangeError("wire list: documents are not ascending");
    offset = writeVarint(target, offset, doc - previous);
    previous = doc;
  }
  return {
    bytes: target.subarray(0, offset),
    headerBytes,
    codes: values === null ? null : scratchCodes.subarray(0, count),
  };
}

/** A reading position in a wire list. */
type Cursor = { bytes: Uint8Array; offset: number };

/** The LEB128 value at the cursor (at most 2^32 - 1), the cursor moved past it. */
function readVarint(cursor: Cursor): number {
  const bytes = cursor.bytes;
  let value = 0;
  let scale = 1;
  for (let length = 0; length < 5; length++) {
    if (cursor.offset >= bytes.length) break;
    const byte = bytes[cursor.offset++]!;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return value;
    scale *= 128;
  }
  throw new BinaryArrayError("wire list: a truncated or overlong count");
}

/**
 * The list of a wire form, as the reader ranks and caches it (coded, or as fetched for kind 0): checked, so that
 * malformed bytes raise a `BinaryArrayError` and never yield a wrong posting (documents ascending and below
 * `entryCount`, every code naming a value, every byte read).
 */
export function decodeWireList(bytes: Uint8Array, entryCount: number): FetchedList {
  const cursor: Cursor = { bytes, offset: 1 };
  const kind = bytes[0];
  const count = readVarint(cursor);
  if (count === 0 || count > bytes.length) throw new BinaryArrayError("wire list: a bad posting count");
  let contributions: Float64Array;
  let codes: Uint8Array | Uint16Array | undefined;
  if (kind === PLAIN) {
    contributions = packedFloat64s(slice(cursor, count * 8));
  } else if (kind === BYTE_CODES || kind === SHORT_CODES) {
    const distinct = readVarint(cursor);
    if (distinct === 0 || distinct > (kind === BYTE_CODES ? 256 : 65_536) || distinct > count)
      throw new BinaryArrayError("wire list: a bad count of distinct contributions");
    contributions = packedFloat64s(slice(cursor, distinct * 8));
    codes =
      kind === BYTE_CODES
        ? byteCodes(slice(cursor, count), distinct)
        : shortCodes(slice(cursor, count * 2), distinct);
  } else throw new BinaryArrayError(`wire list: unknown kind ${kind}`);
  const docs = new Int32Array(count);
  const end = readGaps(bytes, cursor.offset, docs);
  if (end !== bytes.length) throw new BinaryArrayError("wire list: its length does not match its postings");
  if (docs[count - 1]! >= entryCount) throw new BinaryArrayError("postings: a posting names a missing entry");
  return { docs, contributions, codes, upper: listUpperBound(contributions) };
}

/**
 * Adds each posting's contribution of a wire list to its entry's total (`totals[doc] += contribution`, `totals`
 * one per entry), in one pass, without making the list's arrays; returns its posting count. What a deferring turn
 * does with the frequent lists it reads whole (`deferredLists.ts`): it needs their sums, and takes the candidates'
 * postings in them from the candidates' rows. Checked as {@link decodeWireList} checks (a `BinaryArrayError`,
 * never a wrong sum that is not reported): when it throws, `totals` may hold part of the list.
 */
export function addWireList(bytes: Uint8Array, totals: Float64Array): number {
  return addWireLists([bytes], totals, totals.length + 1)[0]!;
}

/**
 * {@link addWireList} for several lists, block of `block` entries by block (each list adds its postings of the
 * block, in the order given, then the next block): a history-heavy turn's frequent lists at a million entries hold
 * about 5 M postings spread over the 8 MB of totals, which list by list are fetched from memory once per list,
 * and by blocks once. Every entry's total receives the same additions in the same order (list by list) either way,
 * so the sums are the same bit for bit. Returns each list's posting count; checked as {@link addWireList}.
 */
export function addWireLists(lists: readonly Uint8Array[], totals: Float64Array, block: number): number[] {
  const cursors = lists.map(openWireSum);
  const step = Math.max(1, Math.floor(block));
  for (let end = step; end - step < totals.length; end += step)
    for (const cursor of cursors) addWireUpTo(cursor, totals, end);
  return cursors.map((cursor) => {
    if (cursor.position !== cursor.count || cursor.offset !== cursor.bytes.length)
      throw new BinaryArrayError("wire list: its length does not match its postings");
    return cursor.count;
  });
}

/** A wire list being summed: its parts and how far it has been read (see {@link addWireLists}). */
type WireSum = {
  bytes: Uint8Array;
  values: Float64Array;
  /** Where the codes start (kinds 1 and 2), and bytes per code (0: kind 0, each posting its own value). */
  codesAt: number;
  width: 0 | 1 | 2;
  count: number;
  /** The next gap's offset, the next posting's position, the last document added. */
  offset: number;
  position: number;
  doc: number;
};

/** A wire list's header read (checked), ready to be summed from its first posting. */
function openWireSum(bytes: Uint8Array): WireSum {
  const cursor: Cursor = { bytes, offset: 1 };
  const kind = bytes[0];
  const count = readVarint(cursor);
  if (count === 0 || count > bytes.length) throw new BinaryArrayError("wire list: a bad posting count");
  let values: Float64Array;
  let width: 0 | 1 | 2 = 0;
  let codesAt = 0;
  if (kind === PLAIN) values = packedFloat64s(slice(cursor, count * 8));
  else if (kind === BYTE_CODES || kind === SHORT_CODES) {
    const distinct = readVarint(cursor);
    if (distinct === 0 || distinct > (kind === BYTE_CODES ? 256 : 65_536) || distinct > count)
      throw new BinaryArrayError("wire list: a bad count of distinct contributions");
    values = packedFloat64s(slice(cursor, distinct * 8));
    width = kind === BYTE_CODES ? 1 : 2;
    codesAt = cursor.offset;
    slice(cursor, count * width);
  } else throw new BinaryArrayError(`wire list: unknown kind ${kind}`);
  return { bytes, values, codesAt, width, count, offset: cursor.offset, position: 0, doc: -1 };
}

/** Adds `sum`'s postings of documents below `end` (its next ones), checked; `sum` moves past them. */
function addWireUpTo(sum: WireSum, totals: Float64Array, end: number): void {
  const { bytes, values, codesAt, width, count } = sum;
  const entryCount = totals.length;
  const length = bytes.length;
  let offset = sum.offset;
  let position = sum.position;
  let doc = sum.doc;
  while (position < count) {
    if (offset >= length) throw new BinaryArrayError("wire list: its length does not match its postings");
    let next = offset;
    let byte = bytes[next++]!;
    let gap = byte;
    if (byte > 0x7f) {
      gap = byte & 0x7f;
      let scale = 128;
      for (;;) {
        if (next >= length) throw new BinaryArrayError("wire list: its length does not match its postings");
        byte = bytes[next++]!;
        gap += (byte & 0x7f) * scale;
        if (byte < 0x80) break;
        scale *= 128;
        if (scale > 0x1000_0000) throw new BinaryArrayError("wire list: a document gap out of range");
      }
    }
    if (gap === 0) throw new BinaryArrayError("postings: documents are not ascending");
    // The block's end: this posting is read again with the next block.
    if (doc + gap >= end) break;
    doc += gap;
    offset = next;
    if (doc >= entryCount) throw new BinaryArrayError("postings: a posting names a missing entry");
    const code =
      width === 0
        ? position
        : width === 1
          ? bytes[codesAt + position]!
          : bytes[codesAt + position * 2]! | (bytes[codesAt + position * 2 + 1]! << 8);
    const value = values[code];
    if (value === undefined) throw new BinaryArrayError("wire list: a code names no value");
    totals[doc]! += value;
    position++;
  }
  sum.offset = offset;
  sum.position = position;
  sum.doc = doc;
}

/** A coded list's header (see {@link WireListParts.headerBytes}): what a turn reads of a deferred frequent list. */
export type WireListHeader = {
  /** The list's posting count. */
  count: number;
  /** Its distinct contributions (a copy), which its codes name. */
  values: Float64Array;
  /** Bytes per code. */
  width: 1 | 2;
  /** The largest contribution (`Infinity` when one is negative or not a number). */
  upper: number;
};

/**
 * The header of a coded list (kind 1 or 2), exactly `bytes` long: checked, so that malformed bytes raise a
 * `BinaryArrayError`.
 */
export function decodeWireHeader(bytes: Uint8Array): WireListHeader {
  const cursor: Cursor = { bytes, offset: 1 };
  const kind = bytes[0];
  if (kind !== BYTE_CODES && kind !== SHORT_CODES)
    throw new BinaryArrayError("wire list: not a coded list's header");
  const count = readVarint(cursor);
  const distinct = readVarint(cursor);
  if (count === 0 || distinct === 0 || distinct > count || distinct > (kind === BYTE_CODES ? 256 : 65_536))
    throw new BinaryArrayError("wire list: a bad count of distinct contributions");
  const values = packedFloat64s(slice(cursor, distinct * 8));
  if (cursor.offset !== bytes.length) throw new BinaryArrayError("wire list: a header of the wrong length");
  return { count, values, width: kind === BYTE_CODES ? 1 : 2, upper: listUpperBound(values) };
}

/** The next `length` bytes at the cursor (a view), the cursor moved past them. */
function slice(cursor: Cursor, length: number): Uint8Array {
  const start = cursor.offset;
  if (start + length > cursor.bytes.length) throw new BinaryArrayError("wire list: truncated");
  cursor.offset = start + length;
  return cursor.bytes.subarray(start, start + length);
}

/** One-byte codes (a copy), each checked to name one of `distinct` values. */
function byteCodes(bytes: Uint8Array, distinct: number): Uint8Array {
  const codes = new Uint8Array(bytes.length);
  codes.set(bytes);
  if (distinct < 256) {
    let most = 0;
    for (let position = 0; position < codes.length; position++) most |= codes[position]!;
    // `most` has every bit any code has: at or above `distinct` only if some code might be; check exactly then.
    if (most >= distinct)
      for (let position = 0; position < codes.length; position++)
        if (codes[position]! >= distinct) throw new BinaryArrayError("wire list: a code names no value");
  }
  return codes;
}

/** Two-byte little-endian codes (a copy), each checked to name one of `distinct` values. */
function shortCodes(bytes: Uint8Array, distinct: number): Uint16Array {
  const codes = new Uint16Array(bytes.length / 2);
  if (LITTLE_ENDIAN) new Uint8Array(codes.buffer).set(bytes);
  else
    for (let position = 0; position < codes.length; position++)
      codes[position] = bytes[position * 2]! | (bytes[position * 2 + 1]! << 8);
  if (distinct < 65_536)
    for (let position = 0; position < codes.length; position++)
      if (codes[position]! >= distinct) throw new BinaryArrayError("wire list: a code names no value");
  return codes;
}

/**
 * Decodes `docs.length` LEB128 gaps from `start` into ascending documents; returns the offset after the last, or
 * past the end of `bytes` when they are truncated (the caller checks the end).
 */
function readGaps(bytes: Uint8Array, start: number, docs: Int32Array): number {
  let offset = start;
  let doc = -1;
  const length = bytes.length;
  for (let position = 0; position < docs.length; position++) {
    if (offset >= length) return length + 1;
    let byte = bytes[offset++]!;
    let gap = byte;
    if (byte > 0x7f) {
      // Longer gaps (rarer terms' lists): the following bytes, seven bits each, at most five bytes in all.
      gap = byte & 0x7f;
      let scale = 128;
      for (;;) {
        if (offset >= length) return length + 1;
        byte = bytes[offset++]!;
        gap += (byte & 0x7f) * scale;
        if (byte < 0x80) break;
        scale *= 128;
        if (scale > 0x1000_0000) throw new BinaryArrayError("wire list: a document gap out of range");
      }
    }
    doc += gap;
    if (gap === 0 || doc > 0x7fff_ffff) throw new BinaryArrayError("postings: documents are not ascending");
    docs[position] = doc;
  }
  return offset;
}
