/**
 * The immutable index, by its public names: the search document of each entry (`document.ts`), the field-aware
 * BM25 index (`lexicalIndex.ts`, scoring in `scoring.ts` with the formulas of `bm25.ts`, postings in
 * `postings.ts`, ordering in `ranking.ts`) and the snapshot that bundles it with the phrase and relation maps
 * (`snapshot.ts`).
 */
export { buildDocument, resolveFieldWeights } from "./document.js";
export type { KnowledgeLexicalIndexParts } from "./indexParts.js";
export { KnowledgeLexicalIndex, type KnowledgeLexicalIndexOptions } from "./lexicalIndex.js";
export { compareCodeUnits } from "./ranking.js";
export {
  assembleSnapshot,
  buildIndexSnapshot,
  type CompiledSnapshot,
  compileSnapshot,
  createEligibilityCache,
  getCompiledSnapshot,
  type IndexBuild,
  type KnowledgeIndexBuildOptions,
  registerCompiledSnapshot,
  startIndexBuild,
} from "./snapshot.js";
