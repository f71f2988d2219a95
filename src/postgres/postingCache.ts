/**
 * The decoded postings of terms, as turns fetched them (each list's contributions coded: `codedLists.ts`), kept
 * for the next turns of the same generation: a least-recently-used map bounded by bytes (option `postingCacheBytes`; 0 keeps nothing). Keys carry the
 * generation and its content key, so a new generation never reads an older one's postings (its entries'
 * dense ids and contributions differ); the older generation's terms simply age out. It also keeps a deferring
 * turn's partial-sum buffer, and within half of its limit the coded bytes of the frequent lists such turns read
 * whole only to sum (`deferredLists.ts`), under the same bound: the buffer within the other half, before the
 * terms' lists (which get what the two leave).
 */
import { LruCache } from "../knowledge/lruCache.js";
import type { ScoringList } from "../knowledge/scoring.js";

/**
 * One posting list of a term in one field (or BM25F's combined list): documents ascending, contributions (as
 * fetched, or coded once cached: `codedLists.ts`).
 */
export type FetchedList = ScoringList & {
  /** The largest contribution (`Infinity` when one is negative or not a number: no pruning on this list). */
  upper: number;
};

/** A term's lists by field number (0–4, and 5 for BM25F's combined scores); absent fields are null. */
export type TermPostings = {
  lists: (FetchedList | null)[];
  /** Bytes held (arrays plus a fixed overhead), what the cache counts. */
  bytes: number;
};

/** A frequent list's coded bytes, as a deferring turn reads it whole only to sum it (`deferredLists.ts`). */
type Coded = { coded: Uint8Array; bytes: number };

/**
 * The share of the limit that frequent lists' coded bytes may hold. They are kept apart from the terms' lists:
 * at a million entries the same few dozen frequent lists are read by most history-heavy turns (an LRU of 12 MiB
 * of them would have served about half of the 197 MB that 60 turns read), where 1.5–2% of the lookups of terms'
 * lists hit, so in one recency order the rare terms' lists would push them out.
 */
const CODED_SHARE = 0.5;

/** Bytes counted per cached term beyond its arrays (key, objects, map entry). */
const ENTRY_OVERHEAD = 160;

/** The default limit for generations of up to {@link FULL_CACHE_ENTRIES} entries (option `postingCacheBytes` unset). */
const FULL_CACHE_BYTES = 64 * 1024 * 1024;
/**
 * Entries up to which the default limit is {@link FULL_CACHE_BYTES}: at 100,000 entries the benchmark's 300 turns
 * touch about 64 MB of lists (coded), which that limit holds, and 16 clients over 2 readers sustain 392 turns/s on
 * it. A workload's lists grow with the generation (their postings with its entries), so past this size a limit of
 * that order holds a small and shrinking part of them: at 1,000,000 entries 64 MiB answered 8% of the lookups (and 40 MiB served turns as fast).
 */
const FULL_CACHE_ENTRIES = 262_144;
/**
 * The smallest default limit, whatever the generation's size. At 1,000,000 entries, 30 turns in order were as fast
 * with 40 MiB as with 64 MiB (p50 551 and 665 ms against 881 and 644 ms, load 8); since the turns that defer frequent
 * lists keep their 8 MB partial-sum buffer in the cache too, 32 MiB left a reader's heap at 99–101 MB after 60
 * turns and a minute of 16 clients, 24 MiB at 92 MB with the same turn times (p50 66 ms both, 15.4 and 15.1 turns/s;
 * 2.1% and 1.5% of the lookups hit).
 */
const MIN_DEFAULT_CACHE_BYTES = 24 * 1024 * 1024;

/**
 * The posting cache's default limit (option `postingCacheBytes` unset) for a generation of `entryCount` entries:
 * 64 MiB up to 262,144 entries, then in inverse proportion to the entry count (where a cache of that order holds
 * a shrinking part of a workload's lists, its memory buys few hits: a reader is meant to hold little), down to
 * 24 MiB (from 699,051 entries).
 */
export function defaultPostingCacheBytes(entryCount: number): number {
  if (!(entryCount > FULL_CACHE_ENTRIES)) return FULL_CACHE_BYTES;
  return Math.max(MIN_DEFAULT_CACHE_BYTES, Math.floor((FULL_CACHE_BYTES * FULL_CACHE_ENTRIES) / entryCount));
}

/** The largest contribution of a list, `Infinity` when any is negative or not a number (as `scoring.ts` bounds). */
export function listUpperBound(contributions: Float64Array): number {
  let bound = 0;
  for (let position = 0; position < contributions.length; position++) {
    const contribution = contributions[position]!;
    if (contribution > bound) bound = contribution;
    else if (!(contribution >= 0)) return Number.POSITIVE_INFINITY;
  }
  return bound;
}

/** A term's postings from its fetched lists (field → docs and contributions). */
export function termPostings(lists: (FetchedList | null)[]): TermPostings {
  let bytes = ENTRY_OVERHEAD;
  for (const list of lists)
    if (list) bytes += list.docs.byteLength + list.contributions.byteLength + (list.codes?.byteLength ?? 0);
  return { lists, bytes };
}

/** The postings cache of one backend (shared by its generations and turns), bounded by bytes (`LruCache`). */
export class PostingCache {
  private entries: LruCache<string, TermPostings>;
  /** Frequent lists' coded bytes (within {@link CODED_SHARE} of the limit; the terms' lists get the rest). */
  private coded: LruCache<string, Coded>;
  /** The partial-sum buffer kept between deferring turns (see {@link keepScratch}); null when none is. */
  private scratch: Float64Array | null = null;
  /** Key prefix serials by generation and content key (one per generation a reader served). */
  private readonly serials = new Map<string, number>();
  /** Lookups that found their term, and that did not (for benchmarks and tests). */
  readonly counts = { hits: 0, misses: 0 };

  /**
   * @param limit Most bytes held (0 disables the cache), or `"auto"`: the default for the size of the generation
   *   served last ({@link defaultPostingCacheBytes}, set by {@link fitTo}; 64 MiB until then).
   */
  constructor(private readonly limit: number | "auto") {
    const limitBytes = limit === "auto" ? FULL_CACHE_BYTES : limit;
    this.entries = PostingCache.entriesWithin(limitBytes);
    this.coded = PostingCache.codedWithin(limitBytes);
  }

  private static entriesWithin(limitBytes: number): LruCache<string, TermPostings> {
    return new LruCache(limitBytes, undefined, (postings) => postings.bytes);
  }

  private static codedWithin(limitBytes: number): LruCache<string, Coded> {
    return new LruCache(Math.floor(limitBytes * CODED_SHARE), undefined, (coded) => coded.bytes);
  }

  /** Bytes the kept partial-sum buffer counts (0 when none is kept). */
  private get scratchBytes(): number {
    return this.scratch === null ? 0 : this.scratch.byteLength + ENTRY_OVERHEAD;
  }

  /** Forgets the least recently used terms' lists until they fit beside the coded lists and partial-sum buffer. */
  private trim(): void {
    const room = this.entries.limit - this.coded.weight - this.scratchBytes;
    while (this.entries.weight > room) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.entries.delete(oldest.value);
    }
  }

  /** Most bytes held; 0: the cache is off. */
  get limitBytes(): number {
    return this.entries.limit;
  }

  /**
   * A generation of `entryCount` entries is served: with the `"auto"` limit, the limit becomes its default size
   * (terms held are forgotten when it changes: they are another generation's, whose keys differ anyway).
   */
  fitTo(entryCount: number): void {
    if (this.limit !== "auto") return;
    const limitBytes = defaultPostingCacheBytes(entryCount);
    if (limitBytes === this.entries.limit) return;
    this.entries = PostingCache.entriesWithin(limitBytes);
    this.coded = PostingCache.codedWithin(limitBytes);
    this.scratch = null;
  }

  /**
   * The key prefix of generation `generation` published with `contentKey` (a term's key is the prefix then the
   * term): a short serial per generation and content, so that keys are short to build and to hash.
   */
  prefix(generation: number, contentKey: string): string {
    // Length-prefixed: unambiguous.
    const name = `${generation}:${contentKey.length}:${contentKey}`;
    let serial = this.serials.get(name);
    if (serial === undefined) {
      serial = this.serials.size;
      this.serials.set(name, serial);
    }
    return `${serial}:`;
  }

  /** The postings of `key`, marking them most recently used; undefined when not held. */
  get(key: string): TermPostings | undefined {
    const found = this.entries.get(key);
    if (found === undefined) {
      this.counts.misses++;
      return undefined;
    }
    this.counts.hits++;
    return found;
  }

  /**
   * The key of a frequent list's coded bytes (`term` in `field`, generation key prefix `prefix`): the prefix's
   * serial then a semicolon, where a term's key has a colon, so that the two never meet.
   */
  static codedKey(prefix: string, term: string, field: number): string {
    return `${prefix.slice(0, -1)};${field}:${term}`;
  }

  /** A frequent list's coded bytes kept under `key` (see {@link codedKey}), marking them most recently used. */
  getCoded(key: string): Uint8Array | undefined {
    return this.coded.get(key)?.coded;
  }

  /**
   * Keeps a frequent list's coded bytes (a copy the caller made) under `key`: the least recently used coded lists
   * are forgotten beyond their share of the limit, then the least recently used terms' lists beyond the rest.
   */
  setCoded(key: string, coded: Uint8Array): void {
    const bytes = coded.byteLength + ENTRY_OVERHEAD;
    if (bytes > this.coded.limit) return;
    this.coded.set(key, { coded, bytes });
    this.trim();
  }

  /**
   * The partial-sum buffer a deferring turn kept (zeroed, of `length` entries), taken out of the cache; undefined
   * when none is held. Kept between turns because fresh memory costs page faults (8 MB at a million entries: 2,000
   * faults, 30-45 ms of a turn on this VM), and in the cache because its bytes count against the same limit as the
   * lists.
   */
  takeScratch(length: number): Float64Array | undefined {
    const held = this.scratch;
    if (held === null || held.length !== length) return undefined;
    this.scratch = null;
    return held;
  }

  /**
   * Keeps `buffer` (zeroed) for the next deferring turn, within the half of the limit the coded lists leave: the
   * terms' lists give way to it, not the other way round. Forgotten earlier (when it was a term of the LRU), the
   * buffer was the least recently used item whenever a turn's lists filled the cache, and each such turn faulted
   * 8 MB of fresh memory in again.
   */
  keepScratch(buffer: Float64Array): void {
    if (buffer.byteLength + ENTRY_OVERHEAD > this.entries.limit - this.coded.limit) return;
    this.scratch = buffer;
    this.trim();
  }

  /** Whether `key` is held (its recency unchanged, not counted as a lookup). */
  has(key: string): boolean {
    return this.entries.peek(key) !== undefined;
  }

  /** Keeps `postings` under `key`, then forgets the least recently used terms beyond the limit. */
  set(key: string, postings: TermPostings): void {
    // Larger than the whole cache: not kept, and nothing else is dropped for it.
    if (postings.bytes > this.limitBytes) return;
    this.entries.set(key, postings);
    this.trim();
  }

  /** Bytes held (terms' lists, the partial-sum buffer, frequent lists' coded bytes). */
  get bytes(): number {
    return this.entries.weight + this.coded.weight + this.scratchBytes;
  }

  /** Terms held. */
  get size(): number {
    return this.entries.size;
  }
}
