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

describe("LruCache bounded by weight", () => {
  it("keeps the total weight within the limit, least recently used dropped first", () => {
    const evicted: string[] = [];
    const cache = new LruCache<string, string>(
      10,
      (key) => evicted.push(key),
      (value) => value.length,
    );
    cache.set("a", "xxxx");
    cache.set("b", "xxxx");
    expect(cache.weight).toBe(8);
    cache.get("a");
    cache.set("c", "xxx");
    expect([...cache.keys()]).toEqual(["a", "c"]);
    expect(evicted).toEqual(["b"]);
    expect(cache.weight).toBe(7);
  });

  it("re-setting a key replaces its weight; an entry heavier than the limit is not kept", () => {
    const cache = new LruCache<string, string>(10, undefined, (value) => value.length);
    cache.set("a", "xxxxxx");
    cache.set("a", "xx");
    expect(cache.weight).toBe(2);
    cache.set("b", "xxxxxxxx");
    expect([...cache.keys()]).toEqual(["a", "b"]);
    expect(cache.weight).toBe(10);
    cache.set("c", "x".repeat(11));
    expect(cache.size).toBe(0);
    expect(cache.weight).toBe(0);
    cache.set("d", "xxx");
    expect(cache.delete("d")).toBe(true);
    expect(cache.weight).toBe(0);
  });
});
