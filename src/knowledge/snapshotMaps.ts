/**
 * The phrase and relation maps of a snapshot, filled entry by entry while it is built (or from the entries of a
 * loaded lexical index), then frozen with the snapshot's compiled companion.
 */
import type { KnowledgeIndexSnapshot, NormalizedKnowledgeEntry } from "../types/knowledge.js";
import { compileSnapshotSteps, drain, registerCompiledSnapshot } from "./compiledSnapshot.js";
import { DenseEntryMap, PhraseListMap, PhraseListsBuilder, RelationMap } from "./derivedMaps.js";
import type { KnowledgeLexicalIndex } from "./lexicalIndex.js";
import { normalizePhrases, phraseKey } from "./normalize.js";
import { PhraseTrie } from "./phraseTrie.js";

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
    registerCompiledSnapshot(snapshot, compiled);
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
