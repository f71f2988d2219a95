/**
 * Issue 11, items 7 and 10: the engine never throws on hostile configuration (throwing getters, revoked proxies,
 * anywhere in the configuration or the sources given to rebuild), reads each option once (later changes to the
 * host's object have no effect), and treats a timeout above Node's timer limit as a long timeout, not 1 ms.
 */
import { afterEach, describe, expect, it } from "vitest";
import { policiesSource, settingsSource } from "../../test/fixtures/registry.js";
import type { KnowledgeGroundingConfig, KnowledgeSource } from "../types/knowledge.js";
import { resolveTimeout } from "./config.js";
import { readGroundingConfig } from "./configRead.js";
import { validateGroundingConfig } from "./configValidation.js";
import { KNOWLEDGE_CONFIG_FIELDS, MAX_TIMER_DELAY_MS } from "./defaults.js";
import { KnowledgeGroundingEngine } from "./engine.js";
import { clearKnowledgeIndexCache } from "./indexCache.js";

afterEach(() => clearKnowledgeIndexCache());

const sources: KnowledgeSource[] = [settingsSource, policiesSource];
const silent = { warn: () => {} };

function revokedProxy(): never {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy as never;
}

/** `base` with `field` replaced by a getter that throws. */
function throwingAt<T extends object>(base: T, field: string): T {
  return Object.defineProperty({ ...base }, field, {
    enumerable: true,
    get() {
      throw new TypeError(`cannot read ${field}`);
    },
  });
}

const valid = (): KnowledgeGroundingConfig => ({
  enabled: true,
  sources,
  blockedDomains: [],
  retrieval: { k1: 1.2, fieldWeights: { title: 4 } },
  context: { maxTokens: 2_000 },
  timeoutMs: 5_000,
  logger: silent,
});

describe("the engine never throws on a hostile configuration", () => {
  it("a revoked proxy as the whole configuration: not ready, the reason in status, turns fail open", async () => {
    let engine: KnowledgeGroundingEngine | undefined;
    expect(() => {
      engine = new KnowledgeGroundingEngine(revokedProxy());
    }).not.toThrow();
    await engine!.ready();
    const status = engine!.getStatus();
    expect(status.ready).toBe(false);
    expect(status.validationIssues).toContainEqual(
      expect.objectContaining({ code: "bad-config", path: "config" }),
    );
    const outcome = await engine!.ground({ query: "policy types" });
    expect(outcome.metadata.failureReason).toBe("validation-failed");
  });

  it.each([...KNOWLEDGE_CONFIG_FIELDS])(
    "a throwing %s getter is a bad-config issue at that path; ground() fails open",
    async (field) => {
      const config = throwingAt(valid(), field);
      const engine = new KnowledgeGroundingEngine(config);
      await engine.ready();
      expect(engine.getStatus().validationIssues).toContainEqual(
        expect.objectContaining({ level: "error", code: "bad-config", path: field }),
      );
      // An unreadable `enabled` counts as enabled, so the turn says why it is not grounded.
      const outcome = await engine.ground({ query: "policy types" });
      expect(outcome.ephemeralContext).toBeNull();
      expect(outcome.metadata.failureReason).toBe("validation-failed");
    },
  );

  it.each([
    ["retrieval", { ...valid(), retrieval: revokedProxy() }],
    ["context", { ...valid(), context: revokedProxy() }],
    ["blockedDomains", { ...valid(), blockedDomains: revokedProxy() }],
    ["retrieval.fieldWeights", { ...valid(), retrieval: { fieldWeights: revokedProxy() } }],
    ["retrieval.k1", { ...valid(), retrieval: throwingAt({ b: 0.5 }, "k1") }],
    ["retrieval.fieldWeights.title", { ...valid(), retrieval: { fieldWeights: throwingAt({}, "title") } }],
    ["context.maxTokens", { ...valid(), context: throwingAt({}, "maxTokens") }],
    [
      "blockedDomains[1]",
      {
        ...valid(),
        blockedDomains: Object.defineProperty(["a", "b"], 1, {
          get() {
            throw new Error("no");
          },
        }),
      },
    ],
  ])("a revoked proxy or throwing getter at %s is reported there", async (path, config) => {
    const engine = new KnowledgeGroundingEngine(config as KnowledgeGroundingConfig);
    await engine.ready();
    expect(engine.getStatus().validationIssues).toContainEqual(
      expect.objectContaining({ code: "bad-config", path }),
    );
    expect((await engine.ground({ query: "policy types" })).metadata.failureReason).toBe("validation-failed");
    expect(() => validateGroundingConfig(config)).not.toThrow();
  });

  it("a revoked proxy as the sources: an issue at sources, never a throw", async () => {
    const engine = new KnowledgeGroundingEngine({ ...valid(), sources: revokedProxy() });
    await engine.ready();
    expect(engine.getStatus().validationIssues).toContainEqual(
      expect.objectContaining({ code: "bad-config", path: "sources" }),
    );
    expect((await engine.ground({ query: "policy types" })).metadata.failureReason).toBe("validation-failed");
  });

  it("rebuild(revokedProxy) resolves (never rejects); the previous snapshot keeps serving", async () => {
    const engine = new KnowledgeGroundingEngine(valid());
    await engine.ready();
    const result = await engine.rebuild(revokedProxy());
    expect(result).toMatchObject({ ready: true, live: false, reason: "validation-failed" });
    expect(result.validationIssues).toContainEqual(
      expect.objectContaining({ code: "unreadable-input", path: "sources" }),
    );
    const hostileSource = [throwingAt({ id: "s", entries: [] }, "entries")];
    await expect(engine.rebuild(hostileSource as never)).resolves.toMatchObject({ live: false });
    expect((await engine.ground({ query: "policy types" })).metadata.selectedIds).toContain(
      "access.policy-types",
    );
  });

  it("ground() with an enabled getter that throws on every read: fails open, never throws", async () => {
    const config = throwingAt(valid(), "enabled");
    const engine = new KnowledgeGroundingEngine(config);
    const outcome = await engine.ground({ query: "policy types" });
    expect(outcome.metadata.failureReason).toBe("validation-failed");
    expect(engine.isEnabled()).toBe(true);
  });

  it("ground() with an input whose getters throw fails open with the error", async () => {
    const engine = new KnowledgeGroundingEngine(valid());
    const outcome = await engine.ground(throwingAt({ query: "policy types" }, "query"));
    expect(outcome.metadata.failureReason).toBe("TypeError: cannot read query");
  });

  it("an error whose toString throws still gives a failureReason", async () => {
    const engine = new KnowledgeGroundingEngine(valid());
    const nasty = {
      toString() {
        throw new Error("no");
      },
    };
    const input = Object.defineProperty({}, "query", {
      get() {
        throw nasty;
      },
    });
    const outcome = await engine.ground(input as never);
    expect(outcome.metadata.failureReason).toBe("an error that cannot be printed");
  });
});

describe("the configuration is read once", () => {
  it("each option is read exactly once, however many turns run", async () => {
    const reads: Record<string, number> = {};
    const config = valid();
    const counting: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(config)) {
      reads[key] = 0;
      Object.defineProperty(counting, key, {
        enumerable: true,
        get() {
          reads[key]!++;
          return value;
        },
      });
    }
    const engine = new KnowledgeGroundingEngine(counting as KnowledgeGroundingConfig);
    for (let turn = 0; turn < 3; turn++) await engine.ground({ query: "policy types" });
    await engine.rebuild();
    for (const key of Object.keys(config)) expect(reads[key], key).toBe(1);
  });

  it("a getter that throws is read once and reported once", () => {
    let reads = 0;
    const config = Object.defineProperty({ ...valid() }, "retrieval", {
      enumerable: true,
      get() {
        reads++;
        throw new TypeError("cannot read retrieval");
      },
    });
    const issues = validateGroundingConfig(config).filter((issue) => issue.path === "retrieval");
    expect(issues).toHaveLength(1);
    expect(reads).toBe(1);
  });

  it("a context budget that turns into NaN after validation has no effect", async () => {
    const context = { maxTokens: 2_000 };
    const engine = new KnowledgeGroundingEngine({ ...valid(), context });
    context.maxTokens = Number.NaN;
    const outcome = await engine.ground({ query: "policy types" });
    expect(outcome.metadata.contextTokens).toBeGreaterThan(0);
    expect(outcome.metadata.contextTokens).toBeLessThanOrEqual(2_000);
  });

  it("readGroundingConfig copies nested options and keeps sources, logger and artifact as given", () => {
    const config = valid();
    const { config: copy, issues } = readGroundingConfig(config);
    expect(issues).toEqual([]);
    expect(copy).toEqual(config);
    expect(copy.retrieval).not.toBe(config.retrieval);
    expect(copy.retrieval?.fieldWeights).not.toBe(config.retrieval?.fieldWeights);
    expect(copy.sources).toBe(config.sources);
    expect(copy.logger).toBe(silent);
  });

  it("sources that are not an array are a configuration error", async () => {
    const engine = new KnowledgeGroundingEngine({ ...valid(), sources: "kb.json" as never });
    await engine.ready();
    expect(engine.getStatus().validationIssues).toContainEqual(
      expect.objectContaining({ code: "bad-config", path: "sources" }),
    );
  });
});

describe("timeoutMs at or above 2^31 ms is a long timeout, not 1 ms", () => {
  it.each([2 ** 31, 2 ** 40, Number.MAX_SAFE_INTEGER, Number.MAX_VALUE])(
    "timeoutMs %d: a turn that waits 30 ms for the index is grounded",
    async (timeoutMs) => {
      const engine = new KnowledgeGroundingEngine({ ...valid(), timeoutMs });
      const built = engine.ready();
      engine.ready = () => built.then(() => new Promise<void>((resolve) => setTimeout(resolve, 30)));
      const outcome = await engine.ground({ query: "policy types" });
      expect(outcome.metadata.failureReason).toBeUndefined();
      expect(outcome.metadata.selectedIds).toContain("access.policy-types");
    },
  );

  it("resolveTimeout caps at the largest delay Node honours", () => {
    expect(MAX_TIMER_DELAY_MS).toBe(2 ** 31 - 1);
    expect(resolveTimeout({ timeoutMs: 2 ** 31 })).toBe(MAX_TIMER_DELAY_MS);
    expect(resolveTimeout({ timeoutMs: 800 })).toBe(800);
    expect(resolveTimeout({})).toBe(800);
  });
});
