/**
 * Changing a snapshot without rebuilding it: {@link applySnapshotChanges} derives a new immutable snapshot (the
 * old one keeps serving whoever holds it) whose maps are overlays over the base snapshot's maps and whose lexical
 * index is derived with `withChanges`; {@link compactSnapshotSteps} folds the changes into a fresh snapshot,
 * identical to a full build of the same entries, in slices.
 */
import type { KnowledgeIndexSnapshot, NormalizedKnowledgeEntry } from "../types/knowledge.js";
import type { KnowledgeLexicalIndex } from "./lexicalIndex.js";
import { normalizePhrases, phraseKey } from "./normalize.js";
import type { PhraseTrie } from "./phraseTrie.js";
import {
  type CompiledSnapshot,
  createEligibilityCache,
  getCompiledSnapshot,
  registerCompiledSnapshot,
  SnapshotMaps,
} from "./snapshot.js";

const REMOVED = Symbol("lexground.removed");

/**
 * A read-only map: a base map plus changes (a value, or removed). Snapshots are immutable, so `set`, `delete` and
 * `clear` throw. Iteration yields the base's unchanged entries, then the changed ones.
 */
export class OverlayMap<Key, Value> extends Map<Key, Value> {
  private readonly base: ReadonlyMap<Key, Value>;
  private readonly changes: ReadonlyMap<Key, Value | typeof REMOVED>;
  private readonly count: number;

  constructor(base: ReadonlyMap<Key, Value>, changes: ReadonlyMap<Key, Value | typeof REMOVED>) {
    super();
    this.base = base;
    this.changes = changes;
    let count = base.size;
    for (const [key, value] of changes) {
      const inBase = base.has(key);
      if (value === REMOVED) {
        if (inBase) count--;
      } else if (!inBase) count++;
    }
    this.count = count;
  }

  /** The base map of an overlay, or the map itself. */
  static baseOf<Key, Value>(map: ReadonlyMap<Key, Value>): ReadonlyMap<Key, Value> {
    return map instanceof OverlayMap ? (map.base as ReadonlyMap<Key, Value>) : map;
  }

  /** The changes of an overlay relative to its base (empty for a plain map). */
  static changesOf<Key, Value>(map: ReadonlyMap<Key, Value>): Map<Key, Value | typeof REMOVED> {
    return map instanceof OverlayMap ? new Map(map.changes as Map<Key, Value | typeof REMOVED>) : new Map();
  }

  override get size(): number {
    return this.count;
  }
  override get(key: Key): Value | undefined {
    const changed = this.changes.get(key);
    if (changed !== undefined) return changed === REMOVED ? undefined : changed;
    return this.base.get(key);
  }
  override has(key: Key): boolean {
    const changed = this.changes.get(key);
    if (changed !== undefined) return changed !== REMOVED;
    return this.base.has(key);
  }
  override *entries(): MapIterator<[Key, Value]> {
    for (const entry of this.base) if (!this.changes.has(entry[0])) yield entry;
    for (const [key, value] of this.changes) if (value !== REMOVED) yield [key, value];
  }
  override *keys(): MapIterator<Key> {
    for (const [key] of this.entries()) yield key;
  }
  override *values(): MapIterator<Value> {
    for (const [, value] of this.entries()) yield value;
  }
  override [Symbol.iterator](): MapIterator<[Key, Value]> {
    return this.entries();
  }
  override forEach(
    callback: (value: Value, key: Key, map: Map<Key, Value>) => void,
    thisArg?: unknown,
  ): void {
    for (const [key, value] of this.entries()) callback.call(thisArg, value, key, this);
  }
  override set(): this {
    throw new TypeError("a knowledge index snapshot is immutable");
  }
  override delete(): boolean {
    throw new TypeError("a knowledge index snapshot is immutable");
  }
  override clear(): void {
    throw new TypeError("a knowledge index snapshot is immutable");
  }
}

/** Keys added to a (shared, grow-only) phrase trie after its snapshot was built, so none is added twice. */
const addedTrieKeys = new WeakMap<PhraseTrie, Set<string>>();

/** The compiled companion of the full build that derived snapshots start from. */
const baseCompiled = new WeakMap<CompiledSnapshot, CompiledSnapshot>();

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

  const entries = OverlayMap.changesOf(snapshot.entriesById);
  const relations = OverlayMap.changesOf(snapshot.relationIndex);
  const exact = OverlayMap.changesOf(snapshot.exactIndex);
  const alias = OverlayMap.changesOf(snapshot.aliasIndex);
  const current = <Value>(
    changes: Map<string, Value | typeof REMOVED>,
    map: Map<string, Value>,
    key: string,
  ) => {
    const changed = changes.get(key);
    return changed === undefined ? map.get(key) : changed === REMOVED ? undefined : changed;
  };
  const editKey = (
    changes: Map<string, Set<string> | typeof REMOVED>,
    map: Map<string, Set<string>>,
    key: string,
    id: string,
    add: boolean,
  ): void => {
    const ids = new Set(current(changes, map, key) ?? []);
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
  const trie = compiled.phraseTrie;
  let trieKeys = addedTrieKeys.get(trie);
  if (!trieKeys) {
    trieKeys = new Set();
    addedTrieKeys.set(trie, trieKeys);
  }
  const exactBase = OverlayMap.baseOf(snapshot.exactIndex);
  const aliasBase = OverlayMap.baseOf(snapshot.aliasIndex);
  const addToTrie = (key: string): void => {
    // A shared trie may hold more keys than a snapshot's maps: a phrase without ids in the maps matches nothing.
    if (exactBase.has(key) || aliasBase.has(key) || trieKeys.has(key)) return;
    trieKeys.add(key);
    trie.add(key);
  };
  for (const entry of upserted) {
    entries.set(entry.id, entry);
    const related =
      entry.parentEntryId !== undefined
        ? [...entry.relatedEntryIds, entry.parentEntryId]
        : entry.relatedEntryIds.slice();
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
  const entriesById = new OverlayMap(OverlayMap.baseOf(snapshot.entriesById), entries);
  const next: KnowledgeIndexSnapshot = {
    entriesById,
    exactIndex: new OverlayMap(exactBase, exact),
    aliasIndex: new OverlayMap(aliasBase, alias),
    relationIndex: new OverlayMap(OverlayMap.baseOf(snapshot.relationIndex), relations),
    lexical,
    entryCount: entriesById.size,
  };
  const nextCompiled = deriveCompiled(baseCompiled.get(compiled) ?? compiled, lexical, entriesById);
  baseCompiled.set(nextCompiled, baseCompiled.get(compiled) ?? compiled);
  registerCompiledSnapshot(next, nextCompiled);
  return Object.freeze(next);
}

/**
 * The compiled companion of a derived snapshot, from its base's: the base's lists without dead documents, plus
 * the added documents. Linear in the number of documents (typed-array work), not in their text.
 */
function deriveCompiled(
  base: CompiledSnapshot,
  lexical: KnowledgeLexicalIndex,
  entriesById: ReadonlyMap<string, NormalizedKnowledgeEntry>,
): CompiledSnapshot {
  const baseCount = base.universalMask.length;
  const capacity = lexical.capacity;
  const live = (doc: number): boolean => lexical.isLiveDocument(doc);
  const universalMask = new Uint8Array(capacity);
  const keep = new Uint8Array(baseCount);
  for (let doc = 0; doc < baseCount; doc++) {
    if (!live(doc)) continue;
    keep[doc] = 1;
    universalMask[doc] = base.universalMask[doc]!;
  }
  const integrationLists = new Map<string, number[]>();
  const domainLists = new Map<string, number[]>();
  const filtered = (lists: Map<string, Int32Array>, target: Map<string, number[]>): void => {
    for (const [key, docs] of lists) {
      const list: number[] = [];
      for (const doc of docs) if (keep[doc] === 1) list.push(doc);
      target.set(key, list);
    }
  };
  filtered(base.activeByIntegration, integrationLists);
  filtered(base.byDomain, domainLists);
  const push = (lists: Map<string, number[]>, key: string, doc: number): void => {
    let list = lists.get(key);
    if (!list) {
      list = [];
      lists.set(key, list);
    }
    list.push(doc);
  };
  for (let doc = baseCount; doc < capacity; doc++) {
    if (!live(doc)) continue;
    const entry = entriesById.get(lexical.idAt(doc))!;
    push(domainLists, entry.domain, doc);
    if (entry.status !== "active") continue;
    if (entry.integrations.length === 0) {
      universalMask[doc] = 1;
      continue;
    }
    const seen = new Set<string>();
    for (const integration of entry.integrations) {
      const key = integration.toLowerCase();
      if (seen.has(key)) continue;
      seen.add(key);
      push(integrationLists, key, doc);
    }
  }
  const toTyped = (lists: Map<string, number[]>): Map<string, Int32Array> => {
    const typed = new Map<string, Int32Array>();
    for (const [key, list] of lists) if (list.length > 0) typed.set(key, Int32Array.from(list));
    return typed;
  };
  return {
    lexical,
    // Entries are read through the snapshot's `entriesById`; the dense list is not materialized.
    entries: [],
    universalMask,
    activeByIntegration: toTyped(integrationLists),
    byDomain: toTyped(domainLists),
    phraseTrie: base.phraseTrie,
    eligibilityCache: createEligibilityCache(capacity),
  };
}

/** Whether a snapshot carries changes that a compaction would fold in. */
export function hasSnapshotChanges(snapshot: KnowledgeIndexSnapshot): boolean {
  return snapshot.entriesById instanceof OverlayMap;
}

/**
 * A fresh snapshot equal to `snapshot` (a full build of its entries), computed from its stored postings in slices:
 * the generator yields between slices, so a background compaction never holds the event loop for long.
 */
export function* compactSnapshotSteps(
  snapshot: KnowledgeIndexSnapshot,
): Generator<void, KnowledgeIndexSnapshot, void> {
  const compiled = getCompiledSnapshot(snapshot);
  if (!compiled || !hasSnapshotChanges(snapshot)) return snapshot;
  const lexical = yield* compiled.lexical.compactSteps();
  const maps = new SnapshotMaps();
  const entries: NormalizedKnowledgeEntry[] = new Array(lexical.size);
  for (let doc = 0; doc < lexical.size; doc++) {
    const entry = snapshot.entriesById.get(lexical.idAt(doc))!;
    entries[doc] = entry;
    maps.add(entry, normalizePhrases([entry.id, entry.title]));
    if ((doc & 1023) === 1023) yield;
  }
  return yield* maps.finishSteps(lexical, entries);
}
