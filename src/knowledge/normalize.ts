/**
 * Text normalization shared by indexing and querying. Whatever is indexed went through exactly the same
 * pipeline as the query, so behaviour is consistent for every script, including the lossy cases (Hangul stays
 * decomposed, Indic vowel signs are removed) that NeuroLink has too.
 */
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
  const code = token.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return token.slice(0, end);
}

/**
 * Splits normalized text into tokens. No stop words, no stemming, no minimum length; tokens longer than
 * {@link MAX_TOKEN_LENGTH} code units are cut to that length. Empty input gives `[]`.
 */
export function tokenize(text: string | null | undefined): string[] {
  const normalized = normalizeText(text);
  if (normalized === "") return [];
  const tokens = normalized.split(" ");
  for (let index = 0; index < tokens.length; index++) {
    const token = tokens[index]!;
    if (token.length > MAX_TOKEN_LENGTH) tokens[index] = capTokenLength(token);
  }
  return tokens;
}

/** The phrase key of one text: its tokens joined by single spaces (`""` when it has none). */
export function phraseKey(text: string | null | undefined): string {
  return tokenize(text).join(" ");
}

/**
 * Normalizes a list of phrases, dropping empty results and duplicates and keeping first-seen order:
 * `["Multi-Step Flow", "multi step flow", ""]` → `["multi step flow"]`.
 */
export function normalizePhrases(list: readonly (string | null | undefined)[]): string[] {
  const seen = new Set<string>();
  const phrases: string[] = [];
  for (const item of list) {
    const key = phraseKey(item);
    if (key === "" || seen.has(key)) continue;
    seen.add(key);
    phrases.push(key);
  }
  return phrases;
}

/** Number of words of a phrase key. */
export function phraseWordCount(key: string): number {
  if (key === "") return 0;
  let count = 1;
  for (let index = 0; index < key.length; index++) if (key.charCodeAt(index) === 32) count++;
  return count;
}
