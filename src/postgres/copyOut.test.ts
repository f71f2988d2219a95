/**
 * Reading a binary COPY without a server: tuples split across messages at every byte, nulls, the trailer, and
 * damaged input (a typed error, never a wrong tuple); the binary array decoder used for unpacked lists.
 */
import { describe, expect, it } from "vitest";
import { BinaryArrayError, decodeBinaryArray, int4Of, textOf } from "./binaryArrays.js";
import { CopyFormatError, copyOut } from "./copyOut.js";
import type { PostgresPoolClient } from "./driver.js";
import { float8Array, int4Array } from "./sql.js";

const SIGNATURE = Buffer.from("PGCOPY\n\xff\r\n\0", "latin1");

/** A binary COPY stream of `rows` (each field: bytes, or null), with or without its trailer. */
function copyStream(rows: (Buffer | null)[][], trailer = true): Buffer {
  const parts: Buffer[] = [SIGNATURE, Buffer.alloc(8)];
  for (const row of rows) {
    const count = Buffer.alloc(2);
    count.writeInt16BE(row.length);
    parts.push(count);
    for (const field of row) {
      const length = Buffer.alloc(4);
      length.writeInt32BE(field === null ? -1 : field.length);
      parts.push(length);
      if (field) parts.push(field);
    }
  }
  if (trailer) parts.push(Buffer.from([0xff, 0xff]));
  return Buffer.concat(parts);
}

/** A client that plays `stream` to the submittable in chunks of `chunkBytes`, then ReadyForQuery. */
function fakeClient(stream: Buffer, chunkBytes: number): PostgresPoolClient {
  return {
    query: ((submittable: {
      submit(connection: { query(text: string): void }): void;
      handleCopyData(message: { chunk: Buffer }): void;
      handleReadyForQuery(): void;
    }) => {
      submittable.submit({ query: () => {} });
      for (let offset = 0; offset < stream.length; offset += chunkBytes)
        // Each chunk a fresh copy: the parser must not keep views of earlier chunks.
        submittable.handleCopyData({ chunk: Buffer.from(stream.subarray(offset, offset + chunkBytes)) });
      submittable.handleReadyForQuery();
      return submittable;
    }) as unknown as PostgresPoolClient["query"],
    release: () => {},
  };
}

const int4 = (value: number) => {
  const bytes = Buffer.alloc(4);
  bytes.writeInt32BE(value);
  return bytes;
};

describe("copyOut", () => {
  const rows = [
    [int4(1), Buffer.from("é id", "utf8"), null, int4Array([3, 5, 8])],
    [int4(-7), Buffer.alloc(0), int4(42), float8Array([0.1, 2 ** -1074, 1e308])],
  ];
  const stream = copyStream(rows);

  it("reads every tuple, whatever the message boundaries (nulls and empty values kept)", async () => {
    for (const chunkBytes of [1, 2, 3, 7, 19, stream.length]) {
      const seen: unknown[][] = [];
      await copyOut(fakeClient(stream, chunkBytes), "select", (fields) => {
        seen.push([
          int4Of(fields[0]!),
          textOf(fields[1]!),
          fields[2] ? int4Of(fields[2]) : null,
          Array.from(decodeBinaryArray(fields[3]!)),
        ]);
      });
      expect(seen).toEqual([
        [1, "é id", null, [3, 5, 8]],
        [-7, "", 42, [0.1, 2 ** -1074, 1e308]],
      ]);
    }
  });

  it("rejects a stream without its trailer, or with a bad signature, with a CopyFormatError", async () => {
    await expect(copyOut(fakeClient(copyStream(rows, false), 5), "select", () => {})).rejects.toThrow(
      CopyFormatError,
    );
    const damaged = Buffer.from(stream);
    damaged[0] = 0x51;
    await expect(copyOut(fakeClient(damaged, 64), "select", () => {})).rejects.toThrow(CopyFormatError);
  });

  it("passes a handler's error on (a damaged value is never a wrong result)", async () => {
    await expect(
      copyOut(fakeClient(stream, 64), "select", (fields) => {
        decodeBinaryArray(fields[1]!);
      }),
    ).rejects.toThrow(BinaryArrayError);
  });
});

describe("decodeBinaryArray", () => {
  it("decodes int4[] and float8[] bit for bit, and refuses anything else", () => {
    expect(Array.from(decodeBinaryArray(int4Array([-1, 0, 2 ** 31 - 1])))).toEqual([-1, 0, 2 ** 31 - 1]);
    const values = [Math.PI, -0, Number.MIN_VALUE];
    expect(Array.from(decodeBinaryArray(float8Array(values)))).toEqual(values);
    expect(decodeBinaryArray(int4Array([])).length).toBe(0);
    const truncated = int4Array([1, 2]).subarray(0, 25);
    expect(() => decodeBinaryArray(truncated)).toThrow(BinaryArrayError);
    const text = Buffer.from(int4Array([1]));
    text.writeInt32BE(25, 8);
    expect(() => decodeBinaryArray(text)).toThrow(BinaryArrayError);
  });
});
