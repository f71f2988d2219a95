/**
 * What a reader keeps of one generation's entries between turns: entry ids by dense id (a turn names its top K and
 * phrase hits) and the selected entries with their relations (a turn reads its selection). A generation's rows
 * never change, so a kept value is always exact; a new generation has its own searcher and so its own caches.
 * Bounded by count, least recently used forgotten first (`LruCache`, the one every bounded cache uses).
 */

/** Entry ids kept per generation (about 100 bytes each). */
export const KEPT_IDS = 65_536;
/** Selected entries kept per generation (parsed entries: a few KB each). */
export const KEPT_ENTRIES = 4_096;
/** Phrase keys kept per generation, with the entries each names (a turn looks up its query's n-grams). */
export const KEPT_PHRASE_KEYS = 65_536;
