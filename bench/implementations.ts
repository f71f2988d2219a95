/**
 * The four benchmarked implementations behind one shape: build an index from the workload's entries, then answer
 * three kinds of query.
 *
 * - `lexical`: the query's tokens, BM25 top `candidateLimit × 2` over every entry (no eligibility, no phrases).
 * - `select`: what `retrieve()` does: eligibility before top-K, then ranking and cuts. lexground and the plain
 *   baseline run the whole SPEC §5-§7 pipeline (phrase boosts, relations, confidence); the peers have no phrase
 *   or relation layer, so theirs is a filtered search cut to the limits.
 * - `turn`: a whole grounding turn, `select` plus the rendered context block. lexground runs
 *   `KnowledgeGroundingEngine.ground()`; the others run their `select` plus lexground's `assembleKnowledgeContext`
 *   (rendering is not what is compared, and it costs the same for everyone).
 *
 * Peer configuration (the closest each library allows; see bench/README.md):
 * - both index the same five fields with lexground's tokenizer (so the same terms exist), boosts title 5,
 *   aliases 5, keywords 3, summary 3, body 1, BM25 k1 1.5, b 0.75 and BM25+ delta 0, OR semantics, no fuzzy.
 * - MiniSearch multiplies each score by the number of matched query terms and has no top-K: it scores, filters
 *   and sorts every match, then the harness slices. Eligibility is its `filter` callback.
 * - Orama always expands a term to every indexed word it prefixes (turning that off also turns on a
 *   case-sensitive all-terms filter), and eligibility is its `where` clause on enum fields.
 */
import { create, insertMultiple, search as oramaSearch, type SearchParams } from "@orama/orama";
import MiniSearch from "minisearch";
import {
  assembleKnowledgeContext,
  buildIndexSnapshot,
  DEFAULT_RECENT_TURNS,
  HISTORY_TURN_CHARS,
  KnowledgeGroundingEngine,
  MAX_QUERY_CHARS,
  MAX_QUERY_TOKENS,
  resolveGroundingConfiguration,
  retrieve,
  tokenize,
} from "../src/index.js";
import type {
  KnowledgeFieldWeights,
  KnowledgeIndexSnapshot,
  KnowledgePresetName,
  KnowledgeResolvedRetrieval,
  KnowledgeScoredCandidate,
  KnowledgeSelection,
  NormalizedKnowledgeEntry,
} from "../src/types/knowledge.js";
import {
  buildPlainSnapshot,
  type PlainSnapshot,
  plainConfidence,
  plainIsAuthorized,
  plainRetrieve,
} from "../test/plain/plainGrounding.js";
import type { BenchQuery, Workload } from "./workload.js";

/**
 * The query's tokens as lexground caps them, with lexground's (fast) tokenizer. Used by every implementation's
 * lexical search, so the query-side tokenization cost is the same for all.
 */
function queryTokens(query: string): string[] {
  return tokenize(query.slice(0, MAX_QUERY_CHARS)).slice(0, MAX_QUERY_TOKENS);
}

/** What one turn produced, enough to check that every implementation did the work. */
export type TurnSummary = {
  selectedIds: string[];
  contextTokens: number;
  /** Set when the turn failed open (lexground's engine only). */
  failureReason?: string;
};

/** A built index, ready to answer queries. */
export type BuiltIndex = {
  lexical(query: BenchQuery): string[] | Promise<string[]>;
  select(query: BenchQuery): KnowledgeSelection | Promise<KnowledgeSelection>;
};

/** Something that answers whole turns, prepared after the index (lexground's engine builds its own snapshot). */
export type TurnRunner = {
  turn(query: BenchQuery): Promise<TurnSummary> | TurnSummary;
  /** Releases anything the runner holds. */
  dispose?: () => void;
};

export type Implementation = {
  name: string;
  /** Builds the index from the workload's normalized entries (timed, retained memory measured). */
  build(workload: Workload, settings: BenchSettings): BuiltIndex | Promise<BuiltIndex>;
  /** Prepares the turn path for a built index (timed separately when it does real work). */
  prepareTurns(
    workload: Workload,
    settings: BenchSettings,
    built: BuiltIndex,
  ): Promise<TurnRunner> | TurnRunner;
};

/** Retrieval settings shared by every implementation in a run. */
export type BenchSettings = {
  resolved: KnowledgeResolvedRetrieval;
  fieldWeights: KnowledgeFieldWeights;
};

function recent(query: BenchQuery): BenchQuery["recentTurns"] {
  return query.recentTurns.slice(-DEFAULT_RECENT_TURNS);
}

/** A turn built from a selection: the same rendering for every non-engine implementation. */
function turnFromSelection(selection: KnowledgeSelection): TurnSummary {
  const context = assembleKnowledgeContext(selection);
  return { selectedIds: selection.primary.map((entry) => entry.id), contextTokens: context.contextTokens };
}

/** Whole turns through an engine's `ground()`: what the benchmark's turn rows measure for every engine. */
export function engineTurnRunner(engine: KnowledgeGroundingEngine): TurnRunner {
  return {
    turn: async (query) => {
      const outcome = await engine.ground({
        query: query.query,
        recentTurns: query.recentTurns,
        scope: { enabledIntegrations: query.enabledIntegrations },
      });
      return {
        selectedIds: outcome.metadata.selectedIds,
        contextTokens: outcome.metadata.contextTokens,
        failureReason: outcome.metadata.failureReason,
      };
    },
  };
}

// lexground ---------------------------------------------------------------------------------------------------

type LexgroundIndex = BuiltIndex & { snapshot: KnowledgeIndexSnapshot };

export const lexground: Implementation = {
  name: "lexground",
  build(workload, settings): LexgroundIndex {
    const snapshot = buildIndexSnapshot(workload.entries, settings.fieldWeights);
    const topK = settings.resolved.candidateLimit * 2;
    return {
      snapshot,
      lexical: (query) => snapshot.lexical.search(queryTokens(query.query), topK).map((match) => match.id),
      select: (query) =>
        retrieve(
          snapshot,
          { query: query.query, recentTurns: recent(query), enabledIntegrations: query.enabledIntegrations },
          settings.resolved,
          workload.blockedDomains,
        ),
    };
  },
  async prepareTurns(workload) {
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources: workload.sources,
      blockedDomains: workload.blockedDomains,
      // A generous ceiling: the benchmark measures the full work of every turn, never a fail-open.
      timeoutMs: 60_000,
    });
    await engine.ready();
    const status = engine.getStatus();
    if (!status.ready) throw new Error(`lexground engine not ready: ${status.lastError ?? "unknown"}`);
    return engineTurnRunner(engine);
  },
};

/**
 * lexground with a named preset (`--preset`): the preset's analyzer, scoring, cut-offs and passages, built and
 * served exactly as an engine configured with `preset` would. Compared with the default `lexground` row of the
 * same run, it shows what the preset costs per turn.
 */
export function lexgroundWithPreset(preset: KnowledgePresetName): Implementation {
  const configuration = resolveGroundingConfiguration({ preset });
  const retrieval = configuration.retrieval;
  return {
    name: `lexground:${preset}`,
    build(workload): LexgroundIndex {
      const snapshot = buildIndexSnapshot(workload.entries, {
        fieldWeights: retrieval.fieldWeights,
        k1: retrieval.k1,
        b: retrieval.b,
        analyzer: retrieval.analyzer,
        scoring: retrieval.scoring,
      });
      const topK = retrieval.candidateLimit * 2;
      return {
        snapshot,
        lexical: (query) => snapshot.lexical.search(queryTokens(query.query), topK).map((match) => match.id),
        select: (query) =>
          retrieve(
            snapshot,
            {
              query: query.query,
              recentTurns: recent(query),
              enabledIntegrations: query.enabledIntegrations,
            },
            retrieval,
            workload.blockedDomains,
          ),
      };
    },
    async prepareTurns(workload) {
      const engine = new KnowledgeGroundingEngine({
        enabled: true,
        preset,
        sources: workload.sources,
        blockedDomains: workload.blockedDomains,
        timeoutMs: 60_000,
      });
      await engine.ready();
      const status = engine.getStatus();
      if (!status.ready)
        throw new Error(`lexground engine (${preset}) not ready: ${status.lastError ?? "unknown"}`);
      return engineTurnRunner(engine);
    },
  };
}

// plain baseline ----------------------------------------------------------------------------------------------

export const plain: Implementation = {
  name: "plain",
  build(workload, settings): BuiltIndex & { snapshot: PlainSnapshot } {
    const snapshot = buildPlainSnapshot(workload.entries, { fieldWeights: settings.fieldWeights });
    const topK = settings.resolved.candidateLimit * 2;
    return {
      snapshot,
      lexical: (query) => snapshot.lexical.search(queryTokens(query.query), topK).map((match) => match.id),
      select: (query) =>
        plainRetrieve(
          snapshot,
          { query: query.query, recentTurns: recent(query), enabledIntegrations: query.enabledIntegrations },
          settings.resolved,
          workload.blockedDomains,
        ),
    };
  },
  prepareTurns(_workload, _settings, built) {
    return { turn: (query) => turnFromSelection(built.select(query) as KnowledgeSelection) };
  },
};

// peers: shared helpers ---------------------------------------------------------------------------------------

/** The lexical token list of a turn, the same for every peer as for lexground (query, then recent turns). */
function turnTokens(query: BenchQuery): string[] {
  const tokens = queryTokens(query.query);
  for (const turn of recent(query)) tokens.push(...tokenize(turn.text.slice(0, HISTORY_TURN_CHARS)));
  return [...new Set(tokens)].slice(0, MAX_QUERY_TOKENS);
}

/** A peer's ranked, eligible matches turned into a selection (no phrase boosts, no relation expansion). */
function peerSelection(
  ranked: readonly { id: string; score: number }[],
  entriesById: Map<string, NormalizedKnowledgeEntry>,
  resolved: KnowledgeResolvedRetrieval,
): KnowledgeSelection {
  const candidates: KnowledgeScoredCandidate[] = ranked.slice(0, resolved.candidateLimit).map((match) => ({
    id: match.id,
    score: match.score,
    exact: false,
    alias: false,
    lexical: match.score,
    fieldScores: {},
    matchedPhrases: [],
  }));
  return {
    primary: candidates.slice(0, resolved.resultLimit).map((candidate) => entriesById.get(candidate.id)!),
    expanded: [],
    candidates,
    confidence: plainConfidence(candidates),
    candidateCount: ranked.length,
  };
}

type PeerDocument = {
  id: string;
  title: string;
  aliases: string;
  keywords: string;
  summary: string;
  body: string;
};

function peerDocument(entry: NormalizedKnowledgeEntry): PeerDocument {
  // Joining with spaces gives exactly the concatenated per-alias (per-keyword) tokens lexground indexes.
  return {
    id: entry.id,
    title: entry.title,
    aliases: entry.aliases.join(" "),
    keywords: entry.keywords.join(" "),
    summary: entry.summary,
    body: entry.body,
  };
}

const SEARCH_FIELDS = ["title", "aliases", "keywords", "summary", "body"] as const;

// MiniSearch --------------------------------------------------------------------------------------------------

export const minisearch: Implementation = {
  name: "minisearch",
  build(workload, settings): BuiltIndex {
    const index = new MiniSearch<PeerDocument>({
      fields: [...SEARCH_FIELDS],
      storeFields: [],
      // lexground's tokenizer, so every implementation indexes the same terms.
      tokenize: (text) => tokenize(text),
      // lexground's tokenizer already lowercases and folds; MiniSearch must not change its terms again.
      processTerm: (term) => term,
      searchOptions: {
        boost: { ...settings.fieldWeights },
        bm25: { k: 1.5, b: 0.75, d: 0 },
        combineWith: "OR",
        prefix: false,
        fuzzy: false,
      },
    });
    index.addAll(workload.entries.map(peerDocument));
    const entriesById = new Map(workload.entries.map((entry) => [entry.id, entry]));
    const topK = settings.resolved.candidateLimit * 2;
    return {
      lexical: (query) => {
        const tokens = queryTokens(query.query);
        if (tokens.length === 0) return [];
        return index
          .search(tokens.join(" "))
          .slice(0, topK)
          .map((result) => String(result.id));
      },
      select: (query) => {
        const tokens = turnTokens(query);
        if (tokens.length === 0) return peerSelection([], entriesById, settings.resolved);
        const results = index.search(tokens.join(" "), {
          filter: (result) =>
            plainIsAuthorized(
              entriesById.get(String(result.id))!,
              query.enabledIntegrations,
              workload.blockedDomains,
            ),
        });
        const ranked = results
          .slice(0, topK)
          .map((result) => ({ id: String(result.id), score: result.score }));
        return peerSelection(ranked, entriesById, settings.resolved);
      },
    };
  },
  prepareTurns(_workload, _settings, built) {
    return { turn: (query) => turnFromSelection(built.select(query) as KnowledgeSelection) };
  },
};

// Orama -------------------------------------------------------------------------------------------------------

/** Integration scope key for entries bound to no integration: always eligible. */
const ANY_INTEGRATION = "*";

export const orama: Implementation = {
  name: "orama",
  build(workload, settings): BuiltIndex {
    const database = create({
      schema: {
        title: "string",
        aliases: "string",
        keywords: "string",
        summary: "string",
        body: "string",
        status: "enum",
        domain: "enum",
        scope: "enum[]",
      } as const,
      components: {
        tokenizer: {
          language: "english",
          normalizationCache: new Map(),
          tokenize: (raw: string) => tokenize(raw),
        },
      },
    });
    const documents = workload.entries.map((entry) => ({
      ...peerDocument(entry),
      status: entry.status,
      domain: entry.domain,
      scope:
        entry.integrations.length === 0
          ? [ANY_INTEGRATION]
          : entry.integrations.map((integration) => integration.toLowerCase()),
    }));
    const inserted = insertMultiple(database, documents, documents.length);
    if (inserted instanceof Promise)
      throw new Error("Orama insertMultiple went asynchronous; the harness expects sync");
    const entriesById = new Map(workload.entries.map((entry) => [entry.id, entry]));
    const topK = settings.resolved.candidateLimit * 2;
    const boost = { ...settings.fieldWeights };
    const relevance = { k: 1.5, b: 0.75, d: 0 };
    const run = (term: string, where: Record<string, unknown> | undefined) => {
      const result = oramaSearch(database, {
        term,
        properties: [...SEARCH_FIELDS],
        boost,
        relevance,
        limit: topK,
        ...(where ? { where } : {}),
      } as SearchParams<typeof database>);
      if (result instanceof Promise)
        throw new Error("Orama search went asynchronous; the harness expects sync");
      return result;
    };
    return {
      lexical: (query) => {
        const tokens = queryTokens(query.query);
        // An empty term makes Orama return every document; no query token means no match.
        if (tokens.length === 0) return [];
        return run(tokens.join(" "), undefined).hits.map((hit) => hit.id);
      },
      select: (query) => {
        const tokens = turnTokens(query);
        if (tokens.length === 0) return peerSelection([], entriesById, settings.resolved);
        const where: Record<string, unknown> = {
          status: { eq: "active" },
          scope: {
            containsAny: [
              ...query.enabledIntegrations.map((integration) => integration.toLowerCase()),
              ANY_INTEGRATION,
            ],
          },
        };
        if (workload.blockedDomains.length > 0) where.domain = { nin: workload.blockedDomains };
        const result = run(tokens.join(" "), where);
        const ranked = result.hits.map((hit) => ({ id: hit.id, score: hit.score }));
        const selection = peerSelection(ranked, entriesById, settings.resolved);
        selection.candidateCount = result.count;
        return selection;
      },
    };
  },
  prepareTurns(_workload, _settings, built) {
    return { turn: (query) => turnFromSelection(built.select(query) as KnowledgeSelection) };
  },
};

export const IMPLEMENTATIONS: readonly Implementation[] = [lexground, plain, minisearch, orama];
