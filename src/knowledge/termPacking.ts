/**
 * How the tokenizer and the term dictionary pack and hash an ASCII term without creating a string: character `k`
 * of a term is byte `k % 4` of word `k / 4`; the hash folds every word in order with FNV-1a's multiply, then the
 * length, then Murmur3's finalizer (FNV-1a alone leaves the low bits, used for the slot, poorly mixed).
 */

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
/** Characters packed per 32-bit word, one byte each: character `k` is byte `k & 3` of word `k >> 2`. */
export const CHARACTER_IN_WORD_MASK = 3;
export const WORD_INDEX_SHIFT = 2;
export const BITS_PER_CHARACTER = 8;
const BITS_PER_WORD = 32;
export const BYTE_MASK = 0xff;

/** First step of a packed hash. */
export const PACKED_HASH_START = FNV_OFFSET;

/** Folds one packed word into a running hash. */
export function foldWord(hash: number, word: number): number {
  return Math.imul(hash ^ word, FNV_PRIME);
}

/** The final hash of a packed term of `length` characters whose words were folded into `hash`. */
export function finishHash(hash: number, length: number): number {
  let value = Math.imul(hash ^ length, FNV_PRIME);
  value ^= value >>> 16;
  value = Math.imul(value, 0x85ebca6b);
  value ^= value >>> 13;
  value = Math.imul(value, 0xc2b2ae35);
  return value ^ (value >>> 16);
}

/** Whether every character of `term` is ASCII (such terms are packed; the others live in a `Map`). */
export function isAsciiTerm(term: string): boolean {
  for (let index = 0; index < term.length; index++) if (term.charCodeAt(index) >= 128) return false;
  return true;
}

/**
 * Packs the ASCII term `term` as the tokenizer packs a token (`termCounter.ts`) into `key`: its hash, then its first
 * four words (zero beyond the end); see `TermDictionary.packedKey`.
 */
export function packTerm(term: string, key: Int32Array): void {
  let hash = FNV_OFFSET;
  let word = 0;
  let shift = 0;
  let count = 0;
  key.fill(0);
  for (let index = 0; index < term.length; index++) {
    word |= term.charCodeAt(index) << shift;
    shift += BITS_PER_CHARACTER;
    if (shift === BITS_PER_WORD) {
      hash = foldWord(hash, word);
      if (count < 4) key[PACKED_WORDS + count] = word;
      count++;
      word = 0;
      shift = 0;
    }
  }
  if (shift > 0) {
    hash = foldWord(hash, word);
    if (count < 4) key[PACKED_WORDS + count] = word;
  }
  key[PACKED_HASH] = finishHash(hash, term.length);
}

/** `TermDictionary.packedKey` layout: the hash, then the first of the four packed words. */
export const PACKED_HASH = 0;
export const PACKED_WORDS = 1;
