/** The lists a generation stores beside its postings: phrase keys, scopes, relations. */
import { entryRelationIds } from "../knowledge/derivedMaps.js";
import { normalizePhrases, phraseKey, phraseWordCount } from "../knowledge/normalize.js";
import { IntBuffer } from "../knowledge/postings.js";
import type { NormalizedKnowledgeEntry } from "../types/knowledge.js";

/** The entries naming one phrase key: exactly (id, title) and as an alias, dense ids ascending. */
export type PhraseIds = { exact: ArrayLike<number>; alias: ArrayLike<number> };

/** Filings of a phrase key: the key's index times two, plus 1 for an alias (0: exact). */
const ALIAS = 1;

/**
 * Phrase key → the entries naming it, filed entry by entry in dense-id order and read back in first-seen order of
 * the keys. Held as one number per key (in a `Map`) and two integers per filing (typed arrays): an object and two
 * arrays per key (300k keys at 100k entries, 112 MB) grew the publishing heap, whose registry made each full
 * collection they set off cost half a second.
 */
export class PhraseLists implements Iterable<[string, PhraseIds]> {
  private readonly indexes = new Map<string, number>();
  private readonly keys: string[] = [];
  /** Per key: the last dense id filed, exactly and as an alias (-1: none), so that an entry is filed once. */
  private readonly lastExact = new IntBuffer();
  private readonly lastAlias = new IntBuffer();
  /** Per filing: the key's index times two plus its kind, and the dense id. */
  private readonly filedKeys = new IntBuffer();
  private readonly filedDocs = new IntBuffer();
  /** Words of the longest key. */
  maxPhraseWords = 0;

  /** Keys held. */
  get size(): number {
    return this.keys.length;
  }

  /** Files `doc` under `key` (not empty), exactly or as an alias; dense ids come in ascending order. */
  add(key: string, doc: number, alias: boolean): void {
    let index = this.indexes.get(key);
    if (index === undefined) {
      index = this.keys.length;
      this.indexes.set(key, index);
      this.keys.push(key);
      this.lastExact.push(-1);
      this.lastAlias.push(-1);
      this.maxPhraseWords = Math.max(this.maxPhraseWords, phraseWordCount(key));
    }
    const last = alias ? this.lastAlias.data : this.lastExact.data;
    if (last[index] === doc) return;
    last[index] = doc;
    this.filedKeys.push(index * 2 + (alias ? ALIAS : 0));
    this.filedDocs.push(doc);
  }

  /**
   * Each key with its entries, in first-seen order of the keys. The id lists are views of one array made for the
   * iteration (every filing sorted by key, exact before alias, then in filing order).
   */
  *[Symbol.iterator](): Generator<[string, PhraseIds]> {
    const lists = this.keys.length * 2;
    const starts = new Int32Array(lists + 1);
    const filed = this.filedKeys.length;
    const filedKeys = this.filedKeys.data;
    const filedDocs = this.filedDocs.data;
    for (let filing = 0; filing < filed; filing++) starts[filedKeys[filing]! + 1]!++;
    for (let list = 0; list < lists; list++) starts[list + 1]! += starts[list]!;
    const cursor = starts.slice(0, lists);
    const docs = new Int32Array(filed);
    for (let filing = 0; filing < filed; filing++) docs[cursor[filedKeys[filing]!]!++] = filedDocs[filing]!;
    for (let index = 0; index < this.keys.length; index++) {
      const exact = docs.subarray(starts[index * 2]!, starts[index * 2 + 1]!);
      const alias = docs.subarray(starts[index * 2 + 1]!, starts[index * 2 + 2]!);
      yield [this.keys[index]!, { exact, alias }];
    }
  }
}

/**
 * The lists a generation stores beside its postings, filed entry by entry in dense-id order (a full publication
 * and an update file them the same way): phrase keys with the entries naming them exactly or as an alias, the
 * scope lists, and each entry's relations as dense ids.
 */
export class EntryListsCollector {
  /** Phrase key → dense ids naming it exactly (id, title) and as an alias; keys in first-seen order. */
  readonly phrases = new PhraseLists();
  /** Dense ids not eligible in every scope: not active, or bound to integrations. */
  readonly restricted: number[] = [];
  /** Lowercased integration → dense ids of active entries bound to it. */
  readonly byIntegration = new Map<string, number[]>();
  /** Domain → dense ids. */
  readonly byDomain = new Map<string, number[]>();

  /** @param denseIds Entry id → dense id of every entry of the generation. */
  constructor(private readonly denseIds: ReadonlyMap<string, number>) {}

  /** Words of the longest phrase key. */
  get maxPhraseWords(): number {
    return this.phrases.maxPhraseWords;
  }

  /**
   * Files entry `doc` (dense ids must come in ascending order); returns the dense ids of its related entries then
   * its parent, in order, leaving out ids without an entry.
   */
  add(entry: NormalizedKnowledgeEntry, doc: number): number[] {
    for (const key of normalizePhrases([entry.id, entry.title])) this.addPhrase(key, doc, false);
    for (const alias of entry.aliases) this.addPhrase(phraseKey(alias), doc, true);
    return this.addLists(entry, doc);
  }

  /**
   * {@link add} with the entry's phrase keys computed by a build worker (`PartPhrases`: `exactCount` exact keys
   * from `start` in `keys`, then `aliasCount` alias keys), the same keys `add` computes.
   */
  addWithKeys(
    entry: NormalizedKnowledgeEntry,
    doc: number,
    keys: readonly string[],
    start: number,
    exactCount: number,
    aliasCount: number,
  ): number[] {
    const exactEnd = start + exactCount;
    for (let index = start; index < exactEnd; index++) this.addPhrase(keys[index]!, doc, false);
    for (let index = exactEnd; index < exactEnd + aliasCount; index++)
      this.addPhrase(keys[index]!, doc, true);
    return this.addLists(entry, doc);
  }

  private addLists(entry: NormalizedKnowledgeEntry, doc: number): number[] {
    pushTo(this.byDomain, entry.domain, doc);
    if (entry.status !== "active" || entry.integrations.length > 0) this.restricted.push(doc);
    if (entry.status === "active" && entry.integrations.length > 0) {
      const seen = new Set<string>();
      for (const integration of entry.integrations) {
        const key = integration.toLowerCase();
        if (seen.has(key)) continue;
        seen.add(key);
        pushTo(this.byIntegration, key, doc);
      }
    }
    const relations: number[] = [];
    for (const id of entryRelationIds(entry)) {
      const related = this.denseIds.get(id);
      if (related !== undefined) relations.push(related);
    }
    return relations;
  }

  private addPhrase(key: string, doc: number, alias: boolean): void {
    if (key !== "") this.phrases.add(key, doc, alias);
  }
}

function pushTo(map: Map<string, number[]>, key: string, doc: number): void {
  const list = map.get(key);
  if (list) list.push(doc);
  else map.set(key, [doc]);
}
