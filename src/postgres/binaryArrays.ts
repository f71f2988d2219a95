/**
 * Values of a binary COPY (`copyOut.ts`): integers and text, and arrays in PostgreSQL's binary array format
 * (`array_send(column)`, what a turn reads of generations without packed posting lists: their `docs int4[]` and
 * `contributions float8[]`), so no number is formatted or parsed as text.
 */

import { hasErrorMarker } from "../knowledge/errors.js";

/** Element type ids of the binary array format. */
const INT4_OID = 23;
const FLOAT8_OID = 701;

const BINARY_ARRAY_ERROR_MARKER = Symbol.for("lexground.BinaryArrayError");

/** Raised when fetched bytes are not the array they should be (never a silently wrong posting). */
export class BinaryArrayError extends Error {
  override readonly name = "BinaryArrayError";
  /** Stable machine-readable code. */
  readonly code = "INVALID_BINARY_ARRAY";
  readonly [BINARY_ARRAY_ERROR_MARKER] = true;

  /** True for a `BinaryArrayError` from any copy of the package. */
  static isInstance(error: unknown): error is BinaryArrayError {
    return hasErrorMarker(error, BINARY_ARRAY_ERROR_MARKER);
  }
}

/**
 * The values of a one-dimensional `int4[]` (an `Int32Array`) or `float8[]` (a `Float64Array`) without nulls, from
 * the binary array format: dimensions, has-nulls flag, element type, then per dimension its length and lower
 * bound, then per element its byte length and its big-endian value.
 */
export function decodeBinaryArray(bytes: Uint8Array): Int32Array | Float64Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.byteLength < 12) throw new BinaryArrayError("binary array: truncated header");
  const dimensions = view.getInt32(0);
  const elementType = view.getInt32(8);
  const width = elementType === INT4_OID ? 4 : elementType === FLOAT8_OID ? 8 : 0;
  if (width === 0) throw new BinaryArrayError(`binary array: unexpected element type ${elementType}`);
  if (dimensions === 0) return width === 4 ? new Int32Array(0) : new Float64Array(0);
  if (dimensions !== 1 || bytes.byteLength < 20)
    throw new BinaryArrayError(`binary array: ${dimensions} dimensions, expected 1`);
  const count = view.getInt32(12);
  if (count < 0 || bytes.byteLength !== 20 + count * (4 + width))
    throw new BinaryArrayError("binary array: its length does not match its element count");
  if (width === 4) {
    const values = new Int32Array(count);
    for (let index = 0, offset = 20; index < count; index++, offset += 8) {
      if (view.getInt32(offset) !== 4) throw new BinaryArrayError("binary array: null or malformed element");
      values[index] = view.getInt32(offset + 4);
    }
    return values;
  }
  const values = new Float64Array(count);
  for (let index = 0, offset = 20; index < count; index++, offset += 12) {
    if (view.getInt32(offset) !== 8) throw new BinaryArrayError("binary array: null or malformed element");
    values[index] = view.getFloat64(offset + 4);
  }
  return values;
}

/** The big-endian `int4` of a binary COPY field. */
export function int4Of(bytes: Uint8Array): number {
  if (bytes.byteLength !== 4) throw new BinaryArrayError("binary COPY: an int4 field is not 4 bytes");
  return new DataView(bytes.buffer, bytes.byteOffset, 4).getInt32(0);
}

/** A binary COPY field that must not be NULL: its bytes, else a `BinaryArrayError` with `message`. */
export function presentField(field: Uint8Array | null | undefined, message: string): Uint8Array {
  if (!field) throw new BinaryArrayError(message);
  return field;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The text of a binary COPY field (UTF-8). */
export function textOf(bytes: Uint8Array): string {
  return utf8.decode(bytes);
}

/** Whether typed arrays are little-endian here (then packed values are copied as they are). */
const LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

/** The values of packed little-endian int32 bytes (a copy: the bytes may be a view of a reused buffer). */
export function packedInt32s(bytes: Uint8Array): Int32Array {
  if (bytes.byteLength % 4 !== 0)
    throw new BinaryArrayError("packed int32 values: length not a multiple of 4");
  const values = new Int32Array(bytes.byteLength / 4);
  if (LITTLE_ENDIAN) new Uint8Array(values.buffer).set(bytes);
  else {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let index = 0; index < values.length; index++) values[index] = view.getInt32(index * 4, true);
  }
  return values;
}

/** The values of packed little-endian float64 bytes (a copy). */
export function packedFloat64s(bytes: Uint8Array): Float64Array {
  if (bytes.byteLength % 8 !== 0)
    throw new BinaryArrayError("packed float64 values: length not a multiple of 8");
  const values = new Float64Array(bytes.byteLength / 8);
  if (LITTLE_ENDIAN) new Uint8Array(values.buffer).set(bytes);
  else {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let index = 0; index < values.length; index++) values[index] = view.getFloat64(index * 8, true);
  }
  return values;
}
