/** The lists a generation stores beside its postings: phrase keys, scopes, relations. */
import { entryRelationIds } from "../knowledge/derivedMaps.js";
import { normalizePhrases, phraseKey, phraseWordCount } from "../knowledge/normalize.js";
import type { NormalizedKnowledgeEntry } from "../types/knowledge.js";

/**
 * The lists a generation stores beside its postings, filed entry by entry in dense-id order (a full publication
 * and an update file them the same way): phrase keys with the entries naming them exactly or as an alias, the
 * scope lists, and each entry's relations as dense ids.
 */
export class EntryListsCollector {
  /** Phrase key → dense ids naming it exactly (id, title) and as an alias; keys in first-seen order. */
  readonly phrases = new Map<string, { exact: number[]; alias: number[] }>();
  /** Words of the longest phrase key. */
  maxPhraseWords = 0;
  /** Dense ids not eligible in every scope: not active, or bound to integrations. */
  readonly restricted: number[] = [];
  /** Lowercased integration → dense ids of active entries bound to it. */
  readonly byIntegration = new Map<string, number[]>();
  /** Domain → dense ids. */
  readonly byDomain = new Map<string, number[]>();

  /** @param denseIds Entry id → dense id of every entry of the generation. */
  constructor(private readonly denseIds: ReadonlyMap<string, number>) {}

  /**
   * Files entry `doc` (dense ids must come in ascending order); returns the dense ids of its related entries then
   * its parent, in order, leaving out ids without an entry.
   */
  add(entry: NormalizedKnowledgeEntry, doc: number): number[] {
    for (const key of normalizePhrases([entry.id, entry.title])) this.addPhrase(key, doc, "exact");
    for (const alias of entry.aliases) this.addPhrase(phraseKey(alias), doc, "alias");
    pushTo(this.byDomain, entry.domain, doc);
    if (entry.status !== "active" || entry.integrations.length > 0) this.restricted.push(doc);
    if (entry.status === "active") {
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

  private addPhrase(key: string, doc: number, kind: "exact" | "alias"): void {
    if (key === "") return;
    let ids = this.phrases.get(key);
    if (!ids) {
      ids = { exact: [], alias: [] };
      this.phrases.set(key, ids);
      this.maxPhraseWords = Math.max(this.maxPhraseWords, phraseWordCount(key));
    }
    const list = ids[kind];
    if (list[list.length - 1] !== doc) list.push(doc);
  }
}

function pushTo(map: Map<string, number[]>, key: string, doc: number): void {
  const list = map.get(key);
  if (list) list.push(doc);
  else map.set(key, [doc]);
}
