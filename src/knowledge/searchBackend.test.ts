/**
 * The backend seam: an engine whose index sits behind an asynchronous {@link KnowledgeIndexBackend} (here the
 * in-memory snapshot answering through promises) gives the same outcomes as the in-memory engine, and reports
 * the backend's health; a backend that fails makes turns fail open with the error as `failureReason`.
 */
import { describe, expect, it } from "vitest";
import { payoutSources } from "../../test/fixtures/payouts.js";
import { PromisedBackend } from "../../test/support/promisedBackend.js";
import type { KnowledgeGroundingInput } from "../types/knowledge.js";
import { KnowledgeGroundingEngine } from "./engine.js";
import type { KnowledgeIndexBackend } from "./searchBackend.js";

const sources = payoutSources("3", [
  {
    id: "shopify.sync",
    title: "Shopify payouts sync",
    summary: "Payout reports synced to Shopify.",
    domain: "integrations",
    integrations: ["Shopify"],
  },
  {
    id: "internal.debug",
    title: "Payout debugging",
    summary: "Internal payout debugging notes.",
    domain: "internal",
    integrations: [],
  },
]);

const inputs: KnowledgeGroundingInput[] = [
  { query: "what does payouts.instantEnabled do?" },
  { query: "payout schedule weekly" },
  { query: "payouts", scope: { enabledIntegrations: ["shopify"] } },
  { query: "payout debugging", recentTurns: [{ role: "user", text: "instant payouts" }] },
  { query: "nothing matches here" },
];

describe("the backend seam", () => {
  it("an engine over an asynchronous backend gives the in-memory engine's outcomes", async () => {
    const backend = new PromisedBackend();
    for (const preset of ["neurolink", "recommended"] as const) {
      const config = { enabled: true, sources, preset, blockedDomains: ["internal"] };
      const memory = new KnowledgeGroundingEngine(config);
      const external = new KnowledgeGroundingEngine({ ...config, backend });
      for (const input of inputs) {
        const [expected, actual] = [await memory.ground(input), await external.ground(input)];
        expect(actual.ephemeralContext).toEqual(expected.ephemeralContext);
        expect({ ...actual.metadata, durationMs: 0 }).toEqual({ ...expected.metadata, durationMs: 0 });
        expect(actual.retrieval?.candidates).toEqual(expected.retrieval?.candidates);
      }
      expect(external.getStatus()).toMatchObject({
        ready: true,
        entryCount: 4,
        backend: { degraded: false },
      });
    }
  });

  it("a reader without sources serves what a writer published, and picks up new generations", async () => {
    const backend = new PromisedBackend();
    const reader = new KnowledgeGroundingEngine({ enabled: true, sources: [], backend });
    expect((await reader.ground({ query: "instant payouts" })).metadata.failureReason).toBe(
      "index-not-ready",
    );
    const writer = new KnowledgeGroundingEngine({ enabled: true, sources, backend });
    await writer.ready();
    expect((await reader.ground({ query: "instant payouts" })).metadata.selectedIds[0]).toBe(
      "payouts.instant",
    );
    // The same content published again is reused, not rewritten.
    await new KnowledgeGroundingEngine({ enabled: true, sources, backend }).ready();
    expect(backend.publishes).toBe(1);
    await writer.rebuild([{ id: "help", version: "4", entries: [sources[0]!.entries[1]!] }]);
    expect(backend.publishes).toBe(2);
    expect((await reader.ground({ query: "instant payouts" })).metadata.selectedIds).toEqual([
      "payouts.schedule",
    ]);
    expect(reader.getStatus()).toMatchObject({ ready: true, entryCount: 1, backend: { generation: 2 } });
  });

  it("a failing backend makes turns fail open with its error and the status degraded", async () => {
    const backend = new PromisedBackend();
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources, backend, logger: null });
    await engine.ready();
    backend.failure = new Error("connection refused");
    const outcome = await engine.ground({ query: "instant payouts" });
    expect(outcome.ephemeralContext).toBeNull();
    expect(outcome.metadata.failureReason).toBe("Error: connection refused");
    expect(engine.getStatus()).toMatchObject({
      backend: { degraded: true, lastError: "connection refused" },
    });
    // A failed rebuild leaves the published generation serving.
    const rebuilt = await engine.rebuild();
    expect(rebuilt).toMatchObject({ live: false, reason: "build-failed" });
    backend.failure = null;
    expect((await engine.ground({ query: "instant payouts" })).metadata.selectedIds[0]).toBe(
      "payouts.instant",
    );
  });

  it("a backend option that is not a backend is a configuration error at its path", () => {
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources,
      logger: null,
      backend: "postgres://localhost" as unknown as KnowledgeIndexBackend,
    });
    const issue = engine.getStatus().validationIssues.find((item) => item.path === "backend");
    expect(issue?.message).toMatch(/createPostgresBackend/);
  });
});
