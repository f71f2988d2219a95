import { afterEach, describe, expect, it } from "vitest";
import { policiesSource, settingsSource } from "../../test/fixtures/registry.js";
import type {
  KnowledgeGroundingConfig,
  KnowledgeGroundingOutcome,
  KnowledgeSource,
} from "../types/knowledge.js";
import { validateGroundingConfig } from "./configValidation.js";
import { KnowledgeGroundingEngine } from "./engine.js";
import { clearKnowledgeIndexCache } from "./indexCache.js";
import { asShadowOutcome, shadowEventOf } from "./shadow.js";

afterEach(() => clearKnowledgeIndexCache());

const sources = [settingsSource, policiesSource];
const turn = { query: "multi step flow", scope: { enabledIntegrations: ["integration-a"] } };

/** An outcome with its timing zeroed, for comparisons across engines. */
function timeless(outcome: KnowledgeGroundingOutcome): KnowledgeGroundingOutcome {
  const alternatives = outcome.alternatives
    ? Object.fromEntries(Object.entries(outcome.alternatives).map(([name, item]) => [name, timeless(item)]))
    : undefined;
  return {
    ...outcome,
    metadata: { ...outcome.metadata, durationMs: 0 },
    retrieval: outcome.retrieval ? { ...outcome.retrieval, durationMs: 0 } : null,
    ...(alternatives ? { alternatives } : {}),
  };
}

async function groundWith(config: Partial<KnowledgeGroundingConfig>, input = turn) {
  const engine = new KnowledgeGroundingEngine({ enabled: true, sources, ...config });
  return timeless(await engine.ground(input));
}

describe("shadow mode in the engine", () => {
  it("retrieves and reports everything, but hands over no context", async () => {
    const live = await groundWith({});
    expect(live.ephemeralContext?.content).toContain("[KB:settings.multi-step-flow@1]");
    const shadow = await groundWith({ shadow: true });
    expect(shadow).toEqual({
      ephemeralContext: null,
      shadowContext: live.ephemeralContext,
      metadata: { ...live.metadata, shadow: true },
      retrieval: live.retrieval,
    });
  });

  it("follows the turn's shadow flag over the configuration's, both ways", async () => {
    const live = await groundWith({});
    expect(await groundWith({ shadow: true }, { ...turn, shadow: false } as typeof turn)).toEqual(live);
    const shadow = await groundWith({}, { ...turn, shadow: true } as typeof turn);
    expect(shadow.ephemeralContext).toBeNull();
    expect(shadow.shadowContext).toEqual(live.ephemeralContext);
    expect(shadow.metadata.shadow).toBe(true);
    // Not a boolean: the configuration decides.
    expect(await groundWith({}, { ...turn, shadow: "yes" } as unknown as typeof turn)).toEqual(live);
  });

  it("keeps failing open, marked as shadow", async () => {
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources: [
        { id: "broken", entries: [{ id: "x", title: "", summary: "s", domain: "d", integrations: [] }] },
      ],
      shadow: true,
    });
    const outcome = await engine.ground(turn);
    expect(outcome).toMatchObject({
      ephemeralContext: null,
      shadowContext: null,
      retrieval: null,
      metadata: { failureReason: "validation-failed", shadow: true },
    });
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error("no reading");
        },
      },
    );
    const failed = await new KnowledgeGroundingEngine({ enabled: true, sources, shadow: true }).ground(
      hostile as typeof turn,
    );
    expect(failed.ephemeralContext).toBeNull();
    expect(failed.metadata.failureReason).toContain("no reading");
    expect(failed.metadata.shadow).toBe(true);
  });

  it("evaluates alternative configurations on the same turn, in shadow, by name", async () => {
    const tight = { context: { maxTokens: 150 } };
    const outcome = await groundWith({
      shadowAlternatives: { recommended: { preset: "recommended" }, tight },
    });
    // The primary configuration is live and unchanged by its alternatives.
    const { alternatives, ...primary } = outcome;
    expect(primary).toEqual(await groundWith({}));
    expect(Object.keys(alternatives ?? {})).toEqual(["recommended", "tight"]);
    // Each alternative is exactly what an engine with its configuration reports in shadow mode.
    expect(alternatives?.recommended).toEqual(await groundWith({ preset: "recommended", shadow: true }));
    expect(alternatives?.tight).toEqual(await groundWith({ ...tight, shadow: true }));
    expect(alternatives?.tight?.metadata).toMatchObject({ truncated: true, shadow: true });
    for (const alternative of Object.values(alternatives ?? {}))
      expect(alternative.ephemeralContext).toBeNull();
    // A turn can leave the alternatives out.
    expect(
      await groundWith({ shadowAlternatives: { tight } }, {
        ...turn,
        shadowAlternatives: false,
      } as typeof turn),
    ).toEqual(primary);
  });

  it("rebuilds the alternatives with the primary's new sources", async () => {
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources,
      shadowAlternatives: { other: { retrieval: { resultLimit: 1 } } },
    });
    const renamed: KnowledgeSource[] = [
      {
        id: "account-settings",
        version: "2",
        entries: [{ ...settingsSource.entries[0]!, title: "Guided Setup" }],
      },
    ];
    await engine.rebuild(renamed);
    const outcome = await engine.ground({ ...turn, query: "guided setup" });
    expect(outcome.metadata.selectedIds).toEqual(["settings.multi-step-flow"]);
    expect(outcome.alternatives?.other?.shadowContext?.content).toContain("[KB:settings.multi-step-flow@2]");
  });

  it("validates shadow and every alternative, with paths under the alternative's name", () => {
    const paths = (config: object) =>
      validateGroundingConfig({ enabled: true, sources, ...config })
        .filter((issue) => issue.level === "error")
        .map((issue) => [issue.path, issue.message]);
    expect(paths({ shadow: "yes" })).toEqual([["shadow", 'shadow must be a boolean, got "yes"']]);
    expect(paths({ shadowAlternatives: [] })).toEqual([
      ["shadowAlternatives", "shadowAlternatives must be an object of named configurations, got array"],
    ]);
    expect(paths({ shadowAlternatives: { fast: { preset: "fast", context: { maxTokens: -1 } } } })).toEqual([
      [
        "shadowAlternatives.fast.preset",
        expect.stringMatching(/^shadowAlternatives\.fast\.preset must be one of/),
      ],
      [
        "shadowAlternatives.fast.context.maxTokens",
        "shadowAlternatives.fast.context.maxTokens must be a finite number >= 0, got -1",
      ],
    ]);
    expect(paths({ shadowAlternatives: { wide: { blockedDomains: [] } } })).toEqual([
      [
        "shadowAlternatives.wide.blockedDomains",
        "shadowAlternatives.wide.blockedDomains is not an option of an alternative (known: preset, retrieval, context)",
      ],
    ]);
    expect(paths({ shadowAlternatives: { none: 3 } })).toEqual([
      [
        "shadowAlternatives.none",
        "shadowAlternatives.none must be an object with preset, retrieval or context, got number",
      ],
    ]);
    const throwing = {
      get retrieval(): never {
        throw new Error("boom");
      },
    };
    expect(paths({ shadowAlternatives: { getter: throwing } })).toEqual([
      [
        "shadowAlternatives.getter.retrieval",
        "shadowAlternatives.getter.retrieval could not be read: Error: boom",
      ],
    ]);
    expect(paths({ shadow: true, shadowAlternatives: { ok: { preset: "recommended" } } })).toEqual([]);
  });

  it("an invalid alternative keeps the whole engine from building, like any bad config value", async () => {
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources,
      logger: null,
      shadowAlternatives: { bad: { retrieval: { k1: -1 } } },
    });
    await engine.ready();
    expect(engine.getStatus().validationIssues).toContainEqual(
      expect.objectContaining({ path: "shadowAlternatives.bad.retrieval.k1" }),
    );
    expect((await engine.ground(turn)).metadata.failureReason).toBe("validation-failed");
  });
});

describe("shadow reports", () => {
  it("asShadowOutcome moves the block aside and is idempotent", async () => {
    const live = await groundWith({});
    const shadow = asShadowOutcome(live);
    expect(asShadowOutcome(shadow)).toBe(shadow);
    expect(shadow.shadowContext).toBe(live.ephemeralContext);
    expect(live.ephemeralContext).not.toBeNull();
  });

  it("shadowEventOf reports the would-be block of the primary and of each alternative", async () => {
    const live = await groundWith({});
    expect(shadowEventOf("q", live)).toBeNull();
    const outcome = await groundWith({
      shadow: true,
      shadowAlternatives: { tight: { context: { maxTokens: 150 } } },
    });
    expect(shadowEventOf("multi step flow", outcome)).toEqual({
      query: "multi step flow",
      primary: {
        metadata: outcome.metadata,
        block: live.ephemeralContext!.content,
        citations: live.ephemeralContext!.citations,
        contextTokens: live.metadata.contextTokens,
        injected: false,
      },
      alternatives: {
        tight: {
          metadata: outcome.alternatives!.tight!.metadata,
          block: null,
          citations: [],
          contextTokens: 0,
        },
      },
    });
    const withLivePrimary = await groundWith({
      shadowAlternatives: { tight: { context: { maxTokens: 150 } } },
    });
    expect(shadowEventOf("q", withLivePrimary)?.primary).toMatchObject({
      injected: true,
      block: live.ephemeralContext!.content,
    });
  });
});
