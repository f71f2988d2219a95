/**
 * A fetched posting list from its row of a turn's COPY (`termPostingsQuery` in `sql.ts`), in whichever form the
 * generation holds it: coded (`wireLists.ts`, decoded straight into the form the reader ranks and caches), packed
 * (little-endian documents and contributions), or arrays (the binary array format). Checked: malformed bytes raise
 * a `BinaryArrayError`, never a wrong posting.
 */
import {
  BinaryArrayError,
  decodeBinaryArray,
  packedFloat64s,
  packedInt32s,
  presentField,
} from "./binaryArrays.js";
import { codedList } from "./codedLists.js";
import { type FetchedList, listUpperBound } from "./postingCache.js";
import { decodeWireList } from "./wireLists.js";

/** What a row without its list arrays is told. */
const NO_LIST = "postings: a list row holds no list";

/** Fields of a list row: the coded list, then the packed documents and contributions, then the arrays. */
const CODED = 0;
const PACKED_DOCS = 1;
const PACKED_CONTRIBUTIONS = 2;
const ARRAY_DOCS = 3;
const ARRAY_CONTRIBUTIONS = 4;

/**
 * The list of a row's list fields (`fields`, from the coded list on), for a generation of `entryCount` entries;
 * lists that did not come coded are coded when `coding` (the reader caches them: `codedLists.ts`).
 */
export function listOfRow(
  fields: readonly (Uint8Array | null)[],
  entryCount: number,
  coding: boolean,
): FetchedList {
  const coded = fields[CODED];
  if (coded) return decodeWireList(coded, entryCount);
  const docs = fields[PACKED_DOCS];
  const contributions = fields[PACKED_CONTRIBUTIONS];
  const list =
    docs && contributions
      ? checkedList(packedInt32s(docs), packedFloat64s(contributions), entryCount)
      : checkedList(
          decodeBinaryArray(presentField(fields[ARRAY_DOCS], NO_LIST)),
          decodeBinaryArray(presentField(fields[ARRAY_CONTRIBUTIONS], NO_LIST)),
          entryCount,
        );
  return coding ? codedList(list) : list;
}

/** Bytes a list holds (what a turn's fetch budget counts). */
export function listBytes(list: FetchedList): number {
  return list.docs.byteLength + list.contributions.byteLength + (list.codes?.byteLength ?? 0);
}

/** A fetched list, checked: documents ascending within the generation, one contribution each. */
function checkedList(
  docs: Int32Array | Float64Array,
  contributions: Int32Array | Float64Array,
  entryCount: number,
): FetchedList {
  if (!(docs instanceof Int32Array) || !(contributions instanceof Float64Array))
    throw new BinaryArrayError("postings: docs or contributions are not int4[] and float8[]");
  if (docs.length !== contributions.length || docs.length === 0)
    throw new BinaryArrayError("postings: docs and contributions differ in length");
  let previous = -1;
  for (let position = 0; position < docs.length; position++) {
    const doc = docs[position]!;
    if (doc <= previous) throw new BinaryArrayError("postings: documents are not ascending");
    previous = doc;
  }
  if (previous >= entryCount) throw new BinaryArrayError("postings: a posting names a missing entry");
  return { docs, contributions, upper: listUpperBound(contributions) };
}
