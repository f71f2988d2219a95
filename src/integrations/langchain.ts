/**
 * `lexground/langchain`: a LangChain.js retriever over lexground's engine. `@langchain/core` (>= 1) is an optional
 * peer dependency, needed only by this module; without it, importing this module throws
 * {@link MissingPeerDependencyError} naming the package to install.
 *
 * ```ts
 * import { KnowledgeRetriever } from "lexground/langchain";
 *
 * const retriever = new KnowledgeRetriever({ engine, scope: { enabledIntegrations: ["shopify"] } });
 * const documents = await retriever.invoke("Why are my Shopify refunds not syncing?");
 * documents[0].metadata.citation; // "[KB:integrations.shopify-refunds-not-syncing@3f2a…]"
 * ```
 *
 * @module
 */
import { importPeerDependency, PEER_DEPENDENCY_RANGES } from "../peerDependency.js";

export { MissingPeerDependencyError } from "../peerDependency.js";
export {
  GroundingIntegrationError,
  type KnowledgeEngineLike,
  type KnowledgeEngineSource,
} from "./engine.js";
export type { KnowledgeDocumentMetadata, KnowledgeRetrieverInput } from "./langchainRetriever.js";

// Loaded here rather than imported statically: a static import of a missing package fails while Node links the
// modules, before any of ours runs, with a bare "Cannot find package". (CommonJS hosts, which cannot require a
// module with top-level await, are given ./langchainRetriever.js by the package's `require` condition.)
const implementation = await importPeerDependency(
  {
    packageName: "@langchain/core",
    versionRange: PEER_DEPENDENCY_RANGES["@langchain/core"],
    feature: "lexground/langchain",
  },
  () => import("./langchainRetriever.js"),
);

/**
 * A LangChain `BaseRetriever` backed by lexground's lexical engine: exact ids, reviewed aliases, integration scope
 * and field-aware BM25 instead of embeddings. Each call grounds the query once and returns one `Document` per
 * selected entry (primary entries in rank order, then expanded ones) with its citation, score and confidence in
 * `metadata`. It fails open: when grounding fails it returns no documents, and `onGrounding` receives the
 * `failureReason`.
 */
export const KnowledgeRetriever: typeof import("./langchainRetriever.js").KnowledgeRetriever =
  implementation.KnowledgeRetriever;
/** An instance of {@link KnowledgeRetriever}. */
export type KnowledgeRetriever = import("./langchainRetriever.js").KnowledgeRetriever;

/** Page content of an entry: title, summary and body separated by blank lines (empty parts left out). */
export const entryPageContent: typeof import("./langchainRetriever.js").entryPageContent =
  implementation.entryPageContent;
