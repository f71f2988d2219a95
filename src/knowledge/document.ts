/**
 * The search document of an entry (its phrases and the tokens of its five fields) and the resolution of field
 * weights.
 */
import type {
  IndexedKnowledgeDocument,
  KnowledgeFieldWeights,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import { DEFAULT_FIELD_WEIGHTS, KNOWLEDGE_FIELD_NAMES } from "./defaults.js";
import { normalizePhrases, tokenize } from "./normalize.js";

/** The raw texts of a document's fields, kept so the index can tokenize and intern in one pass. */
export const RAW_FIELD_TEXTS = Symbol("lexground.rawFieldTexts");
/** A search document built by {@link buildDocument}, carrying its raw field texts. */
export type DocumentWithRawTexts = IndexedKnowledgeDocument & {
  [RAW_FIELD_TEXTS]?: readonly (readonly string[])[];
};

/**
 * Builds the search document of an entry: its id and title phrases and the tokens of its five fields. The token
 * arrays are computed when first read; {@link KnowledgeLexicalIndex.add} reads the raw texts instead and
 * tokenizes them straight into term ids, which yields the same terms without a string per token.
 */
export function buildDocument(entry: NormalizedKnowledgeEntry): IndexedKnowledgeDocument {
  let fields: IndexedKnowledgeDocument["fields"] | undefined;
  const document: DocumentWithRawTexts = {
    id: entry.id,
    exactKeys: normalizePhrases([entry.id, entry.title]),
    get fields() {
      fields ??= {
        title: tokenize(entry.title),
        aliases: tokenizeList(entry.aliases),
        keywords: tokenizeList(entry.keywords),
        summary: tokenize(entry.summary),
        body: tokenize(entry.body),
      };
      return fields;
    },
    [RAW_FIELD_TEXTS]: entryFieldTexts(entry),
  };
  return document;
}

/** The raw texts of an entry's five fields, in field order. */
export function entryFieldTexts(entry: NormalizedKnowledgeEntry): readonly (readonly string[])[] {
  return [[entry.title], entry.aliases, entry.keywords, [entry.summary], [entry.body]];
}

/** The tokens of a list of texts, in order (a field's tokens). */
export function tokenizeList(values: readonly string[]): string[] {
  if (values.length === 0) return [];
  if (values.length === 1) return tokenize(values[0]);
  const tokens: string[] = [];
  for (const value of values) for (const token of tokenize(value)) tokens.push(token);
  return tokens;
}

/** Merges partial weights over the defaults. */
export function resolveFieldWeights(weights?: Partial<KnowledgeFieldWeights> | null): KnowledgeFieldWeights {
  const resolved = { ...DEFAULT_FIELD_WEIGHTS };
  if (weights) {
    for (const field of KNOWLEDGE_FIELD_NAMES) {
      const value = weights[field];
      if (value !== undefined) resolved[field] = value;
    }
  }
  return resolved;
}
