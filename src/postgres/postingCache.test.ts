/** The posting cache: bounded by bytes, least recently used terms forgotten first, keys per generation. */
import { describe, expect, it } from "vitest";
import { defaultPostingCacheBytes, listUpperBound, PostingCache, termPostings } from "./postingCache.js";

/** A term's postings with one list of `count` postings (12 bytes each, plus the fixed overhead). */
function postings(count: number) {
  const docs = Int32Array.from({ length: count }, (_, index) => index);
  const contributions = new Float64Array(count).fill(1);
  return termPostings([{ docs, contributions, upper: 1 }, null, null, null, null, null]);
}

describe("PostingCache", () => {
  it("keeps the most recently used terms within its byte limit", () => {
    const one = postings(100);
    const cache = new PostingCache(one.bytes * 2);
    cache.set("a", one);
    cache.set("b", postings(100));
    expect(cache.get("a")).toBe(one); // "a" is now the most recently used
    cache.set("c", postings(100));
    expect(cache.has("b")).toBe(false);
    expect(cache.has("a") && cache.has("c")).toBe(true);
    expect(cache.bytes).toBe(one.bytes * 2);
    expect(cache.counts).toEqual({ hits: 1, misses: 0 });
    expect(cache.get("b")).toBeUndefined();
    expect(cache.counts.misses).toBe(1);
  });

  it("replaces a key without counting it twice, and never keeps what exceeds the limit or with limit 0", () => {
    const cache = new PostingCache(postings(10).bytes * 3);
    cache.set("a", postings(10));
    cache.set("a", postings(10));
    expect(cache.size).toBe(1);
    expect(cache.bytes).toBe(postings(10).bytes);
    cache.set("big", postings(1_000));
    expect(cache.has("big")).toBe(false);
    const disabled = new PostingCache(0);
    disabled.set("a", postings(1));
    expect(disabled.size).toBe(0);
  });

  it("keys a term per generation and content key, with a short prefix", () => {
    const cache = new PostingCache(1_000);
    const prefix = cache.prefix(1, "k");
    expect(cache.prefix(1, "k")).toBe(prefix);
    expect(prefix.length).toBeLessThan(4);
    expect(cache.prefix(2, "k")).not.toBe(prefix);
    expect(cache.prefix(1, "other")).not.toBe(prefix);
    // No ambiguity between where the generation, the content key and the term end, whatever they hold.
    expect(cache.prefix(1, "a\u0000b")).not.toBe(cache.prefix(1, "a"));
    expect(cache.prefix(12, "k")).not.toBe(cache.prefix(1, "2:k"));
    expect(`${cache.prefix(1, "k")}1:x`).not.toBe(`${cache.prefix(11, "k")}x`);
  });

  it("bounds a list by its largest contribution, or turns pruning off for negative or NaN ones", () => {
    expect(listUpperBound(Float64Array.of(0.5, 2, 1))).toBe(2);
    expect(listUpperBound(Float64Array.of(0.5, -1))).toBe(Number.POSITIVE_INFINITY);
    expect(listUpperBound(Float64Array.of(Number.NaN))).toBe(Number.POSITIVE_INFINITY);
  });

  it("sizes its default limit for the generation served: 64 MiB up to 262,144 entries, 32 MiB at a million", () => {
    const mebibytes = (bytes: number) => bytes / 1024 ** 2;
    expect(mebibytes(defaultPostingCacheBytes(0))).toBe(64);
    expect(mebibytes(defaultPostingCacheBytes(100_000))).toBe(64);
    expect(mebibytes(defaultPostingCacheBytes(262_144))).toBe(64);
    expect(mebibytes(defaultPostingCacheBytes(400_000))).toBeCloseTo(41.94, 2);
    expect(mebibytes(defaultPostingCacheBytes(524_288))).toBe(32);
    expect(mebibytes(defaultPostingCacheBytes(699_051))).toBe(24);
    expect(mebibytes(defaultPostingCacheBytes(1_000_000))).toBe(24);
    expect(mebibytes(defaultPostingCacheBytes(10_000_000))).toBe(24);
    for (let entries = 1; entries < 4_000_000; entries = Math.ceil(entries * 1.7)) {
      expect(defaultPostingCacheBytes(entries + 1)).toBeLessThanOrEqual(defaultPostingCacheBytes(entries));
    }
    const cache = new PostingCache("auto");
    expect(mebibytes(cache.limitBytes)).toBe(64);
    cache.set("a", postings(10));
    cache.fitTo(100_000);
    // Unchanged limit: nothing forgotten.
    expect(cache.has("a")).toBe(true);
    cache.fitTo(1_000_000);
    expect(cache.limitBytes).toBe(defaultPostingCacheBytes(1_000_000));
    expect(cache.size).toBe(0);
    // A byte count the host gave is kept, whatever the generation.
    const fixed = new PostingCache(64 * 1024 ** 2);
    fixed.fitTo(1_000_000);
    expect(mebibytes(fixed.limitBytes)).toBe(64);
    const off = new PostingCache(0);
    off.fitTo(10);
    expect(off.limitBytes).toBe(0);
  });

  it("keeps frequent lists' coded bytes within half its limit, forgetting the terms' lists first", () => {
    const term = postings(100); // 1,360 bytes
    const cache = new PostingCache(term.bytes * 4);
    const prefix = cache.prefix(1, "k");
    const key = PostingCache.codedKey(prefix, "w0", 2);
    // Never a term's key, whatever the term; other fields and generations have their own.
    expect(key).not.toBe(`${prefix}w0`);
    expect(PostingCache.codedKey(prefix, "w0", 3)).not.toBe(key);
    expect(PostingCache.codedKey(cache.prefix(2, "k"), "w0", 2)).not.toBe(key);
    for (let index = 0; index < 4; index++) cache.set(`${prefix}t${index}`, postings(100));
    const coded = new Uint8Array(1_000).fill(7);
    cache.setCoded(key, coded);
    expect(cache.getCoded(key)).toBe(coded);
    expect(cache.get(key)).toBeUndefined(); // not a term's lists
    // The coded bytes took the room of the least recently used terms.
    expect(cache.bytes).toBeLessThanOrEqual(term.bytes * 4);
    expect(cache.has(`${prefix}t0`)).toBe(false);
    expect(cache.has(`${prefix}t3`)).toBe(true);
    // A term set later never pushes coded bytes out; coded bytes beyond half the limit forget the oldest coded.
    cache.set(`${prefix}t4`, postings(100));
    expect(cache.getCoded(key)).toBe(coded);
    cache.setCoded(PostingCache.codedKey(prefix, "w1", 2), new Uint8Array(1_000));
    cache.setCoded(PostingCache.codedKey(prefix, "w2", 2), new Uint8Array(1_000));
    expect(cache.getCoded(key)).toBeUndefined();
    expect(cache.bytes).toBeLessThanOrEqual(term.bytes * 4);
    cache.setCoded(PostingCache.codedKey(prefix, "big", 0), new Uint8Array(term.bytes * 3)); // over half
    expect(cache.getCoded(PostingCache.codedKey(prefix, "big", 0))).toBeUndefined();
    const off = new PostingCache(0);
    off.setCoded(key, coded);
    expect(off.getCoded(key)).toBeUndefined();
  });

  it("keeps one partial-sum buffer between deferring turns, counted in its bytes, before the terms' lists", () => {
    const buffer = new Float64Array(1000);
    const term = postings(100);
    const cache = new PostingCache(term.bytes * 20);
    expect(cache.takeScratch(1000)).toBeUndefined();
    cache.keepScratch(buffer);
    expect(cache.bytes).toBeGreaterThanOrEqual(8000);
    expect(cache.get("scratch")).toBeUndefined(); // not a term's lists
    expect(cache.takeScratch(999)).toBeUndefined(); // another generation's size
    expect(cache.takeScratch(1000)).toBe(buffer);
    expect(cache.takeScratch(1000)).toBeUndefined(); // taken out
    expect(cache.bytes).toBe(0);
    cache.keepScratch(buffer);
    // Terms' lists filling the cache give way to the buffer (their oldest forgotten), and so do they when it
    // comes back while they fill the cache.
    for (let index = 0; index < 20; index++) cache.set(`0:${index}`, postings(100));
    expect(cache.bytes).toBeLessThanOrEqual(term.bytes * 20);
    expect(cache.has("0:19")).toBe(true);
    expect(cache.has("0:0")).toBe(false);
    expect(cache.takeScratch(1000)).toBe(buffer);
    for (let index = 0; index < 20; index++) cache.set(`0:${index}`, postings(100));
    expect(cache.has("0:0")).toBe(true);
    cache.keepScratch(buffer);
    expect(cache.has("0:0")).toBe(false);
    expect(cache.bytes).toBeLessThanOrEqual(term.bytes * 20);
    // Coded lists filling their half leave it too.
    const prefix = cache.prefix(1, "key");
    for (let index = 0; index < 20; index++)
      cache.setCoded(PostingCache.codedKey(prefix, `t${index}`, 0), new Uint8Array(term.bytes));
    expect(cache.bytes).toBeLessThanOrEqual(term.bytes * 20);
    expect(cache.takeScratch(1000)).toBe(buffer);
    const small = new PostingCache(16000);
    small.keepScratch(buffer); // larger than the half the coded lists leave
    expect(small.takeScratch(1000)).toBeUndefined();
    const off = new PostingCache(0);
    off.keepScratch(buffer);
    expect(off.takeScratch(1000)).toBeUndefined();
  });
});
