/**
 * Presets: named sets of `retrieval` and `context` settings, chosen with the top-level `preset` of the engine
 * configuration. This module holds the one table of presets; everything that resolves a configuration (the
 * engine, the CLI, `lexground eval`) goes through {@link applyPreset}.
 *
 * Merge rule: a preset supplies values, the configuration's explicit `retrieval` / `context` fields override them
 * field by field (`fieldWeights` per field), and whatever neither sets takes the defaults of `defaults.ts`. A field
 * set to `undefined` counts as not given.
 *
 * @module
 */
import type {
  KnowledgeContextConfig,
  KnowledgePresetName,
  KnowledgeRetrievalConfig,
} from "../types/knowledge.js";

/** The settings a preset supplies. */
export type KnowledgePreset = {
  /** What the preset is for, in one sentence. */
  description: string;
  /** Retrieval settings; explicit `retrieval` fields override them. */
  retrieval: Readonly<KnowledgeRetrievalConfig>;
  /** Context settings; explicit `context` fields override them. */
  context: Readonly<KnowledgeContextConfig>;
};

/** The preset used when a configuration names none: NeuroLink's behaviour. */
export const DEFAULT_PRESET: KnowledgePresetName = "neurolink";

/**
 * Every preset, by name. The values are data: they are chosen by measurement (`lexground eval --preset …` on the
 * example knowledge base and the shared collections) and changed here only, with the figures in the README.
 *
 * - `neurolink`: supplies nothing, so every setting is NeuroLink's default; selections, scores, confidence and
 *   block are byte-identical to NeuroLink's (the parity property test holds it).
 * - `recommended`: chosen by the collection-aware tuning (`research/scripts/tunePreset.ts`; protocol, search record
 *   and every collection's figures in `research/results/recommended-preset.md`): the English analyzer with the
 *   extended stop list, BM25F with k1 2.1, b 0.65, weights title 2, aliases 5, keywords 3, summary 2, body 1, exact
 *   boost 10, calibrated confidence; adaptive cut-offs: a relative score floor at 0.75 of the top score and a gap
 *   rule at 0.85 of the previous score, never below two entries (`minResults`); no relation expansion (it lowered
 *   block precision in every setting measured); bodies over 100 tokens, or that do not fit, rendered as their two
 *   best passages of up to 200 tokens for the query.
 *
 * To switch one of a preset's rules off, set it explicitly: `minRelativeScore: 0`, `scoreGapRatio: 0`,
 * `minResults: 1`, `context.passages: "off"`; `relationLimit: 4` brings NeuroLink's relation expansion back.
 */
export const KNOWLEDGE_PRESETS: Readonly<Record<KnowledgePresetName, Readonly<KnowledgePreset>>> =
  Object.freeze({
    neurolink: Object.freeze({
      description: "NeuroLink's behaviour, unchanged (the default).",
      retrieval: Object.freeze({}),
      context: Object.freeze({}),
    }),
    recommended: Object.freeze({
      description:
        "Measured configuration for new knowledge bases: better ranking and a block cut to what answers the question.",
      retrieval: Object.freeze({
        analyzer: "english-extended",
        scoring: "bm25f",
        k1: 2.1,
        b: 0.65,
        fieldWeights: Object.freeze({ title: 2, aliases: 5, keywords: 3, summary: 2, body: 1 }),
        exactBoost: 10,
        confidenceRule: "calibrated",
        minRelativeScore: 0.75,
        scoreGapRatio: 0.85,
        minResults: 2,
        relationLimit: 0,
      } satisfies KnowledgeRetrievalConfig),
      context: Object.freeze({
        passages: "auto",
        longBodyTokens: 100,
        passageTokens: 200,
        maxPassages: 2,
      } satisfies KnowledgeContextConfig),
    }),
  });

/** Every preset name, in table order. */
export const KNOWLEDGE_PRESET_NAMES: readonly KnowledgePresetName[] = Object.freeze(
  Object.keys(KNOWLEDGE_PRESETS) as KnowledgePresetName[],
);

/** Whether `value` names a preset. */
export function isKnowledgePresetName(value: unknown): value is KnowledgePresetName {
  return typeof value === "string" && Object.hasOwn(KNOWLEDGE_PRESETS, value);
}

/** Copies the fields of `source` whose value is not `undefined` (an explicit `undefined` does not override). */
function definedFields<T extends object>(source: unknown): Partial<T> {
  const result: Record<string, unknown> = {};
  if (source && typeof source === "object" && !Array.isArray(source)) {
    for (const [key, value] of Object.entries(source)) if (value !== undefined) result[key] = value;
  }
  return result as Partial<T>;
}

/** The outcome of {@link applyPreset}: the preset's name and the merged (not yet defaulted) settings. */
export type KnowledgePresetApplication = {
  preset: KnowledgePresetName;
  retrieval: KnowledgeRetrievalConfig;
  context: KnowledgeContextConfig;
};

/**
 * Overlays explicit `retrieval` and `context` settings on a preset's: field by field, `fieldWeights` per field.
 * `preset` undefined means {@link DEFAULT_PRESET}. Throws a `RangeError` for an unknown name; configurations are
 * validated first (`validateGroundingConfig` reports it as `bad-config` at `preset`), so the engine never throws.
 * With the `"neurolink"` preset the result holds exactly the explicit fields.
 */
export function applyPreset(
  preset: KnowledgePresetName | undefined,
  retrieval?: KnowledgeRetrievalConfig | null,
  context?: KnowledgeContextConfig | null,
): KnowledgePresetApplication {
  const name = preset ?? DEFAULT_PRESET;
  if (!isKnowledgePresetName(name)) {
    throw new RangeError(
      `unknown knowledge grounding preset ${JSON.stringify(name)}; expected one of ${KNOWLEDGE_PRESET_NAMES.join(", ")}`,
    );
  }
  const table = KNOWLEDGE_PRESETS[name];
  const explicitRetrieval = definedFields<KnowledgeRetrievalConfig>(retrieval);
  const mergedRetrieval: KnowledgeRetrievalConfig = { ...table.retrieval, ...explicitRetrieval };
  if (table.retrieval.fieldWeights !== undefined || explicitRetrieval.fieldWeights !== undefined) {
    const explicitWeights = explicitRetrieval.fieldWeights;
    // A malformed fieldWeights value is the validator's to report; it is passed through unchanged.
    mergedRetrieval.fieldWeights =
      explicitWeights === null || (explicitWeights !== undefined && typeof explicitWeights !== "object")
        ? explicitWeights
        : {
            ...table.retrieval.fieldWeights,
            ...definedFields<NonNullable<KnowledgeRetrievalConfig["fieldWeights"]>>(explicitWeights),
          };
  }
  const mergedContext: KnowledgeContextConfig = {
    ...table.context,
    ...definedFields<KnowledgeContextConfig>(context),
  };
  return { preset: name, retrieval: mergedRetrieval, context: mergedContext };
}
