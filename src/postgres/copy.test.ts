import { EventEmitter } from "node:events";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { COPY_DATA_HEADER_BYTES, CopyEncoder, copyIn } from "./copy.js";
import type { PostgresPoolClient } from "./driver.js";

/** PostgreSQL's binary copy format written value by value with a DataView: the reference the encoder must match. */
class ReferenceEncoder {
  private readonly bytes: number[] = [];

  constructor() {
    for (const byte of Buffer.from("PGCOPY\n\xff\r\n\0", "latin1")) this.bytes.push(byte);
    this.int32(0);
    this.int32(0);
  }

  private put(width: number, write: (view: DataView) => void): void {
    const view = new DataView(new ArrayBuffer(width));
    write(view);
    for (let index = 0; index < width; index++) this.bytes.push(view.getUint8(index));
  }

  int16(value: number): void {
    this.put(2, (view) => view.setInt16(0, value));
  }

  int32(value: number, littleEndian = false): void {
    this.put(4, (view) => view.setInt32(0, value, littleEndian));
  }

  double(value: number, littleEndian = false): void {
    this.put(8, (view) => view.setFloat64(0, value, littleEndian));
  }

  array(values: readonly number[], oid: number, width: 4 | 8): void {
    this.int32(20 + values.length * (4 + width));
    for (const header of [1, 0, oid, values.length, 1]) this.int32(header);
    for (const value of values) {
      this.int32(width);
      if (width === 4) this.int32(value);
      else this.double(value);
    }
  }

  finish(): Buffer {
    this.int16(-1);
    return Buffer.from(this.bytes);
  }
}

const int32 = fc.integer({ min: -0x80000000, max: 0x7fffffff });
const double = fc.oneof(
  fc.double(),
  fc.constantFrom(0, -0, Number.MIN_VALUE, -Number.MAX_VALUE, Number.POSITIVE_INFINITY, 1 / 3),
);
type Value =
  | { kind: "int4Array" | "int4Bytes"; values: number[]; typed: boolean }
  | { kind: "float8Array" | "float8Bytes"; values: number[]; typed: boolean };
const value: fc.Arbitrary<Value> = fc.oneof(
  fc.record({
    kind: fc.constantFrom("int4Array" as const, "int4Bytes" as const),
    values: fc.array(int32, { maxLength: 300 }),
    typed: fc.boolean(),
  }),
  fc.record({
    kind: fc.constantFrom("float8Array" as const, "float8Bytes" as const),
    values: fc.array(double, { maxLength: 300 }),
    typed: fc.boolean(),
  }),
);

/**
 * An encoder whose chunks are collected without their message header room, each copied and then overwritten
 * (the encoder reuses its buffer once a flush resolves).
 */
function collecting(chunks: Buffer[]): CopyEncoder {
  return new CopyEncoder(async (chunk) => {
    chunks.push(Buffer.from(chunk.subarray(COPY_DATA_HEADER_BYTES)));
    chunk.fill(0xee);
  });
}

async function encode(rows: Value[][]): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const encoder = collecting(chunks);
  for (const row of rows) {
    await encoder.row(row.length);
    for (const field of row) {
      const isInt = field.kind === "int4Array" || field.kind === "int4Bytes";
      const values = field.typed
        ? isInt
          ? Int32Array.from(field.values)
          : Float64Array.from(field.values)
        : field.values;
      encoder[field.kind](values);
    }
  }
  await encoder.end();
  return Buffer.concat(chunks);
}

function reference(rows: Value[][]): Buffer {
  const expected = new ReferenceEncoder();
  for (const row of rows) {
    expected.int16(row.length);
    for (const field of row) {
      if (field.kind === "int4Array") expected.array(field.values, 23, 4);
      else if (field.kind === "float8Array") expected.array(field.values, 701, 8);
      else if (field.kind === "int4Bytes") {
        expected.int32(field.values.length * 4);
        for (const item of field.values) expected.int32(item, true);
      } else {
        expected.int32(field.values.length * 8);
        for (const item of field.values) expected.double(item, true);
      }
    }
  }
  return expected.finish();
}

describe("CopyEncoder", () => {
  it("encodes the next chunk while the previous one is written, never into a chunk still being written", async () => {
    // Each flush is held until the test releases it; its bytes are checked unchanged when it is released.
    const held: (() => void)[] = [];
    const sent: Buffer[] = [];
    let inFlight = 0;
    let mostInFlight = 0;
    let rowsEncoded = 0;
    let rowsEncodedWhileHeld = 0;
    const encoder = new CopyEncoder(
      (chunk) =>
        new Promise<void>((resolve) => {
          inFlight++;
          mostInFlight = Math.max(mostInFlight, inFlight);
          const copy = Buffer.from(chunk);
          const rowsAtFlush = rowsEncoded;
          sent.push(copy.subarray(COPY_DATA_HEADER_BYTES));
          held.push(() => {
            expect(chunk.equals(copy)).toBe(true);
            rowsEncodedWhileHeld = Math.max(rowsEncodedWhileHeld, rowsEncoded - rowsAtFlush);
            inFlight--;
            resolve();
          });
        }),
    );
    const values = Int32Array.from({ length: 1000 }, (_, index) => index);
    let ended = false;
    const encoding = (async () => {
      for (let row = 0; row < 1000; row++) {
        await encoder.row(1);
        encoder.int4Array(values);
        rowsEncoded++;
      }
      await encoder.end();
      ended = true;
    })();
    // Releases the held chunks one at a time, each after a turn of the event loop.
    while (!ended) {
      await new Promise((resolve) => setImmediate(resolve));
      held.shift()?.();
    }
    await encoding;
    // One chunk in flight at a time, and rows encoded while one was held (about a chunk's worth, 260 rows).
    expect(mostInFlight).toBe(1);
    expect(rowsEncodedWhileHeld).toBeGreaterThan(100);
    const expected = reference(
      Array.from({ length: 1000 }, () => [
        { kind: "int4Array" as const, values: Array.from(values), typed: true },
      ]),
    );
    expect(Buffer.concat(sent).equals(expected)).toBe(true);
  });

  it("writes arrays (plain and typed) byte for byte as PostgreSQL's binary copy format, value by value", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(value, { minLength: 1, maxLength: 4 }), { maxLength: 20 }),
        async (rows) => {
          expect((await encode(rows)).equals(reference(rows))).toBe(true);
        },
      ),
      { seed: propertySeed("binary COPY encoding"), numRuns: propertyRuns(200) },
    );
  });

  it("text in one pass: ASCII, multi-byte and astral characters, and a string longer than a chunk", async () => {
    const values = ["", "plain", "naïve café", "日本語のテキスト", "emoji 😀 and 𝔘", "x".repeat(3 << 20)];
    const chunks: Buffer[] = [];
    const encoder = collecting(chunks);
    for (const value of values) {
      await encoder.row(1);
      encoder.text(value);
    }
    await encoder.end();
    const expected: Buffer[] = [Buffer.from("PGCOPY\n\xff\r\n\0", "latin1"), Buffer.alloc(8)];
    for (const value of values) {
      const bytes = Buffer.from(value, "utf8");
      const header = Buffer.alloc(6);
      header.writeInt16BE(1, 0);
      header.writeInt32BE(bytes.length, 2);
      expected.push(header, bytes);
    }
    expected.push(Buffer.from([0xff, 0xff]));
    expect(Buffer.concat(chunks).equals(Buffer.concat(expected))).toBe(true);
  });

  it("encodes arrays larger than a chunk and than its scratch space, and views into larger buffers", async () => {
    const large = Array.from({ length: 300_000 }, (_, index) => (index * 2654435761) | 0);
    const doubles = large.map((item) => item / 7);
    // A view that does not start at its buffer's start.
    const offsetView = new Float64Array(new Float64Array(doubles).buffer, 8 * 5, 1000);
    const rows: Value[][] = [
      [
        { kind: "int4Array", values: large, typed: true },
        { kind: "float8Array", values: doubles, typed: false },
      ],
      [
        { kind: "int4Bytes", values: large, typed: false },
        { kind: "float8Bytes", values: doubles, typed: true },
      ],
    ];
    const chunks: Buffer[] = [];
    const encoder = collecting(chunks);
    await encoder.row(1);
    encoder.float8Array(offsetView);
    await encoder.row(1);
    encoder.float8Bytes(offsetView);
    const viewRows: Value[][] = [
      [{ kind: "float8Array", values: Array.from(offsetView), typed: false }],
      [{ kind: "float8Bytes", values: Array.from(offsetView), typed: false }],
    ];
    await encoder.end();
    expect(Buffer.concat(chunks).equals(reference(viewRows))).toBe(true);
    expect((await encode(rows)).equals(reference(rows))).toBe(true);
  });
});

/**
 * A connection as `pg` hands it to a COPY, over a socket that takes every write whole at once (`writableLength` 0
 * right after `write`) and calls back on the next tick, as Node's sockets do, or (`queued`) that holds each write
 * and calls back from the event loop. Records the chunks' bytes and the buffers they were written from.
 */
function fakeCopyClient(queued: boolean) {
  const written: Buffer[] = [];
  const buffers = new Set<ArrayBufferLike>();
  const stream = Object.assign(new EventEmitter(), {
    writable: true,
    writableLength: 0,
    write(chunk: Buffer, callback: (error?: Error | null) => void): boolean {
      written.push(Buffer.from(chunk));
      buffers.add(chunk.buffer);
      if (queued) {
        stream.writableLength += chunk.length;
        setImmediate(() => {
          stream.writableLength -= chunk.length;
          callback();
        });
      } else process.nextTick(callback);
      return !queued;
    },
  });
  type Submittable = {
    submit(connection: unknown): void;
    handleCopyInResponse(connection: unknown): void;
    handleReadyForQuery(): void;
  };
  const client: PostgresPoolClient = {
    query(config) {
      const query = config as unknown as Submittable;
      const connection = {
        stream,
        query() {},
        endCopyFrom: () => setImmediate(() => query.handleReadyForQuery()),
        sendCopyFail: () => setImmediate(() => query.handleReadyForQuery()),
      };
      query.submit(connection);
      query.handleCopyInResponse(connection);
      return Promise.resolve({ rows: [], rowCount: 0 });
    },
    release() {},
  };
  return { client, written, buffers };
}

describe("copyIn", () => {
  for (const queued of [false, true]) {
    it(`writes every chunk from the encoder's two buffers (${queued ? "writes queued, called back later" : "writes taken whole, called back on the next tick"})`, async () => {
      const { client, written, buffers } = fakeCopyClient(queued);
      const rows = 20_000;
      const values = Int32Array.from({ length: 100 }, (_, index) => index * 7);
      await copyIn(client, "t", ["a", "b"], async (encoder) => {
        for (let row = 0; row < rows; row++) {
          await encoder.row(2);
          encoder.int4(row);
          encoder.int4Array(values);
        }
      });
      // About 16 MB in chunks of about 1 MiB, all written from the encoder's two buffers in turn: a fresh buffer
      // per chunk (gigabytes per large publication) set off full collections of the publishing process's heap.
      expect(written.length).toBeGreaterThan(10);
      expect(buffers.size).toBe(2);
      // The messages carry the rows: CopyData headers, then the rows in order.
      const payload = Buffer.concat(
        written.map((chunk) => {
          expect(chunk[0]).toBe(0x64);
          expect(chunk.readInt32BE(1)).toBe(chunk.length - 1);
          return chunk.subarray(COPY_DATA_HEADER_BYTES);
        }),
      );
      const rowBytes = 2 + 8 + 4 + 20 + values.length * 8;
      expect(payload.length).toBe(19 + rows * rowBytes + 2);
      expect(payload.readInt32BE(19 + (rows - 1) * rowBytes + 2 + 4)).toBe(rows - 1);
    });
  }
});
