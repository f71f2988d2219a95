/**
 * Grounding Vercel AI SDK calls in a knowledge base, offline.
 *
 *   npx tsx examples/ai-sdk/grounded-generate.ts
 *
 * It compiles the example knowledge base (examples/knowledge-base), wraps a model with `groundingMiddleware`, and
 * runs three turns: a generate call, a streamed call scoped to an integration, and a tool loop where the model
 * searches the knowledge base itself. The model is an offline stand-in that answers from the block it receives.
 *
 * It imports the package by name, as an application does (in this repository, tsconfig.json's `paths` map the names
 * to the sources, so it runs without a build). In an application, swap in a real provider (any AI SDK v6 model
 * works):
 *   import { openai } from "@ai-sdk/openai";
 *   const baseModel = openai("gpt-4o-mini");
 */
import { fileURLToPath } from "node:url";
import type { LanguageModelV3CallOptions, LanguageModelV3Prompt } from "@ai-sdk/provider";
import { generateText, stepCountIs, streamText, wrapLanguageModel } from "ai";
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test";
import { KnowledgeGroundingEngine } from "lexground";
import { type GroundingProviderMetadata, groundingMiddleware } from "lexground/ai-sdk";
import { searchKnowledgeTool } from "lexground/ai-sdk/tool";
import { loadKnowledgeBase } from "lexground/files";

// 1. The knowledge: a folder of Markdown entries compiled to engine sources (`lexground build` writes the same
//    manifest to disk; load it with `manifestToSources(JSON.parse(...))`).
const knowledgeBase = await loadKnowledgeBase(fileURLToPath(new URL("../knowledge-base", import.meta.url)));
const engine = new KnowledgeGroundingEngine({ enabled: true, sources: knowledgeBase.sources });
await engine.ready();
console.log(`Knowledge base: ${engine.getStatus().entryCount} entries`);

// 2. The model. Offline: a stand-in that answers with the first entry of the grounding block it was sent (or, in a
//    tool loop, calls searchKnowledge first). Online: `const baseModel = openai("gpt-4o-mini")`.
function promptText(prompt: LanguageModelV3Prompt): string {
  return prompt
    .map((message) =>
      typeof message.content === "string"
        ? message.content
        : message.content.map((part) => ("text" in part ? part.text : JSON.stringify(part))).join("\n"),
    )
    .join("\n");
}
function answerFrom(options: LanguageModelV3CallOptions): string {
  const text = promptText(options.prompt);
  const marker = /\[KB:[^\]\s]+@[^\]\s]+\]/.exec(text)?.[0];
  const summary = marker ? /Summary: (.*)/.exec(text.slice(text.indexOf(marker)))?.[1] : undefined;
  return marker && summary ? `${summary} ${marker}` : "I could not find that in the knowledge base.";
}
const usage = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 },
};
const baseModel = new MockLanguageModelV3({
  provider: "offline",
  modelId: "offline-answerer",
  doGenerate: async (options) => {
    const lastMessage = options.prompt.at(-1);
    const wantsSearch = (options.tools?.length ?? 0) > 0 && lastMessage?.role === "user";
    if (wantsSearch) {
      const query = promptText([lastMessage]);
      return {
        content: [
          {
            type: "tool-call",
            toolCallId: "call-1",
            toolName: "searchKnowledge",
            input: JSON.stringify({ query }),
          },
        ],
        finishReason: { unified: "tool-calls", raw: "tool_calls" },
        usage,
        warnings: [],
      };
    }
    return {
      content: [{ type: "text", text: answerFrom(options) }],
      finishReason: { unified: "stop", raw: "stop" },
      usage,
      warnings: [],
    };
  },
  doStream: async (options) => ({
    stream: convertArrayToReadableStream([
      { type: "text-start", id: "t" },
      { type: "text-delta", id: "t", delta: answerFrom(options) },
      { type: "text-end", id: "t" },
      { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage },
    ]),
  }),
});

// 3. The grounded model: every call gets the block for its last user message, once per turn.
const model = wrapLanguageModel({
  model: baseModel,
  middleware: groundingMiddleware({
    engine,
    onGrounding: (metadata, _outcome, info) =>
      console.log(
        `  [grounding] "${info.query}" → ${metadata.selectedIds.length} entries in ${metadata.durationMs} ms`,
      ),
  }),
});

function report(providerMetadata: unknown): void {
  const grounding = (providerMetadata as { lexground?: GroundingProviderMetadata } | undefined)?.lexground;
  if (!grounding) return;
  console.log(
    `  top 3:      ${grounding.selectedIds.slice(0, 3).join(", ")} (of ${grounding.selectedIds.length})`,
  );
  console.log(`  confidence: ${grounding.confidence}`);
}

console.log("\nTurn 1: generateText");
const first = await generateText({
  model,
  system: "You are Kestrel Commerce's support assistant. Cite [KB:...] markers.",
  prompt: "What does payouts.instantEnabled do?",
});
console.log(`  answer:     ${first.text}`);
report(first.providerMetadata);

console.log("\nTurn 2: streamText, scoped to the WooCommerce integration");
const second = streamText({
  model,
  prompt: "Where does kestrel_wc_debug_log write its output?",
  providerOptions: { lexground: { enabledIntegrations: ["woocommerce"] } },
});
console.log(`  answer:     ${await second.text}`);
report(await second.providerMetadata);

console.log("\nTurn 3: a tool loop with searchKnowledge (grounded once, searched once)");
const third = await generateText({
  model,
  prompt: "How do I rotate an API key?",
  tools: { searchKnowledge: searchKnowledgeTool(engine) },
  stopWhen: stepCountIs(3),
});
const search = third.steps[0]?.toolResults[0]?.output as { entries: { citation: string }[] } | undefined;
console.log(
  `  tool found: ${search?.entries
    .slice(0, 3)
    .map((entry) => entry.citation)
    .join(" ")} …`,
);
console.log(`  answer:     ${third.text}`);
console.log(`  steps:      ${third.steps.length}`);
