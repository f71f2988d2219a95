/**
 * Issue 11, item 7 and "grounding must not go silently dark", in the client: the constructor never throws on a
 * hostile `knowledgeGrounding` (its issues are in `getKnowledgeStatus()`), a blocked registry is logged once through
 * the configured logger and named in `result.knowledge.failureReason`, and `strict: true` lets a host fail at
 * start-up (`await knowledgeReady()`) and makes grounded turns reject rather than answer without the knowledge.
 */
import { afterEach, describe, expect, it } from "vitest";
import { clearKnowledgeIndexCache, KnowledgeRegistryError, type KnowledgeSource } from "../../src/index.js";
import {
  InvalidOptionsError,
  KNOWLEDGE_NO_SOURCES_WARNING,
  KnowledgeUnavailableError,
  NeuroLink,
  NeuroLinkError,
} from "../../src/neurolink/index.js";
import { GROUNDED_QUERY, recordingLogger, SOURCES } from "./support/fixtures.js";
import { groundedTurn } from "./support/groundedTurn.js";
import { answeringModel, systemOf } from "./support/models.js";

afterEach(() => clearKnowledgeIndexCache());

function revokedProxy(): never {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy as never;
}

function throwingAt<T extends object>(base: T, field: string): T {
  return Object.defineProperty({ ...base }, field, {
    enumerable: true,
    get() {
      throw new TypeError(`cannot read ${field}`);
    },
  });
}

/** One invalid entry (no title) among valid ones. */
const oneInvalid = (tag = "a"): KnowledgeSource[] => [
  ...SOURCES,
  {
    id: `extra-${tag}`,
    version: "1",
    entries: [{ id: `payments.refunds-${tag}`, title: "", summary: "s", domain: "d", integrations: [] }],
  },
];

describe("the constructor never throws on a hostile knowledgeGrounding", () => {
  it.each(["enabled", "sources", "blockedDomains", "retrieval", "context", "timeoutMs"])(
    "a throwing %s getter: no throw, the issue in getKnowledgeStatus(), turns fail open",
    async (field) => {
      const logger = recordingLogger();
      const knowledgeGrounding = throwingAt({ enabled: true, sources: SOURCES }, field);
      let neurolink: NeuroLink | undefined;
      expect(() => {
        neurolink = new NeuroLink({ knowledgeGrounding, logger });
      }).not.toThrow();
      const status = neurolink!.getKnowledgeStatus();
      expect(status?.validationIssues).toContainEqual(
        expect.objectContaining({ code: "bad-config", path: field }),
      );
      const { result } = await groundedTurn(neurolink!);
      expect(result.content).toBe("answer");
      expect(result.knowledge?.failureReason).toBe("validation-failed");
    },
  );

  it("a revoked proxy as knowledgeGrounding, as its retrieval or as its sources", async () => {
    for (const knowledgeGrounding of [
      revokedProxy(),
      { enabled: true, sources: SOURCES, retrieval: revokedProxy() },
      { enabled: true, sources: revokedProxy() },
    ]) {
      const neurolink = new NeuroLink({ knowledgeGrounding, logger: recordingLogger() });
      expect(neurolink.getKnowledgeStatus()?.ready).toBe(false);
      expect((await groundedTurn(neurolink)).result.knowledge?.failureReason).toBe("validation-failed");
    }
  });

  it("a knowledgeGrounding getter that throws: the error is in the status", () => {
    const config = throwingAt({ logger: recordingLogger() }, "knowledgeGrounding");
    const neurolink = new NeuroLink(config);
    expect(neurolink.getKnowledgeStatus()?.validationIssues[0]?.message).toContain(
      "TypeError: cannot read knowledgeGrounding",
    );
  });

  it("a revoked proxy as the whole client configuration is a typed InvalidOptionsError", () => {
    expect(() => new NeuroLink(revokedProxy())).toThrow(InvalidOptionsError);
  });

  it("a throwing logger getter falls back to console", () => {
    expect(() => new NeuroLink(throwingAt({}, "logger"))).not.toThrow();
  });

  it("rebuildKnowledge(revokedProxy) resolves and keeps the previous snapshot", async () => {
    const neurolink = new NeuroLink({
      knowledgeGrounding: { enabled: true, sources: SOURCES },
      logger: recordingLogger(),
    });
    await neurolink.knowledgeReady();
    await expect(neurolink.rebuildKnowledge(revokedProxy())).resolves.toMatchObject({
      ready: true,
      live: false,
      reason: "validation-failed",
    });
    expect((await groundedTurn(neurolink)).result.knowledge?.selectedIds.length).toBeGreaterThan(0);
  });

  it("rebuildKnowledge(revokedProxy) on an instance enabled without sources reports instead of throwing", async () => {
    const neurolink = new NeuroLink({
      knowledgeGrounding: { enabled: true, sources: [] },
      logger: recordingLogger(),
    });
    const result = await neurolink.rebuildKnowledge(revokedProxy());
    expect(result).toMatchObject({ ready: false, live: false, reason: "validation-failed" });
  });
});

describe("grounding does not go silently dark", () => {
  it("one invalid entry: one warning through the configured logger, not one per turn; failureReason says why", async () => {
    const logger = recordingLogger();
    const neurolink = new NeuroLink({
      knowledgeGrounding: { enabled: true, sources: oneInvalid() },
      logger,
    });
    for (let turn = 0; turn < 3; turn++) {
      const { result, model } = await groundedTurn(neurolink);
      expect(result.knowledge?.failureReason).toBe("validation-failed");
      expect(systemOf(model.doGenerateCalls[0])).toBeUndefined();
    }
    const knowledgeWarnings = logger.warnings.filter(([message]) =>
      String(message).startsWith("[KnowledgeGrounding]"),
    );
    expect(knowledgeWarnings).toHaveLength(1);
    const message = String(knowledgeWarnings[0]![0]);
    expect(message).toContain('1 validation error(s) in 1 entry ("payments.refunds-a")');
    expect(message).toContain("getKnowledgeStatus()");
    expect(message).toContain("lexground validate");
  });

  it("the NeuroLink warning for no sources is unchanged", () => {
    const logger = recordingLogger();
    const neurolink = new NeuroLink({ knowledgeGrounding: { enabled: true, sources: [] }, logger });
    expect(neurolink.getKnowledgeStatus()).toBeNull();
    expect(logger.warnings).toEqual([[KNOWLEDGE_NO_SOURCES_WARNING]]);
  });

  it("knowledgeReady() resolves with the status (null without grounding); never rejects without strict", async () => {
    const logger = recordingLogger();
    expect(await new NeuroLink({ logger }).knowledgeReady()).toBeNull();
    const valid = new NeuroLink({ knowledgeGrounding: { enabled: true, sources: SOURCES }, logger });
    expect(await valid.knowledgeReady()).toMatchObject({ ready: true });
    const broken = new NeuroLink({
      knowledgeGrounding: { enabled: true, sources: oneInvalid("b") },
      logger,
    });
    expect(await broken.knowledgeReady()).toMatchObject({ ready: false });
  });
});

describe("strict: true fails start-up and grounded turns while no index serves", () => {
  const strictClient = (sources: KnowledgeSource[]) =>
    new NeuroLink({
      knowledgeGrounding: { enabled: true, sources, strict: true },
      logger: recordingLogger(),
    });

  it("knowledgeReady() rejects with KnowledgeUnavailableError (a NeuroLinkError) carrying the issues", async () => {
    const neurolink = strictClient(oneInvalid("strict"));
    const error = await neurolink.knowledgeReady().then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(KnowledgeUnavailableError.isInstance(error)).toBe(true);
    expect(NeuroLinkError.isInstance(error)).toBe(true);
    const unavailable = error as KnowledgeUnavailableError;
    expect(unavailable).toMatchObject({ code: "KNOWLEDGE_UNAVAILABLE", reason: "validation-failed" });
    expect(unavailable.issues).toContainEqual(expect.objectContaining({ code: "missing-title" }));
    expect(KnowledgeRegistryError.isInstance(unavailable.cause)).toBe(true);
  });

  it("a grounded turn rejects with KnowledgeUnavailableError and never reaches the model", async () => {
    const neurolink = strictClient(oneInvalid("strict-turn"));
    const model = answeringModel("answer");
    await expect(
      neurolink.generate({ input: { text: GROUNDED_QUERY }, model, useKnowledgeGrounding: true }),
    ).rejects.toMatchObject({ name: "KnowledgeUnavailableError", code: "KNOWLEDGE_UNAVAILABLE" });
    await expect(
      neurolink.stream({ input: { text: GROUNDED_QUERY }, model, useKnowledgeGrounding: true }),
    ).rejects.toMatchObject({ code: "KNOWLEDGE_UNAVAILABLE" });
    expect(model.doGenerateCalls).toHaveLength(0);
    expect(model.doStreamCalls).toHaveLength(0);
    // A turn that does not ask for grounding is unaffected.
    const plain = await neurolink.generate({ input: { text: "hello" }, model });
    expect(plain.content).toBe("answer");
  });

  it("a valid registry: knowledgeReady() resolves and turns are grounded", async () => {
    const neurolink = strictClient(SOURCES);
    expect(await neurolink.knowledgeReady()).toMatchObject({ ready: true });
    const { result, model } = await groundedTurn(neurolink);
    expect(result.knowledge?.failureReason).toBeUndefined();
    expect(systemOf(model.doGenerateCalls[0])).toContain("<knowledge_context>");
  });

  it("a corrected rebuild lifts the refusal", async () => {
    const neurolink = strictClient(oneInvalid("strict-rebuild"));
    await expect(neurolink.knowledgeReady()).rejects.toBeInstanceOf(KnowledgeUnavailableError);
    await neurolink.rebuildKnowledge(SOURCES);
    const { result } = await groundedTurn(neurolink);
    expect(result.knowledge?.failureReason).toBeUndefined();
  });
});
