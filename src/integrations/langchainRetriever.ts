/**
 * The implementation of `lexground/langchain` (see `./langchain.ts`, which loads this module so that a missing
 * `@langchain/core` is a typed error). CommonJS hosts `require("lexground/langchain")` this module directly.
 *
 * @module
 */

import type { CallbackManagerForRetrieverRun } from "@langchain/core/callbacks/manager";
import { Document } from "@langchain/core/documents";
import { BaseRetriever, type BaseRetrieverInput } from "@langchain/core/retrievers";
import type {
  KnowledgeConversationTurn,
  KnowledgeEntryKind,
  KnowledgeGroundingMetadata,
  KnowledgeGroundingOutcome,
  KnowledgeRequestScope,
  KnowledgeRetrievalConfidence,
  NormalizedKnowledgeEntry,
} from "../types/knowledge.js";
import {
  GroundingIntegrationError,
  type KnowledgeEngineLike,
  type KnowledgeEngineSource,
  parseScope,
  resolveEngine,
} from "./engine.js";
import { searchKnowledgeEntries } from "./search.js";

export { MissingPeerDependencyError } from "../peerDependency.js";
export {
  GroundingIntegrationError,
  type KnowledgeEngineLike,
  type KnowledgeEngineSource,
} from "./engine.js";

/** Metadata of every {@link Document} returned by {@link KnowledgeRetriever}. */
export type KnowledgeDocumentMetadata = {
  /** `[KB:<id>@<version>]`, the marker the grounding block uses. */
  citation: string;
  id: string;
  version: string;
  title: string;
  /**
   * Ranking score (lexical BM25 plus exact and alias boosts); `null` for entries added by relation expansion,
   * which are not ranked.
   */
  score: number | null;
  /** Confidence of the whole retrieval (the same for every document of one call). */
  confidence: KnowledgeRetrievalConfidence;
  kind: KnowledgeEntryKind;
  domain: string;
  /** True for entries added through a primary entry's relations. */
  expanded: boolean;
  /** For expanded entries, the primary entry that brought them in. */
  expandedFrom?: string;
};

/** Options of {@link KnowledgeRetriever}: exactly one of `engine` and `config`, plus LangChain's retriever fields. */
export type KnowledgeRetrieverInput = BaseRetrieverInput &
  KnowledgeEngineSource & {
    /** Integrations enabled for every search of this retriever. Default: none (integration-free entries only). */
    scope?: KnowledgeRequestScope;
    /** Earlier conversation turns that add context to every query (the engine reads the last 4). */
    recentTurns?: KnowledgeConversationTurn[];
    /** Most documents returned (primary entries first). Default: all the engine selects. */
    k?: number;
    /** Whether entries added by relation expansion are returned. Default true. */
    includeExpanded?: boolean;
    /** Called after each search with the engine's metadata (a `failureReason` when it failed open). */
    onGrounding?: (metadata: KnowledgeGroundingMetadata, outcome: KnowledgeGroundingOutcome) => void;
  };

/** Page content of an entry: title, summary and body separated by blank lines (empty parts left out). */
export function entryPageContent(entry: NormalizedKnowledgeEntry): string {
  return [entry.title, entry.summary, entry.body].filter((part) => part.trim().length > 0).join("\n\n");
}

/**
 * A LangChain `BaseRetriever` backed by lexground's lexical engine: exact ids, reviewed aliases, integration scope
 * and field-aware BM25 instead of embeddings. Each call grounds the query once and returns one `Document` per
 * selected entry (primary entries in rank order, then expanded ones) with its citation, score and confidence in
 * `metadata` ({@link KnowledgeDocumentMetadata}).
 *
 * Like every lexground surface it fails open: when grounding fails (timeout, index not ready) it returns no
 * documents, and `onGrounding` receives the `failureReason`.
 */
export class KnowledgeRetriever extends BaseRetriever<KnowledgeDocumentMetadata> {
  static override lc_name(): string {
    return "KnowledgeRetriever";
  }

  override lc_namespace = ["lexground", "retrievers"];

  /** The engine this retriever searches. */
  readonly engine: KnowledgeEngineLike;
  /** The scope of every search. */
  readonly scope: KnowledgeRequestScope | undefined;
  private readonly recentTurns: KnowledgeConversationTurn[];
  private readonly k: number | undefined;
  private readonly includeExpanded: boolean;
  private readonly onGrounding: KnowledgeRetrieverInput["onGrounding"];

  constructor(fields: KnowledgeRetrieverInput) {
    const path = "KnowledgeRetriever options";
    if (typeof fields !== "object" || fields === null) {
      throw new GroundingIntegrationError(path, "must be an object");
    }
    const engine = resolveEngine(fields, path);
    const scope = parseScope(fields.scope, `${path}.scope`);
    if (fields.k !== undefined && !(Number.isInteger(fields.k) && fields.k >= 0)) {
      throw new GroundingIntegrationError(`${path}.k`, "must be an integer >= 0");
    }
    const turns = fields.recentTurns ?? [];
    if (!Array.isArray(turns)) throw new GroundingIntegrationError(`${path}.recentTurns`, "must be an array");
    turns.forEach((turn, index) => {
      if (
        typeof turn !== "object" ||
        turn === null ||
        (turn.role !== "user" && turn.role !== "assistant") ||
        typeof turn.text !== "string"
      ) {
        throw new GroundingIntegrationError(
          `${path}.recentTurns[${index}]`,
          'must be { role: "user" | "assistant", text: string }',
        );
      }
    });
    if (fields.onGrounding !== undefined && typeof fields.onGrounding !== "function") {
      throw new GroundingIntegrationError(`${path}.onGrounding`, "must be a function");
    }
    super(fields);
    this.engine = engine;
    this.scope = scope;
    this.recentTurns = turns.map((turn) => ({ role: turn.role, text: turn.text }));
    this.k = fields.k;
    this.includeExpanded = fields.includeExpanded !== false;
    this.onGrounding = fields.onGrounding;
  }

  /** A retriever over the same engine with another scope (for per-request integrations). */
  withScope(scope: KnowledgeRequestScope | undefined): KnowledgeRetriever {
    return new KnowledgeRetriever({
      engine: this.engine,
      ...(scope === undefined ? {} : { scope }),
      recentTurns: this.recentTurns,
      ...(this.k === undefined ? {} : { k: this.k }),
      includeExpanded: this.includeExpanded,
      ...(this.onGrounding === undefined ? {} : { onGrounding: this.onGrounding }),
      ...(this.callbacks === undefined ? {} : { callbacks: this.callbacks }),
      ...(this.tags === undefined ? {} : { tags: this.tags }),
      ...(this.metadata === undefined ? {} : { metadata: this.metadata }),
      verbose: this.verbose,
    });
  }

  override async _getRelevantDocuments(
    query: string,
    _runManager?: CallbackManagerForRetrieverRun,
  ): Promise<Document<KnowledgeDocumentMetadata>[]> {
    const { hits, confidence, outcome } = await searchKnowledgeEntries(this.engine, {
      query: typeof query === "string" ? query : String(query),
      recentTurns: this.recentTurns,
      ...(this.scope === undefined ? {} : { scope: this.scope }),
    });
    if (this.onGrounding) {
      try {
        this.onGrounding(outcome.metadata, outcome);
      } catch {
        // A failing telemetry callback must not fail the search.
      }
    }
    const selected = this.includeExpanded ? hits : hits.filter((hit) => !hit.expanded);
    const limited = this.k === undefined ? selected : selected.slice(0, this.k);
    return limited.map((hit) => {
      const metadata: KnowledgeDocumentMetadata = {
        citation: hit.citation,
        id: hit.entry.id,
        version: hit.entry.version,
        title: hit.entry.title,
        score: hit.score,
        confidence,
        kind: hit.entry.kind,
        domain: hit.entry.domain,
        expanded: hit.expanded,
      };
      if (hit.expandedFrom !== null) metadata.expandedFrom = hit.expandedFrom;
      return new Document({ id: hit.entry.id, pageContent: entryPageContent(hit.entry), metadata });
    });
  }
}
