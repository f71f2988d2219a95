/**
 * Bulk loading with `COPY … FROM STDIN (FORMAT binary)`: rows are encoded straight into PostgreSQL's binary copy
 * format (no number is formatted or parsed as text) and streamed to the server in chunks, with backpressure, over
 * the `pg` driver's connection (a small "submittable" query object, the driver's extension point for COPY; no
 * further package is needed).
 */
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

/** The parts of the driver's connection a COPY uses (pg's `Connection`). */
type CopyConnection = {
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
  sendCopyFail(message: string): void;
  stream: {
    writableNeedDrain?: boolean;
    once(event: "drain" | "close", listener: () => void): unknown;
    off(event: "close", listener: () => void): unknown;
  };
};

/**
 * Encodes rows in the binary copy format into a growing buffer, handing full chunks to `flush`. Call
 * {@link CopyEncoder.row} with the field count, then one value method per field, in the table's column order.
 */
export class CopyEncoder {
  private buffer = Buffer.allocUnsafe(CHUNK_BYTES * 2);
  private offset = 0;

  constructor(private readonly flush: (chunk: Buffer) => Promise<void>) {
    this.buffer.set(SIGNATURE, 0);
    this.buffer.writeInt32BE(0, SIGNATURE.length); // flags
    this.buffer.writeInt32BE(0, SIGNATURE.length + 4); // header extension length
    this.offset = SIGNATURE.length + 8;
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

  int4Array(values: ArrayLike<number>): void {
    const count = values.length;
    this.array(count, INT4_OID, 4);
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
    const buffer = this.buffer;
    let offset = this.offset;
    for (let index = 0; index < count; index++) {
      buffer.writeInt32BE(8, offset);
      buffer.writeDoubleBE(values[index]!, offset + 4);
      offset += 12;
    }
    this.offset = offset;
  }

  /** A `bytea` of little-endian int32 values (see `decodeInt32s`). */
  int4Bytes(values: ArrayLike<number>): void {
    const count = values.length;
    this.reserve(4 + count * 4);
    this.buffer.writeInt32BE(count * 4, this.offset);
    let offset = this.offset + 4;
    for (let index = 0; index < count; index++) {
      this.buffer.writeInt32LE(values[index]!, offset);
      offset += 4;
    }
    this.offset = offset;
  }

  /** A `bytea` of little-endian float64 values (see `decodeFloat64s`). */
  float8Bytes(values: ArrayLike<number>): void {
    const count = values.length;
    this.reserve(4 + count * 8);
    this.buffer.writeInt32BE(count * 8, this.offset);
    let offset = this.offset + 4;
    for (let index = 0; index < count; index++) {
      this.buffer.writeDoubleLE(values[index]!, offset);
      offset += 8;
    }
    this.offset = offset;
  }

  private async send(): Promise<void> {
    if (this.offset === 0) return;
    const chunk = Buffer.from(this.buffer.subarray(0, this.offset));
    this.offset = 0;
    await this.flush(chunk);
  }

  /** Writes the trailer and sends what is buffered. */
  async end(): Promise<void> {
    this.reserve(2);
    this.buffer.writeInt16BE(-1, this.offset);
    this.offset += 2;
    await this.send();
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
    let closed = false;
    const encoder = new CopyEncoder(async (chunk) => {
      // After a server error the rest is discarded anyway: stop encoding.
      if (this.error) throw this.error;
      if (closed) throw new Error("the connection closed during COPY");
      connection.sendCopyFromChunk(chunk);
      if (connection.stream.writableNeedDrain) {
        await new Promise<void>((resolve) => {
          const onClose = () => {
            closed = true;
            resolve();
          };
          connection.stream.once("drain", () => {
            connection.stream.off("close", onClose);
            resolve();
          });
          connection.stream.once("close", onClose);
        });
      }
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
