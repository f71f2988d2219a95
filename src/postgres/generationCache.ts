/**
 * What a reader keeps of one generation's entries between turns: entry ids by dense id (a turn names its top K and
 * phrase hits) and the selected entries with their relations (a turn reads its selection). A generation's rows
 * never change, so a kept value is always exact; a new generation has its own searcher and so its own caches.
 * Bounded by count (ids, phrase keys) or size (entries), least recently used forgotten first (`LruCache`, the one every bounded cache uses).
 */

/** Entry ids kept per generation (about 100 bytes each). */
export const KEPT_IDS = 65_536;
/**
 * Characters of entry text (their JSON) kept per generation with the selected entries and their relations' targets
 * (about 1.2 bytes of heap per character once parsed). Bounded by size, not count: the benchmark's 300 turns select
 * and relate 5,817 entries (17.2 M characters, 20 MB parsed), and a count bound of 4,096 held too few for that
 * cycle, so a least-recently-used cache forgot every entry before its next use and each turn read its entries again.
 */
export const KEPT_ENTRY_CHARACTERS = 20 * 1024 * 1024;
/** Phrase keys kept per generation, with the entries each names (a turn looks up its query's n-grams). */
export const KEPT_PHRASE_KEYS = 65_536;
