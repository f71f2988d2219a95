import { Document } from "@langchain/core/documents";
import { BaseRetriever } from "@langchain/core/retrievers";
import { RunnableLambda } from "@langchain/core/runnables";
import { describe, expect, it } from "vitest";
import type { KnowledgeGroundingMetadata } from "../../src/index.js";
import { KnowledgeGroundingEngine, retrieve } from "../../src/index.js";
import {
  entryPageContent,
  GroundingIntegrationError,
  type KnowledgeDocumentMetadata,
  KnowledgeRetriever,
} from "../../src/integrations/langchain.js";
import { config, readyEngine, recordingEngine } from "./fixtures.js";

const QUESTION = "How do I turn on payouts.instantEnabled?";

describe("KnowledgeRetriever", () => {
  it("invoke() returns one Document per selected entry with citation, score and confidence", async () => {
    const engine = await readyEngine();
    const retriever = new KnowledgeRetriever({ engine });
    expect(retriever).toBeInstanceOf(BaseRetriever);
    const documents = await retriever.invoke(QUESTION);

    const selection = retrieve(
      engine.getSnapshot()!,
      { query: QUESTION, recentTurns: [], enabledIntegrations: [] },
      engine.getResolvedRetrieval(),
    );
    expect(documents.map((document) => document.id)).toEqual([
      "payouts.instant-payouts",
      "payouts.payout-schedule",
      "payouts.eligible-cards",
    ]);
    const [first, second, expanded] = documents as [
      Document<KnowledgeDocumentMetadata>,
      Document<KnowledgeDocumentMetadata>,
      Document<KnowledgeDocumentMetadata>,
    ];
    expect(first).toBeInstanceOf(Document);
    expect(first.pageContent).toBe(
      "Instant Payouts\n\nInstant payouts send available funds to a debit card within minutes for a 1% fee.\n\n" +
        "Turn on payouts.instantEnabled in Settings → Payouts. Instant payouts are limited to 10,000 USD a day.",
    );
    expect(first.metadata).toEqual({
      citation: "[KB:payouts.instant-payouts@7]",
      id: "payouts.instant-payouts",
      version: "7",
      title: "Instant Payouts",
      score: selection.candidates[0]!.score,
      confidence: "high",
      kind: "configuration",
      domain: "payouts",
      expanded: false,
    });
    expect(second.metadata.score).toBe(selection.candidates[1]!.score);
    expect(second.metadata.score!).toBeLessThan(first.metadata.score!);
    // An entry with no body: title and summary only.
    expect(expanded.pageContent).toBe(
      "Eligible Cards\n\nOnly Visa and Mastercard debit cards issued in the US qualify.",
    );
    expect(expanded.metadata).toMatchObject({
      citation: "[KB:payouts.eligible-cards@7]",
      score: null,
      confidence: "high",
      expanded: true,
      expandedFrom: "payouts.instant-payouts",
    });
  });

  it("searches within its scope; withScope() gives a retriever over the same engine with another scope", async () => {
    const recording = recordingEngine(await readyEngine());
    const retriever = new KnowledgeRetriever({ engine: recording });
    const query = "my shopify refund is not syncing";
    const unscoped = await retriever.invoke(query);
    const scoped = await retriever.withScope({ enabledIntegrations: ["shopify"] }).invoke(query);
    expect(unscoped.map((document) => document.id)).not.toContain("integrations.shopify-refunds-not-syncing");
    expect(scoped[0]!.id).toBe("integrations.shopify-refunds-not-syncing");
    expect(scoped[0]!.metadata.confidence).toBe("medium");
    expect(recording.inputs.map((input) => input.scope)).toEqual([
      undefined,
      { enabledIntegrations: ["shopify"] },
    ]);
  });

  it("k limits the documents and includeExpanded: false drops expanded entries", async () => {
    const engine = await readyEngine();
    const limited = await new KnowledgeRetriever({ engine, k: 1 }).invoke(QUESTION);
    expect(limited.map((document) => document.id)).toEqual(["payouts.instant-payouts"]);
    const primaryOnly = await new KnowledgeRetriever({ engine, includeExpanded: false }).invoke(QUESTION);
    expect(primaryOnly.map((document) => document.metadata.expanded)).toEqual([false, false]);
  });

  it("passes recent turns to the engine", async () => {
    const recording = recordingEngine(await readyEngine());
    const turns = [{ role: "user" as const, text: "we use instant payouts" }];
    await new KnowledgeRetriever({ engine: recording, recentTurns: turns }).invoke(
      "what is the daily limit?",
    );
    expect(recording.inputs[0]!.recentTurns).toEqual(turns);
  });

  it("builds its own engine from a configuration", async () => {
    const retriever = new KnowledgeRetriever({ config });
    expect(retriever.engine).toBeInstanceOf(KnowledgeGroundingEngine);
    const documents = await retriever.invoke(QUESTION);
    expect(documents[0]!.metadata.citation).toBe("[KB:payouts.instant-payouts@7]");
  });

  it("fails open with no documents and reports why through onGrounding", async () => {
    const seen: KnowledgeGroundingMetadata[] = [];
    const retriever = new KnowledgeRetriever({
      engine: {
        ground: async () => {
          throw new Error("engine exploded");
        },
      },
      onGrounding: (metadata) => seen.push(metadata),
    });
    expect(await retriever.invoke(QUESTION)).toEqual([]);
    expect(seen.map((metadata) => metadata.failureReason)).toEqual(["Error: engine exploded"]);
  });

  it("returns no documents when nothing matches", async () => {
    expect(await new KnowledgeRetriever({ engine: await readyEngine() }).invoke("zzzz qqqq")).toEqual([]);
  });

  it("composes in a runnable chain and batches", async () => {
    const retriever = new KnowledgeRetriever({ engine: await readyEngine() });
    const chain = retriever.pipe(
      RunnableLambda.from((documents: Document<KnowledgeDocumentMetadata>[]) =>
        documents.map((document) => document.metadata.citation).join(" "),
      ),
    );
    expect(await chain.invoke(QUESTION)).toBe(
      "[KB:payouts.instant-payouts@7] [KB:payouts.payout-schedule@7] [KB:payouts.eligible-cards@7]",
    );
    const batched = await retriever.batch([QUESTION, "two factor"]);
    expect(batched.map((documents) => documents[0]!.id)).toEqual([
      "payouts.instant-payouts",
      "security.two-factor-authentication",
    ]);
  });

  it("rejects bad options with an error naming the option", async () => {
    const engine = await readyEngine();
    const cases: Array<[unknown, string]> = [
      [{}, "KnowledgeRetriever options"],
      [{ engine: { search: () => [] } }, "KnowledgeRetriever options.engine"],
      [
        { engine, scope: { enabledIntegrations: [1] } },
        "KnowledgeRetriever options.scope.enabledIntegrations[0]",
      ],
      [{ engine, k: -1 }, "KnowledgeRetriever options.k"],
      [{ engine, recentTurns: [{ role: "system", text: "x" }] }, "KnowledgeRetriever options.recentTurns[0]"],
      [{ config: { ...config, retrieval: { k1: -1 } } }, "KnowledgeRetriever options.config.retrieval.k1"],
    ];
    for (const [options, path] of cases) {
      let caught: unknown;
      try {
        new KnowledgeRetriever(options as never);
      } catch (error) {
        caught = error;
      }
      expect(caught, path).toBeInstanceOf(GroundingIntegrationError);
      expect((caught as GroundingIntegrationError).path).toBe(path);
    }
  });

  it("entryPageContent leaves out empty parts", () => {
    expect(
      entryPageContent({
        id: "a",
        title: "T",
        summary: "S",
        body: "  ",
        domain: "d",
        integrations: [],
        kind: "text",
        status: "active",
        aliases: [],
        keywords: [],
        relatedEntryIds: [],
        version: "1",
      }),
    ).toBe("T\n\nS");
  });
});
