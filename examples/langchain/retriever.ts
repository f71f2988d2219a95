/**
 * lexground as a LangChain.js retriever, offline.
 *
 *   npx tsx examples/langchain/retriever.ts
 *
 * It compiles the example knowledge base (examples/knowledge-base), searches it with `KnowledgeRetriever`, and runs
 * a small retrieval chain whose model is an offline stand-in that answers from the retrieved documents.
 *
 * It imports the package by name, as an application does (in this repository, tsconfig.json's `paths` map the names
 * to the sources, so it runs without a build). In an application, swap in a real chat model:
 *   import { ChatOpenAI } from "@langchain/openai";
 *   const model = new ChatOpenAI({ model: "gpt-4o-mini" });
 */
import { fileURLToPath } from "node:url";
import type { Document } from "@langchain/core/documents";
import { AIMessage } from "@langchain/core/messages";
import { StringOutputParser } from "@langchain/core/output_parsers";
import type { ChatPromptValueInterface } from "@langchain/core/prompt_values";
import { ChatPromptTemplate } from "@langchain/core/prompts";
import { RunnableLambda, RunnablePassthrough, RunnableSequence } from "@langchain/core/runnables";
import { KnowledgeGroundingEngine } from "lexground";
import { loadKnowledgeBase } from "lexground/files";
import { type KnowledgeDocumentMetadata, KnowledgeRetriever } from "lexground/langchain";

// 1. The knowledge: a folder of Markdown entries compiled to engine sources.
const knowledgeBase = await loadKnowledgeBase(fileURLToPath(new URL("../knowledge-base", import.meta.url)));
const engine = new KnowledgeGroundingEngine({ enabled: true, sources: knowledgeBase.sources });
await engine.ready();

// 2. The retriever: one engine, one scope per retriever (withScope() derives another).
const retriever = new KnowledgeRetriever({ engine, k: 4 });

const question = "Why are refunds I make in Shopify not showing up?";
for (const [label, scoped] of [
  ["no integrations enabled", retriever],
  ["Shopify enabled", retriever.withScope({ enabledIntegrations: ["shopify"] })],
] as const) {
  const documents = await scoped.invoke(question);
  console.log(`\n${question} (${label})`);
  for (const document of documents) {
    const { citation, score, confidence, expanded } = document.metadata;
    const shown = score === null ? "  (related)" : score.toFixed(2).padStart(9);
    console.log(`  ${shown}  ${citation}  confidence ${confidence}${expanded ? ", expanded" : ""}`);
  }
}

// 3. A retrieval chain. Offline: a stand-in model that quotes the first document's summary with its citation.
const model = RunnableLambda.from((prompt: ChatPromptValueInterface) => {
  const text = prompt.toString();
  const marker = /\[KB:[^\]\s]+@[^\]\s]+\]/.exec(text)?.[0];
  const summary = marker ? text.slice(text.indexOf(marker)).split("\n").filter(Boolean)[2] : undefined;
  return new AIMessage(
    marker && summary ? `${summary} ${marker}` : "I could not find that in the knowledge base.",
  );
});
const formatDocuments = (documents: Document<KnowledgeDocumentMetadata>[]) =>
  documents.map((document) => `${document.metadata.citation}\n${document.pageContent}`).join("\n\n");
const prompt = ChatPromptTemplate.fromMessages([
  ["system", "Answer from the context only and cite its [KB:...] markers.\n\nContext:\n{context}"],
  ["human", "{question}"],
]);
const chain = RunnableSequence.from([
  {
    context: retriever.withScope({ enabledIntegrations: ["shopify"] }).pipe(formatDocuments),
    question: new RunnablePassthrough(),
  },
  prompt,
  model,
  new StringOutputParser(),
]);
console.log(`\nChain answer: ${await chain.invoke(question)}`);
