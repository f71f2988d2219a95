/**
 * Issue 11, "grounding must not go silently dark": when validation blocks a source set (or the configuration), the
 * engine logs one clear warning per logger and content (never per turn), turns name the cause in `failureReason`,
 * and `strict: true` makes `ready()` reject with a typed error a host can await at start-up.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { policiesSource, settingsSource } from "../../test/fixtures/registry.js";
import type { KnowledgeGroundingConfig, KnowledgeSource } from "../types/knowledge.js";
import { KnowledgeGroundingEngine, KnowledgeRegistryError } from "./engine.js";
import { clearKnowledgeIndexCache } from "./indexCache.js";

afterEach(() => {
  clearKnowledgeIndexCache();
  vi.restoreAllMocks();
});

const valid: KnowledgeSource[] = [settingsSource, policiesSource];
/** A set with two invalid entries and one valid one; `tag` makes its content (and so its cache key) distinct. */
function broken(tag = "a"): KnowledgeSource[] {
  return [
    {
      id: `broken-${tag}`,
      entries: [
        { id: "payments.refunds", title: "", summary: "s", domain: "d", integrations: [] },
        { id: "payments.payouts", title: "Payouts", summary: "s", domain: "d" } as never,
        { id: "payments.fine", title: "Fine", summary: "s", domain: "d", integrations: [] },
      ],
    },
  ];
}

function recordingLogger(): { warn: (message: string) => void; messages: string[] } {
  const messages: string[] = [];
  return { warn: (message: string) => messages.push(message), messages };
}

const engineWith = (config: Partial<KnowledgeGroundingConfig>) =>
  new KnowledgeGroundingEngine({ enabled: true, sources: valid, ...config });

describe("one warning when validation blocks a source set", () => {
  it("names the entries, the number of issues and how to see them; turns add no further warnings", async () => {
    const logger = recordingLogger();
    const engine = engineWith({ sources: broken(), logger });
    await engine.ready();
    for (let turn = 0; turn < 5; turn++) {
      const outcome = await engine.ground({ query: "refunds" });
      expect(outcome.metadata.failureReason).toBe("validation-failed");
    }
    expect(logger.messages).toHaveLength(1);
    const [message] = logger.messages;
    expect(message).toContain("[KnowledgeGrounding] knowledge validation failed");
    expect(message).toContain('2 validation error(s) in 2 entries ("payments.refunds", "payments.payouts")');
    expect(message).toContain("sources[0].entries[0].title");
    expect(message).toContain('failureReason "validation-failed"');
    expect(message).toContain("getStatus().validationIssues");
    expect(message).toContain("lexground validate");
  });

  it("once per logger and content: a second engine on the same registry adds nothing, a changed registry warns", async () => {
    const logger = recordingLogger();
    await engineWith({ sources: broken("same"), logger }).ready();
    await engineWith({ sources: broken("same"), logger }).ready();
    expect(logger.messages).toHaveLength(1);
    await engineWith({ sources: broken("changed"), logger }).ready();
    expect(logger.messages).toHaveLength(2);
    const other = recordingLogger();
    await engineWith({ sources: broken("same"), logger: other }).ready();
    expect(other.messages).toHaveLength(1);
  });

  it("many entries: the first five are named, then how many more", async () => {
    const logger = recordingLogger();
    const entries = Array.from({ length: 8 }, (_, index) => ({
      id: `e${index}`,
      title: "",
      summary: "s",
      domain: "d",
      integrations: [],
    }));
    await engineWith({ sources: [{ id: "many", entries }], logger }).ready();
    expect(logger.messages[0]).toContain('in 8 entries ("e0", "e1", "e2", "e3", "e4" and 3 more)');
  });

  it("an invalid rebuild warns once and says the previous snapshot keeps serving", async () => {
    const logger = recordingLogger();
    const engine = engineWith({ logger });
    await engine.ready();
    expect(logger.messages).toEqual([]);
    await engine.rebuild(broken("rebuild"));
    await engine.rebuild(broken("rebuild"));
    expect(logger.messages).toHaveLength(1);
    expect(logger.messages[0]).toContain("the previous snapshot keeps serving");
  });

  it("an invalid configuration warns once, when grounding is enabled", async () => {
    const logger = recordingLogger();
    const engine = engineWith({ logger, retrieval: { k1: Number.NaN } });
    await engine.ground({ query: "policy types" });
    expect(logger.messages).toHaveLength(1);
    expect(logger.messages[0]).toContain("configuration is invalid");
    expect(logger.messages[0]).toContain("retrieval.k1");
    const disabled = recordingLogger();
    new KnowledgeGroundingEngine({
      enabled: false,
      sources: valid,
      logger: disabled,
      retrieval: { k1: Number.NaN },
    });
    expect(disabled.messages).toEqual([]);
  });

  it("logs through console by default, and not at all with logger: null", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    await engineWith({ sources: broken("console") }).ready();
    expect(warn).toHaveBeenCalledTimes(1);
    await engineWith({ sources: broken("silenced"), logger: null }).ready();
    expect(warn).toHaveBeenCalledTimes(1);
  });

  it("a logger that throws does not break the build or the turn", async () => {
    const engine = engineWith({
      sources: broken("throwing-logger"),
      logger: {
        warn: () => {
          throw new Error("logger down");
        },
      },
    });
    await expect(engine.ready()).resolves.toBeUndefined();
    expect((await engine.ground({ query: "x" })).metadata.failureReason).toBe("validation-failed");
  });

  it("a valid registry logs nothing", async () => {
    const logger = recordingLogger();
    const engine = engineWith({ logger });
    await engine.ground({ query: "policy types" });
    expect(logger.messages).toEqual([]);
  });
});

describe("failureReason names the cause", () => {
  it("validation-failed for invalid sources or configuration; index-not-ready when there is nothing to build", async () => {
    const logger = recordingLogger();
    expect(
      (await engineWith({ sources: broken(), logger }).ground({ query: "x" })).metadata.failureReason,
    ).toBe("validation-failed");
    expect(
      (await engineWith({ logger, context: { maxTokens: -1 } }).ground({ query: "x" })).metadata
        .failureReason,
    ).toBe("validation-failed");
    expect((await engineWith({ sources: [], logger }).ground({ query: "x" })).metadata.failureReason).toBe(
      "index-not-ready",
    );
  });

  it("a later valid rebuild clears the reason", async () => {
    const engine = engineWith({ sources: broken(), logger: null });
    await engine.ready();
    await engine.rebuild(valid);
    const outcome = await engine.ground({ query: "policy types" });
    expect(outcome.metadata.failureReason).toBeUndefined();
  });
});

describe("strict: true", () => {
  it("ready() rejects with a KnowledgeRegistryError listing the issues; turns still fail open", async () => {
    const engine = engineWith({ sources: broken(), strict: true, logger: null });
    const error = await engine.ready().then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(KnowledgeRegistryError);
    expect(KnowledgeRegistryError.isInstance(error)).toBe(true);
    const registryError = error as KnowledgeRegistryError;
    expect(registryError).toMatchObject({
      name: "KnowledgeRegistryError",
      code: "KNOWLEDGE_VALIDATION_FAILED",
      reason: "validation-failed",
    });
    expect(registryError.issues.filter((issue) => issue.level === "error")).toHaveLength(2);
    expect(registryError.message).toContain('"payments.refunds"');
    expect(registryError.status.ready).toBe(false);
    // ground() keeps its contract: it never throws, strict or not.
    const outcome = await engine.ground({ query: "refunds" });
    expect(outcome.metadata.failureReason).toBe("validation-failed");
  });

  it("an invalid configuration rejects ready() too", async () => {
    const engine = engineWith({ strict: true, logger: null, timeoutMs: -5 });
    await expect(engine.ready()).rejects.toMatchObject({
      code: "KNOWLEDGE_VALIDATION_FAILED",
      issues: [expect.objectContaining({ path: "timeoutMs" })],
    });
  });

  it("a valid registry resolves; a later invalid rebuild does not make ready() reject", async () => {
    const engine = engineWith({ strict: true, logger: null });
    await expect(engine.ready()).resolves.toBeUndefined();
    await engine.rebuild(broken());
    await expect(engine.ready()).resolves.toBeUndefined();
  });

  it("without strict, ready() never rejects", async () => {
    await expect(engineWith({ sources: broken(), logger: null }).ready()).resolves.toBeUndefined();
  });

  it("strict must be a boolean", async () => {
    const engine = engineWith({ strict: "yes" as never, logger: null });
    await engine.ready();
    expect(engine.getStatus().validationIssues).toContainEqual(
      expect.objectContaining({ code: "bad-config", path: "strict" }),
    );
  });
});
