import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { fewestHeapBytesAllocated } from "../../test/support/heapAllocation.js";
import { PhraseTrie } from "./phraseTrie.js";

function trieOf(keys: readonly string[]): PhraseTrie {
  const trie = new PhraseTrie();
  for (const key of new Set(keys)) trie.add(key);
  return trie;
}

/** NeuroLink's phrase lookup read literally: every n-gram by size, then start; each distinct one once; kept if it is a key. */
function bruteForce(keys: readonly string[], tokens: readonly string[]): string[] {
  const keySet = new Set(keys);
  const seen = new Set<string>();
  const found: string[] = [];
  for (let size = 1; size <= tokens.length; size++) {
    for (let start = 0; start + size <= tokens.length; start++) {
      const ngram = tokens.slice(start, start + size).join(" ");
      if (seen.has(ngram)) continue;
      seen.add(ngram);
      if (keySet.has(ngram)) found.push(ngram);
    }
  }
  return found;
}

const repeat = (word: string, count: number) => Array.from({ length: count }, () => word).join(" ");

describe("PhraseTrie", () => {
  it("finds keys that are prefixes of one another, in size-then-start order, each once", () => {
    const keys = ["a b c", "a", "a b", "b", "a b c d", "c d", "x y"];
    const tokens = ["c", "d", "a", "b", "c", "d", "a", "b", "x"];
    expect(trieOf(keys).match(tokens)).toEqual(["a", "b", "c d", "a b", "a b c", "a b c d"]);
    expect(trieOf(keys).match(tokens)).toEqual(bruteForce(keys, tokens));
  });

  it("gives the same result whatever the insertion order (leaves split at every depth)", () => {
    const keys = [
      repeat("t", 1),
      repeat("t", 5),
      repeat("t", 3),
      `${repeat("t", 3)} u`,
      repeat("t", 40),
      "t u",
    ];
    const tokens = [...repeat("t", 45).split(" "), "u", "t", "t", "t", "u"];
    const expected = bruteForce(keys, tokens);
    expect(expected.length).toBeGreaterThan(3);
    for (const order of [keys, keys.slice().reverse(), keys.slice().sort()])
      expect(trieOf(order).match(tokens)).toEqual(expected);
  });

  it("never matches keys that no query n-gram can equal, and they do not hide the others", () => {
    // Hand-assembled snapshots may hold keys that tokenization never produces.
    const keys = [" a", "a ", "a  b", "a\tb", "", "a b", "b\u0000", "a"];
    const trie = trieOf(keys);
    expect(trie.match(["a", "b"])).toEqual(["a", "a b"]);
    expect(trie.match(["b"])).toEqual([]);
    expect(trie.match([])).toEqual([]);
    expect(trieOf([]).match(["a"])).toEqual([]);
  });

  it("tokens are compared whole: a key token is not matched by its prefix or extension", () => {
    const trie = trieOf(["the end", "there", "th"]);
    expect(trie.match(["the", "ending", "there", "th", "e"])).toEqual(["there", "th"]);
    expect(trie.match(["the", "end"])).toEqual(["the end"]);
    // On a collapsed leaf the key is read character by character: "t" must not match the start of "tut".
    expect(trieOf(["u tut"]).match(["u", "t", "t"])).toEqual([]);
    expect(trieOf(["u tut", "u a"]).match(["u", "t", "t", "u", "tut"])).toEqual(["u tut"]);
  });

  it("keeps working past many table growths and after trimming", () => {
    const keys = Array.from({ length: 20_000 }, (_, index) => `k${index % 97} w${index} z`);
    const trie = trieOf(keys.slice(0, 5_000));
    // Trimming releases spare capacity only: keys added afterwards are found as before.
    trie.trimToSize();
    for (const key of keys.slice(5_000)) trie.add(key);
    trie.trimToSize();
    expect(trie.size).toBe(20_000);
    expect(trie.match(["k5", "w5", "z", "k2", "w19984", "z", "k2", "w5"])).toEqual([
      "k5 w5 z",
      "k2 w19984 z",
    ]);
  });

  it("equals every-n-gram lookup of the keys on random keys and queries (property)", () => {
    const seed = propertySeed("phrase trie vs brute force");
    // "tut" is "t" + one character + "t": a walk that skipped a key character where a space should be would match it.
    const word = fc.constantFrom("t", "t", "u", "the", "th", "e", "tut", "日本", "");
    const stem = fc.array(word, { maxLength: 12 });
    const keysArbitrary = stem.chain((shared) =>
      fc.array(
        fc.oneof(
          fc.array(word, { minLength: 1, maxLength: 6 }).map((words) => words.join(" ")),
          fc
            .tuple(fc.nat(shared.length), fc.array(word, { maxLength: 4 }))
            .map(([cut, tail]) => [...shared.slice(0, cut), ...tail].join(" ")),
          fc.tuple(word, fc.integer({ min: 1, max: 30 })).map(([w, count]) => repeat(w, count)),
        ),
        { maxLength: 25 },
      ),
    );
    const tokens = fc.array(fc.constantFrom("t", "u", "the", "th", "e", "日本"), { maxLength: 50 });
    fc.assert(
      fc.property(keysArbitrary, tokens, fc.boolean(), (keys, query, reversed) => {
        const trie = trieOf(reversed ? keys.slice().reverse() : keys);
        expect(trie.match(query)).toEqual(bruteForce(keys, query));
      }),
      { seed, numRuns: propertyRuns(300) },
    );
  });

  it("a trie loaded from its parts matches like the built one; a damaged edge table is an error where a walk reads it, checked whole before a key is added", () => {
    const keys = [
      ...new Set(Array.from({ length: 200 }, (_, index) => `w${index % 17} x${index % 5} y${index}`)),
    ];
    keys.push("w1", "w1 x1", "solo");
    const built = trieOf(keys);
    const { keys: exported, ...parts } = built.exportParts();
    const corrupt = (message: string) => new TypeError(`corrupt: ${message}`);
    const load = (changed: Partial<typeof parts> = {}) =>
      PhraseTrie.fromParts({ ...parts, ...changed }, exported.length, (index) => exported[index]!, corrupt);
    const queries = [
      ["w1", "x1", "y1", "w3", "x3", "y3"],
      ["solo", "w1"],
      ["nothing", "here"],
      keys.flatMap((key) => key.split(" ")).slice(0, 60),
    ];
    const intact = load();
    for (const query of queries) expect(intact.match(query)).toEqual(built.match(query));
    for (const key of keys) expect(intact.indexOf(key)).toBe(built.indexOf(key));
    const table = parts.table;
    // Every edge pointing past the nodes or keys: a walk that follows one throws instead of reading nowhere.
    const nowhere = load({
      table: table.map((value, index) =>
        index % 3 === 2 && table[index - 1] !== 0 ? (value >= 0 ? 1_000_000 : -1_000_000) : value,
      ),
    });
    expect(() => nowhere.match(["w1", "x1"])).toThrow(TypeError);
    expect(() => nowhere.indexOf("solo")).toThrow(TypeError);
    // No empty slot (the free slots given a parent no walk is at): a walk that misses never ends by itself.
    const full = load({
      table: table.map((value, index) => (index % 3 === 1 && value === 0 ? 1_000_000 : value)),
    });
    expect(() => full.match(["absent"])).toThrow(TypeError);
    expect(() => full.indexOf("absent")).toThrow(TypeError);
    // A wrong edge count cannot mislead a walk, but would let an added key fill the table: checked before adding.
    const miscounted = load({ edgeCount: 0 });
    expect(miscounted.match(queries[0]!)).toEqual(built.match(queries[0]!));
    expect(() => miscounted.add("new key")).toThrow(TypeError);
    // Intact parts grow like a built trie.
    intact.add("new key");
    expect(intact.match(["a", "new", "key"])).toEqual(["new key"]);
    expect(intact.indexOf("new key")).toBe(exported.length);
  });

  it("a loaded trie decodes only the keys its walks read, each once, and keeps them when a key is added", () => {
    const keys = Array.from({ length: 30_000 }, (_, index) => `k${index % 97} m${index}`);
    const built = trieOf(keys);
    const { keys: exported, ...parts } = built.exportParts();
    const decoded: number[] = [];
    const load = () =>
      PhraseTrie.fromParts(parts, exported.length, (index) => {
        decoded.push(index);
        return exported[index]!;
      });
    const query = ["k5", "m5", "k6", "m1000"];
    // Loading and a first walk allocate far less than an array of every key index would (240 KB).
    const { result: trie, bytes } = fewestHeapBytesAllocated(
      3,
      () => null,
      () => {
        const loaded = load();
        loaded.match(query);
        return loaded;
      },
    );
    expect(bytes).toBeLessThan(60_000);
    decoded.length = 0;
    expect(trie.size).toBe(exported.length);
    expect(trie.match(query)).toEqual(built.match(query));
    const afterWalk = decoded.length;
    expect(afterWalk).toBeLessThan(100);
    trie.add("new key");
    expect(trie.size).toBe(exported.length + 1);
    expect(trie.match(query)).toEqual(built.match(query));
    expect(trie.match(["a", "new", "key"])).toEqual(["new key"]);
    expect(decoded.length).toBeLessThan(200);
    expect(new Set(decoded).size).toBe(decoded.length);
  });
});
