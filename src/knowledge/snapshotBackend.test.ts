/**
 * The in-memory backend's phrase hits: each id's phrases in generation order, only for entries the scope may see
 * (as filtering every hit by the authorization rule afterwards would), whether the phrase lists' slots are the
 * index's dense ids (a build) or not (a snapshot assembled around a loaded index from entries in another order),
 * and the lists read in place give the ids their sets give.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { blockedArbitrary, registryArbitrary, requestArbitrary } from "../../test/property/arbitraries.js";
import { propertyRuns, propertySeed } from "../../test/property/seed.js";
import { buildIndexSnapshot, normalizeAndValidate, resolveRetrieval } from "../index.js";
import type { KnowledgeIndexSnapshot } from "../types/knowledge.js";
import { candidateQuery, isAuthorized } from "./candidateQuery.js";
import { getCompiledSnapshot } from "./compiledSnapshot.js";
import { PhraseListMap } from "./derivedMaps.js";
import { PhraseTrie } from "./phraseTrie.js";
import { lookupPhrases, snapshotSearchBackend } from "./snapshotBackend.js";
import { assembleSnapshot } from "./snapshotMaps.js";

/** Every hit of `hits` whose entry the scope may see, in the same order. */
function authorizedHits(
  hits: Map<string, string[]>,
  snapshot: KnowledgeIndexSnapshot,
  enabled: ReadonlySet<string>,
  blocked: ReadonlySet<string>,
): [string, string[]][] {
  return [...hits].filter(([id]) => isAuthorized(snapshot.entriesById.get(id)!, enabled, blocked));
}

describe("phrase hits of the in-memory backend", () => {
  it("are the authorized hits in generation order, built or assembled in another order", () => {
    const seed = propertySeed("snapshot-backend-phrases");
    fc.assert(
      fc.property(
        registryArbitrary,
        fc.array(requestArbitrary, { minLength: 1, maxLength: 4 }),
        blockedArbitrary,
        fc.integer(),
        (registry, requests, blocked, shuffleSeed) => {
          const { entries, validation } = normalizeAndValidate([
            { id: "source", version: "v1", entries: registry },
          ]);
          if (!validation.ok) return;
          const built = buildIndexSnapshot(entries);
          // The same index's entries in another order: the phrase lists' slots are then not the dense ids.
          const shuffled = entries
            .map((entry, index) => ({ entry, key: Math.imul(index + 1, shuffleSeed | 1) ^ shuffleSeed }))
            .sort((left, right) => left.key - right.key)
            .map(({ entry }) => entry);
          const assembled = assembleSnapshot(shuffled.reverse(), built.lexical as never);
          for (const snapshot of [built, assembled]) {
            const trie = getCompiledSnapshot(snapshot)!.phraseTrie;
            const backend = snapshotSearchBackend(snapshot);
            for (const request of requests) {
              const query = candidateQuery(request, resolveRetrieval({}), blocked);
              const all = lookupPhrases(query.phraseTokens, snapshot, trie);
              const evidence = backend.candidates(query) as Awaited<ReturnType<typeof backend.candidates>>;
              const scope = [snapshot, query.enabledIntegrations, query.blockedDomains] as const;
              expect([...evidence.exact]).toEqual(authorizedHits(all.exact, ...scope));
              expect([...evidence.alias]).toEqual(authorizedHits(all.alias, ...scope));
            }
          }
        },
      ),
      { seed, numRuns: propertyRuns(150) },
    );
  });

  it("lists read in place visit the ids of their sets, in order; lists out of order go through the set", () => {
    const trie = new PhraseTrie();
    for (const key of ["account", "policy", "flow"]) trie.intern(key);
    const ids = ["a", "b", "c", "d"];
    // Key 0: slots 1, 3; key 1: none; key 2: slots 2, 0, 2 (not ascending, a repeat).
    const map = new PhraseListMap(trie, Int32Array.of(0, 2, 2, 5), Int32Array.of(1, 3, 2, 0, 2), ids);
    const visited = (index: number) => {
      const seen: [string, number][] = [];
      map.visitAt(index, (id, slot) => seen.push([id, slot]));
      return seen;
    };
    expect(visited(0)).toEqual([
      ["b", 1],
      ["d", 3],
    ]);
    expect(visited(0).map(([id]) => id)).toEqual([...map.idsAt(0)!]);
    expect(visited(1)).toEqual([]);
    expect(visited(2)).toEqual([
      ["c", -1],
      ["a", -1],
    ]);
    expect(visited(3)).toEqual([]);
  });
});
