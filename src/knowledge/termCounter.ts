/**
 * Counting the terms of one (document, field) while indexing: text is tokenized straight into term ids of a
 * {@link TermDictionary} and each distinct term's frequency is counted without a `Map`.
 */
import {
  ASCII_LOWERCASE_BIT,
  isAsciiAlphanumeric,
  isAsciiLower,
  isAsciiLowerOrDigit,
  isAsciiUpper,
} from "./characters.js";
import { MAX_TOKEN_LENGTH } from "./defaults.js";
import { forEachSegment, isAscii, tokenize } from "./normalize.js";
import {
  finishHash,
  foldWord,
  PACKED_HASH,
  PACKED_HASH_START,
  PACKED_WORDS,
  type TermDictionary,
} from "./termDictionary.js";

/** Bits of one packed character (the dictionary packs four per 32-bit word). */
const BITS_PER_CHARACTER = 8;
/** Bits of one packed word. */
const BITS_PER_WORD = 32;

/**
 * Term frequencies per (document, field), identified by a marker that changes with each (document, field). By
 * term id, the last marker the term was seen in and its count there are interleaved, so counting a token touches
 * one cache line; the distinct terms of the current (document, field) are listed in order of first occurrence.
 */
export class TermCounter {
  private readonly dictionary: TermDictionary;
  /** `[2 × termId]`: the marker of the last (document, field) the term was seen in; `[2 × termId + 1]`: its count there. */
  private counts = new Int32Array(2048);
  /**
   * Distinct term ids of the current (document, field), in order of first occurrence: the first
   * {@link fieldTermCount} values. A typed array with a count, not a JS array emptied per field: emptying a JS
   * array drops its storage, which every field then grows again (most of a build's short-lived allocations).
   */
  fieldTermIds = new Int32Array(256);
  /** How many of {@link fieldTermIds} belong to the current (document, field). */
  fieldTermCount = 0;

  constructor(dictionary: TermDictionary) {
    this.dictionary = dictionary;
  }

  /** The count of a term in the current (document, field). */
  frequency(termId: number): number {
    return this.counts[2 * termId + 1]!;
  }

  /** The distinct term ids of the current (document, field) as a new array (for callers off the hot path). */
  get fieldTerms(): number[] {
    return Array.from(this.fieldTermIds.subarray(0, this.fieldTermCount));
  }

  /** Starts the next (document, field). */
  clearField(): void {
    this.fieldTermCount = 0;
  }

  /** Releases the scratch memory (after the last document). */
  release(): void {
    this.counts = new Int32Array(0);
  }

  /**
   * Tokenizes and counts the texts of one (document, field) identified by `marker`: ASCII runs with the inlined
   * tokenizer, other segments through the Unicode pipeline. Returns the field's length in tokens.
   */
  countTexts(texts: readonly string[], marker: number): number {
    let length = 0;
    for (const text of texts) {
      if (!text) continue;
      if (isAscii(text)) length += this.countAsciiText(text, marker, 0, text.length);
      else {
        forEachSegment(
          text,
          (start, end) => {
            length += this.countAsciiText(text, marker, start, end);
          },
          (segment) => {
            length += this.countTokens(tokenize(segment), marker);
          },
        );
      }
    }
    return length;
  }

  /** Counts already tokenized (and analyzed) tokens of one (document, field). Returns their number. */
  countTokens(tokens: readonly string[], marker: number): number {
    for (const token of tokens) this.countTerm(this.dictionary.intern(token), marker);
    return tokens.length;
  }

  /** Counts one occurrence of a term in the (document, field) identified by `marker`. */
  countTerm(termId: number, marker: number): void {
    if (2 * termId >= this.counts.length) this.growScratch(termId);
    const counts = this.counts;
    if (counts[2 * termId] !== marker) {
      counts[2 * termId] = marker;
      counts[2 * termId + 1] = 1;
      if (this.fieldTermCount === this.fieldTermIds.length) {
        const grown = new Int32Array(this.fieldTermIds.length * 2);
        grown.set(this.fieldTermIds);
        this.fieldTermIds = grown;
      }
      this.fieldTermIds[this.fieldTermCount++] = termId;
    } else {
      counts[2 * termId + 1]!++;
    }
  }

  /**
   * Tokenizes ASCII text straight into term ids ({@link scanAsciiTokens}'s splitting, inlined here because this
   * loop runs once per indexed character) and counts them. Each token's characters are lowercased, packed and
   * hashed during the scan, so the dictionary lookup reads the source no more. An outer loop skips separators and
   * an inner one consumes a token, which keeps the per-character work small. Returns the number of tokens.
   */
  countAsciiText(text: string, marker: number, from: number, to: number): number {
    const dictionary = this.dictionary;
    const key = dictionary.packedKey;
    let tokens = 0;
    let index = from;
    while (index < to) {
      let code = text.charCodeAt(index);
      if (!isAsciiAlphanumeric(code)) {
        index++;
        continue;
      }
      const start = index;
      let length = 0;
      let word = 0;
      let shift = 0;
      let hash = PACKED_HASH_START;
      let word0 = 0;
      let word1 = 0;
      let word2 = 0;
      let word3 = 0;
      let previousUpper = false;
      for (;;) {
        if (isAsciiUpper(code)) {
          if (length > 0) {
            // Split before a capital that follows a lowercase letter or digit, or that starts "Xy" after capitals.
            if (!previousUpper) break;
            const next = index + 1 < to ? text.charCodeAt(index + 1) : 0;
            if (isAsciiLower(next)) break;
          }
          previousUpper = true;
        } else if (isAsciiLowerOrDigit(code)) {
          previousUpper = false;
        } else {
          break;
        }
        // Characters past the length cap still take part in splitting, but not in the term.
        if (length < MAX_TOKEN_LENGTH) {
          word |= (code | ASCII_LOWERCASE_BIT) << shift;
          length++;
          shift += BITS_PER_CHARACTER;
          if (shift === BITS_PER_WORD) {
            hash = foldWord(hash, word);
            if (length === 4) word0 = word;
            else if (length === 8) word1 = word;
            else if (length === 12) word2 = word;
            else if (length === 16) word3 = word;
            word = 0;
            shift = 0;
          }
        }
        if (++index >= to) break;
        code = text.charCodeAt(index);
      }
      if (shift > 0) {
        hash = foldWord(hash, word);
        if (length <= 4) word0 = word;
        else if (length <= 8) word1 = word;
        else if (length <= 12) word2 = word;
        else if (length <= 16) word3 = word;
      }
      // Through the dictionary's packed key, not as arguments (which would box them; see TermDictionary.packedKey).
      key[PACKED_HASH] = finishHash(hash, length);
      key[PACKED_WORDS] = word0;
      key[PACKED_WORDS + 1] = word1;
      key[PACKED_WORDS + 2] = word2;
      key[PACKED_WORDS + 3] = word3;
      this.countTerm(dictionary.internPacked(text, start, length, true), marker);
      tokens++;
    }
    return tokens;
  }

  private growScratch(termId: number): void {
    let size = this.counts.length;
    while (size <= 2 * termId) size *= 2;
    const counts = new Int32Array(size);
    counts.set(this.counts);
    this.counts = counts;
  }
}
