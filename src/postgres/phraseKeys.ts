/**
 * A turn's phrase keys: the n-grams of the query's tokens, numbered in the in-memory phrase lookup's generation
 * order, and what each generation's reader keeps of them between turns (the entries each key names, or that the
 * generation has no such key). A generation's phrase table never changes, so a kept answer is exact; a turn looks
 * up in the database only the keys its reader does not hold, and a turn whose keys and lists are all held reads no
 * phrase statement at all.
 */
import { LruCache } from "../knowledge/lruCache.js";
import { KEPT_PHRASE_KEYS } from "./generationCache.js";
import type { PhraseHitRow } from "./turnRows.js";

/** One n-gram of a query: its number (`size × (tokens + 1) + start`, generation order) and its key. */
export type PhraseGram = { ord: number; key: string };

/** The entries (dense ids) a phrase key names exactly and as an alias; null: the generation has no such key. */
export type PhraseKeyHits = { exact: number[]; alias: number[] } | null;

/** A phrase hit before its entry id is known. */
export type PhraseHitDoc = Omit<PhraseHitRow, "id">;

/**
 * Most characters a turn's phrase keys may spell together. A long query against a generation with a long phrase
 * key has quadratically many long n-grams (1,024 tokens and a 1,024-word alias: half a million keys, billions of
 * characters): such a turn lets the database build its n-grams, as it always did, and keeps none.
 */
export const PHRASE_KEY_CHARACTERS = 1 << 18;

/**
 * The n-grams of `tokens` of one to `maxWords` words, by size then start, each numbered as `phraseHits`
 * (`turnRows.ts`) reads the numbers: tokens are letters and digits, so the joined words are the key. Null when
 * they would spell more than `budget` characters (counted before any is built).
 */
export function phraseGrams(
  tokens: readonly string[],
  maxWords: number,
  budget = PHRASE_KEY_CHARACTERS,
): PhraseGram[] | null {
  const count = tokens.length;
  const longest = Math.min(maxWords, count);
  // The characters of every n-gram (each word with its space), counted before any is built: the count stops at the
  // budget, so it costs at most as much as building the n-grams would.
  const ends = [0];
  for (const token of tokens) ends.push(ends.at(-1)! + token.length + 1);
  let characters = 0;
  for (let size = 1; size <= longest && characters <= budget; size++)
    for (let start = 0; start + size <= count && characters <= budget; start++)
      characters += ends[start + size]! - ends[start]!;
  if (characters > budget) return null;
  const grams: PhraseGram[] = [];
  for (let size = 1; size <= longest; size++)
    for (let start = 0; start + size <= count; start++)
      grams.push({ ord: size * (count + 1) + start, key: tokens.slice(start, start + size).join(" ") });
  return grams;
}

/** The phrase keys one generation's reader has looked up, least recently used forgotten first. */
export class PhraseKeys {
  private readonly kept = new LruCache<string, PhraseKeyHits>(KEPT_PHRASE_KEYS);

  /**
   * A turn's answers so far: each gram's key with its kept hits (marked as recently used), and the keys not
   * held, distinct, in first-occurrence order.
   */
  lookup(grams: readonly PhraseGram[]): { known: Map<string, PhraseKeyHits>; missing: string[] } {
    const known = new Map<string, PhraseKeyHits>();
    const missing: string[] = [];
    const asked = new Set<string>();
    for (const { key } of grams) {
      if (known.has(key) || asked.has(key)) continue;
      const kept = this.kept.get(key);
      if (kept === undefined) {
        asked.add(key);
        missing.push(key);
      } else known.set(key, kept);
    }
    return { known, missing };
  }

  /**
   * Records the answers for `missing` (the keys a statement looked up) from its hit rows (`ord`: the key's
   * position in `missing`, 1-based) into `known` and the kept keys: a key without a row names no entry.
   */
  record(missing: readonly string[], rows: readonly PhraseHitDoc[], known: Map<string, PhraseKeyHits>): void {
    const found = new Map<number, { exact: number[]; alias: number[] }>();
    for (const row of rows) {
      let hits = found.get(row.ord);
      if (!hits) {
        hits = { exact: [], alias: [] };
        found.set(row.ord, hits);
      }
      (row.kind === 1 ? hits.exact : hits.alias).push(row.doc);
    }
    for (const [position, key] of missing.entries()) {
      const hits = found.get(position + 1) ?? null;
      known.set(key, hits);
      this.kept.set(key, hits);
    }
  }

  /** The turn's phrase hits: every gram's entries (kind 1 exact, 2 alias) under the gram's number. */
  static hits(grams: readonly PhraseGram[], known: ReadonlyMap<string, PhraseKeyHits>): PhraseHitDoc[] {
    const hits: PhraseHitDoc[] = [];
    for (const { ord, key } of grams) {
      const found = known.get(key);
      if (!found) continue;
      for (const doc of found.exact) hits.push({ kind: 1, ord, doc });
      for (const doc of found.alias) hits.push({ kind: 2, ord, doc });
    }
    return hits;
  }
}
