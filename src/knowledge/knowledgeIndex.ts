/**
 * The immutable index, by its public names: the search document of each entry (`document.ts`), the field-aware
 * BM25 index (`lexicalIndex.ts`, scoring in `scoring.ts` with the formulas of `bm25.ts`, postings in
 * `postings.ts`, ordering in `ranking.ts`) and the snapshot that bundles it with the phrase and relation maps
 * (`snapshot.ts`, with `snapshotMaps.ts` and `compiledSnapshot.ts`).
 */

export {
  type CompiledSnapshot,
  compileSnapshot,
  createEligibilityCache,
  getCompiledSnapshot,
  registerCompiledSnapshot,
} from "./compiledSnapshot.js";
export { buildDocument, resolveFieldWeights } from "./document.js";
export type { KnowledgeLexicalIndexParts } from "./indexParts.js";
export { KnowledgeLexicalIndex, type KnowledgeLexicalIndexOptions } from "./lexicalIndex.js";
export { compareCodeUnits } from "./ranking.js";
export {
  buildIndexSnapshot,
  type IndexBuild,
  type KnowledgeIndexBuildOptions,
  startIndexBuild,
} from "./snapshot.js";
export { assembleSnapshot } from "./snapshotMaps.js";
