import { describe, expect, it } from "vitest";
import { LruCache } from "./lruCache.js";

describe("LruCache", () => {
  it("drops the least recently used entry beyond its limit, and get() counts as a use", () => {
    const evicted: string[] = [];
    const cache = new LruCache<string, number>(2, (key) => evicted.push(key));
    cache.set("a", 1);
    cache.set("b", 2);
    expect(cache.get("a")).toBe(1);
    cache.set("c", 3);
    expect([...cache.keys()]).toEqual(["a", "c"]);
    expect(evicted).toEqual(["b"]);
  });

  it("peek() leaves the order alone; set() on a present key refreshes it without evicting", () => {
    const evicted: string[] = [];
    const cache = new LruCache<string, number>(2, (key) => evicted.push(key));
    cache.set("a", 1);
    cache.set("b", 2);
    expect(cache.peek("a")).toBe(1);
    cache.set("a", 10);
    expect([...cache.keys()]).toEqual(["b", "a"]);
    cache.set("c", 3);
    expect([...cache.keys()]).toEqual(["a", "c"]);
    expect(evicted).toEqual(["b"]);
  });

  it("with limit 0 keeps nothing; delete and clear do not report evictions", () => {
    const evicted: string[] = [];
    const empty = new LruCache<string, number>(0, (key) => evicted.push(key));
    empty.set("a", 1);
    expect(empty.size).toBe(0);
    expect(evicted).toEqual(["a"]);
    const cache = new LruCache<string, number>(3, (key) => evicted.push(key));
    cache.set("x", 1);
    cache.set("y", 2);
    expect(cache.delete("x")).toBe(true);
    cache.clear();
    expect(cache.size).toBe(0);
    expect(evicted).toEqual(["a"]);
  });
});
