/**
 * The in-memory snapshot as a search backend: phrase lookup through the phrase trie, the scope's eligibility mask
 * (cached per scope), and the lexical index searched under that mask.
 */
import type {
  KnowledgeIndexSnapshot,
  KnowledgeLexicalMatch,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { isAuthorized } from "./candidateQuery.js";
import { phraseIds } from "./derivedMaps.js";
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
 */
export function lookupPhrases(
  tokens: readonly string[],
  snapshot: KnowledgeIndexSnapshot,
  phraseTrie: PhraseTrie,
): KnowledgePhraseHits {
  const exact = new Map<string, string[]>();
  const alias = new Map<string, string[]>();
  const record = (target: Map<string, string[]>, ids: Set<string> | undefined, phrase: string): void => {
    if (!ids) return;
    for (const id of ids) {
      const list = target.get(id);
      if (list) list.push(phrase);
      else target.set(id, [phrase]);
    }
  };
  for (const keyIndex of phraseTrie.matchIndices(tokens)) {
    const phrase = phraseTrie.keyAt(keyIndex);
    record(exact, phraseIds(snapshot.exactIndex, phraseTrie, keyIndex, phrase), phrase);
    record(alias, phraseIds(snapshot.aliasIndex, phraseTrie, keyIndex, phrase), phrase);
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
    mask.set(compiled.universalMask);
  } else mask = compiled.universalMask.slice();
  for (const integration of enabled) {
    const docs = compiled.activeByIntegration.get(integration);
    if (docs) for (const doc of docs) mask[doc] = 1;
  }
  for (const domain of blocked) {
    const docs = compiled.byDomain.get(domain);
    if (docs) for (const doc of docs) mask[doc] = 0;
  }
  cache.set(key, mask);
  return mask;
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
    const hits = lookupPhrases(query.phraseTokens, snapshot, phraseTrieOf(snapshot, compiled));
    let matches: KnowledgeLexicalMatch[];
    let isEligible: (id: string) => boolean;
    if (compiled && snapshot.lexical instanceof KnowledgeLexicalIndex) {
      const mask = eligibilityMask(compiled, query.enabledIntegrations, query.blockedDomains);
      const lexical = compiled.lexical;
      isEligible = (id) => {
        const doc = lexical.denseIdOf(id);
        return doc >= 0 && mask[doc] === 1;
      };
      matches = lexical.searchWithMask(query.lexicalTokens, query.topK, mask);
    } else {
      // A snapshot assembled by hand or backed by another searcher: the seed's contract with an id set.
      const eligibleIds = new Set<string>();
      for (const entry of snapshot.entriesById.values())
        if (isAuthorized(entry, query.enabledIntegrations, query.blockedDomains)) eligibleIds.add(entry.id);
      isEligible = (id) => eligibleIds.has(id);
      matches = snapshot.lexical.search(query.lexicalTokens as string[], query.topK, eligibleIds);
    }
    return {
      exact: eligibleHits(hits.exact, isEligible),
      alias: eligibleHits(hits.alias, isEligible),
      matches,
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
