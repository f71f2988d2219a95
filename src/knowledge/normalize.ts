/**
 * Text normalization shared by indexing and querying. Whatever is indexed went through exactly the same
 * pipeline as the query, so behaviour is consistent for every script, including the lossy cases (Hangul stays
 * decomposed, Indic vowel signs are removed) that NeuroLink has too.
 */
import {
  ASCII_SPACE,
  isAsciiAlphanumeric,
  isAsciiLower,
  isAsciiLowerOrDigit,
  isAsciiUpper,
  isHighSurrogate,
  isNonAscii,
} from "./characters.js";
import { MAX_TOKEN_LENGTH } from "./defaults.js";

const COMBINING_MARKS = /\p{M}+/gu;
// Written as look-arounds so each pass is linear: the seed's `(\p{Lu}+)(\p{Lu}\p{Ll})` form backtracks
// quadratically on long runs of capitals (a ReDoS), while inserting at the same positions.
const LOWER_OR_DIGIT_BEFORE_UPPER = /(?<=[\p{Ll}\p{N}])(?=\p{Lu})/gu;
const UPPER_BEFORE_UPPER_LOWER = /(?<=\p{Lu})(?=\p{Lu}\p{Ll})/gu;
const NON_ALPHANUMERIC_RUN = /[^\p{L}\p{N}]+/gu;

/**
 * Normalizes text for matching: NFKC then NFD with combining marks removed (folds compatibility forms and strips
 * diacritics), splits identifier boundaries (`enableURLReading` → `enable url reading`, a letter followed by a
 * digit is not split), turns every run of non-letters/non-digits into one space, trims and lowercases
 * (locale-independent). Idempotent. Falsy input gives `""`.
 */
export function normalizeText(text: string | null | undefined): string {
  if (!text) return "";
  return String(text)
    .normalize("NFKC")
    .normalize("NFD")
    .replace(COMBINING_MARKS, "")
    .replace(LOWER_OR_DIGIT_BEFORE_UPPER, " ")
    .replace(UPPER_BEFORE_UPPER_LOWER, " ")
    .replace(NON_ALPHANUMERIC_RUN, " ")
    .trim()
    .toLowerCase();
}

/** Cuts a token to {@link MAX_TOKEN_LENGTH} code units without splitting a surrogate pair. */
function capTokenLength(token: string): string {
  let end = MAX_TOKEN_LENGTH;
  if (isHighSurrogate(token.charCodeAt(end - 1))) end -= 1;
  return token.slice(0, end);
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: the whole ASCII range, control characters included, is meant.
const ASCII_ONLY = /^[\x00-\x7f]*$/;

/** Whether text is pure ASCII (then the fast tokenizer applies). */
export function isAscii(text: string): boolean {
  return ASCII_ONLY.test(text);
}

/**
 * Scans pure-ASCII text for tokens in one pass and reports each as a `[start, end)` range of the source (the
 * token is that range lowercased), with the same result as the Unicode pipeline: ASCII is unchanged by NFKC/NFD
 * and has no combining marks, so only the identifier splits, separators, lowercasing and the length cap remain.
 * Indexing is dominated by tokenization, and most registries are ASCII.
 */
export function scanAsciiTokens(
  text: string,
  onToken: (start: number, end: number) => void,
  from = 0,
  to = text.length,
): void {
  const length = to;
  let start = -1;
  for (let index = from; index < length; index++) {
    const code = text.charCodeAt(index);
    const isUpper = isAsciiUpper(code);
    if (!isUpper && !isAsciiLowerOrDigit(code)) {
      if (start >= 0) {
        onToken(start, Math.min(index, start + MAX_TOKEN_LENGTH));
        start = -1;
      }
      continue;
    }
    if (start >= 0 && isUpper) {
      const previous = text.charCodeAt(index - 1);
      const next = index + 1 < length ? text.charCodeAt(index + 1) : 0;
      // Split before a capital that follows a lowercase letter or digit, or that starts "Xy" after capitals.
      if (isAsciiUpper(previous) ? isAsciiLower(next) : true) {
        onToken(start, Math.min(index, start + MAX_TOKEN_LENGTH));
        start = index;
      }
    } else if (start < 0) {
      start = index;
    }
  }
  if (start >= 0) onToken(start, Math.min(length, start + MAX_TOKEN_LENGTH));
}

function tokenizeAscii(text: string): string[] {
  const tokens: string[] = [];
  scanAsciiTokens(text, (start, end) => {
    tokens.push(text.slice(start, end).toLowerCase());
  });
  return tokens;
}

/**
 * Splits text at ASCII separators (ASCII characters that are neither letters nor digits) and reports each piece:
 * pure-ASCII pieces as ranges for the fast scanner, others as strings for the Unicode pipeline. Tokens never span
 * an ASCII separator in the Unicode pipeline either (NFKC/NFD never merge one into a letter: the only
 * compositions with an ASCII non-alphanumeric base, such as "<" + U+0338, decompose back under NFD; and
 * lowercasing, including the final-sigma rule, runs after separators became spaces), so both give the same tokens
 * while most of a mostly-ASCII text skips normalization.
 */
export function forEachSegment(
  text: string,
  onAsciiRange: (start: number, end: number) => void,
  onUnicodeSegment: (segment: string) => void,
): void {
  let segmentStart = 0;
  let hasNonAscii = false;
  const length = text.length;
  for (let index = 0; index <= length; index++) {
    const code = index < length ? text.charCodeAt(index) : ASCII_SPACE;
    if (isNonAscii(code)) {
      hasNonAscii = true;
      continue;
    }
    if (isAsciiAlphanumeric(code)) continue;
    if (index > segmentStart) {
      if (hasNonAscii) onUnicodeSegment(text.slice(segmentStart, index));
      else onAsciiRange(segmentStart, index);
    }
    segmentStart = index + 1;
    hasNonAscii = false;
  }
}

/**
 * Splits normalized text into tokens. No stop words, no stemming, no minimum length; tokens longer than
 * {@link MAX_TOKEN_LENGTH} code units are cut to that length. Empty input gives `[]`.
 */
export function tokenize(text: string | null | undefined): string[] {
  if (!text) return [];
  const source = String(text);
  if (ASCII_ONLY.test(source)) return tokenizeAscii(source);
  const tokens: string[] = [];
  const pushAscii = (start: number, end: number): void => {
    tokens.push(source.slice(start, end).toLowerCase());
  };
  forEachSegment(
    source,
    (start, end) => scanAsciiTokens(source, pushAscii, start, end),
    (segment) => {
      for (const token of capTokens(splitNormalized(normalizeText(segment)))) tokens.push(token);
    },
  );
  return tokens;
}

function splitNormalized(normalized: string): string[] {
  return normalized === "" ? [] : normalized.split(" ");
}

function capTokens(tokens: string[]): string[] {
  for (let index = 0; index < tokens.length; index++) {
    const token = tokens[index]!;
    if (token.length > MAX_TOKEN_LENGTH) tokens[index] = capTokenLength(token);
  }
  return tokens;
}

const ASCII_SEPARATOR_RUN = /[^A-Za-z0-9]+/g;

/**
 * The phrase key of pure-ASCII text in which no identifier split applies and no token is over the length cap,
 * computed with native string operations (separator runs become one space, ends trimmed, lowercased); otherwise
 * `undefined`. Ids, titles and aliases are mostly such text, and the snapshot keys every one of them.
 */
function simpleAsciiPhraseKey(text: string): string | undefined {
  // Class of the previous character: 0 separator, 1 lowercase letter or digit, 2 capital.
  let previous = 0;
  let run = 0;
  let hasSeparator = false;
  let hasCapital = false;
  const length = text.length;
  for (let index = 0; index < length; index++) {
    const code = text.charCodeAt(index);
    if (isNonAscii(code)) return undefined;
    if (isAsciiUpper(code)) {
      if (previous === 1) return undefined;
      if (previous === 2) {
        const next = index + 1 < length ? text.charCodeAt(index + 1) : 0;
        if (isAsciiLower(next)) return undefined;
      }
      previous = 2;
      hasCapital = true;
      run++;
    } else if (isAsciiLowerOrDigit(code)) {
      previous = 1;
      run++;
    } else {
      previous = 0;
      run = 0;
      hasSeparator = true;
      continue;
    }
    if (run > MAX_TOKEN_LENGTH) return undefined;
  }
  const key = hasSeparator ? text.replace(ASCII_SEPARATOR_RUN, " ").trim() : text;
  return hasCapital ? key.toLowerCase() : key;
}

/** The phrase key of one text: its tokens joined by single spaces (`""` when it has none). */
export function phraseKey(text: string | null | undefined): string {
  if (!text) return "";
  const source = String(text);
  return simpleAsciiPhraseKey(source) ?? tokenize(source).join(" ");
}

/**
 * Normalizes a list of phrases, dropping empty results and duplicates and keeping first-seen order:
 * `["Multi-Step Flow", "multi step flow", ""]` → `["multi step flow"]`.
 */
export function normalizePhrases(list: readonly (string | null | undefined)[]): string[] {
  const phrases: string[] = [];
  // Lists are short (an id and a title, or one entry's aliases): a linear check beats hashing.
  const seen = list.length > 8 ? new Set<string>() : null;
  for (const item of list) {
    const key = phraseKey(item);
    if (key === "" || (seen ? seen.has(key) : phrases.includes(key))) continue;
    seen?.add(key);
    phrases.push(key);
  }
  return phrases;
}

/** Number of words of a phrase key. */
export function phraseWordCount(key: string): number {
  if (key === "") return 0;
  let count = 1;
  for (let index = 0; index < key.length; index++) if (key.charCodeAt(index) === ASCII_SPACE) count++;
  return count;
}
