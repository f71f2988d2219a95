/**
 * A failed build is retried (checklist row 19): a build that throws (not a validation failure) leaves the turn ungrounded, is not cached, and
 * is retried by a later turn. The cache module is replaced so the first build throws.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { policiesSource } from "../../test/fixtures/registry.js";

const calls = { count: 0 };
vi.mock("./indexCache.js", async (importOriginal) => {
  const original = await importOriginal<typeof import("./indexCache.js")>();
  return {
    ...original,
    getOrBuildKnowledgeIndexSnapshot: async (
      ...args: Parameters<typeof original.getOrBuildKnowledgeIndexSnapshot>
    ) => {
      calls.count++;
      if (calls.count === 1) throw new Error("disk on fire");
      return original.getOrBuildKnowledgeIndexSnapshot(...args);
    },
  };
});

const { KnowledgeGroundingEngine } = await import("./engine.js");

afterEach(() => vi.useRealTimers());

describe("a build that throws", () => {
  it("fails the turn open, then a later turn retries the build", async () => {
    calls.count = 0;
    let clock = 0;
    const warnings: string[] = [];
    const logger = { warn: (message: string) => warnings.push(message) };
    const engine = new KnowledgeGroundingEngine(
      { enabled: true, sources: [policiesSource], logger },
      () => clock,
    );
    await engine.ready();
    expect(engine.getStatus()).toMatchObject({ ready: false, lastError: "Error: disk on fire" });
    const first = await engine.ground({ query: "policy types" });
    expect(first.metadata.failureReason).toBe("build-failed");
    // One warning for the failure, not one per turn (issue 11: grounding must not go silently dark).
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain("the knowledge index build failed: Error: disk on fire");
    expect(calls.count).toBe(1); // too soon to retry
    clock = 5_000;
    await engine.ground({ query: "policy types" });
    expect(calls.count).toBe(2);
    await vi.waitFor(() => expect(engine.getStatus().ready).toBe(true));
    const later = await engine.ground({ query: "policy types" });
    expect(later.metadata.selectedIds).toEqual(["access.policy-types"]);
    expect(engine.getStatus().lastError).toBeNull();
    expect(warnings).toHaveLength(1);
  });

  it("strict: ready() rejects with KNOWLEDGE_BUILD_FAILED", async () => {
    calls.count = 0;
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [policiesSource],
      strict: true,
      logger: null,
    });
    await expect(engine.ready()).rejects.toMatchObject({
      name: "KnowledgeRegistryError",
      code: "KNOWLEDGE_BUILD_FAILED",
      reason: "build-failed",
    });
  });
});
