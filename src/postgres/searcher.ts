/**
 * A turn's searches against one generation: the candidates (the postings of the query's terms fetched, or read
 * from the posting cache, and scored in the app: `postingSearch.ts`), then the selected entries with their
 * relations' targets. Turns read neither the impact blocks nor the forward rows of a layout-2 generation.
 */
import { getAnalyzer } from "../knowledge/analyzer.js";
import { MAX_QUERY_TOKENS } from "../knowledge/defaults.js";
import { LruCache } from "../knowledge/lruCache.js";
import type {
  KnowledgeCandidateEvidence,
  KnowledgeCandidateQuery,
  KnowledgeSearchBackend,
  KnowledgeSelectionEntries,
} from "../knowledge/searchBackend.js";
import type { NormalizedKnowledgeEntry } from "../types/knowledge.js";
import type { PostgresBackend } from "./backend.js";
import { GenerationEligibility } from "./eligibility.js";
import { KEPT_ENTRY_CHARACTERS } from "./generationCache.js";
import { PostingSearch } from "./postingSearch.js";
import type { GenerationRow } from "./serving.js";
import {
  entriesByIdStatement,
  type GenerationTables,
  int4Array,
  scopesStatement,
  selectionEntriesStatement,
} from "./sql.js";

/** A kept entry: its relations' dense ids (null: none; undefined: not known) and its text's length. */
type KeptEntry = {
  entry: NormalizedKnowledgeEntry;
  relations: number[] | null | undefined;
  characters: number;
};

/** The dense ids of a query's candidates, kept for its `selectionEntries` call. */
const candidateDocs = new WeakMap<KnowledgeCandidateQuery, Map<string, number>>();

/** A turn's searches against one generation. */
export class PostgresSearcher implements KnowledgeSearchBackend {
  private readonly entriesText: string;
  private readonly entriesByIdText: string;
  private readonly analyzer: ReturnType<typeof getAnalyzer>;
  private readonly bm25f: boolean;
  private readonly scored: PostingSearch;
  private readonly eligibility: GenerationEligibility;
  /**
   * Selected entries kept for the next turns: the entry, and its relations' dense ids (null: none; undefined: not
   * known, the entry was read as another's relation); weighed by the characters of the entry's text.
   */
  private readonly entries = new LruCache<number, KeptEntry>(
    KEPT_ENTRY_CHARACTERS,
    undefined,
    (kept) => kept.characters,
  );

  constructor(
    private readonly backend: PostgresBackend,
    private readonly generation: GenerationRow,
    tables: GenerationTables,
  ) {
    this.bm25f = generation.parameters.scoring === "bm25f";
    this.entriesText = selectionEntriesStatement(tables);
    this.entriesByIdText = entriesByIdStatement(tables);
    const statementName = (kind: string) => this.statementName(kind);
    this.eligibility = new GenerationEligibility(backend, generation, scopesStatement(tables), statementName);
    // The default posting cache is sized for the generation served (`defaultPostingCacheBytes`).
    backend.postingCache.fitTo(generation.entryCount);
    this.scored = new PostingSearch(
      backend,
      generation,
      tables,
      this.bm25f,
      statementName,
      this.eligibility,
      backend.postingCache,
    );
    this.analyzer = getAnalyzer(generation.parameters.analyzer);
  }

  private statementName(kind: string): string {
    return `lexground:${this.backend.schema}:g${this.generation.generation}:${kind}`;
  }

  /** The query's analyzed terms, distinct, in first-occurrence order, at most `MAX_QUERY_TOKENS` (as in memory). */
  private terms(tokens: readonly string[]): string[] {
    const analyzed = this.analyzer ? this.analyzer(tokens) : tokens;
    const seen = new Set<string>();
    for (const token of analyzed) {
      if (seen.has(token)) continue;
      if (seen.size >= MAX_QUERY_TOKENS) break;
      seen.add(token);
    }
    return [...seen];
  }

  async candidates(query: KnowledgeCandidateQuery): Promise<KnowledgeCandidateEvidence> {
    const topK = query.topK > 0 ? Math.min(Math.ceil(query.topK), 2_147_483_647) : 0;
    const terms = topK > 0 ? this.terms(query.lexicalTokens) : [];
    const docs = new Map<string, number>();
    candidateDocs.set(query, docs);
    if (terms.length === 0 && (query.phraseTokens.length === 0 || this.generation.maxPhraseWords === 0))
      return { exact: new Map(), alias: new Map(), matches: [] };
    const started = performance.now();
    const scored = await this.scored.candidates(query, terms, topK, docs);
    this.backend.turnProfile?.add("scored", performance.now() - started);
    return scored;
  }

  /** The generation's entries with these ids (see `KnowledgeBackendIndex.entriesById`). */
  async entriesById(ids: readonly string[]): Promise<NormalizedKnowledgeEntry[]> {
    if (ids.length === 0) return [];
    const result = await this.backend.read({
      name: this.statementName("entries-by-id"),
      text: this.entriesByIdText,
      // The id column holds each id as JSON text (so a NUL or a lone surrogate is stored as an escape).
      values: [ids.map((id) => JSON.stringify(id))],
    });
    return result.rows.map((row) => JSON.parse(String(row.entry)) as NormalizedKnowledgeEntry);
  }

  async selectionEntries(
    ids: readonly string[],
    query: KnowledgeCandidateQuery,
  ): Promise<KnowledgeSelectionEntries> {
    const known = candidateDocs.get(query);
    const docs: number[] = [];
    for (const id of ids) {
      const doc = known?.get(id);
      if (doc === undefined) throw new Error(`${JSON.stringify(id)} is not a candidate of this query`);
      docs.push(doc);
    }
    const started = performance.now();
    const kept = this.keptSelection(docs);
    if (kept) {
      this.backend.turnProfile?.add("entries-kept", performance.now() - started);
      return kept;
    }
    const result = await this.backend.read({
      name: `lexground:${this.backend.schema}:g${this.generation.generation}:entries`,
      text: this.entriesText,
      values: [int4Array(docs)],
    });
    this.backend.turnProfile?.add("entries", performance.now() - started);
    const primaries = new Set(docs);
    const byDoc = new Map<number, NormalizedKnowledgeEntry>();
    const relationDocs = new Map<string, number[]>();
    for (const row of result.rows) {
      const doc = Number(row.doc);
      const text = String(row.entry);
      const entry = JSON.parse(text) as NormalizedKnowledgeEntry;
      const characters = text.length;
      byDoc.set(doc, entry);
      const relations = Array.isArray(row.relations) ? row.relations.map(Number) : null;
      if (relations) relationDocs.set(entry.id, relations);
      // A primary row tells its relations (null: none); a related row only its entry.
      if (primaries.has(doc)) this.entries.set(doc, { entry, relations, characters });
      else if (this.entries.get(doc) === undefined)
        this.entries.set(doc, { entry, relations: undefined, characters });
    }
    return this.selection(byDoc, relationDocs);
  }

  /**
   * The selection of `docs` from the kept entries, or null unless every one is kept with its relations and every
   * relation's target is kept too (then it equals what the entries statement returns).
   */
  private keptSelection(docs: readonly number[]): KnowledgeSelectionEntries | null {
    const byDoc = new Map<number, NormalizedKnowledgeEntry>();
    const relationDocs = new Map<string, number[]>();
    for (const doc of docs) {
      const kept = this.entries.get(doc);
      if (kept === undefined || kept.relations === undefined) return null;
      byDoc.set(doc, kept.entry);
      if (kept.relations) relationDocs.set(kept.entry.id, kept.relations);
    }
    for (const relations of relationDocs.values())
      for (const doc of relations) {
        if (byDoc.has(doc)) continue;
        const kept = this.entries.get(doc);
        if (kept === undefined) return null;
        byDoc.set(doc, kept.entry);
      }
    return this.selection(byDoc, relationDocs);
  }

  /** The selection's lookups over entries by dense id and relations (dense ids) by entry id. */
  private selection(
    byDoc: Map<number, NormalizedKnowledgeEntry>,
    relationDocs: Map<string, number[]>,
  ): KnowledgeSelectionEntries {
    const byId = new Map<string, NormalizedKnowledgeEntry>();
    for (const entry of byDoc.values()) byId.set(entry.id, entry);
    return {
      entry: (id) => byId.get(id),
      relations: (id) => {
        const related = relationDocs.get(id);
        if (!related) return undefined;
        const relatedIds: string[] = [];
        for (const doc of related) {
          const entry = byDoc.get(doc);
          if (entry) relatedIds.push(entry.id);
        }
        return relatedIds;
      },
    };
  }
}
