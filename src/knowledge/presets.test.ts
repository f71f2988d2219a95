/** Presets: the table, the merge rule, validation of the name, and how the engine reports and applies them. */
import { afterEach, describe, expect, it } from "vitest";
import { policiesSource, settingsSource } from "../../test/fixtures/registry.js";
import type { KnowledgeGroundingConfig, KnowledgeGroundingOutcome } from "../types/knowledge.js";
import { resolveContext, resolveGroundingConfiguration, resolveRetrieval } from "./config.js";
import { validateGroundingConfig } from "./configValidation.js";
import { DEFAULT_MAX_CONTEXT_TOKENS } from "./defaults.js";
import { KnowledgeGroundingEngine } from "./engine.js";
import { clearKnowledgeIndexCache } from "./indexCache.js";
import {
  applyPreset,
  DEFAULT_PRESET,
  isKnowledgePresetName,
  KNOWLEDGE_PRESET_NAMES,
  KNOWLEDGE_PRESETS,
} from "./presets.js";

afterEach(() => clearKnowledgeIndexCache());

const sources = [settingsSource, policiesSource];
const scope = { enabledIntegrations: ["integration-a"] };

/** The context settings every preset leaves at their defaults. */
const DEFAULT_CONTEXT = {
  maxTokens: 4000,
  includeCitations: true,
  passages: "off",
  passageTokens: 200,
  maxPassages: 3,
  longBodyTokens: 600,
};

describe("the preset table", () => {
  it("has neurolink (the default, with no settings of its own) and recommended", () => {
    expect(KNOWLEDGE_PRESET_NAMES).toEqual(["neurolink", "recommended"]);
    expect(DEFAULT_PRESET).toBe("neurolink");
    expect(KNOWLEDGE_PRESETS.neurolink.retrieval).toEqual({});
    expect(KNOWLEDGE_PRESETS.neurolink.context).toEqual({});
    expect(Object.isFrozen(KNOWLEDGE_PRESETS.recommended.retrieval)).toBe(true);
  });

  it.each(KNOWLEDGE_PRESET_NAMES)("%s holds only valid settings", (name) => {
    const { retrieval, context } = KNOWLEDGE_PRESETS[name];
    expect(validateGroundingConfig({ enabled: true, sources: [], retrieval, context })).toEqual([]);
    expect(validateGroundingConfig({ enabled: true, sources: [], preset: name })).toEqual([]);
  });

  it("recommended holds the tuned configuration: its ranking, adaptive cut-offs and passages", () => {
    const { retrieval, context } = resolveGroundingConfiguration({ preset: "recommended" });
    expect(retrieval).toMatchObject({
      analyzer: "english-extended",
      scoring: "bm25f",
      confidenceRule: "calibrated",
    });
    expect(retrieval.minRelativeScore).toBeGreaterThan(0);
    expect(retrieval.scoreGapRatio).toBeGreaterThan(0);
    expect(retrieval.minResults).toBeGreaterThan(1);
    expect(context.passages).toBe("auto");
  });

  it("names are checked by isKnowledgePresetName (own keys only)", () => {
    expect(isKnowledgePresetName("recommended")).toBe(true);
    expect(isKnowledgePresetName("toString")).toBe(false);
    expect(isKnowledgePresetName("__proto__")).toBe(false);
    expect(isKnowledgePresetName(undefined)).toBe(false);
  });
});

describe("applyPreset: explicit fields override the preset's, field by field", () => {
  it("the default preset returns exactly the explicit fields, so resolution is NeuroLink's", () => {
    const retrieval = { resultLimit: 3, fieldWeights: { title: 7 } };
    expect(applyPreset(undefined, retrieval, { maxTokens: 50 })).toEqual({
      preset: "neurolink",
      retrieval,
      context: { maxTokens: 50 },
    });
    const effective = resolveGroundingConfiguration({ retrieval });
    expect(effective.retrieval).toEqual(resolveRetrieval(retrieval));
    expect(effective.context).toEqual({
      maxTokens: DEFAULT_MAX_CONTEXT_TOKENS,
      includeCitations: true,
      passages: "off",
      passageTokens: 200,
      maxPassages: 3,
      longBodyTokens: 600,
    });
    expect(resolveGroundingConfiguration({}).retrieval).toEqual(resolveRetrieval());
  });

  it("overrides scalars, merges fieldWeights per field, ignores explicit undefined", () => {
    const merged = applyPreset(
      "recommended",
      { k1: 0.9, minRelativeScore: 0, analyzer: undefined, fieldWeights: { title: 4, body: undefined } },
      { maxTokens: 1000 },
    );
    expect(merged.retrieval.k1).toBe(0.9);
    expect(merged.retrieval.minRelativeScore).toBe(0);
    expect(merged.retrieval.analyzer).toBe(KNOWLEDGE_PRESETS.recommended.retrieval.analyzer);
    expect(merged.retrieval.scoring).toBe("bm25f");
    expect(merged.retrieval.fieldWeights).toEqual({
      ...KNOWLEDGE_PRESETS.recommended.retrieval.fieldWeights,
      title: 4,
    });
    expect(merged.context).toEqual({ ...KNOWLEDGE_PRESETS.recommended.context, maxTokens: 1000 });
    // The table itself is untouched.
    expect(KNOWLEDGE_PRESETS.recommended.retrieval.fieldWeights?.title).toBe(2);
  });

  it("throws a RangeError for an unknown name (validation reports it first)", () => {
    expect(() => applyPreset("fast" as never)).toThrow(RangeError);
    expect(() => applyPreset("fast" as never)).toThrow(/neurolink, recommended/);
  });

  it("resolveContext applies the defaults", () => {
    expect(resolveContext()).toEqual(DEFAULT_CONTEXT);
    expect(resolveContext({ includeCitations: false, maxTokens: 0 })).toEqual({
      maxTokens: 0,
      includeCitations: false,
      passages: "off",
      passageTokens: 200,
      maxPassages: 3,
      longBodyTokens: 600,
    });
  });
});

describe("validation of the preset and the cut-off options", () => {
  it.each([
    [{ preset: "fast" }, "preset", '"neurolink", "recommended"'],
    [{ preset: 1 }, "preset", "got 1"],
    [{ preset: "toString" }, "preset", '"toString"'],
    [{ retrieval: { minRelativeScore: 1.5 } }, "retrieval.minRelativeScore", "[0, 1]"],
    [{ retrieval: { minRelativeScore: Number.NaN } }, "retrieval.minRelativeScore", "[0, 1]"],
    [{ retrieval: { scoreGapRatio: -0.1 } }, "retrieval.scoreGapRatio", "[0, 1]"],
    [{ retrieval: { scoreGapRatio: "0.5" } }, "retrieval.scoreGapRatio", "[0, 1]"],
    [{ retrieval: { expansionFromTop: 1.5 } }, "retrieval.expansionFromTop", "integer"],
    [{ retrieval: { expansionFromTop: -1 } }, "retrieval.expansionFromTop", "integer"],
    [{ retrieval: { expansionMinConfidence: "none" } }, "retrieval.expansionMinConfidence", '"high"'],
  ])("%j is bad-config at %s", (override, path, mentions) => {
    const issues = validateGroundingConfig({ enabled: true, sources: [], ...override });
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ level: "error", code: "bad-config", path });
    expect(issues[0]!.message).toContain(mentions);
  });

  it("an unknown preset leaves the engine not ready with lastError saying why", async () => {
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources,
      preset: "fast",
    } as unknown as KnowledgeGroundingConfig);
    await engine.ready();
    const status = engine.getStatus();
    expect(status.ready).toBe(false);
    expect(status.lastError).toContain('preset must be one of "neurolink", "recommended", got "fast"');
    expect(status.validationIssues).toContainEqual(
      expect.objectContaining({ code: "bad-config", path: "preset" }),
    );
    expect(status.configuration).toBeUndefined();
    const outcome = await engine.ground({ query: "multi step flow", scope });
    expect(outcome.metadata.failureReason).toBe("validation-failed");
  });
});

/** The outcome without its timing, for equality. */
function comparable(outcome: KnowledgeGroundingOutcome): unknown {
  return {
    context: outcome.ephemeralContext,
    metadata: { ...outcome.metadata, durationMs: 0 },
    retrieval: outcome.retrieval ? { ...outcome.retrieval, durationMs: 0 } : null,
  };
}

const QUERIES = ["multi step flow", "enableMultiStepFlow wizard", "policy types", "progress bar", "nothing"];

describe("the engine with a preset", () => {
  it("getStatus().configuration reports the preset and the resolved settings", async () => {
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources,
      preset: "recommended",
      retrieval: { resultLimit: 3, fieldWeights: { body: 2 } },
      context: { maxTokens: 900 },
    });
    await engine.ready();
    const { configuration } = engine.getStatus();
    expect(configuration?.preset).toBe("recommended");
    expect(configuration?.retrieval).toEqual(
      resolveRetrieval({
        ...KNOWLEDGE_PRESETS.recommended.retrieval,
        resultLimit: 3,
        fieldWeights: { ...KNOWLEDGE_PRESETS.recommended.retrieval.fieldWeights, body: 2 },
      }),
    );
    expect(configuration?.context).toEqual({
      maxTokens: 900,
      includeCitations: true,
      passages: "auto",
      passageTokens: KNOWLEDGE_PRESETS.recommended.context.passageTokens,
      maxPassages: KNOWLEDGE_PRESETS.recommended.context.maxPassages,
      longBodyTokens: KNOWLEDGE_PRESETS.recommended.context.longBodyTokens,
    });
    expect(engine.getResolvedRetrieval()).toEqual(configuration?.retrieval);
    // The report is a copy.
    configuration!.retrieval.fieldWeights.title = 99;
    expect(engine.getStatus().configuration?.retrieval.fieldWeights.title).toBe(2);
  });

  it("the default reports neurolink and NeuroLink's settings", async () => {
    const engine = new KnowledgeGroundingEngine({ enabled: true, sources });
    await engine.ready();
    expect(engine.getStatus().configuration).toEqual({
      preset: "neurolink",
      retrieval: resolveRetrieval(),
      context: DEFAULT_CONTEXT,
    });
  });

  it('preset "neurolink" grounds exactly as no preset', async () => {
    const plain = new KnowledgeGroundingEngine({ enabled: true, sources, context: { maxTokens: 120 } });
    const named = new KnowledgeGroundingEngine({
      enabled: true,
      sources,
      preset: "neurolink",
      context: { maxTokens: 120 },
    });
    for (const query of QUERIES) {
      expect(comparable(await named.ground({ query, scope }))).toEqual(
        comparable(await plain.ground({ query, scope })),
      );
    }
  });

  it('preset "recommended" grounds exactly as its settings written out, and explicit fields win', async () => {
    const preset = new KnowledgeGroundingEngine({
      enabled: true,
      sources,
      preset: "recommended",
      retrieval: { exactBoost: 50 },
    });
    const spelled = new KnowledgeGroundingEngine({
      enabled: true,
      sources,
      retrieval: { ...KNOWLEDGE_PRESETS.recommended.retrieval, exactBoost: 50 },
      context: { ...KNOWLEDGE_PRESETS.recommended.context },
    });
    for (const query of QUERIES) {
      expect(comparable(await preset.ground({ query, scope }))).toEqual(
        comparable(await spelled.ground({ query, scope })),
      );
    }
    const outcome = await preset.ground({ query: "Multi-Step Flow", scope });
    expect(outcome.retrieval?.candidates?.[0]).toMatchObject({ exact: true });
    expect(outcome.retrieval!.candidates![0]!.score - outcome.retrieval!.candidates![0]!.lexical).toBe(
      50 + (outcome.retrieval!.candidates![0]!.alias ? 60 : 0),
    );
  });

  it("the retrieval result carries cut marks and expansionSkipped", async () => {
    const engine = new KnowledgeGroundingEngine({
      enabled: true,
      sources,
      retrieval: { minRelativeScore: 1, expansionMinConfidence: "high", confidenceRule: "calibrated" },
    });
    const outcome = await engine.ground({ query: "onboarding progress policy", scope });
    const candidates = outcome.retrieval?.candidates ?? [];
    expect(candidates.length).toBeGreaterThan(1);
    expect(outcome.metadata.selectedIds).toHaveLength(1);
    expect(candidates.slice(1).every((candidate) => candidate.cut?.rule === "minRelativeScore")).toBe(true);
    expect(outcome.retrieval?.expansionSkipped).toBe("expansionMinConfidence");
    expect(outcome.metadata.expandedIds).toEqual([]);
  });
});
