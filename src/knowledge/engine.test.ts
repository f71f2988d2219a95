import { afterEach, describe, expect, it } from "vitest";
import { policiesSource, settingsSource } from "../../test/fixtures/registry.js";
import type { KnowledgeIndexSnapshot, KnowledgeSource } from "../types/knowledge.js";
import { KnowledgeGroundingEngine } from "./engine.js";
import {
  clearKnowledgeIndexCache,
  getKnowledgeIndexCacheSize,
  getOrBuildKnowledgeIndexSnapshot,
} from "./indexCache.js";

afterEach(() => clearKnowledgeIndexCache());

const sources = [settingsSource, policiesSource];
const scope = { enabledIntegrations: ["integration-a"] };

/** Timers and other handles still alive (the test runner's own are excluded by comparing before/after). */
function activeTimers(): number {
  return process.getActiveResourcesInfo().filter((name) => name === "Timeout").length;
}

describe("configuration validation", () => {
  it.each([
    [{ retrieval: { k1: Number.NaN } }, "retrieval.k1"],
    [{ retrieval: { k1: Number.POSITIVE_INFINITY } }, "retrieval.k1"],
    [{ retrieval: { b: 1.5 } }, "retrieval.b"],
    [{ retrieval: { fieldWeights: { title: -1 } } }, "retrieval.fieldWeights.title"],
    [{ retrieval: { fieldWeights: { titel: 2 } } }, "retrieval.fieldWeights.titel"],
    [{ retrieval: { candidateLimit: 2.5 } }, "retrieval.candidateLimit"],
    [{ context: { maxTokens: Number.NaN } }, "context.maxTokens"],
    [{ context: { passages: "on" } }, "context.passages"],
    [{ context: { passageTokens: 0 } }, "context.passageTokens"],
    [{ context: { maxPassages: 1.5 } }, "context.maxPassages"],
    [{ context: { longBodyTokens: -1 } }, "context.longBodyTokens"],
    [{ timeoutMs: 0 }, "timeoutMs"],
    [{ blockedDomains: "internal" }, "blockedDomains"],
  ])("%j is reported at %s and the engine does not build", async (override, path) => {
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources, ...(override as object) });
    await engine.ready();
    const status = engine.getStatus();
    expect(status.ready).toBe(false);
    expect(status.lastError).toContain(path);
    expect(status.validationIssues).toContainEqual(expect.objectContaining({ code: "bad-config", path }));
    const outcome = await engine.ground({ query: "multi step flow", scope });
    expect(outcome.metadata.failureReason).toBe("validation-failed");
  });

  it("accepts partial field weights", async () => {
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources,
      retrieval: { fieldWeights: { body: 2 } },
    });
    await engine.ready();
    expect(engine.getStatus().ready).toBe(true);
    const outcome = await engine.ground({ query: "guided workflow steps", scope });
    expect(Number.isFinite(outcome.retrieval?.contextTokens)).toBe(true);
    expect(outcome.metadata.selectedIds).toContain("settings.multi-step-flow");
  });
});

describe("validation failure and rebuild", () => {
  const broken: KnowledgeSource[] = [
    { id: "broken", entries: [{ id: "x", title: "", summary: "s", domain: "d", integrations: [] }] },
  ];

  it("reports issues, stays not ready, and fails turns with validation-failed", async () => {
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources: broken });
    await engine.ready();
    expect(engine.getStatus()).toMatchObject({
      enabled: true,
      ready: false,
      entryCount: 0,
      lastError: "knowledge validation failed with 1 error(s)",
    });
    const outcome = await engine.ground({ query: "x" });
    expect(outcome).toMatchObject({ ephemeralContext: null, retrieval: null });
    expect(outcome.metadata.failureReason).toBe("validation-failed");
  });

  it("recovers when rebuilt with corrected sources", async () => {
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources: broken });
    await engine.ready();
    const status = await engine.rebuild(sources);
    expect(status).toMatchObject({ ready: true, entryCount: 3, lastError: null });
    const outcome = await engine.ground({ query: "enable multi step flow", scope });
    expect(outcome.metadata.confidence).toBe("high");
  });

  it("keeps serving the previous snapshot when a rebuild is invalid, and reports the new issues", async () => {
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources });
    await engine.ready();
    const before = engine.getSnapshot();
    const status = await engine.rebuild(broken);
    expect(status.ready).toBe(true);
    expect(status.entryCount).toBe(3);
    expect(status.lastError).toBe("knowledge validation failed with 1 error(s)");
    expect(status.validationIssues[0]).toMatchObject({
      code: "missing-title",
      path: "sources[0].entries[0].title",
    });
    expect(engine.getSnapshot()).toBe(before);
    expect((await engine.ground({ query: "policy types" })).metadata.selectedIds).toContain(
      "access.policy-types",
    );
  });

  it("serves the old snapshot while a rebuild is in flight, then swaps atomically; the latest rebuild wins", async () => {
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources: [policiesSource] });
    await engine.ready();
    const first = engine.rebuild([settingsSource]);
    const second = engine.rebuild(sources);
    expect(engine.getStatus().building).toBe(true);
    expect((await engine.ground({ query: "policy types" })).metadata.selectedIds).toEqual([
      "access.policy-types",
    ]);
    await Promise.all([first, second]);
    expect(engine.getStatus()).toMatchObject({ entryCount: 3, building: false });
  });

  it("a host mutating its sources after the build changes nothing until rebuilt", async () => {
    const mutable: KnowledgeSource[] = structuredClone(sources);
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources: mutable });
    const before = await engine.ground({ query: "policy types" });
    mutable[1]!.entries[0]!.title = "Renamed";
    mutable[1]!.entries[0]!.summary = "zebra";
    const after = await engine.ground({ query: "policy types" });
    expect(after.ephemeralContext?.content).toBe(before.ephemeralContext?.content);
    await engine.rebuild();
    const rebuilt = await engine.ground({ query: "zebra" });
    expect(rebuilt.metadata.selectedIds).toEqual(["access.policy-types"]);
  });
});

describe("fail-open turns", () => {
  it("times out while the index never becomes ready, clears its timer, leaks no rejection", async () => {
    const timersBefore = activeTimers();
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources, timeoutMs: 20 });
    let rejectLate: (error: Error) => void = () => {};
    engine.ready = () =>
      new Promise<void>((_, reject) => {
        rejectLate = reject;
      });
    const outcome = await engine.ground({ query: "multi step flow" });
    expect(outcome.ephemeralContext).toBeNull();
    expect(outcome.metadata.failureReason).toBe("TimeoutError: Knowledge grounding timed out after 20ms");
    rejectLate(new Error("late failure after the timeout"));
    await new Promise((resolve) => setImmediate(resolve));
    expect(activeTimers()).toBeLessThanOrEqual(timersBefore);
  });

  it("discards a result that arrives after the timeout (synchronous work cannot be pre-empted)", async () => {
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources, timeoutMs: 15 });
    await engine.ready();
    const snapshot = engine.getSnapshot()!;
    const slow: KnowledgeIndexSnapshot = {
      ...snapshot,
      lexical: {
        search: (tokens, topK, eligible) => {
          const until = Date.now() + 40;
          while (Date.now() < until) {
            // Busy: simulates synchronous scoring that overruns the budget.
          }
          return snapshot.lexical.search(tokens, topK, eligible);
        },
      },
    };
    engine.installSnapshot(slow, "built");
    const outcome = await engine.ground({ query: "policy types" });
    expect(outcome.ephemeralContext).toBeNull();
    // The same timeout surfaces the same way on both paths (NeuroLink says "Error: …" for a discarded late result).
    expect(outcome.metadata.failureReason).toBe("TimeoutError: Knowledge grounding timed out after 15ms");
  });

  it("a retrieval that throws fails open with the error as reason", async () => {
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources });
    await engine.ready();
    engine.installSnapshot(
      {
        ...engine.getSnapshot()!,
        lexical: {
          search: () => {
            throw new TypeError("searcher exploded");
          },
        },
      },
      "built",
    );
    const outcome = await engine.ground({ query: "policy types" });
    expect(outcome).toMatchObject({ ephemeralContext: null, retrieval: null });
    expect(outcome.metadata.failureReason).toBe("TypeError: searcher exploded");
  });

  it("empty, punctuation-only and junk queries give no context and no NaN", async () => {
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources });
    for (const input of [
      { query: "" },
      { query: "?!... ---" },
      { query: 42 },
      null,
      { query: "x", recentTurns: "nope", scope: 7 },
    ]) {
      const outcome = await engine.ground(input as never);
      expect(outcome.ephemeralContext).toBeNull();
      expect(outcome.metadata.contextTokens).toBe(0);
      expect(Number.isNaN(outcome.metadata.durationMs)).toBe(false);
    }
  });

  it("a 1 MB query stays within budget and does not throw", async () => {
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources, timeoutMs: 5_000 });
    const query = "policy types multi step flow ".repeat(40_000).slice(0, 1_000_000);
    const outcome = await engine.ground({ query, scope });
    expect(outcome.metadata.failureReason).toBeUndefined();
    expect(outcome.metadata.contextTokens).toBeLessThanOrEqual(4000);
    expect(outcome.metadata.selectedIds).toEqual(
      expect.arrayContaining(["access.policy-types", "settings.multi-step-flow"]),
    );
  });

  it("keeps the last four recent turns and caps each at 400 characters", async () => {
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources });
    const padding = "x ".repeat(200);
    const outcome = await engine.ground({
      query: "tell me more",
      recentTurns: [
        { role: "user", text: "policy types" },
        { role: "assistant", text: "zzz1" },
        { role: "user", text: "zzz2" },
        { role: "assistant", text: "zzz3" },
        { role: "user", text: `${padding} progress indicator` },
      ],
    });
    // "policy types" is the fifth-last message and "progress indicator" lies past 400 characters: neither counts.
    expect(outcome.metadata.candidateCount).toBe(0);
  });
});

describe("sharing and concurrency", () => {
  it("many engines with the same sources build once and share the snapshot", async () => {
    const engines = Array.from(
      { length: 100 },
      () => new KnowledgeGroundingEngine({ enabled: true, sources }),
    );
    await Promise.all(engines.map((engine) => engine.ready()));
    expect(getKnowledgeIndexCacheSize()).toBe(1);
    const first = engines[0]!.getSnapshot();
    for (const engine of engines) expect(engine.getSnapshot()).toBe(first);
  });

  it("concurrent turns equal sequential ones", async () => {
    // 500 turns started at once share one thread: on a loaded machine the last ones would pass the default 800 ms
    // and fail open. What is tested is that they answer the same, not how soon.
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources, timeoutMs: 120_000 });
    const queries = [
      "policy types",
      "enable multi step flow",
      "guided workflow",
      "progress bar",
      "nothing here",
    ];
    const sequential: (string | null)[] = [];
    for (const query of queries)
      sequential.push((await engine.ground({ query, scope })).ephemeralContext?.content ?? null);
    const concurrent = await Promise.all(
      Array.from({ length: 500 }, (_, index) =>
        engine.ground({ query: queries[index % queries.length]!, scope }),
      ),
    );
    concurrent.forEach((outcome, index) => {
      expect(outcome.ephemeralContext?.content ?? null).toBe(sequential[index % queries.length]);
    });
  });

  it("a build that throws is not cached", async () => {
    await expect(getOrBuildKnowledgeIndexSnapshot(sources, { k1: Number.NaN })).rejects.toThrow(RangeError);
    expect(getKnowledgeIndexCacheSize()).toBe(0);
  });
});

describe("cache key serialization", () => {
  it("the specialized entry serializer equals the generic stable serializer", async () => {
    const { serializeEntry } = await import("./indexCache.js");
    const { stableStringify: stableStringifyForTests } = await import(
      "../../test/support/stableStringify.js"
    );
    const { normalizeAndValidate } = await import("./resolve.js");
    const { entries } = normalizeAndValidate(
      [
        ...sources,
        {
          id: "odd",
          entries: [
            {
              id: 'q"\\\u2028',
              title: "Ü\n",
              summary: "s",
              domain: "d",
              integrations: ["x"],
              parentEntryId: "p",
              aliases: ["a\u0000"],
            },
          ],
        },
      ],
      { manifestVersion: "0" },
    );
    for (const entry of entries) expect(serializeEntry(entry)).toBe(stableStringifyForTests(entry));
  });
});

describe("passages (context.passages)", () => {
  const runbook: KnowledgeSource = {
    id: "runbooks",
    version: "2",
    entries: [
      {
        id: "runbooks.payout-batch",
        title: "Delayed payout batch",
        summary: "What to do when a payout batch is late.",
        domain: "payouts",
        integrations: [],
        body: [
          "## Detect",
          "An alert fires when the partner has not acknowledged the file.",
          "## Re-submit rejected payouts",
          "Export the rejected ids, verify there are no duplicates, then requeue them into the next window.",
          "## Close",
          "Resolve the incident and write the review within five days.",
        ].join("\n\n"),
      },
    ],
  };

  it("scores the passages against the turn's query with the retrieval analyzer", async () => {
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [runbook],
      retrieval: { analyzer: "english" },
      context: { passages: "auto", longBodyTokens: 10, maxPassages: 1 },
    });
    const outcome = await engine.ground({ query: "how do I requeue a rejected payout batch" });
    expect(outcome.retrieval?.excerptedIds).toEqual(["runbooks.payout-batch"]);
    // "rejected" and "requeue" stem to the passage's words; the other sections are elided.
    expect(outcome.ephemeralContext?.content).toContain(
      "Summary: What to do when a payout batch is late.\n[…]\n## Re-submit rejected payouts\n\nExport the rejected ids",
    );
    expect(outcome.ephemeralContext?.content).not.toContain("Resolve the incident");
    expect(outcome.ephemeralContext?.citations).toEqual([{ id: "runbooks.payout-batch", version: "2" }]);
    const other = await engine.ground({ query: "payout batch review after the incident is resolved" });
    expect(other.ephemeralContext?.content).toContain("[…]\n## Close\n\nResolve the incident");
  });

  it("leaves the default outcome without excerpt fields", async () => {
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources: [runbook] });
    const outcome = await engine.ground({ query: "requeue rejected payouts" });
    expect(outcome.retrieval).not.toHaveProperty("excerptedIds");
    expect(outcome.ephemeralContext?.content).toContain("Resolve the incident");
  });
});
