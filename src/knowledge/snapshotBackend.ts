/**
 * The in-memory snapshot as a search backend: phrase lookup through the phrase trie, the scope's eligibility mask
 * (cached per scope), and the lexical index searched under that mask.
 */
import type { KnowledgeIndexSnapshot, NormalizedKnowledgeEntry } from "../types/knowledge.js";
import { isAuthorized } from "./candidateQuery.js";
import { PhraseListMap } from "./derivedMaps.js";
import {
  type CompiledSnapshot,
  compareCodeUnits,
  getCompiledSnapshot,
  KnowledgeLexicalIndex,
} from "./knowledgeIndex.js";
import { PhraseTrie } from "./phraseTrie.js";
import type {
  KnowledgeCandidateEvidence,
  KnowledgeCandidateQuery,
  KnowledgeSearchBackend,
  KnowledgeSelectionEntries,
} from "./searchBackend.js";

/** Phrase hits of one query: entry id → matched phrases, for exact (id/title) and alias keys. */
export type KnowledgePhraseHits = {
  exact: Map<string, string[]>;
  alias: Map<string, string[]>;
};

/**
 * Finds every contiguous query phrase (1 word up to the longest indexed phrase) that is an exact or alias key.
 * Phrases are reported in NeuroLink's generation order: by length, then by start, each distinct phrase once.
 * The walk from each start follows the phrase trie and stops as soon as no key continues the n-gram.
 * `eligible`, when given, keeps only the ids it accepts, as filtering the hits afterwards would (`slot`: the id's
 * position in the ids of a phrase map read as lists over `phraseTrie`, else -1).
 */
export function lookupPhrases(
  tokens: readonly string[],
  snapshot: KnowledgeIndexSnapshot,
  phraseTrie: PhraseTrie,
  eligible?: (id: string, slot: number) => boolean,
): KnowledgePhraseHits {
  const exact = new Map<string, string[]>();
  const alias = new Map<string, string[]>();
  let target = exact;
  let phrase = "";
  const add = (id: string, slot: number): void => {
    if (eligible !== undefined && !eligible(id, slot)) return;
    const list = target.get(id);
    if (list) list.push(phrase);
    else target.set(id, [phrase]);
  };
  // Lists over this trie are read by key index (no second walk down the trie, no set of ids made).
  const record = (map: ReadonlyMap<string, Set<string>>, keyIndex: number): void => {
    if (map instanceof PhraseListMap && map.trie === phraseTrie) map.visitAt(keyIndex, add);
    else {
      const ids = map.get(phrase);
      if (ids) for (const id of ids) add(id, -1);
    }
  };
  for (const keyIndex of phraseTrie.matchIndices(tokens)) {
    phrase = phraseTrie.keyAt(keyIndex);
    target = exact;
    record(snapshot.exactIndex, keyIndex);
    target = alias;
    record(snapshot.aliasIndex, keyIndex);
  }
  return { exact, alias };
}

/** The eligibility mask of a scope, from the snapshot's bounded cache or built from precomputed lists. */
function eligibilityMask(
  compiled: CompiledSnapshot,
  enabled: ReadonlySet<string>,
  blocked: ReadonlySet<string>,
): Uint8Array {
  const key = JSON.stringify([[...blocked].sort(compareCodeUnits), [...enabled].sort(compareCodeUnits)]);
  const cache = compiled.eligibilityCache;
  const cached = cache.get(key);
  if (cached) return cached;
  // A full cache lends the least recently used scope's mask to the new scope (masks never outlive a search): at a
  // million entries each new mask was 1 MB of array buffer, and the evicted ones, old by then, are only freed by a
  // full collection; ~64 of them started one (V8's external memory limit), marking the whole 2.4 GB heap.
  let mask: Uint8Array;
  const oldest = cache.size >= cache.limit ? cache.keys().next() : undefined;
  if (oldest !== undefined && !oldest.done) {
    mask = cache.peek(oldest.value)!;
    cache.delete(oldest.value);
  } else mask = sharedBytes(compiled.universalMask.length);
  mask.set(compiled.universalMask);
  // Indexed loops: iterating the lists allocated an iterator result per document where the loop was not optimized
  // (at a million entries ~280 kB a turn, most of what started the scavenges during the turns).
  for (const integration of enabled) {
    const docs = compiled.activeByIntegration.get(integration);
    if (docs) for (let index = 0; index < docs.length; index++) mask[docs[index]!] = 1;
  }
  for (const domain of blocked) {
    const docs = compiled.byDomain.get(domain);
    if (docs) for (let index = 0; index < docs.length; index++) mask[docs[index]!] = 0;
  }
  cache.set(key, mask);
  return mask;
}

/**
 * A zeroed byte array in shared memory where the runtime has it: a long search split with the scoring worker
 * (`splitScoring.ts`) posts its mask, which a plain array's would copy (1 MB at a million entries, ~3 ms of the
 * main thread per split search, and a fresh megabyte for the worker to fault in).
 */
function sharedBytes(length: number): Uint8Array {
  return typeof SharedArrayBuffer === "function" && length > 0
    ? new Uint8Array(new SharedArrayBuffer(length))
    : new Uint8Array(length);
}

/** Phrase tries of snapshots built elsewhere (built once per snapshot, from its maps). */
const fallbackPhraseTries = new WeakMap<KnowledgeIndexSnapshot, PhraseTrie>();
function phraseTrieOf(snapshot: KnowledgeIndexSnapshot, compiled: CompiledSnapshot | undefined): PhraseTrie {
  if (compiled) return compiled.phraseTrie;
  let trie = fallbackPhraseTries.get(snapshot);
  if (!trie) {
    trie = new PhraseTrie();
    for (const key of snapshot.exactIndex.keys()) trie.add(key);
    for (const key of snapshot.aliasIndex.keys()) if (!snapshot.exactIndex.has(key)) trie.add(key);
    trie.trimToSize();
    fallbackPhraseTries.set(snapshot, trie);
  }
  return trie;
}

/** The in-memory snapshot as a {@link KnowledgeSearchBackend} (synchronous). */
export class SnapshotSearchBackend implements KnowledgeSearchBackend, KnowledgeSelectionEntries {
  private readonly compiled: CompiledSnapshot | undefined;
  constructor(private readonly snapshot: KnowledgeIndexSnapshot) {
    this.compiled = getCompiledSnapshot(snapshot);
  }

  candidates(query: KnowledgeCandidateQuery): KnowledgeCandidateEvidence {
    const snapshot = this.snapshot;
    const compiled = this.compiled;
    const trie = phraseTrieOf(snapshot, compiled);
    if (compiled && snapshot.lexical instanceof KnowledgeLexicalIndex) {
      const mask = eligibilityMask(compiled, query.enabledIntegrations, query.blockedDomains);
      const lexical = compiled.lexical;
      // A phrase list's slot is the entry's dense id when the index holds that id there (a build's lists follow
      // the dense order): no lookup by name.
      const eligible = (id: string, slot: number): boolean => {
        const doc =
          slot >= 0 && slot < lexical.capacity && lexical.idAt(slot) === id && lexical.isLiveDocument(slot)
            ? slot
            : lexical.denseIdOf(id);
        return doc >= 0 && mask[doc] === 1;
      };
      const hits = lookupPhrases(query.phraseTokens, snapshot, trie, eligible);
      return {
        exact: hits.exact,
        alias: hits.alias,
        matches: lexical.searchWithMask(query.lexicalTokens, query.topK, mask),
      };
    }
    // A snapshot assembled by hand or backed by another searcher: the seed's contract with an id set.
    const hits = lookupPhrases(query.phraseTokens, snapshot, trie);
    const eligibleIds = new Set<string>();
    for (const entry of snapshot.entriesById.values())
      if (isAuthorized(entry, query.enabledIntegrations, query.blockedDomains)) eligibleIds.add(entry.id);
    const isEligible = (id: string) => eligibleIds.has(id);
    return {
      exact: eligibleHits(hits.exact, isEligible),
      alias: eligibleHits(hits.alias, isEligible),
      matches: snapshot.lexical.search(query.lexicalTokens as string[], query.topK, eligibleIds),
    };
  }

  selectionEntries(): KnowledgeSelectionEntries {
    return this;
  }

  entry(id: string): NormalizedKnowledgeEntry | undefined {
    return this.snapshot.entriesById.get(id);
  }

  relations(id: string): readonly string[] | undefined {
    return this.snapshot.relationIndex.get(id);
  }
}

/** The phrase hits of eligible entries only (usually all of them: then the map itself). */
function eligibleHits(
  hits: Map<string, string[]>,
  isEligible: (id: string) => boolean,
): Map<string, string[]> {
  let filtered: Map<string, string[]> | null = null;
  for (const [id, phrases] of hits) {
    if (isEligible(id)) {
      filtered?.set(id, phrases);
    } else if (filtered === null) {
      filtered = new Map();
      for (const [earlierId, earlierPhrases] of hits) {
        if (earlierId === id) break;
        filtered.set(earlierId, earlierPhrases);
      }
    }
  }
  return filtered ?? hits;
}

const snapshotBackends = new WeakMap<KnowledgeIndexSnapshot, SnapshotSearchBackend>();

/** The search backend of an in-memory snapshot (one per snapshot). */
export function snapshotSearchBackend(snapshot: KnowledgeIndexSnapshot): KnowledgeSearchBackend {
  let backend = snapshotBackends.get(snapshot);
  if (!backend) {
    backend = new SnapshotSearchBackend(snapshot);
    snapshotBackends.set(snapshot, backend);
  }
  return backend;
}
