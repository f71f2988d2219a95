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
/** Hash slots at first: most lists have few distinct values, and a small table stays in the CPU's L1 cache. */
const FIRST_SLOT_BITS = 9;
/** Most hash slots: twice the most codes, so a probe sequence stays short. */
const MAX_SLOT_BITS = 17;

/**
 * Per slot: the code it holds plus one, in the list being coded (`stamp` above the low 17 bits tells which list
 * wrote it: the slots of earlier lists read as empty without clearing the table).
 */
const slots = new Int32Array(1 << MAX_SLOT_BITS);
/** Stamps step by 2^17 (above the code plus one, which is at most 2^16); they wrap after 2^14 lists. */
const STAMP_STEP = 1 << 17;
let stamp = 0;
/** The distinct values of the list being coded, and their bits (two 32-bit words each). */
const distinct = new Float64Array(MAX_CODES);
const distinctWords = new Uint32Array(distinct.buffer);

/** The slot where the value of words `low`, `high` is probed first, in a table of `2^bits` slots. */
function firstSlot(low: number, high: number, bits: number): number {
  return Math.imul(low ^ Math.imul(high, 0x9e3779b1), 0x85ebca6b) >>> (32 - bits);
}

/** A fresh stamp: the table's slots all read as empty. */
function nextStamp(): void {
  stamp += STAMP_STEP;
  if (stamp >= 0x7fff_ffff - STAMP_STEP || stamp < 0) {
    slots.fill(0);
    stamp = STAMP_STEP;
  }
}

/**
 * Codes `contributions` into `codes` (at least as long): returns the distinct values in first-seen order (a view of
 * scratch space, valid until the next call), or null when coding would not make the list smaller (fewer than two
 * postings, more than 65,536 distinct values, or too few postings per value). Codes are below 256 when at most
 * 256 values are distinct (then one byte each). The publication writes lists coded this way (`wireLists.ts`) and
 * the reader caches lists it fetched otherwise coded this way, so a list has one coded form.
 */
export function contributionCodes(contributions: Float64Array, codes: Uint16Array): Float64Array | null {
  const count = contributions.length;
  if (count < 2) return null;
  const words = new Uint32Array(contributions.buffer, contributions.byteOffset, count * 2);
  let bits = FIRST_SLOT_BITS;
  let mask = (1 << bits) - 1;
  nextStamp();
  let values = 0;
  let previousLow = -1;
  let previousHigh = -1;
  let previousCode = 0;
  for (let position = 0; position < count; position++) {
    const low = words[position * 2]!;
    const high = words[position * 2 + 1]!;
    // Neighbouring postings often repeat a value (the same frequency and length).
    if (low === previousLow && high === previousHigh) {
      codes[position] = previousCode;
      continue;
    }
    let slot = firstSlot(low, high, bits);
    let code: number;
    for (;;) {
      const held = slots[slot]!;
      if (held < stamp) {
        // Empty: a new value.
        if (values === MAX_CODES) return null;
        code = values++;
        slots[slot] = stamp + code + 1;
        distinctWords[code * 2] = low;
        distinctWords[code * 2 + 1] = high;
        // Past half full: twice the slots, the values held placed again.
        if (values * 2 > mask && bits < MAX_SLOT_BITS) {
          bits++;
          mask = (1 << bits) - 1;
          nextStamp();
          for (let placed = 0; placed < values; placed++) {
            let free = firstSlot(distinctWords[placed * 2]!, distinctWords[placed * 2 + 1]!, bits);
            while (slots[free]! >= stamp) free = (free + 1) & mask;
            slots[free] = stamp + placed + 1;
          }
        }
        break;
      }
      code = held - stamp - 1;
      if (distinctWords[code * 2] === low && distinctWords[code * 2 + 1] === high) break;
      slot = (slot + 1) & mask;
    }
    codes[position] = code;
    previousLow = low;
    previousHigh = high;
    previousCode = code;
  }
  if (values * 8 + count * codeWidth(values) >= count * 8) return null;
  return distinct.subarray(0, values);
}

/** Bytes per code for a list of `values` distinct contributions. */
export function codeWidth(values: number): 1 | 2 {
  return values <= 256 ? 1 : 2;
}

/**
 * `list` coded: its documents and bound, its distinct contributions (first-seen order) and a code per posting
 * (see {@link contributionCodes}); the list itself when coding would not make it smaller.
 */
export function codedList(list: FetchedList): FetchedList {
  if (list.codes !== undefined || list.contributions.length < 2) return list;
  const codes = new Uint16Array(list.contributions.length);
  const values = contributionCodes(list.contributions, codes);
  if (values === null) return list;
  return {
    docs: list.docs,
    contributions: values.slice(),
    codes: codeWidth(values.length) === 1 ? narrowed(codes) : codes,
    upper: list.upper,
  };
}

/** One-byte codes of `codes` (each below 256). */
function narrowed(codes: Uint16Array): Uint8Array {
  const bytes = new Uint8Array(codes.length);
  bytes.set(codes);
  return bytes;
}
