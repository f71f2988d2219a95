import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { registryArbitrary } from "../../test/property/arbitraries.js";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import type { NormalizedKnowledgeEntry } from "../types/knowledge.js";
import { PhraseListMap, RelationMap } from "./derivedMaps.js";
import { buildIndexSnapshot } from "./knowledgeIndex.js";
import { normalizePhrases, phraseKey } from "./normalize.js";
import { PhraseTrie } from "./phraseTrie.js";
import { normalizeAndValidate } from "./resolve.js";

/** The phrase and relation maps as a `Map` and a `Set` per key, filled entry by entry (what builds used to hold). */
function referenceMaps(entries: readonly NormalizedKnowledgeEntry[]) {
  const exact = new Map<string, Set<string>>();
  const alias = new Map<string, Set<string>>();
  const relations = new Map<string, string[]>();
  const file = (map: Map<string, Set<string>>, key: string, id: string) => {
    if (!map.has(key)) map.set(key, new Set());
    map.get(key)!.add(id);
  };
  for (const entry of [...entries].sort((left, right) => (left.id < right.id ? -1 : 1))) {
    for (const key of normalizePhrases([entry.id, entry.title])) file(exact, key, entry.id);
    for (const value of entry.aliases) {
      const key = phraseKey(value);
      if (key !== "") file(alias, key, entry.id);
    }
    const related = [
      ...entry.relatedEntryIds,
      ...(entry.parentEntryId !== undefined ? [entry.parentEntryId] : []),
    ];
    if (related.length > 0) relations.set(entry.id, related);
  }
  return { exact, alias, relations };
}

const asSortedArrays = (map: ReadonlyMap<string, Iterable<string>>) =>
  [...map].map(([key, ids]) => [key, [...ids]]).sort((left, right) => (left[0]! < right[0]! ? -1 : 1));

describe("snapshot maps derived from compact lists", () => {
  it("a built snapshot's phrase and relation maps equal a Set per key, ids in entry order (property)", () => {
    const seed = propertySeed("derived snapshot maps");
    fc.assert(
      fc.property(registryArbitrary, (registry) => {
        const { entries } = normalizeAndValidate([{ id: "s", version: "1", entries: registry }], {
          manifestVersion: "0",
        });
        const snapshot = buildIndexSnapshot(entries);
        const reference = referenceMaps(entries);
        // No Set per key is held: the maps are lists over the phrase trie and the entries.
        expect(snapshot.exactIndex).toBeInstanceOf(PhraseListMap);
        expect(snapshot.aliasIndex).toBeInstanceOf(PhraseListMap);
        expect(snapshot.relationIndex).toBeInstanceOf(RelationMap);
        expect(asSortedArrays(snapshot.exactIndex)).toEqual(asSortedArrays(reference.exact));
        expect(asSortedArrays(snapshot.aliasIndex)).toEqual(asSortedArrays(reference.alias));
        expect(snapshot.exactIndex.size).toBe(reference.exact.size);
        expect(snapshot.aliasIndex.size).toBe(reference.alias.size);
        for (const [key, ids] of reference.exact) {
          expect(snapshot.exactIndex.has(key)).toBe(true);
          expect([...snapshot.exactIndex.get(key)!]).toEqual([...ids]);
        }
        for (const [key, ids] of reference.alias)
          expect([...snapshot.aliasIndex.get(key)!]).toEqual([...ids]);
        // A key of one map only is absent from the other.
        for (const key of reference.alias.keys())
          if (!reference.exact.has(key)) expect(snapshot.exactIndex.get(key)).toBeUndefined();
        expect([...snapshot.relationIndex]).toEqual([...reference.relations]);
        expect(snapshot.relationIndex.size).toBe(reference.relations.size);
        expect(snapshot.relationIndex.get("never.there")).toBeUndefined();
      }),
      { seed, numRuns: propertyRuns(60) },
    );
  });

  it("the maps refuse writes", () => {
    const { entries } = normalizeAndValidate(
      [{ id: "s", version: "1", entries: [{ id: "a", title: "A", body: "b", aliases: ["x"] }] }],
      { manifestVersion: "0" },
    );
    const snapshot = buildIndexSnapshot(entries);
    expect(() => snapshot.exactIndex.set("k", new Set())).toThrow(TypeError);
    expect(() => snapshot.aliasIndex.delete("x")).toThrow(TypeError);
    expect(() => snapshot.relationIndex.clear()).toThrow(TypeError);
  });

  it("a key the trie gained after the lists were made has no ids", () => {
    const trie = new PhraseTrie();
    trie.add("alpha beta");
    const map = new PhraseListMap(trie, Int32Array.of(0, 1), Int32Array.of(0), ["a"]);
    trie.add("gamma");
    expect(map.get("alpha beta")).toEqual(new Set(["a"]));
    expect(map.get("gamma")).toBeUndefined();
    expect(map.has("gamma")).toBe(false);
    expect(map.size).toBe(1);
  });
});

describe("PhraseTrie.intern", () => {
  it("returns a key's index, adding it only the first time", () => {
    const trie = new PhraseTrie();
    expect(trie.intern("a b")).toBe(0);
    expect(trie.intern("a")).toBe(1);
    expect(trie.intern("a b")).toBe(0);
    expect(trie.intern("a b c")).toBe(2);
    expect(trie.intern("a")).toBe(1);
    expect(trie.intern("")).toBe(-1);
    expect(trie.size).toBe(3);
    expect(trie.match(["a", "b", "c"])).toEqual(["a", "a b", "a b c"]);
    for (const key of ["a", "a b", "a b c"]) expect(trie.keyAt(trie.indexOf(key))).toBe(key);
  });
});
