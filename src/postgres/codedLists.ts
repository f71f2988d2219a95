/**
 * Posting lists as the reader's posting cache keeps them: the documents as fetched, and each list's distinct
 * contributions once, every posting naming its own by a one- or two-byte code (`ScoringList.codes`, which the
 * in-memory scorer reads directly). A list's contributions are BM25 terms of a few term frequencies and field
 * lengths, so they repeat: on the benchmark's 100k workload, 59% of the postings are in lists of at most 256
 * distinct values and the rest in lists of at most 65,536; its 10.9 M cached postings take 64 MB instead of 131 MB
 * (12 bytes per posting as fetched), within the default 64 MiB cache, where about two lookups in three missed.
 * Values are told apart by their bits (not by `===`: -0 and 0, and NaN payloads, stay distinct), so a decoded
 * contribution is the fetched one, bit for bit, and every sum the scorer makes is unchanged.
 */
import type { FetchedList } from "./postingCache.js";

/** Most distinct contributions a coded list holds (two-byte codes); a list with more stays as fetched. */
const MAX_CODES = 1 << 16;
/** Hash slots: twice the most codes, so a probe sequence stays short. */
const SLOT_BITS = 17;

/** Per slot: the list it was last written for (slots of other lists are empty), and its code. */
const slotStamps = new Int32Array(1 << SLOT_BITS);
const slotCodes = new Int32Array(1 << SLOT_BITS);
let stamp = 0;
/** The distinct values of the list being coded, and their bits (two 32-bit words each). */
const distinct = new Float64Array(MAX_CODES);
const distinctWords = new Uint32Array(distinct.buffer);

/**
 * `list` coded: its documents and bound, its distinct contributions (first-seen order) and a code per posting,
 * one byte when at most 256 values are distinct; the list itself when coding would not make it smaller (more than
 * 65,536 distinct values, or too few postings per value).
 */
export function codedList(list: FetchedList): FetchedList {
  const contributions = list.contributions;
  const count = contributions.length;
  if (list.codes !== undefined || count < 2) return list;
  // Small lists hash into a smaller table (it stays in the CPU's cache): at least twice as many slots as postings.
  let bits = 4;
  while (bits < SLOT_BITS && 1 << bits < count * 2) bits++;
  const mask = (1 << bits) - 1;
  const shift = 32 - bits;
  if (++stamp === 0x7fffffff) {
    slotStamps.fill(0);
    stamp = 1;
  }
  const words = new Uint32Array(contributions.buffer, contributions.byteOffset, count * 2);
  const codes = new Uint16Array(count);
  let values = 0;
  for (let position = 0; position < count; position++) {
    const low = words[position * 2]!;
    const high = words[position * 2 + 1]!;
    let slot = Math.imul(low ^ Math.imul(high, 0x9e3779b1), 0x85ebca6b) >>> shift;
    for (;;) {
      if (slotStamps[slot] !== stamp) {
        if (values === MAX_CODES) return list;
        slotStamps[slot] = stamp;
        slotCodes[slot] = values;
        distinctWords[values * 2] = low;
        distinctWords[values * 2 + 1] = high;
        codes[position] = values++;
        break;
      }
      const code = slotCodes[slot]!;
      if (distinctWords[code * 2] === low && distinctWords[code * 2 + 1] === high) {
        codes[position] = code;
        break;
      }
      slot = (slot + 1) & mask;
    }
  }
  const codeBytes = values <= 256 ? 1 : 2;
  if (values * 8 + count * codeBytes >= count * 8) return list;
  return {
    docs: list.docs,
    contributions: distinct.slice(0, values),
    codes: codeBytes === 1 ? narrowed(codes) : codes,
    upper: list.upper,
  };
}

/** One-byte codes of `codes` (each below 256). */
function narrowed(codes: Uint16Array): Uint8Array {
  const bytes = new Uint8Array(codes.length);
  bytes.set(codes);
  return bytes;
}
