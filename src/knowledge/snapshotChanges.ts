/**
 * Changing a snapshot without rebuilding it: {@link applySnapshotChanges} derives a new immutable snapshot (the
 * old one keeps serving whoever holds it) whose maps are overlays over the base snapshot's maps and whose lexical
 * index is derived with `withChanges`; {@link compactSnapshotSteps} folds the lexical changes into a fresh index,
 * scoring exactly as a full build of the same entries, in slices.
 *
 * Every structure a change touches is shared along the chain of snapshots derived from one base and grows
 * append-only (each snapshot reads the prefix it knows), so a change costs work proportional to what it changes,
 * plus one byte per entry (the lexical index's liveness array), never a copy of what earlier changes added. A
 * snapshot derived from one that is not the latest of its chain copies the shared part once (a fork).
 */
import type { KnowledgeIndexSnapshot, NormalizedKnowledgeEntry } from "../types/knowledge.js";
import { compactionStep } from "./compactionStep.js";
import type { CompactionThread } from "./compactionThread.js";
import {
  addEntryToScopes,
  type CompiledSnapshot,
  createEligibilityCache,
  getCompiledSnapshot,
  registerCompiledSnapshot,
} from "./compiledSnapshot.js";
import { entryRelationIds } from "./derivedMaps.js";
import { KnowledgeLexicalIndex } from "./lexicalIndex.js";
import { normalizePhrases, phraseKey } from "./normalize.js";
import { OverlayMap, REMOVED } from "./overlayMap.js";
import type { PhraseTrie } from "./phraseTrie.js";

/** A list of dense ids that grows in place; a snapshot reads its first entries (those below its capacity). */
type GrowingList = { docs: Int32Array; length: number };

/**
 * The eligibility building blocks of a chain of derived snapshots (see `CompiledSnapshot`), grown in place as
 * documents are added: a snapshot's universal mask and lists are prefixes of these. A removed document keeps its
 * bits and list places: the lexical index never scores it, and the phrase maps no longer name it.
 */
type ScopeGrowth = {
  /** Dense ids covered: the capacity of the latest snapshot of the chain. */
  capacity: number;
  universalMask: Uint8Array;
  integrations: Map<string, GrowingList>;
  domains: Map<string, GrowingList>;
  phraseTrie: PhraseTrie;
};

/** The scope growth a derived compiled snapshot belongs to. */
const scopeGrowths = new WeakMap<CompiledSnapshot, ScopeGrowth>();

/** Keys added to a (shared, grow-only) phrase trie after its snapshot was built, so none is added twice. */
const addedTrieKeys = new WeakMap<PhraseTrie, Set<string>>();

function growingLists(lists: ReadonlyMap<string, Int32Array>, capacity: number): Map<string, GrowingList> {
  const grown = new Map<string, GrowingList>();
  for (const [key, docs] of lists) {
    let length = docs.length;
    while (length > 0 && docs[length - 1]! >= capacity) length--;
    grown.set(key, { docs: docs.slice(0, length), length });
  }
  return grown;
}

/** The scope growth of a chain continuing from `compiled` (its own when it is the latest, else a copy). */
function scopeGrowthFrom(compiled: CompiledSnapshot): ScopeGrowth {
  const capacity = compiled.lexical.capacity;
  const existing = scopeGrowths.get(compiled);
  if (existing && existing.capacity === capacity) return existing;
  const universalMask = new Uint8Array(Math.max(16, Math.ceil(capacity * 1.25)));
  universalMask.set(compiled.universalMask.subarray(0, capacity));
  return {
    capacity,
    universalMask,
    integrations: growingLists(compiled.activeByIntegration, capacity),
    domains: growingLists(compiled.byDomain, capacity),
    phraseTrie: compiled.phraseTrie,
  };
}

function pushGrowing(lists: Map<string, GrowingList>, key: string, doc: number): void {
  let list = lists.get(key);
  if (!list) {
    list = { docs: new Int32Array(4), length: 0 };
    lists.set(key, list);
  }
  if (list.length === list.docs.length) {
    const grown = new Int32Array(list.docs.length * 2);
    grown.set(list.docs);
    list.docs = grown;
  }
  list.docs[list.length++] = doc;
}

/**
 * A snapshot equal to `snapshot` that {@link applySnapshotChanges} can change: `snapshot` itself when it can be,
 * otherwise (loaded from an artifact, which stores finished contributions but not the term frequencies and field
 * lengths a change recomputes them from) the same maps and scope lists over a lexical index rebuilt from its
 * entries, decoded one by one: a full indexing of the text, in slices, once. Null when `snapshot` was not built
 * by lexground.
 */
export function* updatableSnapshotSteps(
  snapshot: KnowledgeIndexSnapshot,
): Generator<void, KnowledgeIndexSnapshot | null, void> {
  const compiled = getCompiledSnapshot(snapshot);
  if (!compiled) return null;
  if (compiled.lexical.updatable) return snapshot;
  const loaded = compiled.lexical;
  // Dense ids follow the ids' code-unit order in both indexes, so the scope lists and maps stay valid.
  const lexical = new KnowledgeLexicalIndex(loaded.fieldWeights, {
    k1: loaded.k1,
    b: loaded.b,
    analyzer: loaded.analyzerName,
    scoring: loaded.scoring,
  });
  const count = loaded.capacity;
  for (let doc = 0; doc < count; doc++) {
    lexical.addEntry(snapshot.entriesById.get(loaded.idAt(doc))!);
    if (doc + 1 === RESERVE_AFTER_DOCUMENTS) lexical.reserveFor(count);
    if ((doc & (REINDEXED_PER_STEP - 1)) === REINDEXED_PER_STEP - 1) yield;
  }
  while (!lexical.finalizeStep()) yield;
  for (let doc = 0; doc < count; doc++)
    if (lexical.idAt(doc) !== loaded.idAt(doc))
      throw new Error("the rebuilt index does not match the artifact's");
  const next: KnowledgeIndexSnapshot = { ...snapshot, lexical };
  registerCompiledSnapshot(next, { ...compiled, lexical, eligibilityCache: createEligibilityCache(count) });
  return Object.freeze(next);
}

/** Documents indexed before the build buffers are sized for the whole registry (as a build does). */
const RESERVE_AFTER_DOCUMENTS = 1024;

/** Whether {@link applySnapshotChanges} can change this snapshot (built by lexground, with term frequencies). */
export function canChangeSnapshot(snapshot: KnowledgeIndexSnapshot): boolean {
  const compiled = getCompiledSnapshot(snapshot);
  return compiled?.lexical.updatable === true;
}

/**
 * A new snapshot: `snapshot` without the entries of `removedIds` and with `upserted` entries added or replacing
 * the entries with their ids. Requires {@link canChangeSnapshot}. The caller validates the result's entries.
 */
export function applySnapshotChanges(
  snapshot: KnowledgeIndexSnapshot,
  removedIds: Iterable<string>,
  upserted: readonly NormalizedKnowledgeEntry[],
): KnowledgeIndexSnapshot {
  const compiled = getCompiledSnapshot(snapshot);
  if (!compiled?.lexical.updatable)
    throw new Error("applySnapshotChanges: this snapshot cannot be changed in place");
  const gone = new Set<string>();
  for (const id of removedIds) if (snapshot.entriesById.has(id)) gone.add(id);
  for (const entry of upserted) if (snapshot.entriesById.has(entry.id)) gone.add(entry.id);
  const lexical = compiled.lexical.withChanges(gone, upserted);

  const entries = new Map<string, NormalizedKnowledgeEntry | typeof REMOVED>();
  const relations = new Map<string, string[] | typeof REMOVED>();
  const exact = new Map<string, Set<string> | typeof REMOVED>();
  const alias = new Map<string, Set<string> | typeof REMOVED>();
  const editKey = (
    changes: Map<string, Set<string> | typeof REMOVED>,
    map: ReadonlyMap<string, Set<string>>,
    key: string,
    id: string,
    add: boolean,
  ): void => {
    const changed = changes.get(key);
    const ids = new Set(changed === undefined ? (map.get(key) ?? []) : changed === REMOVED ? [] : changed);
    if (add) ids.add(id);
    else ids.delete(id);
    changes.set(key, ids.size > 0 ? ids : REMOVED);
  };
  for (const id of gone) {
    const entry = snapshot.entriesById.get(id)!;
    entries.set(id, REMOVED);
    relations.set(id, REMOVED);
    for (const key of normalizePhrases([entry.id, entry.title]))
      editKey(exact, snapshot.exactIndex, key, id, false);
    for (const aliasText of entry.aliases) {
      const key = phraseKey(aliasText);
      if (key !== "") editKey(alias, snapshot.aliasIndex, key, id, false);
    }
  }
  const growth = scopeGrowthFrom(compiled);
  const trie = growth.phraseTrie;
  let trieKeys = addedTrieKeys.get(trie);
  if (!trieKeys) {
    trieKeys = new Set();
    addedTrieKeys.set(trie, trieKeys);
  }
  const addToTrie = (key: string): void => {
    // A shared trie may hold more keys than a snapshot's maps: a phrase without ids in the maps matches nothing.
    if (trieKeys.has(key) || trie.indexOf(key) >= 0) return;
    trieKeys.add(key);
    trie.add(key);
  };
  for (const entry of upserted) {
    entries.set(entry.id, entry);
    const related = entryRelationIds(entry);
    relations.set(entry.id, related.length > 0 ? related : REMOVED);
    for (const key of normalizePhrases([entry.id, entry.title])) {
      editKey(exact, snapshot.exactIndex, key, entry.id, true);
      addToTrie(key);
    }
    for (const aliasText of entry.aliases) {
      const key = phraseKey(aliasText);
      if (key === "") continue;
      editKey(alias, snapshot.aliasIndex, key, entry.id, true);
      addToTrie(key);
    }
  }
  const entriesById = OverlayMap.changed(snapshot.entriesById, entries);
  const next: KnowledgeIndexSnapshot = {
    entriesById,
    exactIndex: OverlayMap.changed(snapshot.exactIndex, exact),
    aliasIndex: OverlayMap.changed(snapshot.aliasIndex, alias),
    relationIndex: OverlayMap.changed(snapshot.relationIndex, relations),
    lexical,
    entryCount: entriesById.size,
  };
  registerCompiledSnapshot(next, deriveCompiled(growth, lexical, upserted));
  return Object.freeze(next);
}

/**
 * The compiled companion of a derived snapshot: the chain's scope growth with the added documents filed, and
 * views of it up to the snapshot's capacity. Work: proportional to the added documents and the number of
 * scope keys.
 */
function deriveCompiled(
  growth: ScopeGrowth,
  lexical: KnowledgeLexicalIndex,
  upserted: readonly NormalizedKnowledgeEntry[],
): CompiledSnapshot {
  const capacity = lexical.capacity;
  if (capacity > growth.universalMask.length) {
    const grown = new Uint8Array(Math.ceil(capacity * 1.25));
    grown.set(growth.universalMask);
    growth.universalMask = grown;
  }
  const byId = new Map(upserted.map((entry) => [entry.id, entry]));
  const push = (kind: "domain" | "integration", key: string, doc: number): void =>
    pushGrowing(kind === "domain" ? growth.domains : growth.integrations, key, doc);
  for (let doc = growth.capacity; doc < capacity; doc++)
    addEntryToScopes(byId.get(lexical.idAt(doc))!, doc, growth.universalMask, push);
  growth.capacity = capacity;
  const views = (lists: Map<string, GrowingList>): Map<string, Int32Array> => {
    const typed = new Map<string, Int32Array>();
    for (const [key, list] of lists) if (list.length > 0) typed.set(key, list.docs.subarray(0, list.length));
    return typed;
  };
  const compiled: CompiledSnapshot = {
    lexical,
    // Entries are read through the snapshot's `entriesById`; the dense list is not materialized.
    entries: [],
    universalMask: growth.universalMask.subarray(0, capacity),
    activeByIntegration: views(growth.integrations),
    byDomain: views(growth.domains),
    phraseTrie: growth.phraseTrie,
    eligibilityCache: createEligibilityCache(capacity),
  };
  scopeGrowths.set(compiled, growth);
  return compiled;
}

/** Whether a snapshot carries changes that a compaction would fold in. */
export function hasSnapshotChanges(snapshot: KnowledgeIndexSnapshot): boolean {
  return getCompiledSnapshot(snapshot)?.lexical.hasChanges === true;
}

/**
 * The universal mask's bits of dense ids `from` to `to`, at their fresh dense ids. Plain functions, not the
 * generator's own loops: a generator run once per compaction stays in V8's interpreter, where these loops took
 * milliseconds per step at 100k entries.
 */
function renumberMask(
  mask: Uint8Array,
  renumbered: Int32Array,
  target: Uint8Array,
  from: number,
  to: number,
): void {
  for (let doc = from; doc < to; doc++) {
    const next = renumbered[doc]!;
    if (next >= 0) target[next] = mask[doc]!;
  }
  compactionStep.done += to - from;
}

/** `docs[from..to)` renumbered (the live ones) and appended to `target` at `length`; returns the new length. */
function renumberList(
  docs: Int32Array,
  renumbered: Int32Array,
  capacity: number,
  target: Int32Array,
  length: number,
  from: number,
  to: number,
): number {
  let written = length;
  for (let at = from; at < to; at++) {
    const doc = docs[at]!;
    const next = doc < capacity ? renumbered[doc]! : -1;
    if (next >= 0) target[written++] = next;
  }
  compactionStep.done += to - from;
  return written;
}
/** Entries re-indexed between two yields when a loaded index is made updatable (a power of two). */
const REINDEXED_PER_STEP = 64;

/**
 * `docs` sorted in place. A renumbered scope list is its base documents, in order, followed by the few added
 * since: only that unsorted tail is sorted, then merged in from the back (a full sort of every list was several
 * milliseconds in one step at 100k entries). @internal
 */
export function ascending(docs: Int32Array): Int32Array {
  let sorted = 1;
  while (sorted < docs.length && docs[sorted - 1]! < docs[sorted]!) sorted++;
  if (sorted >= docs.length) return docs;
  const tail = docs.slice(sorted).sort();
  let head = sorted - 1;
  let rest = tail.length - 1;
  for (let at = docs.length - 1; rest >= 0; at--)
    docs[at] = head >= 0 && docs[head]! > tail[rest]! ? docs[head--]! : tail[rest--]!;
  return docs;
}

/**
 * A snapshot equal to `snapshot` whose lexical index is fresh (precomputed contributions, as a full build of its
 * entries has them), computed from the stored postings in slices: the generator yields between slices, so a
 * background compaction never holds the event loop for long. The maps stay overlays (pruned to what the snapshot
 * sees); the scope lists are renumbered to the fresh index's dense ids. `thread`: a worker that writes the fresh
 * postings (`compactionThread.ts`; run the steps with `runCompactionSteps` then).
 */
export function* compactSnapshotSteps(
  snapshot: KnowledgeIndexSnapshot,
  thread: CompactionThread | null = null,
): Generator<void, KnowledgeIndexSnapshot, void> {
  const compiled = getCompiledSnapshot(snapshot);
  if (!compiled || !hasSnapshotChanges(snapshot)) return snapshot;
  const changed = compiled.lexical;
  const { index: lexical, newDenseIds } = yield* changed.compactStepsRenumbered(thread);
  const capacity = changed.capacity;
  // Old dense id → new (-1: not live).
  const renumbered = newDenseIds!;
  const universalMask = new Uint8Array(lexical.capacity);
  for (let from = 0; from < capacity; from += compactionStep.work) {
    const to = Math.min(capacity, from + compactionStep.work);
    renumberMask(compiled.universalMask, renumbered, universalMask, from, to);
    yield;
  }
  const renumberedLists = function* (
    lists: ReadonlyMap<string, Int32Array>,
  ): Generator<void, Map<string, Int32Array>, void> {
    const result = new Map<string, Int32Array>();
    let work = 0;
    for (const [key, docs] of lists) {
      const next = new Int32Array(docs.length);
      let length = 0;
      // A long list (an integration most entries have) is renumbered over several steps.
      for (let from = 0; from < docs.length; from += compactionStep.work) {
        const to = Math.min(docs.length, from + compactionStep.work);
        length = renumberList(docs, renumbered, capacity, next, length, from, to);
        work += to - from;
        if (work >= compactionStep.work) {
          work = 0;
          yield;
        }
      }
      if (length > 0) result.set(key, ascending(next.subarray(0, length)));
      work += 1;
    }
    return result;
  };
  const activeByIntegration = yield* renumberedLists(compiled.activeByIntegration);
  const byDomain = yield* renumberedLists(compiled.byDomain);
  const pruned = <Value>(map: ReadonlyMap<string, Value>): Map<string, Value> =>
    map instanceof OverlayMap ? map.pruned() : (map as Map<string, Value>);
  // One map per step: each is work per changed key, and there are four.
  const entriesById = pruned(snapshot.entriesById);
  yield;
  const exactIndex = pruned(snapshot.exactIndex);
  yield;
  const aliasIndex = pruned(snapshot.aliasIndex);
  yield;
  const relationIndex = pruned(snapshot.relationIndex);
  yield;
  const next: KnowledgeIndexSnapshot = {
    entriesById,
    exactIndex,
    aliasIndex,
    relationIndex,
    lexical,
    entryCount: snapshot.entryCount,
  };
  registerCompiledSnapshot(next, {
    lexical,
    entries: [],
    universalMask,
    activeByIntegration,
    byDomain,
    phraseTrie: compiled.phraseTrie,
    eligibilityCache: createEligibilityCache(lexical.capacity),
  });
  return Object.freeze(next);
}
