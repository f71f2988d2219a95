/**
 * The decoded postings of terms, as turns fetched them (each list's contributions coded: `codedLists.ts`), kept
 * for the next turns of the same generation: a least-recently-used map bounded by bytes (option `postingCacheBytes`; 0 keeps nothing). Keys carry the
 * generation and its content key, so a new generation never reads an older one's postings (its entries'
 * dense ids and contributions differ); the older generation's terms simply age out.
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

/** What the cache holds under a key: a term's lists, or the partial-sum buffer kept between deferring turns. */
type Held = TermPostings | { scratch: Float64Array; bytes: number };

/** The partial-sum buffer's key (term keys start with a serial and a colon). */
const SCRATCH_KEY = "scratch";

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
  private entries: LruCache<string, Held>;
  /** Key prefix serials by generation and content key (one per generation a reader served). */
  private readonly serials = new Map<string, number>();
  /** Lookups that found their term, and that did not (for benchmarks and tests). */
  readonly counts = { hits: 0, misses: 0 };

  /**
   * @param limit Most bytes held (0 disables the cache), or `"auto"`: the default for the size of the generation
   *   served last ({@link defaultPostingCacheBytes}, set by {@link fitTo}; 64 MiB until then).
   */
  constructor(private readonly limit: number | "auto") {
    this.entries = PostingCache.entriesWithin(limit === "auto" ? FULL_CACHE_BYTES : limit);
  }

  private static entriesWithin(limitBytes: number): LruCache<string, Held> {
    return new LruCache(limitBytes, undefined, (postings) => postings.bytes);
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
    if (limitBytes !== this.entries.limit) this.entries = PostingCache.entriesWithin(limitBytes);
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
    if (found === undefined || !("lists" in found)) {
      this.counts.misses++;
      return undefined;
    }
    this.counts.hits++;
    return found;
  }

  /**
   * The partial-sum buffer a deferring turn kept (zeroed, of `length` entries), taken out of the cache; undefined
   * when none is held. Kept between turns because fresh memory costs page faults (8 MB at a million entries: up to
   * 100 ms on a VM), and in the cache because its bytes count against the same limit as the lists.
   */
  takeScratch(length: number): Float64Array | undefined {
    const held = this.entries.peek(SCRATCH_KEY);
    if (held === undefined || !("scratch" in held) || held.scratch.length !== length) return undefined;
    this.entries.delete(SCRATCH_KEY);
    return held.scratch;
  }

  /** Keeps `buffer` (zeroed) for the next deferring turn, forgotten like a term when the limit needs its bytes. */
  keepScratch(buffer: Float64Array): void {
    const bytes = buffer.byteLength + ENTRY_OVERHEAD;
    if (bytes > this.limitBytes) return;
    this.entries.set(SCRATCH_KEY, { scratch: buffer, bytes });
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
  }

  /** Bytes held. */
  get bytes(): number {
    return this.entries.weight;
  }

  /** Terms held. */
  get size(): number {
    return this.entries.size;
  }
}
