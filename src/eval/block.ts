/**
 * Block-level figures: what one turn actually hands the model. Ranking metrics judge the whole ordered list; these
 * judge the `<knowledge_context>` block that `ground()` renders for the query with the configuration's limits and
 * context budget (default 4,000 tokens):
 *
 * - **entries**: entries included in the block (its citations, primary and expanded);
 * - **tokens**: the block's token estimate (`contextTokens`; an empty block is 0);
 * - **precision**: included entries judged relevant ÷ included entries, for one query; averaged over the queries
 *   whose block is not empty (an empty block has no precision; it counts as a miss in the hit share instead);
 * - **recall**: relevant entries included ÷ min(relevant entries judged, {@link BLOCK_RECALL_CAP}): the capped
 *   recall of the BEIR paper (R_cap@k), so a collection that judges forty documents relevant to one query is not
 *   scored against a block that could never hold them; on question files (one to three expected entries) it is
 *   plain "expected entries included ÷ expected";
 * - **hit share**: queries whose block holds at least one relevant entry ÷ queries;
 * - **passage share**: for queries with a judged passage (question files' optional `passage`), the share whose
 *   block contains that passage text (compared with whitespace collapsed and case folded).
 *
 * Judged queries missing from the query file produced no block: they count as misses in recall and hit share
 * (as `trec_eval -c` counts them 0), and are left out of entries, tokens and precision.
 *
 * @module
 */

/** Relevant entries a query's block recall is measured against at most (BEIR's capped recall, R_cap@10). */
export const BLOCK_RECALL_CAP = 10;

/** The block figures of one query. */
export type BlockQueryFigures = {
  /** Ids of the entries included in the block, in block order. */
  includedIds: string[];
  /** The block's token estimate; 0 for an empty block. */
  tokens: number;
  /** Included entries judged relevant (grade > 0). */
  relevantIncluded: number;
  /** `relevantIncluded / includedIds.length`; null for an empty block. */
  precision: number | null;
  /** `relevantIncluded / min(relevant, BLOCK_RECALL_CAP)`; 0 when the query has no relevant judgment. */
  recall: number;
  /** Whether the block holds at least one relevant entry. */
  hit: boolean;
  /** Whether the judged passage reached the block; null when the query has no judged passage. */
  passage: boolean | null;
};

/** Block figures averaged over the queries of one configuration. */
export type BlockSummary = {
  /** Mean entries per block. */
  entries: number;
  /** Mean block tokens. */
  tokens: number;
  /** Mean precision over queries with a non-empty block; null when every block is empty. */
  precision: number | null;
  /** Mean capped recall over all judged queries. */
  recall: number;
  /** Share of judged queries whose block holds a relevant entry. */
  hitShare: number;
  /** Queries whose block is empty. */
  emptyBlocks: number;
  /** Queries with a judged passage. */
  passageQueries: number;
  /** Share of those whose block contains the passage; null without any. */
  passageShare: number | null;
};

/** Lowercased text with every whitespace run as one space, for passage containment. */
export function foldForPassage(text: string): string {
  return text.replace(/\s+/g, " ").trim().toLowerCase();
}

/**
 * The figures of one query's block.
 *
 * @param includedIds - the block's citations (entry ids), in block order
 * @param tokens - the block's `contextTokens`
 * @param block - the rendered block (`""` when empty), searched for the passage
 * @param judgments - the query's judgments (entry id → grade; > 0 relevant)
 * @param passage - the judged passage text, when the query has one
 */
export function blockFigures(
  includedIds: readonly string[],
  tokens: number,
  block: string,
  judgments: ReadonlyMap<string, number>,
  passage?: string,
): BlockQueryFigures {
  let relevant = 0;
  for (const grade of judgments.values()) if (grade > 0) relevant++;
  let relevantIncluded = 0;
  for (const id of includedIds) if ((judgments.get(id) ?? 0) > 0) relevantIncluded++;
  const cap = Math.min(relevant, BLOCK_RECALL_CAP);
  return {
    includedIds: includedIds.slice(),
    tokens,
    relevantIncluded,
    precision: includedIds.length > 0 ? relevantIncluded / includedIds.length : null,
    recall: cap > 0 ? relevantIncluded / cap : 0,
    hit: relevantIncluded > 0,
    passage:
      passage === undefined || foldForPassage(passage) === ""
        ? null
        : foldForPassage(block).includes(foldForPassage(passage)),
  };
}

/**
 * Averages block figures. `missing` judged queries without a block (absent from the query file) count as misses
 * in recall and hit share.
 */
export function summarizeBlocks(figures: readonly BlockQueryFigures[], missing = 0): BlockSummary {
  let entries = 0;
  let tokens = 0;
  let precisionSum = 0;
  let precisionCount = 0;
  let recall = 0;
  let hits = 0;
  let emptyBlocks = 0;
  let passageQueries = 0;
  let passagesReached = 0;
  for (const figure of figures) {
    entries += figure.includedIds.length;
    tokens += figure.tokens;
    if (figure.precision === null) emptyBlocks++;
    else {
      precisionSum += figure.precision;
      precisionCount++;
    }
    recall += figure.recall;
    if (figure.hit) hits++;
    if (figure.passage !== null) {
      passageQueries++;
      if (figure.passage) passagesReached++;
    }
  }
  const judged = figures.length + missing;
  return {
    entries: figures.length > 0 ? entries / figures.length : 0,
    tokens: figures.length > 0 ? tokens / figures.length : 0,
    precision: precisionCount > 0 ? precisionSum / precisionCount : null,
    recall: judged > 0 ? recall / judged : 0,
    hitShare: judged > 0 ? hits / judged : 0,
    emptyBlocks,
    passageQueries,
    passageShare: passageQueries > 0 ? passagesReached / passageQueries : null,
  };
}

/** Why a relevant entry is not in the block (or, for `included`, why its passage still is not). */
export type BlockMissCode =
  /** No entry of the knowledge base has this id. */
  | "unknown"
  /** The entry may not be retrieved for this query: not active, outside the query's integrations, or blocked. */
  | "not-eligible"
  /** No phrase or lexical evidence within the evaluated ranking depth. */
  | "not-retrieved"
  /** Ranked, but below the number of entries the configuration takes (`resultLimit`). */
  | "below-limit"
  /** Ranked within `resultLimit` but not selected (a cut-off ended the list before it). */
  | "cut"
  /** Selected, but the token budget had no room left for it. */
  | "budget"
  /** In the block (the failure is the passage). */
  | "included";

/** A relevant entry of a failing query and why it is not in the block. */
export type BlockExpectedEntry = {
  id: string;
  grade: number;
  /** 1-based position in the configuration's ranking (to the evaluated depth), or null when not ranked. */
  rank: number | null;
  code: BlockMissCode;
  /** The reason in words, e.g. "ranked 11; the block takes the top 8". */
  reason: string;
};

/** An entry of a failing query's block. */
export type BlockIncludedEntry = {
  id: string;
  relevant: boolean;
  /** 1-based position in the ranking, or null (an expanded entry without evidence of its own). */
  rank: number | null;
  /** Its score (lexical plus boosts), or null when not ranked. */
  score: number | null;
  /** `primary`: selected by rank; `expanded`: added by relation expansion. */
  origin: "primary" | "expanded";
  /** For expanded entries: the selected entry whose relation brought it in. */
  via?: string;
  /** `full`: rendered with its body; `partial`: summary only or passages (its full rendering did not fit). */
  form: "full" | "partial";
};

/** A query whose block holds no relevant entry, or misses its judged passage. */
export type BlockFailure = {
  id: string;
  text: string;
  /** The relevant entries, best ranked first, at most {@link FAILURE_EXPECTED_SHOWN}. */
  expected: BlockExpectedEntry[];
  /** Relevant entries not listed in `expected`. */
  moreExpected: number;
  /** What the block held instead, in block order. */
  included: BlockIncludedEntry[];
  /** The judged passage when it did not reach the block, else null. */
  missedPassage: string | null;
};

/** Relevant entries listed per failing query (collections such as nfcorpus judge dozens per query). */
export const FAILURE_EXPECTED_SHOWN = 5;

/** What {@link diagnoseBlock} needs to know about one query's retrieval. */
export type BlockDiagnosisInput = {
  id: string;
  text: string;
  judgments: ReadonlyMap<string, number>;
  passage?: string;
  figures: BlockQueryFigures;
  /** Ids in the engine's ranking order for the configuration (to the evaluated depth). */
  ranking: readonly string[];
  /** Score of each ranked id. */
  scores: ReadonlyMap<string, number>;
  /** The production selection's entries (before the budget). */
  primaryIds: readonly string[];
  expandedIds: readonly string[];
  /** The configuration's `resultLimit`. */
  resultLimit: number;
  /** Whether an id names an entry of the knowledge base. */
  exists: (id: string) => boolean;
  /** Whether an entry may be retrieved for this query (active, in scope, not blocked). */
  eligible: (id: string) => boolean;
  /** For an expanded id, the selected entry whose relation brought it in. */
  via: (id: string) => string | undefined;
  /** Whether the entry was rendered with its full body in the block. */
  renderedInFull: (id: string) => boolean;
  /** Why a ranked entry within `resultLimit` was not selected, when the selection says (cut-off rules). */
  cutReason?: (id: string) => string | undefined;
};

/**
 * The failure record of a query whose block holds no relevant entry or misses its judged passage; null when the
 * block is fine.
 */
export function diagnoseBlock(input: BlockDiagnosisInput): BlockFailure | null {
  const { figures } = input;
  if (figures.hit && figures.passage !== false) return null;
  const rankOf = new Map<string, number>();
  input.ranking.forEach((id, index) => {
    if (!rankOf.has(id)) rankOf.set(id, index + 1);
  });
  const included = new Set(figures.includedIds);
  const selected = new Set([...input.primaryIds, ...input.expandedIds]);
  const relevant: { id: string; grade: number; rank: number | null }[] = [];
  for (const [id, grade] of input.judgments) {
    if (grade > 0) relevant.push({ id, grade, rank: rankOf.get(id) ?? null });
  }
  relevant.sort(
    (left, right) =>
      (left.rank ?? Number.POSITIVE_INFINITY) - (right.rank ?? Number.POSITIVE_INFINITY) ||
      right.grade - left.grade ||
      (left.id < right.id ? -1 : left.id > right.id ? 1 : 0),
  );
  const expected = relevant.slice(0, FAILURE_EXPECTED_SHOWN).map(({ id, grade, rank }) => {
    const explained = explainMiss(id, rank, included, selected, input);
    return { id, grade, rank, ...explained };
  });
  return {
    id: input.id,
    text: input.text,
    expected,
    moreExpected: Math.max(0, relevant.length - expected.length),
    included: figures.includedIds.map((id) => {
      const rank = rankOf.get(id) ?? null;
      const origin = input.primaryIds.includes(id) ? "primary" : "expanded";
      const via = origin === "expanded" ? input.via(id) : undefined;
      return {
        id,
        relevant: (input.judgments.get(id) ?? 0) > 0,
        rank,
        score: input.scores.get(id) ?? null,
        origin,
        ...(via !== undefined ? { via } : {}),
        form: input.renderedInFull(id) ? "full" : "partial",
      };
    }),
    missedPassage: figures.passage === false ? (input.passage ?? null) : null,
  };
}

function explainMiss(
  id: string,
  rank: number | null,
  included: ReadonlySet<string>,
  selected: ReadonlySet<string>,
  input: BlockDiagnosisInput,
): { code: BlockMissCode; reason: string } {
  if (included.has(id)) {
    return input.renderedInFull(id)
      ? { code: "included", reason: "in the block in full; the passage text is not in its body as rendered" }
      : {
          code: "included",
          reason: "in the block, but without the judged passage (its full body did not fit)",
        };
  }
  if (!input.exists(id)) return { code: "unknown", reason: "no entry of the knowledge base has this id" };
  if (!input.eligible(id)) {
    return {
      code: "not-eligible",
      reason: "not retrievable for this query (not active, outside its integrations, or a blocked domain)",
    };
  }
  if (selected.has(id)) return { code: "budget", reason: "selected, but the token budget had no room left" };
  if (rank === null) {
    return { code: "not-retrieved", reason: "no phrase or lexical match within the evaluated ranking depth" };
  }
  if (rank > input.resultLimit) {
    return { code: "below-limit", reason: `ranked ${rank}; the block takes the top ${input.resultLimit}` };
  }
  const cut = input.cutReason?.(id);
  return { code: "cut", reason: cut ?? `ranked ${rank}, but the selection ended before it` };
}
