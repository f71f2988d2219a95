/**
 * Optional analyzers for BM25 tokens. The default (`"none"`) leaves tokens as the tokenizer produced them, as
 * NeuroLink does. Phrase matching (ids, titles, aliases) never goes through an analyzer.
 */
import type { KnowledgeAnalyzerName } from "../types/knowledge.js";

/** Maps tokens to analyzed tokens (may drop some). */
export type TokenAnalyzer = (tokens: readonly string[]) => string[];

/** The analyzer for a name, or null for `"none"`. */
export function getAnalyzer(name: KnowledgeAnalyzerName): TokenAnalyzer | null {
  if (name === "none") return null;
  throw new RangeError(`unknown analyzer ${JSON.stringify(name)}; expected "none"`);
}
