/**
 * Snapshot compilation: the build of an immutable snapshot from validated entries (incremental, so an async
 * caller can yield), the phrase and relation maps, and the compiled companion of each snapshot (dense entries,
 * per-scope eligibility building blocks, the phrase trie).
 */
import type {
  KnowledgeFieldWeights,
  KnowledgeIndexSnapshot,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { ELIGIBILITY_CACHE_LIMIT, ELIGIBILITY_CACHE_MAX_BYTES, toIndexBuildOptions } from "./defaults.js";
import { DenseEntryMap, PhraseListMap, PhraseListsBuilder, RelationMap } from "./derivedMaps.js";
import { KnowledgeLexicalIndex, type KnowledgeLexicalIndexOptions } from "./lexicalIndex.js";
import { LruCache } from "./lruCache.js";
import { normalizePhrases, phraseKey } from "./normalize.js";
import { type BuildSegment, type ParallelIndexing, parallelIndexing } from "./parallelBuild.js";
import { PhraseTrie } from "./phraseTrie.js";
import { compareCodeUnits } from "./ranking.js";

/** Options of {@link buildIndexSnapshot}: the index parameters plus field weights (partial allowed). */
export type KnowledgeIndexBuildOptions = KnowledgeLexicalIndexOptions & {
  fieldWeights?: Partial<KnowledgeFieldWeights>;
  /**
   * Threads that index the entries, the calling one included (worker threads, Node only; the index is the same
   * whatever the count). Default: one per available core (at most 4) from 16,384 entries, one below; `1` keeps
   * the build on the calling thread.
   */
  threads?: number;
  /** Entries per part handed to a worker thread (tests set small parts). @internal */
  partEntries?: number;
};

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

/**
 * Builds the immutable snapshot of a validated entry set. The second argument is the field weights (as in
 * NeuroLink; a partial object is merged over the defaults) or {@link KnowledgeIndexBuildOptions}.
 */
export function buildIndexSnapshot(
  entries: readonly NormalizedKnowledgeEntry[],
  weightsOrOptions?: Partial<KnowledgeFieldWeights> | KnowledgeIndexBuildOptions,
): KnowledgeIndexSnapshot {
  const builder = startIndexBuild(entries, weightsOrOptions);
  while (!builder.step(Number.POSITIVE_INFINITY)) {
    // Runs to completion synchronously.
  }
  return builder.finish();
}

/** An incremental snapshot build, so an async caller can yield to the event loop between chunks. */
export type IndexBuild = {
  /** Indexes entries for up to `budgetMs`; returns true when every entry is indexed. */
  step(budgetMs: number): boolean;
  /** Finalizes and returns the snapshot. */
  finish(): KnowledgeIndexSnapshot;
};

/** Starts an incremental build; see {@link buildIndexSnapshot}. */
export function startIndexBuild(
  entries: readonly NormalizedKnowledgeEntry[],
  weightsOrOptions?: Partial<KnowledgeFieldWeights> | KnowledgeIndexBuildOptions,
): IndexBuild {
  const options = toIndexBuildOptions(weightsOrOptions);
  const lexical = new KnowledgeLexicalIndex(options.fieldWeights, options);
  // Dense ids follow code-unit order of entry ids, which makes "lower id first" the natural tie-break.
  const sorted = sortById(entries);
  const maps = new SnapshotMaps();
  const parallel = parallelIndexing(sorted, {
    analyzer: lexical.analyzerName,
    threads: options.threads,
    ...(options.partEntries !== undefined ? { partEntries: options.partEntries } : {}),
  });
  // The worker also scatters part of each large field's postings when finalizing (so it lives until then).
  if (parallel) lexical.useScatterHelper(parallel.scatterHelper());
  const internTerms = (terms: readonly string[]): number[] => lexical.internTerms(terms);
  let next = 0;
  /** Indexes entries from `next` up to `end` on this thread (`counted`: a worker's counts); false at the deadline. */
  const indexUpTo = (end: number, deadline: number, counted: BuildSegment | null): boolean => {
    while (next < end) {
      const entry = sorted[next++]!;
      const phrases = counted?.phrases;
      if (phrases) {
        // Keys the worker computed (see PartPhrases), the same as computing them here.
        const position = 2 * (next - 1 - counted.start);
        const exactCount = phrases.counts[position]!;
        const aliasCount = phrases.counts[position + 1]!;
        maps.addKeys(entry, phrases.keys, counted.phraseOffset, exactCount, aliasCount);
        counted.phraseOffset += exactCount + aliasCount;
      } else maps.add(entry, normalizePhrases([entry.id, entry.title]));
      if (counted)
        counted.offset = lexical.addCountedDocument(
          entry.id,
          counted.counts!,
          counted.offset,
          counted.termIds!,
        );
      else lexical.addEntry(entry);
      if (next === RESERVE_AFTER_DOCUMENTS) lexical.reserveFor(sorted.length);
      if ((next & DEADLINE_CHECK_MASK) === 0 && performance.now() >= deadline) return false;
    }
    return true;
  };
  const build: IndexBuild = {
    step(budgetMs: number): boolean {
      const deadline =
        budgetMs === Number.POSITIVE_INFINITY ? Number.POSITIVE_INFINITY : performance.now() + budgetMs;
      if (!parallel) {
        if (!indexUpTo(sorted.length, deadline, null)) return false;
      } else {
        try {
          while (next < sorted.length) {
            const segment = parallel.segmentAt(next);
            if (!parallel.await(segment, deadline, internTerms)) return false;
            const counted = segment.helper >= 0 ? segment : null;
            const started = performance.now();
            const from = next;
            const done = indexUpTo(segment.end, deadline, counted);
            parallel.record(next - from, performance.now() - started, counted !== null);
            if (!done) return false;
          }
        } catch (error) {
          parallel.close();
          throw error;
        }
      }
      // Then finalize the postings one field at a time, so an async build can yield between fields.
      try {
        while (!lexical.finalizeStep()) if (performance.now() >= deadline) return false;
      } catch (error) {
        parallel?.close();
        throw error;
      }
      parallel?.close();
      return true;
    },
    finish(): KnowledgeIndexSnapshot {
      try {
        lexical.finalize();
      } finally {
        parallel?.close();
      }
      return maps.finish(lexical, sorted);
    },
  };
  // An abandoned build (its caller gone) stops its workers when it is collected.
  if (parallel) abandonedBuilds?.register(build, parallel);
  return build;
}

/** Stops the workers of a parallel build that was dropped before it finished. */
const abandonedBuilds =
  typeof FinalizationRegistry === "function"
    ? new FinalizationRegistry<ParallelIndexing>((parallel) => parallel.close())
    : null;

/** Documents indexed before the build buffers are sized for the whole registry. */
const RESERVE_AFTER_DOCUMENTS = 1024;
/** The build checks its deadline after every 64 entries (when the count's low six bits are zero). */
const DEADLINE_CHECK_MASK = 63;

/**
 * The entries in code-unit order of their ids. Manifests written by `lexground build` are already in that order
 * (checked in one pass); otherwise the ids are sorted by the engine's native string sort, which compares code
 * units and is several times faster than a comparator at 100k entries. Duplicate ids (only possible when a
 * caller skips validation) take the comparator path, so the index reports them.
 */
function sortById(entries: readonly NormalizedKnowledgeEntry[]): NormalizedKnowledgeEntry[] {
  let ordered = true;
  for (let index = 1; index < entries.length && ordered; index++)
    ordered = entries[index - 1]!.id < entries[index]!.id;
  if (ordered) return entries.slice();
  const byId = new Map<string, NormalizedKnowledgeEntry>();
  for (const entry of entries) byId.set(entry.id, entry);
  if (byId.size !== entries.length)
    return entries.slice().sort((left, right) => compareCodeUnits(left.id, right.id));
  const ids = entries.map((entry) => entry.id).sort();
  return ids.map((id) => byId.get(id)!);
}

/**
 * The phrase and relation maps of a snapshot, filled entry by entry. The phrase maps are per-key lists over the
 * phrase trie (see `phraseMaps.ts`): each key is interned in the trie once, and the (key, entry) pairs are
 * turned into lists when the snapshot is finished. `entriesById` is read through the lexical index's id lookup
 * (see {@link DenseEntryMap}), not a map of its own.
 */
export class SnapshotMaps {
  /** Entry ids in the order they were added: what the phrase lists' positions refer to. */
  private readonly ids: string[] = [];
  private readonly exactLists = new PhraseListsBuilder();
  private readonly aliasLists = new PhraseListsBuilder();
  /** Entries with related ids or a parent (`relationIndex` reads them from the entries). */
  private relationCount = 0;
  private readonly phraseTrie = new PhraseTrie();

  add(entry: NormalizedKnowledgeEntry, exactKeys: readonly string[]): void {
    const position = this.ids.length;
    this.ids.push(entry.id);
    const trie = this.phraseTrie;
    for (const key of exactKeys) {
      const keyIndex = trie.intern(key);
      if (keyIndex >= 0) this.exactLists.add(keyIndex, position);
    }
    for (const alias of entry.aliases) {
      const keyIndex = trie.intern(phraseKey(alias));
      if (keyIndex >= 0) this.aliasLists.add(keyIndex, position);
    }
    if (entry.relatedEntryIds.length > 0 || entry.parentEntryId !== undefined) this.relationCount++;
  }

  /**
   * {@link add} with the keys already computed: `keys[start, start + exactCount)` are the exact keys
   * (`normalizePhrases([id, title])`), the next `aliasCount` the non-empty `phraseKey` of each alias, in order.
   */
  addKeys(
    entry: NormalizedKnowledgeEntry,
    keys: readonly string[],
    start: number,
    exactCount: number,
    aliasCount: number,
  ): void {
    const position = this.ids.length;
    this.ids.push(entry.id);
    const trie = this.phraseTrie;
    const exactEnd = start + exactCount;
    for (let index = start; index < exactEnd; index++) {
      const keyIndex = trie.intern(keys[index]!);
      if (keyIndex >= 0) this.exactLists.add(keyIndex, position);
    }
    for (let index = exactEnd; index < exactEnd + aliasCount; index++) {
      const keyIndex = trie.intern(keys[index]!);
      if (keyIndex >= 0) this.aliasLists.add(keyIndex, position);
    }
    if (entry.relatedEntryIds.length > 0 || entry.parentEntryId !== undefined) this.relationCount++;
  }

  /** Freezes the snapshot and registers its compiled companion. */
  finish(
    lexical: KnowledgeLexicalIndex,
    entries: readonly NormalizedKnowledgeEntry[],
  ): KnowledgeIndexSnapshot {
    return drain(this.finishSteps(lexical, entries));
  }

  /** {@link finish} as a generator that yields between slices of the compilation. */
  *finishSteps(
    lexical: KnowledgeLexicalIndex,
    entries: readonly NormalizedKnowledgeEntry[],
  ): Generator<void, KnowledgeIndexSnapshot, void> {
    const trie = this.phraseTrie;
    const exact = this.exactLists.finish(trie.size);
    const alias = this.aliasLists.finish(trie.size);
    this.phraseTrie.trimToSize();
    const compiled = yield* compileSnapshotSteps(lexical, entries, this.phraseTrie);
    // Entries added in dense order (a build: both follow the sorted ids) are found through the lexical index.
    let denseOrder = compiled.entries.length === entries.length;
    for (let doc = 0; doc < entries.length && denseOrder; doc++)
      denseOrder = compiled.entries[doc] === entries[doc];
    const entriesById: Map<string, NormalizedKnowledgeEntry> = denseOrder
      ? new DenseEntryMap(compiled.entries, (id) => lexical.denseIdOf(id))
      : new Map(entries.map((entry) => [entry.id, entry]));
    const snapshot: KnowledgeIndexSnapshot = {
      entriesById,
      exactIndex: new PhraseListMap(trie, exact.offsets, exact.docs, this.ids),
      aliasIndex: new PhraseListMap(trie, alias.offsets, alias.docs, this.ids),
      relationIndex: new RelationMap(entriesById, this.relationCount),
      lexical,
      entryCount: entriesById.size,
    };
    compiledSnapshots.set(snapshot, compiled);
    return Object.freeze(snapshot);
  }
}

/**
 * Assembles a snapshot around an already finished lexical index (loaded from an artifact): the phrase and
 * relation maps are recomputed from the entries, which is cheap next to indexing their text.
 */
export function assembleSnapshot(
  entries: readonly NormalizedKnowledgeEntry[],
  lexical: KnowledgeLexicalIndex,
): KnowledgeIndexSnapshot {
  const maps = new SnapshotMaps();
  for (const entry of entries) {
    if (lexical.denseIdOf(entry.id) < 0)
      throw new RangeError(`entry ${JSON.stringify(entry.id)} is not in the lexical index`);
    maps.add(entry, normalizePhrases([entry.id, entry.title]));
  }
  if (entries.length !== lexical.size) throw new RangeError("the entries do not match the lexical index");
  return maps.finish(lexical, entries);
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
