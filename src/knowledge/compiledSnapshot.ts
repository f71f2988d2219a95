/**
 * The compiled companion of a snapshot (see `snapshot.ts`): its entries by dense id, the per-scope eligibility
 * building blocks (the universal mask, the lists by integration and by domain) and their mask cache, the phrase
 * trie; and the registry that finds the companion of a snapshot.
 */
import type { KnowledgeIndexSnapshot, NormalizedKnowledgeEntry } from "../types/knowledge.js";
import { ELIGIBILITY_CACHE_LIMIT, ELIGIBILITY_CACHE_MAX_BYTES } from "./defaults.js";
import type { KnowledgeLexicalIndex } from "./lexicalIndex.js";
import { LruCache } from "./lruCache.js";
import type { PhraseTrie } from "./phraseTrie.js";

/** Internal, compiled companions of a snapshot built here: dense entries and precomputed lookups. */
export type CompiledSnapshot = {
  lexical: KnowledgeLexicalIndex;
  /** Entries by dense id. */
  entries: NormalizedKnowledgeEntry[];
  /** Active entries with no integrations (eligible in every scope unless their domain is blocked). */
  universalMask: Uint8Array;
  /** Lowercased integration → dense ids of active entries bound to it. */
  activeByIntegration: Map<string, Int32Array>;
  /** Domain → dense ids. */
  byDomain: Map<string, Int32Array>;
  /** The exact and alias phrase keys as a token trie (phrase lookup). */
  phraseTrie: PhraseTrie;
  /** Scope key → eligibility mask (see {@link createEligibilityCache}). */
  eligibilityCache: LruCache<string, Uint8Array>;
};

/**
 * The eligibility-mask cache of a snapshot of `entryCount` entries: one byte per entry per cached scope, so the
 * count of scopes kept shrinks with the registry (at most {@link ELIGIBILITY_CACHE_LIMIT} and
 * {@link ELIGIBILITY_CACHE_MAX_BYTES} of masks), never below 4.
 */
export function createEligibilityCache(entryCount: number): LruCache<string, Uint8Array> {
  const scopes = Math.floor(ELIGIBILITY_CACHE_MAX_BYTES / Math.max(1, entryCount));
  return new LruCache(Math.max(4, Math.min(ELIGIBILITY_CACHE_LIMIT, scopes)));
}

const compiledSnapshots = new WeakMap<KnowledgeIndexSnapshot, CompiledSnapshot>();

/** The compiled companion of a snapshot built by {@link buildIndexSnapshot}, if any. */
export function getCompiledSnapshot(snapshot: KnowledgeIndexSnapshot): CompiledSnapshot | undefined {
  return compiledSnapshots.get(snapshot);
}

/** Registers a compiled companion (used when a snapshot is loaded from an artifact). */
export function registerCompiledSnapshot(snapshot: KnowledgeIndexSnapshot, compiled: CompiledSnapshot): void {
  compiledSnapshots.set(snapshot, compiled);
}

/** Precomputes the per-scope eligibility building blocks. */
export function compileSnapshot(
  lexical: KnowledgeLexicalIndex,
  entries: readonly NormalizedKnowledgeEntry[],
  phraseTrie: PhraseTrie,
): CompiledSnapshot {
  return drain(compileSnapshotSteps(lexical, entries, phraseTrie));
}

/** Runs a generator to completion and returns its result. */
export function drain<Result>(steps: Generator<void, Result, void>): Result {
  let step = steps.next();
  while (!step.done) step = steps.next();
  return step.value;
}

/**
 * Files an entry's dense id where eligibility masks are built from: its domain's list, and when it is active, the
 * universal mask (no integrations) or the list of each of its integrations (lowercased, once each).
 */
export function addEntryToScopes(
  entry: NormalizedKnowledgeEntry,
  doc: number,
  universalMask: Uint8Array,
  push: (kind: "domain" | "integration", key: string, doc: number) => void,
): void {
  push("domain", entry.domain, doc);
  if (entry.status !== "active") return;
  if (entry.integrations.length === 0) {
    universalMask[doc] = 1;
    return;
  }
  const seen = new Set<string>();
  for (const integration of entry.integrations) {
    const key = integration.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    push("integration", key, doc);
  }
}

/** Entries handled between two yields of a sliced snapshot step. */
const ENTRIES_PER_STEP = 4096;

/** {@link compileSnapshot} as a generator that yields every {@link ENTRIES_PER_STEP} entries. */
export function* compileSnapshotSteps(
  lexical: KnowledgeLexicalIndex,
  entries: readonly NormalizedKnowledgeEntry[],
  phraseTrie: PhraseTrie,
): Generator<void, CompiledSnapshot, void> {
  const count = lexical.capacity;
  let handled = 0;
  const denseEntries: NormalizedKnowledgeEntry[] = new Array(count);
  const universalMask = new Uint8Array(count);
  const integrationLists = new Map<string, number[]>();
  const domainLists = new Map<string, number[]>();
  const push = (kind: "domain" | "integration", key: string, doc: number): void => {
    const lists = kind === "domain" ? domainLists : integrationLists;
    let list = lists.get(key);
    if (!list) {
      list = [];
      lists.set(key, list);
    }
    list.push(doc);
  };
  for (const entry of entries) {
    if ((++handled & (ENTRIES_PER_STEP - 1)) === 0) yield;
    // A build adds the entries in dense order: the id lookup is needed only when they come in another order.
    const position = handled - 1;
    const doc =
      position < count && lexical.idAt(position) === entry.id && lexical.isLiveDocument(position)
        ? position
        : lexical.denseIdOf(entry.id);
    denseEntries[doc] = entry;
    addEntryToScopes(entry, doc, universalMask, push);
  }
  const toTyped = (lists: Map<string, number[]>): Map<string, Int32Array> => {
    const typed = new Map<string, Int32Array>();
    for (const [key, list] of lists) typed.set(key, Int32Array.from(list));
    return typed;
  };
  return {
    lexical,
    entries: denseEntries,
    universalMask,
    activeByIntegration: toTyped(integrationLists),
    byDomain: toTyped(domainLists),
    phraseTrie,
    eligibilityCache: createEligibilityCache(count),
  };
}
