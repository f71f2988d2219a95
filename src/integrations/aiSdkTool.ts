/**
 * `lexground/ai-sdk/tool`: a `searchKnowledge` tool for AI SDK v6 agents, so a model can look things up itself
 * (for example in later steps of a tool loop), complementing the middleware that grounds every turn up front.
 *
 * ```ts
 * import { generateText, stepCountIs } from "ai";
 * import { searchKnowledgeTool } from "lexground/ai-sdk/tool";
 *
 * const result = await generateText({
 *   model,
 *   tools: { searchKnowledge: searchKnowledgeTool(engine, { scope: { enabledIntegrations: ["shopify"] } }) },
 *   stopWhen: stepCountIs(3),
 *   prompt: "Why are my Shopify refunds not syncing?",
 * });
 * ```
 *
 * Like `lexground/ai-sdk` (the middleware), this module loads nothing at run time: the tool's input schema is a
 * [Standard Schema](https://standardschema.dev) with its JSON Schema, which the AI SDK (v6) reads directly, so
 * neither `ai` nor `zod` is imported here (their types are, for the declarations).
 *
 * @module
 */

import type { Tool, ToolExecutionOptions } from "ai";
import type { KnowledgeRequestScope, KnowledgeRetrievalConfidence } from "../types/knowledge.js";
import { citationMarker, GroundingIntegrationError, type KnowledgeEngineLike, parseScope } from "./engine.js";
import { searchKnowledgeEntries } from "./search.js";

export { GroundingIntegrationError, type KnowledgeEngineLike } from "./engine.js";

/** One entry of a {@link SearchKnowledgeToolOutput} (the same shape as the MCP `search_knowledge` tool's). */
export type SearchKnowledgeToolEntry = {
  id: string;
  title: string;
  summary: string;
  kind: string;
  domain: string;
  version: string;
  /** `[KB:<id>@<version>]`, to be quoted by the model. */
  citation: string;
  /** Ranking score; null for entries added by relation expansion. */
  score: number | null;
  /** The primary entry that brought an expanded entry in; null for primary entries. */
  expandedFrom: string | null;
};

/** What the tool returns to the model. */
export type SearchKnowledgeToolOutput = {
  query: string;
  confidence: KnowledgeRetrievalConfidence;
  /** Primary entries in rank order, then entries added through their relations. */
  entries: SearchKnowledgeToolEntry[];
  /** Citation markers of the entries included in `context`. */
  citations: string[];
  /** The rendered, token-bounded block with the entries' text; empty when nothing matched. */
  context: string;
  /** Eligible candidates before the candidate-limit cut. */
  candidateCount: number;
  /** Present when the search failed open (timeout, index not ready, engine error): the knowledge was not consulted. */
  failureReason?: string;
};

/** Options of {@link searchKnowledgeTool}. */
export type SearchKnowledgeToolOptions = {
  /**
   * Scope of every search: fixed, or computed per call from the tool execution options (for example from
   * `experimental_context`). The model cannot widen it: the host decides which integrations are enabled.
   */
  scope?: KnowledgeRequestScope | ((options: ToolExecutionOptions) => KnowledgeRequestScope | undefined);
  /** Tool description shown to the model. */
  description?: string;
};

/** Default description of the tool, shown to the model. */
export const SEARCH_KNOWLEDGE_TOOL_DESCRIPTION =
  "Search the reviewed knowledge base (settings, procedures, policies, troubleshooting) for entries relevant to a " +
  "question. Returns the best entries with [KB:id@version] citations to quote, a confidence (high, medium, low, " +
  "none; low or none means the answer is probably not in the knowledge base) and a context block with their text.";

/** Input of the tool, as the model fills it in. */
export type SearchKnowledgeToolInput = { query: string };

/** The JSON Schema the model is offered for {@link SearchKnowledgeToolInput} (draft-07, as the AI SDK sends it). */
export const SEARCH_KNOWLEDGE_TOOL_INPUT_JSON_SCHEMA = {
  $schema: "http://json-schema.org/draft-07/schema#",
  type: "object",
  properties: {
    query: { type: "string", minLength: 1, description: "the question or keywords to search for" },
  },
  required: ["query"],
  additionalProperties: false,
} as const;

/** One problem of a tool input, as Standard Schema reports it. */
type InputIssue = { message: string; path?: readonly string[] };

/**
 * Checks a tool input the model produced: an object whose `query` is a non-empty string. Other keys are dropped
 * (as a zod object schema would). Returns the input or the problems.
 */
function validateSearchInput(value: unknown): { value: SearchKnowledgeToolInput } | { issues: InputIssue[] } {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { issues: [{ message: "expected an object with a query string" }] };
  }
  const query = (value as { query?: unknown }).query;
  if (typeof query !== "string") {
    return { issues: [{ message: "expected query to be a string", path: ["query"] }] };
  }
  if (query.length === 0) {
    return { issues: [{ message: "expected query to have at least one character", path: ["query"] }] };
  }
  return { value: { query } };
}

/**
 * The tool's input schema as a Standard Schema (`~standard`) that also converts to JSON Schema, which the AI SDK
 * v6 accepts wherever it takes a zod schema (and validates with it before `execute` runs).
 */
const SEARCH_KNOWLEDGE_TOOL_INPUT_SCHEMA = {
  "~standard": {
    version: 1,
    vendor: "lexground",
    validate: validateSearchInput,
    jsonSchema: {
      input: () => structuredClone(SEARCH_KNOWLEDGE_TOOL_INPUT_JSON_SCHEMA),
      output: () => structuredClone(SEARCH_KNOWLEDGE_TOOL_INPUT_JSON_SCHEMA),
    },
  },
} as const;

/**
 * Creates the `searchKnowledge` tool: `{ query }` in, {@link SearchKnowledgeToolOutput} out. Searching never throws:
 * a failed search returns no entries and a `failureReason`.
 */
export function searchKnowledgeTool(
  engine: KnowledgeEngineLike,
  options: SearchKnowledgeToolOptions = {},
): Tool<SearchKnowledgeToolInput, SearchKnowledgeToolOutput> {
  if (typeof (engine as { ground?: unknown } | null)?.ground !== "function") {
    throw new GroundingIntegrationError(
      "searchKnowledgeTool engine",
      "must be a KnowledgeGroundingEngine (an object with a ground() method)",
    );
  }
  if (typeof options !== "object" || options === null) {
    throw new GroundingIntegrationError("searchKnowledgeTool options", "must be an object");
  }
  const scopeOption = options.scope;
  const fixedScope =
    typeof scopeOption === "function"
      ? undefined
      : parseScope(scopeOption, "searchKnowledgeTool options.scope");
  if (options.description !== undefined && typeof options.description !== "string") {
    throw new GroundingIntegrationError("searchKnowledgeTool options.description", "must be a string");
  }
  // The AI SDK's `tool()` returns its argument unchanged; the object is written out so `ai` need not be loaded.
  return {
    description: options.description ?? SEARCH_KNOWLEDGE_TOOL_DESCRIPTION,
    inputSchema: SEARCH_KNOWLEDGE_TOOL_INPUT_SCHEMA,
    execute: async ({ query }, execution): Promise<SearchKnowledgeToolOutput> => {
      const scope =
        typeof scopeOption === "function"
          ? parseScope(scopeOption(execution), "searchKnowledgeTool options.scope()")
          : fixedScope;
      const { hits, confidence, outcome } = await searchKnowledgeEntries(engine, {
        query,
        ...(scope === undefined ? {} : { scope }),
      });
      const output: SearchKnowledgeToolOutput = {
        query,
        confidence,
        entries: hits.map((hit) => ({
          id: hit.entry.id,
          title: hit.entry.title,
          summary: hit.entry.summary,
          kind: hit.entry.kind,
          domain: hit.entry.domain,
          version: hit.entry.version,
          citation: hit.citation,
          score: hit.score,
          expandedFrom: hit.expanded ? (hit.expandedFrom ?? "") : null,
        })),
        citations: (outcome.ephemeralContext?.citations ?? []).map((citation) =>
          citationMarker(citation.id, citation.version),
        ),
        context: outcome.ephemeralContext?.content ?? "",
        candidateCount: outcome.metadata.candidateCount ?? 0,
      };
      if (outcome.metadata.failureReason !== undefined) output.failureReason = outcome.metadata.failureReason;
      return output;
    },
  };
}
