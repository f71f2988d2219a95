/**
 * Bulk loading with `COPY … FROM STDIN (FORMAT binary)`: rows are encoded straight into PostgreSQL's binary copy
 * format (no number is formatted or parsed as text) and streamed to the server in chunks, with backpressure, over
 * the `pg` driver's connection (a small "submittable" query object, the driver's extension point for COPY; no
 * further package is needed).
 */
import { endianness } from "node:os";
import type { PostgresPoolClient } from "./driver.js";

/** Element type ids of the binary array format. */
const INT4_OID = 23;
const FLOAT8_OID = 701;

/**
 * A client-side read timeout that never fires in practice (about 23 days, under Node's timer limit), for the
 * statements of a publication: loading and indexing a large generation may take long, and its session has no
 * statement timeout.
 */
export const NO_READ_TIMEOUT = 2_000_000_000;

/** Bytes sent to the server at a time. */
const CHUNK_BYTES = 1 << 20;

const SIGNATURE = Buffer.from("PGCOPY\n\xff\r\n\0", "latin1");

/**
 * Arrays are encoded a whole array at a time through aligned typed-array views (one native copy, and on a
 * little-endian host one native byte swap for the big-endian array format), not value by value through
 * `Buffer` write methods: at 100,000 entries a publication encodes about 36 million values, and per-value
 * writes were a third of its CPU time. A big-endian host takes the per-value path.
 */
const LITTLE_ENDIAN = endianness() === "LE";

/** Scratch words for array encoding, grown as needed (one publication encodes one array at a time). */
let scratchWords = new Int32Array(1 << 16);
let scratchDoubles = new Float64Array(1 << 14);

function words(count: number): Int32Array {
  if (scratchWords.length < count) scratchWords = new Int32Array(Math.max(count, scratchWords.length * 2));
  return scratchWords;
}

/** The values as a `Float64Array` (itself, or copied into scratch). */
function doubles(values: ArrayLike<number>): Float64Array {
  if (values instanceof Float64Array) return values;
  if (scratchDoubles.length < values.length)
    scratchDoubles = new Float64Array(Math.max(values.length, scratchDoubles.length * 2));
  const copy = scratchDoubles.subarray(0, values.length);
  for (let index = 0; index < values.length; index++) copy[index] = values[index]!;
  return copy;
}

/** The values as an `Int32Array` (itself, or copied into scratch words). */
function int32s(values: ArrayLike<number>): Int32Array {
  if (values instanceof Int32Array) return values;
  const copy = words(values.length).subarray(0, values.length);
  for (let index = 0; index < values.length; index++) copy[index] = values[index]!;
  return copy;
}

/** The parts of the driver's connection a COPY uses (pg's `Connection`). */
type CopyConnection = {
  query(text: string): void;
  endCopyFrom(): void;
  sendCopyFail(message: string): void;
  stream: {
    writable?: boolean;
    /** Bytes written but not yet handed to the operating system. */
    writableLength?: number;
    write(chunk: Buffer, callback: (error?: Error | null) => void): boolean;
    once(event: "close", listener: () => void): unknown;
    off(event: "close", listener: () => void): unknown;
  };
};

/** Bytes every chunk starts with, for its protocol message header (`d`, then the length as int32). */
export const COPY_DATA_HEADER_BYTES = 5;

/**
 * Encodes rows in the binary copy format into one buffer, handing each full chunk to `flush`. Call
 * {@link CopyEncoder.row} with the field count, then one value method per field, in the table's column order.
 *
 * Each chunk starts with {@link COPY_DATA_HEADER_BYTES} bytes left for its CopyData message header, which `flush`
 * fills in before writing the chunk to the connection as it is (no copy); `flush` resolves once the chunk's bytes
 * are no longer needed. Two buffers for the whole load, in turn: the next chunk is encoded into one while the
 * other is still being written, so that the app encodes while the server reads (with one buffer they took turns:
 * a chunk larger than the socket's buffer was written while the encoder waited, and encoded while the server
 * waited). A fresh chunk buffer per megabyte (gigabytes per large publication) set off full collections of the
 * whole heap, the registry included, as external memory pressure.
 */
export class CopyEncoder {
  private buffer: Buffer = Buffer.allocUnsafe(CHUNK_BYTES * 2);
  /** The buffer being written (or written last), used again once its flush has resolved. */
  private spare: Buffer = Buffer.allocUnsafe(CHUNK_BYTES * 2);
  /** The flush of `spare`'s chunk while it runs. */
  private inFlight: Promise<void> | null = null;
  private offset = 0;

  constructor(private readonly flush: (chunk: Buffer) => Promise<void>) {
    this.offset = COPY_DATA_HEADER_BYTES;
    this.buffer.set(SIGNATURE, this.offset);
    this.offset += SIGNATURE.length;
    this.buffer.writeInt32BE(0, this.offset); // flags
    this.buffer.writeInt32BE(0, this.offset + 4); // header extension length
    this.offset += 8;
  }

  private reserve(bytes: number): void {
    if (this.offset + bytes <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.offset + bytes));
    this.buffer.copy(grown, 0, 0, this.offset);
    this.buffer = grown;
  }

  /** Starts a row of `fields` values; sends the buffered rows first when a chunk is full. */
  async row(fields: number): Promise<void> {
    if (this.offset >= CHUNK_BYTES) await this.send();
    this.reserve(2);
    this.buffer.writeInt16BE(fields, this.offset);
    this.offset += 2;
  }

  /** An SQL null. */
  null(): void {
    this.reserve(4);
    this.buffer.writeInt32BE(-1, this.offset);
    this.offset += 4;
  }

  int2(value: number): void {
    this.reserve(6);
    this.buffer.writeInt32BE(2, this.offset);
    this.buffer.writeInt16BE(value, this.offset + 4);
    this.offset += 6;
  }

  int4(value: number): void {
    this.reserve(8);
    this.buffer.writeInt32BE(4, this.offset);
    this.buffer.writeInt32BE(value, this.offset + 4);
    this.offset += 8;
  }

  float8(value: number): void {
    this.reserve(12);
    this.buffer.writeInt32BE(8, this.offset);
    this.buffer.writeDoubleBE(value, this.offset + 4);
    this.offset += 12;
  }

  /** A text value (UTF-8; the caller keeps NUL out, see `encodeKey`). */
  text(value: string): void {
    // Measured first: writing with the length known is faster than one pass into room for the longest encoding.
    const bytes = Buffer.byteLength(value, "utf8");
    this.reserve(4 + bytes);
    this.buffer.writeInt32BE(bytes, this.offset);
    this.buffer.write(value, this.offset + 4, bytes, "utf8");
    this.offset += 4 + bytes;
  }

  private array(count: number, oid: number, width: 4 | 8): void {
    this.reserve(24 + count * (4 + width));
    const buffer = this.buffer;
    const offset = this.offset;
    buffer.writeInt32BE(20 + count * (4 + width), offset);
    buffer.writeInt32BE(1, offset + 4); // dimensions
    buffer.writeInt32BE(0, offset + 8); // no nulls
    buffer.writeInt32BE(oid, offset + 12);
    buffer.writeInt32BE(count, offset + 16);
    buffer.writeInt32BE(1, offset + 20); // lower bound
    this.offset = offset + 24;
  }

  /** Copies `words` 32-bit words of scratch into the buffer, each swapped to big-endian. */
  private putSwapped(scratch: Int32Array, count: number): void {
    const bytes = Buffer.from(scratch.buffer, scratch.byteOffset, count * 4);
    bytes.swap32();
    this.buffer.set(bytes, this.offset);
    this.offset += count * 4;
  }

  /** Copies the bytes of a typed array into the buffer as they are (little-endian on this host). */
  private putRaw(values: Int32Array | Float64Array): void {
    this.buffer.set(new Uint8Array(values.buffer, values.byteOffset, values.byteLength), this.offset);
    this.offset += values.byteLength;
  }

  int4Array(values: ArrayLike<number>): void {
    const count = values.length;
    this.array(count, INT4_OID, 4);
    if (LITTLE_ENDIAN) {
      // Each element: its length (4) then its value, as two words swapped together.
      const scratch = words(count * 2);
      for (let index = 0; index < count; index++) {
        scratch[2 * index] = 4;
        scratch[2 * index + 1] = values[index]!;
      }
      this.putSwapped(scratch, count * 2);
      return;
    }
    const buffer = this.buffer;
    let offset = this.offset;
    for (let index = 0; index < count; index++) {
      buffer.writeInt32BE(4, offset);
      buffer.writeInt32BE(values[index]!, offset + 4);
      offset += 8;
    }
    this.offset = offset;
  }

  float8Array(values: ArrayLike<number>): void {
    const count = values.length;
    this.array(count, FLOAT8_OID, 8);
    if (LITTLE_ENDIAN) {
      // Each element: its length (8), then the double's high word and low word, each swapped to big-endian.
      const source = doubles(values);
      const halves = new Int32Array(source.buffer, source.byteOffset, count * 2);
      const scratch = words(count * 3);
      for (let index = 0; index < count; index++) {
        scratch[3 * index] = 8;
        scratch[3 * index + 1] = halves[2 * index + 1]!;
        scratch[3 * index + 2] = halves[2 * index]!;
      }
      this.putSwapped(scratch, count * 3);
      return;
    }
    const buffer = this.buffer;
    let offset = this.offset;
    for (let index = 0; index < count; index++) {
      buffer.writeInt32BE(8, offset);
      buffer.writeDoubleBE(values[index]!, offset + 4);
      offset += 12;
    }
    this.offset = offset;
  }

  /** A `bytea` of these bytes. */
  bytes(value: Uint8Array): void {
    this.reserve(4 + value.byteLength);
    this.buffer.writeInt32BE(value.byteLength, this.offset);
    this.buffer.set(value, this.offset + 4);
    this.offset += 4 + value.byteLength;
  }

  /** A `bytea` of little-endian int32 values (see `packedInt32s`). */
  int4Bytes(values: ArrayLike<number>): void {
    const count = values.length;
    this.reserve(4 + count * 4);
    this.buffer.writeInt32BE(count * 4, this.offset);
    this.offset += 4;
    if (LITTLE_ENDIAN) {
      this.putRaw(int32s(values));
      return;
    }
    let offset = this.offset;
    for (let index = 0; index < count; index++) {
      this.buffer.writeInt32LE(values[index]!, offset);
      offset += 4;
    }
    this.offset = offset;
  }

  /** A `bytea` of little-endian float64 values (see `packedFloat64s`). */
  float8Bytes(values: ArrayLike<number>): void {
    const count = values.length;
    this.reserve(4 + count * 8);
    this.buffer.writeInt32BE(count * 8, this.offset);
    this.offset += 4;
    if (LITTLE_ENDIAN) {
      this.putRaw(doubles(values));
      return;
    }
    let offset = this.offset;
    for (let index = 0; index < count; index++) {
      this.buffer.writeDoubleLE(values[index]!, offset);
      offset += 8;
    }
    this.offset = offset;
  }

  /** Waits for the chunk in flight, starts writing the buffered one and continues in the other buffer. */
  private async send(): Promise<void> {
    if (this.offset === COPY_DATA_HEADER_BYTES) return;
    const previous = this.inFlight;
    this.inFlight = null;
    if (previous) await previous;
    const written = this.buffer;
    const flushed = this.flush(written.subarray(0, this.offset));
    // Awaited before the next send or at the end; a failure meanwhile must not be an unhandled rejection.
    flushed.catch(() => {});
    this.inFlight = flushed;
    this.buffer = this.spare;
    this.spare = written;
    this.offset = COPY_DATA_HEADER_BYTES;
  }

  /** Writes the trailer, sends what is buffered and waits until every chunk is written. */
  async end(): Promise<void> {
    this.reserve(2);
    this.buffer.writeInt16BE(-1, this.offset);
    this.offset += 2;
    await this.send();
    const last = this.inFlight;
    this.inFlight = null;
    if (last) await last;
  }
}

/**
 * The driver's extension point for COPY: an object with `submit` that the connection hands the protocol
 * messages of its statement to. Runs `produce` once the server is ready for data.
 */
class CopyInQuery {
  /** Set by the driver (pg wraps it with its read timeout). */
  callback: ((error: Error | null) => void) | undefined;
  /** No client-side read timeout: a large COPY may run long (the server's statement_timeout still applies). */
  readonly query_timeout = NO_READ_TIMEOUT;
  private error: Error | null = null;
  private finished = false;

  constructor(
    readonly text: string,
    private readonly produce: (encoder: CopyEncoder) => Promise<void>,
  ) {}

  submit(connection: CopyConnection): void {
    connection.query(this.text);
  }

  handleCopyInResponse(connection: CopyConnection): void {
    const encoder = new CopyEncoder(async (chunk) => {
      // After a server error the rest is discarded anyway: stop encoding.
      if (this.error) throw this.error;
      const stream = connection.stream;
      if (stream.writable === false) throw new Error("the connection closed during COPY");
      // A CopyData message: its type, then its length (itself included, the type not).
      chunk[0] = 0x64;
      chunk.writeInt32BE(chunk.length - 1, 1);
      await new Promise<void>((resolve, reject) => {
        const onClose = () => reject(new Error("the connection closed during COPY"));
        stream.once("close", onClose);
        const done = (error?: Error | null) => {
          stream.off("close", onClose);
          if (error) reject(error);
          else resolve();
        };
        stream.write(chunk, done);
        // A write the socket took whole has its bytes in the kernel already, though its callback only comes on
        // the next tick (which a busy encoder, awaiting nothing but settled promises, would not reach for
        // megabytes): the buffer may be reused at once.
        if (stream.writableLength === 0) done();
      });
    });
    this.produce(encoder)
      .then(() => encoder.end())
      .then(
        () => connection.endCopyFrom(),
        (error: unknown) => {
          this.error ??= error instanceof Error ? error : new Error(String(error));
          connection.sendCopyFail(this.error.message);
        },
      );
  }

  handleCopyData(): void {}
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handlePortalSuspended(): void {}
  handleEmptyQuery(): void {}
  handleCommandComplete(): void {}

  /** As the driver's own queries: the error settles the call at once (a lost connection sends nothing more). */
  handleError(error: Error): void {
    this.error ??= error;
    this.settle();
  }

  handleReadyForQuery(): void {
    this.settle();
  }

  private settle(): void {
    if (this.finished) return;
    this.finished = true;
    this.callback?.(this.error);
  }
}

/**
 * Runs `copy <table> (<columns>) from stdin (format binary)` on `client`, with the rows `produce` encodes
 * (`freeze`: the table was created or truncated in the current transaction, see PostgreSQL's COPY). Resolves when the server has stored them; rejects with the server's error (or `produce`'s).
 */
export function copyIn(
  client: PostgresPoolClient,
  table: string,
  columns: readonly string[],
  produce: (encoder: CopyEncoder) => Promise<void>,
  options: { freeze?: boolean } = {},
): Promise<void> {
  const text = `copy ${table} (${columns.join(", ")}) from stdin (format binary${options.freeze ? ", freeze" : ""})`;
  return new Promise<void>((resolve, reject) => {
    const query = new CopyInQuery(text, produce);
    query.callback = (error) => (error ? reject(error) : resolve());
    // A wrapped client (a host's, or a test's instrumented one) may reject before handing the query on.
    Promise.resolve(client.query(query as unknown as { text: string })).catch(reject);
  });
}
