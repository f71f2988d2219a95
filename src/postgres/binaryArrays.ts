/**
 * Arrays fetched as PostgreSQL's binary array format (`array_send(column)`, sent as a `bytea`): a turn reads its
 * terms' `docs int4[]` and `contributions float8[]` this way, so no number is formatted or parsed as text (a
 * `float8[]` in text is a decimal per element; a `bytea` is hex, decoded natively).
 *
 * `pg`'s own binary result mode cannot be used: its protocol parser decodes every field as UTF-8 text, which
 * corrupts bytes that are not valid UTF-8 (pg 8.23, pg-protocol 1.16).
 */

/** Element type ids of the binary array format. */
const INT4_OID = 23;
const FLOAT8_OID = 701;
/** The `bytea` type id (what `array_send` returns). */
const BYTEA_OID = 17;

/** Raised when fetched bytes are not the array they should be (never a silently wrong posting). */
export class BinaryArrayError extends Error {
  override readonly name = "BinaryArrayError";
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

/** A `bytea` in PostgreSQL's text output (`\x` then hex digits) holding a binary array, decoded. */
function parseArrayBytea(text: string): Int32Array | Float64Array {
  if (!text.startsWith("\\x")) throw new BinaryArrayError("binary array: bytea is not in hex output format");
  return decodeBinaryArray(Buffer.from(text.substring(2), "hex"));
}

/** Keeps a column's text as it came (the caller converts it). */
function keepText(text: string): string {
  return text;
}

/**
 * Type parsers for a statement whose `bytea` columns hold `array_send` arrays (the query config's `types`): those
 * become typed arrays as each row arrives (so a turn never holds both the hex text and the bytes of every list),
 * every other column stays text.
 */
export const ARRAY_BYTEA_TYPES = {
  getTypeParser(oid: number): (text: string) => unknown {
    return oid === BYTEA_OID ? parseArrayBytea : keepText;
  },
};
