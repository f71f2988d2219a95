/**
 * The maps of a snapshot derived on demand from compact state instead of held as objects: the phrase maps
 * (`exactIndex`, `aliasIndex`: phrase key → entry ids) as lists per key of the snapshot's phrase trie instead of a
 * `Set` per key (at a million entries the sets alone held about half a gigabyte: three million keys, most with one
 * id), and `relationIndex` read from the entries. Built snapshots and snapshots loaded from an artifact share them.
 */
import type { NormalizedKnowledgeEntry } from "../types/knowledge.js";
import { buildInt32Array } from "./buildMemory.js";
import type { EntryIds } from "./denseIds.js";
import type { PhraseTrie } from "./phraseTrie.js";

/**
 * A read-only `Map` whose content is derived on demand from a snapshot's arrays: a subclass answers `get`, `has`,
 * `size` and `entries`; iteration, `forEach` and the refused writes are the same for every such map.
 */
export abstract class DerivedReadOnlyMap<V> extends Map<string, V> {
  /** What a refused write says (a subclass names its own map). */
  protected get readOnlyMessage(): string {
    return "the maps of an index snapshot are read-only";
  }
  abstract override get(key: string): V | undefined;
  abstract override has(key: string): boolean;
  abstract override get size(): number;
  abstract override entries(): MapIterator<[string, V]>;
  override *keys(): MapIterator<string> {
    for (const [key] of this.entries()) yield key;
  }
  override *values(): MapIterator<V> {
    for (const [, value] of this.entries()) yield value;
  }
  override [Symbol.iterator](): MapIterator<[string, V]> {
    return this.entries();
  }
  override forEach(
    callback: (value: V, key: string, map: Map<string, V>) => void,
    thisArgument?: unknown,
  ): void {
    for (const [key, value] of this.entries()) callback.call(thisArgument, value, key, this);
  }
  override set(): this {
    throw new TypeError(this.readOnlyMessage);
  }
  override delete(): boolean {
    throw new TypeError(this.readOnlyMessage);
  }
  override clear(): void {
    throw new TypeError(this.readOnlyMessage);
  }
}

/**
 * `entriesById` of a built snapshot: the entries by dense id, found through the lexical index's id lookup (a binary
 * search over the sorted ids in a full build) instead of a `Map` of its own, in dense (id) order when iterated.
 */
export class DenseEntryMap extends DerivedReadOnlyMap<NormalizedKnowledgeEntry> {
  constructor(
    private readonly byDenseId: readonly NormalizedKnowledgeEntry[],
    private readonly denseIdOf: (id: string) => number,
  ) {
    super();
  }
  override get(id: string): NormalizedKnowledgeEntry | undefined {
    const doc = typeof id === "string" ? this.denseIdOf(id) : -1;
    return doc < 0 ? undefined : this.byDenseId[doc];
  }
  override has(id: string): boolean {
    return typeof id === "string" && this.denseIdOf(id) >= 0;
  }
  override get size(): number {
    return this.byDenseId.length;
  }
  override *entries(): MapIterator<[string, NormalizedKnowledgeEntry]> {
    for (const entry of this.byDenseId) yield [entry.id, entry];
  }
  override *values(): MapIterator<NormalizedKnowledgeEntry> {
    yield* this.byDenseId;
  }
}

/**
 * Phrase key → ids, read from per-key lists over a phrase trie: the ids of the key at trie index `k` are
 * `ids[docs[offsets[k]]] … ids[docs[offsets[k + 1] - 1]]`, in that order. Keys the trie gained after the lists
 * were made (a later update shares the trie) have no ids here. Each `get` returns a new `Set`.
 */
export class PhraseListMap extends DerivedReadOnlyMap<Set<string>> {
  private count = -1;
  constructor(
    readonly trie: PhraseTrie,
    readonly offsets: Int32Array,
    readonly docs: Int32Array,
    readonly ids: EntryIds,
  ) {
    super();
  }
  /** The ids of the key at trie index `index` (what `get` returns for that key). */
  idsAt(index: number): Set<string> | undefined {
    if (index < 0 || index + 1 >= this.offsets.length) return undefined;
    this.checkList(index);
    const start = this.offsets[index]!;
    const end = this.offsets[index + 1]!;
    if (start === end) return undefined;
    const ids = new Set<string>();
    for (let position = start; position < end; position++) ids.add(this.ids.at(this.docs[position]!)!);
    return ids;
  }

  /**
   * Visits the ids of the key at trie index `index` in the order of {@link idsAt}'s set, each with its position in
   * `ids` (`slot`), without making the set: at a million entries a turn's phrase lookup met thousands of ids, and
   * the eligibility test then looked each one up again by name. A list whose slots are not strictly ascending
   * (never made here) is visited through the set, with slot -1.
   */
  visitAt(index: number, visit: (id: string, slot: number) => void): void {
    if (index < 0 || index + 1 >= this.offsets.length) return;
    this.checkList(index);
    const start = this.offsets[index]!;
    const end = this.offsets[index + 1]!;
    const docs = this.docs;
    for (let position = start + 1; position < end; position++) {
      if (docs[position]! > docs[position - 1]!) continue;
      for (const id of this.idsAt(index)!) visit(id, -1);
      return;
    }
    // Strictly ascending slots: distinct ids, in the set's order.
    for (let position = start; position < end; position++) {
      const slot = docs[position]!;
      visit(this.ids.at(slot)!, slot);
    }
  }

  /** Checks the list of the key at trie index `index` before it is read (an artifact's, when first read). */
  protected checkList(_index: number): void {}

  /**
   * Makes `offsets` and `docs` whole before a caller reads them directly (an artifact's are read a block at a time:
   * see `artifactPhrases.ts`).
   */
  readAll(): void {}

  override get(key: string): Set<string> | undefined {
    return typeof key === "string" ? this.idsAt(this.trie.indexOf(key)) : undefined;
  }
  override has(key: string): boolean {
    if (typeof key !== "string") return false;
    const index = this.trie.indexOf(key);
    return index >= 0 && index + 1 < this.offsets.length && this.offsets[index + 1]! > this.offsets[index]!;
  }
  override get size(): number {
    if (this.count < 0) {
      let count = 0;
      for (let index = 0; index + 1 < this.offsets.length; index++)
        if (this.offsets[index + 1]! > this.offsets[index]!) count++;
      this.count = count;
    }
    return this.count;
  }
  override *entries(): MapIterator<[string, Set<string>]> {
    for (let index = 0; index + 1 < this.offsets.length; index++) {
      const ids = this.idsAt(index);
      if (ids) yield [this.trie.keyAt(index), ids];
    }
  }
}

/** An entry's relations as relation expansion reads them: its related ids, then its parent (a new array). */
export function entryRelationIds(entry: NormalizedKnowledgeEntry): string[] {
  return entry.parentEntryId !== undefined
    ? [...entry.relatedEntryIds, entry.parentEntryId]
    : entry.relatedEntryIds.slice();
}

/**
 * `relationIndex`: an entry's related ids then its parent (a new array per `get`), read from the entry; entries
 * without relations are absent. Iterates in the order of the entry map.
 */
export class RelationMap extends DerivedReadOnlyMap<string[]> {
  constructor(
    private readonly entryMap: ReadonlyMap<string, NormalizedKnowledgeEntry>,
    private readonly relationCount: number,
  ) {
    super();
  }
  override get(id: string): string[] | undefined {
    const entry = this.entryMap.get(id);
    if (!entry) return undefined;
    const relations = entryRelationIds(entry);
    return relations.length > 0 ? relations : undefined;
  }
  override has(id: string): boolean {
    return this.get(id) !== undefined;
  }
  override get size(): number {
    return this.relationCount;
  }
  override *entries(): MapIterator<[string, string[]]> {
    for (const id of this.entryMap.keys()) {
      const relations = this.get(id);
      if (relations) yield [id, relations];
    }
  }
}

/** A growable Int32 list (build state). */
class IntList {
  data: Int32Array<ArrayBufferLike> = new Int32Array(256);
  length = 0;
  push(value: number): void {
    if (this.length === this.data.length) {
      const grown = buildInt32Array(this.data.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    this.data[this.length++] = value;
  }
}

/**
 * Collects (key index, document) pairs of one phrase map while a snapshot is built, documents in ascending
 * order, then makes the per-key lists of a {@link PhraseListMap} in one counting pass. A pair repeated for the
 * same document (two of an entry's phrases with one key) is kept once, as a `Set` would.
 */
export class PhraseListsBuilder {
  private readonly keys = new IntList();
  private readonly docs = new IntList();
  /** Per key index: the last document filed under it, plus one (0 = none yet). */
  private lastDocument: Int32Array<ArrayBufferLike> = new Int32Array(1024);

  /** Files `doc` under the key at trie index `keyIndex` (documents must come in ascending order). */
  add(keyIndex: number, doc: number): void {
    if (keyIndex >= this.lastDocument.length) {
      let length = this.lastDocument.length * 2;
      while (length <= keyIndex) length *= 2;
      const grown = buildInt32Array(length);
      grown.set(this.lastDocument);
      this.lastDocument = grown;
    }
    if (this.lastDocument[keyIndex] === doc + 1) return;
    this.lastDocument[keyIndex] = doc + 1;
    this.keys.push(keyIndex);
    this.docs.push(doc);
  }

  /** The per-key lists over `keyCount` keys (the trie's size), each in ascending document order. */
  finish(keyCount: number): { offsets: Int32Array; docs: Int32Array } {
    this.lastDocument = new Int32Array(0);
    const offsets = new Int32Array(keyCount + 1);
    const count = this.keys.length;
    const keys = this.keys.data;
    const pairDocs = this.docs.data;
    for (let index = 0; index < count; index++) offsets[keys[index]! + 1]!++;
    for (let key = 0; key < keyCount; key++) offsets[key + 1]! += offsets[key]!;
    const cursor = offsets.slice(0, keyCount);
    const docs = new Int32Array(count);
    for (let index = 0; index < count; index++) docs[cursor[keys[index]!]!++] = pairDocs[index]!;
    return { offsets, docs };
  }
}
