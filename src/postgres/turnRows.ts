/** Reading a turn's rows: field numbers and names, and phrase hits in the in-memory lookup's order. */
import type { KnowledgeFieldName } from "../types/knowledge.js";

export const FIELD_NAMES: readonly KnowledgeFieldName[] = ["title", "aliases", "keywords", "summary", "body"];
export const FIELD_COUNT = FIELD_NAMES.length;

/** A phrase hit row: kind 1 exact, 2 alias; the n-gram's number `ord`; the entry's dense id and id. */
export type PhraseHitRow = { kind: number; ord: number; doc: number; id: string };

/**
 * The phrase of n-gram number `ord` (`size × (tokens + 1) + start`, as the candidates statement numbers them),
 * or null when the same phrase occurred earlier in generation order (each distinct phrase counts once).
 */
function phraseOf(tokens: readonly string[], ord: number, first: Map<string, number>): string | null {
  const size = Math.floor(ord / (tokens.length + 1));
  const start = ord % (tokens.length + 1);
  const phrase = tokens.slice(start, start + size).join(" ");
  const seen = first.get(phrase);
  if (seen === undefined) first.set(phrase, ord);
  return seen === undefined || seen === ord ? phrase : null;
}

/** Phrase hits in phrase generation order, ids of one phrase in dense-id order (the in-memory sets' order). */
export function phraseHits(
  tokens: readonly string[],
  hits: PhraseHitRow[],
): { exact: Map<string, string[]>; alias: Map<string, string[]> } {
  const exact = new Map<string, string[]>();
  const alias = new Map<string, string[]>();
  hits.sort((left, right) => left.ord - right.ord || left.doc - right.doc);
  const first = new Map<string, number>();
  for (const hit of hits) {
    const target = hit.kind === 1 ? exact : alias;
    const phrase = phraseOf(tokens, hit.ord, first);
    if (phrase === null) continue;
    const list = target.get(hit.id);
    if (list) list.push(phrase);
    else target.set(hit.id, [phrase]);
  }
  return { exact, alias };
}
